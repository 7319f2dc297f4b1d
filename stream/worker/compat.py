"""Every use of a private faust (or aiokafka) name, in one module, each pinned by a test.

faust-streaming 0.15.3 stays the framework (app, agent, consumer group, rebalancing,
web views, CLI); this module changes three things where faust offers no setting, and
``tests/unit/test_compat.py`` fails when the installed faust's overridden code changes:

* **Delivery** (:class:`InlineConsumer`, through faust's transport entry point
  ``faust.transports``: ``cgkafka://``): faust's fetcher awaits
  ``wait_first(callback(message), suspend_flow.wait())`` per record — four tasks made
  and three cancelled per event, half of a no-op agent's cost. When nothing can block
  (flow active, no rebalance starting, room in the agent's queue) the record is
  delivered inline; otherwise the stock path. ``fetch_max_wait_ms`` (hard-coded 1500 ms)
  becomes ``CG_FETCH_MAX_WAIT_MS``.
* **Commits**: faust's own offset commits (timer, acks, rebalance) are disabled; the
  durability object is the only committer (:func:`commit_offsets`).
* **Batches** (:class:`BatchStream`, the app's ``Stream`` class): ``take_events`` reads
  the agent's queue directly, a batch at a time, instead of faust's per-event iterator
  (one ``sleep(0)``, sensors and a context variable per event).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, cast

import faust
from faust.transport.drivers import aiokafka as faust_aiokafka
from faust.types import TP

#: The broker URL scheme of :class:`Transport` (registered in pyproject.toml).
SCHEME = "cgkafka"


def broker_url(bootstrap: str) -> str:
    """``kafka://h:p;h:p`` (or ``h:p``) -> the same servers with our transport's scheme."""
    return ";".join(f"{SCHEME}://{part.split('://', 1)[-1]}" for part in bootstrap.replace(",", ";").split(";"))


class InlineConsumerThread(faust_aiokafka.AIOKafkaConsumerThread):
    """faust's aiokafka consumer thread with ``fetch_max_wait_ms`` from the settings."""

    def _create_worker_consumer(self, transport: Any) -> Any:
        consumer = super()._create_worker_consumer(transport)
        wait = getattr(self.consumer.app, "fetch_max_wait_ms", None)
        if wait is not None:
            consumer._fetch_max_wait_ms = int(wait)  # read by AIOKafkaConsumer.start() for its Fetcher
        return consumer


class InlineConsumer(faust_aiokafka.Consumer):
    """faust's aiokafka Consumer: inline delivery, no commits of its own (module doc)."""

    #: The agent's input queue (set when the agent starts): inline delivery needs room in it.
    inline_queue: Any = None

    def _new_consumer_thread(self) -> InlineConsumerThread:
        return InlineConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        return False  # the durability object commits (stream.worker.durability)

    async def force_commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        return False

    def _can_deliver_inline(self) -> bool:
        queue = self.inline_queue
        return (
            queue is not None
            and not self.suspend_flow.is_set()
            and self.app.flow_control.is_active()
            and queue.qsize() < queue.maxsize
        )

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover - run by the worker
        # faust.transport.consumer.Consumer._drain_messages (0.15.3) with the per-record
        # wait_first replaced by an inline call when nothing can block, without acks,
        # gaps and commits (the durability object owns offsets).
        callback = self.callback
        getmany = self.getmany
        consumer_should_stop = self._stopped.is_set
        fetcher_should_stop = fetcher._stopped.is_set
        get_read_offset = self._read_offset.__getitem__
        set_read_offset = self._read_offset.__setitem__
        can_inline = self._can_deliver_inline
        yield_every = 100
        since_yield = 0
        sleep = asyncio.sleep
        try:
            while not (consumer_should_stop() or fetcher_should_stop()):
                ait = cast(Any, getmany(timeout=1.0))
                await self.sleep(0)
                if self.should_stop:
                    continue
                async for tp, message in ait:
                    since_yield += 1
                    if since_yield > yield_every:
                        await sleep(0)
                        since_yield = 0
                    offset = message.offset
                    r_offset = get_read_offset(tp)
                    if r_offset is not None and offset < r_offset:
                        continue  # already delivered (faust's own guard)
                    if can_inline():
                        await callback(message)
                    else:
                        await self.wait_first(callback(message), self.suspend_flow.wait())
                    set_read_offset(tp, offset)
        except self.consumer_stopped_errors:
            if self.transport.app.should_stop:
                return
            raise
        except asyncio.CancelledError:
            if self.transport.app.should_stop:
                return
            raise


class Transport(faust_aiokafka.Transport):
    """faust's aiokafka transport with :class:`InlineConsumer`."""

    Consumer = InlineConsumer


class BatchStream(faust.Stream):
    """A Stream whose ``take_events`` reads the agent's queue a batch at a time."""

    async def take_events(self, max_: int, within: Any) -> AsyncGenerator[Sequence[Any], None]:
        await self.maybe_start()
        channel = cast(Any, self.channel).__aiter__()  # a topic registers with the conductor here
        queue = channel.queue
        consumer = self.app.consumer
        if isinstance(consumer, InlineConsumer):
            consumer.inline_queue = queue
        wait = float(within) if within else 0.0
        get, get_nowait, empty = queue.get, queue.get_nowait, queue.empty
        while not self.should_stop:
            events = [await get()]
            while len(events) < max_:
                if empty():
                    if not wait:
                        break
                    try:  # a little longer for a fuller batch (CG_BATCH_WITHIN)
                        events.append(await asyncio.wait_for(get(), wait))
                    except asyncio.TimeoutError:
                        break
                    continue
                events.append(get_nowait())
            yield events


async def commit_offsets(app: Any, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit the consumer group's offsets (next offset to read per input partition)
    through the group member, for partitions still assigned to it; raises on failure."""
    thread = app.consumer._thread
    consumer = thread._ensure_consumer()
    from aiokafka.structs import OffsetAndMetadata, TopicPartition

    assigned = consumer.assignment()
    ours = {TopicPartition(t, p): OffsetAndMetadata(o, "") for (t, p), o in offsets.items()
            if TopicPartition(t, p) in assigned}
    if ours:
        await thread.call_thread(consumer.commit, ours)


async def seek(app: Any, offsets: Mapping[tuple[str, int], int]) -> None:
    """Move the consumer to these offsets (public faust API; here for symmetry)."""
    for (t, p), o in offsets.items():
        await app.consumer.seek(TP(t, p), o)


def highwater(app: Any, topic: str, partition: int) -> int | None:
    """The consumer's last-fetched high watermark of an input partition (None if unknown)."""
    consumer = app.consumer
    if consumer is None:
        return None
    try:
        return consumer.highwater(TP(topic, partition))
    except Exception:  # not assigned / not fetched yet
        return None


def consumer_started(app: Any) -> bool:
    return getattr(app, "_consumer", None) is not None
