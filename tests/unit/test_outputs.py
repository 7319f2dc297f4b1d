"""Output delivery (stream.worker.outputs): what replaces a record the broker rejects by
size (DESIGN.md §4 *Bounded outputs*). A status record is first re-sent without its
``degraded_by`` list, so the compacted status topic never keeps a stale
``authoritative``; only that rejected too is it dead-lettered. Over the fake broker of
tests/unit/fakes.py (the real broker: tests/integration/test_worker_status.py)."""

from __future__ import annotations

import asyncio
import base64
import json
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.errors import KafkaTimeoutError, TopicAuthorizationFailedError

from stream.domain.outputs import NodeStatus, Trigger
from stream.errors import OutputRejected
from stream.settings import Settings
from stream.wire import encode, status_key
from stream.worker.outputs import RECORD, STATUS, OutputRecord, Outputs
from tests.unit.fakes import FakeBroker, Record

pytestmark = pytest.mark.unit

S = Settings()
TRIGGER = Record("compaction-events", 0, 7, b"ctx", b'{"event_id":"e7"}')


def status(node: str, authoritative: bool, degraded: int) -> OutputRecord:
    value = NodeStatus("ctx", node, "root", authoritative, False, (), tuple(f"leaf-{i:05d}" for i in range(degraded)),
                       degraded, Trigger("e7", "artifact", "artifact-events", 0, 7), None)
    return OutputRecord(S.status_topic, status_key("ctx", node), encode(value), 0, source=TRIGGER, kind=STATUS,
                        status=value)


def alert(size: int) -> OutputRecord:
    return OutputRecord(S.alerts_topic, b"ctx", encode({"alert_id": "a", "orphans": ["x" * size]}),
                        source=TRIGGER)


def deliver(outputs: Outputs, *batches: list[OutputRecord]) -> None:
    """Send each batch, then settle everything sent (one commit's step 1)."""
    async def scenario() -> None:
        for batch in batches:
            await outputs.send(batch)
        await outputs.settle(outputs.take())

    asyncio.run(scenario())


def statuses(broker: FakeBroker) -> list[dict[str, Any]]:
    return [json.loads(v) for v in broker.values(S.status_topic)]


def outputs_over(broker: FakeBroker, limits: dict[str, int] | None = None) -> tuple[Outputs, list[str]]:
    rejected: list[str] = []
    return Outputs(S, broker.producer(), limits=limits, on_rejected=rejected.append), rejected


def test_a_status_record_over_the_limit_is_sent_without_its_list_in_its_place_keeping_authoritative_and_count():
    broker = FakeBroker()
    outputs, rejected = outputs_over(broker, {S.status_topic: 8192})
    deliver(outputs, [status("small", True, 0), status("root", False, 2000), status("after", True, 0)])
    got = statuses(broker)
    assert [s["node_id"] for s in got] == ["small", "root", "after"]  # replaced before it was sent: order kept
    cut = got[1]
    assert cut == {**cut, "degraded_by": [], "degraded_truncated": True}
    assert cut["authoritative"] is False and cut["degraded_count"] == 2000
    assert list(cut) == ["schema_version", "type", "context_id", "node_id", "level", "authoritative", "frozen",
                         "open_rules", "degraded_by", "degraded_count", "degraded_truncated", "trigger", "detected_at"]
    assert rejected == [S.status_topic] and broker.values(S.deadletter_topic) == []


def test_a_batch_the_broker_rejects_by_size_stops_the_worker_whose_restart_reads_the_new_limit():
    """The idempotent producer cannot send to that partition again (its sequence moved on)."""
    broker = FakeBroker()
    broker.limits[S.status_topic] = 8192  # lowered after the start: the worker does not know it
    outputs, _ = outputs_over(broker, {S.status_topic: 1 << 20})
    with pytest.raises(OutputRejected, match="lower than when the worker started; restart"):
        deliver(outputs, [status("root", False, 2000)])


