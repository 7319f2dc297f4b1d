"""tests/langgraph: the LangGraph integration, run from its own virtualenv (`make test-langgraph`,
part of `make test`).

LangChain brings orjson, and faust switches its JSON codec when orjson is importable; the
worker's environment (`.venv`) is built and tested without the extra. These tests run the agent
side from `.venv-langgraph` and start the worker from `.venv` (as in production: the agent
runtime and the worker are different processes). In an environment without LangChain this
directory is not collected: `make test` runs it separately.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The worker's interpreter: the project's own virtualenv (Makefile VENV), without orjson.
WORKER_PYTHON = REPO / ".venv" / "bin" / "python"

HAVE_LANGCHAIN = importlib.util.find_spec("langchain") is not None
if not HAVE_LANGCHAIN:
    collect_ignore_glob = ["test_*.py"]

