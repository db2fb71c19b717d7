r"""Curves of a whole set behind the figures of :mod:`uqx.plot` (methods: curves).

* :func:`confidence_curve` — statistic after removing the k % largest u, oracle,
  probabilistic reference with its 95 % band, optional bootstrap band (the engine's
  resampling plans);
* :func:`calibration_curve`, :func:`conditional_calibration` — coverage of quantile
  intervals against their probability, over the set or per bin, with Wilson-cc bands;
* :func:`running_quantiles` — Harrell–Davis quantiles on sliding windows.

The per-bin diagnostics (LCP, reliability diagram, LZISD) are
:mod:`uqx.inference.curves.binned`; the inputs, :mod:`uqx.inference.curves.sets`.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.model import InputError
from uqx.dataio.schema import CALIBRATION_CURVE
from uqx.engine.binning import bin_sums, sliding_windows
from uqx.engine.defaults import LEVEL, N_BINS_LOCAL, POP_MIN
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
from uqx.inference.curves.sets import (
    bin_attrs,
    conditioning,
    curve_bins,
    mid_range,
    one_set,
    per_set,
)
from uqx.inference.zeta import binomial_ci

__all__ = [
    "CONFIDENCE_STATS",
    "calibration_curve",
    "conditional_calibration",
    "confidence_curve",
    "running_quantiles",
]

#: Statistics of the confidence curves (ErrViewLib ``Sconf``; v1.7.1+ names).
CONFIDENCE_STATS = ("rmse", "mae", "rmsd", "q95")

#: float64 arrays of one replicate's size held at once by the curve computations (draws or
#: resampled values, their sorted copy, cumulative sums): blocks of replicates are sized
#: so that these fit the engine's memory budget (:data:`uqx.engine.resample.MEMORY_BUDGET`).
_ROW_ARRAYS = 4


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


@per_set
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
        Root seed of the keyed streams (keyed by the set's content: uE for the reference,
        (E, uE) for the bootstrap band; never by its name).

    Returns
    -------
    xarray.Dataset
        Over ``fraction`` (= k/100): ``curve``, ``oracle``, ``reference``, ``ref_low``,
        ``ref_high`` [, ``boot_low``, ``boot_high``]; coordinates ``k`` and ``u_threshold``
        (largest u kept); attrs ``statistic``, ``dist``, ``nu``, ``n_rep``, ``seed``,
        scores ``auco`` = Σ|c − oracle|, ``dfpr`` = Σ|c − ref|, ``up95``.
    """
    sd = one_set(data, uE)
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
        # never change the draws. Keyed by the content of uE (the reference never looks at
        # E), as the reference members that ignore E are (uqx.inference.reference), never
        # by the set's name
        state = stream_state(seed_sequence(seed, "confidence", content_key(sd.uE), dist, nu or 0))
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


@per_set
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
    sd = one_set(data, uE)
    p = _default_probs() if prob is None else np.asarray(prob, dtype=np.float64)
    q = unit_quantile(p, dist=dist, nu=nu)
    eta = np.mean(sd.E[:, None] <= sd.uE[:, None] * q[None, :], axis=0)
    lo, hi = binomial_ci(eta * sd.M, sd.M, method="wilsoncc", level=level)
    area, up = _miscal(p, eta, lo, hi)
    return xr.Dataset(
        CALIBRATION_CURVE.data_vars({"eta": eta, "ci_low": lo, "ci_high": hi}),
        coords=CALIBRATION_CURVE.data_vars({"prob": p}),
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


@per_set
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
    sd = one_set(data, uE)
    x, cname = conditioning(sd, by)
    finite = np.asarray(x, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    if finite.size and finite.min() == finite.max():
        raise InputError(
            f"{sd.name}: {cname} takes one value ({finite[0]:g}) on all {finite.size} rows: "
            f"bins of {cname} would split equal values by row order, not by {cname}; the "
            "conditional calibration is one bin, the calibration curve itself (uqx.plot."
            "calibration, or 'uqx plot calibration' without --conditional)")
    bins = curve_bins(x, n_bins, binning, pop_min, log)
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
            "x_mid": ("bin", mid_range(x[bins.order], bins.edges)),
            "miscal_area": ("bin", [_miscal(p, e)[0] for e in eta]),
            "band_low": ("prob", lo),
            "band_high": ("prob", hi),
        },
        coords={"bin": np.arange(bins.n_bins), "prob": p},
        attrs={**bin_attrs(bins, cname), "dist": dist, "nu": float(nu or 0), "M": sd.M},
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
