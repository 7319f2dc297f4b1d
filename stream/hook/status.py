"""``hooks status``: where our hooks are installed and what the hook has done (text lines)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from stream.hook.install import HOOK_EVENTS, SettingsError, installed, read_settings
from stream.hook.spool import Spool
from stream.hook.store import Cursor, Paths, read_json


def settings_files(project: Path) -> list[tuple[str, Path]]:
    return [
        ("user", Path.home() / ".claude" / "settings.json"),
        ("project", project / ".claude" / "settings.json"),
        ("local", project / ".claude" / "settings.local.json"),
    ]


def status_lines(project: Path) -> list[str]:
    from stream.settings import get_settings

    settings = get_settings()
    lines = ["Claude Code settings files:"]
    for scope, path in settings_files(project):
        try:
            data = read_settings(path)
        except SettingsError as exc:
            lines.append(f"  {scope:<8} {path}: unreadable ({exc})")
            continue
        if data is None:
            lines.append(f"  {scope:<8} {path}: no such file")
            continue
        state = installed(data)
        if all(v == "missing" for v in state.values()):
            lines.append(f"  {scope:<8} {path}: not installed")
            continue
        parts = [f"{e}{'' if v == 'ok' else ' (' + v + ')'}" for e, v in state.items()]
        complete = all(v == "ok" for v in state.values())
        lines.append(f"  {scope:<8} {path}: {'installed' if complete else 'partly installed'}: {', '.join(parts)}")
    paths = Paths(settings.hook_dir)
    lines.append(f"Hook data: {paths.root}")
    keys = paths.session_keys()
    cursors = [c for c in (Cursor.load(paths.cursor(k)) for k in keys) if c is not None]
    cursors.sort(key=lambda c: c.last_call or "")
    lines.append(f"  sessions followed: {len(cursors)}")
    for c in cursors[-5:]:
        lines.append(f"    {c.session_id}: {c.next_seq} events, {c.offset:,} bytes of {c.transcript or '?'}; "
                     f"{len(c.summaries)} compaction(s); last call {c.last_call} ({c.last_event})")
    waiting = (
        {k: Spool(paths.spool_dir, k).pending() for k in sorted(p.stem for p in paths.spool_dir.glob("*.jsonl"))}
        if paths.spool_dir.is_dir()
        else {}
    )
    waiting = {k: n for k, n in waiting.items() if n}
    where = f"Kafka {settings.bootstrap_servers}" if settings.hook_kafka else "Kafka off (CG_HOOK_KAFKA=false)"
    lines.append(f"  spool: {sum(waiting.values())} event(s) waiting in {len(waiting)} session(s) -> {where}"
                 + ("; send them with `checkpoint-guard ingest --spool`" if waiting else ""))
    mark = read_json(paths.broker_down)
    if isinstance(mark, dict) and isinstance(mark.get("until"), (int, float)) and mark["until"] > time.time():
        lines.append(f"  broker unreachable since {mark.get('since')}: {mark.get('reason')}")
    handed = []
    for k in keys:
        try:
            rows = [json.loads(line) for line in paths.compactions(k).read_text("utf-8").splitlines() if line.strip()]
        except (OSError, ValueError):
            rows = []
        handed.extend(rows)
    handed.sort(key=lambda r: r.get("at") or "")
    with_drop = [r for r in handed if r.get("dropped")]
    lines.append(f"  compactions answered: {len(handed)}; with dropped prohibitions handed back: {len(with_drop)}")
    for r in with_drop[-3:]:
        lines.append(f"    {r.get('at')}: summary {r.get('node_id')} ({r.get('trigger') or '?'}): "
                     f"{len(r.get('dropped') or [])} dropped, {len(r.get('shown') or [])} handed back")
    tail = paths.log.tail(3)
    if tail:
        lines.append(f"  last lines of {paths.log.path}:")
        lines.extend(f"    {t}" for t in tail)
    lines.append(f"Our hooks: {', '.join(e + (f' [{m}]' if m else '') for e, m, _ in HOOK_EVENTS)}")
    return lines
