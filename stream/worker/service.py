"""What the worker checks before it consumes anything (run by the host, no framework here).

* :func:`preflight` — before anything starts: CG_DATA_DIR's lock and the web port (each
  failure one line on stderr, exit 1);
* :func:`first_start` — once, before the first record: every topic exists and the input
  topics are co-partitioned (DESIGN.md §2; otherwise one clear line and exit 1), the state
  log exists (created if missing), then the runtime starts (its producer, durability).
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from stream.errors import describe
from stream.kafka_clients import check_copartitioned, ensure_worker_topics
from stream.logs import kafka_errors_kept
from stream.settings import Settings
from stream.worker.host import Host
from stream.worker.preflight import check_web_port, lock_data_dir

#: The data dir's lock, held for the life of the process.
_locks: list[int] = []


def preflight(settings: Settings) -> Callable[[Host], None]:
    """The check the host runs before it starts anything."""

    def check(host: Host) -> None:
        _locks.append(lock_data_dir(settings.data_dir))
        address = host.web_address()
        if address is not None:
            check_web_port(*address)

    return check


def first_start(settings: Settings, runtime: Any) -> Callable[[], Awaitable[None]]:
    """The host's ``on_start``: the topic checks, then ``runtime.start()``."""

    async def start() -> None:
        try:
            with kafka_errors_kept():  # our one line says it; aiokafka's would precede it
                await check_copartitioned(settings)
                await ensure_worker_topics(settings)
        except Exception as exc:  # noqa: BLE001 - topics missing, broker down, login refused: one line
            # SystemExit, not the error: the framework would log it with a traceback around our line.
            line, code = describe(exc)
            print(f"checkpoint-guard: error: {line}", file=sys.stderr, flush=True)
            raise SystemExit(code) from None
        await runtime.start()

    return start
