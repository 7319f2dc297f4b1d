"""The neutral trajectory model: a run of an agent as turns, what each turn brings into context.

A :class:`Trajectory` is one run (one context) as a sequence of :class:`Turn` s, the unit a
compactor evicts; a turn lists the :class:`Artifact` s it brings into the live context (ids
stable across runs), the ids a summary of it may name (``referent_candidates``) and the
constraint sentences it states. The format adapters build turns with :class:`TurnBuilder`;
this module knows no format (:mod:`stream.adapters.simulated.formats` is the registry).
Plain Python: no faust, no aiokafka.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from stream.adapters.common import MAX_ID, AdapterError, short_hash

ArtifactKind = Literal["raw_span", "tool_output", "file", "durable_record"]
Polarity = Literal["prohibition", "instruction"]

#: The real trajectories shipped with the project, inside the package so that ``pip
#: install`` carries them (MIT; LICENSE and PROVENANCE.md kept beside them).
DEFAULT_TRACES = Path(__file__).resolve().parents[2] / "samples" / "traces"


@dataclass(frozen=True, slots=True)
class Artifact:
    """One thing a turn puts into the live context, under a stable id."""

    artifact_id: str
    kind: ArtifactKind


@dataclass(frozen=True, slots=True)
class Constraint:
    """A prohibition or positive-instruction sentence, keyed by a content hash."""

    id: str
    text: str
    polarity: Polarity

    def as_wire(self) -> dict[str, str]:
        return {"id": self.id, "text": self.text}


@dataclass(frozen=True, slots=True)
class Turn:
    """The unit of eviction: what one step of the run adds to the live context."""

    index: int
    tokens: int
    label: str
    artifacts: tuple[Artifact, ...]
    referent_candidates: tuple[str, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    files: tuple[str, ...] = ()  # normalized paths touched (for summary text only)

    @property
    def prohibitions(self) -> tuple[Constraint, ...]:
        return tuple(c for c in self.constraints if c.polarity == "prohibition")

    @property
    def instructions(self) -> tuple[Constraint, ...]:
        return tuple(c for c in self.constraints if c.polarity == "instruction")


@dataclass(frozen=True, slots=True)
class Trajectory:
    """One agent run = one context."""

    context_id: str
    source: str  # file path (and ``#index`` inside an array file)
    turns: tuple[Turn, ...]
    meta: dict[str, str] = field(default_factory=dict, compare=False)

    @property
    def tokens(self) -> int:
        return sum(t.tokens for t in self.turns)

    @property
    def artifact_ids(self) -> set[str]:
        return {a.artifact_id for t in self.turns for a in t.artifacts}


class Loaded(NamedTuple):
    """What :func:`load_trajectories` returns: the runs read, and the files that failed."""

    trajectories: list[Trajectory]
    errors: list[AdapterError]


# --------------------------------------------------------------------------- builders


class TurnBuilder:
    """Collects one turn's artifacts/candidates/constraints, de-duplicated, in order."""

    def __init__(self, index: int, label: str) -> None:
        self.index = index
        self.label = label
        self.tokens = 0
        self._artifacts: dict[str, Artifact] = {}
        self._candidates: dict[str, None] = {}
        self._constraints: dict[str, Constraint] = {}
        self._files: dict[str, None] = {}

    def add(self, artifact_id: str, kind: ArtifactKind, *, referent: bool = False) -> str:
        if len(artifact_id) > MAX_ID:  # DESIGN.md §3: ids are at most 1,024 characters
            artifact_id = f"{artifact_id[: MAX_ID - 14]}#{short_hash(artifact_id)}"
        self._artifacts.setdefault(artifact_id, Artifact(artifact_id, kind))
        if referent:
            self._candidates.setdefault(artifact_id, None)
        return artifact_id

    def add_constraint(self, c: Constraint) -> None:
        if c.id not in self._constraints:
            self._constraints[c.id] = c
            self.add(c.id, "raw_span")

    def add_file(self, path: str) -> None:
        self._files.setdefault(path, None)

    @property
    def empty(self) -> bool:
        return not self._artifacts

    def build(self) -> Turn:
        return Turn(
            index=self.index,
            tokens=max(1, int(self.tokens)),
            label=self.label,
            artifacts=tuple(self._artifacts.values()),
            referent_candidates=tuple(self._candidates),
            constraints=tuple(self._constraints.values()),
            files=tuple(self._files),
        )


def estimate_tokens(text: str) -> int:
    """chars/4, the fallback when a source has no real token counts (within ~15%)."""
    return max(1, (len(text) + 3) // 4)


class Turns(list[TurnBuilder]):
    """The turns of one chat-shaped run (a list of messages with roles), built in order."""

    def new(self, label: str) -> TurnBuilder:
        turn = TurnBuilder(len(self), label)
        self.append(turn)
        return turn

    def user(self, mid: str) -> TurnBuilder:
        """A ``user`` message: a new turn holding its span."""
        turn = self.new("user")
        turn.add(f"span:user:{mid}", "raw_span")
        return turn

    def tool_output(self, message: dict[str, Any], mid: str, source: Any, where: str) -> TurnBuilder:
        """A ``tool`` message: its output (named by its ``tool_call_id``) joins the latest turn;
        AdapterError naming ``where`` when there is none yet."""
        if not self:
            raise AdapterError(source, f"{where} is a tool output before any step")
        tcid = message.get("tool_call_id")
        self[-1].add(f"output:{tcid}" if isinstance(tcid, str) and tcid else f"output:{mid}", "tool_output")
        return self[-1]


def step_tool_calls(cur: TurnBuilder, message: dict[str, Any], mid: str, content: str, source: Any,
                    where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Add an assistant message's reasoning span and tool calls (by their real ids) to ``cur``.

    Yields ``(call_id, call)`` for each call so the format's adapter can add what the call
    touches (files, entity ids). Raises AdapterError naming ``where`` on a malformed list.
    """
    if content.strip():
        cur.add(f"reasoning:{mid}", "raw_span")
    calls = message.get("tool_calls") or []
    if not isinstance(calls, list):
        raise AdapterError(source, f"{where}.tool_calls is not a list")
    for n, call in enumerate(calls):
        if not isinstance(call, dict):
            raise AdapterError(source, f"{where}.tool_calls[{n}] is not an object")
        cid = call["id"] if isinstance(call.get("id"), str) and call["id"] else f"call:{mid}.{n}"
        cur.add(cid, "raw_span", referent=True)
        yield cid, call


@dataclass(frozen=True, slots=True)
class Format:
    """One trajectory format of the registry: how to recognise a parsed file, how to read its runs.

    ``read(data, path)`` returns the runs of one file; a broken run inside an array file is
    returned as its :class:`AdapterError` (the other runs still load).
    """

    name: str
    looks_like: Callable[[Any], bool]
    read: Callable[[Any, Path], list[Trajectory | AdapterError]]
