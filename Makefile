# cmem: `make run` starts the worker on the embedded default; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Two sets: `make run` needs only what the app imports; tests and linters add the dev extra.
RUNTIME_STAMP := $(VENV)/.runtime-stamp
DEV_STAMP := $(VENV)/.dev-stamp

.PHONY: setup runtime run test lint module-map bench dist clean

# hatchling's editable install is a plain path .pth: every hook process starts without an
# import hook. pip itself is not upgraded: the venv's own pip builds PEP 660 editables.
$(RUNTIME_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e .
	@touch $(RUNTIME_STAMP)

$(DEV_STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -e '.[dev]'
	@touch $(DEV_STAMP) $(RUNTIME_STAMP)

runtime: $(RUNTIME_STAMP)
setup: $(DEV_STAMP)

# When a worker already runs, `cmem serve` says where and exits 0.
run: runtime
	$(VENV)/bin/cmem migrate -v 0
	$(VENV)/bin/cmem manage ensure_admin
	$(VENV)/bin/cmem serve --no-migrate

# Team mode (issue 9): the backend-sensitive suites run a second time on PostgreSQL + Redis.
TEAM_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/cmem
TEAM_QUEUE_URL ?= redis://127.0.0.1:6379/0
TEAM_TESTS = $(wildcard tests/memory/test_search.py tests/memory/test_gate.py tests/memory/test_capture.py tests/memory/test_tasks.py tests/test_smoke.py tests/smoke) tests/team

test: setup
	$(PY) -m pytest --ignore=tests/team $(PYTEST_ARGS)
	CMEM_TEST_DATABASE_URL=$(TEAM_DATABASE_URL) CMEM_TEST_QUEUE_URL=$(TEAM_QUEUE_URL) \
		$(PY) -m pytest $(TEAM_TESTS) $(PYTEST_ARGS)

# What CI runs before the tests (.ci/run): style, formatting, the import contracts
# ([tool.importlinter] in pyproject.toml) and types.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy cmem_site memory deliverables

# The wheel and sdist a user installs (`pipx install dist/cmem-*.whl`).
dist: setup
	$(PY) -m build --outdir dist .

# Rewrite the README's module map from the tree (tests/test_module_map.py checks it).
module-map: setup
	$(PY) -m tests.support.module_map --write README.md

bench: setup
	$(VENV)/bin/cmem bench all

clean:
	rm -rf $(VENV) build dist *.egg-info
