"""Error paths of stream.devtools.kafka_local that need no running broker.

Why: a developer's first contact with the local broker is often a failure (port taken
by someone else's broker, no Java, no Maven, a JVM that dies). Each must be one clear
line, must not leave a process behind, and stop/status must never signal a process
that is not this home's broker. The "dying JVM" here is a shell script standing in for
``java``; it tests our process handling, not Kafka (the real broker is exercised in
tests/integration).
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from stream.devtools import kafka_local
from stream.devtools.kafka_local import KafkaLocalError, PortInUseError
from stream.settings import Settings


def _settings(tmp_path: Path, **kw) -> Settings:
    port, cport = kafka_local.free_ports(2)
    base = {
        "kafka_home": tmp_path / "home",
        "kafka_cache": tmp_path / "cache",
        "kafka_port": port,
        "kafka_controller_port": cport,
    }
    return Settings(**{**base, **kw})


def _assert_one_line(exc: BaseException) -> str:
    msg = str(exc)
    assert msg and "\n" not in msg, msg
    return msg


def _fake_cache(settings: Settings) -> None:
    """A jar cache that passes the completeness check (so no Maven is run)."""
    vdir = Path(settings.kafka_cache) / settings.kafka_version
    (vdir / "libs").mkdir(parents=True)
    (vdir / "libs" / "fake.jar").write_bytes(b"")
    marker = {"pom_sha256": kafka_local._pom_digest(), "jars": ["fake.jar"]}
    (vdir / ".complete").write_text(json.dumps(marker))


def _fake_java(bin_dir: Path, broker_script: str) -> None:
    bin_dir.mkdir(parents=True, exist_ok=True)
    java = bin_dir / "java"
    java.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do\n'
        '  case "$a" in\n'
        "    random-uuid) echo AAAAAAAAAAAAAAAAAAAAAA; exit 0;;\n"
        "    format) exit 0;;\n"
        f"    kafka.Kafka) {broker_script};;\n"
        "  esac\n"
        "done\n"
        "exit 99\n"
    )
    java.chmod(java.stat().st_mode | stat.S_IXUSR)


def test_port_taken_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        settings = _settings(tmp_path, kafka_port=port)
        with pytest.raises(PortInUseError) as err:
            kafka_local.start(settings)
    msg = _assert_one_line(err.value)
    assert f"port {port}" in msg and "already in use" in msg and "CG_KAFKA_PORT" in msg
    assert not (tmp_path / "home" / "broker.pid").exists()


def test_controller_port_taken(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        cport = busy.getsockname()[1]
        with pytest.raises(PortInUseError) as err:
            kafka_local.start(_settings(tmp_path, kafka_controller_port=cport))
    assert "CONTROLLER" in _assert_one_line(err.value)


def test_same_port_for_both_listeners_is_rejected(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    s = s.model_copy(update={"kafka_controller_port": s.kafka_port})
    with pytest.raises(KafkaLocalError, match="two different ports"):
        kafka_local.start(s)


def test_java_missing_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(KafkaLocalError) as err:
        kafka_local.start(_settings(tmp_path))
    msg = _assert_one_line(err.value)
    assert "`java` not found on PATH" in msg and "Java 17" in msg


def test_mvn_missing_when_jars_not_cached(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path / "bin", "exit 1")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    with pytest.raises(KafkaLocalError) as err:
        kafka_local.start(_settings(tmp_path))
    assert "`mvn` not found on PATH" in _assert_one_line(err.value)


def test_broker_dying_on_start_reports_summary_and_log_tail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path / "bin", 'i=1; while [ $i -le 45 ]; do echo "log line $i"; i=$((i+1)); done; exit 3')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    settings = _settings(tmp_path)
    _fake_cache(settings)
    with pytest.raises(KafkaLocalError) as err:
        kafka_local.start(settings, timeout=20)
    summary, _, tail = str(err.value).partition("\n")
    assert "exited with code 3 before it was ready" in summary and "broker.log" in summary
    lines = tail.splitlines()
    assert lines[-1] == "log line 45" and len(lines) == kafka_local.LOG_TAIL_LINES
    assert "log line 15" not in lines
    assert not isinstance(err.value, PortInUseError)
    assert not (tmp_path / "home" / "broker.pid").exists()  # nothing left to stop


def test_bind_failure_in_log_is_a_port_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_java(tmp_path / "bin", 'echo "java.net.BindException: Address already in use"; exit 1')
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    settings = _settings(tmp_path)
    _fake_cache(settings)
    with pytest.raises(PortInUseError):
        kafka_local.start(settings, timeout=20)


def test_stop_twice_is_harmless_and_says_so(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    for _ in range(2):
        result = kafka_local.stop(settings)
        assert not result.stopped
        assert "nothing to stop" in result.message
    (tmp_path / "home").mkdir()
    assert "nothing to stop" in kafka_local.stop(settings).message


def test_stop_never_signals_a_process_that_is_not_our_broker(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (home / "broker.pid").write_text(f"{bystander.pid}\n")
        result = kafka_local.stop(settings)
        assert not result.stopped and "stale pid file" in result.message
        assert bystander.poll() is None, "a recycled/foreign pid must never be signalled"
        assert not (home / "broker.pid").exists()
        st = kafka_local.status(settings)
        assert not st.running and st.pid is None
    finally:
        bystander.kill()
        bystander.wait()


def test_status_when_nothing_runs(tmp_path: Path) -> None:
    st = kafka_local.status(_settings(tmp_path))
    assert (st.running, st.ready, st.pid, st.bootstrap) == (False, False, None, None)
    assert st.detail.startswith("not running")


def test_server_properties_single_node_kraft(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    props = dict(
        line.split("=", 1)
        for line in kafka_local.render_server_properties(s, tmp_path / "data").splitlines()
        if line and not line.startswith("#")
    )
    assert props["process.roles"] == "broker,controller"
    assert props["node.id"] == "1"
    assert props["controller.quorum.voters"] == f"1@127.0.0.1:{s.kafka_controller_port}"
    assert props["listeners"] == f"PLAINTEXT://127.0.0.1:{s.kafka_port},CONTROLLER://127.0.0.1:{s.kafka_controller_port}"
    assert props["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{s.kafka_port}"
    assert props["auto.create.topics.enable"] == "false"
    assert props["log.dirs"] == str(tmp_path / "data")
    for key in (
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "num.partitions",
    ):
        assert props[key] == "1", key
    assert props["group.initial.rebalance.delay.ms"] == "0"


def test_free_ports_are_distinct_and_bindable() -> None:
    ports = kafka_local.free_ports(3)
    assert len(set(ports)) == 3
    for p in ports:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_resolve_uses_complete_cache_without_maven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", os.devnull)  # no mvn reachable
    settings = _settings(tmp_path)
    _fake_cache(settings)
    libs, seconds = kafka_local.resolve_jars(settings)
    assert seconds == 0.0 and (libs / "fake.jar").is_file()
