"""Play a Claude Code transcript forward through the hook, the way Claude Code calls it.

Used by the hook's tests and by ``bench/hook_check.py`` / ``bench/bench_hook.py``: the
records of a finished transcript are appended, in order and byte for byte, to a fresh
transcript file, and at each point where Claude Code would run a hook the hook command runs
with the JSON Claude Code sends. When each hook runs: docs/DEVELOPMENT.md "The transcript player".
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


def _obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


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
                meta = _obj(rec.get("compactMetadata"))
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
    msg = _obj(rec.get("message"))
    content = msg.get("content")
    if isinstance(content, str):
        return True
    return isinstance(content, list) and not any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def hook_env(hook_dir: Path, **overrides: str) -> dict[str, str]:
    """An environment for hook subprocesses: this one without its ``CG_*`` settings, plus
    ``CG_HOOK_DIR`` and ``overrides``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["CG_HOOK_DIR"] = str(hook_dir)
    env.update(overrides)
    return env


# --------------------------------------------------------------------------- synthetic sessions

#: Prohibitions a synthetic user says (the rules judge reads each as one).
RULES = (
    "Do not add new dependencies to package.json.",
    "Never push to the main branch.",
    "Don't touch the database migrations.",
    "Do not change the public API of the parser.",
    "Never delete the fixtures folder.",
    "Don't rename the config keys.",
    "Do not disable the linter.",
    "Never commit the .env file.",
)
_WORDS = ("parser", "token", "buffer", "index", "cache", "schema", "router", "handler", "queue", "render")


def synthetic_session(session_id: str, *, turns: int = 40, compact_every: int = 15, rule_every: int = 4,
                      pad_chars: int = 1500, seed: int = 0) -> list[dict[str, Any]]:
    """A deterministic Claude Code transcript (records): a rule file, ``turns`` turns (prompt,
    a Read tool call and its ``pad_chars`` result, a reply), a prohibition every ``rule_every``-th
    prompt, an AskUserQuestion answer and a queued message now and then, and a compaction
    (boundary + summary) every ``compact_every`` turns whose summary quotes every other rule
    said since the previous one and drops the rest. Synthetic text only."""
    import random

    rng = random.Random(seed)
    recs: list[dict[str, Any]] = []
    clock = [0]
    parent: list[str | None] = [None]

    def rec(kind: str, uuid: str | None, **body: Any) -> dict[str, Any]:
        clock[0] += 7
        r: dict[str, Any] = {"parentUuid": parent[0], "isSidechain": False, "userType": "external",
                             "cwd": "/home/dev/app", "sessionId": session_id, "version": "2.1.40",
                             "timestamp": f"2026-03-0{1 + clock[0] // 86400 % 9}T{clock[0] // 3600 % 24:02d}:"
                                          f"{clock[0] // 60 % 60:02d}:{clock[0] % 60:02d}.000Z",
                             "type": kind}
        if uuid is not None:
            r["uuid"] = uuid
            parent[0] = uuid
        r.update(body)
        recs.append(r)
        return r

    memory = {"type": "Project", "content": "Never commit secrets."}
    rec("attachment", f"{session_id}-att",
        attachment={"type": "nested_memory", "path": "/home/dev/app/CLAUDE.md", "content": memory})
    said: list[str] = []
    summaries = 0
    for t in range(1, turns + 1):
        words = " ".join(rng.choice(_WORDS) for _ in range(6))
        prompt = f"Turn {t}: look at the {words} code and fix the failing case."
        if t % rule_every == 0:
            rule = RULES[(t // rule_every - 1) % len(RULES)]
            prompt = f"{prompt} {rule}"
            said.append(rule)
        rec("user", f"{session_id}-u{t}", message={"role": "user", "content": prompt})
        tool = f"toolu_{session_id[:8]}_{t}"
        path = f"/home/dev/app/src/{rng.choice(_WORDS)}_{t}.py"
        rec("assistant", f"{session_id}-a{t}", message={"role": "assistant", "content": [
            {"type": "text", "text": f"Reading {path}."},
            {"type": "tool_use", "id": tool, "name": "Read", "input": {"file_path": path}}]})
        body = "".join(f"def {rng.choice(_WORDS)}_{i}(x):\n    return x + {i}\n" for i in range(pad_chars // 30 + 1))
        rec("user", f"{session_id}-r{t}", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool, "content": body[:pad_chars]}]},
            toolUseResult={"type": "text", "file": {"filePath": path}})
        if t % 7 == 3:
            q = f"toolu_{session_id[:8]}_q{t}"
            rec("assistant", f"{session_id}-aq{t}", message={"role": "assistant", "content": [
                {"type": "tool_use", "id": q, "name": "AskUserQuestion", "input": {"questions": []}}]})
            rec("user", f"{session_id}-rq{t}", message={"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": q, "content": "User has answered your questions."}]},
                toolUseResult={"answers": {
                    f"Should we rewrite the {words.split()[0]} module?": "No, keep the old module."}})
            said.append("keep the old module")
        if t % 9 == 5:
            rec("queue-operation", None, operation="enqueue", content="and never squash the history")
            rec("queue-operation", None, operation="remove")
            said.append("never squash the history")
        rec("assistant", f"{session_id}-b{t}", message={"role": "assistant", "content": [
            {"type": "text", "text": f"Fixed the {words.split()[1]} case in {path}."}]})
        if t % compact_every == 0 and t < turns:
            summaries += 1
            kept = [r for i, r in enumerate(said) if i % 2 == 0]
            quoted = "\n".join(f"- The user said: {r}" for r in kept)
            b = rec("system", f"{session_id}-cb{summaries}", subtype="compact_boundary",
                    content="Conversation compacted",
                    isMeta=False, level="info",
                    compactMetadata={"trigger": "manual" if summaries % 2 == 0 else "auto", "preTokens": 150000})
            b["logicalParentUuid"] = b["parentUuid"]
            rec("user", f"{session_id}-s{summaries}", isCompactSummary=True, isVisibleInTranscriptOnly=True,
                message={"role": "user", "content":
                         "This session is being continued from a previous conversation that ran out of context. "
                         f"Summary:\n1. Primary Request and Intent: fix the failing cases, turn by turn.\n"
                         f"2. All user messages:\n{quoted}\n3. Current work: turn {t}."})
            rec("attachment", f"{session_id}-att{summaries}", attachment={  # Claude Code re-reads CLAUDE.md
                "type": "nested_memory", "path": "/home/dev/app/CLAUDE.md",
                "content": {"type": "Project", "content": "Never commit secrets."}})
            said = []
    return recs


def write_jsonl(records: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), "utf-8")
    return path
