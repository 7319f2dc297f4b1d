"""Input limits (the ``CG_MAX_*`` settings) and the JSON the fast parser refuses.

Limits are checked where bytes become events (:func:`stream.wire.decode_event`), so the
worker, ``replay`` and ``replay --from-kafka`` dead-letter the same messages with the same
reason, and that reason names the limit and its setting. The seq buffer needs no limit
of its own: ``seq_gap_limit`` already bounds it (checked here against the engine).
"""

from __future__ import annotations

import itertools
import json

import pydantic_core
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from stream.domain.engine import Engine
from stream.domain.events import ArtifactEvent, Source
from stream.domain.state import DictState
from stream.errors import InvalidEvent
from stream.offline.replay import Replayer
from stream.settings import Settings
from stream.wire import (
    DEFAULT_LIMITS,
    MAX_JSON_DEPTH,
    Limits,
    configured_limits,
    decode_event,
    decode_message,
)
from tests.unit import builders
from tests.unit.builders import as_line, make_artifact, make_checkpoint

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def _short_event_ids(monkeypatch):
    """The builders' event ids count up over the session; here they must stay under the
    8-character id limit of SMALL, whatever ran before."""
    monkeypatch.setattr(builders, "_ids", itertools.count(1))

SMALL = Limits(
    max_message_bytes=4096, max_id_chars=8, max_referents=3, max_children=2, max_constraints=2,
    max_constraint_chars=10,
)
CK_HEAD = b'{"type":"checkpoint","event_id":"e1","context_id":"c","node_id":"n","level":"leaf"'


def reason_for(data: bytes | dict, limits: Limits = SMALL) -> str:
    with pytest.raises(InvalidEvent) as info:
        decode_event(as_line(data) if isinstance(data, dict) else data, limits=limits)
    reason = str(info.value)
    assert reason and "\n" not in reason
    return reason


# --------------------------------------------------------------------------- settings


def test_a_seq_over_the_configured_limit_names_the_setting():
    small = Limits(max_seq=100)
    assert decode_event(as_line(make_checkpoint(seq=100)), limits=small).seq == 100
    assert reason_for(make_checkpoint(seq=101), small) == "seq: 101, limit is 100 (CG_MAX_SEQ)"


def test_a_lower_nesting_limit_dead_letters_what_the_parser_would_read():
    shallow = Limits(max_json_depth=3)
    assert decode_event(as_line(make_checkpoint(unknown={"a": 1})), limits=shallow)
    deep = make_checkpoint(unknown={"a": {"b": [1]}})
    assert reason_for(deep, shallow) == "not JSON: nested deeper than 3 levels (CG_MAX_JSON_DEPTH)"


def test_the_default_limits_are_the_settings_defaults_and_design_md_s():
    assert Limits.from_settings(Settings()) == DEFAULT_LIMITS == Limits()
    assert (DEFAULT_LIMITS.max_message_bytes, DEFAULT_LIMITS.max_id_chars, DEFAULT_LIMITS.max_referents,
            DEFAULT_LIMITS.max_children, DEFAULT_LIMITS.max_constraints) == (1 << 20, 1024, 10_000, 10_000, 10_000)
    assert DEFAULT_LIMITS.max_constraint_chars == 4096


def test_limits_come_from_cg_max_environment_variables(monkeypatch):
    for name, value in {"CG_MAX_REFERENTS": "5", "CG_MAX_CHILDREN": "6", "CG_MAX_CONSTRAINTS": "7",
                        "CG_MAX_ID_CHARS": "8", "CG_MAX_CONSTRAINT_CHARS": "9", "CG_MAX_MESSAGE_BYTES": "100"}.items():
        monkeypatch.setenv(name, value)
    assert Limits.from_settings(Settings()) == Limits(100, 8, 5, 6, 7, 9)


def test_decoding_uses_the_process_settings_when_no_limits_are_given(monkeypatch):
    from stream import wire

    small = Settings(max_referents=1)
    monkeypatch.setattr(wire, "_get_settings", lambda: small)
    assert configured_limits().max_referents == 1
    with pytest.raises(InvalidEvent, match=r"referents: 2 items, limit is 1 \(CG_MAX_REFERENTS\)"):
        decode_event(as_line(make_checkpoint(referents=["a", "b"])))


@pytest.mark.parametrize(("field", "value"), [("seq_gap_limit", 100_001), ("max_id_chars", 0), ("max_referents", -1),
                                              ("max_constraint_chars", 0), ("max_children", -1)])
def test_nonsensical_limits_are_refused_at_startup(field, value):
    with pytest.raises(ValidationError, match=field):
        Settings(**{field: value})


# --------------------------------------------------------------------------- each limit


