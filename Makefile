# Telha clarify — the two commands that matter: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
HOST ?= 127.0.0.1
PORT ?= 8000
# pytest-xdist processes for `make test` (0: one process, no xdist).
TEST_WORKERS ?= 2
# The documentation site: docs/ and mkdocs.yml -> var/site/, offline; any warning (a broken
# link or anchor, a page missing from the nav) fails the build. Not --quiet: mkdocs 1.6
# then drops the warnings before strict mode counts them, and builds anyway.
DOCS_BUILD := $(BIN)/mkdocs build --strict -d var/site

.PHONY: run test screenshots fuzz lint docs bench venv demo clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/pip install --disable-pip-version-check -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

## The product on embedded SQLite with the demo workspace (Ctrl-C stops everything).
## var/dev.env (written once: DEBUG=1 and a generated SECRET_KEY) is read by every process
## started in this folder, so the stack and a second shell's `.venv/bin/telha` agree.
run: venv
	mkdir -p var/static
	$(BIN)/python -m telha.devenv var/dev.env
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_setup
	$(BIN)/python manage.py serve_all --host $(HOST) --port $(PORT)

## The whole test suite (honours DATABASE_URL; .ci/run points it at PostgreSQL), spread
## over TEST_WORKERS processes, each with its own test database. A test file runs whole in
## one process (--dist loadfile), so a module's expensive fixture (a gunicorn stack, a
## project copy in its own virtualenv) is built once. CHECK_TREE_CLEAN=1: the run fails when
## it wrote into the git tree (tests/tree_guard.py).
test: venv
	CHECK_TREE_CLEAN=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

## The documentation's screenshots (docs/screenshots/), taken again by the browser tests
## that take them: the README's walkthrough and the steward's override journey. `make test`
## runs the same tests but keeps their screenshots in a temporary folder (it never writes
## into the tree).
SCREENSHOT_TESTS := tests/test_walkthrough.py tests/steward/test_browser.py
screenshots: venv
	SCREENSHOTS_DIR=docs/screenshots $(BIN)/python -m pytest -n 0 -p no:cacheprovider $(SCREENSHOT_TESTS) $(PYTEST_ARGS)

## The fuzz tests, deeper: tests/test_fuzz_api.py (schemathesis: 500 examples per operation
## and kind of caller) and tests/test_fuzz_surfaces.py (SCIM, uploads, hooks, unknown paths:
## 500 per test); `make test` runs 25, derandomized. FUZZ_EXAMPLES=N to choose.
fuzz: venv
	FUZZ_EXAMPLES=$${FUZZ_EXAMPLES:-500} $(BIN)/python -m pytest tests/test_fuzz_api.py tests/test_fuzz_surfaces.py -p no:cacheprovider $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(DOCS_BUILD)

## The documentation site into var/site/ (open var/site/index.html; nothing is fetched).
docs: venv
	$(DOCS_BUILD)

## Benchmarks (not part of `make test`); needs PostgreSQL at 127.0.0.1:5432.
bench: venv
	$(BIN)/pip install --disable-pip-version-check -q -r bench/requirements-bench.txt
	$(BIN)/python bench/run_all.py

## Mixed load (submissions, reads, answers, signed Slack taps) on gunicorn + PostgreSQL,
## 32 clients, closed loop then paced (0.5-1.5 s think time); prints p50/p99 per operation
## for each phase and writes var/load-results.json.
load: venv
	$(BIN)/python bench/load.py

clean:
	rm -rf $(VENV) var/*.sqlite3*
