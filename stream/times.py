"""RFC 3339 date-times as the wire contract reads ``occurred_at`` (DESIGN.md §3).

One definition for :mod:`stream.wire` (the edge) and the compaction-log adapters (which must
not load the wire's pydantic models just to read a time).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def rfc3339_time(v: Any) -> str | None:
    """``v`` verbatim when it is an RFC 3339 date-time with an offset, else None."""
    if not isinstance(v, str) or not _RFC3339.fullmatch(v):
        return None
    try:
        datetime.fromisoformat(v.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return v
