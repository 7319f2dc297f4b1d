"""Replay's memory and time: bounded by the state, not the output; linear line reading (issue 28, items 5, 6).

    python -m bench.bench_replay [--quick] [--cases status,line,verify] [--baseline REV] [--bootstrap HOST:PORT]

Each figure is one ``python -m stream replay`` process (peak RSS and CPU from ``wait4``).
``status``: a ``--depth`` chain whose bottom leaf's referent is toggled ``--toggles`` times,
~1 M status records from ~0.5 MB (goal < 200 MB). ``line``: one ``--line-mb`` MB line between
two events, dead-lettered by size (CPU s). ``verify``: ``replay --from-kafka --verify`` against
``--alerts`` alerts and as many statuses published from ``replay --from-kafka --status`` (a broker
of its own, or ``--bootstrap``). ``--baseline REV``: the same with REV's code (``git archive``).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench.common import (
    REPO, add_part_args, broker, loadavg, part_parser, report_end, report_head, say, send_all, write_out,
)

MiB = 1 << 20


def _line(ev: dict) -> bytes:
    return json.dumps(ev, separators=(",", ":")).encode()


def _art(ctx: str, eid: str, op: str, artifact: str = "artifact-of-the-bottom-leaf") -> bytes:
    return _line({"type": "artifact", "schema_version": 1, "event_id": eid, "context_id": ctx,
                  "artifact_id": artifact, "op": op, "tier": "live"})


def chain_input(path: Path, depth: int, toggles: int) -> tuple[int, int]:
    """The status case's input; returns (bytes, status records it must give)."""
    ctx = "bench-replay-chain-context"
    lines = [_art(ctx, f"{ctx}/admit-first", "admitted")]
    for i in range(depth - 1, -1, -1):  # bottom-up: each node's child is known when it arrives
        leaf = i == depth - 1
        lines.append(_line({
            "type": "checkpoint", "schema_version": 1, "event_id": f"{ctx}/checkpoint-{i:06d}", "context_id": ctx,
            "node_id": f"summary-node-{i:06d}", "level": "leaf" if leaf else ("root" if i == 0 else "section"),
            "children": [] if leaf else [f"summary-node-{i + 1:06d}"],
            "referents": ["artifact-of-the-bottom-leaf"] if leaf else [],
            "negative_constraints": [], "raw_negative_constraints": [],
        }))
    for t in range(toggles):
        lines.append(_art(ctx, f"{ctx}/toggle-{t:06d}", "evicted" if t % 2 == 0 else "admitted"))
    data = b"\n".join(lines) + b"\n"
    path.write_bytes(data)
    return len(data), depth + depth * toggles


def line_input(path: Path, mb: float) -> int:
    size = int(mb * 1_000_000)
    with open(path, "wb") as fh:
        fh.write(_art("bench-line", "bench-line/e0", "admitted") + b"\n")  # a first line of events: not refused
        head = b'{"type":"artifact","pad":"'
        fh.write(head)
        block = b"x" * MiB
        left = size - len(head) - 2
        while left > 0:
            fh.write(block[:min(left, MiB)])
            left -= MiB
        fh.write(b'"}\n')
        fh.write(_art("bench-line", "bench-line/e1", "admitted") + b"\n")
    return size


def code_dir(rev: str | None, tmp: Path) -> Path:
    """The tree to run: this checkout, or ``rev`` extracted with ``git archive``."""
    if rev is None:
        return REPO
    where = tmp / f"baseline-{rev.replace('/', '_')}"
    if not where.exists():
        where.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def measure(code: Path, args: list[str], env: dict[str, str] | None = None) -> dict:
    """Run ``python -m stream ARGS`` from ``code``; stdout counted in lines; rusage via wait4."""
    env = {**(env or os.environ), "PYTHONPATH": str(code)}
    with tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "stream", *args], cwd=code, env=env,
                                stdout=subprocess.PIPE, stderr=err)
        lines = 0
        while chunk := proc.stdout.read(MiB):
            lines += chunk.count(b"\n")
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    return {"code": proc.returncode, "rss": ru.ru_maxrss / 1024, "cpu": ru.ru_utime + ru.ru_stime, "wall": wall,
            "lines": lines, "stderr": stderr}


def _row(label: str, r: dict, extra: str = "") -> str:
    return f"| {label} | {r['rss']:,.0f} MiB | {r['cpu']:.2f} s | {r['wall']:.1f} s | {extra} |"


