"""The runtime merges a partition number's two input topics by record timestamp
(Kafka Streams' timestamp synchronization, stream.worker.runtime.Runtime._merged)."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import pytest

from stream.settings import Settings
from stream.worker.durability import Partition
from stream.worker.runtime import HELD_MAX, Runtime

pytestmark = pytest.mark.unit

S = Settings(metrics_enabled=False)
CK, AR = S.input_topics


@dataclass
class Rec:
    topic: str
    offset: int
    timestamp: int
    partition: int = 0


class Consumer:
    def __init__(self) -> None:
        self.high: dict[tuple[str, int], int] = {}

    def highwater(self, tp: Any) -> int | None:
        return self.high.get((tp.topic, tp.partition))


def _runtime() -> tuple[Runtime, Consumer, Partition]:
    c = Consumer()
    rt = Runtime(SimpleNamespace(consumer=c), S)
    part = Partition(0, None, None, offsets={CK: 0, AR: 0})  # type: ignore[arg-type]
    return rt, c, part


def _received(rt: Runtime, part: Partition, recs: list[Rec]) -> list[Rec]:
    for r in recs:
        part.fetched[r.topic] = r.offset + 1
    return rt._merged(part, recs)


def test_one_topic_goes_on_alone_when_the_other_is_caught_up():
    rt, c, part = _runtime()
    c.high = {(CK, 0): 0, (AR, 0): 3}
    recs = [Rec(AR, i, 10 + i) for i in range(3)]
    assert _received(rt, part, recs) == recs
    assert not part.held


def test_artifacts_wait_for_the_checkpoints_fetched_but_not_received_then_merge_by_timestamp():
    rt, c, part = _runtime()
    c.high = {(CK, 0): 2, (AR, 0): 4}  # two checkpoints exist that this worker has not received
    artifacts = [Rec(AR, i, ts) for i, ts in enumerate((10, 20, 30, 40))]
    assert _received(rt, part, artifacts) == []
    checkpoints = [Rec(CK, 0, 15), Rec(CK, 1, 35)]
    out = _received(rt, part, checkpoints)
    assert [(r.topic, r.timestamp) for r in out] == [(AR, 10), (CK, 15), (AR, 20), (AR, 30), (CK, 35), (AR, 40)]
    assert not part.held


def test_held_records_go_on_when_forced_by_the_idle_timer_in_offset_order():
    rt, c, part = _runtime()
    c.high = {(CK, 0): 5, (AR, 0): 2}
    recs = [Rec(AR, 0, 50), Rec(AR, 1, 60)]
    assert _received(rt, part, recs) == []
    assert rt._merged(part, (), force=True) == recs
    assert not part.held


def test_too_many_held_records_go_on_without_waiting():
    rt, c, part = _runtime()
    c.high = {(CK, 0): 1, (AR, 0): HELD_MAX + 1}
    recs = [Rec(AR, i, i) for i in range(HELD_MAX + 1)]
    assert _received(rt, part, recs) == recs


def test_an_unknown_high_watermark_holds_until_the_other_topic_arrives():
    rt, c, part = _runtime()
    assert _received(rt, part, [Rec(CK, 0, 5)]) == []
    c.high = {(CK, 0): 1, (AR, 0): 1}
    assert [(r.topic, r.offset) for r in _received(rt, part, [Rec(AR, 0, 7)])] == [(CK, 0), (AR, 0)]


def test_the_timer_releases_held_records_only_once_the_worker_received_nothing_for_the_idle_time():
    import asyncio

    rt, c, part = _runtime()
    c.high = {(CK, 0): 9, (AR, 0): 3}  # checkpoints the broker has, not received yet
    assert _received(rt, part, [Rec(AR, 0, 1)]) == []
    processed: list = []

    async def process(p, messages, received):
        processed.extend(messages)

    class D:
        lock = asyncio.Lock()
        partitions = {0: part}

        def committable(self):
            return [part]

        def due(self):
            return False

    rt.durability = D()  # type: ignore[assignment]
    rt._process = process  # type: ignore[method-assign]
    part.held_since -= S.max_idle
    rt.last_batch = __import__("time").monotonic()  # batches are arriving: the checkpoints are on their way
    asyncio.run(rt.tick())
    assert processed == [] and part.held
    rt.last_batch -= S.max_idle  # nothing received for CG_MAX_IDLE
    asyncio.run(rt.tick())
    assert [r.offset for r in processed] == [0] and not part.held
