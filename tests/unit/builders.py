"""Builders for test data: input events as dicts, JSONL lines, and alert projections.

Tests describe events with ``make_checkpoint(**overrides)`` / ``make_artifact(**overrides)``
(plus the ``admit`` / ``evict`` shorthands), turn them into JSON lines with
``as_lines`` and drive the engine through :func:`stream.offline.replay.replay_lines` (the same
path as ``python -m stream replay``) with :func:`run`.

Alerts are compared through :func:`project`: the fields a behaviour is about (rule,
status, node id, the rule's sets, gap, trigger event id), in emission order. The
expected side is written with :func:`orphaned`, :func:`dropped`, :func:`non_idempotent`
and :func:`gap`, which fill every other projected field with the value it must have for
that rule — so a projection comparison is exact, not a subset check.

Every event id is explicit or drawn from a per-builder counter; tests that assert a
trigger pass the ``event_id`` themselves.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from typing import Any

from stream.offline.replay import ReplayResult, replay_lines

CTX = "ctx-1"

#: Pass as an override to delete a field from the built event (a "missing" field).
OMIT: Any = object()

_ids = itertools.count(1)


def _next_event_id(prefix: str) -> str:
    return f"{prefix}-{next(_ids)}"


def _apply_overrides(event: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    for key, value in overrides.items():
        if value is OMIT:
            event.pop(key, None)
        else:
            event[key] = value
    return event


def make_checkpoint(**overrides: Any) -> dict[str, Any]:
    """A valid checkpoint event dict (a leaf ``n1`` in ``ctx-1`` with nothing in it)."""
    event: dict[str, Any] = {
        "type": "checkpoint",
        "event_id": _next_event_id("ck"),
        "context_id": CTX,
        "node_id": "n1",
        "level": "leaf",
        "children": [],
        "referents": [],
        "negative_constraints": [],
        "raw_negative_constraints": [],
    }
    return _apply_overrides(event, overrides)


def make_artifact(**overrides: Any) -> dict[str, Any]:
    """A valid artifact event dict (``a1`` admitted to the live tier of ``ctx-1``)."""
    event: dict[str, Any] = {
        "type": "artifact",
        "event_id": _next_event_id("art"),
        "context_id": CTX,
        "artifact_id": "a1",
        "op": "admitted",
        "tier": "live",
    }
    return _apply_overrides(event, overrides)


def admit(artifact_id: str, tier: str = "live", **overrides: Any) -> dict[str, Any]:
    return make_artifact(**{"artifact_id": artifact_id, "op": "admitted", "tier": tier, **overrides})


def evict(artifact_id: str, tier: str = "live", **overrides: Any) -> dict[str, Any]:
    return make_artifact(**{"artifact_id": artifact_id, "op": "evicted", "tier": tier, **overrides})


def as_line(event: dict[str, Any] | bytes | str) -> bytes:
    """One JSON line (bytes, no newline). Bytes and str pass through as given."""
    if isinstance(event, bytes):
        return event
    if isinstance(event, str):
        return event.encode("utf-8")
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def as_lines(*events: dict[str, Any] | bytes | str) -> list[bytes]:
    """JSON lines (bytes) for ``replay_lines``."""
    return [as_line(e) for e in events]


def as_jsonl(*events: dict[str, Any] | bytes | str) -> bytes:
    """A JSONL file body: every line followed by ``\\n``."""
    return b"".join(as_line(e) + b"\n" for e in events)


def run(*events: dict[str, Any] | bytes | str, seq_gap_limit: int = 1000, since: bool = False) -> ReplayResult:
    """Replay the events (in order) through a fresh engine."""
    return replay_lines(as_lines(*events), seq_gap_limit=seq_gap_limit, since=since)


# ----------------------------------------------------------------------- projections


def project(alerts: Iterable[Any]) -> list[dict[str, Any]]:
    """The behaviour-relevant fields of each alert (a record, or the engine's value), in
    emission order."""
    alerts = [a if isinstance(a, dict) else a.to_record() for a in alerts]
    return [
        {
            "rule": a["rule"],
            "status": a["status"],
            "node_id": a["node_id"],
            "orphans": a["orphans"],
            "previous_orphans": a["previous_orphans"],
            "missing_constraints": a["missing_constraints"],
            "gap": a["gap"],
            "trigger": a["trigger"]["event_id"],
        }
        for a in alerts
    ]


def _expected(rule: str, status: str, node_id: str | None, trigger: str, **sets: Any) -> dict[str, Any]:
    return {
        "rule": rule,
        "status": status,
        "node_id": node_id,
        "orphans": sets.get("orphans", []),
        "previous_orphans": sets.get("previous_orphans"),
        "missing_constraints": sets.get("missing_constraints", []),
        "gap": sets.get("gap"),
        "trigger": trigger,
    }


def orphaned(status: str, node_id: str, orphans: list[str], *, trigger: str) -> dict[str, Any]:
    return _expected("orphaned_referent", status, node_id, trigger, orphans=orphans)


def dropped(status: str, node_id: str, missing: list[str], *, trigger: str) -> dict[str, Any]:
    return _expected("negative_constraint_dropped", status, node_id, trigger, missing_constraints=missing)


def non_idempotent(node_id: str, orphans: list[str], previous_orphans: list[str], *, trigger: str) -> dict[str, Any]:
    return _expected(
        "non_idempotent", "open", node_id, trigger, orphans=orphans, previous_orphans=previous_orphans
    )


def gap(first: int, last: int, *, trigger: str) -> dict[str, Any]:
    return _expected("sequence_gap", "open", None, trigger, gap=[first, last])


def verdicts_of(result: ReplayResult) -> list[tuple[str, str, bool, str]]:
    """``(node_id, verdict, authoritative, trigger event id)`` per applied checkpoint."""
    return [(v["node_id"], v["verdict"], v["authoritative"], v["trigger"]["event_id"]) for v in result.verdicts]
