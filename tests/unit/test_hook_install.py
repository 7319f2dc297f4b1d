"""``hooks install|uninstall|status`` on real files in a fresh home and project, and the plugin's shape.

Each test runs the CLI in a subprocess with ``HOME`` and ``CG_HOOK_DIR`` of its own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from stream.hook.install import HOOK_EVENTS, hook_entries, is_ours

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PLUGIN = REPO / "plugins" / "claude-code"
#: Hook events Claude Code fires (its hooks reference) that we may register for.
KNOWN_EVENTS = {"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SubagentStop",
                "PreCompact", "PostCompact", "SessionEnd", "Notification"}


def cli(tmp: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CG_")}
    env.update(HOME=str(tmp / "home"), CG_HOOK_DIR=str(tmp / "hook"), XDG_DATA_HOME=str(tmp / "xdg"),
               PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "stream", *args], env=env, cwd=cwd or tmp, capture_output=True,
                          text=True, timeout=120)


def ours(settings: dict) -> dict[str, list[dict]]:
    return {e: [h for g in groups for h in g["hooks"] if is_ours(h)] for e, groups in settings.get("hooks", {}).items()}


OTHERS = {
    "model": "claude-sonnet-4-5",
    "permissions": {"allow": ["Bash(npm test:*)"]},
    "hooks": {
        "PreCompact": [{"hooks": [{"type": "command", "command": "~/bin/save-notes.sh"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
        "PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}],
    },
}


def test_install_on_a_clean_home_writes_working_entries_and_uninstall_removes_the_file(tmp_path):
    (tmp_path / "home").mkdir()
    proc = cli(tmp_path, "hooks", "install")
    assert proc.returncode == 0, proc.stderr
    path = tmp_path / "home" / ".claude" / "settings.json"
    assert f"{path} (user): created" in proc.stdout
    cache = Path(os.environ.get("XDG_CACHE_HOME") or tmp_path / "home" / ".cache") / "checkpoint-guard" / "langid"
    assert list(cache.glob("model-*.bin")), "install builds the judge's language model cache"
    data = json.loads(path.read_text())
    assert set(data) == {"hooks"} and set(data["hooks"]) == {e for e, _, _ in HOOK_EVENTS}
    session_start = data["hooks"]["SessionStart"][0]
    assert session_start["matcher"] == "compact"
    assert data["hooks"]["Stop"][0]["hooks"][0]["async"] is True
    # the command is runnable as written: Claude Code runs it with a shell
    handler = data["hooks"]["PreCompact"][0]["hooks"][0]
    run = subprocess.run(
        handler["command"],
        shell=True,
        input=b"{}",
        capture_output=True,
        timeout=120,
        env={**os.environ, "CG_HOOK_DIR": str(tmp_path / "hook"), "XDG_DATA_HOME": str(tmp_path / "xdg")},
    )
    assert (run.returncode, run.stdout) == (0, b"")
    assert "hook_event_name" in (tmp_path / "hook" / "hook.log").read_text()  # it ran our hook and logged the bad input
    again = cli(tmp_path, "hooks", "install")
    assert (
        "already installed; nothing changed" in again.stdout and path.read_text() == json.dumps(data, indent=2) + "\n"
    )
    out = cli(tmp_path, "hooks", "uninstall")
    assert "removed (install had created it)" in out.stdout
    assert not path.exists() and not path.parent.exists()


def test_uninstall_restores_a_project_settings_file_byte_for_byte_and_leaves_others_hooks(tmp_path):
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    original = json.dumps(OTHERS, indent=4).encode()  # their formatting: 4 spaces, no final newline
    path.write_bytes(original)
    proc = cli(tmp_path, "hooks", "install", "--project", str(project))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(path.read_text())
    assert data["model"] == OTHERS["model"] and data["permissions"] == OTHERS["permissions"]
    for event, groups in OTHERS["hooks"].items():
        assert data["hooks"][event][: len(groups)] == groups  # theirs first, untouched
    assert {e: len(h) for e, h in ours(data).items() if h} == {e: 1 for e, _, _ in HOOK_EVENTS}
    assert path.read_text().startswith('{\n    "model"')  # their indentation kept
    assert cli(tmp_path, "hooks", "install", "--project", str(project)).stdout.count("nothing changed") == 1
    out = cli(tmp_path, "hooks", "uninstall", "--project", str(project))
    assert "restored byte for byte" in out.stdout
    assert path.read_bytes() == original


def test_uninstall_after_someone_else_edited_the_file_removes_only_ours(tmp_path):
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.local.json"
    path.write_text(json.dumps(OTHERS, indent=2) + "\n")
    assert cli(tmp_path, "hooks", "install", "--local", str(project)).returncode == 0
    data = json.loads(path.read_text())
    data["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "notify-send done"})  # theirs, in our group
    data["env"] = {"FOO": "1"}
    path.write_text(json.dumps(data, indent=2) + "\n")
    out = cli(tmp_path, "hooks", "uninstall", "--local", str(project))
    assert "removed our hooks only" in out.stdout
    left = json.loads(path.read_text())
    assert not any(ours(left).values())
    assert left["env"] == {"FOO": "1"} and left["hooks"]["PreCompact"] == OTHERS["hooks"]["PreCompact"]
    assert left["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
    assert "SessionEnd" not in left["hooks"]


def test_an_existing_older_entry_of_ours_is_updated_in_place(tmp_path):
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    old = {"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "checkpoint-guard hook claude-code"}]}]}}
    path.write_text(json.dumps(old))
    proc = cli(tmp_path, "hooks", "install", "--project", str(project), "--command", "cg-new hook claude-code")
    assert "~ PreCompact" in proc.stdout  # updated, not added twice
    data = json.loads(path.read_text())
    assert len(data["hooks"]["PreCompact"]) == 1
    assert data["hooks"]["PreCompact"][0]["hooks"][0]["command"] == "cg-new hook claude-code"


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"hooks": []}'])
def test_a_settings_file_we_cannot_read_is_one_line_exit_1_and_left_as_it_is(tmp_path, content):
    project = tmp_path / "proj"
    (project / ".claude").mkdir(parents=True)
    path = project / ".claude" / "settings.json"
    path.write_bytes(content)
    proc = cli(tmp_path, "hooks", "install", "--project", str(project))
    assert (
        proc.returncode == 1
        and proc.stderr.startswith("checkpoint-guard: error: ")
        and len(proc.stderr.splitlines()) == 1
    )
    assert path.read_bytes() == content


def test_dry_run_writes_nothing_and_status_shows_where_the_hooks_are(tmp_path):
    (tmp_path / "home").mkdir()
    proc = cli(tmp_path, "hooks", "install", "--dry-run")
    assert "would change" in proc.stdout and not (tmp_path / "home" / ".claude").exists()
    assert cli(tmp_path, "hooks", "install").returncode == 0
    status = cli(tmp_path, "hooks", "status", "--project", str(tmp_path))
    assert status.returncode == 0
    assert "user" in status.stdout and ": installed: PreCompact, SessionStart, Stop, SessionEnd" in status.stdout
    assert "project  " in status.stdout and "sessions followed: 0" in status.stdout


def test_two_scope_options_at_once_are_a_usage_error(tmp_path):
    proc = cli(tmp_path, "hooks", "install", "--user", "--project", ".")
    assert proc.returncode == 2 and "give one of" in proc.stderr


# --------------------------------------------------------------------------- the plugin


def test_the_plugin_ships_the_same_hooks_in_claude_codes_plugin_layout():
    manifest = json.loads((PLUGIN / ".claude-plugin" / "plugin.json").read_text())
    assert manifest["name"] == "checkpoint-guard" and manifest["name"].islower() and " " not in manifest["name"]
    from stream import __version__

    assert manifest["version"] == __version__
    hooks = json.loads((PLUGIN / "hooks" / "hooks.json").read_text())
    assert hooks["hooks"] == hook_entries('"${CLAUDE_PLUGIN_ROOT}/scripts/hook.sh"')
    assert set(hooks["hooks"]) <= KNOWN_EVENTS
    for groups in hooks["hooks"].values():
        for g in groups:
            assert set(g) <= {"matcher", "hooks"} and all(h["type"] == "command" for h in g["hooks"])
    market = json.loads((REPO / ".claude-plugin" / "marketplace.json").read_text())
    entry = next(p for p in market["plugins"] if p["name"] == manifest["name"])
    assert (REPO / entry["source"]).resolve() == PLUGIN.resolve() and market["owner"]["name"]


def test_the_plugin_script_runs_the_hook_from_path_and_says_so_when_it_is_missing(tmp_path):
    script = PLUGIN / "scripts" / "hook.sh"
    assert os.access(script, os.X_OK)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "checkpoint-guard"
    fake.write_text('#!/bin/sh\necho "args: $*"; cat\n')
    fake.chmod(0o755)
    sh = shutil.which("sh")
    proc = subprocess.run(
        [sh, str(script)], input=b'{"x": 1}', capture_output=True, env={"PATH": f"{bindir}:/usr/bin:/bin"}
    )
    assert proc.returncode == 0 and proc.stdout == b'args: hook claude-code\n{"x": 1}'
    proc = subprocess.run([sh, str(script)], input=b"{}", capture_output=True, env={"PATH": str(tmp_path / "empty")})
    assert proc.returncode == 1 and b"not on PATH" in proc.stderr  # never 2: that would block a compaction
