"""The worker's metrics, derived from the engine's Output, against independent counts.

The engine is driven the way the agent drives it (an overlay over the state, the
``measure`` hook before the flush, ``record`` after) on a ``DictState``. After every
event the incrementally kept gauges must equal figures recomputed from scratch —
straight from the state (referents against the artifact tiers, the waiting table) and
from the events (the last version seen of each node) — on the hand-written DESIGN.md
scenarios and on random traces (the same generator as the engine's property tests).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from stream.domain.engine import Engine
from stream.domain.events import OFFLINE, CheckpointEvent
from stream.domain.state import DictState
from stream.errors import InvalidEvent
from stream.metrics import (
    LEVELS,
    METRICS,
    NO_METRICS,
    Metrics,
    StateGauges,
    dead_letter_reason,
    journal_pending,
    rolled_forward,
)
from stream.tables import OverlayState
from stream.wire import decode_event
from tests.scenarios import all_lines, design_scenarios
from tests.unit.test_engine_properties import PROPERTY_SETTINGS, arrivals, with_redeliveries

pytestmark = pytest.mark.unit


# --------------------------------------------------------------------------- driver


class Driven:
    """The agent's use of the hooks, offline: engine over an overlay, measure, flush, record."""

    def __init__(self, seq_gap_limit: int = 1000) -> None:
        self.engine = Engine(seq_gap_limit)
        self.state = DictState()
        self.metrics = Metrics(CollectorRegistry())
        self.last_seen: dict[tuple[str, str], CheckpointEvent] = {}
        self.outputs: list[Any] = []

    def feed(self, line: bytes) -> None:
        try:
            event = decode_event(line)
        except InvalidEvent as exc:
            self.metrics.dead_letter("artifact", str(exc))
            return
        overlay = OverlayState(self.state)
        out = self.engine.process(overlay, event, OFFLINE)
        observed = self.metrics.measure(event, out, self.state)
        overlay.flush()
        self.metrics.record(observed, received=0.0, acked=0.004)
        self.outputs.append(out)
        for ev, _ in out.applied:
            if isinstance(ev, CheckpointEvent):
                self.last_seen[(ev.context_id, ev.node_id)] = ev

    def restarted(self) -> "Driven":
        """A new process on the same state: gauges rebuilt from the tables."""
        other = Driven(self.engine.seq_gap_limit)
        other.state = self.state
        other.metrics.state.rebuild(self.state.nodes.items(), self.state.alert_sets.items(),
                                    self.state.seq.items(), reach=self.state.reach.items())
        return other


def _lines(events: Iterable[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(e, ensure_ascii=False).encode("utf-8") for e in events]


def expected_state_gauges(state: DictState) -> dict[str, dict]:
    """The state gauges recomputed from scratch: O(n) from the artifact tiers; degraded
    by a walk of the ledger children (DESIGN.md §4 Node status)."""
    declared: Counter = Counter()
    unreachable: Counter = Counter()
    open_: Counter = Counter()
    nodes: Counter = Counter()
    authoritative: Counter = Counter()
    degraded: Counter = Counter()

    def orphans_of(ctx: str, rec: dict) -> list[str]:
        return [r for r in rec["referents"] if not state.artifacts.get((ctx, r))]

    def bad(ctx: str, node: str) -> bool:
        rec = state.nodes[(ctx, node)]
        return bool(orphans_of(ctx, rec)) or rec["opaque"]

    for (ctx, node), rec in state.nodes.items():
        lvl = rec["level"]
        declared[lvl] += len(rec["referents"])
        orphans = orphans_of(ctx, rec)
        unreachable[lvl] += len(orphans)
        missing = bool((state.alert_sets.get((ctx, node)) or {}).get("m"))
        for rule, is_open in (("orphaned_referent", orphans), ("negative_constraint_dropped", missing),
                              ("non_idempotent", rec["frozen"]), ("unverifiable_checkpoint", rec["opaque"])):
            if is_open:
                open_[(rule, lvl)] += 1
        seen, stack = set(), list(rec["lchildren"])
        while stack:
            c = stack.pop()
            if c not in seen and (ctx, c) in state.nodes:
                seen.add(c)
                stack.extend(state.nodes[(ctx, c)]["lchildren"])
        is_degraded = any(bad(ctx, c) for c in seen - {node})
        nodes[lvl] += 1
        degraded[lvl] += is_degraded
        authoritative[lvl] += not (orphans or missing or rec["frozen"] or rec["opaque"] or is_degraded)
    nz = lambda c: {k: v for k, v in c.items() if v}  # noqa: E731
    return {"declared": nz(declared), "unreachable": nz(unreachable), "open": nz(open_),
            "waiting": len(state.waiting), "nodes": nz(nodes), "authoritative": nz(authoritative),
            "degraded": nz(degraded)}


def actual_state_gauges(g: StateGauges) -> dict[str, dict]:
    nz = lambda d: {k: v for k, v in d.items() if v}  # noqa: E731
    return {"declared": nz(g.declared), "unreachable": nz(g.unreachable), "open": nz(g.open),
            "waiting": g.waiting, "nodes": nz(g.nodes), "authoritative": nz(g.authoritative),
            "degraded": nz(g.degraded)}


def expected_survival(versions: Iterable[Any]) -> dict[str, dict]:
    """Σ|carried ∩ raw| and Σ|raw| per (kind, level) over the given node versions."""
    carried: Counter = Counter()
    raw: Counter = Counter()
    for v in versions:
        if isinstance(v, CheckpointEvent):
            level, parts = v.level, (("prohibitions", v.negative_constraints, v.raw_negative_constraints),
                                     ("instructions", v.instructions, v.raw_instructions))
        else:
            level, parts = v["level"], (("prohibitions", v["carried"], v["raw"]),
                                        ("instructions", v["instructions"], v["raw_instructions"]))
        for kind, c, r in parts:
            carried[(kind, level)] += len(set(r) & set(c))
            raw[(kind, level)] += len(set(r))
    return {"carried": {k: v for k, v in carried.items() if v}, "raw": {k: v for k, v in raw.items() if v}}


def actual_survival(g: StateGauges) -> dict[str, dict]:
    return {"carried": {k: v for k, v in g.carried.items() if v}, "raw": {k: v for k, v in g.raw.items() if v}}


def check_against_scratch(d: Driven) -> None:
    assert actual_state_gauges(d.metrics.state) == expected_state_gauges(d.state)
    assert actual_survival(d.metrics.state) == expected_survival(d.last_seen.values())


def samples(m: Metrics) -> dict[tuple, float]:
    text = m.exposition()[0].decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text) for s in fam.samples
    }


