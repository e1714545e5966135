# cmem: `make run` starts the worker on the embedded default; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Two sets: `make run` needs only what the app imports (plus EXTRAS, e.g. `make run
# EXTRAS=embeddings` for search by meaning); tests and linters add the dev extra.
EXTRAS ?=
comma := ,
RUNTIME_STAMP := $(VENV)/.runtime-stamp$(if $(EXTRAS),-$(subst $(comma),-,$(EXTRAS)))
DEV_STAMP := $(VENV)/.dev-stamp
# uv installs the runtime set into a fresh venv about 3x faster than pip (parallel downloads,
# no byte-compilation: Python writes each .pyc on first import) and seeds no pip into it.
# It is used from PATH, else bootstrapped from PyPI into .tools/uv (one wheel, a few
# seconds), else pip does it all. CMEM_NO_UV=1 forces pip.
UV_HOME := .tools/uv
export UV_PYTHON_DOWNLOADS := never

# $(call venv_install,REQUIREMENT): create $(VENV) if needed, then install REQUIREMENT.
define venv_install
	@set -e; uv=""; \
	if [ "$(CMEM_NO_UV)" != 1 ]; then \
	  uv="$$(command -v uv || true)"; \
	  if [ -z "$$uv" ]; then \
	    [ -x $(UV_HOME)/bin/uv ] || $(PYTHON) -m pip install -q --disable-pip-version-check \
	      --target $(UV_HOME) uv >/dev/null 2>&1 || echo "make: uv unavailable, using pip"; \
	    [ -x $(UV_HOME)/bin/uv ] && uv=$(UV_HOME)/bin/uv || uv=""; \
	  fi; \
	fi; \
	if [ -n "$$uv" ]; then \
	  [ -x $(PY) ] || $$uv venv -q --python "$$(command -v $(PYTHON))" $(VENV); \
	  echo "uv pip install $(1)"; VIRTUAL_ENV=$(VENV) $$uv pip install -q $(1); \
	else \
	  [ -x $(PY) ] || $(PYTHON) -m venv $(VENV); [ -x $(VENV)/bin/pip ] || $(PY) -m ensurepip -q; \
	  echo "pip install $(1)"; $(PY) -m pip install -q $(1); \
	fi
endef

# hatchling's editable install is a plain path .pth: every hook process starts without an
# import hook.
$(RUNTIME_STAMP): pyproject.toml
	$(call venv_install,-e '.$(if $(EXTRAS),[$(EXTRAS)])')
	@touch $(RUNTIME_STAMP)

$(DEV_STAMP): pyproject.toml
	$(call venv_install,-e '.[dev]')
	@touch $(DEV_STAMP) $(RUNTIME_STAMP)

runtime: $(RUNTIME_STAMP)
setup: $(DEV_STAMP)

# The sqlite-vec path of search by meaning (issue 18) needs a Python whose sqlite3 can load
# extensions; many (this machine's pyenv build among them) lack `enable_load_extension`, and
# Debian's /usr/bin/python3 has it. A second venv made from it runs the sqlite-vec tests,
# which fail there (CMEM_SQLITE_VEC_REQUIRED=1) rather than skip when the extension cannot
# load; under $(VENV) the same file tests the fallback to the scan.
EXT_PYTHON ?= /usr/bin/python3
EXT_VENV ?= .venv-ext
EXT_STAMP := $(EXT_VENV)/.dev-stamp
EXT_TESTS = tests/retrieval/test_sqlite_vec.py tests/retrieval/test_semantic_search.py tests/briefing/test_prompt_recall.py
$(EXT_STAMP): VENV := $(EXT_VENV)
$(EXT_STAMP): PYTHON := $(EXT_PYTHON)
$(EXT_STAMP): PY := $(EXT_VENV)/bin/python
$(EXT_STAMP): pyproject.toml
	$(call venv_install,-e '.[dev]')
	@touch $(EXT_STAMP)

test-sqlite-vec:
	@if [ -x $(EXT_PYTHON) ]; then \
	  $(MAKE) --no-print-directory $(EXT_STAMP) && \
	  CMEM_SQLITE_VEC_REQUIRED=1 $(EXT_VENV)/bin/python -m pytest $(EXT_TESTS) $(PYTEST_ARGS); \
	else echo "make: $(EXT_PYTHON) not found, so the sqlite-vec tests did not run (EXT_PYTHON=...)"; fi

# When a worker already runs, `cmem serve` says where and exits 0. Otherwise it migrates,
# creates the local admin login on first run, then starts: one Django start, not three.
run: runtime
	$(VENV)/bin/cmem serve --ensure-admin

# Team mode (issue 9): the backend-sensitive suites run a second time on PostgreSQL + Redis.
TEAM_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/cmem
TEAM_QUEUE_URL ?= redis://127.0.0.1:6379/0
TEAM_TESTS = $(wildcard tests/retrieval/test_search.py tests/briefing/test_gate.py tests/briefing/test_gate_adaptive.py tests/briefing/test_context.py tests/runtime/test_compiled_sql.py tests/capture/test_capture.py tests/compression/test_tasks.py tests/briefing/test_prompt_recall.py tests/briefing/test_curation_briefing.py tests/curation/test_core.py tests/test_smoke.py tests/smoke) tests/team

