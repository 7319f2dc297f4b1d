"""Every use of a private faust (or aiokafka) name, in one module, each pinned by a test.

faust-streaming 0.15.3 stays the framework (app, agent, consumer group, rebalancing,
web views, CLI); this module changes three things where faust offers no setting, and
``tests/unit/test_compat.py`` fails when the installed faust's overridden code changes:

* **Delivery** (:class:`InlineConsumer`, through faust's transport entry point
  ``faust.transports``: ``cgkafka://``): faust's fetcher awaits
  ``wait_first(callback(message), suspend_flow.wait())`` per record — four tasks made
  and three cancelled per event, half of a no-op agent's cost — then builds a Message
  and an Event per record. Here a fetch's records of the agent's topics go to its queue
  as one list when nothing can block (flow active, no rebalance starting, room in the
  queue; otherwise the stock wait); other records keep the stock path.
  ``fetch_max_wait_ms`` (hard-coded 1500 ms) becomes ``CG_FETCH_MAX_WAIT_MS``.
* **Commits**: faust's own offset commits (timer, acks, rebalance) are disabled; the
  durability object is the only committer (:func:`commit_offsets`).
* **Batches** (:class:`BatchStream`, the app's ``Stream`` class): ``take_events`` reads
  the agent's queue directly and yields lists of input records, instead of faust's
  per-event iterator (one ``sleep(0)``, sensors and a context variable per event).
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
    """faust's aiokafka Consumer: batch delivery, no commits of its own (module doc)."""

    #: The agent's input queue and topics (set when the agent starts): their records go
    #: straight to the queue, a fetch at a time.
    inline_queue: Any = None
    inline_topics: frozenset[str] = frozenset()

    def _new_consumer_thread(self) -> InlineConsumerThread:
        return InlineConsumerThread(self, loop=self.loop, beacon=self.beacon)

    async def commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        return False  # the durability object commits (stream.worker.durability)

    async def force_commit(self, topics: Any = None, start_new_transaction: bool = True) -> bool:
        return False

    async def _drain_messages(self, fetcher: Any) -> None:  # pragma: no cover - run by the worker
        # faust.transport.consumer.Consumer._drain_messages (0.15.3), rebuilt around
        # _wait_next_records: a fetch's records of the agent's topics go to its queue as
        # one list (no per-record Message, Event, decode, task); any other record takes
        # the stock path (callback under wait_first). No acks, gaps or commits: the
        # durability object owns offsets and reads back what a rebalance dropped.
        callback = self.callback
        to_message = self._to_message
        consumer_should_stop = self._stopped.is_set
        fetcher_should_stop = fetcher._stopped.is_set
        read_offset = self._read_offset
        buffered = self._buffered_partitions
        app = self.app
        try:
            while not (consumer_should_stop() or fetcher_should_stop()):
                records, active = await self._wait_next_records(1.0)
                await self.sleep(0)
                if not records or self.should_stop:
                    continue
                if not self.flow_active:  # a rebalance began: back to the committed offsets, as faust does
                    await self.perform_seek()
                    continue
                # Records fetched across a generation change are delivered all the same
                # (faust drops them): the runtime skips what the state covers or does not
                # own, and a record dropped here would be lost until a later one came.
                queue, fast = self.inline_queue, self.inline_topics
                for tp, recs in records.items():
                    if not recs or (active is not None and tp not in active and tp not in buffered):
                        continue
                    r_offset = read_offset[tp]
                    if r_offset is not None and recs[0].offset < r_offset:
                        recs = [r for r in recs if r.offset >= r_offset]
                        if not recs:
                            continue
                    if queue is not None and tp.topic in fast:
                        if (queue.qsize() < queue.maxsize and not self.suspend_flow.is_set()
                                and app.flow_control.is_active()):
                            queue.put_nowait(recs)
                        else:
                            await self.wait_first(queue.put(recs), self.suspend_flow.wait())
                    else:
                        for record in recs:
                            await self.wait_first(callback(to_message(tp, record)), self.suspend_flow.wait())
                    read_offset[tp] = recs[-1].offset
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
    """A Stream whose ``take_events`` yields lists of input records (``topic``,
    ``partition``, ``offset``, ``key``, ``value``) read from the agent's queue: the
    fetches :class:`InlineConsumer` put there, and any faust Event (its message)."""

    async def take_events(self, max_: int, within: Any) -> AsyncGenerator[Sequence[Any], None]:
        await self.maybe_start()
        channel = cast(Any, self.channel).__aiter__()  # a topic registers with the conductor here
        queue = channel.queue
        consumer = self.app.consumer
        if isinstance(consumer, InlineConsumer):
            consumer.inline_queue = queue
            consumer.inline_topics = frozenset(getattr(channel, "topics", ()) or ())
        wait = float(within) if within else 0.0
        get, get_nowait, empty = queue.get, queue.get_nowait, queue.empty
        while not self.should_stop:
            batch: list[Any] = []
            try:
                _add(batch, await get())
                while len(batch) < max_:
                    if empty():
                        if not wait:
                            break
                        try:  # a little longer for a fuller batch (CG_BATCH_WITHIN)
                            _add(batch, await asyncio.wait_for(get(), wait))
                        except asyncio.TimeoutError:
                            break
                        continue
                    _add(batch, get_nowait())
            except StopAsyncIteration:  # faust stops the actor (Actor.cancel throws it in)
                if batch:
                    yield batch
                return
            yield batch


def _add(batch: list[Any], item: Any) -> None:
    if isinstance(item, list):
        batch.extend(item)
    else:  # a faust Event from the stock path
        batch.append(item.message)


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
