"""The decision engine: DESIGN.md §4 (contract 2.1) as a fold ``(state, event) -> Output``.

Why it is incremental: §4 "Cost per event" bounds an event's work by its (bounded)
output and by the nodes whose state really changes — never by the size of a context,
subtree, set, ledger or list of children. So nothing here scans all nodes, walks a whole
subtree or re-reads a whole set:

More (the module notes): docs/ENGINE.md, section ``stream/domain/engine.py``.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left, insort
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import islice
from typing import Any, NamedTuple

from sortedcontainers import SortedList

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
    Rejection,
    Trigger,
    Verdict,
    encode_record,
)
from stream.domain.state import State

__all__ = ["SCHEMA_VERSION", "Engine", "Output", "encode_record", "node_detail", "open_rules", "set_digest"]

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

#: Most entries a record lists of a set, of ``subtree`` and of ``degraded_by`` (§4 Bounded outputs).
LISTED_LIMIT = 1000
SUBTREE_LIMIT = DEGRADED_LIMIT = SET_LIMIT = LISTED_LIMIT
#: Largest output record (``CG_MAX_OUTPUT_BYTES``), in bytes of :func:`encode_record`.
MAX_OUTPUT_BYTES = 16 << 20
#: Most raw keys, and most children, a node's ledger holds (``CG_MAX_LEDGER``, §4 Ledger bound).
MAX_LEDGER = 10_000
#: Reason prefix of a version dead-lettered by the ledger bound.
LEDGER_FULL = "ledger full"


# --- set digests (DESIGN.md §4 Bounded outputs [v2.1]) -------------------------------------

_MOD = 1 << 256
EMPTY_DIGEST = "0" * 64


@lru_cache(maxsize=1 << 16)
def _key_hash(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest(), "big")


def set_digest(keys: Any) -> str:
    """The order-independent digest of a set of strings, from scratch: 64 hex digits of
    (Σ sha256(UTF-8 key) as a big-endian integer) mod 2^256. The engine keeps it per key."""
    return format(sum(map(_key_hash, keys)) % _MOD, "064x")


def _moved(digest: str, keys: Any, sign: int) -> str:
    """``digest`` with ``keys`` added (sign +1) or removed (-1): O(1) per key."""
    delta = sum(map(_key_hash, keys))
    return format((int(digest, 16) + sign * delta) % _MOD, "064x")


# --- sorted containers as stored ---------------------------------------------------------


def _has(items: Any, x: Any) -> bool:
    """Membership in a sorted container or a sorted list read back from a table."""
    if not items:
        return False
    if type(items) is not list and isinstance(items, SortedList):  # a list skips the ABC check
        return x in items
    i = bisect_left(items, x)
    return i < len(items) and items[i] == x


#: A sorted set up to this size is a plain sorted list (an insertion moves at most this
#: many pointers); past it, a :class:`SortedList` (O(log n) per key).
SMALL_SET = 256


def _sorted_of(keys: Any) -> Any:
    """A new sorted container holding ``keys`` (distinct)."""
    return sorted(keys) if len(keys) <= SMALL_SET else SortedList(keys)


def _insert(items: Any, keys: Any) -> Any:
    """``items`` (a sorted container, or a sorted list read back from a table) with
    ``keys`` (none of them in it) added; changed in place where it can be."""
    if isinstance(items, SortedList):
        if len(keys) == 1:
            items.add(keys[0])
        else:
            items.update(keys)
        return items
    if len(items) + len(keys) > SMALL_SET:
        grown = SortedList(items)
        grown.update(keys)
        return grown
    if not isinstance(items, list):
        items = list(items)
    for k in keys:
        insort(items, k)
    return items


def _remove(items: Any, keys: Any) -> Any:
    """``items`` with ``keys`` (all of them in it) removed, in place where it can be."""
    if not isinstance(items, (list, SortedList)):
        items = list(items)
    for k in keys:
        if isinstance(items, SortedList):
            items.remove(k)
        else:
            del items[bisect_left(items, k)]
    return items


def _as_set(value: Any) -> set[Any]:
    """A set-valued table entry as a set (tables hand back sorted lists)."""
    if value is None:
        return set()
    return value if isinstance(value, set) else set(value)


# --- summaries, open rules, authority ------------------------------------------------------


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
    every status, verdict, summary and view uses. Authoritative: none, and not degraded."""
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


def _survival(ev: CheckpointEvent) -> list[int]:
    raw, raw_ins = set(ev.raw_negative_constraints), set(ev.raw_instructions)
    return [len(raw.intersection(ev.negative_constraints)), len(raw),
            len(raw_ins.intersection(ev.instructions)), len(raw_ins)]


