"""Slow, obvious twins of the package's statistics and random stream (test oracles only).

The package defines every statistic once, from per-sample or per-bin sums
(:mod:`uqx.engine.statistic`), fed by numba accumulators (:mod:`uqx.engine.evaluator`). These are
independent plain-numpy versions, written from methods: average calibration formula by formula
(NaN-aware, over the last axis), against which the fast routes are tested.

:class:`PyStream` is the pure-Python xoshiro256** behind the keyed streams of
:mod:`uqx.engine.resample` and :mod:`uqx.engine.generators` (tests of both).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats as _sps  # noqa: F401

from uqx.engine.stats.correlation import paired
from uqx.engine.unit_variance import unit_quantile  # noqa: F401

_CAL = [
    "LN_2PI",
    "paired",
    "mv",
    "mse",
    "rmv",
    "rmse",
    "rce",
    "mean_z",
    "t_z",
    "var_z",
    "zms",
    "nll",
    "nll_ref",
]

#: ln(2 pi), exact (ErrViewLib's ``nllFun`` uses the rounded 1.837877).
LN_2PI = float(np.log(2.0 * np.pi))


def _nanmean(x, axis):
    with np.errstate(invalid="ignore", divide="ignore"):
        n = np.sum(~np.isnan(x), axis=axis)
        s = np.nansum(x, axis=axis)
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def mv(uE, *, axis=-1):
    r"""Mean variance :math:`\mathrm{MV} = \langle u^2 \rangle` (methods: average calibration).

    Examples
    --------
    >>> float(mv([1.0, 3.0]))
    5.0
    """
    u = np.asarray(uE, dtype=np.float64)
    return _nanmean(u * u, axis)


def mse(E, *, axis=-1):
    r"""Mean squared error :math:`\mathrm{MSE} = \langle E^2 \rangle` (uncentred)."""
    E = np.asarray(E, dtype=np.float64)
    return _nanmean(E * E, axis)


def rmv(uE, *, axis=-1):
    r"""Root mean variance :math:`\mathrm{RMV} = \sqrt{\langle u^2 \rangle}`."""
    return np.sqrt(mv(uE, axis=axis))


def rmse(E, *, axis=-1):
    r"""Root mean squared error :math:`\mathrm{RMSE} = \sqrt{\langle E^2 \rangle}`."""
    return np.sqrt(mse(E, axis=axis))


def rce(E, uE, *, axis=-1):
    r"""Relative calibration error (paper 004 Eq. 7, 001 Eq. 7, 000 Eq. 10).

    .. math:: \mathrm{RCE} = \frac{\mathrm{RMV} - \mathrm{RMSE}}{\mathrm{RMV}}

    Reference value 0 for calibrated uncertainties.

    Examples
    --------
    >>> round(float(rce([1.0, -1.0], [1.0, 1.0])), 12)
    0.0
    """
    E, u = paired(E, uE)
    a = rmv(u, axis=axis)
    return (a - rmse(E, axis=axis)) / a


def mean_z(E, uE, *, axis=-1):
    r"""Mean z-score :math:`\langle Z \rangle`, :math:`Z = E/u` (000 Table III)."""
    E, u = paired(E, uE)
    return _nanmean(E / u, axis)


def t_z(E, uE, *, axis=-1):
    r"""Studentised mean z-score :math:`\langle Z\rangle / \sqrt{\mathrm{Var}(Z)/n}`.

    NaN where the two-pass variance is within 64 ulps of ΣZ²/(n − 1) (no spread).
    """
    E, u = paired(E, uE)
    z = E / u
    n = np.sum(~np.isnan(z), axis=axis)
    v = var_z(E, uE, axis=axis)
    floor = 64 * np.finfo(np.float64).eps * np.nansum(z * z, axis=axis) / (n - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(v > floor, mean_z(E, uE, axis=axis) / np.sqrt(v / n), np.nan)


def var_z(E, uE, *, axis=-1):
    r"""Sample variance of z-scores, denominator :math:`n-1` (001 Eq. 10, 004 Eq. 10: target 1)."""
    E, u = paired(E, uE)
    z = E / u
    n = np.sum(~np.isnan(z), axis=axis)
    m = _nanmean(z, axis)
    d = z - np.expand_dims(m, axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 1, np.nansum(d * d, axis=axis) / (n - 1), np.nan)


def zms(E, uE, *, axis=-1):
    r"""Mean squared z-score (001 Eq. 11, 000 Eq. 14).

    .. math:: \mathrm{ZMS} = \langle Z^2 \rangle = \frac{1}{M}\sum_i (E_i/u_i)^2

    Reference value 1 for calibrated uncertainties.

    Examples
    --------
    >>> float(zms([2.0, 0.0], [1.0, 1.0]))
    2.0
    """
    E, u = paired(E, uE)
    z = E / u
    return _nanmean(z * z, axis)


def nll(E, uE, *, axis=-1):
    r"""Mean negative log-likelihood under a normal model (000 Eq. 15).

    .. math:: \mathrm{NLL} = \tfrac12\left(\langle Z^2\rangle + \langle \ln u^2\rangle
              + \ln 2\pi\right)
    """
    E, u = paired(E, uE)
    return 0.5 * (zms(E, u, axis=axis) + _nanmean(np.log(u * u), axis) + LN_2PI)


def nll_ref(uE, *, axis=-1):
    r"""Return the reference NLL of calibrated normal errors (:math:`\langle Z^2\rangle = 1`).

    .. math:: \mathrm{NLL}_{ref} = \tfrac12\left(1 + \langle \ln u^2\rangle + \ln 2\pi\right)
    """
    u = np.asarray(uE, dtype=np.float64)
    return 0.5 * (1.0 + _nanmean(np.log(u * u), axis) + LN_2PI)


def _edges(edges, lead_shape):
    edges = np.asarray(edges, dtype=np.int64)
    return np.broadcast_to(edges, tuple(lead_shape) + edges.shape[-1:])


def bin_sums(x, edges):
    r"""Sum ``x`` over index intervals, bin by bin: :math:`S_j = \sum_{i=e_j}^{e_{j+1}-1} x_i`.

    Each bin is summed on its own (no running sum), so a bin keeps its digits next to
    large values in other bins; positions past the last edge (NaN padding) are ignored.
    ``x`` (..., M), ``edges`` (N+1,) or (..., N+1) -> (..., N).

    Examples
    --------
    >>> bin_sums([1.0, 2.0, 3.0, 4.0], [0, 1, 1, 4]).tolist()
    [1.0, 0.0, 9.0]
    """
    x = np.asarray(x, dtype=np.float64)
    e = _edges(edges, x.shape[:-1])
    pos = np.arange(x.shape[-1])
    inside = [(pos >= e[..., j, None]) & (pos < e[..., j + 1, None])
              for j in range(e.shape[-1] - 1)]
    return np.stack([np.sum(np.where(m, x, 0.0), axis=-1) for m in inside], axis=-1)


def bin_index(edges, M):
    """Bin number of every sorted position (``-1`` beyond the last edge), shape (..., M)."""
    e = np.asarray(edges, dtype=np.int64)
    lead = e.shape[:-1]
    rows = int(np.prod(lead, dtype=np.int64))
    inner = np.minimum(e[..., 1:-1], M).reshape(rows, -1)
    flat = (inner + (M + 1) * np.arange(rows)[:, None]).ravel()
    # bincount counts repeated edges (empty bins) correctly
    marks = np.bincount(flat, minlength=rows * (M + 1)).reshape(lead + (M + 1,))
    idx = np.cumsum(marks[..., :M], axis=-1)
    return np.where(np.arange(M) >= e[..., -1:], -1, idx)


def _centred_bin_ss(x, edges, means):
    """Per-bin sum of squared deviations from the bin means (two-pass, stable)."""
    M = x.shape[-1]
    idx = bin_index(edges, M)
    centre = np.take_along_axis(means, np.maximum(idx, 0), axis=-1)
    d = np.where(idx >= 0, x - centre, 0.0)
    return bin_sums(d * d, edges)


def per_bin(E, uE, edges):
    r"""Per-bin statistics of sorted (E, u) (methods: binned statistics).

    Returns a dict of arrays of shape (..., N) with keys ``n`` (counts), ``mean_u``,
    ``mv`` (:math:`\langle u^2\rangle_j`), ``mse`` (:math:`\langle E^2\rangle_j`), ``rmv``,
    ``rmse``, ``mean_e``, ``var_e`` and ``sd_e`` (n−1), ``zms``
    (:math:`\langle Z^2\rangle_j`), ``mean_z``, ``var_z`` (n−1) and
    ``lzisd`` (:math:`\mathrm{Var}(Z)_j^{-1/2}`).
    """
    E, u = paired(E, uE)
    e = _edges(edges, E.shape[:-1])
    n = np.diff(e, axis=-1).astype(np.float64)
    z = E / u
    with np.errstate(invalid="ignore", divide="ignore"):
        s_u = bin_sums(u, e)
        s_u2 = bin_sums(u * u, e)
        s_e = bin_sums(E, e)
        s_e2 = bin_sums(E * E, e)
        s_z = bin_sums(z, e)
        s_z2 = bin_sums(z * z, e)
        mean_e = s_e / n
        mean_z = s_z / n
        var_e = _centred_bin_ss(E, e, mean_e) / (n - 1)
        var_z = _centred_bin_ss(z, e, mean_z) / (n - 1)
        out = {
            "n": n,
            "mean_u": s_u / n,
            "mv": s_u2 / n,
            "mse": s_e2 / n,
            "mean_e": mean_e,
            "var_e": var_e,
            "zms": s_z2 / n,
            "mean_z": mean_z,
            "var_z": var_z,
        }
        out["rmv"] = np.sqrt(out["mv"])
        out["rmse"] = np.sqrt(out["mse"])
        out["sd_e"] = np.sqrt(var_e)
        out["lzisd"] = 1.0 / np.sqrt(var_z)
    return out


def _prepared(E, uE, edges):
    E, u = paired(E, uE)
    e = _edges(edges, E.shape[:-1])
    return E, u, e, np.diff(e, axis=-1).astype(np.float64)


def _bin_mean(x, e, n):
    with np.errstate(invalid="ignore", divide="ignore"):
        return bin_sums(x, e) / n


def _bin_var(x, e, n):
    """Per-bin variance (n-1), two-pass about the bin means."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return _centred_bin_ss(x, e, bin_sums(x, e) / n) / (n - 1)


