"""The wire contract of DESIGN.md §3: what is dead-lettered, and what is accepted.

:func:`stream.wire.decode_event` turns one message (or replay line) into a domain event
or raises :class:`~stream.errors.InvalidEvent` whose one-line reason names the field at
fault. Only the fields the rules use are validated; informational fields never cause a
dead letter (ill-typed, they are treated as absent).

Choices the spec leaves open, pinned here as the codec makes them:

* a list over 10,000 entries in an *informational* field (``instructions``) is treated
  as absent, not dead-lettered (the "informational fields never dead-letter" rule wins
  over the size rule);
* nesting deeper than 201 levels (``stream.wire.MAX_JSON_DEPTH``, the parser's limit) is
  "not JSON", even inside an informational field: a size limit, like the byte limit
  (the reasoning is in ``stream/wire.py``'s docstring; tests/unit/test_limits.py).
"""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream.domain import ArtifactEvent, CheckpointEvent
from stream.domain.outputs import encode_record
from stream.errors import InvalidEvent
from stream.wire import MAX_MESSAGE_BYTES, decode_event, encode
from tests.unit.builders import OMIT, as_line, make_artifact, make_checkpoint, run

pytestmark = pytest.mark.unit

CK_HEAD = b'{"type":"checkpoint","event_id":"e1","context_id":"c","node_id":"n","level":"leaf"'


def reason_for(data: bytes | dict) -> str:
    """The one-line reason ``decode_event`` gives for bad input (fails if accepted)."""
    with pytest.raises(InvalidEvent) as info:
        decode_event(as_line(data) if isinstance(data, dict) else data)
    reason = str(info.value)
    assert reason and "\n" not in reason
    return reason


# --------------------------------------------------------------------------- not an event at all


@pytest.mark.parametrize("data", [b"{not json", b"", b"   ", b'{"type": "checkpoint"', b"{'a': 1}", b"[1,]"])
def test_bytes_that_are_not_json_are_invalid(data):
    assert reason_for(data).startswith("not JSON")


@pytest.mark.parametrize(
    ("data", "kind"),
    [(b"[1, 2]", "array"), (b'"checkpoint"', "string"), (b"3", "number"), (b"2.5", "number"), (b"null", "null"),
     (b"true", "boolean")],
)
def test_json_that_is_not_an_object_is_invalid(data, kind):
    assert reason_for(data) == f"message: must be a JSON object, got {kind}"


def test_an_event_without_type_is_invalid():
    assert reason_for(make_checkpoint(type=OMIT)) == "type: required field is missing"


@pytest.mark.parametrize("value", ["alert", "Checkpoint", "", 3, None])
def test_an_event_of_unknown_type_is_invalid(value):
    reason = reason_for(make_checkpoint(type=value))
    assert reason.startswith("type: must be 'checkpoint' or 'artifact'")


# --------------------------------------------------------------------------- required fields


@pytest.mark.parametrize("field", ["event_id", "context_id", "node_id", "level"])
def test_a_checkpoint_missing_a_required_field_is_invalid(field):
    assert reason_for(make_checkpoint(**{field: OMIT})) == f"{field}: required field is missing"


@pytest.mark.parametrize("field", ["event_id", "context_id", "artifact_id", "op"])
def test_an_artifact_missing_a_required_field_is_invalid(field):
    assert reason_for(make_artifact(**{field: OMIT})) == f"{field}: required field is missing"


@pytest.mark.parametrize("field", ["event_id", "context_id", "node_id", "level"])
def test_null_for_a_required_checkpoint_field_is_invalid(field):
    assert reason_for(make_checkpoint(**{field: None})).startswith(f"{field}: ")


@pytest.mark.parametrize("field", ["event_id", "context_id", "artifact_id", "op"])
def test_null_for_a_required_artifact_field_is_invalid(field):
    assert reason_for(make_artifact(**{field: None})).startswith(f"{field}: ")


# --------------------------------------------------------------------------- strict types


