"""Monitoring on the real broker: /metrics, /healthz, /readyz and node status.

One known scenario (below) is produced to real workers; the figures it implies were
worked out by hand and are asserted exactly: counters, the state gauges, the lag. Every
context is sent on one topic, so its events arrive in the order written (the worker
reads two topics; across topics the order would be the broker's choice, and so would
the ``buffered`` count).

Two workers in one group on 4 partitions must give the same node status whichever is
asked (the one that does not own the context forwards to the one that does), and their
metrics must add up to the single worker's.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from aiokafka.partitioner import murmur2
from prometheus_client.parser import text_string_to_metric_families

from stream.devtools import kafka_local
from tests.integration.harness import Worker, produce, run, run_cli, worker_env
from tests.scenarios import Ctx

SEQ_GAP_LIMIT = 2


# --------------------------------------------------------------------------- the scenario


def scenario() -> tuple[list[Ctx], list[tuple[bytes | None, bytes]]]:
    """The contexts (sent on the compaction topic) and the bad messages (artifact topic)."""
    orphan = Ctx("m-orphan")  # L1 loses both referents: open {a1}, open again {a1, a2}
    orphan.admit("a1").admit("a2").checkpoint("L1", referents=["a1", "a2"]).evict("a1").evict("a2")

    healthy = Ctx("m-healthy")  # H1 carries its prohibition; S1 drops it and its own
    healthy.admit("b1").checkpoint(
        "H1", referents=["b1"], raw_negative_constraints=["do not push"], negative_constraints=["Do  not PUSH"],
        raw_instructions=["run tests", "use ruff", "be brief"], instructions=["run tests", "use ruff"],
    ).checkpoint(
        "S1", "section", children=["H1"], raw_negative_constraints=["never delete"],
        raw_instructions=["run tests", "use ruff"], instructions=["run tests"],
    )

    frozen = Ctx("m-frozen")  # F orphaned, then frozen by a re-summarization, then ignored
    frozen.admit("c1").checkpoint("F", referents=["c1"]).evict("c1")
    frozen.checkpoint("F", referents=["c1", "c2"])                               # non_idempotent
    frozen.checkpoint("F", referents=["c9"], raw_negative_constraints=["x"])      # ignored-frozen
    frozen.events.append(dict(frozen.events[1], seq=5))                           # duplicate (seq 5)
    frozen.events.append(dict(frozen.events[2]))                                  # seq 2 again: dropped

    order = Ctx("m-order")  # seq 1 arrives first: buffered, then applied when seq 0 arrives
    order.admit("d1").checkpoint("D", referents=["d1"])
    order.events.reverse()

    gap = Ctx("m-gap")  # seq 1 never arrives; the 3rd waiting event declares the gap
    gap.admit("g0").admit("g1").admit("g2").admit("g3").checkpoint("G", referents=["g2", "g3"])
    del gap.events[1]

    waiting = Ctx("m-wait")  # seq 0 never arrives: one event keeps waiting
    waiting.checkpoint("W0").checkpoint("W1")
    del waiting.events[0]

    bad = [
        (b"m-dl", b"not json"),
        (b"m-dl", json.dumps({"type": "checkpoint", "event_id": "x", "context_id": "m-dl", "level": "leaf"}).encode()),
        (b"other", json.dumps({"type": "artifact", "event_id": "y", "context_id": "m-dl",
                               "artifact_id": "z", "op": "admitted"}).encode()),
    ]
    return [orphan, healthy, frozen, order, gap, waiting], bad


MESSAGES = 25  # 5 + 3 + 7 + 2 + 4 + 1 good, 3 bad

#: name -> {labels: value} the scenario implies (worked out by hand; see scenario()).
EXPECTED: dict[str, dict[tuple, float]] = {
    "checkpoint_guard_events_total": {
        (("outcome", "applied"), ("type", "artifact")): 11,    # 4 + 1 + 2 + 1 + 3
        (("outcome", "applied"), ("type", "checkpoint")): 8,   # L1, H1, S1, F x3, D, G
        (("outcome", "duplicate"), ("type", "checkpoint")): 1,
        (("outcome", "duplicate"), ("type", "artifact")): 0,
        (("outcome", "dropped"), ("type", "artifact")): 1,
        (("outcome", "dropped"), ("type", "checkpoint")): 0,
        (("outcome", "buffered"), ("type", "artifact")): 2,    # g2, g3
        (("outcome", "buffered"), ("type", "checkpoint")): 3,  # D, G, W1
        (("outcome", "dead_letter"), ("type", "artifact")): 3,
        (("outcome", "dead_letter"), ("type", "checkpoint")): 0,
    },
    "checkpoint_guard_dead_letters_total": {
        (("reason", "not_json"),): 1, (("reason", "node_id"),): 1, (("reason", "key"),): 1,
    },
    "checkpoint_guard_alerts_total": {
        (("rule", "orphaned_referent"), ("status", "open")): 3,
        (("rule", "orphaned_referent"), ("status", "resolved")): 0,
        (("rule", "negative_constraint_dropped"), ("status", "open")): 1,
        (("rule", "negative_constraint_dropped"), ("status", "resolved")): 0,
        (("rule", "non_idempotent"), ("status", "open")): 1,
        (("rule", "sequence_gap"), ("status", "open")): 1,
    },
    "checkpoint_guard_checkpoints_total": {
        (("level", "leaf"), ("verdict", "accepted")): 5,       # L1, H1, F, D, G
        (("level", "leaf"), ("verdict", "replaced")): 0,
        (("level", "leaf"), ("verdict", "frozen")): 1,
        (("level", "leaf"), ("verdict", "ignored-frozen")): 1,
        (("level", "section"), ("verdict", "accepted")): 1,
        (("level", "root"), ("verdict", "accepted")): 0,
    },
    "checkpoint_guard_orphan_set_size_count": {(): 3},
    "checkpoint_guard_orphan_set_size_sum": {(): 4},           # |{a1}| + |{a1,a2}| + |{c1}|
    "checkpoint_guard_orphan_set_size_bucket": {(("le", "1.0"),): 2, (("le", "2.0"),): 3},
    "checkpoint_guard_alert_latency_seconds_count": {(): 6},   # messages that produced alerts
    "checkpoint_guard_open_alerts": {
        (("level", "leaf"), ("rule", "orphaned_referent")): 2,           # L1, F
        (("level", "section"), ("rule", "orphaned_referent")): 0,
        (("level", "section"), ("rule", "negative_constraint_dropped")): 1,  # S1
        (("level", "leaf"), ("rule", "negative_constraint_dropped")): 0,
        (("level", "leaf"), ("rule", "non_idempotent")): 1,               # F
        (("level", "none"), ("rule", "sequence_gap")): 1,                 # m-gap
    },
    "checkpoint_guard_referents_declared": {
        (("level", "leaf"),): 7,     # L1 2, H1 1, F 1 (kept version), D 1, G 2
        (("level", "section"),): 0,
        (("level", "root"),): 0,
    },
    "checkpoint_guard_referents_unreachable": {(("level", "leaf"),): 3, (("level", "section"),): 0},
    "checkpoint_guard_orphan_ratio": {(("level", "leaf"),): 3 / 7},
    "checkpoint_guard_constraints_raw": {
        (("kind", "prohibitions"), ("level", "leaf")): 1,     # H1's 1 (F's kept version has none)
        (("kind", "prohibitions"), ("level", "section")): 1,
        (("kind", "instructions"), ("level", "leaf")): 3,
        (("kind", "instructions"), ("level", "section")): 2,
    },
    "checkpoint_guard_constraints_carried": {
        (("kind", "prohibitions"), ("level", "leaf")): 1,
        (("kind", "prohibitions"), ("level", "section")): 0,
        (("kind", "instructions"), ("level", "leaf")): 2,
        (("kind", "instructions"), ("level", "section")): 1,
    },
    "checkpoint_guard_survival_ratio": {
        (("kind", "prohibitions"), ("level", "leaf")): 1.0,
        (("kind", "prohibitions"), ("level", "section")): 0.0,
        (("kind", "instructions"), ("level", "leaf")): 2 / 3,
        (("kind", "instructions"), ("level", "section")): 0.5,
    },
    "checkpoint_guard_waiting_events": {(): 1},
}

NODE_L1 = {  # the orphaned node
    "context_id": "m-orphan", "node_id": "L1", "level": "leaf", "versions": 1, "frozen": False,
    "authoritative": False, "open_rules": ["orphaned_referent"], "orphans": ["a1", "a2"],
    "missing_constraints": [], "referents": ["a1", "a2"], "children": [],
    "degraded_by": [], "degraded_count": 0, "opaque": False,
}
NODE_H1 = {  # the healthy node
    "context_id": "m-healthy", "node_id": "H1", "level": "leaf", "versions": 1, "frozen": False,
    "authoritative": True, "open_rules": [], "orphans": [], "missing_constraints": [],
    "referents": ["b1"], "children": [],
    "degraded_by": [], "degraded_count": 0, "opaque": False,
}
NODE_S1 = {
    "context_id": "m-healthy", "node_id": "S1", "level": "section", "versions": 1, "frozen": False,
    "authoritative": False, "open_rules": ["negative_constraint_dropped"], "orphans": [],
    "missing_constraints": ["do not push", "never delete"], "referents": [], "children": ["H1"],
    "degraded_by": [], "degraded_count": 0, "opaque": False,
}
NODE_F = {
    "context_id": "m-frozen", "node_id": "F", "level": "leaf", "versions": 1, "frozen": True,
    "authoritative": False, "open_rules": ["non_idempotent", "orphaned_referent"], "orphans": ["c1"],
    "missing_constraints": [], "referents": ["c1"], "children": [],
    "degraded_by": [], "degraded_count": 0, "opaque": False,
}


# --------------------------------------------------------------------------- helpers


def http(port: int | str, path: str, timeout: float = 10) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as resp:
            status, body, ctype = resp.status, resp.read(), resp.headers.get("Content-Type", "")
    except urllib.error.HTTPError as exc:
        status, body, ctype = exc.code, exc.read(), exc.headers.get("Content-Type", "")
    return status, (json.loads(body) if "json" in ctype else body.decode())


def scrape(port: int | str) -> dict[str, dict[tuple, float]]:
    status, text = http(port, "/metrics")
    assert status == 200
    out: dict[str, dict[tuple, float]] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[tuple(sorted(s.labels.items()))] = s.value
    return out


def added(*scrapes: dict[str, dict[tuple, float]]) -> dict[str, dict[tuple, float]]:
    """Sum of several workers' samples (ratios are recomputed by the caller)."""
    out: dict[str, dict[tuple, float]] = {}
    for s in scrapes:
        for name, series in s.items():
            for labels, value in series.items():
                out.setdefault(name, {})
                out[name][labels] = out[name].get(labels, 0) + value
    return out


