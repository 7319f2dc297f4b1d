"""The faust worker on the real broker: live alerts equal offline replay."""

from __future__ import annotations

import base64
import json
import random

import pytest

from tests.integration.harness import (
    Worker,
    consume,
    context_of,
    dedupe_repeats,
    expected_alerts,
    per_context,
    produce,
    run,
    run_cli,
    topic_for,
    worker_env,
)
from tests.scenarios import Ctx, all_lines, design_scenarios


def _records(lines: list[bytes], env: dict[str, str]) -> list[tuple[str, bytes | None, bytes]]:
    return [(topic_for(line, env), context_of(line), line) for line in lines]


def _scrambled(lines: list[bytes], seed: int, window: int = 3) -> list[bytes]:
    """Reorder within windows of ``window`` lines: out of seq order, but never more
    than ``window - 1`` events of a context wait (below CG_SEQ_GAP_LIMIT=3)."""
    rng = random.Random(seed)
    out: list[bytes] = []
    for i in range(0, len(lines), window):
        chunk = lines[i:i + window]
        rng.shuffle(chunk)
        out.extend(chunk)
    return out


@pytest.fixture
def env(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path, CG_SEQ_GAP_LIMIT=3)
    created = run_cli(env, "topics", "create")
    assert created.returncode == 0, created.stderr
    return env


def _alerts(bootstrap: str, env: dict[str, str], expected: int) -> list[dict]:
    msgs = run(consume(bootstrap, env["CG_ALERTS_TOPIC"], expected=expected))
    return [json.loads(m.value) for m in msgs]


def test_alerts_topic_equals_offline_replay_with_seq_reordered_across_topics(kafka_bootstrap, env, tmp_path):
    scenarios = design_scenarios()
    # A gap context: seq 1 never arrives; with CG_SEQ_GAP_LIMIT=3 the 4th waiting event
    # declares the gap. Sent in file order on one topic so arrival order is fixed.
    gap = Ctx("s-gap")
    gap.admit("a0").admit("a1").checkpoint("L", referents=["a1"]).evict("a1").admit("a1").evict("a1").admit("a3")
    del gap.events[1]
    lines = all_lines(scenarios)
    expected = expected_alerts(lines + gap.lines(), seq_gap_limit=3)
    assert sum(map(len, expected.values())) >= 15 and "s-gap" in expected

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        records = _records(_scrambled(lines, seed=7), env)
        records += [(env["CG_ARTIFACT_TOPIC"], b"s-gap", line) for line in gap.lines()]
        run(produce(kafka_bootstrap, records))
        alerts = _alerts(kafka_bootstrap, env, sum(map(len, expected.values())))
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]

    assert per_context(alerts) == expected
    # the worker says which way its hot modules run (README "Compiled hot modules"), in the log it writes
    from stream import native
    assert f"hot modules: {native.decide(env=env)[0]}" in worker.log_text()
    for a in alerts:  # live alerts point at the Kafka record that caused them
        assert a["trigger"]["topic"] in (env["CG_COMPACTION_TOPIC"], env["CG_ARTIFACT_TOPIC"])
        assert a["trigger"]["partition"] in range(4) and a["trigger"]["offset"] >= 0


