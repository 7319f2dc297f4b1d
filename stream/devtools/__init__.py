"""Local development tooling: the single-node Kafka the project starts itself
(:mod:`~stream.devtools.kafka_local`, its Maven pom and log4j2 config in ``kafka/``) and
the end-to-end demo (:mod:`~stream.devtools.demo`, :mod:`~stream.devtools.report`).
Not used by the worker."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def ctrl_c_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) back for the block and raise it right after: a child process
    started inside is then always assigned and known to whoever stops it (a Ctrl-C inside
    ``subprocess.Popen`` would leave an unknown child running). Main thread only; elsewhere
    a no-op."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    old = signal.signal(signal.SIGINT, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if pending:
        raise KeyboardInterrupt
