"""Trace ingestion: real agent trajectories -> the two input event streams (DESIGN.md §3).

Plain Python (no faust, no aiokafka); ``python -m stream ingest`` is the shell around it::

    from stream.adapters import load_trajectories, simulate, SimulationParams, encode_event

    loaded = load_trajectories(["stream/samples/traces"])           # .trajectories, .errors
    for traj in loaded.trajectories:
        for event in simulate(traj, SimulationParams(seed=7)):
            print(encode_event(event))
"""

from stream.adapters.simulator import (
    SimulationParams,
    SurvivalCell,
    encode_event,
    event_counts,
    parse_rates,
    simulate,
    simulate_all,
    survival_table,
)
from stream.adapters.trajectories import (
    AdapterError,
    Artifact,
    Constraint,
    Loaded,
    Trajectory,
    Turn,
    discover,
    load_file,
    load_trajectories,
)

__all__ = [
    "AdapterError",
    "Artifact",
    "Constraint",
    "Loaded",
    "SimulationParams",
    "SurvivalCell",
    "Trajectory",
    "Turn",
    "discover",
    "encode_event",
    "event_counts",
    "load_file",
    "load_trajectories",
    "parse_rates",
    "simulate",
    "simulate_all",
    "survival_table",
]
