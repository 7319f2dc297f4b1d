"""The three ways the ``model`` judge reaches a model: one request, one attempt each.

* :class:`AnthropicBackend` — the Anthropic Messages API (``POST {url}/v1/messages``,
  headers ``x-api-key`` and ``anthropic-version: 2023-06-01``); the answer is the input
  of a forced tool call (``tool_choice: {"type": "tool"}``), ``temperature: 0``.
* :class:`OpenAIBackend` — any OpenAI-compatible Chat Completions endpoint (``POST
  {url}/chat/completions``: OpenAI, Ollama, llama.cpp's server, vLLM); the answer is the
  message content under ``response_format: {"type": "json_schema", strict}``,
  ``temperature: 0``, ``seed: 0``.
* :class:`ClaudeCliBackend` — the local ``claude`` CLI in print mode (``claude -p
  --output-format json --json-schema ...``, prompt on stdin, no tools, no session saved);
  the answer is the result's ``structured_output``. The CLI has no temperature option.

More (the module notes): docs/COMPACTION_LOGS.md, section ``stream/adapters/compaction/model_judge/backends.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from typing import Any

import httpx

from stream.adapters.common import as_dict, as_list
from stream.adapters.compaction.model_judge.prompt import TOOL_NAME, InvalidAnswer

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_MODEL = "claude-sonnet-4-5"
OPENAI_URL = "https://api.openai.com/v1"
BACKENDS = ("anthropic", "openai", "claude-cli")

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
#: Error codes that come with a retryable status but never go away by waiting.
_PERMANENT_CODES = frozenset({"enforced_spend_limit_reached", "insufficient_quota", "billing_hard_limit_reached"})


class Retryable(Exception):
    """One attempt failed for a reason that may pass (``retry_after``: seconds the server asked for)."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class Fatal(Exception):
    """One attempt failed for a reason that retrying does not change."""


@dataclass(frozen=True)
class Reply:
    """One answer: ``data`` (the answer object, or its JSON text) and what it cost."""

    data: Any
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None  # when the backend reports it (the CLI does)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _one_line(text: Any, limit: int = 200) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except ValueError:
        return None


class _HttpBackend:
    name = ""
    path = ""

    def __init__(self, *, model: str, url: str, api_key: str | None, timeout: float, max_tokens: int) -> None:
        self.model = model
        self.url = url.rstrip("/")
        self._key = api_key
        self.max_tokens = max_tokens
        self._client = httpx.Client(timeout=httpx.Timeout(timeout), follow_redirects=False)
        self.timeout = timeout

    @property
    def where(self) -> str:
        return f"{self.url}{self.path}"

    def close(self) -> None:
        self._client.close()

    def _headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            response = self._client.post(self.where, json=body, headers=self._headers())
        except httpx.TimeoutException:
            raise Retryable(f"no answer within {self.timeout:g}s (CG_JUDGE_TIMEOUT)") from None
        except httpx.HTTPError as exc:
            raise Retryable(f"cannot connect: {_one_line(exc) or type(exc).__name__}") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.is_success:
            if not isinstance(data, dict):
                raise InvalidAnswer(f"HTTP {response.status_code} with a body that is not a JSON object")
            return data
        error = data.get("error") if isinstance(data, dict) else None
        error = error if isinstance(error, dict) else {}
        message = error.get("message") or (response.text if data is None else "") or response.reason_phrase
        codes = {
            str(error.get("type")),
            str(error.get("code")),
            str((error.get("details") or {}).get("error_code") if isinstance(error.get("details"), dict) else None),
        }
        reason = f"HTTP {response.status_code}: {_one_line(message)}"
        if self._key:  # a server may echo the key it refused: never pass it on
            reason = reason.replace(self._key, "***")
        if response.status_code in _RETRY_STATUS and not codes & _PERMANENT_CODES:
            raise Retryable(reason, _retry_after(response))
        raise Fatal(reason)


class AnthropicBackend(_HttpBackend):
    """The Anthropic Messages API with the answer as a forced tool call."""

    name = "anthropic"
    path = "/v1/messages"

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._key or "", "anthropic-version": ANTHROPIC_VERSION}

    def payload(self, system: str, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": 0,
            "system": system,
            "messages": [{"role": "user", "content": user}],
            "tools": [{"name": TOOL_NAME, "description": "Record the standing prohibitions and whether the new "
                       "summary carries each.", "input_schema": schema}],
            "tool_choice": {"type": "tool", "name": TOOL_NAME},
        }

    def send(self, payload: dict[str, Any]) -> Reply:
        data = self._post(payload)
        usage = as_dict(data.get("usage"))
        tokens = (_int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens"))
                  + _int(usage.get("cache_read_input_tokens")))
        reply = Reply(None, tokens, _int(usage.get("output_tokens")))
        if data.get("stop_reason") == "max_tokens":
            raise InvalidAnswer(
                f"the answer was cut at max_tokens={self.max_tokens} (raise CG_JUDGE_MAX_TOKENS)", reply
            )
        for block in data.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "tool_use" and block.get("name") == TOOL_NAME:
                return Reply(block.get("input"), reply.input_tokens, reply.output_tokens)
        raise InvalidAnswer(f"the answer has no {TOOL_NAME} tool call (stop_reason {data.get('stop_reason')!r})", reply)