# --------------------------------------------------------------------------- reasons


@pytest.mark.parametrize(("reason", "label"), [
    ("not JSON: expected value at line 1 column 1", "not_json"),
    ("message: must be a JSON object, got list", "message"),
    ("node_id: required field is missing", "node_id"),
    ("referents.3: String should have at most 1024 characters", "referents"),
    ("negative_constraints.0: a constraint must be a string or an object with a non-empty string 'id'",
     "negative_constraints"),
    ("type: must be 'checkpoint' or 'artifact', got 'x'", "type"),
    ("message key 'a:b' differs from context_id 'c'", "key"),
    ("message key is missing; it must be the UTF-8 context_id", "key"),
    ("message has no value (tombstone)", "tombstone"),
    ("message is 2000000 bytes, over the 1048576-byte limit", "too_large"),
    ("internal error: KeyError", "internal_error"),
    ("whatever.the.field: went wrong", "other"),
    ("no colon at all", "other"),
])
def test_dead_letter_reason_is_a_bounded_field_name(reason: str, label: str) -> None:
    assert dead_letter_reason(reason) == label


# --------------------------------------------------------------------------- gauges vs scratch


def test_state_gauges_equal_a_recount_after_every_event_of_the_design_scenarios() -> None:
    d = Driven()
    for line in all_lines(design_scenarios()):
        d.feed(line)
        check_against_scratch(d)


@PROPERTY_SETTINGS
@given(data=st.data(), seq_gap_limit=st.sampled_from([1, 2, 3, 1000]))
def test_state_gauges_equal_a_recount_after_every_event_of_random_traces(data, seq_gap_limit: int) -> None:
    events = data.draw(with_redeliveries(data.draw(arrivals())))
    d = Driven(seq_gap_limit)
    for line in _lines(events):
        d.feed(line)
        check_against_scratch(d)


@PROPERTY_SETTINGS
@given(data=st.data(), seq_gap_limit=st.sampled_from([1, 2, 1000]), cut=st.integers(0, 60))
def test_gauges_rebuilt_from_the_tables_continue_exactly(data, seq_gap_limit: int, cut: int) -> None:
    """A restart (or a rebalance) rebuilds the gauges from the state; they stay exact,
    except that a frozen node's survival falls back to its kept version until a newer
    version of it is seen again."""
    lines = _lines(data.draw(arrivals()))
    d = Driven(seq_gap_limit)
    for line in lines[:cut]:
        d.feed(line)
    r = d.restarted()
    seen_after: dict[tuple[str, str], CheckpointEvent] = {}
    for line in lines[cut:]:
        r.feed(line)
        seen_after.update(r.last_seen)
        assert actual_state_gauges(r.metrics.state) == expected_state_gauges(r.state)
        versions = {
            key: (seen_after[key] if key in seen_after and rec["frozen"] else
                  r.last_seen.get(key) if not rec["frozen"] else rec)
            for key, rec in r.state.nodes.items()
        }
        # non-frozen nodes: the kept version is the last version seen
        versions = {k: (v if v is not None else r.state.nodes[k]) for k, v in versions.items()}
        assert actual_survival(r.metrics.state) == expected_survival(versions.values())


