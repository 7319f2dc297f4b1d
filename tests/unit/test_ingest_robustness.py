"""Ingest survives hostile inputs (issue 28, item 6): huge integers, messages of thousands of rules.

A 5,001-digit integer is over Python's limit for converting one (``sys.get_int_max_str_digits``,
4,300): ``json`` raises a ``ValueError`` that is not a syntax error. Each format reports the
record or file in one line and goes on; a directory run ingests every other file. Speed is
measured in ``bench/bench_ingest.py`` (figures in bench/README.md), never here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stream.adapters.compaction.claude_code import ClaudeCodeTranscript
from stream.adapters.compaction.compaction_logs import MAX_RAW_PER_CHECKPOINT
from stream.adapters.compaction.prohibitions import units

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
HUGE = "9" * 5001


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "stream", "ingest", *args], cwd=REPO, env=env, capture_output=True,
                          timeout=120)


def transcript(path: Path, sid: str, *, huge: bool) -> Path:
    base = {"sessionId": sid, "timestamp": "2026-05-04T10:00:00.000Z", "cwd": "/w", "version": "2.1.50"}
    records = [
        json.dumps({**base, "type": "user", "uuid": f"{sid}-u1", "parentUuid": None,
                    "message": {"role": "user", "content": "don't delete the fixtures"}}),
        f'{{"type":"progress","sessionId":"{sid}","tokens":{HUGE}}}' if huge else
        json.dumps({**base, "type": "progress", "tokens": 1}),
        json.dumps({**base, "type": "system", "subtype": "compact_boundary", "uuid": f"{sid}-b1", "parentUuid": None,
                    "compactMetadata": {"trigger": "auto", "preTokens": 1}}),
        json.dumps({**base, "type": "user", "uuid": f"{sid}-s1", "parentUuid": f"{sid}-b1", "isCompactSummary": True,
                    "message": {"role": "user", "content": "The user wants a report."}}),
    ]
    path.write_text("\n".join(records) + "\n")
    return path


def test_a_huge_integer_in_a_claude_code_line_costs_that_line_and_a_directory_run_reads_every_other_file(tmp_path):
    bad = transcript(tmp_path / "a-bad.jsonl", "aaaa0000-0000-4000-8000-00000000000a", huge=True)
    transcript(tmp_path / "b-good.jsonl", "bbbb0000-0000-4000-8000-00000000000b", huge=False)
    proc = cli("claude-code", str(tmp_path))
    err = proc.stderr.decode().splitlines()
    assert proc.returncode == 1 and "Traceback" not in proc.stderr.decode()
    assert [e for e in err if "digits" in e] == [
        f"checkpoint-guard: ingest: {bad}:2: not readable JSON: an integer of more than 4,300 digits "
        "(Python's limit for converting one)"]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    leaves = {e["context_id"] for e in events if e.get("level") == "leaf" and e["raw_negative_constraints"]}
    assert leaves == {"cc:aaaa0000-0000-4000-8000-00000000000a", "cc:bbbb0000-0000-4000-8000-00000000000b"}


def test_a_huge_integer_in_an_openhands_event_file_is_reported_and_the_others_are_read(tmp_path):
    events = tmp_path / "conv" / "events"
    events.mkdir(parents=True)
    (events / "event-00000-a.json").write_text(json.dumps(
        {"kind": "MessageEvent", "id": "a", "source": "user", "timestamp": "2026-05-04T10:00:00",
         "llm_message": {"role": "user", "content": [{"type": "text", "text": "never push to main"}]}}))
    (events / "event-00001-b.json").write_text(f'{{"kind": "TokenEvent", "id": "b", "tokens": {HUGE}}}')
    (events / "event-00002-c.json").write_text(json.dumps(
        {"kind": "Condensation", "id": "c", "forgotten_event_ids": ["a"], "summary": "Working on a report."}))
    proc = cli("openhands", str(tmp_path / "conv"))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr.decode()
    assert any("event-00001-b.json: not readable JSON: an integer of more than 4,300 digits" in line
               for line in proc.stderr.decode().splitlines())
    leaf = next(json.loads(line) for line in proc.stdout.splitlines() if b'"c-summary"' in line)
    assert [c["text"] for c in leaf["raw_negative_constraints"]] == ["never push to main"]


def test_a_huge_integer_in_a_trajectory_file_is_reported_and_the_other_files_of_the_directory_ingested(tmp_path):
    good = {"info": {"exit_status": "Submitted"}, "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Fix the bug. Do not modify the tests."},
        {"role": "assistant", "content": "THOUGHT: look\n```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode><output>a.py</output>"}],
        "instance_id": "good-1"}
    (tmp_path / "good.traj.json").write_text(json.dumps(good))
    (tmp_path / "bad.traj.json").write_text(json.dumps(good).replace('"instance_id"', f'"n": {HUGE}, "instance_id"'))
    proc = cli(str(tmp_path))
    err = proc.stderr.decode()
    assert proc.returncode == 1 and "Traceback" not in err
    assert f"{tmp_path / 'bad.traj.json'}: not readable JSON: an integer of more than 4,300 digits" in err
    assert proc.stdout.count(b"\n") > 0  # the good file was ingested


def test_a_sentence_remembers_a_bounded_number_of_sentences_before_it():
    # every sentence used to carry all the sentences before it on its line: quadratic in a line of many rules
    line = " ".join(f"don't touch file{i}.py." for i in range(500))
    befores = [len(u.before) for u, _ in units(line)]
    assert len(befores) == 500 and max(befores) == 8


def test_more_rules_in_force_than_a_checkpoint_lists_keep_the_checkpoint_under_the_size_limits(tmp_path):
    sid = "cccc0000-0000-4000-8000-00000000000c"
    base = {"sessionId": sid, "timestamp": "2026-05-04T10:00:00.000Z", "cwd": "/w", "version": "2.1.50"}
    # in messages of 50 rules each: a message over 16k characters is read only at its two ends
    n = MAX_RAW_PER_CHECKPOINT + 500
    messages = [" ".join(f"don't touch module_{i}.py." for i in range(k, min(k + 50, n))) for k in range(0, n, 50)]
    records = [
        {**base, "type": "user", "uuid": f"u{j}", "parentUuid": None, "message": {"role": "user", "content": text}}
        for j, text in enumerate(messages)
    ] + [
        {**base, "type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": None,
         "compactMetadata": {"trigger": "auto", "preTokens": 1}},
        {**base, "type": "user", "uuid": "s1", "parentUuid": "b1", "isCompactSummary": True,
         "message": {"role": "user", "content": "Summary: don't touch module_3.py."}},
    ]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    reader = ClaudeCodeTranscript(path)
    leaf = next(e for e in reader.poll(final=True) if e.get("node_id") == "s1")
    assert len(leaf["raw_negative_constraints"]) == MAX_RAW_PER_CHECKPOINT and leaf["x_constraints_not_listed"] == 500
    assert len(json.dumps(leaf)) < 1 << 20
    assert [w for w in reader.stats.warnings if "more prohibitions than a checkpoint lists" in w]
    carried = {c["id"] for c in leaf["negative_constraints"]}
    assert len(carried) == 1  # module_3 only: the others alert


# --------------------------------------------------------------------------- records over the size limit


@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=12),
       st.booleans(), st.integers(1, 50), st.integers(1, 17))
def test_read_lines_splits_like_bytes_split_with_long_lines_as_their_length(lines, trailing, limit, chunk):
    import io

    from stream.lines import Oversize, read_lines

    data = b"\n".join(lines) + (b"\n" if trailing and lines else b"")
    for final in (True, False):
        got, consumed, left = read_lines(io.BytesIO(data), limit, final=final, chunk=chunk)
        pieces = data.split(b"\n")
        tail = pieces.pop()
        if final and tail:
            pieces.append(tail)
            tail = b""
        assert [p.size if isinstance(p, Oversize) else p for p in got] == [
            p if len(p) <= limit else b"" if not p.strip(b" \t\r") else len(p) for p in pieces]
        assert all(p == b"" for p in got if isinstance(p, Oversize))  # none of an oversize line is held
        assert (consumed, left) == (len(data) - len(tail), len(tail))


def test_a_record_over_the_limit_is_one_error_and_the_rest_of_the_transcript_is_read(tmp_path, monkeypatch):
    from stream.adapters.compaction import claude_code

    monkeypatch.setattr(claude_code, "MAX_RECORD_BYTES", 1_000)
    good = {"sessionId": "s1", "parentUuid": None, "uuid": "u1", "type": "user",
            "message": {"role": "user", "content": "hello"}}
    big = {**good, "uuid": "u2", "message": {"role": "user", "content": "x" * 5_000}}
    after = {**good, "uuid": "u3", "parentUuid": "u1"}
    path = tmp_path / "s1.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (good, big, after)) + "\n", "utf-8")
    t = claude_code.ClaudeCodeTranscript(path)
    events = t.poll(final=True)
    big_len = len(json.dumps(big))
    assert t.stats.errors == [f"{path}:2: a record of {big_len:,} bytes, over the 1,000-byte limit; skipped"]
    assert t.stats.records == 3
    ids = {e.get("artifact_id") for e in events}
    assert "ev:u3" in ids and "ev:u1" in ids and "ev:u2" not in ids  # the record after it is read


LINE = '{"type":"user","sessionId":"s","message":{"role":"user","content":"hi"}}\n'


@pytest.mark.parametrize(("encoding", "name"), [
    ("utf-16", "UTF-16"),  # with a byte-order mark (what Python and PowerShell write)
    ("utf-16-le", "UTF-16"), ("utf-16-be", "UTF-16"),  # no mark: ASCII with a NUL beside each character
    ("utf-32", "UTF-32"),
])
def test_a_utf16_or_utf32_input_is_named_with_the_conversion_not_called_binary(tmp_path, encoding, name):
    from stream.commands.ingest import _wrong_form
    from stream.offline.replay import first_line, input_form, not_events

    path = tmp_path / "s.jsonl"
    path.write_bytes(LINE.encode(encoding) * 2)
    with path.open("rb") as fh:
        first = first_line(fh, limit=1 << 20)
    assert input_form(first) == ("wide", name)
    assert not_events(first, "s.jsonl") == (f"it is {name} text, and JSONL is UTF-8; convert it first: "
                                            f"`iconv -f {name} -t UTF-8 s.jsonl | checkpoint-guard replay -`")
    assert _wrong_form(str(path), "claude-code") == (
        f"{path}: it is {name} text, not UTF-8, not a Claude Code transcript; convert it to UTF-8 first "
        f"(iconv -f {name} -t UTF-8 {path} > {path}.utf8)")


def test_utf8_text_and_true_binary_keep_their_kinds():
    from stream.offline.replay import input_form

    assert input_form(LINE.strip().encode()) == ("transcript", "")
    assert input_form("{\"a\": \"日本語\"}".encode()) == ("json", "")
    assert input_form(b"\x00\x01\x02\xff\xfe\x10garbage")[0] == "binary"
    assert input_form(b"\x89PNG\r\n\x1a")[0] == "binary"
