"""Emit a pipeline's compaction and artifact events: :class:`AsyncGuard` and :class:`Guard`.

One guard per process (one producer), one handle per context. Every call is validated at
once by the worker's own decoder, then handed to the producer; ``flush()`` waits for the
broker's acknowledgements and keeps what was not acknowledged, to send the same bytes
again. The sync :class:`Guard` runs the same code on a private event-loop thread.
Usage and the acknowledgement rules: docs/CLIENT.md "Emitting".
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from stream.client._loop import LoopThread
from stream.client.records import Clock, Emitted, EventBuilder, utc_now
from stream.client.transport import KafkaTransport, Transport
from stream.errors import GuardError
from stream.settings import Settings, get_settings
from stream.wire import Limits, decode_event

_UNSET: Any = object()


class FlushFailed(GuardError):
    """Some events were not acknowledged by the broker. They are kept (``failed``):
    call ``flush()`` again to re-send them; a copy that did arrive is ignored by the
    worker as a duplicate."""

    def __init__(self, failed: list[tuple[Emitted, BaseException]]) -> None:
        self.failed = [em for em, _ in failed]
        self.errors = [exc for _, exc in failed]
        first_em, first_exc = failed[0]
        contexts = sorted({em.context_id for em in self.failed})
        where = f"context {contexts[0]!r}" if len(contexts) == 1 else f"{len(contexts)} contexts"
        super().__init__(
            f"{len(failed)} event(s) of {where} not acknowledged by Kafka (first: {first_em.type} "
            f"{first_em.event_id!r}: {type(first_exc).__name__}: {first_exc}); they are kept, "
            "call flush() again to re-send them"
        )


class _Outbox:
    """One context's events between the producer and the broker's acknowledgement."""

    __slots__ = ("inflight", "failed", "reported", "acked")

    def __init__(self) -> None:
        self.inflight: set[asyncio.Future[Any]] = set()
        #: failed since the last flush / reported by the last flush (re-sent by the next)
        self.failed: list[tuple[Emitted, BaseException]] = []
        self.reported: list[tuple[Emitted, BaseException]] = []
        #: (topic, partition) -> highest acknowledged offset of this context
        self.acked: dict[tuple[str, int], int] = {}

    async def send(self, transport: Transport, em: Emitted, on_done: Any = None) -> None:
        try:
            future = await transport.send(em.topic, em.key, em.value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # not even enqueued (e.g. the producer's buffer timed out)
            self.failed.append((em, exc))
            if on_done is not None:
                on_done()
            return
        self.inflight.add(future)
        future.add_done_callback(lambda f: self._done(em, f, on_done))

    def _done(self, em: Emitted, future: asyncio.Future[Any], on_done: Any) -> None:
        self.inflight.discard(future)
        if future.cancelled():
            self.failed.append((em, asyncio.CancelledError("send cancelled")))
        elif (exc := future.exception()) is not None:
            self.failed.append((em, exc))
        else:
            md = future.result()
            em.partition, em.offset = md.partition, md.offset
            tp = (em.topic, em.partition)
            if em.offset > self.acked.get(tp, -1):
                self.acked[tp] = em.offset
        if on_done is not None:
            on_done()

    async def flush(self, transport: Transport) -> list[tuple[Emitted, BaseException]]:
        """Re-send what the last flush reported, wait for every acknowledgement; return
        (and keep for the next flush) what failed."""
        retry, self.reported = self.reported, []
        for em, _ in retry:
            await self.send(transport, em)
        while self.inflight:
            await asyncio.wait(list(self.inflight))
            await asyncio.sleep(0)  # let the done callbacks run
        self.reported, self.failed = self.failed, []
        self.reported.sort(key=lambda f: (f[0].seq is None, f[0].seq or 0))
        return list(self.reported)


def _check_context_id(context_id: Any, limits: Limits) -> None:
    """Raise the decoder's own reason for a bad context id, before any event is built."""
    value = context_id if isinstance(context_id, (str, int, float, bool, list, dict, type(None))) else []
    probe = {"type": "artifact", "event_id": "probe", "artifact_id": "probe", "op": "admitted", "context_id": value}
    decode_event(json.dumps(probe, ensure_ascii=True).encode("ascii"), limits=limits)


