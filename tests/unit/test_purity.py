"""The decision engine is pure: ``stream/domain`` imports only the standard library.

DESIGN.md §2: the rules live in a pure engine (no faust/aiokafka import) that the
worker, the offline replay and the tests all drive. Two independent checks keep it so:

* a static walk of every import statement in every source file under ``stream/domain``
  (module level, inside functions, under ``TYPE_CHECKING`` — all of them);
* a dynamic check: import every domain module in a fresh interpreter and look at
  ``sys.modules`` — this also catches an import made by a module the walk allowed.

Allowed: the standard library (minus ``asyncio``: an engine that needs an event loop is
not a fold), ``stream.domain`` itself and :data:`DATA_STRUCTURES` (pure-Python containers:
no I/O, no framework, no event loop). Everything else — faust, aiokafka, mode,
pydantic, any other third-party package, and the rest of ``stream`` (arrows point
inward) — fails the test.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from stream import native

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
DOMAIN = REPO / "stream" / "domain"
FORBIDDEN = ("faust", "aiokafka", "mode", "asyncio", "pydantic", "pydantic_core", "pydantic_settings", "rocksdict")
#: The engine's sorted sets (DESIGN.md §4 Bounded outputs: changed per key, listed first 1,000).
DATA_STRUCTURES = ("sortedcontainers",)


def domain_files() -> list[Path]:
    return sorted(DOMAIN.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, absolute module name)`` of every import in the file, relative ones resolved."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    return imports_in_source(path.read_text("utf-8"), package)


def imports_in_source(source: str, package: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                found.append((node.lineno, ".".join(base + ([node.module] if node.module else []))))
            else:
                found.append((node.lineno, node.module or ""))
    return sorted(found)


def why_not_allowed(name: str) -> str | None:
    root = name.partition(".")[0]
    if root in FORBIDDEN:
        return "framework import"
    if name == "stream.domain" or name.startswith("stream.domain."):
        return None
    if root == "stream":
        return "import from outside stream.domain (arrows point inward)"
    if root in sys.stdlib_module_names or root in DATA_STRUCTURES:
        return None
    return "third-party import"


def test_the_domain_package_has_source_files_to_check():
    names = {p.name for p in domain_files()}
    assert {"__init__.py", "engine.py", "events.py", "state.py"} <= names


@pytest.mark.parametrize("path", domain_files(), ids=lambda p: p.name)
def test_domain_modules_import_only_the_standard_library_and_the_domain(path):
    offenders = [
        f"{path.relative_to(REPO)}:{line}: {name} ({why})"
        for line, name in imported_modules(path)
        if (why := why_not_allowed(name))
    ]
    assert offenders == []


@pytest.mark.parametrize("path", domain_files(), ids=lambda p: p.name)
def test_domain_modules_make_no_dynamic_imports(path):
    tree = ast.parse(path.read_text("utf-8"))
    dynamic = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Name) and node.func.id == "__import__")
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
        )
    ]
    assert dynamic == []


def test_the_import_walk_sees_nested_relative_and_forbidden_imports():
    source = (
        "import json\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    import pydantic\n"
        "def f():\n"
        "    from faust import App\n"
        "    import asyncio.events\n"
        "from . import events\n"
        "from .. import wire\n"
        "import mode.utils\n"
        "import numpy\n"
    )
    names = [name for _, name in imports_in_source(source, "stream.domain")]
    assert [(n, why_not_allowed(n)) for n in names if why_not_allowed(n)] == [
        ("pydantic", "framework import"),
        ("faust", "framework import"),
        ("asyncio.events", "framework import"),
        ("stream", "import from outside stream.domain (arrows point inward)"),
        ("mode.utils", "framework import"),
        ("numpy", "third-party import"),
    ]
    assert "stream.domain" in names


CHECK = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
modules = json.loads(sys.argv[2])
before = set(sys.modules)
import importlib
for name in modules:
    importlib.import_module(name)
new = sorted(set(sys.modules) - before - {"importlib"})
print(json.dumps({"new": new, "all": sorted(sys.modules)}))
"""


def test_importing_the_domain_loads_no_framework_or_third_party_module(tmp_path):
    modules = [module_name(p) for p in domain_files()]
    proc = subprocess.run(
        [sys.executable, "-I", "-c", CHECK, str(REPO), json.dumps(modules)],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout)
    assert set(modules) <= set(loaded["new"])
    assert [m for m in loaded["all"] if m.partition(".")[0] in FORBIDDEN] == []
    # the package itself, its import hook for the compiled build (stdlib only) and that build's shared library
    package = {"stream", "stream.native", native.GROUP + "__mypyc"}
    offenders = [m for m in loaded["new"] if m not in package and why_not_allowed(m)]
    assert offenders == []
