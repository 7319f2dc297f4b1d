# checkpoint-guard — the two front-door commands (see README.md):
#   make demo   run the main job end to end on the real trajectories (installs, starts Kafka, ...)
#   make test   run every test (installs, starts its own Kafka, stops it)
# Everything is installed into ./.venv from PyPI; Kafka's jars come from Maven Central
# into ./.cache/kafka (both git-ignored).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp

.PHONY: install test test-langgraph unit integration demo example bench clean

$(STAMP): pyproject.toml
	@command -v java >/dev/null || { echo "checkpoint-guard: error: java not found (install Java 17+)" >&2; exit 1; }
	@command -v mvn  >/dev/null || { echo "checkpoint-guard: error: mvn not found (install Maven 3.6+)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,langgraph]'
	@touch $@

install: $(STAMP)

test: install
	$(BIN)/python -m pytest

test-langgraph: install
	$(BIN)/python -m pytest tests/langgraph

unit: install
	$(BIN)/python -m pytest tests/unit

integration: install
	$(BIN)/python -m pytest tests/integration

demo: install
	$(BIN)/python -m stream demo $(ARGS)

# make example: a fresh broker, topics and worker, then examples/pipeline.py (README
# "Emit events from your own pipeline"); everything under var/example/, stopped at the end.
example: install
	$(BIN)/python examples/run_example.py

# make bench: every benchmark part, full size (~50 min; starts and stops its own Kafka),
# writes docs/BENCHMARKS.md. `make bench ARGS=--quick` (~6 min) writes var/bench/BENCHMARKS.quick.md;
# ARGS="--parts 1,6" picks parts. See bench/README.md.
$(VENV)/.bench-stamp: $(STAMP) pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test,bench]'
	@touch $@

bench: install $(VENV)/.bench-stamp
	$(BIN)/python bench/run_all.py $(ARGS)

clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