@pytest.mark.parametrize(("field", "setting", "limit"), [
    ("referents", "CG_MAX_REFERENTS", 3), ("children", "CG_MAX_CHILDREN", 2),
    ("negative_constraints", "CG_MAX_CONSTRAINTS", 2), ("raw_negative_constraints", "CG_MAX_CONSTRAINTS", 2),
])
def test_a_list_over_its_limit_is_dead_lettered_naming_the_setting(field, setting, limit):
    ok = decode_event(as_line(make_checkpoint(**{field: [f"x{i}" for i in range(limit)]})), limits=SMALL)
    assert len(getattr(ok, field)) == limit
    reason = reason_for(make_checkpoint(**{field: [f"x{i}" for i in range(limit + 1)]}))
    assert reason == f"{field}: {limit + 1} items, limit is {limit} ({setting})"


def test_a_hundred_thousand_referents_are_one_clear_reason_at_the_default_limit():
    reason = reason_for(make_checkpoint(referents=["r"] * 100_001), DEFAULT_LIMITS)
    assert reason == "referents: 100001 items, limit is 10000 (CG_MAX_REFERENTS)"


@pytest.mark.parametrize("field", ["event_id", "context_id", "node_id"])
def test_a_checkpoint_id_over_the_limit_is_dead_lettered_naming_the_setting(field):
    assert decode_event(as_line(make_checkpoint(**{"event_id": "e", field: "x" * 8})), limits=SMALL)
    assert reason_for(make_checkpoint(**{"event_id": "e", field: "é" * 9})) == (
        f"{field}: 9 characters, limit is 8 (CG_MAX_ID_CHARS)")


def test_an_artifact_id_over_the_limit_is_dead_lettered_naming_the_setting():
    assert reason_for(make_artifact(event_id="e", artifact_id="a" * 20)) == (
        "artifact_id: 20 characters, limit is 8 (CG_MAX_ID_CHARS)")


@pytest.mark.parametrize("field", ["children", "referents"])
def test_a_list_id_over_the_limit_names_its_position(field):
    reason = reason_for(make_checkpoint(**{"event_id": "e", field: ["ok", "x" * 9]}))
    assert reason == f"{field}.1: 9 characters, limit is 8 (CG_MAX_ID_CHARS)"


@pytest.mark.parametrize("field", ["negative_constraints", "raw_negative_constraints"])
def test_a_constraint_over_the_limit_is_dead_lettered_naming_the_setting(field):
    assert decode_event(as_line(make_checkpoint(**{"event_id": "e", field: ["x" * 10]})), limits=SMALL)
    assert reason_for(make_checkpoint(**{"event_id": "e", field: ["ok", "y" * 11]})) == (
        f"{field}.1: 11 characters, limit is 10 (CG_MAX_CONSTRAINT_CHARS)")
    assert reason_for(make_checkpoint(**{field: [{"id": "z" * 12, "text": "t" * 100}]})) == (
        f"{field}.0.id: 12 characters, limit is 10 (CG_MAX_CONSTRAINT_CHARS)")


def test_a_constraint_whose_key_outgrows_the_limit_under_nfkc_is_dead_lettered():
    # U+FDFA is one character whose NFKC form is 18: the stored key is what is bounded
    reason = reason_for(make_checkpoint(raw_negative_constraints=["\ufdfa"]))
    assert reason == ("raw_negative_constraints: a constraint key of 18 characters, limit is 10 "
                      "(CG_MAX_CONSTRAINT_CHARS)")


def test_an_informational_list_over_a_limit_is_treated_as_absent():
    event = decode_event(as_line(make_checkpoint(
        instructions=["a", "b", "c"], raw_instructions=["x" * 11], negative_constraints=["k"])), limits=SMALL)
    assert (event.instructions, event.raw_instructions, event.negative_constraints) == ((), (), ("k",))


def test_a_message_over_the_byte_limit_is_dead_lettered_before_it_is_parsed():
    data = CK_HEAD + b',"text":"' + b"x" * 5000 + b'"}'
    assert reason_for(data) == f"message is {len(data)} bytes, over the 4096-byte limit"


def test_kafka_messages_and_replay_lines_hit_the_same_limits_with_the_same_reason(monkeypatch):
    from stream import wire

    monkeypatch.setattr(wire, "_get_settings", lambda: Settings(max_children=2))
    line = as_line(make_checkpoint(children=["a", "b", "c"]))
    with pytest.raises(InvalidEvent) as info:
        decode_message(b"ctx-1", line)
    replayer = Replayer()
    replayer.feed(line, 1)
    assert replayer.result.dead_letters == [(1, str(info.value))]
    assert str(info.value) == "children: 3 items, limit is 2 (CG_MAX_CHILDREN)"


