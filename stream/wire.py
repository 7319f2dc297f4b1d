"""Codecs at the edge: the JSON of every topic, as pydantic v2 models.

Inbound, :func:`decode_event` turns one message (or replay line) into a domain event, or
raises :class:`~stream.errors.InvalidEvent` with a one-line reason the caller dead-letters
(DESIGN.md §3 "Validation boundary"); the size limits (:class:`Limits`, ``CG_MAX_*``) are
checked here, so the worker and ``replay`` dead-letter exactly the same messages. Outbound,
:func:`encode` writes the deterministic bytes of every output. It must not let an
informational field dead-letter a message. What is validated, the limits, and the JSON the
fast parser refuses (lone surrogates, huge integers, deep nesting): docs/WIRE.md.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Any, Literal, Union

import orjson
import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from stream.domain import outputs
from stream.domain.events import ArtifactEvent, CheckpointEvent, Event
from stream.domain.keys import constraint_key, text_key
from stream.domain.outputs import encode_record
from stream.errors import InvalidEvent, json_type
from stream.times import rfc3339_time

_orjson_dumps = orjson.dumps

if TYPE_CHECKING:  # pragma: no cover
    from stream.settings import Settings

MAX_ID_CHARS = 1024
MAX_LIST_ENTRIES = 10_000
MAX_MESSAGE_BYTES = 1 << 20
MAX_CONSTRAINT_CHARS = 4096
#: Table values are stored as JSON by faust's orjson codec, which stops at 64 bits.
MAX_INT64 = (1 << 63) - 1
#: Deepest nesting accepted (objects and arrays, the message itself included): the
#: depth pydantic-core's parser accepts (a unit test pins it), a size limit of its own.
MAX_JSON_DEPTH = 201
#: Digits of the longest integer Python's ``int()`` reads by default (sys.int_info).
_MAX_INT_DIGITS = 4300


@dataclass(frozen=True)
class Limits:
    """Input limits checked while decoding (the ``CG_MAX_*`` settings; README "Settings").

    A message over any of them is dead-lettered with a reason naming the limit and its
    setting. The defaults are DESIGN.md §3's: 1 MiB, 1,024-character ids, 10,000 entries
    per list, 4,096 characters per constraint, 201 levels of nesting, seq <= 2^63 - 1.
    """

    max_message_bytes: int = MAX_MESSAGE_BYTES
    max_id_chars: int = MAX_ID_CHARS
    max_referents: int = MAX_LIST_ENTRIES
    max_children: int = MAX_LIST_ENTRIES
    max_constraints: int = MAX_LIST_ENTRIES
    max_constraint_chars: int = MAX_CONSTRAINT_CHARS
    max_json_depth: int = MAX_JSON_DEPTH
    max_seq: int = MAX_INT64

    @classmethod
    def from_settings(cls, settings: Settings) -> Limits:
        return cls(
            max_message_bytes=settings.max_message_bytes,
            max_id_chars=settings.max_id_chars,
            max_referents=settings.max_referents,
            max_children=settings.max_children,
            max_constraints=settings.max_constraints,
            max_constraint_chars=settings.max_constraint_chars,
            max_json_depth=settings.max_json_depth,
            max_seq=settings.max_seq,
        )


DEFAULT_LIMITS = Limits()
_configured: list[Any] = [None, DEFAULT_LIMITS]  # [settings object, its limits]


def configured_limits() -> Limits:
    """The limits of the process-wide settings (``stream.settings.get_settings()``).

    The default of every decode function, so the worker (whose ``settings`` *is*
    ``get_settings()``) and the offline commands apply the same ``CG_MAX_*`` values
    without each caller passing them.
    """
    settings = _get_settings()
    if _configured[0] is not settings:
        _configured[:] = [settings, Limits.from_settings(settings)]
    limits: Limits = _configured[1]
    return limits


def _get_settings() -> Settings:
    global _get_settings
    from stream.settings import get_settings  # imported late: settings is not a codec concern

    _get_settings = get_settings
    return get_settings()


def _build_models(limits: Limits) -> SimpleNamespace:
    """The input models with ``limits`` built in (pydantic checks them in Rust)."""
    Id = Annotated[str, StringConstraints(min_length=1, max_length=limits.max_id_chars)]
    ConstraintText = Annotated[str, StringConstraints(max_length=limits.max_constraint_chars)]

    class ConstraintObject(BaseModel):
        """A constraint given as an object: keyed by its ``id`` verbatim."""

        model_config = ConfigDict(strict=True, extra="allow")
        id: Annotated[str, StringConstraints(min_length=1, max_length=limits.max_constraint_chars)]
        text: Any = None

    Constraint = Union[ConstraintText, ConstraintObject]  # noqa: UP007 (a runtime alias pydantic reads)
    ConstraintList = Annotated[list[Constraint], Field(max_length=limits.max_constraints)]

    class _InputEvent(BaseModel):
        model_config = ConfigDict(strict=True, extra="ignore")

        schema_version: int | None = Field(None, description="Must be 1 when present.")
        event_id: Id
        context_id: Id = Field(description="The agent working context; the partition key.")
        seq: Annotated[int, Field(ge=0, le=limits.max_seq)] | None = Field(
            None, description="Per-context counter shared by both event kinds, first event 0."
        )
        occurred_at: Any = Field(None, description="RFC 3339 time, informational.")

    class CheckpointIn(_InputEvent):
        """A summary node persisted as a checkpoint (``compaction-events``)."""

        type: Literal["checkpoint"]
        node_id: Id
        level: Literal["leaf", "section", "root"]
        children: Annotated[list[Id], Field(max_length=limits.max_children)] | None = None
        referents: Annotated[list[Id], Field(max_length=limits.max_referents)] | None = Field(
            None, description="Artifact ids the summary depends on but elides."
        )
        negative_constraints: ConstraintList | None = Field(None, description="Constraints the node carries.")
        raw_negative_constraints: ConstraintList | None = Field(
            None, description="Prohibitions in the raw context this node directly covers."
        )
        parent_id: Any = None
        cycle: Any = None
        text: Any = None
        opaque: bool | None = Field(
            None,
            description="The summary's content cannot be inspected (encrypted, not recorded, no referents "
            "reported): unverifiable_checkpoint. Strictly boolean; null means false.",
        )
        instructions: Any = Field(None, description="Metrics only: positive instructions carried.")
        raw_instructions: Any = Field(None, description="Metrics only: positive instructions in the raw context.")

    class ArtifactIn(_InputEvent):
        """An artifact entering or leaving a tier (``artifact-events``)."""

        type: Literal["artifact"]
        artifact_id: Id
        op: Literal["admitted", "evicted"]
        tier: Literal["live", "durable"] | None = None
        kind: Any = Field(None, description="raw_span | tool_output | file | durable_record (informational).")

    InputEvent = Annotated[CheckpointIn | ArtifactIn, Field(discriminator="type")]
    input_adapter: TypeAdapter[Any] = TypeAdapter(InputEvent)
    return SimpleNamespace(
        ConstraintObject=ConstraintObject,
        CheckpointIn=CheckpointIn,
        ArtifactIn=ArtifactIn,
        input_adapter=input_adapter,
        # the pydantic-core validators, called directly per message (TypeAdapter's own
        # validate_python adds a Python frame and its keyword handling to every call)
        input_validator=input_adapter.validator,
        constraints_validator=TypeAdapter(ConstraintList).validator,
    )


_built: dict[Limits, SimpleNamespace] = {}
_last_models: list[Any] = [None, None]  # [limits object, its models]: the per-message fast path


def _models(limits: Limits) -> SimpleNamespace:
    if _last_models[0] is limits:
        last: SimpleNamespace = _last_models[1]
        return last
    models = _built.get(limits)
    if models is None:
        if len(_built) >= 16:  # a handful of Limits per process; never grows unbounded
            _built.clear()
        models = _built[limits] = _build_models(limits)
    _last_models[:] = [limits, models]
    return models


_DEFAULT_MODELS = _models(DEFAULT_LIMITS)
#: The input models at the default limits (their JSON Schemas; typed access).
ConstraintObject = _DEFAULT_MODELS.ConstraintObject
CheckpointIn = _DEFAULT_MODELS.CheckpointIn
ArtifactIn = _DEFAULT_MODELS.ArtifactIn
_input_adapter: TypeAdapter[Any] = _DEFAULT_MODELS.input_adapter

# ----------------------------------------------------------------------------- outputs


class Trigger(BaseModel):
    event_id: str
    type: Literal["checkpoint", "artifact"]
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None


_DIGEST = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


class Alert(BaseModel):
    """An alert on ``checkpoint-alerts`` (DESIGN.md §3, §4 *Bounded outputs* [v2.1]).
    ``alert_id`` is deterministic; every listed set holds at most 1,000 entries."""

    schema_version: Literal[1] = 1
    type: Literal["alert"] = "alert"
    alert_id: str
    status: Literal["open", "resolved"]
    rule: Literal[
        "orphaned_referent", "negative_constraint_dropped", "non_idempotent", "sequence_gap",
        "unverifiable_checkpoint",
    ]
    action: Literal["escalate", "reject_subtree", "freeze", "resync"]
    severity: Literal["critical", "high", "warning"]
    context_id: str
    node_id: str | None
    level: str | None
    orphans: list[str] | None = Field(description="The first 1,000 orphans, sorted (non_idempotent: the orphan "
                                         "set the discarded version would have had). Null for "
                                         "unverifiable_checkpoint.")
    previous_orphans: list[str] | None = Field(description="non_idempotent: the first 1,000 orphans of the kept "
                                                  "version, sorted.")
    missing_constraints: list[str] | None = Field(description="The first 1,000 missing constraint keys, sorted. "
                                                     "Null for unverifiable_checkpoint.")
    set_size: int | None = Field(None, description="The full size of the rule's set (orphans; missing_constraints "
                                    "for negative_constraint_dropped). Null for sequence_gap and "
                                    "unverifiable_checkpoint.")
    truncated: bool | None = Field(None, description="The set lists fewer than set_size entries (1,000 at most, "
                                      "fewer to fit CG_MAX_OUTPUT_BYTES); non_idempotent: also when "
                                      "previous_orphans was cut.")
    set_digest: _DIGEST | None = Field(None, description="Order-independent digest of the full set: 64 hex digits "
                                          "of (sum of sha256(UTF-8 key) as big-endian integers) mod 2^256; it enters "
                                          "alert_id, so two truncated alerts differ by it.")
    subtree: list[str] | None = Field(description="negative_constraint_dropped: the nearest 1,000 node ids under "
                                         "the node (breadth-first, each node's children sorted).")
    subtree_size: int | None = Field(description="How many ids subtree lists when it lists them all; null when "
                                        "subtree_truncated.")
    subtree_truncated: bool | None = Field(None, description="negative_constraint_dropped: stored nodes under the "
                                              "node were left unlisted.")
    gap: tuple[int, int] | None
    trigger: Trigger
    detected_at: str | None
    emitted_at: str | None = Field(None, description="Wall clock; ignored by forensic comparison.")


class Status(BaseModel):
    """A node's current status on the compacted ``checkpoint-status`` topic (DESIGN.md §4).

    Key: the compact JSON array ``["<context_id>","<node_id>"]``. Emitted after the alerts
    of an applied event, for every node whose status changed.
    """

    schema_version: Literal[1] = 1
    type: Literal["status"] = "status"
    context_id: str
    node_id: str
    level: str
    authoritative: bool = Field(description="No open alert, not frozen, not degraded: safe to recover from.")
    frozen: bool
    open_rules: list[str] = Field(description="Rules with an open alert on this node, sorted.")
    degraded_by: list[str] = Field(
        description="The first 1,000 (sorted) nodes under this one with an open orphaned_referent or "
        "unverifiable_checkpoint alert."
    )
    degraded_count: int = Field(description="How many nodes degrade this one (degraded_by may be cut).")
    degraded_truncated: bool | None = Field(
        None, description="Present (true) only on a record re-sent without its degraded_by list, or cut to fit "
        "CG_MAX_OUTPUT_BYTES: degraded_count still counts them all.",
    )
    trigger: Trigger
    detected_at: str | None


class Verdict(BaseModel):
    """One record per applied checkpoint on ``checkpoint-verdicts``."""

    schema_version: Literal[1] = 1
    type: Literal["verdict"] = "verdict"
    context_id: str
    node_id: str
    level: str
    verdict: Literal["accepted", "replaced", "ignored-frozen", "frozen"]
    authoritative: bool
    frozen: bool
    open_rules: list[str]
    versions: int
    trigger: Trigger
    detected_at: str | None


class DeadLetter(BaseModel):
    """A message that could not be processed, on the dead-letter topic."""

    schema_version: Literal[1] = 1
    type: Literal["dead_letter"] = "dead_letter"
    reason: str = Field(description="One line: what is wrong with the message.")
    topic: str | None
    partition: int | None
    offset: int | None
    key_b64: str | None
    value_b64: str = Field(description="The original bytes, base64.")


SCHEMAS: dict[str, type[BaseModel] | TypeAdapter[Any]] = {
    "input-event": _input_adapter,
    "alert": Alert,
    "verdict": Verdict,
    "status": Status,
    "dead-letter": DeadLetter,
}


def json_schemas() -> dict[str, dict[str, Any]]:
    """name -> JSON Schema of every message this project reads or writes."""
    out = {}
    for name, model in SCHEMAS.items():
        out[name] = model.json_schema() if isinstance(model, TypeAdapter) else model.model_json_schema()
    return out

# ----------------------------------------------------------------------------- decoding


_CONSTRAINT_FIELDS = ("negative_constraints", "raw_negative_constraints")
#: list field -> (Limits attribute, setting name)
_LIST_LIMITS = {
    "referents": ("max_referents", "CG_MAX_REFERENTS"),
    "children": ("max_children", "CG_MAX_CHILDREN"),
    "negative_constraints": ("max_constraints", "CG_MAX_CONSTRAINTS"),
    "raw_negative_constraints": ("max_constraints", "CG_MAX_CONSTRAINTS"),
}
_ID_FIELDS = ("event_id", "context_id", "node_id", "artifact_id", "children", "referents")


def _chars_over(where: str, n: int, limit: int, setting: str) -> str:
    return f"{where}: {n} characters, limit is {limit} ({setting})"


def _constraint_reason(field: str, index: str, item: Any, limits: Limits) -> str:
    where = f"{field}.{index}"
    if isinstance(item, str) and len(item) > limits.max_constraint_chars:
        return _chars_over(where, len(item), limits.max_constraint_chars, "CG_MAX_CONSTRAINT_CHARS")
    if isinstance(item, dict) and isinstance(item.get("id"), str) and len(item["id"]) > limits.max_constraint_chars:
        return _chars_over(f"{where}.id", len(item["id"]), limits.max_constraint_chars, "CG_MAX_CONSTRAINT_CHARS")
    return f"{where}: a constraint must be a string or an object with a non-empty string 'id'"


def _reason(err: ValidationError, obj: dict[str, Any], limits: Limits) -> str:
    errors = err.errors(include_url=False)
    first = errors[0]
    loc = [str(p) for p in first["loc"]]
    if loc and loc[0] in ("checkpoint", "artifact"):
        loc = loc[1:]
    # a constraint that fits neither union branch is one error, not two
    sites = {e["loc"][:3] if e["loc"][1:2] and e["loc"][1] in _CONSTRAINT_FIELDS else e["loc"] for e in errors}
    more = f" (+{len(sites) - 1} more)" if len(sites) > 1 else ""
    if len(loc) >= 2 and loc[0] in _CONSTRAINT_FIELDS and loc[1].isdigit():
        items = obj.get(loc[0])
        item = items[int(loc[1])] if isinstance(items, list) and int(loc[1]) < len(items) else None
        return _constraint_reason(loc[0], loc[1], item, limits) + more
    where = ".".join(loc) or "message"
    msg = first["msg"]
    if first["type"] == "too_long" and loc and loc[0] in _LIST_LIMITS:
        attr, setting = _LIST_LIMITS[loc[0]]
        n = first.get("ctx", {}).get("actual_length")
        n = len(first["input"]) if n is None and isinstance(first.get("input"), list) else n
        return f"{where}: {n} items, limit is {getattr(limits, attr)} ({setting}){more}"
    if first["type"] == "less_than_equal" and loc == ["seq"]:
        value = first.get("input")
        shown = repr(value) if isinstance(value, int) and value <= MAX_INT64 else "beyond 64 bits"
        return f"seq: {shown}, limit is {limits.max_seq} (CG_MAX_SEQ){more}"
    if first["type"] == "string_too_long" and loc and loc[0] in _ID_FIELDS and isinstance(first.get("input"), str):
        return _chars_over(where, len(first["input"]), limits.max_id_chars, "CG_MAX_ID_CHARS") + more
    if first.get("input", "") is None and first["type"] not in ("missing",):
        msg = "must not be null (required field)"
    elif first["type"] == "missing":
        msg = "required field is missing"
    elif first["type"] == "union_tag_invalid":
        where, msg = "type", f"must be 'checkpoint' or 'artifact', got {first['input'].get('type')!r}"[:200]
    elif first["type"] == "union_tag_not_found":
        where, msg = "type", "required field is missing"
    return f"{where}: {msg}{more}".replace("\n", " ")


def _keys(items: list[Any] | None, field: str, limits: Limits) -> tuple[str, ...]:
    if not items:
        return ()
    texts = _text_list(items)
    if texts is not None:
        return _checked(texts[0], texts[1], field, limits)
    keys, longest = _sorted_keys({constraint_key(c if isinstance(c, str) else {"id": c.id}) for c in items})
    return _checked(keys, longest, field, limits)


def _checked(keys: tuple[str, ...], longest: int, field: str, limits: Limits) -> tuple[str, ...]:
    """``keys``, unless the longest (``longest`` characters) is over the limit."""
    if longest > limits.max_constraint_chars:  # NFKC can lengthen a text up to 18 times
        raise InvalidEvent(
            f"{field}: a constraint key of {longest} characters, limit is {limits.max_constraint_chars} "
            "(CG_MAX_CONSTRAINT_CHARS)"
        )
    return keys


def _sorted_keys(keys: set[str]) -> tuple[tuple[str, ...], int]:
    return tuple(sorted(keys)), max(map(len, keys))


#: A list of string constraints up to this many characters in all is remembered with its
#: keys: a context's checkpoints re-list the same constraints, event after event.
_REMEMBERED_LIST_CHARS = 4096
#: At most this many lists are remembered (then the memory starts again).
_REMEMBERED_LISTS = 1 << 12
_remembered_lists: dict[tuple[str, ...], tuple[tuple[str, ...], int, int]] = {}


def _text_list(items: list[Any]) -> tuple[tuple[str, ...], int, int] | None:
    """(sorted distinct keys, the longest key's length, the longest text's length) of a list
    of strings; None when an item is not a string (a constraint object). One dict lookup
    for a list seen before."""
    try:
        texts = tuple(items)
        known = _remembered_lists.get(texts)
    except TypeError:  # an unhashable item: not a string
        return None
    if known is not None:  # equal tuples: the same strings (a str never equals another type here)
        return known
    if not texts or set(map(type, texts)) != {str}:
        return None
    keys, longest = _sorted_keys({text_key(t) for t in texts})
    known = (keys, longest, max(map(len, texts)))
    if sum(map(len, texts)) <= _REMEMBERED_LIST_CHARS:
        if len(_remembered_lists) >= _REMEMBERED_LISTS:
            _remembered_lists.clear()
        _remembered_lists[texts] = known
    return known


def _ids(items: list[str] | None) -> tuple[str, ...]:
    return tuple(sorted(set(items))) if items else ()


def _informational_constraints(v: Any, field: str, models: SimpleNamespace, limits: Limits) -> tuple[str, ...]:
    if v is None:
        return ()
    try:
        if type(v) is list and len(v) <= limits.max_constraints:
            texts = _text_list(v)
            if texts is not None and texts[2] <= limits.max_constraint_chars:
                # what the validator accepts unchanged: a short list of short strings
                return _checked(texts[0], texts[1], field, limits)
        return _keys(models.constraints_validator.validate_python(v, strict=True), field, limits)
    except (ValidationError, InvalidEvent):
        return ()


# --- JSON the fast parser refuses (module docstring) --------------------------------------

#: jiter error texts that may be grammatical JSON (re-read with Python's json).
_FALLBACK_ERRORS = ("surrogate", "hex escape", "number out of range", "recursion limit exceeded")
#: Stands in for an integer of more than 4,300 digits: beyond 64 bits, sign kept.
_HUGE = MAX_INT64 + 1


def _int_or_huge(digits: str) -> int:
    if len(digits) <= _MAX_INT_DIGITS:
        return int(digits)
    return -_HUGE if digits.startswith("-") else _HUGE


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _too_deep(obj: Any, limit: int) -> bool:
    """True when ``obj`` nests containers more than ``limit`` levels (iterative)."""
    stack = [(obj, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, (dict, list)):
            if depth > limit:
                return True
            stack.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def _parse_grammatical(text: bytes, jiter_error: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Re-read what jiter refused with Python's json; InvalidEvent if that fails too."""
    try:
        obj = json.loads(
            text.decode("utf-8"), parse_int=_int_or_huge, parse_constant=_no_constant
        )
    except RecursionError:
        raise InvalidEvent(_too_deep_reason(max_depth)) from None
    except ValueError:  # UnicodeDecodeError included
        raise InvalidEvent(f"not JSON: {jiter_error}"[:300]) from None
    if _too_deep(obj, max_depth):
        raise InvalidEvent(_too_deep_reason(max_depth))
    return obj


