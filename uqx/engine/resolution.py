r"""Resolution of a Monte-Carlo test: the smallest miscalibration it detects with 80 % power.

A ``valid`` verdict says "not rejected". What it is worth depends on what the test could
have seen at this size M and on these uE: a test on 200 points accepts uncertainties 15 %
too small most of the time. The resolution turns the acceptance into a positive, bounded
claim: "a miscalibration of this size or larger would have been detected 80 % of the
time".

For average calibration the named alternative is a **scale** of the uncertainties: the
errors are :math:`E = f\,u_E\,\epsilon`, i.e. the true uncertainties are ``f`` times the
stated ones (f > 1: uE too small, over-confident). For a statistic whose value on such
data is a known function :math:`g_f` of its value on calibrated data (its ``scale_map``
in :data:`uqx.engine.statistic.STATISTICS`: ZMS :math:`\to f^2\,\mathrm{ZMS}`, RCE
:math:`\to 1 - f\,(1 - \mathrm{RCE})`, Var(Z) :math:`\to f^2\,\mathrm{Var}(Z)`; ⟨Z⟩
under a **bias** :math:`E = u_E(\epsilon + b)`:
:math:`\langle Z\rangle \to \langle Z\rangle + b`), the power at ``f`` follows from
the test's own calibrated copies :math:`\tilde\theta_k`, with no new simulation:

.. math:: \pi(f) = \frac1n \sum_k \mathbb 1\left[p\big(g_f(\tilde\theta_k)\big) <
          \alpha\right],

p being the Monte-Carlo p-value of :func:`uqx.engine.mctest.mc_pvalue` against the same
copies. :func:`scale_resolution` returns the factors on either side of 1 where
:math:`\pi` first reaches the target power (NaN when it does not within a factor 4).
An ``invalid`` needs every member of the null family to reject, so the resolution of a
verdict is that of its least powerful member (the widest factors).
"""

from __future__ import annotations

import numpy as np

from uqx.engine.defaults import POWER
from uqx.engine.mctest import ALPHA
from uqx.engine.statistic import STATISTICS

__all__ = ["POWER", "scale_resolution", "power_at",
           "first_reaching", "COARSE_STEP",
           "TOP_QUANTILE", "TOP_FACTORS", "top_segments", "top_bin_factors",
           "SPREAD_UP", "SPREAD_DOWN", "spread_bin_factors",
           "spread_resolution", "SPREAD_STEP",
           "alternative_resolution", "first_hit", "TOP_STEP"]

#: The local alternative of consistency: the uncertainties of the largest uE (where a
#: user relies on uE to flag unreliable predictions) too small by a factor.
TOP_QUANTILE = 0.9
#: Factors of the local alternative at which the binned statistics' copies are evaluated.
TOP_FACTORS = np.exp(np.linspace(0.0, np.log(3.0), 89)[1:])
# candidate factors: scale on a log grid up to a factor 4, bias up to 2 uE
_GRID = {
    "scale": (np.exp(np.linspace(0.0, np.log(4.0), 561)[1:]),
              np.exp(-np.linspace(0.0, np.log(4.0), 561)[1:])),
    "bias": (np.linspace(0.0, 2.0, 801)[1:], -np.linspace(0.0, 2.0, 801)[1:]),
}


def _sides(base, t, factors, alpha):
    """Fractions of the transformed copies rejected on the upper and on the lower side.

    ``t`` sorted and finite. The two-sided p-value ``2 min(1 + #{>= a}, 1 + #{<= a}) /
    (1 + n)`` is below ``alpha`` on at most one side (the two counts add up to at least
    n), so the power is the sum of the two fractions.
    """
    n = t.size
    alt = STATISTICS[base].scale_map(t[None, :], np.asarray(factors, dtype=np.float64)[:, None])
    ge = n - np.searchsorted(t, alt, side="left")  # copies >= alt
    le = np.searchsorted(t, alt, side="right")  # copies <= alt
    upper = np.mean(2.0 * (1 + ge) / (1 + n) < alpha, axis=-1)
    lower = np.mean(2.0 * (1 + le) / (1 + n) < alpha, axis=-1)
    return upper, lower


