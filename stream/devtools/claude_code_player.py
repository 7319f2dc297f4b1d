"""Play a Claude Code transcript forward through the hook, the way Claude Code calls it.

Used by the hook's tests and by ``bench/hook_check.py`` / ``bench/bench_hook.py``. The
records of a finished transcript are appended, in order and byte for byte, to a fresh
transcript file; at each point where Claude Code would run a hook, the hook command runs
as a subprocess with the JSON Claude Code sends (``docs/HOOK.md``):

* ``PreCompact`` (``trigger`` from the boundary's ``compactMetadata``) right before a
  ``compact_boundary`` record is written;
* ``SessionStart`` with ``source: "compact"`` right after the ``isCompactSummary`` record;
* ``Stop`` when a turn ended: before the next prompt the user types (every
  ``stop_every``-th turn), and at the end;
* ``SessionEnd`` (``reason: "other"``) at the end.

``split_records``: each record is first written without its end (a record being
written), a ``Stop`` runs, then the rest follows.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class HookCall:
    event: str
    payload: dict[str, Any]
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    line: int  # records written to the transcript when the hook ran

    @property
    def context(self) -> str | None:
        """The ``additionalContext`` printed, if any (raises if stdout is not the hook's JSON)."""
        if not self.stdout.strip():
            return None
        out = json.loads(self.stdout)
        return out["hookSpecificOutput"]["additionalContext"]


@dataclass
class Player:
    """Append ``source``'s records to ``transcript`` and run the hook at Claude Code's points."""

    source: Path
    transcript: Path
    env: dict[str, str]
    session_id: str | None = None
    stop_every: int = 1
    split_records: bool = False
    command: list[str] = field(default_factory=lambda: [sys.executable, "-m", "stream", "hook", "claude-code"])
    calls: list[HookCall] = field(default_factory=list)
    timeout: float = 120.0

    def lines(self) -> list[bytes]:
        data = self.source.read_bytes()
        out = data.split(b"\n")
        if out and out[-1] == b"":
            out.pop()
        return [line + b"\n" for line in out]  # Claude Code ends every record with a newline

    def hook(self, event: str, line: int, **fields: Any) -> HookCall:
        payload = {"session_id": self.session_id or "unknown", "transcript_path": str(self.transcript),
                   "cwd": str(self.transcript.parent), "hook_event_name": event, **fields}
        if event != "SessionStart":
            payload.setdefault("permission_mode", "default")
        t0 = time.perf_counter()
        proc = subprocess.run(self.command, input=json.dumps(payload).encode(), env=self.env, capture_output=True,
                              timeout=self.timeout)
        call = HookCall(event, payload, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                        proc.stderr.decode("utf-8", "replace"), time.perf_counter() - t0, line)
        self.calls.append(call)
        return call

    def steps(self) -> Iterator[tuple[str, int, dict[str, Any]]]:
        """``("write", i, {})`` / ``("hook", i, fields)`` in Claude Code's order (module docstring)."""
        turns = 0
        answered = False  # an assistant record since the last Stop
        for i, raw in enumerate(self.lines()):
            rec = _record(raw)
            if self.session_id is None and isinstance(rec.get("sessionId"), str):
                self.session_id = rec["sessionId"]
            if rec.get("type") == "system" and rec.get("subtype") == "compact_boundary":
                meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), dict) else {}
                trigger = meta.get("trigger") if meta.get("trigger") in ("manual", "auto") else "auto"
                yield "hook", i, {"hook_event_name": "PreCompact", "trigger": trigger,
                                  "custom_instructions": "" if trigger == "auto" else None}
            elif _is_prompt(rec) and answered:
                turns += 1
                answered = False
                if turns % self.stop_every == 0:
                    yield "hook", i, {"hook_event_name": "Stop", "stop_hook_active": False}
            yield "write", i, {}
            if rec.get("type") == "assistant":
                answered = True
            if rec.get("type") == "user" and rec.get("isCompactSummary") is True:
                yield "hook", i + 1, {"hook_event_name": "SessionStart", "source": "compact"}
        n = len(self.lines())
        yield "hook", n, {"hook_event_name": "Stop", "stop_hook_active": False}
        yield "hook", n, {"hook_event_name": "SessionEnd", "reason": "other"}

    def play(self) -> list[HookCall]:
        """Write the whole transcript, running the hook at each point; returns the calls."""
        lines = self.lines()
        self.transcript.parent.mkdir(parents=True, exist_ok=True)
        self.transcript.write_bytes(b"")
        for kind, i, fields in self.steps():
            if kind == "write":
                raw = lines[i]
                with open(self.transcript, "ab") as fh:
                    if self.split_records and len(raw) > 2:
                        half = len(raw) // 2
                        fh.write(raw[:half])
                        fh.flush()
                        self.hook("Stop", i, stop_hook_active=False)
                        fh.write(raw[half:])
                    else:
                        fh.write(raw)
            else:
                fields = dict(fields)
                event = fields.pop("hook_event_name")
                self.hook(event, i, **fields)
        return self.calls


def _record(raw: bytes) -> dict[str, Any]:
    try:
        rec = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return {}
    return rec if isinstance(rec, dict) else {}


def _is_prompt(rec: dict[str, Any]) -> bool:
    """A prompt the user typed: a user record that is not meta, not a summary, not tool results."""
    if rec.get("type") != "user" or rec.get("isMeta") or rec.get("isCompactSummary"):
        return False
    msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
    content = msg.get("content")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def hook_env(hook_dir: Path, **overrides: str) -> dict[str, str]:
    """An environment for hook subprocesses: this one without its ``CG_*`` settings, plus
    ``CG_HOOK_DIR`` and ``overrides``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["CG_HOOK_DIR"] = str(hook_dir)
    env.update(overrides)
    return env
