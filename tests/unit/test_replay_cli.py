"""``python -m stream replay`` and ``python -m stream schema`` as a user runs them.

Each test runs the real CLI in a subprocess (``sys.executable -m stream``) on files in a
temp directory — no broker — and checks stdout (alerts, JSONL), stderr (``path:line:
reason`` per bad line, then the one-line summary) and the exit code (DESIGN.md §5).
The child runs in the temp directory with the repository on ``PYTHONPATH`` and no
``CG_*`` settings inherited, so a developer's environment cannot change the outcome.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from stream.offline.replay import replay_lines
from stream.wire import encode
from tests.unit.builders import admit, as_jsonl, as_line, evict, make_checkpoint

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
BOM = b"\xef\xbb\xbf"


def run_cli(*args: str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "stream", *args],
        cwd=cwd, env=env, input=stdin, capture_output=True, timeout=120,
    )


def stderr_lines(proc: subprocess.CompletedProcess) -> list[str]:
    return proc.stderr.decode("utf-8").splitlines()


def expected_stdout(*lines: bytes) -> bytes:
    """What replay must print for these lines: the engine's alerts, one JSON per line."""
    return b"".join(encode(a) + b"\n" for a in replay_lines(list(lines)).alerts)


ORPHANING = (
    admit("a1", event_id="e1"),
    make_checkpoint(event_id="e2", node_id="n1", referents=["a1"], occurred_at="2024-01-01T00:00:00Z"),
    evict("a1", event_id="e3"),
    admit("a1", event_id="e4"),
)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    return tmp_path


def test_replay_writes_alerts_to_stdout_as_json_lines(workdir):
    (workdir / "in.jsonl").write_bytes(as_jsonl(*ORPHANING))
    proc = run_cli("replay", "in.jsonl", cwd=workdir)
    assert proc.returncode == 0
    alerts = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(a["rule"], a["status"], a["orphans"], a["trigger"]["event_id"]) for a in alerts] == [
        ("orphaned_referent", "open", ["a1"], "e3"),
        ("orphaned_referent", "resolved", [], "e4"),
    ]
    assert proc.stdout == expected_stdout(*(as_line(e) for e in ORPHANING))