def _apply_writes(state: DictState, writes: dict[str, list[list]]) -> None:
    for name, entries in writes.items():
        table = getattr(state, name)
        for key, value, deleted in entries:
            if deleted:
                table.pop(tuple(key), None)
            else:
                table[tuple(key)] = value


@pytest.mark.parametrize("cut", range(len(all_lines(design_scenarios()))))
def test_a_rebuild_counts_the_journal_writes_a_crash_left_unapplied(cut: int) -> None:
    """A crash after the journal record and part of the keys: the agent rolls the rest
    forward outside the hooks, so the rebuild must already count them."""
    lines = all_lines(design_scenarios())
    d = Driven()
    for line in lines[:cut]:
        d.feed(line)
    event = decode_event(lines[cut])
    overlay = OverlayState(d.state)
    d.engine.process(overlay, event, OFFLINE)
    writes = overlay.write_set()
    journal = [((event.context_id,), {"event_id": event.event_id, "writes": writes})]
    flat = [(name, entry) for name, entries in writes.items() for entry in entries]
    for name, entry in flat[: len(flat) // 2]:  # the crash: half the keys made it
        _apply_writes(d.state, {name: [entry]})
    pending = journal_pending(journal)
    rebuilt = StateGauges()
    rebuilt.rebuild(rolled_forward(list(d.state.nodes.items()), pending.get("nodes")),
                    rolled_forward(list(d.state.alert_sets.items()), pending.get("alert_sets")),
                    rolled_forward(list(d.state.seq.items()), pending.get("seq")))
    _apply_writes(d.state, writes)  # the roll-forward
    assert actual_state_gauges(rebuilt) == expected_state_gauges(d.state)


# --------------------------------------------------------------------------- counters


@PROPERTY_SETTINGS
@given(data=st.data(), seq_gap_limit=st.sampled_from([1, 2, 1000]))
def test_event_outcomes_add_up_to_the_engine_outputs(data, seq_gap_limit: int) -> None:
    events = data.draw(with_redeliveries(data.draw(arrivals())))
    lines = _lines(events) + [b"not json", b'{"type": "checkpoint"}']
    d = Driven(seq_gap_limit)
    for line in lines:
        d.feed(line)
    got = Counter()
    for (name, labels), value in samples(d.metrics).items():
        if name == "checkpoint_guard_events_total":
            got[dict(labels)["outcome"]] += value
    outs = d.outputs
    assert got == Counter({
        "applied": sum(len(o.applied) for o in outs),
        "duplicate": sum(o.duplicates for o in outs),
        "dropped": sum(o.dropped for o in outs),
        "buffered": sum(o.buffered for o in outs),
        "dead_letter": 2,
    }) + Counter()  # (zero entries dropped on both sides)
    # every line is consumed or still waits
    assert got["applied"] + got["duplicate"] + got["dropped"] + got["dead_letter"] + len(d.state.waiting) == len(lines)


def test_scenario_counters_alerts_verdicts_and_histograms() -> None:
    d = Driven()
    for line in all_lines(design_scenarios()):
        d.feed(line)
    s = samples(d.metrics)
    alerts = Counter((a["rule"], a["status"]) for o in d.outputs for a in o.alerts)
    verdicts = Counter((v["level"], v["verdict"]) for o in d.outputs for v in o.verdicts)
    for (rule, status), n in alerts.items():
        assert s[("checkpoint_guard_alerts_total", (("rule", rule), ("status", status)))] == n
    for (level, verdict), n in verdicts.items():
        assert s[("checkpoint_guard_checkpoints_total", (("level", level), ("verdict", verdict)))] == n
    opened = [len(a["orphans"]) for o in d.outputs for a in o.alerts
              if a["rule"] == "orphaned_referent" and a["status"] == "open"]
    assert s[("checkpoint_guard_orphan_set_size_count", ())] == len(opened)
    assert s[("checkpoint_guard_orphan_set_size_sum", ())] == sum(opened)
    with_alerts = sum(1 for o in d.outputs if o.alerts)
    assert s[("checkpoint_guard_alert_latency_seconds_count", ())] == with_alerts
    assert s[("checkpoint_guard_alert_latency_seconds_bucket", (("le", "0.005"),))] == with_alerts
    assert s[("checkpoint_guard_alert_latency_seconds_bucket", (("le", "0.0025"),))] == 0


def test_ratios_are_exported_only_where_the_denominator_is_positive() -> None:
    d = Driven()
    d.feed(b'{"type":"artifact","event_id":"e1","context_id":"c","artifact_id":"a","op":"admitted"}')
    d.feed(b'{"type":"checkpoint","event_id":"e2","context_id":"c","node_id":"n","level":"leaf",'
           b'"referents":["a","b","c","d"],"raw_negative_constraints":["x","y"],"negative_constraints":["X"],'
           b'"raw_instructions":["i"],"instructions":[]}')
    s = samples(d.metrics)
    assert s[("checkpoint_guard_orphan_ratio", (("level", "leaf"),))] == 0.75
    assert s[("checkpoint_guard_survival_ratio", (("kind", "prohibitions"), ("level", "leaf")))] == 0.5
    assert s[("checkpoint_guard_survival_ratio", (("kind", "instructions"), ("level", "leaf")))] == 0.0
    for lvl in ("section", "root"):
        assert ("checkpoint_guard_orphan_ratio", (("level", lvl),)) not in s
        assert s[("checkpoint_guard_referents_declared", (("level", lvl),))] == 0
    assert s[("checkpoint_guard_open_alerts", (("level", "leaf"), ("rule", "orphaned_referent")))] == 1


def test_a_duplicate_found_while_draining_is_counted_with_an_unknown_type() -> None:
    d = Driven()
    ev = {"type": "artifact", "context_id": "c", "artifact_id": "a", "op": "admitted"}
    d.feed(json.dumps({**ev, "event_id": "e0", "seq": 0}).encode())
    d.feed(json.dumps({**ev, "event_id": "e0", "seq": 2}).encode())  # waits, then a duplicate
    d.feed(json.dumps({**ev, "event_id": "e1", "seq": 1}).encode())  # applied, drains seq 2
    s = samples(d.metrics)
    assert s[("checkpoint_guard_events_total", (("outcome", "duplicate"), ("type", "unknown")))] == 1
    assert s[("checkpoint_guard_events_total", (("outcome", "applied"), ("type", "artifact")))] == 2
    assert s[("checkpoint_guard_events_total", (("outcome", "buffered"), ("type", "artifact")))] == 1
    assert s[("checkpoint_guard_waiting_events", ())] == 0


def test_consumer_lag_comes_from_the_lag_source_and_never_breaks_a_scrape() -> None:
    m = Metrics(CollectorRegistry())
    m.lag_source = lambda: {("in", 1): 5, ("in", 0): 0}
    s = samples(m)
    assert s[("checkpoint_guard_consumer_lag", (("partition", "1"), ("topic", "in")))] == 5
    assert s[("checkpoint_guard_consumer_lag", (("partition", "0"), ("topic", "in")))] == 0

    def broken() -> dict:
        raise RuntimeError("consumer gone")

    m.lag_source = broken
    assert not [k for k in samples(m) if k[0] == "checkpoint_guard_consumer_lag"]


def test_every_series_of_fixed_labels_exists_from_the_start() -> None:
    s = samples(Metrics(CollectorRegistry()))
    for rule in ("orphaned_referent", "negative_constraint_dropped", "non_idempotent"):
        for lvl in LEVELS:
            assert s[("checkpoint_guard_open_alerts", (("level", lvl), ("rule", rule)))] == 0
    assert s[("checkpoint_guard_open_alerts", (("level", "none"), ("rule", "sequence_gap")))] == 0
    assert s[("checkpoint_guard_events_total", (("outcome", "dead_letter"), ("type", "checkpoint")))] == 0
    assert s[("checkpoint_guard_waiting_events", ())] == 0
    assert not any(name.endswith("_created") for name, _ in s)


def test_the_process_registry_exports_only_checkpoint_guard_names() -> None:
    names = METRICS.sample_names()
    assert names and all(n.startswith("checkpoint_guard_") for n in names)
    assert {"checkpoint_guard_events_total", "checkpoint_guard_orphan_set_size_bucket",
            "checkpoint_guard_open_alerts", "checkpoint_guard_consumer_lag"} <= names


def test_disabled_metrics_hooks_do_nothing() -> None:
    assert NO_METRICS.measure(None, None, None) is None
    NO_METRICS.record(None, topic="t")
    NO_METRICS.dead_letter("artifact", "x: y")
