"""A partition number's two input topics are merged in the contract's order (DESIGN.md §4
[v2.1] *Across the two topics*; Kafka Streams' timestamp synchronization,
stream.worker.merge.TopicMerge), and the runtime's timer releases what waits only once
nothing more is on its way."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pytest

from stream.settings import Settings
from stream.worker.merge import HELD_MAX, TopicMerge, comes_first
from stream.worker.runtime import Runtime
from tests.unit.fakes import FakeHost

pytestmark = pytest.mark.unit

S = Settings(metrics_enabled=False)
CK, AR = S.input_topics


@dataclass
class Rec:
    topic: str
    offset: int
    timestamp: int
    partition: int = 0


class Merge:
    """A TopicMerge with the broker's high watermarks (what ``caught_up`` asks)."""

    def __init__(self) -> None:
        self.merge = TopicMerge(S.input_topics)
        self.high: dict[str, int] = {}

    def caught_up(self, topic: str) -> bool:
        return topic in self.high and self.merge.fetched.get(topic, 0) >= self.high[topic]

    def received(self, recs: list[Rec]) -> list[Rec]:
        self.merge.received(recs)
        return self.merge.release(recs, self.caught_up)


def test_on_equal_timestamps_the_checkpoint_comes_first():
    assert comes_first(Rec(CK, 9, 100), Rec(AR, 0, 100))
    assert not comes_first(Rec(CK, 0, 101), Rec(AR, 9, 100))


def test_one_topic_goes_on_alone_when_the_other_is_caught_up():
    m = Merge()
    m.high = {CK: 0, AR: 3}
    recs = [Rec(AR, i, 10 + i) for i in range(3)]
    assert m.received(recs) == recs
    assert not m.merge.held


def test_artifacts_wait_for_the_checkpoints_fetched_but_not_received_then_merge_by_timestamp():
    m = Merge()
    m.high = {CK: 2, AR: 4}  # two checkpoints exist that this worker has not received
    assert m.received([Rec(AR, i, ts) for i, ts in enumerate((10, 20, 30, 40))]) == []
    out = m.received([Rec(CK, 0, 15), Rec(CK, 1, 35)])
    assert [(r.topic, r.timestamp) for r in out] == [(AR, 10), (CK, 15), (AR, 20), (AR, 30), (CK, 35), (AR, 40)]
    assert not m.merge.held


def test_held_records_go_on_when_forced_in_offset_order():
    m = Merge()
    m.high = {CK: 5, AR: 2}
    recs = [Rec(AR, 0, 50), Rec(AR, 1, 60)]
    assert m.received(recs) == []
    assert m.merge.release((), m.caught_up, force=True) == recs
    assert not m.merge.held


def test_too_many_held_records_go_on_without_waiting():
    m = Merge()
    m.high = {CK: 1, AR: HELD_MAX + 1}
    recs = [Rec(AR, i, i) for i in range(HELD_MAX + 1)]
    assert m.received(recs) == recs


def test_an_unknown_high_watermark_holds_until_the_other_topic_arrives():
    m = Merge()
    assert m.received([Rec(CK, 0, 5)]) == []
    m.high = {CK: 1, AR: 1}
    assert [(r.topic, r.offset) for r in m.received([Rec(AR, 0, 7)])] == [(CK, 0), (AR, 0)]


class _Durability:
    """What the runtime's timer asks of the durability object."""

    def __init__(self, part: object) -> None:
        self.part = part
        self.lock = asyncio.Lock()
        self.busy = False

    def batch(self) -> asyncio.Lock:
        return self.lock

    def partition(self, p: int) -> object:
        return self.part


def test_the_timer_releases_held_records_only_once_the_worker_received_nothing_for_the_idle_time():
    host = FakeHost(high={(CK, 0): 9, (AR, 0): 3})  # checkpoints the broker has, not received yet
    rt = Runtime(host, S)  # type: ignore[arg-type]
    part = type("Part", (), {"number": 0, "next_offset": lambda self, topic: 0})()
    merge = rt._merge(part)  # type: ignore[arg-type]
    merge.received([Rec(AR, 0, 1)])
    assert merge.release([Rec(AR, 0, 1)], lambda topic: rt._caught_up(part, merge, topic)) == []  # type: ignore[arg-type]
    processed: list = []

    async def process(p, messages, received):
        processed.extend(messages)

    rt.durability = _Durability(part)  # type: ignore[assignment]
    rt._process = process  # type: ignore[method-assign]
    merge.held_since -= S.max_idle
    rt.last_batch = time.monotonic()  # batches are arriving: the checkpoints are on their way
    asyncio.run(rt.tick())
    assert processed == [] and merge.held
    rt.last_batch -= S.max_idle  # nothing received for CG_MAX_IDLE
    asyncio.run(rt.tick())
    assert [r.offset for r in processed] == [0] and not merge.held
