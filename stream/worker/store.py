"""One input partition's engine state: RocksDB on disk, a write cache and a read cache.

:class:`PartitionState` is the engine's :class:`~stream.domain.state.State` for every
context of one partition number. Writes stay in a per-table *dirty* map (one entry per
key, the last value wins) until the durability object commits them
(:mod:`stream.worker.durability`); reads look in the dirty map, then in the writes of the
commit in flight (taken, not yet in RocksDB), then in a bounded cache of decoded values, then in
RocksDB (:class:`PartitionStore`). So a hot key is decoded
once, written once per commit, and 1M artifacts live on disk, not in Python dicts.

RocksDB layout (rocksdict, raw bytes): ``bytes([table index + 1]) + key_json`` ->
``value_json``; ``b"\\x00<name>"`` holds the metadata (the last state-log offset applied,
the newest generation seen, the input offsets covered, the next commit number, the log
entries since the last snapshot, the entries of the last snapshot).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import orjson
from rocksdict import BlockBasedOptions, Options, Rdict, WriteBatch

from stream.domain.state import TABLES, jsonable

_MISSING = object()
_DELETED = object()
_encode_list: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def key_bytes(key: tuple[Any, ...]) -> bytes:
    """The UTF-8 JSON of an engine key (a tuple of ids / ints): ``b'["ctx","n1"]'``, the bytes
    of ``json.dumps(list(key), ensure_ascii=False, separators=(",", ":"))``: orjson's, which
    are those for every string and 64-bit integer; the stdlib's for an integer past 64 bits."""
    try:
        return orjson.dumps(key)
    except TypeError:
        return _encode_list(list(key)).encode("utf-8")


def key_json(key: tuple[Any, ...]) -> str:
    """:func:`key_bytes` as text (a state-log entry's key)."""
    return key_bytes(key).decode("utf-8")


def value_json(value: Any) -> str:
    """A table value's JSON text (sets and sorted containers become sorted lists:
    deterministic bytes). orjson: the state's own format, encoded and decoded at every
    commit and cache miss."""
    return orjson.dumps(value, default=jsonable).decode("utf-8")


loads = orjson.loads

META = b"\x00"
_META_KEYS = ("log", "gen", "offsets", "n", "snap", "snapn")


def partition_path(state_dir: Path, number: int) -> Path:
    """The RocksDB directory of input partition ``number`` under ``Settings.state_dir``."""
    return state_dir / f"p{number:05d}"


def partition_paths(state_dir: Path) -> list[Path]:
    """Every partition's RocksDB directory under ``state_dir`` (``reset``)."""
    if not state_dir.is_dir():
        return []
    return sorted(p for p in state_dir.iterdir() if p.is_dir() and re.fullmatch(r"p\d{5}", p.name))


