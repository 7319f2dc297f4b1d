"""The house rules a reader trusts (issue 26): short module docstrings, no import cycle, no stale words,
links that resolve.

Each ``KNOWN_*`` list names the files other branches were changing when the rule came in
(phase 1 of issue 26); phase 2 empties them. An entry that no longer breaks its rule fails
``test_known_exceptions_are_still_needed``: remove it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STREAM = REPO / "stream"
#: Never scanned: installs, caches, build output, data (sample traces, fixtures).
SKIP_DIRS = {".git", ".venv", ".venv-langgraph", "var", "build", "dist", ".ruff_cache", ".mypy_cache",
             ".pytest_cache", ".hypothesis", "node_modules", "samples", "fixtures", "__pycache__"}
MAX_DOCSTRING_LINES = 15

# TODO(issue 26 phase 2): empty these lists.
KNOWN_LONG_DOCSTRINGS: set[str] = set()
#: Import cycles (each as the sorted module names of one strongly connected component).
KNOWN_CYCLES: list[list[str]] = []
#: (file, stale phrase) pairs.
KNOWN_STALE_WORDS: set[tuple[str, str]] = set()
KNOWN_BROKEN_LINKS: set[tuple[str, str]] = set()


def _files(*suffixes: str) -> list[Path]:
    found = []
    for path in REPO.rglob("*"):
        rel = path.relative_to(REPO)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts[:-1]):
            continue
        if path.is_file() and (path.suffix in suffixes or path.name in suffixes):
            found.append(path)
    return sorted(found)


def _rel(path: Path) -> str:
    return path.relative_to(REPO).as_posix()


# ----------------------------------------------------------------------------- docstrings


def long_docstrings() -> dict[str, int]:
    """Python file -> lines of its module docstring, for every docstring over the limit."""
    out = {}
    for path in _files(".py"):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc is not None and len(doc.strip().splitlines()) > MAX_DOCSTRING_LINES:
            out[_rel(path)] = len(doc.strip().splitlines())
    return out


def test_no_module_docstring_is_a_manual():
    """A module docstring says what the module is for in a few lines; manuals live in docs/."""
    over = {f: n for f, n in long_docstrings().items() if f not in KNOWN_LONG_DOCSTRINGS}
    assert over == {}, f"module docstrings over {MAX_DOCSTRING_LINES} lines (move the manual to docs/): {over}"


# ----------------------------------------------------------------------------- import cycles


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """stream module -> the stream modules it imports (any import, at any depth of the file)."""
    modules = {_module_name(p): p for p in STREAM.rglob("*.py")}

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        deps: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                deps.update(known(a.name) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                deps.update(known(f"{base}.{a.name}") for a in node.names)
        graph[name] = {d for d in deps if d is not None and d != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_the_stream_modules():
    found = [c for c in cycles(import_graph()) if c not in KNOWN_CYCLES]
    assert found == [], f"import cycles: {found}"


# ----------------------------------------------------------------------------- stale words

TEXT_SUFFIXES = (".py", ".md", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".sh", "Makefile", "Dockerfile")
#: phrase -> pattern. "faust tables" is stale where a line says the worker uses them (a line with
#: a negation says it does not: "the worker keeps no faust tables").
STALE = {
    "stream.agents": re.compile(r"\bstream[./]agents\b"),
    "topics and tables": re.compile(r"\btopics and tables\b", re.IGNORECASE),
    "faust tables": re.compile(r"\bfaust tables?\b", re.IGNORECASE),
}
NEGATION = re.compile(r"\b(?:no|not|never|without|instead of)\b|n't\b", re.IGNORECASE)


def stale_words() -> set[tuple[str, str]]:
    found = set()
    for path in _files(*TEXT_SUFFIXES):
        if path == Path(__file__):
            continue
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            for phrase, pattern in STALE.items():
                if pattern.search(line) and not (phrase == "faust tables" and NEGATION.search(line)):
                    found.add((_rel(path), phrase))
    return found


def test_no_text_names_what_the_worker_no_longer_has():
    """No faust tables, no ``stream.agents`` module: the worker's state is RocksDB + the state log."""
    assert stale_words() - KNOWN_STALE_WORDS == set()


# ----------------------------------------------------------------------------- links

LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def broken_links() -> set[tuple[str, str]]:
    """(markdown file, target) for every relative link whose file does not exist."""
    found = set()
    for doc in _files(".md"):
        text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.DOTALL)  # code is not prose
        for target in LINK.findall(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
                continue  # a URL, a mail address, an anchor of the same page
            path = target.split("#", 1)[0]
            if not (doc.parent / path).exists():
                found.add((_rel(doc), target))
    return found


def test_every_relative_link_of_the_docs_resolves():
    assert broken_links() - KNOWN_BROKEN_LINKS == set()


# ----------------------------------------------------------------------------- the lists shrink


@pytest.mark.parametrize("name", ["docstrings", "cycles", "stale words", "links"])
def test_known_exceptions_are_still_needed(name):
    """An exception that is fixed leaves its list (the lists only shrink)."""
    if name == "docstrings":
        assert KNOWN_LONG_DOCSTRINGS - set(long_docstrings()) == set()
    elif name == "cycles":
        assert [c for c in KNOWN_CYCLES if c not in cycles(import_graph())] == []
    elif name == "stale words":
        assert KNOWN_STALE_WORDS - stale_words() == set()
    else:
        assert KNOWN_BROKEN_LINKS - broken_links() == set()
