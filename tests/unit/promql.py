"""PromQL checked by real Prometheus tooling: ``promtool`` (Debian's ``prometheus``
package, installed by ``make tools``) parses it, and :pypi:`promql-parser` (a port of
Prometheus's parser) gives the metric names an expression reads."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

#: Grafana's interval variables; anything else (``$job``) only appears inside strings.
GRAFANA_INTERVALS = re.compile(r"\$__(rate_interval|interval|range)\b")


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is not installed: run `make tools` (Debian package `prometheus`)")
    return path


def as_prometheus(expr: str) -> str:
    """A Grafana panel query as Prometheus itself would receive it (intervals filled in)."""
    return GRAFANA_INTERVALS.sub("5m", expr)


def promtool_check_exprs(exprs: dict[str, str]) -> subprocess.CompletedProcess:
    """``promtool check rules`` on one recording rule per expression (name -> expr)."""
    rules = {"groups": [{"name": "check", "rules": [
        {"record": f"check:{i}", "expr": as_prometheus(e), "labels": {"source": name[:200]}}
        for i, (name, e) in enumerate(exprs.items())]}]}
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "exprs.yml"
        f.write_text(yaml.safe_dump(rules, sort_keys=False))
        return subprocess.run([promtool(), "check", "rules", str(f)], capture_output=True, text=True, timeout=60)


def metric_names(expr: str) -> set[str]:
    """Metric names an expression reads, from promql-parser's syntax tree."""
    import promql_parser

    names: set[str] = set()

    def walk(node: object) -> None:
        if type(node).__name__ == "VectorSelector":
            if node.name:
                names.add(node.name)
            return
        for attr in ("lhs", "rhs", "expr", "param", "vector_selector"):
            child = getattr(node, attr, None)
            if child is not None and not isinstance(child, (str, int, float)):
                walk(child)
        for arg in getattr(node, "args", None) or ():
            walk(arg)

    walk(promql_parser.parse(as_prometheus(expr)))
    return names
