"""Forensics: replay the topics into a fresh engine, verify against the alerts topic,
explain a node's history.

Months later someone asks "why was node R of context X flagged, and would we flag it
the same way today?". Everything here reads the topics with a group-less consumer
(manual partition assignment, no offset commits), so it never moves the live worker's
committed offsets nor touches its tables.

Record order: DESIGN.md §4 *Across the two topics*, the worker's order
(:mod:`stream.order`): timestamp, then ``compaction-events`` before ``artifact-events``,
then partition and offset. Everything streams: the topics are merged as they are read
(:class:`TopicReader`, a fetch per partition at a time), the replay writes its output as
it goes (:class:`KafkaReplayer` keeps counts) and ``--verify`` compares in a temporary
sqlite file (:class:`Verifier`), so memory is bounded by the engine's state.
"""

from __future__ import annotations

import heapq
import json
import os
import sqlite3
import tempfile
from collections import deque
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiokafka import TopicPartition

from stream.domain.engine import MAX_LEDGER, MAX_OUTPUT_BYTES, Engine, node_detail
from stream.domain.events import ArtifactEvent, CheckpointEvent, Source
from stream.domain.outputs import Alert, NodeStatus
from stream.domain.state import DictState
from stream.errors import ConfigurationError, InvalidEvent
from stream.kafka_clients import consumer, missing_topics, partitions_for, start_client
from stream.order import input_ranks, order_key
from stream.settings import Settings
from stream.wire import MAX_MESSAGE_BYTES, decode_message, encode


