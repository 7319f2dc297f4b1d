"""CG_LOG_FORMAT=json: one JSON object per log line, with the context fields."""

from __future__ import annotations

import json
import logging

import pytest

from stream.logs import JsonLineFormatter

pytestmark = pytest.mark.unit


def record(name: str, msg: str, level: int = logging.INFO, exc_info=None, **extra) -> logging.LogRecord:
    rec = logging.LogRecord(name, level, __file__, 1, msg, (), exc_info)
    rec.__dict__.update(extra)
    return rec


def test_a_json_line_has_time_level_logger_message_and_the_context_fields() -> None:
    line = JsonLineFormatter().format(record("checkpoint_guard.agents", "dead letter", logging.WARNING,
                                             topic="artifact-events", partition=2, offset=4000, context_id="ctx"))
    assert "\n" not in line
    out = json.loads(line)
    assert out["level"] == "warning" and out["logger"] == "checkpoint_guard.agents" and out["message"] == "dead letter"
    assert (out["topic"], out["partition"], out["offset"], out["context_id"]) == ("artifact-events", 2, 4000, "ctx")
    assert out["time"].endswith("+00:00") and "T" in out["time"]


def test_fausts_multi_line_tables_keep_only_their_title_and_tracebacks_stay_on_one_line() -> None:
    table = "Highwater for active changelog partitions:\n┌Active─┐\n│ x │ 0 │\n└───────┘"
    out = json.loads(JsonLineFormatter().format(record("faust.tables.recovery", "\x1b[1m" + table)))
    assert out["message"] == "Highwater for active changelog partitions:"
    out = json.loads(JsonLineFormatter().format(record("asyncio", "Unclosed AIOKafkaConsumer\nconsumer: <c>")))
    assert out["message"] == "Unclosed AIOKafkaConsumer consumer: <c>"
    try:
        raise ValueError("boom")
    except ValueError:
        import sys

        line = JsonLineFormatter().format(record("checkpoint_guard.agents", "failed", logging.ERROR, sys.exc_info()))
    assert "\n" not in line and "ValueError: boom" in json.loads(line)["exc_info"]
