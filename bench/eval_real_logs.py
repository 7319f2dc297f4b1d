"""How far the dropped-prohibition alerts of real compaction logs can be trusted.

    python -m bench.eval_real_logs [DIR ...] [--judge rules|model] [--judge-precision LEVEL|all]
                                   [--match-threshold X] [--forms explicit,preserve,...] [--sweep 0.4,0.5,...]
                                   [--ablation] [--split N/M] [--json FILE] [--quiet] [--gold-in-force]

Runs the compaction-log adapters (``ingest claude-code`` / ``ingest openhands``, in
process) with the chosen judge and the engine (the same as ``replay``) over every
labelled log of each DIR (default ``../shared/real-logs`` beside the repository; its
README.md describes the labels; each DIR is one split, scored alone and pooled), and
scores the ``negative_constraint_dropped`` alerts against the hand-made labels:

More (the module notes): bench/METHODS.md, section ``bench/eval_real_logs.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stream.adapters import encode_event
from stream.adapters.compaction import cues
from stream.adapters.compaction.claude_code import ClaudeCodeTranscript
from stream.adapters.compaction.cues import DEFAULT_PRECISION, PRECISION_LEVELS
from stream.adapters.compaction.judge import SOURCE_OF_CHANNEL, Candidate, Instruction, Judge, Judgement
from stream.adapters.compaction.judge_rules import RulesJudge, session_language
from stream.adapters.compaction.openhands import OpenHandsConversation
from stream.adapters.compaction.prohibitions import (
    DEFAULT_MATCH_THRESHOLD,
    FORMS,
    Prohibition,
    ProhibitionMatcher,
    content_words,
    make_prohibition,
    normalize,
)
from stream.offline.replay import Replayer

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DIR = REPO.parent / "shared" / "real-logs"
NCD = "negative_constraint_dropped"
SOURCES = {"claude-code-jsonl": "claude-code", "openhands-v1-events": "openhands"}


# --------------------------------------------------------------------------- matching to gold


def _words(text: str) -> frozenset[str]:
    return content_words(text) or frozenset(normalize(text).split())


def _contained(ours: str, gold: str) -> bool:
    """One text contains the other, normalized (case, punctuation, whitespace)."""
    a, b = " ".join(normalize(ours).split()), " ".join(normalize(gold).split())
    return a in b or b in a


def same_prohibition(ours: str, gold: str) -> bool:
    """Our extracted text and a gold text name the same prohibition.

    One contains the other (normalized), or at least half of the smaller one's content
    words are in the other (our clause may be longer or shorter than the gold span).
    """
    if _contained(ours, gold):
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
    after_last: list[tuple[int, list[str]]] = field(
        default_factory=list
    )  # (line / event, texts read) after the last compaction
    drop_cues: list[dict[str, str]] = field(default_factory=list)  # per compaction: our id -> the drop cue of its node
    carry_cues: list[dict[str, str]] = field(default_factory=list)  # per compaction: our id -> its carry cue there
    skipped_languages: Counter = field(default_factory=Counter)  # texts the judge could not read, by language

    @property
    def name(self) -> str:
        return self.label["session_id"]


def _closeness(ours: str, gold: str) -> tuple[bool, float]:
    """How close two texts are: one contains the other, then the share of shared content words."""
    wa, wb = _words(ours), _words(gold)
    return _contained(ours, gold), len(wa & wb) / max(1, len(wa | wb))


def _copied(ours: str, gold: str) -> bool:
    """``ours``, read on another line than ``gold``, is a copy of it: one contains the other, or they share two
    content words or more (one shared word is a coincidence: "anything", "code")."""
    return _contained(ours, gold) or len(_words(ours) & _words(gold)) >= 2


def map_to_gold(obj: dict[str, Any], gold: dict[str, Gold]) -> str | None:
    """The gold prohibition our constraint object is, or None.

    A gold one read on the same line first (the closest, when a line holds several), else
    the same words read on another line (a queued copy of a typed message: :func:`_copied`).
    """
    where = obj.get("line", obj.get("event"))
    text = obj.get("text") or ""
    same_line, elsewhere = [], []
    for g in gold.values():
        if not same_prohibition(text, g.text):
            continue
        if where is not None and g.line is not None and where == g.line:
            same_line.append(g)
        elif _copied(text, g.text):
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


def make_judge(name: str, matcher: ProhibitionMatcher, precision: str) -> Judge:
    """The judge to evaluate: ``rules`` (with ``matcher`` and ``precision``) or ``model`` (settings: CG_JUDGE_*)."""
    if name == "rules":
        return RulesJudge(matcher, precision)
    if name == "model":
        from stream.adapters.compaction.model_judge import JudgeConfigError, build_model_judge
        from stream.settings import Settings

        try:
            return build_model_judge(Settings())
        except JudgeConfigError as exc:
            raise ValueError(f"--judge model: {exc}") from None
    raise ValueError(f"unknown judge {name!r} (rules, model)")


class GoldInForce:
    """The rules judge's carry decision alone (``--gold-in-force``): the label's prohibitions are the rules in force.

    Each gold prohibition is in force from its line (the candidate on that line holding its text) until its
    ``revoked_at``; its form is the label's, its instruction cue one of high strength, so that every drop cue the
    precision level admits can alert. Scores what the summary-side decision gets right when extraction is perfect.
    """

    name = "rules"

    def __init__(self, rules: RulesJudge, prohibitions: list[dict[str, Any]]) -> None:
        self.rules, self.gold = rules, prohibitions

    def judge(self, candidates: Sequence[Candidate], summary: str | None,
              earlier_summaries: Sequence[str] = ()) -> Judgement:
        on_line: dict[int, list[Candidate]] = defaultdict(list)
        for c in candidates:
            if c.origin is not None:
                on_line[c.origin[1]].append(c)
        seen_to = max(on_line, default=0)
        session = session_language(candidates)
        found: dict[str, tuple[Instruction, Prohibition, Candidate, str]] = {}
        for g in self.gold:
            line, text = g.get("line", g.get("event")), " ".join(g["text"].split())
            if g.get("revoked_at") and int(g["revoked_at"]) <= seen_to:
                continue
            here = on_line.get(line, [])
            c = next((c for c in here if text in " ".join(c.text.split())), here[0] if here else None)
            if c is None:
                continue  # issued after this compaction
            form = g.get("form") if g.get("form") in FORMS else "explicit"
            p = make_prohibition(text, source=SOURCE_OF_CHANNEL.get(c.channel, "user"), form=form, origin=c.origin,
                                 cue=GOLD_CUE)
            lang = cues.language_in(text, session)
            i = Instruction(p.id, p.text, c.id, form, cue=GOLD_CUE)
            found.setdefault(i.id, (i, p, c, "en" if lang in ("en", "und") else lang))
        rules = list(found.values())
        return Judgement("rules", None, tuple(i for i, *_ in rules), self.rules.carries(rules, summary,
                                                                                         earlier_summaries))


#: The instruction cue a gold prohibition gets under ``--gold-in-force`` (a high-strength one).
GOLD_CUE = "neg-imperative"


def run_case(label: dict[str, Any], root: Path, judge: Judge | ProhibitionMatcher) -> Case:
    if isinstance(judge, ProhibitionMatcher):
        judge = RulesJudge(judge)
    source = SOURCES[label["format"]]
    gold = {
        p["id"]: Gold(p["id"], p["text"], p.get("line", p.get("event")), p.get("form", ""), p.get("source", ""),
                      p.get("channel", ""))
        for p in label["prohibitions"]
    }
    case = Case(label, source, summary_nodes(label, root), gold)
    path = root / label["file"]
    reader = (ClaudeCodeTranscript(path, judge) if source == "claude-code" else OpenHandsConversation(path, judge))
    events = reader.poll(final=True)
    last = max((int(c.get("summary_line") or 0) for c in label["compactions"]), default=0)
    context = reader.session if source == "claude-code" else reader.context
    judged = context.judged if context is not None else None
    if judged is not None:
        case.skipped_languages = Counter(judged.skipped_languages)
    if isinstance(judge, RulesJudge):
        session = session_language(judged.candidates if judged else [])  # as the judge reads them at a compaction
        case.after_last = [(c.origin[1], [i.text for i, _ in judge.instructions(c, session)])
                           for c in (judged.candidates if judged else [])
                           if c.channel not in ("rule_file", "system") and c.origin is not None and c.origin[1] > last]
    rp = Replayer()
    node_index = {n: i for i, n in enumerate(case.summaries)}
    root_view: list[str] = []
    last_set: dict[str, list[str]] = {}  # summary node -> its last alert set
    root_sets: dict[str, list[str]] = {}  # summary node -> root's last alert set while it was in view
    not_carried: dict[str, dict[str, str]] = {}  # summary node -> our id -> drop cue
    carried_by: dict[str, dict[str, str]] = {}  # summary node -> our id -> carry cue
    raw_ids: set[str] = set()
    for n, e in enumerate(events, 1):
        if e["type"] == "checkpoint":
            for c in (e.get("raw_negative_constraints") or []):
                if c["id"] not in raw_ids:  # the raw object carries the instruction cue
                    case.constraints[c["id"]] = c
                    raw_ids.add(c["id"])
            for c in (e.get("negative_constraints") or []):
                case.constraints.setdefault(c["id"], c)
            if e["level"] == "root":
                root_view = list(e["children"])
            else:
                not_carried[e["node_id"]] = {d["id"]: d.get("cue") or "?" for d in e.get("x_not_carried") or []}
                carried_by[e["node_id"]] = {d["id"]: d.get("x_cue") or "?" for d in e.get("negative_constraints") or []}
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
        case.drop_cues.append(not_carried.get(node, {}))
        case.carry_cues.append(carried_by.get(node, {}))
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
    tp_items: list[str] = field(default_factory=list)
    fn_items: list[str] = field(default_factory=list)
    unscored: list[str] = field(default_factory=list)
    cues: Counter = field(default_factory=Counter)  # ("instruction" | "drop", cue, "tp" | "fp") -> alerts
    groups: Counter = field(default_factory=Counter)  # (group, "tp" | "fp" | "fn") -> items

    def add(self, other: Score) -> None:
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.tn += other.tn
        self.fp_items += other.fp_items
        self.tp_items += other.tp_items
        self.fn_items += other.fn_items
        self.unscored += other.unscored
        self.cues.update(other.cues)
        self.groups.update(other.groups)

    def count_cues(self, obj: dict[str, Any], drop: str | None, outcome: str) -> None:
        self.cues[("instruction", str(obj.get("x_cue") or "?"), outcome)] += 1
        self.cues[("drop", drop or "?", outcome)] += 1

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
        drops = case.drop_cues[i] if i < len(case.drop_cues) else {}
        carries = case.carry_cues[i] if i < len(case.carry_cues) else {}
        ordinal = "1st compaction" if i == 0 else "2nd+ compaction"

        def group(pid: str | None, outcome: str, ordinal: str = ordinal) -> None:
            s.groups[(ordinal, outcome)] += 1
            g = case.gold.get(pid) if pid else None
            channel = "plan" if g is not None and (g.source == "plan" or g.channel.startswith("plan")) else "user"
            s.groups[(f"{ordinal}, {channel}" if g is not None else f"{ordinal}, not gold", outcome)] += 1
        alerted_gold: dict[str, str] = {}  # gold pid -> our id
        extra: dict[str, tuple[str, str]] = {}
        for cid in sorted(case.predicted[i]):
            pid = case.mapping.get(cid)
            obj = case.constraints.get(cid, {})
            if pid is None:
                extra.setdefault(normalize(obj.get("text", cid)), (f"{where}: {_describe(obj)}", cid))
            else:
                alerted_gold.setdefault(pid, cid)
        for pid, cid in sorted(alerted_gold.items()):
            g = case.gold[pid]
            obj = case.constraints.get(cid, {})
            if pid in dropped:
                s.tp += 1
                s.count_cues(obj, drops.get(cid), "tp")
                group(pid, "tp")
                s.tp_items.append(f'{where}: {pid} "{g.text}" [{g.form}, {g.channel}] (cues {obj.get("x_cue")}, '
                                  f"{drops.get(cid)})")
            elif pid in not_in_force or pid not in carried:
                s.unscored.append(f"{where}: {pid} \"{g.text}\" (not in force: revoked)")
            else:
                s.fp += 1
                s.count_cues(obj, drops.get(cid), "fp")
                group(pid, "fp")
                s.fp_items.append(
                    f'{where}: {pid} "{g.text}" [{g.form}] labelled carried: '
                    f"{comp.get('carried_quotes', {}).get(pid, '')!r} (cues {obj.get('x_cue')}, {drops.get(cid)})"
                )
        for text, cid in extra.values():
            s.fp += 1
            s.count_cues(case.constraints.get(cid, {}), drops.get(cid), "fp")
            group(None, "fp")
            s.fp_items.append(text + " (not a gold prohibition)")
        for pid in sorted(dropped - set(alerted_gold)):
            g = case.gold[pid]
            ours = [c for c, v in case.mapping.items() if v == pid]
            cue = next((carries[c] for c in ours if c in carries), None)
            why = ("never read as a prohibition" if not ours else
                   f"read, but judged carried ({cue})" if cue else "read, but not in force or not covered here")
            s.fn += 1
            group(pid, "fn")
            s.fn_items.append(f"{where}: {pid} \"{g.text}\" [{g.form}, {g.channel}] — {why}")
        s.tn += len(carried - set(alerted_gold))
    return s


def _describe(obj: dict[str, Any]) -> str:
    where = f"line {obj['line']}" if "line" in obj else (f"event {obj['event']}" if "event" in obj else "?")
    cue = f", {obj['x_cue']}" if obj.get("x_cue") else ""
    return f"\"{obj.get('text', '')}\" [{obj.get('source', '?')}, {obj.get('form', '?')}, {where}{cue}]"


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
                excluded = any(x.get("line") == obj.get("line")
                               and same_prohibition(obj.get("text", ""), x.get("text", ""))
                               for x in case.label.get("excluded_candidates") or [])
                forms[(str(obj.get("x_cue") or "?"), "reviewed negative")] += excluded
                extra.append(f"{case.name[:8]} {_describe(obj)}" + (" (a reviewed negative of the labels)"
                                                                    if excluded else ""))
    return missed, extra, forms


# --------------------------------------------------------------------------- output


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def evaluate(
    root: Path, judge: Judge | ProhibitionMatcher, only: set[str] | None = None, gold_in_force: bool = False
) -> tuple[list[Case], dict[str, Score]]:
    """Every labelled log of ``root`` run with ``judge`` (a bare matcher: the rules judge with it), scored:
    ``{"claude-code" | "openhands" | "lang:<xx>" | "overall": Score}``. ``gold_in_force``: the rules judge's carry
    decision alone (:class:`GoldInForce`)."""
    if isinstance(judge, ProhibitionMatcher):
        judge = RulesJudge(judge)
    if gold_in_force and not isinstance(judge, RulesJudge):
        raise ValueError("--gold-in-force scores the rules judge's carry decision, not another judge")
    cases = []
    for f in sorted((root / "labels").glob("*.json")):
        label = json.loads(f.read_text())
        if only is not None and label["session_id"] not in only:
            continue
        case_judge = GoldInForce(judge, label["prohibitions"]) if gold_in_force else judge  # type: ignore[arg-type]
        cases.append(run_case(label, root, case_judge))
    by_source: dict[str, Score] = defaultdict(Score)
    total = Score()
    for c in cases:
        sc = score(c)
        by_source[c.source].add(sc)
        if c.label.get("language"):
            by_source[f"lang:{c.label['language']}"].add(sc)
        total.add(sc)
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


def all_sessions(root: Path) -> set[str]:
    return {json.loads(f.read_text())["session_id"] for f in sorted((root / "labels").glob("*.json"))}


def _row(name: str, s: Score) -> str:
    return f"{name:<22} {_fmt(s.precision):>9} {_fmt(s.recall):>6}  {s.tp:>3} {s.fp:>3} {s.fn:>3} {s.tn:>3}"


def cue_table(s: Score) -> list[str]:
    """Precision of every cue that raised an alert: ``kind cue TP FP precision``."""
    rows = []
    keys = sorted({(k, c) for k, c, _ in s.cues})
    for kind, cue in keys:
        tp, fp = s.cues[(kind, cue, "tp")], s.cues[(kind, cue, "fp")]
        rows.append(f"  {kind:<12} {cue:<34} {tp:>3} {fp:>3} {_fmt(tp / (tp + fp) if tp + fp else None):>9}")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("dirs", nargs="*", metavar="DIR", help=f"labelled logs, one split each (default: {DEFAULT_DIR})")
    ap.add_argument("--judge", default="rules", choices=("rules", "model"), help="the judge to score (default: rules)")
    ap.add_argument(
        "--judge-precision",
        default=DEFAULT_PRECISION,
        help=f"rules judge: {', '.join(PRECISION_LEVELS)} or 'all' for one line each (default: {DEFAULT_PRECISION})",
    )
    ap.add_argument("--match-threshold", type=float, default=DEFAULT_MATCH_THRESHOLD,
                    help=f"as ingest --match-threshold (default {DEFAULT_MATCH_THRESHOLD})")
    ap.add_argument("--alert-uncertain", action="store_true",
                    help="alert on a partial match too (default: a partial match counts as carried, for precision)")
    ap.add_argument("--forms", default=",".join(FORMS),
                    help=f"prohibition forms to extract, comma-separated (default: all: {','.join(FORMS)})")
    ap.add_argument("--sweep", default=None, help="match thresholds to compare, comma-separated (one line each)")
    ap.add_argument("--ablation", action="store_true",
                    help="one line per set of forms: explicit only, explicit + each extra form, all but each, all")
    ap.add_argument("--split", default=None, help="score fold N of M only (N/M, by session id hash)")
    ap.add_argument(
        "--exclude", default="", help="leave out sessions whose id starts with one of these (comma-separated)"
    )
    ap.add_argument("--json", default=None, help="also write the figures as JSON to this file")
    ap.add_argument("--quiet", action="store_true", help="figures and per-cue precision only, no item lists")
    ap.add_argument("--gold-in-force", action="store_true",
                    help="score the rules judge's carry decision alone: the labels' prohibitions are the rules in "
                         "force (perfect extraction)")
    args = ap.parse_args(argv)
    roots = [Path(d) for d in (args.dirs or [str(DEFAULT_DIR)])]
    missing = [r for r in roots if not (r / "labels").is_dir()]
    for r in missing:
        print(f"eval_real_logs: no labelled logs at {r} (expected {r / 'labels'}/*.json and the logs beside it); "
              "nothing measured there. Pass the directory: python -m bench.eval_real_logs DIR", file=sys.stderr)
    roots = [r for r in roots if r not in missing]
    if not roots:
        return 0
    levels = list(PRECISION_LEVELS) if args.judge_precision == "all" else [args.judge_precision]
    if args.judge == "model":
        if args.sweep or args.ablation:
            print(
                "eval_real_logs: error: --sweep and --ablation tune the rules judge, not --judge model", file=sys.stderr
            )
            return 2
        levels = levels[:1]
        if args.gold_in_force:
            print("eval_real_logs: error: --gold-in-force scores the rules judge's carry decision, not --judge model",
                  file=sys.stderr)
            return 2
    try:
        forms = frozenset(f.strip() for f in args.forms.split(",") if f.strip())
        matcher = ProhibitionMatcher(threshold=args.match_threshold, forms=forms, alert_uncertain=args.alert_uncertain)
        judges = [(lvl, make_judge(args.judge, matcher, lvl)) for lvl in levels]
        folds = {r: (split_sessions(r, args.split) if args.split else None) for r in roots}
        excluded = tuple(x.strip() for x in args.exclude.split(",") if x.strip())
        if excluded:
            folds = {r: {sid for sid in (f if f is not None else all_sessions(r)) if not sid.startswith(excluded)}
                     for r, f in folds.items()}
    except ValueError as exc:
        print(f"eval_real_logs: error: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()

    def pooled(judge: Judge | ProhibitionMatcher) -> tuple[list[Case], dict[str, Score], dict[Path, dict[str, Score]]]:
        all_cases, per_root, total = [], {}, defaultdict(Score)
        for r in roots:
            cases, scores = evaluate(r, judge, folds[r], gold_in_force=args.gold_in_force)
            all_cases += cases
            per_root[r] = scores
            for k, v in scores.items():
                total[k].add(v)
        return all_cases, dict(total), per_root

    def line(name: str, judge: Judge | ProhibitionMatcher) -> None:
        _, scores, _ = pooled(judge)
        sc = scores["overall"]
        print(
            f"{name:>9}  {_fmt(sc.precision):>9}  {_fmt(sc.recall):>6}  {sc.tp:>2}  {sc.fp:>2}  {sc.fn:>2}  {sc.tn:>2}"
        )

    if args.sweep:
        print(f"{'threshold':>9}  {'precision':>9}  {'recall':>6}  tp  fp  fn  tn")
        for t in (float(x) for x in args.sweep.split(",")):
            line(
                f"{t:.2f}",
                make_judge(
                    args.judge,
                    ProhibitionMatcher(threshold=t, forms=forms, alert_uncertain=args.alert_uncertain),
                    levels[0],
                ),
            )
        return 0
    if args.ablation:
        extras = [f for f in FORMS if f != "explicit"]
        sets = [("explicit only", {"explicit"})] + [(f"explicit + {f}", {"explicit", f}) for f in extras]
        sets += [(f"all but {f}", set(FORMS) - {f}) for f in extras] + [("all forms", set(FORMS))]
        print(f"{'forms':<26} {'precision':>9}  {'recall':>6}  tp  fp  fn  tn")
        for name, fs in sets:
            _, scores, _ = pooled(
                make_judge(
                    args.judge,
                    ProhibitionMatcher(
                        threshold=args.match_threshold, forms=frozenset(fs), alert_uncertain=args.alert_uncertain
                    ),
                    levels[0],
                )
            )
            sc = scores["overall"]
            print(
                f"{name:<26} {_fmt(sc.precision):>9}  {_fmt(sc.recall):>6}  "
                f"{sc.tp:>2}  {sc.fp:>2}  {sc.fn:>2}  {sc.tn:>2}"
            )
        return 0
    figures: dict[str, Any] = {}
    for lvl, judge in judges:
        if args.judge == "model":
            from stream.adapters.compaction.model_judge import JudgeUnavailable

            try:
                cases, scores, per_root = pooled(judge)
            except JudgeUnavailable as exc:
                print(f"eval_real_logs: error: --judge model: {exc}", file=sys.stderr)
                return 1
            finally:
                print(judge.tally.line(judge.model), file=sys.stderr)  # type: ignore[attr-defined]
        else:
            cases, scores, per_root = pooled(judge)
        comps = sum(len(c.label["compactions"]) for c in cases)
        name = f"{args.judge}" + (f" (precision {lvl})" if args.judge == "rules" else f" {judge.model}")  # type: ignore[attr-defined]
        print(
            f"judge {name}: {', '.join(map(str, roots))} ({len(cases)} transcripts, {comps} compactions); "
            "match threshold "
            f"{args.match_threshold}; forms {','.join(sorted(forms))}" + (f"; fold {args.split}" if args.split else "")
            + ("; the carry decision alone: the labels' prohibitions in force (--gold-in-force)"
               if args.gold_in_force else "")
        )
        print()
        print(f"{'split / source':<22} {'precision':>9} {'recall':>6}   TP  FP  FN  TN")
        if len(roots) > 1:
            for r in roots:
                print(_row(f"split {r.name}", per_root[r]["overall"]))
        for k in [k for k in sorted(scores) if k != "overall"] + ["overall"]:
            print(_row(k if k != "overall" else ("pooled" if len(roots) > 1 else "overall"), scores[k]))
        s = scores["overall"]
        skipped: Counter = Counter()
        for c in cases:
            skipped.update(c.skipped_languages)
        missed, extra, forms_seen = extraction_report(cases)
        labelled = sum(v for (_, kind), v in forms_seen.items() if kind == "labelled")
        print(f"\nextraction: {labelled - len(missed)} of {labelled} gold prohibitions issued before a compaction read "
              f"(recall {_fmt((labelled - len(missed)) / labelled if labelled else None)}); {len(extra)} texts read "
              "that are no gold prohibition")
        print(f"texts in a language the judge cannot read: {sum(skipped.values())}"
              + (f" ({', '.join(f'{k} {v}' for k, v in sorted(skipped.items()))})" if skipped else ""))
        print(
            "\nprecision per cue (alerts it raised; the instruction cue read the rule, the drop cue judged it not "
            "carried):"
        )
        print(f"  {'kind':<12} {'cue':<34} {'TP':>3} {'FP':>3} {'precision':>9}")
        for row in cue_table(s):
            print(row)
        print("\nby compaction ordinal and the gold rule's channel (2nd / later compactions apart):")
        print(f"  {'group':<28} {'precision':>9} {'recall':>6}   TP  FP  FN")
        for grp in sorted({g for g, _ in s.groups}):
            tp, fp, fn = (s.groups[(grp, o)] for o in ("tp", "fp", "fn"))
            print(f"  {grp:<28} {_fmt(tp / (tp + fp) if tp + fp else None):>9} "
                  f"{_fmt(tp / (tp + fn) if tp + fn else None):>6}  {tp:>3} {fp:>3} {fn:>3}")
        figures[lvl] = {name: {"precision": sc.precision, "recall": sc.recall, "tp": sc.tp, "fp": sc.fp, "fn": sc.fn,
                               "tn": sc.tn} for name, sc in scores.items()}
        if not args.quiet:
            print(f"\nfound ({len(s.tp_items)}):")
            for item in s.tp_items:
                print(f"  {item}")
            print(f"\nfalse alarms ({len(s.fp_items)}):")
            for item in s.fp_items:
                print(f"  {item}")
            print(f"\nmisses ({len(s.fn_items)}):")
            for item in s.fn_items:
                print(f"  {item}")
            if s.unscored:
                print(f"\nnot scored ({len(s.unscored)}):")
                for item in s.unscored:
                    print(f"  {item}")
            print(f"\nextraction: gold prohibitions in force never read ({len(missed)}):")
            for item in missed:
                print(f"  {item}")
            print(f"\nextraction: read but not gold ({len(extra)}; harmless while every summary carries them):")
            for item in extra:
                print(f"  {item}")
            texts = [(c.name, ln, found) for c in cases for ln, found in c.after_last]
            read = [(n, ln, t) for n, ln, found in texts for t in found]
            print(
                "\nnatural negatives (the user's words after each log's last compaction, in no label): "
                f"{len(texts)} texts, "
                f"{len(read)} read as prohibitions (each should be a real one):"
            )
            for n, ln, t in read:
                print(f"  {n[:8]} line {ln}: \"{t}\"")
            print("\nextraction by form (gold prohibitions issued before a compaction; the form is the label's for the"
                  " first two columns, ours for the last two):")
            print(f"  {'form':<12} {'labelled':>8} {'read':>5} {'ours: gold':>11} {'ours: other':>12}")
            for f in FORMS:
                print(f"  {f:<12} {forms_seen[(f, 'labelled')]:>8} {forms_seen[(f, 'labelled and read')]:>5} "
                      f"{forms_seen[(f, 'gold')]:>11} {forms_seen[(f, 'other')]:>12}")
            negatives = sorted((k, v) for (k, kind), v in forms_seen.items() if kind == "reviewed negative" and v)
            print("\nread though the labels reviewed it as not a prohibition (excluded_candidates), by cue: "
                  + (", ".join(f"{k} {v}" for k, v in negatives) if negatives else "none"))
        print()
    print(f"{time.monotonic() - started:.1f}s", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(
            json.dumps(figures if len(figures) > 1 else next(iter(figures.values())), indent=2) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
