"""Prohibitions in what a user (or a plan, a rule file, a system prompt) tells an agent.

The extractor behind ``raw_negative_constraints`` of the compaction-log adapters, and
the matcher that decides whether a summary still carries a prohibition
(``negative_constraints``). Designed from, and measured against, hand-labelled real
logs (``bench/eval_real_logs.py``, results in ``docs/REAL_LOGS.md``); the rules it
implements are written down in ``docs/REAL_LOGS.md`` ("What counts").

Extraction, in three steps:

1. **Text**: pasted material is dropped before anything is read — code fences, quoted
   lines (``> ...``), tool/terminal output and logs, wrapper tags of slash commands and
   local shell commands (their ``<command-args>`` are kept), system reminders, tables.
   A plan is read as markdown: its headings name sections, and sections that describe
   (context, bug analysis, verification, tests, expected output) only contribute
   explicit imperatives.
2. **Segmentation** (:func:`sentences`): lines, then sentence ends (``.``/``!``/``?``,
   also before a lower-case word, but not after an abbreviation, inside inline code or
   a file name), then clauses (``;``, a spaced dash, ``, but``, ``and``/``or`` before a
   new subject or cue); parentheticals are read as clauses of their own.
3. **Classification** (:func:`classify`): a clause is a prohibition when, after leading
   discourse markers ("ok", "also", "no,", "please", ...), it is an imperative negation
   addressed to the agent — ``don't``/``do not``/``never`` + verb, ``let's not``,
   ``avoid``/``stop`` + verb, ``no`` + gerund, ``you/we must not``/``shouldn't``,
   ``leave ... alone``, ``keep it local/private``, ``<it> should not be <done>``,
   ``<it> needs no X``, a ``no X`` item in a list of decisions — or one of the extra
   forms (:data:`FORMS`): ``preserve`` (keep the existing X), ``contrastive`` (a
   directive "..., not Y"), ``defer`` (an explicit deferral), ``restraint`` (the user
   keeps the action: "I'll do that manually", "ask before ..."), ``implicit`` (a decline:
   "no, ignore this part"). Never a prohibition: a question, an opinion ("I don't
   think"), possibility or non-necessity ("may not", "don't have to", "no need to"), a
   dismissal ("never mind", "don't worry"), a description (a cue that is not in
   imperative position: "X is never called").

Every prohibition is tagged with its ``source`` (``user``, ``plan``, ``rule_file``,
``system``) and where it was read (``line`` of a transcript, ``event`` of a
conversation) — informational fields of the wire constraint object; its ``id`` is a
hash of the normalized clause, so the same clause said twice is one constraint.

Plain Python: the standard library and Snowball's English stemmer (``snowballstemmer``).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import snowballstemmer

#: Default share of a prohibition's key words a summary sentence (with a cue of the
#: same polarity) must contain to count as carrying it. ``--match-threshold`` sets it.
DEFAULT_MATCH_THRESHOLD = 0.7

SOURCES = ("user", "plan", "rule_file", "system")
#: ``explicit``: an imperative negation; the others are the extra classes of the labels.
FORMS = ("explicit", "preserve", "contrastive", "defer", "restraint", "implicit")
#: The forms extracted by default (``ProhibitionMatcher(forms=...)`` changes it).
DEFAULT_FORMS = frozenset(FORMS)


# --------------------------------------------------------------------------- model


def normalize(text: str) -> str:
    """The DESIGN.md §3 key of a string: NFKC, casefold, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True)
class Prohibition:
    """One prohibition: ``id`` (hash of the normalized ``text``), its source and place.

    ``origin`` is a ``(key, value)`` pair such as ``("line", 104)`` (a transcript's
    1-based physical line) or ``("event", 12)`` (a conversation's event index), or None.
    """

    id: str
    text: str
    source: str = "user"
    form: str = "explicit"
    origin: tuple[str, int] | None = None

    @property
    def polarity(self) -> str:  # the trajectory adapters' Constraint has one too
        return "prohibition"

    def as_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"id": self.id, "text": self.text, "source": self.source, "form": self.form}
        if self.origin is not None:
            wire[self.origin[0]] = self.origin[1]
        return wire


def make_prohibition(text: str, *, source: str = "user", form: str = "explicit",
                     origin: tuple[str, int] | None = None) -> Prohibition:
    text = " ".join(text.split())
    digest = hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()[:12]
    return Prohibition(f"prohibition:{digest}", text, source, form, origin)


# --------------------------------------------------------------------------- step 1: text


