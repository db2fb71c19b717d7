r"""Bootstrap confidence intervals from replicates: BCa, percentile, basic (numpy only).

Conventions of ``nptest::np.boot`` as used for the papers' numbers (methods: bootstrap):
the bootstrap distribution :math:`T = [t_0; t^*_1; \dots; t^*_R]` (R+1 values),
:math:`z_0 = \Phi^{-1}(\#\{T < t_0\}/(R+1))`, the acceleration from the exact
leave-one-out values, :math:`\alpha_k = \Phi(z_0 + (z_0+z_k)/(1 - a(z_0+z_k)))` and the
type-7 quantiles of T. The resampling itself is :mod:`uqx.engine.resample`; the dask
graphs that run it, :mod:`uqx.inference.bootstrap`.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np
from scipy.special import ndtr, ndtri

from uqx.engine.defaults import LEVEL

__all__ = [
    "BcaInterval",
    "EstimateInterval",
    "METHODS",
    "acceleration_from_power_sums",
    "bca_alphas",
    "bca_interval",
    "bca_limits",
    "bca_limits_mc_se",
    "basic_interval",
    "interval_contains",
    "jackknife_acceleration",
    "percentile_interval",
]

METHODS = ("bca", "percentile", "basic")


def _quantile7(T, p):
    """Type-7 quantiles of each column of T (NaN dropped) at per-column probabilities p."""
    T = np.asarray(T, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    for k in range(T.shape[1]):
        col = T[:, k]
        col = col[~np.isnan(col)]
        ok = np.isfinite(p[..., k]) & (col.size > 0)
        if np.any(ok):
            # infinite replicates (t_z of a resample of equal z-scores) stay in the order;
            # between two of them the interpolation is inf - inf: NaN, without a warning
            with np.errstate(invalid="ignore"):
                out[..., k][ok] = np.quantile(col, p[..., k][ok], method="linear")
    return out


def jackknife_acceleration(jack, *, chunk_rows: int = 262_144):
    r"""BCa acceleration from leave-one-out values (Efron 1987; nptest).

    .. math:: a = \frac{\sum_i (\bar t - t_{(i)})^3}{6\left(\sum_i (\bar t - t_{(i)})^2
              \right)^{3/2}}

    Accumulated over row chunks (memory O(chunk · K), not O(M · K)); NaN values ignored.

    Parameters
    ----------
    jack : array_like, shape (M, K)

    Returns
    -------
    numpy.ndarray, shape (K,)
        NaN where the jackknife values are constant (0/0).
    """
    jack = np.asarray(jack, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column: NaN, no warning
        mean = np.nanmean(jack, axis=0)
    s2 = np.zeros(jack.shape[1:])
    s3 = np.zeros(jack.shape[1:])
    with np.errstate(invalid="ignore", over="ignore"):  # infinite values: NaN, no warning
        for lo in range(0, jack.shape[0], chunk_rows):
            d = mean - jack[lo : lo + chunk_rows]
            s2 += np.nansum(d * d, axis=0)
            s3 += np.nansum(d * d * d, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s3 / (6.0 * s2**1.5)


def acceleration_from_power_sums(P):
    r"""BCa acceleration from the power sums of :math:`x_i = t_{(i)} - t_0`.

    With :math:`m = \sum x / n`: :math:`\sum (m - x)^2 = \sum x^2 - n m^2` and
    :math:`\sum (m - x)^3 = -(\sum x^3 - 3m\sum x^2 + 2 n m^3)`, so
    :math:`a = \sum (m - x)^3 / (6 (\sum (m - x)^2)^{3/2})` (the formula of
    :func:`jackknife_acceleration`; the shift by t0 keeps the sums well conditioned:
    :math:`|m| \ll` the spread of x for a smooth statistic).
    """
    n, s1, s2, s3 = np.moveaxis(np.asarray(P, dtype=np.float64), -1, 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = s1 / n
        c2 = s2 - n * m * m
        c3 = -(s3 - 3.0 * m * s2 + 2.0 * n * m**3)
        return c3 / (6.0 * c2**1.5)


class BcaInterval(NamedTuple):
    """A BCa interval with its bias correction and acceleration (arrays over statistics)."""

    low: np.ndarray
    high: np.ndarray
    z0: np.ndarray
    acceleration: np.ndarray


class EstimateInterval(NamedTuple):
    """An estimate with the two ends of its interval."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray


