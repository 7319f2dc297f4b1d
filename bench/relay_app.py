"""The latency bench's floor: a raw aiokafka relay in place of the worker.

    python -m bench.relay_app BOOTSTRAP GROUP INPUT_TOPIC OUTPUT_TOPIC

Consumes ``INPUT_TOPIC`` in consumer group ``GROUP`` and, for every record, produces
``{"trigger": {"event_id": ...}}`` (the one field the latency bench reads of an alert) to
``OUTPUT_TOPIC`` with the record's key: no engine, no state, no faust — what any Kafka
service on this machine pays for one hop in and one out. Runs until SIGTERM/SIGINT.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


async def relay(bootstrap: str, group: str, source: str, target: str) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    c = AIOKafkaConsumer(source, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                         enable_auto_commit=True, fetch_max_wait_ms=100)
    p = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=0)
    await c.start()
    await p.start()
    print("relay ready", flush=True)
    try:
        while not stop.is_set():
            batch = await c.getmany(timeout_ms=100)
            for records in batch.values():
                for r in records:
                    event_id = json.loads(r.value)["event_id"]
                    await p.send(target, json.dumps({"trigger": {"event_id": event_id}}).encode(), key=r.key)
    finally:
        await p.stop()
        await c.stop()


if __name__ == "__main__":
    asyncio.run(relay(*sys.argv[1:5]))
