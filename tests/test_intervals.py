"""Interval-based validation (uqx.inference.curves.intervals): PICP and the local range ratio."""

import numpy as np
import pytest
from scipy import stats as sps

import uqx
from uqx.dataio.synth import nig
from uqx.engine.stats.tailedness import hd_quantile
from uqx.inference.curves.intervals import half_ranges, local_range_ratio, picp


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
    # six equal-count bins of x: 500 points each, labelled by their mid-range
    o = np.argsort(x, kind="stable")
    np.testing.assert_array_equal(lr["n"].values, [500] * 6)
    xb = x[o].reshape(6, 500)
    np.testing.assert_allclose(lr["x_mid"].values, (xb.min(1) + xb.max(1)) / 2, rtol=1e-15)
    # the value of each bin is the ratio of widths of its own points
    Eb, Ub = E[o].reshape(6, 500), U[:, 1][o].reshape(6, 500)
    q = hd_quantile(Eb, [0.025, 0.975])
    want = 2 * np.sqrt(np.mean(Ub**2, axis=1)) / (q[:, 1] - q[:, 0])
    np.testing.assert_allclose(lr["lrr"].values, want, rtol=1e-12)
    assert np.all(np.abs(lr["lrr"].values - 1) < 0.25)  # calibrated intervals: ratio ≈ 1
    # each BCa interval holds its estimate, is a few standard errors of a ratio of widths
    # from 500 points wide (~0.05-0.2 at 95 %), and 'valid' says whether it holds 1
    lo, hi = lr["ci_low"].values, lr["ci_high"].values
    assert np.all((lo < lr["lrr"].values) & (lr["lrr"].values < hi))
    assert np.all((0.05 < hi - lo) & (hi - lo < 0.3))
    np.testing.assert_array_equal(lr["valid"].values, (lo <= 1) & (1 <= hi))
    assert lr["valid"].mean() >= 0.5
    # intervals half as wide: ratio ≈ 0.5, every bin invalid
    bad = local_range_ratio(E, 0.5 * U[:, 1], x, prob=0.95, n_bins=6, n_boot=300, seed=1)
    assert np.all(bad["lrr"].values < 0.7) and not bad["valid"].values.any()


def test_picp_wilson_interval_by_hand():
    """80 of 100 errors inside: PICP 0.8 and its Wilson 95 % interval, worked by hand.

    With p = 0.8, n = 100, z = 1.96: centre (p + z²/2n)/(1 + z²/n) = 0.8192/1.0384 = 0.7889,
    half-width z √(p(1 − p)/n + z²/4n²)/(1 + z²/n) = 1.96 · 0.04118/1.0384 = 0.0777:
    [0.7112, 0.8666]. It holds P = 0.8 (valid) and not P = 0.95 (invalid).
    """
    E = np.r_[np.full(80, 0.5), np.full(20, 3.0)]  # |E| = 0.5 inside both, 3 outside both
    r = picp(uqx.from_arrays(E, np.ones(100)), [0.8, 0.95])  # half-ranges 1.28, 1.96
    np.testing.assert_array_equal(r["picp"].values, [[0.8, 0.8]])
    np.testing.assert_allclose(r["picp_low"].values, [[0.7112, 0.7112]], atol=5e-5)
    np.testing.assert_allclose(r["picp_high"].values, [[0.8666, 0.8666]], atol=5e-5)
    np.testing.assert_array_equal(r["valid"].values, [[True, False]])


def test_interval_coverage_on_calibrated_data():
    """Known case: calibrated normal errors. The Wilson interval of PICP holds P, and the
    BCa interval of the LRR holds 1, in about 95 % of 40 data sets (fixed seeds; at least
    85 %: 34 of 40, a binomial(40, 0.95) falls below with probability 0.5 %).

    The LRR's true value is 1 where u is constant (its bins are meant to make it so):
    with a spread of u the errors are a scale mixture, whose central 95 % range is not
    2 · 1.96 √⟨u²⟩ (measured: the interval then holds 1 in 27 of these 40 sets)."""
    n_sets, M = 40, 300
    cover_picp, cover_lrr = np.zeros(2), 0
    for s in range(n_sets):
        rng = np.random.default_rng(100 + s)
        u = rng.uniform(0.5, 2.0, M)
        E = u * rng.standard_normal(M)
        cover_picp += picp(uqx.from_arrays(E, u), [0.68, 0.95])["valid"].values[0]
        z = E / u  # the same draws with u = 1: U = 1.96 is the exact central 95 % range
        lr = local_range_ratio(z, np.full(M, 1.96), u, n_bins=1, pop_min=30, n_boot=200,
                               seed=s)
        cover_lrr += bool(lr["valid"].values[0])
    assert np.all(cover_picp / n_sets >= 0.85), cover_picp
    assert cover_lrr / n_sets >= 0.85, cover_lrr
    # and intervals half as wide are caught: the LRR interval holds 1 in (almost) no set
    rng = np.random.default_rng(7)
    E = rng.standard_normal(M)
    lr = local_range_ratio(E, np.full(M, 0.98), E, n_bins=1, pop_min=30, n_boot=200, seed=1)
    assert float(lr["ci_high"][0]) < 0.7 and not lr["valid"].values[0]


def test_lrr_is_the_ratio_of_widths():
    rng = np.random.default_rng(4)
    E = rng.standard_normal(600)
    U = np.full(600, 1.96)
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
    from uqx.inference.curves.intervals import _lrr, _lrr_bin

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
