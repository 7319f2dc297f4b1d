"""``python -m stream topics create|describe`` — the topics faust does not create.

faust creates only its internal topics (table changelogs). The 7 topics of
:func:`stream.kafka_clients.project_topics` (inputs, alerts, verdicts, status, dead
letters, remediation requests) are created here with ``CG_PARTITIONS`` partitions (DESIGN.md
§7.3); ``checkpoint-status`` is compacted (one record per node). Creating is idempotent,
and an existing topic with another partition count is an error (exit 1), never
silently accepted.
"""

from __future__ import annotations

import asyncio

import click

from stream.commands._base import argument, command, fail
from stream.settings import get_settings
from stream.errors import ConfigurationError
from stream.kafka_clients import (
    create_project_topics,
    kafka_error,
    project_topics,
    topic_partitions,
    wait_until_described,
)

settings = get_settings()


@command(argument("action", type=click.Choice(["create", "describe"])))
def topics(action: str) -> int:
    """Create (idempotent) or describe the input/output topics.

    create: every topic with CG_PARTITIONS partitions; existing ones are reported, and
    one with a different partition count is an error. describe: partition counts.
    """
    try:
        plain, compacted_topics = project_topics(settings)
        if action == "create":
            result = asyncio.run(_create())
            for name in (*plain, *compacted_topics):
                compacted = ", compacted" if name in compacted_topics else ""
                print(f"{name}: {result[name]} ({settings.partitions} partitions{compacted})")
        else:
            counts = asyncio.run(topic_partitions(settings, (*plain, *compacted_topics)))
            for name in (*plain, *compacted_topics):
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
    await wait_until_described(settings, list(result))
    return result