def parse_time(text: str) -> int:
    """RFC 3339 / ISO 8601 time (``Z`` allowed; naive = UTC) -> epoch milliseconds."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigurationError(f"not an RFC 3339 time: {text!r} (e.g. 2026-11-29T10:00:00Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


@dataclass(frozen=True)
class Record:
    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None


@dataclass
class Range:
    """Per-partition half-open offset ranges ``[start, end)`` that were read."""

    spans: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)

    def contains(self, topic: str | None, partition: int | None, offset: int | None) -> bool:
        span = self.spans.get((topic, partition))  # type: ignore[arg-type]
        return span is not None and offset is not None and span[0] <= offset < span[1]


class Merger:
    """The merge of several offset-ordered record streams in :func:`stream.order.order_key`
    order, without holding them: stream ``i`` (of rank ``ranks[i]``) is :meth:`add`\\ ed
    to as it is read, :meth:`needy` says which open streams must be read before the next
    record can be known, :meth:`pop` gives it. A stream is ``close``\\ d at its end."""

    def __init__(self, ranks: list[int]) -> None:
        self.ranks = ranks
        self.buffers: list[deque] = [deque() for _ in ranks]
        self.open = set(range(len(ranks)))
        self._starved = set(self.open)  # open streams with nothing buffered
        self._heads: list[tuple[tuple[int, int, int, int], int]] = []

    def add(self, i: int, records: Iterable[Any]) -> None:
        buf = self.buffers[i]
        was_empty = not buf
        buf.extend(records)
        if was_empty and buf:
            self._starved.discard(i)
            heapq.heappush(self._heads, (order_key(buf[0], self.ranks[i]), i))

    def close(self, i: int) -> None:
        self.open.discard(i)
        self._starved.discard(i)

    def needy(self) -> list[int]:
        return sorted(self._starved)

    def pop(self) -> Any | None:
        """The next record, or None when no record can be known now (:meth:`needy`
        streams must be read first) or all streams are done."""
        if self._starved or not self._heads:
            return None
        _, i = heapq.heappop(self._heads)
        buf = self.buffers[i]
        rec = buf.popleft()
        if buf:
            heapq.heappush(self._heads, (order_key(buf[0], self.ranks[i]), i))
        elif i in self.open:
            self._starved.add(i)
        return rec


def merge(streams: list[Iterable[Any]], ranks: list[int]) -> Iterator[Any]:
    """:class:`Merger` over in-memory streams (each read one record at a time)."""
    its = [iter(s) for s in streams]
    m = Merger(ranks)
    while True:
        for i in m.needy():
            rec = next(its[i], None)
            if rec is None:
                m.close(i)
            else:
                m.add(i, (rec,))
        rec = m.pop()
        if rec is None:
            if not m.needy():
                return
            continue
        yield rec


class TopicReader:
    """Read topics from ``since_ms`` (or the beginning) to their end at the start of the
    read, as one stream of :class:`Record` in the DESIGN.md §4 order (``ranks``: topic ->
    rank; default :func:`stream.order.input_ranks` of the settings, 0 for other topics).
    Records stamped at or after ``until_ms`` are left out (and end their partition's
    range); ``key`` keeps only records under that key. :attr:`range` holds the offsets
    read, :attr:`read` how many records were kept. No consumer group, no commits."""

    def __init__(self, settings: Settings, topics: list[str] | tuple[str, ...], *, since_ms: int | None = None,
                 until_ms: int | None = None, key: bytes | None = None,
                 progress: Callable[[int, int], None] | None = None, ranks: dict[str, int] | None = None) -> None:
        self.settings, self.topics = settings, tuple(topics)
        self.since_ms, self.until_ms, self.key, self.progress = since_ms, until_ms, key, progress
        self.ranks = ranks if ranks is not None else {
            **{t: 0 for t in self.topics}, **input_ranks(*settings.input_topics)}
        self.range = Range()
        self.read = 0

    async def records(self) -> AsyncGenerator[Record, None]:
        settings, until_ms, key = self.settings, self.until_ms, self.key
        c = consumer(settings, enable_auto_commit=False, auto_offset_reset="earliest", group_id=None)
        await start_client(settings, c)
        try:
            tps: list[TopicPartition] = []
            for t in self.topics:
                parts = await partitions_for(settings, c, t)
                if not parts:
                    raise missing_topics([t])
                tps.extend(TopicPartition(t, p) for p in sorted(parts))
            c.assign(tps)
            ends = await c.end_offsets(tps)
            starts = await c.beginning_offsets(tps)
            if self.since_ms is not None:
                found = await c.offsets_for_times({tp: self.since_ms for tp in tps})
                starts = {tp: (found[tp].offset if found[tp] is not None else ends[tp]) for tp in tps}
            for tp in tps:
                c.seek(tp, starts[tp])
            spans = self.range.spans
            for tp in tps:
                spans[(tp.topic, tp.partition)] = (starts[tp], ends[tp])
            merger = Merger([self.ranks[tp.topic] for tp in tps])
            index = {tp: i for i, tp in enumerate(tps)}
            for tp in tps:
                if starts[tp] >= ends[tp]:
                    merger.close(index[tp])
            total = sum(ends[tp] - starts[tp] for tp in tps)
            done = 0
            while True:
                rec = merger.pop()
                if rec is not None:
                    self.read += 1
                    yield rec
                    continue
                needy = [tps[i] for i in merger.needy()]
                if not needy:
                    break
                batch = await c.getmany(*needy, timeout_ms=1000)
                for tp, msgs in batch.items():
                    i, end = index[tp], spans[(tp.topic, tp.partition)][1]
                    kept = []
                    for m in msgs:
                        if m.offset >= end:
                            merger.close(i)
                            break
                        if until_ms is not None and m.timestamp >= until_ms:
                            spans[(tp.topic, tp.partition)] = (starts[tp], m.offset)
                            merger.close(i)
                            break
                        done += 1
                        if key is None or m.key == key:
                            kept.append(Record(m.topic, m.partition, m.offset, m.timestamp, m.key, m.value))
                        if m.offset + 1 >= end:
                            merger.close(i)
                            break
                    merger.add(i, kept)
                for tp in needy:  # a compacted topic may end below its end offset
                    i, end = index[tp], spans[(tp.topic, tp.partition)][1]
                    if i in merger.open and tp not in batch and await c.position(tp) >= end:
                        merger.close(i)
                if self.progress is not None:
                    self.progress(done, total)
        finally:
            await c.stop()


async def read_topics(
    settings: Settings,
    topics: list[str] | tuple[str, ...],
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    key: bytes | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Record], Range]:
    """:class:`TopicReader` into a list (small reads and tests), with the range read."""
    reader = TopicReader(settings, topics, since_ms=since_ms, until_ms=until_ms, key=key, progress=progress)
    return [r async for r in reader.records()], reader.range


class KafkaReplayer:
    """A fresh in-memory engine fed :class:`Record` by :class:`Record`, exactly as the
    worker would apply them (an event the engine rejects at apply time is a dead letter of
    its own record). :meth:`feed` returns the output values; only counts are kept."""

    def __init__(self, *, seq_gap_limit: int, since: bool = False, max_bytes: int = MAX_MESSAGE_BYTES,
                 max_output_bytes: int = MAX_OUTPUT_BYTES, max_ledger: int = MAX_LEDGER,
                 on_dead_letter: Callable[[Record, str], None] | None = None) -> None:
        self.engine = Engine(seq_gap_limit, start_at_first_seq=since, max_output_bytes=max_output_bytes,
                             max_ledger=max_ledger)
        self.state = DictState()
        self.max_bytes = max_bytes
        self.on_dead_letter = on_dead_letter
        self.records = self.events = self.alerts = self.statuses = self.dead_letters = 0

    def _dead(self, rec: Record, reason: str) -> None:
        self.dead_letters += 1
        if self.on_dead_letter is not None:
            self.on_dead_letter(rec, reason)

    def feed(self, rec: Record) -> list[Alert | NodeStatus]:
        self.records += 1
        source = Source(rec.topic, rec.partition, rec.offset)
        try:
            event = decode_message(rec.key, rec.value, max_bytes=self.max_bytes)
        except InvalidEvent as exc:
            self._dead(rec, str(exc))
            return []
        self.events += 1
        out = self.engine.process(self.state, event, source)
        for rejected in out.rejected:  # DESIGN.md §4 Ledger bound
            src = rejected.source
            where = rec if rejected.event is event else Record(src.topic, src.partition, src.offset, -1, None, None)
            self._dead(where, rejected.reason)
        self.alerts += len(out.alerts)
        self.statuses += len(out.statuses)
        return out.records


@dataclass
class KafkaReplay:
    """:func:`replay_records` in memory (small inputs and tests)."""

    alerts: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # alerts + statuses, output order
    dead_letters: list[tuple[Record, str]] = field(default_factory=list)
    events: int = 0


def replay_records(records: Iterable[Record], *, seq_gap_limit: int, since: bool = False,
                   max_bytes: int = MAX_MESSAGE_BYTES, max_output_bytes: int = MAX_OUTPUT_BYTES,
                   max_ledger: int = MAX_LEDGER) -> KafkaReplay:
    """:class:`KafkaReplayer` over ``records``, every output kept in lists."""
    result = KafkaReplay()
    rp = KafkaReplayer(seq_gap_limit=seq_gap_limit, since=since, max_bytes=max_bytes,
                       max_output_bytes=max_output_bytes, max_ledger=max_ledger,
                       on_dead_letter=lambda rec, reason: result.dead_letters.append((rec, reason)))
    for rec in records:
        for value in rp.feed(rec):
            record = value.to_record()
            result.records.append(record)
            (result.alerts if record["type"] == "alert" else result.statuses).append(record)
    result.events = rp.events
    return result


@dataclass
class Verification:
    """A comparison of replayed records with a topic's (alerts by id, statuses by node)."""

    missing: list[dict[str, Any]] = field(default_factory=list)    # replay has it, topic does not
    extra: list[dict[str, Any]] = field(default_factory=list)      # topic has it, replay does not
    different: list[tuple[dict, dict]] = field(default_factory=list)  # same id, other content
    compared: int = 0
    what: str = "alerts"

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.different)

    def summary(self) -> str:
        return (f"verify: {self.compared} {self.what} compared: {len(self.missing)} missing, "
                f"{len(self.extra)} extra, {len(self.different)} different")