_WRAPPER = re.compile(
    r"<(system-reminder|local-command-stdout|local-command-stderr|local-command-caveat|bash-input|bash-stdout|"
    r"bash-stderr|command-message|command-name|task-notification|agent-notification|user-prompt-submit-hook|"
    r"[a-z]+-notification)\b[^>]*>.*?(?:</\1>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_ARGS = re.compile(r"</?command-args>", re.IGNORECASE)
_NOT_WORDS = (
    "[Request interrupted", "Operation stopped by hook", "Caveat:", "This session is being continued",
    "Base directory for this skill",
)
_FENCE = re.compile(r"^\s*(```|~~~)")
#: Lines that are output pasted into a message, not words addressed to the agent.
_PASTED = re.compile(
    r"^\s*(?:[│╭╰├└┌┐┘┬┴┼─━⎿⏺❯▶●○◆■→↳⋮]|\$\s|#\s*\$|>>>|\+\+\+|---\s|@@|=== |\{\s*\"|\[\s*\{|\"[\w-]+\"\s*:|"
    r"(?:fatal|error|warning|panic|hint|remote|note|go|npm|ok|FAIL|PASS|---\s?FAIL|E\d{3,}|Traceback)\b[:\s]|"
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d|at \S+\(|File \"|create mode|delete mode|modified:|new file:|On branch|"
    r"Your branch|Changes (?:not )?(?:staged|to be)|commit [0-9a-f]{7,}|Author:|Date:|\|)",
)
#: A review comment pasted from a bot (title, "High Severity", body, "Fix in ..."): someone else's words.
_REVIEW_SEVERITY = re.compile(r"^(?:low|medium|high|critical)\s+severity$", re.IGNORECASE)
_REVIEW_END = re.compile(r"^(?:fix in (?:cursor|web)|<!--|---+$)", re.IGNORECASE)
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|[a-zA-Z][.)])\s+")
_HEADING = re.compile(r"^\s*#{1,6}\s+(.*)$")
#: Plan sections that describe rather than direct: there, only explicit imperatives count.
_DIRECTIVE_SECTION = re.compile(
    r"\b(?:step|fix|implement\w*|change|add|update|approach|plan|design|decisions?|solution|tasks?|todo|remove|"
    r"create|refactor|migrat\w*|write|wire|rules?|constraints?|requirements?|guidelines?|scope|do|don'?t|must|"
    r"phase|stage|part|milestone|deliverables?|work|changes)\b",
    re.IGNORECASE,
)
_DESCRIPTIVE_SECTION = re.compile(
    r"\b(?:context|background|overview|summary|problem|bugs?\b|analysis|root cause|cause|current|existing|"
    r"motivation|why|risks?|architecture|output|differences?|notes?|what'?s (?:already )?done|status|"
    r"references?|files?|critical files|appendix|observed|symptoms?|diagnosis|findings)\b",
    re.IGNORECASE,
)
#: ... and these describe whatever else their heading says (test setups, expected outcomes).
_TEST_SECTION = re.compile(
    r"\b(?:verification|verify|testing|tests?|test plan|tdd|expected|edge cases?|target output|examples?|"
    r"scenarios?|acceptance|manual check|how to check)\b",
    re.IGNORECASE,
)


@dataclass
class Unit:
    """A piece of prose to classify: a sentence or clause, and where it stands."""

    text: str
    section: str = ""  # the plan heading above it
    descriptive: bool = False  # in a section that describes (plans)
    item: bool = False  # a list item
    parenthetical: bool = False  # the inside of "( ... )"
    decisions: bool = False  # a list introduced as decisions / constraints / rules
    imperative_list: bool = False  # an item of a list of instructions
    negated_item: str = ""  # first sentence of an item of a list of things not to do: the list's lead ("Out of scope")
    sentence: str = ""  # the whole sentence it was cut from


def prose_lines(text: str, *, source: str = "user") -> Iterator[tuple[str, str, bool, bool, int]]:
    """``(line, section heading, descriptive section, list item, block)`` of the prose in ``text``.

    Consecutive list items share a ``block`` number; a lead-in line and the list right
    under it are consecutive blocks.

    Pasted material is skipped: fences and their content, quoted lines, output and log
    lines, tables, wrapper tags (``<command-args>`` content kept).
    """
    if not text:
        return
    if any(text.lstrip().startswith(p) for p in _NOT_WORDS):
        return
    text = _WRAPPER.sub("\n", text)
    text = _ARGS.sub("\n", text)
    if source == "plan":
        text = re.sub(r"^\s*Implement the following plan:\s*", "", text)
    in_fence = False
    section, descriptive = "", False
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    buf: list[str] = []  # a paragraph of hard-wrapped lines
    buf_item = False
    quoting = False
    reviewing = False

    block = 0  # paragraphs and lists are numbered: a blank line, a heading or skipped material ends one

    def flush(*, ends_block: bool = True) -> Iterator[tuple[str, str, bool, bool, int]]:
        nonlocal buf, block
        if buf:
            yield " ".join(buf), section, descriptive, buf_item, block
        buf = []
        if ends_block:
            block += 1

    for raw in lines:
        if _FENCE.match(raw):
            yield from flush()
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        line = raw.rstrip()
        stripped = line.strip()
        if not stripped:
            yield from flush()
            quoting = False
            continue
        if reviewing:
            if _REVIEW_END.match(stripped):
                reviewing = False
            continue
        if _REVIEW_SEVERITY.match(stripped):  # a pasted review comment: its title was the paragraph before
            buf = []
            reviewing = True
            continue
        m = _HEADING.match(line)
        if m:
            yield from flush()
            section = m.group(1).strip()
            descriptive = source == "plan" and (bool(_TEST_SECTION.search(section)) or (
                bool(_DESCRIPTIVE_SECTION.search(section)) and not _DIRECTIVE_SECTION.search(section)))
            continue
        if stripped.startswith(">") or (quoting and raw[:1].isspace()):
            yield from flush()  # a quote, and the indented lines that continue it
            quoting = True
            continue
        quoting = False
        if _PASTED.match(stripped) or _looks_like_code(line):
            yield from flush()
            continue
        if "read the full transcript at:" in stripped or stripped.startswith("If you need specific details"):
            yield from flush()
            continue
        is_item = bool(_LIST_ITEM.match(line))
        # A hard-wrapped paragraph continues on the next line: a long line that does not end a sentence.
        if buf and not is_item and len(buf[-1]) >= 60 and not re.search(r"[.!?:;)]\s*$", buf[-1]):
            buf.append(stripped)
            continue
        yield from flush(ends_block=not (is_item or buf_item) or (buf_item and not is_item))
        buf = [_LIST_ITEM.sub("", line).strip() if is_item else stripped]
        buf_item = is_item
    yield from flush()


def _looks_like_code(line: str) -> bool:
    """An indented or symbol-heavy line: pasted code, not prose."""
    if re.match(r"^(?: {4,}|\t)", line) and not _LIST_ITEM.match(line):
        return True
    s = line.strip()
    if len(s) < 12:
        return False
    prose = sum(c.isalpha() or c.isspace() for c in s)
    return prose / len(s) < 0.6


# --------------------------------------------------------------------------- step 2: segmentation


_ABBREV = frozenset(
    "e.g i.e etc vs cf approx incl esp resp viz al fig no nr mr mrs ms dr st jr sr inc ltd co".split()
)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_BOUNDARY = re.compile(r"(?<=[.!?…])[\"')\]]*\s+")


