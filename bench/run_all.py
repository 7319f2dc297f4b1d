"""Run every benchmark part and write docs/BENCHMARKS.md — what ``make bench`` runs.

    python -m bench.run_all                      # everything, full size (~25 min): docs/BENCHMARKS.md
    python -m bench.run_all --quick              # smoke-sized (~3 min): var/bench/BENCHMARKS.quick.md
    python -m bench.run_all --parts 1,6          # some parts only (1-14, see below)
    python -m bench.run_all --bootstrap HOST:PORT   # use a running broker instead of starting one
    python -m bench.run_all --update --parts 6,8 # re-run those, keep the other parts of docs/BENCHMARKS.md

Parts (each is a script that also runs alone, with ``--quick`` for a smoke-sized run):

More (the module notes): bench/METHODS.md, section ``bench/run_all.py``.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    REPO, broker, git_rev, loadavg, machine_info, module_of, say, software_line, utc_now,
)

KAFKA_PARTS = {2, 3, 4, 5, 7, 9, 10, 12}

TITLES = {
    1: "1. Engine vs the seed-style naive validator",
    2: "2. Worker end to end vs a raw aiokafka consume-only loop",
    3: "3. Event -> alert latency at fixed producer rates",
    4: "4. Scale-out: 1 vs 2 workers on 4 partitions",
    5: "5. State at 1M artifacts: fill, memory, disk, restore-to-ready",
    6: "6. How cost grows (engine)",
    7: "7. What bounds the worker: faust's own per-event floor",
    8: "8. Adversarial shapes (engine)",
    9: "9. The pipeline client: produce rate, StatusView lookups and catch-up",
    10: "10. The peer a user would pick instead: a Quix Streams app, same engine",
    11: "11. The Claude Code hook: time per call",
    12: "12. Replay: memory bounded by the state, linear line reading",
    13: "13. Ingest: one long user message, linear in its size",
    14: "14. This worker against issue 25's (c332baa), synthetic stream, same bench",
}


def part_argv(part: int, args: argparse.Namespace) -> tuple[str, list[str]]:
    """(script, arguments) of one part, without --out/--bootstrap."""
    q = ["--quick"] if args.quick else []
    runs = ["--runs", str(args.runs)] if args.runs else []
    if part == 1:
        return "bench/bench_engine.py", [*q]
    if part == 2:
        return "bench/bench_worker.py", [*q, *runs, "--phases", "real,synthetic"]
    if part == 3:
        return "bench/bench_worker.py", [*q, "--phases", "latency", "--rates", args.rates]
    if part == 4:
        return "bench/bench_scaleout.py", [*q, *runs]
    if part == 5:
        n = ["--artifacts", str(args.artifacts)] if args.artifacts else []
        b = ["--fill-budget", str(args.fill_budget)] if args.fill_budget else []
        return "bench/bench_state.py", [*q, *n, *b]
    if part == 6:
        return "bench/bench_scaling.py", [*q]
    if part == 7:
        return "bench/bench_floor.py", [*q]
    if part == 8:
        return "bench/bench_shapes.py", [*q]
    if part == 9:
        return "bench/bench_client.py", [*q, *runs]
    if part == 10:
        return "bench/bench_quix.py", [*q, *runs]
    if part == 11:
        return "bench/bench_hook.py", [*q]
    if part == 12:
        return "bench/bench_replay.py", [*q]
    if part == 13:
        return "bench/bench_ingest.py", [*q]
    if part == 14:  # its own fresh broker per run (bench_worker): not one of KAFKA_PARTS
        return "bench/bench_ab.py", [*q]
    raise ValueError(part)


def shown(script: str, argv: list[str]) -> str:
    return shlex.join(["python", "-m", module_of(script), *argv])


def run_part(part: int, args: argparse.Namespace, bootstrap: str | None, tmp: Path,
             broker_data: Path | None = None) -> dict:
    script, argv = part_argv(part, args)
    out = tmp / f"part{part}.md"
    cmd = [sys.executable, "-m", module_of(script), *argv, "--title", TITLES[part], "--out", str(out)]
    if part in KAFKA_PARTS and bootstrap:
        cmd += ["--bootstrap", bootstrap]
    if part == 5 and broker_data is not None:
        cmd += ["--broker-data", str(broker_data)]
    say(f"part {part}: {shown(script, argv)}")
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, timeout=args.part_timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        code = "timeout"
    secs = time.monotonic() - t0
    text = out.read_text() if out.exists() else ""
    summary_file = Path(f"{out}.summary")
    summary = summary_file.read_text().strip() if summary_file.exists() else ""
    say(f"part {part}: {'ok' if code == 0 else f'FAILED ({code})'} in {secs / 60:.1f} min"
        f"{': ' + summary if summary else ''}")
    return {"part": part, "command": shown(script, argv), "code": code, "seconds": secs, "text": text,
            "summary": summary}


def _row(r: dict) -> str:
    status = "ok" if r["code"] == 0 else f"**failed** ({r['code']})"
    return (f"| {TITLES[r['part']]} | {r['summary'] or '—'} | `{r['command']}` | "
            f"{r['seconds'] / 60:.1f} min | {status} |")


def _section(r: dict) -> str:
    if r["text"]:
        return r["text"].rstrip("\n")
    return f"## {TITLES[r['part']]}\n\nFailed ({r['code']}) without a report; command: `{r['command']}`."


def _command(argv: list[str]) -> str:
    return "make bench" if not argv else f"python -m bench.run_all {' '.join(argv)}"


def render(args: argparse.Namespace, argv: list[str], results: list[dict], kafka: str, load_start: str,
           started: str, total: float) -> str:
    m = machine_info()
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `{_command(argv)}` (`bench/run_all.py`; how to run each part: `bench/README.md`) — "
        f"{'**quick (smoke-sized) run: not for comparison**' if args.quick else 'full run'}.",
        "",
        f"- Date: {started} (total {total / 60:.1f} min); git {git_rev()}.",
        f"- Machine: {m['nproc']} CPUs ({m['cpu']}), {m['ram']} RAM; load average {load_start} at start, "
        f"{loadavg()} at end (1/5/15 min).",
        f"- Software: {software_line()}; Kafka {kafka}.",
        "- The broker, the workers and the bench share the machine's cores (and, on a shared machine, so do "
        "other processes): compare figures measured side by side in one run — the ratios — rather than "
        "absolute rates across runs; each part gives its own load average and CPU figures.",
        "",
        "| part | result | command | time | status |",
        "|---|---|---|---:|---|",
    ]
    lines += [_row(r) for r in results]
    lines += ["", "Earlier measurements (the baseline before the worker's optimization pass, the engine's full "
              "10k run without a time budget): `bench/README.md`, *History*.", ""]
    for r in results:
        lines += [_section(r), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


ROW = re.compile(r"^\| (\d+)\. ")
SECTION = re.compile(r"^## (\d+)\. ")
RERUN = re.compile(r"^- Parts? ([\d, ]+) re-run ")


def _parts_phrase(parts: list[int]) -> str:
    return f"Part {parts[0]}" if len(parts) == 1 else f"Parts {', '.join(map(str, parts))}"


def update(old: str, args: argparse.Namespace, argv: list[str], results: list[dict], kafka: str,
           load_start: str, started: str, total: float) -> str:
    """``old`` (an existing report) with the summary rows and the sections of the parts in
    ``results`` replaced (added where missing, in part order), every other part kept as it
    was; one header line says which parts were re-run, when, by which command; earlier
    such lines lose the parts re-run now."""
    lines = old.rstrip("\n").split("\n")
    new = {r["part"]: r for r in results}
    first = next((i for i, line in enumerate(lines) if SECTION.match(line)), len(lines))
    head, body = lines[:first], lines[first:]
    # the summary table: its rows by part number
    table = [i for i, line in enumerate(head) if ROW.match(line)]
    if table:
        start, end = table[0], table[-1] + 1
    else:  # no table yet: after the header row if any, else before the first blank line after the title
        hdr = next((i for i, line in enumerate(head) if line.startswith("|---")), None)
        start = end = (hdr + 1) if hdr is not None else len(head)
    rows = {int(ROW.match(line).group(1)): line for line in head[start:end] if ROW.match(line)}
    rows.update({p: _row(r) for p, r in new.items()})
    table_lines = [rows[p] for p in sorted(rows)]
    # the header: drop the re-run parts from earlier re-run lines, add this run's line
    pre: list[str] = []
    for line in head[:start]:
        m = RERUN.match(line)
        if m:
            kept = [int(x) for x in m.group(1).replace(" ", "").split(",") if x and int(x) not in new]
            if not kept:
                continue
            line = f"- {_parts_phrase(kept)} re-run {line[m.end():]}"
        pre.append(line)
    rerun = (f"- {_parts_phrase(sorted(new))} re-run {started} by `{_command(argv)}` (total {total / 60:.1f} min; "
             f"git {git_rev()}; load average {load_start} at start, {loadavg()} at end; Kafka {kafka}); the other "
             "parts are from the runs above.")
    at = max((i for i, line in enumerate(pre) if line.startswith("- ")), default=len(pre) - 1) + 1
    pre.insert(at, rerun)
    # the sections, by part number (text before the first section stays in the header)
    sections: dict[int, list[str]] = {}
    current: int | None = None
    for line in body:
        m = SECTION.match(line)
        if m:
            current = int(m.group(1))
            sections[current] = []
        sections[current].append(line)
    for p, r in new.items():
        sections[p] = [*_section(r).split("\n"), ""]
    out = pre + table_lines + head[end:]
    for p in sorted(sections):
        text = sections[p]
        while text and not text[-1].strip():
            text = text[:-1]
        out += [*text, ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap = argparse.ArgumentParser(prog="bench/run_all.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="every part smoke-sized (about a minute each)")
    ap.add_argument("--parts", default=",".join(map(str, TITLES)), help="comma list of parts 1-14 (default all)")
    ap.add_argument("--out", default=None,
                    help="report file (default docs/BENCHMARKS.md; with --quick var/bench/BENCHMARKS.quick.md)")
    ap.add_argument("--runs", type=int, default=None,
                    help="runs per measurement for parts 2, 4, 9 (default 3) and 10 (default 2)")
    ap.add_argument("--rates", default="1000,5000", help="producer rates of part 3 (default 1000,5000)")
    ap.add_argument("--artifacts", type=int, default=None, help="part 5: artifacts to track (default 1,000,000)")
    ap.add_argument("--fill-budget", type=float, default=None,
                    help="part 5: most seconds the worker may take to process the fill (default 1800)")
    ap.add_argument("--update", action="store_true",
                    help="rewrite only the summary rows and sections of the parts run in the existing report "
                         "(the others kept; the header says which parts were re-run, when)")
    ap.add_argument("--part-timeout", type=float, default=3600, help="seconds before a part is killed")
    ap.add_argument("--bootstrap", "--broker", dest="bootstrap", metavar="HOST:PORT",
                    help="use this running broker instead of starting one")
    ap.add_argument("--kafka-port", type=int, default=None,
                    help="port of the broker to start (controller: the next one); default: free ports")
    args = ap.parse_args(argv)
    parts = sorted({int(p) for p in args.parts.split(",") if p.strip()})
    if not parts or any(p not in TITLES for p in parts):
        ap.error("--parts: numbers 1-14")
    out = (
        Path(args.out) if args.out else REPO / ("var/bench/BENCHMARKS.quick.md" if args.quick else "docs/BENCHMARKS.md")
    )
    started, load_start, t0 = utc_now(), loadavg(), time.monotonic()
    results: list[dict] = []
    kafka = "not used"
    with tempfile.TemporaryDirectory(prefix="cg-bench-all-") as tmpdir:
        tmp = Path(tmpdir)
        # The pure parts first (no broker needed), then the broker for the others.
        for part in [p for p in parts if p not in KAFKA_PARTS]:
            results.append(run_part(part, args, None, tmp))
        kafka_parts = [p for p in parts if p in KAFKA_PARTS]
        if kafka_parts:
            try:
                with broker(args.bootstrap, kafka_port=args.kafka_port, tmp=tmp) as (settings, kafka):
                    data = None if args.bootstrap else Path(settings.kafka_home) / "data"
                    for part in kafka_parts:
                        results.append(run_part(part, args, settings.bootstrap_servers, tmp, data))
            except Exception as exc:  # the broker did not start
                say(f"broker: {exc}")
                for part in kafka_parts:
                    if not any(r["part"] == part for r in results):
                        results.append({"part": part, "command": shown(*part_argv(part, args)), "code": "no broker",
                                        "seconds": 0.0, "text": "", "summary": f"broker failed: {exc}"})
        results.sort(key=lambda r: r["part"])
        total = time.monotonic() - t0
        if args.update and out.exists():
            report = update(out.read_text(), args, argv, results, kafka, load_start, started, total)
        else:
            report = render(args, argv, results, kafka, load_start, started, total)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report)
    say(f"report written to {out}")
    return 0 if all(r["code"] == 0 for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
