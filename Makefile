# checkpoint-guard — the two front-door commands (see README.md):
#   make demo   run the main job end to end on the real trajectories (installs, starts Kafka, ...)
#   make test   run every test (installs, starts its own Kafka, stops it)
# Everything is installed into ./.venv from PyPI; Kafka's jars come from Maven Central
# into the user cache (~/.cache/checkpoint-guard/kafka). `make tools` adds the deploy
# checkers the tests run: promtool (Debian's `prometheus` package) and helm (built from
# the Go module proxy into .cache/tools; ~3 min the first time, seconds from Go's cache).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
TOOLS  := .cache/tools
HELM_VERSION ?= v4.3.1
HELM   := $(TOOLS)/helm-$(HELM_VERSION)/helm

.PHONY: install tools test test-langgraph unit integration demo example bench hook-check clean

$(STAMP): pyproject.toml
	@command -v java >/dev/null || { echo "checkpoint-guard: error: java not found (install Java 17+)" >&2; exit 1; }
	@command -v mvn  >/dev/null || { echo "checkpoint-guard: error: mvn not found (install Maven 3.6+)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,langgraph]'
	@touch $@

install: $(STAMP)

$(HELM):
	@command -v go >/dev/null || { echo "checkpoint-guard: error: go not found (needed to build helm $(HELM_VERSION))" >&2; exit 1; }
	GOBIN=$(abspath $(dir $(HELM))) GOFLAGS=-mod=mod go install helm.sh/helm/v4/cmd/helm@$(HELM_VERSION)

# promtool from Debian's prometheus package (the tests need only its promtool).
tools: $(HELM)
	@command -v promtool >/dev/null || { \
	  command -v apt-get >/dev/null || { echo "checkpoint-guard: error: promtool not found; install Prometheus's promtool (Debian: apt-get install prometheus)" >&2; exit 1; }; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null; }
	@promtool --version 2>&1 | head -1
	@$(HELM) version --short

test: install tools
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
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	@touch $@

bench: install $(VENV)/.bench-stamp
	$(BIN)/python bench/run_all.py $(ARGS)

# make hook-check: every DEV Claude Code transcript (../shared/real-logs) played forward through the hook,
# checked against the batch path (live = batch, the text handed back = the engine's dropped set); docs/HOOK.md.
hook-check: install
	$(BIN)/python bench/hook_check.py $(ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis $(TOOLS)
