"""The faust app of the worker, built from settings: ``create_app(settings)``.

Nothing is built at import time: ``python -m stream worker`` and ``faust -A stream.app
worker`` (a shim) call :func:`create_app`. The app has one agent, ``validate``, over
both input topics (co-partitioned: partition ``p`` of each belongs to the same worker,
DESIGN.md §2), a commit timer, the rebalance hooks and the web views; everything else
is in :class:`~stream.worker.runtime.Runtime`.

Topics (all keyed by the UTF-8 ``context_id``; names from the settings):

* inputs — ``compaction-events`` (checkpoints), ``artifact-events`` (artifact lifecycle):
  read by ``validate``;
* outputs — ``checkpoint-alerts``, ``checkpoint-verdicts``, ``guard-deadletter`` (default
  partitioner on the key) and ``checkpoint-status`` (compacted, key
  ``["<context_id>","<node_id>"]``, written to the input's partition number): sent by
  the runtime's own producer;
* the state log ``<app_id>-state`` (:mod:`stream.worker.durability`), one partition per
  input partition number, written only by its owner.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import faust

from stream.settings import Settings, get_settings
from stream.worker import compat
from stream.worker.runtime import Runtime, stop_now


def broker_credentials(settings: Settings) -> Any:
    """faust credentials for the configured SSL/SASL settings (None = PLAINTEXT)."""
    proto = settings.security_protocol
    if proto == "PLAINTEXT":
        return None
    context = None
    if proto in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(
            purpose=ssl.Purpose.SERVER_AUTH,
            cafile=str(settings.ssl_cafile) if settings.ssl_cafile else None,
        )
        if settings.ssl_certfile:
            context.load_cert_chain(
                str(settings.ssl_certfile),
                keyfile=str(settings.ssl_keyfile) if settings.ssl_keyfile else None,
                password=settings.ssl_password.get_secret_value() if settings.ssl_password else None,
            )
    if proto == "SSL":
        return faust.SSLCredentials(context)
    password = settings.sasl_password.get_secret_value() if settings.sasl_password else ""
    return faust.SASLCredentials(username=settings.sasl_username or "", password=password, ssl_context=context,
                                 mechanism=settings.sasl_mechanism)


def create_app(settings: Settings | None = None) -> faust.App:
    """The worker's faust app (topics, agent, timer, hooks, web views) for ``settings``."""
    s = settings or get_settings()
    # faust's default canonical_url is http://<web_host>:<web_port>; other workers
    # forward node-status requests there (stream.worker.web), so it can be overridden.
    advertised = {"canonical_url": s.web_canonical_url} if s.web_canonical_url else {}
    app = faust.App(
        s.app_id,
        # faust would also read its own environment variables (PROCESSING_GUARANTEE,
        # BROKER_URL, WEB_PORT, ...) and silently override these settings.
        env={},
        broker=compat.broker_url(s.broker),
        broker_credentials=broker_credentials(s),
        broker_session_timeout=s.session_timeout,
        broker_heartbeat_interval=min(3.0, s.session_timeout / 3),
        datadir=str(s.data_dir),
        topic_partitions=s.partitions,
        topic_replication_factor=s.replication_factor,
        topic_allow_declare=s.create_topics,  # false: no CreateTopics (faust's leader topic must exist)
        processing_guarantee="at_least_once",
        consumer_auto_offset_reset="earliest",
        web_host=s.web_host,
        web_port=s.web_port,
        web_bind=s.web_host,
        **advertised,
        autodiscover=False,
        Worker="stream.worker.service:GuardWorker",
        Stream="stream.worker.compat:BatchStream",
        key_serializer="raw",
        value_serializer="raw",
    )
    app.fetch_max_wait_ms = s.fetch_max_wait_ms  # read by compat.InlineConsumerThread
    runtime = Runtime(app, s)
    app.runtime = runtime  # the worker (service.GuardWorker) and the web views use it

    inputs = app.topic(s.compaction_topic, s.artifact_topic, key_serializer="raw", value_serializer="raw",
                       partitions=s.partitions)

    @app.agent(inputs, name="validate")
    async def validate(stream: faust.StreamT) -> None:
        """Validate every checkpoint on arrival and whenever the store changes under it.

        The loop ends only when the app stops; ended otherwise (faust cancelled the
        actor, the stream failed) the worker exits 70 rather than live on consuming
        nothing, and a restart re-processes from the last commit."""
        try:
            async for events in stream.take_events(s.batch_max, within=s.batch_within):
                await runtime.handle(events)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            stop_now(RuntimeError(f"the agent's stream failed: {exc!r}"))
        if not app.should_stop or app.crashed:
            stop_now(RuntimeError("the agent stopped while the worker was running"))

    @app.timer(interval=max(0.05, min(s.commit_interval, s.max_idle or s.commit_interval) / 2))
    async def commit_timer() -> None:
        await runtime.tick()

    @app.on_partitions_revoked.connect
    async def _revoked(sender: Any, revoked: Any = None, **kwargs: Any) -> None:
        await runtime.on_revoked(revoked or ())

    @app.on_partitions_assigned.connect
    async def _assigned(sender: Any, assigned: Any = None, **kwargs: Any) -> None:
        await runtime.on_assigned(assigned or ())

    @app.on_before_shutdown.connect
    async def _shutdown(sender: Any, **kwargs: Any) -> None:
        await runtime.stop()

    from stream.worker import web

    web.install(app, runtime, s)
    return app