def consumed(m: dict[str, dict[tuple, float]]) -> float:
    """Messages handled: every one is applied, a duplicate, dropped, dead-lettered or waits."""
    events = m.get("checkpoint_guard_events_total", {})
    done = sum(v for k, v in events.items() if dict(k)["outcome"] != "buffered")
    return done + m.get("checkpoint_guard_waiting_events", {}).get((), 0)


def wait_until(check, timeout: float, what: str, interval: float = 0.3):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (OSError, urllib.error.URLError) as exc:  # web server not up yet
            last = exc
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def assert_expected(got: dict[str, dict[tuple, float]], expected: dict[str, dict[tuple, float]]) -> None:
    for name, series in expected.items():
        for labels, value in series.items():
            actual = got.get(name, {}).get(labels)
            assert actual == pytest.approx(value), f"{name}{dict(labels)} = {actual}, expected {value}"


def records(env: dict[str, str]) -> list[tuple[str, bytes | None, bytes]]:
    ctxs, bad = scenario()
    recs = [(env["CG_COMPACTION_TOPIC"], c.context_id.encode(), line) for c in ctxs for line in c.lines()]
    recs += [(env["CG_ARTIFACT_TOPIC"], key, value) for key, value in bad]
    assert len(recs) == MESSAGES
    return recs


