"""Bin-based figures: reliability diagram, LZISD/LZV and LCP (methods: binned statistics).

003 Figs. 4 (reliability diagrams), 5 and 10 (LZISD vs u and X), 6 and 11 (LCP), 19b/e
(HU2022 conformal intervals). Per-bin values come from :mod:`uqx.inference.curves`; bins
whose 95 % interval misses the target are drawn in vermillion, so that a failing set is seen
at a glance.
"""

from __future__ import annotations

import numpy as np

from uqx.dataio.model import InputError
from uqx.engine.confidence import interval_contains
from uqx.engine.defaults import N_BOOT_CURVES, POP_MIN, local_bins
from uqx.inference.bootstrap import bootstrap_per_bin
from uqx.inference.curves.binned import lcp as _lcp
from uqx.inference.curves.binned import local_z as _local_z
from uqx.inference.curves.binned import reliability as _reliability
from uqx.plot import style as S
from uqx.plot.inputs import as_sets, load, panel_titles, units_of

__all__ = ["reliability", "lzisd", "lzisd_of_result", "lcp", "CI_WORDS"]

#: Interval methods as the figures name them.
CI_WORDS = {"cho": "analytic (Cho)", "bootstrap": "BCa bootstrap per bin",
            "bootstrap-set": "BCa over whole-set resamples"}

_BIN_DOC = """n_bins : int, optional
        Number of bins (default ErrViewLib's max(min(M // 150, 15), 2)).
    binning : {"equal-count", "equal-width", "adaptive"}, default "equal-count"
        Binning scheme (:func:`uqx.engine.binning.make_bins`); ``log_bins`` for the last two.
    pop_min : int, default POP_MIN (30)
        Fewest points per bin (fewer bins than ``n_bins`` when needed)."""


def _bins_text(n, binning, ci=None) -> str:
    r"""Return ``"20 equal-count bins\n95 % CI: analytic (Cho)"``: what a panel shows.

    Two short lines, so that the note fits inside a panel a third of a page wide.
    """
    text = f"{n} {binning} bin{'s' if n != 1 else ''}"
    return text if ci is None else f"{text}\n95 % CI: {CI_WORDS.get(ci, ci)}"


def _log_x(r, ok, logx, binning, log_bins, values=None):
    """Log x for log-spaced bins, else when the data or the bin mid-ranges are skewed.

    ``values`` are the data of the conditioning variable of the panel: a log axis when
    their central 99 % span more than a decade with most of them at the low end (the rule
    of :func:`uqx.plot.e_vs_u`), so that bins of skewed uncertainties are not crammed into
    a corner.
    """
    x = r["x_mid"].values[ok]
    if logx == "auto" and binning != "equal-count" and log_bins and np.all(x > 0):
        return True
    if logx == "auto" and values is not None and S.wants_log(np.asarray(values), "auto"):
        return bool(np.all(x > 0))
    return S.wants_log(x, logx)


def _panel_values(ds, var):
    """Values of ``var`` per panel (set) of a stacked input, NaN padding removed."""
    if ds is None or var not in ds:
        return None
    arr = ds[var].values.reshape(ds.sizes.get("set", 1), -1)
    return [row[np.isfinite(row)] for row in arr]


def _engine_lzisd(ds, stat, by, n_bins, binning, n_boot, seed):
    """LZISD per bin and for the full set from :func:`uqx.inference.bootstrap.bootstrap_per_bin`."""
    if stat != "lzisd":
        raise InputError("ci='bootstrap-set' is available for LZISD only (use 'cho')")
    name = "lzisd" if by == "uE" else f"lzisd_{by}"
    nb = n_bins or local_bins(int(ds["M"].min()))
    res = bootstrap_per_bin(ds, name, n_boot=n_boot, seed=seed, bins=nb, binning=binning)
    full = bootstrap_per_bin(ds, "lzisd", n_boot=n_boot, seed=seed, bins=1, pop_min=1)
    out = res[["estimate", "ci_low", "ci_high", "x_mid", "n"]]
    out["full"] = full["estimate"].isel(bin=0)
    out["full_low"] = full["ci_low"].isel(bin=0)
    out["full_high"] = full["ci_high"].isel(bin=0)
    valid = interval_contains(out["ci_low"], out["ci_high"], 1.0).where(out["x_mid"].notnull())
    out["frac_valid"] = valid.mean("bin")
    return out


def _sets_of(res):
    return [res.isel(set=i) for i in range(res.sizes["set"])]


