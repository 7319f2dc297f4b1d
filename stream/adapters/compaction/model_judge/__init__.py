"""The ``model`` judge: an LLM decides what is a standing prohibition and what a summary carries.

It implements the judge port (:mod:`stream.adapters.compaction.judge`) with one request per
compaction (:mod:`.prompt`) to one of three backends (:mod:`.backends`: the Anthropic
Messages API, an OpenAI-compatible Chat Completions endpoint, the ``claude`` CLI). Each
answer is schema-constrained, validated, and kept in a disk cache keyed by the request's
content hash (:mod:`.cache`), so re-ingesting makes no call and gives byte-identical
events. A failed attempt (timeout, connection error, 408/409/429/5xx, an invalid answer)
is retried with exponential backoff (the server's ``retry-after`` when longer); when every
attempt fails, or the failure is one retrying cannot fix, :meth:`ModelJudge.judge` raises
:class:`JudgeUnavailable` with one line for the user. :attr:`ModelJudge.tally` counts
compactions, requests, cache hits, tokens and cost. Settings: ``CG_JUDGE_*``
(:func:`build_model_judge`; the README's "Use an LLM judge").
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from stream.adapters.compaction.judge import Candidate, Carry, Instruction, Judgement, Usage
from stream.adapters.compaction.model_judge.backends import (
    ANTHROPIC_MODEL,
    ANTHROPIC_URL,
    BACKENDS,
    OPENAI_URL,
    AnthropicBackend,
    ClaudeCliBackend,
    Fatal,
    OpenAIBackend,
    Retryable,
)
from stream.adapters.compaction.model_judge.cache import DiskCache, request_key
from stream.adapters.compaction.model_judge.prompt import (
    ANSWER_SCHEMA,
    MAX_REASON_CHARS,
    PROMPT_VERSION,
    SYSTEM,
    Answer,
    InvalidAnswer,
    parse_answer,
    user_message,
)
from stream.adapters.compaction.prohibitions import make_prohibition
from stream.retry import backoff

#: Longest rule text kept when the model's span is not found verbatim (the candidate's head is used).
MAX_RULE_CHARS = 1_000
#: Longest wait between two attempts, seconds.
MAX_BACKOFF = 60.0


class JudgeUnavailable(RuntimeError):
    """The model cannot be used (unreachable, refused, or only invalid answers): one line for the user."""


class JudgeConfigError(JudgeUnavailable):
    """The settings cannot make a working backend (no key, no model): fixed by the user, not by waiting."""


@dataclass
class Tally:
    """What a run's judging cost: compactions judged (answered), requests sent (retries and failures included),
    cache hits, tokens, USD."""

    compactions: int = 0
    requests: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    warnings: list[str] = field(default_factory=list)

    def line(self, model: str) -> str:
        """``judge model <model>: N compactions, R requests, C from cache, I+O tokens, $X``."""
        cost = f"${self.cost_usd:.4f}" if self.cost_known else "cost unknown (set CG_JUDGE_PRICE_INPUT/OUTPUT)"
        return (f"judge model {model}: {self.compactions} compactions, {self.requests} requests, "
                f"{self.cached} from cache, {self.input_tokens} input + {self.output_tokens} output tokens, {cost}")


class ModelJudge:
    """The port's ``model`` judge over one backend (see the module docstring).

    ``prices``: USD per million (input, output) tokens, for backends that do not report a
    cost; None = the cost of those requests is unknown. ``sleep`` is the wait between
    attempts (tests pass a recorder).
    """

    name = "model"

    def __init__(self, backend: Any, cache: DiskCache, *, retries: int = 3, backoff: float = 1.0,
                 prices: tuple[float, float] | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.backend = backend
        self.cache = cache
        self.retries = retries
        self.backoff = backoff
        self.prices = prices
        self.sleep = sleep
        self.model = f"{backend.name}:{backend.model or 'default'}"
        self.tally = Tally()
        self._spans: dict[str, list[tuple[int, int, str]]] = {}  # candidate id -> rule spans already named

    def close(self) -> None:
        self.backend.close()

    # ---- the port

    def judge(self, candidates: Sequence[Candidate], summary: str | None,
              earlier_summaries: Sequence[str] = ()) -> Judgement:
        """One compaction's decisions; :class:`JudgeUnavailable` when the model cannot give them."""
        if not candidates:
            self.tally.compactions += 1
            return Judgement(judge=self.name, model=self.model, in_force=(), carries=())
        by_id = {c.id: c for c in candidates}
        payload = self.backend.payload(SYSTEM, user_message(candidates, summary, earlier_summaries), ANSWER_SCHEMA)
        key = request_key(self.backend.name, self.backend.model, PROMPT_VERSION, payload)
        answer, usage = self._cached(key, set(by_id))
        if answer is None:
            answer, usage = self._ask(payload, set(by_id))
            try:
                self.cache.put(key, {"answer": answer.model_dump(mode="json"), "model": self.model,
                                     "prompt_version": PROMPT_VERSION})
            except OSError as exc:
                self._warn(
                    f"judge cache {self.cache.root}: cannot write ({exc.strerror or exc}); the next run asks again"
                )
        self.tally.compactions += 1
        return self._judgement(answer, by_id, summary, usage)

    # ---- asking

    def _cached(self, key: str, ids: set[str]) -> tuple[Answer | None, Usage]:
        hit = self.cache.get(key)
        if hit is None:
            return None, Usage()
        try:
            answer = parse_answer(hit.get("answer"), ids)
        except InvalidAnswer:
            return None, Usage()  # a damaged entry: ask again (and overwrite it)
        self.tally.cached += 1
        return answer, Usage(cached=1)

    def _ask(self, payload: dict[str, Any], ids: set[str]) -> tuple[Answer, Usage]:
        attempts = self.retries + 1
        requests = tokens_in = tokens_out = 0
        cost = 0.0
        last = ""
        waits = backoff(self.backoff, MAX_BACKOFF)
        for attempt in range(attempts):
            reply = None
            wait: float | None = None  # None: answered
            try:
                requests += 1
                self.tally.requests += 1
                reply = self.backend.send(payload)
                answer = parse_answer(reply.data, ids)
            except Fatal as exc:
                raise JudgeUnavailable(f"{self.model} at {self.backend.where}: {exc}") from None
            except (Retryable, InvalidAnswer) as exc:
                last = str(exc)
                reply = reply or getattr(exc, "reply", None)
                wait = next(waits)
                if isinstance(exc, Retryable) and exc.retry_after is not None:
                    wait = max(wait, exc.retry_after)
            if reply is not None:
                used = self._spend(reply)
                tokens_in, tokens_out, cost = (
                    tokens_in + reply.input_tokens,
                    tokens_out + reply.output_tokens,
                    cost + used,
                )
            if wait is None:
                return answer, Usage(requests=requests, input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost)
            if attempt + 1 < attempts:
                self.sleep(min(wait, MAX_BACKOFF))
        raise JudgeUnavailable(f"{self.model} at {self.backend.where}: {last} "
                               f"({attempts} attempt{'s' if attempts != 1 else ''}, CG_JUDGE_RETRIES={self.retries})")

    def _spend(self, reply: Any) -> float:
        self.tally.input_tokens += reply.input_tokens
        self.tally.output_tokens += reply.output_tokens
        if reply.cost_usd is not None:
            cost = reply.cost_usd
        elif self.prices is not None:
            cost = (reply.input_tokens * self.prices[0] + reply.output_tokens * self.prices[1]) / 1e6
        else:
            self.tally.cost_known = False
            return 0.0
        self.tally.cost_usd += cost
        return cost

    def _warn(self, message: str) -> None:
        if message not in self.tally.warnings:
            self.tally.warnings.append(message)

    # ---- the answer -> the port's Judgement

    def _judgement(self, answer: Answer, by_id: dict[str, Candidate], summary: str | None, usage: Usage) -> Judgement:
        in_force: dict[str, Instruction] = {}
        carries: dict[str, Carry] = {}
        for item in answer.instructions:
            text = self._rule_text(by_id[item.candidate_id], item.text)
            rule = make_prohibition(text)
            reason, carry_reason = (
                " ".join(r.split())[:MAX_REASON_CHARS] or None for r in (item.reason, item.carry_reason)
            )
            carried = item.carried and summary is not None
            quote = _locate(item.quote, summary) if carried and item.quote and summary else None
            if rule.id in in_force:  # the same rule twice: carried if either says so
                if carried and not carries[rule.id].carried:
                    carries[rule.id] = Carry(rule.id, True, cue="model", reason=carry_reason, quote=quote)
                continue
            in_force[rule.id] = Instruction(id=rule.id, text=text, candidate_id=item.candidate_id, form=item.form,
                                            cue="model", reason=reason)
            carries[rule.id] = Carry(rule.id, carried, cue="model", reason=carry_reason, quote=quote)
        return Judgement(judge=self.name, model=self.model, in_force=tuple(in_force.values()),
                         carries=tuple(carries[k] for k in in_force), usage=usage)

    def _rule_text(self, candidate: Candidate, span: str) -> str:
        """The rule as a span of the candidate (whitespace collapsed), the same span every compaction names.

        The model's span, found exactly or up to case and whitespace; when it overlaps a span
        named at an earlier compaction, that earlier one (so the rule keeps its id); when it
        is not in the text at all, the candidate's head.
        """
        found = _locate(span, candidate.text)
        if found is None:
            return " ".join(candidate.text[:MAX_RULE_CHARS].split())
        start = candidate.text.find(found)
        end = start + len(found)
        spans = self._spans.setdefault(candidate.id, [])
        for s, e, text in spans:
            if s < end and start < e:
                return text
        text = " ".join(found.split())
        spans.append((start, end, text))
        return text