def sentences(line: str) -> list[str]:
    """Sentences of one prose line (see the module docstring)."""
    spans: list[str] = []

    def protect(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    text = _CODE_SPAN.sub(protect, line)
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        before = text[start : m.start()]
        word = re.search(r"(\S+)$", before)
        token = word.group(1) if word else ""
        bare = token.rstrip(".!?…\"')]").lower()
        if token.endswith(".") and not token.endswith(".."):
            # "e.g." / "etc." / a file name "cli.go." / a version "v1.2."? Only a real end splits.
            if bare in _ABBREV or bare.rstrip(".") in _ABBREV or re.fullmatch(r"[a-z]\.", token.lower()):
                continue
        nxt = text[m.end() : m.end() + 1]
        if not nxt:
            continue
        out.append(text[start : m.start()])
        start = m.end()
    out.append(text[start:])

    def restore(s: str) -> str:
        return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], s).strip()

    return [r for r in (restore(s) for s in out) if r]


_PAREN = re.compile(r"\(([^()]{3,200})\)")
_CLAUSE_SPLIT = re.compile(
    r"\s*(?:;|\s[—–]\s|\s-\s|:\s+|,\s*but\s+|\s+but\s+(?=(?:also\s+)?(?:don'?t|do not|never|not|no|let'?s|please|we|you|i|it|just)\b)|"
    r",\s*(?:and|so|then|or)\s+|,\s+(?=(?:let'?s|please|don'?t|do\s+not|never|avoid|just|but|so|and|also|then|no|defer|keep|leave)\s)|"
    r"\s+(?:and|or|then|so)\s+(?=(?:also\s+)?(?:it|we|you|i|they|this|that|these|those|there|let'?s|please|don'?t|do\s+not)\b))\s*",
    re.IGNORECASE,
)


_CONDITION_START = re.compile(r"^(?:if|when|unless|once|before|after|while|until|whenever|in\s+case)\b", re.I)


def clauses(sentence: str) -> list[tuple[str, bool]]:
    """``(clause, parenthetical)`` pieces of a sentence; parentheticals come after their host's clauses.

    A clause cut off at a bare "but"/"and" after a clause with its own subject shares
    that subject ("we use X but don't change Y": *we* don't) and is dropped; a leading
    condition stays with the clause it conditions ("if it fails, don't retry").
    """
    inner = [m.group(1) for m in _PAREN.finditer(sentence)]
    host = _PAREN.sub(" ", sentence)
    out: list[tuple[str, bool]] = []
    for text, par in [(host, False)] + [(p, True) for p in inner]:
        pieces: list[str] = []
        seps: list[str] = []  # seps[k] joined pieces[k] and pieces[k + 1]
        pos = 0
        for m in _CLAUSE_SPLIT.finditer(text):
            pieces.append(text[pos : m.start()])
            seps.append(m.group(0).strip().lower())
            pos = m.end()
        pieces.append(text[pos:])
        kept: list[str] = []
        for k, piece in enumerate(pieces):
            if k and seps[k - 1] in ("but", "and", "or") and _shares_subject(pieces[k - 1], piece):
                continue  # "we use X but don't change Y": *we* don't — a description, not an order
            kept.append(piece)
        merged: list[str] = []
        for piece in kept:
            piece = piece.strip(" ,.-")
            if merged and _CONDITION_START.match(merged[-1]) and "," not in merged[-1][:-1] and piece:
                merged[-1] = f"{merged[-1]}, {piece}"
            elif piece:
                merged.append(piece)
        out.extend((c, par) for c in merged)
    return out


_PLURAL_SUBJECT = re.compile(r"^(?:we|i|you|they|these|those|people|users)\s+\w", re.I)
_SINGULAR_SUBJECT = re.compile(r"^(?:it|this|that|he|she|there|the\s+\w+|our\s+\w+|my\s+\w+)\s+\w", re.I)


def _shares_subject(before: str, after: str) -> bool:
    """Does the clause ``after`` (cut at a bare "but"/"and") continue the subject of ``before``?

    Only if ``before`` states a fact with its own subject (not an instruction) and the
    verb agrees with it: "don't" after we/I/you/they, "doesn't"/"never" after it/this.
    """
    head, tail = _plain(before).strip(), _plain(after).strip().lower()
    if starts_imperative(head) or _DIRECTIVE.match(head):
        return False
    if _PLURAL_SUBJECT.match(head):
        return tail.startswith(("don't", "dont", "do not", "never", "not", "no "))
    if _SINGULAR_SUBJECT.match(head):
        return tail.startswith(("doesn't", "does not", "never", "not", "no "))
    return False


#: Verbs a plan's or a user's list item starts with when it tells the agent what to do.
IMPERATIVE_VERBS = frozenset(
    """add allow append apply assert avoid build bump call change check clean clear close commit compute configure
    convert copy create default define delete disable dispatch document drop emit enable ensure export expose extract
    fetch filter find fix format get group handle implement import inject insert install introduce keep leave load
    log look make map mark match merge migrate modify move normalize open parse pass print push put query read
    rebase refactor register remove rename render replace reset resolve restore return reuse revert run save send
    set show skip sort split stage start stop store support switch test track trim update use validate verify wire
    wrap write""".split()
)
_DECISIONS_LEAD = re.compile(
    r"\b(?:decisions?|constraints?|requirements?|rules?|non-goals?|guardrails?|out of scope|do not|don'?t)\b[^.]*:\s*$", re.I)
_DECISIONS_SECTION = re.compile(
    r"\b(?:decisions?|constraints?|requirements?|rules?|non-goals?|guardrails?|out of scope|do not|don'?ts?|"
    r"must not|restrictions?|boundaries|limitations? on)\b", re.I)
