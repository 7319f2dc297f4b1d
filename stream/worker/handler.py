"""The batch handler's pure core: one partition's messages -> engine -> outputs.

:func:`plan` does no I/O: it decodes each message (a bad one becomes a dead letter with
its reason), runs the engine over the partition's state, turns what the engine produced
into :class:`~stream.worker.outputs.OutputRecord` values (an event the engine rejects
at apply time — ``ledger full`` — becomes a dead letter like a bad message) and reports
to the partition what its state now covers. The runtime sends the outputs and the
durability object commits; the same function serves the worker and the tests.

If the engine raises (a bug, not bad input), the partition's state is rolled back to its
last commit, the events applied since then are applied again (deterministic: the same
outputs, not sent twice) and the failing message is dead-lettered — so a bug never
leaves a context half-updated.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from stream.domain.engine import Output
from stream.domain.events import Event, Source
from stream.domain.outputs import Rejection
from stream.domain.state import State
from stream.errors import InvalidEvent
from stream.wire import Limits, decode_message, encode
from stream.worker.durability import Partition
from stream.worker.outputs import OutputRecord, Outputs

log = logging.getLogger("checkpoint_guard.agent")


class Processor(Protocol):
    """What :func:`plan` needs of the engine (:class:`stream.domain.engine.Engine`, or a
    test's wrapper around one: a compiled class cannot be subclassed)."""

    def process(self, state: State, event: Event, source: Source) -> Output: ...


@dataclass
class Plan:
    """What one partition's batch produced: outputs in order; ``observed``: ``(message,
    event, Output)`` per event applied; ``dead``: ``(message, reason)``."""

    outputs: list[OutputRecord] = field(default_factory=list)
    observed: list[tuple[Any, Event, Output]] = field(default_factory=list)
    dead: list[tuple[Any, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class RejectedMessage:
    """A drained event the engine rejected, as the message its dead letter names: the
    event's own source, and its value as applied (its normalized JSON: the original
    bytes were consumed when it arrived and waited)."""

    topic: str | None
    partition: int | None
    offset: int | None
    key: bytes
    value: bytes

    @classmethod
    def of(cls, rejected: Rejection) -> RejectedMessage:
        ev, src = rejected.event, rejected.source
        return cls(src.topic, src.partition, src.offset, ev.context_id.encode("utf-8"), encode(ev.to_record()))


def plan(engine: Processor, part: Partition, messages: Sequence[Any], outputs: Outputs, limits: Limits) -> Plan:
    """Apply one partition's messages (in offset order, none already covered by its state)."""
    result = Plan()
    state = cast(State, part.state)  # a PartitionState: a _View per table, the mapping methods the engine uses
    for message in messages:
        part.advance(message)
        try:
            event = decode_message(message.key, message.value, limits=limits)
        except InvalidEvent as exc:
            _dead(result, outputs, message, str(exc))
            continue
        source = Source(message.topic, message.partition, message.offset)
        try:
            out = engine.process(state, event, source)
        except Exception:  # a bug, not bad input: roll back, replay, dead-letter, go on
            log.exception("unexpected error on %s[%s]@%s", message.topic, message.partition, message.offset,
                          extra={"topic": message.topic, "partition": message.partition, "offset": message.offset,
                                 "context_id": event.context_id})
            part.roll_back(lambda e, s: engine.process(state, e, s))
            reason = f"internal error: {type(sys.exc_info()[1]).__name__}"
            result.dead.append((message, reason))
            result.outputs.append(outputs.dead_letter(message, reason))
            continue
        part.applied(event, source)
        result.observed.append((message, event, out))
        result.outputs.extend(outputs.of(message, event, out))
        for rejected in out.rejected:  # DESIGN.md §4 Ledger bound: a dead letter at apply time
            where = message if rejected.event is event else RejectedMessage.of(rejected)
            _dead(result, outputs, where, rejected.reason)
    return result


def _dead(result: Plan, outputs: Outputs, message: Any, reason: str) -> None:
    log.info("dead letter %s[%s]@%s: %s", message.topic, message.partition, message.offset, reason,
             extra={"topic": message.topic, "partition": message.partition, "offset": message.offset})
    result.dead.append((message, reason))
    result.outputs.append(outputs.dead_letter(message, reason))