def ence(E, uE, edges, *, kind="rmse"):
    r"""Compute the expected normalised calibration error ENCE (000 Eq. 11; 002 Eq. 6).

    .. math:: \mathrm{ENCE} = \frac{1}{N}\sum_{j=1}^N \frac{|\mathrm{RMV}_j - S_j|}
              {\mathrm{RMV}_j}

    with :math:`S_j = \mathrm{RMSE}_j` (``kind="rmse"``: papers 000, 001, 004) or
    :math:`S_j = \mathrm{sd}(E)_j` (``kind="sd"``, n−1: paper 002 and the primer's
    reliability diagrams; methods: binned statistics). Only the sums it needs are computed.
    """
    if kind not in ("rmse", "sd"):
        raise ValueError(f"ence: kind must be 'rmse' or 'sd', got {kind!r}")
    E, u, e, n = _prepared(E, uE, edges)
    rmv = np.sqrt(_bin_mean(u * u, e, n))
    s = np.sqrt(_bin_mean(E * E, e, n) if kind == "rmse" else _bin_var(E, e, n))
    return np.mean(np.abs(rmv - s) / rmv, axis=-1)


def uce(E, uE, edges):
    r"""Uncertainty calibration error :math:`\frac1N\sum_j |\mathrm{MV}_j - \mathrm{MSE}_j|`."""
    E, u, e, n = _prepared(E, uE, edges)
    return np.mean(np.abs(_bin_mean(u * u, e, n) - _bin_mean(E * E, e, n)), axis=-1)


