"""Prohibitions in what a user (or a plan, a rule file, a system prompt) tells an agent.

The extractor behind ``raw_negative_constraints`` of the compaction-log adapters, and
the matcher that decides whether a summary still carries a prohibition
(``negative_constraints``). Designed from, and measured against, hand-labelled real
logs (``bench/eval_real_logs.py``, results in ``docs/REAL_LOGS.md``); the rules it
implements are written down in ``docs/REAL_LOGS.md`` ("What counts").

Extraction, in three steps:

More (the module notes): docs/COMPACTION_LOGS.md, section ``stream/adapters/compaction/prohibitions.py``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import snowballstemmer

from stream.domain.keys import text_key


class _Lazy:
    """A module regex compiled on its first use, then put in its global's place (imports stay cheap:
    a hook call compiles only the patterns it runs); ``.pattern`` needs no compiling."""

    __slots__ = ("name", "pattern", "flags_given", "compiled")
    name: str
    pattern: str
    flags_given: int
    compiled: re.Pattern[str] | None

    def __init__(self, name: str, pattern: str, flags: int = 0) -> None:
        self.name, self.pattern, self.flags_given, self.compiled = name, pattern, flags, None

    def __getattr__(self, attr: str) -> Any:
        compiled = self.compiled
        if compiled is None:
            compiled = self.compiled = re.compile(self.pattern, self.flags_given)
            globals()[self.name] = compiled
        return getattr(compiled, attr)


#: Default share of a prohibition's key words a summary sentence (with a cue of the
#: same polarity) must contain to count as carrying it. ``--match-threshold`` sets it.
DEFAULT_MATCH_THRESHOLD = 0.7

SOURCES = ("user", "plan", "rule_file", "system")
#: ``explicit``: an imperative negation; the others are the extra classes of the labels.
FORMS = ("explicit", "preserve", "contrastive", "defer", "restraint", "implicit")
#: The forms extracted by default (``ProhibitionMatcher(forms=...)`` changes it).
DEFAULT_FORMS = frozenset(FORMS)


# --------------------------------------------------------------------------- model


#: The DESIGN.md §3 key of a string (NFKC, casefold, whitespace collapsed), under its old name here.
normalize = text_key


@dataclass(frozen=True)
class Prohibition:
    """One prohibition: ``id`` (hash of the normalized ``text``), its source and place.

    ``origin`` is a ``(key, value)`` pair such as ``("line", 104)`` (a transcript's
    1-based physical line) or ``("event", 12)`` (a conversation's event index), or None.
    ``about``: for an answer that names no thing of its own, the question it answers (the
    matcher then looks for the question's action; the id and the wire object ignore it).
    """

    id: str
    text: str
    source: str = "user"
    form: str = "explicit"
    origin: tuple[str, int] | None = None
    about: str = (
        ""  # the question an elliptical answer ("not in this phase") answers: what it is about (not on the wire)
    )
    cue: str = ""  # the extraction cue that read it (:data:`EXTRACTION_CUES`; not on the wire, not in the id)

    @property
    def polarity(self) -> str:  # the trajectory adapters' Constraint has one too
        return "prohibition"

    def as_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"id": self.id, "text": self.text, "source": self.source, "form": self.form}
        if self.origin is not None:
            wire[self.origin[0]] = self.origin[1]
        return wire


def make_prohibition(text: str, *, source: str = "user", form: str = "explicit",
                     origin: tuple[str, int] | None = None, about: str = "", cue: str = "") -> Prohibition:
    text = " ".join(text.split())
    digest = hashlib.sha256(normalize(text).encode("utf-8")).hexdigest()[:12]
    return Prohibition(f"prohibition:{digest}", text, source, form, origin, " ".join(about.split()), cue)


# --------------------------------------------------------------------------- step 1: text


_WRAPPER = _Lazy("_WRAPPER",
    r"<(system-reminder|local-command-stdout|local-command-stderr|local-command-caveat|bash-input|bash-stdout|"
    r"bash-stderr|command-message|command-name|task-notification|agent-notification|user-prompt-submit-hook|"
    r"teammate-message|ide_opened_file|ide_selection|ide_diagnostics|"
    r"[a-z]+-notification)\b[^>]*>.*?(?:</\1>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
_ARGS = _Lazy("_ARGS", r"</?command-args>", re.IGNORECASE)
_NOT_WORDS = (
    "[Request interrupted", "Operation stopped by hook", "Caveat:", "This session is being continued",
    "Base directory for this skill",
)
_FENCE = _Lazy("_FENCE", r"^\s*(```|~~~)")
#: Lines that are output pasted into a message, not words addressed to the agent.
_PASTED = _Lazy("_PASTED",
    r"^\s*(?:[│╭╰├└┌┐┘┬┴┼─━⎿⏺❯▶●○◆■→↳⋮]|\$\s|#\s*\$|>>>|\+\+\+|---\s|@@|[+-]\t|=== |\{\s*\"|\[\s*\{|\"[\w-]+\"\s*:|"
    r"(?:fatal|error|warning|panic|hint|remote|note|go|npm|ok|FAIL|PASS|---\s?FAIL|E\d{3,})(?::|\t|\s{2,}|$)|"
    r"npm\s+(?:ERR!|WARN|warn|notice)(?:\s|$)|Traceback\b|"
    r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d|at \S+\(|File \"|create mode|delete mode|modified:|new file:|On branch|"
    r"Your branch|Changes (?:not )?(?:staged|to be)|commit [0-9a-f]{7,}|Author:|Date:|\||"
    # log lines ("LOG  [Storage] ...", "[Reanimated] ..."), HTTP requests / responses and headers, config keys
    r"(?:LOG|WARN|WARNING|ERROR|INFO|DEBUG|TRACE|FATAL|CRITICAL)\b\s*[\[:(]|\[[\w .:/@-]{1,40}\]\s|"
    r"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(?:/|https?:)|HTTP/\d|"
    r"[A-Z][A-Za-z0-9]*(?:-[A-Z][A-Za-z0-9]*)+:\s|(?:Host|Accept|Authorization|Cookie|Set-Cookie|Server|Connection|Origin|"
    r"Referer|Pragma|Vary|Expires|Location):\s|[a-z][a-z0-9]*(?:[_.-][a-z0-9]+)+\s*[:=]\s|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+=)",
)
#: A message that opens by announcing that what it holds is someone else's output ("These are all logs I got ...").
_PASTE_OPENING = _Lazy(
    "_PASTE_OPENING",
    r"^(?:(?:these|those)\s+are|here\s+(?:are|is)|this\s+is|i\s+(?:got|get|see)|got)\b[^.!?\n]{0,40}?"
    r"\b(?:logs?|output|errors?|warnings?|traces?|stack\s*traces?|console)\b",
    re.I,
)
#: A review comment pasted from a bot (title, "High Severity", body, "Fix in ..."): someone else's words.
_REVIEW_SEVERITY = _Lazy("_REVIEW_SEVERITY", r"^(?:low|medium|high|critical)\s+severity$", re.IGNORECASE)
_REVIEW_END = _Lazy("_REVIEW_END", r"^(?:fix in (?:cursor|web)|<!--|---+$)", re.IGNORECASE)
#: A lead-in that announces someone else's text on the lines below it (not "my notes:").
_PASTE_LEAD = _Lazy("_PASTE_LEAD",
    r"\b(?:here'?s|here\s+(?:is|are)|this\s+is|these\s+are|got|received|(?:wrote|said|sent|reported|commented|posted|says)|"
    r"from|pasting|pasted|copied|copy|quot(?:e|ing))\b(?![^:]*\b(?:my|our|mine)\b)[^.!?:]{0,60}\b(?:issues?|bug\s+reports?|reports?|"
    r"tickets?|errors?|logs?|output|traces?|traceback|stack\s*trace|reviews?|comments?|messages?|e-?mails?|feedback|"
    r"descriptions?|complaints?|threads?)\b[^.!?:]{0,40}:\s*$|^(?:the\s+)?(?:issue|ticket|bug\s+report|error|log|output|"
    r"review|comment|e-?mail|message)\s+(?:says|reads|is)\s*:\s*$",
    re.IGNORECASE,
)
_PASTE_TITLE = _Lazy("_PASTE_TITLE", r"^(?:title|subject)\s*:\s+\S", re.IGNORECASE)
#: A long user-side message that opens by casting its reader in a role ("You are the coordinator of ...") is a prompt
#: template a tool wrote (a swarm launcher, a command file), not the user's typed words.
_ROLE_OPENING = _Lazy(
    "_ROLE_OPENING",
    r"^\W{0,6}(?:(?:you\s+are|you're|you\s+will\s+act\s+as|act\s+as)\s+(?:a|an|the)|tu\s+es\s+(?:un|une|le|la)|vous\s+êtes\s+(?:un|une|le|la)|"
    r"du\s+bist\s+(?:ein|eine|der|die|das)|eres\s+(?:un|una|el|la)|sei\s+(?:un|una|il|la)|você\s+é\s+(?:um|uma|o|a)|ты\s+—?\s*\w+)\s+\w"
    r"|^\W{0,6}(?:あなたは|你是|당신은)", re.IGNORECASE | re.MULTILINE)
_PROMPT_MESSAGE_CHARS = 2_000
#: What a generated prompt is built of and a typed one is not (round 10: three users typed their own "You are an expert
#: ... developer" prompt as plain paragraphs and lists; their rules are theirs): markdown headings, XML-like tag lines,
#: template placeholders (not banner rules: a typed prompt has them too).
_TEMPLATE_MARK = _Lazy(
    "_TEMPLATE_MARK",
    r"^[ \t]*(?:#{1,6}[ \t]+\S|</?[a-z][\w-]*(?:\s[^>\n]*)?>[ \t]*$)|\{\{[^{}\n]{1,40}\}\}|\$ARGUMENTS\b",
    re.MULTILINE,
)
#: A user-side message longer than this is mostly pasted material (a document, a template, a status dump): only its
#: lead-in and its close (:data:`_FRAME_CHARS` each, whole lines) are read as the user's words (folds DEV, T, T2, H:
#: 3 gold rules in such messages, all in the frame; 125 reviewed negatives, mostly in the body).
_PASTED_MESSAGE_CHARS = 16_000
_FRAME_CHARS = 1_000
#: A lead-in to a prompt the user writes for another model (an agent being built): the indented lines under it are
#: that model's instructions, not the user's to this agent ("System Prompt:", "Description for Orchestrator routing:").
_PROMPT_LEAD = _Lazy(
    "_PROMPT_LEAD",
    r"^(?:[-*]\s+)?(?:\*\*)?(?:(?:system|user|developer|assistant|agent|tool|router)\s*)?prompt(?:\s+(?:text|template))?\s*(?:\(\w+\))?"
    r"(?:\*\*)?\s*:(?:\*\*)?\s*$|^(?:description|instructions?|rules?)\s+(?:for|of)\s+(?:the\s+)?(?:[\w-]+\s+){0,3}?"
    r"(?:agent|model|orchestrator|llm|bot|routing|sub-?agent|assistant)\b[^:]{0,40}:\s*$|"
    r"^(?:prompt\s+(?:système|systeme|utilisateur)|system-?prompt|systemprompt|システムプロンプト|系统提示词?|系統提示詞?|시스템\s*프롬프트)\s*:\s*$",
    re.IGNORECASE,
)
#: A list item's marker: a dash or number, or a pictograph used as a bullet ("❌ no unwrap", "✅ tests").
_LIST_ITEM = _Lazy(
    "_LIST_ITEM", r"^\s*(?:[-*+•]|\d+[.)]|[a-zA-Z][.)]|[\u2190-\u21ff\u2600-\u27bf\U0001f000-\U0001faff]\ufe0f?)\s+"
)
_HEADING = _Lazy("_HEADING", r"^\s*#{1,6}\s+(.*)$")
#: Plan sections that describe rather than direct: there, only explicit imperatives count.
_DIRECTIVE_SECTION = _Lazy("_DIRECTIVE_SECTION",
    r"\b(?:step|fix|implement\w*|change|add|update|approach|plan|design|decisions?|solution|tasks?|todo|remove|"
    r"create|refactor|migrat\w*|write|wire|rules?|constraints?|requirements?|guidelines?|scope|do|don'?t|must|"
    r"phase|stage|part|milestone|deliverables?|work|changes)\b",
    re.IGNORECASE,
)
_DESCRIPTIVE_SECTION = _Lazy("_DESCRIPTIVE_SECTION",
    r"\b(?:context|background|overview|summary|problem|bugs?\b|analysis|root cause|cause|current|existing|"
    r"motivation|why|risks?|architecture|output|differences?|notes?|what'?s (?:already )?done|status|"
    r"references?|files?|critical files|appendix|observed|symptoms?|diagnosis|findings)\b",
    re.IGNORECASE,
)
#: ... and these describe whatever else their heading says (test setups, expected outcomes).
_TEST_SECTION = _Lazy("_TEST_SECTION",
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
    before: tuple[
        str, ...
    ] = ()  # the sentences before it in its line / paragraph (typed words, not a plan's description)


def _frame(text: str) -> str:
    """The lead-in and the close of a very long message, whole lines, a blank line between them."""
    head = text[:_FRAME_CHARS].rsplit("\n", 1)[0] if "\n" in text[:_FRAME_CHARS] else text[:_FRAME_CHARS]
    tail = text[-_FRAME_CHARS:].split("\n", 1)[-1] if "\n" in text[-_FRAME_CHARS:] else text[-_FRAME_CHARS:]
    return f"{head}\n\n{tail}"


def _is_template(text: str) -> bool:
    """A long prompt that casts its reader in a role is a tool's template (a swarm launcher, a command file) when it is
    built like one: a title or banner before the role line, or a document's headings / tag lines / placeholders.
    One that opens with the role line and is plain paragraphs and lists is the user's own typed prompt."""
    if not _ROLE_OPENING.search(text[:600]):
        return False
    opening = _WRAPPER.sub("", text).lstrip()
    return not _ROLE_OPENING.match(opening) or len(_TEMPLATE_MARK.findall(text)) >= 2


#: A long message longer than this is not read as the user's own words by :func:`own_words` (a paste, mostly).
OWN_WORDS_CHARS = 8_000


def own_words(text: str) -> bool:
    """Whether a long user-side message is the user's own writing, not a pasted document: no code fence, no markdown
    heading, no line that is an XML-like tag, no template placeholder (IDE notices aside), at most
    :data:`OWN_WORDS_CHARS`. Paragraphs, numbered points and dashes are what people type; headings, fences and tag
    lines are what documents, templates and skill files are built of."""
    body = _WRAPPER.sub("\n", text)
    return (len(body) <= OWN_WORDS_CHARS and not any(_FENCE.match(line) for line in body.split("\n"))
            and not _TEMPLATE_MARK.search(body))


def prose_lines(text: str, *, source: str = "user") -> Iterator[tuple[str, str, bool, bool, int]]:
    """``(line, section heading, descriptive section, list item, block)`` of the prose in ``text``.

    Consecutive list items share a ``block`` number; a lead-in line and the list right
    under it are consecutive blocks.

    Pasted material is skipped: fences and their content, quoted lines, output and log
    lines, tables, wrapper tags (``<command-args>`` content kept).
    """
    if not text:
        return
    if any(text.lstrip().startswith(p) for p in _NOT_WORDS) or _PASTE_OPENING.match(text.lstrip()):
        return
    if source == "user" and len(text) > _PROMPT_MESSAGE_CHARS and _is_template(text):
        return  # a long prompt that casts the agent in a role, built like a tool's template, not typed words
    if source == "user" and len(text) > _PASTED_MESSAGE_CHARS:
        text = _frame(text)
    text = _WRAPPER.sub("\n", text)
    text = _ARGS.sub("\n", text)
    if source == "plan":
        text = re.sub(r"^\s*Implement the following plan:\s*", "", text)
    in_fence = False
    section, descriptive = "", False
    lines = _negated_columns(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    buf: list[str] = []  # a paragraph of hard-wrapped lines
    buf_item = False
    quoting = False
    reviewing = False
    pasting = 0  # 1: a lead-in announced someone else's text; 2: inside that pasted paragraph
    prompt_indent = -1  # >= 0: inside a prompt for another model, lines indented deeper than its lead-in

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
        if prompt_indent >= 0 and stripped:
            if len(raw) - len(raw.lstrip()) > prompt_indent:
                continue
            prompt_indent = -1
        if stripped and _PROMPT_LEAD.match(stripped):
            yield from flush()
            prompt_indent = len(raw) - len(raw.lstrip())
            continue
        if not stripped:
            yield from flush()
            quoting = False
            pasting = 1 if pasting == 1 else 0
            continue
        if pasting or (not buf and _PASTE_TITLE.match(stripped)):
            pasting = 2  # the paragraph a lead-in announced ("We got this issue from a user:"), or an issue's "Title:"
            continue
        if reviewing:
            if _REVIEW_END.match(stripped):
                reviewing = False
            continue
        if _REVIEW_SEVERITY.match(stripped):  # a pasted review comment: its title was the paragraph before
            buf = []
            reviewing = True
            continue
        bold = _BOLD_HEADING.match(stripped)
        if bold and _PAREN_KEEP_HEADING.search(bold.group(1)):  # "**Reference files (read-only):**" over a list
            yield from flush()
            yield bold.group(1).strip(" :"), section, False, False, block
            block += 1
            continue
        m = _HEADING.match(line)
        if m:
            yield from flush()
            section = m.group(1).strip()
            descriptive = source == "plan" and (
                (bool(_TEST_SECTION.search(section)) and not _TASK_HEADING.match(section))
                or (bool(_DESCRIPTIVE_SECTION.search(section)) and not _DIRECTIVE_SECTION.search(section))
            )
            if _PAREN_KEEP_HEADING.search(section):  # "### API contracts (unchanged)": the heading is the rule
                yield section, section, False, False, block
                block += 1
            continue
        if stripped.startswith(">") or (quoting and raw[:1].isspace()):
            yield from flush()  # a quote, and the indented lines that continue it
            quoting = True
            continue
        quoting = False
        if _PASTED.match(stripped) or _looks_like_code(line):
            yield from flush()
            continue
        if _PASTE_LEAD.search(stripped):
            buf.append(stripped)
            yield from flush()
            pasting = 1
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


_TABLE_ROW = _Lazy("_TABLE_ROW", r"^\s*\|.*\|\s*$")
_TABLE_RULE = _Lazy("_TABLE_RULE", r"^\s*\|?\s*:?-{2,}:?\s*(?:\|\s*:?-{2,}:?\s*)*\|?\s*$")
#: A table column of things not to do, by its header ("Don't", "Avoid", "❌ Never").
_NEGATED_HEADER = _Lazy(
    "_NEGATED_HEADER",
    r"^(?:don'?ts?|do\s+not|never|avoid|must\s+not|won'?t(?:\s+do)?|not\s+allowed|forbidden|"
    r"prohibited|off[- ]limits|no[- ]go|not\s+ok(?:ay)?)$",
    re.I,
)


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def _negated_columns(lines: list[str]) -> list[str]:
    """``lines`` with each markdown table that has a column of things not to do (a typed "| Do | Don't |" table)
    replaced by that column as a list under its header ("Don't:" then "- cell"); other tables stay (read as pasted)."""
    out: list[str] = []
    i, in_fence = 0, False
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
        if in_fence or not _TABLE_ROW.match(line) or i + 1 >= len(lines) or not _TABLE_RULE.match(lines[i + 1]):
            out.append(line)
            i += 1
            continue
        header = [_LEADING_SYMBOLS.sub("", _plain(c)).strip(" *_:") for c in _cells(line)]
        j = i + 2
        while j < len(lines) and _TABLE_ROW.match(lines[j]):
            j += 1
        negated = [k for k, h in enumerate(header) if _NEGATED_HEADER.match(h)]
        if not negated:
            out.extend(lines[i:j])
        for k in negated:
            out += ["", f"{header[k]}:"]
            out += [
                f"- {cells[k]}" for cells in map(_cells, lines[i + 2 : j]) if k < len(cells) and cells[k].strip(" -")
            ]
            out.append("")
        i = j
    return out


def _looks_like_code(line: str) -> bool:
    """An indented or symbol-heavy line: pasted code, not prose."""
    if re.match(r"^(?: {4,}|\t)", line) and not _LIST_ITEM.match(line):
        return True
    s = line.strip()
    if len(s) < 12:
        return False
    s = s[:4096]  # a sample is enough to tell (and keeps a long line linear)
    prose = len(s) - len(_PROSE_CHARS.sub("", s))
    return prose / len(s) < 0.6


_PROSE_CHARS = _Lazy("_PROSE_CHARS", r"[^\W\d_]+|\s+")


# --------------------------------------------------------------------------- step 2: segmentation


#: Spoken fillers ("um", "uh"): not words of the message (dictated text has them between its clauses).
_FILLER = _Lazy("_FILLER", r"\b(?:u+m+|u+h+|uhm+|erm+|er)\b,?\s*", re.IGNORECASE)
_ABBREV = frozenset(
    "e.g i.e etc vs cf approx incl esp resp viz al fig no nr mr mrs ms dr st jr sr inc ltd co".split()
)
_CODE_SPAN = _Lazy("_CODE_SPAN", r"`[^`\n]*`")
_BOUNDARY = _Lazy("_BOUNDARY", r"(?<=[.!?…])[\"')\]]*\s+")


_PROTECTED = _Lazy("_PROTECTED", r"\x00(\d+)\x00")


def sentences(line: str) -> list[str]:
    """Sentences of one prose line (see the module docstring)."""
    spans: list[str] = []

    def protect(m: re.Match[str]) -> str:
        spans.append(m.group(0))
        return f"\x00{len(spans) - 1}\x00"

    text = _FILLER.sub("", _CODE_SPAN.sub(protect, line))
    out: list[str] = []
    start = 0
    for m in _BOUNDARY.finditer(text):
        tail = text[max(start, m.start() - 80) : m.start()]  # the word before the boundary (a bounded look back)
        token = tail.rsplit(None, 1)[-1] if tail and not tail[-1].isspace() else ""
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
        return _PROTECTED.sub(lambda m: spans[int(m.group(1))], s).strip() if "\x00" in s else s.strip()

    return [r for r in (restore(s) for s in out) if r]


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


#: What coding agents are told not to do: the verbs of terse and non-native prohibitions ("no apply",
#: "please not modify X"). Those also used as nouns ("no change", "no update") need an object after them.
ACTION_VERBS = frozenset(
    """touch modify change edit alter rewrite remove delete drop add introduce create commit push merge run execute
    install uninstall rename refactor bump squash rebase deploy apply publish release upgrade downgrade update
    regenerate reformat format revert reset amend tag force-push use call import move copy overwrite replace
    restart migrate log print mock skip disable enable expose hardcode hard-code open close send post request""".split()
)
_BARE_ACTION_VERBS = frozenset(
    "touch modify edit alter rewrite remove delete commit push merge execute install uninstall rename refactor bump "
    "squash rebase deploy apply publish amend force-push overwrite hardcode".split()
)
_ACTION = "|".join(sorted(ACTION_VERBS, key=len, reverse=True))
_BARE_ACTION = "|".join(sorted(_BARE_ACTION_VERBS, key=len, reverse=True))
_DETERMINER = r"(?:the|a|an|any|this|that|these|those|my|our|your|its|their|anything|it|them)"

_PAREN = _Lazy("_PAREN", r"\(([^()]{3,200})\)")
_SUBJECT_PRONOUN = r"(?:i|we|you|they|he|she|it|there|that|this)(?:'(?:ll|d|m|re|ve|s)|s)?"
_FINITE = (r"(?:is|are|was|were|isn'?t|aren'?t|wasn'?t|weren'?t|do|does|did|don'?t|doesn'?t|didn'?t|has|have|had|"
           r"will|won'?t|would|can|can'?t|could|should|shall|must|needs?|still|already|never|always|only|also|just)")
#: A purpose clause that says what the result must not do: "so (that) it doesn't / we don't / nothing can ...".
_PURPOSE_SUBJECT = r"(?:it|we|you|this|that|they|nothing|no\s+one|nobody|the\s+[\w`.-]+(?:\s+[\w`.-]+)?)"
_PURPOSE_NEG = (
    r"(?:doesn'?t|does\s+not|don'?t|do\s+not|won'?t|will\s+not|never|can'?t|cannot|can\s+not|isn'?t|aren'?t|"
    r"is\s+not|are\s+not|gets?\s+no)"
)
_PURPOSE_NOT = _Lazy("_PURPOSE_NOT", rf"^so\s+(?:that\s+)?{_PURPOSE_SUBJECT}\s+{_PURPOSE_NEG}\s+(?:ever\s+)?"
                          r"(?!need\b|have\s+to\b|matter\b|work\b|fail\b|crash\b|happen\b|exist\b|know\b|see\b|notice\b|forget\b|miss\b|"
                          r"(?:break|mess\s+up|screw\s+up)\s+(?:things|anything|stuff|everything|it|something)\b)[a-z]",
                          re.IGNORECASE)
_CLAUSE_SPLIT = _Lazy(
    "_CLAUSE_SPLIT",
    r"\s*(?:;|\s[—–]\s|\s--?\s|:\s+|,\s*but\s+|\s+but\s+(?=(?:also\s+)?(?:don'?t|do not|never|not|no|let'?s|please|we|"
    r"you|i|it|just|ideally|preferably)\b)|"
    r",?\s+(?=so\s+(?:that\s+)?" + _PURPOSE_SUBJECT + r"\s+" + _PURPOSE_NEG + r"\s)|"
    r",\s*(?:and|so|then|or)\s+|,\s+(?=(?:let'?s|please|pls|kindly|don'?t|dont|do\s+not|never|avoid|just|but|so|and|also|then|no|"
    r"defer|keep|leave|stop|skip)\s)|"
    # a request tacked on as a question ("leave that for a follow-up, can you log an issue for it?") asks alone
    r",\s+(?=(?:can|could|would|will)\s+(?:you|u)\s+(?!not\b|never\b)[a-z])|"
    # a comma before a new subject ("..., they come from the build") or a new imperative ("..., use Y")
    rf",\s+(?={_SUBJECT_PRONOUN}\s+[a-z])|"
    rf",\s+(?=(?:the|this|that|these|those|our|my|its|their|his|her|some|all|every)\s+(?:[\w`.'/-]+\s+){{0,3}}{_FINITE}\b)|"
    rf",\s+(?=(?:{'|'.join(sorted(IMPERATIVE_VERBS))})\s+(?!,)\S)|"
    r"(?<!\bthat)(?<!\bif)(?<!\bwhen)(?<!\bunless)(?<!\bbefore)(?<!\bafter)(?<!\buntil)(?<!\bbecause)(?<!\bas)(?<!\bso)"
    r"(?<!\band)(?<!\bbut)(?<!\bor)(?<!\bwhat)(?<!\bthan)(?<!\bwhere)(?<!\bwhile)(?<!\bonce)"
    r"\s+(?=i\s+(?:wanna|want|will|need|think|guess|prefer|gotta|have\s+to|am\s+going|would|can)\b|i'(?:ll|d|m)\s)|"
    r"\s+(?:and|or|then|so)\s+(?=(?:also\s+)?(?:no\s+)?(?:it|we|you|i|they|this|that|these|those|there|let'?s|please|don'?t|dont|"
    r"do\s+not|never)\b)|"
    # a negated conjunct after an instruction: "cache the rows and avoid a second query", "... and make
    # sure we never V"
    r"\s+and\s+(?=(?:also\s+)?(?:avoid\s+(?!(?:any\s+)?(?:[\w-]+\s+){0,2}?(?:issues?|problems?|errors?|bugs?|confusion|conflicts?|"
    r"mistakes?|regressions?|surprises?|trouble)\b)|refrain\s+from|(?:(?:make|be)\s+sure|ensure)\s+(?:that\s+)?(?:we|you)\s+"
    r"(?:never|don'?t|do\s+not))\b))\s*",
    re.IGNORECASE,
)


_INTERJECTION = _Lazy("_INTERJECTION", r"\b((?:do\s+not|don'?t|dont|never)(?:\s+ever)?)\s*,\s*[^,]{1,40}?,\s*"
                           r"(?=(?!(?:do\s+not|don'?t|dont|never)\b)[a-z])", re.IGNORECASE)
#: A lead that puts what follows its ":" out of scope: "Not in this PR: the router refactor".
_SCOPE_LEAD = _Lazy(
    "_SCOPE_LEAD",
    r"^(?:not\s+(?:in|for)\s+(?:this|the\s+current)\s+\w+|out\s+of\s+scope(?:\s+for\s+now)?|non-goals?|"
    r"keep\s+(?:unchanged|untouched|as[- ]is|intact)|(?:do\s+not|don'?t)\s+change)$",
    re.I,
)
_CONDITION_START = _Lazy(
    "_CONDITION_START", r"^(?:if|when|unless|once|before|after|while|until|whenever|in\s+case)\b", re.I
)


@lru_cache(maxsize=16_384)
def _clauses(sentence: str) -> tuple[tuple[str, bool], ...]:
    return tuple(_clauses_uncached(sentence))


def clauses(sentence: str) -> list[tuple[str, bool]]:
    """``(clause, parenthetical)`` pieces of a sentence (see :func:`_clauses_uncached`)."""
    return list(_clauses(sentence))


def _clauses_uncached(sentence: str) -> list[tuple[str, bool]]:
    """``(clause, parenthetical)`` pieces of a sentence; parentheticals come after their host's clauses.

    A clause cut off at a bare "but"/"and" after a clause with its own subject shares
    that subject ("we use X but don't change Y": *we* don't) and is dropped; a leading
    condition stays with the clause it conditions ("if it fails, don't retry").
    """
    sentence = _INTERJECTION.sub(r"\1 ", sentence)  # "do not, under any circumstances, touch X"
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
        k = 1
        while k < len(pieces):
            if seps[k - 1] == ":" and _SCOPE_LEAD.match(_plain(pieces[k - 1]).strip(" *")):  # "Not in this PR: X"
                pieces[k - 1 : k + 1] = [f"{pieces[k - 1]}: {pieces[k]}"]
                del seps[k - 1]
            else:
                k += 1
        k = 1
        while k < len(pieces):  # "don't add, remove or rename files": a list of verbs, one clause
            last = re.search(r"([A-Za-z]+)\W*$", pieces[k - 1])
            if (
                seps[k - 1] == ","
                and last
                and last.group(1).lower() in IMPERATIVE_VERBS
                and starts_imperative(pieces[k])
            ):
                pieces[k - 1 : k + 1] = [f"{pieces[k - 1]}, {pieces[k]}"]
                del seps[k - 1]
            else:
                k += 1
        kept: list[str] = []
        for k, piece in enumerate(pieces):
            if k and seps[k - 1] in ("but", "and", "or") and _shares_subject(pieces[k - 1], piece):
                continue  # "we use X but don't change Y": *we* don't — a description, not an order
            kept.append(piece)
        merged: list[str] = []
        for piece in kept:
            piece = piece.strip(" ,.-")
            if merged and (_CONDITION_START.match(merged[-1]) or _TOPIC.match(merged[-1] + ", ")) and (
                    "," not in merged[-1][:-1] and piece):
                merged[-1] = f"{merged[-1]}, {piece}"
            elif piece:
                merged.append(piece)
        out.extend((c, par) for c in merged)
    return out


#: A statement whose verb asks for something ("we should cache X and avoid Y"): its "and avoid" conjunct is a rule.
_WISH_OR_MODAL = _Lazy("_WISH_OR_MODAL", r"\b(?:should|must|need|needs|have\s+to|has\s+to|want|wanna|will|shall|let'?s|"
                                        r"please|going\s+to|gonna)\b|'ll\b", re.I)
_PLURAL_SUBJECT = _Lazy("_PLURAL_SUBJECT", r"^(?:we|i|you|they|these|those|people|users)\s+\w", re.I)
_SINGULAR_SUBJECT = _Lazy(
    "_SINGULAR_SUBJECT", r"^(?:it|this|that|he|she|there|the\s+\w+|our\s+\w+|my\s+\w+)\s+\w", re.I
)


def _shares_subject(before: str, after: str) -> bool:
    """Does the clause ``after`` (cut at a bare "but"/"and") continue the subject of ``before``?

    Only if ``before`` states a fact with its own subject (not an instruction) and the
    verb agrees with it: "don't" after we/I/you/they, "doesn't"/"never" after it/this.
    """
    head, tail = _plain(before).strip(), _plain(after).strip().lower()
    if starts_imperative(head) or _DIRECTIVE.match(head):
        return False
    if tail.startswith(("avoid ", "refrain ")) and (_PLURAL_SUBJECT.match(head) or _SINGULAR_SUBJECT.match(head)) \
            and not _WISH_OR_MODAL.search(head):
        return True  # "this keeps the disk small and avoids bloat", "we cut costs and avoid X": a stated benefit
    if _PLURAL_SUBJECT.match(head):
        return tail.startswith(("don't", "dont", "do not", "never", "not", "no "))
    if _SINGULAR_SUBJECT.match(head):
        return tail.startswith(("doesn't", "does not", "never", "not", "no "))
    return False


_DECISIONS_LEAD = _Lazy(
    "_DECISIONS_LEAD",
    r"\b(?:decisions?|constraints?|requirements?|rules?|non-goals?|guardrails?|out of scope|do not|don'?t)\b[^.]*:\s*$",
    re.I,
)
_DECISIONS_SECTION = _Lazy(
    "_DECISIONS_SECTION",
    r"\b(?:decisions?|constraints?|requirements?|rules?|non-goals?|guardrails?|out of scope|do not|don'?ts?|"
    r"must not|restrictions?|boundaries|limitations? on|design|approach|policy|policies|conventions?|principles?)\b",
    re.I,
)
#: A list whose every item is forbidden ("Don't:", "Out of scope:", a "Non-goals" section).
_NEGATED_LEAD = _Lazy("_NEGATED_LEAD",
    r"(?:^|\b)(don'?ts?|do\s+not|never|avoid|must\s+not|non-goals?|out\s+of\s+scope|not\s+in\s+scope|"
    r"what\s+not\s+to\s+do|won'?t\s+do|will\s+not\s+do|not\s+doing|not\s+planned|excluded|exclusions)\s*:\s*$", re.I)
_NEGATED_SECTION = _Lazy(
    "_NEGATED_SECTION",
    r"^(don'?ts|do\s+not|never|avoid|non-goals?|out\s+of\s+scope|not\s+in\s+scope|"
    r"what\s+not\s+to\s+do|won'?t\s+do|will\s+not\s+do|not\s+doing|not\s+planned|excluded|"
    r"exclusions)\b",
    re.I,
)
#: A lead-in that introduces consequences or observations, not instructions ("This means:").
_CONSEQUENCE_LEAD = _Lazy(
    "_CONSEQUENCE_LEAD",
    r"\b(?:means|result|results|effects?|outcome|consequences?|so|i\.e\.|currently|today|before|now)\s*:\s*$",
    re.I,
)


def starts_imperative(text: str) -> bool:
    """Does ``text`` start with a verb in the imperative (``Add ...``, ``Keep ...``)?"""
    m = re.match(r"^\W*([A-Za-z]+)", _plain(text))
    return m is not None and m.group(1).lower() in IMPERATIVE_VERBS


#: Sentences of a line a unit remembers before it (to find the instruction a short "no X" stands beside; a
#: bound keeps a line of many sentences linear).
_BEFORE = 8


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
        lead = (
            _plain(before[0])
            if item and before and not before[3] and before[1] == section and before[4] >= block - 1
            else ""
        )
        decisions = bool(item and (_DECISIONS_LEAD.search(lead) or _DECISIONS_SECTION.search(section)))
        imperative = bool(item and not _CONSEQUENCE_LEAD.search(lead) and any(starts_imperative(g[0]) for g in group))
        m = (_NEGATED_LEAD.search(lead) or _NEGATED_SECTION.match(section)) if item else None
        negation = _plain(m.group(1)).strip().capitalize() if m else ""
        for line, section, descriptive, item, _ in group:
            said = sentences(line)
            for k, s in enumerate(said):
                yield (
                    Unit(
                        s,
                        section,
                        descriptive,
                        item,
                        decisions=decisions,
                        imperative_list=imperative,
                        negated_item=negation if k == 0 else "",
                        sentence=s,
                        before=tuple(said[max(0, k - _BEFORE) : k]),
                    ),
                    clauses(s),
                )
        i = j + 1


# --------------------------------------------------------------------------- step 3: classification


_MARKERS = _Lazy(
    "_MARKERS",
    r"^(?:ok(?:ay)?|yes|yeah|yep|yup|sure|right|fine|great|cool|alright|hmm+|hm+|ah+|oh+|so|and|but|also|then|"
    r"just|(?:pretty\s+)?please|pls|plz|kindly|actually|well|again|now|first|finally|btw|plus|lol|haha|sorry|thanks|"
    r"thank you|"
    r"intentional|intentionally|(?:it\s+|this\s+)?(?:is\s+)?(?:very\s+)?important|note|nb|again|instead|otherwise|"
    r"however|and also|but also|"
    r"like|for now|this time|from now on|going forward|in general|generally|remember|reminder|q|question|fyi|ideally|"
    r"preferably|"
    r"nice|perfect|lgtm|awesome|excellent|good|got\s+it|looks\s+good|sounds\s+good|"
    r"that'?s\s+(?:good|fine|great|ok(?:ay)?|right|perfect|nice|correct|better)|thats\s+(?:good|fine|great|ok|right|perfect|nice)|"
    r"nit|nitpick|suggestion|oh|ah|anyway|anyways|et(?=\s+(?:pas|ne|n'|jamais|surtout)\b)|y(?=\s+no\b))\b[\s,.:!-]*",
    re.IGNORECASE,
)
#: Pictographs and symbols before the first word ("🚫 don't rename it").
_LEADING_SYMBOLS = _Lazy("_LEADING_SYMBOLS", r"^[\s\u2190-\u21ff\u2600-\u27bf\U0001f000-\U0001faff\ufe0f]+")
_NO_MARKER = _Lazy(
    "_NO_MARKER",
    r"^(?:no+|nah+|nope)\b(?:[\s,.!:-]+(?=(?:don'?t|do not|never|let'?s|please|we|you)\b)|\s*[,.!:-]+\s*)",
    re.I,
)
#: A fronted topic: "About the lockfile, please keep it as is".
_TOPIC = _Lazy("_TOPIC", r"^(?:about|regarding|re:?|as\s+(?:for|to)|concerning|wrt)\s+([^,]{1,40}),\s*", re.I)
_CONDITION = _Lazy("_CONDITION", r"^(?:if|when|unless|once|before|after|while|whenever|in case)\b[^,]{0,120},\s*", re.I)
#: The same without its comma, when a negated imperative follows the clause's verb: "before you migrate don't drop X",
#: "once the tests pass never merge by hand" (the clause's own verb is not negated: "when you don't know" is kept).
_TIME_CLAUSE_BARE = _Lazy(
    "_TIME_CLAUSE_BARE",
    r"^(?:before|after|once|when|whenever|until|till)\s+(?:you|we|i|it|they|the\s+[\w`.-]+(?:\s+[\w`.-]+)?)\s+"
    r"(?!(?:do\s+not|don'?t|dont|never|not)\b)[\w'-]+(?:\s+(?!(?:do\s+not|don'?t|dont|never)\b)[\w'`.-]+){0,4}?\s+"
    r"(?=(?:do\s+not|don'?t|dont|never)\s+[a-z])",
    re.I,
)

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
_NEG_IMPERATIVE = _Lazy(
    "_NEG_IMPERATIVE",
    rf"^(?:please\s+)?(?:(?:do\s+not|don'?t|dont)\s+you\s+(?:even\s+)?(?:dare|think\s+about)\s+[a-z]"
    rf"|(?:do\s+not|don'?t|dont|never|never\s+ever)\s+(?:ever\s+)?(?!{_NOT_FORBIDDING}\b|mind\b|{_NOT_BASE_FORM}\b)[a-z]"
    rf"|(?:let'?s\s+)?(?:make\s+sure|ensure|be\s+sure)\s+(?:that\s+)?(?:you|we|it|nothing|they|the\s+\w+)?\s*(?:don'?t|do\s+not|never|doesn'?t|does\s+not|won'?t|will\s+not|isn'?t)\s+[a-z]"
    rf"|(?:let'?s\s+)?(?:make\s+sure|ensure|be\s+sure)\s+(?:that\s+)?(?:we|you|it|they|nothing|nobody)(?:'re|'s|\s+are|\s+is)\s+not\s+\w+ing\b"
    rf"|i(?:'?d|\s+would)?\s+(?:rather|prefer)\s+(?:(?:that|it\s+if|if)\s+)?(?:you|we|claude)\s+(?:didn'?t|did\s+not|don'?t|do\s+not|not|never)\s+[a-z]"
    rf"|i(?:'?d|\s+would)\s+(?:rather\s+not|prefer\s+not\s+to)\s+(?!{_NOT_FORBIDDING}\b)[a-z]"
    rf"|(?:it\s+would|it'?d)\s+be\s+(?:great|good|nice|best|better|ideal|preferable|wise|safer)\s+if\s+(?:we|you)\s+(?:could\s+|can\s+)?"
    rf"(?:avoid|not|didn'?t|did\s+not|don'?t|do\s+not|never|stopped|refrained\s+from)\s+[a-z]"
    rf"|i(?:'?d|\s+would)\s+appreciate\s+(?:it\s+)?if\s+(?:you|we)\s+(?:didn'?t|did\s+not|don'?t|do\s+not|wouldn'?t|would\s+not|"
    rf"could\s+avoid|avoided|never)\s+[a-z]"
    # (J) a hedge between the subject and its modal: "we probably shouldn't", "you really must not"
    rf"|(?:you|we)\s+(?:probably|really|definitely|certainly|still|just|also|honestly)\s+(?:shouldn'?t|should\s+not|mustn'?t|must\s+not|"
    rf"must\s+never|should\s+never)\s+(?!need|have\s+to)[a-z]"
    # "I don't want any new X" (not "I don't want to V": the user's own aim); "hands off X"
    rf"|i\s+(?:don'?t|do\s+not)\s+want\s+(?:any|more|new|extra|additional|another)\s+[a-z`]"
    rf"|i\s+(?:don'?t|do\s+not)\s+want\s+(?:a|an)\s+(?:new|second|separate|extra|additional|different)\s+[a-z`]"
    rf"|hands\s+off\s+[\w`]"
    rf"|i\s+(?:don'?t|do\s+not)\s+want\s+(?:you|claude|us|the\s+agent|it|them|anyone)\s+to\s+[a-z]"
    rf"|(?:let'?s|let\s+us|lets)\s+(?:not|never)\s+(?!worry|bother|overthink|panic|forget|get\s+ahead)[a-z]"
    rf"|(?:let'?s\s+)?(?:avoid|refrain\s+from)\s+[a-z_`*'\"]"
    rf"|(?:let'?s\s+)?(?:stop|quit|cease)\s+(?:\w+ing\b|it\b|that\b|this\b|now\b)"
    rf"|under\s+no\s+circumstances"
    rf"|(?:at\s+no\s+(?:point|time)|in\s+no\s+case)\s+(?:should|must|shall|may|can|will|are|do)\s+(?:you|we|u|claude|the\s+(?:agent|assistant))\b"
    rf"|no\s+(?:more\s+)?(?!{_ING_NOT_GERUND}\b)[a-z]+(?:-[a-z]+)*ing\b"
    rf"|leave\s+.{{1,60}}\s+(?:alone|as[- ]is|as\s+(?:it|they)\s+(?:is|are|was|were|stands?)|untouched|unchanged|"
    rf"intact|in\s+place|"
    rf"the\s+way\s+(?:it|they)\s+(?:is|are)|where\s+(?:it|they)\s+(?:is|are))\b"
    rf"|(?:you|we|u)\s+(?:must|should|shall|may)\s+(?:not|never)\s+(?!need|have\s+to)[a-z]"
    rf"|(?:you|we)\s+(?:mustn'?t|shouldn'?t|shan'?t)\s+(?!need|have\s+to)[a-z]"
    rf"|(?:you|we)(?:\s+are|'re)\s+not\s+(?:allowed|permitted|supposed)\s+to"
    # "I don't want the tests changed", "I need you to not touch X", "make no changes to X", "stay away from X"
    rf"|i\s+(?:don'?t|do\s+not)\s+want\s+(?:the|any|my|our|this|that|these|those|`)[^,;]{{0,50}}?\s+(?:touched|changed|modified|"
    rf"edited|deleted|removed|renamed|moved|committed|pushed|merged|rewritten|reformatted|bumped|updated|altered|overwritten)\b"
    rf"|i\s+(?:need|want|would\s+like|'d\s+like)\s+(?:you|claude)\s+to\s+(?:not|never)\s+[a-z]"
    rf"|make\s+no\s+(?:changes|edits|modifications|commits)\b"
    rf"|(?:stay|keep)\s+(?:away\s+from|out\s+of)\s+[\w`.'/-]"
    rf"|treat\s+.{{1,60}}?\s+as\s+(?:read[- ]only|off[- ]limits|frozen|immutable)\b"
    rf"|(?:let'?s\s+)?(?:make\s+sure|ensure|be\s+sure)\s+(?:that\s+)?(?:the|our|my|this|that|these|those|`)[^,;]{{0,50}}?\s+"
    rf"(?:(?:is|are)\s+(?:not|never)|isn'?t|aren'?t)\s+(?:touched|changed|modified|edited|deleted|removed|renamed|committed|pushed|"
    rf"overwritten|altered|broken)\b"
    rf"|(?:you|we)\s+(?:can'?t|cannot|can\s+not)\s+(?:ever\s+)?(?:touch|change|modify|edit|delete|remove|push|commit|merge|use|add|run)\b"
    # "not (to) V" after a frame that asks for it: "(please) not modify X", "it'd be best not to run X", "try not to"
    rf"|(?:(?:it'?d|it\s+would|it'?s|it\s+is)\s+(?:be\s+)?(?:best|better|wiser|safer|preferable)\s+|(?:make|be)\s+sure\s+|"
    rf"be\s+careful\s+|take\s+care\s+|try\s+|(?:you|we)(?:'?d|\s+had)\s+better\s+|better\s+|i'?d\s+prefer\s+(?:(?:you|we)\s+)?|"
    rf"prefer\s+)not\s+(?:to\s+(?:ever\s+)?(?!{_NOT_FORBIDDING}\b)[a-z]|(?:ever\s+)?(?:{_ACTION})\b)"
    # "no apply" (terse); not "no V the X": "no revert those changes" is "no, revert them" as often as "don't"
    rf"|no\s+(?:{_BARE_ACTION})(?:\s+(?:yet|for\s+now|today|please|pls|thanks))?\s*[.!]*$"
    # ... but "no V the X, only Y" is a restriction ("no deploy the app to prod, only to staging")
    rf"|no\s+(?:{_ACTION})\s+(?:the|a|an|any|this|that|these|those|it|them)\b[^,;]{{1,80}},\s*only\b"
    # modal negation: "we won't V", "X must not / must never V" (any subject)
    rf"|(?:we|you)\s+(?:won'?t|will\s+not|will\s+never)\s+(?!{_NOT_FORBIDDING}\b|be\s+able|get|find|notice|lose|"
    rf"break|hit|miss|regret|be\s+(?:here|there|around|back|available))[a-z]"
    rf")",
    re.IGNORECASE,
)
#: "X must not / must never V" with any subject: a requirement (in a plan's test section, a criterion instead).
_MODAL_NEGATION = _Lazy("_MODAL_NEGATION",
    r"^(?:[\w`.'*/()-]+\s+){0,5}?(?:must|shall)\s+(?:not|never)\s+(?:ever\s+)?(?!be\s+(?:a|an|the|too|very|so|that|this|it)\b)"
    r"(?:be\s+\w+(?:ed|en|wn|ne|t)\b|(?!be\b|have\b)[a-z])"
    r"|^(?:[\w`.'*/()-]+\s+){0,5}?mustn'?t\s+(?!be\s+(?:a|an|the|too|very|so)\b)[a-z]",
    re.IGNORECASE,
)
#: "It should not be cleared by X", "this must never be exposed" (a requirement on a thing).
_REQUIREMENT = _Lazy("_REQUIREMENT",
    r"^(?:it|this|that|they|these|those|the\s+[\w`.*-]+(?:\s+[\w`.*-]+){0,3}|`[^`]+`(?:\s+\w+)?)\s+"
    r"(?:must|should|shall|(?:is|are)(?=\s+(?:not|never)\s+to\b))\s+(?:not|never)\s+(?:to\s+)?(?:be|get|ever\s+be)\s+\w+(?:ed|en|wn|ne|t)\b",
    re.IGNORECASE,
)
#: A requirement on a named thing, the host of a contrast: "the cache should be stored in redis, not ...".
_SHOULD_HOST = _Lazy("_SHOULD_HOST",
    r"^(?!(?:it|this|that|there|which|what)\b)(?:the\s+)?[\w`.*-]+(?:\s+[\w`.*-]+){0,4}\s+(?:should|must|shall|"
    r"needs?\s+to|has\s+to|have\s+to)\s+(?!not\b|never\b)\w", re.IGNORECASE)
#: "the doctor command should not auto-fix anything": what a named part of the program must not do (an action verb;
#: not "it should not take long", "the test should not fail": predictions and expectations).
_SHOULD_NOT_ACT = _Lazy("_SHOULD_NOT_ACT",
    rf"^(?:the|our)\s+[\w`.*/-]+(?:\s+[\w`.*/-]+){{0,3}}\s+(?:should|shall)\s+(?:not|never)\s+(?:ever\s+)?(?:auto-?|re-?)?"
    rf"(?:{_ACTION}|fix)\s+\S"
    rf"|^(?:[a-z][\w-]*\s+){{0,2}}[a-z][\w-]*s\s+(?:shouldn'?t|should\s+not|should\s+never)\s+(?:ever\s+|immediately\s+|automatically\s+)?"
    rf"(?:auto-?|re-?)?(?:{_ACTION}|upload|show|truncate|fix)\b",
    re.IGNORECASE,
)
#: "Truncation should never hide one word", "the exporter should never ever emit blank rows": a rule on a thing's
#: behaviour, any subject (not "should never have V-ed", a regret).
_SHOULD_NEVER = _Lazy("_SHOULD_NEVER",
    r"^(?:[\w`.'*/()-]+\s+){1,6}?(?:should|shall)\s+never\s+(?:ever\s+)?(?!have\b|be\s+(?:a|an|the|too|so)\b)[a-z]",
    re.IGNORECASE,
)
#: "Measure, don't guess", "ask, don't assume": a maxim (two bare verbs), not a rule about this work.
_MAXIM = _Lazy("_MAXIM", r"^\W*[a-z]+,\s*(?:but\s+)?(?:don'?t|do\s+not|never)\s+[a-z]+\W*$", re.IGNORECASE)
#: "Nothing in vendor/ should be edited", "no file under X may be changed".
_NOTHING_SHOULD = _Lazy("_NOTHING_SHOULD",
    r"^(?:nothing|no\s+(?:file|files|code|line|test|tests|module|change|changes))\s+(?:(?:in|under|inside|outside|from|of)\s+\S+(?:\s+\S+){0,2}\s+)?"
    r"(?:should|must|may|can|shall)\s+(?:ever\s+)?(?:be|get)\s+\w+(?:ed|en|wn|ne|t)\b",
    re.IGNORECASE,
)
#: "the public API must stay the same": a thing to keep as it is.
_MUST_STAY = _Lazy(
    "_MUST_STAY",
    r"^(?:the|this|that|these|those|our|its|their|all|every|`)[^,;]{0,60}?\s+(?:must|should|shall|has\s+to|have\s+to|needs?\s+to|is\s+to|are\s+to)\s+"
    r"(?:stay|remain|be\s+kept|be\s+left|keep\s+working)(?:\s+(?:the\s+same|unchanged|as[- ]is|intact|stable|untouched|"
    r"where\s+(?:it|they)\s+(?:is|are)|"
    r"backwards?[- ]compatible|compatible|in\s+place|working))?\s*(?:,\s*\S.*)?[.!]*$"
    # "the old flat keys have to keep working for reading": still working, for some use
    r"|^(?:the|this|that|these|those|our|its|their|all|every|`)[^,;]{0,60}?\s+(?:must|should|shall|has\s+to|have\s+to|needs?\s+to)\s+"
    r"(?:keep\s+working|continue\s+to\s+work|(?<!should\s)still\s+work)(?:\s+(?:for|with|in|on|across|under|after|during|from|by|via)\s+[^,;]{1,40})?"
    r"\s*(?:,\s*\S.*)?[.!]*$"
    # "make sure the schema stays untouched" (without "make sure", "X stays the same" is as often a description)
    r"|^(?:make\s+sure|ensure)\s+(?:that\s+)?(?:the|this|that|these|those|our|its|their|all|every|`)[^,;]{0,60}?\s+(?:stays?|remains?|keeps?\s+working)"
    r"(?:\s+(?:the\s+same|unchanged|as[- ]is|intact|stable|untouched|backwards?[- ]compatible|compatible|in\s+place|"
    r"working))?\s*(?:,\s*\S.*)?[.!]*$",
    re.IGNORECASE,
)
#: "Changing the save format is forbidden", "the billing module is off-limits": a rule stated about the act or thing.
_FORBIDDEN = _Lazy(
    "_FORBIDDEN",
    r"^\w+ing\b[^,;]{0,60}?\s+(?:is|are)\s+(?:strictly\s+|absolutely\s+)?(?:forbidden|prohibited|banned|not\s+allowed|"
    r"not\s+permitted|not\s+ok(?:ay)?|off[- ]limits|a\s+no[- ]go)\b"
    r"|^(?:the\s+|our\s+|this\s+|that\s+|`)?[^,;]{1,50}?\s+(?:is|are|stays?|remains?)\s+(?:strictly\s+)?(?:off[- "
    r"]limits|a\s+no[- ]go(?:\s+zone)?)\b",
    re.IGNORECASE,
)
#: "Version number please not change" (non-native, the thing first).
_FRONTED_PLEASE_NOT = _Lazy(
    "_FRONTED_PLEASE_NOT", rf"^(?:[\w`'./-]+\s+){{1,5}}?(?:please|pls|kindly)\s+(?:do\s+)?not\s+(?:{_ACTION})\b", re.I
)
#: "it needs no date", "the file should have no status".
_NEEDS_NO = _Lazy("_NEEDS_NO",
    r"^(?:it|this|that|they|the\s+[\w`.-]+(?:\s+[\w`.-]+){0,2})\s+(?:needs|need|should\s+have|must\s+have|has\s+to\s+have|gets|should\s+get)\s+no\s+[a-z`]",
    re.IGNORECASE,
)
#: A "no X" noun phrase (a design decision when it stands in a list of them).
_NO_NP = _Lazy(
    "_NO_NP",
    r"^no\s+(?:more\s+)?(?!(?:else|of|i|it|that|this|we|you|they|not|thanks|thank|sorry|but|and|or|so|just|actually|"
    r"ok|okay|yes|yeah|because|cause|kidding|offense|biggie|sweat)\b)(?!more\b|longer\b|one\b|need\b|idea\b|problem|worries|way\b|matter\b|doubt|wait\b|change[sd]?\b(?!\s+(?:to|in|on)\s)|answer|issue|luck|clue|rush|pressure|longer)[`*\w][\w`*./:()!<>#-]*(?:\s+[\w`*./:()!<>#-]+){0,6}$",
    re.I,
)
#: A "no X" that is a directive wherever it stands: additions refused, or said with force.
_NO_NP_DIRECTIVE = _Lazy("_NO_NP_DIRECTIVE",
    r"^no\s+(?:new|extra|additional|further|external|third[- ]party|other)\b|\b(?:please|pls|plz|whatsoever|"
    r"anymore|any\s+more|ever|at\s+all|for\s+now|this\s+time|"
    r"(?:in|on|for|to)\s+(?:this|the|that|our)\s+(?:pr|branch|change|commit|repo|repository|task|release|ticket|pass|round|iteration|file|module|codebase|project))"
    r"(?:\s+(?:ever|please|pls|either|anymore))?\s*[.!]*$",
    re.IGNORECASE,
)
#: "please not modify X" (non-native): a "not V" asked for.
_POLITE_NOT = _Lazy(
    "_POLITE_NOT",
    rf"^(?:\W*(?:ok(?:ay)?|and|also|so|but|oh)\W+)*(?:please|pls|plz|kindly)\W+not\s+(?:to\s+)?(?:{_ACTION})\b",
    re.I,
)
#: "pls no prints": a "no X" asked for.
_POLITE_NO = _Lazy(
    "_POLITE_NO", r"^(?:\W*(?:ok(?:ay)?|and|also|so|but|oh)\W+)*(?:pretty\s+)?(?:please|pls|plz|kindly)\W+no\s", re.I
)
_NO_NP_BAD_TAIL = _Lazy("_NO_NP_BAD_TAIL",
    r"\b(?:needed|required|necessary|found|available|provided|yet|left|present|exists?|happens?|fires?|is|are|was|were|"
    r"has|have|had|does|did|will|would|can|could|should|gets?|returns?|matches|means|works?)\b|→|->|=>",
    re.IGNORECASE,
)
_PRESERVE = _Lazy("_PRESERVE",
    r"^(?:please\s+)?keep\s+(?:"
    r"(?:it|them|this|that|these|those|everything|all\s+(?:of\s+)?(?:it|them))\s+(?:local|private|secret|uncommitted|unpushed|out\s+of|off\b)"
    r"|(?:all\s+)?(?:the|our|my|your|existing|current|both)\s+(?!same\b|track|\w+\s+in\s+mind)[\w`*-]+"
    r"|`[^`]+`"
    r"|(?:[\w`.*/-]+\s+){0,4}?(?:as[- ]is|as\s+(?:it|they)\s+(?:is|are|stands?)|unchanged|untouched|intact|the\s+same|"
    r"where\s+(?:it|they)\s+(?:is|are)|in\s+place)\b"
    # "keep j/k working" (not "keep going", "keep working on it": no object)
    r"|(?!(?:me|us|you|going|working|trying|at|on|up|it\s+up)\b)(?:(?!(?:until|till|while|so|and|if|when|once)\b)[\w`./*-]+\s+){1,4}?"
    r"working(?=\s*(?:$|[,.;:!)]|\s(?:though|too|please|pls|for|with|in|on|after|across|as|when|while|and|but|again|still|"
    r"everywhere|unchanged)\b))"
    r")"
    # "i'd rather stay on pandas": staying with what is there (not "I'd rather you ask")
    r"|^(?:i'?d|i\s+would)\s+(?:rather|prefer\s+to)\s+(?:we\s+)?(?:stay|stick)\s+(?:on|with)\s+[\w`]",
    re.IGNORECASE,
)
_PRESERVE_BAD = _Lazy("_PRESERVE_BAD",
    r"\b(?:simple|short|minimal|clean|small|concise|consistent|tidy|brief|separate|together|in\s+mind|in\s+sync|track|going|up|"
    r"updated|open)\b", re.IGNORECASE,
)
_DEFER = _Lazy("_DEFER",
    r"^(?:(?:let'?s|we\s+(?:can|should|will)|please)\s+)?(?:defer|postpone|punt\s+on|hold\s+off\s+on|park)\s+(?!until\b|to\b|till\b|when\b|if\b)[\w`*]"
    r"|^(?:let'?s\s+|please\s+)?leave\s+(?:it|that|this|those|them|the\s+\w+(?:\s+\w+){0,3})\s+(?:for|until|till)\s+"
    r"(?:later|now|another|a\s+(?:later|follow|separate|future)|the\s+next|next|phase|v\d)"
    r"|^(?:let'?s\s+)?(?:do|handle|tackle|address)\s+(?:it|that|this|those|them)\s+later\b"
    # "let's save the refactor for another day", "nah, keep it for a later session"
    r"|^(?:(?:e+h+|nah|hm+|ok(?:ay)?|actually)\W+)*(?:(?:let'?s|lets|we\s+(?:can|should|will|could)|please|just)\s+)?"
    r"(?:save|keep)\s+(?:it|that|this|those|them|the\s+\w+(?:\s+\w+){0,3})\s+for\s+(?:later(?!\s+(?:use|reference|review))|"
    r"another\s+(?:day|time|session)|a\s+(?:later|future|follow|separate)\s+(?:session|pr|phase|change|round|time)|"
    r"(?:the\s+)?next\s+(?:session|release|version|phase|pr|iteration|sprint|round|time))\b"
    r"|^not\s+(?:in|for)\s+(?:this|the\s+current)\s+(?:pr|change|release|branch|ticket|iteration|sprint|phase|round|pass)\b"
    r"|^(?:let'?s\s+not|don'?t|do\s+not)\s+bother\s+with\s+.{1,60}?\s+(?:for\s+now|yet|right\s+now|until|till|before)\b"
    r"|^(?:let'?s\s+|please\s+)?(?:skip|leave\s+out|hold\s+off\s+on)\s+.{1,60}?\s+(?:for\s+now|for\s+later|until\s+later|"
    r"for\s+this\s+(?:pr|change|release|round|pass|iteration)|in\s+this\s+(?:pr|change|release|round|pass|iteration)|this\s+time)\b"
    r"|\bdefer(?:red)?\s+(?:to|until)\s+(?:phase|v\d|later|the\s+next|a\s+later|a\s+follow)"
    # "let's worry about X later on", "we can deal with the cache afterwards": a deferral marker closing the clause
    r"|^(?:let'?s\s+|we\s+(?:can|should|will|could)\s+)(?:worry\s+about|deal\s+with|think\s+about|look\s+(?:at|into)|"
    r"get\s+to|revisit|handle|tackle|address|do)\s+.{1,60}?\s+(?:later(?:\s+on)?|afterwards|another\s+time|"
    r"in\s+a\s+(?:follow[- ]?up|later\s+\w+|separate\s+\w+))\s*[.!]*$"
    # "in a later phase we can V", "at a future point you could V": the work named, and put off
    r"|^(?:at|in)\s+a\s+(?:later|future)\s+(?:stage|phase|step|point|iteration|session),?\s+(?:we|you|let'?s)\s+"
    r"(?:(?:should|can|could|will|might)\s+)?[a-z]"
    # "put this down as a follow-up for the next session", "jot that down as a ticket for later"
    r"|^(?:let'?s\s+|please\s+|just\s+)?(?:write|note|jot|put|add|log|keep|track)\s+(?:it|that|this|them|those)\s+"
    r"(?:down\s+)?as\s+an?\s+(?:todo|to-do|follow[- ]?up|ticket|issue)\s+for\s+(?:a\s+|the\s+)?"
    r"(?:later|future|next|another|separate)\b",
    re.IGNORECASE,
)
_RESTRAINT = _Lazy("_RESTRAINT",
    r"\bi(?:'?ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to|\s+wanna|\s+want\s+to|\s+gonna|'d\s+like\s+to|\s+would\s+like\s+to|"
    r"\s+prefer\s+to)\s+(?:[\w`./-]+\s+){0,8}?(?:by\s+)?(?:myself|manually|by\s+hand)\b"
    r"|\b(?:stop|pause|halt)\s+(?:and|then)\s+(?:tell|ask|ping|check\s+with|wait\s+for)\s+me\b"
    r"|^(?:please\s+)?wait\s+(?:until|till|for)\s+(?:the|it|i|my|we|you|this|that|CI|\S+\s+(?:is|are|shows?|passes|turns))\b"
    r"|\bi'?ll\s+(?:do|handle|take\s+care\s+of|merge|commit|push|run|deploy|release|instruct|decide|review)\b"
    r"(?:\s+(?:it|that|this|them|those|the\s+\w+|you))?(?:\s+\w+){0,3}?\s*(?:manually|myself|by\s+hand|over\s+there|later|the\s+next\s+steps?|next)\b"
    r"|\bthen\s+i'?ll\s+(?:instruct|tell\s+you|let\s+you\s+know|decide)"
    r"|\b(?:wait\s+for\s+(?:me|my)\b|check\s+with\s+me\s+(?:before|first)|ask\s+(?:me\s+)?(?:before|first)\b|"
    r"(?:should|must)\s+(?:always\s+)?ask\s+(?:me\s+)?(?:before|first|or\b)|(?:specifically\s+)?be\s+told\s+to|"
    r"only\s+when\s+i\s+(?:say|tell|ask)|until\s+i\s+(?:say|tell|ask|confirm|approve))"
    # an order of work: "we should first get a good design before looking into implementation"
    r"|^(?:we|you|let'?s)\s+(?:should\s+|must\s+|need\s+to\s+|have\s+to\s+)?first\s+\w.{2,80}?\s+before\s+"
    r"(?:(?:we|you)\s+)?(?:\w+ing|start|begin|implement|touch|change|write|code)\b",
    re.IGNORECASE,
)
#: An imperative to look before acting: "study the schema before you edit it", "outline the approach before writing
#: code", "show me the diff before committing" — the act held back is a change to the work (not "again": a re-read).
_LOOK_FIRST = _Lazy("_LOOK_FIRST",
    r"^(?:please\s+)?(?:always\s+)?(?:read|review|study|investigate|inspect|plan|make\s+a\s+plan|present|show\s+me|propose|"
    r"explain|list|return|check|verify|test|discuss|outline|describe|share)\b.{0,100}?\s+before\s+(?:(?:you|we)\s+(?:do\s+)?)?"
    r"(?:(?:any|making\s+any|starting)\s+)?(?:edit\w*|chang\w*|build\w*|cod\w*|implement\w*|touch\w*|modif\w*|writ\w*|"
    r"commit\w*|push\w*|merg\w*|deploy\w*|amend\w*|apply\w*|refactor\w*|settl\w*|start\w*)\b",
    re.IGNORECASE,
)
_IMPLICIT = _Lazy("_IMPLICIT",
    r"^no+\s*[,.!:-]+\s*(?:(?:just|please)\s+)?(?:ignore|skip|leave|forget\s+about|drop)\s+(?:it|that|this|them|those|the)\b"
    r"|^(?:ok(?:ay)?|fine|alright)?[\s,.]*do\s+nothing\b"
    r"|^no+\s*[,.!:-]+\s*(?:this|that|it)(?:'s|\s+is)\s+(?:fine|ok(?:ay)?|good|correct|intended|right)\b"
    r"|^no+\s*[,.!:-]+\s*i\s+(?:did\s+not|didn'?t)\s+(?:say|ask)"
    r"|^(?:no+\W+)?i\s+(?:said|told\s+you|asked\s+(?:for|you\s+to))\s+(?:(?:only|just)\s+[\w`.-]+|[\w`.-]+(?:\s+[\w`.-]+)?\s+only)\s*[.!]*$"
    r"|^(?:yes|yeah|ok(?:ay)?|sure)\s*[,.]?\s*but\s+(?:we|you)\s+(?:don'?t|do\s+not)\s+need\s+to\s+[a-z]",
    re.IGNORECASE,
)
#: Directive sentence frames, for the contrastive form "..., not Y".
_DIRECTIVE = _Lazy("_DIRECTIVE",
    r"^(?:(?:please|just|so|then|also|and|like)\s+)*(?:let'?s|we\s+(?:should|need\s+to|must|want|have\s+to)|i\s+want\b|"
    r"you\s+(?:should|need\s+to|must)|i\s+(?:want|need|would\s+like|'d\s+like)\s+(?:you\s+)?to|it\s+would\s+be\s+good\s+to|"
    r"make\s+sure|ensure|use|go|write|put|keep|make|add|return|show|summari[sz]e|store|send|read|run|create|"
    r"note|start|only)\b",
    re.IGNORECASE,
)
_CONTRAST = _Lazy("_CONTRAST",
    r"(?:,\s*(?:but\s+)?|\s+but\s+|^)not\s+(?!only\b|just\b|sure\b|yet\b|really\b|necessarily\b|always\b|that\b|"
    r"a\s+big\s+deal|an?\s+issue|bad\b|needed\b|required\b|necessary\b|possible\b|working\b|true\b|correct\b|the\s+case)"
    r"([\w`_*'\"~-].{2,120}|\.{1,2}/.{0,120})$",  # (a path: "not ./...")
    re.IGNORECASE,
)
#: A plan's decision against an action: "X (is) not recommended (at this time)", "X is discouraged".
_NOT_RECOMMENDED = _Lazy("_NOT_RECOMMENDED", r"^(?:[\w`.*/-]+\s+){0,6}?(?:is\s+|are\s+)?(?:\w+\s+and\s+)?"
                         r"(?:not\s+recommended|discouraged)\b", re.I)
#: The rejected alternative of a directive: "..., rather than adopting X".
#: ("instead of" is not one: in a plan's step it is an edit, "pass `a` instead of `b`", not a rule: a reviewed negative)
_RATHER = _Lazy("_RATHER", r"(?:,\s*|\s)rather\s+than\s+(?:[a-z]+ing\b|the\b|a\b|an\b|`|\"|')", re.I)
#: A leading phrase before a directive: "for the tests use X, not Y", "in the handler, return early".
_LEADING_PHRASE = _Lazy("_LEADING_PHRASE",
    r"^(?:for|in|on|with|inside|within|during|at|about|regarding)\s+(?:[\w`.'/-]+\s+){1,4}?,?\s*"
    r"(?=(?:please\s+)?(?:use|write|put|keep|make|add|return|go|run|store|send|create|call|pass|prefer|pick|choose|import)\b)",
    re.IGNORECASE,
)
#: "use X not Y" without a comma: a choice between two things.
_CHOICE_NOT = _Lazy("_CHOICE_NOT",
    r"^(?:please\s+)?(?:use|prefer|pick|choose|go\s+with|call|import|return|put|store|pass|target|depend\s+on)\s+\S.{0,60}?\s+"
    r"(?:and\s+|but\s+)?not\s+(?!only\b|just\b|sure\b|yet\b|really\b|necessarily\b|always\b|needed\b|required\b|necessary\b|"
    r"working\b|possible\b)(?:a|an|the|any|[\w`.-]+)\b"
    # where a thing goes, and where not: "the fixtures live in tests/data not the repo root", "X should be in Y, not Z"
    r"|^(?!(?:the\s+|this\s+|that\s+|our\s+)?(?:\w+\s+)?(?:bug|issue|problem|error|fault|crash|leak|failure|regression|cause|"
    r"culprit)s?\b)(?:[\w`.'-]+\s+){0,3}?[\w`.'-]+\s+(?:is|are|lives?|goes|go|belongs?|stays?|should\s+(?:be|live|go|stay)|"
    r"(?:should|must|can)\s+be\s+(?:stored|kept|put|placed|saved|written|defined|declared|loaded|read))\s+"
    r"(?:in|on|under|inside|into|at|to|from)\s+\S.{0,50}?,?\s+not\s+(?!only\b|just\b|sure\b|yet\b|really\b|always\b|"
    r"necessarily\b|working\b|possible\b|needed\b)(?:in\s+|on\s+|under\s+|at\s+|from\s+)?(?:the\s+|a\s+|an\s+|my\s+|our\s+)?"
    r"[\w`./-]+(?:\s+[\w`./-]+)?\s*[.!]*$",
    re.IGNORECASE,
)
_NOT_ING_BUT = _Lazy("_NOT_ING_BUT", r"^(?:like\s+)?not\s+(\w+ing\b.{2,100}?)\s+but\s+[a-z]", re.IGNORECASE)

_OPINION = _Lazy("_OPINION",
    r"^(?:i\s+(?:don'?t\s+|do\s+not\s+)?(?:think|feel|believe|guess|suppose|wonder|reckon|doubt|am\s+not\s+sure|'m\s+not\s+sure|"
    r"hope|mean|assume|suspect|bet)|imo|imho|in\s+my\s+opinion|it\s+seems|maybe|perhaps|probably|i'?m\s+(?:not\s+)?sure)\b",
    re.IGNORECASE,
)
_POSSIBILITY = _Lazy("_POSSIBILITY",
    r"\b(?:may|might|could|would)\s+(?:not|never)\b|\b(?:mightn'?t|couldn'?t|wouldn'?t)\b|"
    r"\b(?:don'?t|doesn'?t|do\s+not|does\s+not|didn'?t)\s+(?:have|need)\s+to\b|\bneedn'?t\b|\bno\s+need\b|"
    r"\bnot\s+(?:needed|necessary|required)\b|\bnever\s+mind\b|\bno\s+worries\b",
    re.IGNORECASE,
)
_QUESTION_START = _Lazy("_QUESTION_START",
    r"^(?:why|how|what|which|who|whom|whose|where|any\s+reason|is\s+there|are\s+there)\b|"
    r"^(?:is|are|was|were|do|does|did|can|could|would|will|shall|should|has|have|had|isn'?t|aren'?t|don'?t|doesn'?t|"
    r"didn'?t|shouldn'?t|couldn'?t|wouldn'?t|won'?t|can'?t)\s+(?:we|you|i|it|this|that|these|those|there|they|he|she|"
    r"the|a|an|any|our|your|my|its|claude|anyone|someone)\b(?!\s+(?:even\s+)?(?:dare|think\s+about)\b)",
    re.IGNORECASE,
)
_WH_QUESTION = _Lazy("_WH_QUESTION", r"^(?:why|how|what|which|who|whom|whose|where|any\s+reason)\b", re.IGNORECASE)
#: A question that asks for a negative action: "can we not push the tests to the end?".
_NEG_REQUEST = _Lazy("_NEG_REQUEST",
    r"^(?:(?:(?:can|could|would)\s+(?:we|you)|are\s+we\s+able\s+to|is\s+it\s+possible\s+to)\s+(?:please\s+)?"
    r"(?:not|avoid|stop|refrain\s+from|never)\s+(?!simply\b|just\b)[a-z]"
    # "should we maybe not X?" (hedged: "should we not X?" alone suggests X), "is it ok if you don't X?"
    r"|should\s+(?:we|you)\s+(?:maybe|perhaps|probably)\s+not\s+[a-z]"
    r"|(?:is|would)\s+(?:it|that)\s+(?:be\s+)?(?:ok(?:ay)?|alright|all\s+right|fine)\s+if\s+(?:you|we)\s+"
    r"(?:don'?t|do\s+not|didn'?t|did\s+not|never|not|wouldn'?t)\s+[a-z])",
    re.IGNORECASE,
)
#: A tag that asks for agreement, not a question of its own: "..., ok?", "..., right?".
_TAG_QUESTION = _Lazy(
    "_TAG_QUESTION", r"[,\s]+(?:ok(?:ay)?|right|yes|yeah|alright|got\s+it|understood|clear|deal|agreed)\s*\?+\s*$", re.I
)


#: Negative imperatives in two other languages developers mix into their English, as the English frame they say:
#: Spanish "no toques X" (a tú / usted subjunctive), "nunca", "nada de X"; French "ne touche pas (à) X",
#: "pas de X", "jamais de X", "évite de V". A closed list of the verbs coding agents are told not to do.
_FOREIGN_VERBS = {
    **dict.fromkeys("toques toque".split(), "touch"),
    "uses": "use",
    **dict.fromkeys("cambies cambie".split(), "change"),
    **dict.fromkeys("modifiques modifique".split(), "modify"),
    **dict.fromkeys("borres borre".split(), "delete"),
    **dict.fromkeys("elimines elimine quites".split(), "remove"),
    **dict.fromkeys("agregues agregue añadas añada".split(), "add"),
    **dict.fromkeys("subas suba".split(), "push"),
    **dict.fromkeys("hagas haga".split(), "make"),
    **dict.fromkeys("pongas ponga metas".split(), "put"),
    **dict.fromkeys("ejecutes ejecute corras corra".split(), "run"),
    **dict.fromkeys("instales instale".split(), "install"),
    **dict.fromkeys("muevas mueva".split(), "move"),
    **dict.fromkeys("rompas rompa".split(), "break"),
    **dict.fromkeys("edites edite".split(), "edit"),
    **dict.fromkeys("renombres renombre".split(), "rename"),
    **dict.fromkeys("publiques publique".split(), "publish"),
    **dict.fromkeys("despliegues despliegue".split(), "deploy"),
    **dict.fromkeys("actualices actualice".split(), "update"),
    **dict.fromkeys("escribas reescribas".split(), "write"),
    **dict.fromkeys("commitees commitee".split(), "commit"),
}
_FRENCH_VERBS = {  # (tu / vous)
    **dict.fromkeys("touche touchez".split(), "touch"),
    **dict.fromkeys("modifie modifiez".split(), "modify"),
    **dict.fromkeys("change changez".split(), "change"),
    **dict.fromkeys("supprime supprimez efface effacez".split(), "delete"),
    **dict.fromkeys("enlève enlevez retire retirez".split(), "remove"),
    **dict.fromkeys("ajoute ajoutez".split(), "add"),
    **dict.fromkeys("pousse poussez push pushe pushez".split(), "push"),
    **dict.fromkeys("utilise utilisez".split(), "use"),
    **dict.fromkeys("lance lancez exécute exécutez".split(), "run"),
    **dict.fromkeys("installe installez".split(), "install"),
    **dict.fromkeys("renomme renommez".split(), "rename"),
    **dict.fromkeys("casse cassez".split(), "break"),
    **dict.fromkeys("commit commite commitez".split(), "commit"),
    **dict.fromkeys("fais faites".split(), "make"),
    **dict.fromkeys("mets mettez".split(), "put"),
    **dict.fromkeys("déploie déployez".split(), "deploy"),
    **dict.fromkeys("merge mergez".split(), "merge"),
    **dict.fromkeys("réécris réécrivez écris écrivez".split(), "write"),
    **dict.fromkeys("crée créez".split(), "create"),
    **dict.fromkeys("publie publiez".split(), "publish"),
}
_SPANISH_VERBS = _FOREIGN_VERBS
_FOREIGN_VERBS = {**_SPANISH_VERBS, **_FRENCH_VERBS}
_SPANISH_VERB = "|".join(sorted(map(re.escape, _SPANISH_VERBS), key=len, reverse=True))
_FRENCH_VERB = "|".join(sorted(map(re.escape, _FRENCH_VERBS), key=len, reverse=True))
_FOREIGN_FRAMES = (
    (
        re.compile(
            rf"^no\s+(?:(?:me|te|le|lo|la|los|las|les|nos)\s+)?({_SPANISH_VERB})\b(?!\s+(?:of|for|in|left|remain))",
            re.I,
        ),
        "don't",
    ),
    (re.compile(rf"^nunca\s+(?:(?:me|te|le|lo|la|los|las|les|nos)\s+)?({_SPANISH_VERB})\b", re.I), "never"),
    (
        re.compile(
            rf"^(?:ne\s+|n['’]\s*)(?:(?:le|la|les|l['’]|y|en|me|lui|leur)\s*)*({_FRENCH_VERB})\s+(?:pas|plus|rien)\b"
            r"(?:\s+(?:à\s+la|à\s+l['’]|à|au|aux|a)\b)?",
            re.I,
        ),
        "don't",
    ),
    (
        re.compile(
            rf"^(?:ne\s+|n['’]\s*)(?:(?:le|la|les|l['’]|y|en|me|lui|leur)\s*)*({_FRENCH_VERB})\s+jamais\b"
            r"(?:\s+(?:à\s+la|à\s+l['’]|à|au|aux|a)\b)?",
            re.I,
        ),
        "never",
    ),
)
_FOREIGN_NO = _Lazy("_FOREIGN_NO", r"^(?:surtout\s+)?(?:pas|jamais)\s+(?:de\s+|d['’]\s*)|^nada\s+de\s+", re.I)
_FOREIGN_AVOID = _Lazy("_FOREIGN_AVOID", r"^(?:évite[sz]?\s+(?:de\s+|d['’]\s*)|evita\s+)", re.I)


def _english(clause: str) -> str:
    """A Spanish or French negative frame opening ``clause``, said in English ("no toques X" -> "don't touch X")."""
    for frame, neg in _FOREIGN_FRAMES:
        m = frame.match(clause)
        if m:
            return f"{neg} {_FOREIGN_VERBS[m.group(1).lower()]} {clause[m.end():].lstrip()}".rstrip()
    m = _FOREIGN_NO.match(clause) or _FOREIGN_AVOID.match(clause)
    if m:
        return f"{'no' if m.re is _FOREIGN_NO else 'avoid'} {clause[m.end():].lstrip()}".rstrip()
    return clause


#: "It's important not to V", "it is crucial that you don't V" (the importance frame is a marker elsewhere).
_IMPORTANT_NOT = _Lazy("_IMPORTANT_NOT",
    r"^(?:\W*(?:ok(?:ay)?|and|also|so|but|oh|note|nb|please)\W+)*(?:it'?s|it\s+is|this\s+is)\s+(?:very\s+|really\s+|super\s+|extremely\s+)?"
    r"(?:important|crucial|essential|critical|vital)\s+(?:that\s+(?:you|we|claude)\s+(?:don'?t|do\s+not|never|not|must\s+not|"
    r"mustn'?t|shouldn'?t|should\s+not)|(?:for\s+(?:you|us)\s+)?not\s+to|to\s+(?:not|never))\s+(?!forget|miss)[a-z]",
    re.IGNORECASE,
)


#: The agent named in the third person: "the assistant shall not run DDL", "Claude is not to push".
_ADDRESSEE_NOT = _Lazy("_ADDRESSEE_NOT",
    r"^(?:the\s+)?(?:assistant|agent|ai|model|bot|llm|claude(?:\s+code)?)\s+(?:(?:must|shall)\s+(?:not|never)|"
    r"mustn'?t|shan'?t|(?:is|are)\s+(?:not|never)\s+(?:to|allowed\s+to|permitted\s+to|supposed\s+to))\s+"
    r"(?:ever\s+)?(?!need\b|have\s+to\b|be\s+able\b|be\s+aware\b|know\b|see\b|notice\b|blame\b|be\s+blamed\b)[a-z]",
    re.IGNORECASE,
)


#: A parenthetical contrast on an instruction: "(not a cron job)", "(NOT the v1 API)".
_PAREN_NOT = _Lazy(
    "_PAREN_NOT",
    r"^(?:but\s+)?not\s+(?!only\b|just\b|sure\b|yet\b|needed\b|required\b|necessary\b|always\b|really\b)"
    r"(?:a|an|the|any|via|through|in|with|from|on|`|[\w./-]+)\b.{0,80}$",
    re.I,
)


#: An instruction to take something out: a "(no X)" on it names what goes, not a rule.
_REMOVAL_HOST = _Lazy(
    "_REMOVAL_HOST", r"^(?:remove|delete|drop|strip|clean\s+up|get\s+rid\s+of|eliminate|purge|disable)\b", re.I
)
#: A parenthetical that keeps its host as it is: "API contracts (unchanged)", "the schema (no changes)".
_PAREN_KEEP = _Lazy(
    "_PAREN_KEEP",
    r"^(?:stays?\s+)?(?:unchanged|untouched|unmodified|as[- ]is|keep\s+(?:it\s+)?as[- ]is|no\s+changes?|read[- ]only|"
    r"do\s+not\s+change|don'?t\s+change|stays?\s+the\s+same|kept\s+as[- ]is)$",
    re.I,
)
#: "No changes to X" / "No modifications to X": a scope rule wherever a plan says it.
_NO_CHANGES_TO = _Lazy("_NO_CHANGES_TO", r"^no\s+(?:changes?|modifications?|edits?)\s+(?:to|in)\s+\S.{0,80}$", re.I)
#: A plan heading that names a work item ("Task 1: Storage integration tests"): what it says is to be done.
_TASK_HEADING = _Lazy("_TASK_HEADING", r"^(?:\W*)(?:task|phase|part|milestone|stage)\s*[\d#:.-]", re.I)
#: A bold line that heads a list like a heading: "**Files to modify:**", "**Reference files (read-only):**".
_BOLD_HEADING = _Lazy("_BOLD_HEADING", r"^\*\*([^*\n]{2,80}?)(?::\*\*|\*\*:?)\s*$")
_PAREN_KEEP_HEADING = _Lazy(
    "_PAREN_KEEP_HEADING",
    r"\((?:unchanged|untouched|unmodified|as[- ]is|keep\s+as[- ]is|no\s+changes?|do\s+not\s+change|"
    r"don'?t\s+change|read[- ]only)\)",
    re.I,
)


#: A rule whose thing is a pronoun: "don't drop it", "never rename them" (about the thing of the clause before).
_ANAPHORIC_RULE = _Lazy(
    "_ANAPHORIC_RULE",
    r"^(?:please\s+)?(?:don'?t|dont|do\s+not|never)\s+(?:ever\s+)?[a-z'-]+\s+(?:it|them|that|this|those|these)\b",
    re.I,
)


def _strip_markers(clause: str) -> str:
    """Remove leading discourse markers ("ok, also", "no,", "please") and a leading condition."""
    prev = None
    s = _LEADING_SYMBOLS.sub("", clause).strip(" \t*_-\"'“”‘’")
    while s != prev:
        prev = s
        s = _MARKERS.sub("", s, count=1).strip(" ,.:!-*_\"'“”")
        s = _NO_MARKER.sub("", s, count=1).strip(" ,.:!-*_\"'“”")
        s = _CONDITION.sub("", s, count=1)
        s = _TIME_CLAUSE_BARE.sub("", s, count=1)
        s = _TOPIC.sub("", s, count=1)
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


def _questioned(clause: str, sentence: str) -> bool:
    """Is ``clause`` the part of the question ``sentence`` that asks? The clause that opens like a
    question, else (no clause does) the one that ends the sentence."""
    c = clause.strip().rstrip(" .)!\"'`*_?")
    if not c or _QUESTION_START.match(_strip_markers(c)):
        return True
    if any(_QUESTION_START.match(_strip_markers(_plain(k).strip())) for k, _ in clauses(sentence)):
        return False
    return sentence.strip().rstrip(" .)!\"'`*_?").endswith(c)


def is_question(sentence: str) -> bool:
    s = _TAG_QUESTION.sub("", _plain(sentence).strip())  # "don't push, ok?" asks nothing
    return s.rstrip(" .)!\"'`*_").endswith("?") or bool(_QUESTION_START.match(_strip_markers(s)))


def classify(unit: Unit, clause: str, parenthetical: bool, *, source: str) -> str | None:
    """The form of the prohibition ``clause`` states, or None (see the module docstring)."""
    found = classify_cue(unit, clause, parenthetical, source=source)
    return found[0] if found else None


#: The English explicit frames tried on a clause, in order: (cue name, pattern, matched against the clause
#: without markers "c" or as written "raw"). Their rows in :data:`EXTRACTION_CUES` say what each reads.
_EXPLICIT_FRAMES: tuple[tuple[str, re.Pattern[str] | _Lazy, str], ...] = (
    ("neg-imperative", _NEG_IMPERATIVE, "c"),
    ("addressee-not", _ADDRESSEE_NOT, "c"),
    ("important-not", _IMPORTANT_NOT, "raw"),
    ("modal-negation", _MODAL_NEGATION, "c"),
    ("requirement-not", _REQUIREMENT, "c"),
    ("needs-no", _NEEDS_NO, "c"),
    ("polite-not", _POLITE_NOT, "raw"),
    ("nothing-should", _NOTHING_SHOULD, "c"),
    ("should-not-act", _SHOULD_NOT_ACT, "c"),
    ("should-never", _SHOULD_NEVER, "c"),
    ("forbidden", _FORBIDDEN, "c"),
    ("fronted-please-not", _FRONTED_PLEASE_NOT, "c"),
    ("out-of-scope-lead", re.compile(r"^(?:out\s+of\s+scope(?:\s+for\s+now)?|non-goals?)\s*:\s*\S", re.I), "c"),
    # an instruction whose purpose forbids a result: "add a lock around the writer to prevent two workers from ..."
    (
        "purpose-prevent",
        re.compile(
            r"^(?:please\s+)?(?:add|use|make|wrap|put|set|guard|lock|move|split|validate|check|change|update|configure|pin|"
            r"gate|limit|restrict|mark|filter|scope)\b.{3,120}?\s(?:to|so\s+as\s+to|in\s+order\s+to)\s+(?:prevent|avoid|"
            r"stop)\s+(?!(?:any\s+|the\s+|further\s+)?(?:issues?|problems?|errors?|bugs?|breakage|confusion|conflicts?|"
            r"regressions?|mistakes?|duplication|that|this|it)\b)[\w`]",
            re.I,
        ),
        "c",
    ),
    (
        "avoid-modal",
        re.compile(
            r"^(?:you|we)\s+(?:should|must|need\s+to|have\s+to|'?d\s+better|ought\s+to)\s+(?:always\s+|really\s+|also\s+)?"
            r"(?:avoid|refrain\s+from|stay\s+away\s+from)\s+[a-z`]",
            re.I,
        ),
        "c",
    ),
    (
        "important-that-not",
        re.compile(
            r"^(?:it'?s|it\s+is)\s+(?:very\s+|really\s+|super\s+)?(?:important|crucial|essential|critical|vital)\s+"
            r"that\s+(?:it|this|the\s+[\w`.-]+(?:\s+[\w`.-]+)?)\s+(?:doesn'?t|does\s+not|never|won'?t|will\s+not|"
            r"isn'?t|is\s+not)\s+[a-z]",
            re.I,
        ),
        "c",
    ),
    # an exclusion that answers "which ones?": "everything but the flaky tests", "all except the migrations"
    # (not "everything but X works": a report)
    (
        "all-but",
        re.compile(
            r"^(?:(?:ok|yes|sure|so)\W+)?(?:(?:fix|do|keep|implement|include|commit|apply|update|change|address)\s+)?"
            r"(?:everything|all(?:\s+of\s+(?:them|it|these|those))?|all\s+the\s+\w+)\s+(?:but|except(?:\s+for)?)\s+"
            r"(?![^.!?]*\b(?:works?|worked|pass(?:es|ed)?|fail(?:s|ed)?|is|are|was|were|looks?|seems?|done|fine|ok|good|"
            r"broke|broken|ran|runs?)\b)[^.!?]{1,60}[.!]*$",
            re.I,
        ),
        "c",
    ),
    # "I don't want to add a second database", "we don't want to lose the logs": a wish against an action (not "I don't
    # want to spend long on it" / "... to bother you": the user's own effort)
    (
        "dont-want-to",
        re.compile(
            r"^(?:(?:but|and|so|also|still|really|honestly)\s+)*(?:i|we)\s+(?:really\s+|just\s+|also\s+)?"
            r"(?:don'?t|do\s+not|dont)\s+(?:really\s+)?want\s+to\s+(?!(?:spend|waste|bother|wait|rush|hurry|break|deal|think|"
            r"worry|get|be|go|do\s+(?:it|this|that)\s+(?:again|manually)|have\s+to|keep\s+(?:asking|doing|typing)|"
            r"repeat|say|ask|overthink|overdo|lose\s+(?:time|track|my|our))\b)[a-z`]",
            re.I,
        ),
        "c",
    ),
    # "I don't want the progress bar", "we don't need any new adapters": a wish against a thing (not "I don't want a
    # long answer" / "I don't need help": about the reply or the user, not the work; not "I don't like it")
    (
        "dont-want-thing",
        re.compile(
            r"^(?:(?:but|and|so|also|still|really|honestly|oh|sorry|ok|okay)\W+)*(?:i|we)\s+(?:really\s+|just\s+|also\s+)?"
            r"(?:don'?t|do\s+not|dont)\s+(?:really\s+)?(?:want|need)(?:\s+or\s+(?:want|need))?\s+"
            r"(?!(?:to|it|this|that|them|you|u|anything|much|any\s+more|anymore|help|more\s+time|"
            r"(?:a|an|the|any|your|long|short|lengthy|silly|detailed|full)\s+(?:\w+\s+)?(?:answers?|responses?|replies|"
            r"explanations?|lectures?|summary|summaries|details|excuses|apolog\w*|feedback|opinions?))\b)"
            r"[\w`*\"'(-]",
            re.I,
        ),
        "c",
    ),
    # "only use the staging data", "Only ask if X blocks you": a limit on an action, said as an order (not "only
    # X is left" / "it only runs once": a report)
    (
        "only-imperative",
        re.compile(
            r"^(?:(?:please|and|but|so|also|just)\s+)*only\s+(?:ever\s+)?(?:use|change|modify|edit|touch|ask|commit|run|"
            r"add|read|look\s+at|push|deploy|install|call|import|write\s+to|work\s+(?:on|in))\b",
            re.I,
        ),
        "c",
    ),
    (
        "requirement-not-adjective",
        re.compile(
            r"^(?:it|this|that|they|the\s+[\w`.*-]+(?:\s+[\w`.*-]+){0,3}|`[^`]+`(?:\s+\w+)?)\s+"
            r"(?:must|should|shall)\s+(?:not|never)\s+(?:be|get)\s+(?:\w+ly\s+)?\w+(?:able|ible)\b",
            re.I,
        ),
        "c",
    ),
)


#: A plan's "(not V-ed)" alone: the state of a thing it describes ("returned as text (not executed)"), not a rule.
_PAREN_NOT_STATE = _Lazy("_PAREN_NOT_STATE", r"^(?:but\s+)?not\s+(?:yet\s+)?[a-z]+(?:ed|en)$", re.I)


#: A plan's heading that recommends cutting a thing: "Recommend cutting: X", "Recommended to drop: X".
_CUT_HEADING = _Lazy("_CUT_HEADING", r"^recommend(?:ed|s)?\s+(?:to\s+)?(?:cutting|cut|dropping|drop|removing|remove|"
                     r"skipping|skip|deferring|defer)\s*:\s*\S", re.I)
#: A plan's scope cut: "Drop the X altogether", "Cut X for the MVP", "Remove Y from scope" (a decision that X is
#: not to be built; not a step that deletes code, which names no scope; not "cut it", whose thing a summary
#: restates unnamed).
_SCOPE_CUT = _Lazy("_SCOPE_CUT", r"^(?:drop|cut|scrap|skip|remove)\s+(?!(?:it|that|this|them)\b)"
                   r"(?!.*\b(?:line|lines|file|files|import|imports|function|call|test|tests)\b).{1,60}?\s+(?:(entirely|altogether|completely|from\s+(?:the\s+)?(?:scope|mvp|"
                   r"plan))|(for\s+(?:v\d+|now|the\s+mvp|mvp|this\s+(?:release|version|pr|phase|iteration))))\b", re.I)
#: A plan's line that existing things stay as they are: "Existing blobs unaffected", "existing users remain unchanged".
_EXISTING_UNAFFECTED = _Lazy("_EXISTING_UNAFFECTED", r"^(?:all\s+)?existing\s+[\w`.'/ -]{1,40}?\s+"
                             r"(?:(?:remain|stay|are|is|will\s+be)\s+)?(?:unaffected|unchanged|untouched|intact)\b",
                             re.I)
#: The noun a plan's scope exclusions follow: "non-goals (no X)", "out of scope (no Y)".
_NON_GOAL = _Lazy("_NON_GOAL", r"(?:\bnon-?goals?|\bout[\s-]+of[\s-]+scope|\bnot\s+in\s+scope|\bexclusions?)"
                  r"\W{0,4}$", re.I)


def _non_goal_host(text: str, clause: str) -> bool:
    """Whether the parenthetical ``clause`` of ``text`` follows a non-goals / out-of-scope noun."""
    at = text.find(clause.strip())
    opening = text.rfind("(", 0, at) if at > 0 else -1
    return opening > 0 and ")" not in text[opening:at] and bool(
        _NON_GOAL.search(_plain(text[max(0, opening - 40):opening]).rstrip()))


def _plan_cue(cue: str, source: str) -> str:
    """A plan's "X, not Y" describes its design ("compute once per change, not per render"): ``plan-contrast``."""
    return "plan-contrast" if cue == "contrast" and source == "plan" else cue


#: "make sure not to lose / miss / forget X": a request about how to do the work (an omission to avoid), not a rule
#: against an act the agent would choose.
_CAREFUL_NOT = _Lazy("_CAREFUL_NOT",
    r"^(?:let'?s\s+)?(?:make\s+sure|ensure|be\s+sure|be\s+careful|take\s+care|try)\s+(?:that\s+)?(?:you|we|it|they)?\s*"
    r"(?:not\s+to|to\s+not|don'?t|do\s+not|never|won'?t)\s+(?:ever\s+)?(?:lose|miss|forget|overlook|leave\s+out)\b",
    re.IGNORECASE,
)
#: An exhortation to be careful, not a rule about the work: "don't miss anything", "don't make any mistakes",
#: "never forget a thing", "don't hallucinate", a bare "don't assume" (blind fold AK: five of its six false alarms).
_EXHORTATION = _Lazy("_EXHORTATION",
    r"^(?:please\s+)?(?:and\s+)?(?:don'?t|do\s+not|never|not\s+to)\s+(?:ever\s+)?(?:"
    r"(?:miss|forget|overlook|leave\s+out|lose)\s+(?:anything|a\s+(?:single\s+)?thing|any\s+(?:single\s+)?(?:thing|details?|steps?))\b"
    r"|make\s+(?:any\s+|a\s+single\s+|even\s+one\s+)?(?:mistakes?|errors?)\b|hallucinate\b"
    r"|(?:assume|guess)(?:\s+anything)?\W*$)",
    re.IGNORECASE,
)
#: Claude Code's permission menu pasted with a screen: "2. Yes, and don't ask again for: git add:*".
_PERMISSION_MENU = _Lazy("_PERMISSION_MENU", r"\byes,\s+and\s+don't\s+ask\s+again\s+for\b", re.IGNORECASE)


def classify_cue(unit: Unit, clause: str, parenthetical: bool, *, source: str) -> tuple[str, str] | None:
    """``(form, cue)`` of the prohibition ``clause`` states, or None; ``cue`` names the row of
    :data:`EXTRACTION_CUES` that read it (a Spanish / French frame read in English: ``es:`` / ``fr:`` before it)."""
    raw = _plain(clause).strip()
    sent = _plain(unit.sentence or unit.text)
    if len(raw) < 4 or raw[0] in "\"“'" and not raw.lower().startswith(("'s ", "'ll ")):
        return None  # too short, or a quotation of someone else's words
    if _IMPLICIT.match(_plain(sent)):  # (sentence_forms reads those whole)
        return None
    if is_question(sent) and (_WH_QUESTION.match(_strip_markers(sent)) or _questioned(raw, sent)):
        # a question is judged per clause (the one that asks), but one opening with a wh-word asks about all of it
        return ("explicit", "neg-request") if _NEG_REQUEST.match(_strip_markers(raw)) else None
    stripped = _strip_markers(raw)
    c = _english(stripped)
    lang = _foreign_frame_language(stripped) if c != stripped else ""
    if (len(c) < 4 or _OPINION.match(c) or _POSSIBILITY.search(c) or _HEDGED.search(sent) or _CAREFUL_NOT.match(c)
            or _EXHORTATION.match(c) or _PERMISSION_MENU.search(sent) or _MAXIM.match(sent) or _COMPLAINT.search(c)):
        return None
    if source == "plan" and _NOT_RECOMMENDED.search(c):
        return "explicit", "plan-not-recommended"  # a plan's decision, in any section: "X is not recommended now"
    if source == "plan" and (cut := _SCOPE_CUT.match(c)):
        return ("defer" if cut.group(2) else "explicit"), "plan-scope-cut"
    if source == "plan" and not unit.descriptive and _EXISTING_UNAFFECTED.match(c):
        return "preserve", "plan-existing-unaffected"
    if parenthetical and source == "plan" and _no_np(c) and _non_goal_host(unit.text, clause):
        return "explicit", "plan-non-goals"  # "... and non-goals (no X, no Y)": the plan's scope exclusions
    if (
        unit.descriptive
    ):  # plan sections that describe: only explicit imperatives, and requirements outside test sections
        if _NEG_IMPERATIVE.match(c) and not c.lower().startswith("no "):
            return "explicit", lang + "plan-descriptive-imperative"
        if not _TEST_SECTION.search(unit.section) and (_REQUIREMENT.match(c) or _EXPLICIT_FRAMES[-1][1].match(c)
                                                       or _NO_CHANGES_TO.match(c)):
            return "explicit", "plan-context-requirement"  # "## Context ... No changes to the pipeline."
        return None
    for name, pattern, on in _EXPLICIT_FRAMES:
        if pattern.match(raw if on == "raw" else c):
            return "explicit", lang + name
    if source == "plan" and _NOT_RECOMMENDED.search(c):
        return "explicit", "plan-not-recommended"  # a plan's decision: "CLAUDE.md update is not recommended now"
    if _PURPOSE_NOT.match(raw) and source in ("user", "plan") and _purpose_of_directive(clause, sent):
        return "explicit", "purpose-not"  # "refactor X so that it doesn't touch the cache": the result must not
    np = _no_np(c)
    if np and (
        not re.match(r"no\s+more\b", np, re.I) or _NO_NP_DIRECTIVE.search(np)
    ):  # "no more X": a result, unless an order
        # "no X" is a decision only inside a decision list, a parenthetical, a plan's list item, said with force,
        # or beside an instruction of the same message ("fix X. C89. no VLAs.", "skip Y for now; no changes to Z").
        if (_NO_NP_DIRECTIVE.search(np) or _POLITE_NO.match(raw)) and not _NO_RESULT.match(np):
            return "explicit", lang + "no-x-forceful"
        if unit.decisions:
            return "explicit", lang + "no-x-decisions"
        if (
            parenthetical
            and _directive_host(unit)
            and not _REMOVAL_HOST.match(_strip_markers(_plain(_PAREN.sub(" ", unit.text))))
        ):
            return (
                "explicit",
                lang + "no-x-parenthetical",
            )  # not "Remove the hover styles (no `cursor-pointer`)": examples
        if unit.imperative_list and _NO_PAIR.match(_plain(unit.text).strip(" .;*_")) and not any(
                _NO_RESULT.match(part.strip()) for part in re.split(r"[,;]\s*(?:and\s+|or\s+)?", _plain(unit.text))):
            return "explicit", lang + "no-x-paired"  # a step that is "No state transitions, no cleanup": two refusals
        if unit.imperative_list:
            return "explicit", lang + "no-x-instruction-list"
        if _then_imperative(clause, unit.sentence):
            return "explicit", lang + "no-x-then-instead"
        if not parenthetical and _beside_directive(clause, unit, np, source):
            return "explicit", lang + "no-x-beside-instruction"
        if (source == "plan" and not parenthetical and not _NO_RESULT.match(np) and not _NO_REPORT_TAIL.search(np)
                and re.search(r"[^\W\d_]{3}", np[3:])
                and _plain(unit.text).strip(" .;*_").lower() == _plain(clause).strip(" .;*_").lower()):
            return "explicit", "plan-no-x"  # a plan's sentence or item that is only "No production code changes."
    if _PRESERVE.match(c) and not _PRESERVE_BAD.search(c):
        return "preserve", "keep-existing"
    if _MUST_STAY.match(c):
        return "preserve", "must-stay"
    if _PRESERVE_VERB.match(c) and not _PRESERVE_BAD.search(c):
        return "preserve", "preserve-verb"
    if _DEFER.search(c):
        return "defer", "defer-marker"
    if _RESTRAINT.search(c):
        return "restraint", "restraint"
    if _CONSULT.search(c):
        return "restraint", "consult-first"
    if _LOOK_FIRST.search(c) and not re.search(r"\bagain\b", c, re.I):
        return "restraint", "look-first"
    if _DISLIKE.match(c) and source == "user":
        return "explicit", "dislike-rule"
    return None


def _foreign_frame_language(clause: str) -> str:
    """``"es:"`` / ``"fr:"``: the language of the negative frame :func:`_english` read at the start of ``clause``."""
    for frame, _ in _FOREIGN_FRAMES:
        m = frame.match(clause)
        if m:
            return "fr:" if m.group(1).lower() in _FRENCH_VERBS and frame.pattern.startswith("^(?:ne") else "es:"
    if re.match(r"^nada\s+de\s+|^evita\s+", clause, re.I):
        return "es:"
    return "fr:"


#: A hedged idea, not a rule: "maybe we could X, or we shouldn't Y at all", "perhaps don't ..."
#: (an alternative floated).
#: A complaint about what the work cost the user, not an order: "no more wasting my afternoons on this", "stop the
#: waste of my credits" (the object is the user's time, money or tokens, not a thing in the work).
_COMPLAINT = _Lazy("_COMPLAINT", r"\bwast(?:e|es|ed|ing)\b(?:\s+of)?\s+(?:(?:my|our|your|the\s+user'?s|client)\s+)?"
                                 r"(?:\w+\s+)?(?:time|tokens?|days?|hours?|weeks?|afternoons?|mornings?|money|effort|credits?)\b",
                   re.I)
_HEDGED = _Lazy("_HEDGED",
    r"\b(?:maybe|perhaps|possibly)\b.{0,120}\bor\b|\bor\s+(?:maybe|perhaps)\s|\bor\s+(?:we|you)\s+(?:shouldn'?t|should\s+not|could|might|"
    r"may)\b|\b(?:i'?m\s+)?(?:not\s+sure|wondering)\s+(?:if|whether)\b|\bi\s+wonder\b|\b(?:what\s+if|how\s+about)\b",
    re.IGNORECASE,
)
#: Preserve rules with another verb than "keep": "maintain X", "stick with X", "leave X unchanged",
#: "Keep unchanged: ...".
_PRESERVE_VERB = _Lazy("_PRESERVE_VERB",
    r"^(?:please\s+)?(?:(?:maintain|preserve|retain)\s+(?:the\s+|our\s+|all\s+|existing\s+|current\s+|backwards?\s+|"
    r"compatibility|`)[\w`*-]"
    r"|(?:stick|stay)\s+with\s+(?:the\s+|our\s+|existing\s+|current\s+|`)?[\w`]"
    r"|leave\s+.{1,60}?\s+(?:unchanged|unmodified|untouched|as\s+(?:it\s+is|they\s+are|is))\b"
    r"|keep\s+(?:unchanged|untouched|as[- ]is|intact)\s*:\s*\S"
    r"|(?:do\s+)?not\s+change\s*:\s*\S)",
    re.IGNORECASE,
)
#: Restraint without a negation word: "ask me before changing X", "check with me first",
#: "let me review before you commit".
_CONSULT = _Lazy("_CONSULT",
    r"^(?:please\s+)?(?:always\s+)?(?:ask|check\s+with|consult|confirm\s+with|ping)\s+me\s+(?:first\b|before\s+\w)"
    r"|^(?:please\s+)?(?:let|have)\s+me\s+(?:review|approve|sign\s+off\s+on)\b.{0,60}\bbefore\s+(?:you|we|it|anything)\b"
    r"|^(?:please\s+)?(?:get|wait\s+for)\s+my\s+(?:approval|ok(?:ay)?|sign[- ]off|go[- ]ahead|confirmation)\s+before\b"
    r"|\bask\s+me\s+to\s+(?:test|run|check|verify|try|review|approve|merge|deploy|commit|push|confirm)\b"
    # joined to the work it holds back: "make the change and confirm with me before you deploy", "and get my approval"
    r"|\band\s+(?:then\s+)?(?:ask|check\s+with|confirm\s+with|consult)\s+me\s*(?:first\b|before\s+\w|[.!]*$)"
    r"|\band\s+(?:then\s+)?(?:get|wait\s+for)\s+my\s+(?:approval|ok(?:ay)?|sign[- ]off|go[- ]ahead|confirmation)\b"
    r"|^(?:please\s+)?(?:always\s+)?run\s+(?:it|this|that|them|those|(?:the|any|your)\s+\w+(?:\s+\w+)?)\s+by\s+me\s+"
    r"(?:first\b|before\s+\w)",
    re.IGNORECASE,
)
#: A dislike stated as a rule: "i don't like it when you X", "i hate when you X" (about the agent's conduct).
_DISLIKE = _Lazy(
    "_DISLIKE",
    r"^i\s+(?:really\s+)?(?:don'?t|do\s+not)\s+(?:like|want)\s+(?:it\s+)?when\s+(?:you|claude|the\s+agent)\s+[a-z]"
    r"|^i\s+(?:really\s+)?hate\s+(?:it\s+)?when\s+(?:you|claude)\s+[a-z]",
    re.IGNORECASE,
)


_NO_NP_TRAILER = _Lazy(
    "_NO_NP_TRAILER",
    r"\s*,\s*(?:obviously|of\s+course|please|pls|plz|thanks|thx|ok(?:ay)?|as\s+usual|as\s+always|again|"
    r"either|too|for\s+now|this\s+time|ever|thank\s+you)\s*[.!]*$",
    re.I,
)
#: What a terse report says there is none of ("no errors", "no luck"): not something the agent could be told not to add.
_NO_RESULT = _Lazy("_NO_RESULT",
    r"^no\s+(?:(?:new|more|other|further|real|visible|obvious|such)\s+)?(?:errors?|warnings?|output|outputs|response|responses|results?|"
    r"difference|differences|effect|effects|improvement|luck|success|dice|joy|issues?|problems?|crash(?:es)?|failures?|"
    r"data|events?|match(?:es)?|hits?|reply|replies|progress|activity|signal|sound|logs?\s+(?:at\s+all|yet)|"
    r"idea|clue|change(?:s)?(?!\s+(?:to|in|on)\s)|diff|movement|trace|traces|sign|signs|complaints?|regressions?|"
    r"failing|reaction|feedback|news|update|updates|answer|time|one|longer|way|conflicts?|hurry|rush|worries|"
    r"downtime|delay|lag|leaks?|panics?|exceptions?\s+(?:thrown|raised))\b", re.I)
#: ... or where it finds none ("no Docker here", "no tests cover it though").
#: A list item that is only refusals: "No X, no Y" (each "no" before a noun phrase of its own).
_NO_PAIR = _Lazy("_NO_PAIR", r"^no\s+[^,;]{2,60}(?:[,;]\s*(?:and\s+|or\s+)?no\s+[^,;]{2,60})+$", re.I)
_NO_REPORT_TAIL = _Lazy(
    "_NO_REPORT_TAIL",
    r"\b(?:here|there|anywhere|though|so\s+far|now|yet|today|either|at\s+the\s+moment)\s*[.!]*$",
    re.I,
)


def _no_np(c: str) -> str:
    """The "no X" noun phrase ``c`` is ("no orphan instances, hlint complains" -> "no orphan instances"), or ""."""
    c = _NO_NP_TRAILER.sub("", c)
    head = re.split(r"\s*,\s*", c, maxsplit=1)[0] if re.match(r"^no\s", c, re.I) else c
    if _NO_NP.match(head) and not _NO_NP_BAD_TAIL.search(head):
        return head
    return ""


def _is_directive(sentence: str) -> bool:
    """Does ``sentence`` (or a clause) tell the agent to do something, or not to?"""
    c = _english(_strip_markers(_plain(sentence).strip()))
    if not c or is_question(c) or _OPINION.match(c) or _POSSIBILITY.search(c):
        return False
    d = _LEADING_PHRASE.sub("", c)
    return bool(starts_imperative(d) or _DIRECTIVE.match(d) or _NEG_IMPERATIVE.match(c) or _MODAL_NEGATION.match(c)
                or _ADDRESSEE_NOT.match(c) or _DEFER.search(c) or (_PRESERVE.match(c) and not _PRESERVE_BAD.search(c)))


def _beside_directive(clause: str, unit: Unit, np: str, source: str) -> bool:
    """Is the short "no X" ``np`` said beside an instruction: another clause of its sentence, or the last sentence
    before it on its line that is more than a fragment ("fix the parser. C89. no VLAs.")? Not a report ("no errors")."""
    if (source != "user" or unit.descriptive or unit.item or _NO_RESULT.match(np) or _NO_REPORT_TAIL.search(np)
            or len(np.split()) > 6):
        return False
    others = [k for k, par in clauses(unit.sentence) if not par and _plain(k).strip() != _plain(clause).strip()]
    if is_question(unit.sentence) or any(re.match(r"^\W*\d[\d.,]*%?\s+[a-z]", _plain(k)) for k in others):
        return False  # a question, or a tally ("0 loose objects, 2 packs, no garbage")
    if any(_is_directive(k) and not _LOOKING.match(_strip_markers(_plain(k).strip())) for k in others):
        return True
    for prev in reversed(unit.before):
        n = len(re.findall(r"[A-Za-z]\w*", prev))
        if n == 1 or (n == 2 and not _is_directive(prev)):
            continue  # a fragment ("C89.", "Clean.") between the instruction and the "no X"
        # not after "open the page" / "try it in X": what follows is what the user saw there ("No save button.")
        return (
            _is_directive(prev) and not is_question(prev) and not _LOOKING.match(_strip_markers(_plain(prev).strip()))
        )
    return False


#: Instructions to go and look: the "no X" after one reports what is (not) there.
_LOOKING = _Lazy(
    "_LOOKING",
    r"^(?:look|see|check|open|visit|click|tap|navigate|go|browse|refresh|reload|try|view|inspect|compare|watch|"
    r"notice|load|launch|start|scroll|hover|log\s+in|sign\s+in|login)\b",
    re.I,
)


def _purpose_of_directive(clause: str, sentence: str) -> bool:
    """Is the purpose clause ``clause`` ("so that it doesn't V") the purpose of an instruction before it in its
    sentence ("Wrap it in a flag so we don't break users"), not of a description ("It returns early so that ...")?"""
    c, s = _plain(clause).strip(), _plain(sentence)
    at = s.find(c)
    if at <= 0 or is_question(s):
        return False
    host = _strip_markers(s[:at].strip(" ,;"))
    return bool(host) and (starts_imperative(host) or bool(_DIRECTIVE.match(host)))


def _then_imperative(clause: str, sentence: str) -> bool:
    """Is ``clause`` followed in its sentence by an imperative ("no exceptions across the API, return codes")?"""
    c, s = _plain(clause).strip(), _plain(sentence)
    at = s.find(c)
    return (
        at >= 0
        and bool(re.match(r"\s*[,;]\s*(?:(?:please|just|and)\s+)?(?:only\s+)?([a-z]+)\b", s[at + len(c) :], re.I))
        and (starts_imperative(re.sub(r"^\s*[,;]\s*(?:(?:please|just|and)\s+)?(?:only\s+)?", "", s[at + len(c) :])))
    )


def _directive_host(unit: Unit) -> bool:
    """The sentence a parenthetical stands in names a decision: a bold label, an instruction, decisions."""
    host = _strip_markers(_plain(_PAREN.sub(" ", unit.text))).strip(" :")
    return (
        bool(re.fullmatch(r"[\w `./-]{1,60}", host) and re.search(r"\*\*", unit.text))
        or starts_imperative(host)
        or bool(
            re.search(
                r"\b(?:decisions?|constraints?|rules?|non-goals?|out\s+of\s+scope|"
                r"exclusions?)\b",
                host,
                re.I,
            )
        )
    )


def sentence_forms(unit: Unit) -> list[tuple[str, str, str]]:
    """``(form, text, cue)`` read from the whole sentence: a request for a negative action, a decline, a contrast."""
    s = _plain(unit.text).strip()
    core = _strip_markers(s)
    if _NEG_REQUEST.match(core):
        return [("explicit", s, "neg-request")]
    m = _IMPLICIT.match(s)
    if m:
        end = re.search(r"[,.;!?:]", s[m.end():])
        return [("implicit", s[: m.end() + end.start()] if end else s, "decline")]
    if unit.descriptive or _HEDGED.search(s):
        return []
    return [("contrastive", c, cue) for c, cue in contrastive(unit)]


def contrastive(unit: Unit) -> list[tuple[str, str]]:
    """``(text, cue)`` of the contrast a directive sentence draws: "do X, not Y" (the whole), "not X-ing but do Y"
    (the "not" part)."""
    core = _strip_markers(_plain(_PAREN.sub(" ", unit.text)).strip())
    if is_question(core):
        return []
    if _OPINION.match(core) or _POSSIBILITY.search(core):  # "I think X, so update Y, rather than Z": the directive
        for clause, par in clauses(unit.text)[1:]:
            d = _LEADING_PHRASE.sub("", _strip_markers(_plain(clause).strip()))
            if not par and (_DIRECTIVE.match(d) or starts_imperative(d)) and _RATHER.search(d):
                return [(d, "contrast")]
        return []
    m = _NOT_ING_BUT.match(core)
    if m:
        return [(f"not {m.group(1)}", "contrast")]
    lead = _LEADING_PHRASE.sub("", core)
    if (_DIRECTIVE.match(lead) or starts_imperative(lead) or unit.decisions) and _CONTRAST.search(core):
        return [(core, "contrast")]  # a directive "..., not Y", or any "X, not Y" item of decisions / constraints
    for clause, par in clauses(unit.text):  # "..., use X not Y": the clause that draws it
        c = _strip_markers(_plain(clause).strip())
        if par or _POSSIBILITY.search(c) or _OPINION.match(c):
            continue
        d = _LEADING_PHRASE.sub("", c)
        if _CHOICE_NOT.match(d) or (c != core and _DIRECTIVE.match(d) and _CONTRAST.search(d)):
            return [(c, "contrast")]
        if (_DIRECTIVE.match(d) or starts_imperative(d)) and _RATHER.search(d):
            return [(c, "contrast")]  # "so update the whitepaper to say that, rather than adopting the example's X"
    if _SHOULD_HOST.match(lead) and _CONTRAST.search(core):
        return [(core, "contrast-requirement")]  # a requirement "X should be stored in Y, not in Z"
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
    explicitly specifically intentionally intentional deliberately important
    either neither both each every other another same own itself themselves yourself yourselves ourselves myself
    himself herself when whenever while though although because since until unless whether if once what which who
    whom whose where how why anything everything something nothing anyone everyone someone nobody none
    new extra additional existing current further via per within through across pls plz kindly rather best
    better alone against toward towards upon among amongst beside besides beyond despite except instead unlike
    around behind below above near along alongside throughout""".split()
)
#: Negations typed without an apostrophe (also stop words).
_BARE_NEGATIONS = frozenset("dont wont cant didnt doesnt isnt arent wasnt werent shouldnt wouldnt couldnt mustnt "
                            "hasnt havent hadnt neednt".split())
_WORD = _Lazy("_WORD", r"[a-z0-9][a-z0-9_'./~-]*")
#: "untouched", "unchanged", "uncommitted": the verb, negated (and a negation cue in a summary).
_UN_PARTICIPLE = _Lazy("_UN_PARTICIPLE", r"un([a-z]{3,}ed)")
_NOT_UN_PARTICIPLE = frozenset("united unified unleashed unnamed undertaked underlined underscored unwrapped".split())
_SUMMARY_NEGATION = _Lazy("_SUMMARY_NEGATION",
    r"\b(?:not|no|never|none|nothing|don't|dont|doesn't|didn't|won't|wouldn't|mustn't|shouldn't|cannot|can't|"
    r"avoid\w*|forb[ia]d\w*|prohibit\w*|without|refrain\w*|instead|rather|except|exclud\w*|skip\w*|"
    r"declin\w*|reject\w*|(?:decided|decides|deciding|advised|argued|voted|chose|went|recommended)\s+against|"
    r"ignor\w*|omit\w*|dropp?\w*|revert\w*|remov\w*|stop\w*|only|"
    r"out\s+of\s+scope|non-goals?|defer\w*|later|exempt\w*|off[- ]limits|no[- ]go|banned|disallowed|at\s+most|"
    r"no\s+more\s+than|not\s+more\s+than|at\s+the\s+most|capped|(?:stay\w*|keep\w*|kept|left|leave)\s+out)\b",
    re.IGNORECASE,
)
#: The user keeps the action: a summary saying so carries a prohibition of it ("the user applies it himself").
_USER_KEEPS = _Lazy(
    "_USER_KEEPS",
    r"\b(?:himself|herself|themselves|(?:the\s+)?user\s+(?:will|would|wants\s+to|prefers\s+to|is\s+going\s+to)|"
    r"(?:for|to)\s+the\s+user\s+to|left\s+to\s+the\s+user|user'?s\s+(?:call|job|decision)|"
    # someone else keeps the action: "left to the release manager", "for the DBA to apply"
    r"left\s+to\s+(?:the|their|our|his|her)\s+\w+(?:\s+\w+)?|for\s+(?:the\s+|their\s+|our\s+)\w+(?:\s+\w+)?\s+to\s+[a-z]+)\b",
    re.I,
)
_SUMMARY_CUES = {
    "preserve": re.compile(
        r"\b(?:keep\w*|kept|preserv\w*|retain\w*|intact|unchanged|untouched|stays?|remain\w*|local|leave|left|"
        r"in\s+place|as[- ]is)\b",
        re.I,
    ),
    "defer": re.compile(
        r"\b(?:defer\w*|later|postpon\w*|follow[- ]?up|separate|future|out of scope|next phase|phase \d+)\b", re.I
    ),
    "restraint": re.compile(
        r"\b(?:instruct\w*|manual\w*|himself|herself|themselves|user will|user would|wait\w*|ask\w*|told|tell)\b", re.I
    ),
}
#: A summary saying a thing stays as it was ("left untouched", "still in place"): it carries a rule not to change,
#: remove, rename or refactor that thing (when the thing's words are next to it).
_STAYS = _Lazy(
    "_STAYS",
    r"\b(?:unchanged|untouched|unmodified|intact|kept|keeps|preserved|retained|stays?|stayed|remains?|remained|"
    r"as[- ]is|in\s+place|left\s+(?:alone|as|untouched|unchanged|in\s+place)|still\s+(?:there|present|exists?|"
    r"in\s+place|used)|"
    r"off[- ]limits|read[- ]only|frozen|hands[- ]off|no[- ]go)\b",
    re.I,
)
#: A summary negating a thing itself ("no new ORM", "without Lombok"): it carries a rule not to add or use it.
_NEGATED_THING = frozenset("no without zero non".split())
#: Words that may stand between such a negation and the thing ("no new ORM", "without any extra flags").
_MODIFIERS = frozenset("a an the any new extra additional further more other such single separate own".split())

#: Verbs of one action: a summary may say any of them for the prohibition's verb (matched by stem).
VERB_CLASSES = {
    "change": "touch touched modify modified change changed edit edited alter altered rewrite rewrote rewritten tweak "
              "update updated bump bumped overwrite overwrote overwritten",
    "remove": "remove removed delete deleted drop dropped erase erased wipe wiped purge purged",
    "add": "add added introduce introduced create created",
    "run": "run ran execute executed trigger triggered",
    "rename": "rename renamed",
    "break": "break broke broken",
    "refactor": "refactor refactored restructure restructured",
}
#: Classes whose prohibition a "stays as it was" sentence carries.
_KEEPING_CLASSES = frozenset({"change", "remove", "rename", "refactor", "break"})
#: Verbs whose prohibition a "no X" / "without X" sentence carries (adding or using the thing).
_INTRODUCING_VERBS = frozenset("add introduce create use install import write bring pull hardcode hard-code".split())


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


_VERB_CLASS = {_stem(w): name for name, words in VERB_CLASSES.items() for w in words.split()}


#: Short forms developers type, said in full in summaries ("no new deps" / "No new dependencies"): the same stem.
_ABBREVIATIONS = {
    **dict.fromkeys("dep deps".split(), "dependency"), **dict.fromkeys("repo repos".split(), "repository"),
    **dict.fromkeys("config configs cfg".split(), "configuration"), **dict.fromkeys("env envs".split(), "environment"),
    **dict.fromkeys("doc docs".split(), "documentation"), **dict.fromkeys("impl impls".split(), "implementation"),
    **dict.fromkeys("pkg pkgs".split(), "package"), **dict.fromkeys("lib libs".split(), "library"),
    **dict.fromkeys("func funcs fn fns".split(), "function"), **dict.fromkeys("arg args".split(), "argument"),
    **dict.fromkeys("param params".split(), "parameter"), **dict.fromkeys("dir dirs".split(), "directory"),
    **dict.fromkeys("db dbs".split(), "database"), **dict.fromkeys("msg msgs".split(), "message"),
    **dict.fromkeys("var vars".split(), "variable"), "perf": "performance", "prod": "production", "info": "information",
    **dict.fromkeys("tmp temp".split(), "temporary"), **dict.fromkeys("spec specs".split(), "specification"),
    "k8s": "kubernetes", **dict.fromkeys("util utils".split(), "utility"),
}


@lru_cache(maxsize=65_536)
def _content(raw: str) -> str | None:
    """The stem a word counts by, or None for a stop word: contractions, hyphens and "un-X-ed" normalized."""
    bare = re.sub(r"'(?:s|re|ll|ve|d|m)$", "", raw)
    if raw in _STOPWORDS or bare in _STOPWORDS or raw.strip("'") in _STOPWORDS or raw.endswith("n't") or (
            raw in _BARE_NEGATIONS):
        return None
    if "-" in bare and bare.replace("-", "").isalpha():
        bare = bare.replace("-", "")  # "hard-coded" ~ "hardcoded"
    bare = _ABBREVIATIONS.get(bare, bare)
    m = _UN_PARTICIPLE.fullmatch(bare)
    if m and bare not in _NOT_UN_PARTICIPLE:
        bare = m.group(1)
    w = _stem(bare)
    return w if len(w) > 1 and w not in _STOPWORDS else None


def _words_of(text: str) -> list[str]:
    """The words of ``text`` in order: normalized, paths cut at "/" (``e2e/fixtures`` is two words)."""
    out: list[str] = []
    for token in _WORD.findall(normalize(_plain(text)).replace("’", "'")):
        split = "/" in token.strip("/") and any(len(p) > 1 for p in token.split("/"))  # "j/k", "y/n" stay whole
        for part in token.split("/") if split else [token]:
            part = part.strip("./~`'-")
            if "_" in part.strip("_") and "." not in part:
                out.extend(p for p in part.split("_") if p)  # snake_case: its words ("schedule_interval")
            elif part:
                out.append(part)
    return out


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about: lower-cased, stemmed (Snowball), no stop words."""
    return frozenset(w for w in map(_content, _words_of(text)) if w)


def _class_of(stem: str) -> str:
    return _VERB_CLASS.get(stem, stem)


@dataclass(frozen=True)
class _Key:
    """What a summary sentence must say to carry a prohibition."""

    words: frozenset[str]  # content words, a verb replaced by its class
    thing: frozenset[str]  # the same without the verb: what it acts on
    verb: str | None  # the verb's class (or stem)
    introducing: bool  # a rule against adding / using the thing (or a verbless "no X")
    names: frozenset[str] = frozenset()  # code names in the thing (`` `LegacyAuth` ``, ``ProfileModal``): one suffices
    acronyms: frozenset[str] = frozenset()  # upper-case names in the thing ("ARM NEON port"): a short name of it


#: A negation frame: the word after it is the forbidden verb ("don't / never / avoid / let's not / we won't V").
_KEY_NEG_FRAME = _Lazy("_KEY_NEG_FRAME",
    # a list lead first ("Not doing: X" is not "not" + the verb "doing")
    r"^(?:(?:(?:don'?ts?|do\s+not|never|avoid|must\s+not|non-goals?|out\s+of\s+scope|not\s+in\s+scope|won'?t\s+do|"
    r"will\s+not\s+do|not\s+doing|excluded)\s*:|(?:can|could|would|will)\s+(?:you|we)(?:\s+please)?|are\s+we\s+able\s+to|"
    r"is\s+it\s+possible\s+to|"
    r"(?:do\s+not|don'?t|dont)\s+you\s+(?:even\s+)?(?:dare|think\s+about)|"
    r"do\s+not|don'?t|dont|never(?:\s+ever)?|let'?s\s+not|let\s+us\s+not|avoid|stop|quit|refrain\s+from|not|"
    r"(?:you|we|u)\s+(?:must|should|shall|may|will)\s+(?:not|never)|(?:you|we)\s+(?:mustn'?t|shouldn'?t|shan'?t|won'?t|can'?t|cannot)|"
    r"(?:you|we)\s+(?:are|'re)\s+not\s+(?:allowed|permitted|supposed)\s+to|"
    r"(?:make|be)\s+sure\s+(?:that\s+)?(?:you|we|it|nothing)?\s*(?:don'?t|do\s+not|never|won'?t|not)|"
    r"i(?:'?d|\s+would)?\s+(?:rather|prefer)\s+(?:that\s+)?(?:you|we|claude)?\s*(?:didn'?t|did\s+not|don'?t|do\s+not|not|never)|"
    r"hands\s+off(?:\s+of)?|"
    r"i\s+(?:don'?t|do\s+not)\s+want\s+\w+\s+to|(?:it'?d|it\s+would|it'?s|it\s+is)\s+(?:be\s+)?\w+\s+(?:to\s+)?not|"
    r"(?:try|be\s+careful|take\s+care|better|you'?d\s+better)\s+not|"
    r"i(?:'?d|\s+would)\s+(?:rather\s+not|prefer\s+not)|"
    r"(?:is|would)\s+(?:it|that)\s+(?:be\s+)?(?:ok(?:ay)?|alright|all\s+right|fine)\s+if\s+(?:you|we)\s+(?:don'?t|do\s+not|didn'?t|never|not)|"
    r"should\s+(?:we|you)\s+(?:maybe|perhaps|probably)\s+not|"
    r"(?:it\s+would|it'?d)\s+be\s+\w+\s+if\s+(?:we|you)\s+(?:could\s+|can\s+)?(?:avoid|not|didn'?t|did\s+not|don'?t|do\s+not|never)|"
    r"i(?:'?d|\s+would)\s+appreciate\s+(?:it\s+)?if\s+(?:you|we)\s+(?:didn'?t|did\s+not|don'?t|do\s+not|wouldn'?t|would\s+not|"
    r"could\s+avoid|never)|"
    r"(?:you|we)\s+(?:probably|really|definitely|certainly|still|just|also|honestly)\s+(?:shouldn'?t|should\s+not|mustn'?t|must\s+not|"
    r"must\s+never|should\s+never)|"
    r"(?:let'?s\s+)?(?:make\s+sure|ensure|be\s+sure)\s+(?:that\s+)?(?:we|you|it|they|nothing|nobody)(?:'re|'s|\s+are|\s+is)\s+not|"
    r"let'?s\s+(?:make\s+sure|ensure)\s+(?:that\s+)?(?:you|we)?\s*(?:don'?t|do\s+not|never)"
    r")\s+(?:to\s+)?(?:ever\s+)?)+",
    re.IGNORECASE,
)
#: "I'll do X myself / manually": X is the action the user keeps.
_KEY_RESTRAINT = _Lazy(
    "_KEY_RESTRAINT",
    r"^(?:then\s+)?i(?:'?ll|\s+will|'m\s+going\s+to|\s+am\s+going\s+to|\s+wanna|\s+want\s+to|\s+gonna|'d\s+like\s+to|"
    r"\s+would\s+like\s+to|\s+prefer\s+to)\s+(.+?)\s+(?:by\s+)?(?:myself|manually|by\s+hand)\b",
    re.I,
)
#: "leave X alone / as is / untouched": a rule not to change X.
_KEY_LEAVE = _Lazy(
    "_KEY_LEAVE",
    r"^leave\s+(.+?)\s+(?:alone|as[- ]is|as\s+(?:it|they)\s+(?:is|are|was|were|stands?)|untouched|unchanged|"
    r"intact|in\s+place|the\s+way\s+(?:it|they)\s+(?:is|are)|where\s+(?:it|they)\s+(?:is|are))\b.*$",
    re.I,
)
#: "keep / preserve X (as is)", "defer / skip X": X is the thing, there is no forbidden verb.
_KEY_THING_FRAME = _Lazy("_KEY_THING_FRAME",
    r"^(?:(?:let'?s|let\s+us|we\s+(?:can|should|will)|please)\s+)?(?:keep|preserve|retain|defer|postpone|park|punt\s+on|skip|"
    r"leave\s+out|hold\s+off\s+on|put\s+off|leave(?=\s+.+\s+(?:for|until|till)\s+)|no)\s+(?:all\s+(?:of\s+)?)?", re.I)
_KEY_THING_TAIL = _Lazy(
    "_KEY_THING_TAIL",
    r"\s+(?:as[- ]is|as\s+(?:it|they)\s+(?:is|are|stands?)|unchanged|untouched|intact|the\s+same|"
    r"in\s+place|for\s+now|for\s+later|until\s+later|(?:for|until|till)\s+(?:later|another|a\s+|the\s+next|"
    r"next|phase|v\d)|working|alive|around|(?:backwards?[- ])?compatible)\b.*$",
    re.I,
)
_SUBJECT_FIRST = _Lazy(
    "_SUBJECT_FIRST",
    r"^(.+?)\s+(?:must|should|shall|may|will|can)(?:\s+not|\s+never|n'?t)\s+(?:ever\s+)?(?:be\s+|get\s+)?(.+)$",
    re.I,
)
_SUBORDINATE = _Lazy(
    "_SUBORDINATE",
    r"\s+(?:even\s+(?:if|though|when)|when|whenever|until|till|unless|because|since|so\s+that|once|while|before|after|"
    r"as\s+long\s+as|if|otherwise)\b.*$",
    re.I,
)
#: Where the thing a verb acts on ends and its circumstances begin ("the fixtures | in e2e/fixtures").
_PREPOSITION = _Lazy(
    "_PREPOSITION",
    r"\s+(?:in|on|at|for|from|to|into|onto|with|under|inside|within|across|by|during|via|per|"
    r"alongside|beside|next\s+to|over|through|without|against|toward|towards|upon|behind|outside|beyond)\s+",
    re.I,
)
_CODE_NAME = _Lazy("_CODE_NAME", r"`([^`]+)`|\b([A-Za-z][a-z0-9]+[A-Z]\w*)\b")
_ACRONYM = _Lazy("_ACRONYM", r"\b[A-Z][A-Z0-9]{2,}\b")
#: Upper-case words too common in a coding session to name one thing.
_GENERIC_ACRONYMS = frozenset(
    "API APIS CLI GUI PR PRS CI CD DB SQL URL URI HTTP HTTPS JSON YAML XML HTML CSS JS TS README TODO FIXME AI LLM "
    "MVP SDK UTC ISO ENV DNS TCP UDP SSH TLS SSL CPU GPU RAM OS IO NOT NEVER DON'T DONT NO AND THE ALL ANY".split())
_PRONOUNS = frozenset("it them this that these those anything everything something one".split())
_FUNCTION_WORDS = _PRONOUNS | _MODIFIERS | frozenset("and or but to of all some my our your their its".split())


def _is_gerund_or_action(word: str) -> bool:
    w = word.lower()
    return (w.endswith("ing") and not re.fullmatch(_ING_NOT_GERUND, w)) or w in ACTION_VERBS


def _stems(text: str) -> frozenset[str]:
    return frozenset(_class_of(w) for w in map(_content, _words_of(text)) if w)


@lru_cache(maxsize=16_384)
def _key(text: str, form: str) -> _Key:
    """The verb, the thing and its circumstances of a prohibition (see :class:`_Key`)."""
    bare = _PAREN.sub(" ", text)
    s = _plain(bare if content_words(bare) else text.replace("(", " ").replace(")", " "))
    topic = _TOPIC.match(_strip_markers_keep_topic(s))
    s = _strip_markers(s)
    if form != "contrastive":
        first = re.split(r"\s*(?:,|;|\s[—–-]\s)\s*", s)[0]  # the rule, not its reason ("..., they come from the build")
        if content_words(first):
            s = first
    if form == "explicit":  # a purpose clause "(so) that it doesn't V": the rule is "don't V"
        s = re.sub(rf"^(?:so\s+)?(?:that\s+)?(?:it|we|you|this|they)\s+{_PURPOSE_NEG}\s+", "don't ", s, flags=re.I)
    verb_word, rest, left = "", s, False
    if form == "restraint" and (m := _KEY_RESTRAINT.match(s)):
        # "I'll check the diff and commit by myself": the action the user keeps is the last one before "myself"
        action = re.split(r"\s+(?:and|then|&)\s+", m.group(1))[-1]
        head = re.match(r"^\W*([\w'-]+)\s*(.*)$", action)
        if head:
            verb_word, rest = head.group(1), head.group(2)
            if verb_word.lower() in ("do", "handle", "take"):  # a light verb: the thing says what
                verb_word = ""
    elif m := _KEY_NEG_FRAME.match(s):  # after a negation frame comes the verb ...
        head = re.match(r"^\W*([\w'-]+)\s*(.*)$", s[m.end():])
        nominal = re.search(
            r"(?:avoid|stop|quit|refrain\s+from|:)\s*$", m.group(0), re.I
        )  # ... or, after "avoid"/"X:", a noun
        if head and head.group(1).lower() not in _FUNCTION_WORDS and not _PREPOSITION.match(f" {head.group(1)} ") and (
                not nominal or _is_gerund_or_action(head.group(1))):
            verb_word, rest = head.group(1), head.group(2)
        else:
            rest = s[m.end():]
    elif m := _KEY_LEAVE.match(s):
        verb_word, rest, left = "change", m.group(1), True
    elif m := re.match(
        r"^no\s+([\w'-]+)\s*(.*)$", s, re.I
    ):  # "no X": a noun, unless a gerund or an action ("no apply")
        if _is_gerund_or_action(m.group(1)):
            verb_word, rest = m.group(1), m.group(2)
        else:
            rest = s[3:]
    elif m := _KEY_THING_FRAME.match(s):
        rest = _KEY_THING_TAIL.sub("", s[m.end():])
    elif m := re.match(r"^(.+?)\s+(?:please|pls|kindly)\s+(?:do\s+)?not\s+([\w'-]+)\s*(.*)$", s, re.I):
        verb_word, rest = m.group(2), f"{m.group(1)} {m.group(3)}"  # "Version number please not change"
    elif m := _SUBJECT_FIRST.match(s):  # "the e2e fixtures must not be deleted": the thing before, the verb after
        after = re.match(r"^\W*([\w'-]+)\s*(.*)$", m.group(2))
        verb_word, rest = (after.group(1), f"{m.group(1)} {after.group(2)}") if after else ("", m.group(1))
    if form != "contrastive":
        cut = _SUBORDINATE.sub("", rest)  # "... when you're done", "... until the page ships"
        if content_words(cut):
            rest = cut
    if topic:
        rest = f"{topic.group(1)} {rest}"
    verb_stem = (_content(verb_word.lower()) or _stem(verb_word.lower())) if verb_word else None
    verb = _class_of(verb_stem) if verb_stem else None
    parts = _PREPOSITION.split(rest, maxsplit=1)
    obj, circumstances = parts[0], (parts[1] if len(parts) > 1 else "")
    thing = _stems(obj)
    if not thing:
        lone = _words_of(obj)
        if len(lone) == 1 and lone[0] not in _PRONOUNS and lone[0] not in _BARE_NEGATIONS:
            thing = frozenset(lone)  # a lone word is the thing even when it is a stop word ("dont use any")
        else:
            thing, circumstances = _stems(circumstances), ""  # "don't destroy anything in staging": staging
    names = frozenset(w for m in _CODE_NAME.finditer(rest) for w in map(_content, _words_of(m.group(0))) if w) & thing
    acronyms = frozenset(w for a in _ACRONYM.findall(obj) if a not in _GENERIC_ACRONYMS
                         for w in map(_content, _words_of(a)) if w) & thing
    words = thing | _stems(circumstances) | ({verb} if verb else frozenset())
    if not thing and not circumstances.strip() and verb_stem:
        # no thing ("don't commit", "leave them alone"): only the verb itself, not its synonyms, says it
        words = frozenset() if left else frozenset({verb_stem})
    if not words:
        words = frozenset(_class_of(w) for w in content_words(s))
    lowered = verb_word.lower()
    introducing = (
        not verb
        or verb == "add"
        or lowered in _INTRODUCING_VERBS
        or (
            lowered.endswith("ing") and (lowered[:-3] in _INTRODUCING_VERBS or lowered[:-3] + "e" in _INTRODUCING_VERBS)
        )
    )
    if (
        form == "contrastive"
        and verb is None
        and (m := re.match(r"^\W*([A-Za-z]+)", s))
        and m.group(1).lower() in IMPERATIVE_VERBS
    ):
        verb = _class_of(
            _content(m.group(1).lower()) or m.group(1).lower()
        )  # "run only X, not Y": a paraphrase runs too
    return _Key(words, thing, verb, introducing, names, acronyms)


#: Words that say when or where, not what: a rule of only these ("not in this phase") names no thing.
_SCOPE_WORDS = frozenset(_stem(w) for w in "phase pr now time release iteration sprint round pass branch change ticket "
                         "version step stage later followup".split())
_QUESTION_FRAME = _Lazy(
    "_QUESTION_FRAME",
    r"^(?:(?:do\s+you\s+want|would\s+you\s+like)\s+(?:me|us)\s+to\s+|(?:should|shall|do|can|could|would|will|must)\s+(?:we|i|you)\s+|"
    r"(?:is|are)\s+(?:it|there)\s+(?:ok(?:ay)?|fine|alright)\s+(?:to|if\s+(?:we|i)\s+)\s*)(?:also\s+|still\s+|now\s+)?",
    re.I,
)


@lru_cache(maxsize=4096)
def _question_action(question: str) -> str:
    """The action a yes/no question of the agent proposes ("When X, should we rotate the key?" -> "rotate the key"),
    or "" when it asks something else (a wh-question, a choice)."""
    q = _CONDITION.sub("", _plain(question).strip())
    m = _QUESTION_FRAME.match(q)
    if not m:
        return ""
    action = re.split(r"\s+(?:or|instead\s+of|rather\s+than)\s+|[?,;(]", q[m.end():])[0].strip()
    return action if content_words(action) else ""


def _strip_markers_keep_topic(s: str) -> str:
    prev = None
    s = _LEADING_SYMBOLS.sub("", s).strip(" \t*_-\"'“”‘’")
    while s != prev:
        prev = s
        s = _MARKERS.sub("", s, count=1).strip(" ,.:!-*_\"'“”")
        s = _NO_MARKER.sub("", s, count=1).strip(" ,.:!-*_\"'“”")
    return s


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


@dataclass(frozen=True)
class _Sentence:
    text: str
    words: list[str]  # every word, in order
    stems: list[str | None]  # each word's content stem (verb class), None for a stop word
    bag: frozenset[str]  # the stems
    negated: bool  # has a negation cue
    stays: list[int]  # positions of words that say a thing stays as it was
    user_keeps: bool
    undone: dict[str, list[int]]  # verbs said negated by "un-X-ed" ("uncommitted": commit) -> positions
    joined: frozenset[str]  # two adjacent words written as one ("hard coded": "hardcoded")

    @classmethod
    def of(cls, text: str) -> _Sentence:
        words = _words_of(text)
        raw = [_content(w) for w in words]
        stems = [_class_of(c) if c else None for c in raw]
        bag = {s for s in stems if s} | {c for c in raw if c}  # a verb counts by its class and by itself
        joined = frozenset(a + b for a, b in zip(words, words[1:]) if a.isalpha() and b.isalpha())
        stays: list[int] = []
        if _STAYS.search(text):
            for i in range(len(words)):
                if _STAYS.match(" ".join(words[i : i + 3])):
                    stays.append(i)
        undone: dict[str, list[int]] = {}
        for i, (w, st) in enumerate(zip(words, stems)):
            if st and _UN_PARTICIPLE.fullmatch(w) and w not in _NOT_UN_PARTICIPLE:
                undone.setdefault(st, []).append(i)
        return cls(text, words, stems, frozenset(bag), bool(_SUMMARY_NEGATION.search(text)), stays,
                   bool(_USER_KEEPS.search(text)), undone, joined)

    def says(self, word: str) -> bool:
        """Does the sentence say ``word`` (a stem; a compound also written as two words, a stop word by itself)?"""
        return (word in self.bag or word in self.words
                or (len(word) >= 6 and any(j.startswith(word) for j in self.joined)))

    def says_at(self, i: int, words: frozenset[str]) -> bool:
        """Is word ``i`` (if any) one of ``words`` (stems)?"""
        return 0 <= i < len(self.words) and (self.stems[i] in words or self.words[i] in words)

    def has(self, thing: frozenset[str]) -> int:
        """How many words of ``thing`` the sentence says."""
        return sum(1 for w in thing if self.says(w))

    def near(self, key: _Key, positions: Iterable[int], before: int, after: int, share: float,
             governs: bool = False) -> bool:
        """Does a window of ``before`` words before / ``after`` words after one of ``positions`` hold the
        thing of ``key`` (``share`` of its words, or a code name it gives: `` `LegacyAuth` ``)?

        ``governs``: the first content word after the position must be the thing's ("no new ORM", not
        "without asking anyone")."""
        for p in positions:
            if governs:
                first = next((i for i in range(p + 1, min(len(self.words), p + after + 1))
                              if self.words[i] in key.thing or self.words[i] not in _MODIFIERS), None)
                if first is None or not (self.stems[first] in key.thing or self.words[first] in key.thing):
                    continue
            lo, hi = max(0, p - before), min(len(self.words), p + after + 1)
            seen = {self.stems[i] for i in range(lo, hi) if i != p} | {self.words[i] for i in range(lo, hi) if i != p}
            if len(key.thing & seen) >= share * len(key.thing) or key.names & seen:
                return True
        return False


_ANAPHOR = _Lazy("_ANAPHOR", r"\b(?:it|them|this|that|these|those|they)\b", re.I)
#: A summary reporting the thing gone: removed, deleted, replaced ... (and no negation of that: "not removed", "kept").
_REMOVAL = _Lazy(
    "_REMOVAL",
    r"\b(?:remov(?:ed|ing|al)|delet(?:ed|ing|ion)|dropp(?:ed|ing)|replac(?:ed|ing)|revert(?:ed|ing)|eliminat(?:ed|ing)|"
    r"ripp(?:ed|ing)\s+out|tore\s+out|got\s+rid\s+of|no\s+longer|retired|deprecated\s+and\s+removed|"
    r"migrated\s+(?:away|off)|swapped\s+(?:out|for))\b",
    re.I,
)
_REMOVAL_NEGATED = _Lazy(
    "_REMOVAL_NEGATED",
    r"\b(?:not|never|without|n't|kept|keep|keeps|keeping|unchanged|untouched|preserv\w*|retain\w*|"
    r"intact|in\s+place|stays?|remains?|left\s+alone|avoid\w*|refrain\w*|instead\s+of)\b",
    re.I,
)


def _contrary(s: _Sentence, key: _Key, form: str) -> bool:
    """Does summary sentence ``s`` report the thing of a rule to keep it (a ``preserve`` rule, or one not to
    change / remove / rename / refactor / break it) as removed or replaced — the rule broken, not carried?"""
    if not (form == "preserve" or key.verb in _KEEPING_CLASSES):
        return False
    return bool(_REMOVAL.search(s.text)) and not _REMOVAL_NEGATED.search(s.text)


@dataclass
class SummaryIndex:
    """A summary read once for matching: its flat text and its sentences."""

    flat: str
    sentences: list[_Sentence] = field(default_factory=list)

    @classmethod
    def of(cls, summary: str) -> SummaryIndex:
        out = []
        for line in summary.replace("\r", "\n").split("\n"):
            for sentence in re.split(r"(?<=[.!?])\s+", line):
                parts = [p for p in re.split(r"(?<=;)\s+", sentence) if p.strip()]
                for k, part in enumerate(parts):
                    out.append(_Sentence.of(part))
                    if k and _ANAPHOR.search(part):  # "...; do not run it": "it" is in the clause before
                        out.append(_Sentence.of(f"{parts[k - 1]} {part}"))
        return cls(_flat(summary), out)


#: What :meth:`ProhibitionMatcher.judge` says of a (summary, prohibition) pair.
VERDICTS = ("carried", "uncertain", "dropped")


@dataclass(frozen=True)
class ProhibitionMatcher:
    """Finds prohibitions in raw text and decides whether a summary still carries them.

    * :meth:`prohibitions` — the extractor (module docstring), restricted to ``forms``.
    * :meth:`judge` — ``carried`` when the summary states it verbatim (its text, or its
      key part without markers and parenthesized reasons), or one summary sentence (a
      ``;`` clause; with the clause before when it says "it") has a cue of the same
      polarity (a negation, "the user will ... himself"; for ``preserve`` also
      keep/retain/unchanged, for ``defer`` later/deferred, for ``restraint``
      instruct/manual/ask) and at least ``threshold`` of the key's words (the verb by its
      class: "modified" says "touch"); or says the thing stays as it was ("left
      untouched", "still in place": a rule not to change / remove / rename / refactor it)
      or governs it with "no"/"without" ("no new ORM": a rule not to add / use it), with
      ``threshold`` of the thing's words (or a code name of it) next to that cue.
      ``uncertain`` when a cued sentence has at least two and half of the key's words,
      the action among them; else ``dropped``. A prohibition with no thing ("don't
      commit") is said only by its own verb; one without words only verbatim.
    * :meth:`carries` — ``judge`` is not ``dropped``; with ``alert_uncertain``, only
      ``carried`` (an uncertain match then alerts).

    ``threshold`` in [0, 1]: lower keeps more paraphrases (fewer false alarms, more
    misses); higher makes more of them uncertain (or dropped, with ``alert_uncertain``).
    """

    threshold: float = DEFAULT_MATCH_THRESHOLD
    forms: frozenset[str] = DEFAULT_FORMS
    alert_uncertain: bool = False

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"match threshold must be in [0, 1], got {self.threshold}")
        unknown = set(self.forms) - set(FORMS)
        if unknown:
            raise ValueError(f"unknown prohibition form(s): {', '.join(sorted(unknown))} (known: {', '.join(FORMS)})")

    # ---- extraction

    def prohibitions(self, text: str | None, *, source: str = "user",
                     origin: tuple[str, int] | None = None, about: str | None = None) -> list[Prohibition]:
        """Prohibitions of a raw text, in order, de-duplicated by id.

        ``about``: the question ``text`` answers; a prohibition that names no thing of its own
        ("not in this phase", "leave that for later") is about the question's action."""
        out: dict[str, Prohibition] = {}
        if not text:
            return []
        seen: set[tuple] = set()
        for unit, parts in units(text, source=source):
            found: list[tuple[str, str, bool, str]] = []  # (form, clause, from a parenthetical, cue)
            heading = _plain(unit.section).strip(" #*")
            if source == "plan" and ("section", heading) not in seen and _CUT_HEADING.match(heading):
                seen.add(("section", heading))  # "### Recommend cutting: X": the plan decides against X
                found.append(("explicit", heading, False, "plan-cut-heading"))
            if unit.negated_item and not is_question(unit.text):
                found.append(
                    ("explicit", f"{unit.negated_item}: {unit.text.rstrip(' .;')}", False, "negated-list-item")
                )
            context = (unit.text, unit.section, unit.descriptive, unit.item, unit.decisions, unit.imperative_list,
                       unit.negated_item, unit.sentence, unit.before)
            if context in seen:
                # the same sentence in the same context: read already (a message of repeated rules stays linear)
                continue
            seen.add(context)
            for clause, par in parts:
                read = classify_cue(unit, clause, par, source=source)
                if (
                    read is not None
                    and par
                    and any(not p for _, _, p, _ in found)
                    and _NO_NP.match(_strip_markers(_plain(clause)))
                ):
                    continue  # "No new dependencies (no xsimd, no highway)": examples of the rule, not rules
                if read is not None:
                    found.append((read[0], clause, par, read[1]))
                elif (
                    par and _PAREN_NOT.match(_plain(clause).strip()) and not unit.descriptive and _directive_host(unit)
                ):
                    found.append(("contrastive", clause, par, "paren-not"))  # "Use the queue (not a cron job)"
                elif par and _PAREN_NOT.match(_plain(clause).strip()) and not unit.descriptive and source == "plan":
                    state = _PAREN_NOT_STATE.match(_plain(clause).strip(" .;"))
                    found.append(  # "run from the service layer (not in helpers)"; "(not executed)": a state, low
                        ("contrastive", clause, par, "plan-paren-not-state" if state else "plan-paren-not")
                    )
                elif (
                    par and _PAREN_KEEP.match(_plain(clause).strip(" .")) and not unit.descriptive and source == "plan"
                ):
                    host = _PAREN.sub(" ", unit.text).strip(" .:-*")
                    if content_words(host):
                        found.append(("preserve", f"{host} ({clause.strip()})", par, "paren-unchanged"))
            if not found:
                found = [(f, c, False, _plan_cue(cue, source)) for f, c, cue in sentence_forms(unit)]
            for k in range(len(found) - 1, 0, -1):  # "keep X, dont drop it": one rule, "it" is X
                (f0, c0, p0, q0), (f1, c1, p1, _) = found[k - 1], found[k]
                if (
                    f0 != "implicit"
                    and f1 == "explicit"
                    and not (p0 or p1)
                    and _ANAPHORIC_RULE.match(_strip_markers(_plain(c1)))
                ):
                    found[k - 1 : k + 1] = [(f0, f"{c0}, {c1}", False, q0)]
            for form, clause, _, cue in found:
                if form not in self.forms:
                    continue
                text = clause if form == "implicit" else _strip_discourse(clause)  # a decline's "no," is its point
                topic = (
                    about if about and _question_action(about) and not (_key(text, form).thing - _SCOPE_WORDS) else ""
                )
                p = make_prohibition(text, source=source, form=form, origin=origin, about=topic, cue=cue)
                out.setdefault(p.id, p)
        return list(out.values())

    # ---- carrying

    def judge(self, summary: str | SummaryIndex | None, prohibition: Prohibition) -> str:
        """``carried``, ``uncertain`` or ``dropped``: does ``summary`` still state ``prohibition``? (class docstring)"""
        return self.judge_cue(summary, prohibition)[0]

    def judge_cue(self, summary: str | SummaryIndex | None, prohibition: Prohibition) -> tuple[str, str, str | None]:
        """``(verdict, cue, sentence)``: :meth:`judge`'s verdict, the carry cue that decided it (a row of
        :data:`CARRY_CUES`) and the summary sentence it rests on, if any."""
        if not summary:
            return "dropped", "no-text", None
        index = summary if isinstance(summary, SummaryIndex) else SummaryIndex.of(summary)
        key_text = _key_text(prohibition)
        for t in (prohibition.text, key_text):
            ft = _flat(t)
            if len(ft) >= 6 and ft in index.flat:
                return "carried", "verbatim", t
        form = getattr(prohibition, "form", "explicit")
        key = _key(prohibition.text, form)
        if getattr(
            prohibition, "about", ""
        ):  # "not in this phase", answering "should we rotate the key?": rotate the key
            key = _key(_question_action(prohibition.about), "explicit" if form == "explicit" else "defer")
        wanted, thing = key.words, key.thing
        if not wanted:
            return "dropped", "no-key", None
        cue = _SUMMARY_CUES.get(form)
        verdict: tuple[str, str, str | None] = ("dropped", "unmatched", None)
        contrary: str | None = None
        for s in index.sentences:
            if _contrary(s, key, form):  # "Removed the legacy parser" does not keep "keep the legacy parser"
                if contrary is None and (
                    s.has(wanted) >= self.threshold * len(wanted)
                    or (thing and s.has(thing) >= self.threshold * len(thing))
                ):
                    contrary = s.text
                continue
            said = s.has(wanted)
            undone = s.undone.get(key.verb or "")  # "left uncommitted" negates a commit, of the thing next to it
            negated = s.negated
            if (
                negated and len(wanted) == 1
            ):  # one word, so the negation must be about it: "(no new deps), j/k test" is not
                # (a negation that opens the sentence governs all of it: "Out of scope (per the plan): NEON, threads")
                # it governs the words after it ("no new test", "without tests") or closes the two before ("tests
                # skipped"): not a "without `--yes`" four words on
                negated = any(_SUMMARY_NEGATION.match(" ".join(s.words[i : i + 4])) and (i <= 1 or any(
                    s.says_at(j, wanted) for j in range(i - 2, i + 4))) for i in range(len(s.words)))
            cued = (negated or s.user_keeps or (cue is not None and bool(cue.search(s.text)))
                    or bool(undone and (not thing or s.near(key, undone, 4, 4, self.threshold))))
            if cued and said >= self.threshold * len(wanted):
                return (
                    "carried",
                    ("negated-mention" if negated else "user-keeps" if s.user_keeps else f"{form}-cue"),
                    s.text,
                )
            if cued and key.verb is None and key.acronyms & s.bag:
                return (
                    "carried",
                    "acronym-negated",
                    s.text,
                )  # a verbless rule named short in a negated sentence: "Out of scope: NEON"
            if thing and (s.has(thing) >= self.threshold * len(thing) or key.names & s.bag):
                # the verb said otherwise, next to the thing: "left untouched", "still in place", "no new ORM"
                if s.stays and (key.verb in _KEEPING_CLASSES or form == "preserve") and s.near(
                        key, s.stays, 4, 4, self.threshold):
                    return "carried", "stays", s.text
                if s.user_keeps:  # "the index SQL is for the DBA to apply": someone else acts on the thing
                    return "carried", "someone-else", s.text
                negs = [i for i, w in enumerate(s.words) if w in _NEGATED_THING]
                if key.introducing and negs and s.near(key, negs, 0, 4, self.threshold, governs=True):
                    return "carried", "no-thing", s.text
                if (
                    key.introducing
                    and form == "explicit"
                    and _REMOVAL.search(s.text)
                    and not _REMOVAL_NEGATED.search(s.text)
                ):
                    return "carried", "thing-removed", s.text  # "Removed the Lombok dependency" keeps "no Lombok"
            if (
                (cued or s.stays)
                and said >= 2
                and said >= 0.5 * len(wanted)
                and (key.verb is None or key.verb in s.bag)
            ):
                verdict = (
                    "uncertain",
                    "partial",
                    s.text,
                )  # half the words, the same action: a paraphrase we cannot confirm
        if verdict[0] == "dropped" and contrary is not None:
            return "dropped", "removed", contrary
        return verdict

    def carries(self, summary: str | SummaryIndex | None, prohibition: Prohibition) -> bool:
        """Does ``summary`` still state ``prohibition``? An ``uncertain`` match counts as carried unless
        ``alert_uncertain``."""
        verdict = self.judge(summary, prohibition)
        return verdict == "carried" or (verdict == "uncertain" and not self.alert_uncertain)

    def carried(self, summary: str | None, pool: Iterable[Prohibition]) -> list[Prohibition]:
        """The prohibitions of ``pool`` that ``summary`` carries, in pool order."""
        if not summary:
            return []
        index = SummaryIndex.of(summary)
        return [c for c in pool if self.carries(index, c)]