class RestartWithFallback(Exception):
    """Raised by :class:`FallbackJudge` when the run can still start over with the fallback judge."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class FallbackJudge:
    """The model judge, and the judge to use instead when it is unavailable (``--judge-fallback``).

    Never a silent mix of judges: at the first :class:`JudgeUnavailable`, while
    ``can_restart()`` (nothing emitted yet) it raises :class:`RestartWithFallback` so the
    caller judges the whole run again with ``fallback``; later (``--follow`` after events
    went out) it switches to ``fallback`` for the rest of the run and calls
    ``announce(reason)``. Either way every event names the judge that decided (``x_judge``).
    """

    name = "model"

    def __init__(self, primary: ModelJudge, fallback: Any, *, can_restart: Callable[[], bool],
                 announce: Callable[[str], None]) -> None:
        self.primary = primary
        self.fallback = fallback
        self.can_restart = can_restart
        self.announce = announce
        self.switched: str | None = None  # the reason, once switched

    def judge(self, candidates: Sequence[Candidate], summary: str | None,
              earlier_summaries: Sequence[str] = ()) -> Judgement:
        if self.switched is None:
            try:
                return self.primary.judge(candidates, summary, earlier_summaries)
            except JudgeUnavailable as exc:
                if self.can_restart():
                    raise RestartWithFallback(str(exc)) from None
                self.switched = str(exc)
                self.announce(self.switched)
        return self.fallback.judge(candidates, summary, earlier_summaries)


def _locate(span: str, text: str) -> str | None:
    """``span`` as it is written in ``text`` (exactly, else up to case and whitespace), or None."""
    if not span.strip():
        return None
    if span in text:
        return span
    words = span.split()
    match = re.search(r"\s+".join(re.escape(w) for w in words), text, re.IGNORECASE)
    return match.group(0) if match else None


def build_model_judge(settings: Any, *, sleep: Callable[[float], None] = time.sleep) -> ModelJudge:
    """The :class:`ModelJudge` the ``CG_JUDGE_*`` settings describe; :class:`JudgeConfigError` if they cannot.

    Keys: ``CG_JUDGE_API_KEY``, else the vendor's own variable (``ANTHROPIC_API_KEY`` /
    ``OPENAI_API_KEY``) — that one only for the vendor's own URL, so a key is never sent
    to another host.
    """
    backend_name = settings.judge_backend
    if backend_name not in BACKENDS:
        raise JudgeConfigError(f"CG_JUDGE_BACKEND={backend_name!r} is not one of {', '.join(BACKENDS)}")
    common = {"timeout": settings.judge_timeout}
    if backend_name == "claude-cli":
        backend: Any = ClaudeCliBackend(model=settings.judge_model, binary=settings.judge_claude_bin, **common)
    else:
        default_url, vendor_key, vendor_var = (
            (ANTHROPIC_URL, settings.anthropic_api_key, "ANTHROPIC_API_KEY") if backend_name == "anthropic"
            else (OPENAI_URL, settings.openai_api_key, "OPENAI_API_KEY"))
        url = (settings.judge_url or default_url).rstrip("/")
        secret = settings.judge_api_key or (vendor_key if url == default_url else None)
        key = secret.get_secret_value() if secret is not None else None
        model = settings.judge_model or (ANTHROPIC_MODEL if backend_name == "anthropic" else None)
        if model is None:
            raise JudgeConfigError(
                "the openai backend needs CG_JUDGE_MODEL (e.g. gpt-4.1-mini, or qwen2.5:14b on Ollama)"
            )
        if backend_name == "anthropic" and not key:
            where = f"{vendor_var} or CG_JUDGE_API_KEY" if url == default_url else f"CG_JUDGE_API_KEY (for {url})"
            raise JudgeConfigError(f"the anthropic backend needs an API key: set {where}")
        if backend_name == "openai" and not key and url == OPENAI_URL:
            raise JudgeConfigError(
                f"the openai backend at {url} needs an API key: set {vendor_var} or CG_JUDGE_API_KEY"
            )
        cls = AnthropicBackend if backend_name == "anthropic" else OpenAIBackend
        backend = cls(model=model, url=url, api_key=key, max_tokens=settings.judge_max_tokens, **common)
    prices = None
    if settings.judge_price_input is not None and settings.judge_price_output is not None:
        prices = (settings.judge_price_input, settings.judge_price_output)
    return ModelJudge(backend, DiskCache(settings.judge_cache_dir), retries=settings.judge_retries,
                      backoff=settings.judge_backoff, prices=prices, sleep=sleep)
