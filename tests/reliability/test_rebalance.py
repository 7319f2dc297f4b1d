"""Two workers share 4 partitions; kill -9 of one, then its return, lose no alert.

Both workers run the same app id (one consumer group, one set of changelog topics)
with their own data dir and web port. The real-input stream is produced in three parts:

1. both workers consume part 1; worker A is killed with SIGKILL partway through;
2. part 2 is produced; B takes over A's partitions once the coordinator evicts A
   (group session timeout), rebuilds A's tables from the changelogs and consumes;
3. A is started again on its old data dir (second rebalance: it gets partitions back
   and catches its stale local state up from the changelogs); part 3 is produced.

At the end the distinct alerts equal offline replay, repeats are byte-identical, the
dead-letter topic is empty and no context has waiting events.
"""

from __future__ import annotations

import time

import pytest

from stream.devtools import kafka_local
from stream.offline.replay import replay_lines
from tests.integration.harness import Worker, expected_alerts, run, run_cli, worker_env
from tests.reliability.faults import (
    SLICE,
    alive_all,
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

SEED = 4242
PARTITIONS = 4


def test_survivor_takes_over_a_killed_worker_and_both_rebalances_lose_no_alert(kafka_bootstrap, tmp_path):
    env_a = fault_env(worker_env(kafka_bootstrap, tmp_path, partitions=PARTITIONS))
    env_b = {**env_a, "CG_DATA_DIR": env_a["CG_DATA_DIR"] + "-b", "CG_WEB_PORT": str(kafka_local.free_ports(1)[0])}
    created = run_cli(env_a, "topics", "create")
    assert created.returncode == 0, created.stderr
    lines = interleave(real_input_lines(env_a, tmp_path / "events.jsonl", *SLICE), seed=SEED)
    offline = replay_lines(lines)
    assert offline.waiting == {} and not offline.dead_letters
    expected = expected_alerts(lines)
    n = len(lines)
    part1, part2, part3 = lines[: n * 2 // 5], lines[n * 2 // 5: n * 7 // 10], lines[n * 7 // 10:]

    t0 = time.monotonic()
    a = Worker(env_a, tmp_path / "worker-a.log").start()
    b = Worker(env_b, tmp_path / "worker-b.log").start()
    try:
        # both in the group, each with some partitions
        parts_a = wait_ready_partitions(env_a["CG_WEB_PORT"], lambda p: 0 < len(p) < PARTITIONS, timeout=120)
        parts_b = wait_ready_partitions(env_b["CG_WEB_PORT"], lambda p: 0 < len(p) < PARTITIONS, timeout=120)
        assert sorted(parts_a + parts_b) == list(range(PARTITIONS))

        run(produce_fast(kafka_bootstrap, records(part1, env_a)))
        wait_progress(env_a, len(part1) // 2, timeout=240, alive=alive_all(a, b))
        killed_at, _ = group_progress(env_a)
        a.kill()
        run(produce_fast(kafka_bootstrap, records(part2, env_a)))

        # B alone: all partitions, tables of A's partitions rebuilt from the changelogs
        taken_over = time.monotonic()
        wait_ready_partitions(env_b["CG_WEB_PORT"], lambda p: p == list(range(PARTITIONS)), timeout=180)
        takeover = time.monotonic() - taken_over
        wait_progress(env_a, len(part1) + len(part2) // 2, timeout=300, alive=alive_all(b))
        returned_at, _ = group_progress(env_a)

        # A comes back on its old data dir: the second rebalance splits the partitions again
        a = Worker(env_a, tmp_path / "worker-a2.log").start(timeout=180)
        parts_a = wait_ready_partitions(env_a["CG_WEB_PORT"], lambda p: 0 < len(p) < PARTITIONS, timeout=180)
        run(produce_fast(kafka_bootstrap, records(part3, env_a)))
        drained = wait_drained(env_a, timeout=300, alive=alive_all(a, b))
        parts_b = wait_ready_partitions(env_b["CG_WEB_PORT"], lambda p: 0 < len(p) < PARTITIONS, timeout=60)
        assert sorted(parts_a + parts_b) == list(range(PARTITIONS))
        gauges = [metric(e["CG_WEB_PORT"], "checkpoint_guard_waiting_events") for e in (env_a, env_b)]
    finally:
        code_a, code_b = a.stop(), b.stop()
    assert code_a == 0, a.log_text()[-3000:]
    assert code_b == 0, b.log_text()[-3000:]
    elapsed = time.monotonic() - t0

    check = check_alerts(read_topic(env_a, env_a["CG_ALERTS_TOPIC"]), expected)
    assert_input_complete(env_a, lines)
    assert read_topic(env_a, env_a["CG_DEADLETTER_TOPIC"]) == []
    assert waiting_events(env_a) == {}
    assert all(g in (0.0, None) for g in gauges), gauges
    print(
        f"\n[rebalance] {n} events; A killed at {killed_at} committed, B owned all {PARTITIONS} "
        f"partitions {takeover:.0f}s later; A back at {returned_at} committed with partitions {parts_a}; "
        f"{check.records} alert records = {check.distinct} distinct (= offline replay) + "
        f"{check.repeats} identical repeats; drained {drained:.0f}s after part 3; {elapsed:.0f}s in all"
    )
