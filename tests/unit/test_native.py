"""The compiled hot modules (stream/native.py, stream/devtools/native.py): a build is used
only while it matches the sources, and compiled or not, the worker writes the same bytes."""

from __future__ import annotations

import importlib.machinery
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from stream import native
from stream.devtools.native import main, sources
from stream.domain.state import TABLES
from stream.worker.store import PartitionState, PartitionStore

pytestmark = pytest.mark.unit

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def fake_build(tmp_path: Path) -> tuple[Path, Path]:
    """A source tree holding every hot module and a build whose manifest matches it
    (the compiled files are stand-ins: decide() checks their digests, it does not load them)."""
    root, build = tmp_path / "src", tmp_path / "build"
    files, digests, binaries = {}, {}, {}
    for name in native.MODULES:
        source = root / native._source(name)
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(f"# {name}\n")
        digests[native._source(name)] = native.digest(source)
    for name in sorted(native._NAMES):
        rel = name.replace(".", "/") + SUFFIX
        (build / rel).parent.mkdir(parents=True, exist_ok=True)
        (build / rel).write_bytes(b"\x7fELF" + name.encode())
        files[name] = rel
        binaries[rel] = native.digest(build / rel)
    manifest = {"format": native.FORMAT, "suffix": SUFFIX, "mypyc": "test", "sources": digests, "files": files,
                "binaries": binaries}
    (build / native.MANIFEST).write_text(json.dumps(manifest))
    return root, build


def edit_manifest(build: Path, **changes: object) -> None:
    manifest = json.loads((build / native.MANIFEST).read_text())
    manifest.update(changes)
    (build / native.MANIFEST).write_text(json.dumps(manifest))


def test_a_build_that_matches_its_sources_is_used(tmp_path):
    root, build = fake_build(tmp_path)
    line, paths = native.decide(build, {}, root)
    assert line.startswith("compiled (7 modules") and paths is not None
    assert set(paths) == set(native.MODULES) | {native.GROUP + "__mypyc"}
    assert paths["stream.domain.engine"] == build / ("stream/domain/engine" + SUFFIX)


ENGINE_SO = "stream/domain/engine" + SUFFIX


@pytest.mark.parametrize("case, why", [
    ("off", "(CG_NATIVE=0)"),
    ("off spelled out", "(CG_NATIVE=off)"),
    ("neither on nor off", "CG_NATIVE='maybe' is neither on (1) nor off (0)"),
    ("no manifest", "no compiled build"),
    ("unreadable", "unreadable build manifest: JSONDecodeError"),
    ("nested too deep", "unreadable build manifest: RecursionError"),
    ("format", "another format"),
    ("suffix", "this Python loads"),
    ("module left out", "does not cover every hot module"),
    ("no binaries", "build manifest incomplete"),
    ("source edited", "build is stale: 'stream/worker/store.py' changed"),
    ("source gone", "build is stale: 'stream/order.py' changed"),
    ("source outside the tree", "build is stale: '/etc/hostname' changed"),
    ("source with a NUL", "build is stale: 'stream/x\\x00.py' changed"),
    ("file truncated", f"build is damaged: '{ENGINE_SO}' changed"),
    ("file gone", "build is damaged: 'stream/worker/merge"),
    ("file outside the build", "build is damaged: '../x.so' changed"),
    ("file not digested", "build is missing the compiled stream.order"),
])
def test_a_build_that_does_not_match_is_refused_with_the_reason(tmp_path, case, why):
    root, build = fake_build(tmp_path)
    manifest = json.loads((build / native.MANIFEST).read_text())
    env = {"CG_NATIVE": {"off": "0", "off spelled out": "off", "neither on nor off": "maybe"}.get(case, "1")}
    if case == "no manifest":
        (build / native.MANIFEST).unlink()
    elif case == "unreadable":
        (build / native.MANIFEST).write_text("{")
    elif case == "nested too deep":
        (build / native.MANIFEST).write_text("[" * 100_000 + "]" * 100_000)
    elif case == "format":
        edit_manifest(build, format=native.FORMAT + 1)
    elif case == "suffix":
        edit_manifest(build, suffix=".cpython-39-x86_64-linux-gnu.so")
    elif case == "module left out":
        del manifest["files"]["stream.worker.metrics"]
        edit_manifest(build, files=manifest["files"])
    elif case == "no binaries":
        edit_manifest(build, binaries=None)
    elif case == "source edited":
        (root / "stream/worker/store.py").write_text("# edited\n")
    elif case == "source gone":
        (root / "stream/order.py").unlink()
    elif case in ("source outside the tree", "source with a NUL"):
        rel = "/etc/hostname" if case == "source outside the tree" else "stream/x\x00.py"
        edit_manifest(build, sources={**manifest["sources"], rel: "0" * 64})
    elif case == "file truncated":
        (build / ENGINE_SO).write_bytes(b"\x7f")
    elif case == "file gone":
        (build / ("stream/worker/merge" + SUFFIX)).unlink()
    elif case == "file outside the build":
        (tmp_path / "x.so").write_bytes(b"\x7fELF")
        manifest["files"]["stream.order"] = "../x.so"
        edit_manifest(build, files=manifest["files"],
                      binaries={**manifest["binaries"], "../x.so": native.digest(tmp_path / "x.so")})
    elif case == "file not digested":
        del manifest["binaries"]["stream/order" + SUFFIX]
        edit_manifest(build, binaries=manifest["binaries"])
    line, paths = native.decide(build, env, root)
    assert paths is None and line.startswith("pure Python (") and why in line, line


