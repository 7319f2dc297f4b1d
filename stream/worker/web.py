"""The worker's web views (faust web; bound to ``CG_WEB_HOST``, loopback by default).

==============================  ===============================================================
``GET /healthz``                the process is up: 200 ``{"status": "ok"}``
``GET /readyz``                 200 ``{"status": "ready", "partitions": [...]}`` once input
                                partitions are assigned and their state restored (no rebalance
                                in progress); else 503 ``{"status": "not ready", "reasons": [...]}``
``GET /metrics``                Prometheus text exposition of the worker's registry
``GET /nodes/{ctx}/{node}``     a node's status (DESIGN.md §4: authoritative, frozen, open rules,
                                degraded_by: the first 1,000, degraded_count) plus level,
                                versions, its whole orphan and missing sets (alerts list 1,000);
                                404 for an unknown node. Ids are path segments: percent-encode
                                them (``a/b`` -> ``a%2Fb``)
==============================  ===============================================================

Why node status is forwarded: a context's state lives only on the worker that owns its
partition (DESIGN.md §2). The view computes the context's partition as the producers do
(Kafka's default partitioner: murmur2 of the UTF-8 ``context_id``), finds the worker that
owns that input partition in faust's assignor metadata (the ``canonical_url`` every worker
advertises in the group protocol) and forwards the request there. A forwarded request
carries ``X-Checkpoint-Guard-Forwarded-By``; a worker that receives one for a partition it
does not own answers 503 instead of forwarding again. Ask any worker: the answer is the owner's.
"""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
from aiokafka.partitioner import murmur2
from faust import web
from yarl import URL

from stream.domain.engine import node_detail
from stream.settings import Settings

log = logging.getLogger("checkpoint_guard.web")

FORWARDED_HEADER = "X-Checkpoint-Guard-Forwarded-By"


def partition_of(context_id: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for the UTF-8 ``context_id`` key
    (murmur2, as aiokafka's ``DefaultPartitioner`` and the Java client do)."""
    return (murmur2(context_id.encode("utf-8")) & 0x7FFFFFFF) % partitions


def node_status(runtime: Any, context_id: str, node_id: str, partition: int) -> dict[str, Any] | None:
    """A node's status from this worker's state of ``partition`` (None: unknown node)."""
    part = runtime.durability.partitions.get(partition) if runtime.durability else None
    if part is None:
        return None
    detail = node_detail(part.state, context_id, node_id)
    return None if detail is None else detail.to_record()


def install(app: Any, runtime: Any, settings: Settings) -> None:
    """Register the views on ``app``."""

    def owned() -> list[int]:
        return runtime.durability.owned() if runtime.durability else []

    def owner_url(partition: int) -> str | None:
        for url, topics in app.router.external_topics_metadata().items():
            if partition in topics.get(settings.compaction_topic, ()):
                return url
        return None

    def not_ready_reasons() -> list[str]:
        reasons = []
        if app.rebalancing:
            reasons.append("rebalancing")
        d = runtime.durability
        if d is None:
            reasons.append("starting")
            return reasons
        restoring = sorted(p for p, part in d.partitions.items() if not part.ready.is_set())
        if restoring:
            reasons.append(f"restoring the state of partitions {restoring}")
        if not d.partitions:
            reasons.append("no partitions assigned")
        return reasons

    if hasattr(runtime.metrics, "ready_source"):  # checkpoint_guard_ready mirrors /readyz
        runtime.metrics.ready_source = lambda: not not_ready_reasons()
        runtime.metrics.seq_gap_limit = settings.seq_gap_limit

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
            return self.json({"status": "ready", "partitions": owned(), "url": str(app.conf.canonical_url)})

    @app.page("/metrics")
    class MetricsView(web.View):
        async def get(self, request: web.Request) -> web.Response:
            if not hasattr(runtime.metrics, "exposition"):
                return self.json({"error": "metrics disabled (CG_METRICS_ENABLED=false)"}, status=404)
            body, content_type = runtime.metrics.exposition()
            return self.bytes(body, headers={"Content-Type": content_type})

    @app.page("/nodes/{context_id}/{node_id}")
    class NodeStatusView(web.View):
        async def get(self, request: web.Request, context_id: str, node_id: str) -> web.Response:
            partition = partition_of(context_id, settings.partitions)
            me = str(app.conf.canonical_url)
            where = {"context_id": context_id, "node_id": node_id, "partition": partition}
            if app.rebalancing:
                return self.json({**where, "error": "rebalancing; retry"}, status=503)
            if partition in owned():
                status = node_status(runtime, context_id, node_id, partition)
                if status is None:
                    return self.json({**where, "error": "unknown node", "served_by": me}, status=404)
                return self.json({**status, "partition": partition, "served_by": me})
            if request.headers.get(FORWARDED_HEADER):
                return self.json({**where, "error": f"{me} does not own partition {partition}; retry"}, status=503)
            owner = owner_url(partition)
            if owner is None or owner.rstrip("/") == me.rstrip("/"):
                return self.json({**where, "error": "no worker owns the partition yet; retry"}, status=503)
            url = URL(owner.rstrip("/") + request.raw_path, encoded=True)
            try:
                async with app.http_client.get(
                    url, headers={FORWARDED_HEADER: me},
                    timeout=aiohttp.ClientTimeout(total=settings.web_forward_timeout),
                ) as resp:
                    body = await resp.read()
                    return self.bytes(body, status=resp.status,
                                      headers={"Content-Type": resp.headers.get("Content-Type", "application/json")})
            except (aiohttp.ClientError, TimeoutError) as exc:
                log.warning("forwarding %s to %s failed: %r", request.raw_path, owner, exc)
                return self.json({**where, "error": f"owner {owner} unreachable: {type(exc).__name__}"}, status=503)
