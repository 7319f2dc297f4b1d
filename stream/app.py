"""The faust app of checkpoint-guard.

Topics and tables are declared once, in :mod:`stream.topology`; the agent lives in
:mod:`stream.agents`. This module only builds the :class:`faust.App` from
:class:`stream.settings.Settings` (so ``faust -A stream.app worker`` works too).
"""

from __future__ import annotations

import faust

from stream.settings import Settings, get_settings


def faust_broker_credentials(settings: Settings):
    """faust credentials object for the configured SSL/SASL settings (None = PLAINTEXT)."""
    import ssl

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
    username = settings.sasl_username or ""
    if settings.sasl_mechanism == "PLAIN":
        return faust.SASLCredentials(
            username=username, password=password, ssl_context=context, mechanism="PLAIN"
        )
    return faust.SASLCredentials(
        username=username, password=password, ssl_context=context, mechanism=settings.sasl_mechanism
    )


def create_app(settings: Settings | None = None) -> faust.App:
    """Build the faust app from settings (topics/tables/agents attach on import)."""
    s = settings or get_settings()
    # faust's default canonical_url is http://<web_host>:<web_port>; other workers
    # forward node-status requests there (stream.web), so it can be overridden.
    advertised = {"canonical_url": s.web_canonical_url} if s.web_canonical_url else {}
    return faust.App(
        s.app_id,
        # faust would also read its own environment variables (PROCESSING_GUARANTEE,
        # BROKER_URL, WEB_PORT, ...) and silently override these settings; only CG_*
        # configures the worker.
        env={},
        broker_session_timeout=s.session_timeout,
        broker_heartbeat_interval=min(3.0, s.session_timeout / 3),
        broker=s.broker,
        broker_credentials=faust_broker_credentials(s),
        store=s.store,
        datadir=str(s.data_dir),
        topic_partitions=s.partitions,
        topic_replication_factor=s.replication_factor,
        table_standby_replicas=s.table_standby_replicas,
        processing_guarantee="at_least_once",
        # Measured (docs/BENCHMARKS.md): a 5 ms linger made the worker *slower*
        # (faust's changelog buffer waits per record), so the default stays 0.
        producer_linger=s.producer_linger_ms / 1000.0,
        # A valid event can make a record over 1 MB (an alert naming 9,000 orphans, a
        # node record with a large constraint set); the topics allow max_request_bytes.
        producer_max_request_size=s.max_request_bytes,
        web_host=s.web_host,
        web_port=s.web_port,
        web_bind=s.web_host,
        **advertised,
        autodiscover=False,
        Worker="stream.worker:GuardWorker",
        key_serializer="raw",
        value_serializer="raw",
        # Tables hold JSON-ready values (DESIGN.md §7.2): JSON keys and values.
        table_key_serializer="json",
        table_value_serializer="json",
    )


settings = get_settings()
app = create_app(settings)

# Attach the topology and the agent (they import ``app`` from here), then the web
# views (/healthz, /readyz, /metrics, /nodes/...).
import stream.agents  # noqa: E402,F401
import stream.web  # noqa: E402,F401
