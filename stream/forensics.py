"""Forensics: replay the topics into a fresh engine, verify against the alerts topic,
explain a node's history.

Months later someone asks "why was node R of context X flagged, and would we flag it
the same way today?". Everything here reads the topics with a group-less consumer
(manual partition assignment, no offset commits), so it never moves the live worker's
committed offsets nor touches its tables.

Record order: within a partition, Kafka's offset order; across the two input topics
(and partitions), records are merged by their Kafka timestamp, then topic, partition,
offset — a deterministic order. Events that carry ``seq`` are applied in seq order
anyway, so their alerts do not depend on this merge (DESIGN.md §4).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from aiokafka import TopicPartition

from stream.domain.engine import MAX_LEDGER, MAX_OUTPUT_BYTES, Engine, node_detail
from stream.domain.outputs import encode_record
from stream.domain.events import ArtifactEvent, CheckpointEvent, Source
from stream.domain.state import DictState
from stream.errors import ConfigurationError, InvalidEvent
from stream.kafka_clients import consumer, missing_topics, partitions_for, start_client
from stream.settings import Settings
from stream.wire import MAX_MESSAGE_BYTES, decode_message, encode


def parse_time(text: str) -> int:
    """RFC 3339 / ISO 8601 time (``Z`` allowed; naive = UTC) -> epoch milliseconds."""
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigurationError(f"not an RFC 3339 time: {text!r} (e.g. 2026-11-29T10:00:00Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
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


async def read_topics(
    settings: Settings,
    topics: list[str] | tuple[str, ...],
    *,
    since_ms: int | None = None,
    until_ms: int | None = None,
    key: bytes | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[list[Record], Range]:
    """Read topics from ``since_ms`` (or the beginning) to their end at call time.

    Records with a timestamp at or after ``until_ms`` are left out (and end the range
    of their partition). ``key`` keeps only records under that key. Returns the records
    merged in the deterministic order described in the module docstring, and the offset
    ranges read. No consumer group, no commits.
    """
    c = consumer(settings, enable_auto_commit=False, auto_offset_reset="earliest", group_id=None)
    await start_client(settings, c)
    try:
        tps = []
        for t in topics:
            parts = await partitions_for(settings, c, t)
            if not parts:
                raise missing_topics([t])
            tps.extend(TopicPartition(t, p) for p in sorted(parts))
        c.assign(tps)
        ends = await c.end_offsets(tps)
        starts = await c.beginning_offsets(tps)
        if since_ms is not None:
            found = await c.offsets_for_times({tp: since_ms for tp in tps})
            starts = {tp: (found[tp].offset if found[tp] is not None else ends[tp]) for tp in tps}
        for tp in tps:
            c.seek(tp, starts[tp])
        per_tp: dict[TopicPartition, list[Record]] = {tp: [] for tp in tps}
        stop_at = dict(ends)
        remaining = {tp for tp in tps if starts[tp] < ends[tp]}
        total = sum(ends[tp] - starts[tp] for tp in tps)
        done = 0
        while remaining:
            batch = await c.getmany(*remaining, timeout_ms=1000)
            for tp, msgs in batch.items():
                for m in msgs:
                    if m.offset >= stop_at[tp]:
                        remaining.discard(tp)
                        break
                    if until_ms is not None and m.timestamp >= until_ms:
                        stop_at[tp] = m.offset
                        remaining.discard(tp)
                        break
                    done += 1
                    if key is None or m.key == key:
                        per_tp[tp].append(Record(m.topic, m.partition, m.offset, m.timestamp, m.key, m.value))
                    if m.offset + 1 >= stop_at[tp]:
                        remaining.discard(tp)
            if progress is not None:
                progress(done, total)
    finally:
        await c.stop()
    rng = Range({(tp.topic, tp.partition): (starts[tp], stop_at[tp]) for tp in tps})
    merged = list(heapq.merge(*per_tp.values(), key=lambda r: (r.timestamp, r.topic, r.partition, r.offset)))
    return merged, rng


@dataclass
class KafkaReplay:
    alerts: list[dict[str, Any]] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)  # alerts + statuses, output order
    dead_letters: list[tuple[Record, str]] = field(default_factory=list)
    events: int = 0
    range: Range = field(default_factory=Range)


def replay_records(records: list[Record], *, seq_gap_limit: int, since: bool = False,
                   max_bytes: int = MAX_MESSAGE_BYTES, max_output_bytes: int = MAX_OUTPUT_BYTES,
                   max_ledger: int = MAX_LEDGER) -> KafkaReplay:
    """Run records through a fresh in-memory engine, exactly as the worker would (an
    event the engine rejects at apply time is a dead letter of its own record)."""
    engine = Engine(seq_gap_limit, start_at_first_seq=since, max_output_bytes=max_output_bytes,
                    max_ledger=max_ledger)
    state = DictState()
    result = KafkaReplay()
    for rec in records:
        source = Source(rec.topic, rec.partition, rec.offset)
        try:
            event = decode_message(rec.key, rec.value, max_bytes=max_bytes)
        except InvalidEvent as exc:
            result.dead_letters.append((rec, str(exc)))
            continue
        result.events += 1
        out = engine.process(state, event, source)
        for rejected in out.rejected:  # DESIGN.md §4 Ledger bound
            src = rejected.source
            where = rec if rejected.event is event else Record(src.topic, src.partition, src.offset, -1, None, None)
            result.dead_letters.append((where, rejected.reason))
        records = [r.to_record() for r in out.records]
        result.records.extend(records)
        result.alerts.extend(r for r in records if r["type"] == "alert")
        result.statuses.extend(r for r in records if r["type"] == "status")
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


def _comparable(alert: dict[str, Any]) -> bytes:
    return encode({k: v for k, v in alert.items() if k != "emitted_at"})


def verify(replayed: list[dict[str, Any]], published: list[dict[str, Any]], rng: Range) -> Verification:
    """Compare by ``alert_id`` (ignoring ``emitted_at`` and repeats of an identical alert).

    Only published alerts whose trigger lies in the replayed input range are compared
    (a ``sequence_gap`` alert's trigger is the arriving event, also in range).
    """
    v = Verification()
    mine: dict[str, dict] = {}
    for a in replayed:
        mine.setdefault(a["alert_id"], a)
    theirs: dict[str, dict] = {}
    for a in published:
        t = a.get("trigger") or {}
        if not rng.contains(t.get("topic"), t.get("partition"), t.get("offset")):
            continue
        prev = theirs.get(a["alert_id"])
        if prev is not None and _comparable(prev) != _comparable(a):
            v.different.append((prev, a))
        theirs.setdefault(a["alert_id"], a)
    for aid, a in mine.items():
        other = theirs.get(aid)
        if other is None:
            v.missing.append(a)
        elif _comparable(other) != _comparable(a):
            v.different.append((a, other))
    v.extra = [a for aid, a in theirs.items() if aid not in mine]
    v.compared = len(set(mine) | set(theirs))
    return v


def verify_statuses(replayed: list[dict[str, Any]], published: list[dict[str, Any]],
                    rng: Range) -> Verification:
    """Compare, per node, the last status record of the replay with the topic's last one.

    Nodes whose last published status was triggered outside the replayed input range are
    left out (a later event, not replayed, decided it); so are older published records a
    compaction may or may not have removed yet.
    """
    v = Verification(what="node statuses")
    mine = {(s["context_id"], s["node_id"]): s for s in replayed}
    theirs: dict[tuple[str, str], dict] = {}
    for s in published:
        theirs[(s.get("context_id"), s.get("node_id"))] = s
    for key in list(theirs):
        t = theirs[key].get("trigger") or {}
        if not rng.contains(t.get("topic"), t.get("partition"), t.get("offset")):
            del theirs[key]
            mine.pop(key, None)
    for key, s in mine.items():
        other = theirs.get(key)
        if other is None:
            v.missing.append(s)
        elif encode_record(other) != encode_record(s):
            v.different.append((s, other))
    v.extra = [s for key, s in theirs.items() if key not in mine]
    v.compared = len(set(mine) | set(theirs))
    return v


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


def explain(records: list[Record], context_id: str, node_id: str, *, seq_gap_limit: int,
            max_ledger: int = MAX_LEDGER) -> NodeHistory:
    """Replay one context's records and collect the history of ``node_id``."""
    h = NodeHistory(context_id, node_id)
    referents: set[str] = set()

    def on_output(out: Any) -> None:
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

    engine = Engine(seq_gap_limit, max_ledger=max_ledger)
    state = DictState()
    for rec in records:
        try:
            event = decode_message(rec.key, rec.value)
        except InvalidEvent:
            continue
        if event.context_id != context_id:
            continue
        out = engine.process(state, event, Source(rec.topic, rec.partition, rec.offset))
        on_output(out)
    detail = node_detail(state, context_id, node_id)
    if detail is not None:
        h.exists = True
        h.frozen = detail.frozen
        h.open_rules = list(detail.open_rules)
        h.degraded_by = list(detail.degraded_by)
        h.degraded_count = detail.degraded_count
    return h


