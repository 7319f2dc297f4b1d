"""stream.client without a broker: validation = the decoder's, seq and event ids, retried flushes.

The client's records go to a :class:`~stream.client.MemoryTransport` and from there through
the real engine (:func:`stream.offline.replay.replay_lines`, the path of ``python -m stream replay``).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from stream.client import (
    AsyncGuard,
    ConstraintChannel,
    FlushFailed,
    Guard,
    InvalidEvent,
    MemoryTransport,
    NodeStatus,
    NotAuthoritative,
    collect_referents,
    parse_status,
)
from stream.offline.replay import replay_lines
from stream.settings import Settings
from stream.wire import Limits, decode_event, encode

REPO = Path(__file__).resolve().parents[2]
SETTINGS = Settings()


def guard(transport: MemoryTransport | None = None, settings: Settings = SETTINGS) -> Guard:
    return Guard(settings, clock=None, transport=transport or MemoryTransport())


def hand_written(kind: str, **fields: Any) -> bytes:
    """The JSON a pipeline author would have written by hand for the same call."""
    base: dict[str, Any] = {"schema_version": 1, "type": kind, "event_id": "e", "context_id": "ctx", "seq": 0}
    if kind == "artifact":
        base.update(artifact_id="a1", op="admitted", tier="live")
    else:
        base.update(node_id="n1", level="leaf")
    base.update(fields)
    return json.dumps(base).encode()


def decoder_reason(data: bytes, settings: Settings = SETTINGS) -> str:
    with pytest.raises(InvalidEvent) as err:
        decode_event(data, limits=Limits.from_settings(settings))
    return str(err.value)


# ------------------------------------------------------------------ validation

BAD_CHECKPOINTS = [
    {"level": "trunk"},
    {"node_id": ""},
    {"node_id": "n" * 1025},
    {"children": "leaf-1"},
    {"children": ["ok", ""]},
    {"referents": [1]},
    {"referents": {"a": 1}},
    {"negative_constraints": [{"text": "an object without id"}]},
    {"raw_negative_constraints": [3]},
    {"raw_negative_constraints": ["x" * 4097]},
    {"opaque": 1},
    {"opaque": "yes"},
]
BAD_ARTIFACTS = [{"tier": "cold"}, {"op": "deleted"}, {"artifact_id": ""}, {"artifact_id": 7}]


@pytest.mark.parametrize("bad", BAD_CHECKPOINTS, ids=lambda d: f"{next(iter(d))}={next(iter(d.values()))!r}"[:40])
def test_a_bad_checkpoint_call_raises_the_decoders_dead_letter_reason(bad):
    transport = MemoryTransport()
    with guard(transport) as g:
        ctx = g.context("ctx")
        args = {"node_id": "n1", "level": "leaf", **bad}
        with pytest.raises(InvalidEvent) as err:
            ctx.checkpoint(args.pop("node_id"), args.pop("level"), **args)
        assert str(err.value) == decoder_reason(hand_written("checkpoint", **bad))
        assert str(err.value).startswith(next(iter(bad)))
        assert ctx.next_seq == 0
    assert transport.records == []


@pytest.mark.parametrize("bad", BAD_ARTIFACTS, ids=lambda d: f"{next(iter(d))}={next(iter(d.values()))!r}")
def test_a_bad_artifact_call_raises_the_decoders_dead_letter_reason(bad):
    transport = MemoryTransport()
    with guard(transport) as g:
        ctx = g.context("ctx")
        args = {"artifact_id": "a1", "op": "admitted", "tier": "live", **bad}
        call = ctx.admitted if args.pop("op") == "admitted" else None
        with pytest.raises(InvalidEvent) as err:
            if call is None:
                ctx._handle._builder.artifact(bad["op"], args.pop("artifact_id"), **args)
            else:
                call(args.pop("artifact_id"), **args)
        assert str(err.value) == decoder_reason(hand_written("artifact", **bad))
    assert transport.records == []


def test_a_list_over_a_configured_limit_raises_naming_the_setting():
    settings = Settings(max_referents=2)
    with guard(settings=settings) as g:
        with pytest.raises(InvalidEvent, match=r"referents: 3 items, limit is 2 \(CG_MAX_REFERENTS\)"):
            g.context("ctx").checkpoint("n1", "leaf", referents=["a", "b", "c"])


def test_a_bad_context_id_raises_when_the_handle_is_opened():
    with guard() as g:
        with pytest.raises(InvalidEvent, match="context_id: String should have at least 1 character"):
            g.context("")
        with pytest.raises(InvalidEvent, match="context_id: Input should be a valid string"):
            g.context(42)  # type: ignore[arg-type]


def test_a_valid_call_is_the_event_the_worker_decodes():
    transport = MemoryTransport()
    with guard(transport) as g:
        ctx = g.context("ctx")
        ctx.checkpoint("root", "root", children={"s2", "s1"}, referents=("a",),
                       negative_constraints=[{"id": "p1", "text": "Do not push"}],
                       raw_negative_constraints=["Do  NOT push"],
                       opaque=False, text="summary", cycle=3)
    (topic, key, value), = transport.records
    event = decode_event(value)
    assert (topic, key) == (SETTINGS.compaction_topic, b"ctx")
    assert (event.node_id, event.children, event.referents, event.seq) == ("root", ("s1", "s2"), ("a",), 0)
    assert (event.negative_constraints, event.raw_negative_constraints, event.cycle) == (("p1",), ("do not push",), 3)


# ------------------------------------------------------------------ seq and event ids


def test_seq_is_one_counter_for_both_event_kinds_starting_at_since():
    transport = MemoryTransport()
    with guard(transport) as g:
        ctx = g.context("ctx", since=41)
        emitted = [ctx.admitted("a1"), ctx.checkpoint("n1", "leaf", referents=["a1"]), ctx.evicted("a1")]
        assert ctx.next_seq == 44
    assert [e.seq for e in emitted] == [41, 42, 43]
    assert [json.loads(v)["seq"] for _, _, v in transport.records] == [41, 42, 43]
    assert [t for t, _, _ in transport.records] == [SETTINGS.artifact_topic, SETTINGS.compaction_topic,
                                                    SETTINGS.artifact_topic]


def test_since_none_sends_events_without_seq():
    transport = MemoryTransport()
    with guard(transport) as g:
        g.context("ctx", since=None).admitted("a1")
    assert "seq" not in json.loads(transport.records[0][2])


def test_the_same_calls_give_the_same_event_ids_and_bytes():
    def emit() -> list[bytes]:
        transport = MemoryTransport()
        with guard(transport) as g:
            ctx = g.context("ctx")
            ctx.admitted("a1", kind="raw_span")
            ctx.checkpoint("n1", "leaf", referents=["a1"])
            ctx.admitted("a1")  # the same admission again: a new event, a new id
        return [v for _, _, v in transport.records]

    first, second = emit(), emit()
    assert first == second
    ids = [json.loads(v)["event_id"] for v in first]
    assert len(set(ids)) == 3 and ids[0].startswith("0-") and ids[2].startswith("2-")


def test_another_event_at_a_reused_seq_gets_another_event_id():
    with guard() as g:
        a = g.context("c1").admitted("a1")
        b = g.context("c2").admitted("a2")
        c = g.context("c3").admitted("a1")
    assert a.seq == b.seq == c.seq == 0
    assert len({a.event_id, b.event_id, c.event_id}) == 3


def test_context_returns_the_same_handle_and_refuses_a_second_since():
    with guard() as g:
        ctx = g.context("ctx", since=5)
        assert g.context("ctx") is ctx
        with pytest.raises(ValueError, match="already open"):
            g.context("ctx", since=0)


def test_calls_before_start_say_how_to_start():
    g = guard()
    with pytest.raises(RuntimeError, match="context manager"):
        g.context("ctx").admitted("a1")


# ------------------------------------------------------------------ flush and retries


class LostAcks(MemoryTransport):
    """Delivers the first ``lost`` records but loses their acknowledgement (a timeout)."""

    def __init__(self, lost: int) -> None:
        super().__init__()
        self.lost = lost

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future:
        future = await super().send(topic, key, value)
        if self.lost > 0:
            self.lost -= 1
            failed: asyncio.Future = asyncio.get_running_loop().create_future()
            failed.set_exception(TimeoutError("no acknowledgement within request_timeout_ms"))
            return failed
        return future


def pipeline(ctx: Any) -> None:
    ctx.admitted("a1")
    ctx.admitted("a2")
    ctx.checkpoint("leaf", "leaf", referents=["a1", "a2"], raw_negative_constraints=["do not push"])
    ctx.evicted("a1")
    ctx.checkpoint("root", "root", children=["leaf"])


def test_a_retried_flush_resends_the_same_bytes_and_the_engine_ignores_the_copies():
    transport = LostAcks(lost=3)
    g = guard(transport).start()
    ctx = g.context("ctx")
    pipeline(ctx)
    expected = r"3 event\(s\) of context 'ctx' not acknowledged .*call flush\(\) again"
    with pytest.raises(FlushFailed, match=expected) as err:
        ctx.flush()
    assert [e.seq for e in err.value.failed] == [0, 1, 2]
    ctx.flush()  # re-sends the three: delivered twice now
    g.stop()

    values = [v for _, _, v in transport.records]
    assert len(values) == 8 and values[5:] == values[:3]
    reference = MemoryTransport()
    with guard(reference) as g2:
        pipeline(g2.context("ctx"))
    once = replay_lines(v for _, _, v in reference.records)
    twice = replay_lines(values)
    assert twice.alerts == once.alerts
    assert [(a["rule"], a["node_id"]) for a in once.alerts] == [
        ("negative_constraint_dropped", "leaf"), ("orphaned_referent", "leaf"), ("negative_constraint_dropped", "root")]
    assert twice.applied == once.applied == 5
    assert twice.duplicates + twice.dropped == 3


def test_leaving_the_with_block_flushes_and_reports_what_was_not_acknowledged():
    transport = LostAcks(lost=10)
    with pytest.raises(FlushFailed) as err:
        with guard(transport) as g:
            pipeline(g.context("ctx"))
    assert len(err.value.failed) == 5
    assert all(isinstance(e, TimeoutError) for e in err.value.errors)


def test_an_acknowledged_event_knows_its_partition_and_offset():
    with guard() as g:
        ctx = g.context("ctx")
        first, second = ctx.admitted("a1"), ctx.admitted("a2")
        ctx.flush()
    assert (first.partition, first.offset, second.offset) == (0, 0, 1)
    assert ctx.positions() == {(SETTINGS.artifact_topic, 0): 1}
    assert second.positions() == {(SETTINGS.artifact_topic, 0): 1}


def test_the_async_guard_emits_the_same_bytes_as_the_sync_one():
    sync = MemoryTransport()
    with guard(sync) as g:
        pipeline(g.context("ctx"))

    async def main() -> MemoryTransport:
        transport = MemoryTransport()
        async with AsyncGuard(SETTINGS, clock=None, transport=transport) as ag:
            ctx = ag.context("ctx")
            await ctx.admitted("a1")
            await ctx.admitted("a2")
            await ctx.checkpoint("leaf", "leaf", referents=["a1", "a2"], raw_negative_constraints=["do not push"])
            await ctx.evicted("a1")
            await ctx.checkpoint("root", "root", children=["leaf"])
            with pytest.raises(InvalidEvent, match="level: Input should be 'leaf', 'section' or 'root'"):
                await ctx.checkpoint("x", "trunk")
        return transport

    assert asyncio.run(main()).records == sync.records


def test_the_clock_stamps_occurred_at_and_leaves_the_event_id_alone():
    from datetime import datetime

    t = datetime(2026, 12, 1, 10, 0, 0, tzinfo=UTC)
    a, b = MemoryTransport(), MemoryTransport()
    with Guard(SETTINGS, clock=lambda: t, transport=a) as g:
        g.context("ctx").admitted("a1")
    with Guard(SETTINGS, clock=None, transport=b) as g:
        g.context("ctx").admitted("a1")
    stamped, plain = json.loads(a.records[0][2]), json.loads(b.records[0][2])
    assert stamped["occurred_at"] == "2026-12-01T10:00:00.000Z" and "occurred_at" not in plain
    assert stamped["event_id"] == plain["event_id"]


# ------------------------------------------------------------------ constraint channel, referents

RULE = "Do not edit the generated files under migrations/"  # the clause the matcher extracts
RAW = [
    "Please fix the failing test in tests/test_api.py.",
    "Do not edit the generated files under migrations/. Run the suite with pytest -q.",
]


def test_the_channel_fills_both_constraint_fields_so_no_prohibition_is_dropped():
    channel = ConstraintChannel()
    prepared = channel.prepare(RAW)
    assert [c.text for c in prepared.raw] == [RULE]
    summary = channel.attach("Fixed the API test.", prepared)  # the model forgot the rule
    assert f"- {RULE}\n" in summary + "\n"
    transport = MemoryTransport()
    with guard(transport) as g:
        ctx = g.context("ctx")
        ctx.checkpoint("leaf", "leaf", text=summary, **channel.checkpoint_fields(prepared))
        later = channel.prepare(["Now update the README."])
        ctx.checkpoint("root", "root", children=["leaf"], **channel.checkpoint_fields(later))
    assert replay_lines(v for _, _, v in transport.records).alerts == []


def test_a_summary_written_without_the_channel_that_drops_a_prohibition_opens_the_alert():
    channel = ConstraintChannel()
    prepared = channel.prepare(RAW)
    summary = "Fixed the failing API test; ran pytest."
    assert channel.carried_by(summary) == []
    assert channel.carried_by("The user said not to edit the generated files under migrations/.") != []
    transport = MemoryTransport()
    with guard(transport) as g:
        g.context("ctx").checkpoint("leaf", "leaf", text=summary, negative_constraints=channel.carried_by(summary),
                                    raw_negative_constraints=[c.as_wire() for c in prepared.raw])
    alerts = replay_lines(v for _, _, v in transport.records).alerts
    assert [(a["rule"], a["missing_constraints"]) for a in alerts] == [
        ("negative_constraint_dropped", [prepared.raw[0].id])]
    assert channel.texts()[prepared.raw[0].id] == RULE


def test_referents_are_the_covered_artifacts_plus_those_the_summary_names():
    covered = ["msg-2", {"artifact_id": "msg-1"}, type("A", (), {"id": "msg-3"})()]
    names = {"src/app.py": "file:src/app.py", "call_9": "tool:call_9"}
    assert collect_referents(covered) == ["msg-1", "msg-2", "msg-3"]
    assert collect_referents(covered, summary="Edited src/app.py (see call_9).", names=names) == [
        "file:src/app.py", "msg-1", "msg-2", "msg-3", "tool:call_9"]
    assert collect_referents([], summary="Edited src/app.pyc", names=names) == []


# ------------------------------------------------------------------ status records


def status_record(**overrides: Any) -> dict[str, Any]:
    rec = {"schema_version": 1, "type": "status", "context_id": "ctx", "node_id": "root", "level": "root",
           "authoritative": False, "frozen": False, "open_rules": [], "degraded_by": ["leaf-1"],
           "degraded_count": 1, "trigger": {"event_id": "e9", "type": "artifact", "topic": "artifact-events",
                                            "partition": 2, "offset": 40}, "detected_at": None}
    rec.update(overrides)
    return rec


def test_a_status_record_parses_into_the_node_status_it_describes():
    s = parse_status(b'["ctx","root"]', encode(status_record()))
    assert (s.authoritative, s.degraded_by, s.trigger) == (
        False, ("leaf-1",), ("e9", "artifact", "artifact-events", 2, 40))
    assert str(s) == "node 'root' of context 'ctx' is not authoritative: degraded by leaf-1"
    with pytest.raises(ValueError):
        parse_status(b"k", encode(status_record(authoritative="no")))


def test_not_authoritative_names_orphans_dropped_prohibitions_and_degrading_nodes():
    s = NodeStatus("ctx", "root", "root", False, False, ("negative_constraint_dropped",), ("leaf-1", "leaf-2"), 3,
                   None, None)
    err = NotAuthoritative(s, {"leaf-1": ("msg-1", "msg-2")}, ("prohibition:ab",),
                           {"prohibition:ab": "Do not edit migrations/"})
    assert str(err) == (
        "cannot recover from node 'root' of context 'ctx': it dropped the prohibition(s) 'Do not edit migrations/'; "
        "it is degraded by 3 node(s) under it: leaf-1 (orphans msg-1, msg-2), leaf-2 (+1 more); "
        "re-fetch the referents, re-compact the subtree, or refuse the task"
    )


def test_a_status_re_sent_without_its_list_still_says_how_many_nodes_degrade_it():
    s = parse_status(b'["ctx","root"]', encode(status_record(degraded_by=[], degraded_count=4200,
                                                             degraded_truncated=True)))
    assert (s.authoritative, s.degraded_by, s.degraded_count, s.degraded_truncated) == (False, (), 4200, True)
    assert str(s) == ("node 'root' of context 'ctx' is not authoritative: degraded by 4200 node(s) under it "
                      "(not listed: the record was too large)")
    assert parse_status(b"k", encode(status_record())).degraded_truncated is False


def test_not_authoritative_counts_what_an_alert_left_unlisted():
    orphans = tuple(f"a{i:04d}" for i in range(1000))  # an alert lists at most 1,000
    s = NodeStatus("ctx", "n", "leaf", False, False, ("negative_constraint_dropped", "orphaned_referent"), (), 0,
                   None, None)
    err = NotAuthoritative(s, {"n": orphans}, ("k1", "k2"), set_sizes={("n", "orphaned_referent"): 2500,
                                                                       ("n", "negative_constraint_dropped"): 2})
    assert "it dropped the prohibition(s) 'k1', 'k2';" in str(err)
    assert f"its referents {', '.join(orphans[:10])} (+2490 more) are unreachable" in str(err)


def test_the_client_producer_is_idempotent_with_acks_all_and_the_sasl_settings():
    from stream import kafka_clients
    from stream.client.transport import KafkaTransport

    s = Settings(broker="kafka://h1:1", security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-256",
                 sasl_username="alice", sasl_password="pw-for-test", max_message_bytes=2 << 20)

    async def build():
        p = kafka_clients.idempotent_producer(s)
        try:
            inner = p.client
            return (p._txn_manager is not None, p._sender._acks, p._max_request_size,
                    p._message_accumulator._linger_time, inner._security_protocol, inner._sasl_mechanism,
                    inner._sasl_plain_username)
        finally:
            await p.stop()

    idempotent, acks, max_request, linger, *security = asyncio.run(build())
    assert idempotent and acks == -1 and max_request == (2 << 20) + (64 << 10)  # -1: acks=all
    assert linger == 0.005
    assert security == ["SASL_PLAINTEXT", "SCRAM-SHA-256", "alice"]
    assert KafkaTransport(s).settings is s


# ------------------------------------------------------------------ purity

CHECK = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import stream.client, stream.client.status, stream.client.guard
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] in ("faust", "mode", "rocksdict"))))
"""


