"""State at scale: a worker holding N artifacts — fill rate, memory, disk, restore-to-ready.

    python -m bench.bench_state [--artifacts 1000000] [--quick] [--out FILE]

Part 5 of ``make bench``.
How it measures, and why: bench/METHODS.md "bench_state.py".
"""

from __future__ import annotations

import argparse
import asyncio
import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench.common import (
    Poller, WorkerProc, add_part_args, broker, cpu_seconds, create_topic_set, du, loadavg, log_extent, mib,
    part_parser, report_end, report_head, say, topic_set, write_out,
)
from stream.adapters import encode_event

RESTORED = re.compile(r"partition (\d+): state restored \((\d+) log entries\) in ([\d.]+)s")

def state_events(n_artifacts: int, contexts: int, leaf_every: int, seed: int = 0) -> Iterator[tuple[str, str, bytes]]:
    """(type, context, line) of the fill stream, contexts round-robin, lazily."""
    rng = random.Random(seed)
    seq = [0] * contexts
    made = [0] * contexts
    leaves = [0] * contexts
    for i in range(n_artifacts):
        c = i % contexts
        ctx = f"state-{c:03d}"
        k = made[c]
        made[c] += 1
        ev = {"type": "artifact", "schema_version": 1, "event_id": f"{ctx}/e{seq[c]}", "context_id": ctx,
              "seq": seq[c], "artifact_id": f"tool:call-{k:07d}", "op": "admitted", "tier": "live",
              "kind": "tool_output"}
        seq[c] += 1
        yield "artifact", ctx, encode_event(ev).encode()
        if made[c] % leaf_every == 0:
            recent = range(max(0, k - leaf_every + 1), k + 1)
            refs = sorted(f"tool:call-{j:07d}" for j in rng.sample(list(recent), min(4, len(recent))))
            leaf = {"type": "checkpoint", "schema_version": 1, "event_id": f"{ctx}/e{seq[c]}",
                    "context_id": ctx, "seq": seq[c], "node_id": f"leaf-{leaves[c]:06d}", "level": "leaf",
                    "referents": refs, "text": "Ran the tool calls and summarized their output.",
                    "raw_negative_constraints": ["Do not modify tests"],
                    "negative_constraints": ["Do not modify tests"]}
            leaves[c] += 1
            seq[c] += 1
            yield "checkpoint", ctx, encode_event(leaf).encode()


async def produce(args: argparse.Namespace, settings: Any, inputs: tuple[str, str]) -> dict[str, Any]:
    """The whole fill stream into the input topics, in chunks; counts and seconds."""
    from stream.kafka_clients import producer

    topic = {"checkpoint": inputs[0], "artifact": inputs[1]}
    p = producer(settings, enable_idempotence=True, linger_ms=20, max_batch_size=512 * 1024)
    await p.start()
    events = artifacts = 0
    t0 = time.monotonic()
    try:
        futs = []
        for kind, ctx, line in state_events(args.artifacts, args.contexts, args.leaf_every):
            futs.append(await p.send(topic[kind], line, key=ctx.encode()))
            events += 1
            artifacts += kind == "artifact"
            if len(futs) >= 20_000:
                await asyncio.gather(*futs)
                futs = []
        await asyncio.gather(*futs)
    finally:
        await p.stop()
    return {"events": events, "artifacts": artifacts, "seconds": time.monotonic() - t0}


async def fill(args: argparse.Namespace, settings: Any, w: WorkerProc, inputs: tuple[str, str],
               total: int) -> dict[str, Any]:
    """Wait until the worker processed the backlog; the rate from its events_total counter."""
    snaps: list[tuple[float, int, float]] = []
    async with Poller(settings) as poll:
        ends = await poll.end_map(inputs)
        t_start = time.monotonic()
        while True:
            w.check_alive()
            n = await asyncio.to_thread(w.events_processed, 2.0)
            now = time.monotonic()
            if n and (not snaps or n != snaps[-1][1]):
                snaps.append((now, n, cpu_seconds(w.pid)))
            if n >= total:
                break
            if now - t_start > args.fill_budget:
                raise RuntimeError(f"the worker processed {n:,} of {total:,} events in {args.fill_budget:.0f}s "
                                   "(--fill-budget)")
            await asyncio.sleep(0.2)
        while await poll.committed(w.app_id, ends) < total:
            w.check_alive()
            if time.monotonic() - snaps[-1][0] > 120:
                raise RuntimeError("offsets not committed 120 s after the last event was processed")
            await asyncio.sleep(0.1)
        t_durable = time.monotonic()
    (t0, n0, c0), (t1, n1, c1) = snaps[0], snaps[-1]

    def t_at(count: int) -> float:
        return next(t for t, d, _ in snaps if d >= count)

    q1 = total // 4
    first_q = (q1 - n0) / max(t_at(q1) - t0, 1e-9) if q1 > n0 else float("nan")
    last_q = (n1 - t_q3) / max(t1 - t_at(t_q3), 1e-9) if (t_q3 := 3 * q1) < n1 else float("nan")
    return {"events": n1 - n0, "seconds": t1 - t0, "rate": (n1 - n0) / max(t1 - t0, 1e-9),
            "cpu_us": 1e6 * (c1 - c0) / max(n1 - n0, 1), "first_q": first_q, "last_q": last_q,
            "durable": t_durable - t0}


