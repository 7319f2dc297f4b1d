"""The broker stops (SIGTERM, controlled shutdown) and comes back mid-stream: the worker
reconnects by itself and no alert is lost.

This test starts its OWN single-node broker (not the session one: stopping that would
break every other test) on two ports chosen at test start, with a fresh home. Part 1 of
the real-input stream is produced and partly consumed; the broker is stopped while the
worker is busy; after a pause it is started again on the same ports and data dir
(``fresh=False``: same cluster id, same topics, same committed offsets); part 2 is
produced. The worker process is never restarted. At the end the distinct alerts equal
offline replay, repeats are byte-identical, the dead-letter topic is empty and no context
has waiting events.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from stream.devtools import kafka_local
from stream.offline.replay import replay_lines
from stream.settings import Settings
from tests.integration.harness import Worker, expected_alerts, run, run_cli, worker_env
from tests.reliability.faults import (
    SLICE,
    assert_input_complete,
    check_alerts,
    fault_env,
    group_progress,
    interleave,
    metric,
    produce_fast,
    read_topic,
    real_input_lines,
    records,
    wait_drained,
    wait_progress,
    wait_ready_partitions,
    waiting_events,
)

pytestmark = pytest.mark.integration

SEED = 77
#: Seconds the broker stays down (longer than aiokafka's request timeouts would be
#: pointless here; long enough for every client to notice and start retrying).
DOWN_SECONDS = 15


@pytest.fixture
def own_broker(tmp_path: Path):
    """A broker of this test only; yields its Settings (kafka_home, ports); always stopped."""
    port, cport = kafka_local.free_ports(2)
    settings = Settings(
        broker=f"kafka://127.0.0.1:{port}", kafka_home=tmp_path / "kafka",
        kafka_port=port, kafka_controller_port=cport,
    )
    kafka_local.start(settings, fresh=True, timeout=120, die_with_parent=True)
    try:
        yield settings
    finally:
        kafka_local.stop(settings, timeout=30)


def test_worker_survives_a_broker_restart_mid_stream_without_losing_alerts(own_broker, tmp_path):
    bootstrap = f"127.0.0.1:{own_broker.kafka_port}"
    env = fault_env(worker_env(bootstrap, tmp_path))
    created = run_cli(env, "topics", "create")
    assert created.returncode == 0, created.stderr
    lines = interleave(real_input_lines(env, tmp_path / "events.jsonl", *SLICE), seed=SEED)
    offline = replay_lines(lines)
    assert offline.waiting == {} and not offline.dead_letters
    expected = expected_alerts(lines)
    half = len(lines) // 2
    part1, part2 = lines[:half], lines[half:]

    t0 = time.monotonic()
    worker = Worker(env, tmp_path / "worker.log").start()
    alive = lambda: worker.proc.poll() is None  # noqa: E731
    try:
        wait_ready_partitions(env["CG_WEB_PORT"], lambda p: p == [0, 1, 2, 3], timeout=120)
        run(produce_fast(bootstrap, records(part1, env)))
        wait_progress(env, half // 3, timeout=240, alive=alive)
        stopped_at, _ = group_progress(env)
        stop = kafka_local.stop(own_broker, timeout=60)
        assert stop.stopped, stop.message
        time.sleep(DOWN_SECONDS)
        assert alive(), f"worker exited while the broker was down:\n{worker.log_text()[-3000:]}"
        info = kafka_local.start(own_broker, fresh=False, timeout=120, die_with_parent=True)
        restarted = time.monotonic()
        run(produce_fast(bootstrap, records(part2, env)))
        # the worker resumes by itself (no restart of the worker process)
        wait_progress(env, stopped_at + 1, timeout=300, alive=alive)
        resumed = time.monotonic() - restarted
        drained = wait_drained(env, timeout=400, alive=alive)
        waiting_gauge = metric(env["CG_WEB_PORT"], "checkpoint_guard_waiting_events")
    finally:
        code = worker.stop()
    elapsed = time.monotonic() - t0
    assert code == 0, worker.log_text()[-3000:]

    check = check_alerts(read_topic(env, env["CG_ALERTS_TOPIC"]), expected)
    assert_input_complete(env, lines)
    assert read_topic(env, env["CG_DEADLETTER_TOPIC"]) == []
    assert waiting_events(env) == {}
    assert waiting_gauge in (0.0, None)
    print(
        f"\n[broker-restart] {len(lines)} events; broker stopped at {stopped_at} committed "
        f"({stop.message}), down {DOWN_SECONDS}s, back in {info.ready_seconds:.1f}s; the worker "
        f"committed again {resumed:.0f}s after the restart; {check.records} alert records = "
        f"{check.distinct} distinct (= offline replay) + {check.repeats} identical repeats; "
        f"drained {drained:.0f}s later; {elapsed:.0f}s in all"
    )
