"""The single-node Apache Kafka (KRaft combined mode) the project starts by itself.

Tests and local runs need a *real* broker (DESIGN.md §6 forbids mock brokers), with Java
and Maven but no Docker, one broker per developer or test session side by side. Every
failure is a :class:`KafkaLocalError` whose message is one line a person can act on.
Configuration comes only from :class:`stream.settings.Settings`. How it resolves, starts,
stops and secures a broker: docs/DEVELOPMENT.md "The local broker".
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from stream.devtools import ctrl_c_deferred
from stream.errors import GuardError
from stream.settings import Settings

__all__ = [
    "BrokerInfo",
    "BrokerStatus",
    "KafkaLocalError",
    "PortInUseError",
    "StopResult",
    "describe_cluster",
    "exc_line",
    "free_ports",
    "render_server_properties",
    "resolve_jars",
    "sasl_users_from_settings",
    "start",
    "status",
    "stop",
]

#: The throw-away pom Maven resolves the broker's jars from (package data).
POM_FILE = Path(__file__).resolve().parent / "kafka" / "pom.xml"
#: log4j2 configuration of the broker (writes to ``-Dcg.kafka.log.file``; package data).
LOG4J2_FILE = Path(__file__).resolve().parent / "kafka" / "log4j2.properties"

HOST = "127.0.0.1"
LOG_NAME = "broker.log"
PID_NAME = "broker.pid"
INFO_NAME = "broker.json"
PROPS_NAME = "server.properties"
DATA_NAME = "data"
LOCK_NAME = ".lock"
_MARKER = ".complete"
#: Lines of the broker log quoted after a failed start.
LOG_TAIL_LINES = 30
#: The client listener's name (and protocol) of a SASL broker.
SASL_LISTENER = "SASL_PLAINTEXT"
#: Every mechanism a SASL broker offers; each user may use any of them.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: The user the broker authenticates as to itself (its password is generated per start).
INTERNAL_USER = "cg-broker"
_SASL_NAME = re.compile(r"[A-Za-z0-9._-]{1,64}")
_SASL_PASSWORD = re.compile(r"[!#-\[\]-~]{1,256}")  # printable ASCII except space, " and \


class KafkaLocalError(GuardError, RuntimeError):
    """The local broker could not be resolved, started, probed or stopped.

    ``str(error)`` starts with one line saying what went wrong and what to do; a broker
    that died on start adds the last lines of its log below that line.
    """


class PortInUseError(KafkaLocalError):
    """A port the broker needs is already bound by another process."""


@dataclass(frozen=True)
class BrokerInfo:
    """A started, ready broker.

    ``bootstrap`` is ``host:port`` (aiokafka style; faust wants ``kafka://`` + it).
    ``resolve_seconds`` is the wall time spent in Maven (0.0 on a jar-cache hit);
    ``ready_seconds`` is from launching the JVM to the first successful
    ``describe_cluster``.
    """

    pid: int
    bootstrap: str
    port: int
    controller_port: int
    kafka_home: Path
    log_file: Path
    version: str
    cluster_id: str
    resolve_seconds: float
    ready_seconds: float
    security_protocol: str = "PLAINTEXT"

    @property
    def broker_url(self) -> str:
        """faust-style URL, ``kafka://host:port``."""
        return f"kafka://{self.bootstrap}"


@dataclass(frozen=True)
class BrokerStatus:
    """What :func:`status` found in a kafka_home.

    ``running``: the PID file names a live JVM running this home's broker.
    ``ready``: it also answered ``describe_cluster`` within the probe timeout.
    ``pid``/``bootstrap`` are None when nothing is running. ``detail`` is one line.
    """

    running: bool
    ready: bool
    pid: int | None
    bootstrap: str | None
    kafka_home: Path
    log_file: Path
    detail: str


@dataclass(frozen=True)
class StopResult:
    """What :func:`stop` did. ``stopped`` is False when there was nothing to stop
    (stopping twice is harmless); ``message`` is one line saying which case it was."""

    stopped: bool
    pid: int | None
    message: str


# ----------------------------------------------------------------------------- tools


def _which(tool: str, why: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise KafkaLocalError(f"`{tool}` not found on PATH: {why}")
    return path


def _java() -> str:
    return _which(
        "java",
        "the local Kafka broker needs a Java 17+ runtime (e.g. apt-get install "
        "openjdk-17-jre-headless), or use a running broker (CG_BROKER; CG_TEST_BOOTSTRAP in tests)",
    )


def _mvn() -> str:
    return _which(
        "mvn",
        "Maven is needed once to fetch the Kafka jars from Maven Central "
        "(e.g. apt-get install maven), or fill the jar cache by other means",
    )


@contextlib.contextmanager
def _flock(path: Path) -> Iterator[None]:
    """Exclusive advisory lock on ``path`` (created if missing), released on exit."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def exc_line(exc: BaseException) -> str:
    """``"Type: message"`` on one line, without repeating a type name the message
    already starts with (aiokafka's errors do)."""
    name, msg = type(exc).__name__, _one_line(str(exc))
    return msg if msg.startswith(name) else (f"{name}: {msg}" if msg else name)


# ------------------------------------------------------------------------------ jars


def _pom_digest() -> str:
    """sha256 of the pom without XML comments and blank space (editing a comment must
    not force a new Maven run)."""
    text = re.sub(r"<!--.*?-->", "", POM_FILE.read_text(), flags=re.S)
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()


def _cache_dir(settings: Settings) -> Path:
    return Path(settings.kafka_cache) / settings.kafka_version


def _cache_complete(version_dir: Path) -> bool:
    """True when the marker names this pom's digest and every jar it lists exists."""
    marker = version_dir / _MARKER
    try:
        meta = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    if meta.get("pom_sha256") != _pom_digest():
        return False
    libs = version_dir / "libs"
    jars = meta.get("jars") or []
    return bool(jars) and all((libs / j).is_file() for j in jars)


def resolve_jars(settings: Settings) -> tuple[Path, float]:
    """Make sure the broker's jars are in the cache; return ``(libs_dir, seconds)``.

    ``seconds`` is the time spent in Maven (0.0 when the cache was already complete).
    Runs ``mvn -q -B -f stream/devtools/kafka/pom.xml -Dkafka.version=V
    dependency:copy-dependencies`` into a temp dir, then renames it into place and
    writes a marker (pom digest + jar names), all under a file lock, so concurrent
    callers resolve once. Raises :class:`KafkaLocalError` when ``mvn`` is missing or
    fails (the message carries Maven's first error line).
    """
    version_dir = _cache_dir(settings)
    libs = version_dir / "libs"
    if _cache_complete(version_dir):
        return libs, 0.0
    if not POM_FILE.is_file():
        raise KafkaLocalError(f"broker pom not found at {POM_FILE} (run from a checkout of the project)")
    with _flock(Path(settings.kafka_cache) / f"{settings.kafka_version}.lock"):
        if _cache_complete(version_dir):  # someone else finished while we waited
            return libs, 0.0
        mvn = _mvn()
        tmp = version_dir / f"libs.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        t0 = time.monotonic()
        cmd = [
            mvn, "-q", "-B", "-Dstyle.color=never", "-f", str(POM_FILE),
            f"-Dkafka.version={settings.kafka_version}",
            "dependency:copy-dependencies", f"-DoutputDirectory={tmp}",
        ]  # fmt: skip
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise KafkaLocalError(
                f"mvn did not finish resolving kafka_2.13:{settings.kafka_version} in 900 s "
                "(is Maven Central reachable?)"
            ) from exc
        seconds = time.monotonic() - t0
        jars = sorted(p.name for p in tmp.glob("*.jar"))
        if proc.returncode != 0 or not jars:
            shutil.rmtree(tmp, ignore_errors=True)
            out = re.sub(r"\x1b\[[0-9;]*m", "", (proc.stdout or "") + "\n" + (proc.stderr or ""))
            errors = [ln for ln in out.splitlines() if "ERROR" in ln and ln.strip() != "[ERROR]"]
            first = _one_line(errors[0] if errors else (out.strip().splitlines() or ["no output"])[-1])
            first = first.removeprefix("[ERROR] ").removesuffix(" -> [Help 1]")
            raise KafkaLocalError(
                f"mvn failed to resolve org.apache.kafka:kafka_2.13:{settings.kafka_version} "
                f"(exit {proc.returncode}): {first[:300]}"
            )
        old_jars = sorted(p.name for p in libs.glob("*.jar")) if libs.is_dir() else []
        if old_jars == jars:
            # Same jar set (e.g. only the marker was stale): keep the dir running
            # brokers load classes from lazily.
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            retired = version_dir / f"libs.old-{os.getpid()}"
            if libs.is_dir():
                libs.rename(retired)
            tmp.rename(libs)
            shutil.rmtree(retired, ignore_errors=True)
        marker = {"pom_sha256": _pom_digest(), "jars": jars, "resolve_seconds": round(seconds, 2)}
        (version_dir / _MARKER).write_text(json.dumps(marker, indent=1) + "\n")
        return libs, seconds


# ------------------------------------------------------------------------ properties


def check_sasl_users(users: Mapping[str, str]) -> None:
    """Refuse user names and passwords the JAAS / ``--add-scram`` syntax cannot carry.

    Names: 1-64 of ``A-Za-z0-9._-``; passwords: 1-256 printable ASCII characters other
    than space, ``"`` and ``\\``. The message names the user, never the password.
    """
    if not users:
        raise KafkaLocalError("a SASL broker needs at least one user (name and password)")
    for name, password in users.items():
        if not _SASL_NAME.fullmatch(name or "") or name == INTERNAL_USER:
            raise KafkaLocalError(
                f"SASL user name {name!r} is not allowed: use 1-64 of A-Za-z0-9._- (and not {INTERNAL_USER!r})"
            )
        if not _SASL_PASSWORD.fullmatch(password or ""):
            raise KafkaLocalError(
                f"the password of SASL user {name!r} is not allowed: use 1-256 printable ASCII "
                'characters other than space, " and \\'
            )


def sasl_users_from_settings(settings: Settings) -> dict[str, str]:
    """``{CG_SASL_USERNAME: CG_SASL_PASSWORD}``: the user the clients log in as.

    Raises :class:`KafkaLocalError` when either is unset.
    """
    if not settings.sasl_username or settings.sasl_password is None:
        raise KafkaLocalError(
            "a SASL broker needs CG_SASL_USERNAME and CG_SASL_PASSWORD (the user the clients log in as)"
        )
    return {settings.sasl_username: settings.sasl_password.get_secret_value()}


def render_server_properties(
    settings: Settings,
    data_dir: Path,
    *,
    sasl_users: Mapping[str, str] | None = None,
    internal_password: str | None = None,
) -> str:
    """The broker's ``server.properties`` text for ``settings`` (one node, KRaft combined).

    A static ``controller.quorum.voters`` is used (no ``--standalone`` format) so the
    controller port may change between runs that keep their data. With ``sasl_users``
    (name -> password) the client listener is ``SASL_PLAINTEXT`` (PLAIN and SCRAM) and
    the text holds passwords: write it where only the owner can read it.
    """
    port, cport = settings.kafka_port, settings.kafka_controller_port
    if sasl_users:
        check_sasl_users(sasl_users)
        internal = internal_password or secrets.token_hex(16)
        users = {INTERNAL_USER: internal, **sasl_users}
        plain_users = " ".join(f'user_{name}="{pw}"' for name, pw in users.items())
        listener = SASL_LISTENER
        security = [
            f"sasl.enabled.mechanisms={','.join(SASL_MECHANISMS)}",
            "sasl.mechanism.inter.broker.protocol=PLAIN",
            # Property type PASSWORD: the broker logs these as [hidden].
            f"listener.name.{listener.lower()}.plain.sasl.jaas.config="
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{INTERNAL_USER}" password="{internal}" {plain_users};',
            *(
                f"listener.name.{listener.lower()}.{m.lower()}.sasl.jaas.config="
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                for m in SASL_MECHANISMS[1:]
            ),
        ]
    else:
        listener, security = "PLAINTEXT", []
    lines = [
        "# Written by stream/devtools/kafka_local.py; rewritten on every start.",
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@{HOST}:{cport}",
        f"listeners={listener}://{HOST}:{port},CONTROLLER://{HOST}:{cport}",
        f"advertised.listeners={listener}://{HOST}:{port}",
        f"listener.security.protocol.map={listener}:{listener},CONTROLLER:PLAINTEXT",
        "controller.listener.names=CONTROLLER",
        f"inter.broker.listener.name={listener}",
        *security,
        f"log.dirs={data_dir}",
        "num.partitions=1",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        # One node, few groups: one partition per internal topic instead of 50 makes
        # the first consumer-group join ~2 s faster and changes nothing clients see.
        "offsets.topic.num.partitions=1",
        "transaction.state.log.num.partitions=1",
        "share.coordinator.state.topic.num.partitions=1",
        # A test broker: small segments/indexes keep the data dir small.
        "log.segment.bytes=67108864",
        "log.retention.check.interval.ms=60000",
    ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- ports


def _port_free(port: int, host: str = HOST) -> bool:
    """True when ``host:port`` can be bound (SO_REUSEADDR like the JVM, so a
    TIME_WAIT leftover does not count as taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def free_ports(n: int = 2, host: str = HOST) -> list[int]:
    """``n`` distinct TCP ports free on ``host`` right now (the OS picks them).

    Another process may still grab one before the broker binds it; :func:`start`
    then raises :class:`PortInUseError` and the caller can pick again.
    """
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            socks.append(s)
            s.bind((host, 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _check_ports(settings: Settings) -> None:
    port, cport = settings.kafka_port, settings.kafka_controller_port
    if port == cport:
        raise KafkaLocalError(
            f"kafka_port and kafka_controller_port are both {port}; the broker needs two different ports"
        )
    for name, p, hint in (
        ("PLAINTEXT", port, "CG_KAFKA_PORT / --port"),
        ("CONTROLLER", cport, "CG_KAFKA_CONTROLLER_PORT / --controller-port"),
    ):
        if not _port_free(p):
            raise PortInUseError(
                f"port {p} on {HOST} ({name} listener) is already in use, probably by another "
                f"broker; pick another with {hint} (and another CG_KAFKA_HOME)"
            )


# ----------------------------------------------------------------------- pid / proc


def _paths(home: Path) -> dict[str, Path]:
    return {
        "log": home / LOG_NAME,
        "pid": home / PID_NAME,
        "info": home / INFO_NAME,
        "props": home / PROPS_NAME,
        "data": home / DATA_NAME,
        "lock": home / LOCK_NAME,
    }


def _read_pid(home: Path) -> int | None:
    try:
        return int((home / PID_NAME).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _read_info(home: Path) -> dict:
    try:
        return json.loads((home / INFO_NAME).read_text())
    except (OSError, ValueError):
        return {}


def _write_atomic(path: Path, text: str, *, private: bool = False) -> None:
    """Write via a temp file and rename; ``private``: mode 0600 (it may hold passwords)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    tmp.replace(path)


def _clear_pid(home: Path) -> None:
    for name in (PID_NAME, INFO_NAME):
        with contextlib.suppress(FileNotFoundError):
            (home / name).unlink()


#: Popen objects of brokers this process launched (so they can be reaped, and so
#: Python does not warn about a child still running when the object is collected).
_CHILDREN: dict[int, subprocess.Popen] = {}


def _reap(pid: int) -> None:
    proc = _CHILDREN.get(pid)
    if proc is not None:
        if proc.poll() is not None:
            _CHILDREN.pop(pid, None)
        return
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    _reap(pid)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _is_our_broker(pid: int, home: Path) -> bool:
    """True when ``pid`` is a live ``kafka.Kafka`` JVM started with this home's
    server.properties (guards against signalling a recycled PID)."""
    if not _alive(pid):
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return sys.platform != "linux"  # no /proc: trust the PID file
    props = str((home / PROPS_NAME).resolve()).encode()
    return b"kafka.Kafka" in argv and props in argv


def _log_tail(log_file: Path, n: int = LOG_TAIL_LINES) -> str:
    try:
        with open(log_file, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 64 * 1024))
            lines = fh.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return "(no broker log)"
    return "\n".join(lines[-n:]) or "(broker log is empty)"


def _signal_group(pid: int, sig: int) -> None:
    """Signal the broker's process group (it leads its own session), else just it."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _terminate(pid: int, timeout: float) -> bool:
    """SIGTERM, wait up to ``timeout`` s, then SIGKILL. True if SIGKILL was needed."""
    _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return False
        time.sleep(0.1)
    _signal_group(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return True


# ------------------------------------------------------------------------ readiness


async def _describe_cluster_async(bootstrap: str, request_timeout_ms: int, auth: Mapping[str, str]) -> dict:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=request_timeout_ms, **auth)
    await admin.start()
    try:
        return await admin.describe_cluster()
    finally:
        await admin.close()


def _run_coro_blocking(coro):
    """Run ``coro`` to completion from sync code, even when a loop is already running
    in this thread (then it runs on a fresh loop in a helper thread)."""
    try:
        asyncio.get_running_loop()
        in_loop = True
    except RuntimeError:
        in_loop = False
    if not in_loop:  # outside the except block: no misleading exception context
        return asyncio.run(coro)
    box: dict = {}

    def _target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    t = threading.Thread(target=_target, name="kafka-local-probe", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


@contextlib.contextmanager
def _quiet_aiokafka() -> Iterator[None]:
    """aiokafka logs every refused connection at ERROR; while probing that is expected."""
    logger = logging.getLogger("aiokafka")
    old = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(old)


def describe_cluster(bootstrap: str, timeout: float = 5.0, *, auth: Mapping[str, str] | None = None) -> dict:
    """One aiokafka ``describe_cluster`` against ``bootstrap`` (``host:port``).

    ``auth``: aiokafka security kwargs (``security_protocol``, ``sasl_mechanism``,
    ``sasl_plain_username``, ``sasl_plain_password``) for a SASL broker.
    Returns aiokafka's dict (``cluster_id``, ``controller_id``, ``brokers`` ...).
    Raises whatever aiokafka raises (e.g. ``KafkaConnectionError``) when the broker is
    not answering within ``timeout`` seconds.
    """
    with _quiet_aiokafka():
        return _run_coro_blocking(
            asyncio.wait_for(_describe_cluster_async(bootstrap, int(timeout * 1000), auth or {}), timeout)
        )


def _plain_auth(users: Mapping[str, str]) -> dict[str, str]:
    name, password = next(iter(users.items()))
    return {
        "security_protocol": SASL_LISTENER, "sasl_mechanism": "PLAIN",
        "sasl_plain_username": name, "sasl_plain_password": password,
    }


def _died_error(summary: str, log_file: Path) -> KafkaLocalError:
    tail = _log_tail(log_file)
    cls = PortInUseError if "Address already in use" in tail else KafkaLocalError
    return cls(f"{summary}; last lines of {log_file}:\n{tail}")


# ------------------------------------------------------------------------ lifecycle


def _run_tool(
    java: str, jvm_flags: list[str], libs: Path, args: list[str], what: str, *, secrets_: tuple[str, ...] = ()
) -> str:
    cmd = [java, *jvm_flags, "-cp", f"{libs}/*", "kafka.tools.StorageTool", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        out = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        for secret in secrets_:  # the tool may echo an --add-scram argument back
            out = out.replace(secret, "***")
        raise KafkaLocalError(f"kafka StorageTool {what} failed (exit {proc.returncode}): {_one_line(out)[:300]}")
    return proc.stdout


def _pdeathsig_preexec():
    """preexec_fn asking Linux to SIGKILL the child when the launching thread dies."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)  # loaded before fork, called after
    parent = os.getpid()

    def _set() -> None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # parent already gone before prctl took effect
            os._exit(1)

    return _set


def start(
    settings: Settings,
    fresh: bool = True,
    *,
    timeout: float = 90.0,
    die_with_parent: bool = False,
    sasl_users: Mapping[str, str] | None = None,
) -> BrokerInfo:
    """Start the local broker described by ``settings`` and wait until it is ready.

    Uses ``settings.kafka_home`` (run dir), ``kafka_port`` / ``kafka_controller_port``
    (both on 127.0.0.1), ``kafka_version``, ``kafka_cache`` and ``kafka_heap``.
    ``fresh=True`` wipes the home's data dir and log first (new cluster id);
    ``fresh=False`` keeps the data of a previous run (formats only if none).
    ``timeout`` (s) bounds launch-to-ready; on expiry the JVM is killed.
    ``die_with_parent=True`` makes Linux SIGKILL the JVM when the thread that called
    ``start`` ends (PR_SET_PDEATHSIG: call it from the main thread; used by the test
    fixture so even ``kill -9`` of pytest leaves no JVM); the CLI leaves it False so
    the broker outlives the command.
    ``sasl_users`` (name -> password): listen with ``SASL_PLAINTEXT`` (PLAIN,
    SCRAM-SHA-256, SCRAM-SHA-512) for these users instead of ``PLAINTEXT`` (module
    docstring); readiness is then probed as the first user with PLAIN. SCRAM users are
    created when the data dir is formatted: with ``fresh=False`` on an existing data dir
    they stay those of the first start.

    Returns :class:`BrokerInfo`. Raises :class:`PortInUseError` when a port is taken,
    :class:`KafkaLocalError` when java/mvn is missing, a broker is already running
    from this home, formatting fails, the JVM dies before ready (message includes the
    log tail) or it is not ready within ``timeout``.
    """
    if sasl_users is not None:
        check_sasl_users(sasl_users)
    home = Path(settings.kafka_home).resolve()
    home.mkdir(parents=True, exist_ok=True)
    p = _paths(home)
    with _flock(p["lock"]):
        old = _read_pid(home)
        if old is not None:
            if _is_our_broker(old, home):
                bootstrap = _read_info(home).get("bootstrap", "?")
                raise KafkaLocalError(
                    f"a broker is already running from {home} (pid {old}, {bootstrap}); "
                    f"stop it first (checkpoint-guard kafka stop --home {home}) or use another CG_KAFKA_HOME"
                )
            _clear_pid(home)  # stale
        _check_ports(settings)
        java = _java()
        if not LOG4J2_FILE.is_file():
            raise KafkaLocalError(f"broker logging config not found at {LOG4J2_FILE}")
        libs, resolve_seconds = resolve_jars(settings)

        if fresh:
            shutil.rmtree(p["data"], ignore_errors=True)
            with contextlib.suppress(FileNotFoundError):
                p["log"].unlink()
        p["data"].mkdir(parents=True, exist_ok=True)
        _write_atomic(p["props"], render_server_properties(settings, p["data"], sasl_users=sasl_users), private=True)

        log_flags = [
            f"-Dlog4j2.configurationFile={LOG4J2_FILE}",
            f"-Dcg.kafka.log.file={p['log']}",
            f"-Dkafka.logs.dir={home}",
        ]
        tool_flags = ["-Xmx256m", "-XX:TieredStopAtLevel=1", *log_flags]
        meta = p["data"] / "meta.properties"
        if meta.is_file():
            cluster_id = next(
                (ln.split("=", 1)[1].strip() for ln in meta.read_text().splitlines() if ln.startswith("cluster.id=")),
                "?",
            )
        else:
            out = _run_tool(java, tool_flags, libs, ["random-uuid"], "random-uuid")
            cluster_id = out.strip().splitlines()[-1].strip()
            scram = [
                arg
                for name, password in (sasl_users or {}).items()
                for mechanism in SASL_MECHANISMS[1:]
                for arg in ("--add-scram", f'{mechanism}=[name="{name}",password="{password}"]')
            ]
            _run_tool(
                java, tool_flags, libs, ["format", "-t", cluster_id, "-c", str(p["props"]), *scram], "format",
                secrets_=tuple((sasl_users or {}).values()),
            )

        heap = settings.kafka_heap
        cmd = [
            java, f"-Xmx{heap}", f"-Xms{heap}",
            "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
            "-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
            *log_flags,
            "-cp", f"{libs}/*", "kafka.Kafka", str(p["props"]),
        ]  # fmt: skip
        bootstrap = f"{HOST}:{settings.kafka_port}"
        protocol = SASL_LISTENER if sasl_users else "PLAINTEXT"
        proc: subprocess.Popen | None = None
        try:
            # Ctrl-C held back while the JVM starts: it lands here with `proc` known (below it is stopped)
            with open(p["log"], "ab") as log_fh, ctrl_c_deferred():
                t0 = time.monotonic()
                proc = subprocess.Popen(
                    cmd,
                    cwd=home,
                    stdin=subprocess.DEVNULL,
                    stdout=log_fh,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=_pdeathsig_preexec() if die_with_parent and sys.platform == "linux" else None,
                )
                _CHILDREN[proc.pid] = proc
            _write_atomic(p["pid"], f"{proc.pid}\n")
            _write_atomic(
                p["info"],
                json.dumps(
                    {
                        "pid": proc.pid,
                        "bootstrap": bootstrap,
                        "port": settings.kafka_port,
                        "controller_port": settings.kafka_controller_port,
                        "version": settings.kafka_version,
                        "cluster_id": cluster_id,
                        "security_protocol": protocol,
                        "sasl_users": sorted(sasl_users or {}),
                        "log_file": str(p["log"]),
                        "started_at": time.time(),
                    },
                    indent=1,
                )
                + "\n",
            )
            auth = _plain_auth(sasl_users) if sasl_users else None
            ready_seconds = _wait_ready(proc, bootstrap, p["log"], timeout, t0, auth)
        except BaseException:
            # Not ready (or Ctrl-C while waiting): never leave a half-started JVM behind.
            if proc is not None:
                if proc.poll() is None:
                    _terminate(proc.pid, timeout=5)
                proc.wait()
                _CHILDREN.pop(proc.pid, None)
            _clear_pid(home)
            raise
    return BrokerInfo(
        pid=proc.pid,
        bootstrap=bootstrap,
        port=settings.kafka_port,
        controller_port=settings.kafka_controller_port,
        kafka_home=home,
        log_file=p["log"],
        version=settings.kafka_version,
        cluster_id=cluster_id,
        resolve_seconds=resolve_seconds,
        ready_seconds=ready_seconds,
        security_protocol=protocol,
    )


def _wait_ready(
    proc: subprocess.Popen, bootstrap: str, log_file: Path, timeout: float, t0: float,
    auth: Mapping[str, str] | None = None,
) -> float:
    deadline = t0 + timeout
    last_error = "no answer yet"
    while True:
        code = proc.poll()
        if code is not None:
            raise _died_error(f"kafka broker exited with code {code} before it was ready", log_file)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise KafkaLocalError(
                f"kafka broker at {bootstrap} not ready after {timeout:.0f} s ({_one_line(last_error)[:200]}); "
                f"killed it; last lines of {log_file}:\n{_log_tail(log_file)}"
            )
        try:
            info = describe_cluster(bootstrap, timeout=min(3.0, max(0.5, remaining)), auth=auth)
            if info.get("brokers"):
                return time.monotonic() - t0
            last_error = "describe_cluster returned no brokers"
        except Exception as exc:  # noqa: BLE001 - not ready yet, keep polling
            last_error = exc_line(exc)
        time.sleep(0.25)


def stop(settings: Settings, *, timeout: float = 30.0) -> StopResult:
    """Stop the broker of ``settings.kafka_home`` (PID-file based).

    SIGTERM to its process group, wait up to ``timeout`` s for the controlled shutdown,
    then SIGKILL. Harmless when nothing runs (``stopped=False``, the message says so);
    a PID file naming a dead or foreign process is removed without signalling anyone.
    Never raises for the not-running cases.
    """
    home = Path(settings.kafka_home).resolve()
    if not home.is_dir():
        return StopResult(False, None, f"no broker running from {home} (nothing to stop)")
    with _flock(home / LOCK_NAME):
        pid = _read_pid(home)
        if pid is None:
            return StopResult(False, None, f"no broker running from {home} (nothing to stop)")
        if not _is_our_broker(pid, home):
            _clear_pid(home)
            return StopResult(
                False, pid, f"no broker running from {home} (removed stale pid file naming pid {pid})"
            )
        t0 = time.monotonic()
        killed = _terminate(pid, timeout)
        proc = _CHILDREN.pop(pid, None)
        if proc is not None:
            proc.wait()
        _clear_pid(home)
        how = f"SIGKILL after {timeout:.0f} s without exiting on SIGTERM" if killed else "SIGTERM"
        return StopResult(
            True, pid, f"stopped broker pid {pid} from {home} in {time.monotonic() - t0:.1f} s ({how})"
        )


def status(settings: Settings, *, probe_timeout: float = 3.0) -> BrokerStatus:
    """Report on the broker of ``settings.kafka_home`` without changing anything.

    Reads the PID file and ``broker.json`` (bootstrap as started, even if ``--port``
    overrode the settings), checks the process is this home's broker, and probes it
    with ``describe_cluster`` (``probe_timeout`` s). Never raises for a missing broker.
    """
    home = Path(settings.kafka_home).resolve()
    log_file = home / LOG_NAME
    pid = _read_pid(home)
    if pid is None:
        return BrokerStatus(False, False, None, None, home, log_file, f"not running (no pid file in {home})")
    if not _is_our_broker(pid, home):
        return BrokerStatus(
            False, False, None, None, home, log_file, f"not running (stale pid file naming pid {pid} in {home})"
        )
    meta = _read_info(home)
    bootstrap = meta.get("bootstrap") or f"{HOST}:{settings.kafka_port}"
    auth = None
    if meta.get("security_protocol", "PLAINTEXT") != "PLAINTEXT":
        if not settings.security_protocol.startswith("SASL") or not settings.sasl_username:
            return BrokerStatus(
                True, False, pid, bootstrap, home, log_file,
                f"running (pid {pid}, {bootstrap}, {meta['security_protocol']} listener); set "
                "CG_SECURITY_PROTOCOL=SASL_PLAINTEXT, CG_SASL_USERNAME and CG_SASL_PASSWORD to probe it",
            )
        from stream.kafka_clients import client_kwargs

        kw = client_kwargs(settings)
        auth = {k: v for k, v in kw.items() if k.startswith(("security_", "sasl_"))}
    try:
        info = describe_cluster(bootstrap, timeout=probe_timeout, auth=auth)
        ready = bool(info.get("brokers"))
        detail = f"running, ready (pid {pid}, {bootstrap}, cluster {info.get('cluster_id')})"
    except Exception as exc:  # noqa: BLE001 - status reports, it does not fail
        ready = False
        detail = f"running, NOT ready (pid {pid}, {bootstrap}): {exc_line(exc)[:200]}"
    return BrokerStatus(True, ready, pid, bootstrap, home, log_file, detail)

