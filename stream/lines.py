"""One line splitter for every reader of JSON lines: replay, ingest and the hook's follow mode.

Lines end at ``\\n`` only (``str.splitlines`` would also split at \\r, \\x0b, U+2028 ... inside a
record); a UTF-8 BOM that opens the stream is stripped. Linear in the input whatever its line
lengths, and a line over ``limit`` bytes costs at most ``limit`` bytes of memory while it is read.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import BinaryIO

BOM = b"\xef\xbb\xbf"
_INK = re.compile(rb"[^ \t\r]")  # a byte that makes a line not blank (searched, never copied)


class Oversize(bytes):
    """A line over the limit: its first ``keep`` bytes, and its full length in ``size``
    (the rest was never held). An oversize line that is blank whole is ``b""`` instead."""

    size: int


class LineSplitter:
    """Chunks in (:meth:`feed`), lines out without their newline; :meth:`end` gives the
    unterminated last line. ``consumed``: bytes fed up to the last newline, or the BOM.

    ``limit`` None: no line is too long. ``keep``: bytes of an oversize line kept (default
    ``limit``). ``bom``: strip a BOM at the start (False when a file is read from an offset)."""

    __slots__ = ("limit", "keep", "consumed", "_fed", "_head", "_parts", "_held", "_size", "_over", "_blank")

    def __init__(self, limit: int | None = None, *, keep: int | None = None, bom: bool = True) -> None:
        self.limit = limit
        self.keep = limit if keep is None else min(keep, limit if limit is not None else keep)
        self.consumed = 0
        self._fed = 0
        self._head: bytes | None = b"" if bom else None  # the stream's first bytes until a BOM can be told
        self._parts: list[bytes] = []  # the line being read (all of it, or its first ``keep`` bytes once over)
        self._held = 0  # bytes of it held once over the limit
        self._size = 0  # its full length so far
        self._over = False
        self._blank = True  # over the limit: whether every byte so far is blank

    @property
    def pending(self) -> int:
        """Bytes fed after the last newline (the line still being read)."""
        return self._fed - self.consumed

    def feed(self, chunk: bytes) -> list[bytes]:
        self._fed += len(chunk)
        if self._head is not None:
            chunk = self._head + chunk
            if len(chunk) < len(BOM) and BOM.startswith(chunk):
                self._head = chunk
                return []
            self._head = None
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
                self.consumed = len(BOM)
        pieces = chunk.split(b"\n")
        rest = pieces.pop()
        out: list[bytes] = []
        if pieces:
            self._add(pieces[0])
            out.append(self._take())
            limit = self.limit
            for piece in pieces[1:]:
                if limit is None or len(piece) <= limit:
                    out.append(piece)
                else:
                    self._add(piece)
                    out.append(self._take())
            self.consumed = self._fed - len(rest)
        self._add(rest)
        return out

    def end(self) -> bytes | None:
        """The last line when the stream does not end with a newline, else None; all is consumed."""
        if self._head:
            self._add(self._head)
            self._head = None
        self.consumed = self._fed
        return self._take() if self._size else None

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if not self._over:
            self._parts.append(piece)
            if self.limit is None or self._size <= self.limit:
                return
            self._over = True  # from now on hold only the first ``keep`` bytes
            parts, self._parts, self._held = self._parts, [], 0
            for part in parts:
                self._hold(part)
            return
        self._hold(piece)

    def _hold(self, piece: bytes) -> None:
        if self._blank and _INK.search(piece):
            self._blank = False
        room = (self.keep or 0) - self._held
        if room > 0:
            self._parts.append(piece[:room])
            self._held += len(self._parts[-1])

    def _take(self) -> bytes:
        parts = self._parts
        line = parts[0] if len(parts) == 1 else b"".join(parts)
        size, over, blank = self._size, self._over, self._blank
        self._parts, self._held, self._size, self._over, self._blank = [], 0, 0, False, True
        if not over:
            return line
        if blank:
            return b""
        big = Oversize(line)
        big.size = size
        return big


def iter_lines(stream: BinaryIO, *, limit: int | None = None, chunk: int = 1 << 20) -> Iterator[bytes]:
    """The lines of ``stream`` read to its end (:class:`LineSplitter`; an oversize line an
    :class:`Oversize` of its first ``limit`` bytes), each as soon as its newline is read: a pipe
    is read with ``read1`` (what has arrived, up to ``chunk``), not held until ``chunk`` bytes."""
    split = LineSplitter(limit)
    read = getattr(stream, "read1", None) or stream.read
    while data := read(chunk):
        yield from split.feed(data)
    last = split.end()
    if last is not None:
        yield last


def read_lines(fh: BinaryIO, limit: int, *, final: bool, bom: bool = True,
               chunk: int = 1 << 20) -> tuple[list[bytes], int, int]:
    """(lines, bytes consumed, bytes left unread) of ``fh`` from its position to its end.

    An oversize line is an :class:`Oversize` holding none of its bytes. The last line without
    a newline is a line only when ``final``; else it is left unread (a line still being
    written), its length the third value."""
    split = LineSplitter(limit, keep=0, bom=bom)
    lines: list[bytes] = []
    while data := fh.read(chunk):
        lines += split.feed(data)
    if final:
        last = split.end()
        if last is not None:
            lines.append(last)
    return lines, split.consumed, split.pending
