"""Trace ingestion: agent runs and compaction logs -> the two input event streams (DESIGN.md §3).

Two families: ``simulated/`` (real trajectories through a simulated compaction) and the
compaction-log adapters (logs of a real compaction: ``claude_code``, ``openhands``,
``compaction_logs``, ``prohibitions``, the judges). The names below are the simulated
family's (docs/ADAPTERS.md). Plain Python: no faust, no aiokafka.
"""

from stream.adapters.simulated import (
    AdapterError,
    Artifact,
    Constraint,
    Loaded,
    SimulationParams,
    SurvivalCell,
    Trajectory,
    Turn,
    discover,
    encode_event,
    event_counts,
    load_file,
    load_trajectories,
    parse_rates,
    simulate,
    simulate_all,
    survival_table,
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