def uce_w(E, uE, edges):
    r"""UCE weighted by the bin counts (Laves et al., netcal).

    .. math:: \sum_j \frac{n_j}{M} |\mathrm{MV}_j - \mathrm{MSE}_j|
    """
    E, u, e, n = _prepared(E, uE, edges)
    d = np.abs(_bin_mean(u * u, e, n) - _bin_mean(E * E, e, n))
    return np.sum(d * n / n.sum(axis=-1, keepdims=True), axis=-1)


def zmse(E, uE, edges):
    r"""Mean absolute log of the per-bin ZMS (000 Eq. 17).

    .. math:: \mathrm{ZMSE} = \frac{1}{N}\sum_{j=1}^N |\ln \mathrm{ZMS}_j|
    """
    E, u, e, n = _prepared(E, uE, edges)
    z = E / u
    with np.errstate(divide="ignore"):
        return np.mean(np.abs(np.log(_bin_mean(z * z, e, n))), axis=-1)


def zms_scan(E, uE, edges):
    r"""Largest :math:`\sqrt{n_A}\,|\ln \mathrm{ZMS}_A|` over the tails of bins, one by one.

    The obvious loop: for every k, the rows of bins k..N (upper tail, k = 1 the whole
    set) and of bins 1..k (lower tail, k < N), their ZMS from the rows themselves.
    """
    E = np.atleast_2d(np.asarray(E, dtype=np.float64))
    u = np.broadcast_to(np.asarray(uE, dtype=np.float64), E.shape)
    e = np.asarray(edges)
    N = e.size - 1
    out = np.empty(E.shape[0])
    for r in range(E.shape[0]):
        z2 = (E[r] / u[r]) ** 2
        tails = [z2[e[k]:e[N]] for k in range(N)] + [z2[e[0]:e[k]] for k in range(1, N)]
        with np.errstate(divide="ignore"):  # ZMS = 0 (all errors 0): +inf, as the package
            out[r] = max(math.sqrt(t.size) * abs(float(np.log(t.mean()))) for t in tails)
    return out


