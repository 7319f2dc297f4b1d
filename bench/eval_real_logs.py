"""How far the dropped-prohibition alerts of real compaction logs can be trusted.

    python bench/eval_real_logs.py [DIR] [--match-threshold X] [--forms explicit,preserve,...]
                                   [--sweep 0.4,0.5,...] [--ablation] [--split N/M] [--json FILE] [--quiet]
                                   [--judge rules|model]

Runs the compaction-log adapters (``ingest claude-code`` / ``ingest openhands``, in
process) and the engine (the same as ``replay``) over every labelled log of DIR (default
``../shared/real-logs`` beside the repository; its README.md describes the labels), and
scores the ``negative_constraint_dropped`` alerts against the hand-made labels:

* one item per (summary, prohibition) pair: a summary node's missing set, plus the
  root's while that summary was in view (a root's duplicate alert counts once);
* an alerted prohibition matches a gold one when it was read on the gold line (or says
  the same words on another line: a queued message and its typed copy) and one text
  contains most of the other's words (:func:`same_prohibition`);
* true positive = alerted and labelled ``dropped``; false positive = alerted but
  labelled ``carried``, or not a gold prohibition at all; false negative = labelled
  ``dropped`` and not alerted; true negative = labelled ``carried``, not alerted. Pairs
  labelled ``not_in_force`` (revoked) are not scored (they are listed).

Prints precision / recall per source and overall, the confusion table, every false
alarm and every miss with its text, and what the extractor found (gold prohibitions
read, and what else it read) — so anyone can see where the extractor stands. Also the
*natural negatives*: the user's words after each log's last compaction are in no label,
so every prohibition read there is listed to be checked by eye. ``--judge model`` scores
the LLM judge of ``ingest --judge model`` instead (``CG_JUDGE_*`` settings, answers
cached; no natural negatives: it is asked only at compactions). Exit 0 (also when DIR
does not exist: a clear message, nothing measured); 2 on bad options; 1 when the model
cannot be reached.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from stream.adapters import encode_event  # noqa: E402
from stream.adapters.claude_code import ClaudeCodeTranscript  # noqa: E402
from stream.adapters.judge_rules import RulesJudge  # noqa: E402
from stream.adapters.openhands import OpenHandsConversation  # noqa: E402
from stream.adapters.prohibitions import (  # noqa: E402
    DEFAULT_MATCH_THRESHOLD,
    FORMS,
    ProhibitionMatcher,
    content_words,
    normalize,
)
from stream.replay import Replayer  # noqa: E402

DEFAULT_DIR = REPO.parent / "shared" / "real-logs"
NCD = "negative_constraint_dropped"
SOURCES = {"claude-code-jsonl": "claude-code", "openhands-v1-events": "openhands"}


# --------------------------------------------------------------------------- matching to gold


def _words(text: str) -> frozenset[str]:
    return content_words(text) or frozenset(normalize(text).split())


def same_prohibition(ours: str, gold: str) -> bool:
    """Our extracted text and a gold text name the same prohibition.

    One contains the other (normalized), or at least half of the smaller one's content
    words are in the other (our clause may be longer or shorter than the gold span).
    """
    a, b = " ".join(normalize(ours).split()), " ".join(normalize(gold).split())
    if a in b or b in a:
        return True
    wa, wb = _words(ours), _words(gold)
    if not wa or not wb:
        return False
    return len(wa & wb) >= 0.5 * min(len(wa), len(wb))


@dataclass
class Gold:
    pid: str
    text: str
    line: int | None
    form: str
    source: str
    channel: str


@dataclass
class Case:
    """One labelled log and what the pipeline made of it."""

    label: dict[str, Any]
    source: str
    summaries: list[str]  # node id of each compaction, label order
    gold: dict[str, Gold]
    constraints: dict[str, dict[str, Any]] = field(default_factory=dict)  # our id -> wire object (first seen)
    predicted: list[set[str]] = field(default_factory=list)  # per compaction: our ids alerted
    mapping: dict[str, str | None] = field(default_factory=dict)  # our id -> gold pid or None
    after_last: list[tuple[int, list[str]]] = field(default_factory=list)  # (line / event, texts read) after the last compaction

    @property
    def name(self) -> str:
        return self.label["session_id"]


def _closeness(ours: str, gold: str) -> tuple[bool, float]:
    """How close two texts are: one contains the other, then the share of shared content words."""
    a, b = " ".join(normalize(ours).split()), " ".join(normalize(gold).split())
    wa, wb = _words(ours), _words(gold)
    return (a in b or b in a), len(wa & wb) / max(1, len(wa | wb))


def map_to_gold(obj: dict[str, Any], gold: dict[str, Gold]) -> str | None:
    """The gold prohibition our constraint object is, or None.

    A gold one read on the same line first (the closest, when a line holds several), else
    the same words read on another line (a queued copy of a typed message).
    """
    where = obj.get("line", obj.get("event"))
    text = obj.get("text") or ""
    same_line, elsewhere = [], []
    for g in gold.values():
        if not same_prohibition(text, g.text):
            continue
        if where is not None and g.line is not None and where == g.line:
            same_line.append(g)
        else:
            elsewhere.append(g)
    for found in (same_line, elsewhere):
        if found:
            return max(found, key=lambda g: _closeness(text, g.text)).pid
    return None


# --------------------------------------------------------------------------- running the pipeline


def summary_nodes(label: dict[str, Any], root: Path) -> list[str]:
    """Node id of each labelled compaction: the summary record's uuid / ``<condensation>-summary``."""
    out = []
    path = root / label["file"]
    if label["format"] == "claude-code-jsonl":
        lines = path.read_bytes().split(b"\n")
        for c in label["compactions"]:
            rec = json.loads(lines[c["summary_line"] - 1])
            out.append(rec["uuid"])
    else:
        events = path / "events"
        for c in label["compactions"]:
            f = next(events.glob(f"event-{int(c['summary_line']):05d}-*.json"))
            out.append(json.loads(f.read_text())["id"] + "-summary")
    return out


