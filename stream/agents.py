"""The one agent: decode at the edge -> engine -> send alerts and verdicts -> write state.

``validate`` consumes both input topics as one stream, in batches
(``stream.take_events``: up to ``CG_BATCH_MAX`` events, waiting at most
``CG_BATCH_WITHIN`` s). For each batch (:func:`handle_batch`):

1. **decode** (:func:`stream.wire.decode_message`) and check that the message key is the
   payload's ``context_id``; a bad message becomes a dead letter with its original
   bytes, source topic/partition/offset and a one-line reason, and the agent moves on
   (an exception escaping a faust agent would ack the event *and* crash the agent —
   DESIGN.md §7.5 — so nothing escapes).
2. **engine**: :meth:`Engine.process` per event, in offset order, over an
   :class:`~stream.tables.OverlayState` per context, so the batch's state changes wait
   in memory and a context's later events see its earlier ones.
3. **send** every alert, status record (to the compacted ``checkpoint-status`` topic, on
   the input's partition number), verdict and dead letter and wait until the broker
   acknowledged them (one round trip per batch); a record the broker rejects by size is
   dead-lettered with its trigger instead (DESIGN.md §4 Bounded outputs).
4. **write state**: record each context's write set for the batch as one ``journal``
   record, wait for the acknowledgements, then write each touched key once (changelog
   records); the first event of a context after a start or rebalance rolls that
   journal record forward, so a crash between two table writes never leaves a context
   half-updated.

faust acks the batch's offsets only after step 4. Steps 3-before-4 are the
at-least-once contract (DESIGN.md §7.6): a crash can only make the worker re-process
events and re-send identical alerts (same ``alert_id``); it can never record an event
whose alerts were lost. If step 4 fails the process exits at once (status 70) without
acking, and a restart re-processes the batch.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
import weakref
from collections.abc import Sequence
from typing import Any, NamedTuple

import faust
from faust.types import TP
from aiokafka.errors import MessageSizeTooLargeError, TopicAuthorizationFailedError
from faust.streams import _current_event

from stream import topology
from stream.app import app, settings
from stream.domain.engine import Engine
from stream.domain.events import Source
from stream.errors import InvalidEvent
from stream.gaps import OffsetGuard
from stream.metrics import METRICS, NO_METRICS
from stream.tables import ChangelogWriter, OverlayState, TableState
from stream.wire import (
    dead_letter,
    decode_message,
    encode_alert,
    encode_dead_letter,
    encode_status,
    encode_verdict,
    status_key,
)

log = logging.getLogger("checkpoint_guard.agent")

engine = Engine(settings.seq_gap_limit, max_output_bytes=settings.max_output_bytes)
#: Table writes go straight to RocksDB; their changelog records are sent per batch.
writer = ChangelogWriter()
state = TableState(topology.tables, topology.journal, writer)
#: Input records faust skipped without delivering them are found and read (stream.gaps).
offsets = OffsetGuard(settings)
#: Contexts whose last journal record this process has rolled forward (reset on rebalance).
_rolled: set[str] = set()
#: Prometheus metrics (stream.metrics), derived from the engine's Output; CG_METRICS_ENABLED.
metrics = METRICS if settings.metrics_enabled else NO_METRICS
METRICS.expect_topics(settings.output_topics)
#: A dead letter's event type is its topic's (its payload may not say).
_TOPIC_TYPE = {settings.compaction_topic: "checkpoint", settings.artifact_topic: "artifact"}

#: Plain counters (for debugging in process; Prometheus metrics are in stream.metrics).
counters: dict[str, int] = {
    "events": 0,
    "dead_letters": 0,
    "alerts": 0,
    "verdicts": 0,
    "duplicates": 0,
    "dropped": 0,
}

SEND_RETRY_MAX_DELAY = 5.0
#: Exit status when the tables cannot be written (EX_SOFTWARE); a supervisor restarts.
STATE_WRITE_EXIT = 70


class StateWriteError(RuntimeError):
    """Writing an event's state to the tables failed (after its alerts were sent)."""


class OutputRecord(NamedTuple):
    """An alert, verdict, status or dead letter to send.

    ``partition``: None = the key's default partitioner (alerts, verdicts: keyed by the
    context id); a status record goes to its input's partition number. ``source``: the
    input message that caused it (dead-lettered in its place if the broker rejects it).
    """

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None = None
    table: None = None
    source: Any = None


#: The worker may not write the topic: no retry can fix it, and it is configuration, not
#: input — sending stops the worker instead of spinning.
_FORBIDDEN = (TopicAuthorizationFailedError,)


class OutputRejected(RuntimeError):
    """The broker refused a record for good for a reason no input causes (authorization)."""


