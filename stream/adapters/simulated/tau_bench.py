"""tau-bench result arrays -> :class:`~stream.adapters.simulated.model.Trajectory` (one per run).

A file is a JSON array of ``{task_id, reward, info{task{instruction, actions}}, traj,
trial}``; ``traj`` is the chat: the system message is the domain policy (``wiki.md``,
where the prohibitions are), then user / assistant / tool messages (tool calls carry
real ids). The runs have no token counts: chars/4 is used.

Turns: turn 0 = the policy (plus the task text, an artifact that costs no tokens: it
is given to the simulated user, not to the agent); then every user message and every
assistant step (with the tool outputs that answer it) is a turn.

Entities — the opaque ids that make good referents — are read from tool arguments and
tool outputs: reservation ids, user ids, flight numbers and payment ids become
``entity:<kind>:<id>`` artifacts (kind ``durable_record``), one per turn that mentions
them, so an entity seen again is brought back into the live context.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stream.adapters.common import AdapterError
from stream.adapters.simulated.extract import extract_constraints
from stream.adapters.simulated.model import Format, Trajectory, TurnBuilder, Turns, estimate_tokens, step_tool_calls

_ENTITY_KEYS = {
    "reservation_id": "reservation",
    "user_id": "user",
    "flight_number": "flight",
    "payment_id": "payment",
}
_PAYMENT = re.compile(r"^(?:credit_card|gift_card|certificate|paypal)_\d+$")
_FLIGHT = re.compile(r"^[A-Z]{3}\d{3}$")
_RESERVATION = re.compile(r"^[A-Z0-9]{6}$")


def _obj(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def looks_like(data: Any) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(r, dict) and "traj" in r and "task_id" in r for r in data)
    )


def entities(value: Any, key: str | None = None) -> Iterator[tuple[str, str]]:
    """``(kind, id)`` pairs of the opaque ids in a tool argument/output value."""
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "payment_methods" and isinstance(v, dict):
                for pid in v:
                    if isinstance(pid, str) and _PAYMENT.match(pid):
                        yield "payment", pid
            yield from entities(v, k)
    elif isinstance(value, list):
        for v in value:
            yield from entities(v, key)
    elif isinstance(value, str) and value:
        if key in _ENTITY_KEYS:
            yield _ENTITY_KEYS[key], value
        elif key == "reservations" and _RESERVATION.match(value):
            yield "reservation", value
        elif _PAYMENT.match(value):
            yield "payment", value
        elif _FLIGHT.match(value) and key not in ("origin", "destination"):
            yield "flight", value


def _maybe_json(text: Any) -> Any:
    if isinstance(text, (dict, list)):
        return text
    if not isinstance(text, str):
        return None
    s = text.strip()
    if not s or s[0] not in "[{":
        return None
    try:
        return json.loads(s)
    except ValueError:
        return None


def parse(data: list[Any], path: str | Path) -> list[Trajectory | AdapterError]:
    """Every run of a tau-bench array; a broken run is returned as its error."""
    out: list[Trajectory | AdapterError] = []
    for n, run in enumerate(data):
        where = f"{Path(str(path)).as_posix()}#{n}"
        try:
            out.append(parse_run(run, where))
        except AdapterError as exc:
            out.append(exc)
    return out


def parse_run(run: dict[str, Any], source: str) -> Trajectory:
    task_id = run.get("task_id")
    if isinstance(task_id, bool) or not isinstance(task_id, (int, str)) or task_id == "":
        raise AdapterError(source, "task_id is missing or not an int/string")
    traj = run.get("traj")
    if not isinstance(traj, list) or not traj:
        raise AdapterError(source, "traj is not a non-empty list of messages")
    trial = run.get("trial")
    context_id = f"tau:{task_id}" if trial in (None, 0) else f"tau:{task_id}/trial-{trial}"

    info = _obj(run.get("info"))
    task = _obj(info.get("task"))
    instruction = task.get("instruction")
    instruction = instruction if isinstance(instruction, str) else None

    turns = Turns()
    cur: TurnBuilder | None = None

    for i, m in enumerate(traj):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise AdapterError(source, f"traj[{i}] is not an object with a 'role'")
        role = m["role"]
        content = m.get("content")
        content = content if isinstance(content, str) else ""
        mid = f"m{i:04d}"
        if role == "system":
            cur = turns.new("policy") if cur is None else cur
            cur.add("span:policy" if i == 0 else f"span:system:{mid}", "raw_span")
            for c in extract_constraints(content):
                cur.add_constraint(c)
            if instruction is not None and i == 0:
                cur.add("span:task", "raw_span")
        elif role == "user":
            cur = turns.user(mid)
        elif role == "assistant":
            cur = turns.new("step")
            for _cid, call in step_tool_calls(cur, m, mid, content, source, f"traj[{i}]"):
                fn = _obj(call.get("function"))
                args = fn.get("arguments")
                spelled = args if isinstance(args, str) else json.dumps(args)
                cur.tokens += estimate_tokens(f"{fn.get('name', '')}{spelled}")
                for kind, eid in entities(_maybe_json(args)):
                    cur.add(f"entity:{kind}:{eid}", "durable_record", referent=True)
        elif role == "tool":
            cur = turns.tool_output(m, mid, source, f"traj[{i}]")
            for kind, eid in entities(_maybe_json(content)):
                cur.add(f"entity:{kind}:{eid}", "durable_record", referent=True)
        else:
            raise AdapterError(source, f"traj[{i}] has unknown role {role!r}")
        cur.tokens += estimate_tokens(content) if content else 0
    return Trajectory(
        context_id=context_id,
        source=source,
        turns=tuple(t.build() for t in turns if not t.empty),
        meta={"format": "tau-bench", "task_id": str(task_id)},
    )


#: This module's entry in the format registry (:mod:`stream.adapters.simulated.formats`).
FORMAT = Format("tau-bench", looks_like, parse)
