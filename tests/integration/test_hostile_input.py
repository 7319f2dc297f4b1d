"""Ten thousand hostile messages among real ones: the worker dead-letters each bad one
exactly once, processes every good one, and never falls over.

The good messages are real trajectories turned into events by ``python -m stream ingest``;
the bad ones come from a seeded fuzzer that breaks them in every way the contract names
(DESIGN.md §3 "Validation boundary"): cut-off JSON, flipped and inserted bytes, rule
fields of the wrong type or value, nesting past the depth limit, NaN, invalid UTF-8,
NUL bytes, lone surrogates in ids, unknown schema versions, missing required keys, not
an object, a Kafka key that is not the payload's ``context_id`` (another context, none,
not UTF-8), tombstones, and every ``CG_MAX_*`` limit exceeded. The worker runs with small
limits (below) so limit-breaking messages stay small; the real events stay within them.

More (the module notes): docs/DEVELOPMENT.md, section ``tests/integration/test_hostile_input.py``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from stream.errors import InvalidEvent
from stream.offline.replay import replay_lines
from stream.wire import MAX_JSON_DEPTH, Limits, decode_message
from tests.integration.harness import (
    REPO,
    Worker,
    consume,
    expected_alerts,
    normalize_trigger,
    per_context,
    run,
    run_cli,
    worker_env,
)

N_BAD = 10_000
SEED = 9
#: The worker's limits in this test (the real events' worst: 8.6 kB, 18 referents,
#: 4 children, 14 constraints, 91-character ids, 24-character constraints).
LIMITS = Limits(max_message_bytes=16_384, max_id_chars=256, max_referents=64, max_children=16,
                max_constraints=32, max_constraint_chars=256)
LIMIT_ENV = {
    "CG_MAX_MESSAGE_BYTES": LIMITS.max_message_bytes, "CG_MAX_ID_CHARS": LIMITS.max_id_chars,
    "CG_MAX_REFERENTS": LIMITS.max_referents, "CG_MAX_CHILDREN": LIMITS.max_children,
    "CG_MAX_CONSTRAINTS": LIMITS.max_constraints, "CG_MAX_CONSTRAINT_CHARS": LIMITS.max_constraint_chars,
}
TRACES = REPO / "stream/samples/traces"
INPUTS = [
    TRACES / "mini-swe-agent-deepseek-swebench/deepseek_chat_dev/pydicom__pydicom-901.traj.json",
    TRACES / "mini-swe-agent-deepseek-swebench/deepseek_chat_dev/pyvista__pyvista-4315.traj.json",
]

Message = tuple[bytes | None, bytes | None]  # (key, value)

# --------------------------------------------------------------------------- the fuzzer


def _dumps(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


_WRONG_VALUES: dict[str, list] = {
    "seq": ["3", 3.0, True, -1, [1], {"n": 1}, 2**63],
    "type": ["alert", "Checkpoint", "", 3, None, ["checkpoint"]],
    "event_id": [3, "", None, ["e"], {"id": "e"}, True],
    "context_id": [3, "", None, ["c"]],
    "node_id": [3, "", None, [], {}],
    "level": ["branch", 1, None, "LEAF", ""],
    "children": ["c", [1], [""], [None], {"c": 1}, 7],
    "referents": ["r", [2], [""], [[]], True],
    "negative_constraints": ["do not", [3], [{"text": "no id"}], [{"id": ""}], [None], [[]]],
    "raw_negative_constraints": [{"id": "x"}, [2.5], [{"id": 7}], [True]],
    "artifact_id": [1, "", None, ["a"]],
    "op": ["deleted", "", None, 1, "ADMITTED"],
    "tier": ["cold", 1, "", ["live"]],
    "schema_version": [2, 0, -1, "1", 1.0, True, 10**30],
}
_REQUIRED = {"checkpoint": ["type", "event_id", "context_id", "node_id", "level"],
             "artifact": ["type", "event_id", "context_id", "artifact_id", "op"]}


def _nest(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def hostile(rng: random.Random, good: list[bytes]) -> Iterator[tuple[str, Message]]:
    """Endless (category, (key, value)) candidates, each built from a random real event."""
    makers: list[tuple[str, Callable[[dict, bytes, bytes], Message]]] = []

    def maker(name: str):
        def register(fn):
            makers.append((name, fn))
            return fn
        return register

    @maker("truncated")
    def _(ev, line, key):
        return key, line[: rng.randrange(0, len(line) - 1)]

    @maker("byte-flipped")
    def _(ev, line, key):
        b = bytearray(line)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return key, bytes(b)

    @maker("junk-inserted")
    def _(ev, line, key):
        at = rng.randrange(len(line))
        junk = rng.choice([b"\x00", b"\xff\xfe", b"}", b",", b'"', b"\\", b"NaN", b"\xc3", b"\xed\xa0\x80"])
        return key, line[:at] + junk + line[at:]

    @maker("wrong-type")
    def _(ev, line, key):
        fields = [f for f in _WRONG_VALUES if f in ev or f in ("seq", "schema_version")]
        f = rng.choice(fields)
        return key, _dumps({**ev, f: rng.choice(_WRONG_VALUES[f])})

    @maker("missing-required")
    def _(ev, line, key):
        bad = dict(ev)
        del bad[rng.choice(_REQUIRED[ev["type"]])]
        bad["extra_" + str(rng.randrange(99))] = {"unknown": [1, 2]}
        return key, _dumps(bad)

    @maker("null-required")
    def _(ev, line, key):
        return key, _dumps({**ev, rng.choice(_REQUIRED[ev["type"]]): None})

    @maker("deep-nesting")
    def _(ev, line, key):
        depth = rng.choice([MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 1000, 5000])
        return key, line[:-1] + b',"text":' + _nest(depth) + b"}"

    @maker("nan-infinity")
    def _(ev, line, key):
        return key, line[:-1] + b',"cycle":' + rng.choice([b"NaN", b"Infinity", b"-Infinity"]) + b"}"

    @maker("invalid-utf8")
    def _(ev, line, key):
        return key, line[:-1] + b',"text":"' + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"]) + b'"}'

    @maker("nul-byte")
    def _(ev, line, key):
        at = rng.randrange(1, len(line))
        return key, line[:at] + b"\x00" + line[at:]

    @maker("lone-surrogate-id")
    def _(ev, line, key):
        f = "node_id" if ev["type"] == "checkpoint" else "artifact_id"
        return key, line.replace(f'"{f}":"'.encode(), f'"{f}":"\\ud800'.encode(), 1)

    @maker("unknown-version")
    def _(ev, line, key):
        return key, _dumps({**ev, "schema_version": rng.choice([2, 3, 99])})

    @maker("not-an-object")
    def _(ev, line, key):
        return key, rng.choice([b"[]", b"[1,2]", b"3", b'"checkpoint"', b"null", b"true", b"", b" ", b"{", b"{}"])

    @maker("wrong-key")
    def _(ev, line, key):
        return rng.choice([b"other-context", key + b"x", b"", key.upper() + b"\x00"]), line

    @maker("null-key")
    def _(ev, line, key):
        return None, line

    @maker("non-utf8-key")
    def _(ev, line, key):
        return key + b"\xff", line

    @maker("tombstone")
    def _(ev, line, key):
        return key, None

    @maker("oversize")
    def _(ev, line, key):
        pad = LIMITS.max_message_bytes + rng.randrange(1, 4096) - len(line)
        return key, line[:-1] + b',"text":"' + b"x" * pad + b'"}'

    @maker("long-id")
    def _(ev, line, key):
        f = rng.choice(["event_id", "node_id" if ev["type"] == "checkpoint" else "artifact_id"])
        return key, _dumps({**ev, f: "i" * (LIMITS.max_id_chars + rng.randrange(1, 50))})

    @maker("too-many")
    def _(ev, line, key):
        if ev["type"] == "artifact":
            ev = {**ev, "type": "checkpoint", "node_id": "n", "level": "leaf"}
        f, limit = rng.choice([("referents", LIMITS.max_referents), ("children", LIMITS.max_children),
                               ("negative_constraints", LIMITS.max_constraints),
                               ("raw_negative_constraints", LIMITS.max_constraints)])
        return key, _dumps({**ev, f: [f"x{i}" for i in range(limit + rng.randrange(1, 100))]})

    @maker("long-constraint")
    def _(ev, line, key):
        if ev["type"] == "artifact":
            ev = {**ev, "type": "checkpoint", "node_id": "n", "level": "leaf"}
        text = "do not " + "z" * LIMITS.max_constraint_chars
        return key, _dumps({**ev, "raw_negative_constraints": [rng.choice([text, {"id": text}])]})

    parsed = [json.loads(line) for line in good]
    while True:
        i = rng.randrange(len(good))
        name, make = rng.choice(makers)
        ev, line = parsed[i], good[i]
        yield name, make(dict(ev), line, ev["context_id"].encode())


def bad_messages(good: list[bytes], n: int, seed: int) -> list[tuple[str, Message, str]]:
    """``n`` (category, message, reason) the contract dead-letters (candidates it accepts are dropped)."""
    rng = random.Random(seed)
    out = []
    for name, (key, value) in hostile(rng, good):
        try:
            decode_message(key, value, limits=LIMITS)
        except InvalidEvent as exc:
            out.append((name, (key, value), str(exc)))
            if len(out) == n:
                return out
        # accepted (e.g. a byte flip inside a text): not a bad message; draw again


# --------------------------------------------------------------------------- the test


def _per_context(records: list[dict]) -> dict[str, list[str]]:
    """context -> its records in order, offsets nulled (Kafka orders per context)."""
    out: dict[str, list[str]] = {}
    for r in records:
        out.setdefault(r["context_id"], []).append(json.dumps(normalize_trigger(r), sort_keys=True))
    return out


async def _produce(bootstrap: str, records: list[tuple[str, bytes | None, bytes | None]]) -> list[tuple]:
    """Produce in order; return each record's (topic, partition, offset)."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                                max_request_size=4 << 20, enable_idempotence=True)
    await producer.start()
    try:
        futures = [await producer.send(topic, value, key=key) for topic, key, value in records]
        metas = await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return [(m.topic, m.partition, m.offset) for m in metas]


