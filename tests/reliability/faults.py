"""Fault-injection plumbing for the reliability tests (real broker, real workers).

What the tests need beyond :mod:`tests.integration.harness`:

* the real-input stream (``python -m stream ingest``) with its contexts interleaved
  (ingest writes one trajectory after another; interleaving keeps every context's
  order, so offline replay gives the same per-context alerts, while all partitions
  are busy at once — what a crash or a rebalance must cope with);
* a fast producer (every record in flight, idempotent, acks=all);
* progress and drain as the worker's *consumer group* sees them (committed offsets),
  so kill points do not depend on the machine's speed;
* the final content of a table read from the state log (replayed), to prove that no
  context is left with waiting (seq-buffered) events;
* one check of the alerts topic against offline replay that also proves every repeat
  (at-least-once) is byte-identical to its original.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stream.settings import Settings
from tests.integration.harness import context_of, per_context, run, run_cli, topic_for

Record = tuple[str, bytes | None, bytes]

#: Seconds a killed worker stays a group member before the coordinator evicts it.
#: ``CG_SESSION_TIMEOUT`` (default 60 s); the tests shorten it so a takeover after
#: ``kill -9`` does not wait a minute.
SESSION_TIMEOUT = 10


def fault_env(env: dict[str, str]) -> dict[str, str]:
    """A worker environment with the shorter group session timeout (see SESSION_TIMEOUT)."""
    return {**env, "CG_SESSION_TIMEOUT": str(SESSION_TIMEOUT)}


# --------------------------------------------------------------------------- input

#: A deterministic slice of the real input (stream/samples/traces): the 10 tau-bench runs and the
#: 5 SWE-bench runs with the most alerts of every kind (orphaned_referent,
#: negative_constraint_dropped, non_idempotent) — ~7.3k of the ~18k events, so each
#: fault test stays within a few minutes on a loaded CI machine. ``real_input_lines``
#: without paths ingests the whole of stream/samples/traces.
_TRACES = "stream/samples/traces"
_SWE = f"{_TRACES}/mini-swe-agent-deepseek-swebench"
SLICE = (
    f"{_TRACES}/tau-bench-airline-gpt4o/gpt-4o-airline.sample10.json",
    f"{_SWE}/deepseek_chat_test_1-100/astropy__astropy-6938.traj.json",
    f"{_SWE}/deepseek_chat_test_1-100/astropy__astropy-7746.traj.json",
    f"{_SWE}/deepseek_chat_dev/marshmallow-code__marshmallow-1359.traj.json",
    f"{_SWE}/deepseek_chat_dev/pvlib__pvlib-python-1072.traj.json",
    f"{_SWE}/deepseek_chat_dev/sqlfluff__sqlfluff-1763.traj.json",
)


def real_input_lines(env: dict[str, str], out: Path, *paths: str) -> list[bytes]:
    """The JSONL events of ``python -m stream ingest [paths]`` (default: stream/samples/traces)."""
    written = run_cli(env, "ingest", *paths, "--out", str(out), timeout=300)
    assert written.returncode == 0, written.stderr
    return out.read_bytes().splitlines()


def interleave(lines: list[bytes], seed: int) -> list[bytes]:
    """Merge the contexts' event streams in a seeded random order, each context's own
    order kept (so per-context replay is unchanged)."""
    queues: dict[bytes | None, list[bytes]] = defaultdict(list)
    for line in lines:
        queues[context_of(line)].append(line)
    rng = random.Random(seed)
    heads = {ctx: 0 for ctx in queues}
    # weight by remaining events, so long contexts do not end up alone at the end
    out: list[bytes] = []
    keys = sorted(queues, key=lambda k: k or b"")
    while keys:
        weights = [len(queues[k]) - heads[k] for k in keys]
        k = rng.choices(keys, weights)[0]
        out.append(queues[k][heads[k]])
        heads[k] += 1
        if heads[k] == len(queues[k]):
            keys.remove(k)
    return out


def records(lines: list[bytes], env: dict[str, str]) -> list[Record]:
    """(topic, key, value) of each line: its input topic by type, key = its context id."""
    return [(topic_for(line, env), context_of(line), line) for line in lines]


async def produce_fast(bootstrap: str, recs: list[Record]) -> None:
    """Produce every record (all in flight at once; idempotent, acks=all, order kept per
    partition) and wait for every acknowledgement."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
        max_request_size=4 << 20, request_timeout_ms=60_000,
    )
    await producer.start()
    try:
        pending = [await producer.send(topic, value, key=key) for topic, key, value in recs]
        await asyncio.gather(*pending)
    finally:
        await producer.stop()


