#!/usr/bin/env bash
# Profile the worker under the real-input load: one `python -m stream worker` run draining
# the real stream (the shipped trajectories through the compaction simulator, as `make demo`
# produces them) on a fresh local Kafka, with py-spy attached for SECONDS from its first
# applied event. Writes, under OUTDIR (default var/bench/profile):
#   worker.folded   py-spy's raw folded stacks (open in https://www.speedscope.app, or feed
#                   to flamegraph.pl / inferno-flamegraph)
#   worker.svg      an SVG flame graph (bench/flamegraph.py, no extra tool needed)
#   report.md       where the CPU time goes by component, top self and inclusive frames
#
#   bench/profile_worker.sh [SECONDS] [OUTDIR] [more bench_worker.py options...]
#   bench/profile_worker.sh 30 var/bench/profile --worker-loglevel info
#   bench/profile_worker.sh 30 var/bench/profile --bootstrap 127.0.0.1:9092   # a running broker
#
# Needs py-spy (pip install -e '.[bench]'; `make bench` installs it) and permission to
# ptrace the worker (root, or kernel.yama.ptrace_scope=0; in Docker: --cap-add SYS_PTRACE).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
SECONDS_=${1:-30}
OUT=${2:-var/bench/profile}
shift $(( $# > 2 ? 2 : $# ))
mkdir -p "$OUT"
"$PY" -m bench.bench_worker --phases '' --profile "$SECONDS_" --profile-stream real \
    --keep-profile "$OUT/worker.folded" --flamegraph "$OUT/worker.svg" \
    --title "Worker profile (py-spy, real stream)" --out "$OUT/report.md" "$@" >/dev/null
echo "profile: $OUT/report.md, $OUT/worker.svg, $OUT/worker.folded"
