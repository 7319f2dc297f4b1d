"""``python -m stream ingest`` — real agent records -> the two input streams.

Two forms, one command: ``ingest [PATH...]`` reads trajectories (mini-swe-agent,
tau-bench) through the deterministic compaction simulation; ``ingest openhands DIR...`` /
``ingest claude-code FILE...`` read real compaction logs, after the fact or live
(``--follow``). Events go out as JSONL (stdout or ``--out``) or to the input topics
(``--to-kafka``). A thin shell around :mod:`stream.adapters`: a file or record that cannot be
read is reported on stderr in one line and skipped. Details: docs/ADAPTERS.md "ingest".
"""

from __future__ import annotations

import asyncio
import difflib
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any, BinaryIO

import click

from stream.adapters import (
    SimulationParams,
    Trajectory,
    encode_event,
    event_counts,
    load_trajectories,
    parse_rates,
    simulate,
)
from stream.adapters.compaction.compaction_logs import ReadStats
from stream.adapters.compaction.judge import Judge
from stream.adapters.compaction.judge_rules import RulesJudge
from stream.adapters.compaction.model_judge import (
    FallbackJudge,
    JudgeConfigError,
    JudgeUnavailable,
    ModelJudge,
    RestartWithFallback,
    build_model_judge,
)
from stream.adapters.compaction.prohibitions import DEFAULT_MATCH_THRESHOLD, ProhibitionMatcher

#: The traces shipped with the project (read-only input data).
from stream.adapters.simulated.model import DEFAULT_TRACES  # noqa: E402
from stream.commands._base import argument, check_input_file, check_output_file, command, fail, option
from stream.kafka_clients import kafka_error
from stream.settings import get_settings

settings = get_settings()
_D = SimulationParams()