async def produce_paced(bootstrap: str, recs: list[Record], seconds: float, *, chunks: int = 200) -> None:
    """Produce the records spread evenly over ``seconds`` (in ``chunks`` acknowledged
    chunks), so a stream lasts long enough for faults to land in the middle of it."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5,
        max_request_size=4 << 20, request_timeout_ms=60_000,
    )
    await producer.start()
    try:
        t0 = time.monotonic()
        size = max(1, -(-len(recs) // chunks))
        for i in range(0, len(recs), size):
            pending = [await producer.send(topic, value, key=key) for topic, key, value in recs[i:i + size]]
            await asyncio.gather(*pending)
            due = t0 + seconds * (i + size) / len(recs)
            await asyncio.sleep(max(0.0, due - time.monotonic()))
    finally:
        await producer.stop()


# --------------------------------------------------------------------------- progress


async def _group_progress(bootstrap: str, group: str, topics: list[str], partitions: int) -> tuple[int, int]:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    tps = [TopicPartition(t, p) for t in topics for p in range(partitions)]
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    await consumer.start()
    await admin.start()
    try:
        ends = await consumer.end_offsets(tps)
        committed = await admin.list_consumer_group_offsets(group)
    finally:
        await consumer.stop()
        await admin.close()
    done = sum(min(committed[tp].offset, ends[tp]) for tp in tps if tp in committed and committed[tp].offset >= 0)
    return done, sum(ends.values())


def group_progress(env: dict[str, str]) -> tuple[int, int]:
    """(input records the worker group has committed, input records on the topics)."""
    bootstrap = env["CG_BROKER"].split("://", 1)[-1]
    topics = [env["CG_COMPACTION_TOPIC"], env["CG_ARTIFACT_TOPIC"]]
    return run(_group_progress(bootstrap, env["CG_APP_ID"], topics, int(env["CG_PARTITIONS"])))


def wait_progress(
    env: dict[str, str], at_least: int, *, timeout: float, alive: Callable[[], bool] = lambda: True,
    poll: float = 0.5,
) -> int:
    """Wait until the group committed ``at_least`` input records; returns the count.

    Fails when ``alive()`` turns false (a worker died) or after ``timeout`` s. Broker
    errors while polling (e.g. during a broker restart) are retried until the timeout.
    """
    deadline = time.monotonic() + timeout
    done, last_error = -1, None
    while time.monotonic() < deadline:
        assert alive(), "a worker exited while the group was consuming"
        try:
            done, _ = group_progress(env)
            last_error = None
        except Exception as exc:  # noqa: BLE001 - the broker may be restarting
            last_error = exc
        if done >= at_least:
            return done
        time.sleep(poll)
    raise AssertionError(f"group committed {done} < {at_least} input records in {timeout:.0f}s ({last_error!r})")


def wait_drained(env: dict[str, str], *, timeout: float, alive: Callable[[], bool] = lambda: True) -> float:
    """Wait until the group committed the end offset of every input partition; returns seconds."""
    t0 = time.monotonic()
    _, total = group_progress(env)
    wait_progress(env, total, timeout=timeout, alive=alive)
    return time.monotonic() - t0


# --------------------------------------------------------------------------- reading topics


async def _read_topic(bootstrap: str, topic: str) -> list[Any]:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.admin import AIOKafkaAdminClient

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    await consumer.start()
    try:
        # partitions from the admin client: a bare consumer's metadata may not know the
        # topic yet, and "no partitions" must never read as "empty topic"
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
        await admin.start()
        try:
            (described,) = await admin.describe_topics([topic])
        finally:
            await admin.close()
        assert described["error_code"] == 0 and described["partitions"], f"topic {topic!r}: {described}"
        parts = [p["partition"] for p in described["partitions"]]
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        consumer.assign(tps)
        # end offsets through the assigned consumer itself (seek to end, read the
        # position): a bare end_offsets() right after assign() was seen to answer 0s
        await consumer.seek_to_end(*tps)
        ends = {tp: await consumer.position(tp) for tp in tps}
        await consumer.seek_to_beginning(*tps)
        out: list[Any] = []
        remaining = {tp for tp in tps if ends[tp] > 0}
        while remaining:
            for tp in list(remaining):  # compacted topics may end below their end offset
                if await consumer.position(tp) >= ends[tp]:
                    remaining.discard(tp)
            batch = await consumer.getmany(*remaining, timeout_ms=1000) if remaining else {}
            for tp, msgs in batch.items():
                out.extend(m for m in msgs if m.offset < ends[tp])
        return out
    finally:
        await consumer.stop()


def read_topic(env: dict[str, str], topic: str) -> list[Any]:
    """Every record of ``topic`` from the beginning to its end offsets at call time."""
    return run(_read_topic(env["CG_BROKER"].split("://", 1)[-1], topic))


def read_topic_until(env: dict[str, str], topic: str, n: int, *, timeout: float) -> list[Any]:
    """Every record of ``topic`` once it holds at least ``n`` (polling up to ``timeout`` s)."""
    deadline = time.monotonic() + timeout
    while True:
        got = read_topic(env, topic)
        if len(got) >= n or time.monotonic() > deadline:
            return got
        time.sleep(1.0)


def assert_input_complete(env: dict[str, str], lines: list[bytes]) -> None:
    """Every produced line is on the input topics (and the reader sees it): guards the
    emptiness checks below against a reader that silently reads nothing."""
    got = len(read_topic(env, env["CG_COMPACTION_TOPIC"])) + len(read_topic(env, env["CG_ARTIFACT_TOPIC"]))
    assert got == len(lines), f"{got} input records on the topics, {len(lines)} produced"


class _DictSink:
    """A state-log replay into a dict: ``(table index, key_json) -> value_json``."""

    def __init__(self) -> None:
        self.entries: dict[tuple[int, str], str] = {}

    def apply(self, entries: Any) -> None:
        for t, k, v in entries:
            if v is None:
                self.entries.pop((t, k), None)
            else:
                self.entries[(t, k)] = v

    def clear(self) -> None:
        self.entries.clear()

    def covered(self, offsets: Any, generation: int, n: int) -> None:
        pass


def state_table(env: dict[str, str], table: str) -> dict[Any, Any]:
    """A table's final content as the state log says (stream.worker.statelog's replay of
    each partition, zombie records and chunks without a marker ignored). Keys are the
    engine's tuple keys, values JSON values."""
    from stream.domain.state import TABLES
    from stream.worker.statelog import Replay

    sinks: dict[int, _DictSink] = {}
    replays: dict[int, Replay] = {}
    for m in read_topic(env, Settings(app_id=env["CG_APP_ID"]).state_topic):
        if m.partition not in replays:
            sinks[m.partition] = _DictSink()
            replays[m.partition] = Replay(sinks[m.partition])
        replays[m.partition].feed(m.value)
    index = TABLES.index(table)
    return {tuple(json.loads(k)): json.loads(v) for sink in sinks.values()
            for (t, k), v in sink.entries.items() if t == index}


