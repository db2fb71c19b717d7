r"""Distribution panels with fitted models (000 Figs. 2–4, 001 Figs. 1–2).

One row per data set, one column per quantity:

* ``u2``: histogram of ln u² (33 classes, 0.1–99.9 % range) with the inverse-gamma fit
  of u² (min-KS, 001 Table I) moved to the log scale, and lines at ln MV and ln median u²;
* ``e2``/``z2``: histograms of ln E², ln Z² (25 classes, 1–99 %) with the scaled
  F(1, ν) fits (001 Fig. 2);
* ``e``/``z``: histograms of E, Z within ±3 sd (25 classes) with the normal density of
  the same mean and sd and the scaled-shifted Student t MLE fit (000 Figs. 3–4).

Fits come from :func:`uqx.inference.fits.fit_set`. Densities on a log axis carry the Jacobian,
:math:`f_{\ln X}(t) = f_X(e^t)\,e^t`.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from uqx.dataio.model import InputError, iter_sets
from uqx.inference.fits import fit_set
from uqx.plot import style as S
from uqx.plot.inputs import as_sets, panel_titles

__all__ = ["PANELS", "distributions"]

#: Panel keys of :func:`distributions`.
PANELS = ("u2", "e2", "z2", "e", "z")

_XLABEL = {"u2": r"$\ln u_E^2$", "e2": r"$\ln E^2$", "z2": r"$\ln Z^2$", "e": "E",
           "z": "Z"}


def _hist(ax, x, lo, hi, n_classes):
    """Density histogram over [lo, hi] normalised by the full sample size."""
    counts, edges = np.histogram(x, bins=n_classes, range=(lo, hi))
    width = edges[1] - edges[0]
    ax.stairs(counts / (x.size * width), edges, fill=True, color="0.8", label="data")
    ax.stairs(counts / (x.size * width), edges, color="0.45", lw=0.6)
    return np.linspace(lo, hi, 300)


def _panel_u2(ax, sd, fit):
    t = np.log(sd.uE**2)
    lo, hi = np.quantile(t, [0.001, 0.999])
    grid = _hist(ax, t, lo, hi, 33)
    ig = stats.invgamma(fit["nu_u2"], scale=fit["ig_theta_ks"])
    ax.plot(grid, ig.pdf(np.exp(grid)) * np.exp(grid), color=S.COLORS["data"],
            label="fitted model")
    ax.axvline(np.log(np.mean(sd.uE**2)), color=S.COLORS["invalid"], ls="--", lw=0.9,
               label="ln MV")
    ax.axvline(np.log(np.median(sd.uE**2)), color=S.COLORS["oracle"], ls=":", lw=1.1,
               label="ln median $u^2$")
    return f"ν = {fit['nu_u2']:.3g}"


def _panel_sq(ax, x2, nu, scale):
    t = np.log(x2[x2 > 0])
    lo, hi = np.quantile(t, [0.01, 0.99])
    grid = _hist(ax, t, lo, hi, 25)
    f = stats.f(1, nu, scale=scale)
    ax.plot(grid, f.pdf(np.exp(grid)) * np.exp(grid), color=S.COLORS["data"],
            label="fitted model")
    return f"ν = {nu:.3g}"


def _panel_lin(ax, x, nu, mu, sigma):
    m, s = np.mean(x), np.std(x, ddof=1)
    grid = _hist(ax, x, m - 3 * s, m + 3 * s, 25)
    ax.plot(grid, stats.norm.pdf(grid, m, s), color=S.COLORS["reference"], ls="--",
            label="normal (mean, sd)")
    ax.plot(grid, stats.t.pdf(grid, nu, mu, sigma), color=S.COLORS["data"],
            label="fitted model")
    return f"$ν_{{eff}}$ = {nu:.3g}"


def distributions(data, *, panels=PANELS, fits=None, size="double", font_size=None,
                  dpi=None, title=None):
    """Histograms of ln u², ln E², ln Z², E and Z with their fitted models, per set.

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data; one row of panels per set.
    panels : sequence of {"u2", "e2", "z2", "e", "z"}
        Columns to draw (:data:`PANELS`).
    fits : xarray.Dataset, optional
        Precomputed :func:`uqx.inference.fits.fit_sets` output (else fitted here, which takes a
        few seconds per set).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure
        The fitted ν of each panel is printed in its axis label.
    """
    bad = [p for p in panels if p not in PANELS]
    if bad or not panels:
        raise InputError(f"unknown distribution panels {bad}; choose from {PANELS}")
    ds = as_sets(data)
    sets = list(iter_sets(ds))
    n, m = len(sets), len(panels)
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(n * m, size=size, ncols=m, aspect=0.75)
        for i, (sd, name) in enumerate(zip(sets, panel_titles(ds), strict=True)):
            fit = ({k: float(fits[k].sel(set=sd.name)) for k in fits.data_vars}
                   if fits is not None else fit_set(sd.E, sd.uE))
            z = sd.E / sd.uE
            for j, key in enumerate(panels):
                ax = axes[i * m + j]
                if key == "u2":
                    text = _panel_u2(ax, sd, fit)
                elif key in ("e2", "z2"):
                    x2 = sd.E**2 if key == "e2" else z**2
                    text = _panel_sq(ax, x2, fit[f"nu_{key}"], fit[f"scale_{key}"])
                else:
                    x = sd.E if key == "e" else z
                    text = _panel_lin(ax, x, fit[f"nu_eff_{key}"], fit[f"bias_{key}"],
                                      fit[f"scale_{key}"])
                ax.set_xlabel(f"{_XLABEL[key]}   ({text})")
                ax.set_yticks([])
                if j == 0:
                    ax.set_ylabel("Density")
                    S.set_title(ax, name, loc="left")
        S.legend(fig, axes, ncols=4)
    return S.finish(fig, title=title)
