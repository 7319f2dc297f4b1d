"""The ``model`` judge's plumbing against stand-ins of its three backends (no network).

A real local HTTP server speaks the Anthropic Messages API and OpenAI Chat Completions
(tests/model_judge_standins.py); a stand-in ``claude`` executable speaks the CLI's print
mode. Checked: the request each backend sends (documented fields and headers), the
answer becoming the port's Judgement, retries (429 with retry-after, 5xx, a timeout, a
malformed body, an answer off the schema) and no retry where waiting cannot help (a
refused key), the disk cache (no second request, the same Judgement), usage and cost,
and that a vendor's key never goes to another host.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stream.adapters.compaction.judge import Candidate
from stream.adapters.compaction.judge_rules import RulesJudge
from stream.adapters.compaction.model_judge import (
    FallbackJudge,
    JudgeConfigError,
    JudgeUnavailable,
    RestartWithFallback,
    build_model_judge,
)
from stream.adapters.compaction.model_judge.prompt import ANSWER_SCHEMA, PROMPT_VERSION, SYSTEM
from stream.settings import Settings
from tests.model_judge_standins import TOOL, ModelServer, claude_calls, write_claude

CANDIDATES = (
    Candidate("u-1", "Add a dark-mode toggle. Do not add new dependencies to package.json.", "typed",
              "2026-03-02T11:00:01Z"),
    Candidate("u-2", "Also: keep the public API unchanged, please.", "typed", "2026-03-02T11:00:02Z"),
    Candidate("u-3", "What does this function do?", "typed", None),
)
SUMMARY = "The user wants a dark-mode toggle with no new dependencies. Files: src/Settings.tsx."


@pytest.fixture
def server():
    with ModelServer(api_key="test-key") as s:
        yield s


def settings(tmp_path: Path, **kw) -> Settings:
    base = {"judge_cache_dir": tmp_path / "cache", "judge_backoff": 0.0, "judge_retries": 2, "judge_timeout": 5.0}
    return Settings(**{**base, **kw})


def judge_of(tmp_path: Path, sleeps: list[float] | None = None, **kw):
    sleeps = [] if sleeps is None else sleeps
    return build_model_judge(settings(tmp_path, **kw), sleep=sleeps.append)


def anthropic(tmp_path, server, **kw):
    return judge_of(
        tmp_path, **{"judge_backend": "anthropic", "judge_url": server.url, "judge_api_key": "test-key", **kw}
    )


def openai(tmp_path, server, **kw):
    return judge_of(tmp_path, **{"judge_backend": "openai", "judge_url": f"{server.url}/v1",
                                 "judge_model": "qwen2.5:14b", "judge_api_key": "test-key", **kw})


def check_judgement(j, model: str) -> None:
    assert j.judge == "model" and j.model == model
    by_text = {i.text: i for i in j.in_force}
    assert set(by_text) == {"Do not add new dependencies to package.json.", "keep the public API unchanged"}
    assert by_text["keep the public API unchanged"].form == "preserve"
    assert by_text["Do not add new dependencies to package.json."].candidate_id == "u-1"
    carried = {c.instruction_id: c for c in j.carries}
    assert [c.instruction_id for c in j.carries] == [i.id for i in j.in_force]
    dep = carried[by_text["Do not add new dependencies to package.json."].id]
    api = carried[by_text["keep the public API unchanged"].id]
    assert dep.carried and dep.quote == "no new dependencies" and dep.cue == "model"
    assert dep.reason == "the summary restates it." and api.reason == "the summary omits it."
    assert not api.carried and api.quote is None
    assert all(i.cue == "model" and i.reason.endswith("rule for the rest of the work") for i in j.in_force)


def test_anthropic_sends_a_forced_tool_call_at_temperature_0_and_its_answer_is_the_judgement(tmp_path, server):
    judge = anthropic(tmp_path, server)
    j = judge.judge(CANDIDATES, SUMMARY, ["an earlier summary"])
    check_judgement(j, "anthropic:claude-sonnet-4-5")
    (req,) = server.requests
    assert req["path"] == "/v1/messages"
    assert req["headers"]["x-api-key"] == "test-key" and req["headers"]["anthropic-version"] == "2023-06-01"
    body = req["body"]
    assert body["model"] == "claude-sonnet-4-5" and body["temperature"] == 0 and body["max_tokens"] == 4096
    assert body["system"] == SYSTEM
    assert body["tools"] == [
        {"name": TOOL, "description": body["tools"][0]["description"], "input_schema": ANSWER_SCHEMA}
    ]
    assert body["tool_choice"] == {"type": "tool", "name": TOOL}
    doc = json.loads(body["messages"][0]["content"])
    assert doc["earlier_summary"] == "an earlier summary" and doc["new_summary"] == SUMMARY
    assert [c["id"] for c in doc["candidates"]] == ["u-1", "u-2", "u-3"]
    assert doc["candidates"][0] == {"id": "u-1", "channel": "typed", "at": "2026-03-02T11:00:01Z",
                                    "text": CANDIDATES[0].text}
    assert j.usage.requests == 1 and j.usage.input_tokens > 0 and j.usage.output_tokens > 0


def test_openai_compatible_sends_a_strict_json_schema_and_bearer_key(tmp_path, server):
    judge = openai(tmp_path, server)
    check_judgement(judge.judge(CANDIDATES, SUMMARY), "openai:qwen2.5:14b")
    (req,) = server.requests
    assert req["path"] == "/v1/chat/completions" and req["headers"]["authorization"] == "Bearer test-key"
    body = req["body"]
    assert body["temperature"] == 0 and body["seed"] == 0 and body["max_tokens"] == 4096
    assert [m["role"] for m in body["messages"]] == ["system", "user"] and body["messages"][0]["content"] == SYSTEM
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": TOOL, "strict": True, "schema": ANSWER_SCHEMA}}


def test_a_local_server_without_a_key_gets_no_authorization_header(tmp_path):
    with ModelServer(api_key=None) as server:
        judge = judge_of(tmp_path, judge_backend="openai", judge_url=f"{server.url}/v1", judge_model="llama3")
        judge.judge(CANDIDATES, SUMMARY)
        assert "authorization" not in server.requests[0]["headers"]


def test_the_claude_cli_runs_in_print_mode_with_the_schema_and_no_tools(tmp_path):
    bin_dir = tmp_path / "bin"
    claude = write_claude(bin_dir)
    judge = judge_of(tmp_path, judge_backend="claude-cli", judge_claude_bin=str(claude), judge_model="sonnet")
    j = judge.judge(CANDIDATES, SUMMARY)
    check_judgement(j, "claude-cli:sonnet")
    (call,) = claude_calls(bin_dir)
    argv = call["argv"]
    assert argv[:3] == ["-p", "--output-format", "json"]
    assert json.loads(argv[argv.index("--json-schema") + 1]) == ANSWER_SCHEMA
    assert argv[argv.index("--system-prompt") + 1] == SYSTEM and argv[argv.index("--model") + 1] == "sonnet"
    assert json.loads(call["stdin"])["new_summary"] == SUMMARY and not call["claudecode"]
    assert j.usage.cost_usd == pytest.approx(0.0125) and j.usage.input_tokens == len(call["stdin"]) // 4 + 10
    assert judge.tally.cost_known and judge.tally.cost_usd == pytest.approx(0.0125)


def test_the_cli_is_started_without_the_nested_session_marker(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDECODE", "1")
    claude = write_claude(tmp_path / "bin")
    judge_of(tmp_path, judge_backend="claude-cli", judge_claude_bin=str(claude)).judge(CANDIDATES, SUMMARY)
    assert claude_calls(tmp_path / "bin")[0]["claudecode"] is False


def test_a_second_judgement_of_the_same_compaction_comes_from_the_disk_cache(tmp_path, server):
    first = anthropic(tmp_path, server).judge(CANDIDATES, SUMMARY)
    again = anthropic(tmp_path, server)  # a new process would build a new judge over the same directory
    second = again.judge(CANDIDATES, SUMMARY)
    assert len(server.requests) == 1
    assert (second.in_force, second.carries) == (first.in_force, first.carries)
    assert second.usage.cached == 1 and second.usage.requests == 0 and again.tally.cached == 1
    entry = next((tmp_path / "cache").rglob("*.json"))
    assert json.loads(entry.read_text())["prompt_version"] == PROMPT_VERSION
    anthropic(tmp_path, server, judge_model="claude-haiku-4-5").judge(CANDIDATES, SUMMARY)  # another model: asked
    anthropic(tmp_path, server).judge(CANDIDATES, SUMMARY + " More.")  # another summary: asked
    assert len(server.requests) == 3


def test_a_damaged_cache_entry_is_asked_again_and_rewritten(tmp_path, server):
    anthropic(tmp_path, server).judge(CANDIDATES, SUMMARY)
    entry = next((tmp_path / "cache").rglob("*.json"))
    entry.write_text("{not json")
    anthropic(tmp_path, server).judge(CANDIDATES, SUMMARY)
    assert len(server.requests) == 2 and json.loads(entry.read_text())["answer"]["instructions"]


def test_no_candidates_means_no_request(tmp_path, server):
    j = anthropic(tmp_path, server).judge((), SUMMARY)
    assert j.in_force == () and j.carries == () and server.requests == []


@pytest.mark.parametrize("connect", [anthropic, openai])
def test_429_with_retry_after_then_success_is_retried_after_the_servers_wait(tmp_path, server, connect):
    error = {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}
    server.script.append(("status", 429, error, {"retry-after": "7"}))
    sleeps: list[float] = []
    judge = connect(tmp_path, server, sleeps=sleeps)
    check_judgement(judge.judge(CANDIDATES, SUMMARY), judge.model)
    assert len(server.requests) == 2 and sleeps == [7.0] and judge.tally.requests == 2


@pytest.mark.parametrize("step", [("status", 529, {"type": "overloaded_error", "message": "Overloaded"}),
                                  ("status", 500, {"type": "api_error", "message": "Internal server error"}),
                                  ("garbage",), ("bad-answer",), ("sleep", 1.5)])
def test_a_transient_failure_then_success_is_retried_with_backoff(tmp_path, server, step):
    server.script.append(step)
    sleeps: list[float] = []
    judge = anthropic(tmp_path, server, sleeps=sleeps, judge_backoff=0.25, judge_timeout=1.0)
    check_judgement(judge.judge(CANDIDATES, SUMMARY), judge.model)
    assert len(server.requests) == 2 and sleeps == [0.25]


def test_backoff_doubles_and_the_last_failure_is_the_one_line_reason(tmp_path, server):
    server.script.extend([("status", 503, {"type": "api_error", "message": "unavailable"})] * 3)
    sleeps: list[float] = []
    judge = anthropic(tmp_path, server, sleeps=sleeps, judge_backoff=0.5)
    with pytest.raises(JudgeUnavailable) as err:
        judge.judge(CANDIDATES, SUMMARY)
    assert sleeps == [0.5, 1.0] and len(server.requests) == 3
    message = str(err.value)
    assert "\n" not in message and "HTTP 503: unavailable" in message and "3 attempts" in message
    assert server.url in message


def test_an_answer_off_the_schema_every_time_fails_after_the_retries(tmp_path, server):
    server.script.extend([("bad-answer",)] * 3)
    with pytest.raises(JudgeUnavailable, match="does not match the schema"):
        anthropic(tmp_path, server).judge(CANDIDATES, SUMMARY)
    assert len(server.requests) == 3 and not list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("connect", [anthropic, openai])
def test_a_refused_key_fails_at_once_without_retrying(tmp_path, server, connect):
    judge = connect(tmp_path, server, judge_api_key="wrong-key")
    with pytest.raises(JudgeUnavailable, match="HTTP 401") as err:
        judge.judge(CANDIDATES, SUMMARY)
    assert len(server.requests) == 1 and "wrong-key" not in str(err.value)


def test_a_spend_limit_429_is_not_retried(tmp_path, server):
    error = {
        "type": "rate_limit_error",
        "message": "spend limit",
        "details": {"error_code": "enforced_spend_limit_reached"},
    }
    server.script.append(("status", 429, error))
    with pytest.raises(JudgeUnavailable, match="spend limit"):
        anthropic(tmp_path, server).judge(CANDIDATES, SUMMARY)
    assert len(server.requests) == 1


def test_a_server_that_is_down_is_one_line_after_the_retries(tmp_path):
    with ModelServer() as gone:
        url = gone.url
    judge = judge_of(tmp_path, judge_backend="anthropic", judge_url=url, judge_api_key="k", judge_retries=1)
    with pytest.raises(JudgeUnavailable, match="cannot connect") as err:
        judge.judge(CANDIDATES, SUMMARY)
    assert "\n" not in str(err.value) and "2 attempts" in str(err.value)


@pytest.mark.parametrize("step,calls", [("overloaded", 2), ("garbage", 2), ("bad-answer", 2), ("schema-retries", 2),
                                        ("wrapped", 1), ("login", 1)])
def test_cli_failures_are_retried_unless_the_login_is_the_problem(tmp_path, step, calls):
    claude = write_claude(tmp_path / "bin", [step])
    judge = judge_of(tmp_path, judge_backend="claude-cli", judge_claude_bin=str(claude))
    if step != "login":
        check_judgement(judge.judge(CANDIDATES, SUMMARY), "claude-cli:default")
        assert len(claude_calls(tmp_path / "bin")) == calls
    else:
        with pytest.raises(JudgeUnavailable, match="/login"):
            judge.judge(CANDIDATES, SUMMARY)
        assert len(claude_calls(tmp_path / "bin")) == 1


def test_a_cli_that_stalls_is_killed_at_the_timeout_and_retried(tmp_path):
    claude = write_claude(tmp_path / "bin", ["sleep"])
    judge = judge_of(tmp_path, judge_backend="claude-cli", judge_claude_bin=str(claude), judge_timeout=2.0)
    check_judgement(judge.judge(CANDIDATES, SUMMARY), "claude-cli:default")
    assert len(claude_calls(tmp_path / "bin")) == 2


def test_a_missing_cli_is_one_line_naming_the_setting(tmp_path):
    judge = judge_of(tmp_path, judge_backend="claude-cli", judge_claude_bin=str(tmp_path / "no-such-claude"))
    with pytest.raises(JudgeUnavailable, match="CG_JUDGE_CLAUDE_BIN"):
        judge.judge(CANDIDATES, SUMMARY)


def test_prices_give_the_cost_of_http_backends_else_it_is_unknown(tmp_path, server):
    unpriced = anthropic(tmp_path / "a", server)
    unpriced.judge(CANDIDATES, SUMMARY)
    assert not unpriced.tally.cost_known and "cost unknown" in unpriced.tally.line(unpriced.model)
    priced = anthropic(tmp_path / "b", server, judge_price_input=3.0, judge_price_output=15.0)
    j = priced.judge(CANDIDATES, SUMMARY)
    assert j.usage.cost_usd == pytest.approx((j.usage.input_tokens * 3 + j.usage.output_tokens * 15) / 1e6)
    assert priced.tally.cost_known and priced.tally.line(priced.model).endswith(f"${j.usage.cost_usd:.4f}")


def test_a_vendor_key_from_its_own_variable_is_never_sent_to_another_host(tmp_path, server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-vendor-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-vendor-secret")
    with pytest.raises(JudgeConfigError, match="CG_JUDGE_API_KEY"):
        judge_of(tmp_path, judge_backend="anthropic", judge_url=server.url)
    with ModelServer(api_key=None) as keyless:
        judge_of(tmp_path, judge_backend="openai", judge_url=f"{keyless.url}/v1", judge_model="m").judge(
            CANDIDATES, SUMMARY
        )
        assert "authorization" not in keyless.requests[-1]["headers"]
    assert Settings().anthropic_api_key.get_secret_value() == "sk-ant-vendor-secret"  # read through Settings
    assert "vendor-secret" not in repr(Settings())


def test_settings_that_cannot_work_are_a_config_error(tmp_path):
    with pytest.raises(JudgeConfigError, match="CG_JUDGE_MODEL"):
        judge_of(tmp_path, judge_backend="openai", judge_url="http://127.0.0.1:9/v1")
    with pytest.raises(JudgeConfigError, match="ANTHROPIC_API_KEY"):
        judge_of(tmp_path, judge_backend="anthropic")


def test_a_rule_is_a_verbatim_span_of_its_candidate_and_keeps_its_id_across_compactions(tmp_path, server):
    judge = anthropic(tmp_path, server)
    cand = Candidate("p-1", "Plan:\n- Do not add new dependencies to package.json.\n- ship it", "plan")
    (rule,) = judge.judge((cand,), SUMMARY).in_force
    assert rule.text == "Do not add new dependencies to package.json." and rule.candidate_id == "p-1"
    # a later compaction's model names an overlapping span: the same rule (same text, same id)
    assert judge._rule_text(cand, "add new dependencies") == rule.text
    spaced = Candidate("q-1", "Rules:  DO NOT   touch\nthe migrations folder.", "typed")
    assert judge._rule_text(spaced, "Do not touch the migrations folder.") == "DO NOT touch the migrations folder."
    assert judge._rule_text(spaced, "never do this") == "Rules: DO NOT touch the migrations folder."  # the candidate


def test_the_fallback_restarts_before_anything_went_out_and_switches_in_place_after(tmp_path):
    with ModelServer() as gone:
        url = gone.url
    model = judge_of(tmp_path, judge_backend="anthropic", judge_url=url, judge_api_key="k", judge_retries=0)
    announced: list[str] = []
    before = FallbackJudge(model, RulesJudge(), can_restart=lambda: True, announce=announced.append)
    with pytest.raises(RestartWithFallback, match="cannot connect"):
        before.judge(CANDIDATES, SUMMARY)
    after = FallbackJudge(model, RulesJudge(), can_restart=lambda: False, announce=announced.append)
    first, second = after.judge(CANDIDATES, SUMMARY), after.judge(CANDIDATES, SUMMARY)
    assert first.judge == second.judge == "rules" and first.model is None
    assert len(announced) == 1 and "cannot connect" in announced[0] and after.switched == announced[0]
    assert model.tally.requests == 2  # once for each wrapper: a switched one never asks the model again


def test_a_long_sessions_request_stays_bounded_and_long_texts_keep_their_head():
    from stream.adapters.compaction.model_judge.prompt import MAX_CANDIDATE_CHARS, MAX_CANDIDATES_CHARS, user_message

    one = json.loads(user_message([Candidate("a", "x" * 20_000, "plan")], "s", []))["candidates"][0]["text"]
    assert one == "x" * MAX_CANDIDATE_CHARS + " [...]"
    many = [Candidate(f"c{i}", f"rule {i}: " + "y" * 5_000, "typed") for i in range(200)]
    doc = json.loads(user_message(many, "s", ["first", "second"]))
    assert sum(len(c["text"]) for c in doc["candidates"]) <= MAX_CANDIDATES_CHARS + 200 * len(" [...]")
    assert all(c["text"].startswith(f"rule {i}: ") for i, c in enumerate(doc["candidates"]))
    assert doc["earlier_summary"] == "second"  # the previous summary only
