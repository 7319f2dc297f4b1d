"""The compaction simulator: deterministic, valid on the wire, and true to its rates.

The checks here are computed from the generated events only (an independent reading
of DESIGN.md §3 and of the seed's failure modes), never from the simulator's state.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import replace
from pathlib import Path

import pytest

from stream.adapters import (
    SimulationParams,
    Trajectory,
    Turn,
    encode_event,
    load_file,
    load_trajectories,
    simulate,
    simulate_all,
    survival_table,
)
from stream.adapters.simulated.extract import make_constraint
from stream.adapters.simulated.model import Artifact
from stream.adapters.simulated.simulator import constraint_key

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "stream" / "samples" / "traces"
DJANGO_11099 = (TRACES / "mini-swe-agent-deepseek-swebench"
                / "deepseek_chat_test_1-100" / "django__django-11099.traj.json")
TOLERANCE = 0.05


@pytest.fixture(scope="module")
def shipped() -> list[Trajectory]:
    if not TRACES.is_dir():
        pytest.fail(f"the shipped traces are missing: expected them at {TRACES}")
    loaded = load_trajectories([TRACES])
    assert loaded.errors == []
    return loaded.trajectories


@pytest.fixture(scope="module")
def default_events(shipped) -> list[dict]:
    return list(simulate_all(shipped))


@pytest.fixture(scope="module")
def django() -> Trajectory:
    return load_file(DJANGO_11099)[0]


def jsonl(events) -> str:
    return "".join(encode_event(e) + "\n" for e in events)


# --------------------------------------------------------------------------- DESIGN.md §3 checker

RFC3339_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z$")
COMMON = ("type", "schema_version", "event_id", "context_id", "seq", "occurred_at")
ARTIFACT_KINDS = {"raw_span", "tool_output", "file", "durable_record"}


def is_int(v) -> bool:
    return type(v) is int


def is_id(v) -> bool:
    return isinstance(v, str) and 0 < len(v) <= 1024


def wire_problems(events) -> list[str]:
    """Every way the events break DESIGN.md §3 or the simulator's own promises."""
    problems: list[str] = []
    next_seq: dict[str, int] = defaultdict(int)
    event_ids: dict[str, set[str]] = defaultdict(set)
    tiers: dict[tuple[str, str], set[str]] = defaultdict(set)
    ever_live: dict[str, set[str]] = defaultdict(set)
    last_time: dict[str, str] = {}
    for e in events:
        where = f"{e.get('context_id')}#{e.get('seq')}"
        line = encode_event(e)
        if len(line.encode("utf-8")) > 1 << 20:
            problems.append(f"{where}: line over 1 MiB")
        for f in COMMON:
            if f not in e:
                problems.append(f"{where}: missing {f}")
        if list(e)[: len(COMMON)] != list(COMMON):
            problems.append(f"{where}: key order {list(e)[:6]}")
        if e["type"] not in ("artifact", "checkpoint") or e["schema_version"] != 1 or not is_int(e["schema_version"]):
            problems.append(f"{where}: bad type/schema_version")
        ctx = e["context_id"]
        if not is_id(ctx) or not is_id(e["event_id"]):
            problems.append(f"{where}: bad context_id/event_id")
        if e["event_id"] in event_ids[ctx]:
            problems.append(f"{where}: event_id repeated")
        event_ids[ctx].add(e["event_id"])
        if not is_int(e["seq"]) or e["seq"] != next_seq[ctx]:
            problems.append(f"{where}: seq {e['seq']} but expected {next_seq[ctx]}")
        next_seq[ctx] += 1
        if not RFC3339_Z.match(e["occurred_at"]) or e["occurred_at"] < last_time.get(ctx, ""):
            problems.append(f"{where}: occurred_at {e['occurred_at']} not RFC 3339 Z / goes back")
        last_time[ctx] = e["occurred_at"]
        if e["type"] == "artifact":
            aid, op, tier = e.get("artifact_id"), e.get("op"), e.get("tier")
            if not is_id(aid) or op not in ("admitted", "evicted") or tier not in ("live", "durable"):
                problems.append(f"{where}: bad artifact fields")
                continue
            if e.get("kind") not in ARTIFACT_KINDS:
                problems.append(f"{where}: bad kind {e.get('kind')!r}")
            held = tiers[(ctx, aid)]
            if op == "admitted":
                if tier in held:
                    problems.append(f"{where}: {aid} admitted to {tier} twice")
                held.add(tier)
                if tier == "live":
                    ever_live[ctx].add(aid)
            else:
                if tier not in held:
                    problems.append(f"{where}: {aid} evicted from {tier} where it was not")
                held.discard(tier)
                if tier == "live" and "durable" not in held:
                    problems.append(f"{where}: {aid} left live without being in durable")
        else:
            if not is_id(e.get("node_id")) or e.get("level") not in ("leaf", "section", "root"):
                problems.append(f"{where}: bad node_id/level")
            for f in ("children", "referents", "negative_constraints", "raw_negative_constraints",
                      "instructions", "raw_instructions"):
                v = e.get(f)
                if not isinstance(v, list) or len(v) > 10_000:
                    problems.append(f"{where}: {f} not a list of <= 10000")
                    continue
                for item in v:
                    if f in ("children", "referents"):
                        ok = is_id(item)
                    else:
                        ok = isinstance(item, dict) and is_id(item.get("id")) and isinstance(item.get("text"), str)
                    if not ok:
                        problems.append(f"{where}: bad {f} entry {item!r}")
            for r in e.get("referents", []):
                if r not in ever_live[ctx]:
                    problems.append(f"{where}: referent {r} named before it was admitted")
            carried = {constraint_key(c) for c in e["negative_constraints"]}
            raw = {constraint_key(c) for c in e["raw_negative_constraints"]}
            if not carried <= raw:
                problems.append(f"{where}: carries constraints it does not cover")
    return problems


