"""The batch handler's pure core: one partition's messages -> engine -> outputs.

:func:`plan` does no I/O: it decodes each message (a bad one becomes a dead letter with
its reason), runs the engine over the partition's state, turns what the engine produced
into :class:`~stream.worker.outputs.OutputRecord` values and reports to the partition
what its state now covers. The agent sends the outputs and the durability object commits; the same
function serves the worker and the tests.

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
from typing import Any

from stream.domain.engine import Engine, Output
from stream.domain.events import Event, Source
from stream.errors import InvalidEvent
from stream.wire import Limits, decode_message
from stream.worker.durability import Partition
from stream.worker.outputs import OutputRecord, Outputs

log = logging.getLogger("checkpoint_guard.agent")


@dataclass
class Plan:
    """What one partition's batch produced: outputs in order; ``observed``: ``(message,
    event, Output)`` per event applied; ``dead``: ``(message, reason)``."""

    outputs: list[OutputRecord] = field(default_factory=list)
    observed: list[tuple[Any, Event, Output]] = field(default_factory=list)
    dead: list[tuple[Any, str]] = field(default_factory=list)


def plan(engine: Engine, part: Partition, messages: Sequence[Any], outputs: Outputs, limits: Limits) -> Plan:
    """Apply one partition's messages (in offset order, none already covered by its state)."""
    result = Plan()
    state = part.state
    for message in messages:
        part.advance(message)
        try:
            event = decode_message(message.key, message.value, limits=limits)
        except InvalidEvent as exc:
            log.info("dead letter %s[%s]@%s: %s", message.topic, message.partition, message.offset, exc,
                     extra={"topic": message.topic, "partition": message.partition, "offset": message.offset})
            result.dead.append((message, str(exc)))
            result.outputs.append(outputs.dead_letter(message, str(exc)))
            continue
        source = Source(message.topic, message.partition, message.offset)
        try:
            out = engine.process(state, event, source)
        except Exception:  # a bug, not bad input: roll back, replay, dead-letter, go on
            log.exception("unexpected error on %s[%s]@%s", message.topic, message.partition, message.offset,
                          extra={"topic": message.topic, "partition": message.partition, "offset": message.offset,
                                 "context_id": event.context_id})
            part.roll_back(lambda e, s: engine.process(state, e, s))
            reason = f"internal error: {sys.exc_info()[0].__name__}"
            result.dead.append((message, reason))
            result.outputs.append(outputs.dead_letter(message, reason))
            continue
        part.applied(event, source)
        result.observed.append((message, event, out))
        result.outputs.extend(outputs.of(message, event, out))
    return result
