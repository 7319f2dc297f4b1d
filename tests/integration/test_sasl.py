"""The worker and every command against a broker that asks for a password (SASL).

The broker (tests/integration/sasl_broker.py) listens with SASL_PLAINTEXT only and offers
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512; the commands run with ``CG_SECURITY_PROTOCOL=
SASL_PLAINTEXT`` and ``CG_SASL_*``, each mechanism used by at least one of them. Without
the settings, or with a wrong password, nothing gets in — with an error that says why.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stream import kafka_clients
from stream.devtools import kafka_local
from tests.integration.harness import (
    REPO,
    Worker,
    expected_alerts,
    per_context,
    run_cli,
    worker_env,
)
from tests.integration.sasl_broker import ADMIN_PASSWORD, sasl_broker, sasl_env, settings_of

TRAJECTORY = (
    REPO / "stream/samples/traces/mini-swe-agent-deepseek-swebench/deepseek_chat_dev/pydicom__pydicom-901.traj.json"
)


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest) -> kafka_local.BrokerInfo:
    return sasl_broker(request)


async def _read(env: dict[str, str], topic: str, *, expected: int, timeout: float = 120,
                isolation: str = "read_uncommitted") -> list:
    """Read ``topic`` from the start with a SASL consumer built by stream.kafka_clients."""
    c = kafka_clients.consumer(settings_of(env), topic, group_id=None, auto_offset_reset="earliest",
                               enable_auto_commit=False, isolation_level=isolation)
    out: list = []
    async with kafka_clients.started(settings_of(env), c):
        deadline = time.monotonic() + timeout
        while len(out) < expected and time.monotonic() < deadline:
            for msgs in (await c.getmany(timeout_ms=500)).values():
                out.extend(msgs)
    return out


def _ok(done: subprocess.CompletedProcess, what: str) -> subprocess.CompletedProcess:
    assert done.returncode == 0, f"{what}: exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def test_the_worker_and_every_command_work_with_sasl_plain_and_scram(broker, tmp_path: Path):
    bootstrap = broker.bootstrap
    assert broker.security_protocol == "SASL_PLAINTEXT"
    env = sasl_env(bootstrap, tmp_path, mechanism="SCRAM-SHA-256")
    plain = {**env, "CG_SASL_MECHANISM": "PLAIN"}
    scram512 = {**env, "CG_SASL_MECHANISM": "SCRAM-SHA-512", "CG_SASL_USERNAME": "admin",
                "CG_SASL_PASSWORD": ADMIN_PASSWORD}

    events_file = tmp_path / "events.jsonl"
    _ok(run_cli(env, "ingest", str(TRAJECTORY), "--out", str(events_file), "--no-progress"), "ingest --out")
    lines = events_file.read_bytes().splitlines()
    expected = expected_alerts(lines)
    n_alerts = sum(map(len, expected.values()))
    context = json.loads(lines[0])["context_id"]
    assert n_alerts > 0

    _ok(run_cli(env, "topics", "create"), "topics create (SCRAM-SHA-256)")
    worker = Worker(scram512, tmp_path / "worker.log").start(timeout=150)
    try:
        _ok(run_cli(plain, "ingest", str(TRAJECTORY), "--to-kafka", "--no-progress", timeout=120),
            "ingest --to-kafka (PLAIN)")
        alerts = [json.loads(m.value) for m in asyncio.run(_read(env, env["CG_ALERTS_TOPIC"], expected=n_alerts))]
        assert per_context(alerts) == expected

        verify = _ok(run_cli(plain, "replay", "--from-kafka", "--verify", timeout=120), "replay --from-kafka")
        assert f"{len(lines)} records" in verify.stderr + verify.stdout
        out = tmp_path / "case.jsonl"
        _ok(run_cli(scram512, "export", "--context", context, "--out", str(out), timeout=120), "export")
        assert sorted(out.read_bytes().splitlines()) == sorted(lines)  # both topics, merged by time
        tail = _ok(run_cli(env, "tail", "--from-beginning", "--json", "--max", "3", timeout=120), "tail")
        tailed = [json.loads(x)["alert_id"] for x in tail.stdout.splitlines()]
        assert len(tailed) == 3 and set(tailed) <= {a["alert_id"] for a in alerts}
        node = next(a["node_id"] for a in alerts if a["node_id"])
        explained = _ok(run_cli(plain, "explain", context, node, "--json", timeout=120), "explain")
        assert json.loads(explained.stdout)

        log = (tmp_path / "remediate.log").open("wb")
        remediate = subprocess.Popen([sys.executable, "-m", "stream", "remediate"], env=env, cwd=REPO,
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            requests = asyncio.run(_read(env, env["CG_REMEDIATION_TOPIC"], expected=1, isolation="read_committed"))
            assert requests, (tmp_path / "remediate.log").read_text()[-3000:]
        finally:
            remediate.send_signal(signal.SIGTERM)
            assert remediate.wait(60) == 0, (tmp_path / "remediate.log").read_text()[-3000:]
            log.close()
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]
    assert "SaslAuthenticationFailed" not in worker.log_text()


def test_a_wrong_password_fails_with_a_clear_error(broker, tmp_path: Path):
    env = sasl_env(broker.bootstrap, tmp_path, password="not-the-password")
    done = run_cli(env, "topics", "create", timeout=120)
    assert done.returncode == 1
    (line,) = done.stderr.strip().splitlines()  # ours only: aiokafka's SaslAuthenticationFailed line is not printed
    assert line.startswith("checkpoint-guard: error: cannot reach Kafka")
    assert "the broker refused the PLAIN login of user 'alice'" in line and "CG_SASL_PASSWORD" in line
    assert "no broker answered" not in line and "SaslAuthenticationFailed" not in line


def test_the_worker_with_a_wrong_password_stops_with_one_clear_line(broker, tmp_path: Path):
    env = sasl_env(broker.bootstrap, tmp_path, mechanism="SCRAM-SHA-512", password="not-the-password")
    worker = Worker(env, tmp_path / "worker.log").start(wait_ready=False)
    try:
        code = worker.proc.wait(120)
    finally:
        worker.kill()
    text = worker.log_text()
    assert code != 0
    assert "checkpoint-guard: error: cannot reach Kafka" in text
    assert "the broker refused the SCRAM-SHA-512 login of user 'alice'" in text and "no broker answered" not in text


def test_a_client_without_sasl_settings_is_not_let_in(broker, tmp_path: Path):
    env = worker_env(broker.bootstrap, tmp_path)  # PLAINTEXT
    done = run_cli(env, "topics", "create", timeout=120)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1].startswith("checkpoint-guard: error: cannot reach Kafka")


def test_status_probes_a_sasl_broker_with_the_client_settings(broker, tmp_path: Path):
    home = str(broker.kafka_home)
    without = run_cli(worker_env(broker.bootstrap, tmp_path), "kafka", "status", "--home", home)
    assert without.returncode == 1 and "SASL_PLAINTEXT listener" in without.stdout
    with_ = run_cli(sasl_env(broker.bootstrap, tmp_path, mechanism="SCRAM-SHA-256"), "kafka", "status", "--home", home)
    assert with_.returncode == 0 and "running, ready" in with_.stdout
