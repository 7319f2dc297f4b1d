"""The decision engine: DESIGN.md §4 (contract v2) as a fold ``(state, event) -> Output``.

Why it is incremental: a context can track 10^5 artifacts and 10^4 summary nodes, and
DESIGN.md §4 "Cost per event" bounds an event's work by its output and by the nodes
whose state really changes. Nothing here scans "all nodes", a subtree or a parent's
children list on the way in:

* the **ledger** (union of every applied version's raw constraint keys and children)
  only grows, so ``required(n)`` and ``reach(n)`` only grow along new links: a change is
  pushed up the child -> parents index as a *delta* and stops at the first node that
  already has it (cycles terminate the same way);
* ``reach(n)`` is the set of *bad* nodes (open ``orphaned_referent`` or
  ``unverifiable_checkpoint``) reachable from ``n``, ``n`` included; a node that stops
  being bad is removed from exactly the ancestors that hold it. ``degraded_by(n)`` is
  ``reach(n) - {n}``;
* an artifact event touches only its dependents (the nodes whose kept version lists it).

Only an alert's ``subtree`` is computed by walking (the alert is the output it is
proportional to). Invariants: ``alert_sets`` holds each stored node's current orphan
set ``O(n)`` and missing set ``M(n)``; ``required``/``reach`` are exact for stored nodes.

Node record (``state.nodes[(ctx, node_id)]``)::

    {"level", "referents", "carried", "raw", "opaque", "frozen", "versions",
     "instructions", "raw_instructions",   # the kept version
     "lraw", "lchildren"}                   # the ledger (sorted lists)

Order within one applied event (§4): ``non_idempotent`` first, then by node id
``orphaned_referent``, ``negative_constraint_dropped``, ``unverifiable_checkpoint``;
then the status records of the nodes whose status changed, by node id.
"""

from __future__ import annotations

import hashlib
import heapq
import json
from bisect import bisect_left, insort
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from stream.domain.events import (
    ArtifactEvent,
    CheckpointEvent,
    Event,
    Source,
    event_from_record,
)
from stream.domain.outputs import (
    SCHEMA_VERSION,
    Alert,
    NodeDetail,
    NodeStatus,
    Record,
    Trigger,
    Verdict,
    encode_record,
)
from stream.domain.state import State

ORPHANED_REFERENT = "orphaned_referent"
NEGATIVE_CONSTRAINT_DROPPED = "negative_constraint_dropped"
NON_IDEMPOTENT = "non_idempotent"
SEQUENCE_GAP = "sequence_gap"
UNVERIFIABLE_CHECKPOINT = "unverifiable_checkpoint"

#: rule -> (action, severity). The actions are what remediation workers act on.
RULES: dict[str, tuple[str, str]] = {
    ORPHANED_REFERENT: ("escalate", "critical"),
    NEGATIVE_CONSTRAINT_DROPPED: ("reject_subtree", "critical"),
    NON_IDEMPOTENT: ("freeze", "high"),
    SEQUENCE_GAP: ("resync", "warning"),
    UNVERIFIABLE_CHECKPOINT: ("escalate", "warning"),
}

OPEN = "open"
RESOLVED = "resolved"

# checkpoint verdicts (one per applied checkpoint)
ACCEPTED = "accepted"
REPLACED = "replaced"
IGNORED_FROZEN = "ignored-frozen"
FROZEN = "frozen"

#: Most ids an alert's ``subtree`` / a status record's ``degraded_by`` lists (§4 Bounded outputs).
SUBTREE_LIMIT = 1000
DEGRADED_LIMIT = 1000
#: Largest output record (``CG_MAX_OUTPUT_BYTES``), in bytes of :func:`encode_record`.
MAX_OUTPUT_BYTES = 16 << 20


class NodeSummary(NamedTuple):
    """What the per-level gauges count of one node (its kept version and open sets).

    ``declared``: its referents; ``unreachable``: its orphans; ``survival``: ``(carried ∩
    raw, raw)`` prohibitions then instructions of the kept version.
    """

    level: str
    authoritative: bool
    degraded: bool
    opaque: bool
    frozen: bool
    missing: bool
    declared: int
    unreachable: int
    survival: tuple[int, int, int, int]


