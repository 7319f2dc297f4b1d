"""The Claude Code hook, through the real protocol: transcripts played forward, the hook run as
a subprocess with the JSON Claude Code sends at each point (stream/devtools/claude_code_player.py).

No broker here (``CG_HOOK_KAFKA=false``: the spool keeps every event, so the spool *is* what
the hook emitted); Kafka and ``ingest --spool`` are tests/integration/test_hook_kafka.py.
Expected values come from the batch path only: ``ingest claude-code`` of the finished file,
and the engine's ``negative_constraint_dropped`` alerts on those events.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from stream.devtools.claude_code_player import Player, hook_env, synthetic_session, write_jsonl
from stream.offline.replay import replay_lines

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "compaction_logs" / "claude-code"


def env_for(tmp: Path, **extra: str) -> dict[str, str]:
    """The hook's environment for a test: its own dirs, no Kafka, and a budget no loaded CI machine
    reaches (the budget itself has its own test; its time is a benchmark, bench/bench_hook.py)."""
    settings = {"CG_HOOK_KAFKA": "false", "CG_HOOK_BUDGET": "60", "XDG_DATA_HOME": str(tmp / "xdg"),
                "PYTHONPATH": str(REPO), **extra}
    return hook_env(tmp / "hook", **settings)


def batch(path: Path, env: dict[str, str]) -> bytes:
    proc = subprocess.run([sys.executable, "-m", "stream", "ingest", "claude-code", str(path)], env=env,
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def spooled(tmp: Path) -> dict[str, bytes]:
    return {p.stem: p.read_bytes() for p in sorted((tmp / "hook" / "spool").glob("*.jsonl"))}


def hook_log(tmp: Path) -> str:
    p = tmp / "hook" / "hook.log"
    return p.read_text() if p.exists() else ""


def journal(tmp: Path, session: str) -> list[dict]:
    p = tmp / "hook" / "sessions" / session / "compactions.jsonl"
    return [json.loads(line) for line in p.read_text().splitlines()] if p.exists() else []


def engine_drops(events: bytes) -> dict[str, set[str]]:
    """Summary node -> the engine's negative_constraint_dropped set when its checkpoint arrived."""
    lines = events.splitlines()
    first_event = {}
    for line in lines:
        e = json.loads(line)
        if e["type"] == "checkpoint" and e.get("level") in ("leaf", "section"):
            first_event.setdefault(e["node_id"], e["event_id"])
    out = {n: set() for n in first_event}
    for a in replay_lines(lines).alerts:
        if a["rule"] == "negative_constraint_dropped" and first_event.get(a["node_id"]) == a["trigger"]["event_id"]:
            out[a["node_id"]] = set(a["missing_constraints"])
    return out


def raw_texts(events: bytes) -> dict[str, str]:
    out = {}
    for line in events.splitlines():
        e = json.loads(line)
        for c in e.get("raw_negative_constraints") or []:
            out.setdefault(c["id"], c["text"])
    return out


def play(tmp: Path, source: Path, **kw) -> Player:
    player = Player(source, tmp / "projects" / "-home-dev-app" / source.name, env_for(tmp), **kw)
    player.play()
    return player


def assert_protocol_kept(player: Player) -> None:
    """Exit 0, and stdout is empty or exactly one SessionStart JSON object, on every call."""
    for call in player.calls:
        assert call.returncode == 0, (call.event, call.stderr)
        if call.stdout:
            assert call.event == "SessionStart" and call.payload["source"] == "compact"
            out = json.loads(call.stdout)
            assert list(out) == ["hookSpecificOutput"]
            assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
            assert set(out["hookSpecificOutput"]) == {"hookEventName", "additionalContext"}
            assert 0 < len(out["hookSpecificOutput"]["additionalContext"]) <= 4000


@pytest.fixture(scope="module")
def played_synthetic(tmp_path_factory):
    """A 30-turn synthetic session with two compactions, played forward once for several tests."""
    tmp = tmp_path_factory.mktemp("synthetic")
    source = write_jsonl(synthetic_session("5e55a000-0000-4000-8000-000000000001", turns=32, compact_every=12),
                         tmp / "source" / "5e55a000-0000-4000-8000-000000000001.jsonl")
    player = play(tmp, source, stop_every=3)
    return tmp, source, player


# --------------------------------------------------------------------------- live = batch