class OpenAIBackend(_HttpBackend):
    """An OpenAI-compatible Chat Completions endpoint with a strict JSON-schema response format."""

    name = "openai"
    path = "/chat/completions"

    def _headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._key}"} if self._key else {}

    def payload(self, system: str, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        return {
            "model": self.model,
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "temperature": 0,
            "seed": 0,
            "max_tokens": self.max_tokens,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": TOOL_NAME, "strict": True, "schema": schema}},
        }

    def send(self, payload: dict[str, Any]) -> Reply:
        data = self._post(payload)
        usage = as_dict(data.get("usage"))
        reply = Reply(None, _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")))
        choices = data.get("choices")
        choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
        message = as_dict(choice.get("message"))
        if choice.get("finish_reason") == "length":
            raise InvalidAnswer(
                f"the answer was cut at max_tokens={self.max_tokens} (raise CG_JUDGE_MAX_TOKENS)", reply
            )
        if message.get("refusal"):
            raise InvalidAnswer(f"the model refused: {_one_line(message['refusal'])}", reply)
        if not isinstance(message.get("content"), str):
            raise InvalidAnswer("the answer has no message content", reply)
        return Reply(message["content"], reply.input_tokens, reply.output_tokens)


class ClaudeCliBackend:
    """``claude -p`` (Claude Code's print mode): the user's own login, no extra key."""

    name = "claude-cli"

    def __init__(self, *, model: str | None, binary: str, timeout: float) -> None:
        self.model = model
        self.binary = binary
        self.timeout = timeout

    @property
    def where(self) -> str:
        return self.binary

    def close(self) -> None:
        pass

    def payload(self, system: str, user: str, schema: dict[str, Any]) -> dict[str, Any]:
        argv = ["-p", "--output-format", "json", "--json-schema", json.dumps(schema, sort_keys=True),
                "--system-prompt", system, "--tools", "", "--no-session-persistence"]
        if self.model:
            argv += ["--model", self.model]
        return {"argv": argv, "stdin": user}

    def send(self, payload: dict[str, Any]) -> Reply:
        # The child inherits the environment (its login, ANTHROPIC_API_KEY, proxies) except the
        # marker that makes a claude started inside a Claude Code session refuse to run.
        env = {k: v for k, v in os.environ.items() if k != "CLAUDECODE"}
        try:
            done = subprocess.run([self.binary, *payload["argv"]], input=payload["stdin"], capture_output=True,
                                  text=True, encoding="utf-8", errors="replace", timeout=self.timeout, env=env)
        except FileNotFoundError:
            raise Fatal("no such program (install Claude Code, or set CG_JUDGE_CLAUDE_BIN)") from None
        except PermissionError:
            raise Fatal("not executable (CG_JUDGE_CLAUDE_BIN)") from None
        except subprocess.TimeoutExpired:
            raise Retryable(f"no answer within {self.timeout:g}s (CG_JUDGE_TIMEOUT)") from None
        result = _last_json_object(done.stdout)
        if result is None:
            last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1]
            if done.returncode != 0:
                raise Retryable(f"exit code {done.returncode}: {_one_line(last) or 'no output'}")
            raise InvalidAnswer("the output is not a JSON result (is this Claude Code's claude?)")
        usage = as_dict(result.get("usage"))
        tokens = (_int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens"))
                  + _int(usage.get("cache_read_input_tokens")))
        cost = result.get("total_cost_usd")
        cost = float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0 else None
        reply = Reply(None, tokens, _int(usage.get("output_tokens")), cost)
        subtype = result.get("subtype")
        if subtype == "error_max_structured_output_retries":
            raise InvalidAnswer("the CLI's own retries found no answer that fits the schema", reply)
        if result.get("is_error") or subtype not in (None, "success"):
            errors = as_list(result.get("errors"))
            message = _one_line(result.get("result") or "; ".join(map(str, errors)) or subtype
                                or f"exit code {done.returncode}")
            if any(w in message.lower() for w in ("login", "api key", "authentication", "not logged in")):
                raise Fatal(message)
            raise Retryable(message)
        answer = result.get("structured_output")
        if isinstance(answer, dict) and set(answer) == {"output"} and isinstance(answer["output"], dict):
            answer = answer["output"]  # some CLI versions wrap the tool input once
        if answer is None and isinstance(result.get("result"), str):
            answer = result["result"]  # a version without structured_output: the text must be the JSON
        if answer is None:
            raise InvalidAnswer("the result has no structured_output", reply)
        return Reply(answer, reply.input_tokens, reply.output_tokens, reply.cost_usd)


def _last_json_object(text: str) -> dict[str, Any] | None:
    """The JSON object ``text`` is, or the last line of it that is one (a CLI may print notes first)."""
    for chunk in (text, *reversed(text.splitlines())):
        chunk = chunk.strip()
        if chunk.startswith("{"):
            try:
                value = json.loads(chunk)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    return None
