"""The worker's one durability object: coverage, the commit protocol, restore, fencing, snapshots.

Every assigned input partition number has a :class:`Partition` (its engine state and the
input offsets that state covers), written only here. A commit — every
``CG_COMMIT_INTERVAL`` s or ``CG_COMMIT_MAX_EVENTS`` events, on revoke, on stop — is
*taken* at once (the outputs sent so far, each partition's dirty writes and the offsets
they cover) and finished in the background, one at a time: (1) outputs acknowledged,
(2) one state-log record per partition, awaited, (3) RocksDB, (4) the group offsets.
A failed commit stops the worker (``on_failure``); nothing the state log has not
recorded is ever committed. Restore writes a fence of the group generation and reads
the log up to it (a zombie's later records are ignored by generation). Records below
the covered offsets are skipped; a gap above them is read back first
(:meth:`Durability.uncovered`). The protocol, restore and snapshots are told in
docs/DURABILITY.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from aiokafka import TopicPartition
from aiokafka.errors import MessageSizeTooLargeError, TopicAuthorizationFailedError

from stream.domain.events import Event, Source
from stream.errors import RestoreFailed, StateWriteError
from stream.retry import backoff
from stream.settings import Settings
from stream.worker import statelog
from stream.worker.outputs import SEND_RETRY_MAX_DELAY, Outputs, is_error
from stream.worker.store import PartitionState, PartitionStore, partition_path

log = logging.getLogger("checkpoint_guard.durability")

T = TypeVar("T")


class GapReader(Protocol):
    """Input records the consumer did not deliver (:class:`stream.worker.gaps.Gaps`)."""

    async def start_offset(self, topic: str, partition: int) -> int: ...

    async def read(self, topic: str, partition: int, start: int, end: int) -> list[Any]: ...


class Partition:
    """One assigned input partition number: its engine state and what its durable state covers.

    Every field is written in this module; the batch handler reports what it applied
    through :meth:`advance`, :meth:`applied` and :meth:`roll_back`.
    """

    def __init__(self, number: int, state: PartitionState, store: PartitionStore) -> None:
        self.number = number
        self.state = state
        self.store = store
        self._generation = -1
        self._n = 0  # next commit number
        self._log_offset = -1  # last state-log offset applied to the store
        self._offsets: dict[str, int] = {}  # input topic -> next offset the state expects
        self._events = 0  # events since the last commit taken
        self._since_snapshot = 0  # log entries since the last snapshot (or the log start)
        self._snapshot_entries = 0  # entries the last snapshot held (the state's size then)
        self._applied: list[tuple[Event, Source]] = []  # since the last commit taken (a rollback replays them)
        self._ready = asyncio.Event()
        self._restore_task: asyncio.Task[Any] | None = None
        self._failed: BaseException | None = None

    @property
    def is_ready(self) -> bool:
        """Restored (or failed to restore: :meth:`Durability.ready` raises then)."""
        return self._ready.is_set()

    @property
    def generation(self) -> int:
        return self._generation

    @property
    def next_commit(self) -> int:
        """The number the next commit of this partition gets."""
        return self._n

    @property
    def since_snapshot(self) -> int:
        """State-log entries since the last snapshot (or the log's start)."""
        return self._since_snapshot

    def next_offset(self, topic: str) -> int | None:
        """The next offset of ``topic`` the state expects (None: no state of it yet)."""
        return self._offsets.get(topic)

    def covered(self) -> dict[str, int]:
        """Input topic -> the next offset the state expects (a copy)."""
        return dict(self._offsets)

    # ------------------------------------------------------------------ the handler's reports
    def advance(self, message: Any) -> None:
        """The state now covers input record ``message`` (applied or dead-lettered)."""
        self._offsets[message.topic] = message.offset + 1
        self._events += 1

    def applied(self, event: Event, source: Source) -> None:
        """``event`` was applied since the last commit (a :meth:`roll_back` applies it again)."""
        self._applied.append((event, source))

    def roll_back(self, apply: Callable[[Event, Source], Any]) -> None:
        """Back to the last commit taken, then ``apply`` each event applied since (an
        event that raises now is dropped, logged)."""
        self.state.forget()
        kept: list[tuple[Event, Source]] = []
        for event, source in self._applied:
            try:
                apply(event, source)
            except Exception:  # pragma: no cover - it did not raise the first time
                log.exception("replaying %s after a rollback raised; it is dropped", event.event_id)
                continue
            kept.append((event, source))
        self._applied = kept


#: A taken commit's part for one partition: (partition, entries, state-log records, offsets covered).
_Taken = tuple[Partition, list[list[Any]], list[bytes], dict[str, int]]


class _StoreSink:
    """Replay into a store, batch by batch (:class:`stream.worker.statelog.Sink`)."""

    def __init__(self, store: PartitionStore) -> None:
        self.store = store
        self.entries = 0
        self.offsets: dict[str, int] | None = None
        self.n = 0

    def apply(self, entries: Sequence[list[Any]]) -> None:
        self.store.write(entries, {})
        self.entries += len(entries)

    def clear(self) -> None:
        self.store.clear()

    def covered(self, offsets: dict[str, int], generation: int, n: int) -> None:
        self.offsets = offsets
        self.n = n + 1


class Durability:
    """The commit protocol for every assigned partition (module docstring).

    ``outputs``: the worker's :class:`~stream.worker.outputs.Outputs` (step 1);
    ``producer``: an aiokafka producer (acks=all) for the state log; ``consumer`` /
    ``admin``: factories of group-less aiokafka consumers / admin clients;
    ``commit_offsets({(topic, p): offset})``: the consumer group's commit (the host's);
    ``gaps``: reads input records back and says where a partition without state starts;
    ``on_failure(exc)``: called once a commit failed (the worker stops: nothing after it
    may be committed).
    """

    def __init__(self, settings: Settings, *, outputs: Outputs, producer: Any, consumer: Callable[[], Any],
                 admin: Callable[[], Any], commit_offsets: Callable[[dict[tuple[str, int], int]], Awaitable[Any]],
                 gaps: GapReader, on_failure: Callable[[BaseException], None] = lambda exc: None) -> None:
        self.settings = settings
        self.topic = settings.state_topic
        self._outputs = outputs
        self._producer = producer
        self._consumer = consumer
        self._admin = admin
        self._commit_offsets = commit_offsets
        self._gaps = gaps
        self._on_failure = on_failure
        self._partitions: dict[int, Partition] = {}
        self._lock = asyncio.Lock()  # one batch / commit take / rebalance step at a time
        self._last_commit = time.monotonic()
        self._committing: asyncio.Future[Any] | None = None  # the commit in flight (steps 1-4)
        self.commits = 0
        self.restored_entries = 0

    # ------------------------------------------------------------------ assignment
    def assign(self, numbers: Iterable[int], generation: int) -> None:
        """Start restoring newly assigned partitions (processing of each waits for it)."""
        for p in sorted(numbers):
            if p in self._partitions:
                continue
            store = PartitionStore(partition_path(self.settings.state_dir, p))
            part = Partition(p, PartitionState(store, self.settings.state_cache_entries), store)
            part._restore_task = asyncio.ensure_future(self._restore(part, generation))
            self._partitions[p] = part

    async def revoke(self, numbers: Iterable[int]) -> None:
        """Commit and close partitions that leave this worker (after the commit in flight)."""
        numbers = [p for p in numbers if p in self._partitions]
        if not numbers:
            return
        async with self._lock:
            await self._commit([self._partitions[p] for p in numbers if self._partitions[p].is_ready])
            for p in numbers:
                self._close(self._partitions.pop(p))

    async def close(self) -> None:
        """Commit what is pending and close every store (a graceful stop)."""
        async with self._lock:
            await self._commit(self._committable())
            for part in self._partitions.values():
                self._close(part)
            self._partitions.clear()

    @staticmethod
    def _close(part: Partition) -> None:
        if part._restore_task is not None and not part._restore_task.done():
            part._restore_task.cancel()
        part.store.close()

    # ------------------------------------------------------------------ what batches ask
    @contextlib.asynccontextmanager
    async def batch(self) -> AsyncIterator[None]:
        """Hold every partition still while a batch is applied (no commit is taken, no
        partition assigned or revoked meanwhile); at the end, begin a commit when due."""
        async with self._lock:
            yield
            if self._due():
                self._begin_commit(self._committable())

    @property
    def busy(self) -> bool:
        """A batch, a commit take or a rebalance step holds the partitions."""
        return self._lock.locked()

    async def ready(self, p: int) -> Partition | None:
        """Partition ``p`` once restored (None if not assigned here); raises
        :class:`~stream.errors.RestoreFailed` if its restore failed."""
        part = self._partitions.get(p)
        if part is None:
            return None
        if not part.is_ready:
            await part._ready.wait()
        if part._failed is not None:
            raise RestoreFailed(f"restoring partition {p} failed") from part._failed
        return part

    def partition(self, p: int) -> Partition | None:
        """Partition ``p`` if assigned here and restored (views, metrics; no waiting)."""
        part = self._partitions.get(p)
        return part if part is not None and part.is_ready and part._failed is None else None

    def owned(self) -> list[int]:
        """Assigned partition numbers whose state is restored."""
        return sorted(p for p, part in self._partitions.items() if part.is_ready)

    def assigned(self) -> list[int]:
        return sorted(self._partitions)

    def restoring(self) -> list[int]:
        """Assigned partition numbers whose state is not restored yet."""
        return sorted(p for p, part in self._partitions.items() if not part.is_ready)

    async def uncovered(self, part: Partition, messages: Sequence[Any], received: Mapping[str, int]) -> list[Any]:
        """The records of ``messages`` (one partition number, offset order per topic) that
        its state does not cover and the caller has not received yet (``received``: topic
        -> next offset after those it holds), each gap before one read back first: a
        record below the next offset due is skipped (a redelivery), one above it reveals
        records the consumer never delivered (faust drops some around a rebalance)."""
        out: list[Any] = []
        due: dict[str, int] = {}
        for m in messages:
            topic = m.topic
            next_due = due.get(topic)
            if next_due is None:
                next_due = received.get(topic)
                if next_due is None:
                    next_due = part._offsets.get(topic)
                    if next_due is None:  # a partition without state: where the group stands
                        next_due = part._offsets[topic] = await self._gaps.start_offset(topic, part.number)
            if m.offset < next_due:
                continue
            if m.offset > next_due:
                out.extend(await self._gaps.read(topic, part.number, next_due, m.offset))
            out.append(m)
            due[topic] = m.offset + 1
        return out

    async def commit(self) -> None:
        """A whole commit of every restored partition, awaited (after the one in flight)."""
        async with self._lock:
            await self._commit(self._committable())

    async def at_commit(self, read: Callable[[list[PartitionStore]], T]) -> T:
        """Wait for every restore, commit, and ``read(stores)`` before any batch goes on:
        the stores then hold every write (the metrics' rebuild of their gauges)."""
        await asyncio.gather(*(p._ready.wait() for p in list(self._partitions.values())))
        async with self._lock:
            await self._commit(self._committable())
            return read([p.store for p in self._committable()])

    async def settled(self) -> None:
        """Wait for the commit in flight, if any (its failure is raised)."""
        task, self._committing = self._committing, None
        if task is not None:
            await task

    def begin_commit(self) -> bool:
        """Take a commit of every restored partition now and finish it in the background
        (the caller holds :meth:`batch`). False (nothing taken) while the previous one is in flight."""
        return self._begin_commit(self._committable())

    # ------------------------------------------------------------------ restore
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
            sink = _StoreSink(part.store)
            replay = statelog.Replay(sink, meta["gen"] if meta["gen"] is not None else -1)
            await self._read_log(tp, local + 1, fence_offset, replay)
            offsets = dict(sink.offsets if sink.offsets is not None else (meta["offsets"] or {}))
            for topic in self.settings.input_topics:
                if topic not in offsets:
                    offsets[topic] = await self._gaps.start_offset(topic, part.number)
            part._generation = generation
            part._n = max(sink.n, meta["n"] or 0)
            part._offsets = offsets
            part._log_offset = fence_offset
            part._since_snapshot = replay.since_snapshot + ((meta.get("snap") or 0) if local >= start else 0)
            part._snapshot_entries = (replay.snapshot_entries if replay.snapshot_entries is not None
                                      else (meta.get("snapn") or 0))
            part.store.write([], {"log": fence_offset, "gen": replay.generation, "offsets": offsets, "n": part._n,
                                  "snap": part._since_snapshot})
            self.restored_entries += sink.entries
            log.info("partition %d: state restored (%d log entries) in %.2fs; generation %d, input offsets %s",
                     part.number, sink.entries, time.perf_counter() - started, generation, offsets)
        except asyncio.CancelledError as exc:  # revoked or stopping: never usable half-restored
            part._failed = exc
            raise
        except Exception as exc:
            log.exception("partition %d: restore failed", part.number)
            part._failed = exc
        finally:
            part._ready.set()

    async def _send_fence(self, p: int, generation: int) -> int:
        async def fence() -> int:
            return int((await (await self._producer.send(self.topic, statelog.fence(generation), partition=p))).offset)

        return await self._retrying(p, "writing the fence", fence)

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

        return await self._retrying(tp.partition, "reading the state log", bounds)

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
            await self._retrying(tp.partition, "reading the state log", read)

    async def _retrying(self, p: int, what: str, call: Callable[[], Awaitable[T]]) -> T:
        """Run ``call`` until it succeeds: a restore waits for the broker, never gives up
        (an authorization failure is final)."""
        delays = backoff(0.2, SEND_RETRY_MAX_DELAY)
        while True:
            try:
                return await call()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if is_error(exc, (TopicAuthorizationFailedError,)):
                    raise StateWriteError(f"{what} of partition {p} was refused ({self.topic!r}): {exc}") from exc
                delay = next(delays)
                log.warning("partition %d: %s failed (%r); retrying in %.1fs", p, what, exc, delay)
                await asyncio.sleep(delay)

    # ------------------------------------------------------------------ committing
    def _due(self) -> bool:
        """Is a commit due (interval elapsed or too many uncommitted events)?"""
        if time.monotonic() - self._last_commit >= self.settings.commit_interval:
            return True
        return any(p._events >= self.settings.commit_max_events for p in self._partitions.values())

    def _committable(self) -> list[Partition]:
        return [p for p in self._partitions.values() if p.is_ready and p._failed is None]

    async def _commit(self, parts: Sequence[Partition]) -> None:
        """Commit ``parts`` and wait for it (the caller holds the lock)."""
        await self.settled()  # a failure of the one in flight was reported already
        outputs, taken = self._take(parts)
        try:
            await self._finish(outputs, taken)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._on_failure(exc)
            raise

    def _begin_commit(self, parts: Sequence[Partition]) -> bool:
        task = self._committing
        if task is not None:
            if not task.done():
                return False
            self._committing = None
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]  # (on_failure was told already)
        outputs, taken = self._take(parts)
        if not outputs and not taken:
            self.commits += 1
            return True
        self._committing = task = asyncio.ensure_future(self._finish(outputs, taken))
        task.add_done_callback(self._finished)
        return True

    def _finished(self, task: asyncio.Future[Any]) -> None:
        if not task.cancelled() and task.exception() is not None:
            self._on_failure(task.exception())  # type: ignore[arg-type]

    def _take(self, parts: Sequence[Partition]) -> tuple[list[Any], list[_Taken]]:
        """Step 0, synchronous: the outputs sent so far and, per partition with news, its
        dirty writes, the input offsets they cover and the state-log records of them."""
        outputs = self._outputs.take()
        taken: list[_Taken] = []
        for part in parts:
            if not part._events and not part.state.dirty:
                continue
            entries = part.state.take_dirty()
            offsets = dict(part._offsets)
            records = statelog.commit_records(part._generation, part._n, offsets, entries,
                                              self.settings.state_chunk_bytes)
            part._n += 1
            part._events = 0
            part._applied.clear()
            taken.append((part, entries, records, offsets))
        self._last_commit = time.monotonic()
        return outputs, taken

    async def _finish(self, outputs: list[Any], taken: Sequence[_Taken]) -> None:
        """Steps 1-4 of a taken commit (module docstring), then the snapshots due."""
        await self._outputs.settle(outputs)
        if taken:
            last = await self._send_log([(part.number, records) for part, _, records, _ in taken])
            group: dict[tuple[str, int], int] = {}
            for (part, entries, _, offsets), offset in zip(taken, last):
                part._log_offset = offset
                part._since_snapshot += len(entries)
                part.store.write(entries, {"log": offset, "offsets": offsets, "n": part._n,
                                           "snap": part._since_snapshot})
                part.state.stored()
                group.update({(t, part.number): o for t, o in offsets.items()})
            try:
                await self._commit_offsets(group)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the state holds the offsets; the next commit retries
                log.info("committing the group offsets failed (%r); they follow at the next commit", exc)
            for part, _, _, offsets in taken:
                if part._since_snapshot > max(self.settings.snapshot_min_entries, 2 * part._snapshot_entries):
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
        delays = backoff(0.2, SEND_RETRY_MAX_DELAY)
        while True:
            futures = []
            try:
                for p, records in batches:
                    futures.append([await self._producer.send(self.topic, r, partition=p) for r in records])
                results = [await asyncio.gather(*fs) for fs in futures]
                return [res[-1].offset for res in results]
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if is_error(exc, (TopicAuthorizationFailedError, MessageSizeTooLargeError)):
                    raise StateWriteError(f"the state log {self.topic!r} refused a record: {exc!r}") from exc
                delay = next(delays)
                log.warning("writing the state log failed (%r); retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)

    async def _snapshot(self, part: Partition, offsets: dict[str, int]) -> None:
        """Write the whole partition state as stored (covering ``offsets``), then delete the log before it."""
        started = time.perf_counter()
        entries = list(part.store.entries())
        n, part._n = part._n, part._n + 1  # a failed snapshot's number is never reused
        records = statelog.commit_records(part._generation, n, offsets, entries,
                                          self.settings.state_chunk_bytes, snapshot=True)
        futures = [await self._producer.send(self.topic, r, partition=part.number) for r in records]
        results = await asyncio.gather(*futures)
        first = results[0].offset
        part._log_offset = results[-1].offset
        part._since_snapshot = 0
        part._snapshot_entries = len(entries)
        part.store.write([], {"log": part._log_offset, "n": part._n, "snap": 0, "snapn": len(entries)})
        try:
            admin = self._admin()
            await admin.start()
            try:
                from aiokafka.admin import RecordsToDelete

                await admin.delete_records({TopicPartition(self.topic, part.number): RecordsToDelete(first)})
            finally:
                await admin.close()
        except Exception as exc:  # the log keeps its older records: correct, only longer
            log.warning("partition %d: could not delete the log before the snapshot (%r)", part.number, exc)
        log.info("partition %d: snapshot of %d entries in %d record(s), %.2fs", part.number, len(entries),
                 len(records), time.perf_counter() - started)
