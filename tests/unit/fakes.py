"""In-memory stand-ins for the worker's infrastructure, for the commit-protocol unit tests.

:class:`FakeBroker` keeps every topic partition as a list and hands out aiokafka-shaped
producers, group-less consumers and admin clients over it; :meth:`FakeBroker.fail` makes
the next sends to a topic fail with a given error, :meth:`FakeBroker.hold` keeps their
acknowledgements back until :meth:`FakeBroker.release`. :class:`FakeHost` records the
group commits; :class:`Rig` runs the real durability object over them. Kafka *behaviour* is
tested against the real broker
(tests/integration/test_durability.py); these fakes only let each step of a commit fail
in turn (Quix Streams' ``TestCheckpoint``).
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka import TopicPartition

from stream.domain.engine import Engine
from stream.settings import Settings
from stream.wire import Limits
from stream.worker.durability import Durability
from stream.worker.handler import Plan, plan
from stream.worker.outputs import Outputs

CK = "compaction-events"


@dataclass
class Record:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    timestamp: int = 0


@dataclass
class Metadata:
    topic: str
    partition: int
    offset: int


@dataclass
class FakeBroker:
    partitions: int = 1
    logs: dict[tuple[str, int], list[Record]] = field(default_factory=lambda: defaultdict(list))
    starts: dict[tuple[str, int], int] = field(default_factory=lambda: defaultdict(int))
    failures: dict[str, list[BaseException]] = field(default_factory=lambda: defaultdict(list))
    #: topic -> records larger than this are refused (MessageSizeTooLargeError), like max.message.bytes
    limits: dict[str, int] = field(default_factory=dict)
    held: list[tuple[Record, asyncio.Future]] = field(default_factory=list)
    holding: set[str] = field(default_factory=set)
    sends: list[tuple[str, bytes]] = field(default_factory=list)
    #: errors the next admin ``delete_records`` calls raise, in order
    delete_failures: list[BaseException] = field(default_factory=list)

    # ------------------------------------------------------------------ faults
    def fail(self, topic: str, *errors: BaseException) -> None:
        """The next ``len(errors)`` sends to ``topic`` fail with these errors, in order."""
        self.failures[topic].extend(errors)

    def hold(self, topic: str) -> None:
        """Sends to ``topic`` are appended but not acknowledged until :meth:`release`."""
        self.holding.add(topic)

    def release(self) -> None:
        self.holding.clear()
        held, self.held = self.held, []
        for rec, fut in held:
            if not fut.done():
                fut.set_result(Metadata(rec.topic, rec.partition, rec.offset))

    # ------------------------------------------------------------------ reading
    def values(self, topic: str, partition: int = 0) -> list[bytes]:
        return [r.value for r in self.logs[(topic, partition)]]

    def records(self, topic: str) -> list[Record]:
        return [r for (t, _), recs in sorted(self.logs.items()) if t == topic for r in recs]

    def append(self, topic: str, partition: int, key: bytes | None, value: bytes, timestamp: int = 0) -> Record:
        log = self.logs[(topic, partition)]
        rec = Record(topic, partition, self.starts[(topic, partition)] + len(log), key, value, timestamp)
        log.append(rec)
        return rec

    # ------------------------------------------------------------------ clients
    def producer(self) -> FakeProducer:
        return FakeProducer(self)

    def consumer(self) -> FakeConsumer:
        return FakeConsumer(self)

    def admin(self) -> FakeAdmin:
        return FakeAdmin(self)


class FakeBatch:
    """aiokafka's BatchBuilder as the producer's ``create_batch`` returns it: full past ``size`` bytes."""

    def __init__(self, size: int = 16384) -> None:
        self.size = size
        self.records: list[tuple[bytes | None, bytes]] = []
        self.bytes = 0

    def append(self, *, timestamp: Any, key: bytes | None, value: bytes, headers: Any = ()) -> Any:
        n = len(value) + len(key or b"")
        if self.records and self.bytes + n > self.size:
            return None
        self.records.append((key, value))
        self.bytes += n
        return len(self.records)


class FakeProducer:
    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker

    async def partitions_for(self, topic: str) -> set[int]:
        return set(range(self.broker.partitions))

    def create_batch(self) -> FakeBatch:
        return FakeBatch()

    async def send(self, topic: str, value: bytes, key: bytes | None = None, partition: int | None = None) -> Any:
        return self._deliver(topic, partition or 0, [(key, value)])

    async def send_batch(self, batch: FakeBatch, topic: str, *, partition: int) -> Any:
        return self._deliver(topic, partition, batch.records)

    def _deliver(self, topic: str, partition: int, records: list[tuple[bytes | None, bytes]]) -> Any:
        """One record batch: the next failure of ``topic`` or a record over its limit fails it whole."""
        b = self.broker
        fut = asyncio.get_running_loop().create_future()
        b.sends.extend((topic, value) for _, value in records)
        if b.failures[topic]:
            fut.set_exception(b.failures[topic].pop(0))
            return fut
        limit = b.limits.get(topic)
        if limit is not None and any(len(value) > limit for _, value in records):
            from aiokafka.errors import MessageSizeTooLargeError

            fut.set_exception(MessageSizeTooLargeError(f"a record over {limit} bytes"))
            return fut
        recs = [b.append(topic, partition, key, value) for key, value in records]
        if topic in b.holding:
            b.held.append((recs[-1], fut))
        else:
            fut.set_result(Metadata(topic, partition, recs[-1].offset))
        return fut


class FakeConsumer:
    """A group-less consumer: start/stop, assign/seek, getmany, position, offsets."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.positions: dict[TopicPartition, int] = {}

    async def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def assign(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self.positions.setdefault(tp, self.broker.starts[(tp.topic, tp.partition)])

    def seek(self, tp: TopicPartition, offset: int) -> None:
        self.positions[tp] = offset

    async def position(self, tp: TopicPartition) -> int:
        return self.positions[tp]

    async def beginning_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return {tp: self.broker.starts[(tp.topic, tp.partition)] for tp in tps}

    async def end_offsets(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        b = self.broker
        return {tp: b.starts[(tp.topic, tp.partition)] + len(b.logs[(tp.topic, tp.partition)]) for tp in tps}

    async def getmany(self, tp: TopicPartition, timeout_ms: int = 0, max_records: int = 10_000) -> dict:
        b = self.broker
        start = b.starts[(tp.topic, tp.partition)]
        pos = max(self.positions[tp], start)
        recs = b.logs[(tp.topic, tp.partition)][pos - start: pos - start + max_records]
        if recs:
            self.positions[tp] = recs[-1].offset + 1
        return {tp: recs} if recs else {}


class FakeAdmin:
    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker

    async def start(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def delete_records(self, targets: Mapping[TopicPartition, Any]) -> None:
        b = self.broker
        if b.delete_failures:
            raise b.delete_failures.pop(0)
        for tp, to in targets.items():
            key = (tp.topic, tp.partition)
            drop = to.before_offset - b.starts[key]
            b.logs[key] = b.logs[key][drop:]
            b.starts[key] = to.before_offset


@dataclass
class FakeHost:
    """The host's group side: commits recorded (``check(offsets)`` runs first), or failing."""

    generation_id: int = 1
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    commit_failures: list[BaseException] = field(default_factory=list)
    check: Callable[[Mapping[tuple[str, int], int]], None] = lambda offsets: None
    high: dict[tuple[str, int], int] = field(default_factory=dict)

    def generation(self) -> int:
        return self.generation_id

    def highwater(self, topic: str, partition: int) -> int | None:
        return self.high.get((topic, partition))

    async def commit_offsets(self, offsets: Mapping[tuple[str, int], int]) -> None:
        self.check(offsets)
        if self.commit_failures:
            raise self.commit_failures.pop(0)
        self.committed.update(offsets)


class FakeGaps:
    """Reads input records back from the fake broker; a partition without state starts at 0."""

    def __init__(self, broker: FakeBroker) -> None:
        self.broker = broker
        self.reads: list[tuple[str, int, int, int]] = []

    async def start_offset(self, topic: str, partition: int) -> int:
        return 0

    async def read(self, topic: str, partition: int, start: int, end: int) -> list[Record]:
        self.reads.append((topic, partition, start, end))
        return [r for r in self.broker.logs[(topic, partition)] if start <= r.offset < end]


def covered_by_log(broker: FakeBroker, state_topic: str, partition: int = 0) -> dict[str, int]:
    """The input offsets the state log's acknowledged records say the state covers."""
    from stream.worker.statelog import Replay

    class Sink:
        def __init__(self) -> None:
            self.offsets: dict[str, int] = {}

        def apply(self, entries: Any) -> None:
            pass

        def clear(self) -> None:
            pass

        def covered(self, offsets: dict[str, int], generation: int, n: int) -> None:
            self.offsets = dict(offsets)

    unacked = {id(rec) for rec, _ in broker.held}
    sink = Sink()
    replay = Replay(sink)
    for rec in broker.logs[(state_topic, partition)]:
        if id(rec) not in unacked:
            replay.feed(rec.value)
    return sink.offsets


class Rig:
    """One worker's durability over fakes: partition 0 restored, the real handler feeding it."""

    def __init__(self, tmp_path: Path, broker: FakeBroker | None = None, name: str = "a", *,
                 engine: Engine | None = None, cache_entries: int | None = None, snapshot_after: int | None = None,
                 **overrides: Any) -> None:
        self.settings = Settings(app_id="faults", partitions=1, data_dir=tmp_path / name, commit_interval=300,
                                 metrics_enabled=False, **overrides)
        if cache_entries is not None:  # below the setting's bound: values evicted and re-read all the time
            self.settings = self.settings.model_copy(update={"state_cache_entries": cache_entries})
        if snapshot_after is not None:  # below the setting's bound: a snapshot after a few entries
            self.settings = self.settings.model_copy(update={"snapshot_min_entries": snapshot_after})
        self.broker = broker or FakeBroker()
        self.host = FakeHost(check=self._no_offset_past_the_log)
        self.failures: list[BaseException] = []
        self.outputs = Outputs(self.settings, self.broker.producer())
        self.engine = engine or Engine(self.settings.seq_gap_limit)
        self.gaps = FakeGaps(self.broker)
        self.d = Durability(self.settings, outputs=self.outputs, producer=self.broker.producer(),
                            consumer=self.broker.consumer, admin=self.broker.admin,
                            commit_offsets=self.host.commit_offsets, gaps=self.gaps,
                            on_failure=self.failures.append)
        self.offset = 0

    def _no_offset_past_the_log(self, offsets: Any) -> None:
        covered = covered_by_log(self.broker, self.settings.state_topic)
        for (topic, _), offset in offsets.items():
            assert offset <= covered.get(topic, 0), f"group offset {offset} past the state log's {covered}"

    async def start(self, generation: int = 1) -> Rig:
        self.d.assign([0], generation)
        await self.d.ready(0)
        return self

    def produce(self, *events: dict) -> list[Any]:
        """Append checkpoints to the input topic; the records as the consumer delivers them."""
        return [self.broker.append(CK, 0, e["context_id"].encode(), json.dumps(e).encode()) for e in events]

    async def apply(self, records: list[Any]) -> Plan:
        """One batch through the handler, as the runtime does it (no commit unless due)."""
        async with self.d.batch():
            part = await self.d.ready(0)
            assert part is not None
            fresh = await self.d.uncovered(part, records, {})
            result = plan(self.engine, part, fresh, self.outputs, Limits())
            await self.outputs.send(result.outputs)
            return result

    def state_log(self) -> list[dict]:
        return decoded(self.broker.values(self.settings.state_topic))

    def commits_in_log(self) -> list[dict]:
        return [r for r in self.state_log() if r["k"] == "d"]

    def stored_offsets(self) -> dict:
        return self.d.partition(0).store.meta()["offsets"]  # type: ignore[union-attr]


def decoded(values: list[bytes]) -> list[dict]:
    return [json.loads(v) for v in values]
