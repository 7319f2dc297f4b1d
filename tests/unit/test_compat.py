"""stream.worker.compat is the only place private faust names are used, and each use is
pinned to the installed faust: when faust changes code we override or rely on, a test here
fails and the override must be reviewed against the new code.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import inspect
import re
from pathlib import Path

import pytest

from stream.settings import Settings

pytestmark = pytest.mark.unit

STREAM = Path(__file__).resolve().parents[2] / "stream"

#: The faust / aiokafka code stream.worker.compat overrides or relies on (sha256 of the
#: source, first 16 hex). Reviewed against faust-streaming 0.15.3 and aiokafka 0.14.0.
PINNED = {
    "faust.transport.consumer:Consumer._drain_messages": "44a2500309e83c63",  # overridden: inline delivery
    "faust.transport.consumer:Consumer.commit": "a354437baaa08bf8",  # overridden: no commits of faust's
    "faust.transport.consumer:Consumer.force_commit": "cc094614d22c70fb",
    "faust.streams:Stream.take_events": "607d48aead118ba8",  # overridden: batches from the queue
    "faust.transport.drivers.aiokafka:Consumer._new_consumer_thread": "0870ec53dea75083",
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._create_worker_consumer": "c2701bfc3e6f6cad",
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._ensure_consumer": "ff4a4c693b7ec63f",
    "aiokafka.consumer.consumer:AIOKafkaConsumer.start": "2f1ba70443327538",  # reads _fetch_max_wait_ms
}


def _resolve(path: str):
    module, _, attr = path.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@pytest.mark.parametrize("path", sorted(PINNED))
def test_the_faust_code_compat_overrides_is_the_code_it_was_written_against(path):
    digest = hashlib.sha256(inspect.getsource(_resolve(path)).encode()).hexdigest()[:16]
    assert digest == PINNED[path], f"{path} changed in the installed version: review stream/worker/compat.py"


def test_aiokafka_still_builds_its_fetcher_from_the_attribute_compat_sets():
    from aiokafka.consumer.consumer import AIOKafkaConsumer

    assert "fetch_max_wait_ms=self._fetch_max_wait_ms" in inspect.getsource(AIOKafkaConsumer.start)


def test_the_app_uses_the_inline_consumer_batch_stream_and_the_fetch_wait_setting():
    from faust.transport.drivers import by_url

    from stream.worker import compat
    from stream.worker.app import create_app

    app = create_app(Settings(broker="kafka://127.0.0.1:9;127.0.0.2:9", fetch_max_wait_ms=42))
    assert [str(u) for u in app.conf.broker] == ["cgkafka://127.0.0.1:9", "cgkafka://127.0.0.2:9"]
    assert by_url(str(app.conf.broker[0])) is compat.Transport
    assert compat.Transport.Consumer is compat.InlineConsumer
    assert app.conf.Stream is compat.BatchStream
    assert app.fetch_max_wait_ms == 42


def test_no_module_outside_compat_touches_a_private_faust_name():
    """Private faust names: ``_current_event``, ``_commit*``, ``_thread``, ``_consumer``,
    store ``_get``/``_set`` ... are only reached from stream/worker/compat.py."""
    private = re.compile(r"\b(?:app|consumer|self\.app|faust\.\w+|_thread)\.\_[a-z]\w*")
    assert private.search("await app.consumer._commit_offsets(tps)") and private.search("app._consumer")
    offenders = []
    for path in STREAM.rglob("*.py"):
        if path.name == "compat.py":
            continue
        text = path.read_text()
        if "faust" not in text and "app." not in text:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if private.search(line) or "from faust.streams import _" in line:
                offenders.append(f"{path.relative_to(STREAM)}:{lineno}: {line.strip()}")
    assert offenders == []


def test_a_steady_trickle_of_fetches_does_not_hold_a_batch_open_until_it_is_full():
    """CG_BATCH_WITHIN bounds a batch from its first record: one fetch every 2 ms used to
    extend the wait each time, so a batch at 1,000 events/s closed only when full."""
    from stream.worker.app import create_app

    app = create_app(Settings(broker="kafka://127.0.0.1:9"))

    async def scenario() -> int:
        stream = app.stream(app.channel())
        batches = stream.take_events(2000, within=0.02)
        first = asyncio.ensure_future(batches.__anext__())
        await asyncio.sleep(0)  # take_events hands its queue to the inline consumer
        queue = app.consumer.inline_queue

        async def trickle() -> None:
            for i in range(2000):
                queue.put_nowait([f"record-{i}"])
                await asyncio.sleep(0.002)

        feeding = asyncio.ensure_future(trickle())
        try:
            return len(await asyncio.wait_for(first, 30))
        finally:
            feeding.cancel()

    size = asyncio.run(scenario())
    assert 1 <= size < 2000
