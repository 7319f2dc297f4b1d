"""The worker's moving parts, wired: the batch handler, rebalance hooks, the commit timer.

The host (:mod:`stream.worker.host`) hands every batch of input records to
:meth:`Runtime.handle`, which, per input partition number:

1. waits until its state is restored (:meth:`~stream.worker.durability.Durability.ready`);
   records of partitions no longer assigned here are dropped (their new owner reads them);
2. keeps the records its state does not cover, gaps read back
   (:meth:`~stream.worker.durability.Durability.uncovered`), and merges the two input
   topics in the contract's order (:class:`~stream.worker.merge.TopicMerge`);
3. :func:`stream.worker.handler.plan` (decode -> engine -> outputs), then sends the
   outputs (without waiting: the next commit waits for their acknowledgements).

More (the module notes): docs/DURABILITY.md, section ``stream/worker/runtime.py``.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any

from stream import native
from stream.domain.engine import Engine
from stream.errors import DurabilityError
from stream.kafka_clients import admin, consumer, max_message_bytes, producer
from stream.settings import Settings
from stream.wire import Limits
from stream.worker.durability import Durability, Partition
from stream.worker.gaps import Gaps
from stream.worker.handler import plan
from stream.worker.host import Host
from stream.worker.merge import TopicMerge
from stream.worker.metrics import NO_METRICS, Metrics
from stream.worker.outputs import BATCH_OVERHEAD, Outputs

log = logging.getLogger("checkpoint_guard.agent")

#: Exit status when state or outputs cannot be written (EX_SOFTWARE); a supervisor restarts.
STATE_WRITE_EXIT = 70
#: The producer's batch size, unless an output topic's limit is lower: a batch's outputs of
#: one topic partition fit one record batch (aiokafka's default 16 KiB held a handler
#: batch at each full one until the one before was sent: a round trip each).
PRODUCER_BATCH_BYTES = 256 << 10
#: ``gc.set_threshold`` while the worker runs: a young collection once the tracked objects grow
#: by 1M (net of those freed), an older one every 10 of those. At 50,000 the collector took 9%
#: of the worker's CPU samples on the synthetic stream; at 1M about 10% less CPU per event
#: (bench/README "Issue 25, fifth round").
GC_THRESHOLDS = (1_000_000, 10, 10)
#: The state log's producer lingers: a commit sends its records one by one.
STATE_LOG_LINGER_MS = 5


class Runtime:
    """Everything the agent needs, built from the settings (one per worker process)."""

    def __init__(self, host: Host, settings: Settings) -> None:
        self.host = host
        self.settings = settings
        self.engine = Engine(settings.seq_gap_limit, max_output_bytes=settings.max_output_bytes,
                             max_ledger=settings.max_ledger)
        self.limits = Limits.from_settings(settings)
        self.metrics: Any = Metrics(output_topics=settings.output_topics) if settings.metrics_enabled else NO_METRICS
        self.gaps = Gaps(settings)
        self.outputs = Outputs(settings, on_rejected=self.metrics.output_rejected)
        self.producer: Any = None  # outputs
        self.log_producer: Any = None  # the state log (durability)
        self.durability: Durability | None = None
        self.started = asyncio.Event()
        self.input_topics = frozenset(settings.input_topics)
        self.last_batch = 0.0  # monotonic end of the last batch handled
        self._announced = False  # the hot modules' status logged (at the first assignment)
        self.counters = {"events": 0, "dead_letters": 0, "alerts": 0, "statuses": 0}
        # partition number -> (its Partition, the merge buffer of its two input topics)
        self._merges: dict[int, tuple[Partition, TopicMerge]] = {}
        if isinstance(self.metrics, Metrics):
            self.metrics.lag_source = self.consumer_lag

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        # The caches hold hundreds of thousands of long-lived objects: the cyclic GC's
        # default thresholds rescan them constantly (a quarter of the CPU in a profile);
        # they are frozen, and the young generation is collected rarely (GC_THRESHOLDS).
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        s = self.settings
        try:
            limits = await max_message_bytes(s, s.output_topics)
        except Exception as exc:  # no pre-check then: a rejection is found by the broker
            log.warning("could not read the output topics' max.message.bytes (%r)", exc)
            limits = {}
        # a batch of small records must fit the smallest limit too: the broker would reject
        # it whole, and the idempotent producer cannot send to that partition again
        batch = min([PRODUCER_BATCH_BYTES, *(limit - BATCH_OVERHEAD for limit in limits.values())])
        compression = None if s.producer_compression == "none" else s.producer_compression
        # Two producers, two connections: aiokafka keeps one request in flight per broker and
        # producer, so a commit's state-log write on the outputs' connection held every output
        # batch behind it (the latency bench's p99); the commit protocol orders the two by
        # waiting for acknowledgements, not by a shared producer.
        self.producer = producer(s, enable_idempotence=True, max_request_size=s.max_request_bytes,
                                 linger_ms=s.producer_linger_ms, max_batch_size=max(1024, batch),
                                 compression_type=compression)
        self.log_producer = producer(s, enable_idempotence=True, max_request_size=s.max_request_bytes,
                                     linger_ms=STATE_LOG_LINGER_MS, max_batch_size=PRODUCER_BATCH_BYTES,
                                     compression_type=compression)
        await self.producer.start()
        await self.log_producer.start()
        self.outputs = Outputs(s, self.producer, limits=limits, on_rejected=self.metrics.output_rejected)
        self.durability = Durability(
            s, outputs=self.outputs, producer=self.log_producer,
            # earliest: if a snapshot deletes the log under a restore, it goes on from the
            # snapshot (which replaces everything before it), never from the log's end
            consumer=lambda: consumer(s, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                                      max_partition_fetch_bytes=s.max_request_bytes),
            admin=lambda: admin(s),
            commit_offsets=self.host.commit_offsets,
            gaps=self.gaps,
            on_failure=lambda exc: _stop_on(exc, "a commit"),
        )
        self.started.set()

    async def stop(self) -> None:
        """Final commit, then close (the host's ``on_stop``)."""
        if self.durability is not None:
            try:
                await self.durability.close()
            except Exception:
                log.exception("the final commit failed; a restart re-processes from the last one")
        await self.gaps.close()
        for p in (self.producer, self.log_producer):
            if p is not None:
                await p.stop()

    # ------------------------------------------------------------------ rebalance
    def _numbers(self, tps: Iterable[Any]) -> set[int]:
        return {tp.partition for tp in tps if tp.topic in self.input_topics}

    async def on_assigned(self, assigned: Iterable[Any]) -> None:
        await self.started.wait()
        d = self.durability
        assert d is not None
        numbers = self._numbers(assigned)
        await self._revoke(set(d.assigned()) - numbers)
        d.assign(numbers, self.host.generation())
        if not self._announced:  # here, not in start(): faust sets up logging after the start callbacks
            self._announced = True
            log.info("hot modules: %s", native.status())  # README "Compiled hot modules"
        asyncio.ensure_future(self._rebuild_gauges_when_ready())

    async def on_revoked(self, revoked: Iterable[Any]) -> None:
        await self._revoke(self._numbers(revoked))

    async def _revoke(self, numbers: set[int]) -> None:
        if self.durability is None or not numbers:
            return
        try:
            await self.durability.revoke(numbers)
        except DurabilityError as exc:  # on_failure stopped the worker already
            stop_now(exc)
        for p in numbers:
            self._merges.pop(p, None)  # held records are not in the state: the new owner reads them

    async def _rebuild_gauges_when_ready(self) -> None:
        d = self.durability
        if d is None or not isinstance(self.metrics, Metrics):
            return
        t0 = time.perf_counter()
        try:  # the stores then hold every write the gauges count
            n = await d.at_commit(self.metrics.state.rebuild)
        except DurabilityError as exc:
            stop_now(exc)
        except Exception:  # metrics must never break a rebalance
            log.exception("could not rebuild the state gauges from the stores")
            return
        log.info("metrics: state gauges rebuilt from %d nodes of partitions %s in %.1f ms",
                 n, d.owned(), (time.perf_counter() - t0) * 1000)

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
        topics = self.input_topics
        for m in events:
            if m.topic in topics:
                by_partition.setdefault(m.partition, []).append(m)
        async with d.batch():
            for number, messages in by_partition.items():
                part = await d.ready(number)
                if part is None:
                    continue  # not ours (any more): its owner reads these records
                merge = self._merge(part)
                fresh = await d.uncovered(part, messages, merge.fetched)
                merge.received(fresh)
                messages = merge.release(fresh, functools.partial(self._caught_up, part, merge))
                if messages:
                    await self._process(part, messages, received)
        self.last_batch = time.monotonic()

    def _merge(self, part: Partition) -> TopicMerge:
        """The merge buffer of ``part`` (a new one when the partition was assigned anew)."""
        entry = self._merges.get(part.number)
        if entry is None or entry[0] is not part:
            entry = self._merges[part.number] = (part, TopicMerge(self.settings.input_topics))
        return entry[1]

    async def _process(self, part: Partition, messages: Sequence[Any], received: float) -> None:
        result = plan(self.engine, part, messages, self.outputs, self.limits)
        await self.outputs.send(result.outputs)
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

    def _caught_up(self, part: Partition, merge: TopicMerge, topic: str) -> bool:
        """Has this worker received every record of ``topic``'s partition the broker had at its last fetch?"""
        high = self.host.highwater(topic, part.number)
        if high is None:
            return False
        position = merge.fetched.get(topic, part.next_offset(topic))
        return position is not None and position >= high

    async def tick(self) -> None:
        """The timer: records held past ``CG_MAX_IDLE`` go on; commit when the interval elapsed, also while idle."""
        d = self.durability
        if d is None or d.busy:
            return  # a batch is being handled: it commits when due, and held records wait one more tick
        try:
            now = time.monotonic()
            idle = now - self.last_batch >= self.settings.max_idle  # nothing more is on its way
            async with d.batch():
                for part, merge in list(self._merges.values()):
                    if idle and merge.waiting(now, self.settings.max_idle) and d.partition(part.number) is part:
                        messages = merge.release((), lambda topic: False, force=True)
                        if messages:
                            await self._process(part, messages, time.perf_counter())
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
            part = d.partition(number)
            if part is None:
                continue
            for topic in self.settings.input_topics:
                high = self.host.highwater(topic, number)
                position = part.next_offset(topic)
                if high is not None and position is not None:
                    out[(topic, number)] = max(0, high - position)
        return out


def _topic_type(topic: str, settings: Settings) -> str:
    return {settings.compaction_topic: "checkpoint", settings.artifact_topic: "artifact"}.get(topic, "unknown")


def _stop_on(exc: BaseException, what: str) -> None:
    """``what`` (a batch, the timer, a commit in flight) failed: stop without committing
    past it; anything but a state / output write failure is a bug, logged with its traceback."""
    if not isinstance(exc, DurabilityError):
        log.error("%s failed", what, exc_info=exc)
    stop_now(exc)


def stop_now(exc: BaseException) -> None:
    """Exit at once without committing: a restart re-processes from the last commit and
    re-sends identical outputs (a graceful stop could commit what was never recorded)."""
    log.critical("%s: %r; stopping the worker (exit %d)", exc, exc.__cause__, STATE_WRITE_EXIT)
    logging.shutdown()
    sys.stderr.flush()
    os._exit(STATE_WRITE_EXIT)
