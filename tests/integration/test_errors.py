"""The error contract (docs/OPERATIONS.md §12), one row per mistake, against the real CLI.

Each row runs ``python -m stream ...`` (or faust's own CLI on our app) as a subprocess,
the way a user meets it, and asserts: the exit code (2 usage, 1 failed run, 130 Ctrl-C),
exactly one non-blank stderr line ``checkpoint-guard: error: <what>; <the fix>`` holding
the row's phrases, no traceback and no raw library line (aiokafka's, faust's, mode's).

Where a row needs Kafka it gets a real one: *down* is a closed port; *fresh* is the
session's broker (tests/conftest.py) with topic names nobody created; *sasl* is the SASL
broker the SASL tests start (tests/integration/sasl_broker.py) with a wrong password or
none. Rows that need a state of the machine (a data dir held by a worker, a taken web
port, topics with the wrong partition count) set it up first (:func:`_setup`).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from stream.devtools import kafka_local
from tests.conftest import create_kafka_topics
from tests.integration.harness import REPO, worker_env
from tests.integration.sasl_broker import sasl_broker, sasl_env

ERROR = "checkpoint-guard: error: "
#: Words that only a library's own line (or a traceback) would print.
RAW = ("Traceback", "aiokafka", "Unable connect", "Unable to bootstrap", "Errno", "KafkaConnectionError",
       "UnknownTopicOrPartitionError", "SaslAuthenticationFailed", "[ERROR]", "Unclosed", "mode.", "faust.",
       "AddressFamily")
TRAJECTORY = (
    REPO / "stream/samples/traces/mini-swe-agent-deepseek-swebench/deepseek_chat_dev/pydicom__pydicom-901.traj.json"
)
TAU = REPO / "stream/samples/traces/tau-bench-airline-gpt4o/gpt-4o-airline.sample10.json"
TRANSCRIPT = REPO / "tests/fixtures/compaction_logs/claude-code/cc-dropped-prohibition.jsonl"
EVENT = json.dumps({"schema_version": 1, "type": "artifact", "event_id": "e1", "context_id": "c1",
                    "artifact_id": "a1", "tier": "live", "op": "admitted"}).encode() + b"\n"
CONNECTION_REFUSED = ("nothing listens there (connection refused)", "start the broker", "CG_BROKER")
MISSING = ("topics do not exist: ", "run `checkpoint-guard topics create` first")
LOGIN = ("the broker refused the PLAIN login of user 'alice'", "check CG_SASL_USERNAME, CG_SASL_PASSWORD")


@dataclass(frozen=True)
class Case:
    id: str
    args: tuple[str, ...]
    code: int
    says: tuple[str, ...]                      # phrases of the one error line: what went wrong, the fix
    kafka: str = "none"                        # none | down | fresh | sasl-wrong | sasl-none
    files: dict[str, bytes] = field(default_factory=dict)   # written into the working directory first
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=dict)
    setup: str = ""                            # lock | port | wrong-partitions | not-copartitioned
    faust: bool = False                        # run `python -m faust -A stream.app ARGS`
    within: float = 90.0                       # seconds the command may take to fail


CASES = [
    # ---------------------------------------------------------------- usage: exit 2, nothing done
    Case("unknown-command", ("bogus",), 2, ("No such command 'bogus'", "checkpoint-guard -h")),
    Case("unknown-option", ("replay", "--bogus"), 2, ("No such option: --bogus", "checkpoint-guard replay -h")),
    Case("missing-subcommand", ("topics",), 2, ("Missing argument", "Choose from: create, describe",
                                                 "(see `checkpoint-guard topics -h`)")),
    Case(
        "option-without-its-value",
        ("ingest", "claude-code", "--out"),
        2,
        ("option --out needs a value (--out TEXT)", "(see `checkpoint-guard ingest -h`)"),
    ),
    Case(
        "bad-setting-partitions",
        ("schema",),
        2,
        ("CG_PARTITIONS='abc'", "integer", "set CG_PARTITIONS to a valid value"),
        env={"CG_PARTITIONS": "abc"},
    ),
    Case(
        "bad-setting-protocol",
        ("schema",),
        2,
        ("CG_SECURITY_PROTOCOL='KERBEROS'", "PLAINTEXT"),
        env={"CG_SECURITY_PROTOCOL": "KERBEROS"},
    ),
    Case(
        "foreign-broker-scheme",
        ("topics", "create"),
        2,
        ("scheme http:// is not Kafka's", "kafka://host:port"),
        env={"CG_BROKER": "http://localhost:9092"},
    ),
    Case(
        "replay-out-no-dir",
        ("replay", "in.jsonl", "--out", "/no/such/dir/a.jsonl"),
        2,
        ("cannot write --out /no/such/dir/a.jsonl: directory /no/such/dir does not exist", "mkdir -p /no/such/dir"),
        files={"in.jsonl": EVENT},
    ),
    Case(
        "replay-out-is-dir",
        ("replay", "in.jsonl", "--out", "."),
        2,
        ("cannot write --out .: it is a directory", "give a file name"),
        files={"in.jsonl": EVENT},
    ),
    Case(
        "replay-out-is-input",
        ("replay", "in.jsonl", "--out", "in.jsonl"),
        2,
        ("--out in.jsonl is one of the inputs", "write the alerts to another file"),
        files={"in.jsonl": EVENT},
    ),
    Case(
        "ingest-out-no-dir",
        ("ingest", "--out", "/no/such/dir/a.jsonl"),
        2,
        ("directory /no/such/dir does not exist", "mkdir -p /no/such/dir"),
    ),
    Case("export-out-is-dir", ("export", "--out", "."), 2, ("it is a directory", "give a file name")),
    Case(
        "replay-missing-input",
        ("replay", "missing.jsonl"),
        2,
        ("cannot read missing.jsonl: no such file or directory", "give a JSONL file of input events"),
    ),
    Case(
        "ingest-missing-input",
        ("ingest", "missing.traj.json"),
        2,
        ("cannot read missing.traj.json: no such file or directory", "give trajectory files"),
    ),
    Case(
        "ingest-log-missing-input",
        ("ingest", "claude-code", "missing.jsonl"),
        2,
        ("cannot read missing.jsonl: no such file or directory", "Claude Code transcripts"),
    ),
    Case(
        "ingest-claude-code-a-markdown-file",
        ("ingest", "claude-code", "README.md"),
        2,
        ("cannot ingest README.md: it is Markdown text, not a Claude Code transcript", "give Claude Code transcripts"),
        files={"README.md": b"# notes\n\nnot a transcript\n"},
    ),
    Case(
        "ingest-claude-code-its-own-events",
        ("ingest", "claude-code", "ev.jsonl"),
        2,
        ("cannot ingest ev.jsonl: it is already input events (what ingest writes), not a Claude Code transcript",
         "use checkpoint-guard replay ev.jsonl"),
        files={"ev.jsonl": EVENT},
    ),
    Case(
        "ingest-openhands-a-transcript",
        ("ingest", "openhands", str(TRANSCRIPT)),
        2,
        ("it is a Claude Code transcript, not an OpenHands conversation directory",
         f"use checkpoint-guard ingest claude-code {TRANSCRIPT}"),
    ),
    Case(
        "ingest-openhands-a-markdown-file",
        ("ingest", "openhands", "README.md"),
        2,
        ("it is Markdown text, not an OpenHands conversation directory", "give OpenHands conversation directories"),
        files={"README.md": b"# notes\n"},
    ),
    Case(
        "ingest-openhands-its-own-events",
        ("ingest", "openhands", "ev.jsonl"),
        2,
        ("it is already input events (what ingest writes), not an OpenHands conversation directory",
         "use checkpoint-guard replay ev.jsonl"),
        files={"ev.jsonl": EVENT},
    ),
    Case("replay-a-directory", ("replay", "."), 2, ("cannot replay .: it is a directory", "JSONL file")),
    Case(
        "replay-a-trajectory",
        ("replay", str(TRAJECTORY)),
        2,
        ("one JSON document over many lines", f"checkpoint-guard ingest {TRAJECTORY} | checkpoint-guard replay -"),
    ),
    Case("replay-a-tau-bench-array", ("replay", str(TAU)), 2, ("one JSON document", "checkpoint-guard ingest")),
    Case(
        "replay-a-transcript",
        ("replay", str(TRANSCRIPT)),
        2,
        ("a Claude Code transcript", f"checkpoint-guard ingest claude-code {TRANSCRIPT}"),
    ),
    Case(
        "replay-its-own-alerts",
        ("replay", "alerts.jsonl"),
        2,
        ("this is checkpoint-guard's output (alerts), not input events", "| checkpoint-guard replay -"),
        files={"alerts.jsonl": b'{"schema_version":1,"type":"alert","alert_id":"a1","rule":"orphan"}\n' * 300},
    ),
    Case(
        "replay-its-own-verdicts-on-stdin",
        ("replay", "-"),
        2,
        ("cannot replay stdin", "checkpoint-guard's output (verdicts)"),
        stdin=b'{"schema_version":1,"type":"verdict","context_id":"c1","node_id":"n1"}\n',
    ),
    Case(
        "replay-empty-file",
        ("replay", "empty.jsonl"),
        2,
        ("it is empty (no events)", "JSONL file of input events"),
        files={"empty.jsonl": b""},
    ),
    Case("replay-blank-file", ("replay", "blank.jsonl"), 2, ("it is empty",), files={"blank.jsonl": b"\n \n\r\n"}),
    Case(
        "replay-binary-file",
        ("replay", "bin.jsonl"),
        2,
        ("it is binary, not JSONL text",),
        files={"bin.jsonl": bytes(range(256)) * 8},
    ),
    Case(
        "replay-gzip-file",
        ("replay", "ev.jsonl.gz"),
        2,
        ("gzip-compressed", "gunzip -c ev.jsonl.gz"),
        files={"ev.jsonl.gz": b"\x1f\x8b\x08\x00" + bytes(64)},
    ),
    Case("replay-empty-stdin", ("replay", "-"), 2, ("cannot replay stdin: it is empty",)),
    Case(
        "replay-trajectory-on-stdin",
        ("replay", "-"),
        2,
        ("cannot replay stdin", "one JSON document"),
        stdin=TRAJECTORY.read_bytes(),
    ),
    Case(
        "replay-files-and-kafka",
        ("replay", "in.jsonl", "--from-kafka"),
        2,
        ("give either PATH... or --from-kafka",),
        files={"in.jsonl": EVENT},
    ),
    Case(
        "schema-into-a-file",
        ("schema", "taken"),
        2,
        ("it is a file, not a directory", "give a directory"),
        files={"taken": b"x"},
    ),
    Case(
        "replay-bad-time",
        ("replay", "--from-kafka", "--since", "yesterday"),
        2,
        ("not an RFC 3339 time: 'yesterday'", "2026-11-29T10:00:00Z"),
        kafka="fresh",
    ),
    Case(
        "tail-unknown-rule",
        ("tail", "--rule", "bogus"),
        2,
        ("'bogus' is not one of 'orphaned_referent'", "checkpoint-guard tail -h"),
    ),
    Case(
        "ingest-bad-rates",
        ("ingest", "--prohibition-survival", "2,3"),
        2,
        ("expected three rates in [0, 1] (leaf,section,root)",),
    ),
    Case(
        "replay-negative-gap-limit",
        ("replay", "in.jsonl", "--seq-gap-limit", "-1"),
        2,
        ("--seq-gap-limit must be >= 0",),
        files={"in.jsonl": EVENT},
    ),
    Case(
        "kafka-start-on-a-taken-port",
        ("kafka", "start", "--home", "k", "--port", "PORT"),
        2,
        ("is already in use", "pick another with CG_KAFKA_PORT / --port"),
        setup="port",
    ),
    *(
        Case(
            f"faust-{name}",
            (name, *extra),
            2,
            (f"`faust {name}` does not apply to checkpoint-guard's app", fix),
            faust=True,
        )
        for name, extra, fix in (
            ("agents", (), "checkpoint-guard worker -h"),
            ("send", ("compaction-events", "{}"), "checkpoint-guard ingest ... --to-kafka"),
            ("reset", (), "`checkpoint-guard reset`"),
            ("tables", (), "checkpoint-guard explain"),
        )
    ),
    # ---------------------------------------------------------------- the broker is down: exit 1
    *(
        Case(f"{'-'.join(args[:2])}-broker-down", args, 1, CONNECTION_REFUSED, kafka="down")
        for args in (
            ("worker",),
            ("remediate",),
            ("topics", "create"),
            ("topics", "describe"),
            ("ingest", "--to-kafka"),
            ("ingest", "claude-code", str(TRANSCRIPT), "--to-kafka"),
            ("replay", "--from-kafka"),
            ("tail", "--max", "1"),
            ("export", "--out", "x.jsonl"),
            ("explain", "ctx", "node"),
        )
    ),
    Case("faust-worker-broker-down", ("worker",), 1, CONNECTION_REFUSED, kafka="down", faust=True),
    Case(
        "unresolvable-broker-host",
        ("topics", "create"),
        1,
        ("the host name does not resolve", "CG_BROKER"),
        env={"CG_BROKER": "kafka://no-such-host.invalid:9092"},
    ),
    # ---------------------------------------------------------------- topics missing: exit 1, at once
    *(
        Case(f"{'-'.join(args[:2])}-topics-missing", args, 1, MISSING, kafka="fresh", within=20)
        for args in (
            ("worker",),
            ("remediate",),
            ("ingest", "--to-kafka"),
            ("ingest", "claude-code", str(TRANSCRIPT), "--to-kafka"),
            ("replay", "--from-kafka"),
            ("tail", "--max", "1"),
            ("export", "--out", "x.jsonl"),
            ("explain", "ctx", "node"),
        )
    ),
    # ---------------------------------------------------------------- a SASL broker refuses us: exit 1
    *(
        Case(f"{'-'.join(args[:2])}-wrong-password", args, 1, LOGIN, kafka="sasl-wrong")
        for args in (
            ("worker",),
            ("remediate",),
            ("topics", "create"),
            ("ingest", "--to-kafka"),
            ("replay", "--from-kafka"),
            ("tail", "--max", "1"),
        )
    ),
    Case(
        "no-sasl-settings-for-a-sasl-broker",
        ("topics", "create"),
        1,
        ("no broker answered", "CG_SECURITY_PROTOCOL and the CG_SASL_* settings"),
        kafka="sasl-none",
    ),
    # ---------------------------------------------------------------- the machine's state: exit 1
    Case(
        "reset-while-a-worker-runs",
        ("reset", "--yes"),
        1,
        ("is in use by another worker", "stop that worker first"),
        setup="lock",
    ),
    Case(
        "clean-while-a-worker-runs",
        ("clean", "--yes"),
        1,
        ("a worker is using", "stop that worker first"),
        setup="lock",
    ),
    Case(
        "second-worker-on-a-data-dir",
        ("worker",),
        1,
        ("is in use by another worker (pid 4242", "give each worker its own CG_DATA_DIR"),
        setup="lock",
    ),
    Case(
        "worker-on-a-taken-web-port",
        ("worker",),
        1,
        ("address already in use", "give each worker its own CG_WEB_PORT"),
        setup="port",
    ),
    Case(
        "topics-with-another-partition-count",
        ("topics", "create"),
        1,
        ("different partition count than 4", "set CG_PARTITIONS to match"),
        kafka="fresh",
        setup="wrong-partitions",
    ),
    Case(
        "worker-on-topics-not-co-partitioned",
        ("worker",),
        1,
        ("input topics are not co-partitioned", "re-create them with one count"),
        kafka="fresh",
        setup="not-copartitioned",
    ),
    Case(
        "worker-without-create-rights-and-no-state-log",
        ("worker",),
        1,
        (MISSING[0] + "cg-test-", "-state, cg-test-", "-__assignor-__leader", MISSING[1]),
        kafka="fresh",
        setup="topics",
        env={"CG_CREATE_TOPICS": "false"},
    ),
    Case(
        "remediate-without-create-rights-and-no-state-topic",
        ("remediate",),
        1,
        (MISSING[0] + "cg-test-remediation-", MISSING[1]),
        kafka="fresh",
        setup="topics",
        env={"CG_CREATE_TOPICS": "false"},
    ),
    Case(
        "explain-a-node-that-never-appeared",
        ("explain", "no-such-context", "no-such-node"),
        1,
        ("node 'no-such-node' never appeared in context 'no-such-context'", "check both ids"),
        kafka="fresh",
        setup="topics",
    ),
    Case(
        "remediate-with-a-handler-that-does-not-load",
        ("remediate",),
        1,
        ("remediation handler 'nope:Nope' does not load", "fix CG_REMEDIATION_HANDLERS"),
        kafka="fresh",
        setup="topics",
        env={"CG_REMEDIATION_HANDLERS": "nope:Nope"},
    ),
    Case(
        "worker-with-partitions-unlike-the-topics",
        ("worker",),
        1,
        ("but CG_PARTITIONS=2", "set CG_PARTITIONS=4"),
        kafka="fresh",
        setup="topics",
        env={"CG_PARTITIONS": "2"},
    ),
]


def _env(case: Case, request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    """The subprocess environment: a Kafka of the row's kind, fresh topic names, home dirs under tmp_path."""
    if case.kafka in ("sasl-wrong", "sasl-none"):
        bootstrap = sasl_broker(request).bootstrap
        env = (sasl_env(bootstrap, tmp_path, password="not-the-password") if case.kafka == "sasl-wrong"
               else worker_env(bootstrap, tmp_path))
    elif case.kafka == "fresh":
        env = worker_env(request.getfixturevalue("kafka_bootstrap"), tmp_path)
    else:  # none / down: a port nothing listens on
        env = worker_env(f"127.0.0.1:{kafka_local.free_ports(1)[0]}", tmp_path)
    env = {k: v for k, v in env.items() if not k.startswith("CG_") or k in env and k in _OURS}
    env.update(XDG_DATA_HOME=str(tmp_path / "xdg-data"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.update(case.env)
    return env


#: The CG_* variables the harness sets (a developer's own CG_* must not leak into a row).
_OURS = frozenset({"CG_BROKER", "CG_APP_ID", "CG_PARTITIONS", "CG_COMPACTION_TOPIC", "CG_ARTIFACT_TOPIC",
                   "CG_ALERTS_TOPIC", "CG_VERDICTS_TOPIC", "CG_STATUS_TOPIC", "CG_DEADLETTER_TOPIC",
                   "CG_REMEDIATION_TOPIC", "CG_REMEDIATION_GROUP", "CG_DATA_DIR", "CG_WEB_PORT",
                   "CG_SECURITY_PROTOCOL", "CG_SASL_MECHANISM", "CG_SASL_USERNAME", "CG_SASL_PASSWORD",
                   "CG_CREATE_TOPICS"})


def _setup(case: Case, env: dict[str, str], request: pytest.FixtureRequest, stack: list) -> None:
    """Put the machine in the state the row is about; ``stack`` keeps what must stay held."""
    if case.setup == "lock":  # what a running worker holds: the data dir's flock, its pid inside
        data = Path(env["CG_DATA_DIR"])
        if case.args[0] == "clean":
            data = Path(env["XDG_DATA_HOME"]) / "checkpoint-guard" / "worker"
            env["CG_DATA_DIR"] = str(data)
        (data / "state" / "0").mkdir(parents=True)
        held = open(data / "worker.lock", "w")
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        stack.append(held)
    elif case.setup == "port":
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        env["CG_WEB_PORT"] = str(taken.getsockname()[1])
        stack.append(taken)
    elif case.setup:
        bootstrap = env["CG_BROKER"].removeprefix("kafka://")
        topics = {env[f"CG_{t}_TOPIC"]: 4 for t in ("COMPACTION", "ARTIFACT", "ALERTS", "VERDICTS", "STATUS",
                                                     "DEADLETTER", "REMEDIATION")}
        if case.setup == "wrong-partitions":
            topics = {env["CG_ALERTS_TOPIC"]: 2}
        elif case.setup == "not-copartitioned":
            topics[env["CG_ARTIFACT_TOPIC"]] = 2
        asyncio.run(create_kafka_topics(bootstrap, topics))


def _run(case: Case, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    entry = ["-m", "faust", "-A", "stream.app"] if case.faust else ["-m", "stream"]
    args = [env["CG_WEB_PORT"] if a == "PORT" else a for a in case.args]  # the port _setup holds
    return subprocess.run([sys.executable, *entry, *args], cwd=cwd, env=env, input=case.stdin,
                          capture_output=True, timeout=case.within + 60)


def assert_one_error_line(proc: subprocess.CompletedProcess, code: int, says: tuple[str, ...]) -> str:
    """The contract: ``code``, one non-blank stderr line (ours, with ``says``), nothing raw."""
    err = proc.stderr.decode("utf-8", "replace")
    lines = [line for line in err.splitlines() if line.strip()]
    assert proc.returncode == code, err
    assert len(lines) == 1 and lines[0].startswith(ERROR), err
    for phrase in says:
        assert phrase in lines[0], (phrase, lines[0])
    for raw in RAW:
        assert raw not in err, (raw, err)
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_mistake_ends_in_one_line_with_the_fix_and_its_exit_code(case: Case, request, tmp_path):
    env = _env(case, request, tmp_path)
    for name, content in case.files.items():
        (tmp_path / name).write_bytes(content)
    held: list = []
    try:
        _setup(case, env, request, held)
        started = time.monotonic()
        proc = _run(case, env, tmp_path)
        took = time.monotonic() - started
    finally:
        for thing in held:
            thing.close()
    line = assert_one_error_line(proc, case.code, case.says)
    assert took < case.within, f"{case.id} took {took:.0f}s to say: {line}"
    assert "not-the-password" not in proc.stderr.decode() + proc.stdout.decode()
    if case.code == 2:  # usage: nothing was done, nothing written
        assert not proc.stdout.strip() or case.faust, proc.stdout


# ---------------------------------------------------------------- Ctrl-C: 130, and what ran is stopped


def _interrupt(args: list[str], env: dict[str, str], cwd: Path, *, after: str | None, wait: float = 5.0,
               stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    """Start ``python -m stream ARGS``, send SIGINT once ``after`` is on its stdout (or after ``wait``
    seconds), return the finished process."""
    proc = subprocess.Popen([sys.executable, "-m", "stream", *args], cwd=cwd, env=env, stdin=stdin,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out = b""
        deadline = time.monotonic() + 180
        if after is None:
            time.sleep(wait)
        else:
            while after.encode() not in out:
                assert time.monotonic() < deadline and proc.poll() is None, out.decode(errors="replace")
                out += proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out + rest, err)


def _left_running(tmp_path: Path) -> list[int]:
    """Pids of processes still running with this test's home (a worker the demo left behind)."""
    mine = f"XDG_DATA_HOME={tmp_path / 'xdg-data'}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if mine in (proc / "environ").read_bytes().split(b"\0"):
                    found.append(int(proc.name))
            except OSError:  # gone, or not ours to read
                continue
    return found


def test_ctrl_c_in_demo_exits_130_with_one_line_and_stops_its_worker(request, tmp_path):
    env = _env(Case("demo", ("demo",), 130, (), kafka="fresh"), request, tmp_path)
    proc = _interrupt(["demo", "--use-broker"], env, tmp_path, after="trajectories ->")
    try:
        assert_one_error_line(proc, 130, ("interrupted (Ctrl-C)",))
        assert _left_running(tmp_path) == []  # the worker it started (or was starting) is stopped
    finally:
        for pid in _left_running(tmp_path):
            os.kill(pid, signal.SIGKILL)


def test_ctrl_c_in_a_replay_waiting_for_input_exits_130(request, tmp_path):
    env = _env(Case("replay", ("replay",), 130, ()), request, tmp_path)
    read, write = os.pipe()  # stdin that stays open: replay waits for more events
    try:
        os.write(write, EVENT)
        proc = _interrupt(["replay", "-"], env, tmp_path, after=None, stdin=read)
    finally:
        os.close(read)
        os.close(write)
    assert_one_error_line(proc, 130, ("interrupted (Ctrl-C)",))
