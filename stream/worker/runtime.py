"""The worker's moving parts, wired: the batch handler, rebalance hooks, the commit timer.

The agent (:mod:`stream.worker.app`) hands every batch to :meth:`Runtime.handle`:

1. per input partition number, wait until its state is restored
   (:meth:`~stream.worker.durability.Durability.ready`); drop records of partitions no
   longer assigned here (their new owner reads them);
2. put the partition's records in offset order against the offsets its state covers:
   a record already covered is skipped, a gap is read back (:mod:`stream.worker.gaps`);
   merge the two input topics by record timestamp (:meth:`Runtime._merged`);
3. :func:`stream.worker.handler.plan` (decode -> engine -> outputs), then send the
   outputs (without waiting: the next commit waits for their acknowledgements);
4. commit when due (:meth:`~stream.worker.durability.Durability.commit`).

An exception out of the handler is infrastructure, not input (bad input is a dead
letter): the process exits at once (status 70) without committing, and a restart
re-processes from the last commit.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any

from stream.domain.engine import Engine
from stream.kafka_clients import admin, consumer, max_message_bytes, producer
from stream.settings import Settings
from stream.wire import Limits
from stream.worker import compat
from stream.worker.durability import Durability, OutputRejected, StateWriteError
from stream.worker.gaps import Gaps
from stream.worker.handler import Outputs, plan
from stream.worker.metrics import NO_METRICS, Metrics

log = logging.getLogger("checkpoint_guard.agent")

#: Exit status when state or outputs cannot be written (EX_SOFTWARE); a supervisor restarts.
STATE_WRITE_EXIT = 70
#: Records one partition number may hold for the other input topic before they go on anyway.
HELD_MAX = 20_000


class Runtime:
    """Everything the agent needs, built from the settings (one per worker process)."""

    def __init__(self, app: Any, settings: Settings) -> None:
        self.app = app
        self.settings = settings
        self.engine = Engine(settings.seq_gap_limit, max_output_bytes=settings.max_output_bytes,
                             max_ledger=settings.max_ledger)
        self.limits = Limits.from_settings(settings)
        self.outputs = Outputs(settings)
        self.metrics: Any = Metrics(output_topics=settings.output_topics) if settings.metrics_enabled else NO_METRICS
        self.gaps = Gaps(settings)
        self.producer: Any = None
        self.durability: Durability | None = None
        self.started = asyncio.Event()
        self.input_topics = frozenset(settings.input_topics)
        self.last_batch = 0.0  # monotonic end of the last batch handled
        self.counters = {"events": 0, "dead_letters": 0, "alerts": 0, "statuses": 0}
        if isinstance(self.metrics, Metrics):
            self.metrics.lag_source = self.consumer_lag

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        # The caches hold hundreds of thousands of long-lived objects: the cyclic GC's
        # default thresholds rescan them constantly (a quarter of the CPU in a profile).
        gc.collect()
        gc.freeze()
        gc.set_threshold(50_000, 50, 100)
        s = self.settings
        self.producer = producer(s, enable_idempotence=True, max_request_size=s.max_request_bytes,
                                 linger_ms=s.producer_linger_ms)
        await self.producer.start()
        self.durability = Durability(
            s, producer=self.producer,
            # earliest: if a snapshot deletes the log under a restore, it goes on from the
            # snapshot (which replaces everything before it), never from the log's end
            consumer=lambda: consumer(s, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                                      max_partition_fetch_bytes=s.max_request_bytes),
            admin=lambda: admin(s),
            commit_offsets=lambda offsets: compat.commit_offsets(self.app, offsets),
            dead_letter=self.outputs.dead_letter,
            start_offset=self.gaps.start_offset,
            on_rejected=self.metrics.output_rejected,
        )
        self.durability.on_commit_failed = lambda exc: _stop_on(exc, "a commit")
        try:
            self.durability.outputs.limits = await max_message_bytes(s, s.output_topics)
        except Exception as exc:  # no pre-check then: a rejection is found by the broker
            log.warning("could not read the output topics' max.message.bytes (%r)", exc)
        self.started.set()

    async def stop(self) -> None:
        """Final commit, then close (the app's ``on_before_shutdown``)."""
        if self.durability is not None:
            try:
                await self.durability.close()
            except Exception:
                log.exception("the final commit failed; a restart re-processes from the last one")
        await self.gaps.close()
        if self.producer is not None:
            await self.producer.stop()

    # ------------------------------------------------------------------ rebalance
    def _numbers(self, tps: Iterable[Any]) -> set[int]:
        return {tp.partition for tp in tps if tp.topic in self.input_topics}

    async def on_assigned(self, assigned: Iterable[Any]) -> None:
        await self.started.wait()
        d = self.durability
        assert d is not None
        numbers = self._numbers(assigned)
        await d.revoke(set(d.partitions) - numbers)
        d.assign(numbers, self.app.consumer_generation_id)
        asyncio.ensure_future(self._rebuild_gauges_when_ready())

    async def on_revoked(self, revoked: Iterable[Any]) -> None:
        if self.durability is not None:
            await self.durability.revoke(self._numbers(revoked))

    async def _rebuild_gauges_when_ready(self) -> None:
        d = self.durability
        if d is None or not isinstance(self.metrics, Metrics):
            return
        parts = list(d.partitions.values())
        await asyncio.gather(*(p.ready.wait() for p in parts))
        async with d.lock:
            try:
                await d._commit(d.committable())  # the stores then hold every write the gauges count
            except (StateWriteError, OutputRejected) as exc:
                stop_now(exc)
            stores = [p.store for p in d.committable()]
            t0 = time.perf_counter()
            try:
                n = self.metrics.state.rebuild(stores)
            except Exception:  # metrics must never break a rebalance
                log.exception("could not rebuild the state gauges from the stores")
                return
        log.info("metrics: state gauges rebuilt from %d nodes of partitions %s in %.1f ms",
                 n, sorted(d.partitions), (time.perf_counter() - t0) * 1000)

    # ------------------------------------------------------------------ the batch
    async def handle(self, events: Sequence[Any]) -> None:
        """One batch of input records (``topic``, ``partition``, ``offset``, ``key``,
        ``value``; module docstring). Exits the process on failure."""
        try:
            await self._handle(events)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug outside the engine: never commit past it
            _stop_on(exc, "handling a batch")

    async def _handle(self, events: Sequence[Any]) -> None:
        received = time.perf_counter()
        await self.started.wait()
        d = self.durability
        assert d is not None
        by_partition: dict[int, list[Any]] = {}
        for m in events:
            by_partition.setdefault(m.partition, []).append(m)
        async with d.lock:
            for number, messages in by_partition.items():
                part = await d.ready(number)
                if part is None:
                    continue  # not ours (any more): its owner reads these records
                messages = self._merged(part, await self._in_order(part, messages))
                if messages:
                    await self._process(part, messages, received)
            if d.due():
                d.begin_commit(d.committable())
        self.last_batch = time.monotonic()

    async def _process(self, part: Any, messages: Sequence[Any], received: float) -> None:
        d = self.durability
        assert d is not None
        result = plan(self.engine, part, messages, self.outputs, self.limits)
        await d.outputs.send(result.outputs)
        sent = time.perf_counter()
        record = self.metrics.record
        for _, event, out in result.observed:
            record(event, out, received=received, sent=sent)
            self.counters["alerts"] += len(out.alerts)
            self.counters["statuses"] += len(out.statuses)
        for message, reason in result.dead:
            self.metrics.dead_letter(_topic_type(message.topic, self.settings), reason)
        self.counters["events"] += len(messages)
        self.counters["dead_letters"] += len(result.dead)

    async def _in_order(self, part: Any, messages: Sequence[Any]) -> list[Any]:
        """The partition's records not yet received, gaps read back, in offset order per topic."""
        out: list[Any] = []
        fetched = part.fetched
        for m in messages:
            topic = m.topic
            if topic not in self.input_topics:
                continue
            next_due = fetched.get(topic)
            if next_due is None:
                next_due = part.offsets.get(topic)
                if next_due is None:  # a partition without state: where the group stands
                    next_due = part.offsets[topic] = await self.gaps.start_offset(topic, part.number)
            if m.offset < next_due:
                continue  # already in the state or held (a redelivery after a rebalance or seek)
            if m.offset > next_due:
                out.extend(await self.gaps.read(topic, part.number, next_due, m.offset))
            out.append(m)
            fetched[topic] = m.offset + 1
        return out

    def _merged(self, part: Any, messages: Sequence[Any], *, force: bool = False) -> list[Any]:
        """Kafka Streams' timestamp synchronization over the two input topics of one
        partition number: records are released in record-timestamp order while both topics
        have some; one topic's records go on alone only when the other is caught up (all
        it has is received: next offset >= its high watermark), when the worker received
        nothing for ``CG_MAX_IDLE`` (``force``, from the timer: while batches arrive, the
        other topic's records are on their way), or past :data:`HELD_MAX` records. Without it one topic's
        fetched backlog is applied before the other's (a 1 MB fetch holds thousands of
        artifacts but few checkpoints) and a context's events wait for their ``seq`` until
        ``CG_SEQ_GAP_LIMIT`` declares a gap that is not there."""
        held = part.held
        if not held:
            if not messages:
                return []
            topics = {m.topic for m in messages}
            if len(topics) == 1 and self._caught_up(part, self._other(next(iter(topics)))):
                return list(messages)  # the common case: nothing waits
            part.held_since = time.monotonic()
        for m in messages:
            q = held.get(m.topic)
            if q is None:
                q = held[m.topic] = deque()
            q.append(m)
        first, second = self.settings.input_topics
        a, b = held.get(first) or deque(), held.get(second) or deque()
        out: list[Any] = []
        while a and b:
            out.append(a.popleft() if _timestamp(a[0]) <= _timestamp(b[0]) else b.popleft())
        if force or len(a) + len(b) > HELD_MAX:
            out.extend(a)
            out.extend(b)
            a.clear()
            b.clear()
        elif a and self._caught_up(part, second):
            out.extend(a)
            a.clear()
        elif b and self._caught_up(part, first):
            out.extend(b)
            b.clear()
        held.clear()
        if a:
            held[first] = a
        if b:
            held[second] = b
        if held and out:
            part.held_since = time.monotonic()
        return out

    def _other(self, topic: str) -> str:
        first, second = self.settings.input_topics
        return second if topic == first else first

    def _caught_up(self, part: Any, topic: str) -> bool:
        """Has this worker received every record of ``topic``'s partition the broker had at its last fetch?"""
        high = compat.highwater(self.app, topic, part.number)
        if high is None:
            return False
        position = part.fetched.get(topic, part.offsets.get(topic))
        return position is not None and position >= high

    async def tick(self) -> None:
        """The timer: records held past ``CG_MAX_IDLE`` go on; commit when the interval elapsed, also while idle."""
        d = self.durability
        if d is None or d.lock.locked():
            return  # a batch is being handled: it commits when due, and held records wait one more tick
        try:
            now = time.monotonic()
            idle = now - self.last_batch >= self.settings.max_idle  # nothing more is on its way
            waiting = [p for p in d.committable() if idle and p.held and now - p.held_since >= self.settings.max_idle]
            if waiting:
                async with d.lock:
                    for part in waiting:
                        if part.held and d.partitions.get(part.number) is part:
                            messages = self._merged(part, (), force=True)
                            if messages:
                                await self._process(part, messages, time.perf_counter())
            if d.due():
                async with d.lock:
                    d.begin_commit(d.committable())
        except Exception as exc:
            _stop_on(exc, "the timer")

    # ------------------------------------------------------------------ views
    def consumer_lag(self) -> dict[tuple[str, int], int]:
        """High watermark minus the next offset the state covers, per owned input partition."""
        d = self.durability
        out: dict[tuple[str, int], int] = {}
        if d is None:
            return out
        for number in d.owned():
            part = d.partitions.get(number)
            if part is None:
                continue
            for topic in self.settings.input_topics:
                high = compat.highwater(self.app, topic, number)
                position = part.offsets.get(topic)
                if high is not None and position is not None:
                    out[(topic, number)] = max(0, high - position)
        return out


def _timestamp(m: Any) -> int:
    return getattr(m, "timestamp", None) or 0


def _topic_type(topic: str, settings: Settings) -> str:
    return {settings.compaction_topic: "checkpoint", settings.artifact_topic: "artifact"}.get(topic, "unknown")


def _stop_on(exc: BaseException, what: str) -> None:
    """``what`` (a batch, the timer, a commit in flight) failed: stop without committing
    past it; anything but a state / output write failure is a bug, logged with its traceback."""
    if not isinstance(exc, (StateWriteError, OutputRejected)):
        log.error("%s failed", what, exc_info=exc)
    stop_now(exc)


def stop_now(exc: BaseException) -> None:
    """Exit at once without committing: a restart re-processes from the last commit and
    re-sends identical outputs (a graceful stop could commit what was never recorded)."""
    log.critical("%s: %r; stopping the worker (exit %d)", exc, exc.__cause__, STATE_WRITE_EXIT)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(STATE_WRITE_EXIT)
