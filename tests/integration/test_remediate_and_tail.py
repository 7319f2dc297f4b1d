"""The remediation worker and ``tail`` against the real broker (tests/conftest.py).

The alert stream is the engine's own output for the DESIGN.md §4 scenarios (every
request kind occurs), produced to a fresh alerts topic with redelivered alerts mixed in
— before and after a restart — exactly as an at-least-once guard would deliver them.
The worker runs as ``python -m stream remediate`` subprocesses; the requests topic is
read with ``read_committed`` (the worker writes transactionally).
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from stream.offline.replay import replay_lines
from stream.remediation import HandlerContext, plan
from stream.wire import RemediationRequest, encode
from tests.integration.harness import REPO, consume, produce, run
from tests.scenarios import design_scenarios

PARTITIONS = 2

#: What the scenarios' alerts must yield, per context, in order: (kind, node, about)
#: where ``about`` is the referent or the missing constraints (a cancel echoes the
#: cancelled request's).
EXPECTED = {
    "s-orphan": [("refetch", "L1", "a1"), ("cancel", "L1", "a1"), ("refetch", "L1", "a2"),
                 ("cancel", "L1", "a2"), ("refetch", "L1", "a1")],
    "s-never": [("refetch", "L1", "ghost"), ("cancel", "L1", "ghost")],
    "s-nonidem": [("refetch", "L1", "a1"), ("freeze", "L1", None), ("cancel", "L1", "a1")],
    "s-replace": [("refetch", "L1", "a2")],
    "s-decay": [("recompact", "S1", ("P2",)), ("recompact", "R", ("P2", "do not modify tests")),
                ("cancel", "R", ("P2", "do not modify tests")),
                ("recompact", "R", ("P2", "do not modify tests", "never push")),
                ("cancel", "R", ("P2", "do not modify tests", "never push"))],
    "s-cycle": [("recompact", "A", ("y",)), ("recompact", "B", ("x", "y"))],
    "s-dup": [("refetch", "L1", "a1")],
}


def scenario_alerts() -> list[dict[str, Any]]:
    lines = [line for c in design_scenarios() for line in c.lines()]
    return replay_lines(lines).alerts


def about(req: dict[str, Any]) -> tuple:
    what = req["referent"] if req["referent"] is not None else req["missing_constraints"]
    return (req["kind"], req["node_id"], tuple(what) if isinstance(what, list) else what)


def per_context(requests: list[dict[str, Any]]) -> dict[str, list[tuple]]:
    out: dict[str, list[tuple]] = {}
    for r in requests:
        out.setdefault(r["context_id"], []).append(about(r))
    return out


@pytest.fixture
def env(kafka_bootstrap: str, create_topics, tmp_path: Path) -> dict[str, str]:
    """Environment of this test's CLI subprocesses: own topics, group, partitions."""
    tag = uuid.uuid4().hex[:8]
    e = {
        **os.environ,
        "CG_BROKER": f"kafka://{kafka_bootstrap}",
        "CG_PARTITIONS": str(PARTITIONS),
        "CG_ALERTS_TOPIC": f"alerts-{tag}",
        "CG_REMEDIATION_TOPIC": f"requests-{tag}",
        "CG_REMEDIATION_GROUP": f"remediation-{tag}",
        "CG_DATA_DIR": str(tmp_path / "data"),
    }
    run(create_topics([e["CG_ALERTS_TOPIC"], e["CG_REMEDIATION_TOPIC"]], PARTITIONS))
    return e


def produce_alerts(bootstrap: str, env: dict[str, str], alerts: list[dict[str, Any]]) -> None:
    run(produce(bootstrap, [(env["CG_ALERTS_TOPIC"], a["context_id"].encode(), encode(a)) for a in alerts]))


async def _read(bootstrap: str, topic: str, *, expected: int, isolation: str = "read_committed",
                timeout: float = 60, settle: float = 2.0) -> list[Any]:
    """Read a topic from the beginning, as a read_committed consumer unless told otherwise."""
    return await consume(bootstrap, topic, expected=expected, timeout=timeout, settle=settle, isolation=isolation)


def read_requests(bootstrap: str, env: dict[str, str], expected: int, **kw: Any) -> list[dict[str, Any]]:
    msgs = run(_read(bootstrap, env["CG_REMEDIATION_TOPIC"], expected=expected, **kw))
    out = []
    for m in msgs:
        req = json.loads(m.value)
        assert m.key == req["context_id"].encode(), "requests are keyed by their context_id"
        RemediationRequest.model_validate(req)
        out.append(req)
    return out


