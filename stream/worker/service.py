"""faust's worker, made to refuse bad topic layouts before it consumes anything."""

from __future__ import annotations

import logging
import sys

import faust

from stream.errors import ConfigurationError
from stream.kafka_clients import check_copartitioned, ensure_state_topic
from stream.settings import get_settings


class GuardWorker(faust.Worker):
    """The worker ``python -m stream worker`` runs (set as the app's ``Worker``).

    On first start it checks that every topic exists and that the input topics are
    co-partitioned (DESIGN.md §2) — otherwise one clear line and a non-zero exit —,
    creates the state log if missing and starts the runtime's producer.
    """

    async def on_first_start(self) -> None:
        try:
            settings = get_settings()
            await check_copartitioned(settings)
            await ensure_state_topic(settings)
        except ConfigurationError as exc:
            print(f"checkpoint-guard: error: {exc}", file=sys.stderr, flush=True)
            raise
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
