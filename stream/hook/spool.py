"""A session's spool: the events of the hook, written ahead of Kafka, sent once.

``spool/<key>.jsonl`` holds encoded events (the ``ingest`` JSONL, so ``cat`` of it is a
valid ``replay -`` input), appended in seq order under ``spool/<key>.lock``.
``spool/<key>.json`` is the bookkeeping, ``{"sent": {context_id: last seq Kafka
acknowledged}}``: the truth about what went out, kept by seq rather than by byte
offset, so no order of crash can make a line look sent when it was not (nothing lost)
or unsent when it was (nothing sent twice, but for the one batch in flight when the
process died — the engine ignores its repeated event ids). A fully sent spool is
truncated. Appends are idempotent: an event whose seq is not above the context's
high-water mark (the last line of the file, or what was sent) is skipped, so a call that
died between spooling and saving its cursor re-spools nothing. A line left incomplete by
a killed process is cut before the next append (it was never committed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from stream.hook.store import atomic_write, locked, read_json

#: Events sent to Kafka per acknowledged batch (the bookkeeping is saved after each).
DRAIN_BATCH = 500

Line = tuple[str, str, int, bytes]  # (type, context_id, seq, encoded event without "\n")
Sender = Callable[[list[Line]], Awaitable[None]]


def spool_line(event: dict[str, Any], encoded: str) -> Line:
    return (event["type"], event["context_id"], int(event["seq"]), encoded.encode("utf-8"))


class Spool:
    """One session's spool (module docstring). ``deadline``: lock wait (``time.monotonic()``), None = forever."""

    def __init__(self, directory: Path, key: str) -> None:
        self.path = Path(directory) / f"{key}.jsonl"
        self.meta_path = Path(directory) / f"{key}.json"
        self.lock_path = Path(directory) / f"{key}.lock"

    # ---- bookkeeping

    def sent(self) -> dict[str, int]:
        meta = read_json(self.meta_path)
        sent = meta.get("sent") if isinstance(meta, dict) else None
        return (
            {k: v for k, v in sent.items() if isinstance(k, str) and isinstance(v, int)}
            if isinstance(sent, dict)
            else {}
        )

    def _save_sent(self, sent: dict[str, int]) -> None:
        atomic_write(self.meta_path, json.dumps({"sent": sent}, sort_keys=True).encode("utf-8"))

    # ---- appending

    def append(self, lines: Iterable[Line], deadline: float | None) -> int:
        """Append the lines above the high-water mark; fsync. Returns how many were written."""
        lines = list(lines)
        if not lines:
            return 0
        with locked(self.lock_path, deadline):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a+b") as fh:
                _cut_partial_tail(fh)
                high = self.sent()
                last = _last_line(fh)
                if last is not None:
                    high[last[1]] = max(high.get(last[1], -1), last[2])
                out = [line for line in lines if line[2] > high.get(line[1], -1)]
                if out:
                    fh.seek(0, os.SEEK_END)
                    fh.write(b"".join(line[3] + b"\n" for line in out))
                    fh.flush()
                    os.fsync(fh.fileno())
            return len(out)

    # ---- draining

    def pending(self) -> int:
        """Events in the spool not yet acknowledged (reads the file; 0 when there is none)."""
        sent = self.sent()
        return sum(1 for line in self._lines() if line[2] > sent.get(line[1], -1))

    def has_data(self) -> bool:
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    async def drain(
        self, send: Sender, deadline: float | None, *, should_stop: Callable[[], bool] = lambda: False
    ) -> int:
        """Send every unsent line in order, :data:`DRAIN_BATCH` at a time; the bookkeeping is
        saved after each acknowledged batch and the file truncated once all is sent. Returns
        the events sent. ``should_stop()`` is asked between batches (a time budget)."""
        total = 0
        while not should_stop():
            with locked(self.lock_path, deadline):
                sent = self.sent()
                batch = [line for line in self._lines() if line[2] > sent.get(line[1], -1)][:DRAIN_BATCH]
                if not batch:
                    if self.has_data():
                        os.truncate(self.path, 0)
                    return total
                await send(batch)
                for _, ctx, seq, _ in batch:
                    sent[ctx] = max(sent.get(ctx, -1), seq)
                self._save_sent(sent)
                total += len(batch)
        return total

    def _lines(self) -> list[Line]:
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        out: list[Line] = []
        for raw in data.split(b"\n")[:-1]:  # the part after the last newline is not committed
            parsed = _parse(raw)
            if parsed is not None:
                out.append(parsed)
        return out


def _parse(raw: bytes) -> Line | None:
    try:
        event = json.loads(raw)
        return (str(event["type"]), str(event["context_id"]), int(event["seq"]), raw)
    except (ValueError, KeyError, TypeError):
        return None


def _cut_partial_tail(fh: Any) -> None:
    size = fh.seek(0, os.SEEK_END)
    if size == 0:
        return
    fh.seek(size - 1)
    if fh.read(1) == b"\n":
        return
    pos = size
    while pos > 0:  # back to the last newline
        step = min(65536, pos)
        fh.seek(pos - step)
        chunk = fh.read(step)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            fh.truncate(pos - step + nl + 1)
            return
        pos -= step
    fh.truncate(0)


def _last_line(fh: Any) -> Line | None:
    size = fh.seek(0, os.SEEK_END)
    if size == 0:
        return None
    pos, tail = size, b""
    while pos > 0:
        step = min(65536, pos)
        fh.seek(pos - step)
        tail = fh.read(step) + tail
        pos -= step
        nl = tail.rfind(b"\n", 0, len(tail) - 1)
        if nl >= 0:
            return _parse(tail[nl + 1 : -1])
    return _parse(tail[:-1])
