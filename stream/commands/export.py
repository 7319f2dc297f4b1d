"""``python -m stream export`` — dump the input topics to JSONL, to archive a case."""

from __future__ import annotations

import sys
from typing import Any

from stream.commands._base import check_output_file, command, option
from stream.commands._forensics import each
from stream.settings import get_settings

settings = get_settings()


def jsonl_line(value: bytes | None) -> bytes | None:
    """``value`` as one JSONL line (newline added), or None when it cannot be one: empty,
    holding a newline, or not UTF-8."""
    if not value or b"\n" in value:
        return None
    try:
        value.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return value + b"\n"


@command(
    option("--out", "-o", type=str, default=None, help="Write here instead of stdout."),
    option("--since", type=str, default=None, help="Start at records stamped at/after TIME (RFC 3339)."),
    option("--until", type=str, default=None, help="Stop at records stamped at/after TIME."),
    option("--context", type=str, default=None, help="Only this context_id."),
)
def export(out: str | None, since: str | None, until: str | None, context: str | None) -> int:
    """Dump the input topics to JSONL so a case can be replayed offline anywhere.

    One message value per line, both input topics merged in the order the worker and
    replay --from-kafka apply them (DESIGN.md §4: Kafka timestamp, then compaction-events
    before artifact-events, then offset), written as they are read (memory does not grow
    with the topics). Feed the file to `python -m stream replay FILE`. Values that are not
    single-line UTF-8 (they could not be one JSONL line; the worker dead-lettered them) are
    skipped and counted.
    """
    if out:
        check_output_file(out)
    sink = open(out, "wb") if out else sys.stdout.buffer
    counts = {"written": 0, "skipped": 0}

    def write(rec: Any) -> None:
        line = jsonl_line(rec.value)
        if line is None:
            counts["skipped"] += 1
            return
        sink.write(line)
        counts["written"] += 1

    try:
        each(settings.input_topics, write, since=since, until=until, context=context)
    finally:
        sink.flush()
        if out:
            sink.close()
    print(f"export: {counts['written']} events written, {counts['skipped']} skipped", file=sys.stderr)
    if context and not counts["written"] and not counts["skipped"]:
        print(f"checkpoint-guard: export: warning: no events of context {context} in {', '.join(settings.input_topics)}"
              " (check the context_id: `checkpoint-guard tail` shows the ones alerting)", file=sys.stderr)
    return 0
