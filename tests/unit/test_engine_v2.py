"""Contract 2.1 (DESIGN.md §3-§4 [v2], [v2.1]), one behaviour per clause, through ``replay``'s path.

The ledger (no laundering) and its bound, ``opaque`` and ``unverifiable_checkpoint``, node
status with inherited degradation, bounded outputs (sets, digests, the nearest-first
subtree), and adversarial shapes giving the same result as a friendly order. The small
random traces against the naive reference are in ``test_engine_properties.py``; here the
sets and graphs are past the 1,000-entry cut.
"""

from __future__ import annotations

import json
import random

import pytest

from stream.domain.engine import SUBTREE_LIMIT, encode_record
from stream.offline.replay import replay_lines
from stream.wire import decode_event
from tests.unit.builders import admit, as_lines, dropped, evict, make_checkpoint, orphaned, project, run

pytestmark = pytest.mark.unit


def statuses(result) -> list[tuple[str, bool, list[str], list[str], str]]:
    """``(node, authoritative, open_rules, degraded_by, trigger)`` of every status record."""
    return [(s["node_id"], s["authoritative"], s["open_rules"], s["degraded_by"], s["trigger"]["event_id"])
            for s in result.statuses]


def final_statuses(result) -> dict[str, dict]:
    """The last status record per node, without its trigger (what the compacted topic holds)."""
    last = {}
    for s in result.statuses:
        last[s["node_id"]] = {k: v for k, v in s.items() if k not in ("trigger", "detected_at")}
    return last


def open_sets(result) -> dict[tuple[str, str], object]:
    """The last alert per (node, rule): the state of every rule at the end."""
    last = {}
    for a in result.alerts:
        last[(a["node_id"], a["rule"])] = (a["status"], a["orphans"], a["missing_constraints"])
    return {k: v for k, v in last.items() if v[0] == "open"}


# --------------------------------------------------------------------------- the ledger


def test_a_re_emission_without_the_raw_constraint_does_not_resolve_the_drop():
    result = run(
        make_checkpoint(event_id="v1", node_id="leaf", raw_negative_constraints=["do not push"]),
        make_checkpoint(event_id="v2", node_id="leaf", raw_negative_constraints=[]),
    )
    assert project(result.alerts) == [dropped("open", "leaf", ["do not push"], trigger="v1")]
    assert statuses(result) == [("leaf", False, ["negative_constraint_dropped"], [], "v1")]


def test_a_root_re_emitted_without_the_child_that_held_the_prohibition_still_requires_it():
    result = run(
        make_checkpoint(event_id="leaf", node_id="leaf", raw_negative_constraints=["k"], negative_constraints=["k"]),
        make_checkpoint(event_id="r1", node_id="root", level="root", children=["leaf"]),
        make_checkpoint(event_id="r2", node_id="root", level="root", children=[]),
    )
    assert project(result.alerts) == [dropped("open", "root", ["k"], trigger="r1")]
    assert result.alerts[0]["subtree"] == ["leaf"]


def test_a_replaced_section_cannot_launder_the_prohibition_of_the_leaf_it_dropped():
    result = run(
        make_checkpoint(event_id="l", node_id="l", raw_negative_constraints=["k"], negative_constraints=["k"]),
        make_checkpoint(event_id="l2", node_id="l2"),
        make_checkpoint(event_id="s1", node_id="s", level="section", children=["l"], negative_constraints=["k"]),
        make_checkpoint(event_id="r", node_id="r", level="root", children=["s"], negative_constraints=["k"]),
        make_checkpoint(event_id="s2", node_id="s", level="section", children=["l2"], negative_constraints=[]),
    )
    # s misses k (l stays in its ledger); the root still requires k through s and
    # carries it, so nothing opens there
    assert project(result.alerts) == [dropped("open", "s", ["k"], trigger="s2")]
    assert result.alerts[0]["subtree"] == ["l", "l2"]