def test_bad_messages_are_dead_lettered_with_reasons_and_good_ones_processed(kafka_bootstrap, env, tmp_path):
    good = all_lines(design_scenarios("g")[:3])
    ctx = b"g-orphan"
    bad: list[tuple[bytes | None, bytes, str]] = [
        (ctx, b"not json at all", "not JSON"),
        (
            ctx,
            b'{"type":"artifact","event_id":"x","context_id":"g-orphan","artifact_id":"a","op":"admitted","seq":"3"}',
            "seq",
        ),
        (ctx, b'{"type":"artifact","event_id":"x","context_id":"g-orphan","artifact_id":"a","op":"deleted"}', "op"),
        (
            ctx,
            b'{"type":"checkpoint","event_id":"x","context_id":"g-orphan","node_id":"n","level":"leaf","referents":'
            + json.dumps([f"r{i}" for i in range(10_001)]).encode()
            + b"}",
            "referents",
        ),
        (b"", b'{"type":"artifact","event_id":"x","context_id":"g-orphan","artifact_id":"a","op":"admitted"}', "key"),
        (
            b"other",
            b'{"type":"artifact","event_id":"y","context_id":"g-orphan","artifact_id":"a","op":"admitted"}',
            "key",
        ),
        (None, b'{"type":"artifact","event_id":"z","context_id":"g-orphan","artifact_id":"a","op":"admitted"}', "key"),
        (
            ctx,
            b'{"type":"artifact","event_id":"x","context_id":"g-orphan","artifact_id":"a","op":"admitted","schema_version":2}',
            "schema_version",
        ),
    ]
    records = _records(good, env)
    step = max(1, len(records) // len(bad))
    for i, (key, value, _) in enumerate(bad):
        records.insert(i * (step + 1), (env["CG_ARTIFACT_TOPIC"], key, value))
    expected = expected_alerts(good)

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        run(produce(kafka_bootstrap, records))
        dead = run(consume(kafka_bootstrap, env["CG_DEADLETTER_TOPIC"], expected=len(bad)))
        alerts = _alerts(kafka_bootstrap, env, sum(map(len, expected.values())))
    finally:
        assert worker.stop() == 0

    assert per_context(alerts) == expected
    assert len(dead) == len(bad)
    by_value = {base64.b64decode(json.loads(m.value)["value_b64"]): json.loads(m.value) for m in dead}
    for _key, value, field in bad:
        rec = by_value[value]
        assert field in rec["reason"], rec["reason"]
        assert rec["topic"] == env["CG_ARTIFACT_TOPIC"] and rec["offset"] >= 0
        assert "\n" not in rec["reason"]


def test_state_comes_back_from_the_changelog_after_a_restart(kafka_bootstrap, env, tmp_path):
    lines = all_lines(design_scenarios("r"))
    half = len(lines) // 2
    first, second = lines[:half], lines[half:]
    expected_first = sum(map(len, expected_alerts(first).values()))
    expected = expected_alerts(lines)

    worker = Worker(env, tmp_path / "worker1.log").start()
    try:
        run(produce(kafka_bootstrap, _records(first, env)))
        _alerts(kafka_bootstrap, env, expected_first)
    finally:
        assert worker.stop() == 0
    # a fresh data dir: the tables can only come back from their changelog topics
    env2 = {**env, "CG_DATA_DIR": env["CG_DATA_DIR"] + "-fresh"}
    worker = Worker(env2, tmp_path / "worker2.log").start()
    try:
        run(produce(kafka_bootstrap, _records(second, env)))
        alerts = _alerts(kafka_bootstrap, env, sum(map(len, expected.values())))
    finally:
        assert worker.stop() == 0
    assert per_context(dedupe_repeats(alerts)) == expected


def test_worker_refuses_input_topics_that_are_not_co_partitioned(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path)
    assert run_cli(env, "topics", "create").returncode == 0
    other = worker_env(kafka_bootstrap, tmp_path, partitions=2)
    assert run_cli(other, "topics", "create").returncode == 0  # 2-partition topics
    bad = dict(env, CG_ARTIFACT_TOPIC=other["CG_ARTIFACT_TOPIC"])
    worker = Worker(bad, tmp_path / "worker.log").start(wait_ready=False)
    code = worker.proc.wait(90)
    assert code != 0
    log = worker.log_text()
    assert "not co-partitioned" in log
    assert f"{bad['CG_COMPACTION_TOPIC']} has 4 partitions" in log
    assert f"{bad['CG_ARTIFACT_TOPIC']} has 2" in log


def test_topics_create_is_idempotent_and_rejects_a_different_partition_count(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path)
    first = run_cli(env, "topics", "create")
    again = run_cli(env, "topics", "create")
    assert first.returncode == 0 and "created" in first.stdout
    assert again.returncode == 0 and "created" not in again.stdout and "exists" in again.stdout
    wrong = run_cli(dict(env, CG_PARTITIONS="3"), "topics", "create")
    assert wrong.returncode == 1
    assert "different partition count" in wrong.stderr and env["CG_ALERTS_TOPIC"] in wrong.stderr
