"""``ingest ... --judge model`` end to end, with each backend's stand-in (no network).

Each test runs the real CLI (``python -m stream ingest``) as a subprocess against the
local stand-in HTTP server or the stand-in ``claude`` (tests/model_judge_standins.py)
and checks what a user meets: the events (which rule is raw where, which is carried,
``x_judge`` / ``x_model`` / ``x_reason``), the alerts ``replay`` finds in them, a second
run answered from the cache (no request, byte-identical events), tokens and cost in the
summary line, one line and exit code 1 when the model is down, and ``--judge-fallback
rules`` announcing itself and giving exactly the rules judge's events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stream.adapters.compaction.prohibitions import make_prohibition
from stream.offline.replay import Replayer
from tests.model_judge_standins import ModelServer, claude_calls, write_claude

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "compaction_logs"
DROPPED = FIXTURES / "claude-code" / "cc-dropped-prohibition.jsonl"
PARAPHRASED = FIXTURES / "openhands" / "paraphrased-prohibition"
API = "keep the public API unchanged"
MIGRATIONS = "Ne touche pas au dossier migrations."
NCD = "negative_constraint_dropped"


def two_compactions(path: Path) -> Path:
    """A transcript: two rules (one in French), a summary that keeps both, a later one that drops both."""
    sid = "cc-model-judge"
    n = iter(range(100))

    def rec(kind: str, uuid: str, **body) -> dict:
        return {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/repo", "sessionId": sid,
                "version": "2.1.37", "timestamp": f"2026-04-01T09:00:{next(n):02d}.000Z", "type": kind, "uuid": uuid,
                **body}

    def user(uuid: str, text: str, **extra) -> dict:
        return rec("user", uuid, message={"role": "user", "content": text}, **extra)

    records = [
        user("u-1", f"Refactor the billing module. Please {API} while you do it."),
        user("u-2", MIGRATIONS),
        rec("assistant", "a-1", message={"id": "m-1", "type": "message", "role": "assistant", "model": "x", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/repo/billing.py"}}]}),
        rec("user", "r-1", message={"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "def charge(): ..."}]}),
        rec("system", "b-1", subtype="compact_boundary", content="Conversation compacted", logicalParentUuid="r-1",
            compactMetadata={"trigger": "auto", "preTokens": 150000}),
        user("s-1", "Summary: refactoring billing.py; public API unchanged; ne pas toucher aux migrations.",
             isCompactSummary=True, isVisibleInTranscriptOnly=True),
        user("u-3", "Now add tests for charge()."),
        rec("system", "b-2", subtype="compact_boundary", content="Conversation compacted", logicalParentUuid="u-3",
            compactMetadata={"trigger": "auto", "preTokens": 150000}),
        user("s-2", "Summary: billing.py refactored, tests for charge() being added.",
             isCompactSummary=True, isVisibleInTranscriptOnly=True),
        user("u-4", "Go on."),
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def env_of(tmp_path: Path, **settings: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("CG_") and k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update({"CG_JUDGE_CACHE_DIR": str(tmp_path / "judge-cache"), "CG_JUDGE_BACKOFF": "0", "CG_JUDGE_TIMEOUT": "10",
                **settings})
    return env


def run(env: dict[str, str], *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stream", *args], cwd=REPO, env=env, capture_output=True,
                          input=stdin, timeout=120)


def checkpoints(stdout: bytes) -> dict[str, dict]:
    events = [json.loads(line) for line in stdout.splitlines()]
    return {e["node_id"]: e for e in events if e["type"] == "checkpoint"}


def alerts(events: bytes) -> list[tuple]:
    """The alerts ``replay`` finds in the events (its library, in this process)."""
    rp = Replayer()
    found = [r for n, line in enumerate(events.splitlines(), 1) for r in rp.feed(line, n) or [] if r["type"] == "alert"]
    assert not rp.result.dead_letters, rp.result.dead_letters
    return [(a["rule"], a["status"], a["node_id"], a["missing_constraints"]) for a in found]


@pytest.fixture(scope="module")
def by_rules(tmp_path_factory) -> tuple[Path, bytes]:
    """The two-compaction transcript and the events of the default rules judge on it."""
    tmp = tmp_path_factory.mktemp("rules")
    log = two_compactions(tmp / "session.jsonl")
    out = run(env_of(tmp), "ingest", "claude-code", str(log))
    assert out.returncode == 0, out.stderr.decode()
    return log, out.stdout


@pytest.fixture
def server():
    with ModelServer(api_key="test-key") as s:
        yield s


def backend_env(kind: str, tmp_path: Path, server: ModelServer) -> dict[str, str]:
    if kind == "anthropic":
        return env_of(tmp_path, CG_JUDGE_BACKEND="anthropic", CG_JUDGE_URL=server.url, CG_JUDGE_API_KEY="test-key")
    if kind == "openai":
        return env_of(tmp_path, CG_JUDGE_BACKEND="openai", CG_JUDGE_URL=f"{server.url}/v1", CG_JUDGE_API_KEY="test-key",
                      CG_JUDGE_MODEL="qwen2.5:14b")
    claude = write_claude(tmp_path / "bin")
    return env_of(tmp_path, CG_JUDGE_BACKEND="claude-cli", CG_JUDGE_CLAUDE_BIN=str(claude), CG_JUDGE_MODEL="sonnet")


def calls(kind: str, tmp_path: Path, server: ModelServer) -> int:
    return len(claude_calls(tmp_path / "bin")) if kind == "claude-cli" else len(server.requests)


MODEL_OF = {
    "anthropic": "anthropic:claude-sonnet-4-5",
    "openai": "openai:qwen2.5:14b",
    "claude-cli": "claude-cli:sonnet",
}


@pytest.mark.parametrize("kind", ["anthropic", "openai", "claude-cli"])
def test_each_backend_judges_every_compaction_once_and_a_rerun_is_served_from_the_cache(kind, tmp_path, server):
    env = backend_env(kind, tmp_path, server)
    log = two_compactions(tmp_path / "session.jsonl")
    first = run(env, "ingest", "claude-code", str(log), "--judge", "model")
    assert first.returncode == 0, first.stderr.decode()
    assert calls(kind, tmp_path, server) == 2  # one request per compaction
    nodes = checkpoints(first.stdout)
    api, mig = make_prohibition(API).id, make_prohibition(MIGRATIONS).id
    s1, s2 = nodes["s-1"], nodes["s-2"]
    for node in (s1, s2):
        assert node["x_judge"] == "model" and node["x_model"] == MODEL_OF[kind]
    assert [c["id"] for c in s1["raw_negative_constraints"]] == [api, mig]
    assert {c["id"] for c in s1["negative_constraints"]} == {api, mig}  # the first summary keeps both
    raw = {c["id"]: c for c in s1["raw_negative_constraints"]}
    assert raw[api]["text"] == API and raw[api]["form"] == "preserve" and raw[api]["x_cue"] == "model"
    assert raw[mig]["x_reason"] == "an explicit rule for the rest of the work"
    assert s2["level"] == "section" and s2["children"] == ["s-1"] and s2["negative_constraints"] == []
    assert {x["id"] for x in s2["x_not_carried"]} == {api, mig}
    assert all(x["reason"] == "the summary omits it." for x in s2["x_not_carried"])
    assert alerts(first.stdout) == [(NCD, "open", "s-2", sorted([api, mig])),
                                         (NCD, "open", "root:cc:cc-model-judge", sorted([api, mig]))]
    summary = first.stderr.decode().strip().splitlines()[-1]
    assert f"judge model {MODEL_OF[kind]}: 2 compactions, 2 requests, 0 from cache, " in summary
    tokens_in, tokens_out = summary.split("from cache, ")[1].split(" output tokens")[0].split(" input + ")
    assert int(tokens_in) > 0 and int(tokens_out) > 0
    assert ("$0.0250;" if kind == "claude-cli" else "cost unknown (set CG_JUDGE_PRICE_INPUT/OUTPUT);") in summary

    again = run(env, "ingest", "claude-code", str(log), "--judge", "model")
    assert again.returncode == 0, again.stderr.decode()
    assert calls(kind, tmp_path, server) == 2  # no new request
    assert again.stdout == first.stdout  # byte-identical events
    assert "2 compactions, 0 requests, 2 from cache, 0 input + 0 output tokens" in again.stderr.decode()


def test_openhands_conversations_take_the_model_judge_too(tmp_path, server):
    env = backend_env("anthropic", tmp_path, server)
    out = run(env, "ingest", "openhands", str(PARAPHRASED), "--judge", "model", "--out", str(tmp_path / "ev.jsonl"))
    assert out.returncode == 0, out.stderr.decode()
    assert len(server.requests) == 1
    events = (tmp_path / "ev.jsonl").read_bytes()
    summary = next(n for k, n in checkpoints(events).items() if k.endswith("-summary"))
    rule = make_prohibition("Don't edit the generated files in src/gen/ by hand.").id
    assert summary["x_judge"] == "model" and [c["id"] for c in summary["negative_constraints"]] == [rule]
    assert summary["negative_constraints"][0]["x_quote"] == "forbade editing generated files"
    assert alerts(events) == []


def test_prices_make_the_http_cost_known(tmp_path, server):
    env = {**backend_env("anthropic", tmp_path, server), "CG_JUDGE_PRICE_INPUT": "3", "CG_JUDGE_PRICE_OUTPUT": "15"}
    out = run(env, "ingest", "claude-code", str(DROPPED), "--judge", "model")
    summary = out.stderr.decode().strip().splitlines()[-1]
    tokens_in, tokens_out = (
        int(x) for x in summary.split("from cache, ")[1].split(" output tokens")[0].split(" input + ")
    )
    assert f"${(tokens_in * 3 + tokens_out * 15) / 1e6:.4f}; 0 input(s) failed" in summary


@pytest.mark.parametrize("kind", ["anthropic", "claude-cli"])
def test_a_model_that_is_down_is_one_line_and_exit_code_1(kind, tmp_path):
    with ModelServer() as gone:
        url = gone.url
    env = (env_of(tmp_path, CG_JUDGE_BACKEND="anthropic", CG_JUDGE_URL=url, CG_JUDGE_API_KEY="k", CG_JUDGE_RETRIES="1")
           if kind == "anthropic" else
           env_of(tmp_path, CG_JUDGE_BACKEND="claude-cli", CG_JUDGE_CLAUDE_BIN=str(tmp_path / "no-claude-here")))
    out = run(env, "ingest", "claude-code", str(DROPPED), "--judge", "model")
    assert out.returncode == 1 and out.stdout == b""
    lines = out.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("checkpoint-guard: error: --judge model: ") and "--judge-fallback rules" in lines[0]
    assert ("cannot connect" in lines[0]) if kind == "anthropic" else ("CG_JUDGE_CLAUDE_BIN" in lines[0])


def test_settings_that_cannot_work_are_one_line_and_exit_code_2(tmp_path):
    out = run(env_of(tmp_path, CG_JUDGE_BACKEND="anthropic"), "ingest", "claude-code", str(DROPPED), "--judge", "model")
    assert out.returncode == 2 and out.stdout == b""
    assert out.stderr.decode().splitlines() == [
        "checkpoint-guard: error: --judge model: the anthropic backend needs an API key: "
        "set ANTHROPIC_API_KEY or CG_JUDGE_API_KEY"]


@pytest.mark.parametrize("why", ["down", "refused-key", "no-key"])
def test_the_fallback_is_announced_and_gives_exactly_the_rules_judges_events(why, tmp_path, server, by_rules):
    log, rules = by_rules
    with ModelServer() as gone:
        url = gone.url
    env = {"down": env_of(tmp_path, CG_JUDGE_BACKEND="anthropic", CG_JUDGE_URL=url, CG_JUDGE_API_KEY="k",
                          CG_JUDGE_RETRIES="0"),
           "refused-key": env_of(tmp_path, CG_JUDGE_BACKEND="anthropic", CG_JUDGE_URL=server.url,
                                 CG_JUDGE_API_KEY="wrong"),
           "no-key": env_of(tmp_path, CG_JUDGE_BACKEND="anthropic")}[why]
    out = run(env, "ingest", "claude-code", str(log), "--judge", "model", "--judge-fallback", "rules")
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout == rules  # the whole run by the rules judge, nothing of the model's
    assert all(n["x_judge"] == "rules" for n in checkpoints(out.stdout).values() if n["level"] != "root")
    lines = out.stderr.decode().splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith("checkpoint-guard: ingest: warning: the model judge is unavailable (")
    assert "the whole run is judged by the rules judge (--judge-fallback rules" in lines[0]
    assert (
        "; judge rules (precision precise) (fallback: the model judge was unavailable); 0 input(s) failed" in lines[1]
    )


def test_a_model_that_fails_midway_restarts_the_run_with_rules_instead_of_mixing(tmp_path, server, by_rules):
    log, rules = by_rules
    server.script.extend([None, ("status", 401, {"type": "authentication_error", "message": "key revoked"})])
    env = backend_env("anthropic", tmp_path, server)
    out = run(env, "ingest", "claude-code", str(log), "--judge", "model", "--judge-fallback", "rules")
    assert len(server.requests) == 2  # the first compaction was judged by the model, the second failed
    assert out.returncode == 0 and out.stdout == rules
    assert "key revoked" in out.stderr.decode().splitlines()[0]


def test_the_judge_options_are_for_the_log_forms_and_the_fallback_needs_the_model(tmp_path):
    out = run(env_of(tmp_path), "ingest", "--judge", "model")
    assert out.returncode == 2 and "work with the log forms only" in out.stderr.decode()
    out = run(env_of(tmp_path), "ingest", "claude-code", str(DROPPED), "--judge-fallback", "rules")
    assert out.returncode == 2 and "--judge-fallback needs --judge model" in out.stderr.decode()
    helped = run(env_of(tmp_path), "ingest", "--help").stdout.decode()
    assert "--judge [rules|model]" in helped and "--judge-fallback [none|rules]" in helped


def test_the_metrics_file_counts_the_judges_work_and_promtool_accepts_it(tmp_path, server):
    from prometheus_client.parser import text_string_to_metric_families

    from tests.unit.promql import promtool

    env = backend_env("openai", tmp_path, server)
    metrics = tmp_path / "ingest.prom"
    log = two_compactions(tmp_path / "session.jsonl")
    out = run(env, "ingest", "claude-code", str(log), "--judge", "model", "--metrics-file", str(metrics))
    assert out.returncode == 0, out.stderr.decode()
    text = metrics.read_text()
    lint = subprocess.run([promtool(), "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for f in text_string_to_metric_families(text) for s in f.samples}
    model = (("model", "openai:qwen2.5:14b"),)
    assert samples[("checkpoint_guard_judge_compactions_total", model)] == 2
    assert samples[("checkpoint_guard_judge_requests_total", model)] == 2
    assert samples[("checkpoint_guard_judge_cache_hits_total", model)] == 0
    tokens_in = samples[("checkpoint_guard_judge_tokens_total", (("direction", "input"),) + model)]
    assert tokens_in > 0 and f"{int(tokens_in)} input + " in out.stderr.decode()
    assert ("checkpoint_guard_judge_cost_usd_total", model) not in samples  # no prices: the cost is unknown
    assert (
        samples[("checkpoint_guard_ingest_events_total", (("format", "claude-code"), ("type", "checkpoint")))] == 4
    )  # s-1, s-2, the root twice
    assert samples[("checkpoint_guard_judge_fallback", model)] == 0


def test_following_a_session_a_model_that_goes_down_hands_over_to_rules_announced_and_named(tmp_path, server):
    """--follow: once events went out, a failing model is replaced in place for the rest of the run (said once)."""
    import time

    full = two_compactions(tmp_path / "full.jsonl").read_text().splitlines(keepends=True)
    log = tmp_path / "session.jsonl"
    log.write_text("".join(full[:7]))  # up to the first summary and the next user message
    out = tmp_path / "events.jsonl"
    env = backend_env("anthropic", tmp_path, server)
    proc = subprocess.Popen([sys.executable, "-m", "stream", "ingest", "claude-code", str(log), "--follow",
                             "--poll-interval", "0.1", "--idle-timeout", "3", "--judge", "model",
                             "--judge-fallback", "rules", "--out", str(out)],
                            cwd=REPO, env=env, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out.exists() and b'"s-1"' in out.read_bytes()):
            time.sleep(0.1)
        server.script.append(("status", 401, {"type": "authentication_error", "message": "key revoked"}))
        with log.open("a") as f:
            f.write("".join(full[7:]))
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    err = proc.stderr.read().decode().splitlines()
    nodes = checkpoints(out.read_bytes())
    assert nodes["s-1"]["x_judge"] == "model" and nodes["s-2"]["x_judge"] == "rules" and "x_model" not in nodes["s-2"]
    assert len(server.requests) == 2
    (warning,) = [line for line in err if "warning" in line]
    assert "key revoked" in warning and "from here on are judged by the rules judge" in warning
    assert "1 compactions, 2 requests" in err[-1] and "then judge rules (precision precise) (fallback" in err[-1]
