"""One call of ``checkpoint-guard hook claude-code``: hook JSON on stdin, maybe JSON on stdout.

Input fields (Claude Code's hooks reference): ``session_id``, ``transcript_path``,
``hook_event_name``, ``cwd``; ``PreCompact``: ``trigger`` (``manual``/``auto``),
``custom_instructions``; ``SessionStart``: ``source`` (``startup``/``resume``/``clear``/
``compact``/``fork``), ``model``; ``SessionEnd``: ``reason``. Unknown fields are ignored.

More (the module notes): docs/HOOK.md, section ``stream/hook/claude_code.py``.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

from stream.errors import json_type
from stream.hook import reinject
from stream.hook.spool import Line, Spool, spool_line
from stream.hook.store import (
    Cursor,
    LockTimeout,
    Paths,
    atomic_write,
    chain,
    code_version,
    fingerprint,
    locked,
    now_iso,
    session_key,
)

#: Hook events that send the spool to Kafka (Claude Code does not wait for them, or the session is ending).
SENDING_EVENTS = frozenset({"Stop", "SessionEnd"})
#: An unreachable broker is not tried again for this long (seconds).
BROKER_RETRY = 30.0
#: Largest hook input read from stdin (Claude Code's are a few KB; a Stop carries the last message).
MAX_INPUT_BYTES = 16 << 20
_PICKLE_MAGIC = b"cg-hook-adapter-v1\n"


class HookInputError(ValueError):
    """The hook input is not what Claude Code sends; the message is the log line."""


class BudgetExceeded(Exception):
    """The call ran out of ``CG_HOOK_BUDGET``."""


class TranscriptMissing(Exception):
    """The transcript named by the input does not exist (yet)."""


@dataclass(frozen=True)
class HookInput:
    event: str
    session_id: str
    transcript: Path | None
    source: str | None = None
    trigger: str | None = None
    reason: str | None = None
    cwd: str | None = None

    @property
    def after_compaction(self) -> bool:
        return self.event == "SessionStart" and self.source == "compact"


def parse_input(raw: bytes) -> HookInput:
    """The fields the hook uses, checked; raises :class:`HookInputError` (one line)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise HookInputError(f"hook input is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise HookInputError(f"hook input must be a JSON object, got {json_type(data)}")

    def text(name: str, required: bool = False) -> str | None:
        v = data.get(name)
        if v is None and not required:
            return None
        if not isinstance(v, str) or (required and not v):
            raise HookInputError(f"hook input field {name!r} must be a non-empty string, got {v!r:.80}")
        return v

    event = cast(str, text("hook_event_name", True))  # required: text() raised if missing
    session = cast(str, text("session_id", True))
    transcript = text("transcript_path")
    return HookInput(
        event=event, session_id=session,
        transcript=Path(os.path.expanduser(transcript)) if transcript else None,
        source=text("source"), trigger=text("trigger"), reason=text("reason"), cwd=text("cwd"),
    )


class Budget:
    """A hard deadline: SIGALRM raises :class:`BudgetExceeded` outside :meth:`critical` blocks
    (a commit is never cut in half; it raises right after). ``seconds=None``: no limit."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.started = time.monotonic()
        self.deadline = None if seconds is None else self.started + seconds
        self._critical = 0
        self._expired = False
        self._armed = False

    def arm(self) -> None:
        if self.seconds is None or not hasattr(signal, "setitimer"):
            return
        signal.signal(signal.SIGALRM, self._ring)
        signal.setitimer(signal.ITIMER_REAL, self.seconds)
        self._armed = True

    def disarm(self) -> None:
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            self._armed = False

    def _ring(self, signum: int, frame: Any) -> None:
        self._expired = True
        if not self._critical:
            raise BudgetExceeded()

    @property
    def lock_deadline(self) -> float | None:
        """How long to wait for a session's lock: most of the budget, so a busy session is a
        :class:`LockTimeout` (the holder reads the records) rather than a budget overrun."""
        return None if self.seconds is None else self.started + 0.8 * self.seconds

    def remaining(self) -> float:
        return float("inf") if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    @property
    def expired(self) -> bool:
        return self._expired or self.remaining() <= 0

    @contextmanager
    def critical(self) -> Iterator[None]:
        self._critical += 1
        try:
            yield
        finally:
            self._critical -= 1
        if not self._critical and self._expired:
            raise BudgetExceeded()


@dataclass
class Options:
    """How the events are made: the judge settings of ``ingest claude-code`` (give both the same: live = batch)."""

    match_threshold: float | None = None
    alert_uncertain: bool = False
    judge: str = "rules"
    judge_fallback: str = "none"
    judge_precision: str | None = None

    def build(self, log: Any = None) -> Any:
        """The judge, built as ``ingest`` builds it (a model judge from the ``CG_JUDGE_*`` settings)."""
        from stream.adapters.compaction.judge_rules import RulesJudge
        from stream.adapters.compaction.prohibitions import DEFAULT_MATCH_THRESHOLD, ProhibitionMatcher
        from stream.settings import get_settings

        settings = get_settings()
        threshold = DEFAULT_MATCH_THRESHOLD if self.match_threshold is None else self.match_threshold
        rules = RulesJudge(ProhibitionMatcher(threshold=threshold, alert_uncertain=self.alert_uncertain),
                           self.judge_precision or settings.judge_precision)
        if self.judge != "model":
            return rules
        from stream.adapters.compaction.model_judge import FallbackJudge, build_model_judge

        model = build_model_judge(settings)
        if self.judge_fallback != "rules":
            return model
        announce = (
            (
                lambda reason: log(
                    f"the model judge is unavailable ({reason}); this call judged with the "
                    "rules judge (--judge-fallback rules; x_judge says so)"
                )
            )
            if log
            else (lambda r: None)
        )
        return FallbackJudge(model, rules, can_restart=lambda: False, announce=announce)


class LazyJudge:
    """A judge built at its first judgement (the port's ``judge``): most hook calls judge nothing,
    and building the rules judge costs most of a call's import time."""

    def __init__(self, build: Any) -> None:
        self._build = build
        self._real: Any = None

    @property
    def real(self) -> Any:
        if self._real is None:
            self._real = self._build()
        return self._real

    @property
    def name(self) -> str:
        return self.real.name

    def judge(self, candidates: Any, summary: str | None, earlier_summaries: Any = ()) -> Any:
        return self.real.judge(candidates, summary, earlier_summaries)


class Session:
    """One session's state in the hook directory; every method runs under its lock."""

    def __init__(self, paths: Paths, session_id: str, options: Options, log_event: str | None = None) -> None:
        self.paths = paths
        self.session_id = session_id
        self.key = session_key(session_id)
        self.options = options
        self.event = log_event
        self.spool = Spool(paths.spool_dir, self.key)
        self._judge: Any = None
        self.reader: Any = None  # the adapter, once loaded in this call

    @property
    def judge(self) -> Any:
        if self._judge is None:
            self._judge = LazyJudge(lambda: self.options.build(self.log))
        return self._judge

    def log(self, message: str) -> None:
        self.paths.log.line(self.session_id, self.event, message)

    def load_cursor(self, transcript: Path | None) -> Cursor:
        cursor = Cursor.load(self.paths.cursor(self.key))
        if cursor is None:
            cursor = Cursor(session_id=self.session_id, transcript=str(transcript) if transcript else "")
        return cursor

    # ---- reading the transcript

    def advance(self, cursor: Cursor, transcript: Path, budget: Budget) -> list[dict[str, Any]]:
        """Read what the transcript added past the cursor; spool the new events; save the state.

        Returns the events emitted by this call (possibly none).
        """
        try:
            size = transcript.stat().st_size
        except FileNotFoundError:
            raise TranscriptMissing(f"transcript {transcript} does not exist (yet); nothing read") from None
        moved = bool(cursor.transcript) and cursor.transcript != str(transcript)
        rewritten = cursor.offset > size or (
            cursor.offset > 0 and fingerprint(transcript, cursor.offset) != cursor.fingerprint
        )
        if rewritten:
            cursor.rewrites += 1
            self.log(f"transcript {transcript} no longer starts with the {cursor.offset} bytes read before "
                     "(rewritten); reading it again from the start, emitting only seq >= "
                     f"{cursor.next_seq}")
        elif not moved and not _complete_line_after(transcript, cursor.offset, size):
            return []  # fast path: nothing new, no adapter needed
        cursor.transcript = str(transcript)
        reader = None if rewritten else self._load_reader(cursor)
        rederived = reader is None
        if reader is None:
            from stream.adapters.compaction.claude_code import ClaudeCodeTranscript

            reader = ClaudeCodeTranscript(transcript, self.judge)
        elif moved:
            reader.path = transcript
        self.reader = reader
        events = reader.poll(final=False)
        fresh = self._fresh(cursor, reader, events, rederived)
        self._commit(cursor, transcript, reader, fresh, budget)
        return fresh

    def _fresh(
        self, cursor: Cursor, reader: Any, events: list[dict[str, Any]], rederived: bool
    ) -> list[dict[str, Any]]:
        """The events not sent before: a seq is never emitted twice for a context."""
        ctx = reader.context_id
        if ctx is None:
            return []
        if cursor.context_id != ctx:
            if cursor.context_id is not None:
                self.log(f"the transcript now holds context {ctx} (was {cursor.context_id}); its events start at seq 0")
            cursor.context_id, cursor.next_seq, cursor.digest = ctx, 0, ""
        if rederived and cursor.next_seq:
            again = [e["event_id"] for e in events if e["seq"] < cursor.next_seq]
            if len(again) < cursor.next_seq:
                self.log(f"re-read gives {len(again)} of the {cursor.next_seq} events sent before; the next "
                         f"{cursor.next_seq - len(again)} are not sent again")
            elif chain("", again) != cursor.digest:
                self.log(f"re-read: events 0..{cursor.next_seq - 1} differ from those sent before (the transcript "
                         "or checkpoint-guard changed); continuing after them")
        return [e for e in events if e["seq"] >= cursor.next_seq]

    def _commit(
        self, cursor: Cursor, transcript: Path, reader: Any, fresh: list[dict[str, Any]], budget: Budget
    ) -> None:
        from stream.adapters import encode_event

        lines: list[Line] = [spool_line(e, encode_event(e)) for e in fresh]
        origins = reinject.candidate_origins(reader.session.judged.candidates) if reader.session is not None else {}
        for e in fresh:
            if e["type"] == "checkpoint" and e.get("level") in ("leaf", "section"):
                reinject.record(cursor.nodes, e, origins)
                if e["node_id"] not in cursor.summaries:
                    cursor.summaries.append(e["node_id"])
        # a drain holds the spool's lock for one batch at most; past our share of the budget, leave
        # it (LockTimeout: nothing committed, the next call spools these events)
        wait = None if budget.lock_deadline is None else max(budget.lock_deadline, time.monotonic() + 0.2)
        with budget.critical():
            self.spool.append(lines, wait)
            if fresh:
                cursor.next_seq = fresh[-1]["seq"] + 1
                cursor.digest = chain(cursor.digest, [e["event_id"] for e in fresh])
            cursor.offset = reader.offset
            cursor.fingerprint = fingerprint(transcript, cursor.offset)
            cursor.records = reader.stats.records
            cursor.code = code_version()
            self._save_reader(reader, cursor)
            cursor.save(self.paths.cursor(self.key))

    def _token(self, cursor: Cursor) -> bytes:
        return f"{cursor.code}:{cursor.offset}:{cursor.next_seq}:{cursor.fingerprint}\n".encode()

    def _save_reader(self, reader: Any, cursor: Cursor) -> None:
        buf = io.BytesIO()
        buf.write(_PICKLE_MAGIC + self._token(cursor))
        judge = self.judge

        class _Pickler(pickle.Pickler):
            def persistent_id(self, obj: Any) -> str | None:
                return "judge" if obj is judge else None

        try:
            _Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(reader)
        except Exception as exc:  # noqa: BLE001 - an unpicklable adapter: every call re-derives (slow, correct)
            self.log(f"cannot keep the adapter state ({type(exc).__name__}: {exc}); the next call reads from the start")
            self.paths.adapter(self.key).unlink(missing_ok=True)
            return
        atomic_write(self.paths.adapter(self.key), buf.getvalue())

    def _load_reader(self, cursor: Cursor) -> Any:
        """The adapter as the last call left it, or None (missing, other code version, other cursor)."""
        if not cursor.offset or cursor.code != code_version():
            return None
        try:
            data = self.paths.adapter(self.key).read_bytes()
        except OSError:
            return None
        head = _PICKLE_MAGIC + self._token(cursor)
        if not data.startswith(head):
            return None
        judge = self.judge

        class _Unpickler(pickle.Unpickler):
            def persistent_load(self, pid: Any) -> Any:
                if pid == "judge":
                    return judge
                raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")

        try:
            return _Unpickler(io.BytesIO(data[len(head):])).load()
        except Exception as exc:  # noqa: BLE001 - a damaged state is re-derived, never fatal
            self.log(f"adapter state unreadable ({type(exc).__name__}); reading the transcript from the start")
            return None

    # ---- after a compaction

    def hand_back(
        self, cursor: Cursor, limit: int, trigger: str | None
    ) -> tuple[str, str | None, list[str], list[str]]:
        """For the newest summary not answered yet: (additionalContext, node id, dropped ids, shown ids)."""
        pending = [n for n in cursor.summaries if n not in cursor.handed_back]
        if not pending:
            return "", None, [], []
        node = pending[-1]
        missing = reinject.dropped(cursor.nodes, node)
        text, shown = reinject.context_text(missing, trigger=trigger, limit=limit)
        cursor.handed_back.extend(pending)
        return text, node, sorted(missing), shown

    def journal(self, row: dict[str, Any]) -> None:
        path = self.paths.compactions(self.key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")


def _complete_line_after(path: Path, offset: int, size: int) -> bool:
    """Whether the file holds a complete line past ``offset`` (a partial last line is a record being written)."""
    if size <= offset:
        return False
    with open(path, "rb") as fh:
        fh.seek(offset)
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                return False
            if b"\n" in chunk:
                return True


# --------------------------------------------------------------------------- sending


async def send_spools(settings: Any, paths: Paths, budget: Budget, *, respect_backoff: bool = True,
                      keys: list[str] | None = None) -> tuple[int, str | None]:
    """Send every spool with data (or ``keys``) to the input topics. Returns (events sent, error line or None).

    An unreachable broker marks ``broker-down`` for :data:`BROKER_RETRY` s; while marked,
    calls keep spooling without trying (``respect_backoff=False``: try anyway).
    """
    spools = [Spool(paths.spool_dir, k) for k in (keys if keys is not None else _spool_keys(paths))]
    spools = [s for s in spools if s.has_data()]
    if not spools:
        return 0, None
    if respect_backoff and _broker_down(paths):
        return 0, None
    from stream.kafka_clients import kafka_error, producer, start_client

    topic = {"checkpoint": settings.compaction_topic, "artifact": settings.artifact_topic}
    timeout_ms = int(settings.hook_connect_timeout * 1000)
    client = producer(settings, enable_idempotence=True, linger_ms=5, request_timeout_ms=max(timeout_ms, 1000))
    sent = 0
    try:
        try:
            await asyncio.wait_for(
                start_client(settings, client), min(settings.hook_connect_timeout, budget.remaining())
            )
        except Exception as exc:  # noqa: BLE001 - unreachable: keep spooling
            _mark_down(
                paths,
                kafka_error(settings, exc, "cannot reach Kafka")
                if not isinstance(exc, asyncio.TimeoutError)
                else f"no broker answered at {settings.bootstrap_servers} within {settings.hook_connect_timeout:g} s",
            )
            return 0, _down_reason(paths)

        async def send(batch: list[Line]) -> None:
            futures = [await client.send(topic[t], value=raw, key=ctx.encode("utf-8")) for t, ctx, _, raw in batch]
            await asyncio.gather(*futures)

        for spool in spools:
            left = budget.remaining()
            if left <= 0:
                break
            try:
                sent += await asyncio.wait_for(
                    spool.drain(send, budget.deadline, should_stop=lambda: budget.expired), left
                )
            except (TimeoutError, LockTimeout):
                break
        _clear_down(paths)
        return sent, None
    except Exception as exc:  # noqa: BLE001
        _mark_down(paths, kafka_error(settings, exc, "cannot produce to Kafka"))
        return sent, _down_reason(paths)
    finally:
        try:
            await asyncio.wait_for(client.stop(), 2.0)
        except Exception:  # noqa: BLE001
            pass


def _spool_keys(paths: Paths) -> list[str]:
    try:
        return sorted(p.stem for p in paths.spool_dir.glob("*.jsonl"))
    except OSError:
        return []


def _broker_down(paths: Paths) -> bool:
    from stream.hook.store import read_json

    mark = read_json(paths.broker_down)
    return isinstance(mark, dict) and isinstance(mark.get("until"), (int, float)) and time.time() < mark["until"]


def _down_reason(paths: Paths) -> str | None:
    from stream.hook.store import read_json

    mark = read_json(paths.broker_down)
    return mark.get("reason") if isinstance(mark, dict) else None


def _mark_down(paths: Paths, reason: str) -> None:
    atomic_write(paths.broker_down, json.dumps({"until": time.time() + BROKER_RETRY, "since": now_iso(),
                                                "reason": " ".join(reason.split())}).encode())


def _clear_down(paths: Paths) -> None:
    paths.broker_down.unlink(missing_ok=True)


# --------------------------------------------------------------------------- one call


def handle(
    inp: HookInput, settings: Any, options: Options, budget: Budget, *, catch_up: bool = False
) -> dict[str, Any] | None:
    """Run one hook call; returns the JSON object to print (None: print nothing).

    Raises :class:`BudgetExceeded`, :class:`LockTimeout`, :class:`TranscriptMissing` and
    whatever else went wrong; :func:`main` turns each into one log line.
    """
    paths = Paths(settings.hook_dir)
    session = Session(paths, inp.session_id, options, inp.event)
    output: dict[str, Any] | None = None
    with locked(paths.lock(session.key), budget.lock_deadline):
        cursor = session.load_cursor(inp.transcript)
        cursor.calls += 1
        cursor.last_call, cursor.last_event = now_iso(), inp.event
        cursor.options = asdict(options)
        if inp.event == "PreCompact" and inp.trigger:
            cursor.trigger = inp.trigger
        if inp.transcript is None:
            raise TranscriptMissing("hook input has no transcript_path; nothing read")
        session.advance(cursor, inp.transcript, budget)
        if inp.after_compaction and not catch_up:  # a catch-up has nobody to hand anything to
            output = _after_compaction(session, cursor, inp, settings, budget)
        with budget.critical():
            cursor.save(paths.cursor(session.key))
    if (inp.event in SENDING_EVENTS or catch_up) and settings.hook_kafka:
        budget.disarm()  # from here on the time limit is asyncio's (a signal inside the loop would leak a client)
        asyncio.run(send_spools(settings, paths, budget, respect_backoff=not catch_up))
    return output


def _after_compaction(
    session: Session, cursor: Cursor, inp: HookInput, settings: Any, budget: Budget
) -> dict[str, Any] | None:
    if inp.transcript is None:  # the caller raised TranscriptMissing already
        return None
    wait_until = time.monotonic() + min(settings.hook_summary_wait, max(0.0, budget.remaining() - 0.5))
    while not [n for n in cursor.summaries if n not in cursor.handed_back] and time.monotonic() < wait_until:
        time.sleep(0.05)  # the transcript is written asynchronously: the summary may still be on its way
        session.advance(cursor, inp.transcript, budget)
    budget.disarm()  # read and committed: what is left is short, and an answer found must not be lost
    text, node, missing, shown = session.hand_back(cursor, settings.hook_context_chars, cursor.trigger)
    row = {"at": now_iso(), "node_id": node, "trigger": cursor.trigger, "dropped": missing, "shown": shown,
           "chars": len(text)}
    cursor.trigger = None
    if node is None:
        session.log(f"after the compaction no new summary in {inp.transcript} within "
                    f"{settings.hook_summary_wait:g} s; nothing handed back")
        row["note"] = "no new summary in the transcript"
    elif missing:
        session.log(f"compaction {node}: the summary dropped {len(missing)} prohibition(s); handed back "
                    f"{len(shown)} ({len(text)} characters)")
    with budget.critical():
        session.journal(row)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}


def spawn_catch_up(settings: Any, inp_raw: bytes, key: str, argv: list[str]) -> bool:
    """Start a detached ``hook claude-code --catch-up FILE`` for a session (unless one runs); True if started."""
    paths = Paths(settings.hook_dir)
    pid_file = paths.session(key) / "catch-up.pid"
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, 0)
        return False  # one is running
    except (OSError, ValueError):
        pass
    payload = paths.session(key) / "catch-up.json"
    atomic_write(payload, inp_raw)
    args = [sys.executable, "-m", "stream", *[a for a in argv if a != "--catch-up"], "--catch-up", str(payload)]
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True, close_fds=True)
    atomic_write(pid_file, str(proc.pid).encode())
    return True