def case_status(codes: dict[str, Path], tmp: Path, depth: int, toggles: int, lines: list[str], summary: list[str],
                errors: list[str]) -> None:
    path = tmp / "chain.jsonl"
    size, want = chain_input(path, depth, toggles)
    lines += [f"**status**: a chain of {depth:,} nodes, its bottom leaf's referent toggled {toggles:,} times: "
              f"{size / 1e6:.2f} MB of input, {want:,} status records (`replay FILE --status`, stdout through a pipe).",
              "", "| code | peak RSS | CPU | wall | records written |", "|---|---:|---:|---:|---|"]
    for name, code in codes.items():
        say(f"status: {name}")
        r = measure(code, ["replay", str(path), "--status"])
        statuses = r["lines"] - toggles  # one alert per toggle
        ok = r["code"] == 0 and statuses == want
        if not ok:
            errors.append(f"status ({name}): exit {r['code']}, {statuses:,} status records (want {want:,}): "
                          f"{r['stderr'].strip().splitlines()[-1:]}")
        lines.append(_row(name, r, f"{r['lines']:,} ({statuses:,} statuses)"))
        summary.append(f"status {want / 1e6:.2f} M records ({name}): {r['rss']:,.0f} MiB")
    lines.append("")


def case_line(codes: dict[str, Path], tmp: Path, mb: float, lines: list[str], summary: list[str],
              errors: list[str]) -> None:
    path = tmp / "line.jsonl"
    size = line_input(path, mb)
    lines += [f"**line**: one event, one line of {size / 1e6:,.0f} MB, one event (`replay FILE`).", "",
              "| code | peak RSS | CPU | wall | dead letter |", "|---|---:|---:|---:|---|"]
    for name, code in codes.items():
        say(f"line: {name}")
        r = measure(code, ["replay", str(path)])
        dead = next((x for x in r["stderr"].splitlines() if ":2: " in x), "")
        if r["code"] != 0 or f"line is {size} bytes" not in dead or r["lines"] != 0:
            errors.append(f"line ({name}): exit {r['code']}, {dead[:120]!r}")
        lines.append(_row(name, r, f"`{dead.split(': ', 1)[-1][:70]}`"))
        summary.append(f"{size / 1e6:,.0f} MB line ({name}): {r['cpu']:.2f} s CPU")
    lines.append("")


async def _produce(bootstrap: str, records) -> int:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=20, max_batch_size=1 << 20,
                                max_request_size=4 << 20)
    await producer.start()
    try:
        return await send_all(producer, records)
    finally:
        await producer.stop()


