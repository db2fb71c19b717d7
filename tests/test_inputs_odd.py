"""Odd inputs: tiny sets, shifted headers, duplicated rows, huge --n-mc, damaged files.

Each case was a traceback or a silent wrong answer: here it is a clear error naming the
problem (and what to do), a warning that counts what it saw, or the right answer.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from uqx.cli.app import main

CLI_FAST = ["--n-boot", "100", "--n-mc", "1000", "--seed", "1", "-q"]


def _frame(M, seed=1):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    return pd.DataFrame({"E": u * rng.standard_normal(M), "uE": u,
                         "X": rng.uniform(0.0, 1.0, M)})


@pytest.mark.parametrize("M, pop_min", [(5, 2), (2, 1)])
def test_tiny_sets_following_the_pop_min_advice_give_an_answer(tmp_path, capsys, M, pop_min):
    """M = 5 with --pop-min 2 (and M = 2 with --pop-min 1): the resolutions of a set whose
    statistics are undefined on some copies used to fail on arrays of unequal lengths."""
    path = tmp_path / f"M{M}.csv"
    _frame(M).to_csv(path, index=False)
    status = main(["validate", str(path), "--X", "X", "--pop-min", str(pop_min),
                   *CLI_FAST])
    out = capsys.readouterr().out
    assert status == 0
    assert f"M = {M}" in out and "average" in out
