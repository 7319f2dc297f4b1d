"""bench.real_folds: a fold packed to text-free pointers and rebuilt from a git snapshot."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from bench import real_folds

LINES = [
    {"type": "user", "message": {"role": "user", "content": "please refactor, but don't touch the CLI flags"}},
    {"type": "system", "subtype": "compact_boundary"},
    {"type": "user", "isCompactSummary": True, "message": {"content": "Summary: refactor; keep CLI flags as is"}},
]


def _fold(tmp: Path) -> tuple[Path, Path, str]:
    body = "\n".join(json.dumps(x) for x in LINES) + "\n"
    repo = tmp / "mirror" / "someone+logs" / "repo"
    subprocess.run(["git", "init", "-q", "--bare", str(repo)], check=True)
    blob = subprocess.run(["git", "--git-dir", str(repo), "hash-object", "-w", "--stdin"], input=body.encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    tree = subprocess.run(["git", "--git-dir", str(repo), "mktree"], input=f"100644 blob {blob}\tfull.jsonl\n".encode(),
                          capture_output=True, check=True).stdout.decode().strip()
    commit = subprocess.run(["git", "--git-dir", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com",
                             "commit-tree", tree, "-m", "x"], capture_output=True, check=True).stdout.decode().strip()
    fold = tmp / "F"
    (fold / "labels").mkdir(parents=True)
    (fold / "someone__logs").mkdir()
    (fold / "someone__logs" / "s1.jsonl").write_text(body)
    label = {"file": "someone__logs/s1.jsonl", "session_id": "s1", "format": "claude-code-jsonl",
             "source": {"repo": "someone/logs", "commit": commit, "path": "full.jsonl", "blob": blob},
             "prohibitions": [{"id": "P1", "line": 1, "text": "don't touch the CLI flags", "form": "explicit",
                               "note": "free text that is not kept"}],
             "compactions": [{"boundary_line": 2, "summary_line": 3, "in_force": ["P1"], "carried": ["P1"],
                              "dropped": [], "carried_quotes": {"P1": "keep CLI flags as is"}, "notes": "x"}],
             "excluded_candidates": [{"line": 1, "text": "please refactor", "reason": "a request"}],
             "note": "a labeller's remark on the file"}
    (fold / "labels" / "s1.json").write_text(json.dumps(label))
    return fold, tmp / "mirror", body


def test_pack_keeps_no_text_and_unpack_restores_it(tmp_path: Path) -> None:
    fold, mirrors, body = _fold(tmp_path)
    manifest = real_folds.pack(fold)
    flat = json.dumps(manifest)
    for text in ("touch the CLI flags", "keep CLI flags", "please refactor", "free text", "labeller's remark"):
        assert text not in flat
    out = tmp_path / "out"
    assert real_folds.unpack(manifest, mirrors, out) == 1
    assert (out / "someone__logs" / "s1.jsonl").read_text() == body
    label = json.loads((out / "labels" / "s1.json").read_text())
    assert label["prohibitions"][0]["text"] == "don't touch the CLI flags"
    assert label["compactions"][0]["carried_quotes"] == {"P1": "keep CLI flags as is"}
    assert label["excluded_candidates"][0]["text"] == "please refactor"


def test_pack_refuses_a_text_not_at_its_line(tmp_path: Path) -> None:
    fold, _, _ = _fold(tmp_path)
    lf = fold / "labels" / "s1.json"
    label = json.loads(lf.read_text())
    label["prohibitions"][0]["line"] = 3
    lf.write_text(json.dumps(label))
    with pytest.raises(real_folds.FoldError, match="not found at line 3"):
        real_folds.pack(fold)


def test_unpack_refuses_another_blob_and_a_missing_snapshot(tmp_path: Path) -> None:
    fold, mirrors, _ = _fold(tmp_path)
    manifest = real_folds.pack(fold)
    manifest["files"][0]["source"]["blob"] = "0" * 40
    with pytest.raises(real_folds.FoldError, match="is not the labelled"):
        real_folds.unpack(manifest, mirrors, tmp_path / "o1")
    with pytest.raises(real_folds.FoldError, match="no clone under"):
        real_folds.unpack(manifest, tmp_path / "nowhere", tmp_path / "o2")


def test_unpack_reads_the_labelled_blob_by_its_id_when_its_path_moved(tmp_path: Path) -> None:
    fold, mirrors, body = _fold(tmp_path)
    manifest = real_folds.pack(fold)
    manifest["files"][0]["source"]["path"] = "renamed-folder/full.jsonl"
    out = tmp_path / "out"
    assert real_folds.unpack(manifest, mirrors, out) == 1
    assert (out / "someone__logs" / "s1.jsonl").read_text() == body
    manifest["files"][0]["source"]["blob"] = "1" * 40  # neither the path nor the blob: one error naming the path
    with pytest.raises(real_folds.FoldError, match="renamed-folder/full.jsonl"):
        real_folds.unpack(manifest, mirrors, tmp_path / "o3")


def test_the_kept_manifests_are_text_free_pointers() -> None:
    for m in sorted(real_folds.HERE.glob("*.json")):
        d = json.loads(m.read_text())
        for f in d["files"]:
            assert "note" not in f and "notes" not in f, m.name
            for p in f["prohibitions"]:
                assert set(p["text"]) == {"line", "start", "len", "sha"}, m.name
                assert "note" not in p
            for c in f["compactions"]:
                assert "notes" not in c
                assert all(set(s) == {"line", "start", "len", "sha"} for s in c["carried_quotes"].values())


def _labelled(root: Path, prohibitions: list[tuple[str, int, str]], in_force: list[str], dropped: list[str],
              not_in_force: list[str] | None = None) -> Path:
    (root / "labels").mkdir(parents=True)
    label = {"file": "someone__logs/s1.jsonl", "session_id": "s1",
             "prohibitions": [{"id": pid, "line": line, "text": text} for pid, line, text in prohibitions],
             "compactions": [{"boundary_line": 40, "summary_line": 41, "in_force": in_force,
                              "carried": [p for p in in_force if p not in dropped], "dropped": dropped,
                              "not_in_force": not_in_force or []}]}
    (root / "labels" / "s1.json").write_text(json.dumps(label))
    return root


def test_agree_scores_the_second_labelling_as_a_judge_of_the_first(tmp_path: Path) -> None:
    first = _labelled(tmp_path / "a", [("P1", 3, "never push to main"), ("P2", 9, "keep the CLI flags"),
                                       ("P3", 12, "do not add a new dependency")],
                      ["P1", "P2", "P3"], ["P1", "P3"])
    # the same P1 (dropped), P2 labelled dropped, P3 not seen, a rule of its own (carried), one revoked
    second = _labelled(tmp_path / "b", [("Q1", 3, "Never push to main!"), ("Q2", 9, "keep the CLI flags as they are"),
                                        ("Q3", 20, "write tests in pytest"), ("Q4", 25, "no emojis")],
                       ["Q1", "Q2", "Q3", "Q4"], ["Q1", "Q2"], not_in_force=["Q4"])
    c = real_folds.agree(first, second)
    assert (c["both"], c["first_only"], c["second_only"]) == (2, 1, 1)
    assert (c["dd"], c["cd"], c["dc"], c["cc"]) == (1, 1, 0, 0)
    assert (c["tp"], c["fp"], c["fn"]) == (1, 1, 1)
    assert c["precision"] == c["recall"] == 0.5
    assert c["agreement"] == 0.5 and c["kappa"] == 0.0
    same = real_folds.agree(first, first)
    assert (same["tp"], same["fp"], same["fn"], same["kappa"]) == (2, 0, 0, 1.0)


def test_agree_needs_a_transcript_in_common(tmp_path: Path) -> None:
    first = _labelled(tmp_path / "a", [("P1", 3, "never push to main")], ["P1"], ["P1"])
    other = tmp_path / "b" / "labels"
    other.mkdir(parents=True)
    (other / "x.json").write_text(json.dumps({"file": "else/x.jsonl", "compactions": []}))
    with pytest.raises(real_folds.FoldError, match="no transcript in common"):
        real_folds.agree(first, tmp_path / "b")


def test_restated_counts_what_the_earlier_summary_gives_the_judge_to_read(tmp_path: Path) -> None:
    (tmp_path / "labels").mkdir()
    rules = [("P1", 3, "never push to main"), ("P2", 5, "the blue one please"), ("P3", 7, "the red one")]
    first = {"boundary_line": 20, "summary_line": 21, "in_force": ["P1", "P2", "P3"], "carried": ["P1", "P2"],
             "dropped": ["P3"], "carried_quotes": {"P1": "never push to main", "P2": "Do not use the red one."}}
    second = {"boundary_line": 40, "summary_line": 41, "in_force": ["P1", "P2", "P3"], "carried": ["P1"],
              "dropped": ["P2", "P3"]}
    label = {"file": "someone__logs/s1.jsonl", "compactions": [first, second],
             "prohibitions": [{"id": pid, "line": line, "text": text} for pid, line, text in rules]}
    (tmp_path / "labels" / "s1.json").write_text(json.dumps(label))
    # P3 was not carried by the first summary: nothing to restate; P2's user text reads as no rule, its restatement does
    assert real_folds.restated([tmp_path]) == {"carried/user-read/quote-read": 1, "dropped/user-unread/quote-read": 1}
