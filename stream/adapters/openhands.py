"""OpenHands conversations (software-agent-sdk event store) -> the two input streams.

Input: a conversation directory ``<persistence_dir>/<conversation id>/`` holding
``events/event-<index:05d>-<event id>.json`` (one JSON object per event, ``kind`` the
discriminator), or a persistence directory holding several of them. Output: the events
of DESIGN.md §3 under the format notes' conventions (``shared/formats/COMPACTION_LOGS.md``,
"OpenHands"):

* ``context_id`` = ``oh:<conversation directory name>``;
* every ``ActionEvent`` / ``MessageEvent`` / observation (``ObservationEvent``,
  ``UserRejectObservation``, ``AgentErrorEvent``) -> ``ev:<event id>`` admitted
  ``live`` and ``durable`` (the event file is a durable log); an observation also
  admits ``call:<tool_call_id>`` and ``file:<path>`` for each path its action or
  observation names. Their durable copy is the event file — unless the observation
  names a ``full_output_save_dir``: then the event holds a clipped output and the
  durable copy is that directory (relative paths resolved against the conversation
  directory), admitted ``durable`` only if it exists;
* ``Condensation`` -> one checkpoint ``<condensation id>-summary`` (``leaf``, or
  ``section`` with the forgotten ``-summary`` ids as ``children``), emitted before the
  live evictions of the forgotten raw events (so an alert's trigger is the eviction
  that caused it). ``summary: null`` with ``summary_offset: null`` is a pure eviction
  (no node); a summary that is not a non-empty string, or ``null`` with an offset, is
  emitted as an opaque node (``text: null``, ``x_opaque: true``);
* ``raw_negative_constraints`` = prohibitions of the forgotten *user* messages;
  ``negative_constraints`` = those of the node's subtree its summary still states
  (:class:`~stream.adapters.compaction_logs.ProhibitionMatcher`);
* a synthetic root ``root:oh:<id>`` lists the summaries in view and carries the system
  prompt's prohibitions (``SystemPromptEvent``); it is re-emitted when that changes;
* in ``--follow``, a ``full_output_save_dir`` that disappears -> ``evicted durable`` of
  what it alone held; the conversation directory disappearing -> ``evicted durable``
  of everything.

Errors are per record: an event file that is not JSON, not an object, or lacks
``kind``/``id`` is reported (``ReadStats.errors``) and skipped; an unknown ``kind`` is
skipped and counted (``ReadStats.unknown``). Never fatal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from stream.adapters.compaction_logs import (
    ContextEvents,
    ProhibitionMatcher,
    ReadStats,
    find_values,
    path_names,
    rfc3339_or_none,
    texts_of,
)
from stream.adapters.trajectories import Constraint

_EVENT_FILE = re.compile(r"^event-(\d+)-.*\.json$")
#: Kinds that are raw items of the model's view (each admitted as ``ev:<id>``).
OBSERVATION_KINDS = frozenset({"ObservationEvent", "UserRejectObservation", "AgentErrorEvent"})
RAW_KINDS = frozenset({"ActionEvent", "MessageEvent"}) | OBSERVATION_KINDS
#: Kinds known to carry nothing for the rules (counted as ignored, not unknown).
IGNORED_KINDS = frozenset(
    {"PauseEvent", "ConversationStateUpdateEvent", "CondensationRequest", "CondensationSummaryEvent",
     "TokenEvent", "ConversationErrorEvent", "StreamingDeltaEvent"}
)
_PATH_KEYS = ("path", "file_path")


def is_conversation_dir(path: Path) -> bool:
    return (path / "events").is_dir()


def discover(paths: list[str | Path]) -> tuple[list[Path], list[str]]:
    """Conversation directories under ``paths``, sorted; and one-line errors.

    A path is a conversation directory (it has ``events/``) or a persistence directory
    whose sub-directories are conversations. Anything else is an error line.
    """
    found: dict[str, Path] = {}
    errors: list[str] = []
    for p in paths:
        path = Path(p)
        if is_conversation_dir(path):
            found.setdefault(path.as_posix(), path)
        elif path.is_dir():
            subs = [d for d in sorted(path.iterdir()) if d.is_dir() and is_conversation_dir(d)]
            if not subs:
                errors.append(f"{path}: not an OpenHands conversation directory (no events/ inside, nor in its sub-directories)")
            for d in subs:
                found.setdefault(d.as_posix(), d)
        elif path.exists():
            errors.append(f"{path}: not a directory (expected an OpenHands conversation directory)")
        else:
            errors.append(f"{path}: no such directory")
    return [found[k] for k in sorted(found)], errors


def _event_files(events_dir: Path) -> list[Path]:
    """``events/*.json`` in append order (the index in the name, then the name)."""
    def order(p: Path) -> tuple[int, str]:
        m = _EVENT_FILE.match(p.name)
        return (int(m.group(1)) if m else 1 << 62, p.name)

    try:
        return sorted((p for p in events_dir.iterdir() if p.suffix == ".json" and p.is_file()), key=order)
    except OSError:
        return []


class OpenHandsConversation:
    """Incremental reader of one conversation directory.

    :meth:`poll` reads the event files not read yet, in index order, and returns the new
    input events; call it once (``final=True``) for a finished conversation, or
    repeatedly to follow a live one. :attr:`stats` says what was read.
    """

    def __init__(self, path: str | Path, matcher: ProhibitionMatcher | None = None) -> None:
        self.path = Path(path)
        self.matcher = matcher or ProhibitionMatcher()
        self.stats = ReadStats(source=str(self.path))
        self.out = ContextEvents(f"oh:{self.path.name}")
        self.finished = False
        self._read: set[str] = set()
        self._waiting: dict[str, tuple[int, int]] = {}  # unparseable file -> (size, mtime_ns) last seen
        self._paths_by_call: dict[str, list[str]] = {}
        self._raw: dict[str, list[Constraint]] = {}  # ev holder -> prohibitions (user messages)
        self._known: set[str] = set()
        self._in_view: dict[str, None] = {}  # summary node ids in view
        self._system: list[Constraint] = []
        self._save_dirs: dict[str, Path] = {}  # durable holder -> directory

    @property
    def context_id(self) -> str:
        return self.out.context_id

    def poll(self, *, final: bool = True) -> list[dict[str, Any]]:
        """New events since the last poll.

        ``final=False`` (following): an event file that does not parse yet may still be
        being written — it is retried on the next poll and reported only if it has not
        changed since; later files wait behind it (source order is kept).
        """
        if self.finished:
            return []
        if not self.path.is_dir():
            if not final and self._read:
                self.out.release_all_durable(f"{self.path.name}/ (deleted)", None)
                self.finished = True
            return self.out.drain()
        if not final:
            self._check_save_dirs()
        for f in _event_files(self.path / "events"):
            if f.name in self._read:
                continue
            data = self._load(f, final)
            if data is _WAIT:
                break
            self._read.add(f.name)
            if data is not None:
                self._apply(data, f"events/{f.name}")
        if final:
            self.finished = True
        return self.out.drain()

    # ---- reading

    def _load(self, f: Path, final: bool) -> Any:
        where = str(f)
        try:
            raw = f.read_bytes()
            st = f.stat()
        except OSError as exc:
            self.stats.records += 1
            self.stats.error(f"{where}: cannot read: {exc.strerror or exc}")
            return None
        try:
            data = json.loads(raw.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
            sig = (st.st_size, st.st_mtime_ns)
            if not final and self._waiting.get(f.name) != sig:
                self._waiting[f.name] = sig
                return _WAIT
            self.stats.records += 1
            problem = f"{exc.msg} at line {exc.lineno} column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            self.stats.error(f"{where}: not valid JSON: {problem}")
            return None
        self._waiting.pop(f.name, None)
        self.stats.records += 1
        if not isinstance(data, dict):
            self.stats.error(f"{where}: an event must be a JSON object, got {type(data).__name__}")
            return None
        kind = data.get("kind")
        if not isinstance(kind, str) or not kind:
            self.stats.error(f"{where}: event has no 'kind'")
            return None
        if not isinstance(data.get("id"), str) or not data["id"]:
            self.stats.error(f"{where}: {kind} has no 'id'")
            return None
        return data

    def _apply(self, ev: dict[str, Any], where: str) -> None:
        kind = ev["kind"]
        at = rfc3339_or_none(ev.get("timestamp"))
        if kind == "SystemPromptEvent":
            self._system = self.matcher.prohibitions("\n".join(texts_of(ev.get("system_prompt"))))
            self._emit_root(where, at)
        elif kind in RAW_KINDS:
            self._raw_item(ev, kind, where, at)
        elif kind == "Condensation":
            self._condensation(ev, where, at)
        elif kind in IGNORED_KINDS:
            self.stats.ignored[kind] += 1
        else:
            self.stats.unknown[kind] += 1

    def _raw_item(self, ev: dict[str, Any], kind: str, where: str, at: str | None) -> None:
        eid = ev["id"]
        holder = f"ev:{eid}"
        self._known.add(eid)
        self.out.hold(holder, "raw_span", where, at, live=holder, durable=where, names=[eid])
        call_id = ev.get("tool_call_id") if isinstance(ev.get("tool_call_id"), str) and ev.get("tool_call_id") else None
        if kind == "MessageEvent":
            if ev.get("source") == "user":
                msg = ev.get("llm_message") if isinstance(ev.get("llm_message"), dict) else {}
                text = "\n".join(texts_of(msg.get("content")) + texts_of(ev.get("extended_content")))
                self._raw[holder] = self.matcher.prohibitions(text)
        elif kind == "ActionEvent":
            if call_id:
                self._paths_by_call[call_id] = _paths(ev.get("action"))
        elif call_id:  # an observation: the tool output, and the files it shows
            durable = where
            saved = _save_dir(ev)
            names = [call_id]
            if saved is not None:
                names.append(saved)
                resolved = Path(saved) if Path(saved).is_absolute() else self.path / saved
                durable = f"saved:{saved}"
                if resolved.is_dir():
                    self._save_dirs[durable] = resolved
                else:
                    durable = None  # the full output's durable copy is already gone
            self.out.hold(f"call:{call_id}", "tool_output", where, at, live=holder, durable=durable, names=names)
            paths = self._paths_by_call.get(call_id, []) + _paths(ev.get("observation"))
            for p in dict.fromkeys(paths):
                self.out.hold(f"file:{p}", "file", where, at, live=holder, durable=durable, names=path_names(p))

    def _condensation(self, ev: dict[str, Any], where: str, at: str | None) -> None:
        forgotten = ev.get("forgotten_event_ids")
        if not isinstance(forgotten, list):
            forgotten = []
            self.stats.error(f"{self.path / where}: Condensation has no forgotten_event_ids list; treated as empty")
        forgotten = [f for f in forgotten if isinstance(f, str) and f]
        summaries = [f for f in forgotten if f.endswith("-summary")]
        raws = [f for f in forgotten if not f.endswith("-summary")]
        summary, offset = ev.get("summary"), ev.get("summary_offset")
        node_id = f"{ev['id']}-summary"
        if summary is None and offset is None:
            node = False  # a pure eviction (format notes): no summary node
        else:
            node = True
        if node:
            raw: dict[str, Constraint] = {}
            for f in raws:
                for c in self._raw.get(f"ev:{f}", ()):
                    raw.setdefault(c.id, c)
            text = summary if isinstance(summary, str) and summary.strip() else None
            reason = None
            if text is None:
                reason = "summary not recorded" if summary is None else (
                    "empty summary" if isinstance(summary, str) else f"summary is not text ({type(summary).__name__})"
                )
            self.out.summary_node(
                node_id, where, at, children=summaries, raw=raw.values(), text=text,
                matcher=self.matcher, opaque_reason=reason,
            )
        for f in raws:
            if f not in self._known:
                self.stats.broken_links += 1  # forgets an event this directory does not hold
            self.out.release_live(f"ev:{f}", where, at)
        for s in summaries:
            self._in_view.pop(s, None)
        if node:
            self._in_view[node_id] = None
        self._emit_root(where, at)

    def _emit_root(self, where: str, at: str | None) -> None:
        self.out.root(where, at, children=self._in_view, kept=self._system, raw=self._system)

    def _check_save_dirs(self) -> None:
        for holder, d in list(self._save_dirs.items()):
            if not d.is_dir():
                del self._save_dirs[holder]
                self.out.release_durable(holder, f"{holder} (deleted)", None)


_WAIT = object()


def _paths(value: Any) -> list[str]:
    out: list[str] = []
    for key in _PATH_KEYS:
        for v in find_values(value, key):
            if isinstance(v, str) and v.strip() and "\n" not in v:
                out.append(v.strip())
    return out


def _save_dir(ev: dict[str, Any]) -> str | None:
    for v in find_values(ev, "full_output_save_dir"):
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None
