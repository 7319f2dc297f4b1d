"""Claude Code session transcripts -> the two input streams.

Input: transcripts ``~/.claude/projects/<project>/<sessionId>.jsonl`` (one JSON record
per line, append-only), or directories holding them. Output: the events of DESIGN.md
§3 under the format notes' conventions (``docs/COMPACTION_LOGS.md``, "Claude Code"):

More (the module notes): docs/COMPACTION_LOGS.md, section ``stream/adapters/compaction/claude_code.py``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stream.adapters.common import as_dict, as_list, json_error, json_value_problem
from stream.adapters.compaction import compaction_logs as logs
from stream.adapters.compaction.compaction_logs import LogContext, ReadStats
from stream.adapters.compaction.judge import Candidate, Judge
from stream.errors import json_type
from stream.lines import Oversize, read_lines

if TYPE_CHECKING:
    from stream.adapters.compaction.prohibitions import ProhibitionMatcher

#: A queued item the harness wrote, not the user: ``<task-notification>`` (a background agent or shell finished).
_NOTIFICATION = re.compile(r"\s*<[a-z]+-notification\b", re.IGNORECASE)


#: Record types known to carry nothing for the rules (counted as ignored, not unknown).
IGNORED_TYPES = frozenset({
    "summary", "file-history-snapshot", "progress", "custom-title", "ai-title", "pr-link", "tag", "last-prompt",
    "agent-name", "agent-color", "mode", "permission-mode", "cost-state", "agent_metadata",
})
_INPUT_PATH_KEYS = ("file_path", "path", "notebook_path")
_REJECTED = "The user doesn't want to proceed with this tool use."
_CLARIFY = "The user wants to clarify these questions."
_RECOMMENDED = re.compile(r"\s*\(recommended\)", re.IGNORECASE)
#: The user's words after a rejection: "... the user said:\n<words>" or (2.1.7x) "... the following reason for the
#: rejection:  <words>".
_FEEDBACK = re.compile(r"(?:the user said:|the following reason for the rejection:)\s*\n?(.*)\Z", re.DOTALL)
_TRANSCRIPT_PATH = re.compile(r"read the full transcript at:\s*(\S+?\.jsonl)\b")
_PLAN = re.compile(r"^\s*Implement the following plan:", re.IGNORECASE)


def discover(paths: list[str | Path]) -> tuple[list[Path], list[str]]:
    """Transcripts under ``paths`` (files, or directories searched for ``*.jsonl``), sorted.

    Returns the files and one-line errors for paths that do not exist or hold none.
    """
    found: dict[str, Path] = {}
    errors: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_file():
            found.setdefault(path.as_posix(), path)
        elif path.is_dir():
            files = sorted(f for f in path.glob("*.jsonl") if f.is_file())
            if not files:
                errors.append(f"{path}: no *.jsonl transcript in this directory")
            for f in files:
                found.setdefault(f.as_posix(), f)
        elif path.exists():  # a device, a socket, a FIFO: nothing to read transcripts from
            errors.append(f"{path}: not a regular file or directory")
        else:
            errors.append(f"{path}: no such file or directory")
    return [found[k] for k in sorted(found)], errors


def record_key(rec: dict[str, Any], occurrence: int = 0) -> str:
    """A record's native identity: its ``uuid``, else a hash of its content (queue operations, snapshots,
    ``permission-mode`` / ``mode`` records) and ``occurrence``: the how-manieth record of that content in its file
    (newer versions write the same ``permission-mode`` record at every turn: repeats in one file are records of
    their own, while a second copy of the file repeats the same keys)."""
    uuid = rec.get("uuid")
    if isinstance(uuid, str) and uuid:
        return f"uuid:{uuid}"
    return f"sha:{content_hash(rec)}" + (f"#{occurrence}" if occurrence else "")


def content_hash(rec: dict[str, Any]) -> str:
    canonical = json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


#: A transcript record longer than this is skipped (one error line), held to this size at most while it is read: a
#: record is one message or tool result, and Claude Code keeps big outputs in files of their own.
MAX_RECORD_BYTES = 64 << 20


def decode_line(line: bytes) -> tuple[list[Any], json.JSONDecodeError | None]:
    """The JSON values of one line — usually one; several when records were glued together —
    and the error that stopped decoding the rest of the line, if any.

    Raises ``UnicodeDecodeError`` when the line is not UTF-8.
    """
    text = line.decode("utf-8")
    decoder = json.JSONDecoder()
    out: list[Any] = []
    pos = 0
    n = len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return out, None
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            return out, exc
        out.append(value)


class ClaudeCodeSession(LogContext):
    """One session's records (from one or more transcripts) -> the events of its context."""

    def __init__(self, session_id: str, judge: Judge | ProhibitionMatcher | None = None) -> None:
        super().__init__(f"cc:{session_id}", judge)
        self._uuids: list[str] = []  # file order
        self._uuid_pos: dict[str, int] = {}
        self._boundary: tuple[dict[str, Any], str, str | None] | None = None
        self._summary: str | None = None  # the summary node in view
        self._rules: dict[str, dict[str, Any]] = {}  # every rule-file prohibition judged (wire objects)
        self._rules_in_view: set[str] = set()  # texts of the rule files re-injected since the last boundary
        self._root_dirty = False
        self._queued: list[tuple[str, str, int]] = []  # (record key, text, line) waiting in the queue
        self._inherited: list[
            str
        ] = []  # holders of a continued session's quoted messages, covered by the next compaction
        self._summary_line = 0

    @property
    def context_id(self) -> str:
        return self.out.context_id

    def drain(self) -> list[dict[str, Any]]:
        return self.out.drain()

    # ---- records

    def record(self, rec: dict[str, Any], file: ClaudeCodeTranscript, lineno: int) -> None:
        key = record_key(rec, file.occurrence(rec))
        if key in self.seen:
            file.stats.repeated += 1
            self.out.also_held_by(key, file.holder, None)
            return
        self.seen.add(key)
        stats = file.stats
        rtype = rec.get("type")
        at = logs.rfc3339_or_none(rec.get("timestamp"))
        uuid = rec.get("uuid") if isinstance(rec.get("uuid"), str) and rec.get("uuid") else None
        self._check_links(rec, stats)
        if uuid is not None and uuid not in self._uuid_pos:
            self._uuid_pos[uuid] = len(self._uuids)
            self._uuids.append(uuid)
        if rtype == "user" and rec.get("isCompactSummary") is True:
            self._compact_summary(rec, key, uuid, file, lineno, at)
            return
        if rtype == "system" and rec.get("subtype") == "compact_boundary":
            self._finish_boundary("no summary record after the compact boundary", stats)
            self._boundary = (rec, key, at)
            return
        if rtype in ("user", "assistant"):
            self._finish_boundary("no summary record after the compact boundary", stats)
            self._flush_root(key)
            if uuid is None:
                stats.error(f"{file.path}:{lineno}: {rtype} record has no 'uuid'; skipped")
                return
            self._message(rec, rtype, uuid, key, file, lineno, at)
        elif rtype == "attachment":
            self._attachment(rec, key, file, lineno, at)
        elif rtype == "queue-operation":
            self._queue(rec, key, file, lineno, at)
        elif rtype == "system" and rec.get("subtype") == "microcompact_boundary":
            self._microcompact(rec, key, at)
        elif rtype == "system":
            stats.ignored[f"system:{rec.get('subtype')}"] += 1
        elif isinstance(rtype, str) and rtype in IGNORED_TYPES:
            stats.ignored[rtype] += 1
        else:
            stats.unknown[rtype if isinstance(rtype, str) else f"<{type(rtype).__name__}>"] += 1

    def _check_links(self, rec: dict[str, Any], stats: ReadStats) -> None:
        for k in ("parentUuid", "logicalParentUuid"):
            v = rec.get(k)
            if isinstance(v, str) and v and v not in self._uuid_pos:
                stats.broken_links += 1

    def _message(self, rec: dict[str, Any], rtype: str, uuid: str, key: str, file: ClaudeCodeTranscript,
                 lineno: int, at: str | None) -> None:
        holder = f"ev:{uuid}"
        self.out.hold(holder, "raw_span", key, at, live=holder, durable=file.holder, names=[uuid])
        msg = as_dict(rec.get("message"))
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        if rtype == "user":
            n = 0

            def candidate(text: str, channel: str, question: str | None = None) -> None:
                nonlocal n
                self.judged.add(Candidate(f"{key}#{n}", text, channel, at, ("line", lineno), question), holder)
                n += 1

            if not rec.get("isMeta") and rec.get("isSidechain") is not True:  # a sidechain's "user" is the agent
                texts = (
                    [content]
                    if isinstance(content, str)
                    else [
                        b["text"]
                        for b in blocks
                        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                    ]
                )
                text = "\n".join(texts)
                plan = isinstance(rec.get("planContent"), str) or bool(_PLAN.match(text))
                candidate(text, "plan" if plan else ("command_args" if "<command-args>" in text else "typed"))
            for b in blocks:
                if not (isinstance(b, dict) and b.get("type") == "tool_result"):
                    continue
                if isinstance(b.get("tool_use_id"), str) and b["tool_use_id"]:
                    self.out.hold(f"call:{b['tool_use_id']}", "tool_output", key, at, live=holder,
                                  durable=file.holder, names=[b["tool_use_id"]])
                feedback = _rejection_feedback(b)
                if feedback:
                    candidate(feedback, "rejection")
            answers = _answers(rec.get("toolUseResult"))
            for b in blocks if not answers else ():  # older / other records: the answers only in the result's text
                if isinstance(b, dict) and b.get("type") == "tool_result":
                    answers += _answers_in_text("\n".join(logs.texts_of(b.get("content"))))
            for question, answer in answers:  # one utterance each: joined, a long answer ran into the next
                candidate(answer, "answer", question)
            for p in _strings(logs.find_values(rec.get("toolUseResult"), "filePath")):
                self._file(p, holder, key, file, at)
        else:
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                    for k in _INPUT_PATH_KEYS:
                        for p in _strings([b["input"].get(k)]):
                            self._file(p, holder, key, file, at)

    def _file(self, path: str, holder: str, key: str, file: ClaudeCodeTranscript, at: str | None) -> None:
        self.out.hold(f"file:{path}", "file", key, at, live=holder, durable=file.holder, names=logs.path_names(path))

    def _queue(self, rec: dict[str, Any], key: str, file: ClaudeCodeTranscript, lineno: int, at: str | None) -> None:
        op = rec.get("operation")
        if op == "enqueue" and isinstance(rec.get("content"), str):
            self._queued.append((key, rec["content"], lineno))
        elif op == "remove" and (self._queued or isinstance(rec.get("content"), str)):
            # handed to the model while it works: the oldest queued message, or the one the record names
            content = rec.get("content")
            at_queue = next((i for i, q in enumerate(self._queued) if q[1] == content), None)
            if at_queue is None and not isinstance(content, str):
                # a bare remove hands over a message the user typed; the harness's task notifications queued before it
                # leave by dequeue (a user record of their own)
                at_queue = next((i for i, q in enumerate(self._queued) if not _NOTIFICATION.match(q[1])), None)
            if at_queue is not None or not isinstance(content, str):
                qkey, text, qline = self._queued.pop(at_queue or 0)
            else:
                qkey, text, qline = key, content, lineno
            self._user_words(f"ev:queued:{qkey.split(':', 1)[1]}", qkey, text, file, qline, at)
        elif op == "dequeue" and self._queued:  # becomes a typed message, read there
            self._queued.pop(0)
        elif op == "popAll":
            self._queued.clear()
        else:
            file.stats.ignored[f"queue-operation:{op}"] += 1

    def _user_words(self, holder: str, key: str, text: str, file: ClaudeCodeTranscript, lineno: int,
                    at: str | None) -> None:
        """A message of the user's that reached the model outside a user record (a raw item of its own)."""
        self.out.hold(holder, "raw_span", key, at, live=holder, durable=file.holder)
        self.judged.add(Candidate(f"{key}#0", text, "queued", at, ("line", lineno)), holder)

    def _microcompact(self, rec: dict[str, Any], key: str, at: str | None) -> None:
        meta = as_dict(rec.get("microcompactMetadata"))
        ids = as_list(meta.get("compactedToolIds"))
        for tool_id in ids:
            if isinstance(tool_id, str) and tool_id:
                self.out.evict_live(f"call:{tool_id}", key, at)

    def _attachment(self, rec: dict[str, Any], key: str, file: ClaudeCodeTranscript, lineno: int,
                    at: str | None) -> None:
        att = as_dict(rec.get("attachment"))
        prompt = att.get("prompt")
        if att.get("type") == "queued_command" and isinstance(prompt, (str, list)):
            origin = as_dict(att.get("origin"))
            text = prompt if isinstance(prompt, str) else "\n".join(logs.texts_of(prompt))
            if (
                origin.get("kind", "human") == "human" and text.strip()
            ):  # a message the user typed while the agent worked
                self._user_words(f"ev:queued:{key.split(':', 1)[1]}", key, text, file, lineno, at)
                return
        if att.get("type") != "nested_memory":
            file.stats.ignored[f"attachment:{att.get('type')}"] += 1
            return
        text = "\n".join(logs.texts_of(att.get("content"), keys=("content", "text")))
        if text.strip():
            self.judged.add(Candidate(f"{key}#0", text, "rule_file", at, ("line", lineno)), f"rule:{key}")
            self._rules_in_view.add(text)
        self._root_dirty = True

    def _compact_summary(self, rec: dict[str, Any], key: str, uuid: str | None, file: ClaudeCodeTranscript,
                         lineno: int, at: str | None) -> None:
        # A dangling parentUuid was counted by _check_links; file order decides anyway.
        if self._boundary is None:
            file.stats.broken_links += 1  # a summary without its boundary: compact here anyway
            boundary: dict[str, Any] = {}
        else:
            boundary = self._boundary[0]
        self._boundary = None
        self._summary_line = lineno
        msg = as_dict(rec.get("message"))
        text = "\n".join(logs.texts_of(msg.get("content"))).strip() or None
        if text is not None:
            m = _TRANSCRIPT_PATH.search(text)
            if m:  # the recovery path the summary names: durable while the transcript exists
                self.out.hold(f"file:{m.group(1)}", "file", key, at, live=None, durable=file.holder, names=[m.group(1)])
        self._compact(boundary, uuid or key, text, "summary record has no text", key, at, file.stats)

    def _finish_boundary(self, reason: str, stats: ReadStats) -> None:
        if self._boundary is None:
            return
        boundary, b_key, b_at = self._boundary
        self._boundary = None
        uuid = boundary.get("uuid")
        node_id = uuid if isinstance(uuid, str) and uuid else b_key
        self._compact(boundary, node_id, None, reason, b_key, b_at, stats)

    @property
    def waiting_for_summary(self) -> bool:
        """A compact boundary was read and its summary not yet."""
        return self._boundary is not None

    def _compact(self, boundary: dict[str, Any], node_id: str, text: str | None, reason: str, key: str,
                 at: str | None, stats: ReadStats) -> None:
        preserved = self._preserved(boundary, stats)
        covered = [h for h in self.out.live_holders() if h.startswith("ev:") and h not in preserved]
        continued = self._summary is None and not covered and text is not None  # a file that starts with a compaction
        raw, carried, extra = self.judged.judge(text, covered + self._inherited)
        self._inherited = []
        for _, wire in self.judged.always_kept("rule_file"):
            self._rules.setdefault(wire["id"], wire)
        self.summary_node(
            stats, node_id, key, at, children=[self._summary] if self._summary else [], raw=raw,
            carried=carried, text=text, extra=extra, opaque_reason=reason,
        )
        for h in covered:
            self.out.release_live(h, key, at)
        self._summary = node_id
        if continued and text is not None:
            # A continued session: the user's words of the earlier one reach the agent only as the summary's quotes.
            holder = f"inherited:{node_id}"
            for n, (quoted, _line) in enumerate(_quoted_user_messages(text)):
                self.judged.add(Candidate(f"{key}#q{n}", quoted, "typed", at, ("line", self._summary_line)), holder)
            self._inherited = [holder]
        if not getattr(getattr(self.judge, "level", None), "rule_files_kept", False):
            self._rules_in_view = set()  # rule files must be re-injected after the boundary to be in view
        self._root_dirty = True

    def _preserved(self, boundary: dict[str, Any], stats: ReadStats) -> set[str]:
        """Holders the compaction keeps in view: ``preservedSegment`` (``headUuid`` .. ``tailUuid`` in file order)
        and, in newer versions, ``preservedMessages`` (``uuids`` / ``allUuids``: the records kept verbatim)."""
        meta = boundary.get("compactMetadata", {}) if isinstance(boundary.get("compactMetadata"), dict) else {}
        kept: set[str] = set()
        listed = as_dict(meta.get("preservedMessages"))
        for k in ("uuids", "allUuids"):
            ids = as_list(listed.get(k))
            kept.update(f"ev:{u}" for u in ids if isinstance(u, str) and u)
        seg = as_dict(meta.get("preservedSegment"))
        head, tail = seg.get("headUuid"), seg.get("tailUuid")
        if not head and not tail:
            return kept
        if head not in self._uuid_pos or tail not in self._uuid_pos:
            stats.broken_links += 1  # e.g. a tailUuid that is no message: nothing more is taken as preserved
            return kept
        lo, hi = sorted((self._uuid_pos[head], self._uuid_pos[tail]))
        return kept | {f"ev:{u}" for u in self._uuids[lo : hi + 1]}

    def _flush_root(self, key: str) -> None:
        if not self._root_dirty or self._boundary is not None:
            return
        self._root_dirty = False
        kept = [wire for c, wire in self.judged.always_kept("rule_file") if c.text in self._rules_in_view]
        self.out.root(key, None, children=[self._summary] if self._summary else [], kept=kept, raw=self._rules.values())

    def file_deleted(self, file: ClaudeCodeTranscript) -> None:
        """``--follow`` saw ``file`` disappear: what only it held leaves ``durable``."""
        self.out.release_durable(file.holder, f"deleted:{file.path.name}", None)


