"""The Grafana dashboard and the monitoring deploy files stay in line with the worker.

Why: the dashboard's PromQL names metrics by string; a renamed or removed metric in
stream/worker/metrics.py would leave a panel silently empty. Nobody runs Grafana on the dev
machine, so this test reads the JSON and the provisioning/compose files back and
checks every metric name against what the worker's registry exports.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from prometheus_client import CollectorRegistry

from stream.worker.metrics import Metrics
from stream.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.unit

METRICS = Metrics(CollectorRegistry())

DEPLOY = PROJECT_ROOT / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "checkpoint-guard.json"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PROVIDERS = DEPLOY / "grafana" / "provisioning" / "dashboards" / "checkpoint-guard.yml"
PROMETHEUS = DEPLOY / "prometheus" / "prometheus.yml"
COMPOSE = PROJECT_ROOT / "docker-compose.yml"

#: PromQL words that look like identifiers but are not metric names.
PROMQL_WORDS = {
    "sum", "avg", "min", "max", "count", "rate", "irate", "increase", "histogram_quantile",
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
    "offset", "bool", "clamp_min", "clamp_max", "topk", "bottomk", "abs", "delta", "deriv",
    "label_replace", "vector", "scalar", "time", "absent", "inf", "nan",
}


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression reads (label matchers, groupings, ranges,
    strings and Grafana variables removed first)."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)                   # string literals
    e = re.sub(r"\{[^}]*\}", "", e)                              # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                             # range selectors
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", e)
    e = re.sub(r"\$\w+", "", e)                                  # $__rate_interval
    e = re.sub(r"\b\d+(?:\.\d+)?(?:ms|[smhdwy])?\b", "", e)         # numbers, durations
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        following = e[m.end():].lstrip()[:1]
        if word.lower() in PROMQL_WORDS or following == "(":
            continue
        names.add(word)
    return names


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def _queries(dashboard: dict) -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]


def test_metric_name_extraction_skips_functions_labels_and_ranges() -> None:
    expr = ('histogram_quantile(0.95, sum by (le, rule) (rate(x_bucket{job="a", rule=~"o.*"}[$__rate_interval])))'
            " / on (rule) group_left sum without (instance) (y_total offset 5m)")
    assert metric_names(expr) == {"x_bucket", "y_total"}


def test_dashboard_json_parses_with_unique_panel_ids_and_a_query_per_panel(dashboard: dict) -> None:
    assert dashboard["uid"] == "checkpoint-guard" and dashboard["title"]
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert len(panels) >= 10
    for p in panels:
        assert p["targets"], p["title"]
        for t in p["targets"]:
            assert t["expr"].strip() and t["refId"]


def test_every_metric_a_dashboard_query_uses_is_exported_by_the_worker(dashboard: dict) -> None:
    exported = METRICS.sample_names()
    for title, expr in _queries(dashboard):
        names = metric_names(expr)
        assert names, f"{title}: no metric in {expr!r}"
        unknown = names - exported
        assert not unknown, f"panel {title!r} queries {sorted(unknown)}, not exported by stream.metrics"


def test_every_exported_metric_has_a_panel(dashboard: dict) -> None:
    used = set().union(*(metric_names(e) for _, e in _queries(dashboard)))
    families = {fam.name for fam in METRICS.registry.collect()}
    for family in families:
        assert any(name == family or name.startswith(family + "_") for name in used), f"no panel for {family}"


def test_panels_use_the_provisioned_prometheus_datasource(dashboard: dict) -> None:
    ds = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    uids = {d["uid"] for d in ds if d["type"] == "prometheus"}
    for p in dashboard["panels"]:
        if p["type"] != "row":
            assert p["datasource"]["uid"] in uids, p["title"]


def test_prometheus_scrapes_the_worker_metrics_endpoint() -> None:
    config = yaml.safe_load(PROMETHEUS.read_text())
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "checkpoint-guard"]
    assert job.get("metrics_path", "/metrics") == "/metrics"
    web_port = Settings.model_fields["web_port"].default
    assert job["static_configs"][0]["targets"] == [f"worker:{web_port}"]


def test_compose_wires_prometheus_and_grafana_to_the_deploy_files() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert {"kafka", "topics", "worker", "prometheus", "grafana"} <= set(services)
    prom_mounts = services["prometheus"]["volumes"]
    assert "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prom_mounts
    grafana_mounts = services["grafana"]["volumes"]
    assert "./deploy/grafana/provisioning:/etc/grafana/provisioning:ro" in grafana_mounts
    providers = yaml.safe_load(PROVIDERS.read_text())["providers"]
    path = providers[0]["options"]["path"]
    assert f"./deploy/grafana/dashboards:{path}:ro" in grafana_mounts
    url = yaml.safe_load(DATASOURCES.read_text())["datasources"][0]["url"]
    assert url == "http://prometheus:9090"
    assert "127.0.0.1:9090:9090" in services["prometheus"]["ports"]
    # the worker listens on all interfaces inside compose, so Prometheus can reach it
    assert services["worker"]["environment"]["CG_WEB_HOST"] == "0.0.0.0"
