"""Compiled hot modules: the engine and the worker's per-event path, built with mypyc.

``python -m stream.devtools.native build`` (run by ``make install``) compiles
:data:`MODULES` into :data:`BUILD` with a manifest of the SHA-256 of every source the
build read. :func:`install` (called when ``stream`` is imported) then loads each compiled
module in place of its ``.py`` — only while every digest still matches, so an edited
source is never shadowed by a stale build. Without a build, or with ``CG_NATIVE=0``,
everything runs as plain Python; the outputs are the same bytes either way (the unit
tier checks). Standard library only: this runs on every import of ``stream``.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Mapping, Sequence
from importlib.abc import MetaPathFinder
from pathlib import Path
from types import ModuleType

#: The modules compiled: the engine and what the worker runs per event (outputs.py is
#: async and stays interpreted).
MODULES = (
    "stream.domain.engine",
    "stream.order",
    "stream.worker.handler",
    "stream.worker.merge",
    "stream.worker.metrics",
    "stream.worker.statelog",
    "stream.worker.store",
)
#: mypyc's group: one shared library ``<GROUP>__mypyc`` beside a small shim per module.
GROUP = "checkpoint_guard_native"
#: What the finder loads compiled: the hot modules and the group's shared library.
_NAMES = frozenset(MODULES) | {GROUP + "__mypyc"}
ROOT = Path(__file__).resolve().parent.parent  # the directory holding the stream package
BUILD = ROOT / "stream" / "_native"
MANIFEST = "manifest.json"
FORMAT = 1


def digest(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: CG_NATIVE's spellings (read from the environment at import, before any settings load).
OFF, ON = ("0", "false", "no", "off"), ("", "1", "true", "yes", "on")


def decide(build: Path = BUILD, env: Mapping[str, str] = os.environ,
           root: Path = ROOT) -> tuple[str, dict[str, Path] | None]:
    """``(status line, {module name: compiled file})`` when ``build`` may be used, else
    ``(why not, None)``: CG_NATIVE not off, and every source and compiled file the manifest
    names inside ``root`` / ``build`` with the SHA-256 it records. Never raises."""
    value = env.get("CG_NATIVE", "1")
    if value.strip().lower() in OFF:
        return f"pure Python (CG_NATIVE={value.strip()})", None
    if value.strip().lower() not in ON:
        return f"pure Python (CG_NATIVE={value!r} is neither on (1) nor off (0))", None
    try:
        manifest = json.loads((build / MANIFEST).read_text("utf-8"))
    except FileNotFoundError:
        return "pure Python (no compiled build; make native)", None
    except (OSError, ValueError, RecursionError) as exc:
        return f"pure Python (unreadable build manifest: {type(exc).__name__}; make native)", None
    try:
        return _check(manifest, build, root)
    except Exception as exc:  # noqa: BLE001 - a damaged manifest means plain Python, never a failed import
        return f"pure Python (unreadable build manifest: {type(exc).__name__}; make native)", None


def _inside(base: Path, rel: object) -> Path | None:
    """``base / rel`` when ``rel`` is a relative path that stays inside ``base``, else None."""
    if not isinstance(rel, str) or not rel or "\0" in rel or Path(rel).is_absolute():
        return None
    path = base / rel
    return path if path.resolve().is_relative_to(base.resolve()) else None


def _check(manifest: object, build: Path, root: Path) -> tuple[str, dict[str, Path] | None]:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return "pure Python (build manifest of another format; make native)", None
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if manifest.get("suffix") != suffix:
        return f"pure Python (build is for {manifest.get('suffix')}, this Python loads {suffix}; make native)", None
    sources, files, binaries = manifest.get("sources"), manifest.get("files"), manifest.get("binaries")
    if not isinstance(sources, dict) or not isinstance(files, dict) or not isinstance(binaries, dict):
        return "pure Python (build manifest incomplete; make native)", None
    if not _NAMES <= set(files) or not {_source(m) for m in MODULES} <= set(sources):
        return "pure Python (build does not cover every hot module; make native)", None
    for base, digests, what in ((root, sources, "stale"), (build, binaries, "damaged")):
        for rel, expected in sorted(digests.items()):
            path = _inside(base, rel)
            try:
                same = path is not None and digest(path) == expected
            except OSError:
                same = False
            if not same:
                return f"pure Python (build is {what}: {rel!r} changed; make native)", None
    paths = {}
    for name in sorted(_NAMES):
        path = _inside(build, files[name])
        if path is None or files[name] not in binaries:
            return f"pure Python (build is missing the compiled {name}; make native)", None
        paths[name] = path
    return f"compiled ({len(MODULES)} modules, mypyc {manifest.get('mypyc', '?')})", paths


def _source(module: str) -> str:
    """A module's source path relative to :data:`ROOT` (``stream/domain/engine.py``)."""
    return module.replace(".", "/") + ".py"


class _Finder(MetaPathFinder):
    """Finds the compiled file of each hot module (and of the group's shared library).

    The build is checked once, when the first hot module is imported: commands that never
    import one pay nothing."""

    def __init__(self, build: Path = BUILD) -> None:
        self.build = build
        self.decided: tuple[str, dict[str, Path] | None] | None = None

    def decision(self) -> tuple[str, dict[str, Path] | None]:
        if self.decided is None:
            self.decided = decide(self.build)
        return self.decided

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _NAMES:
            return None
        file = (self.decision()[1] or {}).get(fullname)
        if file is None:
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        return importlib.util.spec_from_file_location(fullname, file, loader=loader)


def _finder() -> _Finder | None:
    return next((f for f in sys.meta_path if isinstance(f, _Finder)), None)


def install() -> None:
    """Put the (lazy) finder of the compiled modules in front of the sources, once."""
    if _finder() is None:
        sys.meta_path.insert(0, _Finder())


def status() -> str:
    """One line: whether the hot modules run compiled, and if not why (the worker logs it)."""
    finder = _finder()
    line = finder.decision()[0] if finder is not None else "pure Python (stream.native not installed)"
    loaded = [m for m in MODULES if m in sys.modules]
    native = [m for m in loaded if isinstance(getattr(sys.modules[m], "__loader__", None),
                                               importlib.machinery.ExtensionFileLoader)]
    if line.startswith("compiled") and len(native) < len(loaded):
        return f"mixed: {len(native)} of {len(loaded)} loaded hot modules compiled (one was imported before stream)"
    return line
