"""``python -m stream tail`` — watch alerts live, one line each.

A group-less consumer (manual assignment of every partition of the alerts topic, no
offset commits): watching never moves any consumer group, and any number of people can
tail at once. Starts at the end of every partition (only new alerts) unless
``--from-beginning``. Partitions are printed as their records arrive, so the order
across contexts is arrival order; within one context it is the alert order.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from datetime import UTC, datetime
from typing import Any

import click

from stream.commands._base import command, fail, option
from stream.domain.engine import RULES as ENGINE_RULES
from stream.errors import ConfigurationError
from stream.settings import get_settings

settings = get_settings()

RULES = tuple(ENGINE_RULES)  # every rule the engine emits (DESIGN.md §4)
_STATUS_STYLE = {"open": "bold red", "resolved": "bold green"}


def alert_set(alert: dict[str, Any]) -> str:
    """The alert's set, readable: ``{a, b}``, ``{}`` when resolved, the seq gap, or the
    non_idempotent change ``{after} (was {before})``."""
    rule = alert.get("rule")
    if rule == "sequence_gap" and alert.get("gap"):
        first, last = alert["gap"]
        return f"seq {first}..{last} missing"
    items = alert.get("missing_constraints") if rule == "negative_constraint_dropped" else alert.get("orphans")
    text = "{" + ", ".join(items or ()) + "}"
    if rule == "non_idempotent":
        text += " (was {" + ", ".join(alert.get("previous_orphans") or ()) + "})"
    return text


def alert_line(alert: dict[str, Any], timestamp_ms: int | None):
    """One readable rich line: time, status, rule, context/node, set, trigger."""
    from rich.text import Text

    when = (
        datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        if timestamp_ms is not None else "-"
    )
    status = str(alert.get("status"))
    trig = alert.get("trigger") or {}
    where = (f"{trig.get('topic')}[{trig.get('partition')}]@{trig.get('offset')}"
             if trig.get("topic") is not None else "(offline)")
    # Text.assemble, not markup: ids may contain "[" and must print verbatim.
    return Text.assemble(
        (when, "dim"), "  ",
        (f"{status.upper():<8}", _STATUS_STYLE.get(status, "bold")), " ",
        (f"{alert.get('rule')!s:<27}", "cyan"), " ",
        (f"{alert.get('context_id')} / {alert.get('node_id') or '-'}", "bold"), "  ",
        alert_set(alert), "  ",
        (f"trigger {trig.get('event_id')} {where}", "dim"),
    )


async def follow(*, rule: str | None, context: str | None, as_json: bool, from_beginning: bool,
                 max_alerts: int | None, stop: asyncio.Event) -> int:
    """Print matching alerts until ``stop`` or ``max_alerts``; return how many were printed."""
    from aiokafka import TopicPartition
    from rich.console import Console

    from stream.kafka_clients import consumer, missing_topics, partitions_for, start_client

    topic = settings.alerts_topic
    con = Console(highlight=False, soft_wrap=True)
    c = consumer(settings, group_id=None, enable_auto_commit=False, auto_offset_reset="latest")
    await start_client(settings, c)
    printed = 0
    try:
        parts = await partitions_for(settings, c, topic)
        if not parts:
            raise missing_topics([topic])
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        c.assign(tps)
        if from_beginning:
            await c.seek_to_beginning(*tps)
        else:
            await c.seek_to_end(*tps)
        for tp in tps:  # resolve the start positions now, so "following" is true when printed
            await c.position(tp)
        print(f"tail: following {topic} ({len(tps)} partitions) from the "
              f"{'beginning' if from_beginning else 'end'}; Ctrl-C to stop", file=sys.stderr, flush=True)
        while not stop.is_set() and (max_alerts is None or printed < max_alerts):
            batch = await c.getmany(timeout_ms=500)
            for tp in sorted(batch, key=lambda t: t.partition):
                for m in batch[tp]:
                    try:
                        alert = json.loads(m.value)
                        if not isinstance(alert, dict):
                            raise ValueError("not an object")
                    except (TypeError, ValueError):
                        print(f"tail: unreadable record at {m.topic}[{m.partition}]@{m.offset}", file=sys.stderr)
                        continue
                    if rule is not None and alert.get("rule") != rule:
                        continue
                    if context is not None and alert.get("context_id") != context:
                        continue
                    if as_json:
                        sys.stdout.write(m.value.decode("utf-8") + "\n")
                        sys.stdout.flush()
                    else:
                        con.print(alert_line(alert, m.timestamp))
                    printed += 1
                    if max_alerts is not None and printed >= max_alerts:
                        return printed
    finally:
        await c.stop()
    return printed


async def _main(**kw: Any) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return await follow(stop=stop, **kw)


@command(
    option("--rule", type=click.Choice(RULES), default=None, help="Only alerts of this rule."),
    option("--context", type=str, default=None, help="Only alerts of this context_id."),
    option("--json", "as_json", is_flag=True, default=False, help="Print each alert's raw JSON (one per line)."),
    option("--from-beginning", is_flag=True, default=False, help="Start at the oldest alert, not at the end."),
    option("--max", "max_alerts", type=click.IntRange(min=1), default=None, help="Stop after N alerts."),
)
def tail(rule: str | None, context: str | None, as_json: bool, from_beginning: bool,
         max_alerts: int | None) -> int:
    """Follow the alerts topic and print each alert as it arrives.

    One readable line per alert (time, status, rule, context / node, the rule's set,
    the trigger's topic[partition]@offset) or the raw JSON with --json. Starts at the
    end (new alerts only) unless --from-beginning; no consumer group, no commits.
    Ctrl-C stops it (exit 0).
    """
    try:
        asyncio.run(_main(rule=rule, context=context, as_json=as_json, from_beginning=from_beginning,
                          max_alerts=max_alerts))
    except ConfigurationError as exc:
        fail(str(exc), code=1)
    except KeyboardInterrupt:
        return 0
    except BrokenPipeError:  # `tail | head`: the command wrapper turns this into a quiet exit 0
        raise
    except Exception as exc:  # noqa: BLE001 - connection/auth errors: one line
        from stream.kafka_clients import kafka_error

        fail(kafka_error(settings, exc, "cannot read from Kafka"), code=1)
    return 0
