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


def test_lrr_on_the_bootstrap_engine_with_the_analytic_jackknife():
    """_lrr_bin against the obvious route: each replicate re-computed from the resampled
    values (the plan's counts), the jackknife by deleting each point (O(n²))."""
    from uqx.engine.resample import BootstrapPlan
    from uqx.inference.intervals import _lrr, _lrr_bin

    rng = np.random.default_rng(8)
    n = 157
    E = np.round(rng.standard_t(5, n), 1)  # ties
    U = rng.uniform(1.5, 2.5, n)
    plan = BootstrapPlan(n, 1300, 5, ("lrr-test",))  # two replicate blocks
    t0, T, jack = _lrr_bin(E, U, 0.9, plan)
    assert t0 == _lrr(E, U, 0.9) and T[0] == t0 and T.size == 1301
    o = np.argsort(E, kind="stable")
    C = np.concatenate([plan.counts(b) for b in range(plan.n_blocks)])
    slow = np.array([_lrr(np.repeat(E[o], c), np.repeat(U[o], c), 0.9) for c in C])
    np.testing.assert_allclose(T[1:], slow, rtol=1e-12)
    keep = ~np.eye(n, dtype=bool)
    direct = np.array([_lrr(E[o][k], U[o][k], 0.9) for k in keep])
    np.testing.assert_allclose(jack, direct, rtol=1e-12)
    # the same seed and data give the same interval
    x = rng.uniform(size=n)
    a = local_range_ratio(E, U, x, n_bins=1, pop_min=30, n_boot=200, seed=3)
    b = local_range_ratio(E, U, x, n_bins=1, pop_min=30, n_boot=200, seed=3)
    np.testing.assert_array_equal(a["ci_low"].values, b["ci_low"].values)
