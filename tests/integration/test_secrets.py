"""Secrets never reach an output, and the worker's web port is loopback-only by default.

Every process here runs with a distinctive password (tests/integration/sasl_broker.py);
all of its stdout, stderr and log output is searched for it — after a successful run of
the worker and after failing ones (wrong password, a password the broker cannot take).
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from stream import kafka_clients
from stream.devtools import kafka_local
from tests.integration.harness import Worker, run_cli
from tests.integration.sasl_broker import ALICE_PASSWORD, USERS, sasl_broker, sasl_env, settings_of
from tests.scenarios import all_lines, design_scenarios


@pytest.fixture(scope="module")
def broker(request: pytest.FixtureRequest) -> kafka_local.BrokerInfo:
    return sasl_broker(request)


def assert_no_secret(text: str, *secrets: str) -> None:
    for secret in secrets or tuple(USERS.values()):
        assert secret not in text, (
            f"a password leaked into the output: ...{text[max(0, text.find(secret) - 200) :][:400]}"
        )


def _listeners(port: int) -> list[str]:
    """Local addresses (``ip:port``) in LISTEN state on ``port`` (IPv4 and IPv6)."""
    found = []
    for table, width in (("/proc/net/tcp", 8), ("/proc/net/tcp6", 32)):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            addr, hexport = local.split(":")
            if state == "0A" and int(hexport, 16) == port:
                if width == 8:
                    ip = ".".join(str(b) for b in reversed(bytes.fromhex(addr)))
                else:
                    ip = "::" if int(addr, 16) == 0 else addr
                found.append(f"{ip}:{port}")
    return found


async def _produce_and_read(env: dict[str, str], lines: list[bytes], expected: int) -> list:
    settings = settings_of(env)
    async with kafka_clients.started(settings, kafka_clients.producer(settings)) as p:
        for line in lines:
            event = json.loads(line)
            topic = env["CG_COMPACTION_TOPIC"] if event["type"] == "checkpoint" else env["CG_ARTIFACT_TOPIC"]
            await p.send_and_wait(topic, line, key=event["context_id"].encode())
    c = kafka_clients.consumer(settings, env["CG_ALERTS_TOPIC"], group_id=None, auto_offset_reset="earliest")
    out: list = []
    async with kafka_clients.started(settings, c):
        deadline = time.monotonic() + 90
        while len(out) < expected and time.monotonic() < deadline:
            for msgs in (await c.getmany(timeout_ms=500)).values():
                out.extend(msgs)
    return out


def test_a_working_worker_never_prints_the_password_and_serves_web_on_loopback_only(broker, tmp_path):
    env = sasl_env(broker.bootstrap, tmp_path, mechanism="PLAIN")
    created = run_cli(env, "topics", "create", timeout=120)
    assert created.returncode == 0, created.stderr
    assert_no_secret(created.stdout + created.stderr)
    lines = all_lines(design_scenarios("s")[:2])
    worker = Worker(env, tmp_path / "worker.log").start(timeout=150)
    try:
        listening = _listeners(int(env["CG_WEB_PORT"]))
        assert listening == [f"127.0.0.1:{env['CG_WEB_PORT']}"], listening
        alerts = asyncio.run(_produce_and_read(env, lines, expected=1))
        assert alerts
    finally:
        assert worker.stop() == 0, worker.log_text()[-3000:]
    text = worker.log_text()
    assert "[^GuardWorker]: Ready" in text
    assert_no_secret(text)


def test_failing_commands_never_print_the_password(broker, tmp_path):
    wrong = f"wrong-Pw-{ALICE_PASSWORD[-12:]}-x"
    env = sasl_env(broker.bootstrap, tmp_path, password=wrong)
    done = run_cli(env, "topics", "create", timeout=120)
    assert done.returncode == 1
    assert_no_secret(done.stdout + done.stderr, wrong, ALICE_PASSWORD)

    worker = Worker(env, tmp_path / "worker.log").start(wait_ready=False)
    try:
        assert worker.proc.wait(120) != 0
    finally:
        worker.kill()
    assert_no_secret(worker.log_text(), wrong, ALICE_PASSWORD)

    bad = "has a space " + ALICE_PASSWORD
    refused = run_cli({**env, "CG_SASL_PASSWORD": bad}, "kafka", "start", "--sasl", "--home", str(tmp_path / "k"))
    assert refused.returncode == 2 and "the password of SASL user 'alice' is not allowed" in refused.stderr
    assert_no_secret(refused.stdout + refused.stderr, bad, ALICE_PASSWORD)


def test_the_broker_log_hides_the_passwords_and_its_config_is_private(broker):
    assert_no_secret(broker.log_file.read_text(errors="replace"))
    props = broker.kafka_home / kafka_local.PROPS_NAME
    assert props.stat().st_mode & 0o077 == 0  # it must hold them: owner-only


JUDGE_KEY = "sk-judge-7f3c9a1e-never-print-me"


def test_the_model_judges_api_key_never_reaches_an_output_or_the_cache(tmp_path):
    """ingest --judge model with a distinctive key: accepted, refused, not allowed to go to another host, fallback."""
    from tests.model_judge_standins import ModelServer
    from tests.unit.test_ingest_model_judge import DROPPED, env_of, run

    log = str(DROPPED)
    outputs = []
    with ModelServer(api_key=JUDGE_KEY) as server:
        ok = run(env_of(tmp_path, CG_JUDGE_BACKEND="anthropic", CG_JUDGE_URL=server.url, CG_JUDGE_API_KEY=JUDGE_KEY),
                 "ingest", "claude-code", log, "--judge", "model")
        assert ok.returncode == 0 and server.requests[0]["headers"]["x-api-key"] == JUDGE_KEY
        with ModelServer(api_key="another-key") as refusing:
            for fallback in ((), ("--judge-fallback", "rules")):
                outputs.append(run(env_of(tmp_path, CG_JUDGE_BACKEND="openai", CG_JUDGE_URL=f"{refusing.url}/v1",
                                          CG_JUDGE_MODEL="m", CG_JUDGE_API_KEY=JUDGE_KEY),
                                   "ingest", "claude-code", log, "--judge", "model", *fallback))
        vendor = env_of(tmp_path, CG_JUDGE_BACKEND="anthropic", CG_JUDGE_URL=server.url, ANTHROPIC_API_KEY=JUDGE_KEY)
        outputs.append(run(vendor, "ingest", "claude-code", log, "--judge", "model"))  # not sent to this host
        assert len(server.requests) == 1
    assert [o.returncode for o in outputs] == [1, 0, 2]
    assert "HTTP 401" in outputs[0].stderr.decode()
    for out in [ok, *outputs]:
        assert_no_secret(out.stdout.decode() + out.stderr.decode(), JUDGE_KEY)
    for entry in (tmp_path / "judge-cache").rglob("*"):
        if entry.is_file():
            assert_no_secret(entry.read_text(), JUDGE_KEY)
