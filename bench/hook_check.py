"""Play real Claude Code transcripts forward through the hook and check it against the batch path.

    python -m bench.hook_check          # every DEV transcript (../shared/real-logs/entireio-cli-claude-code)
    python -m bench.hook_check DIR_OR_FILE... --stop-every 5 --out hook-check.md
    make hook-check ARGS="--stop-every 5"

For each transcript: its records are appended in order to a fresh file and
``checkpoint-guard hook claude-code`` runs as a subprocess at every point where Claude
Code would run it (``stream.devtools.claude_code_player``: PreCompact before a boundary,
SessionStart ``compact`` after the summary, Stop at each turn end, SessionEnd), rules
judge, spool only. Checked, per transcript:

More (the module notes): bench/METHODS.md, section ``bench/hook_check.py``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import command_line, loadavg, machine_line, report_end, say, write_out
from stream.devtools.claude_code_player import Player, hook_env
from stream.offline.replay import replay_lines
from stream.settings import Settings

REPO = Path(__file__).resolve().parent.parent
DEFAULT = REPO.parent / "shared" / "real-logs" / "entireio-cli-claude-code"
#: The hook's default budget (``CG_HOOK_BUDGET``), seconds.
DEFAULT_BUDGET = Settings.model_fields["hook_budget"].default


def engine_drops(events: list[bytes]) -> dict[str, set[str]]:
    """Summary node -> the engine's dropped set when its checkpoint arrived (empty: no alert)."""
    first = {}
    for line in events:
        e = json.loads(line)
        if e["type"] == "checkpoint" and e.get("level") in ("leaf", "section"):
            first.setdefault(e["node_id"], e["event_id"])
    out: dict[str, set[str]] = {n: set() for n in first}
    for a in replay_lines(events).alerts:
        if a["rule"] == "negative_constraint_dropped" and first.get(a["node_id"]) == a["trigger"]["event_id"]:
            out[a["node_id"]] = set(a["missing_constraints"])
    return out


