"""``python -m stream topics create|describe`` — the topics faust does not create.

faust creates only its internal topics (table changelogs). The 7 topics of
:attr:`Settings.external_topics` (inputs, alerts, verdicts, status, dead letters,
remediation requests) are created here with ``CG_PARTITIONS`` partitions (DESIGN.md
§7.3); ``checkpoint-status`` is compacted (one record per node). Creating is idempotent,
and an existing topic with another partition count is an error (exit 1), never
silently accepted.
"""

from __future__ import annotations

import asyncio

import click

from stream.settings import get_settings
from stream.commands._base import argument, command, fail
from stream.errors import ConfigurationError
from stream.kafka_clients import create_topics, kafka_error, topic_partitions

settings = get_settings()


@command(argument("action", type=click.Choice(["create", "describe"])))
def topics(action: str) -> int:
    """Create (idempotent) or describe the input/output topics.

    create: every topic with CG_PARTITIONS partitions; existing ones are reported, and
    one with a different partition count is an error. describe: partition counts.
    """
    try:
        if action == "create":
            result = asyncio.run(_create())
            for name in settings.external_topics:
                print(f"{name}: {result[name]} ({settings.partitions} partitions)")
        else:
            counts = asyncio.run(topic_partitions(settings, settings.external_topics))
            for name in settings.external_topics:
                n = counts.get(name)
                print(f"{name}: {'missing' if n is None else f'{n} partitions'}")
    except ConfigurationError as exc:
        fail(str(exc), code=1)
    except Exception as exc:  # connection refused, auth failure, ...
        fail(kafka_error(settings, exc), code=1)
    return 0


async def _create() -> dict[str, str]:
    """Create every external topic; the status topic compacted (a table of node statuses)."""
    plain = [t for t in settings.external_topics if t != settings.status_topic]
    result = await create_topics(settings, plain, settings.partitions)
    result.update(await create_topics(settings, [settings.status_topic], settings.partitions, compacted=True))
    return result
