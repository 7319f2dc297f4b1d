"""stream.worker.compat is the only place faust and mode are imported and private faust,
mode or aiokafka names are used, and each use is pinned to the installed version: when the
framework changes code compat overrides, re-enacts or relies on, a test here fails and
compat.py must be reviewed against the new code.
"""

from __future__ import annotations

import ast
import asyncio
import functools
import hashlib
import importlib
import inspect
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

from stream.settings import Settings

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
STREAM = ROOT / "stream"
COMPAT = STREAM / "worker" / "compat.py"
FRAMEWORKS = ("faust", "mode", "aiokafka")

#: The faust / mode / aiokafka code stream.worker.compat overrides, re-enacts or relies on
#: (sha256 of the source, first 16 hex). Reviewed against faust-streaming 0.15.3, mode-streaming
#: 0.7.1 and aiokafka 0.14.0.
PINNED = {
    "faust.transport.consumer:Consumer._drain_messages": "44a2500309e83c63",  # overridden: inline delivery
    "faust.transport.consumer:Consumer._wait_next_records": "6218e1969a636b3f",  # called by the override
    "faust.transport.consumer:Consumer.__init__": "302410d59e6972d1",  # sets _read_offset, _buffered_partitions
    "faust.transport.consumer:Consumer.commit": "a354437baaa08bf8",  # overridden: no commits of faust's
    "faust.transport.consumer:Consumer.force_commit": "cc094614d22c70fb",
    "faust.transport.consumer:ThreadDelegateConsumer.__init__": "7072ae80eac1ff62",  # sets _thread
    "faust.transport.drivers.aiokafka:Consumer._to_message": "7c24f6511b2fcef7",  # called by the override
    "faust.transport.drivers.aiokafka:Consumer._new_consumer_thread": "0870ec53dea75083",
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._create_worker_consumer": "c2701bfc3e6f6cad",
    "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._ensure_consumer": "ff4a4c693b7ec63f",
    "faust.streams:Stream.take_events": "607d48aead118ba8",  # overridden: batches from the queue
    "faust.worker:Worker.on_first_start": "acd1c71f20c4a392",  # extended: the host's start-up callbacks first
    "faust.worker:Worker.on_setup_root_logger": "0d468284fb5c8880",  # extended: no spinner
    "faust.app.base:App.main": "dd862bb74854ea2f",  # re-enacted by FaustHost.main (no autodiscovery)
    "faust.app.router:Router.external_topics_metadata": "53ee69200599cd2b",  # FaustHost.owner_url
    "mode.services:Service.__init__": "ab4d12a25b93044a",  # sets _stopped
    "aiokafka.consumer.consumer:AIOKafkaConsumer.__init__": "01506f316191f7c9",  # sets _fetch_max_wait_ms
    "aiokafka.consumer.consumer:AIOKafkaConsumer.start": "2f1ba70443327538",  # reads _fetch_max_wait_ms
    # set_lz4_level: the codec's level argument, and the builder calling the module's lz4_encode
    "aiokafka.codec:lz4_encode": "a27f1d0da7e18dcb",
    "aiokafka.record.default_records:_DefaultRecordBatchBuilderPy._maybe_compress": "aec315ff19fb0cc6",
}

#: Every private framework name compat.py touches -> the pinned code that defines or uses it.
PRIVATE_NAMES = {
    "_drain_messages": "faust.transport.consumer:Consumer._drain_messages",
    "_wait_next_records": "faust.transport.consumer:Consumer._wait_next_records",
    "_read_offset": "faust.transport.consumer:Consumer.__init__",
    "_buffered_partitions": "faust.transport.consumer:Consumer.__init__",
    "_thread": "faust.transport.consumer:ThreadDelegateConsumer.__init__",
    "_to_message": "faust.transport.drivers.aiokafka:Consumer._to_message",
    "_new_consumer_thread": "faust.transport.drivers.aiokafka:Consumer._new_consumer_thread",
    "_create_worker_consumer": "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._create_worker_consumer",
    "_ensure_consumer": "faust.transport.drivers.aiokafka:AIOKafkaConsumerThread._ensure_consumer",
    "_stopped": "mode.services:Service.__init__",
    "_fetch_max_wait_ms": "aiokafka.consumer.consumer:AIOKafkaConsumer.__init__",
}


def _resolve(path: str):
    module, _, attr = path.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _digest(path: str) -> str:
    return hashlib.sha256(inspect.getsource(_resolve(path)).encode()).hexdigest()[:16]


@pytest.mark.parametrize("path", sorted(PINNED))
def test_the_framework_code_compat_relies_on_is_the_code_it_was_written_against(path):
    assert _digest(path) == PINNED[path], f"{path} changed in the installed version: review stream/worker/compat.py"


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.AST) -> set[str]:
    """Names a module defines itself: functions, classes, attributes and names it assigns, arguments."""
    names: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store):
            names.add(n.attr)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            names.add(n.id)
        elif isinstance(n, ast.arg):
            names.add(n.arg)
    return names


