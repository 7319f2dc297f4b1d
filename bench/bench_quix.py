"""The peer a user would pick instead: the worker vs a Quix Streams app hosting the same engine.

    python -m bench.bench_quix [--streams real,synthetic] [--runs 2] [--copies 3] [--quick] [--out FILE]

Part 10 of ``make bench``.
How it measures, and why: bench/METHODS.md "bench_quix.py".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.common import (
    Poller, REPO, WorkerProc, add_part_args, broker, copies_of, cpu_seconds, create_topic_set, loadavg, part_parser,
    pdeathsig, produce_events, read_topic, report_end, report_head, say, topic_set, write_out,
)
from stream.adapters import encode_event
from stream.offline.replay import replay_lines

QUIX = "Quix Streams app (same engine)"
WORKER = "checkpoint-guard worker"


def alerts_by_context(alerts: list[dict[str, Any]]) -> dict[str, list[str]]:
    """``context_id -> [alert_id, ...]`` in emission order (a context's order is deterministic)."""
    out: dict[str, list[str]] = defaultdict(list)
    for a in alerts:
        out[a["context_id"]].append(a["alert_id"])
    return dict(out)


def comparable(alert: dict[str, Any], *, offline: bool = False) -> str:
    """An alert's text for comparison: ``emitted_at`` aside; ``offline``: also the trigger's
    topic/partition/offset (null in an offline replay)."""
    a = {k: v for k, v in alert.items() if k != "emitted_at"}
    if offline:
        a["trigger"] = {k: v for k, v in a["trigger"].items() if k not in ("topic", "partition", "offset")}
    return json.dumps(a, sort_keys=True)


async def outputs_of(settings: Any, outputs: tuple[str, ...]) -> dict[str, Any]:
    alerts = [json.loads(m.value) for m in await read_topic(settings, outputs[0])]
    verdicts = len(await read_topic(settings, outputs[1]))
    dead = len(await read_topic(settings, outputs[2]))
    status: dict[bytes, bytes] = {}
    for m in sorted(await read_topic(settings, outputs[3]), key=lambda m: m.timestamp):
        status[m.key] = m.value
    return {"alerts": alerts, "verdicts": verdicts, "dead": dead, "status": status}


async def worker_run(args: argparse.Namespace, settings: Any, tmp: Path, inputs: tuple[str, str],
                     total: int, processed: int, tag: str) -> dict[str, Any]:
    """``processed``: what the worker's counter reaches (events still waiting for a seq at the
    end of the stream are never counted)."""
    _, outputs = topic_set(tag)
    await create_topic_set(settings, inputs, outputs)
    w = WorkerProc(settings, f"bq-{tag}", inputs, outputs, tmp / f"data-{tag}", tmp / f"{tag}.log",
                   loglevel=args.worker_loglevel).start()
    try:
        first = last = None
        t_done = None
        async with Poller(settings) as poll:
            ends = await poll.end_map(inputs)
            while True:
                w.check_alive()
                n = await asyncio.to_thread(w.events_processed, 1.0)
                now = time.monotonic()
                if n and first is None:
                    first = (now, n, cpu_seconds(w.pid))
                if n and (last is None or n != last[1]):
                    last = (now, n, cpu_seconds(w.pid))
                if n >= processed:
                    break
                if first is None and now - w.started_at > args.stall:
                    raise RuntimeError(f"worker processed nothing in {args.stall:.0f}s after start:\n{w.log_tail()}")
                if last is not None and now - last[0] > args.stall:
                    raise RuntimeError(f"worker stalled at {n} of {processed} events for {args.stall:.0f}s:\n"
                                       f"{w.log_tail()}")
                if now - w.started_at > args.timeout:
                    raise RuntimeError(f"worker did not process {total} events in {args.timeout:.0f}s ({n} done)")
                await asyncio.sleep(0.1)
            while await poll.committed(w.app_id, ends) < total:
                w.check_alive()
                if time.monotonic() - last[0] > 60:
                    raise RuntimeError("worker offsets not committed 60 s after its last event")
                await asyncio.sleep(0.05)
            t_done = time.monotonic()
    finally:
        w.stop()
        shutil.rmtree(w.data_dir, ignore_errors=True)
    out = await outputs_of(settings, outputs)
    return {"seconds": last[0] - first[0], "n": last[1] - first[1], "cpu": last[2] - first[2],
            "durable": t_done - first[0], "startup": first[0] - w.started_at, **out}


def quix_run(args: argparse.Namespace, settings: Any, tmp: Path, inputs: tuple[str, str], total: int,
             tag: str) -> dict[str, Any]:
    _, outputs = topic_set(tag)
    asyncio.run(create_topic_set(settings, inputs, outputs))
    log = tmp / f"{tag}.log"
    state = tmp / f"quix-state-{tag}"
    t0 = time.monotonic()
    with open(log, "wb") as err:
        p = subprocess.run(
            [sys.executable, "-m", "bench.quix_app", "--broker", settings.bootstrap_servers,
             "--group", f"bq-{tag}", "--inputs", ",".join(inputs), "--outputs", ",".join(outputs),
             "--state-dir", str(state), "--expect", str(total), "--guarantee", args.quix_guarantee],
            cwd=REPO, stdout=subprocess.PIPE, stderr=err, timeout=args.timeout, preexec_fn=pdeathsig,
        )
    shutil.rmtree(state, ignore_errors=True)
    marks = {}
    for line in p.stdout.decode(errors="replace").splitlines():
        if line.startswith('{"mark"'):
            m = json.loads(line)
            marks[m["mark"]] = m
    if p.returncode != 0 or "committed" not in marks:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"the Quix app exited {p.returncode} without finishing; log {log}:\n{tail}")
    first, done = marks["first"], marks["done"]
    out = asyncio.run(outputs_of(settings, outputs))
    return {"seconds": done["t"] - first["t"], "n": done["n"] - first["n"], "cpu": done["cpu"] - first["cpu"],
            "durable": marks["committed"]["t"] - first["t"], "startup": first["t"] - t0, **out}


