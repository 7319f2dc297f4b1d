"""May I recover from this checkpoint? :class:`AsyncStatusView` and :class:`StatusView`.

A view reads the compacted ``checkpoint-status`` topic group-less from the beginning into a
local table and keeps following it (and ``checkpoint-alerts`` with ``details=True``), so
``is_authoritative`` / ``why`` are dictionary lookups. A node with no status record yet is
not authoritative. Read-your-writes (``wait_for``): docs/CLIENT.md §3 and "The status view".
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any, Literal, NamedTuple, NotRequired, Protocol

import pydantic_core
from pydantic import ConfigDict, TypeAdapter, ValidationError
from typing_extensions import TypedDict

from stream.client._loop import LoopThread
from stream.errors import ConfigurationError, GuardError
from stream.settings import Settings, get_settings

log = logging.getLogger("checkpoint_guard.client")

#: Rules whose open alert on a node makes its ancestors degraded (DESIGN.md §4).
DEGRADING_RULES = ("orphaned_referent", "unverifiable_checkpoint")
#: Describes of a missing topic before the view gives up (0.25 s apart).
TOPIC_WAIT_ATTEMPTS = 12


class NodeStatus(NamedTuple):
    """A node's current status, as the worker last published it.

    ``known`` is False for a node the view has no record of (then not authoritative).
    ``trigger``: ``(event_id, type, topic, partition, offset)`` of the event that set it.
    A tuple of plain values, so a table of a million of them costs the garbage
    collector nothing (CPython stops tracking such tuples).
    """

    context_id: str
    node_id: str
    level: str | None
    authoritative: bool
    frozen: bool
    open_rules: tuple[str, ...]
    degraded_by: tuple[str, ...]
    degraded_count: int
    trigger: tuple[Any, ...] | None
    detected_at: str | None
    #: the record was re-sent without its list (too large for the topic): ``degraded_by``
    #: is empty, ``degraded_count`` still counts every degrading node (DESIGN.md §4)
    degraded_truncated: bool = False
    known: bool = True

    def __str__(self) -> str:
        where = f"node {self.node_id!r} of context {self.context_id!r}"
        if not self.known:
            return (f"{where} has no status: the worker has not processed it (yet) — wait_for() the "
                    "checkpoint you emitted, or check that the worker runs")
        if self.authoritative:
            return f"{where} is authoritative"
        parts = []
        if self.open_rules:
            parts.append("open " + ", ".join(self.open_rules))
        if self.frozen:
            parts.append("frozen (a re-summarization changed what it depends on)")
        if self.degraded_count:
            parts.append(f"degraded by {_degrading(self)}")
        return f"{where} is not authoritative: " + "; ".join(parts)


def _degrading(status: NodeStatus, named: Iterable[str] | None = None) -> str:
    """The degrading nodes as listed (at most 1,000 in a record) and how many more there are."""
    listed = list(status.degraded_by if named is None else named)
    if not listed:  # the record came without its list
        return f"{status.degraded_count} node(s) under it (not listed: the record was too large)"
    more = status.degraded_count - len(listed)
    return ", ".join(listed) + (f" (+{more} more)" if more > 0 else "")


class NotAuthoritative(GuardError):
    """Recovering from the node would trust lost or unverifiable content (DESIGN.md §4).

    Re-fetch the referents (``orphans``), re-compact with the ``missing_constraints``,
    or refuse the task. ``orphans`` maps the node and each degrading descendant to its
    unreachable referents (when the view follows the alerts). An alert lists at most
    1,000 of a set: ``set_sizes`` maps ``(node, rule)`` to the full size (``set_size``).
    """

    def __init__(self, status: NodeStatus, orphans: dict[str, tuple[str, ...]],
                 missing_constraints: tuple[str, ...], constraint_texts: Mapping[str, str] | None = None,
                 *, set_sizes: Mapping[tuple[str, str], int] | None = None) -> None:
        self.status = status
        self.context_id, self.node_id = status.context_id, status.node_id
        self.orphans = orphans
        self.missing_constraints = missing_constraints
        self.degraded_by = status.degraded_by
        texts = constraint_texts or {}
        sizes = set_sizes or {}
        node = status.node_id
        parts = [f"cannot recover from node {node!r} of context {status.context_id!r}"]
        if not status.known:
            parts.append("the worker has published no status for it (not processed yet, or never emitted)")
        for rule in status.open_rules:
            if rule == "orphaned_referent" and node in orphans:
                parts.append(f"its referents {_names(orphans[node], sizes.get((node, rule)))} are unreachable")
            elif rule == "negative_constraint_dropped" and missing_constraints:
                named = [repr(texts.get(k, k)) for k in missing_constraints]
                parts.append(f"it dropped the prohibition(s) {_names(named, sizes.get((node, rule)))}")
            elif not (rule == "non_idempotent" and status.frozen):
                parts.append(f"open {rule}")
        if status.frozen:
            parts.append("it is frozen (a re-summarization changed what it depends on)")
        if status.degraded_count:
            under = [f"{n} (orphans {_names(orphans[n], sizes.get((n, 'orphaned_referent')))})" if n in orphans
                     else n for n in status.degraded_by]
            parts.append(f"it is degraded by {status.degraded_count} node(s) under it: {_degrading(status, under)}")
        parts.append("re-fetch the referents, re-compact the subtree, or refuse the task")
        super().__init__(f"{parts[0]}: " + "; ".join(parts[1:]))


def _names(ids: Iterable[str], total: int | None = None, limit: int = 10) -> str:
    """The first ``limit`` of ``ids``, and how many more the set holds (``total``: its full
    size when the alert listed only part of it)."""
    ids = list(ids)
    more = max(total or 0, len(ids)) - min(len(ids), limit)
    return ", ".join(ids[:limit]) + (f" (+{more} more)" if more > 0 else "")


class _HasPositions(Protocol):
    def positions(self) -> dict[tuple[str, int], int]: ...


_EMPTY: tuple[str, ...] = ()


class _TriggerRecord(TypedDict, total=False):
    __pydantic_config__ = ConfigDict(extra="ignore")  # type: ignore[misc]
    event_id: Any
    type: Any
    topic: Any
    partition: Any
    offset: Any


class _StatusRecord(TypedDict):
    """The fields of a ``checkpoint-status`` record the view keeps (wire.Status)."""

    __pydantic_config__ = ConfigDict(strict=True, extra="ignore")  # type: ignore[misc]
    schema_version: Literal[1]
    type: Literal["status"]
    context_id: str
    node_id: str
    level: str | None
    authoritative: bool
    frozen: bool
    open_rules: tuple[str, ...]
    degraded_by: tuple[str, ...]
    degraded_count: int
    degraded_truncated: NotRequired[bool]
    trigger: _TriggerRecord | None
    detected_at: str | None


_status_adapter = TypeAdapter(_StatusRecord)


def parse_status(key: bytes | None, value: bytes) -> NodeStatus:
    """One ``checkpoint-status`` record -> :class:`NodeStatus` (ValueError if malformed).

    Validated by pydantic in Rust (strict JSON types); shared strings (context ids, levels,
    rule names, topics) are interned, so a million nodes of a few thousand contexts hold
    one copy of each.
    """
    try:
        r = _status_adapter.validate_json(value)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(map(str, first["loc"])) or "record"
        raise ValueError(f"not a status record: {where}: {first['msg']}") from None
    t = r["trigger"]
    trigger = (t.get("event_id"), _intern(t.get("type")), _intern(t.get("topic")), t.get("partition"),
               t.get("offset")) if t is not None else None
    rules = tuple(sys.intern(x) for x in r["open_rules"]) if r["open_rules"] else _EMPTY
    return NodeStatus(sys.intern(r["context_id"]), r["node_id"], _intern(r["level"]), r["authoritative"],
                      r["frozen"], rules, r["degraded_by"] or _EMPTY, r["degraded_count"], trigger, r["detected_at"],
                      r.get("degraded_truncated", False))


def _intern(v: Any) -> str | None:
    return sys.intern(v) if isinstance(v, str) else None


class AsyncStatusView:
    """The asyncio status table (module docstring). ``async with AsyncStatusView(settings)``
    reads the topic(s) to their end before the body runs, then follows them.

    ``details``: also follow ``CG_ALERTS_TOPIC`` to name orphans and missing constraints.
    ``skipped`` counts records that were not valid status/alert records (logged, ignored).
    """

    def __init__(self, settings: Settings | None = None, *, details: bool = True, poll_interval: float = 0.05) -> None:
        self.settings = settings or get_settings()
        self.details = details
        self.poll_interval = poll_interval
        self.skipped = 0
        self._table: dict[tuple[str, str], NodeStatus] = {}
        #: (context, node) -> {rule: (orphans or missing constraint keys as listed, set_size)}
        #: of its open alerts (an alert lists at most 1,000 of a set)
        self._alerts: dict[tuple[str, str], dict[str, tuple[tuple[str, ...], int]]] = {}
        self._consumer: Any = None
        self._admin: Any = None
        self._task: asyncio.Task[None] | None = None
        self._positions: dict[Any, int] = {}
        self._progress = asyncio.Event()  # replaced in start(), on the loop that follows
        self._failure: BaseException | None = None

    # ------------------------------------------------------------------ queries

    def __len__(self) -> int:
        return len(self._table)

    def status(self, context_id: str, node_id: str) -> NodeStatus | None:
        """The node's last published status, or None."""
        return self._table.get((context_id, node_id))

    def is_authoritative(self, context_id: str, node_id: str) -> bool:
        """No open alert, not frozen, not degraded (DESIGN.md §4); False when unknown."""
        s = self._table.get((context_id, node_id))
        return s is not None and s.authoritative

    def why(self, context_id: str, node_id: str) -> NodeStatus:
        """The status with its reasons (``open_rules``, ``frozen``, ``degraded_by``); ``str()`` reads it."""
        s = self._table.get((context_id, node_id))
        if s is None:
            return NodeStatus(context_id, node_id, None, False, False, _EMPTY, _EMPTY, 0, None, None, known=False)
        return s

    def open_sets(self, context_id: str, node_id: str) -> dict[str, tuple[str, ...]]:
        """rule -> the node's current orphans / missing constraint keys as its last alert
        lists them (the first 1,000 in sorted order; ``details`` only)."""
        return {rule: listed for rule, (listed, _) in self._alerts.get((context_id, node_id), {}).items()}

    def open_set_sizes(self, context_id: str, node_id: str) -> dict[str, int]:
        """rule -> the full size of the node's open set (``set_size``: it may list fewer)."""
        return {rule: size for rule, (_, size) in self._alerts.get((context_id, node_id), {}).items()}

    def recover_from(self, context_id: str, node_id: str, *,
                     constraint_texts: Mapping[str, str] | None = None) -> NodeStatus:
        """Return the node's status if it is authoritative; else raise :class:`NotAuthoritative`
        naming its orphans, dropped prohibitions (``constraint_texts`` maps keys to texts)
        and degrading descendants with theirs."""
        s = self.why(context_id, node_id)
        if s.authoritative:
            return s
        orphans: dict[str, tuple[str, ...]] = {}
        sizes: dict[tuple[str, str], int] = {}
        for n in (node_id, *s.degraded_by):
            found = self._alerts.get((context_id, n), {}).get("orphaned_referent")
            if found:
                orphans[n], sizes[(n, "orphaned_referent")] = found
        missing, size = self._alerts.get((context_id, node_id), {}).get("negative_constraint_dropped", (_EMPTY, 0))
        sizes[(node_id, "negative_constraint_dropped")] = size
        raise NotAuthoritative(s, orphans, missing, constraint_texts, set_sizes=sizes)

    # ------------------------------------------------------------------ lifecycle

    @property
    def topics(self) -> list[str]:
        return [self.settings.status_topic, *([self.settings.alerts_topic] if self.details else [])]

    async def start(self, timeout: float | None = 120) -> AsyncStatusView:
        """Assign every partition, read to the end offsets, then follow in the background."""
        from aiokafka import TopicPartition

        from stream import kafka_clients

        self._progress = asyncio.Event()
        consumer = kafka_clients.consumer(
            self.settings, group_id=None, enable_auto_commit=False, auto_offset_reset="earliest",
            max_partition_fetch_bytes=max(1 << 20, self.settings.max_output_bytes),
            fetch_max_bytes=max(52428800, self.settings.max_output_bytes),
        )
        with kafka_clients.client_errors(self.settings, "the StatusView cannot reach Kafka"):  # KafkaUnavailable
            await kafka_clients.start_client(self.settings, consumer)
        self._consumer = consumer
        try:
            for _attempt in range(TOPIC_WAIT_ATTEMPTS):  # a topic created a moment ago may not show yet
                counts = await kafka_clients.topic_partitions(self.settings, self.topics)
                missing = [t for t, n in counts.items() if not n]
                if not missing:
                    break
                await asyncio.sleep(0.25)
            if missing:
                raise ConfigurationError(
                    f"topic(s) {', '.join(missing)} do not exist; run `python -m stream topics create` "
                    "(or check CG_STATUS_TOPIC / CG_ALERTS_TOPIC)"
                )
            tps = [TopicPartition(t, p) for t in self.topics for p in range(counts[t] or 0)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            self._admin = await kafka_clients.start_client(self.settings, kafka_clients.admin(self.settings))
            self._task = asyncio.get_running_loop().create_task(self._follow())
            await self.catch_up(timeout=timeout)
        except BaseException:
            await self.stop()
            raise
        return self

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            await consumer.stop()
        if self._admin is not None:
            admin, self._admin = self._admin, None
            await admin.close()

    async def __aenter__(self) -> AsyncStatusView:
        return await self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await self.stop()

    # ------------------------------------------------------------------ following

    async def _follow(self) -> None:
        consumer = self._consumer
        status_topic = self.settings.status_topic
        try:
            while True:
                batch = await consumer.getmany(timeout_ms=200, max_records=50_000)
                for tp, records in batch.items():
                    if tp.topic == status_topic:
                        self._apply_status(records)
                    else:
                        self._apply_alerts(records)
                for tp in consumer.assignment():
                    self._positions[tp] = await consumer.position(tp)
                self._progress.set()
                self._progress = asyncio.Event()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the view stops answering fresh: say so at the next wait
            log.error("status view stopped following: %r", exc)
            self._failure = exc
            self._progress.set()

    def _apply_status(self, records: list[Any]) -> None:
        table = self._table
        for r in records:
            if r.value is None:  # tombstone: the node's status was deleted
                try:
                    ctx, node = pydantic_core.from_json(r.key)
                    table.pop((ctx, node), None)
                except Exception:
                    self.skipped += 1
                continue
            try:
                s = parse_status(r.key, r.value)
            except ValueError as exc:
                self.skipped += 1
                log.warning("%s[%d]@%d: skipped: %s", r.topic, r.partition, r.offset, exc)
                continue
            table[(s.context_id, s.node_id)] = s

    def _apply_alerts(self, records: list[Any]) -> None:
        alerts = self._alerts
        for r in records:
            try:
                a = pydantic_core.from_json(r.value)
                key = (a["context_id"], a["node_id"])
                rule, status = a["rule"], a["status"]
            except Exception:
                self.skipped += 1
                continue
            if key[1] is None:
                continue  # sequence_gap: no node
            field = "missing_constraints" if rule == "negative_constraint_dropped" else "orphans"
            sets = alerts.get(key)
            if status == "open":
                if sets is None:
                    sets = alerts[key] = {}
                listed = tuple(a.get(field) or ())
                size = a.get("set_size")
                sets[rule] = (listed, size if isinstance(size, int) else len(listed))
            elif sets is not None:
                sets.pop(rule, None)
                if not sets:
                    del alerts[key]

    # ------------------------------------------------------------------ waiting

    async def _wait_progress(self, deadline: float | None) -> None:
        if self._failure is not None:
            raise GuardError(f"the status view stopped following its topics: {self._failure!r}")
        if self._task is None:
            raise RuntimeError("the StatusView is not started: use it as a context manager or call start() first")
        event = self._progress
        remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
        try:
            await asyncio.wait_for(event.wait(), remaining)
        except TimeoutError:
            pass

    async def catch_up(self, partitions: Iterable[int] | None = None, *, timeout: float | None = 30) -> None:
        """Read until every followed partition (or those numbered ``partitions``) reaches
        the end offset it has now. Raises TimeoutError."""
        consumer = self._consumer
        tps = list(consumer.assignment())
        if partitions is not None:
            wanted = set(partitions)
            tps = [tp for tp in tps if tp.partition in wanted]
            missing = wanted - {tp.partition for tp in tps if tp.topic == self.settings.status_topic}
            if missing:
                raise ConfigurationError(
                    f"{self.settings.status_topic} has no partition {sorted(missing)}: it must have as many "
                    "partitions as the input topics (`python -m stream topics create`)"
                )
        end = await consumer.end_offsets(tps)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            behind = {tp: off for tp, off in end.items() if self._positions.get(tp, -1) < off}
            if not behind:
                return
            if deadline is not None and time.monotonic() >= deadline:
                where = ", ".join(f"{tp.topic}[{tp.partition}] at {self._positions.get(tp)} of {off}"
                                  for tp, off in sorted(behind.items()))
                raise TimeoutError(f"status view did not catch up in {timeout}s: {where}")
            await self._wait_progress(deadline)

    async def wait_for(self, *events: _HasPositions, timeout: float = 30.0) -> None:
        """Wait until the worker has processed ``events`` (``Emitted`` or context handles,
        acknowledged: ``flush()`` first) and the view holds the status they caused.

        Raises TimeoutError naming the worker group, partition and offsets; ValueError for
        an event the broker has not acknowledged yet.
        """
        from aiokafka import TopicPartition
        from aiokafka.errors import KafkaError

        targets: dict[tuple[str, int], int] = {}
        for ev in events:
            positions = ev.positions()
            if not positions and getattr(ev, "offset", 0) is None:
                raise ValueError(f"event {getattr(ev, 'event_id', ev)!r} is not acknowledged yet: flush() first")
            for tp, off in positions.items():
                targets[tp] = max(off, targets.get(tp, -1))
        if not targets:
            return
        deadline = time.monotonic() + timeout
        group = self.settings.app_id
        tps = [TopicPartition(t, p) for t, p in targets]
        delay = self.poll_interval
        while True:
            try:
                committed = await self._admin.list_consumer_group_offsets(group, partitions=tps)
            except KafkaError as exc:
                if not exc.retriable:
                    raise
                committed = {}  # no coordinator yet (a fresh group or broker): not committed
            behind = {tp: targets[(tp.topic, tp.partition)] for tp in tps
                      if (committed.get(tp).offset if committed.get(tp) else -1) <= targets[(tp.topic, tp.partition)]}
            if not behind:
                break
            if time.monotonic() >= deadline:
                where = ", ".join(
                    f"{tp.topic}[{tp.partition}]@{off} (committed {committed[tp].offset if tp in committed else -1})"
                    for tp, off in sorted(behind.items())
                )
                raise TimeoutError(f"worker group {group!r} has not processed {where} within {timeout}s: "
                                   "is the worker running (CG_APP_ID)?")
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, 0.25)
        await self.catch_up({p for _, p in targets}, timeout=max(0.0, deadline - time.monotonic()) or 0.001)