def reliability(data, *, kind="sd", n_bins=None, binning="equal-count", log_bins=True,
                ci="cho", n_boot=N_BOOT_CURVES, seed=0, log="auto", size="double", font_size=None,
                dpi=None, title=None, pop_min=POP_MIN):
    r"""Reliability diagram: per-bin SD(E) (or RMSE) against RMV with 95 % intervals.

    Bins on uE (:func:`uqx.inference.curves.binned.reliability`, ErrViewLib
    ``plotRelDiag``); identity line as reference; bins whose interval misses the identity
    in vermillion; in the corner the ENCE of these bins (with ``kind="rmse"`` the ENCE
    of :func:`uqx.validate`, RMSE per bin; with ``"sd"`` ErrViewLib's, sd(E) per bin),
    the number and kind of bins and the interval method (003 Fig. 4).

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data (one panel per set).
    kind : {"sd", "rmse"}, default "sd"
        Ordinate: sd(E) per bin (ErrViewLib) or RMSE.
    {bin_doc}
    ci : {"cho", "bootstrap"}, default "cho"
        Interval method; ``n_boot``, ``seed`` for the bootstrap.
    log : bool or "auto", default "auto"
        Log scale on both axes; "auto": when the set's uE are skewed, their central 99 %
        spanning more than a decade with the median in the lowest quarter of that range
        (otherwise the bins of the small uncertainties are crammed into a corner).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = as_sets(data)
    if log not in (True, False, "auto"):
        raise InputError(f"log must be True, False or 'auto', got {log!r}")
    res = _reliability(ds, kind=kind, n_bins=n_bins, binning=binning, log=log_bins, ci=ci,
                       n_boot=n_boot, seed=seed, pop_min=pop_min)
    units = units_of(ds, "E")
    logs = [S.wants_log(u, log) for u in _panel_values(ds, "uE")]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(ds.sizes["set"], size=size, aspect=0.9)
        for ax, r, name, log in zip(axes, _sets_of(res), panel_titles(ds), logs, strict=True):
            ok = np.isfinite(r["rmv"].values)
            x, y = r["rmv"].values[ok], r["y"].values[ok]
            lo, hi = r["ci_low"].values[ok], r["ci_high"].values[ok]
            S.interval_bars(ax, x, y, lo, hi, valid=interval_contains(lo, hi, x))
            vals = np.r_[x, lo, hi]
            vals = vals[np.isfinite(vals) & ((vals > 0) | (not log))]
            pad = 0.05 * (vals.max() - vals.min())
            lim = (vals.min() / 1.1, vals.max() * 1.1) if log else (
                max(vals.min() - pad, 0), vals.max() + pad)
            ax.plot(lim, lim, color=S.COLORS["reference"], ls="--", lw=0.9, zorder=1,
                    label="identity")
            if log:
                S.log_axis(ax, "both")
            ax.set_xlim(lim)
            ax.set_ylim(lim)
            ax.set_aspect("equal", adjustable="box")
            ence = float(r["ence"]) if "ence" in r else res.attrs["ence"]
            nb = int(np.isfinite(r["rmv"].values).sum())
            S.corner_text(ax, f"ENCE = {ence:.3f}\n{_bins_text(nb, res.attrs['binning'], ci)}",
                          loc="upper left", headroom=False)
            ax.set_xlabel(S.label("RMV", units))
            ax.set_ylabel(S.label("SD(E)" if kind == "sd" else "RMSE", units))
            S.set_title(ax, name)
        S.legend(fig, axes)
    return S.finish(fig, title=title)


def lzisd(data, *, stat="lzisd", by="uE", n_bins=None, binning="equal-count",
          log_bins=True, ci="cho", n_boot=N_BOOT_CURVES, seed=0, logx="auto", size="double",
          font_size=None, dpi=None, title=None, pop_min=POP_MIN):
    r"""Local z inverse standard deviation (or local Var(Z)) per bin with 95 % intervals.

    Per-bin :math:`1/\mathrm{sd}(Z_j)` (``stat="lzisd"``) or :math:`\mathrm{Var}(Z_j)`
    (``"lzv"``) at the bin mid-range of ``by``
    (:func:`~uqx.inference.curves.binned.local_z`), reference line at 1, the full-set value
    and interval on a right-side marker "all", in the corner the valid bins ("k of n") with
    the number and kind of bins and the interval method (003 Figs. 5, 10, A1; 002). The
    LZISD of a :func:`uqx.validate` result, as validated: :func:`lzisd_of_result`.

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data (one panel per set).
    stat : {"lzisd", "lzv"}, default "lzisd"
    by : {"uE", "X", "V"}, default "uE"
        Conditioning variable (consistency: uE; adaptivity: X or V).
    {bin_doc}
    ci : {"cho", "bootstrap", "bootstrap-set"}, default "cho"
        Interval method (003 uses 'cho'): analytic, per-bin BCa, or BCa over whole-set
        resamples re-binned by rank (:func:`uqx.inference.bootstrap.bootstrap_per_bin`, SimRef
        scheme; LZISD with equal-count or adaptive bins only); ``n_boot``, ``seed``.
    logx : bool or "auto", default "auto"
        Log x axis; "auto": log-spaced bins, or skewed values of ``by`` (or of the bin
        mid-ranges): central 99 % over a decade, median in its lowest quarter.
    size, font_size, dpi, title
        Figure options.

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = as_sets(data)
    if ci == "bootstrap-set":
        res = _engine_lzisd(ds, stat, by, n_bins, binning, n_boot, seed)
    else:
        res = _local_z(ds, stat=stat, by=by, n_bins=n_bins, binning=binning, log=log_bins,
                       ci=ci, n_boot=n_boot, seed=seed, pop_min=pop_min)
    ylab = "LZISD = 1/sd(Z) per bin" if stat == "lzisd" else "LZV = Var(Z) per bin"
    values = _panel_values(ds, by) or [None] * ds.sizes["set"]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(ds.sizes["set"], size=size)
        for ax, r, name, v in zip(axes, _sets_of(res), panel_titles(ds), values, strict=True):
            S.reference_line(ax, 1.0, label="target 1")
            ok = np.isfinite(r["x_mid"].values)
            S.interval_bars(ax, r["x_mid"].values[ok], r["estimate"].values[ok],
                            r["ci_low"].values[ok], r["ci_high"].values[ok], target=1.0)
            if _log_x(r, ok, logx, binning, log_bins, v):
                S.log_axis(ax)
            S.full_set_marker(ax, float(r["full"]), float(r["full_low"]),
                              float(r["full_high"]), target=1.0)
            nb = int(ok.sum())
            lo, hi = r["ci_low"].values[ok], r["ci_high"].values[ok]
            nv = int(np.sum(interval_contains(lo, hi, 1.0)))
            S.corner_text(ax, _valid_text(nv, nb) + "\n" + _bins_text(
                nb, res.attrs.get("binning", binning), ci), loc="upper left")
            ax.set_xlabel(S.axis_label(ds, by))
            ax.set_ylabel(ylab)
            S.set_title(ax, name)
        S.legend(fig, axes)
    return S.finish(fig, title=title)


