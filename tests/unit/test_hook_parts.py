"""The hook's parts in-process: the spool's bookkeeping under crashes, the dropped set and the
text handed back, the cursor fingerprint, the adapter state the hook keeps between calls."""

from __future__ import annotations

import asyncio
import io
import json
import pickle
from pathlib import Path

import pytest

from stream.hook import reinject
from stream.hook.spool import DRAIN_BATCH, Spool
from stream.hook.store import fingerprint, session_key

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "compaction_logs" / "claude-code"


def lines(n: int, ctx: str = "cc:s", start: int = 0) -> list[tuple[str, str, int, bytes]]:
    out = []
    for seq in range(start, start + n):
        raw = json.dumps({"type": "artifact", "context_id": ctx, "seq": seq, "event_id": f"e{seq}"}).encode()
        out.append(("artifact", ctx, seq, raw))
    return out


class Broker:
    """Records what was sent; ``fail_after`` batches are acknowledged and then the process "dies"."""

    def __init__(self, fail_after: int | None = None) -> None:
        self.sent: list[int] = []
        self.fail_after = fail_after

    async def __call__(self, batch) -> None:
        self.sent.extend(seq for _, _, seq, _ in batch)
        if self.fail_after is not None:
            self.fail_after -= 1
            if self.fail_after < 0:
                raise KeyboardInterrupt("killed after the acks, before the bookkeeping")


def test_appending_is_idempotent_by_seq_and_cuts_a_line_a_killed_writer_left(tmp_path):
    spool = Spool(tmp_path, "k")
    assert spool.append(lines(5), None) == 5
    assert spool.append(lines(5), None) == 0  # the same events again (a call died before saving its cursor)
    with open(spool.path, "ab") as fh:
        fh.write(b'{"type": "artifact", "context_id": "cc:s", "se')  # killed mid-write
    assert spool.append(lines(3, start=4), None) == 2
    seqs = [json.loads(line)["seq"] for line in spool.path.read_bytes().splitlines()]
    assert seqs == [0, 1, 2, 3, 4, 5, 6]


def test_a_drain_sends_everything_once_and_truncates(tmp_path):
    spool = Spool(tmp_path, "k")
    spool.append(lines(DRAIN_BATCH + 7), None)
    broker = Broker()
    assert asyncio.run(spool.drain(broker, None)) == DRAIN_BATCH + 7
    assert broker.sent == list(range(DRAIN_BATCH + 7)) and spool.path.read_bytes() == b"" and spool.pending() == 0
    spool.append(lines(3, start=DRAIN_BATCH + 7), None)
    spool.append(lines(DRAIN_BATCH + 7), None)  # already sent: not spooled again after the truncation
    assert spool.pending() == 3


def test_a_crash_between_acks_and_bookkeeping_re_sends_at_most_that_batch(tmp_path):
    spool = Spool(tmp_path, "k")
    spool.append(lines(2 * DRAIN_BATCH + 10), None)
    broker = Broker(fail_after=1)  # first batch fine, second acked then the process dies
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(spool.drain(broker, None))
    assert spool.pending() == DRAIN_BATCH + 10  # the second batch is not marked sent
    again = Broker()
    asyncio.run(Spool(tmp_path, "k").drain(again, None))
    assert again.sent == list(range(DRAIN_BATCH, 2 * DRAIN_BATCH + 10))
    total = broker.sent + again.sent
    assert sorted(set(total)) == list(range(2 * DRAIN_BATCH + 10)), "nothing lost"
    assert len(total) - len(set(total)) == DRAIN_BATCH, "only the batch in flight went twice"


def test_contexts_are_bookkept_apart(tmp_path):
    spool = Spool(tmp_path, "k")
    spool.append(lines(3, "cc:a") + lines(2, "cc:b"), None)
    asyncio.run(spool.drain(Broker(), None))
    assert spool.sent() == {"cc:a": 2, "cc:b": 1}


def test_session_keys_are_file_names():
    assert session_key("5e55a000-0000-4000-8000-000000000001") == "5e55a000-0000-4000-8000-000000000001"
    for bad in ("../../etc", "a/b", "", ".", "x" * 300):
        key = session_key(bad)
        assert "/" not in key and key not in ("", ".", "..") and len(key) < 80


