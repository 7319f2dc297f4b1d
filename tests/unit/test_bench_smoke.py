"""Smoke test of the pure benchmark parts (no broker): they run and write their reports.

Parts 1 (engine vs naive validator) and 6 (cost growth) of ``bench/run_all.py``, at toy
sizes, in process — a couple of seconds. The Kafka parts are exercised by
``python -m bench.run_all --quick`` (minutes), not here.
"""

from __future__ import annotations

import json
import subprocess
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
    assert "Command: `python -m bench.bench_engine --sizes 300 --runs 1 --naive-budget 5`" in text
    assert "at 300 artifacts per context" in Path(f"{out}.summary").read_text()


def test_cost_growth_writes_both_tables(tmp_path: Path) -> None:
    out = tmp_path / "scaling.md"
    args = ["--dependents", "1,50", "--artifacts", "300,1200", "--reps", "5", "--mix", "50", "--shapes-scale", "0.01",
            "--out", str(out)]
    assert bench_scaling.main(args) == 0
    text = out.read_text()
    assert "**A. Fan-in**" in text and "| 50 |" in text
    assert "**B. Number of artifacts" in text and "| 1,200 |" in text
    assert (
        "**C. Shapes at two sizes**" in text
        and "| chain top-down, bottom prohibition nobody carries | 20 → 200 |" in text
    )
    assert "worst hostile/friendly" in Path(f"{out}.summary").read_text()
    # The hot artifact's eviction opens one alert per dependent (D constant across repetitions).
    row = next(line for line in text.splitlines() if line.startswith("| 50 |"))
    assert "(50)" in row


def test_adversarial_shapes_end_alike_in_both_orders_and_write_the_table(tmp_path: Path) -> None:
    out = tmp_path / "shapes.md"
    assert bench_shapes.main(["--scale", "0.01", "--out", str(out)]) == 0
    text = out.read_text()
    for shape in ("chain", "wide root", "hot artifact", "prohibition under a deep chain"):
        assert f"| {shape} |" in text
    assert "| orphaned leaves under a root (least of 3) | 125 / 250 / 500 |" in text
    # the versions of one node pass the ledger bound (scaled with the sizes) and are dead-lettered
    assert '"ledger full" | 100 of 200 versions (expected 100) | yes |' in text
    assert "worst hostile/friendly" in Path(f"{out}.summary").read_text()


def test_fan_in_keeps_the_dependent_count_constant() -> None:
    r = bench_scaling.fan_in(3, reps=4)
    assert r["alerts_evict"] == 3 and r["alerts_admit"] == 3


def test_flamegraph_from_folded_stacks(tmp_path: Path) -> None:
    folded = tmp_path / "p.folded"
    folded.write_text("main (a.py:1);work (stream/worker/runtime.py:2) 3\nmain (a.py:1);idle (b.py:3) 1\n"
                      "main (a.py:1); (\x01:8) 1\n")
    svg = tmp_path / "p.svg"
    assert flamegraph.folded_to_svg(folded, svg, "t") == 5
    text = svg.read_text(encoding="utf-8")
    ElementTree.fromstring(text)  # well-formed XML
    assert text.startswith("<svg") and "work (stream/worker/runtime.py:2) — 3 samples (60.0%)" in text


def test_helpers() -> None:
    assert ideal_speedup([1, 1, 1, 1]) == 2.0
    assert ideal_speedup([3, 1, 1, 1]) == pytest.approx(6 / 4)
    assert command_line("bench/x.py", ["--quick", "--out", "/tmp/a", "--bootstrap", "h:1", "--phases", ""]) == \
        "python -m bench.x --quick --phases ''"


