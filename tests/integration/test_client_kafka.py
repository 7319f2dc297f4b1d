"""stream.client against the real broker: the Guard's producer, and StatusView on a status
topic these tests fill themselves (record by record, as DESIGN.md §4 specifies them).

The worker end to end (emit -> alert -> status) is tests/integration/test_client_worker.py;
here ``wait_for``'s protocol is driven by hand: a consumer of the worker's group commits
the offset the worker would commit after acknowledging the event's outputs.
"""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from typing import Any

import pytest
from aiokafka import TopicPartition

from stream import kafka_clients
from stream.client import Guard, NotAuthoritative, StatusView
from stream.errors import ConfigurationError
from stream.settings import Settings
from stream.wire import decode_message, encode, status_key
from tests.integration.harness import consume

PARTITIONS = 4


@pytest.fixture
def settings(kafka_settings: Settings) -> Settings:
    suffix = uuid.uuid4().hex[:8]
    s = Settings(**{**kafka_settings.model_dump(), "status_topic": f"checkpoint-status-{suffix}",
                    "partitions": PARTITIONS})
    asyncio.run(_create(s))
    return s


async def _create(s: Settings) -> None:
    await kafka_clients.create_topics(s, [s.compaction_topic, s.artifact_topic, s.alerts_topic], s.partitions)
    await kafka_clients.create_topics(s, [s.status_topic], s.partitions, compacted=True)


def status(ctx: str, node: str, *, authoritative: bool, open_rules=(), degraded_by=(), frozen=False,
           trigger: dict | None = None) -> dict[str, Any]:
    return {"schema_version": 1, "type": "status", "context_id": ctx, "node_id": node, "level": "leaf",
            "authoritative": authoritative, "frozen": frozen, "open_rules": list(open_rules),
            "degraded_by": list(degraded_by), "degraded_count": len(degraded_by),
            "trigger": trigger or {"event_id": "e", "type": "checkpoint", "topic": None, "partition": None,
                                   "offset": None},
            "detected_at": None}


def alert(ctx: str, node: str, rule: str, status_: str, *, orphans=None, missing=None) -> dict[str, Any]:
    return {"schema_version": 1, "type": "alert", "alert_id": uuid.uuid4().hex, "status": status_, "rule": rule,
            "action": "escalate", "severity": "critical", "context_id": ctx, "node_id": node, "level": "leaf",
            "orphans": orphans, "previous_orphans": None, "missing_constraints": missing, "subtree": None,
            "subtree_size": None, "gap": None, "trigger": {"event_id": "e", "type": "artifact"},
            "detected_at": None}


async def _produce(s: Settings, records: list[tuple[str, bytes, bytes, int | None]]) -> None:
    async with kafka_clients.started(s, kafka_clients.producer(s)) as producer:
        for topic, key, value, partition in records:
            await producer.send_and_wait(topic, value, key=key, partition=partition)


def put_status(s: Settings, *recs: dict[str, Any], partition: int = 0) -> None:
    asyncio.run(_produce(s, [(s.status_topic, status_key(r["context_id"], r["node_id"]), encode(r), partition)
                             for r in recs]))


def put_alerts(s: Settings, *recs: dict[str, Any], partition: int = 0) -> None:
    asyncio.run(_produce(s, [(s.alerts_topic, r["context_id"].encode(), encode(r), partition) for r in recs]))


async def _commit(s: Settings, offsets: dict[tuple[str, int], int]) -> None:
    """Commit ``offsets`` for the worker's group (what the worker does after the acks)."""
    c = kafka_clients.consumer(s, group_id=s.app_id, enable_auto_commit=False)
    await c.start()
    try:
        tps = {TopicPartition(t, p): o for (t, p), o in offsets.items()}
        c.assign(list(tps))
        await c.commit(tps)
    finally:
        await c.stop()


# ------------------------------------------------------------------ the Guard on Kafka