def test_live_equals_batch_byte_for_byte_on_a_session_with_two_compactions(played_synthetic):
    tmp, source, player = played_synthetic
    assert_protocol_kept(player)
    assert spooled(tmp) == {source.stem: batch(source, env_for(tmp))}
    assert hook_log(tmp).count("dropped") == 2, hook_log(tmp)


def test_after_each_compaction_the_hook_hands_back_exactly_the_engines_dropped_set(played_synthetic):
    tmp, source, player = played_synthetic
    events = batch(source, env_for(tmp))
    drops, texts = engine_drops(events), raw_texts(events)
    starts = [c for c in player.calls if c.event == "SessionStart"]
    rows = journal(tmp, source.stem)
    assert [r["node_id"] for r in rows] == list(drops) and len(starts) == len(drops) == 2
    for call, row in zip(starts, rows):
        want = drops[row["node_id"]]
        assert want, "the synthetic summaries each drop rules"
        assert set(row["dropped"]) == want == set(row["shown"])
        context = call.context
        for cid in want:  # verbatim, each with where it came from
            assert f"\"{' '.join(texts[cid].split())}\"" in context
        assert "typed by the user" in context


def test_the_text_handed_back_is_ascii_escaped_json_whatever_the_rule_and_stdouts_encoding(tmp_path):
    rule = "Never push to the “main” branch of Zoë’s \u672c\u756a repo \U0001f6ab \\n \\\" } \u2014 ask first."
    records = synthetic_session("5e55a000-0000-4000-8000-0000000000a5", turns=14, compact_every=12)
    for r in records:  # the user says the rule in non-ASCII words; the summary quotes the old ASCII ones
        if r["type"] == "user" and isinstance(r["message"]["content"], str) and not r.get("isCompactSummary"):
            r["message"]["content"] = r["message"]["content"].replace("Never push to the main branch.", rule)
    source = write_jsonl(records, tmp_path / "source" / "5e55a000-0000-4000-8000-0000000000a5.jsonl")
    # balanced: the rule's drop cue (not-quoted: a rule in two scripts is not read as English, so no trace share
    # tells that nothing of it is left) alerts only from that level on; this test is about the text's escaping
    env = env_for(tmp_path, PYTHONIOENCODING="ascii", CG_JUDGE_PRECISION="balanced")
    player = Player(source, tmp_path / "projects" / source.name, env)
    player.play()
    assert_protocol_kept(player)
    [start] = [c for c in player.calls if c.event == "SessionStart"]
    assert start.stdout.isascii() and start.stdout.lstrip().startswith("{")
    [said] = [t for t in raw_texts(batch(source, env_for(tmp_path))).values() if not t.isascii()]
    assert said.startswith("Never push to the “main” branch") and f"\"{said}\"" in start.context


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURES.glob("*.jsonl")))
def test_every_claude_code_fixture_played_forward_gives_the_batch_events(tmp_path, name):
    player = play(tmp_path, FIXTURES / name)
    assert_protocol_kept(player)
    events = batch(FIXTURES / name, env_for(tmp_path))
    assert b"".join(spooled(tmp_path).values()) == events
    drops = engine_drops(events)
    handed = {r["node_id"]: set(r["dropped"]) for r in journal(tmp_path, player.session_id) if r["node_id"]}
    assert handed == {n: d for n, d in drops.items() if n in handed} and set(handed) == set(drops)
    for call, row in zip([c for c in player.calls if c.event == "SessionStart"], journal(tmp_path, player.session_id)):
        assert (call.context is None) == (not row["dropped"])  # nothing at all when nothing was dropped


def test_a_record_being_written_is_read_once_complete(tmp_path):
    source = FIXTURES / "cc-every-channel.jsonl"
    player = play(tmp_path, source, split_records=True)
    assert_protocol_kept(player)
    assert b"".join(spooled(tmp_path).values()) == batch(source, env_for(tmp_path))
    assert "Error" not in hook_log(tmp_path)


# --------------------------------------------------------------------------- what the hook must survive


def call_hook(env: dict[str, str], payload: dict | bytes, *args: str) -> subprocess.CompletedProcess:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    return subprocess.run([sys.executable, "-m", "stream", "hook", "claude-code", *args], input=data, env=env,
                          capture_output=True, timeout=120)


