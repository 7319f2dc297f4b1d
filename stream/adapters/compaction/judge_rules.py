"""The ``rules`` judge: the offline default of the judge port (:mod:`stream.adapters.compaction.judge`).

Both decisions name a row of :mod:`stream.adapters.compaction.cues`, structure first:

* **In force.** Each candidate is read line by line in its language (:func:`cues.language_in`: a line too
  short to tell takes its message's): English by the extractor of :mod:`stream.adapters.compaction.prohibitions`,
  other languages by their tables (item cues only on short list items and plan lines); a line in a
  language no table reads is counted (``Judgement.skipped_languages``), never taken as "no prohibition".
* **Carried.** The summary's sections (:func:`sections`) and its list of the user's messages
  (:func:`user_message_list`): a rule the summary quotes is carried (``quoted``), then the matcher's
  restatement cues or a code name beside a negation (``code-name``). Not carried, the drop cue says
  what is left (:func:`code_names`, :func:`trace_share`): ``unquoted-again`` (an earlier summary quoted
  it, nothing of it is left), ``plan-no-trace``, ``not-quoted(-long)(-no-trace)``, ``removed``, ...;
  it alerts only if the precision level admits it (else carried, cue ``below-precision:<cue>``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from stream.adapters.compaction import cues
from stream.adapters.compaction.judge import SOURCE_OF_CHANNEL, Candidate, Carry, Instruction, Judge, Judgement
from stream.adapters.compaction.prohibitions import (
    Prohibition,
    ProhibitionMatcher,
    SummaryIndex,
    make_prohibition,
    own_words,
    prose_lines,
    sentences,
)

_USER_WORDS = frozenset({"typed", "queued", "answer", "rejection", "command_args"})
#: Share of a rule's word trigrams a summary must hold to quote it (0.5: a quote trimmed or annotated still counts).
QUOTED = 0.5
#: Longer messages are described, not quoted, in a summary's list of the user's messages ("/spec with a detailed
#: description of ..."): a rule of theirs missing from the list is weak evidence of a drop.
QUOTABLE = 400
_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+", re.UNICODE)
#: The heading of a summary's list of the user's messages, in the tables' languages (the summary may be in the user's).
_USER_LIST = re.compile(
    r"all\s+(?:of\s+the\s+)?user(?:'s)?\s+messages|user\s+messages\s*:|alle\s+(?:benutzer|nutzer)\w*nachrichten|"
    r"nachrichten\s+des\s+(?:benutzers|nutzers)|alle\s+gebruikersberichten|berichten\s+van\s+de\s+gebruiker|"
    r"messages\s+de\s+l['’]utilisateur|mensajes\s+del\s+usuario|"
    r"mensagens\s+do\s+usuário|messaggi\s+dell['’]utente|tin\s+nhắn\s+(?:của\s+)?người\s+dùng|сообщения\s+пользователя|"
    r"ユーザー(?:の)?メッセージ|用户消息|用戶(?:訊息|消息)|사용자\s*메시지", re.I)
#: A section heading of a summary, at column 0: "## Pending tasks", "6. All user messages:", "**6. All user messages**".
_HEAD = re.compile(
    r"^(?:#{1,6}[ \t]+\S.*|(?:\*\*)?\d{1,2}[.)][ \t]+[^\n]{2,100}?:(?:\*\*)?[ \t]*|\*\*\d{1,2}[.)][^\n]{2,100}\*\*:?[ "
    r"\t]*)$"
)
_QUOTED_ITEM = re.compile(r"^[ \t]*(?:[-*•]|\d+[.)])[ \t]+(?:\*\*[^*]{0,40}\*\*:?[ \t]*)?[\"“「『'»«]")
_ITEM = re.compile(r"^[ \t]*(?:[-*•]|\d+[.)])[ \t]+\S")
#: A sentence of a CJK / Korean text ends at a full stop, or at an ASCII period after a letter of those scripts and
#: before a space (Korean writes ". "; "v1.5" or "app.py" has no space after its period).
_FOREIGN_SENTENCE = re.compile(rf"(?<=[。！？!?．])\s*|(?<=[{_CJK})）][.])\s+")
#: A clause of a CJK / Korean sentence: cut at a full-width comma or semicolon, or a comma before a space (not the
#: enumeration comma 、, which lists the things one rule is about).
_FOREIGN_CLAUSE = re.compile(r"[，；;]\s*|,\s+")
_CODE_NAME = re.compile(
    r"`([^`\n]{2,80})`|((?:[\w.-]+/)+[\w.-]+|\b\w+\.(?:py|go|ts|tsx|js|rs|java|md|json|ya?ml|toml|sql)\b|"
    r"\b[a-z]+_[a-z_]+\b|\b[A-Za-z][a-z0-9]+[A-Z]\w*\b)"
)
_NEGATION_OR_KEEP = re.compile(r"\b(?:not?|never|don'?t|without|avoid\w*|keep\w*|kept|unchanged|untouched|preserv\w*|"
                               r"off[- ]limits|forbid\w*|prohibit\w*|out\s+of\s+scope|exclud\w*|limited\s+to|"
                               r"restricted\s+to|instead)\b|ない|不|别|禁止|保持|지\s*마|금지|유지", re.I)


def tokens(text: str) -> list[str]:
    """Words of ``text`` for quote comparison: NFKC, casefolded, markdown and quotes away; each CJK character a word."""
    return _TOKEN.findall(unicodedata.normalize("NFKC", text).casefold().replace("_", " "))


def _shingles(words: list[str]) -> frozenset[tuple[str, ...]]:
    return frozenset(tuple(words[i : i + 3]) for i in range(len(words) - 2))


def sections(summary: str) -> list[tuple[str, str]]:
    """``(heading, body)`` of a summary's top-level sections: numbered or markdown headings (language-free)."""
    out: list[tuple[str, list[str]]] = [("", [])]
    for line in summary.split("\n"):
        if len(line) <= 120 and _HEAD.match(line):
            out.append((line.strip(" #*:\t"), []))
        else:
            out[-1][1].append(line)
    return [(h, "\n".join(b)) for h, b in out if h or "".join(b).strip()]