def test_a_contexts_events_of_both_kinds_land_on_one_partition_number_in_seq_order(settings):
    with Guard(settings) as g:
        emitted = []
        for i in range(6):
            ctx = g.context(f"run-{i}")
            emitted += [ctx.admitted("a1"), ctx.checkpoint("leaf", "leaf", referents=["a1"]), ctx.evicted("a1")]
    assert all(e.acknowledged for e in emitted)
    by_context: dict[str, set[int]] = {}
    for e in emitted:
        by_context.setdefault(e.context_id, set()).add(e.partition)
    assert all(len(parts) == 1 for parts in by_context.values())
    assert len({p for parts in by_context.values() for p in parts}) > 1  # keys spread over partitions

    records = asyncio.run(consume(settings.bootstrap_servers, settings.artifact_topic, expected=12, settle=0.5))
    records += asyncio.run(consume(settings.bootstrap_servers, settings.compaction_topic, expected=6, settle=0.5))
    events = [(r.partition, decode_message(r.key, r.value)) for r in records]  # the worker's own decoder
    assert len(events) == 18
    for partition, ev in events:
        assert {partition} == by_context[ev.context_id]
    seqs = sorted((ev.context_id, ev.seq) for _, ev in events)
    assert seqs == sorted((f"run-{i}", n) for i in range(6) for n in range(3))


# ------------------------------------------------------------------ StatusView


def test_the_view_reads_the_latest_status_of_each_node_and_follows_new_records(settings):
    put_status(settings,
               status("c1", "leaf-1", authoritative=True),
               status("c1", "root", authoritative=True),
               status("c1", "leaf-1", authoritative=False, open_rules=["orphaned_referent"]),
               status("c1", "root", authoritative=False, degraded_by=["leaf-1"]))
    with StatusView(settings) as view:
        assert len(view) == 2
        assert not view.is_authoritative("c1", "leaf-1")
        assert view.why("c1", "root").degraded_by == ("leaf-1",)
        assert not view.is_authoritative("c1", "never-seen") and not view.why("c1", "never-seen").known

        put_status(settings, status("c1", "leaf-1", authoritative=True), status("c1", "root", authoritative=True))
        view.catch_up()
        assert view.is_authoritative("c1", "leaf-1") and view.is_authoritative("c1", "root")


def test_recover_from_names_the_orphans_of_the_degrading_leaf_and_the_dropped_prohibition(settings):
    put_status(settings,
               status("c1", "leaf-1", authoritative=False, open_rules=["orphaned_referent"]),
               status("c1", "root", authoritative=False, open_rules=["negative_constraint_dropped"],
                      degraded_by=["leaf-1"]))
    put_alerts(settings,
               alert("c1", "leaf-1", "orphaned_referent", "open", orphans=["msg-1"]),
               alert("c1", "leaf-1", "orphaned_referent", "open", orphans=["msg-1", "msg-2"]),
               alert("c1", "root", "negative_constraint_dropped", "open", missing=["prohibition:ab12"]))
    with StatusView(settings) as view:
        with pytest.raises(NotAuthoritative) as err:
            view.recover_from("c1", "root", constraint_texts={"prohibition:ab12": "Do not edit migrations/"})
        assert err.value.orphans == {"leaf-1": ("msg-1", "msg-2")}
        assert "'Do not edit migrations/'" in str(err.value)
        assert "leaf-1 (orphans msg-1, msg-2)" in str(err.value)

        put_alerts(settings, alert("c1", "leaf-1", "orphaned_referent", "resolved", orphans=[]))
        put_status(settings, status("c1", "leaf-1", authoritative=True), status("c1", "root", authoritative=True))
        view.catch_up()
        assert view.recover_from("c1", "root").authoritative
        assert view.open_sets("c1", "root") == {"negative_constraint_dropped": ("prohibition:ab12",)}


