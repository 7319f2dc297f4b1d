"""A deterministic hierarchical-compaction simulator over a real trajectory.

It plays a :class:`~stream.adapters.simulated.model.Trajectory` turn by turn through the
kind of compaction pipeline the seed describes and writes down what such a pipeline would
publish: the two input streams of DESIGN.md §3, interleaved in one per-context ``seq``
order. Same trajectory + same parameters => byte-identical lines. The model (live window,
leaves, durable store, hierarchy, re-compaction, referents), the survival rates and the
determinism rules: docs/ADAPTERS.md "The simulator".
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter, OrderedDict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from stream.adapters.simulated.model import Constraint, Trajectory, Turn
from stream.domain.events import LIST_FIELDS
from stream.domain.keys import constraint_key as _key

LEVELS: tuple[str, str, str] = ("leaf", "section", "root")
SCHEMA_VERSION = 1
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
MAX_LIST = 10_000  # DESIGN.md §3 size limit on any list

#: Key order of the encoded events (anything else follows, sorted).
FIELD_ORDER: tuple[str, ...] = (
    "type",
    "schema_version",
    "event_id",
    "context_id",
    "seq",
    "occurred_at",
    "artifact_id",
    "op",
    "tier",
    "kind",
    "node_id",
    "level",
    "parent_id",
    "cycle",
    *LIST_FIELDS,
    "text",
)
_ORDER_INDEX = {k: i for i, k in enumerate(FIELD_ORDER)}

Rates = tuple[float, float, float]


@dataclass(frozen=True)
class SimulationParams:
    """Knobs of the simulation. Sizes in tokens (window, low water) and artifacts (durable).

    Why the defaults (measured on the 30 shipped runs, seed 0):

    * ``window=3000, low_water=2000``: a mini-swe turn is ~320 tokens (median), so the
      live window holds ~9 turns (the README's "~8-10 turns") and each eviction batch
      is ~3 turns; even the short tau-bench runs (3.6k-6.9k tokens) compact 1-4 times.
    * ``durable_capacity=200``: at the end ~13% of the referents named by the summaries
      are unreachable (the seed reports 11-14%), concentrated in the 7 longest runs;
      short runs keep all their referents.
    * ``fanout=4``: 1-3 roots per long run, so roots are re-emitted as they grow.
    * survival rates: the seed's 71/34/9% (prohibitions) and 88/79/61% (positive
      instructions); referents 50/30/15% (summaries name a few ids, fewer higher up).
    * ``recompact_rate=0.25`` with changed referents: ~80 re-compactions of sections
      and roots, of which a handful (the ones already orphaned) change their orphan set.
    """

    window: int = 3000
    low_water: int = 2000
    durable_capacity: int = 200
    fanout: int = 4
    seed: int = 0
    prohibition_survival: Rates = (0.71, 0.34, 0.09)
    instruction_survival: Rates = (0.88, 0.79, 0.61)
    referent_survival: Rates = (0.5, 0.3, 0.15)
    recompact_rate: float = 0.25
    recompact_changes_referents: bool = True

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"window must be >= 1 token, got {self.window}")
        if not 0 <= self.low_water < self.window:
            raise ValueError(f"low water must be in [0, window={self.window}), got {self.low_water}")
        if self.durable_capacity < 0:
            raise ValueError(f"durable capacity must be >= 0, got {self.durable_capacity}")
        if self.fanout < 2:
            raise ValueError(f"fanout must be >= 2, got {self.fanout}")
        if not 0.0 <= self.recompact_rate <= 1.0:
            raise ValueError(f"recompact rate must be in [0, 1], got {self.recompact_rate}")
        for name in ("prohibition_survival", "instruction_survival", "referent_survival"):
            rates = getattr(self, name)
            if len(rates) != 3 or not all(0.0 <= float(r) <= 1.0 for r in rates):
                raise ValueError(
                    f"{name.replace('_', ' ')} must be three rates in [0, 1] (leaf,section,root), got {rates}")
            object.__setattr__(self, name, tuple(float(r) for r in rates))


def parse_rates(text: str) -> Rates:
    """``"0.71,0.34,0.09"`` -> ``(0.71, 0.34, 0.09)``; ValueError with a one-line reason."""
    try:
        rates = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise ValueError(f"expected three numbers like 0.71,0.34,0.09, got {text!r}") from None
    if len(rates) != 3 or not all(0.0 <= r <= 1.0 for r in rates):
        raise ValueError(f"expected three rates in [0, 1] (leaf,section,root), got {text!r}")
    return rates[0], rates[1], rates[2]


# --------------------------------------------------------------------------- encoding


def encode_event(event: Mapping[str, Any]) -> str:
    """One event as a JSON line body: fixed key order, compact, UTF-8 (no ``\\n``)."""
    ordered = {k: event[k] for k in sorted(event, key=lambda k: (_ORDER_INDEX.get(k, len(_ORDER_INDEX)), k))}
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def context_seed(seed: int, context_id: str) -> int:
    """The per-context RNG seed: a hash of (seed, context id), independent of order."""
    digest = hashlib.sha256(f"{seed}\x1f{context_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _conditional(rates: Rates, level: int) -> float:
    if level == 0:
        return rates[0]
    below = rates[level - 1]
    return 0.0 if below <= 0 else min(1.0, rates[level] / below)


# --------------------------------------------------------------------------- the run


@dataclass
class _Node:
    node_id: str
    level: str
    parent_id: str | None
    first_turn: int
    last_turn: int
    children: list[str] = field(default_factory=list)
    candidates: list[str] = field(default_factory=list)  # leaves: fixed, from the batch
    ref_keep: dict[str, bool] = field(default_factory=dict)
    referents: list[str] = field(default_factory=list)
    raw: dict[str, dict[str, Constraint]] = field(default_factory=lambda: {"prohibition": {}, "instruction": {}})
    keep: dict[str, dict[str, bool]] = field(default_factory=lambda: {"prohibition": {}, "instruction": {}})
    files: list[str] = field(default_factory=list)
    calls: int = 0
    version: int = 0

    def carried(self, polarity: str) -> list[Constraint]:
        return [c for cid, c in self.raw[polarity].items() if self.keep[polarity].get(cid)]


class _Run:
    """The simulation of one trajectory (one context)."""

    def __init__(self, traj: Trajectory, params: SimulationParams) -> None:
        self.traj = traj
        self.p = params
        self.ctx = traj.context_id
        self.rng = random.Random(context_seed(params.seed, traj.context_id))
        self.events: list[dict[str, Any]] = []
        self.seq = 0
        self.turn_start = 0
        self.last_t = -1
        self.live: list[Turn] = []
        self.live_tokens = 0
        self.live_refs: Counter[str] = Counter()
        self.kinds: dict[str, str] = {}
        self.durable: OrderedDict[str, None] = OrderedDict()
        self.nodes: dict[str, _Node] = {}
        self.order: list[str] = []  # node ids in creation order
        self.pending: list[_Node] = []  # leaves of the section being filled
        self.root: _Node | None = None
        self.n_leaves = self.n_sections = self.n_roots = 0
        self.cycle = 0

    # ---- event plumbing

    def _emit(self, body: dict[str, Any], detail: str) -> None:
        t = max(self.turn_start, self.last_t + 1)
        self.last_t = t
        digest = hashlib.sha256(f"{self.ctx}\x1f{self.seq}\x1f{body['type']}\x1f{detail}".encode()).hexdigest()
        event = {
            "type": body["type"],
            "schema_version": SCHEMA_VERSION,
            "event_id": f"ev-{digest[:24]}",
            "context_id": self.ctx,
            "seq": self.seq,
            "occurred_at": (EPOCH + timedelta(seconds=t)).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        event.update((k, v) for k, v in body.items() if k != "type")
        self.events.append(event)
        self.seq += 1

    def _artifact(self, artifact_id: str, op: str, tier: str) -> None:
        body = {"type": "artifact", "artifact_id": artifact_id, "op": op, "tier": tier, "kind": self.kinds[artifact_id]}
        self._emit(body, f"{artifact_id}\x1f{op}\x1f{tier}")

    def _checkpoint(self, node: _Node) -> None:
        node.version += 1
        body = {
            "type": "checkpoint",
            "node_id": node.node_id,
            "level": node.level,
            "parent_id": node.parent_id,
            "cycle": self.cycle,
            "children": list(node.children),
            "referents": node.referents[:MAX_LIST],
            "negative_constraints": [c.as_wire() for c in node.carried("prohibition")][:MAX_LIST],
            "raw_negative_constraints": [c.as_wire() for c in node.raw["prohibition"].values()][:MAX_LIST],
            "instructions": [c.as_wire() for c in node.carried("instruction")][:MAX_LIST],
            "raw_instructions": [c.as_wire() for c in node.raw["instruction"].values()][:MAX_LIST],
            "text": self._text(node),
        }
        self._emit(body, f"{node.node_id}\x1fv{node.version}")

    def _text(self, node: _Node) -> str:
        span = f"turns {node.first_turn}-{node.last_turn}"
        if node.level == "leaf":
            files = ", ".join(node.files[:4]) + (f" (+{len(node.files) - 4} more)" if len(node.files) > 4 else "")
            return f"Leaf summary of {span}: {node.calls} tool call(s)" + (f"; files {files}" if files else "") + "."
        what = "leaves" if node.level == "section" else "sections"
        return f"{node.level.capitalize()} summary of {span} over {len(node.children)} {what}."

    # ---- draws

    def _draw_referents(self, node: _Node, candidates: Sequence[str], level: int, redraw: bool = False) -> None:
        q = _conditional(self.p.referent_survival, level)
        if redraw:
            node.ref_keep = {}
        for c in candidates:
            if c not in node.ref_keep:
                node.ref_keep[c] = self.rng.random() < q
        node.referents = [c for c in dict.fromkeys(candidates) if node.ref_keep[c]]

    def _draw_constraints(self, node: _Node, polarity: str, pool: Iterable[Constraint], level: int) -> None:
        rates = self.p.prohibition_survival if polarity == "prohibition" else self.p.instruction_survival
        decided = node.keep[polarity]
        new = [c.id for c in dict.fromkeys(pool) if c.id not in decided]
        if not new:
            return
        k = min(len(new), int(len(new) * _conditional(rates, level) + self.rng.random()))
        chosen = set(self.rng.sample(range(len(new)), k))
        for i, cid in enumerate(new):
            decided[cid] = i in chosen

    # ---- the pipeline

    def run(self) -> list[dict[str, Any]]:
        for turn in self.traj.turns:
            self.turn_start = turn.index * 60
            self._admit_turn(turn)
            if self.live_tokens > self.p.window:
                batch: list[Turn] = []
                while self.live_tokens > self.p.low_water and len(self.live) > 1:
                    old = self.live.pop(0)
                    self.live_tokens -= old.tokens
                    batch.append(old)
                if batch:
                    self._compact(batch)
        if self.pending:  # the run ends: roll the pending leaves into a last section
            self.turn_start = len(self.traj.turns) * 60
            self.cycle += 1
            self._close_section()
        return self.events

    def _admit_turn(self, turn: Turn) -> None:
        for a in turn.artifacts:
            self.kinds[a.artifact_id] = a.kind
            self.live_refs[a.artifact_id] += 1
            if self.live_refs[a.artifact_id] == 1:
                self._artifact(a.artifact_id, "admitted", "live")
        self.live.append(turn)
        self.live_tokens += turn.tokens

    def _compact(self, batch: list[Turn]) -> None:
        self.cycle += 1
        leaf = self._new_node("leaf", self.n_leaves, parent=f"section-{self.n_leaves // self.p.fanout:04d}")
        self.n_leaves += 1
        leaf.first_turn, leaf.last_turn = batch[0].index, batch[-1].index
        leaf.candidates = list(dict.fromkeys(c for t in batch for c in t.referent_candidates))
        leaf.files = list(dict.fromkeys(f for t in batch for f in t.files))
        leaf.calls = sum(1 for t in batch for a in t.artifacts if a.kind == "tool_output")
        for t in batch:
            for c in t.constraints:
                leaf.raw[c.polarity].setdefault(c.id, c)
        self._draw_referents(leaf, leaf.candidates, 0)
        for polarity in ("prohibition", "instruction"):
            self._draw_constraints(leaf, polarity, leaf.raw[polarity].values(), 0)
        self._checkpoint(leaf)
        created = {leaf.node_id}

        for t in batch:  # the batch leaves the live window (through the durable store)
            for a in t.artifacts:
                self.live_refs[a.artifact_id] -= 1
                if self.live_refs[a.artifact_id] == 0:
                    del self.live_refs[a.artifact_id]
                    self._to_durable(a.artifact_id)
                    self._artifact(a.artifact_id, "evicted", "live")

        self.pending.append(leaf)
        if len(self.pending) == self.p.fanout:
            created |= self._close_section()
        self._maybe_recompact(created)

    def _to_durable(self, artifact_id: str) -> None:
        if artifact_id in self.durable:
            self.durable.move_to_end(artifact_id)
            return
        self._artifact(artifact_id, "admitted", "durable")
        self.durable[artifact_id] = None
        while len(self.durable) > self.p.durable_capacity:
            oldest, _ = self.durable.popitem(last=False)
            self._artifact(oldest, "evicted", "durable")

    def _new_node(self, level: str, index: int, parent: str | None) -> _Node:
        node = _Node(f"{level}-{index:04d}", level, parent, 0, 0)
        self.nodes[node.node_id] = node
        self.order.append(node.node_id)
        return node

    def _summarize_children(self, node: _Node, level: int) -> None:
        """(Re)compute an inner node from its children's current versions."""
        kids = [self.nodes[c] for c in node.children]
        node.first_turn, node.last_turn = kids[0].first_turn, kids[-1].last_turn
        candidates = list(dict.fromkeys(r for k in kids for r in k.referents))
        self._draw_referents(node, candidates, level)
        for polarity in ("prohibition", "instruction"):
            for k in kids:
                for cid, c in k.raw[polarity].items():
                    node.raw[polarity].setdefault(cid, c)
            pool = [c for k in kids for c in k.carried(polarity)]
            self._draw_constraints(node, polarity, pool, level)

    def _close_section(self) -> set[str]:
        section = self._new_node("section", self.n_sections, parent=f"root-{self.n_sections // self.p.fanout:04d}")
        self.n_sections += 1
        section.children = [leaf.node_id for leaf in self.pending]
        self.pending = []
        self._summarize_children(section, 1)
        self._checkpoint(section)
        if self.root is None or len(self.root.children) >= self.p.fanout:
            self.root = self._new_node("root", self.n_roots, parent=None)
            self.n_roots += 1
        self.root.children.append(section.node_id)
        self._summarize_children(self.root, 2)
        self._checkpoint(self.root)  # first emission, or a re-summarization as it grows
        return {section.node_id, self.root.node_id}

    def _maybe_recompact(self, created: set[str]) -> None:
        if self.p.recompact_rate <= 0 or self.rng.random() >= self.p.recompact_rate:
            return
        eligible = [
            n for n in self.order if n not in created and self.nodes[n].level != "leaf" and self.nodes[n].version > 0
        ]
        if not eligible:
            return
        node = self.nodes[self.rng.choice(eligible)]
        if self.p.recompact_changes_referents:
            if node.level == "leaf":
                candidates = node.candidates
            else:
                candidates = list(dict.fromkeys(r for c in node.children for r in self.nodes[c].referents))
            self._draw_referents(node, candidates, LEVELS.index(node.level), redraw=True)
        self._checkpoint(node)


