"""``ingest --spool``: everything the hook holds, onto the input topics.

First every session the hook follows is read up to the end of its transcript (under the
session's lock, with the judge settings its hook calls used), so records a killed or
timed-out call left unread are not lost; then every spool is sent
(:func:`stream.hook.claude_code.send_spools`, bookkeeping by seq: nothing twice).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stream.hook.claude_code import Budget, Options, Session, TranscriptMissing, send_spools
from stream.hook.spool import Spool
from stream.hook.store import Cursor, Paths, locked


@dataclass
class DrainReport:
    sessions: int = 0
    read: int = 0  # events made from records no hook call had read
    sent: int = 0
    left: int = 0
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def drain_all(settings: Any, *, connect_timeout: float = 10.0) -> DrainReport:
    """Catch every followed session up, then send every spool (module docstring)."""
    paths = Paths(settings.hook_dir)
    report = DrainReport()
    for key in paths.session_keys():
        cursor = Cursor.load(paths.cursor(key))
        if cursor is None or not cursor.transcript:
            continue
        report.sessions += 1
        session = Session(paths, cursor.session_id, Options(**cursor.options), "ingest --spool")
        try:
            with locked(paths.lock(key), None):
                cursor = Cursor.load(paths.cursor(key)) or cursor
                report.read += len(session.advance(cursor, Path(cursor.transcript), Budget(None)))
        except TranscriptMissing as exc:
            report.notes.append(f"{cursor.session_id}: {exc}")
    quick = settings.model_copy(update={"hook_connect_timeout": connect_timeout})
    report.sent, report.error = asyncio.run(send_spools(quick, paths, Budget(None), respect_backoff=False))
    report.left = sum(Spool(paths.spool_dir, p.stem).pending() for p in sorted(paths.spool_dir.glob("*.jsonl"))) \
        if paths.spool_dir.is_dir() else 0
    return report