#: A list whose every item is forbidden ("Don't:", "Out of scope:", a "Non-goals" section).
_NEGATED_LEAD = re.compile(
    r"(?:^|\b)(don'?ts?|do\s+not|never|avoid|must\s+not|non-goals?|out\s+of\s+scope|not\s+in\s+scope|"
    r"what\s+not\s+to\s+do)\s*:\s*$", re.I)
_NEGATED_SECTION = re.compile(r"^(don'?ts|do\s+not|never|avoid|non-goals?|out\s+of\s+scope|not\s+in\s+scope|"
                              r"what\s+not\s+to\s+do)\b", re.I)
#: A lead-in that introduces consequences or observations, not instructions ("This means:").
_CONSEQUENCE_LEAD = re.compile(r"\b(?:means|result|results|effects?|outcome|consequences?|so|i\.e\.|currently|today|before|now)\s*:\s*$", re.I)


def starts_imperative(text: str) -> bool:
    """Does ``text`` start with a verb in the imperative (``Add ...``, ``Keep ...``)?"""
    m = re.match(r"^\W*([A-Za-z]+)", _plain(text))
    return bool(m) and m.group(1).lower() in IMPERATIVE_VERBS


def units(text: str, *, source: str = "user") -> Iterator[tuple[Unit, list[tuple[str, bool]]]]:
    """Every sentence of ``text`` as a :class:`Unit`, with its clauses.

    A list item knows its list: ``decisions`` when the line before the list introduces
    decisions / constraints / rules, ``imperative_list`` when some item of the list
    starts with an imperative verb (and the lead-in is not "This means:").
    """
    lines = list(prose_lines(text, source=source))
    n = len(lines)
    i = 0
    while i < n:
        line, section, descriptive, item, block = lines[i]
        j = i
        if item:
            while j + 1 < n and lines[j + 1][3] and lines[j + 1][4] == block:
                j += 1
        group = lines[i : j + 1]
        before = lines[i - 1] if i > 0 else None
        lead = _plain(before[0]) if item and before and not before[3] and before[1] == section and before[4] >= block - 1 else ""
        decisions = bool(item and (_DECISIONS_LEAD.search(lead) or _DECISIONS_SECTION.search(section)))
        imperative = bool(item and not _CONSEQUENCE_LEAD.search(lead) and any(starts_imperative(g[0]) for g in group))
        m = (_NEGATED_LEAD.search(lead) or _NEGATED_SECTION.match(section)) if item else None
        negation = _plain(m.group(1)).strip().capitalize() if m else ""
        for line, section, descriptive, item, _ in group:
            for k, s in enumerate(sentences(line)):
                yield (Unit(s, section, descriptive, item, decisions=decisions, imperative_list=imperative,
                            negated_item=negation if k == 0 else "", sentence=s), clauses(s))
        i = j + 1


# --------------------------------------------------------------------------- step 3: classification


_MARKERS = re.compile(
    r"^(?:ok(?:ay)?|yes|yeah|yep|yup|sure|right|fine|great|cool|alright|hmm+|hm+|ah+|oh+|so|and|but|also|then|"
    r"just|please|pls|actually|well|again|now|first|finally|btw|plus|lol|haha|sorry|thanks|thank you|"
    r"intentional|intentionally|important|note|nb|again|instead|otherwise|however|and also|but also|"
    r"like|for now|this time|from now on|going forward|in general|generally|remember|reminder|q|question|fyi)\b[\s,.:!-]*",
    re.IGNORECASE,
)
_NO_MARKER = re.compile(r"^no+\b(?:[\s,.!:-]+(?=(?:don'?t|do not|never|let'?s|please|we|you)\b)|\s*[,.!:-]+\s*)", re.I)
_CONDITION = re.compile(r"^(?:if|when|unless|once|before|after|while|whenever|in case)\b[^,]{0,120},\s*", re.I)

