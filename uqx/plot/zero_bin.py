r"""Zero-bin extrapolation panel of a validation result (000 App. C, 002).

For every set and every swept statistic (ENCE, ZMSE, ZVE) of :func:`uqx.validate`: the
statistic for N equal-count bins against :math:`x = \sqrt{N/M}`, the fitted line
``lm(y ~ x)`` (points with N below the fit range drawn hollow), the papers' intercept
± 2 SE at x = 0, the central 95 % of the intercept's simulated null distribution for each
generative distribution D (drawn just left of x = 0) and the ideal value (0 for ENCE and
ZMSE, 1 for ZVE). The intercepts are the papers' diagnostics: no verdict rests on them
(the consistency / adaptivity question decides), and the panel title says so.
"""

from __future__ import annotations

import numpy as np

from uqx.dataio.model import InputError
from uqx.inference.extrapolate.binsweep import IDEAL_INTERCEPT, PRESETS
from uqx.plot import style as S
from uqx.plot.inputs import load

__all__ = ["extrapolation"]

_VERDICT_COLORS = {"valid": S.COLORS["valid"], "invalid": S.COLORS["invalid"]}


def _settings(res):
    """Sweep settings of the result (fit range, abscissa); App. C when not recorded."""
    return PRESETS.get(str(res.attrs.get("extrapolation_preset", "app-c")), PRESETS["app-c"])


def _panel(ax, r, stat, st, M, dists):
    """Draw one (set, statistic) panel; returns False when there is nothing to draw."""
    x_all = st.abscissa_of(r["extrap_n_bins"].values, M)
    y_all = r["extrap_values"].sel(xstat=stat).values
    ok = np.isfinite(x_all) & np.isfinite(y_all)
    a = float(r["extrap_intercept"].sel(xstat=stat))
    if not ok.any() or not np.isfinite(a):
        ax.text(0.5, 0.5, "not tested", transform=ax.transAxes, ha="center", va="center",
                color="0.4")
        return False
    n = r["extrap_n_bins"].values[ok]
    x, y = x_all[ok], y_all[ok]
    fit = n >= st.fit_min_bins
    ax.plot(x[fit], y[fit], "o", color=S.COLORS["data"], ms=3.5, label="statistic (fitted)",
            zorder=3)
    if (~fit).any():
        ax.plot(x[~fit], y[~fit], "o", mfc="none", color=S.COLORS["data"], ms=3.5,
                label="statistic (not fitted)", zorder=3)
    b = float(r["extrap_slope"].sel(xstat=stat))
    xs = np.array([0.0, x.max()])
    ax.plot(xs, a + b * xs, color=S.COLORS["data"], lw=1.0, label="fitted line")
    se = float(r["extrap_intercept_se"].sel(xstat=stat))
    ax.errorbar([0.0], [a], yerr=[[2 * se], [2 * se]], fmt="D", color="black", ms=4,
                elinewidth=1.4, zorder=4, label="intercept ± 2 SE (papers)")
    step = 0.04 * x.max()
    for k, d in enumerate(dists):
        lo = float(r["extrap_null_low"].sel(xstat=stat, dist=d))
        hi = float(r["extrap_null_high"].sel(xstat=stat, dist=d))
        if np.isfinite(lo) and np.isfinite(hi):
            ax.plot([-(k + 1) * step] * 2, [lo, hi], lw=4, alpha=0.6, solid_capstyle="butt",
                    color=S.COLORS["series"][(k + 2) % 8], label=f"null 95 % ({d})")
    ideal = IDEAL_INTERCEPT.get(str(stat), np.nan)
    if np.isfinite(ideal):
        S.reference_line(ax, ideal, label="ideal value")
    ax.set_xlim(-(len(dists) + 1.5) * step, 1.05 * x.max())
    return True


def extrapolation(result, *, cond="uE", size="double", font_size=None, dpi=None, title=None):
    r"""Zero-bin extrapolation of ENCE, ZMSE and ZVE: one row of panels per set.

    Plots ``extrap_values`` against :math:`x = \sqrt{N/M}` (N = ``extrap_n_bins``, the
    abscissa of the result's sweep preset), the line ``extrap_intercept`` +
    ``extrap_slope`` · x, the intercept ± 2 ``extrap_intercept_se`` at x = 0 (000 App. C;
    too narrow, shown for reproduction), the null 95 % interval
    [``extrap_null_low``, ``extrap_null_high``] of each distribution D, the ideal value
    (:data:`uqx.inference.extrapolate.binsweep.IDEAL_INTERCEPT`); the title says
    "diagnostic" where ``extrap_verdict`` is ``not tested`` (the papers' diagnostic, no
    verdict), else the verdict.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output with the conditional routes.
    cond : {"uE", "X", "V"}, default "uE"
        Conditioning variable of the sweep (consistency: uE; adaptivity: X or V).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    res = load(result)
    if "extrap_values" not in res or "extrap_n_bins" not in res:
        raise InputError("extrapolation needs a validation result with the conditional "
                         "routes (variables 'extrap_values', 'extrap_n_bins')")
    if cond not in [str(c) for c in res["cond"].values]:
        raise InputError(f"the validation result has no conditioning variable {cond!r}; "
                         f"choose from {[str(c) for c in res['cond'].values]}")
    st = _settings(res)
    stats = [str(k) for k in res["xstat"].values]
    dists = [str(d) for d in res["dist"].values] if "dist" in res.dims else []
    names = [str(s) for s in res["set"].values]
    xlab = r"$\sqrt{N/M}$" if st.abscissa == "sqrt(N/M)" else r"$\sqrt{N}$"
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(names) * len(stats), size=size, ncols=len(stats),
                                 aspect=0.8)
        for i, name in enumerate(names):
            r = res.isel(set=i).sel(cond=cond)
            M = int(res["M"].values[i]) if "M" in res.coords else int(res.attrs[
                "input_sizes"][i])
            for j, stat in enumerate(stats):
                ax = axes[i * len(stats) + j]
                _panel(ax, r, stat, st, M, dists)
                verdict = str(r["extrap_verdict"].sel(xstat=stat).item())
                if verdict == "not tested":  # the papers' diagnostic: no verdict rests on it
                    verdict = "diagnostic"
                text = f"{name}: {stat.upper()}, {verdict}"
                S.set_title(ax, text, fontsize="medium" if len(text) <= 26 else "small",
                            color=_VERDICT_COLORS.get(verdict, "black"))
                ax.set_xlabel(xlab)
                ax.set_ylabel(f"{stat.upper()} ({cond} bins)")
        S.legend(fig, axes, ncols=3)
    return S.finish(fig, title=title)