@pytest.mark.parametrize("value", ["3", 3.0, True, False, [3], {"n": 3}])
def test_a_seq_that_is_not_a_json_integer_is_invalid(value):
    assert reason_for(make_checkpoint(seq=value)).startswith("seq: ")


def test_a_negative_seq_is_invalid():
    assert reason_for(make_artifact(seq=-1)) == "seq: Input should be greater than or equal to 0"


@pytest.mark.parametrize("value", [2, 0, -1])
def test_a_schema_version_other_than_one_is_invalid(value):
    assert reason_for(make_checkpoint(schema_version=value)).startswith(
        f"schema_version: unsupported version {value}"
    )


@pytest.mark.parametrize("value", ["1", True, 1.0])
def test_a_schema_version_that_is_not_a_json_integer_is_invalid(value):
    assert reason_for(make_artifact(schema_version=value)).startswith("schema_version: ")


@pytest.mark.parametrize("field", ["event_id", "context_id", "node_id"])
@pytest.mark.parametrize("value", [3, True, ["x"], {"id": "x"}])
def test_an_id_that_is_not_a_string_is_invalid(field, value):
    assert reason_for(make_checkpoint(**{field: value})).startswith(f"{field}: ")


@pytest.mark.parametrize("field", ["children", "referents", "negative_constraints", "raw_negative_constraints"])
@pytest.mark.parametrize("value", ["a", {"a": 1}, 3])
def test_a_rule_list_that_is_not_a_list_is_invalid(field, value):
    assert reason_for(make_checkpoint(**{field: value})).startswith(f"{field}: ")


@pytest.mark.parametrize("field", ["children", "referents"])
@pytest.mark.parametrize("value", [3, None, ["a"], {"id": "a"}])
def test_an_id_list_entry_that_is_not_a_string_is_invalid(field, value):
    assert reason_for(make_checkpoint(**{field: ["ok", value]})).startswith(f"{field}.1")


# --------------------------------------------------------------------------- enums


@pytest.mark.parametrize("value", ["deleted", "Admitted", "", 1])
def test_an_unknown_op_is_invalid(value):
    assert reason_for(make_artifact(op=value)).startswith("op: ")


@pytest.mark.parametrize("value", ["cold", "LIVE", "", 0])
def test_an_unknown_tier_is_invalid(value):
    assert reason_for(make_artifact(tier=value)).startswith("tier: ")


@pytest.mark.parametrize("value", ["top", "Leaf", "", 1])
def test_an_unknown_level_is_invalid(value):
    assert reason_for(make_checkpoint(level=value)).startswith("level: ")


# --------------------------------------------------------------------------- ids


@pytest.mark.parametrize("field", ["event_id", "context_id", "node_id"])
def test_an_empty_checkpoint_id_is_invalid(field):
    assert reason_for(make_checkpoint(**{field: ""})) == f"{field}: String should have at least 1 character"


def test_an_empty_artifact_id_is_invalid():
    assert reason_for(make_artifact(artifact_id="")) == "artifact_id: String should have at least 1 character"


@pytest.mark.parametrize("field", ["children", "referents"])
def test_an_empty_id_in_a_list_is_invalid(field):
    assert reason_for(make_checkpoint(**{field: ["a", ""]})) == f"{field}.1: String should have at least 1 character"


@pytest.mark.parametrize("field", ["event_id", "context_id", "node_id"])
def test_a_checkpoint_id_over_1024_characters_is_invalid(field):
    reason = reason_for(make_checkpoint(**{field: "x" * 1025}))
    assert reason == f"{field}: 1025 characters, limit is 1024 (CG_MAX_ID_CHARS)"


@pytest.mark.parametrize("field", ["event_id", "context_id", "artifact_id"])
def test_an_artifact_id_over_1024_characters_is_invalid(field):
    assert reason_for(make_artifact(**{field: "x" * 1025})).startswith(f"{field}: ")


@pytest.mark.parametrize("field", ["children", "referents"])
def test_a_list_id_over_1024_characters_is_invalid(field):
    assert reason_for(make_checkpoint(**{field: ["x" * 1025]})).startswith(f"{field}.0: ")


