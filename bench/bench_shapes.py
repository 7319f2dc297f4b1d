"""Adversarial shapes: the same events in a hostile and in a friendly order (DESIGN.md §4
"Cost per event").

    python bench/bench_shapes.py [--quick] [--scale 1.0] [--out FILE]

Each shape is a list of input events replayed twice through ``stream.replay`` (decode +
engine over dicts, exactly ``python -m stream replay``), once in the hostile order and
once in the friendly one; both orders give the same final statuses (checked) and about
the same output. The figure is the ratio hostile / friendly of the replay's wall time
(goal: within 10x), with the largest output line (goal: never over 16 MiB).

* **chain** — N section nodes, each the only child of the previous one, the bottom one
  holding a prohibition (carried by all) and a referent; hostile: announced top-down
  (each node arrives under all of its ancestors), friendly: bottom-up. Then the
  referent is evicted and re-admitted: the leaf's orphan degrades all N ancestors
  (N status records each time, in both orders).
* **wide root** — a root with N children, each child with its own prohibition that the
  root carries; hostile: the root first (every child arrives under it), friendly: the
  children first, the root last.
* **hot artifact** — N leaves under one root all referencing one artifact; hostile: the
  root first, then the leaves; friendly: leaves first. Then the artifact is evicted and
  re-admitted three times (N alerts and N+1 status records each time).
* **prohibition under a deep chain** — a chain of M nodes where nobody carries the
  bottom's prohibition: every node gets a ``negative_constraint_dropped`` whose
  ``subtree`` is cut to 1,000 ids (``subtree_size`` the full count); hostile: the
  prohibition arrives last (a re-emission of the bottom leaf: M alerts in one event),
  friendly: from the start, bottom-up.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import command_line, loadavg, machine_line, part_footer, say, software_line, write_out  # noqa: E402
from stream.wire import encode  # noqa: E402
from stream.replay import replay_lines  # noqa: E402

CTX = "ctx-shapes"
RATIO_GOAL = 10.0
LINE_LIMIT = 16 << 20


def _ck(node: str, **fields: Any) -> dict[str, Any]:
    return {"type": "checkpoint", "event_id": f"ck-{node}-{fields.pop('v', 1)}", "context_id": CTX,
            "node_id": node, "level": fields.pop("level", "section"), **fields}


def _art(aid: str, op: str, n: int) -> dict[str, Any]:
    return {"type": "artifact", "event_id": f"art-{aid}-{op}-{n}", "context_id": CTX, "artifact_id": aid, "op": op}


def chain(n: int) -> tuple[list[dict], list[dict], list[dict]]:
    """(hostile, friendly, tail): the tail follows both orders."""
    nodes = [_ck(f"c{i:06d}", children=[f"c{i + 1:06d}"] if i + 1 < n else [],
                 referents=["bottom-file"] if i == n - 1 else [],
                 raw_negative_constraints=["do not push to main"] if i == n - 1 else [],
                 negative_constraints=["do not push to main"]) for i in range(n)]
    head = [_art("bottom-file", "admitted", 0)]
    tail = [_art("bottom-file", "evicted", 1), _art("bottom-file", "admitted", 2)]
    return head + nodes, head + nodes[::-1], tail


def wide(n: int) -> tuple[list[dict], list[dict], list[dict]]:
    kids = [_ck(f"k{i:06d}", level="leaf", raw_negative_constraints=[f"never touch module {i}"],
                negative_constraints=[f"never touch module {i}"]) for i in range(n)]
    root = _ck("root", level="root", children=[f"k{i:06d}" for i in range(n)],
               negative_constraints=[f"never touch module {i}" for i in range(n)])
    return [root, *kids], [*kids, root], []


def hot(n: int) -> tuple[list[dict], list[dict], list[dict]]:
    leaves = [_ck(f"l{i:06d}", level="leaf", referents=["hot"]) for i in range(n)]
    root = _ck("root", level="root", children=[f"l{i:06d}" for i in range(n)])
    head = [_art("hot", "admitted", 0)]
    tail = [_art("hot", op, k) for k in range(1, 7) for op in (("evicted",) if k % 2 else ("admitted",))]
    return head + [root, *leaves], head + [*leaves, root], tail


def deep_drop(m: int) -> tuple[list[dict], list[dict], list[dict]]:
    def nodes(with_raw: bool) -> list[dict]:
        return [_ck(f"d{i:06d}", children=[f"d{i + 1:06d}"] if i + 1 < m else [],
                    raw_negative_constraints=["do not delete the fixtures"] if with_raw and i == m - 1 else [])
                for i in range(m)]
    late = _ck(f"d{m - 1:06d}", v=2, raw_negative_constraints=["do not delete the fixtures"])
    return [*nodes(False), late], nodes(True)[::-1], []


SHAPES = {
    "chain": (chain, 20_000, 2_000),
    "wide root": (wide, 10_000, 1_000),
    "hot artifact": (hot, 10_000, 1_000),
    "prohibition under a deep chain": (deep_drop, 3_000, 500),
}


def _lines(events: list[dict]) -> list[bytes]:
    return [json.dumps(e, separators=(",", ":")).encode() for e in events]


def _replay(lines: list[bytes]) -> tuple[float, Any]:
    gc.collect()
    gc.freeze()  # as `python -m stream replay` does
    t0 = time.perf_counter()
    result = replay_lines(lines)
    secs = time.perf_counter() - t0
    gc.unfreeze()
    return secs, result


def _final(result: Any) -> dict[str, Any]:
    last = {}
    for s in result.statuses:
        last[s["node_id"]] = (s["authoritative"], s["open_rules"], s["degraded_count"])
    return last


def measure(name: str, n: int, build: Any) -> dict[str, Any]:
    hostile, friendly, tail = build(n)
    rows = {}
    finals = []
    for order, events in (("hostile", hostile + tail), ("friendly", friendly + tail)):
        secs, result = _replay(_lines(events))
        widest = max((len(encode(r)) for r in result.records), default=0)
        rows[order] = {"secs": secs, "events": len(events), "records": len(result.records), "widest": widest}
        finals.append(_final(result))
        del result
    assert finals[0] == finals[1], f"{name}: the two orders end differently"
    h, f = rows["hostile"], rows["friendly"]
    return {"shape": name, "n": n, "events": h["events"], "hostile": h, "friendly": f,
            "ratio": h["secs"] / f["secs"] if f["secs"] else float("inf")}


def report(results: list[dict[str, Any]], title: str, argv: list[str], t_start: float, load_start: str) -> str:
    lines = [f"## {title}", "",
             f"`{command_line('bench/bench_shapes.py', argv)}` — {machine_line()}; {software_line()}.", "",
             "Each shape's events replayed (`stream.replay`: decode + engine, one process) in a hostile and a "
             "friendly order; both end with the same node statuses (checked). Goal (DESIGN.md §4, issue #14): "
             f"hostile within {RATIO_GOAL:.0f}x of friendly, no output line over 16 MiB.", "",
             "| shape | N | events | output records (hostile / friendly) | hostile s | friendly s | "
             "µs/event (hostile) | ratio | widest line | met? |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        h, f = r["hostile"], r["friendly"]
        met = r["ratio"] <= RATIO_GOAL and max(h["widest"], f["widest"]) <= LINE_LIMIT
        lines.append(
            f"| {r['shape']} | {r['n']:,} | {r['events']:,} | {h['records']:,} / {f['records']:,} | "
            f"{h['secs']:.2f} | {f['secs']:.2f} | {1e6 * h['secs'] / h['events']:.0f} | {r['ratio']:.2f}x | "
            f"{max(h['widest'], f['widest']) / 1024:.1f} KiB | {'yes' if met else '**no**'} |")
    lines += ["", part_footer(t_start, load_start), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="bench/bench_shapes.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a tenth of the sizes")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size (default 1)")
    ap.add_argument("--title", default="8. Adversarial shapes (engine)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    t_start, load_start = time.monotonic(), loadavg()
    results = []
    for name, (build, full, quick) in SHAPES.items():
        n = max(2, int((quick if args.quick else full) * args.scale))
        say(f"shapes: {name}, N={n:,}")
        results.append(measure(name, n, build))
        say(f"shapes: {name}: ratio {results[-1]['ratio']:.2f}x")
    worst = max(r["ratio"] for r in results)
    widest = max(max(r["hostile"]["widest"], r["friendly"]["widest"]) for r in results)
    summary = (f"worst hostile/friendly {worst:.2f}x (goal ≤ {RATIO_GOAL:.0f}x), widest line {widest / 1024:.1f} KiB "
               f"(≤ 16 MiB)")
    write_out(args.out, report(results, args.title, argv, t_start, load_start), summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
