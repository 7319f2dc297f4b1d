"""Shared plumbing for the CLI commands (plain :pypi:`click`, no faust).

A command is a plain function that returns its exit code; :func:`command` turns it into
a click command whose stdout carries only its output, that exits with that code, and
for which a reader leaving early (``command | head``) is not an error. Errors the user
can fix are one line on stderr, ``checkpoint-guard: error: ...`` (:func:`fail`).
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import click

PROG = "checkpoint-guard"

argument = click.argument


def option(*args: Any, show_default: bool = True, **kwargs: Any) -> Callable[[Any], Any]:
    """:func:`click.option` that shows its default in ``--help``."""
    return click.option(*args, show_default=show_default, **kwargs)


class _ParsesWithContext:
    """Usage errors of the command line that name their command (so the line ends with its
    ``-h`` hint, stream/cli.py) and say plainly which option lacks its value.

    click's parser raises "Option '--out' requires an argument." without the command's
    context; and ``--out --status`` silently takes ``--status`` as the file name. Both are
    one usage line here: ``option --out needs a value (--out TEXT) (see `... -h`)``.
    """

    params: list[click.Parameter]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            rest: list[str] = super().parse_args(ctx, args)  # type: ignore[misc]
        except click.BadOptionUsage as exc:
            if exc.ctx is None:
                exc.ctx = ctx
            if "requires" in exc.message and exc.option_name in exc.message:  # "Option '--x' requires an argument."
                exc.message = self._needs_value(ctx, exc.option_name)
            raise
        except click.UsageError as exc:
            if exc.ctx is None:
                exc.ctx = ctx
            raise
        names = {opt for p in self.params for opt in (*p.opts, *p.secondary_opts) if isinstance(p, click.Option)}
        names.update(ctx.help_option_names)
        for param in self.params:
            if not isinstance(param, click.Option) or param.is_flag or param.count or param.name not in ctx.params:
                continue
            value = ctx.params[param.name]
            values = value if isinstance(value, (tuple, list)) else (value,)
            taken = next((v for v in values if isinstance(v, str) and v in names), None)
            if taken is not None:
                opt = max(param.opts, key=len)
                raise click.BadOptionUsage(opt, f"{self._needs_value(ctx, opt)}, not the option {taken}", ctx=ctx)
        return rest

    def _needs_value(self, ctx: click.Context, opt: str) -> str:
        param = next((p for p in self.params if opt in p.opts or opt in p.secondary_opts), None)
        metavar = f" ({opt} {param.make_metavar(ctx)})" if isinstance(param, click.Option) else ""
        return f"option {opt} needs a value{metavar}"


class Command(_ParsesWithContext, click.Command):
    """Every command of checkpoint-guard (:class:`_ParsesWithContext`)."""


class Group(_ParsesWithContext, click.Group):
    """Every command group of checkpoint-guard; its sub-commands are :class:`Command` s."""

    command_class = Command


def command(*params: Callable[[Any], Any], name: str | None = None,
            **settings: Any) -> Callable[[Callable[..., int]], click.Command]:
    """A click command from a function returning an exit code; ``params`` in help order."""

    def decorate(fun: Callable[..., int]) -> click.Command:
        @functools.wraps(fun)
        def run(**kwargs: Any) -> NoReturn:
            try:
                code = fun(**kwargs)
                sys.stdout.flush()
            except BrokenPipeError:  # `command | head`: the reader left early; not an error
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                code = 0
            raise SystemExit(int(code or 0))

        cmd = click.command(name=name or fun.__name__.replace("_", "-"), help=fun.__doc__, cls=Command,
                            **settings)(run)
        for param in params:  # click appends params given to a Command: keep the listed order
            param(cmd)
        return cmd

    return decorate


def runnable_prog() -> str:
    """How the user can run this CLI again from their shell: ``checkpoint-guard`` when that
    name on PATH is the one running, else the script's path (relative when under the current
    directory, e.g. ``.venv/bin/checkpoint-guard``), else ``PYTHON -m stream``."""
    import shlex
    import shutil

    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    script = argv0 if argv0 is not None and argv0.name == PROG else Path(sys.executable).parent / PROG
    on_path = shutil.which(PROG)
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m stream"
    if on_path and Path(on_path).resolve() == script.resolve():
        return PROG
    absolute, here = script.absolute(), Path.cwd()
    shown = str(absolute)
    if here != Path(here.anchor) and absolute.is_relative_to(here):
        shown = str(absolute.relative_to(here))
        shown = shown if "/" in shown else f"./{shown}"
    return shlex.quote(shown)


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear line on stderr (``checkpoint-guard: error: ...``) and exit."""
    print(f"{PROG}: error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def check_output_file(path: str, *, option: str = "--out") -> None:
    """Fail (exit 2) unless ``path`` can be a file in an existing directory — checked
    before any work is done, so nothing is read or sent for an output that cannot be written."""
    p = Path(path)
    if p.is_dir():
        fail(f"cannot write {option} {path}: it is a directory; give a file name, e.g. {p / 'out.jsonl'}")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        fail(f"cannot write {option} {path}: directory {parent} does not exist; create it first (mkdir -p {parent})")
    if not os.access(parent, os.W_OK):
        fail(f"cannot write {option} {path}: directory {parent} is not writable")


def check_input_file(path: str, *, what: str, dir_ok: bool = False) -> None:
    """Fail (exit 2) unless ``path`` exists, is readable and (unless ``dir_ok``) is no
    directory — checked before any work is done. ``what`` names what to give instead."""
    p = Path(path)
    if not p.exists():
        fail(f"cannot read {path}: no such file or directory; check the path, or give {what}")
    if p.is_dir() and not dir_ok:
        fail(f"cannot read {path}: it is a directory; give {what} (e.g. {p / '*.jsonl'})")
    if not os.access(p, os.R_OK):
        fail(f"cannot read {path}: permission denied; make it readable (chmod u+r) or give another path")