def test_an_id_of_exactly_1024_characters_is_accepted_even_when_multibyte():
    event = decode_event(as_line(make_checkpoint(context_id="é" * 1024, node_id="x" * 1024, referents=["€" * 1024])))
    assert (len(event.context_id), len(event.node_id), event.referents) == (1024, 1024, ("€" * 1024,))


# --------------------------------------------------------------------------- list sizes


@pytest.mark.parametrize("field", ["children", "referents", "negative_constraints", "raw_negative_constraints"])
def test_a_rule_list_over_10000_entries_is_invalid(field):
    reason = reason_for(make_checkpoint(**{field: ["a"] * 10_001}))
    setting = {"referents": "REFERENTS", "children": "CHILDREN"}.get(field, "CONSTRAINTS")
    assert reason == f"{field}: 10001 items, limit is 10000 (CG_MAX_{setting})"


@pytest.mark.parametrize("field", ["children", "referents", "raw_negative_constraints"])
def test_a_rule_list_of_exactly_10000_entries_is_accepted(field):
    event = decode_event(as_line(make_checkpoint(**{field: [f"x{i}" for i in range(10_000)]})))
    assert len(getattr(event, field)) == 10_000


def test_an_informational_list_over_10000_entries_is_treated_as_absent():
    event = decode_event(as_line(make_checkpoint(instructions=["do x"] * 10_001, raw_instructions=["do y"])))
    assert (event.instructions, event.raw_instructions) == ((), ("do y",))


def test_an_informational_text_over_the_constraint_limits_is_treated_as_absent():
    from stream.wire import Limits

    line = as_line(make_checkpoint(instructions=["do x", "do yyyyy"], raw_instructions=["do", "\ufdfa"]))
    event = decode_event(line, limits=Limits(max_constraint_chars=5))  # 8 characters; a key of 18
    assert (event.instructions, event.raw_instructions) == ((), ())
    event = decode_event(line, limits=Limits(max_constraints=1))
    assert (event.instructions, event.raw_instructions) == ((), ())
    event = decode_event(line)
    assert event.instructions == ("do x", "do yyyyy") and len(event.raw_instructions) == 2
    # remembered now (a list seen before is one lookup): the limits still apply to it
    assert decode_event(line, limits=Limits(max_constraint_chars=5)).instructions == ()
    assert decode_event(line, limits=Limits(max_constraints=1)).raw_instructions == ()


# --------------------------------------------------------------------------- constraints


@pytest.mark.parametrize("field", ["negative_constraints", "raw_negative_constraints"])
@pytest.mark.parametrize(
    "constraint",
    [{"text": "do not push"}, {"id": ""}, {"id": 3}, {"id": None}, {"id": ["k"]}, {}, 3, 2.5, True, None, ["k"]],
    ids=["no-id", "empty-id", "int-id", "null-id", "list-id", "empty-object", "int", "float", "bool", "null", "list"],
)
def test_a_constraint_that_is_neither_a_string_nor_an_object_with_a_string_id_is_invalid(field, constraint):
    assert reason_for(make_checkpoint(**{field: ["fine", constraint]})).startswith(f"{field}.1")


def test_constraint_objects_may_carry_any_text_and_extra_keys():
    event = decode_event(as_line(make_checkpoint(
        negative_constraints=[{"id": "k-1", "text": 3, "why": [1, {"x": None}]}],
        raw_negative_constraints=[{"id": " K-1 ", "text": None}],
    )))
    assert (event.negative_constraints, event.raw_negative_constraints) == (("k-1",), (" K-1 ",))


def test_constraints_are_reduced_to_their_sorted_deduplicated_keys():
    event = decode_event(as_line(make_checkpoint(
        raw_negative_constraints=["Do  NOT Push", "do not push", {"id": "do not push"}, "\ufb01le", "  "],
    )))
    assert event.raw_negative_constraints == ("", "do not push", "file")