def _bad(rec: dict[str, Any], sets: dict[str, Any] | None) -> bool:
    """Open orphaned_referent or unverifiable_checkpoint: then the node is in its own reach."""
    return rec["opaque"] or bool((sets or {}).get("o"))


def summarize(rec: dict[str, Any], sets: dict[str, Any] | None, reach: Any, node_id: str) -> NodeSummary:
    """The :class:`NodeSummary` of a stored node from its table values (``nodes``,
    ``alert_sets``, ``reach``): O(1) in the size of its sets."""
    orphans = (sets or {}).get("o") or ()
    degraded = _degraded_count(reach, _bad(rec, sets)) > 0
    rules = _rules_of(rec, sets)
    return NodeSummary(rec["level"], not rules and not degraded, degraded, rec["opaque"], rec["frozen"],
                       NEGATIVE_CONSTRAINT_DROPPED in rules, len(rec["referents"]), len(orphans),
                       tuple(rec["surv"]))


def _degraded_count(reach: Any, bad: bool) -> int:
    """``degraded_count``: the bad nodes under a node — its reach, minus itself when it is bad."""
    return len(reach) - bad if reach else 0


def _degraded(reach: Any, node_id: str, bad: bool) -> tuple[tuple[str, ...], int]:
    """``degraded_by`` (the first :data:`DEGRADED_LIMIT` of the sorted reach, the node
    itself left out) and ``degraded_count``: O(limit), never a pass over the set."""
    count = _degraded_count(reach, bad)
    if count <= 0:
        return (), 0
    first = list(reach[:DEGRADED_LIMIT + 1])
    try:  # a bad node is in its own reach, once (a set): removed at C speed
        first.remove(node_id)
    except ValueError:
        pass
    return tuple(first[:DEGRADED_LIMIT]), count


def node_detail(state: State, context_id: str, node_id: str) -> NodeDetail | None:
    """A stored node's current status and declarations, or None for a node never stored
    (the web view, ``explain``)."""
    key = (context_id, node_id)
    rec = state.nodes.get(key)
    if rec is None:
        return None
    sets = state.alert_sets.get(key) or {}
    rules = _rules_of(rec, sets)
    degraded_by, count = _degraded(state.reach.get(key), node_id, _bad(rec, sets))
    return NodeDetail(
        context_id=context_id, node_id=node_id, level=rec["level"],
        authoritative=not rules and not count, frozen=rec["frozen"], open_rules=rules,
        degraded_by=degraded_by, degraded_count=count, versions=rec["versions"], opaque=rec["opaque"],
        orphans=tuple(sets.get("o") or ()), missing_constraints=tuple(sets.get("m") or ()),
        referents=tuple(rec["referents"]), children=tuple(rec["lchildren"]),
    )


# --- output ------------------------------------------------------------------------------


@dataclass(slots=True, init=False)
class Output:
    """What one :meth:`Engine.process` call produced, in order.

    ``alerts``: :class:`~stream.domain.outputs.Alert` values, emission order.
    ``statuses``: :class:`~stream.domain.outputs.NodeStatus` values (§4 Node status).
    ``records``: alerts and statuses interleaved in output order (each event's alerts,
    then its statuses). ``node_changes``: ``(before, after)`` :class:`NodeSummary` of
    every node whose summary changed (before None: a new node) — what the metrics'
    per-level gauges follow. ``verdicts``: one :class:`~stream.domain.outputs.Verdict`
    per applied checkpoint. ``applied``: ``(event, source)`` of every event applied
    (drained ones included, each with its own source). ``rejected``:
    :class:`~stream.domain.outputs.Rejection` of every event dead-lettered at apply
    time (``ledger full``); the caller dead-letters it. ``duplicates``: applied-time
    duplicates ignored; ``dropped``: seq below the next expected or already waiting;
    ``buffered``: 1 if the arriving event now waits.
    """

    alerts: list[Alert]
    statuses: list[NodeStatus]
    records: list[Record]
    node_changes: list[tuple[NodeSummary | None, NodeSummary]]
    verdicts: list[Verdict]
    applied: list[tuple[Event, Source]]
    rejected: list[Rejection]
    duplicates: int = 0
    dropped: int = 0
    buffered: int = 0

    def __init__(self) -> None:  # not the generated one: seven default_factory calls per event
        self.alerts = []
        self.statuses = []
        self.records = []
        self.node_changes = []
        self.verdicts = []
        self.applied = []
        self.rejected = []
        self.duplicates = self.dropped = self.buffered = 0

    def alert(self, alert: Alert) -> None:
        self.alerts.append(alert)
        self.records.append(alert)

    def status(self, status: NodeStatus) -> None:
        self.statuses.append(status)
        self.records.append(status)


