"""Prometheus metrics of the worker, derived from what the engine returns.

The engine reports every change it made (``Output``: alerts, verdicts, outcomes, and per
touched node a :class:`~stream.domain.engine.NodeSummary` before and after), so nothing
here reads the state behind the engine's back. The registry (:data:`REGISTRY`) is
served at ``/metrics``; every name starts with ``checkpoint_guard_``. Definitions (also
in the README, *Monitoring*):

More (the module notes): docs/DURABILITY.md, section ``stream/worker/metrics.py``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from stream import __version__
from stream.domain.engine import (
    ACCEPTED,
    FROZEN,
    IGNORED_FROZEN,
    NEGATIVE_CONSTRAINT_DROPPED,
    NON_IDEMPOTENT,
    OPEN,
    ORPHANED_REFERENT,
    REPLACED,
    SEQUENCE_GAP,
    UNVERIFIABLE_CHECKPOINT,
    NodeSummary,
    Output,
    summarize,
)
from stream.domain.events import Event

log = logging.getLogger("checkpoint_guard.metrics")

disable_created_metrics()  # type: ignore[no-untyped-call]  # ``*_created`` series double the output and nobody graphs them

PREFIX = "checkpoint_guard_"
LEVELS = ("leaf", "section", "root")
KINDS = ("prohibitions", "instructions")
NODE_RULES = (ORPHANED_REFERENT, NEGATIVE_CONSTRAINT_DROPPED, NON_IDEMPOTENT, UNVERIFIABLE_CHECKPOINT)
#: Rules whose alerts also resolve.
RESOLVING_RULES = (ORPHANED_REFERENT, NEGATIVE_CONSTRAINT_DROPPED, UNVERIFIABLE_CHECKPOINT)
VERDICTS = (ACCEPTED, REPLACED, FROZEN, IGNORED_FROZEN)
OUTCOMES = ("applied", "duplicate", "dropped", "buffered", "dead_letter")

#: Fields a dead-letter reason can name before its ':' (the validated fields of
#: DESIGN.md §3, plus ``message``/``type``).
REASON_FIELDS = frozenset({
    "message", "type", "schema_version", "event_id", "context_id", "seq", "node_id",
    "level", "children", "referents", "negative_constraints", "raw_negative_constraints",
    "artifact_id", "op", "tier",
})
#: Every value of ``dead_letters_total{reason}`` (created at 0, so a rule sees the first).
REASONS = (*sorted(REASON_FIELDS), "not_json", "too_large", "tombstone", "key", "internal_error",
           "output_rejected", "ledger_full", "other")

ORPHAN_SET_BUCKETS = (1, 2, 3, 4, 5, 8, 10, 15, 20, 30, 50, 100)
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def dead_letter_reason(reason: str) -> str:
    """A bounded label for a dead-letter reason: the field it names, or a class."""
    for prefix, label in (("not JSON", "not_json"), ("internal error", "internal_error"), ("message key", "key"),
                          ("message has no value", "tombstone"), ("output rejected", "output_rejected"),
                          ("ledger full", "ledger_full")):
        if reason.startswith(prefix):
            return label
    if reason.startswith("message is ") and "limit" in reason:
        return "too_large"
    head, sep, _ = reason.partition(":")
    if not sep:
        return "other"
    name = ".".join(p for p in head.strip().split(".") if not p.isdigit())
    return name if name in REASON_FIELDS else "other"


# --------------------------------------------------------------------------- state figures


@dataclass
class StateGauges:
    """The engine-state gauges as plain sums (read by the collector at scrape time)."""

    declared: dict[str, int] = field(default_factory=dict)
    unreachable: dict[str, int] = field(default_factory=dict)
    open: dict[tuple[str, str], int] = field(default_factory=dict)
    carried: dict[tuple[str, str], int] = field(default_factory=dict)
    raw: dict[tuple[str, str], int] = field(default_factory=dict)
    nodes: dict[str, int] = field(default_factory=dict)
    authoritative: dict[str, int] = field(default_factory=dict)
    degraded: dict[str, int] = field(default_factory=dict)
    waiting: int = 0
    #: contexts with a declared sequence gap (not in the state: a gap is never resolved)
    gap_contexts: set[str] = field(default_factory=set)

    def add(self, n: NodeSummary | None, sign: int) -> None:
        if n is None:
            return
        lvl = n.level
        _inc(self.nodes, lvl, sign)
        _inc(self.declared, lvl, sign * n.declared)
        _inc(self.unreachable, lvl, sign * n.unreachable)
        if n.authoritative:
            _inc(self.authoritative, lvl, sign)
        if n.degraded:
            _inc(self.degraded, lvl, sign)
        for rule, is_open in ((ORPHANED_REFERENT, n.unreachable), (NEGATIVE_CONSTRAINT_DROPPED, n.missing),
                              (NON_IDEMPOTENT, n.frozen), (UNVERIFIABLE_CHECKPOINT, n.opaque)):
            if is_open:
                _inc(self.open, (rule, lvl), sign)
        pk, pr, ik, ir = n.survival
        for kind, k, r in (("prohibitions", pk, pr), ("instructions", ik, ir)):
            _inc(self.carried, (kind, lvl), sign * k)
            _inc(self.raw, (kind, lvl), sign * r)

    def rebuild(self, partitions: Iterable[Any], owns_context: Callable[[str], bool] = lambda ctx: True) -> int:
        """Recompute every sum from the stores' rows (``nodes``, ``alert_sets``, ``reach``,
        ``seq``) of the owned partitions; returns the number of nodes."""
        for sums in (self.declared, self.unreachable, self.open, self.carried, self.raw, self.nodes,
                     self.authoritative, self.degraded):
            sums.clear()
        self.gap_contexts = {ctx for ctx in self.gap_contexts if owns_context(ctx)}
        self.waiting = 0
        n = 0
        for store in partitions:
            sets = dict(store.rows("alert_sets"))
            reach = dict(store.rows("reach"))
            for key, rec in store.rows("nodes"):
                n += 1
                self.add(summarize(rec, sets.get(key), reach.get(key), key[1]), +1)
            self.waiting += sum(len(v.get("waiting") or ()) for _, v in store.rows("seq"))
        return n


def _inc(d: dict[Any, Any], key: Any, by: int) -> None:
    if by:
        d[key] = d.get(key, 0) + by


class _StateCollector:
    """Yields the state gauges and the consumer lag at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.m = metrics

    def describe(self) -> list[GaugeMetricFamily]:
        return [GaugeMetricFamily(name, doc, labels=labels) for name, doc, labels in _STATE_GAUGES]

    def collect(self) -> Iterable[GaugeMetricFamily]:
        g = self.m.state
        fams = {name: GaugeMetricFamily(name, doc, labels=labels) for name, doc, labels in _STATE_GAUGES}
        for rule in NODE_RULES:
            for lvl in LEVELS:
                fams[PREFIX + "open_alerts"].add_metric([rule, lvl], g.open.get((rule, lvl), 0))
        fams[PREFIX + "open_alerts"].add_metric([SEQUENCE_GAP, "none"], len(g.gap_contexts))
        for lvl in LEVELS:
            declared, unreachable = g.declared.get(lvl, 0), g.unreachable.get(lvl, 0)
            fams[PREFIX + "referents_declared"].add_metric([lvl], declared)
            fams[PREFIX + "referents_unreachable"].add_metric([lvl], unreachable)
            if declared:
                fams[PREFIX + "orphan_ratio"].add_metric([lvl], unreachable / declared)
            for kind in KINDS:
                raw, carried = g.raw.get((kind, lvl), 0), g.carried.get((kind, lvl), 0)
                fams[PREFIX + "constraints_raw"].add_metric([kind, lvl], raw)
                fams[PREFIX + "constraints_carried"].add_metric([kind, lvl], carried)
                if raw:
                    fams[PREFIX + "survival_ratio"].add_metric([kind, lvl], carried / raw)
            fams[PREFIX + "nodes"].add_metric([lvl], g.nodes.get(lvl, 0))
            fams[PREFIX + "authoritative_nodes"].add_metric([lvl], g.authoritative.get(lvl, 0))
            fams[PREFIX + "degraded_nodes"].add_metric([lvl], g.degraded.get(lvl, 0))
        fams[PREFIX + "waiting_events"].add_metric([], g.waiting)
        for (topic, partition), lag in sorted(self.m.consumer_lag().items()):
            fams[PREFIX + "consumer_lag"].add_metric([topic, str(partition)], lag)
        fams[PREFIX + "ready"].add_metric([], 1 if self.m.is_ready() else 0)
        if self.m.seq_gap_limit is not None:
            fams[PREFIX + "seq_gap_limit"].add_metric([], self.m.seq_gap_limit)
        fams[PREFIX + "build_info"].add_metric([__version__], 1)
        return list(fams.values())


