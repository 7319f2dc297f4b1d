"""faust's worker, made to refuse bad topic layouts, a shared data dir or a taken web
port before it consumes anything."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

import faust

from stream.errors import ConfigurationError
from stream.kafka_clients import check_copartitioned, ensure_state_topic
from stream.settings import get_settings

#: The lock file in CG_DATA_DIR; holds the pid of the worker that owns the directory.
LOCK_NAME = "worker.lock"


def refuse(message: str) -> None:
    """One line on stderr and exit 1, before faust starts anything (no traceback)."""
    print(f"checkpoint-guard: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def lock_data_dir(data_dir: Path) -> int:
    """Take the data dir's lock for the life of this process (returns the open fd).

    Two workers on one RocksDB directory would corrupt each other's tables; the lock is
    an ``flock`` the kernel drops when the process dies (kill -9 included).
    """
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(data_dir / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        refuse(f"cannot use CG_DATA_DIR={data_dir}: {exc.strerror}; point CG_DATA_DIR at a writable directory")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        refuse(f"CG_DATA_DIR={data_dir} is in use by another worker (pid {holder}, lock {data_dir / LOCK_NAME}); "
               "give each worker its own CG_DATA_DIR")
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def check_web_port(host: str, port: int) -> None:
    """Refuse to start when the web port cannot be bound (another worker has it)."""
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        refuse(f"cannot listen on {host}:{port}: {exc.strerror}; check CG_WEB_HOST")
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as aiohttp binds
        try:
            sock.bind(address)
        except OSError as exc:
            why = "address already in use (another worker?)" if exc.errno == errno.EADDRINUSE else exc.strerror
            refuse(f"cannot listen on {host}:{port}: {why}; give each worker its own CG_WEB_PORT (or --web-port)")


class GuardWorker(faust.Worker):
    """The worker ``python -m stream worker`` runs (set as the app's ``Worker``).

    Before faust starts anything it takes CG_DATA_DIR's lock and checks that the web
    port can be bound (each failure is one line and exit 1). On first start it checks
    that every topic exists and that the input topics are co-partitioned (DESIGN.md §2)
    — otherwise one clear line and exit 1 —, creates the state log if missing and
    starts the runtime's producer.
    """

    def __init__(self, app: faust.App, *services: Any, **kwargs: Any) -> None:
        self._data_dir_lock = lock_data_dir(Path(app.conf.datadir))
        if app.conf.web_enabled:
            check_web_port(app.conf.web_bind, app.conf.web_port)
        super().__init__(app, *services, **kwargs)

    async def on_first_start(self) -> None:
        kafka_log = logging.getLogger("aiokafka")
        level = kafka_log.level
        kafka_log.setLevel(logging.CRITICAL)  # our one line says it; aiokafka's would precede it
        try:
            settings = get_settings()
            await check_copartitioned(settings)
            await ensure_state_topic(settings)
        except ConfigurationError as exc:
            # SystemExit, not the error: mode would log it with a traceback around our line.
            print(f"checkpoint-guard: error: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(1) from None
        finally:
            kafka_log.setLevel(level)
        await self.app.runtime.start()
        await super().on_first_start()

    def on_setup_root_logger(self, logger: logging.Logger, level: int) -> None:
        """Keep the root logger at the chosen level (``-l``), without faust's spinner.

        At ``-l warn`` and above faust adds a terminal spinner handler and lowers the
        root logger to DEBUG, so every debug call of faust and aiokafka builds a log
        record that the handler then discards (8% of the worker's CPU in a profile).
        """
        self.spinner = None
        super().on_setup_root_logger(logger, level)
        if get_settings().log_format == "json":
            from stream.logs import use_json

            use_json(logger)