@dataclass
class Differences:
    """What :class:`Verifier` found, streamed: ``missing`` / ``extra`` records and
    ``different`` pairs are iterators (read them once, in this order); counts are known."""

    what: str
    compared: int
    n_missing: int
    n_extra: int
    n_different: int
    missing: Iterator[dict[str, Any]]
    extra: Iterator[dict[str, Any]]
    different: Iterator[tuple[dict, dict]]

    @property
    def ok(self) -> bool:
        return not (self.n_missing or self.n_extra or self.n_different)

    def summary(self) -> str:
        return (f"verify: {self.compared} {self.what} compared: {self.n_missing} missing, "
                f"{self.n_extra} extra, {self.n_different} different")


def _comparable(alert: dict[str, Any]) -> bytes:
    return encode({k: v for k, v in alert.items() if k != "emitted_at"})


_SCHEMA = """
create table mine_alert (alert_id text primary key, body blob not null);
create table their_alert (alert_id text primary key, body blob not null);
create table repeat_diff (first blob not null, other blob not null);
create table mine_status (context_id text not null, node_id text not null, body blob not null,
                          primary key (context_id, node_id));
create table their_status (context_id text, node_id text, body blob not null, in_range integer not null,
                           primary key (context_id, node_id));
"""


class Verifier:
    """The replayed alerts and statuses against the published ones, in a temporary sqlite
    file (keyed by ``alert_id`` / node), so neither side is held in memory.

    Alerts: by ``alert_id``, ignoring ``emitted_at`` and repeats of an identical alert;
    only published alerts whose trigger lies in the replayed input range are compared (a
    ``sequence_gap`` alert's trigger is the arriving event, also in range). Statuses: per
    node the replay's last record against the topic's last one; nodes whose last
    published status was triggered outside the range are left out (a later event, not
    replayed, decided it), so are older records a compaction may or may not have removed.
    """

    def __init__(self, rng: Range | None = None, directory: str | None = None) -> None:
        self.range = rng if rng is not None else Range()
        self._dir = tempfile.TemporaryDirectory(prefix="cg-verify-", dir=directory)
        self.db = sqlite3.connect(os.path.join(self._dir.name, "verify.sqlite"), isolation_level=None)
        self.db.execute("pragma journal_mode = off")
        self.db.execute("pragma synchronous = off")
        self.db.executescript(_SCHEMA)
        self.db.execute("begin")

    def close(self) -> None:
        self.db.close()
        self._dir.cleanup()

    def __enter__(self) -> Verifier:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def replayed(self, value: Alert | NodeStatus | dict[str, Any]) -> None:
        """One record of the replay (alert or status, output order)."""
        record = value if isinstance(value, dict) else value.to_record()
        if record["type"] == "alert":
            self.db.execute("insert or ignore into mine_alert values (?, ?)",
                            (record["alert_id"], _comparable(record)))
        else:
            self.db.execute("insert into mine_status values (?, ?, ?) on conflict do update set body = excluded.body",
                            (record["context_id"], record["node_id"], encode(record)))

    def published_alert(self, alert: dict[str, Any]) -> None:
        t = alert.get("trigger") or {}
        if not self.range.contains(t.get("topic"), t.get("partition"), t.get("offset")):
            return
        body = _comparable(alert)
        aid = alert.get("alert_id")
        cur = self.db.execute("insert or ignore into their_alert values (?, ?)", (aid, body))
        if cur.rowcount == 0:
            (prev,), = self.db.execute("select body from their_alert where alert_id = ?", (aid,))
            if prev != body:
                self.db.execute("insert into repeat_diff values (?, ?)", (prev, body))

    def published_status(self, status: dict[str, Any]) -> None:
        t = status.get("trigger") or {}
        in_range = self.range.contains(t.get("topic"), t.get("partition"), t.get("offset"))
        self.db.execute("insert into their_status values (?, ?, ?, ?) on conflict do update set "
                        "body = excluded.body, in_range = excluded.in_range",
                        (status.get("context_id"), status.get("node_id"), encode(status), int(in_range)))

    def _rows(self, sql: str) -> Iterator[Any]:
        return (json.loads(body) for (body,) in self.db.execute(sql))

    def _count(self, sql: str) -> int:
        (n,), = self.db.execute(sql)
        return n

    def alerts(self) -> Differences:
        q = self._count
        mine_only = ("from mine_alert m left join their_alert t on m.alert_id = t.alert_id "
                     "where t.alert_id is null")
        theirs_only = ("from their_alert t left join mine_alert m on m.alert_id = t.alert_id "
                       "where m.alert_id is null")
        both = "from mine_alert m join their_alert t on m.alert_id = t.alert_id where m.body != t.body"
        n_missing, n_extra = q(f"select count(*) {mine_only}"), q(f"select count(*) {theirs_only}")
        n_diff = q("select count(*) from repeat_diff") + q(f"select count(*) {both}")
        compared = q("select count(*) from mine_alert") + n_extra

        def different() -> Iterator[tuple[dict, dict]]:
            for a, b in self.db.execute("select first, other from repeat_diff order by rowid"):
                yield json.loads(a), json.loads(b)
            for a, b in self.db.execute(f"select m.body, t.body {both} order by m.rowid"):
                yield json.loads(a), json.loads(b)

        return Differences("alerts", compared, n_missing, n_extra, n_diff,
                           self._rows(f"select m.body {mine_only} order by m.rowid"),
                           self._rows(f"select t.body {theirs_only} order by t.rowid"), different())

    def statuses(self) -> Differences:
        q = self._count
        self.db.execute("delete from mine_status where (context_id, node_id) in "
                        "(select context_id, node_id from their_status where not in_range)")
        self.db.execute("delete from their_status where not in_range")
        join = "m.context_id = t.context_id and m.node_id = t.node_id"
        mine_only = f"from mine_status m left join their_status t on {join} where t.node_id is null"
        theirs_only = f"from their_status t left join mine_status m on {join} where m.node_id is null"
        both = f"from mine_status m join their_status t on {join} where m.body != t.body"
        n_extra = q(f"select count(*) {theirs_only}")

        def different() -> Iterator[tuple[dict, dict]]:
            for a, b in self.db.execute(f"select m.body, t.body {both} order by m.rowid"):
                yield json.loads(a), json.loads(b)

        return Differences("node statuses", q("select count(*) from mine_status") + n_extra,
                           q(f"select count(*) {mine_only}"), n_extra, q(f"select count(*) {both}"),
                           self._rows(f"select m.body {mine_only} order by m.rowid"),
                           self._rows(f"select t.body {theirs_only} order by t.rowid"), different())


