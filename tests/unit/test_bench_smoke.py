"""Smoke test of the pure benchmark parts (no broker): they run and write their reports.

Parts 1 (engine vs naive validator) and 6 (cost growth) of ``bench/run_all.py``, at toy
sizes, in process — a couple of seconds. The Kafka parts are exercised by
``python bench/run_all.py --quick`` (minutes), not here.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

import pytest

from bench import bench_engine, bench_scaling, bench_shapes, flamegraph
from bench.bench_scaleout import ideal_speedup
from bench.common import command_line

pytestmark = pytest.mark.unit


def test_engine_vs_naive_writes_its_section(tmp_path: Path) -> None:
    out = tmp_path / "engine.md"
    assert bench_engine.main(["--sizes", "300", "--runs", "1", "--naive-budget", "5", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| 300 |" in text and "engine/naive" in text
    assert "Command: `python bench/bench_engine.py --sizes 300 --runs 1 --naive-budget 5`" in text
    assert "at 300 artifacts per context" in Path(f"{out}.summary").read_text()


def test_cost_growth_writes_both_tables(tmp_path: Path) -> None:
    out = tmp_path / "scaling.md"
    args = ["--dependents", "1,50", "--artifacts", "300,1200", "--reps", "5", "--mix", "50", "--out", str(out)]
    assert bench_scaling.main(args) == 0
    text = out.read_text()
    assert "**A. Fan-in**" in text and "| 50 |" in text
    assert "**B. Number of artifacts" in text and "| 1,200 |" in text
    # The hot artifact's eviction opens one alert per dependent (D constant across repetitions).
    row = next(line for line in text.splitlines() if line.startswith("| 50 |"))
    assert "(50)" in row


def test_adversarial_shapes_end_alike_in_both_orders_and_write_the_table(tmp_path: Path) -> None:
    out = tmp_path / "shapes.md"
    assert bench_shapes.main(["--scale", "0.01", "--out", str(out)]) == 0
    text = out.read_text()
    for shape in ("chain", "wide root", "hot artifact", "prohibition under a deep chain"):
        assert f"| {shape} |" in text
    assert "worst hostile/friendly" in Path(f"{out}.summary").read_text()


def test_fan_in_keeps_the_dependent_count_constant() -> None:
    r = bench_scaling.fan_in(3, reps=4)
    assert r["alerts_evict"] == 3 and r["alerts_admit"] == 3


def test_flamegraph_from_folded_stacks(tmp_path: Path) -> None:
    folded = tmp_path / "p.folded"
    folded.write_text("main (a.py:1);work (stream/agents.py:2) 3\nmain (a.py:1);idle (b.py:3) 1\n"
                      "main (a.py:1); (\x01:8) 1\n")
    svg = tmp_path / "p.svg"
    assert flamegraph.folded_to_svg(folded, svg, "t") == 5
    text = svg.read_text(encoding="utf-8")
    ElementTree.fromstring(text)  # well-formed XML
    assert text.startswith("<svg") and "work (stream/agents.py:2) — 3 samples (60.0%)" in text


def test_helpers() -> None:
    assert ideal_speedup([1, 1, 1, 1]) == 2.0
    assert ideal_speedup([3, 1, 1, 1]) == pytest.approx(6 / 4)
    assert command_line("bench/x.py", ["--quick", "--out", "/tmp/a", "--bootstrap", "h:1", "--phases", ""]) == \
        "python bench/x.py --quick --phases ''"


def test_state_report_extrapolates_when_the_budget_stopped_the_fill() -> None:
    import argparse

    from bench import bench_state

    args = argparse.Namespace(title="5. State", worker_loglevel="warn", contexts=16, leaf_every=16,
                              artifacts=1_000_000, fill_budget=900.0, lookahead=10000)
    mb = 1 << 20
    res = {
        "cold": {"ready": 8.0, "rss": 80 * mb, "disk": 1 * mb},
        "fill": {"events": 106_250, "artifacts": 100_000, "wall": 500.0, "rate": 212.5, "first_q": 250.0,
                 "last_q": 200.0, "budget_hit": True},
        "filled": {"rss": 180 * mb, "hwm": 200 * mb, "disk": 101 * mb, "apparent": 100 * mb},
        "changelog_records": 400_000, "broker_disk": None, "stop": 3.0,
        "kept": {"ready": 7.0, "rss": 90 * mb, "hwm": 90 * mb, "disk": 101 * mb, "stop": 2.0, "partitions": [0]},
        "rebuilt": {"ready": 28.0, "rss": 150 * mb, "hwm": 150 * mb, "disk": 101 * mb, "stop": 2.0,
                    "partitions": [0]},
    }
    text = bench_state.render(["--quick"], args, "4.1.1", res, [], 0.0, "0 0 0")
    assert "**extrapolated** to 1,000,000 (linear)" in text
    assert "| worker RSS, idle after the fill | 180.0 MiB (empty: 80.0 MiB) | 1,080.0 MiB |" in text
    assert "| restart → ready, RocksDB kept | 7.0 s (cold start on empty state: 8.0 s) | n/a |" in text
    assert "| restart → ready, tables rebuilt from the changelog (fresh data dir) | 28.0 s | 208.0 s |" in text
