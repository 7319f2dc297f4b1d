"""Forensics against the real broker: replay --from-kafka --verify, export, explain."""

from __future__ import annotations

import json

import pytest

from stream.adapters.simulated.model import DEFAULT_TRACES
from tests.integration.harness import Worker, consume, context_of, produce, run, run_cli, topic_for, worker_env
from tests.scenarios import Ctx

TRAJ = (
    DEFAULT_TRACES / "mini-swe-agent-deepseek-swebench" / "deepseek_chat_test_1-100" / "astropy__astropy-6938.traj.json"
)


def _known_scenario() -> Ctx:
    """L1 depends on a1, a2; a1 falls out of both tiers -> orphan alert triggered by e5."""
    c = Ctx("known")
    c.admit("a1").admit("a2").checkpoint("L1", referents=["a1", "a2"]).admit("a1", "durable")
    c.evict("a1").evict("a1", "durable")
    return c


async def _group_offsets(bootstrap: str, group: str) -> dict:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return {
            (tp.topic, tp.partition): m.offset for tp, m in (await admin.list_consumer_group_offsets(group)).items()
        }
    finally:
        await admin.close()


def _end_offsets(bootstrap: str, topics: list[str]) -> dict:
    """(topic, partition) -> end offset, read with the forensics reader itself."""
    from stream.offline.forensics import read_topics
    from stream.settings import Settings

    _, rng = run(read_topics(Settings(broker=f"kafka://{bootstrap}"), topics))
    return {tp: end for tp, (_, end) in rng.spans.items()}


@pytest.fixture(scope="module")
def live(kafka_bootstrap, tmp_path_factory):
    """A worker has processed one real trajectory plus the known scenario, then stopped."""
    tmp = tmp_path_factory.mktemp("forensics")
    env = worker_env(kafka_bootstrap, tmp)
    assert run_cli(env, "topics", "create").returncode == 0
    jsonl = tmp / "events.jsonl"
    assert run_cli(env, "ingest", str(TRAJ), "--out", str(jsonl)).returncode == 0
    lines = jsonl.read_bytes().splitlines() + _known_scenario().lines()
    expected = run_cli(env, "replay", str(jsonl)).stdout.count("\n") + 1  # + the known orphan alert
    worker = Worker(env, tmp / "worker.log").start()
    try:
        run(produce(kafka_bootstrap, [(topic_for(x, env), context_of(x), x) for x in lines]))
        run(consume(kafka_bootstrap, env["CG_ALERTS_TOPIC"], expected=expected, timeout=120))
    finally:
        assert worker.stop() == 0
    return env


def test_replay_from_kafka_verify_reports_zero_differences_after_a_live_run(live, tmp_path):
    done = run_cli(live, "replay", "--from-kafka", "--verify")
    assert done.returncode == 0, done.stderr
    assert "0 missing, 0 extra, 0 different" in done.stderr
    assert done.stdout == ""  # --verify does not flood stdout with every alert ...
    out = tmp_path / "alerts.jsonl"
    done = run_cli(live, "replay", "--from-kafka", "--verify", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_text().count("\n") >= 14  # ... unless --out asks for them


def test_replay_from_kafka_writes_byte_identical_alerts_to_the_live_ones(kafka_bootstrap, live):
    replayed = run_cli(live, "replay", "--from-kafka").stdout.splitlines()
    published = [
        m.value.decode() for m in run(consume(kafka_bootstrap, live["CG_ALERTS_TOPIC"], expected=len(replayed)))
    ]
    assert sorted(replayed) == sorted(set(published))


def test_replay_from_kafka_does_not_move_committed_offsets_or_touch_the_state(kafka_bootstrap, live):
    group = live["CG_APP_ID"]
    changelogs = [f"{group}-state"]  # the worker's state log
    before = run(_group_offsets(kafka_bootstrap, group)), _end_offsets(kafka_bootstrap, changelogs)
    assert run_cli(live, "replay", "--from-kafka", "--verify").returncode == 0
    assert run_cli(live, "explain", "known", "L1", "--json").returncode == 0
    after = run(_group_offsets(kafka_bootstrap, group)), _end_offsets(kafka_bootstrap, changelogs)
    assert before == after and before[0]


def test_explain_names_the_eviction_event_that_orphaned_the_node_with_its_offset(live):
    done = run_cli(live, "explain", "known", "L1", "--json")
    assert done.returncode == 0, done.stderr
    history = json.loads(done.stdout)
    assert history["authoritative"] is False and history["open_rules"] == ["orphaned_referent"]
    [alert] = history["alerts"]
    assert alert["orphans"] == ["a1"] and alert["trigger"]["event_id"] == "known/e5"
    assert alert["trigger"]["topic"] == live["CG_ARTIFACT_TOPIC"] and alert["trigger"]["offset"] >= 0
    change = next(c for c in history["reachability"] if c["event_id"] == "known/e5")
    assert (change["op"], change["tier"], change["offset"]) == ("evicted", "durable", alert["trigger"]["offset"])
    readable = run_cli(live, "explain", "known", "L1")
    assert "known/e5" in readable.stdout and "NOT authoritative" in readable.stdout


def test_export_then_offline_replay_gives_the_same_alerts_as_replay_from_kafka(live, tmp_path):
    archive = tmp_path / "case.jsonl"
    assert run_cli(live, "export", "--context", "known", "--out", str(archive)).returncode == 0
    offline = run_cli(live, "replay", str(archive)).stdout.splitlines()
    from_kafka = run_cli(live, "replay", "--from-kafka", "--context", "known").stdout.splitlines()
    strip = lambda line: {**json.loads(line), "trigger": None}  # noqa: E731 - offline has no offsets
    assert [strip(x) for x in offline] == [strip(x) for x in from_kafka] and len(offline) == 1


def test_export_of_a_context_that_is_not_there_warns_and_still_exits_0(live, tmp_path):
    archive = tmp_path / "none.jsonl"
    proc = run_cli(live, "export", "--context", "nosuch", "--out", str(archive))
    assert proc.returncode == 0 and archive.read_bytes() == b""
    assert "checkpoint-guard: export: warning: no events of context nosuch in " in proc.stderr


def test_verify_reports_a_hand_made_alert_as_extra_and_an_unprocessed_range_as_missing(kafka_bootstrap, live):
    # extra: an alert the worker never emitted, triggered inside the replayed range
    fake = json.loads(run_cli(live, "replay", "--from-kafka", "--context", "known").stdout.splitlines()[0])
    fake.update(alert_id="f" * 32, status="resolved", orphans=[])
    # missing: input the (stopped) worker has not processed yet
    late = Ctx("late")
    late.checkpoint("L9", referents=["never-admitted"])
    run(produce(kafka_bootstrap, [
        (live["CG_ALERTS_TOPIC"], b"known", json.dumps(fake).encode()),
        *[(topic_for(x, live), context_of(x), x) for x in late.lines()],
    ]))
    done = run_cli(live, "replay", "--from-kafka", "--verify")
    assert done.returncode == 1
    assert "1 missing, 1 extra, 0 different" in done.stderr
    assert any(line.startswith("extra") and "f" * 32 in line for line in done.stderr.splitlines())
    assert any(line.startswith("missing") and "late/L9" in line for line in done.stderr.splitlines())
