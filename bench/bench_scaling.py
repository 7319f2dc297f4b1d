"""How the engine's per-event cost grows with fan-in, the number of artifacts, and the
size of the adversarial shapes (DESIGN.md §4 "Cost per event" [v2.1]).

    python -m bench.bench_scaling [--dependents 1,100,10000] [--artifacts 1000,100000]
                                  [--shapes-scale 1.0] [--quick] [--out FILE]

Pure engine: ``Engine.process`` over a ``DictState`` in this process (no Kafka, no
decoding in the timed part: events are decoded with ``wire.decode_event`` beforehand).
Each call is timed alone (``perf_counter_ns``); a figure is the median over its
repetitions. Before timing, the state is built, then ``gc.collect(); gc.freeze()`` as
``python -m stream replay`` does (otherwise the cyclic GC rescanning a big heap is most
of what is measured at 100k artifacts).

More (the module notes): bench/METHODS.md, section ``bench/bench_scaling.py``.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.common import (
    add_part_args, command_line, loadavg, machine_line, part_parser, report_end, say, software_line, write_out,
)
from stream.domain.engine import Engine
from stream.domain.events import OFFLINE, ArtifactEvent, CheckpointEvent
from stream.domain.state import DictState
from stream.wire import decode_event

CTX = "ctx-scale"


class Feeder:
    """Builds events with unique ids and feeds them to one engine/state.

    Events are built as the engine's dataclasses directly (what ``wire.decode_event``
    returns: sorted tuples, constraint keys), so building 100k-artifact states is quick;
    :meth:`check` compares one of each kind with ``decode_event`` of the same JSON.
    """

    def __init__(self) -> None:
        self.engine = Engine()
        self.state = DictState()
        self.n = 0

    def _id(self) -> str:
        self.n += 1
        return f"e{self.n}"

    def art(self, aid: str, op: str = "admitted", tier: str = "live") -> Any:
        return ArtifactEvent(event_id=self._id(), context_id=CTX, artifact_id=aid, op=op, tier=tier)

    def leaf(self, nid: str, referents: list[str], level: str = "leaf", children: list[str] | None = None) -> Any:
        return CheckpointEvent(event_id=self._id(), context_id=CTX, node_id=nid, level=level,
                               children=tuple(sorted(set(children or ()))), referents=tuple(sorted(set(referents))),
                               negative_constraints=("do not x",), raw_negative_constraints=("do not x",))

    @staticmethod
    def check() -> None:
        f = Feeder()
        a = f.art("a1", "evicted", "durable")
        assert a == decode_event(json.dumps({"type": "artifact", "schema_version": 1, "event_id": a.event_id,
                                             "context_id": CTX, "artifact_id": "a1", "op": "evicted",
                                             "tier": "durable"}))
        c = f.leaf("n1", ["b", "a", "b"], "section", ["c2", "c1"])
        assert c == decode_event(json.dumps({"type": "checkpoint", "schema_version": 1, "event_id": c.event_id,
                                             "context_id": CTX, "node_id": "n1", "level": "section",
                                             "children": ["c2", "c1"], "referents": ["b", "a", "b"],
                                             "negative_constraints": ["Do  not X"],
                                             "raw_negative_constraints": ["do not x"]}))

    def apply(self, ev: Any) -> Any:
        return self.engine.process(self.state, ev, OFFLINE)

    def timed(self, ev: Any) -> tuple[float, int]:
        """(µs, alerts) of one process call."""
        t0 = time.perf_counter_ns()
        out = self.engine.process(self.state, ev, OFFLINE)
        return (time.perf_counter_ns() - t0) / 1000, len(out.alerts)


def settle() -> None:
    gc.collect()
    gc.freeze()


def unfreeze() -> None:
    gc.unfreeze()
    gc.collect()


def fan_in(d: int, reps: int, light: int | None = None) -> dict[str, Any]:
    """``reps``: hot evictions/admissions; ``light``: repetitions of the cheap events (default max(reps, 50))."""
    light = light or max(reps, 50)
    f = Feeder()
    gc.disable()
    f.apply(f.art("hot"))
    for i in range(d):
        f.apply(f.art(f"p{i}"))
        f.apply(f.leaf(f"leaf-{i:06d}", ["hot", f"p{i}"]))
    gc.enable()
    settle()
    t: dict[str, list[float]] = {k: [] for k in ("evict_hot", "admit_hot", "ckpt_hot", "art_other", "ckpt_other")}
    alerts: dict[str, list[int]] = {"evict_hot": [], "admit_hot": []}
    hot_key = (CTX, "hot")
    # Three phases, each on a settled heap (the D-alert events leave garbage that would make
    # the cyclic GC run inside the next, unrelated, events). Only process() is timed.
    # 1. events that do not touch the hot artifact: admit o<r>, a leaf over it, evict it (1 alert)
    for r in range(light):
        evs = [f.art(f"o{r}"), f.leaf(f"other-{r:05d}", [f"o{r}"]), f.art(f"o{r}", "evicted")]
        t["art_other"].append(f.timed(evs[0])[0])
        t["ckpt_other"].append(f.timed(evs[1])[0])
        t["art_other"].append(f.timed(evs[2])[0])
    settle()
    # 2. a checkpoint that adds a dependent to the hot artifact; undone each time, so D stays D
    for r in range(light):
        ev = f.leaf(f"extra-{r:05d}", ["hot"])
        saved = set(f.state.dependents[hot_key])  # the engine grows the stored set in place
        t["ckpt_hot"].append(f.timed(ev)[0])
        f.state.dependents[hot_key] = saved
        for table in (f.state.nodes, f.state.alert_sets, f.state.required, f.state.reach):
            table.pop((CTX, f"extra-{r:05d}"), None)
    settle()
    # 3. evict the hot artifact (D alerts open), re-admit it (D resolve)
    for _ in range(reps):
        for k, ev in (("evict_hot", f.art("hot", "evicted")), ("admit_hot", f.art("hot"))):
            us, n = f.timed(ev)
            t[k].append(us)
            alerts[k].append(n)
    unfreeze()
    res = {k: statistics.median(v) for k, v in t.items()}
    res.update(d=d, reps=reps, light=light, alerts_evict=statistics.median(alerts["evict_hot"]),
               alerts_admit=statistics.median(alerts["admit_hot"]))
    return res


def many_artifacts(a: int, mix: int) -> dict[str, Any]:
    f = Feeder()
    window = max(64, a // 10)
    live: list[str] = []
    leaves: list[str] = []
    gc.disable()  # building: the cyclic GC would rescan the growing heap again and again
    t0 = time.perf_counter()
    for i in range(a):
        aid = f"a{i}"
        f.apply(f.art(aid))
        live.append(aid)
        if i % 5 == 0:
            f.apply(f.art(aid, tier="durable"))
        if len(live) > window:
            f.apply(f.art(live.pop(0), "evicted"))
        if i % 8 == 7:
            nid = f"leaf-{i // 8:07d}"
            f.apply(f.leaf(nid, [f"a{j}" for j in range(i - 3, i + 1)]))
            leaves.append(nid)
            if len(leaves) % 8 == 0:
                f.apply(f.leaf(f"section-{len(leaves) // 8:06d}", [], "section", leaves[-8:]))
    build = time.perf_counter() - t0
    gc.enable()
    sizes = {name: len(getattr(f.state, name)) for name in ("artifacts", "nodes", "dependents", "seen")}
    settle()
    # The same mix whatever A is: new artifacts admitted and evicted again 32 rounds
    # later, a checkpoint over the 4 newest every 4th round, and an eviction of the
    # oldest artifact of the built live window (it has a dependent leaf).
    old = list(live)  # the built live window, oldest first: each has a dependent leaf
    flipped: set[str] = set()
    counter = [0]

    def mix_events(prefix: str) -> list[tuple[str, Any]]:
        evs: list[tuple[str, Any]] = []
        fresh: list[str] = []
        for r in range(mix):
            aid = f"{prefix}{r}"
            evs.append(("admit", f.art(aid)))
            fresh.append(aid)
            if len(fresh) > 32:
                evs.append(("evict_new", f.art(fresh.pop(0), "evicted")))
            if r % 4 == 3:
                evs.append(("ckpt", f.leaf(f"{prefix}-leaf-{r:06d}", fresh[-4:])))
                aid_old = old[counter[0] % len(old)]
                counter[0] += 1
                # evict it (or re-admit it, on a later lap): either flips its dependent's orphan set
                evs.append(("evict_old", f.art(aid_old, "admitted" if aid_old in flipped else "evicted")))
                flipped.symmetric_difference_update({aid_old})
        return evs

    t: dict[str, list[float]] = {"admit": [], "evict_new": [], "evict_old": [], "ckpt": []}
    for kind, ev in mix_events("n"):
        t[kind].append(f.timed(ev)[0])
    # The same mix again (new ids) with the cyclic GC off: separates GC pauses from the rest.
    settle()
    gc.disable()
    nogc = [f.timed(ev)[0] for _, ev in mix_events("m")]
    gc.enable()
    unfreeze()
    res = {k: statistics.median(v) for k, v in t.items()}
    every = [x for v in t.values() for x in v]
    res.update(a=a, build_s=build, sizes=sizes, all=statistics.mean(every), median=statistics.median(every),
               max=max(every), events=len(every), nogc_mean=statistics.mean(nogc), nogc_max=max(nogc))
    return res


def _versions(f: Feeder, n: int) -> list[Any]:
    return [CheckpointEvent(event_id=f._id(), context_id=CTX, node_id="hub", level="section",
                            children=(f"child-{i:06d}",)) for i in range(n)]


def _orphaned_leaves(f: Feeder, n: int) -> tuple[list[Any], list[Any]]:
    """(root and sections, then the leaves): the leaves are the timed events."""
    sections = -(-n // 1000)
    head = [CheckpointEvent(event_id=f._id(), context_id=CTX, node_id="root", level="root",
                            children=tuple(f"s{j:04d}" for j in range(sections)))]
    head += [CheckpointEvent(event_id=f._id(), context_id=CTX, node_id=f"s{j:04d}", level="section",
                             children=tuple(f"l{i:06d}" for i in range(j * 1000, min(n, (j + 1) * 1000))))
             for j in range(sections)]
    leaves = [CheckpointEvent(event_id=f._id(), context_id=CTX, node_id=f"l{i:06d}", level="leaf",
                              referents=(f"never-admitted-{i}",)) for i in range(n)]
    return head, leaves


def _wide_uncarried(f: Feeder, n: int) -> tuple[list[Any], list[Any]]:
    head = [CheckpointEvent(event_id=f._id(), context_id=CTX, node_id="root", level="root",
                            children=tuple(f"k{i:06d}" for i in range(n)))]
    kids = [CheckpointEvent(event_id=f._id(), context_id=CTX, node_id=f"k{i:06d}", level="leaf",
                            raw_negative_constraints=(f"never touch module {i}",)) for i in range(n)]
    return head, kids


def _chain_uncarried(f: Feeder, n: int) -> tuple[list[Any], list[Any]]:
    """A chain announced top-down, the bottom's prohibition carried by nobody (it arrives
    last: one event, n alerts listing the nearest 1,000 of each subtree)."""
    return [], [CheckpointEvent(event_id=f._id(), context_id=CTX, node_id=f"c{i:06d}", level="section",
                                children=(f"c{i + 1:06d}",) if i + 1 < n else (),
                                raw_negative_constraints=("do not push to main",) if i == n - 1 else ())
                for i in range(n)]


def _friendly(build: Any, order: Any) -> Any:
    """The friendly order of a shape: its events (head and timed) rearranged by ``order``."""
    def friendly(f: Feeder, n: int) -> list[Any]:
        head, timed = build(f, n)
        return order(head, timed)
    return friendly


#: name -> (builder(feeder, n) -> (untimed head, timed events), friendly(feeder, n) -> events or None,
#: N small, N large, engine options)
SHAPES: dict[str, tuple[Any, Any, int, int, dict[str, int]]] = {
    "versions of one node (max_ledger 20,000)": (lambda f, n: ([], _versions(f, n)), None, 5_000, 20_000,
                                                 {"max_ledger": 20_000}),
    "versions of one node (default max_ledger)": (lambda f, n: ([], _versions(f, n)), None, 5_000, 20_000, {}),
    "orphaned leaves under a root arriving first": (
        _orphaned_leaves, _friendly(_orphaned_leaves, lambda head, timed: [*timed, *head[:0:-1], head[0]]),
        12_500, 50_000, {}),
    "children under a root that does not carry their prohibitions": (
        _wide_uncarried, _friendly(_wide_uncarried, lambda head, timed: [*timed, *head]), 1_000, 10_000, {}),
    "chain top-down, bottom prohibition nobody carries": (
        _chain_uncarried, _friendly(_chain_uncarried, lambda head, timed: timed[::-1]), 2_000, 20_000, {}),
}


def shape_growth(name: str, n: int, window: int, options: dict[str, int]) -> dict[str, Any]:
    """Per-event µs of the last ``window`` timed events of the shape at size ``n``."""
    build = SHAPES[name][0]
    f = Feeder()
    f.engine = Engine(**options)
    head, timed = build(f, n)
    gc.disable()
    c0 = time.process_time()
    for ev in head:
        f.apply(ev)
    for ev in timed[:-window]:
        f.apply(ev)
    cpu = time.process_time() - c0
    gc.enable()
    settle()
    us, rejected = [], 0
    c0 = time.process_time()
    for ev in timed[-window:]:
        t0 = time.perf_counter_ns()
        out = f.engine.process(f.state, ev, OFFLINE)
        us.append((time.perf_counter_ns() - t0) / 1000)
        rejected += len(out.rejected)
    cpu += time.process_time() - c0
    unfreeze()
    return {"n": n, "median": statistics.median(us), "mean": statistics.mean(us), "window": window,
            "rejected": rejected, "whole": 1e6 * cpu / (len(head) + len(timed))}


def shape_friendly(name: str, n: int, window: int, options: dict[str, int]) -> float:
    """CPU µs per event of the whole shape in its friendly order (GC as in :func:`shape_growth`)."""
    f = Feeder()
    f.engine = Engine(**options)
    events = SHAPES[name][1](f, n)
    gc.disable()
    c0 = time.process_time()
    for ev in events[:-window]:
        f.apply(ev)
    cpu = time.process_time() - c0
    gc.enable()
    settle()
    c0 = time.process_time()
    for ev in events[-window:]:
        f.apply(ev)
    cpu += time.process_time() - c0
    unfreeze()
    return 1e6 * cpu / len(events)


def render(argv: list[str], fan: list[dict[str, Any]], arts: list[dict[str, Any]], t_start: float,
           load_start: str, title: str, shapes: list[dict[str, Any]] | None = None) -> str:
    lines = [
        f"## {title}",
        "",
        f"Command: `{command_line('bench/bench_scaling.py', argv)}` — pure engine (`Engine.process` on a "
        f"`DictState`, events decoded beforehand, each call timed alone, median of its repetitions; GC "
        f"frozen after building the state, as `replay` does). Machine: {machine_line()}; {software_line()}.",
        "",
    ]
    if fan:
        lines += [
            "**A. Fan-in**: one artifact referenced by D leaf checkpoints (µs per event).",
            "",
            "| D (dependents of the hot artifact) | evict it (alerts) | µs per alert | re-admit it (alerts) "
            "| checkpoint adding a dependent | unrelated artifact event | unrelated checkpoint | reps (hot / others) |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in fan:
            lines.append(
                f"| {r['d']:,} | {r['evict_hot']:,.1f} ({r['alerts_evict']:,.0f}) | "
                f"{r['evict_hot'] / max(r['alerts_evict'], 1):,.1f} | "
                f"{r['admit_hot']:,.1f} ({r['alerts_admit']:,.0f}) | "
                f"{r['ckpt_hot']:,.1f} | {r['art_other']:,.1f} | {r['ckpt_other']:,.1f} | {r['reps']} / {r['light']} |"
            )
        first, last = fan[0], fan[-1]
        if last["d"] > first["d"]:
            grow = last["d"] / first["d"]
            lines += [
                "",
                f"From D = {first['d']:,} to {last['d']:,} ({grow:,.0f}x): evicting the hot artifact costs "
                f"{last['evict_hot'] / first['evict_hot']:,.0f}x more (one alert per dependent: output-bound), "
                f"a checkpoint adding a dependent {last['ckpt_hot'] / first['ckpt_hot']:,.1f}x (the dependents "
                f"set grows in place), unrelated events {last['art_other'] / first['art_other']:,.1f}x "
                f"(artifact) and {last['ckpt_other'] / first['ckpt_other']:,.1f}x (checkpoint).",
            ]
        lines.append("")
    if arts:
        lines += [
            "**B. Number of artifacts in the context** (µs per event of a fixed mix of new events).",
            "",
            "| artifacts in the context | state: artifacts reachable / nodes / events seen | build (s) "
            "| admit | evict (new artifact) | evict / re-admit an old artifact (1 dependent) | checkpoint (4 "
            "referents) "
            "| median / mean / max over the mix (events) | same mix, GC off: mean / max |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in arts:
            s = r["sizes"]
            lines.append(
                f"| {r['a']:,} | {s['artifacts']:,} / {s['nodes']:,} / {s['seen']:,} | {r['build_s']:.1f} | "
                f"{r['admit']:,.1f} | {r['evict_new']:,.1f} | {r['evict_old']:,.1f} | {r['ckpt']:,.1f} | "
                f"{r['median']:,.1f} / {r['all']:,.1f} / {r['max']:,.0f} ({r['events']:,}) | "
                f"{r['nogc_mean']:,.1f} / {r['nogc_max']:,.0f} |"
            )
        if len(arts) > 1:
            lo, hi = arts[0], arts[-1]
            lines += [
                "",
                f"{hi['a'] / lo['a']:,.0f}x more artifacts: per-event cost x{hi['median'] / lo['median']:.2f} "
                f"(median), x{hi['all'] / lo['all']:.2f} (mean), x{hi['nogc_mean'] / lo['nogc_mean']:.2f} "
                "(mean with the cyclic GC off). Means and maxima carry pauses that medians do not: the cyclic "
                "collector, whose full collections grow with the heap (compare the GC-off columns; `python -m "
                "stream replay` freezes the GC for that reason), and preemption on a shared machine.",
            ]
        lines.append("")
    if shapes:
        lines += [
            "**C. Shapes at two sizes** (µs per event of the events that grow the shape, each timed alone; "
            "median / mean of the last events of each size; DESIGN.md §4 *Cost per event* [v2.1]). *Whole "
            "shape*: CPU µs per event over all of its events (`time.process_time`), in the hostile order at "
            "both sizes and in the friendly order at N large (the ratio next to it; goal ≤ 10x).",
            "",
            "| shape | N small → large | median µs small → large | mean µs small → large | growth (median) "
            "| growth (mean) | whole shape, hostile µs/event small → large (growth) | whole shape, friendly "
            "µs/event at N large | hostile / friendly | events timed | rejected (ledger full) |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in shapes:
            a, b = r["small"], r["large"]
            friendly = f"{r['friendly']:,.1f}" if r.get("friendly") else "—"
            ratio = f"{b['whole'] / r['friendly']:.2f}x" if r.get("friendly") else "—"
            lines.append(
                f"| {r['shape']} | {a['n']:,} → {b['n']:,} | {a['median']:,.1f} → {b['median']:,.1f} | "
                f"{a['mean']:,.1f} → {b['mean']:,.1f} | {b['median'] / a['median']:.2f}x | "
                f"{b['mean'] / a['mean']:.2f}x | {a['whole']:,.1f} → {b['whole']:,.1f} "
                f"({b['whole'] / a['whole']:.2f}x) | {friendly} | {ratio} | {a['window']:,} + {b['window']:,} | "
                f"{a['rejected']:,} / {b['rejected']:,} |")
        lines += ["", "The chain's events are cheap but for its last (the bottom's prohibition: one event, N alerts "
                  "of the nearest 1,000 nodes each): its medians stay flat, its window mean carries that one "
                  "output-bound event, and the whole-shape figure is what compares (bench part 8: the same "
                  "shapes replayed with decoding and encoding).", ""]
    return report_end(lines, [], t_start, load_start)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = part_parser("bench/bench_scaling.py", __doc__)
    ap.add_argument("--dependents", default=None, help="fan-in sizes D, comma-separated (default 1,100,10000)")
    ap.add_argument("--artifacts", default=None, help="artifacts per context, comma-separated (default 1000,100000)")
    ap.add_argument("--reps", type=int, default=None, help="repetitions per fan-in size (default 200; quick 30)")
    ap.add_argument("--mix", type=int, default=None, help="timed new-event rounds per artifact count (default 4000)")
    ap.add_argument("--shapes-scale", type=float, default=None,
                    help="multiply the sizes of section C (default 1; quick 0.1; 0 skips it)")
    add_part_args(ap, title="6. How cost grows (engine)", quick="fewer repetitions (seconds)", broker=False)
    args = ap.parse_args(argv)
    deps = [int(x) for x in (args.dependents or "1,100,10000").split(",") if x]
    arts = [int(x) for x in (args.artifacts or "1000,100000").split(",") if x]
    reps = args.reps or (30 if args.quick else 200)
    mix = args.mix or (1000 if args.quick else 4000)
    t_start, load_start = time.monotonic(), loadavg()
    Feeder.check()
    fan = []
    for d in deps:
        # Heavy sizes get fewer repetitions (each hot eviction emits D alerts).
        r = max(5, min(reps, reps * 100 // max(d, 1))) if d > 100 else reps
        fan.append(fan_in(d, r))
        say(f"fan-in D={d}: evict hot {fan[-1]['evict_hot']:,.0f} µs, checkpoint adding a dependent "
            f"{fan[-1]['ckpt_hot']:,.1f} µs, unrelated artifact {fan[-1]['art_other']:,.1f} µs")
    many = []
    for a in arts:
        many.append(many_artifacts(a, mix))
        say(f"{a} artifacts: mean {many[-1]['all']:,.1f} µs/event (built in {many[-1]['build_s']:.1f}s)")
    scale = args.shapes_scale if args.shapes_scale is not None else (0.1 if args.quick else 1.0)
    grown = []
    for name, (_, friendly, small, large, options) in SHAPES.items() if scale > 0 else ():
        sizes = [max(20, int(small * scale)), max(40, int(large * scale))]
        window = max(10, min(1000, sizes[0] // 5))
        row: dict[str, Any] = {"shape": name}
        for key, n in zip(("small", "large"), sizes):
            row[key] = shape_growth(name, n, window, options)
        if friendly is not None:
            row["friendly"] = shape_friendly(name, sizes[1], window, options)
        grown.append(row)
        say(f"{name}: median {row['small']['median']:,.1f} -> {row['large']['median']:,.1f} µs/event, whole shape "
            f"{row['small']['whole']:,.1f} -> {row['large']['whole']:,.1f} ({sizes[0]:,} -> {sizes[1]:,})")
    parts = []
    if grown:
        worst = max(grown, key=lambda r: r["large"]["median"] / r["small"]["median"])
        whole = max(grown, key=lambda r: r["large"]["whole"] / r["small"]["whole"])
        ratios = [(r["large"]["whole"] / r["friendly"], r["shape"]) for r in grown if r.get("friendly")]
        parts.append(f"shapes: worst per-event growth {worst['large']['median'] / worst['small']['median']:.2f}x "
                     f"median ({worst['shape']}), {whole['large']['whole'] / whole['small']['whole']:.2f}x whole "
                     f"shape ({whole['shape']})"
                     + (", worst hostile/friendly {:.2f}x ({})".format(*max(ratios)) if ratios else ""))
    if len(fan) > 1:
        a, b = fan[0], fan[-1]
        parts.append(
            f"D = {a['d']:,} -> {b['d']:,} dependents of one artifact: its eviction "
            f"{a['evict_hot']:,.0f} -> {b['evict_hot']:,.0f} µs ({b['evict_hot'] / max(b['alerts_evict'], 1):,.0f} "
            f"µs per alert), unrelated events {a['art_other']:,.1f} -> {b['art_other']:,.1f} µs"
        )
    if len(many) > 1:
        a, b = many[0], many[-1]
        parts.append(f"{a['a']:,} -> {b['a']:,} artifacts: median {a['median']:,.1f} -> {b['median']:,.1f} µs/event")
    write_out(args.out, render(argv, fan, many, t_start, load_start, args.title, grown), "; ".join(parts))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