def power_at(base: str, copies, factors, *, alpha: float = ALPHA) -> np.ndarray:
    """Power of the two-sided Monte-Carlo test of ``base`` at each factor.

    Parameters
    ----------
    base : str
        Statistic with a ``scale_map`` (:data:`uqx.engine.statistic.STATISTICS`).
    copies : array_like, shape (n,)
        The statistic on calibrated copies (NaN ignored).
    factors : array_like, shape (F,)
        Scale factors (or biases for ``mean_z``).
    alpha : float
        Size of the test.

    Returns
    -------
    numpy.ndarray, shape (F,)
        Fraction of the transformed copies whose p-value against the copies is < alpha.
    """
    t = np.sort(np.asarray(copies, dtype=np.float64))
    t = t[np.isfinite(t)]
    f = np.asarray(factors, dtype=np.float64)
    if t.size == 0:
        return np.full(f.shape, np.nan)
    upper, lower = _sides(base, t, f, alpha)
    return upper + lower


#: Every how many points of a grid :func:`first_reaching` reads first.
COARSE_STEP = 16


def first_reaching(base: str, copies, grid, *, alpha: float = ALPHA,
                   power: float = POWER) -> int:
    r"""Index of the first factor of ``grid`` whose power reaches ``power`` (-1: none).

    The same index as ``np.flatnonzero(power_at(base, copies, grid) >= power)[0]``, from
    far fewer evaluations. Along the grid every transformed copy
    :math:`g_f(\tilde\theta_k)` moves one way (each ``scale_map`` is monotone in ``f``),
    so the fraction rejected on the side it moves towards, U, never decreases and the
    fraction rejected on the other side, L, never increases; the power is U + L. Between
    two points ``a < b`` read every :data:`COARSE_STEP`, the power is at most U(b) +
    L(a): only where that bound reaches ``power`` are the points between them read, in
    order, so the first index is exact, not a bisection's guess.

    Parameters
    ----------
    base : str
        Statistic with a ``scale_map`` (:data:`uqx.engine.statistic.STATISTICS`).
    copies : array_like, shape (n,)
        The statistic on calibrated copies (NaN ignored).
    grid : array_like, shape (F,)
        Factors moving away from the null value (1, or 0 for a bias), in order.
    alpha, power : float

    Returns
    -------
    int
    """
    t = np.sort(np.asarray(copies, dtype=np.float64))
    t = t[np.isfinite(t)]
    grid = np.asarray(grid, dtype=np.float64)
    F = grid.size
    if t.size == 0 or F == 0:
        return -1
    idx = np.unique(np.r_[np.arange(0, F, COARSE_STEP), F - 1])
    up, lo = _sides(base, t, grid[idx], alpha)
    # which side grows along the grid: the one that grows between the ends
    grows, shrinks = (up, lo) if up[-1] - up[0] >= lo[-1] - lo[0] else (lo, up)
    if grows[0] + shrinks[0] >= power:
        return 0
    for a in range(len(idx) - 1):
        if grows[a + 1] + shrinks[a] < power:
            continue  # no point of (idx[a], idx[a + 1]] can reach it
        seg = np.arange(idx[a] + 1, idx[a + 1] + 1)
        pw = power_at(base, t, grid[seg], alpha=alpha)
        hit = np.flatnonzero(pw >= power)
        if hit.size:
            return int(seg[hit[0]])
    return -1


def scale_resolution(base: str, copies, *, alpha: float = ALPHA,
                     power: float = POWER) -> tuple[float, float]:
    """Factors below and above 1 that the test detects with ``power`` (NaN: not within reach).

    Parameters
    ----------
    base : str
        Statistic with a ``scale_map`` (:data:`uqx.engine.statistic.STATISTICS`).
    copies : array_like, shape (n,)
        The statistic on calibrated copies under one member of the null family.
    alpha, power : float
        Size of the test and target power.

    Returns
    -------
    low, high : float
        The largest factor below 1 (smallest bias below 0) and the smallest factor above
        1 (bias above 0) whose power reaches ``power`` (on the grid of factors:
        :func:`first_reaching`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> zms = np.mean(rng.standard_normal((2000, 1000)) ** 2, axis=1)  # M = 1000 copies
    >>> lo, hi = scale_resolution("zms", zms)
    >>> bool(0.9 < lo < 0.97 and 1.03 < hi < 1.1)
    True
    """
    up, down = _GRID[STATISTICS[base].resolution]
    out = []
    for grid in (down, up):
        k = first_reaching(base, copies, grid, alpha=alpha, power=power)
        out.append(float(grid[k]) if k >= 0 else np.nan)
    return out[0], out[1]


