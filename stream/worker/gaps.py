"""Input records faust did not deliver: found by offset and read back, never skipped.

faust-streaming 0.15.3 can move its fetch position past input records without handing
them to the agent (``Consumer.getmany`` drops records of a partition not active at that
moment and abandons the rest of a fetch when flow stops or the generation changes).
The worker knows, per input partition, the next offset its state must see (the input
offsets of the partition's durable state, :mod:`stream.worker.durability`); a record
past it reveals a gap, and :meth:`Gaps.read` fetches exactly that range with a
group-less consumer before the record is applied. It retries until it has the range
— it never gives up and moves on — except for records the broker no longer has
(deleted by retention), which are reported as lost. A record below the next offset is
already in the state and is skipped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from aiokafka import TopicPartition

from stream.kafka_clients import admin, consumer
from stream.settings import Settings

log = logging.getLogger("checkpoint_guard.gaps")


class FetchedMessage:
    """A record read back, shaped like the records the consumer delivers (``timestamp`` in
    ms, as aiokafka's: the topic merge compares it with theirs)."""

    __slots__ = ("topic", "partition", "offset", "key", "value", "timestamp")

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                 timestamp: int | None = None) -> None:
        self.topic, self.partition, self.offset = topic, partition, offset
        self.key, self.value, self.timestamp = key, value, timestamp


class Gaps:
    """Reads input ranges faust skipped, and where a partition without state starts."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: Any = None
        self._creating = asyncio.Lock()  # partitions restore concurrently: one client, not one each
        self.repaired = 0
        self.lost = 0

    async def _consumer(self) -> Any:
        async with self._creating:
            if self._client is None:  # group-less: it never joins the group nor commits
                self._client = await self._new_consumer()
        return self._client

    async def _new_consumer(self) -> Any:
        c = consumer(self.settings, group_id=None, enable_auto_commit=False,
                     max_partition_fetch_bytes=max(1 << 20, self.settings.max_request_bytes))
        try:
            await c.start()
        except BaseException:
            await c.stop()
            raise
        return c

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.stop()

    async def start_offset(self, topic: str, partition: int) -> int:
        """Where a partition with no state of its own starts: the group's committed offset
        (a worker before this design committed it), else the start of the partition."""
        tp = TopicPartition(topic, partition)

        async def committed() -> int | None:
            client = admin(self.settings)
            try:
                await client.start()
                found = await client.list_consumer_group_offsets(self.settings.app_id, partitions=[tp])
            finally:
                await client.close()
            meta = found.get(tp)
            return meta.offset if meta is not None and meta.offset >= 0 else None

        offset: int | None = await self._retrying(committed)
        if offset is not None:
            return offset
        c = await self._retrying(self._consumer)
        return int((await self._retrying(lambda: c.beginning_offsets([tp])))[tp])

    async def read(self, topic: str, partition: int, start: int, end: int) -> list[FetchedMessage]:
        """The records at offsets ``[start, end)`` (transaction markers leave holes)."""
        c = await self._retrying(self._consumer)
        tp = TopicPartition(topic, partition)
        first = (await self._retrying(lambda: c.beginning_offsets([tp])))[tp]
        if first > start:
            self.lost += first - start
            log.error("%s[%d] offsets %d..%d were deleted by the broker (retention) before this worker read "
                      "them: those input records are lost", topic, partition, start, first - 1)
            start = first
        out: list[FetchedMessage] = []
        c.assign([tp])
        c.seek(tp, start)
        while start < end and await self._retrying(lambda: c.position(tp)) < end:
            batch = await self._retrying(lambda: c.getmany(tp, timeout_ms=500))
            for r in batch.get(tp, ()):
                if start <= r.offset < end:
                    out.append(FetchedMessage(r.topic, r.partition, r.offset, r.key, r.value,
                                              r.timestamp))
        self.repaired += len(out)
        log.warning("faust skipped %s[%d] offsets %d..%d; read %d record(s) there and processing them now",
                    topic, partition, start, end - 1, len(out))
        return out

    @staticmethod
    async def _retrying(call: Any) -> Any:
        delay = 0.5
        while True:
            try:
                return await call()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # broker unreachable: wait, never skip
                log.warning("reading input records back failed (%r); retrying in %.1fs", exc, delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
