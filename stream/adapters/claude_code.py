"""Claude Code session transcripts (``~/.claude/projects/<project>/<sessionId>.jsonl``) -> events.

Input: one JSONL transcript per session (one record per line, append-only), or a
project directory holding several. Output: the events of DESIGN.md §3 under the format
notes' conventions (``shared/formats/COMPACTION_LOGS.md``, "Claude Code"):

* ``context_id`` = ``cc:<sessionId>`` (the file name's stem, which Claude Code sets to
  the session id);
* every ``user`` / ``assistant`` record -> ``ev:<uuid>`` admitted ``live`` and
  ``durable`` (the transcript is the durable log); a ``tool_result`` block ->
  ``call:<tool_use_id>``; a path in a ``tool_use`` input (``file_path``, ``path``,
  ``notebook_path``) or in ``toolUseResult`` (``filePath``) -> ``file:<path>``, held by
  the record that names it;
* a ``system`` record with ``subtype: "compact_boundary"`` followed by the
  ``isCompactSummary`` user record -> one checkpoint named by the summary's ``uuid``:
  ``leaf`` for the first compaction, ``section`` with the previous summary as its child
  after that. Covered = every record still in view except the boundary's
  ``preservedSegment`` (``headUuid`` .. ``tailUuid`` in file order); they are evicted
  from ``live`` right after the checkpoint. **Parent links are not trusted**: dangling
  ``parentUuid`` / ``logicalParentUuid`` and a ``tailUuid`` that is not a message are
  known defects, so coverage follows file order and broken links are only counted
  (``ReadStats.broken_links``);
* a boundary with no summary record after it (another record comes first, or the file
  ends) -> an opaque node named by the boundary's ``uuid`` (``text: null``,
  ``x_opaque: true``); a summary with no text likewise;
* ``raw_negative_constraints`` = prohibitions of the covered user messages (``isMeta``
  records excluded); ``negative_constraints`` = those of the subtree its text states;
* rule files injected as ``attachment`` records (``nested_memory``) are the always-kept
  channel: the synthetic root ``root:cc:<sessionId>`` lists the summary in view, has
  every rule-file prohibition seen as raw, and carries those re-injected since the last
  boundary (plus what the summary in view carries). Rule files are re-injected *after*
  the summary record, so the root is (re-)emitted only when the next ``user`` /
  ``assistant`` record arrives or the input ends — never in between, so following a
  live transcript gives the very events of reading it afterwards;
* in ``--follow``, the transcript (or its directory) disappearing -> ``evicted
  durable`` of everything (Claude Code deletes transcripts after ``cleanupPeriodDays``).

Errors are per line: a line that is not UTF-8 JSON or not an object is reported
(``ReadStats.errors``) and skipped; an unknown record ``type`` is skipped and counted
(``ReadStats.unknown``). Never fatal.
"""

from __future__ import annotations

import json
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

#: Record types known to carry nothing for the rules (counted as ignored, not unknown).
IGNORED_TYPES = frozenset({"summary", "file-history-snapshot", "queue-operation", "progress"})
_INPUT_PATH_KEYS = ("file_path", "path", "notebook_path")
TRANSCRIPT = "transcript"  # the durable holder of everything: the JSONL file itself


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
        else:
            errors.append(f"{path}: no such file or directory")
    return [found[k] for k in sorted(found)], errors