def top_segments(seg, q: float = TOP_QUANTILE) -> np.ndarray:
    """Bins of uE (segments of its sorted order) that start at or above its q-quantile.

    Parameters
    ----------
    seg : array_like of int, shape (S + 1,)
        Bin boundaries in the uE order.
    q : float
        Quantile (default :data:`TOP_QUANTILE`).

    Returns
    -------
    numpy.ndarray of bool, shape (S,)
        The top bins (at least the last one).
    """
    seg = np.asarray(seg, dtype=np.int64)
    top = seg[:-1] >= np.floor(q * seg[-1]) - 0.5 * np.min(np.diff(seg))
    top[-1] = True
    return top


def top_bin_factors(top, f) -> np.ndarray:
    r"""Per-bin factors of the errors under the local alternative: ``f`` on the top bins.

    Errors :math:`f\,u\,\epsilon` in the bins of ``top``, :math:`u\,\epsilon` elsewhere.
    The kernel's sums per bin, :math:`(\sum\epsilon^2, \sum(u\epsilon)^2, \sum
    u\epsilon, \sum\epsilon)` (:func:`uqx.engine.copies.sim_rows`), scale by
    :math:`g^2` (the first two) and :math:`g` (the others), so
    :func:`uqx.engine.copies.copy_bin_features` with these factors turns a calibrated
    copy into a copy of the alternative exactly.

    Parameters
    ----------
    top : numpy.ndarray of bool, shape (S,)
        The top bins (:func:`top_segments`).
    f : float

    Returns
    -------
    numpy.ndarray, shape (S,)
    """
    return np.where(np.asarray(top, dtype=bool), float(f), 1.0)


#: The spread alternative of consistency, :math:`u = c\,u_E^{\gamma}`: its exponents
#: above 1 (uE varies too little: the largest too small, the smallest too large),
#: :math:`\gamma - 1` on a geometric grid from 0.01 to 2 (8.8 % apart) ...
SPREAD_UP = 1.0 + np.geomspace(0.01, 2.0, 64)
#: ... and below 1 (uE varies too much), down to 0 (the true u constant: uE says
#: nothing about which predictions are less reliable).
SPREAD_DOWN = 1.0 - np.geomspace(0.01, 1.0, 56)
#: Every how many exponents of the spread grids the search reads first.
SPREAD_STEP = 6


