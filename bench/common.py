"""Helpers shared by the benchmark parts (``bench/run_all.py`` and the part scripts).

* the report's facts: machine (CPUs, RAM, load average), software versions, git revision;
* a part's frame: its options (:func:`part_parser`, :func:`add_part_args`), heading and footer
  (:func:`report_head`, :func:`report_end`);
* :func:`broker`: a fresh local Kafka (``stream.devtools.kafka_local``) in a temporary home on
  free ports — or a running one given with ``--bootstrap HOST:PORT`` — always stopped;
* :class:`WorkerProc`: one ``python -m stream worker`` subprocess with its own web port
  and data dir (RocksDB), readiness from its ``/readyz`` view, RSS from ``/proc``;
* small Kafka helpers: create topics and wait for leaders, end offsets, committed offsets.

Everything here reads ``/proc`` directly (no psutil): the benches run on Linux only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import datetime as dt
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from stream.devtools import kafka_local
from stream.settings import Settings, get_settings

REPO = Path(__file__).resolve().parent.parent
PARTITIONS = 4
CLK_TCK = os.sysconf("SC_CLK_TCK")


def say(msg: str) -> None:
    """Progress on stderr (reports go to stdout / --out)."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ============================================================================ facts for the report

def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def machine_info() -> dict[str, str]:
    model = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    mem = "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    try:
        nproc = str(len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        nproc = str(os.cpu_count())
    return {"nproc": nproc, "cpu": model, "ram": mem}


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for pkg in ("faust-streaming", "aiokafka", "rocksdict", "pydantic"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "?"
    return out


def git_rev() -> str:
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                             text=True, timeout=10).stdout.strip()
        if not rev:
            return "? (not a git checkout)"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return f"{rev}{' (with uncommitted changes)' if dirty else ''}"
    except Exception:
        return "?"


def utc_now() -> str:
    return f"{dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC"


def software_line(kafka_version: str | None = None) -> str:
    v = versions()
    s = (f"Python {v['python']}, faust-streaming {v['faust-streaming']}, aiokafka {v['aiokafka']}, "
         f"rocksdict {v['rocksdict']}, pydantic {v['pydantic']}")
    return s + (f"; Apache Kafka {kafka_version}" if kafka_version else "")


def machine_line() -> str:
    m = machine_info()
    return f"{m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM"


def module_of(script: str) -> str:
    """The module a bench script runs as: ``bench/x.py`` -> ``bench.x`` (``python -m bench.x``, from the checkout)."""
    return script.removesuffix(".py").replace("/", ".")


def command_line(script: str, argv: list[str]) -> str:
    """``python -m bench.x ARGS`` (for ``bench/x.py``) with the temporary ``--out``/``--bootstrap`` values elided."""
    shown: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("--out", "--bootstrap", "--broker-data", "--title"):
            skip = True
            continue
        if a.startswith(("--out=", "--bootstrap=", "--broker-data=", "--title=")):
            continue
        shown.append(a)
    return shlex.join(["python", "-m", module_of(script), *shown])


def part_parser(script: str, doc: str | None, **kw: Any) -> argparse.ArgumentParser:
    """The options parser of a part script: ``python -m bench.x``, described by its docstring's first paragraph."""
    return argparse.ArgumentParser(prog=f"python -m {module_of(script)}", description=(doc or "").split("\n\n")[0],
                                   **kw)


def add_part_args(ap: argparse.ArgumentParser, *, title: str, quick: str | None = None,
                  worker_timeout: str | None = None, broker: bool = True) -> None:
    """The options every part takes, after its own: with ``worker_timeout`` (its help) ``--worker-loglevel``
    and ``--timeout``; ``--quick`` (help ``quick``), ``--title``, ``--out``; with ``broker`` the broker's."""
    if worker_timeout is not None:
        ap.add_argument("--worker-loglevel", default="warn")
        ap.add_argument("--timeout", type=float, default=900, help=worker_timeout)
    ap.add_argument("--quick", action="store_true", help=quick)
    ap.add_argument("--title", default=title, help="heading of the report section")
    ap.add_argument("--out", metavar="FILE", help="also write the Markdown section there")
    if broker:
        add_broker_args(ap)


def report_head(title: str, script: str, argv: list[str], then: str = "", *, kafka: str | None = None,
                dash: bool = False) -> list[str]:
    """A part's heading and first paragraph: ``Command: `python -m bench.x ARGS```, the machine and the
    software (with the broker's version ``kafka``), then ``then``; ``dash``: `` — `` before the machine
    instead of ``. Machine: ``."""
    where = f"{machine_line()}; {software_line(kafka)}"
    command = f"Command: `{command_line(script, argv)}`"
    return [f"## {title}", "", command + (f" — {where}" if dash else f". Machine: {where}") + then, ""]


def part_footer(t_start: float, load_start: str) -> str:
    return (f"*Measured {utc_now()}, {(time.monotonic() - t_start) / 60:.1f} min; load average "
            f"{load_start} at start, {loadavg()} at end (1/5/15 min).*")


def report_end(lines: list[str], errors: list[str], t_start: float, load_start: str) -> str:
    """A part's Markdown: ``lines``, the failed measurements (if any), the footer."""
    if errors:
        lines = lines + ["Failed measurements:", ""] + [f"- {e}" for e in errors] + [""]
    return "\n".join(lines + [part_footer(t_start, load_start)]) + "\n"


def write_out(path: str | None, text: str, summary: str | None = None) -> None:
    """Print the Markdown section; with ``--out PATH`` also write it there, and the one-line
    ``summary`` to ``PATH.summary`` (``bench/run_all.py`` puts those at the top of the report)."""
    print(text)
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text.rstrip("\n") + "\n")
        if summary:
            Path(f"{path}.summary").write_text(summary.strip() + "\n")


