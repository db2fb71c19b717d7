r"""Interval-based validation: PICP, and the local range ratio (003 Sect. II B, IV C).

Some UQ methods give prediction intervals instead of standard uncertainties: the
half-range :math:`U_{i,P}` of the symmetric interval of probability P (HU2022: conformal
factors times a feature or latent distance). Others give uE, and intervals follow from
an assumed generative distribution D: :math:`U_P = u\,q_D((1+P)/2)` (methods: binned statistics).

* **PICP** (prediction-interval coverage probability, 003 Eq. 10): the fraction of errors
  inside their interval, :math:`\#\{|E_i| \le U_{i,P}\}/M`, with a binomial interval;
  valid when P lies inside it. Per bin of a conditioning variable it is the LCP
  (:func:`uqx.inference.curves.binned.lcp`).
* **LRR** (local range ratio, methods: binned statistics, ErrViewLib ``plotLRR``): per bin,
  :math:`2\sqrt{\langle U^2\rangle} / (\mathrm{hd}(E, (1+P)/2) - \mathrm{hd}(E, (1-P)/2))`,
  the theoretical interval width over the empirical one (Harrell–Davis quantiles),
  target 1, with a BCa interval (nptest conventions, exact jackknife) on the bootstrap
  engine (:class:`~uqx.engine.resample.BootstrapPlan`).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import xarray as xr

from uqx.dataio.model import InputError, check_sets, iter_sets
from uqx.dataio.schema import LRR, PICP
from uqx.engine.binning import make_bins
from uqx.engine.confidence import bca_interval, interval_contains
from uqx.engine.defaults import LEVEL, N_BINS_LOCAL, POP_MIN
from uqx.engine.resample import BootstrapPlan, content_key, resolve_seed, rows_for_budget
from uqx.engine.stats.tailedness import hd_quantile, hd_weights
from uqx.engine.unit_variance import unit_quantile
from uqx.inference.zeta import binomial_ci

__all__ = ["half_ranges", "picp", "local_range_ratio"]


def half_ranges(ds: xr.Dataset, prob=(0.68, 0.95), *, dist="normal", nu=None) -> xr.DataArray:
    r"""Interval half-ranges ``U(sample, prob)`` of one data set.

    The dataset's own ``U`` when it has one (interval-based UQ, e.g. HU2022), else
    :math:`U_P = u_E\,q_D((1+P)/2)` for the generative distribution D (normal, or the
    unit-variance Student t_s(ν)).

    Parameters
    ----------
    ds : xarray.Dataset
        One data set.
    prob : sequence of float
        Probability levels P.
    dist : {"normal", "t"}, default "normal"
        Generative distribution D of the intervals (unit-variance).
    nu : float, optional
        Degrees of freedom of :math:`t_s(\nu)` when ``dist="t"``.

    Returns
    -------
    xarray.DataArray
        ``U(sample, prob)``.
    """
    if "U" in ds:
        have = [float(p) for p in ds["prob"].values]
        missing = [p for p in np.atleast_1d(prob) if not np.any(np.isclose(have, p))]
        if missing:
            raise InputError(f"the data set has intervals for P = {have}, not for {missing}")
        return ds["U"].sel(prob=list(np.atleast_1d(prob)), method="nearest")
    P = np.atleast_1d(np.asarray(prob, dtype=np.float64))
    k = unit_quantile((1 + P) / 2, dist=dist, nu=nu)
    return xr.DataArray(ds["uE"].values[..., None] * k, dims=ds["uE"].dims + ("prob",),
                        coords={"prob": P})


def picp(ds, prob=(0.68, 0.95), *, dist="normal", nu=None, level=LEVEL) -> xr.Dataset:
    r"""Prediction-interval coverage probability of every set (003 Eq. 10).

    .. math:: \mathrm{PICP}_P = \frac1M\,\#\{i : |E_i| \le U_{i,P}\}

    with its Wilson interval (methods: ζ-scores); ``valid`` when P lies inside it.

    With intervals built from uE (no ``U`` in the data), ``valid`` tests the pair
    (uE, D): calibrated uncertainties whose errors are not shaped like D are rejected
    (measured in the documentation, "How to read the verdicts": e.g. always for uniform
    errors, whatever D). It is a diagnostic of intervals, not a verdict on uE.

    Parameters
    ----------
    ds : xarray.Dataset
        One set or several (``set`` dim); intervals from ``U`` or from uE (see
        :func:`half_ranges`).
    prob : sequence of float
        Probabilities P of the intervals.

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``prob``): ``picp``, ``picp_low``, ``picp_high``, ``valid``.
    """
    P = np.atleast_1d(np.asarray(prob, dtype=np.float64))
    given = isinstance(ds, xr.Dataset) and "U" in ds and "set" not in ds.dims
    checked = check_sets(ds)  # the same input checks as every entry point
    out = np.full((checked.data.sizes["set"], P.size), np.nan)
    n = np.zeros(checked.data.sizes["set"], dtype=np.int64)
    for i, sd in enumerate(iter_sets(checked)):
        if given:  # one set with its own intervals (rows unchanged by the checks)
            U = half_ranges(ds, P).values
        else:
            U = sd.uE[:, None] * unit_quantile((1 + P) / 2, dist=dist, nu=nu)
        out[i] = np.mean(np.abs(sd.E)[:, None] <= U, axis=0)
        n[i] = sd.M
    lo, hi = binomial_ci(np.round(out * n[:, None]), np.broadcast_to(n[:, None], out.shape),
                         method="wilson", level=level)
    return xr.Dataset(
        PICP.data_vars({"picp": out, "picp_low": lo, "picp_high": hi,
                        "valid": interval_contains(lo, hi, P)}, level=level),
        coords={"set": checked.data["set"].values, "prob": P},
        attrs={"intervals": "given U" if given else f"uE x q_{dist}((1+P)/2)",
               "nu": float(nu) if nu is not None else np.nan},
    )


def _lrr(E, U, P):
    """Local range ratio of one bin: 2 sqrt(<U²>) / (hd(E,(1+P)/2) - hd(E,(1-P)/2))."""
    q = hd_quantile(E, [(1 - P) / 2, (1 + P) / 2])
    return 2.0 * np.sqrt(np.mean(U * U, axis=-1)) / (q[..., 1] - q[..., 0])


def _hd_leave_one_out(xs, q):
    r"""Harrell–Davis quantile of sorted ``xs`` without each value in turn, O(n).

    Leaving out sorted position i keeps the order of the rest, so the value is
    :math:`\sum_{k<i} w_k x_k + \sum_{k>i} w_{k-1} x_k` with the weights w of n − 1
    points (:func:`~uqx.engine.stats.tailedness.hd_weights`): two cumulative sums, clipped
    to the range of the remaining values as :func:`hd_quantile` clips.
    """
    n = xs.size
    w = hd_weights(n - 1, q)
    head = np.concatenate([[0.0], np.cumsum(w * xs[:-1])])  # sum_{k<i} w_k x_k
    tail = np.concatenate([np.cumsum((w * xs[1:])[::-1])[::-1], [0.0]])  # sum_{k>i} w_{k-1} x_k
    lo = np.where(np.arange(n) == 0, xs[min(1, n - 1)], xs[0])
    hi = np.where(np.arange(n) == n - 1, xs[max(n - 2, 0)], xs[-1])
    return np.clip(head + tail, lo, hi)


@numba.njit(nogil=True, cache=True)
def _expand_counts(xs, u2, C, rs, s2):  # pragma: no cover - numba
    """Expand each row r of the counts C into ``rs[r]`` and ``s2[r]``.

    ``rs[r]``: xs repeated by C[r] (sorted when xs is); ``s2[r]``: the sum of u2 weighted
    by C[r].
    """
    for r in range(C.shape[0]):
        p = 0
        acc = 0.0
        for i in range(C.shape[1]):
            c = C[r, i]
            acc += c * u2[i]
            for _ in range(c):
                rs[r, p] = xs[i]
                p += 1
        s2[r] = acc


class BootstrapSample(NamedTuple):
    """A statistic's estimate, its bootstrap distribution (t0 first) and jackknife values."""

    t0: float
    replicates: np.ndarray
    jack: np.ndarray


