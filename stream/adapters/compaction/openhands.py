"""OpenHands conversations (software-agent-sdk event store) -> the two input streams.

Input: a conversation directory holding ``events/event-<index:05d>-<event id>.json``
(one JSON object per event, ``kind`` the discriminator) — the CLI layout
``<persistence_dir>/<conversation id>/events/`` or the agent-server layout
``<conversation id>/event_service/events/`` — or a directory holding several of them.
Output: the events of DESIGN.md §3 under the format notes' conventions
(``docs/COMPACTION_LOGS.md``, "OpenHands"):

More (the module notes): docs/COMPACTION_LOGS.md, section ``stream/adapters/compaction/openhands.py``.
"""

from __future__ import annotations

import json
import re
import uuid as uuidlib
from pathlib import Path
from typing import Any

from stream.adapters.common import as_dict, json_error, json_value_problem
from stream.adapters.compaction import compaction_logs as logs
from stream.adapters.compaction.compaction_logs import ContextEvents, LogContext, ReadStats
from stream.adapters.compaction.judge import Candidate, Judge
from stream.adapters.compaction.prohibitions import ProhibitionMatcher
from stream.errors import json_type

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
_AGENT_SERVER_DIR = "event_service"
#: The SDK's reason when the user rejects without saying why: not the user's words.
_DEFAULT_REJECTION = "User rejected the action."


def events_dir_of(path: Path) -> Path | None:
    """The directory holding ``events/`` for a conversation directory of either layout, else None."""
    if (path / "events").is_dir():
        return path
    if (path / _AGENT_SERVER_DIR / "events").is_dir():
        return path / _AGENT_SERVER_DIR
    return None


def conversation_id(path: Path) -> str:
    """The conversation id of a directory holding ``events/`` (see the module docstring)."""
    return _conversation_id(path)[0]


def _conversation_id(path: Path) -> tuple[str, str | None]:
    """(conversation id, a warning when a ``base_state.json`` is there but gives no id: the
    directory's name stands in, and a repaired file would make it another context)."""
    problem = None
    for candidate in (path / "base_state.json", path.parent / "base_state.json"):
        if not candidate.exists():
            continue
        try:
            state = json.loads(candidate.read_bytes().decode("utf-8-sig"))
        except (OSError, ValueError, RecursionError) as exc:
            problem = problem or f"{candidate}: {'not readable' if isinstance(exc, OSError) else 'not JSON'}"
            continue
        if isinstance(state, dict) and isinstance(state.get("id"), str) and state["id"].strip():
            return _canonical_id(state["id"].strip()), None
        problem = problem or f"{candidate}: no conversation \"id\" in it"
    name = path.parent.name if path.name == _AGENT_SERVER_DIR else path.name
    conv = _canonical_id(name)
    if problem:
        problem += f"; the context is named after the directory (oh:{conv})"
    return conv, problem


def _canonical_id(text: str) -> str:
    try:
        return uuidlib.UUID(text).hex
    except ValueError:
        return text


def discover(paths: list[str | Path]) -> tuple[list[Path], list[str]]:
    """Conversation directories under ``paths`` (each the directory holding ``events/``), sorted; and one-line errors.

    A path is a conversation directory (``events/`` inside, or ``event_service/events/``)
    or a directory whose sub-directories are conversations. Anything else is an error line.
    """
    found: dict[str, Path] = {}
    errors: list[str] = []
    for p in paths:
        path = Path(p)
        here = events_dir_of(path)
        if here is not None:
            found.setdefault(here.as_posix(), here)
        elif path.is_dir():
            subs = [d for d in (events_dir_of(c) for c in sorted(path.iterdir()) if c.is_dir()) if d is not None]
            if not subs:
                errors.append(
                    f"{path}: not an OpenHands conversation directory (no events/ inside, nor in its sub-directories)"
                )
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