def _valid_text(nv, nb) -> str:
    """Return ``"valid bins: 3 of 13 (23 %)"``."""
    return f"valid bins: {nv} of {nb} ({100 * nv / nb:.0f} %)" if nb else "no bins"


def lzisd_of_result(result, *, cond="uE", logx="auto", size="double", font_size=None,
                    dpi=None, title=None):
    r"""LZISD per bin as validated: the bins, intervals and valid bins of a result.

    Draws what :func:`uqx.validate` computed for the consistency (``cond="uE"``) or
    adaptivity (``"X"``, ``"V"``) diagnostic, nothing recomputed: per-bin
    :math:`1/\mathrm{sd}(Z_j)` (``lzisd``) with its interval (``lzisd_ci_low``,
    ``lzisd_ci_high``; method ``lzisd_ci_method``) at the bin mid-range (``bin_x_mid``),
    reference line at 1, bins whose interval misses 1 in vermillion; in the corner the
    valid bins "k of n (f %)" (``fval``, ``cond_n_bins``) with the number and kind of bins
    (equal-count) and the interval method. One panel per set that has the variable.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        A :func:`uqx.validate` result with the conditional routes.
    cond : {"uE", "X", "V"}, default "uE"
        Conditioning variable.
    logx : bool or "auto", default "auto"
        Log x axis; "auto": the bin mid-ranges are positive and skewed
        (:func:`uqx.plot.style.wants_log`).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    uqx.InputError
        Not a result with LZISD bins, or no set with bins on ``cond``.
    """
    res = load(result)
    if "lzisd" not in res or "cond" not in res.dims:
        raise InputError("no LZISD bins in this result (validated without the conditional "
                         "routes?)")
    if cond not in [str(c) for c in res["cond"].values]:
        raise InputError(f"no LZISD bins on {cond} in this result")
    one = res.sel(cond=cond)
    keep = [i for i in range(res.sizes["set"])
            if np.isfinite(one["bin_x_mid"].values[i]).any()]
    if not keep:
        raise InputError(f"no set of this result has LZISD bins on {cond}")
    units = res.attrs.get("input_units", "")
    units = "" if not isinstance(units, str) or units == "mixed" else units
    xlab = S.label(cond, units) if cond == "uE" else cond
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(keep), size=size)
        for ax, i in zip(axes, keep, strict=True):
            r = one.isel(set=i)
            ok = np.isfinite(r["bin_x_mid"].values) & np.isfinite(r["lzisd"].values)
            x, y = r["bin_x_mid"].values[ok], r["lzisd"].values[ok]
            lo, hi = r["lzisd_ci_low"].values[ok], r["lzisd_ci_high"].values[ok]
            S.reference_line(ax, 1.0, label="target 1")
            S.interval_bars(ax, x, y, lo, hi, target=1.0)
            if S.wants_log(x, logx) and np.all(x > 0):
                S.log_axis(ax)
            nb = int(r["cond_n_bins"]) if "cond_n_bins" in r else int(ok.sum())
            nv = int(round(float(r["fval"]) * nb)) if "fval" in r else int(
                np.sum(interval_contains(lo, hi, 1.0)))
            method = str(r["lzisd_ci_method"].values) if "lzisd_ci_method" in r else "bootstrap"
            S.corner_text(ax, _valid_text(nv, nb) + "\n" + _bins_text(nb, "equal-count",
                                                                        method),
                          loc="upper left")
            ax.set_xlabel(xlab)
            ax.set_ylabel("LZISD = 1/sd(Z) per bin")
            S.set_title(ax, str(res["set"].values[i]))
        S.legend(fig, axes)
    return S.finish(fig, title=title)


