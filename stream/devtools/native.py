"""Build the compiled hot modules (:mod:`stream.native`) with mypyc.

``python -m stream.devtools.native build|status|clean [--force] [-v]``. ``build`` type-checks
and compiles :data:`stream.native.MODULES` (mypy's own config in ``pyproject.toml``), writes
them under ``stream/_native/`` with a manifest of the SHA-256 of every ``stream`` source the
compiled modules import (mypyc may inline their constants), and is a no-op while that build
still matches. Needs mypy (the ``test`` extra), setuptools and a C compiler; ~40 s on 2 cores.
Errors are one line (exit 1); the compiler's output goes to ``stream/_native.log``.
"""

from __future__ import annotations

import argparse
import ast
import importlib.machinery
import json
import os
import shutil
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stream import native

LOG = native.ROOT / "stream" / "_native.log"


def _module_file(root: Path, module: str) -> Path | None:
    base = root / module.replace(".", "/")
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def sources(root: Path = native.ROOT) -> list[str]:
    """The ``stream`` sources the compiled modules import, transitively (paths relative to
    ``root``, sorted): what the manifest digests."""
    seen: set[str] = set()
    todo = list(native.MODULES)
    while todo:
        module = todo.pop()
        file = _module_file(root, module)
        if file is None or module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        package = parts if file.name == "__init__.py" else parts[:-1]
        for node in ast.walk(ast.parse(file.read_text("utf-8"), str(file))):
            if isinstance(node, ast.Import):
                todo.extend(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
                name = ".".join(p for p in (base, node.module or "") if p)
                todo.append(name)
                todo.extend(f"{name}.{a.name}" for a in node.names)
            else:
                continue
        for i in range(1, len(parts)):  # the packages above it run too
            todo.append(".".join(parts[:i]))
    return sorted(str(f.relative_to(root)) for m in seen if m.split(".")[0] == "stream"
                  and (f := _module_file(root, m)) is not None)


@contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (the C compiler's too) to ``log``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log.open("wb") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _compiler() -> str | None:
    cc = os.environ.get("CC") or str(sysconfig.get_config_var("CC") or "cc")
    return shutil.which(cc.split()[0]) if cc.split() else None


def build(force: bool = False, verbose: bool = False) -> str:
    """Compile the hot modules into :data:`stream.native.BUILD`; the status line after.
    RuntimeError (one line) when mypyc, setuptools or a C compiler is missing or the build fails."""
    line, paths = native.decide(env={})
    if paths is not None and not force:
        return f"up to date: {line}"
    try:
        from mypyc.build import mypycify
        from setuptools import Distribution
        from setuptools.command.build_ext import build_ext
    except ImportError as exc:
        raise RuntimeError(f"cannot build: {exc.name} is not installed (pip install -e '.[test]')") from None
    if _compiler() is None:
        raise RuntimeError("cannot build: no C compiler found (install gcc, or set CC); "
                           "checkpoint-guard runs as plain Python without it")
    root = native.ROOT
    files = sources(root)
    digests = {rel: native.digest(root / rel) for rel in files}  # before compiling: a later edit is stale
    import mypy.version
    started = time.monotonic()
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    here = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="cg-native-") as tmp:
        try:
            with _output_to(LOG):
                os.chdir(tmp)  # setuptools must not read the project's pyproject.toml as its own
                exts = mypycify(
                    [str(root / native._source(m)) for m in native.MODULES]
                    + ["--config-file", str(root / "pyproject.toml"), "--no-warn-unused-configs"],
                    opt_level="3", group_name=native.GROUP, target_dir=str(Path(tmp) / "build"),
                    verbose=verbose)
                dist = Distribution({"name": native.GROUP, "ext_modules": exts})
                cmd = build_ext(dist)
                cmd.build_lib = str(Path(tmp) / "lib")
                cmd.build_temp = str(Path(tmp) / "temp")
                cmd.ensure_finalized()
                cmd.run()
        except (Exception, SystemExit) as exc:  # mypy reports a type error with SystemExit
            raise RuntimeError(f"build failed: {_first_error(LOG) or f'{type(exc).__name__}: {exc}'}; "
                               f"the compiler's output: {LOG}") from None
        finally:
            os.chdir(here)
        lib = Path(tmp) / "lib"
        built = {name: _built(lib, name, suffix) for name in sorted(native._NAMES)}
        missing = [n for n, p in built.items() if p is None]
        if missing:
            raise RuntimeError(f"build failed: no compiled file for {missing[0]}; the compiler's output: {LOG}")
        staging = native.BUILD.with_name("_native.new")
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(lib, staging)
    manifest = {"format": native.FORMAT, "suffix": suffix, "mypyc": mypy.version.__version__,
                "python": sys.version.split()[0], "sources": digests,
                "files": {n: str(p.relative_to(lib)) for n, p in built.items() if p is not None}}
    (staging / native.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", "utf-8")
    shutil.rmtree(native.BUILD, ignore_errors=True)
    staging.rename(native.BUILD)
    line, paths = native.decide(env={})
    if paths is None:
        raise RuntimeError(f"build written but not usable: {line}")
    return f"built in {time.monotonic() - started:.0f} s: {line}"


def _first_error(log: Path) -> str | None:
    """The first error line of mypy or the C compiler in ``log``."""
    try:
        lines = log.read_text("utf-8", "replace").splitlines()
    except OSError:
        return None
    return next((line.strip() for line in lines if ": error:" in line or line.startswith("error:")), None)


def _built(lib: Path, name: str, suffix: str) -> Path | None:
    file = lib / (name.replace(".", "/") + suffix)
    return file if file.is_file() else None


def clean() -> str:
    """Remove the build (the next import runs plain Python)."""
    for path in (native.BUILD, native.BUILD.with_name("_native.new")):
        shutil.rmtree(path, ignore_errors=True)
    LOG.unlink(missing_ok=True)
    return f"removed {native.BUILD}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m stream.devtools.native",
        description="Compile checkpoint-guard's engine and per-event worker path with mypyc "
                    "(used only while the build matches the sources; CG_NATIVE=0 turns it off).")
    parser.add_argument("command", choices=("build", "status", "clean"),
                        help="build: compile (no-op when up to date); status: say what runs; clean: remove the build")
    parser.add_argument("--force", action="store_true", help="build even when the build is up to date")
    parser.add_argument("-v", "--verbose", action="store_true", help="mypyc's progress into the log")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(f"checkpoint-guard native: {build(force=args.force, verbose=args.verbose)}")
        elif args.command == "clean":
            print(f"checkpoint-guard native: {clean()}")
        else:
            line = native.decide()[0]
            print(f"checkpoint-guard native: {line}")
            return 0 if line.startswith("compiled") else 3
    except RuntimeError as exc:
        print(f"checkpoint-guard native: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