def open_rules(*, frozen: bool, opaque: bool, orphans: bool, missing: bool) -> tuple[str, ...]:
    """Rules with an open alert on a node, sorted (§4 Node status) — the one derivation
    every status, verdict and summary uses. ``authoritative`` = none and not degraded."""
    rules = []
    if missing:
        rules.append(NEGATIVE_CONSTRAINT_DROPPED)
    if frozen:
        rules.append(NON_IDEMPOTENT)
    if orphans:
        rules.append(ORPHANED_REFERENT)
    if opaque:
        rules.append(UNVERIFIABLE_CHECKPOINT)
    return tuple(rules)


def _rules_of(rec: dict[str, Any], sets: dict[str, Any] | None) -> tuple[str, ...]:
    sets = sets or {}
    return open_rules(frozen=rec["frozen"], opaque=rec["opaque"], orphans=bool(sets.get("o")),
                      missing=bool(sets.get("m")))


def summarize(rec: dict[str, Any], sets: dict[str, Any] | None, reach: Any, node_id: str) -> NodeSummary:
    """The :class:`NodeSummary` of a stored node from its three table values."""
    orphans = (sets or {}).get("o") or ()
    degraded = _degraded_count(reach, node_id) > 0
    rules = _rules_of(rec, sets)
    raw, raw_ins = set(rec["raw"]), set(rec["raw_instructions"])
    survival = (len(raw.intersection(rec["carried"])), len(raw),
                len(raw_ins.intersection(rec["instructions"])), len(raw_ins))
    return NodeSummary(rec["level"], not rules and not degraded, degraded, rec["opaque"], rec["frozen"],
                       NEGATIVE_CONSTRAINT_DROPPED in rules, len(rec["referents"]), len(orphans), survival)


@dataclass(slots=True)
class Output:
    """What one :meth:`Engine.process` call produced, in order.

    ``alerts``: :class:`~stream.domain.outputs.Alert` values, emission order.
    ``statuses``: :class:`~stream.domain.outputs.NodeStatus` values (§4 Node status).
    ``records``: alerts and statuses interleaved in output order (each event's alerts,
    then its statuses). ``node_changes``: ``(before, after)`` :class:`NodeSummary` of
    every node whose summary changed (before None: a new node) — what the metrics'
    per-level gauges follow. ``verdicts``: one :class:`~stream.domain.outputs.Verdict`
    per applied checkpoint. ``applied``: ``(event, source)`` of every event applied
    (drained ones included, each with its own source); ``duplicates``: applied-time
    duplicates ignored; ``dropped``: seq below the next expected or already waiting;
    ``buffered``: 1 if the arriving event now waits.
    """

    alerts: list[Alert] = field(default_factory=list)
    statuses: list[NodeStatus] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    node_changes: list[tuple[NodeSummary | None, NodeSummary]] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)
    applied: list[tuple[Event, Source]] = field(default_factory=list)
    duplicates: int = 0
    dropped: int = 0
    buffered: int = 0

    def alert(self, alert: Alert) -> None:
        self.alerts.append(alert)
        self.records.append(alert)

    def status(self, status: NodeStatus) -> None:
        self.statuses.append(status)
        self.records.append(status)


