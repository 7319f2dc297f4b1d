"""``checkpoint-guard clean`` — delete what checkpoint-guard keeps in the user's home.

``<data>`` (the XDG data dir, ``~/.local/share/checkpoint-guard``: the default worker
data dir, the local broker's home, the demo's broker and worker) and, with ``--cache``,
``<cache>`` (``~/.cache/checkpoint-guard``: Kafka's jars, the deploy tools ``make tools``
built, the last internal error). Refuses, with one line, while a worker holds a data
dir there or a local broker runs from there. A ``CG_DATA_DIR`` / ``CG_KAFKA_HOME``
outside ``<data>`` is named, never deleted (it may hold other things).
"""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import click

from stream.commands._base import PROG, command, fail, option
from stream.settings import USER_CACHE_DIR, USER_DATA_DIR, get_settings


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _human(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size} B"  # pragma: no cover


def _contents(root: Path) -> str:
    """``": worker, kafka, demo"`` — what the top of ``root`` holds."""
    names = sorted(p.name for p in root.iterdir())
    return f": {', '.join(names)}" if names else ""


def _in_use(root: Path) -> str | None:
    """Why ``root`` cannot be deleted now (a worker or a local broker uses it), or None."""
    from stream.devtools import kafka_local

    for lock in root.rglob("worker.lock"):
        try:
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return f"a worker is using {lock.parent} (lock {lock}); stop that worker first"
        finally:
            os.close(fd)
    settings = get_settings()
    for pid_file in root.rglob(kafka_local.PID_NAME):
        home = pid_file.parent
        if kafka_local.status(settings.model_copy(update={"kafka_home": home}), probe_timeout=0.5).running:
            return (f"a local broker runs from {home}; stop it first: `{PROG} kafka stop --home {home}` "
                    "(the demo's: the demo stops it, or kill the one `demo --keep-running` left)")
    return None


def _unsent(root: Path) -> str:
    """``"; N Claude Code hook events not yet sent ..."`` when the hook's spool under ``root`` holds any."""
    from stream.hook.spool import Spool

    spool_dir = Path(get_settings().hook_dir) / "spool"
    if not spool_dir.is_dir() or not spool_dir.resolve().is_relative_to(root.resolve()):
        return ""
    n = sum(Spool(spool_dir, f.stem).pending() for f in sorted(spool_dir.glob("*.jsonl")))
    if not n:
        return ""
    return (f"; {n} Claude Code hook event(s) not yet sent to Kafka are in {spool_dir} "
            f"(send them first: {PROG} ingest --spool)")


@command(
    option("--cache", is_flag=True, default=False,
           help=f"Also delete <cache> ({USER_CACHE_DIR}): Kafka's jars (downloaded again on the next start), "
                "the tools `make tools` built, the last internal error."),
    option("--dry-run", "-n", is_flag=True, default=False, help="Only list what would be deleted."),
    option("--yes", "-y", is_flag=True, default=False, help="Do not ask for confirmation."),
)
def clean(cache: bool, dry_run: bool, yes: bool) -> int:
    """Delete checkpoint-guard's state in your home directory, saying what was removed.

    Deletes <data> (the XDG data dir, $XDG_DATA_HOME/checkpoint-guard): the default
    worker data dir (its local state; the state log in Kafka is untouched), the local
    broker's home (`kafka start`: its topics and data), the demo's, and the Claude Code
    hook's cursors, spool and judge cache (events not yet sent are counted first). --cache also
    deletes <cache> ($XDG_CACHE_HOME/checkpoint-guard). Refuses while a worker or a
    local broker uses them. A CG_DATA_DIR or CG_KAFKA_HOME outside <data> is listed
    and kept; `checkpoint-guard reset` deletes one worker's local state only.
    """
    settings = get_settings()
    targets = [p for p in (USER_DATA_DIR, USER_CACHE_DIR if cache else None) if p is not None and p.exists()]
    for name, path in (("CG_DATA_DIR", settings.data_dir), ("CG_KAFKA_HOME", settings.kafka_home)):
        path = Path(path)
        if path.exists() and not path.resolve().is_relative_to(USER_DATA_DIR.resolve()):
            click.echo(f"kept {name}={path}: it is outside {USER_DATA_DIR} (delete it yourself if it is yours)")
    if not targets:
        click.echo(f"nothing to clean: neither {USER_DATA_DIR} nor {USER_CACHE_DIR} exists" if cache else
                   f"nothing to clean: {USER_DATA_DIR} does not exist")
        return 0
    for root in targets:
        why = _in_use(root)
        if why:
            fail(why, code=1)
    about = {root: f"{root} ({_human(_size(root))}{_contents(root)}){_unsent(root)}" for root in targets}
    listing = ", ".join(about.values())
    if dry_run:
        click.echo(f"would delete {listing}")
        return 0
    if not yes:
        click.confirm(f"delete {listing}?", abort=True)
    for root in targets:
        shutil.rmtree(root)
        click.echo(f"removed {about[root]}")
    return 0
