"""The worker's state without Kafka: RocksDB behind caches, the batch handler, the state log.

* The engine over a :class:`~stream.worker.store.PartitionState` (RocksDB, a tiny read
  cache so values are evicted and re-read, commits at random cuts, a commit's writes
  stored some events after it was taken) gives exactly the records and the final state of
  the engine over plain dicts — so caching, in-place set growth, JSON round trips and
  commit boundaries change nothing. Commits run through the real durability object over
  the fakes of tests/unit/fakes.py.
* A bug in the engine rolls the partition back to its last commit and replays what came
  after: no trace of the failing event, nothing else lost.
* The state log's records replay to the committed state; chunks without their marker,
  a zombie's records and a snapshot behave as specified (stream.worker.statelog).
"""

from __future__ import annotations

import asyncio
import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from stream.domain.engine import Engine
from stream.domain.events import Source
from stream.domain.state import TABLES, DictState
from stream.wire import decode_event, encode
from stream.worker import statelog
from stream.worker.store import PartitionState, PartitionStore, key_bytes, key_json, value_json
from tests.unit.fakes import Rig
from tests.unit.test_engine_properties import arrivals

pytestmark = pytest.mark.unit


def _plain(events: list[dict[str, Any]], seq_gap_limit: int = 1000, max_ledger: int = 10_000,
           ) -> tuple[list[bytes], dict]:
    state, engine, out = DictState(), Engine(seq_gap_limit, max_ledger=max_ledger), []
    for offset, e in enumerate(events):
        res = engine.process(state, decode_event(json.dumps(e).encode()), Source("compaction-events", 0, offset))
        out += [encode(r) for r in res.records]
    return out, {name: {key_json(k): value_json(v) for k, v in getattr(state, name).items()} for name in TABLES}


def _stored(store: PartitionStore) -> dict:
    out: dict[str, dict] = {name: {} for name in TABLES}
    for t, k, v in store.entries():
        out[TABLES[t]][k] = v
    return out


def _expected(state: dict) -> dict:
    return {name: dict(sorted(t.items())) for name, t in state.items()}


def _rig(tmp_path: Path, events: list[dict], **kwargs: Any) -> tuple[Rig, list[Any]]:
    """A restored partition over the fake broker, ``events`` on its input topic (offsets 0...)."""
    kwargs.setdefault("cache_entries", 3)
    rig = Rig(Path(tempfile.mkdtemp(dir=tmp_path)), **kwargs)
    return rig, rig.produce(*events)


def _records(result: Any) -> list[bytes]:
    return [encode(r) for _, _, out in result.observed for r in out.records]


async def _close(rig: Rig) -> dict:
    """Commit, read the store back, close."""
    await rig.d.commit()
    stored = _stored(rig.d.partition(0).store)  # type: ignore[union-attr]
    await rig.d.close()
    return stored


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), seq_gap_limit=st.sampled_from([1, 2, 1000]))
def test_the_engine_on_rocksdb_with_caches_and_commits_equals_the_engine_on_dicts(tmp_path, data, seq_gap_limit):
    events = data.draw(arrivals())
    cuts = set(data.draw(st.lists(st.integers(0, max(len(events), 1)), max_size=6)))
    expected_records, expected_state = _plain(events, seq_gap_limit)

    async def scenario() -> tuple[list[bytes], dict]:
        rig, messages = _rig(tmp_path, events, engine=Engine(seq_gap_limit), seq_gap_limit=seq_gap_limit)
        await rig.start()
        records: list[bytes] = []
        for offset, message in enumerate(messages):
            if offset in cuts:
                await rig.d.commit()
            records += _records(await rig.apply([message]))
        return records, await _close(rig)

    records, stored = asyncio.run(scenario())
    assert records == expected_records
    assert stored == _expected(expected_state)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), max_ledger=st.sampled_from([2, 10_000]))
