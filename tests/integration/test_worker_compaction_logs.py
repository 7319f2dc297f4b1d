"""Compaction logs through `ingest ... --to-kafka` and the real worker; `--follow` onto the topics."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from tests.integration.harness import REPO, Worker, consume, expected_alerts, per_context, run, run_cli, worker_env
from tests.unit.builders import COMPACTION_LOGS, brief

FIXTURES = REPO / "tests" / "fixtures" / "compaction_logs"

#: context -> the alerts tests/fixtures/compaction_logs/README.md documents, as (rule, status, node, set), for
#: the fixtures right in its openhands/ and claude-code/ folders (what this test ingests).
DOCUMENTED = {ctx: alerts for fmt, paths, ctx, alerts in COMPACTION_LOGS.values()
              if alerts and [p.split("/")[0] for p in paths] == [fmt] and paths[0].count("/") == 1}


def test_worker_alerts_for_ingested_compaction_logs_are_the_documented_ones(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path)
    assert run_cli(env, "topics", "create").returncode == 0
    inputs = [("openhands", str(FIXTURES / "openhands")), ("claude-code", str(FIXTURES / "claude-code"))]
    lines: list[bytes] = []
    for fmt, path in inputs:
        written = run_cli(env, "ingest", fmt, path, "--out", str(tmp_path / f"{fmt}.jsonl"))
        assert written.returncode == 0, written.stderr
        lines += (tmp_path / f"{fmt}.jsonl").read_bytes().splitlines()
    expected = expected_alerts(lines)
    assert {ctx: brief(map(json.loads, alerts)) for ctx, alerts in expected.items()} == DOCUMENTED

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        for fmt, path in inputs:
            produced = run_cli(env, "ingest", fmt, path, "--to-kafka", timeout=120)
            assert produced.returncode == 0, produced.stderr
            assert f"-> {env['CG_COMPACTION_TOPIC']}/{env['CG_ARTIFACT_TOPIC']}" in produced.stderr
        total = sum(map(len, expected.values()))
        msgs = run(consume(kafka_bootstrap, env["CG_ALERTS_TOPIC"], expected=total, timeout=120))
    finally:
        assert worker.stop() == 0
    assert per_context([json.loads(m.value) for m in msgs]) == expected


def test_follow_produces_records_appended_to_a_live_transcript(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path)
    assert run_cli(env, "topics", "create").returncode == 0
    source = FIXTURES / "claude-code" / "cc-dropped-prohibition.jsonl"
    batch = run_cli(env, "ingest", "claude-code", str(source))
    assert batch.returncode == 0, batch.stderr
    want = [json.loads(line) for line in batch.stdout.splitlines()]

    records = source.read_bytes().splitlines(keepends=True)
    live = tmp_path / "project" / source.name
    live.parent.mkdir()
    live.write_bytes(b"".join(records[:3]))
    follower = subprocess.Popen(
        [sys.executable, "-m", "stream", "ingest", "claude-code", str(live), "--follow", "--to-kafka",
         "--poll-interval", "0.2"],
        env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        first = [e for e in want if e["seq"] < _events_of_first_records(want)]
        got = _read_inputs(kafka_bootstrap, env, expected=len(first))
        assert got == first  # the first records reached the topics while the session is still open
        with open(live, "ab") as fh:  # the session goes on: a compaction happens
            for line in records[3:]:
                fh.write(line)
                fh.flush()
                time.sleep(0.1)
        got = _read_inputs(kafka_bootstrap, env, expected=len(want))
        follower.send_signal(signal.SIGTERM)
        assert follower.wait(30) == 0
    finally:
        if follower.poll() is None:
            follower.kill()
    assert got == want
    assert follower.stderr.read().decode().splitlines()[-1].endswith("; stopped by signal")


def _events_of_first_records(events: list[dict]) -> int:
    """The seq at which the 4th record's (``r-1``) events start: the first 3 records are written first."""
    return next(e["seq"] for e in events if e.get("artifact_id") == "ev:r-1")


def _read_inputs(bootstrap: str, env: dict[str, str], *, expected: int, timeout: float = 60) -> list[dict]:
    """Both input topics (key = context id checked), merged back into seq order, once ``expected`` arrived."""
    deadline = time.monotonic() + timeout
    while True:
        msgs = [m for topic in (env["CG_COMPACTION_TOPIC"], env["CG_ARTIFACT_TOPIC"])
                for m in run(consume(bootstrap, topic, expected=0, timeout=10, settle=1.0))]
        if len(msgs) >= expected or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    events = [json.loads(m.value) for m in msgs]
    assert [m.key for m in msgs] == [e["context_id"].encode() for e in events]
    return sorted(events, key=lambda e: e["seq"])
