"""uqx.engine.confidence: one BCa level formula (bca_alphas) and one "interval contains
the target" rule (interval_contains), reused by every caller."""

import numpy as np
from scipy.special import ndtr, ndtri

from uqx.engine.confidence import _quantile7, bca_alphas, bca_limits


def test_bca_limits_are_the_quantiles_at_bca_alphas():
    rng = np.random.default_rng(3)
    T = rng.gamma(3.0, 1.0, (2001, 5))
    t0 = T[0] = np.array([2.5, 3.0, 1.0, 3.0, -1.0])  # the last: no T below -> z0 = -inf
    a = np.array([0.02, -0.05, 0.0, np.nan, 0.01])
    lo, hi, z0 = bca_limits(T, t0, a, 0.9)
    al = bca_alphas(z0, a, 0.9)
    # the textbook formula, written out
    z = ndtri([0.05, 0.95])[:, None]
    with np.errstate(invalid="ignore"):
        want = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    np.testing.assert_array_equal(al, want)
    q = _quantile7(T, al)
    ok = np.isfinite(z0) & np.isfinite(a)
    np.testing.assert_array_equal(lo[ok], q[0][ok])
    np.testing.assert_array_equal(hi[ok], q[1][ok])
    assert np.all(np.isnan(lo[~ok])) and np.all(np.isnan(hi[~ok]))
    assert ok.tolist() == [True, True, True, False, False]


def test_interval_contains_is_the_sign_rule_without_its_overflow():
    import xarray as xr

    from uqx.engine.confidence import interval_contains

    rng = np.random.default_rng(4)
    lo = rng.normal(1.0, 0.3, 500)
    hi = lo + rng.uniform(-0.2, 0.6, 500)  # some inverted intervals
    lo[::17], hi[::23] = np.nan, np.nan
    lo[5], hi[5] = 1.0, 1.5  # a limit on the target: contained
    with np.errstate(invalid="ignore"):
        sign_rule = (lo - 1) * (hi - 1) <= 0  # ErrViewLib's form, the former copies
    np.testing.assert_array_equal(interval_contains(lo, hi, 1.0), sign_rule)
    assert interval_contains(lo, hi, 1.0)[5]
    # no underflow / inf*0: the product gets these wrong
    assert not interval_contains(1e-200, 2e-200, 0.0)
    assert interval_contains(np.inf, 1.0, 1.0)
    # array targets and xarray limits keep their type
    t = np.linspace(0, 2, 500)
    np.testing.assert_array_equal(interval_contains(lo, hi, t),
                                  (np.fmin(lo, hi) <= t) & (t <= np.fmax(lo, hi))
                                  & ~np.isnan(lo) & ~np.isnan(hi))
    da = interval_contains(xr.DataArray(lo, dims="bin"), xr.DataArray(hi, dims="bin"), 1.0)
    assert isinstance(da, xr.DataArray) and da.dtype == bool
    np.testing.assert_array_equal(da.values, sign_rule)
