"""Ingest of a long user message: is reading prohibitions linear in the message's size? (issue 28, item 6)

    python -m bench.bench_ingest [--sizes 1,5] [--form same|distinct] [--runs 1] [--quick] [--out F]

Writes a Claude Code transcript whose one user message is a run of short prohibitions
("don't touch the config. never push to main. ..." — ``same``; or "don't touch module_N.py." with
N counting up — ``distinct``: one rule per sentence) of each size in MB, followed by a compaction,
and times ``python -m stream ingest claude-code FILE -o /dev/null`` on it (a fresh process per
run: wall time and peak RSS, startup included), median of ``--runs``. Prints one line per size and
the ratio of the largest to the smallest size (linear = the size ratio). Goal: 5 MB of the ``same``
form in under 10 s.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import loadavg, report_end, write_out, add_part_args, part_parser, report_head

REPO = Path(__file__).resolve().parent.parent
GOAL_S = 10.0  # issue 28.6: 5 MB of the ``same`` form in under 10 s


def message(n_bytes: int, form: str) -> str:
    if form == "same":
        unit = "don't touch the config. never push to main. "
        return unit * max(1, n_bytes // len(unit))
    parts, size, i = [], 0, 0
    while size < n_bytes:
        s = f"don't touch module_{i}.py. "
        parts.append(s)
        size += len(s)
        i += 1
    return "".join(parts)


def transcript(path: Path, n_bytes: int, form: str) -> Path:
    sid = "be000000-0000-4000-8000-0000000000be"
    base = {"sessionId": sid, "timestamp": "2026-05-04T10:00:00.000Z", "cwd": "/w", "version": "2.1.50"}
    records = [
        {**base, "type": "user", "uuid": "u1", "parentUuid": None,
         "message": {"role": "user", "content": message(n_bytes, form)}},
        {**base, "type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "compactMetadata": {"trigger": "auto", "preTokens": 1}},
        {**base, "type": "user", "uuid": "s1", "parentUuid": "b1", "isCompactSummary": True,
         "message": {"role": "user", "content": "Summary: the user set some rules; don't touch the config."}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def run_once(path: Path) -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one ingest process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "stream", "ingest", "claude-code", str(path), "-o", "/dev/null"],
                          cwd=REPO, capture_output=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"bench_ingest: ingest failed: {proc.stderr.decode().strip().splitlines()[-1:]}")
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, max(rss, before) / 1024


def main(argv: list[str] | None = None) -> int:
    ap = part_parser("bench/bench_ingest.py", __doc__)
    ap.add_argument("--sizes", default=None, help="message sizes in MB, comma-separated (default 1,5; --quick 0.2,1)")
    ap.add_argument("--form", default="same", choices=("same", "distinct"), help="repeated rules or distinct ones")
    ap.add_argument("--runs", type=int, default=1, help="runs per size (median)")
    add_part_args(ap, title="13. Ingest: one long user message, linear in its size", quick="smaller sizes",
                  broker=False)
    args = ap.parse_args(argv)
    sizes = [float(x) for x in (args.sizes or ("0.2,1" if args.quick else "1,5")).split(",")]
    t_start, load_start = time.monotonic(), loadavg()
    lines = [*report_head(args.title, "bench/bench_ingest.py", sys.argv[1:] if argv is None else argv, ".", dash=True),
             f"A Claude Code transcript whose one user message is a run of short prohibitions ({args.form} form), "
             "then a compaction; one `python -m stream ingest claude-code FILE -o /dev/null` process per run "
             "(wall time and peak RSS, interpreter start included), median of the runs.", "",
             "| message (MB) | wall (s) | s per MB | peak RSS (MiB) |", "|---:|---:|---:|---:|"]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for mb in sizes:
            path = transcript(Path(tmp) / f"m{mb:g}.jsonl", int(mb * 1_000_000), args.form)
            runs = [run_once(path) for _ in range(args.runs)]
            wall = statistics.median(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            results.append((mb, wall))
            print(f"{args.form:>8} {mb:>5g} MB: {wall:6.2f} s wall (startup included), peak RSS "
                  f"{rss:.0f} MiB, {wall / mb:.2f} s/MB", file=sys.stderr)
            lines.append(f"| {mb:g} | {wall:.2f} | {wall / mb:.2f} | {rss:.0f} |")
    lines.append("")
    summary = [f"{mb:g} MB message: {wall:.2f} s" for mb, wall in results]
    if len(results) > 1:
        (a, ta), (b, tb) = results[0], results[-1]
        ratio = f"time ratio {b:g} MB / {a:g} MB: {tb / ta:.2f} (size ratio {b / a:g}; linear <= size ratio)"
        lines += [ratio, ""]
        summary.append(ratio.split(" (")[0])
    five = [w for mb, w in results if mb == 5]
    if five:
        lines += [f"Goal (issue 28.6): 5 MB in under {GOAL_S:g} s — {five[0]:.2f} s: "
                  f"{'met' if five[0] < GOAL_S else 'NOT met'}.", ""]
    write_out(args.out, report_end(lines, [], t_start, load_start), "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