def broker_disk(data: Path | None, topic: str) -> int | None:
    """Bytes on disk of a topic's partitions in the broker's log dir (None if unknown)."""
    if data is None or not data.is_dir():
        return None
    return sum(du(p)[1] for p in data.iterdir() if p.name.rsplit("-", 1)[0] == topic)


def restart(settings: Any, base: WorkerProc, data_dir: Path, label: str, tmp: Path,
            timeout: float) -> dict[str, Any]:
    w = WorkerProc(settings, base.app_id, base.inputs, base.outputs, data_dir, tmp / f"{label}.log",
                   loglevel="info")
    w.start()
    try:
        ready, body = w.wait_ready(timeout)
        time.sleep(0.5)
        mem = w.memory()
        size = du(data_dir)[1]
    finally:
        stop_s = w.stop()
    restored = [(int(p), int(n), float(s)) for p, n, s in RESTORED.findall(w.log_path.read_text(errors="replace"))]
    entries = sum(n for _, n, _ in restored)
    slowest = max((s for _, _, s in restored), default=float("nan"))
    say(f"restart ({label}): ready {ready:.1f}s after start; {entries:,} state-log entries restored "
        f"(slowest partition {slowest:.1f}s); RSS {mib(mem.get('VmRSS', 0))}; data dir {mib(size)}")
    return {"ready": ready, "rss": mem.get("VmRSS", 0), "hwm": mem.get("VmHWM", 0), "disk": size,
            "stop": stop_s, "partitions": body.get("partitions"), "entries": entries, "slowest": slowest,
            "restored": restored}


def run(args: argparse.Namespace, settings: Any, tmp: Path, res: dict[str, Any]) -> None:
    tag = f"st-{uuid.uuid4().hex[:6]}"
    inputs, outputs = topic_set(tag)
    asyncio.run(create_topic_set(settings, inputs, outputs))
    res["produce"] = asyncio.run(produce(args, settings, inputs))
    pr = res["produce"]
    say(f"produced {pr['artifacts']:,} artifacts ({pr['events']:,} events) in {pr['seconds']:.1f}s")
    data1 = tmp / "data-1"
    w = WorkerProc(settings, f"bs-{tag}", inputs, outputs, data1, tmp / "fill.log", loglevel=args.worker_loglevel)
    w.start()
    try:
        res["fill"] = asyncio.run(fill(args, settings, w, inputs, pr["events"]))
        f = res["fill"]
        say(f"fill: {f['events']:,} events in {f['seconds']:.1f}s = {f['rate']:,.0f} events/s "
            f"({f['cpu_us']:,.0f} CPU µs/event; first quarter {f['first_q']:,.0f}/s, last {f['last_q']:,.0f}/s); "
            f"durable after {f['durable']:.1f}s")
        time.sleep(1.0)
        mem = w.memory()
        res["filled"] = {"rss": mem.get("VmRSS", 0), "hwm": mem.get("VmHWM", 0), "disk": du(data1)[1],
                         "apparent": du(data1)[0]}
        log_name = settings.model_copy(update={"app_id": w.app_id}).state_topic
        res["log_records"] = asyncio.run(log_extent(settings, log_name))
        data = (Path(args.broker_data) if args.broker_data
                else None if args.bootstrap else Path(settings.kafka_home) / "data")
        res["broker_disk"] = broker_disk(data, log_name)
        say(f"filled: RSS {mib(res['filled']['rss'])} (peak {mib(res['filled']['hwm'])}), RocksDB "
            f"{mib(res['filled']['disk'])}; state log {res['log_records']:,} records"
            + (f", {mib(res['broker_disk'])} on the broker's disk" if res["broker_disk"] is not None else ""))
    finally:
        res["stop"] = w.stop(timeout=120)
    res["kept"] = restart(settings, w, data1, "data-dir-kept", tmp, args.timeout)
    res["rebuilt"] = restart(settings, w, tmp / "data-fresh", "empty-data-dir", tmp, args.timeout)


