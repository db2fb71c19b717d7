"""Bin-based statistics over index intervals (numpy kernels, last axis).

Inputs are **already sorted** by the conditioning variable (uE for consistency, X or V
for adaptivity; see :mod:`uqx.binning`) with any NaN padding at the end, and ``edges``
are 0-based bin boundaries: bin ``j`` holds sorted positions ``edges[j] .. edges[j+1]-1``
(METHODS.md §3–4). Per-bin sums come from one prefix sum per quantity, so every statistic
costs O(M + N) and is vectorised over leading (set, replicate) axes.
"""

from __future__ import annotations

import numpy as np
from scipy import stats as _sps

from uqx.stats.calibration import paired

__all__ = [
    "bin_sums",
    "bin_index",
    "per_bin",
    "ence",
    "uce",
    "zmse",
    "zve",
    "lzisd",
    "picp",
    "unit_quantile",
]


def _edges(edges, lead_shape):
    edges = np.asarray(edges, dtype=np.int64)
    return np.broadcast_to(edges, tuple(lead_shape) + edges.shape[-1:])


def bin_sums(x, edges):
    r"""Sum ``x`` over index intervals: :math:`S_j = \sum_{i=e_j}^{e_{j+1}-1} x_i`.

    Parameters
    ----------
    x : array_like, shape (..., M)
        Values in binning order.
    edges : array_like of int, shape (N+1,) or (..., N+1)
        0-based bin boundaries.

    Returns
    -------
    numpy.ndarray, shape (..., N)
    """
    x = np.asarray(x, dtype=np.float64)
    c = np.zeros(x.shape[:-1] + (x.shape[-1] + 1,))
    np.cumsum(x, axis=-1, out=c[..., 1:])
    e = _edges(edges, x.shape[:-1])
    at = np.take_along_axis(c, e, axis=-1)
    return np.diff(at, axis=-1)


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
    r"""Per-bin statistics of sorted (E, u) (METHODS §4).

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
    r"""Compute the expected normalised calibration error ENCE (000 Eq. 15; 002 Eq. 6).

    .. math:: \mathrm{ENCE} = \frac{1}{N}\sum_{j=1}^N \frac{|\mathrm{RMV}_j - S_j|}
              {\mathrm{RMV}_j}

    with :math:`S_j = \mathrm{RMSE}_j` (``kind="rmse"``: papers 000, 001, 004) or
    :math:`S_j = \mathrm{sd}(E)_j` (``kind="sd"``, n−1: paper 002 and the primer's
    reliability diagrams; METHODS §4.1, §13.5). Only the sums it needs are computed.
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


def zmse(E, uE, edges):
    r"""Mean absolute log of the per-bin ZMS (000 Eq. 17).

    .. math:: \mathrm{ZMSE} = \frac{1}{N}\sum_{j=1}^N |\ln \mathrm{ZMS}_j|
    """
    E, u, e, n = _prepared(E, uE, edges)
    z = E / u
    with np.errstate(divide="ignore"):
        return np.mean(np.abs(np.log(_bin_mean(z * z, e, n))), axis=-1)


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


def unit_quantile(p, *, dist="normal", nu=None):
    r"""Quantile of a unit-variance generative distribution D (METHODS §6).

    ``dist="normal"``: :math:`\Phi^{-1}(p)`; ``dist="t"``: unit-variance Student
    :math:`t_s(\nu) = t(\nu)/\sqrt{\nu/(\nu-2)}`, requires :math:`\nu > 2`.
    """
    p = np.asarray(p, dtype=np.float64)
    if dist == "normal":
        return _sps.norm.ppf(p)
    if dist == "t":
        if nu is None or not nu > 2:
            raise ValueError(f"unit-variance Student t needs nu > 2, got {nu}")
        return _sps.t.ppf(p, nu) / np.sqrt(nu / (nu - 2.0))
    raise ValueError(f"dist must be 'normal' or 't', got {dist!r}")


def picp(E, uE, prob, *, dist="normal", nu=None, axis=-1):
    r"""Prediction-interval coverage probability (003 Eq. 10; METHODS §4.5).

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
