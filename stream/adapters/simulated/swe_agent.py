"""mini-swe-agent ``*.traj.json`` -> :class:`~stream.adapters.simulated.model.Trajectory`.

Turn 0 is the system and task messages, then one turn per assistant step (with the tool
outputs that answer it); token sizes come from the model's own usage (chars/4 where it is
missing); the bash commands are read with a small shell tokenizer to find the files viewed
and written. The layout of a run and the rules: docs/ADAPTERS.md "mini-swe-agent".
"""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stream.adapters.common import AdapterError
from stream.adapters.simulated.extract import extract_constraints
from stream.adapters.simulated.model import Format, Trajectory, TurnBuilder, Turns, estimate_tokens, step_tool_calls

WORKDIR = "/testbed"
#: Words before the real command of a shell line (``sudo``, ``timeout 10``, ``env X=1``, ...).
_PREFIX_COMMANDS = ("sudo", "timeout", "time", "env", "exec", "nohup")


def looks_like(data: Any) -> bool:
    return isinstance(data, dict) and isinstance(data.get("messages"), list) and (
        "trajectory_format" in data or "instance_id" in data
    )


# --------------------------------------------------------------------------- shell


_PATHLIKE = re.compile(r"^(?:~?/|\./|\.\./)?[\w.@+~-]+(?:/[\w.@+~-]+)*$")
_HAS_EXT = re.compile(r"\.[A-Za-z][A-Za-z0-9_]{0,9}$")
_FILE_NAMES = {"Makefile", "Dockerfile", "setup.cfg", "tox.ini", "MANIFEST.in"}
_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][\w-]*)\2")
_PY_OPEN_WRITE = re.compile(
    r"""open\(\s*[rbuf]?(['"])([^'"\n]+)\1\s*,\s*(?:mode\s*=\s*)?[rbuf]?(['"])[^'"]*[wax][^'"]*\3"""
)
_PY_WRITE_TEXT = re.compile(r"""Path\(\s*[rbuf]?(['"])([^'"\n]+)\1\s*\)\s*\.\s*write_(?:text|bytes)\(""")
_PATCH_TARGET = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
_SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")", ";;", "|&", "\n"}
_REDIRECT_OUT = {">", ">>", ">|", "&>", "&>>"}
_READERS = {"cat", "head", "tail", "nl", "less", "more", "wc", "bat", "diff", "cmp", "file", "stat", "xxd", "od"}
_PATTERN_FIRST = {"grep", "egrep", "fgrep", "rg", "ag", "awk", "gawk"}
_PYTHONS = re.compile(r"^python(?:\d(?:\.\d+)?)?$")


def is_pathlike(token: str) -> bool:
    """A token that names a file (has an extension or a well-known name), not a dir or glob."""
    if not token or token.startswith("-") or not _PATHLIKE.match(token):
        return False
    base = posixpath.basename(token)
    return bool(_HAS_EXT.search(base)) or base in _FILE_NAMES


def normalize_path(path: str, cwd: str = WORKDIR) -> str:
    """Absolute-then-relative-to-/testbed form: ``./a/../b.py`` under /testbed -> ``b.py``."""
    p = posixpath.normpath(posixpath.join(cwd, path))
    if p == WORKDIR:
        return "."
    if p.startswith(WORKDIR + "/"):
        return p[len(WORKDIR) + 1 :]
    return p


def split_heredocs(command: str) -> tuple[str, list[str]]:
    """Replace each heredoc by a placeholder word; return (shell text, bodies)."""
    lines = command.split("\n")
    out: list[str] = []
    bodies: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        pending: list[str] = []

        def _sub(m: re.Match[str], pending: list[str] = pending) -> str:
            pending.append(m.group(3))
            return f" << __HEREDOC_{len(bodies) + len(pending) - 1}__ "

        out.append(_HEREDOC.sub(_sub, line))
        i += 1
        for delim in pending:
            body: list[str] = []
            while i < len(lines) and lines[i].strip() != delim:
                body.append(lines[i])
                i += 1
            i += 1  # the delimiter line
            bodies.append("\n".join(body))
    return "\n".join(out), bodies


