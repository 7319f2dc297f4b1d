"""``hooks install|uninstall|status``: our entries in Claude Code's settings files.

Claude Code reads hooks from ``~/.claude/settings.json`` (user), ``.claude/settings.json``
(project, committed) and ``.claude/settings.local.json`` (project, not committed), as
``{"hooks": {Event: [{"matcher": ..., "hooks": [{"type": "command", "command": ...,
"timeout": s, "async": bool}]}]}}``. Ours (:data:`HOOK_EVENTS`): ``PreCompact`` (both
triggers), ``SessionStart`` matcher ``compact``, ``Stop`` (async: never delays a turn)
and ``SessionEnd``. A handler is ours when its command runs ``checkpoint-guard ... hook
claude-code`` (:func:`is_ours`); nobody else's entry is ever changed.

Install adds a matcher group of its own per event (or updates our handler in place),
and writes nothing when everything is already there (install twice = once). The first
install keeps the file's original bytes under ``CG_HOOK_DIR/installs/``; uninstall puts
them back byte for byte when nobody changed the file since (deleting it, and the
``.claude`` directory, if install created them), else removes only our handlers.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stream.hook.store import atomic_write, read_json

#: (event, matcher or None for every occurrence, extra handler fields). Why these: docs/HOOK.md.
HOOK_EVENTS: tuple[tuple[str, str | None, dict[str, Any]], ...] = (
    ("PreCompact", None, {"timeout": 10}),
    ("SessionStart", "compact", {"timeout": 10}),
    ("Stop", None, {"timeout": 30, "async": True}),
    ("SessionEnd", None, {"timeout": 5}),
)
#: The hook's budget with a model judge (one request per compaction), and the margin Claude Code's
#: timeout keeps above a call's budget.
MODEL_BUDGET = 90.0
_TIMEOUT_MARGIN = 30
_OURS = re.compile(r"(checkpoint-guard|-m\s+stream)\b.*\bhook\s+claude-code\b", re.DOTALL)


class SettingsError(ValueError):
    """A settings file we must not touch (not JSON, not an object, hooks of another shape)."""


def default_command(extra_args: str = "") -> str:
    """The command line of the hook for this installation: its ``checkpoint-guard`` executable by
    absolute path (Claude Code's PATH may not have it), else this interpreter with ``-m stream``."""
    exe = Path(sys.executable).with_name("checkpoint-guard")
    base = shlex.quote(str(exe)) if exe.is_file() else f"{shlex.quote(sys.executable)} -m stream"
    return f"{base} hook claude-code{(' ' + extra_args) if extra_args else ''}"


def handler(command: str, extra: dict[str, Any], budget: float | None = None) -> dict[str, Any]:
    """One hook handler; ``budget``: a call's budget when it is not the default (the timeout then exceeds it)."""
    out = {"type": "command", "command": command, **extra}
    if budget is not None:
        out["timeout"] = max(int(out.get("timeout", 0)), int(budget) + _TIMEOUT_MARGIN)
    return out


def hook_entries(command: str, budget: float | None = None) -> dict[str, list[dict[str, Any]]]:
    """Our hooks as the ``hooks`` object of a settings file or a plugin's ``hooks/hooks.json``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for event, matcher, extra in HOOK_EVENTS:
        group: dict[str, Any] = {} if matcher is None else {"matcher": matcher}
        group["hooks"] = [handler(command, extra, budget)]
        out.setdefault(event, []).append(group)
    return out


def is_ours(handler: Any) -> bool:
    return isinstance(handler, dict) and handler.get("type") == "command" and isinstance(handler.get("command"), str) \
        and bool(_OURS.search(handler["command"]))


@dataclass
class Report:
    path: Path
    changes: list[str] = field(default_factory=list)
    note: str = ""
    written: bool = False


def _describe(event: str, matcher: str | None, h: dict[str, Any]) -> str:
    where = event + (f" [{matcher}]" if matcher else "")
    bits = [f"timeout {h['timeout']} s"] if "timeout" in h else []
    if h.get("async"):
        bits.append("async")
    return f"{where:<24} {h['command']}" + (f"  ({', '.join(bits)})" if bits else "")


def plan_install(data: dict[str, Any], command: str, budget: float | None = None) -> tuple[dict[str, Any], list[str]]:
    """``data`` with our handlers present and current; the changes as ``+``/``~`` lines."""
    new = copy.deepcopy(data)
    hooks = new.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f"'hooks' is a {type(hooks).__name__}, not an object")
    changes: list[str] = []
    for event, matcher, extra in HOOK_EVENTS:
        want = handler(command, extra, budget)
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise SettingsError(f"'hooks.{event}' is a {type(groups).__name__}, not a list")
        found = False
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            if group.get("matcher") != matcher and not (matcher is None and group.get("matcher") in ("", "*")):
                continue
            for i, h in enumerate(group["hooks"]):
                if is_ours(h):
                    found = True
                    if h != want:
                        group["hooks"][i] = want
                        changes.append("~ " + _describe(event, matcher, want))
                    break
            if found:
                break
        if not found:
            groups.append({**({} if matcher is None else {"matcher": matcher}), "hooks": [want]})
            changes.append("+ " + _describe(event, matcher, want))
    return (new if changes else data), changes


def plan_uninstall(data: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``data`` without our handlers (emptied groups and events removed); the changes as ``-`` lines."""
    new = copy.deepcopy(data)
    hooks = new.get("hooks")
    if not isinstance(hooks, dict):
        return data, []
    changes: list[str] = []
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            continue
        kept_groups = []
        for group in groups:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                ours = [h for h in group["hooks"] if is_ours(h)]
                for h in ours:
                    changes.append("- " + _describe(event, group.get("matcher"), h))
                group["hooks"] = [h for h in group["hooks"] if not is_ours(h)]
                if ours and not group["hooks"]:
                    continue
            kept_groups.append(group)
        if kept_groups or not groups:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if changes and not hooks:
        del new["hooks"]
    return (new if changes else data), changes


def installed(data: Any, command: str | None = None) -> dict[str, str]:
    """Event -> ``"ok"`` / ``"different"`` (ours, other settings) / ``"missing"`` for each of our hooks."""
    out: dict[str, str] = {}
    hooks = data.get("hooks") if isinstance(data, dict) else None
    for event, matcher, extra in HOOK_EVENTS:
        state = "missing"
        for group in (hooks or {}).get(event, []) if isinstance(hooks, dict) else []:
            if isinstance(group, dict) and isinstance(group.get("hooks"), list):
                for h in group["hooks"]:
                    if is_ours(h):
                        same = (
                            (command is None or h.get("command") == command)
                            and h.get("async") == extra.get("async")
                            and (group.get("matcher") or None) == matcher
                        )
                        state = "ok" if same else "different"
        out[event] = state
    return out


# --------------------------------------------------------------------------- files


def _load(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    if not raw.strip():
        return raw, {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"{path} is not valid JSON ({exc}); fix it first, nothing was changed") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{path} holds a JSON {type(data).__name__}, not an object; nothing was changed")
    return raw, data


def _dump(data: dict[str, Any], original: bytes | None) -> bytes:
    indent = 2
    if original:
        m = re.search(rb"\n([ \t]+)\"", original)
        if m:
            ws = m.group(1)
            indent = "\t" if ws.startswith(b"\t") else len(ws)  # type: ignore[assignment]
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    return (text + ("\n" if original is None or original.endswith(b"\n") else "")).encode("utf-8")


def _sha(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def _record_path(records: Path, path: Path) -> Path:
    return records / (hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:20] + ".json")


def install(path: Path, command: str, records: Path, budget: float | None = None) -> Report:
    """Merge our hooks into ``path`` (module docstring). Raises :class:`SettingsError`."""
    report = Report(path)
    original, data = _load(path)
    new, report.changes = plan_install(data, command, budget)
    if not report.changes:
        report.note = "already installed; nothing changed"
        return report
    out = _dump(new, original)
    rec_path = _record_path(records, path)
    rec = read_json(rec_path)
    if not (isinstance(rec, dict) and rec.get("written") == _sha(original)):  # first install (or changed since)
        created = [str(p) for p in (path.parent,) if not p.exists()]
        rec = {"path": str(path), "existed": original is not None,
               "original": base64.b64encode(original).decode() if original is not None else None,
               "created_dirs": created}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, out)
    rec["written"] = _sha(out)
    atomic_write(rec_path, json.dumps(rec).encode())
    report.written = True
    report.note = "created" if original is None else "updated"
    return report


def uninstall(path: Path, records: Path) -> Report:
    """Take our hooks out of ``path``: the original bytes back when nobody changed it since install."""
    report = Report(path)
    original, data = _load(path)
    rec_path = _record_path(records, path)
    rec = read_json(rec_path)
    _, report.changes = plan_uninstall(data)
    if isinstance(rec, dict) and original is not None and rec.get("written") == _sha(original):
        if rec.get("existed"):
            atomic_write(path, base64.b64decode(rec["original"]))
            report.note = "restored byte for byte to its state before install"
        else:
            path.unlink()
            for d in rec.get("created_dirs") or []:
                try:
                    Path(d).rmdir()  # only if empty
                except OSError:
                    pass
            report.note = "removed (install had created it)"
        rec_path.unlink(missing_ok=True)
        report.written = True
        return report
    if not report.changes:
        report.note = (
            "no checkpoint-guard hooks in it; nothing changed"
            if original is not None
            else "does not exist; nothing to do"
        )
        return report
    new, _ = plan_uninstall(data)
    atomic_write(path, _dump(new, original))
    rec_path.unlink(missing_ok=True)
    report.written = True
    report.note = "removed our hooks only (the file changed since install, so the rest stays as it is now)"
    return report


def read_settings(path: Path) -> dict[str, Any] | None:
    """The settings object of ``path`` for ``status`` (None when missing; raises :class:`SettingsError`)."""
    original, data = _load(path)
    return None if original is None else data
