"""bench/eval_real_logs.py scores alerts against labels exactly as documented.

A labelled directory is built here from a hand-made fixture (the real logs are never
needed): the labels name three prohibitions the summary drops, one it carries, one that is
revoked and one the extractor cannot read — so every cell of the confusion table is
checked, and so is the message when the directory does not exist.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import eval_real_logs

pytestmark = pytest.mark.unit

FIXTURE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "compaction_logs" / "claude-code" / "cc-every-channel.jsonl"
)
SESSION = "e4c90000-0000-4000-8000-0000000000c9"


def labelled_dir(tmp_path: Path) -> Path:
    root = tmp_path / "real-logs"
    (root / "labels").mkdir(parents=True)
    (root / "cc").mkdir()
    shutil.copy(FIXTURE, root / "cc" / f"{SESSION}.jsonl")
    label = {
        "file": f"cc/{SESSION}.jsonl", "split": "dev", "format": "claude-code-jsonl", "session_id": SESSION,
        "prohibitions": [
            {"id": "P1", "line": 4, "text": "don't bump the package version", "source": "user_typed",
             "channel": "queued message", "form": "explicit"},
            {"id": "P2", "line": 11, "text": "never round half down", "source": "user_typed",
             "channel": "slash-command arguments", "form": "explicit"},
            {"id": "P3", "line": 1, "text": "Keep the `Money` type for display", "source": "plan",
             "channel": "plan message", "form": "preserve"},
            {"id": "P4", "line": 12, "text": "what does that lint rule want?", "source": "user_typed",
             "channel": "typed message", "form": "implicit"},
            {"id": "P6", "line": 10, "text": "No, leave them alone", "source": "user_typed",
             "channel": "AskUserQuestion answer", "form": "implicit"},
            {"id": "P5", "line": 10, "text": "keep the old fixtures, they are shared", "source": "user_typed",
             "channel": "AskUserQuestion answer", "form": "preserve", "revoked_at": 11},
        ],
        "compactions": [{
            "boundary_line": 13, "summary_line": 14,
            "in_force": ["P1", "P2", "P3", "P4", "P6"], "carried": ["P3"], "dropped": ["P1", "P2", "P4", "P6"],
            "not_in_force": ["P5"],
        }],
    }
    (root / "labels" / f"{SESSION}.json").write_text(json.dumps(label))
    return root


def test_every_cell_of_the_confusion_table_is_counted_per_summary_and_prohibition(tmp_path):
    cases, scores = eval_real_logs.evaluate(labelled_dir(tmp_path), eval_real_logs.ProhibitionMatcher())
    s = scores["overall"]
    assert (s.tp, s.fp, s.fn, s.tn) == (3, 0, 1, 1)  # P1, P2, P6 caught; P4 never read; P3 carried
    assert s.precision == 1.0 and s.recall == 0.75
    assert scores["claude-code"].tp == 3
    assert s.unscored == [
        f'{SESSION[:8]} C1 (line 14): P5 "keep the old fixtures, they are shared" (not in force: revoked)'
    ]
    assert s.fn_items == [
        f'{SESSION[:8]} C1 (line 14): P4 "what does that lint rule want?" [implicit, typed message] — '
        "never read as a prohibition"
    ]
    assert cases[0].summaries == ["e-s1"]


def test_an_alerted_prohibition_that_is_not_gold_is_a_false_alarm(tmp_path):
    root = labelled_dir(tmp_path)
    label_path = root / "labels" / f"{SESSION}.json"
    label = json.loads(label_path.read_text())
    label["prohibitions"] = [p for p in label["prohibitions"] if p["id"] != "P5"]  # "keep the old fixtures" not gold
    label["compactions"][0]["not_in_force"] = []
    label_path.write_text(json.dumps(label))
    _, scores = eval_real_logs.evaluate(root, eval_real_logs.ProhibitionMatcher())
    s = scores["overall"]
    assert (s.tp, s.fp, s.fn, s.tn) == (3, 1, 1, 1)
    # the extractor cuts the reason off at the comma before its new subject ("..., they are shared")
    assert s.fp_items == [
        f'{SESSION[:8]} C1 (line 14): "keep the old fixtures" [user, preserve, line 10, keep-existing] '
        "(not a gold prohibition)"
    ]
    assert (s.cues[("instruction", "keep-existing", "fp")], s.cues[("drop", "not-quoted-no-trace", "fp")]) == (1, 1)


def test_the_report_prints_figures_and_items_and_a_missing_directory_is_a_clear_message(tmp_path, capsys):
    assert eval_real_logs.main([str(labelled_dir(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "overall                     1.00   0.75    3   0   1   1" in out
    assert "precision per cue" in out and "texts in a language the judge cannot read: 0" in out
    assert "misses (1):" in out and "false alarms (0):" in out
    assert eval_real_logs.main([str(tmp_path / "nowhere")]) == 0
    assert "no labelled logs at" in capsys.readouterr().err


def test_a_sweep_prints_one_line_per_threshold(tmp_path, capsys):
    assert eval_real_logs.main([str(labelled_dir(tmp_path)), "--sweep", "0,1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:3] == ["threshold", "precision", "recall"] and len(lines) == 3


def test_every_prohibition_read_after_the_last_compaction_is_listed_as_a_natural_negative(tmp_path, capsys):
    root = labelled_dir(tmp_path)
    log = root / "cc" / f"{SESSION}.jsonl"
    last = json.loads(log.read_text().splitlines()[-1])
    for k, words in enumerate(["The cart total is never negative.", "ok, and don't delete the price snapshots"]):
        log.open("a").write(json.dumps({**last, "uuid": f"e-u{5 + k}", "parentUuid": last["uuid"],
                                        "message": {"role": "user", "content": words}}) + "\n")
    assert eval_real_logs.main([str(root)]) == 0
    out = capsys.readouterr().out
    assert "natural negatives (the user's words after each log's last compaction, in no label): 3 texts, 1 read" in out
    assert f'  {SESSION[:8]} line 17: "don\'t delete the price snapshots"' in out


def test_judge_model_scores_the_llm_judges_alerts_through_a_stand_in(tmp_path, capsys, monkeypatch):
    from tests.model_judge_standins import claude_calls, write_claude

    claude = write_claude(tmp_path / "bin")
    monkeypatch.setenv("CG_JUDGE_BACKEND", "claude-cli")
    monkeypatch.setenv("CG_JUDGE_CLAUDE_BIN", str(claude))
    monkeypatch.setenv("CG_JUDGE_CACHE_DIR", str(tmp_path / "cache"))
    assert eval_real_logs.main([str(labelled_dir(tmp_path)), "--judge", "model", "--quiet"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].startswith("judge model claude-cli:default: ")
    # the stand-in knows P1 (dropped: alerted) and P3 (carried: not alerted), not the other three dropped ones
    overall = next(line for line in out.splitlines() if line.startswith("overall")).split()
    assert overall[1:] == ["1.00", "0.25", "1", "0", "3", "1"]
    assert (
        "judge model claude-cli:default: 1 compactions, 1 requests" in err and len(claude_calls(tmp_path / "bin")) == 1
    )
    monkeypatch.setenv("CG_JUDGE_CLAUDE_BIN", str(tmp_path / "gone"))
    monkeypatch.setenv("CG_JUDGE_CACHE_DIR", str(tmp_path / "empty-cache"))
    assert eval_real_logs.main([str(labelled_dir(tmp_path / "again")), "--judge", "model"]) == 1
    assert "eval_real_logs: error: --judge model: " in capsys.readouterr().err


def test_gold_in_force_scores_the_carry_decision_alone_with_the_labels_rules(tmp_path, capsys):
    root = labelled_dir(tmp_path)
    cases, scores = eval_real_logs.evaluate(root, eval_real_logs.ProhibitionMatcher(), gold_in_force=True)
    s = scores["overall"]
    # P4 is never read by the extractor; given as in force, it is judged, and the summary quotes it
    assert (s.tp, s.fp, s.fn, s.tn) == (3, 0, 1, 1)
    assert s.fn_items[0].endswith("— read, but judged carried (quoted)")
    assert not s.unscored  # P5 was revoked (line 11) before the compaction: never in force, never judged
    assert {c["text"] for c in cases[0].constraints.values()} == {
        "don't bump the package version", "never round half down", "Keep the `Money` type for display",
        "what does that lint rule want?", "No, leave them alone"}
    assert eval_real_logs.main([str(root), "--gold-in-force", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "the carry decision alone" in out and "overall                     1.00   0.75    3   0   1   1" in out
    assert "extraction: 5 of 6 gold prohibitions issued before a compaction read" in out
    assert eval_real_logs.main([str(root), "--gold-in-force", "--judge", "model"]) == 2
    assert "--gold-in-force scores the rules judge's carry decision" in capsys.readouterr().err


def _gold(pid: str, text: str, line: int) -> eval_real_logs.Gold:
    return eval_real_logs.Gold(pid, text, line, "explicit", "user", "typed")


def test_a_rule_read_on_another_line_is_that_gold_rule_only_when_it_is_a_copy_of_its_words():
    gold = {"P1": _gold("P1", "forget the sdk connectors, they are not important", 90)}
    copy = {"text": "forget the sdk connectors", "line": 120}  # a queued copy: contained in the gold text
    assert eval_real_logs.map_to_gold(copy, gold) == "P1"
    reworded = {"text": "leave out the connectors for the sdk", "line": 120}  # two content words shared
    assert eval_real_logs.map_to_gold(reworded, gold) == "P1"
    coincidence = {"text": "don't touch the connectors", "line": 44}  # one shared word, another line
    assert eval_real_logs.map_to_gold(coincidence, gold) is None
    assert eval_real_logs.map_to_gold({**coincidence, "line": 90}, gold) == "P1"  # the same line: still that rule