def test_a_remembered_list_of_strings_is_not_confused_with_equal_values_of_other_types():
    # a list of strings is remembered by its tuple; 1 == 1.0 == True, but never a string
    assert decode_event(as_line(make_checkpoint(instructions=["1", "2"]))).instructions == ("1", "2")
    assert decode_event(as_line(make_checkpoint(instructions=[1, 2]))).instructions == ()
    assert reason_for(make_checkpoint(negative_constraints=["1", True])).startswith("negative_constraints.1")


def test_remembered_constraint_keys_still_meet_each_limit():
    # the keys of a list of strings are remembered across events; the key-length limit is
    # checked on every call, so a list accepted at one limit is refused at a lower one
    from stream.wire import Limits

    line = as_line(make_checkpoint(negative_constraints=["No  Push", "\ufb03x"], raw_negative_constraints=["\ufdfa"]))
    wide = unicodedata.normalize("NFKC", "\ufdfa").casefold()  # one code point, 18 characters as a key
    for _ in range(2):
        event = decode_event(line)
        assert (event.negative_constraints, event.raw_negative_constraints) == (("ffix", "no push"), (wide,))
    with pytest.raises(InvalidEvent, match="raw_negative_constraints: a constraint key of 18 characters, limit is 17"):
        decode_event(line, limits=Limits(max_constraint_chars=17))
    assert decode_event(line, limits=Limits(max_constraint_chars=18)).raw_negative_constraints == (wide,)

# --------------------------------------------------------------------------- not JSON: NaN, UTF-8, size, depth


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity"])
@pytest.mark.parametrize("field", [b"seq", b"cycle", b"text", b"unknown_extra"])
def test_nan_and_infinity_are_invalid_even_in_an_informational_field(literal, field):
    data = CK_HEAD + b',"' + field + b'":' + literal + b"}"
    assert reason_for(data).startswith("not JSON")


def test_nan_nested_in_an_informational_structure_is_invalid():
    assert reason_for(CK_HEAD + b',"text":{"scores":[1,NaN]}}').startswith("not JSON")


