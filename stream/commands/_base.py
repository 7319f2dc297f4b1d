"""Shared plumbing for the CLI commands.

faust's :class:`~faust.cli.base.AppCommand` runs ``async def`` commands inside a
:class:`mode.Worker`, which is right for long-running services and wrong for a quick
tool such as ``replay`` whose stdout must carry only its output. :class:`SyncCommand`
keeps faust's option parsing and ``-A app`` handling but calls a plain function and
exits with the code it returns.
"""

from __future__ import annotations

import os
import sys
from typing import Any, ClassVar, NoReturn

from faust.cli.base import AppCommand


class SyncCommand(AppCommand):
    """A faust CLI command whose ``run`` is a plain function returning an exit code."""

    abstract: ClassVar[bool] = True

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        try:
            code = self.run(*(tuple(self.args) + args), **{**self.kwargs, **kwargs})
            sys.stdout.flush()
        except BrokenPipeError:  # `command | head`: the reader left early; not an error
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = 0
        raise SystemExit(int(code or 0))


def fail(message: str, code: int = 2) -> NoReturn:
    """Print one clear line on stderr (``checkpoint-guard: error: ...``) and exit."""
    print(f"checkpoint-guard: error: {message}", file=sys.stderr)
    raise SystemExit(code)