def test_a_frozen_discarded_version_does_not_enter_the_ledger():
    result = run(
        admit("a"),
        make_checkpoint(event_id="v1", node_id="n", referents=["a"]),
        # v2's orphan set ["b"] differs from v1's [] -> frozen, v2 discarded
        make_checkpoint(event_id="v2", node_id="n", referents=["b"], raw_negative_constraints=["k"]),
        make_checkpoint(event_id="p", node_id="p", level="section", children=["n"]),
    )
    rules = [(a["rule"], a["node_id"]) for a in result.alerts]
    assert ("non_idempotent", "n") in rules
    # k came only with the discarded version: the parent does not require it
    assert ("negative_constraint_dropped", "p") not in rules


# --------------------------------------------------------------------------- opaque


def test_an_opaque_checkpoint_opens_unverifiable_checkpoint():
    result = run(make_checkpoint(event_id="o", node_id="n", opaque=True))
    (alert,) = result.alerts
    assert (alert["rule"], alert["status"], alert["action"], alert["severity"]) == (
        "unverifiable_checkpoint", "open", "escalate", "warning")
    assert alert["orphans"] is None and alert["missing_constraints"] is None
    assert statuses(result) == [("n", False, ["unverifiable_checkpoint"], [], "o")]


def test_an_opaque_version_replacing_a_clear_one_and_back_opens_then_resolves():
    result = run(
        make_checkpoint(event_id="v1", node_id="n"),
        make_checkpoint(event_id="v2", node_id="n", opaque=True),
        make_checkpoint(event_id="v3", node_id="n", opaque=False),
    )
    assert [(a["rule"], a["status"], a["trigger"]["event_id"]) for a in result.alerts] == [
        ("unverifiable_checkpoint", "open", "v2"), ("unverifiable_checkpoint", "resolved", "v3"),
    ]
    assert statuses(result) == [
        ("n", True, [], [], "v1"),
        ("n", False, ["unverifiable_checkpoint"], [], "v2"),
        ("n", True, [], [], "v3"),
    ]


def test_an_opaque_node_is_still_checked_by_the_other_rules_with_what_it_declares():
    result = run(make_checkpoint(event_id="o", node_id="n", opaque=True, referents=["gone"],
                                 raw_negative_constraints=["k"]))
    assert [a["rule"] for a in result.alerts] == [
        "orphaned_referent", "negative_constraint_dropped", "unverifiable_checkpoint"]
    assert result.statuses[0]["open_rules"] == [
        "negative_constraint_dropped", "orphaned_referent", "unverifiable_checkpoint"]


def test_opaque_must_be_a_json_boolean():
    base = {"type": "checkpoint", "event_id": "e", "context_id": "c", "node_id": "n", "level": "leaf"}
    for bad in ("true", 1, 0, [], {}):
        result = replay_lines([json.dumps({**base, "opaque": bad}).encode()])
        assert result.dead_letters and result.dead_letters[0][1].startswith("opaque:")
    assert decode_event(json.dumps({**base, "opaque": None}).encode()).opaque is False


# --------------------------------------------------------------------------- node status


def _tree(*extra):
    return run(
        admit("a", event_id="adm"),
        make_checkpoint(event_id="leaf", node_id="leaf", referents=["a"]),
        make_checkpoint(event_id="other", node_id="other"),
        make_checkpoint(event_id="sec", node_id="sec", level="section", children=["leaf"]),
        make_checkpoint(event_id="root", node_id="root", level="root", children=["sec", "other"]),
        *extra,
    )


def test_an_eviction_two_levels_down_degrades_the_section_and_the_root():
    result = _tree(evict("a", event_id="ev"), admit("a", event_id="back"))
    assert project(result.alerts) == [
        orphaned("open", "leaf", ["a"], trigger="ev"),
        orphaned("resolved", "leaf", [], trigger="back"),
    ]
    assert statuses(result)[4:] == [
        ("leaf", False, ["orphaned_referent"], [], "ev"),
        ("root", False, [], ["leaf"], "ev"),
        ("sec", False, [], ["leaf"], "ev"),
        ("leaf", True, [], [], "back"),
        ("root", True, [], [], "back"),
        ("sec", True, [], [], "back"),
    ]  # and none for "other", whose status never changed
    assert [s["degraded_count"] for s in result.statuses[5:7]] == [1, 1]


