"""A second, deliberately naive reading of DESIGN.md (contract 2.1) §3–§4, to check the engine.

Why it exists: the engine is incremental (indexes, evaluation of *affected* nodes only).
Incremental code is where bugs hide, so this module implements the same contract the
dumbest obviously-correct way and the property tests compare the two. It was written from
DESIGN.md alone, without reading the engine or its tests.

How it is naive, on purpose:

More (the module notes): docs/DEVELOPMENT.md, section ``tests/reference.py``.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

# (rule, status, context_id, node_id, orphans|None, previous_orphans|None,
#  missing_constraints|None, gap|None, trigger_event_id)
Projection = tuple[
    str,
    str,
    str,
    "str | None",
    "tuple[str, ...] | None",
    "tuple[str, ...] | None",
    "tuple[str, ...] | None",
    "tuple[int, int] | None",
    str,
]

ACTIONS = {
    "orphaned_referent": "escalate",
    "negative_constraint_dropped": "reject_subtree",
    "non_idempotent": "freeze",
    "sequence_gap": "resync",
    "unverifiable_checkpoint": "escalate",
}
SEVERITIES = {
    "orphaned_referent": "critical",
    "negative_constraint_dropped": "critical",
    "non_idempotent": "high",
    "sequence_gap": "warning",
    "unverifiable_checkpoint": "warning",
}
MAX_LISTED = 1000  # DESIGN.md §4 Bounded outputs: every listed set, subtree, degraded_by
MAX_LEDGER = 10_000  # DESIGN.md §4 Ledger bound (CG_MAX_LEDGER)


def digest_of(keys: Iterable[str]) -> str:
    """DESIGN.md §4 [v2.1] ``set_digest``, from the whole set."""
    total = sum(int(hashlib.sha256(k.encode("utf-8")).hexdigest(), 16) for k in set(keys))
    return "%064x" % (total % 2**256)


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
    opaque: bool

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> _Version:
        return cls(
            level=event["level"],
            referents=_ids(event.get("referents")),
            children=_ids(event.get("children")),
            carried=_keys(event.get("negative_constraints")),
            raw=_keys(event.get("raw_negative_constraints")),
            opaque=event.get("opaque") is True,
        )


Status = tuple[bool, bool, tuple[str, ...], tuple[str, ...]]


@dataclass
class _Context:
    tiers: dict[str, set[str]] = field(default_factory=dict)
    nodes: dict[str, _Version] = field(default_factory=dict)  # kept version
    # The ledger: every version ever applied to the node (stored or replacing).
    ledger: dict[str, list[_Version]] = field(default_factory=dict)
    frozen: set[str] = field(default_factory=set)
    applied: set[str] = field(default_factory=set)
    next_seq: int | None = None  # None: no seq read yet
    waiting: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    # Last recorded set per node and rule; absent == empty / closed.
    orphans: dict[str, frozenset[str]] = field(default_factory=dict)
    missing: dict[str, frozenset[str]] = field(default_factory=dict)
    opaque_open: set[str] = field(default_factory=set)
    non_idempotent_open: set[str] = field(default_factory=set)
    statuses: dict[str, Status] = field(default_factory=dict)

    def is_reachable(self, artifact_id: str) -> bool:
        return bool(self.tiers.get(artifact_id))

    def orphans_of(self, referents: Iterable[str]) -> frozenset[str]:
        return frozenset(a for a in referents if not self.is_reachable(a))

    def ledger_children(self, node_id: str) -> set[str]:
        out: set[str] = set()
        for version in self.ledger[node_id]:
            out |= version.children
        return out

    def ledger_raw(self, node_id: str) -> set[str]:
        out: set[str] = set()
        for version in self.ledger[node_id]:
            out |= version.raw
        return out

    def reachable_nodes(self, start: str) -> set[str]:
        """Stored nodes reachable from ``start`` through ledger children, ``start`` included."""
        seen: set[str] = set()
        stack = [start]
        while stack:
            node_id = stack.pop()
            if node_id in seen or node_id not in self.nodes:
                continue
            seen.add(node_id)
            stack.extend(self.ledger_children(node_id))
        return seen

    def breadth_first(self, start: str) -> list[str]:
        """Stored nodes reachable from ``start``, nearest first (each node's ledger children
        in sorted order, each node once), ``start`` itself left out."""
        order: list[str] = []
        seen = {start}
        frontier = [start]
        while frontier:
            following: list[str] = []
            for node_id in frontier:
                for child in sorted(self.ledger_children(node_id)):
                    if child in seen or child not in self.nodes:
                        continue
                    seen.add(child)
                    order.append(child)
                    following.append(child)
            frontier = following
        return order

    def ledger_size(self, node_id: str, version: _Version) -> tuple[int, int]:
        """(raw keys, children) the node's ledger would hold with ``version`` in it."""
        raw, children = set(version.raw), set(version.children)
        if node_id in self.ledger:
            raw |= self.ledger_raw(node_id)
            children |= self.ledger_children(node_id)
        return len(raw), len(children)

    def required(self, node_id: str) -> frozenset[str]:
        keys: set[str] = set()
        for reached in self.reachable_nodes(node_id):
            keys |= self.ledger_raw(reached)
        return frozenset(keys)

    def open_rules(self, node_id: str) -> tuple[str, ...]:
        rules = []
        if self.orphans.get(node_id):
            rules.append("orphaned_referent")
        if self.missing.get(node_id):
            rules.append("negative_constraint_dropped")
        if node_id in self.non_idempotent_open:
            rules.append("non_idempotent")
        if node_id in self.opaque_open:
            rules.append("unverifiable_checkpoint")
        return tuple(sorted(rules))

    def degraded_by(self, node_id: str) -> tuple[str, ...]:
        return tuple(
            sorted(
                other
                for other in self.reachable_nodes(node_id) - {node_id}
                if self.orphans.get(other) or other in self.opaque_open
            )
        )

    def status(self, node_id: str) -> Status:
        open_rules = self.open_rules(node_id)
        frozen = node_id in self.frozen
        degraded_by = self.degraded_by(node_id)
        authoritative = not open_rules and not frozen and not degraded_by
        return (authoritative, frozen, open_rules, degraded_by)