def _lrr_bin(E, U, P, plan):
    r"""LRR of one bin, its bootstrap distribution (t0 first) and its jackknife values.

    Resamples are the counts of ``plan`` (:class:`~uqx.engine.resample.BootstrapPlan`)
    over the bin's values sorted by E: a resample's sorted errors are the sorted values
    repeated by their counts (no sort per replicate; :func:`_expand_counts`). The
    jackknife is analytic (O(n)): :math:`\sum U^2 - U_i^2` and :func:`_hd_leave_one_out`.
    """
    t0 = _lrr(E, U, P)
    o = np.argsort(E, kind="stable")
    xs, u2 = E[o], U[o] * U[o]
    n = xs.size
    probs = [(1 - P) / 2, (1 + P) / 2]
    T = [np.array([t0])]
    batch = rows_for_budget(3 * 8 * n)
    for b in range(plan.n_blocks):
        for C in plan.iter_counts(b, batch):
            rs, s2 = np.empty(C.shape), np.empty(C.shape[0])
            _expand_counts(xs, u2, C, rs, s2)
            q = hd_quantile(rs, probs, sorted=True)
            T.append(2.0 * np.sqrt(s2 / n) / (q[:, 1] - q[:, 0]))
    s2 = np.sum(u2)
    width = _hd_leave_one_out(xs, probs[1]) - _hd_leave_one_out(xs, probs[0])
    jack = 2.0 * np.sqrt((s2 - u2) / (n - 1)) / width
    return BootstrapSample(t0, np.concatenate(T), jack)