def _is(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    return isinstance(exc, kinds) or isinstance(exc.__cause__, kinds)


async def _send_acked(records: Sequence[Any]) -> list[tuple[Any, BaseException]]:
    """Send records back to back, then wait until the broker acknowledged every one.

    In: :class:`OutputRecord` and :class:`~stream.tables.ChangelogRecord` items (topic,
    key, value, partition; value None = tombstone). A changelog record's acknowledged
    offset becomes its table's persisted offset (what faust's own changelog callback
    does), so a restart that keeps RocksDB replays only the rest of the changelog.
    Transient failures (broker unavailable, timeouts) are retried forever with backoff
    up to ``SEND_RETRY_MAX_DELAY`` s — only the failed records; a resend can duplicate a
    record that was delivered, which is harmless (same ``alert_id``, same table value).
    Returns the records rejected for good by size (``MessageSizeTooLargeError``: over a
    topic's ``max.message.bytes`` or the producer's request size), each with its error,
    for the caller to dead-letter (DESIGN.md §4 Bounded outputs: never retried forever).
    Raises :class:`OutputRejected` when the worker may not write a topic.
    """
    pending = list(records)
    rejected: list[tuple[Any, BaseException]] = []
    delay = 0.2
    while pending:
        producer = app.producer
        futures: list[Any] = []
        failure: BaseException | None = None
        try:
            for r in pending:
                futures.append(await producer.send(r.topic, r.key, r.value, r.partition, None, None))
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # could not even enqueue: retry the rest below
            failure = exc
        results = await asyncio.gather(*futures, return_exceptions=True)
        failed = pending[len(futures):]
        if failure is not None and failed and _is(failure, (MessageSizeTooLargeError,)):
            rejected.append((failed.pop(0), failure))  # producer refused to enqueue it
            failure = None
        persisted: dict[tuple[Any, Any], int] = {}
        for r, res in zip(pending, results):
            if isinstance(res, asyncio.CancelledError):
                raise res
            if isinstance(res, BaseException):
                if _is(res, (MessageSizeTooLargeError,)):
                    rejected.append((r, res))
                    continue
                failed.append(r)
                failure = failure or res
            elif r.table is not None:
                k = (r.table, res.topic_partition)
                if res.offset > persisted.get(k, -1):
                    persisted[k] = res.offset
        for (table, tp), offset in persisted.items():
            table.data.set_persisted_offset(tp, offset)
        pending = failed
        if pending:
            assert failure is not None
            if _is(failure, _FORBIDDEN):
                raise OutputRejected(
                    f"the broker refused a record for {pending[0].topic!r} for good "
                    f"({type(failure).__name__}: {failure}); check the worker's ACLs"
                ) from failure
            log.warning("sending %d record(s) failed (%r, cause %r); retrying in %.1fs",
                        len(pending), failure, failure.__cause__, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, SEND_RETRY_MAX_DELAY)
    return rejected


async def _send_outputs(records: Sequence[OutputRecord]) -> None:
    """Send alerts/verdicts/statuses/dead letters; what the broker rejects by size is
    dead-lettered with its trigger instead (then without the input's bytes if even that
    is too large), so no input can stop the worker (DESIGN.md §4 Bounded outputs)."""
    rejected = await _send_acked(records)
    for attempt in range(2):
        if not rejected:
            return
        retry = []
        for record, exc in rejected:
            metrics.output_rejected(record.topic)
            log.error("the broker rejected a %d-byte record for %s (%s); dead-lettering its trigger",
                      len(record.value), record.topic, type(exc).__name__)
            if record.topic == settings.deadletter_topic or record.source is None:
                if attempt:
                    log.critical("dropping a dead letter the broker rejects twice (%s)", type(exc).__name__)
                    continue
            message = record.source
            reason = (f"output rejected: a {len(record.value)}-byte record for {record.topic} "
                      f"({type(exc).__name__}); raise the topic's max.message.bytes or lower CG_MAX_OUTPUT_BYTES")
            retry.append(_dead_letter_send(message, reason, keep_value=attempt == 0))
        rejected = await _send_acked(retry)


async def _send_changelog() -> None:
    """Send the table writes made so far (see :class:`~stream.tables.ChangelogWriter`)."""
    records = writer.take()
    if records:
        rejected = await _send_acked(records)
        if rejected:
            raise StateWriteError(f"the broker rejected {len(rejected)} changelog record(s) by size") \
                from rejected[0][1]


class _Context:
    """One context's share of a batch: its overlay, and an event of its partition."""

    __slots__ = ("overlay", "event", "last_event_id")

    def __init__(self, event: Any) -> None:
        self.overlay = OverlayState(state)
        self.event = event  # any of the batch's events of this context (same partition)
        self.last_event_id = ""


def _as_current(event: Any) -> None:
    """Make ``event`` faust's current event, so table reads and writes use its partition.

    A table write goes to the changelog partition of the current event, and a RocksDB
    read looks only in the current event's partition (DESIGN.md §7.1). Inside a batch
    faust's current event is the last one buffered, so before reading or writing a
    context's keys we point faust at an event of that context (same partition).
    """
    _current_event.set(weakref.ref(event))


def _dead_letter_send(message: Any, reason: str, *, keep_value: bool = True) -> OutputRecord:
    record = dead_letter(
        message.value if keep_value else b"", reason, key=message.key,
        topic=message.topic, partition=message.partition, offset=message.offset,
    )
    return OutputRecord(settings.deadletter_topic, message.key, encode_dead_letter(record), source=message)


async def handle_batch(events: Sequence[Any]) -> list[dict[str, Any]]:
    """Process a batch of Kafka events (``stream.take_events``) end to end.

    In: faust events in offset order per partition (any mix of partitions and contexts).
    Out: the alerts they produced, in processing order. Steps (module docstring):
    decode (bad ones -> dead letters), roll forward the journal of contexts this process
    touches for the first time, run the engine over one overlay per context (each event
    over its own overlay on top, merged on success, so an event that fails inside the
    engine leaves no trace), send every alert, verdict and dead letter and wait for the
    acks, record one journal record per context and wait for the acks, then write each
    touched key once. Raises :class:`StateWriteError` if the journal or the tables
    cannot be written (the caller stops the process without acking the batch).
    """
    received = time.perf_counter()
    sends: list[OutputRecord] = []
    dead: list[tuple[Any, str]] = []
    decoded: list[tuple[Any, Any]] = []
    contexts: dict[str, _Context] = {}
    for ev in events:
        message = ev.message
        counters["events"] += 1
        try:
            event = decode_message(message.key, message.value, max_bytes=settings.max_message_bytes)
        except InvalidEvent as exc:
            log.info("dead letter %s[%s]@%s: %s", message.topic, message.partition, message.offset, exc,
                     extra={"topic": message.topic, "partition": message.partition, "offset": message.offset})
            dead.append((message, str(exc)))
            continue
        decoded.append((ev, event))
        if event.context_id not in contexts:
            contexts[event.context_id] = _Context(ev)

    # First touch since start/rebalance: finish a write set a crash may have cut. The
    # journal record is re-sent and acknowledged first: the local store may hold one
    # the broker never got, and an older one must never be rolled forward later.
    fresh = [(ctx, c.event) for ctx, c in contexts.items() if ctx not in _rolled]
    if fresh:
        try:
            records = []
            for ctx, ev in fresh:
                _as_current(ev)
                rec = state.rewrite_journal(ctx)
                if rec is not None:
                    records.append((ev, rec))
            if records:
                await _send_changelog()  # the re-sent journal records
                for ev, rec in records:
                    _as_current(ev)
                    state.apply_journal(rec)
                await _send_changelog()  # their keys, before a newer journal record replaces them
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise StateWriteError("could not roll the journal forward") from exc
        _rolled.update(ctx for ctx, _ in fresh)

    observed = []
    for ev, event in decoded:
        message = ev.message
        ctx = contexts[event.context_id]
        overlay = OverlayState(ctx.overlay)  # this event's writes only
        _as_current(ev)  # table reads, too, see only the current event's partition
        try:
            out = engine.process(overlay, event, Source(message.topic, message.partition, message.offset))
            obs = metrics.measure(event, out, ctx.overlay)  # touched nodes as they were
        except Exception:  # a bug, not bad input: log loudly, dead-letter, go on
            log.exception("unexpected error on %s[%s]@%s", message.topic, message.partition, message.offset,
                          extra={"topic": message.topic, "partition": message.partition, "offset": message.offset,
                                 "context_id": event.context_id})
            dead.append((message, f"internal error: {sys.exc_info()[0].__name__}"))
            continue
        overlay.merge_into(ctx.overlay)
        ctx.last_event_id = event.event_id
        key = event.context_id.encode("utf-8")
        sends.extend(OutputRecord(settings.alerts_topic, key, encode_alert(a), source=message) for a in out.alerts)
        sends.extend(OutputRecord(settings.status_topic, status_key(st["context_id"], st["node_id"]),
                                  encode_status(st), message.partition, source=message) for st in out.statuses)
        sends.extend(OutputRecord(settings.verdicts_topic, key, encode_verdict(v), source=message)
                     for v in out.verdicts)
        observed.append((obs, message, out))
    sends.extend(_dead_letter_send(message, reason) for message, reason in dead)
    if sends:
        await _send_outputs(sends)
    acked = time.perf_counter()

    try:
        # The journal records are acknowledged before any key is written, and every
        # earlier key write was acknowledged before them (each batch and each roll-
        # forward waits for its keys), so a journal record never reaches the changelog
        # ahead of keys it does not itself carry.
        for ctx_id, ctx in contexts.items():
            write_set = ctx.overlay.write_set()
            if write_set:
                _as_current(ctx.event)
                state.record_journal(ctx_id, ctx.last_event_id, write_set)
        await _send_changelog()
        for ctx in contexts.values():
            _as_current(ctx.event)
            ctx.overlay.flush()
        await _send_changelog()
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        raise StateWriteError(f"could not record a batch of {len(events)} events in the tables") from exc

    alerts: list[dict[str, Any]] = []
    for obs, message, out in observed:
        counters["alerts"] += len(out.alerts)
        counters["verdicts"] += len(out.verdicts)
        counters["duplicates"] += out.duplicates
        counters["dropped"] += out.dropped
        alerts.extend(out.alerts)
        metrics.record(obs, topic=message.topic, partition=message.partition, offset=message.offset,
                       received=received, acked=acked)
    for message, reason in dead:
        counters["dead_letters"] += 1
        metrics.dead_letter(_TOPIC_TYPE.get(message.topic, "unknown"), reason,
                            message.topic, message.partition, message.offset)
    return alerts


@app.on_partitions_assigned.connect
async def _forget_rolled(app: Any, assigned: Any = None, **kwargs: Any) -> None:
    """After a rebalance another worker may have left a write set half-applied, and the
    next offset due per partition restarts from the group's committed offsets."""
    _rolled.clear()
    offsets.reset()


async def _with_skipped(events: Sequence[Any]) -> list[Any]:
    """The batch with any input records faust skipped put back (:mod:`stream.gaps`)."""
    delay = 0.5
    while True:
        try:
            return await offsets.fill(events)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # broker unreachable: keep the batch, retry
            log.warning("checking input offsets failed (%r); retrying in %.1fs", exc, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, SEND_RETRY_MAX_DELAY)


def _stop_now(exc: BaseException) -> None:
    """Exit the process at once, without acking or committing anything.

    ``take_events`` acks a batch when its generator is closed — also when the agent is
    cancelled during a shutdown — so a graceful stop could commit the offsets of a
    batch whose state was never written. Exiting hard leaves them uncommitted: the
    restarted worker re-processes the batch and re-sends identical alerts.
    """
    log.critical("%s: %r; stopping the worker (exit %d)", exc, exc.__cause__, STATE_WRITE_EXIT)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(STATE_WRITE_EXIT)


@app.agent(topology.input_events, name="validate")
async def validate(stream: faust.StreamT) -> None:
    """Validate every checkpoint on arrival and whenever the store changes under it.

    Takes up to ``CG_BATCH_MAX`` events at a time, waiting at most ``CG_BATCH_WITHIN``
    seconds for a batch to fill; faust acks the batch after :func:`handle_batch`.
    """
    async for events in stream.take_events(settings.batch_max, within=settings.batch_within):
        try:
            batch = await _with_skipped(events)
            await handle_batch(batch)
            offsets.processed(batch)
        except asyncio.CancelledError:
            raise
        except (StateWriteError, OutputRejected) as exc:
            # Infrastructure, not input: the batch's alerts were sent (they repeat,
            # same ids, after a restart); its offsets must not be committed.
            _stop_now(exc)


#: Seconds between the agent's own offset commits (see stream.gaps).
COMMIT_INTERVAL = 0.5


@app.timer(interval=COMMIT_INTERVAL)
async def _commit_processed() -> None:
    """Commit the offsets below which every input record is processed and recorded.

    faust commits too, from its own acked-offset bookkeeping, which can stall after
    records it skipped (stream.gaps); these commits keep the group's progress moving.
    A commit for a partition no longer assigned is discarded by faust; a failed one is
    retried at the next tick (at-least-once either way).
    """
    pending = offsets.to_commit()
    if not pending or app.rebalancing:
        return
    tps = {TP(topic, partition): offset for (topic, partition), offset in pending.items()}
    try:
        await app.consumer._commit_offsets(tps, start_new_transaction=False)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # rebalance in progress, coordinator moving: next tick
        log.info("committing processed offsets failed (%r); retrying", exc)
        return
    offsets.committed(pending)


__all__ = ["handle_batch", "validate"]
