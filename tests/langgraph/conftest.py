"""tests/langgraph: the LangGraph integration (extra ``langgraph``, installed by ``make
install`` with the test dependencies): the agent side runs in the test process, the worker
as its own process (as in production: the agent runtime and the worker are different
processes).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The worker's interpreter: this one (the project's virtualenv).
WORKER_PYTHON = Path(sys.executable)
