"""Checks a worker makes before faust starts anything (no faust import: ``reset`` uses them).

Each failure is one line on stderr and exit 1.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import sys
from pathlib import Path

#: The lock file in CG_DATA_DIR; holds the pid of the worker that owns the directory.
LOCK_NAME = "worker.lock"


def refuse(message: str) -> None:
    """One line on stderr and exit 1, before faust starts anything (no traceback)."""
    print(f"checkpoint-guard: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(1)


def lock_data_dir(data_dir: Path, *, fix: str = "give each worker its own CG_DATA_DIR") -> int:
    """Take the data dir's lock for the life of this process (returns the open fd);
    ``fix`` ends the refusal line when another worker holds it.

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
               f"{fix}")
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
