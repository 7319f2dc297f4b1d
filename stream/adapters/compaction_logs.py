"""Shared machinery of the compaction-log adapters (OpenHands, Claude Code).

Real agents record their compactions; these adapters turn such a record into the two
input streams of DESIGN.md §3 following the conventions of the format notes
(``shared/formats/COMPACTION_LOGS.md``, "Conventions for every adapter"). What the two
systems share lives here:

* :class:`ContextEvents` — one context's output in source order: ``seq`` 0, 1, 2, ...,
  deterministic ``event_id`` s (a hash of context, source position, op, tier and id),
  and the *holder* bookkeeping that decides when an artifact really enters or leaves a
  tier. An artifact is ``admitted`` to ``live`` when its first holder (a raw item of
  the log that shows it) appears and ``evicted`` from ``live`` when the last one is
  forgotten by a compaction; likewise for ``durable`` with durable holders (the event
  file, the transcript, a saved-output directory). So ``file:<path>`` stays live while
  any raw item still in view shows that path.
* :class:`ProhibitionMatcher` — which sentences of a raw text are prohibitions, and
  whether a summary text still carries one (a documented, tunable heuristic).
* :func:`mentioned_artifacts` — the referents of a summary: artifacts whose identifier
  (path, tool-call id, saved-output path, event id) appears in its text.
* :class:`ReadStats` — what was read from one input, for the one-line stderr summary.

Plain Python, no faust/aiokafka (the CLI :mod:`stream.commands.ingest` is the shell).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from stream.adapters.trajectories import (
    MAX_ID,
    Constraint,
    constraint_key_text,
    iter_sentences,
    make_constraint,
    short_hash,
)

LIVE = "live"
DURABLE = "durable"

#: Summary text kept in a checkpoint (informational; matching and referents use all of
#: it): 64k characters keep any event well under the 1 MiB message limit (DESIGN.md §3).
MAX_TEXT_CHARS = 65_536

#: Default share of a prohibition's content words a summary sentence must contain
#: (with a negation cue) to count as carrying it. ``--match-threshold`` changes it.
DEFAULT_MATCH_THRESHOLD = 0.8

# --------------------------------------------------------------------------- stats


@dataclass
class ReadStats:
    """What was read from one input (a conversation directory or a transcript file).

    ``records``: source records read (event files, JSONL lines). ``unknown``: record
    type -> count of records of a type the adapter does not know (skipped, never
    fatal). ``ignored``: known types that produce no event. ``errors``: one-line
    ``"<path>[:<line>]: <problem>"`` messages for records or inputs that could not be
    read (skipped). ``broken_links``: parent links that point nowhere (file order used
    instead). ``failed``: the whole input could not be read.
    """

    source: str
    records: int = 0
    unknown: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    broken_links: int = 0
    failed: bool = False

    def error(self, message: str) -> str:
        line = " ".join(message.split())
        self.errors.append(line)
        return line


# --------------------------------------------------------------------------- event output


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")


def rfc3339_or_none(value: Any) -> str | None:
    """``value`` when it is an RFC 3339 time with an offset, else None (never guessed)."""
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        return None
    try:
        datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return value


def bounded_id(text: str) -> str:
    """An id of at most 1,024 characters (DESIGN.md §3): longer ones end in a hash."""
    return text if len(text) <= MAX_ID else f"{text[: MAX_ID - 14]}#{short_hash(text)}"


@dataclass
class _Node:
    pool: dict[str, Constraint]  # prohibitions of the raw context under the node (transitive)
    carried: dict[str, Constraint]


class ContextEvents:
    """One context's events, in source order, with the tier bookkeeping of the conventions.

    ``where`` arguments name the source position that caused an event
    (``"events/event-00003-<uuid>.json"``, ``"<session>.jsonl:17"``): relative, so the
    same log gives the same ``event_id`` s wherever it is stored. Events accumulate in
    :attr:`pending` until :meth:`drain`.

    Event dicts are the wire shape of DESIGN.md §3 (encode with
    :func:`stream.adapters.encode_event`); unknown extra fields start with ``x_``.
    """

    def __init__(self, context_id: str) -> None:
        self.context_id = bounded_id(context_id)
        self.seq = 0
        self.pending: list[dict[str, Any]] = []
        self.kinds: dict[str, str] = {}
        self.tiers: dict[str, set[str]] = {}
        self._live: dict[str, set[str]] = {}  # artifact -> live holders
        self._durable: dict[str, set[str]] = {}  # artifact -> durable holders
        self._held_live: dict[str, dict[str, None]] = {}  # holder -> artifacts (ordered)
        self._held_durable: dict[str, dict[str, None]] = {}
        self.identifiers: dict[str, str] = {}  # text that names an artifact -> artifact id
        self.nodes: dict[str, _Node] = {}
        self._ids_at: Counter[tuple[str, str]] = Counter()
        self.root_id = bounded_id(f"root:{context_id}")
        self._root_emitted: tuple | None = None

    # ---- low level

    def _event(self, where: str, at: str | None, body: dict[str, Any]) -> dict[str, Any]:
        what = body.get("artifact_id") or body.get("node_id")
        basis = f"{where}\x1f{body.get('op', 'checkpoint')}\x1f{body.get('tier', '')}\x1f{what}"
        n = self._ids_at[(where, basis)]
        self._ids_at[(where, basis)] += 1
        digest = hashlib.sha256(f"{self.context_id}\x1f{basis}\x1f{n}".encode("utf-8")).hexdigest()[:32]
        event: dict[str, Any] = {
            "type": "artifact" if "artifact_id" in body else "checkpoint",
            "schema_version": 1,
            "event_id": digest,
            "context_id": self.context_id,
            "seq": self.seq,
        }
        if at is not None:
            event["occurred_at"] = at
        event.update(body)
        self.seq += 1
        self.pending.append(event)
        return event

    def _tier_event(self, artifact_id: str, op: str, tier: str, where: str, at: str | None) -> None:
        tiers = self.tiers.setdefault(artifact_id, set())
        if (op == "admitted") == (tier in tiers):
            return  # already in (or already out of) that tier
        if op == "admitted":
            tiers.add(tier)
        else:
            tiers.discard(tier)
        self._event(where, at, {"artifact_id": artifact_id, "op": op, "tier": tier, "kind": self.kinds[artifact_id]})

    def drain(self) -> list[dict[str, Any]]:
        """The events produced since the last drain, in order."""
        out, self.pending = self.pending, []
        return out

    # ---- artifacts

    def hold(
        self,
        artifact_id: str,
        kind: str,
        where: str,
        at: str | None,
        *,
        live: str | None,
        durable: str | None,
        names: Iterable[str] = (),
    ) -> str:
        """Record that ``live`` (a raw item in view) and/or ``durable`` (a durable copy) hold the artifact.

        Emits ``admitted live`` then ``admitted durable`` the first time a tier gets a
        holder (both before anything can name the artifact: "admit before naming").
        ``names``: texts that identify the artifact in a summary (see
        :func:`mentioned_artifacts`). Returns the (length-bounded) artifact id.
        """
        artifact_id = bounded_id(artifact_id)
        self.kinds.setdefault(artifact_id, kind)
        if live is not None:
            self._live.setdefault(artifact_id, set()).add(live)
            self._held_live.setdefault(live, {})[artifact_id] = None
            self._tier_event(artifact_id, "admitted", LIVE, where, at)
        if durable is not None:
            self._durable.setdefault(artifact_id, set()).add(durable)
            self._held_durable.setdefault(durable, {})[artifact_id] = None
            self._tier_event(artifact_id, "admitted", DURABLE, where, at)
        for name in names:
            if name and name not in self.identifiers:
                self.identifiers[name] = artifact_id
        return artifact_id

    def release_live(self, holder: str, where: str, at: str | None) -> int:
        """``holder`` left the model's view: evict from ``live`` what it alone held. Returns evictions."""
        return self._release(holder, self._held_live, self._live, LIVE, where, at)

    def release_durable(self, holder: str, where: str, at: str | None) -> int:
        """A durable copy disappeared: evict from ``durable`` what it alone held."""
        return self._release(holder, self._held_durable, self._durable, DURABLE, where, at)

    def release_all_durable(self, where: str, at: str | None) -> int:
        """The whole durable log is gone (e.g. a transcript deleted by retention)."""
        return sum(self.release_durable(h, where, at) for h in list(self._held_durable))

    def is_live_holder(self, holder: str) -> bool:
        return bool(self._held_live.get(holder))

    def live_holders(self) -> list[str]:
        """Holders that still hold something live, in the order they first appeared."""
        return [h for h, arts in self._held_live.items() if arts]

    def _release(self, holder, held, holders, tier, where, at) -> int:
        artifacts = held.pop(holder, {})
        n = 0
        for artifact_id in artifacts:
            left = holders.get(artifact_id, set())
            left.discard(holder)
            if not left:
                before = self.seq
                self._tier_event(artifact_id, "evicted", tier, where, at)
                n += self.seq - before
        return n

    # ---- checkpoints

    def summary_node(
        self,
        node_id: str,
        where: str,
        at: str | None,
        *,
        children: Iterable[str],
        raw: Iterable[Constraint],
        text: str | None,
        matcher: "ProhibitionMatcher",
        opaque_reason: str | None = None,
        exclude_referents: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Emit one summary checkpoint (format notes, "Levels" .. "referents").

        ``children``: earlier summary nodes this one covers (-> ``section``; none ->
        ``leaf``). ``raw``: prohibitions in the raw items it directly covers
        (``raw_negative_constraints``). ``negative_constraints`` = the prohibitions of
        its whole subtree that ``matcher`` finds again in ``text``, under the same id.
        ``referents`` = :func:`mentioned_artifacts` of ``text``. ``text=None``: an opaque
        or missing summary — emitted with ``text: null``, ``x_opaque: true`` and
        ``x_opaque_reason``; it carries nothing and names nothing (it cannot be verified).
        """
        node_id = bounded_id(node_id)
        children = [bounded_id(c) for c in children]
        raw_map = {c.id: c for c in raw}
        pool = dict(raw_map)
        for child in children:
            if child in self.nodes:
                pool.update(self.nodes[child].pool)
        carried = {c.id: c for c in matcher.carried(text, pool.values())} if text else {}
        skip = set(exclude_referents)
        referents = [a for a in mentioned_artifacts(text, self.identifiers) if a not in skip] if text else []
        self.nodes[node_id] = _Node(pool=pool, carried=carried)
        body: dict[str, Any] = {
            "node_id": node_id,
            "level": "section" if children else "leaf",
            "parent_id": self.root_id,
            "children": sorted(set(children)),
            "referents": referents,
            "negative_constraints": [c.as_wire() for c in carried.values()],
            "raw_negative_constraints": [c.as_wire() for c in raw_map.values()],
            "text": text,
        }
        if text is not None and len(text) > MAX_TEXT_CHARS:  # keep the event under the 1 MiB limit
            body["text"] = text[:MAX_TEXT_CHARS]
            body["x_text_truncated"] = True
        if text is None:
            body["x_opaque"] = True
            body["x_opaque_reason"] = opaque_reason or "summary text not available"
        return self._event(where, at, body)

    def root(
        self,
        where: str,
        at: str | None,
        *,
        children: Iterable[str],
        kept: Iterable[Constraint],
        raw: Iterable[Constraint],
    ) -> dict[str, Any] | None:
        """(Re-)emit the synthetic root ``root:<context>`` if it changed.

        ``children``: the summaries currently in view. ``raw``: prohibitions of the
        always-kept channel (system prompt, rule files). Carried: ``kept`` (that channel
        as it is in view now) plus what the children in view carry — the root *is* the
        view, so it holds what they hold. Returns the event, or None when unchanged.
        """
        children = sorted({bounded_id(c) for c in children})
        carried: dict[str, Constraint] = {c.id: c for c in kept}
        for child in children:
            if child in self.nodes:
                carried.update(self.nodes[child].carried)
        raw_map = {c.id: c for c in raw}
        state = (tuple(children), tuple(sorted(carried)), tuple(sorted(raw_map)))
        if state == self._root_emitted or (self._root_emitted is None and not children and not raw_map):
            return None  # unchanged, or nothing to say yet
        self._root_emitted = state
        return self._event(
            where,
            at,
            {
                "node_id": self.root_id,
                "level": "root",
                "children": children,
                "referents": [],
                "negative_constraints": [carried[k].as_wire() for k in sorted(carried)],
                "raw_negative_constraints": [raw_map[k].as_wire() for k in sorted(raw_map)],
            },
        )


# --------------------------------------------------------------------------- referents


_ID_CHAR = r"[\w./~-]"


def mentioned_artifacts(text: str, identifiers: Mapping[str, str]) -> list[str]:
    """Artifact ids whose identifier appears in ``text`` as a whole token, sorted.

    ``identifiers`` maps a name (a file path or path suffix, a tool-call id, a
    saved-output path, a native event id) to its artifact id. A name matches only where
    it is not part of a longer token (``a/b.py`` does not match ``a/b.pyc`` or
    ``xa/b.py``; a sentence's final ``.`` is fine).
    """
    if not text:
        return []
    found: set[str] = set()
    for name, artifact_id in identifiers.items():
        if artifact_id in found or name not in text:
            continue
        if re.search(rf"(?<!{_ID_CHAR}){re.escape(name)}(?![\w/~-]|\.\w)", text):
            found.add(artifact_id)
    return sorted(found)


def path_names(path: str) -> list[str]:
    """How a summary may name a file: the path, and its suffixes of two or more parts.

    ``/workspace/app/settings.py`` -> itself, ``workspace/app/settings.py``,
    ``app/settings.py``; a bare ``settings.py`` is too ambiguous to count.
    """
    path = path.strip()
    if not path:
        return []
    names = [path]
    parts = [p for p in path.split("/") if p]
    for i in range(len(parts) - 1):
        names.append("/".join(parts[i:]))
    return list(dict.fromkeys(names))


# --------------------------------------------------------------------------- prohibitions

#: A raw sentence is a prohibition when one of these cues stands in a main clause.
#: Narrower than the trajectory adapters' cue list on purpose: "cannot", "can't" and
#: "not possible" describe far more often than they forbid in user chat.
PROHIBITION_CUES = re.compile(
    r"\b(?:do\s+not|don't|dont|never|must\s+not|mustn't|should\s+not|shouldn't|may\s+not|"
    r"avoid|refrain\s+from|not\s+allowed|not\s+permitted|forbidden|prohibited|"
    r"under\s+no\s+circumstances)\b",
    re.IGNORECASE,
)
#: A summary sentence can carry a prohibition only if it has one of these (a summary
#: reports, so "asked not to", "forbade", "without" count too).
SUMMARY_NEGATION = re.compile(
    r"\b(?:not|no|never|don't|dont|doesn't|didn't|won't|mustn't|shouldn't|cannot|can't|"
    r"avoid\w*|forb[ia]d\w*|prohibit\w*|without|refrain\w*)\b",
    re.IGNORECASE,
)
_CONDITION = re.compile(r"\b(?:if|unless|when|whether)\b", re.IGNORECASE)
_CLAUSE_SPLIT = re.compile(r"\s*(?:;|:\s|\s+but\s+|,\s*(?:and|so)\s+)\s*", re.IGNORECASE)
_SUMMARY_SPLIT = re.compile(r"(?:\n|(?<=[.!?;])\s+)")
_WORD = re.compile(r"[a-z0-9][a-z0-9_'./~-]*")
#: Words that say nothing about *what* is forbidden: function words, the negation and
#: modal cues themselves, and the reporting verbs summaries use ("the user asked ...").
STOPWORDS = frozenset(
    """a an the and or nor of to in on at by for from with into onto over under about as is are was were be been
    being am do does did doing done not no never don't dont mustn't shouldn't won't didn't doesn't cannot can't can
    must should may might will would shall could please you your yours we our us i me my it its this that these those
    there here they them their he she his her any all some such also just only ever then than so very too
    avoid avoided avoiding refrain refrained from forbidden forbid forbade prohibited prohibit allowed permitted
    user users agent assistant asked ask asks told tell said say says requested request wants want wanted
    instructed instruction instructions reminded reminder note noted make sure keep kept circumstances
    under without""".split()
)


def _stem(word: str) -> str:
    """A light, deterministic English stemmer: enough to meet "files"/"file", "editing"/"edit"."""
    word = word.strip("./-~'")
    if word.endswith("'s"):
        word = word[:-2]
    if word.endswith("ies") and len(word) >= 5:
        return word[:-3] + "y"
    if word.endswith(("sses", "xes", "zes", "ches", "shes")) and len(word) >= 5:
        return word[:-2]
    if word.endswith("ing") and len(word) >= 6:
        return word[:-3]
    if word.endswith("ed") and len(word) >= 5:
        return word[:-2]
    if word.endswith("s") and len(word) >= 4 and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that say what it is about: lower-cased, light-stemmed, no stopwords.

    Paths and identifiers stay whole (``migrations/`` -> ``migrations`` -> ``migration``).
    """
    words = set()
    for raw in _WORD.findall(unicode_lower(text)):
        if raw in STOPWORDS:
            continue
        w = _stem(raw)
        if len(w) > 1 and w not in STOPWORDS:
            words.add(w)
    return frozenset(words)


def unicode_lower(text: str) -> str:
    return constraint_key_text(text).replace("\u2019", "'")


def _cue_in_main_clause(sentence: str) -> bool:
    for cue in PROHIBITION_CUES.finditer(sentence):
        before = sentence[: cue.start()]
        cond = list(_CONDITION.finditer(before))
        if not cond or "," in before[cond[-1].end():]:
            return True
    return False


@dataclass(frozen=True)
class ProhibitionMatcher:
    """Finds prohibitions in raw text and decides whether a summary still carries them.

    The heuristic (format notes, "raw_negative_constraints"):

    * **Extraction.** A raw text is cut into sentences (bullets and ``. `` ends; code
      fences and headings skipped) and each sentence into clauses (at ``;``, ``: ``,
      ``but``, ``, and``); a clause with a prohibition cue (:data:`PROHIBITION_CUES`)
      outside an ``if/unless/when`` condition is a prohibition. Its ``id`` is a hash of
      the normalized clause, so the same clause in two places is one constraint.
    * **Carrying.** A summary carries a prohibition when the normalized prohibition
      appears in it verbatim, or when one summary sentence has a negation cue
      (:data:`SUMMARY_NEGATION`) and at least ``threshold`` of the prohibition's
      :func:`content_words`. A prohibition without content words ("Don't.") is carried
      only verbatim.

    ``threshold`` in [0, 1]: lower keeps more paraphrases (fewer false alarms, more
    misses: a different prohibition about the same words passes); higher flags more
    paraphrases as dropped. Synonyms ("edit" vs "modify") never match.
    """

    threshold: float = DEFAULT_MATCH_THRESHOLD

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"match threshold must be in [0, 1], got {self.threshold}")

    def prohibitions(self, text: str | None) -> list[Constraint]:
        """Prohibition clauses of a raw text, in order, de-duplicated by id."""
        out: dict[str, Constraint] = {}
        if not text:
            return []
        for sentence in iter_sentences(text):
            for clause in _CLAUSE_SPLIT.split(sentence):
                clause = clause.strip(" ,")
                if len(clause) >= 8 and _cue_in_main_clause(clause):
                    c = make_constraint(clause, "prohibition")
                    out.setdefault(c.id, c)
        return list(out.values())

    def carries(self, summary: str | None, prohibition: Constraint) -> bool:
        """Does ``summary`` still state ``prohibition`` (verbatim or paraphrased)?"""
        if not summary:
            return False
        key = constraint_key_text(prohibition.text)
        if key and key in constraint_key_text(summary):
            return True
        wanted = content_words(prohibition.text)
        if not wanted:
            return False
        for sentence in _SUMMARY_SPLIT.split(summary):
            if not SUMMARY_NEGATION.search(unicode_lower(sentence)):
                continue
            if len(wanted & content_words(sentence)) >= self.threshold * len(wanted):
                return True
        return False

    def carried(self, summary: str | None, pool: Iterable[Constraint]) -> list[Constraint]:
        """The prohibitions of ``pool`` that ``summary`` carries, in pool order."""
        return [c for c in pool if self.carries(summary, c)]


# --------------------------------------------------------------------------- small helpers


def texts_of(value: Any, *, keys: tuple[str, ...] = ("text",)) -> list[str]:
    """Every string under ``keys`` anywhere in a JSON value (content blocks, nested lists).

    A bare string value is returned as is. Used to read message/observation content in
    its several shapes (``"..."``, ``[{"type": "text", "text": "..."}]``, nested).
    """
    out: list[str] = []

    def walk(v: Any, depth: int) -> None:
        if depth > 20:
            return
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, list):
            for item in v:
                walk(item, depth + 1)
        elif isinstance(v, dict):
            for k in keys:
                if k in v:
                    walk(v[k], depth + 1)

    walk(value, 0)
    return out


def find_values(value: Any, key: str, *, depth: int = 0) -> list[Any]:
    """Every value stored under ``key`` anywhere in a JSON value, in document order."""
    out: list[Any] = []
    if depth > 20:
        return out
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                out.append(v)
            out.extend(find_values(v, key, depth=depth + 1))
    elif isinstance(value, list):
        for v in value:
            out.extend(find_values(v, key, depth=depth + 1))
    return out
