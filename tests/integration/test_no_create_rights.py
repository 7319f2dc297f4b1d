"""``CG_CREATE_TOPICS=false``: after ``topics create`` made every topic (the 7, the state log,
faust's leader topic), a worker starts and gets ready without creating anything; without
them it refuses (tests/integration/test_errors.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from stream import kafka_clients
from tests.integration.harness import Worker, run_cli, worker_env
from tests.integration.sasl_broker import settings_of


def test_a_worker_without_create_rights_runs_on_the_topics_topics_create_made(kafka_bootstrap, tmp_path: Path):
    env = worker_env(kafka_bootstrap, tmp_path, CG_CREATE_TOPICS="false")
    settings = settings_of(env)
    made = run_cli(env, "topics", "create", timeout=120)
    assert made.returncode == 0, made.stderr
    leader = kafka_clients.leader_topic(settings)
    assert f"{leader}: created (1 partition, faust's leader election)" in made.stdout
    counts = asyncio.run(kafka_clients.topic_partitions(settings, [leader, kafka_clients.state_topic(settings)]))
    assert counts == {leader: 1, kafka_clients.state_topic(settings): 4}
    worker = Worker(env, tmp_path / "worker.log").start(timeout=120)
    try:
        assert "checkpoint-guard: error" not in worker.log_text()
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]
