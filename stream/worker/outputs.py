"""Output delivery: engine outputs -> records -> the broker, acknowledged before a commit.

:class:`Outputs` builds the records of what the engine returned and the dead letters of
bad input, and sends each topic partition's records of a batch as record batches
(aiokafka's ``send_batch``: one future per batch, the default partitioner's partition
cached per key) without waiting; :meth:`Outputs.settle` (commit step 1,
:mod:`stream.worker.durability`) waits for every acknowledgement, sending a failed batch's
records again. A record over its topic's ``max.message.bytes`` (read at start) is refused
before it is sent and replaced (DESIGN.md §4 *Bounded outputs*): a status record first
without its ``degraded_by`` list (``degraded_truncated: true``), then the dead letter of its
trigger with the input's bytes, then without them. A status record sent again after a
newer one of its node is dropped (compaction keeps the last). A batch the broker itself
rejects (a limit lowered after the start) breaks the idempotent producer's sequence for
that partition: the worker stops, and its restart reads the new limit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, cast

from aiokafka.errors import MessageSizeTooLargeError, OutOfOrderSequenceNumber, TopicAuthorizationFailedError
from aiokafka.partitioner import DefaultPartitioner
from aiokafka.record.default_records import DefaultRecordBatchBuilder

from stream.domain.engine import Output
from stream.domain.events import Event
from stream.domain.outputs import NodeStatus
from stream.errors import OutputRejected
from stream.retry import backoff
from stream.settings import Settings
from stream.wire import dead_letter, encode, status_key

log = logging.getLogger("checkpoint_guard.outputs")

#: Longest wait between two re-sends of failed records (seconds).
SEND_RETRY_MAX_DELAY = 5.0
#: A record batch of one record: the batch header and the record's own framing (bytes).
BATCH_OVERHEAD = 512
#: Keys whose partition is remembered, per topic (the cache starts again past it).
PARTITION_CACHE = 100_000

_partitioner = DefaultPartitioner()

#: Kinds of record, and what replaces each when the broker rejects it by size.
RECORD, STATUS, STATUS_CUT, DEAD_LETTER, BARE = "record", "status", "status_cut", "dead_letter", "bare"


@dataclass(slots=True)
class OutputRecord:
    """An output to send: ``partition`` None = the key's default partitioner; ``source``:
    the input message (topic, partition, offset, key, value) dead-lettered in its place
    if the broker rejects the record by size; ``kind``: its rung on the ladder (module doc)."""

    topic: str
    key: bytes | None
    value: bytes
    partition: int | None = None
    source: Any = None
    kind: str = RECORD
    seq: int = -1  # a status record's send order (newer ones supersede its re-sends)
    status: NodeStatus | None = None  # a status record's value (its fail-safe re-send is built from it)


class Refused(MessageSizeTooLargeError):  # type: ignore[misc]  # aiokafka ships no types
    """A record refused before it was sent: over its topic's limit or the request size."""


