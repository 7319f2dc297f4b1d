"""The one line splitter (stream/lines.py): ``\\n`` only, a BOM at the start stripped, an
oversize line held only up to its ``keep`` bytes, whatever the chunk boundaries."""

from __future__ import annotations

import io
import random
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.lines import BOM, LineSplitter, Oversize, iter_lines, read_lines

pytestmark = pytest.mark.unit

MiB = 1 << 20


class Trickle(io.RawIOBase):
    """A binary stream whose reads return at most ``step`` bytes."""

    def __init__(self, data: bytes, step: int) -> None:
        self.data, self.pos, self.step = data, 0, step

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        n = self.step if n < 0 else min(n, self.step)
        out = self.data[self.pos:self.pos + n]
        self.pos += len(out)
        return out


class Zeros(io.RawIOBase):
    """``size`` bytes of ``x`` then ``tail``, produced as read (never held whole)."""

    def __init__(self, size: int, tail: bytes = b"") -> None:
        self.left, self.tail = size, tail

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.left:
            k = min(n, self.left)
            self.left -= k
            return b"x" * k
        out, self.tail = self.tail[:n], self.tail[n:]
        return out


def test_lines_are_split_on_newline_only_whatever_the_chunk_boundaries():
    rng = random.Random(28)
    for _ in range(300):
        data = bytes(rng.choice(b"ab \r\n") for _ in range(rng.randint(0, 60)))
        want = data.split(b"\n")
        if want and want[-1] == b"":
            want.pop()
        for step in (1, 2, 3, 7, 64):
            assert list(iter_lines(Trickle(data, step))) == want, (data, step)
            assert list(iter_lines(Trickle(data, step), limit=100)) == want, (data, step)


def test_a_line_over_the_limit_is_cut_at_the_limit_and_knows_its_full_size():
    data = b"short\n" + b"y" * 25 + b"\nafter\n" + b"z" * 11
    for step in (1, 4, 10, 100):
        lines = list(iter_lines(Trickle(data, step), limit=10))
        assert lines == [b"short", b"y" * 10, b"after", b"z" * 10]
        assert [getattr(x, "size", None) for x in lines] == [None, 25, None, 11]
        assert isinstance(lines[1], Oversize)


def test_a_blank_line_over_the_limit_stays_blank_and_one_with_a_late_character_does_not():
    assert list(iter_lines(io.BytesIO(b" " * 50 + b"\n"), limit=10)) == [b""]
    [line] = list(iter_lines(io.BytesIO(b" " * 50 + b"x\n"), limit=10))
    assert line == b" " * 10 and line.size == 51


def test_a_32_mb_line_is_read_within_the_limit_of_memory():
    tracemalloc.start()
    try:
        lines = [(len(x), getattr(x, "size", None)) for x in iter_lines(Zeros(32 * MiB, b"\nok\n"), limit=MiB)]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert lines == [(MiB, 32 * MiB), (2, None)]
    assert peak < 6 * MiB, f"peak {peak / MiB:.1f} MiB for a 32 MiB line with a 1 MiB limit"


def _split(data: bytes, cuts: list[int], **kw: object) -> tuple[list[bytes], LineSplitter]:
    split = LineSplitter(**kw)  # type: ignore[arg-type]
    out, at = [], 0
    for cut in sorted(cuts) + [len(data)]:
        out += split.feed(data[at:cut])
        at = max(at, cut)
    return out, split


@given(st.sampled_from([b"", BOM, BOM[:2]]),
       st.binary(max_size=60).map(lambda b: bytes(b"ab \r\n\xef\xbb\xbf"[x % 8] for x in b)),
       st.lists(st.integers(0, 64), max_size=8), st.booleans())
def test_feeding_in_any_chunks_gives_bytes_split_of_the_data_without_its_bom(lead, data, cuts, bom):
    data = lead + data
    lines, split = _split(data, cuts, bom=bom)
    body = data[len(BOM):] if bom and data.startswith(BOM) else data
    *whole, rest = body.split(b"\n")
    assert lines == whole
    assert split.consumed == len(data) - len(rest) and split.pending == len(rest)
    assert split.end() == (rest or None) and split.consumed == len(data)


def test_a_bom_that_arrives_a_byte_at_a_time_is_still_stripped_and_only_at_the_start():
    data = BOM + b"a\n" + BOM + b"b\n"
    assert list(iter_lines(Trickle(data, 1))) == [b"a", BOM + b"b"]
    assert _split(BOM[:2], [1])[1].end() == BOM[:2]  # the start of a BOM only: a line of its own
    assert read_lines(io.BytesIO(data), 100, final=True, bom=False)[0] == [BOM + b"a", BOM + b"b"]


@given(st.lists(st.sampled_from([b"x" * 30, b" " * 30, b"ok", b""]), max_size=6), st.integers(1, 40))
def test_read_lines_holds_nothing_of_an_oversize_line_and_leaves_a_partial_line_unread(lines, chunk):
    data = b"".join(x + b"\n" for x in lines) + b"partial"
    got, consumed, left = read_lines(io.BytesIO(data), 20, final=False, chunk=chunk)
    assert [(bytes(x), getattr(x, "size", None)) for x in got] == [
        (b"", 30) if x == b"x" * 30 else (b"", None) if x == b" " * 30 else (x, None) for x in lines]
    assert (consumed, left) == (len(data) - 7, 7)
    assert all(isinstance(x, Oversize) for x in got if getattr(x, "size", None))