# ============================================================================ processes

def pdeathsig() -> None:
    """Child (preexec_fn): get SIGKILL when the parent dies (no orphan worker after a kill -9)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM (bytes) of a process, from /proc/PID/status."""
    out: dict[str, int] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(rest.split()[0]) * 1024
    return out


def du(path: Path) -> tuple[int, int]:
    """(apparent bytes, bytes on disk) of a directory tree."""
    apparent = disk = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(root, name))
                apparent += st.st_size
                disk += st.st_blocks * 512
    return apparent, disk


def mib(n: float) -> str:
    return f"{n / 1024 / 1024:,.1f} MiB"


def find_py_spy() -> str | None:
    """py-spy next to this interpreter (the ``bench`` extra), else on PATH."""
    local = Path(sys.executable).parent / "py-spy"
    if local.exists():
        return str(local)
    return shutil.which("py-spy")


# ============================================================================ the broker

@contextlib.contextmanager
def broker(bootstrap: str | None = None, *, kafka_port: int | None = None,
           tmp: Path | None = None) -> Iterator[tuple[Settings, str]]:
    """Yield (settings pointing at the broker, Kafka version text); stop the broker after.

    ``bootstrap``: use that running broker (nothing started or stopped). Else a fresh
    single-node Kafka is started in a temporary home on free ports (``kafka_port``:
    that PLAINTEXT port and the next one for the controller), with PR_SET_PDEATHSIG so
    even a ``kill -9`` of the bench takes the JVM down.
    """
    settings = get_settings()
    if bootstrap:
        bootstrap = bootstrap.split("://")[-1]
        yield settings.model_copy(update={"broker": f"kafka://{bootstrap}"}), \
            f"{settings.kafka_version} (running broker at {bootstrap})"
        return
    own_tmp = tmp is None
    home = Path(tempfile.mkdtemp(prefix="cg-bench-kafka-")) if own_tmp else tmp / "kafka"
    info = None
    try:
        for attempt in range(3):
            port, cport = (kafka_port, kafka_port + 1) if kafka_port else kafka_local.free_ports(2)
            s = settings.model_copy(update={
                "kafka_home": home, "kafka_port": port, "kafka_controller_port": cport,
                "broker": f"kafka://127.0.0.1:{port}",
            })
            try:
                info = kafka_local.start(s, fresh=True, die_with_parent=True)
                settings = s
                break
            except kafka_local.PortInUseError:
                if attempt == 2 or kafka_port:
                    raise
        say(f"Kafka {info.version} ready at {info.bootstrap} in {info.ready_seconds:.1f}s (home {home})")
        asyncio.run(warm_group_coordinator(settings))
        yield settings, f"{info.version} (single-node KRaft broker started by the bench, heap {settings.kafka_heap})"
    finally:
        if info is not None:
            say(kafka_local.stop(settings).message)
        if own_tmp:
            shutil.rmtree(home, ignore_errors=True)


