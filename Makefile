# Two entry points: `make demo` and `make test`. Both build .venv inside the repo.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DATA_DIR ?= $(if $(UQX_DATA_DIR),$(UQX_DATA_DIR),$(abspath $(wildcard ../shared/datasets)))

.PHONY: demo test test-slow test-install test-cluster bench lint docs clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,cluster]"
	touch $(STAMP)

demo: $(STAMP)
	UQX_DATA_DIR=$(DATA_DIR) $(BIN)/uqx demo

test: $(STAMP)
	UQX_DATA_DIR=$(DATA_DIR) $(BIN)/python -m pytest -q

test-slow: $(STAMP)
	UQX_DATA_DIR=$(DATA_DIR) UQX_SLOW=1 $(BIN)/python -m pytest -q -m slow

# the built sdist and wheel, installed in a fresh virtualenv outside the repo (~40 s)
test-install: $(STAMP)
	UQX_INSTALL_TEST=1 $(BIN)/python -m pytest -q -m install tests/test_install.py

# sweeps on a one-node SLURM cluster brought up here by .ci/slurm.sh (root and apt;
# the tests skip, saying why, where it cannot run)
test-cluster: $(STAMP)
	.ci/test-cluster.sh

bench: $(STAMP)
	UQX_DATA_DIR=$(DATA_DIR) $(BIN)/python benchmarks/bench_kernels.py
	$(BIN)/python benchmarks/bench_generators.py
	UQX_DATA_DIR=$(DATA_DIR) $(BIN)/python benchmarks/bench_bootstrap.py
	UQX_DATA_DIR=$(DATA_DIR) $(BIN)/python benchmarks/bench_large.py
	$(BIN)/python benchmarks/bench_gaussian_sums.py 200000 1000000 --copies 10000
	UQX_DATA_DIR=$(DATA_DIR) $(BIN)/python benchmarks/bench_sweeps.py
	$(BIN)/python benchmarks/bench_outofcore.py   # writes and deletes a 1.6 GB NetCDF
	$(BIN)/python benchmarks/bench_validate_disk.py   # the same size, uqx validate FILE.nc

DOCS_STAMP := $(VENV)/.docs-installed

$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e ".[test,docs]"
	touch $(DOCS_STAMP)

# HTML in docs/_build/html; warnings are errors. Notebooks run once per change (cached).
docs: $(DOCS_STAMP)
	UQX_DATA_DIR=$(DATA_DIR) MPLBACKEND=Agg $(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

lint: $(STAMP)
	$(BIN)/ruff check uqx tests benchmarks
	$(BIN)/lint-imports   # layer contracts in pyproject.toml [tool.importlinter]

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache docs/_build docs/notebooks/*.ipynb