def case_verify(codes: dict[str, Path], tmp: Path, alerts: int, bootstrap: str | None, kafka_port: int | None,
                lines: list[str], summary: list[str], errors: list[str]) -> None:
    contexts, leaves = 4, 250
    toggles = max(2, alerts // (contexts * leaves))
    with broker(bootstrap, kafka_port=kafka_port, tmp=tmp) as (settings, kafka):
        boot = settings.bootstrap_servers
        tag = uuid.uuid4().hex[:8]
        env = {**os.environ, "CG_BROKER": f"kafka://{boot}", "CG_APP_ID": f"bench-replay-{tag}",
               "CG_PARTITIONS": "4", "CG_COMPACTION_TOPIC": f"compaction-{tag}", "CG_ARTIFACT_TOPIC": f"artifact-{tag}",
               "CG_ALERTS_TOPIC": f"alerts-{tag}", "CG_VERDICTS_TOPIC": f"verdicts-{tag}",
               "CG_STATUS_TOPIC": f"status-{tag}", "CG_DEADLETTER_TOPIC": f"deadletter-{tag}",
               "CG_REMEDIATION_TOPIC": f"remediation-{tag}"}
        made = subprocess.run([sys.executable, "-m", "stream", "topics", "create"], cwd=REPO, env=env,
                              capture_output=True, text=True)
        if made.returncode != 0:
            errors.append(f"verify: topics create: {made.stderr.strip()[-200:]}")
            return
        inputs = []
        for c in range(contexts):
            ctx = f"bench-verify-{c}"
            inputs.append((env["CG_ARTIFACT_TOPIC"], ctx, _art(ctx, f"{ctx}/admit", "admitted", "shared")))
            for i in range(leaves):
                inputs.append((env["CG_COMPACTION_TOPIC"], ctx, _line({
                    "type": "checkpoint", "schema_version": 1, "event_id": f"{ctx}/leaf-{i}", "context_id": ctx,
                    "node_id": f"leaf-{i:04d}", "level": "leaf", "children": [], "referents": ["shared"],
                    "negative_constraints": [], "raw_negative_constraints": []})))
            for t in range(toggles):
                inputs.append((env["CG_ARTIFACT_TOPIC"], ctx,
                               _art(ctx, f"{ctx}/toggle-{t}", "evicted" if t % 2 == 0 else "admitted", "shared")))
        say(f"verify: producing {len(inputs):,} input records")
        asyncio.run(_produce(boot, ((t, k.encode(), v) for t, k, v in inputs)))
        published = tmp / "published.jsonl"
        say("verify: the published side (replay --from-kafka --status --out)")
        made = measure(REPO, ["replay", "--from-kafka", "--status", "--out", str(published)], env)
        if made["code"] != 0:
            errors.append(f"verify: replay --from-kafka: {made['stderr'].strip()[-200:]}")
            return

        counts = {"alert": 0, "status": 0}

        def outputs():
            with open(published, "rb") as fh:
                for raw in fh:
                    rec = json.loads(raw)
                    counts[rec["type"]] += 1
                    if rec["type"] == "alert":
                        yield env["CG_ALERTS_TOPIC"], rec["context_id"].encode(), raw.rstrip(b"\n")
                    else:
                        key = json.dumps([rec["context_id"], rec["node_id"]], separators=(",", ":")).encode()
                        yield env["CG_STATUS_TOPIC"], key, raw.rstrip(b"\n")

        say("verify: producing the published alerts and statuses")
        asyncio.run(_produce(boot, outputs()))
        n_alerts = counts["alert"]
        lines += [f"**verify**: `replay --from-kafka --verify` against {n_alerts:,} published alerts and "
                  f"{counts['status']:,} status records ({len(inputs):,} input records: {contexts} contexts of "
                  f"{leaves} leaves under one artifact toggled {toggles:,} times); Kafka {kafka}.", "",
                  "| code | peak RSS | CPU | wall | verify |", "|---|---:|---:|---:|---|"]
        for name, code in codes.items():
            say(f"verify: {name}")
            r = measure(code, ["replay", "--from-kafka", "--verify"], env)
            got = [x for x in r["stderr"].splitlines() if x.startswith("verify: ") and "compared" in x]
            if r["code"] != 0 or len(got) != 2 or not all("0 missing, 0 extra, 0 different" in x for x in got):
                errors.append(f"verify ({name}): exit {r['code']}, {got or r['stderr'].strip().splitlines()[-2:]}")
            lines.append(_row(name, r, "; ".join(x.removeprefix("verify: ") for x in got)))
            summary.append(f"verify {n_alerts / 1e6:.2f} M alerts ({name}): {r['rss']:,.0f} MiB")
        lines.append("")


def main(argv: list[str] | None = None) -> int:
    ap = part_parser("bench/bench_replay.py", __doc__)
    ap.add_argument("--cases", default="status,line,verify", help="comma list of status, line, verify")
    ap.add_argument("--depth", type=int, default=None, help="status: chain length [1000]")
    ap.add_argument("--toggles", type=int, default=None, help="status: evictions + admissions [1000]")
    ap.add_argument("--line-mb", type=float, default=None, help="line: its size in MB [100]")
    ap.add_argument("--alerts", type=int, default=None, help="verify: published alerts [250000]")
    ap.add_argument("--baseline", default=None, metavar="REV", help="also run git revision REV (e.g. main)")
    add_part_args(ap, title="12. Replay: memory bounded by the state, linear line reading",
                  quick="a 200-node chain, a 10 MB line, 20k alerts")
    args = ap.parse_args(argv)
    q = args.quick
    depth = args.depth or (200 if q else 1000)
    toggles = args.toggles or (200 if q else 1000)
    line_mb = args.line_mb or (10 if q else 100)
    alerts = args.alerts or (20_000 if q else 250_000)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    t_start, load_start = time.monotonic(), loadavg()
    lines = [*report_head(args.title, "bench/bench_replay.py", sys.argv[1:] if argv is None else argv, ".", dash=True),
             "Each figure is one `python -m stream replay` process (peak RSS and user + sys CPU from `wait4`, "
             "interpreter start included); `--baseline` rows run the same command with that revision's code, in "
             "the same run.", ""]
    summary: list[str] = []
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmpdir:
        tmp = Path(tmpdir)
        codes = {"this tree": REPO}
        if args.baseline:
            codes[f"`{args.baseline}`"] = code_dir(args.baseline, tmp)
        for case in cases:
            try:
                if case == "status":
                    case_status(codes, tmp, depth, toggles, lines, summary, errors)
                elif case == "line":
                    case_line(codes, tmp, line_mb, lines, summary, errors)
                elif case == "verify":
                    case_verify(codes, tmp, alerts, args.bootstrap, args.kafka_port, lines, summary, errors)
                else:
                    errors.append(f"unknown case {case!r}")
            except Exception as exc:  # noqa: BLE001 - report and go on
                errors.append(f"{case}: {type(exc).__name__}: {exc}")
    write_out(args.out, report_end(lines, errors, t_start, load_start), "; ".join(summary))
    return 1 if errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
