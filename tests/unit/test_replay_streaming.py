"""Replay's memory follows its state, not its output or its longest line (issue 28.5, 28.6),
and ``replay --from-kafka`` merges the topics in the worker's order (28.1, stream/order.py)."""

from __future__ import annotations

import io
import random

import pytest

from stream.lines import iter_lines
from stream.offline.forensics import Merger, Range, Record, merge, verify, verify_statuses
from stream.offline.replay import Replayer, replay_lines
from stream.order import ARTIFACTS, CHECKPOINTS, comes_first, order_key
from stream.settings import Settings
from stream.worker.merge import TopicMerge
from tests.unit.builders import admit, as_line, evict, make_checkpoint

pytestmark = pytest.mark.unit

CK, AR = Settings().input_topics
MiB = 1 << 20


def test_an_oversize_line_is_dead_lettered_with_its_full_size():
    rp = Replayer(max_bytes=1000)
    for n, line in enumerate(iter_lines(io.BytesIO(b"x" * 5000 + b"\n"), limit=1000), 1):
        rp.feed(line, n)
    assert rp.result.dead_letters == [(1, "line is 5000 bytes, over the 1000-byte limit")]


def _orphaning(n: int) -> list[bytes]:
    lines = [as_line(admit("a1", event_id="e0"))]
    for i in range(n):
        lines.append(as_line(make_checkpoint(event_id=f"c{i}", node_id=f"n{i}", referents=["a1"])))
    lines += [as_line(evict("a1", event_id="e1")), as_line(admit("a1", event_id="e2"))]
    return lines


def test_the_replayer_keeps_counts_not_records_unless_asked():
    lines = _orphaning(50)
    rp = Replayer()
    written = [r for n, line in enumerate(lines, 1) for r in rp.feed(line, n) or ()]
    result = rp.finish()
    kept = replay_lines(lines)
    assert (result.alerts, result.statuses, result.records, result.verdicts) == ([], [], [], [])
    assert (result.n_alerts, result.n_statuses) == (len(kept.alerts), len(kept.statuses)) == (100, 150)
    assert written == kept.records
    assert result.summary() == kept.summary()
    assert result.rules == kept.alerts_by_rule() == {"orphaned_referent": 100}


def _rec(topic: str, offset: int, ts: int, partition: int = 0) -> Record:
    return Record(topic, partition, offset, ts, None, None)


def test_the_forensic_merge_applies_the_checkpoint_first_on_equal_timestamps():
    ck, ar = _rec(CK, 5, 100), _rec(AR, 0, 100)
    assert list(merge([[ar], [ck]], [ARTIFACTS, CHECKPOINTS])) == [ck, ar]
    assert order_key(ck, CHECKPOINTS) < order_key(ar, ARTIFACTS) and comes_first(ck, ar)


def test_the_forensic_merge_is_the_workers_merge():
    """Same records, same order: the worker's TopicMerge and replay --from-kafka's Merger."""
    rng = random.Random(2801)
    for _ in range(200):
        streams = {}
        for topic in (CK, AR):
            ts = rng.randint(0, 5)
            recs = []
            for off in range(rng.randint(0, 12)):
                ts += rng.choice((-1, 0, 0, 0, 1, 2))  # producer time may go back a little
                recs.append(_rec(topic, off, max(ts, 0)))
            streams[topic] = recs
        worker = TopicMerge((CK, AR))
        everything = streams[CK] + streams[AR]
        worker.received(everything)
        live = worker.release(everything, lambda topic: True)
        assert list(merge([streams[AR], streams[CK]], [ARTIFACTS, CHECKPOINTS])) == live


def test_the_merger_waits_for_an_open_stream_that_has_nothing_yet():
    m = Merger([CHECKPOINTS, ARTIFACTS])
    m.add(1, [_rec(AR, 0, 10)])
    assert m.pop() is None and m.needy() == [0]  # the checkpoints' topic may still hold an earlier one
    m.add(0, [_rec(CK, 0, 10)])
    assert m.pop() == _rec(CK, 0, 10)
    assert m.pop() is None and m.needy() == [0]
    m.close(0)
    assert m.pop() == _rec(AR, 0, 10) and m.pop() is None and m.needy() == [1]
    m.close(1)
    assert m.pop() is None and m.needy() == []