def alert_id(context_id: str, node_id: str | None, rule: str, status: str, sets: Any, trigger_event_id: str) -> str:
    """Deterministic alert id: sha256 over (context, node, rule, status, set, trigger).

    Returns 32 hex chars. Never depends on a clock or a random number (DESIGN.md §3), so
    a crash-replayed alert carries the same id as the original. ``sets``: the rule set's
    ``set_digest`` (``[after, before]`` digests for ``non_idempotent``; the gap for
    ``sequence_gap``; None for ``unverifiable_checkpoint``) — never the listed set.
    """
    items = [context_id, node_id, rule, status, sets, trigger_event_id]
    if type(sets) is str and type(node_id) is str:  # the common case, the very bytes of json.dumps
        blob = "[" + ",".join(map(_json_str, items)) + "]"
    else:
        blob = _id_json(items)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


#: ``json.dumps(v, ensure_ascii=False, separators=(",", ":"))``, its encoder built once.
_id_json = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
#: A string's JSON text as ``json.dumps(s, ensure_ascii=False)`` gives it.
_json_str = json.encoder.encode_basestring


def _trigger(event: Event, source: Source) -> Trigger:
    """The event's :class:`Trigger`; an event's alerts, statuses and verdict share one."""
    global _last_trigger
    last_event, last_source, trigger = _last_trigger  # one tuple, read and replaced whole: thread-safe
    if last_event is event and last_source is source and trigger is not None:
        return trigger
    trigger = Trigger(event.event_id, event.type, source.topic, source.partition, source.offset)
    _last_trigger = (event, source, trigger)
    return trigger


#: (event, source, trigger) of the last :func:`_trigger` call (by identity: both are frozen).
_last_trigger: tuple[Any, Any, Trigger | None] = (None, None, None)


def _listed(items: Any) -> tuple[str, ...]:
    return tuple(items[:SET_LIMIT]) if items else ()


def _alert(
    rule: str, status: str, event: Event, source: Source, *, node_id: str | None, level: str | None,
    id_sets: Any, max_bytes: int, orphans: tuple[Any, ...] | None = (), previous: tuple[Any, ...] | None = None,
    missing: tuple[Any, ...] | None = (), set_size: int | None = None, truncated: bool | None = None,
    digest: str | None = None, subtree: tuple[Any, ...] | None = None, subtree_truncated: bool | None = None,
    gap: tuple[int, int] | None = None,
) -> Alert:
    """One :class:`Alert` in the wire field order, cut to ``max_bytes`` if it would exceed it."""
    action, severity = RULES[rule]
    alert = Alert(
        alert_id=alert_id(event.context_id, node_id, rule, status, id_sets, event.event_id),
        status=status, rule=rule, action=action, severity=severity, context_id=event.context_id,
        node_id=node_id, level=level, orphans=orphans, previous_orphans=previous, missing_constraints=missing,
        set_size=set_size, truncated=truncated, set_digest=digest, subtree=subtree,
        subtree_size=None if subtree is None or subtree_truncated else len(subtree),
        subtree_truncated=subtree_truncated, gap=gap, trigger=_trigger(event, source),
        detected_at=event.occurred_at,
    )
    if _may_exceed(alert, max_bytes):
        main = "missing_constraints" if rule == NEGATIVE_CONSTRAINT_DROPPED else "orphans"
        for name in (main, "subtree", "previous_orphans"):
            alert = _fit(alert, name, max_bytes)
    return alert


# --- bounded outputs: the byte limit (DESIGN.md §4) ---------------------------------------

#: Fixed part of any record: ids up to 1,024 characters, field names, numbers (generous).
_RECORD_OVERHEAD = 64 << 10
_LISTS = {Alert: ("orphans", "previous_orphans", "missing_constraints", "subtree"), NodeStatus: ("degraded_by",)}
#: list field -> the fields that say it was cut
_CUT_MARK: dict[str, dict[str, Any]] = {"orphans": {"truncated": True}, "missing_constraints": {"truncated": True},
             "previous_orphans": {"truncated": True},
             "subtree": {"subtree_truncated": True, "subtree_size": None},
             "degraded_by": {"degraded_truncated": True}}


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