def test_importing_the_client_loads_neither_faust_nor_mode(tmp_path):
    proc = subprocess.run([sys.executable, "-I", "-c", CHECK, str(REPO)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


# --------------------------------------------------------------------------- no broker: one line, not a traceback


def _closed_port_env(tmp_path: Path) -> tuple[dict[str, str], int]:
    import os

    from stream.devtools.kafka_local import free_ports

    (port,) = free_ports(1)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env.update(PYTHONPATH=str(REPO), CG_BROKER=f"kafka://127.0.0.1:{port}", XDG_DATA_HOME=str(tmp_path / "xdg"))
    return env, port


@pytest.mark.parametrize("which", ["Guard", "StatusView"])
def test_a_client_that_cannot_reach_kafka_raises_one_guard_error_line_and_aiokafka_prints_nothing(tmp_path, which):
    probe = (f"from stream.client import {which}, KafkaUnavailable, GuardError\n"
             "try:\n"
             f"    {which}().start()\n"
             "except KafkaUnavailable as exc:\n"
             "    assert isinstance(exc, GuardError) and exc.__cause__ is not None\n"
             "    print(exc)\n")
    env, port = _closed_port_env(tmp_path)
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr  # no "Unable connect to ..." from aiokafka
    assert proc.stdout == (f"the {which} cannot reach Kafka at 127.0.0.1:{port}: nothing listens there (connection "
                           "refused); start the broker (a local one: `checkpoint-guard kafka start`) or point "
                           "CG_BROKER at it\n")


def test_the_example_pipeline_without_a_broker_says_so_in_one_line_with_exit_1(tmp_path):
    env, port = _closed_port_env(tmp_path)
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "pipeline.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.splitlines() == [
        f"pipeline.py: error: the Guard cannot reach Kafka at 127.0.0.1:{port}: nothing listens there (connection "
        "refused); start the broker (a local one: `checkpoint-guard kafka start`) or point CG_BROKER at it "
        "(`make example` starts a broker, the topics and a worker for it)"
    ], proc.stderr
