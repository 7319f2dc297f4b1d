"""The ``checkpoint-guard`` command as a new user meets it: help, version, one-line errors.

Every test runs the real CLI in a subprocess (``python -m stream``) with no ``CG_*``
variable inherited. No broker is started: the "broker not there" cases point at a port
nothing listens on, and the worker's refusals (web port taken, data dir in use) happen
before it connects to Kafka.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from stream.devtools.kafka_local import free_ports

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
ERROR = "checkpoint-guard: error: "


def cli(*args: str, cwd: Path, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    base["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))
    base["XDG_DATA_HOME"] = str(cwd / "xdg-data")  # never the developer's own data dir
    return subprocess.run([sys.executable, "-m", "stream", *args], cwd=cwd, env={**base, **env},
                          capture_output=True, text=True, timeout=timeout)


def one_error_line(proc: subprocess.CompletedProcess, code: int) -> str:
    """The single stderr line of a failed command (asserting there is nothing else)."""
    lines = proc.stderr.splitlines()
    assert proc.returncode == code, proc.stderr
    assert len(lines) == 1 and lines[0].startswith(ERROR), proc.stderr
    assert "Traceback" not in proc.stderr and "Unclosed" not in proc.stderr
    return lines[0].removeprefix(ERROR)


# --------------------------------------------------------------------------- help and version


def test_top_level_help_is_checkpoint_guards_and_lists_only_commands_that_apply(tmp_path):
    proc = cli("--help", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("Usage: checkpoint-guard [OPTIONS] COMMAND")
    assert "Welcome" not in proc.stdout and "faust-streaming.github.io" not in proc.stdout
    listed = {line.split()[0] for line in proc.stdout.splitlines() if line.startswith("  ") and line.split()}
    for name in ("worker", "replay", "ingest", "schema", "topics", "kafka", "export", "explain", "tail",
                 "remediate", "demo", "reset"):
        assert name in listed, name
    for faust_only in ("send", "livecheck", "model", "models", "agents", "tables", "completion"):
        assert faust_only not in listed, faust_only
        assert cli(faust_only, cwd=tmp_path).returncode == 2


def test_the_global_json_option_is_gone_with_a_usage_error(tmp_path):
    proc = cli("--json", "schema", cwd=tmp_path)
    assert proc.returncode == 2
    assert "No such option: --json" in proc.stderr


def test_version_prints_ours_and_fausts(tmp_path):
    from importlib.metadata import version

    from stream import __version__

    proc = cli("--version", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith(f"checkpoint-guard {__version__} (faust-streaming {version('faust-streaming')}, ")


def test_worker_help_shows_the_real_default_web_host(tmp_path):
    proc = cli("worker", "-h", cwd=tmp_path)
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert ("--web-host TEXT Host name other workers use to reach this one (canonical URL) "
            "[default: CG_WEB_HOST, 127.0.0.1]") in text
    assert "--web-bind TEXT Address the web server binds [default: CG_WEB_HOST, 127.0.0.1]" in text
    assert "0.0.0.0" not in text


@pytest.mark.parametrize("args", [("replay", "in.jsonl"), ("schema",), ("topics", "--help"), ("ingest", "--help"),
                                  ("tail", "--help"), ("kafka", "status", "--home", "kh"),
                                  ("reset", "--yes")])
def test_commands_other_than_the_worker_import_no_faust(tmp_path, args):
    (tmp_path / "in.jsonl").write_text(
        '{"type":"artifact","event_id":"e","context_id":"c","artifact_id":"a","op":"admitted"}\n')
    probe = ("import atexit, sys\n"
             "atexit.register(lambda: print('LOADED',"
             " sorted({m.split('.')[0] for m in sys.modules} & {'faust', 'mode'}), file=sys.stderr))\n"
             "from stream.cli import main\nmain()\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert "LOADED []" in proc.stderr.splitlines(), proc.stderr


# --------------------------------------------------------------------------- one-line errors


def test_ingest_out_into_a_missing_directory_is_one_line_with_exit_2(tmp_path):
    msg = one_error_line(cli("ingest", "--out", "/no/such/dir/x.jsonl", cwd=tmp_path), 2)
    assert msg == ("cannot write --out /no/such/dir/x.jsonl: directory /no/such/dir does not exist; "
                   "create it first (mkdir -p /no/such/dir)")


def test_ingest_out_naming_a_directory_is_one_line_with_exit_2(tmp_path):
    msg = one_error_line(cli("ingest", "openhands", str(tmp_path), "--out", str(tmp_path), cwd=tmp_path), 2)
    assert msg.startswith(f"cannot write --out {tmp_path}: it is a directory; give a file name")


@pytest.mark.parametrize("form, make, out", [
    ("claude-code", "s.jsonl", "s.jsonl"),            # the transcript itself
    ("claude-code", "logs/s.jsonl", "logs/ev.jsonl"),  # inside the input directory: read back next run
    ("openhands", "conv/base_state.json", "conv/base_state.json"),
    (None, "t.traj.json", "t.traj.json"),              # a trajectory
])
def test_ingest_never_writes_over_or_into_its_input(tmp_path, form, make, out):
    target = tmp_path / make
    target.parent.mkdir(parents=True, exist_ok=True)
    body = '{"sessionId":"x","parentUuid":null,"type":"user"}\n'
    target.write_text(body, "utf-8")
    given = str(target.parent) if "/" in make else make
    args = ([form] if form else []) + [given, "--out", out]
    msg = one_error_line(cli("ingest", *args, cwd=tmp_path), 2)
    inside = "is" if (tmp_path / out).resolve() == (tmp_path / given).resolve() else "is inside"
    assert msg == (f"--out {out} {inside} the input {given}; it would overwrite or be read as input; "
                   "write it outside the inputs")
    assert target.read_text("utf-8") == body  # untouched


def test_ingest_out_that_is_a_hard_link_of_the_input_is_refused(tmp_path):
    body = '{"sessionId":"x","parentUuid":null,"type":"user"}\n'
    (tmp_path / "s.jsonl").write_text(body, "utf-8")
    os.link(tmp_path / "s.jsonl", tmp_path / "h.jsonl")  # another name, the same bytes
    msg = one_error_line(cli("ingest", "claude-code", "s.jsonl", "--out", "h.jsonl", cwd=tmp_path), 2)
    assert msg.startswith("--out h.jsonl is the input s.jsonl;")
    assert (tmp_path / "s.jsonl").read_text("utf-8") == body


def test_ingest_metrics_file_is_refused_over_an_input_too(tmp_path):
    (tmp_path / "s.jsonl").write_text('{"sessionId":"x","parentUuid":null,"type":"user"}\n', "utf-8")
    msg = one_error_line(cli("ingest", "claude-code", "s.jsonl", "--metrics-file", "s.jsonl", cwd=tmp_path), 2)
    assert msg.startswith("--metrics-file s.jsonl is the input s.jsonl;")


def test_ingest_of_an_events_file_says_use_replay_in_one_line_with_exit_2(tmp_path):
    events = tmp_path / "ev.jsonl"
    events.write_text('{"type":"artifact","schema_version":1,"context_id":"c","seq":0}\n', "utf-8")
    msg = one_error_line(cli("ingest", "ev.jsonl", cwd=tmp_path), 2)
    assert msg == ("cannot ingest ev.jsonl: it is already input events (what ingest writes), not a trajectory; "
                   "use checkpoint-guard replay ev.jsonl")


def test_ingest_of_a_claude_code_transcript_without_the_format_names_it(tmp_path):
    (tmp_path / "s.jsonl").write_text('{"sessionId":"x","parentUuid":null,"type":"user"}\n', "utf-8")
    msg = one_error_line(cli("ingest", "s.jsonl", cwd=tmp_path), 2)
    assert msg == ("cannot ingest s.jsonl: it is a Claude Code transcript, not a trajectory; "
                   "use checkpoint-guard ingest claude-code s.jsonl")


def test_ingest_of_a_file_that_is_no_trajectory_is_one_line_with_exit_2(tmp_path):
    (tmp_path / "README.md").write_text("# a readme\n", "utf-8")
    msg = one_error_line(cli("ingest", "README.md", cwd=tmp_path), 2)
    assert msg.startswith("cannot ingest README.md: not a trajectory file (expected *.traj.json")


EVENTS_LINE = '{"type":"artifact","schema_version":1,"context_id":"c","seq":0}\n'
TRANSCRIPT_LINE = '{"sessionId":"x","parentUuid":null,"type":"user"}\n'
CC_GIVE = ("give Claude Code transcripts (<sessionId>.jsonl, under ~/.claude/projects/) or project directories "
           "holding them")
OH_GIVE = "give OpenHands conversation directories (each holding events/) or a directory holding them"


@pytest.mark.parametrize("fmt, name, content, says", [
    ("claude-code", "README.md", "# a readme\n\nSome text.\n",
     f"cannot ingest README.md: it is Markdown text, not a Claude Code transcript; {CC_GIVE}"),
    ("claude-code", "notes.txt", "plain words\n",
     "cannot ingest notes.txt: it is plain text (its first line is not JSON), not a Claude Code transcript; "
     + CC_GIVE),
    ("claude-code", "ev.jsonl", EVENTS_LINE,
     "cannot ingest ev.jsonl: it is already input events (what ingest writes), not a Claude Code transcript; "
     "use checkpoint-guard replay ev.jsonl"),
    ("claude-code", "alerts.jsonl", '{"schema_version":1,"type":"alert","alert_id":"a1"}\n',
     f"cannot ingest alerts.jsonl: it is checkpoint-guard's output (alerts), not a Claude Code transcript; {CC_GIVE}"),
    ("claude-code", "run.json", '{\n  "trajectory": []\n}\n',
     "cannot ingest run.json: it is one JSON document over many lines (an agent trajectory?), not a Claude Code "
     "transcript; for a trajectory use checkpoint-guard ingest run.json"),
    ("openhands", "README.md", "# a readme\n",
     f"cannot ingest README.md: it is Markdown text, not an OpenHands conversation directory; {OH_GIVE}"),
    ("openhands", "s.jsonl", TRANSCRIPT_LINE,
     "cannot ingest s.jsonl: it is a Claude Code transcript, not an OpenHands conversation directory; "
     "use checkpoint-guard ingest claude-code s.jsonl"),
    ("openhands", "ev.jsonl", EVENTS_LINE,
     "cannot ingest ev.jsonl: it is already input events (what ingest writes), not an OpenHands conversation "
     "directory; use checkpoint-guard replay ev.jsonl"),
    ("openhands", "conv/events/event-00000-x.json", '{"kind": "MessageEvent"}',
     "cannot ingest conv/events/event-00000-x.json: it is one OpenHands event file, not an OpenHands conversation "
     "directory; give its conversation directory conv"),
    ("openhands", "empty.jsonl", "",
     f"cannot ingest empty.jsonl: it is empty, not an OpenHands conversation directory; {OH_GIVE}"),
])
def test_ingest_of_a_log_form_given_a_file_of_another_form_says_what_it_is_in_one_line(tmp_path, fmt, name,
                                                                                        content, says):
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text(content, "utf-8")
    assert one_error_line(cli("ingest", fmt, name, cwd=tmp_path), 2) == says


def test_ingest_claude_code_still_reads_an_empty_transcript_and_one_whose_first_line_is_not_yet_whole(tmp_path):
    (tmp_path / "new.jsonl").write_text("", "utf-8")  # a session that has not written its first record yet
    (tmp_path / "cut.jsonl").write_text('{"sessionId":"x","type":"us', "utf-8")  # its first record half written
    proc = cli("ingest", "claude-code", "new.jsonl", "cut.jsonl", cwd=tmp_path)
    assert ERROR not in proc.stderr and "ingest claude-code: 2 input(s)" in proc.stderr, proc.stderr


@pytest.mark.parametrize("layout, says", [
    ("empty", "no trajectories read from d; give trajectory files or directories (mini-swe-agent *.traj.json, "
              "tau-bench result arrays)"),
    ("openhands", "cannot ingest d: it holds OpenHands conversations, not a trajectory; "
                  "use checkpoint-guard ingest openhands d"),
    ("claude-code", "cannot ingest d: it holds *.jsonl files (Claude Code transcripts?), not a trajectory; "
                    "use checkpoint-guard ingest claude-code d"),
])
def test_ingest_of_a_directory_of_logs_without_their_format_names_it(tmp_path, layout, says):
    (tmp_path / "d").mkdir()
    if layout == "openhands":
        (tmp_path / "d" / "conv" / "events").mkdir(parents=True)
        (tmp_path / "d" / "conv" / "events" / "event-00000-x.json").write_text('{"kind": "MessageEvent"}', "utf-8")
    elif layout == "claude-code":
        (tmp_path / "d" / "s.jsonl").write_text(TRANSCRIPT_LINE, "utf-8")
    assert one_error_line(cli("ingest", "d", cwd=tmp_path), 2) == says


def test_ingest_claude_code_of_a_directory_skips_an_events_file_in_it_and_says_so(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.jsonl").write_text('{"type":"artifact","schema_version":1,"context_id":"c","seq":0}\n', "utf-8")
    (d / "s.jsonl").write_text(json.dumps({"sessionId": "s1", "parentUuid": None, "uuid": "u1", "type": "user",
                                           "message": {"role": "user", "content": "hello"}}) + "\n", "utf-8")
    proc = cli("ingest", "claude-code", "d", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert ("checkpoint-guard: ingest: d/a.jsonl: it is already input events (what ingest writes), not a Claude "
            "Code transcript; use checkpoint-guard replay d/a.jsonl") in proc.stderr.splitlines()
    assert "1 input(s) failed" in proc.stderr and '"context_id"' in proc.stdout  # the transcript still read
    only = cli("ingest", "claude-code", "d/a.jsonl", cwd=tmp_path)  # named alone: refused, as before
    assert one_error_line(only, 2).startswith("cannot ingest d/a.jsonl: it is already input events")


@pytest.mark.parametrize("fmt, layout, says", [
    ("claude-code", "empty", f"cannot ingest d: no *.jsonl transcript in this directory; {CC_GIVE}"),
    ("openhands", "empty", "cannot ingest d: not an OpenHands conversation directory (no events/ inside, nor in "
                           f"its sub-directories); {OH_GIVE}"),
    ("claude-code", "openhands", "cannot ingest d: it holds OpenHands conversations, not a Claude Code transcript; "
                                 "use checkpoint-guard ingest openhands d"),
    ("openhands", "claude-code", "cannot ingest d: it holds *.jsonl files (Claude Code transcripts?), not an "
                                 "OpenHands conversation directory; use checkpoint-guard ingest claude-code d"),
])
def test_ingest_of_a_directory_with_nothing_of_its_form_is_one_line_with_exit_2(tmp_path, fmt, layout, says):
    (tmp_path / "d").mkdir()
    if layout == "openhands":
        (tmp_path / "d" / "conv" / "events").mkdir(parents=True)
    elif layout == "claude-code":
        (tmp_path / "d" / "s.jsonl").write_text(TRANSCRIPT_LINE, "utf-8")
    proc = cli("ingest", fmt, "d", cwd=tmp_path)
    assert one_error_line(proc, 2) == says and proc.stdout == ""


@pytest.mark.parametrize("args, says", [
    (("ingest", "claude-code", "--out"), "option --out needs a value (--out TEXT) (see `checkpoint-guard ingest -h`)"),
    (("ingest", "-o"), "option -o needs a value (-o TEXT) (see `checkpoint-guard ingest -h`)"),
    (("replay", "in.jsonl", "--seq-gap-limit"),
     "option --seq-gap-limit needs a value (--seq-gap-limit INTEGER) (see `checkpoint-guard replay -h`)"),
    (("hooks", "install", "--settings-file"),
     "option --settings-file needs a value (--settings-file TEXT) (see `checkpoint-guard hooks install -h`)"),
    (("worker", "--web-port"),
     "option --web-port needs a value (--web-port INTEGER RANGE) (see `checkpoint-guard worker -h`)"),
    (("replay", "in.jsonl", "--out", "--status"),  # click would write the alerts into a file named --status
     "option --out needs a value (--out TEXT), not the option --status (see `checkpoint-guard replay -h`)"),
    (("ingest", "claude-code", "s.jsonl", "-o", "--follow"),
     "option --out needs a value (--out TEXT), not the option --follow (see `checkpoint-guard ingest -h`)"),
])
def test_an_option_without_its_value_names_it_and_the_help_in_one_line(tmp_path, args, says):
    (tmp_path / "in.jsonl").write_text(EVENTS_LINE, "utf-8")
    assert one_error_line(cli(*args, cwd=tmp_path), 2) == says
    assert not (tmp_path / "--status").exists()


@pytest.mark.parametrize("args, says", [
    (("topics",), "Missing argument '{create|describe}'. Choose from: create, describe "
                  "(see `checkpoint-guard topics -h`)"),  # click's own message spans three lines
    (("kafka", "bogus"), "Invalid value for '{start|stop|status}': 'bogus' is not one of 'start', 'stop', 'status' "
                         "(see `checkpoint-guard kafka -h`)"),
    (("explain",), "Missing argument 'CONTEXT_ID' (see `checkpoint-guard explain -h`)"),
    (("tail", "--rul", "x"), "No such option: --rul (did you mean --rule?) (see `checkpoint-guard tail -h`)"),
    (("ingest", "--to-kafka", "--out", "x.jsonl"), "give either --out or --to-kafka, not both"),  # --out was ignored
])
def test_a_missing_or_bad_argument_is_one_line_with_the_commands_help(tmp_path, args, says):
    assert one_error_line(cli(*args, cwd=tmp_path), 2) == says


def test_replay_of_a_directory_of_trajectories_suggests_ingest(tmp_path):
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "a.traj.json").write_text("{}", "utf-8")
    msg = one_error_line(cli("replay", "traces", cwd=tmp_path), 2)
    assert msg.endswith("`checkpoint-guard ingest traces | checkpoint-guard replay -`"), msg
    assert "*.jsonl" not in msg


@pytest.mark.parametrize("flag", ["--project", "--local"])
def test_hooks_install_into_a_file_or_a_missing_dir_is_refused_and_creates_nothing(tmp_path, flag):
    (tmp_path / "README.md").write_text("# a readme\n", "utf-8")
    msg = one_error_line(cli("hooks", "install", flag, "README.md", cwd=tmp_path, HOME=str(tmp_path)), 2)
    assert msg == f"{flag} README.md: it is a file; it must be an existing project directory (e.g. {flag} .)"
    msg = one_error_line(cli("hooks", "install", flag, "nosuch", cwd=tmp_path, HOME=str(tmp_path)), 2)
    assert msg == f"{flag} nosuch: no such directory; it must be an existing project directory (e.g. {flag} .)"
    assert not (tmp_path / "nosuch").exists()


@pytest.mark.parametrize("out, why", [("missing/x.jsonl", "directory missing does not exist"),
                                       (".", "it is a directory")])
def test_export_out_to_a_missing_dir_or_a_directory_fails_before_reading_kafka(tmp_path, out, why):
    # CG_BROKER points nowhere: the output is checked before Kafka is contacted.
    msg = one_error_line(cli("export", "--out", out, cwd=tmp_path, CG_BROKER="kafka://127.0.0.1:1"), 2)
    assert msg.startswith(f"cannot write --out {out}: {why}")


def test_schema_into_an_existing_file_is_one_line_with_exit_2(tmp_path):
    (tmp_path / "taken").write_text("x")
    msg = one_error_line(cli("schema", "taken", cwd=tmp_path), 2)
    assert msg.startswith("cannot write the schemas into taken: it is a file, not a directory")
    assert (tmp_path / "taken").read_text() == "x"


def test_schema_that_cannot_write_a_file_is_one_line_with_exit_2(tmp_path):
    (tmp_path / "out" / "alert.schema.json").mkdir(parents=True)  # in the way of a schema file, even as root
    msg = one_error_line(cli("schema", "out", cwd=tmp_path), 2)
    assert msg == "cannot write out/alert.schema.json: Is a directory; give a directory path you can write"


def test_schema_under_a_file_is_one_line_that_says_what_to_give(tmp_path):
    (tmp_path / "taken").write_text("x")
    msg = one_error_line(cli("schema", "taken/sub", cwd=tmp_path), 2)
    assert msg == ("cannot create directory taken/sub: Not a directory; give a directory path you can write "
                   "(created if missing), or no argument to print them")


@pytest.mark.parametrize("form", [(), ("claude-code",)], ids=["trajectories", "claude-code"])
def test_ingest_of_a_device_says_it_is_not_a_file_not_that_it_is_missing(tmp_path, form):
    msg = one_error_line(cli("ingest", *form, "/dev/null", "-o", "out.jsonl", cwd=tmp_path), 2)
    assert msg.startswith("cannot ingest /dev/null: not a regular file or directory")


@pytest.mark.parametrize("args", [("replay", "in.jsonl"), ("schema",), ("worker",), ("--help",)])
def test_a_broker_url_with_a_foreign_scheme_is_one_line_with_exit_2_for_any_command(tmp_path, args):
    (tmp_path / "in.jsonl").write_text("")
    msg = one_error_line(cli(*args, cwd=tmp_path, CG_BROKER="http://localhost:9092"), 2)
    assert msg == ("CG_BROKER='http://localhost:9092': scheme http:// is not Kafka's; "
                   "use kafka://host:port[;host:port] (e.g. kafka://127.0.0.1:9092)")


@pytest.mark.parametrize("args", [("topics", "create"), ("tail", "--max", "1"), ("replay", "--from-kafka"),
                                  ("export",), ("explain", "ctx", "node")])
def test_a_broker_that_is_not_there_is_one_line_without_aiokafkas_noise(tmp_path, args):
    (port,) = free_ports(1)
    msg = one_error_line(cli(*args, cwd=tmp_path, CG_BROKER=f"kafka://127.0.0.1:{port}"), 1)
    assert msg.endswith(f"at 127.0.0.1:{port}: nothing listens there (connection refused); start the broker "
                        "(a local one: `checkpoint-guard kafka start`) or point CG_BROKER at it")
    assert "Connect call failed" not in msg and "aiokafka" not in msg  # our words, not its raw line


def test_a_second_worker_on_the_same_web_port_refuses_to_start_with_one_line(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = cli("worker", cwd=tmp_path, CG_WEB_PORT=str(port), CG_DATA_DIR=str(tmp_path / "data"),
                   CG_BROKER="kafka://127.0.0.1:1")
    msg = one_error_line(proc, 1)
    assert msg == (f"cannot listen on 127.0.0.1:{port}: address already in use (another worker?); "
                   "give each worker its own CG_WEB_PORT (or --web-port)")


def test_two_workers_sharing_one_data_dir_refuse_to_start_with_one_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    with open(data / "worker.lock", "w") as held:  # what a running worker holds
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        (port,) = free_ports(1)
        proc = cli("worker", cwd=tmp_path, CG_DATA_DIR=str(data), CG_WEB_PORT=str(port), CG_BROKER="kafka://127.0.0.1:1")
    msg = one_error_line(proc, 1)
    assert msg == (f"CG_DATA_DIR={data} is in use by another worker (pid 4242, lock {data / 'worker.lock'}); "
                   "give each worker its own CG_DATA_DIR")


def test_reset_deletes_the_local_state_and_refuses_while_a_worker_holds_the_dir(tmp_path):
    from stream.worker.store import PartitionStore, key_json, value_json

    data = tmp_path / "data"
    assert "nothing to reset" in cli("reset", "--yes", cwd=tmp_path, CG_DATA_DIR=str(data)).stdout
    for p in (0, 1):
        store = PartitionStore(data / "state" / f"p{p:05d}")
        store.write([[0, key_json(("ctx", "a")), value_json(True)]], {})
        store.close()
    with open(data / "worker.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242\n")
        held.flush()
        refused = cli("reset", "--yes", cwd=tmp_path, CG_DATA_DIR=str(data))
    assert "in use by another worker (pid 4242" in one_error_line(refused, 1)
    assert sorted(p.name for p in (data / "state").iterdir()) == ["p00000", "p00001"]
    done = cli("reset", "--yes", cwd=tmp_path, CG_DATA_DIR=str(data))
    assert done.returncode == 0 and "deleted the local state of 2 partition(s)" in done.stdout
    assert list((data / "state").iterdir()) == []
    assert cli("reset", cwd=tmp_path, CG_DATA_DIR=str(data)).returncode == 0  # no partitions: nothing to confirm


def test_replay_strict_exits_1_on_a_dead_letter_and_still_prints_the_alerts(tmp_path):
    good = '{"type":"checkpoint","event_id":"e1","context_id":"c","node_id":"n","level":"leaf","referents":["gone"]}'
    (tmp_path / "in.jsonl").write_text(good + "\n{bad\n")
    lenient, strict = cli("replay", "in.jsonl", cwd=tmp_path), cli("replay", "in.jsonl", "--strict", cwd=tmp_path)
    assert (lenient.returncode, strict.returncode) == (0, 1)
    assert strict.stdout == lenient.stdout and '"orphaned_referent"' in strict.stdout
    assert "in.jsonl:2: not JSON" in strict.stderr
    (tmp_path / "ok.jsonl").write_text(good + "\n")
    assert cli("replay", "ok.jsonl", "--strict", cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("args, where", [(("replay", "--verfy"), "checkpoint-guard replay -h"),
                                         (("replya",), "checkpoint-guard -h"),
                                         (("tail", "--rule", "bogus"), "checkpoint-guard tail -h")])
def test_a_usage_mistake_is_one_line_naming_the_help_with_exit_2(tmp_path, args, where):
    msg = one_error_line(cli(*args, cwd=tmp_path), 2)
    assert msg.endswith(f"(see `{where}`)")


def test_tail_filters_on_every_rule_the_engine_emits():
    from stream.commands.tail import RULES
    from stream.domain.engine import RULES as ENGINE_RULES

    assert set(RULES) == set(ENGINE_RULES) and "unverifiable_checkpoint" in RULES


# --------------------------------------------------------------------------- clean


def test_clean_deletes_the_home_state_and_says_what_it_removed(tmp_path):
    data, cache = tmp_path / "xdg-data" / "checkpoint-guard", tmp_path / "xdg-cache" / "checkpoint-guard"
    for sub in ("worker/state/0", "kafka/data", "demo/worker"):
        (data / sub).mkdir(parents=True)
        (data / sub / "f").write_bytes(b"x" * 2048)
    (cache / "kafka").mkdir(parents=True)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg-cache"), "CG_DATA_DIR": str(outside)}
    dry = cli("clean", "--dry-run", cwd=tmp_path, **env)
    assert dry.returncode == 0 and f"would delete {data} (6.0 KiB: demo, kafka, worker)" in dry.stdout
    assert data.is_dir()
    done = cli("clean", "--yes", cwd=tmp_path, **env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"kept CG_DATA_DIR={outside}: it is outside {data} (delete it yourself if it is yours)",
        f"removed {data} (6.0 KiB: demo, kafka, worker)",
    ]
    assert not data.exists() and cache.is_dir() and outside.is_dir()  # the cache only with --cache
    cached = cli("clean", "--cache", "--yes", cwd=tmp_path, **env)
    assert f"removed {cache} (0 B: kafka)" in cached.stdout and not cache.exists()
    again = cli("clean", "--yes", cwd=tmp_path, **env)
    assert again.returncode == 0 and f"nothing to clean: {data} does not exist" in again.stdout


def test_clean_counts_the_hooks_unsent_events_before_deleting_them(tmp_path):
    spool = tmp_path / "xdg-data" / "checkpoint-guard" / "claude-code" / "spool"
    spool.mkdir(parents=True)
    lines = [json.dumps({"type": "artifact", "context_id": "cc:s1", "seq": n}) for n in range(3)]
    (spool / "s1.jsonl").write_text("\n".join(lines) + "\n", "utf-8")
    (spool / "s1.json").write_text(json.dumps({"sent": {"cc:s1": 0}}), "utf-8")  # seq 0 acknowledged
    dry = cli("clean", "--dry-run", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    assert (f"; 2 Claude Code hook event(s) not yet sent to Kafka are in {spool} "
            "(send them first: checkpoint-guard ingest --spool)") in dry.stdout
    (spool / "s1.json").write_text(json.dumps({"sent": {"cc:s1": 2}}), "utf-8")  # all sent: nothing to say
    assert "not yet sent" not in cli("clean", "--dry-run", cwd=tmp_path).stdout


def test_demo_keep_running_says_how_to_connect_and_how_to_stop():
    from rich.console import Console

    from stream.devtools.demo import DEMO_HOME, Demo
    from stream.settings import Settings

    demo = Demo(Settings(broker="kafka://127.0.0.1:41234"), Console(), keep_running=True)
    demo.worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        demo.web_port, demo.broker_started = 45678, True
        text = demo.left_running()
    finally:
        demo.worker.kill()
        demo.worker.wait(10)
    assert "export CG_BROKER=kafka://127.0.0.1:41234" in text
    assert "http://127.0.0.1:45678/readyz" in text and str(DEMO_HOME / "worker.log") in text
    from stream.commands._base import runnable_prog

    cg = runnable_prog()
    assert f"kill {demo.worker.pid} && {cg} kafka stop --home {DEMO_HOME / 'kafka'}" in text
    assert f"then e.g. {cg} tail --from-beginning" in text


def test_the_command_shown_to_rerun_the_cli_is_one_the_shell_can_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stream.commands import _base

    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "checkpoint-guard").write_text("#!/bin/sh\n")
    (bin_dir / "checkpoint-guard").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_base.sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(_base.sys, "argv", [str(tmp_path / "stream" / "__main__.py")])  # python -m stream
    assert _base.runnable_prog() == ".venv/bin/checkpoint-guard"
    monkeypatch.setattr(_base.sys, "argv", [str(bin_dir / "checkpoint-guard")])  # the script, not on PATH
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert _base.runnable_prog() == str(bin_dir / "checkpoint-guard")
    monkeypatch.setenv("PATH", str(bin_dir))  # on PATH: the plain name
    assert _base.runnable_prog() == "checkpoint-guard"
    monkeypatch.setattr(_base.sys, "executable", str(tmp_path / "python"))  # no script at all
    monkeypatch.setattr(_base.sys, "argv", [str(tmp_path / "stream" / "__main__.py")])
    assert _base.runnable_prog() == f"{tmp_path / 'python'} -m stream"


@pytest.mark.parametrize("value, line", [
    (b'{"type":"artifact"}', b'{"type":"artifact"}\n'),
    ('{"id":"caf\u00e9"}'.encode(), '{"id":"caf\u00e9"}\n'.encode()),
    (b"", None), (None, None),
    (b'{"a":\n1}', None),              # two lines
    (b"\xff\xfe\x80", None),           # not UTF-8: a JSONL reader could not read the file
    (b'{"id":"\xed\xa0\x80"}', None),  # a lone surrogate is not UTF-8 either
])
def test_export_writes_only_values_that_are_one_utf8_line(value, line):
    from stream.commands.export import jsonl_line

    assert jsonl_line(value) == line


def test_replay_since_with_a_time_offline_says_time_is_for_from_kafka(tmp_path):
    (tmp_path / "ev.jsonl").write_text("", "utf-8")
    msg = one_error_line(cli("replay", "--since", "2026-01-01T00:00:00Z", "ev.jsonl", cwd=tmp_path), 2)
    assert msg == ("offline, --since takes no TIME (2026-01-01T00:00:00Z): it starts each context at its first "
                   "event read; a TIME is for --from-kafka")


@pytest.mark.parametrize("cmd", [("export",), ("replay", "--from-kafka")])
def test_an_until_before_since_is_one_line_before_any_broker_is_asked(tmp_path, cmd):
    proc = cli(*cmd, "--since", "2026-12-03T05:50:00Z", "--until", "2026-12-03T05:40:00Z", cwd=tmp_path,
               CG_BROKER="127.0.0.1:1")  # nothing listens there: a broker error would be another line
    assert one_error_line(proc, 2) == ("--until 2026-12-03T05:40:00Z is not after --since 2026-12-03T05:50:00Z: "
                                       "the range holds no record; swap them")


@pytest.mark.parametrize(("args", "line"), [
    (("ingst",), "No such command 'ingst'; did you mean 'ingest'? (see `checkpoint-guard -h`)"),
    (("bogus",), "No such command 'bogus' (see `checkpoint-guard -h`)"),
    (("ingest", "claude_code", "s.jsonl"), "no form or path 'claude_code': did you mean "
     "`ingest claude-code ...`? (the forms: openhands, claude-code; anything else is a trajectory file or directory)"),
    (("ingest", "openhand", "conv"), "no form or path 'openhand': did you mean "
     "`ingest openhands ...`? (the forms: openhands, claude-code; anything else is a trajectory file or directory)"),
])
def test_a_mistyped_command_or_ingest_form_gets_a_did_you_mean(tmp_path, args, line):
    assert one_error_line(cli(*args, cwd=tmp_path), 2) == line


def test_a_trajectory_path_close_to_a_form_name_is_read_as_a_path_when_it_exists(tmp_path):
    (tmp_path / "openhand").mkdir()  # a directory of that name: a path, no guess
    proc = cli("ingest", "openhand", cwd=tmp_path)
    assert "did you mean" not in proc.stderr and "openhand" in proc.stderr
