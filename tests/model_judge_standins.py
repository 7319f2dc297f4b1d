"""Stand-ins for the ``model`` judge's three backends, so no test needs the network.

* :class:`ModelServer` — a real HTTP server on a free local port (a thread of this
  process) that speaks the Anthropic Messages API (``POST /v1/messages``) and OpenAI's
  Chat Completions (``POST /v1/chat/completions``): it checks the request the way the
  real services do (key header, API version, forced tool / strict JSON schema) and
  answers in their documented response shapes. ``script`` lists what the next requests
  get instead of an answer (an HTTP error, a malformed body, a stall past the client's
  timeout); ``requests`` records every request.
* :func:`write_claude` — a stand-in ``claude`` executable (a Python script) that checks
  the print-mode flags, reads the prompt on stdin and prints a ``--output-format json``
  result; it logs each call to ``<dir>/calls.jsonl`` and takes its script from
  ``<dir>/script.json``.

More (the module notes): docs/DEVELOPMENT.md, section ``tests/model_judge_standins.py``.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

TOOL = "record_standing_instructions"


@dataclass(frozen=True)
class Rule:
    text: str
    form: str
    carried_by: str  # a phrase whose presence in the new summary means "carried"


RECORDED = (
    Rule("Do not add new dependencies to package.json.", "explicit", "no new dependencies"),
    Rule("Never commit secrets or .env files.", "explicit", "never commit secrets"),
    Rule("Ne touche pas au dossier migrations.", "explicit", "ne pas toucher aux migrations"),
    Rule("keep the public API unchanged", "preserve", "public API unchanged"),
    Rule("Don't edit the generated files in src/gen/ by hand.", "explicit", "forbade editing generated files"),
    Rule("don't bump the package version", "explicit", "package version unchanged"),
    Rule("Keep the `Money` type for display", "preserve", "keep the Money type for display"),
)


def answer_for(user_message: str) -> dict[str, Any]:
    """The recorded answer to one request's user message (the JSON document the judge sends)."""
    doc = json.loads(user_message)
    summary = doc.get("new_summary")
    items, seen = [], set()
    for cand in doc["candidates"]:
        for rule in RECORDED:
            if rule.text in cand["text"] and rule.text not in seen:
                seen.add(rule.text)
                carried = summary is not None and rule.carried_by.lower() in summary.lower()
                items.append({
                    "candidate_id": cand["id"], "text": rule.text, "form": rule.form, "carried": carried,
                    "quote": rule.carried_by if carried else None,
                    "reason": f"an {rule.form} rule for the rest of the work",
                    "carry_reason": "the summary " + ("restates it." if carried else "omits it."),
                })
    return {"instructions": items}


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


class ModelServer(ThreadingHTTPServer):
    """The local stand-in server (see the module docstring); ``url`` is its base URL."""

    daemon_threads = True

    def __init__(self, *, api_key: str | None = "test-key") -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.api_key = api_key
        self.script: deque[tuple] = deque()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.shutdown()
        self.server_close()

    def next_step(self) -> tuple | None:
        with self._lock:
            return self.script.popleft() if self.script else None


