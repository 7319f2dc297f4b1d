"""Reference remediation worker: alerts in, remediation requests out (``python -m stream remediate``).

DESIGN.md §1 names remediation workers as one of the alert topic's users: they
re-fetch orphaned referents, reject a subtree's compaction, freeze a node. This module
is a small, correct reference for one: the decision is a pure function, the shell is a
Kafka consume-decide-produce loop, and what is done with each request is pluggable.

What it does, per alert (consumer group ``CG_REMEDIATION_GROUP`` on ``CG_ALERTS_TOPIC``)
-------------------------------------------------------------------------------------

Requests are grouped per *case* = (context, node, rule). An ``open`` alert carries the
rule's full current set (DESIGN.md §3), so the case's desired requests are:

==================  =====================================================================
alert action        desired requests of the case
==================  =====================================================================
``escalate``        one ``refetch`` per orphaned referent (``referent`` = the artifact id)
``reject_subtree``  one ``recompact`` carrying ``missing_constraints`` and ``subtree``
``freeze``          one ``freeze`` of the node
``resync`` / other  none (``sequence_gap`` has no node; a human resyncs the producer)
==================  =====================================================================

``unverifiable_checkpoint`` (an opaque summary; action ``escalate``) asks for one
``recompact`` of the node (nothing to re-fetch: it must be summarized readably), with
``missing_constraints`` and ``subtree`` empty; its ``resolved`` cancels it.

The case's *pending* requests are diffed with the desired ones: a desired request that
is not pending is emitted; a pending one that is no longer desired gets a ``cancel``;
one that is both stays pending and is not sent again. So an ``open`` again with a new
set asks only for what changed, and a ``resolved`` alert (desired: nothing) cancels
every pending request of its case — a second resolve finds nothing pending and is a
no-op, and a re-open after a resolve creates new requests (new alert id -> new ids).
Cancels come before new requests. Every alert id is remembered per context: a
redelivered alert (the guard is at-least-once, DESIGN.md §7.6) produces nothing.

``request_id`` = first 32 hex of sha256 over ``[alert_id, kind, item]`` (item: the
referent, the missing constraints, the node, or the cancelled request id), so the same
alert always yields the same ids. :func:`decide` is that whole decision: pure, no I/O,
unit-tested without Kafka (``tests/unit/test_remediation.py``).

Why it is exactly-once (durability)
-----------------------------------

The worker's state per context (processed alert ids, pending requests) lives in memory
and in a compacted state topic of its own, ``<remediation_group>-state`` (key
``context_id``, value the context's state as JSON; created by the worker, compacted).
Each batch of alerts is one **Kafka transaction** (transactional id
``<remediation_group>-tx``): the batch's requests, the new state of every context it
touched, and the consumer group's offsets commit together or not at all. On start (and
on every partition assignment) the worker reads its state topic (``read_committed``)
and resumes from the committed offsets. A crash at any point therefore loses nothing
and repeats nothing: an aborted transaction's requests are invisible to
``read_committed`` readers and its alerts are read again, from the state that preceded
them. (faust's ``exactly_once`` is avoided for its open bugs, DESIGN.md §7.6; this is
aiokafka's transactional producer, no faust involved.)

Consequences for operators:

* read ``remediation-requests`` with ``isolation_level="read_committed"``, or you may see
  requests of aborted transactions;
* run one instance per group: a second instance with the same group shares its
  transactional id and fences the first (whose next transaction fails with
  ``ProducerFenced``: it exits 1), then takes over its partitions;
* a new group starts at the earliest alert, so alerts raised before the worker first ran
  are acted on (opens that were resolved meanwhile yield a request and its cancel).

Handlers
--------

Each request is passed, as a :class:`stream.wire.RemediationRequest`, to every handler
of ``CG_REMEDIATION_HANDLERS`` (comma-separated ``module:factory`` paths, in order;
default ``stream.remediation:TopicPublisher``, which writes the request to
``CG_REMEDIATION_TOPIC`` inside the transaction). A factory is called once with a
:class:`HandlerContext` and returns an object with ``handle(request)`` — sync or async —
and optionally ``close()``; see :class:`RemediationHandler`. Records a handler sends
with ``context.send(topic, value, key=...)`` are part of the batch's transaction
(exactly-once, like the requests); side effects outside Kafka are at-least-once (a
crash re-runs the batch): key them by ``request_id``. A handler that raises aborts the
batch's transaction and stops the worker (exit 1, the error on stderr); after the fix,
a restart retries the batch. A batch must finish within the transaction timeout (60 s):
keep slow work out of ``handle`` (hand it to a queue, keyed by ``request_id``).

Example handler (``CG_REMEDIATION_HANDLERS=stream.remediation:TopicPublisher,myteam.remediation:LogFreezes``)::

    # myteam/remediation.py
    import logging

    from stream.remediation import HandlerContext
    from stream.wire import RemediationRequest

    log = logging.getLogger("myteam.remediation")


    class LogFreezes:
        \"\"\"Tell the on-call channel about every frozen node; ignore the other kinds.\"\"\"

        def __init__(self, context: HandlerContext) -> None:
            self.seen: set[str] = set()  # request ids: side effects are at-least-once

        async def handle(self, request: RemediationRequest) -> None:
            if request.kind != "freeze" or request.request_id in self.seen:
                return
            self.seen.add(request.request_id)
            log.warning("frozen: %s / %s (alert %s, trigger %s)", request.context_id,
                        request.node_id, request.alert_id, request.trigger.event_id)

Errors (under :class:`stream.errors.GuardError`)::

    ConfigurationError   a handler path does not load, or a topic is missing: fix the
                         setting / run `python -m stream topics create`, start again
    HandlerFailed        a handler raised; the batch was rolled back. Fix the handler
                         (or its downstream) and restart: the batch is retried.

This module imports no Kafka client at import time: the pure part (:func:`decide`,
:func:`plan`) is usable and testable anywhere; the shell imports aiokafka when it runs.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from stream.errors import ConfigurationError, GuardError

if TYPE_CHECKING:  # pragma: no cover
    from aiokafka import AIOKafkaProducer

    from stream.settings import Settings
    from stream.wire import RemediationRequest

SCHEMA_VERSION = 1

#: alert action -> the request kind it asks for (other actions ask for nothing).
KIND_OF_ACTION: dict[str, str] = {"escalate": "refetch", "reject_subtree": "recompact", "freeze": "freeze"}
#: rules whose request kind is not their action's: an opaque summary (``escalate``) has
#: nothing to re-fetch — it must be summarized again, readably.
KIND_OF_RULE: dict[str, str] = {"unverifiable_checkpoint": "recompact"}


def kind_of(alert: Mapping[str, Any]) -> str | None:
    """The request kind an alert asks for (None: it asks for nothing)."""
    return KIND_OF_RULE.get(alert.get("rule")) or KIND_OF_ACTION.get(alert.get("action"))  # type: ignore[arg-type]

# ============================================================================ pure core


@dataclass(frozen=True, slots=True)
class ContextState:
    """What the worker remembers about one context.

    ``processed``: ids of every alert of the context already decided (redeliveries are
    ignored). ``pending``: request dicts emitted and not cancelled, in emission order.
    """

    processed: frozenset[str] = frozenset()
    pending: tuple[dict[str, Any], ...] = ()

    def to_json(self, context_id: str) -> dict[str, Any]:
        """JSON-ready value of the state topic (sorted ids: deterministic bytes)."""
        return {
            "schema_version": SCHEMA_VERSION,
            "context_id": context_id,
            "processed": sorted(self.processed),
            "pending": list(self.pending),
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> ContextState:
        return cls(frozenset(obj.get("processed") or ()), tuple(obj.get("pending") or ()))


EMPTY = ContextState()


def request_id(alert_id: str, kind: str, item: Any) -> str:
    """Deterministic request id: first 32 hex of sha256 over ``[alert_id, kind, item]``."""
    blob = json.dumps([alert_id, kind, item], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:32]


def _item(kind: str, *, referent: str | None, missing: list[str] | None, node_id: str, cancels: str | None) -> Any:
    """What one request is *about* (its identity within a case, and part of its id)."""
    if kind == "refetch":
        return referent
    if kind == "recompact":
        return missing
    if kind == "freeze":
        return node_id
    return cancels


def _identity(req: Mapping[str, Any]) -> str:
    item = _item(req["kind"], referent=req["referent"], missing=req["missing_constraints"],
                 node_id=req["node_id"], cancels=req["cancels"])
    return json.dumps([req["kind"], item], ensure_ascii=False, separators=(",", ":"))


def _request(
    alert: Mapping[str, Any],
    kind: str,
    *,
    referent: str | None = None,
    missing: list[str] | None = None,
    subtree: list[str] | None = None,
    cancels: str | None = None,
) -> dict[str, Any]:
    """One request dict, in the wire order of :class:`stream.wire.RemediationRequest`."""
    item = _item(kind, referent=referent, missing=missing, node_id=alert["node_id"], cancels=cancels)
    return {
        "schema_version": SCHEMA_VERSION,
        "type": "remediation_request",
        "request_id": request_id(alert["alert_id"], kind, item),
        "kind": kind,
        "context_id": alert["context_id"],
        "node_id": alert["node_id"],
        "rule": alert["rule"],
        "alert_id": alert["alert_id"],
        "referent": referent,
        "missing_constraints": missing,
        "subtree": subtree,
        "cancels": cancels,
        "trigger": dict(alert["trigger"]),
    }


def _desired(alert: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The requests an ``open`` alert asks for (its case's full desired set)."""
    kind = kind_of(alert)
    assert kind is not None  # decide() asks only for actionable alerts
    if kind == "refetch":
        return [_request(alert, kind, referent=a) for a in sorted(set(alert.get("orphans") or ()))]
    if kind == "recompact":
        missing = sorted(set(alert.get("missing_constraints") or ()))
        subtree = sorted(set(alert.get("subtree") or ()))
        return [_request(alert, kind, missing=missing, subtree=subtree)]
    return [_request(alert, kind)]


