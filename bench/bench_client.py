"""The pipeline client (stream.client): produce rate, StatusView lookups and catch-up.

    python -m bench.bench_client [--events N] [--status-records N] [--phases produce,status,rwy]
                                 [--runs R] [--quick] [--bootstrap HOST:PORT] [--out FILE]

Part 9 of ``make bench``.
How it measures, and why: bench/METHODS.md "bench_client.py".
"""

from __future__ import annotations

import asyncio
import gc
import random
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.common import (
    PARTITIONS, WorkerProc, add_part_args, broker, command_line, create_topics_ready, loadavg, machine_line,
    part_parser, proc_status, report_end, say, send_all, software_line, write_out,
)
from stream import kafka_clients
from stream.client import AsyncGuard, EventBuilder, Guard, MemoryTransport, StatusView
from stream.settings import Settings
from stream.wire import encode, status_key

TEXT = ("Fixed the failing API test; the traceback pointed at api/views.py line 40. "
        "Ran the suite with pytest -q; two unrelated tests are flaky and were left alone. ") * 2


def calls(n_events: int, contexts: int = 100) -> list[tuple[str, str, tuple, dict]]:
    """(context, method, args, kwargs) of ``n_events`` events: rounds of 5 (3 admissions, a
    leaf checkpoint, an eviction) over ``contexts`` contexts in turn, as concurrent agents."""
    out = []
    for r in range(max(1, n_events // 5)):
        ctx = f"bench-{r % contexts}"
        spans = [f"span-{r}-{i}" for i in range(3)]
        out += [(ctx, "admitted", (s,), {"kind": "raw_span"}) for s in spans]
        out.append((ctx, "checkpoint", (f"leaf-{r}", "leaf"), {
            "referents": spans, "raw_negative_constraints": ["Do not edit migrations/"],
            "negative_constraints": ["Do not edit migrations/"], "text": TEXT[:200]}))
        out.append((ctx, "evicted", (spans[0],), {}))
    return out


def bench_settings(settings: Settings, tag: str) -> Settings:
    return settings.model_copy(update={
        "compaction_topic": f"{tag}-compaction", "artifact_topic": f"{tag}-artifact",
        "alerts_topic": f"{tag}-alerts", "verdicts_topic": f"{tag}-verdicts", "deadletter_topic": f"{tag}-dl",
        "status_topic": f"{tag}-status", "app_id": f"{tag}-app", "partitions": PARTITIONS,
    })


def captured(settings: Settings, plan: list) -> list[tuple[str, bytes, bytes]]:
    transport = MemoryTransport()
    with Guard(settings, clock=None, transport=transport) as g:
        for ctx, method, args, kwargs in plan:
            getattr(g.context(ctx), method)(*args, **kwargs)
    return transport.records


async def run_raw(settings: Settings, records: list[tuple[str, bytes, bytes]]) -> float:
    p = kafka_clients.idempotent_producer(settings)
    await p.start()
    try:
        t0 = time.perf_counter()
        futures = [await p.send(topic, value, key=key) for topic, key, value in records]
        await asyncio.gather(*futures)
        return time.perf_counter() - t0
    finally:
        await p.stop()


async def run_raw_built(settings: Settings, plan: list) -> float:
    """The raw producer, each record built by the client's EventBuilder in the loop: where
    the client's time goes (validation) vs its outbox and acknowledgement bookkeeping."""
    p = kafka_clients.idempotent_producer(settings)
    await p.start()
    try:
        builders: dict[str, EventBuilder] = {}
        t0 = time.perf_counter()
        futures = []
        for ctx, method, args, kwargs in plan:
            b = builders.get(ctx) or builders.setdefault(ctx, EventBuilder(settings, ctx, clock=None))
            em = b.checkpoint(*args, **kwargs) if method == "checkpoint" else b.artifact(method, *args, **kwargs)
            futures.append(await p.send(em.topic, em.value, key=em.key))
        await asyncio.gather(*futures)
        return time.perf_counter() - t0
    finally:
        await p.stop()


async def run_async(settings: Settings, plan: list) -> float:
    guard = AsyncGuard(settings, clock=None)
    await guard.start()
    try:
        t0 = time.perf_counter()
        for ctx, method, args, kwargs in plan:
            await getattr(guard.context(ctx), method)(*args, **kwargs)
        await guard.flush()
        return time.perf_counter() - t0
    finally:
        await guard.stop()


def run_sync(settings: Settings, plan: list) -> float:
    with Guard(settings, clock=None) as g:
        t0 = time.perf_counter()
        for ctx, method, args, kwargs in plan:
            getattr(g.context(ctx), method)(*args, **kwargs)
        g.flush()
        return time.perf_counter() - t0


def build_cost(settings: Settings, plan: list) -> float:
    """µs of CPU per event the client spends before the producer: validate, hash, encode."""
    builders: dict[str, EventBuilder] = {}
    t0 = time.process_time()
    for ctx, method, args, kwargs in plan:
        b = builders.get(ctx) or builders.setdefault(ctx, EventBuilder(settings, ctx, clock=None))
        if method == "checkpoint":
            b.checkpoint(*args, **kwargs)
        else:
            b.artifact(method, *args, **kwargs)
    return (time.process_time() - t0) / len(plan) * 1e6


def phase_produce(settings: Settings, n_events: int, runs: int) -> dict[str, Any]:
    s = bench_settings(settings, f"bc-{uuid.uuid4().hex[:6]}")
    asyncio.run(create_topics_ready(s, [s.compaction_topic, s.artifact_topic]))
    plan = calls(n_events)
    records = captured(s, plan)
    assert len(records) == len(plan)
    times: dict[str, list[float]] = {"raw aiokafka": [], "raw aiokafka + EventBuilder": [], "AsyncGuard": [],
                                     "Guard (sync)": []}
    for r in range(runs):
        times["raw aiokafka"].append(asyncio.run(run_raw(s, records)))
        times["raw aiokafka + EventBuilder"].append(asyncio.run(run_raw_built(s, plan)))
        times["AsyncGuard"].append(asyncio.run(run_async(s, plan)))
        times["Guard (sync)"].append(run_sync(s, plan))
        say(f"produce run {r + 1}/{runs}: " + ", ".join(f"{k} {len(plan) / v[-1]:,.0f}/s" for k, v in times.items()))
    med = {k: statistics.median(v) for k, v in times.items()}
    # Rates swing with the machine's load; a ratio within one run (same minute) does not.
    ratio = {k: statistics.median(raw / t for raw, t in zip(times["raw aiokafka"], v)) for k, v in times.items()}
    return {"events": len(plan), "bytes": sum(len(v) for _, _, v in records), "median_s": med,
            "rate": {k: len(plan) / v for k, v in med.items()}, "ratio": ratio, "runs": runs,
            "all": {k: [len(plan) / t for t in v] for k, v in times.items()}, "build_us": build_cost(s, plan)}


def status_record(s: Settings, i: int) -> tuple[str, bytes, bytes]:
    """The ``i``-th synthetic status record (every tenth not authoritative): (topic, key, value)."""
    ctx, node = f"ctx-{i // 100}", f"node-{i % 100}"
    bad = i % 10 == 0
    rec = {"schema_version": 1, "type": "status", "context_id": ctx, "node_id": node, "level": "leaf",
           "authoritative": not bad, "frozen": False,
           "open_rules": ["orphaned_referent"] if bad else [], "degraded_by": [], "degraded_count": 0,
           "trigger": {"event_id": f"{i}-ev", "type": "artifact", "topic": "artifact-events",
                       "partition": i % PARTITIONS, "offset": i}, "detected_at": None}
    return s.status_topic, status_key(ctx, node), encode(rec)


async def fill_status(s: Settings, n: int) -> float:
    p = kafka_clients.producer(s, linger_ms=20, max_batch_size=512 * 1024)
    await p.start()
    t0 = time.perf_counter()
    try:
        await send_all(p, (status_record(s, i) for i in range(n)))
    finally:
        await p.stop()
    return time.perf_counter() - t0


async def raw_catch_up(s: Settings) -> tuple[float, int]:
    from aiokafka import TopicPartition

    c = kafka_clients.consumer(s, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                               max_partition_fetch_bytes=max(1 << 20, s.max_output_bytes),
                               fetch_max_bytes=max(52428800, s.max_output_bytes))
    await c.start()
    try:
        tps = [TopicPartition(s.status_topic, p) for p in range(PARTITIONS)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        t0 = time.perf_counter()
        end = await c.end_offsets(tps)
        n = 0
        while True:
            batch = await c.getmany(timeout_ms=200, max_records=50_000)
            n += sum(len(v) for v in batch.values())
            positions = [await c.position(tp) for tp in tps]
            if all(pos >= end[tp] for pos, tp in zip(positions, tps)):
                return time.perf_counter() - t0, n
    finally:
        await c.stop()


def timed_lookups(fn: Any, keys: list[tuple[str, str]]) -> float:
    """ns per call of ``fn(ctx, node)`` over ``keys`` (one loop, perf_counter_ns)."""
    t0 = time.perf_counter_ns()
    for c, n in keys:
        fn(c, n)
    return (time.perf_counter_ns() - t0) / len(keys)


def phase_status(settings: Settings, n: int, lookups: int) -> dict[str, Any]:
    s = bench_settings(settings, f"bs-{uuid.uuid4().hex[:6]}")
    asyncio.run(kafka_clients.create_topics(s, [s.status_topic], PARTITIONS, compacted=True))
    fill_s = asyncio.run(fill_status(s, n))
    say(f"filled {n:,} status records in {fill_s:.1f}s")
    raw_s, raw_n = asyncio.run(raw_catch_up(s))
    say(f"raw consumer read {raw_n:,} records in {raw_s:.2f}s")
    gc.collect()
    rss0 = proc_status_self()
    view = StatusView(s, details=False)
    t0 = time.perf_counter()
    view.start(timeout=600)
    catch_s = time.perf_counter() - t0
    gc.collect()
    rss1 = proc_status_self()
    assert len(view) == n, (len(view), n)
    say(f"StatusView caught up {len(view):,} nodes in {catch_s:.2f}s")
    rng = random.Random(7)
    present = [(f"ctx-{i // 100}", f"node-{i % 100}") for i in (rng.randrange(n) for _ in range(lookups))]
    absent = [(f"ctx-{i // 100}", f"missing-{i % 100}") for i in (rng.randrange(n) for _ in range(lookups))]
    table = view._view._table
    ref_get = lambda c, n: table.get((c, n))  # noqa: E731  the floor: a dict lookup through a call
    out = {
        "records": n, "fill_s": fill_s, "raw_s": raw_s, "catch_s": catch_s,
        "rss_mib": (rss1 - rss0) / 1024 / 1024, "lookups": lookups,
        "ns": {
            "dict.get (reference)": timed_lookups(ref_get, present),
            "is_authoritative, present": timed_lookups(view.is_authoritative, present),
            "is_authoritative, absent": timed_lookups(view.is_authoritative, absent),
            "why, present": timed_lookups(view.why, present),
            "AsyncStatusView.is_authoritative, present": timed_lookups(view._view.is_authoritative, present),
        },
        "not_authoritative": sum(not view.is_authoritative(c, n_) for c, n_ in present[:10_000]),
    }
    view.stop()
    return out


def proc_status_self() -> int:
    import os

    return proc_status(os.getpid()).get("VmRSS", 0)


def phase_rwy(settings: Settings, samples: int, tmp: Path) -> dict[str, Any]:
    s = bench_settings(settings, f"br-{uuid.uuid4().hex[:6]}")
    asyncio.run(create_topics_ready(s, [s.compaction_topic, s.artifact_topic, s.alerts_topic, s.verdicts_topic,
                                        s.deadletter_topic]))
    asyncio.run(kafka_clients.create_topics(s, [s.status_topic], PARTITIONS, compacted=True))
    worker = WorkerProc(s, s.app_id, s.input_topics, s.output_topics, tmp / "worker", tmp / "worker.log",
                        extra_env={"CG_STATUS_TOPIC": s.status_topic})
    worker.start()
    lat: list[float] = []
    seen = 0
    try:
        worker.wait_ready()
        with Guard(s) as g, StatusView(s) as view:
            for i in range(samples):
                ctx = g.context(f"rwy-{i}")
                ctx.admitted("a1")
                ctx.checkpoint("leaf", "leaf", referents=["a1"])
                ctx.evicted("a1")
                ctx.flush()
                t0 = time.perf_counter()
                view.wait_for(ctx, timeout=60)
                lat.append(time.perf_counter() - t0)
                seen += view.why(f"rwy-{i}", "leaf").open_rules == ("orphaned_referent",)
    finally:
        worker.stop()
    lat.sort()
    return {"samples": samples, "p50": statistics.median(lat), "p95": lat[int(0.95 * (len(lat) - 1))],
            "max": lat[-1], "status_seen": seen}


def render(argv: list[str], res: dict[str, Any], kafka: str, t_start: float, load_start: str, title: str) -> str:
    lines = [f"## {title}", "", f"Command: `{command_line('bench/bench_client.py', argv)}`", "",
             machine_line(), software_line(kafka), ""]
    if "produce" in res:
        p = res["produce"]
        lines += ["**A. Produce rate** — the same events (rounds of 3 admissions, a leaf checkpoint and an eviction, "
                  "over 100 contexts) "
                  f"to the two input topics ({PARTITIONS} partitions); {p['events']:,} events, "
                  f"{p['bytes'] / 1024 / 1024:.1f} MiB; median of {p['runs']} run(s); first call -> every record "
                  "acknowledged.", "",
                  "| producer | events/s (median) | each run | vs raw aiokafka (median of the runs' ratios) |",
                  "|---|---:|---:|---:|"]
        for k, v in p["rate"].items():
            runs_text = ", ".join(f"{x:,.0f}" for x in p["all"][k])
            lines.append(f"| {k} | {v:,.0f} | {runs_text} | {p['ratio'][k]:.2f} |")
        lines += ["", f"The client's own CPU per event before the producer (validation by `wire.decode_event`, "
                  f"event id, JSON), in process: {p['build_us']:.1f} µs.", ""]
    if "status" in res:
        st = res["status"]
        lines += [f"**B. StatusView at {st['records']:,} status records** (distinct nodes, 100 per context).", "",
                  "| catch-up (start -> table complete) | seconds | records/s |", "|---|---:|---:|",
                  f"| raw aiokafka consumer, no parsing (reference) | {st['raw_s']:.2f} | "
                  f"{st['records'] / st['raw_s']:,.0f} |",
                  f"| StatusView.start() | {st['catch_s']:.2f} | {st['records'] / st['catch_s']:,.0f} |", "",
                  f"Ratio {st['catch_s'] / st['raw_s']:.2f}x the raw read; the table grew this process's RSS by "
                  f"{st['rss_mib']:,.0f} MiB ({st['rss_mib'] * 1024 * 1024 / st['records']:,.0f} B/node). "
                  f"Filling the topic took {st['fill_s']:.1f} s.", "",
                  f"| lookup ({st['lookups']:,} random keys) | µs/call | vs dict.get |", "|---|---:|---:|"]
        ref = st["ns"]["dict.get (reference)"]
        for k, v in st["ns"].items():
            lines.append(f"| {k} | {v / 1000:.3f} | {v / ref:.2f} |")
        lines.append("")
    if "rwy" in res:
        r = res["rwy"]
        lines += [f"**C. Read-your-writes** — {r['samples']} samples: flush() returned -> wait_for() returned "
                  f"(worker group committed past the events, status partition read to its end): p50 "
                  f"{r['p50'] * 1000:.0f} ms, p95 {r['p95'] * 1000:.0f} ms, max {r['max'] * 1000:.0f} ms; the view "
                  f"showed the orphaned leaf not authoritative right after in {r['status_seen']}/{r['samples']}.", ""]
    return report_end(lines, [], t_start, load_start)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = part_parser("bench/bench_client.py", __doc__)
    ap.add_argument("--phases", default="produce,status,rwy", help="comma list of produce, status, rwy")
    ap.add_argument("--events", type=int, default=None, help="events per produce run (default 100000; quick 10000)")
    ap.add_argument("--runs", type=int, default=None, help="produce runs (default 3; quick 1)")
    ap.add_argument("--status-records", type=int, default=None, help="status records (default 1000000; quick 100000)")
    ap.add_argument("--lookups", type=int, default=None, help="random keys per lookup figure (default 1000000)")
    ap.add_argument("--samples", type=int, default=None, help="read-your-writes samples (default 30; quick 5)")
    add_part_args(ap, title="9. The pipeline client: produce rate, StatusView lookups and catch-up")
    args = ap.parse_args(argv)
    phases = [p for p in args.phases.split(",") if p]
    n_events = args.events or (10_000 if args.quick else 100_000)
    runs = args.runs or (1 if args.quick else 3)
    n_status = args.status_records or (100_000 if args.quick else 1_000_000)
    lookups = args.lookups or (200_000 if args.quick else 1_000_000)
    samples = args.samples or (5 if args.quick else 30)
    t_start, load_start = time.monotonic(), loadavg()
    res: dict[str, Any] = {}
    with broker(args.bootstrap, kafka_port=args.kafka_port) as (settings, kafka), \
            tempfile.TemporaryDirectory(prefix="cg-bench-client-") as tmp:
        if "produce" in phases:
            res["produce"] = phase_produce(settings, n_events, runs)
        if "status" in phases:
            res["status"] = phase_status(settings, n_status, lookups)
        if "rwy" in phases:
            res["rwy"] = phase_rwy(settings, samples, Path(tmp))
    summary = []
    if "produce" in res:
        p = res["produce"]["rate"]
        summary.append(f"client {p['AsyncGuard']:,.0f} ev/s async / {p['Guard (sync)']:,.0f} sync vs raw aiokafka "
                       f"{p['raw aiokafka']:,.0f} ({res['produce']['ratio']['AsyncGuard']:.2f}x / "
                       f"{res['produce']['ratio']['Guard (sync)']:.2f}x)")
    if "status" in res:
        st = res["status"]
        summary.append(f"StatusView: {st['records']:,} records caught up in {st['catch_s']:.1f}s, "
                       f"is_authoritative {st['ns']['is_authoritative, present'] / 1000:.2f} µs")
    if "rwy" in res:
        summary.append(f"wait_for p50 {res['rwy']['p50'] * 1000:.0f} ms")
    write_out(args.out, render(argv, res, kafka, t_start, load_start, args.title), "; ".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