def test_the_manifest_covers_every_stream_module_the_compiled_ones_import():
    covered = set(sources())
    assert {native._source(m) for m in native.MODULES} <= covered
    # imported by the hot modules: mypyc may inline their constants
    assert {"stream/domain/events.py", "stream/domain/outputs.py", "stream/wire.py", "stream/settings.py",
            "stream/worker/outputs.py", "stream/domain/state.py"} <= covered
    assert "stream/worker/runtime.py" not in covered and "stream/commands/ingest.py" not in covered


def test_the_status_says_what_runs_and_ci_runs_compiled():
    line, paths = native.decide()
    assert native.status() == line or native.status().startswith("mixed")
    engine = sys.modules["stream.domain.engine"]
    compiled = isinstance(engine.__loader__, importlib.machinery.ExtensionFileLoader)
    assert compiled == (paths is not None)
    if os.environ.get("CI", "").lower() == "true" and os.environ.get("CG_NATIVE") != "0":
        # CI proves the compiled path: `make install` builds it (a C compiler is on the CI machine)
        assert compiled, line
    assert main(["status"]) == (0 if compiled else 3)


def run_worker(env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-m", "tests.unit.native_run"], capture_output=True, text=True,
                          env={**os.environ, **env}, cwd=native.ROOT, timeout=300, check=True)
    return json.loads(done.stdout)


def test_compiled_and_plain_python_write_the_same_records():
    plain = run_worker({"CG_NATIVE": "0"})
    default = run_worker({"CG_NATIVE": "1"})
    assert plain.pop("native") == "pure Python (CG_NATIVE=0)"
    assert default.pop("native") == native.decide(env={})[0]  # whatever CG_NATIVE this test runs under
    assert plain == default
    # the run wrote every kind of record (the comparison is not of empty topics)
    for topic in ("checkpoint-alerts", "checkpoint-status", "checkpoint-verdicts", "guard-deadletter",
                  "faults-state"):
        assert plain[topic][0] > 0, topic


def test_partition_state_has_one_view_per_table_in_table_order(tmp_path):
    store = PartitionStore(tmp_path / "p")
    try:
        state = PartitionState(store)
        views = [getattr(state, name) for name in TABLES]
        assert [id(v) for v in views] == [id(v) for v in state._views] and len(set(map(id, views))) == len(TABLES)
        assert [v.index for v in views] == list(range(len(TABLES)))
    finally:
        store.close()


def test_the_import_hook_uses_the_standard_library_only():
    from tests.unit.test_purity import imports_in_source

    names = [name for _, name in imports_in_source(Path(native.__file__).read_text("utf-8"), "stream")]
    assert names and [n for n in names if n.partition(".")[0] not in sys.stdlib_module_names] == []


def test_the_build_command_explains_itself_and_refuses_an_unknown_command(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0 and "mypyc" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_:
        main(["compile"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_a_build_without_a_c_compiler_fails_in_one_line_and_keeps_what_runs(monkeypatch, capsys):
    before = native.decide(env={})
    monkeypatch.setenv("CC", "/nonexistent/cc")
    assert main(["build", "--force"]) == 1
    err = capsys.readouterr().err.strip()
    keeps = "the current build stays in use" if before[1] is not None else "checkpoint-guard runs as plain Python"
    assert err == f"checkpoint-guard native: error: cannot build: no C compiler found (install gcc, or set CC); {keeps}"
    assert native.decide(env={}) == before  # nothing was touched


def test_a_source_that_does_not_parse_fails_the_build_in_one_line(tmp_path, monkeypatch, capsys):
    for name in native.MODULES:
        (tmp_path / native._source(name)).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / native._source(name)).write_text("from stream.domain import events\n")
    (tmp_path / "stream/domain/events.py").write_text("def (:\n")
    monkeypatch.setattr(native, "ROOT", tmp_path)  # the tree the build reads (the real build stays where it is)
    assert main(["build", "--force"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("checkpoint-guard native: error: cannot build: a source does not parse (SyntaxError: ")
