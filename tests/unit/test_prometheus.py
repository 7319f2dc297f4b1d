"""The alert rules (deploy/prometheus/rules.yml), the Prometheus config and the Alertmanager's.

promtool (real Prometheus, Debian's ``prometheus`` package via ``make tools``) checks
the config and the rules and runs their unit tests (deploy/prometheus/rules.test.yml); every
rule must have a firing and a quiet test there, a summary, a description and a runbook
section in docs/OPERATIONS.md, a ``for:`` (a page waits before it wakes anyone), the job
selector in every selector, and read only metrics the worker exports (or Prometheus's own
``up``). rules.yml is generated from the chart's files/alert-rules.yml (deploy/generate.py),
so the chart's PrometheusRule (tests/unit/test_helm.py) and the file agree. amtool (Debian's
``prometheus-alertmanager``) checks the compose Alertmanager's config and its routes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest
import yaml

from stream.settings import PROJECT_ROOT
from stream.worker.metrics import Metrics
from tests.unit.promql import metric_names, promtool
from tests.unit.test_dashboard import PROMETHEUS_SERIES

pytestmark = pytest.mark.unit

RULES = PROJECT_ROOT / "deploy" / "prometheus" / "rules.yml"
RULE_TESTS = PROJECT_ROOT / "deploy" / "prometheus" / "rules.test.yml"
CONFIG = PROJECT_ROOT / "deploy" / "prometheus" / "prometheus.yml"
ALERTMANAGER = PROJECT_ROOT / "deploy" / "alertmanager" / "alertmanager.yml"
OPERATIONS = PROJECT_ROOT / "docs" / "OPERATIONS.md"
RUNBOOKS = "https://github.com/checkpoint-guard/checkpoint-guard/blob/main/docs/OPERATIONS.md#"


def alert_rules() -> list[dict]:
    return [r for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"] if "alert" in r]


def github_anchor(heading: str) -> str:
    """The fragment GitHub gives a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_promtool_checks_the_rules() -> None:
    done = subprocess.run([promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in done.stdout


def test_promtool_unit_tests_of_the_rules_pass() -> None:
    done = subprocess.run([promtool(), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_promtool_test_fails_when_a_rule_changes(tmp_path) -> None:
    (tmp_path / "rules.yml").write_text(RULES.read_text().replace("for: 2m", "for: 9m", 1))
    (tmp_path / "rules.test.yml").write_text(RULE_TESTS.read_text())
    done = subprocess.run([promtool(), "test", "rules", str(tmp_path / "rules.test.yml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "CheckpointGuardWorkerDown" in done.stdout + done.stderr


def test_every_rule_has_a_firing_and_a_quiet_unit_test() -> None:
    tested = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    cases = [case for t in tested for case in t["alert_rule_test"]]
    firing = {case["alertname"] for case in cases if case.get("exp_alerts")}
    quiet = {case["alertname"] for case in cases if case.get("exp_alerts") == []}
    names = {r["alert"] for r in alert_rules()}
    assert names == firing, sorted(names ^ firing)
    assert names == quiet, sorted(names ^ quiet)


def test_every_rule_says_what_and_why_and_every_one_waits_before_it_fires() -> None:
    for rule in alert_rules():
        notes = rule["annotations"]
        assert set(notes) == {"summary", "description", "runbook_url"}, rule["alert"]
        assert len(notes["description"]) > len(notes["summary"]) > 20, rule["alert"]
        assert re.fullmatch(r"[0-9]+[mh]", str(rule.get("for", ""))), f"{rule['alert']}: no for:"
        if rule["labels"]["severity"] == "critical":  # a page: never on a single evaluation
            assert rule["for"] != "0m", rule["alert"]


def test_every_series_a_rule_reads_is_picked_by_the_job_selector() -> None:
    from deploy.generate import PLACEHOLDER, RULES_SOURCE

    source = yaml.safe_load(RULES_SOURCE.read_text())
    for rule in source["groups"][0]["rules"]:
        for name in re.findall(r"\b(checkpoint_guard_\w+|up)\b(.?)", rule["expr"]):
            assert name[1] == "{", (rule["alert"], name[0])
        assert rule["expr"].count("{") == rule["expr"].count("{" + PLACEHOLDER), rule["alert"]


def test_the_rules_file_is_the_charts_rules_with_the_default_selector() -> None:
    from deploy.generate import DEFAULT_SELECTOR, main, render_rules

    assert RULES.read_text() == render_rules(DEFAULT_SELECTOR)
    assert main(["--check"]) == 0  # every generated deploy file is up to date


def test_a_custom_job_selector_renders_rules_promtool_accepts(tmp_path) -> None:
    out = tmp_path / "rules.yml"
    done = subprocess.run([sys.executable, str(PROJECT_ROOT / "deploy" / "generate.py"), "--selector",
                           'job="guard", namespace="prod"', "--rules-out", str(out)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert 'up{job="guard", namespace="prod"} == 0' in text and 'job=~".*checkpoint-guard.*"}' not in text
    checked = subprocess.run([promtool(), "check", "rules", str(out)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_promtool_checks_the_prometheus_config_with_its_rules_and_alertmanager() -> None:
    done = subprocess.run([promtool(), "check", "config", str(CONFIG)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 1 rule files found" in done.stdout and f"SUCCESS: {len(alert_rules())} rules found" in done.stdout
    config = yaml.safe_load(CONFIG.read_text())
    assert config["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == ["alertmanager:9093"]


def amtool() -> str:
    path = shutil.which("amtool")
    if path is None:
        pytest.fail("amtool is not installed: run `make tools` (Debian package `prometheus-alertmanager`)")
    return path


def test_amtool_checks_the_alertmanager_config() -> None:
    done = subprocess.run([amtool(), "check-config", str(ALERTMANAGER)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("severity, receiver", [("critical", "page"), ("warning", "ticket"), ("info", "ticket")])
def test_the_alertmanager_routes_pages_and_tickets_by_severity(severity, receiver) -> None:
    done = subprocess.run([amtool(), "config", "routes", "test", f"--config.file={ALERTMANAGER}",
                           f"severity={severity}", "alertname=CheckpointGuardOrphanedReferents"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.split() == [receiver]


def test_every_rule_links_a_runbook_section_of_operations_md() -> None:
    anchors = {github_anchor(m.group(1)) for m in re.finditer(r"^#{2,4} (.+)$", OPERATIONS.read_text(), re.M)}
    for rule in alert_rules():
        url = rule["annotations"]["runbook_url"]
        assert url.startswith(RUNBOOKS), rule["alert"]
        assert url.removeprefix(RUNBOOKS) in anchors, f"{rule['alert']}: no section {url} in docs/OPERATIONS.md"
        assert rule["labels"]["severity"] in ("critical", "warning", "info"), rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]


def test_rules_read_only_metrics_the_worker_exports() -> None:
    exported = Metrics().sample_names() | PROMETHEUS_SERIES
    for rule in alert_rules():
        names = metric_names(rule["expr"])
        assert names and names <= exported, (rule["alert"], sorted(names - exported))