class StatusView:
    """The sync status table: :class:`AsyncStatusView` followed on a private loop thread.

    Queries (``is_authoritative``, ``why``, ``status``, ``recover_from``) read the local
    table directly; ``wait_for`` and ``catch_up`` block.
    """

    def __init__(self, settings: Settings | None = None, *, details: bool = True, poll_interval: float = 0.05) -> None:
        self._view = AsyncStatusView(settings, details=details, poll_interval=poll_interval)
        self.settings = self._view.settings
        self._loop = LoopThread("checkpoint-guard-status")

    def start(self, timeout: float | None = 120) -> StatusView:
        self._loop.start()
        try:
            self._loop.run(self._view.start(timeout=timeout))
        except BaseException:
            self._loop.close()
            raise
        return self

    def stop(self) -> None:
        if self._loop.loop is None:
            return
        try:
            self._loop.run(self._view.stop(), 30)
        finally:
            self._loop.close()

    def __enter__(self) -> StatusView:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __len__(self) -> int:
        return len(self._view)

    @property
    def skipped(self) -> int:
        return self._view.skipped

    def status(self, context_id: str, node_id: str) -> NodeStatus | None:
        return self._view.status(context_id, node_id)

    def is_authoritative(self, context_id: str, node_id: str) -> bool:
        return self._view.is_authoritative(context_id, node_id)

    def why(self, context_id: str, node_id: str) -> NodeStatus:
        return self._view.why(context_id, node_id)

    def open_sets(self, context_id: str, node_id: str) -> dict[str, tuple[str, ...]]:
        return self._view.open_sets(context_id, node_id)

    def open_set_sizes(self, context_id: str, node_id: str) -> dict[str, int]:
        return self._view.open_set_sizes(context_id, node_id)

    def recover_from(self, context_id: str, node_id: str, *,
                     constraint_texts: Mapping[str, str] | None = None) -> NodeStatus:
        return self._view.recover_from(context_id, node_id, constraint_texts=constraint_texts)

    def catch_up(self, partitions: Iterable[int] | None = None, *, timeout: float | None = 30) -> None:
        self._loop.run(self._view.catch_up(partitions, timeout=timeout))

    def wait_for(self, *events: _HasPositions, timeout: float = 30.0) -> None:
        self._loop.run(self._view.wait_for(*events, timeout=timeout))