class PartitionStore:
    """RocksDB for one partition (raw keys/values), with its metadata."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        table = BlockBasedOptions()
        table.set_bloom_filter(10, False)  # most engine reads of `seen` are misses
        opts.set_block_based_table_factory(table)
        # ... also in the memtable, where a commit's writes sit until a flush: a miss there
        # costs about 0.4 µs instead of 0.8 (bench/README "sixth round"); 1% of the write buffer
        opts.set_memtable_prefix_bloom_ratio(0.01)
        opts.set_memtable_whole_key_filtering(True)
        self._opts = opts
        self.db = Rdict(str(path), opts)

    def get(self, raw_key: bytes) -> bytes | None:
        return self.db.get(raw_key)

    def meta(self) -> dict[str, Any]:
        out = {}
        for name in _META_KEYS:
            raw = self.db.get(META + name.encode())
            out[name] = loads(raw) if raw is not None else None
        return out

    def write(self, entries: Sequence[list[Any]], meta: dict[str, Any]) -> None:
        """Apply ``[table_index, key_json, value_json|None]`` entries and metadata atomically."""
        wb = WriteBatch(raw_mode=True)
        for t, k, v in entries:
            raw_key = _PREFIX[t] + k.encode("utf-8")
            if v is None:
                wb.delete(raw_key)
            else:
                wb.put(raw_key, v.encode("utf-8"))
        for name, value in meta.items():
            wb.put(META + name.encode(), orjson.dumps(value))
        self.db.write(wb)

    def clear(self) -> None:
        """Drop every entry and the metadata (the partition restarts from nothing)."""
        self.db.close()
        Rdict.destroy(str(self.path), self._opts)
        self.db = Rdict(str(self.path), self._opts)

    def entries(self) -> Iterator[list[Any]]:
        """Every table entry as ``[table_index, key_json, value_json]`` (a snapshot's body)."""
        for raw_key, raw_value in cast(Iterator[tuple[bytes, bytes]], self.db.items()):
            if raw_key[:1] == META:
                continue
            yield [raw_key[0] - 1, raw_key[1:].decode("utf-8"), raw_value.decode("utf-8")]

    def rows(self, table: str) -> Iterator[tuple[tuple[Any, ...], Any]]:
        """``(key tuple, decoded value)`` of one table (metrics rebuild, views)."""
        prefix = _PREFIX[TABLES.index(table)]
        for raw_key, raw_value in cast(Iterator[tuple[bytes, bytes]], self.db.items(from_key=prefix)):
            if raw_key[:1] != prefix:
                break
            yield tuple(loads(raw_key[1:])), loads(raw_value)

    def estimate_keys(self) -> int:
        try:
            return int(self.db.property_int_value("rocksdb.estimate-num-keys") or 0)
        except Exception:  # pragma: no cover - property missing in some builds
            return 0

    def close(self) -> None:
        try:
            self.db.close()
        except Exception:  # pragma: no cover - already closed
            pass

    @staticmethod
    def destroy(path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)


_PREFIX = [bytes([i + 1]) for i in range(len(TABLES))]


class _View:
    """One table of a :class:`PartitionState` as the mapping the engine uses."""

    __slots__ = ("index", "prefix", "store", "dirty", "taken", "taken_json", "young", "old", "cap")

    def __init__(self, index: int, store: PartitionStore, cap: int) -> None:
        self.index = index
        self.prefix = _PREFIX[index]
        self.store = store
        self.dirty: dict[tuple[Any, ...], Any] = {}
        self.taken: dict[tuple[Any, ...], Any] = {}  # writes of the commit in flight, until the store holds them
        self.taken_json: dict[tuple[Any, ...], str | None] = {}  # ... as taken (the engine changes values in place)
        self.young: dict[tuple[Any, ...], Any] = {}
        self.old: dict[tuple[Any, ...], Any] = {}
        self.cap = cap

    def _load(self, key: tuple[Any, ...]) -> Any:
        """A key not in ``young``: the newest of dirty, taken, old and the store (then cached)."""
        value = self.dirty.get(key, _MISSING)
        if value is _MISSING and self.taken:
            value = self.taken.get(key, _MISSING)
        if value is _MISSING:
            value = self.old.get(key, _MISSING)
            if value is _MISSING:
                raw = self.store.get(self.prefix + key_bytes(key))
                value = None if raw is None else loads(raw)
        elif value is _DELETED:
            value = None
        self._cache(key, value)
        return value

    def _cache(self, key: tuple[Any, ...], value: Any) -> None:
        young = self.young
        if len(young) >= self.cap and key not in young:  # two generations: bounded, O(1) per access
            self.old, young = young, {}
            self.young = young
        young[key] = value

    def get(self, key: tuple[Any, ...], default: Any = None) -> Any:
        # ``young`` holds the current value of every key it has (writes go through it):
        # the one lookup of the common case
        value = self.young.get(key, _MISSING)
        if value is _MISSING:
            value = self._load(key)
        return default if value is None else value

    def __getitem__(self, key: tuple[Any, ...]) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: object) -> bool:
        value = self.young.get(key, _MISSING)  # type: ignore[call-overload]  # get's first lookup, inlined
        if value is _MISSING:
            value = self._load(key)  # type: ignore[arg-type]
        return value is not None

    def __setitem__(self, key: tuple[Any, ...], value: Any) -> None:
        # _write and _cache inlined: the engine's most frequent write
        self.dirty[key] = value
        young = self.young
        if len(young) >= self.cap and key not in young:
            self.old, young = young, {}
            self.young = young
        young[key] = value

    def __delitem__(self, key: tuple[Any, ...]) -> None:
        if key not in self:
            raise KeyError(key)
        self._write(key, _DELETED)

    def pop(self, key: tuple[Any, ...], *default: Any) -> Any:
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        self._write(key, _DELETED)
        return value

    def _write(self, key: tuple[Any, ...], value: Any) -> None:
        """A write (``_DELETED``: a delete) for the next commit, and through the read cache."""
        self.dirty[key] = value
        self._cache(key, None if value is _DELETED else value)

    def take_dirty(self) -> list[list[Any]]:
        """The dirty writes as entries (values encoded); they stay readable (``taken``)
        until :meth:`stored` says the store holds them."""
        out = []
        taken, taken_json = self.taken, self.taken_json
        for key, value in self.dirty.items():
            text = None if value is _DELETED else value_json(value)
            out.append([self.index, key_json(key), text])
            taken[key] = value
            taken_json[key] = text
        self.dirty.clear()
        return out

    def stored(self) -> None:
        """The taken writes are in the store: they move into the read cache."""
        young, dirty = self.young, self.dirty
        for key, value in self.taken.items():
            if key not in dirty:  # written again since the take: the newer write is the one to read
                young[key] = None if value is _DELETED else value
        self.taken.clear()
        self.taken_json.clear()
        if len(young) > 2 * self.cap:
            self.old, self.young = young, {}

    def forget(self) -> None:
        """Drop the uncommitted writes and the cache; the taken ones (committing) stay, as
        they were taken: the engine may have changed a taken value in place since."""
        self.dirty.clear()
        self.young.clear()
        self.old.clear()
        self.taken = {key: _DELETED if text is None else loads(text) for key, text in self.taken_json.items()}


class PartitionState:
    """The engine's State for one partition: a :class:`_View` per table over one store.

    ``cache_entries``: decoded values kept per table (the read cache's bound).
    """

    def __init__(self, store: PartitionStore, cache_entries: int = 50_000) -> None:
        self.store = store
        self._views = [_View(i, store, cache_entries) for i in range(len(TABLES))]
        # one attribute per table, in TABLES order (spelled out: a compiled class has fixed attributes)
        (self.artifacts, self.nodes, self.required, self.reach, self.dependents, self.parents,
         self.alert_sets, self.seen, self.seq, self.waiting, self.stored_children) = self._views

    @property
    def dirty(self) -> int:
        """How many keys wait for the next commit."""
        return sum(len(v.dirty) for v in self._views)

    def take_dirty(self) -> list[list[Any]]:
        """Every dirty write as an entry ``[table, key json, value json | None]`` for a commit."""
        return [e for v in self._views for e in v.take_dirty()]

    def stored(self) -> None:
        """The store holds the entries of the last :meth:`take_dirty`."""
        for v in self._views:
            v.stored()

    def forget(self) -> None:
        """Drop every uncommitted write and every cached value (back to the last commit taken)."""
        for v in self._views:
            v.forget()
