"""Claude Code record shapes of newer versions (issue 22, "format drift"), each on a small synthetic transcript.

Every text here was written for these tests. A transcript is a list of records built by
:class:`Session`; the assertions are on the events and the alerts of ``ingest | replay``
(in process), and on the read statistics of the summary line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stream.adapters import encode_event
from stream.adapters.compaction.claude_code import ClaudeCodeTranscript
from stream.offline.replay import replay_lines

pytestmark = pytest.mark.unit

SID = "d7f00000-0000-4000-8000-0000000000d7"
NCD = "negative_constraint_dropped"


class Session:
    """Records of one synthetic session, with increasing timestamps."""

    def __init__(self, sid: str = SID) -> None:
        self.sid = sid
        self.records: list[dict] = []
        self._t = 0

    def _base(self, **kw) -> dict:
        self._t += 1
        return {"isSidechain": False, "userType": "external", "cwd": "/home/dev/app", "version": "2.1.219",
                "sessionId": self.sid, "timestamp": f"2026-05-04T10:{self._t // 60:02d}:{self._t % 60:02d}.000Z", **kw}

    def add(self, **kw) -> dict:
        rec = self._base(**kw)
        self.records.append(rec)
        return rec

    def user(self, uuid: str, content, **kw) -> dict:
        return self.add(type="user", uuid=uuid, parentUuid=None, message={"role": "user", "content": content}, **kw)

    def assistant(self, uuid: str, text: str) -> dict:
        return self.add(type="assistant", uuid=uuid, parentUuid=None,
                        message={"role": "assistant", "content": [{"type": "text", "text": text}]})

    def compact(self, boundary: str, summary: str, text: str, **meta) -> None:
        self.add(
            type="system",
            subtype="compact_boundary",
            uuid=boundary,
            parentUuid=None,
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 150000, **meta},
        )
        self.add(type="user", uuid=summary, parentUuid=boundary, isCompactSummary=True, isVisibleInTranscriptOnly=True,
                 message={"role": "user", "content": text})

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records))
        return path


def summary_text(*quoted: str, extra: str = "") -> str:
    items = "\n".join(f'   - "{q}"' for q in quoted)
    return (f"This session is being continued from a previous conversation.\n\n1. Primary Request: a CSV export.\n"
            f"{extra}\n6. All user messages:\n{items}\n\n7. Pending Tasks:\n   - finish the export\n")


def run(*paths: Path) -> tuple[list[dict], list[dict], list[ClaudeCodeTranscript]]:
    shared: dict = {}
    readers = [ClaudeCodeTranscript(p, sessions=shared) for p in paths]
    events = [e for r in readers for e in r.poll(final=True)]
    alerts = replay_lines([encode_event(e) for e in events]).alerts
    return events, alerts, readers


def dropped(alerts: list[dict]) -> dict[str, list[str]]:
    return {a["node_id"]: a["missing_constraints"] for a in alerts if a["rule"] == NCD and a["status"] == "open"}


def node(events: list[dict], node_id: str) -> dict:
    return next(e for e in events if e["type"] == "checkpoint" and e["node_id"] == node_id)


def test_a_queued_command_attachment_is_the_users_words_without_any_queue_operation(tmp_path):
    s = Session()
    s.user("u1", "add a CSV export to the report page")
    s.assistant("a1", "Working on it.")
    s.add(type="attachment", uuid="at1", parentUuid="a1",
          attachment={"type": "queued_command", "prompt": [{"type": "text", "text": "don't touch the PDF export"}],
                      "commandMode": "prompt"})
    s.compact("b1", "s1", summary_text("add a CSV export to the report page"))
    events, alerts, _ = run(s.write(tmp_path / "t.jsonl"))
    raw = node(events, "s1")["raw_negative_constraints"]
    assert [(c["text"], c["x_channel"]) for c in raw] == [("don't touch the PDF export", "queued")]
    assert dropped(alerts)["s1"] == [raw[0]["id"]]


def test_a_bare_remove_hands_over_the_users_queued_message_not_a_task_notification_queued_before_it(tmp_path):
    # Claude Code 2.1.x: background agents' notifications wait in the same queue and leave by dequeue, as user records
    s = Session()
    s.user("u1", "add a CSV export to the report page")
    s.assistant("a1", "Starting two background agents.")
    note = "<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>"
    s.add(type="queue-operation", operation="enqueue", content=note)
    s.add(type="queue-operation", operation="enqueue", content="and don't run the e2e suite, it is broken")
    s.add(type="queue-operation", operation="remove")
    s.add(type="queue-operation", operation="dequeue")
    s.user("u2", note)
    s.compact("b1", "s1", summary_text("add a CSV export to the report page"))
    events, alerts, _ = run(s.write(tmp_path / "t.jsonl"))
    raw = node(events, "s1")["raw_negative_constraints"]
    assert [(c["text"], c["x_channel"]) for c in raw] == [("don't run the e2e suite", "queued")]
    assert dropped(alerts)["s1"] == [raw[0]["id"]]


@pytest.mark.parametrize("lead", ["User has answered your questions:", "Your questions have been answered:",
                                  "The user answered:"])
def test_askuserquestion_answers_are_read_from_the_result_text_in_each_wording(tmp_path, lead):
    s = Session()
    s.user("u1", "plan the migration of the settings store")
    s.assistant("a1", "One question first.")
    s.user(
        "r1",
        [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": f'{lead} "Should the old JSON files be converted in place?"="No, never overwrite the old '
                f'files", "Which format?"="TOML". You can now continue with the user\'s answers in mind.',
            }
        ],
    )
    s.compact("b1", "s1", summary_text("plan the migration of the settings store"))
    events, alerts, _ = run(s.write(tmp_path / "t.jsonl"))
    raw = node(events, "s1")["raw_negative_constraints"]
    assert [(c["text"], c["x_channel"]) for c in raw] == [("never overwrite the old files", "answer")]
    assert dropped(alerts)["s1"] == [raw[0]["id"]]


def test_preserved_messages_stay_in_view_so_the_summary_need_not_carry_their_rules(tmp_path):
    s = Session()
    s.user("u1", "don't rename the public functions")
    s.assistant("a1", "Noted.")
    s.user("u2", "and do not bump the version")
    s.assistant("a2", "Sure.")
    s.compact("b1", "s1", summary_text("write the exporter"), postTokens=20000, cumulativeDroppedTokens=130000,
              preservedMessages={"anchorUuid": "a2", "uuids": ["u2", "a2"], "allUuids": ["u2", "a2"]})
    events, alerts, readers = run(s.write(tmp_path / "t.jsonl"))
    raw = node(events, "s1")["raw_negative_constraints"]
    assert [c["text"] for c in raw] == ["don't rename the public functions"]  # u2 was kept verbatim: not covered
    assert dropped(alerts)["s1"] == [raw[0]["id"]]
    evicted = {e["artifact_id"] for e in events if e["type"] == "artifact" and e["op"] == "evicted"}
    assert "ev:u1" in evicted and "ev:u2" not in evicted
    assert not readers[0].stats.unknown and not readers[0].stats.errors


def test_a_file_that_starts_with_a_compaction_reads_the_messages_its_summary_quotes(tmp_path):
    s = Session()
    s.compact("b0", "s0", summary_text("build the CSV export", "don't add new dependencies"))
    s.user("u1", "now the totals row")
    s.assistant("a1", "Done.")
    s.compact("b1", "s1", summary_text("now the totals row"))  # the rule is no longer quoted
    events, alerts, _ = run(s.write(tmp_path / "t.jsonl"))
    raw = node(events, "s1")["raw_negative_constraints"]
    assert [(c["text"], c["line"]) for c in raw] == [("don't add new dependencies", 2)]
    assert dropped(alerts)["s1"] == [raw[0]["id"]]
    assert node(events, "s1")["x_not_carried"] == [{"id": raw[0]["id"], "cue": "unquoted-again"}]
    assert node(events, "s0")["raw_negative_constraints"] == []


def test_new_record_types_are_ignored_and_repeats_in_one_file_are_records_not_copies(tmp_path):
    s = Session()
    s.user("u1", "hello")
    for _ in range(3):  # written at every turn, identical, without a uuid
        s.records.append({"type": "permission-mode", "permissionMode": "default", "sessionId": SID})
    s.records.append({"type": "mode", "mode": "normal", "sessionId": SID})
    s.records.append({"type": "ai-title", "aiTitle": "CSV export", "sessionId": SID})
    s.records.append({"type": "last-prompt", "lastPrompt": "hello", "sessionId": SID})
    path = s.write(tmp_path / "t.jsonl")
    _, _, (reader,) = run(path)
    assert reader.stats.repeated == 0 and not reader.stats.unknown
    assert reader.stats.ignored == {"permission-mode": 3, "mode": 1, "ai-title": 1, "last-prompt": 1}
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    _, _, (first, second) = run(path, copy)  # a second copy of the same session: every record already read
    assert first.stats.repeated == 0 and second.stats.repeated == len(s.records)


def test_a_teammate_agents_message_in_a_user_record_is_not_the_users_words(tmp_path):
    s = Session()
    s.user("u1", '<teammate-message teammate_id="team-lead" color="blue">You own the mobile app. Do NOT modify the '
                 'payment flows.</teammate-message>', teamName="apps", agentName="mobile")
    s.assistant("a1", "On it.")
    s.compact("b1", "s1", summary_text("work on the mobile app"))
    events, alerts, _ = run(s.write(tmp_path / "t.jsonl"))
    assert node(events, "s1")["raw_negative_constraints"] == [] and dropped(alerts) == {}


def test_a_sidechain_user_record_is_the_agents_prompt_not_the_users(tmp_path):
    s = Session()
    s.user("u1", "Search the repo. Never edit files, only read them.", isSidechain=True)
    s.assistant("a1", "Found it.")
    s.compact("b1", "s1", summary_text("find the export code"))
    events, _, _ = run(s.write(tmp_path / "t.jsonl"))
    assert node(events, "s1")["raw_negative_constraints"] == []


def test_rejection_feedback_is_read_in_both_wordings():
    from stream.adapters.compaction.claude_code import _rejection_feedback

    head = "The user doesn't want to proceed with this tool use. The tool use was rejected."
    said = {"content": head + " To tell you how to proceed, the user said:\nkeep the old parser"}
    reason = {"content": head + " The user provided the following reason for the rejection:  keep the old parser"}
    assert _rejection_feedback(said) == _rejection_feedback(reason) == "keep the old parser"
    assert _rejection_feedback({"content": head}) is None