def test_the_view_answers_from_the_engines_own_status_records_of_a_client_pipeline(settings):
    from stream.client import MemoryTransport
    from stream.offline.replay import replay_lines

    transport = MemoryTransport()
    with Guard(settings, clock=None, transport=transport) as g:
        ctx = g.context("c1")
        ctx.admitted("s1")
        ctx.admitted("s2")
        ctx.checkpoint("leaf", "leaf", referents=["s1", "s2"], raw_negative_constraints=["Do not push"],
                       negative_constraints=["Do not push"])
        ctx.checkpoint("root", "root", children=["leaf"])  # drops the prohibition
        ctx.evicted("s2")
    out = replay_lines(v for _, _, v in transport.records)  # the worker's engine, offline
    put_status(settings, *out.statuses)
    put_alerts(settings, *out.alerts)
    with StatusView(settings) as view:
        last = {(s["context_id"], s["node_id"]): s["authoritative"] for s in out.statuses}
        assert {k: view.is_authoritative(*k) for k in last} == last == {("c1", "leaf"): False, ("c1", "root"): False}
        with pytest.raises(NotAuthoritative) as err:
            view.recover_from("c1", "root", constraint_texts={"do not push": "Do not push"})
        assert err.value.orphans == {"leaf": ("s2",)}
        assert err.value.missing_constraints == ("do not push",)
        assert str(err.value).startswith("cannot recover from node 'root' of context 'c1': it dropped the "
                                         "prohibition(s) 'Do not push'; it is degraded by 1 node(s) under it: "
                                         "leaf (orphans s2)")


def test_wait_for_returns_after_the_group_commits_past_the_event_with_its_status_in_view(settings):
    with Guard(settings) as g, StatusView(settings) as view:
        ctx = g.context("c1")
        emitted = ctx.checkpoint("leaf-1", "leaf", referents=["gone"])
        ctx.flush()
        tp = (emitted.topic, emitted.partition)

        failures: list[BaseException] = []

        def worker_stand_in() -> None:  # outputs acked first, then the commit (stream/worker/durability.py)
            try:
                time.sleep(0.5)
                put_status(settings, status("c1", "leaf-1", authoritative=False, open_rules=["orphaned_referent"]),
                           partition=emitted.partition)
                asyncio.run(_commit(settings, {tp: emitted.offset + 1}))
            except BaseException as exc:
                failures.append(exc)

        thread = threading.Thread(target=worker_stand_in)
        t0 = time.monotonic()
        thread.start()
        view.wait_for(emitted, timeout=15)
        waited = time.monotonic() - t0
        thread.join()
        assert failures == []
        assert waited >= 0.5
        assert view.why("c1", "leaf-1").open_rules == ("orphaned_referent",)


def test_wait_for_times_out_naming_the_group_and_the_uncommitted_offset(settings):
    with Guard(settings) as g, StatusView(settings) as view:
        ctx = g.context("c1")
        ctx.admitted("a1")
        ctx.admitted("a2")
        ctx.flush()
        asyncio.run(_commit(settings, {next(iter(ctx.positions())): 1}))  # only the first one
        with pytest.raises(TimeoutError, match=rf"worker group '{settings.app_id}' has not processed "
                                               rf"{settings.artifact_topic}\[\d\]@1 \(committed 1\) within 1"):
            view.wait_for(ctx, timeout=1)


def test_the_view_refuses_a_missing_status_topic_with_the_command_that_creates_it(kafka_settings):
    s = Settings(**{**kafka_settings.model_dump(), "status_topic": f"nope-{uuid.uuid4().hex[:6]}"})
    with pytest.raises(ConfigurationError, match=r"do not exist; run `python -m stream topics create`"):
        StatusView(s, details=False).start()


def test_a_malformed_status_record_is_skipped_and_counted(settings):
    asyncio.run(_produce(settings, [(settings.status_topic, b'["c1","x"]', b'{"type":"status"}', 0)]))
    put_status(settings, status("c1", "leaf-1", authoritative=True))
    with StatusView(settings, details=False) as view:
        assert (len(view), view.skipped) == (1, 1)
