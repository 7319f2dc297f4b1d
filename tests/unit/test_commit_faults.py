"""Each step of a commit fails in turn (Quix Streams' TestCheckpoint): what is retried,
what stops the worker, and that no group offset ever moves past state the state log has
not recorded. The durability object runs for real (RocksDB, the state-log format, the
engine, the handler) over in-memory fakes of the broker and the host (tests/unit/fakes.py);
the same protocol on the real broker: tests/integration/test_durability.py.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from aiokafka.errors import KafkaTimeoutError, MessageSizeTooLargeError, TopicAuthorizationFailedError

from stream.errors import OutputRejected, StateWriteError
from tests.unit.fakes import CK, FakeBroker, Rig, decoded

pytestmark = pytest.mark.unit


def orphan(i: int) -> dict:
    """A leaf whose referent was never admitted: one orphan alert, one status, one verdict."""
    return {"type": "checkpoint", "event_id": f"e{i}", "context_id": "ctx", "node_id": f"n{i}", "level": "leaf",
            "referents": [f"gone-{i}"]}


def alerts(broker: FakeBroker) -> list[str]:
    return [a["alert_id"] for a in decoded([r.value for r in broker.records("checkpoint-alerts")])]


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_commit_writes_the_state_log_only_once_every_output_is_acknowledged(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        await rig.apply(rig.produce(orphan(0), orphan(1)))
        rig.broker.hold("checkpoint-alerts")
        await rig.apply(rig.produce(orphan(2)))
        async with rig.d.batch():
            assert rig.d.begin_commit()
        await asyncio.sleep(0.05)
        assert rig.commits_in_log() == [] and rig.host.committed == {}  # waiting for n2's alert
        assert rig.stored_offsets() == {CK: 0, "artifact-events": 0}
        rig.broker.release()
        await rig.d.settled()
        (commit,) = rig.commits_in_log()
        assert commit["o"][CK] == 3 and rig.host.committed[(CK, 0)] == 3 and rig.stored_offsets()[CK] == 3
        assert rig.failures == []

    run(scenario())


def test_outputs_that_fail_transiently_are_sent_again_and_the_commit_completes(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        rig.broker.fail("checkpoint-alerts", KafkaTimeoutError(), KafkaTimeoutError())
        await rig.apply(rig.produce(orphan(0), orphan(1)))
        await rig.d.commit()
        assert sorted(alerts(rig.broker)) == sorted(set(alerts(rig.broker))) and len(alerts(rig.broker)) == 2
        assert rig.host.committed[(CK, 0)] == 2 and rig.failures == []

    run(scenario())


def test_an_output_the_broker_refuses_by_authorization_stops_the_worker_and_commits_nothing(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        rig.broker.fail("checkpoint-status", TopicAuthorizationFailedError())
        await rig.apply(rig.produce(orphan(0)))
        with pytest.raises(OutputRejected, match="checkpoint-status"):
            await rig.d.commit()
        assert [type(e) for e in rig.failures] == [OutputRejected]
        assert rig.commits_in_log() == [] and rig.host.committed == {} and rig.stored_offsets()[CK] == 0

    run(scenario())


def test_a_state_log_write_that_fails_transiently_is_retried_until_it_is_recorded(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        rig.broker.fail(rig.settings.state_topic, KafkaTimeoutError(), KafkaTimeoutError())
        await rig.apply(rig.produce(orphan(0)))
        await rig.d.commit()
        assert len(rig.commits_in_log()) == 1 and rig.host.committed[(CK, 0)] == 1 and rig.failures == []

    run(scenario())


@pytest.mark.parametrize("refusal", [TopicAuthorizationFailedError, MessageSizeTooLargeError])
def test_a_state_log_that_refuses_the_record_stops_the_worker_and_a_restart_re_sends_the_same_outputs(
        tmp_path, refusal):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        await rig.apply(rig.produce(orphan(0)))
        await rig.d.commit()
        first = alerts(rig.broker)
        rig.broker.fail(rig.settings.state_topic, refusal())
        records = rig.produce(orphan(1), orphan(2))
        await rig.apply(records)
        with pytest.raises(StateWriteError, match="refused"):
            await rig.d.commit()
        assert [type(e) for e in rig.failures] == [StateWriteError]
        assert rig.host.committed[(CK, 0)] == 1 and rig.stored_offsets()[CK] == 1  # not past the log
        sent = alerts(rig.broker)
        # the restart (new data dir, same log): the state of the last commit, then the
        # records after the group offset again -> the very same alerts
        again = await Rig(tmp_path, rig.broker, name="b").start(generation=2)
        assert again.d.partition(0).next_offset(CK) == 1  # type: ignore[union-attr]
        await again.apply(rig.broker.records(CK))  # redelivered from the start: offset 0 is skipped
        await again.d.commit()
        assert alerts(rig.broker)[len(sent):] == sent[len(first):]
        assert again.host.committed[(CK, 0)] == 3

    run(scenario())


def test_a_rocksdb_write_that_fails_stops_the_worker_before_the_group_offsets_move(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        await rig.apply(rig.produce(orphan(0)))
        await rig.d.commit()
        part = rig.d.partition(0)
        store = part.store  # type: ignore[union-attr]

        class Broken:  # the store whose writes fail (a wrapper: a compiled class takes no patch)
            def __getattr__(self, name: str) -> Any:
                return getattr(store, name)

            def write(self, entries: Any, meta: Any) -> None:
                raise OSError("No space left on device")

        part.store = Broken()  # type: ignore[union-attr,assignment]
        await rig.apply(rig.produce(orphan(1)))
        with pytest.raises(OSError):
            await rig.d.commit()
        assert [type(e) for e in rig.failures] == [OSError]
        assert rig.host.committed[(CK, 0)] == 1  # the log holds commit 2, the group stays at commit 1
        assert [c["o"][CK] for c in rig.commits_in_log()] == [1, 2]
        part.store = store  # type: ignore[union-attr]
        # a restart reads the log past its local RocksDB: the state covers commit 2
        again = await Rig(tmp_path, rig.broker, name="b").start(generation=2)
        assert again.d.partition(0).next_offset(CK) == 2  # type: ignore[union-attr]

    run(scenario())


def test_a_failed_group_commit_does_not_stop_the_worker_and_the_next_commit_carries_the_offsets(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        rig.host.commit_failures.append(ConnectionError("coordinator moved"))
        await rig.apply(rig.produce(orphan(0)))
        await rig.d.commit()
        assert rig.host.committed == {} and len(rig.commits_in_log()) == 1 and rig.failures == []
        await rig.apply(rig.produce(orphan(1)))
        await rig.d.commit()
        assert rig.host.committed[(CK, 0)] == 2

    run(scenario())


def test_a_revoke_during_a_commit_waits_for_it_then_commits_the_rest_and_closes_the_partition(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        rig.broker.hold("checkpoint-alerts")
        await rig.apply(rig.produce(orphan(0)))
        async with rig.d.batch():
            assert rig.d.begin_commit()
        await rig.apply(rig.produce(orphan(1), orphan(2)))  # batches go on meanwhile
        revoking = asyncio.ensure_future(rig.d.revoke([0]))
        await asyncio.sleep(0.05)
        assert not revoking.done() and rig.commits_in_log() == [] and rig.host.committed == {}
        rig.broker.release()  # later sends are acknowledged at once
        await revoking
        assert [c["o"][CK] for c in rig.commits_in_log()] == [1, 3]
        assert rig.host.committed[(CK, 0)] == 3 and rig.failures == []
        assert await rig.d.ready(0) is None and rig.d.assigned() == []

    run(scenario())


def test_a_commit_that_failed_in_the_background_is_reported_and_no_later_commit_is_taken(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        rig.broker.fail(rig.settings.state_topic, TopicAuthorizationFailedError())
        await rig.apply(rig.produce(orphan(0)))
        async with rig.d.batch():
            assert rig.d.begin_commit()
        await asyncio.sleep(0.05)
        assert [type(e) for e in rig.failures] == [StateWriteError]  # the worker stops here
        await rig.apply(rig.produce(orphan(1)))
        with pytest.raises(StateWriteError):
            async with rig.d.batch():
                rig.d.begin_commit()
        assert rig.host.committed == {} and rig.commits_in_log() == []

    run(scenario())


def test_records_below_the_covered_offset_are_skipped_and_a_gap_above_it_is_read_back_first(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        records = rig.produce(*(orphan(i) for i in range(6)))
        await rig.apply(records[:2])
        part = rig.d.partition(0)
        assert part is not None
        fresh = await rig.d.uncovered(part, [records[1], records[4], records[5]], {})
        assert [r.offset for r in fresh] == [2, 3, 4, 5]  # 1 is covered; 2-3 were never delivered
        assert rig.gaps.reads == [(CK, 0, 2, 4)]
        assert [r.offset for r in await rig.d.uncovered(part, records[4:], {CK: 5})] == [5]  # 4 is held

    run(scenario())


def test_a_revoke_whose_commit_the_state_log_refuses_stops_the_worker_and_moves_no_offset(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        await rig.apply(rig.produce(orphan(0)))
        await rig.d.commit()
        rig.broker.fail(rig.settings.state_topic, TopicAuthorizationFailedError())
        await rig.apply(rig.produce(orphan(1), orphan(2)))
        with pytest.raises(StateWriteError):
            await rig.d.revoke([0])
        assert [type(e) for e in rig.failures] == [StateWriteError]
        assert rig.host.committed[(CK, 0)] == 1 and rig.stored_offsets()[CK] == 1
        assert [c["o"][CK] for c in rig.commits_in_log()] == [1]

    run(scenario())


def test_a_whole_record_batch_that_fails_is_sent_again_once_in_order_and_the_commit_completes(tmp_path):
    """Outputs go as one record batch per topic partition: a transient failure fails all of
    its records, and all of them (not only the first) are sent again, in their order."""
    async def scenario() -> None:
        rig = await Rig(tmp_path).start()
        rig.broker.fail("checkpoint-alerts", KafkaTimeoutError())
        await rig.apply(rig.produce(*(orphan(i) for i in range(5))))
        await rig.d.commit()
        got = alerts(rig.broker)
        assert len(got) == 5 == len(set(got))
        nodes = [json.loads(r.value)["node_id"] for r in rig.broker.records("checkpoint-alerts")]
        assert nodes == [f"n{i}" for i in range(5)]
        assert rig.host.committed[(CK, 0)] == 5 and rig.failures == []

    run(scenario())


def test_a_snapshot_whose_log_deletion_fails_does_not_stop_the_worker_and_the_log_stays_whole(tmp_path):
    async def scenario() -> None:
        rig = await Rig(tmp_path, snapshot_after=1).start()
        rig.broker.delete_failures.append(ConnectionError("broker away"))
        await rig.apply(rig.produce(*(orphan(i) for i in range(4))))
        await rig.d.commit()
        kinds = [r["k"] for r in rig.state_log()]
        assert "sm" in kinds and kinds[0] == "f"  # the snapshot was written, nothing before it deleted
        assert rig.failures == [] and rig.host.committed[(CK, 0)] == 4
        await rig.apply(rig.produce(orphan(4)))
        await rig.d.commit()
        assert rig.failures == [] and rig.host.committed[(CK, 0)] == 5
        again = await Rig(tmp_path, rig.broker, name="b").start(generation=2)  # restores from the whole log
        assert again.d.partition(0).next_offset(CK) == 5  # type: ignore[union-attr]

    run(scenario())