def _rates(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[float, float, float] | None:
    if value is None:
        return None
    try:
        return parse_rates(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _fmt(rates: tuple[float, ...]) -> str:
    return ",".join(f"{r:g}" for r in rates)


@command(
    argument("paths", nargs=-1, type=str),
    option("--out", "-o", type=str, default=None, help="Write the JSONL here instead of stdout."),
    option("--window", type=int, default=_D.window, show_default=True, help="Live window, tokens."),
    option("--low-water", type=int, default=_D.low_water, show_default=True,
           help="Evict whole turns until the live window is at most this many tokens."),
    option("--durable-capacity", type=int, default=_D.durable_capacity, show_default=True,
           help="Artifacts the durable store keeps; the oldest fall out."),
    option("--fanout", type=int, default=_D.fanout, show_default=True,
           help="Leaves per section and sections per root."),
    option("--seed", type=int, default=_D.seed, show_default=True, help="Seed of every random draw."),
    option("--prohibition-survival", type=str, default=None, callback=_rates,
           help=f"Cumulative leaf,section,root survival of prohibitions [{_fmt(_D.prohibition_survival)}]."),
    option("--instruction-survival", type=str, default=None, callback=_rates,
           help=f"Same for positive instructions [{_fmt(_D.instruction_survival)}]."),
    option("--referent-survival", type=str, default=None, callback=_rates,
           help=f"Same for referents named by the summaries [{_fmt(_D.referent_survival)}]."),
    option("--recompact-rate", type=float, default=_D.recompact_rate, show_default=True,
           help="Chance per compaction cycle that an earlier section/root is compacted again."),
    option("--stable-recompaction", is_flag=True, default=False,
           help="Re-compaction keeps the node's referents (default: draws them afresh)."),
    option("--to-kafka", is_flag=True, default=False,
           help="Produce to the input topics (CG_BROKER) instead of writing JSONL."),
    option("--progress/--no-progress", default=None,
           help="Progress bar on stderr [default: only when stderr is a terminal]."),
    option("--follow", "-f", is_flag=True, default=False,
           help="openhands/claude-code: keep tailing the inputs and emit new events as they are written."),
    option("--idle-timeout", type=float, default=None,
           help="--follow: stop after this many seconds without a new record [default: never]."),
    option("--poll-interval", type=float, default=1.0, show_default=True,
           help="--follow: seconds between two looks at the inputs."),
    option("--match-threshold", type=float, default=DEFAULT_MATCH_THRESHOLD, show_default=True,
           help="openhands/claude-code: share of a prohibition's key words a summary sentence "
                "with a cue of the same polarity must contain to count as carrying it (0..1; lower = "
                "more paraphrases kept, higher = more of them only 'uncertain'; measured in docs/REAL_LOGS.md)."),
    option("--alert-uncertain", is_flag=True, default=False,
           help="openhands/claude-code: a summary that only partly restates a prohibition (the "
                "'uncertain' verdict) does not carry it, so it alerts [default: uncertain counts as carried]."),
    option("--judge-precision", type=click.Choice(["precise", "balanced", "recall"]), default=None,
           help="openhands/claude-code, --judge rules: the precision / recall trade-off of the rules judge. precise: "
                "only the cues measured most precise (fewest false alarms); balanced: every cue; recall: also "
                "partial restatements. [default: CG_JUDGE_PRECISION, else precise; measured in docs/REAL_LOGS.md]"),
    option("--judge", type=click.Choice(["rules", "model"]), default="rules",
           help="openhands/claude-code: who decides which user texts are standing prohibitions and whether "
                "each summary carries them. rules: offline, built in. model: an LLM, one request per compaction "
                "(CG_JUDGE_BACKEND=anthropic|openai|claude-cli, CG_JUDGE_MODEL, CG_JUDGE_URL, CG_JUDGE_API_KEY; "
                "answers cached under CG_JUDGE_CACHE_DIR, so a re-run makes no call; README 'Use an LLM judge')."),
    option("--metrics-file", type=str, default=None,
           help="openhands/claude-code: write Prometheus metrics of the run here (text format, for node_exporter's "
                "textfile collector; rewritten atomically after every poll): events by type, and the judge's "
                "compactions, requests, cache hits, tokens, cost, texts in languages it cannot read."),
    option("--judge-fallback", type=click.Choice(["none", "rules"]), default="none",
           help="--judge model: when the model cannot be reached (or only answers invalidly), judge the whole "
                "run with the rules judge instead of failing with exit code 1; announced on stderr, and every "
                "event names its judge (x_judge, x_model)."),
    option("--spool", is_flag=True, default=False,
           help="Send what the Claude Code hook holds to the input topics (CG_BROKER): the rest of every "
                "followed transcript, then its spool under CG_HOOK_DIR; nothing twice (docs/HOOK.md)."),
)
def ingest(
    paths: tuple[str, ...],
    out: str | None,
    window: int,
    low_water: int,
    durable_capacity: int,
    fanout: int,
    seed: int,
    prohibition_survival: tuple[float, float, float] | None,
    instruction_survival: tuple[float, float, float] | None,
    referent_survival: tuple[float, float, float] | None,
    recompact_rate: float,
    stable_recompaction: bool,
    to_kafka: bool,
    progress: bool | None,
    follow: bool,
    idle_timeout: float | None,
    poll_interval: float,
    match_threshold: float,
    alert_uncertain: bool,
    judge: str,
    judge_fallback: str,
    metrics_file: str | None,
    judge_precision: str | None,
    spool: bool,
) -> int:
    """Turn agent runs or compaction logs into checkpoint and artifact events (JSONL or Kafka).

    \b
    ingest [PATH...]               trajectories + compaction simulation
    ingest openhands DIR...        OpenHands conversation dirs (events/*.json)
    ingest claude-code FILE...     Claude Code transcripts (<sessionId>.jsonl)
    ingest --spool                 what the Claude Code hook spooled -> the input topics

    PATH... are trajectory files or directories (searched for *.json: mini-swe-agent
    *.traj.json and tau-bench arrays); default: the traces shipped with the project.
    The simulation options (--window ... --stable-recompaction) apply to this form.

    openhands DIR... takes conversation directories or a persistence directory
    holding them; claude-code FILE... takes transcripts or project directories
    holding *.jsonl. Every action/observation/message is admitted (live and
    durable), forgotten items are evicted from live, each compaction summary is a
    checkpoint (earlier summaries it folds in are its children) under a synthetic
    root carrying the system prompt / rule-file prohibitions; referents are the
    artifacts the summary text names; which user texts are standing prohibitions
    and whether each summary carries them is decided by the judge: --judge rules
    (offline; --match-threshold) or --judge model (an LLM, one request per
    compaction, CG_JUDGE_* settings, answers cached; --judge-fallback rules when it
    cannot be reached). With --follow the inputs are
    tailed (every --poll-interval s) until Ctrl-C, SIGTERM or --idle-timeout; a
    deleted transcript or conversation is a durable eviction. A literal path named
    like a format is written ./openhands.

    Same input + options => byte-identical output.
    """
    started = time.monotonic()
    if spool:
        if paths or out or follow:
            fail("--spool takes no PATH, --out or --follow: it sends the hook's spool to Kafka")
        return _ingest_spool(started)
    if to_kafka and out:
        fail("give either --out or --to-kafka, not both")
    if out:
        check_output_file(out)
    inputs = paths[1:] if paths and paths[0] in LOG_FORMATS else (paths or (str(DEFAULT_TRACES),))
    for flag, target in (("--out", out), ("--metrics-file", metrics_file)):
        if target:
            _refuse_overwrite(flag, target, inputs)
    if paths and paths[0] in LOG_FORMATS:
        return _ingest_logs(
            paths[0], paths[1:], out=out, to_kafka=to_kafka, follow=follow, idle_timeout=idle_timeout,
            poll_interval=poll_interval, match_threshold=match_threshold,
            alert_uncertain=alert_uncertain, judge=judge, judge_fallback=judge_fallback, metrics_file=metrics_file,
            judge_precision=judge_precision or settings.judge_precision, started=started,
        )
    if judge != "rules" or judge_fallback != "none" or metrics_file or judge_precision:
        fail("--judge, --judge-precision, --judge-fallback and --metrics-file work with the log forms only: "
             "ingest openhands DIR... / ingest claude-code FILE...")
    if follow or idle_timeout is not None:
        fail("--follow and --idle-timeout work with the log forms only: "
             "ingest openhands DIR... / ingest claude-code FILE...")
    try:
        params = SimulationParams(
            window=window,
            low_water=low_water,
            durable_capacity=durable_capacity,
            fanout=fanout,
            seed=seed,
            prohibition_survival=prohibition_survival or _D.prohibition_survival,
            instruction_survival=instruction_survival or _D.instruction_survival,
            referent_survival=referent_survival or _D.referent_survival,
            recompact_rate=recompact_rate,
            recompact_changes_referents=not stable_recompaction,
        )
    except ValueError as exc:
        fail(str(exc))
    if not paths:
        if not DEFAULT_TRACES.is_dir():
            fail(f"no PATH given and the shipped traces are not at {DEFAULT_TRACES}; "
                 "pass trajectory files or directories")
        paths = (str(DEFAULT_TRACES),)
    if not os.path.lexists(paths[0]) and (close := difflib.get_close_matches(paths[0].lower(), LOG_FORMATS, 1, 0.6)):
        fail(f"no form or path {paths[0]!r}: did you mean `ingest {close[0]} ...`? "
             f"(the forms: {', '.join(LOG_FORMATS)}; anything else is a trajectory file or directory)")
    for path in paths:
        check_input_file(path, what="trajectory files or directories (mini-swe-agent *.traj.json, tau-bench "
                                    "result arrays)", dir_ok=True)
        _refuse_wrong_form(path, "trajectories")

    loaded = load_trajectories(paths)
    if not loaded.trajectories:  # nothing to run: one line, a usage error (docs/ERRORS.md)
        other = _other_form("trajectories", paths)  # a directory of logs: name their form
        if other is not None:
            fail(other)
        if len(loaded.errors) == 1:
            fail(f"cannot ingest {loaded.errors[0]}")
        more = f": {loaded.errors[0]} (and {len(loaded.errors) - 1} more)" if loaded.errors else ""
        fail(f"no trajectories read from {', '.join(paths)}{more}; {_GIVE['trajectories']}")
    for err in loaded.errors:
        print(f"checkpoint-guard: ingest: {err}", file=sys.stderr)

    show = sys.stderr.isatty() if progress is None else progress
    counts: Counter[str] = Counter()
    events = _events(loaded.trajectories, params, counts, show)
    if to_kafka:
        try:
            sent = asyncio.run(_produce(events))
        except Exception as exc:  # noqa: BLE001 - one clear line instead of a traceback
            fail(kafka_error(settings, exc, "cannot produce to Kafka"), code=1)
        where = f"{sent} messages to {settings.compaction_topic}/{settings.artifact_topic}"
    else:
        where = out or "stdout"
        sink_cm = open(out, "wb") if out else nullcontext(sys.stdout.buffer)
        try:
            with sink_cm as sink:
                _write(events, sink)
        except BrokenPipeError:  # `ingest | head`: the reader is gone, which is fine
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            where = "stdout (closed early by the reader)"
        except OSError as exc:
            fail(f"cannot write {out or 'stdout'}: {exc.strerror or exc}", code=1)

    print(_summary(counts, len(loaded.errors), where, time.monotonic() - started), file=sys.stderr)
    return 1 if loaded.errors else 0


def _refuse_overwrite(flag: str, target: str, inputs: tuple[str, ...]) -> None:
    """Fail (exit 2) when ``target`` is one of the ``inputs`` or lies in an input directory:
    writing it would destroy the input, or feed the output back in at the next run."""
    where = os.path.realpath(target)
    for path in inputs:
        if not os.path.exists(path):
            continue
        real = os.path.realpath(path)
        same = os.path.exists(target) and os.path.samefile(path, target)  # a hard link too, as replay's check
        if same or (os.path.isdir(real) and where.startswith(real.rstrip(os.sep) + os.sep)):
            inside = "is" if same else "is inside"
            fail(f"{flag} {target} {inside} the input {path}; it would overwrite or be read as input; "
                 "write it outside the inputs")


#: What each form of ``ingest`` reads, as its wrong-form line names it ("..., not <this>").
_EXPECTED = {
    "trajectories": "a trajectory",
    "claude-code": "a Claude Code transcript",
    "openhands": "an OpenHands conversation directory",
}
#: The fix when nothing more specific applies: what to give.
_GIVE = {
    "trajectories": "give trajectory files or directories (mini-swe-agent *.traj.json, tau-bench result arrays)",
    "claude-code": "give Claude Code transcripts (<sessionId>.jsonl, under ~/.claude/projects/) or project "
                   "directories holding them",
    "openhands": "give OpenHands conversation directories (each holding events/) or a directory holding them",
}


def _refuse_wrong_form(path: str, form: str) -> None:
    """Fail (exit 2) with one line — what the file ``path`` is, what ``form`` expected, the fix —
    when it is plainly not an input of that form of ``ingest``: ``trajectories`` (``ingest PATH``),
    ``claude-code`` or ``openhands``. Its first non-blank line decides
    (:func:`stream.offline.replay.input_form`, replay's own check); a directory is left to the reader."""
    problem = _wrong_form(path, form)
    if problem is not None:
        fail(f"cannot ingest {problem}")


def _wrong_form(path: str, form: str) -> str | None:
    """``"<path>: what it is, not <form's input>; the fix"`` for :func:`_refuse_wrong_form`, or None."""
    from stream.offline.replay import first_line, input_form

    if os.path.isdir(path):
        return None
    try:
        with open(path, "rb") as fh:
            kind, detail = input_form(first_line(fh, limit=1 << 20, growing=form == "claude-code"))
    except OSError:
        return None
    whats = {
        "events": "it is already input events (what ingest writes)",
        "transcript": "it is a Claude Code transcript",
        "output": f"it is checkpoint-guard's output ({detail})",
        "text": "it is Markdown text" if path.lower().endswith((".md", ".markdown")) else
                "it is plain text (its first line is not JSON)",
        "wide": f"it is {detail} text, not UTF-8",
        "binary": "it is binary, not JSON text",
        "gzip": "it is gzip-compressed",
        "document": "it is one JSON document over many lines (an agent trajectory?)",
        "empty": "it is empty",
        "bad-json": "it is a file", "json": "it is a file", "partial": "it is a file",
    }
    what = whats[kind]
    if form == "trajectories":
        refused: tuple[str, ...] = ("events", "transcript", "output")
    elif form == "claude-code":  # an empty or not yet parseable first line may be a transcript being written
        refused = ("events", "output", "text", "wide", "binary", "gzip", "document")
    else:  # openhands reads directories only
        refused = tuple(whats)
    if kind not in refused:
        return None
    fix = {
        "events": f"use checkpoint-guard replay {path}",
        "transcript": f"use checkpoint-guard ingest claude-code {path}",
        "gzip": f"decompress it first (gunzip -k {path})",
        "wide": f"convert it to UTF-8 first (iconv -f {detail} -t UTF-8 {path} > {path}.utf8)",
        "document": f"for a trajectory use checkpoint-guard ingest {path}",
    }.get(kind, "")
    parent = os.path.dirname(os.path.abspath(path))
    if form == "openhands" and os.path.basename(parent) == "events" and kind in ("json", "bad-json", "document"):
        conversation = os.path.dirname(os.path.dirname(os.path.normpath(path))) or "."
        what, fix = "it is one OpenHands event file", f"give its conversation directory {conversation}"
    fix = fix or _GIVE[form]
    return f"{path}: {what}, not {_EXPECTED[form]}; {fix}"


def _events(
    trajectories: list[Trajectory], params: SimulationParams, counts: Counter[str], show: bool
) -> Iterator[dict[str, Any]]:
    """Events of every trajectory in order, counting them, with an optional progress bar."""
    bar: Any = _progress_bar() if show else None
    with bar if bar is not None else nullcontext():
        task = bar.add_task("ingest", total=len(trajectories)) if bar is not None else None
        for traj in trajectories:
            if bar is not None:
                bar.update(task, description=traj.context_id)
            evs = simulate(traj, params)
            counts.update(event_counts(evs))
            yield from evs
            if bar is not None:
                bar.advance(task)


def _progress_bar() -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description:<40}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def _write(events: Iterable[dict[str, Any]], sink: BinaryIO) -> None:
    for event in events:
        sink.write(encode_event(event).encode("utf-8") + b"\n")


async def _produce(events: Iterable[dict[str, Any]]) -> int:
    """Send every event to its input topic (key = context id) and await every ack."""
    from stream.kafka_clients import producer, require_topics, start_client

    topic = {"checkpoint": settings.compaction_topic, "artifact": settings.artifact_topic}
    await require_topics(settings, settings.input_topics)  # at once, not after the producer's 40 s metadata wait
    client = producer(settings, enable_idempotence=True, linger_ms=5)
    try:
        await start_client(settings, client)
        pending = [
            await client.send(topic[e["type"]], value=encode_event(e).encode("utf-8"),
                              key=e["context_id"].encode("utf-8"))
            for e in events
        ]
        await asyncio.gather(*pending)
    finally:
        await client.stop()
    return len(pending)


def _by_kind(counts: Counter[str]) -> tuple[str, str]:
    """("admitted live N, ...", "leaf N, section N, root N") of an event count."""
    ops = ("admitted live", "evicted live", "admitted durable", "evicted durable")
    artifacts = ", ".join(f"{k} {counts[k]}" for k in ops)
    levels = ", ".join(f"{k} {counts[k]}" for k in ("leaf", "section", "root"))
    return artifacts, levels


def _summary(counts: Counter[str], failed: int, where: str, seconds: float) -> str:
    artifacts, levels = _by_kind(counts)
    return (
        f"ingest: {counts['contexts']} contexts, {counts['artifact'] + counts['checkpoint']} events "
        f"(artifact {counts['artifact']}: {artifacts}; checkpoint {counts['checkpoint']}: {levels}, "
        f"{counts['re-emitted']} of them re-emissions) "
        f"-> {where}; {failed} file(s) failed; {seconds:.1f}s"
    )


def _ingest_spool(started: float) -> int:
    """``ingest --spool``: the Claude Code hook's spool to the input topics (:mod:`stream.hook.drain`)."""
    from stream.hook.drain import drain_all

    report = drain_all(settings)
    for note in report.notes:
        print(f"checkpoint-guard: ingest: {note}", file=sys.stderr)
    if report.error:
        fail(f"{report.error}; {report.left} event(s) stay in the spool under {settings.hook_dir}", code=1)
    print(f"ingest --spool: {report.sessions} session(s), {report.read} event(s) read from their transcripts, "
          f"{report.sent} sent to {settings.compaction_topic}/{settings.artifact_topic}, {report.left} left in "
          f"the spool; {time.monotonic() - started:.1f}s", file=sys.stderr)
    return 1 if report.left else 0


# --------------------------------------------------------------------------- compaction logs

#: The log forms: first positional argument -> (discover inputs, reader of one input).
LOG_FORMATS = ("openhands", "claude-code")


def _log_adapter(fmt: str) -> tuple[Any, Any]:
    if fmt == "openhands":
        from stream.adapters.compaction.openhands import OpenHandsConversation, discover
        return discover, OpenHandsConversation
    from stream.adapters.compaction.claude_code import ClaudeCodeTranscript, discover
    return discover, ClaudeCodeTranscript


class LogInputs:
    """The inputs of one ``ingest openhands|claude-code`` run and their readers.

    :meth:`poll` returns the new events of every input, inputs in sorted path order;
    in follow mode (``final=False``) it first looks for inputs that appeared since
    (a new conversation in a persistence directory, a new transcript in a project
    directory). Inputs of the same session (conversation) share one context: the later
    ones continue it. Problems are printed on stderr once each, as they are found.
    """

    def __init__(self, fmt: str, paths: tuple[str, ...], judge: Judge) -> None:
        self.fmt = fmt
        self.paths = list(paths)
        self.judge = judge
        self._discover, self._reader = _log_adapter(fmt)
        self.readers: dict[str, Any] = {}
        self.input_errors: list[str] = []
        self._printed: dict[str, tuple[int, int]] = {}
        self._contexts: dict[str, Any] = {}  # session/conversation id -> its context, shared by the readers
        self._skipped: set[str] = set()  # files of a directory that are not of this form

    def scan(self, *, report: bool, echo: bool = True) -> None:
        """Look for the inputs; ``report``: keep the problems found in :attr:`input_errors`
        (and, with ``echo``, print them)."""
        found, errors = self._discover(self.paths)
        if report:
            for e in errors:
                self.input_errors.append(e)
                if echo:
                    print(f"checkpoint-guard: ingest: {e}", file=sys.stderr)
        for f in found:
            key = f.as_posix()
            if key in self.readers or key in self._skipped:
                continue
            # a file a directory holds: refused like a file named alone (events, output...), skipped, counted
            wrong = _wrong_form(key, self.fmt) if self.fmt == "claude-code" and key not in self.paths else None
            if wrong is not None:
                self._skipped.add(key)
                if report:
                    self.input_errors.append(wrong)
                    if echo:
                        print(f"checkpoint-guard: ingest: {wrong}", file=sys.stderr)
                continue
            self.readers[key] = self._reader(f, self.judge, self._contexts)

    def restart(self, judge: Judge) -> LogInputs:
        """The same inputs read again from the start with ``judge``; problems already printed are not printed again."""
        again = LogInputs(self.fmt, tuple(self.paths), judge)
        again.input_errors = list(self.input_errors)
        again._printed = dict(self._printed)
        again._skipped = set(self._skipped)
        again.scan(report=False)
        return again

    def poll(self, *, final: bool) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = []
        for key in sorted(self.readers):
            reader = self.readers[key]
            events.extend(reader.poll(final=final))
            self._report(key, reader.stats)
        return events

    def _report(self, key: str, stats: ReadStats) -> None:
        errors, warnings = self._printed.get(key, (0, 0))
        for line in stats.errors[errors:]:
            print(f"checkpoint-guard: ingest: {line}", file=sys.stderr)
        for line in stats.warnings[warnings:]:
            print(f"checkpoint-guard: ingest: warning: {line}", file=sys.stderr)
        self._printed[key] = (len(stats.errors), len(stats.warnings))

    @property
    def stats(self) -> list[ReadStats]:
        return [r.stats for r in self.readers.values()]


class _Tally:
    """Running counts of emitted events for the summary line (follow mode never ends a list)."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self._nodes: set[tuple[str, str]] = set()
        self._contexts: set[str] = set()
        self.on_emit: Any = None  # called after each emitted poll (--metrics-file)

    def add(self, events: Iterable[dict[str, Any]]) -> None:
        for e in events:
            self._contexts.add(e["context_id"])
            self.counts[e["type"]] += 1
            if e["type"] == "artifact":
                self.counts[f"{e['op']} {e['tier']}"] += 1
            else:
                self.counts[e["level"]] += 1
                key = (e["context_id"], e["node_id"])
                if key in self._nodes:
                    self.counts["re-emitted"] += 1
                self._nodes.add(key)
                if e.get("opaque") is True:
                    self.counts["opaque"] += 1
        self.counts["contexts"] = len(self._contexts)
        if self.on_emit is not None:
            self.on_emit()


def _ingest_logs(
    fmt: str, paths: tuple[str, ...], *, out: str | None, to_kafka: bool, follow: bool,
    idle_timeout: float | None, poll_interval: float, match_threshold: float, alert_uncertain: bool,
    judge: str, judge_fallback: str, metrics_file: str | None, judge_precision: str, started: float,
) -> int:
    """``ingest openhands|claude-code``: read (or follow) the logs, write JSONL or produce to Kafka."""
    if not paths:
        fail(f"ingest {fmt} needs at least one {'DIR' if fmt == 'openhands' else 'FILE'}")
    if poll_interval <= 0:
        fail("--poll-interval must be > 0 seconds")
    if idle_timeout is not None and not follow:
        fail("--idle-timeout needs --follow")
    if idle_timeout is not None and idle_timeout <= 0:
        fail("--idle-timeout must be > 0 seconds")
    if judge_fallback != "none" and judge != "model":
        fail("--judge-fallback needs --judge model")
    if metrics_file:
        check_output_file(metrics_file, option="--metrics-file")
    for path in paths:
        check_input_file(path, what="OpenHands conversation directories" if fmt == "openhands" else
                         "Claude Code transcripts (*.jsonl) or project directories", dir_ok=True)
        _refuse_wrong_form(path, fmt)
    try:
        matcher = ProhibitionMatcher(threshold=match_threshold, alert_uncertain=alert_uncertain)
    except ValueError as exc:
        fail(str(exc))
    tally = _Tally()
    judges = _Judges(RulesJudge(matcher, judge_precision), judge, judge_fallback, tally)
    inputs = LogInputs(fmt, paths, judges.chosen)
    if metrics_file:
        tally.on_emit = lambda: _write_metrics(metrics_file, fmt, tally, judges, inputs)
    inputs.scan(report=True, echo=False)
    missing = [p for p in paths if not os.path.exists(p)]
    if not inputs.readers and (not follow or missing):  # nothing to read: one line, a usage error
        fail(_nothing_to_read(fmt, paths, inputs.input_errors))
    for e in inputs.input_errors:
        print(f"checkpoint-guard: ingest: {e}", file=sys.stderr)
    where = f"{settings.compaction_topic}/{settings.artifact_topic}" if to_kafka else (out or "stdout")
    try:
        sink_cm = open(out, "wb") if out else nullcontext(sys.stdout.buffer)
    except OSError as exc:
        fail(f"cannot write {out}: {exc.strerror or exc}", code=1)
    interrupted = False
    try:
        with sink_cm as sink:
            while True:
                try:
                    interrupted = asyncio.run(
                        _run_logs(inputs, tally, sink=None if to_kafka else sink, follow=follow,
                                  idle_timeout=idle_timeout, poll_interval=poll_interval)
                    )
                    break
                except RestartWithFallback as exc:  # nothing emitted yet: the whole run with the rules judge
                    judges.fall_back(exc.reason, whole_run=True)
                    inputs = inputs.restart(judges.rules)
    except JudgeUnavailable as exc:
        fail(f"--judge model: {exc} (check CG_JUDGE_*, retry later, or pass --judge-fallback rules)", code=1)
    except BrokenPipeError:  # `ingest ... | head`: the reader is gone, which is fine
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        where = "stdout (closed early by the reader)"
    except OSError as exc:
        fail(f"cannot write {out or 'stdout'}: {exc.strerror or exc}", code=1)
    except Exception as exc:  # noqa: BLE001 - Kafka trouble: one clear line, not a traceback
        if not to_kafka:
            raise
        fail(kafka_error(settings, exc, "cannot produce to Kafka"), code=1)
    finally:
        judges.close()
    failed = len(inputs.input_errors) + sum(s.failed for s in inputs.stats)
    bad = sum(len(s.errors) for s in inputs.stats)
    if metrics_file:
        _write_metrics(metrics_file, fmt, tally, judges, inputs)
    for line in judges.warnings():
        print(f"checkpoint-guard: ingest: warning: {line}", file=sys.stderr)
    print(_log_summary(fmt, inputs.stats, tally.counts, failed, where, time.monotonic() - started, interrupted,
                       judges.summary() + _unread_languages(inputs)), file=sys.stderr)
    return 1 if failed or bad else 0


def _other_form(fmt: str, paths: tuple[str, ...]) -> str | None:
    """The line for the first directory of ``paths`` that holds inputs of another form than
    ``fmt`` (``trajectories``, ``claude-code``, ``openhands``) and none of its own, or None."""
    from stream.adapters.compaction.openhands import events_dir_of

    for path in paths:
        p = Path(path)
        try:
            subs = [c for c in p.iterdir() if c.is_dir()] if p.is_dir() else None
            has_jsonl = subs is not None and any(p.glob("*.jsonl"))
        except OSError:
            subs = None
        if subs is None:
            continue
        if fmt != "openhands" and (events_dir_of(p) is not None or any(events_dir_of(c) is not None for c in subs)):
            return (f"cannot ingest {path}: it holds OpenHands conversations, not {_EXPECTED[fmt]}; "
                    f"use checkpoint-guard ingest openhands {path}")
        if fmt != "claude-code" and has_jsonl:
            return (f"cannot ingest {path}: it holds *.jsonl files (Claude Code transcripts?), not "
                    f"{_EXPECTED[fmt]}; use checkpoint-guard ingest claude-code {path}")
    return None


def _nothing_to_read(fmt: str, paths: tuple[str, ...], errors: list[str]) -> str:
    """The one line of an ``ingest openhands|claude-code`` run that found no input at all: the
    first problem (a directory of the other form named as such), how many more, what to give."""
    other = _other_form(fmt, paths)
    if other is not None:
        return other
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    first = errors[0] if errors else f"nothing to read in {', '.join(paths)}"
    return f"cannot ingest {first}{more}; {_GIVE[fmt]}"


def _skipped_languages(inputs: LogInputs) -> Counter[str]:
    """User-side texts of the run in a language the rules judge cannot read, by language (counted, never ignored)."""
    skipped: Counter[str] = Counter()
    for context in inputs._contexts.values():
        judged = getattr(context, "judged", None)
        if judged is not None:
            skipped.update(judged.skipped_languages)
    return skipped


def _unread_languages(inputs: LogInputs) -> str:
    skipped = _skipped_languages(inputs)
    if not skipped:
        return ""
    langs = ", ".join(f"{k} {v}" for k, v in sorted(skipped.items()))
    return f", {sum(skipped.values())} text(s) in a language it cannot read ({langs}: not judged)"


def _write_metrics(path: str, fmt: str, tally: _Tally, judges: _Judges, inputs: LogInputs) -> None:
    """The run's metrics in Prometheus text format, written to ``path`` atomically (``--metrics-file``)."""
    from prometheus_client import CollectorRegistry, write_to_textfile
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    skipped = _skipped_languages(inputs)
    model = judges.model

    class Collector:
        def collect(self) -> Iterator[Any]:
            events = CounterMetricFamily("checkpoint_guard_ingest_events", "Events ingest emitted, by type.",
                                         labels=["format", "type"])
            for kind in ("artifact", "checkpoint"):
                events.add_metric([fmt, kind], tally.counts[kind])
            yield events
            texts = CounterMetricFamily("checkpoint_guard_ingest_unread_language_texts",
                                        "User-side texts in a language the rules judge cannot read, by language.",
                                        labels=["language"])
            for lang, n in sorted(skipped.items()):
                texts.add_metric([lang], n)
            yield texts
            if model is None:
                return
            t, labels = model.tally, [model.model]
            for name, doc, value in (
                ("compactions", "Compactions the model judge judged.", t.compactions),
                ("requests", "Requests the model judge sent (retries included).", t.requests),
                ("cache_hits", "Compactions answered from the judge's disk cache.", t.cached),
            ):
                family = CounterMetricFamily(f"checkpoint_guard_judge_{name}", doc, labels=["model"])
                family.add_metric(labels, value)
                yield family
            tokens = CounterMetricFamily("checkpoint_guard_judge_tokens", "Tokens the model judge used.",
                                         labels=["model", "direction"])
            tokens.add_metric([model.model, "input"], t.input_tokens)
            tokens.add_metric([model.model, "output"], t.output_tokens)
            yield tokens
            if t.cost_known:
                cost = CounterMetricFamily("checkpoint_guard_judge_cost_usd", "What the model judge cost, USD.",
                                           labels=["model"])
                cost.add_metric(labels, t.cost_usd)
                yield cost
            fallback = GaugeMetricFamily("checkpoint_guard_judge_fallback",
                                         "1 when the run fell back to the rules judge (--judge-fallback rules).",
                                         labels=["model"])
            fallback.add_metric(labels, 1 if judges.fallback_reason else 0)
            yield fallback

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())
    try:
        write_to_textfile(path, registry)
    except OSError as exc:
        fail(f"cannot write --metrics-file {path}: {exc.strerror or exc}", code=1)


