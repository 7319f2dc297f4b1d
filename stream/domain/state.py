"""The state the engine folds over, behind a small mapping interface.

The engine never sees a faust table or a dict directly: it sees a :class:`State` whose
attributes are ``MutableMapping``\\ s keyed by tuples that start with the context id.
Offline (replay, tests, benchmarks) those are plain dicts (:class:`DictState`); in the
worker each is a table behind a key codec. Same engine, two storages — so "live equals
replay" holds by construction.

Values are JSON-ready (lists, dicts, ints, strings, bools) **or Python sets**, which a
table stores as sorted lists (faust tables round-trip values through JSON, DESIGN.md
§7.2). The engine reads a set-valued entry as either, may grow a set it read in place,
and always *re-assigns* every value it changed: a table only records what is assigned.

Tables (key -> value):

=============  =======================  ==============================================
attribute      key                      value
=============  =======================  ==============================================
artifacts      (ctx, artifact_id)       sorted list of tiers, e.g. ``["durable"]``;
                                        absent = unreachable
nodes          (ctx, node_id)           kept version + ledger (``stream.domain.engine``)
required       (ctx, node_id)           set of required constraint keys (DESIGN.md §4)
reach          (ctx, node_id)           set of *bad* nodes (open orphaned_referent or
                                        unverifiable_checkpoint) reachable from the node
                                        through ledger children, itself included
dependents     (ctx, artifact_id)       set of node ids whose kept version lists it as
                                        a referent
parents        (ctx, node_id)           set of node ids whose ledger lists it as a
                                        child (the child may not exist yet)
alert_sets     (ctx, node_id)           ``{"o": orphans, "m": missing}`` currently open
                                        (sorted lists); absent = nothing open
seen           (ctx, event_id)          ``1``: the event was applied
seq            (ctx,)                   ``{"next": int, "waiting": sorted seqs}``
waiting        (ctx, seq)               ``{"event": record, "source": record}``
=============  =======================  ==============================================
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Protocol

TABLES = (
    "artifacts",
    "nodes",
    "required",
    "reach",
    "dependents",
    "parents",
    "alert_sets",
    "seen",
    "seq",
    "waiting",
)


class State(Protocol):
    """What the engine needs: one mutable mapping per table in :data:`TABLES`."""

    artifacts: MutableMapping[tuple, Any]
    nodes: MutableMapping[tuple, Any]
    required: MutableMapping[tuple, Any]
    reach: MutableMapping[tuple, Any]
    dependents: MutableMapping[tuple, Any]
    parents: MutableMapping[tuple, Any]
    alert_sets: MutableMapping[tuple, Any]
    seen: MutableMapping[tuple, Any]
    seq: MutableMapping[tuple, Any]
    waiting: MutableMapping[tuple, Any]


class DictState:
    """In-memory state: one dict per table (offline replay, tests, benchmarks)."""

    __slots__ = TABLES

    def __init__(self) -> None:
        for name in TABLES:
            setattr(self, name, {})

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}={len(getattr(self, n))}" for n in TABLES)
        return f"DictState({sizes})"