class ClaudeCodeTranscript:
    """Incremental reader of one transcript file: :meth:`poll` feeds new lines to their session.

    ``final=True`` (after the fact): the last line may lack its ``\\n``. ``final=False``
    (following): only complete lines are read. The context is known once a record
    carrying a ``sessionId`` has been read (:attr:`session`).
    """

    def __init__(self, path: str | Path, judge: Judge | ProhibitionMatcher | None = None,
                 sessions: dict[str, ClaudeCodeSession] | None = None) -> None:
        self.path = Path(path)
        self.judge = logs.as_judge(judge)
        self.stats = ReadStats(source=str(self.path))
        self.sessions = sessions if sessions is not None else {}
        self.session: ClaudeCodeSession | None = None
        self.holder = f"transcript:{self.path.as_posix()}"
        self.finished = False
        self._offset = 0
        self._lineno = 0
        self._started = False
        self._early: list[tuple[dict[str, Any], int]] = []  # records before the first sessionId
        self._seen_content: Counter[str] = Counter()  # uuid-less records of this file, by content hash

    def occurrence(self, rec: dict[str, Any]) -> int:
        """How many records of ``rec``'s content (without a uuid) this file held before it."""
        uuid = rec.get("uuid")
        if isinstance(uuid, str) and uuid:
            return 0
        digest = content_hash(rec)
        n = self._seen_content[digest]
        self._seen_content[digest] += 1
        return n

    @property
    def context_id(self) -> str | None:
        return self.session.context_id if self.session else None

    @property
    def offset(self) -> int:
        """Bytes of the file read so far: a line boundary after ``poll(final=False)`` (the hook's cursor)."""
        return self._offset

    def poll(self, *, final: bool = True) -> list[dict[str, Any]]:
        """New events of this file's session since the last poll."""
        if self.finished:
            return []
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                lines, consumed, tail = read_lines(fh, MAX_RECORD_BYTES, final=final, bom=not self._offset)
        except FileNotFoundError:
            if not final and self._started:  # deleted while followed: that durable copy is gone
                if self.session is not None:
                    self.session.file_deleted(self)
                self.finished = True
            elif final:
                self.stats.failed = True
                self.stats.error(f"{self.path}: no such file")
                self.finished = True
            return self._drain()
        except OSError as exc:
            self.stats.failed = final
            self.stats.error(f"{self.path}: cannot read: {exc.strerror or exc}")
            self.finished = final
            return self._drain()
        self._started = True
        self._offset += consumed  # a line still being written (``tail`` bytes) is read at the next poll
        for line in lines:
            self._lineno += 1
            if isinstance(line, Oversize):  # over the limit: skipped, none of it kept
                self.stats.records += 1
                self.stats.error(f"{self.path}:{self._lineno}: a record of {line.size:,} bytes, over the "
                                 f"{MAX_RECORD_BYTES:,}-byte limit; skipped")
                continue
            if line.strip():
                self._line(line)
        if final:
            if self.session is not None and self.session.waiting_for_summary:
                self.stats.warn(f"{self.path}: ends on a compact boundary without its summary (nothing emitted for "
                                "it yet; read the transcript again once the summary is written)")
            self.finished = True
        return self._drain()

    def _drain(self) -> list[dict[str, Any]]:
        return self.session.drain() if self.session is not None else []

    def _line(self, line: bytes) -> None:
        try:
            values, bad = decode_line(line)
        except UnicodeDecodeError as exc:
            self.stats.records += 1
            self.stats.error(f"{self.path}:{self._lineno}: not UTF-8 (byte {exc.start})")
            return
        except RecursionError:
            self.stats.records += 1
            self.stats.error(f"{self.path}:{self._lineno}: not valid JSON: nested too deeply")
            return
        except ValueError as exc:  # an integer over Python's digit limit: this line is lost, the file goes on
            self.stats.records += 1
            self.stats.error(f"{self.path}:{self._lineno}: {json_value_problem(exc)}")
            return
        if bad is not None:  # what follows the records read (if any) is lost, and said so
            self.stats.records += 1
            after = f" after {len(values)} record(s)" if values else ""
            self.stats.error(f"{self.path}:{self._lineno}: not valid JSON{after}: {json_error(bad, line=False)}")
        if len(values) > 1:
            self.stats.warn(f"{self.path}:{self._lineno}: {len(values)} JSON records glued on one line "
                            "(a record written without its newline); each read")
        for rec in values:
            self.stats.records += 1
            if not isinstance(rec, dict):
                self.stats.error(
                    f"{self.path}:{self._lineno}: a record must be a JSON object, got {json_type(rec)}"
                )
                continue
            self._record(rec, self._lineno)

    def _record(self, rec: dict[str, Any], lineno: int) -> None:
        if self.session is None:
            sid = rec.get("sessionId")
            if not (isinstance(sid, str) and sid):
                self._early.append((rec, lineno))  # e.g. title records before the first message
                return
            self.session = self.sessions.get(sid)
            if self.session is None:
                self.session = self.sessions[sid] = ClaudeCodeSession(sid, self.judge)
            early, self._early = self._early, []
            for r, n in early:
                self.session.record(r, self, n)
        self.session.record(rec, self, lineno)