def user_message_list(summary: str, secs: list[tuple[str, str]] | None = None) -> str | None:
    """The section of a summary that quotes the user's messages: headed so (in a language of the tables), else the
    section whose list items are mostly quotes (three or more). None when it has neither. ``secs``: its
    :func:`sections`, when the caller has them."""
    if secs is None:
        secs = sections(summary)
    for heading, body in secs:
        if _USER_LIST.search(heading):
            return body
    best = None
    for _heading, body in secs:
        items = [ln for ln in body.split("\n") if _ITEM.match(ln)]
        quoted = sum(bool(_QUOTED_ITEM.match(ln)) for ln in items)
        if quoted >= 3 and quoted * 10 >= 6 * len(items) and (best is None or quoted > best[0]):
            best = (quoted, body)
    return best[1] if best else (summary if _USER_LIST.search(summary) else None)


@dataclass(frozen=True)
class _Summary:
    text: str
    words: str  # " ".join(tokens), padded with spaces
    shingles: frozenset[tuple[str, ...]]
    lists_user_messages: bool
    lowered: str  # NFKC, casefolded: where code names are looked for
    language: str  # the language of its section headings ("und": none): the language it paraphrases in

    @property
    def index(self) -> SummaryIndex:
        return _index(self.text)


@lru_cache(maxsize=256)
def _summary(text: str) -> _Summary:
    words = tokens(text)
    secs = sections(text)
    headings = " ".join(h for h, _ in secs if h)
    return _Summary(text, f" {' '.join(words)} ", _shingles(words), user_message_list(text, secs) is not None,
                    unicodedata.normalize("NFKC", text).casefold(), cues.language_of(headings) if headings else "und")


@lru_cache(maxsize=64)
def _index(text: str) -> SummaryIndex:
    return SummaryIndex.of(text)


def quoted_share(rule: str, summary: _Summary) -> float:
    """Share of ``rule``'s word trigrams found in the summary (a rule under three words: 1.0 if said whole, else 0);
    0 when a word that names something (a number, an identifier, a word of four letters or more) is missing."""
    words = tokens(rule)
    if not words:
        return 0.0
    if len(words) < 3:
        return 1.0 if f" {' '.join(words)} " in summary.words else 0.0
    naming = {w for w in words if len(w) >= 4 or any(ch.isdigit() for ch in w)}
    if naming and sum(f" {w} " in summary.words for w in naming) < 0.8 * len(naming):
        return 0.0
    own = _shingles(words)
    return len(own & summary.shingles) / len(own)


