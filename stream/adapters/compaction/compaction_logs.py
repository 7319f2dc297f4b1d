"""Shared machinery of the compaction-log adapters (OpenHands, Claude Code).

Real agents record their compactions; these adapters turn such a record into the two
input streams of DESIGN.md §3 following the conventions of the format notes
(``docs/COMPACTION_LOGS.md``, "Conventions for every adapter"). What the two systems
share lives here:

More (the module notes): docs/COMPACTION_LOGS.md, section ``stream/adapters/compaction/compaction_logs.py``.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stream.adapters.common import MAX_ID, short_hash
from stream.adapters.compaction.judge import (
    SOURCE_OF_CHANNEL,
    Candidate,
    Carry,
    Instruction,
    Judge,
    Judgement,
    Usage,
)
from stream.times import rfc3339_time

if TYPE_CHECKING:
    from stream.adapters.compaction.prohibitions import ProhibitionMatcher

LIVE = "live"
DURABLE = "durable"

#: Summary text kept in a checkpoint (informational; matching and referents use all of
#: it): 64k characters keep any event well under the 1 MiB message limit (DESIGN.md §3).
MAX_TEXT_CHARS = 65_536

# --------------------------------------------------------------------------- stats


@dataclass
class ReadStats:
    """What was read from one input (a conversation directory or a transcript file).

    ``records``: source records read (event files, JSONL records). ``unknown``: record
    type -> count of records of a type the adapter does not know (skipped, never
    fatal). ``ignored``: known types that produce no event. ``repeated``: records
    already read (from another copy of the session, or a repeated line; skipped). ``errors``: one-line
    ``"<path>[:<line>]: <problem>"`` messages for records or inputs that could not be
    read (skipped; exit code 1). ``warnings``: one-line notes that lose nothing (a
    recovered glued line, a compaction still waiting for its summary; exit code
    unchanged). ``broken_links``: parent links that point nowhere (file order used
    instead). ``naive_times``: timestamps without a zone, read as UTC. ``failed``:
    the whole input could not be read.
    """

    source: str
    records: int = 0
    unknown: Counter[str] = field(default_factory=Counter)
    ignored: Counter[str] = field(default_factory=Counter)
    repeated: int = 0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    broken_links: int = 0
    naive_times: int = 0
    failed: bool = False

    def error(self, message: str) -> str:
        line = " ".join(message.split())
        self.errors.append(line)
        return line

    def warn(self, message: str) -> str:
        line = " ".join(message.split())
        self.warnings.append(line)
        return line


# --------------------------------------------------------------------------- event output


_NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?")


def rfc3339_or_none(value: Any, *, naive_as_utc: bool = False, stats: ReadStats | None = None) -> str | None:
    """``value`` when it is an RFC 3339 time with an offset, else None (never guessed).

    ``naive_as_utc``: a time without a zone (OpenHands writes ``datetime.now()`` that
    way) is read as UTC and returned with ``Z`` appended; ``stats.naive_times`` counts it.
    """
    if not isinstance(value, str):
        return None
    if naive_as_utc and _NAIVE.fullmatch(value):
        value = value + "Z"
        if stats is not None:
            stats.naive_times += 1
    return rfc3339_time(value)


def bounded_id(text: str) -> str:
    """An id of at most 1,024 characters (DESIGN.md §3): longer ones end in a hash."""
    return text if len(text) <= MAX_ID else f"{text[: MAX_ID - 14]}#{short_hash(text)}"


@dataclass
class _Node:
    pool: dict[str, dict[str, Any]]  # constraint id -> wire object: the raw context under the node (transitive)
    carried: dict[str, dict[str, Any]]  # every constraint the node's judgement says its text carries (or discharges)
    text: str | None = None


class ContextEvents:
    """One context's events, in source order, with the tier bookkeeping of the conventions.

    ``where`` arguments name the record that caused an event by its native identity
    (``"uuid:<uuid>"``, ``"ev:<event id>"``): never a path or a line, so the same record
    read from any copy of the log gives the same ``event_id``. Events accumulate in
    :attr:`pending` until :meth:`drain`.

    Event dicts are the wire shape of DESIGN.md §3 (encode with
    :func:`stream.adapters.encode_event`); informational extras start with ``x_``.
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
        self._by_record: dict[str, dict[str, None]] = {}  # record -> artifacts it held durable
        self.identifiers: dict[str, str] = {}  # text that names an artifact -> artifact id
        self.nodes: dict[str, _Node] = {}
        self._ids_at: Counter[tuple[str, str]] = Counter()
        self.root_id = bounded_id(f"root:{context_id}")
        self._root_emitted: tuple | None = None
        self._root_pool: dict[str, dict[str, Any]] = {}  # what the root requires: every summary it ever showed

    # ---- low level

    def _event(self, where: str, at: str | None, body: dict[str, Any]) -> dict[str, Any]:
        what = body.get("artifact_id") or body.get("node_id")
        basis = f"{where}\x1f{body.get('op', 'checkpoint')}\x1f{body.get('tier', '')}\x1f{what}"
        n = self._ids_at[(where, basis)]
        self._ids_at[(where, basis)] += 1
        digest = hashlib.sha256(f"{self.context_id}\x1f{basis}\x1f{n}".encode()).hexdigest()[:32]
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
            self._by_record.setdefault(where, {})[artifact_id] = None
            self._tier_event(artifact_id, "admitted", DURABLE, where, at)
        for name in names:
            if name and name not in self.identifiers:
                self.identifiers[name] = artifact_id
        return artifact_id

    def also_held_by(self, record: str, durable: str, at: str | None) -> None:
        """Another copy (``durable``) of an already-read ``record`` holds what that record held durable."""
        for artifact_id in self._by_record.get(record, ()):
            self._durable.setdefault(artifact_id, set()).add(durable)
            self._held_durable.setdefault(durable, {})[artifact_id] = None
            self._tier_event(artifact_id, "admitted", DURABLE, record, at)

    def release_live(self, holder: str, where: str, at: str | None) -> int:
        """``holder`` left the model's view: evict from ``live`` what it alone held. Returns evictions."""
        return self._release(holder, self._held_live, self._live, LIVE, where, at)

    def release_durable(self, holder: str, where: str, at: str | None) -> int:
        """A durable copy disappeared: evict from ``durable`` what it alone held."""
        return self._release(holder, self._held_durable, self._durable, DURABLE, where, at)

    def evict_live(self, artifact_id: str, where: str, at: str | None) -> bool:
        """The artifact itself left the model's view, whatever still shows it (a microcompact)."""
        artifact_id = bounded_id(artifact_id)
        for holder in self._live.pop(artifact_id, set()):
            self._held_live.get(holder, {}).pop(artifact_id, None)
        if LIVE not in self.tiers.get(artifact_id, ()):
            return False
        self._tier_event(artifact_id, "evicted", LIVE, where, at)
        return True

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
        raw: Iterable[dict[str, Any]],
        carried: Mapping[str, dict[str, Any]],
        text: str | None,
        extra: Mapping[str, Any] | None = None,
        opaque_reason: str | None = None,
        exclude_referents: Iterable[str] = (),
    ) -> dict[str, Any]:
        """Emit one summary checkpoint (format notes, "Levels" .. "referents").

        ``children``: earlier summary nodes this one covers (-> ``section``; none ->
        ``leaf``). ``raw``: wire objects of the prohibitions in force first seen in the raw
        items it directly covers (``raw_negative_constraints``). ``carried``: id -> wire
        object of every prohibition its judgement says the text carries (or discharges:
        no longer in force); ``negative_constraints`` = those of its whole subtree.
        ``extra``: informational ``x_`` fields (the judge's). ``referents`` =
        :func:`mentioned_artifacts` of ``text``. ``text=None``: an opaque or missing
        summary — emitted with ``text: null``, ``opaque: true`` (DESIGN.md §3, the
        ``unverifiable_checkpoint`` rule) and ``x_opaque_reason``; it names nothing.
        """
        node_id = bounded_id(node_id)
        children = [bounded_id(c) for c in children]
        raw_map = {c["id"]: c for c in raw}
        cut = max(0, len(raw_map) - MAX_RAW_PER_CHECKPOINT)  # the event stays under DESIGN.md §3's size limits
        if cut:
            raw_map = dict(list(raw_map.items())[:MAX_RAW_PER_CHECKPOINT])
        if len(raw_map) > _SLIM_OVER:
            raw_map = {k: _slim(v, text=True) for k, v in raw_map.items()}
        pool = dict(raw_map)
        for child in children:
            if child in self.nodes:
                pool.update(self.nodes[child].pool)
        skip = set(exclude_referents)
        referents = [a for a in mentioned_artifacts(text, self.identifiers) if a not in skip] if text else []
        self.nodes[node_id] = _Node(pool=pool, carried=dict(carried), text=text)
        body: dict[str, Any] = {
            "node_id": node_id,
            "level": "section" if children else "leaf",
            "parent_id": self.root_id,
            "children": sorted(set(children)),
            "referents": referents,
            "negative_constraints": _listed([carried[k] for k in pool if k in carried]),
            "raw_negative_constraints": list(raw_map.values()),
            "text": text,
        }
        if cut:
            body["x_constraints_not_listed"] = cut  # a warning of the adapter says so too
        if text is not None and len(text) > MAX_TEXT_CHARS:  # keep the event under the 1 MiB limit
            body["text"] = text[:MAX_TEXT_CHARS]
            body["x_text_truncated"] = True
        if text is None:
            body["opaque"] = True
            body["x_opaque_reason"] = opaque_reason or "summary text not available"
        if extra:
            body.update(extra)
        return self._event(where, at, body)

    def root(
        self,
        where: str,
        at: str | None,
        *,
        children: Iterable[str],
        kept: Iterable[dict[str, Any]],
        raw: Iterable[dict[str, Any]],
    ) -> dict[str, Any] | None:
        """(Re-)emit the synthetic root ``root:<context>`` if it changed.

        ``children``: the summaries currently in view. ``raw``: wire objects of the
        always-kept channel's prohibitions (system prompt, rule files). Carried: ``kept``
        (that channel as it is in view now) plus every prohibition the root requires —
        those under any summary it ever showed (the engine's ledger keeps them required)
        — that the judgement of a summary in view says it carries: the root *is* the view.
        Returns the event, or None when unchanged.
        """
        children = sorted({bounded_id(c) for c in children})
        for child in children:
            if child in self.nodes:
                self._root_pool.update(self.nodes[child].pool)
        carried: dict[str, dict[str, Any]] = {c["id"]: c for c in kept}
        for child in children:
            node = self.nodes.get(child)
            if node is not None:
                carried.update((k, v) for k, v in node.carried.items() if k in self._root_pool and k not in carried)
        raw_map = {c["id"]: c for c in raw}
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
                "negative_constraints": _listed([carried[k] for k in sorted(carried)]),
                "raw_negative_constraints": _listed([raw_map[k] for k in sorted(raw_map)]),
            },
        )


