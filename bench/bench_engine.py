"""Engine vs the seed-style naive validator, on the same synthetic compaction trace.

    python -m bench.bench_engine [--sizes 1000,10000,100000] [--runs 3] [--naive-budget 60] [--quick] [--out FILE]

What is measured: events/s of ``Engine.process`` on a ``DictState`` (the engine alone,
events decoded beforehand) against ``bench.naive_validator.NaiveValidator`` on the
same events parsed beforehand, both in this process, median of ``--runs`` runs; plus,
for context, the engine through ``stream.offline.replay.replay_lines`` (JSON decoding and
validation included). The goal checked: engine >= 20x naive at 10k artifacts per context.

More (the module notes): bench/METHODS.md, section ``bench/bench_engine.py``.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time
from collections import Counter, deque
from collections.abc import Sequence
from typing import Any

from bench.common import (
    add_part_args, command_line, loadavg, machine_line, part_parser, report_end, say, software_line, write_out,
)
from bench.naive_validator import NaiveValidator
from stream.domain.engine import Engine
from stream.domain.events import OFFLINE
from stream.domain.state import DictState
from stream.offline.replay import replay_lines
from stream.wire import decode_event

PROHIBITIONS = [f"Do not touch system {i}" for i in range(12)]
SURVIVAL = {"leaf": 0.71, "section": 0.34, "root": 0.09}


def make_trace(artifacts: int, *, contexts: int = 1, seed: int = 0) -> list[dict[str, Any]]:
    """The synthetic trace described in the module docstring, contexts interleaved."""
    rng = random.Random(seed)
    per_context = [_context_trace(f"ctx-{c}", artifacts, rng) for c in range(contexts)]
    events: list[dict[str, Any]] = []
    for batch in zip(*per_context, strict=True):
        events.extend(batch)
    return events


def _context_trace(ctx: str, n: int, rng: random.Random) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    window = max(64, n // 10)
    live: deque[str] = deque()
    admitted: list[str] = []
    leaves: list[tuple[str, list[str]]] = []
    pending = {"leaf": [], "section": []}
    counts = Counter()

    def emit(body: dict[str, Any]) -> None:
        body |= {"event_id": f"{ctx}-e{len(events)}", "context_id": ctx}
        events.append(body)

    def admit(artifact_id: str, tier: str = "live") -> None:
        emit({"type": "artifact", "artifact_id": artifact_id, "op": "admitted", "tier": tier,
              "kind": "raw_span"})
        if tier == "live":
            live.append(artifact_id)

    def checkpoint(level: str, children: list[str], referents: list[str]) -> str:
        counts[level] += 1
        node_id = f"{level}-{counts[level]}"
        raw = rng.sample(PROHIBITIONS, rng.randint(0, 2)) if level == "leaf" else []
        required = set(raw) | {c for child in children for c in child_constraints.get(child, ())}
        carried = [c if rng.random() < 0.5 else c.upper() for c in sorted(required)
                   if rng.random() < SURVIVAL[level]]
        child_constraints[node_id] = required
        emit({"type": "checkpoint", "node_id": node_id, "level": level, "children": children,
              "referents": referents, "negative_constraints": carried,
              "raw_negative_constraints": raw, "cycle": 1})
        return node_id

    child_constraints: dict[str, set[str]] = {}
    for i in range(n):
        artifact_id = f"a{i}"
        admit(artifact_id)
        admitted.append(artifact_id)
        if rng.random() < 0.2:
            admit(artifact_id, "durable")
        if len(live) > window:
            emit({"type": "artifact", "artifact_id": live.popleft(), "op": "evicted",
                  "tier": "live"})
        if rng.random() < 0.02 and len(admitted) > window:
            admit(rng.choice(admitted[:-window]))  # a re-fetch of an evicted artifact
        if i % 8 == 7:
            referents = rng.sample(admitted[-16:], rng.randint(3, 5))
            if rng.random() < 0.1:
                referents.append(rng.choice(admitted))
            leaf = checkpoint("leaf", [], referents)
            leaves.append((leaf, referents))
            pending["leaf"].append(leaf)
            if rng.random() < 0.01:  # re-summarization of an earlier leaf
                node_id, old = rng.choice(leaves)
                widened = old + [rng.choice(admitted)] if rng.random() < 0.5 else old
                emit({"type": "checkpoint", "node_id": node_id, "level": "leaf",
                      "referents": widened})
        if len(pending["leaf"]) == 8:
            section = checkpoint("section", pending["leaf"], rng.sample(admitted[-64:], 2))
            pending["leaf"] = []
            pending["section"].append(section)
        if len(pending["section"]) == 8:
            checkpoint("root", pending["section"], rng.sample(admitted[-512:], 2))
            pending["section"] = []
    return events


def run_engine(decoded: Sequence[Any]) -> tuple[int, bool, list[dict[str, Any]]]:
    engine, state, alerts = Engine(), DictState(), []
    for event in decoded:
        alerts.extend(engine.process(state, event, OFFLINE).alerts)
    return len(decoded), True, alerts


def run_naive(parsed: Sequence[dict[str, Any]], budget: float) -> tuple[int, bool, list[tuple]]:
    validator = NaiveValidator()
    deadline = time.perf_counter() + budget
    for done, event in enumerate(parsed):
        if done % 256 == 0 and time.perf_counter() > deadline:
            return done, False, validator.alerts
        validator.process(event)
    return len(parsed), True, validator.alerts


def measure(size: int, runs: int, budget: float, contexts: int) -> dict[str, Any]:
    events = make_trace(size, contexts=contexts)
    lines = [json.dumps(e).encode() for e in events]
    decoded = [decode_event(line) for line in lines]
    parsed = [json.loads(line) for line in lines]
    engine_rates, naive_rates, replay_rates = [], [], []
    naive_complete = True
    engine_alerts: list[dict[str, Any]] = []
    naive_alerts: list[tuple] = []
    for _ in range(runs):
        start = time.perf_counter()
        _, _, engine_alerts = run_engine(decoded)
        engine_rates.append(len(decoded) / (time.perf_counter() - start))

        start = time.perf_counter()
        replay_lines(lines)
        replay_rates.append(len(lines) / (time.perf_counter() - start))

        start = time.perf_counter()
        done, finished, naive_alerts = run_naive(parsed, budget)
        naive_rates.append(done / (time.perf_counter() - start))
        naive_complete &= finished
    engine_rate = statistics.median(engine_rates)
    naive_rate = statistics.median(naive_rates)
    return {
        "size": size,
        "events": len(events),
        "engine": engine_rate,
        "replay": statistics.median(replay_rates),
        "naive": naive_rate,
        "naive_complete": naive_complete,
        "ratio": engine_rate / naive_rate,
        "engine_alerts": len(engine_alerts),
        "naive_alerts": len(naive_alerts) if naive_complete else None,
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = part_parser("bench/bench_engine.py", __doc__)
    parser.add_argument("--sizes", default=None,
                        help="artifacts per context, comma-separated (default 1000,10000,100000; quick 1000,10000)")
    parser.add_argument("--runs", type=int, default=None, help="runs per size; the median is kept (default 3; quick 1)")
    parser.add_argument("--naive-budget", type=float, default=None,
                        help="seconds after which a naive run stops (its rate is then a prefix's; default 60, quick 5)")
    parser.add_argument("--contexts", type=int, default=1, help="contexts, interleaved")
    add_part_args(parser, title="1. Engine vs the seed-style naive validator",
                  quick="sizes 1000,10000, 1 run, 5 s naive budget", broker=False)
    args = parser.parse_args(argv)
    q = args.quick
    sizes = [int(s) for s in (args.sizes or ("1000,10000" if q else "1000,10000,100000")).split(",") if s]
    runs = args.runs or (1 if q else 3)
    budget = args.naive_budget if args.naive_budget is not None else (5.0 if q else 60.0)
    t_start, load_start = time.monotonic(), loadavg()

    lines = [
        f"## {args.title}",
        "",
        f"Command: `{command_line('bench/bench_engine.py', argv)}` — median of {runs} run(s), "
        f"{args.contexts} context(s); machine: {machine_line()}; {software_line()}. The engine "
        "(`Engine.process` on a `DictState`, events decoded beforehand) and the naive validator "
        "(`bench/naive_validator.py`: full reachable set, `referents - reachable` per checkpoint, every node "
        "rescanned on each eviction) on the same synthetic trace (module docstring of `bench/bench_engine.py`); "
        "*engine+decode*: `stream.offline.replay.replay_lines` (JSON decoding and validation included).",
        "",
        "| artifacts/context | events | engine ev/s | engine+decode ev/s (replay_lines) "
        "| naive ev/s | engine/naive | alerts engine / naive |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    partial = False
    summary = []
    for size in sizes:
        r = measure(size, runs, budget, args.contexts)
        naive = f"{r['naive']:,.0f}" + ("" if r["naive_complete"] else f" (prefix, {budget:.0f} s budget)")
        ratio = ("" if r["naive_complete"] else ">= ") + f"{r['ratio']:,.1f}x"
        partial |= not r["naive_complete"]
        alerts = f"{r['engine_alerts']:,} / " + (
            f"{r['naive_alerts']:,}" if r["naive_alerts"] is not None else "n/a")
        lines.append(f"| {size:,} | {r['events']:,} | {r['engine']:,.0f} | {r['replay']:,.0f} "
                     f"| {naive} | {ratio} | {alerts} |")
        say(f"engine vs naive at {size:,} artifacts: {r['engine']:,.0f} vs {r['naive']:,.0f} events/s ({ratio})")
        summary.append(f"{ratio} at {size:,}")
    lines.append("")
    if partial:
        lines += ["A naive run that hit the time budget is rated over the prefix it finished; it only gets slower "
                  "as state grows, so its rate flatters it and the ratio is a lower bound (`>=`). The naive "
                  "validator's cost grows with the square of the context size (each eviction rescans every node).",
                  ""]
    write_out(args.out, report_end(lines, [], t_start, load_start),
              "engine / naive validator: " + ", ".join(summary) + " artifacts per context")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
