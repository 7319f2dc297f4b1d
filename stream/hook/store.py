"""Where the hook keeps its state, and the file primitives that keep it whole.

Layout under ``CG_HOOK_DIR`` (a session's files are named by :func:`session_key`)::

    sessions/<key>/cursor.json        Cursor: byte offset, prefix fingerprint, next seq, node index
    sessions/<key>/adapter.pickle     the adapter's state after the cursor (the fast path)
    sessions/<key>/compactions.jsonl  one line per compaction handled (what was handed back)
    sessions/<key>/lock               one hook call per session at a time
    spool/<key>.jsonl, .json, .lock   events not yet acknowledged by Kafka (:mod:`.spool`)
    hook.log                          one line per failure or notable action (rotated at 1 MiB)
    broker-down                       until when an unreachable broker is not tried again

More (the module notes): docs/HOOK.md, section ``stream/hook/store.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: Bytes of each fingerprint window, and how many windows sample the prefix.
_WINDOW = 4096
_WINDOWS = 16
#: The log is rotated (one previous file kept) past this size.
LOG_MAX_BYTES = 1 << 20
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


class LockTimeout(TimeoutError):
    """Another process held the lock until the deadline."""


def session_key(session_id: str) -> str:
    """A file name for a session id: the id itself when it is a plain name (Claude Code's are
    UUIDs), else its readable part and a hash (never a path separator, never empty)."""
    if session_id and len(session_id) <= 100 and not _SAFE.search(session_id) and session_id not in (".", ".."):
        return session_id
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{_SAFE.sub('_', session_id)[:40]}-{digest}"


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` in one step (temp file in the same directory, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def read_json(path: Path) -> Any:
    """The JSON value in ``path``, or None when it is missing or unreadable."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None


@contextmanager
def locked(path: Path, deadline: float | None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if needed) until the block ends.

    ``deadline``: a ``time.monotonic()`` value after which :class:`LockTimeout` is raised;
    None waits as long as it takes. The lock dies with the process (kernel lock).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while not _try_lock(fd):
            if deadline is not None and time.monotonic() >= deadline:
                raise LockTimeout(f"{path} is held by another process")
            time.sleep(0.02)
        try:
            yield
        finally:
            _unlock(fd)
    finally:
        os.close(fd)


try:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)

except ImportError:  # pragma: no cover - Windows
    import msvcrt

    def _try_lock(fd: int) -> bool:
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined]  # Windows only
            return True
        except OSError:
            return False

    def _unlock(fd: int) -> None:
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined]  # Windows only


def fingerprint(path: Path, offset: int) -> str:
    """A fingerprint of the first ``offset`` bytes of ``path``: 16 evenly spaced 4 KiB windows
    and the 4 KiB before ``offset`` (constant cost; a rewrite that moves any line shows).
    Raises OSError when the file cannot be read."""
    h = hashlib.sha256(str(offset).encode())
    if offset > 0:
        with open(path, "rb") as fh:
            starts = {min(i * offset // _WINDOWS, max(0, offset - _WINDOW)) for i in range(_WINDOWS)}
            starts.add(max(0, offset - _WINDOW))
            for start in sorted(starts):
                fh.seek(start)
                h.update(fh.read(min(_WINDOW, offset - start)))
    return h.hexdigest()[:32]


def code_version() -> str:
    """Identity of the code whose objects the adapter pickle holds: the package version and the
    size and mtime of every module of ``stream/adapters`` and ``stream/hook`` (a stat each)."""
    from stream import __version__

    root = Path(__file__).resolve().parent.parent
    h = hashlib.sha256(__version__.encode())
    for folder in ("adapters", "hook"):
        for p in sorted((root / folder).glob("*.py")):
            st = p.stat()
            h.update(f"{p.name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


class HookLog:
    """``hook.log``: one line per call that failed or did something worth knowing, never stdout."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def line(self, session: str | None, event: str | None, message: str) -> None:
        text = " ".join(str(message).split())
        row = f"{now_iso()} session={session or '-'} event={event or '-'} {text}\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                if self.path.stat().st_size > LOG_MAX_BYTES:
                    os.replace(self.path, self.path.with_name(self.path.name + ".1"))
            except FileNotFoundError:
                pass
            with open(self.path, "a", encoding="utf-8") as fh:
                fh.write(row)
        except OSError:
            pass  # a hook that cannot log still must not fail

    def tail(self, n: int = 5) -> list[str]:
        try:
            return self.path.read_text("utf-8", errors="replace").splitlines()[-n:]
        except OSError:
            return []


@dataclass
class Cursor:
    """What a session's hook calls have done so far (``cursor.json``).

    ``offset``: bytes of the transcript read (a line boundary); ``fingerprint`` of them.
    ``context_id`` / ``next_seq``: the context of the events and the seq of the next one;
    ``digest``: a hash chained over every emitted event id, so a re-derivation can tell
    whether it reproduced what was sent. ``nodes``: the summary checkpoints emitted
    (node id -> children, raw constraints with the time they were said, carried keys),
    enough to compute a compaction's dropped set from the events alone. ``summaries``:
    their ids in order; ``handed_back``: those a ``SessionStart`` already answered for.
    ``trigger``: the last ``PreCompact`` trigger not yet used. ``options``: the judge
    settings of the calls (a catch-up by ``ingest --spool`` uses the same).
    """

    session_id: str
    transcript: str
    offset: int = 0
    fingerprint: str = ""
    context_id: str | None = None
    next_seq: int = 0
    digest: str = ""
    code: str = ""
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    summaries: list[str] = field(default_factory=list)
    handed_back: list[str] = field(default_factory=list)
    trigger: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    records: int = 0
    calls: int = 0
    last_call: str | None = None
    last_event: str | None = None
    rewrites: int = 0

    @classmethod
    def load(cls, path: Path) -> Cursor | None:
        raw = read_json(path)
        if not isinstance(raw, dict):
            return None
        try:
            return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})
        except TypeError:
            return None

    def save(self, path: Path) -> None:
        atomic_write(path, json.dumps(asdict(self), ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def chain(digest: str, event_ids: list[str]) -> str:
    """The emitted-ids digest after ``event_ids`` (see :class:`Cursor`)."""
    for eid in event_ids:
        digest = hashlib.sha256(f"{digest}\x1f{eid}".encode()).hexdigest()[:32]
    return digest


class Paths:
    """The files of one hook directory (module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).expanduser()
        self.log = HookLog(self.root / "hook.log")
        self.broker_down = self.root / "broker-down"
        self.spool_dir = self.root / "spool"
        self.sessions_dir = self.root / "sessions"
        self.installs_dir = self.root / "installs"

    def session(self, key: str) -> Path:
        return self.sessions_dir / key

    def cursor(self, key: str) -> Path:
        return self.session(key) / "cursor.json"

    def adapter(self, key: str) -> Path:
        return self.session(key) / "adapter.pickle"

    def lock(self, key: str) -> Path:
        return self.session(key) / "lock"

    def compactions(self, key: str) -> Path:
        return self.session(key) / "compactions.jsonl"

    def session_keys(self) -> list[str]:
        try:
            return sorted(p.name for p in self.sessions_dir.iterdir() if (p / "cursor.json").exists())
        except OSError:
            return []