def _fit(record: Any, name: str, max_bytes: int) -> Any:
    """``record`` with list field ``name`` cut to its first entries that keep it within
    ``max_bytes``, marked as cut (``truncated``, ``subtree_truncated``, ``degraded_truncated``)."""
    items = getattr(record, name)
    if not items or len(encode_record(record.to_record())) <= max_bytes:
        return record
    cut = replace(record, **{name: ()}, **_CUT_MARK[name])
    budget = max_bytes - len(encode_record(cut.to_record()))
    kept = 0
    for item in items:
        cost = len(encode_record(item)) + (1 if kept else 0)
        if cost > budget:
            break
        budget -= cost
        kept += 1
    return replace(cut, **{name: items[:kept]})


# --- the engine ----------------------------------------------------------------------------


#: ``_touch``'s ``rec`` when the caller has not read the node.
_UNREAD: Any = object()


class _Step:
    """Scratch of one applied event: what changed, and the statuses before.

    ``o`` / ``m``: nodes whose orphan / missing set changed. ``u``: node -> whether its
    kept version is now opaque, where that flipped. ``sets``: nodes whose ``alert_sets``
    entry was changed (re-assigned, or deleted when empty, after the alerts).
    ``before``: node -> its :class:`NodeSummary` before the event changed it (None: new).
    ``deg``: node -> net change of ``degraded_by`` (element -> +1/-1).
    """

    __slots__ = ("ctx", "o", "m", "u", "sets", "before", "deg")

    def __init__(self, ctx: str) -> None:
        self.ctx = ctx
        self.o: set[str] = set()
        self.m: set[str] = set()
        self.u: dict[str, bool] = {}
        self.sets: dict[str, dict[str, Any]] = {}
        self.before: dict[str, NodeSummary | None] = {}
        self.deg: dict[str, dict[str, int]] = {}