_NAME = re.compile(r"`([^`\n]{2,80})`|((?:[\w.-]+/)+[\w.-]+|\b[\w-]+\.(?:[a-z]{1,5})\b|\b[a-z][a-z0-9]*_[a-z0-9_]+\b|"
                   r"\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z0-9]+[A-Z]\w*\b|\b[A-Z][A-Z0-9]{1,}\b|\b\d{2,}\b|(?<!\w)--?[a-z][\w-]+)")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9+#.-]{2,}")
_NON_LATIN = re.compile(rf"[{_CJK}\u0400-\u04ff]")


@lru_cache(maxsize=65_536)
def code_names(rule: str) -> frozenset[str]:
    """What a rule names that survives translation and paraphrase: back-ticked spans, paths, file names, identifiers,
    acronyms, numbers of two digits or more, flags; in a rule in a non-Latin script that has none of those, its
    Latin-script words ("Redis" in a Japanese rule)."""
    names = {(m.group(1) or m.group(2) or "").strip() for m in _NAME.finditer(rule)}
    names = {n for n in names if len(n.strip()) >= 2}
    if _NON_LATIN.search(rule) and not names:  # the most specific names speak for it: plain words only when none
        names |= set(_LATIN_WORD.findall(rule))
    return frozenset(unicodedata.normalize("NFKC", n).casefold().rstrip(".") for n in names if len(n.strip()) >= 2)


def traced(rule: str, summary: _Summary) -> tuple[str, ...]:
    """The rule's code names the summary still names (as a whole token)."""
    out = []
    for n in sorted(code_names(rule)):
        i = summary.lowered.find(n)
        while i >= 0:
            before = summary.lowered[i - 1] if i else " "
            after = summary.lowered[i + len(n)] if i + len(n) < len(summary.lowered) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                out.append(n)
                break
            i = summary.lowered.find(n, i + 1)
    return tuple(out)


#: Words that say nothing about what a rule is about (function words, the cue words themselves).
_PLAIN_WORDS = frozenset(
    "this that these those with from have will would should could must please never dont don't avoid "
    "keep just also only then them they their there what when which about into onto make sure need "
    "want like does doing done were been being your ours anything something everything thing things "
    "stuff again still ever okay yeah".split()
)
#: A rule whose naming words the summary holds less than this share of has left no trace there (its own language).
NO_TRACE = 0.34
#: ... and one with this share of them (three or more) is still there in other words, though no longer quoted.
KEPT_WORDS = 0.67


def trace_share(rule: str, summary: _Summary) -> float:
    """Share of the rule's naming words (four letters or more, or with a digit; not a cue or function word) the summary
    holds anywhere; 0 when it has none (a rule in a script whose words are characters: only code names speak for it)."""
    naming = {w for w in tokens(rule) if (len(w) >= 4 or any(ch.isdigit() for ch in w)) and w not in _PLAIN_WORDS}
    if not naming:
        return 0.0
    share = sum(f" {w} " in summary.words for w in naming) / len(naming)
    return (
        share if len(naming) >= 3 or share < KEPT_WORDS else min(share, NO_TRACE)
    )  # one or two common words tell little


@dataclass(frozen=True)
class _Read:
    """One candidate read: its rules (each with its language) and the languages it has lines in that no table reads."""

    rules: tuple[tuple[Prohibition, str], ...]
    skipped: tuple[str, ...]


