"""kill -9 of the worker at seeded random points of the real-input stream loses no alert.

A large deterministic slice of the real-input stream (``faults.SLICE``: 15 of the 30
trajectories, ~7.3k events, every alert rule but sequence_gap)
is produced with its contexts interleaved, checkpoints and artifacts on their two
topics (so seq buffering is exercised all the time), paced over ``PRODUCE_SECONDS`` so
the stream outlasts the faults. After each (re)start the worker is killed with SIGKILL
once it has committed a seeded random number of further records, plus a seeded random
delay — so kills land anywhere in a batch's handling — and restarted; one restart is
on a fresh, empty data dir, so the tables come back from their changelog topics only.

At the end: the distinct alerts equal offline replay of the same events, every repeat
is byte-identical to its original, the dead-letter topic is empty and no context has
events waiting for an earlier seq.
"""

from __future__ import annotations

import json
import random
import threading
import time

import pytest

from stream.offline.replay import replay_lines
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
    produce_paced,
    read_topic,
    read_topic_until,
    real_input_lines,
    records,
    wait_drained,
    wait_progress,
    wait_ready_partitions,
    waiting_events,
)

pytestmark = pytest.mark.integration

SEED = 20260109
KILLS = 6
#: The input is produced over this long (the worker keeps up; kills land mid-stream).
PRODUCE_SECONDS = 180
#: The restart (1-based) that gets a fresh, empty data dir.
FRESH_RESTART = 3


def test_kill_9_at_random_points_loses_no_alert_and_repeats_are_identical(kafka_bootstrap, tmp_path):
    env = fault_env(worker_env(kafka_bootstrap, tmp_path))
    created = run_cli(env, "topics", "create")
    assert created.returncode == 0, created.stderr
    lines = interleave(real_input_lines(env, tmp_path / "events.jsonl", *SLICE), seed=SEED)
    offline = replay_lines(lines)
    assert offline.waiting == {} and not offline.dead_letters
    expected = expected_alerts(lines)
    total = len(lines)

    rng = random.Random(SEED)
    # committed input records to wait for after each (re)start before the kill, and a delay
    steps = [rng.randint(50, 600) for _ in range(KILLS)]
    delays = [rng.uniform(0.0, 2.0) for _ in range(KILLS)]

    producer_error: list[BaseException] = []

    def _produce() -> None:
        try:
            run(produce_paced(kafka_bootstrap, records(lines, env), PRODUCE_SECONDS))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            producer_error.append(exc)

    producing = threading.Thread(target=_produce, name="produce")
    t0 = time.monotonic()
    worker = Worker(env, tmp_path / "worker-0.log").start()
    # traffic starts once the worker serves its partitions (see docs/OPERATIONS.md,
    # "first start": records arriving while a brand-new group recovers can be skipped)
    wait_ready_partitions(env["CG_WEB_PORT"], lambda p: p == [0, 1, 2, 3], timeout=120)
    producing.start()
    kills: list[tuple[int, int]] = []  # (committed before the kill, total)
    try:
        done = 0
        for i, (step, delay) in enumerate(zip(steps, delays), 1):
            wait_progress(env, done + step, timeout=240, alive=lambda w=worker: w.proc.poll() is None)
            time.sleep(delay)
            done, _ = group_progress(env)
            worker.kill()
            kills.append((done, total))
            if i == FRESH_RESTART:  # tables only from their changelogs
                env = {**env, "CG_DATA_DIR": env["CG_DATA_DIR"] + "-fresh"}
            worker = Worker(env, tmp_path / f"worker-{i}.log").start(timeout=180)
        producing.join(PRODUCE_SECONDS + 60)
        assert not producing.is_alive() and not producer_error, producer_error
        drained = wait_drained(env, timeout=300, alive=lambda: worker.proc.poll() is None)
        waiting_gauge = metric(env["CG_WEB_PORT"], "checkpoint_guard_waiting_events")
    finally:
        code = worker.stop()
    elapsed = time.monotonic() - t0
    assert code == 0, worker.log_text()[-3000:]

    mid_stream = [done for done, tot in kills if done < tot]
    assert len(mid_stream) >= 5, f"only {len(mid_stream)} kills before the input was drained: {kills}"

    alerts = read_topic(env, env["CG_ALERTS_TOPIC"])
    check = check_alerts(alerts, expected)
    assert_input_complete(env, lines)
    assert read_topic(env, env["CG_DEADLETTER_TOPIC"]) == []
    assert waiting_events(env) == {}
    assert waiting_gauge in (0.0, None)
    print(
        f"\n[crash] {total} events, {len(kills)} kills at committed {[d for d, _ in kills]}, "
        f"restart {FRESH_RESTART} on a fresh data dir; {check.records} alert records = "
        f"{check.distinct} distinct (= offline replay) + {check.repeats} identical repeats; "
        f"drained {drained:.0f}s after the last restart; {elapsed:.0f}s in all"
    )


def test_a_crash_between_outputs_and_the_state_commit_re_emits_identical_records_only(kafka_bootstrap, tmp_path):
    """With no commit before the kill (a long commit interval), every output was sent but
    nothing recorded: the restart re-processes all of it and sends every alert and status
    record again, byte for byte, and nothing else."""
    env = fault_env(worker_env(kafka_bootstrap, tmp_path, CG_COMMIT_INTERVAL="300",
                               CG_COMMIT_MAX_EVENTS="1000000000"))
    assert run_cli(env, "topics", "create").returncode == 0
    lines = real_input_lines(env, tmp_path / "events.jsonl", SLICE[0])
    offline = replay_lines(lines)
    n_alerts, n_status = len(offline.alerts), len(offline.statuses)
    worker = Worker(env, tmp_path / "worker-0.log").start()
    try:
        wait_ready_partitions(env["CG_WEB_PORT"], lambda p: p == [0, 1, 2, 3], timeout=120)
        run(produce_fast(kafka_bootstrap, records(lines, env)))
        first = read_topic_until(env, env["CG_STATUS_TOPIC"], n_status, timeout=120)
        assert len(read_topic_until(env, env["CG_ALERTS_TOPIC"], n_alerts, timeout=60)) == n_alerts
    finally:
        worker.kill()  # kill -9: outputs out, no state commit yet
    assert group_progress(env)[0] == 0  # nothing was committed
    restarted = Worker({**env, "CG_COMMIT_INTERVAL": "1"}, tmp_path / "worker-1.log").start(timeout=180)
    try:
        wait_drained(env, timeout=240, alive=lambda: restarted.proc.poll() is None)
        alerts = read_topic_until(env, env["CG_ALERTS_TOPIC"], 2 * n_alerts, timeout=60)
        statuses = read_topic_until(env, env["CG_STATUS_TOPIC"], 2 * n_status, timeout=60)
    finally:
        assert restarted.stop() == 0, restarted.log_text()[-3000:]
    assert len(alerts) == 2 * n_alerts and len(statuses) == 2 * n_status
    for records_ in (alerts, statuses):
        by_partition: dict[int, list[bytes]] = {}
        for m in records_:
            by_partition.setdefault(m.partition, []).append(m.value)
        for values in by_partition.values():  # each partition's output, then the same again
            half = len(values) // 2
            assert values[:half] == values[half:]
    assert {json.loads(m.value)["alert_id"] for m in alerts} == {a["alert_id"] for a in offline.alerts}
    assert len(first) == n_status
