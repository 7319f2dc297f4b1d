"""``checkpoint-guard demo`` — the main job end to end on real input (see stream.devtools.demo)."""

from __future__ import annotations

from stream.adapters import SimulationParams
from stream.adapters.simulated.model import DEFAULT_TRACES
from stream.commands._base import argument, command, fail, option
from stream.errors import GuardError
from stream.settings import get_settings

settings = get_settings()


@command(
    argument("paths", nargs=-1, type=str),
    option("--keep-running", is_flag=True, default=False, help="Leave the broker and the worker running."),
    option("--use-broker", is_flag=True, default=False,
           help="Use the broker at CG_BROKER instead of starting a fresh local one."),
    option("--seed", type=int, default=0, help="Seed of the compaction simulation."),
)
def demo(paths: tuple[str, ...], keep_running: bool, use_broker: bool, seed: int) -> int:
    """Run the main job end to end and print a report.

    Starts a fresh local Kafka, creates the topics, starts the worker, turns the
    trajectories in PATH... (default: the shipped stream/samples/traces) into compaction and
    artifact events, produces them, waits until the worker drained them, then prints
    events, dead letters, alerts by rule and level, the per-level survival table of
    prohibitions vs positive instructions, the most-orphaned referents, and whether the
    live alerts equal offline replay. Stops what it started unless --keep-running.
    Exit code 0 when live equals replay.
    """
    from rich.console import Console

    from stream.devtools.demo import Demo

    console = Console(stderr=False)
    targets = list(paths) or [str(DEFAULT_TRACES)]
    try:
        return Demo(settings, console, keep_running=keep_running).run(
            targets, SimulationParams(seed=seed), start_broker=not use_broker
        )
    except GuardError as exc:
        fail(str(exc), code=1)