def zve(E, uE, edges):
    r"""Z-variance error (002 Eq. 9), reference 1.

    .. math:: \mathrm{ZVE} = \exp\left(\frac1N\sum_{j=1}^N |\ln \mathrm{Var}(Z)_j|\right)
    """
    E, u, e, n = _prepared(E, uE, edges)
    with np.errstate(divide="ignore"):
        return np.exp(np.mean(np.abs(np.log(_bin_var(E / u, e, n))), axis=-1))


def lzisd(E, uE, edges):
    r"""Local z-inverse standard deviation per bin, :math:`\mathrm{Var}(Z)_j^{-1/2}` (003)."""
    E, u, e, n = _prepared(E, uE, edges)
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(_bin_var(E / u, e, n))


def picp(E, uE, prob, *, dist="normal", nu=None, axis=-1):
    r"""Prediction-interval coverage probability (003 Eq. 10; methods: binned statistics).

    .. math:: \mathrm{PICP}_P = \frac1M \#\{i : |E_i| \le u_i\, q_D((1+P)/2)\}

    Parameters
    ----------
    prob : float or sequence of float
        Target probabilities P of the symmetric intervals.

    Returns
    -------
    numpy.ndarray
        Shape of the reduced input, plus a trailing axis of ``len(prob)`` when ``prob`` is
        a sequence.
    """
    E, u = paired(E, uE)
    E = np.moveaxis(E, axis, -1)
    u = np.moveaxis(u, axis, -1)
    P = np.atleast_1d(np.asarray(prob, dtype=np.float64))
    k = unit_quantile((1.0 + P) / 2.0, dist=dist, nu=nu)
    inside = np.abs(E)[..., None] <= u[..., None] * k
    valid = ~np.isnan(E)[..., None]
    out = np.sum(inside & valid, axis=-2) / np.sum(valid, axis=-2)
    return out if np.ndim(prob) else out[..., 0]


# ---------------------------------------------------------------- xoshiro256** twin
_M64 = (1 << 64) - 1


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & _M64


class PyStream:
    """xoshiro256** (Blackman & Vigna 2018 reference C code) on Python integers.

    ``next()`` (or iteration) gives the 64-bit outputs, ``u01()`` a double in [0, 1).
    """

    def __init__(self, state):
        self.s = [int(v) for v in state]

    def next(self):
        s = self.s
        out = (_rotl((s[1] * 5) & _M64, 7) * 9) & _M64
        t = (s[1] << 17) & _M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = _rotl(s[3], 45)
        return out

    __next__ = next

    def __iter__(self):
        return self

    def u01(self):
        return float(self.next() >> 11) * 2.0**-53


# ---------------------------------------------------------------- content order twin
def _splitmix64(x):
    """SplitMix64 finaliser of uint64 words (vectorised numpy, wrapping arithmetic)."""
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def content_order_lexsort(uE, *columns):
    """The first :func:`uqx.engine.binning.content_order`: one ``np.lexsort`` of all rows.

    The row hash ``h`` (SplitMix64 over the words of uE, then of each column) of every
    row, then ``np.lexsort((*columns[::-1], h, uE))``: by uE, ties by (h, columns), then
    by row (lexsort is stable). About 24 bytes a row of temporaries.
    """
    u = np.ascontiguousarray(uE, dtype=np.float64)
    cols = [np.ascontiguousarray(c, dtype=np.float64) for c in columns]
    with np.errstate(over="ignore"):
        h = _splitmix64(u.view(np.uint64) ^ np.uint64(0x9E3779B97F4A7C15))
        for c in cols:
            h = _splitmix64(h ^ c.view(np.uint64))
    return np.lexsort((*cols[::-1], h, u)).astype(np.int64, copy=False)