def _answers(result: Any) -> list[tuple[str, str]]:
    """``(question, answer)`` of an AskUserQuestion: typed, or an option picked (the user's decision, agent's words)."""
    if not isinstance(result, dict) or not isinstance(result.get("answers"), dict):
        return []
    return [
        (str(q), _RECOMMENDED.sub("", a).strip())
        for q, a in result["answers"].items()
        if isinstance(a, str) and a.strip()
    ]


#: How AskUserQuestion results open, across versions.
_ANSWERED = re.compile(
    r"(?:User has answered your questions?|Your questions? (?:has|have) been answered|The user answered)\s*:\s*",
    re.IGNORECASE,
)
_PAIR = re.compile(r'"(.+?)"\s*=\s*"(.*?)"(?=\s*,\s*"|\s*\.\s|\s*\.?\s*$|\s*user notes:)', re.DOTALL)
_NOTES = re.compile(r"user notes:\s*(.+?)(?:\s*\.?\s*(?:You can now continue|$))", re.IGNORECASE | re.DOTALL)


def _answers_in_text(text: str) -> list[tuple[str, str]]:
    """``(question, answer)`` pairs of an AskUserQuestion result as written in its text ('User has answered your
    questions: "Q"="A", ...', 'Your questions have been answered: ...', 'The user answered: ...'); free-text
    ``user notes: ...`` are an answer of their own."""
    m = _ANSWERED.search(text or "")
    if not m:
        return []
    body = text[m.end():]
    out = [(q.strip(), _RECOMMENDED.sub("", a).strip()) for q, a in _PAIR.findall(body) if a.strip()]
    for note in _NOTES.findall(body):
        if note.strip():
            out.append((out[-1][0] if out else "", note.strip().strip('"')))
    return out


