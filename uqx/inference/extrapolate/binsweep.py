r"""The bin-number sweep of the binned statistics and its straight-line fit (000 App. C, 002).

ENCE, ZMSE and ZVE computed for a series of equal-count bin numbers N (:func:`bin_numbers`
of the :class:`SweepSettings` of a preset) on data sorted by the conditioning variable,
one prefix sum of the bin features serving every N (:func:`sweep_statistics`, and the
fused :func:`sweep_three` of the three statistics), then ``lm(y ~ x)`` in closed form
(:func:`ols_fit`). :mod:`uqx.inference.extrapolate.fit` extrapolates with them; methods
page: zero-bin extrapolation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numba
import numpy as np

from uqx.engine.binning import equal_count_edges, reduce_n_bins
from uqx.engine.defaults import SWEEP_POP_MIN
from uqx.engine.layout import C_EPS, C_EPS2, C_X2
from uqx.engine.statistic import STATISTICS, per_bin_terms, prefix_bin_features
from uqx.errors import InputError

__all__ = [
    "BINNED_FUSED",
    "IDEAL_INTERCEPT",
    "PRESETS",
    "SweepSettings",
    "bin_numbers",
    "fit_points",
    "ols_fit",
    "settings_of",
    "partition_stats",
    "sweep_edges",
    "sweep_from_range_sums",
    "sweep_statistics",
    "sweep_three",
    "sweep_terms",
]

#: Ideal (calibrated, infinitely many points) intercept of each statistic.
IDEAL_INTERCEPT = {"ence": 0.0, "ence_sd": 0.0, "zmse": 0.0, "zve": 1.0}


@dataclass(frozen=True)
class SweepSettings:
    """Bin-number sweep and fit settings (methods: zero-bin extrapolation).

    Attributes
    ----------
    n_bins : tuple of int
        Candidate numbers of equal-count bins.
    min_per_bin : int
        Keep N with M/N > ``min_per_bin`` (strict, as in the R scripts).
    pop_min : int
        ``popMin`` of the equal-count binning.
    fit_min_bins : int
        Fit on the points with N >= ``fit_min_bins``.
    abscissa : {"sqrt(N/M)", "sqrt(N)"}
        Fit abscissa.
    stats : tuple of str
        Statistics (``ence`` RMSE convention, ``ence_sd``, ``zmse``, ``zve``).
    """

    n_bins: tuple
    min_per_bin: int
    pop_min: int
    fit_min_bins: int
    abscissa: str
    stats: tuple

    def abscissa_of(self, n_bins, M):
        """Return the fit abscissa of bin numbers ``n_bins`` for M points."""
        n = np.asarray(n_bins, dtype=np.float64)
        return np.sqrt(n / M) if self.abscissa == "sqrt(N/M)" else np.sqrt(n)


#: ``app-c``: 000 App. C (N = 10..150 by 10, M/N > 20, popMin 20, fit on N > 20, x =
#: √(N/M)); ``002``: paper 002 (N in {1, 2, 5, 10, 20, ..., 160}, M/N > 30, popMin 30,
#: x = √N, SD-convention ENCE; the paper's per-set fit ranges are set by the caller).
PRESETS = {
    "app-c": SweepSettings(
        n_bins=tuple(range(10, 151, 10)),
        min_per_bin=20,
        pop_min=20,
        fit_min_bins=21,
        abscissa="sqrt(N/M)",
        stats=("ence", "zmse", "zve"),
    ),
    "002": SweepSettings(
        n_bins=(1, 2, 5, *range(10, 161, 10)),
        min_per_bin=30,
        pop_min=30,
        fit_min_bins=1,
        abscissa="sqrt(N)",
        stats=("ence_sd", "zve"),
    ),
}


def settings_of(preset) -> SweepSettings:
    """Return the :class:`SweepSettings` of a preset name (or the settings themselves)."""
    if isinstance(preset, SweepSettings):
        return preset
    try:
        return PRESETS[preset]
    except KeyError:
        raise InputError(
            f"unknown extrapolation preset {preset!r}; choose one of {', '.join(PRESETS)}"
        ) from None


def bin_numbers(M: int, settings: SweepSettings) -> np.ndarray:
    """Bin numbers of the sweep for M points: the candidates with M/N > ``min_per_bin``.

    Parameters
    ----------
    M : int
        Number of points.
    settings : SweepSettings
        Sweep settings (a preset's, :data:`PRESETS`).

    Raises
    ------
    InputError
        When fewer than three bin numbers remain for the fit (too few points).
    """
    n = np.array([k for k in settings.n_bins if M / k > settings.min_per_bin], dtype=np.int64)
    n = np.array([k for k in n if reduce_n_bins(M, int(k), pop_min=settings.pop_min) == k])
    if (n >= settings.fit_min_bins).sum() < 3:
        raise InputError(
            f"too few points for the zero-bin extrapolation: M={M} leaves "
            f"{int((n >= settings.fit_min_bins).sum())} bin numbers to fit (need 3; "
            f"M/N > {settings.min_per_bin} with N >= {settings.fit_min_bins})"
        )
    return n


def sweep_statistics(E_sorted, u_sorted, n_bins, stats, *, pop_min: int = SWEEP_POP_MIN,
                     rows: int = 1) -> np.ndarray:
    """Binned statistics for several numbers of equal-count bins, from one prefix sum.

    Parameters
    ----------
    E_sorted : array_like, shape (..., M)
        Errors sorted by the conditioning variable (rows: data sets).
    u_sorted : array_like, shape (M,) or same shape as ``E_sorted``
        Uncertainties in the same order (shared by every row, or one row per data set).
    n_bins : sequence of int
        Numbers of equal-count bins (:func:`uqx.engine.binning.equal_count_edges`).
    stats : sequence of str
        Scalar binned statistics of :data:`uqx.engine.statistic.STATISTICS`.
    pop_min : int
    rows : int, default 1
        Data sets whose statistics are evaluated together (one prefix sum each,
        :func:`uqx.engine.statistic.prefix_bin_features`; then the formulas on ``rows`` data sets
        at once, which pays the Python overhead once per batch). With ``rows=1`` a row's
        bits never depend on the rows beside it; larger batches may differ by 1 ulp in the
        mean over bins, so callers keep the batches aligned to fixed blocks.

    Returns
    -------
    numpy.ndarray, shape (..., len(n_bins), len(stats))
    """
    E = np.asarray(E_sorted, dtype=np.float64)
    M = E.shape[-1]
    flat = E.reshape(-1, M)
    U = np.asarray(u_sorted, dtype=np.float64)
    U = np.broadcast_to(U, E.shape).reshape(-1, M) if U.ndim > 1 else U
    edges = [equal_count_edges(M, int(n), pop_min=pop_min) for n in n_bins]
    out = np.empty((flat.shape[0], len(n_bins), len(stats)))
    rows = max(1, int(rows))
    P = np.empty((min(rows, flat.shape[0]), M + 1, 6))
    for lo in range(0, flat.shape[0], rows):
        hi = min(lo + rows, flat.shape[0])
        for r in range(lo, hi):
            prefix_bin_features(flat[r], U[r] if U.ndim > 1 else U, out=P[r - lo])
        for i, e in enumerate(edges):
            S = np.diff(P[: hi - lo, e], axis=1)
            cnt = np.diff(e).astype(np.float64)
            for j, name in enumerate(stats):
                out[lo:hi, i, j] = STATISTICS[name].finish(S, cnt)
    return out.reshape(E.shape[:-1] + out.shape[1:])


class LineFit(NamedTuple):
    """Least-squares line with the standard errors of its coefficients."""

    intercept: np.ndarray
    intercept_se: np.ndarray
    slope: np.ndarray
    slope_se: np.ndarray


def ols_fit(x, y):
    r"""Closed-form OLS ``lm(y ~ x)`` over the last axis, vectorised over leading axes.

    .. math:: \hat b = \frac{\sum (x-\bar x)(y-\bar y)}{\sum (x-\bar x)^2},\quad
              \hat a = \bar y - \hat b\bar x,\quad
              s^2 = \frac{\sum r^2}{n-2},\quad
              SE(\hat a) = s\sqrt{\frac1n + \frac{\bar x^2}{\sum (x-\bar x)^2}}

    Parameters
    ----------
    x : array_like, shape (n,)
        Abscissae.
    y : array_like, shape (..., n)
        Ordinates, one series per leading index.

    Returns
    -------
    LineFit
        ``(intercept, intercept_se, slope, slope_se)``, as :func:`scipy.stats.linregress`
        (``intercept_stderr``, ``stderr``).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = x.shape[-1]
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # inf/NaN y: NaN
        xm = x.mean(axis=-1, keepdims=True)
        ym = y.mean(axis=-1, keepdims=True)
        sxx = np.sum((x - xm) ** 2, axis=-1)
        slope = np.sum((x - xm) * (y - ym), axis=-1) / sxx
        intercept = ym[..., 0] - slope * xm[..., 0]
        resid = y - (intercept[..., None] + slope[..., None] * x)
        s2 = np.sum(resid**2, axis=-1) / (n - 2)
        slope_se = np.sqrt(s2 / sxx)
        intercept_se = np.sqrt(s2 * (1.0 / n + xm[..., 0] ** 2 / sxx))
    return LineFit(intercept, intercept_se, slope, slope_se)


def fit_points(n_bins, settings, M):
    """Return the bin numbers kept for the fit (mask) and their abscissae."""
    keep = n_bins >= settings.fit_min_bins
    return keep, settings.abscissa_of(n_bins[keep], M)


#: Statistics of the fused null kernel (:func:`_sweep_three`), in its output order.
BINNED_FUSED = ("ence", "zmse", "zve")

#: Columns of the sweep's prefix sums of a copy (:func:`partition_stats`): Σu², ΣE²,
#: Σz², Σz (the bin features u2, E2, z2, z, with z = ε); the positions of the tuple
#: :func:`sweep_terms` returns.
P_U2, P_E2, P_Z2, P_Z = range(4)


# The sweep's layout declared once: what a value of a copy adds (_sweep_three and the
# draws of uqx.inference.extrapolate.null), read by partition_stats.
@numba.njit(inline="always")
def sweep_terms(eps, u):
    """Return what one value ε of a copy E = uε adds to the sweep's sums: (u², E², ε², ε).

    Parameters
    ----------
    eps : float
        The unit draw ε (the copy's z-score, exactly).
    u : float
        The uncertainty of its position.

    Returns
    -------
    tuple of 4
        Indexed by :data:`P_U2`, :data:`P_E2`, :data:`P_Z2`, :data:`P_Z`.
    """
    x = u * eps
    return u * u, x * x, eps * eps, eps


@numba.njit(inline="always")
def add_sweep_row(P, j, t):
    """Set the next prefix sums: ``P[j + 1] = P[j] + t`` (``t`` a 4-tuple)."""
    P[j + 1, 0] = P[j, 0] + t[0]
    P[j + 1, 1] = P[j, 1] + t[1]
    P[j + 1, 2] = P[j, 2] + t[2]
    P[j + 1, 3] = P[j, 3] + t[3]


@numba.njit(inline="always")
def partition_stats(P, pos, edges, offsets, out, r):  # pragma: no cover - numba
    """ENCE, ZMSE, ZVE of every bin partition from prefix sums (one copy, numba).

    ``P[j] = (Σu², ΣE², Σz², Σz)`` over the positions before ``pos[j]``; the bins of
    partition l are ``[pos[edges[o]], pos[edges[o + 1]])`` for ``o`` in
    ``offsets[l]:offsets[l+1]``. The terms of each bin come from
    :func:`uqx.engine.statistic.per_bin_terms`; ``out[r, l]`` receives the mean ENCE and
    ZMSE terms and ``exp`` of the mean ZVE term. The one evaluation of the sweep shared by
    :func:`sweep_three`, :func:`sweep_from_range_sums` and the draws of
    :func:`uqx.inference.extrapolate.null.sweep_copies`.
    """
    for li in range(offsets.size - 1):
        a0, a1 = offsets[li], offsets[li + 1]
        nb = a1 - a0 - 1
        s_ence = 0.0
        s_zmse = 0.0
        s_zve = 0.0
        for b in range(nb):
            lo, hi = edges[a0 + b], edges[a0 + b + 1]
            t_ence, t_zmse, t_zve = per_bin_terms(
                P[hi, P_U2] - P[lo, P_U2], P[hi, P_E2] - P[lo, P_E2],
                P[hi, P_Z2] - P[lo, P_Z2], P[hi, P_Z] - P[lo, P_Z], pos[hi] - pos[lo])
            s_ence += t_ence
            s_zmse += t_zmse
            s_zve += t_zve
        out[r, li, 0] = s_ence / nb
        out[r, li, 1] = s_zmse / nb
        out[r, li, 2] = np.exp(s_zve / nb)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _sweep_three(eps, u, edges, offsets, out):  # pragma: no cover - numba
    """ENCE, ZMSE, ZVE of copies ``u * eps[r]`` for every bin partition (one pass each).

    ``edges[offsets[i]:offsets[i+1]]``: the index edges of partition i of the sorted data;
    prefix sums over every position, then :func:`partition_stats`.
    """
    k, M = eps.shape
    pos = np.arange(M + 1)
    P = np.empty((M + 1, 4))
    for r in range(k):  # serial: the callers run in parallel (dask tasks)
        P[0, 0] = P[0, 1] = P[0, 2] = P[0, 3] = 0.0
        for i in range(M):
            add_sweep_row(P, i, sweep_terms(eps[r, i], u[i]))
        partition_stats(P, pos, edges, offsets, out, r)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _sweep_ranges(sums, u2, pos, edges, offsets, out):  # pragma: no cover - numba
    """:func:`partition_stats` of copies given by their sums over ranges of positions."""
    R = u2.size
    P = np.empty((R + 1, 4))
    for r in range(sums.shape[0]):
        P[0, 0] = P[0, 1] = P[0, 2] = P[0, 3] = 0.0
        for j in range(R):  # the copies' sums (uqx.engine.copies) in the sweep's layout
            add_sweep_row(P, j, (u2[j], sums[r, j, C_X2], sums[r, j, C_EPS2], sums[r, j, C_EPS]))
        partition_stats(P, pos, edges, offsets, out, r)


def sweep_edges(M, n_bins, *, pop_min: int = SWEEP_POP_MIN):
    """Edges of the equal-count partitions of a sweep: ``(edges, offsets)``.

    ``edges[offsets[l]:offsets[l+1]]`` are the position edges of the partition into
    ``n_bins[l]`` bins (:func:`uqx.engine.binning.equal_count_edges`).
    """
    parts = [equal_count_edges(int(M), int(n), pop_min=pop_min) for n in n_bins]
    offsets = np.cumsum([0] + [e.size for e in parts]).astype(np.int64)
    return np.concatenate(parts).astype(np.int64), offsets


def sweep_from_range_sums(sums, u2, bounds, n_bins, *, pop_min: int = SWEEP_POP_MIN):
    """ENCE, ZMSE, ZVE of the sweep from a copy's sums over ranges of positions.

    The twin of :func:`sweep_three` for copies known by their sums only (the joint-normal
    copies of :mod:`uqx.engine.gaussian_sums`): equal to it, within rounding, when the sums
    are those of ``u_sorted * eps`` (tested).

    Parameters
    ----------
    sums : numpy.ndarray, shape (k, R, 4)
        (Σε², Σu²ε², Σuε, Σε) of each copy over the ranges ``[bounds[j], bounds[j+1])``.
    u2 : numpy.ndarray, shape (R,)
        Σu² over each range.
    bounds : numpy.ndarray of int, shape (R + 1,)
        Range boundaries (positions in the order of u), holding every edge of the sweep.
    n_bins : sequence of int

    Returns
    -------
    numpy.ndarray, shape (k, len(n_bins), 3)
    """
    bounds = np.asarray(bounds, dtype=np.int64)
    edges, offsets = sweep_edges(bounds[-1], n_bins, pop_min=pop_min)
    idx = np.searchsorted(bounds, edges)
    if not np.array_equal(bounds[idx], edges):
        raise ValueError("the range boundaries must hold every edge of the sweep")
    out = np.empty((sums.shape[0], offsets.size - 1, 3))
    _sweep_ranges(np.ascontiguousarray(sums, dtype=np.float64),
                  np.ascontiguousarray(u2, dtype=np.float64), bounds, idx, offsets, out)
    return out


def sweep_three(eps, u_sorted, n_bins, *, pop_min: int = SWEEP_POP_MIN) -> np.ndarray:
    """ENCE, ZMSE, ZVE of calibrated copies ``u_sorted * eps`` for several bin numbers.

    The fused twin of :func:`sweep_statistics` for the null copies (one numba pass per
    copy, no temporaries): equal to it to 1e-12 relative (tested).

    Parameters
    ----------
    eps : array_like, shape (k, M)
        Unit draws laid out in the order of ``u_sorted``.
    u_sorted : array_like, shape (M,)
    n_bins : sequence of int

    Returns
    -------
    numpy.ndarray, shape (k, len(n_bins), 3)
    """
    eps = np.ascontiguousarray(np.atleast_2d(eps), dtype=np.float64)
    u = np.ascontiguousarray(u_sorted, dtype=np.float64)
    edges, offsets = sweep_edges(u.size, n_bins, pop_min=pop_min)
    out = np.empty((eps.shape[0], offsets.size - 1, 3))
    _sweep_three(eps, u, edges, offsets, out)
    return out
