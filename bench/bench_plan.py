"""The worker's per-event CPU in process, compiled hot modules against plain Python.

``python -m bench.bench_plan [--events N] [--runs R] [--modes native,pure]``: the synthetic
stream of part 2 (bench_worker.synthetic_events) through what the worker runs per event —
``plan()`` (decode, engine on a RocksDB-backed partition state, outputs), ``Metrics.record``,
and every 2,000 events a commit's take (dirty writes, state-log records) and store write — with
the worker's GC settings, no Kafka. Each run is a fresh subprocess; the modes alternate
(``native``: the build in stream/_native/ if it matches, ``pure``: CG_NATIVE=0). Prints µs per
event per mode and phase, and the ratios of the medians and of the minimums. README "Compiled hot modules".
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMIT_EVERY = 2_000


@dataclass(frozen=True, slots=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes
    timestamp: int


def one_run(events: int) -> dict[str, float | str]:
    """µs per event of each phase over ``events`` synthetic events (in this process)."""
    from bench.bench_worker import synthetic_events
    from stream import native
    from stream.adapters import encode_event
    from stream.domain.engine import Engine
    from stream.settings import Settings
    from stream.wire import Limits
    from stream.worker import statelog
    from stream.worker.durability import Partition
    from stream.worker.handler import plan
    from stream.worker.metrics import Metrics
    from stream.worker.outputs import Outputs
    from stream.worker.runtime import GC_THRESHOLDS
    from stream.worker.store import PartitionState, PartitionStore

    settings = Settings(app_id="bench-plan", partitions=1, metrics_enabled=False)
    stream = synthetic_events(events, contexts=max(32, round(events * 32 / 3000)))
    offsets = {"compaction-events": 0, "artifact-events": 0}
    messages = []
    for i, e in enumerate(stream):
        topic = "compaction-events" if e["type"] == "checkpoint" else "artifact-events"
        messages.append(Message(topic, 0, offsets[topic], e["context_id"].encode(), encode_event(e).encode(), i))
        offsets[topic] += 1
    with tempfile.TemporaryDirectory() as tmp:
        store = PartitionStore(Path(tmp) / "p00000")
        part = Partition(0, PartitionState(store, settings.state_cache_entries), store)
        engine, outputs, limits = Engine(settings.seq_gap_limit), Outputs(settings), Limits()
        metrics = Metrics(output_topics=settings.output_topics)
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)  # the worker's
        spent = {"plan": 0.0, "metrics": 0.0, "commit": 0.0}
        clock = time.process_time
        n = 0
        for start in range(0, len(messages), 500):  # batches of 500, as the consumer hands them over
            t0 = clock()
            result = plan(engine, part, messages[start:start + 500], outputs, limits)
            t1 = clock()
            for _, event, out in result.observed:
                metrics.record(event, out, received=0.0, sent=0.0)
            t2 = clock()
            spent["plan"] += t1 - t0
            spent["metrics"] += t2 - t1
            n += 500
            if n % COMMIT_EVERY == 0 or start + 500 >= len(messages):
                outputs.take()
                entries = part.state.take_dirty()
                statelog.commit_records(1, 0, part.covered(), entries, settings.state_chunk_bytes)
                store.write(entries, {"offsets": part.covered()})
                part.state.stored()
                spent["commit"] += clock() - t2
        store.close()
    per = {k: v / len(messages) * 1e6 for k, v in spent.items()}
    return {**per, "total": sum(per.values()), "native": native.status()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.bench_plan", description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=20_000, help="synthetic events per run (default 20,000)")
    ap.add_argument("--runs", type=int, default=3, help="runs per mode, alternated (default 3)")
    ap.add_argument("--modes", default="native,pure", help="native (the build, if it matches), pure (CG_NATIVE=0)")
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # a single run: JSON on stdout
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(one_run(args.events)))
        return 0
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or set(modes) - {"native", "pure"}:
        ap.error(f"--modes: native and/or pure, not {args.modes!r}")
    results: dict[str, list[dict]] = {m: [] for m in modes}
    for run in range(args.runs):
        for mode in modes:
            env = {**os.environ, "CG_NATIVE": "1" if mode == "native" else "0"}
            done = subprocess.run([sys.executable, "-m", "bench.bench_plan", "--one", "--events", str(args.events)],
                                  cwd=REPO, env=env, capture_output=True, text=True, check=False)
            if done.returncode:
                print(f"bench_plan: error: run {run + 1} ({mode}) failed: {done.stderr.strip()[-300:]}",
                      file=sys.stderr)
                return 1
            r = json.loads(done.stdout)
            results[mode].append(r)
            print(f"[{time.strftime('%H:%M:%S')}] run {run + 1} {mode}: {r['total']:.1f} µs/event "
                  f"(plan {r['plan']:.1f}, metrics {r['metrics']:.1f}, commit {r['commit']:.1f}) — {r['native']}",
                  file=sys.stderr, flush=True)
    print(f"| mode | µs/event, {args.runs} runs of {args.events:,} events | min | median | plan | metrics | commit |")
    print("|---|---|---|---|---|---|---|")
    medians, mins = {}, {}
    for mode, rs in results.items():
        medians[mode] = statistics.median(r["total"] for r in rs)
        mins[mode] = min(r["total"] for r in rs)
        phase = {k: statistics.median(r[k] for r in rs) for k in ("plan", "metrics", "commit")}
        totals = " · ".join(f"{r['total']:.1f}" for r in rs)
        print(f"| {mode} ({rs[0]['native']}) | {totals} | {mins[mode]:.1f} | {medians[mode]:.1f} "
              f"| {phase['plan']:.1f} | {phase['metrics']:.1f} | {phase['commit']:.1f} |")
    if {"native", "pure"} <= set(medians):
        print(f"\npure / native: {medians['pure'] / medians['native']:.2f}x (medians), "
              f"{mins['pure'] / mins['native']:.2f}x (minimums: on a shared machine, the runs least disturbed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