def check(res: dict[str, Any], expected: dict[str, list[str]], expected_records: list[str]) -> None:
    got = alerts_by_context(res["alerts"])
    res["ids_ok"] = got == expected
    res["records_ok"] = sorted(comparable(a, offline=True) for a in res["alerts"]) == expected_records
    res["ok"] = res["ids_ok"] and res["dead"] == 0


def measure_stream(args: argparse.Namespace, settings: Any, tmp: Path, name: str,
                   events: list[dict[str, Any]]) -> dict[str, Any]:
    lines = [encode_event(e).encode() for e in events]
    off = replay_lines(lines, seq_gap_limit=settings.seq_gap_limit)
    if off.dead_letters:
        raise SystemExit(f"bench_quix: the {name} stream has invalid events")
    expected = alerts_by_context(off.alerts)
    expected_records = sorted(comparable(a, offline=True) for a in off.alerts)
    tag = f"q-{name}-{uuid.uuid4().hex[:6]}"
    inputs, _ = topic_set(tag)
    asyncio.run(create_topic_set(settings, inputs, topic_set(tag + "-unused")[1]))
    secs = asyncio.run(produce_events(settings, inputs, events, lines))
    total = len(events)
    processed = total - sum(len(v) for v in off.waiting.values())
    say(f"{name}: produced {total:,} events in {secs:.1f}s; offline replay: {len(off.alerts)} alerts")
    runs: dict[str, list[dict[str, Any]]] = {WORKER: [], QUIX: []}
    errors: list[str] = []
    for r in range(1, args.runs + 1):
        for label in (WORKER, QUIX):
            run_tag = f"{tag}-{'w' if label == WORKER else 'q'}{r}"
            try:
                if label == WORKER:
                    res = asyncio.run(worker_run(args, settings, tmp, inputs, total, processed, run_tag))
                else:
                    res = quix_run(args, settings, tmp, inputs, total, run_tag)
            except Exception as exc:
                say(f"{name} {label} run {r} FAILED: {exc}")
                errors.append(f"{name}, {label}, run {r}: {str(exc).splitlines()[0] if str(exc) else exc!r}")
                WorkerProc.stop_all()
                continue
            check(res, expected, expected_records)
            res["load"] = loadavg().split()[0]
            rate = res["n"] / max(res["seconds"], 1e-9)
            say(f"{name} {label} run {r}: {rate:,.0f} events/s, {1e6 * res['cpu'] / max(res['n'], 1):,.1f} CPU "
                f"µs/event ({res['n']:,} events in {res['seconds']:.1f}s; durable after {res['durable']:.1f}s; "
                f"start-up {res['startup']:.1f}s); alerts {len(res['alerts'])}/{len(off.alerts)}, alert_ids "
                f"{'identical' if res['ids_ok'] else 'DIFFER'}, records "
                f"{'identical' if res['records_ok'] else 'differ'}; load {res['load']}")
            runs[label].append(res)
    # The two consumers against each other (not only each against the replay).
    w_runs, q_runs = runs[WORKER], runs[QUIX]
    same_ids = same_status = same_records = None
    if w_runs and q_runs:
        same_ids = alerts_by_context(w_runs[0]["alerts"]) == alerts_by_context(q_runs[0]["alerts"])
        same_records = (sorted(comparable(a) for a in w_runs[0]["alerts"])
                        == sorted(comparable(a) for a in q_runs[0]["alerts"]))
        same_status = w_runs[0]["status"] == q_runs[0]["status"]
    return {"name": name, "events": total, "checkpoints": sum(e["type"] == "checkpoint" for e in events),
            "alerts": len(off.alerts), "runs": runs, "errors": errors, "same_ids": same_ids,
            "same_records": same_records, "same_status": same_status}


