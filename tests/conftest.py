"""Shared fixtures: literature data directory, slow-test switch, hypothesis profiles."""

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# make test draws the same hypothesis examples on every run (a CI result reproduces);
# UQX_HYPOTHESIS=explore draws new ones each run, to look for new counterexamples (each
# one found becomes an @example of its test)
settings.register_profile("repro", derandomize=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("UQX_HYPOTHESIS", "repro"))


def _data_dir():
    env = os.environ.get("UQX_DATA_DIR")
    if env and Path(env).is_dir():
        return Path(env)
    here = Path(__file__).resolve().parents[1] / ".." / "shared" / "datasets"
    return here.resolve() if here.is_dir() else None


def pytest_collection_modifyitems(config, items):
    run_slow = os.environ.get("UQX_SLOW") == "1" or "slow" in (config.getoption("-m") or "")
    skip_slow = pytest.mark.skip(reason="slow: set UQX_SLOW=1 (make test-slow)")
    skip_data = pytest.mark.skip(reason="literature data not found: set UQX_DATA_DIR")
    have_data = _data_dir() is not None
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(skip_slow)
        if "data" in item.keywords and not have_data:
            item.add_marker(skip_data)


@pytest.fixture(scope="session")
def data_dir():
    d = _data_dir()
    if d is None:
        pytest.skip("literature data not found: set UQX_DATA_DIR")
    return d


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
