"""Contract v2 on the real broker: the node-status topic, and outputs the broker rejects."""

from __future__ import annotations

import base64
import json

from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from stream.adapters.trajectories import DEFAULT_TRACES
from stream.kafka_clients import admin, started
from stream.replay import replay_lines
from stream.settings import Settings
from tests.integration.harness import (
    Worker,
    consume,
    context_of,
    produce,
    run,
    run_cli,
    topic_for,
    worker_env,
)

SUBSET = [
    DEFAULT_TRACES / "tau-bench-airline-gpt4o" / "gpt-4o-airline.sample10.json",
    DEFAULT_TRACES / "mini-swe-agent-deepseek-swebench" / "deepseek_chat_test_1-100" / "astropy__astropy-6938.traj.json",
]


def _settings(env: dict[str, str]) -> Settings:
    return Settings(broker=env["CG_BROKER"])


async def _topic_config(env: dict[str, str], topic: str) -> dict[str, str]:
    async with started(_settings(env), admin(_settings(env))) as client:
        (resp,) = await client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    return {name: value for name, value, *_ in resp.resources[0][4]}


async def _alter_topic(env: dict[str, str], topic: str, configs: dict[str, str]) -> None:
    async with started(_settings(env), admin(_settings(env))) as client:
        await client.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs=configs)])


def _final(statuses: list[dict]) -> dict[tuple[str, str], bytes]:
    """The last status per node, offsets nulled (what a compacted topic converges to)."""
    last = {}
    for s in statuses:
        s = {**s, "trigger": {**s["trigger"], "topic": None, "partition": None, "offset": None}}
        last[(s["context_id"], s["node_id"])] = json.dumps(s, sort_keys=True).encode()
    return last


def test_the_status_topic_is_compacted_and_holds_every_nodes_final_status(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path)
    assert run_cli(env, "topics", "create").returncode == 0
    assert run(_topic_config(env, env["CG_STATUS_TOPIC"]))["cleanup.policy"] == "compact"
    jsonl = tmp_path / "events.jsonl"
    assert run_cli(env, "ingest", *map(str, SUBSET), "--out", str(jsonl)).returncode == 0
    offline = replay_lines(jsonl.read_bytes().splitlines())
    nodes = {(s["context_id"], s["node_id"]) for s in offline.statuses}
    assert len(nodes) > 50 and any(not s["authoritative"] for s in offline.statuses)

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        produced = run_cli(env, "ingest", *map(str, SUBSET), "--to-kafka", timeout=180)
        assert produced.returncode == 0, produced.stderr
        msgs = run(consume(kafka_bootstrap, env["CG_STATUS_TOPIC"], expected=len(offline.statuses), timeout=180))
    finally:
        assert worker.stop() == 0
    live = [json.loads(m.value) for m in msgs]
    assert _final(live) == _final(offline.statuses)
    for m, s in zip(msgs, live):  # keyed by [context, node], on the context's input partition
        assert json.loads(m.key) == [s["context_id"], s["node_id"]]
        assert m.partition == s["trigger"]["partition"]


def test_a_record_the_broker_rejects_is_dead_lettered_and_the_worker_keeps_consuming(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path, CG_PARTITIONS=1)
    assert run_cli(env, "topics", "create").returncode == 0
    # an operator (or another tool) created the alerts topic with a small record limit
    run(_alter_topic(env, env["CG_ALERTS_TOPIC"], {"max.message.bytes": "4096"}))
    big = {"type": "checkpoint", "event_id": "big", "context_id": "ctx", "node_id": "n-big", "level": "leaf",
           "referents": [f"never-admitted-artifact-{i:04d}" for i in range(400)]}  # a ~12 kB orphan alert
    after = [{"type": "checkpoint", "event_id": f"e{i}", "context_id": "ctx", "node_id": f"n{i}", "level": "leaf",
              "referents": [f"gone-{i}"]} for i in range(5)]
    lines = [json.dumps(e).encode() for e in (big, *after)]

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        run(produce(kafka_bootstrap, [(topic_for(line, env), context_of(line), line) for line in lines]))
        alerts = run(consume(kafka_bootstrap, env["CG_ALERTS_TOPIC"], expected=5, timeout=120))
        dead = run(consume(kafka_bootstrap, env["CG_DEADLETTER_TOPIC"], expected=1, timeout=60))
        assert worker.proc.poll() is None, worker.log_text()[-3000:]  # still running
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]
    assert sorted(json.loads(m.value)["node_id"] for m in alerts) == [f"n{i}" for i in range(5)]
    (letter,) = [json.loads(m.value) for m in dead]
    assert letter["reason"].startswith("output rejected: a ") and env["CG_ALERTS_TOPIC"] in letter["reason"]
    assert (letter["topic"], letter["partition"], letter["offset"]) == (env["CG_COMPACTION_TOPIC"], 0, 0)
    assert json.loads(base64.b64decode(letter["value_b64"]))["event_id"] == "big"