#: After "don't": verbs that make it a dismissal, an opinion or non-necessity, not a prohibition.
_NOT_FORBIDDING = (
    r"know|think|mind|worry|care|understand|see|remember|like|love|need|have\s+to|has\s+to|want|forget|"
    r"hesitate|bother|feel|believe|expect|seem|get\s+(?:why|it|how)|recall|mean|agree|panic|sweat|stress|"
    r"apologi[sz]e|be\s+(?:afraid|sorry|shy)|judge"
)
#: Words in -ing after "no" that are adjectives or nouns, not a forbidden activity ("no existing tests").
_ING_NOT_GERUND = (
    r"existing|missing|matching|pending|remaining|following|corresponding|outstanding|failing|passing|working|running|"
    r"incoming|outgoing|upcoming|ongoing|underlying|leading|trailing|interesting|surprising|nothing|anything|"
    r"something|everything|thing|king|ring|string|spring|morning|evening|warning|padding|heading|setting|ceiling|"
    r"meaning|timing|pricing|listing|during|blessing|offering|bring|sing|swing|wing|being|breaking|blocking|"
    r"dangling|hanging|floating|loading|lasting|changing|growing|rising|interesting|confusing|misleading|"
    r"competing|conflicting|overlapping|duplicating|repeating|recurring|upcoming|surrounding|containing|using"
)
#: After "never": a participle or a third-person verb makes it a description ("never seen", "never fires").
_NOT_BASE_FORM = (
    r"(?!(?:embed|exceed|proceed|succeed|feed|seed|speed|need|heed|shred|bleed|breed|shed|process|pass|access|"
    r"focus|bypass|discuss|address|express|compress|suppress|press|cross|toss|miss|bias)\b)"
    r"(?:[a-z]+ed|[a-z]+(?<!s)s|seen|been|done|gone|known|taken|given|written|broken|forgotten|gotten|shown|"
    r"thought|heard|found|made|said|told|had|got|saw|did|was|were|is|are|has|does)"
)
_NEG_IMPERATIVE = re.compile(
    rf"^(?:please\s+)?(?:(?:do\s+not|don'?t|dont|never|never\s+ever)\s+(?:ever\s+)?(?!{_NOT_FORBIDDING}\b|mind\b|{_NOT_BASE_FORM}\b)[a-z]"
    rf"|(?:make\s+sure|ensure|be\s+sure)\s+(?:that\s+)?(?:you|we|it|nothing|they|the\s+\w+)?\s*(?:don'?t|do\s+not|never|doesn'?t|does\s+not|won'?t|will\s+not|isn'?t)\s+[a-z]"
    rf"|i'?d\s+(?:rather|prefer)\s+(?:that\s+)?(?:you|we|claude)\s+(?:didn'?t|did\s+not|don'?t|do\s+not|not|never)\s+[a-z]"
    rf"|i\s+(?:don'?t|do\s+not)\s+want\s+(?:you|claude|us|the\s+agent|it|them|anyone)\s+to\s+[a-z]"
    rf"|(?:let'?s|let\s+us|lets)\s+(?:not|never)\s+(?!worry|bother|overthink|panic|forget|get\s+ahead)[a-z]"
    rf"|(?:let'?s\s+)?(?:avoid|refrain\s+from)\s+[a-z_`*'\"]"
    rf"|(?:let'?s\s+)?(?:stop|quit|cease)\s+(?:\w+ing\b|it\b|that\b|this\b|now\b)"
    rf"|under\s+no\s+circumstances"
    rf"|no\s+(?:more\s+)?(?!{_ING_NOT_GERUND}\b)[a-z]+(?:-[a-z]+)*ing\b"
    rf"|leave\s+.{{1,60}}\s+(?:alone|as[- ]is|untouched|unchanged|intact|in\s+place|where\s+(?:it|they)\s+(?:is|are))\b"
    rf"|(?:you|we|u)\s+(?:must|should|shall|may)\s+(?:not|never)\s+(?!need|have\s+to)[a-z]"
    rf"|(?:you|we)\s+(?:mustn'?t|shouldn'?t|shan'?t)\s+(?!need|have\s+to)[a-z]"
    rf"|(?:you|we)\s+(?:are|'re)\s+not\s+(?:allowed|permitted|supposed)\s+to"
    rf"|(?:you|we)\s+(?:can'?t|cannot|can\s+not)\s+(?:ever\s+)?(?:touch|change|modify|edit|delete|remove|push|commit|merge|use|add|run)\b"
    rf")",
    re.IGNORECASE,
)
#: "It should not be cleared by X", "this must never be exposed" (a requirement on a thing).
_REQUIREMENT = re.compile(
    r"^(?:it|this|that|they|these|those|the\s+[\w`.*-]+(?:\s+[\w`.*-]+){0,3}|`[^`]+`(?:\s+\w+)?)\s+"
    r"(?:must|should|shall)\s+(?:not|never)\s+(?:be|get|ever\s+be)\s+\w+(?:ed|en|wn|ne|t)\b",
    re.IGNORECASE,
)
#: "it needs no date", "the file should have no status".
_NEEDS_NO = re.compile(
    r"^(?:it|this|that|they|the\s+[\w`.-]+(?:\s+[\w`.-]+){0,2})\s+(?:needs|need|should\s+have|must\s+have|has\s+to\s+have|gets|should\s+get)\s+no\s+[a-z`]",
    re.IGNORECASE,
)
#: A "no X" noun phrase (a design decision when it stands in a list of them).
_NO_NP = re.compile(r"^no\s+(?:more\s+)?(?!more\b|longer\b|one\b|need\b|idea\b|problem|worries|way\b|matter\b|doubt|wait\b|change[sd]?\b|answer|issue|luck|clue|rush|pressure|longer)[`*\w][\w`*./-]*(?:\s+[\w`*./-]+){0,6}$", re.I)
#: A "no X" that is a directive wherever it stands: additions refused, or said with force.
_NO_NP_DIRECTIVE = re.compile(
    r"^no\s+(?:new|extra|additional|further|external|third[- ]party|other)\b|\b(?:please|pls|whatsoever|"
    r"anymore|any\s+more)\s*[.!]*$",
    re.IGNORECASE,
)
_NO_NP_BAD_TAIL = re.compile(
    r"\b(?:needed|required|necessary|found|available|provided|yet|left|present|exists?|happens?|fires?|is|are|was|were|"
    r"has|have|had|does|did|will|would|can|could|should|gets?|returns?|matches|means|works?)\b|→|->|=>",
    re.IGNORECASE,
)
_PRESERVE = re.compile(
    r"^(?:please\s+)?keep\s+(?:"
    r"(?:it|them|this|that|these|those|everything|all\s+(?:of\s+)?(?:it|them))\s+(?:local|private|secret|uncommitted|unpushed|out\s+of|off\b)"
    r"|(?:all\s+)?(?:the|our|my|your|existing|current|both)\s+(?!same\b|track|\w+\s+in\s+mind)[\w`*-]+"
    r"|`[^`]+`"
    r")",
    re.IGNORECASE,
)
_PRESERVE_BAD = re.compile(
    r"\b(?:simple|short|minimal|clean|small|concise|consistent|tidy|brief|separate|together|in\s+mind|in\s+sync|track|going|up|"
    r"updated|open)\b", re.IGNORECASE,
)
_DEFER = re.compile(
    r"^(?:(?:let'?s|we\s+(?:can|should|will)|please)\s+)?(?:defer|postpone|punt\s+on|hold\s+off\s+on|park)\s+(?!until\b|to\b|till\b|when\b|if\b)[\w`*]"
    r"|^(?:let'?s\s+|please\s+)?leave\s+(?:it|that|this|those|them|the\s+\w+(?:\s+\w+){0,3})\s+(?:for|until|till)\s+"
    r"(?:later|now|another|a\s+(?:later|follow|separate|future)|the\s+next|next|phase|v\d)"
    r"|^(?:let'?s\s+)?(?:do|handle|tackle|address)\s+(?:it|that|this|those|them)\s+later\b"
    r"|\bdefer(?:red)?\s+(?:to|until)\s+(?:phase|v\d|later|the\s+next|a\s+later|a\s+follow)",
    re.IGNORECASE,
)
_RESTRAINT = re.compile(
    r"\bi'?ll\s+(?:do|handle|take\s+care\s+of|merge|commit|push|run|deploy|release|instruct|decide|review)\b"
    r"(?:\s+(?:it|that|this|them|those|the\s+\w+|you))?(?:\s+\w+){0,3}?\s*(?:manually|myself|by\s+hand|over\s+there|later|the\s+next\s+steps?|next)\b"
    r"|\bthen\s+i'?ll\s+(?:instruct|tell\s+you|let\s+you\s+know|decide)"
    r"|\b(?:wait\s+for\s+(?:me|my)\b|check\s+with\s+me\s+(?:before|first)|ask\s+(?:me\s+)?(?:before|first)\b|"
    r"(?:should|must)\s+(?:always\s+)?ask\s+(?:me\s+)?(?:before|first|or\b)|(?:specifically\s+)?be\s+told\s+to|"
    r"only\s+when\s+i\s+(?:say|tell|ask)|until\s+i\s+(?:say|tell|ask|confirm|approve))",
    re.IGNORECASE,
)
_IMPLICIT = re.compile(
    r"^no+\s*[,.!:-]+\s*(?:(?:just|please)\s+)?(?:ignore|skip|leave|forget\s+about|drop)\s+(?:it|that|this|them|those|the)\b"
    r"|^(?:ok(?:ay)?|fine|alright)?[\s,.]*do\s+nothing\b"
    r"|^no+\s*[,.!:-]+\s*(?:this|that|it)(?:'s|\s+is)\s+(?:fine|ok(?:ay)?|good|correct|intended|right)\b"
    r"|^no+\s*[,.!:-]+\s*i\s+(?:did\s+not|didn'?t)\s+(?:say|ask)"
    r"|^(?:yes|yeah|ok(?:ay)?|sure)\s*[,.]?\s*but\s+(?:we|you)\s+(?:don'?t|do\s+not)\s+need\s+to\s+[a-z]",
    re.IGNORECASE,
)
#: Directive sentence frames, for the contrastive form "..., not Y".
_DIRECTIVE = re.compile(
    r"^(?:(?:please|just|so|then|also|and|like)\s+)*(?:let'?s|we\s+(?:should|need\s+to|must|want|have\s+to)|i\s+want\b|"
    r"you\s+(?:should|need\s+to|must)|i\s+(?:want|need|would\s+like|'d\s+like)\s+(?:you\s+)?to|it\s+would\s+be\s+good\s+to|"
    r"make\s+sure|ensure|use|go|write|put|keep|make|add|return|show|summari[sz]e|store|send|read|run|create|"
    r"note|start|only)\b",
    re.IGNORECASE,
)
_CONTRAST = re.compile(
    r"(?:,\s*(?:but\s+)?|\s+but\s+|^)not\s+(?!only\b|just\b|sure\b|yet\b|really\b|necessarily\b|always\b|that\b|"
    r"a\s+big\s+deal|an?\s+issue|bad\b|needed\b|required\b|necessary\b|possible\b|working\b|true\b|correct\b|the\s+case)"
    r"([\w`_*'\"-].{2,120})$",
    re.IGNORECASE,
)
_NOT_ING_BUT = re.compile(r"^(?:like\s+)?not\s+(\w+ing\b.{2,100}?)\s+but\s+[a-z]", re.IGNORECASE)