class OpenHandsContext(LogContext):
    """One conversation's events (from one or more directories) -> the events of its context."""

    def __init__(self, conversation: str, judge: Judge | ProhibitionMatcher | None = None) -> None:
        super().__init__(f"oh:{conversation}", judge)
        self._paths_by_call: dict[str, list[str]] = {}
        self._known: set[str] = set()
        self._in_view: dict[str, None] = {}  # summary node ids in view, oldest first
        self._legacy = False  # summaries with random ids: only the latest is in view
        self._system: list[dict[str, Any]] = []  # the system prompt's prohibitions (wire objects), as last judged

    @property
    def context_id(self) -> str:
        return self.out.context_id

    def apply(self, ev: dict[str, Any], reader: OpenHandsConversation, name: str, index: int) -> None:
        key = f"ev:{ev['id']}"
        durable = f"file:{reader.events_dir.as_posix()}/events/{name}"
        if key in self.seen:
            reader.stats.repeated += 1
            self.out.also_held_by(key, durable, None)
            return
        self.seen.add(key)
        kind = ev["kind"]
        at = logs.rfc3339_or_none(ev.get("timestamp"), naive_as_utc=True, stats=reader.stats)
        if kind == "SystemPromptEvent":
            text = "\n".join(logs.texts_of(ev.get("system_prompt")))
            self.judged.add(Candidate(f"{key}#0", text, "system", at, ("event", index)), f"system:{key}")
        elif kind in RAW_KINDS:
            self._raw_item(ev, kind, key, durable, reader, index, at)
        elif kind == "Condensation":
            self._condensation(ev, key, reader, at)
        elif kind in IGNORED_KINDS:
            reader.stats.ignored[kind] += 1
        else:
            reader.stats.unknown[kind] += 1

    def _raw_item(self, ev: dict[str, Any], kind: str, key: str, durable: str | None, reader: OpenHandsConversation,
                  index: int, at: str | None) -> None:
        eid = ev["id"]
        holder = f"ev:{eid}"
        self._known.add(eid)
        self.out.hold(holder, "raw_span", key, at, live=holder, durable=durable, names=[eid])
        call_id = ev.get("tool_call_id") if isinstance(ev.get("tool_call_id"), str) and ev.get("tool_call_id") else None
        if kind == "MessageEvent":
            if ev.get("source") == "user":  # extended_content is context the SDK adds, not the user's words
                msg = as_dict(ev.get("llm_message"))
                self.judged.add(Candidate(f"{key}#0", "\n".join(logs.texts_of(msg.get("content"))), "typed", at,
                                          ("event", index)), holder)
            return
        if kind == "UserRejectObservation":
            reason = ev.get("rejection_reason")
            if isinstance(reason, str) and reason.strip() and reason.strip() != _DEFAULT_REJECTION:
                self.judged.add(Candidate(f"{key}#0", reason, "rejection", at, ("event", index)), holder)
        if kind == "ActionEvent":
            if call_id:
                self._paths_by_call[call_id] = _paths(ev.get("action"))
        elif call_id:  # an observation: the tool output, and the files it shows
            saved = _save_dir(ev)
            names = [call_id]
            if saved is not None:
                names.append(saved)
                resolved = Path(saved) if Path(saved).is_absolute() else reader.events_dir / saved
                durable = f"saved:{saved}"
                if resolved.is_dir():
                    reader.save_dirs[durable] = resolved
                else:
                    durable = None  # the full output's durable copy is already gone
            self.out.hold(f"call:{call_id}", "tool_output", key, at, live=holder, durable=durable, names=names)
            paths = self._paths_by_call.get(call_id, []) + _paths(ev.get("observation"))
            for p in dict.fromkeys(paths):
                self.out.hold(f"file:{p}", "file", key, at, live=holder, durable=durable, names=logs.path_names(p))

    def _condensation(self, ev: dict[str, Any], key: str, reader: OpenHandsConversation, at: str | None) -> None:
        forgotten = ev.get("forgotten_event_ids")
        if not isinstance(forgotten, list):
            forgotten = []
            reader.stats.error(
                f"{reader.events_dir}: Condensation {ev['id']} has no forgotten_event_ids list; treated as empty"
            )
        forgotten = [f for f in forgotten if isinstance(f, str) and f]
        summaries = [f for f in forgotten if f.endswith("-summary")]
        raws = [f for f in forgotten if not f.endswith("-summary") and f in self._known]
        unknown = [f for f in forgotten if not f.endswith("-summary") and f not in self._known]
        if unknown and self._in_view:
            # A pre-2026 log: the summary in view had a random id, which this condensation forgets.
            latest = next(reversed(self._in_view))
            if latest not in summaries:
                summaries.append(latest)
            self._legacy = True
            unknown = unknown[1:]
        reader.stats.broken_links += len(unknown)  # forgets an event this directory does not hold
        summary, offset = ev.get("summary"), ev.get("summary_offset")
        node_id = f"{ev['id']}-summary"
        node = not (summary is None and offset is None)  # both null: a pure eviction (no node)
        if node:
            text = summary if isinstance(summary, str) and summary.strip() else None
            reason = None
            if text is None:
                reason = "summary not recorded" if summary is None else (
                    "empty summary" if isinstance(summary, str) else f"summary is not text ({type(summary).__name__})"
                )
            raw, carried, extra = self.judged.judge(text, {f"ev:{f}" for f in raws})
            self._system = [wire for _, wire in self.judged.always_kept("system")]
            self.summary_node(
                reader.stats, node_id, key, at, children=summaries, raw=raw, carried=carried, text=text, extra=extra,
                opaque_reason=reason,
            )
        for f in raws:
            self.out.release_live(f"ev:{f}", key, at)
        for s in summaries:
            self._in_view.pop(s, None)
        if node:
            if self._legacy:
                self._in_view.clear()
            self._in_view[node_id] = None
        self._emit_root(key, at)

    def _emit_root(self, key: str, at: str | None) -> None:
        self.out.root(key, at, children=self._in_view, kept=self._system, raw=self._system)


