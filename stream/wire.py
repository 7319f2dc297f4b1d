"""Codecs at the edge: the JSON of every topic, as pydantic v2 models.

Inbound, :func:`decode_event` turns the bytes of one message (or one replay line) into
a domain event, or raises :class:`~stream.errors.InvalidEvent` with a one-line reason —
the caller dead-letters it (DESIGN.md §3 "Validation boundary"):

* only the fields the rules use are validated, with strict JSON types (no coercion:
  ``"3"``, ``3.0`` and ``true`` are not integers); ids are non-empty strings of at most
  1,024 characters; lists hold at most 10,000 entries; an explicit ``null`` for an
  optional field means absent;
* informational fields (``occurred_at``, ``cycle``, ``text``, ``parent_id``, ``kind``,
  ``instructions``, ``raw_instructions``, anything unknown) never cause a dead letter;
  ill-typed, they are treated as absent;
* NaN and Infinity are not JSON; neither are invalid UTF-8 nor nesting deeper than the
  parser's recursion limit.

Outbound, :func:`encode_alert` / :func:`encode_verdict` / :func:`encode_dead_letter`
produce deterministic JSON bytes (fixed key order, compact, UTF-8): the same alert is
the same bytes offline and from Kafka. The output models (:class:`Alert`,
:class:`Verdict`, :class:`DeadLetter`) exist for their JSON Schemas
(``python -m stream schema``) and for consumers that want typed access.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal, Optional, Union

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError

from stream.domain.events import ArtifactEvent, CheckpointEvent, Event, constraint_key
from stream.errors import InvalidEvent

MAX_ID_CHARS = 1024
MAX_LIST_ENTRIES = 10_000
MAX_MESSAGE_BYTES = 1 << 20
#: Table values are stored as JSON by faust's orjson codec, which stops at 64 bits.
MAX_INT64 = (1 << 63) - 1

Id = Annotated[str, StringConstraints(min_length=1, max_length=MAX_ID_CHARS)]
IdList = Annotated[list[Id], Field(max_length=MAX_LIST_ENTRIES)]


class ConstraintObject(BaseModel):
    """A constraint given as an object: keyed by its ``id`` verbatim."""

    model_config = ConfigDict(strict=True, extra="allow")
    id: Annotated[str, StringConstraints(min_length=1)]
    text: Any = None


Constraint = Union[str, ConstraintObject]
ConstraintList = Annotated[list[Constraint], Field(max_length=MAX_LIST_ENTRIES)]


class _InputEvent(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore")

    schema_version: Optional[int] = Field(None, description="Must be 1 when present.")
    event_id: Id
    context_id: Id = Field(description="The agent working context; the partition key.")
    seq: Optional[Annotated[int, Field(ge=0, le=MAX_INT64)]] = Field(
        None, description="Per-context counter shared by both event kinds, first event 0."
    )
    occurred_at: Any = Field(None, description="RFC 3339 time, informational.")


class CheckpointIn(_InputEvent):
    """A summary node persisted as a checkpoint (``compaction-events``)."""

    type: Literal["checkpoint"]
    node_id: Id
    level: Literal["leaf", "section", "root"]
    children: Optional[IdList] = None
    referents: Optional[IdList] = Field(None, description="Artifact ids the summary depends on but elides.")
    negative_constraints: Optional[ConstraintList] = Field(None, description="Constraints the node carries.")
    raw_negative_constraints: Optional[ConstraintList] = Field(
        None, description="Prohibitions in the raw context this node directly covers."
    )
    parent_id: Any = None
    cycle: Any = None
    text: Any = None
    instructions: Any = Field(None, description="Metrics only: positive instructions carried.")
    raw_instructions: Any = Field(None, description="Metrics only: positive instructions in the raw context.")


class ArtifactIn(_InputEvent):
    """An artifact entering or leaving a tier (``artifact-events``)."""

    type: Literal["artifact"]
    artifact_id: Id
    op: Literal["admitted", "evicted"]
    tier: Optional[Literal["live", "durable"]] = None
    kind: Any = Field(None, description="raw_span | tool_output | file | durable_record (informational).")


InputEvent = Annotated[Union[CheckpointIn, ArtifactIn], Field(discriminator="type")]
_input_adapter: TypeAdapter = TypeAdapter(InputEvent)
_constraints_adapter: TypeAdapter = TypeAdapter(ConstraintList)

# ----------------------------------------------------------------------------- outputs


class Trigger(BaseModel):
    event_id: str
    type: Literal["checkpoint", "artifact"]
    topic: Optional[str] = None
    partition: Optional[int] = None
    offset: Optional[int] = None


class Alert(BaseModel):
    """An alert on ``checkpoint-alerts`` (DESIGN.md §3). ``alert_id`` is deterministic."""

    schema_version: Literal[1] = 1
    type: Literal["alert"] = "alert"
    alert_id: str
    status: Literal["open", "resolved"]
    rule: Literal["orphaned_referent", "negative_constraint_dropped", "non_idempotent", "sequence_gap"]
    action: Literal["escalate", "reject_subtree", "freeze", "resync"]
    severity: Literal["critical", "high", "warning"]
    context_id: str
    node_id: Optional[str]
    level: Optional[str]
    orphans: list[str]
    previous_orphans: Optional[list[str]]
    missing_constraints: list[str]
    subtree: Optional[list[str]]
    gap: Optional[tuple[int, int]]
    trigger: Trigger
    detected_at: Optional[str]
    emitted_at: Optional[str] = Field(None, description="Wall clock; ignored by forensic comparison.")


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
    detected_at: Optional[str]


class DeadLetter(BaseModel):
    """A message that could not be processed, on the dead-letter topic."""

    schema_version: Literal[1] = 1
    type: Literal["dead_letter"] = "dead_letter"
    reason: str = Field(description="One line: what is wrong with the message.")
    topic: Optional[str]
    partition: Optional[int]
    offset: Optional[int]
    key_b64: Optional[str]
    value_b64: str = Field(description="The original bytes, base64.")


SCHEMAS: dict[str, type[BaseModel] | TypeAdapter] = {
    "input-event": _input_adapter,
    "alert": Alert,
    "verdict": Verdict,
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


def _reason(err: ValidationError) -> str:
    errors = err.errors(include_url=False)
    first = errors[0]
    loc = [str(p) for p in first["loc"]]
    if loc and loc[0] in ("checkpoint", "artifact"):
        loc = loc[1:]
    if len(loc) >= 2 and loc[0] in _CONSTRAINT_FIELDS and loc[1].isdigit():
        where = ".".join(loc[:2])
        return f"{where}: a constraint must be a string or an object with a non-empty string 'id'"
    where = ".".join(loc) or "message"
    msg = first["msg"]
    if first.get("input", "") is None and first["type"] not in ("missing",):
        msg = "must not be null (required field)"
    elif first["type"] == "missing":
        msg = "required field is missing"
    elif first["type"] == "union_tag_invalid":
        where, msg = "type", f"must be 'checkpoint' or 'artifact', got {first['input'].get('type')!r}"[:200]
    elif first["type"] == "union_tag_not_found":
        where, msg = "type", "required field is missing"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {msg}{more}".replace("\n", " ")


def _keys(items: list[Any] | None) -> tuple[str, ...]:
    if not items:
        return ()
    return tuple(sorted({constraint_key(c if isinstance(c, str) else {"id": c.id}) for c in items}))


def _ids(items: list[str] | None) -> tuple[str, ...]:
    return tuple(sorted(set(items))) if items else ()


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def _informational_time(v: Any) -> str | None:
    """``occurred_at`` verbatim when it is an RFC 3339 date-time, else absent."""
    if not isinstance(v, str) or not _RFC3339.fullmatch(v):
        return None
    try:
        datetime.fromisoformat(v.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return v


def _informational_constraints(v: Any) -> tuple[str, ...]:
    if v is None:
        return ()
    try:
        return _keys(_constraints_adapter.validate_python(v, strict=True))
    except ValidationError:
        return ()


def parse_json(data: bytes | str, *, max_bytes: int = MAX_MESSAGE_BYTES) -> Any:
    """Parse strict JSON (UTF-8, no NaN/Infinity); raise InvalidEvent on anything else."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if len(data) > max_bytes:
        raise InvalidEvent(f"message is {len(data)} bytes, over the {max_bytes}-byte limit")
    try:
        return pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        text = str(exc).splitlines()[0] if str(exc) else "not JSON"
        raise InvalidEvent(f"not JSON: {text}"[:300]) from None