def _collect(d: Differences) -> Verification:
    return Verification(list(d.missing), list(d.extra), list(d.different), d.compared, d.what)


def verify(replayed: Iterable[dict[str, Any]], published: Iterable[dict[str, Any]], rng: Range) -> Verification:
    """:class:`Verifier` of alerts, the differences in lists."""
    with Verifier(rng) as v:
        for a in replayed:
            v.replayed(a)
        for a in published:
            v.published_alert(a)
        return _collect(v.alerts())


def verify_statuses(replayed: Iterable[dict[str, Any]], published: Iterable[dict[str, Any]],
                    rng: Range) -> Verification:
    """:class:`Verifier` of node statuses, the differences in lists."""
    with Verifier(rng) as v:
        for s in replayed:
            v.replayed(s)
        for s in published:
            v.published_status(s)
        return _collect(v.statuses())


# ---------------------------------------------------------------------------- explain


@dataclass
class NodeHistory:
    """Everything that happened to one node, reconstructed from the topics."""

    context_id: str
    node_id: str
    versions: list[dict[str, Any]] = field(default_factory=list)
    reachability: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    frozen: bool = False
    open_rules: list[str] = field(default_factory=list)
    degraded_by: list[str] = field(default_factory=list)
    degraded_count: int = 0
    exists: bool = False

    @property
    def authoritative(self) -> bool:
        return self.exists and not self.frozen and not self.open_rules and not self.degraded_count

    def to_json(self) -> dict[str, Any]:
        return {
            "context_id": self.context_id, "node_id": self.node_id, "exists": self.exists,
            "authoritative": self.authoritative, "frozen": self.frozen, "open_rules": self.open_rules,
            "degraded_by": self.degraded_by, "degraded_count": self.degraded_count,
            "versions": self.versions, "reachability": self.reachability, "alerts": self.alerts,
            "statuses": self.statuses,
        }


