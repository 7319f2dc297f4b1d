"""The loop closed, end to end: stream.client -> the real worker (subprocess) -> StatusView.

A pipeline emits with :class:`~stream.client.Guard`, the worker (``python -m stream
worker``, RocksDB) writes alerts and ``checkpoint-status``, and :class:`StatusView`
answers — after ``wait_for`` (read-your-writes), with no sleep anywhere.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stream import kafka_clients
from stream.client import Guard, NotAuthoritative, StatusView
from stream.settings import Settings
from tests.integration.harness import REPO, Worker, worker_env

#: wait_for's timeout in these tests.
WAIT = 60.0
#: emit -> status in the view: bench/bench_client.py part C measured p50 1.02 s, p95 1.04 s
#: (docs/BENCHMARKS.md, part 9); the test allows ten times the p95 for a loaded CI machine.
EMIT_TO_STATUS_BOUND = 10.0


@pytest.fixture
def stack(kafka_bootstrap: str, tmp_path: Path):
    """(settings of the pipeline, running worker) on this test's own topics and group."""
    yield from start_stack(kafka_bootstrap, tmp_path)


def start_stack(kafka_bootstrap: str, tmp_path: Path, python: str | Path = sys.executable):
    """Topics (``topics create``) and a worker started with ``python``; yields (settings, worker)."""
    env = worker_env(kafka_bootstrap, tmp_path)
    created = subprocess.run([str(python), "-m", "stream", "topics", "create"], env=env, cwd=REPO,
                             capture_output=True, text=True, timeout=60)
    assert created.returncode == 0, created.stderr
    settings = Settings(
        broker=env["CG_BROKER"], app_id=env["CG_APP_ID"], partitions=int(env["CG_PARTITIONS"]),
        compaction_topic=env["CG_COMPACTION_TOPIC"], artifact_topic=env["CG_ARTIFACT_TOPIC"],
        alerts_topic=env["CG_ALERTS_TOPIC"], verdicts_topic=env["CG_VERDICTS_TOPIC"],
        deadletter_topic=env["CG_DEADLETTER_TOPIC"], status_topic=env["CG_STATUS_TOPIC"],
    )
    deadline = time.monotonic() + 15  # a topic created a moment ago may take a moment to show
    while (n := asyncio.run(kafka_clients.topic_partitions(settings, [settings.status_topic]))[
            settings.status_topic]) is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert n == settings.partitions, "topics create makes checkpoint-status"
    worker = Worker(env, tmp_path / "worker.log", python=python).start()
    try:
        yield settings, worker
    finally:
        worker.stop()


def test_an_eviction_makes_the_checkpoint_not_authoritative_and_readmission_restores_it(stack):
    settings, worker = stack
    with Guard(settings) as guard, StatusView(settings) as view:
        ctx = guard.context("run-1")
        ctx.admitted("span-1")
        ctx.admitted("span-2")
        ctx.checkpoint("leaf-1", "leaf", referents=["span-1", "span-2"])
        ctx.checkpoint("root", "root", children=["leaf-1"])
        ctx.flush()
        view.wait_for(ctx, timeout=WAIT)
        assert view.is_authoritative("run-1", "leaf-1") and view.is_authoritative("run-1", "root")

        ctx.evicted("span-1")  # gone from the window, never stored durably
        ctx.flush()
        t0 = time.monotonic()
        view.wait_for(ctx, timeout=WAIT)
        waited = time.monotonic() - t0
        assert waited < EMIT_TO_STATUS_BOUND
        assert view.why("run-1", "leaf-1").open_rules == ("orphaned_referent",)
        assert view.why("run-1", "root").degraded_by == ("leaf-1",)
        with pytest.raises(NotAuthoritative) as refused:
            view.recover_from("run-1", "root")
        assert refused.value.orphans == {"leaf-1": ("span-1",)}
        assert "degraded by 1 node(s) under it: leaf-1 (orphans span-1)" in str(refused.value)

        ctx.admitted("span-1", tier="durable")  # re-fetched into the durable store
        ctx.flush()
        view.wait_for(ctx, timeout=WAIT)
        assert view.recover_from("run-1", "root").authoritative
        assert view.is_authoritative("run-1", "leaf-1")
    print(f"emit -> not authoritative in the view: {waited * 1000:.0f} ms")
    assert worker.proc.poll() is None