class _Recording:
    """A matcher that remembers every text the adapters hand to the extractor: (source, origin, what it read)."""

    def __init__(self, matcher: ProhibitionMatcher) -> None:
        self._matcher = matcher
        self.calls: list[tuple[str, tuple[str, int] | None, list[str]]] = []

    def prohibitions(self, text: str | None, *, source: str = "user", origin: tuple[str, int] | None = None,
                     about: str | None = None) -> list[Any]:
        found = self._matcher.prohibitions(text, source=source, origin=origin, about=about)
        if text and text.strip():
            self.calls.append((source, origin, [p.text for p in found]))
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._matcher, name)


def run_case(label: dict[str, Any], root: Path, matcher: ProhibitionMatcher, model: Any = None) -> Case:
    source = SOURCES[label["format"]]
    gold = {
        p["id"]: Gold(p["id"], p["text"], p.get("line", p.get("event")), p.get("form", ""), p.get("source", ""),
                      p.get("channel", ""))
        for p in label["prohibitions"]
    }
    case = Case(label, source, summary_nodes(label, root), gold)
    path = root / label["file"]
    recording = _Recording(matcher)
    judge = RulesJudge(recording)  # type: ignore[arg-type]
    reader = (ClaudeCodeTranscript(path, model or judge) if source == "claude-code"
              else OpenHandsConversation(path, model or judge))
    events = reader.poll(final=True)
    last = max((int(c.get("summary_line") or 0) for c in label["compactions"]), default=0)
    context = reader.session if source == "claude-code" else reader.context
    judged = context.judged if context is not None else None
    case.after_last = [(c.origin[1], [i.text for i, _ in judge.instructions(c)])
                       for c in (judged.candidates if judged and model is None else [])
                       if c.channel not in ("rule_file", "system") and c.origin is not None and c.origin[1] > last]
    rp = Replayer()
    node_index = {n: i for i, n in enumerate(case.summaries)}
    root_view: list[str] = []
    last_set: dict[str, list[str]] = {}  # summary node -> its last alert set
    root_sets: dict[str, list[str]] = {}  # summary node -> root's last alert set while it was in view
    for n, e in enumerate(events, 1):
        if e["type"] == "checkpoint":
            for c in (e.get("raw_negative_constraints") or []) + (e.get("negative_constraints") or []):
                case.constraints.setdefault(c["id"], c)
            if e["level"] == "root":
                root_view = list(e["children"])
        for a in rp.feed(encode_event(e).encode("utf-8"), n) or []:
            if a.get("type") != "alert" or a["rule"] != NCD:
                continue
            if a["node_id"] in node_index:
                last_set[a["node_id"]] = a["missing_constraints"] or []
            elif a["level"] == "root" and root_view:
                # the root's alert is about the summary in view (the latest one)
                in_view = [s for s in root_view if s in node_index]
                if in_view:
                    root_sets[max(in_view, key=node_index.get)] = a["missing_constraints"] or []
    for node in case.summaries:
        case.predicted.append(set(last_set.get(node, [])) | set(root_sets.get(node, [])))
    case.mapping = {cid: map_to_gold(obj, gold) for cid, obj in case.constraints.items()}
    return case