class AsyncGuardContext:
    """The handle of one context (``AsyncGuard.context``): numbered, validated events.

    ``next_seq``: the seq the next event gets (persist it to resume with ``since``).
    ``positions()``: ``{(topic, partition): offset}`` of the last acknowledged events.
    """

    def __init__(self, guard: AsyncGuard, builder: EventBuilder) -> None:
        self._guard = guard
        self._builder = builder
        self._outbox = _Outbox()

    @property
    def context_id(self) -> str:
        return self._builder.context_id

    @property
    def next_seq(self) -> int | None:
        return self._builder.next_seq

    def positions(self) -> dict[tuple[str, int], int]:
        return dict(self._outbox.acked)

    async def admitted(self, artifact_id: str, *, tier: str = "live", kind: str | None = None,
                       occurred_at: datetime | str | None = None, event_id: str | None = None) -> Emitted:
        """An artifact entered a tier (``live``: the model's window; ``durable``: the store)."""
        return await self._send(self._builder.artifact("admitted", artifact_id, tier=tier, kind=kind,
                                                       occurred_at=occurred_at, event_id=event_id))

    async def evicted(self, artifact_id: str, *, tier: str = "live", kind: str | None = None,
                      occurred_at: datetime | str | None = None, event_id: str | None = None) -> Emitted:
        """An artifact left a tier (unreachable once it is in neither)."""
        return await self._send(self._builder.artifact("evicted", artifact_id, tier=tier, kind=kind,
                                                       occurred_at=occurred_at, event_id=event_id))

    async def checkpoint(self, node_id: str, level: str, *, children: Iterable[str] | None = None,
                         referents: Iterable[str] | None = None,
                         negative_constraints: Iterable[Any] | None = None,
                         raw_negative_constraints: Iterable[Any] | None = None,
                         opaque: bool | None = None, text: str | None = None, **informational: Any) -> Emitted:
        """A summary node persisted as a checkpoint (a new node or a new version).

        ``referents``: artifact ids it depends on but elides; ``negative_constraints``:
        the prohibitions it carries; ``raw_negative_constraints``: those in the raw context
        it covers directly (strings or ``{"id", "text"}``); ``opaque``: its content cannot
        be inspected. ``informational``: ``parent_id``, ``cycle``, ``instructions``,
        ``raw_instructions``, ``occurred_at``, ``event_id``.
        """
        return await self._send(self._builder.checkpoint(
            node_id, level, children=children, referents=referents, negative_constraints=negative_constraints,
            raw_negative_constraints=raw_negative_constraints, opaque=opaque, text=text, **informational))

    async def flush(self) -> None:
        """Wait until the broker acknowledged every event of this context; re-send failed ones.

        Raises :class:`FlushFailed` (events kept for the next flush).
        """
        failed = await self._outbox.flush(self._guard.transport)
        if failed:
            raise FlushFailed(failed)

    async def _send(self, em: Emitted) -> Emitted:
        await self._outbox.send(self._guard.transport, em)
        return em

    async def __aenter__(self) -> AsyncGuardContext:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.flush()


