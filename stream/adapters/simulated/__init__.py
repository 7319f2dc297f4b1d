"""The simulated family: real agent trajectories played through a simulated compaction.

Reads mini-swe-agent and tau-bench runs into the neutral model (:mod:`.model`) through the
format registry (:mod:`.formats`), then writes what a hierarchical compactor would publish
(:mod:`.simulator`). Plain Python: no faust, no aiokafka. Usage: docs/ADAPTERS.md.
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