def test_every_node_gets_its_first_status_and_a_child_never_seen_gets_none():
    result = run(make_checkpoint(event_id="r", node_id="root", level="root", children=["ghost"]))
    assert statuses(result) == [("root", True, [], [], "r")]


def test_a_node_arriving_degraded_degrades_the_parents_that_listed_it_before():
    result = run(
        make_checkpoint(event_id="r", node_id="root", level="root", children=["leaf"]),
        make_checkpoint(event_id="l", node_id="leaf", referents=["never-admitted"]),
    )
    assert statuses(result) == [
        ("root", True, [], [], "r"),
        ("leaf", False, ["orphaned_referent"], [], "l"),
        ("root", False, [], ["leaf"], "l"),
    ]


def test_a_frozen_node_is_not_authoritative():
    result = run(
        make_checkpoint(event_id="v1", node_id="n", referents=["x"]),
        make_checkpoint(event_id="v2", node_id="n", referents=["y"]),
        make_checkpoint(event_id="v3", node_id="n", referents=["z"]),  # ignored: no status
    )
    assert [s["frozen"] for s in result.statuses] == [False, True]
    last = result.statuses[-1]
    assert (last["authoritative"], last["open_rules"], last["trigger"]["event_id"]) == (
        False, ["non_idempotent", "orphaned_referent"], "v2")


def test_constraint_drops_do_not_degrade_ancestors():
    result = run(
        make_checkpoint(event_id="l", node_id="leaf", raw_negative_constraints=["k"]),
        make_checkpoint(event_id="r", node_id="root", level="root", children=["leaf"], negative_constraints=["k"]),
    )
    assert statuses(result)[-1] == ("root", True, [], [], "r")


def test_degradation_through_a_cycle_terminates_and_excludes_the_node_itself():
    result = run(
        make_checkpoint(event_id="a", node_id="a", children=["b"], referents=["gone"]),
        make_checkpoint(event_id="b", node_id="b", children=["a"]),
    )
    final = final_statuses(result)
    assert final["a"]["degraded_by"] == [] and final["a"]["open_rules"] == ["orphaned_referent"]
    assert final["b"]["degraded_by"] == ["a"] and not final["b"]["authoritative"]


def test_status_records_come_after_the_alerts_of_their_event():
    result = _tree(evict("a", event_id="ev"))
    kinds = [(r["type"], r["trigger"]["event_id"]) for r in result.records if r["trigger"]["event_id"] == "ev"]
    assert kinds == [("alert", "ev"), ("status", "ev"), ("status", "ev"), ("status", "ev")]


# --------------------------------------------------------------------------- bounded outputs


def test_a_subtree_lists_its_nearest_thousand_ids_and_counts_no_further():
    leaves = [make_checkpoint(event_id=f"l{i}", node_id=f"l{i:04d}") for i in range(1500)]
    root = make_checkpoint(event_id="r", node_id="r", level="root",
                           children=[f"l{i:04d}" for i in range(1500)], raw_negative_constraints=["k"])
    (alert,) = run(*leaves, root).alerts
    assert len(alert["subtree"]) == SUBTREE_LIMIT and alert["subtree"][-1] == "l0999"
    assert (alert["subtree_size"], alert["subtree_truncated"]) == (None, True)
    (alert,) = run(*leaves[:SUBTREE_LIMIT], root).alerts  # exactly 1,000: all listed, counted
    assert (alert["subtree_size"], alert["subtree_truncated"]) == (SUBTREE_LIMIT, False)


def test_degraded_by_lists_its_first_thousand_ids_and_counts_them_all():
    leaves = [make_checkpoint(event_id=f"l{i}", node_id=f"l{i:04d}", opaque=True) for i in range(1200)]
    root = make_checkpoint(event_id="r", node_id="r", level="root", children=[f"l{i:04d}" for i in range(1200)])
    result = run(*leaves, root)
    last = result.statuses[-1]
    assert last["node_id"] == "r" and last["degraded_count"] == 1200
    assert last["degraded_by"] == [f"l{i:04d}" for i in range(1000)]


