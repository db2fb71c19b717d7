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