def _too_deep_reason(max_depth: int) -> str:
    setting = " (CG_MAX_JSON_DEPTH)" if max_depth != MAX_JSON_DEPTH else ""
    return f"not JSON: nested deeper than {max_depth} levels{setting}"


def _is_unicode(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _not_unicode(where: str) -> InvalidEvent:
    return InvalidEvent(f"{where}: not valid Unicode (lone surrogate escape)")


def _check_unicode(obj: dict[str, Any]) -> None:
    """After a Python-json re-read: dead-letter a lone surrogate in a rule field's
    strings, drop an informational field that holds one (treated as absent)."""
    for k, v in list(obj.items()):
        if isinstance(v, str):
            if not _is_unicode(v):
                if k in ("type", "event_id", "context_id", "node_id", "level", "artifact_id", "op", "tier"):
                    raise _not_unicode(k)
                obj[k] = None
        elif isinstance(v, list) and k in ("children", "referents", *_CONSTRAINT_FIELDS):
            for i, item in enumerate(v):
                if isinstance(item, dict):
                    _drop_informational_surrogates(item)
                s = item.get("id") if isinstance(item, dict) else item
                if isinstance(s, str) and not _is_unicode(s):
                    raise _not_unicode(f"{k}.{i}" + (".id" if isinstance(item, dict) else ""))
        elif k in ("instructions", "raw_instructions") and isinstance(v, list):
            for item in v:
                if isinstance(item, dict):
                    _drop_informational_surrogates(item)
                s = item.get("id") if isinstance(item, dict) else item
                if isinstance(s, str) and not _is_unicode(s):
                    obj[k] = None
                    break


def _drop_informational_surrogates(constraint: dict[str, Any]) -> None:
    """A constraint object's members other than ``id`` are informational: one whose name,
    or any string in whose value, holds a lone surrogate is dropped (treated as absent)."""
    for name in [n for n in constraint if n != "id"]:
        if not _is_unicode(name) or not _all_unicode(constraint[name]):
            del constraint[name]


def _all_unicode(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not _is_unicode(v):
                return False
        elif isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
    return True


def parse_json(data: bytes | str, *, max_bytes: int | None = None) -> Any:
    """Parse strict JSON (UTF-8, no NaN/Infinity, at most ``CG_MAX_JSON_DEPTH`` deep);
    raise InvalidEvent on anything else. ``max_bytes``: default the configured limit."""
    limits = configured_limits()
    obj, _ = _parse(data, limits.max_message_bytes if max_bytes is None else max_bytes, limits.max_json_depth)
    return obj


def _parse(data: bytes | str, max_bytes: int, max_depth: int = MAX_JSON_DEPTH) -> tuple[Any, bool]:
    """(parsed value, whether Python's json had to re-read it)."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if len(data) > max_bytes:
        raise InvalidEvent(f"message is {len(data)} bytes, over the {max_bytes}-byte limit")
    try:
        obj = pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        text = str(exc).splitlines()[0] if str(exc) else "not JSON"
    else:
        if max_depth < MAX_JSON_DEPTH and _too_deep(obj, max_depth):  # jiter itself stops at 201
            raise InvalidEvent(_too_deep_reason(max_depth))
        return obj, False
    if any(marker in text for marker in _FALLBACK_ERRORS):
        # also "recursion limit exceeded": jiter counts a value inside the innermost array as
        # one more level, so 201 arrays around a number stop it; the container depth decides
        return _parse_grammatical(data, text, max_depth), True
    raise InvalidEvent(f"not JSON: {text}"[:300])


def decode_event(data: bytes | str, *, max_bytes: int | None = None, limits: Limits | None = None) -> Event:
    """Validate one input message (JSON bytes) into a domain event.

    Args:
        data: the message value (or one JSONL line), UTF-8 JSON.
        max_bytes: largest accepted message; default ``limits.max_message_bytes``.
        limits: the input limits; default :func:`configured_limits` (the ``CG_MAX_*``
            settings of this process).
    Returns:
        :class:`~stream.domain.events.CheckpointEvent` or ``ArtifactEvent`` with ids
        deduplicated and sorted, constraints reduced to their keys.
    Raises:
        InvalidEvent: with a one-line reason (the caller dead-letters the message).
    """
    limits = limits or configured_limits()
    obj, reread = _parse(data, limits.max_message_bytes if max_bytes is None else max_bytes, limits.max_json_depth)
    if not isinstance(obj, dict):
        raise InvalidEvent(f"message: must be a JSON object, got {json_type(obj)}")
    if reread:
        _check_unicode(obj)
    models = _models(limits)
    try:
        m = models.input_validator.validate_python(obj, strict=True)
    except ValidationError as exc:
        raise InvalidEvent(_reason(exc, obj, limits)) from None
    if m.schema_version is not None and m.schema_version != 1:
        version = repr(m.schema_version) if abs(m.schema_version) <= MAX_INT64 else "beyond 64 bits"
        raise InvalidEvent(f"schema_version: unsupported version {version} (this worker reads 1)")
    occurred_at = rfc3339_time(m.occurred_at)  # informational: absent unless RFC 3339
    if m.type == "artifact":
        kind = m.kind if m.kind in ("raw_span", "tool_output", "file", "durable_record") else None
        return ArtifactEvent(
            event_id=m.event_id,
            context_id=m.context_id,
            artifact_id=m.artifact_id,
            op=m.op,
            tier=m.tier or "live",
            seq=m.seq,
            occurred_at=occurred_at,
            kind=kind,
        )
    plain_int = isinstance(m.cycle, int) and not isinstance(m.cycle, bool)
    cycle = m.cycle if plain_int and abs(m.cycle) <= MAX_INT64 else None
    parent_id = m.parent_id if isinstance(m.parent_id, str) and m.parent_id else None
    return CheckpointEvent(
        event_id=m.event_id,
        context_id=m.context_id,
        node_id=m.node_id,
        level=m.level,
        children=_ids(m.children),
        referents=_ids(m.referents),
        negative_constraints=_keys(m.negative_constraints, "negative_constraints", limits),
        raw_negative_constraints=_keys(m.raw_negative_constraints, "raw_negative_constraints", limits),
        seq=m.seq,
        occurred_at=occurred_at,
        parent_id=parent_id,
        cycle=cycle,
        instructions=_informational_constraints(m.instructions, "instructions", models, limits),
        raw_instructions=_informational_constraints(m.raw_instructions, "raw_instructions", models, limits),
        opaque=bool(m.opaque),
    )


def decode_message(
    key: bytes | None, value: bytes | None, *, max_bytes: int | None = None, limits: Limits | None = None
) -> Event:
    """Decode one Kafka input message: :func:`decode_event` plus the key check.

    The key must be the UTF-8 ``context_id`` of the payload: a message under another
    key may sit on another partition than the rest of its context (DESIGN.md §3).
    Raises InvalidEvent (dead letter) on any contract break.
    """
    if value is None:
        raise InvalidEvent("message has no value (tombstone)")
    event = decode_event(value, max_bytes=max_bytes, limits=limits)
    if key is None:
        raise InvalidEvent("message key is missing; it must be the UTF-8 context_id")
    try:
        key_text = key.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidEvent("message key is not UTF-8; it must be the UTF-8 context_id") from None
    if key_text != event.context_id:
        raise InvalidEvent(f"message key {key_text[:80]!r} differs from context_id {event.context_id[:80]!r}")
    return event


# ----------------------------------------------------------------------------- encoding


def _dumps(obj: Any) -> bytes:
    return encode_record(obj)  # the engine's encoding: its size bounds are in these bytes


def _compact(data: bytes) -> bytes:
    """``data`` in a bytes object of its own size (50 ns).

    orjson returns its output in an allocation of at least 4 KiB, whatever its length. An
    output record is held until the commit that acknowledges it, a status key as long as the
    partition cache keeps it: on the synthetic stream that held about 10 KB per event, paid
    in page faults (bench/README "sixth round")."""
    return b"%b" % data


def encode(record: outputs.Alert | outputs.NodeStatus | outputs.Verdict | dict[str, Any]) -> bytes:
    """The deterministic JSON bytes of any output: an engine value (alert, node status,
    verdict — :meth:`to_record`, fields in wire order) or a JSON-ready record (a dead
    letter, an alert read back from a topic), compact UTF-8. The one output encoder.

    orjson gives the very bytes of the engine's :func:`~stream.domain.outputs.encode_record`
    (in which the engine bounds a record's size; tests/unit/test_wire.py checks they agree)
    at a fifth of its cost; an integer past 64 bits, which orjson refuses, takes the stdlib."""
    if not isinstance(record, dict):
        record = record.to_record()
    try:
        return _compact(_orjson_dumps(record))
    except TypeError:
        return encode_record(record)


def status_key(context_id: str, node_id: str) -> bytes:
    """The message key of a status record: compact JSON ``["<context_id>","<node_id>"]``."""
    return _compact(_orjson_dumps([context_id, node_id]))  # ids are strings: the bytes of encode_record


def dead_letter(
    value: bytes | None,
    reason: str,
    *,
    key: bytes | None = None,
    topic: str | None = None,
    partition: int | None = None,
    offset: int | None = None,
) -> dict[str, Any]:
    """The dead-letter record of a bad message: original bytes (base64) + where + why."""
    return {
        "schema_version": 1,
        "type": "dead_letter",
        "reason": reason.replace("\n", " "),
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "key_b64": base64.b64encode(key).decode("ascii") if key is not None else None,
        "value_b64": base64.b64encode(value or b"").decode("ascii"),
    }


# ----------------------------------------------------------------------------- remediation


class RemediationRequest(BaseModel):
    """A request of the reference remediation worker on ``remediation-requests``
    (``python -m stream remediate``, :mod:`stream.remediation`). Key: ``context_id``.

    ``request_id`` is deterministic: a hash of (``alert_id``, ``kind``, item) where the
    item is the referent (refetch), the missing constraints (recompact), the node
    (freeze) or the cancelled request id (cancel). Fields that do not apply to a kind are
    null; a ``cancel`` echoes the cancelled request's ``referent``, ``missing_constraints``
    and ``subtree``.
    """

    schema_version: Literal[1] = 1
    type: Literal["remediation_request"] = "remediation_request"
    request_id: str
    kind: Literal["refetch", "recompact", "freeze", "cancel"]
    context_id: str
    node_id: str
    rule: str = Field(description="The rule of the alert that caused the request.")
    alert_id: str = Field(description="The alert that caused the request (for cancel: the resolving alert).")
    referent: str | None = Field(None, description="refetch: the orphaned artifact id to fetch again.")
    missing_constraints: list[str] | None = Field(
        None, description="recompact: the constraint keys the node dropped (sorted)."
    )
    subtree: list[str] | None = Field(None, description="recompact: node ids under the node, to recompact.")
    cancels: str | None = Field(None, description="cancel: the request_id of the pending request to cancel.")
    trigger: Trigger = Field(description="The trigger of the alert that caused the request.")


SCHEMAS["remediation-request"] = RemediationRequest


def encode_remediation_request(request: RemediationRequest | dict[str, Any]) -> bytes:
    """Deterministic JSON bytes of one remediation request (model field order, compact)."""
    if not isinstance(request, RemediationRequest):
        request = RemediationRequest.model_validate(request)
    return _dumps(request.model_dump(mode="json"))
