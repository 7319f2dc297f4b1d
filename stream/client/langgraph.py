"""LangChain/LangGraph: every summary the agent writes becomes a checkpoint.

:class:`GuardedSummarization` is LangChain v1's ``SummarizationMiddleware`` that also tells
checkpoint-guard what it did, on the context of the LangGraph thread. Install
``checkpoint-guard[langgraph]`` in the agent's environment, never the worker's (LangChain
brings orjson, which switches faust's JSON codec). The events it emits, and
``carry_constraints``: docs/CLIENT.md "LangGraph".
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.messages import AnyMessage, ToolMessage

from stream.client.constraints import ConstraintChannel, collect_referents
from stream.client.guard import AsyncGuard, AsyncGuardContext, Guard

#: Summary text kept in a checkpoint (informational): far under the 1 MiB message limit.
MAX_TEXT_CHARS = 65_536


def _is_summary(message: AnyMessage) -> bool:
    return (message.additional_kwargs or {}).get("lc_source") == "summarization"


#: One call on a guard context: (method name, positional arguments, keyword arguments).
_Call = tuple[str, tuple[Any, ...], dict[str, Any]]


def _text(message: AnyMessage) -> str:
    text = message.text
    return text if isinstance(text, str) else str(message.content)


class _Thread:
    """What the middleware remembers of one context: live ids, its constraint channel."""

    __slots__ = ("live", "channel")

    def __init__(self) -> None:
        self.live: set[str] = set()
        self.channel = ConstraintChannel()


class GuardedSummarization(SummarizationMiddleware):
    """:class:`SummarizationMiddleware` whose summaries are checkpoints (module docstring).

    ``guard``: a started :class:`~stream.client.Guard` (sync agents, ``invoke``) or
    :class:`~stream.client.AsyncGuard` (``ainvoke``). ``context_id``: default the
    thread id of the run (a checkpointer is then required). Other arguments are
    SummarizationMiddleware's (``trigger``, ``keep``, ``summary_prompt``, ...).
    """

    def __init__(self, model: Any, *, guard: Guard | AsyncGuard, context_id: str | None = None,
                 store_namespace: tuple[str, ...] = ("checkpoint-guard", "messages"),
                 carry_constraints: bool = True, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.guard = guard
        self.context_id = context_id
        self.store_namespace = tuple(store_namespace)
        self.carry_constraints = carry_constraints
        self._threads: dict[str, _Thread] = {}

    def channel(self, context_id: str) -> ConstraintChannel:
        """The constraint channel of a context (its ``texts()`` name keys in ``recover_from``)."""
        return self._thread(context_id).channel

    def _thread(self, context_id: str) -> _Thread:
        t = self._threads.get(context_id)
        if t is None:
            t = self._threads[context_id] = _Thread()
        return t

    def _context_id(self, runtime: Any) -> str:
        if self.context_id is not None:
            return self.context_id
        info = getattr(runtime, "execution_info", None)
        thread_id = getattr(info, "thread_id", None)
        if not thread_id:
            raise ValueError("GuardedSummarization needs a context id: pass context_id=..., or run the agent "
                             "with a checkpointer and config={'configurable': {'thread_id': ...}}")
        return str(thread_id)

    # ---------------------------------------------------------------- planning (pure)

    def _admissions(self, context_id: str, messages: list[AnyMessage]) -> list[_Call]:
        thread = self._thread(context_id)
        calls = []
        for m in messages:
            if m.id and not _is_summary(m) and m.id not in thread.live:
                thread.live.add(m.id)
                kind = "tool_output" if isinstance(m, ToolMessage) else "raw_span"
                calls.append(("admitted", (m.id,), {"tier": "live", "kind": kind}))
        return calls

    def _summarized(self, context_id: str, messages: list[AnyMessage], result: dict[str, Any],
                    store: Any) -> list[_Call]:
        """The events of one summarization; gives the summary message its node id."""
        thread = self._thread(context_id)
        new = result["messages"]
        summary = next(m for m in new[1:] if _is_summary(m))
        kept = {m.id for m in new if m is not summary}
        covered = [m for m in messages if m.id not in kept]
        children = [m.id for m in covered if _is_summary(m)]
        raw = [m for m in covered if not _is_summary(m)]
        node_id = "summary-" + hashlib.sha256("\n".join(m.id or "" for m in covered).encode()).hexdigest()[:16]
        summary.id = node_id
        prepared = thread.channel.prepare(_text(m) for m in raw)
        summary_text = _text(summary)
        if self.carry_constraints:
            summary.content = thread.channel.attach(str(summary.content), prepared)
            constraints = thread.channel.checkpoint_fields(prepared)
        else:
            constraints = {"raw_negative_constraints": [c.as_wire() for c in prepared.raw],
                           "negative_constraints": thread.channel.carried_by(summary_text)}
        calls: list[_Call] = []
        if store is not None:
            namespace = (*self.store_namespace, context_id)
            for m in raw:
                store.put(namespace, m.id, {"type": m.type, "content": m.content, "name": m.name})
                calls.append(("admitted", (m.id,), {"tier": "durable"}))
        for m in raw:
            thread.live.discard(m.id)
            calls.append(("evicted", (m.id,), {"tier": "live"}))
        calls.append(("checkpoint", (node_id, "section" if children else "leaf"), {
            "children": children, "referents": collect_referents(m.id for m in raw),
            "text": _text(summary)[:MAX_TEXT_CHARS], **constraints}))
        return calls

    # ---------------------------------------------------------------- hooks

    def before_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        if not isinstance(self.guard, Guard):
            raise TypeError("GuardedSummarization with an AsyncGuard runs under ainvoke/astream only")
        messages = state["messages"]
        self._ensure_message_ids(messages)
        context_id = self._context_id(runtime)
        ctx = self.guard.context(context_id)
        for name, args, kwargs in self._admissions(context_id, messages):
            getattr(ctx, name)(*args, **kwargs)
        result = super().before_model(state, runtime)
        if result is None:
            return None
        for name, args, kwargs in self._summarized(context_id, messages, result, runtime.store):
            getattr(ctx, name)(*args, **kwargs)
        ctx.flush()
        return result

    async def abefore_model(self, state: Any, runtime: Any) -> dict[str, Any] | None:
        messages = state["messages"]
        self._ensure_message_ids(messages)
        context_id = self._context_id(runtime)
        ctx = self.guard.context(context_id)
        calls = self._admissions(context_id, messages)
        result = await super().abefore_model(state, runtime)
        if result is not None:
            calls += self._summarized(context_id, messages, result, runtime.store)
        for name, args, kwargs in calls:
            out = getattr(ctx, name)(*args, **kwargs)
            if asyncio.iscoroutine(out):
                await out
        if result is not None:
            if isinstance(self.guard, Guard):
                await asyncio.to_thread(ctx.flush)
            else:
                assert isinstance(ctx, AsyncGuardContext)
                await ctx.flush()
        return result
