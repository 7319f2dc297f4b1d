"""Constraint sentences of a trajectory's instructions: prohibitions and positive instructions.

A small cue-based reader of the instruction texts the simulated family sees (a
mini-swe-agent ``<instructions>`` block, a tau-bench policy). It is not the compaction
family's extractor (:mod:`stream.adapters.compaction.prohibitions`): that one reads user speech and
finds prohibitions only, while the simulator also needs the positive instructions
(``instructions`` / ``raw_instructions``) — see docs/ADAPTERS.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from stream.adapters.common import short_hash
from stream.adapters.simulated.model import Constraint, Polarity
from stream.domain.keys import text_key

#: Cues that make a sentence a prohibition (checked first: "must not" is negative).
NEGATION_CUES = re.compile(
    r"\b(?:do\s+not|don't|cannot|can\s*not|can't|must\s+not|mustn't|never|"
    r"should\s+not|shouldn't|may\s+not|not\s+allowed|not\s+permitted|not\s+possible|"
    r"but\s+not|avoid)\b",
    re.IGNORECASE,
)
#: Cues of a positive instruction: modal verbs and "always"...
POSITIVE_CUES = re.compile(
    r"\b(?:always|must|should|needs?\s+to|make\s+sure|ensure|required?|only)\b", re.IGNORECASE
)
#: ...or a sentence that starts with an imperative verb.
IMPERATIVE_START = re.compile(
    r"^(?:analy[sz]e|ask|check|collect|create|edit|follow|include|inspect|list|obtain|"
    r"provide|run|submit|transfer|use|verify|write)\b",
    re.IGNORECASE,
)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_TAG_LINE = re.compile(r"^\s*</?[A-Za-z_][\w-]*>\s*$")


def make_constraint(text: str, polarity: Polarity) -> Constraint:
    """A constraint whose id is a hash of its normalized text (same sentence, same id)."""
    prefix = "prohibition" if polarity == "prohibition" else "instruction"
    return Constraint(f"{prefix}:{short_hash(text_key(text))}", text, polarity)


def iter_sentences(text: str, *, skip_blocks: Sequence[str] = ()) -> Iterator[str]:
    """Sentences of a markdown-ish instruction text: one per bullet line or per '. '.

    Headings, code fences (and what is inside them), lone XML-ish tag lines and the
    content of the tags named in ``skip_blocks`` (e.g. an example response) are skipped.
    """
    in_fence = False
    skipping: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if skipping:
            if line.lower().startswith(f"</{skipping}"):
                skipping = None
            continue
        opened = next((t for t in skip_blocks if line.lower().startswith(f"<{t}")), None)
        if opened:
            skipping = opened
            continue
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or not line or line.startswith("#") or _TAG_LINE.match(line):
            continue
        line = re.sub(r"</?[A-Za-z_][\w-]*>", " ", line)  # inline <IMPORTANT> etc.
        line = _LIST_MARKER.sub("", line).strip()
        for sentence in _SENTENCE_SPLIT.split(line):
            sentence = " ".join(sentence.replace("**", "").split())
            if len(sentence) >= 12:
                yield sentence


_CONDITION = re.compile(r"\b(?:if|unless|when|whether)\b", re.IGNORECASE)


def _is_prohibition(sentence: str) -> bool:
    """A negation cue in a main clause ("If X, you should not Y" yes; "iff X cannot Y" no)."""
    for cue in NEGATION_CUES.finditer(sentence):
        before = sentence[: cue.start()]
        cond = list(_CONDITION.finditer(before))
        if not cond or "," in before[cond[-1].end() :]:
            return True
    return False


def extract_constraints(text: str, *, skip_blocks: Sequence[str] = ()) -> list[Constraint]:
    """Prohibitions (negation cues) and positive instructions (modal/imperative) of a text."""
    out: dict[str, Constraint] = {}
    for sentence in iter_sentences(text, skip_blocks=skip_blocks):
        if _is_prohibition(sentence):
            c = make_constraint(sentence, "prohibition")
        elif POSITIVE_CUES.search(sentence) or IMPERATIVE_START.match(sentence):
            c = make_constraint(sentence, "instruction")
        else:
            continue
        out.setdefault(c.id, c)
    return list(out.values())
