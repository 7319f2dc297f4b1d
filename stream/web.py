"""The worker's web views (faust web; bound to ``CG_WEB_HOST``, loopback by default).

==============================  ===============================================================
``GET /healthz``                the process is up: 200 ``{"status": "ok"}``
``GET /readyz``                 200 ``{"status": "ready", "partitions": [...]}`` once the tables
                                are recovered and input partitions are assigned (no rebalance
                                or recovery in progress); else 503 ``{"status": "not ready",
                                "reasons": [...]}``
``GET /metrics``                Prometheus text exposition of :data:`stream.metrics.REGISTRY`
``GET /nodes/{ctx}/{node}``     a node's status, read from the tables (DESIGN.md §4 Node
                                status: authoritative, frozen, open rules, degraded_by) plus
                                level, versions, orphans, missing constraints (404 for an
                                unknown node); ids are path segments, so percent-encode
                                them (``a/b`` -> ``a%2Fb``)
==============================  ===============================================================

Why node status is forwarded: a context's state lives only on the worker that owns its
partition (DESIGN.md §2, §7.1), and a RocksDB read outside an event looks through the
partition databases *this* worker has open. So the view computes the context's
partition as the producers do (Kafka's default partitioner: murmur2 of the UTF-8
``context_id``), finds the worker that owns that partition of the ``nodes`` table in
faust's assignor metadata (``app.router.table_metadata``, the ``canonical_url`` every
worker advertises in the group protocol), and forwards the request there when it is not
this worker. A forwarded request carries ``X-Checkpoint-Guard-Forwarded-By``; a worker
that receives one for a partition it does not own (metadata changing under a rebalance)
answers 503 instead of forwarding again. Ask any worker: the answer is the owner's.

faust's own ``table_route`` is not used: it hashes the *serialized table key* (our keys
are JSON arrays ``["ctx", "node"]``), which is not the partition the context's events —
and therefore its state — live on.

This module also wires the parts of :mod:`stream.metrics` that need faust: the state
gauges are rebuilt from the tables when a rebalance completes (``on_rebalance_complete``,
before the streams resume; with the write-ahead journal's pending writes applied, as the
agent's roll-forward will apply them), and the consumer lag is read from the consumer
at scrape time.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import aiohttp
from aiokafka.partitioner import murmur2
from faust import web
from yarl import URL

from stream import topology
from stream.app import app, settings
from stream.domain.engine import node_status as engine_node_status
from stream.metrics import METRICS, journal_pending, rolled_forward, rows_of
from stream.tables import TableMap, TableState

log = logging.getLogger("checkpoint_guard.web")

FORWARDED_HEADER = "X-Checkpoint-Guard-Forwarded-By"

_state = TableState(topology.tables)
_journal = TableMap(topology.journal) if getattr(topology, "journal", None) is not None else None
_NODES_CHANGELOG = topology.tables["nodes"].changelog_topic.get_topic_name()


def partition_of(context_id: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for the UTF-8 ``context_id`` key
    (murmur2, as aiokafka's ``DefaultPartitioner`` and the Java client do)."""
    return (murmur2(context_id.encode("utf-8")) & 0x7FFFFFFF) % partitions


def owned_partitions() -> set[int]:
    """Partition numbers whose ``nodes`` table (hence contexts) this worker owns."""
    return {tp.partition for tp in app.assignor.assigned_actives() if tp.topic == _NODES_CHANGELOG}


def owner_url(partition: int) -> str | None:
    """The canonical URL of the worker owning ``partition`` (faust assignor metadata)."""
    for url, topics in app.router.table_metadata("nodes").items():
        if partition in topics.get(_NODES_CHANGELOG, ()):
            return url
    return None


def not_ready_reasons() -> list[str]:
    reasons = []
    if not app.tables.recovery.completed.is_set():
        reasons.append("tables not recovered yet")
    if app.rebalancing:
        reasons.append("rebalancing")
    if app.in_recovery:
        reasons.append("recovering tables from their changelog topics")
    if not owned_partitions():
        reasons.append("no partitions assigned")
    return reasons


class _JournalView:
    """The tables :func:`stream.domain.engine.node_status` reads, through a journal
    record's pending writes (``{table: {key: (value, deleted)}}``)."""

    def __init__(self, pending: dict[str, dict[tuple, tuple[Any, bool]]]) -> None:
        for name in ("nodes", "alert_sets", "reach"):
            setattr(self, name, _PendingMap(getattr(_state, name), pending.get(name) or {}))


class _PendingMap:
    def __init__(self, table: Any, pending: dict[tuple, tuple[Any, bool]]) -> None:
        self.table, self.pending = table, pending

    def get(self, key: tuple, default: Any = None) -> Any:
        if key in self.pending:
            value, deleted = self.pending[key]
            return default if deleted else value
        return self.table.get(key, default)


def node_status(context_id: str, node_id: str) -> dict[str, Any] | None:
    """A node's status from the tables (this worker must own the context's partition).

    Reads through the context's last journal record: after a crash that cut a write
    set, the agent rolls it forward only on the context's next event. The status is the
    engine's own (DESIGN.md §4 Node status), plus the kept version's details.
    """
    last = _journal.get((context_id,)) if _journal is not None else None
    view = _JournalView(journal_pending([(None, last)]) if last else {})
    status = engine_node_status(view, context_id, node_id)  # type: ignore[arg-type]
    if status is None:
        return None
    key = (context_id, node_id)
    rec = view.nodes.get(key)
    sets = view.alert_sets.get(key) or {}
    return {
        "context_id": context_id,
        "node_id": node_id,
        **status,
        "versions": rec["versions"],
        "opaque": rec["opaque"],
        "orphans": sets.get("o") or [],
        "missing_constraints": sets.get("m") or [],
        "referents": rec["referents"],
        "children": rec["lchildren"],
    }