async def warm_group_coordinator(settings: Settings, timeout: float = 60.0) -> None:
    """Wait until a fresh broker has a group coordinator (``__consumer_offsets`` created).

    The first consumer group on a new broker otherwise meets GroupCoordinatorNotAvailable
    while the broker creates that topic: a start-up cost of the broker, not of the consumer
    measured (and the worker's agent was seen to crash in that window, see bench/README.md).
    """
    from stream.kafka_clients import admin

    a = admin(settings)
    await a.start()
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                await a.find_coordinator("cg-bench-warm-up")
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
    finally:
        await a.close()


def add_broker_args(ap: Any) -> None:
    ap.add_argument("--bootstrap", "--broker", dest="bootstrap", metavar="HOST:PORT",
                    help="use this running broker instead of starting a fresh one")
    ap.add_argument("--kafka-port", type=int, default=None,
                    help="port of the broker the bench starts (controller: the next one); default: free ports")


# ============================================================================ Kafka helpers

async def create_topics_ready(settings: Settings, names: list[str] | tuple[str, ...],
                              partitions: int = PARTITIONS) -> None:
    """Create topics and wait until every partition has a leader."""
    from stream.kafka_clients import admin, create_topics

    await create_topics(settings, list(names), partitions)
    a = admin(settings)
    await a.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            described = await a.describe_topics(list(names))
            if all(not t.get("error_code") and len(t["partitions"]) == partitions
                   and all(p["leader"] >= 0 for p in t["partitions"]) for t in described):
                return
            await asyncio.sleep(0.2)
    finally:
        await a.close()


async def create_topic_set(settings: Settings, inputs: tuple[str, str], outputs: tuple[str, ...]) -> None:
    """Create one measurement's topics as ``python -m stream topics create`` does
    (``stream.kafka_clients.create_project_topics``: the status topic compacted, every topic
    allowing the worker's largest record) and wait for their leaders."""
    from stream.kafka_clients import create_project_topics

    alerts, verdicts, deadletter, status = outputs
    s = settings.model_copy(update={
        "partitions": PARTITIONS, "compaction_topic": inputs[0], "artifact_topic": inputs[1],
        "alerts_topic": alerts, "verdicts_topic": verdicts, "deadletter_topic": deadletter, "status_topic": status,
    })
    await create_project_topics(s)
    await create_topics_ready(settings, [*inputs, *outputs])