#: At most this many prohibitions are listed as raw in one checkpoint (a message of thousands of rules would make an
#: event over the 1 MiB / 10,000-entry limits of DESIGN.md §3, and a dead-lettered checkpoint loses every alert).
MAX_RAW_PER_CHECKPOINT = 1_000
#: Longer lists are written with short constraint objects (id, a 200-character text or none, the cue).
_SLIM_OVER = 200
_MAX_LISTED = 5_000


def _slim(obj: dict[str, Any], *, text: bool = False) -> dict[str, Any]:
    keep = {"id": obj["id"], **({"x_cue": obj["x_cue"]} if "x_cue" in obj else {})}
    if text and "text" in obj:
        keep["text"] = obj["text"][:200]
    return keep


def _listed(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A constraint list that keeps its event under the size limits: short objects past :data:`_SLIM_OVER`."""
    if len(objs) <= _SLIM_OVER:
        return objs
    return [_slim(o) for o in objs[:_MAX_LISTED]]


# --------------------------------------------------------------------------- judging


#: Constraint texts on the wire stay far under DESIGN.md §3's 4,096 characters.
MAX_CONSTRAINT_TEXT = 1_000
_QUOTE_CHARS = 200


class JudgedContext:
    """The user-side texts of one context (:class:`~stream.adapters.compaction.judge.Candidate`) and its judgements.

    The adapter adds each candidate (:meth:`add`) with the holder (the raw item) that
    shows it, and calls :meth:`judge` once per compaction with the holders the
    summary covers. It returns what the checkpoint needs: ``raw`` (wire objects of the
    instructions in force whose candidate is covered), ``carried`` (id -> wire object:
    carried by the summary's judgement, or discharged — required by an earlier
    checkpoint but no longer in force, e.g. revoked) and ``extra`` (the ``x_`` fields:
    ``x_judge``, ``x_model``, ``x_not_carried`` with each dropped id's cue and reason,
    ``x_skipped_languages``). ``always_kept`` gives the rule-file / system-prompt
    instructions of the latest judgement (the root's channel).
    """

    def __init__(self, judge: Judge) -> None:
        self.judge_impl = judge
        self.candidates: list[Candidate] = []
        self._by_id: dict[str, Candidate] = {}
        self._holder: dict[str, str] = {}  # candidate id -> holder
        self.summaries: list[str] = []  # texts of the summaries judged so far, oldest first
        self.required: dict[str, dict[str, Any]] = {}  # every instruction ever emitted as raw
        self.last: Judgement | None = None
        self.skipped_languages: Counter[str] = Counter()  # candidates the judge could not read, by language
        self._unread: set[tuple[str, str]] = set()
        self.usage: list[Usage] = []
        self._always_kept_texts: set[str] = set()

    def add(self, candidate: Candidate, holder: str) -> None:
        if candidate.id in self._by_id or not candidate.text.strip():
            return
        if candidate.channel in ("rule_file", "system"):  # re-injected: the same text is the same candidate
            if candidate.text in self._always_kept_texts:
                return
            self._always_kept_texts.add(candidate.text)
        self._by_id[candidate.id] = candidate
        self._holder[candidate.id] = holder
        self.candidates.append(candidate)

    def judge(
        self, summary: str | None, covered: Iterable[str]
    ) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]], dict[str, Any]]:
        covered = set(covered)
        j = self.judge_impl.judge(tuple(self.candidates), summary, tuple(self.summaries))
        self.last = j
        self.usage.append(j.usage)
        for cid, lang in getattr(j, "unread", ()):
            if (cid, lang) not in self._unread:
                self._unread.add((cid, lang))
                self.skipped_languages[lang] += 1
        if summary is not None:
            self.summaries.append(summary)
        in_force = {i.id: i for i in j.in_force}
        raw = []
        for i in j.in_force:
            c = self._by_id.get(i.candidate_id)
            if c is not None and self._holder.get(c.id) in covered and c.channel not in ("rule_file", "system"):
                wire = self.wire(i)
                raw.append(wire)
                self.required.setdefault(i.id, wire)
        carried: dict[str, dict[str, Any]] = {}
        not_carried = []
        for carry in j.carries:
            inst = in_force.get(carry.instruction_id)
            if inst is None:
                continue
            c = self._by_id.get(inst.candidate_id)
            if carry.carried:
                carried[inst.id] = self.wire(inst, carry)
            elif c is None or c.channel not in ("rule_file", "system"):  # those are the root's (kept channel)
                not_carried.append(_x({"id": inst.id, "cue": carry.cue, "reason": carry.reason}))
        for k, wire in self.required.items():
            if k not in in_force:  # required by an earlier checkpoint, no longer in force (revoked)
                carried[k] = {**wire, "x_cue": "not-in-force"}
        extra: dict[str, Any] = {"x_judge": j.judge}
        if j.model:
            extra["x_model"] = j.model
        if not_carried:
            extra["x_not_carried"] = not_carried[:_SLIM_OVER]
        if j.skipped_languages:
            extra["x_skipped_languages"] = list(j.skipped_languages)
        return raw, carried, extra

    def always_kept(self, channel: str) -> list[tuple[Candidate, dict[str, Any]]]:
        """(candidate, wire object) of the latest judgement's instructions read from ``channel``."""
        if self.last is None:
            return []
        out = []
        for i in self.last.in_force:
            c = self._by_id.get(i.candidate_id)
            if c is not None and c.channel == channel:
                out.append((c, self.wire(i)))
        return out

    def wire(self, i: Instruction, carry: Carry | None = None) -> dict[str, Any]:
        """The constraint object of an instruction (DESIGN.md §3; ``x_`` fields informational)."""
        c = self._by_id.get(i.candidate_id)
        text = i.text if len(i.text) <= MAX_CONSTRAINT_TEXT else i.text[: MAX_CONSTRAINT_TEXT - 1] + "…"
        wire: dict[str, Any] = {
            "id": i.id,
            "text": text,
            "source": SOURCE_OF_CHANNEL.get(c.channel, "user") if c else "user",
            "form": i.form,
        }
        if c is not None and c.origin is not None:
            wire[c.origin[0]] = c.origin[1]
        if c is not None:
            wire["x_channel"] = c.channel
        if carry is None:
            wire.update(_x({"x_cue": i.cue, "x_reason": i.reason}))
        else:
            quote = carry.quote[:_QUOTE_CHARS] if carry.quote else None
            wire.update(_x({"x_cue": carry.cue, "x_reason": carry.reason, "x_quote": quote}))
        return wire


def as_judge(judge: Judge | ProhibitionMatcher | None) -> Judge:
    """:func:`stream.adapters.compaction.judge_rules.as_judge`, imported when first needed (a hook call that
    judges nothing does not load the rules)."""
    from stream.adapters.compaction.judge_rules import as_judge as resolve

    return resolve(judge)


class LogContext:
    """One context of a compaction log, as every adapter keeps it: its judge, its events (:attr:`out`),
    its judged texts (:attr:`judged`) and the keys of the records already read (:attr:`seen`)."""

    def __init__(self, context_id: str, judge: Judge | ProhibitionMatcher | None = None) -> None:
        self.judge = as_judge(judge)
        self.out = ContextEvents(context_id)
        self.judged = JudgedContext(self.judge)
        self.seen: set[str] = set()

    def summary_node(self, stats: ReadStats, node_id: str, where: str, at: str | None, **kw: Any) -> dict[str, Any]:
        """:meth:`ContextEvents.summary_node`, and a warning in ``stats`` when it lists fewer prohibitions
        than are in force."""
        event = self.out.summary_node(node_id, where, at, **kw)
        if event.get("x_constraints_not_listed"):
            stats.warn(f"summary {node_id}: {event['x_constraints_not_listed']} more prohibitions than a checkpoint "
                       f"lists (the first {MAX_RAW_PER_CHECKPOINT} are required of it)")
        return event


def _x(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


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
