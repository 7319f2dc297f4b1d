"""The format registry: which files are trajectories, which format reads each, every run loaded.

:data:`FORMATS` lists the formats in the order they are tried (each module owns its
:class:`~stream.adapters.simulated.model.Format`); a file no format recognises is an
:class:`~stream.adapters.common.AdapterError`, and one bad file never stops the others.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from stream.adapters.common import AdapterError, json_error, json_value_problem
from stream.adapters.simulated import swe_agent, tau_bench
from stream.adapters.simulated.model import Format, Loaded, Trajectory

#: The registry, in the order the formats are tried on a parsed file.
FORMATS: tuple[Format, ...] = (swe_agent.FORMAT, tau_bench.FORMAT)

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
                errors.append(AdapterError(
                    path, "not a trajectory file (expected *.traj.json or a tau-bench *.json array)"))
            else:
                found.setdefault(path.as_posix(), path)
        elif path.exists():  # a device, a socket, a FIFO
            errors.append(AdapterError(path, "not a regular file or directory"))
        else:
            errors.append(AdapterError(path, "no such file or directory"))
    return [found[k] for k in sorted(found)], errors


def load_file(path: str | Path) -> list[Trajectory]:
    """Every run in one file; :class:`AdapterError` on the first problem."""
    runs = _load_file(Path(path))
    for run in runs:
        if isinstance(run, AdapterError):
            raise run
    return [run for run in runs if isinstance(run, Trajectory)]


def _load_file(path: Path) -> list[Trajectory | AdapterError]:
    """Runs of one file; a broken run inside an array file is returned as its error."""
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
        return [AdapterError(path, f"not valid JSON: {json_error(exc)}")]
    except ValueError as exc:  # an integer over Python's digit limit (sys.get_int_max_str_digits)
        return [AdapterError(path, json_value_problem(exc))]
    except RecursionError:
        return [AdapterError(path, "JSON nested too deeply")]
    for fmt in FORMATS:
        if fmt.looks_like(data):
            try:
                return fmt.read(data, path)
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
                errors.append(AdapterError(
                    run.source, f"duplicate context_id {run.context_id!r} (already read from {seen[run.context_id]})"))
                continue
            seen[run.context_id] = run.source
            trajectories.append(run)
    return Loaded(trajectories, errors)
