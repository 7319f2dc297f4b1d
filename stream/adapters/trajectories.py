"""Old home of the trajectory model, kept for the compaction-log adapters until phase 2 of issue 26.

TODO(issue 26 phase 2): claude_code.py, openhands.py and compaction_logs.py import these names
from :mod:`stream.adapters.common`, bench/bench_floor.py and tests/integration take
``DEFAULT_TRACES`` from :mod:`stream.adapters.simulated`; then this module goes.
"""

from stream.adapters.common import MAX_ID, json_value_problem, short_hash
from stream.adapters.simulated.model import DEFAULT_TRACES

__all__ = ["DEFAULT_TRACES", "MAX_ID", "json_value_problem", "short_hash"]
