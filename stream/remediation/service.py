"""The remediation worker's Kafka shell: consume alerts, decide, produce requests in one transaction.

Each batch of alerts, the requests it asks for, the new state of every context it touched and
the group's offsets commit together or not at all (exactly-once; docs/REMEDIATION.md "Why it is
exactly-once"). aiokafka is imported when the worker runs, never at import time.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from aiokafka import AIOKafkaProducer

    from stream.settings import Settings
    from stream.wire import RemediationRequest

from stream.remediation.decide import EMPTY, ContextState, decide
from stream.remediation.handlers import (
    HandlerContext,
    HandlerFailed,
    RemediationHandler,
    TopicPublisher,
    load_handlers,
    maybe_await,
)


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
                    await maybe_await(close())
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
                                await maybe_await(h.handle(model))
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
