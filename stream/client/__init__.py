"""The pipeline client: emit compaction metadata, and ask before recovering.

Importable without faust (aiokafka + pydantic only; a unit test enforces it)::

    Guard / AsyncGuard           one producer (acks=all, idempotent), one handle per context
      .context(id, since=0)      GuardContext: seq + deterministic event ids, validated calls
        .admitted / .evicted     artifact-events
        .checkpoint              compaction-events
        .flush()                 wait for the broker's acks (FlushFailed: kept, re-sent next time)
    ConstraintChannel            prohibitions kept outside the summarized text
    collect_referents            what a summary depends on but elides
    StatusView / AsyncStatusView the checkpoint-status table, followed
      .is_authoritative / .why   microsecond lookups
      .wait_for(emitted)         read-your-writes: the worker has processed it
      .recover_from(ctx, node)   -> NodeStatus, or NotAuthoritative naming what is lost

Errors (all :class:`~stream.errors.GuardError`): :class:`~stream.errors.InvalidEvent` — a
call the worker would dead-letter, with the dead-letter reason; :class:`FlushFailed` —
events not acknowledged (kept); :class:`NotAuthoritative` — recovering would trust lost
content; ``TimeoutError`` from ``wait_for`` names the worker group and offsets.
The LangChain/LangGraph integration is :mod:`stream.client.langgraph` (extra
``checkpoint-guard[langgraph]``). Manual: README "Emit events from your own pipeline".
"""

from stream.client.constraints import ConstraintChannel, SummaryInput, collect_referents
from stream.client.guard import AsyncGuard, AsyncGuardContext, FlushFailed, Guard, GuardContext
from stream.client.records import Emitted, EventBuilder
from stream.client.status import AsyncStatusView, NodeStatus, NotAuthoritative, StatusView, parse_status
from stream.client.transport import KafkaTransport, MemoryTransport
from stream.errors import InvalidEvent

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
    "InvalidEvent",
    "KafkaTransport",
    "MemoryTransport",
    "NodeStatus",
    "NotAuthoritative",
    "StatusView",
    "SummaryInput",
    "collect_referents",
    "parse_status",
]
