"""Calibration curves and confidence curves (methods: curves).

003 Figs. 1, 3, 9, 17b, 18a (calibration curves, conditional ones per bin of u or X) and
Figs. 7, 13–15c/f, 17c/f, 18b/c, 19c/f (confidence curves with probabilistic reference).
"""

from __future__ import annotations

import matplotlib as mpl
import numpy as np

from uqx.engine.defaults import N_BINS_LOCAL, POP_MIN
from uqx.inference.curves.confidence import calibration_curve as _calibration_curve
from uqx.inference.curves.confidence import conditional_calibration as _conditional
from uqx.inference.curves.confidence import confidence_curve as _confidence
from uqx.plot import style as S
from uqx.plot.inputs import as_sets, panel_titles, units_of

__all__ = ["calibration", "conditional_calibration", "confidence"]


def _dist_text(dist, nu):
    return "normal" if dist == "normal" else f"Student t(ν = {nu:g})"


def calibration(data, *, dist="normal", nu=None, prob=None, size="double", font_size=None,
                dpi=None, title=None):
    r"""Calibration curve with Wilson-cc 95 % band and the miscalibration area.

    :math:`\eta_p` = fraction of :math:`E_i \le u_i q_D(p)` against p
    (:func:`uqx.inference.curves.confidence.calibration_curve`); the area between the curve and the
    diagonal is shaded and its value printed (003 Figs. 1, 17b, 18a). Curves above the diagonal for
    p < ½ and below for p > ½ mean too large uncertainties, and conversely.

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data (one panel per set).
    dist, nu : {"normal", "t"}, float
        Generative distribution D of the quantiles (t: unit-variance Student, ν > 2).
    prob : array_like, optional
        Probability grid (default 0.005..0.995 by 0.005).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = as_sets(data)
    res = _calibration_curve(ds, prob=prob, dist=dist, nu=nu)
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(ds.sizes["set"], size=size, aspect=1.0)
        for i, (ax, name) in enumerate(zip(axes, panel_titles(ds), strict=True)):
            r = res.isel(set=i)
            p = np.r_[0.0, r["prob"].values, 1.0]
            eta = np.r_[0.0, r["eta"].values, 1.0]
            lo = np.r_[0.0, r["ci_low"].values, 1.0]
            hi = np.r_[0.0, r["ci_high"].values, 1.0]
            S.reference_line(ax, kind="identity", label="perfect calibration")
            ax.fill_between(p, p, eta, color=S.COLORS["highlight"], alpha=0.35, lw=0,
                            label="miscalibration area")
            ax.fill_between(p, lo, hi, color=S.COLORS["band"], alpha=0.45, lw=0,
                            label="95 % band (Wilson)")
            ax.plot(p, eta, color=S.COLORS["data"], label="data")
            area = float(r["miscal_area"]) if "miscal_area" in r else res.attrs["miscal_area"]
            S.corner_text(ax, f"area = {area:.3f}", headroom=False)
            _unit_square(ax)
            ax.set_xlabel(f"Target probability p ({_dist_text(dist, nu)})")
            ax.set_ylabel("Observed fraction")
            S.set_title(ax, name)
        S.legend(fig, axes)
    return S.finish(fig, title=title)


def conditional_calibration(data, *, by="uE", dist="normal", nu=None, n_bins=N_BINS_LOCAL,
                            binning="equal-count", log_bins=True, size="double",
                            font_size=None, dpi=None, title=None, pop_min=POP_MIN):
    r"""Conditional calibration curves: one curve per bin of uE, X or V.

    Curves are coloured from low to high values of the conditioning variable; the grey
    band is the Wilson-cc 95 % band around the identity for bins of M/N points
    (:func:`uqx.inference.curves.confidence.conditional_calibration`; 003 Figs. 3, 9). Curves
    leaving the band reveal a lack of consistency (``by="uE"``) or adaptivity (``by="X"``).

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data (one panel per set).
    by : {"uE", "X", "V"}, default "uE"
    dist, nu : {"normal", "t"}, float
        Generative distribution D.
    n_bins, binning, log_bins
        Binning of the conditioning variable (default 15 equal-count bins).
    size, font_size, dpi, title
        Figure options.
    pop_min : int, default POP_MIN (30)
        Fewest points per bin (fewer bins than ``n_bins`` when needed).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = as_sets(data)
    res = _conditional(ds, by=by, dist=dist, nu=nu, n_bins=n_bins, binning=binning,
                       log=log_bins, pop_min=pop_min)
    cmap = mpl.colormaps["cividis"]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(ds.sizes["set"], size=size, aspect=1.0)
        for i, (ax, name) in enumerate(zip(axes, panel_titles(ds), strict=True)):
            r = res.isel(set=i)
            p = np.r_[0.0, r["prob"].values, 1.0]
            ax.fill_between(p, np.r_[0.0, r["band_low"].values, 1.0],
                            np.r_[0.0, r["band_high"].values, 1.0], color="0.8", lw=0,
                            label="95 % band around identity")
            S.reference_line(ax, kind="identity")
            nb = int(np.isfinite(r["x_mid"].values).sum())
            for j in range(nb):
                ax.plot(p, np.r_[0.0, r["eta"].values[j], 1.0], lw=0.9,
                        color=cmap(j / max(nb - 1, 1)))
            _unit_square(ax)
            ax.set_xlabel(f"Target probability p ({_dist_text(dist, nu)})")
            ax.set_ylabel("Observed fraction per bin")
            S.set_title(ax, name)
        sm = mpl.cm.ScalarMappable(cmap=cmap, norm=mpl.colors.Normalize(0, 1))
        cb = fig.colorbar(sm, ax=axes, shrink=0.6, ticks=[0, 1], aspect=30)
        cb.ax.set_yticklabels(["low", "high"])
        name = S.axis_label(ds, by).split(" [")[0]
        cb.set_label(f"bin of {name[:1].lower()}{name[1:]}")
        S.legend(fig, axes)
    return S.finish(fig, title=title)


