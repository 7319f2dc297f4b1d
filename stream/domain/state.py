"""The state the engine folds over, behind a small mapping interface.

The engine never sees a store or a dict directly: it sees a :class:`State` whose
attributes are ``MutableMapping``\\ s keyed by tuples that start with the context id.
Offline (replay, tests, benchmarks) those are plain dicts (:class:`DictState`); in the
worker each is a view of the partition's RocksDB store behind a key codec
(:class:`stream.worker.store.PartitionState`). Same engine, two storages — so "live equals
replay" holds by construction.

More (the module notes): docs/ENGINE.md, section ``stream/domain/state.py``.
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

    __slots__ = ()  # DictState derives from it and keeps its slots

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


class DictState(State):
    """In-memory state: one dict per table (offline replay, tests, benchmarks); the tables'
    types are :class:`State`'s."""

    __slots__ = TABLES

    def __init__(self) -> None:
        tables: list[MutableMapping[tuple[Any, ...], Any]] = [{} for _ in TABLES]
        # named so that mypy sees every table of State assigned (one left out: "cannot instantiate")
        (self.artifacts, self.nodes, self.required, self.reach, self.dependents, self.parents, self.alert_sets,
         self.seen, self.seq, self.waiting, self.stored_children) = tables

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}={len(getattr(self, n))}" for n in TABLES)
        return f"DictState({sizes})"