def test_every_event_of_the_thirty_shipped_runs_follows_the_wire_contract(default_events):
    assert wire_problems(default_events) == []


def test_the_checker_catches_broken_events(django):
    events = simulate(django)
    broken = [dict(e) for e in events]
    broken[3]["seq"] = 7
    broken[5]["artifact_id"] = ""
    cp = next(i for i, e in enumerate(broken) if e["type"] == "checkpoint" and e["referents"])
    broken[cp]["referents"] = ["never-admitted"]
    problems = wire_problems(broken)
    assert any("seq 7 but expected 3" in p for p in problems)
    assert any("bad artifact fields" in p for p in problems)
    assert any("never-admitted named before it was admitted" in p for p in problems)


# --------------------------------------------------------------------------- determinism


def test_ingesting_one_trajectory_twice_gives_byte_identical_jsonl(django):
    again = load_file(DJANGO_11099)[0]
    assert jsonl(simulate(django)) == jsonl(simulate(again))


def test_a_context_does_not_depend_on_the_others_or_their_order(shipped):
    params = SimulationParams(seed=11)
    alone = jsonl(simulate(shipped[5], params))
    others = [*shipped[:5], *shipped[-3:]]
    together = [e for e in simulate_all([*reversed(others), shipped[5]], params)
                if e["context_id"] == shipped[5].context_id]
    assert jsonl(together) == alone


def test_the_seed_changes_the_draws(django):
    assert jsonl(simulate(django, SimulationParams(seed=1))) != jsonl(simulate(django, SimulationParams(seed=2)))


def test_encoding_is_compact_ordered_and_keeps_unicode():
    line = encode_event({"zeta": 1, "context_id": "c", "type": "artifact", "text": "é"})
    assert line == '{"type":"artifact","context_id":"c","text":"é","zeta":1}'