def bca_interval(T, t0, jack, *, level=LEVEL):
    r"""BCa interval with the conventions of ``nptest::np.boot`` (methods: bootstrap).

    Parameters
    ----------
    T : array_like, shape (R+1, K)
        Bootstrap distribution **including** t0 (row 0 or anywhere).
    t0 : array_like, shape (K,)
    jack : array_like, shape (M, K)
        Leave-one-out values.
    level : float

    Returns
    -------
    BcaInterval
        ``(low, high, z0, acceleration)``, each of shape (K,). Degenerate cases (all T on
        one side of t0, constant jackknife) give NaN limits.
    """
    a = jackknife_acceleration(jack)
    lo, hi, z0 = bca_limits(T, t0, a, level)
    return BcaInterval(lo, hi, z0, a)


def bca_alphas(z0, a, level: float = LEVEL):
    r"""BCa-adjusted quantile levels (lower, upper) from z0 and the acceleration.

    .. math:: \alpha_k = \Phi\left(z_0 + \frac{z_0 + z_k}{1 - a(z_0 + z_k)}\right),
              \qquad z_k = \Phi^{-1}\left(\tfrac{1 \mp \mathrm{level}}{2}\right)

    (Efron 1987; ``nptest::np.boot``, methods: bootstrap). The one formula behind
    :func:`bca_limits` (which masks non-finite z0 or a to NaN) and of the levels whose
    quantile noise :func:`uqx.engine.verdict.limit_se` measures.

    Parameters
    ----------
    z0 : array_like, shape (K,)
        Bias corrections.
    a : array_like, shape (K,)
        Accelerations.
    level : float, default LEVEL (0.95)
        Confidence level.

    Returns
    -------
    numpy.ndarray, shape (2, K)
        Levels of the lower (row 0) and upper (row 1) limits; NaN where the formula is
        undefined, no warnings.
    """
    z = ndtri(np.array([(1 - level) / 2, (1 + level) / 2]))[:, None]
    z0 = np.atleast_1d(np.asarray(z0, dtype=np.float64))
    a = np.atleast_1d(np.asarray(a, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        return ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))


