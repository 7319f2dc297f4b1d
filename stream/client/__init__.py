"""The pipeline client: emit compaction metadata, and ask before recovering.

Importable without faust (aiokafka + pydantic only; a unit test enforces it). ``Guard`` /
``AsyncGuard`` emit a context's events, ``ConstraintChannel`` keeps prohibitions outside
the summarized text, ``collect_referents`` names what a summary elides, ``StatusView`` /
``AsyncStatusView`` answer "may I recover from this checkpoint?". Every error is a
:class:`~stream.errors.GuardError`. The API at a glance: docs/CLIENT.md; manual: README
"Emit events from your own pipeline"; LangGraph: :mod:`stream.client.langgraph`.
"""

from stream.client.constraints import ConstraintChannel, SummaryInput, collect_referents
from stream.client.guard import AsyncGuard, AsyncGuardContext, FlushFailed, Guard, GuardContext
from stream.client.records import Emitted, EventBuilder
from stream.client.status import AsyncStatusView, NodeStatus, NotAuthoritative, StatusView, parse_status
from stream.client.transport import KafkaTransport, MemoryTransport
from stream.errors import GuardError, InvalidEvent, KafkaUnavailable

__all__ = [
    "AsyncGuard",
    "AsyncGuardContext",
    "AsyncStatusView",
    "ConstraintChannel",
    "Emitted",
    "EventBuilder",
    "FlushFailed",
    "Guard",
    "GuardContext",
    "GuardError",
    "InvalidEvent",
    "KafkaUnavailable",
    "KafkaTransport",
    "MemoryTransport",
    "NodeStatus",
    "NotAuthoritative",
    "StatusView",
    "SummaryInput",
    "collect_referents",
    "parse_status",
]
