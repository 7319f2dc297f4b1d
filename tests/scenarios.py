"""The DESIGN.md §4 scenarios as input-event streams, one context per scenario.

Every event carries ``seq`` (per context, from 0), so the worker applies a context's
events in the same order whatever order the two input topics deliver them in — which
is what lets the integration tests compare the alerts topic with offline replay.
"""

from __future__ import annotations

import json
from typing import Any


class Ctx:
    """Builder for one context's events; ``seq`` and ``event_id`` are assigned in order."""

    def __init__(self, context_id: str) -> None:
        self.context_id = context_id
        self.events: list[dict[str, Any]] = []

    def _add(self, event_type: str, **fields: Any) -> Ctx:
        seq = len(self.events)
        self.events.append({
            "type": event_type, "schema_version": 1, "event_id": f"{self.context_id}/e{seq}",
            "context_id": self.context_id, "seq": seq,
            "occurred_at": f"2026-11-01T00:{seq // 60:02d}:{seq % 60:02d}Z", **fields,
        })
        return self

    def admit(self, aid: str, tier: str = "live") -> Ctx:
        return self._add("artifact", artifact_id=aid, op="admitted", tier=tier, kind="tool_output")

    def evict(self, aid: str, tier: str = "live") -> Ctx:
        return self._add("artifact", artifact_id=aid, op="evicted", tier=tier)

    def checkpoint(self, node: str, level: str = "leaf", **fields: Any) -> Ctx:
        return self._add("checkpoint", node_id=node, level=level, **fields)

    def lines(self) -> list[bytes]:
        return [json.dumps(e, separators=(",", ":")).encode() for e in self.events]


def design_scenarios(prefix: str = "s") -> list[Ctx]:
    """One context per rule/edge of DESIGN.md §4 (all alert kinds but sequence_gap)."""
    out = []
    # orphaned_referent: eviction after a checkpoint opens, admission resolves; tiers.
    c = Ctx(f"{prefix}-orphan")
    c.admit("a1").admit("a2").checkpoint("L1", referents=["a1", "a2"])
    c.evict("a1").admit("a1", "durable").evict("a2").admit("a2").evict("a1", "durable")
    out.append(c)
    # never admitted referent is an orphan from the start
    c = Ctx(f"{prefix}-never")
    c.checkpoint("L1", referents=["ghost"]).admit("ghost", "durable")
    out.append(c)
    # non_idempotent: re-summarization that changes the orphan set freezes the node.
    c = Ctx(f"{prefix}-nonidem")
    c.admit("a1").checkpoint("L1", referents=["a1"]).evict("a1")
    c.checkpoint("L1", referents=["a1", "a9"])           # after={a1,a9} != before={a1}
    c.checkpoint("L1", referents=["zz"])                 # frozen: ignored
    c.admit("a1")                                        # old version still evaluated
    out.append(c)
    # idempotent re-summarization replaces the version
    c = Ctx(f"{prefix}-replace")
    c.admit("a1").admit("a2").checkpoint("L1", referents=["a1"]).checkpoint("L1", referents=["a2"])
    c.evict("a1").evict("a2")
    out.append(c)
    # constraint decay through section to root, normalized strings and {id, text}
    c = Ctx(f"{prefix}-decay")
    c.checkpoint("L1", raw_negative_constraints=["Do NOT modify tests", {"id": "P2", "text": "no commits"}],
                 negative_constraints=["do  not modify TESTS", {"id": "P2"}])
    c.checkpoint("S1", "section", children=["L1"], negative_constraints=["do not modify tests"])
    c.checkpoint("R", "root", children=["S1", "L2"])
    c.checkpoint("L2", raw_negative_constraints=["Never push"], negative_constraints=["never push"])
    c.checkpoint(
        "R", "root", children=["S1", "L2"], negative_constraints=["do not modify tests", {"id": "P2"}, "never  PUSH"]
    )
    out.append(c)
    # cycles and self-children terminate
    c = Ctx(f"{prefix}-cycle")
    c.checkpoint("A", "section", children=["B", "A"], raw_negative_constraints=["x"], negative_constraints=["x"])
    c.checkpoint("B", "section", children=["A"], raw_negative_constraints=["y"])
    out.append(c)
    # duplicates by event_id are ignored
    c = Ctx(f"{prefix}-dup")
    c.admit("a1").checkpoint("L1", referents=["a1"])
    dup = dict(c.events[1], seq=2, referents=["nope"])
    c.events.append(dup)
    c.evict("a1")
    out.append(c)
    return out


def all_lines(ctxs: list[Ctx]) -> list[bytes]:
    out: list[bytes] = []
    for c in ctxs:
        out.extend(c.lines())
    return out
