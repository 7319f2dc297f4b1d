"""faust's worker, made to refuse bad topic layouts, a shared data dir or a taken web
port before it consumes anything."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import faust

from stream.errors import describe
from stream.kafka_clients import check_copartitioned, ensure_worker_topics
from stream.logs import kafka_errors_kept
from stream.settings import get_settings
from stream.worker.preflight import check_web_port, lock_data_dir

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
        try:
            with kafka_errors_kept():  # our one line says it; aiokafka's would precede it
                settings = get_settings()
                await check_copartitioned(settings)
                await ensure_worker_topics(settings)
        except Exception as exc:  # noqa: BLE001 - topics missing, broker down, login refused: one line
            # SystemExit, not the error: mode would log it with a traceback around our line.
            line, code = describe(exc)
            print(f"checkpoint-guard: error: {line}", file=sys.stderr, flush=True)
            raise SystemExit(code) from None
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
