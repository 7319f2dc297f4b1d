"""The DESIGN.md §3 constraint key, written once: every adapter, the wire and the engine compare by it.

Plain Python (standard library only, like the rest of the domain).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any


def text_key(text: str) -> str:
    """The key of a string constraint: NFKC, then casefold, then whitespace collapsed (in that order).

    An empty result is a valid key.
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def constraint_key(constraint: str | Mapping[str, Any]) -> str:
    """The comparison key of a constraint: a string's :func:`text_key`, an object's ``id`` verbatim.

    Ids and normalized texts share one key space (an object's ``text`` is informational).
    """
    if isinstance(constraint, str):
        return text_key(constraint)
    return str(constraint["id"])
