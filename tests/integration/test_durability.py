"""The durability object and the gap reader on the real broker (no faust worker).

* a zombie — an owner that lost the partition and keeps committing with its old
  generation — cannot change what any later owner restores;
* a chunked commit whose marker never arrived (a crash mid-commit) is ignored on restore;
* a restart with the data dir kept replays only the log's tail; a fresh node restores
  everything; both end with the same state;
* records faust skipped are read back exactly, in order, and where a partition without
  state starts is the group's committed offset.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka import TopicPartition

from stream.kafka_clients import admin, consumer, ensure_state_topic, producer
from stream.settings import Settings
from stream.worker import statelog
from stream.worker.durability import Durability, Partition
from stream.worker.gaps import Gaps
from stream.worker.outputs import Outputs

pytestmark = pytest.mark.integration

INPUT = "compaction-events"


def _settings(kafka_settings: Settings, tmp_path: Path, name: str) -> Settings:
    return kafka_settings.model_copy(update={"partitions": 1, "data_dir": tmp_path / name,
                                             "compaction_topic": INPUT + "-" + kafka_settings.app_id})


class Owner:
    """A Durability as the runtime builds it; group commits are recorded. Its state is
    written as the handler writes it: a value, then the input record it covers."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.committed: dict = {}

    async def start(self, generation: int) -> Durability:
        s = self.settings
        self.producer = producer(s, enable_idempotence=True, max_request_size=s.max_request_bytes)
        await self.producer.start()

        async def commit(offsets: dict) -> None:
            self.committed.update(offsets)

        class StartAtZero:
            async def start_offset(self, topic: str, p: int) -> int:
                return 0

        self.d = Durability(s, outputs=Outputs(s, self.producer), producer=self.producer,
                            consumer=lambda: consumer(s, group_id=None, enable_auto_commit=False,
                                                      auto_offset_reset="earliest",
                                                      max_partition_fetch_bytes=s.max_request_bytes),
                            admin=lambda: admin(s), commit_offsets=commit, gaps=StartAtZero())  # type: ignore[arg-type]
        self.d.assign([0], generation)
        await self.d.ready(0)
        return self.d

    @property
    def part(self) -> Partition:
        part = self.d.partition(0)
        assert part is not None
        return part

    def write(self, key: str, value: Any, offset: int) -> None:
        self.part.state.nodes[("ctx", key)] = value
        self.part.advance(SimpleNamespace(topic=self.settings.compaction_topic, offset=offset - 1))

    def read(self, key: str) -> Any:
        return self.part.state.nodes.get(("ctx", key))

    async def stop(self) -> None:
        await self.d.close()
        await self.producer.stop()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_zombie_cannot_change_what_a_later_owner_restores(kafka_settings, tmp_path):
    async def scenario() -> tuple[Any, Any, Any, dict]:
        base = _settings(kafka_settings, tmp_path, "a")
        await ensure_state_topic(base)
        first = Owner(base)
        await first.start(generation=5)
        first.write("n1", {"v": 1}, 10)
        await first.d.commit()
        second = Owner(_settings(kafka_settings, tmp_path, "b"))  # another node, another data dir
        await second.start(generation=6)  # fences generation 5
        restored = second.read("n1")
        first.write("n1", {"v": "zombie"}, 99)  # the zombie goes on committing
        first.write("evil", {"v": "zombie"}, 99)
        await first.d.commit()
        second.write("n2", {"v": 2}, 11)
        await second.d.commit()
        await first.stop()
        await second.stop()
        third = Owner(_settings(kafka_settings, tmp_path, "c"))
        await third.start(generation=7)
        state = (third.read("n1"), third.read("n2"), third.read("evil"))
        offsets = third.part.covered()
        await third.stop()
        return restored, state, second.committed, offsets

    restored, (n1, n2, evil), committed, offsets = run(scenario())
    assert restored == {"v": 1}
    assert (n1, n2, evil) == ({"v": 1}, {"v": 2}, None)
    assert offsets[INPUT + "-" + kafka_settings.app_id] == 11  # the new owner's, not the zombie's 99
    assert committed[(INPUT + "-" + kafka_settings.app_id, 0)] == 11  # the group follows the state


def test_a_chunked_commit_without_its_marker_is_ignored_on_restore(kafka_settings, tmp_path):
    async def scenario() -> tuple[Any, Any]:
        s = _settings(kafka_settings, tmp_path, "a")
        await ensure_state_topic(s)
        owner = Owner(s)
        await owner.start(generation=3)
        owner.write("kept", {"v": 1}, 5)
        await owner.d.commit()
        # a crash mid-commit: the chunks went out, the marker did not
        big = [[1, json.dumps(["ctx", f"lost-{i}"]), json.dumps({"pad": "x" * 400})] for i in range(200)]
        records = statelog.commit_records(3, owner.part.next_commit, {s.compaction_topic: 99}, big, 8192)
        assert len(records) > 2 and json.loads(records[-1])["k"] == "m"
        for r in records[:-1]:
            await (await owner.producer.send(s.state_topic, r, partition=0))
        await owner.stop()
        fresh = Owner(_settings(kafka_settings, tmp_path, "b"))
        await fresh.start(generation=4)
        got = (fresh.read("kept"), fresh.read("lost-0"), fresh.part.covered())
        await fresh.stop()
        return got

    kept, lost, offsets = run(scenario())
    assert kept == {"v": 1} and lost is None
    assert offsets[INPUT + "-" + kafka_settings.app_id] == 5


