"""stream.gaps.OffsetGuard on the real broker: records faust never delivered are found by
offset and read back, in order, ahead of the record that revealed the gap."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

from stream.gaps import FetchedEvent, OffsetGuard

pytestmark = pytest.mark.integration


class _Msg:
    def __init__(self, r):
        self.topic, self.partition, self.offset, self.key, self.value = r.topic, r.partition, r.offset, r.key, r.value


class _Ev:
    def __init__(self, r):
        self.message = _Msg(r)


async def _records(bootstrap: str, topic: str, n: int) -> list:
    p = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await p.start()
    try:
        await asyncio.gather(*[await p.send(topic, f"v{i}".encode(), key=b"k", partition=0) for i in range(n)])
    finally:
        await p.stop()
    c = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, auto_offset_reset="earliest")
    await c.start()
    try:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        out = []
        while len(out) < n:
            out += (await c.getmany(tp, timeout_ms=1000)).get(tp, [])
        return out
    finally:
        await c.stop()


def test_skipped_offsets_are_read_back_in_order_and_nothing_twice(kafka_settings, create_topics):
    topic = kafka_settings.compaction_topic

    async def scenario():
        await create_topics([topic], partitions=1)
        recs = await _records(kafka_settings.bootstrap_servers, topic, 20)
        guard = OffsetGuard(kafka_settings)
        try:
            # No commit yet: due from the log start. faust "skipped" 0-2 and 8-14.
            first = await guard.fill([_Ev(recs[3]), _Ev(recs[4])])
            second = await guard.fill([_Ev(recs[i]) for i in (5, 6, 7, 15, 16)])
            # A replay from before (faust seeking back) passes through, and fills nothing.
            third = await guard.fill([_Ev(recs[2]), _Ev(recs[17])])
            guard.reset()  # a new assignment: due again from the (still empty) commit
            fourth = await guard.fill([_Ev(recs[1])])
        finally:
            await guard.close()
        return first, second, third, fourth, guard.repaired

    first, second, third, fourth, repaired = asyncio.run(scenario())
    offsets = lambda evs: [e.message.offset for e in evs]  # noqa: E731
    assert offsets(first) == [0, 1, 2, 3, 4]
    assert [isinstance(e, FetchedEvent) for e in first] == [True, True, True, False, False]
    assert [e.message.value for e in first[:3]] == [b"v0", b"v1", b"v2"]
    assert offsets(second) == [5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]
    assert offsets(third) == [2, 17]
    assert offsets(fourth) == [0, 1]
    assert repaired == 3 + 7 + 1
