"""Where a :class:`~stream.client.Guard` sends its records.

* :class:`KafkaTransport` (the default): one idempotent producer
  (:func:`stream.kafka_clients.idempotent_producer`: acks=all, ``enable_idempotence``,
  SSL/SASL from the settings), records keyed by the UTF-8 ``context_id`` — so a
  context's events of both kinds land on the same partition number of the two input
  topics (same partition count, same default partitioner), as the worker requires.
* :class:`MemoryTransport`: keeps the records in memory, in send order, each with the
  offset it would have had on its (topic, partition 0). For tests and dry runs:
  ``transport.jsonl()`` is what ``python -m stream replay -`` reads.

A transport's ``send`` returns a future of the record's metadata (an object with
``partition`` and ``offset``); it raises, or the future fails, when the record could not
be delivered.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any, NamedTuple, Protocol

from stream.settings import Settings


class Transport(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[Any]: ...


class KafkaTransport:
    """Records to Kafka through one idempotent producer (module docstring)."""

    def __init__(self, settings: Settings, **producer_kwargs: Any) -> None:
        self.settings = settings
        self._kwargs = producer_kwargs
        self._producer: Any = None

    async def start(self) -> None:
        from stream.kafka_clients import client_errors, idempotent_producer, start_client

        with client_errors(self.settings, "the Guard cannot reach Kafka"):  # KafkaUnavailable, one line
            self._producer = await start_client(self.settings, idempotent_producer(self.settings, **self._kwargs))

    async def stop(self) -> None:
        if self._producer is not None:
            producer, self._producer = self._producer, None
            await producer.stop()

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[Any]:
        if self._producer is None:
            raise RuntimeError("the Guard is not started: use it as a context manager or call start() first")
        future: asyncio.Future[Any] = await self._producer.send(topic, value, key=key)
        return future  # resolves to aiokafka's RecordMetadata


class RecordPosition(NamedTuple):
    """Where a record landed (the fields of aiokafka's RecordMetadata the client uses)."""

    partition: int
    offset: int


class MemoryTransport:
    """Records kept in memory, in send order (module docstring). ``records`` holds
    ``(topic, key, value)`` tuples; offsets count per topic from 0, partition 0."""

    def __init__(self) -> None:
        self.records: list[tuple[str, bytes, bytes]] = []
        self._next: dict[str, int] = defaultdict(int)

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def send(self, topic: str, key: bytes, value: bytes) -> asyncio.Future[tuple[int, int]]:
        out: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.records.append((topic, key, value))
        offset = self._next[topic]
        self._next[topic] = offset + 1
        out.set_result(RecordPosition(0, offset))
        return out

    def jsonl(self) -> bytes:
        """Every record's value, one per line (the input of ``python -m stream replay``)."""
        return b"".join(value + b"\n" for _, _, value in self.records)
