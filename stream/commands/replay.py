"""``python -m stream replay`` — replay input events through a fresh engine.

Two sources:

* ``replay PATH...`` — JSONL files (offline, no broker). Bad lines go to stderr as
  ``path:line: reason`` and are skipped.
* ``replay --from-kafka`` — the input topics themselves (forensics, :mod:`stream.offline.forensics`),
  read with a group-less consumer: no offset commits, the live worker is untouched.
  ``--verify`` compares the result with the alerts topic over the same range.

More (the module notes): docs/OPERATIONS.md, section ``stream/commands/replay.py``.
"""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path

from stream.commands._base import argument, check_input_file, check_output_file, command, fail, option
from stream.lines import iter_lines
from stream.offline.replay import Replayer, first_line, not_events
from stream.settings import get_settings
from stream.wire import encode

settings = get_settings()


@command(
    argument("paths", nargs=-1, type=str),
    option("--out", "-o", type=str, default=None, help="Write alerts here instead of stdout."),
    option(
        "--seq-gap-limit",
        type=int,
        default=None,
        help=f"Waiting events per context before a sequence_gap (default {settings.seq_gap_limit}, CG_SEQ_GAP_LIMIT).",
    ),
    option(
        "--since",
        type=str,
        default=None,
        is_flag=False,
        flag_value="",
        metavar="[TIME]",
        help="Start each context's expected seq at the first event read (partial input); offline it takes no "
        "TIME. With --from-kafka: --since TIME (RFC 3339) also starts reading at TIME.",
    ),
    option("--from-kafka", is_flag=True, default=False, help="Read the input topics instead of files."),
    option(
        "--from-beginning", is_flag=True, default=False, help="--from-kafka: from the start of the topics (default)."
    ),
    option("--until", type=str, default=None, help="--from-kafka: stop at records stamped at/after TIME (RFC 3339)."),
    option("--context", type=str, default=None, help="--from-kafka: only this context_id."),
    option(
        "--verify",
        is_flag=True,
        default=False,
        help="--from-kafka: compare with the alerts (and status) topics over the same range; exit 1 on any "
        "difference. The replayed records are then written only with --out (stdout carries nothing else).",
    ),
    option(
        "--status",
        is_flag=True,
        default=False,
        help="Also write node-status records (DESIGN.md §4), each after the alerts of its event.",
    ),
    option(
        "--strict",
        is_flag=True,
        default=False,
        help="Exit 1 when any input was dead-lettered (bad lines are still reported and skipped).",
    ),
)
def replay(
    paths: tuple[str, ...], out: str | None, seq_gap_limit: int | None, since: str | None,
    from_kafka: bool, from_beginning: bool, until: str | None, context: str | None, verify: bool,
    status: bool, strict: bool,
) -> int:
    """Replay input events through a fresh engine and print the alerts.

    PATH... are JSONL files of input events (both kinds, DESIGN.md §3), read one after
    another in the order given; '-' reads stdin. No broker is needed. --status also
    writes the node-status records (may an agent recover from this node?).

    --from-kafka reads the input topics instead (CG_BROKER), from the beginning or
    --since TIME up to their current end or --until TIME, without committing offsets;
    --verify then diffs the result against the alerts topic (missing / extra /
    different by alert_id, ignoring emitted_at and identical repeats).
    """
    limit = settings.seq_gap_limit if seq_gap_limit is None else seq_gap_limit
    if limit < 0:
        fail("--seq-gap-limit must be >= 0")
    if from_kafka:
        if paths:
            fail("give either PATH... or --from-kafka, not both")
        if since and from_beginning:
            fail("--since and --from-beginning exclude each other")
        if out:
            check_output_file(out)
        from stream.commands._forensics import replay_from_kafka

        return replay_from_kafka(
            since=since or None, until=until, context=context, verify=verify, out=out, seq_gap_limit=limit,
            status=status, strict=strict,
        )
    if verify or until or context or from_beginning:
        fail("--verify, --until, --context and --from-beginning need --from-kafka")
    if since:
        fail("offline, --since takes no TIME (TIME is for --from-kafka)")
    if not paths:
        fail("replay needs at least one PATH (a JSONL file of input events, or - for stdin), or --from-kafka")
    since_flag = since is not None
    if since_flag:  # `--since TIME FILE` offline: click took --since as the flag and TIME as a path
        from stream.times import rfc3339_time

        for path in paths:
            if path != "-" and not os.path.exists(path) and rfc3339_time(path) is not None:
                fail(f"offline, --since takes no TIME ({path}): it starts each context at its first event read; "
                     "a TIME is for --from-kafka")
    # The engine's state is millions of small JSON-ready objects that live until the
    # end; the cyclic GC rescanning them dominated big replays (bench/bench_engine.py).
    gc.freeze()
    gc.set_threshold(100_000, 50, 100)
    for path in paths:  # check every input before writing anything
        if path != "-":
            if os.path.isdir(path) and not any(Path(path).glob("*.jsonl")):  # trajectories, most likely
                fail(f"cannot replay {path}: it is a directory, not a JSONL file of input events; for agent "
                     f"trajectories turn them into events first: `checkpoint-guard ingest {path} | "
                     "checkpoint-guard replay -`")
            check_input_file(path, what="a JSONL file of input events")
            _check_events(path)
    if out:
        if any(p != "-" and os.path.exists(p) and os.path.samefile(p, out) for p in paths if os.path.exists(out)):
            fail(f"--out {out} is one of the inputs; it would be overwritten; write the alerts to another file")
        check_output_file(out)
    rp = Replayer(seq_gap_limit=limit, since=since_flag, max_bytes=settings.max_message_bytes,
                  max_output_bytes=settings.max_output_bytes, max_ledger=settings.max_ledger)
    try:
        sink = open(out, "wb") if out else sys.stdout.buffer
    except OSError as exc:
        fail(f"cannot write --out {out}: {exc.strerror}")
    try:
        return _run(rp, paths, sink, status, strict=strict)
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):  # `replay ... | head`: the reader left; not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        fail(f"read/write error: {exc.strerror or exc}")
    finally:
        if out:
            sink.close()


