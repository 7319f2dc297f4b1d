"""State at scale: a worker tracking N artifacts — memory, disk, restart-to-ready.

    python bench/bench_state.py [--artifacts 1000000] [--fill-budget 900] [--quick] [--out FILE]

1. **fill**: one ``python -m stream worker`` (RocksDB, fresh app id and data dir) is
   started and waited for (``/readyz`` 200); then N artifact admissions are produced over
   ``--contexts`` contexts (round-robin, per-context ``seq``), with a leaf checkpoint every
   ``--leaf-every`` artifacts referencing 4 of the context's recent ones (so the nodes and
   dependents tables grow too). Events are produced in chunks, never more than
   ``--lookahead`` ahead of the group's committed offsets, so the worker always has a
   backlog but nothing is left unconsumed when the fill stops. The fill stops producing
   when N is reached or ``--fill-budget`` seconds have passed — then the worker drains
   what was produced. **Ingest rate** = events ÷ (first produced → committed offsets at
   the end), also for the first and last quarter of the fill (does it slow as state grows?).
2. **size**: with the worker idle, its RSS (``VmRSS``, and the peak ``VmHWM``) from
   ``/proc``, the RocksDB data dir on disk (``du``), and the changelog topics' record count
   (and their size on the broker's disk when the bench started the broker).
3. **restart, RocksDB kept**: SIGTERM, then a new worker on the same data dir; seconds from
   process start until ``/readyz`` answers 200 (tables recovered, partitions assigned).
4. **restart, tables rebuilt from the changelog**: SIGTERM, then a new worker on a fresh,
   empty data dir (a new machine / a lost disk): faust reads every changelog topic from
   the beginning before ``/readyz`` turns 200.

A worker's cold start on empty state (step 1) is the baseline of both restart figures.
When the budget stopped the fill before N, every size and time is also **extrapolated
linearly** to N from the per-artifact figures measured (labelled as such).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    Poller, WorkerProc, add_broker_args, broker, command_line, create_topics_ready, du, loadavg,
    machine_line, mib, part_footer, say, software_line, topic_set, write_out,
)
from stream.adapters import encode_event  # noqa: E402
from stream.domain.state import TABLES  # noqa: E402


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


async def fill(args: argparse.Namespace, settings: Any, w: WorkerProc, inputs: tuple[str, str]) -> dict[str, Any]:
    from aiokafka import TopicPartition

    from stream.kafka_clients import producer

    gen = state_events(args.artifacts, args.contexts, args.leaf_every)
    topic = {"checkpoint": inputs[0], "artifact": inputs[1]}
    p = producer(settings, enable_idempotence=True, linger_ms=20, max_batch_size=512 * 1024)
    await p.start()
    produced = artifacts = 0
    snaps: list[tuple[float, int]] = []
    exhausted = budget_hit = False
    async with Poller(settings) as poll:
        tps = [TopicPartition(t, i) for t in inputs for i in range(4)]
        t0 = time.monotonic()
        try:
            while True:
                now = time.monotonic()
                # ends: what is produced so far (a huge value for the partitions not yet written).
                done = await poll.committed(w.app_id, {tp: 1 << 62 for tp in tps})
                snaps.append((now, done))
                if (exhausted or budget_hit) and done >= produced:
                    break
                w.check_alive()
                if not exhausted and not budget_hit:
                    if now - t0 >= args.fill_budget:
                        budget_hit = True
                        say(f"fill budget of {args.fill_budget:.0f}s reached at {artifacts:,} artifacts "
                            f"({produced:,} events); draining")
                    elif produced - done < args.lookahead:
                        futs = []
                        for _ in range(args.chunk):
                            try:
                                kind, ctx, line = next(gen)
                            except StopIteration:
                                exhausted = True
                                break
                            futs.append(await p.send(topic[kind], line, key=ctx.encode()))
                            produced += 1
                            artifacts += kind == "artifact"
                        await asyncio.gather(*futs)
                        continue
                if now - t0 > args.fill_budget + args.timeout:
                    raise RuntimeError(f"the worker did not drain {produced} events in time ({done} done)")
                await asyncio.sleep(0.2)
        finally:
            await p.stop()
    t_end = snaps[-1][0]
    wall = t_end - t0
    # Rate over the first and last quarter of the events (from the commit snapshots).
    def t_at(count: int) -> float:
        return next(t for t, d in snaps if d >= count)

    q1 = produced // 4
    first_q = q1 / max(t_at(q1) - t0, 1e-9) if q1 else float("nan")
    last_q = (produced - 3 * q1) / max(t_end - t_at(3 * q1), 1e-9) if q1 else float("nan")
    return {"events": produced, "artifacts": artifacts, "wall": wall, "rate": produced / wall,
            "first_q": first_q, "last_q": last_q, "budget_hit": budget_hit}


async def changelog_records(settings: Any, app_id: str) -> int:
    async with Poller(settings) as poll:
        return await poll.ends([f"{app_id}-{name}-changelog" for name in (*TABLES, "journal")])


def broker_disk(data: Path | None, app_id: str) -> int | None:
    """Bytes on disk of the app's changelog partitions in the broker's log dir (None if unknown)."""
    if data is None or not data.is_dir():
        return None
    return sum(du(p)[1] for p in data.iterdir() if p.name.startswith(f"{app_id}-"))


def restart(settings: Any, base: WorkerProc, data_dir: Path, label: str, tmp: Path,
            timeout: float) -> dict[str, Any]:
    w = WorkerProc(settings, base.app_id, base.inputs, base.outputs, data_dir, tmp / f"{label}.log",
                   loglevel=base.loglevel)
    w.start()
    try:
        ready, body = w.wait_ready(timeout)
        time.sleep(0.5)
        mem = w.memory()
        size = du(data_dir)[1]
    finally:
        stop_s = w.stop()
    say(f"restart ({label}): ready {ready:.1f}s after start; RSS {mib(mem.get('VmRSS', 0))}; data dir {mib(size)}")
    return {"ready": ready, "rss": mem.get("VmRSS", 0), "hwm": mem.get("VmHWM", 0), "disk": size,
            "stop": stop_s, "partitions": body.get("partitions")}


def run(args: argparse.Namespace, settings: Any, tmp: Path, res: dict[str, Any]) -> None:
    tag = f"st-{uuid.uuid4().hex[:6]}"
    inputs, outputs = topic_set(tag)
    asyncio.run(create_topics_ready(settings, [*inputs, *outputs]))
    data1 = tmp / "data-1"
    w = WorkerProc(settings, f"bs-{tag}", inputs, outputs, data1, tmp / "fill.log", loglevel=args.worker_loglevel)
    w.start()
    try:
        cold, _ = w.wait_ready(args.timeout)
        time.sleep(0.5)
        res["cold"] = {"ready": cold, "rss": w.memory().get("VmRSS", 0), "disk": du(data1)[1]}
        say(f"cold start on empty state: ready {cold:.1f}s; RSS {mib(res['cold']['rss'])}")
        res["fill"] = asyncio.run(fill(args, settings, w, inputs))
        f = res["fill"]
        say(f"fill: {f['artifacts']:,} artifacts ({f['events']:,} events) in {f['wall']:.1f}s = "
            f"{f['rate']:,.0f} events/s (first quarter {f['first_q']:,.0f}/s, last {f['last_q']:,.0f}/s)")
        time.sleep(1.0)
        mem = w.memory()
        res["filled"] = {"rss": mem.get("VmRSS", 0), "hwm": mem.get("VmHWM", 0), "disk": du(data1)[1],
                         "apparent": du(data1)[0]}
        res["changelog_records"] = asyncio.run(changelog_records(settings, w.app_id))
        data = (Path(args.broker_data) if args.broker_data
                else None if args.bootstrap else Path(settings.kafka_home) / "data")
        res["broker_disk"] = broker_disk(data, w.app_id)
        say(f"filled: RSS {mib(res['filled']['rss'])} (peak {mib(res['filled']['hwm'])}), RocksDB "
            f"{mib(res['filled']['disk'])}, {res['changelog_records']:,} changelog records")
    finally:
        res["stop"] = w.stop(timeout=120)
    res["kept"] = restart(settings, w, data1, "rocksdb-kept", tmp, args.timeout)
    res["rebuilt"] = restart(settings, w, tmp / "data-fresh", "rebuilt-from-changelog", tmp, args.timeout)


def render(argv: list[str], args: argparse.Namespace, kafka: str, res: dict[str, Any], errors: list[str],
           t_start: float, load_start: str) -> str:
    lines = [
        f"## {args.title}",
        "",
        f"Command: `{command_line('bench/bench_state.py', argv)}`. Machine: {machine_line()}; "
        f"{software_line(kafka)}. One worker, `-l {args.worker_loglevel}`, RocksDB, 4 partitions; "
        f"{args.contexts} contexts, a leaf checkpoint (4 referents) every {args.leaf_every} artifacts.",
        "",
    ]
    if "fill" in res:
        f = res["fill"]
        n, target = f["artifacts"], args.artifacts
        scale = target / max(n, 1)
        cold = res["cold"]
        lines += [
            f"**Fill**: {n:,} artifacts tracked ({f['events']:,} events incl. checkpoints) in {f['wall']:.0f} s: "
            f"**{f['rate']:,.0f} events/s** ({f['first_q']:,.0f}/s over the first quarter of the events, "
            f"{f['last_q']:,.0f}/s over the last)"
            + (f"; stopped by the {args.fill_budget:.0f} s budget before the {target:,} asked for." if f["budget_hit"]
               else "."),
            "",
            "| | measured at " + f"{n:,} artifacts |" + ("" if scale <= 1.0001 else
                                                          f" **extrapolated** to {target:,} (linear) |"),
            "|---|---:|" + ("" if scale <= 1.0001 else "---:|"),
        ]

        def row(name: str, val: float, fmt, base: float | None = 0.0, note: str = "") -> None:
            cells = f"| {name} | {fmt(val)}{note} |"
            if scale > 1.0001:
                cells += f" {fmt(base + (val - base) * scale) if base is not None else 'n/a'} |"
            lines.append(cells)

        filled = res["filled"]
        row("time to ingest (produce → committed)", f["wall"], lambda v: f"{v:,.0f} s" if v < 3600 else f"{v / 3600:.1f} h")
        row("worker RSS, idle after the fill", filled["rss"], mib, cold["rss"], f" (empty: {mib(cold['rss'])})")
        row("worker peak RSS (VmHWM)", filled["hwm"], mib, cold["rss"])
        row("RocksDB data dir on disk", filled["disk"], mib, cold["disk"])
        row("changelog records (all tables + journal)", res["changelog_records"], lambda v: f"{v:,.0f}")
        if res.get("broker_disk") is not None:
            row("changelog topics on the broker's disk", res["broker_disk"], mib)
        if "kept" in res:
            row("restart → ready, RocksDB kept", res["kept"]["ready"], lambda v: f"{v:.1f} s", None,
                f" (cold start on empty state: {cold['ready']:.1f} s)")
            row("  RSS when ready", res["kept"]["rss"], mib, cold["rss"])
        if "rebuilt" in res:
            row("restart → ready, tables rebuilt from the changelog (fresh data dir)", res["rebuilt"]["ready"],
                lambda v: f"{v:.1f} s", cold["ready"])
            row("  RSS when ready", res["rebuilt"]["rss"], mib, cold["rss"])
            row("  rebuilt RocksDB on disk", res["rebuilt"]["disk"], mib, cold["disk"])
        lines += [
            "",
            f"Stop (SIGTERM → exit) after the fill: {res.get('stop', float('nan')):.1f} s. *ready*: seconds from "
            "process start until `GET /readyz` answers 200 (tables recovered, partitions assigned). *RSS*: "
            "`VmRSS` of the worker process from `/proc` (the RocksDB block cache and memtables included). "
            "*Ingest*: events produced in chunks at most "
            f"{args.lookahead:,} ahead of the committed offsets; the end is the committed offsets reaching the "
            "last produced event (faust commits every 2.8 s)."
            + ("" if scale <= 1.0001 else
               f" **Extrapolated** column: the measured value minus the empty-worker baseline, scaled by "
               f"{scale:,.1f} ({target:,} ÷ {n:,}), plus the baseline — a linear model, not a measurement; "
               "the ingest time assumes the measured rate holds; the restart with RocksDB kept replays "
               "nothing and is not modelled (n/a)."),
            "",
        ]
    if errors:
        lines += ["Failed measurements:", ""] + [f"- {e}" for e in errors] + [""]
    lines.append(part_footer(t_start, load_start))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="bench/bench_state.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--artifacts", type=int, default=None, help="artifacts to track (default 1000000; quick 1000)")
    ap.add_argument("--fill-budget", type=float, default=None,
                    help="stop producing after this many seconds (default 900; quick 15); the rest is extrapolated")
    ap.add_argument("--contexts", type=int, default=16, help="contexts the artifacts are spread over (default 16)")
    ap.add_argument("--leaf-every", type=int, default=16, help="a leaf checkpoint every N artifacts (default 16)")
    ap.add_argument("--lookahead", type=int, default=None,
                    help="most events produced ahead of the committed offsets (default 10000; quick 400)")
    ap.add_argument("--chunk", type=int, default=None, help="events per produce chunk (default 2000; quick 200)")
    ap.add_argument("--broker-data", metavar="DIR",
                    help="the broker's log dir, to report the changelog topics' size on disk (known when the "
                         "bench starts the broker itself)")
    ap.add_argument("--worker-loglevel", default="warn")
    ap.add_argument("--timeout", type=float, default=900, help="seconds for a worker to get ready / to drain")
    ap.add_argument("--quick", action="store_true", help="1,000 artifacts, 15 s fill budget")
    ap.add_argument("--title", default="5. State at scale: memory, disk, restart-to-ready")
    ap.add_argument("--out", metavar="FILE")
    add_broker_args(ap)
    args = ap.parse_args(argv)
    args.artifacts = args.artifacts or (1000 if args.quick else 1_000_000)
    args.lookahead = args.lookahead or (400 if args.quick else 10000)
    args.chunk = args.chunk or (200 if args.quick else 2000)
    args.fill_budget = args.fill_budget or (15.0 if args.quick else 900.0)
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
        f, n = res["fill"], res["fill"]["artifacts"]
        summary = (f"{n:,} artifacts: ingest {f['rate']:,.0f} events/s, RSS {mib(res['filled']['rss'])}, RocksDB "
                   f"{mib(res['filled']['disk'])}, restart->ready {res['kept']['ready']:.1f} s (RocksDB kept) / "
                   f"{res['rebuilt']['ready']:.1f} s (rebuilt from the changelog)")
        if n < args.artifacts:
            summary += f" — extrapolated to {args.artifacts:,} in the table"
    write_out(args.out, render(argv, args, kafka, res, errors, t_start, load_start), summary)
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