def test_the_engine_restarted_from_its_state_log_equals_the_engine_on_dicts(tmp_path, data, max_ledger):
    """Every incremental structure (sorted sets, set digests, stored children, ledgers) goes
    through the state interface: committed to the state log as JSON and restored by a new
    owner into an empty RocksDB at random restarts, it gives the records and the state of
    the engine on dicts. ``max_ledger`` 2 makes versions be rejected (dead letters)."""
    events = data.draw(arrivals())
    n = max(len(events), 1)
    cuts = set(data.draw(st.lists(st.integers(0, n), max_size=6)))
    restarts = set(data.draw(st.lists(st.sampled_from(sorted(cuts)), max_size=3))) if cuts else set()
    expected_records, expected_state = _plain(events, max_ledger=max_ledger)

    async def scenario() -> tuple[list[bytes], list[str], dict]:
        rig, messages = _rig(tmp_path, events, engine=Engine(1000, max_ledger=max_ledger))
        await rig.start()
        records: list[bytes] = []
        dead: list[str] = []
        for offset, message in enumerate(messages):
            if offset in cuts:
                await rig.d.commit()
                if offset in restarts:  # a new machine: the state log alone
                    await rig.d.close()
                    rig = Rig(Path(tempfile.mkdtemp(dir=tmp_path)), rig.broker, cache_entries=3,
                              engine=Engine(1000, max_ledger=max_ledger))
                    await rig.start(generation=offset + 2)
                    assert rig.d.partition(0).next_offset("compaction-events") == offset  # type: ignore[union-attr]
            result = await rig.apply([message])
            records += _records(result)
            dead += [reason for _, reason in result.dead]
        return records, dead, await _close(rig)

    records, dead, stored = asyncio.run(scenario())
    assert records == expected_records
    assert stored == _expected(expected_state)
    assert all(reason.startswith("ledger full: ") for reason in dead)
    if max_ledger == 10_000:
        assert dead == []


def test_a_rejected_version_is_a_dead_letter_of_its_own_message_and_a_drained_one_of_its_source(tmp_path):
    def ck(event_id: str, node: str, seq: int, children: list[str]) -> dict:
        return {"type": "checkpoint", "event_id": event_id, "context_id": "c", "node_id": node,
                "level": "leaf", "children": children, "seq": seq}

    async def scenario() -> tuple[Any, Any]:
        rig, msgs = _rig(tmp_path, [ck("late", "A", 1, ["x", "y", "z"]),  # waits for seq 0
                                    ck("first", "B", 0, ["p", "q", "r"])],  # applied: over the bound, drains "late"
                         engine=Engine(max_ledger=2))
        await rig.start()
        result = await rig.apply(msgs)
        return result, rig.d.partition(0).state  # type: ignore[union-attr]

    result, state = asyncio.run(scenario())
    first, late = [json.loads(r.value) for r in result.outputs if r.kind == "dead_letter"]
    assert (first["offset"], late["offset"]) == (1, 0)
    assert first["reason"].startswith("ledger full: the ledger of node 'B' would hold 3 children")
    assert json.loads(base64.b64decode(late["value_b64"]))["event_id"] == "late"
    assert [m.offset for m, _ in result.dead] == [1, 0]
    assert state.seq.get(("c",)) == {"next": 2, "waiting": []}  # both seqs used up
    assert state.seen.get(("c", "first")) is None and state.nodes.get(("c", "A")) is None


class _FailingEngine:
    """The real engine, which raises after applying one chosen event (a half-done write);
    a wrapper, since a compiled class cannot be subclassed."""

    fail_on = ""

    def __init__(self) -> None:
        self.engine = Engine()

    def process(self, state, event, source):
        out = self.engine.process(state, event, source)
        if event.event_id == self.fail_on:
            raise RuntimeError("boom")
        return out


