"""The judge port of the compaction-log adapters (issue 22): the two decisions behind an alert.

At every compaction the adapter hands a :class:`Judge` the user-side texts the agent saw
since the session started (:class:`Candidate`), the new summary's text (None when it is
opaque) and the earlier summaries' texts, oldest first. The judge answers with a
:class:`Judgement`: which standing prohibitions are in force (:class:`Instruction`,
revocations applied) and, for each, whether the summary carries it (:class:`Carry`).
The adapter turns it into the events (DESIGN.md §3): ``raw_negative_constraints`` = the
instructions in force first seen in the records the checkpoint covers,
``negative_constraints`` = those carried; the decisions go into ``x_`` fields so
``replay`` stays deterministic and ``explain`` can say why an alert exists.

Implementations: ``rules`` (:mod:`stream.adapters.compaction.judge_rules`, the offline default) and
``model`` (an LLM, owned by the model-backends module). Field names may grow (with
defaults), never change meaning. Pure Python: no network, no faust.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

#: Where a candidate text reached the agent.
CHANNELS = ("typed", "queued", "answer", "rejection", "command_args", "plan", "rule_file", "system")
#: The ``source`` of a rule read from a channel (the wire's constraint objects); every other channel is ``"user"``.
SOURCE_OF_CHANNEL = {"plan": "plan", "rule_file": "rule_file", "system": "system"}
#: The forms of a prohibition (the labels' classes, ``docs/REAL_LOGS.md``).
FORMS = ("explicit", "preserve", "contrastive", "defer", "restraint", "implicit")


@dataclass(frozen=True)
class Candidate:
    """One user-side text the agent saw before a compaction.

    ``id``: stable and deterministic, unique per session (``"<record key>#<n>"``).
    ``text``: verbatim. ``at``: RFC 3339 time of its record, if known. ``origin``:
    ``("line", N)`` of a transcript (1-based) / ``("event", N)`` of a conversation.
    ``question``: for an answer, the question it answers.
    """

    id: str
    text: str
    channel: str
    at: str | None = None
    origin: tuple[str, int] | None = None
    question: str | None = None


@dataclass(frozen=True)
class Instruction:
    """A standing prohibition in force at a compaction.

    ``id``: the constraint key of the events (stable across compactions and runs).
    ``text``: the rule, verbatim (a substring of its candidate's text, whitespace
    collapsed). ``form``: one of :data:`FORMS`. ``cue``: the rules judge's cue that
    fired (``"model"`` for the model judge); ``reason``: the model's short reason.
    """

    id: str
    text: str
    candidate_id: str
    form: str
    cue: str
    reason: str | None = None


@dataclass(frozen=True)
class Carry:
    """Whether the summary carries one instruction in force.

    ``cue``: the carry cue that decided (rules: ``"quoted"``, ``"paraphrase"``,
    ``"negated-mention"``, ``"removed"``, ...); ``reason``: the model's; ``quote``: the
    summary span that carries it, if any.
    """

    instruction_id: str
    carried: bool
    cue: str | None = None
    reason: str | None = None
    quote: str | None = None


@dataclass(frozen=True)
class Usage:
    """What a judgement cost (the model judge; zero for rules)."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True)
class Judgement:
    """One compaction's decisions: ``carries`` has one entry per ``in_force`` instruction.

    ``skipped_languages``: languages of candidates the rules judge could not read
    (counted and reported, never a silent "no prohibitions"); ``unread``: which ones.
    """

    judge: str
    model: str | None
    in_force: tuple[Instruction, ...]
    carries: tuple[Carry, ...]
    usage: Usage = Usage()
    skipped_languages: tuple[str, ...] = ()
    unread: tuple[tuple[str, str], ...] = ()  # (candidate id, language) of each text a language left unread

    def carried_ids(self) -> frozenset[str]:
        return frozenset(c.instruction_id for c in self.carries if c.carried)

    def carry_of(self, instruction_id: str) -> Carry | None:
        return next((c for c in self.carries if c.instruction_id == instruction_id), None)


@runtime_checkable
class Judge(Protocol):
    """One call per compaction (module docstring)."""

    name: str

    def judge(self, candidates: Sequence[Candidate], summary: str | None,
              earlier_summaries: Sequence[str] = ()) -> Judgement: ...
