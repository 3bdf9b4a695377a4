# Two set-up commands for a fresh machine: `make demo` and `make test`.
# Both create or refresh .venv/ with the package installed editable.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# On the CPU machines this takes a local wheel; elsewhere pip fetches it.
TORCH_SPEC ?= torch==2.13.0
DEMO_DIR ?= build/demo-registry

.PHONY: venv demo test lint typecheck layers clean

$(VENV)/.stamp: pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check "$(TORCH_SPEC)" || \
		$(PY) -m pip install -q --disable-pip-version-check "torch>=2.10"
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev,all]'
	touch $@

venv: $(VENV)/.stamp

demo: venv
	$(VENV)/bin/rwkv-registry demo $(DEMO_DIR) --force --smoke

# pytest runs three workers on CI's two cores: a sixth of the suite's worker time is waiting (timeouts, the Hub
# look-alike's slow link, the TUI's pauses), which a third worker fills (bench/suite_time.py: 482 s against 523 s).
test: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(MAKE) --no-print-directory layers  # runs typecheck first: both read its tree of links
	$(PY) -m pytest -q -n 3 --dist loadfile

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy cannot follow the editable install's package-dir mapping: it checks a tree of links
# (build/typecheck/rwkv_registry) and its messages name the files of this repository. The scripts
# of bench/ (top-level modules: they import each other, and the support modules of tests/support/ and tests/malicious/,
# by name) are checked in the same run, against that tree, through links to bench/ and tests/; so are the support
# modules that hold code of their own to check (the differential generator and oracle, the crash and concurrency
# harnesses).
TYPECHECK_TREE := build/typecheck
BENCH_MODULES := $(patsubst bench/%.py,-m %,$(wildcard bench/*.py)) -m diffgen -m diffcheck -m crash_harness -m concurrency_harness
typecheck: venv
	rm -rf $(TYPECHECK_TREE)/rwkv_registry $(TYPECHECK_TREE)/bench $(TYPECHECK_TREE)/tests
	mkdir -p $(TYPECHECK_TREE)/rwkv_registry
	ln -s $(CURDIR)/registry/* $(TYPECHECK_TREE)/rwkv_registry/
	for d in schemas model kernels tui; do ln -s $(CURDIR)/$$d $(TYPECHECK_TREE)/rwkv_registry/$$d; done
	ln -s $(CURDIR)/bench $(TYPECHECK_TREE)/bench
	ln -s $(CURDIR)/tests $(TYPECHECK_TREE)/tests
	cd $(TYPECHECK_TREE) && MYPYPATH=bench:tests/support:tests:tests/malicious $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml \
		--cache-dir $(CURDIR)/build/mypy-cache --follow-imports=silent -p rwkv_registry $(BENCH_MODULES) > mypy.out; rc=$$?; \
		sed -E -e 's#^rwkv_registry/(schemas|model|kernels|tui)/#\1/#' -e 's#^rwkv_registry/#registry/#' mypy.out; \
		exit $$rc

# The layers of docs/architecture.md ([tool.importlinter] in pyproject.toml), on the tree of links typecheck builds.
layers: typecheck
	cd $(TYPECHECK_TREE) && PYTHONPATH=$(CURDIR)/$(TYPECHECK_TREE) $(CURDIR)/$(VENV)/bin/lint-imports \
		--config $(CURDIR)/pyproject.toml --no-cache

clean:
	rm -rf $(VENV) build .pytest_cache