def simulate(traj: Trajectory, params: SimulationParams | None = None) -> list[dict[str, Any]]:
    """The events of one trajectory, as dicts in ``seq`` order (see the module docstring)."""
    return _Run(traj, params or SimulationParams()).run()


def simulate_all(trajectories: Iterable[Trajectory],
                 params: SimulationParams | None = None) -> Iterator[dict[str, Any]]:
    """Events of several trajectories, one context after another."""
    for traj in trajectories:
        yield from simulate(traj, params)


# --------------------------------------------------------------------------- measuring


def constraint_key(c: Any) -> str | None:
    """The DESIGN.md §3 key (:func:`stream.domain.keys.constraint_key`); None for what is no constraint."""
    if isinstance(c, str) or (isinstance(c, dict) and isinstance(c.get("id"), str) and c["id"]):
        return _key(c)
    return None


@dataclass(frozen=True)
class SurvivalCell:
    """Carried-and-raw items over raw items, summed over the nodes of one level."""

    kept: int
    total: int

    @property
    def rate(self) -> float | None:
        return self.kept / self.total if self.total else None


def survival_table(events: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, SurvivalCell]]:
    """Measured survival of prohibitions and positive instructions per level.

    Computed from the checkpoint events alone (not from the simulator's state):

    * take, per ``(context_id, node_id)``, the **last** checkpoint emitted for the node;
    * for that version, ``raw`` = the keys of ``raw_negative_constraints`` and
      ``carried`` = the keys of ``negative_constraints`` (keys as in DESIGN.md §3);
    * for each level, ``kept = Σ |carried ∩ raw|`` and ``total = Σ |raw|`` over the
      nodes of that level; the survival rate is ``kept / total`` (``None`` when no
      node of that level has any raw prohibition).

    The same with ``instructions`` / ``raw_instructions`` for positive instructions.
    Result: ``{"prohibitions": {"leaf": cell, "section": cell, "root": cell},
    "instructions": {...}}``.
    """
    last: dict[tuple[str, str], Mapping[str, Any]] = {}
    for e in events:
        if e.get("type") == "checkpoint":
            last[(e["context_id"], e["node_id"])] = e
    sums = {kind: {lvl: [0, 0] for lvl in LEVELS} for kind in ("prohibitions", "instructions")}
    for e in last.values():
        level = e.get("level")
        if level not in LEVELS:
            continue
        for kind, carried_f, raw_f in (
            ("prohibitions", "negative_constraints", "raw_negative_constraints"),
            ("instructions", "instructions", "raw_instructions"),
        ):
            raw = {k for k in map(constraint_key, e.get(raw_f) or []) if k is not None}
            carried = {k for k in map(constraint_key, e.get(carried_f) or []) if k is not None}
            sums[kind][level][0] += len(raw & carried)
            sums[kind][level][1] += len(raw)
    return {kind: {lvl: SurvivalCell(*cell) for lvl, cell in by.items()} for kind, by in sums.items()}


def event_counts(events: Iterable[Mapping[str, Any]]) -> Counter[str]:
    """Counts for the ingest summary: per type, artifact op/tier, checkpoint level, re-emits."""
    counts: Counter[str] = Counter()
    seen: set[tuple[str, str]] = set()
    contexts: set[str] = set()
    for e in events:
        contexts.add(e["context_id"])
        counts[e["type"]] += 1
        if e["type"] == "artifact":
            counts[f"{e['op']} {e['tier']}"] += 1
        else:
            counts[e["level"]] += 1
            key = (e["context_id"], e["node_id"])
            if key in seen:
                counts["re-emitted"] += 1
            seen.add(key)
    counts["contexts"] = len(contexts)
    return counts