def test_the_fingerprint_sees_a_changed_prefix_and_ignores_what_follows(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_bytes(b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * 500) for i in range(400)))
    size = p.stat().st_size
    before = fingerprint(p, size // 2)
    with open(p, "ab") as fh:
        fh.write(b'{"more": true}\n')
    assert fingerprint(p, size // 2) == before
    data = bytearray(p.read_bytes())
    data[10:11] = b"9"
    p.write_bytes(bytes(data))
    assert fingerprint(p, size // 2) != before


# --------------------------------------------------------------------------- the dropped set and its text


def ckpt(node, raw=(), carried=(), children=(), seq=0):
    return {"node_id": node, "seq": seq, "children": list(children), "occurred_at": None,
            "raw_negative_constraints": [{"id": i, "text": t, "source": "user", "x_channel": ch, "line": ln}
                                         for i, t, ch, ln in raw],
            "negative_constraints": [{"id": i} for i in carried]}


def test_the_dropped_set_is_required_of_the_subtree_minus_carried():
    nodes: dict = {}
    origins = {
        3: [type("C", (), {"text": "Do not touch the migrations.", "at": "2026-03-02T10:00:00Z", "question": None})()]
    }
    reinject.record(nodes, ckpt("s1", raw=[("p:a", "Do not touch the migrations", "typed", 3),
                                           ("p:b", "never push", "typed", 5)], carried=["p:b"]), origins)
    reinject.record(
        nodes, ckpt("s2", raw=[("p:c", "keep the API", "plan", 9)], carried=["p:c"], children=["s1"]), origins
    )
    assert set(reinject.dropped(nodes, "s1")) == {"p:a"}
    assert set(reinject.dropped(nodes, "s2")) == {"p:a", "p:b"}  # survived the first summary, not the second
    assert nodes["s1"]["raw"]["p:a"]["at"] == "2026-03-02T10:00:00Z"
    assert reinject.dropped(nodes, "unknown") == {}


def test_the_text_is_verbatim_most_recent_first_with_its_origin_and_bounded():
    missing = {
        "p:old": {
            "text": "Never delete the fixtures folder",
            "x_channel": "typed",
            "line": 2,
            "at": "2026-03-01T09:00:00Z",
        },
        "p:new": {
            "text": "No, keep the old module",
            "x_channel": "answer",
            "line": 40,
            "at": "2026-03-01T11:30:00Z",
            "question": "Should we rewrite the parser module?",
        },
        "p:plan": {"text": "(not the legacy API)", "x_channel": "plan", "line": 20, "at": "2026-03-01T10:00:00Z"},
    }
    text, shown = reinject.context_text(missing, trigger="auto", limit=4000)
    assert shown == ["p:new", "p:plan", "p:old"]
    body = text.splitlines()
    assert body[0].startswith("checkpoint-guard: the summary written at this compaction (auto compaction) does not "
                              "restate 3 standing instructions")
    assert body[1] == ('- "No, keep the old module" (the user\'s answer to "Should we rewrite the parser module?", '
                       "2026-03-01 11:30 UTC)")
    assert body[2] == '- "(not the legacy API)" (the plan the user approved, 2026-03-01 10:00 UTC)'
    assert body[3] == '- "Never delete the fixtures folder" (typed by the user, 2026-03-01 09:00 UTC)'
    assert reinject.context_text({}, trigger="auto", limit=4000) == ("", [])
    many = {
        f"p:{i}": {"text": f"do not touch module {i} " + "x" * 300, "x_channel": "typed", "line": i} for i in range(40)
    }
    text, shown = reinject.context_text(many, trigger=None, limit=2000)
    assert len(text) <= 2000 and 0 < len(shown) < 40
    assert text.endswith(f"(and {40 - len(shown)} more not shown; run `checkpoint-guard hooks status`)")


# --------------------------------------------------------------------------- the adapter state between calls


def test_the_claude_code_adapter_state_survives_pickling_with_the_judge_swapped_out(tmp_path):
    """The hook keeps ClaudeCodeTranscript between calls by pickle (the judge by reference):
    continuing an unpickled reader gives exactly the events of one uninterrupted read."""
    from stream.adapters.compaction.claude_code import ClaudeCodeTranscript
    from stream.adapters.compaction.judge_rules import as_judge

    source = FIXTURES / "cc-every-channel.jsonl"
    data = source.read_bytes().splitlines(keepends=True)
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"".join(data[:7]))
    judge = as_judge(None)
    reader = ClaudeCodeTranscript(t, judge)
    first = reader.poll(final=False)

    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return "judge" if obj is judge else None

    class U(pickle.Unpickler):
        def persistent_load(self, pid):
            return judge

    buf = io.BytesIO()
    P(buf).dump(reader)
    again = U(io.BytesIO(buf.getvalue())).load()
    t.write_bytes(b"".join(data))
    rest = again.poll(final=False)
    assert again.offset == t.stat().st_size
    whole = ClaudeCodeTranscript(source, as_judge(None)).poll(final=True)
    assert first + rest == whole
