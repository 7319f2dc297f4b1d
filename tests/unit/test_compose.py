"""docker-compose.yml stays consistent with the code it deploys.

Why: the compose file repeats facts that live in stream/settings.py (ports, topic
names, partition count) and in stream/kafka_local.py (the broker's single-node
settings). Nobody runs Docker on the dev machine, so drift would only show up for a
user; this test reads the file back and compares.
"""

from __future__ import annotations

import pytest
import yaml

from stream.settings import PROJECT_ROOT, Settings

COMPOSE = PROJECT_ROOT / "docker-compose.yml"
DOCKERFILE = PROJECT_ROOT / "deploy" / "Dockerfile"
DEFAULTS = {name: field.default for name, field in Settings.model_fields.items()}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


def _ports(service: dict) -> list[tuple[str | None, int, int]]:
    """``[(host_ip, host_port, container_port)]`` from short-syntax port strings."""
    out = []
    for spec in service.get("ports", []):
        parts = str(spec).split(":")
        ip = parts[0] if len(parts) == 3 else None
        out.append((ip, int(parts[-2]), int(parts[-1])))
    return out


def test_services_present(compose: dict) -> None:
    assert {"kafka", "topics", "worker"} <= set(compose["services"])


def test_kafka_image_matches_local_broker_version(compose: dict) -> None:
    assert compose["services"]["kafka"]["image"] == f"apache/kafka:{DEFAULTS['kafka_version']}"


def test_kafka_is_single_node_kraft_without_auto_create(compose: dict) -> None:
    env = compose["services"]["kafka"]["environment"]
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert env["KAFKA_NODE_ID"] == "1"
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093"
    assert env["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    for key in (
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR",
        "KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR",
    ):
        assert env[key] == "1", key
    assert env["KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS"] == "0"
    assert "PLAINTEXT://kafka:9092" in env["KAFKA_ADVERTISED_LISTENERS"].split(",")


def test_host_sees_broker_at_default_settings_port(compose: dict) -> None:
    """``localhost:<kafka_port>`` from the host reaches the HOST listener, which
    advertises that same address, so the CLI's default CG_BROKER just works."""
    kafka = compose["services"]["kafka"]
    env = kafka["environment"]
    listeners = dict(item.split("://", 1) for item in env["KAFKA_LISTENERS"].split(","))
    advertised = dict(item.split("://", 1) for item in env["KAFKA_ADVERTISED_LISTENERS"].split(","))
    host_port = int(listeners["HOST"].rsplit(":", 1)[1])
    assert (None, DEFAULTS["kafka_port"], host_port) in _ports(kafka)
    assert advertised["HOST"] == f"localhost:{DEFAULTS['kafka_port']}"
    assert DEFAULTS["broker"].endswith(f":{DEFAULTS['kafka_port']}")  # default CG_BROKER -> that port


@pytest.mark.parametrize("service", ["topics", "worker"])
def test_guard_services_use_settings_topic_names_and_partitions(compose: dict, service: str) -> None:
    env = compose["services"][service]["environment"]
    assert env["CG_BROKER"] == "kafka://kafka:9092"
    assert int(env["CG_PARTITIONS"]) == DEFAULTS["partitions"]
    assert int(env["CG_REPLICATION_FACTOR"]) == DEFAULTS["replication_factor"]
    for name in ("compaction_topic", "artifact_topic", "alerts_topic", "verdicts_topic", "deadletter_topic"):
        assert env[f"CG_{name.upper()}"] == DEFAULTS[name], name
    # and Settings parses what compose passes (strings) into the same values
    parsed = Settings(**{k[3:].lower(): v for k, v in env.items() if k.startswith("CG_")})
    assert parsed.input_topics == (DEFAULTS["compaction_topic"], DEFAULTS["artifact_topic"])
    assert parsed.bootstrap_servers == "kafka:9092"


def test_topics_service_creates_topics_before_worker_starts(compose: dict) -> None:
    topics, worker = compose["services"]["topics"], compose["services"]["worker"]
    assert topics["command"] == ["python", "-m", "stream", "topics", "create"]
    assert topics["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert worker["depends_on"]["topics"]["condition"] == "service_completed_successfully"


def test_worker_web_port_and_bind(compose: dict) -> None:
    worker = compose["services"]["worker"]
    env = worker["environment"]
    assert worker["build"]["dockerfile"] == "deploy/Dockerfile"
    assert worker["command"] == ["python", "-m", "stream", "worker", "-l", "info"]
    assert env["CG_WEB_HOST"] == "0.0.0.0"
    assert int(env["CG_WEB_PORT"]) == DEFAULTS["web_port"]
    # published on the host's loopback only (DESIGN.md §5: web bound to 127.0.0.1)
    assert ("127.0.0.1", DEFAULTS["web_port"], DEFAULTS["web_port"]) in _ports(worker)


def test_dockerfile_runs_the_worker_against_compose_broker() -> None:
    text = DOCKERFILE.read_text()
    assert text.startswith("#") and "FROM python:3.11-slim" in text
    assert "RUN pip install ." in text
    assert "CG_BROKER=kafka://kafka:9092" in text
    assert "CG_WEB_HOST=0.0.0.0" in text
    assert 'CMD ["python", "-m", "stream", "worker", "-l", "info"]' in text
    assert f"EXPOSE {DEFAULTS['web_port']}" in text