def confidence(data, *, stat="rmse", dist="normal", nu=None, n_rep=500, oracle=False,
               n_boot=0, normalize=False, show_u=True, seed=0, size="double",
               font_size=None, dpi=None, title=None):
    r"""Confidence curves with the probabilistic reference and its 95 % band.

    The statistic (RMSE, MAE, RMSD or Q95) of the errors left after removing the k %
    largest uncertainties, the oracle on request (``oracle=True``: removal by abs(E)) and
    the probabilistic reference
    (mean and HD 95 % band of ``n_rep`` simulated error sets :math:`u\,\epsilon`,
    :func:`uqx.inference.curves.confidence.confidence_curve`; 003 Fig. 7). A data curve inside the
    band is consistent with D; a monotonic decrease shows that large u flag large errors. The top
    axis gives the uncertainty thresholds (type-7 quantiles of u) at k = 20, 50, 80.

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data (one panel per set).
    stat : {"rmse", "mae", "rmsd", "q95"}, default "rmse"
    dist, nu : {"normal", "t"}, float
        Generative distribution of the reference.
    n_rep, oracle, n_boot, normalize, seed
        See :func:`uqx.inference.curves.confidence.confidence_curve` (``n_boot > 0`` adds a
        bootstrap band).
    show_u : bool, default True
        Top axis with the uncertainty thresholds.
    size, font_size, dpi, title
        Figure options.

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = as_sets(data)
    res = _confidence(ds, stat=stat, dist=dist, nu=nu, n_rep=n_rep, oracle=oracle,
                      n_boot=n_boot, normalize=normalize, seed=seed)
    units = "" if normalize else units_of(ds, "E")
    ylab = S.label(("normalised " if normalize else "") + stat.upper() + " of kept errors",
                   units)
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(ds.sizes["set"], size=size, aspect=0.95)
        for i, (ax, name) in enumerate(zip(axes, panel_titles(ds), strict=True)):
            r = res.isel(set=i)
            k = r["k"].values
            if n_rep:
                ax.fill_between(k, r["ref_low"], r["ref_high"], color=S.COLORS["band"],
                                alpha=0.45, lw=0, label=f"reference 95 % band ({dist})")
                ax.plot(k, r["reference"], color=S.COLORS["reference"], ls="--",
                        label="probabilistic reference")
            if n_boot:
                ax.fill_between(k, r["boot_low"], r["boot_high"], color=S.COLORS["data"],
                                alpha=0.15, lw=0, label="data 95 % bootstrap band")
            if oracle:
                ax.plot(k, r["oracle"], color=S.COLORS["oracle"], ls=":", lw=1.4,
                        label="oracle")
            ax.plot(k, r["curve"], color=S.COLORS["data"], label="data")
            ax.set_xlim(0, 100)
            ax.set_ylim(bottom=0)
            if show_u:
                _u_axis(ax, list(ds.isel(set=i)["uE"].values))
            ax.set_xlabel("k = % largest $u_E$ removed")
            ax.set_ylabel(ylab)
            S.set_title(ax, name)
        S.legend(fig, axes, ncols=3)
    return S.finish(fig, title=title)


def _u_axis(ax, u):
    """Secondary top axis: type-7 quantiles of u at 0.8, 0.5, 0.2 (``showUk``, thinned)."""
    u = np.asarray(u, dtype=np.float64)
    u = u[np.isfinite(u)]
    ks = np.array([20, 50, 80])  # ErrViewLib labels 20/40/60/80; 3 fit narrow panels
    q = np.quantile(u, 1 - ks / 100, method="linear")
    top = ax.secondary_xaxis("top")
    top.set_xticks(ks, [f"{v:.2g}" for v in q], fontsize="small")
    top.tick_params(length=2, pad=1)
    top.set_xlabel("$u_k$ threshold", fontsize="small", labelpad=2)


def _unit_square(ax):
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xticks([0, 0.5, 1], ["0", "0.5", "1"])
    ax.set_yticks([0, 0.5, 1], ["0", "0.5", "1"])
    ax.set_aspect("equal")
