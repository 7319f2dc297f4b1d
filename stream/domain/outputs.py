"""What the engine returns: alerts, node statuses and verdicts as frozen values.

Each value's fields are its record's fields in wire order (DESIGN.md §3 *Alert*, §4
*Node status*); lists are tuples. :meth:`to_record` gives the JSON-ready dict and
:func:`encode_record` its deterministic bytes — :mod:`stream.wire` encodes every output
through them, and the engine bounds a record's size in those very bytes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from stream.domain.frozen import fast_init

SCHEMA_VERSION = 1


def encode_record(obj: Any) -> bytes:
    """The deterministic JSON bytes of a JSON-ready record (compact, UTF-8, key order kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _listed(items: tuple[Any, ...] | None) -> list[Any] | None:
    return None if items is None else list(items)


@fast_init
@dataclass(frozen=True, slots=True)
class Trigger:
    """The event whose application caused a record (topic/partition/offset None offline)."""

    event_id: str
    type: str
    topic: str | None
    partition: int | None
    offset: int | None

    def to_record(self) -> dict[str, Any]:
        return {"event_id": self.event_id, "type": self.type, "topic": self.topic,
                "partition": self.partition, "offset": self.offset}


@fast_init
@dataclass(frozen=True, slots=True)
class Alert:
    """One alert (DESIGN.md §3, §4 *Bounded outputs* [v2.1]).

    ``orphans`` / ``missing_constraints`` (and ``previous_orphans``) list at most 1,000
    entries, the first in sorted order. ``set_size`` (the full count), ``truncated``
    (fewer listed than the set holds) and ``set_digest`` (64 hex digits, the set's
    order-independent digest) describe the rule's set: ``orphans`` for
    ``orphaned_referent`` and ``non_idempotent`` (whose ``truncated`` also covers
    ``previous_orphans``), ``missing_constraints`` for ``negative_constraint_dropped``;
    None for the other rules. ``subtree`` (nearest first), ``subtree_size`` (None when
    ``subtree_truncated``) and ``subtree_truncated``: ``negative_constraint_dropped``
    only.
    """

    alert_id: str
    status: str
    rule: str
    action: str
    severity: str
    context_id: str
    node_id: str | None
    level: str | None
    orphans: tuple[str, ...] | None
    previous_orphans: tuple[str, ...] | None
    missing_constraints: tuple[str, ...] | None
    set_size: int | None
    truncated: bool | None
    set_digest: str | None
    subtree: tuple[str, ...] | None
    subtree_size: int | None
    subtree_truncated: bool | None
    gap: tuple[int, int] | None
    trigger: Trigger
    detected_at: str | None

    schema_version: ClassVar[int] = SCHEMA_VERSION
    type: ClassVar[str] = "alert"

    def to_record(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "type": "alert",
            "alert_id": self.alert_id,
            "status": self.status,
            "rule": self.rule,
            "action": self.action,
            "severity": self.severity,
            "context_id": self.context_id,
            "node_id": self.node_id,
            "level": self.level,
            "orphans": _listed(self.orphans),
            "previous_orphans": _listed(self.previous_orphans),
            "missing_constraints": _listed(self.missing_constraints),
            "set_size": self.set_size,
            "truncated": self.truncated,
            "set_digest": self.set_digest,
            "subtree": _listed(self.subtree),
            "subtree_size": self.subtree_size,
            "subtree_truncated": self.subtree_truncated,
            "gap": _listed(self.gap),
            "trigger": self.trigger.to_record(),
            "detected_at": self.detected_at,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One node-status record (DESIGN.md §4 *Node status*). ``degraded_truncated`` is left
    out of the record when None (see :meth:`without_list`)."""

    context_id: str
    node_id: str
    level: str
    authoritative: bool
    frozen: bool
    open_rules: tuple[str, ...]
    degraded_by: tuple[str, ...]
    degraded_count: int
    trigger: Trigger
    detected_at: str | None
    degraded_truncated: bool | None = None

    schema_version: ClassVar[int] = SCHEMA_VERSION
    type: ClassVar[str] = "status"

    def without_list(self) -> NodeStatus:
        """The same status with ``degraded_by`` emptied and ``degraded_truncated: true``
        (``degraded_count`` kept): what is re-sent when the broker rejects the record."""
        return replace(self, degraded_by=(), degraded_truncated=True)

    def to_record(self) -> dict[str, Any]:
        rec = {
            "schema_version": SCHEMA_VERSION,
            "type": "status",
            "context_id": self.context_id,
            "node_id": self.node_id,
            "level": self.level,
            "authoritative": self.authoritative,
            "frozen": self.frozen,
            "open_rules": list(self.open_rules),
            "degraded_by": list(self.degraded_by),
            "degraded_count": self.degraded_count,
        }
        if self.degraded_truncated is not None:
            rec["degraded_truncated"] = self.degraded_truncated
        rec["trigger"] = self.trigger.to_record()
        rec["detected_at"] = self.detected_at
        return rec


@fast_init
@dataclass(frozen=True, slots=True)
class Verdict:
    """One verdict per applied checkpoint (``checkpoint-verdicts``)."""

    context_id: str
    node_id: str
    level: str
    verdict: str
    authoritative: bool
    frozen: bool
    open_rules: tuple[str, ...]
    versions: int
    trigger: Trigger
    detected_at: str | None

    schema_version: ClassVar[int] = SCHEMA_VERSION
    type: ClassVar[str] = "verdict"

    def to_record(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "type": "verdict",
            "context_id": self.context_id,
            "node_id": self.node_id,
            "level": self.level,
            "verdict": self.verdict,
            "authoritative": self.authoritative,
            "frozen": self.frozen,
            "open_rules": list(self.open_rules),
            "versions": self.versions,
            "trigger": self.trigger.to_record(),
            "detected_at": self.detected_at,
        }


@dataclass(frozen=True, slots=True)
class NodeDetail:
    """A stored node's current status and what it declares (the web view, ``explain``)."""

    context_id: str
    node_id: str
    level: str
    authoritative: bool
    frozen: bool
    open_rules: tuple[str, ...]
    degraded_by: tuple[str, ...]
    degraded_count: int
    versions: int
    opaque: bool
    orphans: tuple[str, ...]
    missing_constraints: tuple[str, ...]
    referents: tuple[str, ...]
    children: tuple[str, ...]

    def to_record(self) -> dict[str, Any]:
        return {
            "context_id": self.context_id,
            "node_id": self.node_id,
            "level": self.level,
            "authoritative": self.authoritative,
            "frozen": self.frozen,
            "open_rules": list(self.open_rules),
            "degraded_by": list(self.degraded_by),
            "degraded_count": self.degraded_count,
            "versions": self.versions,
            "opaque": self.opaque,
            "orphans": list(self.orphans),
            "missing_constraints": list(self.missing_constraints),
            "referents": list(self.referents),
            "children": list(self.children),
        }


@dataclass(frozen=True, slots=True)
class Rejection:
    """An event dead-lettered at apply time (DESIGN.md §4 *Ledger bound*): it used up its
    ``seq`` and changed nothing else. ``source`` is the event's own (a drained event's
    differs from the arriving one's)."""

    event: Any  # stream.domain.events.Event
    source: Any  # stream.domain.events.Source
    reason: str


Record = Alert | NodeStatus