def test_replay_reports_bad_lines_on_stderr_skips_them_and_ends_with_a_summary(workdir):
    lines = [
        as_line(make_checkpoint(event_id="e1", node_id="n1", referents=["gone"])),
        b"{not json",
        as_line(admit("a1", op="deleted")),
        as_line(make_checkpoint(event_id="e4", node_id="n2", referents=["gone"])),
    ]
    (workdir / "in.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    proc = run_cli("replay", "in.jsonl", cwd=workdir)
    assert proc.returncode == 0
    err = stderr_lines(proc)
    assert err[0].startswith("in.jsonl:2: not JSON")
    assert err[1] == "in.jsonl:3: op: Input should be 'admitted' or 'evicted'"
    assert err[2] == (
        "replay: 2 events (2 applied, 0 duplicates, 0 dropped), 2 dead letters, "
        "2 alerts (orphaned_referent=2), 0 waiting"
    )
    assert len(err) == 3
    assert [json.loads(line)["trigger"]["event_id"] for line in proc.stdout.splitlines()] == ["e1", "e4"]


def test_replay_out_writes_alerts_to_the_file_and_nothing_to_stdout(workdir):
    (workdir / "in.jsonl").write_bytes(as_jsonl(*ORPHANING))
    proc = run_cli("replay", "in.jsonl", "--out", "alerts.jsonl", cwd=workdir)
    assert proc.returncode == 0
    assert proc.stdout == b""
    assert (workdir / "alerts.jsonl").read_bytes() == expected_stdout(*(as_line(e) for e in ORPHANING))
    assert stderr_lines(proc)[-1].startswith("replay: 4 events")


def test_replay_reads_several_files_in_order_with_line_numbers_per_file(workdir):
    (workdir / "one.jsonl").write_bytes(as_jsonl(admit("a1", event_id="e1"), b"bad", make_checkpoint(
        event_id="e3", node_id="n1", referents=["a1"])))
    (workdir / "two.jsonl").write_bytes(as_jsonl(b"[]", evict("a1", event_id="e5")))
    proc = run_cli("replay", "one.jsonl", "two.jsonl", cwd=workdir)
    assert proc.returncode == 0
    err = stderr_lines(proc)
    assert [line.split(": ")[0] for line in err[:2]] == ["one.jsonl:2", "two.jsonl:1"]
    assert err[1] == "two.jsonl:1: message: must be a JSON object, got array"
    ((alert),) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert (alert["status"], alert["trigger"]["event_id"]) == ("open", "e5")

    reversed_order = run_cli("replay", "two.jsonl", "one.jsonl", cwd=workdir)
    assert reversed_order.stdout == b""


def test_replay_reads_stdin_for_a_dash_between_files(workdir):
    (workdir / "first.jsonl").write_bytes(as_jsonl(admit("a1", event_id="e1")))
    (workdir / "last.jsonl").write_bytes(as_jsonl(admit("a1", event_id="e4")))
    stdin = as_jsonl(make_checkpoint(event_id="e2", node_id="n1", referents=["a1"]), b"oops",
                     evict("a1", event_id="e3"))
    proc = run_cli("replay", "first.jsonl", "-", "last.jsonl", cwd=workdir, stdin=stdin)
    assert proc.returncode == 0
    assert [(a["status"], a["trigger"]["event_id"]) for a in map(json.loads, proc.stdout.splitlines())] == [
        ("open", "e3"),
        ("resolved", "e4"),
    ]
    assert stderr_lines(proc)[0].startswith("-:2: not JSON")


def test_replay_strips_a_bom_at_the_start_of_each_file_only(workdir):
    ck = make_checkpoint(event_id="e1", node_id="n1", referents=["gone"])
    (workdir / "a.jsonl").write_bytes(BOM + as_jsonl(ck))
    (workdir / "b.jsonl").write_bytes(BOM + as_jsonl(make_checkpoint(event_id="e2", node_id="n2", referents=["x"]))
                                      + BOM + as_jsonl(make_checkpoint(event_id="e3", node_id="n3")))
    proc = run_cli("replay", "a.jsonl", "b.jsonl", cwd=workdir)
    assert [json.loads(line)["trigger"]["event_id"] for line in proc.stdout.splitlines()] == ["e1", "e2"]
    err = stderr_lines(proc)
    assert err[0].startswith("b.jsonl:2: not JSON")
    assert len(err) == 2


def test_replay_splits_lines_on_newline_only(workdir):
    crlf = as_line(make_checkpoint(event_id="e1", node_id="n1", referents=["gone"])) + b"\r\n"
    u2028 = as_line(make_checkpoint(event_id="e2", node_id="n2", referents=["a\u2028b", "c\u2029d\x85e"])) + b"\n"
    two_on_one = as_line(admit("x")) + b"\r" + as_line(admit("y")) + b"\n"
    vt = as_line(admit("z")) + b"\x0b\x0c" + b"\n"
    (workdir / "in.jsonl").write_bytes(crlf + u2028 + two_on_one + vt)
    proc = run_cli("replay", "in.jsonl", cwd=workdir)
    alerts = [json.loads(line) for line in proc.stdout.decode("utf-8").split("\n") if line]
    assert [(a["trigger"]["event_id"], a["orphans"]) for a in alerts] == [
        ("e1", ["gone"]),
        ("e2", ["a\u2028b", "c\u2029d\x85e"]),
    ]
    err = stderr_lines(proc)
    assert [line.split(": ")[0] for line in err[:-1]] == ["in.jsonl:3", "in.jsonl:4"]
    assert err[-1].startswith("replay: 2 events")


def test_replay_skips_blank_lines_but_counts_them_in_line_numbers(workdir):
    body = b"\n   \n\t\r\n" + as_line(make_checkpoint(event_id="e4", node_id="n1", referents=["gone"])) + b"\n\nbad"
    (workdir / "in.jsonl").write_bytes(body)
    proc = run_cli("replay", "in.jsonl", cwd=workdir)
    assert [json.loads(line)["trigger"]["event_id"] for line in proc.stdout.splitlines()] == ["e4"]
    err = stderr_lines(proc)
    assert err[0].startswith("in.jsonl:6: not JSON")
    assert "1 events" in err[1] and "1 dead letters" in err[1]


def test_replay_reports_an_invalid_utf8_line_and_processes_the_others(workdir):
    body = (
        as_line(make_checkpoint(event_id="e1", node_id="n1", referents=["gone"])) + b"\n"
        + b'{"type":"artifact","event_id":"\xff","context_id":"ctx-1","artifact_id":"gone","op":"admitted"}\n'
        + as_line(admit("gone", event_id="e3")) + b"\n"
    )
    (workdir / "in.jsonl").write_bytes(body)
    proc = run_cli("replay", "in.jsonl", cwd=workdir)
    assert proc.returncode == 0
    assert [(a["status"], a["trigger"]["event_id"]) for a in map(json.loads, proc.stdout.splitlines())] == [
        ("open", "e1"),
        ("resolved", "e3"),
    ]
    assert stderr_lines(proc)[0] == "in.jsonl:2: not UTF-8: invalid start byte at byte 31"


def test_replay_of_a_missing_file_exits_2_with_one_line_error(workdir):
    proc = run_cli("replay", "missing.jsonl", cwd=workdir)
    assert proc.returncode == 2
    assert stderr_lines(proc) == ["checkpoint-guard: error: cannot read missing.jsonl: no such file or directory; "
                                  "check the path, or give a JSONL file of input events"]
    assert proc.stdout == b""


def test_replay_output_is_byte_identical_across_runs(workdir):
    events = [
        *ORPHANING,
        make_checkpoint(event_id="s", node_id="s", level="section", children=["n1", "late"]),
        make_checkpoint(event_id="late", node_id="late", raw_negative_constraints=["Do NOT push"], seq=1),
        make_checkpoint(event_id="zero", node_id="z", referents=["a1", "b"], seq=0),
        make_checkpoint(event_id="zero-2", node_id="z", referents=["a1"]),
    ]
    (workdir / "in.jsonl").write_bytes(as_jsonl(*events))
    first = run_cli("replay", "in.jsonl", cwd=workdir)
    second = run_cli("replay", "in.jsonl", cwd=workdir)
    assert first.stdout == second.stdout
    assert first.stderr == second.stderr
    assert len(first.stdout.splitlines()) == 6


def test_replay_seq_gap_limit_option_declares_a_gap(workdir):
    (workdir / "in.jsonl").write_bytes(as_jsonl(admit("a", event_id="e3", seq=3), admit("b", event_id="e4", seq=4)))
    proc = run_cli("replay", "--seq-gap-limit", "1", "in.jsonl", cwd=workdir)
    ((alert),) = [json.loads(line) for line in proc.stdout.splitlines()]
    assert (alert["rule"], alert["gap"], alert["node_id"], alert["action"]) == ("sequence_gap", [0, 2], None, "resync")
    assert stderr_lines(proc)[-1].endswith(", 0 waiting")


def test_replay_since_starts_at_the_first_seq_and_without_it_events_wait(workdir):
    (workdir / "in.jsonl").write_bytes(as_jsonl(make_checkpoint(event_id="e9", node_id="n", referents=["x"], seq=9)))
    with_since = run_cli("replay", "--since", "in.jsonl", cwd=workdir)
    without = run_cli("replay", "in.jsonl", cwd=workdir)
    assert [json.loads(line)["trigger"]["event_id"] for line in with_since.stdout.splitlines()] == ["e9"]
    assert without.stdout == b""
    assert stderr_lines(without)[-1].endswith(", 1 waiting")


def test_schema_writes_the_six_schema_files_as_json(workdir):
    proc = run_cli("schema", "schemas", cwd=workdir)
    assert proc.returncode == 0
    names = sorted(p.name for p in (workdir / "schemas").iterdir())
    assert names == [
        "alert.schema.json", "dead-letter.schema.json", "input-event.schema.json",
        "remediation-request.schema.json", "status.schema.json", "verdict.schema.json",
    ]
    for name in names:
        schema = json.loads((workdir / "schemas" / name).read_text("utf-8"))
        assert isinstance(schema, dict) and schema
    alert = json.loads((workdir / "schemas" / "alert.schema.json").read_text("utf-8"))
    assert {"alert_id", "rule", "status", "trigger", "orphans", "gap"} <= set(alert["properties"])
    assert sorted(Path(line).name for line in proc.stdout.decode().splitlines()) == names


@pytest.mark.parametrize(("kind", "called"), [("alert", "alerts"), ("status", "node statuses"),
                                              ("verdict", "verdicts"), ("dead_letter", "dead letters")])
def test_checkpoint_guards_own_output_is_refused_as_input(kind: str, called: str) -> None:
    from stream.offline.replay import not_events

    why = not_events(json.dumps({"schema_version": 1, "type": kind}).encode(), "out.jsonl")
    assert why is not None and f"checkpoint-guard's output ({called}), not input events" in why
    assert "| checkpoint-guard replay -" in why


def test_a_first_line_over_the_limit_is_one_dead_letter_and_the_events_after_it_are_replayed(workdir):
    ck = make_checkpoint(event_id="e1", node_id="n1", referents=["gone"])
    big = b'{"type": "checkpoint", "note": "' + b"a" * (1 << 20) + b'"}\n'
    (workdir / "in.jsonl").write_bytes(big + as_jsonl(ck))
    proc = run_cli("replay", "in.jsonl", cwd=workdir)
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["trigger"]["event_id"] for line in proc.stdout.splitlines()] == ["e1"]
    err = stderr_lines(proc)
    assert err[0].startswith("in.jsonl:1: line is ") and "over the 1048576-byte limit" in err[0]
    assert "1 dead letters" in err[-1]


def test_replay_of_a_live_pipe_writes_each_alert_before_its_input_ends(workdir):
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    proc = subprocess.Popen([sys.executable, "-m", "stream", "replay", "-"], cwd=workdir, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(as_jsonl(*ORPHANING[:3]))  # far under any read chunk; the pipe stays open
        proc.stdin.flush()
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(60)
        assert got and json.loads(got[0])["trigger"]["event_id"] == "e3", "no alert before the input ended"
        proc.stdin.write(as_jsonl(ORPHANING[3]))
        proc.stdin.close()
        assert json.loads(proc.stdout.readline())["status"] == "resolved"
        assert proc.wait(60) == 0
    finally:
        proc.kill()
        proc.wait()