def _alert(aid: str, offset: int, **extra) -> dict:
    return {"type": "alert", "alert_id": aid, "emitted_at": "t", "rule": "orphaned_referent", "status": "open",
            "context_id": "c", "node_id": "n", "trigger": {"topic": CK, "partition": 0, "offset": offset}, **extra}


def test_verify_finds_missing_extra_different_and_differing_repeats_within_the_range():
    rng = Range({(CK, 0): (0, 10)})
    mine = [_alert("same", 1), _alert("gone", 2), _alert("changed", 3), _alert("same", 1, emitted_at="u")]
    theirs = [_alert("same", 1, emitted_at="x"), _alert("changed", 3, orphans=["z"]), _alert("new", 4),
              _alert("outside", 12), _alert("new", 4, status="resolved")]
    v = verify(mine, theirs, rng)
    assert [a["alert_id"] for a in v.missing] == ["gone"]
    assert [a["alert_id"] for a in v.extra] == ["new"]
    assert [(a["alert_id"], b.get("status"), b.get("orphans")) for a, b in v.different] == [
        ("new", "resolved", None), ("changed", "open", ["z"])]
    assert v.summary() == "verify: 4 alerts compared: 1 missing, 1 extra, 2 different"


def _status(node: str, offset: int, **extra) -> dict:
    return {"schema_version": 1, "type": "status", "context_id": "c", "node_id": node, "authoritative": True,
            "trigger": {"topic": AR, "partition": 0, "offset": offset}, **extra}


def test_verify_statuses_compares_each_nodes_last_record_and_leaves_out_later_decisions():
    rng = Range({(AR, 0): (0, 10)})
    mine = [_status("a", 1, authoritative=False), _status("a", 2), _status("b", 3), _status("c", 4),
            _status("d", 5)]
    theirs = [_status("a", 2), _status("b", 3, authoritative=False), _status("c", 4), _status("c", 20),
              _status("e", 6)]
    v = verify_statuses(mine, theirs, rng)
    assert [s["node_id"] for s in v.missing] == ["d"]
    assert [s["node_id"] for s in v.extra] == ["e"]
    assert [(a["node_id"], b["authoritative"]) for a, b in v.different] == [("b", False)]
    assert v.summary() == "verify: 4 node statuses compared: 1 missing, 1 extra, 1 different"


def test_the_replay_bench_runs_its_offline_cases_and_writes_its_section(tmp_path):
    from bench import bench_replay

    out = tmp_path / "replay.md"
    assert bench_replay.main(["--cases", "status,line", "--depth", "20", "--toggles", "10", "--line-mb", "2",
                              "--out", str(out)]) == 0
    text = out.read_text()
    assert "220 status records" in text and "| this tree |" in text and "line is 2000000 bytes" in text
    assert "status 0.00 M records (this tree)" in (tmp_path / "replay.md.summary").read_text()


def test_a_first_line_seen_only_in_part_tells_nothing_about_the_input():
    from stream.offline.replay import first_line, input_form

    record = b'{"type": "user", "uuid": "u1", "x": "' + "é".encode() * 10 + b'"}\n'
    for cut in range(31, 45):  # the limit falls inside the string, inside a character or after a comma
        assert input_form(first_line(io.BytesIO(record), limit=cut)) == ("partial", ""), cut
    assert input_form(first_line(io.BytesIO(b"[1,1,1,1,1,1,1,1]\n"), limit=6)) == ("partial", "")
    for start in (b"\xef", b"\xef\xbb", b'{"type":"user","x":"\xc3'):  # a transcript being written
        assert input_form(first_line(io.BytesIO(start), growing=True)) == ("partial", ""), start
        assert input_form(first_line(io.BytesIO(start))) != ("partial", ""), start  # a whole file: it is what it is
    assert input_form(first_line(io.BytesIO(b"plain words " * 10 + b"\n"), limit=20)) == ("text", "")
    assert input_form(first_line(io.BytesIO(b"\x00\x01\x02" * 20 + b"\n"), limit=20)) == ("binary", "")
    assert input_form(first_line(io.BytesIO(record))) == ("transcript", "")
