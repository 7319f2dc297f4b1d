"""What both adapter families share: the adapter error, bounded ids, JSON problems in one line.

Plain Python; imports nothing of the two families (``simulated/`` and the compaction-log
adapters import it).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

from stream.errors import GuardError

#: DESIGN.md §3: an id is at most 1,024 characters.
MAX_ID = 1024


class AdapterError(GuardError):
    """A trajectory file that cannot be turned into events (one-line message).

    Not fatal to an ingest: the file (or the one run inside an array file) is skipped
    and reported; fix or remove it and ingest again.
    """

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = " ".join(str(problem).split())  # always one line
        super().__init__(f"{self.path}: {self.problem}")


def as_dict(value: object) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a record's optional field)."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    """``value`` if it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def short_hash(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


def json_error(exc: json.JSONDecodeError, *, line: bool = True) -> str:
    """``exc`` as "<what> at line L column C" (``line=False``: column only), without the
    doubled "at" of messages that end in one ("Unterminated string starting at")."""
    what = exc.msg.removesuffix(" at")
    return f"{what} at line {exc.lineno} column {exc.colno}" if line else f"{what} at column {exc.colno}"


def json_value_problem(exc: ValueError) -> str:
    """One line for a ``ValueError`` of ``json.loads`` that is not a syntax error: an integer too long to convert."""
    limit = sys.get_int_max_str_digits()
    if "integer string conversion" in str(exc) or "digits" in str(exc):
        return f"not readable JSON: an integer of more than {limit:,} digits (Python's limit for converting one)"
    return f"not readable JSON: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
