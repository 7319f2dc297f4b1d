# checkpoint-guard — the two front-door commands (see README.md):
#   make demo   run the main job end to end on the real trajectories (installs, starts Kafka, ...)
#   make test   run every test (installs, starts its own Kafka, stops it)
# Everything is installed into ./.venv from PyPI; Kafka's jars come from Maven Central
# into the user cache (~/.cache/checkpoint-guard/kafka). `make tools` adds the deploy
# checkers the tests run: promtool and amtool (Debian's `prometheus` and
# `prometheus-alertmanager` packages) and helm, built from the Go module proxy into the user
# cache (~/.cache/checkpoint-guard/tools), so every clone on the machine reuses it. Measured
# here (2 cores shared, load 6-9): empty Go caches 12 min 47 s (5.7 CPU-minutes; 2 min 58 s
# when the machine was quieter), warm Go caches 59 s, helm already built 0.2 s (README "Tests").

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# setuptools' editable-install banner ("Please be careful with folders ...") is advice, not a problem: not shown
PIP_QUIET := PYTHONWARNINGS='ignore:Editable installation'
STAMP  := $(VENV)/.installed-stamp
TOOLS  ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/checkpoint-guard/tools
HELM_VERSION ?= v4.3.1
HELM   := $(TOOLS)/helm-$(HELM_VERSION)/helm

.PHONY: install native tools lint test test-langgraph unit integration demo example bench hook-check clean

$(STAMP): pyproject.toml
	@command -v java >/dev/null || { echo "checkpoint-guard: error: java not found (install Java 17+)" >&2; exit 1; }
	@command -v mvn  >/dev/null || { echo "checkpoint-guard: error: mvn not found (install Maven 3.6+)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(PIP_QUIET) $(BIN)/python -m pip install --quiet -e '.[test,langgraph]'
	@touch $@

# The engine and the worker's per-event path compiled with mypyc (README "Compiled hot modules"):
# a no-op while the build matches the sources; without a C compiler everything runs as plain Python.
install: $(STAMP)
	@$(BIN)/python -m stream.devtools.native build || echo "checkpoint-guard: the hot modules stay plain Python (same results, 10-15% more CPU; README \"Compiled hot modules\"); the install goes on"

native: $(STAMP)
	$(BIN)/python -m stream.devtools.native build --force

# Built once per machine (the binary outside the clone; Go's module and build caches too).
$(HELM):
	@command -v go >/dev/null || { echo "checkpoint-guard: error: go not found; install Go 1.24+ (needed to build helm $(HELM_VERSION))" >&2; exit 1; }
	@echo "building helm $(HELM_VERSION) into $(dir $(HELM)) (once per machine)"
	GOBIN=$(abspath $(dir $(HELM))) GOFLAGS=-mod=mod go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

# promtool and amtool from Debian's prometheus and prometheus-alertmanager packages (the
# tests need only these two tools of them).
tools: $(HELM)
	@command -v promtool >/dev/null && command -v amtool >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "checkpoint-guard: error: promtool or amtool not found; install them (Debian: apt-get install prometheus prometheus-alertmanager)" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus prometheus-alertmanager >/dev/null; }
	@promtool --version 2>&1 | head -1
	@amtool --version 2>&1 | head -1
	@$(HELM) version --short

# make lint: ruff (the rule set and why: pyproject.toml [tool.ruff]) and mypy (strict on the domain, the
# wire, the client and the worker; checked everywhere else in stream/). `make test` runs it first.
lint: install
	$(BIN)/ruff check
	$(BIN)/mypy

test: install lint tools
	HELM_BIN=$(abspath $(HELM)) $(BIN)/python -m pytest

test-langgraph: install
	$(BIN)/python -m pytest tests/langgraph

unit: install tools
	HELM_BIN=$(abspath $(HELM)) $(BIN)/python -m pytest tests/unit

integration: install
	$(BIN)/python -m pytest tests/integration

demo: install
	$(BIN)/python -m stream demo $(ARGS)

# make example: a fresh broker, topics and worker, then examples/pipeline.py (README
# "Emit events from your own pipeline"); everything under var/example/, stopped at the end.
example: install
	$(BIN)/python examples/run_example.py

# make bench: every benchmark part, full size (~20 min on 2 cores; starts and stops its own Kafka),
# writes docs/BENCHMARKS.md. `make bench ARGS=--quick` (~4 min) writes var/bench/BENCHMARKS.quick.md;
# ARGS="--parts 1,6" picks parts. See bench/README.md.
$(VENV)/.bench-stamp: $(STAMP) pyproject.toml
	$(PIP_QUIET) $(BIN)/python -m pip install --quiet -e '.[test,bench]'
	@touch $@

bench: install $(VENV)/.bench-stamp
	$(BIN)/python -m bench.run_all $(ARGS)

# make hook-check: every DEV Claude Code transcript (../shared/real-logs) played forward through the hook,
# checked against the batch path (live = batch, the text handed back = the engine's dropped set); docs/HOOK.md.
hook-check: install
	$(BIN)/python -m bench.hook_check $(ARGS)

# The clone's own files; helm stays in the user cache for the next clone
# (`checkpoint-guard clean --cache` deletes that, and everything else in your home).
clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis .cache/tools stream/_native stream/_native.new stream/_native.old stream/_native.log stream/_native.lock
