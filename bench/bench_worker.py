"""End-to-end benchmark of the faust worker on a real local Kafka broker.

    python -m bench.bench_worker [--events N] [--runs R] [--rates 1000,5000] [--out FILE]
                                 [--quick] [--profile SECONDS] [--phases real,synthetic,latency]

One run, in this order (every figure is printed as one Markdown section at the end,
and written to ``--out FILE`` too):

More (the module notes): bench/METHODS.md, section ``bench/bench_worker.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import logging
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiokafka.errors import KafkaError

from bench.common import (
    WorkerProc, command_line, copies_of, cpu_seconds, create_topic_set, find_py_spy, git_rev, loadavg, machine_info,
    metric_values, pdeathsig, say, versions, warm_group_coordinator, write_out,
)
from stream.adapters import SimulationParams, encode_event, load_trajectories, simulate
from stream.devtools import kafka_local
from stream.kafka_clients import admin, consumer, producer
from stream.offline.replay import replay_lines
from stream.settings import Settings, get_settings

REPO = Path(__file__).resolve().parent.parent
PARTITIONS = 4
LATENCY_CONTEXTS = 64
#: Issue 25's goal per offered rate: p99 event -> alert (s).
GOALS = {1000: 0.050, 5000: 0.250}
POLL = 0.1  # s between committed-offset polls
#: The synthetic stream's default size. At 3,000 events the measured window was 0.1-0.5 s: a few
#: 0.1 s polls, the start-up ramp and the drain's tail, not the worker's steady rate (docs/BENCHMARKS.md).
SYNTHETIC_EVENTS = 20_000
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ============================================================================ the streams

PROHIBITIONS = [
    "Do not modify tests", "Do not commit your changes", "Never push to main",
    "Do not use interactive editors", "Do not delete user data", "Never print secrets",
    "Do not change public APIs", "Do not add dependencies", "Never disable the linter",
    "Do not touch the CI configuration", "Do not rewrite history", "Never skip failing tests",
]
INSTRUCTIONS = [
    "Explain the reasoning", "Run the tests after each change", "Keep diffs small",
    "Read the relevant files first", "Reproduce the bug before fixing it",
    "Write a regression test", "Summarize the outcome",
]
SUMMARY = ("Investigated the failing path, read the module and its callers, reproduced "
           "the error with a script and narrowed it to the parser; ")


def reap_profilers(spy: list[subprocess.Popen], profile: float) -> None:
    """Wait for each py-spy process (``profile`` s of recording + 30 s), say why one failed, kill one that hangs."""
    for p in spy:
        try:
            _, err = p.communicate(timeout=profile + 30)
            if p.returncode != 0:
                say(f"py-spy failed: {err.decode(errors='replace')[-500:]}")
        except subprocess.TimeoutExpired:
            p.kill()


def _context_events(ctx: str, rng: random.Random) -> Iterator[dict[str, Any]]:
    """One context's checkpoint-heavy stream, endless; valid DESIGN.md §3 events, seq 0, 1, ...

    Per leaf: every third leaf an artifact is admitted to the live tier (4 in 5 also to
    the durable tier) and the oldest live one is evicted beyond a live window of 12
    (orphaning it where it is not durable); the leaf references 3-5 of the last 12
    artifacts and carries about 71 % of its 3 raw prohibitions; 30 % of the time one of
    the last 8 leaves is re-summarized (same content, or one time in four with one more
    referent from the whole history: non_idempotent if that one is gone). Every 4 leaves
    a section over them (carries ~34 % of their prohibitions) and the current root is
    re-emitted over its sections (at most 4, carries ~9 %). About 2/3 of the events are
    checkpoints (~500 bytes each); ~0.5 alerts per event.
    """
    seq = 0

    def ev(event_type: str, **fields: Any) -> dict[str, Any]:
        nonlocal seq
        e = {"type": event_type, "schema_version": 1, "event_id": f"{ctx}/e{seq}", "context_id": ctx,
             "seq": seq, **fields}
        seq += 1
        return e

    artifacts: list[str] = []
    live: list[str] = []
    leaves: dict[str, dict[str, Any]] = {}
    open_leaves: list[str] = []
    sections: list[str] = []
    section_raw: dict[str, list[str]] = {}
    root_refs: list[str] = []
    n_leaf = n_section = n_root = 0
    while True:
        if n_leaf % 3 == 0:
            aid = f"art-{len(artifacts)}"
            artifacts.append(aid)
            live.append(aid)
            yield ev("artifact", artifact_id=aid, op="admitted", tier="live", kind="tool_output")
            if rng.random() < 0.8:
                yield ev("artifact", artifact_id=aid, op="admitted", tier="durable", kind="durable_record")
            if len(live) > 12:
                yield ev("artifact", artifact_id=live.pop(0), op="evicted", tier="live")
        recent = artifacts[-12:]
        refs = sorted(rng.sample(recent, min(len(recent), rng.randint(3, 5))))
        raw = rng.sample(PROHIBITIONS, 3)
        lid = f"leaf-{n_leaf:05d}"
        n_leaf += 1
        rec = {
            "node_id": lid, "level": "leaf", "cycle": n_leaf, "children": [],
            "text": SUMMARY + f"leaf {lid}.", "referents": refs,
            "negative_constraints": [p for p in raw if rng.random() < 0.71],
            "raw_negative_constraints": raw,
            "instructions": rng.sample(INSTRUCTIONS, 2), "raw_instructions": rng.sample(INSTRUCTIONS, 3),
        }
        leaves[lid] = rec
        yield ev("checkpoint", **rec)
        open_leaves.append(lid)
        if len(leaves) > 1 and rng.random() < 0.3:
            old = leaves[rng.choice(list(leaves)[-8:])]
            again = dict(old)
            if rng.random() < 0.25:
                again["referents"] = sorted({*old["referents"], rng.choice(artifacts)})
            yield ev("checkpoint", **again)
        if len(open_leaves) == 4:
            sid = f"section-{n_section:05d}"
            n_section += 1
            required = sorted({p for lf in open_leaves for p in leaves[lf]["raw_negative_constraints"]})
            section_raw[sid] = required
            srefs = sorted({r for lf in open_leaves for r in leaves[lf]["referents"]})
            yield ev("checkpoint", node_id=sid, level="section", children=list(open_leaves),
                     text=SUMMARY + f"section {sid}.", referents=rng.sample(srefs, min(2, len(srefs))),
                     negative_constraints=[p for p in required if rng.random() < 0.34],
                     raw_negative_constraints=[])
            open_leaves = []
            sections.append(sid)
            if len(sections) == 1:
                root_refs = sorted(rng.sample(srefs, 1))
            below = sorted({p for s in sections for p in section_raw[s]})
            yield ev("checkpoint", node_id=f"root-{n_root:05d}", level="root", children=list(sections),
                     text=SUMMARY + "root.", referents=root_refs,
                     negative_constraints=[p for p in below if rng.random() < 0.09],
                     raw_negative_constraints=[])
            if len(sections) == 4:
                n_root += 1
                sections = []


def synthetic_events(n: int, *, contexts: int = 32, seed: int = 0) -> list[dict[str, Any]]:
    """``n`` events of the checkpoint-heavy stream, ``contexts`` contexts round-robin."""
    gens = [_context_events(f"bench-{c:03d}", random.Random(f"{seed}/{c}")) for c in range(contexts)]
    out: list[dict[str, Any]] = []
    while len(out) < n:
        for g in gens:
            out.append(next(g))
            if len(out) >= n:
                break
    return out


def real_events(paths: list[str], limit: int | None = None) -> list[dict[str, Any]]:
    """The demo's stream: trajectories through the compaction simulator (seed 0).

    ``limit``: only that many trajectories, picked evenly over the loaded ones (a quick run).
    """
    loaded = load_trajectories(paths)
    if not loaded.trajectories:
        raise SystemExit(f"bench_worker: no trajectories in {', '.join(paths)}")
    trajectories = list(loaded.trajectories)
    if limit and limit < len(trajectories):
        step = len(trajectories) / limit
        trajectories = [trajectories[int(i * step)] for i in range(limit)]
    params = SimulationParams()
    return [e for t in trajectories for e in simulate(t, params)]


@dataclass
class Stream:
    name: str
    events: list[dict[str, Any]]
    lines: list[bytes] = field(default_factory=list)
    topics: tuple[str, str] = ("", "")
    expected_alerts: int = 0
    expected_verdicts: int = 0
    expected_processed: int = 0  # events the worker counts: all but those still waiting for a seq at the end

    def __post_init__(self) -> None:
        self.lines = [encode_event(e).encode() for e in self.events]

    @property
    def kinds(self) -> Counter:
        return Counter(e["type"] for e in self.events)

    @property
    def bytes(self) -> int:
        return sum(len(x) for x in self.lines)


# ============================================================================ process helpers

def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    with open("/proc/stat") as f:
        vals = [int(x) for x in f.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    return sum(vals) - idle, sum(vals)


def main_sched(pid: int) -> tuple[int, int]:
    """(ns on CPU, ns runnable but waiting for a CPU) of a process's main thread."""
    try:
        with open(f"/proc/{pid}/task/{pid}/schedstat") as f:
            on, wait, _ = f.read().split()
        return int(on), int(wait)
    except (OSError, ValueError):
        return 0, 0


