"""Panel of the ``error-rates`` study: how often each verdict is wrong, against M.

One panel per scenario. On calibrated data the panel shows, for every test, the largest
false-rejection rate over the designs (solid, "invalid") and the smallest acceptance rate
(dashed, "valid"), with the 5 % and 90 % lines of the targets; on miscalibrated scenarios
the smallest rate of ``invalid`` over the designs (the power). Error bars: Wilson-cc 95 %.
"""

from __future__ import annotations

import numpy as np

from uqx.plot import style as S
from uqx.plot._input import load

__all__ = ["error_rates", "SHOWN_TESTS"]

#: Tests drawn (the archive holds more: the papers' ζ rule, LZISD bins).
SHOWN_TESTS = ("zms", "rce", "cc", "ence", "zmse", "zve", "consistency", "adaptivity", "any")
_MARK = ("o", "s", "^", "D", "v", "P", "X", "*", "h")


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
    """Rates of the verdicts against M, one panel per scenario (``uqx sweep error-rates``).

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
    from uqx.plot.study_panels import _need

    ds = load(archive)
    _need(ds, "error-rates", ["rate_invalid", "rate_valid", "n_sets"])
    tests = [t for t in tests if t in [str(x) for x in ds["test"].values]]
    scen = [str(s) for s in ds["scenario"].values
            if int(ds["n_sets"].sel(scenario=s).max()) > 0]
    M = ds["M"].values.astype(float)
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(scen), size=size, ncols=min(len(scen), 3), aspect=0.8)
        for ax, sc in zip(axes, scen, strict=False):
            calibrated = sc == "calibrated"
            for k, t in enumerate(tests):
                inv = _worst(ds, "rate_invalid", t, sc, largest=calibrated)
                ok = np.isfinite(inv[0])
                shift = 1 + 0.012 * (k - len(tests) / 2)
                color = S.COLORS["series"][k % len(S.COLORS["series"])]
                ax.errorbar(M[ok] * shift, inv[0, ok], yerr=[inv[0, ok] - inv[1, ok],
                                                           inv[2, ok] - inv[0, ok]],
                            fmt=_MARK[k % len(_MARK)] + "-", ms=3, lw=1, color=color,
                            label=t)
                if calibrated and t != "any":
                    val = _worst(ds, "rate_valid", t, sc, largest=False)
                    ok = np.isfinite(val[0])
                    ax.plot(M[ok] * shift, val[0, ok], _MARK[k % len(_MARK)] + "--", ms=3,
                            lw=0.8, color=color, mfc="none")
            if calibrated:
                S.reference_line(ax, 0.05, kind="h")
                S.reference_line(ax, 0.90, kind="h")
                ax.set_ylabel("rate (solid: invalid, worst design; dashed: valid)")
            else:
                S.reference_line(ax, 0.95, kind="h")
                ax.set_ylabel("rate of invalid (power, weakest design)")
            ax.set_xscale("log")
            ax.set_ylim(-0.02, 1.02)
            ax.set_xlabel("M")
            S.set_title(ax, sc)
        S.legend(fig, axes[: len(scen)], ncols=5)
    return S.finish(fig, title=title)