_OPINION = re.compile(
    r"^(?:i\s+(?:don'?t\s+|do\s+not\s+)?(?:think|feel|believe|guess|suppose|wonder|reckon|doubt|am\s+not\s+sure|'m\s+not\s+sure|"
    r"hope|mean|assume|suspect|bet)|imo|imho|in\s+my\s+opinion|it\s+seems|maybe|perhaps|probably|i'?m\s+(?:not\s+)?sure)\b",
    re.IGNORECASE,
)
_POSSIBILITY = re.compile(
    r"\b(?:may|might|could|would)\s+(?:not|never)\b|\b(?:mightn'?t|couldn'?t|wouldn'?t)\b|"
    r"\b(?:don'?t|doesn'?t|do\s+not|does\s+not|didn'?t)\s+(?:have|need)\s+to\b|\bneedn'?t\b|\bno\s+need\b|"
    r"\bnot\s+(?:needed|necessary|required)\b|\bnever\s+mind\b|\bno\s+worries\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^(?:why|how|what|which|who|whom|whose|where|any\s+reason|is\s+there|are\s+there)\b|"
    r"^(?:is|are|was|were|do|does|did|can|could|would|will|shall|should|has|have|had|isn'?t|aren'?t|don'?t|doesn'?t|"
    r"didn'?t|shouldn'?t|couldn'?t|wouldn'?t|won'?t|can'?t)\s+(?:we|you|i|it|this|that|these|those|there|they|he|she|"
    r"the|a|an|any|our|your|my|its|claude|anyone|someone)\b",
    re.IGNORECASE,
)
#: A question that asks for a negative action: "can we not push the tests to the end?".
_NEG_REQUEST = re.compile(
    r"^(?:(?:can|could|would)\s+(?:we|you)|are\s+we\s+able\s+to|is\s+it\s+possible\s+to)\s+(?:please\s+)?"
    r"(?:not|avoid|stop|refrain\s+from|never)\s+(?!simply\b|just\b)[a-z]",
    re.IGNORECASE,
)


def _strip_markers(clause: str) -> str:
    """Remove leading discourse markers ("ok, also", "no,", "please") and a leading condition."""
    prev = None
    s = clause.strip(" \t*_-\"'“”‘’")
    while s != prev:
        prev = s
        s = _MARKERS.sub("", s, count=1).strip(" ,.:!-*_\"'“”")
        s = _NO_MARKER.sub("", s, count=1).strip(" ,.:!-*_\"'“”")
        s = _CONDITION.sub("", s, count=1)
    return s


