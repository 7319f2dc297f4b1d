"""Labelled real folds kept as pointers: no text of anyone's session in the repository.

    python -m bench.real_folds pack FOLD_DIR > bench/real_folds/NAME.json
    python -m bench.real_folds unpack NAME --mirrors DIR --out DIR   # NAME: bench/real_folds/NAME.json, or a path
    python -m bench.real_folds list
    python -m bench.real_folds agree DIR_A DIR_B    # two labellers' labels of the same transcripts
    python -m bench.real_folds restated DIR ...     # does an earlier summary restate rules in a form the judge reads?

``pack`` turns a fold folder (the layout and labels of ``../shared/real-logs``) into a
manifest: per transcript its source (repository, commit, path, blob) and the labels with
every text replaced by a span (line, start, length, sha256) over :func:`line_text`.
``unpack`` rebuilds the folder from bare clones (``--mirrors``: ``MIRRORS/OWNER+NAME`` per
repository; a blob that differs is refused) and checks every span's hash. ``agree``: a second
labelling scored pair by pair against the first (:func:`agree`). Errors: one line on stderr,
exit 1. Notes and reasons (free text) are not kept.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent / "real_folds"
TEXT_FIELDS = ("text",)


class FoldError(Exception):
    """A fold or a manifest that cannot be packed or unpacked (message: what and where)."""


def line_text(raw: str) -> str:
    """Every string of one decoded JSONL line, in document order, joined by newlines."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    try:
        walk(json.loads(raw))
    except ValueError:
        return raw  # a malformed line is kept as its bytes
    return "\n".join(out)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _span(lines: list[str], line: int, text: str, where: str) -> dict[str, Any]:
    hay = line_text(lines[line - 1]) if 0 < line <= len(lines) else ""
    start = hay.find(text)
    if start < 0:
        raise FoldError(f"{where}: text not found at line {line}")
    return {"line": line, "start": start, "len": len(text), "sha": _sha(text)}


def _text(lines: list[str], span: dict[str, Any], where: str) -> str:
    hay = line_text(lines[span["line"] - 1])
    text = hay[span["start"]:span["start"] + span["len"]]
    if _sha(text) != span["sha"]:
        raise FoldError(f"{where}: span at line {span['line']} does not hold the labelled text")
    return text


def pack(fold: Path) -> dict[str, Any]:
    """The manifest of fold folder ``fold``."""
    files = []
    for lf in sorted((fold / "labels").glob("*.json")):
        label = json.loads(lf.read_text())
        lines = (fold / label["file"]).read_text(encoding="utf-8").split("\n")
        where = lf.name
        prohibitions = []
        for p in label.get("prohibitions", []):
            q = {k: v for k, v in p.items() if k not in ("text", "note")}
            q["text"] = _span(lines, p["line"], p["text"], f"{where} {p['id']}")
            prohibitions.append(q)
        compactions = []
        for c in label.get("compactions", []):
            q = {k: v for k, v in c.items() if k not in ("carried_quotes", "notes")}
            q["carried_quotes"] = {pid: _span(lines, c["summary_line"], quote, f"{where} quote {pid}")
                                   for pid, quote in (c.get("carried_quotes") or {}).items()}
            compactions.append(q)
        excluded = [{"text": _span(lines, e["line"], e["text"], f"{where} excluded"), "line": e["line"]}
                    for e in label.get("excluded_candidates", [])
                    if e.get("text") and e["text"] in line_text(lines[e["line"] - 1])]
        rest = {k: v for k, v in label.items()
                if k not in ("prohibitions", "compactions", "excluded_candidates", "note", "notes")}
        files.append({**rest, "prohibitions": prohibitions, "compactions": compactions,
                      "excluded_candidates": excluded})
    if not files:
        raise FoldError(f"{fold}: no labels/*.json")
    return {"fold": fold.name, "files": files}


def _git_show(mirrors: Path, repo: str, commit: str, path: str, blob: str | None = None) -> str:
    base = mirrors / repo.replace("/", "+")
    git_dir = next((d for d in (base / "repo", base) if (d / "HEAD").exists() or (d / "objects").is_dir()), None)
    if git_dir is None:
        raise FoldError(f"{repo}: no clone under {mirrors} "
                        f"(git clone --bare https://github.com/{repo} {base})")
    found = subprocess.run(["git", "--git-dir", str(git_dir), "show", f"{commit}:{path}"],
                           capture_output=True)
    if found.returncode and blob:
        # the path moved (a snapshot whose folder was renamed): the labelled blob, by its id, is the same bytes
        by_id = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "blob", blob], capture_output=True)
        if not by_id.returncode:
            return by_id.stdout.decode("utf-8")
    if found.returncode:
        raise FoldError(f"{repo}@{commit[:12]}:{path}: {found.stderr.decode(errors='replace').strip()}")
    return found.stdout.decode("utf-8")