def render(argv: list[str], args: argparse.Namespace, kafka: str, res: dict[str, Any], errors: list[str],
           t_start: float, load_start: str) -> str:
    lines = report_head(args.title, "bench/bench_state.py", argv,
                        f". One worker, `-l {args.worker_loglevel}` (restarts `-l info`), RocksDB, 4 partitions; "
                        f"{args.contexts} contexts, a leaf checkpoint (4 referents) every {args.leaf_every} artifacts.",
                        kafka=kafka)
    if "fill" in res:
        pr, f, filled = res["produce"], res["fill"], res["filled"]
        lines += [
            f"**Fill**: {pr['artifacts']:,} artifacts ({pr['events']:,} events incl. checkpoints), produced "
            f"first ({pr['seconds']:.0f} s), then processed once by a worker with an empty data dir: "
            f"**{f['rate']:,.0f} events/s** ({f['cpu_us']:,.0f} CPU µs/event; {f['first_q']:,.0f}/s over the "
            f"first quarter of the events, {f['last_q']:,.0f}/s over the last), {f['seconds']:.0f} s from the "
            f"first to the last event; offsets committed {f['durable']:.0f} s after the first.",
            "",
            "| | value |",
            "|---|---:|",
            f"| worker RSS, idle after the fill (peak VmHWM) | {mib(filled['rss'])} ({mib(filled['hwm'])}) |",
            f"| RocksDB data dir on disk | {mib(filled['disk'])} |",
            f"| state log `<app_id>-state`: records (all partitions) | {res['log_records']:,} |",
        ]
        if res.get("broker_disk") is not None:
            lines.append(f"| state log on the broker's disk | {mib(res['broker_disk'])} |")
        for key, name in (("kept", "restart, data dir kept"), ("rebuilt", "**restore, empty data dir** (goal ≤ 60 s)")):
            if key in res:
                r = res[key]
                lines += [
                    f"| {name}: start → `/readyz` 200 | **{r['ready']:.1f} s** |",
                    f"| {name}: state-log entries replayed (slowest partition) | {r['entries']:,} "
                    f"({r['slowest']:.1f} s) |",
                    f"| {name}: RSS when ready / data dir | {mib(r['rss'])} / {mib(r['disk'])} |",
                ]
        lines += [
            "",
            f"Stop (SIGTERM → exit) after the fill: {res.get('stop', float('nan')):.1f} s. *ready*: seconds from "
            "process start (Python and faust start-up, group join, assignment included) until `GET /readyz` "
            "answers 200 (every assigned partition's state restored). *entries replayed*: the keys the restored "
            "state-log records carried, from each partition's `state restored (N log entries) in S s` log line. "
            "*RSS*: `VmRSS` of the worker process from `/proc` (the RocksDB block cache and memtables included). "
            "*Fill rate*: the worker's `events_total` at `/metrics` polled every 0.2 s.",
            "",
        ]
    return report_end(lines, errors, t_start, load_start)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = part_parser("bench/bench_state.py", __doc__)
    ap.add_argument("--artifacts", type=int, default=None, help="artifacts to track (default 1000000; quick 20000)")
    ap.add_argument("--fill-budget", type=float, default=None,
                    help="most seconds the worker may take to process the fill (default 1800; quick 120)")
    ap.add_argument("--contexts", type=int, default=16, help="contexts the artifacts are spread over (default 16)")
    ap.add_argument("--leaf-every", type=int, default=16, help="a leaf checkpoint every N artifacts (default 16)")
    ap.add_argument("--broker-data", metavar="DIR",
                    help="the broker's log dir, to report the changelog topics' size on disk (known when the "
                         "bench starts the broker itself)")
    add_part_args(ap, title="5. State at scale: memory, disk, restart-to-ready", quick="20,000 artifacts",
                  worker_timeout="seconds for a worker to get ready / to drain")
    args = ap.parse_args(argv)
    args.artifacts = args.artifacts or (20_000 if args.quick else 1_000_000)
    args.fill_budget = args.fill_budget or (120.0 if args.quick else 1800.0)
    t_start, load_start = time.monotonic(), loadavg()
    tmp = Path(tempfile.mkdtemp(prefix="cg-bench-state-"))
    res: dict[str, Any] = {}
    errors: list[str] = []
    kafka = "?"
    try:
        with broker(args.bootstrap, kafka_port=args.kafka_port, tmp=tmp) as (settings, kafka):
            try:
                run(args, settings, tmp, res)
            except Exception as exc:
                say(f"FAILED: {exc}")
                errors.append(str(exc).splitlines()[0] if str(exc) else repr(exc))
    finally:
        WorkerProc.stop_all()
        if errors:
            say(f"logs kept in {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    summary = "no result"
    if "fill" in res and "rebuilt" in res:
        f, pr = res["fill"], res["produce"]
        summary = (f"{pr['artifacts']:,} artifacts: fill {f['rate']:,.0f} events/s, RSS {mib(res['filled']['rss'])}, "
                   f"RocksDB {mib(res['filled']['disk'])}, state log {res['log_records']:,} records; ready "
                   f"{res['kept']['ready']:.1f} s (data dir kept) / **{res['rebuilt']['ready']:.1f} s** "
                   f"(empty data dir, {res['rebuilt']['entries']:,} entries restored; goal <= 60 s)")
    write_out(args.out, render(argv, args, kafka, res, errors, t_start, load_start), summary)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