class Worker(WorkerProc):
    """One ``python -m stream worker`` subprocess of this bench: :class:`bench.common.WorkerProc` with the
    bench's data dir and log (a fresh log each start), the data dir removed at stop."""

    def __init__(self, bench: Bench, app_id: str, inputs: tuple[str, str], outputs: tuple[str, str, str]) -> None:
        super().__init__(bench.settings, app_id, inputs, outputs, bench.tmp / f"data-{app_id}",
                         bench.tmp / f"{app_id}.log", loglevel=bench.args.worker_loglevel)
        self.bench = bench

    def metric(self, name: str, timeout: float = 1.0) -> dict[str, float]:
        """``{labels: value}`` of ``checkpoint_guard_<name>`` at /metrics ({} while it does not answer)."""
        return metric_values(self.web_port, name, timeout)

    def start(self) -> Worker:
        self.log_path.unlink(missing_ok=True)
        tree = self.bench.args.worker_tree
        if not tree:
            super().start()
            return self
        # --worker-tree: the same bench, broker and stream, the worker code of another checkout (A/B).
        env = {**self.env(), "PYTHONPATH": str(tree)}
        self._log = open(self.log_path, "ab")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stream", "worker", "-l", self.loglevel, "--web-port", str(self.web_port)],
            env=env, cwd=tree, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=pdeathsig)
        WorkerProc.live.append(self)
        return self

    def log_tail(self, n: int = 30) -> str:
        return super().log_tail(n)

    def stop(self, timeout: float = 30) -> float:
        took = super().stop(timeout)
        shutil.rmtree(self.data_dir, ignore_errors=True)
        return took


class Relay(WorkerProc):
    """``python -m bench.relay_app``: a raw aiokafka consume -> produce loop in the worker's
    place (the latency floor of this machine, broker and bench; no engine, no faust)."""

    def __init__(self, bench: Bench, app_id: str, inputs: tuple[str, str], outputs: tuple[str, str, str]) -> None:
        super().__init__(bench.settings, app_id, inputs, outputs, bench.tmp / f"data-{app_id}",
                         bench.tmp / f"{app_id}.log")

    def start(self) -> Relay:
        self._log = open(self.log_path, "ab")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bench.relay_app", self.settings.bootstrap_servers, self.app_id, self.inputs[1],
             self.outputs[0]], cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=pdeathsig)
        WorkerProc.live.append(self)
        return self


# ============================================================================ measurements

@dataclass
class Snap:
    """Counters at one moment: committed events, worker/broker/machine CPU, main-thread schedstat."""

    t: float
    done: int
    cpu: float
    machine: tuple[float, float]
    broker: float | None
    sched: tuple[int, int]  # main thread: ns on CPU, ns runnable but waiting for a CPU

    @classmethod
    def take(cls, bench: Bench, worker: Worker, t: float, done: int) -> Snap:
        return cls(t, done, cpu_seconds(worker.pid), machine_cpu(), bench.broker_cpu(), main_sched(worker.pid))


@dataclass
class DrainResult:
    """A worker's drain of pre-filled topics: throughput over a window of steady processing.

    The progress signal is the number of events the worker has *applied*: its
    ``checkpoint_guard_events_total`` counter at ``/metrics`` (all outcomes but
    ``buffered``; an event counts once its outputs are handed to the producer). The window
    runs from the first poll that sees an applied event to the poll that sees all of them
    (``method="applied"``). Committed input offsets are not used for the rate: the worker
    commits once per ``CG_COMMIT_INTERVAL`` (1 s), too coarse for a run of a few seconds,
    and a small input topic is consumed (its events buffered by ``seq``) ahead of the
    work. If the counter never reaches the event count (metrics disabled), the window
    falls back to the first and last commit points before the end offsets (``"commits"``),
    or to the final commit for a short stream (``"final-commit"``).
    """

    total: int
    start: float                    # worker process start (monotonic)
    first: Snap
    last: Snap                      # end of the measured window
    final: Snap                     # all committed
    method: str                     # "applied" | "commits" | "final-commit"

    @property
    def window(self) -> float:
        return max(self.last.t - self.first.t, 1e-9)

    @property
    def events_in_window(self) -> int:
        return self.last.done - self.first.done

    @property
    def rate(self) -> float:
        return self.events_in_window / self.window

    @property
    def cpu(self) -> float:
        return self.last.cpu - self.first.cpu

    @property
    def cpu_use(self) -> float:
        return self.cpu / self.window

    @property
    def cpu_us_per_event(self) -> float:
        return self.cpu / max(self.events_in_window, 1) * 1e6

    @property
    def machine_busy(self) -> float:
        return (self.last.machine[0] - self.first.machine[0]) / max(self.last.machine[1] - self.first.machine[1], 1)

    @property
    def broker_cpu(self) -> float | None:
        if self.first.broker is None or self.last.broker is None:
            return None
        return self.last.broker - self.first.broker

    @property
    def main_oncpu(self) -> float:
        return (self.last.sched[0] - self.first.sched[0]) / 1e9 / self.window

    @property
    def main_runq(self) -> float:
        return (self.last.sched[1] - self.first.sched[1]) / 1e9 / self.window

    @property
    def wall_from_start(self) -> float:
        return self.final.t - self.start

    @property
    def first_progress_at(self) -> float:
        return self.first.t - self.start


async def end_offsets(settings: Settings, topics: tuple[str, ...] | list[str]) -> dict[Any, int]:
    from aiokafka import TopicPartition

    c = consumer(settings, enable_auto_commit=False, group_id=None)
    await c.start()
    try:
        return await c.end_offsets([TopicPartition(t, p) for t in topics for p in range(PARTITIONS)])
    finally:
        await c.stop()


async def wait_drained(bench: Bench, worker: Worker, timeout: float, on_first=None,
                       applied_target: int | None = None) -> DrainResult:
    """Poll the worker's progress every POLL s until its committed offsets reach the end offsets.

    ``applied_target``: the number of events the worker will apply (default: every input
    record); ``on_first`` is called when the first progress is seen.
    """

    s = bench.settings
    ends = await end_offsets(s, worker.inputs)
    total = sum(ends.values())
    target = total if applied_target is None else applied_target
    a = admin(s)
    await a.start()
    c = consumer(s, enable_auto_commit=False, group_id=None)
    await c.start()
    commits: list[Snap] = []
    applied: list[Snap] = []

    async def applied_count() -> int:
        return await asyncio.to_thread(worker.events_processed)

    try:
        while True:
            try:
                committed = await a.list_consumer_group_offsets(worker.app_id)
            except KafkaError:  # e.g. the group coordinator is not there yet on a fresh broker
                committed = {}
            n_applied = await applied_count()
            now = time.monotonic()
            done = sum(min(committed[tp].offset, end) for tp, end in ends.items()
                       if tp in committed and committed[tp].offset >= 0)
            if n_applied > 0 and (not applied or (applied[-1].done < target <= n_applied)):
                applied.append(Snap.take(bench, worker, now, n_applied))
            if done > 0 and (not commits or done != commits[-1].done):
                commits.append(Snap.take(bench, worker, now, done))
            if on_first is not None and (applied or commits):
                on_first()
                on_first = None
            if done >= total:
                break
            if not worker.alive():
                raise RuntimeError(f"worker {worker.app_id} exited ({worker.proc.returncode}):\n{worker.log_tail()}")
            if now - worker.started_at > timeout:
                raise RuntimeError(f"worker {worker.app_id} did not drain {total} records in {timeout:.0f}s "
                                   f"({done} done):\n{worker.log_tail()}")
            await asyncio.sleep(POLL)
        if applied and applied[-1].done < target:  # the counter may trail the commit
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                n_applied = await applied_count()
                if n_applied >= target:
                    applied.append(Snap.take(bench, worker, time.monotonic(), n_applied))
                    break
                await asyncio.sleep(POLL)
    finally:
        await a.close()
        await c.stop()
    final = commits[-1]
    if len(applied) >= 2 and applied[-1].done >= target:
        return DrainResult(total, worker.started_at, applied[0], applied[-1], final, "applied")
    partial = commits[:-1]
    if len(partial) >= 2 and partial[-1].t - commits[0].t >= 2.0:
        return DrainResult(total, worker.started_at, commits[0], partial[-1], final, "commits")
    return DrainResult(total, worker.started_at, commits[0], final, final, "final-commit")