def tokenize(text: str) -> list[str]:
    """Shell-ish tokens; punctuation (``&& | ; > <``) are tokens, newlines separate."""
    text = text.replace("\\\n", " ")
    try:
        lex = shlex.shlex(text.replace("\n", " ; "), posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        lex.commenters = ""
        return list(lex)
    except ValueError:  # unbalanced quotes: fall back to whitespace words
        return re.findall(r"&&|\|\||>>|[;|&<>()]|[^\s;|&<>()]+", text)


def _py_write_targets(source: str) -> list[str]:
    return [m.group(2) for m in _PY_OPEN_WRITE.finditer(source)] + [
        m.group(2) for m in _PY_WRITE_TEXT.finditer(source)
    ]


@dataclass
class ShellState:
    """What the shell heuristics remember across the commands of one run."""

    #: script path -> write targets (raw, as written in the script)
    scripts: dict[str, list[str]] = field(default_factory=dict)
    #: patch file path -> target paths (from its ``+++ b/...`` lines)
    patches: dict[str, list[str]] = field(default_factory=dict)


def file_ops(command: str, state: ShellState) -> list[tuple[str, str]]:
    """Ordered ``(op, normalized path)`` pairs a bash command performs; op = read|write."""
    text, bodies = split_heredocs(command)
    tokens = tokenize(text)
    ops: list[tuple[str, str]] = []
    cwd = WORKDIR
    simple: list[str] = []
    for tok in [*tokens, ";"]:
        if tok in _SEPARATORS:
            if simple:
                cwd = _simple_command(simple, bodies, state, cwd, ops)
            simple = []
        else:
            simple.append(tok)
    return ops


def _simple_command(
    words: list[str], bodies: list[str], state: ShellState, cwd: str, ops: list[tuple[str, str]]
) -> str:
    argv: list[str] = []
    redirect_out: list[str] = []
    redirect_in: list[str] = []
    heredoc: str | None = None
    i = 0
    while i < len(words):
        w = words[i]
        nxt = words[i + 1] if i + 1 < len(words) else ""
        if w in _REDIRECT_OUT:
            if nxt and not nxt.startswith("&") and nxt != "/dev/null":
                redirect_out.append(nxt)
            i += 2
            continue
        if w == "<":
            redirect_in.append(nxt)
            i += 2
            continue
        if w == "<<":
            m = re.fullmatch(r"__HEREDOC_(\d+)__", nxt)
            if m and int(m.group(1)) < len(bodies):
                heredoc = bodies[int(m.group(1))]
            i += 2
            continue
        if w in (">&", "<&", "<<<"):
            i += 2
            continue
        argv.append(w)
        i += 1
    while argv and (re.match(r"^[A-Za-z_]\w*=", argv[0]) or argv[0] in _PREFIX_COMMANDS):
        argv.pop(0)
        while argv and argv[0][:1].isdigit():  # timeout 30
            argv.pop(0)
    prog = posixpath.basename(argv[0]) if argv else ""
    args = argv[1:]

    def read(p: str) -> None:
        if is_pathlike(p):
            ops.append(("read", normalize_path(p, cwd)))

    def write(p: str) -> None:
        if is_pathlike(p):
            ops.append(("write", normalize_path(p, cwd)))

    def remember(target: str, body: str) -> None:
        key = normalize_path(target, cwd)
        if key.endswith((".patch", ".diff")):
            state.patches[key] = _PATCH_TARGET.findall(body)
        elif key.endswith(".py"):
            state.scripts[key] = _py_write_targets(body)

    def run_patch(patch_file: str) -> None:
        for target in state.patches.get(normalize_path(patch_file, cwd), []):
            write(target)

    new_cwd = cwd
    plain = [a for a in args if not a.startswith("-")]
    if prog == "cd":
        new_cwd = normalize_abs(plain[0] if plain else "/root", cwd)
    elif prog in _READERS:
        for a in plain:
            read(a)
    elif prog == "sed":
        in_place = any(a == "-i" or a.startswith("-i") or a == "--in-place" for a in args if a.startswith("-"))
        has_e = any(a in ("-e", "--expression", "-f") for a in args)
        files = plain if has_e else plain[1:]
        for a in files:
            (write if in_place else read)(a)
    elif prog in _PATTERN_FIRST:
        has_e = any(a in ("-e", "-f", "--regexp") for a in args)
        for a in plain if has_e else plain[1:]:
            read(a)
    elif prog in ("cp", "mv", "install"):
        if len(plain) >= 2:
            src, dst = plain[:-1], plain[-1]
            for s in src:
                if prog == "cp":
                    read(s)
            if is_pathlike(dst):
                write(dst)
            elif src and is_pathlike(src[-1]):
                write(posixpath.join(dst, posixpath.basename(src[-1])))
    elif prog in ("tee", "touch"):
        for a in plain:
            write(a)
    elif prog == "patch":
        patch_files = list(redirect_in)
        if "-i" in args and args.index("-i") + 1 < len(args):
            patch_files.append(args[args.index("-i") + 1])
        for a in plain:
            if a.endswith((".patch", ".diff")):
                patch_files.append(a)
            elif a not in patch_files:
                write(a)
        for pf in dict.fromkeys(patch_files):
            run_patch(pf)
    elif prog == "git" and args:
        sub, rest = args[0], [a for a in args[1:] if not a.startswith("-")]
        if sub == "apply":
            for a in rest:
                run_patch(a)
        elif sub in ("checkout", "restore"):
            for a in rest:
                write(a)
    elif _PYTHONS.match(prog):
        if args[:1] == ["-c"] and len(args) > 1:
            targets = _py_write_targets(args[1])
        elif args[:1] == ["-m"]:
            targets = []
        elif (not args or args[0] == "-") and heredoc is not None:
            targets = _py_write_targets(heredoc)
        elif plain:
            script = normalize_path(plain[0], cwd)
            targets = state.scripts.get(script, [])
        else:
            targets = []
        for t in targets:
            write(t)
    for r in redirect_in:
        if prog != "patch":
            read(r)
    for target in redirect_out:
        write(target)
        if heredoc is not None:
            remember(target, heredoc)
    return new_cwd


def normalize_abs(path: str, cwd: str) -> str:
    return posixpath.normpath(posixpath.join(cwd, path))


# --------------------------------------------------------------------------- parsing


def _usage_of(message: dict[str, Any]) -> dict[str, Any]:
    """The usage of a step known to have one (:func:`_usage`)."""
    usage = _usage(message)
    assert usage is not None
    return usage


def _usage(message: dict[str, Any]) -> dict[str, Any] | None:
    extra = message.get("extra")
    if not isinstance(extra, dict):
        return None
    response = extra.get("response")
    usage = response.get("usage") if isinstance(response, dict) else None
    if (isinstance(usage, dict) and isinstance(usage.get("prompt_tokens"), int)
            and isinstance(usage.get("completion_tokens"), int)):
        return usage
    return None


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):  # content parts
        return "\n".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in value)
    return str(value)