async def read_topic(settings: Settings, topic: str, partitions: int = PARTITIONS) -> list[Any]:
    """Every record of ``topic`` from the beginning to its end offsets (aiokafka records)."""
    from aiokafka import TopicPartition

    from stream.kafka_clients import consumer

    # auto_offset_reset "earliest": with the default "latest", the reset that assign() starts
    # could land after seek_to_beginning and put the position at the end (nothing read).
    c = consumer(settings, enable_auto_commit=False, group_id=None, max_partition_fetch_bytes=4 << 20,
                 auto_offset_reset="earliest")
    await c.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        ends = await c.end_offsets(tps)
        starts = await c.beginning_offsets(tps)
        await c.seek_to_beginning(*tps)
        out: list[Any] = []
        todo = {tp for tp in tps if ends[tp] > 0}
        deadline = time.monotonic() + 60
        while todo:
            batch = await c.getmany(*todo, timeout_ms=500)
            for msgs in batch.values():
                out.extend(msgs)
            for tp in list(todo):  # the position passes control records (transaction markers) too
                if await c.position(tp) >= ends[tp]:
                    todo.discard(tp)
            if time.monotonic() > deadline:
                raise RuntimeError(f"reading {topic}: partitions {sorted(tp.partition for tp in todo)} did not "
                                   f"reach their end offsets in 60 s")
        if len(out) < sum(ends[tp] - starts[tp] for tp in tps) and not _compacted_or_transactional(out):
            raise RuntimeError(f"reading {topic}: {len(out)} records, its offsets span "
                               f"{sum(ends[tp] - starts[tp] for tp in tps)}")
        return out
    finally:
        await c.stop()


def _compacted_or_transactional(records: list[Any]) -> bool:
    """Fewer records than offsets is expected only with gaps: compaction or control records."""
    return any(b.offset - a.offset != 1 for a, b in zip(records, records[1:]) if a.partition == b.partition)


async def log_extent(settings: Settings, topic: str, partitions: int = PARTITIONS) -> int:
    """Records a topic holds now: end offsets minus log-start offsets (0 if it does not exist)."""
    from aiokafka import TopicPartition

    from stream.kafka_clients import consumer

    c = consumer(settings, enable_auto_commit=False, group_id=None)
    await c.start()
    try:
        if topic not in await c.topics():
            return 0
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = await c.end_offsets(tps)
        starts = await c.beginning_offsets(tps)
        return sum(ends[tp] - starts[tp] for tp in tps)
    finally:
        await c.stop()


async def end_offsets(settings: Settings, topics: list[str] | tuple[str, ...],
                      partitions: int = PARTITIONS) -> dict[Any, int]:
    from aiokafka import TopicPartition

    from stream.kafka_clients import consumer

    c = consumer(settings, enable_auto_commit=False, group_id=None)
    await c.start()
    try:
        existing = await c.topics()
        tps = [TopicPartition(t, p) for t in topics if t in existing for p in range(partitions)]
        return await c.end_offsets(tps) if tps else {}
    finally:
        await c.stop()


def topic_set(tag: str) -> tuple[tuple[str, str], tuple[str, str, str, str]]:
    """(inputs, outputs) topic names of one measurement."""
    return ((f"{tag}-compaction", f"{tag}-artifact"),
            (f"{tag}-alerts", f"{tag}-verdicts", f"{tag}-deadletter", f"{tag}-status"))


async def produce_events(settings: Settings, inputs: tuple[str, str], events: list[dict[str, Any]],
                         lines: list[bytes] | None = None, *, linger_ms: int = 5) -> float:
    """Produce events (checkpoints to inputs[0], artifacts to inputs[1]) keyed by context; seconds."""
    from stream.adapters import encode_event
    from stream.kafka_clients import producer

    lines = lines if lines is not None else [encode_event(e).encode() for e in events]
    topic = {"checkpoint": inputs[0], "artifact": inputs[1]}
    p = producer(settings, enable_idempotence=True, linger_ms=linger_ms, max_batch_size=256 * 1024)
    await p.start()
    t0 = time.perf_counter()
    try:
        futs = [await p.send(topic[e["type"]], line, key=e["context_id"].encode())
                for e, line in zip(events, lines)]
        await asyncio.gather(*futs)
    finally:
        await p.stop()
    return time.perf_counter() - t0