_STATE_GAUGES: tuple[tuple[str, str, list[str]], ...] = (
    (PREFIX + "open_alerts", "Open alerts by rule and node level (owned partitions).", ["rule", "level"]),
    (PREFIX + "referents_declared", "Sum of |referents| over the kept versions of the level's nodes.", ["level"]),
    (PREFIX + "referents_unreachable", "Sum of |O(n)| (unreachable referents) over the level's nodes.", ["level"]),
    (PREFIX + "orphan_ratio", "referents_unreachable / referents_declared.", ["level"]),
    (PREFIX + "constraints_raw", "Sum of |raw| constraints over the kept version of each node.", ["kind", "level"]),
    (PREFIX + "constraints_carried", "Sum of |carried ∩ raw| over the kept version of each node.", ["kind", "level"]),
    (PREFIX + "survival_ratio", "constraints_carried / constraints_raw.", ["kind", "level"]),
    (PREFIX + "nodes", "Stored summary nodes by level (owned partitions).", ["level"]),
    (PREFIX + "authoritative_nodes", "Nodes an agent may recover from: no open alert, not frozen, "
     "not degraded (DESIGN.md §4).", ["level"]),
    (PREFIX + "degraded_nodes", "Nodes with a node below them that has an open orphaned_referent or "
     "unverifiable_checkpoint alert.", ["level"]),
    (PREFIX + "waiting_events", "Events waiting in the seq buffers (owned partitions).", []),
    (PREFIX + "consumer_lag", "High watermark minus next offset the state covers, per owned input partition.",
     ["topic", "partition"]),
    (PREFIX + "ready", "1 while /readyz answers 200 (partitions assigned, state restored), else 0.", []),
    (PREFIX + "seq_gap_limit", "CG_SEQ_GAP_LIMIT: waiting events per context before a sequence_gap.", []),
    (PREFIX + "build_info", "checkpoint-guard build; the value is always 1.", ["version"]),
)