def partition_of(context_id: str, partitions: int = 4) -> int:
    return (murmur2(context_id.encode()) & 0x7FFFFFFF) % partitions


@pytest.fixture
def env(kafka_bootstrap: str, tmp_path: Path) -> dict[str, str]:
    env = worker_env(kafka_bootstrap, tmp_path, CG_SEQ_GAP_LIMIT=SEQ_GAP_LIMIT)
    created = run_cli(env, "topics", "create")
    assert created.returncode == 0, created.stderr
    return env


# --------------------------------------------------------------------------- tests


def test_metrics_report_the_scenario_exactly_and_the_state_gauges_survive_a_restart(
    kafka_bootstrap: str, env: dict[str, str], tmp_path: Path
) -> None:
    port = env["CG_WEB_PORT"]
    worker = Worker(env, tmp_path / "worker.log").start(wait_ready=False)
    try:
        # /healthz answers as soon as the web server is up; /readyz only once the
        # partitions are assigned and the tables recovered.
        ready_answers = []

        def ready() -> bool:
            status, body = http(port, "/readyz")
            ready_answers.append((status, body))
            return status == 200

        wait_until(ready, 90, "/readyz 200")
        assert http(port, "/healthz") == (200, {"status": "ok"})
        status, body = ready_answers[-1]
        assert body["status"] == "ready" and body["partitions"] == [0, 1, 2, 3]
        # the web server is up seconds before the group has assigned the partitions
        assert ready_answers[:-1], "no /readyz answer before ready"
        for status, body in ready_answers[:-1]:
            assert status == 503 and body["status"] == "not ready" and body["reasons"], body

        run(produce(kafka_bootstrap, records(env)))
        m = wait_until(lambda: (s := scrape(port)) and consumed(s) == MESSAGES and s, 60, "all messages consumed")
        # lag: the last fetch's high watermark may trail by a poll; it reaches 0
        m = wait_until(lambda: (s := scrape(port)) and all(
            v == 0 for v in s["checkpoint_guard_consumer_lag"].values()) and s, 30, "zero lag")
        assert_expected(m, EXPECTED)
        assert len(m["checkpoint_guard_consumer_lag"]) == 8  # 2 input topics x 4 partitions
        assert {dict(k)["topic"] for k in m["checkpoint_guard_consumer_lag"]} == {
            env["CG_COMPACTION_TOPIC"], env["CG_ARTIFACT_TOPIC"]}
        assert m["checkpoint_guard_alert_latency_seconds_sum"][()] > 0

        # node status from the only worker (it owns every partition)
        for node in (NODE_L1, NODE_H1, NODE_S1, NODE_F):
            status, body = http(port, f"/nodes/{node['context_id']}/{node['node_id']}")
            assert status == 200, body
            assert body == {**node, "partition": partition_of(node["context_id"]),
                            "served_by": f"http://127.0.0.1:{port}"}
        status, body = http(port, "/nodes/m-orphan/nope")
        assert status == 404 and body["error"] == "unknown node"
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]

    # A new process on the same data dir: the state gauges are rebuilt from the tables.
    worker = Worker(env, tmp_path / "worker2.log").start(wait_ready=False)
    try:
        wait_until(lambda: http(port, "/readyz")[0] == 200, 90, "/readyz 200 after restart")
        after = scrape(port)
        state_gauges = {name: dict(series) for name, series in EXPECTED.items()
                        if not name.endswith(("_total", "_count", "_sum", "_bucket"))}
        # not in the state: the gap was declared by the previous process
        state_gauges["checkpoint_guard_open_alerts"][(("level", "none"), ("rule", "sequence_gap"))] = 0
        assert_expected(after, state_gauges)
        assert "metrics: state gauges rebuilt from 6 nodes" in worker.log_text()
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]