def test_state_report_gives_fill_rate_state_log_and_both_restarts() -> None:
    import argparse

    from bench import bench_state

    args = argparse.Namespace(title="5. State", worker_loglevel="warn", contexts=16, leaf_every=16)
    mb = 1 << 20
    res = {
        "produce": {"events": 1_062_500, "artifacts": 1_000_000, "seconds": 30.0},
        "fill": {"events": 1_062_000, "seconds": 150.0, "rate": 7080.0, "cpu_us": 120.0, "first_q": 7500.0,
                 "last_q": 6900.0, "durable": 151.0},
        "filled": {"rss": 300 * mb, "hwm": 320 * mb, "disk": 200 * mb, "apparent": 210 * mb},
        "log_records": 620, "broker_disk": 250 * mb, "stop": 2.0,
        "kept": {"ready": 3.0, "rss": 90 * mb, "hwm": 90 * mb, "disk": 200 * mb, "stop": 1.0, "partitions": [0],
                 "entries": 0, "slowest": 0.1, "restored": []},
        "rebuilt": {"ready": 21.5, "rss": 150 * mb, "hwm": 150 * mb, "disk": 200 * mb, "stop": 1.0,
                    "partitions": [0], "entries": 2_125_000, "slowest": 17.0, "restored": []},
    }
    text = bench_state.render(["--quick"], args, "4.1.1", res, [], 0.0, "0 0 0")
    assert "**7,080 events/s** (120 CPU µs/event" in text
    assert "| state log `<app_id>-state`: records (all partitions) | 620 |" in text
    assert "| state log on the broker's disk | 250.0 MiB |" in text
    assert "| restart, data dir kept: start → `/readyz` 200 | **3.0 s** |" in text
    assert "| **restore, empty data dir** (goal ≤ 60 s): start → `/readyz` 200 | **21.5 s** |" in text
    assert "state-log entries replayed (slowest partition) | 2,125,000 (17.0 s) |" in text


def test_state_restore_lines_are_parsed_from_the_worker_log() -> None:
    from bench.bench_state import RESTORED

    line = ("[2026-12-01 10:52:06,123] [42] [INFO] partition 3: state restored (125 log entries) in 0.31s; "
            "generation 2, input offsets {}")
    assert RESTORED.findall(line) == [("3", "125", "0.31")]


class _KeyedState:
    """A Quix-like per-key ``State`` over one dict: keys and values stored as JSON text."""

    def __init__(self, store: dict[bytes, bytes], prefix: bytes) -> None:
        self.store, self.prefix = store, prefix

    def _k(self, key: object) -> bytes:
        return self.prefix + json.dumps(key).encode()

    def get(self, key: object, default: object = None) -> object:
        raw = self.store.get(self._k(key))
        return default if raw is None else json.loads(raw)

    def set(self, key: object, value: object) -> None:
        self.store[self._k(key)] = json.dumps(value).encode()

    def delete(self, key: object) -> None:
        self.store.pop(self._k(key), None)

    def exists(self, key: object) -> bool:
        return self._k(key) in self.store


def test_engine_on_the_quix_app_state_emits_the_replay_alerts() -> None:
    from types import SimpleNamespace

    from bench.bench_worker import synthetic_events
    from bench.quix_app import ALERT, STATUS, make_processor
    from stream.adapters import encode_event
    from stream.domain.engine import Engine
    from stream.offline.replay import replay_lines
    from stream.wire import configured_limits

    events = synthetic_events(400)
    lines = [encode_event(e).encode() for e in events]
    offline = replay_lines(lines)
    where = SimpleNamespace(topic=None, partition=None, offset=None)
    process = make_processor(Engine(), configured_limits(), lambda: where)
    store: dict[bytes, bytes] = {}
    alerts, statuses = [], []
    for event, line in zip(events, lines):
        key = event["context_id"].encode()
        for kind, _key, payload in process(line, key, 0, None, _KeyedState(store, key + b"|")):
            (alerts if kind == ALERT else statuses if kind == STATUS else []).append(json.loads(payload))
    assert offline.alerts and [a["alert_id"] for a in alerts] == [a["alert_id"] for a in offline.alerts]
    assert statuses == offline.statuses
    # Every key the engine wrote sits under its own context's prefix (Quix's per-key state).
    assert {k.split(b"|", 1)[0] for k in store} == {e["context_id"].encode() for e in events}


def test_a_bad_message_becomes_a_dead_letter_row_in_the_quix_app() -> None:
    from types import SimpleNamespace

    from bench.quix_app import DEAD, make_processor
    from stream.domain.engine import Engine
    from stream.wire import configured_limits

    where = SimpleNamespace(topic="in", partition=2, offset=7)
    rows = make_processor(Engine(), configured_limits(), lambda: where)(b"{not json", b"c1", 0, None,
                                                                        _KeyedState({}, b"c1|"))
    assert len(rows) == 1 and rows[0][0] == DEAD
    record = json.loads(rows[0][2])
    assert (record["topic"], record["partition"], record["offset"]) == ("in", 2, 7) and record["reason"]