def unpack(manifest: dict[str, Any], mirrors: Path, out: Path) -> int:
    """Rebuild the fold under ``out``; the number of transcripts written."""
    (out / "labels").mkdir(parents=True, exist_ok=True)
    for f in manifest["files"]:
        src = f["source"]
        body = _git_show(mirrors, src["repo"], src["commit"], src["path"], src.get("blob"))
        blob = hashlib.sha1(b"blob %d\0" % len(body.encode()) + body.encode()).hexdigest()
        if src.get("blob") and blob != src["blob"]:
            raise FoldError(f"{f['file']}: blob {blob[:12]} is not the labelled {src['blob'][:12]}")
        lines = body.split("\n")
        where = f["file"]
        label = {k: v for k, v in f.items() if k not in ("prohibitions", "compactions", "excluded_candidates")}
        label["prohibitions"] = [{**p, "text": _text(lines, p["text"], f"{where} {p['id']}")}
                                 for p in f["prohibitions"]]
        label["compactions"] = [{**c, "carried_quotes": {pid: _text(lines, s, f"{where} quote {pid}")
                                                         for pid, s in c["carried_quotes"].items()}}
                                for c in f["compactions"]]
        label["excluded_candidates"] = [{"line": e["line"], "text": _text(lines, e["text"], f"{where} excluded"),
                                         "reason": "(reason not kept)"} for e in f["excluded_candidates"]]
        target = out / f["file"]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
        (out / "labels" / f"{f['session_id']}.json").write_text(json.dumps(label, indent=1, ensure_ascii=False))
    return len(manifest["files"])


def _labels(fold: Path) -> dict[str, dict[str, Any]]:
    return {(lab := json.loads(lf.read_text()))["file"]: lab for lf in sorted((fold / "labels").glob("*.json"))}


def _in_force(label: dict[str, Any], comp: dict[str, Any]) -> dict[str, tuple[int, str, bool]]:
    """pid -> (line, text, dropped) of a compaction's prohibitions in force (revoked ones left out)."""
    gold = {p["id"]: p for p in label.get("prohibitions", [])}
    dropped = set(comp.get("dropped", []))
    out = {}
    for pid in comp.get("in_force", []):
        if pid in gold and pid not in set(comp.get("not_in_force", [])):
            out[pid] = (gold[pid]["line"], gold[pid]["text"], pid in dropped)
    return out


def agree(first: Path, second: Path) -> dict[str, Any]:
    """Pair-level agreement of ``second``'s labels with ``first``'s, over the transcripts both label.

    A compaction is matched by its boundary line; a prohibition in force by its line and
    :func:`bench.eval_real_logs.same_prohibition` (one text holds half the other's words).
    Returns counts (``both``: in force for both; ``first_only`` / ``second_only``), the
    carried/dropped table of the pairs in force for both with Cohen's kappa, and ``second``
    scored as if it were a judge of ``first``'s drops (TP: both dropped; FP: second dropped,
    first carried it or has no such rule in force; FN: first dropped, second did not):
    the precision and recall a perfect copy of the second labeller would get.
    """
    from bench.eval_real_logs import same_prohibition

    a_labels, b_labels = _labels(first), _labels(second)
    files = sorted(set(a_labels) & set(b_labels))
    if not files:
        raise FoldError(f"{first} and {second} label no transcript in common")
    c = {"files": len(files), "compactions": 0, "both": 0, "first_only": 0, "second_only": 0,
         "dd": 0, "dc": 0, "cd": 0, "cc": 0, "tp": 0, "fp": 0, "fn": 0}
    for f in files:
        a_comps = {x["boundary_line"]: x for x in a_labels[f].get("compactions", [])}
        b_comps = {x["boundary_line"]: x for x in b_labels[f].get("compactions", [])}
        for line in sorted(set(a_comps) | set(b_comps)):
            c["compactions"] += 1
            a = _in_force(a_labels[f], a_comps[line]) if line in a_comps else {}
            b = _in_force(b_labels[f], b_comps[line]) if line in b_comps else {}
            unmatched = dict(b)
            for la, ta, da in a.values():
                hit = next((pid for pid, (lb, tb, _) in unmatched.items()
                            if lb == la and same_prohibition(tb, ta)), None)
                if hit is None:  # the same words labelled on another line (a queued message and its copy)
                    hit = next((pid for pid, (_, tb, _) in unmatched.items() if same_prohibition(tb, ta)), None)
                if hit is None:
                    c["first_only"] += 1
                    c["fn"] += da
                    continue
                db = unmatched.pop(hit)[2]
                c["both"] += 1
                c[("d" if da else "c") + ("d" if db else "c")] += 1
                c["tp"] += da and db
                c["fp"] += db and not da
                c["fn"] += da and not db
            c["second_only"] += len(unmatched)
            c["fp"] += sum(d for _, _, d in unmatched.values())
    n = c["both"]
    if n:
        observed = (c["dd"] + c["cc"]) / n
        pa, pb = (c["dd"] + c["dc"]) / n, (c["dd"] + c["cd"]) / n
        chance = pa * pb + (1 - pa) * (1 - pb)
        c["kappa"] = round((observed - chance) / (1 - chance), 3) if chance < 1 else 1.0
        c["agreement"] = round(observed, 3)
    c["precision"] = round(c["tp"] / (c["tp"] + c["fp"]), 3) if c["tp"] + c["fp"] else None
    c["recall"] = round(c["tp"] / (c["tp"] + c["fn"]), 3) if c["tp"] + c["fn"] else None
    return c


