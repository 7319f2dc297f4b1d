"""The worker's one durability object: the commit protocol, restore, fencing, snapshots.

Every assigned input partition number ``p`` has a :class:`Partition`: its engine state
(:class:`~stream.worker.store.PartitionState`: RocksDB + caches), the input offsets its
state covers, and partition ``p`` of the state log ``<app_id>-state``
(:mod:`stream.worker.statelog`). The hot path only sends outputs; :meth:`Durability.commit`
(every ``CG_COMMIT_INTERVAL`` s or ``CG_COMMIT_MAX_EVENTS`` events, on revoke, on stop):

1. **outputs acknowledged** — every alert, status, verdict and dead letter sent since the
   last commit (transient failures resent; one the broker rejects by size dead-lettered);
2. **state durable, atomically** — per partition one record of every key written since
   the last commit (chunks + marker when large) with the input offsets it covers, awaited;
3. **local RocksDB** updated in one write batch (keys, log offset, input offsets);
4. **group offsets** committed to exactly those input offsets (the only committer).

A commit is *taken* under the lock (the outputs sent so far, each partition's dirty
writes and the input offsets they cover: no I/O) and finished in the background
(:meth:`Durability.begin_commit`): batches go on meanwhile, reading the taken writes
until RocksDB holds them; one commit is in flight at a time, and revoke / stop wait for
it. (Awaiting steps 1-4 under the lock held every event that arrived meanwhile: the
latency bench's p99 was the commit's 40-80 ms.) A crash anywhere re-processes from the last durable commit and re-sends identical
outputs (deterministic engine), never skips a record. Restore (on assignment): write a
fence of this generation, read the log from the local RocksDB's offset (or its start)
to the fence; records the consumer delivers below the covered input offsets are then
skipped (no seek: seeking a consumer that is fetching races aiokafka's fetcher). A zombie's later records carry
an older generation and are ignored by every replay. When the log since the last
snapshot holds twice the entries of the last snapshot (and ``CG_SNAPSHOT_MIN_ENTRIES``),
a snapshot of the partition is written and the records before it are deleted. Why a delta log and not a Kafka transaction: bench/bench_commit.py
(2.7x less wall time per commit, no transactional producer per partition).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition
from aiokafka.errors import MessageSizeTooLargeError, TopicAuthorizationFailedError

from stream.settings import Settings
from stream.worker import statelog
from stream.worker.store import PartitionState, PartitionStore

log = logging.getLogger("checkpoint_guard.durability")

SEND_RETRY_MAX_DELAY = 5.0
#: A record batch of one record: the batch header and the record's own framing (bytes).
_BATCH_OVERHEAD = 512


class StateWriteError(RuntimeError):
    """The state log could not be written for good; the worker stops without committing."""


class OutputRejected(RuntimeError):
    """The broker refused a record for a reason no input causes (authorization)."""


@dataclass(slots=True)
class OutputRecord:
    """An output to send: ``partition`` None = the key's default partitioner; ``source``:
    the input message (topic, partition, offset, key, value) dead-lettered in its place
    if the broker rejects the record by size."""

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None = None
    source: Any = None
    dead_letter: bool = False  # this record is a dead letter
    bare: bool = False  # ... without the input's bytes (the last resort)


def _is(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    return isinstance(exc, kinds) or isinstance(exc.__cause__, kinds)


class Outputs:
    """Outputs sent without waiting; :meth:`settle` waits for every acknowledgement.

    ``dead_letter(source, reason, keep_value=True)`` builds the dead letter of an input
    message (``dead_letter=True``; ``bare=True`` when ``keep_value`` is false).
    """

    def __init__(self, producer: Any, dead_letter: Callable[..., OutputRecord],
                 on_rejected: Callable[[str], None] = lambda topic: None) -> None:
        self.producer = producer
        self.dead_letter = dead_letter
        self.on_rejected = on_rejected
        self._inflight: list[tuple[OutputRecord, Any]] = []
        #: topic -> its max.message.bytes (read at start): a larger record is rejected
        #: before it is sent, so it never fails a batch of others and order is kept
        self.limits: dict[str, int] = {}

    async def send(self, records: Iterable[OutputRecord]) -> None:
        await self._enqueue(records, self._inflight)

    async def _enqueue(self, records: Iterable[OutputRecord], into: list[tuple[OutputRecord, Any]]) -> None:
        limits = self.limits
        for r in records:
            limit = limits.get(r.topic)
            if limit is not None and len(r.value) + len(r.key or b"") + _BATCH_OVERHEAD > limit:
                fut = asyncio.get_running_loop().create_future()
                fut.set_exception(MessageSizeTooLargeError(
                    f"{len(r.value)} bytes, over the topic's max.message.bytes {limit}"))
                into.append((r, fut))
                continue
            try:
                fut = await self.producer.send(r.topic, r.value, key=r.key, partition=r.partition)
            except Exception as exc:  # could not even enqueue (e.g. over the request size)
                fut = asyncio.get_running_loop().create_future()
                fut.set_exception(exc)
            into.append((r, fut))

    @property
    def pending(self) -> int:
        return len(self._inflight)

    def take(self) -> list[tuple[OutputRecord, Any]]:
        """The outputs sent so far, (record, future) each, for :meth:`settle`; later sends start a new list."""
        batch, self._inflight = self._inflight, []
        return batch

    async def settle(self, batch: list[tuple[OutputRecord, Any]]) -> None:
        """Wait until every output of ``batch`` (from :meth:`take`) is acknowledged,
        resending what failed (step 1 of a commit)."""
        delay = 0.2
        while batch:
            results = await asyncio.gather(*(f for _, f in batch), return_exceptions=True)
            retry: list[OutputRecord] = []
            failure: BaseException | None = None
            for (record, _), res in zip(batch, results):
                if isinstance(res, asyncio.CancelledError):
                    raise res
                if not isinstance(res, BaseException):
                    continue
                if _is(res, (TopicAuthorizationFailedError,)):
                    raise OutputRejected(f"the broker refused a record for {record.topic!r} ({res}); "
                                         "check the worker's ACLs") from res
                if _is(res, (MessageSizeTooLargeError,)):
                    # The broker refuses a whole batch for one record too large: each
                    # record of it is tried alone before it counts as rejected (when a
                    # topic's limit was lowered after the start: the order of the
                    # records of that batch relative to later ones is then not kept).
                    alone = await self._alone(record) if record.topic not in self.limits or len(
                        record.value) + len(record.key or b"") + _BATCH_OVERHEAD <= self.limits[record.topic] else res
                    if alone is None:
                        continue
                    self.on_rejected(record.topic)
                    log.error("the broker rejected a %d-byte record for %s (%s); dead-lettering its trigger",
                              len(record.value), record.topic, type(alone).__name__)
                    replacement = self._replacement(record, alone)
                    if replacement is not None:
                        retry.append(replacement)
                    continue
                failure = failure or res
                retry.append(record)
            if failure is not None:
                log.warning("sending %d record(s) failed (%r); retrying in %.1fs", len(retry), failure, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, SEND_RETRY_MAX_DELAY)
            batch = []
            await self._enqueue(retry, batch)

    async def _alone(self, record: OutputRecord) -> BaseException | None:
        """Send one record in a batch of its own; None once acknowledged, else its size error
        (any other error is retried here: the record is not too large)."""
        delay = 0.2
        while True:
            try:
                fut = await self.producer.send(record.topic, record.value, key=record.key, partition=record.partition)
                await fut
                return None
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if _is(exc, (MessageSizeTooLargeError,)):
                    return exc
                if _is(exc, (TopicAuthorizationFailedError,)):
                    raise OutputRejected(f"the broker refused a record for {record.topic!r} ({exc})") from exc
                log.warning("sending a record alone failed (%r); retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, SEND_RETRY_MAX_DELAY)

    def _replacement(self, record: OutputRecord, exc: BaseException) -> OutputRecord | None:
        """The dead letter that replaces a rejected record: with the input's bytes, or —
        when that dead letter is itself too large — with the reason only."""
        if record.source is None or record.bare:
            log.critical("dropping a record the broker rejects even as a bare dead letter (%s)", record.topic)
            return None
        reason = (f"output rejected: a {len(record.value)}-byte record for {record.topic} "
                  f"({type(exc).__name__}); raise the topic's max.message.bytes or lower CG_MAX_OUTPUT_BYTES")
        return self.dead_letter(record.source, reason, keep_value=not record.dead_letter)


@dataclass
class Partition:
    """One assigned input partition number: its state and what its log holds."""

    number: int
    state: PartitionState
    store: PartitionStore
    generation: int = -1
    n: int = 0  # next commit number
    log_offset: int = -1  # last state-log offset applied to the store
    offsets: dict[str, int] = field(default_factory=dict)  # input topic -> next offset due
    events: int = 0  # events since the last commit
    since_snapshot: int = 0  # log entries since the last snapshot (or the log start)
    snapshot_entries: int = 0  # entries the last snapshot held (the state's size then)
    applied: list = field(default_factory=list)  # (event, source) since the last commit (a rollback replays them)
    held: dict[str, deque] = field(default_factory=dict)  # input topic -> records received, not yet processed
    held_since: float = 0.0  # monotonic time records began to be held, or last went on while some stayed
    fetched: dict[str, int] = field(default_factory=dict)  # input topic -> next offset after those received
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    restore_task: asyncio.Task | None = None
    failed: BaseException | None = None


class _StoreSink:
    """Replay into a store, batch by batch (:class:`stream.worker.statelog.Sink`)."""

    def __init__(self, store: PartitionStore, tables: int) -> None:
        self.store = store
        self.tables = tables
        self.entries = 0
        self.offsets: dict[str, int] | None = None
        self.n = 0

    def apply(self, entries: Sequence[list]) -> None:
        self.store.write(entries, {})
        self.entries += len(entries)

    def clear(self) -> None:
        self.store.clear()

    def covered(self, offsets: dict[str, int], generation: int, n: int) -> None:
        self.offsets = offsets
        self.n = n + 1


class Durability:
    """The commit protocol for every assigned partition (module docstring).

    ``producer``: an aiokafka producer (acks=all) for outputs and the state log;
    ``consumer``: factory of group-less aiokafka consumers; ``admin``: factory of admin
    clients; ``commit_offsets({(topic, p): offset})`` commits the consumer group's offsets
    (the group member's commit); ``start_offset(topic, p)``: where an input partition the
    state has never seen starts (the group's committed offset or the partition's start).
    """

    def __init__(self, settings: Settings, *, producer: Any, consumer: Callable[[], Any], admin: Callable[[], Any],
                 commit_offsets: Callable[[dict[tuple[str, int], int]], Awaitable[Any]],
                 dead_letter: Callable[..., OutputRecord],
                 start_offset: Callable[[str, int], Awaitable[int]] | None = None,
                 on_rejected: Callable[[str], None] = lambda topic: None) -> None:
        self.settings = settings
        self.topic = state_topic(settings)
        self.producer = producer
        self._consumer = consumer
        self._admin = admin
        self._commit_offsets = commit_offsets
        self._start_offset = start_offset
        self.outputs = Outputs(producer, dead_letter, on_rejected)
        self.partitions: dict[int, Partition] = {}
        self.lock = asyncio.Lock()  # one batch / commit start / rebalance step at a time
        self.last_commit = time.monotonic()
        self.commits = 0
        self._committing: asyncio.Task | None = None  # the commit in flight (begin_commit)
        #: called with the exception of a commit in flight that failed (the worker stops)
        self.on_commit_failed: Callable[[BaseException], None] = lambda exc: None
        self.restored_entries = 0

    # ------------------------------------------------------------------ assignment
    def assign(self, numbers: Iterable[int], generation: int) -> None:
        """Start restoring newly assigned partitions (processing waits for :meth:`ready`)."""
        for p in numbers:
            if p in self.partitions:
                continue
            path = Path(self.settings.data_dir) / "state" / f"p{p:05d}"
            store = PartitionStore(path)
            part = Partition(p, PartitionState(store, self.settings.state_cache_entries), store)
            part.restore_task = asyncio.ensure_future(self._restore(part, generation))
            self.partitions[p] = part

    async def revoke(self, numbers: Iterable[int]) -> None:
        """Commit and close partitions that leave this worker."""
        numbers = [p for p in numbers if p in self.partitions]
        if not numbers:
            return
        async with self.lock:
            await self._commit([self.partitions[p] for p in numbers if self.partitions[p].ready.is_set()])
            for p in numbers:
                part = self.partitions.pop(p)
                if part.restore_task is not None and not part.restore_task.done():
                    part.restore_task.cancel()
                part.store.close()

    async def ready(self, p: int) -> Partition | None:
        """The partition once restored (None if not assigned here)."""
        part = self.partitions.get(p)
        if part is None:
            return None
        if not part.ready.is_set():
            await part.ready.wait()
        if part.failed is not None:
            raise StateWriteError(f"restoring partition {p} failed") from part.failed
        return part

    def owned(self) -> list[int]:
        return sorted(p for p, part in self.partitions.items() if part.ready.is_set())

    async def _restore(self, part: Partition, generation: int) -> None:
        started = time.perf_counter()
        try:
            tp = TopicPartition(self.topic, part.number)
            meta = part.store.meta()
            local = meta["log"] if meta["log"] is not None else -1
            fence_offset = await self._send_fence(part.number, generation)
            start, _ = await self._log_bounds(tp)
            if local + 1 < start or local >= fence_offset:  # stale or foreign: rebuild
                if local >= 0:
                    log.warning("partition %d: local state (log offset %d) does not continue the state log "
                                "(%d..%d); rebuilding it", part.number, local, start, fence_offset)
                part.store.clear()
                meta = {"log": None, "gen": None, "offsets": None, "n": None, "snap": None, "snapn": None}
                local = start - 1
            sink = _StoreSink(part.store, 0)
            replay = statelog.Replay(sink, meta["gen"] if meta["gen"] is not None else -1)
            await self._read_log(tp, local + 1, fence_offset, replay)
            offsets = sink.offsets if sink.offsets is not None else (meta["offsets"] or {})
            part.generation = generation
            part.n = max(sink.n, meta["n"] or 0)
            part.offsets = dict(offsets)
            if self._start_offset is not None:
                for topic in self.settings.input_topics:
                    if topic not in part.offsets:
                        part.offsets[topic] = await self._start_offset(topic, part.number)
            part.log_offset = fence_offset
            part.since_snapshot = replay.since_snapshot + ((meta.get("snap") or 0) if local >= start else 0)
            part.snapshot_entries = (replay.snapshot_entries if replay.snapshot_entries is not None
                                     else (meta.get("snapn") or 0))
            part.store.write([], {"log": fence_offset, "gen": replay.generation, "offsets": part.offsets, "n": part.n,
                                  "snap": part.since_snapshot})
            self.restored_entries += sink.entries
            log.info("partition %d: state restored (%d log entries) in %.2fs; generation %d, input offsets %s",
                     part.number, sink.entries, time.perf_counter() - started, generation, part.offsets)
        except asyncio.CancelledError as exc:  # revoked or stopping: never usable half-restored
            part.failed = exc
            raise
        except Exception as exc:
            log.exception("partition %d: restore failed", part.number)
            part.failed = exc
        finally:
            part.ready.set()

    async def _send_fence(self, p: int, generation: int) -> int:
        delay = 0.2
        while True:
            try:
                md = await (await self.producer.send(self.topic, statelog.fence(generation), partition=p))
                return md.offset
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if _is(exc, (TopicAuthorizationFailedError,)):
                    raise OutputRejected(f"may not write the state log {self.topic!r}: {exc}") from exc
                log.warning("writing the fence of partition %d failed (%r); retrying", p, exc)
                await asyncio.sleep(delay)
                delay = min(delay * 2, SEND_RETRY_MAX_DELAY)

    async def _log_bounds(self, tp: TopicPartition) -> tuple[int, int]:
        async def bounds() -> tuple[int, int]:
            c = self._consumer()
            try:  # stop() also when start() failed: no "Unclosed AIOKafkaConsumer" at exit
                await c.start()
                start = (await c.beginning_offsets([tp]))[tp]
                end = (await c.end_offsets([tp]))[tp]
            finally:
                await c.stop()
            return start, end

        return await self._retrying(tp, bounds)

    async def _read_log(self, tp: TopicPartition, start: int, last: int, replay: statelog.Replay) -> None:
        """Feed records ``start..last`` (inclusive) of the log to ``replay``; a failed read
        (broker away) resumes after the last record fed."""
        nxt = start

        async def read() -> None:
            nonlocal nxt
            c = self._consumer()
            try:
                await c.start()
                c.assign([tp])
                c.seek(tp, nxt)
                while nxt <= last:
                    batch = await c.getmany(tp, timeout_ms=1000, max_records=10_000)
                    for rec in batch.get(tp, ()):
                        if rec.offset > last:
                            nxt = last + 1
                            break
                        if rec.offset >= nxt:
                            replay.feed(rec.value)
                            nxt = rec.offset + 1
                    else:
                        nxt = max(nxt, await c.position(tp))  # past holes (aborted batches, markers)
            finally:
                await c.stop()

        if start <= last:
            await self._retrying(tp, read)

    async def _retrying(self, tp: TopicPartition, call: Any) -> Any:
        """Run ``call`` until it succeeds: a restore waits for the broker, never gives up
        (an authorization failure is final)."""
        delay = 0.2
        while True:
            try:
                return await call()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if _is(exc, (TopicAuthorizationFailedError,)):
                    raise OutputRejected(f"may not read the state log {self.topic!r}: {exc}") from exc
                log.warning("partition %d: reading the state log failed (%r); retrying in %.1fs",
                            tp.partition, exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, SEND_RETRY_MAX_DELAY)

    # ------------------------------------------------------------------ committing
    def due(self) -> bool:
        """Is a commit due (interval elapsed or too many uncommitted events)?"""
        if time.monotonic() - self.last_commit >= self.settings.commit_interval:
            return True
        return any(p.events >= self.settings.commit_max_events for p in self.partitions.values())

    def committable(self) -> list[Partition]:
        return [p for p in self.partitions.values() if p.ready.is_set() and p.failed is None]

    async def commit(self) -> None:
        """A whole commit of every ready partition, awaited (after the one in flight)."""
        async with self.lock:
            await self._commit(self.committable())

    async def _commit(self, parts: Sequence[Partition]) -> None:
        """Commit ``parts`` and wait for it (revoke, stop); the caller holds the lock."""
        await self.settled()
        outputs, taken = self._take(parts)
        await self._finish(outputs, taken)

    async def settled(self) -> None:
        """Wait for the commit in flight, if any (its failure is raised)."""
        task, self._committing = self._committing, None
        if task is not None:
            await task

    def begin_commit(self, parts: Sequence[Partition]) -> bool:
        """Take a commit of ``parts`` and finish it in the background (the batch path and
        the timer; the caller holds the lock): batches go on while its outputs are
        acknowledged and its state written, and read its writes until the store holds
        them. False (nothing taken) while the previous one is still in flight; a failed
        previous one raises here (and went to :attr:`on_commit_failed`)."""
        task = self._committing
        if task is not None:
            if not task.done():
                return False
            self._committing = None
            task.result()
        outputs, taken = self._take(parts)
        if not outputs and not taken:
            self.commits += 1
            return True
        self._committing = task = asyncio.ensure_future(self._finish(outputs, taken))
        task.add_done_callback(self._finished)
        return True

    def _finished(self, task: asyncio.Task) -> None:
        if not task.cancelled() and task.exception() is not None:
            self.on_commit_failed(task.exception())  # type: ignore[arg-type]

    def _take(self, parts: Sequence[Partition]) -> tuple[list, list[tuple[Partition, list[list], list[bytes], dict]]]:
        """Step 0, synchronous: the outputs sent so far and, per partition with news, its
        dirty writes, the input offsets they cover and the state-log records of them."""
        outputs = self.outputs.take()
        taken = []
        for part in parts:
            if not part.events and not part.state.dirty:
                continue
            entries = part.state.take_dirty()
            offsets = dict(part.offsets)
            records = statelog.commit_records(part.generation, part.n, offsets, entries,
                                              self.settings.state_chunk_bytes)
            part.n += 1
            part.events = 0
            part.applied.clear()
            taken.append((part, entries, records, offsets))
        self.last_commit = time.monotonic()
        return outputs, taken

    async def _finish(self, outputs: list, taken: Sequence[tuple[Partition, list[list], list[bytes], dict]]) -> None:
        """Steps 1-4 of a taken commit (module docstring), then the snapshots due."""
        await self.outputs.settle(outputs)
        if taken:
            last = await self._send_log([(part.number, records) for part, _, records, _ in taken])
            group: dict[tuple[str, int], int] = {}
            for (part, entries, _, offsets), offset in zip(taken, last):
                part.log_offset = offset
                part.since_snapshot += len(entries)
                part.store.write(entries, {"log": offset, "offsets": offsets, "n": part.n,
                                           "snap": part.since_snapshot})
                part.state.stored()
                group.update({(t, part.number): o for t, o in offsets.items()})
            try:
                await self._commit_offsets(group)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the state holds the offsets; the next commit retries
                log.info("committing the group offsets failed (%r); they follow at the next commit", exc)
            for part, _, _, offsets in taken:
                if part.since_snapshot > max(self.settings.snapshot_min_entries, 2 * part.snapshot_entries):
                    try:
                        await self._snapshot(part, offsets)
                    except asyncio.CancelledError:
                        raise
                    except Exception as exc:  # a snapshot is an optimization: the log stays longer
                        log.warning("partition %d: snapshot failed (%r); retried after the next commits",
                                    part.number, exc)
        self.commits += 1

    async def _send_log(self, batches: Sequence[tuple[int, list[bytes]]]) -> list[int]:
        """Send each partition's records in order; the offset of each last one, acked."""
        delay = 0.2
        while True:
            futures = []
            try:
                for p, records in batches:
                    futures.append([await self.producer.send(self.topic, r, partition=p) for r in records])
                results = [await asyncio.gather(*fs) for fs in futures]
                return [res[-1].offset for res in results]
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if _is(exc, (TopicAuthorizationFailedError, MessageSizeTooLargeError)):
                    raise StateWriteError(f"the state log {self.topic!r} refused a record: {exc!r}") from exc
                log.warning("writing the state log failed (%r); retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, SEND_RETRY_MAX_DELAY)

    async def _snapshot(self, part: Partition, offsets: dict[str, int]) -> None:
        """Write the whole partition state as stored (covering ``offsets``), then delete the log before it."""
        started = time.perf_counter()
        entries = list(part.store.entries())
        n, part.n = part.n, part.n + 1  # a failed snapshot's number is never reused
        records = statelog.commit_records(part.generation, n, offsets, entries,
                                          self.settings.state_chunk_bytes, snapshot=True)
        first_offsets = []
        futures = [await self.producer.send(self.topic, r, partition=part.number) for r in records]
        results = await asyncio.gather(*futures)
        first_offsets.append(results[0].offset)
        part.log_offset = results[-1].offset
        part.since_snapshot = 0
        part.snapshot_entries = len(entries)
        part.store.write([], {"log": part.log_offset, "n": part.n, "snap": 0, "snapn": len(entries)})
        try:
            admin = self._admin()
            await admin.start()
            try:
                from aiokafka.admin import RecordsToDelete

                await admin.delete_records({TopicPartition(self.topic, part.number): RecordsToDelete(first_offsets[0])})
            finally:
                await admin.close()
        except Exception as exc:  # the log keeps its older records: correct, only longer
            log.warning("partition %d: could not delete the log before the snapshot (%r)", part.number, exc)
        log.info("partition %d: snapshot of %d entries in %d record(s), %.2fs", part.number, len(entries),
                 len(records), time.perf_counter() - started)

    async def close(self) -> None:
        """Commit what is pending and close every store (a graceful stop)."""
        async with self.lock:
            await self._commit(self.committable())
            for part in self.partitions.values():
                if part.restore_task is not None and not part.restore_task.done():
                    part.restore_task.cancel()
                part.store.close()
            self.partitions.clear()


def state_topic(settings: Settings) -> str:
    """The state log: ``<app_id>-state``, one partition per input partition number."""
    return f"{settings.app_id}-state"