def is_error(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    """``exc`` or its cause is one of ``kinds`` (aiokafka wraps some errors)."""
    return isinstance(exc, kinds) or isinstance(exc.__cause__, kinds)


def _failed(exc: BaseException) -> asyncio.Future[Any]:
    fut = asyncio.get_running_loop().create_future()
    fut.set_exception(exc)
    return fut


class Outputs:
    """The worker's outputs: built here (:meth:`of`, :meth:`dead_letter`), sent without
    waiting (:meth:`send`), acknowledged by :meth:`settle` (module docstring).

    ``producer``: aiokafka producer (None: build records only); ``limits``: topic ->
    its ``max.message.bytes`` (read at start): a larger record is rejected before it is
    sent, so it never fails a batch of others and order is kept; ``on_rejected(topic)``
    counts each record the broker rejected.
    """

    def __init__(self, settings: Settings, producer: Any = None, *, limits: dict[str, int] | None = None,
                 on_rejected: Callable[[str], None] = lambda topic: None) -> None:
        self.max_request_bytes = settings.max_request_bytes
        self.alerts = settings.alerts_topic
        self.verdicts = settings.verdicts_topic
        self.status = settings.status_topic
        self.deadletter = settings.deadletter_topic
        self.producer = producer
        self.limits = dict(limits or {})
        self.on_rejected = on_rejected
        self._inflight: list[tuple[list[OutputRecord], Any]] = []  # (records of one batch, its future)
        self._partitions: dict[str, dict[bytes, int]] = {}  # topic -> key -> partition
        self._topic_partitions: dict[str, list[int]] = {}
        self._seq = 0
        # status key -> seq of the newest status record sent for it, since the last two takes
        self._latest: dict[bytes | None, int] = {}
        self._older: dict[bytes | None, int] = {}

    # ------------------------------------------------------------------ building
    def of(self, message: Any, event: Event, out: Output) -> list[OutputRecord]:
        """The records of one applied event, in the contract's order: alerts, status, verdicts."""
        key = event.context_id.encode("utf-8")
        alerts, statuses, verdicts = out.alerts, out.statuses, out.verdicts
        # positional (topic, key, value, partition, source, kind, seq, status): the fields' order
        records = [OutputRecord(self.alerts, key, encode(a), None, message) for a in alerts] if alerts else []
        if statuses:
            topic, partition = self.status, message.partition
            records += [OutputRecord(topic, status_key(s.context_id, s.node_id), encode(s), partition, message,
                                     STATUS, -1, s) for s in statuses]
        if verdicts:
            records += [OutputRecord(self.verdicts, key, encode(v), None, message) for v in verdicts]
        return records

    def dead_letter(self, message: Any, reason: str, *, keep_value: bool = True) -> OutputRecord:
        """The dead letter of an input message: its bytes (base64, unless ``keep_value`` is
        false), where it was, and the one-line reason."""
        record = dead_letter(message.value if keep_value else b"", reason, key=message.key,
                             topic=message.topic, partition=message.partition, offset=message.offset)
        return OutputRecord(self.deadletter, message.key, encode(record), source=message,
                            kind=DEAD_LETTER if keep_value else BARE)

    # ------------------------------------------------------------------ delivery
    async def send(self, records: Iterable[OutputRecord]) -> None:
        """Send ``records`` in order without waiting for their acknowledgement."""
        await self._enqueue(records, self._inflight, track=True)

    def _over_limit(self, r: OutputRecord) -> int | None:
        limit = self.limits.get(r.topic)
        if limit is not None and len(r.value) + len(r.key or b"") + BATCH_OVERHEAD > limit:
            return limit
        return None

    async def _partition(self, topic: str, key: bytes) -> int:
        """The partition aiokafka's default partitioner gives ``key`` (murmur2; cached per key)."""
        cache = self._partitions.get(topic)
        if cache is None:
            cache = self._partitions[topic] = {}
            self._topic_partitions[topic] = list(await self.producer.partitions_for(topic))
        p = cache.get(key)
        if p is None:
            if len(cache) >= PARTITION_CACHE:
                cache.clear()
            p = cache[key] = _partitioner(key, self._topic_partitions[topic], None)
        return p

    async def _enqueue(self, records: Iterable[OutputRecord], into: list[tuple[list[OutputRecord], Any]], *,
                       track: bool = False) -> None:
        """Send ``records``: grouped by topic partition (order kept within each), one
        record batch and one future per group (module docstring)."""
        limits, request_max = self.limits, self.max_request_bytes
        groups: dict[tuple[str, int], list[OutputRecord]] = {}
        for r in records:
            if r.kind == STATUS and track:
                self._seq += 1
                r.seq = self._seq
                self._latest[r.key] = r.seq
            if limits:
                limit = self._over_limit(r)
                if limit is not None and r.kind == STATUS:  # the fail-safe at once: order is kept
                    self._rejected(r, f"over the topic's max.message.bytes {limit}")
                    r = self._cut(r)
                    limit = self._over_limit(r)
                if limit is not None:
                    into.append(([r], _failed(Refused(f"{len(r.value)} bytes, over the topic's max.message.bytes "
                                                      f"{limit}"))))
                    continue
            if (len(r.value) + len(r.key or b"") + BATCH_OVERHEAD > request_max
                    and DefaultRecordBatchBuilder.estimate_size_in_bytes(r.key, r.value, []) > request_max):
                into.append(([r], _failed(Refused(f"{len(r.value)} bytes, over the producer's max_request_size "
                                                  f"{request_max}"))))
                continue
            partition = r.partition
            if partition is None:
                if r.key is None:  # a random partition: the producer picks it
                    into.append(([r], await self._send_one(r)))
                    continue
                partition = await self._partition(r.topic, r.key)
            group = groups.get((r.topic, partition))
            if group is None:
                group = groups[(r.topic, partition)] = []
            group.append(r)
        for (topic, partition), group in groups.items():
            await self._send_group(topic, partition, group, into)

    async def _send_one(self, r: OutputRecord) -> Any:
        try:
            return await self.producer.send(r.topic, r.value, key=r.key, partition=r.partition)
        except MessageSizeTooLargeError as exc:  # over the producer's request size
            return _failed(Refused(str(exc)))
        except Exception as exc:  # could not even enqueue
            return _failed(exc)

    async def _send_group(self, topic: str, partition: int, group: list[OutputRecord],
                          into: list[tuple[list[OutputRecord], Any]]) -> None:
        """One topic partition's records as record batches (a new one when one is full)."""
        producer = self.producer
        batch, members = producer.create_batch(), cast(list[OutputRecord], [])
        for r in group:
            if batch.append(key=r.key, value=r.value, timestamp=None) is None:  # full
                into.append((members, await self._submit(batch, topic, partition)))
                batch, members = producer.create_batch(), []
                batch.append(key=r.key, value=r.value, timestamp=None)  # the first record always fits
            members.append(r)
        if members:
            into.append((members, await self._submit(batch, topic, partition)))

    async def _submit(self, batch: Any, topic: str, partition: int) -> Any:
        try:
            return await self.producer.send_batch(batch, topic, partition=partition)
        except Exception as exc:  # could not even enqueue: every record of it is sent again
            return _failed(exc)

    @property
    def pending(self) -> int:
        """Record batches sent since the last :meth:`take`."""
        return len(self._inflight)

    def take(self) -> list[tuple[list[OutputRecord], Any]]:
        """The outputs sent so far, (records, future) each, for :meth:`settle`; later sends start a new list."""
        batch, self._inflight = self._inflight, []
        # a status re-sent by this batch's settle can only be superseded by one sent after
        # the previous take: older entries are no longer needed
        self._older, self._latest = self._latest, {}
        return batch

    def _superseded(self, record: OutputRecord) -> bool:
        if record.kind not in (STATUS, STATUS_CUT):
            return False
        newest = self._latest.get(record.key, self._older.get(record.key, -1))
        return newest > record.seq

    async def settle(self, batch: list[tuple[list[OutputRecord], Any]]) -> None:
        """Wait until every output of ``batch`` (from :meth:`take`) is acknowledged,
        sending again what failed and replacing what was refused by size. Raises
        :class:`~stream.errors.OutputRejected` on an authorization failure or a batch
        the broker rejected (module docstring)."""
        delays = backoff(0.2, SEND_RETRY_MAX_DELAY)
        while batch:
            pending = [f for _, f in batch if not f.done()]  # by a commit, most were acknowledged long ago
            if pending:
                await asyncio.wait(pending)
            retry: list[OutputRecord] = []
            failure: BaseException | None = None
            for records, fut in batch:
                if fut.cancelled():
                    raise asyncio.CancelledError()
                res = fut.exception()
                if res is None:
                    continue
                topic = records[0].topic
                if is_error(res, (TopicAuthorizationFailedError,)):
                    raise OutputRejected(f"the broker refused a record for {topic!r} ({res}); "
                                         "check the worker's ACLs") from res
                if isinstance(res, Refused):
                    for record in records:
                        if record.kind == STATUS and self._superseded(record):
                            continue  # a newer status of the node was sent since: it is the current one
                        self._rejected(record, str(res))
                        replacement = self._replacement(record, res)
                        if replacement is not None:
                            retry.append(replacement)
                    continue
                if is_error(res, (MessageSizeTooLargeError, OutOfOrderSequenceNumber)):
                    raise OutputRejected(
                        f"the broker rejected a record batch for {topic!r} ({type(res).__name__}): its "
                        "max.message.bytes is lower than when the worker started; restart the worker (it reads "
                        "the limits at start and sends the outputs since its last commit again)") from res
                failure = failure or res
                # a newer status of the node sent since is the current one: not sent again
                retry.extend(r for r in records if not self._superseded(r))
            if failure is not None:
                delay = next(delays)
                log.warning("sending %d record(s) failed (%r); retrying in %.1fs", len(retry), failure, delay)
                await asyncio.sleep(delay)
            batch = []
            await self._enqueue(retry, batch)

    def _rejected(self, record: OutputRecord, why: str) -> None:
        self.on_rejected(record.topic)
        then = ("re-sending it without its degraded_by list" if record.kind == STATUS
                else "dead-lettering its trigger")
        log.error("a %d-byte record for %s is refused (%s); %s", len(record.value), record.topic, why, then)

    def _cut(self, record: OutputRecord) -> OutputRecord:
        assert record.status is not None
        return OutputRecord(record.topic, record.key, encode(record.status.without_list()), record.partition,
                            record.source, STATUS_CUT, record.seq)

    def _replacement(self, record: OutputRecord, exc: BaseException) -> OutputRecord | None:
        """The next rung of the ladder (module docstring) for a rejected record, or None
        when even a bare dead letter was rejected (logged critical: nothing else to send)."""
        if record.kind == STATUS:
            return self._cut(record)
        if record.source is None or record.kind == BARE:
            log.critical("dropping a record the broker rejects even as a bare dead letter (%s)", record.topic)
            return None
        reason = (f"output rejected: a {len(record.value)}-byte record for {record.topic} "
                  f"({type(exc).__name__}); raise the topic's max.message.bytes or lower CG_MAX_OUTPUT_BYTES")
        return self.dead_letter(record.source, reason, keep_value=record.kind != DEAD_LETTER)
