r"""Numeric curve diagnostics behind the figures of :mod:`uqx.plot` (methods: binned statistics).

Every function takes one data set — an :class:`xarray.Dataset` with ``E``/``uE`` (and
``X``/``V``) or plain arrays — and returns an :class:`xarray.Dataset`; a stacked input
(``set`` dimension) gives a ``set`` dimension in the result (ragged ``bin`` dimensions are
padded with NaN). The engine provides the pieces: binning (:mod:`uqx.engine.binning`),
Harrell–Davis quantiles (:mod:`uqx.engine.stats.tailedness`), Wilson intervals
(:func:`~uqx.inference.zeta.binomial_ci`), unit-variance draws
(:func:`~uqx.engine.unit_variance.draw_unit`)
with keyed random streams (:func:`uqx.engine.resample.seed_sequence`).

* :func:`confidence_curve` — statistic after removing the k % largest u, oracle,
  probabilistic reference with its 95 % band, optional bootstrap band;
* :func:`calibration_curve`, :func:`conditional_calibration` —;
* :func:`running_quantiles` — (sliding windows, HD quantiles);
* :func:`lcp` — local coverage probabilities;
* :func:`reliability` — per-bin RMV against SD(E) or RMSE;
* :func:`local_z` — LZISD / LZV per bin with 'cho' or bootstrap intervals.
"""

from __future__ import annotations

import functools

import numpy as np
import xarray as xr
from scipy.special import ndtri

from uqx.dataio.model import InputError, SetData, from_arrays, iter_sets
from uqx.engine.binning import bin_sums, make_bins, sliding_windows
from uqx.engine.defaults import LEVEL, N_BINS_LOCAL, N_BOOT_CURVES, POP_MIN, local_bins
from uqx.engine.generators import stream_state
from uqx.engine.resample import (
    BootstrapPlan,
    content_key,
    resolve_seed,
    rows_for_budget,
    seed_sequence,
)
from uqx.engine.stats.tailedness import hd_quantile
from uqx.engine.unit_variance import draw_unit, unit_quantile
from uqx.inference.bootstrap import bootstrap_samples
from uqx.inference.zeta import binomial_ci

__all__ = [
    "CONFIDENCE_STATS",
    "calibration_curve",
    "conditional_calibration",
    "confidence_curve",
    "lcp",
    "local_z",
    "over_sets",
    "reliability",
    "running_quantiles",
    "varvar",
]

#: Statistics of the confidence curves (ErrViewLib ``Sconf``; v1.7.1+ names).
CONFIDENCE_STATS = ("rmse", "mae", "rmsd", "q95")

_Z975 = float(ndtri(0.975))  # qnorm(0.975) of the 'cho' intervals (methods: conventions)
#: float64 arrays of one replicate's size held at once by the curve computations (draws or
#: resampled values, their sorted copy, cumulative sums): blocks of replicates are sized
#: so that these fit the engine's memory budget (:data:`uqx.engine.resample.MEMORY_BUDGET`).
_ROW_ARRAYS = 4


# ------------------------------------------------------------------ input helpers
def over_sets(func, data, *args, **kwargs) -> xr.Dataset:
    """Apply a one-set curve function to each set of a stacked data set.

    Results are concatenated along ``set`` (outer join: ragged bins are NaN-padded);
    numeric attrs that differ between sets (scores such as ``miscal_area``) become
    variables over ``set``, the other attrs are those of the first set.
    """
    parts = [func(sd, *args, **kwargs) for sd in iter_sets(data)]
    names = [str(s) for s in data["set"].values]
    out = xr.concat(
        parts,
        dim=xr.DataArray(names, dims="set", name="set"),
        join="outer",
        combine_attrs="override",
        coords="different",
        compat="equals",
    )
    for key, v in parts[0].attrs.items():
        vals = [p.attrs.get(key, np.nan) for p in parts]
        if isinstance(v, int | float) and len(set(vals)) > 1:
            out[key] = ("set", np.asarray(vals, dtype=np.float64))
            del out.attrs[key]
    if "label" in data.coords:
        out = out.assign_coords(label=("set", data["label"].values))
    return out


def _one(data, uE=None) -> SetData:
    """Return the arrays of one set from a Dataset, a SetData or arrays."""
    if isinstance(data, SetData):
        return data
    if isinstance(data, xr.Dataset):
        sets = list(iter_sets(data))
        if len(sets) != 1:
            raise InputError("expected one data set; use over_sets() for stacked input")
        return sets[0]
    if uE is None:
        raise InputError("give a Dataset, or the arrays E and uE")
    return next(iter_sets(from_arrays(data, uE)))