async def raw_consume(settings: Settings, topics: tuple[str, str], total: int) -> tuple[float, int, list[Any]]:
    """Assign every partition, read from the beginning to the end offsets; (seconds, bytes, records)."""
    from aiokafka import TopicPartition

    c = consumer(settings, enable_auto_commit=False, group_id=None, auto_offset_reset="earliest")
    await c.start()
    try:
        tps = [TopicPartition(t, p) for t in topics for p in range(PARTITIONS)]
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        for tp in tps:  # resolve positions before the clock starts
            await c.position(tp)
        n = nbytes = 0
        records: list[Any] = []
        t0 = time.perf_counter()
        while n < total:
            batch = await c.getmany(timeout_ms=1000)
            for msgs in batch.values():
                n += len(msgs)
                for m in msgs:
                    nbytes += len(m.value)
                records.extend(msgs)
        return time.perf_counter() - t0, nbytes, records
    finally:
        await c.stop()


def inprocess_costs(records: list[Any]) -> tuple[float, float]:
    """(decode µs/event, engine µs/event) over consumed records, in this process, no Kafka."""
    from stream.domain.engine import Engine
    from stream.domain.events import Source
    from stream.domain.state import DictState
    from stream.wire import decode_event

    # Per partition, in offset order: what one worker sees (contexts never span partitions).
    ordered = sorted(records, key=lambda m: (m.partition, m.topic, m.offset))
    t0 = time.perf_counter()
    decoded = [(decode_event(m.value), Source(m.topic, m.partition, m.offset)) for m in ordered]
    t_decode = time.perf_counter() - t0
    # The order across the two topics is not recoverable; feed each context's events in
    # seq order (the order the engine applies them in anyway).
    decoded.sort(key=lambda x: (x[0].context_id, x[0].seq if x[0].seq is not None else -1))
    engine, state = Engine(), DictState()
    t0 = time.perf_counter()
    for ev, src in decoded:
        engine.process(state, ev, src)
    t_engine = time.perf_counter() - t0
    n = max(len(records), 1)
    return t_decode / n * 1e6, t_engine / n * 1e6


# ============================================================================ the latency test

class AlertWatcher(threading.Thread):
    """Reads an alerts topic from its current end; records (trigger event id, arrival)."""

    def __init__(self, settings: Settings, topic: str) -> None:
        super().__init__(daemon=True, name="alert-watcher")
        self.settings = settings
        self.topic = topic
        self.ready = threading.Event()
        self.halt = threading.Event()
        self.arrivals: dict[str, float] = {}
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._run())
        except BaseException as exc:  # reported by the caller
            self.error = exc
            self.ready.set()

    async def _run(self) -> None:
        from aiokafka import TopicPartition

        c = consumer(self.settings, enable_auto_commit=False, group_id=None, fetch_max_wait_ms=50)
        await c.start()
        try:
            tps = [TopicPartition(self.topic, p) for p in range(PARTITIONS)]
            c.assign(tps)
            await c.seek_to_end(*tps)
            for tp in tps:
                await c.position(tp)
            self.ready.set()
            while not self.halt.is_set():
                batch = await c.getmany(timeout_ms=100)
                now = time.monotonic()
                for msgs in batch.values():
                    for m in msgs:
                        trig = json.loads(m.value)["trigger"]["event_id"]
                        self.arrivals.setdefault(trig, now)
        finally:
            await c.stop()


#: A latency: (seconds, censored). Censored = the alert had not arrived when the bench
#: stopped waiting, so the value (send -> end of waiting) is only a lower bound.
Lat = tuple[float, bool]
NO_LAT: Lat = (float("nan"), False)