def test_the_real_trajectories_stay_far_below_every_default_limit():
    # measured from `python -m stream ingest` (stream/settings.py notes them): headroom >= 40x
    worst = {"bytes": 8635, "referents": 18, "children": 4, "constraints": 14, "id": 91, "constraint": 24}
    assert worst["bytes"] * 40 < DEFAULT_LIMITS.max_message_bytes
    assert worst["referents"] * 40 < DEFAULT_LIMITS.max_referents
    assert worst["children"] * 40 < DEFAULT_LIMITS.max_children
    assert worst["constraints"] * 40 < DEFAULT_LIMITS.max_constraints
    assert worst["id"] * 10 < DEFAULT_LIMITS.max_id_chars
    assert worst["constraint"] * 40 < DEFAULT_LIMITS.max_constraint_chars


# --------------------------------------------------------------------------- JSON jiter refuses


def test_the_depth_limit_is_the_parsers_own():
    """Pins pydantic-core's depth: if an upgrade moves it, MAX_JSON_DEPTH must follow."""
    pydantic_core.from_json(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
    with pytest.raises(ValueError, match="recursion limit"):
        pydantic_core.from_json(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))


def test_nesting_at_the_depth_limit_is_accepted_and_one_deeper_is_a_size_dead_letter():
    inner = MAX_JSON_DEPTH - 1  # the message object is the first level
    assert decode_event(CK_HEAD + b',"text":' + b"[" * inner + b"]" * inner + b"}").node_id == "n"
    deeper = CK_HEAD + b',"text":' + b"[" * (inner + 1) + b"]" * (inner + 1) + b"}"
    assert reason_for(deeper).startswith(f"not JSON: nested deeper than {MAX_JSON_DEPTH} levels")


def test_depth_is_judged_the_same_when_the_message_is_reread_for_a_lone_surrogate():
    inner = MAX_JSON_DEPTH  # one too deep, behind a surrogate that sends it to Python's json
    data = CK_HEAD + b',"text":"\\ud800","x":' + b"[" * inner + b"]" * inner + b"}"
    assert reason_for(data) == f"not JSON: nested deeper than {MAX_JSON_DEPTH} levels"


def _nested(levels: int, innermost: bytes) -> bytes:
    """``levels`` nested arrays (the message object adds one more level) around ``innermost``."""
    return b"[" * levels + innermost + b"]" * levels


@pytest.mark.parametrize("innermost", [b"", b"1", b'"x"', b"true", b"null", b"1,2"])
@pytest.mark.parametrize("where", ["first", "last"])
@pytest.mark.parametrize("surrogate", [False, True])
def test_nesting_exactly_at_the_limit_is_accepted_whatever_the_innermost_array_holds(innermost, where, surrogate):
    """Issue 28.7: 201 levels is the limit; the verdict may depend neither on what the
    innermost array holds (the fast parser counts a scalar in it as one more level) nor
    on a lone-surrogate field that sends the message to the second parser, before or after."""
    deep = b'"x":' + _nested(MAX_JSON_DEPTH - 1, innermost)
    fields = [deep, b'"text":"\\ud800"'] if surrogate else [deep]
    if where == "last":
        fields.reverse()
    if where == "last":
        data = CK_HEAD + b"," + b",".join(fields) + b"}"
    else:
        data = b"{" + b",".join(fields) + b"," + CK_HEAD[1:] + b"}"
    assert decode_event(data).node_id == "n"


@pytest.mark.parametrize("innermost", [b"[]", b"{}", b"[1]", b'{"a":1}'])
@pytest.mark.parametrize("surrogate", [False, True])
def test_one_level_past_the_limit_is_a_dead_letter_whatever_it_holds(innermost, surrogate):
    text = b',"text":"\\ud800"' if surrogate else b""
    data = CK_HEAD + text + b',"x":' + _nested(MAX_JSON_DEPTH - 1, innermost) + b"}"
    assert reason_for(data).startswith(f"not JSON: nested deeper than {MAX_JSON_DEPTH} levels")


@pytest.mark.parametrize("field", [b"negative_constraints", b"raw_negative_constraints", b"instructions"])
@pytest.mark.parametrize("member", [b'"\\ud800":1', b'"text":"a\\udc00"', b'"\\udc00x":{"y":"\\ud800"}'])
def test_a_lone_surrogate_in_an_informational_member_of_a_constraint_object_drops_that_member(field, member):
    """Issue 28.7: the object's ``text`` and other members are informational (DESIGN.md §3):
    one holding a lone surrogate, in its name or its value, is dropped; the constraint stays."""
    data = CK_HEAD + b',"' + field + b'":[{"id":"k-1",' + member + b'},"Keep tabs"]}'
    event = decode_event(data)
    got = {"negative_constraints": event.negative_constraints, "raw_negative_constraints":
           event.raw_negative_constraints, "instructions": event.instructions}[field.decode()]
    assert got == ("k-1", "keep tabs")