def _between(text: str, tag: str) -> str | None:
    m = re.search(rf"<{tag}>(.*?)</{tag}>", text, re.DOTALL)
    return m.group(1) if m else None


def parse(data: dict[str, Any], path: str | Path) -> Trajectory:
    """One mini-swe-agent run -> a trajectory (``AdapterError`` if malformed)."""
    messages = data["messages"]
    instance = data.get("instance_id") or Path(str(path)).name.split(".traj")[0]
    if not isinstance(instance, str) or not instance:
        raise AdapterError(path, "instance_id is not a non-empty string")
    if len(messages) < 2:
        raise AdapterError(path, f"only {len(messages)} message(s); expected system, task and steps")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or not isinstance(m.get("role"), str):
            raise AdapterError(path, f"messages[{i}] is not an object with a 'role'")

    # Token size per message: usage where we have it, chars/4 otherwise.
    tokens = [estimate_tokens(_text(m.get("content"))) for m in messages]
    steps = [i for i, m in enumerate(messages) if m["role"] == "assistant" and _usage(m)]
    if steps and steps[0] > 0:
        first = steps[0]  # everything before the first step is its prompt
        prompt = _usage_of(messages[first])["prompt_tokens"]
        if prompt > 0:
            tokens[:first] = [0] * first
            tokens[0] = prompt
    for n, i in enumerate(steps):
        u = _usage_of(messages[i])
        tokens[i] = max(1, u["completion_tokens"])
        if n + 1 < len(steps):
            j = steps[n + 1]
            between = list(range(i + 1, j))
            grown = _usage_of(messages[j])["prompt_tokens"] - u["prompt_tokens"] - u["completion_tokens"]
            est = sum(tokens[k] for k in between)
            if between and grown > 0 and est > 0:
                for k in between:  # spread the real growth over those messages by size
                    tokens[k] = max(1, round(grown * tokens[k] / est))

    shell = ShellState()
    versions: dict[str, int] = {}
    turns = Turns()
    cur: TurnBuilder | None = None
    task_seen = False

    for i, m in enumerate(messages):
        role = m["role"]
        content = _text(m.get("content"))
        mid = f"m{i:04d}"
        if i == 0 and role == "system":
            cur = turns.new("instructions")
            cur.add("span:system", "raw_span")
        elif role == "user" and not task_seen:
            task_seen = True
            cur = cur or turns.new("instructions")
            instructions = _between(content, "instructions")
            cur.add("span:task", "raw_span")
            if instructions is not None:  # no <instructions> block: no constraints
                cur.add("span:instructions", "raw_span")
                for c in extract_constraints(instructions, skip_blocks=("example_response",)):
                    cur.add_constraint(c)
        elif role == "user":
            cur = turns.user(mid)
        elif role == "assistant":
            cur = turns.new("step")
            for cid, call in step_tool_calls(cur, m, mid, content, path, f"messages[{i}]"):
                command = _command_of(call)
                for op, fpath in file_ops(command, shell) if command else []:
                    cur.add_file(fpath)
                    if op == "write":
                        versions[fpath] = versions.get(fpath, 0) + 1
                    v = versions.setdefault(fpath, 0)
                    if op == "read":
                        cur.add(f"view:{cid}:{fpath}", "file")
                    cur.add(f"file:{fpath}@v{v}", "file", referent=True)
        elif role == "tool":
            cur = turns.tool_output(m, mid, path, f"messages[{i}]")
        elif role == "exit":
            cur = turns.new("submission")
            cur.add("span:submission", "raw_span")
        else:
            raise AdapterError(path, f"messages[{i}] has unknown role {role!r}")
        if cur is None:
            raise AdapterError(path, "first message is neither system nor user")
        cur.tokens += tokens[i]
    built = [t.build() for t in turns if not t.empty]
    return Trajectory(
        context_id=f"swe:{instance}",
        source=Path(str(path)).as_posix(),
        turns=tuple(built),
        meta={"format": "mini-swe-agent", "instance_id": instance},
    )


def _command_of(call: dict[str, Any]) -> str:
    fn = call.get("function")
    raw = fn.get("arguments") if isinstance(fn, dict) else None
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return raw
    if isinstance(raw, dict):
        cmd = raw.get("command")
        return cmd if isinstance(cmd, str) else ""
    return ""


def _read(data: Any, path: Path) -> list[Trajectory | AdapterError]:
    return [parse(data, path)]


#: This module's entry in the format registry (:mod:`stream.adapters.simulated.formats`).
FORMAT = Format("mini-swe-agent", looks_like, _read)
