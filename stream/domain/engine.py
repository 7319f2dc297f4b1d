"""The decision engine: DESIGN.md §4 as a fold ``(state, event) -> alerts``.

Why it is incremental: a context can track 10^5 artifacts and 10^4 summary nodes, and
every event must be decided in microseconds. So nothing here scans "all nodes" or "all
artifacts": an artifact event touches only its *dependents* (nodes whose kept version
lists it as a referent, from the dependents index), and a checkpoint touches only the
node and its *ancestors* (from the child -> parents index, which also holds children
that have not arrived yet). ``required(n)`` — the transitive union of
``raw_negative_constraints`` below ``n`` — is cached per node and recomputed only for
the affected nodes, strongly-connected component by component (children cycles are
legal and must not loop).

Invariant the incremental updates rest on: for every stored node, ``alert_sets`` holds
exactly the current orphan set ``O(n)`` and missing set ``M(n)``. Each event re-derives
the sets only where they can change and emits an alert only where they did.

Node record (``state.nodes[(ctx, node_id)]``, JSON-ready)::

    {"level": str, "referents": [..], "children": [..], "carried": [..], "raw": [..],
     "req": [..] (cached required keys), "frozen": bool, "versions": int,
     "instructions": [..], "raw_instructions": [..]}

Alert order (DESIGN.md §4): alerts come out in the order their causing events are
applied; within one applied event ``non_idempotent`` first, then by node id,
``orphaned_referent`` before ``negative_constraint_dropped``. The ``sequence_gap``
alert comes out when the gap is declared, between the events drained before and after.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left, insort
from dataclasses import dataclass, field
from typing import Any

from stream.domain.events import (
    ArtifactEvent,
    CheckpointEvent,
    Event,
    Source,
    event_from_record,
)
from stream.domain.state import State

SCHEMA_VERSION = 1

ORPHANED_REFERENT = "orphaned_referent"
NEGATIVE_CONSTRAINT_DROPPED = "negative_constraint_dropped"
NON_IDEMPOTENT = "non_idempotent"
SEQUENCE_GAP = "sequence_gap"

#: rule -> (action, severity). The actions are what remediation workers act on.
RULES: dict[str, tuple[str, str]] = {
    ORPHANED_REFERENT: ("escalate", "critical"),
    NEGATIVE_CONSTRAINT_DROPPED: ("reject_subtree", "critical"),
    NON_IDEMPOTENT: ("freeze", "high"),
    SEQUENCE_GAP: ("resync", "warning"),
}

OPEN = "open"
RESOLVED = "resolved"

# checkpoint verdicts (one per applied checkpoint)
ACCEPTED = "accepted"
REPLACED = "replaced"
IGNORED_FROZEN = "ignored-frozen"
FROZEN = "frozen"


@dataclass(slots=True)
class Output:
    """What one :meth:`Engine.process` call produced, in order.

    ``alerts``: alert dicts (DESIGN.md §3), emission order. ``verdicts``: one dict per
    applied checkpoint. ``applied``: ``(event, source)`` of every event applied
    (drained ones included, each with its own source);
    ``duplicates``: applied-time duplicates ignored; ``dropped``: seq below the next
    expected or already waiting; ``buffered``: 1 if the arriving event now waits.
    """

    alerts: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    applied: list[tuple[Event, Source]] = field(default_factory=list)
    duplicates: int = 0
    dropped: int = 0
    buffered: int = 0


def alert_id(context_id: str, node_id: str | None, rule: str, status: str, sets: Any, trigger_event_id: str) -> str:
    """Deterministic alert id: sha256 over (context, node, rule, status, set, trigger).

    Returns 32 hex chars. Never depends on a clock or a random number (DESIGN.md §3),
    so a crash-replayed alert carries the same id as the original.
    """
    blob = json.dumps(
        [context_id, node_id, rule, status, sets, trigger_event_id],
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def _trigger(event: Event, source: Source) -> dict[str, Any]:
    return {
        "event_id": event.event_id,
        "type": event.type,
        "topic": source.topic,
        "partition": source.partition,
        "offset": source.offset,
    }


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
    gap: list[int] | None = None,
) -> dict[str, Any]:
    """Build one alert dict with every §3 field, in the wire order."""
    action, severity = RULES[rule]
    orphans = orphans or []
    missing = missing or []
    if rule == NON_IDEMPOTENT:
        sets: Any = [orphans, previous_orphans]
    elif rule == NEGATIVE_CONSTRAINT_DROPPED:
        sets = missing
    elif rule == SEQUENCE_GAP:
        sets = gap
    else:
        sets = orphans
    return {
        "schema_version": SCHEMA_VERSION,
        "type": "alert",
        "alert_id": alert_id(event.context_id, node_id, rule, status, sets, event.event_id),
        "status": status,
        "rule": rule,
        "action": action,
        "severity": severity,
        "context_id": event.context_id,
        "node_id": node_id,
        "level": level,
        "orphans": orphans,
        "previous_orphans": previous_orphans,
        "missing_constraints": missing,
        "subtree": subtree,
        "gap": gap,
        "trigger": _trigger(event, source),
        "detected_at": event.occurred_at,
    }


class Engine:
    """Apply input events to a :class:`~stream.domain.state.State`; return alerts.

    Parameters:
        seq_gap_limit: waiting events per context beyond which a ``sequence_gap`` is
            declared (DESIGN.md §4 Arrival.4). Default 1000.
        start_at_first_seq: ``replay --since``: a context's expected seq starts at the
            first seq read for it instead of 0.

    Thread-unsafe, stateless itself: all state lives in the ``State`` passed in.
    """

    __slots__ = ("seq_gap_limit", "start_at_first_seq")

    def __init__(self, seq_gap_limit: int = 1000, *, start_at_first_seq: bool = False) -> None:
        if seq_gap_limit < 0:
            raise ValueError("seq_gap_limit must be >= 0")
        self.seq_gap_limit = seq_gap_limit
        self.start_at_first_seq = start_at_first_seq

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
            out.alerts.append(make_alert(SEQUENCE_GAP, OPEN, event, source, gap=[nxt, lowest - 1]))
            nxt = self._drain(state, ctx, lowest, waiting, out)
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
        if isinstance(event, ArtifactEvent):
            self._apply_artifact(state, event, source, out)
        else:
            self._apply_checkpoint(state, event, source, out)

    def _apply_artifact(self, state: State, ev: ArtifactEvent, source: Source, out: Output) -> None:
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
        # by exactly ``aid`` (invariant: alert_sets holds the current O(n)).
        for node_id in state.dependents.get(akey) or ():
            sets = state.alert_sets.get((ctx, node_id)) or {}
            old = sets.get("o") or []
            if now:
                new = [x for x in old if x != aid]
            else:
                new = list(old)
                if not _contains(new, aid):
                    insort(new, aid)
            if new != old:
                rec = state.nodes[(ctx, node_id)]
                self._transition(state, ctx, node_id, rec, ORPHANED_REFERENT, sets, new, ev, source, out)

    def _apply_checkpoint(self, state: State, ev: CheckpointEvent, source: Source, out: Output) -> None:
        ctx, nid = ev.context_id, ev.node_id
        nkey = (ctx, nid)
        old = state.nodes.get(nkey)
        if old is not None and old["frozen"]:
            out.verdicts.append(self._verdict(state, ev, source, old, IGNORED_FROZEN))
            return

        orphans_after = [r for r in ev.referents if not state.artifacts.get((ctx, r))]
        if old is not None:
            orphans_before = [r for r in old["referents"] if not state.artifacts.get((ctx, r))]
            if orphans_before != orphans_after:
                # Re-summarization changed the orphan set: not idempotent -> freeze the
                # node at its first compaction; the new version is discarded.
                frozen = {**old, "frozen": True}
                state.nodes[nkey] = frozen
                out.alerts.append(
                    make_alert(
                        NON_IDEMPOTENT, OPEN, ev, source,
                        node_id=nid, level=old["level"],
                        orphans=orphans_after, previous_orphans=orphans_before,
                    )
                )
                out.verdicts.append(self._verdict(state, ev, source, frozen, FROZEN))
                return

        rec = {
            "level": ev.level,
            "referents": list(ev.referents),
            "children": list(ev.children),
            "carried": list(ev.negative_constraints),
            "raw": list(ev.raw_negative_constraints),
            "req": old["req"] if old is not None else [],
            "frozen": False,
            "versions": (old["versions"] + 1) if old is not None else 1,
            "instructions": list(ev.instructions),
            "raw_instructions": list(ev.raw_instructions),
        }
        old_refs = old["referents"] if old is not None else []
        old_children = old["children"] if old is not None else []
        _reindex(state.dependents, ctx, nid, old_refs, rec["referents"])
        _reindex(state.parents, ctx, nid, old_children, rec["children"])
        state.nodes[nkey] = rec

        pending: dict[str, tuple[dict, list[str] | None, list[str] | None]] = {}
        # orphaned_referent for the node itself (ancestors' referents did not change).
        sets = state.alert_sets.get(nkey) or {}
        new_o = orphans_after if (sets.get("o") or []) != orphans_after else None
        pending[nid] = (rec, new_o, None)
        # negative_constraint_dropped for the node and every ancestor.
        for node_id, node_rec, missing in self._recompute_required(state, ctx, nid):
            prev = pending.get(node_id)
            pending[node_id] = (node_rec, prev[1] if prev else None, missing)

        for node_id in sorted(pending):
            node_rec, new_o, new_m = pending[node_id]
            nsets = state.alert_sets.get((ctx, node_id)) or {}
            if new_o is not None:
                nsets = self._transition(state, ctx, node_id, node_rec, ORPHANED_REFERENT, nsets, new_o, ev, source, out)
            if new_m is not None and new_m != (nsets.get("m") or []):
                self._transition(state, ctx, node_id, node_rec, NEGATIVE_CONSTRAINT_DROPPED, nsets, new_m, ev, source, out)
        out.verdicts.append(self._verdict(state, ev, source, state.nodes[nkey], REPLACED if old is not None else ACCEPTED))

    # ------------------------------------------------------------------ rules
    def _transition(
        self, state: State, ctx: str, node_id: str, rec: dict, rule: str,
        sets: dict, new: list[str], ev: Event, source: Source, out: Output,
    ) -> dict:
        """Record a changed set and emit open/resolved (alert only on change)."""
        slot = "o" if rule == ORPHANED_REFERENT else "m"
        status = OPEN if new else RESOLVED
        if rule == ORPHANED_REFERENT:
            alert = make_alert(rule, status, ev, source, node_id=node_id, level=rec["level"], orphans=new)
        else:
            alert = make_alert(
                rule, status, ev, source, node_id=node_id, level=rec["level"],
                missing=new, subtree=_subtree(state, ctx, node_id),
            )
        out.alerts.append(alert)
        nsets = {**sets, slot: new}
        if nsets.get("o") or nsets.get("m"):
            state.alert_sets[(ctx, node_id)] = {"o": nsets.get("o") or [], "m": nsets.get("m") or []}
        elif (ctx, node_id) in state.alert_sets:
            del state.alert_sets[(ctx, node_id)]
        return nsets

    def _recompute_required(self, state: State, ctx: str, nid: str) -> list[tuple[str, dict, list[str]]]:
        """Recompute ``required`` for ``nid`` and its ancestors; return their M(n).

        Only nodes from which ``nid`` is reachable can see their ``required`` change;
        every other node's cached ``req`` stays valid. Among the affected nodes,
        strongly-connected components (children cycles) are solved sinks-first
        (Tarjan's order), each component sharing one required set.
        Returns ``[(node_id, record, missing_sorted)]`` for every affected node.
        """
        affected = _ancestors(state, ctx, nid)
        affected.add(nid)
        recs = {n: state.nodes[(ctx, n)] for n in affected}
        req: dict[str, frozenset[str]] = {}
        for comp in _sccs(affected, recs):
            members = set(comp)
            acc: set[str] = set()
            for m in comp:
                acc.update(recs[m]["raw"])
                for c in recs[m]["children"]:
                    if c in members:
                        continue
                    if c in req:
                        acc |= req[c]
                    else:
                        crec = state.nodes.get((ctx, c))
                        if crec is not None:
                            acc.update(crec["req"])
            frozen_acc = frozenset(acc)
            for m in comp:
                req[m] = frozen_acc
        result = []
        for n in affected:
            rec = recs[n]
            new_req = sorted(req[n])
            if new_req != rec["req"]:
                rec = {**rec, "req": new_req}
                state.nodes[(ctx, n)] = rec
            carried = set(rec["carried"])
            result.append((n, rec, [k for k in new_req if k not in carried]))
        return result

    # ------------------------------------------------------------------ verdicts
    def _verdict(self, state: State, ev: CheckpointEvent, source: Source, rec: dict, verdict: str) -> dict[str, Any]:
        sets = state.alert_sets.get((ev.context_id, ev.node_id)) or {}
        open_rules = []
        if rec["frozen"]:
            open_rules.append(NON_IDEMPOTENT)
        if sets.get("o"):
            open_rules.append(ORPHANED_REFERENT)
        if sets.get("m"):
            open_rules.append(NEGATIVE_CONSTRAINT_DROPPED)
        return {
            "schema_version": SCHEMA_VERSION,
            "type": "verdict",
            "context_id": ev.context_id,
            "node_id": ev.node_id,
            "level": rec["level"],
            "verdict": verdict,
            "authoritative": not open_rules,
            "frozen": rec["frozen"],
            "open_rules": open_rules,
            "versions": rec["versions"],
            "trigger": _trigger(ev, source),
            "detected_at": ev.occurred_at,
        }


# ---------------------------------------------------------------------- helpers
def _contains(sorted_list: list, item: Any) -> bool:
    i = bisect_left(sorted_list, item)
    return i < len(sorted_list) and sorted_list[i] == item


def _reindex(index: Any, ctx: str, nid: str, old: list[str], new: list[str]) -> None:
    """Move ``nid`` between the reverse-index entries of ``old`` and ``new`` ids."""
    if old == new:
        return
    old_set, new_set = set(old), set(new)
    for x in old_set - new_set:
        key = (ctx, x)
        lst = [n for n in (index.get(key) or ()) if n != nid]
        if lst:
            index[key] = lst
        else:
            index.pop(key, None)
    for x in new_set - old_set:
        key = (ctx, x)
        lst = list(index.get(key) or ())
        if not _contains(lst, nid):
            insort(lst, nid)
            index[key] = lst


def _ancestors(state: State, ctx: str, nid: str) -> set[str]:
    """Every stored node from which ``nid`` is reachable through children links.

    Includes ``nid`` itself only when it lies on a children cycle.
    """
    seen: set[str] = set()
    stack = [nid]
    while stack:
        for p in state.parents.get((ctx, stack.pop())) or ():
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return seen


def _sccs(nodes: set[str], recs: dict[str, dict]) -> list[list[str]]:
    """Tarjan's SCCs of the subgraph induced by ``nodes``, sinks first (iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(c for c in set(recs[root]["children"]) if c in nodes)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(c for c in set(recs[w]["children"]) if c in nodes))))
                    advanced = True
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                u = work[-1][0]
                low[u] = min(low[u], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                result.append(comp)
    return result


def _subtree(state: State, ctx: str, nid: str) -> list[str]:
    """Sorted ids of stored nodes reachable from ``nid`` via children, ``nid`` excluded."""
    seen: set[str] = set()
    stack = [nid]
    while stack:
        rec = state.nodes.get((ctx, stack.pop()))
        if rec is None:
            continue
        for c in rec["children"]:
            if c not in seen and (ctx, c) in state.nodes:
                seen.add(c)
                stack.append(c)
    seen.discard(nid)
    return sorted(seen)
