"""Panel of the ``error-rates`` study: how often each verdict is wrong, against M.

Calibrated data against M: for every test the largest false-rejection rate over the
designs (solid, "invalid") and the smallest acceptance rate (dashed, "valid"), with the
5 % and 90 % lines of the targets; each miscalibrated scenario at the size it ran: the
smallest rate of ``invalid`` over its designs (the power), as bars. Error bars: Wilson-cc
95 %.
"""

from __future__ import annotations

import numpy as np

from uqx.plot import style as S
from uqx.plot.inputs import load
from uqx.plot.study_panels import need_study

__all__ = ["error_rates", "SHOWN_TESTS"]

#: Tests drawn (the archive holds more: the papers' ζ rule, LZISD bins).
SHOWN_TESTS = ("zms", "rce", "cc", "ence", "zmse", "zmse_max", "zms_scan", "zve", "consistency",
               "adaptivity", "any")
_MARK = ("o", "s", "^", "D", "v", "P", "X", "*", "h")


def _color(k, test):
    """Colour of a test: the series palette; "any" (the whole result) in grey."""
    if test == "any":
        return "0.45"
    return S.COLORS["series"][k % len(S.COLORS["series"])]


def _worst(ds, var, test, scenario, *, largest):
    """Worst rate over the designs per M, with its Wilson limits (NaN cells skipped)."""
    r = ds[var].sel(test=test, scenario=scenario).values  # (design, M)
    lo = ds[f"{var}_low"].sel(test=test, scenario=scenario).values
    hi = ds[f"{var}_high"].sel(test=test, scenario=scenario).values
    out = np.full((3, r.shape[1]), np.nan)
    for m in range(r.shape[1]):
        col = r[:, m]
        if not np.isfinite(col).any():
            continue
        d = int(np.nanargmax(col) if largest else np.nanargmin(col))
        out[:, m] = col[d], lo[d, m], hi[d, m]
    return out


def error_rates(archive, *, tests=SHOWN_TESTS, size="double", font_size=None, dpi=None,
                title=None):
    """Rates of the verdicts of the ``error-rates`` study (``uqx sweep error-rates``).

    First panel, calibrated data against M: for every test the largest ``invalid`` rate
    over the designs (solid; target 5 %, dashed line) and the smallest ``valid`` rate
    (dashed, open markers; target 90 %). Then one panel per miscalibrated scenario at
    the size it ran: the smallest ``invalid`` rate over its designs for every test
    (bars, the power; 95 % line). Error bars: Wilson-cc 95 % limits.

    Parameters
    ----------
    archive : xarray.Dataset or path to NetCDF
        :func:`uqx.sweeps.error_rates.error_rates` output.
    tests : sequence of str
        Tests drawn (default :data:`SHOWN_TESTS`).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = load(archive)
    need_study(ds, "error-rates", ["rate_invalid", "rate_valid", "n_sets"])
    tests = [t for t in tests if t in [str(x) for x in ds["test"].values]]
    scen = [str(s) for s in ds["scenario"].values
            if int(ds["n_sets"].sel(scenario=s).max()) > 0]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(scen), size=size, ncols=min(len(scen), 3), aspect=0.8)
        for ax, sc in zip(axes, scen, strict=False):
            if sc == "calibrated":
                _calibrated_panel(ax, ds, tests)
            else:
                _power_panel(ax, ds, tests, sc)
        S.legend(fig, axes[: len(scen)], ncols=5)
    return S.finish(fig, title=title)


def _calibrated_panel(ax, ds, tests):
    M = ds["M"].values.astype(float)
    for k, t in enumerate(tests):
        color = _color(k, t)
        mark = _MARK[k % len(_MARK)]
        shift = 1 + 0.012 * (k - len(tests) / 2)
        inv = _worst(ds, "rate_invalid", t, "calibrated", largest=True)
        ok = np.isfinite(inv[0])
        ax.errorbar(M[ok] * shift, inv[0, ok], yerr=[inv[0, ok] - inv[1, ok],
                                                   inv[2, ok] - inv[0, ok]],
                    fmt=mark + "-", ms=3, lw=1, color=color, label=t)
        val = _worst(ds, "rate_valid", t, "calibrated", largest=False)
        ok = np.isfinite(val[0])
        ax.plot(M[ok] * shift, val[0, ok], mark + "--", ms=3, lw=0.8, color=color, mfc="none")
    S.reference_line(ax, 0.05, kind="h")
    S.reference_line(ax, 0.90, kind="h")
    ax.set_xscale("log")
    ax.set_xticks(M, [f"{int(m)}" for m in M])  # the sizes run, not the decades
    ax.minorticks_off()
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("M")
    ax.set_ylabel("invalid (—), valid (- -)")
    S.set_title(ax, "calibrated")


def _power_panel(ax, ds, tests, sc):
    have = ds["n_sets"].sel(scenario=sc).max(["design", "test"]).values > 0
    M = int(ds["M"].values[np.argmax(have)])
    x = np.arange(len(tests))
    rate = np.full((3, len(tests)), np.nan)
    for k, t in enumerate(tests):
        m = list(ds["M"].values).index(M)
        rate[:, k] = _worst(ds, "rate_invalid", t, sc, largest=False)[:, m]
    colors = [_color(k, t) for k, t in enumerate(tests)]
    ok = np.isfinite(rate[0])
    ax.bar(x[ok], rate[0, ok], color=[c for c, o in zip(colors, ok, strict=True) if o],
           width=0.7, yerr=[rate[0, ok] - rate[1, ok], rate[2, ok] - rate[0, ok]],
           error_kw={"lw": 0.8})
    S.reference_line(ax, 0.95, kind="h")
    ax.set_xticks(x, tests, rotation=60, ha="right")
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("invalid (power)")
    S.set_title(ax, f"{sc} (M = {M})")
