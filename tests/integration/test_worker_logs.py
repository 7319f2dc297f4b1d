"""CG_LOG_FORMAT=json on a real worker: every line of its output is one JSON object.

A log shipper must be able to read the worker's output without multi-line rules: no
ASCII banner, no partition table across lines, and the context fields (topic,
partition, offset) on the lines that concern a record — here a dead letter.
"""

from __future__ import annotations

import json

from tests.integration.harness import Worker, produce, run, run_cli, worker_env


def test_json_logs_are_one_object_per_line_with_the_records_context_and_no_banner(kafka_bootstrap, tmp_path):
    env = worker_env(kafka_bootstrap, tmp_path, CG_LOG_FORMAT="json")
    created = run_cli(env, "topics", "create")
    assert created.returncode == 0, created.stderr
    log = tmp_path / "worker.log"
    worker = Worker(env, log).start()
    try:
        run(produce(kafka_bootstrap, [(env["CG_ARTIFACT_TOPIC"], b"ctx-1", b"{not json")]))
        worker.wait_for_log("dead letter", timeout=60)
    finally:
        assert worker.stop() == 0
    lines = log.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line parses: nothing else is printed
    assert len(records) > 20
    for r in records:
        assert {"time", "level", "logger", "message"} <= r.keys() and "\n" not in r["message"]
        assert r["level"] in ("debug", "info", "warning", "error", "critical")
    assert not any("ƒaµS†" in line or "┌" in line or "│" in line for line in lines)  # banner, tables
    assert any(r["message"] == "[^GuardWorker]: Ready" for r in records)
    (dead,) = [r for r in records if r["message"].startswith("dead letter ")]
    assert (dead["topic"], dead["offset"]) == (env["CG_ARTIFACT_TOPIC"], 0) and isinstance(dead["partition"], int)
    assert dead["logger"].startswith("checkpoint_guard.")