class _Judges:
    """The judge of one ``ingest`` run: ``rules``, or ``model`` (with the ``--judge-fallback`` to rules).

    A model judge that cannot be built (no key, no model) fails the run with exit code 2,
    or, with ``--judge-fallback rules``, leaves the whole run to the rules judge; the
    switch is announced once on stderr (:meth:`fall_back`) and named in the summary line.
    """

    def __init__(self, rules: RulesJudge, judge: str, fallback: str, tally: _Tally) -> None:
        self.rules = rules
        self.model: ModelJudge | None = None
        self.fallback_reason: str | None = None
        self.whole_run = False
        self.chosen: Judge = rules
        if judge != "model":
            return
        try:
            self.model = build_model_judge(settings)
        except JudgeConfigError as exc:
            if fallback != "rules":
                fail(f"--judge model: {exc}")
            self.fall_back(str(exc), whole_run=True)
            return
        self.chosen = self.model if fallback != "rules" else FallbackJudge(
            self.model, rules, can_restart=lambda: not tally.counts,
            announce=lambda reason: self.fall_back(reason, whole_run=False))

    def fall_back(self, reason: str, *, whole_run: bool) -> None:
        self.fallback_reason, self.whole_run = reason, whole_run
        rest = "the whole run is judged by the rules judge" if whole_run else (
            "the events from here on are judged by the rules judge (those already written by the model)")
        print(f"checkpoint-guard: ingest: warning: the model judge is unavailable ({reason}); {rest} "
              f"(--judge-fallback rules; x_judge names the judge of each event)", file=sys.stderr, flush=True)

    def warnings(self) -> list[str]:
        return list(self.model.tally.warnings) if self.model else []

    def summary(self) -> str:
        rules = f"judge rules (precision {self.rules.precision})"
        if self.model is None or (self.fallback_reason and self.whole_run):
            return rules + (" (fallback: the model judge was unavailable)" if self.fallback_reason else "")
        line = self.model.tally.line(self.model.model)
        return line + (f"; then {rules} (fallback: the model became unavailable)" if self.fallback_reason else "")

    def close(self) -> None:
        if self.model is not None:
            self.model.close()