class RulesJudge:
    """The ``rules`` judge (module docstring).

    ``matcher``: the English extractor and matcher settings; ``precision``: a level of
    :data:`cues.PRECISION_LEVELS` (default ``precise``).
    """

    name = "rules"

    def __init__(self, matcher: ProhibitionMatcher | None = None, precision: str = cues.DEFAULT_PRECISION) -> None:
        if precision not in cues.PRECISION_LEVELS:
            raise ValueError(f"unknown judge precision {precision!r} (known: {', '.join(cues.PRECISION_LEVELS)})")
        self.matcher = matcher or ProhibitionMatcher()
        self.level = cues.PRECISION_LEVELS[precision]
        self._read = lru_cache(maxsize=65_536)(self._read_uncached)

    @property
    def precision(self) -> str:
        return self.level.name

    # ---- in force

    def _read_uncached(self, text: str, channel: str, question: str | None, session: str = "en") -> _Read:
        source = SOURCE_OF_CHANNEL.get(channel, "user")
        lines = [(line, item or source == "plan") for line, _s, _d, item, _b in prose_lines(text, source=source)]
        main = cues.main_language([cues.language_of(line) for line, _ in lines])
        by_lang: dict[str, list[tuple[str, bool]]] = {}
        for line, item in lines:
            by_lang.setdefault(cues.language_in(line, main), []).append((line, item))
        rules: dict[str, tuple[Prohibition, str]] = {}
        if any(lang in ("en", "und") for lang in by_lang):
            for p in self.matcher.prohibitions(text, source=source, about=question):
                lang = cues.language_in(p.text, main)
                if lang in ("en", "und"):
                    rules.setdefault(p.id, (p, "en"))
        whole = " ".join(text.split())  # a short answer or rejection read whole, as one rule
        if channel == "answer" and question and not rules and _EXCLUDING_QUESTION.search(question) \
                and len(text) <= ANSWER_CHARS and not _NOTHING_ANSWER.match(text):
            # what the user picked as left out, deferred or not to do: "What stays out of v1?" = "the CSV export"
            rules.update(_whole_rule(whole, source, "explicit", "answer-excludes"))
        if channel == "rejection" and not rules and len(text) <= ANSWER_CHARS and _USE_INSTEAD.search(whole):
            # the user stopped the agent's tool call and named what to use: not what it tried ("use yarn")
            rules.update(_whole_rule(whole, source, "contrastive", "rejection-use"))
        skipped = []
        for lang, lines in by_lang.items():
            if lang in ("en", "und"):
                continue
            table = cues.FOREIGN.get(lang)
            if table is None:
                skipped.append(lang)
                continue
            for p in _read_foreign(table, lines, source):
                rules.setdefault(p.id, (p, lang))
        if session in cues.LATIN_TABLES and session in cues.FOREIGN:
            # a line the identifier gave to English or a neighbour language, in a session the user writes in
            # another Latin-script language ("Vamos fazer o deploy do backend depois" is English to it): read in that
            # language too
            unread = [(line, item) for lang, group in by_lang.items() if lang != session
                      and (lang in ("en", "und") or lang in cues.LATIN_TABLES) for line, item in group
                      if not any(p.text in line or line in p.text for p, _ in rules.values())]
            for p in _read_foreign(cues.FOREIGN[session], unread, source):
                rules.setdefault(p.id, (p, session))
        return _Read(tuple(rules.values()), tuple(sorted(skipped)))

    def read(self, candidate: Candidate, session: str = "en") -> _Read:
        """``session``: the language the user writes in most (:func:`session_language`)."""
        return self._read(candidate.text, candidate.channel, candidate.question, session)

    def instructions(self, candidate: Candidate, session: str = "en") -> list[tuple[Instruction, Prohibition]]:
        """The prohibitions one candidate states that this precision level admits, each with the extractor's object."""
        out = []
        for p, _ in self.read(candidate, session).rules:
            if cues.strength_of(p.cue) in self.level.instruction and p.form in self.matcher.forms:
                out.append((Instruction(p.id, p.text, candidate.id, p.form, cue=p.cue or p.form), p))
        return out

    # ---- the judgement

    def judge(self, candidates: Sequence[Candidate], summary: str | None,
              earlier_summaries: Sequence[str] = ()) -> Judgement:
        found: dict[str, tuple[Instruction, Prohibition, Candidate, str]] = {}
        skipped: dict[str, None] = {}
        unread: list[tuple[str, str]] = []
        session = session_language(candidates)
        for c in candidates:
            reading = self.read(c, session)
            skipped.update(dict.fromkeys(reading.skipped))
            unread += [(c.id, lang) for lang in reading.skipped]
            langs = dict((p.id, lang) for p, lang in reading.rules)
            for i, p in self.instructions(c, session):
                found.setdefault(i.id, (i, p, c, langs.get(p.id, "en")))
        carries = self.carries(list(found.values()), summary, earlier_summaries)
        return Judgement("rules", None, tuple(i for i, *_ in found.values()), carries, skipped_languages=tuple(skipped),
                         unread=tuple(unread))

    def carries(self, rules: Sequence[tuple[Instruction, Prohibition, Candidate, str]], summary: str | None,
                earlier_summaries: Sequence[str] = ()) -> tuple[Carry, ...]:
        """The carry decision alone: one :class:`Carry` per ``(instruction, rule, its candidate, its language)``."""
        now = _summary(summary) if summary else None
        before = [_summary(t) for t in earlier_summaries if t]
        return tuple(self._carry(i, p, c, lang, now, before) for i, p, c, lang in rules)

    def _carry(self, i: Instruction, p: Prohibition, c: Candidate, lang: str, now: _Summary | None,
               before: list[_Summary]) -> Carry:
        if now is None:
            return Carry(i.id, False, cue="opaque")
        if quoted_share(i.text, now) >= QUOTED:
            return Carry(i.id, True, cue="quoted")
        matcher_cue = None
        if lang == "en":
            verdict, cue, sentence = self.matcher.judge_cue(now.index, p)
            if verdict == "carried":
                return Carry(i.id, True, cue=cue, quote=sentence)
            if verdict == "uncertain" and not (self.level.uncertain_drops or self.matcher.alert_uncertain):
                return Carry(i.id, True, cue="partial", quote=sentence)
            matcher_cue = "uncertain" if verdict == "uncertain" else cue
        else:
            quote = _code_name_kept(i.text, now.text, i.form == "preserve")
            if quote is not None:
                return Carry(i.id, True, cue="code-name", quote=quote)
            if i.form == "preserve" and _code_name_kept(i.text, now.text, removed=True) is not None:
                matcher_cue = "removed"
        drop = self._drop_cue(i, c, lang, matcher_cue, now, before)
        allowed = self.level.drops if lang == "en" else self.level.foreign_drops
        if drop in self.level.high_only and cues.strength_of(i.cue) != "high":
            allowed = frozenset()
        if drop not in allowed and not (drop == "uncertain" and self.matcher.alert_uncertain):
            return Carry(i.id, True, cue=f"below-precision:{drop}",
                         reason=f"not stated, but a '{drop}' drop does not alert at precision '{self.level.name}'")
        return Carry(i.id, False, cue=drop)

    @staticmethod
    def _drop_cue(i: Instruction, c: Candidate, lang: str, matcher_cue: str | None, now: _Summary,
                  before: list[_Summary]) -> str:
        """Why ``now`` is taken not to carry ``i`` — structure first: an earlier summary quoted it; then whether
        anything of it is left (its code names anywhere; in English, its naming words)."""
        if matcher_cue in ("removed", "uncertain"):
            return matcher_cue
        left = traced(i.text, now)
        share = trace_share(i.text, now) if lang == "en" else 0.0
        # what is left of it is only named: no sentence that names it has a negation, keep or deferral word
        named_only = (bool(left) or share >= KEPT_WORDS) and not _restated_near(i.text, i.form, left, now.text,
                                                                                lang == "en")
        if any(quoted_share(i.text, s) >= QUOTED for s in before):
            if not left and share < KEPT_WORDS:
                return "unquoted-again"
            return "unquoted-again-unstated" if named_only else "unquoted-again-traced"
        no_trace = not left and (bool(code_names(i.text)) or lang == "en" and share < NO_TRACE)
        if c.channel == "plan":
            if no_trace:
                return "plan-no-trace"
            return "plan-named-unstated" if named_only else "plan-unstated"
        if c.channel in _USER_WORDS and now.lists_user_messages:
            if len(c.text) > QUOTABLE:
                # a long message's rule left unquoted is a drop when the summary would have said it in the rule's
                # language: a rule in another language is paraphrased in the summary's, where words cannot follow it
                if (lang == "en" or lang in cues.SPACED_TABLES and now.language in (lang, "und")) \
                        and c.channel != "command_args" \
                        and cues.strength_of(i.cue) == "high" \
                        and not _CONDITIONAL.search(i.text) and not _EXCEPTION.search(i.text) and own_words(c.text):
                    return "not-quoted-long-own"
                return "not-quoted-long-no-trace" if no_trace else "not-quoted-long"
            if _EXCEPTION.search(i.text):
                return "not-quoted-conditional"  # "never V unless I say so": carried by its exception, stated
            return "not-quoted-no-trace" if no_trace else "not-quoted"
        return "unmatched"


