"""The worker's one agent (``validate``, stream.worker.compat.FaustHost.consume): its loop
ends only with the app; ended any other way the host is told (the worker exits 70) instead
of living on consuming nothing."""

from __future__ import annotations

import asyncio

import pytest

from stream.settings import Settings
from stream.worker.compat import FaustHost


class _Stream:
    """What faust hands the agent: here ``take_events`` yields ``batches`` then ends or raises."""

    def __init__(self, batches, error=None) -> None:
        self.batches, self.error = batches, error

    async def take_events(self, max_, within):
        for batch in self.batches:
            yield batch
        if self.error is not None:
            raise self.error


class _Exit(Exception):
    pass


@pytest.fixture
def worker():
    host = FaustHost(Settings(broker="kafka://127.0.0.1:9"))
    handled: list = []
    stops: list[BaseException] = []

    async def handle(events):
        handled.append(list(events))

    def on_end(exc):
        stops.append(exc)
        raise _Exit

    host.consume(handle, on_end)
    (agent,) = host.app.agents.values()
    return host.app, agent.fun, handled, stops


def test_an_agent_whose_stream_ends_while_the_app_runs_exits_the_worker(worker):
    app, validate, handled, stops = worker
    with pytest.raises(_Exit):
        asyncio.run(validate(_Stream([["r1"], ["r2", "r3"]])))
    assert handled == [["r1"], ["r2", "r3"]]
    assert "stopped while the worker was running" in str(stops[0])


def test_an_agent_whose_stream_fails_exits_the_worker_naming_the_error(worker):
    app, validate, handled, stops = worker
    with pytest.raises(_Exit):
        asyncio.run(validate(_Stream([["r1"]], error=RuntimeError("generator raised StopAsyncIteration"))))
    assert handled == [["r1"]] and "StopAsyncIteration" in str(stops[0])


def test_an_agent_stopped_with_the_app_returns_quietly(worker, monkeypatch):
    app, validate, handled, stops = worker
    monkeypatch.setattr(type(app), "should_stop", property(lambda self: True))
    asyncio.run(validate(_Stream([["r1"]])))
    assert handled == [["r1"]] and stops == []
