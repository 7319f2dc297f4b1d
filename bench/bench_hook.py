"""Part 11: the Claude Code hook's time per call, per hook event, on ~200k-token sessions.

    python -m bench.bench_hook                 # 50k and 200k tokens + the 3 biggest DEV transcripts (~9 min, 2 cores)
    python -m bench.bench_hook --quick         # 20k and 50k tokens (~1 min)
    python -m bench.bench_hook --sizes 200000 --dev 0 --out part11.md
    python -m bench.bench_hook --sizes 0 --dev 3          # the real DEV transcripts only

More (the module notes): bench/METHODS.md, section ``bench/bench_hook.py``.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common import loadavg, report_end, say, write_out, add_part_args, part_parser, report_head
from stream.devtools.claude_code_player import Player, hook_env, synthetic_session, write_jsonl

DEV = Path(__file__).resolve().parent.parent.parent / "shared" / "real-logs" / "entireio-cli-claude-code"


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
        turns = max(turns + 1, int(turns * max(1.05, size / max(1, tokens(recs)))))


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


@dataclass
class Timed(Player):
    """A player that also takes the CPU time of each hook subprocess. With ``uncached_env``, each
    SessionStart also runs from the same state in that environment (its call goes to ``uncached``;
    the state the normal call left is kept); the two run in turn first, so neither gets the warmer caches."""

    uncached_env: dict | None = None
    hook_dir: Path | None = None
    uncached: list = field(default_factory=list)

    def hook(self, event, line, **fields):  # noqa: ANN001
        if event != "SessionStart" or self.uncached_env is None or self.hook_dir is None:
            return self._timed(event, line, self.env, **fields)
        before, after = (self.hook_dir.with_name(self.hook_dir.name + s) for s in (".before", ".after"))
        shutil.copytree(self.hook_dir, before)
        order = [False, True] if len(self.uncached) % 2 == 0 else [True, False]  # uncached second, then first
        calls = {}
        for n, uncached in enumerate(order):
            if n:  # the second run starts from the state the first started from
                if uncached:
                    shutil.move(self.hook_dir, after)  # the normal call's state: the one to go on from
                else:
                    shutil.rmtree(self.hook_dir)
                shutil.copytree(before, self.hook_dir)
            calls[uncached] = self._timed(event, line, self.uncached_env if uncached else self.env, **fields)
        if after.exists():
            shutil.rmtree(self.hook_dir)
            shutil.move(after, self.hook_dir)
        shutil.rmtree(before)
        self.calls.remove(calls[True])
        self.uncached.append(calls[True])
        return calls[False]

    def _timed(self, event, line, env, **fields):  # noqa: ANN001
        self_env, self.env = self.env, env
        try:
            t0 = _child_cpu()
            call = super().hook(event, line, **fields)
            call.cpu = _child_cpu() - t0  # type: ignore[attr-defined]
        finally:
            self.env = self_env
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
        turns = sum(
            1 for r in recs if r.get("type") == "user" and isinstance((r.get("message") or {}).get("content"), str)
        )
    env = installed_env(work, pycache)
    (work / "not-a-dir").parent.mkdir(parents=True, exist_ok=True)
    (work / "not-a-dir").write_bytes(b"")
    player = Timed(src, work / "projects" / src.name, env, stop_every=1, hook_dir=work / "hook",
                   uncached_env={**env, "XDG_CACHE_HOME": str(work / "not-a-dir" / "cache")})
    warm = Timed(src, work / "warm" / src.name, installed_env(work / "warm", pycache))
    warm.transcript.parent.mkdir(parents=True)
    warm.transcript.write_bytes(b"")
    warm.hook("Stop", 0, stop_hook_active=False)  # compiles the bytecode once: not measured
    # as a user does: `hooks install` (it also builds the language-model cache), not measured
    subprocess.run([sys.executable, "-m", "stream", "hooks", "install", "--settings-file", str(work / "settings.json")],
                   env=env, capture_output=True, timeout=600, check=True)
    say(f"{tokens(recs):,} tokens: {turns} turns, {src.stat().st_size / 1e6:.1f} MB; playing forward")
    t0 = time.monotonic()
    calls = list(player.play())  # the two calls timed alone below are not in these
    played = time.monotonic() - t0
    by_event: dict[str, list] = {}
    for c in calls:
        by_event.setdefault(c.event, []).append(c)
    handed = sum(1 for c in calls if c.stdout)
    same_answer = all(a.stdout == b.stdout for a, b in zip(by_event.get("SessionStart", []), player.uncached))
    # the worst cases, alone: no state at all (the whole file is read), and nothing new
    shutil.rmtree(work / "hook")
    cold = player.hook("Stop", len(recs), stop_hook_active=False)
    idle = player.hook("Stop", len(recs), stop_hook_active=False)
    spool = b"".join(p.read_bytes() for p in (work / "hook" / "spool").glob("*.jsonl"))
    batch = subprocess.run([sys.executable, "-m", "stream", "ingest", "claude-code", str(src)], env=env,
                           capture_output=True, timeout=600).stdout
    return {"size": size, "tokens": tokens(recs), "turns": turns, "bytes": src.stat().st_size, "calls": calls,
            "by_event": by_event, "uncached": player.uncached, "same_answer": same_answer, "cold": cold, "idle": idle,
            "played": played, "handed": handed, "live_eq_batch": spool == batch}


def model_load() -> tuple[float, float]:
    """CPU seconds (best of 3, in this process) of py3langid's own model load and of the cached copy's."""
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from stream.adapters.compaction import cues
    from stream.adapters.compaction.langid_model import load_identifier

    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    load_identifier(cues._LATIN)  # built if not yet
    own, cached = [], []
    for _ in range(3):
        t = cpu()
        LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True).set_languages(list(cues._LATIN))
        own.append(cpu() - t)
        t = cpu()
        load_identifier(cues._LATIN)
        cached.append(cpu() - t)
    return min(own), min(cached)


def biggest_dev(n: int) -> list[Path]:
    if n <= 0 or not DEV.is_dir():
        return []
    return sorted(DEV.glob("*.jsonl"), key=lambda p: -p.stat().st_size)[:n]


def row(label: str, what: str, calls: list) -> str:
    wall, cpu = [c.seconds for c in calls], [c.cpu for c in calls]
    return (f"| {label} | {what} | {len(calls)} | {ms(pct(wall, .5))} / {ms(pct(wall, .99))} / {ms(max(wall))} | "
            f"{ms(pct(cpu, .5))} / {ms(pct(cpu, .99))} / {ms(max(cpu))} |")


def main(argv: list[str] | None = None) -> int:
    ap = part_parser("bench/bench_hook.py", __doc__)
    ap.add_argument("--sizes", default=None, help="comma-separated token counts, 0 for none [50000,200000]")
    ap.add_argument("--compact-every", type=int, default=60, help="turns between two compactions [60]")
    ap.add_argument("--dev", type=int, default=None,
                    help=f"also play the N biggest DEV transcripts of {DEV} [3; 0 with --quick or --sizes]")
    ap.add_argument("--transcript", action="append", default=[],
                    help="also play this real transcript (its figures are labelled with its name)")
    add_part_args(ap, title="11. The Claude Code hook: time per call", quick="20k and 50k tokens, no DEV transcript",
                  broker=False)
    args = ap.parse_args(argv)
    sizes = [int(s) for s in (args.sizes or ("20000,50000" if args.quick else "50000,200000")).split(",") if int(s) > 0]
    dev = args.dev if args.dev is not None else (0 if args.quick or args.sizes else 3)
    t_start, load_start = time.monotonic(), loadavg()
    results, errors = [], []
    own, cached = model_load()
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        pycache = Path(tmp) / "pycache"
        jobs = [(size, None) for size in sizes] + [(0, Path(t)) for t in [*args.transcript, *biggest_dev(dev)]]
        for n, (size, transcript) in enumerate(jobs):
            try:
                r = measure(size, args.compact_every if not args.quick else 20, Path(tmp) / str(n), pycache, transcript)
                r["name"] = transcript.name if transcript else None
                results.append(r)
            except Exception as exc:  # noqa: BLE001 - report and go on
                errors.append(f"{transcript or f'{size:,} tokens'}: {type(exc).__name__}: {exc}")
    lines = [
        *report_head(args.title, "bench/bench_hook.py", sys.argv[1:] if argv is None else argv, ".", dash=True),
        "Each call is `checkpoint-guard hook claude-code` as a subprocess (interpreter start included), rules "
        "judge, spool only, after `hooks install` (bytecode and the language-model cache built). Wall = what "
        "Claude Code waits for (Stop is async: it waits for none of those); CPU = user + sys of the call (on a "
        "loaded machine wall grows, CPU much less). *SessionStart, model cache off*: each SessionStart run once "
        "more from the same state with the cache unusable (py3langid's own LZMA load, as before the cache).",
        "",
        f"Language model load, in one process (best of 3, CPU): py3langid's own {ms(own)} ms, the cached copy "
        f"{ms(cached)} ms.",
        "",
        "| session | event | calls | wall p50 / p99 / max (ms) | CPU p50 / p99 / max (ms) |",
        "|---|---|---:|---|---|",
    ]
    summary = []
    for r in results:
        label = f"{r['tokens'] / 1000:,.0f}k tokens ({r['turns']} turns, {r['bytes'] / 1e6:.1f} MB)"
        if r["name"]:
            label = f"DEV `{r['name'][:8]}` (real), {label}"
        for event, calls in [("all", r["calls"])] + sorted(r["by_event"].items()):
            lines.append(row(label, "SessionStart (compact)" if event == "SessionStart" else event, calls))
        if r["uncached"]:
            lines.append(row(label, "SessionStart, model cache off", r["uncached"]))
        lines.append(row(label, "first call, no state (whole file read)", [r["cold"]]))
        lines.append(row(label, "call with nothing new", [r["idle"]]))
        cpu = [c.cpu for c in r["calls"]]
        starts = [c.cpu for c in r["by_event"].get("SessionStart", [])]
        short = f"DEV {r['name'][:8]}" if r["name"] else f"{r['tokens'] / 1000:,.0f}k tokens"
        summary.append(f"{short}: CPU p99 {ms(pct(cpu, .99))} ms per call"
                       + (f", SessionStart max {ms(max(starts))} ms" if starts else ""))
    lines.append("")
    for r in results:
        name = f"DEV `{r['name'][:8]}`" if r["name"] else f"{r['tokens'] / 1000:,.0f}k tokens"
        lines.append(f"- {name}: live = batch {'yes' if r['live_eq_batch'] else '**NO**'}; {r['handed']} compaction(s) "
                     f"answered with dropped prohibitions; SessionStart output with the model cache off "
                     f"{'identical' if r['same_answer'] else '**DIFFERENT**'}; played in {r['played']:.0f} s.")
    lines.append("")
    write_out(args.out, report_end(lines, errors, t_start, load_start), "; ".join(summary))
    return 1 if errors or not all(r["live_eq_batch"] and r["same_answer"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
