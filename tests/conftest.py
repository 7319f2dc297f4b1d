"""Shared test plumbing: markers by directory and the real Kafka broker (DESIGN.md §6).

Tests under ``tests/unit`` / ``tests/integration`` are marked ``unit`` / ``integration``.
Integration tests run against a *real* single-node Kafka, started lazily once per session
(``CG_TEST_BOOTSTRAP=host:port`` uses an existing one), always stopped, and never skipped:
a broker that cannot start makes them fail. Why it looks like this: docs/DEVELOPMENT.md
"Test plumbing".
"""

from __future__ import annotations

import asyncio
import atexit
import signal
import threading
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from stream.devtools import kafka_local
from stream.settings import Settings

TESTS_DIR = Path(__file__).resolve().parent

# No per-example deadline: a property test asserts behaviour, not speed (speed is bench/'s), and a loaded
# 2-core runner made a 200 ms deadline fail at random ("FlakyFailure ... DeadlineExceeded").
hypothesis_settings.register_profile("checkpoint-guard", deadline=None)
hypothesis_settings.load_profile("checkpoint-guard")
_DIR_MARKERS = {"unit": "unit", "integration": "integration"}

#: Seconds the broker may take from JVM launch to answering describe_cluster.
BROKER_START_TIMEOUT = 90.0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test by its top directory under tests/ (unit/ -> unit, integration/ -> integration)."""
    for item in items:
        try:
            top = item.path.resolve().relative_to(TESTS_DIR).parts[0]
        except (ValueError, IndexError):
            continue
        marker = _DIR_MARKERS.get(top)
        if marker is not None and item.get_closest_marker(marker) is None:
            item.add_marker(getattr(pytest.mark, marker))


# --------------------------------------------------------------------------- broker


class _BrokerGuard:
    """Stops the broker this session started exactly once, from whichever of the
    finalizer / atexit / signal handler gets there first."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._lock = threading.Lock()
        self._done = False
        self._old_handlers: dict[int, object] = {}

    def stop(self) -> None:
        with self._lock:
            if self._done:
                return
            self._done = True
        kafka_local.stop(self.settings, timeout=15)

    def install_signal_handlers(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            self._old_handlers[sig] = signal.signal(sig, self._on_signal)

    def restore_signal_handlers(self) -> None:
        for sig, old in self._old_handlers.items():
            signal.signal(sig, old)  # type: ignore[arg-type]
        self._old_handlers.clear()

    def _on_signal(self, signum: int, frame) -> None:  # noqa: ANN001
        self.stop()
        old = self._old_handlers.get(signum, signal.SIG_DFL)
        self.restore_signal_handlers()
        if callable(old):
            old(signum, frame)
        elif old == signal.SIG_DFL:
            signal.raise_signal(signum)


def _start_test_broker(home: Path) -> tuple[kafka_local.BrokerInfo, Settings]:
    """Start a broker in ``home`` on free ports; retry if a port is grabbed meanwhile."""
    last: Exception | None = None
    for _ in range(3):
        port, cport = kafka_local.free_ports(2)
        settings = Settings(
            broker=f"kafka://127.0.0.1:{port}",
            kafka_home=home,
            kafka_port=port,
            kafka_controller_port=cport,
        )
        try:
            info = kafka_local.start(settings, fresh=True, timeout=BROKER_START_TIMEOUT, die_with_parent=True)
            return info, settings
        except kafka_local.PortInUseError as exc:
            last = exc
    assert last is not None
    raise last


@pytest.fixture(scope="session")
def kafka_bootstrap(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``"host:port"`` of a real, ready Kafka broker for this test session.

    Started on first use (fresh temp kafka_home, free ports) and stopped at the end,
    or the broker named by ``CG_TEST_BOOTSTRAP``. Fails (never skips) with the reason
    when no broker can be had.
    """
    existing = Settings().test_bootstrap
    if existing:
        bootstrap = existing.split("://", 1)[-1]
        problem = None
        try:
            kafka_local.describe_cluster(bootstrap, timeout=10)
        except Exception as exc:  # noqa: BLE001
            problem = kafka_local.exc_line(exc)
        if problem:  # failed outside the except block: no chained traceback noise
            pytest.fail(f"CG_TEST_BOOTSTRAP={existing} does not answer describe_cluster: {problem}", pytrace=False)
        return bootstrap

    home = tmp_path_factory.mktemp("kafka-broker")
    try:
        info, settings = _start_test_broker(home)
    except kafka_local.KafkaLocalError as exc:
        problem = str(exc)
    else:
        problem = None
    if problem:
        pytest.fail(f"could not start the test Kafka broker: {problem}", pytrace=False)
    guard = _BrokerGuard(settings)
    request.addfinalizer(guard.restore_signal_handlers)
    request.addfinalizer(guard.stop)
    atexit.register(guard.stop)
    guard.install_signal_handlers()
    print(
        f"\n[kafka] {info.version} ready at {info.bootstrap} in {info.ready_seconds:.1f} s "
        f"(jars resolved in {info.resolve_seconds:.1f} s; home {info.kafka_home})"
    )
    return info.bootstrap


@pytest.fixture
def kafka_settings(kafka_bootstrap: str, tmp_path: Path) -> Settings:
    """Settings pointing at the test broker, isolated per test.

    Per test: a unique ``app_id`` (consumer group and faust changelog topic names),
    unique topic names (suffix ``-<8 hex>``), a fresh ``data_dir`` (DESIGN.md §7.7) and
    a free web port, so tests never see each other's data, even on a shared broker.
    Topics are NOT created: use the ``create_topics`` fixture.
    """
    suffix = uuid.uuid4().hex[:8]
    defaults = Settings.model_fields
    return Settings(
        broker=f"kafka://{kafka_bootstrap}",
        app_id=f"cg-test-{suffix}",
        data_dir=tmp_path / "worker",
        web_port=kafka_local.free_ports(1)[0],
        **{
            name: f"{defaults[name].default}-{suffix}"
            for name in ("compaction_topic", "artifact_topic", "alerts_topic", "verdicts_topic", "deadletter_topic")
        },
    )


async def create_kafka_topics(
    bootstrap: str,
    topics: Iterable[str] | Mapping[str, int],
    partitions: int = 1,
    *,
    replication_factor: int = 1,
    timeout: float = 30.0,
) -> None:
    """Create ``topics`` on ``bootstrap`` with aiokafka's admin client and wait until
    every partition has a leader (so producers do not race the creation).

    ``topics``: names (all get ``partitions``) or a ``{name: partitions}`` mapping.
    Raises AssertionError naming the topic on a Kafka error (TOPIC_ALREADY_EXISTS,
    code 36, is fine) or when leaders do not appear within ``timeout`` seconds.
    """
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    wanted = dict(topics) if isinstance(topics, Mapping) else {t: partitions for t in topics}
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=int(timeout * 1000))
    await admin.start()
    try:
        resp = await admin.create_topics(
            [NewTopic(name, num_partitions=n, replication_factor=replication_factor) for name, n in wanted.items()]
        )
        for name, code, *_ in resp.topic_errors:
            assert code in (0, 36), f"creating topic {name!r} failed with Kafka error code {code}"
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            described = {t["topic"]: t for t in await admin.describe_topics(list(wanted))}
            pending = [
                name
                for name, n in wanted.items()
                if described.get(name, {}).get("error_code", -1) != 0
                or len(described[name]["partitions"]) != n
                or any(p["leader"] < 0 for p in described[name]["partitions"])
            ]
            if not pending:
                return
            assert loop.time() < deadline, f"topics without leaders after {timeout} s: {pending}"
            await asyncio.sleep(0.1)
    finally:
        await admin.close()


@pytest.fixture
def create_topics(kafka_bootstrap: str) -> Callable[..., Awaitable[None]]:
    """``await create_topics(names_or_mapping, partitions=1)`` on the test broker
    (see :func:`create_kafka_topics`)."""

    async def _create(topics: Iterable[str] | Mapping[str, int], partitions: int = 1, **kw) -> None:
        await create_kafka_topics(kafka_bootstrap, topics, partitions, **kw)

    return _create