# --------------------------------------------------------------------------- pinned shape


def test_django_11099_produces_the_pinned_counts(django):
    events = simulate(django)
    assert len(django.turns) == 44 and django.tokens == 19735
    assert Counter(e["type"] for e in events) == {"artifact": 482, "checkpoint": 18}
    assert Counter((e["op"], e["tier"]) for e in events if e["type"] == "artifact") == {
        ("admitted", "live"): 178,
        ("evicted", "live"): 153,
        ("admitted", "durable"): 151,
    }
    assert Counter(e["level"] for e in events if e["type"] == "checkpoint") == {"leaf": 11, "section": 4, "root": 3}
    assert len({e["node_id"] for e in events if e["type"] == "checkpoint"}) == 15  # 3 re-emissions
    assert events[0]["occurred_at"] == "2026-01-01T00:00:00Z"


# --------------------------------------------------------------------------- survival


def test_survival_table_measures_carried_over_raw_on_the_last_version():
    c1, c2 = {"id": "p1", "text": "Do not a."}, {"id": "p2", "text": "Do not b."}
    events = [
        {"type": "checkpoint", "context_id": "c", "node_id": "l", "level": "leaf",
         "raw_negative_constraints": [c1, c2], "negative_constraints": [c1, c2]},
        {"type": "checkpoint", "context_id": "c", "node_id": "l", "level": "leaf",
         "raw_negative_constraints": [c1, c2], "negative_constraints": [c1]},
        {"type": "checkpoint", "context_id": "c", "node_id": "r", "level": "root",
         "raw_negative_constraints": ["Do  NOT a."], "negative_constraints": ["do not a."],
         "raw_instructions": [{"id": "i"}], "instructions": []},
    ]
    table = survival_table(events)
    assert (table["prohibitions"]["leaf"].kept, table["prohibitions"]["leaf"].total) == (1, 2)
    assert table["prohibitions"]["root"].rate == 1.0
    assert table["prohibitions"]["section"].rate is None
    assert table["instructions"]["root"].rate == 0.0


def test_measured_survival_on_the_thirty_runs_is_within_five_points_of_the_configured_rates(default_events):
    params = SimulationParams()
    table = survival_table(default_events)
    for kind, rates in (("prohibitions", params.prohibition_survival), ("instructions", params.instruction_survival)):
        for level, target in zip(("leaf", "section", "root"), rates):
            cell = table[kind][level]
            assert cell.total >= 200, (kind, level, cell)
            assert abs(cell.rate - target) <= TOLERANCE, (kind, level, cell.rate, target)


def test_other_configured_rates_are_met_as_well(shipped):
    params = SimulationParams(seed=5, prohibition_survival=(0.9, 0.5, 0.2), instruction_survival=(1.0, 0.5, 0.5))
    table = survival_table(simulate_all(shipped, params))
    for kind, rates in (("prohibitions", params.prohibition_survival), ("instructions", params.instruction_survival)):
        for level, target in zip(("leaf", "section", "root"), rates):
            assert abs(table[kind][level].rate - target) <= TOLERANCE, (kind, level)


# --------------------------------------------------------------------------- the failure modes


def failure_modes(events) -> Counter:
    """The seed's three failure modes, read off the events with our own reachability."""
    found: Counter = Counter()
    reach: dict[str, Counter] = defaultdict(Counter)
    nodes: dict[tuple[str, str], dict] = {}
    subtree_raw: dict[tuple[str, str], set] = {}
    for e in events:
        ctx = e["context_id"]
        if e["type"] == "artifact":
            reach[ctx][e["artifact_id"]] += 1 if e["op"] == "admitted" else -1
            continue
        reachable = {a for a, n in reach[ctx].items() if n > 0}
        key = (ctx, e["node_id"])
        if key in nodes:
            found["re-emissions"] += 1
            before = set(nodes[key]["referents"]) - reachable
            after = set(e["referents"]) - reachable
            if before != after:
                found["non_idempotent"] += 1
        raw = {constraint_key(c) for c in e["raw_negative_constraints"]}
        for child in e["children"]:
            raw |= subtree_raw.get((ctx, child), set())
        subtree_raw[key] = raw
        if e["level"] != "leaf" and raw - {constraint_key(c) for c in e["negative_constraints"]}:
            found["dropped_above_leaf"] += 1
        nodes[key] = e
    for (ctx, _node), e in nodes.items():
        reachable = {a for a, n in reach[ctx].items() if n > 0}
        if set(e["referents"]) - reachable:
            found["orphaned_at_end"] += 1
    return found


