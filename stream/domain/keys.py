"""The DESIGN.md §3 constraint key, written once: every adapter, the wire and the engine compare by it.

Plain Python (standard library only, like the rest of the domain).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

#: Texts up to this many characters have their key remembered (a checkpoint re-lists the
#: constraints of the ones before it: most keys are computed again and again).
_REMEMBERED_CHARS = 512


def _text_key(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


_remembered_key = lru_cache(maxsize=1 << 14)(_text_key)  # at most 16,384 texts of 512 characters (and keys)


def text_key(text: str) -> str:
    """The key of a string constraint: NFKC, then casefold, then whitespace collapsed (in that order).

    An empty result is a valid key.
    """
    return _remembered_key(text) if len(text) <= _REMEMBERED_CHARS else _text_key(text)


def constraint_key(constraint: str | Mapping[str, Any]) -> str:
    """The comparison key of a constraint: a string's :func:`text_key`, an object's ``id`` verbatim.

    Ids and normalized texts share one key space (an object's ``text`` is informational).
    """
    if isinstance(constraint, str):
        return text_key(constraint)
    return str(constraint["id"])
