"""``python -m stream replay PATH...`` — offline replay of JSONL input events.

Writes only alerts (one JSON object per line) to stdout or ``--out``; bad lines go to
stderr as ``path:line: reason`` and are skipped; a one-line summary ends on stderr.
Exit code 0 even when there were dead letters or alerts (they are output, not failure);
2 when an input file cannot be read.
"""

from __future__ import annotations

import sys
from pathlib import Path

from faust.cli import argument, option

from stream.app import app, settings
from stream.commands._base import SyncCommand, fail
from stream.replay import Replayer, iter_lines
from stream.wire import encode_alert


@app.command(
    argument("paths", nargs=-1, type=str),
    option("--out", "-o", type=str, default=None, help="Write alerts here instead of stdout."),
    option(
        "--seq-gap-limit", type=int, default=None,
        help=f"Waiting events per context before a sequence_gap (default {settings.seq_gap_limit}, CG_SEQ_GAP_LIMIT).",
    ),
    option("--since", is_flag=True, default=False,
           help="Start each context's expected seq at the first event read (partial input)."),
    base=SyncCommand,
)
def replay(self, paths: tuple[str, ...], out: str | None, seq_gap_limit: int | None, since: bool) -> int:
    """Replay JSONL input events offline through the engine and print the alerts.

    PATH... are JSONL files of input events (both kinds, DESIGN.md §3), read one after
    another in the order given; '-' reads stdin. No broker is needed.
    """
    if not paths:
        fail("replay needs at least one PATH (a JSONL file of input events, or - for stdin)")
    limit = settings.seq_gap_limit if seq_gap_limit is None else seq_gap_limit
    if limit < 0:
        fail("--seq-gap-limit must be >= 0")
    rp = Replayer(seq_gap_limit=limit, since=since, max_bytes=settings.max_message_bytes)
    sink = open(out, "wb") if out else sys.stdout.buffer
    try:
        return _run(rp, paths, sink)
    except BrokenPipeError:  # `replay ... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if out:
            sink.close()


def _run(rp: Replayer, paths: tuple[str, ...], sink) -> int:
    try:
        for path in paths:
            try:
                fh = sys.stdin.buffer if path == "-" else open(path, "rb")
            except OSError as exc:
                fail(f"cannot read {path}: {exc.strerror}")
            with fh if path != "-" else _nullcontext(fh):
                n_dead = len(rp.result.dead_letters)
                for lineno, line in enumerate(iter_lines(fh), 1):
                    alerts = rp.feed(line, lineno)
                    if len(rp.result.dead_letters) != n_dead:
                        n_dead = len(rp.result.dead_letters)
                        print(f"{path}:{lineno}: {rp.result.dead_letters[-1][1]}", file=sys.stderr)
                    for alert in alerts or ():
                        sink.write(encode_alert(alert) + b"\n")
        result = rp.finish()
    finally:
        sink.flush()
    print(result.summary(), file=sys.stderr)
    return 0


class _nullcontext:
    def __init__(self, obj):
        self.obj = obj

    def __enter__(self):
        return self.obj

    def __exit__(self, *exc):
        return False
