"""The one agent: decode at the edge -> engine -> send alerts and verdicts -> write state.

``validate`` consumes both input topics as one stream. For each message:

1. **decode** (:func:`stream.wire.decode_event`) and check that the message key is the
   payload's ``context_id``; a bad message is sent to the dead-letter topic with its
   original bytes, source topic/partition/offset and a one-line reason, and the agent
   moves on (an exception escaping a faust agent would ack the event *and* crash the
   agent — DESIGN.md §7.5 — so nothing escapes).
2. **engine**: :meth:`Engine.process` over an :class:`~stream.tables.OverlayState`, so
   the event's state changes wait in memory.
3. **send** the alerts and verdicts and wait until the broker acknowledged them.
4. **write state**: record the event's whole write set as one ``journal`` record, wait
   for its acknowledgement, then flush the overlay into the tables (changelog records);
   the first event of a context after a start or rebalance rolls that journal record
   forward, so a crash between two table writes never leaves a context half-updated.

Steps 3-before-4 are the at-least-once contract (DESIGN.md §7.6): a crash can only make
the worker re-process an event and re-send identical alerts (same ``alert_id``); it can
never record an event whose alerts were lost.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from typing import Any

import faust

from stream import topology
from stream.app import app, settings
from stream.domain.engine import Engine
from stream.domain.events import Source
from stream.errors import InvalidEvent
from stream.metrics import METRICS, NO_METRICS
from stream.tables import OverlayState, TableState
from stream.wire import dead_letter, decode_message, encode_alert, encode_dead_letter, encode_verdict

log = logging.getLogger("checkpoint_guard.agent")

engine = Engine(settings.seq_gap_limit)
state = TableState(topology.tables, topology.journal)
#: Contexts whose last journal record this process has rolled forward (reset on rebalance).
_rolled: set[str] = set()
#: Prometheus metrics (stream.metrics), derived from the engine's Output; CG_METRICS_ENABLED.
metrics = METRICS if settings.metrics_enabled else NO_METRICS
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


class StateWriteError(RuntimeError):
    """Writing an event's state to the tables failed (after its alerts were sent)."""


async def _send_acked(sends: list[tuple[Any, bytes | None, bytes]]) -> None:
    """Send (topic, key, value) records and wait for the broker's acks; retry forever.

    Retrying may duplicate records that were delivered before a failure: harmless, an
    alert's id is deterministic and consumers deduplicate by it.
    """
    delay = 0.2
    while True:
        try:
            futures = [await topic.send(key=key, value=value) for topic, key, value in sends]
            await asyncio.gather(*futures)
            return
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # broker unavailable, timeouts: keep the event, retry
            log.warning("sending outputs failed (%r, cause %r); retrying in %.1fs", exc, exc.__cause__, delay)
            await asyncio.sleep(delay)
            delay = min(delay * 2, SEND_RETRY_MAX_DELAY)


async def _flush_all() -> None:
    """Wait until every record handed to the producer so far is acknowledged.

    faust's ``Producer.flush()`` alone is not enough: its buffer flush gives up after
    0.1 s without a send (``flush_atmost``), which under load left the journal record
    in faust's buffer — a kill -9 then lost it while the event's offset was committed.
    """
    buffer = app.producer.buffer
    while buffer.size:
        await buffer.flush()
    await app.producer.flush()


async def handle(message: Any) -> list[dict[str, Any]]:
    """Process one Kafka message end to end; returns the alerts it produced."""
    received = time.perf_counter()
    source = Source(message.topic, message.partition, message.offset)
    counters["events"] += 1
    try:
        event = decode_message(message.key, message.value, max_bytes=settings.max_message_bytes)
    except InvalidEvent as exc:
        counters["dead_letters"] += 1
        record = dead_letter(
            message.value, str(exc), key=message.key,
            topic=message.topic, partition=message.partition, offset=message.offset,
        )
        log.info("dead letter %s[%s]@%s: %s", message.topic, message.partition, message.offset, exc)
        await _send_acked([(topology.dead_letters, message.key, encode_dead_letter(record))])
        metrics.dead_letter(_TOPIC_TYPE.get(message.topic, "unknown"), str(exc),
                            message.topic, message.partition, message.offset)
        return []

    if event.context_id not in _rolled:
        # First touch since start/rebalance: finish a write set a crash may have cut.
        # The journal record is re-sent and acknowledged first: the local store may hold
        # one the broker never got, and an older one must never be rolled forward later.
        rec = state.rewrite_journal(event.context_id)
        if rec is not None:
            await _flush_all()
            state.apply_journal(rec)
        _rolled.add(event.context_id)
    overlay = OverlayState(state)
    out = engine.process(overlay, event, source)
    observed = metrics.measure(event, out, state)  # the touched nodes as they were (not flushed yet)
    key = event.context_id.encode("utf-8")
    sends = [(topology.checkpoint_alerts, key, encode_alert(a)) for a in out.alerts]
    sends += [(topology.checkpoint_verdicts, key, encode_verdict(v)) for v in out.verdicts]
    if sends:
        await _send_acked(sends)
    acked = time.perf_counter()
    try:
        write_set = overlay.write_set()
        if write_set:
            state.record_journal(event.context_id, event.event_id, write_set)
            await _flush_all()  # the journal record is acknowledged before any key
        overlay.flush()
    except Exception as exc:
        raise StateWriteError(f"could not record event {event.event_id!r} in the tables") from exc
    counters["alerts"] += len(out.alerts)
    counters["verdicts"] += len(out.verdicts)
    counters["duplicates"] += out.duplicates
    counters["dropped"] += out.dropped
    metrics.record(observed, topic=message.topic, partition=message.partition, offset=message.offset,
                   received=received, acked=acked)
    return out.alerts


@app.on_partitions_assigned.connect
async def _forget_rolled(app: Any, assigned: Any = None, **kwargs: Any) -> None:
    """After a rebalance another worker may have left a write set half-applied."""
    _rolled.clear()


@app.agent(topology.input_events, name="validate")
async def validate(stream: faust.StreamT) -> None:
    """Validate every checkpoint on arrival and whenever the store changes under it."""
    async for event in stream.events():
        try:
            await handle(event.message)
        except asyncio.CancelledError:
            raise
        except StateWriteError as exc:
            # Infrastructure, not input: stop the worker *without* acking this event, so
            # a restart re-processes it (its alerts were sent; they repeat, same ids).
            # Returning from the agent would ack it; wait here to be cancelled instead.
            log.critical("%s: %r; stopping the worker", exc, exc.__cause__)
            await app.crash(exc)
            await asyncio.Event().wait()
        except Exception:  # a bug, not bad input: log loudly, never crash the agent
            counters["dead_letters"] += 1
            log.exception("unexpected error on %s[%s]@%s", event.message.topic,
                          event.message.partition, event.message.offset)
            record = dead_letter(
                event.message.value, f"internal error: {sys.exc_info()[0].__name__}",
                key=event.message.key, topic=event.message.topic,
                partition=event.message.partition, offset=event.message.offset,
            )
            await _send_acked([(topology.dead_letters, event.message.key, encode_dead_letter(record))])
            metrics.dead_letter(_TOPIC_TYPE.get(event.message.topic, "unknown"), record["reason"],
                                event.message.topic, event.message.partition, event.message.offset)


__all__ = ["handle", "validate"]