def _per_set(func):
    """Decorate a one-set function: a stacked Dataset (``set`` dim) goes to over_sets."""

    @functools.wraps(func)
    def wrapper(data, *args, **kwargs):
        if isinstance(data, xr.Dataset) and "set" in data.dims:
            return over_sets(func, data, *args, **kwargs)
        return func(data, *args, **kwargs)

    return wrapper


def _cond(sd: SetData, by) -> tuple[np.ndarray, str]:
    if isinstance(by, str):
        return sd.variable(by), by
    arr = np.asarray(by, dtype=np.float64)
    if arr.shape != sd.E.shape:
        raise InputError(f"conditioning array has shape {arr.shape}, expected {sd.E.shape}")
    return arr, "x"


def _bins(x, n_bins, binning, pop_min, log):
    n_bins = local_bins(int(np.isfinite(x).sum())) if n_bins is None else n_bins
    return make_bins(x, n_bins, scheme=binning, pop_min=pop_min, log=log)


def _mid_range(xs, edges):
    first = np.minimum(edges[:-1], xs.size - 1)
    last = np.maximum(edges[1:] - 1, 0)
    return np.where(np.diff(edges) > 0, (xs[first] + xs[last]) / 2, np.nan)


def _bin_attrs(bins, cond):
    return {
        "binning": bins.scheme,
        "n_bins_requested": bins.n_requested,
        "n_bins": bins.n_bins,
        "pop_min": bins.pop_min,
        "log_bins": int(bins.log),
        "cond": cond,
    }


# ------------------------------------------------------------------ confidence curves
def _removed(M: int, k) -> np.ndarray:
    """Points removed at k %: floor(k M / 100), with R's remove-one quirk for M < 100."""
    n_rm = (np.asarray(k, dtype=np.int64) * M) // 100
    return np.where((np.asarray(k) >= 1) & (n_rm == 0), 1, n_rm)


def _curve_sorted(E_sorted, n_rm, stat):
    """Statistic of E_sorted[..., n:] for every n in n_rm, by suffix sums (O(M))."""
    M = E_sorted.shape[-1]
    keep = (M - n_rm).astype(np.float64)

    def suffix(x):
        c = np.cumsum(x[..., ::-1], axis=-1)[..., ::-1]
        c = np.concatenate([c, np.zeros(c.shape[:-1] + (1,))], axis=-1)
        return c[..., n_rm]

    if stat == "rmse":
        return np.sqrt(suffix(E_sorted**2) / keep)
    if stat == "mae":
        return suffix(np.abs(E_sorted)) / keep
    if stat == "rmsd":
        # centring by the overall mean keeps the one-pass variance accurate
        ec = E_sorted - np.mean(E_sorted, axis=-1, keepdims=True)
        s1, s2 = suffix(ec), suffix(ec**2)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sqrt(np.maximum(s2 - s1**2 / keep, 0.0) / (keep - 1))
    if stat == "q95":
        ae = np.abs(E_sorted)
        return np.stack([hd_quantile(ae[..., n:], 0.95) for n in n_rm], axis=-1)
    raise InputError(f"confidence curve statistic must be one of {CONFIDENCE_STATS}: {stat!r}")