# --------------------------------------------------------------------------- scoring


@dataclass
class Score:
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    fp_items: list[str] = field(default_factory=list)
    fn_items: list[str] = field(default_factory=list)
    unscored: list[str] = field(default_factory=list)

    def add(self, other: "Score") -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.tn += other.tn
        self.fp_items += other.fp_items
        self.fn_items += other.fn_items
        self.unscored += other.unscored

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None


def score(case: Case) -> Score:
    s = Score()
    for i, comp in enumerate(case.label["compactions"]):
        where = f"{case.name[:8]} C{i + 1} (line {comp.get('summary_line')})"
        dropped, carried = set(comp.get("dropped", [])), set(comp.get("carried", []))
        not_in_force = set(comp.get("not_in_force", []))
        alerted_gold: set[str] = set()
        extra: dict[str, str] = {}
        for cid in sorted(case.predicted[i]):
            pid = case.mapping.get(cid)
            obj = case.constraints.get(cid, {})
            if pid is None:
                extra.setdefault(normalize(obj.get("text", cid)), f"{where}: {_describe(obj)}")
            else:
                alerted_gold.add(pid)
        for pid in sorted(alerted_gold):
            g = case.gold[pid]
            if pid in dropped:
                s.tp += 1
            elif pid in not_in_force or pid not in carried:
                s.unscored.append(f"{where}: {pid} \"{g.text}\" (not in force: revoked)")
            else:
                s.fp += 1
                s.fp_items.append(f"{where}: {pid} \"{g.text}\" [{g.form}] labelled carried: {comp.get('carried_quotes', {}).get(pid, '')!r}")
        for text in extra.values():
            s.fp += 1
            s.fp_items.append(text + " (not a gold prohibition)")
        for pid in sorted(dropped - alerted_gold):
            g = case.gold[pid]
            read = any(v == pid for v in case.mapping.values())
            why = "read, but the matcher thinks the summary carries it" if read else "never read as a prohibition"
            s.fn += 1
            s.fn_items.append(f"{where}: {pid} \"{g.text}\" [{g.form}, {g.channel}] — {why}")
        s.tn += len(carried - alerted_gold)
    return s


def _describe(obj: dict[str, Any]) -> str:
    where = f"line {obj['line']}" if "line" in obj else (f"event {obj['event']}" if "event" in obj else "?")
    return f"\"{obj.get('text', '')}\" [{obj.get('source', '?')}, {obj.get('form', '?')}, {where}]"


def extraction_report(cases: list[Case]) -> tuple[list[str], list[str], Counter]:
    """Gold prohibitions (in force at some compaction) never read, and every non-gold text read."""
    missed, extra = [], []
    forms: Counter[str] = Counter()
    for case in cases:
        in_force = {p for c in case.label["compactions"] for p in c.get("in_force", []) + c.get("not_in_force", [])}
        found = {pid for pid in case.mapping.values() if pid}
        for pid in in_force:
            forms[(case.gold[pid].form, "labelled")] += 1
            forms[(case.gold[pid].form, "labelled and read")] += pid in found
        for pid in sorted(in_force - found):
            g = case.gold[pid]
            missed.append(f"{case.name[:8]} {pid} line {g.line}: \"{g.text}\" [{g.form}, {g.channel}]")
        for cid, pid in sorted(case.mapping.items(), key=lambda kv: str(case.constraints[kv[0]].get("line"))):
            obj = case.constraints[cid]
            if obj.get("source") in ("system", "rule_file"):
                continue  # the always-kept channel: the root carries it, it never alerts
            forms[(obj.get("form", "?"), "gold" if pid else "other")] += 1
            if pid is None:
                extra.append(f"{case.name[:8]} {_describe(obj)}")
    return missed, extra, forms


