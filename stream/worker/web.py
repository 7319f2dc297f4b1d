"""The worker's web views (faust web; bound to ``CG_WEB_HOST``, loopback by default).

More (the module notes): docs/DURABILITY.md, section ``stream/worker/web.py``.
"""

from __future__ import annotations

import logging
from typing import Any

from aiokafka.partitioner import murmur2

from stream.domain.engine import node_detail
from stream.settings import Settings
from stream.worker.host import Host, Request, Response

log = logging.getLogger("checkpoint_guard.web")

FORWARDED_HEADER = "X-Checkpoint-Guard-Forwarded-By"


def partition_of(context_id: str, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for the UTF-8 ``context_id`` key
    (murmur2, as aiokafka's ``DefaultPartitioner`` and the Java client do)."""
    return int(murmur2(context_id.encode("utf-8")) & 0x7FFFFFFF) % partitions


def node_status(runtime: Any, context_id: str, node_id: str, partition: int) -> dict[str, Any] | None:
    """A node's status from this worker's state of ``partition`` (None: unknown node)."""
    part = runtime.durability.partition(partition) if runtime.durability else None
    if part is None:
        return None
    detail = node_detail(part.state, context_id, node_id)
    return None if detail is None else detail.to_record()


def install(host: Host, runtime: Any, settings: Settings) -> None:
    """Register the views with ``host``."""

    def owned() -> list[int]:
        return runtime.durability.owned() if runtime.durability else []

    def not_ready_reasons() -> list[str]:
        reasons = []
        if host.rebalancing:
            reasons.append("rebalancing")
        d = runtime.durability
        if d is None:
            reasons.append("starting")
            return reasons
        restoring = d.restoring()
        if restoring:
            reasons.append(f"restoring the state of partitions {restoring}")
        if not d.assigned():
            reasons.append("no partitions assigned")
        return reasons

    if hasattr(runtime.metrics, "ready_source"):  # checkpoint_guard_ready mirrors /readyz
        runtime.metrics.ready_source = lambda: not not_ready_reasons()
        runtime.metrics.seq_gap_limit = settings.seq_gap_limit

    async def healthz(request: Request) -> Response:
        return Response.json({"status": "ok"})

    async def readyz(request: Request) -> Response:
        reasons = not_ready_reasons()
        if reasons:
            return Response.json({"status": "not ready", "reasons": reasons}, status=503)
        return Response.json({"status": "ready", "partitions": owned(), "url": host.url})

    async def metrics(request: Request) -> Response:
        if not hasattr(runtime.metrics, "exposition"):
            return Response.json({"error": "metrics disabled (CG_METRICS_ENABLED=false)"}, status=404)
        body, content_type = runtime.metrics.exposition()
        return Response(200, body, content_type)

    async def nodes(request: Request) -> Response:
        context_id, node_id = request.params["context_id"], request.params["node_id"]
        partition = partition_of(context_id, settings.partitions)
        me = host.url
        where = {"context_id": context_id, "node_id": node_id, "partition": partition}
        if host.rebalancing:
            return Response.json({**where, "error": "rebalancing; retry"}, status=503)
        if partition in owned():
            status = node_status(runtime, context_id, node_id, partition)
            if status is None:
                return Response.json({**where, "error": "unknown node", "served_by": me}, status=404)
            return Response.json({**status, "partition": partition, "served_by": me})
        if request.headers.get(FORWARDED_HEADER):
            return Response.json({**where, "error": f"{me} does not own partition {partition}; retry"}, status=503)
        owner = host.owner_url(settings.compaction_topic, partition)
        if owner is None or owner.rstrip("/") == me.rstrip("/"):
            return Response.json({**where, "error": "no worker owns the partition yet; retry"}, status=503)
        try:
            return await host.http_get(owner.rstrip("/") + request.raw_path, {FORWARDED_HEADER: me},
                                       settings.web_forward_timeout)
        except ConnectionError as exc:
            log.warning("forwarding %s to %s failed: %s", request.raw_path, owner, exc)
            cause = type(exc.__cause__).__name__ if exc.__cause__ is not None else type(exc).__name__
            return Response.json({**where, "error": f"owner {owner} unreachable: {cause}"}, status=503)

    host.route("/healthz", healthz)
    host.route("/readyz", readyz)
    host.route("/metrics", metrics)
    host.route("/nodes/{context_id}/{node_id}", nodes)
