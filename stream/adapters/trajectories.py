"""Real agent trajectories, read into one neutral shape the simulator understands.

A :class:`Trajectory` is a run of an agent as a sequence of :class:`Turn` s. A turn is
the unit a compactor evicts (an assistant step with its tool outputs, a user message,
the opening instructions); it lists the :class:`Artifact` s it brings into the live
context (in order of appearance, ids stable across runs), the ids a summary of it may
name (``referent_candidates``) and the constraint sentences it states.

Two sources are understood (see ``traces/README.md``):

* mini-swe-agent ``*.traj.json`` — :mod:`stream.adapters.swe_agent`;
* tau-bench result arrays (``[{task_id, traj, info, ...}]``) — :mod:`stream.adapters.tau_bench`.

Errors::

    AdapterError            a file (or one run in it) cannot be read; the message is one
                            line, "<path>: <problem>" — fix or remove that file; the
                            other files are still processed.

This module and its siblings are plain Python (no faust, no aiokafka): the CLI in
:mod:`stream.commands.ingest` is only a shell around them.
"""

from __future__ import annotations

import hashlib
import json
import sys
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from stream.errors import GuardError

MAX_ID = 1024
ArtifactKind = Literal["raw_span", "tool_output", "file", "durable_record"]
Polarity = Literal["prohibition", "instruction"]



#: The real trajectories shipped with the project, inside the package so that ``pip
#: install`` carries them (MIT; LICENSE and PROVENANCE.md kept beside them).
DEFAULT_TRACES = Path(__file__).resolve().parents[1] / "samples" / "traces"

class AdapterError(GuardError):
    """A trajectory file that cannot be turned into events (one-line message).

    Not fatal to an ingest: the file (or the one run inside an array file) is skipped
    and reported; fix or remove it and ingest again.
    """

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = " ".join(str(problem).split())  # always one line
        super().__init__(f"{self.path}: {self.problem}")


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


def short_hash(text: str, n: int = 12) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:n]


# --------------------------------------------------------------------------- constraints

#: Cues that make a sentence a prohibition (checked first: "must not" is negative).
NEGATION_CUES = re.compile(
    r"\b(?:do\s+not|don't|cannot|can\s*not|can't|must\s+not|mustn't|never|"
    r"should\s+not|shouldn't|may\s+not|not\s+allowed|not\s+permitted|not\s+possible|"
    r"but\s+not|avoid)\b",
    re.IGNORECASE,
)
#: Cues of a positive instruction: modal verbs and "always"...
POSITIVE_CUES = re.compile(
    r"\b(?:always|must|should|needs?\s+to|make\s+sure|ensure|required?|only)\b", re.IGNORECASE
)
#: ...or a sentence that starts with an imperative verb.
IMPERATIVE_START = re.compile(
    r"^(?:analy[sz]e|ask|check|collect|create|edit|follow|include|inspect|list|obtain|"
    r"provide|run|submit|transfer|use|verify|write)\b",
    re.IGNORECASE,
)
_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_TAG_LINE = re.compile(r"^\s*</?[A-Za-z_][\w-]*>\s*$")


