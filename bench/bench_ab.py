"""The worker against an earlier commit's worker: same bench, same stream, rounds alternated.

``python -m bench.bench_ab [--baseline REV] [--events 20000,60000] [--rounds 3] [--out FILE]``

Checks out ``--baseline`` (default c332baa, the worker issue 25 measured) as a git
worktree in a temporary directory, then runs ``bench.bench_worker --phases synthetic
--runs 1`` once per worker, size and round, each on its own fresh broker: the baseline's
worker (``--worker-tree``; its hot modules compiled first when it has them) and this
tree's (compiled hot modules if built), in ABBA order
(the first in one round goes second in the next) so a drift of the machine falls on both.
Reports each run's events/s and worker CPU µs/event, the ratio of each round, and their
median per size. Two sizes: a per-event rate that holds at both is not a growth artifact.

More (the module notes): bench/METHODS.md, section ``bench/bench_ab.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, add_part_args, loadavg, part_parser, report_end, report_head, say, write_out

#: Issue 25's worker: the goal "the synthetic stream >= 2x today's events/s" is against it.
DEFAULT_BASELINE = "c332baa"


def worktree(rev: str, where: Path) -> Path:
    """A detached checkout of ``rev`` at ``where``; RuntimeError with git's reason."""
    proc = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "--force", str(where), rev],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["git worktree add failed"])[-1]
        raise RuntimeError(f"cannot check out the baseline {rev!r}: {reason} (a shallow clone? git fetch --unshallow)")
    return where


def build_native(tree: Path) -> str:
    """Compile a baseline's hot modules, when it has them (``stream/native.py``), as ``make
    install`` does, so that compiled code is compared with compiled code. Returns its status
    line: "compiled (...)", "pure Python (...)" or "no compiled modules at that commit"."""
    if not (tree / "stream" / "native.py").exists():
        return "no compiled modules at that commit"
    try:
        subprocess.run([sys.executable, "-m", "stream.devtools.native", "build"], cwd=tree, capture_output=True,
                       text=True, timeout=600)
        proc = subprocess.run([sys.executable, "-c",
                               "import stream.native as n, stream.domain.engine; print(n.status())"],
                              cwd=tree, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as exc:
        return f"status unknown: {' '.join(map(str, exc.cmd[1:3]))} timed out after {exc.timeout:.0f} s"
    return (proc.stdout.strip().splitlines() or [f"status unknown: {proc.stderr.strip()[-200:]}"])[-1]


def drop_worktree(where: Path) -> None:
    subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)], capture_output=True)


def one_run(events: int, tree: Path | None, tmp: Path, timeout: float, loglevel: str) -> dict[str, Any]:
    """One ``bench_worker`` synthetic run (its own broker): {"rate", "cpu_us"} or {"error"}."""
    out = tmp / f"run-{time.monotonic_ns()}.json"
    cmd = [sys.executable, "-m", "bench.bench_worker", "--phases", "synthetic", "--runs", "1", "--events", str(events),
           "--worker-loglevel", loglevel, "--json", str(out)]
    if tree is not None:
        cmd += ["--worker-tree", str(tree)]
    try:
        proc = subprocess.run(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"no result in {timeout:.0f} s"}
    if not out.exists():
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"error": tail[:300]}
    data = json.loads(out.read_text())
    st = data["streams"].get("synthetic")
    if data["errors"] or not st or not st["events_per_s"]:
        return {"error": "; ".join(data["errors"]) or "no synthetic run"}
    return {"rate": st["events_per_s"][0], "cpu_us": st["cpu_us_per_event"][0]}


