"""Would a learned sentence classifier read the rules the cue tables miss? A leave-one-set-out experiment.

    pip install -e '.[experiments]'        # scikit-learn, for this experiment only
    python -m bench.learned_extractor DIR [DIR ...] [--thresholds 0.3,0.5,0.7]

Every sentence of every user-side text the Claude Code adapter hands the judge before a compaction (the
``rules`` judge's own sentence split, pasted material skipped as it skips it) is one example; it is positive when
a label's prohibition on that line holds it or is held by it. Features: hashed character 1-4-grams and word
1-2-grams of the sentence, and its channel, list-item flag and the session's language; a logistic regression
(class weight 3 for the rules). Each labelled set (DIR) is scored by a model fitted on all the others, so every
figure is out of sample for the set it is measured on. Per threshold it prints the classifier alone (sentences
it flags: rules / not rules, precision, recall over the rule sentences), what it adds beyond the cues the judge
reads at ``precise`` (new rule sentences / new non-rules), and the union's recall. Measured in docs/REAL_LOGS.md
("A learned extractor"). No weights are written: nothing of the sessions' text leaves the run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from stream.adapters.compaction.claude_code import ClaudeCodeTranscript
from stream.adapters.compaction.judge import SOURCE_OF_CHANNEL
from stream.adapters.compaction.judge_rules import RulesJudge, session_language
from stream.adapters.compaction.prohibitions import prose_lines, sentences


def _norm(s: str) -> str:
    return " ".join(s.split()).lower()


def _holds(sentence: str, rule: str) -> bool:
    return rule in sentence or (len(sentence) > 8 and sentence in rule)


def examples(root: Path, judge: RulesJudge) -> list[dict[str, Any]]:
    """One dict per sentence of ``root``'s labelled Claude Code logs: ``text``, ``rule`` (a label holds it),
    ``read`` (the judge reads a rule in it at its precision), ``meta`` (channel, item, language)."""
    out = []
    for lp in sorted((root / "labels").glob("*.json")):
        label = json.loads(lp.read_text(encoding="utf-8"))
        if label.get("format") != "claude-code-jsonl":
            continue
        gold = [(p.get("line"), _norm(p["text"])) for p in label["prohibitions"]]
        reader = ClaudeCodeTranscript(root / label["file"], judge)
        reader.poll(final=True)
        judged = reader.session.judged if reader.session is not None else None
        if judged is None:
            continue
        lang = session_language(judged.candidates)
        for c in judged.candidates:
            if c.channel in ("rule_file", "system") or c.origin is None:
                continue
            read = [_norm(i.text) for i, _ in judge.instructions(c, lang)]
            for line, _sec, _desc, item, _block in prose_lines(c.text, source=SOURCE_OF_CHANNEL.get(c.channel, "user")):
                for s in sentences(line):
                    ns = _norm(s)
                    if len(ns) < 3:
                        continue
                    out.append({
                        "text": s,
                        "rule": any(g_line == c.origin[1] and _holds(ns, g) for g_line, g in gold),
                        "read": any(_holds(ns, r) or _holds(r, ns) for r in read),
                        "meta": f"channel:{c.channel} item:{item} lang:{lang}",
                    })
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dirs", nargs="+", metavar="DIR", help="labelled sets (each left out in turn)")
    ap.add_argument("--thresholds", default="0.3,0.4,0.5,0.6,0.7,0.8",
                    help="classifier score cut-offs, comma-separated")
    args = ap.parse_args(argv)
    roots = [Path(d) for d in args.dirs]
    missing = [str(r) for r in roots if not (r / "labels").is_dir()]
    if missing:
        print(f"learned_extractor: error: no labelled logs at {', '.join(missing)} (expected DIR/labels/*.json)",
              file=sys.stderr)
        return 2
    if len(roots) < 2:
        print("learned_extractor: error: needs two or more labelled sets (each is scored by a model of the others)",
              file=sys.stderr)
        return 2
    try:
        import numpy as np
        from scipy.sparse import hstack
        from sklearn.feature_extraction.text import HashingVectorizer
        from sklearn.linear_model import LogisticRegression
    except ImportError:
        print("learned_extractor: error: needs scikit-learn: pip install -e '.[experiments]'", file=sys.stderr)
        return 2
    judge = RulesJudge()
    rows, group = [], []
    for k, r in enumerate(roots):
        ex = examples(r, judge)
        print(f"{r}: {len(ex)} sentences, {sum(e['rule'] for e in ex)} rules", file=sys.stderr)
        rows += ex
        group += [k] * len(ex)
    char = HashingVectorizer(analyzer="char_wb", ngram_range=(1, 4), n_features=2**20, alternate_sign=False)
    word = HashingVectorizer(analyzer="word", ngram_range=(1, 2), n_features=2**18, alternate_sign=False,
                             token_pattern=r"(?u)\b\w+\b|n't|[^\w\s]")
    meta = HashingVectorizer(analyzer="word", n_features=2**10, alternate_sign=False, norm=None,
                             token_pattern=r"\S+", lowercase=False)
    texts = [e["text"] for e in rows]
    x = hstack([char.transform(texts), word.transform(texts), meta.transform([e["meta"] for e in rows])]).tocsr()
    y = np.array([e["rule"] for e in rows])
    read = np.array([e["read"] for e in rows])
    groups = np.array(group)
    score = np.zeros(len(rows))
    for k in range(len(roots)):
        test = groups == k
        model = LogisticRegression(C=4.0, max_iter=2000, class_weight={0: 1, 1: 3})
        model.fit(x[~test], y[~test])
        score[test] = model.predict_proba(x[test])[:, 1]
        print(f"  scored {roots[k]}", file=sys.stderr)
    n = int(y.sum())
    print(f"{len(rows)} sentences, {n} hold a rule; the cues read {int((read & y).sum())} of them "
          f"(and {int((read & ~y).sum())} sentences that hold none)")
    print("threshold  classifier: rules  not  precision  recall | beyond the cues: rules  not | union recall")
    for t in (float(v) for v in args.thresholds.split(",")):
        flag = score >= t
        tp, fp = int((flag & y).sum()), int((flag & ~y).sum())
        new_tp, new_fp = int((flag & y & ~read).sum()), int((flag & ~y & ~read).sum())
        union = int(((flag | read) & y).sum())
        print(f"{t:9.2f}  {tp:17d} {fp:4d} {tp / max(1, tp + fp):10.2f} {tp / max(1, n):7.2f} | "
              f"{new_tp:22d} {new_fp:4d} | {union / max(1, n):12.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