def _strip_discourse(clause: str) -> str:
    """The clause as written, without the discourse markers that open it ("ok, also", "no,", "please")."""
    prev, s = None, clause.strip()
    while s != prev:
        prev = s
        s = _MARKERS.sub("", s, count=1)
        s = _NO_MARKER.sub("", s, count=1).strip(" ,.:!-")
    return s or clause


def _plain(s: str) -> str:
    """Markdown emphasis and curly quotes away, for pattern matching (not for the stored text)."""
    s = s.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return re.sub(r"(?<!\w)[*_]{1,3}|[*_]{1,3}(?!\w)", "", s)


def is_question(sentence: str) -> bool:
    s = _plain(sentence).strip()
    return s.rstrip(" .)!\"'`*_").endswith("?") or bool(_QUESTION_START.match(_strip_markers(s)))


def classify(unit: Unit, clause: str, parenthetical: bool, *, source: str) -> str | None:
    """The form of the prohibition ``clause`` states, or None (see the module docstring)."""
    raw = _plain(clause).strip()
    sent = _plain(unit.sentence or unit.text)
    if len(raw) < 4 or raw[0] in "\"“'" and not raw.lower().startswith(("'s ", "'ll ")):
        return None  # too short, or a quotation of someone else's words
    if is_question(sent) or _IMPLICIT.match(_plain(sent)):  # (sentence_forms reads those whole)
        return None
    c = _strip_markers(raw)
    if len(c) < 4 or _OPINION.match(c) or _POSSIBILITY.search(c):
        return None
    if unit.descriptive:  # plan sections that describe: only explicit imperatives
        return "explicit" if _NEG_IMPERATIVE.match(c) and not c.lower().startswith("no ") else None
    if _NEG_IMPERATIVE.match(c) or _REQUIREMENT.match(c) or _NEEDS_NO.match(c):
        return "explicit"
    if _NO_NP.match(c) and not _NO_NP_BAD_TAIL.search(c) and (
            not re.match(r"no\s+more\b", c, re.I) or _NO_NP_DIRECTIVE.search(c)):  # "no more X": a result, unless said as an order
        # "no X" is a decision only inside a decision list, a parenthetical, or a plan's list item.
        if (unit.decisions or unit.imperative_list or (parenthetical and _directive_host(unit))
                or _NO_NP_DIRECTIVE.search(c)):
            return "explicit"
    if _PRESERVE.match(c) and not _PRESERVE_BAD.search(c):
        return "preserve"
    if _DEFER.search(c):
        return "defer"
    if _RESTRAINT.search(c):
        return "restraint"
    return None


def _directive_host(unit: Unit) -> bool:
    """The sentence a parenthetical stands in names a decision: a bold label, an instruction, decisions."""
    host = _strip_markers(_plain(_PAREN.sub(" ", unit.text))).strip(" :")
    return (bool(re.fullmatch(r"[\w `./-]{1,60}", host) and re.search(r"\*\*", unit.text))
            or starts_imperative(host) or bool(re.search(r"\b(?:decisions?|constraints?|rules?)\b", host, re.I)))


def sentence_forms(unit: Unit) -> list[tuple[str, str]]:
    """Forms read from the whole sentence: a request for a negative action, a decline, a contrast."""
    s = _plain(unit.text).strip()
    core = _strip_markers(s)
    if _NEG_REQUEST.match(core):
        return [("explicit", s)]
    m = _IMPLICIT.match(s)
    if m:
        end = re.search(r"[,.;!?:]", s[m.end():])
        return [("implicit", s[: m.end() + end.start()] if end else s)]
    if unit.descriptive:
        return []
    return [("contrastive", c) for c in contrastive(unit)]


def contrastive(unit: Unit) -> list[str]:
    """The contrast a directive sentence draws: "do X, not Y" (the whole), "not X-ing but do Y" (the "not" part)."""
    core = _strip_markers(_plain(_PAREN.sub(" ", unit.text)).strip())
    if is_question(core) or _OPINION.match(core) or _POSSIBILITY.search(core):
        return []
    m = _NOT_ING_BUT.match(core)
    if m:
        return [f"not {m.group(1)}"]
    if _DIRECTIVE.match(core) and _CONTRAST.search(core):
        return [core]
    return []


# --------------------------------------------------------------------------- summaries


_STOPWORDS = frozenset(
    """a an the and or nor of to in on at by for from with into onto over under about as is are was were be been
    being am do does did doing done not no never don't dont mustn't shouldn't won't didn't doesn't cannot can't can
    must should may might will would shall could please you your yours we our us i me my it its this that these those
    there here they them their he she his her any all some such also just only ever then than so very too
    avoid avoided avoiding avoids refrain refrained forbidden forbid forbade prohibited prohibit allowed permitted
    user users agent assistant claude asked ask asks told tell said say says requested request wants want wanted
    instructed instruction instructions reminded reminder note noted make sure keep kept keeping circumstances
    without let let's lets ok okay yes yeah yep like need needs needed go going get got one thing things way
    actually really still now yet again even more most much many well maybe perhaps think feel guess
    explicitly specifically intentionally intentional deliberately important""".split()
)
_WORD = re.compile(r"[a-z0-9][a-z0-9_'./~-]*")
_SUMMARY_NEGATION = re.compile(
    r"\b(?:not|no|never|none|nothing|don't|dont|doesn't|didn't|won't|wouldn't|mustn't|shouldn't|cannot|can't|"
    r"avoid\w*|forb[ia]d\w*|prohibit\w*|without|refrain\w*|instead|rather|except|exclud\w*|skip\w*|"
    r"declin\w*|reject\w*|against|ignor\w*|omit\w*|dropp?\w*|revert\w*|remov\w*|stop\w*|only|"
    r"out\s+of\s+scope|non-goals?|defer\w*|later)\b",
    re.IGNORECASE,
)
_SUMMARY_CUES = {
    "preserve": re.compile(r"\b(?:keep\w*|kept|preserv\w*|retain\w*|intact|unchanged|untouched|stays?|remain\w*|local|leave|left)\b", re.I),
    "defer": re.compile(r"\b(?:defer\w*|later|postpon\w*|follow[- ]?up|separate|future|out of scope|next phase|phase \d+)\b", re.I),
    "restraint": re.compile(r"\b(?:instruct\w*|manual\w*|himself|herself|themselves|user will|user would|wait\w*|ask\w*|told|tell)\b", re.I),
}