def test_a_status_record_rejected_even_without_its_list_is_dead_lettered_with_its_trigger():
    broker = FakeBroker()
    outputs, rejected = outputs_over(broker, {S.status_topic: 600})
    huge_id = "n" * 2000  # the record is over the limit whatever its list holds
    deliver(outputs, [status(huge_id, False, 10)])
    assert statuses(broker) == []
    (letter,) = [json.loads(v) for v in broker.values(S.deadletter_topic)]
    assert letter["reason"].startswith("output rejected: ") and S.status_topic in letter["reason"]
    assert base64.b64decode(letter["value_b64"]) == TRIGGER.value and letter["offset"] == 7
    assert rejected == [S.status_topic, S.status_topic]  # the record, then the record without its list


def test_a_failed_status_is_not_sent_again_once_a_newer_status_of_its_node_was_sent():
    """Sent again after the newer one, the stale record would be the one compaction keeps."""
    broker = FakeBroker()
    broker.fail(S.status_topic, KafkaTimeoutError())
    outputs, _ = outputs_over(broker)

    async def scenario() -> None:
        await outputs.send([status("root", False, 20)])
        first = outputs.take()  # a commit takes it ...
        await outputs.send([status("root", True, 0)])  # ... while the next batch goes on
        await outputs.settle(first)
        await outputs.settle(outputs.take())

    asyncio.run(scenario())
    assert [(s["node_id"], s["authoritative"]) for s in statuses(broker)] == [("root", True)]


def test_an_alert_too_large_is_dead_lettered_with_the_input_bytes_then_without_them():
    broker = FakeBroker()
    outputs, rejected = outputs_over(broker, {S.alerts_topic: 4096, S.deadletter_topic: 4096})
    deliver(outputs, [alert(10_000)])
    (letter,) = [json.loads(v) for v in broker.values(S.deadletter_topic)]
    assert base64.b64decode(letter["value_b64"]) == TRIGGER.value and broker.values(S.alerts_topic) == []
    big_trigger = Record("compaction-events", 0, 8, b"ctx", b"x" * 5000)
    deliver(outputs, [OutputRecord(S.alerts_topic, b"ctx", alert(10_000).value, source=big_trigger)])
    bare = json.loads(broker.values(S.deadletter_topic)[-1])
    assert bare["value_b64"] == "" and bare["offset"] == 8  # its bytes did not fit a dead letter
    assert rejected == [S.alerts_topic, S.alerts_topic, S.deadletter_topic]


def test_an_output_refused_by_authorization_is_an_error_that_stops_the_worker():
    broker = FakeBroker()
    broker.fail(S.status_topic, TopicAuthorizationFailedError())
    outputs, _ = outputs_over(broker)
    with pytest.raises(OutputRejected, match="ACLs"):
        deliver(outputs, [status("root", True, 0)])


def test_the_records_of_an_event_carry_each_field_by_name_in_the_contracts_order():
    """``Outputs.of`` builds OutputRecord positionally for speed: a reordered field must fail here."""
    node = status("n1", True, 0).status
    out = SimpleNamespace(alerts=[{"alert_id": "a1"}], statuses=[node], verdicts=[{"verdict": "v1"}])
    message = Record("artifact-events", 3, 7, b"ctx", b"{}")
    records = Outputs(S, FakeBroker().producer()).of(message, SimpleNamespace(context_id="ctx"), out)

    assert [(r.topic, r.key, r.partition, r.kind, r.seq, r.status) for r in records] == [
        (S.alerts_topic, b"ctx", None, RECORD, -1, None),
        (S.status_topic, status_key("ctx", "n1"), 3, STATUS, -1, node),
        (S.verdicts_topic, b"ctx", None, RECORD, -1, None),
    ]
    assert [r.value for r in records] == [encode({"alert_id": "a1"}), encode(node), encode({"verdict": "v1"})]
    assert all(r.source is message for r in records)
    empty = SimpleNamespace(alerts=[], statuses=[], verdicts=[])
    assert Outputs(S, FakeBroker().producer()).of(message, SimpleNamespace(context_id="ctx"), empty) == []
