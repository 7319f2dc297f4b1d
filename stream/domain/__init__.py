"""The pure decision engine (functional core).

Imports only the Python standard library — no faust, aiokafka, mode, asyncio or
pydantic (``tests/unit/test_purity.py`` walks the imports). Violations are values
(frozen :class:`~stream.domain.outputs.Alert`, ``NodeStatus`` and ``Verdict``) returned
by :meth:`stream.domain.engine.Engine.process`, not exceptions.
"""

from stream.domain.engine import Engine, Output
from stream.domain.events import (
    OFFLINE,
    ArtifactEvent,
    CheckpointEvent,
    Event,
    Source,
    event_from_record,
)
from stream.domain.keys import constraint_key
from stream.domain.outputs import Alert, NodeDetail, NodeStatus, Trigger, Verdict
from stream.domain.state import DictState, State

__all__ = [
    "OFFLINE",
    "Alert",
    "ArtifactEvent",
    "CheckpointEvent",
    "DictState",
    "Engine",
    "Event",
    "NodeDetail",
    "NodeStatus",
    "Output",
    "Source",
    "State",
    "Trigger",
    "Verdict",
    "constraint_key",
    "event_from_record",
]