@_per_set
def confidence_curve(
    data,
    uE=None,
    *,
    stat="rmse",
    k=None,
    dist="normal",
    nu=None,
    n_rep=500,
    oracle=True,
    n_boot=0,
    normalize=False,
    level=LEVEL,
    seed=0,
) -> xr.Dataset:
    r"""Confidence curve: statistic of E after removing the k % largest uncertainties.

    Sort (E, u) by u descending (stable), drop the first :math:`\lfloor kM/100 \rfloor`
    points and compute :math:`c_S(k) = S(E_{kept})`, S = RMSE, MAE, RMSD (sd, n−1) or
    Q95 = hd(abs(E), 0.95) (ErrViewLib ``Sconf``/``plotCC``; methods: curves). All k come from
    one sort and suffix sums. The **oracle** orders E by abs(E) instead of u. The
    **probabilistic reference** averages the curves of ``n_rep`` simulated errors
    :math:`\tilde E = u\,\epsilon`, ε ~ N(0,1) or :math:`t_s(\nu)`, its band is the HD
    (0.025, 0.975) quantiles of the replicate curves per k. With ``n_boot > 0`` a
    percentile bootstrap band of the data curve is added (resampled pairs re-sorted by u;
    a simplification of ``plotCCVal``'s BCa).

    Parameters
    ----------
    data : xarray.Dataset or array_like
        Data set (stacked: one curve per set) or errors E.
    uE : array_like, optional
        Uncertainties when ``data`` is an array.
    stat : {"rmse", "mae", "rmsd", "q95"}, default "rmse"
    k : array_like of int, optional
        Percentages removed, default 0..99.
    dist, nu : {"normal", "t"}, float
        Generative distribution of the reference (default normal) and its ν.
    n_rep, n_boot : int, default 500, 0
        Reference replicates (``plotCC``; 0 skips it), bootstrap replicates of the band.
    oracle, normalize : bool, default True, False
        Add the oracle; divide every curve by the data value at k = 0.
    level : float, default 0.95
        Level of the reference and bootstrap bands.
    seed : int, default 0
        Root seed of the keyed streams.

    Returns
    -------
    xarray.Dataset
        Over ``fraction`` (= k/100): ``curve``, ``oracle``, ``reference``, ``ref_low``,
        ``ref_high`` [, ``boot_low``, ``boot_high``]; coordinates ``k`` and ``u_threshold``
        (largest u kept); attrs ``statistic``, ``dist``, ``nu``, ``n_rep``, ``seed``,
        scores ``auco`` = Σ|c − oracle|, ``dfpr`` = Σ|c − ref|, ``up95``.
    """
    sd = _one(data, uE)
    seed = resolve_seed(seed)
    k = np.arange(100) if k is None else np.asarray(k, dtype=np.int64)
    if np.any((k < 0) | (k > 99)):
        raise InputError("confidence curve: k must lie in 0..99 (percent removed)")
    M, order = sd.M, np.argsort(-sd.uE, kind="stable")
    u_s, E_s = sd.uE[order], sd.E[order]
    n_rm = _removed(M, k)
    out = {"curve": _curve_sorted(E_s, n_rm, stat)}
    if oracle:
        out["oracle"] = _curve_sorted(sd.E[np.argsort(-np.abs(sd.E), kind="stable")], n_rm, stat)
    a = (1 - level) / 2
    if n_rep:
        # one keyed xoshiro256** stream (uqx.engine.generators), copy after copy: the batches
        # never change the draws
        state = stream_state(seed_sequence(seed, "confidence", sd.name, dist, nu or 0))
        sims = np.concatenate(
            [
                _curve_sorted(u_s * draw_unit(state, (b, M), dist=dist, nu=nu), n_rm, stat)
                for b in _blocks(n_rep, M)
            ]
        )
        out["reference"] = np.nanmean(sims, axis=0)
        lo_hi = hd_quantile(sims, [a, 1 - a], axis=0)
        out["ref_low"], out["ref_high"] = lo_hi[:, 0], lo_hi[:, 1]
    if n_boot:
        out["boot_low"], out["boot_high"] = _boot_band(sd, n_rm, stat, n_boot, seed, a)
    c0 = _curve_sorted(E_s, np.zeros(1, np.int64), stat)[0]
    if normalize:
        out = {key: v / c0 for key, v in out.items()}
    attrs = {
        "statistic": stat,
        "dist": dist,
        "nu": float(nu or 0),
        "n_rep": int(n_rep),
        "n_boot": int(n_boot),
        "seed": int(seed),
        "level": float(level),
        "normalized": int(normalize),
        "M": M,
    }
    if not normalize:
        if oracle:
            attrs["auco"] = float(np.sum(np.abs(out["curve"] - out["oracle"])))
        if n_rep:
            attrs["dfpr"] = float(np.sum(np.abs(out["curve"] - out["reference"])))
            dev = np.sum(np.abs(sims - out["reference"]), axis=-1)
            attrs["up95"] = float(hd_quantile(dev, 0.95))
    return xr.Dataset(
        {key: ("fraction", v) for key, v in out.items()},
        coords={
            "fraction": k / 100.0,
            "k": ("fraction", k),
            "u_threshold": ("fraction", u_s[np.minimum(n_rm, M - 1)]),
        },
        attrs=attrs,
    )


