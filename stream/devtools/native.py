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
import fcntl
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
from typing import Any, BinaryIO

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
        for i in range(1, len(parts)):  # the packages above it run too
            todo.append(".".join(parts[:i]))
    return sorted(str(f.relative_to(root)) for m in seen if m.split(".")[0] == "stream"
                  and (f := _module_file(root, m)) is not None)


@contextmanager
def _output_to(out: BinaryIO) -> Iterator[None]:
    """Send this process's stdout and stderr (the C compiler's too) to ``out``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
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
    RuntimeError (one line) when mypyc, setuptools or a C compiler is missing or the build fails;
    the previous build stays in place until the new one is complete."""
    line, paths = native.decide(env={})
    if paths is not None and not force:
        off = native.decide()[1] is None
        return f"up to date: {line}" + (" (but CG_NATIVE turns it off in this environment)" if off else "")
    try:
        import mypy.version
        from mypyc.build import mypycify
        from setuptools import Distribution
        from setuptools.command.build_ext import build_ext
    except ImportError as exc:
        raise RuntimeError(f"cannot build: {exc.name} is not installed (mypy's mypyc and setuptools: "
                           "pip install -e '.[test]')") from None
    keeps = "the current build stays in use" if paths is not None else "checkpoint-guard runs as plain Python"
    if _compiler() is None:
        raise RuntimeError(f"cannot build: no C compiler found (install gcc, or set CC); {keeps}")
    root = native.ROOT
    try:
        digests = {rel: native.digest(root / rel) for rel in sources(root)}  # read before mypy reads them
    except (OSError, SyntaxError, ValueError) as exc:
        raise RuntimeError(f"cannot build: a source does not parse ({type(exc).__name__}: {exc}); {keeps}") from None
    print("checkpoint-guard native: compiling the hot modules with mypyc (~40 s; README \"Compiled hot modules\")",
          file=sys.stderr, flush=True)
    with _lock():
        started = time.monotonic()
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        with tempfile.TemporaryDirectory(prefix="cg-native-") as tmp:
            lib = Path(tmp) / "lib"
            _compile(mypycify, Distribution, build_ext, root, Path(tmp), verbose)
            built = {name: _built(lib, name, suffix) for name in sorted(native._NAMES)}
            missing = [n for n, p in built.items() if p is None]
            if missing:
                raise RuntimeError(f"build failed: no compiled file for {missing[0]}; the compiler's output: {LOG}")
            if {rel: native.digest(root / rel) for rel in digests} != digests:
                raise RuntimeError(f"build discarded: a source changed while it was compiled; run it again; {keeps}")
            files = {n: str(p.relative_to(lib)) for n, p in built.items() if p is not None}
            manifest = {"format": native.FORMAT, "suffix": suffix, "mypyc": mypy.version.__version__,
                        "python": sys.version.split()[0], "sources": digests, "files": files,
                        "binaries": {rel: native.digest(lib / rel) for rel in files.values()}}
            (lib / native.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", "utf-8")
            staging, old = native.BUILD.with_name("_native.new"), native.BUILD.with_name("_native.old")
            for leftover in (staging, old):
                shutil.rmtree(leftover, ignore_errors=True)
            shutil.copytree(lib, staging)
        if native.BUILD.exists():
            native.BUILD.rename(old)  # aside, not removed, until the new build is in place
        staging.rename(native.BUILD)
        shutil.rmtree(old, ignore_errors=True)
    line, paths = native.decide(env={})
    if paths is None:
        raise RuntimeError(f"build written but not usable: {line}")
    return f"built in {time.monotonic() - started:.0f} s: {line}"


def _compile(mypycify: Any, distribution: Any, build_ext: Any, root: Path, tmp: Path, verbose: bool) -> None:
    """mypyc and the C compiler, their output in :data:`LOG`, into ``tmp / "lib"``."""
    here = os.getcwd()
    try:
        LOG.unlink(missing_ok=True)  # never report an earlier build's error
        log = LOG.open("wb")
    except OSError as exc:
        raise RuntimeError(f"cannot build: cannot write {LOG} ({exc.strerror or exc})") from None
    try:
        with log, _output_to(log):
            os.chdir(tmp)  # setuptools must not read the project's pyproject.toml as its own
            exts = mypycify(
                [str(root / native._source(m)) for m in native.MODULES]
                + ["--config-file", str(root / "pyproject.toml"), "--no-warn-unused-configs"],
                opt_level="3", group_name=native.GROUP, target_dir=str(tmp / "build"), verbose=verbose)
            cmd = build_ext(distribution({"name": native.GROUP, "ext_modules": exts}))
            cmd.build_lib = str(tmp / "lib")
            cmd.build_temp = str(tmp / "temp")
            cmd.ensure_finalized()
            cmd.run()
    except (Exception, SystemExit) as exc:  # mypy reports a type error with SystemExit
        raise RuntimeError(f"build failed: {_first_error(LOG) or f'{type(exc).__name__}: {exc}'}; "
                           f"the compiler's output: {LOG}") from None
    finally:
        os.chdir(here)


@contextmanager
def _lock() -> Iterator[None]:
    """One build at a time per checkout (an flock beside the build)."""
    try:
        fh = native.BUILD.with_name("_native.lock").open("a")
    except OSError as exc:
        raise RuntimeError(f"cannot build: cannot write in {native.BUILD.parent} ({exc.strerror or exc})") from None
    with fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print("checkpoint-guard native: another build is running; waiting for it", file=sys.stderr, flush=True)
            fcntl.flock(fh, fcntl.LOCK_EX)
        yield


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
    """Remove the build (the next import runs plain Python); RuntimeError (one line) if it cannot."""
    for path in (native.BUILD, native.BUILD.with_name("_native.new"), native.BUILD.with_name("_native.old")):
        try:
            shutil.rmtree(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            raise RuntimeError(f"cannot remove {path} ({exc.strerror or exc})") from None
    for path in (LOG, native.BUILD.with_name("_native.lock")):
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise RuntimeError(f"cannot remove {path} ({exc.strerror or exc})") from None
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
    except KeyboardInterrupt:
        print("checkpoint-guard native: interrupted; the previous build, if any, is unchanged", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
