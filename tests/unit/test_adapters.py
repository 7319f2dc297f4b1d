"""Trajectory adapters: real runs -> turns, artifacts, constraints (stream/adapters).

Most tests read the traces shipped next to the repository (``stream/samples/traces``, a copy of
the workspace's ``shared/traces``, read-only); broken inputs are written to a temp directory. The CLI tests run
``python -m stream ingest`` in a subprocess, like a user.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stream.adapters import (
    AdapterError,
    SimulationParams,
    encode_event,
    load_file,
    load_trajectories,
    parse_rates,
    simulate,
)
from stream.adapters.simulated.extract import extract_constraints
from stream.adapters.simulated.formats import discover
from stream.adapters.simulated.swe_agent import ShellState, file_ops, normalize_path
from stream.adapters.simulated.tau_bench import entities

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
TRACES = REPO / "stream" / "samples" / "traces"
SWE = TRACES / "mini-swe-agent-deepseek-swebench"
TAU = TRACES / "tau-bench-airline-gpt4o" / "gpt-4o-airline.sample10.json"
DJANGO_11099 = SWE / "deepseek_chat_test_1-100" / "django__django-11099.traj.json"

SWE_PROHIBITIONS = {
    "DO NOT MODIFY: Tests, configuration files (pyproject.toml, setup.cfg, etc.)",
    "Avoid interactive tools like vi, nano, or any that require user input",
    "Do NOT commit your changes.",
    "Do not submit file creations or changes to any of the following files:",
    "You CANNOT continue working (reading, editing, testing) in any way on this task after submitting.",
}


@pytest.fixture(scope="module")
def shipped():
    if not TRACES.is_dir():
        pytest.fail(f"the shipped traces are missing: expected them at {TRACES}")
    return load_trajectories([TRACES])


def by_id(loaded, context_id):
    return next(t for t in loaded.trajectories if t.context_id == context_id)


# --------------------------------------------------------------------------- shipped data


def test_all_thirty_shipped_runs_load_without_errors(shipped):
    assert shipped.errors == []
    ids = [t.context_id for t in shipped.trajectories]
    assert len(ids) == len(set(ids)) == 30
    assert sum(i.startswith("swe:") for i in ids) == 20
    assert sum(i.startswith("tau:") for i in ids) == 10


def test_runs_come_in_sorted_path_order_and_array_order_inside_a_file(shipped):
    sources = [t.source.split("#")[0] for t in shipped.trajectories]
    assert sources == sorted(sources)
    tau_ids = [t.context_id for t in shipped.trajectories if t.context_id.startswith("tau:")]
    assert tau_ids == [f"tau:{n}" for n in (3, 33, 13, 28, 34, 17, 11, 26, 6, 0)]


def test_every_swe_run_states_the_same_five_prohibitions_in_its_first_turn(shipped):
    for t in shipped.trajectories:
        if t.context_id.startswith("swe:"):
            assert {c.text for c in t.turns[0].prohibitions} == SWE_PROHIBITIONS, t.context_id
            assert len(t.turns[0].instructions) >= 10
            assert all(not turn.constraints for turn in t.turns[1:])


def test_tau_policy_prohibitions_are_the_negated_sentences_of_the_wiki(shipped):
    t = by_id(shipped, "tau:3")
    texts = {c.text for c in t.turns[0].prohibitions}
    assert "Change flights: Basic economy flights cannot be modified." in texts
    assert "The user cannot add insurance after initial booking." in texts
    assert ("Do not compensate if the user is regular member and has no travel insurance and flies (basic) economy."
            in texts)
    # a negation inside an if-clause is a condition, not a prohibition
    assert not any(s.startswith("You should transfer the user to a human agent") for s in texts)
    assert len(texts) == 14
    positive = {c.text for c in t.turns[0].instructions}
    assert "The agent must first obtain the user id and the reservation id." in positive


def test_constraint_ids_are_content_hashes_shared_across_runs(shipped):
    a, b = (t for t in shipped.trajectories[:2])
    assert {c.id for c in a.turns[0].prohibitions} == {c.id for c in b.turns[0].prohibitions}
    assert all(c.id.startswith("prohibition:") for c in a.turns[0].prohibitions)


def test_swe_token_sizes_come_from_the_models_usage(shipped):
    t = by_id(shipped, "swe:django__django-11099")
    messages = json.loads(DJANGO_11099.read_text("utf-8"))["messages"]
    first_prompt = messages[2]["extra"]["response"]["usage"]["prompt_tokens"]
    assert t.turns[0].tokens == first_prompt == 1515
    last = [m for m in messages if m["role"] == "assistant"][-1]["extra"]["response"]["usage"]
    # every turn but the last step's output and the exit message is measured exactly
    assert abs(t.tokens - (last["prompt_tokens"] + last["completion_tokens"])) < 1000


def test_swe_artifacts_use_real_tool_call_ids_and_versioned_file_paths(shipped):
    t = by_id(shipped, "swe:django__django-11099")
    ids = t.artifact_ids
    assert "call_00_cWu9hm1ghJYqVepsjovYftnv" in ids
    assert "output:call_00_cWu9hm1ghJYqVepsjovYftnv" in ids
    assert "file:django/contrib/auth/validators.py@v0" in ids
    assert "file:django/contrib/auth/validators.py@v1" in ids  # the fix was written once
    assert "view:call_00_pHzjK2zNGUZ4R4hLgOe1EtSE:django/contrib/auth/validators.py" in ids
    step = t.turns[1]
    assert step.referent_candidates == ("call_00_cWu9hm1ghJYqVepsjovYftnv",)
    kinds = {a.artifact_id: a.kind for turn in t.turns for a in turn.artifacts}
    assert kinds["output:call_00_cWu9hm1ghJYqVepsjovYftnv"] == "tool_output"
    assert kinds["file:django/contrib/auth/validators.py@v1"] == "file"


def test_tau_entities_become_durable_record_artifacts(shipped):
    t = by_id(shipped, "tau:3")
    ids = t.artifact_ids
    for eid in ("entity:user:sofia_kim_7287", "entity:reservation:OBUT9V", "entity:flight:HAT078",
                "entity:payment:gift_card_6276644"):
        assert eid in ids, eid
    kinds = {a.artifact_id: a.kind for turn in t.turns for a in turn.artifacts}
    assert kinds["entity:reservation:OBUT9V"] == "durable_record"
    assert "span:policy" in ids and "span:task" in ids


def test_entities_are_found_in_nested_tool_values():
    value = {
        "reservation_id": "AB12CD",
        "payment_methods": {"gift_card_1": {"id": "gift_card_1"}},
        "reservations": ["ZZ9ZZ9"],
        "flights": [{"flight_number": "HAT001", "origin": "JFK"}],
    }
    assert set(entities(value)) == {
        ("reservation", "AB12CD"), ("payment", "gift_card_1"), ("reservation", "ZZ9ZZ9"), ("flight", "HAT001"),
    }


# --------------------------------------------------------------------------- shell heuristics


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("cat ./django/x.py", [("read", "django/x.py")]),
        ("cd /testbed/src && sed -n '1,50p' pkg/mod.py", [("read", "src/pkg/mod.py")]),
        ("sed -i 's/a\\.b/c/g' /testbed/pkg/mod.py", [("write", "pkg/mod.py")]),
        ("grep -n \"def f\" pkg/a.py pkg/b.py | head", [("read", "pkg/a.py"), ("read", "pkg/b.py")]),
        ("cat > new.py << 'EOF'\nprint('x > y.py')\nEOF", [("write", "new.py")]),
        ("cp pkg/a.py pkg/a.py.backup", [("read", "pkg/a.py"), ("write", "pkg/a.py.backup")]),
        ("git diff -- pkg/a.py > patch.txt && cat patch.txt", [("write", "patch.txt"), ("read", "patch.txt")]),
        ("find . -name '*.py' | grep -v test", []),
        ("python -m pytest tests/test_a.py -x 2>&1 | tail", []),
    ],
)
def test_file_ops_of_shell_commands(command, expected):
    assert file_ops(command, ShellState()) == expected


def test_a_python_script_that_opens_a_file_for_writing_writes_it_when_run():
    state = ShellState()
    script = "cat > fix.py << 'EOF'\nwith open('pkg/mod.py', 'w') as f:\n    f.write(src)\nEOF"
    assert file_ops(script, state) == [("write", "fix.py")]
    assert file_ops("python fix.py", state) == [("write", "pkg/mod.py")]


def test_a_patch_written_earlier_writes_its_targets_when_applied():
    state = ShellState()
    patch = "cat > fix.patch << 'EOF'\n--- a/pkg/mod.py\n+++ b/pkg/mod.py\n@@ -1 +1 @@\nEOF"
    file_ops(patch, state)
    assert file_ops("patch -p1 < fix.patch", state) == [("write", "pkg/mod.py")]
    assert file_ops("git apply fix.patch", state) == [("write", "pkg/mod.py")]


def test_unbalanced_quotes_do_not_break_the_tokenizer():
    assert file_ops("cat pkg/a.py 'oops", ShellState()) == [("read", "pkg/a.py")]


def test_paths_are_normalized_against_the_working_directory():
    assert normalize_path("./a/../b.py") == "b.py"
    assert normalize_path("/testbed/x/y.py") == "x/y.py"
    assert normalize_path("/tmp/t.py") == "/tmp/t.py"


def test_negation_cues_make_prohibitions_and_modal_sentences_instructions():
    text = "- Never push to main.\n- Always run the tests.\n## Heading\n- You must not skip CI.\nPlain prose here."
    got = {(c.polarity, c.text) for c in extract_constraints(text)}
    assert got == {
        ("prohibition", "Never push to main."),
        ("instruction", "Always run the tests."),
        ("prohibition", "You must not skip CI."),
    }


# --------------------------------------------------------------------------- bad input


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def test_a_malformed_file_is_reported_by_name_and_the_others_still_load(tmp_path):
    good = tmp_path / "runs" / "good.traj.json"
    shutil.copy(DJANGO_11099, write(good, ""))
    write(tmp_path / "runs" / "broken.traj.json", '{"messages": [')
    write(tmp_path / "runs" / "other.json", '{"hello": "world"}')
    write(tmp_path / "runs" / "notes.md", "# ignored")
    write(tmp_path / "runs" / "LICENSE", "MIT")
    loaded = load_trajectories([tmp_path / "runs"])
    assert [t.context_id for t in loaded.trajectories] == ["swe:django__django-11099"]
    messages = sorted(str(e) for e in loaded.errors)
    assert len(messages) == 2
    assert messages[0].startswith(f"{tmp_path / 'runs' / 'broken.traj.json'}: not valid JSON")
    assert messages[1].startswith(f"{tmp_path / 'runs' / 'other.json'}: unknown trajectory format")
    assert all("\n" not in m for m in messages)


def test_load_file_raises_an_adapter_error_naming_the_file(tmp_path):
    bad = write(tmp_path / "x.traj.json", json.dumps({"instance_id": "x", "messages": [{"role": "system"}, 3]}))
    with pytest.raises(AdapterError) as info:
        load_file(bad)
    assert info.value.path == str(bad)
    assert str(info.value) == f"{bad}: messages[1] is not an object with a 'role'"


def test_one_broken_run_in_a_tau_array_does_not_lose_the_others(tmp_path):
    runs = json.loads(TAU.read_text("utf-8"))[:2]
    runs.insert(1, {"task_id": 99, "traj": "nope"})
    f = write(tmp_path / "tau.json", json.dumps(runs))
    loaded = load_trajectories([f])
    assert [t.context_id for t in loaded.trajectories] == ["tau:3", "tau:33"]
    assert [str(e) for e in loaded.errors] == [f"{f.as_posix()}#1: traj is not a non-empty list of messages"]


def test_missing_paths_and_non_json_files_are_errors(tmp_path):
    files, errors = discover([tmp_path / "nope", write(tmp_path / "a.txt", "x"), Path("/dev/null")])
    assert files == []
    assert [e.problem for e in errors] == [
        "no such file or directory",
        "not a trajectory file (expected *.traj.json or a tau-bench *.json array)",
        "not a regular file or directory",
    ]


def test_the_same_run_twice_is_a_duplicate_context(tmp_path):
    shutil.copy(DJANGO_11099, write(tmp_path / "a.traj.json", ""))
    shutil.copy(DJANGO_11099, write(tmp_path / "b.traj.json", ""))
    loaded = load_trajectories([tmp_path])
    assert len(loaded.trajectories) == 1
    assert "duplicate context_id 'swe:django__django-11099'" in str(loaded.errors[0])


# --------------------------------------------------------------------------- the CLI


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "stream", "ingest", *args], cwd=cwd, env=env, capture_output=True, timeout=120
    )


def test_ingest_cli_writes_the_library_jsonl_and_reports_bad_files(tmp_path):
    shutil.copy(DJANGO_11099, write(tmp_path / "in" / "django.traj.json", ""))
    write(tmp_path / "in" / "broken.traj.json", "[1,")
    proc = run_cli("in", "--seed", "3", "--out", "out.jsonl", cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    err = proc.stderr.decode("utf-8").splitlines()
    assert err[0] == "checkpoint-guard: ingest: in/broken.traj.json: not valid JSON: Expecting value at line 1 column 4"
    assert err[-1].startswith("ingest: 1 contexts, ")
    assert "1 file(s) failed" in err[-1]
    traj = load_file(DJANGO_11099)[0]
    expected = "".join(encode_event(e) + "\n" for e in simulate(traj, SimulationParams(seed=3)))
    assert (tmp_path / "out.jsonl").read_text("utf-8") == expected
    assert proc.stdout == b""


def test_rates_options_are_parsed_or_rejected_with_one_line():
    assert parse_rates("0.71,0.34,0.09") == (0.71, 0.34, 0.09)
    with pytest.raises(ValueError, match=r"expected three rates in \[0, 1\]"):
        parse_rates("0.7,1.5,0.1")
    with pytest.raises(ValueError, match="expected three numbers"):
        parse_rates("high,low,none")


def test_a_json_error_names_where_without_a_doubled_at():
    import json

    from stream.adapters.common import json_error

    with pytest.raises(json.JSONDecodeError) as open_string:
        json.loads('{"a": "open')
    assert json_error(open_string.value) == "Unterminated string starting at line 1 column 7"
    assert json_error(open_string.value, line=False) == "Unterminated string starting at column 7"
    with pytest.raises(json.JSONDecodeError) as no_value:
        json.loads('{"a": }')
    assert json_error(no_value.value) == "Expecting value at line 1 column 7"
