"""One context's input events, built and validated exactly as the worker will read them.

:class:`EventBuilder` turns a call (``admitted``, ``evicted``, ``checkpoint``) into the
bytes of one input message (DESIGN.md §3) and runs them through the worker's own
decoder, :func:`stream.wire.decode_event`, with the same ``CG_MAX_*`` limits. So a call
the worker would dead-letter raises :class:`~stream.errors.InvalidEvent` at the call,
with the very reason the dead-letter record would carry (``tier: Input should be 'live'
or 'durable'``), and never reaches the topic.

``seq`` is one counter for both event kinds, starting at ``since`` (0 for a new
context; persist :attr:`EventBuilder.next_seq` to resume after a restart). The
``event_id`` is ``<seq>-<hash>``: a hash of the context, the seq and the event's rule
content, so the same call at the same seq always gets the same id and a re-sent record
is a duplicate the engine ignores (DESIGN.md §4 "Applying", rule 1). A validation error
does not use up a seq.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pydantic_core

from stream.errors import InvalidEvent
from stream.settings import Settings
from stream.wire import Limits, decode_event

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Emitted:
    """One event handed to the producer. ``partition``/``offset`` are set once the broker
    acknowledged it (after ``flush()``); ``wait_for`` needs them."""

    context_id: str
    event_id: str
    seq: int | None
    type: str  # "checkpoint" | "artifact"
    topic: str
    key: bytes = field(repr=False)
    value: bytes = field(repr=False)
    partition: int | None = None
    offset: int | None = None

    @property
    def acknowledged(self) -> bool:
        return self.offset is not None

    def positions(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}`` of this event (empty until acknowledged)."""
        if self.partition is None or self.offset is None:
            return {}
        return {(self.topic, self.partition): self.offset}


def _rfc3339(value: datetime) -> str:
    if value.tzinfo is None:
        raise InvalidEvent("occurred_at: a datetime needs a time zone (e.g. datetime.now(timezone.utc))")
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _jsonable(value: Any, field: str) -> Any:
    """Python values the caller may pass -> JSON values (what the decoder then judges).

    Tuples, sets and other iterables become lists (sets sorted: lists are sets in the
    contract, and the bytes stay deterministic); anything else goes through unchanged,
    so an ill-typed argument reaches the decoder and gets the decoder's reason. NaN and
    Infinity, which JSON cannot hold, raise here, naming the field.
    """
    if isinstance(value, (str, bytes, int, bool, type(None))):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidEvent(f"{field}: NaN and Infinity are not JSON")
        return value
    if isinstance(value, Mapping):
        return {k: _jsonable(v, field) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        items = [_jsonable(v, field) for v in value]
        try:
            return sorted(items)
        except TypeError:  # mixed types: the decoder will name the bad one
            return items
    if isinstance(value, Iterable):
        return [_jsonable(v, field) for v in value]
    return value


def _dumps(obj: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON; ``InvalidEvent`` naming the field for a value JSON cannot hold."""
    try:
        return pydantic_core.to_json(obj)
    except pydantic_core.PydanticSerializationError as exc:
        if "surrogates not allowed" in str(exc):  # a lone surrogate: let the decoder name the field
            return json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("ascii")
        for name, v in obj.items():
            try:
                pydantic_core.to_json(v)
            except pydantic_core.PydanticSerializationError:
                raise InvalidEvent(f"{name}: {type(v).__name__} is not JSON") from None
        raise


class EventBuilder:
    """Builds, validates and numbers one context's input events (module docstring).

    ``since``: the first seq (None: events carry no seq and are applied on arrival).
    ``clock``: stamps ``occurred_at`` when the call gives none (None: no stamp).
    Thread-safe: seq is taken under a lock, after validation succeeded.
    """

    def __init__(self, settings: Settings, context_id: str, *, since: int | None = 0,
                 clock: Clock | None = utc_now, limits: Limits | None = None) -> None:
        if since is not None and (isinstance(since, bool) or not isinstance(since, int) or since < 0):
            raise InvalidEvent(f"since: must be an integer >= 0 or None, got {since!r}")
        self.settings = settings
        self.context_id = context_id
        self.next_seq = since
        self.clock = clock
        self.limits = limits or Limits.from_settings(settings)
        self._lock = threading.Lock()

    def artifact(self, op: str, artifact_id: str, *, tier: str | None = "live", kind: str | None = None,
                 occurred_at: datetime | str | None = None, event_id: str | None = None) -> Emitted:
        fields = {"artifact_id": artifact_id, "op": op, "tier": tier}
        info = {"kind": kind}
        return self._build("artifact", self.settings.artifact_topic, fields, info, occurred_at, event_id)

    def checkpoint(self, node_id: str, level: str, *, children: Iterable[str] | None = None,
                   referents: Iterable[str] | None = None,
                   negative_constraints: Iterable[Any] | None = None,
                   raw_negative_constraints: Iterable[Any] | None = None,
                   opaque: bool | None = None, text: str | None = None, parent_id: str | None = None,
                   cycle: int | None = None, instructions: Iterable[Any] | None = None,
                   raw_instructions: Iterable[Any] | None = None,
                   occurred_at: datetime | str | None = None, event_id: str | None = None) -> Emitted:
        fields = {
            "node_id": node_id, "level": level, "children": children, "referents": referents,
            "negative_constraints": negative_constraints, "raw_negative_constraints": raw_negative_constraints,
            "opaque": opaque,
        }
        info = {"text": text, "parent_id": parent_id, "cycle": cycle, "instructions": instructions,
                "raw_instructions": raw_instructions}
        return self._build("checkpoint", self.settings.compaction_topic, fields, info, occurred_at, event_id)

    def _build(self, kind: str, topic: str, fields: dict[str, Any], info: dict[str, Any],
               occurred_at: datetime | str | None, event_id: str | None) -> Emitted:
        rule = {k: _jsonable(v, k) for k, v in fields.items() if v is not None}
        extra = {k: _jsonable(v, k) for k, v in info.items() if v is not None}
        if occurred_at is None and self.clock is not None:
            occurred_at = self.clock()
        if isinstance(occurred_at, datetime):
            occurred_at = _rfc3339(occurred_at)
        if occurred_at is not None:
            extra["occurred_at"] = occurred_at
        with self._lock:
            seq = self.next_seq
            obj: dict[str, Any] = {"schema_version": 1, "type": kind, "event_id": event_id,
                                   "context_id": self.context_id}
            if seq is not None:
                obj["seq"] = seq
            obj.update(rule)
            obj.update(extra)
            if event_id is None:
                obj["event_id"] = self._event_id(kind, seq, rule)
            value = _dumps(obj)
            decode_event(value, limits=self.limits)  # raises InvalidEvent: the dead-letter reason
            if seq is not None:
                self.next_seq = seq + 1
        return Emitted(self.context_id, obj["event_id"], seq, kind, topic, self.context_id.encode("utf-8"), value)

    def _event_id(self, kind: str, seq: int | None, rule: dict[str, Any]) -> str:
        """``<seq>-<16 hex>``: sha256 of context, seq, kind and the rule fields' JSON."""
        h = hashlib.sha256(self.context_id.encode("utf-8", "surrogatepass"))
        h.update(f"\x00{seq}\x00{kind}\x00".encode())
        try:
            h.update(pydantic_core.to_json(rule))
        except pydantic_core.PydanticSerializationError:  # validation will refuse it anyway
            h.update(repr(rule).encode("utf-8", "surrogatepass"))
        digest = h.hexdigest()[:16]
        return f"{seq}-{digest}" if seq is not None else digest