# --------------------------------------------------------------------------- output


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def evaluate(root: Path, matcher: ProhibitionMatcher, only: set[str] | None = None,
             model: Any = None) -> tuple[list[Case], dict[str, Score]]:
    cases = []
    for f in sorted((root / "labels").glob("*.json")):
        label = json.loads(f.read_text())
        if only is not None and label["session_id"] not in only:
            continue
        cases.append(run_case(label, root, matcher, model))
    by_source: dict[str, Score] = defaultdict(Score)
    total = Score()
    for c in cases:
        s = score(c)
        by_source[c.source].add(s)
        total.add(s)
    by_source["overall"] = total
    return cases, dict(by_source)


def split_sessions(root: Path, spec: str) -> set[str]:
    """Sessions of fold ``N`` of ``M`` (``--split 1/2``): by a hash of the session id, stable."""
    import hashlib

    n, m = (int(x) for x in spec.split("/"))
    out = set()
    for f in sorted((root / "labels").glob("*.json")):
        sid = json.loads(f.read_text())["session_id"]
        if int(hashlib.sha256(sid.encode()).hexdigest(), 16) % m == n - 1:
            out.add(sid)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", nargs="?", default=str(DEFAULT_DIR), help=f"labelled logs (default: {DEFAULT_DIR})")
    ap.add_argument("--match-threshold", type=float, default=DEFAULT_MATCH_THRESHOLD,
                    help=f"as ingest --match-threshold (default {DEFAULT_MATCH_THRESHOLD})")
    ap.add_argument("--alert-uncertain", action="store_true",
                    help="alert on a partial match too (default: a partial match counts as carried, for precision)")
    ap.add_argument("--forms", default=",".join(FORMS),
                    help=f"prohibition forms to extract, comma-separated (default: all: {','.join(FORMS)})")
    ap.add_argument("--sweep", default=None, help="thresholds to compare, comma-separated (one line each)")
    ap.add_argument("--ablation", action="store_true",
                    help="one line per set of forms: explicit only, explicit + each extra form, all but each, all")
    ap.add_argument("--split", default=None, help="score fold N of M only (N/M, by session id hash)")
    ap.add_argument("--json", default=None, help="also write the figures as JSON to this file")
    ap.add_argument("--quiet", action="store_true", help="figures only, no item lists")
    ap.add_argument("--judge", choices=("rules", "model"), default="rules",
                    help="rules (default) or model: the LLM judge of ingest --judge model (CG_JUDGE_* settings)")
    args = ap.parse_args(argv)
    root = Path(args.dir)
    if not (root / "labels").is_dir():
        print(f"eval_real_logs: no labelled logs at {root} (expected {root / 'labels'}/*.json and the logs beside it); "
              "nothing measured. Pass the directory: python bench/eval_real_logs.py DIR", file=sys.stderr)
        return 0
    try:
        forms = frozenset(f.strip() for f in args.forms.split(",") if f.strip())
        matcher = ProhibitionMatcher(threshold=args.match_threshold, forms=forms, alert_uncertain=args.alert_uncertain)
        only = split_sessions(root, args.split) if args.split else None
    except ValueError as exc:
        print(f"eval_real_logs: error: {exc}", file=sys.stderr)
        return 2
    model = None
    if args.judge == "model":
        from stream.adapters.model_judge import JudgeConfigError, build_model_judge
        from stream.settings import Settings

        if args.sweep or args.ablation:
            print("eval_real_logs: error: --sweep and --ablation tune the rules judge; not with --judge model",
                  file=sys.stderr)
            return 2
        try:
            model = build_model_judge(Settings())
        except JudgeConfigError as exc:
            print(f"eval_real_logs: error: --judge model: {exc}", file=sys.stderr)
            return 2
    started = time.monotonic()
    if args.sweep:
        print(f"{'threshold':>9}  {'precision':>9}  {'recall':>6}  tp  fp  fn  tn")
        for t in (float(x) for x in args.sweep.split(",")):
            _, scores = evaluate(root, ProhibitionMatcher(threshold=t, forms=forms, alert_uncertain=args.alert_uncertain), only)
            s = scores["overall"]
            print(f"{t:>9.2f}  {_fmt(s.precision):>9}  {_fmt(s.recall):>6}  {s.tp:>2}  {s.fp:>2}  {s.fn:>2}  {s.tn:>2}")
        return 0
    if args.ablation:
        extras = [f for f in FORMS if f != "explicit"]
        sets = [("explicit only", {"explicit"})] + [(f"explicit + {f}", {"explicit", f}) for f in extras]
        sets += [(f"all but {f}", set(FORMS) - {f}) for f in extras] + [("all forms", set(FORMS))]
        print(f"{'forms':<26} {'precision':>9}  {'recall':>6}  tp  fp  fn  tn")
        for name, fs in sets:
            _, scores = evaluate(root, ProhibitionMatcher(threshold=args.match_threshold, forms=frozenset(fs),
                                                          alert_uncertain=args.alert_uncertain), only)
            s = scores["overall"]
            print(f"{name:<26} {_fmt(s.precision):>9}  {_fmt(s.recall):>6}  {s.tp:>2}  {s.fp:>2}  {s.fn:>2}  {s.tn:>2}")
        return 0
    if model is not None:
        from stream.adapters.model_judge import JudgeUnavailable

        try:
            cases, scores = evaluate(root, matcher, only, model)
        except JudgeUnavailable as exc:
            print(f"eval_real_logs: error: --judge model: {exc}", file=sys.stderr)
            return 1
        finally:
            print(model.tally.line(model.model), file=sys.stderr)
    else:
        cases, scores = evaluate(root, matcher, only)
    comps = sum(len(c.label["compactions"]) for c in cases)
    judged_by = (f"judge {model.model}" if model is not None else
                 f"match threshold {args.match_threshold}; forms {','.join(sorted(forms))}")
    print(f"labelled logs: {root} ({len(cases)} transcripts, {comps} compactions); {judged_by}"
          + (f"; fold {args.split}" if args.split else ""))
    print()
    print(f"{'source':<12} {'precision':>9} {'recall':>6}   TP  FP  FN  TN")
    for name in [k for k in sorted(scores) if k != "overall"] + ["overall"]:
        s = scores[name]
        print(f"{name:<12} {_fmt(s.precision):>9} {_fmt(s.recall):>6}  {s.tp:>3} {s.fp:>3} {s.fn:>3} {s.tn:>3}")
    s = scores["overall"]
    print()
    print("confusion (per (summary, prohibition) pair)   labelled dropped   labelled carried / not gold")
    print(f"  alerted                                      {s.tp:>6} (TP)          {s.fp:>6} (FP)")
    print(f"  not alerted                                  {s.fn:>6} (FN)          {s.tn:>6} (TN; not-gold pairs not counted)")
    if not args.quiet:
        print(f"\nfalse alarms ({len(s.fp_items)}):")
        for line in s.fp_items:
            print(f"  {line}")
        print(f"\nmisses ({len(s.fn_items)}):")
        for line in s.fn_items:
            print(f"  {line}")
        if s.unscored:
            print(f"\nnot scored ({len(s.unscored)}):")
            for line in s.unscored:
                print(f"  {line}")
        missed, extra, forms_seen = extraction_report(cases)
        print(f"\nextraction: gold prohibitions in force never read ({len(missed)}):")
        for line in missed:
            print(f"  {line}")
        print(f"\nextraction: read but not gold ({len(extra)}; harmless while every summary carries them):")
        for line in extra:
            print(f"  {line}")
        texts = [(c.name, line, found) for c in cases for line, found in c.after_last]
        read = [(name, line, t) for name, line, found in texts for t in found]
        print(f"\nnatural negatives (the user's words after each log's last compaction, in no label): {len(texts)} texts, "
              f"{len(read)} read as prohibitions (each should be a real one):")
        for name, line, t in read:
            print(f"  {name[:8]} line {line}: \"{t}\"")
        print("\nextraction by form (gold prohibitions issued before a compaction; the form is the label's for the"
              " first two columns, ours for the last two):")
        print(f"  {'form':<12} {'labelled':>8} {'read':>5} {'ours: gold':>11} {'ours: other':>12}")
        for f in FORMS:
            print(f"  {f:<12} {forms_seen[(f, 'labelled')]:>8} {forms_seen[(f, 'labelled and read')]:>5} "
                  f"{forms_seen[(f, 'gold')]:>11} {forms_seen[(f, 'other')]:>12}")
    print(f"\n{time.monotonic() - started:.1f}s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({
            name: {"precision": sc.precision, "recall": sc.recall, "tp": sc.tp, "fp": sc.fp, "fn": sc.fn, "tn": sc.tn}
            for name, sc in scores.items()
        }, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