def is_actionable(alert: Mapping[str, Any]) -> bool:
    """Does this alert's action map to requests (and name a node)?"""
    return kind_of(alert) is not None and alert.get("node_id") is not None


def decide(state: ContextState, alert: Mapping[str, Any]) -> tuple[ContextState, list[dict[str, Any]]]:
    """The remediation decision: (context state, alert) -> (new state, requests).

    Pure: reads only its arguments, mutates nothing, the same input gives the same
    output. ``alert`` is an alert dict (DESIGN.md §3) of the state's context. Returns
    ``state`` itself (identical object) when the alert was already processed.
    """
    aid = alert["alert_id"]
    if aid in state.processed:
        return state, []
    processed = state.processed | {aid}
    if not is_actionable(alert):
        return ContextState(processed, state.pending), []
    case = (alert["node_id"], alert["rule"])
    mine = [r for r in state.pending if (r["node_id"], r["rule"]) == case]
    others = [r for r in state.pending if (r["node_id"], r["rule"]) != case]
    desired = _desired(alert) if alert["status"] == "open" else []
    desired_ids = {_identity(r) for r in desired}
    pending_ids = {_identity(r) for r in mine}
    kept = [r for r in mine if _identity(r) in desired_ids]
    cancels = [
        _request(alert, "cancel", referent=r["referent"], missing=r["missing_constraints"],
                 subtree=r["subtree"], cancels=r["request_id"])
        for r in mine if _identity(r) not in desired_ids
    ]
    new = [r for r in desired if _identity(r) not in pending_ids]
    return ContextState(processed, (*others, *kept, *new)), [*cancels, *new]