def test_an_alert_over_the_output_limit_is_cut_deterministically_and_keeps_its_id():
    limit = 1 << 20
    leaves = []
    for j in range(3):  # three leaves of ~0.5 MB of prohibitions each, carried where they arise
        keys = [f"do not touch file {j}-{i:05d} " + "x" * 1400 for i in range(340)]
        leaves.append(make_checkpoint(event_id=f"l{j}", node_id=f"l{j}", raw_negative_constraints=keys,
                                      negative_constraints=keys))
    root = make_checkpoint(event_id="big", node_id="root", level="root", children=[f"l{j}" for j in range(3)])
    events = as_lines(*leaves, root)
    full = replay_lines(events).alerts[0]
    cut = replay_lines(events, max_output_bytes=limit).alerts[0]
    again = replay_lines(events, max_output_bytes=limit).alerts[0]
    data = encode_record(cut)
    assert len(encode_record(full)) > limit
    assert len(data) <= limit and json.loads(data) == cut and cut == again
    # every record lists at most 1,000; this one is also cut to fit the byte limit
    assert (full["set_size"], full["truncated"], len(full["missing_constraints"])) == (1020, True, 1000)
    assert cut["truncated"] is True and cut["set_size"] == 1020
    assert cut["missing_constraints"] == full["missing_constraints"][: len(cut["missing_constraints"])]
    assert 0 < len(cut["missing_constraints"]) < 1000
    assert (cut["alert_id"], cut["set_digest"]) == (full["alert_id"], full["set_digest"])
    assert cut["subtree"] == full["subtree"] == ["l0", "l1", "l2"]