def main(argv: list[str] | None = None) -> int:
    ap = part_parser("bench/bench_ab.py", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default=DEFAULT_BASELINE,
                    help=f"the commit to compare with (default {DEFAULT_BASELINE}: issue 25's worker)")
    ap.add_argument("--events", default="20000,60000", help="synthetic stream sizes, comma-separated")
    ap.add_argument("--rounds", type=int, default=3, help="rounds per size, each runs both workers (default 3)")
    add_part_args(ap, title="This worker against issue 25's, synthetic stream, same bench",
                  quick="1 round of 5,000 events", worker_timeout="seconds per run (default 900)", broker=False)
    args = ap.parse_args(argv)
    try:
        sizes = [5_000] if args.quick else [int(x) for x in args.events.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--events: whole numbers separated by commas, got {args.events!r}")
    rounds = 1 if args.quick else args.rounds
    if not sizes or min(sizes) < 1:
        ap.error(f"--events: positive sizes, got {args.events!r}")
    if rounds < 1:
        ap.error("--rounds must be >= 1")
    from stream import native

    t_start, load0 = time.monotonic(), loadavg()
    results: dict[int, list[tuple[dict[str, Any], dict[str, Any]]]] = {n: [] for n in sizes}
    errors: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cg-ab-") as tmpd:
        tmp = Path(tmpd)
        try:
            base_tree = worktree(args.baseline, tmp / "baseline")
        except RuntimeError as exc:
            say(str(exc))
            return 2
        try:
            base_native = build_native(base_tree)  # inside: the worktree is dropped whatever happens
            say(f"baseline {args.baseline}: {base_native}")
            for r in range(rounds):
                for n in sizes:
                    pair: dict[str, dict[str, Any]] = {}
                    order = ("baseline", "this") if r % 2 == 0 else ("this", "baseline")
                    for who in order:
                        res = one_run(n, base_tree if who == "baseline" else None, tmp, args.timeout,
                                      args.worker_loglevel)
                        pair[who] = res
                        shown = res.get("error") or f"{res['rate']:,.0f} events/s, {res['cpu_us']:.0f} µs/event"
                        say(f"round {r + 1}, {n:,} events, {who}: {shown}")
                        if "error" in res:
                            errors.append(f"round {r + 1}, {n:,} events, {who}: {res['error']}")
                    results[n].append((pair["baseline"], pair["this"]))
        finally:
            drop_worktree(base_tree)
    argv_shown = sys.argv[1:] if argv is None else argv
    lines = [
        *report_head(args.title, "bench/bench_ab.py", argv_shown),
        f"- Baseline: the worker of {args.baseline} (`--worker-tree`, a git worktree), {base_native}; this tree: "
        f"its worker, {native.status()}.",
        "- Each run: `python -m bench.bench_worker --phases synthetic --runs 1 --events N` on a fresh broker; the "
        "two workers alternate, first and second in turn (ABBA).", "",
        "| events | round | baseline events/s | this events/s | ratio | baseline CPU µs/event | this CPU µs/event "
        "| CPU ratio |", "|---|---|---|---|---|---|---|---|",
    ]
    summary = []
    for n in sizes:
        ratios, cpu_ratios = [], []
        for i, (b, t) in enumerate(results[n]):
            if "error" in b or "error" in t:
                shown = [f"{x['rate']:,.0f}" if "rate" in x else "failed" for x in (b, t)]
                lines.append(f"| {n:,} | {i + 1} | {shown[0]} | {shown[1]} | — | | | |")
                continue
            ratio, cpu_ratio = t["rate"] / b["rate"], b["cpu_us"] / t["cpu_us"]
            ratios.append(ratio)
            cpu_ratios.append(cpu_ratio)
            lines.append(f"| {n:,} | {i + 1} | {b['rate']:,.0f} | {t['rate']:,.0f} | {ratio:.2f}x | {b['cpu_us']:.0f} "
                         f"| {t['cpu_us']:.0f} | {cpu_ratio:.2f}x |")
        if ratios:
            med, cpu_med = statistics.median(ratios), statistics.median(cpu_ratios)
            lines.append(f"| {n:,} | **median** | | | **{med:.2f}x** | | | **{cpu_med:.2f}x** |")
            summary.append(f"{n:,} events: {med:.2f}x events/s ({cpu_med:.2f}x less CPU per event), "
                           f"median of {len(ratios)}")
    lines += ["", "*ratio*: this worker's events/s ÷ the baseline's in the same round; *CPU ratio*: the baseline's "
              "CPU µs per event ÷ this one's. Events/s and CPU as in part 2 (`bench/bench_worker.py`).", ""]
    text = report_end(lines, errors, t_start, load0)
    headline = f"this worker / {args.baseline}'s on the synthetic stream: {'; '.join(summary)}"
    write_out(args.out, text, headline if summary else "no result")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
