"""``python -m stream explain CONTEXT NODE`` — a node's history from the topics."""

from __future__ import annotations

import json
import sys

from stream.commands._base import argument, command, fail, option
from stream.commands._forensics import each
from stream.offline.forensics import Explainer
from stream.settings import get_settings

settings = get_settings()


@command(
    argument("context_id", type=str),
    argument("node_id", type=str),
    option("--json", "as_json", is_flag=True, default=False, help="Exact JSON instead of a readable view."),
)
def explain(context_id: str, node_id: str, as_json: bool) -> int:
    """Explain why a node was (or was not) flagged, from the input topics.

    Replays the context's events (read from Kafka without a consumer group) and shows
    every version of the node with its referents and constraints, each reachability
    change of its referents (event id, topic/partition/offset), every alert raised or
    resolved and what triggered it, every status change, and whether the node is
    authoritative now (and which nodes below it degrade it). Long sets show their first
    ten and how many more there are; --json has each record as published (sets cut to
    1,000, with set_size / degraded_count).
    Exit code 1 (one line on stderr; --json still prints the empty history) when the node
    never appeared.
    """
    ex = Explainer(context_id, node_id, seq_gap_limit=settings.seq_gap_limit, max_ledger=settings.max_ledger)
    read = each(settings.input_topics, ex.feed, context=context_id).read
    h = ex.finish()
    if as_json:
        print(json.dumps(h.to_json(), indent=2, ensure_ascii=False))
    if not h.exists:
        sys.stdout.flush()
        fail(f"node {node_id!r} never appeared in context {context_id!r} ({read} input records of that "
             f"context read); check both ids (`checkpoint-guard export --context {context_id}` lists its events)",
             code=1)
    if as_json:
        return 0
    from rich.console import Console
    from rich.table import Table

    con = Console()
    state = "[green]authoritative[/]" if h.authoritative else "[red]NOT authoritative[/]"
    extra = (" — frozen" if h.frozen else "") + (f" — open: {', '.join(h.open_rules)}" if h.open_rules else "")
    if h.degraded_count:
        extra += f" — degraded by {_few(h.degraded_by, h.degraded_count)}"
    con.rule(f"{context_id} / {node_id}: {state}{extra}")
    t = Table(title="versions")
    for col in ("#", "event", "at", "verdict", "referents", "carried", "raw prohibitions"):
        t.add_column(col, overflow="fold")
    for i, v in enumerate(h.versions, 1):
        t.add_row(str(i), v["event_id"], f"{v['topic']}[{v['partition']}]@{v['offset']}", str(v["verdict"]),
                  ", ".join(v["referents"]) or "-", ", ".join(v["negative_constraints"]) or "-",
                  ", ".join(v["raw_negative_constraints"]) or "-")
    con.print(t)
    r = Table(title="reachability changes of its referents")
    for col in ("event", "at", "artifact", "op", "tier"):
        r.add_column(col, overflow="fold")
    for c in h.reachability:
        r.add_row(c["event_id"], f"{c['topic']}[{c['partition']}]@{c['offset']}", c["artifact_id"], c["op"], c["tier"])
    con.print(r)
    a = Table(title="alerts")
    for col in ("rule", "status", "set", "trigger", "at"):
        a.add_column(col, overflow="fold")
    for al in h.alerts:
        tr = al["trigger"]
        items = al["orphans"] or al["missing_constraints"] or ()
        a.add_row(al["rule"], al["status"], _few(items, al.get("set_size")) or "-", tr["event_id"],
                  f"{tr['topic']}[{tr['partition']}]@{tr['offset']}")
    con.print(a)
    st = Table(title="status changes (what checkpoint-status recorded)")
    for col in ("authoritative", "open rules", "degraded by", "trigger", "at"):
        st.add_column(col, overflow="fold")
    for s in h.statuses:
        tr = s["trigger"]
        st.add_row("yes" if s["authoritative"] else "no", ", ".join(s["open_rules"]) or "-",
                   _few(s["degraded_by"], s["degraded_count"]) or "-", tr["event_id"],
                   f"{tr['topic']}[{tr['partition']}]@{tr['offset']}")
    con.print(st)
    return 0


def _few(ids: list[str] | tuple[str, ...], total: int | None, shown: int = 10) -> str:
    """The first ``shown`` ids and how many more the set holds (a record lists at most
    1,000 of it; ``total``: its ``set_size`` / ``degraded_count``)."""
    more = max(total or 0, len(ids)) - min(len(ids), shown)
    return ", ".join(ids[:shown]) + (f" (+{more} more)" if more > 0 else "")