def plan(
    alerts: Iterable[Mapping[str, Any]], states: Mapping[str, ContextState] | None = None
) -> tuple[dict[str, ContextState], list[dict[str, Any]]]:
    """Fold :func:`decide` over alerts in order (per context): (final states, all requests)."""
    out_states = dict(states or {})
    requests: list[dict[str, Any]] = []
    for alert in alerts:
        ctx = alert["context_id"]
        out_states[ctx], reqs = decide(out_states.get(ctx, EMPTY), alert)
        requests.extend(reqs)
    return out_states, requests


# ============================================================================ handlers


class HandlerFailed(GuardError):
    """A remediation handler raised; the batch's transaction was aborted (see module doc)."""


class HandlerContext:
    """What a handler factory receives: the settings, and :meth:`send` to publish to
    Kafka inside the batch's transaction.

    ``producer`` is the worker's transactional producer itself; prefer :meth:`send`,
    whose delivery the worker checks before it commits (aiokafka can commit a
    transaction whose batch failed, so unchecked sends could be lost).
    """

    def __init__(self, settings: Settings, producer: AIOKafkaProducer) -> None:
        self.settings = settings
        self.producer = producer
        self._deliveries: list[Any] = []

    async def send(self, topic: str, value: bytes, *, key: bytes | None = None) -> None:
        """Enqueue one record in the batch's transaction (the worker awaits its delivery)."""
        self._deliveries.append(await self.producer.send(topic, value, key=key))

    async def delivered(self) -> None:
        """Wait until every record sent since the last call is acknowledged; raise the
        first delivery error (the worker then aborts the transaction)."""
        pending, self._deliveries = self._deliveries, []
        if pending:
            await asyncio.gather(*pending)


