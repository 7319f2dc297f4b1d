#!/bin/sh
# checkpoint-guard's Claude Code hook, for the plugin (hooks/hooks.json). Claude Code pipes the
# hook's JSON to stdin; `checkpoint-guard hook claude-code` always exits 0. When checkpoint-guard
# is not installed, say so once per call (exit 1: a non-blocking hook error, never 2).
if command -v checkpoint-guard >/dev/null 2>&1; then
  exec checkpoint-guard hook claude-code "$@"
fi
echo "checkpoint-guard is not on PATH (install it: pipx install checkpoint-guard); the compaction guard is off" >&2
exit 1
