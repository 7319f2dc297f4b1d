"""Run real ``python -m stream worker`` processes against the test broker.

Each test gets its own app id (consumer group + changelog topics), its own topic names,
its own data dir and web port, so tests never share state. Workers always use the
RocksDB store (the memory store would hide partitioning mistakes, DESIGN.md §7.1).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from stream.devtools import kafka_local
from stream.offline.replay import replay_lines
from stream.wire import encode

REPO = Path(__file__).resolve().parents[2]


def worker_env(bootstrap: str, tmp_path: Path, *, partitions: int = 4, **extra: Any) -> dict[str, str]:
    """Environment for a worker (and for producers/consumers of this test's topics)."""
    tag = uuid.uuid4().hex[:8]
    env = {
        **os.environ,
        "CG_BROKER": f"kafka://{bootstrap}",
        "CG_APP_ID": f"cg-test-{tag}",
        "CG_PARTITIONS": str(partitions),
        "CG_COMPACTION_TOPIC": f"compaction-{tag}",
        "CG_ARTIFACT_TOPIC": f"artifact-{tag}",
        "CG_ALERTS_TOPIC": f"alerts-{tag}",
        "CG_VERDICTS_TOPIC": f"verdicts-{tag}",
        "CG_STATUS_TOPIC": f"status-{tag}",
        "CG_DEADLETTER_TOPIC": f"deadletter-{tag}",
        "CG_REMEDIATION_TOPIC": f"remediation-{tag}",
        "CG_REMEDIATION_GROUP": f"cg-test-remediation-{tag}",
        "CG_DATA_DIR": str(tmp_path / f"data-{tag}"),
        "CG_WEB_PORT": str(kafka_local.free_ports(1)[0]),
    }
    env.update({k: str(v) for k, v in extra.items()})
    return env


def run_cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "stream", *args], env=env, cwd=REPO,
        capture_output=True, text=True, timeout=timeout,
    )


class Worker:
    """One ``python -m stream worker`` subprocess with its log in a file.

    ``python``: the interpreter (default this one; tests/langgraph run the worker from the
    project's own ``.venv``, which has no orjson — see Makefile ``test-langgraph``).
    """

    def __init__(self, env: dict[str, str], log_path: Path, *, python: str | Path = sys.executable) -> None:
        self.env = env
        self.log_path = log_path
        self.python = str(python)
        self.proc: subprocess.Popen | None = None

    def start(self, *, wait_ready: bool = True, timeout: float = 90) -> Worker:
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [self.python, "-m", "stream", "worker", "-l", "info", "--web-port", self.env["CG_WEB_PORT"]],
            env=self.env, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if wait_ready:
            self.wait_for_log("[^GuardWorker]: Ready", timeout)
        return self

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for_log(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        start_size = 0
        while time.monotonic() < deadline:
            if needle in self.log_text()[start_size:]:
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"worker exited with {self.proc.returncode}:\n{self.log_text()[-4000:]}")
            time.sleep(0.25)
        raise AssertionError(f"worker not ready in {timeout}s:\n{self.log_text()[-4000:]}")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)
        finally:
            self._log.close()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            self._log.close()


def topic_for(line: bytes, env: dict[str, str]) -> str:
    """Input topic of an event line by its ``type`` (bad lines go to the artifact topic)."""
    try:
        kind = json.loads(line).get("type")
    except Exception:
        kind = None
    return env["CG_COMPACTION_TOPIC"] if kind == "checkpoint" else env["CG_ARTIFACT_TOPIC"]


def context_of(line: bytes) -> bytes | None:
    try:
        ctx = json.loads(line).get("context_id")
    except Exception:
        return None
    return ctx.encode() if isinstance(ctx, str) else None


async def produce(bootstrap: str, records: list[tuple[str, bytes | None, bytes]]) -> None:
    """Produce (topic, key, value) records in order, acks=all, and wait for all."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", max_request_size=4 << 20)
    await producer.start()
    try:
        for topic, key, value in records:
            await producer.send_and_wait(topic, value, key=key)
    finally:
        await producer.stop()


async def consume(
    bootstrap: str, topic: str, *, expected: int, timeout: float = 90, settle: float = 2.0,
    isolation: str = "read_uncommitted",
) -> list[Any]:
    """Read a topic from the beginning until ``expected`` records arrived (then ``settle`` s more).

    ``isolation="read_committed"`` hides records of aborted or open transactions.
    """
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest",
        enable_auto_commit=False, group_id=None, isolation_level=isolation,
    )
    await consumer.start()
    out: list[Any] = []
    try:
        deadline = time.monotonic() + timeout
        settle_until = None
        while time.monotonic() < deadline:
            batch = await consumer.getmany(timeout_ms=500)
            for msgs in batch.values():
                out.extend(msgs)
            if len(out) >= expected:
                settle_until = settle_until or time.monotonic() + settle
                if time.monotonic() >= settle_until:
                    break
    finally:
        await consumer.stop()
    return out


def normalize_trigger(alert: dict) -> dict:
    """Offline replay has no topic/partition/offset: null them for comparison."""
    return {**alert, "trigger": {**alert["trigger"], "topic": None, "partition": None, "offset": None}}


def per_context(alerts: list[dict]) -> dict[str, list[bytes]]:
    """context -> encoded alerts in order (Kafka orders per partition, hence per context)."""
    out: dict[str, list[bytes]] = defaultdict(list)
    for a in alerts:
        out[a["context_id"]].append(encode(normalize_trigger(a)))
    return dict(out)


def dedupe_repeats(alerts: list[dict]) -> list[dict]:
    """Drop repeats of an identical alert (at-least-once), asserting repeats are identical."""
    seen: dict[str, bytes] = {}
    out = []
    for a in alerts:
        raw = encode(normalize_trigger(a))
        if a["alert_id"] in seen:
            assert seen[a["alert_id"]] == raw, f"repeat of {a['alert_id']} differs"
            continue
        seen[a["alert_id"]] = raw
        out.append(a)
    return out


def expected_alerts(lines: list[bytes], **kwargs: Any) -> dict[str, list[bytes]]:
    return per_context(replay_lines(lines, **kwargs).alerts)


def run(coro):
    return asyncio.run(coro)
