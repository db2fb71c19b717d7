"""Words of the text output: no doubled words, factors instead of huge percentages,
messages that name the filter or option at fault."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import uqx
from uqx.cli.app import main
from uqx.text.summary import summary_text


def test_a_large_miscalibration_reads_as_a_factor_not_a_huge_percentage():
    """"uE about 10953 % too small": the amount is always a factor."""
    from uqx.text.summary import _times

    assert _times(110.53) == "111×"
    assert _times(1.24) == "1.24×"
    assert _times(0.6) == "1.67×"  # too large by 1/0.6
    assert _times(0.32) == "3.12×"


def test_the_summary_of_a_hugely_overconfident_set_reads_a_factor():
    rng = np.random.default_rng(2)
    u = rng.uniform(0.5, 2.0, 500)
    ds = uqx.from_arrays(110 * u * rng.standard_normal(500), u, name="far")
    res = uqx.validate(ds, ["zms", "rce"], bootstrap=100, copies=200, conditional=False,
                       compute=uqx.Compute(seed=1))
    text = summary_text(res)
    assert re.search(r"uE 1\d\d× too small on average", text), text
    assert "111." not in text  # factors printed without a dangling point
    assert not re.search(r"\d{4} %", text), text


def test_average_calibration_invalid_by_another_statistic_says_invalid_once():
    """"Average calibration invalid: invalid: RCE 0.0715": ZMS is 1, RCE is off. RCE is a
    diagnostic: it decides nothing, and its reason says that it rejects its own null."""
    rng = np.random.default_rng(3)
    u = rng.uniform(0.1, 3.0, 2000)
    E = np.sqrt(u / np.mean(1 / u)) * rng.standard_normal(2000)  # ZMS 1, RCE about 0.35
    res = uqx.validate(uqx.from_arrays(E, u, name="s"), ["zms", "rce"], bootstrap=200,
                       copies=500, conditional=False, compute=uqx.Compute(seed=1))
    text = summary_text(res)
    assert "invalid: invalid" not in text
    assert res["verdict"].sel(stat="rce").item() == "diagnostic"
    why = res["verdict_reason"].sel(stat="rce").item()
    assert "rejects its own null" in why and "does not decide" in why, why


@pytest.mark.parametrize("args, needle", [
    (["--min-uE-rel-sd", "100"], "got 0 of 50 rows, after the filters (uE > 100*sd(E): "
                                 "dropped 50 row(s)): lower --min-uE-rel-sd 100"),
])
def test_a_filter_that_drops_every_row_is_named(tmp_path, capsys, args, needle):
    rng = np.random.default_rng(1)
    u = rng.uniform(0.5, 2.0, 50)
    path = tmp_path / "d.csv"
    pd.DataFrame({"E": u * rng.standard_normal(50), "uE": u}).to_csv(path, index=False)
    assert main(["stats", str(path), *args, "-q"]) == 2
    assert needle in capsys.readouterr().err


def test_an_interval_that_disagrees_with_its_verdict_is_marked_and_explained():
    """⟨Z⟩ 0.017 [0.0011, 0.034] `valid` (QM9_E): the interval excludes 0, the verdict is
    the question's adjusted test. The row is marked and a note says why, never otherwise."""
    from uqx.text.console import format_validation
    from uqx.text.tables import DISAGREE

    rng = np.random.default_rng(1)
    u = rng.uniform(0.5, 2.0, 800)
    ds = uqx.from_arrays(u * rng.standard_normal(800), u, name="s")
    res = uqx.validate(ds, ["zms", "mean_z", "cc"], bootstrap=200, copies=200,
                       conditional=False, compute=uqx.Compute(seed=2))
    v = dict(zip(res["stat"].values, res["verdict"].values[0], strict=True))
    assert v["zms"] == v["mean_z"] == "valid"
    assert DISAGREE not in format_validation(res)  # intervals holding 0 and 1: no note
    moved = res.copy(deep=True)
    j = list(res["stat"].values).index("mean_z")
    moved["ci_low"].values[0, j], moved["ci_high"].values[0, j] = 0.0011, 0.034
    text = format_validation(moved)
    assert f"valid{DISAGREE}" in text
    assert re.search(r"s mean_z: its 95 % interval \[0\.0011, 0\.034\] excludes the calibrated "
                     r"value 0, yet `valid`", text)
    # the other way: an invalid whose interval holds the calibrated value
    moved = res.copy(deep=True)
    k = list(res["stat"].values).index("zms")
    moved["verdict"].values[0, k] = "invalid"
    text = format_validation(moved)
    assert re.search(r"s zms: its 95 % interval \[[^]]+\] holds the calibrated value 1, yet "
                     r"`invalid`", text)
    # CC's reference is N(0, 1)'s simulated value, not its test's: never read
    moved = res.copy(deep=True)
    c = list(res["stat"].values).index("cc")
    moved["ci_low"].values[0, c] = moved["ci_high"].values[0, c] = -0.9
    assert "s cc:" not in format_validation(moved)
