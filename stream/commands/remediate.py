"""``python -m stream remediate`` — the reference remediation worker (:mod:`stream.remediation`)."""

from __future__ import annotations

import asyncio
import sys

from stream.commands._base import command, fail
from stream.errors import ConfigurationError
from stream.settings import get_settings

settings = get_settings()


@command()
def remediate() -> int:
    """Turn alerts into remediation requests until Ctrl-C / SIGTERM.

    Consumer group CG_REMEDIATION_GROUP on CG_ALERTS_TOPIC. An open alert asks for
    requests (escalate: one refetch per orphaned referent; reject_subtree: one
    recompact with the missing constraints and the subtree; freeze: one freeze); a
    resolved alert cancels its case's pending requests; a redelivered alert does
    nothing. Each request goes to every handler of CG_REMEDIATION_HANDLERS (default:
    publish to CG_REMEDIATION_TOPIC). Each batch is one Kafka transaction (requests,
    state in <group>-state, offsets): read the requests with read_committed.

    Exit 0 on Ctrl-C / SIGTERM, 1 when a handler fails (the batch is rolled back and
    retried on restart), a topic is missing, or Kafka is unreachable.
    """
    from stream.remediation import HandlerFailed, run_worker

    try:
        stats = asyncio.run(run_worker(settings))
    except (ConfigurationError, HandlerFailed) as exc:
        fail(str(exc), code=1)
    except KeyboardInterrupt:  # a second Ctrl-C during shutdown
        return 130
    except Exception as exc:  # noqa: BLE001 - connection refused, fenced, auth: one line
        from stream.kafka_clients import kafka_error

        fail(kafka_error(settings, exc, "remediate stopped: Kafka failed"), code=1)
    print(stats.summary(), file=sys.stderr)
    return 0
