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
ROOT = Path(__file__).resolve().parent.parent  # the directory holding the stream package
BUILD = ROOT / "stream" / "_native"
MANIFEST = "manifest.json"
FORMAT = 1

def digest(path: Path) -> str:
    """The hex SHA-256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def decide(build: Path = BUILD, env: Mapping[str, str] = os.environ,
           root: Path = ROOT) -> tuple[str, dict[str, Path] | None]:
    """``(status line, {module name: compiled file})`` when ``build`` may be used, else
    ``(why not, None)``. ``root`` holds the sources the manifest names."""
    if env.get("CG_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return "pure Python (CG_NATIVE=0)", None
    try:
        manifest = json.loads((build / MANIFEST).read_text("utf-8"))
    except FileNotFoundError:
        return "pure Python (no compiled build; make native)", None
    except (OSError, ValueError) as exc:
        return f"pure Python (unreadable build manifest: {exc})", None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return "pure Python (build manifest of another format; make native)", None
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    if manifest.get("suffix") != suffix:
        return f"pure Python (build is for {manifest.get('suffix')}, this Python loads {suffix}; make native)", None
    sources, files = manifest.get("sources"), manifest.get("files")
    if not isinstance(sources, dict) or not isinstance(files, dict):
        return "pure Python (build manifest incomplete; make native)", None
    wanted = _NAMES
    if not wanted <= set(files) or not {_source(m) for m in MODULES} <= set(sources):
        return "pure Python (build does not cover every hot module; make native)", None
    for rel, expected in sorted(sources.items()):
        try:
            same = digest(root / rel) == expected
        except OSError:
            same = False
        if not same:
            return f"pure Python (build is stale: {rel} changed; make native)", None
    paths = {name: build / str(files[name]) for name in sorted(wanted)}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        return f"pure Python (build is missing {missing[0]}; make native)", None
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


_NAMES = frozenset(MODULES) | {GROUP + "__mypyc"}


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
