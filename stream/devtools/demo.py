"""The main job, end to end: real trajectories -> Kafka -> worker -> alerts -> report.

``python -m stream demo`` (``make demo``) starts a broker and the worker, produces the
trajectories' events, waits until the worker drained them, prints the report and checks
that the live outputs equal the offline replay's. Everything it starts lives under
``<user data dir>/demo/`` (:data:`DEMO_HOME`). Its seven steps: docs/DEVELOPMENT.md "The demo".
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any

from stream.adapters import SimulationParams, encode_event, load_trajectories, simulate
from stream.commands._base import runnable_prog
from stream.devtools import ctrl_c_deferred, kafka_local
from stream.devtools.report import StreamReport
from stream.errors import ConfigurationError
from stream.kafka_clients import admin, consumer, create_project_topics, producer
from stream.offline.replay import replay_lines
from stream.settings import USER_DATA_DIR, Settings
from stream.wire import decode_event, encode

#: Where the demo keeps its broker, worker state and logs (a user-owned directory).
DEMO_HOME = USER_DATA_DIR / "demo"


class Demo:
    """One end-to-end run; ``console`` is a rich Console for progress and the report."""

    def __init__(self, settings: Settings, console: Any, *, keep_running: bool = False) -> None:
        self.settings = settings
        self.console = console
        self.keep_running = keep_running
        self.broker_started = False
        self.worker: subprocess.Popen | None = None

    # ------------------------------------------------------------------ steps
    def start_broker(self) -> None:
        port, cport = kafka_local.free_ports(2)
        self.settings = self.settings.model_copy(update={
            "kafka_home": DEMO_HOME / "kafka", "kafka_port": port, "kafka_controller_port": cport,
            "broker": f"kafka://127.0.0.1:{port}",
        })
        with self.console.status("starting Kafka (first run downloads its jars with Maven)..."):
            info = kafka_local.start(self.settings, fresh=True)
        self.broker_started = True
        self.console.print(f"[green]✓[/] Kafka {info.version} ready at {info.bootstrap} "
                           f"in {info.ready_seconds:.1f}s (jars {info.resolve_seconds:.1f}s)")

    def worker_env(self) -> dict[str, str]:
        s = self.settings
        env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
        self.web_port = kafka_local.free_ports(1)[0]
        env.update({
            "CG_BROKER": s.broker, "CG_APP_ID": s.app_id, "CG_PARTITIONS": str(s.partitions),
            "CG_DATA_DIR": str(DEMO_HOME / "worker"), "CG_WEB_PORT": str(self.web_port),
            "CG_COMPACTION_TOPIC": s.compaction_topic, "CG_ARTIFACT_TOPIC": s.artifact_topic,
            "CG_ALERTS_TOPIC": s.alerts_topic, "CG_VERDICTS_TOPIC": s.verdicts_topic,
            "CG_STATUS_TOPIC": s.status_topic,
            "CG_DEADLETTER_TOPIC": s.deadletter_topic, "CG_SEQ_GAP_LIMIT": str(s.seq_gap_limit),
        })
        return env

    def start_worker(self, timeout: float = 120) -> None:
        import shutil

        shutil.rmtree(DEMO_HOME / "worker", ignore_errors=True)
        log_path = DEMO_HOME / "worker.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self._worker_log = open(log_path, "wb")
        with ctrl_c_deferred():  # a Ctrl-C now would leave a worker that stop() does not know
            self.worker = subprocess.Popen(
                [sys.executable, "-m", "stream", "worker", "-l", "info"],
                env=self.worker_env(), stdout=self._worker_log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        with self.console.status("starting the worker..."):
            while "[^GuardWorker]: Ready" not in log_path.read_text(errors="replace"):
                if self.worker.poll() is not None or time.monotonic() > deadline:
                    tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
                    raise ConfigurationError(f"the worker did not start (log {log_path}):\n{tail}")
                time.sleep(0.3)
        self.console.print(f"[green]✓[/] worker ready (log {log_path})")

    def build_events(self, paths: list[str], params: SimulationParams) -> list[dict[str, Any]]:
        loaded = load_trajectories(paths)
        for err in loaded.errors:
            self.console.print(f"[yellow]skipped[/] {err}")
        if not loaded.trajectories:
            raise ConfigurationError(f"no trajectories found in {', '.join(paths)}")
        events: list[dict[str, Any]] = []
        for traj in loaded.trajectories:
            events.extend(simulate(traj, params))
        self.console.print(f"[green]✓[/] {len(loaded.trajectories)} trajectories -> {len(events)} events")
        return events

    async def produce(self, events: list[dict[str, Any]]) -> None:
        from rich.progress import Progress

        s = self.settings
        topic = {"checkpoint": s.compaction_topic, "artifact": s.artifact_topic}
        client = producer(s, enable_idempotence=True, linger_ms=5)
        await client.start()
        try:
            with Progress(console=self.console, transient=True, disable=not self.console.is_terminal) as bar:
                task = bar.add_task("producing", total=len(events))
                pending = []
                for i, e in enumerate(events):
                    pending.append(await client.send(
                        topic[e["type"]], value=encode_event(e).encode(), key=e["context_id"].encode()))
                    if i % 500 == 0:
                        bar.update(task, completed=i)
                await asyncio.gather(*pending)
                bar.update(task, completed=len(events))
        finally:
            await client.stop()
        self.console.print(f"[green]✓[/] produced {len(events)} events to {s.compaction_topic} / {s.artifact_topic}")

    async def wait_drained(self, timeout: float = 600) -> float:
        """Wait until the worker's group committed the end offset of every input partition."""
        from aiokafka import TopicPartition
        from rich.progress import Progress

        s = self.settings
        c = consumer(s)
        await c.start()
        a = admin(s)
        await a.start()
        t0 = time.monotonic()
        try:
            tps = [TopicPartition(t, p) for t in s.input_topics for p in range(s.partitions)]
            ends = await c.end_offsets(tps)
            total = sum(ends.values())
            with Progress(console=self.console, transient=True, disable=not self.console.is_terminal) as bar:
                task = bar.add_task("worker consuming", total=total)
                while True:
                    committed = await a.list_consumer_group_offsets(s.app_id)
                    done = sum(min(committed[tp].offset, ends[tp]) for tp in tps
                               if tp in committed and committed[tp].offset >= 0)
                    bar.update(task, completed=done)
                    if done >= total:
                        break
                    if self.worker is not None and self.worker.poll() is not None:
                        raise ConfigurationError(f"the worker exited while consuming; see {DEMO_HOME / 'worker.log'}")
                    if time.monotonic() - t0 > timeout:
                        raise ConfigurationError(f"the worker did not drain the input in {timeout:.0f}s")
                    await asyncio.sleep(0.5)
        finally:
            await c.stop()
            await a.close()
        elapsed = time.monotonic() - t0
        self.console.print(f"[green]✓[/] worker drained {total} input records in {elapsed:.1f}s")
        return elapsed

    async def read_topic(self, topic: str) -> list[Any]:
        """Every record of a topic, from the beginning to its current end."""
        from aiokafka import TopicPartition

        c = consumer(self.settings, enable_auto_commit=False, auto_offset_reset="earliest", group_id=None)
        await c.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(self.settings.partitions)]
            c.assign(tps)
            ends = await c.end_offsets(tps)
            await c.seek_to_beginning(*tps)
            out = []
            remaining = {tp for tp in tps if ends[tp] > 0}
            while remaining:
                batch = await c.getmany(timeout_ms=1000)
                for tp, msgs in batch.items():
                    out.extend(msgs)
                    if msgs and msgs[-1].offset + 1 >= ends[tp]:
                        remaining.discard(tp)
            return out
        finally:
            await c.stop()

    async def report(self, events: list[dict[str, Any]]) -> StreamReport:
        s = self.settings
        rep = StreamReport()
        for topic in s.input_topics:
            for m in await self.read_topic(topic):
                try:
                    rep.add_event(decode_event(m.value))
                except Exception:  # counted from the dead-letter topic below
                    pass
        for m in await self.read_topic(s.deadletter_topic):
            rep.add_dead_letter(json.loads(m.value)["reason"])
        live = [json.loads(m.value) for m in await self.read_topic(s.alerts_topic)]
        for a in live:
            rep.add_alert(a)
        statuses = [json.loads(m.value) for m in await self.read_topic(s.status_topic)]
        for st in statuses:
            rep.add_status(st)
        rep.render(self.console)
        self.live_equals_replay(live, statuses, events)
        return rep

    def live_equals_replay(self, live: list[dict[str, Any]], statuses: list[dict[str, Any]],
                           events: list[dict[str, Any]]) -> bool:
        """Compare alerts and status records per context (Kafka orders per partition),
        triggers' offsets nulled. The status topic is compacted, but a fresh run's
        records are all still there (compaction never touches the active segment)."""
        def by_ctx(records):
            out = defaultdict(list)
            for r in records:
                r = {**r, "trigger": {**r["trigger"], "topic": None, "partition": None, "offset": None}}
                out[r["context_id"]].append(encode(r))
            return dict(out)

        offline = replay_lines((encode_event(e).encode() for e in events), seq_gap_limit=self.settings.seq_gap_limit,
                               max_output_bytes=self.settings.max_output_bytes, max_ledger=self.settings.max_ledger)
        same_alerts = by_ctx(live) == by_ctx(offline.alerts)
        same_status = by_ctx(statuses) == by_ctx(offline.statuses)
        for what, same, n_live, n_off in (("alerts", same_alerts, len(live), len(offline.alerts)),
                                          ("status records", same_status, len(statuses), len(offline.statuses))):
            mark = "[green]✓ equal[/]" if same else "[red]✗ DIFFERENT[/]"
            self.console.print(f"live {what} vs offline replay of the same events: {mark} "
                               f"({n_live} live, {n_off} offline)")
        self.same = same_alerts and same_status
        if not self.same and len(live) > len(offline.alerts):
            self.console.print("[yellow]the topics hold more than this run wrote: they held records before the demo "
                               "(--use-broker on used topics). Run it on a fresh broker, or with another CG_APP_ID "
                               "and fresh topic names.[/]")
        return self.same

    def stop(self) -> None:
        if self.worker is not None and self.worker.poll() is None:
            if self.keep_running:
                self.console.print(self.left_running(), highlight=False, soft_wrap=True)
                return
            self.worker.send_signal(signal.SIGTERM)
            try:
                self.worker.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.worker.pid, signal.SIGKILL)
        if self.broker_started and not self.keep_running:
            kafka_local.stop(self.settings)
            self.console.print("[green]✓[/] stopped the worker and Kafka")

    def left_running(self) -> str:
        """How to connect to what ``--keep-running`` left, and how to stop it."""
        s, home, cg = self.settings, DEMO_HOME / "kafka", runnable_prog()
        assert self.worker is not None  # only after the worker started
        lines = [
            f"left running: the worker (pid {self.worker.pid}){' and Kafka' if self.broker_started else ''}",
            f"  connect:   export CG_BROKER={s.broker}"
            + (" (and this run's other CG_* settings)"
               if any(k.startswith("CG_") and k != "CG_BROKER" for k in os.environ) else "")
            + f"   # then e.g. {cg} tail --from-beginning, {cg} replay --from-kafka --verify,"
            f" {cg} explain CONTEXT NODE",
            f"  web views: http://127.0.0.1:{self.web_port}/readyz  /metrics  /nodes/CONTEXT/NODE",
            f"  log:       {DEMO_HOME / 'worker.log'}",
            f"  stop:      kill {self.worker.pid}"
            + (f" && {cg} kafka stop --home {home}" if self.broker_started else "")
            + f"   (then `{cg} clean` deletes their data)",
        ]
        return "\n".join(lines)

    # ------------------------------------------------------------------ the run
    def run(self, paths: list[str], params: SimulationParams, *, start_broker: bool = True) -> int:
        t0 = time.monotonic()
        try:
            if start_broker:
                self.start_broker()
            asyncio.run(create_project_topics(self.settings))
            events = self.build_events(paths, params)
            self.start_worker()
            asyncio.run(self.produce(events))
            asyncio.run(self.wait_drained())
            asyncio.run(self.report(events))
        finally:
            self.stop()
        self.console.print(f"done in {time.monotonic() - t0:.0f}s")
        return 0 if self.same else 1