class Explainer:
    """One context's records fed one by one (:meth:`feed`) into a fresh engine; the
    history of ``node_id`` collected (:attr:`history`, complete after :meth:`finish`)."""

    def __init__(self, context_id: str, node_id: str, *, seq_gap_limit: int, max_ledger: int = MAX_LEDGER) -> None:
        self.context_id, self.node_id = context_id, node_id
        self.history = NodeHistory(context_id, node_id)
        self.engine = Engine(seq_gap_limit, max_ledger=max_ledger)
        self.state = DictState()
        self._referents: set[str] = set()

    def feed(self, rec: Record) -> None:
        try:
            event = decode_message(rec.key, rec.value)
        except InvalidEvent:
            return
        if event.context_id != self.context_id:
            return
        self._collect(self.engine.process(self.state, event, Source(rec.topic, rec.partition, rec.offset)))

    def _collect(self, out: Any) -> None:
        h, node_id, referents = self.history, self.node_id, self._referents
        for ev, src in out.applied:
            where = {"topic": src.topic, "partition": src.partition, "offset": src.offset}
            if isinstance(ev, CheckpointEvent) and ev.node_id == node_id:
                verdict = next((v for v in out.verdicts if v.trigger.event_id == ev.event_id), None)
                referents.update(ev.referents)
                h.versions.append({
                    "event_id": ev.event_id, **where, "occurred_at": ev.occurred_at, "level": ev.level,
                    "referents": list(ev.referents), "children": list(ev.children),
                    "negative_constraints": list(ev.negative_constraints),
                    "raw_negative_constraints": list(ev.raw_negative_constraints),
                    "verdict": verdict.verdict if verdict else None,
                })
            elif isinstance(ev, ArtifactEvent) and ev.artifact_id in referents:
                h.reachability.append({
                    "event_id": ev.event_id, **where, "occurred_at": ev.occurred_at,
                    "artifact_id": ev.artifact_id, "op": ev.op, "tier": ev.tier,
                })
        h.alerts.extend(a.to_record() for a in out.alerts if a.node_id == node_id)
        h.statuses.extend(st.to_record() for st in out.statuses if st.node_id == node_id)

    def finish(self) -> NodeHistory:
        h = self.history
        detail = node_detail(self.state, self.context_id, self.node_id)
        if detail is not None:
            h.exists = True
            h.frozen = detail.frozen
            h.open_rules = list(detail.open_rules)
            h.degraded_by = list(detail.degraded_by)
            h.degraded_count = detail.degraded_count
        return h


def explain(records: Iterable[Record], context_id: str, node_id: str, *, seq_gap_limit: int,
            max_ledger: int = MAX_LEDGER) -> NodeHistory:
    """Replay one context's records and collect the history of ``node_id``."""
    ex = Explainer(context_id, node_id, seq_gap_limit=seq_gap_limit, max_ledger=max_ledger)
    for rec in records:
        ex.feed(rec)
    return ex.finish()
