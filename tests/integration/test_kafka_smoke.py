"""Smoke test of the project's own Kafka broker: create a topic, produce, consume back.

Why: every other integration test stands on this broker (DESIGN.md §6). If this one
fails, the broker or the aiokafka <-> Kafka 4.x pairing is broken, not the engine.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError

from stream.devtools import kafka_local


@pytest.mark.asyncio
async def test_produce_and_consume_round_trip(kafka_bootstrap: str, create_topics) -> None:
    topic = f"smoke-{uuid.uuid4().hex[:8]}"
    await create_topics([topic], partitions=3)

    sent = [(f"ctx-{i % 4}".encode(), f'{{"n": {i}, "text": "caf\u00e9 {i}"}}'.encode()) for i in range(20)]
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        metas = await asyncio.gather(*[await producer.send(topic, value=v, key=k) for k, v in sent])
    finally:
        await producer.stop()
    partition_of_key: dict[bytes, int] = {}
    for (key, _), meta in zip(sent, metas):
        assert partition_of_key.setdefault(key, meta.partition) == meta.partition, "same key, same partition"

    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=kafka_bootstrap,
        group_id=f"smoke-{uuid.uuid4().hex[:8]}",
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await consumer.start()
    got: list[tuple[bytes, bytes, int]] = []
    try:
        async with asyncio.timeout(30):
            while len(got) < len(sent):
                batch = await consumer.getmany(timeout_ms=1000)
                for records in batch.values():
                    got.extend((r.key, r.value, r.partition) for r in records)
        await consumer.commit()
    finally:
        await consumer.stop()

    assert sorted((k, v) for k, v, _ in got) == sorted(sent)
    for key, _, partition in got:
        assert partition == partition_of_key[key]
    # per key, order is preserved (one partition per key)
    for key in partition_of_key:
        assert [v for k, v, _ in got if k == key] == [v for k, v in sent if k == key]


def test_broker_reports_one_node_cluster(kafka_bootstrap: str) -> None:
    info = kafka_local.describe_cluster(kafka_bootstrap, timeout=10)
    assert info["brokers"], info
    assert info["cluster_id"]
    assert info["controller_id"] is not None


@pytest.mark.asyncio
async def test_auto_create_is_off(kafka_bootstrap: str) -> None:
    """DESIGN.md §7.3: the broker must not create topics on first use (a typo in a
    topic name would otherwise give a silently idle agent)."""
    from aiokafka.admin import AIOKafkaAdminClient

    topic = f"never-created-{uuid.uuid4().hex[:8]}"
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, request_timeout_ms=1500)
    await producer.start()
    try:
        with pytest.raises((KafkaError, TimeoutError)):  # metadata never comes, or the send times out
            await asyncio.wait_for(producer.send_and_wait(topic, b"x"), 8)
    finally:
        await producer.stop()
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        assert topic not in await admin.list_topics()
    finally:
        await admin.close()
