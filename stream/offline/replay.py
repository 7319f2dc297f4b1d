"""Offline replay: JSONL input events -> the engine in process -> alerts.

The forensics tool that needs no broker. It drives the very same
:class:`~stream.domain.engine.Engine` as the worker, over in-memory dicts, so its
output is byte-identical to what the worker publishes (``emitted_at`` aside).

Input format: files read one after another in the order given; lines split on ``\\n``
only, each decoded as strict UTF-8 (a UTF-8 BOM at a file's start is stripped); blank
lines skipped; a bad line is a dead letter ``(line number, reason)`` and is skipped, and
so is an event the engine rejects at apply time (``ledger full``, DESIGN.md §4), with
its own line number (a drained event's is the line it was read from).
Waiting events (a seq gap not yet closed) are *not* flushed at the end: they are
reported in :attr:`ReplayResult.waiting`. Memory follows the state, not the output: the
output streams (the result keeps counts) and no line is held past the size limit.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from stream.domain.engine import MAX_LEDGER, MAX_OUTPUT_BYTES, Engine, Output
from stream.domain.events import OFFLINE, Event
from stream.domain.state import DictState
from stream.errors import InvalidEvent
from stream.lines import LineSplitter, Oversize
from stream.wire import MAX_MESSAGE_BYTES, decode_event


@dataclass
class ReplayResult:
    """Everything one replay counted (and, with ``keep``, produced).

    ``n_alerts`` / ``n_statuses`` / ``rules``: alert and node-status records written,
    alerts by rule. With ``keep`` (:func:`replay_lines`, tests) also the records, as the
    JSON-ready dicts ``replay`` writes: ``alerts`` in emission order, ``statuses``,
    ``records`` (both, in output order, ``replay --status``), ``verdicts`` (one per
    applied checkpoint); without it they stay empty, so memory follows the state only.
    ``dead_letters``: ``(line number, reason)`` for bad lines (1-based, per input).
    ``waiting``: context -> seqs still waiting at end of input.
    """

    alerts: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    dead_letters: list[tuple[int, str]] = field(default_factory=list)
    waiting: dict[str, list[int]] = field(default_factory=dict)
    events: int = 0
    applied: int = 0
    duplicates: int = 0
    dropped: int = 0
    n_alerts: int = 0
    n_statuses: int = 0
    rules: Counter = field(default_factory=Counter)

    def alerts_by_rule(self) -> Counter:
        return self.rules

    def summary(self) -> str:
        """One line: events, dead letters, alerts by rule, still waiting."""
        rules = ", ".join(f"{r}={n}" for r, n in sorted(self.rules.items())) or "none"
        waiting = sum(len(v) for v in self.waiting.values())
        return (
            f"replay: {self.events} events ({self.applied} applied, {self.duplicates} duplicates, "
            f"{self.dropped} dropped), {len(self.dead_letters)} dead letters, "
            f"{self.n_alerts} alerts ({rules}), {waiting} waiting"
        )


class Replayer:
    """Incremental replay: feed lines, get each line's output (used by the CLI and by
    tests); ``keep`` also collects every record in :attr:`result`."""

    def __init__(
        self, *, seq_gap_limit: int = 1000, since: bool = False, max_bytes: int = MAX_MESSAGE_BYTES,
        max_output_bytes: int = MAX_OUTPUT_BYTES, max_ledger: int = MAX_LEDGER, keep: bool = False,
    ):
        self.engine = Engine(seq_gap_limit, start_at_first_seq=since, max_output_bytes=max_output_bytes,
                             max_ledger=max_ledger)
        self.state = DictState()
        self.result = ReplayResult()
        self.max_bytes = max_bytes
        self.keep = keep
        #: (context, seq) -> line number of each waiting event (its dead letter, if rejected)
        self._waiting_lines: dict[tuple[str, int | None], int] = {}

    def feed(self, line: bytes, lineno: int) -> list[dict[str, Any]] | None:
        """Decode and apply one line; returns its output records (alerts and statuses in
        output order, JSON-ready dicts), or None if it was bad/blank."""
        out = self.apply(line, lineno)
        return None if out is None else [x.to_record() for x in out.records]

    def apply(self, line: bytes, lineno: int) -> Output | None:
        """:meth:`feed`, returning the engine's :class:`Output` (its ``records`` are
        values: :func:`stream.wire.encode` writes them without a dict per record)."""
        if not line.strip(b" \t\r"):
            return None
        try:
            size = getattr(line, "size", len(line))  # an :class:`Oversize` line was not read whole
            if size > self.max_bytes:
                raise InvalidEvent(f"line is {size} bytes, over the {self.max_bytes}-byte limit")
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidEvent(f"not UTF-8: {exc.reason} at byte {exc.start}") from None
            event = decode_event(line, max_bytes=self.max_bytes)
        except InvalidEvent as exc:
            self.result.dead_letters.append((lineno, str(exc)))
            return None
        r = self.result
        r.events += 1
        out = self.engine.process(self.state, event, OFFLINE)
        r.n_alerts += len(out.alerts)
        r.n_statuses += len(out.statuses)
        for a in out.alerts:
            r.rules[a.rule] += 1
        if self.keep:
            records = [x.to_record() for x in out.records]
            r.records.extend(records)
            r.alerts.extend(x for x in records if x["type"] == "alert")
            r.statuses.extend(x for x in records if x["type"] == "status")
            r.verdicts.extend(v.to_record() for v in out.verdicts)
        r.applied += len(out.applied)
        r.duplicates += out.duplicates
        r.dropped += out.dropped
        if out.buffered or out.rejected or self._waiting_lines:
            self._dead_letter_rejected(event, lineno, out)
        return out

    def _dead_letter_rejected(self, event: Event, lineno: int, out: Output) -> None:
        """Events rejected at apply time (``ledger full``) are dead letters of their own line."""
        lines = self._waiting_lines
        if out.buffered:
            lines[(event.context_id, event.seq)] = lineno
        for ev, _ in out.applied:
            if ev.seq is not None:
                lines.pop((ev.context_id, ev.seq), None)
        for rejected in out.rejected:
            ev = rejected.event
            where = lineno if ev is event else lines.pop((ev.context_id, ev.seq), lineno)
            self.result.dead_letters.append((where, rejected.reason))

    def finish(self) -> ReplayResult:
        self.result.waiting = {
            ctx: list(st["waiting"]) for (ctx,), st in sorted(self.state.seq.items()) if st["waiting"]
        }
        return self.result


#: Keys of a Claude Code transcript record (never of an input event).
TRANSCRIPT_KEYS = frozenset({"sessionId", "parentUuid", "uuid", "leafUuid", "isSidechain"})


def first_line(stream: BinaryIO, *, limit: int = MAX_MESSAGE_BYTES, growing: bool = False) -> bytes | None:
    """The first non-blank line of ``stream`` (BOM stripped, at most ``limit`` bytes), or
    None when it has none. A line seen only in part is an :class:`~stream.lines.Oversize`:
    one over ``limit``, or with ``growing`` (a file still being written) one the stream ends
    in without its newline."""
    split = LineSplitter(limit)
    while data := stream.read(1 << 20):
        for line in split.feed(data):
            if line.strip(b" \t\r"):
                return line
    last = split.end()
    if last is None or not last.strip(b" \t\r"):
        return None
    if growing and not isinstance(last, Oversize):
        last = Oversize(last)
        last.size = len(last)
    return last


#: ``type`` of each record checkpoint-guard writes (stream.wire) -> what to call it.
_OUTPUT_TYPES = {"alert": "alerts", "status": "node statuses", "verdict": "verdicts", "dead_letter": "dead letters"}


def input_form(first: bytes | None) -> tuple[str, str]:
    """What an input whose first non-blank line is ``first`` is: ``(kind, detail)``, kind one of
    ``empty``, ``gzip``, ``wide`` (UTF-16 or UTF-32 text; detail: which), ``binary``, ``text``
    (not JSON), ``bad-json`` (starts like JSON but does not parse: cut off or broken),
    ``document`` (the first line of one JSON document over many lines),
    ``output`` (checkpoint-guard's own output; detail: which), ``transcript`` (Claude Code),
    ``events`` (input events), ``json`` (another JSON line) or ``partial`` (a JSON line seen only
    in part, :func:`first_line`: nothing to tell from it). Shared by replay's and ingest's
    wrong-form checks (:func:`not_events`, ``stream.commands.ingest``)."""
    if first is None:
        return "empty", ""
    cut = isinstance(first, Oversize)  # only its start was seen: its end may be anything
    if first.startswith(b"\x1f\x8b"):
        return "gzip", ""
    encoding = _wide_encoding(first)
    if encoding:
        return "wide", encoding
    try:
        text = first.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (cut and exc.start >= len(first) - 3 and exc.reason == "unexpected end of data"):
            return "binary", ""
        text = first[:exc.start].decode("utf-8")  # cut inside a character
    if "\0" in text:
        return "binary", ""
    if cut and not text.strip():
        return "partial", ""  # a file being written: nothing to tell yet
    try:
        value = json.loads(text)
    except ValueError:
        if cut and text.lstrip().startswith(("{", "[")):
            return "partial", ""  # a JSON line seen in part: a dead letter, or a record, once read whole
        if text.strip().endswith(("{", "[", ",")):  # the first line of an indented JSON document
            return "document", ""
        return ("bad-json" if text.lstrip().startswith(("{", "[")) else "text"), ""
    if not isinstance(value, dict):
        return "json", ""
    output = _OUTPUT_TYPES.get(str(value.get("type")))
    if output is not None:
        return "output", output
    if value.get("type") in ("checkpoint", "artifact"):
        return "events", ""
    if TRANSCRIPT_KEYS & set(value):
        return "transcript", ""
    return "json", ""


def _wide_encoding(first: bytes) -> str | None:
    """``UTF-16`` / ``UTF-32`` when a line is text in one of them (a byte-order mark, or ASCII
    with a NUL beside every character, as Windows tools write JSON), else None."""
    if first.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if first.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = first[:64]
    if len(head) >= 4 and (head[1::2].count(0) == len(head) // 2 or head[0::2].count(0) == len(head) // 2):
        return "UTF-16"
    return None


def not_events(first: bytes | None, name: str) -> str | None:
    """Why an input whose first non-blank line is ``first`` is not JSONL input events —
    what it is and the fix, one line — or None when it may be (a bad line further on is
    a dead letter like any other). ``name`` is the path shown in the fix."""
    kind, detail = input_form(first)
    if kind == "empty":
        return ("it is empty (no events); give a JSONL file of input events, one JSON object per line "
                "(DESIGN.md §3; `checkpoint-guard schema DIR` writes their JSON Schemas)")
    ingest = f"turn it into events first: `checkpoint-guard ingest {name} | checkpoint-guard replay -`"
    if kind == "gzip":
        return f"it is gzip-compressed; decompress it first: `gunzip -c {name} | checkpoint-guard replay -`"
    if kind == "wide":
        return (f"it is {detail} text, and JSONL is UTF-8; convert it first: "
                f"`iconv -f {detail} -t UTF-8 {name} | checkpoint-guard replay -`")
    if kind == "binary":
        return "it is binary, not JSONL text; give a JSONL file of input events (one JSON object per line)"
    if kind == "document":
        return ("it is one JSON document over many lines (an agent trajectory or a result array?), not one "
                f"event per line; {ingest}")
    if kind in ("text", "bad-json"):
        return "its first line is not JSON, so it is not JSONL input events; give a JSONL file of input events"
    if kind == "output":
        return (f"this is checkpoint-guard's output ({detail}), not input events; replay reads events: "
                "`checkpoint-guard ingest TRAJECTORIES | checkpoint-guard replay -`")
    if kind == "transcript":
        return ("it is a Claude Code transcript, not input events; turn it into events first: "
                f"`checkpoint-guard ingest claude-code {name} | checkpoint-guard replay -`")
    return None


def replay_lines(
    lines: Iterable[bytes], *, seq_gap_limit: int = 1000, since: bool = False,
    max_output_bytes: int = MAX_OUTPUT_BYTES, max_ledger: int = MAX_LEDGER,
) -> ReplayResult:
    """Replay JSONL lines (bytes, without their ``\\n``) through a fresh engine, every
    output kept in the result (in memory: for tests and small inputs)."""
    rp = Replayer(seq_gap_limit=seq_gap_limit, since=since, max_output_bytes=max_output_bytes,
                  max_ledger=max_ledger, keep=True)
    for i, line in enumerate(lines, 1):
        if isinstance(line, str):
            line = line.encode("utf-8")
        rp.feed(line.rstrip(b"\n"), i)
    return rp.finish()
