"""The remediation decision (stream.remediation.decide): alerts -> requests, no Kafka.

Alerts are built with :func:`alert` (every DESIGN.md §3 field, a real deterministic
``alert_id``); a test states which requests one alert, or a sequence, must produce.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.domain.engine import RULES, alert_id
from stream.errors import ConfigurationError
from stream.offline.replay import replay_lines
from stream.remediation import (
    EMPTY,
    ContextState,
    HandlerContext,
    RemediationHandler,
    decide,
    load_handlers,
    plan,
    request_id,
)
from stream.wire import RemediationRequest, encode_remediation_request, json_schemas
from tests.scenarios import design_scenarios

REPO = Path(__file__).resolve().parents[2]
CTX = "ctx-1"

_events = iter(range(1, 1_000_000))


def alert(
    rule: str = "orphaned_referent",
    status: str = "open",
    *,
    node: str | None = "L1",
    orphans: list[str] | None = None,
    missing: list[str] | None = None,
    subtree: list[str] | None = None,
    previous: list[str] | None = None,
    gap: list[int] | None = None,
    context: str = CTX,
    trigger_event: str | None = None,
) -> dict[str, Any]:
    """An alert dict as the engine emits it (key order, fields, deterministic id)."""
    action, severity = RULES[rule]
    orphans, missing = sorted(orphans or []), sorted(missing or [])
    trigger_event = trigger_event or f"e{next(_events)}"
    sets: Any = {"orphaned_referent": orphans, "negative_constraint_dropped": missing,
                 "non_idempotent": [orphans, previous], "sequence_gap": gap}[rule]
    return {
        "schema_version": 1, "type": "alert",
        "alert_id": alert_id(context, node, rule, status, sets, trigger_event),
        "status": status, "rule": rule, "action": action, "severity": severity,
        "context_id": context, "node_id": node, "level": "leaf" if node else None,
        "orphans": orphans, "previous_orphans": previous, "missing_constraints": missing,
        "subtree": subtree, "gap": gap,
        "trigger": {"event_id": trigger_event, "type": "artifact", "topic": "artifact-events",
                    "partition": 0, "offset": 7},
        "detected_at": None,
    }


def kinds(requests: list[dict]) -> list[tuple]:
    """(kind, node, what) of each request: the referent, the missing set, or the cancelled id."""
    out = []
    for r in requests:
        what = {"refetch": r["referent"], "recompact": tuple(r["missing_constraints"] or ()),
                "freeze": None, "cancel": r["cancels"]}[r["kind"]]
        out.append((r["kind"], r["node_id"], what))
    return out


def run(*alerts: dict) -> tuple[ContextState, list[dict]]:
    states, requests = plan(alerts)
    return states.get(CTX, EMPTY), requests


# --------------------------------------------------------------------------- each action


def test_open_escalate_alert_asks_one_refetch_per_orphaned_referent():
    a = alert(orphans=["a2", "a1"])
    state, reqs = decide(EMPTY, a)
    assert kinds(reqs) == [("refetch", "L1", "a1"), ("refetch", "L1", "a2")]
    assert all(r["alert_id"] == a["alert_id"] and r["trigger"] == a["trigger"] for r in reqs)
    assert all(r["rule"] == "orphaned_referent" and r["context_id"] == CTX for r in reqs)
    assert [r["request_id"] for r in state.pending] == [r["request_id"] for r in reqs]


def test_open_reject_subtree_alert_asks_one_recompact_carrying_missing_constraints_and_subtree():
    a = alert("negative_constraint_dropped", missing=["never push", "P2"], subtree=["L2", "L1"])
    _, reqs = decide(EMPTY, a)
    assert len(reqs) == 1
    r = reqs[0]
    assert (r["kind"], r["missing_constraints"], r["subtree"]) == ("recompact", ["P2", "never push"], ["L1", "L2"])
    assert r["referent"] is None and r["cancels"] is None


def test_open_freeze_alert_asks_one_freeze_of_the_node():
    _, reqs = decide(EMPTY, alert("non_idempotent", orphans=["a9"], previous=["a1"]))
    assert kinds(reqs) == [("freeze", "L1", None)]


def test_a_freeze_with_an_empty_orphan_set_still_freezes():
    _, reqs = decide(EMPTY, alert("non_idempotent", orphans=[], previous=["a1"]))
    assert kinds(reqs) == [("freeze", "L1", None)]


def test_an_opaque_checkpoint_asks_one_recompact_and_its_resolve_cancels_it():
    lines = [json.dumps(e).encode() for e in (
        {"type": "checkpoint", "event_id": "v1", "context_id": CTX, "node_id": "S", "level": "section", "opaque": True},
        {"type": "checkpoint", "event_id": "v2", "context_id": CTX, "node_id": "S", "level": "section"},
    )]
    opened, resolved = replay_lines(lines).alerts
    assert opened["rule"] == "unverifiable_checkpoint" and opened["action"] == "escalate"
    state, reqs = decide(EMPTY, opened)
    assert kinds(reqs) == [("recompact", "S", ())]
    assert reqs[0]["rule"] == "unverifiable_checkpoint" and reqs[0]["subtree"] == []
    RemediationRequest.model_validate(reqs[0])
    _, cancels = decide(state, resolved)
    assert [(r["kind"], r["cancels"]) for r in cancels] == [("cancel", reqs[0]["request_id"])]


def test_sequence_gap_alert_asks_nothing_but_is_remembered():
    a = alert("sequence_gap", node=None, gap=[3, 9])
    state, reqs = decide(EMPTY, a)
    assert reqs == [] and state.processed == {a["alert_id"]} and state.pending == ()


# --------------------------------------------------------------------------- duplicates


def test_a_redelivered_alert_produces_no_request_and_leaves_the_state_untouched():
    a = alert(orphans=["a1"])
    state, _ = decide(EMPTY, a)
    again, reqs = decide(state, a)
    assert reqs == [] and again is state


def test_redelivery_of_an_old_open_after_its_resolve_does_nothing():
    opened = alert(orphans=["a1"])
    _, reqs = run(opened, alert(status="resolved"), opened)
    assert [k for k, *_ in kinds(reqs)] == ["refetch", "cancel"]


def test_a_second_freeze_of_a_frozen_node_is_not_sent_again():
    _, reqs = run(alert("non_idempotent", orphans=["a1"], previous=[]),
                  alert("non_idempotent", orphans=["a2"], previous=["a1"]))
    assert kinds(reqs) == [("freeze", "L1", None)]


# --------------------------------------------------------------------------- resolve / re-open


def test_resolved_alert_cancels_every_pending_request_of_its_case_and_only_those():
    o = alert(orphans=["a1", "a2"])
    other_rule = alert("negative_constraint_dropped", missing=["x"], subtree=[])
    other_node = alert(node="L2", orphans=["a1"])
    state, first = run(o, other_rule, other_node)
    state, reqs = decide(state, alert(status="resolved"))
    refetches = {r["referent"]: r["request_id"] for r in first if r["kind"] == "refetch" and r["node_id"] == "L1"}
    assert kinds(reqs) == [("cancel", "L1", refetches["a1"]), ("cancel", "L1", refetches["a2"])]
    assert [(r["referent"], r["rule"]) for r in reqs] == [("a1", "orphaned_referent"), ("a2", "orphaned_referent")]
    assert sorted((r["node_id"], r["rule"]) for r in state.pending) == [
        ("L1", "negative_constraint_dropped"), ("L2", "orphaned_referent")]


def test_a_cancel_names_the_resolving_alert_and_echoes_the_cancelled_payload():
    rec = alert("negative_constraint_dropped", missing=["x"], subtree=["L0"])
    res = alert("negative_constraint_dropped", "resolved", subtree=["L0"])
    _, reqs = run(rec, res)
    cancel = reqs[1]
    assert cancel["alert_id"] == res["alert_id"] and cancel["trigger"] == res["trigger"]
    assert cancel["cancels"] == reqs[0]["request_id"]
    assert (cancel["missing_constraints"], cancel["subtree"]) == (["x"], ["L0"])


def test_a_second_resolve_is_a_no_op():
    state, _ = run(alert(orphans=["a1"]), alert(status="resolved"))
    again, reqs = decide(state, alert(status="resolved"))
    assert reqs == [] and again.pending == ()


def test_reopen_after_resolve_creates_new_requests_with_new_ids():
    first = alert(orphans=["a1"])
    state, reqs1 = run(first, alert(status="resolved"))
    reopened = alert(orphans=["a1"])
    state, reqs2 = decide(state, reopened)
    assert kinds(reqs2) == [("refetch", "L1", "a1")]
    assert reqs2[0]["request_id"] != reqs1[0]["request_id"] and reqs2[0]["alert_id"] == reopened["alert_id"]
    assert [r["request_id"] for r in state.pending] == [reqs2[0]["request_id"]]


def test_open_again_with_a_new_set_cancels_what_left_and_asks_only_for_what_is_new():
    state, first = run(alert(orphans=["a1", "a2"]))
    state, reqs = decide(state, alert(orphans=["a2", "a3"]))
    a1 = next(r["request_id"] for r in first if r["referent"] == "a1")
    assert kinds(reqs) == [("cancel", "L1", a1), ("refetch", "L1", "a3")]
    assert sorted(r["referent"] for r in state.pending) == ["a2", "a3"]
    # a later resolve cancels both, the kept a2 under its original id
    _, reqs = decide(state, alert(status="resolved"))
    a2 = next(r["request_id"] for r in first if r["referent"] == "a2")
    assert {r["cancels"] for r in reqs} == {a2, next(r["request_id"] for r in state.pending if r["referent"] == "a3")}


def test_reject_subtree_open_again_with_a_new_set_supersedes_the_pending_recompact():
    state, first = run(alert("negative_constraint_dropped", node="R", missing=["x"], subtree=["S1"]))
    wider = alert("negative_constraint_dropped", node="R", missing=["x", "y"], subtree=["S1", "L2"])
    state, reqs = decide(state, wider)
    assert kinds(reqs) == [("cancel", "R", first[0]["request_id"]), ("recompact", "R", ("x", "y"))]
    assert [r["missing_constraints"] for r in state.pending] == [["x", "y"]]


# --------------------------------------------------------------------------- ids, purity, wire


def test_request_ids_are_deterministic_hashes_of_alert_kind_and_item():
    a = alert(orphans=["a1"])
    _, reqs = decide(EMPTY, a)
    assert reqs[0]["request_id"] == request_id(a["alert_id"], "refetch", "a1")
    assert decide(EMPTY, json.loads(json.dumps(a)))[1] == reqs
    assert len(reqs[0]["request_id"]) == 32


def test_decide_does_not_mutate_its_inputs():
    state, _ = run(alert(orphans=["a1"]))
    a = alert(status="resolved")
    snapshot = (json.dumps(a), json.dumps(state.to_json(CTX)))
    decide(state, a)
    assert snapshot == (json.dumps(a), json.dumps(state.to_json(CTX)))


def test_state_round_trips_through_its_json():
    state, _ = run(alert(orphans=["a1", "a2"]), alert("non_idempotent", node="L2", orphans=[], previous=["b"]))
    assert ContextState.from_json(json.loads(json.dumps(state.to_json(CTX)))) == state


def test_every_request_is_a_valid_wire_message_with_deterministic_bytes():
    lines = [line for c in design_scenarios() for line in c.lines()]
    _, reqs = plan(replay_lines(lines).alerts)
    assert {r["kind"] for r in reqs} == {"refetch", "recompact", "freeze", "cancel"}
    for r in reqs:
        model = RemediationRequest.model_validate(r)
        assert encode_remediation_request(model) == encode_remediation_request(r)
        assert json.loads(encode_remediation_request(r)) == r  # the dict is already in wire order
    assert "remediation-request" in json_schemas()


def test_the_engines_own_alerts_for_the_design_scenarios_yield_the_expected_requests():
    lines = [line for c in design_scenarios() for line in c.lines()]
    _, reqs = plan(replay_lines(lines).alerts)
    summary = [(r["context_id"], r["kind"], r["referent"] or r["missing_constraints"]) for r in reqs]
    assert summary[:3] == [("s-orphan", "refetch", "a1"), ("s-orphan", "cancel", "a1"), ("s-orphan", "refetch", "a2")]
    assert ("s-nonidem", "freeze", None) in summary
    # at the end, what is pending is exactly what is open: s-orphan a1, s-replace a2, s-dup a1,
    # the s-nonidem freeze, s-decay S1 and the two s-cycle recompacts (R was resolved)
    states, _ = plan(replay_lines(lines).alerts)
    pending = sorted((ctx, r["node_id"], r["kind"]) for ctx, s in states.items() for r in s.pending)
    assert pending == [
        ("s-cycle", "A", "recompact"), ("s-cycle", "B", "recompact"), ("s-decay", "S1", "recompact"),
        ("s-dup", "L1", "refetch"), ("s-nonidem", "L1", "freeze"), ("s-orphan", "L1", "refetch"),
        ("s-replace", "L1", "refetch"),
    ]


_case_alerts = st.lists(
    st.one_of(
        st.builds(lambda s: ("open", sorted(s)), st.sets(st.sampled_from(["a1", "a2", "a3"]), min_size=1)),
        st.just(("resolved", [])),
    ),
    min_size=1, max_size=8,
)


@settings(max_examples=200, deadline=None)
@given(seq=_case_alerts, redeliver=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 8)), max_size=6))
def test_redeliveries_anywhere_never_change_the_requests(seq, redeliver):
    alerts = [alert(status=s, orphans=o) for s, o in seq]
    delivered = list(alerts)
    for which, where in redeliver:  # a repeat arrives later than its original
        which %= len(alerts)
        pos = delivered.index(alerts[which]) + 1 + where
        delivered.insert(min(pos, len(delivered)), alerts[which])
    _, once = plan(alerts)
    _, with_repeats = plan(delivered)
    assert with_repeats == once
    ids = [r["request_id"] for r in once]
    assert len(ids) == len(set(ids))


# --------------------------------------------------------------------------- handlers


class _Sync:
    def __init__(self, context):
        self.context = context
        self.got = []

    def handle(self, request):
        self.got.append(request)


class _NoHandle:
    def __init__(self, context):
        pass


def test_handlers_load_by_dotted_path_in_order_and_satisfy_the_protocol():
    ctx = HandlerContext(settings=None, producer=None)  # type: ignore[arg-type]
    handlers = load_handlers(f"{__name__}:_Sync, {__name__}._Sync", ctx)
    assert [p for p, _ in handlers] == [f"{__name__}:_Sync", f"{__name__}._Sync"]
    assert all(isinstance(h, RemediationHandler) and h.context is ctx for _, h in handlers)


@pytest.mark.parametrize("spec, needle", [
    ("no.such.module:X", "does not load"),
    (f"{__name__}:Missing", "does not load"),
    (f"{__name__}:_NoHandle", "without handle"),
    (" , ", "names no handler"),
])
def test_a_bad_handler_path_is_a_configuration_error_naming_it(spec, needle):
    with pytest.raises(ConfigurationError, match=needle):
        load_handlers(spec, HandlerContext(settings=None, producer=None))  # type: ignore[arg-type]


def test_the_remediation_module_imports_no_kafka_client():
    code = ("import sys, stream.remediation; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('aiokafka', 'faust', 'mode')))")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