#: A rule with a condition or an exception ("don't X unless Y"): a summary often carries it by stating Y, the way that
#: is allowed, in other words — no trusted drop for it from a long message.
_CONDITIONAL = re.compile(r"\b(?:unless|except|if|until|otherwise)\b", re.I)
#: The narrower test for a short typed rule: an explicit exception ("unless", "except"; any table's language).
_EXCEPTION = re.compile(r"\b(?:unless|except|außer\s+wenn|es\s+sei\s+denn|a\s+menos\s+que|salvo\s+que|exceto\s+se|"
                        r"sauf\s+si|à\s+moins\s+que|если\s+только|кроме)\b|除非|以外", re.I)


#: A question whose answer names what is left out or not done (the answer is then the rule): "Which parts are NOT
#: part of the beta?",
#: "Which parts are out of scope?", "What should we skip / defer?", "What must stay untouched?".
_EXCLUDING_QUESTION = re.compile(
    r"\b(?:NOT\s+(?:in|part\s+of|include|do|build|touch|change)|out\s+of\s+scope|non-goals?|exclud\w*|leave\s+out|left\s+out|"
    r"skip|defer\w*|postpone\w*|off-limits|must\s+not|should\s+not|shouldn'?t|never\s+(?:touch|change))\b"
    r"|対象外|含めない|やらない|不做|不包括|不包含|排除|제외|하지\s*않",
    re.IGNORECASE,
)
#: An answer that names nothing ("None", "Nothing, keep all", "No", "All of them") or an alternative ("Use X instead").
_NOTHING_ANSWER = re.compile(r"^\W*(?:none|nothing|no|nope|n/a|all(?:\s+of\s+(?:them|it))?|everything|"
                             r"(?:i'?m\s+)?not\s+sure|skip)\b|.*\b(?:instead|rather)\b", re.I)