class Engine:
    """Apply input events to a :class:`~stream.domain.state.State`; return what changed.

    Parameters:
        seq_gap_limit: waiting events per context beyond which a ``sequence_gap`` is
            declared (DESIGN.md §4 Arrival.4). Default 1000.
        start_at_first_seq: ``replay --since``: a context's expected seq starts at the
            first seq read for it instead of 0.
        max_output_bytes: largest output record (``CG_MAX_OUTPUT_BYTES``); lists are cut
            to fit (§4 Bounded outputs).
        max_ledger: most raw keys, and most children, of a node's ledger
            (``CG_MAX_LEDGER``); a version that would pass either is rejected (§4 Ledger bound).

    Thread-unsafe, stateless itself: all state lives in the ``State`` passed in.
    """

    __slots__ = ("seq_gap_limit", "start_at_first_seq", "max_output_bytes", "max_ledger")

    def __init__(
        self, seq_gap_limit: int = 1000, *, start_at_first_seq: bool = False,
        max_output_bytes: int = MAX_OUTPUT_BYTES, max_ledger: int = MAX_LEDGER,
    ) -> None:
        if seq_gap_limit < 0:
            raise ValueError("seq_gap_limit must be >= 0")
        if max_ledger < 0:
            raise ValueError("max_ledger must be >= 0")
        self.seq_gap_limit = seq_gap_limit
        self.start_at_first_seq = start_at_first_seq
        self.max_output_bytes = max_output_bytes
        self.max_ledger = max_ledger

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
        if s < nxt or _has(waiting, s):
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
            gap = (nxt, lowest - 1)
            out.alert(_alert(SEQUENCE_GAP, OPEN, event, source, node_id=None, level=None, id_sets=list(gap),
                             max_bytes=self.max_output_bytes, gap=gap))
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
        old = None  # a checkpoint's stored node, read once for the ledger check and the apply
        if isinstance(event, CheckpointEvent):
            old = state.nodes.get((event.context_id, event.node_id))
            reason = self._over_ledger(state, event, old)
            if reason is not None:  # dead letter: its seq is used up, nothing else changes
                out.rejected.append(Rejection(event, source, reason))
                return
        state.seen[seen_key] = 1
        out.applied.append((event, source))
        step = _Step(event.context_id)
        if isinstance(event, ArtifactEvent):
            self._apply_artifact(state, event, step)
            self._emit(state, event, source, step, out)
            return
        applied = self._apply_checkpoint(state, event, source, step, out, old)
        if applied is not None:
            verdict, rec = applied
            self._emit(state, event, source, step, out)
            out.verdicts.append(self._verdict(state, event, source, rec, verdict))

    def _over_ledger(self, state: State, ev: CheckpointEvent, old: dict[str, Any] | None) -> str | None:
        """Why the version would take its node's ledger (``old``: the stored node) past
        ``max_ledger`` (None: it would not, or it enters no ledger: a frozen node, a
        freezing re-summarization)."""
        limit = self.max_ledger
        if old is None:
            raw, children = len(ev.raw_negative_constraints), len(ev.children)
        else:
            if old["frozen"]:
                return None
            lraw, lchildren = old["lraw"], old["lchildren"]
            raw = len(lraw) + sum(1 for k in ev.raw_negative_constraints if not _has(lraw, k))
            children = len(lchildren) + sum(1 for c in ev.children if not _has(lchildren, c))
        if raw <= limit and children <= limit:
            return None
        if old is not None and self._orphans_change(state, ev):
            return None
        what, n = ("raw constraint keys", raw) if raw > limit else ("children", children)
        return (f"{LEDGER_FULL}: the ledger of node {ev.node_id[:80]!r} would hold {n} {what}, "
                f"limit is {limit} (CG_MAX_LEDGER)")

    @staticmethod
    def _orphans(state: State, ev: CheckpointEvent) -> list[str]:
        artifacts, ctx = state.artifacts, ev.context_id
        return [r for r in ev.referents if not artifacts.get((ctx, r))]

    def _orphans_change(self, state: State, ev: CheckpointEvent, after: list[str] | None = None) -> bool:
        """Whether the version's orphan set (``after``, when already computed) differs from the node's."""
        before = (state.alert_sets.get((ev.context_id, ev.node_id)) or {}).get("o") or ()
        if after is None:
            after = self._orphans(state, ev)
        return len(before) != len(after) or any(a != b for a, b in zip(before, after))

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
        # Reachability of ``aid`` flipped: only its dependents' orphan sets change, by
        # exactly ``aid``; a node whose set becomes (non-)empty changes its badness.
        for node_id in sorted(state.dependents.get(akey) or ()):
            entry = (state.alert_sets.get((ctx, node_id)) or {})
            orphans = entry.get("o")
            if _has(orphans, aid) != now:  # admitted and not an orphan, or evicted and one already
                continue
            self._touch(state, step, node_id)
            entry = self._entry(state, step, node_id)
            had = bool(entry["o"])
            if now:
                self._discard(entry, "o", (aid,))
            else:
                self._add(entry, "o", (aid,))
            step.o.add(node_id)
            if bool(entry["o"]) != had and not state.nodes[(ctx, node_id)]["opaque"]:
                self._set_bad(state, step, node_id, not now)

    def _apply_checkpoint(
        self, state: State, ev: CheckpointEvent, source: Source, step: _Step, out: Output,
        old: dict[str, Any] | None,
    ) -> tuple[str, dict[str, Any]] | None:
        """Store / replace / freeze the node (``old``: as stored); returns the verdict and the
        node as now stored, None for an ignored frozen node (whose verdict is already out:
        nothing changed)."""
        ctx, nid = ev.context_id, ev.node_id
        nkey = (ctx, nid)
        nodes = state.nodes
        if old is not None and old["frozen"]:
            out.verdicts.append(self._verdict(state, ev, source, old, IGNORED_FROZEN))
            return None

        after = self._orphans(state, ev)
        self._touch(state, step, nid, old)
        if old is not None and self._orphans_change(state, ev, after):
            # Re-summarization changed the orphan set: not idempotent -> freeze the node at
            # its first compaction; the new version is discarded (it enters no ledger).
            out.alert(self._non_idempotent(state, ev, source, old, after))
            frozen = nodes[nkey] = {**old, "frozen": True}
            return FROZEN, frozen

        old_lraw = old["lraw"] if old is not None else ()
        old_lchildren = old["lchildren"] if old is not None else ()
        new_raw = [k for k in ev.raw_negative_constraints if not _has(old_lraw, k)]
        new_children = [c for c in ev.children if not _has(old_lchildren, c)]
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
            "surv": _survival(ev),
            "lraw": self._grown(old_lraw, new_raw),
            "lchildren": self._grown(old_lchildren, new_children),
        }
        nodes[nkey] = rec
        _reindex(state.dependents, ctx, nid, old["referents"] if old is not None else [], rec["referents"])
        for c in new_children:
            pkey = (ctx, c)
            ps = _as_set(state.parents.get(pkey))
            ps.add(nid)
            state.parents[pkey] = ps
        stored = [c for c in new_children if c != nid and (ctx, c) in nodes]
        self._link(state, ctx, nid, stored, new=old is None)

        # orphaned_referent: a new node's set; a replacement keeps the same set.
        if old is None and after:
            self._add(self._entry(state, step, nid), "o", after)
            step.o.add(nid)
        self._required(state, step, ev, old, rec, new_raw, stored)

        # degradation: the node's badness and its new children's bad nodes.
        bad_now = bool(after) or ev.opaque
        reach_t = state.reach
        if old is None:
            reach: set[str] = {nid} if bad_now else set()
            for c in stored:
                reach.update(reach_t.get((ctx, c)) or ())
            if reach:
                reach_t[nkey] = _sorted_of(reach)
                _net(step, nid, reach, +1)
                for p in list(state.parents.get(nkey) or ()):
                    if p != nid:
                        self._grow_reach(state, step, p, reach)
            if ev.opaque:
                step.u[nid] = True
        else:
            if old["opaque"] != ev.opaque:
                step.u[nid] = ev.opaque
                if not after:  # badness = orphans or opaque; the orphans did not change
                    self._set_bad(state, step, nid, bad_now)
            for c in stored:
                creach = reach_t.get((ctx, c))
                if creach:
                    self._grow_reach(state, step, nid, creach)
        return (ACCEPTED if old is None else REPLACED), rec

    @staticmethod
    def _grown(ledger: Any, new: list[str]) -> Any:
        if not new:
            return ledger
        return _insert(ledger, new)

    @staticmethod
    def _link(state: State, ctx: str, nid: str, stored: list[str], *, new: bool) -> None:
        """Keep ``stored_children`` (the subtree walk's adjacency) current: the node's new
        stored children, and — when it is new — the node under every stored parent that
        listed it before it arrived. Plain sorted lists (the walk iterates them at C speed);
        an insertion moves at most ``max_ledger`` pointers."""
        table = state.stored_children
        nkey = (ctx, nid)
        if stored:
            kids = table.get(nkey)
            if kids is None:
                kids = list(stored)  # already sorted
            else:
                for c in stored:
                    insort(kids, c)
            table[nkey] = kids
        if new:
            for p in state.parents.get(nkey) or ():
                if p != nid:
                    pkey = (ctx, p)
                    kids = table.get(pkey)
                    if kids is None:
                        kids = []
                    insort(kids, nid)
                    table[pkey] = kids

    def _required(self, state: State, step: _Step, ev: CheckpointEvent, old: dict[str, Any] | None,
                  rec: dict[str, Any], new_raw: list[str], stored: list[str]) -> None:
        """``required`` and ``M`` of the node, then every ancestor that gains keys."""
        ctx, nid = ev.context_id, ev.node_id
        nkey = (ctx, nid)
        required = state.required
        carried = rec["carried"]
        if old is None:
            req = set(rec["lraw"])
            for c in stored:
                req.update(required.get((ctx, c)) or ())
            if req:
                required[nkey] = req
                missing = [k for k in req if not _has(carried, k)]
                if missing:
                    self._add(self._entry(state, step, nid), "m", missing)
                    step.m.add(nid)
            grown: Any = req
        else:
            req = _as_set(required.get(nkey))
            gained = set(new_raw)
            for c in stored:
                gained.update(required.get((ctx, c)) or ())
            grown = [k for k in gained if k not in req]
            if grown:
                req.update(grown)
                required[nkey] = req
            if old["carried"] != carried or grown:
                entry = self._entry(state, step, nid)
                changed = self._discard(entry, "m", [k for k in carried if _has(entry["m"], k)])
                joining = {k for k in old["carried"] if k in req and not _has(carried, k)}
                joining.update(k for k in grown if not _has(carried, k))
                changed += self._add(entry, "m", [k for k in joining if not _has(entry["m"], k)])
                if changed:
                    step.m.add(nid)
        if grown:
            for p in list(state.parents.get(nkey) or ()):
                if p != nid:
                    self._grow_required(state, step, p, grown)

    # ------------------------------------------------------------------ sets
    def _entry(self, state: State, step: _Step, node_id: str) -> dict[str, Any]:
        """The node's ``alert_sets`` entry to change (created empty), once per event."""
        entry = step.sets.get(node_id)
        if entry is not None:
            return entry
        key = (step.ctx, node_id)
        stored = state.alert_sets.get(key) or {}
        entry = {"o": stored.get("o") or (), "od": stored.get("od") or EMPTY_DIGEST,
                 "m": stored.get("m") or (), "md": stored.get("md") or EMPTY_DIGEST}
        state.alert_sets[key] = entry
        step.sets[node_id] = entry
        return entry

    @staticmethod
    def _add(entry: dict[str, Any], which: str, keys: Any) -> int:
        """Add ``keys`` (none already in the set) to set ``which`` ("o"/"m"); returns how many.
        The set becomes a :class:`SortedList` when first changed (an unused one stays ``()``)."""
        if not keys:
            return 0
        entry[which] = _insert(entry[which], keys)
        entry[which + "d"] = _moved(entry[which + "d"], keys, +1)
        return len(keys)

    @staticmethod
    def _discard(entry: dict[str, Any], which: str, keys: Any) -> int:
        """Remove ``keys`` (all in the set) from set ``which``; returns how many."""
        if not keys:
            return 0
        entry[which] = _remove(entry[which], keys)
        entry[which + "d"] = _moved(entry[which + "d"], keys, -1)
        return len(keys)

    # ------------------------------------------------------------------ propagation
    def _touch(self, state: State, step: _Step, node_id: str, rec: Any = _UNREAD) -> None:
        """Capture a node's status before the event changes it (once per event); ``rec``:
        the stored node when the caller has just read it."""
        if node_id in step.before:
            return
        key = (step.ctx, node_id)
        if rec is _UNREAD:
            rec = state.nodes.get(key)
        if rec is None:
            step.before[node_id] = None
            return
        step.before[node_id] = summarize(rec, state.alert_sets.get(key), state.reach.get(key), node_id)

    def _grow_required(self, state: State, step: _Step, start: str, delta: Any) -> None:
        """Add keys to ``required(start)`` and above (ledger parents; stops where known);
        every node whose M(n) gains keys (those it does not carry) gets them."""
        ctx = step.ctx
        nodes, required, parents = state.nodes, state.required, state.parents
        work = [(start, delta)]
        while work:
            nid, d = work.pop()
            key = (ctx, nid)
            current = _as_set(required.get(key))
            new = [x for x in d if x not in current]
            if not new:
                continue
            carried = nodes[key]["carried"]
            keys = [k for k in new if not _has(carried, k)]
            if keys:
                self._touch(state, step, nid)
                if self._add(self._entry(state, step, nid), "m", keys):
                    step.m.add(nid)
            current.update(new)
            required[key] = current
            for p in parents.get(key) or ():
                if p != nid:
                    work.append((p, new))

    def _grow_reach(self, state: State, step: _Step, start: str, delta: Any) -> None:
        """Add bad nodes to ``reach(start)`` and above (``degraded_by`` of those nodes grows)."""
        ctx = step.ctx
        reach_t, parents = state.reach, state.parents
        work = [(start, delta)]
        while work:
            nid, d = work.pop()
            key = (ctx, nid)
            current = reach_t.get(key)
            new = [x for x in d if not _has(current, x)]
            if not new:
                continue
            self._touch(state, step, nid)  # before the set changes (it may be the stored one)
            _net(step, nid, new, +1)
            reach_t[key] = _insert(current or (), new)
            for p in parents.get(key) or ():
                if p != nid:
                    work.append((p, new))

    def _set_bad(self, state: State, step: _Step, node_id: str, bad: bool) -> None:
        """``node_id`` became bad (add it to the reach of itself and every ancestor) or
        stopped being bad (remove it from exactly the nodes that hold it)."""
        if bad:
            self._grow_reach(state, step, node_id, (node_id,))
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
            if not _has(reach, node_id):
                continue
            self._touch(state, step, nid)  # before the set changes (it may be the stored one)
            reach = _remove(reach, (node_id,))
            if reach:
                reach_t[key] = reach
            else:
                del reach_t[key]
            _net(step, nid, (node_id,), -1)
            work.extend(parents.get(key) or ())

    # ------------------------------------------------------------------ emission
    def _subtree(self, state: State, ctx: str, nid: str) -> tuple[tuple[str, ...], bool]:
        """The nearest :data:`SUBTREE_LIMIT` stored nodes under ``nid`` (breadth-first over
        ``stored_children``, each node's in sorted order, each node once, ``nid`` itself
        left out) and whether stored nodes were left unvisited. Expands at most
        ``SUBTREE_LIMIT + 1`` nodes, reading each child list no further than it needs."""
        get = state.stored_children.get
        limit = SUBTREE_LIMIT
        kids = get((ctx, nid))
        if not kids:
            return (), False
        # the node's own children: none is the node, none seen yet
        listed = list(kids[:limit + 1])
        if len(listed) > limit:
            return tuple(listed[:limit]), True
        seen = {nid, *listed}
        for current in listed:  # ``listed`` is the queue; it grows while it is walked
            kids = get((ctx, current))
            if not kids:
                continue
            if len(kids) == 1:  # a chain's step (a rolling summary): no generator, no slices
                child = kids[0]
                if child not in seen:
                    if len(listed) >= limit:
                        return tuple(listed), True
                    listed.append(child)
                    seen.add(child)
                continue
            room = limit - len(listed)
            new = list(islice((c for c in kids if c not in seen), room + 1))
            if len(new) > room:
                listed.extend(new[:room])
                return tuple(listed), True
            listed.extend(new)
            seen.update(new)
        return tuple(listed), False

    def _set_alert(self, state: State, rule: str, ev: Event, source: Source, nid: str, level: str,
                   entry: dict[str, Any] | None) -> Alert:
        """The alert of a change of the node's orphan or missing set (§4 Bounded outputs)."""
        which = "o" if rule == ORPHANED_REFERENT else "m"
        keys = entry[which] if entry else ()
        digest = entry[which + "d"] if entry else EMPTY_DIGEST
        listed = _listed(keys)
        subtree, cut = (self._subtree(state, ev.context_id, nid) if rule == NEGATIVE_CONSTRAINT_DROPPED
                        else (None, None))
        return _alert(
            rule, OPEN if keys else RESOLVED, ev, source, node_id=nid, level=level, id_sets=digest,
            max_bytes=self.max_output_bytes, orphans=listed if which == "o" else (),
            missing=listed if which == "m" else (), set_size=len(keys), truncated=len(keys) > len(listed),
            digest=digest, subtree=subtree, subtree_truncated=cut,
        )

    def _non_idempotent(self, state: State, ev: CheckpointEvent, source: Source, old: dict[str, Any],
                        after: list[str]) -> Alert:
        before = (state.alert_sets.get((ev.context_id, ev.node_id)) or {}).get("o") or ()
        listed, previous = _listed(after), _listed(before)
        digest = set_digest(after)
        return _alert(
            NON_IDEMPOTENT, OPEN, ev, source, node_id=ev.node_id, level=old["level"],
            id_sets=[digest, set_digest(before)], max_bytes=self.max_output_bytes, orphans=listed,
            previous=previous, set_size=len(after),
            truncated=len(after) > len(listed) or len(before) > len(previous), digest=digest,
        )

    def _emit(self, state: State, ev: Event, source: Source, step: _Step, out: Output) -> None:
        """Alerts of the event's changed sets (by node id, rule order), then statuses."""
        if not step.before:  # no node was touched: nothing changed (every change touches first)
            return
        ctx = step.ctx
        for nid in sorted({*step.o, *step.m, *step.u}):
            key = (ctx, nid)
            level = state.nodes[key]["level"]
            entry = step.sets.get(nid)
            if nid in step.o:
                out.alert(self._set_alert(state, ORPHANED_REFERENT, ev, source, nid, level, entry))
            if nid in step.m:
                out.alert(self._set_alert(state, NEGATIVE_CONSTRAINT_DROPPED, ev, source, nid, level, entry))
            if nid in step.u:
                out.alert(_alert(
                    UNVERIFIABLE_CHECKPOINT, OPEN if step.u[nid] else RESOLVED, ev, source, node_id=nid,
                    level=level, id_sets=None, max_bytes=self.max_output_bytes, orphans=None, missing=None,
                ))
        for nid, entry in step.sets.items():  # write each changed entry once; empty: none
            key = (ctx, nid)
            if entry["o"] or entry["m"]:
                state.alert_sets[key] = entry
            else:
                state.alert_sets.pop(key, None)

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
            deg = step.deg.get(nid)
            deg_changed = deg is not None and any(deg.values())
            if (before is not None and before.frozen == summary.frozen and not deg_changed
                    and (before.missing, before.unreachable > 0, before.opaque)
                    == (summary.missing, summary.unreachable > 0, summary.opaque)):
                continue  # open rules, frozen and degraded_by unchanged: no status record
            rules = _rules_of(rec, sets)
            degraded_by, count = _degraded(reach, nid, _bad(rec, sets))
            status = NodeStatus(
                context_id=ctx, node_id=nid, level=rec["level"], authoritative=not rules and not count,
                frozen=rec["frozen"], open_rules=rules, degraded_by=degraded_by, degraded_count=count,
                trigger=trigger, detected_at=ev.occurred_at,
            )
            if _may_exceed(status, self.max_output_bytes):
                status = _fit(status, "degraded_by", self.max_output_bytes)
            out.status(status)

    # ------------------------------------------------------------------ verdicts
    def _verdict(self, state: State, ev: CheckpointEvent, source: Source, rec: dict[str, Any], verdict: str) -> Verdict:
        key = (ev.context_id, ev.node_id)
        sets = state.alert_sets.get(key)
        rules = _rules_of(rec, sets)
        degraded = _degraded_count(state.reach.get(key), _bad(rec, sets))
        return Verdict(
            context_id=ev.context_id, node_id=ev.node_id, level=rec["level"], verdict=verdict,
            authoritative=not rules and not degraded, frozen=rec["frozen"], open_rules=rules,
            versions=rec["versions"], trigger=_trigger(ev, source), detected_at=ev.occurred_at,
        )


# ---------------------------------------------------------------------- helpers
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
