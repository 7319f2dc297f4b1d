"""The ``checkpoint-guard`` command (also ``python -m stream``): one click group.

Why not faust's CLI: faust's group imports faust and builds the app before any command
runs, prints faust's welcome and lists faust commands that do not apply here. So only
``worker`` builds the faust app, lazily, and hands over to faust's own worker command
with the options given; every other
command imports no faust at all (a test enforces it), so offline ``replay`` or
``schema`` start fast and cannot trip over the worker's machinery.
``faust -A stream.app worker`` keeps working (DESIGN.md §5).
"""

from __future__ import annotations

import difflib
import importlib
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import click

from stream import __version__
from stream.commands._base import Group as BaseGroup
from stream.commands._base import fail
from stream.errors import describe

PROG = "checkpoint-guard"

#: name -> (module:attribute, section of the help); imported only when used.
COMMANDS: dict[str, tuple[str, str]] = {
    "worker": ("stream.commands.worker:worker", "Service"),
    "remediate": ("stream.commands.remediate:remediate", "Service"),
    "topics": ("stream.commands.topics:topics", "Service"),
    "reset": ("stream.commands.worker:reset", "Service"),
    "replay": ("stream.commands.replay:replay", "Offline and forensics"),
    "export": ("stream.commands.export:export", "Offline and forensics"),
    "explain": ("stream.commands.explain:explain", "Offline and forensics"),
    "tail": ("stream.commands.tail:tail", "Offline and forensics"),
    "schema": ("stream.commands.schema:schema", "Offline and forensics"),
    "ingest": ("stream.commands.ingest:ingest", "Input"),
    "hooks": ("stream.commands.hook:hooks", "Input"),
    "hook": ("stream.commands.hook:hook", "Input"),
    "kafka": ("stream.commands.kafka:kafka", "Local development"),
    "demo": ("stream.commands.demo:demo", "Local development"),
    "clean": ("stream.commands.clean:clean", "Local development"),
}
SECTIONS = ("Service", "Offline and forensics", "Input", "Local development")



def _dist_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def version_line() -> str:
    """``checkpoint-guard X (faust-streaming Y, aiokafka Z, Python V)`` — no faust import."""
    py = ".".join(map(str, sys.version_info[:3]))
    return (f"{PROG} {__version__} (faust-streaming {_dist_version('faust-streaming')}, "
            f"aiokafka {_dist_version('aiokafka')}, Python {py})")


def _print_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_line())
        ctx.exit(0)