def spread_bin_factors(u2, n, gammas) -> np.ndarray:
    r"""Per-bin factors of the errors under the spread alternative :math:`u = c\,u_E^{\gamma}`.

    On the bins of uE, each bin represented by its RMV :math:`r_s = \sqrt{U_s/n_s}`
    (:math:`U_s = \sum_{i\in s} u_{E,i}^2`), the true uncertainties are
    :math:`g_s\,u_E` with

    .. math:: g_s = c\,(r_s/\bar r)^{\gamma - 1}, \qquad
              c^2 = \frac{\sum_s U_s}{\sum_s U_s\,(r_s/\bar r)^{2\gamma - 2}},

    :math:`\bar r` the RMV of the set: the true uncertainties keep the mean square of
    uE (average calibration in the sense of RCE holds), only their spread differs. It
    is the power law :math:`u = c\,u_E^\gamma` taken piecewise on the bins, which is
    what a binned statistic can see: :func:`uqx.engine.copies.copy_bin_features` with
    these factors turns a calibrated copy into a copy of this alternative exactly, and
    ``tests/test_verdict_claims.py`` measures the power of the stated resolution under
    the row-by-row power law.

    Parameters
    ----------
    u2, n : numpy.ndarray, shape (S,)
        Σ uE² and points per bin.
    gammas : array_like, shape (F,)

    Returns
    -------
    numpy.ndarray, shape (F, S)
    """
    u2 = np.asarray(u2, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    # an empty bin (equal-width bins on tied uE) has no factor: NaN, said by the verdict
    with np.errstate(divide="ignore", invalid="ignore"):
        ln_r = 0.5 * (np.log(u2 / n) - np.log(u2.sum() / n.sum()))
        a = (np.asarray(gammas, dtype=np.float64)[:, None] - 1.0) * ln_r[None, :]
        c2 = u2.sum() / np.sum(u2[None, :] * np.exp(2.0 * a), axis=1)
        return np.sqrt(c2)[:, None] * np.exp(a)


#: Every how many factors of :data:`TOP_FACTORS` the search of
#: :func:`alternative_resolution` reads first (12 of the 88).
TOP_STEP = 8


def first_hit(rejected, n_factors: int, *, power: float = POWER, step: int = TOP_STEP,
              quasi_convex: bool = True, monotone: bool = False) -> int:
    r"""Index of the first factor at which a fraction ``power`` of the copies is rejected.

    ``rejected(idx)`` gives, for an array of factor indices, the rejection of every
    copy at each (bool, shape (n, len(idx))). With ``quasi_convex``, each copy is
    rejected on a set of the form :math:`[f_1, a] \cup [b, f_F]` (its statistic is
    quasi-convex in f, its ``quasi_convex`` in :data:`uqx.engine.statistic.STATISTICS`):
    a copy rejected somewhere between two grid points is rejected at one of them, so the
    power between read points ``a < b`` is at most the fraction rejected at ``a`` or at
    ``b``. The search reads every
    ``step``-th point, and the points between two of them only where that bound reaches
    ``power``: the same index as reading the whole grid. With ``monotone`` instead
    (the power assumed not to rise above ``power`` and fall back between two read
    points), the points between the first read point reaching ``power`` and the one
    before it are read, in order. With neither, the whole grid is read.

    Parameters
    ----------
    rejected : callable
        ``idx -> numpy.ndarray of bool, shape (n, len(idx))``.
    n_factors : int
        Size of the grid.
    power : float
    step : int
    quasi_convex, monotone : bool

    Returns
    -------
    int
        -1 when no factor of the grid reaches ``power``.
    """
    F = int(n_factors)
    if F == 0:
        return -1
    if monotone and not quasi_convex:
        read = np.unique(np.r_[np.arange(step - 1, F, step), F - 1])
        reach = np.flatnonzero(rejected(read).mean(axis=0) >= power)
        if not reach.size:
            return -1
        a = int(read[reach[0]])
        inner = np.arange(a - step + 1 if reach[0] == 0 else int(read[reach[0] - 1]) + 1, a)
        inner = inner[inner >= 0]
        hit = np.flatnonzero(rejected(inner).mean(axis=0) >= power) if inner.size else inner
        return int(inner[hit[0]]) if hit.size else a
    if not quasi_convex:
        hit = np.flatnonzero(rejected(np.arange(F)).mean(axis=0) >= power)
        return int(hit[0]) if hit.size else -1
    prev_idx, prev = 0, rejected(np.array([0]))[:, 0]
    if prev.mean() >= power:
        return 0
    while prev_idx < F - 1:
        nxt_idx = min(prev_idx + step, F - 1)
        nxt = rejected(np.array([nxt_idx]))[:, 0]
        if nxt_idx - prev_idx > 1 and np.mean(prev | nxt) >= power:
            inner = np.arange(prev_idx + 1, nxt_idx)
            hit = np.flatnonzero(rejected(inner).mean(axis=0) >= power)
            if hit.size:
                return int(inner[hit[0]])
        if nxt.mean() >= power:
            return int(nxt_idx)
        prev_idx, prev = nxt_idx, nxt
    return -1


def alternative_resolution(null, alternative, factors, *, direction: int = 1,
                           alpha: float = ALPHA, power: float = POWER,
                           quasi_convex: bool = True, monotone: bool = False,
                           step: int = TOP_STEP) -> float:
    """Smallest factor whose alternative copies the test rejects with ``power``.

    The power at a factor is the fraction of the alternative's copies whose
    Monte-Carlo p-value against the calibrated copies (:func:`uqx.engine.mctest.mc_pvalue`)
    is below ``alpha``; the factors are searched by :func:`first_hit` (the grid's first
    factor reaching ``power``, from a fraction of its points).

    Parameters
    ----------
    null : array_like, shape (n,)
        The statistic on calibrated copies (the test's null).
    alternative : array_like, shape (n, F), or callable
        The statistic on the same copies under the alternative at each factor, or
        ``idx -> (n, len(idx))`` computing them at the factor indices asked
        (:class:`uqx.engine.alternative.BinnedCopies`).
    factors : array_like, shape (F,)
        The factors, in order away from the null (increasing for the top factor).
    direction : {1, -1}
        Side of the test (the statistic's ``direction``).
    alpha, power : float
    quasi_convex, monotone : bool
        Whether each copy's statistic is quasi-convex in the factor
        (its ``quasi_convex``), or the power taken as monotone along the grid
        (:func:`first_hit`); else the whole grid is read.
    step : int
        Every how many factors the search reads first.

    Returns
    -------
    float
        NaN when no factor of the grid reaches the power.
    """
    t = np.sort(np.asarray(null, dtype=np.float64))
    t = t[np.isfinite(t)]
    factors = np.asarray(factors, dtype=np.float64)
    if callable(alternative):
        values = alternative
    else:
        arr = np.asarray(alternative, dtype=np.float64)
        if arr.size == 0:
            return np.nan
        values = lambda idx: arr[:, idx]  # noqa: E731
    if t.size == 0 or factors.size == 0:
        return np.nan
    n = t.size

    def rejected(idx):
        alt = np.asarray(values(idx), dtype=np.float64)
        if direction > 0:
            count = n - np.searchsorted(t, alt, side="left")  # copies >= alt
        else:
            count = np.searchsorted(t, alt, side="right")
        return np.isfinite(alt) & ((1 + count) / (1 + n) < alpha)

    k = first_hit(rejected, factors.size, power=power, quasi_convex=quasi_convex,
                  monotone=monotone, step=step)
    return float(factors[k]) if k >= 0 else np.nan


def spread_resolution(nulls, spreads, *, direction: int = 1, alpha: float = ALPHA,
                      power: float = POWER) -> tuple[float, float]:
    r"""Exponents below and above 1 of :math:`u = c\,u_E^\gamma` detected with ``power``.

    For each member, the first exponent of :data:`SPREAD_DOWN` and of :data:`SPREAD_UP`
    at which a fraction ``power`` of the member's copies under the alternative
    (:func:`spread_bin_factors`) is rejected against its calibrated copies
    (:func:`alternative_resolution`); the resolution is that of the least powerful
    member (the exponents farthest from 1), NaN when one of them does not reach
    ``power`` on the grid. The statistics are not shown to be quasi-convex in γ, so
    the search reads every :data:`SPREAD_STEP`-th exponent and then those before the
    first one reaching ``power`` (``monotone``): the first exponent of the whole grid
    unless the power rises above ``power`` and falls back within six steps (the
    slow twin in the tests reads the whole grid).

    Parameters
    ----------
    nulls : list of array_like, shape (n,)
        The statistic on each member's calibrated copies.
    spreads : list of callable
        ``gammas -> (n, F)``: the same copies under the alternative at each exponent
        (:meth:`uqx.engine.alternative.BinnedCopies.spread`).
    direction : {1, -1}
    alpha, power : float

    Returns
    -------
    low, high : float
    """
    if not nulls:
        return np.nan, np.nan
    out = []
    for grid, pick in ((SPREAD_DOWN, np.min), (SPREAD_UP, np.max)):
        g = [alternative_resolution(null, _lazy(values, grid), grid, direction=direction,
                                    alpha=alpha, power=power, quasi_convex=False,
                                    monotone=True, step=SPREAD_STEP)
             for null, values in zip(nulls, spreads, strict=True)]
        out.append(float(pick(g)) if np.isfinite(g).all() else np.nan)
    return out[0], out[1]


def _lazy(values, grid):
    """``idx -> values(grid[idx])``: the statistic at the exponents a search reads."""
    grid = np.asarray(grid, dtype=np.float64)
    return lambda idx: values(grid[np.atleast_1d(idx)])