def waiting_events(env: dict[str, str]) -> dict[str, Any]:
    """Contexts with events still waiting for an earlier seq, from the state log:
    ``{ctx: seqs}`` from the ``seq`` table plus any live ``waiting`` key."""
    out: dict[str, Any] = {}
    for (ctx, *_), st in state_table(env, "seq").items():
        if st.get("waiting"):
            out[ctx] = st["waiting"]
    for key in state_table(env, "waiting"):
        out.setdefault(key[0], []).append(("waiting key", key))
    return out


def metric(web_port: str | int, name: str) -> float | None:
    """The value of an unlabelled Prometheus metric from a worker's /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/metrics", timeout=10) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith(name + " "):
                return float(line.split()[1])
    return None


def readyz(web_port: str | int) -> dict[str, Any]:
    """A worker's /readyz answer (200 or 503 alike)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{web_port}/readyz", timeout=10) as resp:
            return json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return json.loads(exc.read())


def wait_ready_partitions(web_port: str | int, want: Callable[[list[int]], bool], *, timeout: float) -> list[int]:
    """Wait until /readyz says ready with partitions satisfying ``want``; returns them."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = readyz(web_port)
            if last.get("status") == "ready" and want(sorted(last.get("partitions") or [])):
                return sorted(last["partitions"])
        except OSError as exc:
            last = exc
        time.sleep(0.5)
    raise AssertionError(f"worker on :{web_port} not ready as wanted in {timeout:.0f}s: {last!r}")


# --------------------------------------------------------------------------- the verdict


@dataclass
class AlertCheck:
    """What :func:`check_alerts` found on the alerts topic."""

    records: int = 0
    distinct: int = 0
    repeats: int = 0
    repeated_ids: list[str] = field(default_factory=list)


def check_alerts(msgs: list[Any], expected: dict[str, list[bytes]]) -> AlertCheck:
    """Assert the alerts topic equals offline replay, repeats aside, and that every
    repeat is byte-identical to its original (value *and* key — nothing ignored).

    Why byte-identical holds: an alert carries no clock (``emitted_at`` is never set by
    the worker), its id is a hash of its content, and a repeat comes from re-processing
    the same input record, so even ``trigger.topic/partition/offset`` are the same.
    Only the comparison with offline replay nulls the trigger's topic/partition/offset
    (:func:`tests.integration.harness.normalize_trigger`): replay has no Kafka record.
    """
    check = AlertCheck(records=len(msgs))
    first: dict[str, tuple[bytes | None, bytes]] = {}
    distinct: list[dict] = []
    for m in msgs:
        alert = json.loads(m.value)
        aid = alert["alert_id"]
        if aid in first:
            assert first[aid] == (m.key, m.value), (
                f"repeat of alert {aid} differs from its original:\n{first[aid]!r}\n{(m.key, m.value)!r}"
            )
            check.repeats += 1
            check.repeated_ids.append(aid)
            continue
        assert m.key == alert["context_id"].encode(), f"alert {aid} keyed {m.key!r}"
        first[aid] = (m.key, m.value)
        distinct.append(alert)
    check.distinct = len(distinct)
    got = per_context(distinct)
    missing = {c: len(v) for c, v in expected.items() if got.get(c) != v}
    assert got == expected, f"alerts differ from offline replay in contexts {missing}"
    return check


def alive_all(*workers: Any) -> Callable[[], bool]:
    return lambda: all(w.proc is not None and w.proc.poll() is None for w in workers)
