r"""Per-bin diagnostics behind the figures of :mod:`uqx.plot` (methods: binned statistics).

* :func:`lcp` — local coverage probabilities;
* :func:`reliability` — per-bin RMV against SD(E) or RMSE;
* :func:`local_z` — LZISD / LZV per bin with 'cho' or bootstrap intervals (the engine's
  bootstrap, :func:`~uqx.inference.bootstrap.bootstrap_samples`);
* :func:`varvar` — the variance of the sample variance of the 'cho' intervals.
"""

from __future__ import annotations

import numpy as np
import xarray as xr
from scipy.special import ndtri

from uqx.dataio.model import InputError
from uqx.engine.binning import bin_sums
from uqx.engine.confidence import EstimateInterval, interval_contains
from uqx.engine.defaults import LEVEL, N_BOOT_CURVES, POP_MIN
from uqx.engine.resample import (
    resolve_seed,
)
from uqx.engine.unit_variance import unit_quantile
from uqx.inference.bootstrap import bootstrap_samples
from uqx.inference.curves.sets import (
    bin_attrs,
    conditioning,
    curve_bins,
    mid_range,
    one_set,
    per_set,
)
from uqx.inference.zeta import binomial_ci

__all__ = ["lcp", "local_z", "reliability", "varvar"]

_Z975 = float(ndtri(0.975))  # qnorm(0.975) of the 'cho' intervals (methods: conventions)


@per_set
def lcp(
    data,
    uE=None,
    *,
    by="uE",
    U=None,
    prob=(0.25, 0.5, 0.75, 0.95),
    dist="normal",
    nu=None,
    n_bins=None,
    binning="equal-count",
    pop_min=POP_MIN,
    log=True,
    method="wilson",
    level=LEVEL,
) -> xr.Dataset:
    r"""Local coverage probabilities per bin and probability level (``plotLCP``).

    .. math:: \mathrm{LCP}_{j,P} = \frac1{n_j}\#\{i \in B_j : |E_i| \le U_{i,P}\}

    with :math:`U_P = u\,q_D((1+P)/2)` (variance-based UQ) or given half-ranges
    ``U(sample, prob)`` (HU2022 conformal intervals: ``data["U"]`` when present); Wilson
    intervals per bin and for the full set (methods: binned statistics).

    Parameters
    ----------
    data : xarray.Dataset, path or array_like
        One data set (``E``, ``uE``; ``X``, ``V`` when present) or several stacked on
        ``set`` (the result then has a ``set`` dimension); or the errors E as an array.
    uE : array_like, optional
        Uncertainties, when ``data`` is the errors as an array.
    by : {"uE", "X", "V"} or array_like, default "uE"
        Conditioning variable of the bins.
    U : array_like, optional
        Half-ranges ``(sample, prob)`` (default ``data["U"]`` or from D).
    prob : sequence of float
        Probability levels P.
    dist : {"normal", "t"}, default "normal"
        Generative distribution D of the intervals (unit-variance).
    nu : float, optional
        Degrees of freedom of :math:`t_s(\nu)` when ``dist="t"``.
    n_bins : int, optional
        Number of bins (default ``local_bins(M)``: max(min(M // 150, 15), 2)).
    binning : {"equal-count", "equal-width", "adaptive"}, default "equal-count"
        Binning scheme.
    pop_min : int, default POP_MIN (30)
        Minimum bin population.
    log : bool, default True
        Adaptive bins on the log of the conditioning variable.
    method : {"wilson", "wilsoncc"}, default "wilson"
        Binomial intervals (:func:`~uqx.inference.zeta.binomial_ci`).
    level : float, default LEVEL (0.95)
        Confidence level of the intervals.

    Returns
    -------
    xarray.Dataset
        ``coverage``, ``ci_low``, ``ci_high`` over (``bin``, ``prob``); ``x_mid``, ``n``
        over ``bin``; ``picp``, ``picp_low``, ``picp_high`` over ``prob``.
    """
    if U is None and isinstance(data, xr.Dataset) and "U" in data:
        U, prob = data["U"].transpose(..., "prob").values, data["prob"].values
        data = data.drop_vars(["U"])
    sd = one_set(data, uE)
    P = np.atleast_1d(np.asarray(prob, dtype=np.float64))
    given = U is not None
    if U is None:
        U = sd.uE[:, None] * unit_quantile((1 + P) / 2, dist=dist, nu=nu)[None, :]
    U = np.asarray(U, dtype=np.float64).reshape(sd.M, P.size)
    x, cname = conditioning(sd, by)
    bins = curve_bins(x, n_bins, binning, pop_min, log)
    inside = np.abs(sd.E)[:, None] <= U
    S = bin_sums(inside[bins.order].T, bins.edges).T
    n = bins.counts.astype(np.float64)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        lo, hi = binomial_ci(S, n, method=method, level=level)
        cov = S / n
    tot = inside.sum(axis=0).astype(np.float64)
    plo, phi = binomial_ci(tot, sd.M, method=method, level=level)
    return xr.Dataset(
        {
            "coverage": (("bin", "prob"), cov),
            "ci_low": (("bin", "prob"), lo),
            "ci_high": (("bin", "prob"), hi),
            "n": ("bin", n[:, 0]),
            "x_mid": ("bin", mid_range(x[bins.order], bins.edges)),
            "picp": ("prob", tot / sd.M),
            "picp_low": ("prob", plo),
            "picp_high": ("prob", phi),
        },
        coords={"bin": np.arange(bins.n_bins), "prob": P},
        attrs={
            **bin_attrs(bins, cname),
            "ci_method": method,
            "dist": dist,
            "nu": float(nu or 0),
            "intervals": "given U" if given else "uE",
        },
    )


