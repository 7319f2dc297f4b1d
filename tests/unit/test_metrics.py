"""The worker's metrics, derived from the engine's Output, against independent counts.

The engine is driven as the handler drives it (``Metrics.record`` of each event's
Output) on a ``DictState``. After every event the incrementally kept gauges must equal
figures recomputed from scratch, straight from the state (referents against the
artifact tiers, a walk of the ledger children for degradation, the waiting table), on
the hand-written DESIGN.md scenarios and on random traces (the same generator as the
engine's property tests); a rebuild from a partition's store continues exactly.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from stream.domain.engine import Engine
from stream.domain.events import OFFLINE
from stream.domain.state import TABLES, DictState
from stream.errors import InvalidEvent
from stream.wire import decode_event
from stream.worker.metrics import (
    LEVELS,
    NO_METRICS,
    REASONS,
    Metrics,
    StateGauges,
    dead_letter_reason,
)
from stream.worker.store import PartitionStore, key_json, value_json
from tests.scenarios import all_lines, design_scenarios
from tests.unit.test_engine_properties import PROPERTY_SETTINGS, arrivals, with_redeliveries

pytestmark = pytest.mark.unit


# --------------------------------------------------------------------------- driver


class Driven:
    """The handler's use of the hooks, offline: the engine, then ``record`` of its Output."""

    def __init__(self, seq_gap_limit: int = 1000) -> None:
        self.engine = Engine(seq_gap_limit)
        self.state = DictState()
        self.metrics = Metrics(CollectorRegistry())
        self.outputs: list[Any] = []

    def feed(self, line: bytes) -> None:
        try:
            event = decode_event(line)
        except InvalidEvent as exc:
            self.metrics.dead_letter("artifact", str(exc))
            return
        out = self.engine.process(self.state, event, OFFLINE)
        self.metrics.record(event, out, received=0.0, sent=0.004)
        self.outputs.append(out)

    def restarted(self, path: Path) -> Driven:
        """A new process on the same state: gauges rebuilt from a store holding it."""
        other = Driven(self.engine.seq_gap_limit)
        other.state = self.state
        store = PartitionStore(path)
        entries = [[TABLES.index(name), key_json(k), value_json(v)]
                   for name in TABLES for k, v in getattr(self.state, name).items()]
        store.write(entries, {})
        other.metrics.state.rebuild([store])
        store.close()
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


def expected_survival(state: DictState) -> dict[str, dict]:
    """Σ|carried ∩ raw| and Σ|raw| per (kind, level) over the kept version of every node."""
    carried: Counter = Counter()
    raw: Counter = Counter()
    for v in state.nodes.values():
        for kind, c, r in (("prohibitions", v["carried"], v["raw"]),
                           ("instructions", v["instructions"], v["raw_instructions"])):
            carried[(kind, v["level"])] += len(set(r) & set(c))
            raw[(kind, v["level"])] += len(set(r))
    return {"carried": {k: v for k, v in carried.items() if v}, "raw": {k: v for k, v in raw.items() if v}}


def actual_survival(g: StateGauges) -> dict[str, dict]:
    return {"carried": {k: v for k, v in g.carried.items() if v}, "raw": {k: v for k, v in g.raw.items() if v}}


def check_against_scratch(d: Driven) -> None:
    assert actual_state_gauges(d.metrics.state) == expected_state_gauges(d.state)
    assert actual_survival(d.metrics.state) == expected_survival(d.state)


def samples(m: Metrics) -> dict[tuple, float]:
    text = m.exposition()[0].decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for fam in text_string_to_metric_families(text) for s in fam.samples
    }


# --------------------------------------------------------------------------- reasons


@pytest.mark.parametrize(("reason", "label"), [
    ("not JSON: expected value at line 1 column 1", "not_json"),
    ("message: must be a JSON object, got array", "message"),
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
    ("output rejected: a 9-byte record for alerts (MessageSizeTooLargeError)", "output_rejected"),
    ("ledger full: the ledger of node 'n' would hold 10001 children, limit is 10000 (CG_MAX_LEDGER)",
     "ledger_full"),
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
def test_gauges_rebuilt_from_a_store_continue_exactly(data, seq_gap_limit: int, cut: int) -> None:
    """A restart (or a rebalance) rebuilds the gauges from the partitions' stores; they
    stay exact event after event."""
    lines = _lines(data.draw(arrivals()))
    d = Driven(seq_gap_limit)
    for line in lines[:cut]:
        d.feed(line)
    r = d.restarted(Path(tempfile.mkdtemp()) / "db")
    check_against_scratch(r)
    for line in lines[cut:]:
        r.feed(line)
        check_against_scratch(r)


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
    alerts = Counter((a.rule, a.status) for o in d.outputs for a in o.alerts)
    verdicts = Counter((v.level, v.verdict) for o in d.outputs for v in o.verdicts)
    for (rule, status), n in alerts.items():
        assert s[("checkpoint_guard_alerts_total", (("rule", rule), ("status", status)))] == n
    for (level, verdict), n in verdicts.items():
        assert s[("checkpoint_guard_checkpoints_total", (("level", level), ("verdict", verdict)))] == n
    opened = [len(a.orphans) for o in d.outputs for a in o.alerts
              if a.rule == "orphaned_referent" and a.status == "open"]
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


def test_every_dead_letter_reason_and_rejected_topic_series_exists_from_the_start() -> None:
    s = samples(Metrics(CollectorRegistry(), output_topics=("alerts", "status")))
    for reason in REASONS:
        assert s[("checkpoint_guard_dead_letters_total", (("reason", reason),))] == 0
    assert s[("checkpoint_guard_output_rejected_total", (("topic", "status"),))] == 0
    for rule in ("unverifiable_checkpoint",):
        assert s[("checkpoint_guard_alerts_total", (("rule", rule), ("status", "resolved")))] == 0


def test_a_registry_exports_checkpoint_guard_names_and_the_standard_process_and_python_ones() -> None:
    names = Metrics(CollectorRegistry()).sample_names()
    assert names and all(n.startswith(("checkpoint_guard_", "process_", "python_")) for n in names)
    assert {"checkpoint_guard_events_total", "checkpoint_guard_orphan_set_size_bucket",
            "checkpoint_guard_open_alerts", "checkpoint_guard_consumer_lag",
            "checkpoint_guard_authoritative_nodes"} <= names


def test_disabled_metrics_hooks_do_nothing() -> None:
    NO_METRICS.record(None, None)
    NO_METRICS.dead_letter("artifact", "x: y")
    NO_METRICS.output_rejected("t")
