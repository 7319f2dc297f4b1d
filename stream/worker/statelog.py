"""The state log's record format, and its replay: pure, no Kafka, no storage.

Each input partition number ``p`` has one partition of the state log
(``<app_id>-state``), written only by the worker that owns ``p``. Records (JSON objects):

More (the module notes): docs/DURABILITY.md, section ``stream/worker/statelog.py``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

import orjson

Entry = list[Any]

#: Record kinds.
FENCE, DELTA, CHUNK, MARKER, SNAP_CHUNK, SNAP_MARKER = "f", "d", "c", "m", "sc", "sm"


_dumps = orjson.dumps  # compact UTF-8 JSON, the record format's only encoder

def fence(generation: int) -> bytes:
    return _dumps({"k": FENCE, "g": generation})


def _fragments(entries: Iterable[Entry], piece: int) -> Iterator[Entry]:
    """Entries with a value longer than ``piece`` characters split into fragments."""
    for e in entries:
        value = e[2]
        if value is None or len(value) <= piece:
            yield e
            continue
        parts = (len(value) + piece - 1) // piece
        for i in range(parts):
            yield [e[0], e[1], value[i * piece:(i + 1) * piece], i, parts]


def _chunks(entries: Sequence[Entry], chunk_bytes: int) -> Iterator[list[Entry]]:
    """Entries grouped so that each group's JSON stays near ``chunk_bytes`` (a bound on
    characters; UTF-8 and escapes may grow it up to 6x, the record limit has room)."""
    piece = max(1024, chunk_bytes // 8)
    chunk: list[Entry] = []
    size = 0
    for e in _fragments(entries, piece):
        cost = len(e[1]) + (len(e[2]) if isinstance(e[2], str) else 4) + 16
        if chunk and size + cost > chunk_bytes:
            yield chunk
            chunk, size = [], 0
        chunk.append(e)
        size += cost
    if chunk:
        yield chunk


def commit_records(generation: int, n: int, offsets: dict[str, int], entries: Sequence[Entry],
                   chunk_bytes: int, *, snapshot: bool = False) -> list[bytes]:
    """The records of commit ``n`` (or of a snapshot): one ``d`` record when it fits,
    else chunks and their marker."""
    if not snapshot:
        one = _dumps({"k": DELTA, "g": generation, "n": n, "o": offsets, "w": list(entries)})
        if len(one) <= chunk_bytes:
            return [one]
    chunk_kind, marker_kind = (SNAP_CHUNK, SNAP_MARKER) if snapshot else (CHUNK, MARKER)
    out = [_dumps({"k": chunk_kind, "g": generation, "n": n, "i": i, "w": w})
           for i, w in enumerate(_chunks(entries, chunk_bytes))]
    out.append(_dumps({"k": marker_kind, "g": generation, "n": n, "c": len(out), "o": offsets}))
    return out


class Sink(Protocol):
    """Where a replay applies what it finds."""

    def apply(self, entries: Sequence[Entry]) -> None: ...

    def clear(self) -> None: ...

    def covered(self, offsets: dict[str, int], generation: int, n: int) -> None: ...


class Replay:
    """Apply state-log records, in log order, to a :class:`Sink`.

    ``generation``: the newest generation seen (records older than it are ignored).
    ``since_snapshot``: entries applied since the last snapshot (or the log start);
    ``snapshot_entries``: the entries of the last snapshot read (None: none read).
    """

    def __init__(self, sink: Sink, generation: int = -1) -> None:
        self.sink = sink
        self.generation = generation
        self.since_snapshot = 0
        self.snapshot_entries: int | None = None
        self._series: tuple[str, int, int] | None = None  # (kind, generation, n) being collected
        self._chunks: list[list[Entry]] = []

    def feed(self, value: bytes) -> None:
        rec = orjson.loads(value)
        g = rec["g"]
        if g < self.generation:
            return  # a zombie's record, written after a newer owner fenced it
        if g > self.generation:
            self.generation = g
            self._series = None
        kind = rec["k"]
        if kind == FENCE:
            self._series = None
        elif kind == DELTA:
            self._apply(rec["w"])
            self.sink.covered(rec["o"], g, rec["n"])
        elif kind in (CHUNK, SNAP_CHUNK):
            series = (kind, g, rec["n"])
            if series != self._series or rec["i"] == 0:  # a new series, or a resend from its start
                self._series, self._chunks = series, []
            if rec["i"] == len(self._chunks):
                self._chunks.append(rec["w"])
            else:  # not the chunk expected next: this series cannot complete
                self._series = (kind, g, -1)
        elif kind in (MARKER, SNAP_MARKER):
            expected = (CHUNK if kind == MARKER else SNAP_CHUNK, g, rec["n"])
            if self._series == expected and len(self._chunks) == rec["c"]:
                if kind == SNAP_MARKER:
                    self.sink.clear()
                    self.since_snapshot = 0
                self._apply(e for chunk in self._chunks for e in chunk)
                if kind == SNAP_MARKER:
                    self.snapshot_entries, self.since_snapshot = self.since_snapshot, 0
                self.sink.covered(rec["o"], g, rec["n"])
            self._series, self._chunks = None, []

    def _apply(self, entries: Iterable[Entry]) -> None:
        batch: list[Entry] = []
        pieces: list[str] = []
        for e in entries:
            if len(e) == 3:
                batch.append(e)
                continue
            pieces.append(e[2])
            if e[3] == e[4] - 1:
                batch.append([e[0], e[1], "".join(pieces)])
                pieces = []
        self.since_snapshot += len(batch)
        self.sink.apply(batch)