@pytest.mark.parametrize("field", [b"text", b"parent_id", b"occurred_at", b"kind_of", b"cycle"])
def test_a_lone_surrogate_in_an_informational_field_is_treated_as_absent(field):
    event = decode_event(CK_HEAD + b',"' + field + b'":"a\\ud800b","seq":3}')
    assert (event.node_id, event.seq, event.parent_id, event.occurred_at) == ("n", 3, None, None)


def test_a_lone_surrogate_in_informational_instructions_makes_them_absent():
    event = decode_event(CK_HEAD + b',"instructions":["use tabs","\\udc00"],"raw_instructions":["use tabs"]}')
    assert (event.instructions, event.raw_instructions) == ((), ("use tabs",))


def test_a_lone_surrogate_in_a_constraint_objects_text_is_informational():
    event = decode_event(CK_HEAD + b',"negative_constraints":[{"id":"k","text":"\\ud800"}]}')
    assert event.negative_constraints == ("k",)


@pytest.mark.parametrize(("patch", "where"), [
    (b',"node_id":"n\\ud800"', "node_id"), (b',"context_id":"\\udfff"', "context_id"),
    (b',"referents":["a","\\ud800"]', "referents.1"), (b',"children":["\\ud800x"]', "children.0"),
    (b',"raw_negative_constraints":["ok","\\ud800"]', "raw_negative_constraints.1"),
    (b',"negative_constraints":[{"id":"\\ud800"}]', "negative_constraints.0.id"),
])
def test_a_lone_surrogate_in_a_rule_field_is_dead_lettered(patch, where):
    # the later duplicate key wins, as with every JSON parser used here
    assert reason_for(CK_HEAD + patch + b"}") == f"{where}: not valid Unicode (lone surrogate escape)"


def test_a_valid_surrogate_pair_is_just_a_character():
    assert decode_event(CK_HEAD.replace(b'"n"', b'"\\ud83d\\ude00"') + b"}").node_id == "\U0001F600"


def test_an_integer_of_5000_digits_in_an_informational_field_is_treated_as_absent():
    event = decode_event(CK_HEAD + b',"cycle":' + b"9" * 5000 + b',"extra":[-' + b"1" * 5000 + b'],"seq":1}')
    assert (event.cycle, event.seq) == (None, 1)


@pytest.mark.parametrize(("literal", "reason"), [
    (b"9" * 5000, "seq: beyond 64 bits, limit is 9223372036854775807 (CG_MAX_SEQ)"),
    (b"-" + b"9" * 5000, "seq: Input should be greater than or equal to 0"),
])
def test_an_integer_of_5000_digits_as_seq_is_out_of_range(literal, reason):
    assert reason_for(CK_HEAD + b',"seq":' + literal + b"}", DEFAULT_LIMITS) == reason


def test_an_integer_of_5000_digits_as_schema_version_is_unsupported():
    reason = reason_for(CK_HEAD + b',"schema_version":' + b"7" * 5000 + b"}", DEFAULT_LIMITS)
    assert reason == "schema_version: unsupported version beyond 64 bits (this worker reads 1)"


@pytest.mark.parametrize("data", [
    CK_HEAD + b',"text":"\\ud800","x":NaN}', CK_HEAD + b',"text":"\\ud800","x":"\xff"}',
    CK_HEAD + b',"text":"\\ud800",}', CK_HEAD + b',"text":"\\u12"}',
])
def test_a_reread_message_must_still_be_strict_json(data):
    assert reason_for(data).startswith("not JSON")


# --------------------------------------------------------------------------- the seq buffer


@settings(max_examples=150, deadline=None)
@given(limit=st.integers(0, 6), seqs=st.lists(st.integers(0, 40), max_size=80))
def test_no_context_ever_buffers_more_than_seq_gap_limit_events(limit, seqs):
    engine, state = Engine(seq_gap_limit=limit), DictState()
    for i, s in enumerate(seqs):
        event = ArtifactEvent(event_id=f"e{i}", context_id="c", artifact_id="a", op="admitted", tier="live", seq=s)
        engine.process(state, event, Source(None, None, None))
        assert len(state.seq[("c",)]["waiting"]) <= limit
        assert len(state.waiting) == len(state.seq[("c",)]["waiting"])


def test_a_replay_line_over_the_limit_reports_the_same_reason_as_the_worker():
    line = json.dumps(make_checkpoint(referents=["r"] * 10_001), separators=(",", ":")).encode()
    result = Replayer()
    result.feed(line, 7)
    assert result.result.dead_letters == [(7, "referents: 10001 items, limit is 10000 (CG_MAX_REFERENTS)")]
