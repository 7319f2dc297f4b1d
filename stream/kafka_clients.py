"""aiokafka clients built from :class:`~stream.settings.Settings` (the non-faust edge).

Every command that talks to Kafka outside the faust worker (``topics create``,
``ingest --to-kafka``, ``replay --from-kafka``, ``export``, ``explain``, ``tail``,
``remediate``, the worker's startup topic check) and the pipeline client
(:mod:`stream.client`) builds its producer, consumer or admin client here, so SSL/SASL
settings apply everywhere and secrets are only read (``get_secret_value()``) here and
in :func:`stream.app.faust_broker_credentials` (the worker's own clients). A test
(tests/unit/test_security_settings.py) fails if any other module builds an aiokafka client itself.

A refused SASL login looks, to aiokafka, like an unreachable broker ("Unable to
bootstrap"; the real reason is only logged). :func:`started` adds the likely cause to
that error when SASL is configured.
"""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator, Iterator
from typing import Any, TypeVar

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import KafkaConnectionError

from stream.errors import ConfigurationError, KafkaUnavailable, describe
from stream.kafka_errors import aiokafka_line, login_hint
from stream.settings import Settings


def client_kwargs(settings: Settings) -> dict[str, Any]:
    """aiokafka connection kwargs: bootstrap servers plus security settings."""
    kw: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap_servers,
        "security_protocol": settings.security_protocol,
    }
    if settings.security_protocol in ("SSL", "SASL_SSL"):
        ctx = ssl.create_default_context(
            cafile=str(settings.ssl_cafile) if settings.ssl_cafile else None
        )
        if settings.ssl_certfile:
            ctx.load_cert_chain(
                str(settings.ssl_certfile),
                keyfile=str(settings.ssl_keyfile) if settings.ssl_keyfile else None,
                password=settings.ssl_password.get_secret_value() if settings.ssl_password else None,
            )
        kw["ssl_context"] = ctx
    if settings.security_protocol.startswith("SASL"):
        kw["sasl_mechanism"] = settings.sasl_mechanism
        kw["sasl_plain_username"] = settings.sasl_username
        kw["sasl_plain_password"] = (
            settings.sasl_password.get_secret_value() if settings.sasl_password else None
        )
    return kw


def kafka_error(settings: Settings, exc: BaseException, doing: str = "cannot reach Kafka") -> str:
    """One line for a Kafka failure of a command: what, where, and the fix (:func:`stream.kafka_errors.aiokafka_line`);
    an exception that is not aiokafka's gets :func:`stream.errors.describe`'s line."""
    if type(exc).__module__.split(".")[0] != "aiokafka":  # ours (topics missing, ...) or a bug
        return describe(exc)[0]
    return aiokafka_line(settings, exc, doing)


@contextlib.contextmanager
def client_errors(settings: Settings, doing: str) -> Iterator[None]:
    """The pipeline client's (:mod:`stream.client`) Kafka failures while ``doing``: an aiokafka
    error becomes :class:`~stream.errors.KafkaUnavailable` (a GuardError, the error chained) whose
    line says what failed, where, and the fix — e.g. ``the Guard cannot reach Kafka at
    127.0.0.1:9092: nothing listens there (connection refused); start the broker ...``."""
    from stream.logs import kafka_errors_noted

    with kafka_errors_noted():
        try:
            yield
        except Exception as exc:
            if type(exc).__module__.split(".")[0] != "aiokafka":
                raise
            raise KafkaUnavailable(aiokafka_line(settings, exc, doing)) from exc


_Client = TypeVar("_Client", AIOKafkaAdminClient, AIOKafkaProducer, AIOKafkaConsumer)


async def close_client(client: _Client) -> None:
    """Close an admin client / stop a producer or consumer (idempotent, never raises)."""
    with contextlib.suppress(Exception):
        await (client.close() if isinstance(client, AIOKafkaAdminClient) else client.stop())


async def start_client(settings: Settings, client: _Client) -> _Client:
    """``await client.start()``; a connection error gets :func:`login_hint` appended.

    A client that failed to start is closed before the error propagates, so no
    "Unclosed AIOKafka..." warning follows the command's one-line error.
    """
    try:
        await client.start()
    except BaseException as exc:
        await close_client(client)
        hint = login_hint(settings)
        if not isinstance(exc, KafkaConnectionError) or not hint:
            raise
        raise KafkaConnectionError(f"{str(exc).removeprefix('KafkaConnectionError: ')}; {hint}") from None
    return client


@contextlib.asynccontextmanager
async def started(settings: Settings, client: _Client) -> AsyncIterator[_Client]:
    """Start ``client`` (:func:`start_client`), close/stop it on exit."""
    await start_client(settings, client)
    try:
        yield client
    finally:
        await close_client(client)