def med(rs: list[dict[str, Any]], f) -> float:
    return statistics.median(f(r) for r in rs) if rs else float("nan")


def rate_of(r: dict[str, Any]) -> float:
    return r["n"] / max(r["seconds"], 1e-9)


def cpu_of(r: dict[str, Any]) -> float:
    return 1e6 * r["cpu"] / max(r["n"], 1)


def compared(results: list[dict[str, Any]]) -> list[tuple[dict[str, Any], tuple[float, float], tuple[float, float]]]:
    """(stream, the worker's (events/s, CPU µs/event) medians, Quix's) for each stream both consumers ran."""
    return [(st, (med(w, rate_of), med(w, cpu_of)), (med(q, rate_of), med(q, cpu_of)))
            for st in results for w, q in [(st["runs"][WORKER], st["runs"][QUIX])] if w and q]


def render(argv: list[str], args: argparse.Namespace, kafka: str, results: list[dict[str, Any]],
           t_start: float, load_start: str) -> str:
    from importlib.metadata import version

    lines = [
        *report_head(args.title, "bench/bench_quix.py", argv, f"; quixstreams {version('quixstreams')} "
                     f"(confluent-kafka {version('confluent-kafka')}), processing guarantee {args.quix_guarantee}.",
                     kafka=kafka),
        "Both read the same pre-filled input topics (4 partitions) once per run, one after the other, runs "
        "alternating; each writes alerts, verdicts, node status (and dead letters) to its own output topics.",
        "",
        "| stream | consumer | events/s (median; runs) | CPU µs/event (median; runs) | CPU use | first → durable (s) "
        "| start-up (s) | alerts | alert_ids = offline replay | whole alerts = replay |",
        "|---|---|---|---|---:|---:|---:|---:|---|---|",
    ]
    for st in results:
        for label in (WORKER, QUIX):
            rs = st["runs"][label]
            if not rs:
                lines.append(f"| {st['name']} | {label} | failed | | | | | | | |")
                continue
            lines.append(
                f"| {st['name']} ({st['events']:,} events, {st['checkpoints']:,} checkpoints) | {label} | "
                f"**{med(rs, rate_of):,.0f}** ({', '.join(f'{rate_of(r):,.0f}' for r in rs)}) | "
                f"**{med(rs, cpu_of):,.1f}** ({', '.join(f'{cpu_of(r):,.1f}' for r in rs)}) | "
                f"{med(rs, lambda r: r['cpu'] / max(r['seconds'], 1e-9)):.0%} | "
                f"{med(rs, lambda r: r['durable']):.1f} | "
                f"{med(rs, lambda r: r['startup']):.1f} | {len(rs[0]['alerts']):,} / {st['alerts']:,} | "
                f"{'yes' if all(r['ids_ok'] for r in rs) else '**no**'} | "
                f"{'yes' if all(r['records_ok'] for r in rs) else '**no**'} |")
    lines += ["", "| stream | worker events/s ÷ Quix's (goal ≥ 1) | worker CPU µs/event ÷ Quix's (goal ≤ 1) | "
              "same alert_ids, worker vs Quix | same alert records (triggers' offsets included) | "
              "same final node status, worker vs Quix |", "|---|---:|---:|---|---|---|"]
    for st, (w_rate, w_cpu), (q_rate, q_cpu) in compared(results):
        lines.append(f"| {st['name']} | **{w_rate / q_rate:.2f}** | **{w_cpu / q_cpu:.2f}** | "
                     f"{'yes' if st['same_ids'] else '**no**'} | {'yes' if st['same_records'] else '**no**'} | "
                     f"{'yes' if st['same_status'] else '**no**'} |")
    lines += [
        "",
        "*events/s*: events ÷ (first processed → last processed), start-up excluded — the worker's from its "
        "`events_total` counter at `/metrics` (polled every 0.1 s), Quix's from its own `on_message_processed` "
        "stamps. *CPU µs/event*: the process's CPU time, all threads (librdkafka's fetch/produce threads in "
        "Quix, aiokafka's in the worker), over that window ÷ events. *first → durable*: first processed → "
        "offsets committed (the worker commits every `CG_COMMIT_INTERVAL` = 1 s; Quix, stopped after its last "
        "message, commits at once; its default interval is 5 s). *alert_ids = offline replay*: per context, "
        "the sequence of `alert_id`s on the consumer's alerts topic equals `stream.offline.replay`'s; *whole alerts*: "
        "every alert record equal (`emitted_at` aside; against the replay without the triggers' "
        "topic/partition/offset, which are null offline; worker vs Quix with them). *same "
        "final node status*: the last status record per key (the compacted topic's view) identical. "
        "Quix writes status records by its producer's default partitioner (the worker: to the input's "
        "partition number), which does not change their content.",
        "",
    ]
    errors = [e for st in results for e in st["errors"]]
    return report_end(lines, errors, t_start, load_start)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = part_parser("bench/bench_quix.py", __doc__)
    ap.add_argument("--streams", default=None,
                    help="real (the shipped trajectories x --copies) and/or synthetic (checkpoint-heavy); "
                         "default real,synthetic (quick: real)")
    ap.add_argument("--copies", type=int, default=None, help="copies of the real stream (default 3; quick 1)")
    ap.add_argument("--traces-limit", type=int, default=None, help="only this many trajectories")
    ap.add_argument("--events", type=int, default=None, help="synthetic stream size (default 10000)")
    ap.add_argument("--runs", type=int, default=None, help="runs per consumer and stream (default 2; quick 1)")
    ap.add_argument("--quix-guarantee", default="at-least-once", choices=("at-least-once", "exactly-once"))
    ap.add_argument("--stall", type=float, default=120, help="seconds without progress before a run fails")
    add_part_args(ap, title="10. The peer a user would pick instead: a Quix Streams app, same engine",
                  quick="1 run each, the real stream once (18,215 events)", worker_timeout="seconds per run")
    args = ap.parse_args(argv)
    q = args.quick
    args.streams = args.streams or ("real" if q else "real,synthetic")
    args.copies = args.copies or (1 if q else 3)
    args.traces_limit = args.traces_limit or None
    args.events = args.events or 10_000
    args.runs = args.runs or (1 if q else 2)
    try:
        import quixstreams  # noqa: F401
    except ImportError:
        raise SystemExit("bench_quix: error: quixstreams is not installed; run `pip install -e '.[bench]'` "
                         "(or `make bench`)") from None

    from bench.bench_worker import real_events, synthetic_events
    from stream.adapters.simulated.model import DEFAULT_TRACES

    t_start, load_start = time.monotonic(), loadavg()
    results: list[dict[str, Any]] = []
    tmp = Path(tempfile.mkdtemp(prefix="cg-bench-quix-"))
    kafka = "?"
    try:
        with broker(args.bootstrap, kafka_port=args.kafka_port) as (settings, kafka):
            for name in [s.strip() for s in args.streams.split(",") if s.strip()]:
                if name == "real":
                    events = copies_of(real_events([str(DEFAULT_TRACES)], args.traces_limit), args.copies)
                elif name == "synthetic":
                    events = synthetic_events(args.events)
                else:
                    raise SystemExit(f"bench_quix: error: unknown stream {name!r} (real, synthetic)")
                results.append(measure_stream(args, settings, tmp, name, events))
    finally:
        WorkerProc.stop_all()
    failed = any(st["errors"] for st in results) or not all(
        r["ok"] for st in results for rs in st["runs"].values() for r in rs)
    if failed:
        say(f"logs kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    parts = [f"{st['name']}: worker {w_rate:,.0f} ev/s at {w_cpu:,.0f} µs/event vs Quix {q_rate:,.0f} at "
             f"{q_cpu:,.0f} ({w_rate / q_rate:.2f}x / {w_cpu / q_cpu:.2f}x CPU; "
             f"alert_ids {'identical' if st['same_ids'] else 'DIFFER'})"
             for st, (w_rate, w_cpu), (q_rate, q_cpu) in compared(results)]
    write_out(args.out, render(argv, args, kafka, results, t_start, load_start), "; ".join(parts) or "no result")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