def decode_event(data: bytes | str, *, max_bytes: int = MAX_MESSAGE_BYTES) -> Event:
    """Validate one input message (JSON bytes) into a domain event.

    Args:
        data: the message value (or one JSONL line), UTF-8 JSON, at most ``max_bytes``.
    Returns:
        :class:`~stream.domain.events.CheckpointEvent` or ``ArtifactEvent`` with ids
        deduplicated and sorted, constraints reduced to their keys.
    Raises:
        InvalidEvent: with a one-line reason (the caller dead-letters the message).
    """
    obj = parse_json(data, max_bytes=max_bytes)
    if not isinstance(obj, dict):
        raise InvalidEvent(f"message: must be a JSON object, got {type(obj).__name__}")
    try:
        m = _input_adapter.validate_python(obj, strict=True)
    except ValidationError as exc:
        raise InvalidEvent(_reason(exc)) from None
    if m.schema_version is not None and m.schema_version != 1:
        raise InvalidEvent(f"schema_version: unsupported version {m.schema_version!r} (this worker reads 1)")
    occurred_at = _informational_time(m.occurred_at)
    if isinstance(m, ArtifactIn):
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
    cycle = m.cycle if isinstance(m.cycle, int) and not isinstance(m.cycle, bool) and abs(m.cycle) <= MAX_INT64 else None
    parent_id = m.parent_id if isinstance(m.parent_id, str) and m.parent_id else None
    return CheckpointEvent(
        event_id=m.event_id,
        context_id=m.context_id,
        node_id=m.node_id,
        level=m.level,
        children=_ids(m.children),
        referents=_ids(m.referents),
        negative_constraints=_keys(m.negative_constraints),
        raw_negative_constraints=_keys(m.raw_negative_constraints),
        seq=m.seq,
        occurred_at=occurred_at,
        parent_id=parent_id,
        cycle=cycle,
        instructions=_informational_constraints(m.instructions),
        raw_instructions=_informational_constraints(m.raw_instructions),
    )


