"""The worker's batching (stream.agents.handle_batch) cannot change a single alert.

The agent runs the engine over one :class:`~stream.tables.OverlayState` per context
per batch, with each event's own overlay stacked on top and merged on success, and
writes the batch's coalesced write set at the end. These properties drive the engine
the same way over a store that, like a faust table, returns a *fresh copy* of every
value it reads (JSON round trip), and check it gives exactly the alerts, verdicts and
final state of one-event-at-a-time processing — for random traces (any arrival order,
redeliveries, seq gaps) cut into random batches.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.domain.engine import Engine, encode_record
from stream.domain.events import Source
from stream.domain.state import TABLES, DictState
from stream.tables import OverlayState, store_value
from stream.wire import decode_event, encode_verdict
from tests.unit.test_engine_properties import arrivals

pytestmark = pytest.mark.unit


class _CopyingMap(dict):
    """A dict that, like a faust table, hands out a new object on every read (sets come
    back as sorted lists, as a table stores them)."""

    def __getitem__(self, key: tuple) -> Any:
        return json.loads(store_value(dict.__getitem__(self, key)))

    def get(self, key: tuple, default: Any = None) -> Any:
        return self[key] if key in self else default

    def pop(self, key: tuple, *default: Any) -> Any:
        return dict.pop(self, key, *default)


class _CopyingState:
    def __init__(self) -> None:
        for name in TABLES:
            setattr(self, name, _CopyingMap())

    def snapshot(self) -> dict[str, dict]:
        return {name: {k: json.loads(store_value(dict.__getitem__(getattr(self, name), k)))
                       for k in getattr(self, name)}
                for name in TABLES}


def _run(events: list, cuts: list[int], seq_gap_limit: int, fail_on: frozenset[int] = frozenset()):
    """Process ``events`` (``(offset, event)`` pairs) in batches ending at ``cuts``, as the agent does."""
    state, engine = _CopyingState(), Engine(seq_gap_limit)
    outputs: list[bytes] = []
    start = 0
    for end in [*cuts, len(events)]:
        per_ctx: dict[str, OverlayState] = {}
        for i in range(start, end):
            offset, event = events[i]
            ctx = per_ctx.setdefault(event.context_id, OverlayState(state))
            overlay = OverlayState(ctx)
            out = engine.process(overlay, event, Source("t", 0, offset))
            if i in fail_on:  # the agent dead-letters an event that raised; no trace left
                continue
            overlay.merge_into(ctx)
            outputs += _encoded(out)
        for ctx in per_ctx.values():
            ctx.flush()
        start = end
    return outputs, state.snapshot()


def _encoded(out: Any) -> list[bytes]:
    return [encode_record(r) for r in out.records] + [encode_verdict(v) for v in out.verdicts]


def _decoded(raw: list[dict[str, Any]]) -> list:
    return [(offset, decode_event(json.dumps(e).encode())) for offset, e in enumerate(raw)]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), seq_gap_limit=st.sampled_from([1, 2, 1000]))
def test_any_batching_gives_the_alerts_and_state_of_one_event_at_a_time(data, seq_gap_limit) -> None:
    events = _decoded(data.draw(arrivals()))
    cuts = sorted(set(data.draw(st.lists(st.integers(0, max(len(events), 1)), max_size=8))))
    one_by_one = _run(events, list(range(1, len(events))), seq_gap_limit)
    batched = _run(events, [c for c in cuts if 0 < c < len(events)], seq_gap_limit)
    assert batched == one_by_one


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_an_event_dropped_from_a_batch_leaves_no_write_behind(data) -> None:
    events = _decoded(data.draw(arrivals()))
    if not events:
        return
    drop = data.draw(st.integers(0, len(events) - 1))
    without = events[:drop] + events[drop + 1:]
    # Processing it and throwing its overlay away == never processing it.
    assert _run(events, [], 1000, fail_on=frozenset({drop}))[1] == _run(without, [], 1000)[1]


@settings(max_examples=150, deadline=None)
@given(data=st.data(), seq_gap_limit=st.sampled_from([1, 2, 1000]))
def test_the_engine_on_plain_dicts_equals_the_engine_on_a_store_that_copies(data, seq_gap_limit) -> None:
    """Offline replay grows the stored sets in place; a table only keeps what is assigned.
    Same outputs and same final state prove that every change is re-assigned."""
    events = _decoded(data.draw(arrivals()))
    copying = _run(events, list(range(1, len(events))), seq_gap_limit)
    state, engine, outputs = DictState(), Engine(seq_gap_limit), []
    for offset, event in events:
        outputs += _encoded(engine.process(state, event, Source("t", 0, offset)))
    plain = {name: {k: json.loads(store_value(v)) for k, v in getattr(state, name).items()} for name in TABLES}
    assert (outputs, plain) == copying