def test_two_workers_answer_node_status_alike_and_their_gauges_add_up_after_a_rebalance(
    kafka_bootstrap: str, env: dict[str, str], tmp_path: Path
) -> None:
    """The scenario is processed by one worker; a second one joins the group and takes
    half the partitions (restoring their state from the state log). Then both
    answer node status alike, their state gauges add up to the scenario's, and an event
    processed after the rebalance shows up in both."""
    env2 = {**env, "CG_WEB_PORT": str(kafka_local.free_ports(1)[0]), "CG_DATA_DIR": str(tmp_path / "data-2")}
    ports = [env["CG_WEB_PORT"], env2["CG_WEB_PORT"]]
    workers = [Worker(env, tmp_path / "w1.log").start()]
    try:
        wait_until(lambda: http(ports[0], "/readyz")[0] == 200, 90, "worker 1 ready")
        run(produce(kafka_bootstrap, records(env)))
        wait_until(lambda: consumed(scrape(ports[0])) == MESSAGES, 60, "all messages consumed by worker 1")

        workers.append(Worker(env2, tmp_path / "w2.log").start())

        def settled() -> dict[str, list[int]] | None:
            answers = [http(p, "/readyz") for p in ports]
            if any(status != 200 for status, _ in answers):
                return None
            owned = {body["url"]: body["partitions"] for _, body in answers}
            flat = sorted(p for parts in owned.values() for p in parts)
            return owned if flat == [0, 1, 2, 3] and len(owned) == 2 else None

        owners = wait_until(settled, 90, "both workers ready with the partitions split between them")
        owner_of = {p: url for url, parts in owners.items() for p in parts}
        urls = [f"http://127.0.0.1:{p}" for p in ports]
        assert set(owners) == set(urls)

        # Each worker rebuilt its gauges from the state of the partitions it now owns;
        # summed, they are the scenario's state. Not in the state: the gap declared by
        # worker 1 counts only if worker 1 kept that context.
        expected = {name: dict(series) for name, series in EXPECTED.items()
                    if not name.endswith(("_total", "_count", "_sum", "_bucket")) and "ratio" not in name}
        gap_kept = owner_of[partition_of("m-gap")] == urls[0]
        expected["checkpoint_guard_open_alerts"][(("level", "none"), ("rule", "sequence_gap"))] = int(gap_kept)
        assert_expected(added(*(scrape(p) for p in ports)), expected)

        for node in (NODE_L1, NODE_H1, NODE_S1, NODE_F):
            path = f"/nodes/{node['context_id']}/{node['node_id']}"
            answers = [http(p, path) for p in ports]  # one of them forwards to the other
            assert answers[0] == answers[1], path
            status, body = answers[0]
            partition = partition_of(node["context_id"])
            assert status == 200 and body == {**node, "partition": partition, "served_by": owner_of[partition]}
        unknown = [http(p, "/nodes/m-orphan/nope") for p in ports]
        assert unknown[0] == unknown[1] and unknown[0][0] == 404

        # after the rebalance: a1 comes back, L1's orphan set shrinks to {a2}
        orphan = scenario()[0][0]
        orphan.admit("a1")
        run(produce(kafka_bootstrap, [(env["CG_COMPACTION_TOPIC"], b"m-orphan", orphan.lines()[-1])]))
        unreachable = lambda: sum(  # noqa: E731
            scrape(p)["checkpoint_guard_referents_unreachable"][(("level", "leaf"),)] for p in ports)
        wait_until(lambda: unreachable() == 2, 30, "the new event processed")
        answers = [http(p, "/nodes/m-orphan/L1") for p in ports]
        assert answers[0] == answers[1] == (200, {**NODE_L1, "orphans": ["a2"], "partition": partition_of("m-orphan"),
                                                  "served_by": owner_of[partition_of("m-orphan")]})
        for s in (scrape(p) for p in ports):  # each worker reports lag only for its own partitions
            assert len(s["checkpoint_guard_consumer_lag"]) == 4
        for port in ports:
            assert http(port, "/healthz") == (200, {"status": "ok"})
    finally:
        for w in workers:
            w.stop()
