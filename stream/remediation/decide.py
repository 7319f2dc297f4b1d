"""The remediation decision: (a context's state, an alert) -> (its new state, the requests). Pure.

No I/O, no clock, no Kafka: :func:`decide` and :func:`plan` are unit-tested alone
(tests/unit/test_remediation.py). What the requests are, per alert: docs/REMEDIATION.md.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover

    pass

SCHEMA_VERSION = 1

#: alert action -> the request kind it asks for (other actions ask for nothing).
KIND_OF_ACTION: dict[str, str] = {"escalate": "refetch", "reject_subtree": "recompact", "freeze": "freeze"}
#: rules whose request kind is not their action's: an opaque summary (``escalate``) has
#: nothing to re-fetch — it must be summarized again, readably.
KIND_OF_RULE: dict[str, str] = {"unverifiable_checkpoint": "recompact"}


def kind_of(alert: Mapping[str, Any]) -> str | None:
    """The request kind an alert asks for (None: it asks for nothing)."""
    return KIND_OF_RULE.get(alert.get("rule")) or KIND_OF_ACTION.get(alert.get("action"))  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ContextState:
    """What the worker remembers about one context.

    ``processed``: ids of every alert of the context already decided (redeliveries are
    ignored). ``pending``: request dicts emitted and not cancelled, in emission order.
    """

    processed: frozenset[str] = frozenset()
    pending: tuple[dict[str, Any], ...] = ()

    def to_json(self, context_id: str) -> dict[str, Any]:
        """JSON-ready value of the state topic (sorted ids: deterministic bytes)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "context_id": context_id,
            "processed": sorted(self.processed),
            "pending": list(self.pending),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ContextState:
        return cls(frozenset(obj.get("processed") or ()), tuple(obj.get("pending") or ()))


EMPTY = ContextState()


def request_id(alert_id: str, kind: str, item: Any) -> str:
    """Deterministic request id: first 32 hex of sha256 over ``[alert_id, kind, item]``."""
    blob = json.dumps([alert_id, kind, item], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def _item(kind: str, *, referent: str | None, missing: list[str] | None, node_id: str, cancels: str | None) -> Any:
    """What one request is *about* (its identity within a case, and part of its id)."""
    if kind == "refetch":
        return referent
    if kind == "recompact":
        return missing
    if kind == "freeze":
        return node_id
    return cancels


def _identity(req: Mapping[str, Any]) -> str:
    item = _item(req["kind"], referent=req["referent"], missing=req["missing_constraints"],
                 node_id=req["node_id"], cancels=req["cancels"])
    return json.dumps([req["kind"], item], ensure_ascii=False, separators=(",", ":"))


def _request(
    alert: Mapping[str, Any],
    kind: str,
    *,
    referent: str | None = None,
    missing: list[str] | None = None,
    subtree: list[str] | None = None,
    cancels: str | None = None,
) -> dict[str, Any]:
    """One request dict, in the wire order of :class:`stream.wire.RemediationRequest`."""
    item = _item(kind, referent=referent, missing=missing, node_id=alert["node_id"], cancels=cancels)
    return {
        "schema_version": SCHEMA_VERSION,
        "type": "remediation_request",
        "request_id": request_id(alert["alert_id"], kind, item),
        "kind": kind,
        "context_id": alert["context_id"],
        "node_id": alert["node_id"],
        "rule": alert["rule"],
        "alert_id": alert["alert_id"],
        "referent": referent,
        "missing_constraints": missing,
        "subtree": subtree,
        "cancels": cancels,
        "trigger": dict(alert["trigger"]),
    }


def _desired(alert: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The requests an ``open`` alert asks for (its case's full desired set)."""
    kind = kind_of(alert)
    assert kind is not None  # decide() asks only for actionable alerts
    if kind == "refetch":
        return [_request(alert, kind, referent=a) for a in sorted(set(alert.get("orphans") or ()))]
    if kind == "recompact":
        missing = sorted(set(alert.get("missing_constraints") or ()))
        subtree = sorted(set(alert.get("subtree") or ()))
        return [_request(alert, kind, missing=missing, subtree=subtree)]
    return [_request(alert, kind)]


def is_actionable(alert: Mapping[str, Any]) -> bool:
    """Does this alert's action map to requests (and name a node)?"""
    return kind_of(alert) is not None and alert.get("node_id") is not None


def decide(state: ContextState, alert: Mapping[str, Any]) -> tuple[ContextState, list[dict[str, Any]]]:
    """The remediation decision: (context state, alert) -> (new state, requests).

    Pure: reads only its arguments, mutates nothing, the same input gives the same
    output. ``alert`` is an alert dict (DESIGN.md §3) of the state's context. Returns
    ``state`` itself (identical object) when the alert was already processed.
    """
    aid = alert["alert_id"]
    if aid in state.processed:
        return state, []
    processed = state.processed | {aid}
    if not is_actionable(alert):
        return ContextState(processed, state.pending), []
    case = (alert["node_id"], alert["rule"])
    mine = [r for r in state.pending if (r["node_id"], r["rule"]) == case]
    others = [r for r in state.pending if (r["node_id"], r["rule"]) != case]
    desired = _desired(alert) if alert["status"] == "open" else []
    desired_ids = {_identity(r) for r in desired}
    pending_ids = {_identity(r) for r in mine}
    kept = [r for r in mine if _identity(r) in desired_ids]
    cancels = [
        _request(alert, "cancel", referent=r["referent"], missing=r["missing_constraints"],
                 subtree=r["subtree"], cancels=r["request_id"])
        for r in mine if _identity(r) not in desired_ids
    ]
    new = [r for r in desired if _identity(r) not in pending_ids]
    return ContextState(processed, (*others, *kept, *new)), [*cancels, *new]


def plan(
    alerts: Iterable[Mapping[str, Any]], states: Mapping[str, ContextState] | None = None
) -> tuple[dict[str, ContextState], list[dict[str, Any]]]:
    """Fold :func:`decide` over alerts in order (per context): (final states, all requests)."""
    out_states = dict(states or {})
    requests: list[dict[str, Any]] = []
    for alert in alerts:
        ctx = alert["context_id"]
        out_states[ctx], reqs = decide(out_states.get(ctx, EMPTY), alert)
        requests.extend(reqs)
    return out_states, requests
