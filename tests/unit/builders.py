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


# ----------------------------------------------------------------------------- compaction-log fixtures

NCD = "negative_constraint_dropped"
ORPHAN = "orphaned_referent"
UNVERIFIABLE = "unverifiable_checkpoint"
BETA = "7b2e0000-0000-4000-8000-0000000000b2"
COPIES = "8c3e0000-0000-4000-8000-0000000000c3"
AGENT_SERVER = "9d4e00000000400080000000000000d4"
EVERY = "e4c90000-0000-4000-8000-0000000000c9"

#: The compaction-log fixtures (tests/fixtures/compaction_logs, its README): fixture -> (format, paths in
#: that folder, the context of its alerts, the exact alerts as (rule, status, node, set)).
COMPACTION_LOGS: dict[str, tuple[str, list[str], str, list[tuple[str, str, str, list[str] | None]]]] = {
    "folded-summary": (
        "openhands",
        ["openhands/folded-summary"],
        "oh:folded-summary",
        [
            (NCD, "open", "00000001-0000-4000-8000-000000000009-summary", ["prohibition:d00a556c5c2a"]),
            (NCD, "open", "root:oh:folded-summary", ["prohibition:d00a556c5c2a"]),
        ],
    ),
    "orphaned-file": (
        "openhands",
        ["openhands/orphaned-file"],
        "oh:orphaned-file",
        [
            (ORPHAN, "open", "00000002-0000-4000-8000-000000000007-summary", ["file:/workspace/app/settings.py"]),
        ],
    ),
    "dropped-prohibition": (
        "claude-code",
        ["claude-code/cc-dropped-prohibition.jsonl"],
        "cc:cc-dropped-prohibition",
        [
            (NCD, "open", "s-1", ["prohibition:83155fae68cd"]),
            (NCD, "open", "root:cc:cc-dropped-prohibition", ["prohibition:83155fae68cd"]),
        ],
    ),
    "paraphrased-prohibition": ("openhands", ["openhands/paraphrased-prohibition"], "oh:paraphrased-prohibition", []),
    "broken-parent-link": (
        "claude-code",
        ["claude-code/cc-broken-parent-link.jsonl"],
        "cc:cc-broken-parent-link",
        [
            (NCD, "open", "s-2", ["prohibition:5b3e9627b389"]),
            (NCD, "open", "root:cc:cc-broken-parent-link", ["prohibition:5b3e9627b389"]),
        ],
    ),
    "opaque-summary": (
        "openhands",
        ["openhands/opaque-summary"],
        "oh:opaque-summary",
        [
            (NCD, "open", "00000006-0000-4000-8000-000000000008-summary", ["prohibition:3be5474d91a9"]),
            (UNVERIFIABLE, "open", "00000006-0000-4000-8000-000000000008-summary", None),
            (NCD, "open", "root:oh:opaque-summary", ["prohibition:3be5474d91a9"]),
        ],
    ),
    "two-sessions-named-full": (
        "claude-code",
        ["claude-code/sessions/alpha/full.jsonl", "claude-code/sessions/beta/full.jsonl"],
        f"cc:{BETA}",
        [
            (NCD, "open", "beta-s1", ["prohibition:b7b68cdcd5be"]),
            (NCD, "open", f"root:cc:{BETA}", ["prohibition:b7b68cdcd5be"]),
        ],
    ),
    "growing-copies": (
        "claude-code",
        ["claude-code/copies/1/full.jsonl", "claude-code/copies/2/full.jsonl"],
        f"cc:{COPIES}",
        [
            (NCD, "open", "c-s2", ["prohibition:03e812bbe566"]),
            (NCD, "open", f"root:cc:{COPIES}", ["prohibition:03e812bbe566"]),
        ],
    ),
    "agent-server-layout": (
        "openhands",
        ["openhands-agent-server"],
        f"oh:{AGENT_SERVER}",
        [
            (NCD, "open", "00000009-0000-4000-8000-000000000005-summary", ["prohibition:9c34609089ab"]),
            (NCD, "open", f"root:oh:{AGENT_SERVER}", ["prohibition:9c34609089ab"]),
        ],
    ),
    "legacy-summary-ids": (
        "openhands",
        ["openhands/legacy-summary-ids"],
        "oh:legacy-summary-ids",
        [
            (NCD, "open", "0000000a-0000-4000-8000-00000000000a-summary", ["prohibition:787963eb903f"]),
            (NCD, "open", "root:oh:legacy-summary-ids", ["prohibition:787963eb903f"]),
            (NCD, "resolved", "root:oh:legacy-summary-ids", []),
        ],
    ),
    "microcompact": (
        "claude-code", ["claude-code/cc-microcompact.jsonl"], "cc:b1f60000-0000-4000-8000-0000000000f6", [],
    ),
    "glued-line": ("claude-code", ["claude-code/cc-glued-line.jsonl"], "cc:c2a70000-0000-4000-8000-0000000000a7", []),
    "names-its-transcript": (
        "claude-code", ["claude-code/cc-names-its-transcript.jsonl"], "cc:d3b80000-0000-4000-8000-0000000000b8", [],
    ),
    "every-channel": (
        "claude-code",
        ["claude-code/cc-every-channel.jsonl"],
        f"cc:{EVERY}",
        [
            (
                NCD,
                "open",
                "e-s1",
                [
                    "prohibition:13983af91403",
                    "prohibition:33435f925486",
                    "prohibition:d58808ee3ba2",
                    "prohibition:d9fb023660aa",
                ],
            ),
            (
                NCD,
                "open",
                f"root:cc:{EVERY}",
                [
                    "prohibition:13983af91403",
                    "prohibition:33435f925486",
                    "prohibition:d58808ee3ba2",
                    "prohibition:d9fb023660aa",
                ],
            ),
        ],
    ),
}


def brief(alerts: Iterable[dict[str, Any]]) -> list[tuple[str, str, str, list[str] | None]]:
    """Alerts as the table above writes them: (rule, status, node, orphans or missing constraints)."""
    return [(a["rule"], a["status"], a["node_id"], a["orphans"] if a["rule"] == ORPHAN else a["missing_constraints"])
            for a in alerts]
