# cmem: `make run` starts the worker on the embedded default; `make test` runs the suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test lint bench clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# compat mode: a plain path entry, so every hook process starts without an import hook.
	$(PY) -m pip install -q -e '.[dev]' --config-settings editable_mode=compat
	@touch $(STAMP)

setup: $(STAMP)

run: setup
	$(VENV)/bin/cmem migrate --noinput -v 0
	$(VENV)/bin/cmem ensure_admin
	$(VENV)/bin/cmem serve

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy cmem_site memory deliverables

bench: setup
	$(VENV)/bin/cmem bench all

clean:
	rm -rf $(VENV) build *.egg-info