@pytest.mark.parametrize("raw", [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"],
                         ids=["invalid-byte", "truncated", "surrogate", "overlong"])
def test_invalid_utf8_is_invalid_even_in_an_informational_field(raw):
    assert reason_for(CK_HEAD + b',"text":"a' + raw + b'b"}').startswith("not JSON")


def test_invalid_utf8_in_an_id_is_invalid():
    data = b'{"type":"artifact","event_id":"e\xff","context_id":"c","artifact_id":"a","op":"admitted"}'
    assert reason_for(data).startswith("not JSON")


def _padded(total: int) -> bytes:
    head = CK_HEAD + b',"text":"'
    return head + b"x" * (total - len(head) - 2) + b'"}'


def test_a_message_over_one_mebibyte_is_invalid():
    data = _padded(MAX_MESSAGE_BYTES + 1)
    assert reason_for(data) == f"message is {MAX_MESSAGE_BYTES + 1} bytes, over the {MAX_MESSAGE_BYTES}-byte limit"


def test_a_message_of_exactly_one_mebibyte_is_accepted():
    data = _padded(MAX_MESSAGE_BYTES)
    assert len(data) == MAX_MESSAGE_BYTES
    assert decode_event(data).node_id == "n"


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deep_nesting_is_invalid(depth):
    data = CK_HEAD + b',"text":' + b"[" * depth + b"]" * depth + b"}"
    assert reason_for(data).startswith("not JSON")


def test_moderate_nesting_in_an_informational_field_is_accepted():
    data = CK_HEAD + b',"text":' + b'{"a":' * 50 + b"1" + b"}" * 50 + b"}"
    assert decode_event(data).node_id == "n"


# --------------------------------------------------------------------------- accepted side


def test_a_minimal_checkpoint_gets_the_documented_defaults():
    event = decode_event(CK_HEAD + b"}")
    assert event == CheckpointEvent(event_id="e1", context_id="c", node_id="n", level="leaf")
    assert (event.children, event.referents, event.negative_constraints, event.raw_negative_constraints,
            event.seq) == ((), (), (), (), None)


def test_a_minimal_artifact_defaults_to_the_live_tier():
    event = decode_event(b'{"type":"artifact","event_id":"e","context_id":"c","artifact_id":"a","op":"evicted"}')
    assert event == ArtifactEvent(event_id="e", context_id="c", artifact_id="a", op="evicted", tier="live")


def test_null_for_an_optional_checkpoint_field_means_absent():
    event = decode_event(as_line(make_checkpoint(
        seq=None, children=None, referents=None, negative_constraints=None, raw_negative_constraints=None,
        schema_version=None, occurred_at=None, parent_id=None, cycle=None, text=None, instructions=None,
    )))
    assert event == CheckpointEvent(event_id=event.event_id, context_id="ctx-1", node_id="n1", level="leaf")


def test_null_for_an_optional_artifact_field_means_absent():
    event = decode_event(as_line(make_artifact(tier=None, seq=None, kind=None, occurred_at=None)))
    assert (event.tier, event.seq, event.kind) == ("live", None, None)


@pytest.mark.parametrize("value", [OMIT, 1])
def test_schema_version_absent_or_one_is_accepted(value):
    assert decode_event(as_line(make_checkpoint(schema_version=value))).node_id == "n1"


@pytest.mark.parametrize(
    ("field", "value"),
    [("occurred_at", 5), ("occurred_at", "yesterday"), ("occurred_at", ["2024-01-01T00:00:00Z"]),
     ("cycle", "x"), ("cycle", True), ("cycle", 1.5), ("parent_id", []), ("parent_id", 7), ("parent_id", ""),
     ("text", {"a": 1}), ("instructions", 3), ("instructions", [3]), ("raw_instructions", "do x"),
     ("raw_instructions", [{"text": "no id"}])],
)
def test_an_ill_typed_informational_checkpoint_field_is_treated_as_absent(field, value):
    event = decode_event(as_line(make_checkpoint(**{field: value})))
    absent = CheckpointEvent(event_id=event.event_id, context_id="ctx-1", node_id="n1", level="leaf")
    assert event == absent


@pytest.mark.parametrize(("field", "value"), [("kind", 7), ("kind", "video"), ("occurred_at", 5), ("occurred_at", {})])
def test_an_ill_typed_informational_artifact_field_is_treated_as_absent(field, value):
    event = decode_event(as_line(make_artifact(**{field: value})))
    assert (event.kind, event.occurred_at) == (None, None)


def test_well_typed_informational_fields_are_kept():
    event = decode_event(as_line(make_checkpoint(
        occurred_at="2024-05-01T10:00:00Z", cycle=3, parent_id="p", text="summary",
        instructions=["Use  TABS", {"id": "i-1"}], raw_instructions=["use tabs"],
    )))
    assert (event.occurred_at, event.cycle, event.parent_id) == ("2024-05-01T10:00:00Z", 3, "p")
    assert (event.instructions, event.raw_instructions) == (("i-1", "use tabs"), ("use tabs",))
    artifact = decode_event(as_line(make_artifact(kind="tool_output", occurred_at="2024-05-01T10:00:00+02:00")))
    assert (artifact.kind, artifact.occurred_at) == ("tool_output", "2024-05-01T10:00:00+02:00")


def test_unknown_extra_fields_are_ignored():
    event = decode_event(as_line(make_checkpoint(priority="high", nested={"x": [1, 2]}, seq=4)))
    assert event.seq == 4


def test_duplicate_list_entries_and_a_self_child_are_accepted():
    event = decode_event(as_line(make_checkpoint(node_id="n", children=["n", "b", "n"], referents=["a", "a"])))
    assert (event.children, event.referents) == (("b", "n"), ("a",))


def test_seq_zero_and_large_seqs_are_accepted():
    assert decode_event(as_line(make_artifact(seq=0))).seq == 0
    assert decode_event(as_line(make_artifact(seq=2**63 - 1))).seq == 2**63 - 1


def test_seq_beyond_64_bits_is_dead_lettered_because_tables_store_64_bit_integers():
    with pytest.raises(InvalidEvent, match="seq"):
        decode_event(as_line(make_artifact(seq=2**63)))


def test_a_cycle_beyond_64_bits_is_informational_and_treated_as_absent():
    assert decode_event(as_line(make_checkpoint(cycle=2**64))).cycle is None


def test_whitespace_around_the_object_is_accepted():
    assert decode_event(b" \t\r" + CK_HEAD + b"}\r ").node_id == "n"


def test_an_artifact_event_ignores_checkpoint_fields_and_vice_versa():
    artifact = decode_event(as_line(make_artifact(node_id=3, referents="x", level="nope")))
    checkpoint = decode_event(as_line(make_checkpoint(op="bogus", tier="cold", artifact_id="")))
    assert (artifact.artifact_id, checkpoint.node_id) == ("a1", "n1")


# --------------------------------------------------------------------------- through replay


def test_bad_lines_become_numbered_dead_letters_and_good_lines_still_apply():
    result = run(
        b"not json",
        make_checkpoint(event_id="e2", node_id="n1", referents=["gone"]),
        make_artifact(op="deleted"),
        b"",
        b"[]",
    )
    assert [lineno for lineno, _ in result.dead_letters] == [1, 3, 5]
    assert result.dead_letters[1][1].startswith("op: ")
    assert [a["trigger"]["event_id"] for a in result.alerts] == ["e2"]
    assert result.events == 1


def test_a_replay_line_that_is_invalid_utf8_is_a_dead_letter_naming_the_byte():
    result = run(CK_HEAD + b',"text":"\xff"}')
    ((lineno, reason),) = result.dead_letters
    assert lineno == 1
    assert reason.startswith("not UTF-8:")


def test_a_replay_line_over_one_mebibyte_is_a_dead_letter():
    result = run(_padded(MAX_MESSAGE_BYTES + 1), _padded(MAX_MESSAGE_BYTES))
    assert [lineno for lineno, _ in result.dead_letters] == [1]
    assert "over the 1048576-byte limit" in result.dead_letters[0][1]
    assert result.events == 1



# --------------------------------------------------------------------------- the output encoder

_JSON_TEXT = st.text(st.characters(codec="utf-8"), max_size=20)  # every code point but lone surrogates
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_JSON_TEXT, inner, max_size=5),
    max_leaves=30,
)