def alert_id(context_id: str, node_id: str | None, rule: str, status: str, sets: Any, trigger_event_id: str) -> str:
    """Deterministic alert id: sha256 over (context, node, rule, status, set, trigger).

    Returns 32 hex chars. Never depends on a clock or a random number (DESIGN.md §3),
    so a crash-replayed alert carries the same id as the original. ``sets`` is always
    the *full* set, also when the alert carries a truncated one.
    """
    blob = json.dumps(
        [context_id, node_id, rule, status, sets, trigger_event_id],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def _trigger(event: Event, source: Source) -> Trigger:
    return Trigger(event.event_id, event.type, source.topic, source.partition, source.offset)


def make_alert(
    rule: str,
    status: str,
    event: Event,
    source: Source,
    *,
    node_id: str | None = None,
    level: str | None = None,
    orphans: list[str] | None = None,
    previous_orphans: list[str] | None = None,
    missing: list[str] | None = None,
    subtree: list[str] | None = None,
    subtree_size: int | None = None,
    gap: list[int] | None = None,
    max_bytes: int = MAX_OUTPUT_BYTES,
) -> Alert:
    """Build one :class:`Alert` with every §3 field within ``max_bytes``.

    ``subtree`` is cut to its first :data:`SUBTREE_LIMIT` ids (``subtree_size`` = the
    full count). If the alert is still over ``max_bytes`` the rule's set keeps its first
    entries that fit (``truncated: true``, ``set_size``); ``alert_id`` is computed first,
    from the full set.
    """
    action, severity = RULES[rule]
    if rule == UNVERIFIABLE_CHECKPOINT:
        orphans = missing = None
        sets: Any = None
    else:
        orphans = orphans or []
        missing = missing or []
        if rule == NON_IDEMPOTENT:
            sets = [orphans, previous_orphans]
        elif rule == NEGATIVE_CONSTRAINT_DROPPED:
            sets = missing
        elif rule == SEQUENCE_GAP:
            sets = gap
        else:
            sets = orphans
    if subtree is not None:
        if subtree_size is None:
            subtree_size = len(subtree)
        subtree = subtree[:SUBTREE_LIMIT]
    alert = Alert(
        alert_id=alert_id(event.context_id, node_id, rule, status, sets, event.event_id),
        status=status,
        rule=rule,
        action=action,
        severity=severity,
        context_id=event.context_id,
        node_id=node_id,
        level=level,
        orphans=_tuple(orphans),
        previous_orphans=_tuple(previous_orphans),
        missing_constraints=_tuple(missing),
        subtree=_tuple(subtree),
        subtree_size=subtree_size,
        gap=_tuple(gap),
        trigger=_trigger(event, source),
        detected_at=event.occurred_at,
    )
    field_name = "missing_constraints" if rule == NEGATIVE_CONSTRAINT_DROPPED else "orphans"
    if _may_exceed(alert, max_bytes):
        alert = _fit(alert, field_name, max_bytes, mark=True)
        for extra in ("subtree", "previous_orphans"):
            alert = _fit(alert, extra, max_bytes, mark=False)
    return alert


def _tuple(items: Any) -> tuple | None:
    return None if items is None else tuple(items)


# --- bounded outputs (DESIGN.md §4 [v2]) -------------------------------------------------

#: Fixed part of any record: ids up to 1,024 characters, field names, numbers (generous).
_RECORD_OVERHEAD = 64 << 10
_LISTS = {Alert: ("orphans", "previous_orphans", "missing_constraints", "subtree"), NodeStatus: ("degraded_by",)}


def _list_bound(items: tuple[str, ...] | None) -> int:
    # a code point is at most 6 bytes of JSON (a \u00XX escape), plus quotes and a comma
    return 0 if not items else 6 * sum(map(len, items)) + 3 * len(items)


def _may_exceed(record: Record, max_bytes: int) -> bool:
    """Cheap upper bound of the record's size (exact check only when it may not fit)."""
    bound = _RECORD_OVERHEAD
    for name in _LISTS[type(record)]:
        bound += _list_bound(getattr(record, name))
    bound += 6 * (len(record.context_id) + len(record.node_id or ""))
    trig = record.trigger
    bound += 6 * (len(trig.event_id) + len(trig.topic or ""))
    return bound > max_bytes


def _fit(record: Any, name: str, max_bytes: int, *, mark: bool) -> Any:
    """``record`` with list field ``name`` cut to its first entries that keep it within
    ``max_bytes``. ``mark``: also set ``truncated: true`` and ``set_size`` (the full count)."""
    items = getattr(record, name)
    if not items:
        return record
    if len(encode_record(record.to_record())) <= max_bytes:
        return record
    cut = replace(record, **{name: ()})
    if mark:
        cut = replace(cut, truncated=True, set_size=len(items))
    budget = max_bytes - len(encode_record(cut.to_record()))
    kept = 0
    for item in items:
        cost = len(encode_record(item)) + (1 if kept else 0)
        if cost > budget:
            break
        budget -= cost
        kept += 1
    return replace(cut, **{name: items[:kept]})


# --- node status ---------------------------------------------------------------------------


def _degraded_count(reach: Any, node_id: str) -> int:
    """``degraded_count``: the bad nodes under ``node_id`` (its reach minus itself)."""
    return len(reach) - (1 if node_id in reach else 0) if reach else 0


def _degraded(reach: Any, node_id: str) -> tuple[tuple[str, ...], int]:
    """``degraded_by`` (first :data:`DEGRADED_LIMIT`, sorted) and ``degraded_count``."""
    count = _degraded_count(reach, node_id)
    if count <= 0:
        return (), 0
    if len(reach) <= DEGRADED_LIMIT + 1:
        first = sorted(reach)
    else:
        first = heapq.nsmallest(DEGRADED_LIMIT + 1, reach)
    return tuple(x for x in first if x != node_id)[:DEGRADED_LIMIT], count


def node_detail(state: State, context_id: str, node_id: str) -> NodeDetail | None:
    """A stored node's current status and declarations, or None for a node never stored
    (the web view, ``explain``)."""
    key = (context_id, node_id)
    rec = state.nodes.get(key)
    if rec is None:
        return None
    sets = state.alert_sets.get(key) or {}
    rules = _rules_of(rec, sets)
    degraded_by, count = _degraded(state.reach.get(key), node_id)
    return NodeDetail(
        context_id=context_id, node_id=node_id, level=rec["level"],
        authoritative=not rules and not count, frozen=rec["frozen"], open_rules=rules,
        degraded_by=degraded_by, degraded_count=count, versions=rec["versions"], opaque=rec["opaque"],
        orphans=tuple(sets.get("o") or ()), missing_constraints=tuple(sets.get("m") or ()),
        referents=tuple(rec["referents"]), children=tuple(rec["lchildren"]),
    )



def _as_set(value: Any) -> set:
    """A set-valued table entry as a set (tables hand back sorted lists)."""
    if value is None:
        return set()
    return value if isinstance(value, set) else set(value)


class _Step:
    """Scratch of one applied event: what may have changed, and the statuses before.

    ``o`` / ``m``: node -> its new orphan / missing set, for nodes whose set may have
    changed (compared with ``alert_sets`` at emission). ``u``: node -> whether its kept
    version is now opaque, for nodes where that flipped. ``before``: node -> its
    :class:`NodeSummary` before the event changed it (None: the node is new). ``deg``: node -> net change of ``degraded_by`` (element -> +1/-1).
    """

    __slots__ = ("ctx", "o", "m", "u", "before", "deg")

    def __init__(self, ctx: str) -> None:
        self.ctx = ctx
        self.o: dict[str, list[str]] = {}
        self.m: dict[str, set[str]] = {}
        self.u: dict[str, bool] = {}
        self.before: dict[str, tuple | None] = {}
        self.deg: dict[str, dict[str, int]] = {}


class Engine:
    """Apply input events to a :class:`~stream.domain.state.State`; return what changed.

    Parameters:
        seq_gap_limit: waiting events per context beyond which a ``sequence_gap`` is
            declared (DESIGN.md §4 Arrival.4). Default 1000.
        start_at_first_seq: ``replay --since``: a context's expected seq starts at the
            first seq read for it instead of 0.
        max_output_bytes: largest output record (``CG_MAX_OUTPUT_BYTES``); sets are cut
            to fit (§4 Bounded outputs).

    Thread-unsafe, stateless itself: all state lives in the ``State`` passed in.
    """

    __slots__ = ("seq_gap_limit", "start_at_first_seq", "max_output_bytes")

    def __init__(
        self, seq_gap_limit: int = 1000, *, start_at_first_seq: bool = False,
        max_output_bytes: int = MAX_OUTPUT_BYTES,
    ) -> None:
        if seq_gap_limit < 0:
            raise ValueError("seq_gap_limit must be >= 0")
        self.seq_gap_limit = seq_gap_limit
        self.start_at_first_seq = start_at_first_seq
        self.max_output_bytes = max_output_bytes

    # ------------------------------------------------------------------ arrival
    def process(self, state: State, event: Event, source: Source) -> Output:
        """Handle one arriving (already validated) event: seq ordering, then apply.

        Returns the :class:`Output` of everything applied because of this arrival
        (the event itself and any waiting events it released), in order.
        """
        out = Output()
        if event.seq is None:
            self._apply(state, event, source, out)
            return out

        ctx = event.context_id
        skey = (ctx,)
        seqst = state.seq.get(skey)
        if seqst is None:
            nxt = event.seq if self.start_at_first_seq else 0
            waiting: list[int] = []
        else:
            nxt = seqst["next"]
            waiting = list(seqst["waiting"])
        s = event.seq
        if s < nxt or (waiting and _contains(waiting, s)):
            out.dropped += 1
            return out

        if s == nxt:
            self._apply(state, event, source, out)
            nxt += 1
        else:
            insort(waiting, s)
            state.waiting[(ctx, s)] = {"event": event.to_record(), "source": source.to_record()}
            out.buffered = 1
        nxt = self._drain(state, ctx, nxt, waiting, out)
        while len(waiting) > self.seq_gap_limit:
            lowest = waiting[0]
            out.alert(make_alert(SEQUENCE_GAP, OPEN, event, source, gap=[nxt, lowest - 1]))
            nxt = self._drain(state, ctx, lowest, waiting, out)
        if seqst is None or nxt != seqst["next"] or waiting != seqst["waiting"]:
            state.seq[skey] = {"next": nxt, "waiting": waiting}
        return out

    def _drain(self, state: State, ctx: str, nxt: int, waiting: list[int], out: Output) -> int:
        """Apply every waiting event whose seq is next; return the new next seq."""
        while waiting and waiting[0] == nxt:
            del waiting[0]
            rec = state.waiting.pop((ctx, nxt))
            self._apply(state, event_from_record(rec["event"]), Source.from_record(rec["source"]), out)
            nxt += 1
        return nxt

    # ------------------------------------------------------------------ applying
    def _apply(self, state: State, event: Event, source: Source, out: Output) -> None:
        seen_key = (event.context_id, event.event_id)
        if seen_key in state.seen:
            out.duplicates += 1
            return
        state.seen[seen_key] = 1
        out.applied.append((event, source))
        step = _Step(event.context_id)
        if isinstance(event, ArtifactEvent):
            self._apply_artifact(state, event, step)
            self._emit(state, event, source, step, out)
            return
        verdict = self._apply_checkpoint(state, event, source, step, out)
        if verdict is not None:
            self._emit(state, event, source, step, out)
            rec = state.nodes[(event.context_id, event.node_id)]
            out.verdicts.append(self._verdict(state, event, source, rec, verdict))

    def _apply_artifact(self, state: State, ev: ArtifactEvent, step: _Step) -> None:
        ctx, aid = ev.context_id, ev.artifact_id
        akey = (ctx, aid)
        tiers: list[str] = state.artifacts.get(akey) or []
        was = bool(tiers)
        if ev.op == "admitted":
            if ev.tier in tiers:
                return
            tiers = sorted([*tiers, ev.tier])
            state.artifacts[akey] = tiers
        else:
            if ev.tier not in tiers:
                return
            tiers = [t for t in tiers if t != ev.tier]
            if tiers:
                state.artifacts[akey] = tiers
            else:
                del state.artifacts[akey]
        now = bool(tiers)
        if was == now:
            return
        # Reachability of ``aid`` flipped: only its dependents' orphan sets change,
        # by exactly ``aid``; a node whose set becomes (non-)empty changes its badness.
        for node_id in sorted(state.dependents.get(akey) or ()):
            sets = state.alert_sets.get((ctx, node_id)) or {}
            old = sets.get("o") or []
            if now:
                new = [x for x in old if x != aid]
            else:
                new = list(old)
                if not _contains(new, aid):
                    insort(new, aid)
            if new == old:
                continue
            self._touch(state, step, node_id)
            step.o[node_id] = new
            if bool(new) != bool(old):
                rec = state.nodes[(ctx, node_id)]
                if not rec["opaque"]:
                    self._set_bad(state, step, node_id, bool(new))

    def _apply_checkpoint(
        self, state: State, ev: CheckpointEvent, source: Source, step: _Step, out: Output,
    ) -> str | None:
        """Store / replace / freeze; returns the verdict, None for an ignored frozen node
        (whose verdict is already out: nothing changed)."""
        ctx, nid = ev.context_id, ev.node_id
        nkey = (ctx, nid)
        old = state.nodes.get(nkey)
        if old is not None and old["frozen"]:
            out.verdicts.append(self._verdict(state, ev, source, old, IGNORED_FROZEN))
            return None

        artifacts = state.artifacts
        orphans_after = [r for r in ev.referents if not artifacts.get((ctx, r))]
        self._touch(state, step, nid)
        if old is not None:
            orphans_before = [r for r in old["referents"] if not artifacts.get((ctx, r))]
            if orphans_before != orphans_after:
                # Re-summarization changed the orphan set: not idempotent -> freeze the
                # node at its first compaction; the new version is discarded (and does
                # not enter the ledger).
                frozen = {**old, "frozen": True}
                state.nodes[nkey] = frozen
                out.alert(
                    make_alert(
                        NON_IDEMPOTENT, OPEN, ev, source,
                        node_id=nid, level=old["level"],
                        orphans=orphans_after, previous_orphans=orphans_before,
                        max_bytes=self.max_output_bytes,
                    )
                )
                return FROZEN

        old_lraw = old["lraw"] if old is not None else []
        old_lchildren = old["lchildren"] if old is not None else []
        new_raw = [k for k in ev.raw_negative_constraints if not _contains(old_lraw, k)]
        new_children = [c for c in ev.children if not _contains(old_lchildren, c)]
        rec = {
            "level": ev.level,
            "referents": list(ev.referents),
            "carried": list(ev.negative_constraints),
            "raw": list(ev.raw_negative_constraints),
            "opaque": ev.opaque,
            "frozen": False,
            "versions": (old["versions"] + 1) if old is not None else 1,
            "instructions": list(ev.instructions),
            "raw_instructions": list(ev.raw_instructions),
            "lraw": sorted([*old_lraw, *new_raw]) if new_raw else old_lraw,
            "lchildren": sorted([*old_lchildren, *new_children]) if new_children else old_lchildren,
        }
        state.nodes[nkey] = rec
        _reindex(state.dependents, ctx, nid, old["referents"] if old is not None else [], rec["referents"])
        for c in new_children:
            pkey = (ctx, c)
            ps = _as_set(state.parents.get(pkey))
            ps.add(nid)
            state.parents[pkey] = ps

        # orphaned_referent: a new node's set; a replacement keeps the same set.
        if old is None and orphans_after:
            step.o[nid] = orphans_after

        nodes = state.nodes
        required = state.required
        # required + missing: the node's own ...
        if old is None:
            req: set[str] = set(rec["lraw"])
            for c in new_children:
                if c != nid and (ctx, c) in nodes:
                    creq = required.get((ctx, c))
                    if creq:
                        req.update(creq)
            if req:
                required[nkey] = req
            carried = ev.negative_constraints
            missing = {k for k in req if not _contains(carried, k)} if carried else set(req)
            if missing:
                step.m[nid] = missing
            grown = set(req)
        else:
            req = _as_set(required.get(nkey))
            grown = set(new_raw)
            for c in new_children:
                if c != nid and (ctx, c) in nodes:
                    creq = required.get((ctx, c))
                    if creq:
                        grown.update(creq)
            grown.difference_update(req)
            if grown:
                req |= grown
                required[nkey] = req
            if old["carried"] != rec["carried"] or grown:
                sets = state.alert_sets.get(nkey) or {}
                carried = rec["carried"]
                m = set(sets.get("m") or ())
                for k in old["carried"]:  # no longer carried, still required
                    if k in req:
                        m.add(k)
                m.update(grown)
                m = {k for k in m if not _contains(carried, k)}
                step.m[nid] = m
        # ... then every ancestor that gains keys (ledger parents; stops where known).
        if grown:
            for p in list(state.parents.get(nkey) or ()):
                if p != nid:
                    self._grow_required(state, step, p, grown)

        # degradation: the node's badness and its new children's bad nodes.
        bad_now = bool(orphans_after) or ev.opaque
        if old is None:
            reach: set[str] = {nid} if bad_now else set()
            for c in new_children:
                if c != nid and (ctx, c) in nodes:
                    creach = state.reach.get((ctx, c))
                    if creach:
                        reach.update(creach)
            if reach:
                state.reach[nkey] = reach
                _net(step, nid, reach, +1)
                delta = set(reach)
                for p in list(state.parents.get(nkey) or ()):
                    if p != nid:
                        self._grow_reach(state, step, p, delta)
            if ev.opaque:
                step.u[nid] = True
        else:
            bad_before = bool(orphans_before) or old["opaque"]
            if bad_before != bad_now:
                self._set_bad(state, step, nid, bad_now)
            for c in new_children:
                if c != nid and (ctx, c) in nodes:
                    creach = state.reach.get((ctx, c))
                    if creach:
                        self._grow_reach(state, step, nid, set(creach))
            if old["opaque"] != ev.opaque:
                step.u[nid] = ev.opaque
        return ACCEPTED if old is None else REPLACED

    # ------------------------------------------------------------------ propagation
    def _touch(self, state: State, step: _Step, node_id: str) -> None:
        """Capture a node's status before the event changes it (once per event)."""
        if node_id in step.before:
            return
        key = (step.ctx, node_id)
        rec = state.nodes.get(key)
        if rec is None:
            step.before[node_id] = None
            return
        step.before[node_id] = summarize(rec, state.alert_sets.get(key), state.reach.get(key), node_id)

    @staticmethod
    def _grow(state: State, ctx: str, table: Any, start: str, delta: set, on_new: Any) -> None:
        """Add ``delta`` to the set of ``start`` in ``table`` (``required`` or ``reach``) and
        push what is new up the ledger parents; stops where nothing is new (cycles too).
        ``on_new(node, new)`` runs before the node's set changes (it may be the stored one)."""
        parents = state.parents
        work = [(start, delta)]
        while work:
            nid, d = work.pop()
            key = (ctx, nid)
            current = _as_set(table.get(key))
            new = {x for x in d if x not in current} if len(d) < len(current) else d - current
            if not new:
                continue
            on_new(nid, new)
            current |= new
            table[key] = current
            for p in parents.get(key) or ():
                if p != nid:
                    work.append((p, new))

    def _grow_required(self, state: State, step: _Step, start: str, delta: set[str]) -> None:
        """Add keys to ``required(start)`` and above; every node whose M(n) gains keys
        (those it does not carry) gets its new missing set in ``step.m``."""
        nodes, alert_sets = state.nodes, state.alert_sets

        def gained(nid: str, new: set[str]) -> None:
            carried = nodes[(step.ctx, nid)]["carried"]
            keys = [k for k in new if not _contains(carried, k)]
            if keys:
                m = step.m.get(nid)
                if m is None:
                    self._touch(state, step, nid)
                    m = step.m[nid] = set((alert_sets.get((step.ctx, nid)) or {}).get("m") or ())
                m.update(keys)

        self._grow(state, step.ctx, state.required, start, delta, gained)

    def _grow_reach(self, state: State, step: _Step, start: str, delta: set[str]) -> None:
        """Add bad nodes to ``reach(start)`` and above (``degraded_by`` of those nodes grows)."""

        def degraded(nid: str, new: set[str]) -> None:
            self._touch(state, step, nid)
            _net(step, nid, new, +1)

        self._grow(state, step.ctx, state.reach, start, delta, degraded)

    def _set_bad(self, state: State, step: _Step, node_id: str, bad: bool) -> None:
        """``node_id`` became bad (add it to the reach of itself and every ancestor) or
        stopped being bad (remove it from exactly the nodes that hold it)."""
        if bad:
            self._grow_reach(state, step, node_id, {node_id})
            return
        ctx = step.ctx
        reach_t, parents = state.reach, state.parents
        work = [node_id]
        done: set[str] = set()
        while work:
            nid = work.pop()
            if nid in done:
                continue
            done.add(nid)
            key = (ctx, nid)
            reach = reach_t.get(key)
            if not reach or node_id not in reach:
                continue
            self._touch(state, step, nid)  # before the set changes (it may be the stored one)
            reach = _as_set(reach)
            reach.discard(node_id)
            if reach:
                reach_t[key] = reach
            else:
                del reach_t[key]
            _net(step, nid, (node_id,), -1)
            work.extend(parents.get(key) or ())

    # ------------------------------------------------------------------ emission
    def _emit(self, state: State, ev: Event, source: Source, step: _Step, out: Output) -> None:
        """Alerts of the event's changed sets (by node id, rule order), then statuses."""
        ctx = step.ctx
        max_bytes = self.max_output_bytes
        for nid in sorted({*step.o, *step.m, *step.u}):
            key = (ctx, nid)
            rec = state.nodes[key]
            sets = state.alert_sets.get(key) or {}
            o_old = sets.get("o") or []
            m_old = sets.get("m") or []
            o_new = step.o.get(nid, o_old)
            m_new = sorted(step.m[nid]) if nid in step.m else m_old
            if o_new != o_old:
                status = OPEN if o_new else RESOLVED
                out.alert(make_alert(
                    ORPHANED_REFERENT, status, ev, source, node_id=nid, level=rec["level"],
                    orphans=o_new, max_bytes=max_bytes,
                ))
            if m_new != m_old:
                status = OPEN if m_new else RESOLVED
                subtree = _subtree(state, ctx, nid)
                out.alert(make_alert(
                    NEGATIVE_CONSTRAINT_DROPPED, status, ev, source, node_id=nid, level=rec["level"],
                    missing=m_new, subtree=subtree, subtree_size=len(subtree), max_bytes=max_bytes,
                ))
            if nid in step.u:
                out.alert(make_alert(
                    UNVERIFIABLE_CHECKPOINT, OPEN if step.u[nid] else RESOLVED, ev, source,
                    node_id=nid, level=rec["level"], max_bytes=max_bytes,
                ))
            if o_new != o_old or m_new != m_old:
                if o_new or m_new:
                    state.alert_sets[key] = {"o": o_new, "m": m_new}
                elif key in state.alert_sets:
                    del state.alert_sets[key]

        trigger = _trigger(ev, source)
        for nid in sorted(step.before):
            key = (ctx, nid)
            rec = state.nodes.get(key)
            if rec is None:  # never stored (cannot happen for a touched node; be safe)
                continue
            before = step.before[nid]
            sets = state.alert_sets.get(key)
            reach = state.reach.get(key)
            summary = summarize(rec, sets, reach, nid)
            if before != summary:
                out.node_changes.append((before, summary))
            rules = _rules_of(rec, sets)
            deg = step.deg.get(nid)
            deg_changed = bool(deg) and any(deg.values())
            if (before is not None and before.frozen == summary.frozen and not deg_changed
                    and (before.missing, before.unreachable > 0, before.opaque)
                    == (summary.missing, summary.unreachable > 0, summary.opaque)):
                continue  # open rules, frozen and degraded_by unchanged: no status record
            degraded_by, count = _degraded(reach, nid)
            status = NodeStatus(
                context_id=ctx, node_id=nid, level=rec["level"], authoritative=not rules and not count,
                frozen=rec["frozen"], open_rules=rules, degraded_by=degraded_by, degraded_count=count,
                trigger=trigger, detected_at=ev.occurred_at,
            )
            if _may_exceed(status, max_bytes):
                status = _fit(status, "degraded_by", max_bytes, mark=False)
            out.status(status)

    # ------------------------------------------------------------------ verdicts
    def _verdict(self, state: State, ev: CheckpointEvent, source: Source, rec: dict, verdict: str) -> Verdict:
        key = (ev.context_id, ev.node_id)
        rules = _rules_of(rec, state.alert_sets.get(key))
        degraded = _degraded_count(state.reach.get(key), ev.node_id)
        return Verdict(
            context_id=ev.context_id, node_id=ev.node_id, level=rec["level"], verdict=verdict,
            authoritative=not rules and not degraded, frozen=rec["frozen"], open_rules=rules,
            versions=rec["versions"], trigger=_trigger(ev, source), detected_at=ev.occurred_at,
        )


# ---------------------------------------------------------------------- helpers
def _contains(sorted_list: Any, item: Any) -> bool:
    i = bisect_left(sorted_list, item)
    return i < len(sorted_list) and sorted_list[i] == item


def _net(step: _Step, node_id: str, items: Any, sign: int) -> None:
    """Record a net change of ``degraded_by(node_id)`` (the node itself does not count)."""
    d = step.deg.get(node_id)
    if d is None:
        d = step.deg[node_id] = {}
    for x in items:
        if x != node_id:
            d[x] = d.get(x, 0) + sign


def _reindex(index: Any, ctx: str, nid: str, old: list[str], new: list[str]) -> None:
    """Move ``nid`` between the (set-valued) reverse-index entries of ``old`` and ``new`` ids."""
    if old == new:
        return
    old_set, new_set = set(old), set(new)
    for x in old_set - new_set:
        key = (ctx, x)
        s = _as_set(index.get(key))
        s.discard(nid)
        if s:
            index[key] = s
        else:
            index.pop(key, None)
    for x in new_set - old_set:
        key = (ctx, x)
        s = _as_set(index.get(key))
        if nid not in s:
            s.add(nid)
            index[key] = s


def _subtree(state: State, ctx: str, nid: str) -> list[str]:
    """Sorted ids of stored nodes reachable from ``nid`` through ledger children, ``nid``
    excluded (the walk is the alert's own output: ``subtree`` + ``subtree_size``)."""
    nodes = state.nodes
    seen: set[str] = set()
    stack = [nid]
    while stack:
        rec = nodes.get((ctx, stack.pop()))
        if rec is None:
            continue
        for c in rec["lchildren"]:
            if c not in seen and (ctx, c) in nodes:
                seen.add(c)
                stack.append(c)
    seen.discard(nid)
    return sorted(seen)