def varvar(x, axis=-1):
    r"""Variance of the sample variance (Cho et al. 2005; methods: binned statistics).

    .. math:: \mathrm{varvar}(x) = \frac{m_4 - \frac{n-3}{n-1} m_2^2}{n}, \qquad
              m_k = \frac1n \sum (x - \bar x)^k

    Parameters
    ----------
    x : array_like
        Samples.
    axis : int, default -1
        Axis of the samples.

    Returns
    -------
    numpy.ndarray
        varvar along ``axis``.
    """
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape[axis], x - x.mean(axis=axis, keepdims=True)
    m2, m4 = np.mean(d**2, axis=axis), np.mean(d**4, axis=axis)
    return (m4 - (n - 3) / (n - 1) * m2**2) / n


def _cho(kind, values):
    """Estimate and 'cho' interval of one bin (kind: sd, rmse, var_z, lzisd)."""
    n = values.size
    if kind == "rmse":
        s = np.sqrt(np.mean(values**2))
        half = _Z975 * np.sqrt(np.var(values**2, ddof=1) / n) / (2 * s)
        return EstimateInterval(s, s - half, s + half)
    v = np.var(values, ddof=1)
    vv = np.sqrt(max(varvar(values), 0.0))
    if kind == "sd":
        s, half = np.sqrt(v), _Z975 * vv / (2 * np.sqrt(v))
    elif kind == "var_z":
        s, half = v, _Z975 * vv
    else:  # lzisd = 1/sd(Z)
        s, half = 1 / np.sqrt(v), _Z975 * vv / (2 * v**1.5)
    return EstimateInterval(s, s - half, s + half)


#: Engine statistic of each per-bin statistic (on the bin's values, u = 1) and the map
#: from it: sd and 1/sd come from the variance, rmse is the engine's own.
_VIA_ENGINE = {
    "sd": ("var_z", np.sqrt),
    "rmse": ("rmse", None),
    "var_z": ("var_z", None),
    "lzisd": ("var_z", lambda v: 1 / np.sqrt(v)),
}


def _per_bin_ci(kind, values, edges, *, ci, n_boot, seed, level):
    """Estimate and interval of one statistic per bin: 'cho' or the engine's bootstrap.

    'bootstrap': BCa with the exact jackknife of each bin
    (:func:`~uqx.inference.bootstrap.bootstrap_samples`, nptest conventions) of the
    variance (sd, 1/sd: the interval mapped through the monotone transform, as BCa allows)
    or of the RMSE; values are centred for the variance (it does not change it).
    """
    est, lo, hi = (np.full(edges.size - 1, np.nan) for _ in range(3))
    full = [j for j in range(edges.size - 1) if edges[j + 1] - edges[j] >= 3]
    if ci == "cho":
        for j in full:
            est[j], lo[j], hi[j] = _cho(kind, values[edges[j] : edges[j + 1]])
        return EstimateInterval(est, lo, hi)
    stat, g = _VIA_ENGINE[kind]
    samples = []
    for j in full:
        v = values[edges[j] : edges[j + 1]]
        samples.append((v - v.mean() if stat == "var_z" else v, np.ones_like(v)))
    r = bootstrap_samples(samples, stat, n_boot=n_boot, seed=resolve_seed(seed), level=level)
    if g is not None:
        with np.errstate(divide="ignore", invalid="ignore"):
            ends = np.sort(g(r[:, 1:]), axis=1)  # 1/sd reverses the order of the limits
            r = np.column_stack([g(r[:, 0]), ends])
    est[full], lo[full], hi[full] = r[:, 0], r[:, 1], r[:, 2]
    return EstimateInterval(est, lo, hi)


