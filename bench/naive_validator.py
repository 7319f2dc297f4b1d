"""The validator a newcomer would write from the seed's sample: the benchmark's baseline.

Part 1 of ``make bench`` compares the engine with it.
How it measures, and why: bench/METHODS.md "naive_validator.py".
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any


def _key(constraint: Any) -> str:
    if isinstance(constraint, str):
        return " ".join(unicodedata.normalize("NFKC", constraint).casefold().split())
    return constraint["id"]


@dataclass
class _Node:
    referents: set[str]
    children: list[str]
    carried: set[str]
    raw: set[str]


@dataclass
class _Context:
    live: set[str] = field(default_factory=set)
    durable: set[str] = field(default_factory=set)
    reachable: set[str] = field(default_factory=set)
    nodes: dict[str, _Node] = field(default_factory=dict)
    frozen: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)
    orphans: dict[str, set[str]] = field(default_factory=dict)
    missing: dict[str, set[str]] = field(default_factory=dict)


class NaiveValidator:
    """Feed parsed event dicts; ``alerts`` collects ``(rule, status, node, set)`` tuples."""

    def __init__(self) -> None:
        self.contexts: dict[str, _Context] = {}
        self.alerts: list[tuple[str, str, str, tuple[str, ...]]] = []

    def process(self, event: dict[str, Any]) -> None:
        ctx = self.contexts.setdefault(event["context_id"], _Context())
        if event["event_id"] in ctx.seen:
            return
        ctx.seen.add(event["event_id"])
        if event["type"] == "artifact":
            self._artifact(ctx, event)
        else:
            self._checkpoint(ctx, event)

    def _artifact(self, ctx: _Context, event: dict[str, Any]) -> None:
        tier = ctx.durable if event.get("tier") == "durable" else ctx.live
        artifact_id = event["artifact_id"]
        was = artifact_id in ctx.reachable
        if event["op"] == "admitted":
            tier.add(artifact_id)
        else:
            tier.discard(artifact_id)
        now = artifact_id in ctx.live or artifact_id in ctx.durable
        if now:
            ctx.reachable.add(artifact_id)
        else:
            ctx.reachable.discard(artifact_id)
        if event["op"] == "evicted":
            rescan = list(ctx.nodes)  # the rescan of every node
        elif not was and now:
            # An admission can only shrink orphan sets: rescan the nodes that have one.
            rescan = [node_id for node_id, orphans in ctx.orphans.items() if orphans]
        else:
            return
        for node_id in rescan:
            self._record(ctx, "orphaned_referent", ctx.orphans, node_id,
                         ctx.nodes[node_id].referents - ctx.reachable)

    def _checkpoint(self, ctx: _Context, event: dict[str, Any]) -> None:
        node_id = event["node_id"]
        node = _Node(
            referents=set(event.get("referents") or ()),
            children=list(event.get("children") or ()),
            carried={_key(c) for c in event.get("negative_constraints") or ()},
            raw={_key(c) for c in event.get("raw_negative_constraints") or ()},
        )
        if node_id in ctx.frozen:
            return
        orphans = node.referents - ctx.reachable
        old = ctx.nodes.get(node_id)
        if old is not None:
            previously_orphaned = old.referents - ctx.reachable
            if orphans != previously_orphaned:
                ctx.frozen.add(node_id)
                self.alerts.append(("non_idempotent", "open", node_id, tuple(sorted(orphans))))
                return
        ctx.nodes[node_id] = node
        self._record(ctx, "orphaned_referent", ctx.orphans, node_id, orphans)
        self._record(ctx, "negative_constraint_dropped", ctx.missing, node_id,
                     self._required(ctx, node_id) - node.carried)

    @staticmethod
    def _required(ctx: _Context, node_id: str) -> set[str]:
        keys: set[str] = set()
        seen: set[str] = set()
        stack = [node_id]
        while stack:
            current = stack.pop()
            if current in seen or current not in ctx.nodes:
                continue
            seen.add(current)
            keys |= ctx.nodes[current].raw
            stack.extend(ctx.nodes[current].children)
        return keys

    def _record(
        self,
        ctx: _Context,
        rule: str,
        recorded: dict[str, set[str]],
        node_id: str,
        current: set[str],
    ) -> None:
        if current != recorded.get(node_id, set()):
            recorded[node_id] = current
            status = "open" if current else "resolved"
            self.alerts.append((rule, status, node_id, tuple(sorted(current))))
