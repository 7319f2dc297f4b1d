"""``python -m stream ingest [PATH...]`` — real trajectories -> the two input streams.

A thin shell around :mod:`stream.adapters`: load the trajectories, simulate the
compaction of each (deterministic, see :mod:`stream.adapters.simulator`), and write
the events as JSONL (stdout or ``--out``) or produce them to the input topics
(``--to-kafka``: checkpoints to ``CG_COMPACTION_TOPIC``, artifacts to
``CG_ARTIFACT_TOPIC``, key = UTF-8 context id, value = the JSON line).

Without PATH it reads the traces shipped next to the repository
(``samples/traces``, shipped with the project). A file that cannot be read is reported on stderr as
``checkpoint-guard: ingest: <path>: <problem>`` and skipped; the others are ingested
and the exit code is 1. The last stderr line is a one-line summary.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any, BinaryIO

import click
from faust.cli import argument, option

from stream.adapters import (
    SimulationParams,
    Trajectory,
    encode_event,
    event_counts,
    load_trajectories,
    parse_rates,
    simulate,
)
from stream.app import app, settings
from stream.commands._base import SyncCommand, fail
from stream.settings import PROJECT_ROOT

#: The traces shipped with the project (read-only input data).
from stream.adapters.trajectories import DEFAULT_TRACES  # noqa: E402
_D = SimulationParams()


def _rates(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[float, float, float] | None:
    if value is None:
        return None
    try:
        return parse_rates(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _fmt(rates: tuple[float, ...]) -> str:
    return ",".join(f"{r:g}" for r in rates)


@app.command(
    argument("paths", nargs=-1, type=str),
    option("--out", "-o", type=str, default=None, help="Write the JSONL here instead of stdout."),
    option("--window", type=int, default=_D.window, show_default=True, help="Live window, tokens."),
    option("--low-water", type=int, default=_D.low_water, show_default=True,
           help="Evict whole turns until the live window is at most this many tokens."),
    option("--durable-capacity", type=int, default=_D.durable_capacity, show_default=True,
           help="Artifacts the durable store keeps; the oldest fall out."),
    option("--fanout", type=int, default=_D.fanout, show_default=True,
           help="Leaves per section and sections per root."),
    option("--seed", type=int, default=_D.seed, show_default=True, help="Seed of every random draw."),
    option("--prohibition-survival", type=str, default=None, callback=_rates,
           help=f"Cumulative leaf,section,root survival of prohibitions [{_fmt(_D.prohibition_survival)}]."),
    option("--instruction-survival", type=str, default=None, callback=_rates,
           help=f"Same for positive instructions [{_fmt(_D.instruction_survival)}]."),
    option("--referent-survival", type=str, default=None, callback=_rates,
           help=f"Same for referents named by the summaries [{_fmt(_D.referent_survival)}]."),
    option("--recompact-rate", type=float, default=_D.recompact_rate, show_default=True,
           help="Chance per compaction cycle that an earlier section/root is compacted again."),
    option("--stable-recompaction", is_flag=True, default=False,
           help="Re-compaction keeps the node's referents (default: draws them afresh)."),
    option("--to-kafka", is_flag=True, default=False,
           help="Produce to the input topics (CG_BROKER) instead of writing JSONL."),
    option("--progress/--no-progress", default=None,
           help="Progress bar on stderr [default: only when stderr is a terminal]."),
    base=SyncCommand,
)
def ingest(
    self: Any,
    paths: tuple[str, ...],
    out: str | None,
    window: int,
    low_water: int,
    durable_capacity: int,
    fanout: int,
    seed: int,
    prohibition_survival: tuple[float, float, float] | None,
    instruction_survival: tuple[float, float, float] | None,
    referent_survival: tuple[float, float, float] | None,
    recompact_rate: float,
    stable_recompaction: bool,
    to_kafka: bool,
    progress: bool | None,
) -> int:
    """Turn agent trajectories into checkpoint and artifact events (JSONL or Kafka).

    PATH... are trajectory files or directories (searched for *.json: mini-swe-agent
    *.traj.json and tau-bench arrays); default: the traces shipped with the project.
    Same input + options => byte-identical output.
    """
    started = time.monotonic()
    try:
        params = SimulationParams(
            window=window,
            low_water=low_water,
            durable_capacity=durable_capacity,
            fanout=fanout,
            seed=seed,
            prohibition_survival=prohibition_survival or _D.prohibition_survival,
            instruction_survival=instruction_survival or _D.instruction_survival,
            referent_survival=referent_survival or _D.referent_survival,
            recompact_rate=recompact_rate,
            recompact_changes_referents=not stable_recompaction,
        )
    except ValueError as exc:
        fail(str(exc))
    if not paths:
        if not DEFAULT_TRACES.is_dir():
            fail(f"no PATH given and the shipped traces are not at {DEFAULT_TRACES}; pass trajectory files or directories")
        paths = (str(DEFAULT_TRACES),)

    loaded = load_trajectories(paths)
    for err in loaded.errors:
        print(f"checkpoint-guard: ingest: {err}", file=sys.stderr)
    if not loaded.trajectories:
        fail(f"no trajectories read from {', '.join(paths)}", code=1 if loaded.errors else 2)

    show = sys.stderr.isatty() if progress is None else progress
    counts: Counter[str] = Counter()
    events = _events(loaded.trajectories, params, counts, show)
    if to_kafka:
        try:
            sent = asyncio.run(_produce(events))
        except Exception as exc:  # noqa: BLE001 - one clear line instead of a traceback
            fail(f"producing to Kafka at {settings.bootstrap_servers} failed: {exc or type(exc).__name__}", code=1)
        where = f"{sent} messages to {settings.compaction_topic}/{settings.artifact_topic}"
    else:
        where = out or "stdout"
        sink_cm = open(out, "wb") if out else nullcontext(sys.stdout.buffer)
        try:
            with sink_cm as sink:
                _write(events, sink)
        except BrokenPipeError:  # `ingest | head`: the reader is gone, which is fine
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            where = "stdout (closed early by the reader)"
        except OSError as exc:
            fail(f"cannot write {out or 'stdout'}: {exc.strerror or exc}", code=1)

    print(_summary(counts, len(loaded.errors), where, time.monotonic() - started), file=sys.stderr)
    return 1 if loaded.errors else 0


def _events(
    trajectories: list[Trajectory], params: SimulationParams, counts: Counter[str], show: bool
) -> Iterator[dict[str, Any]]:
    """Events of every trajectory in order, counting them, with an optional progress bar."""
    bar: Any = _progress_bar() if show else None
    with bar if bar is not None else nullcontext():
        task = bar.add_task("ingest", total=len(trajectories)) if bar is not None else None
        for traj in trajectories:
            if bar is not None:
                bar.update(task, description=traj.context_id)
            evs = simulate(traj, params)
            counts.update(event_counts(evs))
            yield from evs
            if bar is not None:
                bar.advance(task)


def _progress_bar() -> Any:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description:<40}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    )


def _write(events: Iterable[dict[str, Any]], sink: BinaryIO) -> None:
    for event in events:
        sink.write(encode_event(event).encode("utf-8") + b"\n")


async def _produce(events: Iterable[dict[str, Any]]) -> int:
    """Send every event to its input topic (key = context id) and await every ack."""
    from stream.kafka_clients import producer

    topic = {"checkpoint": settings.compaction_topic, "artifact": settings.artifact_topic}
    client = producer(settings, enable_idempotence=True, linger_ms=5)
    try:
        await client.start()
        pending = [
            await client.send(topic[e["type"]], value=encode_event(e).encode("utf-8"), key=e["context_id"].encode("utf-8"))
            for e in events
        ]
        await asyncio.gather(*pending)
    finally:
        await client.stop()
    return len(pending)


def _summary(counts: Counter[str], failed: int, where: str, seconds: float) -> str:
    artifacts = ", ".join(f"{k} {counts[k]}" for k in ("admitted live", "evicted live", "admitted durable", "evicted durable"))
    levels = ", ".join(f"{k} {counts[k]}" for k in ("leaf", "section", "root"))
    return (
        f"ingest: {counts['contexts']} contexts, {counts['artifact'] + counts['checkpoint']} events "
        f"(artifact {counts['artifact']}: {artifacts}; checkpoint {counts['checkpoint']}: {levels}, "
        f"{counts['re-emitted']} of them re-emissions) "
        f"-> {where}; {failed} file(s) failed; {seconds:.1f}s"
    )