class AsyncGuard:
    """The asyncio client: one producer, one :class:`AsyncGuardContext` per context id.

    ``settings``: topics, broker and security (default: the ``CG_*`` environment).
    ``clock``: stamps ``occurred_at`` (which becomes the alerts' ``detected_at``) when a
    call gives none; ``None`` sends no time. ``transport``: default Kafka
    (:class:`~stream.client.transport.KafkaTransport`).
    """

    def __init__(self, settings: Settings | None = None, *, clock: Clock | None = utc_now,
                 transport: Transport | None = None) -> None:
        self.settings = settings or get_settings()
        self.clock = clock
        self.transport: Transport = transport or KafkaTransport(self.settings)
        self.limits = Limits.from_settings(self.settings)
        self._contexts: dict[str, AsyncGuardContext] = {}
        self._lock = threading.Lock()
        self._started = False

    def context(self, context_id: str, *, since: int | None = _UNSET) -> AsyncGuardContext:
        """The handle of ``context_id`` (the same handle on every call).

        ``since``: the seq of its first event, on the first call only (default 0; after a
        restart, the ``next_seq`` you persisted). ``None``: events carry no seq and are
        applied in arrival order — only safe when nothing else interleaves them.
        """
        with self._lock:
            handle = self._contexts.get(context_id) if isinstance(context_id, str) else None
            if handle is not None:
                if since is not _UNSET:
                    raise ValueError(
                        f"context {context_id!r} is already open (next seq {handle.next_seq}); "
                        "call guard.context(context_id) without since to get its handle"
                    )
                return handle
            _check_context_id(context_id, self.limits)
            builder = EventBuilder(self.settings, context_id, since=0 if since is _UNSET else since,
                                   clock=self.clock, limits=self.limits)
            handle = self._contexts[context_id] = self._new_handle(builder)
            return handle

    def _new_handle(self, builder: EventBuilder) -> AsyncGuardContext:
        return AsyncGuardContext(self, builder)

    async def start(self) -> AsyncGuard:
        if not self._started:
            await self.transport.start()
            self._started = True
        return self

    async def flush(self) -> None:
        """Flush every context; raise one :class:`FlushFailed` for all that failed."""
        failed: list[tuple[Emitted, BaseException]] = []
        for handle in list(self._contexts.values()):
            failed.extend(await handle._outbox.flush(self.transport))
        if failed:
            raise FlushFailed(failed)

    async def stop(self) -> None:
        """Flush, then stop the producer (the producer stops even if the flush failed)."""
        try:
            await self.flush()
        finally:
            self._started = False
            await self.transport.stop()

    async def __aenter__(self) -> AsyncGuard:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()


class GuardContext:
    """The sync handle of one context (``Guard.context``); same calls as
    :class:`AsyncGuardContext`, returning at once (``flush()`` blocks)."""

    def __init__(self, guard: Guard, handle: AsyncGuardContext) -> None:
        self._guard = guard
        self._handle = handle

    @property
    def context_id(self) -> str:
        return self._handle.context_id

    @property
    def next_seq(self) -> int | None:
        return self._handle.next_seq

    def positions(self) -> dict[tuple[str, int], int]:
        return self._handle.positions()

    def admitted(self, artifact_id: str, *, tier: str = "live", kind: str | None = None,
                 occurred_at: datetime | str | None = None, event_id: str | None = None) -> Emitted:
        """An artifact entered a tier (``live`` or ``durable``)."""
        return self._guard._submit(self._handle, self._handle._builder.artifact(
            "admitted", artifact_id, tier=tier, kind=kind, occurred_at=occurred_at, event_id=event_id))

    def evicted(self, artifact_id: str, *, tier: str = "live", kind: str | None = None,
                occurred_at: datetime | str | None = None, event_id: str | None = None) -> Emitted:
        """An artifact left a tier."""
        return self._guard._submit(self._handle, self._handle._builder.artifact(
            "evicted", artifact_id, tier=tier, kind=kind, occurred_at=occurred_at, event_id=event_id))

    def checkpoint(self, node_id: str, level: str, *, children: Iterable[str] | None = None,
                   referents: Iterable[str] | None = None,
                   negative_constraints: Iterable[Any] | None = None,
                   raw_negative_constraints: Iterable[Any] | None = None,
                   opaque: bool | None = None, text: str | None = None, **informational: Any) -> Emitted:
        """A summary node persisted as a checkpoint (see :meth:`AsyncGuardContext.checkpoint`)."""
        return self._guard._submit(self._handle, self._handle._builder.checkpoint(
            node_id, level, children=children, referents=referents, negative_constraints=negative_constraints,
            raw_negative_constraints=raw_negative_constraints, opaque=opaque, text=text, **informational))

    def flush(self, timeout: float | None = None) -> None:
        """Block until every event of this context is acknowledged; :class:`FlushFailed` otherwise."""
        self._guard._loop.run(self._guard._flush_handles([self._handle]), timeout)

    def __enter__(self) -> GuardContext:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.flush()


