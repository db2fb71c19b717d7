"""Panels of Monte-Carlo study archives written by :mod:`uqx.sweeps` (NetCDF).

:func:`study` dispatches on the archive's ``study`` attribute; available:

* ``appendix-b`` — 000 App. B, Fig. A1/A2 (right panels): cell means of the simulated
  ENCE and ZMSE of calibrated data against √(N/M), ±2 standard errors, coloured by ν,
  with the OLS fit of the archive and the paper's published lines for comparison;
* ``pval``, ``bins``, ``decimation``, ``binned-tailedness``, ``reference-sensitivity``:
  :mod:`uqx.plot.study_panels`;
* ``error-rates`` — rates of the verdicts against M: :mod:`uqx.plot.rates`.
"""

from __future__ import annotations

import os

import numpy as np

from uqx.dataio.model import InputError
from uqx.plot import study_panels as P
from uqx.plot import style as S
from uqx.plot.inputs import load
from uqx.plot.rates import error_rates

__all__ = ["study", "appendix_b"]

#: Published fits of 000 App. B (intercept, slope) per (model, statistic).
PAPER_FITS = {("NIG", "ence"): (0.0, 0.56), ("NIG", "zmse"): (0.0, 1.14),
              ("T6IG", "ence"): (0.004, 0.779), ("T6IG", "zmse"): (0.006, 1.577)}


def study(archive, **options):
    """Draw the figure of a study archive (path or Dataset), chosen by ``attrs["study"]``.

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = load(archive)
    name = ds.attrs.get("study")
    figures = {"appendix-b": appendix_b, "pval": P.pval, "bins": P.bins,
               "decimation": P.decimation, "binned-tailedness": P.binned_tailedness,
               "reference-sensitivity": P.reference_sensitivity, "error-rates": error_rates}
    if name not in figures:
        if name:
            raise InputError(f"no figure for study {name!r} (available: {', '.join(figures)})")
        what, advice = _what(ds)
        where = str(archive) if isinstance(archive, str | os.PathLike) else "this data set"
        raise InputError(f"{where} {what}, not an archive of 'uqx sweep' (no 'study' "
                         f"attribute){advice}. The study figures ({', '.join(figures)}) "
                         "are drawn from the archives that 'uqx sweep STUDY -o FILE.nc' "
                         "writes")
    return figures[name](ds, **options)


def _what(ds) -> tuple[str, str]:
    """Say what a data set that is not a study archive holds, and which figures draw it."""
    if "verdict" in ds or "estimate" in ds:
        return ("is a 'uqx validate' result",
                ": draw it with 'uqx plot zeta', 'tailedness' or 'lzisd', or 'uqx report'")
    if "E" in ds and "uE" in ds:
        return ("holds input data (E, uE)",
                ": draw it with 'uqx plot e-vs-u', 'reliability', 'lzisd', 'lcp', "
                "'calibration'..., or validate it")
    return "holds neither input data nor a result", ""


def _no_line(ds) -> str:
    """Say why an archive of App. B has no fitted line (printed instead of the equation)."""
    n_x = np.unique(np.sqrt(ds["N"] / ds["M"]).values).size
    n_cells = int(np.prod([ds.sizes.get(d, 1) for d in ("M", "N", "nu")]))
    if n_cells < 3:
        return f"no line fitted: {n_cells} cell(s) of M \u00d7 N \u00d7 \u03bd, 3 needed"
    if n_x < 2:
        return "no line fitted: a single value of \u221a(N/M)"
    return "no line fitted (the archive's fit is undefined)"


def appendix_b(archive, *, size="double", font_size=None, dpi=None, title=None):
    r"""000 App. B: simulated ENCE and ZMSE of calibrated data against √(N/M).

    One panel per (model, statistic): cell means ±2 SE coloured by ν, the archive's OLS
    line :math:`y = a + b\sqrt{N/M}` (printed) and the published line (dashed grey).

    Parameters
    ----------
    archive : xarray.Dataset or path to NetCDF
        :func:`uqx.sweeps.appendix_b.appendix_b` output.
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = load(archive)
    fitted = [str(s) for s in ds["stat"].values] if "stat" in ds.dims else []
    stats = [st for st in ("ence", "zmse") if f"{st}_mean" in ds and st in fitted]
    if not stats or "slope" not in ds:
        raise InputError("appendix_b needs the summarised archive (ence_mean or zmse_mean "
                         "with their fits: intercept, slope over stat)")
    models = [str(m) for m in ds["model"].values]
    x = np.sqrt(ds["N"] / ds["M"])
    n_st = len(stats)
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(models) * n_st, size=size, ncols=n_st, aspect=0.7)
        for i, model in enumerate(models):
            for j, st in enumerate(stats):
                ax = axes[n_st * i + j]
                for k, nu in enumerate(ds["nu"].values):
                    sel = dict(model=model, nu=nu)
                    m = ds[f"{st}_mean"].sel(sel).transpose("M", "N")
                    se = ds[f"{st}_se"].sel(sel).transpose("M", "N")
                    xx = x.transpose("M", "N").values.ravel()
                    ax.errorbar(xx, m.values.ravel(), yerr=2 * se.values.ravel(), fmt="o",
                                ms=2.5, lw=0.8, color=S.COLORS["series"][k % 8],
                                label=f"ν = {nu:g}")
                grid = np.linspace(0, float(x.max()) * 1.05, 50)
                a, b = (float(ds[v].sel(model=model, stat=st)) for v in ("intercept", "slope"))
                if np.isfinite(a) and np.isfinite(b):
                    ax.plot(grid, a + b * grid, color="0.15", lw=1, label="OLS fit")
                    eq = f"y = {a:.3f} + {b:.3f} x".replace("-0.000", "0.000")
                else:  # e.g. a single M: the archive has no line, none is drawn
                    eq = _no_line(ds)
                pa, pb = PAPER_FITS.get((model, st), (np.nan, np.nan))
                if np.isfinite(pa) and np.isfinite(pb):
                    ax.plot(grid, pa + pb * grid, color=S.COLORS["reference"], ls="--",
                            lw=0.9, label="000 App. B fit")
                S.corner_text(ax, eq, loc="lower right", headroom=False)
                ax.set_xlim(0, grid[-1])
                ax.set_ylim(bottom=0)
                ax.set_xlabel(r"$\sqrt{N/M}$")
                ax.set_ylabel(f"simulated {st.upper()}")
                S.set_title(ax, f"{model}: {st.upper()}")
        S.legend(fig, axes, ncols=min(len(ds["nu"]) + 2, 5))
    return S.finish(fig, title=title)
