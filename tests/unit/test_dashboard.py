"""The Grafana dashboard and the monitoring deploy files stay in line with the worker.

Why: the dashboard's PromQL names metrics by string; a renamed or removed metric in
stream/worker/metrics.py would leave a panel silently empty, and a syntax error only shows in
Grafana. So every query is parsed by promtool (real Prometheus) and its metric names,
read from a PromQL syntax tree, are checked against what the worker's registry exports.
The dashboard must import into any Grafana: a datasource template variable (no fixed
datasource uid) and job/instance variables.
"""

from __future__ import annotations

import json

import pytest
import yaml

from stream.settings import PROJECT_ROOT
from stream.worker.metrics import Metrics
from tests.unit.promql import metric_names, promtool_check_exprs

pytestmark = pytest.mark.unit

DEPLOY = PROJECT_ROOT / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "checkpoint-guard.json"
DATASOURCES = DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PROVIDERS = DEPLOY / "grafana" / "provisioning" / "dashboards" / "checkpoint-guard.yml"
PROMETHEUS = DEPLOY / "prometheus" / "prometheus.yml"
COMPOSE = PROJECT_ROOT / "docker-compose.yml"

#: Series Prometheus adds itself.
PROMETHEUS_SERIES = {"up"}


@pytest.fixture(scope="module")
def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text(encoding="utf-8"))


def _queries(dashboard: dict) -> list[tuple[str, str]]:
    return [(p["title"], t["expr"]) for p in dashboard["panels"] for t in p.get("targets", [])]


def test_metric_names_come_from_the_syntax_tree() -> None:
    expr = ('histogram_quantile(0.95, sum by (le, rule) (rate(x_bucket{job="a", rule=~"o.*"}[$__rate_interval])))'
            " / on (rule) group_left sum without (instance) (y_total offset 5m)")
    assert metric_names(expr) == {"x_bucket", "y_total"}


def test_every_dashboard_query_is_valid_promql_for_promtool(dashboard: dict) -> None:
    exprs = {f"{i}: {title}": expr for i, (title, expr) in enumerate(_queries(dashboard))}
    assert len(exprs) >= 25
    checked = promtool_check_exprs(exprs)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in checked.stdout


def test_promtool_rejects_a_broken_query() -> None:
    checked = promtool_check_exprs({"broken": "sum by (le (checkpoint_guard_waiting_events)"})
    assert checked.returncode != 0 and "parse error" in checked.stdout + checked.stderr


def test_the_dashboard_imports_anywhere_with_datasource_job_and_instance_variables(dashboard: dict) -> None:
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    for name in ("job", "instance"):
        assert variables[name]["type"] == "query" and variables[name]["includeAll"] and variables[name]["multi"]
        assert variables[name]["datasource"]["uid"] == "${datasource}"
    assert "checkpoint_guard_build_info" in variables["instance"]["definition"]
    for p in dashboard["panels"]:
        if p["type"] == "row":
            continue
        assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
        for t in p["targets"]:
            assert t["datasource"]["uid"] == "${datasource}", p["title"]
            assert 'job=~"$job"' in t["expr"] and 'instance=~"$instance"' in t["expr"], (p["title"], t["expr"])
    assert "__inputs" not in dashboard  # nothing to map on import


def test_the_dashboard_has_an_up_and_workers_panel(dashboard: dict) -> None:
    (panel,) = [p for p in dashboard["panels"] if p["title"] == "Workers up / ready"]
    assert {"up", "checkpoint_guard_ready"} <= set().union(*(metric_names(t["expr"]) for t in panel["targets"]))


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
    exported = Metrics().sample_names() | PROMETHEUS_SERIES
    for title, expr in _queries(dashboard):
        names = metric_names(expr)
        assert names, f"{title}: no metric in {expr!r}"
        unknown = names - exported
        assert not unknown, f"panel {title!r} queries {sorted(unknown)}, not exported by stream.worker.metrics"


def test_every_exported_metric_has_a_panel(dashboard: dict) -> None:
    used = set().union(*(metric_names(e) for _, e in _queries(dashboard)))
    families = {fam.name for fam in Metrics().registry.collect() if fam.name.startswith("checkpoint_guard_")}
    for family in families:
        assert any(name == family or name.startswith(family + "_") for name in used), f"no panel for {family}"


def test_the_provisioned_datasource_is_a_prometheus_one_the_variable_can_pick() -> None:
    ds = yaml.safe_load(DATASOURCES.read_text())["datasources"]
    assert [d["type"] for d in ds] == ["prometheus"] and ds[0]["isDefault"]


def test_compose_wires_prometheus_and_grafana_to_the_deploy_files() -> None:
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert {"kafka", "topics", "worker", "prometheus", "grafana"} <= set(services)
    prom_mounts = services["prometheus"]["volumes"]
    assert "./deploy/prometheus/prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prom_mounts
    assert "./deploy/prometheus/rules.yml:/etc/prometheus/rules.yml:ro" in prom_mounts
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