#: Counters kept as plain dicts (name, help, label names); see :class:`_CounterCollector`.
_COUNTERS = (
    (PREFIX + "events", "Input events by type and outcome.", ["type", "outcome"]),
    (PREFIX + "dead_letters", "Dead-lettered messages by reason (field).", ["reason"]),
    (PREFIX + "alerts", "Alerts emitted by rule and status.", ["rule", "status"]),
    (PREFIX + "checkpoints", "Applied checkpoints by level and verdict.", ["level", "verdict"]),
    (PREFIX + "output_rejected", "Output records the broker rejected for good (dead-lettered instead).",
     ["topic"]),
)


class _CounterCollector:
    """Exports the counters, kept as plain ``{labels: n}`` dicts (a dict increment costs
    ~0.05 µs, ``prometheus_client.Counter.inc`` ~1 µs under its lock; the agent and the
    scrape share one event-loop thread)."""

    def __init__(self, metrics: Metrics) -> None:
        self.m = metrics

    def describe(self) -> list[CounterMetricFamily]:
        return [CounterMetricFamily(name, doc, labels=labels) for name, doc, labels in _COUNTERS]

    def collect(self) -> Iterable[CounterMetricFamily]:
        m = self.m
        out = []
        for (name, doc, labels), values in zip(_COUNTERS, (m.events, m.dead_letters, m.alerts, m.checkpoints,
                                                           m.rejected)):
            fam = CounterMetricFamily(name, doc, labels=labels)
            for key, n in list(cast(Mapping[Any, float], values).items()):
                fam.add_metric(list(key) if isinstance(key, tuple) else [key], n)
            out.append(fam)
        return out


