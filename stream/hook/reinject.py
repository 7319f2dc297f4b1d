"""What the hook hands back after a compaction: the prohibitions the new summary dropped.

The dropped set of a summary node is the engine's own ``negative_constraint_dropped`` set
(DESIGN.md §4), computed from the events the hook emitted: ``required(n)`` = the raw
constraint keys of ``n`` and of every node reachable through ``children`` (every version),
minus ``carried(n)`` = the keys of its latest ``negative_constraints``. So the text
Claude Code gets after a compaction names exactly what the alert names.

:func:`record` keeps, per summary checkpoint, what that needs (raw constraint objects
with the time they were said, children, carried keys) in the cursor's node index;
:func:`dropped` computes the set; :func:`context_text` writes it as the hook's
``additionalContext``: the rules verbatim, where each came from and when, most recent
first, at most ``CG_HOOK_CONTEXT_CHARS`` characters (what does not fit is counted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

#: How a channel is named in the text handed back.
CHANNEL_WORDS = {
    "typed": "typed by the user",
    "queued": "typed by the user while the agent worked",
    "answer": "the user's answer",
    "rejection": "the user's words when rejecting a tool call",
    "command_args": "arguments of a slash command the user ran",
    "plan": "the plan the user approved",
    "rule_file": "a rule file",
    "system": "the system prompt",
}
#: Longest single rule shown, characters (a longer one ends in "…").
MAX_RULE_CHARS = 800
_QUESTION_CHARS = 160


def record(nodes: dict[str, dict[str, Any]], event: Mapping[str, Any], origins: Mapping[int, list[Any]]) -> None:
    """Add one summary checkpoint event to the node index (``origins``: transcript line -> the
    adapter's candidates read from it, :func:`candidate_origins`; they give ``at`` and ``question``)."""
    node = nodes.setdefault(event["node_id"], {"children": [], "raw": {}, "carried": []})
    for child in event.get("children") or []:
        if child not in node["children"]:
            node["children"].append(child)
    for c in event.get("raw_negative_constraints") or []:
        if isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"] not in node["raw"]:
            kept = {k: c[k] for k in ("text", "source", "x_channel", "line") if k in c}
            line = c.get("line")
            if isinstance(line, int) and origins.get(line):
                kept.update(_said(origins[line], str(c.get("text", ""))))
            node["raw"][c["id"]] = kept
    node["carried"] = sorted(
        {c["id"] for c in event.get("negative_constraints") or [] if isinstance(c, dict) and "id" in c}
    )
    node["seq"] = event.get("seq")
    node["at"] = event.get("occurred_at")


def dropped(nodes: Mapping[str, Mapping[str, Any]], node_id: str) -> dict[str, dict[str, Any]]:
    """``required(node) − carried(node)``: constraint id -> its raw object (with ``at`` when known)."""
    if node_id not in nodes:
        return {}
    required: dict[str, dict[str, Any]] = {}
    seen: set[str] = set()
    stack = [node_id]
    while stack:
        nid = stack.pop()
        if nid in seen or nid not in nodes:
            continue
        seen.add(nid)
        for cid, raw in nodes[nid]["raw"].items():
            required.setdefault(cid, raw)
        stack.extend(nodes[nid]["children"])
    carried = set(nodes[node_id]["carried"])
    return {cid: raw for cid, raw in required.items() if cid not in carried}


def ordered(missing: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, Mapping[str, Any]]]:
    """Most recent first: by the time said, then by transcript line (later first), then id."""
    return sorted(
        missing.items(), key=lambda kv: (str(kv[1].get("at") or ""), kv[1].get("line") or 0, kv[0]), reverse=True
    )


def context_text(missing: Mapping[str, Mapping[str, Any]], *, trigger: str | None, limit: int) -> tuple[str, list[str]]:
    """The ``additionalContext`` for a dropped set, and the ids it shows (all, unless ``limit`` cut).

    Empty text when nothing was dropped. Factual wording (Claude Code's guidance: context
    written as out-of-band commands can trip prompt-injection defences).
    """
    if not missing:
        return "", []
    items = ordered(missing)
    how = f" ({trigger} compaction)" if trigger in ("auto", "manual") else ""
    head = (f"checkpoint-guard: the summary written at this compaction{how} does not restate "
            f"{_count(len(items))} the user gave earlier in this session. Nothing revoked "
            f"{'them' if len(items) > 1 else 'it'}, so {'they are' if len(items) > 1 else 'it is'} still in force. "
            "Verbatim, most recent first:")
    lines = [head]
    shown: list[str] = []
    used = len(head)
    for n, (cid, raw) in enumerate(items):
        entry = f"- {_quoted(str(raw.get('text', '')))} ({_origin(raw)})"
        rest = len(items) - n - 1
        tail = f"\n(and {rest} more not shown; run `checkpoint-guard hooks status`)" if rest else ""
        if used + 1 + len(entry) + len(tail) > limit and shown:
            lines.append(f"(and {len(items) - n} more not shown; run `checkpoint-guard hooks status`)")
            break
        if used + 1 + len(entry) > limit:  # even the first does not fit: shorten it
            entry = entry[: max(0, limit - used - 2)] + "…"
        lines.append(entry)
        used += 1 + len(entry)
        shown.append(cid)
    return "\n".join(lines)[:limit], shown


def _count(n: int) -> str:
    return "one standing instruction" if n == 1 else f"{n} standing instructions"


def _quoted(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > MAX_RULE_CHARS:
        text = text[: MAX_RULE_CHARS - 1] + "…"
    return f"\"{text}\""


def _origin(raw: Mapping[str, Any]) -> str:
    channel = str(raw.get("x_channel") or raw.get("source") or "user")
    words = CHANNEL_WORDS.get(channel, channel)
    if channel == "answer" and isinstance(raw.get("question"), str):
        q = " ".join(raw["question"].split())
        q = q if len(q) <= _QUESTION_CHARS else q[: _QUESTION_CHARS - 1] + "…"
        words = f"{words} to \"{q}\""
    when = _when(raw.get("at"))
    return f"{words}, {when}" if when else words


def _when(at: Any) -> str | None:
    if not isinstance(at, str):
        return None
    try:
        t = datetime.fromisoformat(at.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if t.utcoffset() is None:
        return t.isoformat(timespec="minutes")
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def candidate_origins(candidates: Iterable[Any]) -> dict[int, list[Any]]:
    """Transcript line -> the :class:`~stream.adapters.compaction.judge.Candidate` values read from it
    (``origin == ("line", N)``), in order."""
    out: dict[int, list[Any]] = {}
    for c in candidates:
        origin = getattr(c, "origin", None)
        if isinstance(origin, tuple) and len(origin) == 2 and origin[0] == "line" and isinstance(origin[1], int):
            out.setdefault(origin[1], []).append(c)
    return out


def _said(candidates: list[Any], rule: str) -> dict[str, str]:
    """``at`` / ``question`` of the candidate that states ``rule`` (an instruction's text is a
    substring of its candidate's, whitespace collapsed), else of the line's first candidate."""
    want = " ".join(rule.split())
    pick = next((c for c in candidates if want and want in " ".join(str(c.text).split())), candidates[0])
    return {k: v for k, v in (("at", pick.at), ("question", pick.question)) if isinstance(v, str) and v}