def bca_limits(T, t0, a, level):
    """Return the BCa limits and z0 from T (t0 included) and a given acceleration.

    Parameters
    ----------
    T : array_like, shape (R+1, K)
        Bootstrap distribution, t0 in row 0.
    t0 : array_like, shape (K,)
        Estimates.
    a : array_like, shape (K,)
        Accelerations.
    level : float
        Confidence level.

    Returns
    -------
    lo, hi, z0 : numpy.ndarray, shape (K,)
        The limits and the bias corrections.
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    t0 = np.atleast_1d(np.asarray(t0, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.sum(T < t0, axis=0) / T.shape[0]
        z0 = ndtri(frac)
    alpha = bca_alphas(z0, a, level)
    alpha = np.where(np.isfinite(z0) & np.isfinite(a), alpha, np.nan)
    q = _quantile7(T, alpha)
    return q[0], q[1], z0


def bca_limits_mc_se(T, t0, a, *, level=LEVEL, groups: int = 10):
    r"""Monte-Carlo standard errors of the BCa limits, by jackknife over replicate groups.

    The R replicates (row 0 of T is t0 and stays) are cut into ``groups`` contiguous
    groups; the limits are recomputed without each group (z0 and the quantiles change,
    the acceleration does not), and

    .. math:: \mathrm{se}(\ell) = \sqrt{\frac{g-1}{g}\sum_k (\ell_{(k)} - \bar\ell)^2}

    (jackknife-after-bootstrap over groups; Koehler, Brown & Haneuse 2009). This captures
    the noise of z0 as well as of the extreme quantiles, which order-statistic formulas
    miss for heavy-tailed bootstrap distributions.

    Parameters
    ----------
    T : array_like, shape (R+1, K)
        Bootstrap distribution, t0 in row 0.
    t0 : array_like, shape (K,)
        Estimates.
    a : array_like, shape (K,)
        Accelerations (kept fixed).
    level : float, default LEVEL (0.95)
        Confidence level.
    groups : int, default 10
        Replicate groups of the jackknife.

    Returns
    -------
    se_low, se_high : numpy.ndarray, shape (K,)
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    R = T.shape[0] - 1
    g = max(2, min(int(groups), R // 20))
    cuts = np.linspace(1, R + 1, g + 1).astype(int)
    lims = []
    for k in range(g):
        keep = np.r_[0, np.arange(1, cuts[k]), np.arange(cuts[k + 1], R + 1)]
        lo, hi, _ = bca_limits(T[keep], t0, a, level)
        lims.append((lo, hi))
    L = np.array(lims)  # (g, 2, K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        se = np.sqrt((g - 1) / g * np.sum((L - L.mean(axis=0)) ** 2, axis=0))
    return se[0], se[1]


def percentile_interval(T, *, level=LEVEL):
    """Percentile interval: type-7 quantiles of T at ``(1 ± level)/2``.

    Parameters
    ----------
    T : array_like, shape (R+1, K)
        Bootstrap distribution, t0 in row 0.
    level : float, default LEVEL (0.95)
        Confidence level.

    Returns
    -------
    lo, hi : numpy.ndarray, shape (K,)
        The limits.
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    p = np.broadcast_to(np.array([(1 - level) / 2, (1 + level) / 2])[:, None], (2, T.shape[1]))
    q = _quantile7(T, p)
    return q[0], q[1]


def basic_interval(T, t0, *, level=LEVEL):
    r"""Return the basic (reverse percentile) interval :math:`[2t_0 - q_{hi}, 2t_0 - q_{lo}]`.

    Parameters
    ----------
    T : array_like, shape (R+1, K)
        Bootstrap distribution, t0 in row 0.
    t0 : array_like, shape (K,)
        Estimates.
    level : float, default LEVEL (0.95)
        Confidence level.

    Returns
    -------
    lo, hi : numpy.ndarray, shape (K,)
        The limits.
    """
    lo, hi = percentile_interval(T, level=level)
    t0 = np.asarray(t0, dtype=np.float64)
    return 2 * t0 - hi, 2 * t0 - lo


def interval_contains(lo, hi, target):
    r"""Whether each interval [lo, hi] contains its target (limits included).

    .. math:: \min(\ell, h) \le t \le \max(\ell, h)
              \;\Leftrightarrow\; (\ell - t)(h - t) \le 0

    The one rule of uqx for "the interval contains the target": a bin of a local analysis
    is valid, and counts in its fraction of valid bins, when its interval contains the
    target (ErrViewLib's :math:`(\ell_j - 1)(h_j - 1) \le 0`, methods: binned statistics;
    a PICP when its interval contains P). Written with comparisons, not the product, so
    that it cannot underflow or overflow; a NaN limit gives False.

    Parameters
    ----------
    lo, hi : array_like or xarray.DataArray
        Interval limits (either order).
    target : float or array_like
        Value to contain, broadcast against the limits.

    Returns
    -------
    numpy.ndarray or xarray.DataArray of bool
        Broadcast shape of the inputs (a DataArray when the limits are DataArrays).

    Examples
    --------
    >>> interval_contains(np.array([0.8, 1.1, np.nan]), np.array([1.2, 1.3, 2.0]), 1.0).tolist()
    [True, False, False]
    """
    return (np.minimum(lo, hi) <= target) & (target <= np.maximum(lo, hi))
