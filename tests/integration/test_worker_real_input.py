"""Real trajectories through `ingest --to-kafka` and the worker equal offline replay."""

from __future__ import annotations

import json

from stream.adapters.simulated.model import DEFAULT_TRACES
from tests.integration.harness import Worker, consume, expected_alerts, per_context, run, run_cli, worker_env

SUBSET = [
    DEFAULT_TRACES / "tau-bench-airline-gpt4o" / "gpt-4o-airline.sample10.json",
    DEFAULT_TRACES
    / "mini-swe-agent-deepseek-swebench"
    / "deepseek_chat_test_1-100"
    / "astropy__astropy-6938.traj.json",
]


def test_worker_alerts_for_ingested_trajectories_equal_offline_replay_of_the_same_jsonl(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path)
    assert run_cli(env, "topics", "create").returncode == 0
    jsonl = tmp_path / "events.jsonl"
    written = run_cli(env, "ingest", *map(str, SUBSET), "--out", str(jsonl))
    assert written.returncode == 0, written.stderr
    lines = jsonl.read_bytes().splitlines()
    expected = expected_alerts(lines)
    rules = {json.loads(a)["rule"] for alerts in expected.values() for a in alerts}
    assert rules == {"orphaned_referent", "negative_constraint_dropped", "non_idempotent"}

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        produced = run_cli(env, "ingest", *map(str, SUBSET), "--to-kafka", timeout=180)
        assert produced.returncode == 0, produced.stderr
        msgs = run(
            consume(kafka_bootstrap, env["CG_ALERTS_TOPIC"], expected=sum(map(len, expected.values())), timeout=180)
        )
    finally:
        assert worker.stop() == 0
    assert per_context([json.loads(m.value) for m in msgs]) == expected


def test_a_backlog_read_by_a_late_worker_gives_the_verdicts_of_production_order(kafka_bootstrap, tmp_path):
    """Both input topics are written before the worker starts: one fetch then holds thousands
    of artifacts and few checkpoints. The worker merges the topics by record timestamp, so a
    context's events do not pile up behind a seq that sits in the other topic (with a small
    CG_SEQ_GAP_LIMIT, taking one topic's backlog first declares gaps that are not there)."""
    env = worker_env(kafka_bootstrap, tmp_path)
    env["CG_SEQ_GAP_LIMIT"] = "20"
    assert run_cli(env, "topics", "create").returncode == 0
    jsonl = tmp_path / "events.jsonl"
    assert run_cli(env, "ingest", *map(str, SUBSET), "--out", str(jsonl)).returncode == 0
    expected = expected_alerts(jsonl.read_bytes().splitlines(), seq_gap_limit=20)
    produced = run_cli(env, "ingest", *map(str, SUBSET), "--to-kafka", timeout=180)
    assert produced.returncode == 0, produced.stderr
    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        msgs = run(
            consume(kafka_bootstrap, env["CG_ALERTS_TOPIC"], expected=sum(map(len, expected.values())), timeout=180)
        )
    finally:
        assert worker.stop() == 0
    assert per_context([json.loads(m.value) for m in msgs]) == expected
