"""The Claude Code hook against the real test broker: live streaming, broker down -> spool ->
``ingest --spool``, and the alerts of what reached the topics equal the batch path's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stream.devtools import kafka_local
from stream.devtools.claude_code_player import Player, synthetic_session, write_jsonl
from stream.offline.replay import replay_lines
from tests.integration.harness import REPO, consume, normalize_trigger, run, run_cli, worker_env

pytestmark = pytest.mark.integration


def hook_env(kafka_bootstrap: str, tmp: Path, **extra: str) -> dict[str, str]:
    env = worker_env(kafka_bootstrap, tmp, partitions=1)
    env.update(CG_HOOK_DIR=str(tmp / "hook"), XDG_DATA_HOME=str(tmp / "xdg"), PYTHONPATH=str(REPO), CG_HOOK_BUDGET="60")
    env.update(extra)
    return env


def batch(source: Path, env: dict[str, str]) -> list[bytes]:
    proc = subprocess.run([sys.executable, "-m", "stream", "ingest", "claude-code", str(source)], env=env,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def topic_values(kafka_bootstrap: str, env: dict[str, str], expected: list[bytes]) -> dict[str, list[bytes]]:
    kinds = {"checkpoint": env["CG_COMPACTION_TOPIC"], "artifact": env["CG_ARTIFACT_TOPIC"]}
    want = {t: sum(1 for line in expected if json.loads(line)["type"] == k) for k, t in kinds.items()}
    return {t: [m.value for m in run(consume(kafka_bootstrap, t, expected=n, settle=1.0))] for t, n in want.items()}


def split_by_topic(lines: list[bytes], env: dict[str, str]) -> dict[str, list[bytes]]:
    out = {env["CG_COMPACTION_TOPIC"]: [], env["CG_ARTIFACT_TOPIC"]: []}
    for line in lines:
        kind = json.loads(line)["type"]
        out[env["CG_COMPACTION_TOPIC" if kind == "checkpoint" else "CG_ARTIFACT_TOPIC"]].append(line)
    return out


def alerts_from_kafka(env: dict[str, str]) -> list[dict]:
    proc = run_cli(env, "replay", "--from-kafka", timeout=120)
    assert proc.returncode == 0, proc.stderr
    return [normalize_trigger(json.loads(line)) for line in proc.stdout.splitlines()]


def session_source(tmp: Path, sid: str) -> Path:
    return write_jsonl(synthetic_session(sid, turns=20, compact_every=8), tmp / "src" / f"{sid}.jsonl")


def test_with_the_broker_up_the_hook_streams_every_event_once_and_empties_its_spool(
    kafka_bootstrap, tmp_path, create_topics
):
    env = hook_env(kafka_bootstrap, tmp_path)
    run(create_topics([env["CG_COMPACTION_TOPIC"], env["CG_ARTIFACT_TOPIC"]]))
    source = session_source(tmp_path, "dddd0000-0000-4000-8000-00000000000d")
    player = Player(source, tmp_path / "projects" / source.name, env, stop_every=2)
    player.play()
    assert all(c.returncode == 0 for c in player.calls)
    expected = batch(source, env)
    assert topic_values(kafka_bootstrap, env, expected) == split_by_topic(expected, env)  # in order, nothing twice
    spool = tmp_path / "hook" / "spool" / f"{source.stem}.jsonl"
    assert spool.read_bytes() == b""
    assert [normalize_trigger(a) for a in replay_lines(expected).alerts] == alerts_from_kafka(env)


def test_with_the_broker_down_nothing_is_lost_and_ingest_spool_sends_it_later(kafka_bootstrap, tmp_path, create_topics):
    down = hook_env(kafka_bootstrap, tmp_path, CG_BROKER=f"kafka://127.0.0.1:{kafka_local.free_ports(1)[0]}")
    sources = [session_source(tmp_path, sid) for sid in ("eeee0000-0000-4000-8000-00000000000e",
                                                          "ffff0000-0000-4000-8000-00000000000f")]
    for source in sources:
        player = Player(source, tmp_path / "projects" / source.name, down, stop_every=3)
        player.play()
        assert all(c.returncode == 0 and (c.event == "SessionStart" or not c.stdout) for c in player.calls)
    assert "cannot reach Kafka" in (tmp_path / "hook" / "broker-down").read_text()
    spooled = {s.stem: (tmp_path / "hook" / "spool" / f"{s.stem}.jsonl").read_bytes().splitlines() for s in sources}
    assert spooled == {s.stem: batch(s, down) for s in sources}

    up = {**down, "CG_BROKER": f"kafka://{kafka_bootstrap}"}
    run(create_topics([up["CG_COMPACTION_TOPIC"], up["CG_ARTIFACT_TOPIC"]]))
    proc = run_cli(up, "ingest", "--spool", timeout=180)
    assert proc.returncode == 0, proc.stderr
    total = sum(len(v) for v in spooled.values())
    assert f"{total} sent" in proc.stderr and "0 left in the spool" in proc.stderr
    again = run_cli(up, "ingest", "--spool", timeout=180)  # idempotent: nothing is sent twice
    assert again.returncode == 0 and "0 sent" in again.stderr

    expected = [line for s in sources for line in batch(s, up)]
    got = topic_values(kafka_bootstrap, up, expected)
    assert {t: sorted(v) for t, v in got.items()} == {t: sorted(v) for t, v in split_by_topic(expected, up).items()}
    want = sorted(json.dumps(normalize_trigger(a), sort_keys=True) for a in replay_lines(expected).alerts)
    assert sorted(json.dumps(a, sort_keys=True) for a in alerts_from_kafka(up)) == want
    assert any(a["rule"] == "negative_constraint_dropped" for a in replay_lines(expected).alerts)


def test_ingest_spool_with_the_broker_still_down_is_one_line_exit_1_and_keeps_the_spool(kafka_bootstrap, tmp_path):
    down = hook_env(kafka_bootstrap, tmp_path, CG_BROKER=f"kafka://127.0.0.1:{kafka_local.free_ports(1)[0]}")
    source = session_source(tmp_path, "abab0000-0000-4000-8000-0000000000ab")
    Player(source, tmp_path / "projects" / source.name, down, stop_every=5).play()
    before = (tmp_path / "hook" / "spool" / f"{source.stem}.jsonl").read_bytes()
    proc = run_cli(down, "ingest", "--spool", timeout=120)
    assert proc.returncode == 1
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith("checkpoint-guard: error: ")
    assert "stay in the spool" in proc.stderr
    assert (tmp_path / "hook" / "spool" / f"{source.stem}.jsonl").read_bytes() == before