def test_an_engine_bug_rolls_the_partition_back_and_dead_letters_only_that_event(tmp_path):
    events = [
        {"type": "artifact", "event_id": "a1", "context_id": "c", "artifact_id": "x", "op": "admitted"},
        {
            "type": "checkpoint",
            "event_id": "n1",
            "context_id": "c",
            "node_id": "n",
            "level": "leaf",
            "referents": ["x"],
        },
        {"type": "artifact", "event_id": "bad", "context_id": "c", "artifact_id": "x", "op": "evicted"},
        {"type": "checkpoint", "event_id": "r", "context_id": "c", "node_id": "r", "level": "root", "children": ["n"]},
    ]
    engine = _FailingEngine()
    engine.fail_on = "bad"

    async def scenario() -> tuple[Any, dict[str, int], dict]:
        rig, msgs = _rig(tmp_path, events, engine=engine)
        await rig.start()
        await rig.apply(msgs[:1])
        await rig.d.commit()  # a1 is committed; n1, bad, r follow in one batch
        result = await rig.apply(msgs[1:])
        covered = rig.d.partition(0).covered()  # type: ignore[union-attr]
        return result, covered, await _close(rig)

    result, covered, stored = asyncio.run(scenario())
    assert [(m.offset, reason) for m, reason in result.dead] == [(2, "internal error: RuntimeError")]
    assert [e.event_id for _, e, _ in result.observed] == ["n1", "r"]
    assert stored == _expected(_plain([events[0], events[1], events[3]])[1])
    assert covered["compaction-events"] == 4  # the failing record is consumed, not retried


# --------------------------------------------------------------------------- the state log


class Sink:
    def __init__(self) -> None:
        self.entries: dict[tuple[int, str], str] = {}
        self.offsets: dict | None = None

    def apply(self, entries):
        for t, k, v in entries:
            if v is None:
                self.entries.pop((t, k), None)
            else:
                self.entries[(t, k)] = v

    def clear(self):
        self.entries.clear()

    def covered(self, offsets, generation, n):
        self.offsets = offsets


def _replay(records: list[bytes], generation: int = -1) -> Sink:
    sink = Sink()
    replay = statelog.Replay(sink, generation)
    for r in records:
        replay.feed(r)
    return sink


ENTRIES = [[1, f'["c","k{i:04d}"]', json.dumps(["durable", "live"])] for i in range(300)]


def test_a_small_commit_is_one_record_and_replays_to_its_entries():
    records = statelog.commit_records(3, 0, {"t": 5}, ENTRIES[:10], 1 << 20)
    assert len(records) == 1 and json.loads(records[0])["k"] == "d"
    sink = _replay(records)
    assert len(sink.entries) == 10 and sink.offsets == {"t": 5}


def test_a_large_commit_is_chunks_closed_by_a_marker_and_applies_only_with_it():
    records = statelog.commit_records(3, 7, {"t": 9}, ENTRIES, 4096)
    assert len(records) > 3 and json.loads(records[-1])["k"] == "m"
    assert len(_replay(records).entries) == 300
    cut = _replay(records[:-1])  # the marker never arrived (a crash mid-commit)
    assert cut.entries == {} and cut.offsets is None
    before = statelog.commit_records(3, 6, {"t": 1}, ENTRIES[:1], 4096)
    assert _replay(before + records[:-1]).offsets == {"t": 1}


def test_a_commit_sent_again_after_a_failed_attempt_applies_once_and_whole():
    records = statelog.commit_records(3, 7, {"t": 9}, ENTRIES, 4096)
    partial = records[:2]  # the first attempt failed after two chunks
    sink = _replay(partial + records)
    assert len(sink.entries) == 300 and sink.offsets == {"t": 9}
    assert _replay(records + records).entries == sink.entries  # a repeated commit changes nothing


def test_a_value_larger_than_a_record_is_fragmented_and_joined():
    huge = [[2, '["c","root"]', json.dumps([f"do not touch file {i}" for i in range(5000)])]]
    records = statelog.commit_records(1, 0, {}, huge, 8192)
    assert len(records) > 5 and all(len(r) < 3 * 8192 for r in records)
    assert _replay(records).entries == {(2, '["c","root"]'): huge[0][2]}