class ClaudeCodeTranscript:
    """Incremental reader of one transcript: :meth:`poll` returns the events of new lines.

    ``final=True`` (after the fact): the last line may lack its ``\\n`` and a boundary
    still waiting for its summary becomes an opaque node. ``final=False`` (following):
    only complete lines are read, and a boundary waits for its summary.
    """

    def __init__(self, path: str | Path, matcher: ProhibitionMatcher | None = None) -> None:
        self.path = Path(path)
        self.matcher = matcher or ProhibitionMatcher()
        self.stats = ReadStats(source=str(self.path))
        self.out = ContextEvents(f"cc:{self.path.stem}")
        self.finished = False
        self._offset = 0
        self._lineno = 0
        self._started = False
        self._uuids: list[str] = []  # file order
        self._uuid_pos: dict[str, int] = {}
        self._raw: dict[str, list[Constraint]] = {}  # ev holder -> prohibitions (user text)
        self._boundary: tuple[dict[str, Any], str, str | None] | None = None
        self._summary: str | None = None  # the summary node in view
        self._rules: dict[str, Constraint] = {}  # every rule-file prohibition seen
        self._rules_in_view: dict[str, Constraint] = {}
        self._root_dirty = False

    @property
    def context_id(self) -> str:
        return self.out.context_id

    def poll(self, *, final: bool = True) -> list[dict[str, Any]]:
        """New events since the last poll (see the class docstring for ``final``)."""
        if self.finished:
            return []
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._offset)
                chunk = fh.read()
        except FileNotFoundError:
            if not final and self._started:  # deleted while followed: the durable copy is gone
                self.out.release_all_durable(f"{self.path.name} (deleted)", None)
                self.finished = True
            elif final:
                self.stats.failed = True
                self.stats.error(f"{self.path}: no such file")
                self.finished = True
            return self.out.drain()
        except OSError as exc:
            self.stats.failed = final
            self.stats.error(f"{self.path}: cannot read: {exc.strerror or exc}")
            self.finished = final
            return self.out.drain()
        self._started = True
        lines = chunk.split(b"\n")
        tail = lines.pop()  # b"" after a final "\n", else a line still being written
        if final and tail:
            lines.append(tail)
            tail = b""
        self._offset += len(chunk) - len(tail)
        for line in lines:
            self._lineno += 1
            if self._lineno == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            if line.strip():
                self._line(line, f"{self.path.name}:{self._lineno}")
        if final:
            self._finish_boundary(f"{self.path.name}:{self._lineno}:end", None, "no summary record after the compact boundary")
            self._flush_root(f"{self.path.name}:{self._lineno}:end")
            self.finished = True
        return self.out.drain()

    # ---- records

    def _line(self, line: bytes, where: str) -> None:
        self.stats.records += 1
        try:
            rec = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            self.stats.error(f"{self.path}:{self._lineno}: not UTF-8 (byte {exc.start})")
            return
        except (json.JSONDecodeError, RecursionError) as exc:
            problem = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            self.stats.error(f"{self.path}:{self._lineno}: not valid JSON: {problem}")
            return
        if not isinstance(rec, dict):
            self.stats.error(f"{self.path}:{self._lineno}: a record must be a JSON object, got {type(rec).__name__}")
            return
        rtype = rec.get("type")
        at = rfc3339_or_none(rec.get("timestamp"))
        uuid = rec.get("uuid") if isinstance(rec.get("uuid"), str) and rec.get("uuid") else None
        self._check_links(rec)
        if uuid is not None and uuid not in self._uuid_pos:
            self._uuid_pos[uuid] = len(self._uuids)
            self._uuids.append(uuid)
        if rtype == "user" and rec.get("isCompactSummary") is True:
            self._compact_summary(rec, uuid, where, at)
            return
        if rtype == "system" and rec.get("subtype") == "compact_boundary":
            self._finish_boundary(where, at, "no summary record after the compact boundary")
            self._boundary = (rec, where, at)
            return
        if rtype in ("user", "assistant"):
            self._finish_boundary(where, at, "no summary record after the compact boundary")
            self._flush_root(where)
            if uuid is None:
                self.stats.error(f"{self.path}:{self._lineno}: {rtype} record has no 'uuid'; skipped")
                return
            self._message(rec, rtype, uuid, where, at)
        elif rtype == "attachment":
            self._attachment(rec, where)
        elif rtype == "system":
            self.stats.ignored[f"system:{rec.get('subtype')}"] += 1
        elif isinstance(rtype, str) and rtype in IGNORED_TYPES:
            self.stats.ignored[rtype] += 1
        else:
            self.stats.unknown[rtype if isinstance(rtype, str) else f"<{type(rtype).__name__}>"] += 1

    def _check_links(self, rec: dict[str, Any]) -> None:
        for key in ("parentUuid", "logicalParentUuid"):
            v = rec.get(key)
            if isinstance(v, str) and v and v not in self._uuid_pos:
                self.stats.broken_links += 1

    def _message(self, rec: dict[str, Any], rtype: str, uuid: str, where: str, at: str | None) -> None:
        holder = f"ev:{uuid}"
        self.out.hold(holder, "raw_span", where, at, live=holder, durable=TRANSCRIPT, names=[uuid])
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        content = msg.get("content")
        blocks = content if isinstance(content, list) else []
        if rtype == "user":
            if not rec.get("isMeta"):
                texts = [content] if isinstance(content, str) else [
                    b["text"] for b in blocks if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
                ]
                self._raw[holder] = self.matcher.prohibitions("\n".join(texts))
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str) and b["tool_use_id"]:
                    self.out.hold(f"call:{b['tool_use_id']}", "tool_output", where, at, live=holder, durable=TRANSCRIPT,
                                  names=[b["tool_use_id"]])
            for p in _strings(find_values(rec.get("toolUseResult"), "filePath")):
                self._file(p, holder, where, at)
        else:
            for b in blocks:
                if isinstance(b, dict) and b.get("type") == "tool_use" and isinstance(b.get("input"), dict):
                    for key in _INPUT_PATH_KEYS:
                        for p in _strings([b["input"].get(key)]):
                            self._file(p, holder, where, at)

    def _file(self, path: str, holder: str, where: str, at: str | None) -> None:
        self.out.hold(f"file:{path}", "file", where, at, live=holder, durable=TRANSCRIPT, names=path_names(path))

    def _attachment(self, rec: dict[str, Any], where: str) -> None:
        att = rec.get("attachment") if isinstance(rec.get("attachment"), dict) else {}
        if att.get("type") != "nested_memory":
            self.stats.ignored[f"attachment:{att.get('type')}"] += 1
            return
        text = "\n".join(texts_of(att.get("content"), keys=("content", "text")))
        for c in self.matcher.prohibitions(text):
            self._rules.setdefault(c.id, c)
            self._rules_in_view.setdefault(c.id, c)
        self._root_dirty = True

    def _compact_summary(self, rec: dict[str, Any], uuid: str | None, where: str, at: str | None) -> None:
        # A dangling parentUuid was counted by _check_links; file order decides anyway.
        if self._boundary is None:
            self.stats.broken_links += 1  # a summary without its boundary: compact here anyway
            boundary: dict[str, Any] = {}
        else:
            boundary = self._boundary[0]
        self._boundary = None
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else {}
        text = "\n".join(texts_of(msg.get("content"))).strip() or None
        node_id = uuid or f"{self.path.stem}:{self._lineno}"
        self._compact(boundary, node_id, text, "summary record has no text", where, at)

    def _finish_boundary(self, where: str, at: str | None, reason: str) -> None:
        if self._boundary is None:
            return
        boundary, b_where, b_at = self._boundary
        self._boundary = None
        node_id = boundary.get("uuid") if isinstance(boundary.get("uuid"), str) and boundary.get("uuid") else f"{self.path.stem}:{b_where}"
        self._compact(boundary, node_id, None, reason, b_where, b_at)

    def _compact(self, boundary: dict[str, Any], node_id: str, text: str | None, reason: str, where: str, at: str | None) -> None:
        preserved = self._preserved(boundary)
        covered = [h for h in self.out.live_holders() if h.startswith("ev:") and h not in preserved]
        raw: dict[str, Constraint] = {}
        for h in covered:
            for c in self._raw.get(h, ()):
                raw.setdefault(c.id, c)
        self.out.summary_node(
            node_id, where, at, children=[self._summary] if self._summary else [], raw=raw.values(),
            text=text, matcher=self.matcher, opaque_reason=reason,
        )
        for h in covered:
            self.out.release_live(h, where, at)
        self._summary = node_id
        self._rules_in_view = {}  # rule files must be re-injected after the boundary to be in view
        self._root_dirty = True

    def _preserved(self, boundary: dict[str, Any]) -> set[str]:
        seg = boundary.get("compactMetadata", {}) if isinstance(boundary.get("compactMetadata"), dict) else {}
        seg = seg.get("preservedSegment") if isinstance(seg.get("preservedSegment"), dict) else {}
        head, tail = seg.get("headUuid"), seg.get("tailUuid")
        if not head and not tail:
            return set()
        if head not in self._uuid_pos or tail not in self._uuid_pos:
            self.stats.broken_links += 1
            return set()
        lo, hi = sorted((self._uuid_pos[head], self._uuid_pos[tail]))
        return {f"ev:{u}" for u in self._uuids[lo : hi + 1]}

    def _flush_root(self, where: str) -> None:
        if not self._root_dirty or self._boundary is not None:
            return
        self._root_dirty = False
        self.out.root(
            where, None, children=[self._summary] if self._summary else [],
            kept=self._rules_in_view.values(), raw=self._rules.values(),
        )


def _strings(values: list[Any]) -> list[str]:
    return [v.strip() for v in values if isinstance(v, str) and v.strip() and "\n" not in v]