#: A tool rejection's words that name what to use instead of what the agent tried: "use X", "use the Y instead",
#: "用 yarn", "尽量用 X", "X を使って", "usa X", "utilise X", "benutze X" (not a question).
_USE_INSTEAD = re.compile(
    r"^(?!.*[?？])(?:\W*(?:(?:please|pls|just|no,?|ok,?)\s+)*(?:use|switch\s+to|go\s+with|stick\s+(?:to|with))\s+[\w`@./-]"
    r"|.{0,100}\binstead\s*[.!]*$"
    r"|\W*(?:尽量|请|请你|还是|改|直接)?(?:用|使用|改用)\s*[\w`@./-]"
    r"|.{1,60}を使(?:って|う|え|用して)"
    r"|\W*(?:usa|use|utilize|utiliza|usar|utilise[rz]?|benutze|verwende|nimm)\s+[\w`@./-])",
    re.IGNORECASE,
)
#: An answer longer than this is a paragraph the matcher reads, not a picked option.
ANSWER_CHARS = 160


#: A list item (or a plan's line) longer than this is a paragraph, not a constraint: item cues do not read it.
ITEM_CHARS = 240


#: A parenthetical (a reason, an example) that closes a sentence: cues anchored at the end read what is before it.
_TRAILING_PAREN = re.compile(r"\s*[（(][^（）()]{1,200}[）)]\s*[。.．]?\s*$")


def _whole_rule(text: str, source: str, form: str, cue: str) -> dict[str, tuple[Prohibition, str]]:
    """``{id: (rule, language)}`` of a whole short text read as one rule (und read as English)."""
    p = make_prohibition(text, source=source, form=form, cue=cue)
    lang = cues.language_of(text)
    return {p.id: (p, "en" if lang == "und" else lang)}


def session_language(candidates: Sequence[Candidate]) -> str:
    """The language most of the user's own messages are written in (:func:`cues.main_language` of their openings)."""
    return cues.main_language([cues.language_of(c.text[:2000]) for c in candidates if c.channel in _USER_WORDS])


def _read_foreign(table: cues.ForeignTable, lines: list[tuple[str, bool]], source: str) -> list[Prohibition]:
    """The rules a language's cue table reads in ``lines`` (``(line, list item or plan line)``; sentence by sentence;
    a veto wins; an ``item`` cue reads only a short list item or plan line: "no X, no Y" lists, plan bullets)."""
    out = []
    for line, item in lines:
        item = item and len(line) <= ITEM_CHARS
        pieces = [
            s
            for part in _FOREIGN_SENTENCE.split(line)
            for s in (sentences(part) if table.lang in cues.SPACED_TABLES else [part])
            if s.strip()
        ]
        for sentence in pieces:
            s = sentence.strip()
            if len(s) < 3 or any(pattern.search(s) for _, pattern in table.veto):
                continue
            if table.lang not in cues.LATIN_TABLES:
                hits = _clause_rules(table, s, item)
            else:  # a negated later clause alone, else each clause a cue reads alone ("A, não usar B")
                hits = _latin_clause_rules(table, s, item) or _clause_rules(table, s, item)
            if not hits:
                found = _first_cue(table, s, item)
                hits = [(s, found[0])] if found is not None else []
            out += [make_prohibition(text[:500], source=source, form=cue.form or "explicit",
                                     cue=f"{table.lang}:{cue.name}") for text, cue in hits]
    return out


