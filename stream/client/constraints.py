"""The seed's two mitigations as helpers: a constraint channel and referent collection.

:class:`ConstraintChannel` keeps the prohibitions of every raw text a summary covers
outside that text (a prohibition must travel in a channel not subject to compression,
DESIGN.md §4 "Why a ledger") and fills the checkpoint's constraint fields by construction;
:func:`collect_referents` names the artifacts a summary depends on. How they work:
docs/CLIENT.md "The constraint channel".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from stream.adapters.compaction.compaction_logs import mentioned_artifacts
from stream.adapters.compaction.prohibitions import Prohibition, ProhibitionMatcher


@dataclass(frozen=True)
class SummaryInput:
    """What a summarizer gets: the ``text`` to compress, the ``constraints`` that must
    survive it verbatim, and ``raw`` — those found in this text."""

    text: str
    constraints: tuple[Prohibition, ...]
    raw: tuple[Prohibition, ...]


class ConstraintChannel:
    """Prohibitions of one context, kept outside the summarized text (module docstring).

    ``matcher``: how prohibitions are found and matched (default threshold 0.8).
    """

    def __init__(self, matcher: ProhibitionMatcher | None = None) -> None:
        self.matcher = matcher or ProhibitionMatcher()
        self._kept: dict[str, Prohibition] = {}

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def constraints(self) -> tuple[Prohibition, ...]:
        """Every prohibition seen so far, in order of first appearance."""
        return tuple(self._kept.values())

    def texts(self) -> dict[str, str]:
        """constraint key (its id) -> text: what ``StatusView.recover_from`` names."""
        return {c.id: c.text for c in self._kept.values()}

    def observe(self, text: str | None) -> tuple[Prohibition, ...]:
        """The prohibitions of one raw text (also kept from now on)."""
        found = self.matcher.prohibitions(text)
        for c in found:
            self._kept.setdefault(c.id, c)
        return tuple(found)

    def prepare(self, texts: Iterable[str]) -> SummaryInput:
        """The summarizer's input for the raw ``texts`` a summary will cover."""
        texts = [t for t in texts if t]
        raw: dict[str, Prohibition] = {}
        for t in texts:
            for c in self.observe(t):
                raw.setdefault(c.id, c)
        return SummaryInput("\n\n".join(texts), self.constraints, tuple(raw.values()))

    def checkpoint_fields(self, prepared: SummaryInput) -> dict[str, list[dict[str, str]]]:
        """``raw_negative_constraints`` and ``negative_constraints`` for ``ctx.checkpoint(**...)``."""
        return {
            "raw_negative_constraints": [c.as_wire() for c in prepared.raw],
            "negative_constraints": [c.as_wire() for c in prepared.constraints],
        }

    def attach(self, summary: str, prepared: SummaryInput) -> str:
        """The summary with the prohibitions appended verbatim (what the model reads next)."""
        if not prepared.constraints:
            return summary
        lines = "\n".join(f"- {c.text}" for c in prepared.constraints)
        return f"{summary.rstrip()}\n\nConstraints that remain in force (verbatim):\n{lines}"

    def carried_by(self, summary: str | None, pool: Iterable[Prohibition] | None = None) -> list[dict[str, str]]:
        """The prohibitions of ``pool`` (default: all kept) a summary written without the
        channel still states — its honest ``negative_constraints``."""
        return [c.as_wire() for c in self.matcher.carried(summary, self.constraints if pool is None else pool)]


def _artifact_id(item: Any) -> str:
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        for k in ("artifact_id", "id"):
            v = item.get(k)
            if isinstance(v, str):
                return v
    for k in ("artifact_id", "id"):
        v = getattr(item, k, None)
        if isinstance(v, str):
            return v
    raise TypeError(f"cannot tell the artifact id of {type(item).__name__}: pass ids, or objects with .id")


def collect_referents(covered: Iterable[Any], *, summary: str | None = None,
                      names: Mapping[str, str] | None = None) -> list[str]:
    """The referents of a summary, sorted: the ids of the ``covered`` artifacts (ids,
    dicts or objects with ``artifact_id``/``id``), plus the artifacts ``names`` maps to
    (name -> artifact id: a file path, a tool-call id) that ``summary`` mentions as a
    whole token."""
    ids = {_artifact_id(a) for a in covered}
    if summary and names:
        ids.update(mentioned_artifacts(summary, names))
    return sorted(ids)