async def send_all(producer: Any, records: Iterable[tuple[str, bytes | None, bytes]], window: int = 20_000) -> int:
    """Send ``(topic, key, value)`` records in order, waiting for the acks every ``window`` sends; how many."""
    n = 0
    pending = []
    for topic, key, value in records:
        pending.append(await producer.send(topic, value, key=key))
        n += 1
        if len(pending) >= window:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)
    return n


def copies_of(events: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """``n`` copies of a stream, copy ``i > 0`` under context ids ``<ctx>~i`` (no duplicates)."""
    out = []
    for i in range(n):
        for e in events:
            c = dict(e)
            c["context_id"] = f"{e['context_id']}~{i}" if i else e["context_id"]
            out.append(c)
    return out


def partition_counts(events: list[dict[str, Any]], partitions: int = PARTITIONS) -> list[int]:
    """Events per partition as Kafka's default partitioner places them (murmur2 of context_id)."""
    from aiokafka.partitioner import murmur2

    counts = [0] * partitions
    for e in events:
        counts[(murmur2(e["context_id"].encode()) & 0x7FFFFFFF) % partitions] += 1
    return counts


# ============================================================================ a worker process


def metric_values(port: int, name: str, timeout: float = 1.0) -> dict[str, float]:
    """``{labels text: value}`` of ``checkpoint_guard_<name>`` at a worker's /metrics on
    127.0.0.1:``port``; empty while the worker does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout) as r:
            text = r.read().decode()
    except (urllib.error.URLError, OSError):
        return {}
    prefix = f"checkpoint_guard_{name}"
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith(prefix + "{") or line.startswith(prefix + " "):
            labels, _, value = line[len(prefix):].rpartition(" ")
            out[labels] = float(value)
    return out


def events_processed(port: int, timeout: float = 1.0) -> int:
    """The worker's ``events_total``, every outcome but ``buffered`` (0 while it does not answer)."""
    return int(sum(v for k, v in metric_values(port, "events_total", timeout).items() if 'outcome="buffered"' not in k))

class WorkerProc:
    """One ``python -m stream worker`` subprocess: own web port and data dir, RocksDB store.

    ``app_id`` is the consumer group and names the changelog topics; two WorkerProcs with
    the same app id and topics are two members of one group (scale-out).
    """

    live: list[WorkerProc] = []

    def __init__(self, settings: Settings, app_id: str, inputs: tuple[str, str],
                 outputs: tuple[str, ...], data_dir: Path, log_path: Path, *,
                 loglevel: str = "warn", extra_env: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.app_id = app_id
        self.inputs = inputs
        self.outputs = outputs
        self.data_dir = data_dir
        self.log_path = log_path
        self.loglevel = loglevel
        self.extra_env = extra_env or {}
        self.web_port = kafka_local.free_ports(1)[0]
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update({
            "CG_BROKER": self.settings.broker, "CG_APP_ID": self.app_id,
            "CG_PARTITIONS": str(PARTITIONS),
            "CG_COMPACTION_TOPIC": self.inputs[0], "CG_ARTIFACT_TOPIC": self.inputs[1],
            "CG_ALERTS_TOPIC": self.outputs[0], "CG_VERDICTS_TOPIC": self.outputs[1],
            "CG_DEADLETTER_TOPIC": self.outputs[2], "CG_STATUS_TOPIC": self.outputs[3],
            "CG_DATA_DIR": str(self.data_dir),
            "CG_WEB_PORT": str(self.web_port),
        })
        env.update(self.extra_env)
        return env

    def start(self) -> WorkerProc:
        self._log = open(self.log_path, "ab")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stream", "worker", "-l", self.loglevel, "--web-port", str(self.web_port)],
            env=self.env(), cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
            start_new_session=True, preexec_fn=pdeathsig,
        )
        WorkerProc.live.append(self)
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, n: int = 25) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def readyz(self, timeout: float = 1.0) -> dict[str, Any] | None:
        """The /readyz body when it answers 200, else None."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/readyz", timeout=timeout) as r:
                return json.loads(r.read()) if r.status == 200 else None
        except (urllib.error.URLError, OSError, ValueError):
            return None

    def check_alive(self) -> None:
        if not self.alive():
            raise RuntimeError(f"worker {self.app_id} (pid {self.pid}) exited with "
                               f"{self.proc.returncode}:\n{self.log_tail()}")

    def wait_ready(self, timeout: float = 180.0, poll: float = 0.1) -> tuple[float, dict[str, Any]]:
        """Seconds from process start until /readyz answers 200, and its body."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_alive()
            body = self.readyz(timeout=max(poll, 0.5))
            if body is not None:
                return time.monotonic() - self.started_at, body
            time.sleep(poll)
        raise RuntimeError(f"worker {self.app_id} not ready in {timeout:.0f}s:\n{self.log_tail()}")

    def events_processed(self, timeout: float = 1.0) -> int:
        """Input events the worker has handled (its ``events_total`` at /metrics, every
        outcome but ``buffered``); 0 while it does not answer."""
        return events_processed(self.web_port, timeout)

    def memory(self) -> dict[str, int]:
        return proc_status(self.pid) if self.alive() else {}

    def stop(self, timeout: float = 60.0) -> float:
        """SIGTERM (clean stop: faust commits and leaves the group); seconds it took."""
        t0 = time.monotonic()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        with contextlib.suppress(Exception):
            self._log.close()
        if self in WorkerProc.live:
            WorkerProc.live.remove(self)
        return time.monotonic() - t0

    @classmethod
    def stop_all(cls) -> None:
        for w in list(cls.live):
            with contextlib.suppress(Exception):
                w.stop(timeout=20)