class _Handler(BaseHTTPRequestHandler):
    server: ModelServer

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        self.server.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                     "body": body})
        api = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}.get(self.path)
        if api is None:
            return self._send(404, {"error": {"type": "not_found_error", "message": f"no route {self.path}"}})
        step = self.server.next_step()
        if step is not None:
            kind = step[0]
            if kind == "status":
                _, status, error, headers = (*step, {})[:4]
                return self._send(status, {"type": "error", "error": error} if api == "anthropic" else {"error": error},
                                  headers)
            if kind == "garbage":
                return self._send(200, b"<html>502 from a proxy</html>")
            if kind == "sleep":
                time.sleep(step[1])
        problem = self._check(api, body)
        if problem:
            return self._send(*problem)
        answer = {"instructions": "not a list"} if step and step[0] == "bad-answer" else None
        if api == "anthropic":
            user = body["messages"][0]["content"]
            answer = answer or answer_for(user)
            return self._send(200, {
                "id": "msg_standin", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "tool_use", "id": "toolu_standin", "name": TOOL, "input": answer}],
                "stop_reason": "tool_use", "stop_sequence": None,
                "usage": {"input_tokens": _tokens(body["system"] + user), "output_tokens": _tokens(json.dumps(answer))},
            })
        user = body["messages"][1]["content"]
        answer = answer or answer_for(user)
        content = json.dumps(answer)
        return self._send(200, {
            "id": "chatcmpl-standin", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content, "refusal": None},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": _tokens(body["messages"][0]["content"] + user),
                      "completion_tokens": _tokens(content), "total_tokens": 0},
        })

    def _check(self, api: str, body: dict[str, Any]) -> tuple[int, dict] | None:
        """What the real service would refuse, as (status, body)."""
        h = {k.lower(): v for k, v in self.headers.items()}
        if api == "anthropic":
            if h.get("x-api-key") != self.server.api_key:
                return 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
            if h.get("anthropic-version") != "2023-06-01":
                return 400, {
                    "type": "error",
                    "error": {"type": "invalid_request_error", "message": "anthropic-version"},
                }
            if body.get("tool_choice") != {"type": "tool", "name": TOOL} or not body.get("max_tokens"):
                return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": "tool_choice"}}
            return None
        if self.server.api_key and h.get("authorization") != f"Bearer {self.server.api_key}":
            sent = h.get("authorization", "").removeprefix("Bearer ")  # echoed, as some servers do
            return 401, {"error": {"message": f"Incorrect API key provided: {sent}", "type": "invalid_request_error",
                                   "code": "invalid_api_key"}}
        rf = body.get("response_format") or {}
        if rf.get("type") != "json_schema" or not rf.get("json_schema", {}).get("schema"):
            return 400, {"error": {"message": "response_format", "type": "invalid_request_error", "code": None}}
        return None


# --------------------------------------------------------------------------- the claude CLI

_CLAUDE = r'''#!{python}
"""Stand-in for Claude Code's `claude -p --output-format json --json-schema ...` (tests only)."""
import json, os, sys, time
sys.path.insert(0, {tests!r})
from model_judge_standins import answer_for

here = {here!r}
argv = sys.argv[1:]
stdin = sys.stdin.read()
with open(os.path.join(here, "calls.jsonl"), "a") as log:
    log.write(json.dumps({{"argv": argv, "stdin": stdin, "claudecode": "CLAUDECODE" in os.environ}}) + "\n")

def flag(name):
    return argv[argv.index(name) + 1] if name in argv else None

if "-p" not in argv or flag("--output-format") != "json" or flag("--tools") != "" \
        or "--no-session-persistence" not in argv or "CLAUDECODE" in os.environ:
    print("error: not the print-mode call the judge makes", file=sys.stderr)
    sys.exit(2)
schema = json.loads(flag("--json-schema"))
script_path = os.path.join(here, "script.json")
script = json.load(open(script_path)) if os.path.exists(script_path) else []
step = script.pop(0) if script else None
json.dump(script, open(script_path, "w"))
if step == "sleep":
    time.sleep(30)
if step == "garbage":
    print("Claude Code is starting...")
    sys.exit(0)
if step in ("overloaded", "login"):
    text = "API Error: 529 overloaded" if step == "overloaded" else "Invalid API key - Please run /login"
    print(json.dumps({{"type": "result", "subtype": "success", "is_error": True, "result": text,
                      "total_cost_usd": 0, "usage": {{}}}}))
    sys.exit(1)
if step == "schema-retries":
    print(json.dumps({{"type": "result", "subtype": "error_max_structured_output_retries", "is_error": True,
                      "errors": ["Output does not match required schema"], "usage": {{}}}}))
    sys.exit(1)
answer = {{"instructions": 7}} if step == "bad-answer" else answer_for(stdin)
if step == "wrapped":
    answer = {{"output": answer}}
print(json.dumps({{"type": "result", "subtype": "success", "is_error": False, "duration_ms": 5, "num_turns": 2,
                  "result": "", "session_id": "standin", "total_cost_usd": 0.0125,
                  "usage": {{"input_tokens": len(stdin) // 4, "output_tokens": 40, "cache_read_input_tokens": 10}},
                  "structured_output": answer}}))
'''


def write_claude(directory: Path, script: list[str] | None = None) -> Path:
    """A stand-in ``claude`` in ``directory`` (see the module docstring); returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "claude"
    path.write_text(_CLAUDE.format(python=sys.executable, tests=str(Path(__file__).resolve().parent),
                                   here=str(directory)))
    path.chmod(0o755)
    (directory / "script.json").write_text(json.dumps(script or []))
    return path


def claude_calls(directory: Path) -> list[dict[str, Any]]:
    log = directory / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
