"""A hierarchical compaction pipeline that tells checkpoint-guard what it does, then asks
before recovering. Needs a broker, the topics and a worker (README "Emit events from your
own pipeline"; `make example` starts them all)."""

import sys
import uuid

from stream.client import ConstraintChannel, Guard, GuardError, NotAuthoritative, StatusView, collect_referents

SPANS = {  # the raw context: artifact id -> text
    "span-1": "Fix the failing test in tests/test_api.py.",
    "span-2": "Do not edit the generated files under migrations/.",
    "span-3": "The traceback points at api/views.py, line 40.",
}


def summarize(text: str) -> str:  # your LLM call; like many, this one drops the prohibition
    return "Fix the API test; the traceback points at api/views.py."


channel = ConstraintChannel()  # prohibitions kept outside the text being summarized
context_id = f"example-{uuid.uuid4().hex[:8]}"
try:
    with Guard() as guard, StatusView() as view:
        ctx = guard.context(context_id)
        for span_id in SPANS:
            ctx.admitted(span_id, kind="raw_span")
        prepared = channel.prepare(SPANS.values())
        leaf_text = summarize(prepared.text)
        ctx.checkpoint("leaf-1", "leaf", referents=collect_referents(SPANS), text=channel.attach(leaf_text, prepared),
                       **channel.checkpoint_fields(prepared))           # the leaf carries the prohibition
        root_text = summarize(leaf_text)
        ctx.checkpoint("root", "root", children=["leaf-1"], text=root_text,
                       negative_constraints=channel.carried_by(root_text))  # the root does not
        for span_id in SPANS:
            ctx.evicted(span_id)  # out of the window, and never stored durably: the leaf's referents are gone
        ctx.flush()
        view.wait_for(ctx)  # read-your-writes: the worker has processed every event above
        print(view.why(context_id, "leaf-1"))
        try:
            view.recover_from(context_id, "root", constraint_texts=channel.texts())
        except NotAuthoritative as refused:
            print(f"refused: {refused}")
except (GuardError, TimeoutError) as exc:  # no broker, no topics, no worker: one line, not a traceback
    sys.exit(f"pipeline.py: error: {exc} (`make example` starts a broker, the topics and a worker for it)")