class Remediator:
    """One ``python -m stream remediate`` subprocess, its stderr in a log file."""

    def __init__(self, env: dict[str, str], log_path: Path) -> None:
        self.env, self.log_path = env, log_path
        self.proc: subprocess.Popen | None = None

    def start(self, *, wait_ready: bool = True, timeout: float = 60) -> Remediator:
        self._log = open(self.log_path, "ab")
        self._mark = self.log_path.stat().st_size
        self.proc = subprocess.Popen([sys.executable, "-m", "stream", "remediate"], env=self.env, cwd=REPO,
                                     stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True)
        if wait_ready:
            self.wait_for_log("remediate: ready", timeout)
        return self

    def log_text(self) -> str:
        return self.log_path.read_bytes()[self._mark:].decode(errors="replace")

    def wait_for_log(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.log_text():
                return
            if self.proc.poll() is not None:
                raise AssertionError(f"remediate exited with {self.proc.returncode}:\n{self.log_text()[-3000:]}")
            time.sleep(0.2)
        raise AssertionError(f"no {needle!r} in {timeout}s:\n{self.log_text()[-3000:]}")

    def wait(self, timeout: float = 60) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            self._log.close()

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait(10)


# --------------------------------------------------------------------------- remediate


def test_worker_turns_redelivered_alerts_into_exactly_the_expected_requests_across_a_restart(
    kafka_bootstrap, env, tmp_path
):
    alerts = scenario_alerts()
    first, rest = alerts[:13], alerts[13:]  # the restart falls between s-decay R's first and second open
    _, expected_first = plan(first)
    _, expected_all = plan(alerts)
    log = tmp_path / "remediate.log"

    # phase 1: the first alerts, two of them delivered twice
    produce_alerts(kafka_bootstrap, env, first[:5] + [first[0]] + first[5:] + [first[4]])
    worker = Remediator(env, log).start()
    got = read_requests(kafka_bootstrap, env, len(expected_first))
    assert worker.stop() == 0, worker.log_text()
    assert sorted(r["request_id"] for r in got) == sorted(r["request_id"] for r in expected_first)

    # phase 2 (a new process): the rest, with redeliveries of alerts processed before the restart
    redelivered = [first[0], first[12], rest[0], first[12], rest[0], *rest[1:], first[6]]
    produce_alerts(kafka_bootstrap, env, redelivered)
    worker = Remediator(env, log).start()
    assert "state of 5 contexts loaded" in worker.log_text()
    got = read_requests(kafka_bootstrap, env, len(expected_all), settle=3.0)
    assert worker.stop() == 0, worker.log_text()
    assert "already processed" in worker.log_text()

    ids = [r["request_id"] for r in got]
    assert len(ids) == len(set(ids)), "a request was sent twice"
    assert per_context(got) == EXPECTED
    assert sorted(got, key=lambda r: r["request_id"]) == sorted(expected_all, key=lambda r: r["request_id"])
    # every cancel names a request sent before it in the same context
    for ctx in EXPECTED:
        seen: set[str] = set()
        for r in (r for r in got if r["context_id"] == ctx):
            assert r["cancels"] is None or r["cancels"] in seen
            seen.add(r["request_id"])


class CrashOnFirstFreeze:
    """Test handler: the first time it sees a freeze request, it flushes what the
    transaction has sent so far to the broker and kills its process (no cleanup, like
    a power cut). The marker file (``CG_TEST_CRASH_MARKER``) makes it crash only once."""

    def __init__(self, context: HandlerContext) -> None:
        self.producer = context.producer
        self.marker = Path(os.environ["CG_TEST_CRASH_MARKER"])

    async def handle(self, request: RemediationRequest) -> None:
        if request.kind == "freeze" and not self.marker.exists():
            self.marker.write_text(request.request_id)
            await self.producer.flush()  # the transaction's records are on the broker, uncommitted
            os._exit(3)


def test_a_crash_inside_a_batch_publishes_nothing_of_it_and_the_restart_sends_each_request_once(
    kafka_bootstrap, env, tmp_path
):
    alerts = scenario_alerts()
    _, expected = plan(alerts)
    produce_alerts(kafka_bootstrap, env, alerts + alerts[:4])
    crashing = {**env, "CG_TEST_CRASH_MARKER": str(tmp_path / "crashed"),
                "CG_REMEDIATION_HANDLERS": "stream.remediation:TopicPublisher,"
                                           "tests.integration.test_remediate_and_tail:CrashOnFirstFreeze"}
    log = tmp_path / "remediate.log"
    worker = Remediator(crashing, log).start(wait_ready=False)
    assert worker.wait(60) == 3, worker.log_text()
    assert (tmp_path / "crashed").exists()
    assert "remediate: freeze" not in worker.log_text(), "requests are logged only once committed"

    worker = Remediator(crashing, log).start()  # same handlers; the marker stops a second crash
    got = read_requests(kafka_bootstrap, env, len(expected), settle=3.0)
    assert worker.stop() == 0, worker.log_text()
    assert per_context(got) == EXPECTED
    assert len({r["request_id"] for r in got}) == len(got) == len(expected)
    # the crashed transaction's records are in the log, but aborted: only read_uncommitted sees them
    everything = run(_read(kafka_bootstrap, env["CG_REMEDIATION_TOPIC"], expected=len(expected) + 1,
                           isolation="read_uncommitted", timeout=10))
    assert len(everything) > len(got)


class RaiseOnFreeze:
    """Test handler: fails on every freeze request."""

    def __init__(self, context: HandlerContext) -> None:
        pass

    def handle(self, request: RemediationRequest) -> None:
        if request.kind == "freeze":
            raise RuntimeError("downstream freeze service is down")


def test_a_failing_handler_stops_the_worker_with_one_line_and_commits_nothing_of_its_batch(
    kafka_bootstrap, env, tmp_path
):
    alerts = [a for a in scenario_alerts() if a["context_id"] == "s-nonidem"]  # refetch, freeze, cancel
    produce_alerts(kafka_bootstrap, env, alerts)
    failing = {**env, "CG_REMEDIATION_HANDLERS": "stream.remediation:TopicPublisher,"
                                                 "tests.integration.test_remediate_and_tail:RaiseOnFreeze"}
    worker = Remediator(failing, tmp_path / "remediate.log").start(wait_ready=False)
    assert worker.wait(60) == 1
    text = worker.log_text()
    assert "tests.integration.test_remediate_and_tail:RaiseOnFreeze failed on freeze request" in text
    assert "downstream freeze service is down" in text and "Traceback" not in text
    assert read_requests(kafka_bootstrap, env, 1, timeout=3, settle=0) == []

    worker = Remediator(env, tmp_path / "remediate.log").start()  # fixed: the batch is retried
    got = read_requests(kafka_bootstrap, env, 3)
    assert worker.stop() == 0
    assert per_context(got) == {"s-nonidem": EXPECTED["s-nonidem"]}


def test_worker_refuses_to_start_without_its_alerts_topic(env):
    done = subprocess.run([sys.executable, "-m", "stream", "remediate"], cwd=REPO, capture_output=True, text=True,
                          timeout=60, env={**env, "CG_ALERTS_TOPIC": f"absent-{uuid.uuid4().hex[:6]}"})
    assert done.returncode == 1
    assert "topics do not exist: absent-" in done.stderr and "topics create" in done.stderr
    assert "Traceback" not in done.stderr


# --------------------------------------------------------------------------- tail


def tail(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stream", "tail", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def test_tail_json_from_beginning_prints_the_first_n_matching_alerts_verbatim(kafka_bootstrap, env):
    alerts = scenario_alerts()
    produce_alerts(kafka_bootstrap, env, alerts)
    done = tail(env, "--max", "2", "--json", "--from-beginning", "--rule", "negative_constraint_dropped",
                "--context", "s-decay")
    assert done.returncode == 0, done.stderr
    wanted = [a for a in alerts if a["context_id"] == "s-decay" and a["rule"] == "negative_constraint_dropped"]
    assert done.stdout.splitlines() == [encode(a).decode() for a in wanted[:2]]


def test_tail_readable_line_shows_time_status_rule_context_node_set_and_trigger(kafka_bootstrap, env):
    alerts = scenario_alerts()
    produce_alerts(kafka_bootstrap, env, alerts)
    done = tail(env, "--max", "3", "--from-beginning", "--context", "s-orphan")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    assert [ln.split()[2:7] for ln in lines] == [
        ["OPEN", "orphaned_referent", "s-orphan", "/", "L1"],
        ["RESOLVED", "orphaned_referent", "s-orphan", "/", "L1"],
        ["OPEN", "orphaned_referent", "s-orphan", "/", "L1"],
    ]
    assert "{a1}" in lines[0] and "{}" in lines[1] and "{a2}" in lines[2]
    assert "trigger s-orphan/e3" in lines[0]
    time.strptime(" ".join(lines[0].split()[:2]), "%Y-%m-%d %H:%M:%S")


def _read_line(proc: subprocess.Popen, stream, timeout: float) -> str:
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    try:
        if not sel.select(timeout):
            raise AssertionError(f"no output in {timeout}s")
        return stream.readline()
    finally:
        sel.close()


def test_tail_starts_at_the_end_prints_new_alerts_and_exits_cleanly_on_ctrl_c(kafka_bootstrap, env):
    alerts = scenario_alerts()
    produce_alerts(kafka_bootstrap, env, alerts[:3])  # already there: not printed
    proc = subprocess.Popen([sys.executable, "-m", "stream", "tail", "--json"], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "from the end" in _read_line(proc, proc.stderr, 60)
        produce_alerts(kafka_bootstrap, env, [alerts[5]])
        assert _read_line(proc, proc.stdout, 30).rstrip("\n") == encode(alerts[5]).decode()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 0
        assert "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_tail_on_a_missing_topic_says_so_in_one_line(env):
    done = tail({**env, "CG_ALERTS_TOPIC": f"absent-{uuid.uuid4().hex[:6]}"}, "--max", "1")
    assert done.returncode == 1
    assert "do not exist" in done.stderr and "topics create" in done.stderr and "Traceback" not in done.stderr
