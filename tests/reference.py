"""A second, deliberately naive reading of DESIGN.md §3–§4, to check the engine against.

Why it exists: the engine is incremental (dependents index, child -> parents index,
evaluation of *affected* nodes only). Incremental code is where bugs hide, so this
module implements the same contract the dumbest correct way and the property tests
compare the two. It was written from DESIGN.md alone, without reading the engine.

How it is naive, on purpose:

* After every applied event it recomputes, for *every* stored node of the context,
  ``O(n) = referents(n) − reachable`` and ``M(n) = required(n) − carried(n)`` from
  scratch (``required`` by a fresh depth-first walk over ``children``), and compares
  them with the sets it last recorded. That the spec only evaluates *affected* nodes
  makes no difference to the output: a set can only change for a node the spec calls
  affected (a node whose referent changed tier; the node and the nodes that reach it).
* No index of any kind: ancestors, dependents and reachability are all rescans.

Input events are already-valid event dicts (the shape of DESIGN.md §3 after
validation; ``null`` for an optional field means absent). Output is the alert
*projection* the property tests compare (see ``Projection``), or richer dicts from
``naive_run`` for the fields the projection leaves out.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# (rule, status, context_id, node_id, orphans, previous_orphans|None,
#  missing_constraints, gap|None, trigger_event_id)
Projection = tuple[
    str,
    str,
    str,
    "str | None",
    tuple[str, ...],
    "tuple[str, ...] | None",
    tuple[str, ...],
    "tuple[int, int] | None",
    str,
]

ACTIONS = {
    "orphaned_referent": "escalate",
    "negative_constraint_dropped": "reject_subtree",
    "non_idempotent": "freeze",
    "sequence_gap": "resync",
}


def constraint_key(constraint: str | Mapping[str, Any]) -> str:
    """Key of one constraint (DESIGN.md §3, *Validation boundary*)."""
    if isinstance(constraint, str):
        return " ".join(unicodedata.normalize("NFKC", constraint).casefold().split())
    return constraint["id"]


def _ids(value: Iterable[str] | None) -> frozenset[str]:
    return frozenset(value or ())


def _keys(value: Iterable[Any] | None) -> frozenset[str]:
    return frozenset(constraint_key(c) for c in value or ())


@dataclass(frozen=True)
class _Version:
    """The parts of a checkpoint the rules read."""

    level: str
    referents: frozenset[str]
    children: frozenset[str]
    carried: frozenset[str]
    raw: frozenset[str]

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> _Version:
        return cls(
            level=event["level"],
            referents=_ids(event.get("referents")),
            children=_ids(event.get("children")),
            carried=_keys(event.get("negative_constraints")),
            raw=_keys(event.get("raw_negative_constraints")),
        )


@dataclass
class _Context:
    tiers: dict[str, set[str]] = field(default_factory=dict)
    nodes: dict[str, _Version] = field(default_factory=dict)
    frozen: set[str] = field(default_factory=set)
    applied: set[str] = field(default_factory=set)
    next_seq: int | None = None  # None: no seq read yet
    waiting: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    # Last recorded set per node, per rule; absent == empty.
    orphans: dict[str, frozenset[str]] = field(default_factory=dict)
    missing: dict[str, frozenset[str]] = field(default_factory=dict)

    def is_reachable(self, artifact_id: str) -> bool:
        return bool(self.tiers.get(artifact_id))

    def orphans_of(self, referents: Iterable[str]) -> frozenset[str]:
        return frozenset(a for a in referents if not self.is_reachable(a))

    def reachable_nodes(self, start: str) -> set[str]:
        """Stored nodes reachable from ``start`` through children, ``start`` included."""
        seen: set[str] = set()
        stack = [start]
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id not in self.nodes:
                continue
            seen.add(node_id)
            stack.extend(self.nodes[node_id].children)
        return seen

    def required(self, node_id: str) -> frozenset[str]:
        keys: set[str] = set()
        for reached in self.reachable_nodes(node_id):
            keys |= self.nodes[reached].raw
        return frozenset(keys)


@dataclass
class NaiveResult:
    alerts: list[dict[str, Any]]
    waiting: dict[str, list[int]]


class NaiveReference:
    """Feed valid event dicts one by one in arrival order; collects alert dicts."""

    def __init__(self, seq_gap_limit: int = 1000, *, since: bool = False) -> None:
        self.seq_gap_limit = seq_gap_limit
        self.since = since  # replay --since: expected seq starts at the first one read
        self.contexts: dict[str, _Context] = {}
        self.alerts: list[dict[str, Any]] = []

    # -- arrival (§4 Arrival) -------------------------------------------------------
    def arrive(self, event: Mapping[str, Any]) -> None:
        ctx = self.contexts.setdefault(event["context_id"], _Context())
        seq = event.get("seq")
        if seq is None:
            self._apply(ctx, event)
            return
        if ctx.next_seq is None:
            ctx.next_seq = seq if self.since else 0
        if seq < ctx.next_seq or seq in ctx.waiting:
            return  # dropped: first one wins
        ctx.waiting[seq] = event
        self._drain(ctx)
        if len(ctx.waiting) > self.seq_gap_limit:
            lowest = min(ctx.waiting)
            self.alerts.append(
                self._alert(
                    ctx_id=event["context_id"],
                    rule="sequence_gap",
                    status="open",
                    node_id=None,
                    level=None,
                    gap=(ctx.next_seq, lowest - 1),
                    trigger=event,
                )
            )
            ctx.next_seq = lowest
            self._drain(ctx)

    def _drain(self, ctx: _Context) -> None:
        while ctx.next_seq in ctx.waiting:
            event = ctx.waiting.pop(ctx.next_seq)
            ctx.next_seq += 1
            self._apply(ctx, event)

    # -- applying (§4 Applying) -----------------------------------------------------
    def _apply(self, ctx: _Context, event: Mapping[str, Any]) -> None:
        if event["event_id"] in ctx.applied:
            return
        ctx.applied.add(event["event_id"])
        first: list[dict[str, Any]] = []
        if event["type"] == "artifact":
            tiers = ctx.tiers.setdefault(event["artifact_id"], set())
            tier = event.get("tier") or "live"
            if event["op"] == "admitted":
                tiers.add(tier)
            else:
                tiers.discard(tier)
        else:
            node_id = event["node_id"]
            new = _Version.of(event)
            old = ctx.nodes.get(node_id)
            if old is None:
                ctx.nodes[node_id] = new
            elif node_id in ctx.frozen:
                return  # ignored, no alert
            else:
                before = ctx.orphans_of(old.referents)
                after = ctx.orphans_of(new.referents)
                if before != after:
                    ctx.frozen.add(node_id)
                    first.append(
                        self._alert(
                            ctx_id=event["context_id"],
                            rule="non_idempotent",
                            status="open",
                            node_id=node_id,
                            level=old.level,
                            orphans=after,
                            previous_orphans=before,
                            trigger=event,
                        )
                    )
                else:
                    ctx.nodes[node_id] = new
        self.alerts.extend(first)
        self.alerts.extend(self._recompute_everything(ctx, event))

    def _recompute_everything(
        self, ctx: _Context, event: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for node_id in sorted(ctx.nodes):
            version = ctx.nodes[node_id]
            orphans = ctx.orphans_of(version.referents)
            if orphans != ctx.orphans.get(node_id, frozenset()):
                out.append(
                    self._alert(
                        ctx_id=event["context_id"],
                        rule="orphaned_referent",
                        status="open" if orphans else "resolved",
                        node_id=node_id,
                        level=version.level,
                        orphans=orphans,
                        trigger=event,
                    )
                )
                ctx.orphans[node_id] = orphans
            missing = ctx.required(node_id) - version.carried
            if missing != ctx.missing.get(node_id, frozenset()):
                out.append(
                    self._alert(
                        ctx_id=event["context_id"],
                        rule="negative_constraint_dropped",
                        status="open" if missing else "resolved",
                        node_id=node_id,
                        level=version.level,
                        missing=missing,
                        subtree=ctx.reachable_nodes(node_id) - {node_id},
                        trigger=event,
                    )
                )
                ctx.missing[node_id] = missing
        return out

    @staticmethod
    def _alert(
        *,
        ctx_id: str,
        rule: str,
        status: str,
        node_id: str | None,
        level: str | None,
        trigger: Mapping[str, Any],
        orphans: Iterable[str] = (),
        previous_orphans: Iterable[str] | None = None,
        missing: Iterable[str] = (),
        subtree: Iterable[str] | None = None,
        gap: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        occurred_at = trigger.get("occurred_at")
        return {
            "rule": rule,
            "status": status,
            "action": ACTIONS[rule],
            "context_id": ctx_id,
            "node_id": node_id,
            "level": level,
            "orphans": sorted(orphans),
            "previous_orphans": None if previous_orphans is None else sorted(previous_orphans),
            "missing_constraints": sorted(missing),
            "subtree": None if subtree is None else sorted(subtree),
            "gap": None if gap is None else list(gap),
            "trigger": {
                "event_id": trigger["event_id"],
                "type": trigger["type"],
                "topic": None,
                "partition": None,
                "offset": None,
            },
            "detected_at": occurred_at if isinstance(occurred_at, str) else None,
        }

    def waiting(self) -> dict[str, list[int]]:
        return {
            ctx_id: sorted(ctx.waiting) for ctx_id, ctx in self.contexts.items() if ctx.waiting
        }


def naive_run(
    events: Iterable[Mapping[str, Any]], seq_gap_limit: int = 1000, *, since: bool = False
) -> NaiveResult:
    reference = NaiveReference(seq_gap_limit, since=since)
    for event in events:
        reference.arrive(event)
    return NaiveResult(alerts=reference.alerts, waiting=reference.waiting())


def project(alert: Mapping[str, Any]) -> Projection:
    """The fields both readings of the spec must agree on, from an alert dict."""
    previous = alert.get("previous_orphans")
    gap = alert.get("gap")
    return (
        alert["rule"],
        alert["status"],
        alert["context_id"],
        alert["node_id"],
        tuple(alert["orphans"]),
        None if previous is None else tuple(previous),
        tuple(alert["missing_constraints"]),
        None if gap is None else (gap[0], gap[1]),
        alert["trigger"]["event_id"],
    )


def naive_alerts(
    events: list[dict], seq_gap_limit: int = 1000, *, since: bool = False
) -> list[Projection]:
    return [project(a) for a in naive_run(events, seq_gap_limit, since=since).alerts]
