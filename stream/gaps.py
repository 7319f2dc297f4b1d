"""Input records faust skipped: found by offset and fetched, so none is lost.

faust-streaming 0.15.3 can advance past input records without handing them to the
agent: its ``Consumer.getmany`` drops records of a partition that is not active at that
moment (e.g. while tables recover after a rebalance) or abandons the rest of a fetch
when flow stops or the generation changes, while aiokafka's fetch position has already
moved on; the next record it does deliver then opens an offset *gap*, which faust's
``_add_gap`` counts as acknowledged, and the commit moves past records nobody
processed. Our crash tests lost alerts that way (kill -9, restart, rebalance).

:class:`OffsetGuard` makes that impossible to miss: per input partition it knows the next
offset the agent must see (from the group's committed offset after each assignment,
then from every record processed), and when a batch starts past it, it reads the
missing records itself (a group-less read of exactly that range, nothing committed)
and puts them in the batch ahead of the record that revealed the gap. A record that
faust does deliver later after all is a duplicate delivery, which the engine ignores
(DESIGN.md §4: a repeated ``event_id`` changes nothing).

The same bookkeeping also commits: faust's own commit can stall for minutes after such
a gap (its acked-offset list no longer starts at its committed offset), so the agent
commits, twice a second, the offsets below which it has processed and recorded every
record (:meth:`OffsetGuard.to_commit`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from aiokafka import TopicPartition

from stream.kafka_clients import consumer
from stream.settings import Settings

log = logging.getLogger("checkpoint_guard.gaps")

#: Give up on a range that yields no progress for this long (seconds); logged as an error.
FETCH_STALL_SECONDS = 30.0


class FetchedMessage:
    """A record read by :class:`OffsetGuard`, shaped like faust's ``Message``."""

    __slots__ = ("topic", "partition", "offset", "key", "value", "timestamp", "__weakref__")

    def __init__(self, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
                 timestamp: float | None = None) -> None:
        self.topic, self.partition, self.offset = topic, partition, offset
        self.key, self.value, self.timestamp = key, value, timestamp


class FetchedEvent:
    """Stands in for a faust ``Event`` (``.message``) in a batch; can be faust's current event."""

    __slots__ = ("message", "__weakref__")

    def __init__(self, message: FetchedMessage) -> None:
        self.message = message


class OffsetGuard:
    """Per input partition, the next offset due; fills gaps before the agent runs a batch.

    ``reset()`` after every assignment (offsets then restart from the group's committed
    ones). ``fill(events)`` returns the batch with any skipped records inserted (as
    :class:`FetchedEvent`) ahead of the event that revealed them, in offset order.
    ``repaired`` counts records fetched so (also exported as a metric by the agent).
    """

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._next: dict[tuple[str, int], int] = {}
        #: per partition, the offset below which every record is processed and recorded
        self._done: dict[tuple[str, int], int] = {}
        self._committed: dict[tuple[str, int], int] = {}
        self._client: Any = None
        self.repaired = 0

    def reset(self) -> None:
        self._next.clear()
        self._done.clear()
        self._committed.clear()

    def processed(self, events: Sequence[Any]) -> None:
        """Call after a batch's state is written: its records are safe to commit."""
        done = self._done
        for ev in events:
            m = ev.message
            key = (m.topic, m.partition)
            if m.offset + 1 > done.get(key, -1):
                done[key] = m.offset + 1

    def to_commit(self) -> dict[tuple[str, int], int]:
        """Offsets (next to read) processed since the last :meth:`committed` and not yet committed.

        Every record below such an offset went through the agent — delivered by faust or
        read back here — so committing it is at-least-once safe.
        """
        return {k: v for k, v in self._done.items() if self._committed.get(k, -1) < v}

    def committed(self, offsets: dict[tuple[str, int], int]) -> None:
        self._committed.update(offsets)

    async def close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.stop()

    async def _consumer(self) -> Any:
        if self._client is None:
            # The group id only to read its committed offsets: this client never joins
            # the group (manual assignment) and never commits.
            c = consumer(self.settings, group_id=self.settings.app_id, enable_auto_commit=False,
                         max_partition_fetch_bytes=max(1 << 20, self.settings.max_output_bytes))
            await c.start()
            self._client = c
        return self._client

    async def _start(self, topic: str, partition: int) -> int:
        c = await self._consumer()
        tp = TopicPartition(topic, partition)
        committed = await c.committed(tp)
        if committed is not None and committed >= 0:
            return committed
        return (await c.beginning_offsets([tp]))[tp]

    async def _fetch(self, topic: str, partition: int, start: int, end: int) -> list[FetchedEvent]:
        """The records at offsets [start, end) (control records leave holes)."""
        c = await self._consumer()
        tp = TopicPartition(topic, partition)
        c.assign([tp])
        c.seek(tp, start)
        out: list[FetchedEvent] = []
        last_progress = time.monotonic()
        while True:
            position = await c.position(tp)
            if position >= end:
                break
            batch = await c.getmany(tp, timeout_ms=500)
            records = batch.get(tp, [])
            if records:
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > FETCH_STALL_SECONDS:
                log.error("could not read %s[%d] offsets %d..%d (stuck at %d); continuing without them",
                          topic, partition, start, end - 1, position)
                break
            for r in records:
                if start <= r.offset < end:
                    out.append(FetchedEvent(FetchedMessage(r.topic, r.partition, r.offset, r.key, r.value,
                                                           r.timestamp / 1000.0 if r.timestamp else None)))
        c.assign([])
        return out

    async def fill(self, events: Sequence[Any]) -> list[Any]:
        out: list[Any] = []
        for ev in events:
            m = ev.message
            key = (m.topic, m.partition)
            due = self._next.get(key)
            if due is None:
                due = await self._start(m.topic, m.partition)
            if m.offset > due:
                fetched = await self._fetch(m.topic, m.partition, due, m.offset)
                log.warning("faust skipped %s[%d] offsets %d..%d; read %d record(s) there and "
                            "processing them now", m.topic, m.partition, due, m.offset - 1, len(fetched))
                self.repaired += len(fetched)
                out.extend(fetched)
            self._next[key] = max(due, m.offset + 1)
            out.append(ev)
        return out