async def committed_total(settings: Settings, group: str, ends: dict[Any, int]) -> int:
    """Sum over ``ends``' partitions of min(committed offset, end offset) of a consumer group."""
    from aiokafka.errors import KafkaError

    from stream.kafka_clients import admin

    a = admin(settings)
    await a.start()
    try:
        try:
            committed = await a.list_consumer_group_offsets(group)
        except KafkaError:
            return 0
    finally:
        await a.close()
    return sum(min(committed[tp].offset, end) for tp, end in ends.items()
               if tp in committed and committed[tp].offset >= 0)


class Poller:
    """Long-lived admin + consumer clients to poll committed and end offsets cheaply."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    async def __aenter__(self) -> Poller:
        from stream.kafka_clients import admin, consumer

        self.admin = admin(self.settings)
        await self.admin.start()
        self.consumer = consumer(self.settings, enable_auto_commit=False, group_id=None)
        await self.consumer.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        with contextlib.suppress(Exception):
            await self.admin.close()
        with contextlib.suppress(Exception):
            await self.consumer.stop()

    async def committed(self, group: str, ends: dict[Any, int]) -> int:
        from aiokafka.errors import KafkaError

        try:
            committed = await self.admin.list_consumer_group_offsets(group)
        except KafkaError:
            return 0
        return sum(min(committed[tp].offset, end) for tp, end in ends.items()
                   if tp in committed and committed[tp].offset >= 0)

    async def ends(self, topics: list[str] | tuple[str, ...], partitions: int = PARTITIONS) -> int:
        """Sum of the end offsets of ``topics`` (0 for a topic that does not exist yet)."""
        from aiokafka import TopicPartition

        try:
            existing = await self.consumer.topics()
            tps = [TopicPartition(t, p) for t in topics if t in existing for p in range(partitions)]
            if not tps:
                return 0
            return sum((await asyncio.wait_for(self.consumer.end_offsets(tps), 5)).values())
        except Exception:
            return 0

    async def end_map(self, topics: list[str] | tuple[str, ...], partitions: int = PARTITIONS) -> dict[Any, int]:
        from aiokafka import TopicPartition

        tps = [TopicPartition(t, p) for t in topics for p in range(partitions)]
        return await self.consumer.end_offsets(tps)