@per_set
def reliability(
    data,
    uE=None,
    *,
    kind="sd",
    n_bins=None,
    binning="equal-count",
    by="uE",
    pop_min=POP_MIN,
    log=True,
    ci="cho",
    n_boot=N_BOOT_CURVES,
    seed=0,
    level=LEVEL,
) -> xr.Dataset:
    r"""Reliability diagram values per bin (ErrViewLib ``plotRelDiag``; methods: binned statistics).

    :math:`x_j = \mathrm{RMV}_j = \sqrt{\langle u^2 \rangle_j}`, :math:`y_j = \mathrm{SD}_j`
    (sd of E, n−1; ``kind="sd"``) or :math:`\mathrm{RMSE}_j` (``kind="rmse"``). Intervals:
    'cho', :math:`S \pm z\sqrt{\mathrm{varvar}(E_j)}/(2\sqrt{v})` (RMSE: delta method on
    :math:`\langle E^2\rangle`), or per-bin BCa bootstrap with ``n_boot`` replicates and
    the exact (analytic) jackknife acceleration — nptest conventions instead of the boot
    package's regression influence values (methods: bootstrap allows this simplification).
    Bins are sorted by RMV.

    Parameters
    ----------
    data : xarray.Dataset, path or array_like
        One data set (``E``, ``uE``; ``X``, ``V`` when present) or several stacked on
        ``set`` (the result then has a ``set`` dimension); or the errors E as an array.
    uE : array_like, optional
        Uncertainties, when ``data`` is the errors as an array.
    kind : {"sd", "rmse"}, default "sd"
        Ordinate: SD(E) or RMSE per bin.
    n_bins : int, optional
        Number of bins (default ``local_bins(M)``: max(min(M // 150, 15), 2)).
    binning : {"equal-count", "equal-width", "adaptive"}, default "equal-count"
        Binning scheme.
    pop_min : int, default POP_MIN (30)
        Minimum bin population.
    log : bool, default True
        Adaptive bins on the log of the conditioning variable.
    by : {"uE", "X", "V"} or array_like, default "uE"
        Conditioning variable of the bins.
    ci : {"cho", "bootstrap"}, default "cho"
        Per-bin intervals: analytic (Cho et al.) or BCa bootstrap.
    n_boot : int, default N_BOOT_CURVES (500)
        Bootstrap replicates (``ci="bootstrap"``).
    seed : int, default 0
        Root seed of the bootstrap.
    level : float, default LEVEL (0.95)
        Confidence level of the intervals.

    Returns
    -------
    xarray.Dataset
        Over ``bin``: ``rmv``, ``y``, ``ci_low``, ``ci_high``, ``n``; attrs ``ence``
        (mean of abs(RMV − y)/RMV).
    """
    if kind not in ("sd", "rmse") or ci not in ("cho", "bootstrap"):
        raise InputError(f"reliability: kind sd|rmse, ci cho|bootstrap; got {kind!r}, {ci!r}")
    sd = one_set(data, uE)
    x, cname = conditioning(sd, by)
    bins = curve_bins(x, n_bins, binning, pop_min, log)
    seed = resolve_seed(seed)
    E, u = sd.E[bins.order], sd.uE[bins.order]
    with np.errstate(invalid="ignore", divide="ignore"):
        rmv = np.sqrt(bin_sums(u * u, bins.edges) / bins.counts)
    y, lo, hi = _per_bin_ci(kind, E, bins.edges, ci=ci, n_boot=n_boot, seed=seed, level=level)
    o = np.argsort(rmv, kind="stable")
    return xr.Dataset(
        {
            "rmv": ("bin", rmv[o]),
            "y": ("bin", y[o]),
            "ci_low": ("bin", lo[o]),
            "ci_high": ("bin", hi[o]),
            "n": ("bin", bins.counts[o].astype(np.float64)),
        },
        coords={"bin": np.arange(bins.n_bins)},
        attrs={
            **bin_attrs(bins, cname),
            "kind": kind,
            "ci_method": ci,
            "ence": float(np.nanmean(np.abs(rmv - y) / rmv)),
            "seed": seed,
        },
    )