def test_records_of_a_zombie_after_a_newer_fence_are_ignored():
    mine = statelog.commit_records(1, 0, {"t": 1}, ENTRIES[:2], 1 << 20)
    fence = [statelog.fence(2)]
    zombie = statelog.commit_records(1, 1, {"t": 9}, [[1, '["c","evil"]', "1"]], 1 << 20)
    new_owner = statelog.commit_records(2, 1, {"t": 2}, ENTRIES[2:3], 1 << 20)
    sink = _replay(mine + fence + zombie + new_owner)
    assert (1, '["c","evil"]') not in sink.entries and sink.offsets == {"t": 2} and len(sink.entries) == 3


def test_a_snapshot_replaces_everything_before_it():
    old = statelog.commit_records(1, 0, {"t": 1}, [[1, '["c","gone"]', "1"]], 1 << 20)
    snap = statelog.commit_records(1, 1, {"t": 4}, ENTRIES[:5], 1 << 20, snapshot=True)
    assert json.loads(snap[-1])["k"] == "sm"
    sink = _replay(old + snap)
    assert len(sink.entries) == 5 and (1, '["c","gone"]') not in sink.entries and sink.offsets == {"t": 4}


def test_the_store_applies_entries_and_metadata_in_one_batch_and_lists_them_back(tmp_path):
    store = PartitionStore(tmp_path / "db")
    store.write(ENTRIES[:3] + [[1, '["c","k0001"]', None]], {"log": 41, "offsets": {"t": 3}})
    assert [e[1] for e in store.entries()] == ['["c","k0000"]', '["c","k0002"]']
    assert store.meta()["log"] == 41 and store.meta()["offsets"] == {"t": 3}
    assert [k for k, _ in store.rows("nodes")] == [("c", "k0000"), ("c", "k0002")]  # table index 1
    store.clear()
    assert list(store.entries()) == [] and store.meta()["log"] is None
    store.close()


@pytest.mark.parametrize("key", [("c", "n"), ("c", 'quote"d'), ("c", "back\\slash"), ("c", "\u0000nul"),
                                 ("c",), ("c", 7), ("ctx é", "ü"), ("c", "\u2028\x1f\x7f"), ("c", -2**63),
                                 ("c", 2**64), ("c", -2**70)])
def test_key_json_is_the_json_of_the_key(key):
    # orjson's bytes, the stdlib's past 64 bits: both the text json.dumps gives
    assert key_json(key) == json.dumps(list(key), ensure_ascii=False, separators=(",", ":"))
    assert key_bytes(key) == key_json(key).encode("utf-8")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_the_engine_reading_a_commit_in_flight_equals_the_engine_on_dicts(tmp_path, data):
    """A commit is taken at one offset and stored some events later (its state-log record
    acknowledged late): meanwhile the engine reads the taken writes, even when the tiny
    read cache rotates."""
    events = data.draw(arrivals())
    n = max(len(events), 1)
    takes = sorted(set(data.draw(st.lists(st.integers(0, n), max_size=6))))
    stores = {t: data.draw(st.integers(t, n)) for t in takes}
    expected_records, expected_state = _plain(events)

    async def scenario() -> tuple[list[bytes], dict]:
        rig, messages = _rig(tmp_path, events, cache_entries=1)
        await rig.start()
        records: list[bytes] = []
        store_at = -1
        for offset, message in enumerate(messages):
            if 0 <= store_at <= offset:
                rig.broker.release()  # the state log acknowledges: the store gets the taken writes
                await rig.d.settled()
                store_at = -1
            if offset in takes and store_at < 0:
                rig.broker.hold(rig.settings.state_topic)
                async with rig.d.batch():
                    assert rig.d.begin_commit()
                await asyncio.sleep(0)
                store_at = stores[offset]
            records += _records(await rig.apply([message]))
        rig.broker.release()
        return records, await _close(rig)

    records, stored = asyncio.run(scenario())
    assert records == expected_records
    assert stored == _expected(expected_state)


