"""Scale-out: one worker vs two workers (one consumer group) on 4 partitions.

    python -m bench.bench_scaleout [--stream real|synthetic] [--runs 3] [--workers 1,2] [--quick] [--out FILE]

Part 4 of ``make bench``.
How it measures, and why: bench/METHODS.md "bench_scaleout.py".
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import (
    PARTITIONS, Poller, WorkerProc, add_part_args, broker, copies_of, cpu_seconds, create_topic_set, loadavg,
    part_parser, partition_counts, produce_events, report_end, report_head, say, topic_set, write_out,
)
from stream.adapters import encode_event
from stream.offline.replay import replay_lines


def machine_jiffies() -> tuple[int, int]:
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


async def wait_balanced(workers: list[WorkerProc], timeout: float) -> dict[int, list[int]]:
    """Until every worker is ready and their partitions partition {0..P-1}; twice in a row."""
    deadline = time.monotonic() + timeout
    stable = 0
    while time.monotonic() < deadline:
        for w in workers:
            w.check_alive()
        bodies = await asyncio.gather(*(asyncio.to_thread(w.readyz, 0.5) for w in workers))
        if all(b is not None for b in bodies):
            parts = [sorted(b.get("partitions", [])) for b in bodies]
            flat = [p for ps in parts for p in ps]
            if all(parts) and sorted(flat) == list(range(PARTITIONS)):
                stable += 1
                if stable >= 3:
                    return {w.web_port: p for w, p in zip(workers, parts)}
            else:
                stable = 0
        else:
            stable = 0
        await asyncio.sleep(0.3)
    raise RuntimeError("workers not ready and balanced in time:\n" + "\n---\n".join(w.log_tail(10) for w in workers))


async def one_run(args: argparse.Namespace, settings: Any, tmp: Path, events: list[dict[str, Any]],
                  lines: list[bytes], expected: tuple[int, int, int], n: int, run: int) -> dict[str, Any]:
    tag = f"so{n}-{run}-{uuid.uuid4().hex[:6]}"
    inputs, outputs = topic_set(tag)
    await create_topic_set(settings, inputs, outputs)
    app_id = f"bs-{tag}"
    workers = [WorkerProc(settings, app_id, inputs, outputs, tmp / f"data-{tag}-{i}", tmp / f"{tag}-{i}.log",
                          loglevel=args.worker_loglevel) for i in range(n)]
    t_launch = time.monotonic()
    for w in workers:
        w.start()
    try:
        assignment = await wait_balanced(workers, args.timeout)
        ready_s = time.monotonic() - t_launch
        cpu0 = [cpu_seconds(w.pid) for w in workers]
        m0 = machine_jiffies()
        t0 = time.monotonic()
        produce_s = await produce_events(settings, inputs, events, lines)
        total = len(events)
        async with Poller(settings) as poll:
            ends = await poll.end_map(inputs)
            assert sum(ends.values()) == total, (sum(ends.values()), total)
            t_out = cpu1 = m1 = None
            while True:  # processed: the workers' events_total counters
                now = time.monotonic()
                counts = await asyncio.gather(*(asyncio.to_thread(w.events_processed, 1.0) for w in workers))
                if sum(counts) >= expected[2]:
                    t_out = now
                    cpu1 = [cpu_seconds(w.pid) for w in workers]
                    m1 = machine_jiffies()
                    break
                for w in workers:
                    w.check_alive()
                if now - t0 > args.timeout:
                    raise RuntimeError(f"{n} worker(s) did not process {expected[2]} events in {args.timeout:.0f}s "
                                       f"({sum(counts)} done)")
                await asyncio.sleep(0.1)
            while await poll.committed(app_id, ends) < total:  # durable: offsets committed
                for w in workers:
                    w.check_alive()
                if time.monotonic() - t_out > 60:
                    raise RuntimeError("offsets not committed 60 s after the last event was processed")
                await asyncio.sleep(0.05)
            t_done = time.monotonic()
            out_ends = await poll.end_map(outputs)
    finally:
        for w in workers:
            w.stop()
            shutil.rmtree(w.data_dir, ignore_errors=True)
    alerts = sum(v for tp, v in out_ends.items() if tp.topic == outputs[0])
    verdicts = sum(v for tp, v in out_ends.items() if tp.topic == outputs[1])
    dead = sum(v for tp, v in out_ends.items() if tp.topic == outputs[2])
    wall = t_out - t0
    cpu = [b - a for a, b in zip(cpu0, cpu1)]
    res = {
        "n": n, "run": run, "rate": total / wall, "wall": wall, "durable_wall": t_done - t0,
        "per_cpu_s": total / max(sum(cpu), 1e-9), "produce_s": produce_s, "ready_s": ready_s,
        "cpu": cpu,
        "machine_busy": (m1[0] - m0[0]) / max(m1[1] - m0[1], 1),
        "assignment": sorted(assignment.values()), "alerts": alerts, "verdicts": verdicts, "dead": dead,
        "ok": alerts >= expected[0] and verdicts >= expected[1] and dead == 0,
    }
    say(f"{n} worker(s) run {run}: {res['rate']:,.0f} events/s ({total} events, processed after {wall:.1f}s, "
        f"committed after {res['durable_wall']:.1f}s; {res['per_cpu_s']:,.0f} events per worker-CPU-second; "
        f"produced in {produce_s:.1f}s; ready+balanced "
        f"{ready_s:.1f}s after launch; partitions {res['assignment']}; worker CPU "
        f"{', '.join(f'{c / wall:.0%}' for c in res['cpu'])}; machine busy {res['machine_busy']:.0%}; "
        f"alerts {alerts}/{expected[0]} verdicts {verdicts}/{expected[1]} dead {dead})"
        f"{'' if res['ok'] else '  <-- MISMATCH'}")
    return res


def render(argv: list[str], args: argparse.Namespace, kafka: str, stream_desc: str, counts: list[int],
           results: dict[int, list[dict[str, Any]]], errors: list[str], t_start: float, load_start: str) -> str:
    lines = [
        *report_head(args.title, "bench/bench_scaleout.py", argv,
                     f". Workers: `python -m stream worker -l {args.worker_loglevel}`, RocksDB, "
                     "same app id (one consumer group), own data dir and web port each.", kafka=kafka),
        f"Stream: {stream_desc}; events per partition {counts} (Kafka's default partitioner on the "
        f"context id) — the busiest partition bounds what {PARTITIONS} partitions over 2 workers can gain "
        f"(ideal 2-worker speed-up with these partitions: {ideal_speedup(counts):.2f}x).",
        "",
        "| workers | events/s (median; runs) | ratio vs 1 worker (goal ≥ 1.6x) | events per worker-CPU-second "
        "(median; runs) | ratio vs 1 worker (goal ≥ 0.9 where the cores bound it) | first event produced → "
        "processed (s) | → committed (s) | worker CPU use (each) | machine busy | partitions per worker "
        "| outputs ok |",
        "|---:|---|---:|---|---:|---:|---:|---|---:|---|---|",
    ]
    base = results.get(1)
    base_rate = statistics.median(r["rate"] for r in base) if base else None
    base_cpu = statistics.median(r["per_cpu_s"] for r in base) if base else None
    for n in sorted(results):
        rs = results[n]
        if not rs:
            continue
        rate = statistics.median(r["rate"] for r in rs)
        per_cpu = statistics.median(r["per_cpu_s"] for r in rs)
        cpu = " + ".join(f"{statistics.median(r['cpu'][i] / r['wall'] for r in rs):.0%}" for i in range(n))
        each = ", ".join(f"{r['rate']:,.0f}" for r in rs)
        each_cpu = ", ".join(f"{r['per_cpu_s']:,.0f}" for r in rs)
        lines.append(
            f"| {n} | **{rate:,.0f}** ({each}) | {f'{rate / base_rate:.2f}x' if base_rate else 'n/a'} | "
            f"**{per_cpu:,.0f}** ({each_cpu}) | {f'{per_cpu / base_cpu:.2f}' if base_cpu else 'n/a'} | "
            f"{statistics.median(r['wall'] for r in rs):.1f} | "
            f"{statistics.median(r['durable_wall'] for r in rs):.1f} | "
            f"{cpu} | {statistics.median(r['machine_busy'] for r in rs):.0%} | "
            f"{rs[0]['assignment']} | {'yes' if all(r['ok'] for r in rs) else '**no**'} |")
    lines += [
        "",
        "t0 = the first event produced, after every worker was ready (`/readyz` 200) and the group balanced; "
        "the stream is then produced at full speed (production took "
        f"{statistics.median(r['produce_s'] for rs in results.values() for r in rs):.1f} s, median) — a backlog. "
        "*processed*: the sum of the workers' `checkpoint_guard_events_total` (at `/metrics`, polled every "
        "0.1 s; every outcome but `buffered`) reaches the events the offline replay applies; events/s = events "
        "÷ that time. *committed*: the group's committed offsets reach the input topics' end offsets (one "
        "commit per `CG_COMMIT_INTERVAL` = 1 s). *events per worker-CPU-second*: events ÷ the CPU seconds of "
        "all workers over t0 → processed. *worker CPU use*: CPU time of each worker process over the window ÷ "
        "the window (100 % = one core). *outputs ok*: alerts and verdicts ≥ the offline replay's counts and "
        "no dead letters.",
        "",
    ]
    return report_end(lines, errors, t_start, load_start)


def ideal_speedup(counts: list[int]) -> float:
    """Best 2-worker split of the partitions: total ÷ the larger half."""
    best = None
    total = sum(counts)
    p = len(counts)
    for mask in range(1, 2 ** p - 1):
        a = sum(c for i, c in enumerate(counts) if mask >> i & 1)
        if bin(mask).count("1") != p // 2:
            continue
        worst = max(a, total - a)
        best = worst if best is None else min(best, worst)
    return total / best if best else 1.0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = part_parser("bench/bench_scaleout.py", __doc__)
    ap.add_argument("--stream", choices=("real", "synthetic"), default=None,
                    help="real: the shipped trajectories (make demo's stream); synthetic: checkpoint-heavy "
                         "(default real; quick: synthetic)")
    ap.add_argument("--events", type=int, default=None, help="synthetic stream size (default 3000; quick 600)")
    ap.add_argument("--copies", type=int, default=None,
                    help="copies of the real stream, each under its own context ids (default 3; quick 1)")
    ap.add_argument("--traces-limit", type=int, default=None, help="only this many trajectories")
    ap.add_argument("--traces", nargs="*", default=None, help="trajectory files/dirs (default stream/samples/traces)")
    ap.add_argument("--runs", type=int, default=None, help="runs per worker count (default 3; quick 1)")
    ap.add_argument("--workers", default="1,2", help="worker counts (default 1,2)")
    add_part_args(ap, title="4. Scale-out: 1 vs 2 workers on 4 partitions",
                  quick="1 run each, the real stream once (18,215 events)",
                  worker_timeout="per run: seconds to ready, then to done")
    args = ap.parse_args(argv)
    q = args.quick
    args.stream = args.stream or "real"
    args.copies = args.copies or (1 if q else 3)
    args.traces_limit = args.traces_limit or None
    args.events = args.events or (600 if q else 3000)
    args.runs = args.runs or (1 if q else 3)
    counts_n = [int(x) for x in args.workers.split(",") if x]

    from bench.bench_worker import real_events, synthetic_events

    t_start, load_start = time.monotonic(), loadavg()
    if args.stream == "real":
        shipped = str(Path(__file__).resolve().parent.parent / "stream" / "samples" / "traces")
        events = copies_of(real_events(args.traces or [shipped], args.traces_limit), args.copies)
        desc = (f"real (the shipped trajectories through the compaction simulator) x {args.copies}, "
                f"{len(events):,} events")
    else:
        events = synthetic_events(args.events)
        desc = f"synthetic checkpoint-heavy (`bench_worker.synthetic_events`), {len(events):,} events"
    lines = [encode_event(e).encode() for e in events]
    off = replay_lines(lines)
    expected = (len(off.alerts), len(off.verdicts), len(events) - sum(len(v) for v in off.waiting.values()))
    counts = partition_counts(events)
    say(f"{desc}: {expected[0]} alerts, {expected[1]} verdicts offline; per partition {counts}")
    results: dict[int, list[dict[str, Any]]] = {n: [] for n in counts_n}
    errors: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="cg-bench-scaleout-"))
    kafka = "?"
    try:
        with broker(args.bootstrap, kafka_port=args.kafka_port) as (settings, kafka):
            for run in range(1, args.runs + 1):
                for n in counts_n:
                    try:
                        results[n].append(asyncio.run(one_run(args, settings, tmp, events, lines, expected, n, run)))
                    except Exception as exc:
                        say(f"{n} worker(s) run {run} FAILED: {exc}")
                        errors.append(f"{n} worker(s) run {run}: {str(exc).splitlines()[0] if str(exc) else exc!r}")
                        WorkerProc.stop_all()
    finally:
        WorkerProc.stop_all()
        if errors or not all(r["ok"] for rs in results.values() for r in rs):
            say(f"worker logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    med = {n: statistics.median(r["rate"] for r in rs) for n, rs in results.items() if rs}
    summary = ", ".join(f"{n} worker{'s' if n > 1 else ''} {v:,.0f} events/s" for n, v in sorted(med.items()))
    if 1 in med and len(med) > 1:
        per_cpu = {n: statistics.median(r["per_cpu_s"] for r in rs) for n, rs in results.items() if rs}
        summary += " (" + ", ".join(f"{n}/1 = {v / med[1]:.2f}x; events per worker-CPU-second "
                                    f"{per_cpu[n] / per_cpu[1]:.2f} of 1 worker's"
                                    for n, v in sorted(med.items()) if n != 1) + ")"
    write_out(args.out, render(argv, args, kafka, desc, counts, results, errors, t_start, load_start),
              f"{args.stream} stream: {summary or 'no result'}")
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