def test_the_hook_bench_and_the_real_log_check_run_and_write_their_sections(tmp_path: Path) -> None:
    from bench import bench_hook, hook_check

    out = tmp_path / "hook.md"
    assert bench_hook.main(["--sizes", "2000", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| all |" in text and "first call, no state" in text and "live = batch yes" in text
    fixture = (
        Path(__file__).resolve().parents[1]
        / "fixtures"
        / "compaction_logs"
        / "claude-code"
        / "cc-dropped-prohibition.jsonl"
    )
    out = tmp_path / "check.md"
    assert hook_check.main([str(fixture), "--out", str(out)]) == 0
    assert "1 transcripts, 1 compactions, 1 with a dropped prohibition: every check passed" in out.read_text()


def _result(part: int, summary: str) -> dict:
    from bench.run_all import TITLES

    return {"part": part, "command": f"python bench/p{part}.py", "code": 0, "seconds": 60.0, "summary": summary,
            "text": f"## {TITLES[part]}\n\n{summary} section\n"}


def test_update_rewrites_only_the_parts_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from bench import run_all
    from bench.run_all import main, render, update

    args = argparse.Namespace(quick=False)
    first = render(args, [], [_result(1, "old 1"), _result(6, "old 6"), _result(8, "old 8")], "4.1.1", "1 1 1",
                   "2026-12-01 13:27 UTC", 600.0)
    second = update(first, args, ["--update", "--parts", "6,9"], [_result(6, "new 6"), _result(9, "new 9")],
                    "4.1.1", "2 2 2", "2026-12-02 05:30 UTC", 60.0)
    lines = second.splitlines()
    rows = [line for line in lines if line.startswith("| ") and "min |" in line]
    assert [row.split(" | ")[1] for row in rows] == ["old 1", "new 6", "old 8", "new 9"]
    sections = [line for line in lines if line.startswith("## ")]
    assert [s.split(".")[0] for s in sections] == ["## 1", "## 6", "## 8", "## 9"]
    assert "old 1 section" in second and "old 8 section" in second and "new 6 section" in second
    assert "old 6" not in second and "new 9 section" in second
    assert "- Date: 2026-12-01 13:27 UTC" in second
    assert any(line.startswith("- Parts 6, 9 re-run 2026-12-02 05:30 UTC by `python -m bench.run_all --update")
               for line in lines)
    # a later update of part 6 takes it out of the earlier re-run line
    third = update(second, args, ["--update", "--parts", "6"], [_result(6, "newer 6")], "4.1.1", "3 3 3",
                   "2026-12-02 06:00 UTC", 60.0)
    assert "- Part 9 re-run 2026-12-02 05:30 UTC" in third and "- Part 6 re-run 2026-12-02 06:00 UTC" in third
    assert "new 6" not in third and third.count("## 6.") == 1 and "old 8 section" in third
    # through the command line (each part's run stood in for): part 6 re-run, parts 1 and 8 kept
    monkeypatch.setattr(run_all, "run_part", lambda part, *a, **k: _result(part, "cli 6"))
    out = tmp_path / "BENCHMARKS.md"
    out.write_text(first)
    assert main(["--update", "--parts", "6", "--out", str(out)]) == 0
    text = out.read_text()
    assert "old 8 section" in text and "old 1 section" in text and "old 6" not in text and "cli 6 section" in text
    assert main(["--parts", "6", "--out", str(out)]) == 0  # without --update: a report of part 6 alone
    assert "old 8" not in out.read_text()


def test_the_shapes_replay_writes_what_the_replay_command_writes(tmp_path: Path) -> None:
    import subprocess
    import sys

    hostile, _, tail = bench_shapes.orphaned_leaves(30)
    lines = bench_shapes._lines(hostile + tail)
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    bench_out, cli_out = tmp_path / "bench.jsonl", tmp_path / "cli.jsonl"
    row = bench_shapes._replay(lines, sink_path=str(bench_out))
    subprocess.run([sys.executable, "-m", "stream", "replay", "--status", "--out", str(cli_out), str(events)],
                   check=True, capture_output=True, cwd=Path(__file__).resolve().parents[2])
    assert bench_out.read_bytes() == cli_out.read_bytes()
    assert row["records"] == len(cli_out.read_bytes().splitlines()) > 30


def test_the_real_log_check_without_the_dev_logs_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from bench import hook_check

    monkeypatch.setattr(hook_check, "DEFAULT", tmp_path / "shared" / "real-logs" / "entireio-cli-claude-code")
    monkeypatch.setattr(hook_check.sys, "argv", ["hook_check"])
    assert hook_check.main([str(hook_check.DEFAULT)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "labelled DEV logs" in err[0] and "../shared/real-logs" in err[0]
    assert hook_check.main([str(tmp_path / "nosuch.jsonl")]) == 2
    assert "no such transcript" in capsys.readouterr().err


def test_the_in_process_bench_runs_both_modes_and_compares_them(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import bench_plan

    assert bench_plan.main(["--events", "600", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "| pure (pure Python (CG_NATIVE=0)) |" in out and "pure / native:" in out
    run = bench_plan.one_run(600)  # in this process: every phase took time
    assert run["plan"] > 0 and run["metrics"] > 0 and run["commit"] > 0 and run["total"] == pytest.approx(
        run["plan"] + run["metrics"] + run["commit"])
    with pytest.raises(SystemExit) as refused:
        bench_plan.main(["--modes", "fast"])
    assert refused.value.code == 2 and "--modes: native and/or pure" in capsys.readouterr().err


def test_ab_alternates_the_workers_and_reports_each_rounds_ratio(tmp_path: Path, monkeypatch) -> None:
    from bench import bench_ab

    calls: list[tuple[int, bool]] = []

    def fake_run(events: int, tree: Path | None, *_a) -> dict:
        calls.append((events, tree is None))
        assert tree is None or (tree / "stream" / "__init__.py").exists()  # a real checkout of the baseline
        return {"rate": 2000.0, "cpu_us": 200.0} if tree is not None else {"rate": 4200.0, "cpu_us": 95.0}

    built: list[Path] = []
    monkeypatch.setattr(bench_ab, "one_run", fake_run)
    monkeypatch.setattr(bench_ab, "build_native", lambda tree: built.append(tree) or "compiled (stand-in)")
    out = tmp_path / "ab.md"
    assert bench_ab.main(["--baseline", "HEAD", "--events", "100,300", "--rounds", "2", "--out", str(out)]) == 0
    assert len(built) == 1 and built[0].name == "baseline"  # the baseline compiled once, before its runs
    # ABBA: the baseline first in round 1, this tree first in round 2, at each size
    assert calls == [(100, False), (100, True), (300, False), (300, True),
                     (100, True), (100, False), (300, True), (300, False)]
    text = out.read_text()
    assert "a git worktree), compiled (stand-in); this tree" in text
    assert "| 300 | 2 | 2,000 | 4,200 | 2.10x | 200 | 95 | 2.11x |" in text
    assert "| 100 | **median** | | | **2.10x** |" in text
    assert "300 events: 2.10x events/s" in Path(f"{out}.summary").read_text()
    listed = subprocess.run(["git", "-C", str(bench_ab.REPO), "worktree", "list"], capture_output=True, text=True)
    assert "cg-ab-" not in listed.stdout  # the baseline's worktree is removed


def test_ab_compiles_no_baseline_that_has_no_compiled_modules(tmp_path: Path) -> None:
    from bench import bench_ab

    (tmp_path / "stream").mkdir()
    assert bench_ab.build_native(tmp_path) == "no compiled modules at that commit"


def test_ab_says_in_one_line_when_the_baseline_cannot_be_checked_out(tmp_path: Path, capsys) -> None:
    from bench import bench_ab

    assert bench_ab.main(["--baseline", "no-such-rev-0000", "--out", str(tmp_path / "ab.md")]) == 2
    err = capsys.readouterr()
    assert "cannot check out the baseline 'no-such-rev-0000'" in err.out + err.err


def test_ab_reports_a_failed_run_and_exits_1(tmp_path: Path, monkeypatch) -> None:
    from bench import bench_ab

    def fake_run(events: int, tree: Path | None, *_a) -> dict:
        return {"error": "worker exited"} if tree is None else {"rate": 2000.4, "cpu_us": 200.0}

    monkeypatch.setattr(bench_ab, "one_run", fake_run)
    monkeypatch.setattr(bench_ab, "build_native", lambda tree: "compiled (stand-in)")
    out = tmp_path / "ab.md"
    assert bench_ab.main(["--baseline", "HEAD", "--events", "100", "--rounds", "1", "--out", str(out)]) == 1
    text = out.read_text()
    assert "| 100 | 1 | 2,000 | failed | — |" in text
    assert "Failed measurements:\n\n- round 1, 100 events, this: worker exited" in text
