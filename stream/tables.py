"""The engine's :class:`~stream.domain.state.State` on faust tables.

Two adapters:

* :class:`TableMap` presents one faust table as a ``MutableMapping[tuple, value]``:
  the engine's tuple keys become JSON-array strings ``'["ctx","id"]'`` (unambiguous
  for any id, and starting with the context id as DESIGN.md §2 requires).
* :class:`OverlayState` buffers the engine's writes for one event (or one batch) and
  applies them to the tables only on :meth:`OverlayState.flush` — which the agent calls
  *after* the broker acknowledged the event's alerts (DESIGN.md §7.6). A crash in
  between therefore re-processes the event and re-emits the same alerts (same
  ``alert_id``); it can never record an event whose alerts were lost.

Why a journal: one event's state is several keys in several tables, each with its own
changelog topic, and a crash (``kill -9``) can persist some of them and not others — a
``seq`` record naming a waiting event whose ``waiting`` record never arrived wedged a
context for good. So before the keys are written, the whole write set goes to the
``journal`` table as *one* record (``journal[[ctx]]``) and the agent waits until the
broker acknowledged it; the first time a process touches a context (after start or a
rebalance) it re-sends that context's last journal record, waits for its ack and
re-applies it (:meth:`TableState.rewrite_journal`, :meth:`TableState.apply_journal`).
Re-applying is idempotent (it sets keys to recorded values), so a write set is either
fully applied or re-applied whole.

Why a :class:`ChangelogWriter`: the worker writes the store directly and sends the
changelog records itself, a batch at a time (``stream.agents._send_acked``), instead
of faust's one-record-at-a-time path; the records are byte-identical to faust's (same
key and value serializers), so faust's recovery and standbys read them as their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from typing import Any, NamedTuple

from faust.streams import current_event

from stream.domain.state import TABLES

_MISSING = object()
_DELETED = object()


def encode_key(key: tuple) -> str:
    """``("ctx", "a1")`` -> ``'["ctx","a1"]'`` (compact JSON, UTF-8 kept)."""
    return json.dumps(list(key), ensure_ascii=False, separators=(",", ":"))


def store_key(key: tuple) -> bytes:
    """The RocksDB / changelog key bytes faust uses for ``encode_key(key)`` (its ``json``
    key serializer: the string as a JSON string, ASCII-escaped)."""
    return json.dumps(encode_key(key)).encode()


def _sorted_set(value: Any) -> Any:
    """JSON for the engine's set-valued entries: a sorted list (deterministic bytes)."""
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"{type(value).__name__} is not JSON-ready")


def store_value(value: Any) -> bytes:
    """The value bytes faust's ``json`` value serializer writes (compact, ASCII-escaped);
    a set (the engine's set-valued entries) is written as a sorted list."""
    return json.dumps(value, separators=(",", ":"), default=_sorted_set).encode()


class ChangelogRecord(NamedTuple):
    """One table write, to be sent to the table's changelog topic by the agent."""

    table: Any  # the faust Table (its store gets the persisted offset once acked)
    topic: str  # its changelog topic
    key: bytes  # the store's key bytes (JSON of the encoded key)
    value: bytes | None  # the store's value bytes; None = deleted (a tombstone)
    partition: int  # the current event's partition (DESIGN.md §7.1)


class ChangelogWriter:
    """Collects the changelog records of direct table writes (see :class:`TableMap`).

    faust sends a changelog record per key write through its producer buffer, one at a
    time, each with its own callback — in a profile that per-record path was most of
    the worker's time. Writing the store directly and handing the records here lets
    the agent send a whole batch's records back to back and wait for them once.
    """

    __slots__ = ("records",)

    def __init__(self) -> None:
        self.records: list[ChangelogRecord] = []

    def take(self) -> list[ChangelogRecord]:
        """The records collected so far (and forget them)."""
        out, self.records = self.records, []
        return out


class TableMap(MutableMapping):
    """A faust ``Table`` seen through tuple keys. Reads return stored JSON values.

    With a ``writer``, writes go straight to the table's store (the partition of
    faust's current event) and their changelog records to ``writer``, for the caller to
    send; without one the map is read-only (the web views) and a write raises TypeError.
    """

    __slots__ = ("table", "writer")

    def __init__(self, table: Any, writer: ChangelogWriter | None = None) -> None:
        self.table = table
        self.writer = writer

    def __getitem__(self, key: tuple) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def get(self, key: tuple, default: Any = None) -> Any:
        # Straight from the store (what faust's Table.get does, minus its sensors and
        # serializer registry): the partition of the current event, or all of them.
        raw = self.table.data._get(store_key(key))
        return default if raw is None else json.loads(raw)

    def __contains__(self, key: object) -> bool:
        return self.table.data._get(store_key(key)) is not None  # type: ignore[arg-type]

    def _write(self, key: tuple, value: Any) -> None:
        if self.writer is None:
            raise TypeError(f"table {self.table.name!r} is read-only here (no changelog writer)")
        store = self.table.data
        kb = store_key(key)
        vb = None if value is None else store_value(value)
        event = current_event()
        if event is None:
            raise RuntimeError("table write outside of stream processing (no current event)")
        if vb is None:
            store._del(kb)
        else:
            store._set(kb, vb)
        self.writer.records.append(
            ChangelogRecord(self.table, self.table.changelog_topic.get_topic_name(), kb, vb,
                            event.message.partition)
        )

    def __setitem__(self, key: tuple, value: Any) -> None:
        self._write(key, value)

    def __delitem__(self, key: tuple) -> None:
        if key not in self:
            raise KeyError(key)
        self._write(key, None)

    def pop(self, key: tuple, *default: Any) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        self._write(key, None)
        return value

    def __iter__(self) -> Iterator[tuple]:
        return (tuple(json.loads(k)) for k in self.table.keys())

    def __len__(self) -> int:
        return len(self.table)