# --------------------------------------------------------------------------- views


@app.page("/healthz")
class HealthView(web.View):
    async def get(self, request: web.Request) -> web.Response:
        return self.json({"status": "ok"})


@app.page("/readyz")
class ReadyView(web.View):
    async def get(self, request: web.Request) -> web.Response:
        reasons = not_ready_reasons()
        if reasons:
            return self.json({"status": "not ready", "reasons": reasons}, status=503)
        return self.json({"status": "ready", "partitions": sorted(owned_partitions()),
                          "url": str(app.conf.canonical_url)})


@app.page("/metrics")
class MetricsView(web.View):
    async def get(self, request: web.Request) -> web.Response:
        body, content_type = METRICS.exposition()
        return self.bytes(body, headers={"Content-Type": content_type})


@app.page("/nodes/{context_id}/{node_id}")
class NodeStatusView(web.View):
    async def get(self, request: web.Request, context_id: str, node_id: str) -> web.Response:
        partition = partition_of(context_id, settings.partitions)
        me = str(app.conf.canonical_url)
        where = {"context_id": context_id, "node_id": node_id, "partition": partition}
        if app.rebalancing or app.in_recovery:
            return self.json({**where, "error": "rebalancing; retry"}, status=503)
        if partition in owned_partitions():
            status = node_status(context_id, node_id)
            if status is None:
                return self.json({**where, "error": "unknown node", "served_by": me}, status=404)
            return self.json({**status, "partition": partition, "served_by": me})
        if request.headers.get(FORWARDED_HEADER):
            return self.json({**where, "error": f"{me} does not own partition {partition}; retry"}, status=503)
        owner = owner_url(partition)
        if owner is None or owner.rstrip("/") == me.rstrip("/"):
            return self.json({**where, "error": "no worker owns the partition yet; retry"}, status=503)
        return await self._forward(owner, request, where)

    async def _forward(self, owner: str, request: web.Request, where: dict[str, Any]) -> web.Response:
        url = URL(owner.rstrip("/") + request.raw_path, encoded=True)
        try:
            async with app.http_client.get(
                url,
                headers={FORWARDED_HEADER: str(app.conf.canonical_url)},
                timeout=aiohttp.ClientTimeout(total=settings.web_forward_timeout),
            ) as resp:
                body = await resp.read()
                return self.bytes(body, status=resp.status,
                                  headers={"Content-Type": resp.headers.get("Content-Type", "application/json")})
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("forwarding %s to %s failed: %r", request.raw_path, owner, exc)
            return self.json({**where, "error": f"owner {owner} unreachable: {type(exc).__name__}"}, status=503)


# --------------------------------------------------------------------------- metrics wiring


def _consumer_lag() -> dict[tuple[str, int], int]:
    """High watermark minus next offset to process, per owned input partition."""
    consumer = app._consumer  # None until the worker started its consumer
    if consumer is None:
        return {}
    # faust's own record of the group's committed offsets (seeded at assignment).
    committed = getattr(consumer, "_committed_offset", {})
    out = {}
    for tp in app.assignor.assigned_actives():
        if tp.topic not in settings.input_topics:
            continue
        try:
            highwater = consumer.highwater(tp)
        except Exception:  # not fetched / not assigned any more
            continue
        if highwater is None:
            continue
        position = max(METRICS.processed.get((tp.topic, tp.partition), -1), committed.get(tp) or -1)
        if position < 0:
            if highwater == 0:
                out[(tp.topic, tp.partition)] = 0
            continue
        out[(tp.topic, tp.partition)] = max(0, highwater - position)
    return out


async def _rebuild_state_gauges(sender: Any = None, **kwargs: Any) -> None:
    """Recompute the state gauges from the tables of the partitions now owned.

    Runs from ``on_rebalance_complete``: tables recovered, streams not resumed yet, so
    no event changes the state while it scans.
    """
    if not settings.metrics_enabled:
        return
    started = time.perf_counter()
    try:
        owned = owned_partitions()
        tables = topology.tables
        # The agent re-applies each context's last journal record on its first event
        # after a start or rebalance (TableState.apply_journal), outside the metric hooks:
        # rebuild from the state as it will be once rolled forward.
        journal = getattr(topology, "journal", None)
        pending = journal_pending(journal.items()) if journal is not None else {}
        n = METRICS.state.rebuild(
            rolled_forward(rows_of(tables["nodes"].items()), pending.get("nodes")),
            rolled_forward(rows_of(tables["alert_sets"].items()), pending.get("alert_sets")),
            rolled_forward(rows_of(tables["seq"].items()), pending.get("seq")),
            owns_context=lambda ctx: partition_of(ctx, settings.partitions) in owned,
            reach=rolled_forward(rows_of(tables["reach"].items()), pending.get("reach")),
        )
    except Exception:  # metrics must never break a rebalance
        log.exception("could not rebuild the state gauges from the tables")
        return
    log.info("metrics: state gauges rebuilt from %d nodes of partitions %s in %.1f ms",
             n, sorted(owned), (time.perf_counter() - started) * 1000)


METRICS.lag_source = _consumer_lag
METRICS.ready_source = lambda: not not_ready_reasons()  # checkpoint_guard_ready mirrors /readyz
METRICS.seq_gap_limit = settings.seq_gap_limit
app.on_rebalance_complete.connect(_rebuild_state_gauges)

__all__ = ["FORWARDED_HEADER", "node_status", "not_ready_reasons", "owner_url", "partition_of"]