@pytest.fixture
def good_lines(tmp_path: Path) -> list[bytes]:
    out = tmp_path / "good.jsonl"
    env = worker_env("127.0.0.1:1", tmp_path)
    done = run_cli(env, "ingest", *map(str, INPUTS), "--out", str(out), "--no-progress")
    assert done.returncode == 0, done.stderr
    return out.read_bytes().splitlines()


def test_ten_thousand_hostile_messages_are_each_dead_lettered_once_and_every_good_one_is_processed(
    kafka_bootstrap, good_lines, tmp_path
):
    bad = bad_messages(good_lines, N_BAD, SEED)
    categories = Counter(name for name, _, _ in bad)
    assert len(categories) >= 20 and min(categories.values()) >= 100, categories
    expected = expected_alerts(good_lines)
    n_alerts = sum(map(len, expected.values()))
    expected_verdicts = [normalize_trigger(v) for v in replay_lines(good_lines).verdicts]

    env = worker_env(kafka_bootstrap, tmp_path, **LIMIT_ENV)
    assert run_cli(env, "topics", "create").returncode == 0
    topic = {"checkpoint": env["CG_COMPACTION_TOPIC"], "artifact": env["CG_ARTIFACT_TOPIC"]}
    rng = random.Random(SEED)
    # good records keep their order; bad ones land at random places between them
    records: list[tuple[str, bytes | None, bytes | None]] = []
    slots = sorted(rng.randrange(len(good_lines) + 1) for _ in bad)
    is_bad: list[int | None] = []
    b = 0
    for i, line in enumerate([*good_lines, None]):
        while b < len(slots) and slots[b] == i:
            _, (key, value), _ = bad[b]
            records.append((rng.choice(list(topic.values())), key, value))
            is_bad.append(b)
            b += 1
        if line is not None:
            event = json.loads(line)
            records.append((topic[event["type"]], event["context_id"].encode(), line))
            is_bad.append(None)

    worker = Worker(env, tmp_path / "worker.log").start()
    try:
        t0 = time.monotonic()
        where = run(_produce(kafka_bootstrap, records))
        dead = run(consume(kafka_bootstrap, env["CG_DEADLETTER_TOPIC"], expected=len(bad), timeout=240))
        alerts = [json.loads(m.value) for m in run(consume(kafka_bootstrap, env["CG_ALERTS_TOPIC"],
                                                           expected=n_alerts, timeout=240))]
        verdicts = [json.loads(m.value) for m in run(consume(kafka_bootstrap, env["CG_VERDICTS_TOPIC"],
                                                             expected=len(expected_verdicts), timeout=240))]
        elapsed = time.monotonic() - t0
        assert worker.proc.poll() is None, "the worker died"
    finally:
        code = worker.stop()
    log = worker.log_text()
    assert code == 0, log[-3000:]
    assert "Traceback" not in log and "unexpected error" not in log, log[-3000:]
    print(f"\n{len(bad)} bad + {len(good_lines)} good messages, {len(dead)} dead letters, "
          f"{len(alerts)} alerts in {elapsed:.0f} s; categories: {dict(sorted(categories.items()))}")

    # every good one processed: alerts and verdicts are offline replay's of the good events alone
    assert per_context(alerts) == expected
    assert len(verdicts) == len(expected_verdicts) > 0
    assert _per_context(verdicts) == _per_context(expected_verdicts)

    # each bad one dead-lettered exactly once, nothing else dead-lettered
    source_of_bad = {where[i]: bad[b] for i, b in enumerate(is_bad) if b is not None}
    records_dead = [json.loads(m.value) for m in dead]
    seen = Counter((d["topic"], d["partition"], d["offset"]) for d in records_dead)
    assert max(seen.values()) == 1, [s for s, n in seen.items() if n > 1][:5]
    assert set(seen) == set(source_of_bad), (
        f"{len(set(source_of_bad) - set(seen))} bad messages not dead-lettered, "
        f"{len(set(seen) - set(source_of_bad))} good ones dead-lettered")
    for d in records_dead:
        name, (key, value), reason = source_of_bad[(d["topic"], d["partition"], d["offset"])]
        assert d["reason"] == reason, (name, d["reason"], reason)  # the worker decides as offline decoding
        assert d["reason"] and "\n" not in d["reason"]
        assert base64.b64decode(d["value_b64"]) == (value or b"")
        assert d["key_b64"] == (None if key is None else base64.b64encode(key).decode())
