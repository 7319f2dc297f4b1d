"""Compaction logs through `ingest ... --to-kafka` and the real worker; `--follow` onto the topics."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from tests.integration.harness import REPO, Worker, consume, expected_alerts, per_context, run, run_cli, worker_env

FIXTURES = REPO / "tests" / "fixtures" / "compaction_logs"
NCD = "negative_constraint_dropped"

#: context -> the alerts tests/fixtures/compaction_logs/README.md documents, as (rule, status, node, set).
DOCUMENTED = {
    "oh:folded-summary": [
        (NCD, "open", "00000001-0000-4000-8000-000000000009-summary", ["prohibition:d00a556c5c2a"]),
        (NCD, "open", "root:oh:folded-summary", ["prohibition:d00a556c5c2a"]),
    ],
    "oh:legacy-summary-ids": [
        (NCD, "open", "0000000a-0000-4000-8000-00000000000a-summary", ["prohibition:787963eb903f"]),
        (NCD, "open", "root:oh:legacy-summary-ids", ["prohibition:787963eb903f"]),
        (NCD, "resolved", "root:oh:legacy-summary-ids", []),
    ],
    "oh:orphaned-file": [
        (
            "orphaned_referent",
            "open",
            "00000002-0000-4000-8000-000000000007-summary",
            ["file:/workspace/app/settings.py"],
        ),
    ],
    "oh:opaque-summary": [
        (NCD, "open", "00000006-0000-4000-8000-000000000008-summary", ["prohibition:3be5474d91a9"]),
        ("unverifiable_checkpoint", "open", "00000006-0000-4000-8000-000000000008-summary", None),
        (NCD, "open", "root:oh:opaque-summary", ["prohibition:3be5474d91a9"]),
    ],
    "cc:cc-dropped-prohibition": [
        (NCD, "open", "s-1", ["prohibition:83155fae68cd"]),
        (NCD, "open", "root:cc:cc-dropped-prohibition", ["prohibition:83155fae68cd"]),
    ],
    "cc:cc-broken-parent-link": [
        (NCD, "open", "s-2", ["prohibition:5b3e9627b389"]),
        (NCD, "open", "root:cc:cc-broken-parent-link", ["prohibition:5b3e9627b389"]),
    ],
    "cc:e4c90000-0000-4000-8000-0000000000c9": [
        (
            NCD,
            "open",
            "e-s1",
            [
                "prohibition:13983af91403",
                "prohibition:33435f925486",
                "prohibition:d58808ee3ba2",
                "prohibition:d9fb023660aa",
            ],
        ),
        (
            NCD,
            "open",
            "root:cc:e4c90000-0000-4000-8000-0000000000c9",
            [
                "prohibition:13983af91403",
                "prohibition:33435f925486",
                "prohibition:d58808ee3ba2",
                "prohibition:d9fb023660aa",
            ],
        ),
    ],
}


def brief(encoded: list[bytes]) -> list[tuple]:
    out = []
    for raw in encoded:
        a = json.loads(raw)
        out.append((a["rule"], a["status"], a["node_id"], a["orphans"] or a["missing_constraints"]))
    return out


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
    assert {ctx: brief(alerts) for ctx, alerts in expected.items()} == DOCUMENTED

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