def local_range_ratio(E, U, cond, *, prob: float = 0.95, n_bins: int = N_BINS_LOCAL,
                      binning: str = "equal-count", pop_min: int = POP_MIN, n_boot: int = 1000,
                      seed: int | None = None, level: float = LEVEL) -> xr.Dataset:
    r"""Local range ratio per bin of a conditioning variable (methods: binned statistics), with BCa.

    .. math:: \mathrm{LRR}_j = \frac{2\sqrt{\langle U_P^2\rangle_j}}
              {\mathrm{hd}(E_j, \tfrac{1+P}{2}) - \mathrm{hd}(E_j, \tfrac{1-P}{2})}

    (target 1: the intervals are as wide as the errors' own central P range). Each bin is
    resampled ``n_boot`` times on the package's bootstrap engine
    (:class:`~uqx.engine.resample.BootstrapPlan`, keyed by the data's content and the
    bin); the BCa interval uses the exact jackknife of the bin, computed analytically in
    O(n) (nptest conventions, :func:`~uqx.engine.confidence.bca_interval`; ErrViewLib uses
    ``boot`` with regression influence values, methods: bootstrap).

    Parameters
    ----------
    E, U, cond : array_like, shape (M,)
        Errors, half-ranges of the P intervals, conditioning variable.
    prob : float, default 0.95
        Probability P of the intervals.
    n_bins, binning, pop_min :
        Bins of ``cond`` (:func:`uqx.engine.binning.make_bins`).
    n_boot : int, default 1000
        Bootstrap replicates per bin.
    seed : int, optional
        Root seed.
    level : float, default LEVEL (0.95)
        Confidence level of the BCa intervals.

    Returns
    -------
    xarray.Dataset
        Over ``bin``: ``lrr``, ``ci_low``, ``ci_high``, ``n``, ``x_mid``, ``valid``.
    """
    E, U, x = (np.asarray(a, dtype=np.float64) for a in (E, U, cond))
    if not (E.shape == U.shape == x.shape and E.ndim == 1):
        raise InputError(f"E, U and cond must be 1-d of equal length, got {E.shape}, "
                         f"{U.shape}, {x.shape}")
    if not 0 < prob < 1:
        raise InputError(f"prob must be in (0, 1), got {prob!r}")
    seed = resolve_seed(seed)
    bins = make_bins(x, n_bins, scheme=binning, pop_min=pop_min)
    key = content_key(E, U)
    N = bins.n_bins
    res = {k: np.full(N, np.nan) for k in ("lrr", "ci_low", "ci_high", "x_mid")}
    for j in range(N):
        idx = bins.order[bins.edges[j]:bins.edges[j + 1]]
        if idx.size < 3:
            continue
        plan = BootstrapPlan(idx.size, int(n_boot), seed, ("lrr", key, j))
        t0, T, jack = _lrr_bin(E[idx], U[idx], prob, plan)
        lo, hi, _, _ = bca_interval(T[:, None], [t0], jack[:, None], level=level)
        res["lrr"][j], res["ci_low"][j], res["ci_high"][j] = t0, lo[0], hi[0]
        res["x_mid"][j] = (x[idx].min() + x[idx].max()) / 2
    valid = interval_contains(res["ci_low"], res["ci_high"], 1.0)
    return xr.Dataset(
        LRR.data_vars({"lrr": res["lrr"], "ci_low": res["ci_low"], "ci_high": res["ci_high"],
                       "n": bins.counts, "x_mid": res["x_mid"], "valid": valid}, level=level),
        coords={"bin": np.arange(N)},
        attrs={"prob": float(prob), "n_boot": int(n_boot), "seed": int(seed),
               "binning_scheme": binning, "n_bins": int(N), "pop_min": int(pop_min)},
    )