@per_set
def local_z(
    data,
    uE=None,
    *,
    stat="lzisd",
    by="uE",
    n_bins=None,
    binning="equal-count",
    pop_min=POP_MIN,
    log=True,
    ci="cho",
    n_boot=N_BOOT_CURVES,
    seed=0,
    level=LEVEL,
) -> xr.Dataset:
    r"""LZISD (:math:`1/\mathrm{sd}(Z_j)`) or LZV (:math:`\mathrm{Var}(Z_j)`) per bin.

    Intervals: 'cho', :math:`v \pm z\sqrt{\mathrm{varvar}(Z_j)}` for LZV and
    :math:`s \pm z\sqrt{\mathrm{varvar}(Z_j)}/(2v^{3/2})` for LZISD; or 'bootstrap', per-bin
    BCa with ``n_boot`` replicates (use :func:`uqx.inference.bootstrap.bootstrap_per_bin` for the
    SimRef replicate scheme). The full-set value uses the same method. Target 1.

    Parameters
    ----------
    data : xarray.Dataset, path or array_like
        One data set (``E``, ``uE``; ``X``, ``V`` when present) or several stacked on
        ``set`` (the result then has a ``set`` dimension); or the errors E as an array.
    uE : array_like, optional
        Uncertainties, when ``data`` is the errors as an array.
    stat : {"lzisd", "lzv"}, default "lzisd"
        Statistic per bin.
    by : {"uE", "X", "V"} or array_like, default "uE"
        Conditioning variable of the bins.
    n_bins : int, optional
        Number of bins (default ``local_bins(M)``: max(min(M // 150, 15), 2)).
    binning : {"equal-count", "equal-width", "adaptive"}, default "equal-count"
        Binning scheme.
    pop_min : int, default POP_MIN (30)
        Minimum bin population.
    log : bool, default True
        Adaptive bins on the log of the conditioning variable.
    ci : {"cho", "bootstrap"}, default "cho"
        Per-bin intervals: analytic (Cho et al.) or BCa bootstrap.
    n_boot : int, default N_BOOT_CURVES (500)
        Bootstrap replicates (``ci="bootstrap"``).
    seed : int, default 0
        Root seed of the bootstrap.
    level : float, default LEVEL (0.95)
        Confidence level of the intervals.

    Returns
    -------
    xarray.Dataset
        Over ``bin``: ``estimate``, ``ci_low``, ``ci_high``, ``x_mid``, ``n``, ``valid``
        (1 inside the interval); scalars ``full``, ``full_low``, ``full_high``; attrs
        ``stat``, ``cond``, ``ci_method``, ``frac_valid``.
    """
    kind = {"lzisd": "lzisd", "lzv": "var_z"}.get(stat)
    if kind is None or ci not in ("cho", "bootstrap"):
        raise InputError(f"local_z: stat lzisd|lzv, ci cho|bootstrap; got {stat!r}, {ci!r}")
    sd = one_set(data, uE)
    x, cname = conditioning(sd, by)
    bins = curve_bins(x, n_bins, binning, pop_min, log)
    seed = resolve_seed(seed)
    z = (sd.E / sd.uE)[bins.order]
    ci_kw = dict(ci=ci, n_boot=n_boot, seed=seed, level=level)
    est, lo, hi = _per_bin_ci(kind, z, bins.edges, **ci_kw)
    f, flo, fhi = _per_bin_ci(kind, z, np.array([0, z.size]), **ci_kw)
    valid = interval_contains(lo, hi, 1.0).astype(np.float64)
    return xr.Dataset(
        {
            "estimate": ("bin", est),
            "ci_low": ("bin", lo),
            "ci_high": ("bin", hi),
            "x_mid": ("bin", mid_range(x[bins.order], bins.edges)),
            "n": ("bin", bins.counts.astype(np.float64)),
            "valid": ("bin", valid),
            "full": f[0],
            "full_low": flo[0],
            "full_high": fhi[0],
        },
        coords={"bin": np.arange(bins.n_bins)},
        attrs={
            **bin_attrs(bins, cname),
            "stat": stat,
            "ci_method": ci,
            "seed": seed,
            "frac_valid": float(np.nanmean(valid)),
            "target": 1.0,
        },
    )
