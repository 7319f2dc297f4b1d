"""A private asyncio loop on a daemon thread: how the sync API drives aiokafka."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """Runs coroutines on its own event loop thread (started lazily, stopped by ``close``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self.loop is not None:
            return
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=self.name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception is raised here)."""
        if self.loop is None:
            coro.close()
            raise RuntimeError(f"{self.name} is not started: use it as a context manager or call start() first")
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError(f"{self.name}: a blocking call from inside its own loop would deadlock")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            future.cancel()
            raise

    def call_soon(self, fn: Any, *args: Any) -> None:
        assert self.loop is not None
        self.loop.call_soon_threadsafe(fn, *args)

    def close(self) -> None:
        if self.loop is None:
            return
        loop, self.loop = self.loop, None
        loop.call_soon_threadsafe(loop.stop)
        assert self._thread is not None
        self._thread.join(30)
        loop.close()
