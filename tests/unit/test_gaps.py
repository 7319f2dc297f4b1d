"""stream.worker.gaps shares one group-less consumer between partitions that restore at
the same time (a consumer per caller leaked: "Unclosed AIOKafkaConsumer" at start)."""

from __future__ import annotations

import asyncio

from stream.settings import Settings
from stream.worker import gaps


class _Client:
    """Stands in for AIOKafkaConsumer's start/stop only (no broker is involved)."""

    made: list[_Client] = []

    def __init__(self, *args, **kwargs) -> None:
        self.started = self.stopped = False
        _Client.made.append(self)

    async def start(self) -> None:
        await asyncio.sleep(0.01)  # the await during which a second caller used to create its own
        self.started = True

    async def stop(self) -> None:
        self.stopped = True


def test_concurrent_callers_get_one_consumer_and_close_stops_it(monkeypatch):
    _Client.made = []
    monkeypatch.setattr(gaps, "consumer", _Client)
    g = gaps.Gaps(Settings())

    async def scenario():
        got = await asyncio.gather(*(g._consumer() for _ in range(4)))
        await g.close()
        return got

    got = asyncio.run(scenario())
    assert len(_Client.made) == 1 and all(c is _Client.made[0] for c in got)
    assert _Client.made[0].started and _Client.made[0].stopped


def test_a_consumer_whose_start_fails_is_stopped_and_the_next_call_makes_a_new_one(monkeypatch):
    _Client.made = []

    class _Failing(_Client):
        async def start(self) -> None:
            if len(_Client.made) == 1:
                raise ConnectionError("broker not there yet")
            await super().start()

    monkeypatch.setattr(gaps, "consumer", _Failing)
    g = gaps.Gaps(Settings())

    async def scenario():
        try:
            await g._consumer()
        except ConnectionError:
            pass
        return await g._consumer()

    second = asyncio.run(scenario())
    first = _Client.made[0]
    assert first.stopped and not first.started
    assert second is _Client.made[1] and second.started