def _boot_band(sd, n_rm, stat, n_boot, seed, a):
    """Percentile band of the confidence curve over resampled (E, u) pairs.

    The resamples are the engine's (:class:`~uqx.engine.resample.BootstrapPlan`, keyed by
    the set's content): a resample sorted by decreasing u is the sorted set with each
    point repeated as often as it was drawn.
    """
    order = np.argsort(-sd.uE, kind="stable")
    E_s = sd.E[order]
    plan = BootstrapPlan(
        M=sd.M, n_boot=n_boot, seed=resolve_seed(seed), key=("cc-boot", content_key(sd.E, sd.uE))
    )
    positions = np.arange(sd.M)
    boots = []
    for b in range(plan.n_blocks):
        for counts in plan.iter_counts(b, batch=_rows(sd.M)):
            c = counts[:, order].ravel()
            idx = np.repeat(np.tile(positions, counts.shape[0]), c).reshape(-1, sd.M)
            boots.append(_curve_sorted(E_s[idx], n_rm, stat))
    return np.quantile(np.concatenate(boots), [a, 1 - a], axis=0)


def _rows(M):
    """Replicates of M values processed at once: the engine's memory budget."""
    return rows_for_budget(M * 8 * _ROW_ARRAYS)


def _blocks(n, M):
    """Split n replicates into blocks that fit the memory budget (:func:`_rows`)."""
    size = _rows(M)
    return [min(size, n - s) for s in range(0, n, size)]


# ------------------------------------------------------------------ calibration curves
def _default_probs():
    return 0.005 + np.arange(199) * 0.005  # R seq(0.005, 0.995, 0.005)


def _miscal(p, eta, lo=None, hi=None):
    """Return misCal = ∫|η − p|dp, misCalUp = ½∫(U − L)dp; (0,0), (1,1) appended."""
    pp = np.r_[0.0, p, 1.0]
    area = float(np.trapezoid(np.abs(np.r_[0.0, eta, 1.0] - pp), pp))
    up = np.nan
    if lo is not None:
        up = float(0.5 * np.trapezoid(np.r_[0.0, hi, 1.0] - np.r_[0.0, lo, 1.0], pp))
    return area, up


@_per_set
def calibration_curve(
    data, uE=None, *, prob=None, dist="normal", nu=None, level=LEVEL
) -> xr.Dataset:
    r"""Calibration curve of quantile-based intervals (ErrViewLib ``plotCalibration``).

    .. math:: \eta_p = \frac1M \#\{i : E_i \le u_i\, q_D(p)\}

    with :math:`q_D` the quantile of the unit-variance D (normal or :math:`t_s(\nu)`);
    a Wilson-cc band around the empirical curve (x = ηM, n = M); miscalibration area
    :math:`\int_0^1 |\eta - p|\,dp` by trapezoids with (0,0) and (1,1) appended
    (methods: curves).

    Parameters
    ----------
    data : xarray.Dataset, path or array_like
        One data set (``E``, ``uE``; ``X``, ``V`` when present) or several stacked on
        ``set`` (the result then has a ``set`` dimension); or the errors E as an array.
    uE : array_like, optional
        Uncertainties, when ``data`` is the errors as an array.
    prob : array_like, optional
        Probabilities p (default 0.005, 0.010, ..., 0.995).
    dist : {"normal", "t"}, default "normal"
        Generative distribution D of the intervals (unit-variance).
    nu : float, optional
        Degrees of freedom of :math:`t_s(\nu)` when ``dist="t"``.
    level : float, default LEVEL (0.95)
        Confidence level of the intervals.

    Returns
    -------
    xarray.Dataset
        Over ``prob``: ``eta``, ``ci_low``, ``ci_high``; attrs ``miscal_area``,
        ``miscal_up``, ``cal_err`` = √Σ(p − η)², ``dist``, ``nu``.
    """
    sd = _one(data, uE)
    p = _default_probs() if prob is None else np.asarray(prob, dtype=np.float64)
    q = unit_quantile(p, dist=dist, nu=nu)
    eta = np.mean(sd.E[:, None] <= sd.uE[:, None] * q[None, :], axis=0)
    lo, hi = binomial_ci(eta * sd.M, sd.M, method="wilsoncc", level=level)
    area, up = _miscal(p, eta, lo, hi)
    return xr.Dataset(
        {
            "eta": ("prob", eta, {"long_name": "observed fraction E <= u q_D(p)"}),
            "ci_low": ("prob", lo),
            "ci_high": ("prob", hi),
        },
        coords={"prob": ("prob", p, {"long_name": "target probability"})},
        attrs={
            "miscal_area": area,
            "miscal_up": up,
            "cal_err": float(np.sqrt(np.sum((p - eta) ** 2))),
            "dist": dist,
            "nu": float(nu or 0),
            "M": sd.M,
            "level": level,
        },
    )


