"""What Prometheus scrapes from a worker besides the engine figures: the standard process
and Python series, build info, readiness, the gap limit, and counters that exist at 0
before their first increment (so ``increase()``-based alert rules see the first one)."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from stream import __version__
from stream.worker.metrics import REASONS, Metrics, dead_letter_reason

pytestmark = pytest.mark.unit


def samples(metrics: Metrics) -> dict[tuple[str, tuple], float]:
    body, _ = metrics.exposition()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(body.decode()) for s in fam.samples}


def test_the_registry_has_the_standard_process_and_python_series() -> None:
    names = Metrics().sample_names()
    assert all(n.startswith(("checkpoint_guard_", "process_", "python_")) for n in names)
    assert {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "python_info",
            "python_gc_collections_total"} <= names


def test_every_dead_letter_reason_series_exists_at_zero_before_the_first_dead_letter() -> None:
    got = samples(Metrics())
    for reason in REASONS:
        assert got[("checkpoint_guard_dead_letters_total", (("reason", reason),))] == 0
    for text in ("not JSON: x", "seq: bad", "weird"):
        assert dead_letter_reason(text) in REASONS


def test_output_rejected_counts_by_topic_from_zero() -> None:
    m = Metrics(output_topics=("alerts", "status"))
    assert samples(m)[("checkpoint_guard_output_rejected_total", (("topic", "status"),))] == 0
    m.output_rejected("status")
    m.output_rejected("status")
    got = samples(m)
    assert got[("checkpoint_guard_output_rejected_total", (("topic", "status"),))] == 2
    assert got[("checkpoint_guard_output_rejected_total", (("topic", "alerts"),))] == 0


def test_build_info_ready_and_gap_limit_gauges() -> None:
    m = Metrics()
    got = samples(m)
    assert got[("checkpoint_guard_build_info", (("version", __version__),))] == 1
    assert got[("checkpoint_guard_ready", ())] == 0  # no readiness source yet: not ready
    assert not any(name == "checkpoint_guard_seq_gap_limit" for name, _ in got)
    m.ready_source, m.seq_gap_limit = (lambda: True), 1000
    got = samples(m)
    assert got[("checkpoint_guard_ready", ())] == 1 and got[("checkpoint_guard_seq_gap_limit", ())] == 1000
    m.ready_source = lambda: 1 / 0  # a failing source never breaks a scrape
    assert samples(m)[("checkpoint_guard_ready", ())] == 0