def decode_message(key: bytes | None, value: bytes | None, *, max_bytes: int = MAX_MESSAGE_BYTES) -> Event:
    """Decode one Kafka input message: :func:`decode_event` plus the key check.

    The key must be the UTF-8 ``context_id`` of the payload: a message under another
    key may sit on another partition than the rest of its context (DESIGN.md §3).
    Raises InvalidEvent (dead letter) on any contract break.
    """
    if value is None:
        raise InvalidEvent("message has no value (tombstone)")
    event = decode_event(value, max_bytes=max_bytes)
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


def _dumps(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


def encode_alert(alert: dict[str, Any]) -> bytes:
    """Deterministic JSON bytes of one alert dict (the engine's key order, compact)."""
    return _dumps(alert)


def encode_verdict(verdict: dict[str, Any]) -> bytes:
    """Deterministic JSON bytes of one verdict dict."""
    return _dumps(verdict)


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


def encode_dead_letter(record: dict[str, Any]) -> bytes:
    return _dumps(record)


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
    referent: Optional[str] = Field(None, description="refetch: the orphaned artifact id to fetch again.")
    missing_constraints: Optional[list[str]] = Field(
        None, description="recompact: the constraint keys the node dropped (sorted)."
    )
    subtree: Optional[list[str]] = Field(None, description="recompact: node ids under the node, to recompact.")
    cancels: Optional[str] = Field(None, description="cancel: the request_id of the pending request to cancel.")
    trigger: Trigger = Field(description="The trigger of the alert that caused the request.")


SCHEMAS["remediation-request"] = RemediationRequest


def encode_remediation_request(request: RemediationRequest | dict[str, Any]) -> bytes:
    """Deterministic JSON bytes of one remediation request (model field order, compact)."""
    if not isinstance(request, RemediationRequest):
        request = RemediationRequest.model_validate(request)
    return _dumps(request.model_dump(mode="json"))
