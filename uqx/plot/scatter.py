"""Scatter diagnostics with running quantiles: E vs uE and Z vs X/V (methods: curves).

003 Fig. 2 (E vs u, guide lines E = ±k u) and Fig. 8 / A1 (Z vs X or V, guide lines
Z = ±k); the running 95 % Harrell–Davis quantiles should follow ±1.96 u (or ±1.96) for
calibrated normal errors.
"""

from __future__ import annotations

import numpy as np

from uqx.dataio.model import iter_sets
from uqx.engine.defaults import LEVEL
from uqx.errors import InputError
from uqx.inference.curves.confidence import running_quantiles
from uqx.plot import style as S
from uqx.plot.inputs import as_sets, panel_titles, units_of

__all__ = ["e_vs_u", "z_vs_x"]


def _ylim(y, ylim):
    if ylim is not None:
        return ylim
    m = float(np.quantile(np.abs(y), 0.995)) * 1.15
    return (-m, m)


def _quantile_lines(ax, rq, level, first):
    lab = f"running {level:.0%} quantiles" if first else None
    ax.plot(rq["x_mid"], rq["q_low"], color=S.COLORS["quantile"], lw=1.4, label=lab, zorder=3)
    ax.plot(rq["x_mid"], rq["q_high"], color=S.COLORS["quantile"], lw=1.4, zorder=3)


def e_vs_u(data, *, level=LEVEL, n_bins=None, logx="auto", ylim=None, size="double",
           font_size=None, dpi=None, title=None):
    r"""Errors against uncertainties with guide lines and running quantiles (003 Fig. 2).

    Guide lines :math:`E = \pm k u_E` (k = 1, 2, 3; k = 2 bold) and the running
    Harrell–Davis quantiles at :math:`(1 \mp p)/2` on sliding windows of the u-sorted data
    (:func:`uqx.inference.curves.confidence.running_quantiles`); for a calibrated normal model they
    follow :math:`\pm 1.96\,u_E`.

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data (one panel per set).
    level : float, default 0.95
        Probability p of the running quantile pair.
    n_bins : int, optional
        Sets the sliding-window width (default :math:`\lceil 2 M^{0.333}\rceil`).
    logx : bool or "auto"
        Log x axis ("auto": when the 0.5–99.5 % quantiles of uE span more than a decade,
        e.g. the skewed uncertainties of QM9_E).
    ylim : (float, float), optional
        y range (default ±1.15 × the 99.5 % quantile of abs(E)).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = as_sets(data)
    units = units_of(ds, "E")
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(ds.sizes["set"], size=size)
        for i, (ax, sd, name) in enumerate(zip(axes, iter_sets(ds), panel_titles(ds),
                                               strict=True)):
            log = S.wants_log(sd.uE, logx)
            S.scatter(ax, sd.uE, sd.E)
            grid = (np.geomspace if log else np.linspace)(sd.uE.min(), sd.uE.max(), 200)
            for k in (1, 2, 3):
                lab = r"$E = \pm k\,u_E$, k = 1, 2, 3" if (i == 0 and k == 1) else None
                for sgn in (-1, 1):
                    ax.plot(grid, sgn * k * grid, color=S.COLORS["reference"], ls="--",
                            lw=1.3 if k == 2 else 0.7, label=lab if sgn > 0 else None,
                            zorder=1)
            _quantile_lines(ax, running_quantiles(sd.uE, sd.E, n_bins=n_bins, level=level),
                            level, i == 0)
            if log:
                S.log_axis(ax)
            ax.set_ylim(*_ylim(sd.E, ylim))
            ax.set_xlabel(S.label("uE", units))
            ax.set_ylabel(S.label("E", units))
            S.set_title(ax, name)
        S.legend(fig, axes)
    return S.finish(fig, title=title)


def z_vs_x(data, *, by="X", level=LEVEL, n_bins=None, logx="auto", ylim=None,
           size="double", font_size=None, dpi=None, title=None):
    r"""z-scores against an input feature or the prediction (003 Figs. 8, A1, 16b).

    Guide lines Z = ±1, ±2, ±3 (±2 bold) and running HD quantiles of Z on sliding windows
    of the data sorted by ``by`` (methods: curves); for calibrated normal errors conditional
    on ``by`` (adaptivity) they stay near ±1.96.

    Parameters
    ----------
    data : xarray.Dataset, list of Dataset or path to NetCDF
        Input data with the conditioning variable (one panel per set).
    by : {"X", "V", "uE"}, default "X"
        Abscissa.
    level, n_bins, logx, ylim, size, font_size, dpi, title
        As in :func:`e_vs_u` (default y range ±1.15 × the 99.5 % quantile of abs(Z)).

    Returns
    -------
    matplotlib.figure.Figure
    """
    ds = as_sets(data)
    sets = list(iter_sets(ds))
    if all(getattr(sd, by, None) is None for sd in sets):
        raise InputError(f"no data set has the variable {by!r} (give --X / --V columns)")
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(ds.sizes["set"], size=size)
        for i, (ax, sd, name) in enumerate(zip(axes, sets, panel_titles(ds), strict=True)):
            if getattr(sd, by, None) is None:  # a set without the variable: say so
                ax.text(0.5, 0.5, f"no {by} in this set", ha="center", va="center",
                        transform=ax.transAxes, color="0.4")
                ax.set_xticks([])
                ax.set_yticks([])
                S.set_title(ax, name)
                continue
            x = sd.variable(by)
            z = sd.E / sd.uE
            S.scatter(ax, x, z)
            for k in (1, 2, 3):
                lab = "Z = ±1, ±2, ±3" if (i == 0 and k == 1) else None
                for sgn in (-1, 1):
                    S.reference_line(ax, sgn * k, lw=1.3 if k == 2 else 0.7,
                                     label=lab if sgn > 0 else None)
            _quantile_lines(ax, running_quantiles(x, z, n_bins=n_bins, level=level), level,
                            i == 0)
            if S.wants_log(x, logx):
                S.log_axis(ax)
            ax.set_ylim(*_ylim(z, ylim))
            ax.set_xlabel(S.axis_label(ds, by))
            ax.set_ylabel(S.label("Z"))
            S.set_title(ax, name)
        S.legend(fig, axes)
    return S.finish(fig, title=title)
