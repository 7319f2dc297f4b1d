"""bench/learned_extractor.py: its examples are the judge's sentences, labelled by the label's lines; bad input is
one line. The fitting itself needs scikit-learn (the optional ``experiments`` extra) and is not run here."""

from __future__ import annotations

import pytest

from bench import learned_extractor
from stream.adapters.compaction.judge_rules import RulesJudge
from tests.unit.test_eval_real_logs import labelled_dir

pytestmark = pytest.mark.unit


def test_each_sentence_is_an_example_marked_by_the_labels_and_by_what_the_cues_read(tmp_path):
    ex = learned_extractor.examples(labelled_dir(tmp_path), RulesJudge())
    by_text = {e["text"]: e for e in ex}
    queued = next(e for t, e in by_text.items() if "bump the package version" in t)
    assert queued["rule"] and queued["read"] and "channel:queued" in queued["meta"]
    question = next(e for t, e in by_text.items() if "what does that lint rule want" in t)
    assert question["rule"] and not question["read"]  # a gold rule the cues miss: what a classifier would add
    assert any(not e["rule"] for e in ex)  # the other sentences are the negatives


def test_a_missing_set_or_a_single_set_is_one_line_and_exit_2(tmp_path, capsys):
    assert learned_extractor.main([str(tmp_path / "nowhere"), str(tmp_path)]) == 2
    assert "no labelled logs at" in capsys.readouterr().err
    assert learned_extractor.main([str(labelled_dir(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "two or more labelled sets" in err