@_per_set
def conditional_calibration(
    data,
    uE=None,
    *,
    by="uE",
    prob=None,
    dist="normal",
    nu=None,
    n_bins=N_BINS_LOCAL,
    binning="equal-count",
    pop_min=POP_MIN,
    log=True,
    level=LEVEL,
) -> xr.Dataset:
    r"""Conditional calibration curves: one :func:`calibration_curve` per bin of ``by``.

    Bins on the conditioning variable (default 15 equal-count bins, popMin 30); the
    Wilson-cc band is drawn around the identity with x = pM/N, n = M/N (ErrViewLib
    ``plotCalibrationQ``; methods: curves).

    Parameters
    ----------
    data : xarray.Dataset, path or array_like
        One data set (``E``, ``uE``; ``X``, ``V`` when present) or several stacked on
        ``set`` (the result then has a ``set`` dimension); or the errors E as an array.
    uE : array_like, optional
        Uncertainties, when ``data`` is the errors as an array.
    by : {"uE", "X", "V"} or array_like, default "uE"
        Conditioning variable of the bins.
    prob : array_like, optional
        Probabilities p (default 0.005, 0.010, ..., 0.995).
    dist : {"normal", "t"}, default "normal"
        Generative distribution D of the intervals (unit-variance).
    nu : float, optional
        Degrees of freedom of :math:`t_s(\nu)` when ``dist="t"``.
    n_bins : int, optional
        Number of bins (default N_BINS_LOCAL, 15).
    binning : {"equal-count", "equal-width", "adaptive"}, default "equal-count"
        Binning scheme.
    pop_min : int, default POP_MIN (30)
        Minimum bin population.
    log : bool, default True
        Adaptive bins on the log of the conditioning variable.
    level : float, default LEVEL (0.95)
        Confidence level of the intervals.

    Returns
    -------
    xarray.Dataset
        ``eta(bin, prob)``, ``miscal_area(bin)``, ``x_mid(bin)``, ``n(bin)``,
        ``band_low(prob)``, ``band_high(prob)``.
    """
    sd = _one(data, uE)
    x, cname = _cond(sd, by)
    bins = _bins(x, n_bins, binning, pop_min, log)
    p = _default_probs() if prob is None else np.asarray(prob, dtype=np.float64)
    q = unit_quantile(p, dist=dist, nu=nu)
    E, u = sd.E[bins.order], sd.uE[bins.order]
    n = bins.counts.astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        eta = bin_sums(E[None, :] <= q[:, None] * u[None, :], bins.edges).T / n[:, None]
    m = sd.M / bins.n_bins
    lo, hi = binomial_ci(p * m, m, method="wilsoncc", level=level)
    return xr.Dataset(
        {
            "eta": (("bin", "prob"), eta),
            "n": ("bin", n),
            "x_mid": ("bin", _mid_range(x[bins.order], bins.edges)),
            "miscal_area": ("bin", [_miscal(p, e)[0] for e in eta]),
            "band_low": ("prob", lo),
            "band_high": ("prob", hi),
        },
        coords={"bin": np.arange(bins.n_bins), "prob": p},
        attrs={**_bin_attrs(bins, cname), "dist": dist, "nu": float(nu or 0), "M": sd.M},
    )