class Guard:
    """The sync client (module docstring): :class:`AsyncGuard` on a private loop thread.

    ``max_in_flight``: events handed over but not yet acknowledged before a call blocks.
    """

    def __init__(self, settings: Settings | None = None, *, clock: Clock | None = utc_now,
                 transport: Transport | None = None, max_in_flight: int = 10_000) -> None:
        self._async = AsyncGuard(settings, clock=clock, transport=transport)
        self.settings = self._async.settings
        self._loop = LoopThread("checkpoint-guard-client")
        self._slots = threading.BoundedSemaphore(max_in_flight)
        self._queue: asyncio.Queue[tuple[AsyncGuardContext, Emitted]] | None = None
        self._sender: asyncio.Task[None] | None = None
        self._handles: dict[str, GuardContext] = {}

    def context(self, context_id: str, *, since: int | None = _UNSET) -> GuardContext:
        """The handle of ``context_id`` (see :meth:`AsyncGuard.context`)."""
        handle = self._async.context(context_id, since=since)
        with self._async._lock:
            sync = self._handles.get(context_id)
            if sync is None:
                sync = self._handles[context_id] = GuardContext(self, handle)
        return sync

    def start(self, timeout: float | None = 60) -> Guard:
        if self._queue is not None:
            return self
        self._loop.start()
        try:
            self._loop.run(self._start(), timeout)
        except BaseException:
            self._loop.close()
            raise
        return self

    async def _start(self) -> None:
        await self._async.start()
        self._queue = asyncio.Queue()
        self._sender = asyncio.get_running_loop().create_task(self._send_loop())

    async def _send_loop(self) -> None:
        assert self._queue is not None
        while True:
            handle, em = await self._queue.get()
            try:
                await handle._outbox.send(self._async.transport, em, self._slots.release)
            finally:
                self._queue.task_done()

    def _submit(self, handle: AsyncGuardContext, em: Emitted) -> Emitted:
        if self._queue is None:
            raise RuntimeError("the Guard is not started: use it as a context manager or call start() first")
        self._slots.acquire()
        self._loop.call_soon(self._queue.put_nowait, (handle, em))
        return em

    async def _flush_handles(self, handles: list[AsyncGuardContext]) -> None:
        assert self._queue is not None
        await self._queue.join()  # everything submitted so far is with the producer
        failed: list[tuple[Emitted, BaseException]] = []
        for handle in handles:
            failed.extend(await handle._outbox.flush(self._async.transport))
        if failed:
            raise FlushFailed(failed)

    def flush(self, timeout: float | None = None) -> None:
        """Block until every event of every context is acknowledged; :class:`FlushFailed` otherwise."""
        self._loop.run(self._flush_handles(list(self._async._contexts.values())), timeout)

    def stop(self, timeout: float | None = 60) -> None:
        """Flush, stop the producer and the loop thread (they stop even if the flush failed)."""
        if self._queue is None:
            return
        try:
            self.flush(timeout)
        finally:
            try:
                self._loop.run(self._stop(), timeout)
            finally:
                self._queue = None
                self._loop.close()

    async def _stop(self) -> None:
        if self._sender is not None:
            self._sender.cancel()
        self._async._started = False
        await self._async.transport.stop()

    def __enter__(self) -> Guard:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
