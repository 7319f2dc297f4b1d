"""The real input (shipped trajectories) through the engine: pinned figures."""

from __future__ import annotations

from collections import Counter

from stream.adapters import encode_event, load_file, load_trajectories, simulate, survival_table
from stream.adapters.simulated.model import DEFAULT_TRACES
from stream.devtools.report import StreamReport
from stream.offline.replay import replay_lines
from stream.wire import decode_event

DJANGO_11099 = (DEFAULT_TRACES / "mini-swe-agent-deepseek-swebench" / "deepseek_chat_test_1-100"
                / "django__django-11099.traj.json")


def _all_events() -> list[dict]:
    loaded = load_trajectories([DEFAULT_TRACES])
    assert loaded.errors == [] and len(loaded.trajectories) == 30
    return [e for t in loaded.trajectories for e in simulate(t)]


def test_survival_table_measured_from_the_stream_equals_an_independent_count():
    events = _all_events()
    report = StreamReport()
    for e in events:  # the stream's view: wire-decoded, constraint keys normalized
        report.add_event(decode_event(encode_event(e).encode()))
    independent = survival_table(events)
    measured = report.survival()
    for kind in ("prohibitions", "instructions"):
        for level in ("leaf", "section", "root"):
            cell = independent[kind][level]
            assert measured[kind][level] == (cell.kept, cell.total), (kind, level)


def test_survival_on_the_shipped_trajectories_is_within_five_points_of_the_seed_rates():
    report = StreamReport()
    for e in _all_events():
        report.add_event(decode_event(encode_event(e).encode()))
    targets = {"prohibitions": (0.71, 0.34, 0.09), "instructions": (0.88, 0.79, 0.61)}
    for kind, rates in targets.items():
        for level, rate in zip(("leaf", "section", "root"), rates):
            kept, total = report.survival()[kind][level]
            assert total > 0 and abs(kept / total - rate) <= 0.05, (kind, level, kept, total)


def test_one_trajectory_ingested_twice_gives_identical_events_and_pinned_alerts():
    traj = load_file(DJANGO_11099)[0]
    first = "".join(encode_event(e) + "\n" for e in simulate(traj))
    second = "".join(encode_event(e) + "\n" for e in simulate(load_file(DJANGO_11099)[0]))
    assert first == second
    lines = first.encode().splitlines()
    result = replay_lines(lines)
    assert len(lines) == 500 and result.dead_letters == []
    assert Counter((a["rule"], a["status"], a["level"]) for a in result.alerts) == {
        ("negative_constraint_dropped", "open", "leaf"): 1,
        ("negative_constraint_dropped", "open", "section"): 1,
        ("negative_constraint_dropped", "open", "root"): 1,
    }


def test_all_shipped_trajectories_replay_without_dead_letters_and_fire_every_node_rule():
    result = replay_lines(encode_event(e).encode() for e in _all_events())
    assert result.dead_letters == [] and result.waiting == {}
    rules = result.alerts_by_rule()
    assert rules["orphaned_referent"] > 0 and rules["negative_constraint_dropped"] > 0 and rules["non_idempotent"] > 0
