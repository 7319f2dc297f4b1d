"""The state the engine folds over, behind a small mapping interface.

The engine never sees a faust table or a dict directly: it sees a :class:`State` whose
attributes are ``MutableMapping``\\ s keyed by tuples that start with the context id.
Offline (replay, tests, benchmarks) those are plain dicts (:class:`DictState`); in the
worker each is a table behind a key codec. Same engine, two storages — so "live equals
replay" holds by construction.

Values are JSON-ready (lists, dicts, ints, strings, bools) **or** Python sets and
``sortedcontainers.SortedList``\\ s (a sorted set past 256 keys), which a table stores as
sorted lists (:func:`plain`).
The engine reads a set- or sorted-valued entry as either, changes a container it read in
place, and always *re-assigns* every value it changed: a table only records what is
assigned. A sorted list read back from storage becomes a container once, when changed.

Tables (key -> value):

===============  =======================  ============================================
attribute        key                      value
===============  =======================  ============================================
artifacts        (ctx, artifact_id)       sorted list of tiers, e.g. ``["durable"]``;
                                          absent = unreachable
nodes            (ctx, node_id)           kept version (``level``, ``referents``,
                                          ``carried``, ``raw``, ``opaque``, ``frozen``,
                                          ``versions``, ``instructions``,
                                          ``raw_instructions``, ``surv``: the survival
                                          counts) + ledger (``lraw``, ``lchildren``:
                                          sorted)
required         (ctx, node_id)           set of required constraint keys (DESIGN.md §4)
reach            (ctx, node_id)           sorted *bad* nodes (open orphaned_referent or
                                          unverifiable_checkpoint) reachable from the
                                          node through ledger children, itself included
dependents       (ctx, artifact_id)       set of node ids whose kept version lists it as
                                          a referent
parents          (ctx, node_id)           set of node ids whose ledger lists it as a
                                          child (the child may not exist yet)
alert_sets       (ctx, node_id)           the open sets: ``{"o": orphans, "od": their
                                          set_digest, "m": missing keys, "md": digest}``
                                          (sorted); absent = nothing open
seen             (ctx, event_id)          ``1``: the event was applied
seq              (ctx,)                   ``{"next": int, "waiting": sorted seqs}``
waiting          (ctx, seq)               ``{"event": record, "source": record}``
stored_children  (ctx, node_id)           sorted ids of the *stored* nodes its ledger
                                          lists as children, itself excluded (the
                                          ``subtree`` walk)
===============  =======================  ============================================
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any, Protocol

from sortedcontainers import SortedList

#: Table order is the storage layout (RocksDB key prefixes): new tables go at the end.
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
    "stored_children",
)


class State(Protocol):
    """What the engine needs: one mutable mapping per table in :data:`TABLES`."""

    artifacts: MutableMapping[tuple[Any, ...], Any]
    nodes: MutableMapping[tuple[Any, ...], Any]
    required: MutableMapping[tuple[Any, ...], Any]
    reach: MutableMapping[tuple[Any, ...], Any]
    dependents: MutableMapping[tuple[Any, ...], Any]
    parents: MutableMapping[tuple[Any, ...], Any]
    alert_sets: MutableMapping[tuple[Any, ...], Any]
    seen: MutableMapping[tuple[Any, ...], Any]
    seq: MutableMapping[tuple[Any, ...], Any]
    waiting: MutableMapping[tuple[Any, ...], Any]
    stored_children: MutableMapping[tuple[Any, ...], Any]


def jsonable(value: Any) -> Any:
    """The JSON form of a container the engine stores (a ``default`` hook for JSON
    encoders): a set or a ``SortedList`` -> its sorted list. TypeError for anything else."""
    if isinstance(value, SortedList):
        return list(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON-ready")


def plain(value: Any) -> Any:
    """``value`` with every container :func:`jsonable` knows replaced, at any depth."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (SortedList, set, frozenset)):
        return jsonable(value)
    return value


class DictState:
    """In-memory state: one dict per table (offline replay, tests, benchmarks)."""

    __slots__ = TABLES
    artifacts: MutableMapping[tuple[Any, ...], Any]
    nodes: MutableMapping[tuple[Any, ...], Any]
    required: MutableMapping[tuple[Any, ...], Any]
    reach: MutableMapping[tuple[Any, ...], Any]
    dependents: MutableMapping[tuple[Any, ...], Any]
    parents: MutableMapping[tuple[Any, ...], Any]
    alert_sets: MutableMapping[tuple[Any, ...], Any]
    seen: MutableMapping[tuple[Any, ...], Any]
    seq: MutableMapping[tuple[Any, ...], Any]
    waiting: MutableMapping[tuple[Any, ...], Any]
    stored_children: MutableMapping[tuple[Any, ...], Any]

    def __init__(self) -> None:
        for name in TABLES:
            setattr(self, name, {})

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}={len(getattr(self, n))}" for n in TABLES)
        return f"DictState({sizes})"
