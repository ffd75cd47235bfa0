# Two commands for a fresh machine:  `make demo` (main job)  and  `make test` (test suite).
# Both create .venv and install robustce into it on first use.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
DEMO_OUT ?= robustce-demo

.PHONY: install demo test test-slow test-all test-nodata data lint bench mutants serve docs docs-nodata

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	# torch pinned to the local CPU build first, so the package's range installs nothing more
	$(PY) -m pip install --quiet "torch==2.13.0"
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

DOCS_STAMP := $(VENV)/.docs-stamp
$(DOCS_STAMP): pyproject.toml $(STAMP)
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $(DOCS_STAMP)

# The documentation site into site/: API reference from the docstrings, tutorials executed
# (a failing tutorial, a broken link or an undocumented public name fails the build); offline.
docs: $(DOCS_STAMP)
	MPLBACKEND=Agg $(VENV)/bin/mkdocs build --strict

# The site as a fresh clone without data builds it offline: ROBUSTCE_DATA and the download cache
# at empty folders, no download tried. Strict still; the pages that need benchmark data show a
# note naming it instead of their output (docs/hooks/tutorial_data.py). Built into a temporary
# folder (site/ is left alone); lists the pages that carry the note.
docs-nodata: $(DOCS_STAMP)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && mkdir "$$tmp/data" "$$tmp/cache" && \
	ROBUSTCE_DATA="$$tmp/data" ROBUSTCE_CACHE="$$tmp/cache" ROBUSTCE_DOCS_NO_DOWNLOAD=1 MPLBACKEND=Agg \
	$(VENV)/bin/mkdocs build --strict --site-dir "$$tmp/site" && \
	echo "pages not run for want of data:" && grep -rl --include=*.html "Not run in this build" "$$tmp/site"

demo: $(STAMP)
	$(VENV)/bin/robustce demo --out $(DEMO_OUT)

# The recourse service on http://127.0.0.1:8000/ (the demo model; see docs/serve.md).
serve: $(STAMP)
	$(VENV)/bin/robustce serve

test: $(STAMP)
	$(PY) -m pytest -q

# The sweeps `make test` leaves out (marked `slow`: more seeds, more networks, the z3 MLP
# variants, the full demo); `.ci/run` runs them after `make test`.
test-slow: $(STAMP)
	$(PY) -m pytest -q -m slow

test-all: $(STAMP)
	$(PY) -m pytest -q -m "slow or not slow"

# A fresh clone's view: the modules that read benchmark data, with ROBUSTCE_DATA at an empty
# folder; their data tests must skip (naming the path), never error.
test-nodata: $(STAMP)
	@empty=$$(mktemp -d) && trap 'rm -rf "$$empty"' EXIT && \
	ROBUSTCE_DATA="$$empty" $(PY) -m pytest -q -x -rfE -p no:cacheprovider $$($(PY) tools/data_tests.py)

# Fetch (into the cache) and verify every benchmark dataset; one line per dataset.
data: $(STAMP)
	@$(PY) tools/fetch_data.py

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks tools

bench: $(STAMP)
	$(PY) benchmarks/run_all.py

mutants: $(STAMP)
	$(PY) tools/mutants.py