def test_the_defaults_produce_every_failure_mode_at_a_realistic_rate(default_events):
    modes = failure_modes(default_events)
    nodes = len({(e["context_id"], e["node_id"]) for e in default_events if e["type"] == "checkpoint"})
    assert 0.05 * nodes <= modes["orphaned_at_end"] <= 0.30 * nodes, (modes, nodes)
    assert modes["dropped_above_leaf"] >= 30
    assert 3 <= modes["non_idempotent"] <= 20, modes
    assert modes["re-emissions"] > modes["non_idempotent"]


def test_stable_recompaction_never_changes_referents(shipped):
    params = SimulationParams(recompact_rate=0.5, recompact_changes_referents=False, durable_capacity=60)
    seen: dict[tuple[str, str], list[str]] = {}
    for e in simulate_all(shipped[:8], params):
        if e["type"] == "checkpoint":
            key = (e["context_id"], e["node_id"])
            if key in seen:  # a growing root only adds referents; nothing is redrawn
                assert set(seen[key]) <= set(e["referents"]), key
            seen[key] = e["referents"]


# --------------------------------------------------------------------------- mechanics on a toy run


def toy_turn(i: int, tokens: int, *ids: str, constraints=()) -> Turn:
    return Turn(
        index=i, tokens=tokens, label="step",
        artifacts=tuple(Artifact(a, "raw_span") for a in ids) + tuple(Artifact(c.id, "raw_span") for c in constraints),
        referent_candidates=ids, constraints=tuple(constraints),
    )


def test_whole_turns_leave_oldest_first_down_to_the_low_water_mark():
    rule = make_constraint("Do not touch prod.", "prohibition")
    traj = Trajectory("toy", "toy", tuple(
        [toy_turn(0, 50, "a0", constraints=[rule])] + [toy_turn(i, 40, f"a{i}") for i in range(1, 6)]
    ))
    params = SimulationParams(window=100, low_water=60, durable_capacity=2, fanout=2, recompact_rate=0.0,
                              referent_survival=(1.0, 1.0, 1.0))
    events = simulate(traj, params)
    leaves = [e for e in events if e["type"] == "checkpoint" and e["level"] == "leaf"]
    # turns 0+1+2 = 130 > 100 -> evict turn 0 (80 left > 60) and turn 1 (40 left)
    assert leaves[0]["referents"] == ["a0", "a1"]
    assert [c["id"] for c in leaves[0]["raw_negative_constraints"]] == [rule.id]
    evicted_durable = [
        e["artifact_id"] for e in events if e["type"] == "artifact" and (e["op"], e["tier"]) == ("evicted", "durable")
    ]
    assert evicted_durable[:2] == ["a0", rule.id]  # capacity 2: the oldest fall out first
    assert wire_problems(events) == []


def test_params_are_validated_with_clear_messages():
    with pytest.raises(ValueError, match="low water"):
        SimulationParams(window=100, low_water=100)
    with pytest.raises(ValueError, match="fanout"):
        SimulationParams(fanout=1)
    with pytest.raises(ValueError, match="prohibition survival"):
        SimulationParams(prohibition_survival=(0.5, 2.0, 0.1))
    assert replace(SimulationParams(), seed=3).seed == 3
