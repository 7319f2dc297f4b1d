"""Shared shell of the forensics commands (replay --from-kafka, export, explain).

Every read streams (:class:`stream.offline.forensics.TopicReader`): records are handed on one
by one in the DESIGN.md §4 order, and ``--verify`` compares in a temporary sqlite file
(:class:`stream.offline.forensics.Verifier`), so memory does not grow with the topics.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from contextlib import aclosing, nullcontext
from typing import Any

from stream.commands._base import fail
from stream.domain.outputs import Alert
from stream.errors import ConfigurationError
from stream.kafka_clients import kafka_error
from stream.offline.forensics import KafkaReplayer, Record, TopicReader, Verifier, parse_time
from stream.settings import get_settings
from stream.wire import encode

settings = get_settings()


def _progress():
    """A rich progress callback on stderr when it is a terminal, else None."""
    if not sys.stderr.isatty():
        return nullcontext(None)
    from rich.console import Console
    from rich.progress import Progress

    return Progress(console=Console(stderr=True), transient=True)


class _Downstream(Exception):
    """An error of the record handler, not of the read: re-raised as itself."""


def each(topics, handle: Callable[[Record], None], *, since: str | None = None, until: str | None = None,
         context: str | None = None) -> TopicReader:
    """Read topics in the DESIGN.md §4 order with a progress bar, ``handle`` each record;
    one-line errors for bad times or an unreachable broker. Returns the reader (its
    ``range`` and ``read`` count)."""
    try:
        since_ms = parse_time(since) if since else None
        until_ms = parse_time(until) if until else None
    except ConfigurationError as exc:
        fail(str(exc))
    if since_ms is not None and until_ms is not None and until_ms <= since_ms:
        fail(f"--until {until} is not after --since {since}: the range holds no record; swap them")
    key = context.encode("utf-8") if context is not None else None
    with _progress() as bar:
        task = bar.add_task("reading " + ", ".join(topics), total=None) if bar else None

        def progress(done: int, total: int) -> None:
            if bar:
                bar.update(task, completed=done, total=total)

        reader = TopicReader(settings, topics, since_ms=since_ms, until_ms=until_ms, key=key, progress=progress)

        async def drive() -> None:
            async with aclosing(reader.records()) as records:
                async for rec in records:
                    try:
                        handle(rec)
                    except BaseException as exc:
                        raise _Downstream() from exc

        try:
            asyncio.run(drive())
        except _Downstream as exc:
            raise (exc.__cause__ or exc) from None
        except ConfigurationError as exc:
            fail(str(exc), code=1)
        except Exception as exc:  # noqa: BLE001 - connection/auth errors: one line
            fail(kafka_error(settings, exc, "cannot read from Kafka"), code=1)
    return reader


def read(
    topics, *, since: str | None = None, until: str | None = None, context: str | None = None
) -> tuple[list[Record], Any]:
    """:func:`each` into a list (for small reads)."""
    records: list[Record] = []
    reader = each(topics, records.append, since=since, until=until, context=context)
    return records, reader.range


def replay_from_kafka(*, since: str | None, until: str | None, context: str | None, verify: bool,
                      out: str | None, seq_gap_limit: int, status: bool = False, strict: bool = False) -> int:
    """Replay the input topics; alerts (and with ``status`` node statuses) to ``out`` or
    stdout — with ``verify`` only to ``out``, so stdout is not flooded.

    Exit code: 1 when ``verify`` found a difference, or ``strict`` and a record was
    dead-lettered; else 0.
    """
    rp = KafkaReplayer(seq_gap_limit=seq_gap_limit, since=since is not None, max_bytes=settings.max_message_bytes,
                       max_output_bytes=settings.max_output_bytes, max_ledger=settings.max_ledger)
    sink = (open(out, "wb") if out else sys.stdout.buffer) if out or not verify else None
    verifier = Verifier() if verify else None
    try:
        def replayed(rec: Record) -> None:
            for value in rp.feed(rec):
                if sink is not None and (status or isinstance(value, Alert)):
                    sink.write(encode(value) + b"\n")
                if verifier is not None:
                    verifier.replayed(value)

        try:
            reader = each(settings.input_topics, replayed, since=since, until=until, context=context)
        finally:
            if sink is not None:
                sink.flush()
                if out:
                    sink.close()
        print(f"replay --from-kafka: {reader.read} records, {rp.events} events, "
              f"{rp.dead_letters} dead letters, {rp.alerts} alerts, "
              f"{rp.statuses} status records", file=sys.stderr)
        failed = strict and bool(rp.dead_letters)
        if verifier is None:
            return 1 if failed else 0
        verifier.range = reader.range
        report = verify_alerts(verifier, context)
        status_report = verify_status_records(verifier, context)
        return 0 if report.ok and status_report.ok and not failed else 1
    finally:
        if verifier is not None:
            verifier.close()


def _values(what: Callable[[dict], None], context: str | None = None) -> Callable[[Record], None]:
    """A record handler that hands each readable JSON value (of ``context``) to ``what``."""
    def handle(rec: Record) -> None:
        try:
            value = json.loads(rec.value) if rec.value is not None else None
        except ValueError:
            value = None
        if not isinstance(value, dict):
            print(f"verify: unreadable record {rec.topic}[{rec.partition}]@{rec.offset}", file=sys.stderr)
            return
        if context is None or value.get("context_id") == context:
            what(value)
    return handle


def verify_status_records(verifier: Verifier, context: str | None):
    """Final node statuses: replay vs the compacted status topic (one line per difference)."""
    each((settings.status_topic,), _values(verifier.published_status, context), context=None)
    report = verifier.statuses()
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


def verify_alerts(verifier: Verifier, context: str | None):
    """Alerts: replay vs the alerts topic over the replayed range (one line per difference)."""
    each((settings.alerts_topic,), _values(verifier.published_alert), context=context)
    report = verifier.alerts()
    for a in report.missing:
        print(f"missing  {_describe(a)}", file=sys.stderr)
    for a in report.extra:
        print(f"extra    {_describe(a)}", file=sys.stderr)
    for mine, _theirs in report.different:
        print(f"differs  {_describe(mine)}", file=sys.stderr)
    print(report.summary(), file=sys.stderr)
    return report


def _describe(a: dict) -> str:
    t = a.get("trigger") or {}
    return (f"{a.get('alert_id')} {a.get('rule')} {a.get('status')} {a.get('context_id')}/{a.get('node_id')} "
            f"trigger {t.get('event_id')} @ {t.get('topic')}[{t.get('partition')}]:{t.get('offset')}")
