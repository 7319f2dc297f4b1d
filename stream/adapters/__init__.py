"""Trace ingestion: agent runs and compaction logs -> the two input event streams (DESIGN.md §3).

Two families: ``simulated/`` (real trajectories through a simulated compaction) and
``compaction/`` (logs of a real compaction: ``claude_code``, ``openhands``,
``compaction_logs``, ``prohibitions``, the judges). The names below are the simulated
family's (docs/ADAPTERS.md). Plain Python: no faust, no aiokafka.
"""

from stream.adapters.common import AdapterError
from stream.adapters.simulated.formats import FORMATS, discover, load_file, load_trajectories
from stream.adapters.simulated.model import DEFAULT_TRACES, Artifact, Constraint, Format, Loaded, Trajectory, Turn
from stream.adapters.simulated.simulator import (
    SimulationParams,
    SurvivalCell,
    encode_event,
    event_counts,
    parse_rates,
    simulate,
    simulate_all,
    survival_table,
)

__all__ = [
    "DEFAULT_TRACES",
    "FORMATS",
    "AdapterError",
    "Artifact",
    "Constraint",
    "Format",
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