def pct(sorted_vals: list[Lat], q: float) -> Lat:
    """Nearest-rank percentile of latencies sorted by value."""
    if not sorted_vals:
        return NO_LAT
    k = max(0, min(len(sorted_vals) - 1, int(round(q / 100 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


@dataclass
class LatencyResult:
    rate: int
    seconds: float
    sent: int
    send_seconds: float
    received: int
    received_while_sending: int
    drain_limit: float
    p50: Lat
    p99: Lat
    max: Lat
    p50_first: Lat
    p50_last: Lat
    alert_rate: float
    worker_cpu_share: float
    main_on: float
    main_rq: float
    cpu_us_per_event: float = float("nan")  # worker CPU (user + sys) over the window / alerts received
    relay: bool = False  # the raw aiokafka relay in the worker's place

    @property
    def goal(self) -> float | None:
        """Issue 25's p99 goal at this rate (s): 50 ms at 1,000/s, 250 ms at 5,000/s."""
        if self.relay:
            return None
        return GOALS.get(self.rate)

    @property
    def met(self) -> bool:
        return self.kept_up and self.goal is not None and self.p99[0] <= self.goal

    @property
    def achieved(self) -> float:
        return self.sent / self.send_seconds

    @property
    def kept_up(self) -> bool:
        return self.received == self.sent and self.p99[0] < 1.0


async def _seed_latency(settings: Settings, topics: tuple[str, str]) -> list[str]:
    contexts = [f"lat-{i:03d}" for i in range(LATENCY_CONTEXTS)]
    p = producer(settings, linger_ms=5)
    await p.start()
    try:
        futs = []
        for ctx in contexts:
            art = {"type": "artifact", "schema_version": 1, "event_id": f"{ctx}/seed0", "context_id": ctx,
                   "seq": 0, "artifact_id": "art-0", "op": "admitted", "tier": "live"}
            leaf = {"type": "checkpoint", "schema_version": 1, "event_id": f"{ctx}/seed1", "context_id": ctx,
                    "seq": 1, "node_id": "leaf-0", "level": "leaf", "referents": ["art-0"],
                    "text": SUMMARY}
            futs.append(await p.send(topics[1], encode_event(art).encode(), key=ctx.encode()))
            futs.append(await p.send(topics[0], encode_event(leaf).encode(), key=ctx.encode()))
        await asyncio.gather(*futs)
    finally:
        await p.stop()
    return contexts


async def _paced_send(settings: Settings, topic: str, contexts: list[str], rate: int, seconds: float,
                      stamps: dict[str, float], first: int = 0) -> float:
    """Send rate*seconds flip events at a fixed rate, the ``first`` flips already sent;
    returns the sending time (s)."""
    p = producer(settings, linger_ms=0)
    await p.start()
    futs = []
    try:
        n = first + int(rate * seconds)
        k = len(contexts)
        t0 = time.monotonic()
        i = first
        while i < n:
            due = min(n, first + int((time.monotonic() - t0) * rate) + 1)
            while i < due:
                ctx = contexts[i % k]
                flip = i // k
                eid = f"{ctx}/f{flip}"
                ev = {"type": "artifact", "schema_version": 1, "event_id": eid, "context_id": ctx,
                      "seq": 2 + flip, "artifact_id": "art-0",
                      "op": "evicted" if flip % 2 == 0 else "admitted", "tier": "live"}
                stamps[eid] = time.monotonic()
                futs.append(await p.send(topic, encode_event(ev).encode(), key=ctx.encode()))
                i += 1
            await asyncio.sleep(0.005)
        elapsed = time.monotonic() - t0
        await asyncio.gather(*futs)
        return elapsed
    finally:
        await p.stop()


# ============================================================================ the bench

class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.tmp = Path(tempfile.mkdtemp(prefix="cg-bench-worker-"))
        self.settings: Settings = get_settings()
        self.broker: kafka_local.BrokerInfo | None = None
        self.kafka_version = "?"
        self.results: dict[str, Any] = {"throughput": [], "latency": [], "profile": None, "errors": []}
        self.latency_profile: Path | None = None  # py-spy's file of the last latency run profiled
        self.t_start = time.monotonic()
        self.load_start = loadavg()

    # ------------------------------------------------------------------ broker
    def start_broker(self) -> None:
        if self.args.broker:
            bootstrap = self.args.broker.split("://")[-1]
            self.settings = self.settings.model_copy(update={"broker": f"kafka://{bootstrap}"})
            self.kafka_version = f"{self.settings.kafka_version} (running broker at {bootstrap})"
            say(f"using the running broker at {bootstrap}")
            return
        for attempt in range(3):
            port, cport = ((self.args.kafka_port, self.args.kafka_port + 1) if self.args.kafka_port
                           else kafka_local.free_ports(2))
            self.settings = self.settings.model_copy(update={
                "kafka_home": self.tmp / "kafka", "kafka_port": port, "kafka_controller_port": cport,
                "broker": f"kafka://127.0.0.1:{port}",
            })
            try:
                self.broker = kafka_local.start(self.settings, fresh=True, die_with_parent=True)
                break
            except kafka_local.PortInUseError:
                if attempt == 2:
                    raise
        self.kafka_version = self.broker.version
        say(f"Kafka {self.broker.version} ready at {self.broker.bootstrap} in {self.broker.ready_seconds:.1f}s")
        asyncio.run(warm_group_coordinator(self.settings))

    def broker_cpu(self) -> float | None:
        if self.broker is None:
            return None
        try:
            return cpu_seconds(self.broker.pid)
        except OSError:
            return None

    def stop_all(self) -> None:
        for w in list(WorkerProc.live):
            with contextlib.suppress(Exception):
                w.stop()
        if self.broker is not None:
            res = kafka_local.stop(self.settings)
            say(res.message)
            self.broker = None

    # ------------------------------------------------------------------ helpers
    def topic_set(self, tag: str) -> tuple[tuple[str, str], tuple[str, str, str, str]]:
        return ((f"{tag}-compaction", f"{tag}-artifact"),
                (f"{tag}-alerts", f"{tag}-verdicts", f"{tag}-deadletter", f"{tag}-status"))

    async def create(self, tag: str) -> None:
        """Create one measurement's topics as ``python -m stream topics create`` does (the
        status topic compacted) and wait until every partition has a leader."""
        await create_topic_set(self.settings, *self.topic_set(tag))

    async def produce(self, stream: Stream) -> float:
        topic = {"checkpoint": stream.topics[0], "artifact": stream.topics[1]}
        p = producer(self.settings, enable_idempotence=True, linger_ms=5)
        await p.start()
        t0 = time.perf_counter()
        try:
            futs = [await p.send(topic[e["type"]], line, key=e["context_id"].encode())
                    for e, line in zip(stream.events, stream.lines)]
            await asyncio.gather(*futs)
        finally:
            await p.stop()
        return time.perf_counter() - t0

    # ------------------------------------------------------------------ throughput
    def prepare(self, name: str, events: list[dict[str, Any]]) -> Stream:
        st = Stream(name, events)
        off = replay_lines(st.lines, seq_gap_limit=self.settings.seq_gap_limit)
        if off.dead_letters:
            raise SystemExit(f"bench_worker: {name} stream has invalid events: {off.dead_letters[:3]}")
        st.expected_alerts, st.expected_verdicts = len(off.alerts), len(off.verdicts)
        st.expected_processed = len(st.events) - sum(len(v) for v in off.waiting.values())
        tag = f"{name}-{uuid.uuid4().hex[:6]}"
        st.topics = self.topic_set(tag)[0]
        asyncio.run(self.create(tag))
        secs = asyncio.run(self.produce(st))
        say(f"{name}: produced {len(st.events)} events ({st.kinds['checkpoint']} checkpoints, "
            f"{st.kinds['artifact']} artifacts, {st.bytes / 1e6:.1f} MB) in {secs:.1f}s; "
            f"offline replay: {st.expected_alerts} alerts")
        return st

    def worker_run(self, st: Stream, run: int, *, profile: float = 0.0) -> dict[str, Any]:
        tag = f"bw-{st.name}-{run}-{uuid.uuid4().hex[:6]}"
        _, outputs = self.topic_set(tag)
        asyncio.run(self.create(tag))
        w = Worker(self, tag, st.topics, outputs).start()
        spy: list[subprocess.Popen] = []
        spy_file = self.tmp / f"{tag}.pyspy.txt"

        def first_progress() -> None:
            if profile:
                spy.append(subprocess.Popen(
                    [find_py_spy() or "py-spy", "record", "--pid", str(w.pid), "--format", "raw",
                     # --native needs py-spy to pause the worker for each sample (slower, same shares)
                     *([] if self.args.profile_native else ["--nonblocking"]),
                     "--duration", str(int(profile)), "--rate", "100", "-o", str(spy_file),
                     *(["--idle"] if self.args.profile_idle else []),
                     *(["--native"] if self.args.profile_native else [])],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pdeathsig))

        try:
            d = asyncio.run(wait_drained(self, w, self.args.timeout, first_progress,
                                         applied_target=st.expected_processed))
            if d.method != "applied":
                say(f"note: {st.name} run {run} measured by {d.method} (events_total did not reach "
                    f"{st.expected_processed})")
            state_log = self.settings.model_copy(update={"app_id": tag}).state_topic
            ends = asyncio.run(end_offsets(self.settings, [*outputs, state_log]))
            alerts = sum(v for tp, v in ends.items() if tp.topic == outputs[0])
            verdicts = sum(v for tp, v in ends.items() if tp.topic == outputs[1])
            dead = sum(v for tp, v in ends.items() if tp.topic == outputs[2])
            statuses = sum(v for tp, v in ends.items() if tp.topic == outputs[3])
            changelog = sum(v for tp, v in ends.items() if tp.topic == state_log)
            buffered = int(sum(v for k, v in w.metric("events_total").items() if 'outcome="buffered"' in k))
        finally:
            reap_profilers(spy, profile)
            w.stop()
        log_text = w.log_path.read_text(errors="replace") if w.log_path.exists() else ""
        warnings = {"WARNING": log_text.count("[WARNING]"), "ERROR": log_text.count("[ERROR]")}
        ok = alerts >= st.expected_alerts and dead == 0
        res = {"stream": st.name, "run": run, "drain": d, "alerts": alerts, "dead_letters": dead, "ok": ok,
               "verdicts": verdicts, "statuses": statuses, "changelog": changelog, "buffered": buffered,
               "warnings": warnings}
        say(f"{st.name} worker run {run}: {d.rate:,.0f} events/s ({d.events_in_window} events in {d.window:.1f}s, "
            f"by {d.method}; first progress {d.first_progress_at:.1f}s after start; start->drained "
            f"{d.wall_from_start:.1f}s), worker CPU {d.cpu_use:.0%} (main thread on CPU {d.main_oncpu:.0%}, "
            f"waiting for a CPU {d.main_runq:.0%}), machine busy {d.machine_busy:.0%}; "
            f"alerts {alerts}/{st.expected_alerts}; {changelog / len(st.events):.3f} state-log records/event; "
            f"{buffered / len(st.events):.0%} of events waited for an earlier seq; worker log: "
            f"{', '.join(f'{k} x{v}' for k, v in warnings.items())}"
            f"{'' if ok else '  <-- MISMATCH'}")
        if profile:
            res["profile_file"] = spy_file if spy_file.exists() else None
        return res

    def throughput(self, st: Stream) -> None:
        runs = self.args.runs
        worker_runs = [self.worker_run(st, r + 1) for r in range(runs)]
        raw_runs = []
        records: list[Any] = []
        total = len(st.events)
        for r in range(runs):
            secs, nbytes, records = asyncio.run(raw_consume(self.settings, st.topics, total))
            raw_runs.append((total / secs, nbytes / secs))
            say(f"{st.name} raw consume run {r + 1}: {total / secs:,.0f} events/s ({nbytes / secs / 1e6:.1f} MB/s)")
        dec_us, eng_us = inprocess_costs(records)
        say(f"{st.name} in-process: decode {dec_us:.1f} µs/event, engine {eng_us:.1f} µs/event")
        self.results["throughput"].append({
            "stream": st, "worker_runs": worker_runs, "raw_runs": raw_runs,
            "decode_us": dec_us, "engine_us": eng_us,
        })

    # ------------------------------------------------------------------ latency
    def latency(self, rate: int, *, profile: float = 0.0, relay: bool = False) -> LatencyResult:
        """One latency measurement at ``rate``; ``profile`` > 0: py-spy records the worker for
        that many seconds from the first paced send (the profile's run, not in the table);
        ``relay``: the raw aiokafka relay (:class:`Relay`) in the worker's place."""
        tag = f"lat{rate}-{uuid.uuid4().hex[:6]}"
        inputs, outputs = self.topic_set(tag)
        asyncio.run(self.create(tag))
        contexts = asyncio.run(_seed_latency(self.settings, inputs))
        w: WorkerProc = (Relay if relay else Worker)(self, f"bw-{tag}", inputs, outputs).start()
        watcher: AlertWatcher | None = None
        spy: list[subprocess.Popen] = []
        spy_file = self.tmp / f"{tag}.pyspy.txt"
        try:
            if relay:  # ready when it relays: the warm-up's first alerts come back
                deadline = time.monotonic() + 60
                while "relay ready" not in w.log_tail(5) and time.monotonic() < deadline:
                    if not w.alive():
                        raise RuntimeError(f"relay exited:\n{w.log_tail()}")
                    time.sleep(0.2)
            else:
                asyncio.run(wait_drained(self, w, self.args.timeout))
            time.sleep(1.0)  # let the first commits settle: the worker is idle and caught up
            watcher = AlertWatcher(self.settings, outputs[0])
            watcher.start()
            watcher.ready.wait(30)
            if watcher.error:
                raise watcher.error
            warm: dict[str, float] = {}  # the warm-up's alerts: awaited, not counted
            if self.args.latency_warmup:
                asyncio.run(_paced_send(self.settings, inputs[1], contexts, rate, self.args.latency_warmup, warm))
                deadline = time.monotonic() + self.args.latency_drain
                while not all(e in watcher.arrivals for e in warm) and time.monotonic() < deadline:
                    time.sleep(0.1)
            stamps: dict[str, float] = {}
            if profile:
                spy.append(subprocess.Popen(
                    [find_py_spy() or "py-spy", "record", "--pid", str(w.pid), "--format", "raw", "--nonblocking",
                     "--duration", str(int(profile)), "--rate", "100", "-o", str(spy_file)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=pdeathsig))
            cpu0, t0, sch0 = cpu_seconds(w.pid), time.monotonic(), main_sched(w.pid)
            send_secs = asyncio.run(_paced_send(self.settings, inputs[1], contexts, rate,
                                                self.args.latency_seconds, stamps, first=len(warm)))
            deadline = time.monotonic() + self.args.latency_drain
            while len(watcher.arrivals) < len(stamps) + len(warm) and time.monotonic() < deadline:
                if not w.alive():
                    raise RuntimeError(f"latency worker exited:\n{w.log_tail()}")
                time.sleep(0.2)
            cpu1, t1, sch1 = cpu_seconds(w.pid), time.monotonic(), main_sched(w.pid)
            watcher.halt.set()
            watcher.join(10)
            arrivals = dict(watcher.arrivals)
        finally:
            if watcher is not None:
                watcher.halt.set()
            reap_profilers(spy, profile)
            w.stop()
        self.latency_profile = spy_file if profile and spy_file.exists() else None
        first_ts = min(stamps.values())
        last_ts = max(stamps.values())

        def lat_of(e: str, ts: float) -> Lat:
            return (arrivals[e] - ts, False) if e in arrivals else (t1 - ts, True)

        lat = sorted(lat_of(e, ts) for e, ts in stamps.items())

        def p50_between(a: float, b: float) -> Lat:
            return pct(sorted(lat_of(e, ts) for e, ts in stamps.items() if a <= ts - first_ts < b), 50)

        got = [t for e, t in arrivals.items() if e in stamps]
        alert_rate = len(got) / (max(got) - first_ts) if got else 0.0
        censored = [x for x in lat if x[1]]
        res = LatencyResult(
            rate=rate, seconds=self.args.latency_seconds, sent=len(stamps), send_seconds=send_secs,
            received=len(got), received_while_sending=sum(1 for t in got if t <= last_ts),
            drain_limit=self.args.latency_drain,
            p50=pct(lat, 50), p99=pct(lat, 99),
            max=max(censored) if censored else (lat[-1] if lat else NO_LAT),
            p50_first=p50_between(0, 2), p50_last=p50_between(last_ts - first_ts - 2, float("inf")),
            alert_rate=alert_rate, worker_cpu_share=(cpu1 - cpu0) / (t1 - t0),
            main_on=(sch1[0] - sch0[0]) / 1e9 / (t1 - t0), main_rq=(sch1[1] - sch0[1]) / 1e9 / (t1 - t0),
            cpu_us_per_event=(cpu1 - cpu0) / max(len(got), 1) * 1e6, relay=relay,
        )
        say(f"latency @ {rate}/s: sent {res.sent} at {res.achieved:,.0f}/s, received {res.received} "
            f"({res.received_while_sending} while sending), p50 {fmt_lat(res.p50)} p99 {fmt_lat(res.p99)} "
            f"max {fmt_lat(res.max)}; alerts/s {alert_rate:,.0f}")
        return res

    # ------------------------------------------------------------------ profile
    def profile(self, st: Stream | None) -> None:
        """py-spy on one extra run: of ``st``, or (``st`` None: ``--profile-stream latency``)
        of the latency test at the highest ``--rates`` rate, from its first paced send."""
        if not find_py_spy():
            raise RuntimeError("py-spy not found (pip install -e '.[bench]'); no profile")
        if st is None:
            rate = max(self.args.rate_list or [5000])
            lat = self.latency(rate, profile=min(self.args.profile, self.args.latency_seconds))
            res: dict[str, Any] = {"latency": lat}
            f = self.latency_profile
            name = f"latency @ {rate:,}/s"
        else:
            res = self.worker_run(st, 0, profile=self.args.profile)
            f = res.get("profile_file")
            name = st.name
        if f is None:
            say("py-spy produced no output; skipping the profile")
            return
        if self.args.keep_profile:
            Path(self.args.keep_profile).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(f, self.args.keep_profile)
            say(f"py-spy folded stacks written to {self.args.keep_profile}")
        if self.args.flamegraph:
            from bench.flamegraph import folded_to_svg

            Path(self.args.flamegraph).parent.mkdir(parents=True, exist_ok=True)
            folded_to_svg(Path(f), Path(self.args.flamegraph),
                          f"checkpoint-guard worker, {name} stream, py-spy {self.args.profile:.0f} s")
            say(f"flame graph written to {self.args.flamegraph}")
        self.results["profile"] = {"run": res, "summary": summarize_profile(Path(f)), "stream": name}


# ============================================================================ py-spy summary

#: (component, regex on a frame "function (path:line)"). A sample belongs to the component of
#: its innermost frame that is not generic plumbing (asyncio, selectors, functools, ...): a
#: socket write issued by aiokafka's connection counts as aiokafka, json.dumps called by
#: the state store as JSON. Any logging frame makes the sample "logging".
COMPONENTS = [
    ("logging (log records built and filtered)", r"\(logging/"),
    ("JSON encode/decode (json, pydantic_core)", r"\(json/|pydantic_core|orjson"),
    ("RocksDB (rocksdict)", r"rocksdict"),
    ("pydantic validation (stream.wire)", r"pydantic/|stream/wire\.py"),
    ("engine (stream.domain)", r"stream/domain/"),
    ("the worker's state (stream.worker: store, durability, statelog)",
     r"stream/worker/(?:store|durability|statelog)\.py"),
    ("the worker's runtime (stream.worker: runtime, handler, merge, outputs)", r"stream/worker/"),
    ("aiokafka producer (sender, accumulator)", r"aiokafka/producer/"),
    ("aiokafka consumer (fetcher)", r"aiokafka/consumer/"),
    ("aiokafka connection / protocol / socket I/O", r"aiokafka/"),
    ("faust topics / producer buffer", r"faust/topics\.py|faust/transport/producer|faust/transport/drivers/aiokafka"),
    ("faust stream / agent / consumer machinery", r"faust/"),
    ("mode (faust's service framework)", r"\(mode/"),
]
GENERIC = re.compile(
    r"\((?:asyncio/|selectors\.py|functools\.py|contextlib\.py|typing\.py|abc\.py|"
    r"weakref\.py|threading\.py|<frozen|socket\.py|ssl\.py|enum\.py|"
    r"mode/worker\.py|mode/threads\.py|faust/cli/|stream/__main__\.py|stream/cli\.py|stream/commands/worker\.py|click/)"
    r"|^App\.main "
)
ROOT_CHAIN = re.compile(
    r"faust/cli/|stream/__main__\.py|stream/cli\.py|stream/commands/worker\.py|mode/worker\.py|<frozen runpy>|"
    r"App\.main |click/|asyncio/"
)


def _frame_key(frame: str) -> str:
    """``func (path/to/pkg/mod.py:12)`` -> ``func (pkg/mod.py)`` (line dropped, path shortened)."""
    m = re.match(r"(.*) \((.*?)(?::\d+)?\)$", frame)
    if not m:
        return frame
    func, path = m.groups()
    return f"{func} ({'/'.join(path.split('/')[-2:])})"


def summarize_profile(path: Path) -> dict[str, Any]:
    """Shares of on-CPU samples of a ``py-spy record --format raw`` file."""
    total = 0
    comp: Counter = Counter()
    self_fn: Counter = Counter()
    incl_fn: Counter = Counter()
    compiled = [(name, re.compile(rx)) for name, rx in COMPONENTS]
    for line in path.read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        frames = [f for f in stack.split(";") if f]
        total += n
        if any("(logging/" in f for f in frames):
            name = COMPONENTS[0][0]
        else:
            name = "asyncio event loop (scheduling, select)"
            for f in reversed(frames):
                if GENERIC.search(f):
                    continue
                name = next((c for c, rx in compiled if rx.search(f)), "other")
                break
        comp[name] += n
        if frames:
            self_fn[_frame_key(frames[-1])] += n
        for k in {_frame_key(f) for f in frames if not ROOT_CHAIN.search(f)}:
            incl_fn[k] += n
    interesting = re.compile(r"stream/|faust/|aiokafka/|rocksdict|json|pydantic|logging")
    incl = [(k, v) for k, v in incl_fn.most_common() if interesting.search(k)]
    return {"samples": total, "components": comp.most_common(), "self": self_fn.most_common(15),
            "inclusive": incl[:20]}


# ============================================================================ report

def fmt_lat(lat: Lat) -> str:
    v, censored = lat
    if v != v:  # nan
        return "n/a"
    text = f"{v * 1000:.1f} ms" if v < 1 else f"{v:.1f} s"
    return f"≥ {text}" if censored else text


def render(bench: Bench, argv: list[str], runtime: float) -> str:
    a = bench.args
    m, v = machine_info(), versions()
    cg = {k: val for k, val in sorted(os.environ.items()) if k.startswith("CG_")}
    lines = [
        f"## {a.title or 'Worker benchmark'} ({dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC)",
        "",
        f"Command: `{command_line('bench/bench_worker.py', list(argv))}` — "
        f"total runtime {runtime / 60:.1f} min; git {git_rev()}.",
        "",
        f"- Machine: {m['nproc']} CPUs (nproc), {m['cpu']}, {m['ram']} RAM; load average "
        f"{bench.load_start} at start, {loadavg()} at end (1/5/15 min; other processes share "
        "the machine — see *machine busy* below).",
        f"- Software: Python {v['python']}, faust-streaming {v['faust-streaming']}, aiokafka "
        f"{v['aiokafka']}, rocksdict {v['rocksdict']}, pydantic {v['pydantic']}; Apache Kafka "
        f"{bench.kafka_version}"
        + (f" (local single-node KRaft broker started by the bench, heap {bench.settings.kafka_heap})."
           if not a.broker else "."),
        f"- Worker: `python -m stream worker -l {a.worker_loglevel}`, store `rocksdb://`, {PARTITIONS} partitions, "
        f"settings from the environment: {', '.join(f'`{k}={val}`' for k, val in cg.items()) or 'none (defaults)'}.",
        "",
    ]
    if bench.results["throughput"]:
        lines += [
            f"### Throughput (median of {a.runs} run{'s' if a.runs > 1 else ''}; pre-filled topics, "
            f"{PARTITIONS} partitions each)",
            "",
            "| stream | events (ckpt / artifact) | MB | worker events/s | raw aiokafka events/s | "
            "worker / raw | worker CPU µs/event | worker CPU use | main thread: on CPU / waiting for a CPU "
            "/ blocked | machine busy | decode µs/ev | engine µs/ev | records written per event: "
            "state log + outputs (alerts + verdicts + status) | events buffered by seq | alerts (expected) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for t in bench.results["throughput"]:
            st: Stream = t["stream"]
            wr = [r["drain"] for r in t["worker_runs"]]
            w_rate = statistics.median(d.rate for d in wr)
            r_rate = statistics.median(x[0] for x in t["raw_runs"])
            cpu_us = statistics.median(d.cpu_us_per_event for d in wr)
            cpu_use = statistics.median(d.cpu_use for d in wr)
            busy = statistics.median(d.machine_busy for d in wr)
            on = statistics.median(d.main_oncpu for d in wr)
            rq = statistics.median(d.main_runq for d in wr)
            alerts = "/".join(str(r["alerts"]) for r in t["worker_runs"])
            r0 = t["worker_runs"][0]
            n_ev = len(st.events)
            writes = (f"{r0['changelog'] / n_ev:.4f} + {(r0['alerts'] + r0['verdicts'] + r0['statuses']) / n_ev:.2f}")
            buffered = f"{statistics.median(r['buffered'] for r in t['worker_runs']) / n_ev:.0%}"
            ok = all(r["ok"] for r in t["worker_runs"])
            lines.append(
                f"| {st.name} | {len(st.events):,} ({st.kinds['checkpoint']:,} / {st.kinds['artifact']:,}) | "
                f"{st.bytes / 1e6:.1f} | **{w_rate:,.0f}** | {r_rate:,.0f} | {w_rate / r_rate:.4f} "
                f"({f'1/{r_rate / w_rate:,.0f}' if w_rate else 'no window'}) | {cpu_us:,.0f} | {cpu_use:.0%} | "
                f"{on:.0%} / {rq:.0%} / {max(0.0, 1 - on - rq):.0%} | {busy:.0%} | "
                f"{t['decode_us']:.1f} | {t['engine_us']:.1f} | {writes} | {buffered} | {alerts} ({st.expected_alerts})"
                f"{'' if ok else ' ✗'} |")
        lines += ["", "Per run (worker): events/s · events in the window / window (s) · first applied event "
                  "after start · start→drained wall · worker CPU use · main thread on CPU / waiting for a CPU · "
                  "machine busy · broker CPU use · WARNING / ERROR lines in the worker log.",
                  ""]
        for t in bench.results["throughput"]:
            st = t["stream"]
            for r in t["worker_runs"]:
                d: DrainResult = r["drain"]
                bcpu = f"{d.broker_cpu / d.window:.0%}" if d.broker_cpu is not None else "?"
                flag = {"applied": "", "commits": " (window: commit points, see below)",
                        "final-commit": " (window ends at the final commit: up to ~1 s error)"}[d.method]
                lines.append(
                    f"- {st.name} #{r['run']}: {d.rate:,.0f}/s · {d.events_in_window:,} / {d.window:.1f} s · "
                    f"{d.first_progress_at:.1f} s · {d.wall_from_start:.1f} s · {d.cpu_use:.0%} · "
                    f"{d.main_oncpu:.0%} / {d.main_runq:.0%} · {d.machine_busy:.0%} · {bcpu} · "
                    f"{r['warnings']['WARNING']} / {r['warnings']['ERROR']}{flag}")
            raws = ", ".join(f"{x[0]:,.0f}/s ({x[1] / 1e6:.1f} MB/s)" for x in t["raw_runs"])
            lines.append(f"- {st.name} raw aiokafka: {raws}")
        lines += [
            "",
            "*worker events/s*: events applied ÷ time, from the first applied event to the last (progress "
            "= the worker's `checkpoint_guard_events_total` at `/metrics`, every outcome but `buffered`, "
            "polled every 0.1 s; excludes start-up). Not committed offsets: the worker commits once per "
            "`CG_COMMIT_INTERVAL` (1 s), too coarse for runs of a few seconds. "
            f"*synthetic*: {bench.args.events:,} events over {bench.args.contexts} contexts of ~94 events each "
            "(one generator, contexts round-robin); until 2026-12-02 3,000 over 32, whose window (0.1-0.5 s, "
            "a few polls plus the drain's tail) swung 2x between runs and flattered the rate; more contexts, "
            "not longer ones, keep the stream's mix (alerts and outputs per event). "
            "*start→drained*: worker process start to all input offsets committed. *raw*: one `AIOKafkaConsumer` "
            "assigned to the "
            "same partitions, from the beginning to the end offsets, decoding nothing. *worker CPU use*: "
            "worker process CPU time (all threads) ÷ wall time over the window (100 % = one core). "
            "*main thread* (the event loop running the agent, from `/proc/PID/task/PID/schedstat`): share "
            "of the window on a CPU, runnable but waiting for a CPU (other processes or the worker's own "
            "threads), and the rest, blocked in `select` waiting for the broker (acks, fetches) or timers. "
            "*decode / engine*: "
            "CPU cost per event of `wire.decode_event` and `Engine.process` on a `DictState` in the bench "
            "process over the same records (no Kafka). *records written*: records on the worker's state log "
            "`<app_id>-state` (one delta record — or chunks + a marker — per partition per commit, plus "
            "fences at assignment) and the alert, verdict and node-status records, per input event. "
            "*events buffered by seq*: share of events that arrived before an earlier `seq` of their "
            'context and waited (`events_total{outcome="buffered"}`). '
            "*alerts*: records on the run's alerts topic (one figure per run) vs the "
            "offline replay of the same events.",
            "",
        ]
    if bench.results["latency"]:
        lines += [
            f"### Latency (event -> alert; {LATENCY_CONTEXTS} contexts, each event flips an artifact that a "
            "leaf references, so each opens or resolves one alert)",
            "",
            "| consumer | offered rate | sent | achieved send rate | alerts received (while sending) | processed rate "
            "(alerts/s = events/s) | "
            "p50 | p99 | max | p50 first 2 s | p50 last 2 s | worker CPU use | worker CPU per event | "
            "main thread: on CPU / waiting for a CPU | kept up? | issue 25's goal (p99 ≤ 50 ms at 1,000/s, "
            "≤ 250 ms at 5,000/s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in bench.results["latency"]:
            lines.append(
                f"| {'raw relay' if r.relay else 'worker'} | {r.rate:,}/s × {r.seconds:.0f} s | {r.sent:,} | "
                f"{r.achieved:,.0f}/s | {r.received:,} "
                f"({r.received_while_sending:,}) | {r.alert_rate:,.0f}/s | {fmt_lat(r.p50)} | {fmt_lat(r.p99)} | "
                f"{fmt_lat(r.max)} | {fmt_lat(r.p50_first)} | {fmt_lat(r.p50_last)} | {r.worker_cpu_share:.0%} | "
                f"{r.cpu_us_per_event:,.0f} µs | {r.main_on:.0%} / {r.main_rq:.0%} | "
                f"{'yes' if r.kept_up else '**no**'} | "
                f"{'n/a' if r.goal is None else 'yes' if r.met else '**no**'} |")
        lines += [
            "",
            f"Before the measured seconds, {a.latency_warmup:g} s are sent at the same rate and their alerts "
            "awaited, not counted (a fresh broker's JIT and the worker's caches warm up as in a long-running "
            "deployment). "
            f"Alerts are awaited {a.latency_drain:.0f} s after the last send. An alert not received by then "
            "has the latency *send → end of waiting*, a lower bound, shown `≥`; a percentile shown `≥` "
            "falls on such an alert. *processed rate*: alerts received ÷ (last alert − first send) = the "
            "worker's sustained rate when it falls behind. *kept up*: every alert received and p99 < 1 s. "
            "CPU figures cover sending plus waiting. *raw relay* (`bench/relay_app.py`, `--latency-relay`): a "
            "raw aiokafka consume -> produce loop in the worker's place on the same broker, the same stream and "
            "the same paced sender, right after the worker's run at that rate: the latency this machine, broker "
            "and bench give any Kafka service (its *worker CPU* columns are the relay's).",
            "",
        ]
    if bench.results["errors"]:
        lines += ["### Failed measurements", ""]
        lines += [f"- {e}" for e in bench.results["errors"]]
        lines.append("")
    prof = bench.results.get("profile")
    if prof:
        s = prof["summary"]
        n = max(s["samples"], 1)
        if "latency" in prof["run"]:
            lr: LatencyResult = prof["run"]["latency"]
            that = (f"from its first paced send, {s['samples']:,} samples of on-CPU time; that run: "
                    f"{lr.alert_rate:,.0f} events/s processed, p99 {fmt_lat(lr.p99)}, with the profiler attached, "
                    "not in the latency table")
        else:
            d: DrainResult = prof["run"]["drain"]
            that = (f"from its first progress, {s['samples']:,} samples of on-CPU time; that run: "
                    f"{d.rate:,.0f} events/s with the profiler attached, not in the medians")
        lines += [
            f"### Where the worker's CPU time goes (py-spy, {prof['stream']} stream, {a.profile:.0f} s {that})",
            "",
            "| component (innermost matching frame) | share |",
            "|---|---|",
        ]
        lines += [f"| {name} | {v / n:.0%} |" for name, v in s["components"]]
        lines += ["", "Top self (leaf) frames:", ""]
        lines += [f"- {v / n:.1%} `{k}`" for k, v in s["self"]]
        lines += ["", "Top inclusive frames (faust, aiokafka, ours, JSON, RocksDB):", ""]
        lines += [f"- {v / n:.0%} `{k}`" for k, v in s["inclusive"]]
        lines.append("")
    return "\n".join(lines)


# ============================================================================ main

def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="bench/bench_worker.py",
        description="End-to-end worker benchmark on a fresh local Kafka (see the module docstring).",
    )
    ap.add_argument("--events", type=int, default=None,
                    help=f"synthetic checkpoint-heavy stream size (default {SYNTHETIC_EVENTS:,})")
    ap.add_argument("--real-copies", type=int, default=None,
                    help="copies of the real stream, each under its own context ids (default 3, as part 7; quick 1): "
                         "one copy (18k events) drained in a window of 0.2-0.9 s, a few polls")
    ap.add_argument("--contexts", type=int, default=None,
                    help="contexts of the synthetic stream, round-robin (default: events x 32 / 3,000, >= 32)")
    ap.add_argument(
        "--runs", type=int, default=None, help="worker and raw runs per stream, median reported (default 3)"
    )
    ap.add_argument("--rates", default="1000,5000", help="latency test rates, events/s (default 1000,5000; '' = skip)")
    ap.add_argument("--latency-seconds", type=float, default=None, help="sending time per rate (default 12)")
    ap.add_argument("--latency-warmup", type=float, default=None,
                    help="seconds sent at the same rate before the measured ones, their alerts awaited and not "
                         "counted: a long-running broker's and worker's steady state (default 5; 0 = none)")
    ap.add_argument("--latency-relay", action=argparse.BooleanOptionalAction, default=True,
                    help="after the worker at each rate, the raw aiokafka relay (bench/relay_app.py) in its place: "
                         "the floor of this machine and broker (default on)")
    ap.add_argument("--latency-drain", type=float, default=None,
                    help="wait this long for outstanding alerts after sending (default 10)")
    ap.add_argument("--phases", default="real,synthetic,latency",
                    help="comma list of real, synthetic, latency (default all)")
    ap.add_argument("--traces", nargs="*", default=[str(REPO / "stream" / "samples" / "traces")],
                    help="trajectory files/dirs of the real stream (default stream/samples/traces)")
    ap.add_argument("--profile", type=float, default=0.0, metavar="SECONDS",
                    help="extra real-stream worker run with py-spy attached for SECONDS (default off)")
    ap.add_argument("--profile-stream", choices=("real", "synthetic", "latency"), default="real",
                    help="stream of the profiled run (default real)")
    ap.add_argument("--profile-idle", action="store_true",
                    help="py-spy --idle: also sample the threads while they wait (where the main thread blocks)")
    ap.add_argument("--profile-native", action="store_true",
                    help="py-spy --native: also sample C frames (the compiled hot modules, pydantic-core, orjson)")
    ap.add_argument("--keep-profile", metavar="FILE", help="also copy py-spy's raw output there")
    ap.add_argument("--quick", action="store_true",
                    help="1 run, 3 trajectories for the real stream, 600 synthetic events, "
                         "4 s per latency rate + 4 s drain")
    ap.add_argument("--traces-limit", type=int, default=None,
                    help="use only this many trajectories for the real stream (default all; quick 3)")
    ap.add_argument("--flamegraph", metavar="FILE.svg", help="with --profile: also write an SVG flame graph")
    ap.add_argument("--title", default=None, help="heading of the report section")
    ap.add_argument("--kafka-port", type=int, default=None,
                    help="port of the broker the bench starts (controller: the next one); default: free ports")
    ap.add_argument("--worker-loglevel", default="warn",
                    help="worker -l (default warn; note faust leaves its root logger at DEBUG for warn and "
                         "above, see bench/README.md)")
    ap.add_argument("--worker-tree", metavar="DIR", default=None,
                    help="run the worker from this checkout (cwd and PYTHONPATH) instead of this one: an A/B of "
                         "two commits on the same broker and stream")
    ap.add_argument("--out", metavar="FILE", help="also write the Markdown report there")
    ap.add_argument("--json", metavar="FILE",
                    help="also write each stream's worker runs there as JSON (events/s, CPU µs/event)")
    ap.add_argument("--timeout", type=float, default=900, help="per worker run: start -> drained limit (s)")
    ap.add_argument("--bootstrap", "--broker", dest="broker", metavar="HOST:PORT",
                    help="use this running broker instead of starting one")
    args = ap.parse_args(argv)
    q = args.quick
    args.events = args.events if args.events is not None else (600 if q else SYNTHETIC_EVENTS)
    # More events = more contexts of the same length (3,000 / 32 = ~94 events each): the same stream,
    # longer. Longer contexts would change it (more alerts and outputs per event, a costlier engine).
    args.contexts = args.contexts if args.contexts is not None else max(32, round(args.events * 32 / 3000))
    args.real_copies = args.real_copies if args.real_copies is not None else (1 if q else 3)
    args.traces_limit = args.traces_limit if args.traces_limit is not None else (3 if q else None)
    args.runs = args.runs if args.runs is not None else (1 if q else 3)
    args.latency_seconds = args.latency_seconds if args.latency_seconds is not None else (4 if q else 12)
    args.latency_warmup = args.latency_warmup if args.latency_warmup is not None else (2 if q else 5)
    args.latency_drain = args.latency_drain if args.latency_drain is not None else (4 if q else 10)
    args.rate_list = [int(x) for x in args.rates.split(",") if x.strip()]
    args.phase_set = {p.strip() for p in args.phases.split(",") if p.strip()}
    unknown = args.phase_set - {"real", "synthetic", "latency"}
    if unknown:
        ap.error(f"unknown phases: {', '.join(sorted(unknown))}")
    if args.runs < 1:
        ap.error("--runs must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    logging.getLogger("aiokafka").setLevel(logging.ERROR)
    args = parse_args(argv)
    bench = Bench(args)

    def on_signal(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    try:
        bench.start_broker()
        real = synth = None
        if "real" in args.phase_set or (args.profile and args.profile_stream == "real"):
            real = bench.prepare("real", copies_of(real_events(args.traces, args.traces_limit), args.real_copies))
        if "synthetic" in args.phase_set or (args.profile and args.profile_stream == "synthetic"):
            synth = bench.prepare("synthetic", synthetic_events(args.events, contexts=args.contexts))
        # One failing measurement (e.g. a worker that exits) must not lose the others.
        steps: list[tuple[str, Any]] = []
        if "real" in args.phase_set:
            steps.append(("real throughput", lambda: bench.throughput(real)))
        if "synthetic" in args.phase_set:
            steps.append(("synthetic throughput", lambda: bench.throughput(synth)))
        if "latency" in args.phase_set:
            for rate in args.rate_list:
                steps.append((f"latency @ {rate}/s",
                              lambda rate=rate: bench.results["latency"].append(bench.latency(rate))))
                if args.latency_relay:
                    steps.append((f"raw relay latency @ {rate}/s", lambda rate=rate: bench.results["latency"].append(
                        bench.latency(rate, relay=True))))
        if args.profile:
            steps.append(("profile", lambda: bench.profile(
                {"real": real, "synthetic": synth}.get(args.profile_stream))))
        for name, step in steps:
            try:
                step()
            except Exception as exc:  # reported, then the next measurement
                line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                say(f"{name} FAILED: {exc}")
                bench.results["errors"].append(f"{name}: {line}")
                for w in list(WorkerProc.live):
                    w.stop()
    finally:
        bench.stop_all()
        shutil.rmtree(bench.tmp, ignore_errors=True)
    report = render(bench, argv, time.monotonic() - bench.t_start)
    write_out(args.out, report, summarize(bench))
    if args.json:
        Path(args.json).write_text(json.dumps(runs_json(bench), indent=1) + "\n")
    if args.out:
        say(f"report written to {args.out}")
    return 1 if bench.results["errors"] else 0


def runs_json(bench: Bench) -> dict[str, Any]:
    """``--json``: per stream, each worker run's events/s and CPU µs/event; errors."""
    return {
        "streams": {t["stream"].name: {"events": len(t["stream"].events),
                                       "events_per_s": [r["drain"].rate for r in t["worker_runs"]],
                                       "cpu_us_per_event": [r["drain"].cpu_us_per_event for r in t["worker_runs"]]}
                    for t in bench.results["throughput"]},
        "worker_tree": bench.args.worker_tree,
        "errors": bench.results["errors"],
    }


def summarize(bench: Bench) -> str:
    """One line for the top of docs/BENCHMARKS.md (bench/run_all.py)."""
    parts = []
    for t in bench.results["throughput"]:
        w = statistics.median(r["drain"].rate for r in t["worker_runs"])
        raw = statistics.median(x[0] for x in t["raw_runs"])
        parts.append(f"{t['stream'].name} stream: worker {w:,.0f} events/s vs raw aiokafka {raw:,.0f} "
                     f"({f'1/{raw / w:,.0f}' if w else 'no window'})")
    for r in bench.results["latency"]:
        if r.relay:
            parts.append(f"raw aiokafka relay at {r.rate:,}/s: p50 {fmt_lat(r.p50)}, p99 {fmt_lat(r.p99)}")
            continue
        goal = "" if r.goal is None else f", p99 <= {r.goal * 1000:.0f} ms: {'yes' if r.met else 'no'}"
        parts.append(f"at {r.rate:,}/s offered: p50 {fmt_lat(r.p50)}, p99 {fmt_lat(r.p99)}, processed "
                     f"{r.alert_rate:,.0f}/s, kept up: {'yes' if r.kept_up else 'no'}{goal}, worker CPU "
                     f"{r.cpu_us_per_event:,.0f} µs/event")
    prof = bench.results.get("profile")
    if prof:
        top = ", ".join(f"{name.split(' (')[0]} {v / max(prof['summary']['samples'], 1):.0%}"
                        for name, v in prof["summary"]["components"][:3])
        parts.append(f"profile: {top}")
    return "; ".join(parts) or "no result"


if __name__ == "__main__":
    sys.exit(main())
