"""The alert rules (deploy/prometheus/rules.yml) are valid, unit-tested and runbooked.

promtool (real Prometheus, Debian's ``prometheus`` package via ``make tools``) checks
the rules and runs their unit tests (deploy/prometheus/rules.test.yml); every rule must
have a test there, a runbook section in docs/OPERATIONS.md, and read only metrics the
worker exports (or Prometheus's own ``up``).
"""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml

from stream.worker.metrics import Metrics
from stream.settings import PROJECT_ROOT
from tests.unit.promql import metric_names, promtool
from tests.unit.test_dashboard import PROMETHEUS_SERIES

pytestmark = pytest.mark.unit

RULES = PROJECT_ROOT / "deploy" / "prometheus" / "rules.yml"
RULE_TESTS = PROJECT_ROOT / "deploy" / "prometheus" / "rules.test.yml"
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


def test_every_rule_has_a_firing_unit_test() -> None:
    tested = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    firing = {case["alertname"] for t in tested for case in t["alert_rule_test"] if case.get("exp_alerts")}
    assert {r["alert"] for r in alert_rules()} == firing


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