@runtime_checkable
class RemediationHandler(Protocol):
    """Acts on remediation requests. Built by a factory ``factory(context: HandlerContext)``.

    ``handle`` may be sync or ``async``; it is called once per request, in order, inside
    the batch's transaction. Raising aborts the batch and stops the worker. An optional
    ``close()`` (sync or async) is called on shutdown.
    """

    def handle(self, request: RemediationRequest) -> None | Awaitable[None]: ...


class TopicPublisher:
    """The built-in handler: each request to ``CG_REMEDIATION_TOPIC``, keyed by its
    ``context_id``, inside the worker's transaction."""

    def __init__(self, context: HandlerContext) -> None:
        self._context = context
        self.topic = context.settings.remediation_topic

    async def handle(self, request: RemediationRequest) -> None:
        from stream.wire import encode_remediation_request

        # Only enqueued here: the worker waits for every delivery before it commits.
        await self._context.send(self.topic, encode_remediation_request(request),
                                 key=request.context_id.encode("utf-8"))


def load_handlers(spec: str, context: HandlerContext) -> list[tuple[str, RemediationHandler]]:
    """Build the handlers of ``spec`` (comma-separated ``module:factory`` or ``module.factory``).

    Raises ConfigurationError naming the path when it does not import, is not callable
    or builds an object without ``handle``.
    """
    handlers: list[tuple[str, RemediationHandler]] = []
    for path in (p.strip() for p in spec.split(",")):
        if not path:
            continue
        module_name, sep, attr = path.partition(":")
        if not sep:
            module_name, _, attr = path.rpartition(".")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigurationError(
                f"remediation handler {path!r} does not load ({type(exc).__name__}: {exc}); "
                "fix CG_REMEDIATION_HANDLERS (module:factory, comma-separated)"
            ) from None
        if not callable(factory):
            raise ConfigurationError(f"remediation handler {path!r} is not a class or function")
        handler = factory(context)
        if not callable(getattr(handler, "handle", None)):
            raise ConfigurationError(f"remediation handler {path!r} built an object without handle(request)")
        handlers.append((path, handler))
    if not handlers:
        raise ConfigurationError("CG_REMEDIATION_HANDLERS names no handler")
    return handlers


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


# ============================================================================ shell (Kafka)


def state_topic(settings: Settings) -> str:
    """The worker's compacted state topic: ``<remediation_group>-state``."""
    return f"{settings.remediation_group}-state"


def transactional_id(settings: Settings) -> str:
    return f"{settings.remediation_group}-tx"