@settings(max_examples=500, deadline=None)
@given(record=st.dictionaries(_JSON_TEXT, _JSON_VALUES, max_size=8))
def test_the_output_encoder_gives_the_bytes_the_engine_bounds_sizes_in(record):
    """wire.encode (orjson) and the engine's encode_record (the stdlib) agree byte for byte,
    control characters, U+2028 and astral code points included."""
    assert encode(record) == encode_record(record)


def test_the_output_encoder_takes_integers_past_64_bits_as_the_stdlib_does():
    assert encode({"n": 2**70, "s": "\u2028\x00"}) == encode_record({"n": 2**70, "s": "\u2028\x00"})


def test_an_encoded_output_and_a_status_key_hold_no_more_memory_than_their_length():
    # orjson returns even 20 bytes in an allocation of 4 KiB; an output is held until its
    # commit, a status key in the partition cache: each must be a bytes object of its own size
    import tracemalloc

    from stream.wire import status_key

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        held = [encode({"i": i}) for i in range(200)] + [status_key("ctx", f"n{i}") for i in range(200)]
        per_record = (tracemalloc.get_traced_memory()[0] - before) / len(held)
    finally:
        tracemalloc.stop()
    assert held[0] == b'{"i":0}' and held[200] == b'["ctx","n0"]'
    assert per_record < 200, f"{per_record:.0f} bytes held per record of about 10"


def test_json_type_names_what_the_user_wrote_in_json_terms():
    from stream.errors import json_type
    from stream.hook.claude_code import HookInputError, parse_input

    assert [json_type(v) for v in ({}, [], "", 0, 1.5, True, None)] == [
        "object", "array", "string", "number", "number", "boolean", "null"]
    assert json_type(b"x") == "bytes"  # not a parsed JSON value: its Python name
    with pytest.raises(HookInputError, match=r"^hook input must be a JSON object, got null$"):
        parse_input(b"null")