@dataclass
class NaiveResult:
    records: list[dict[str, Any]]  # alerts and statuses, in output order
    waiting: dict[str, list[int]]
    rejected: list[str] = field(default_factory=list)  # event ids rejected by the ledger bound

    @property
    def alerts(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["type"] == "alert"]

    @property
    def statuses(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["type"] == "status"]


def _trigger(event: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "event_id": event["event_id"],
        "type": event["type"],
        "topic": None,
        "partition": None,
        "offset": None,
    }


def _detected_at(event: Mapping[str, Any]) -> str | None:
    occurred_at = event.get("occurred_at")
    return occurred_at if isinstance(occurred_at, str) else None


class NaiveReference:
    """Feed valid event dicts one by one in arrival order; collects alert and status dicts."""

    def __init__(self, seq_gap_limit: int = 1000, *, since: bool = False, max_ledger: int = MAX_LEDGER) -> None:
        self.seq_gap_limit = seq_gap_limit
        self.since = since  # replay --since: expected seq starts at the first one read
        self.max_ledger = max_ledger
        self.contexts: dict[str, _Context] = {}
        self.records: list[dict[str, Any]] = []
        self.rejected: list[str] = []

    @property
    def alerts(self) -> list[dict[str, Any]]:
        return [r for r in self.records if r["type"] == "alert"]

    # -- arrival (§4 Arrival) -------------------------------------------------------
    def arrive(self, event: Mapping[str, Any]) -> None:
        ctx_id = event["context_id"]
        ctx = self.contexts.setdefault(ctx_id, _Context())
        seq = event.get("seq")
        if seq is None:
            self._apply(ctx_id, ctx, event)
            return
        if ctx.next_seq is None:
            ctx.next_seq = seq if self.since else 0
        if seq < ctx.next_seq or seq in ctx.waiting:
            return  # dropped: first one wins
        ctx.waiting[seq] = event
        self._drain(ctx_id, ctx)
        if len(ctx.waiting) > self.seq_gap_limit:
            lowest = min(ctx.waiting)
            self.records.append(
                self._alert(
                    ctx_id=ctx_id,
                    rule="sequence_gap",
                    status="open",
                    node_id=None,
                    level=None,
                    gap=(ctx.next_seq, lowest - 1),
                    trigger=event,
                )
            )
            ctx.next_seq = lowest
            self._drain(ctx_id, ctx)

    def _drain(self, ctx_id: str, ctx: _Context) -> None:
        while ctx.next_seq in ctx.waiting:
            event = ctx.waiting.pop(ctx.next_seq)
            ctx.next_seq += 1
            self._apply(ctx_id, ctx, event)

    # -- applying (§4 Applying) -----------------------------------------------------
    def _rejected(self, ctx: _Context, event: Mapping[str, Any]) -> bool:
        """Reading 16: the version would take its node's ledger past the bound."""
        if event["type"] != "checkpoint":
            return False
        node_id = event["node_id"]
        new = _Version.of(event)
        old = ctx.nodes.get(node_id)
        if old is not None and (node_id in ctx.frozen
                                or ctx.orphans_of(old.referents) != ctx.orphans_of(new.referents)):
            return False  # enters no ledger
        raw, children = ctx.ledger_size(node_id, new)
        return raw > self.max_ledger or children > self.max_ledger

    def _apply(self, ctx_id: str, ctx: _Context, event: Mapping[str, Any]) -> None:
        if event["event_id"] in ctx.applied:
            return  # 1. duplicate: ignored entirely
        if self._rejected(ctx, event):
            self.rejected.append(event["event_id"])
            return
        ctx.applied.add(event["event_id"])
        first: list[dict[str, Any]] = []
        if event["type"] == "artifact":  # 2.
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
            if old is None:  # 3. new node: store it
                ctx.nodes[node_id] = new
                ctx.ledger[node_id] = [new]
            elif node_id in ctx.frozen:
                return  # 4. frozen: ignored, no alert
            else:
                before = ctx.orphans_of(old.referents)
                after = ctx.orphans_of(new.referents)
                if before != after:
                    ctx.frozen.add(node_id)
                    ctx.non_idempotent_open.add(node_id)
                    first.append(
                        self._alert(
                            ctx_id=ctx_id,
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
                    ctx.ledger[node_id].append(new)
        self.records.extend(first)
        self.records.extend(self._recompute_rules(ctx_id, ctx, event))
        self.records.extend(self._recompute_statuses(ctx_id, ctx, event))

    def _recompute_rules(
        self, ctx_id: str, ctx: _Context, event: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        # The rules read the store, kept versions and ledgers, never each other's alerts,
        # so recording as we go is safe; statuses are computed after all of them.
        out: list[dict[str, Any]] = []
        for node_id in sorted(ctx.nodes):
            version = ctx.nodes[node_id]
            orphans = ctx.orphans_of(version.referents)
            if orphans != ctx.orphans.get(node_id, frozenset()):
                out.append(
                    self._alert(
                        ctx_id=ctx_id,
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
                        ctx_id=ctx_id,
                        rule="negative_constraint_dropped",
                        status="open" if missing else "resolved",
                        node_id=node_id,
                        level=version.level,
                        missing=missing,
                        subtree=ctx.breadth_first(node_id),
                        trigger=event,
                    )
                )
                ctx.missing[node_id] = missing
            if version.opaque != (node_id in ctx.opaque_open):
                out.append(
                    self._alert(
                        ctx_id=ctx_id,
                        rule="unverifiable_checkpoint",
                        status="open" if version.opaque else "resolved",
                        node_id=node_id,
                        level=version.level,
                        orphans=None,
                        missing=None,
                        trigger=event,
                    )
                )
                if version.opaque:
                    ctx.opaque_open.add(node_id)
                else:
                    ctx.opaque_open.discard(node_id)
        return out

    def _recompute_statuses(
        self, ctx_id: str, ctx: _Context, event: Mapping[str, Any]
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for node_id in sorted(ctx.nodes):
            status = ctx.status(node_id)
            if ctx.statuses.get(node_id) == status:
                continue
            ctx.statuses[node_id] = status
            authoritative, frozen, open_rules, degraded_by = status
            out.append(
                {
                    "schema_version": 1,
                    "type": "status",
                    "context_id": ctx_id,
                    "node_id": node_id,
                    "level": ctx.nodes[node_id].level,
                    "authoritative": authoritative,
                    "frozen": frozen,
                    "open_rules": list(open_rules),
                    "degraded_by": list(degraded_by[:MAX_LISTED]),
                    "degraded_count": len(degraded_by),
                    "trigger": _trigger(event),
                    "detected_at": _detected_at(event),
                }
            )
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
        orphans: Iterable[str] | None = (),
        previous_orphans: Iterable[str] | None = None,
        missing: Iterable[str] | None = (),
        subtree: list[str] | None = None,
        gap: tuple[int, int] | None = None,
    ) -> dict[str, Any]:
        orphans = None if orphans is None else sorted(orphans)
        previous = None if previous_orphans is None else sorted(previous_orphans)
        missing = None if missing is None else sorted(missing)
        # reading 15: the rule's set (None on sequence_gap and unverifiable_checkpoint)
        the_set = {"orphaned_referent": orphans, "non_idempotent": orphans,
                   "negative_constraint_dropped": missing}.get(rule)
        truncated = None
        if the_set is not None:
            truncated = len(the_set) > MAX_LISTED or len(previous or ()) > MAX_LISTED
        return {
            "schema_version": 1,
            "type": "alert",
            "status": status,
            "rule": rule,
            "action": ACTIONS[rule],
            "severity": SEVERITIES[rule],
            "context_id": ctx_id,
            "node_id": node_id,
            "level": level,
            "orphans": None if orphans is None else orphans[:MAX_LISTED],
            "previous_orphans": None if previous is None else previous[:MAX_LISTED],
            "missing_constraints": None if missing is None else missing[:MAX_LISTED],
            "set_size": None if the_set is None else len(the_set),
            "truncated": truncated,
            "set_digest": None if the_set is None else digest_of(the_set),
            "subtree": None if subtree is None else subtree[:MAX_LISTED],
            "subtree_size": None if subtree is None or len(subtree) > MAX_LISTED else len(subtree),
            "subtree_truncated": None if subtree is None else len(subtree) > MAX_LISTED,
            "gap": None if gap is None else list(gap),
            "trigger": _trigger(trigger),
            "detected_at": _detected_at(trigger),
        }

    def waiting(self) -> dict[str, list[int]]:
        return {
            ctx_id: sorted(ctx.waiting) for ctx_id, ctx in self.contexts.items() if ctx.waiting
        }


def naive_run(
    events: Iterable[Mapping[str, Any]], seq_gap_limit: int = 1000, *, since: bool = False,
    max_ledger: int = MAX_LEDGER,
) -> NaiveResult:
    reference = NaiveReference(seq_gap_limit, since=since, max_ledger=max_ledger)
    for event in events:
        reference.arrive(event)
    return NaiveResult(records=reference.records, waiting=reference.waiting(), rejected=reference.rejected)


def _tuple(value: Iterable[Any] | None) -> tuple[Any, ...] | None:
    return None if value is None else tuple(value)


def project(alert: Mapping[str, Any]) -> Projection:
    """The fields both readings of the spec must agree on, from an alert dict."""
    gap = alert.get("gap")
    return (
        alert["rule"],
        alert["status"],
        alert["context_id"],
        alert["node_id"],
        _tuple(alert["orphans"]),
        _tuple(alert.get("previous_orphans")),
        _tuple(alert["missing_constraints"]),
        None if gap is None else (gap[0], gap[1]),
        alert["trigger"]["event_id"],
    )


def naive_alerts(
    events: list[dict], seq_gap_limit: int = 1000, *, since: bool = False
) -> list[Projection]:
    return [project(a) for a in naive_run(events, seq_gap_limit, since=since).alerts]