def stop(transcript: Path, session: str = "s-1", event: str = "Stop", **fields) -> dict:
    return {
        "session_id": session,
        "transcript_path": str(transcript),
        "cwd": "/tmp",
        "hook_event_name": event,
        **fields,
    }


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1,2]", b'{"hook_event_name": "Stop"}',
                                   b'{"session_id": "", "hook_event_name": "Stop"}',
                                   b'{"session_id": 7, "hook_event_name": "Stop", "transcript_path": "/x"}'])
def test_input_claude_code_never_sends_is_one_log_line_exit_0_and_nothing_on_stdout(tmp_path, stdin):
    proc = call_hook(env_for(tmp_path), stdin)
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert len(hook_log(tmp_path).splitlines()) == 1, hook_log(tmp_path)


@pytest.mark.parametrize(
    "redirect",
    ["{cmd} >&-", "{cmd} >/dev/full", "{cmd} | (exec 0<&-; sleep 0.01); exit ${{PIPESTATUS[0]}}"],
    ids=["stdout closed", "stdout full", "stdout a broken pipe"],
)
def test_an_answer_that_cannot_be_written_to_stdout_is_still_exit_0_and_one_log_line(tmp_path, redirect):
    source = FIXTURES / "cc-dropped-prohibition.jsonl"
    cmd = " ".join([sys.executable, "-m", "stream", "hook", "claude-code"])
    player = Player(source, tmp_path / "projects" / source.name, env_for(tmp_path),
                    command=["bash", "-c", redirect.format(cmd=cmd)])
    player.play()
    assert [c.returncode for c in player.calls] == [0] * len(player.calls) and "SessionStart" in [
        c.event for c in player.calls
    ]
    assert "handed back 1" in hook_log(tmp_path) and "event=SessionStart" in hook_log(tmp_path)


@pytest.mark.parametrize("setting", [{"CG_HOOK_BUDGET": "abc"}, {"CG_BROKER": "http://x:1"}])
def test_a_broken_setting_or_option_still_exits_0_with_nothing_on_stdout(tmp_path, setting):
    proc = call_hook(env_for(tmp_path, **setting), stop(tmp_path / "t.jsonl", event="PreCompact", trigger="auto"))
    assert (proc.returncode, proc.stdout) == (0, b"")
    proc = call_hook(env_for(tmp_path), stop(tmp_path / "t.jsonl"), "--no-such-option")
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert "exit 0 so Claude Code goes on" in (
        tmp_path / "xdg" / "checkpoint-guard" / "claude-code" / "hook.log"
    ).read_text() + hook_log(tmp_path)


def test_an_unwritable_hook_dir_is_exit_0_and_nothing_on_stdout(tmp_path):
    (tmp_path / "hook").write_text("a file where the directory should be")
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "cc-dropped-prohibition.jsonl").read_bytes())
    proc = call_hook(env_for(tmp_path), stop(transcript, event="SessionStart", source="compact"))
    assert (proc.returncode, proc.stdout) == (0, b"")


def test_a_missing_transcript_loses_nothing_once_it_appears(tmp_path):
    env = env_for(tmp_path)
    transcript = tmp_path / "later" / "t.jsonl"
    proc = call_hook(env, stop(transcript, "cc-dropped-prohibition"))
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert "does not exist (yet)" in hook_log(tmp_path)
    transcript.parent.mkdir()
    transcript.write_bytes((FIXTURES / "cc-dropped-prohibition.jsonl").read_bytes())
    assert call_hook(env, stop(transcript, "cc-dropped-prohibition")).returncode == 0
    assert b"".join(spooled(tmp_path).values()) == batch(transcript, env)


def test_a_transcript_rewritten_under_the_hook_is_read_again_and_no_seq_is_emitted_twice(tmp_path):
    env = env_for(tmp_path)
    source = FIXTURES / "cc-every-channel.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b"".join(lines[:6]))
    assert call_hook(env, stop(transcript)).returncode == 0
    first = b"".join(spooled(tmp_path).values())
    # same bytes, new file (an editor's save): not a rewrite, nothing again
    transcript.with_suffix(".tmp").write_bytes(transcript.read_bytes())
    os.replace(transcript.with_suffix(".tmp"), transcript)
    assert call_hook(env, stop(transcript)).returncode == 0
    assert b"".join(spooled(tmp_path).values()) == first and "rewritten" not in hook_log(tmp_path)
    # a different prefix (a record edited): read again from the start, only the new seqs go out
    edited = lines[0].replace(b"cart totals in cents", b"cart totals in pennies")
    transcript.write_bytes(edited + b"".join(lines[1:]))
    assert call_hook(env, stop(transcript)).returncode == 0
    assert "rewritten" in hook_log(tmp_path)
    seqs = [json.loads(line)["seq"] for line in b"".join(spooled(tmp_path).values()).splitlines()]
    assert seqs == list(range(len(seqs))), "every seq once, in order"
    assert len(seqs) == len(batch(transcript, env).splitlines())