def test_a_kept_data_dir_replays_only_the_tail_and_a_fresh_node_gets_the_same_state(kafka_settings, tmp_path):
    async def scenario() -> tuple[int, int, Any, Any]:
        s = _settings(kafka_settings, tmp_path, "a")
        await ensure_state_topic(s)
        owner = Owner(s)
        await owner.start(generation=1)
        for i in range(50):
            owner.write(f"n{i}", {"v": i}, i + 1)
            await owner.d.commit()
        await owner.stop()
        again = Owner(s)  # the same data dir
        await again.start(generation=2)
        tail = again.d.restored_entries
        same = again.read("n49")
        await again.stop()
        fresh = Owner(_settings(kafka_settings, tmp_path, "b"))
        await fresh.start(generation=3)
        everything = fresh.d.restored_entries
        other = fresh.read("n49")
        await fresh.stop()
        return tail, everything, same, other

    tail, everything, same, other = run(scenario())
    assert tail == 0 and everything == 50
    assert same == other == {"v": 49}


def test_records_faust_skipped_are_read_back_in_order_and_nothing_else(kafka_settings, create_topics, tmp_path):
    async def scenario() -> tuple[list, int, int]:
        topic = f"gaps-{kafka_settings.app_id}"
        await create_topics([topic], partitions=1)
        p = producer(kafka_settings)
        await p.start()
        try:
            for i in range(30):
                await p.send_and_wait(topic, f"v{i}".encode(), key=b"k", partition=0)
        finally:
            await p.stop()
        gaps = Gaps(kafka_settings)
        try:
            got = await gaps.read(topic, 0, 7, 19)
            fresh = await gaps.start_offset(topic, 0)
            member = consumer(kafka_settings, group_id=kafka_settings.app_id, enable_auto_commit=False)
            await member.start()
            member.assign([TopicPartition(topic, 0)])
            await member.commit({TopicPartition(topic, 0): 12})  # a group that committed before
            await member.stop()
            committed = await gaps.start_offset(topic, 0)
            # in ms like the records the consumer delivers: the topic merge compares them
            assert all(isinstance(m.timestamp, int) and m.timestamp > 10**12 for m in got)
            return [(m.offset, m.value) for m in got], (fresh, committed), gaps.repaired
        finally:
            await gaps.close()

    got, starts, repaired = run(scenario())
    assert got == [(i, f"v{i}".encode()) for i in range(7, 19)]
    assert starts == (0, 12) and repaired == 12


def test_a_snapshot_replaces_the_log_before_it_and_a_fresh_node_restores_from_it(kafka_settings, tmp_path):
    async def scenario() -> tuple[int, int, int, Any, Any]:
        s = _settings(kafka_settings, tmp_path, "a").model_copy(update={"snapshot_min_entries": 1000})
        await ensure_state_topic(s)
        owner = Owner(s)
        await owner.start(generation=1)
        for version in range(5):  # the same 300 keys rewritten: the log outgrows the state
            for i in range(300):
                owner.write(f"n{i:05d}", {"v": version}, version + 1)
            await owner.d.commit()
        since = owner.part.since_snapshot
        await owner.stop()
        c = consumer(s, group_id=None, enable_auto_commit=False)
        await c.start()
        tp = TopicPartition(s.state_topic, 0)
        start = (await c.beginning_offsets([tp]))[tp]
        await c.stop()
        fresh = Owner(_settings(kafka_settings, tmp_path, "b"))
        await fresh.start(generation=2)
        restored = fresh.d.restored_entries
        got = (fresh.read("n00000"), fresh.read("n00299"))
        await fresh.stop()
        return since, start, restored, *got

    since, start, restored, first, last = run(scenario())
    # commit 4 brought 1,200 log entries for 300 keys: a snapshot, then commit 5's 300
    assert since == 300
    assert start > 0  # the records before the snapshot were deleted
    assert first == last == {"v": 4}
    assert restored == 300 + 300  # the snapshot and the commit after it, not all 1,500 entries


def test_writes_go_on_while_a_commit_is_in_flight_and_the_next_commit_holds_them(kafka_settings, tmp_path):
    async def scenario() -> dict:
        s = _settings(kafka_settings, tmp_path, "a")
        await ensure_state_topic(s)
        owner = Owner(s)
        d = await owner.start(generation=2)
        part = owner.part
        owner.write("n1", {"v": 1}, 1)
        async with d.batch():
            got: dict = {"began": d.begin_commit()}
        owner.write("n2", {"v": 2}, 2)  # a batch handled while the commit is in flight
        got["read_taken"] = owner.read("n1")
        async with d.batch():
            got["second_begin"] = d.begin_commit()  # one commit in flight at a time
        await d.settled()
        got["stored_after_first"] = sorted(json.loads(k)[1] for _, k, _ in part.store.entries())
        got["meta_offsets"] = part.store.meta()["offsets"]
        await d.commit()
        await owner.stop()
        fresh = Owner(_settings(kafka_settings, tmp_path, "b"))
        await fresh.start(generation=3)
        got["restored"] = (fresh.read("n1"), fresh.read("n2"), fresh.part.covered())
        await fresh.stop()
        return got

    got = run(scenario())
    assert got["began"] is True and got["second_begin"] is False
    assert got["read_taken"] == {"v": 1}
    assert got["stored_after_first"] == ["n1"]  # n2 came after the take
    assert got["meta_offsets"][INPUT + "-" + kafka_settings.app_id] == 1  # what the first commit covered
    n1, n2, offsets = got["restored"]
    assert (n1, n2) == ({"v": 1}, {"v": 2})
    assert offsets[INPUT + "-" + kafka_settings.app_id] == 2