def restated(folds: list[Path]) -> dict[str, Any]:
    """Could the earlier summary read a rule that the user's own words do not give the rules judge?

    Over every rule in force at a compaction that the compaction before it carried, with the labeller's quote of
    where in that summary: whether the default ``rules`` judge reads a rule in the user's text (as a typed message)
    and in the quote, counted by the later compaction's label. ``dropped`` / ``user-unread`` / ``quote-read`` is
    what reading the earlier summary would add to recall at most.
    """
    from collections import Counter

    from stream.adapters.compaction.judge import Candidate
    from stream.adapters.compaction.judge_rules import RulesJudge

    judge, counts = RulesJudge(), Counter[str]()

    def reads(text: str) -> str:
        return "read" if judge.instructions(Candidate("q#1", text, "typed")) else "unread"

    for fold in folds:
        for label in _labels(fold).values():
            rules, comps = {p["id"]: p for p in label.get("prohibitions", [])}, label.get("compactions", [])
            for before, now in zip(comps, comps[1:]):
                quotes = before.get("carried_quotes") or {}
                for pid in now.get("in_force", []):
                    if pid in before.get("carried", []) and isinstance(quotes.get(pid), str) and pid in rules:
                        kept = "dropped" if pid in now.get("dropped", []) else "carried"
                        counts[f"{kept}/user-{reads(rules[pid]['text'])}/quote-{reads(quotes[pid])}"] += 1
    return dict(sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.real_folds", description=__doc__.split("\n\n")[0],
                                 epilog="\n\n".join(__doc__.split("\n\n")[1:]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pack", help="print the manifest of a fold folder")
    p.add_argument("fold", type=Path, help="a fold folder: labels/*.json and the transcripts they name")
    u = sub.add_parser("unpack", help="rebuild a fold folder from git clones")
    u.add_argument("manifest", help="a kept fold's name (P, Q, R: bench/real_folds/NAME.json) or a manifest path")
    u.add_argument("--mirrors", type=Path, default=Path("/work/.mirror"),
                   help="folder of bare clones named OWNER+NAME (or OWNER+NAME/repo) (default: %(default)s)")
    u.add_argument("--out", type=Path, required=True, help="folder to write the fold into")
    sub.add_parser("list", help="the manifests kept in bench/real_folds")
    g = sub.add_parser("agree", help="score a second labelling of the same transcripts against the first")
    g.add_argument("first", type=Path, help="a fold folder (labels/*.json): the reference labels")
    g.add_argument("second", type=Path, help="a fold folder labelling some of the same transcripts")
    r = sub.add_parser("restated", help="count the rules an earlier summary restates in a form the judge reads")
    r.add_argument("folds", type=Path, nargs="+", help="fold folders (labels/*.json and their transcripts)")
    a = ap.parse_args(argv)
    try:
        if a.cmd == "pack":
            json.dump(pack(a.fold), sys.stdout, indent=1, ensure_ascii=False)
            print()
        elif a.cmd == "unpack":
            path = Path(a.manifest)
            if not path.exists() and (HERE / f"{a.manifest}.json").exists():
                path = HERE / f"{a.manifest}.json"
            if not path.exists():
                known = ", ".join(m.stem for m in sorted(HERE.glob("*.json")))
                raise FoldError(f"{a.manifest}: no such manifest (kept folds: {known})")
            n = unpack(json.loads(path.read_text()), a.mirrors, a.out)
            print(f"{n} transcripts and labels written to {a.out}", file=sys.stderr)
        elif a.cmd == "restated":
            json.dump(restated(a.folds), sys.stdout, indent=1)
            print()
        elif a.cmd == "agree":
            json.dump(agree(a.first, a.second), sys.stdout, indent=1)
            print()
        else:
            for m in sorted(HERE.glob("*.json")):
                d = json.loads(m.read_text())
                repos = sorted({f["source"]["repo"] for f in d["files"]})
                print(f"{m.stem}: {len(d['files'])} transcripts, {len(repos)} repositories")
    except (FoldError, OSError, ValueError, KeyError) as exc:
        print(f"real_folds: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