def test_two_sessions_at_once_each_give_their_batch_events(tmp_path):
    sources = [
        write_jsonl(synthetic_session(sid, turns=14, compact_every=6, seed=i), tmp_path / "src" / f"{sid}.jsonl")
        for i, sid in enumerate(("aaaa0000-0000-4000-8000-00000000000a", "bbbb0000-0000-4000-8000-00000000000b"))
    ]
    players = [Player(s, tmp_path / "projects" / s.name, env_for(tmp_path), stop_every=2) for s in sources]
    threads = [threading.Thread(target=p.play) for p in players]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in players:
        assert_protocol_kept(p)
    assert spooled(tmp_path) == {s.stem: batch(s, env_for(tmp_path)) for s in sources}


def test_a_lost_adapter_state_is_re_derived_without_sending_anything_twice(tmp_path):
    env = env_for(tmp_path)
    source = FIXTURES / "cc-every-channel.jsonl"
    lines = source.read_bytes().splitlines(keepends=True)
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b"".join(lines[:8]))
    session = "e4c90000-0000-4000-8000-0000000000c9"
    assert call_hook(env, stop(transcript, session)).returncode == 0
    (tmp_path / "hook" / "sessions" / session / "adapter.pickle").unlink()
    transcript.write_bytes(b"".join(lines))
    assert call_hook(env, stop(transcript, session)).returncode == 0
    assert b"".join(spooled(tmp_path).values()) == batch(transcript, env)
    assert "differ" not in hook_log(tmp_path)


def test_a_call_over_its_budget_commits_nothing_and_a_catch_up_finishes(tmp_path):
    source = write_jsonl(synthetic_session("cccc0000-0000-4000-8000-00000000000c", turns=30, compact_every=10),
                         tmp_path / "t.jsonl")
    env = env_for(tmp_path, CG_HOOK_BUDGET="0.05")
    proc = call_hook(env, stop(source, "cccc0000-0000-4000-8000-00000000000c"))
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert "budget" in hook_log(tmp_path)
    deadline = time.monotonic() + 60
    want = batch(source, env)
    while time.monotonic() < deadline and b"".join(spooled(tmp_path).values()) != want:
        time.sleep(0.2)
    assert b"".join(spooled(tmp_path).values()) == want


def test_a_session_held_by_another_call_is_read_by_the_next_one(tmp_path):
    from stream.hook.store import locked

    env = env_for(tmp_path, CG_HOOK_BUDGET="2")
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes((FIXTURES / "cc-dropped-prohibition.jsonl").read_bytes())
    lock = tmp_path / "hook" / "sessions" / "cc-dropped-prohibition" / "lock"
    with locked(lock, None):
        proc = call_hook(env, stop(transcript, "cc-dropped-prohibition"))
    assert (proc.returncode, proc.stdout) == (0, b"")
    assert "held this session" in hook_log(tmp_path) and not spooled(tmp_path)
    assert call_hook(env, stop(transcript, "cc-dropped-prohibition")).returncode == 0
    assert b"".join(spooled(tmp_path).values()) == batch(transcript, env)


def test_a_compaction_whose_summary_is_late_in_the_transcript_is_still_answered(tmp_path):
    env = env_for(tmp_path, CG_HOOK_SUMMARY_WAIT="5")
    lines = (FIXTURES / "cc-dropped-prohibition.jsonl").read_bytes().splitlines(keepends=True)
    summary_at = next(i for i, line in enumerate(lines) if b'"isCompactSummary": true' in line)
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(b"".join(lines[:summary_at]))

    def write_late() -> None:
        time.sleep(1.0)
        with open(transcript, "ab") as fh:
            fh.write(b"".join(lines[summary_at:]))

    writer = threading.Thread(target=write_late)
    writer.start()
    proc = call_hook(env, stop(transcript, "cc-dropped-prohibition", event="SessionStart", source="compact"))
    writer.join()
    assert proc.returncode == 0
    context = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "Do not add new dependencies to package.json" in context
