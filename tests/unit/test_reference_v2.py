"""Hand-worked DESIGN.md 2.1 scenarios the naive reference (``tests/reference.py``) must reproduce.

Every expected record below was reasoned through by hand from DESIGN.md §3–§4 and is
written out literally (alerts and status records interleaved in output order), so a
disagreement between the engine and the reference in the property tests is not blamed on
the reference by default. One scenario per v2 clause (ledger laundering three ways,
opaque, inherited degradation, frozen status, cycle, child listed before it arrives,
bounded subtree/degraded_by, [2.1] the nearest-first subtree, set sizes and digests, the
ledger bound) plus the v1 basics (orphan, freeze, seq gap). ``set_digest`` values are
computed here with hashlib from DESIGN.md's definition, not by the reference's code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import pytest

from tests.reference import naive_run

pytestmark = pytest.mark.unit

CTX = "c"


# ------------------------------------------------------------------- input events


def ck(
    event_id: str,
    node_id: str,
    level: str = "leaf",
    *,
    children: list[str] | None = None,
    referents: list[str] | None = None,
    carried: list[Any] | None = None,
    raw: list[Any] | None = None,
    opaque: bool | None = None,
    seq: int | None = None,
    occurred_at: str | None = None,
) -> dict[str, Any]:
    """A valid checkpoint event; ``None`` fields are explicit nulls (= absent, §3)."""
    return {
        "type": "checkpoint",
        "event_id": event_id,
        "context_id": CTX,
        "node_id": node_id,
        "level": level,
        "children": children,
        "referents": referents,
        "negative_constraints": carried,
        "raw_negative_constraints": raw,
        "opaque": opaque,
        "seq": seq,
        "occurred_at": occurred_at,
    }


def art(
    event_id: str,
    artifact_id: str,
    op: str = "admitted",
    tier: str | None = "live",
    *,
    seq: int | None = None,
    occurred_at: str | None = None,
) -> dict[str, Any]:
    return {
        "type": "artifact",
        "event_id": event_id,
        "context_id": CTX,
        "artifact_id": artifact_id,
        "op": op,
        "tier": tier,
        "seq": seq,
        "occurred_at": occurred_at,
    }


# -------------------------------------------------------------- expected records


def _trigger(event_id: str, kind: str) -> dict[str, Any]:
    return {"event_id": event_id, "type": kind, "topic": None, "partition": None, "offset": None}


def digest(*keys: str) -> str:
    """DESIGN.md §4 [v2.1]: (Σ big-endian sha256(UTF-8 key)) mod 2^256, 64 hex digits."""
    return f"{sum(int.from_bytes(hashlib.sha256(k.encode()).digest(), 'big') for k in keys) % (1 << 256):064x}"


def _alert(rule: str, action: str, severity: str, status: str, node_id: str | None,
           level: str | None, by: str, kind: str, **fields: Any) -> dict[str, Any]:
    the_set = {"orphaned_referent": fields.get("orphans"), "non_idempotent": fields.get("orphans"),
               "negative_constraint_dropped": fields.get("missing_constraints")}.get(rule)
    return {
        "schema_version": 1,
        "type": "alert",
        "status": status,
        "rule": rule,
        "action": action,
        "severity": severity,
        "context_id": CTX,
        "node_id": node_id,
        "level": level,
        "orphans": fields.get("orphans", []),
        "previous_orphans": fields.get("previous_orphans"),
        "missing_constraints": fields.get("missing_constraints", []),
        "set_size": fields.get("set_size", None if the_set is None else len(the_set)),
        "truncated": fields.get("truncated", None if the_set is None else False),
        "set_digest": None if the_set is None else digest(*fields.get("full_set", the_set)),
        "subtree": fields.get("subtree"),
        "subtree_size": fields.get("subtree_size"),
        "subtree_truncated": fields.get("subtree_truncated"),
        "gap": fields.get("gap"),
        "trigger": _trigger(by, kind),
        "detected_at": fields.get("detected_at"),
    }


def orphaned(status: str, node_id: str, level: str, orphans: list[str], *, by: str,
             kind: str = "checkpoint") -> dict[str, Any]:
    return _alert("orphaned_referent", "escalate", "critical", status, node_id, level, by, kind,
                  orphans=orphans)


def dropped(status: str, node_id: str, level: str, missing: list[str], subtree: list[str],
            subtree_size: int | None, *, by: str, kind: str = "checkpoint",
            subtree_truncated: bool = False) -> dict[str, Any]:
    """``subtree``: nearest first; ``subtree_size`` None when ``subtree_truncated``."""
    return _alert("negative_constraint_dropped", "reject_subtree", "critical", status, node_id,
                  level, by, kind, missing_constraints=missing, subtree=subtree,
                  subtree_size=subtree_size, subtree_truncated=subtree_truncated)


def frozen_alert(node_id: str, level: str, orphans: list[str], previous: list[str], *,
                 by: str) -> dict[str, Any]:
    return _alert("non_idempotent", "freeze", "high", "open", node_id, level, by, "checkpoint",
                  orphans=orphans, previous_orphans=previous)


def unverifiable(status: str, node_id: str, level: str, *, by: str) -> dict[str, Any]:
    return _alert("unverifiable_checkpoint", "escalate", "warning", status, node_id, level, by,
                  "checkpoint", orphans=None, missing_constraints=None)


def gap(first: int, last: int, *, by: str, kind: str = "artifact") -> dict[str, Any]:
    return _alert("sequence_gap", "resync", "warning", "open", None, None, by, kind,
                  gap=[first, last])


def status(node_id: str, level: str, *, authoritative: bool, by: str, kind: str = "checkpoint",
           frozen: bool = False, open_rules: Sequence[str] = (), degraded_by: Sequence[str] = (),
           degraded_count: int = 0) -> dict[str, Any]:
    return {
        "schema_version": 1,
        "type": "status",
        "context_id": CTX,
        "node_id": node_id,
        "level": level,
        "authoritative": authoritative,
        "frozen": frozen,
        "open_rules": list(open_rules),
        "degraded_by": list(degraded_by),
        "degraded_count": degraded_count,
        "trigger": _trigger(by, kind),
        "detected_at": None,
    }


NCD = "negative_constraint_dropped"
ORPH = "orphaned_referent"
NONID = "non_idempotent"
UNVER = "unverifiable_checkpoint"


# ------------------------------------------------------------------- v1 basics


def test_orphan_opens_resolves_and_a_second_tier_keeps_it_reachable() -> None:
    events = [
        ck("e1", "n1", referents=["a1"], occurred_at="2026-01-01T00:00:00Z"),
        art("e2", "a1", tier=None),  # null tier means live
        art("e3", "a1", tier="durable"),
        art("e4", "a1", "evicted", "live"),  # still durable: nothing
        art("e5", "a1", "evicted", "durable", occurred_at="2026-01-01T00:00:05Z"),
    ]
    assert naive_run(events).records == [
        {
            "schema_version": 1, "type": "alert", "status": "open",
            "rule": "orphaned_referent", "action": "escalate", "severity": "critical",
            "context_id": "c", "node_id": "n1", "level": "leaf",
            "orphans": ["a1"], "previous_orphans": None, "missing_constraints": [],
            "set_size": 1, "truncated": False, "set_digest": digest("a1"),
            "subtree": None, "subtree_size": None, "subtree_truncated": None, "gap": None,
            "trigger": {"event_id": "e1", "type": "checkpoint", "topic": None,
                        "partition": None, "offset": None},
            "detected_at": "2026-01-01T00:00:00Z",
        },
        {
            "schema_version": 1, "type": "status", "context_id": "c", "node_id": "n1",
            "level": "leaf", "authoritative": False, "frozen": False,
            "open_rules": ["orphaned_referent"], "degraded_by": [], "degraded_count": 0,
            "trigger": {"event_id": "e1", "type": "checkpoint", "topic": None,
                        "partition": None, "offset": None},
            "detected_at": "2026-01-01T00:00:00Z",
        },
        {
            "schema_version": 1, "type": "alert", "status": "resolved",
            "rule": "orphaned_referent", "action": "escalate", "severity": "critical",
            "context_id": "c", "node_id": "n1", "level": "leaf",
            "orphans": [], "previous_orphans": None, "missing_constraints": [],
            "set_size": 0, "truncated": False, "set_digest": "0" * 64,
            "subtree": None, "subtree_size": None, "subtree_truncated": None, "gap": None,
            "trigger": {"event_id": "e2", "type": "artifact", "topic": None,
                        "partition": None, "offset": None},
            "detected_at": None,
        },
        {
            "schema_version": 1, "type": "status", "context_id": "c", "node_id": "n1",
            "level": "leaf", "authoritative": True, "frozen": False,
            "open_rules": [], "degraded_by": [], "degraded_count": 0,
            "trigger": {"event_id": "e2", "type": "artifact", "topic": None,
                        "partition": None, "offset": None},
            "detected_at": None,
        },
        {
            "schema_version": 1, "type": "alert", "status": "open",
            "rule": "orphaned_referent", "action": "escalate", "severity": "critical",
            "context_id": "c", "node_id": "n1", "level": "leaf",
            "orphans": ["a1"], "previous_orphans": None, "missing_constraints": [],
            "set_size": 1, "truncated": False, "set_digest": digest("a1"),
            "subtree": None, "subtree_size": None, "subtree_truncated": None, "gap": None,
            "trigger": {"event_id": "e5", "type": "artifact", "topic": None,
                        "partition": None, "offset": None},
            "detected_at": "2026-01-01T00:00:05Z",
        },
        {
            "schema_version": 1, "type": "status", "context_id": "c", "node_id": "n1",
            "level": "leaf", "authoritative": False, "frozen": False,
            "open_rules": ["orphaned_referent"], "degraded_by": [], "degraded_count": 0,
            "trigger": {"event_id": "e5", "type": "artifact", "topic": None,
                        "partition": None, "offset": None},
            "detected_at": "2026-01-01T00:00:05Z",
        },
    ]


def test_non_idempotent_freezes_the_node_and_its_status_stays_frozen() -> None:
    events = [
        ck("e0", "p", "section", children=["n1"]),
        ck("e1", "n1", referents=["a1"]),
        # Different orphan set ({a1} -> {}): frozen; this version (raw x, child q) is
        # discarded and never enters the ledger, so no negative_constraint_dropped.
        ck("e2", "n1", "section", referents=[], raw=["x"], children=["q"]),
        ck("e3", "n1", raw=["x"], referents=["a1"]),  # frozen: ignored, nothing at all
        art("e3", "a1"),  # e3 was applied (and ignored): a duplicate, a1 stays unreachable
        art("e4", "a1"),  # the kept version still lists a1: its orphan resolves
    ]
    result = naive_run(events)
    assert result.records == [
        status("p", "section", authoritative=True, by="e0"),
        orphaned("open", "n1", "leaf", ["a1"], by="e1"),
        status("n1", "leaf", authoritative=False, open_rules=[ORPH], by="e1"),
        status("p", "section", authoritative=False, degraded_by=["n1"], degraded_count=1,
               by="e1"),
        frozen_alert("n1", "leaf", [], ["a1"], by="e2"),
        # p's status did not change (freezing does not propagate): no record for it.
        status("n1", "leaf", authoritative=False, frozen=True, open_rules=[NONID, ORPH],
               by="e2"),
        orphaned("resolved", "n1", "leaf", [], by="e4", kind="artifact"),
        status("n1", "leaf", authoritative=False, frozen=True, open_rules=[NONID], by="e4",
               kind="artifact"),
        status("p", "section", authoritative=True, by="e4", kind="artifact"),
    ]
    assert result.waiting == {}


def test_seq_buffering_gap_drops_and_a_duplicate_that_uses_up_its_seq() -> None:
    events = [
        art("x0", "a1", seq=0),
        ck("n1@2", "n1", referents=["a1"], seq=2),  # waits for 1
        ck("free", "m"),  # no seq: applied at once while n1@2 waits
        art("ev@3", "a1", "evicted", seq=3),
        art("b@4", "b", seq=4),  # 3 waiting > limit 2: gap [1, 1], jump to 2, drain
        art("late@1", "a1", seq=1),  # below the next expected (5): dropped
        art("ev@3", "a1", seq=5),  # id already applied: ignored at apply time, seq 5 used
        art("a1@6", "a1", seq=6),
        art("dup6", "a1", "evicted", seq=6),  # below the next expected (7): dropped
        art("w@9", "w", seq=9),  # waits
        ck("late@1", "z"),  # the dropped late@1 was never applied: this one is
    ]
    result = naive_run(events, seq_gap_limit=2)
    assert result.records == [
        status("m", "leaf", authoritative=True, by="free"),
        gap(1, 1, by="b@4"),
        status("n1", "leaf", authoritative=True, by="n1@2"),
        orphaned("open", "n1", "leaf", ["a1"], by="ev@3", kind="artifact"),
        status("n1", "leaf", authoritative=False, open_rules=[ORPH], by="ev@3", kind="artifact"),
        orphaned("resolved", "n1", "leaf", [], by="a1@6", kind="artifact"),
        status("n1", "leaf", authoritative=True, by="a1@6", kind="artifact"),
        status("z", "leaf", authoritative=True, by="late@1"),
    ]
    assert result.waiting == {CTX: [9]}


def test_since_starts_the_expected_seq_at_the_first_seq_read() -> None:
    events = [
        ck("nos", "n0"),  # no seq: does not set the start
        ck("e7", "n1", referents=["a1"], seq=7),
        art("e6", "a1", seq=6),  # below the start: dropped
        art("e8", "a1", seq=8),
    ]
    assert naive_run(events, since=True).records == [
        status("n0", "leaf", authoritative=True, by="nos"),
        orphaned("open", "n1", "leaf", ["a1"], by="e7"),
        status("n1", "leaf", authoritative=False, open_rules=[ORPH], by="e7"),
        orphaned("resolved", "n1", "leaf", [], by="e8", kind="artifact"),
        status("n1", "leaf", authoritative=True, by="e8", kind="artifact"),
    ]


# ------------------------------------------------------------- v2: the ledger


def test_raw_less_re_emission_cannot_launder_a_prohibition() -> None:
    events = [
        ck("e1", "L", raw=["Do not X"], carried=["do  not x"]),  # same key: nothing missing
        ck("e2", "L", raw=[], carried=[]),  # the ledger still requires "do not x"
        ck("e3", "L", raw=None, carried=[{"id": "do not x", "text": "never X"}]),
    ]
    assert naive_run(events).records == [
        status("L", "leaf", authoritative=True, by="e1"),
        dropped("open", "L", "leaf", ["do not x"], [], 0, by="e2"),
        status("L", "leaf", authoritative=False, open_rules=[NCD], by="e2"),
        dropped("resolved", "L", "leaf", [], [], 0, by="e3"),
        status("L", "leaf", authoritative=True, by="e3"),
    ]


def test_re_emission_that_drops_the_child_holding_the_prohibition_still_requires_it() -> None:
    events = [
        ck("e1", "L", raw=["x"], carried=["x"]),
        ck("e2", "S", "section", children=["L"], carried=["x"]),
        ck("e3", "S", "section", children=[], carried=[]),  # ledger keeps the link S -> L
        ck("e4", "R", "root", children=["S"]),  # reaches L through S's ledger
    ]
    assert naive_run(events).records == [
        status("L", "leaf", authoritative=True, by="e1"),
        status("S", "section", authoritative=True, by="e2"),
        dropped("open", "S", "section", ["x"], ["L"], 1, by="e3"),
        status("S", "section", authoritative=False, open_rules=[NCD], by="e3"),
        dropped("open", "R", "root", ["x"], ["S", "L"], 2, by="e4"),  # nearest first
        status("R", "root", authoritative=False, open_rules=[NCD], by="e4"),
    ]


def test_root_that_replaces_its_section_still_requires_the_old_sections_prohibition() -> None:
    events = [
        ck("e1", "L1", raw=["x"], carried=["x"]),
        ck("e2", "S1", "section", children=["L1"], carried=["x"]),
        ck("e3", "R", "root", children=["S1"], carried=["x"]),
        ck("e4", "S2", "section", children=["L2"]),  # L2 not seen yet: requires nothing
        ck("e5", "R", "root", children=["S2"], carried=[]),  # ledger children {S1, S2}
        ck("e6", "L2", raw=[]),  # subtree of R grows, its set does not: no alert
    ]
    assert naive_run(events).records == [
        status("L1", "leaf", authoritative=True, by="e1"),
        status("S1", "section", authoritative=True, by="e2"),
        status("R", "root", authoritative=True, by="e3"),
        status("S2", "section", authoritative=True, by="e4"),
        dropped("open", "R", "root", ["x"], ["S1", "S2", "L1"], 3, by="e5"),  # L2 not seen yet
        status("R", "root", authoritative=False, open_rules=[NCD], by="e5"),
        status("L2", "leaf", authoritative=True, by="e6"),
    ]


# ------------------------------------------------------------------ v2: opaque


def test_opaque_version_replacing_a_clear_one_opens_and_a_clear_one_resolves() -> None:
    events = [
        art("e0", "a1"),
        ck("e1", "n1", referents=["a1"], opaque=False),
        ck("e2", "p", "section", children=["n1"]),
        ck("e3", "n1", referents=[], opaque=True),  # orphans {} == {}: replaces
        ck("e4", "n1", referents=[], opaque=True),  # same again: nothing changes
        ck("e5", "n1", referents=["a1"], opaque=None),  # null: not opaque
        ck("e6", "n2", referents=["a9"], opaque=True),  # opaque on arrival, still checked
    ]
    assert naive_run(events).records == [
        status("n1", "leaf", authoritative=True, by="e1"),
        status("p", "section", authoritative=True, by="e2"),
        unverifiable("open", "n1", "leaf", by="e3"),
        status("n1", "leaf", authoritative=False, open_rules=[UNVER], by="e3"),
        status("p", "section", authoritative=False, degraded_by=["n1"], degraded_count=1,
               by="e3"),
        unverifiable("resolved", "n1", "leaf", by="e5"),
        status("n1", "leaf", authoritative=True, by="e5"),
        status("p", "section", authoritative=True, by="e5"),
        orphaned("open", "n2", "leaf", ["a9"], by="e6"),
        unverifiable("open", "n2", "leaf", by="e6"),
        status("n2", "leaf", authoritative=False, open_rules=[ORPH, UNVER], by="e6"),
    ]


# ---------------------------------------------------- v2: inherited degradation


def test_eviction_two_levels_down_degrades_the_ancestors_and_readmission_clears_it() -> None:
    events = [
        art("e1", "a1"),
        ck("e2", "L", referents=["a1"]),
        ck("e3", "K"),  # L's sibling: never degraded
        ck("e4", "S", "section", children=["L", "K"]),
        ck("e5", "R", "root", children=["S"]),
        art("e6", "a1", "evicted"),
        art("e7", "a1", tier="durable"),
    ]
    assert naive_run(events).records == [
        status("L", "leaf", authoritative=True, by="e2"),
        status("K", "leaf", authoritative=True, by="e3"),
        status("S", "section", authoritative=True, by="e4"),
        status("R", "root", authoritative=True, by="e5"),
        orphaned("open", "L", "leaf", ["a1"], by="e6", kind="artifact"),
        status("L", "leaf", authoritative=False, open_rules=[ORPH], by="e6", kind="artifact"),
        status("R", "root", authoritative=False, degraded_by=["L"], degraded_count=1, by="e6",
               kind="artifact"),
        status("S", "section", authoritative=False, degraded_by=["L"], degraded_count=1,
               by="e6", kind="artifact"),
        orphaned("resolved", "L", "leaf", [], by="e7", kind="artifact"),
        status("L", "leaf", authoritative=True, by="e7", kind="artifact"),
        status("R", "root", authoritative=True, by="e7", kind="artifact"),
        status("S", "section", authoritative=True, by="e7", kind="artifact"),
    ]


# ------------------------------------------------------- v2: shapes of the graph


def test_cycle_is_walked_once_and_a_node_is_never_in_its_own_subtree_or_degraded_by() -> None:
    events = [
        ck("e1", "A", "section", children=["B"], raw=["x"], carried=["x"]),
        ck("e2", "B", "section", children=["A"], referents=["a1"]),
        art("e3", "a1"),
        ck("e4", "C", children=["C", "A"], raw=["y"]),
    ]
    assert naive_run(events).records == [
        status("A", "section", authoritative=True, by="e1"),
        orphaned("open", "B", "section", ["a1"], by="e2"),
        dropped("open", "B", "section", ["x"], ["A"], 1, by="e2"),
        status("A", "section", authoritative=False, degraded_by=["B"], degraded_count=1,
               by="e2"),
        status("B", "section", authoritative=False, open_rules=[NCD, ORPH], by="e2"),
        orphaned("resolved", "B", "section", [], by="e3", kind="artifact"),
        status("A", "section", authoritative=True, by="e3", kind="artifact"),
        status("B", "section", authoritative=False, open_rules=[NCD], by="e3", kind="artifact"),
        dropped("open", "C", "leaf", ["x", "y"], ["A", "B"], 2, by="e4"),
        status("C", "leaf", authoritative=False, open_rules=[NCD], by="e4"),
    ]


def test_child_listed_before_it_arrives_links_its_parent_when_it_does() -> None:
    events = [
        ck("e1", "R", "root", children=["L"]),  # L unseen: contributes nothing
        ck("e2", "L", raw=["x"], carried=["x"], referents=["a1"]),
    ]
    assert naive_run(events).records == [
        status("R", "root", authoritative=True, by="e1"),
        orphaned("open", "L", "leaf", ["a1"], by="e2"),
        dropped("open", "R", "root", ["x"], ["L"], 1, by="e2"),
        status("L", "leaf", authoritative=False, open_rules=[ORPH], by="e2"),
        status("R", "root", authoritative=False, open_rules=[NCD], degraded_by=["L"],
               degraded_count=1, by="e2"),
    ]


def test_subtree_and_degraded_by_list_the_first_1000_and_count_them_all() -> None:
    leaves = [f"l{i:04d}" for i in range(1001)]
    events = [ck("r", "R", "root", children=leaves, carried=["x"])]
    events.append(ck("e-l0000", "l0000", referents=["gone"], raw=["x"], carried=["x"]))
    events += [ck(f"e-{leaf}", leaf, referents=["gone"]) for leaf in leaves[1:-1]]
    events.append(ck("last", "l1000", referents=["gone"]))
    events.append(ck("r2", "R", "root", children=leaves, carried=[]))  # drops x
    records = naive_run(events).records
    assert records[-5:] == [
        orphaned("open", "l1000", "leaf", ["gone"], by="last"),
        # The 1001st degraded leaf changes R's status though the first 1000 listed stay.
        status("R", "root", authoritative=False, degraded_by=leaves[:1000],
               degraded_count=1001, by="last"),
        status("l1000", "leaf", authoritative=False, open_rules=[ORPH], by="last"),
        # 1,001 nodes under R: the first 1,000 listed, no count beyond (§4 [v2.1])
        dropped("open", "R", "root", ["x"], leaves[:1000], None, by="r2", subtree_truncated=True),
        status("R", "root", authoritative=False, open_rules=[NCD], degraded_by=leaves[:1000],
               degraded_count=1001, by="r2"),
    ]
    assert records[-8:-5] == [
        orphaned("open", "l0999", "leaf", ["gone"], by="e-l0999"),
        status("R", "root", authoritative=False, degraded_by=leaves[:1000],
               degraded_count=1000, by="e-l0999"),
        status("l0999", "leaf", authoritative=False, open_rules=[ORPH], by="e-l0999"),
    ]


# ------------------------------------------------------------------ v2.1: bounded sets


def test_subtree_lists_the_nearest_nodes_first_and_says_when_it_stopped() -> None:
    leaves = [f"x{i:04d}" for i in range(999)]
    events = [
        ck("e1", "Y", children=["Z"]),
        ck("e2", "Z"),
        ck("e3", "X", "section", children=leaves),  # none of them seen yet
        ck("e4", "R", "root", children=["Y", "X"], raw=["p"]),
    ]
    records = naive_run(events).records
    # breadth-first: R's children in sorted order (X, Y), then X's stored children (none
    # yet), then Y's (Z) — not Z before X as a sorted list would have it
    assert records[-2:] == [
        dropped("open", "R", "root", ["p"], ["X", "Y", "Z"], 3, by="e4"),
        status("R", "root", authoritative=False, open_rules=[NCD], by="e4"),
    ]
    events += [ck(f"e-{leaf}", leaf) for leaf in leaves]
    events.append(ck("e5", "R", "root", children=["Y", "X"], raw=["p", "q"]))
    # 1,002 stored nodes under R: the 999 leaves come before Z (depth 2 either way, but X's
    # children are walked before Y's); Z is the 1,002nd and is left out
    assert naive_run(events).records[-1] == dropped(
        "open", "R", "root", ["p", "q"], ["X", "Y", *leaves[:998]], None, by="e5", subtree_truncated=True)


def test_a_set_over_1000_lists_its_first_1000_with_its_size_and_the_digest_of_all() -> None:
    refs = [f"a{i:04d}" for i in range(1001)]
    events = [ck("e1", "n1", referents=refs), art("e2", "a0000"), art("e3", "a1000")]
    alerts = naive_run(events).alerts
    assert alerts == [
        orphaned("open", "n1", "leaf", refs[:1000], by="e1") | {
            "set_size": 1001, "truncated": True, "set_digest": digest(*refs)},
        orphaned("open", "n1", "leaf", refs[1:1001], by="e2", kind="artifact") | {
            "set_size": 1000, "truncated": False},
        orphaned("open", "n1", "leaf", refs[1:1000], by="e3", kind="artifact"),
    ]
    # a key outside the listed 1,000 changed the digest, and only the digest
    assert alerts[0]["set_digest"] != digest(*refs[:1000])


def test_non_idempotent_lists_both_sets_the_same_way() -> None:
    before = [f"a{i:04d}" for i in range(1002)]
    events = [ck("e1", "n1", referents=before), ck("e2", "n1", referents=["b"])]
    assert naive_run(events).alerts[-1] == frozen_alert("n1", "leaf", ["b"], before[:1000], by="e2") | {
        "truncated": True}  # previous_orphans was cut; set_size describes orphans


# ------------------------------------------------------------------ v2.1: ledger bound


def test_a_version_past_the_ledger_bound_is_rejected_and_changes_nothing() -> None:
    events = [
        ck("e0", "A", children=["c1", "c2", "c3"], seq=0),  # 3 children > 2: rejected
        ck("e1", "A", children=["c1"], raw=["x", "y"], seq=1),  # 2 raw keys: fits
        ck("e2", "A", children=["c1"], raw=["z"], seq=2),  # x, y, z: rejected, seq 2 used up
        ck("e0", "A", children=["c1"], raw=["x"], carried=["x", "y"], seq=3),  # e0 was never applied
        art("e4", "r", seq=4),
        ck("e5", "B", referents=["r"], raw=["p"], carried=["p"]),
        art("e6", "r", "evicted"),
        ck("e7", "B", referents=["r", "s"], raw=["q", "s", "t"]),  # freezes B: no ledger, no rejection
        ck("e8", "B", raw=["q", "s", "t"]),  # frozen: ignored, no rejection either
    ]
    result = naive_run(events, max_ledger=2)
    assert result.rejected == ["e0", "e2"]
    assert result.records == [
        dropped("open", "A", "leaf", ["x", "y"], [], 0, by="e1"),
        status("A", "leaf", authoritative=False, open_rules=[NCD], by="e1"),
        dropped("resolved", "A", "leaf", [], [], 0, by="e0"),
        status("A", "leaf", authoritative=True, by="e0"),
        status("B", "leaf", authoritative=True, by="e5"),
        orphaned("open", "B", "leaf", ["r"], by="e6", kind="artifact"),
        status("B", "leaf", authoritative=False, open_rules=[ORPH], by="e6", kind="artifact"),
        frozen_alert("B", "leaf", ["r", "s"], ["r"], by="e7"),
        status("B", "leaf", authoritative=False, frozen=True, open_rules=[NONID, ORPH], by="e7"),
    ]
    assert result.waiting == {}
