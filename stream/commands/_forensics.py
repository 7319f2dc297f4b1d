"""Shared shell of the forensics commands (replay --from-kafka, export, explain)."""

from __future__ import annotations

import asyncio
import json
import sys
from contextlib import nullcontext
from typing import Any

from stream.commands._base import fail
from stream.settings import get_settings
from stream.errors import ConfigurationError
from stream.wire import encode
from stream.forensics import Record, parse_time, read_topics, replay_records, verify, verify_statuses
from stream.kafka_clients import kafka_error

settings = get_settings()


def _progress():
    """A rich progress callback on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import Progress

    return Progress(console=Console(stderr=True), transient=True)


def read(topics, *, since: str | None = None, until: str | None = None, context: str | None = None) -> tuple[list[Record], Any]:
    """Read topics with a progress bar; one-line errors for bad times or an unreachable broker."""
    try:
        since_ms = parse_time(since) if since else None
        until_ms = parse_time(until) if until else None
    except ConfigurationError as exc:
        fail(str(exc))
    key = context.encode("utf-8") if context is not None else None
    with _progress() as bar:
        task = bar.add_task("reading " + ", ".join(topics), total=None) if bar else None

        def progress(done: int, total: int) -> None:
            if bar:
                bar.update(task, completed=done, total=total)

        try:
            return asyncio.run(read_topics(settings, topics, since_ms=since_ms, until_ms=until_ms, key=key, progress=progress))
        except ConfigurationError as exc:
            fail(str(exc), code=1)
        except Exception as exc:  # noqa: BLE001 - connection/auth errors: one line
            fail(kafka_error(settings, exc, "cannot read from Kafka"), code=1)


def replay_from_kafka(*, since: str | None, until: str | None, context: str | None, verify: bool,
                      out: str | None, seq_gap_limit: int, status: bool = False, strict: bool = False) -> int:
    """Replay the input topics; alerts (and with ``status`` node statuses) to ``out`` or
    stdout — with ``verify`` only to ``out``, so stdout is not flooded.

    Exit code: 1 when ``verify`` found a difference, or ``strict`` and a record was
    dead-lettered; else 0.
    """
    records, rng = read(settings.input_topics, since=since, until=until, context=context)
    result = replay_records(records, seq_gap_limit=seq_gap_limit, since=since is not None,
                            max_bytes=settings.max_message_bytes, max_output_bytes=settings.max_output_bytes,
                            max_ledger=settings.max_ledger)
    if out or not verify:  # --verify prints the differences, not every alert, unless --out asks
        sink = open(out, "wb") if out else sys.stdout.buffer
        try:
            for record in result.records if status else result.alerts:
                sink.write(encode(record) + b"\n")
        finally:
            sink.flush()
            if out:
                sink.close()
    print(f"replay --from-kafka: {len(records)} records, {result.events} events, "
          f"{len(result.dead_letters)} dead letters, {len(result.alerts)} alerts, "
          f"{len(result.statuses)} status records", file=sys.stderr)
    failed = strict and bool(result.dead_letters)
    if not verify:
        return 1 if failed else 0
    published, _ = read((settings.alerts_topic,), context=context)
    report = verify_alerts(result.alerts, published, rng)
    status_records, _ = read((settings.status_topic,), context=None)
    status_report = verify_status_records(result.statuses, status_records, rng, context)
    return 0 if report.ok and status_report.ok and not failed else 1


def verify_status_records(replayed, published_records: list[Record], rng, context: str | None):
    """Final node statuses: replay vs the compacted status topic (one line per difference)."""
    published = []
    for rec in published_records:
        try:
            value = json.loads(rec.value)
        except (TypeError, ValueError):
            print(f"verify: unreadable record {rec.topic}[{rec.partition}]@{rec.offset}", file=sys.stderr)
            continue
        if context is None or value.get("context_id") == context:
            published.append(value)
    report = verify_statuses(replayed, published, rng)
    for s in report.missing:
        print(f"missing  status {s['context_id']}/{s['node_id']}", file=sys.stderr)
    for s in report.extra:
        print(f"extra    status {s.get('context_id')}/{s.get('node_id')}", file=sys.stderr)
    for mine, theirs in report.different:
        print(f"differs  status {mine['context_id']}/{mine['node_id']}: replay authoritative="
              f"{mine['authoritative']} {mine['open_rules']}, topic authoritative={theirs.get('authoritative')} "
              f"{theirs.get('open_rules')}", file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    return report


def verify_alerts(replayed, published_records: list[Record], rng):
    published = []
    for rec in published_records:
        try:
            published.append(json.loads(rec.value))
        except (TypeError, ValueError):
            print(f"verify: unreadable record {rec.topic}[{rec.partition}]@{rec.offset}", file=sys.stderr)
    report = verify(replayed, published, rng)
    for a in report.missing:
        print(f"missing  {_describe(a)}", file=sys.stderr)
    for a in report.extra:
        print(f"extra    {_describe(a)}", file=sys.stderr)
    for mine, theirs in report.different:
        print(f"differs  {_describe(mine)}", file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    return report


def _describe(a: dict) -> str:
    t = a.get("trigger") or {}
    return (f"{a.get('alert_id')} {a.get('rule')} {a.get('status')} {a.get('context_id')}/{a.get('node_id')} "
            f"trigger {t.get('event_id')} @ {t.get('topic')}[{t.get('partition')}]:{t.get('offset')}")
