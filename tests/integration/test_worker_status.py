"""Contract v2 on the real broker: the node-status topic, and outputs the broker rejects."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from stream.adapters.simulated.model import DEFAULT_TRACES
from stream.client.status import AsyncStatusView
from stream.domain.outputs import encode_record
from stream.kafka_clients import admin, started
from stream.offline.replay import replay_lines
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
    DEFAULT_TRACES
    / "mini-swe-agent-deepseek-swebench"
    / "deepseek_chat_test_1-100"
    / "astropy__astropy-6938.traj.json",
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


@pytest.mark.parametrize("lowered", ["before the start", "while running"])
def test_a_status_record_over_the_topics_limit_is_sent_without_its_list_and_the_table_stays_current(
        kafka_bootstrap, tmp_path, lowered):
    """DESIGN.md §4 *Bounded outputs*: 1,000 leaves depend on one artifact under a root that
    is authoritative; the artifact's eviction orphans every leaf, and the root's status
    (``degraded_by`` of 1,000 leaves, ~12 kB) is over the status topic's
    ``max.message.bytes``. It is sent without its list, so the table read back says "not
    authoritative" (dead-lettered, the table kept the root's old "yes"). The worker reads
    the limit at start; lowered while it runs, the broker rejects the batch, the worker
    stops (exit 70) and its restart sends the outputs since its last commit again."""
    # uncompressed batches, so that the broker sees the record's full size (lz4 would shrink
    # the root's repetitive list below the lowered limit, and the broker would take it)
    env = worker_env(kafka_bootstrap, tmp_path, CG_PARTITIONS=1, CG_PRODUCER_COMPRESSION="none")
    assert run_cli(env, "topics", "create").returncode == 0
    leaves = [f"leaf-{i:04d}" for i in range(1000)]
    before = [{"type": "artifact", "event_id": "admit", "context_id": "ctx", "artifact_id": "shared", "op": "admitted"},
              *({"type": "checkpoint", "event_id": f"e-{n}", "context_id": "ctx", "node_id": n, "level": "leaf",
                 "referents": ["shared"]} for n in leaves),
              {"type": "checkpoint", "event_id": "e-root", "context_id": "ctx", "node_id": "root", "level": "root",
               "children": leaves}]
    evict = {"type": "artifact", "event_id": "evict", "context_id": "ctx", "artifact_id": "shared", "op": "evicted"}
    lines = [json.dumps(e).encode() for e in (*before, evict)]
    offline = replay_lines(lines)
    final = {(s["context_id"], s["node_id"]): s for s in offline.statuses}
    assert final[("ctx", "root")]["authoritative"] is False and len(encode_record(final[("ctx", "root")])) > 12_000
    limit = {"max.message.bytes": "8192"}
    if lowered == "before the start":
        run(_alter_topic(env, env["CG_STATUS_TOPIC"], limit))

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        run(produce(kafka_bootstrap, [(topic_for(line, env), b"ctx", line) for line in lines[:-1]]))
        run(consume(kafka_bootstrap, env["CG_VERDICTS_TOPIC"], expected=len(before) - 1, timeout=180, settle=0))
        if lowered == "while running":
            run(_alter_topic(env, env["CG_STATUS_TOPIC"], limit))
            time.sleep(2)  # the broker applies the config change
        run(produce(kafka_bootstrap, [(topic_for(lines[-1], env), b"ctx", lines[-1])]))
        if lowered == "while running":
            assert worker.proc.wait(120) == 70, worker.log_text()[-3000:]
            assert "lower than when the worker started; restart the worker" in worker.log_text()
            worker.stop()
            worker = Worker(env, tmp_path / "worker-restarted.log").start()
        msgs = run(consume(kafka_bootstrap, env["CG_STATUS_TOPIC"], expected=len(offline.statuses), timeout=180))
        assert worker.proc.poll() is None, worker.log_text()[-3000:]
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]

    async def table() -> dict[tuple[str, str], Any]:
        view_settings = _settings(env).model_copy(update={"status_topic": env["CG_STATUS_TOPIC"], "partitions": 1})
        async with AsyncStatusView(view_settings, details=False) as view:
            return {key: view.status(*key) for key in final}

    read_back = run(table())
    for key, expected in final.items():
        got = read_back[key]
        assert got is not None, key
        assert (got.authoritative, got.frozen, got.open_rules, got.degraded_count) == (
            expected["authoritative"],
            expected["frozen"],
            tuple(expected["open_rules"]),
            expected["degraded_count"],
        ), key
    root = json.loads([m.value for m in msgs if json.loads(m.key) == ["ctx", "root"]][-1])
    assert root["degraded_by"] == [] and root["degraded_truncated"] is True and root["degraded_count"] == 1000
    assert read_back[("ctx", "root")].degraded_by == ()
    assert "re-sending it without its degraded_by list" in worker.log_text()
    dead = run(consume(kafka_bootstrap, env["CG_DEADLETTER_TOPIC"], expected=0, timeout=3, settle=0))
    assert dead == []