def _private(value: Any) -> Any:
    """A set read through an overlay is copied: the engine grows the sets it reads in
    place (then re-assigns them), which must not reach the base before a flush."""
    return set(value) if isinstance(value, set) else value


class _OverlayMap(MutableMapping):
    """Reads fall through to ``base`` unless written in this overlay; writes are buffered."""

    __slots__ = ("base", "writes")

    def __init__(self, base: MutableMapping) -> None:
        self.base = base
        self.writes: dict[tuple, Any] = {}

    def __getitem__(self, key: tuple) -> Any:
        value = self.writes.get(key, _MISSING)
        if value is _MISSING:
            return _private(self.base[key])
        if value is _DELETED:
            raise KeyError(key)
        return value

    def get(self, key: tuple, default: Any = None) -> Any:
        value = self.writes.get(key, _MISSING)
        if value is _MISSING:
            return _private(self.base.get(key, default))
        return default if value is _DELETED else value

    def __contains__(self, key: object) -> bool:
        value = self.writes.get(key, _MISSING)  # type: ignore[call-overload]
        if value is _MISSING:
            return key in self.base
        return value is not _DELETED

    def __setitem__(self, key: tuple, value: Any) -> None:
        self.writes[key] = value

    def __delitem__(self, key: tuple) -> None:
        if key not in self:
            raise KeyError(key)
        self.writes[key] = _DELETED

    def pop(self, key: tuple, *default: Any) -> Any:
        try:
            value = self[key]
        except KeyError:
            if default:
                return default[0]
            raise
        self.writes[key] = _DELETED
        return value

    def __iter__(self) -> Iterator[tuple]:  # pragma: no cover - the engine never iterates
        raise TypeError("overlay state is not iterable")

    def __len__(self) -> int:  # pragma: no cover
        raise TypeError("overlay state has no length")

    def pending(self) -> list[list]:
        """The buffered writes as JSON-ready ``[key_list, value, deleted]`` triples."""
        return [[list(k), None if v is _DELETED else v, v is _DELETED] for k, v in self.writes.items()]

    def flush(self) -> int:
        n = 0
        for key, value in self.writes.items():
            if value is _DELETED:
                self.base.pop(key, None)
            else:
                self.base[key] = value
            n += 1
        self.writes.clear()
        return n


class OverlayState:
    """A State whose writes wait in memory until :meth:`flush` (or vanish on :meth:`discard`)."""

    __slots__ = TABLES

    def __init__(self, base: Any) -> None:
        for name in TABLES:
            setattr(self, name, _OverlayMap(getattr(base, name)))

    def flush(self) -> int:
        """Apply the buffered writes to the base state; returns how many keys were written."""
        return sum(getattr(self, name).flush() for name in TABLES)

    def merge_into(self, other: "OverlayState") -> None:
        """Move these buffered writes into ``other`` (an overlay this one reads through).

        Used to stack one event's overlay on its context's batch overlay: on success the
        event's writes join the batch's (last write per key wins), so a batch writes
        each touched key once.
        """
        for name in TABLES:
            mine = getattr(self, name).writes
            if mine:
                getattr(other, name).writes.update(mine)
                mine.clear()

    def write_set(self) -> dict[str, list[list]]:
        """table name -> pending writes (only tables with writes): a journal record's body."""
        out = {}
        for name in TABLES:
            pending = getattr(self, name).pending()
            if pending:
                out[name] = pending
        return out

    def discard(self) -> None:
        for name in TABLES:
            getattr(self, name).writes.clear()


class TableState:
    """The engine's State backed by faust tables (one per name in ``TABLES``)."""

    __slots__ = (*TABLES, "journal", "writer")

    def __init__(self, tables: dict[str, Any], journal: Any = None,
                 writer: ChangelogWriter | None = None) -> None:
        self.writer = writer
        for name in TABLES:
            setattr(self, name, TableMap(tables[name], writer))
        self.journal = TableMap(journal, writer) if journal is not None else None

    def record_journal(self, context_id: str, event_id: str, write_set: dict[str, list[list]]) -> None:
        """Write one event's whole write set as a single journal record."""
        self.journal[(context_id,)] = {"event_id": event_id, "writes": write_set}

    def rewrite_journal(self, context_id: str) -> dict | None:
        """Write the context's last journal record again and return it (None if none).

        The local store may hold a record the changelog never received (a crash between
        the local write and the send); re-sending it — and waiting for its ack before
        any key (:meth:`apply_journal`) — keeps the changelog's latest journal record
        the one that matches the latest keys, so an older one is never rolled forward.
        """
        rec = self.journal.get((context_id,)) if self.journal is not None else None
        if not rec:
            return None
        self.journal[(context_id,)] = rec
        return rec

    def apply_journal(self, rec: dict) -> int:
        """Re-apply a journal record's writes (idempotent); returns keys written."""
        n = 0
        for name, writes in rec["writes"].items():
            table = getattr(self, name)
            for key, value, deleted in writes:
                if deleted:
                    table.pop(tuple(key), None)
                else:
                    table[tuple(key)] = value
                n += 1
        return n
