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
"""

from __future__ import annotations

import json
from collections.abc import Iterator, MutableMapping
from typing import Any

from stream.domain.state import TABLES

_MISSING = object()
_DELETED = object()


def encode_key(key: tuple) -> str:
    """``("ctx", "a1")`` -> ``'["ctx","a1"]'`` (compact JSON, UTF-8 kept)."""
    return json.dumps(list(key), ensure_ascii=False, separators=(",", ":"))


class TableMap(MutableMapping):
    """A faust ``Table`` seen through tuple keys. Reads return stored JSON values."""

    __slots__ = ("table",)

    def __init__(self, table: Any) -> None:
        self.table = table

    def __getitem__(self, key: tuple) -> Any:
        value = self.table.get(encode_key(key))
        if value is None:
            raise KeyError(key)
        return value

    def get(self, key: tuple, default: Any = None) -> Any:
        value = self.table.get(encode_key(key))
        return default if value is None else value

    def __contains__(self, key: object) -> bool:
        return self.table.get(encode_key(key)) is not None  # type: ignore[arg-type]

    def __setitem__(self, key: tuple, value: Any) -> None:
        self.table[encode_key(key)] = value

    def __delitem__(self, key: tuple) -> None:
        del self.table[encode_key(key)]

    def __iter__(self) -> Iterator[tuple]:
        return (tuple(json.loads(k)) for k in self.table.keys())

    def __len__(self) -> int:
        return len(self.table)


class _OverlayMap(MutableMapping):
    """Reads fall through to ``base`` unless written in this overlay; writes are buffered."""

    __slots__ = ("base", "writes")

    def __init__(self, base: MutableMapping) -> None:
        self.base = base
        self.writes: dict[tuple, Any] = {}

    def __getitem__(self, key: tuple) -> Any:
        value = self.writes.get(key, _MISSING)
        if value is _MISSING:
            return self.base[key]
        if value is _DELETED:
            raise KeyError(key)
        return value

    def get(self, key: tuple, default: Any = None) -> Any:
        value = self.writes.get(key, _MISSING)
        if value is _MISSING:
            return self.base.get(key, default)
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

    def discard(self) -> None:
        for name in TABLES:
            getattr(self, name).writes.clear()


class TableState:
    """The engine's State backed by faust tables (one per name in ``TABLES``)."""

    __slots__ = TABLES

    def __init__(self, tables: dict[str, Any]) -> None:
        for name in TABLES:
            setattr(self, name, TableMap(tables[name]))