def check(source: Path, work: Path, stop_every: int, budget: float) -> dict:
    env = hook_env(work / "hook", CG_HOOK_KAFKA="false", CG_HOOK_BUDGET=f"{budget:g}")
    player = Player(source, work / "projects" / source.name, env, stop_every=stop_every)
    t0 = time.monotonic()
    calls = player.play()
    played = time.monotonic() - t0
    batch = subprocess.run([sys.executable, "-m", "stream", "ingest", "claude-code", str(source)], env=env,
                           capture_output=True, timeout=600).stdout
    spool = b"".join(p.read_bytes() for p in sorted((work / "hook" / "spool").glob("*.jsonl")))
    problems: list[str] = []
    if spool != batch:
        problems.append(f"live != batch ({len(spool.splitlines())} vs {len(batch.splitlines())} events)")
    for c in calls:
        if c.returncode != 0:
            problems.append(f"{c.event} exited {c.returncode}")
        if c.stdout and not (c.event == "SessionStart" and set(json.loads(c.stdout)) == {"hookSpecificOutput"}):
            problems.append(f"{c.event} printed something other than the hook JSON")
    lines = batch.splitlines()
    drops = engine_drops(lines)
    texts = {}
    for line in lines:
        for c in json.loads(line).get("raw_negative_constraints") or []:
            texts.setdefault(c["id"], " ".join(c["text"].split()))
    journal_path = work / "hook" / "sessions" / (player.session_id or "") / "compactions.jsonl"
    rows = [json.loads(x) for x in journal_path.read_text().splitlines()] if journal_path.exists() else []
    starts = [c for c in calls if c.event == "SessionStart"]
    handed_at = []
    if [r.get("node_id") for r in rows] != list(drops):
        problems.append(f"compactions answered {[r.get('node_id') for r in rows]} != summaries {list(drops)}")
    for n, (call, row) in enumerate(zip(starts, rows), 1):
        want = drops.get(row.get("node_id"), set())
        if set(row.get("dropped") or []) != want:
            problems.append(f"compaction {n}: handed back {sorted(row.get('dropped') or [])} != engine {sorted(want)}")
        context = call.context or ""
        if bool(context) != bool(want):
            problems.append(f"compaction {n}: {'text' if context else 'no text'} but {len(want)} dropped")
        missing = [cid for cid in row.get("shown") or [] if f"\"{texts.get(cid, '?')[:700]}" not in context]
        if missing:
            problems.append(f"compaction {n}: {len(missing)} rule(s) not verbatim in the text")
        if want:
            handed_at.append(f"{n} ({len(want)})")
    walls = sorted(c.seconds for c in calls)
    log = work / "hook" / "hook.log"
    overruns = log.read_text().count("ran out of its") if log.exists() else 0
    return {
        "overruns": overruns,
        "slow": sum(1 for c in calls if c.seconds > DEFAULT_BUDGET),
        "name": source.name,
        "records": len(player.lines()),
        "summaries": len(drops),
        "with_drop": sum(1 for d in drops.values() if d),
        "handed_at": handed_at,
        "calls": len(calls),
        "p50": walls[len(walls) // 2],
        "p99": walls[min(len(walls) - 1, int(0.99 * len(walls)))],
        "problems": problems,
        "played": played,
        "events": len(lines),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=[str(DEFAULT)], help=f"transcripts or directories [{DEFAULT}]")
    ap.add_argument("--stop-every", type=int, default=1, help="run Stop at every Nth turn end [1: every one]")
    ap.add_argument("--budget", type=float, default=60.0, help="the hook's CG_HOOK_BUDGET, seconds [60]")
    ap.add_argument("--out", default=None, help="also write the Markdown report here")
    args = ap.parse_args(argv)
    absent = [p for p in args.paths if not Path(p).exists()]
    if absent and args.paths == [str(DEFAULT)]:
        print(f"hook_check: error: no DEV transcripts at {DEFAULT}: it needs the labelled DEV logs "
              "(../shared/real-logs beside the repository), or transcripts as arguments: "
              'make hook-check ARGS="DIR_OR_FILE..."', file=sys.stderr)
        return 2
    if absent:
        print(f"hook_check: error: no such transcript or directory: {', '.join(absent)}", file=sys.stderr)
        return 2
    files: list[Path] = []
    for p in map(Path, args.paths):
        files.extend(sorted(p.glob("*.jsonl")) if p.is_dir() else [p])
    if not files:
        print(f"hook_check: no transcript in {', '.join(args.paths)}", file=sys.stderr)
        return 2
    t_start, load_start = time.monotonic(), loadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="hook-check-") as tmp:
        for i, f in enumerate(files):
            say(f"{i + 1}/{len(files)} {f.name}")
            results.append(check(f, Path(tmp) / str(i), args.stop_every, args.budget))
    bad = [r for r in results if r["problems"]]
    compactions = sum(r["summaries"] for r in results)
    drops = sum(r["with_drop"] for r in results)
    lines = [
        "## The hook on real transcripts, played forward",
        "",
        f"Command: `{command_line('bench/hook_check.py', sys.argv[1:] if argv is None else argv)}` — {machine_line()}.",
        "",
        f"**{len(results)} transcripts, {compactions} compactions, {drops} with a dropped prohibition: "
        f"{'every check passed' if not bad else f'{len(bad)} transcript(s) FAILED'}** (live = batch byte for "
        "byte; the text handed back after each compaction = the engine's dropped set, and nothing where it "
        "is empty; exit 0 and clean stdout on every call). The hook's budget here: "
        f"{args.budget:g} s. *Over {DEFAULT_BUDGET:g} s*: calls whose wall time passed the default budget "
        "(CG_HOOK_BUDGET; a loaded machine makes them); *out of budget*: calls that ran out of this run's budget "
        "and left the reading to a detached catch-up.",
        "",
        "| transcript | records | events | compactions | handed back at (dropped) | hook calls | wall p50 / p99 (ms) | "
        f"over {DEFAULT_BUDGET:g} s | out of budget | result |",
        "|---|---:|---:|---:|---|---:|---|---:|---:|---|",
    ]
    for r in results:
        lines.append(
            f"| `{r['name'][:8]}` | {r['records']} | {r['events']} | {r['summaries']} | "
            f"{', '.join(r['handed_at']) or '–'} | {r['calls']} | {r['p50'] * 1000:,.0f} / {r['p99'] * 1000:,.0f} | "
            f"{r['slow']} | {r['overruns']} | {'ok' if not r['problems'] else '; '.join(r['problems'])} |"
        )
    lines.append("")
    summary = f"{len(results)} transcripts, {compactions} compactions, {drops} with a drop: " + \
        ("all checks passed" if not bad else f"{len(bad)} failed")
    write_out(args.out, report_end(lines, [], t_start, load_start), summary)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
