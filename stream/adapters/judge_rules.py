"""The ``rules`` judge: the offline default of the judge port (:mod:`stream.adapters.judge`).

Reads every candidate with the prohibition extractor and decides each carry with the
matcher of :mod:`stream.adapters.prohibitions`; each decision names the cue that made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from stream.adapters.judge import Candidate, Carry, Instruction, Judge, Judgement
from stream.adapters.prohibitions import Prohibition, ProhibitionMatcher, SummaryIndex

_SOURCE = {"plan": "plan", "rule_file": "rule_file", "system": "system"}


class RulesJudge:
    """The ``rules`` judge (module docstring). ``matcher``: the extractor and matcher settings."""

    name = "rules"

    def __init__(self, matcher: ProhibitionMatcher | None = None) -> None:
        self.matcher = matcher or ProhibitionMatcher()
        self._read = lru_cache(maxsize=65_536)(self._read_uncached)

    def _read_uncached(self, text: str, source: str, question: str | None) -> tuple[Prohibition, ...]:
        return tuple(self.matcher.prohibitions(text, source=source, about=question))

    def instructions(self, candidate: Candidate) -> list[tuple[Instruction, Prohibition]]:
        """The prohibitions one candidate states, each with the extractor's object (for matching)."""
        out = []
        for p in self._read(candidate.text, _SOURCE.get(candidate.channel, "user"), candidate.question):
            out.append((Instruction(p.id, p.text, candidate.id, p.form, cue=f"extract:{p.form}"), p))
        return out

    def judge(self, candidates: Sequence[Candidate], summary: str | None,
              earlier_summaries: Sequence[str] = ()) -> Judgement:
        found: dict[str, tuple[Instruction, Prohibition]] = {}
        for c in candidates:
            for i, p in self.instructions(c):
                found.setdefault(i.id, (i, p))
        index = SummaryIndex.of(summary) if summary else None
        carries = []
        for i, p in found.values():
            if index is None:
                carries.append(Carry(i.id, False, cue="opaque" if summary is None else "empty"))
                continue
            verdict = self.matcher.judge(index, p)
            carried = verdict == "carried" or (verdict == "uncertain" and not self.matcher.alert_uncertain)
            carries.append(Carry(i.id, carried, cue=f"match:{verdict}"))
        return Judgement("rules", None, tuple(i for i, _ in found.values()), tuple(carries))


def as_judge(judge: "Judge | ProhibitionMatcher | None") -> "Judge":
    """The judge an adapter was given: None -> the default ``rules`` judge; a bare
    :class:`ProhibitionMatcher` (the adapters' former argument) -> the ``rules`` judge with it."""
    if judge is None:
        return RulesJudge()
    if isinstance(judge, ProhibitionMatcher):
        return RulesJudge(judge)
    return judge