def lcp(data, *, by="uE", prob=(0.25, 0.5, 0.75, 0.95), dist="normal", nu=None,
        n_bins=None, binning="equal-count", log_bins=True, logx="auto", ylim=None,
        size="double", font_size=None, dpi=None, title=None, pop_min=POP_MIN):
    r"""Local coverage probabilities per bin for several interval probabilities P.

    For each P the coverage of the intervals :math:`|E| \le U_P` per bin of ``by`` with
    Wilson 95 % intervals, a dashed reference line at P and the full-set coverage (PICP)
    at the right (:func:`uqx.inference.curves.binned.lcp`; 003 Figs. 6, 11, 19b/e).
    Intervals come from
    :math:`U_P = u_E\,q_D((1+P)/2)`, or from a ``U(sample, prob)`` variable of a one-set
    input (HU2022 conformal intervals).

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data (one panel per set).
    by : {"uE", "X", "V"}, default "uE"
    prob : sequence of float, default (0.25, 0.5, 0.75, 0.95)
    dist, nu : {"normal", "t"}, float
        Generative distribution of the intervals built from uE.
    {bin_doc}
    logx : bool or "auto", default "auto"
        Log x axis; "auto" as :func:`lzisd`.
    ylim, size, font_size, dpi, title
        Axis and figure options (default y range [0, 1.1]).

    Returns
    -------
    matplotlib.figure.Figure
    """
    raw = load(data)
    if "U" in raw and "set" not in raw.dims:  # given interval half-ranges
        res = _lcp(raw, by=by, n_bins=n_bins, binning=binning, log=log_bins, pop_min=pop_min)
        res = res.expand_dims(set=[str(raw.attrs.get("name", "data"))])
        titles = list(res["set"].values)
        ds = raw
        values = [raw[by].values] if by in raw else [None]
    else:
        ds = as_sets(raw)
        res = _lcp(ds, by=by, prob=prob, dist=dist, nu=nu, n_bins=n_bins, binning=binning,
                   log=log_bins, pop_min=pop_min)
        titles = panel_titles(ds)
        values = _panel_values(ds, by) or [None] * ds.sizes["set"]
    P = res["prob"].values
    colors = [S.COLORS["series"][k % 8] for k in range(P.size)]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(res.sizes["set"], size=size)
        for ax, r, name, v in zip(axes, _sets_of(res), titles, values, strict=True):
            ok = np.isfinite(r["x_mid"].values)
            x = r["x_mid"].values[ok]
            for k, p in enumerate(P):
                c = r["coverage"].values[ok, k]
                lo, hi = r["ci_low"].values[ok, k], r["ci_high"].values[ok, k]
                ax.axhline(p, color=colors[k], ls="--", lw=0.8, zorder=1)
                ax.errorbar(x, c, yerr=np.maximum(np.vstack([c - lo, hi - c]), 0), fmt="o-", ms=3,
                            lw=0.8, color=colors[k], label=f"P = {p:.0%}", zorder=3)
            if _log_x(r, ok, logx, binning, log_bins, v):
                S.log_axis(ax)
            ax.set_ylim(*(ylim or (0, 1.1)))
            S.full_set_marker(ax, r["picp"].values, r["picp_low"].values,
                              r["picp_high"].values, colors=colors)
            ax.set_xlabel(S.axis_label(ds, by))
            ax.set_ylabel("Local coverage probability")
            S.set_title(ax, name)
        S.legend(fig, axes)
    return S.finish(fig, title=title)


for _f in (reliability, lzisd, lcp):
    _f.__doc__ = _f.__doc__.replace("{bin_doc}", _BIN_DOC)