def _first_cue(table: cues.ForeignTable, s: str, item: bool) -> tuple[cues.Cue, re.Pattern[str]] | None:
    """The first instruction cue that reads ``s``, with its pattern."""
    core = _TRAILING_PAREN.sub("", s)  # "X は使わない（理由）": the reason is not the rule's end
    for cue, pattern in table.instruction:
        if cue.scope == "item" and not item:
            continue
        if pattern.search(s) or (core != s and pattern.search(core)):
            return cue, pattern
    return None


def _clause_rules(table: cues.ForeignTable, s: str, item: bool) -> list[tuple[str, cues.Cue]]:
    """A sentence of several clauses: each clause a cue reads on its own is a rule of its own ("X first, at most one
    question at a time, no more than N in all" holds two limits); none read alone: the sentence is read whole (a
    cue that spans a comma)."""
    parts = [c.strip() for c in _FOREIGN_CLAUSE.split(s) if c.strip()]
    if len(parts) < 2:
        return []
    hits = []
    for part in parts:
        if len(part) < 3:
            continue
        found = _first_cue(table, part, item)
        # the clause's cue must hold in the sentence too: its context may undo it ("我不想改 X，但是没办法": conceded)
        if found is not None and found[1].search(s):
            hits.append((part, found[0]))
    return hits


#: A clause of a Latin-script sentence that opens with a negation: "keep A, never B", "A, não usar B".
_LATIN_NEG_CLAUSE = re.compile(
    r",\s+(?=(?:e\s+|y\s+|und\s+|et\s+)?(?:n[ãa]o|no|nicht|nie|niemals|ne|nunca|jamais|non)\s+\w)", re.I)


def _latin_clause_rules(table: cues.ForeignTable, s: str, item: bool) -> list[tuple[str, cues.Cue]]:
    """A Latin-script sentence whose later clause opens with a negation: that clause read on its own (the sentence's
    first cue would otherwise name the whole run-on sentence, or none when it is anchored at the start)."""
    parts = [c.strip() for c in _LATIN_NEG_CLAUSE.split(s) if c.strip()]
    if len(parts) < 2:
        return []
    hits = []
    for part in parts[1:]:
        found = _first_cue(table, part, item)
        if found is not None and found[0].form != "contrastive":
            hits.append((part, found[0]))
    return hits


#: A summary sentence that says the thing went: it does not carry a rule to keep it (any language of the tables).
_REMOVAL = re.compile(
    r"\b(?:remov\w*|delet\w*|dropp\w*|replac\w*|rewr[io]t\w*|renam\w*|migrat\w*\s+away|got\s+rid|"
    r"entfernt|gelöscht|ersetzt|verwijderd|vervangen|supprimé\w*|remplacé\w*|eliminad\w*|borrad\w*|reemplazad\w*|removid\w*|"
    r"substituíd\w*|rimoss\w*|sostituit\w*|usunięt\w*|zastąpion\w*|удал[её]н\w*|замен[её]н\w*)\b|削除|置き換え|删除|删掉|替换|替換|삭제|제거|교체",
    re.I,
)


#: Words near a rule's name that may restate it (any table's language): a negation, keep or scope word, and by the
#: rule's form a deferral (defer) or an ask / wait word (restraint).
_RESTATING = re.compile(_NEGATION_OR_KEEP.pattern + r"|\b(?:retain\w*|intact|read[- ]only|declin\w*|reject\w*|"
                        r"refus\w*|omit\w*|skipp\w*|left\s+out|unused|bypass\w*|stop\w*|refrain\w*|(?:decided|advised)\s+against|"
                        r"disallow\w*|bann\w*|remain\w*|as[- ]is|untouched)\b|そのまま", re.I)