def encode_state(context_id: str, state: ContextState) -> bytes:
    return json.dumps(state.to_json(context_id), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


async def load_states(settings: Settings) -> dict[str, ContextState]:
    """Read the state topic to its end (``read_committed``, no group): context -> state."""
    from aiokafka import TopicPartition

    from stream.kafka_clients import consumer, partitions_for, start_client

    topic = state_topic(settings)
    c = consumer(settings, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
                 isolation_level="read_committed")
    await start_client(settings, c)
    states: dict[str, ContextState] = {}
    try:
        parts = await partitions_for(settings, c, topic)
        tps = [TopicPartition(topic, p) for p in sorted(parts)]
        if not tps:
            return states
        c.assign(tps)
        await c.seek_to_beginning(*tps)
        ends = await c.end_offsets(tps)  # the last stable offset under read_committed
        remaining = {tp for tp in tps if await c.position(tp) < ends[tp]}
        while remaining:
            batch = await c.getmany(*remaining, timeout_ms=1000)
            for msgs in batch.values():
                for m in msgs:
                    ctx = m.key.decode("utf-8")
                    states[ctx] = ContextState.from_json(json.loads(m.value)) if m.value else EMPTY
            for tp in list(remaining):
                if await c.position(tp) >= ends[tp]:
                    remaining.discard(tp)
    finally:
        await c.stop()
    return states


@dataclass
class Stats:
    alerts: int = 0
    repeats: int = 0
    unreadable: int = 0
    requests: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(self.requests.items())) or "none"
        return (f"remediate: {self.alerts} alerts read ({self.repeats} already processed, "
                f"{self.unreadable} unreadable), requests: {kinds}")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _decode_alert(value: bytes | None) -> dict[str, Any] | None:
    from pydantic import ValidationError

    from stream.wire import Alert

    try:
        obj = json.loads(value) if value is not None else None
        Alert.model_validate(obj)
    except (TypeError, ValueError, ValidationError):
        return None
    return obj


