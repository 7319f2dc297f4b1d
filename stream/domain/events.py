"""Input events and their provenance, as plain frozen dataclasses.

These are what the engine consumes: already validated (by :mod:`stream.wire` at the
edge) and already normalized — lists are tuples without duplicates, constraints are
reduced to their *keys* (DESIGN.md §3 "Validation boundary"). They round-trip to
JSON-ready records (:meth:`to_record` / :func:`event_from_record`) because an event
that waits in the seq buffer must survive a crash inside a table value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stream.domain.frozen import fast_init


@fast_init
@dataclass(frozen=True, slots=True)
class Source:
    """Where an event came from: the ``trigger`` of the alerts it causes.

    ``topic``/``partition``/``offset`` are ``None`` offline (replay of a file).
    """

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None

    def to_record(self) -> list[Any]:
        return [self.topic, self.partition, self.offset]

    @classmethod
    def from_record(cls, rec: list[Any]) -> Source:
        return cls(rec[0], rec[1], rec[2])


OFFLINE = Source()


@fast_init
@dataclass(frozen=True, slots=True)
class ArtifactEvent:
    """An artifact entered (``admitted``) or left (``evicted``) one storage tier.

    ``tier`` is ``"live"`` (the model's window) or ``"durable"`` (the durable store).
    """

    event_id: str
    context_id: str
    artifact_id: str
    op: str  # "admitted" | "evicted"
    tier: str = "live"
    seq: int | None = None
    occurred_at: str | None = None
    kind: str | None = None

    type = "artifact"

    def to_record(self) -> dict[str, Any]:
        return {
            "type": "artifact",
            "event_id": self.event_id,
            "context_id": self.context_id,
            "artifact_id": self.artifact_id,
            "op": self.op,
            "tier": self.tier,
            "seq": self.seq,
            "occurred_at": self.occurred_at,
            "kind": self.kind,
        }


@fast_init
@dataclass(frozen=True, slots=True)
class CheckpointEvent:
    """A summary node was persisted (new node, or a new version of an existing one).

    Every collection is a sorted tuple without duplicates; constraint collections hold
    keys (:func:`constraint_key`). ``instructions``/``raw_instructions`` are metrics-only.
    ``opaque``: the summary's content cannot be inspected (``unverifiable_checkpoint``).
    """

    event_id: str
    context_id: str
    node_id: str
    level: str  # "leaf" | "section" | "root" (informational for the rules)
    children: tuple[str, ...] = ()
    referents: tuple[str, ...] = ()
    negative_constraints: tuple[str, ...] = ()
    raw_negative_constraints: tuple[str, ...] = ()
    seq: int | None = None
    occurred_at: str | None = None
    parent_id: str | None = None
    cycle: int | None = None
    instructions: tuple[str, ...] = ()
    raw_instructions: tuple[str, ...] = ()
    opaque: bool = False  # DESIGN.md §3 [v2]: content cannot be inspected

    type = "checkpoint"

    def to_record(self) -> dict[str, Any]:
        return {
            "type": "checkpoint",
            "event_id": self.event_id,
            "context_id": self.context_id,
            "node_id": self.node_id,
            "level": self.level,
            "children": list(self.children),
            "referents": list(self.referents),
            "negative_constraints": list(self.negative_constraints),
            "raw_negative_constraints": list(self.raw_negative_constraints),
            "seq": self.seq,
            "occurred_at": self.occurred_at,
            "parent_id": self.parent_id,
            "cycle": self.cycle,
            "instructions": list(self.instructions),
            "raw_instructions": list(self.raw_instructions),
            "opaque": self.opaque,
        }


Event = ArtifactEvent | CheckpointEvent

#: A checkpoint's list fields (tuples here, lists in its records).
LIST_FIELDS = (
    "children",
    "referents",
    "negative_constraints",
    "raw_negative_constraints",
    "instructions",
    "raw_instructions",
)


def event_from_record(rec: dict[str, Any]) -> Event:
    """Inverse of ``to_record`` (records are trusted: they were validated on arrival)."""
    fields = {k: v for k, v in rec.items() if k != "type"}
    if rec["type"] == "artifact":
        return ArtifactEvent(**fields)
    for name in LIST_FIELDS:
        fields[name] = tuple(fields.get(name) or ())
    return CheckpointEvent(**fields)