# ------------------------------------------------------------------ running quantiles
def running_quantiles(x, y, *, n_bins=None, level=LEVEL, pop_min=POP_MIN) -> xr.Dataset:
    r"""Compute running HD quantiles of y on sliding windows of the data sorted by x.

    Window width :math:`L = \lfloor n/N \rfloor` with default
    :math:`N = \lceil 2 n^{0.333} \rceil` (ErrViewLib ``plotEvsPU``); for every window
    the Harrell–Davis quantiles at :math:`(1 \mp p)/2` and the window mid-range of x
    (methods: bins).

    Parameters
    ----------
    x, y : array_like, shape (n,)
        Abscissa (sorting variable) and ordinate (E or Z); NaN pairs are dropped.
    n_bins : int, optional
        Number of bins setting the window width.
    level : float, default 0.95
        Central probability p of the quantile pair.

    Returns
    -------
    xarray.Dataset
        Over ``window``: ``x_mid``, ``q_low``, ``q_high``, ``median``.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    n = x.size
    n_bins = int(np.ceil(2 * n**0.333)) if n_bins is None else n_bins
    starts, stops = sliding_windows(n, n_bins, pop_min=pop_min)
    order = np.argsort(x, kind="stable")
    xs, ys = x[order], y[order]
    width = int(stops[0] - starts[0])
    a = (1 - level) / 2
    view = np.lib.stride_tricks.sliding_window_view(ys, width)
    step = _rows(width)
    q = np.concatenate(
        [
            hd_quantile(np.sort(view[s : s + step], axis=-1), [a, 0.5, 1 - a], sorted=True)
            for s in range(0, view.shape[0], step)
        ]
    )
    out = {
        "x_mid": (xs[starts] + xs[stops - 1]) / 2,
        "q_low": q[:, 0],
        "median": q[:, 1],
        "q_high": q[:, 2],
    }
    return xr.Dataset(
        {k: ("window", v) for k, v in out.items()},
        attrs={"n_bins": int(n_bins), "width": width, "level": level},
    )


# ------------------------------------------------------------------ binned curves
@_per_set
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
    sd = _one(data, uE)
    P = np.atleast_1d(np.asarray(prob, dtype=np.float64))
    given = U is not None
    if U is None:
        U = sd.uE[:, None] * unit_quantile((1 + P) / 2, dist=dist, nu=nu)[None, :]
    U = np.asarray(U, dtype=np.float64).reshape(sd.M, P.size)
    x, cname = _cond(sd, by)
    bins = _bins(x, n_bins, binning, pop_min, log)
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
            "x_mid": ("bin", _mid_range(x[bins.order], bins.edges)),
            "picp": ("prob", tot / sd.M),
            "picp_low": ("prob", plo),
            "picp_high": ("prob", phi),
        },
        coords={"bin": np.arange(bins.n_bins), "prob": P},
        attrs={
            **_bin_attrs(bins, cname),
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
        return s, s - half, s + half
    v = np.var(values, ddof=1)
    vv = np.sqrt(max(varvar(values), 0.0))
    if kind == "sd":
        s, half = np.sqrt(v), _Z975 * vv / (2 * np.sqrt(v))
    elif kind == "var_z":
        s, half = v, _Z975 * vv
    else:  # lzisd = 1/sd(Z)
        s, half = 1 / np.sqrt(v), _Z975 * vv / (2 * v**1.5)
    return s, s - half, s + half


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
        return est, lo, hi
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
    return est, lo, hi


@_per_set
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
    sd = _one(data, uE)
    x, cname = _cond(sd, by)
    bins = _bins(x, n_bins, binning, pop_min, log)
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
            **_bin_attrs(bins, cname),
            "kind": kind,
            "ci_method": ci,
            "ence": float(np.nanmean(np.abs(rmv - y) / rmv)),
            "seed": seed,
        },
    )


@_per_set
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
    sd = _one(data, uE)
    x, cname = _cond(sd, by)
    bins = _bins(x, n_bins, binning, pop_min, log)
    seed = resolve_seed(seed)
    z = (sd.E / sd.uE)[bins.order]
    cfg = dict(ci=ci, n_boot=n_boot, seed=seed, level=level)
    est, lo, hi = _per_bin_ci(kind, z, bins.edges, **cfg)
    f, flo, fhi = _per_bin_ci(kind, z, np.array([0, z.size]), **cfg)
    valid = ((lo - 1) * (hi - 1) <= 0).astype(np.float64)
    return xr.Dataset(
        {
            "estimate": ("bin", est),
            "ci_low": ("bin", lo),
            "ci_high": ("bin", hi),
            "x_mid": ("bin", _mid_range(x[bins.order], bins.edges)),
            "n": ("bin", bins.counts.astype(np.float64)),
            "valid": ("bin", valid),
            "full": f[0],
            "full_low": flo[0],
            "full_high": fhi[0],
        },
        coords={"bin": np.arange(bins.n_bins)},
        attrs={
            **_bin_attrs(bins, cname),
            "stat": stat,
            "ci_method": ci,
            "seed": seed,
            "frac_valid": float(np.nanmean(valid)),
            "target": 1.0,
        },
    )
