"""What bounds the worker: the same topics through four consumers, side by side in one run.

``python -m bench.bench_floor [--bootstrap HOST:PORT] [--copies N] [--out FILE]``

The real-input stream (``--copies`` times, each copy under its own context ids, so
nothing is a duplicate) is produced once into fresh topics; then, one after the other,
each of these reads all of it and the rate from its first to its last event is taken:

More (the module notes): bench/METHODS.md, section ``bench/bench_floor.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench.bench_worker import real_events
from bench.common import (
    PARTITIONS, REPO, WorkerProc, add_part_args, broker, command_line, copies_of, cpu_seconds, create_topics_ready,
    loadavg, machine_line, part_footer, part_parser, pdeathsig, produce_events, say, software_line, topic_set,
    utc_now, write_out,
)
from stream.adapters.simulated.model import DEFAULT_TRACES


async def raw_rate(settings: Any, inputs: tuple[str, str], total: int) -> dict[str, float]:
    from aiokafka import TopicPartition

    from stream.kafka_clients import consumer

    c = consumer(settings, enable_auto_commit=False, group_id=None, max_partition_fetch_bytes=4 << 20)
    await c.start()
    try:
        c.assign([TopicPartition(t, p) for t in inputs for p in range(PARTITIONS)])
        await c.seek_to_beginning()
        # From the first fetch on (a raw loop has no start-up to exclude).
        n, t0, cpu0 = 0, time.monotonic(), time.process_time()
        while n < total:
            batch = await c.getmany(timeout_ms=1000)
            n += sum(len(v) for v in batch.values())
        return {"seconds": time.monotonic() - t0, "cpu": time.process_time() - cpu0, "n": n}
    finally:
        await c.stop()


def faust_rate(settings: Any, inputs: tuple[str, str], total: int, mode: str, log: Path) -> dict[str, float]:
    env = dict(os.environ, FLOOR_MODE=mode, FLOOR_EXPECT=str(total), FLOOR_TOPICS=",".join(inputs),
               FLOOR_BROKER=settings.broker, FLOOR_APP_ID=f"cg-floor-{mode}-{uuid.uuid4().hex[:6]}")
    data = tempfile.mkdtemp(prefix="cg-floor-")
    with open(log, "wb") as err:
        p = subprocess.run(
            [sys.executable, "-m", "faust", "-A", "bench.floor_app", "--datadir", data, "worker", "-l", "warn",
             "--without-web"],
            env=env, cwd=REPO, stdout=err, stderr=err,
            timeout=900, preexec_fn=pdeathsig,
        )
    marks = {}
    # faust routes print() into its log (stderr), so the marks are read from there.
    for line in log.read_text(errors="replace").splitlines():
        at = line.find('{"mark"')
        if at >= 0:
            m = json.loads(line[at:])
            marks[m["mark"]] = m
    if "done" not in marks:
        raise RuntimeError(f"faust {mode} floor did not finish (exit {p.returncode}); log {log}")
    first, done = marks["first"], marks["done"]
    return {"seconds": done["t"] - first["t"], "cpu": done["cpu"] - first["cpu"], "n": done["n"] - first["n"]}


async def worker_rate(settings: Any, inputs: tuple[str, str], outputs: tuple[str, ...], total: int,
                      tmp: Path) -> dict[str, float]:
    app_id = f"cg-floor-worker-{uuid.uuid4().hex[:6]}"
    w = WorkerProc(settings, app_id, inputs, outputs, tmp / "data", tmp / "worker.log").start()
    try:
        t0 = cpu0 = None
        last = (0, time.monotonic())
        cpu_last = 0.0
        while True:
            w.check_alive()
            n = w.events_processed()
            now = time.monotonic()
            if n and t0 is None:
                t0, cpu0 = now, cpu_seconds(w.pid)
            if n != last[0]:
                last = (n, now)
                cpu_last = cpu_seconds(w.pid)
            if n >= total or (t0 is not None and now - last[1] > 10):
                break
            await asyncio.sleep(0.05)
        if last[1] <= t0:
            raise RuntimeError(f"the worker processed all {last[0]:,} events between two polls: use more (--copies)")
        return {"seconds": last[1] - t0, "cpu": cpu_last - cpu0, "n": last[0]}
    finally:
        w.stop()


def main(argv: list[str] | None = None) -> int:
    ap = part_parser("bench/bench_floor.py", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=3, help="copies of the real stream (default 3: ~55k events)")
    ap.add_argument("--traces-limit", type=int, default=None, help="only this many trajectories (quick)")
    add_part_args(ap, title="What bounds the worker: faust's floor", quick="1 copy of the real stream")
    args = ap.parse_args(argv)
    if args.quick:  # the whole stream once: 4 trajectories were done between two polls of a fast worker
        args.copies = 1
    t_start, load0 = time.monotonic(), loadavg()
    events = copies_of(real_events([str(DEFAULT_TRACES)], args.traces_limit), args.copies)
    total = len(events)
    rows = []
    with broker(args.bootstrap, kafka_port=args.kafka_port) as (settings, kafka_text):
        tag = f"floor-{uuid.uuid4().hex[:6]}"
        inputs, outputs = topic_set(tag)
        asyncio.run(create_topics_ready(settings, [*inputs, *outputs]))
        say(f"producing {total:,} events")
        asyncio.run(produce_events(settings, inputs, events))
        with tempfile.TemporaryDirectory(prefix="cg-floor-") as tmpd:
            tmp = Path(tmpd)
            say("raw aiokafka loop")
            rows.append(("raw aiokafka consume loop (getmany)", asyncio.run(raw_rate(settings, inputs, total))))
            for mode, label in (("events", "faust agent, no-op, stream.events()"),
                                ("take", "faust agent, no-op, stream.take_events(500, 5 ms)"),
                                ("compat", "faust agent, no-op, checkpoint-guard's delivery (stream.worker.compat)")):
                say(label)
                rows.append((label, faust_rate(settings, inputs, total, mode, tmp / f"floor-{mode}.log")))
            say("checkpoint-guard worker")
            rows.append(("checkpoint-guard worker (python -m stream worker)",
                         asyncio.run(worker_rate(settings, inputs, outputs, total, tmp))))
    raw = rows[0][1]["n"] / rows[0][1]["seconds"]
    lines = [
        f"## {args.title} ({utc_now()})", "",
        f"Command: `{command_line('bench/bench_floor.py', sys.argv[1:] if argv is None else argv)}`", "",
        f"- {machine_line()}", f"- {software_line(kafka_text)}",
        f"- {total:,} events (the real-input stream x {args.copies}, 4 partitions per topic), pre-filled; "
        "each consumer reads all of them once, one after the other.", "",
        "| consumer | events/s | / raw | CPU µs/event (its process) |", "|---|---|---|---|",
    ]
    for label, r in rows:
        rate = r["n"] / r["seconds"] if r["seconds"] > 0 else float("inf")
        lines.append(f"| {label} | {rate:,.0f} | {rate / raw:.4f} (1/{raw / rate:,.0f}) | "
                     f"{1e6 * r['cpu'] / max(r['n'], 1):,.1f} |")
    lines += ["", "Rates run from each consumer's first event to its last (start-up excluded). The "
              "no-op faust agents bound what any faust agent can reach here; the worker's own "
              "processing is the gap between the batched no-op and the worker.", "",
              part_footer(t_start, load0)]
    text = "\n".join(lines) + "\n"
    worker = rows[-1][1]["n"] / rows[-1][1]["seconds"]
    take = rows[2][1]["n"] / rows[2][1]["seconds"]
    write_out(args.out, text, f"worker {worker:,.0f} ev/s = {worker / raw:.4f} of raw; "
              f"a no-op faust agent reaches {take / raw:.3f} of raw")
    return 0


if __name__ == "__main__":
    sys.exit(main())
