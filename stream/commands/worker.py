"""``checkpoint-guard worker`` — build the faust app now and hand over to faust's worker.

Only ``worker`` imports faust: the worker (:mod:`stream.app`: host, runtime, web views)
is built when the command runs, then the host's command line (faust's own ``worker``,
:meth:`stream.worker.compat.FaustHost.main`) runs with the options given here. Options keep faust's
names (``-l``, ``--web-port``, ...; DESIGN.md §5) but their help shows this project's
defaults (``CG_WEB_HOST`` = 127.0.0.1, not faust's 0.0.0.0). ``-h`` is help here; faust's
``-h`` short form of ``--web-host`` is not offered.
"""

from __future__ import annotations

from typing import Any, NoReturn

import click

from stream.commands._base import Command, option
from stream.settings import Settings, get_settings

LOGLEVELS = ("crit", "error", "warn", "info", "debug")
_D = {name: f.default for name, f in Settings.model_fields.items()}

_SHORT = {"loglevel": "-l", "logfile": "-f", "web_port": "-p", "web_bind": "-b"}


def _argv(ctx: click.Context, params: dict[str, Any]) -> list[str]:
    """faust worker arguments for the options the user gave (defaults stay faust's/ours)."""
    args: list[str] = []
    for name, value in params.items():
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.COMMANDLINE:
            continue
        if name == "with_web":
            args.append("--with-web" if value else "--without-web")
        elif value is not None:
            args += [f"--{name.replace('_', '-')}", str(value)]
    return args


def handover(args: list[str], *, quiet: bool = False) -> NoReturn:
    """Run the worker's command line (faust's, through the host) with ``args``."""
    from stream.app import host

    host.main(args, quiet=quiet)


@click.command(cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@option("--loglevel", "-l", type=click.Choice(LOGLEVELS, case_sensitive=False), default="warn",
        help="Logging level.")
@option("--logfile", "-f", type=click.Path(dir_okay=False), default=None,
        help="Write the log to this file [default: stderr].")
@option("--web-port", "-p", type=click.IntRange(1, 65535), default=None,
        help=f"Port of the web views (/healthz, /readyz, /metrics, /nodes) [default: CG_WEB_PORT, {_D['web_port']}]. "
             "Also resets the canonical URL to http://<web host>:<port>.", show_default=False)
@option("--web-bind", "-b", type=str, default=None, show_default=False,
        help=f"Address the web server binds [default: CG_WEB_HOST, {_D['web_host']}].")
@option("--web-host", type=str, default=None, show_default=False,
        help=f"Host name other workers use to reach this one (canonical URL) [default: CG_WEB_HOST, {_D['web_host']}].")
@option("--with-web/--without-web", default=True, help="Serve the web views (needed for /readyz and /metrics).")
@option("--debug/--no-debug", default=False, help="faust's debug mode (blocking detector, aiomonitor console).")
@click.pass_context
def worker(ctx: click.Context, **params: Any) -> NoReturn:
    """Run the stream worker: validate checkpoints, publish alerts (faust worker).

    Consumes CG_COMPACTION_TOPIC and CG_ARTIFACT_TOPIC in the consumer group CG_APP_ID,
    keeps the tables in CG_DATA_DIR (RocksDB; one worker per directory), and serves
    /healthz, /readyz, /metrics and /nodes on CG_WEB_HOST:CG_WEB_PORT. Refuses to
    start, with one line, when the topics are missing or not co-partitioned, the data
    dir is in use by another worker, or the web port is taken. Stops on SIGTERM/Ctrl-C.
    Also: faust -A stream.app worker.
    """
    debug = params.pop("debug")
    args = (["--debug"] if debug else []) + ["worker", *_argv(ctx, params)]
    if ctx.get_parameter_source("loglevel") is not click.core.ParameterSource.COMMANDLINE:
        args += ["--loglevel", params["loglevel"]]
    handover(args, quiet=get_settings().log_format == "json")


@click.command(cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@option("--yes", "-y", is_flag=True, default=False, help="Do not ask for confirmation.")
def reset(yes: bool) -> None:
    """Delete this worker's local state (CG_DATA_DIR/state; it rebuilds from the state log).

    Refuses, with one line, while a worker holds CG_DATA_DIR. The next start restores
    every assigned partition from ``<CG_APP_ID>-state`` (docs/DURABILITY.md), so nothing
    is lost; use it after moving a worker or when its RocksDB files are damaged.
    """
    import os

    from stream.worker.preflight import lock_data_dir
    from stream.worker.store import PartitionStore, partition_paths

    settings = get_settings()
    state = settings.state_dir
    # exits 1 with one line while a worker runs on it (checked first: a running worker's state is never touched)
    fd = lock_data_dir(settings.data_dir,
                       fix="stop that worker first (its state is deleted only while no worker uses it)")
    try:
        parts = partition_paths(state)
        if not parts:
            click.echo(f"nothing to reset: no partition state in {state}")
            return
        if not yes:
            click.confirm(f"delete the local state of {len(parts)} partition(s) in {state}?", abort=True)
        for path in parts:
            PartitionStore.destroy(path)
        click.echo(f"deleted the local state of {len(parts)} partition(s) in {state}; "
                   "the next start restores them from the state log")
    finally:
        os.close(fd)
