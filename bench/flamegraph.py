"""Folded stacks (``py-spy record --format raw``) -> a self-contained SVG flame graph.

    python -m bench.flamegraph worker.folded worker.svg [--title TEXT] [--min-width 0.001]

Input lines are ``frame;frame;...;frame COUNT`` (root first), the format py-spy's
``raw`` output, Brendan Gregg's ``stackcollapse`` tools and speedscope share. The SVG
needs no script: each box has a ``<title>`` tooltip (frame, samples, share). No
dependency beyond the standard library, so a profile can be turned into a picture
wherever the bench ran.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import sys
from pathlib import Path

ROW = 16
WIDTH = 1800
FONT = 11


class Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name: str) -> None:
        self.name = name
        self.count = 0
        self.children: dict[str, Node] = {}


def parse(text: str) -> Node:
    root = Node("all")
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        n = int(count)
        root.count += n
        node = root
        for frame in stack.split(";"):
            if not frame:
                continue
            node = node.children.setdefault(frame, Node(frame))
            node.count += n
    return root


_CONTROL = dict.fromkeys(range(32), "?")


def _text(s: str) -> str:
    """XML-safe text: control characters (py-spy may report some in odd frames) become '?'."""
    return html.escape(s.translate(_CONTROL))


def _color(name: str) -> str:
    h = int(hashlib.md5(name.split(" (")[0].encode()).hexdigest()[:6], 16)
    if "stream/" in name:  # our code stands out
        return f"rgb({60 + h % 60},{150 + h % 80},{60 + (h >> 8) % 60})"
    return f"rgb({205 + h % 50},{80 + (h >> 8) % 130},{30 + (h >> 16) % 40})"


def render(root: Node, title: str, min_width: float = 0.001) -> str:
    depth = 0
    boxes: list[str] = []
    total = max(root.count, 1)

    def walk(node: Node, x: float, level: int) -> None:
        nonlocal depth
        w = node.count / total
        if w < min_width:
            return
        depth = max(depth, level)
        boxes.append((x, w, level, node))  # type: ignore[arg-type]
        cx = x
        for child in sorted(node.children.values(), key=lambda c: c.name):
            walk(child, cx, level + 1)
            cx += child.count / total

    walk(root, 0.0, 0)
    height = (depth + 1) * ROW + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace" font-size="{FONT}">',
        '<rect width="100%" height="100%" fill="#f8f8f8"/>',
        f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14">{_text(title)}</text>',
    ]
    for x, w, level, node in boxes:  # type: ignore[misc]
        px, pw = x * WIDTH, w * WIDTH
        y = height - (level + 1) * ROW - 4
        label = _text(node.name)
        tip = f"{label} — {node.count:,} samples ({node.count / total:.1%})"
        out.append(f'<g><title>{tip}</title><rect x="{px:.1f}" y="{y}" width="{max(pw - 0.5, 0.1):.1f}" '
                   f'height="{ROW - 1}" fill="{_color(node.name)}" rx="1"/>')
        chars = int(pw / (FONT * 0.6))
        if chars >= 3:
            text = node.name if len(node.name) <= chars else node.name[: chars - 2] + ".."
            out.append(f'<text x="{px + 2:.1f}" y="{y + ROW - 4}">{_text(text)}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def folded_to_svg(src: Path, dst: Path, title: str, min_width: float = 0.001) -> int:
    """Write the SVG; returns the number of samples."""
    root = parse(Path(src).read_text(encoding="utf-8", errors="replace"))
    Path(dst).write_text(render(root, title, min_width), encoding="utf-8")
    return root.count


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bench/flamegraph.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("folded")
    ap.add_argument("svg")
    ap.add_argument("--title", default="checkpoint-guard worker (py-spy)")
    ap.add_argument("--min-width", type=float, default=0.001, help="hide boxes under this share of samples")
    a = ap.parse_args(argv)
    n = folded_to_svg(Path(a.folded), Path(a.svg), a.title, a.min_width)
    print(f"{a.svg}: {n:,} samples", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
