"""Live = ``replay --from-kafka --verify`` for events without ``seq`` whose checkpoints and
artifacts share millisecond timestamps (issue 28.1; DESIGN.md §4 *Across the two topics*:
timestamp, then ``compaction-events`` before ``artifact-events``, then offset — the
worker's merge and the forensic replay use the one order of stream/order.py).

The input is on the topics before the worker reads it (so the worker's merge never
releases one topic alone for want of the other: no lag beyond ``CG_MAX_IDLE``); once
straight, once with a ``kill -9`` of the worker in the middle and the rest produced
while it is down.
"""

from __future__ import annotations

import asyncio
import json
import random
import time

import pytest

from stream.offline.replay import replay_lines
from tests.integration.harness import Worker, context_of, run, run_cli, worker_env
from tests.reliability.faults import fault_env, group_progress, wait_drained, wait_progress

pytestmark = pytest.mark.integration

SEED = 2028


def _contexts(n: int, steps: int, *, seed: int, with_seq: int = 0) -> list[tuple[int, bytes]]:
    """(timestamp ms, line) of ``n`` contexts, ``steps`` instants each; at most instants a
    checkpoint and an artifact event share the timestamp. The first ``with_seq``
    contexts carry ``seq`` (their order is exact whatever the timestamps)."""
    rng = random.Random(seed)
    t0 = int(time.time() * 1000) - 600_000
    out: list[tuple[int, bytes]] = []
    for c in range(n):
        ctx = f"order-{seed}-{c}"
        arts = [f"a{i}" for i in range(6)]
        nodes = [f"n{i}" for i in range(8)]
        seq = 0
        for step in range(steps):
            ts = t0 + step * 2 + rng.randint(0, 1)
            kinds = rng.choice((("checkpoint", "artifact"), ("artifact", "checkpoint"), ("artifact",),
                                ("checkpoint",), ("artifact", "artifact", "checkpoint")))
            for kind in kinds:
                ev: dict = {"type": kind, "schema_version": 1, "event_id": f"{ctx}/e{seq}", "context_id": ctx}
                if kind == "artifact":
                    ev.update(artifact_id=rng.choice(arts), op=rng.choice(("admitted", "evicted")),
                              tier=rng.choice(("live", "durable")))
                else:
                    i = rng.randrange(len(nodes))
                    leaf = i >= 4
                    ev.update(node_id=nodes[i], level="leaf" if leaf else "section",
                              children=[] if leaf else rng.sample(nodes[4:], 2),
                              referents=rng.sample(arts, rng.randint(1, 3)),
                              negative_constraints=[], raw_negative_constraints=[])
                if c < with_seq:
                    ev["seq"] = seq
                seq += 1
                out.append((ts, json.dumps(ev, separators=(",", ":")).encode()))
    return out


def _in_contract_order(stamped: list[tuple[int, bytes]]) -> list[bytes]:
    """The lines as DESIGN.md §4 applies them: timestamp, checkpoints first, then offset."""
    ranked = [(ts, 0 if b'"type":"checkpoint"' in line else 1, i, line) for i, (ts, line) in enumerate(stamped)]
    return [line for *_, line in sorted(ranked)]


async def _produce(bootstrap: str, env: dict[str, str], stamped: list[tuple[int, bytes]]) -> None:
    """Each line to its topic with its own timestamp; artifacts are sent before the
    checkpoints (so their offsets, and a name order, would put them first)."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5)
    await producer.start()
    try:
        pending = []
        for kind, topic in (("artifact", env["CG_ARTIFACT_TOPIC"]), ("checkpoint", env["CG_COMPACTION_TOPIC"])):
            for ts, line in stamped:
                if f'"type":"{kind}"'.encode() in line:
                    pending.append(await producer.send(topic, line, key=context_of(line), timestamp_ms=ts))
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


def _verify(env: dict[str, str]) -> str:
    done = run_cli(env, "replay", "--from-kafka", "--verify", timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "alerts compared: 0 missing, 0 extra, 0 different" in done.stderr, done.stderr
    assert "node statuses compared: 0 missing, 0 extra, 0 different" in done.stderr, done.stderr
    return next(line for line in done.stderr.splitlines() if " alerts compared" in line)


def _the_order_matters(stamped: list[tuple[int, bytes]]) -> None:
    """The input is one whose alerts depend on the cross-topic order (else the test proves nothing)."""
    contract = replay_lines(_in_contract_order(stamped))
    artifacts_first = replay_lines([line for *_, line in sorted(
        (ts, 1 if b'"type":"checkpoint"' in line else 0, i, line) for i, (ts, line) in enumerate(stamped))])
    assert contract.alerts and {a["alert_id"] for a in contract.alerts} != {
        a["alert_id"] for a in artifacts_first.alerts
    }


def test_live_equals_forensic_replay_for_seq_less_events_with_colliding_timestamps(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path)
    assert run_cli(env, "topics", "create").returncode == 0
    stamped = _contexts(12, 60, seed=SEED, with_seq=2)
    _the_order_matters(stamped)
    run(_produce(kafka_bootstrap, env, stamped))
    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        wait_drained(env, timeout=180, alive=lambda: worker.proc.poll() is None)
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]
    summary = _verify(env)
    print(f"\n[order] {len(stamped)} events, 12 contexts (10 without seq): {summary}")


def test_live_equals_forensic_replay_with_a_kill_9_in_the_middle(kafka_bootstrap, tmp_path):
    env = fault_env(worker_env(kafka_bootstrap, tmp_path, CG_COMMIT_INTERVAL="0.2"))
    assert run_cli(env, "topics", "create").returncode == 0
    stamped = _contexts(24, 150, seed=SEED + 1, with_seq=4)
    _the_order_matters(stamped)
    cut = sorted(ts for ts, _ in stamped)[len(stamped) // 2]  # the first half of the time line
    first = [x for x in stamped if x[0] <= cut]
    rest = [x for x in stamped if x[0] > cut]
    run(_produce(kafka_bootstrap, env, first))
    worker = Worker(env, tmp_path / "worker-0.log").start()
    try:
        wait_progress(env, 1, timeout=180, alive=lambda: worker.proc.poll() is None, poll=0.1)
    finally:
        worker.kill()  # kill -9: what it applied since its last commit is applied again
    killed_at, _ = group_progress(env)
    run(_produce(kafka_bootstrap, env, rest))
    worker = Worker(env, tmp_path / "worker-1.log").start(timeout=180)
    try:
        wait_drained(env, timeout=240, alive=lambda: worker.proc.poll() is None)
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]
    summary = _verify(env)
    print(f"\n[order] {len(stamped)} events, 24 contexts (20 without seq), kill -9 at {killed_at} committed, "
          f"{len(rest)} produced while down: {summary}")
    assert killed_at < len(stamped)