def _rejection_feedback(block: dict[str, Any]) -> str | None:
    """The user's words of a rejected tool call ("... the user said:\\n<words>"), if any."""
    content = block.get("content")
    text = content if isinstance(content, str) else "\n".join(logs.texts_of(content))
    if _REJECTED not in text:
        return None
    m = _FEEDBACK.search(text)
    if not m or m.group(1).lstrip().startswith(_CLARIFY):  # boilerplate of a "clarify" answer, no words typed
        return None
    return m.group(1).strip()


_USER_MESSAGES = re.compile(
    r"^\s*(?:#+\s*|\d+\.\s*|\*\*)*all\s+(?:of\s+the\s+)?user(?:'s)?\s+messages\b.*$", re.I | re.M
)
_NEXT_SECTION = re.compile(r"^\s*(?:#+\s+|\d+\.\s+\S|\*\*\d+\.)", re.M)
_QUOTE = re.compile(r'"([^"\n]{3,})"|“([^”\n]{3,})”')


def _quoted_user_messages(summary: str) -> list[tuple[str, int]]:
    """The user's messages a summary's "All user messages" section quotes: ``(text, item index)``."""
    m = _USER_MESSAGES.search(summary)
    if not m:
        return []
    rest = summary[m.end():]
    end = _NEXT_SECTION.search(rest)
    out = []
    for k, item in enumerate(re.split(r"\n\s*[-*•]\s+", "\n" + (rest[: end.start()] if end else rest))):
        quotes = [a or b for a, b in _QUOTE.findall(item)]
        text = max(quotes, key=len) if quotes else ""
        if text.strip():
            out.append((text.strip(), k))
    return out


def _strings(values: list[Any]) -> list[str]:
    return [v.strip() for v in values if isinstance(v, str) and v.strip() and "\n" not in v]