def constraint_key_text(text: str) -> str:
    """The DESIGN.md §3 key of a string constraint (NFKC, casefold, collapsed spaces)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def make_constraint(text: str, polarity: Polarity) -> Constraint:
    """A constraint whose id is a hash of its normalized text (same sentence, same id)."""
    prefix = "prohibition" if polarity == "prohibition" else "instruction"
    return Constraint(f"{prefix}:{short_hash(constraint_key_text(text))}", text, polarity)


def iter_sentences(text: str, *, skip_blocks: Sequence[str] = ()) -> Iterator[str]:
    """Sentences of a markdown-ish instruction text: one per bullet line or per '. '.

    Headings, code fences (and what is inside them), lone XML-ish tag lines and the
    content of the tags named in ``skip_blocks`` (e.g. an example response) are skipped.
    """
    in_fence = False
    skipping: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if skipping:
            if line.lower().startswith(f"</{skipping}"):
                skipping = None
            continue
        opened = next((t for t in skip_blocks if line.lower().startswith(f"<{t}")), None)
        if opened:
            skipping = opened
            continue
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if in_fence or not line or line.startswith("#") or _TAG_LINE.match(line):
            continue
        line = re.sub(r"</?[A-Za-z_][\w-]*>", " ", line)  # inline <IMPORTANT> etc.
        line = _LIST_MARKER.sub("", line).strip()
        for sentence in _SENTENCE_SPLIT.split(line):
            sentence = " ".join(sentence.replace("**", "").split())
            if len(sentence) >= 12:
                yield sentence


_CONDITION = re.compile(r"\b(?:if|unless|when|whether)\b", re.IGNORECASE)


def _is_prohibition(sentence: str) -> bool:
    """A negation cue in a main clause ("If X, you should not Y" yes; "iff X cannot Y" no)."""
    for cue in NEGATION_CUES.finditer(sentence):
        before = sentence[: cue.start()]
        cond = list(_CONDITION.finditer(before))
        if not cond or "," in before[cond[-1].end() :]:
            return True
    return False


def extract_constraints(text: str, *, skip_blocks: Sequence[str] = ()) -> list[Constraint]:
    """Prohibitions (negation cues) and positive instructions (modal/imperative) of a text."""
    out: dict[str, Constraint] = {}
    for sentence in iter_sentences(text, skip_blocks=skip_blocks):
        if _is_prohibition(sentence):
            c = make_constraint(sentence, "prohibition")
        elif POSITIVE_CUES.search(sentence) or IMPERATIVE_START.match(sentence):
            c = make_constraint(sentence, "instruction")
        else:
            continue
        out.setdefault(c.id, c)
    return list(out.values())


# --------------------------------------------------------------------------- discovery

_SKIP_NAMES = {"license", "licence", "provenance", "readme", "notice", "copying"}


def _skippable(path: Path) -> bool:
    stem = path.name.split(".", 1)[0].lower()
    return stem in _SKIP_NAMES or path.suffix.lower() in {".md", ".txt", ".rst"}


def discover(paths: Iterable[str | Path]) -> tuple[list[Path], list[AdapterError]]:
    """Trajectory files under ``paths`` (files or directories), sorted by path.

    Directories are searched recursively for ``*.json`` (which covers ``*.traj.json``
    and tau-bench arrays); LICENSE, PROVENANCE and markdown files are skipped. A path
    that does not exist, or an explicit file that is not JSON, is an error.
    """
    found: dict[str, Path] = {}
    errors: list[AdapterError] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            for f in path.rglob("*.json"):
                if f.is_file() and not _skippable(f):
                    found.setdefault(f.as_posix(), f)
        elif path.is_file():
            if path.suffix.lower() != ".json":
                errors.append(AdapterError(path, "not a trajectory file (expected *.traj.json or a tau-bench *.json array)"))
            else:
                found.setdefault(path.as_posix(), path)
        else:
            errors.append(AdapterError(path, "no such file or directory"))
    return [found[k] for k in sorted(found)], errors


def json_value_problem(exc: ValueError) -> str:
    """One line for a ``ValueError`` of ``json.loads`` that is not a syntax error: an integer too long to convert."""
    limit = sys.get_int_max_str_digits()
    if "integer string conversion" in str(exc) or "digits" in str(exc):
        return f"not readable JSON: an integer of more than {limit:,} digits (Python's limit for converting one)"
    return f"not readable JSON: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"


def load_file(path: str | Path) -> list[Trajectory]:
    """Every run in one file; :class:`AdapterError` on the first problem."""
    runs = _load_file(Path(path))
    for run in runs:
        if isinstance(run, AdapterError):
            raise run
    return runs  # type: ignore[return-value]


def _load_file(path: Path) -> list[Trajectory | AdapterError]:
    """Runs of one file; a broken run inside an array file is returned as its error."""
    from stream.adapters import swe_agent, tau_bench

    try:
        raw = path.read_bytes()
    except OSError as exc:
        return [AdapterError(path, f"cannot read: {exc.strerror or exc}")]
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [AdapterError(path, f"not UTF-8 (byte {exc.start})")]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return [AdapterError(path, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")]
    except ValueError as exc:  # an integer over Python's digit limit (sys.get_int_max_str_digits)
        return [AdapterError(path, json_value_problem(exc))]
    except RecursionError:
        return [AdapterError(path, "JSON nested too deeply")]
    try:
        if swe_agent.looks_like(data):
            return [swe_agent.parse(data, path)]
        if tau_bench.looks_like(data):
            return tau_bench.parse(data, path)
    except AdapterError as exc:
        return [exc]
    return [
        AdapterError(
            path,
            "unknown trajectory format (expected a mini-swe-agent object with 'messages' "
            "or a tau-bench array of {task_id, traj})",
        )
    ]


def load_trajectories(paths: Iterable[str | Path]) -> Loaded:
    """Load every trajectory under ``paths``; a bad file is reported, the rest still load.

    Runs come out in sorted path order (array order inside a file). A context id seen
    twice is an error for the later run.
    """
    files, errors = discover(paths)
    trajectories: list[Trajectory] = []
    seen: dict[str, str] = {}
    for f in files:
        for run in _load_file(f):
            if isinstance(run, AdapterError):
                errors.append(run)
                continue
            if run.context_id in seen:
                errors.append(AdapterError(run.source, f"duplicate context_id {run.context_id!r} (already read from {seen[run.context_id]})"))
                continue
            seen[run.context_id] = run.source
            trajectories.append(run)
    return Loaded(trajectories, errors)


def step_tool_calls(cur: "TurnBuilder", message: dict, mid: str, content: str, source: Any, where: str) -> Iterator[tuple[str, dict]]:
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
