"""The rules judge's regexes compile on first use (a hook call compiles only what it runs), to the same patterns."""

from __future__ import annotations

import subprocess
import sys

from stream.adapters.compaction import cues, prohibitions


def test_a_lazy_regex_compiles_to_the_same_pattern_and_takes_its_globals_place() -> None:
    # in a fresh interpreter: in this one, earlier tests may have compiled every pattern already
    code = (
        "import re, stream.adapters.compaction.prohibitions as p\n"
        "lazy = {n: v for n, v in vars(p).items() if isinstance(v, p._Lazy)}\n"
        "name, proxy = next(iter(lazy.items()))\n"
        "proxy.match('')\n"  # the first use compiles it
        "compiled = vars(p)[name]\n"
        "assert isinstance(compiled, re.Pattern)\n"
        "assert compiled == re.compile(proxy.pattern, proxy.flags_given)\n"
        "for n, v in lazy.items():\n"  # every pattern compiles, with the flags given
        "    assert v.flags == re.compile(v.pattern, v.flags_given).flags, n\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "ok"
    assert isinstance(prohibitions._Lazy, type)


def test_importing_the_judge_compiles_neither_the_regexes_nor_the_foreign_tables() -> None:
    code = (
        "import stream.adapters.compaction.judge_rules, stream.adapters.compaction.prohibitions as p, "
        "stream.adapters.compaction.cues as c; "
        "n = sum(isinstance(v, p._Lazy) for v in vars(p).values()); print(n, len(c.FOREIGN._compiled))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) >= 100 and out[1] == "0"


def test_the_foreign_tables_compile_per_language_and_read_alike() -> None:
    tables = cues._Tables(cues._FOREIGN_SPEC)
    assert "es" in tables and "xx" not in tables and tables.get("xx") is None and not tables._compiled
    es = tables["es"]
    assert list(tables._compiled) == ["es"] and tables["es"] is es
    assert es == cues._compile("es", cues._FOREIGN_SPEC["es"])
    assert list(tables) == list(cues._FOREIGN_SPEC) and len(tables) == len(cues._FOREIGN_SPEC)