async def _run_logs(
    inputs: LogInputs, tally: _Tally, *, sink: BinaryIO | None, follow: bool,
    idle_timeout: float | None, poll_interval: float,
) -> bool:
    """Poll the inputs once (after the fact) or until stopped (``follow``); returns True if stopped by a signal.

    Each poll's events are written (and flushed) or produced and acknowledged before
    the next poll, so a stop never leaves a poll half sent.
    """
    import signal

    client = None
    if sink is None:
        from stream.kafka_clients import producer, require_topics, start_client

        await require_topics(settings, settings.input_topics)
        client = producer(settings, enable_idempotence=True, linger_ms=5)
        await start_client(settings, client)
    topic = {"checkpoint": settings.compaction_topic, "artifact": settings.artifact_topic}

    async def emit(events: list[dict[str, Any]]) -> None:
        if not events:
            return
        tally.add(events)
        if client is None:
            assert sink is not None
            sink.write(b"".join(encode_event(e).encode("utf-8") + b"\n" for e in events))
            sink.flush()
            return
        pending = [
            await client.send(topic[e["type"]], value=encode_event(e).encode("utf-8"),
                              key=e["context_id"].encode("utf-8"))
            for e in events
        ]
        await asyncio.gather(*pending)

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    installed = []
    if follow:
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
                installed.append(sig)
            except (NotImplementedError, RuntimeError):  # not the main thread / platform
                pass
    try:
        if not follow:
            await emit(inputs.poll(final=True))
            return False
        last_new = time.monotonic()
        records = -1
        while not stop.is_set():
            inputs.scan(report=False)
            await emit(inputs.poll(final=False))
            now_records = sum(s.records for s in inputs.stats)
            if now_records != records:
                records, last_new = now_records, time.monotonic()
            elif idle_timeout is not None and time.monotonic() - last_new >= idle_timeout:
                break
            try:
                await asyncio.wait_for(stop.wait(), poll_interval)
            except TimeoutError:
                pass
        return stop.is_set()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
        if client is not None:
            await client.stop()