class OpenHandsConversation:
    """Incremental reader of one conversation directory (the one holding ``events/``).

    :meth:`poll` reads the event files not read yet, in index order, and returns the new
    input events of its context; call it once (``final=True``) for a finished
    conversation, or repeatedly to follow a live one. :attr:`stats` says what was read.
    Directories of the same conversation share one :class:`OpenHandsContext` through
    ``contexts``.
    """

    def __init__(self, path: str | Path, judge: Judge | ProhibitionMatcher | None = None,
                 contexts: dict[str, OpenHandsContext] | None = None) -> None:
        self.path = Path(path)
        self.events_dir = events_dir_of(self.path) or self.path
        self.judge = logs.as_judge(judge)
        self.stats = ReadStats(source=str(self.path))
        conv, problem = _conversation_id(self.events_dir)
        if problem:
            self.stats.warn(problem)
        contexts = contexts if contexts is not None else {}
        context = contexts.get(conv)
        if context is None:
            context = contexts[conv] = OpenHandsContext(conv, self.judge)
        self.context = context
        self.finished = False
        self.save_dirs: dict[str, Path] = {}  # durable holder -> directory
        self._read: set[str] = set()
        self._waiting: dict[str, tuple[int, int]] = {}  # unparseable file -> (size, mtime_ns) last seen

    @property
    def context_id(self) -> str:
        return self.context.context_id

    @property
    def out(self) -> ContextEvents:
        return self.context.out

    def poll(self, *, final: bool = True) -> list[dict[str, Any]]:
        """New events since the last poll.

        ``final=False`` (following): an event file that does not parse yet may still be
        being written — it is retried on the next poll and reported only if it has not
        changed since; later files wait behind it (source order is kept).
        """
        if self.finished:
            return []
        if not self.events_dir.is_dir():
            if not final and self._read:
                for name in sorted(self._read):
                    self.out.release_durable(f"file:{self.events_dir.as_posix()}/events/{name}",
                                             f"deleted:{self.events_dir.name}", None)
                self.finished = True
            return self.out.drain()
        if not final:
            self._check_save_dirs()
        for f in _event_files(self.events_dir / "events"):
            if f.name in self._read:
                continue
            data = self._load(f, final)
            if data is _WAIT:
                break
            self._read.add(f.name)
            if data is not None:
                m = _EVENT_FILE.match(f.name)
                self.context.apply(data, self, f.name, int(m.group(1)) if m else -1)
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
        except (
            UnicodeDecodeError,
            ValueError,
            RecursionError,
        ) as exc:  # ValueError: also an integer over the digit limit
            sig = (st.st_size, st.st_mtime_ns)
            if not final and self._waiting.get(f.name) != sig:
                self._waiting[f.name] = sig
                return _WAIT
            self.stats.records += 1
            if isinstance(exc, json.JSONDecodeError):
                self.stats.error(f"{where}: not valid JSON: {json_error(exc)}")
            elif isinstance(exc, ValueError) and not isinstance(exc, UnicodeDecodeError):
                self.stats.error(f"{where}: {json_value_problem(exc)}")
            else:
                self.stats.error(f"{where}: not valid JSON: {type(exc).__name__}")
            return None
        self._waiting.pop(f.name, None)
        self.stats.records += 1
        if not isinstance(data, dict):
            self.stats.error(f"{where}: an event must be a JSON object, got {json_type(data)}")
            return None
        kind = data.get("kind")
        if not isinstance(kind, str) or not kind:
            self.stats.error(f"{where}: event has no 'kind'")
            return None
        if not isinstance(data.get("id"), str) or not data["id"]:
            self.stats.error(f"{where}: {kind} has no 'id'")
            return None
        return data

    def _check_save_dirs(self) -> None:
        for holder, d in list(self.save_dirs.items()):
            if not d.is_dir():
                del self.save_dirs[holder]
                self.out.release_durable(holder, f"deleted:{holder}", None)


_WAIT = object()


def _paths(value: Any) -> list[str]:
    out: list[str] = []
    for key in _PATH_KEYS:
        for v in logs.find_values(value, key):
            if isinstance(v, str) and v.strip() and "\n" not in v:
                out.append(v.strip())
    return out


def _save_dir(ev: dict[str, Any]) -> str | None:
    for v in logs.find_values(ev, "full_output_save_dir"):
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None
