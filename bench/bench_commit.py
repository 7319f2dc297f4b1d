"""What one state commit costs: a delta record + offset commit vs a Kafka transaction.

    python -m bench.bench_commit [--quick] [--bootstrap HOST:PORT] [--out FILE]

The measurement behind the worker's durability design (issue 18).
How it measures, and why: bench/METHODS.md "bench_commit.py".
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
import uuid

from bench.common import (
    add_part_args, broker, command_line, loadavg, machine_line, part_parser, report_end, say, software_line,
    write_out,
)


async def _run(settings, entries: int, commits: int) -> dict[str, dict[str, float]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    from stream.kafka_clients import client_kwargs, create_topics, producer

    tag = uuid.uuid4().hex[:8]
    inp, state = f"commit-in-{tag}", f"commit-state-{tag}"
    await create_topics(settings, [inp, state], 1)
    group = f"commit-group-{tag}"
    member = AIOKafkaConsumer(inp, **client_kwargs(settings), group_id=group, enable_auto_commit=False)
    await member.start()
    await member.getmany(timeout_ms=2000)  # joined the group, assignment done
    tp = TopicPartition(inp, 0)
    writes = [["artifacts", [f"ctx-{i % 7}", f"artifact-{i:08d}"], ["durable", "live"]] for i in range(entries)]
    delta = json.dumps({"gen": 1, "n": 0, "offsets": {inp: 0}, "writes": writes}, separators=(",", ":")).encode()
    per_key = [json.dumps(w, separators=(",", ":")).encode() for w in writes]
    results: dict[str, dict[str, float]] = {}

    async def timed(name: str, commit) -> None:
        walls, cpus = [], []
        for i in range(commits):
            c0, w0 = time.process_time(), time.perf_counter()
            await commit(i)
            walls.append((time.perf_counter() - w0) * 1000)
            cpus.append((time.process_time() - c0) * 1000)
        walls.sort()
        results[name] = {"wall_ms": statistics.median(walls), "wall_p90_ms": walls[int(0.9 * len(walls))],
                         "cpu_ms": statistics.mean(cpus)}
        say(f"commit: {name}: median {results[name]['wall_ms']:.2f} ms, cpu {results[name]['cpu_ms']:.2f} ms")

    plain = producer(settings, enable_idempotence=True)
    await plain.start()
    try:
        async def delta_commit(i: int) -> None:
            await (await plain.send(state, delta, partition=0))
            await member.commit({tp: i + 1})
        await timed("delta record + offset commit", delta_commit)
    finally:
        await plain.stop()

    for name, records in (("transaction, one delta record", [delta]), ("transaction, a record per key", per_key)):
        tx = producer(settings, transactional_id=f"commit-tx-{tag}-{len(records)}", enable_idempotence=True)
        await tx.start()
        try:
            async def txn_commit(i: int, records=records, tx=tx) -> None:
                await tx.begin_transaction()
                futures = [await tx.send(state, r, partition=0) for r in records]
                await tx.send_offsets_to_transaction({tp: i + 1}, group)
                await tx.commit_transaction()
                await asyncio.gather(*futures)
            await timed(name, txn_commit)
        finally:
            await tx.stop()
    await member.stop()
    return results


def report(results: dict, entries: int, commits: int, title: str, argv: list[str], t0: float, load: str) -> str:
    base = results["delta record + offset commit"]
    lines = [f"## {title}", "",
             f"`{command_line('bench/bench_commit.py', argv)}` — {machine_line()}; {software_line()}.",
             "", f"One input partition's state commit, {commits} times: {entries} dirty keys (~100 B each) made "
             "durable and the group offset moved (module docstring). Wall time per commit and this process's CPU.",
             "", "| mechanism | wall ms (median) | wall ms (p90) | CPU ms per commit | wall vs delta |",
             "|---|---:|---:|---:|---:|"]
    for name, r in results.items():
        lines.append(f"| {name} | {r['wall_ms']:.2f} | {r['wall_p90_ms']:.2f} | {r['cpu_ms']:.2f} | "
                     f"{r['wall_ms'] / base['wall_ms']:.1f}x |")
    return report_end([*lines, ""], [], t0, load)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = part_parser("bench/bench_commit.py", __doc__)
    ap.add_argument("--entries", type=int, default=500, help="dirty keys per commit (default 500)")
    ap.add_argument("--commits", type=int, default=None, help="commits per mechanism (default 100; quick 20)")
    add_part_args(ap, title="Durability: what one state commit costs")
    args = ap.parse_args(argv)
    commits = args.commits or (20 if args.quick else 100)
    t0, load = time.monotonic(), loadavg()
    with broker(args.bootstrap, kafka_port=args.kafka_port) as (settings, _):
        results = asyncio.run(_run(settings, args.entries, commits))
    base, tx = results["delta record + offset commit"], results["transaction, one delta record"]
    summary = (f"delta {base['wall_ms']:.1f} ms / commit vs transaction {tx['wall_ms']:.1f} ms "
               f"({tx['wall_ms'] / base['wall_ms']:.1f}x)")
    write_out(args.out, report(results, args.entries, commits, args.title, argv, t0, load), summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