def _log_summary(
    fmt: str, stats: list[ReadStats], counts: Counter[str], failed: int, where: str, seconds: float, interrupted: bool,
    judge: str = "judge rules",
) -> str:
    records = sum(s.records for s in stats)
    unknown: Counter[str] = Counter()
    ignored = 0
    for s in stats:
        unknown.update(s.unknown)
        ignored += sum(s.ignored.values())
    unknown_text = ", ".join(f"{k}={unknown[k]}" for k in sorted(unknown)) or "none"
    bad = sum(len(s.errors) for s in stats)
    links = sum(s.broken_links for s in stats)
    repeated = sum(s.repeated for s in stats)
    naive = sum(s.naive_times for s in stats)
    artifacts, levels = _by_kind(counts)
    return (
        f"ingest {fmt}: {len(stats)} input(s), {counts['contexts']} contexts, {records} records read "
        f"({sum(unknown.values())} of unknown type skipped: {unknown_text}; {ignored} ignored; {bad} bad; "
        f"{links} broken links; {repeated} repeated (already read) skipped"
        + (f"; {naive} timestamps without a zone read as UTC" if naive else "")
        + f"), {counts['artifact'] + counts['checkpoint']} events "
        f"(artifact {counts['artifact']}: {artifacts}; checkpoint {counts['checkpoint']}: {levels}, "
        f"{counts['opaque']} opaque, {counts['re-emitted']} re-emissions) -> {where}; {judge}; "
        f"{failed} input(s) failed; {seconds:.1f}s" + ("; stopped by signal" if interrupted else "")
    )