class Metrics:
    """The worker's metrics on their own registry (:data:`METRICS`; tests build their own)."""

    def __init__(self, registry: CollectorRegistry | None = None, *, output_topics: Iterable[str] = ()) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.events: dict[tuple[str, str], int] = {(t, o): 0 for t in ("checkpoint", "artifact") for o in OUTCOMES}
        self.dead_letters: dict[str, int] = {reason: 0 for reason in REASONS}
        self.alerts: dict[tuple[str, str], int] = {
            (rule, status): 0 for rule in (*NODE_RULES, SEQUENCE_GAP)
            for status in ((OPEN, "resolved") if rule in RESOLVING_RULES else (OPEN,))
        }
        self.checkpoints: dict[tuple[str, str], int] = {(lvl, v): 0 for lvl in LEVELS for v in VERDICTS}
        self.rejected: dict[str, int] = {t: 0 for t in output_topics}
        self.orphan_set_size = Histogram(PREFIX + "orphan_set_size",
                                         "Orphan-set size of each open orphaned_referent alert.",
                                         buckets=ORPHAN_SET_BUCKETS, registry=r)
        self.alert_latency = Histogram(PREFIX + "alert_latency_seconds",
                                       "Message receipt in the agent -> its alerts sent.",
                                       buckets=LATENCY_BUCKETS, registry=r)
        self.state = StateGauges()
        #: set by the runtime: () -> {(topic, partition): lag}
        self.lag_source: Callable[[], Mapping[tuple[str, int], int]] | None = None
        #: set by the web views: () -> True while /readyz answers 200
        self.ready_source: Callable[[], bool] | None = None
        #: set by the web views from the settings (exported as seq_gap_limit)
        self.seq_gap_limit: int | None = None
        r.register(_CounterCollector(self))
        r.register(_StateCollector(self))
        # The standard process_* (CPU, memory, fds) and python_* (version, GC) series.
        ProcessCollector(registry=r)
        PlatformCollector(registry=r)
        GCCollector(registry=r)

    def expect_topics(self, topics: Iterable[str]) -> None:
        """Create the ``output_rejected_total{topic}`` series at 0."""
        for t in topics:
            self.rejected.setdefault(t, 0)

    # ------------------------------------------------------------------ hooks
    def dead_letter(self, event_type: str, reason: str) -> None:
        key = (event_type, "dead_letter")
        self.events[key] = self.events.get(key, 0) + 1
        label = dead_letter_reason(reason)
        self.dead_letters[label] = self.dead_letters.get(label, 0) + 1

    def output_rejected(self, topic: str) -> None:
        self.rejected[topic] = self.rejected.get(topic, 0) + 1

    def record(self, event: Event, out: Output, *, received: float | None = None,
               sent: float | None = None) -> None:
        """Account for one processed event (its outputs handed to the producer)."""
        events = self.events
        immediate = not out.buffered and not out.dropped
        if out.buffered:
            key = (event.type, "buffered")
            events[key] = events.get(key, 0) + 1
        if out.dropped:
            key = (event.type, "dropped")
            events[key] = events.get(key, 0) + out.dropped
        for ev, _ in out.applied:
            key = (ev.type, "applied")
            events[key] = events.get(key, 0) + 1
        dups = out.duplicates
        if dups:
            if immediate and not (out.applied and out.applied[0][0] is event) and not (
                    out.rejected and out.rejected[0].event is event):
                key = (event.type, "duplicate")
                events[key] = events.get(key, 0) + 1
                dups -= 1
            if dups:
                key = ("unknown", "duplicate")
                events[key] = events.get(key, 0) + dups
        # rejected events (ledger full) are counted by the dead-letter hook; they leave the buffer too
        taken = len(out.applied) + out.duplicates + len(out.rejected)
        if not immediate or taken > 1:  # something waited or drained
            drained = taken - (1 if immediate else 0)
            self.state.waiting += out.buffered - drained
        if out.alerts:
            alerts = self.alerts
            for a in out.alerts:
                key = (a.rule, a.status)
                alerts[key] = alerts.get(key, 0) + 1
                if a.rule == ORPHANED_REFERENT and a.status == OPEN:
                    self.orphan_set_size.observe(len(a.orphans or ()))
                elif a.rule == SEQUENCE_GAP:
                    self.state.gap_contexts.add(a.context_id)
            if received is not None and sent is not None:
                self.alert_latency.observe(sent - received)
        for v in out.verdicts:
            key = (v.level, v.verdict)
            self.checkpoints[key] = self.checkpoints.get(key, 0) + 1
        for was, now in out.node_changes:
            self.state.add(was, -1)
            self.state.add(now, +1)

    # ------------------------------------------------------------------ scrape side
    def is_ready(self) -> bool:
        if self.ready_source is None:
            return False
        try:
            return bool(self.ready_source())
        except Exception:  # never fail a scrape over readiness
            log.debug("readiness unavailable", exc_info=True)
            return False

    def consumer_lag(self) -> Mapping[tuple[str, int], int]:
        if self.lag_source is None:
            return {}
        try:
            return self.lag_source()
        except Exception:  # never fail a scrape over the lag
            log.debug("consumer lag unavailable", exc_info=True)
            return {}

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def sample_names(self) -> set[str]:
        return sample_names(self.registry)


def sample_names(registry: CollectorRegistry) -> set[str]:
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                "gauge": ("",), "summary": ("_sum", "_count", "")}
    names = set()
    for fam in registry.collect():
        for suffix in suffixes.get(fam.type, ("",)):
            names.add(fam.name + suffix)
    return names


class _NoMetrics:
    """The hooks as no-ops (``CG_METRICS_ENABLED=false``)."""

    def dead_letter(self, *args: Any, **kwargs: Any) -> None:
        pass

    def record(self, *args: Any, **kwargs: Any) -> None:
        pass

    def output_rejected(self, *args: Any, **kwargs: Any) -> None:
        pass


NO_METRICS = _NoMetrics()

__all__ = ["NO_METRICS", "Metrics", "StateGauges", "dead_letter_reason", "sample_names"]
