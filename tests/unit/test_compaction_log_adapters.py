"""Compaction-log adapters: OpenHands conversations and Claude Code transcripts -> events.

The fixtures (``tests/fixtures/compaction_logs``, documented in its README) are run the
way a user runs them — ``python -m stream ingest ... | python -m stream replay -`` in
subprocesses — and must give exactly the alerts the README lists. The rest checks the
library directly: determinism, per-record errors, unknown types, following a live log.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stream.adapters import encode_event
from stream.adapters.compaction.claude_code import ClaudeCodeTranscript
from stream.adapters.compaction.compaction_logs import mentioned_artifacts, path_names
from stream.adapters.compaction.openhands import OpenHandsConversation
from stream.adapters.compaction.openhands import discover as discover_oh
from stream.adapters.compaction.prohibitions import ProhibitionMatcher
from stream.offline.replay import replay_lines
from tests.unit.builders import AGENT_SERVER, BETA, COMPACTION_LOGS, NCD, ORPHAN, brief

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "compaction_logs"
OH = FIXTURES / "openhands"
CC = FIXTURES / "claude-code"

ALPHA = "7a1e0000-0000-4000-8000-0000000000a1"
TRANSCRIPT = "/home/dev/.claude/projects/-home-dev-app/d3b80000-0000-4000-8000-0000000000b8.jsonl"

#: fixture -> (format, paths, exact alerts); the table: tests/unit/builders.py (mirrors README.md).
EXPECTED = {name: (fmt, [FIXTURES / p for p in paths], alerts)
            for name, (fmt, paths, _, alerts) in COMPACTION_LOGS.items()}


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def ingest(*args: str, cwd: Path = REPO, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stream", "ingest", *args], cwd=cwd, env=cli_env(),
                          capture_output=True, timeout=timeout)


def ingest_then_replay(*args: str) -> tuple[list[dict], str, str]:
    """``ingest ARGS | replay -`` through a real pipe; returns (alerts, ingest stderr, replay stderr)."""
    env = cli_env()
    producer = subprocess.Popen([sys.executable, "-m", "stream", "ingest", *args], cwd=REPO, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    consumer = subprocess.run([sys.executable, "-m", "stream", "replay", "-"], cwd=REPO, env=env,
                              stdin=producer.stdout, capture_output=True, timeout=120)
    producer.stdout.close()
    ingest_err = producer.stderr.read().decode()
    assert producer.wait(60) == 0, ingest_err
    assert consumer.returncode == 0, consumer.stderr.decode()
    return [json.loads(line) for line in consumer.stdout.splitlines()], ingest_err, consumer.stderr.decode()


def library_events(fmt: str, paths: Path | list[Path], **kw) -> list[dict]:
    """The events of one ingest run over ``paths`` (one shared context table, as the CLI does)."""
    shared: dict = {}
    events: list[dict] = []
    for path in paths if isinstance(paths, list) else [paths]:
        if fmt == "openhands":
            dirs = [path] if (path / "events").is_dir() else discover_oh([path])[0]
            for d in dirs:
                events += OpenHandsConversation(d, contexts=shared, **kw).poll(final=True)
        else:
            events += ClaudeCodeTranscript(path, sessions=shared, **kw).poll(final=True)
    return events


def lines_of(events: list[dict]) -> list[str]:
    return [encode_event(e) for e in events]


def replay_of(events: list[dict]):
    return replay_lines(lines_of(events))


# --------------------------------------------------------------------------- the fixtures


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_ingest_piped_into_replay_gives_exactly_the_fixtures_documented_alerts(name):
    fmt, paths, expected = EXPECTED[name]
    alerts, ingest_err, replay_err = ingest_then_replay(fmt, *map(str, paths))
    assert brief(alerts) == expected
    assert ingest_err.splitlines()[-1].startswith(f"ingest {fmt}: ")
    assert "0 dead letters" in replay_err


def test_a_stricter_match_threshold_makes_the_kept_paraphrase_uncertain_which_alerts_only_when_asked():
    alerts, _, _ = ingest_then_replay("openhands", str(OH / "paraphrased-prohibition"), "--match-threshold", "0.9")
    assert brief(alerts) == []  # 5 of 6 key words < 0.9: uncertain, which counts as carried by default
    strict = ProhibitionMatcher(threshold=0.9, alert_uncertain=True)
    assert brief(replay_of(library_events("openhands", OH / "paraphrased-prohibition", judge=strict)).alerts) == [
        (NCD, "open", "00000004-0000-4000-8000-000000000005-summary", ["prohibition:fce9d84e3c79"]),
        (NCD, "open", "root:oh:paraphrased-prohibition", ["prohibition:fce9d84e3c79"]),
    ]
    cli_strict, _, _ = ingest_then_replay("openhands", str(OH / "paraphrased-prohibition"), "--match-threshold", "0.9",
                                          "--alert-uncertain")
    assert brief(cli_strict) == brief(replay_of(library_events("openhands", OH / "paraphrased-prohibition",
                                                               judge=strict)).alerts)


def test_the_library_and_the_cli_agree_on_every_fixture():
    for fmt, paths, expected in EXPECTED.values():
        assert brief(replay_of(library_events(fmt, paths)).alerts) == expected


def test_the_same_log_twice_gives_byte_identical_events():
    for fmt, paths, _ in EXPECTED.values():
        assert lines_of(library_events(fmt, paths)) == lines_of(library_events(fmt, paths))
    a = ingest("claude-code", str(CC))
    b = ingest("claude-code", str(CC))
    assert a.returncode == b.returncode == 0, a.stderr
    assert a.stdout == b.stdout and a.stdout.count(b"\n") > 40


def test_events_do_not_depend_on_where_the_log_is_stored(tmp_path):
    shutil.copytree(OH / "folded-summary", tmp_path / "elsewhere" / "folded-summary")
    assert lines_of(library_events("openhands", tmp_path / "elsewhere" / "folded-summary")) == lines_of(
        library_events("openhands", OH / "folded-summary")
    )
    shutil.copy(CC / "cc-every-channel.jsonl", tmp_path / "renamed.jsonl")
    assert lines_of(library_events("claude-code", tmp_path / "renamed.jsonl")) == lines_of(
        library_events("claude-code", CC / "cc-every-channel.jsonl")
    )


def test_seq_follows_source_order_and_starts_at_zero_per_context():
    for fmt, paths, _ in EXPECTED.values():
        by_context: dict[str, list[dict]] = {}
        for e in library_events(fmt, paths):
            by_context.setdefault(e["context_id"], []).append(e)
        for events in by_context.values():
            assert [e["seq"] for e in events] == list(range(len(events)))
            assert len({e["event_id"] for e in events}) == len(events)


def test_a_persistence_directory_ingests_every_conversation_in_sorted_order():
    proc = ingest("openhands", str(OH))
    assert proc.returncode == 0, proc.stderr
    contexts = list(dict.fromkeys(json.loads(line)["context_id"] for line in proc.stdout.splitlines()))
    assert contexts == [f"oh:{n}" for n in ("folded-summary", "legacy-summary-ids", "opaque-summary", "orphaned-file",
                                            "paraphrased-prohibition")]


# --------------------------------------------------------------------------- context ids and independent runs


def test_two_sessions_saved_as_full_jsonl_are_two_contexts_named_by_their_session_ids():
    events = library_events("claude-code", EXPECTED["two-sessions-named-full"][1])
    assert list(dict.fromkeys(e["context_id"] for e in events)) == [f"cc:{ALPHA}", f"cc:{BETA}"]


def test_independently_ingested_sessions_replayed_together_never_mix(tmp_path):
    alpha, beta = EXPECTED["two-sessions-named-full"][1]
    lines = lines_of(library_events("claude-code", alpha)) + lines_of(library_events("claude-code", beta))
    result = replay_lines(lines)
    assert result.dropped == 0 and result.duplicates == 0 and result.applied == len(lines)
    assert brief(result.alerts) == EXPECTED["two-sessions-named-full"][2]


def test_the_agent_server_layout_is_named_by_the_conversation_id_of_base_state():
    events = library_events("openhands", FIXTURES / "openhands-agent-server")
    assert {e["context_id"] for e in events} == {f"oh:{AGENT_SERVER}"}


@pytest.mark.parametrize("damage, says", [
    (b"\x00\xffnot json", "not JSON"),
    (b'{"agent": {}}', 'no conversation "id" in it'),
])
def test_a_base_state_without_an_id_warns_that_the_directory_names_the_context(tmp_path, damage, says):
    conv = tmp_path / "conv-7"
    shutil.copytree(FIXTURES / "openhands-agent-server" / AGENT_SERVER / "event_service", conv)
    (conv / "base_state.json").write_bytes(damage)
    reader = OpenHandsConversation(conv)
    assert reader.context_id == "oh:conv-7"
    assert reader.stats.warnings == [f"{conv / 'base_state.json'}: {says}; the context is named after the "
                                     "directory (oh:conv-7)"]
    (conv / "base_state.json").unlink()  # none at all: the directory's name by design, nothing to say
    assert OpenHandsConversation(conv).stats.warnings == []


def test_a_growing_copy_read_in_the_same_run_continues_the_context_without_repeating_events():
    short, long = EXPECTED["growing-copies"][1]
    both = library_events("claude-code", [short, long])
    alone = library_events("claude-code", long)
    assert lines_of(both) == lines_of(alone)


def test_the_events_of_a_prefix_are_a_prefix_of_the_events_of_the_whole_log():
    short, long = EXPECTED["growing-copies"][1]
    prefix, whole = lines_of(library_events("claude-code", short)), lines_of(library_events("claude-code", long))
    assert 0 < len(prefix) < len(whole) and whole[: len(prefix)] == prefix


@pytest.mark.parametrize("name", sorted(n for n, (fmt, _, _) in EXPECTED.items() if fmt == "claude-code"))
def test_every_cut_of_a_transcript_gives_a_prefix_of_its_events(name, tmp_path):
    for path in EXPECTED[name][1]:
        data = path.read_bytes()
        whole = lines_of(library_events("claude-code", path))
        ends = [i + 1 for i, byte in enumerate(data) if byte == 0x0A]
        cuts = sorted({0, len(data), *ends, *(e - 1 for e in ends), *((a + b) // 2 for a, b in zip([0, *ends], ends))})
        for cut in cuts:  # a copy taken at any moment: after a line, before its newline, mid-line
            (tmp_path / "copy.jsonl").write_bytes(data[:cut])
            part = lines_of(ClaudeCodeTranscript(tmp_path / "copy.jsonl").poll(final=True))
            assert whole[: len(part)] == part, f"{path.name} cut at byte {cut}"


@pytest.mark.parametrize("name", sorted(n for n, (fmt, _, _) in EXPECTED.items() if fmt == "openhands"))
def test_every_cut_of_a_conversation_gives_a_prefix_of_its_events(name, tmp_path):
    for path in EXPECTED[name][1]:
        for conv in discover_oh([path])[0]:
            whole = lines_of(library_events("openhands", conv))
            files = sorted((conv / "events").iterdir())
            for cut in range(len(files) + 1):
                copy = tmp_path / f"cut{cut}" / conv.name
                (copy / "events").mkdir(parents=True)
                shutil.copy(conv / "base_state.json", copy / "base_state.json")
                for f in files[:cut]:
                    shutil.copy(f, copy / "events" / f.name)
                part = lines_of(OpenHandsConversation(copy).poll(final=True))
                assert whole[: len(part)] == part, f"{conv.name} cut after {cut} event files"


def test_independent_runs_over_growing_copies_replay_to_the_alerts_of_the_longest_in_any_order():
    short, long = (library_events("claude-code", p) for p in EXPECTED["growing-copies"][1])
    expected = brief(replay_of(long).alerts)
    assert expected == EXPECTED["growing-copies"][2]
    assert brief(replay_of(short + long).alerts) == expected
    assert brief(replay_of(long + short).alerts) == expected


def test_a_transcript_that_ends_on_a_boundary_emits_nothing_for_it_until_its_summary_is_written(tmp_path):
    lines = (CC / "cc-dropped-prohibition.jsonl").read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"isCompactSummary"' in line)
    (tmp_path / "s.jsonl").write_text("".join(lines[:cut]))
    reader = ClaudeCodeTranscript(tmp_path / "s.jsonl")
    early = reader.poll(final=True)
    assert not [e for e in early if e["type"] == "checkpoint" and e["level"] != "root"]
    assert reader.stats.errors == [] and "ends on a compact boundary without its summary" in reader.stats.warnings[0]
    whole = lines_of(library_events("claude-code", CC / "cc-dropped-prohibition.jsonl"))
    assert whole[: len(early)] == lines_of(early)


# --------------------------------------------------------------------------- mapping details


def test_a_condensation_that_forgets_a_summary_makes_a_section_with_that_child():
    events = library_events("openhands", OH / "folded-summary")
    nodes = {e["node_id"]: e for e in events if e["type"] == "checkpoint" and e["level"] != "root"}
    section = nodes["00000001-0000-4000-8000-000000000009-summary"]
    assert section["level"] == "section"
    assert section["children"] == ["00000001-0000-4000-8000-000000000005-summary"]
    roots = [e for e in events if e["type"] == "checkpoint" and e["level"] == "root"]
    # the system prompt's prohibitions are judged with the first condensation (one judge call per compaction),
    # so the root appears with the first summary
    assert [r["children"] for r in roots] == [["00000001-0000-4000-8000-000000000005-summary"],
                                              ["00000001-0000-4000-8000-000000000009-summary"]]


def test_a_pre_2026_summary_id_forgotten_later_links_the_summaries_and_only_the_latest_is_in_view():
    events = library_events("openhands", OH / "legacy-summary-ids")
    nodes = [e for e in events if e["type"] == "checkpoint" and e["level"] != "root"]
    first, second, third = (f"0000000a-0000-4000-8000-{n:012x}-summary" for n in (5, 10, 11))
    assert [(n["node_id"], n["level"], n["children"]) for n in nodes] == [
        (first, "leaf", []), (second, "section", [first]), (third, "leaf", [])]
    roots = [e["children"] for e in events if e["type"] == "checkpoint" and e["level"] == "root"]
    assert roots[-3:] == [[first], [second], [third]]


def test_timestamps_without_a_zone_are_read_as_utc():
    events = library_events("openhands", OH / "folded-summary")
    assert (
        events[0]["occurred_at"] == "2026-03-02T10:01:00.000000Z"
    )  # the first message (the system prompt makes no event)
    proc = ingest("openhands", str(OH / "folded-summary"))
    assert "10 timestamps without a zone read as UTC" in proc.stderr.decode().splitlines()[-1]


def test_a_summary_is_emitted_before_the_live_evictions_it_causes():
    events = library_events("openhands", OH / "orphaned-file")
    node_at = next(i for i, e in enumerate(events) if e.get("node_id", "").endswith("-summary"))
    evicted = [i for i, e in enumerate(events) if e.get("op") == "evicted"]
    assert evicted and min(evicted) > node_at


def test_a_missing_save_dir_means_no_durable_copy_while_the_event_file_is_one():
    events = library_events("openhands", OH / "orphaned-file")
    tiers = {(e["artifact_id"], e["tier"]) for e in events if e.get("op") == "admitted"}
    assert ("file:/workspace/app/settings.py", "live") in tiers
    assert ("file:/workspace/app/settings.py", "durable") not in tiers
    assert ("file:/workspace/app/urls.py", "durable") in tiers


def test_broken_parent_links_fall_back_to_file_order():
    reader = ClaudeCodeTranscript(CC / "cc-broken-parent-link.jsonl")
    events = reader.poll(final=True)
    s2_at = next(i for i, e in enumerate(events) if e.get("node_id") == "s-2")
    assert events[s2_at]["children"] == ["s-1"] and events[s2_at]["level"] == "section"
    after = [e["artifact_id"] for e in events[s2_at:] if e.get("op") == "evicted" and e["tier"] == "live"]
    assert after == ["ev:u-2", "ev:a-2", "ev:r-2", "call:toolu_e2", "file:/home/dev/shop/tests/test_payment.py"]
    assert reader.stats.broken_links == 4
    assert dict(reader.stats.unknown) == {"custom-event": 1}
    assert dict(reader.stats.ignored) == {"file-history-snapshot": 1}


def test_an_opaque_summary_is_marked_and_a_pure_eviction_makes_no_node():
    events = library_events("openhands", OH / "opaque-summary")
    summaries = [e for e in events if e["type"] == "checkpoint" and e["level"] != "root"]
    assert len(summaries) == 1
    assert summaries[0]["text"] is None and summaries[0]["opaque"] is True and "x_opaque" not in summaries[0]
    assert summaries[0]["x_opaque_reason"] == "summary not recorded"


def test_a_boundary_followed_by_another_record_instead_of_its_summary_becomes_an_opaque_node(tmp_path):
    lines = (CC / "cc-dropped-prohibition.jsonl").read_text().splitlines()
    kept = [line for line in lines if '"isCompactSummary"' not in line]
    (tmp_path / "s.jsonl").write_text("\n".join(kept) + "\n")
    events = library_events("claude-code", tmp_path / "s.jsonl")
    node = next(e for e in events if e.get("node_id") == "b-1")
    assert node["opaque"] is True and node["text"] is None
    assert node["x_opaque_reason"] == "no summary record after the compact boundary"


def test_a_microcompact_evicts_its_tool_results_from_live_and_makes_no_checkpoint():
    events = library_events("claude-code", CC / "cc-microcompact.jsonl")
    assert not [e for e in events if e["type"] == "checkpoint"]
    evicted = [(e["artifact_id"], e["tier"]) for e in events if e.get("op") == "evicted"]
    assert evicted == [("call:toolu_m1", "live"), ("call:toolu_m2", "live")]  # toolu_gone was never admitted
    durable = {e["artifact_id"] for e in events if e.get("op") == "admitted" and e["tier"] == "durable"}
    assert {"call:toolu_m1", "call:toolu_m2"} <= durable  # the transcript still holds them


def test_two_records_glued_on_one_line_are_both_read_with_a_warning():
    reader = ClaudeCodeTranscript(CC / "cc-glued-line.jsonl")
    events = reader.poll(final=True)
    assert reader.stats.errors == [] and reader.stats.records == 7
    assert reader.stats.warnings == [f"{CC / 'cc-glued-line.jsonl'}:2: 2 JSON records glued on one line "
                                     "(a record written without its newline); each read"]
    assert dict(reader.stats.ignored) == {"summary": 1}
    summary = next(e for e in events if e.get("node_id") == "g-s1")
    assert summary["referents"] == ["file:/home/dev/site/docs/index.md"]  # named by the glued assistant record
    proc = ingest("claude-code", str(CC / "cc-glued-line.jsonl"))
    assert proc.returncode == 0 and b"warning: " in proc.stderr


def test_a_record_followed_by_garbage_on_its_line_is_read_and_the_rest_reported(tmp_path):
    lines = (CC / "cc-dropped-prohibition.jsonl").read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if b'"u-1"' in line)
    record = lines[at].rstrip(b"\n")
    lines[at] = record + b"{truncated\n"
    (tmp_path / "s.jsonl").write_bytes(b"".join(lines))
    reader = ClaudeCodeTranscript(tmp_path / "s.jsonl")
    events = reader.poll(final=True)
    assert reader.stats.errors == [f"{tmp_path / 's.jsonl'}:{at + 1}: not valid JSON after 1 record(s): "
                                   f"Expecting property name enclosed in double quotes at column {len(record) + 2}"]
    assert brief(replay_of(events).alerts) == EXPECTED["dropped-prohibition"][2]  # u-1's prohibition was read


def test_the_transcript_a_summary_names_is_a_durable_referent():
    events = library_events("claude-code", CC / "cc-names-its-transcript.jsonl")
    summary = next(e for e in events if e.get("node_id") == "t-s1")
    assert summary["referents"] == [f"file:{TRANSCRIPT}"]
    admitted = [(e["artifact_id"], e["tier"]) for e in events if e.get("op") == "admitted"]
    assert admitted.index((f"file:{TRANSCRIPT}", "durable")) >= 0
    assert (f"file:{TRANSCRIPT}", "live") not in admitted


def test_every_channel_of_the_users_words_is_read_and_tagged_with_its_source():
    events = library_events("claude-code", CC / "cc-every-channel.jsonl")
    summary = next(e for e in events if e.get("node_id") == "e-s1")
    raw = [(c["text"], c["source"], c["form"], c["line"]) for c in summary["raw_negative_constraints"]]
    assert raw == [
        ("Keep the `Money` type for display", "plan", "preserve", 1),
        ("No schema migration in this change", "plan", "explicit", 1),
        ("let's avoid touching the checkout flow", "user", "explicit", 3),  # tool-rejection feedback
        ("don't bump the package version", "user", "explicit", 4),  # queued while the agent worked
        ("never squash the history", "user", "explicit", 6),  # queued, named by "remove" + a queued_command
        ("No, leave them alone", "user", "implicit", 10),  # an AskUserQuestion option the user picked
        ("keep the old fixtures", "user", "preserve", 10),  # ... and an answer the user typed (its reason cut off)
        ("never round half down", "user", "explicit", 11),  # slash-command arguments
    ]  # nothing from the plan's context or verification sections, the code fence, the pasted log or the quote


# --------------------------------------------------------------------------- errors


def test_bad_event_files_are_reported_one_line_each_and_the_rest_is_ingested(tmp_path):
    conv = tmp_path / "conv"
    shutil.copytree(OH / "orphaned-file", conv)
    (conv / "events" / "event-00003-broken.json").write_text('{"kind": "MessageEvent", ')
    (conv / "events" / "event-00004-list.json").write_text("[1, 2]")
    (conv / "events" / "event-00005-nokind.json").write_text('{"id": "x"}')
    proc = ingest("openhands", "conv", cwd=tmp_path)
    assert proc.returncode == 1
    err = proc.stderr.decode().splitlines()
    assert err[:3] == [
        "checkpoint-guard: ingest: conv/events/event-00003-broken.json: not valid JSON: Expecting property name "
        "enclosed in double quotes at line 1 column 26",
        "checkpoint-guard: ingest: conv/events/event-00004-list.json: an event must be a JSON object, got array",
        "checkpoint-guard: ingest: conv/events/event-00005-nokind.json: event has no 'kind'",
    ]
    assert "3 bad" in err[-1] and "0 input(s) failed" in err[-1]
    alerts = replay_lines(proc.stdout.splitlines()).alerts
    assert brief(alerts) == EXPECTED["orphaned-file"][2]


def test_bad_transcript_lines_are_reported_with_their_line_number(tmp_path):
    lines = (CC / "cc-dropped-prohibition.jsonl").read_bytes().splitlines(keepends=True)
    (tmp_path / "s.jsonl").write_bytes(b"".join(lines[:2] + [b"not json\n", b"\xff\xfe\n", b"42\n"] + lines[2:]))
    proc = ingest("claude-code", "s.jsonl", cwd=tmp_path)
    assert proc.returncode == 1
    err = proc.stderr.decode().splitlines()
    assert err[0:3] == [
        "checkpoint-guard: ingest: s.jsonl:3: not valid JSON: Expecting value at column 1",
        "checkpoint-guard: ingest: s.jsonl:4: not UTF-8 (byte 0)",
        "checkpoint-guard: ingest: s.jsonl:5: a record must be a JSON object, got number",
    ]
    assert "3 bad" in err[-1] and "0 input(s) failed" in err[-1]
    # a path that is not there is a usage mistake: one line, exit 2, nothing read (tests/integration/test_errors.py)
    missing = ingest("claude-code", "s.jsonl", "missing.jsonl", cwd=tmp_path)
    assert missing.returncode == 2 and missing.stdout == b""
    assert len(replay_lines(proc.stdout.splitlines()).alerts) == 2


def test_a_path_that_is_no_log_fails_with_one_line(tmp_path):
    proc = ingest("openhands", str(tmp_path))
    assert proc.returncode == 2
    err = proc.stderr.decode().splitlines()
    assert len(err) == 1 and err[0].startswith(f"checkpoint-guard: error: cannot ingest {tmp_path}: not an OpenHands "
                                               "conversation directory (no events/ inside, nor in its sub-directories)")


def test_follow_is_refused_for_the_trajectory_form_and_help_explains_both_forms():
    proc = ingest("--follow")
    assert proc.returncode == 2
    assert b"--follow and --idle-timeout work with the log forms only" in proc.stderr
    helptext = ingest("--help").stdout.decode()
    for needle in (
        "ingest [PATH...]",
        "ingest openhands DIR...",
        "ingest claude-code FILE...",
        "--follow",
        "--match-threshold",
    ):
        assert needle in helptext


# --------------------------------------------------------------------------- following a live log


def test_following_a_transcript_reads_only_complete_lines_and_a_deletion_is_a_durable_eviction(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    data = (CC / "cc-dropped-prohibition.jsonl").read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 20  # mid-line
    path = project / "cc-dropped-prohibition.jsonl"
    path.write_bytes(data[:cut])
    reader = ClaudeCodeTranscript(path)
    events = reader.poll(final=False)
    assert reader.stats.errors == []
    path.write_bytes(data)
    events += reader.poll(final=False)
    assert lines_of(events) == lines_of(library_events("claude-code", CC / "cc-dropped-prohibition.jsonl"))
    shutil.rmtree(project)  # the transcript directory is gone (cleanupPeriodDays)
    gone = reader.poll(final=False)
    assert gone and {(e["op"], e["tier"]) for e in gone} == {("evicted", "durable")}
    alerts = replay_lines(lines_of(events + gone)).alerts
    assert brief(alerts)[-1] == (ORPHAN, "open", "s-1", ["file:/home/dev/web/src/Settings.tsx"])


def test_a_deleted_transcript_under_follow_orphans_the_summaries_that_named_it(tmp_path):
    path = tmp_path / "project" / "session.jsonl"
    path.parent.mkdir()
    shutil.copy(CC / "cc-names-its-transcript.jsonl", path)
    reader = ClaudeCodeTranscript(path)
    events = reader.poll(final=False)
    assert replay_of(events).alerts == []
    path.unlink()  # cleanupPeriodDays
    events += reader.poll(final=False)
    assert brief(replay_of(events).alerts) == [(ORPHAN, "open", "t-s1", [f"file:{TRANSCRIPT}"])]


def test_following_a_conversation_waits_for_a_half_written_event_file(tmp_path):
    conv = tmp_path / "folded-summary"
    shutil.copytree(OH / "folded-summary", conv)
    files = sorted((conv / "events").iterdir())
    held = {f: f.read_bytes() for f in files[4:]}
    for f in files[4:]:
        f.unlink()
    reader = OpenHandsConversation(conv)
    events = reader.poll(final=False)
    files[4].write_bytes(held[files[4]][:30])  # being written
    events += reader.poll(final=False)
    for f, content in held.items():
        f.write_bytes(content)
    events += reader.poll(final=False)
    assert reader.stats.errors == []
    assert lines_of(events) == lines_of(library_events("openhands", OH / "folded-summary"))


def test_a_save_dir_that_disappears_while_followed_evicts_the_durable_copy(tmp_path):
    conv = tmp_path / "conv"
    shutil.copytree(OH / "orphaned-file", conv)
    (conv / "saved" / "toolu_b1").mkdir(parents=True)
    reader = OpenHandsConversation(conv)
    events = reader.poll(final=False)
    assert replay_lines(lines_of(events)).alerts == []  # the full output is still saved
    shutil.rmtree(conv / "saved")
    events += reader.poll(final=False)
    assert brief(replay_lines(lines_of(events)).alerts) == EXPECTED["orphaned-file"][2]


def test_follow_cli_writes_appended_records_and_stops_after_the_idle_timeout(tmp_path):
    data = (CC / "cc-dropped-prohibition.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / "cc-dropped-prohibition.jsonl"
    path.write_bytes(b"".join(data[:3]))
    out = tmp_path / "events.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "stream", "ingest", "claude-code", str(path), "--follow", "--poll-interval", "0.1",
         "--idle-timeout", "3", "--out", str(out)], cwd=REPO, env=cli_env(), stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out.exists() and out.read_bytes()):
            time.sleep(0.1)
        with open(path, "ab") as fh:
            for line in data[3:]:
                fh.write(line)
                fh.flush()
                time.sleep(0.05)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    summary = proc.stderr.read().decode().splitlines()[-1]
    assert summary.startswith("ingest claude-code: 1 input(s), 1 contexts, 8 records read")
    assert brief(replay_lines(out.read_bytes().splitlines()).alerts) == EXPECTED["dropped-prohibition"][2]


def test_follow_cli_stops_cleanly_on_sigterm(tmp_path):
    path = tmp_path / "s.jsonl"
    shutil.copy(CC / "cc-broken-parent-link.jsonl", path)
    out = tmp_path / "events.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "stream", "ingest", "claude-code", str(path), "--follow", "--poll-interval", "0.1",
         "--out", str(out)], cwd=REPO, env=cli_env(), stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (out.exists() and out.read_bytes().count(b"\n") >= 36):
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr.read().decode().splitlines()[-1].endswith("; stopped by signal")
    assert out.read_bytes().count(b"\n") == 36


# ------------------------------------------------------------- referents (the matcher: test_prohibitions.py)


def test_referents_are_artifacts_whose_identifier_is_a_whole_token_of_the_summary():
    ids = {n: "file:/w/app/settings.py" for n in path_names("/w/app/settings.py")}
    ids["toolu_7"] = "call:toolu_7"
    assert mentioned_artifacts("Edited app/settings.py. See toolu_7.", ids) == [
        "call:toolu_7",
        "file:/w/app/settings.py",
    ]
    assert mentioned_artifacts("Edited app/settings.pyc and myapp/settings.py, toolu_77", ids) == []
    assert mentioned_artifacts("settings.py only", ids) == []  # a bare basename is too ambiguous


def test_each_typed_answer_to_a_question_is_read_on_its_own(tmp_path):
    # a long first answer that ends without a full stop ran into the next when the answers were read as one text
    first = (
        "first one. don't rely on file timestamps for this at all, clocks drift and rebases rewrite the dates anyway"
    )
    second = "let's leave that for a follow-up, can you open an issue for it?"
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/dev/app", "version": "2.0.0",
            "sessionId": "a5c00000-0000-4000-8000-0000000000a5"}
    records = [
        {
            **base,
            "parentUuid": None,
            "type": "user",
            "uuid": "q-u1",
            "timestamp": "2026-03-02T11:00:00.000Z",
            "message": {"role": "user", "content": "plan the cleanup command"},
        },
        {
            **base,
            "parentUuid": "q-u1",
            "type": "user",
            "uuid": "q-r1",
            "timestamp": "2026-03-02T11:00:01.000Z",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_q1", "content": "User has answered your questions."}
                ],
            },
            "toolUseResult": {
                "questions": [],
                "answers": {"How do we find stale branches?": first, "Also prune the state files?": second},
            },
        },
        {
            **base,
            "parentUuid": None,
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "q-b1",
            "timestamp": "2026-03-02T11:00:02.000Z",
            "content": "Conversation compacted",
            "logicalParentUuid": "q-r1",
            "compactMetadata": {"trigger": "auto", "preTokens": 150000},
        },
        {
            **base,
            "parentUuid": "q-b1",
            "type": "user",
            "uuid": "q-s1",
            "isCompactSummary": True,
            "timestamp": "2026-03-02T11:00:03.000Z",
            "message": {
                "role": "user",
                "content": "This session is being continued. 1. The user wants a cleanup command.",
            },
        },
    ]
    (tmp_path / "s.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    summary = next(e for e in library_events("claude-code", tmp_path / "s.jsonl") if e.get("node_id") == "q-s1")
    assert [(c["text"], c["form"], c["line"]) for c in summary["raw_negative_constraints"]] == [
        (
            "don't rely on file timestamps for this at all, clocks drift and rebases rewrite the dates anyway",
            "explicit",
            2,
        ),
        ("let's leave that for a follow-up", "defer", 2),
    ]
