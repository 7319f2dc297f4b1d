"""The decoder under fuzzing: whatever the bytes, an event or one clear reason — never a crash.

Cheap variety for :func:`stream.wire.decode_message` (the integration test
tests/integration/test_hostile_input.py sends the expensive, end-to-end kind through a
real worker). Properties:

* any bytes, any key: the result is an event or :class:`InvalidEvent` with a non-empty,
  one-line, bounded reason — no other exception;
* an accepted event is within every limit and can be written as UTF-8 JSON (tables,
  alerts), and decoding is deterministic;
* a valid event stays valid whatever JSON its informational fields hold (DESIGN.md §3),
  including lone surrogates and integers of any length, within the depth limit;
* a valid event with one rule field replaced by a wrong value is dead-lettered, naming
  that field.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stream.domain.events import CheckpointEvent
from stream.errors import InvalidEvent
from stream.wire import Limits, decode_message, encode
from tests.unit.builders import make_artifact, make_checkpoint

pytestmark = pytest.mark.unit

LIMITS = Limits(max_message_bytes=8192, max_id_chars=16, max_referents=4, max_children=4, max_constraints=4,
                max_constraint_chars=24)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# every code point, lone surrogates included (json.dumps escapes them as \udXXX)
any_text = st.text(st.characters(blacklist_categories=()), max_size=30)
json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | any_text

class Raw(bytes):
    """JSON text put into a line as is: an integer literal Python will not even ``repr``."""


#: Integers of 4,301-4,400 digits (hypothesis itself cannot print such ints: raw text).
big_ints = st.tuples(st.booleans(), st.integers(4301, 4400)).map(lambda t: Raw(b"-" * t[0] + b"7" * t[1]))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=25,
)
ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=16)
constraints = ids | st.fixed_dictionaries({"id": ids}, optional={"text": json_values})


@st.composite
def valid_events(draw) -> dict:
    ctx = draw(ids)
    common = {"event_id": draw(ids), "context_id": ctx}
    if draw(st.booleans()):
        common["seq"] = draw(st.integers(0, 2**63 - 1))
    if draw(st.booleans()):
        return make_artifact(**common, artifact_id=draw(ids), op=draw(st.sampled_from(["admitted", "evicted"])),
                             tier=draw(st.sampled_from(["live", "durable", None])))
    return make_checkpoint(
        **common, node_id=draw(ids), level=draw(st.sampled_from(["leaf", "section", "root"])),
        children=draw(st.lists(ids, max_size=4)), referents=draw(st.lists(ids, max_size=4)),
        negative_constraints=draw(st.lists(constraints, max_size=4)),
        raw_negative_constraints=draw(st.lists(st.text(max_size=12), max_size=4)),
    )


def _line(obj: dict | object, **fields: object) -> bytes:
    """Compact JSON of ``obj`` with ``fields`` set (a :class:`Raw` value goes in verbatim)."""
    if not fields:
        return json.dumps(obj, separators=(",", ":")).encode()
    raw = {k: v for k, v in fields.items() if isinstance(v, Raw)}
    line = _line({**obj, **{k: f"@raw-{k}@" for k in raw}, **{k: v for k, v in fields.items() if k not in raw}})
    for k, v in raw.items():
        line = line.replace(json.dumps(f"@raw-{k}@").encode(), v)
    return line


def _decode(key: bytes | None, value: bytes | None):
    """decode_message, checking the two allowed outcomes; returns the event or the reason."""
    try:
        event = decode_message(key, value, limits=LIMITS)
    except InvalidEvent as exc:
        reason = str(exc)
        assert reason and "\n" not in reason and len(reason) <= 400, reason
        return reason
    ids_ = [event.event_id, event.context_id]
    if isinstance(event, CheckpointEvent):
        ids_ += [event.node_id, *event.children, *event.referents]
        assert len(event.children) <= LIMITS.max_children and len(event.referents) <= LIMITS.max_referents
        for keys in (event.negative_constraints, event.raw_negative_constraints):
            assert len(keys) <= LIMITS.max_constraints
            assert all(len(k) <= LIMITS.max_constraint_chars for k in keys)
    else:
        ids_.append(event.artifact_id)
    assert all(0 < len(i) <= LIMITS.max_id_chars for i in ids_)
    json.dumps(event.to_record(), ensure_ascii=False).encode("utf-8")  # tables
    encode({"context_id": event.context_id, "ids": ids_})  # alerts
    return event


@FUZZ
@given(key=st.none() | st.binary(max_size=20), value=st.none() | st.binary(max_size=300))
def test_arbitrary_bytes_are_an_event_or_one_clear_reason(key, value):
    _decode(key, value)


@FUZZ
@given(value=json_values)
def test_arbitrary_json_is_an_event_or_one_clear_reason(value):
    line = _line(value)
    assert _decode(b"k", line) == _decode(b"k", line)  # deterministic


@FUZZ
@given(event=valid_events(), data=st.data())
def test_a_mutated_valid_event_is_an_event_or_one_clear_reason(event, data):
    line = _line(event)
    how = data.draw(st.sampled_from(["cut", "flip", "insert", "field", "drop"]))
    if how == "cut":
        line = line[: data.draw(st.integers(0, len(line) - 1))]
    elif how == "flip":
        at = data.draw(st.integers(0, len(line) - 1))
        line = line[:at] + bytes([data.draw(st.integers(0, 255))]) + line[at + 1:]
    elif how == "insert":
        at = data.draw(st.integers(0, len(line)))
        line = line[:at] + data.draw(st.binary(min_size=1, max_size=8)) + line[at:]
    elif how == "field":
        line = _line({**event, data.draw(st.sampled_from(sorted(event))): data.draw(json_values)})
    else:
        line = _line({k: v for k, v in event.items() if k != data.draw(st.sampled_from(sorted(event)))})
    _decode(event["context_id"].encode(), line)


@FUZZ
@given(event=valid_events(), field=st.sampled_from(["text", "parent_id", "cycle", "occurred_at", "kind",
                                                   "instructions", "raw_instructions", "x-unknown"]),
       value=json_values | big_ints)
def test_informational_fields_never_dead_letter_a_valid_event(event, field, value):
    result = _decode(event["context_id"].encode(), _line(event, **{field: value}))
    assert not isinstance(result, str), result
    plain = _decode(event["context_id"].encode(), _line(event))
    assert (result.event_id, result.context_id, result.seq) == (plain.event_id, plain.context_id, plain.seq)
    if isinstance(plain, CheckpointEvent):
        assert (result.referents, result.children, result.negative_constraints) == (
            plain.referents, plain.children, plain.negative_constraints)


_WRONG = {
    "event_id": st.just("") | st.integers() | st.text(min_size=17, max_size=40) | st.just("a\ud800"),
    "context_id": st.none() | st.lists(ids, max_size=2) | st.just("\udfff"),
    "seq": st.integers(max_value=-1) | st.integers(min_value=2**63) | st.text(max_size=3) | st.booleans() | big_ints,
    "schema_version": st.integers().filter(lambda v: v != 1) | st.just("1") | st.just(1.0),
}


@FUZZ
@given(event=valid_events(), data=st.data())
def test_a_wrong_rule_field_is_dead_lettered_naming_it(event, data):
    field = data.draw(st.sampled_from(sorted(_WRONG)))
    reason = _decode(event["context_id"].encode(), _line(event, **{field: data.draw(_WRONG[field])}))
    assert isinstance(reason, str) and reason.startswith(field), reason


@settings(max_examples=40, deadline=None)
@given(extra=st.integers(1, 5), field=st.sampled_from(
    ["referents", "children", "negative_constraints", "raw_negative_constraints"]))
def test_a_list_over_its_limit_is_dead_lettered_naming_its_setting(extra, field):
    event = make_checkpoint(event_id="e", context_id="c", **{field: [f"x{i}" for i in range(4 + extra)]})
    reason = _decode(b"c", _line(event))
    assert reason.startswith(f"{field}: {4 + extra} items, limit is 4 (CG_MAX_")
