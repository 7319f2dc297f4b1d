"""Adversarial shapes: cost per event at two sizes or more, and a hostile against a friendly
order (DESIGN.md §4 "Cost per event" [v2.1]; issues 24, 28.3, 28.4).

    python -m bench.bench_shapes [--quick] [--scale 1.0] [--shapes 'chain,hot artifact'] [--out FILE]

Each shape (``SHAPES``; what each is and why it is hostile: bench/README.md, *Part 8 in
detail*) is replayed as ``python -m stream replay --status`` does — ``Replayer.feed`` line
by line, every output record encoded and written, GC frozen — at its sizes, in a hostile
and a friendly order that must end with the same node statuses. Figures are CPU seconds.
Measures: **growth** (hostile µs per event at N large over N small; goal ≤ 3x, a quadratic
shape shows about large/small), **hostile / friendly** at N large (goal ≤ 10x), the widest
output line (≤ 16 MiB), and a table of the Done-when bounds of issues 24 and 28.3/28.4.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from typing import Any

from bench.common import (
    add_part_args, command_line, loadavg, machine_line, part_parser, report_end, say, software_line, write_out,
)
from stream.domain.engine import LEDGER_FULL, MAX_LEDGER
from stream.offline.replay import Replayer
from stream.wire import encode

CTX = "ctx-shapes"
RATIO_GOAL = 10.0
GROWTH_GOAL = 3.0
LINE_LIMIT = 16 << 20


def _ck(node: str, **fields: Any) -> dict[str, Any]:
    return {"type": "checkpoint", "event_id": f"ck-{node}-{fields.pop('v', 1)}", "context_id": CTX,
            "node_id": node, "level": fields.pop("level", "section"), **fields}


def _art(aid: str, op: str, n: int) -> dict[str, Any]:
    return {"type": "artifact", "event_id": f"art-{aid}-{op}-{n}", "context_id": CTX, "artifact_id": aid, "op": op}


Shape = tuple[list[dict], list[dict] | None, list[dict]]  # (hostile, friendly or None, tail)


def _chain_nodes(n: int, *, carried: bool) -> list[dict]:
    prohibition = "do not push to main"
    return [_ck(f"c{i:06d}", children=[f"c{i + 1:06d}"] if i + 1 < n else [],
                referents=["bottom-file"] if i == n - 1 else [],
                raw_negative_constraints=[prohibition] if i == n - 1 else [],
                negative_constraints=[prohibition] if carried else []) for i in range(n)]


def chain(n: int) -> Shape:
    nodes = _chain_nodes(n, carried=True)
    head = [_art("bottom-file", "admitted", 0)]
    tail = [_art("bottom-file", "evicted", 1), _art("bottom-file", "admitted", 2)]
    return head + nodes, head + nodes[::-1], tail


def chain_uncarried(n: int) -> Shape:
    nodes = _chain_nodes(n, carried=False)
    head = [_art("bottom-file", "admitted", 0)]
    return head + nodes, head + nodes[::-1], []


def _wide(n: int, *, carried: bool) -> Shape:
    kids = [_ck(f"k{i:06d}", level="leaf", raw_negative_constraints=[f"never touch module {i}"],
                negative_constraints=[f"never touch module {i}"]) for i in range(n)]
    root = _ck("root", level="root", children=[f"k{i:06d}" for i in range(n)],
               negative_constraints=[f"never touch module {i}" for i in range(n)] if carried else [])
    return [root, *kids], [*kids, root], []


def wide(n: int) -> Shape:
    return _wide(n, carried=True)


def wide_uncarried(n: int) -> Shape:
    return _wide(n, carried=False)


def hot(n: int) -> Shape:
    leaves = [_ck(f"l{i:06d}", level="leaf", referents=["hot"]) for i in range(n)]
    root = _ck("root", level="root", children=[f"l{i:06d}" for i in range(n)])
    head = [_art("hot", "admitted", 0)]
    tail = [_art("hot", op, k) for k in range(1, 7) for op in (("evicted",) if k % 2 else ("admitted",))]
    return head + [root, *leaves], head + [*leaves, root], tail


SECTION_LEAVES = 1000


def orphaned_leaves(n: int) -> Shape:
    leaves = [_ck(f"l{i:06d}", level="leaf", referents=[f"never-admitted-{i}"]) for i in range(n)]
    sections = [_ck(f"s{j:04d}", children=[f"l{i:06d}" for i in range(j * SECTION_LEAVES,
                                                                      min(n, (j + 1) * SECTION_LEAVES))])
                for j in range(-(-n // SECTION_LEAVES))]
    root = _ck("root", level="root", children=[s["node_id"] for s in sections])
    return [root, *sections, *leaves], [*leaves, *sections, root], []


def deep_drop(m: int) -> Shape:
    def nodes(with_raw: bool) -> list[dict]:
        return [_ck(f"d{i:06d}", children=[f"d{i + 1:06d}"] if i + 1 < m else [],
                    raw_negative_constraints=["do not delete the fixtures"] if with_raw and i == m - 1 else [])
                for i in range(m)]
    late = _ck(f"d{m - 1:06d}", v=2, raw_negative_constraints=["do not delete the fixtures"])
    return [*nodes(False), late], nodes(True)[::-1], []


def versions(n: int) -> Shape:
    return [_ck("hub", v=i, children=[f"child-{i:06d}"]) for i in range(n)], None, []


#: name -> (builder, sizes: N small, [N middle, ...], N large); --quick: a tenth of each
SHAPES: dict[str, tuple[Any, tuple[int, ...]]] = {
    "chain": (chain, (2_000, 20_000)),
    "chain (prohibition nobody carries)": (chain_uncarried, (2_000, 20_000)),
    "wide root": (wide, (1_000, 10_000)),
    "wide root (prohibitions not carried)": (wide_uncarried, (1_000, 10_000)),
    "hot artifact": (hot, (1_000, 10_000)),
    "orphaned leaves under a root": (orphaned_leaves, (12_500, 25_000, 50_000)),
    "prohibition under a deep chain": (deep_drop, (2_000, 20_000)),
    "versions of one node": (versions, (5_000, 20_000)),
}
#: replays of each order and size whose least CPU time is kept (at least; ``--repeat``): the
#: orphaned leaves' bound (≤ 4.5x for 4x the leaves) is within the noise of one run on a shared machine
REPEAT = {"orphaned leaves under a root": 3}
#: the Done-when bounds of issues 24 and 28.3/28.4 that name a shape: (shape, measure, goal, bound);
#: {small}/{large}: the sizes of this run (2,000 / 20,000 chains, 12,500 / 50,000 leaves at full size)
BOUNDS = [
    ("chain (prohibition nobody carries)", "growth", GROWTH_GOAL,
     "#24: a {large}-chain ≤ 3x per event of a {small}-chain (bottom prohibition nobody carries)"),
    ("chain", "growth", GROWTH_GOAL, "#24: a {large}-chain ≤ 3x per event of a {small}-chain (prohibition carried)"),
    ("orphaned leaves under a root", "time_growth", 4.5, "#28.4: {small} → {large} orphaned leaves ≤ 4.5x the time"),
    ("orphaned leaves under a root", "ratio", RATIO_GOAL,
     "#28.4: {large} orphaned leaves within 10x of the friendly order"),
    ("versions of one node", "unbounded_growth", 1.5,
     "#28.3: per-event cost at {large} versions within 1.5x of {small}"),
]


def _lines(events: list[dict]) -> list[bytes]:
    return [json.dumps(e, separators=(",", ":")).encode() for e in events]


def _replay(lines: list[bytes], sink_path: str = os.devnull, **kwargs: Any) -> dict[str, Any]:
    """One replay as ``python -m stream replay --status`` runs it (``Replayer.feed`` per line,
    every output record encoded by ``wire.encode`` and written, to /dev/null by default; GC frozen
    with the CLI's thresholds). The figure is this process's CPU time: on a shared machine
    the wall clock also counts the other processes' turns."""
    rp = Replayer(**kwargs)
    final: dict[str, Any] = {}
    widest = n_records = 0
    gc.collect()
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(100_000, 50, 100)
    with open(sink_path, "wb") as sink:
        c0, t0 = time.process_time(), time.perf_counter()
        for lineno, line in enumerate(lines, 1):
            for record in rp.feed(line, lineno) or ():
                data = encode(record)
                sink.write(data + b"\n")
                n_records += 1
                widest = max(widest, len(data))
                if record["type"] == "status":
                    final[record["node_id"]] = (record["authoritative"], record["open_rules"],
                                                record["degraded_count"])
        result = rp.finish()
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    gc.set_threshold(*threshold)
    gc.unfreeze()
    dead = [reason for _, reason in result.dead_letters]
    return {"secs": cpu, "wall": wall, "events": len(lines), "us": 1e6 * cpu / len(lines), "records": n_records,
            "widest": widest, "dead": len(dead), "ledger_full": sum(r.startswith(LEDGER_FULL) for r in dead),
            "final": final}


def _run(events: list[dict], repeat: int = 1, **kwargs: Any) -> dict[str, Any]:
    """The replay with the least CPU time of ``repeat`` (on a shared machine a run's CPU time
    also carries the cache and core contention of the others)."""
    lines = _lines(events)
    return min((_replay(lines, **kwargs) for _ in range(repeat)), key=lambda r: r["secs"])


def measure(name: str, build: Any, sizes: tuple[int, ...], ledger: int = MAX_LEDGER, repeat: int = 1) -> dict[str, Any]:
    """Both orders at N large and N small, the hostile one (or the only one) at the sizes
    between, with the ledger bound ``ledger`` (``CG_MAX_LEDGER``'s default at full size);
    versions of one node also with the bound at N large (none rejected)."""
    out: dict[str, Any] = {"shape": name, "sizes": sizes, "small": sizes[0], "large": sizes[-1], "by_size": {},
                           "ledger": ledger, "repeat": repeat}
    for i, n in enumerate(reversed(sizes)):
        hostile, friendly, tail = build(n)
        row: dict[str, Any] = {"hostile": _run(hostile + tail, repeat, max_ledger=ledger)}
        if friendly is not None and (i == 0 or n == sizes[0]):
            row["friendly"] = _run(friendly + tail, repeat, max_ledger=ledger)
            assert row["hostile"]["final"] == row["friendly"]["final"], f"{name}: the two orders end differently"
        if friendly is None:
            row["unbounded"] = _run(hostile + tail, repeat, max_ledger=sizes[-1])  # every version enters the ledger
        for r in row.values():
            r.pop("final")
        out["by_size"][n] = row
        del hostile, friendly, tail
    big, small = out["by_size"][sizes[-1]], out["by_size"][sizes[0]]
    out["hostile"], out["hostile_small"] = big["hostile"], small["hostile"]
    out["friendly"], out["friendly_small"] = big.get("friendly"), small.get("friendly")
    out["ratio"] = out["hostile"]["secs"] / out["friendly"]["secs"] if out["friendly"] else None
    out["growth"] = out["hostile"]["us"] / out["hostile_small"]["us"]
    out["time_growth"] = out["hostile"]["secs"] / out["hostile_small"]["secs"]
    if "unbounded" in big:
        out["unbounded"], out["unbounded_small"] = big["unbounded"], small["unbounded"]
        out["unbounded_growth"] = out["unbounded"]["us"] / out["unbounded_small"]["us"]
    return out


def _widest(r: dict[str, Any]) -> int:
    return max(x["widest"] for row in r["by_size"].values() for x in row.values())


def _met(r: dict[str, Any]) -> bool:
    ratio_ok = r["ratio"] is None or r["ratio"] <= RATIO_GOAL
    growth = max(r["growth"], r.get("unbounded_growth", 0.0))
    return ratio_ok and growth <= GROWTH_GOAL and _widest(r) <= LINE_LIMIT


def _us_by_size(r: dict[str, Any], key: str) -> str:
    return " → ".join(f"{r['by_size'][n][key]['us']:,.0f}" for n in r["sizes"] if key in r["by_size"][n])


def done_when(results: list[dict[str, Any]]) -> list[tuple[str, str, bool]]:
    """(bound, figure, met) for each Done-when bound of issues 24 and 28.3/28.4 this run measured."""
    by = {r["shape"]: r for r in results}
    rows: list[tuple[str, str, bool]] = []
    ratios = [(r["ratio"], r["shape"]) for r in results if r["ratio"] is not None]
    if ratios:
        worst, shape = max(ratios)
        rows.append(("#24, #28.4: every shape within 10x of its friendly order (N large)",
                     f"worst {worst:.2f}x ({shape})", worst <= RATIO_GOAL))
    for shape, key, goal, bound in BOUNDS:
        if shape in by:
            r = by[shape]
            value = r[key]
            figure = f"{value:.2f}x"
            if key == "time_growth":
                secs = " → ".join(f"{r['by_size'][n]['hostile']['secs']:.1f}" for n in r["sizes"])
                figure += f" ({secs} CPU s at {' / '.join(f'{n:,}' for n in r['sizes'])})"
            elif key == "unbounded_growth":
                figure += f" ({_us_by_size(r, 'unbounded')} µs per event)"
            elif key == "growth":
                figure += f" ({_us_by_size(r, 'hostile')} µs per event)"
            rows.append((bound.format(small=f"{r['small']:,}", large=f"{r['large']:,}"), figure, value <= goal))
    if "versions of one node" in by:
        r = by["versions of one node"]
        max_ledger = r["ledger"]
        expected = max(0, r["large"] - max_ledger)
        full = r["hostile"]["ledger_full"]
        rows.append((f"#28.3: a version past CG_MAX_LEDGER ({max_ledger:,}) dead-lettered \"ledger full\"",
                     f"{full:,} of {r['large']:,} versions (expected {expected:,})", full == expected and full > 0))
    widest = max(_widest(r) for r in results)
    rows.append(("#24: no output line over 16 MiB", f"widest {widest / 1024:,.1f} KiB", widest <= LINE_LIMIT))
    return rows


def report(results: list[dict[str, Any]], title: str, argv: list[str], t_start: float, load_start: str) -> str:
    lines = [f"## {title}", "",
             f"`{command_line('bench/bench_shapes.py', argv)}` — {machine_line()}; {software_line()}.", "",
             "Each shape's events replayed as `python -m stream replay --status` does "
             "(`stream.offline.replay.Replayer` "
             "line by line: decode + engine + every output record encoded and written; one process, GC frozen as "
             "the CLI does) at two sizes or more, in a hostile and a friendly order; both orders end with the same "
             "node statuses (checked). Times are the replay's CPU seconds (`time.process_time`: on a shared machine "
             "the wall clock also counts other processes' turns; *least of R*: the least CPU time of R "
             "replays of each order and size). Goals (DESIGN.md §4 *Cost per event* [v2.1], "
             f"issues 24 and 28): the hostile order's µs per event grows at most {GROWTH_GOAL:.0f}x from N small "
             f"to N large, hostile within {RATIO_GOAL:.0f}x of friendly at N large, no output line over 16 MiB.", "",
             "| shape | N | events (large) | output records hostile / friendly | µs/event hostile (each N) "
             "| growth per event | total time growth | µs/event friendly small → large | "
             "hostile / friendly | widest line | met? |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in results:
        h, f = r["hostile"], r["friendly"]
        sizes = " / ".join(f"{n:,}" for n in r["sizes"])
        friendly = _us_by_size(r, "friendly") if f else "—"
        records = f"{h['records']:,} / {f['records']:,}" if f else f"{h['records']:,}"
        ratio = f"{r['ratio']:.2f}x" if r["ratio"] is not None else "—"
        least = f" (least of {r['repeat']})" if r["repeat"] > 1 else ""
        lines.append(
            f"| {r['shape']}{least} | {sizes} | {h['events']:,} | {records} | {_us_by_size(r, 'hostile')} | "
            f"{r['growth']:.2f}x | {r['time_growth']:.2f}x | {friendly} | "
            f"{ratio} | {_widest(r) / 1024:,.1f} KiB | {'yes' if _met(r) else '**no**'} |")
        if r.get("unbounded"):
            u, us_ = r["unbounded"], r["unbounded_small"]
            lines.append(
                f"| {r['shape']} (`max_ledger` = N: none rejected) | {sizes} | "
                f"{u['events']:,} | {u['records']:,} | {_us_by_size(r, 'unbounded')} | "
                f"{r['unbounded_growth']:.2f}x | {u['secs'] / us_['secs']:.2f}x | — | — | "
                f"{u['widest'] / 1024:,.1f} KiB | {'yes' if r['unbounded_growth'] <= 1.5 else '**no**'} |")
    versions_row = next((r for r in results if r.get("unbounded")), None)
    if versions_row:
        lines += ["", f"Versions of one node with `CG_MAX_LEDGER` at {versions_row['ledger']:,} (its default at "
                  "full size): "
                  f"{versions_row['hostile']['ledger_full']:,} of {versions_row['large']:,} versions dead-lettered "
                  f"(\"ledger full\") at N large, {versions_row['hostile_small']['ledger_full']:,} at N small; "
                  "the second row raises the bound to N large, so every version enters the ledger (goal ≤ 1.5x)."]
    lines += ["", "*growth per event*: µs per event of the hostile order at N large / at N small (a shape whose "
              "per-event cost does not grow with its size gives about 1; a quadratic one about large/small). "
              "*total time growth*: the same ratio of total times (e.g. 12.5k → 50k leaves: linear is 4x).", "",
              "**Done when** (issues 24 and 28.3/28.4, this run):", "",
              "| bound | figure | met? |", "|---|---|---|"]
    lines += [f"| {bound} | {figure} | {'yes' if ok else '**no**'} |" for bound, figure, ok in done_when(results)]
    return report_end([*lines, ""], [], t_start, load_start)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = part_parser("bench/bench_shapes.py", __doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every size (default 1)")
    ap.add_argument("--shapes", default=None, help="comma-separated shape names (default: all)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="replays per order and size, the least CPU time kept (default 1)")
    add_part_args(ap, title="8. Adversarial shapes (engine)", quick="a tenth of the sizes", broker=False)
    args = ap.parse_args(argv)
    chosen = [s.strip() for s in args.shapes.split(",")] if args.shapes else list(SHAPES)
    unknown = [s for s in chosen if s not in SHAPES]
    if unknown:
        ap.error(f"unknown shape(s) {unknown}; known: {', '.join(SHAPES)}")
    t_start, load_start = time.monotonic(), loadavg()
    results = []
    factor = args.scale * (0.1 if args.quick else 1.0)
    for name in chosen:
        build, sizes = SHAPES[name]
        sizes = tuple(max(2 * (i + 1), int(n * factor)) for i, n in enumerate(sizes))
        say(f"shapes: {name}, N={' / '.join(f'{n:,}' for n in sizes)}")
        # the versions of one node pass the ledger bound at N large: scaled with the sizes
        ledger = max(2, int(MAX_LEDGER * factor)) if build is versions else MAX_LEDGER
        results.append(measure(name, build, sizes, ledger=ledger, repeat=max(args.repeat, REPEAT.get(name, 1))))
        r = results[-1]
        say(f"shapes: {name}: growth {r['growth']:.2f}x per event"
            + (f", hostile/friendly {r['ratio']:.2f}x" if r["ratio"] is not None else ""))
    ratios = [r["ratio"] for r in results if r["ratio"] is not None]
    worst_growth = max(max(r["growth"], r.get("unbounded_growth", 0.0)) for r in results)
    widest = max(_widest(r) for r in results)
    bounds = done_when(results)
    summary = (f"worst growth per event {worst_growth:.2f}x (goal ≤ {GROWTH_GOAL:.0f}x), worst hostile/friendly "
               f"{max(ratios, default=0):.2f}x (goal ≤ {RATIO_GOAL:.0f}x), widest line {widest / 1024:.1f} KiB "
               f"(≤ 16 MiB); Done-when bounds of #24/#28.3/#28.4 met: {sum(ok for *_, ok in bounds)} of {len(bounds)}")
    write_out(args.out, report(results, args.title, argv, t_start, load_start), summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
