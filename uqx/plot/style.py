"""Shared figure style of :mod:`uqx.plot`: palette, sizes, panel grids, common artists.

* Okabe–Ito colour-blind-safe palette (Okabe & Ito 2008);
* ``size="single"`` (3.4 in, one column of a two-column paper) or ``"double"`` (7.0 in);
* font size and DPI settable per figure; dense scatter layers are rasterized so PDF/SVG
  output stays small;
* 95 % intervals drawn as error bars or bands, reference lines dashed grey.

Figures are plain :class:`matplotlib.figure.Figure` objects created without pyplot: no
display and no global figure registry are involved, ``savefig`` renders PNG with Agg (and
PDF/SVG with their vector backends) whatever the interactive backend is, and notebooks
still show a returned figure.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

import matplotlib
import numpy as np
from matplotlib import ticker
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from uqx.dataio.model import VARIABLES, InputError
from uqx.engine.confidence import interval_contains
from uqx.plot.inputs import units_of

__all__ = [
    "OKABE_ITO",
    "COLORS",
    "SIZES",
    "style",
    "panel_grid",
    "label",
    "axis_label",
    "plain",
    "reference_line",
    "interval_bars",
    "full_set_marker",
    "corner_text",
    "log_axis",
    "wants_log",
    "set_title",
    "finish",
    "legend",
    "scatter",
]

#: Okabe–Ito colour-blind-safe palette.
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "skyblue": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
}

#: Semantic colours used by all figures.
COLORS = {
    "data": OKABE_ITO["blue"],
    "valid": OKABE_ITO["blue"],
    "invalid": OKABE_ITO["vermillion"],
    "reference": "0.35",
    "band": OKABE_ITO["skyblue"],
    "oracle": OKABE_ITO["green"],
    "points": "0.55",
    "quantile": OKABE_ITO["vermillion"],
    "highlight": OKABE_ITO["orange"],
    "series": [OKABE_ITO[k] for k in ("blue", "vermillion", "green", "orange", "purple",
                                       "skyblue", "black", "yellow")],
}

#: Figure widths in inches (two-column paper: one column, full width).
SIZES = {"single": 3.4, "double": 7.0}


@contextmanager
def style(*, font_size: float | None = None, dpi: float | None = None, size="double"):
    """Context of the uqx rcParams (fonts, lines, DPI, vector-friendly output).

    Parameters
    ----------
    font_size : float, optional
        Base font size in points (default 8 for single-column, 9 for double).
    dpi : float, optional
        Figure and savefig resolution (default 150).
    size : {"single", "double"}
        Target width; only sets the default font size here.
    """
    if size not in SIZES:
        raise InputError(f"size must be 'single' or 'double', got {size!r}")
    fs = font_size or (8.0 if size == "single" else 9.0)
    rc = {
        "font.size": fs,
        "axes.titlesize": fs,
        "axes.labelsize": fs,
        "xtick.labelsize": fs - 1,
        "ytick.labelsize": fs - 1,
        "legend.fontsize": fs - 1,
        "legend.frameon": False,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": False,
        "lines.linewidth": 1.2,
        "lines.markersize": 4,
        "errorbar.capsize": 0,
        "figure.dpi": dpi or 150,
        "savefig.dpi": dpi or 150,
        "savefig.bbox": "tight",
        "pdf.fonttype": 42,
        "svg.fonttype": "none",
        "path.simplify": True,
        "axes.prop_cycle": matplotlib.cycler(color=COLORS["series"]),
    }
    with matplotlib.rc_context(rc):
        yield


def panel_grid(n: int, *, size="double", aspect=0.8, ncols=None, sharex=False,
               sharey=False, figsize=None):
    """Create a figure with ``n`` panels on a grid (extra cells removed).

    Parameters
    ----------
    n : int
        Number of panels (one per data set).
    size : {"single", "double"}
        Figure width :data:`SIZES`; default columns 2 (single) or 3 (double).
    aspect : float
        Panel height / panel width.
    figsize : (float, float), optional
        Explicit size in inches (overrides ``size``/``aspect``).

    Returns
    -------
    fig, axes : matplotlib.figure.Figure, list of Axes (length n)
    """
    if size not in SIZES:
        raise InputError(f"size must be 'single' or 'double', got {size!r}")
    ncols = ncols or min(n, 2 if size == "single" else 3)
    nrows = math.ceil(n / ncols)
    width = SIZES[size]
    if figsize is None:
        # panel heights plus room for titles, axis labels and a top legend
        figsize = (width, (width / ncols * aspect + 0.35) * nrows + 0.45)
    fig = Figure(figsize=figsize, layout="constrained")
    axs = fig.subplots(nrows, ncols, squeeze=False, sharex=sharex, sharey=sharey)
    axs = list(axs.ravel())
    for ax in axs[n:]:
        ax.remove()
    return fig, axs[:n]


_NAMES = {
    "E": "Error E",
    "uE": "Uncertainty $u_E$",
    "X": "Input feature X",
    "V": "Predicted value V",
    "Z": "z-score Z = E/$u_E$",
}


def plain(text) -> str:
    r"""Return user text (a set name, a label, units, a title) that matplotlib draws as is.

    Matplotlib reads the text between two ``$`` as mathtext: ``cost_$5_and_$10`` fails
    to render and ``gain $5 to $10`` is drawn as math. Every ``$`` is escaped (``\$``),
    which matplotlib draws as a dollar sign, alone or beside mathtext of the figure's
    own. Every name or label that comes from the user goes through here.

    Parameters
    ----------
    text : object
        The text (converted with :class:`str`).

    Returns
    -------
    str
        The text with each ``$`` escaped.

    Examples
    --------
    >>> plain("cost_$5")
    'cost_\\$5'
    """
    return str(text).replace("$", r"\$")


def label(var: str, units: str = "") -> str:
    """Axis label of a variable with its units, e.g. ``"Error E [eV]"``.

    ``var`` is one of the known variables (``"E"``, ``"uE"``..., drawn with mathtext) or
    any other text, drawn as it is (:func:`plain`), as are the units.
    """
    text = _NAMES[var] if var in _NAMES else plain(var)
    units = "" if units in ("", "mixed", "arbitrary", None) else plain(units)
    return f"{text} [{units}]" if units else text


def axis_label(ds, var: str) -> str:
    """Axis label of a conditioning variable: a data-specific long name when there is one."""
    units = units_of(ds, "E" if var == "uE" else var)
    long = str(ds[var].attrs.get("long_name", "")) if var in ds else ""
    if var in ("X", "V") and long and long != VARIABLES.get(var) and len(long) <= 30:
        return label(f"{long[:1].upper()}{long[1:]} {var}", units)
    return label(var, units)


def reference_line(ax, value=None, *, kind="h", **kw):
    """Dashed grey reference line: horizontal (``kind="h"``), vertical, or identity."""
    opts = {"color": COLORS["reference"], "ls": "--", "lw": 0.9, "zorder": 1} | kw
    if kind == "h":
        return ax.axhline(value, **opts)
    if kind == "v":
        return ax.axvline(value, **opts)
    return ax.axline((0, 0), slope=1, **opts)


def interval_bars(ax, x, y, lo, hi, *, valid=None, target=None, **kw):
    """Points with 95 % error bars; bins whose interval misses ``target`` in vermillion.

    Returns the list of created containers.
    """
    x, y, lo, hi = (np.asarray(a, dtype=np.float64) for a in (x, y, lo, hi))
    if valid is None and target is not None:
        valid = interval_contains(lo, hi, target)
    out = []
    groups = [(np.ones(x.size, bool), COLORS["data"], None)] if valid is None else [
        (np.asarray(valid, bool), COLORS["valid"], "interval contains target"),
        (~np.asarray(valid, bool), COLORS["invalid"], "interval misses target")]
    for mask, color, lab in groups:
        if not mask.any():
            continue
        yerr = np.vstack([y[mask] - lo[mask], hi[mask] - y[mask]])
        out.append(ax.errorbar(x[mask], y[mask], yerr=np.maximum(yerr, 0), fmt="o",
                               color=color, ms=3.5, elinewidth=1.0, label=lab,
                               zorder=3, **kw))
    return out


def full_set_marker(ax, value, lo, hi, *, target=None, colors=None):
    """Full-set value(s) and interval(s) as diamonds right of the bins, labelled "all".

    ``value``, ``lo``, ``hi`` may be arrays (one marker per probability level, coloured
    by ``colors``); otherwise the colour says whether the interval contains ``target``.
    """
    value, lo, hi = (np.atleast_1d(np.asarray(a, dtype=np.float64)) for a in (value, lo, hi))
    ax.autoscale_view()
    x0, x1 = ax.get_xlim()
    log = ax.get_xscale() == "log"
    fwd, inv = (np.log10, lambda t: 10.0**t) if log else (float, float)
    t0, t1 = fwd(x0), fwd(x1)
    span = t1 - t0
    xm = inv(t1 + 0.07 * span)
    ax.axvline(inv(t1 + 0.02 * span), color="0.75", lw=0.6, zorder=0)
    for k in range(value.size):
        ok = target is None or bool(interval_contains(lo[k], hi[k], target))
        col = colors[k] if colors is not None else (
            COLORS["valid"] if ok else COLORS["invalid"])
        ax.errorbar([xm], [value[k]], yerr=[[max(value[k] - lo[k], 0)],
                                            [max(hi[k] - value[k], 0)]],
                    fmt="D", color=col, ms=4.5, elinewidth=1.6, zorder=4)
    ax.annotate("all", (xm, 1.0), xycoords=("data", "axes fraction"), xytext=(0, -2),
                textcoords="offset points", ha="center", va="top", fontsize="small",
                color="0.3")
    ax.set_xlim(x0, inv(t1 + 0.12 * span))


def corner_text(ax, text, *, loc="lower right", headroom=True):
    """Small annotation (a score) in a panel corner."""
    x = 0.97 if "right" in loc else 0.03
    y = 0.04 if "lower" in loc else 0.96
    # headroom so that the text does not sit on the data
    lo, hi = ax.get_ylim()
    if not headroom:
        pass
    elif ax.get_yscale() == "log":
        f = (hi / lo) ** 0.15
        ax.set_ylim(lo / f, hi) if "lower" in loc else ax.set_ylim(lo, hi * f)
    else:
        d = 0.15 * (hi - lo)
        ax.set_ylim(lo - d, hi) if "lower" in loc else ax.set_ylim(lo, hi + d)
    # inside the panel: never counted by the constrained layout, whose panels would
    # otherwise shrink to make room for a note wider than they are
    t = ax.text(x, y, text, transform=ax.transAxes, ha="right" if "right" in loc else "left",
                va="bottom" if "lower" in loc else "top", fontsize="small", color="0.25")
    t.set_in_layout(False)
    return t


def wants_log(x, logx) -> bool:
    """Whether an axis of the values ``x`` should be logarithmic.

    ``logx`` True or False decides; ``"auto"``: when the values are positive and skewed.
    Skewed: the central 99 % span more than a decade and the median lies in the lowest
    quarter of that range, so that on a linear axis most points (and most equal-count
    bins) would be crammed against its left end. A uniform spread over (0, 1) stays
    linear.

    Parameters
    ----------
    x : array_like
        Values on the axis (NaN ignored).
    logx : bool or "auto"
        The caller's choice.

    Returns
    -------
    bool
        True for a log axis.
    """
    if logx == "auto":
        x = np.asarray(x, dtype=float)
        x = x[np.isfinite(x)]
        if not x.size or x.min() <= 0:
            return False
        lo, med, hi = np.quantile(x, [0.005, 0.5, 0.995])
        return bool(hi / lo > 10 and (med - lo) < 0.25 * (hi - lo))
    return bool(logx)


def log_axis(ax, which="x"):
    """Log scale; readable tick labels are set by :func:`finish` once the limits are final."""
    for name in ("x", "y") if which == "both" else (which,):
        getattr(ax, f"set_{name}scale")("log")


def _tidy_log_ticks(ax):
    """Plain-number ticks on log axes, thinned to the span so that labels never overlap."""
    for name in ("x", "y"):
        if getattr(ax, f"get_{name}scale")() != "log":
            continue
        axis = getattr(ax, f"{name}axis")
        if isinstance(axis.get_major_locator(), ticker.FixedLocator):
            continue  # the panel chose its ticks (e.g. the sizes of a study)
        lo, hi = sorted(getattr(ax, f"get_{name}lim")())
        decades = np.log10(hi / lo) if lo > 0 else 3.0
        if decades > 2.5:
            loc = ticker.LogLocator(numticks=6)
        elif decades > 2.0:
            loc = ticker.LogLocator(subs=(1.0,))
        elif decades > 0.6:
            loc = ticker.LogLocator(subs=(1.0, 2.0, 5.0))
        else:
            loc = ticker.MaxNLocator(nbins=3)
        axis.set_major_locator(loc)
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(ticker.NullFormatter())


def set_title(ax, text, **kw):
    """Panel title, drawn as text (:func:`plain`: names are never math).

    Smaller for long names so that neighbouring titles do not collide; ``kw`` go to
    :meth:`matplotlib.axes.Axes.set_title` (``loc``, ``color``, ``fontsize``).
    """
    text = str(text)
    kw.setdefault("fontsize", "medium" if len(text) <= 24 else "small")
    ax.set_title(plain(text), **kw)


def scatter(ax, x, y, *, n_max=None, **kw):
    """Dense scatter layer: small grey points, rasterized for vector output."""
    opts = {"s": 3, "color": COLORS["points"], "alpha": 0.5, "lw": 0, "rasterized": True,
            "zorder": 0} | kw
    return ax.scatter(x, y, **opts)


def legend(fig, axes, *, ncols=None, where="upper center"):
    """One legend for the whole figure, outside the panels (only when something is labelled).

    Above the panels also for a single panel, so that it never covers the data or a
    panel's note (:func:`corner_text`); as many columns as fit the figure's width.
    """
    handles, labels = [], []
    for ax in axes:
        for h, lab in zip(*ax.get_legend_handles_labels(), strict=True):
            if lab not in labels:
                handles.append(h)
                labels.append(lab)
    if not handles:
        return None
    ncols = ncols or min(len(labels), 4)
    while True:  # fewer columns until the legend fits the figure's width (never cut)
        leg = fig.legend(handles, labels, loc=f"outside {where}", ncols=ncols)
        if ncols == 1 or _legend_width(fig, leg) <= fig.get_figwidth() * fig.dpi:
            return leg
        leg.remove()
        ncols -= 1


def _legend_width(fig, leg) -> float:
    """Width of a figure legend in display pixels (drawn once on the figure's canvas)."""
    canvas = fig.canvas if hasattr(fig.canvas, "get_renderer") else FigureCanvasAgg(fig)
    renderer = canvas.get_renderer()
    return leg.get_window_extent(renderer).width


def finish(fig, *, title=None):
    """Tidy log-axis ticks, add an optional figure title (as text) and return the figure."""
    for ax in fig.axes:
        _tidy_log_ticks(ax)
    if title:
        fig.suptitle(plain(title))
    return fig