class Group(BaseGroup):
    """Loads each command's module on first use; lists commands by section."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, _, attr = target[0].partition(":")
        return getattr(importlib.import_module(module), attr)

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                             list[str]]:
        name = args[0] if args else ""
        if args and name not in COMMANDS and not name.startswith("-"):
            close = difflib.get_close_matches(name, list(COMMANDS), 1, 0.6)
            if close:
                raise click.UsageError(f"No such command {name!r}; did you mean {close[0]!r}?", ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        for section in SECTIONS:
            rows = []
            for name, (_, sec) in COMMANDS.items():
                if sec == section:
                    cmd = self.get_command(ctx, name)
                    rows.append((name, cmd.get_short_help_str(limit=200) if cmd else ""))
            with formatter.section(section):
                formatter.write_dl(rows)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        """click's main under the error contract (docs/OPERATIONS.md §12): every way a
        command can end that it did not handle itself becomes one line
        (``checkpoint-guard: error: <what>; <the fix>``) and an exit code — 2 for
        usage, 1 for a failed run, 130 for Ctrl-C (:func:`stream.errors.describe`)."""
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except SystemExit:
            raise
        except click.exceptions.NoArgsIsHelpError as exc:  # bare `checkpoint-guard`: the help
            print(exc.format_message(), file=sys.stderr, flush=True)
            raise SystemExit(exc.exit_code) from None
        except click.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else PROG
            hint = f" (see `{where} -h`)" if exc.ctx is not None else ""
            said = exc.format_message()
            if isinstance(exc, click.NoSuchOption) and exc.possibilities:  # "...: --since\nDid you mean --json?"
                said = f"{exc.message} (did you mean {' or '.join(sorted(exc.possibilities))}?)"
            said = " ".join(said.split())  # click's "Choose from:\n\tcreate,\n\t...": one line
            fail(f"{said.removesuffix('.') if hint else said}{hint}", exc.exit_code)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except click.Abort as exc:  # click turns Ctrl-C into Abort; a declined confirmation is one too
            if isinstance(exc.__context__, KeyboardInterrupt):
                fail(*describe(exc.__context__))
            fail("aborted: nothing was changed", 1)
        except BaseException as exc:  # noqa: BLE001 - the contract: one line, never a traceback
            fail(*describe(exc))
        if isinstance(rv, int) and not isinstance(rv, bool):  # ctx.exit(code) (e.g. --help, --version)
            raise SystemExit(rv)
        return rv

    def invoke(self, ctx: click.Context) -> Any:
        from stream.logs import setup_cli_logging

        name = ctx.protected_args[0] if ctx.protected_args else None
        if name != "worker":  # faust sets up the worker's logging
            setup_cli_logging()
        return super().invoke(ctx)


@click.group(cls=Group, name=PROG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Print checkpoint-guard's version (and faust's, aiokafka's, Python's) and exit.")
def cli() -> None:
    """checkpoint-guard: catch hierarchical context compaction of LLM agents turning into
    silent data loss.

    A Kafka stream processor: the worker validates every checkpoint against the
    artifacts it refers to and publishes alerts; the other commands replay, inspect and
    feed the topics. Settings come from CG_* environment variables (README, "Settings");
    `checkpoint-guard COMMAND -h` explains each command.
    """


def main(argv: list[str] | None = None) -> None:
    """Entry point of ``checkpoint-guard`` and ``python -m stream``."""
    from pydantic import ValidationError

    from stream.settings import get_settings

    raw_args = list(sys.argv[1:] if argv is None else argv)
    if raw_args[:1] == ["hook"]:  # run by an agent: exit 0 whatever happens, failures to the hook's log
        from stream.commands.hook import guarded

        guarded(lambda: cli.main(args=raw_args, prog_name=PROG), raw_args)
    try:
        get_settings()
    except ValidationError as exc:  # a bad CG_* variable: one line each, no traceback
        print("\n".join(settings_errors(exc)), file=sys.stderr)
        raise SystemExit(2) from None
    except Exception as exc:  # noqa: BLE001 - e.g. an unreadable .env file
        fail(*describe(exc))
    args = _offline_since(list(sys.argv[1:] if argv is None else argv))
    cli.main(args=args, prog_name=PROG)


def settings_errors(exc: Exception) -> list[str]:
    """One line per invalid ``CG_*`` setting of a pydantic ``ValidationError``."""
    lines = []
    for err in exc.errors():  # type: ignore[attr-defined]
        name = "CG_" + "_".join(str(p) for p in err.get("loc", ())).upper()
        value = err.get("input")
        shown = f"={value!r}" if isinstance(value, (str, int, float)) and "PASSWORD" not in name else ""
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if "; " not in msg and " use " not in msg:  # pydantic's own words: add the fix
            msg += f"; set {name} to a valid value (README, \"Settings\") or unset it"
        lines.append(f"{PROG}: error: {name}{shown}: {msg}")
    return lines


def _offline_since(argv: list[str]) -> list[str]:
    """``replay FILE --since FILE2``: offline, ``--since`` is a flag (DESIGN.md §5).

    The option takes an optional TIME for ``--from-kafka``; without that flag, bind it
    to an empty value so click never swallows the following PATH (files must be read
    in the order given).
    """
    if "replay" in argv and "--from-kafka" not in argv:
        return [("--since=" if a == "--since" else a) for a in argv]
    return argv
