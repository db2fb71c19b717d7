"""Interval-based validation (uqx.inference.intervals): PICP and the local range ratio."""

import numpy as np
import pytest
from scipy import stats as sps

import uqx
from uqx.inference.intervals import half_ranges, local_range_ratio, picp
from uqx.inference.synth import nig


def test_picp_from_uE_on_calibrated_normal_data():
    E, u = nig(4000, 20.0, seed=2)
    r = picp(uqx.from_arrays(E, u, name="cal"), [0.5, 0.95])
    k = sps.norm.ppf([0.75, 0.975])
    want = np.mean(np.abs(E)[:, None] <= u[:, None] * k, axis=0)
    np.testing.assert_allclose(r["picp"].values[0], want)
    assert r["valid"].values.all()  # binomial sd 0.8 %: P inside the 95 % interval
    # doubled uncertainties (primer case D): over-coverage, invalid
    r2 = picp(uqx.from_arrays(E, 2 * u, name="d"), [0.5])
    assert r2["picp"].item() > 0.8 and not r2["valid"].item()


def test_picp_and_lrr_with_given_intervals():
    rng = np.random.default_rng(3)
    M = 3000
    x = rng.uniform(1, 3, M)
    E = 0.1 * x * rng.standard_normal(M)
    U = np.stack([0.1 * x * sps.norm.ppf(0.84), 0.1 * x * sps.norm.ppf(0.975)], axis=1)
    ds = uqx.from_arrays(E, U[:, 1] / 1.96, X=x).assign(
        U=(("sample", "prob"), U)).assign_coords(prob=[0.68, 0.95])
    np.testing.assert_array_equal(half_ranges(ds, [0.95]).values[:, 0], U[:, 1])
    r = picp(ds, [0.68, 0.95])
    assert r.attrs["intervals"] == "given U"
    np.testing.assert_allclose(r["picp"].values[0],
                               np.mean(np.abs(E)[:, None] <= U, axis=0))
    lr = local_range_ratio(E, U[:, 1], x, prob=0.95, n_bins=6, n_boot=300, seed=1)
    assert lr.sizes["bin"] == 6
    assert np.all(np.abs(lr["lrr"].values - 1) < 0.25)  # calibrated intervals: ratio ≈ 1
    assert np.all(lr["ci_low"].values <= lr["ci_high"].values)
    assert lr["valid"].mean() >= 0.5
    # intervals half as wide: ratio ≈ 0.5, every bin invalid
    bad = local_range_ratio(E, 0.5 * U[:, 1], x, prob=0.95, n_bins=6, n_boot=300, seed=1)
    assert np.all(bad["lrr"].values < 0.7) and not bad["valid"].values.any()


def test_lrr_is_the_ratio_of_widths():
    rng = np.random.default_rng(4)
    E = rng.standard_normal(600)
    U = np.full(600, 1.96)
    from uqx.engine.stats.tailedness import hd_quantile

    lr = local_range_ratio(E, U, rng.uniform(size=600), n_bins=1, pop_min=30, n_boot=50, seed=2)
    q = hd_quantile(E, [0.025, 0.975])
    assert float(lr["lrr"][0]) == pytest.approx(2 * 1.96 / (q[1] - q[0]), rel=1e-12)


@pytest.mark.data
def test_hu2022_picp(data_dir):
    ds = uqx.load_dataset("HU2022_feature", data_dir)
    r = picp(ds, [0.68, 0.95])
    # conformal intervals: coverage close to nominal on the test set (003 Sect. IV C)
    assert np.all(np.abs(r["picp"].values[0] - [0.68, 0.95]) < 0.05)


def test_bad_inputs():
    with pytest.raises(uqx.InputError):
        local_range_ratio([1.0, 2.0], [1.0], [1.0, 2.0])
    with pytest.raises(uqx.InputError):
        local_range_ratio(np.ones(100), np.ones(100), np.arange(100.0), prob=1.5)
