"""The rules and edges of DESIGN.md §4, one behaviour per test.

Every test replays JSON lines through :func:`stream.offline.replay.replay_lines` (the path of
``python -m stream replay``) — or, where provenance matters, calls
:meth:`stream.domain.engine.Engine.process` directly — and asserts the exact alerts
that come out, in order (see ``tests/unit/builders.py`` for the projection).

Choices the spec leaves open, pinned here as the engine makes them:

* ``subtree`` lists the *stored* nodes reachable from the node through ``children``,
  sorted, the node itself excluded (even on a cycle through it);
* ``sequence_gap`` has action ``resync``, severity ``warning``, ``level`` null;
  ``non_idempotent`` has action ``freeze``, severity ``high``;
* ``replay --since`` starts a context's expected seq at the first event *with a seq*.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.domain import OFFLINE, DictState, Engine, Source
from stream.domain.outputs import Trigger
from stream.wire import decode_event
from tests.unit.builders import (
    admit,
    as_line,
    dropped,
    evict,
    gap,
    make_artifact,
    make_checkpoint,
    non_idempotent,
    orphaned,
    project,
    run,
    verdicts_of,
)

pytestmark = pytest.mark.unit


# --------------------------------------------------------------------------- orphaned_referent


def test_eviction_after_checkpoint_opens_orphan_alert_and_admission_resolves_it():
    result = run(
        admit("a1", event_id="e1"),
        make_checkpoint(event_id="e2", node_id="n1", referents=["a1"]),
        evict("a1", event_id="e3"),
        admit("a1", event_id="e4"),
    )
    assert project(result.alerts) == [
        orphaned("open", "n1", ["a1"], trigger="e3"),
        orphaned("resolved", "n1", [], trigger="e4"),
    ]


def test_orphan_alert_carries_action_escalate_severity_critical_and_the_node_level():
    result = run(make_checkpoint(event_id="e1", node_id="s1", level="section", referents=["gone"]))
    (alert,) = result.alerts
    assert (alert["action"], alert["severity"], alert["level"]) == ("escalate", "critical", "section")
    assert (alert["previous_orphans"], alert["subtree"], alert["gap"]) == (None, None, None)


def test_a_referent_never_admitted_is_an_orphan_from_the_checkpoint_itself():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1", referents=["never", "a1"]),
        admit("a1", event_id="e2"),
    )
    assert project(result.alerts) == [
        orphaned("open", "n1", ["a1", "never"], trigger="e1"),
        orphaned("open", "n1", ["never"], trigger="e2"),
    ]


def test_orphan_set_growing_from_one_to_two_opens_again_with_the_full_set():
    result = run(
        admit("a"),
        admit("b"),
        make_checkpoint(node_id="n1", referents=["a", "b"]),
        evict("a", event_id="e-a"),
        evict("b", event_id="e-b"),
        admit("a", event_id="e-a2"),
        admit("b", event_id="e-b2"),
    )
    assert project(result.alerts) == [
        orphaned("open", "n1", ["a"], trigger="e-a"),
        orphaned("open", "n1", ["a", "b"], trigger="e-b"),
        orphaned("open", "n1", ["b"], trigger="e-a2"),
        orphaned("resolved", "n1", [], trigger="e-b2"),
    ]


def test_artifact_evicted_from_live_but_present_in_durable_stays_reachable():
    result = run(
        admit("a1", "live"),
        admit("a1", "durable"),
        make_checkpoint(node_id="n1", referents=["a1"]),
        evict("a1", "live", event_id="e-live"),
        evict("a1", "durable", event_id="e-durable"),
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["a1"], trigger="e-durable")]


def test_artifact_admitted_only_to_durable_is_reachable():
    result = run(admit("a1", "durable"), make_checkpoint(node_id="n1", referents=["a1"]))
    assert result.alerts == []


def test_evicting_a_tier_never_admitted_changes_nothing():
    result = run(
        admit("a1", "live"),
        make_checkpoint(node_id="n1", referents=["a1"]),
        evict("a1", "durable", event_id="e-durable"),
        evict("a1", "live", event_id="e-live"),
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["a1"], trigger="e-live")]


def test_evicting_an_artifact_never_admitted_changes_nothing():
    result = run(make_checkpoint(event_id="e1", node_id="n1", referents=["a1"]), evict("a1"), evict("a1", "durable"))
    assert project(result.alerts) == [orphaned("open", "n1", ["a1"], trigger="e1")]


def test_admitting_the_same_tier_twice_is_undone_by_one_eviction():
    result = run(
        admit("a1"),
        admit("a1"),
        make_checkpoint(node_id="n1", referents=["a1"]),
        evict("a1", event_id="e-evict"),
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["a1"], trigger="e-evict")]


def test_an_artifact_change_alerts_every_node_that_refers_to_it_in_node_id_order():
    result = run(
        admit("a1"),
        make_checkpoint(node_id="zeta", referents=["a1"]),
        make_checkpoint(node_id="alpha", referents=["a1"]),
        make_checkpoint(node_id="mid", referents=["other"], event_id="e-mid"),
        evict("a1", event_id="e-evict"),
    )
    assert project(result.alerts) == [
        orphaned("open", "mid", ["other"], trigger="e-mid"),
        orphaned("open", "alpha", ["a1"], trigger="e-evict"),
        orphaned("open", "zeta", ["a1"], trigger="e-evict"),
    ]


def test_an_artifact_nobody_refers_to_raises_nothing():
    result = run(make_checkpoint(node_id="n1", referents=["a1"]), admit("a1"), admit("x"), evict("x"))
    assert [a["status"] for a in result.alerts] == ["open", "resolved"]


# --------------------------------------------------------------------------- re-summarization


def test_resummarization_that_keeps_the_orphan_set_replaces_the_version():
    result = run(
        admit("old"),
        admit("new"),
        make_checkpoint(event_id="v1", node_id="n1", referents=["old"]),
        make_checkpoint(event_id="v2", node_id="n1", referents=["new"]),
        evict("old", event_id="e-old"),
        evict("new", event_id="e-new"),
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["new"], trigger="e-new")]
    assert verdicts_of(result) == [("n1", "accepted", True, "v1"), ("n1", "replaced", True, "v2")]


def test_resummarization_with_identical_content_changes_nothing():
    body = {"node_id": "n1", "referents": ["gone"], "raw_negative_constraints": ["k"]}
    result = run(make_checkpoint(event_id="v1", **body), make_checkpoint(event_id="v2", **body))
    assert project(result.alerts) == [
        orphaned("open", "n1", ["gone"], trigger="v1"),
        dropped("open", "n1", ["k"], trigger="v1"),
    ]
    assert verdicts_of(result) == [("n1", "accepted", False, "v1"), ("n1", "replaced", False, "v2")]


def test_resummarization_that_changes_the_orphan_set_freezes_the_node_and_alerts_non_idempotent():
    result = run(
        admit("a"),
        make_checkpoint(event_id="v1", node_id="n1", referents=["a"]),
        make_checkpoint(event_id="v2", node_id="n1", referents=["a", "gone"]),
    )
    assert project(result.alerts) == [non_idempotent("n1", ["gone"], [], trigger="v2")]
    (alert,) = result.alerts
    assert (alert["action"], alert["severity"], alert["level"]) == ("freeze", "high", "leaf")
    assert verdicts_of(result) == [("n1", "accepted", True, "v1"), ("n1", "frozen", False, "v2")]


def test_non_idempotent_alert_may_carry_an_empty_orphan_set_and_the_previous_one():
    result = run(
        admit("b"),
        make_checkpoint(event_id="v1", node_id="n1", referents=["b"]),
        evict("b", event_id="e-b"),
        make_checkpoint(event_id="v2", node_id="n1", referents=[]),
    )
    assert project(result.alerts) == [
        orphaned("open", "n1", ["b"], trigger="e-b"),
        non_idempotent("n1", [], ["b"], trigger="v2"),
    ]


def test_frozen_node_keeps_its_old_version_so_only_the_old_referents_are_tracked():
    result = run(
        admit("shared"),
        admit("old_only"),
        admit("new_only"),
        make_checkpoint(event_id="v1", node_id="n1", referents=["shared", "old_only"]),
        make_checkpoint(event_id="v2", node_id="n1", referents=["shared", "new_only", "gone"]),
        evict("new_only", event_id="e-new"),
        evict("old_only", event_id="e-old"),
    )
    assert project(result.alerts) == [
        non_idempotent("n1", ["gone"], [], trigger="v2"),
        orphaned("open", "n1", ["old_only"], trigger="e-old"),
    ]


def test_resummarization_compares_both_versions_against_the_current_store():
    result = run(
        make_checkpoint(event_id="v1", node_id="n1", referents=["a"]),
        admit("a", event_id="e-a"),
        make_checkpoint(event_id="v2", node_id="n1", referents=[]),
    )
    assert project(result.alerts) == [
        orphaned("open", "n1", ["a"], trigger="v1"),
        orphaned("resolved", "n1", [], trigger="e-a"),
    ]
    assert verdicts_of(result)[-1] == ("n1", "replaced", True, "v2")


def test_frozen_node_ignores_later_versions_without_any_alert():
    result = run(
        make_checkpoint(event_id="v1", node_id="n1", referents=[]),
        make_checkpoint(event_id="v2", node_id="n1", referents=["gone"]),
        make_checkpoint(event_id="v3", node_id="n1", referents=["gone2"], raw_negative_constraints=["k"]),
        make_checkpoint(event_id="v4", node_id="n1", referents=[]),
    )
    assert project(result.alerts) == [non_idempotent("n1", ["gone"], [], trigger="v2")]
    assert verdicts_of(result) == [
        ("n1", "accepted", True, "v1"),
        ("n1", "frozen", False, "v2"),
        ("n1", "ignored-frozen", False, "v3"),
        ("n1", "ignored-frozen", False, "v4"),
    ]


def test_frozen_node_is_still_evaluated_on_artifact_changes():
    result = run(
        admit("a"),
        make_checkpoint(event_id="v1", node_id="n1", referents=["a"]),
        make_checkpoint(event_id="v2", node_id="n1", referents=["a", "gone"]),
        evict("a", event_id="e-evict"),
        admit("a", event_id="e-admit"),
    )
    assert project(result.alerts) == [
        non_idempotent("n1", ["gone"], [], trigger="v2"),
        orphaned("open", "n1", ["a"], trigger="e-evict"),
        orphaned("resolved", "n1", [], trigger="e-admit"),
    ]


def test_non_idempotent_is_never_resolved():
    result = run(
        make_checkpoint(event_id="v1", node_id="n1", referents=[]),
        make_checkpoint(event_id="v2", node_id="n1", referents=["gone"]),
        admit("gone"),
        make_checkpoint(event_id="v3", node_id="n1", referents=[]),
        make_checkpoint(event_id="v4", node_id="n1", referents=["gone"]),
        evict("gone"),
    )
    assert project(result.alerts) == [non_idempotent("n1", ["gone"], [], trigger="v2")]
    assert verdicts_of(result)[-1] == ("n1", "ignored-frozen", False, "v4")


def test_a_frozen_childs_kept_version_still_feeds_its_ancestors_required():
    result = run(
        make_checkpoint(event_id="l1", node_id="leaf", referents=["gone"], raw_negative_constraints=["k1"]),
        make_checkpoint(event_id="p1", node_id="parent", level="section", children=["leaf"]),
        make_checkpoint(event_id="l2", node_id="leaf", referents=[], raw_negative_constraints=["k2"]),
        make_checkpoint(event_id="p2", node_id="parent", level="section", children=["leaf"],
                        negative_constraints=["k1"]),
    )
    assert project(result.alerts) == [
        orphaned("open", "leaf", ["gone"], trigger="l1"),
        dropped("open", "leaf", ["k1"], trigger="l1"),
        dropped("open", "parent", ["k1"], trigger="p1"),
        non_idempotent("leaf", [], ["gone"], trigger="l2"),
        dropped("resolved", "parent", [], trigger="p2"),
    ]


def test_a_replaced_version_with_new_children_re_evaluates_its_ancestors():
    result = run(
        make_checkpoint(event_id="l1", node_id="l1", raw_negative_constraints=["k1"], negative_constraints=["k1"]),
        make_checkpoint(event_id="l2", node_id="l2", raw_negative_constraints=["k2"], negative_constraints=["k2"]),
        make_checkpoint(event_id="s-v1", node_id="s", level="section", children=["l1"], negative_constraints=["k1"]),
        make_checkpoint(event_id="r", node_id="r", level="root", children=["s"], negative_constraints=["k1"]),
        make_checkpoint(event_id="s-v2", node_id="s", level="section", children=["l1", "l2"],
                        negative_constraints=["k1", "k2"]),
        make_checkpoint(event_id="s-v3", node_id="s", level="section", children=["l1"],
                        negative_constraints=["k1"]),
    )
    # v2 ledger: s-v3 drops the child l2, but l2 stays in s's ledger, so k2 stays
    # required above it: the root's alert stays open and s itself now misses k2.
    assert project(result.alerts) == [
        dropped("open", "r", ["k2"], trigger="s-v2"),
        dropped("open", "s", ["k2"], trigger="s-v3"),
    ]


# --------------------------------------------------------------------------- negative_constraint_dropped


def test_constraint_decays_through_section_to_root():
    result = run(
        make_checkpoint(event_id="e-leaf", node_id="leaf", level="leaf",
                        raw_negative_constraints=["do not push"], negative_constraints=["do not push"]),
        make_checkpoint(event_id="e-section", node_id="section", level="section", children=["leaf"]),
        make_checkpoint(event_id="e-root", node_id="root", level="root", children=["section"]),
    )
    assert project(result.alerts) == [
        dropped("open", "section", ["do not push"], trigger="e-section"),
        dropped("open", "root", ["do not push"], trigger="e-root"),
    ]
    section, root = result.alerts
    assert (section["action"], section["severity"], section["level"]) == ("reject_subtree", "critical", "section")
    assert section["subtree"] == ["leaf"]
    assert root["subtree"] == ["section", "leaf"]  # nearest first
    assert root["level"] == "root"


def test_a_node_that_carries_every_required_constraint_raises_nothing():
    result = run(
        make_checkpoint(node_id="leaf", raw_negative_constraints=["k1"], negative_constraints=["k1"]),
        make_checkpoint(node_id="section", level="section", children=["leaf"], raw_negative_constraints=["k2"],
                        negative_constraints=["k2", "k1"]),
        make_checkpoint(node_id="root", level="root", children=["section"], negative_constraints=["k1", "k2", "k3"]),
    )
    assert result.alerts == []


def test_carrying_the_dropped_constraint_again_resolves_with_an_empty_set():
    result = run(
        make_checkpoint(node_id="leaf", raw_negative_constraints=["k1", "k2"], negative_constraints=["k1", "k2"]),
        make_checkpoint(event_id="s1", node_id="s", level="section", children=["leaf"]),
        make_checkpoint(event_id="s2", node_id="s", level="section", children=["leaf"], negative_constraints=["k1"]),
        make_checkpoint(event_id="s3", node_id="s", level="section", children=["leaf"],
                        negative_constraints=["k1", "k2"]),
    )
    assert project(result.alerts) == [
        dropped("open", "s", ["k1", "k2"], trigger="s1"),
        dropped("open", "s", ["k2"], trigger="s2"),
        dropped("resolved", "s", [], trigger="s3"),
    ]
    assert result.alerts[-1]["subtree"] == ["leaf"]


def test_constraints_compare_after_whitespace_and_case_folding():
    result = run(
        make_checkpoint(node_id="n1", raw_negative_constraints=["  do\tnot\n  push "],
                        negative_constraints=["Do  NOT Push"]),
        make_checkpoint(node_id="n2", raw_negative_constraints=["Straße"], negative_constraints=["STRASSE"]),
    )
    assert result.alerts == []


def test_constraints_compare_after_nfkc():
    result = run(make_checkpoint(node_id="n1", raw_negative_constraints=["\ufb01le"], negative_constraints=["file"]))
    assert result.alerts == []


def test_constraint_key_is_nfkc_then_casefold_then_whitespace_join():
    result = run(make_checkpoint(event_id="e1", node_id="n1", raw_negative_constraints=["\u01f0", "  A\u3000B  "]))
    # NFKC keeps U+01F0 composed, casefold then decomposes it; U+3000 is whitespace after NFKC.
    assert project(result.alerts) == [dropped("open", "n1", ["a b", "j\u030c"], trigger="e1")]


def test_a_whitespace_only_constraint_has_the_empty_key():
    result = run(make_checkpoint(event_id="e1", node_id="n1", raw_negative_constraints=["  \t "]),
                 make_checkpoint(event_id="e2", node_id="n1", raw_negative_constraints=[""],
                                 negative_constraints=[" "]))
    assert project(result.alerts) == [
        dropped("open", "n1", [""], trigger="e1"),
        dropped("resolved", "n1", [], trigger="e2"),
    ]


def test_object_constraints_are_keyed_by_their_id_not_their_text():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1",
                        raw_negative_constraints=[{"id": "k-1", "text": "do not push"}],
                        negative_constraints=["do not push"]),
    )
    assert project(result.alerts) == [dropped("open", "n1", ["k-1"], trigger="e1")]


def test_object_constraint_ids_are_taken_verbatim():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1", raw_negative_constraints=[{"id": "Do NOT Push"}],
                        negative_constraints=["do not push"]),
    )
    assert project(result.alerts) == [dropped("open", "n1", ["Do NOT Push"], trigger="e1")]


def test_object_ids_and_normalized_strings_share_one_key_space():
    result = run(
        make_checkpoint(node_id="n1", raw_negative_constraints=[{"id": "do not push", "text": "x"}],
                        negative_constraints=["Do NOT  push"]),
        make_checkpoint(node_id="n2", raw_negative_constraints=["DO NOT PUSH"],
                        negative_constraints=[{"id": "do not push"}]),
    )
    assert result.alerts == []


def test_a_late_childs_raw_constraints_reach_its_parent():
    result = run(
        make_checkpoint(event_id="e-parent", node_id="parent", level="section", children=["child"]),
        make_checkpoint(event_id="e-child", node_id="child", raw_negative_constraints=["k"],
                        negative_constraints=["k"]),
    )
    assert project(result.alerts) == [dropped("open", "parent", ["k"], trigger="e-child")]
    assert result.alerts[0]["subtree"] == ["child"]


def test_a_late_grandchild_alerts_every_ancestor_in_node_id_order():
    result = run(
        make_checkpoint(node_id="z-root", level="root", children=["m-section"]),
        make_checkpoint(node_id="m-section", level="section", children=["b-leaf"]),
        make_checkpoint(node_id="a-other", level="section", children=["b-leaf"]),
        make_checkpoint(event_id="e-leaf", node_id="b-leaf", referents=["gone"], raw_negative_constraints=["k"]),
    )
    assert project(result.alerts) == [
        dropped("open", "a-other", ["k"], trigger="e-leaf"),
        orphaned("open", "b-leaf", ["gone"], trigger="e-leaf"),
        dropped("open", "b-leaf", ["k"], trigger="e-leaf"),
        dropped("open", "m-section", ["k"], trigger="e-leaf"),
        dropped("open", "z-root", ["k"], trigger="e-leaf"),
    ]


def test_children_not_yet_seen_contribute_nothing_and_are_left_out_of_subtree():
    result = run(
        make_checkpoint(node_id="leaf", raw_negative_constraints=["k"], negative_constraints=["k"]),
        make_checkpoint(event_id="e-s", node_id="s", level="section", children=["leaf", "unseen"]),
    )
    assert project(result.alerts) == [dropped("open", "s", ["k"], trigger="e-s")]
    assert result.alerts[0]["subtree"] == ["leaf"]


def test_a_two_node_cycle_terminates_and_both_nodes_share_required():
    result = run(
        make_checkpoint(event_id="e-a", node_id="a", level="section", children=["b"], raw_negative_constraints=["x"]),
        make_checkpoint(event_id="e-b", node_id="b", level="section", children=["a"], raw_negative_constraints=["y"]),
    )
    assert project(result.alerts) == [
        dropped("open", "a", ["x"], trigger="e-a"),
        dropped("open", "a", ["x", "y"], trigger="e-b"),
        dropped("open", "b", ["x", "y"], trigger="e-b"),
    ]
    assert [a["subtree"] for a in result.alerts] == [[], ["b"], ["a"]]


def test_a_node_listing_itself_as_a_child_terminates():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1", children=["n1", "n1"], raw_negative_constraints=["x"]),
    )
    assert project(result.alerts) == [dropped("open", "n1", ["x"], trigger="e1")]
    assert result.alerts[0]["subtree"] == []


def test_a_cycle_below_a_root_feeds_the_root_once_closed():
    result = run(
        make_checkpoint(node_id="root", level="root", children=["a"], negative_constraints=["x"]),
        make_checkpoint(node_id="a", level="section", children=["b"], raw_negative_constraints=["x"],
                        negative_constraints=["x", "y"]),
        make_checkpoint(event_id="e-b", node_id="b", level="section", children=["a"], raw_negative_constraints=["y"],
                        negative_constraints=["x", "y"]),
    )
    assert project(result.alerts) == [dropped("open", "root", ["y"], trigger="e-b")]


def test_children_are_followed_at_every_level_even_a_leafs():
    result = run(
        make_checkpoint(node_id="below", level="root", raw_negative_constraints=["k"], negative_constraints=["k"]),
        make_checkpoint(event_id="e-leaf", node_id="top", level="leaf", children=["below"]),
    )
    assert project(result.alerts) == [dropped("open", "top", ["k"], trigger="e-leaf")]


def test_a_replaced_version_may_change_level_and_later_alerts_carry_the_new_one():
    result = run(
        admit("a"),
        make_checkpoint(node_id="n1", level="leaf", referents=["a"]),
        make_checkpoint(node_id="n1", level="section", referents=["a"]),
        evict("a"),
    )
    assert [(a["rule"], a["level"]) for a in result.alerts] == [("orphaned_referent", "section")]


def test_parent_id_never_creates_a_link():
    result = run(
        make_checkpoint(node_id="p1", level="section", children=[]),
        make_checkpoint(node_id="c1", parent_id="p1", raw_negative_constraints=["k"], negative_constraints=["k"]),
        make_checkpoint(node_id="c2", parent_id="p2", raw_negative_constraints=["k"], negative_constraints=["k"]),
        make_checkpoint(node_id="p2", level="section", children=[]),
    )
    assert result.alerts == []


# --------------------------------------------------------------------------- duplicates


def test_a_repeated_event_id_is_ignored_entirely_even_with_different_content():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1", referents=["a1"]),
        admit("a1", event_id="e1"),
        make_checkpoint(event_id="e1", node_id="n1", referents=[]),
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["a1"], trigger="e1")]
    assert (result.events, result.applied, result.duplicates) == (3, 1, 2)
    assert verdicts_of(result) == [("n1", "accepted", False, "e1")]


def test_the_same_event_id_in_another_context_is_not_a_duplicate():
    result = run(
        make_checkpoint(event_id="e1", context_id="c1", node_id="n1", referents=["a1"]),
        make_checkpoint(event_id="e1", context_id="c2", node_id="n1", referents=["a1"]),
    )
    assert [(a["context_id"], a["node_id"]) for a in result.alerts] == [("c1", "n1"), ("c2", "n1")]
    assert result.duplicates == 0


def test_a_duplicate_with_a_seq_still_uses_up_its_seq():
    result = run(
        admit("a1", event_id="e0", seq=0),
        admit("a1", event_id="e0", seq=1),
        make_checkpoint(event_id="e2", node_id="n1", referents=["gone"], seq=2),
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["gone"], trigger="e2")]
    assert result.waiting == {}
    assert (result.applied, result.duplicates, result.dropped) == (2, 1, 0)


def test_a_waiting_duplicate_is_ignored_when_it_drains():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1", referents=[], seq=1),
        make_checkpoint(event_id="e1", node_id="n1", referents=["gone"], seq=2),
        admit("x", event_id="e0", seq=0),
    )
    assert result.alerts == []
    assert (result.applied, result.duplicates, result.waiting) == (2, 1, {})


# --------------------------------------------------------------------------- seq ordering


def test_events_with_seq_delivered_out_of_order_are_applied_in_seq_order():
    result = run(
        make_checkpoint(event_id="e-ck", node_id="n1", referents=["a1"]),
        evict("a1", event_id="e-evict", seq=1),
        admit("a1", event_id="e-admit", seq=0),
    )
    assert project(result.alerts) == [
        orphaned("open", "n1", ["a1"], trigger="e-ck"),
        orphaned("resolved", "n1", [], trigger="e-admit"),
        orphaned("open", "n1", ["a1"], trigger="e-evict"),
    ]


def test_an_event_without_seq_is_applied_at_once_while_others_wait():
    result = run(
        make_checkpoint(event_id="e-waits", node_id="n1", referents=["gone"], seq=1),
        make_checkpoint(event_id="e-now", node_id="n2", referents=["gone"]),
    )
    assert project(result.alerts) == [orphaned("open", "n2", ["gone"], trigger="e-now")]
    assert result.waiting == {"ctx-1": [1]}


def test_a_seq_below_the_next_expected_is_dropped():
    result = run(
        make_checkpoint(event_id="e0", node_id="n1", seq=0),
        make_checkpoint(event_id="e0-again", node_id="n2", referents=["gone"], seq=0),
    )
    assert result.alerts == []
    assert (result.events, result.applied, result.dropped) == (2, 1, 1)


def test_a_seq_equal_to_one_already_waiting_is_dropped_and_the_first_wins():
    result = run(
        make_checkpoint(event_id="first", node_id="n1", referents=["x"], seq=1),
        make_checkpoint(event_id="second", node_id="n1", referents=["y"], seq=1),
        admit("z", event_id="e0", seq=0),
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["x"], trigger="first")]
    assert result.dropped == 1


def test_seq_is_one_counter_shared_by_both_event_kinds():
    result = run(
        make_checkpoint(event_id="e2", node_id="n1", referents=["a1"], seq=2),
        admit("a1", event_id="e1", seq=1),
        evict("a1", event_id="e0", seq=0),
    )
    assert result.alerts == []
    assert result.waiting == {}


def test_a_dead_lettered_event_never_touches_seq_state():
    bad = as_line(make_artifact(event_id="bad", seq=0, op="deleted"))
    result = run(bad, make_checkpoint(event_id="good", node_id="n1", referents=["gone"], seq=0))
    assert project(result.alerts) == [orphaned("open", "n1", ["gone"], trigger="good")]
    assert [lineno for lineno, _ in result.dead_letters] == [1]
    assert result.waiting == {}


def test_a_dead_lettered_event_id_is_not_remembered_as_applied():
    bad = as_line(make_checkpoint(event_id="e1", node_id="n1", level="top"))
    result = run(bad, make_checkpoint(event_id="e1", node_id="n1", referents=["gone"]))
    assert project(result.alerts) == [orphaned("open", "n1", ["gone"], trigger="e1")]


def test_waiting_events_at_end_of_input_are_reported_not_flushed():
    result = run(
        make_checkpoint(node_id="n1", referents=["gone"], seq=2),
        make_checkpoint(node_id="n2", referents=["gone"], seq=5),
        make_checkpoint(node_id="n3", referents=["gone"], seq=0, context_id="other"),
    )
    assert project(result.alerts)[0]["node_id"] == "n3"
    assert len(result.alerts) == 1
    assert result.waiting == {"ctx-1": [2, 5]}
    assert result.summary().endswith(", 2 waiting")


def test_sequence_gap_is_declared_after_seq_gap_limit_waiting_events_then_they_drain():
    result = run(
        admit("x", event_id="e0", seq=0),
        make_checkpoint(event_id="e3", node_id="n3", referents=["gone"], seq=3),
        make_checkpoint(event_id="e4", node_id="n4", referents=["gone"], seq=4),
        make_checkpoint(event_id="e5", node_id="n5", referents=["gone"], seq=5, occurred_at="2024-05-01T10:00:00Z"),
        make_checkpoint(event_id="e1-late", node_id="late", referents=["gone"], seq=1),
        make_checkpoint(event_id="e6", node_id="n6", referents=["gone"], seq=6),
        seq_gap_limit=2,
    )
    assert project(result.alerts) == [
        gap(1, 2, trigger="e5"),
        orphaned("open", "n3", ["gone"], trigger="e3"),
        orphaned("open", "n4", ["gone"], trigger="e4"),
        orphaned("open", "n5", ["gone"], trigger="e5"),
        orphaned("open", "n6", ["gone"], trigger="e6"),
    ]
    gap_alert = result.alerts[0]
    assert (gap_alert["node_id"], gap_alert["level"], gap_alert["action"], gap_alert["severity"]) == (
        None, None, "resync", "warning",
    )
    assert gap_alert["detected_at"] == "2024-05-01T10:00:00Z"
    assert (gap_alert["subtree"], gap_alert["previous_orphans"], gap_alert["orphans"]) == (None, None, [])
    assert result.dropped == 1
    assert result.waiting == {}


def test_exactly_seq_gap_limit_waiting_events_do_not_declare_a_gap():
    waiting = [admit(f"a{s}", seq=s) for s in range(1, 4)]
    result = run(*waiting, seq_gap_limit=3)
    assert result.alerts == []
    assert result.waiting == {"ctx-1": [1, 2, 3]}


def test_the_default_seq_gap_limit_is_one_thousand_waiting_events():
    events = [admit(f"a{s}", seq=s, event_id=f"e{s}") for s in range(2, 1003)]
    result = run(*events)
    assert project(result.alerts) == [gap(0, 1, trigger="e1002")]
    assert result.waiting == {}
    assert result.applied == 1001


def test_a_gap_declared_without_a_first_event_starts_at_zero():
    result = run(admit("a", event_id="e7", seq=7), seq_gap_limit=0)
    assert project(result.alerts) == [gap(0, 6, trigger="e7")]
    assert result.waiting == {}


def test_since_starts_each_contexts_expected_seq_at_the_first_event_read():
    events = (
        make_checkpoint(event_id="a42", context_id="A", node_id="n", referents=["gone"], seq=42),
        make_checkpoint(event_id="b7", context_id="B", node_id="n", referents=["gone"], seq=7),
        make_checkpoint(event_id="a43", context_id="A", node_id="m", referents=["gone"], seq=43),
        make_checkpoint(event_id="a41", context_id="A", node_id="old", referents=["gone"], seq=41),
    )
    with_since = run(*events, since=True)
    assert [a["trigger"]["event_id"] for a in with_since.alerts] == ["a42", "b7", "a43"]
    assert with_since.waiting == {}
    assert with_since.dropped == 1
    without = run(*events)
    assert without.alerts == []
    assert without.waiting == {"A": [41, 42, 43], "B": [7]}


def test_since_starts_at_the_first_event_with_a_seq():
    result = run(
        make_checkpoint(event_id="no-seq", node_id="n0"),
        make_checkpoint(event_id="s5", node_id="n1", referents=["gone"], seq=5),
        since=True,
    )
    assert project(result.alerts) == [orphaned("open", "n1", ["gone"], trigger="s5")]


# --------------------------------------------------------------------------- ordering, ids, contexts


def test_alerts_of_one_event_come_by_node_id_then_orphaned_before_dropped():
    result = run(
        make_checkpoint(node_id="z", level="root", children=["m"]),
        make_checkpoint(node_id="a", level="section", children=["m"]),
        make_checkpoint(event_id="e-m", node_id="m", referents=["gone2", "gone1"], raw_negative_constraints=["k"]),
    )
    assert project(result.alerts) == [
        dropped("open", "a", ["k"], trigger="e-m"),
        orphaned("open", "m", ["gone1", "gone2"], trigger="e-m"),
        dropped("open", "m", ["k"], trigger="e-m"),
        dropped("open", "z", ["k"], trigger="e-m"),
    ]


def test_two_contexts_with_the_same_ids_are_independent():
    result = run(
        admit("a1", context_id="c1"),
        admit("a1", context_id="c2"),
        make_checkpoint(context_id="c1", node_id="n1", referents=["a1"], children=["leaf"]),
        make_checkpoint(context_id="c2", node_id="n1", referents=["a1"]),
        make_checkpoint(context_id="c2", node_id="leaf", raw_negative_constraints=["k"], negative_constraints=["k"]),
        evict("a1", context_id="c2", event_id="e-c2"),
        make_checkpoint(context_id="c2", node_id="n1", referents=["a1", "b"], event_id="v2-c2"),
    )
    assert [(a["context_id"], a["rule"], a["node_id"]) for a in result.alerts] == [
        ("c2", "orphaned_referent", "n1"),
        ("c2", "non_idempotent", "n1"),
    ]


def test_alert_id_is_deterministic_across_runs():
    events = (
        make_checkpoint(event_id="e1", node_id="n1", referents=["a1"], raw_negative_constraints=["k"]),
        admit("a1", event_id="e2"),
    )
    first, second = run(*events), run(*events)
    assert [a["alert_id"] for a in first.alerts] == [a["alert_id"] for a in second.alerts]
    assert first.alerts == second.alerts
    assert len({a["alert_id"] for a in first.alerts}) == 3


def test_alert_id_differs_when_status_set_or_trigger_differ():
    base = run(make_checkpoint(event_id="e1", node_id="n1", referents=["a"])).alerts[0]["alert_id"]
    other_set = run(make_checkpoint(event_id="e1", node_id="n1", referents=["b"])).alerts[0]["alert_id"]
    other_trigger = run(make_checkpoint(event_id="e2", node_id="n1", referents=["a"])).alerts[0]["alert_id"]
    other_node = run(make_checkpoint(event_id="e1", node_id="n2", referents=["a"])).alerts[0]["alert_id"]
    other_context = run(make_checkpoint(event_id="e1", node_id="n1", referents=["a"], context_id="c9")).alerts[0][
        "alert_id"
    ]
    resolved = run(make_checkpoint(event_id="e1", node_id="n1", referents=["a"]), admit("a", event_id="e1-b"))
    resolved_again = run(make_checkpoint(event_id="x", node_id="n1", referents=["a"]), admit("a", event_id="e1-b"))
    ids = {base, other_set, other_trigger, other_node, other_context, resolved.alerts[1]["alert_id"]}
    assert len(ids) == 6
    assert resolved.alerts[1]["alert_id"] == resolved_again.alerts[1]["alert_id"]


def test_alert_id_differs_between_rules_on_the_same_node_and_trigger():
    result = run(make_checkpoint(event_id="e1", node_id="n1", referents=["k"], raw_negative_constraints=["k"]))
    assert [a["rule"] for a in result.alerts] == ["orphaned_referent", "negative_constraint_dropped"]
    assert result.alerts[0]["alert_id"] != result.alerts[1]["alert_id"]


def test_detected_at_is_the_occurred_at_of_the_trigger():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1", referents=["a1"], occurred_at="2024-01-01T00:00:00Z"),
        admit("a1", event_id="e2", occurred_at="2024-01-02T03:04:05+02:00"),
        evict("a1", event_id="e3"),
        admit("a1", event_id="e4", occurred_at=5),
    )
    assert [a["detected_at"] for a in result.alerts] == [
        "2024-01-01T00:00:00Z",
        "2024-01-02T03:04:05+02:00",
        None,
        None,
    ]


def test_a_drained_event_keeps_its_own_occurred_at():
    result = run(
        make_checkpoint(event_id="e1", node_id="n1", referents=["gone"], seq=1, occurred_at="2024-01-01T00:00:01Z"),
        admit("x", event_id="e0", seq=0, occurred_at="2024-01-01T00:00:00Z"),
    )
    assert [(a["trigger"]["event_id"], a["detected_at"]) for a in result.alerts] == [
        ("e1", "2024-01-01T00:00:01Z")
    ]


def test_offline_trigger_has_null_topic_partition_offset():
    result = run(make_checkpoint(event_id="e1", node_id="n1", referents=["gone"]))
    assert result.alerts[0]["trigger"] == {
        "event_id": "e1", "type": "checkpoint", "topic": None, "partition": None, "offset": None,
    }
    assert result.alerts[0]["context_id"] == "ctx-1"
    assert (result.alerts[0]["schema_version"], result.alerts[0]["type"]) == (1, "alert")


def test_alert_fields_come_in_the_wire_order():
    result = run(make_checkpoint(event_id="e1", node_id="n1", referents=["gone"]))
    assert list(result.alerts[0]) == [
        "schema_version", "type", "alert_id", "status", "rule", "action", "severity", "context_id", "node_id",
        "level", "orphans", "previous_orphans", "missing_constraints", "set_size", "truncated", "set_digest",
        "subtree", "subtree_size", "subtree_truncated", "gap", "trigger", "detected_at",
    ]


# --------------------------------------------------------------------------- Engine.process directly


def _event(**fields):
    return decode_event(as_line(fields))


def test_a_drained_event_keeps_its_own_source_offset():
    engine, state = Engine(), DictState()
    waits = engine.process(
        state,
        _event(**make_checkpoint(event_id="e1", node_id="n1", referents=["gone"], seq=1)),
        Source("compaction-events", 3, 17),
    )
    assert (waits.alerts, waits.buffered) == ([], 1)
    out = engine.process(state, _event(**admit("x", event_id="e0", seq=0)), Source("artifact-events", 3, 99))
    assert out.buffered == 0
    assert [e.event_id for e, _ in out.applied] == ["e0", "e1"]
    assert out.alerts[0].trigger == Trigger("e1", "checkpoint", "compaction-events", 3, 17)


def test_the_gap_alert_is_triggered_by_the_arriving_events_source():
    engine, state = Engine(seq_gap_limit=1), DictState()
    engine.process(state, _event(**admit("x", event_id="e2", seq=2)), Source("artifact-events", 0, 5))
    out = engine.process(state, _event(**admit("y", event_id="e3", seq=3)), Source("artifact-events", 0, 6))
    assert project(out.alerts) == [gap(0, 1, trigger="e3")]
    assert out.alerts[0].trigger.offset == 6
    assert [e.event_id for e, _ in out.applied] == ["e2", "e3"]


def test_process_reports_dropped_and_duplicate_events():
    engine, state = Engine(), DictState()
    engine.process(state, _event(**admit("x", event_id="e0", seq=0)), OFFLINE)
    below = engine.process(state, _event(**admit("x", event_id="e9", seq=0)), OFFLINE)
    dup = engine.process(state, _event(**admit("y", event_id="e0")), OFFLINE)
    assert (below.dropped, below.applied, below.alerts) == (1, [], [])
    assert (dup.duplicates, dup.applied, dup.alerts) == (1, [], [])


def test_the_engine_folds_over_state_so_two_states_do_not_share_anything():
    engine = Engine()
    s1, s2 = DictState(), DictState()
    engine.process(s1, _event(**admit("a1")), OFFLINE)
    out = engine.process(s2, _event(**make_checkpoint(event_id="e1", node_id="n1", referents=["a1"])), OFFLINE)
    assert project(out.alerts) == [orphaned("open", "n1", ["a1"], trigger="e1")]


def test_a_negative_seq_gap_limit_is_refused():
    with pytest.raises(ValueError, match="seq_gap_limit"):
        Engine(seq_gap_limit=-1)


# --------------------------------------------------------------------------- verdicts


def test_verdicts_say_accepted_replaced_frozen_and_ignored_frozen_with_authority():
    result = run(
        admit("a"),
        make_checkpoint(event_id="v1", node_id="n1", referents=["a"]),
        make_checkpoint(event_id="v2", node_id="n1", referents=["a"], text="reworded"),
        make_checkpoint(event_id="v3", node_id="n1", referents=["a", "gone"]),
        make_checkpoint(event_id="v4", node_id="n1", referents=["a"]),
        make_checkpoint(event_id="m1", node_id="m1", referents=["gone"]),
    )
    assert verdicts_of(result) == [
        ("n1", "accepted", True, "v1"),
        ("n1", "replaced", True, "v2"),
        ("n1", "frozen", False, "v3"),
        ("n1", "ignored-frozen", False, "v4"),
        ("m1", "accepted", False, "m1"),
    ]
    assert [v["open_rules"] for v in result.verdicts] == [[], [], ["non_idempotent"], ["non_idempotent"],
                                                          ["orphaned_referent"]]
    assert [v["versions"] for v in result.verdicts] == [1, 2, 2, 2, 1]
    assert [v["frozen"] for v in result.verdicts] == [False, False, True, True, False]


def test_a_node_with_an_open_dropped_alert_is_not_authoritative():
    result = run(
        make_checkpoint(event_id="v1", node_id="n1", raw_negative_constraints=["k"]),
        make_checkpoint(event_id="v2", node_id="n1", raw_negative_constraints=["k"], negative_constraints=["K"]),
    )
    assert verdicts_of(result) == [("n1", "accepted", False, "v1"), ("n1", "replaced", True, "v2")]
    assert result.verdicts[0]["open_rules"] == ["negative_constraint_dropped"]


def test_a_frozen_node_still_gets_dropped_alerts_from_a_late_child():
    result = run(
        make_checkpoint(event_id="p1", node_id="p", level="section", children=["late"]),
        make_checkpoint(event_id="p2", node_id="p", level="section", children=["late"], referents=["gone"]),
        make_checkpoint(event_id="e-late", node_id="late", raw_negative_constraints=["k"], negative_constraints=["k"]),
    )
    assert project(result.alerts) == [
        non_idempotent("p", ["gone"], [], trigger="p2"),
        dropped("open", "p", ["k"], trigger="e-late"),
    ]


def test_artifact_ids_and_node_ids_are_separate_namespaces():
    result = run(
        make_checkpoint(node_id="x"),
        make_checkpoint(event_id="e-n", node_id="n", referents=["x"], children=["x"]),
    )
    assert project(result.alerts) == [orphaned("open", "n", ["x"], trigger="e-n")]


def test_alert_id_hashes_each_of_context_node_rule_status_set_and_trigger():
    from stream.domain.engine import alert_id

    args = ("ctx", "n1", "orphaned_referent", "open", ["a"], "e1")
    variants = [
        ("ctx2", "n1", "orphaned_referent", "open", ["a"], "e1"),
        ("ctx", "n2", "orphaned_referent", "open", ["a"], "e1"),
        ("ctx", "n1", "negative_constraint_dropped", "open", ["a"], "e1"),
        ("ctx", "n1", "orphaned_referent", "resolved", ["a"], "e1"),
        ("ctx", "n1", "orphaned_referent", "open", ["a", "b"], "e1"),
        ("ctx", "n1", "orphaned_referent", "open", ["a"], "e2"),
    ]
    assert alert_id(*args) == alert_id(*args)
    assert len({alert_id(*args), *(alert_id(*v) for v in variants)}) == 7


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


@given(ids=st.tuples(_TEXT, st.one_of(st.none(), _TEXT), _TEXT, _TEXT, _TEXT),
       sets=st.one_of(st.none(), _TEXT, st.lists(_TEXT, max_size=2), st.tuples(st.integers(0, 2**63 - 1),
                                                                              st.integers(0, 2**63 - 1))))
def test_alert_id_is_sha256_of_the_compact_json_of_its_parts(ids, sets):
    # the id's bytes are a contract (replays and remediation workers recompute it): json.dumps, compact,
    # not ASCII-escaped; strings of any code point, every shape of set the rules give
    import hashlib
    import json

    from stream.domain.engine import alert_id

    context, node, rule, status, trigger = ids
    sets = list(sets) if isinstance(sets, tuple) else sets
    blob = json.dumps([context, node, rule, status, sets, trigger], ensure_ascii=False, separators=(",", ":"))
    assert alert_id(context, node, rule, status, sets, trigger) == hashlib.sha256(blob.encode()).hexdigest()[:32]


def test_the_engine_returns_frozen_values_and_wire_encodes_each_kind_in_one_place():
    import dataclasses
    import json

    from stream.domain import Alert, NodeStatus, Verdict
    from stream.wire import encode

    out = Engine().process(DictState(), _event(**make_checkpoint(event_id="e1", node_id="n1", referents=["a1"])),
                           Source("compaction-events", 2, 40))
    (alert,), (status,), (verdict,) = out.alerts, out.statuses, out.verdicts
    assert (type(alert), type(status), type(verdict)) == (Alert, NodeStatus, Verdict)
    assert out.records == [alert, status]
    with pytest.raises(dataclasses.FrozenInstanceError):
        alert.status = "resolved"  # type: ignore[misc]
    for value in (alert, status, verdict):
        assert encode(value) == encode(value.to_record())
    assert list(json.loads(encode(alert))) == [
        "schema_version", "type", "alert_id", "status", "rule", "action", "severity", "context_id", "node_id",
        "level", "orphans", "previous_orphans", "missing_constraints", "set_size", "truncated", "set_digest",
        "subtree", "subtree_size", "subtree_truncated", "gap", "trigger", "detected_at",
    ]
    assert json.loads(encode(status))["open_rules"] == ["orphaned_referent"] == list(verdict.open_rules)
    assert json.loads(encode(status.without_list()))["degraded_truncated"] is True