def _run(rp: Replayer, paths: tuple[str, ...], sink, status: bool, *, strict: bool = False) -> int:
    try:
        for path in paths:
            try:
                fh = sys.stdin.buffer if path == "-" else open(path, "rb")
            except OSError as exc:
                fail(f"cannot read {path}: {exc.strerror}")
            with fh if path != "-" else _nullcontext(fh):
                n_dead = len(rp.result.dead_letters)
                checked = path != "-"  # files were checked up front; stdin is checked at its first line
                for lineno, line in enumerate(iter_lines(fh, limit=rp.max_bytes), 1):
                    if not checked and line.strip(b" \t\r"):
                        checked = True
                        _check_events(path, line)
                    out = rp.apply(line, lineno)
                    if len(rp.result.dead_letters) != n_dead:  # a bad line, or events rejected at apply time
                        for where, reason in rp.result.dead_letters[n_dead:]:
                            print(f"{path}:{where}: {reason}", file=sys.stderr)
                        n_dead = len(rp.result.dead_letters)
                    if out is not None:
                        for value in out.records if status else out.alerts:
                            sink.write(encode(value) + b"\n")
                        if path == "-":  # a live pipe (`tail -f … | replay -`): its output as it comes
                            sink.flush()
                if not checked:
                    _check_events(path, None)
        result = rp.finish()
    finally:
        sink.flush()
    print(result.summary(), file=sys.stderr)
    return 1 if strict and result.dead_letters else 0


def _check_events(path: str, first: bytes | None | bool = False) -> None:
    """Fail (exit 2) at once, with what the input is and the fix, when ``path`` is not JSONL
    input events (empty, binary, one JSON document, a transcript): its first non-blank
    line ``first`` (read from the file when not given) decides (:func:`stream.offline.replay.not_events`)."""
    if first is False:
        with open(path, "rb") as fh:
            first = first_line(fh, limit=settings.max_message_bytes)
    problem = not_events(first if isinstance(first, bytes) else None, "FILE" if path == "-" else path)
    if problem:
        fail(f"cannot replay {'stdin' if path == '-' else path}: {problem}")


class _nullcontext:
    def __init__(self, obj):
        self.obj = obj

    def __enter__(self):
        return self.obj

    def __exit__(self, *exc):
        return False
