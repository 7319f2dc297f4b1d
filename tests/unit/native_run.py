"""One worker run over fakes, its every output as JSON on stdout: ``python -m
tests.unit.native_run`` (tests/unit/test_native.py runs it compiled and with CG_NATIVE=0).

A synthetic stream of both input topics, with bad messages among them, goes through the
real handler, durability and RocksDB store (tests/unit/fakes.py) in batches, with
commits and a restart in between.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
import tempfile
from pathlib import Path

from bench.bench_worker import synthetic_events
from stream import native
from stream.adapters import encode_event
from tests.unit.fakes import CK, Rig

ARTIFACTS = "artifact-events"


async def scenario(tmp: Path) -> dict:
    rig = await Rig(tmp, cache_entries=64).start()  # a small cache: values evicted and read back
    records = []
    for i, event in enumerate(synthetic_events(2_400, contexts=12, seed=7)):
        topic = CK if event["type"] == "checkpoint" else ARTIFACTS
        value = encode_event(event).encode()
        if i % 301 == 0:
            value = value[: len(value) // 2]  # a dead letter
        records.append(rig.broker.append(topic, 0, event["context_id"].encode(), value, timestamp=1_000 + i))
    for start in range(0, len(records) // 2, 150):
        await rig.apply(records[start:start + 150])
        if start % 600 == 0:
            await rig.d.commit()
    await rig.d.commit()
    again = await Rig(tmp, rig.broker, name="b", cache_entries=64).start(generation=2)  # restored from the log
    for start in range(len(records) // 2, len(records), 150):
        await again.apply(records[start:start + 150])
    await again.d.commit()
    out: dict = {"native": native.status()}
    for topic in sorted({t for t, _ in rig.broker.logs}):
        values = rig.broker.values(topic)
        if topic == rig.settings.state_topic:  # a commit's entries in one order (the dirty keys are a set)
            values = [_sorted_entries(v) for v in values]
        out[topic] = [len(values), hashlib.sha256(b"\n".join(values)).hexdigest()]
    return out


def _sorted_entries(value: bytes) -> bytes:
    record = json.loads(value)
    if isinstance(record.get("w"), list):
        record["w"] = sorted(record["w"], key=json.dumps)
    return json.dumps(record, sort_keys=True).encode()


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        print(json.dumps(asyncio.run(scenario(Path(tmp))), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