def producer(settings: Settings, **extra: Any) -> AIOKafkaProducer:
    """A producer with acks=all (alerts and inputs must not be lost)."""
    return AIOKafkaProducer(**client_kwargs(settings), acks="all", **extra)


def idempotent_producer(settings: Settings, **extra: Any) -> AIOKafkaProducer:
    """The producer of :mod:`stream.client`: acks=all and ``enable_idempotence`` (a retry
    inside the producer never duplicates or reorders a record on its partition).

    ``max_request_size`` leaves room for one input message of ``CG_MAX_MESSAGE_BYTES``
    plus its batch overhead, so a message the decoder accepts is never refused here.
    ``linger_ms=5`` is the Java producer's default since Kafka 4.0 (KIP-1030): fuller
    batches for a pipeline that emits event by event, at most 5 ms more per flush.
    """
    extra.setdefault("max_request_size", settings.max_message_bytes + (64 << 10))
    extra.setdefault("linger_ms", 5)
    return AIOKafkaProducer(**client_kwargs(settings), acks="all", enable_idempotence=True, **extra)


def consumer(settings: Settings, *topics: str, **extra: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(*topics, **client_kwargs(settings), **extra)


def admin(settings: Settings) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(**client_kwargs(settings))


async def topic_partitions(settings: Settings, topics: list[str] | tuple[str, ...]) -> dict[str, int | None]:
    """topic -> partition count (None when the topic does not exist)."""
    async with started(settings, admin(settings)) as client:
        described = await client.describe_topics(list(topics))
    out: dict[str, int | None] = {}
    for t in described:
        name = t["topic"]
        err = t.get("error_code", 0)
        out[name] = None if err else len(t["partitions"])
    return out


async def partitions_for(settings: Settings, consumer: Any, topic: str) -> set[int]:
    """The partition numbers of ``topic``: the consumer's metadata, else the broker's (a
    describe); empty when the topic does not exist."""
    parts = consumer.partitions_for_topic(topic)
    if parts:
        return set(parts)
    count = (await topic_partitions(settings, [topic])).get(topic)
    return set(range(count)) if count else set()


async def create_topics(
    settings: Settings, names: list[str] | tuple[str, ...], partitions: int, *, compacted: bool = False,
    configs: dict[str, str] | None = None,
) -> dict[str, str]:
    """Create missing topics; return topic -> "created" | "exists".

    ``compacted``: ``cleanup.policy=compact``; ``configs``: more topic configs.

    Raises ConfigurationError naming every existing topic whose partition count
    differs from ``partitions`` (a context would be split across partitions).
    """
    existing = await topic_partitions(settings, names)
    wrong = {t: n for t, n in existing.items() if n is not None and n != partitions}
    if wrong:
        detail = ", ".join(f"{t} has {n}" for t, n in sorted(wrong.items()))
        raise ConfigurationError(
            f"existing topics have a different partition count than {partitions}: {detail}; "
            "delete them or set CG_PARTITIONS to match"
        )
    missing = [t for t in names if existing.get(t) is None]
    result = {t: "exists" for t in names if existing.get(t) is not None}
    if missing:
        async with started(settings, admin(settings)) as client:
            resp = await client.create_topics(
                [
                    NewTopic(
                        t, num_partitions=partitions, replication_factor=settings.replication_factor,
                        topic_configs={
                            "max.message.bytes": str(settings.max_request_bytes),
                            **({"cleanup.policy": "compact"} if compacted else {}),
                            **(configs or {}),
                        },
                    )
                    for t in missing
                ]
            )
        for t, code, *_ in getattr(resp, "topic_errors", getattr(resp, "topic_error_codes", [])):
            if code not in (0, 36):  # 36 = TOPIC_ALREADY_EXISTS (a concurrent create)
                raise ConfigurationError(f"could not create topic {t}: Kafka error code {code}")
        for t in missing:
            result[t] = "created"
    return result


def project_topics(settings: Settings) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(plain, compacted)``: the inputs, the outputs and the remediation requests; the
    node-status topic is compacted (a reader holds every node's current status). The
    state log is separate (:func:`ensure_state_topic`)."""
    plain = (*settings.input_topics, settings.alerts_topic, settings.verdicts_topic,
             settings.deadletter_topic, settings.remediation_topic)
    return plain, (settings.status_topic,)


async def create_project_topics(settings: Settings) -> dict[str, str]:
    """Create every topic of :func:`project_topics` (idempotent); topic -> created | exists."""
    plain, compacted = project_topics(settings)
    result = await create_topics(settings, plain, settings.partitions)
    result.update(await create_topics(settings, compacted, settings.partitions, compacted=True))
    return result


async def max_message_bytes(settings: Settings, topics: list[str] | tuple[str, ...]) -> dict[str, int]:
    """topic -> its ``max.message.bytes`` (the largest record batch the broker accepts)."""
    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    async with started(settings, admin(settings)) as client:
        responses = await client.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, t, configs={"max.message.bytes": None}) for t in topics])
    out: dict[str, int] = {}
    for resp in responses:
        for resource in resp.resources:
            name, configs = resource[3], resource[4]
            for entry in configs:
                if entry[0] == "max.message.bytes" and entry[1] is not None:
                    out[name] = int(entry[1])
    return out


async def wait_until_described(settings: Settings, names: list[str] | tuple[str, ...], *,
                               timeout: float = 15.0) -> None:
    """Wait until every broker answer about ``names`` includes their configs.

    Right after CreateTopics the broker that answers may not know a new topic yet
    (KRaft metadata propagates asynchronously): a DescribeConfigs or AlterConfigs sent at
    once fails with an unknown topic. A command that says "created" waits for this, so the
    next command (or the worker's start-up check) sees the topics as they are.
    """
    import asyncio
    import time

    from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

    deadline = time.monotonic() + timeout
    async with started(settings, admin(settings)) as client:
        while True:
            responses = await client.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, name) for name in names])
            resources = [r for resp in responses for r in resp.resources]
            if len(resources) == len(names) and all(r[0] == 0 and r[4] for r in resources):
                return
            if time.monotonic() > deadline:
                raise ConfigurationError(f"topics {', '.join(names)} were created but the broker did not "
                                         f"describe them within {timeout:.0f}s")
            await asyncio.sleep(0.2)


def missing_topics(names: list[str] | tuple[str, ...]) -> ConfigurationError:
    """The one error for topics that do not exist: names them and says the fix."""
    return ConfigurationError(
        f"topics do not exist: {', '.join(names)}; run `checkpoint-guard topics create` first "
        "(or check CG_BROKER and the CG_*_TOPIC settings)"
    )


async def require_topics(settings: Settings, topics: list[str] | tuple[str, ...]) -> dict[str, int]:
    """topic -> partition count; raises :func:`missing_topics` at once for any that does
    not exist (a producer would wait 40 s for its metadata before failing)."""
    counts = await topic_partitions(settings, topics)
    missing = [t for t in topics if counts.get(t) is None]
    if missing:
        raise missing_topics(missing)
    return {t: n for t, n in counts.items() if n is not None}


async def check_copartitioned(settings: Settings) -> int:
    """Refuse to run on input topics that are missing or not co-partitioned.

    Returns the common partition count. Raises ConfigurationError with a message that
    names the topics and their counts (DESIGN.md §2); a broker that cannot be reached
    raises aiokafka's error (:func:`kafka_error` says it in one line).
    """
    counts = await require_topics(settings, [*settings.input_topics, *settings.output_topics])
    a, b = settings.input_topics
    if counts[a] != counts[b]:
        raise ConfigurationError(
            f"input topics are not co-partitioned: {a} has {counts[a]} partitions, {b} has {counts[b]}; "
            "a context's events would land on different partitions and split its state; re-create them with "
            "one count under a new CG_APP_ID (docs/OPERATIONS.md §3)"
        )
    if counts[a] != settings.partitions:
        raise ConfigurationError(
            f"input topics have {counts[a]} partitions but CG_PARTITIONS={settings.partitions} "
            f"(the state must match the input topics); set CG_PARTITIONS={counts[a]}"
        )
    return counts[a]


def state_topic(settings: Settings) -> str:
    """The worker's state log (``stream.worker.durability``): ``<app_id>-state``."""
    return f"{settings.app_id}-state"


def leader_topic(settings: Settings) -> str:
    """faust's leader-election topic of the worker's app (one partition; faust creates it at
    start unless ``CG_CREATE_TOPICS=false``): ``<app_id>-__assignor-__leader``."""
    return f"{settings.app_id}-__assignor-__leader"


async def ensure_leader_topic(settings: Settings) -> dict[str, str]:
    """Create faust's leader topic if missing (what faust itself would create)."""
    return await create_topics(settings, [leader_topic(settings)], 1)


async def ensure_worker_topics(settings: Settings) -> None:
    """The worker's own topics at start: created when missing, or — with
    ``CG_CREATE_TOPICS=false`` — required to exist (no CreateTopics request is sent)."""
    if settings.create_topics:
        await ensure_state_topic(settings)
    else:
        await require_topics(settings, [state_topic(settings), leader_topic(settings)])


async def ensure_state_topic(settings: Settings) -> dict[str, str]:
    """Create the state log if missing: one partition per input partition number, kept
    forever (``retention.ms=-1``; the worker deletes what its snapshots make obsolete)."""
    return await create_topics(settings, [settings.state_topic], settings.partitions,
                               configs={"retention.ms": "-1", "retention.bytes": "-1"})
