# Two entry points: `make demo` and `make test`. Both build .venv inside the repo.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the optional extras that tests need besides [test]: docs (sphinx, for tests/test_docs.py
# and make docs) and parquet (pyarrow, for the Parquet inputs); defined before the rules
# that name it (make expands prerequisites as it reads them)
EXTRAS_STAMP := $(VENV)/.extras-installed
DATA_DIR ?= $(if $(UQX_DATA_DIR),$(UQX_DATA_DIR),$(abspath $(wildcard ../shared/datasets)))

.PHONY: demo test test-slow test-install test-cluster bench lint docs clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[test,cluster]"
	touch $(STAMP)

# rebuilt with $(STAMP) (a new venv or pyproject.toml), so the extras never go missing
$(EXTRAS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/pip install --quiet -e ".[test,cluster,docs,parquet]"
	touch $(EXTRAS_STAMP)

demo: $(STAMP)
	UQX_DATA_DIR=$(DATA_DIR) $(BIN)/uqx demo

# UQX_REQUIRE_EXTRAS=1: the tests of the extras fail instead of skipping when one is missing
test: $(EXTRAS_STAMP)
	UQX_DATA_DIR=$(DATA_DIR) UQX_REQUIRE_EXTRAS=1 $(BIN)/python -m pytest -q

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

# HTML in docs/_build/html; warnings are errors. Notebooks run once per change (cached).
docs: $(EXTRAS_STAMP)
	UQX_DATA_DIR=$(DATA_DIR) MPLBACKEND=Agg $(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

lint: $(STAMP)
	$(BIN)/ruff check uqx tests benchmarks
	$(BIN)/lint-imports   # layer contracts in pyproject.toml [tool.importlinter]

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache docs/_build docs/notebooks/*.ipynb
