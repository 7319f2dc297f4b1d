"""The reference remediation service: alerts in, remediation requests out (``checkpoint-guard remediate``).

A second service beside the worker (DESIGN.md §1: remediation workers read the alert topic).
:mod:`.decide` is the pure decision, :mod:`.handlers` what is done with each request,
:mod:`.service` the exactly-once Kafka shell. Importing this package imports no Kafka client.
What it does, why it is exactly-once, how to write a handler: docs/REMEDIATION.md.
"""

from stream.remediation.decide import (
    EMPTY,
    KIND_OF_ACTION,
    KIND_OF_RULE,
    SCHEMA_VERSION,
    ContextState,
    decide,
    is_actionable,
    kind_of,
    plan,
    request_id,
)
from stream.remediation.handlers import (
    HandlerContext,
    HandlerFailed,
    RemediationHandler,
    TopicPublisher,
    load_handlers,
)
from stream.remediation.service import (
    RemediationWorker,
    Stats,
    encode_state,
    load_states,
    run_worker,
    state_topic,
    transactional_id,
)

__all__ = [
    "EMPTY",
    "KIND_OF_ACTION",
    "KIND_OF_RULE",
    "SCHEMA_VERSION",
    "ContextState",
    "HandlerContext",
    "HandlerFailed",
    "RemediationHandler",
    "RemediationWorker",
    "Stats",
    "TopicPublisher",
    "decide",
    "encode_state",
    "is_actionable",
    "kind_of",
    "load_handlers",
    "load_states",
    "plan",
    "request_id",
    "run_worker",
    "state_topic",
    "transactional_id",
]
