"""``checkpoint-guard hook claude-code`` (run by Claude Code) and ``hooks install|uninstall|status``.

The hook never hurts the session: whatever happens — bad input, a broken setting, a
full disk, a bug — it exits 0 with nothing on stdout and one line in ``hook.log``
(:func:`guarded`, used by :func:`stream.cli.main` before any setting is read). The
machinery is :mod:`stream.hook`; the manual is ``docs/HOOK.md``.
"""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from stream.commands._base import PROG, Group, fail, option


def guarded(run: Callable[[], Any], argv: list[str]) -> None:
    """Run the ``hook`` CLI so that the process exits 0 whatever happens (exit 2 would block a
    compaction); a non-zero exit or an exception is one line in the hook log."""
    code: Any = 0
    try:
        run()
    except SystemExit as exc:
        code = exc.code
    except BaseException as exc:  # noqa: BLE001 - the session must never see our failure
        code = f"{type(exc).__name__}: {exc}"
    if code not in (0, None):
        _log_line(None, None, f"`{PROG} {' '.join(argv)}` failed ({code}); exit 0 so Claude Code goes on")
    try:
        sys.stdout.flush()
    except Exception:  # noqa: BLE001 - stdout closed or gone (None, EPIPE, ENOSPC): nobody to tell
        try:  # and the interpreter's own last flush would fail too and exit 120
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        except OSError:
            pass
    raise SystemExit(0)


def _log_line(session: str | None, event: str | None, message: str) -> None:
    from stream.hook.store import HookLog

    try:
        from stream.settings import get_settings

        root = Path(get_settings().hook_dir)
    except Exception:  # noqa: BLE001 - settings themselves may be the failure
        from stream.settings import USER_DATA_DIR

        root = USER_DATA_DIR / "claude-code"
    HookLog(root.expanduser() / "hook.log").line(session, event, message)


# --------------------------------------------------------------------------- hook


