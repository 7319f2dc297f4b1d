"""Part 11: the Claude Code hook's time per call, on a transcript of ~200k tokens.

    python bench/bench_hook.py                 # 50k- and 200k-token sessions (~5 min on a quiet 2-core machine)
    python bench/bench_hook.py --quick         # 20k and 50k tokens (~1 min)
    python bench/bench_hook.py --sizes 200000 --out part11.md

A synthetic session (``stream.devtools.claude_code_player.synthetic_session``: prompts,
Read tool calls with their results, prohibitions, answers, queued messages, a
compaction every ``--compact-every`` turns) of about N tokens (message text / 4) is
played forward through ``checkpoint-guard hook claude-code`` run as a subprocess, the
way Claude Code runs it: ``Stop`` after every turn, ``PreCompact`` before each boundary,
``SessionStart`` (compact) after each summary, ``SessionEnd`` at the end; the rules
judge; the spool only (``CG_HOOK_KAFKA=false``: PreCompact and SessionStart never touch
the network, and Stop is asynchronous in Claude Code). Per call: wall time (the
subprocess, Python's start included) and CPU time (user + sys of the child). Reported
per event: p50 / p99 / max. Two worst cases are timed alone on the finished
transcript: the first call with no state (a hook installed mid-session: the whole file
is read) and a call with nothing new. At two sizes, so growth shows.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import command_line, loadavg, machine_line, report_end, say, software_line, write_out  # noqa: E402
from stream.devtools.claude_code_player import Player, hook_env, synthetic_session, write_jsonl  # noqa: E402


def tokens(records: list[dict]) -> int:
    """Message text / 4 (a common estimate for English and code)."""
    chars = 0
    for r in records:
        msg = r.get("message") if isinstance(r.get("message"), dict) else {}
        content = msg.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for b in content:
                if isinstance(b, dict):
                    for k in ("text", "content"):
                        if isinstance(b.get(k), str):
                            chars += len(b[k])
                    if isinstance(b.get("input"), dict):
                        chars += len(json.dumps(b["input"]))
    return chars // 4


def session_of(size: int, compact_every: int) -> tuple[list[dict], int]:
    """A synthetic session of about ``size`` tokens: turns grown until the estimate reaches it."""
    turns = max(4, size // 900)
    while True:
        recs = synthetic_session("be4c0000-0000-4000-8000-00000000be4c", turns=turns, compact_every=compact_every,
                                 pad_chars=3000)
        if tokens(recs) >= size:
            return recs, turns
        turns = int(turns * max(1.05, size / max(1, tokens(recs))))


class Timed(Player):
    """A player that also takes the CPU time of each hook subprocess."""

    def hook(self, event, line, **fields):  # noqa: ANN001
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        call = super().hook(event, line, **fields)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        call.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)  # type: ignore[attr-defined]
        assert call.returncode == 0 and (not call.stdout or event == "SessionStart"), (event, call.stderr)
        return call


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def ms(x: float) -> str:
    return f"{x * 1000:,.0f}"


def installed_env(work: Path, pycache: Path) -> dict[str, str]:
    """The hook's environment as after ``pip install``: bytecode cached (here in ``pycache``,
    never in the checkout), whatever PYTHONDONTWRITEBYTECODE the shell has."""
    env = hook_env(work / "hook", CG_HOOK_KAFKA="false", PYTHONPYCACHEPREFIX=str(pycache))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(size: int, compact_every: int, work: Path, pycache: Path, transcript: Path | None = None) -> dict:
    if transcript is None:
        recs, turns = session_of(size, compact_every)
        src = write_jsonl(recs, work / "src" / "session.jsonl")
    else:
        src = transcript
        recs = [json.loads(line) for line in src.read_bytes().splitlines() if line.strip().startswith(b"{")]
        turns = sum(1 for r in recs if r.get("type") == "user" and isinstance((r.get("message") or {}).get("content"), str))
    env = installed_env(work, pycache)
    player = Timed(src, work / "projects" / src.name, env, stop_every=1)
    warm = Timed(src, work / "warm" / src.name, installed_env(work / "warm", pycache))
    warm.transcript.parent.mkdir(parents=True)
    warm.transcript.write_bytes(b"")
    warm.hook("Stop", 0, stop_hook_active=False)  # compiles the bytecode once: not measured
    say(f"{tokens(recs):,} tokens: {turns} turns, {src.stat().st_size / 1e6:.1f} MB; playing forward")
    t0 = time.monotonic()
    calls = player.play()
    played = time.monotonic() - t0
    by_event: dict[str, list] = {}
    for c in calls:
        by_event.setdefault(c.event, []).append(c)
    handed = sum(1 for c in calls if c.stdout)
    # the worst cases, alone: no state at all (the whole file is read), and nothing new
    shutil.rmtree(work / "hook")
    cold = player.hook("Stop", len(recs), stop_hook_active=False)
    idle = player.hook("Stop", len(recs), stop_hook_active=False)
    spool = b"".join(p.read_bytes() for p in (work / "hook" / "spool").glob("*.jsonl"))
    batch = subprocess.run([sys.executable, "-m", "stream", "ingest", "claude-code", str(src)], env=env,
                           capture_output=True, timeout=600).stdout
    return {"size": size, "tokens": tokens(recs), "turns": turns, "bytes": src.stat().st_size, "calls": calls,
            "by_event": by_event, "cold": cold, "idle": idle, "played": played, "handed": handed,
            "live_eq_batch": spool == batch}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="20k and 50k tokens")
    ap.add_argument("--sizes", default=None, help="comma-separated token counts [50000,200000]")
    ap.add_argument("--compact-every", type=int, default=60, help="turns between two compactions [60]")
    ap.add_argument("--transcript", action="append", default=[],
                    help="also play this real transcript (its figures are labelled with its name)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--title", default="11. The Claude Code hook: time per call")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("20000,50000" if args.quick else "50000,200000")).split(",")]
    t_start, load_start = time.monotonic(), loadavg()
    results, errors = [], []
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        pycache = Path(tmp) / "pycache"
        jobs = [(size, None) for size in sizes] + [(0, Path(t)) for t in args.transcript]
        for n, (size, transcript) in enumerate(jobs):
            try:
                r = measure(size, args.compact_every if not args.quick else 20, Path(tmp) / str(n), pycache, transcript)
                r["name"] = transcript.name if transcript else None
                results.append(r)
            except Exception as exc:  # noqa: BLE001 - report and go on
                errors.append(f"{transcript or f'{size:,} tokens'}: {type(exc).__name__}: {exc}")
    lines = [f"## {args.title}", "",
             f"Command: `{command_line('bench/bench_hook.py', sys.argv[1:] if argv is None else argv)}` — "
             f"{machine_line()}; {software_line()}.", "",
             "Each call is `checkpoint-guard hook claude-code` as a subprocess (interpreter start included), rules "
             "judge, spool only. Wall = what Claude Code waits for (Stop is async: it waits for none of those); CPU = "
             "user + sys of the call (on a loaded machine wall grows, CPU much less). Bytecode cached as after "
             "`pip install`.", "",
             "| session | event | calls | wall p50 / p99 / max (ms) | CPU p50 / p99 (ms) |", "|---|---|---:|---|---|"]
    summary = []
    for r in results:
        label = f"{r['tokens'] / 1000:,.0f}k tokens ({r['turns']} turns, {r['bytes'] / 1e6:.1f} MB)"
        if r["name"]:
            label = f"`{r['name'][:13]}…` (real), {label}"
        rows = [("all", r["calls"])] + sorted(r["by_event"].items())
        for event, calls in rows:
            wall = [c.seconds for c in calls]
            cpu = [c.cpu for c in calls]
            lines.append(f"| {label} | {event} | {len(calls)} | {ms(pct(wall, .5))} / {ms(pct(wall, .99))} / "
                         f"{ms(max(wall))} | {ms(pct(cpu, .5))} / {ms(pct(cpu, .99))} |")
        for name in ("cold", "idle"):
            c = r[name]
            what = "first call, no state (whole file read)" if name == "cold" else "call with nothing new"
            lines.append(f"| {label} | {what} | 1 | {ms(c.seconds)} | {ms(c.cpu)} |")
        allw = [c.seconds for c in r["calls"]]
        summary.append(f"{r['tokens'] / 1000:,.0f}k tokens: p50 {ms(pct(allw, .5))} ms, p99 {ms(pct(allw, .99))} ms "
                       f"per call")
    lines.append("")
    for r in results:
        lines.append(f"- {r['tokens'] / 1000:,.0f}k tokens: live = batch {'yes' if r['live_eq_batch'] else '**NO**'}; "
                     f"{r['handed']} compaction(s) answered with dropped prohibitions; played in {r['played']:.0f} s.")
    lines.append("")
    write_out(args.out, report_end(lines, errors, t_start, load_start), "; ".join(summary))
    return 1 if errors or not all(r["live_eq_batch"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