class RemediationWorker:
    """The consume-decide-produce loop (see the module docstring for the guarantees)."""

    def __init__(self, settings: Settings, *, log: Callable[[str], None] = _stderr) -> None:
        self.settings = settings
        self.log = log
        self.states: dict[str, ContextState] = {}
        self.stats = Stats()
        self._reload = False  # set by the rebalance listener: read the state topic before going on

    async def _check_topics(self, handlers: list[tuple[str, RemediationHandler]]) -> list[str]:
        """The alerts topic (and the requests topic, when publishing) must exist; the
        state topic is the worker's own: created here, compacted. Returns the topics
        the worker writes."""
        from stream.kafka_clients import create_topics, require_topics

        s = self.settings
        published = sorted({h.topic for _, h in handlers if isinstance(h, TopicPublisher)})
        await require_topics(s, [s.alerts_topic, *published, *(() if s.create_topics else (state_topic(s),))])
        if s.create_topics:
            await create_topics(s, [state_topic(s)], s.partitions, compacted=True)
        return [*published, state_topic(s)]

    async def run(self, stop: asyncio.Event) -> Stats:
        """Process alerts until ``stop`` is set; return the counters."""
        from aiokafka.abc import ConsumerRebalanceListener

        from stream.kafka_clients import consumer, producer, start_client

        s = self.settings
        worker = self

        class _ReloadOnAssign(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked):  # noqa: ANN001
                pass

            def on_partitions_assigned(self, assigned):  # noqa: ANN001
                worker._reload = True  # new partitions: read the state topic again first

        prod = producer(s, transactional_id=transactional_id(s), enable_idempotence=True)
        await start_client(s, prod)  # InitProducerId: fences an older instance and aborts its open transaction
        handlers: list[tuple[str, RemediationHandler]] = []
        cons = None
        try:
            context = HandlerContext(s, prod)
            handlers = load_handlers(s.remediation_handlers, context)
            written = await self._check_topics(handlers)
            # Track the written topics' metadata explicitly. aiokafka starts with "all
            # topics" and narrows to the tracked set when a new topic (the state topic)
            # is first sent to, dropping the others from its metadata: their batches
            # then never leave (found on a fresh broker, aiokafka 0.14.0).
            await prod.client.set_topics(written)
            cons = consumer(s, group_id=s.remediation_group, enable_auto_commit=False,
                            auto_offset_reset="earliest", isolation_level="read_committed")
            await start_client(s, cons)
            cons.subscribe([s.alerts_topic], listener=_ReloadOnAssign())
            self.log(f"remediate: group {s.remediation_group} on {s.alerts_topic} -> "
                     f"{', '.join(p for p, _ in handlers)} (state {state_topic(s)})")
            while not stop.is_set():
                batch = await cons.getmany(timeout_ms=500)
                if self._reload:
                    self._reload = False
                    self.states = await load_states(s)
                    self.log(f"remediate: ready: state of {len(self.states)} contexts loaded")
                if batch:
                    await self._process(prod, context, handlers, batch)
        finally:
            if cons is not None:
                await cons.stop()
            for _, h in handlers:
                close = getattr(h, "close", None)
                if callable(close):
                    await _maybe_await(close())
            await prod.stop()
        return self.stats

    async def _process(self, prod: AIOKafkaProducer, context: HandlerContext, handlers, batch) -> None:
        """One batch = one transaction: requests + touched states + offsets."""
        from stream.wire import RemediationRequest

        s = self.settings
        touched: dict[str, ContextState] = {}
        stats = Stats()
        done: list[str] = []  # log lines, printed once the transaction committed
        async with prod.transaction():
            for tp in sorted(batch, key=lambda t: (t.topic, t.partition)):
                for m in batch[tp]:
                    stats.alerts += 1
                    alert = _decode_alert(m.value)
                    if alert is None:
                        stats.unreadable += 1
                        self.log(f"remediate: skipping unreadable alert at {m.topic}[{m.partition}]@{m.offset}")
                        continue
                    ctx = alert["context_id"]
                    before = touched.get(ctx) or self.states.get(ctx, EMPTY)
                    after, requests = decide(before, alert)
                    if after is before:
                        stats.repeats += 1
                        continue
                    touched[ctx] = after
                    for req in requests:
                        model = RemediationRequest.model_validate(req)
                        for path, h in handlers:
                            try:
                                await _maybe_await(h.handle(model))
                            except Exception as exc:
                                raise HandlerFailed(
                                    f"handler {path} failed on {model.kind} request {model.request_id} "
                                    f"({ctx} / {model.node_id}, alert {model.alert_id}): "
                                    f"{type(exc).__name__}: {exc}; the batch was rolled back, "
                                    "fix the handler and restart to retry it"
                                ) from exc
                        stats.requests[model.kind] = stats.requests.get(model.kind, 0) + 1
                        what = _what(model)
                        done.append(f"remediate: {model.kind} {ctx} / {model.node_id}"
                                    f"{' ' + what if what else ''} [{model.request_id}]")
            for ctx, st in touched.items():
                await context.send(state_topic(s), encode_state(ctx, st), key=ctx.encode("utf-8"))
            await context.delivered()  # a failed delivery raises here: the transaction aborts
            offsets = {tp: msgs[-1].offset + 1 for tp, msgs in batch.items() if msgs}
            await prod.send_offsets_to_transaction(offsets, s.remediation_group)
        # committed: only now does the in-memory state move on
        self.states.update(touched)
        for line in done:
            self.log(line)
        self.stats.alerts += stats.alerts
        self.stats.repeats += stats.repeats
        self.stats.unreadable += stats.unreadable
        for k, n in stats.requests.items():
            self.stats.requests[k] = self.stats.requests.get(k, 0) + n


def _what(req: RemediationRequest) -> str:
    if req.kind == "refetch":
        return str(req.referent)
    if req.kind == "recompact":
        return f"missing {req.missing_constraints} subtree {req.subtree}"
    if req.kind == "cancel":
        return f"cancels {req.cancels}"
    return ""


async def run_worker(settings: Settings, stop: asyncio.Event | None = None) -> Stats:
    """Run :class:`RemediationWorker` until ``stop`` (or SIGINT/SIGTERM) is set."""
    import signal

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
            installed.append(sig)
        except (NotImplementedError, RuntimeError):  # not the main thread / not supported
            pass
    try:
        return await RemediationWorker(settings).run(stop)
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