def _breadth_first(ledger: dict[str, set[str]], start: str) -> list[str]:
    """DESIGN.md §4 [v2.1], naively: stored nodes level by level, each node's ledger
    children in sorted order, each once, ``start`` left out."""
    order, seen, frontier = [], {start}, [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(ledger.get(node, ())):
                if child in ledger and child not in seen:
                    seen.add(child)
                    order.append(child)
                    following.append(child)
        frontier = following
    return order


@pytest.mark.parametrize("seed", [1, 2])
def test_the_subtree_is_the_nearest_thousand_of_a_breadth_first_walk_of_the_ledgers(seed):
    rng = random.Random(seed)
    ids = [f"n{i:04d}" for i in range(1400)]
    events, ledger = [], {}
    for version in (1, 2):  # second versions add children: the walk follows every version's
        for i, node in enumerate(ids):
            if version == 2 and i % 3:
                continue
            # mostly links down to the next 40 nodes (a node far from the end reaches over
            # 1,000), shared children, cycles among the last 60, children never seen
            kids = rng.sample(ids[i + 1:i + 41], min(len(ids) - i - 1, rng.randint(1, 3)))
            kids += rng.sample(ids[1340:], 1) if i >= 1340 else []
            kids.append(f"never-seen-{i}")
            events.append(make_checkpoint(event_id=f"e{version}-{i}", node_id=node, children=kids))
            ledger.setdefault(node, set()).update(kids)
    events.append(make_checkpoint(event_id="late", node_id="n1399", children=sorted(ledger["n1399"]),
                                  raw_negative_constraints=["do not rebase"]))
    alerts = [a for a in run(*events).alerts if a["trigger"]["event_id"] == "late"]
    assert len(alerts) > 500
    cut = 0
    for alert in alerts:
        expected = _breadth_first(ledger, alert["node_id"])
        assert alert["subtree"] == expected[:SUBTREE_LIMIT]
        assert alert["subtree_truncated"] is (len(expected) > SUBTREE_LIMIT)
        assert alert["subtree_size"] == (None if len(expected) > SUBTREE_LIMIT else len(expected))
        cut += alert["subtree_truncated"]
    assert 0 < cut < len(alerts)  # both kinds of walk were checked


@pytest.mark.parametrize("n", [SUBTREE_LIMIT + 1, SUBTREE_LIMIT + 2])
def test_a_chain_lists_the_nearest_thousand_sections_and_is_cut_only_past_them(n):
    # a chain of n sections, then a diamond at its top: two single-child nodes sharing one child
    chain = [make_checkpoint(event_id=f"c{i}", node_id=f"c{i:05d}", level="section",
                             children=[f"c{i + 1:05d}"] if i + 1 < n else []) for i in range(n)]
    diamond = [make_checkpoint(event_id="a", node_id="a", level="section", children=["c00000"]),
               make_checkpoint(event_id="b", node_id="b", level="section", children=["c00000"]),
               make_checkpoint(event_id="top", node_id="top", level="root", children=["a", "b"])]
    late = make_checkpoint(event_id="late", node_id=f"c{n - 1:05d}", level="section",
                           raw_negative_constraints=["do not force-push"])
    alerts = {a["node_id"]: a for a in run(*reversed(chain), *diamond, late).alerts}
    ledger = {e["node_id"]: set(e["children"]) for e in (*chain, *diamond)}
    for node in ("c00000", "top", "a", f"c{n - 3:05d}"):
        expected = _breadth_first(ledger, node)
        assert alerts[node]["subtree"] == expected[:SUBTREE_LIMIT]
        assert alerts[node]["subtree_truncated"] is (len(expected) > SUBTREE_LIMIT)
    # the chain's head reaches n - 1 sections: exactly 1,000 listed and counted, or cut at the 1,001st
    assert alerts["c00000"]["subtree_truncated"] is (n - 1 > SUBTREE_LIMIT)
    assert alerts["c00000"]["subtree_size"] == (None if n - 1 > SUBTREE_LIMIT else SUBTREE_LIMIT)
    assert alerts["top"]["subtree"][:3] == ["a", "b", "c00000"] and alerts["top"]["subtree_truncated"] is True


def test_sets_past_the_cut_keep_their_size_and_digest_per_key():
    from tests.reference import digest_of

    refs = [f"r{i:05d}" for i in range(2500)]
    rng = random.Random(3)
    events = [make_checkpoint(event_id="n", node_id="n1", referents=refs)]
    live: set[str] = set()
    for k in range(400):
        aid = rng.choice(refs)
        events.append(evict(aid, event_id=f"x{k}") if aid in live else admit(aid, event_id=f"x{k}"))
        live ^= {aid}
    alerts = run(*events).alerts
    assert len(alerts) == 401
    live = set()
    for alert, event in zip(alerts, events, strict=True):
        if event["type"] == "artifact":
            live ^= {event["artifact_id"]}
        orphans = sorted(set(refs) - live)
        assert alert["orphans"] == orphans[:1000] and alert["set_size"] == len(orphans)
        assert alert["truncated"] is (len(orphans) > 1000) and alert["set_digest"] == digest_of(orphans)
    assert len({a["alert_id"] for a in alerts}) == 401


def test_sets_that_outgrow_a_plain_list_keep_their_order_and_counts():
    """Past 256 keys a set moves from a sorted list to a SortedList (engine.SMALL_SET):
    the ledger, the missing keys and the degrading nodes read the same on both sides."""
    from stream.domain.engine import SMALL_SET

    n = SMALL_SET + 44
    versions = [make_checkpoint(event_id=f"v{i}", node_id="hub", level="section", children=[f"l{i:04d}"],
                                raw_negative_constraints=[f"never touch {i:04d}"]) for i in range(n)]
    leaves = [make_checkpoint(event_id=f"l{i}", node_id=f"l{i:04d}", opaque=True) for i in range(n)]
    clear = [make_checkpoint(event_id=f"c{i}", node_id=f"l{i:04d}") for i in reversed(range(n))]
    result = run(*versions, *leaves, *clear)
    drops = [a for a in result.alerts if a["rule"] == "negative_constraint_dropped"]
    assert drops[-1]["missing_constraints"] == [f"never touch {i:04d}" for i in range(n)]
    assert drops[-1]["set_size"] == n and drops[-1]["subtree"] == []
    hub = [s for s in result.statuses if s["node_id"] == "hub"]
    counts = [s["degraded_count"] for s in hub]
    assert max(counts) == n and counts[-1] == 0 and hub[-1]["open_rules"] == ["negative_constraint_dropped"]
    widest = next(s for s in hub if s["degraded_count"] == n)
    assert widest["degraded_by"] == [f"l{i:04d}" for i in range(n)]
    assert [s["degraded_by"] for s in hub if s["trigger"]["event_id"] == "c1"] == [["l0000"]]


# --------------------------------------------------------------------------- ledger bound


def test_a_version_past_the_ledger_bound_is_a_dead_letter_of_its_line_and_uses_up_its_seq():
    events = [make_checkpoint(event_id="v1", node_id="hub", children=["a", "b"], seq=0),
              make_checkpoint(event_id="v2", node_id="hub", children=["c"], seq=1),  # a, b, c: 3 > 2
              make_checkpoint(event_id="v3", node_id="hub", children=["a"], raw_negative_constraints=["k"], seq=2),
              make_checkpoint(event_id="v2", node_id="other", seq=3)]  # v2 was never applied: this one is
    result = replay_lines(as_lines(*events), max_ledger=2)
    assert result.dead_letters == [(2, "ledger full: the ledger of node 'hub' would hold 3 children, "
                                       "limit is 2 (CG_MAX_LEDGER)")]
    assert (result.applied, result.waiting) == (3, {})
    assert project(result.alerts) == [dropped("open", "hub", ["k"], trigger="v3")]
    assert [s["node_id"] for s in result.statuses] == ["hub", "hub", "other"]


# --------------------------------------------------------------------------- adversarial shapes


def _chain(n: int, *, top_down: bool):
    nodes = [make_checkpoint(event_id=f"e{i}", node_id=f"n{i:05d}", level="section",
                             children=[f"n{i + 1:05d}"] if i + 1 < n else [],
                             referents=["a"] if i == n - 1 else [],
                             raw_negative_constraints=["k"] if i == n - 1 else [],
                             negative_constraints=["k"])
             for i in range(n)]
    return [admit("a", event_id="adm"), *(nodes if top_down else reversed(nodes)),
            evict("a", event_id="ev"), admit("a", event_id="back")]


def _final(result):
    return final_statuses(result), open_sets(result)


def test_a_twenty_thousand_node_chain_announced_top_down_ends_as_bottom_up():
    top = run(*_chain(20_000, top_down=True))
    bottom = run(*_chain(20_000, top_down=False))
    assert _final(top) == _final(bottom)
    # the eviction at the bottom reached every ancestor and the re-admission cleared it
    evicted = [s for s in top.statuses if s["trigger"]["event_id"] == "ev"]
    assert len(evicted) == 20_000 and all(s["degraded_by"] == ["n19999"] for s in evicted if s["node_id"] != "n19999")
    assert all(s["authoritative"] for s in _final(top)[0].values())


def _wide(n: int, *, root_first: bool):
    kids = [make_checkpoint(event_id=f"c{i}", node_id=f"c{i:05d}", raw_negative_constraints=[f"k{i}"],
                            negative_constraints=[f"k{i}"]) for i in range(n)]
    root = make_checkpoint(event_id="r", node_id="root", level="root", children=[f"c{i:05d}" for i in range(n)],
                           negative_constraints=[f"k{i}" for i in range(n)])
    return [root, *kids] if root_first else [*kids, root]


def test_a_root_with_ten_thousand_children_ends_the_same_in_both_orders():
    first = run(*_wide(10_000, root_first=True))
    last = run(*_wide(10_000, root_first=False))
    assert _final(first) == _final(last)
    assert not first.alerts and not last.alerts


def test_every_record_the_engine_emits_matches_the_published_model():
    from stream.wire import Alert, Status

    result = _tree(evict("a", event_id="ev"), make_checkpoint(event_id="op", node_id="o", opaque=True),
                   make_checkpoint(event_id="d", node_id="d", raw_negative_constraints=["k"], children=["leaf"]))
    assert {r["rule"] for r in result.alerts} == {"orphaned_referent", "unverifiable_checkpoint",
                                                   "negative_constraint_dropped"}
    for record in result.records:
        model = Alert if record["type"] == "alert" else Status
        assert model.model_validate(record).model_dump(exclude_unset=True) == record
