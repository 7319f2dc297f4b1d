"""Log output: readable text (default) or one JSON object per line (``CG_LOG_FORMAT=json``).

A JSON line has ``time`` (RFC 3339, UTC), ``level``, ``logger``, ``message``, and the
context fields a log call passes with ``extra=`` (:data:`CONTEXT_FIELDS`: ``topic``,
``partition``, ``offset``, ``context_id``, ...), plus ``exc_info`` for a traceback — all
in one line, so a log shipper needs no multi-line rules. faust's multi-line partition
tables become their first line, other multi-line messages are joined into one, and its ASCII
banner is not printed (the worker command runs faust quietly in JSON mode). The formatter is
:pypi:`python-json-logger`'s.

The worker's logging is set up by faust (``-l LEVEL``); :class:`stream.worker.GuardWorker`
swaps in the JSON formatter. Every other command calls :func:`setup_cli_logging`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from pythonjsonlogger.json import JsonFormatter

#: Fields our log calls pass with ``extra=`` (a shipper can index them).
CONTEXT_FIELDS = ("topic", "partition", "offset", "context_id", "node_id", "event_id")

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class JsonLineFormatter(JsonFormatter):
    """``{"time", "level", "logger", "message", <extra fields>}`` on one line."""

    def __init__(self) -> None:
        super().__init__(
            "%(asctime)s %(levelname)s %(name)s %(message)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"},
            json_ensure_ascii=False,
        )

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging API
        return datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds")

    def process_log_record(self, log_record: dict[str, Any]) -> dict[str, Any]:
        log_record["level"] = str(log_record.get("level", "")).lower()
        message = _ANSI.sub("", str(log_record.get("message", "")))
        if "\n" in message:
            if str(log_record.get("logger", "")).startswith(("faust", "mode")):
                message = message.split("\n", 1)[0].rstrip()  # a partition table: keep its title
            else:  # one line for log viewers too (a traceback goes to exc_info)
                message = " ".join(part.strip() for part in message.splitlines() if part.strip())
        log_record["message"] = message
        return log_record


class TextFormatter(logging.Formatter):
    """``checkpoint-guard: <logger>: <level>: message`` for the one-shot commands."""

    def __init__(self) -> None:
        super().__init__("checkpoint-guard: %(name)s: %(levelname)s: %(message)s")


def formatter(log_format: str) -> logging.Formatter:
    return JsonLineFormatter() if log_format == "json" else TextFormatter()


def use_json(root: logging.Logger | None = None) -> None:
    """Give every handler of ``root`` (the worker's, set up by faust) the JSON formatter."""
    for handler in (root or logging.getLogger()).handlers:
        handler.setFormatter(JsonLineFormatter())


class KafkaErrors(logging.Handler):
    """Keeps aiokafka's last error instead of printing it: the command's one error line
    quotes it (:func:`stream.kafka_clients.kafka_error`), e.g. a refused SASL login."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.last: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        self.last = " ".join(record.getMessage().split())


#: aiokafka's errors during a one-shot command (see :func:`setup_cli_logging`).
KAFKA_ERRORS = KafkaErrors()


def setup_cli_logging(*, level: int = logging.WARNING) -> None:
    """Logging of a command other than the worker: our warnings and errors on stderr.

    aiokafka's own lines are never printed but its errors are kept (:data:`KAFKA_ERRORS`):
    the command's one ``checkpoint-guard: error:`` line says what failed, in our words
    (:func:`stream.kafka_clients.kafka_error` reads the last one to tell a refused login
    from a closed port). Its warnings ("Sending username and password in the clear", a
    retry) would be a library's raw line before ours (docs/OPERATIONS.md §12).
    """
    from stream.settings import get_settings

    root = logging.getLogger()
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(get_settings().log_format))
    root.handlers[:] = [handler]
    root.setLevel(level)
    aiokafka = logging.getLogger("aiokafka")
    aiokafka.handlers[:] = [KAFKA_ERRORS]
    aiokafka.propagate = False


@contextlib.contextmanager
def kafka_errors_noted() -> Iterator[None]:
    """aiokafka's errors also kept in :data:`KAFKA_ERRORS` for a while, the logging set up by
    the application left as it is: the pipeline client's start (:func:`stream.kafka_clients.client_errors`).
    An application that configured no logging then gets our one line instead of aiokafka's
    raw ones (Python's last-resort handler prints only records that no handler took)."""
    aiokafka = logging.getLogger("aiokafka")
    added = KAFKA_ERRORS not in aiokafka.handlers
    KAFKA_ERRORS.last = None
    if added:
        aiokafka.addHandler(KAFKA_ERRORS)
    try:
        yield
    finally:
        if added:
            aiokafka.removeHandler(KAFKA_ERRORS)


@contextlib.contextmanager
def kafka_errors_kept() -> Iterator[None]:
    """aiokafka's errors kept in :data:`KAFKA_ERRORS` instead of logged, for a while
    (the worker's start-up check: its one error line says what failed)."""
    aiokafka = logging.getLogger("aiokafka")
    saved = aiokafka.handlers[:], aiokafka.propagate, aiokafka.level
    aiokafka.handlers[:] = [KAFKA_ERRORS]
    aiokafka.propagate = False
    aiokafka.setLevel(logging.ERROR)
    try:
        yield
    finally:
        aiokafka.handlers[:], aiokafka.propagate = saved[0], saved[1]
        aiokafka.setLevel(saved[2])