def test_a_rollback_while_a_commit_is_in_flight_keeps_the_taken_writes(tmp_path):
    store = PartitionStore(tmp_path / "db")
    state = PartitionState(store, cache_entries=3)
    try:
        state.nodes[("c", "taken")] = {"v": 1}
        taken = state.take_dirty()
        state.nodes[("c", "later")] = {"v": 2}
        state.forget()  # the engine failed after the take: back to the commit taken
        assert state.nodes.get(("c", "taken")) == {"v": 1}
        assert state.nodes.get(("c", "later")) is None
        store.write(taken, {})
        state.stored()
        assert state.nodes.get(("c", "taken")) == {"v": 1}
        assert state.dirty == 0
    finally:
        store.close()


def test_a_rollback_restores_a_taken_value_the_engine_changed_in_place_since(tmp_path):
    """The engine grows sorted containers in place and re-assigns them; after a rollback
    the commit in flight must read as it was taken, not with the later in-place change."""
    store = PartitionStore(tmp_path / "db")
    state = PartitionState(store, cache_entries=3)
    try:
        state.reach[("c", "r")] = ["a"]
        state.take_dirty()
        grown = state.reach.get(("c", "r"))
        grown.append("b")  # what the engine does before it re-assigns the value
        state.reach[("c", "r")] = grown
        state.forget()
        assert state.reach.get(("c", "r")) == ["a"]
    finally:
        store.close()


_OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), st.integers(0, 2), st.integers(0, 9)),
    st.tuples(st.just("set"), st.integers(0, 2), st.integers(0, 9)),
    st.tuples(st.just("del"), st.integers(0, 2)),
    st.tuples(st.just("pop"), st.integers(0, 2)),
    st.tuples(st.just("get"), st.integers(0, 2)),
    st.tuples(st.just("take"),),
    st.tuples(st.just("stored"),),
    st.tuples(st.just("forget"),),
), max_size=60)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS, cap=st.sampled_from([1, 2, 3, 50]))
@example(ops=[("set", 0, 1), ("take",), ("set", 0, 2), ("stored",)], cap=50)  # written again while committing
@example(ops=[("set", 0, 1), ("take",), ("set", 1, 1), ("set", 2, 1), ("set", 0, 2), ("stored",)], cap=1)
def test_a_table_view_reads_like_a_dict_through_writes_takes_stores_rollbacks_and_evictions(tmp_path, ops, cap):
    """Writes go through the read cache; a value read is always the newest of the write,
    the commit in flight and the store, whatever the cache evicted (model: plain dicts)."""
    store = PartitionStore(Path(tempfile.mkdtemp(dir=tmp_path)) / "db")
    view = PartitionState(store, cache_entries=cap).nodes
    current: dict[Any, Any] = {}  # what the view must read
    committed: dict[Any, Any] = {}  # what the last take holds (a rollback's target)
    taken: list[Any] | None = None
    try:
        for op in ops:
            key = ("c", f"n{op[1]}") if len(op) > 1 else None
            if op[0] == "set":
                view[key] = {"v": op[2]}
                current[key] = {"v": op[2]}
            elif op[0] in ("del", "pop"):
                if key in current:
                    got = view.pop(key) if op[0] == "pop" else view.__delitem__(key)
                    if op[0] == "pop":
                        assert got == current[key]
                    del current[key]
                else:
                    with pytest.raises(KeyError):
                        view.pop(key) if op[0] == "pop" else view.__delitem__(key)
            elif op[0] == "get":
                assert view.get(key) == current.get(key)
                assert (key in view) == (key in current)
            elif op[0] == "take" and taken is None:
                taken = view.take_dirty()
                committed = dict(current)
            elif op[0] == "stored" and taken is not None:
                store.write(taken, {})
                view.stored()
                taken = None
            elif op[0] == "forget":
                view.forget()
                current = dict(committed)
            for k in [("c", f"n{i}") for i in range(3)]:
                assert view.get(k) == current.get(k), (op, k)
    finally:
        store.close()
