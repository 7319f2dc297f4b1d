"""A faust app that does nothing per event: the floor under any faust agent.

Used by ``bench/bench_floor.py``. ``FLOOR_MODE=events`` iterates ``stream.events()``
(one event at a time); ``FLOOR_MODE=take`` uses ``stream.take_events(500,
within=0.005)`` as the worker's agent does; ``FLOOR_MODE=compat`` does the same over the
worker's transport and stream class (``stream.worker.compat``).
Topics come from ``FLOOR_TOPICS`` (comma-separated), the count to wait for from
``FLOOR_EXPECT``. On the first event and on the ``FLOOR_EXPECT``-th it prints one JSON
line (monotonic time, process CPU seconds), then exits (status 0) without committing.
"""

from __future__ import annotations

import json
import os
import sys
import time

import faust

MODE = os.environ.get("FLOOR_MODE", "take")
EXPECT = int(os.environ.get("FLOOR_EXPECT", "0"))
TOPICS = [t for t in os.environ.get("FLOOR_TOPICS", "").split(",") if t]

BROKER = os.environ.get("FLOOR_BROKER", "kafka://127.0.0.1:9092")
if MODE == "compat":
    from stream.worker import compat

    extra = {"Stream": compat.BatchStream}
    BROKER = compat.broker_url(BROKER)
else:
    extra = {}

app = faust.App(
    os.environ.get("FLOOR_APP_ID", "cg-floor"),
    broker=BROKER,
    **extra,
    store="memory://",
    web_enabled=False,
    key_serializer="raw",
    value_serializer="raw",
    autodiscover=False,
)
topic = app.topic(*TOPICS, value_serializer="raw", key_serializer="raw")

_seen = 0


def _mark(what: str) -> None:
    print(json.dumps({"mark": what, "t": time.monotonic(), "cpu": time.process_time(), "n": _seen}),
          flush=True)


def _count(n: int) -> None:
    global _seen
    if _seen == 0:
        _mark("first")
    _seen += n
    if _seen >= EXPECT:
        _mark("done")
        sys.stdout.flush()
        os._exit(0)


@app.agent(topic, name="floor")
async def floor(stream: faust.StreamT) -> None:
    if MODE == "events":
        async for _event in stream.events():
            _count(1)
    else:
        async for events in stream.take_events(500, within=0.005):
            _count(len(events))
