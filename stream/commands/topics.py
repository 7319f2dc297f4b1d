"""``python -m stream topics create|describe`` — the topics faust does not create.

The 7 topics of :func:`stream.kafka_clients.project_topics` (inputs, alerts, verdicts,
status, dead letters, remediation requests) and the worker's state log
``<CG_APP_ID>-state`` are created here with ``CG_PARTITIONS`` partitions (DESIGN.md
§7.3), and faust's leader topic ``<CG_APP_ID>-__assignor-__leader`` with one;
``checkpoint-status`` is compacted (one record per node), the state log keeps its
records until the worker's snapshots delete them. The worker creates its own two at
start if they are missing, unless ``CG_CREATE_TOPICS=false`` (then it needs no create
ACL, and these must exist). Creating is idempotent,
and an existing topic with another partition count is an error (exit 1), never
silently accepted.
"""

from __future__ import annotations

import asyncio

import click

from stream.commands._base import argument, command, fail
from stream.errors import ConfigurationError
from stream.kafka_clients import (
    create_project_topics,
    ensure_leader_topic,
    ensure_state_topic,
    kafka_error,
    leader_topic,
    project_topics,
    topic_partitions,
    wait_until_described,
)
from stream.settings import get_settings

settings = get_settings()


@command(argument("action", type=click.Choice(["create", "describe"])))
def topics(action: str) -> int:
    """Create (idempotent) or describe the input/output topics and the state log.

    create: every topic with CG_PARTITIONS partitions; existing ones are reported, and
    one with a different partition count is an error. describe: partition counts.
    """
    try:
        plain, compacted_topics = project_topics(settings)
        log_topic, leader = settings.state_topic, leader_topic(settings)
        if action == "create":
            result = asyncio.run(_create())
            for name in (*plain, *compacted_topics, log_topic, leader):
                kind = (f"{settings.partitions} partitions, compacted" if name in compacted_topics else
                        f"{settings.partitions} partitions, the worker's state log" if name == log_topic else
                        "1 partition, faust's leader election" if name == leader else
                        f"{settings.partitions} partitions")
                print(f"{name}: {result[name]} ({kind})")
        else:
            counts = asyncio.run(topic_partitions(settings, (*plain, *compacted_topics, log_topic, leader)))
            for name in (*plain, *compacted_topics, log_topic, leader):
                n = counts.get(name)
                print(f"{name}: {'missing' if n is None else f'{n} partitions'}")
    except ConfigurationError as exc:
        fail(str(exc), code=1)
    except Exception as exc:  # connection refused, auth failure, ...
        fail(kafka_error(settings, exc), code=1)
    return 0


async def _create() -> dict[str, str]:
    """Create the topics and return once the broker describes all of them."""
    result = await create_project_topics(settings)
    result.update(await ensure_state_topic(settings))
    result.update(await ensure_leader_topic(settings))
    await wait_until_described(settings, list(result))
    return result
