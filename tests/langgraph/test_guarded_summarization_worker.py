"""GuardedSummarization end to end: a LangChain agent (fake chat models, no network) in this
process, the real worker in its own, StatusView answering.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path

import pytest
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver

from stream.client import Guard, NotAuthoritative, StatusView
from stream.client.langgraph import GuardedSummarization
from tests.integration.harness import consume
from tests.integration.test_client_worker import WAIT, start_stack
from tests.langgraph.conftest import WORKER_PYTHON

pytestmark = pytest.mark.integration


@pytest.fixture
def stack(kafka_bootstrap: str, tmp_path: Path):
    assert WORKER_PYTHON.exists(), f"the worker runs from {WORKER_PYTHON}: run `make install` first"
    yield from start_stack(kafka_bootstrap, tmp_path, WORKER_PYTHON)


def test_a_langgraph_summary_that_drops_a_prohibition_is_refused(stack):
    settings, _ = stack
    prohibition = "Do not edit the generated files under migrations/."
    turns = ["Fix the failing test in tests/test_api.py.", prohibition, "Also run pytest -q.", "Thanks, continue.",
             "Now update the changelog.", "And the README.", "Done?"]
    model = GenericFakeChatModel(messages=(AIMessage(f"ok {i}") for i in itertools.count()))
    summarizer = FakeListChatModel(responses=["The user wants the API test fixed.", "API test fixed; docs next."])
    with Guard(settings) as guard, StatusView(settings) as view:
        middleware = GuardedSummarization(model, summarizer=summarizer, guard=guard, trigger=("messages", 6),
                                          keep=("messages", 2), carry_constraints=False)  # no store, no channel
        agent = create_agent(model, [], middleware=[middleware], checkpointer=InMemorySaver())
        for text in turns:
            out = agent.invoke({"messages": [{"role": "user", "content": text}]},
                               {"configurable": {"thread_id": "agent-1"}})
        ctx = guard.context("agent-1")
        view.wait_for(ctx, timeout=WAIT)
        section = out["messages"][0].id
        leaf = view.why("agent-1", section).degraded_by[0]
        assert section.startswith("summary-") and leaf.startswith("summary-")
        assert view.why("agent-1", leaf).open_rules == ("negative_constraint_dropped", "orphaned_referent")
        with pytest.raises(NotAuthoritative) as refused:
            view.recover_from("agent-1", section, constraint_texts=middleware.channel("agent-1").texts())
        assert f"it dropped the prohibition(s) {prohibition.rstrip('.')!r}" in str(refused.value)
        assert f"degraded by 1 node(s) under it: {leaf} (orphans " in str(refused.value)

    alerts = [json.loads(r.value) for r in asyncio.run(consume(
        settings.bootstrap_servers, settings.alerts_topic, expected=4, timeout=30, settle=0.5))]
    opened = {(a["rule"], a["node_id"]) for a in alerts if a["status"] == "open"}
    assert ("negative_constraint_dropped", leaf) in opened and ("orphaned_referent", leaf) in opened