# Two lanes at once. The agent CLIs' end-to-end tests (-m e2e: the real CLIs, mostly waiting
# on their subprocesses and the fake model servers) then the sqlite-vec pass run beside the
# rest of the suite then the team pass; one lane alone left a core idle for most of CI. Each
# pytest run has its own temporary folder and run mark (tests/testenv.py), so neither
# reaps the other's processes; the side lane's output is kept in a file and printed when
# both lanes are done, and `make test` fails if either does.
E2E_LANE_LOG ?= $(or $(TMPDIR),/tmp)/cmem-test-e2e-lane.log
test: setup
	@rm -f $(E2E_LANE_LOG); \
	$(MAKE) --no-print-directory test-e2e-lane > $(E2E_LANE_LOG) 2>&1 & lane=$$!; \
	$(PY) -m pytest --ignore=tests/team -m "not e2e" $(PYTEST_ARGS); suite=$$?; \
	CMEM_TEST_DATABASE_URL=$(TEAM_DATABASE_URL) CMEM_TEST_QUEUE_URL=$(TEAM_QUEUE_URL) \
		$(PY) -m pytest $(TEAM_TESTS) $(PYTEST_ARGS); team=$$?; \
	wait $$lane; side=$$?; \
	echo "==== the e2e lane (agent CLIs, then sqlite-vec) ===="; cat $(E2E_LANE_LOG); \
	echo "make test: suite exit $$suite, team exit $$team, e2e lane exit $$side"; \
	[ $$suite -eq 0 ] && [ $$team -eq 0 ] && [ $$side -eq 0 ]

# The side lane of `make test`, alone: the agent CLIs' end-to-end tests, then sqlite-vec.
test-e2e-lane: setup
	@$(PY) -m pytest --ignore=tests/team -m e2e $(PYTEST_ARGS); e2e=$$?; \
	$(MAKE) --no-print-directory test-sqlite-vec; vec=$$?; \
	[ $$e2e -eq 0 ] && [ $$vec -eq 0 ]

# The loop to run while editing a service (docs/development-quick-loop.md): the services'
# unit-level tests in-process (no worker, browser, agent CLI, wheel or PostgreSQL), stopping
# at the first failure. About a minute on a 2-core machine; `make test` runs everything.
QUICK_TESTS ?= tests/api tests/briefing tests/capture tests/compression tests/config tests/hooks \
	tests/housekeeping tests/ledger tests/privacy tests/protocol tests/retrieval tests/runtime
QUICK_IGNORE ?=
test-quick: setup
	$(PY) -m pytest $(QUICK_TESTS) $(addprefix --ignore=,$(QUICK_IGNORE)) -x -q -p no:randomly -p no:schemathesis \
		-m "not e2e and not browser and not package and not slow and not team" $(PYTEST_ARGS)

# What CI runs before the tests (.ci/run): style, formatting, spelling ([tool.typos]), the
# import contracts ([tool.importlinter] in pyproject.toml) and types.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/typos
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy cmem_site memory deliverables

# The wheel a user installs (docs/guide/install.md), built in an isolated environment holding
# hatchling alone: uv's when there is one, else pip's. No venv, no dev toolchain.
DIST ?= dist
.PHONY: dist
dist:
	@if command -v uv >/dev/null; then uv build -q --wheel --out-dir $(DIST) .; \
	elif [ -x $(UV_HOME)/bin/uv ]; then $(UV_HOME)/bin/uv build -q --wheel --out-dir $(DIST) .; \
	else $(PYTHON) -m pip wheel --no-deps -q -w $(DIST) .; fi
	@ls $(DIST)/cmemory-*.whl

# Rewrite the module map in docs/architecture.md from the tree (tests/architecture/test_module_map.py checks it).
module-map: setup
	$(PY) -m tests.support.module_map --write docs/architecture.md

# Rewrite the generated reference pages: docs/reference/commands.md from the CLI's parsers,
# http-api.md from the OpenAPI schema, settings.md from the settings registry
# (tests/architecture/test_reference_docs.py and tests/config/test_settings_registry.py fail when one is stale).
reference: setup
	$(PY) -m tests.support.reference_docs --write
	$(PY) -m tests.support.settings_reference --write docs/reference/settings.md --readme README.md

# The documentation site (docs/mkdocs.yml), into build/docs (git-ignored). --strict: a warning
# fails the build, and the config makes a broken link or anchor and a page outside the nav one.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict -f docs/mkdocs.yml -d ../build/docs

# The benchmarks run from a checkout (tests/bench/, never in the wheel): `make bench NAME=recall`
# (ARGS="--quick", "--size N", "--runs N", "--seconds N"); no NAME runs them all.
# `cmem bench hooks` (what a hook costs on this machine) is the one that ships.
NAME ?= all
bench: setup
	$(PY) -m tests.bench $(NAME) $(ARGS)

clean:
	rm -rf $(VENV) $(EXT_VENV) $(UV_HOME) build dist *.egg-info