_STEMMER = snowballstemmer.stemmer("english")


@lru_cache(maxsize=65_536)
def _stem(word: str) -> str:
    """Snowball's English (Porter2) stem: "firing"/"fire", "duplication"/"duplicate", "files"/"file"."""
    word = word.strip("./-~'`")
    if word.endswith("'s"):
        word = word[:-2]
    if not word.isalpha():  # paths and identifiers stay whole
        return word
    return _STEMMER.stemWord(word)


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about: lower-cased, light-stemmed, no stop words."""
    out = set()
    for raw in _WORD.findall(normalize(_plain(text)).replace("’", "'")):
        if raw in _STOPWORDS or raw.strip("'") in _STOPWORDS:
            continue
        w = _stem(raw)
        if len(w) > 1 and w not in _STOPWORDS:
            out.add(w)
    return frozenset(out)


def _key_text(p: Prohibition) -> str:
    """The part of a prohibition that names what is forbidden: markers, reasons in parentheses away."""
    s = _PAREN.sub(" ", p.text)
    s = _strip_markers(_plain(s))
    return s or p.text


def _flat(text: str) -> str:
    """Text for verbatim comparison: normalized, markdown emphasis and quotes away, spaces collapsed."""
    s = _plain(normalize(text)).replace("`", "")
    s = re.sub(r"[\"'“”‘’]", "'", s)
    return " ".join(s.split())


@dataclass
class SummaryIndex:
    """A summary read once for matching: its flat text and its sentences' content words and cues."""

    flat: str
    sentences: list[tuple[str, frozenset[str]]] = field(default_factory=list)

    @classmethod
    def of(cls, summary: str) -> "SummaryIndex":
        out = []
        for line in summary.replace("\r", "\n").split("\n"):
            for s in re.split(r"(?<=[.!?;])\s+", line):
                if s.strip():
                    out.append((s, content_words(s)))
        return cls(_flat(summary), out)


@dataclass(frozen=True)
class ProhibitionMatcher:
    """Finds prohibitions in raw text and decides whether a summary still carries them.

    * :meth:`prohibitions` — the extractor (module docstring), restricted to ``forms``.
    * :meth:`carries` — verbatim (the prohibition's text, or its key part without
      markers and parenthesized reasons, appears in the summary), or paraphrased: one
      summary sentence has a cue of the same polarity (a negation; for ``preserve``
      also keep/retain/unchanged, for ``defer`` later/deferred, for ``restraint``
      instruct/manual/ask) and at least ``threshold`` of the key part's content words.
      A prohibition without content words is carried only verbatim.

    ``threshold`` in [0, 1]: lower keeps more paraphrases (fewer false alarms, more
    misses); higher flags more paraphrases as dropped. Synonyms never match.
    """

    threshold: float = DEFAULT_MATCH_THRESHOLD
    forms: frozenset[str] = DEFAULT_FORMS

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"match threshold must be in [0, 1], got {self.threshold}")
        unknown = set(self.forms) - set(FORMS)
        if unknown:
            raise ValueError(f"unknown prohibition form(s): {', '.join(sorted(unknown))} (known: {', '.join(FORMS)})")

    # ---- extraction

    def prohibitions(self, text: str | None, *, source: str = "user",
                     origin: tuple[str, int] | None = None) -> list[Prohibition]:
        """Prohibitions of a raw text, in order, de-duplicated by id."""
        out: dict[str, Prohibition] = {}
        if not text:
            return []
        for unit, parts in units(text, source=source):
            found: list[tuple[str, str]] = []
            if unit.negated_item and not is_question(unit.text):
                found.append(("explicit", f"{unit.negated_item}: {unit.text.rstrip(' .;')}"))
            for clause, par in parts:
                form = classify(unit, clause, par, source=source)
                if form is not None:
                    found.append((form, clause))
            if not found:
                found = sentence_forms(unit)
            for form, clause in found:
                if form not in self.forms:
                    continue
                text = clause if form == "implicit" else _strip_discourse(clause)  # a decline's "no," is its point
                p = make_prohibition(text, source=source, form=form, origin=origin)
                out.setdefault(p.id, p)
        return list(out.values())

    # ---- carrying

    def carries(self, summary: str | SummaryIndex | None, prohibition: Prohibition) -> bool:
        """Does ``summary`` still state ``prohibition`` (verbatim or paraphrased)?"""
        if not summary:
            return False
        index = summary if isinstance(summary, SummaryIndex) else SummaryIndex.of(summary)
        key = _key_text(prohibition)
        for t in (prohibition.text, key):
            ft = _flat(t)
            if len(ft) >= 6 and ft in index.flat:
                return True
        wanted = content_words(key)
        if not wanted:
            return False
        cue = _SUMMARY_CUES.get(getattr(prohibition, "form", "explicit"))
        need = self.threshold * len(wanted)
        for sentence, words in index.sentences:
            if len(wanted & words) < need:
                continue
            if _SUMMARY_NEGATION.search(sentence) or (cue is not None and cue.search(sentence)):
                return True
        return False

    def carried(self, summary: str | None, pool: Iterable[Prohibition]) -> list[Prohibition]:
        """The prohibitions of ``pool`` that ``summary`` carries, in pool order."""
        if not summary:
            return []
        index = SummaryIndex.of(summary)
        return [c for c in pool if self.carries(index, c)]