_RESTATING_BY_FORM = {
    "defer": re.compile(r"\b(?:later|defer\w*|postpon\w*|for\s+now|until|follow[- ]?up|separate\w*)\b"
                        r"|後で|保留|以后|之后|暂|나중", re.I),
    "contrastive": re.compile(r"\b(?:only|rather|solely|exclusively|over|in\s+favou?r\s+of|prefer\w*)\b"
                              r"|だけ|のみ|只|仅|僅", re.I),
    "restraint": re.compile(r"\b(?:ask\w*|wait\w*|first|before|approv\w*|confirm\w*|manual\w*|review\w*)\b"
                            r"|確認|承認|确认|확인", re.I),
}
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+|\n")


@lru_cache(maxsize=64)
def _sentences_of(summary: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """A summary's sentences (NFKC, casefolded), each with its words."""
    parts = _SENTENCE_END.split(unicodedata.normalize("NFKC", summary).casefold())
    return tuple((s, frozenset(tokens(s))) for s in parts if s.strip())


def _naming_words(rule: str) -> frozenset[str]:
    return frozenset(w for w in tokens(rule)
                     if (len(w) >= 4 or any(ch.isdigit() for ch in w)) and w not in _PLAIN_WORDS)


#: How far (characters) a restating word may stand from the rule's name in a summary sentence to be "beside" it.
NEAR = 40


def _restated_near(rule: str, form: str, names: tuple[str, ...], summary: str, english: bool) -> bool:
    """Whether a summary sentence that names the rule — one of ``names`` (its code names the summary still names, whole
    tokens), or in English half of its naming words — has a word that could restate it (:data:`_RESTATING`, by form)
    within :data:`NEAR` characters of one of them: then the trace may be a paraphrase, else only a mention."""
    named = re.compile("|".join(rf"(?<![\w]){re.escape(n)}(?![\w])" for n in names)) if names else None
    naming = _naming_words(rule) if english else frozenset()
    # a word of five letters or less is matched whole ("open" is not "openjdk"), a longer one by its stem
    stems = {(w, True) if len(w) <= 5 else (w[:-2], False) for w in naming}
    extra = _RESTATING_BY_FORM.get(form)
    parts = [rf"(?<![\w]){re.escape(n)}(?![\w])" for n in names]
    parts += [rf"(?<![\w]){re.escape(st)}" + (r"(?![\w])" if whole else "") for st, whole in stems]
    anchor = re.compile("|".join(parts)) if parts else None
    for sentence, words in _sentences_of(summary):
        share = (sum(st in words if whole else any(t.startswith(st) for t in words) for st, whole in stems)
                 / len(stems) if stems else 0.0)
        if not (named is not None and named.search(sentence) or share >= 0.5):
            continue
        if len(stems) >= 2 and share < 0.5:
            continue  # a code name alone ("PR", "21") beside some negation: a coincidence, not a restatement
        anchors = [m.start() for m in (anchor.finditer(sentence) if anchor is not None else ())]
        for pattern in (_RESTATING, extra):
            for m in pattern.finditer(sentence) if pattern is not None else ():
                if any(abs(m.start() - a) <= NEAR for a in anchors):
                    return True
    return False


def _code_name_kept(rule: str, summary: str, preserve: bool = False, removed: bool = False) -> str | None:
    """A summary sentence naming a code name of ``rule`` (a path, an identifier) next to a negation or keep word."""
    names = {m.group(1) or m.group(2) for m in _CODE_NAME.finditer(rule)}
    names = {n.strip() for n in names if n and len(n.strip()) >= 3}
    if not names:
        return None
    for sentence in re.split(r"(?<=[.!?。])\s+|\n", summary):
        if not any(n in sentence for n in names):
            continue
        if removed and _REMOVAL.search(sentence):
            return sentence.strip()
        if not removed and _NEGATION_OR_KEEP.search(sentence) and not (preserve and _REMOVAL.search(sentence)):
            return sentence.strip()
    return None


def as_judge(judge: Judge | ProhibitionMatcher | None) -> Judge:
    """The judge an adapter was given: None -> the default ``rules`` judge; a bare
    :class:`ProhibitionMatcher` (the adapters' former argument) -> the ``rules`` judge with it."""
    if judge is None:
        return RulesJudge()
    if isinstance(judge, ProhibitionMatcher):
        return RulesJudge(judge)
    return judge