@click.group(name="hook", cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
def hook() -> None:
    """Hook commands that an agent runs itself (see `checkpoint-guard hooks install`)."""


@hook.command(name="claude-code")
@click.option("--match-threshold", type=float, default=None,
              help="As `ingest claude-code --match-threshold` (give both the same value: live = batch).")
@click.option("--alert-uncertain", is_flag=True, default=False, help="As `ingest claude-code --alert-uncertain`.")
@click.option("--judge-precision", type=click.Choice(["precise", "balanced", "recall"]), default=None,
              help="As `ingest claude-code --judge-precision` [CG_JUDGE_PRECISION, else precise].")
@click.option("--judge", type=click.Choice(["rules", "model"]), default="rules",
              help="As `ingest claude-code --judge` (model: CG_JUDGE_*; raise --budget, docs/HOOK.md).")
@click.option("--judge-fallback", type=click.Choice(["none", "rules"]), default="none",
              help="As `ingest claude-code --judge-fallback`: a call whose model is unavailable judges with the rules.")
@click.option("--budget", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Hard time budget of a call, seconds [CG_HOOK_BUDGET, 5].")
@click.option("--catch-up", "catch_up", type=click.Path(dir_okay=False), default=None, hidden=True,
              help="Internal: finish a call that ran out of its budget (input JSON in this file), without a budget.")
def claude_code(match_threshold: float | None, alert_uncertain: bool, judge_precision: str | None, judge: str,
                judge_fallback: str, budget: float | None, catch_up: str | None) -> None:
    """Claude Code hook: stream the session, hand dropped prohibitions back after a compaction.

    Reads the hook's JSON on stdin (PreCompact, SessionStart, Stop, SessionEnd; see
    docs/HOOK.md), turns the transcript's new records into events (the adapter of
    `ingest claude-code`), spools them and sends them to Kafka when the broker answers.
    After a compaction (SessionStart, source compact) it prints the prohibitions in force
    that the new summary does not carry as the hook's additionalContext. Always exits 0;
    failures go to CG_HOOK_DIR/hook.log. Installed by `checkpoint-guard hooks install`.
    """
    from stream.hook.claude_code import (
        Budget,
        BudgetExceeded,
        HookInputError,
        Options,
        TranscriptMissing,
        handle,
        parse_input,
        spawn_catch_up,
    )
    from stream.hook.store import LockTimeout, session_key
    from stream.settings import get_settings

    real_stdout = sys.stdout
    sys.stdout = io.StringIO()  # nothing but our one JSON object may reach Claude Code's stdout
    inp = None
    raw = b""
    try:
        settings = get_settings()
        raw = Path(catch_up).read_bytes() if catch_up else sys.stdin.buffer.read(16 << 20)
        inp = parse_input(raw)
        limit = Budget(None if catch_up else (budget or settings.hook_budget))
        limit.arm()
        try:
            options = Options(match_threshold, alert_uncertain, judge, judge_fallback, judge_precision)
            out = handle(inp, settings, options, limit, catch_up=catch_up is not None)
        finally:
            limit.disarm()
        if out is not None:
            real_stdout.write(json.dumps(out, ensure_ascii=True))  # ASCII: safe whatever stdout's encoding and the text
            real_stdout.flush()
    except BudgetExceeded:
        started = spawn_catch_up(get_settings(), raw, session_key(inp.session_id), sys.argv[1:]) if inp else False
        _log_line(
            inp.session_id if inp else None,
            inp.event if inp else None,
            f"ran out of its {budget or get_settings().hook_budget:g} s budget; nothing committed"
            + ("; a detached catch-up finishes the reading" if started else "; a catch-up is already running"),
        )
    except LockTimeout:
        _log_line(
            inp.session_id if inp else None,
            inp.event if inp else None,
            "another hook call (or catch-up) held this session until the budget ran out; "
            "its records are read next time",
        )
    except (HookInputError, TranscriptMissing) as exc:
        _log_line(inp.session_id if inp else None, inp.event if inp else None, str(exc))
    except Exception as exc:  # noqa: BLE001 - one line, exit 0
        where = ""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" at {Path(tb.tb_frame.f_code.co_filename).name}:{tb.tb_lineno}"
        _log_line(inp.session_id if inp else None, inp.event if inp else None, f"{type(exc).__name__}: {exc}{where}")
    finally:
        sys.stdout = real_stdout


# --------------------------------------------------------------------------- hooks


def _project_dir(flag: str, value: str) -> Path:
    """``value`` as a directory, or fail (exit 2): never create a project that is not there."""
    path = Path(value).expanduser()
    if not path.is_dir():
        why = "it is a file" if path.exists() else "no such directory"
        fail(f"{flag} {value}: {why}; it must be an existing project directory (e.g. {flag} .)")
    return path


def _scope_path(user: bool, project: str | None, local: str | None, settings_file: str | None) -> tuple[str, Path]:
    chosen = [
        n
        for n, v in (("--user", user), ("--project", project), ("--local", local), ("--settings-file", settings_file))
        if v
    ]
    if len(chosen) > 1:
        fail(f"give one of --user, --project, --local, --settings-file (got {', '.join(chosen)})")
    if settings_file:
        return "file", Path(settings_file).expanduser()
    if project:
        return "project", _project_dir("--project", project) / ".claude" / "settings.json"
    if local:
        return "local", _project_dir("--local", local) / ".claude" / "settings.local.json"
    return "user", Path.home() / ".claude" / "settings.json"


_SCOPE_OPTIONS = (
    option(
        "--user", is_flag=True, default=False, help="~/.claude/settings.json: every project of yours [the default]."
    ),
    option(
        "--project",
        type=str,
        default=None,
        flag_value=".",
        is_flag=False,
        help="DIR/.claude/settings.json (shared with the team through git; default DIR: here).",
    ),
    option(
        "--local",
        type=str,
        default=None,
        flag_value=".",
        is_flag=False,
        help="DIR/.claude/settings.local.json (this project, not committed; default DIR: here).",
    ),
    option("--settings-file", type=str, default=None, help="Any other settings file."),
)


@click.group(name="hooks", cls=Group, context_settings={"help_option_names": ["-h", "--help"]})
def hooks() -> None:
    """Install, remove or inspect the Claude Code hooks (docs/HOOK.md)."""


@hooks.command(name="install")
@_SCOPE_OPTIONS[0]
@_SCOPE_OPTIONS[1]
@_SCOPE_OPTIONS[2]
@_SCOPE_OPTIONS[3]
@option("--match-threshold", type=float, default=None, help="Passed to the hook (as `ingest claude-code`).")
@option("--alert-uncertain", is_flag=True, default=False, help="Passed to the hook (as `ingest claude-code`).")
@option("--judge-precision", type=click.Choice(["precise", "balanced", "recall"]), default=None,
        help="Passed to the hook (as `ingest claude-code --judge-precision`) [CG_JUDGE_PRECISION, else precise].")
@option("--judge", type=click.Choice(["rules", "model"]), default="rules",
        help="Passed to the hook (as `ingest claude-code --judge`); model: a 90 s budget and longer timeouts.")
@option("--judge-fallback", type=click.Choice(["none", "rules"]), default="none",
        help="Passed to the hook (as `ingest claude-code --judge-fallback`).")
@option("--command", "hook_command", type=str, default=None,
        help="The hook's command line [this installation's checkpoint-guard, by absolute path].")
@option("--dry-run", is_flag=True, default=False, help="Print what would change; write nothing.")
def install_cmd(user: bool, project: str | None, local: str | None, settings_file: str | None,
                match_threshold: float | None, alert_uncertain: bool, judge_precision: str | None, judge: str,
                judge_fallback: str, hook_command: str | None, dry_run: bool) -> None:
    """Merge the checkpoint-guard hooks into a Claude Code settings file.

    Adds PreCompact, SessionStart (compact), Stop (async) and SessionEnd entries that run
    `checkpoint-guard hook claude-code`, next to any hooks already there (never changing
    them); running it twice changes nothing. `hooks uninstall` undoes it byte for byte.
    """
    from stream.hook.install import MODEL_BUDGET, SettingsError, default_command, install, plan_install
    from stream.hook.install import _load as load_settings
    from stream.settings import get_settings

    scope, path = _scope_path(user, project, local, settings_file)
    if judge_fallback != "none" and judge != "model":
        fail("--judge-fallback needs --judge model")
    extra = " ".join(([f"--match-threshold {match_threshold:g}"] if match_threshold is not None else [])
                     + (["--alert-uncertain"] if alert_uncertain else [])
                     + ([f"--judge-precision {judge_precision}"] if judge_precision else [])
                     + ([f"--judge model --budget {MODEL_BUDGET:g}"] if judge == "model" else [])
                     + ([f"--judge-fallback {judge_fallback}"] if judge_fallback != "none" else []))
    cmd = hook_command or default_command(extra)
    slow = MODEL_BUDGET if judge == "model" else None
    try:
        if dry_run:
            _, changes = plan_install(load_settings(path)[1], cmd, slow)
            report_lines = [f"{path} ({scope}): would change" if changes else f"{path} ({scope}): already installed"]
            report_lines += [f"  {c}" for c in changes]
        else:
            rep = install(path, cmd, get_settings().hook_dir / "installs", slow)
            report_lines = [f"{path} ({scope}): {rep.note}"] + [f"  {c}" for c in rep.changes]
    except (SettingsError, OSError) as exc:
        fail(str(exc), code=1)
    print("\n".join(report_lines))
    if not dry_run:
        _warm_language_model()
        print(
            "Claude Code reads the change itself (running sessions too). Alerts: `checkpoint-guard tail`; "
            "state: `checkpoint-guard hooks status`; undo: `checkpoint-guard hooks uninstall"
            + (
                ""
                if scope == "user"
                else f" --{scope} {path.parent.parent}"
                if scope != "file"
                else f" --settings-file {path}"
            )
            + "`."
        )
    raise SystemExit(0)


def _warm_language_model() -> None:
    """Build the rules judge's cached language model now, so that no hook call after a compaction has to."""
    try:
        from stream.adapters.compaction.cues import _identifier

        _identifier()
    except Exception:  # noqa: BLE001 - only a warm-up: the first call that needs the model builds it
        pass


@hooks.command(name="uninstall")
@_SCOPE_OPTIONS[0]
@_SCOPE_OPTIONS[1]
@_SCOPE_OPTIONS[2]
@_SCOPE_OPTIONS[3]
def uninstall_cmd(user: bool, project: str | None, local: str | None, settings_file: str | None) -> None:
    """Remove the checkpoint-guard hooks from a Claude Code settings file.

    If nobody changed the file since `hooks install`, it gets its bytes from before the
    install back (or is deleted, if install created it); otherwise only our entries are
    removed. The spool and cursors stay in CG_HOOK_DIR (drain: `ingest --spool`).
    """
    from stream.hook.install import SettingsError, uninstall
    from stream.settings import get_settings

    scope, path = _scope_path(user, project, local, settings_file)
    try:
        rep = uninstall(path, get_settings().hook_dir / "installs")
    except (SettingsError, OSError) as exc:
        fail(str(exc), code=1)
    print(f"{path} ({scope}): {rep.note}")
    for c in rep.changes:
        print(f"  {c}")
    raise SystemExit(0)


@hooks.command(name="status")
@option("--project", type=str, default=".", help="The project whose .claude/ settings are shown [here].")
def status_cmd(project: str) -> None:
    """Where the hooks are installed, the sessions the hook follows, what waits in the spool."""
    from stream.hook.status import status_lines

    print("\n".join(status_lines(Path(project).expanduser())))
    raise SystemExit(0)

