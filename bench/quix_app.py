"""The peer a user would pick instead: the same engine hosted by a Quix Streams application.

    python -m bench.quix_app --broker HOST:PORT --group G --inputs C,A --outputs AL,VE,DL,ST \
        --state-dir DIR --expect N [--guarantee at-least-once|exactly-once]

Used by ``bench/bench_quix.py`` (part 10).
How it measures, and why: bench/METHODS.md "quix_app.py".
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from stream.domain.engine import Engine
from stream.domain.events import Source
from stream.domain.state import TABLES, plain
from stream.errors import InvalidEvent
from stream.wire import Limits, dead_letter, decode_message, encode, status_key

ALERT, VERDICT, DEAD, STATUS = range(4)
_MISSING = object()


class _Table:
    """One engine table over a Quix ``State`` (the current message's context only)."""

    __slots__ = ("index", "state", "ctx")

    def __init__(self, index: int, state: Any, ctx: str) -> None:
        self.index = index
        self.state = state
        self.ctx = ctx

    def _key(self, key: tuple) -> list:
        if key[0] != self.ctx:  # a context's state lives under its own message key only
            raise KeyError(f"engine key {key!r} is not of the message's context {self.ctx!r}")
        return [self.index, *key[1:]]

    def get(self, key: tuple, default: Any = None) -> Any:
        return self.state.get(self._key(key), default)

    def __getitem__(self, key: tuple) -> Any:
        value = self.state.get(self._key(key), _MISSING)
        if value is _MISSING:
            raise KeyError(key)
        return value

    def __contains__(self, key: tuple) -> bool:
        return self.state.exists(self._key(key))

    def __setitem__(self, key: tuple, value: Any) -> None:
        self.state.set(self._key(key), plain(value))  # sets and sorted containers as sorted lists

    def __delitem__(self, key: tuple) -> None:
        k = self._key(key)
        if not self.state.exists(k):
            raise KeyError(key)
        self.state.delete(k)

    def pop(self, key: tuple, *default: Any) -> Any:
        k = self._key(key)
        value = self.state.get(k, _MISSING)
        if value is _MISSING:
            if default:
                return default[0]
            raise KeyError(key)
        self.state.delete(k)
        return value


class QuixEngineState:
    """The engine's ``State`` (one mapping per table) over the Quix ``State`` of one message."""

    __slots__ = TABLES

    def __init__(self, state: Any, ctx: str) -> None:
        for i, name in enumerate(TABLES):
            setattr(self, name, _Table(i, state, ctx))


def make_processor(engine: Engine, limits: Limits, context: Any):
    """The stateful ``apply`` callback: message -> output rows ``(kind, key, payload)``.

    ``context()`` returns where the message came from (Quix's ``message_context()``)."""

    def process(value: bytes, key: bytes, _timestamp: int, _headers: Any, state: Any) -> list[tuple]:
        mc = context()
        topic, partition, offset = mc.topic, mc.partition, mc.offset
        try:
            event = decode_message(key, value, limits=limits)
        except InvalidEvent as exc:
            record = dead_letter(value, str(exc), key=key, topic=topic, partition=partition, offset=offset)
            return [(DEAD, key, encode(record))]
        out = engine.process(QuixEngineState(state, event.context_id), event, Source(topic, partition, offset))
        rows = [(ALERT, key, encode(a)) for a in out.alerts]
        rows += [(STATUS, status_key(s.context_id, s.node_id), encode(s)) for s in out.statuses]
        rows += [(VERDICT, key, encode(v)) for v in out.verdicts]
        return rows

    return process


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/quix_app.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--broker", required=True, help="HOST:PORT")
    ap.add_argument("--group", required=True, help="consumer group (Quix prefixes its changelog topic with it)")
    ap.add_argument("--inputs", required=True, help="compaction topic,artifact topic")
    ap.add_argument("--outputs", required=True, help="alerts,verdicts,deadletter,status topics")
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--expect", type=int, required=True, help="stop after this many processed messages")
    ap.add_argument("--guarantee", default="at-least-once", choices=("at-least-once", "exactly-once"))
    args = ap.parse_args(argv)

    from quixstreams import Application, message_context
    from quixstreams.models.serializers import Serializer

    class Payload(Serializer):
        """An output row ``(kind, key, payload)`` -> its payload bytes."""

        def __call__(self, value: tuple, ctx: Any) -> bytes:
            return value[2]

    def mark(what: str, n: int) -> None:
        print(json.dumps({"mark": what, "t": time.monotonic(), "cpu": time.process_time(), "n": n}), flush=True)

    seen = 0

    def on_processed(_topic: str, _partition: int, _offset: int) -> None:
        nonlocal seen
        seen += 1
        if seen == 1:
            mark("first", seen)
        if seen == args.expect:
            mark("done", seen)
            app.stop()

    app = Application(broker_address=args.broker, consumer_group=args.group, auto_offset_reset="earliest",
                      state_dir=args.state_dir, processing_guarantee=args.guarantee,
                      on_message_processed=on_processed, loglevel="WARNING")
    inputs = [app.topic(t, key_deserializer="bytes", value_deserializer="bytes") for t in args.inputs.split(",")]
    outputs = [app.topic(t, key_serializer="bytes", value_serializer=Payload()) for t in args.outputs.split(",")]
    settings = _settings()
    engine = Engine(settings.seq_gap_limit, max_output_bytes=settings.max_output_bytes)  # as the worker's
    limits = Limits.from_settings(settings)
    sdf = app.dataframe(inputs[0]).concat(app.dataframe(inputs[1]))
    rows = sdf.apply(make_processor(engine, limits, message_context), stateful=True, expand=True, metadata=True)
    rows.to_topic(lambda row, _key, _ts, _headers: outputs[row[0]], key=lambda row: row[1])
    app.run()
    mark("committed", seen)
    return 0


def _settings() -> Any:
    from stream.settings import get_settings

    return get_settings()


if __name__ == "__main__":
    raise SystemExit(main())
