"""GuardedSummarization in a real LangChain ``create_agent`` graph, with LangChain's own fake
chat models (no network); the events it emits go through the real engine (replay).

The same agent against the real broker and worker: test_guarded_summarization_worker.py.
"""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from stream.client import AsyncGuard, Guard, MemoryTransport
from stream.client.langgraph import GuardedSummarization
from stream.offline.replay import replay_lines
from stream.settings import Settings

pytestmark = pytest.mark.unit

PROHIBITION = "Do not edit the generated files under migrations/."
RULE = PROHIBITION.rstrip(".")  # the clause the prohibition matcher extracts
TURNS = ["Fix the failing test in tests/test_api.py.", PROHIBITION, "Also run pytest -q.", "Thanks, continue.",
         "Now update the changelog.", "And the README.", "Done?"]


def agent_model() -> GenericFakeChatModel:
    return GenericFakeChatModel(messages=(AIMessage(f"ok {i}") for i in itertools.count()))


def build(guard, *, summaries: list[str], store=None, **kwargs):
    model = agent_model()
    middleware = GuardedSummarization(model, summarizer=FakeListChatModel(responses=summaries), guard=guard,
                                      trigger=("messages", 6), keep=("messages", 2), **kwargs)
    return create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver(), store=store), middleware


def run_turns(agent, turns, thread="thread-1"):
    config = {"configurable": {"thread_id": thread}}
    out = None
    for text in turns:
        out = agent.invoke({"messages": [{"role": "user", "content": text}]}, config)
    return out


def events(transport: MemoryTransport) -> list[dict]:
    return [json.loads(v) for _, _, v in transport.records]


def test_a_summary_that_drops_a_prohibition_and_forgets_its_messages_opens_both_alerts():
    transport = MemoryTransport()
    with Guard(Settings(), clock=None, transport=transport) as guard:
        agent, _ = build(guard, summaries=["The user wants the API test fixed."], carry_constraints=False)
        run_turns(agent, TURNS[:4])
    evs = events(transport)
    checkpoint, = [e for e in evs if e["type"] == "checkpoint"]
    assert checkpoint["context_id"] == "thread-1" and checkpoint["level"] == "leaf"
    assert len(checkpoint["referents"]) == 5 and checkpoint["negative_constraints"] == []
    assert [c["text"] for c in checkpoint["raw_negative_constraints"]] == [RULE]
    evicted = {e["artifact_id"] for e in evs if e.get("op") == "evicted"}
    assert evicted == set(checkpoint["referents"])
    alerts = replay_lines(v for _, _, v in transport.records).alerts
    assert [(a["rule"], a["node_id"]) for a in alerts] == [
        ("orphaned_referent", checkpoint["node_id"]), ("negative_constraint_dropped", checkpoint["node_id"])]
    assert alerts[0]["orphans"] == checkpoint["referents"]


def test_with_a_store_and_the_constraint_channel_the_summary_stays_safe():
    transport, store = MemoryTransport(), InMemoryStore()
    with Guard(Settings(), clock=None, transport=transport) as guard:
        agent, _ = build(guard, summaries=["The user wants the API test fixed."], store=store)
        out = run_turns(agent, TURNS[:4])
    summary = out["messages"][0]
    assert summary.id.startswith("summary-") and f"- {RULE}" in summary.text
    evs = events(transport)
    checkpoint, = [e for e in evs if e["type"] == "checkpoint"]
    durable = [e["artifact_id"] for e in evs if e.get("tier") == "durable"]
    assert sorted(durable) == checkpoint["referents"]
    stored = store.search(("checkpoint-guard", "messages", "thread-1"), limit=100)
    assert sorted(item.key for item in stored) == checkpoint["referents"]
    assert replay_lines(v for _, _, v in transport.records).alerts == []


def test_a_re_summary_is_a_section_over_the_previous_summary():
    transport = MemoryTransport()
    with Guard(Settings(), clock=None, transport=transport) as guard:
        agent, _ = build(guard, summaries=["first summary", "second summary"], store=InMemoryStore())
        run_turns(agent, TURNS)
    first, second = [e for e in events(transport) if e["type"] == "checkpoint"]
    assert (first["level"], second["level"]) == ("leaf", "section")
    assert second["children"] == [first["node_id"]]
    assert first["node_id"] not in second["referents"]
    assert [c["text"] for c in second["negative_constraints"]] == [RULE]  # carried on up
    assert replay_lines(v for _, _, v in transport.records).alerts == []


def test_under_ainvoke_with_an_async_guard_it_emits_the_same_events():
    async def main() -> MemoryTransport:
        transport = MemoryTransport()
        async with AsyncGuard(Settings(), clock=None, transport=transport) as guard:
            agent, _ = build(guard, summaries=["The user wants the API test fixed."], carry_constraints=False)
            config = {"configurable": {"thread_id": "thread-1"}}
            for text in TURNS[:4]:
                await agent.ainvoke({"messages": [{"role": "user", "content": text}]}, config)
        return transport

    transport = asyncio.run(main())
    kinds = [(e["type"], e.get("op"), e.get("tier")) for e in events(transport)]
    assert kinds == [("artifact", "admitted", "live")] * 7 + [("artifact", "evicted", "live")] * 5 + [
        ("checkpoint", None, None)]
    assert [a["rule"] for a in replay_lines(v for _, _, v in transport.records).alerts] == [
        "orphaned_referent", "negative_constraint_dropped"]


def test_without_a_thread_id_it_asks_for_a_context_id():
    with Guard(Settings(), clock=None, transport=MemoryTransport()) as guard:
        model = agent_model()
        agent = create_agent(model, [], middleware=[GuardedSummarization(model, guard=guard, trigger=("messages", 6))])
        with pytest.raises(ValueError, match="needs a context id: pass context_id"):
            agent.invoke({"messages": [{"role": "user", "content": "hi"}]})