def _private_uses(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``x._name``, ``getattr(x, "_name")`` and ``from faust... import _name`` in a module."""
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and _is_private(n.attr):
            yield n.lineno, n.attr
        elif (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in ("getattr", "hasattr", "setattr")
            and len(n.args) >= 2
            and isinstance(n.args[1], ast.Constant)
            and isinstance(n.args[1].value, str)
            and _is_private(n.args[1].value)
        ):
            yield n.lineno, n.args[1].value
        elif isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in FRAMEWORKS:
            yield from ((n.lineno, a.name) for a in n.names if _is_private(a.name))


@functools.lru_cache(maxsize=1)
def _framework_private_names() -> frozenset[str]:
    """Every private name faust, mode and aiokafka define (methods, attributes, module names)."""
    names: set[str] = set()
    for package in FRAMEWORKS:
        root = Path(importlib.import_module(package).__file__).parent
        for path in root.rglob("*.py"):
            names.update(x for x in _defined(ast.parse(path.read_text(encoding="utf-8"))) if _is_private(x))
    return frozenset(names)


def _offenders(paths: Iterable[Path]) -> list[str]:
    framework = _framework_private_names()
    out = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _defined(tree)
        for lineno, name in _private_uses(tree):
            if name in framework and name not in own:
                out.append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{lineno}: {name}")
    return out


def test_the_pin_scan_finds_framework_private_names_however_they_are_reached(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "def f(worker, x):\n    worker.app.consumer._thread.call()\n    getattr(x, '_fetch_max_wait_ms')\n"
        "    return x._stopped\nfrom faust.streams import _current_event\n"
    )
    found = {line.rsplit(": ", 1)[1] for line in _offenders([sample])}
    assert found == {"_thread", "_fetch_max_wait_ms", "_stopped", "_current_event"}


def test_no_module_outside_compat_touches_a_private_faust_mode_or_aiokafka_name():
    """Not only ``app._x`` / ``consumer._x``: any attribute, ``getattr`` string or import of
    a private name faust, mode or aiokafka define, anywhere in stream/ and bench/ but
    stream/worker/compat.py, unless that module defines the name itself (its own
    ``self._lock`` is not faust's). (Tests may read a client's private settings to check
    that ours reach it.)"""
    paths = [p for folder in ("stream", "bench") for p in (ROOT / folder).rglob("*.py") if p != COMPAT]
    assert _offenders(paths) == []


def test_no_worker_module_reaches_into_another_objects_private_names():
    """Inside stream/worker each object's private state is its own module's (no ``d._commit``,
    no ``part._offsets`` outside durability.py): others ask through methods."""
    offenders = []
    for path in sorted((STREAM / "worker").glob("*.py")):
        if path == COMPAT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _defined(tree)
        offenders += [f"{path.name}:{lineno}: {name}" for lineno, name in _private_uses(tree)
                      if name not in own and name != "_exit"]  # os._exit
    assert offenders == []


def test_every_private_framework_name_compat_touches_is_pinned():
    import stream.worker.compat as compat

    framework = _framework_private_names()
    used = {name for _, name in _private_uses(ast.parse(COMPAT.read_text(encoding="utf-8"))) if name in framework}
    overridden = {name for cls in vars(compat).values() if inspect.isclass(cls) and cls.__module__ == compat.__name__
                  for name, value in vars(cls).items() if _is_private(name) and callable(value)
                  and any(name in vars(b) for b in cls.__mro__[1:] if b.__module__.split(".")[0] in FRAMEWORKS)}
    assert used | overridden == set(PRIVATE_NAMES), "pin each private name compat.py touches (PRIVATE_NAMES, PINNED)"
    assert set(PRIVATE_NAMES.values()) <= set(PINNED)
    for name, path in PRIVATE_NAMES.items():
        assert name in inspect.getsource(_resolve(path)), f"{path} no longer defines or uses {name}"


def test_only_compat_imports_faust_or_mode():
    framework_import = re.compile(r"^\s*(?:import|from)\s+(?:faust|mode)\b", re.M)
    importers = sorted(str(p.relative_to(ROOT)) for p in STREAM.rglob("*.py") if framework_import.search(p.read_text()))
    assert importers == ["stream/worker/compat.py"]


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
    assert app.host.settings.fetch_max_wait_ms == 42


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


def _lz4_batch(records: list[bytes]) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(magic=2, compression_type=3,  # lz4
                                        is_transactional=False, producer_id=-1, producer_epoch=-1,
                                        base_sequence=-1, batch_size=1 << 20)
    for offset, value in enumerate(records):
        builder.append(offset, timestamp=1_700_000_000_000, key=b"ctx", value=value, headers=[])
    return bytes(builder.build())


def test_the_lz4_level_setting_reaches_the_record_batches_aiokafka_builds(monkeypatch):
    """aiokafka's batch builder (the C one where it is built) compresses at the level set,
    and the batch reads back whole; the default is aiokafka's 9 (LZ4HC)."""
    import sys

    from aiokafka import codec
    from aiokafka.record import default_records
    from aiokafka.record.memory_records import MemoryRecords

    from stream.worker.compat import set_lz4_level

    for module in {default_records.__name__, default_records.DefaultRecordBatchBuilder.__module__}:
        monkeypatch.setattr(sys.modules[module], "lz4_encode", codec.lz4_encode)  # aiokafka's own; restored after
    records = [b'{"type":"alert","context_id":"ctx","orphans":["art-%d","art-%d"]}' % (i, i * 7) for i in range(300)]
    default = _lz4_batch(records)
    set_lz4_level(1)
    fast = _lz4_batch(records)
    set_lz4_level(9)
    assert _lz4_batch(records) == default  # 9: what aiokafka does unset
    assert fast != default and len(fast) > len(default)  # level 1: faster, a little larger
    batch = MemoryRecords(fast).next_batch()
    assert [r.value for r in batch] == records
    assert Settings().producer_lz4_level == 1
