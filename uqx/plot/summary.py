"""Summary figures over data sets: tailedness map and ζ-score comparisons.

* :func:`tailedness_map` — 001 Fig. 5: β_GM(E²), β_GM(Z²) against β_GM(u²) (and the
  κ_CS analogue), unsafe zones shaded (001 Table II) and the NIG line;
* :func:`zeta_agreement` — 001 Fig. 6 / 004 Fig. 1: abs(ζ_ZMS) against abs(ζ_RCE) with
  the zones where the two statistics disagree on validity;
* :func:`zeta_bars` — 000 Figs. 8–9: grouped bars of ζ_BS, ζ_Sim and ζ_Sim2 per set.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.lines import Line2D
from scipy import integrate, stats

from uqx.dataio.model import InputError
from uqx.engine.stats.tailedness import SAFETY_LIMITS, tailedness
from uqx.plot import style as S
from uqx.plot.inputs import as_sets, load

__all__ = ["tailedness_map", "zeta_agreement", "zeta_bars", "tested_stats", "nig_beta_line",
           "nig_kappa_line"]


def _beta_gm_population(dist) -> float:
    r"""Return the population β_GM = (mean − median)/E|X − median| of a positive distribution.

    :math:`E|X - m| = \mu - 2\int_0^m x f(x)\,dx` (since F(m) = ½); 1 for infinite mean.
    """
    mean = dist.mean()
    if not np.isfinite(mean):
        return 1.0
    m = dist.median()
    partial = integrate.quad(lambda x: x * dist.pdf(x), 0, m, limit=200)[0]
    return float((mean - m) / (mean - 2 * partial))


@lru_cache(maxsize=4)
def nig_beta_line(n: int = 50) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""NIG curve of 001 Fig. 5: β_GM(u²) and β_GM(E²) for ν = 10^seq(0, 2, n).

    u² ~ IG(ν/2, ν/2) and E² ~ F(1, ν); the paper estimates both from samples of 10⁶
    points, here the population values are integrated (the HD median of 10⁶ points
    equals the population median to ~1e-3).

    Returns
    -------
    nu, beta_u2, beta_e2 : numpy.ndarray, shape (n,)
    """
    nu = 10 ** np.linspace(0, 2, n)
    bu = np.array([_beta_gm_population(stats.invgamma(v / 2, scale=v / 2)) for v in nu])
    be = np.array([_beta_gm_population(stats.f(1, v)) for v in nu])
    return nu, bu, be


def _kappa_cs_population(dist) -> float:
    """Return the population κ_CS = (q.975 − q.025)/(q.75 − q.25) − 2.91 (by ppf)."""
    q = dist.ppf([0.025, 0.975, 0.25, 0.75])
    return float((q[1] - q[0]) / (q[3] - q[2]) - 2.91)


@lru_cache(maxsize=4)
def nig_kappa_line(n: int = 50) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NIG curve of 001 Fig. 5 (right): κ_CS(u²), κ_CS(E²) for ν = 10^seq(0, 2, n).

    Population values (the paper uses samples of 10⁵ points).
    """
    nu = 10 ** np.linspace(0, 2, n)
    ku = np.array([_kappa_cs_population(stats.invgamma(v / 2, scale=v / 2)) for v in nu])
    ke = np.array([_kappa_cs_population(stats.f(1, v)) for v in nu])
    return nu, ku, ke


def _tailedness_table(data):
    """Tailedness metrics per set: from a result's variables, or computed from the data."""
    ds = load(data)
    keys = ("beta_gm_u2", "beta_gm_e2", "beta_gm_z2", "kappa_cs_u2", "kappa_cs_e2",
            "kappa_cs_z2")
    if "E" not in ds and any(k in ds for k in keys):  # validation result: what it has
        t = {k: ds[k].values for k in keys if k in ds and ds[k].dims == ("set",)}
    else:
        ds = as_sets(ds)
        t = tailedness(ds["E"].values, ds["uE"].values)
    labels = ds["label"].values if "label" in ds.coords else ds["set"].values
    return t, [str(v).replace("Set ", "") for v in labels]


_MAP = {  # metric -> (variable prefix, NIG line, axis symbol, beta y range)
    "beta": ("beta_gm", nig_beta_line, r"\beta_{GM}", (0.4, 1.03)),
    "kappa": ("kappa_cs", nig_kappa_line, r"\kappa_{CS}", None),
}


def tailedness_map(data, *, metrics=None, size=None, font_size=None, dpi=None,
                   title=None):
    """Tailedness map: metric of E² and Z² against that of u² per set (001 Fig. 5).

    Left β_GM, right κ_CS (log y). Points in the shaded zones (β_GM(u²) > 0.6 or
    β_GM(E²/Z²) > 0.8; κ_CS(u²) > 3 or κ_CS(E²/Z²) > 5; 001 Table II) have statistics
    that the bootstrap cannot validate reliably (RCE for E², ZMS for Z²); the NIG line
    marks calibrated normal errors with inverse-gamma variances (population values).

    Parameters
    ----------
    data : xarray.Dataset or path to NetCDF
        Input data (stacked sets) or a :func:`uqx.validate` result with the
        ``beta_gm_*`` and ``kappa_cs_*`` variables.
    metrics : sequence of {"beta", "kappa"}, optional
        Panels, left to right; default both (those a result holds).
    size, font_size, dpi, title
        Figure options (:mod:`uqx.plot.style`); default size single for one panel,
        double for two.

    Returns
    -------
    matplotlib.figure.Figure
    """
    t, labels = _tailedness_table(data)
    have = [m for m in _MAP if all(f"{_MAP[m][0]}_{v}" in t for v in ("u2", "e2", "z2"))]
    metrics = have if metrics is None else list(metrics)
    bad = [m for m in metrics if m not in _MAP]
    if bad or not metrics:
        raise InputError(f"unknown tailedness metrics {bad}; choose beta and/or kappa"
                         if bad else "the result has no tailedness variables (beta_gm_*, "
                         "kappa_cs_*): give the data instead")
    missing = [m for m in metrics if m not in have]
    if missing:
        raise InputError(f"the result has no {', '.join(missing)} tailedness variables; "
                         f"it has {', '.join(have) or 'none'}")
    size = size or ("single" if len(metrics) == 1 else "double")
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(metrics), size=size, aspect=0.85)
        for ax, m in zip(axes, metrics, strict=True):
            keys = _tailedness_panel(ax, t, labels, m)
        if len(axes) == 1 or keys:
            _outside_legend(axes[-1], keys)
        else:
            S.legend(fig, axes)
    return S.finish(fig, title=title)


def _tailedness_panel(ax, t, labels, metric):
    key, line, sym, ylim = _MAP[metric]
    xl, yl = SAFETY_LIMITS[f"{key}_u2"], SAFETY_LIMITS[f"{key}_e2"]
    x, ye, yz = t[f"{key}_u2"], t[f"{key}_e2"], t[f"{key}_z2"]
    _, lu, le = line()
    ax.plot(lu, le, color=S.COLORS["reference"], ls="--", lw=1, label="NIG model")
    ax.scatter(x, ye, marker="^", color=S.COLORS["data"], s=22, zorder=3,
               label="of $E^2$ (RCE, ENCE)")
    ax.scatter(x, yz, marker="s", color=S.COLORS["highlight"], s=18, zorder=3,
               label="of $Z^2$ (ZMS, ZMSE)")
    keys = _label_points(ax, x, ye, labels)
    if metric == "beta":
        ax.set_xlim(0, 1)
        ax.set_ylim(*ylim)
    else:
        finite = np.r_[ye, yz][np.isfinite(np.r_[ye, yz])]
        ax.set_yscale("log")
        ax.set_ylim(max(0.5, 0.7 * finite.min()) if finite.size else 0.5,
                    max(30.0, 1.3 * finite.max()) if finite.size else 30.0)
        ax.set_xlim(min(-0.5, np.nanmin(x) - 0.3), max(8.0, np.nanmax(x) + 0.5))
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    ax.axvspan(xl, x1, color=S.COLORS["invalid"], alpha=0.12, lw=0, label="unsafe zone")
    ax.axhspan(yl, y1, color=S.COLORS["invalid"], alpha=0.12, lw=0)
    ax.set_xlabel(rf"${sym}(u_E^2)$")
    ax.set_ylabel(rf"${sym}(E^2)$, ${sym}(Z^2)$")
    return keys


def _label_points(ax, x, y, names):
    """Label points by short names, or by numbers with a key in the legend (long names)."""
    short = all(len(n) <= 3 for n in names)
    keys = []
    for i, (xi, yi, n) in enumerate(zip(x, y, names, strict=True)):
        tag = n if short else str(i + 1)
        ax.annotate(S.plain(tag), (xi, yi), xytext=(3, 3), textcoords="offset points",
                    fontsize="small")
        if not short:
            keys.append(Line2D([], [], ls="", marker=f"${tag}$", color="0.2",
                               label=S.plain(n), markersize=5))
    return keys


def _outside_legend(ax, extra=()):
    handles, labels = ax.get_legend_handles_labels()
    handles += list(extra)
    labels += [h.get_label() for h in extra]
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              fontsize="small", borderaxespad=0)


def _zeta(res, stat, var="zeta", dist=None):
    if "stat" not in res.dims or stat not in res["stat"].values:
        raise InputError(f"the validation result has no statistic {stat!r}")
    da = res[var].sel(stat=stat)
    return (da.sel(dist=dist) if dist is not None else da).values


def _labels(res):
    vals = res["label"].values if "label" in res.coords else res["set"].values
    return [str(v) for v in vals]


#: Legend of the ±1 lines of the ζ figures: the papers' rule, not the verdicts'.
ZETA_RULE_LABEL = "|ζ| ≤ 1: the papers' ζ rule, for comparison (verdicts: Monte-Carlo tests)"


def zeta_agreement(result, *, x="zms", y="rce", size="single", font_size=None, dpi=None,
                   title=None):
    """Plot the absolute ζ-scores of two statistics against each other (001 Fig. 6).

    Also 004 Fig. 1.

    Shaded: the zones where the papers' ζ rule (abs(ζ) ≤ 1) accepts one statistic and not
    the other — the two ζ-scores disagree there. The ζ rule is the papers', shown for
    comparison: the verdicts of :func:`uqx.validate` are Monte-Carlo tests. Points are
    labelled by set.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output (``zeta(set, stat)``).
    x, y : str, default "zms", "rce"
        Statistics on the axes.
    size, font_size, dpi, title
        Figure options.

    Returns
    -------
    matplotlib.figure.Figure
    """
    res = load(result)
    if "zeta" not in res:
        raise InputError("zeta_agreement needs a validation result (variable 'zeta')")
    missing = [s for s in (x, y) if s not in tested_stats(res)]
    if missing:
        raise InputError(f"zeta_agreement needs \u03b6 of {x} and {y}; the result has none "
                         f"for {', '.join(missing)}")
    zx, zy = np.abs(_zeta(res, x)), np.abs(_zeta(res, y))
    top = max(2.0, 1.1 * float(np.nanmax(np.r_[zx, zy, 0.0])))
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, (ax,) = S.panel_grid(1, size=size, aspect=0.9)
        ax.fill_between([1, top], 0, 1, color=S.COLORS["invalid"], alpha=0.12, lw=0,
                        label="the papers' ζ rule (|ζ| ≤ 1) disagrees")
        ax.fill_between([0, 1], 1, top, color=S.COLORS["invalid"], alpha=0.12, lw=0)
        S.reference_line(ax, 1.0)
        S.reference_line(ax, 1.0, kind="v")
        ax.scatter(zx, zy, color=S.COLORS["data"], s=20, zorder=3)
        keys = _label_points(ax, zx, zy, [n.replace("Set ", "") for n in _labels(res)])
        ax.set_xlim(0, top)
        ax.set_ylim(0, top)
        ax.set_aspect("equal")
        ax.set_xlabel(rf"$|\zeta_{{{x.upper()}}}|$")
        ax.set_ylabel(rf"$|\zeta_{{{y.upper()}}}|$")
        _outside_legend(ax, keys)
    return S.finish(fig, title=title)


def tested_stats(res) -> list[str]:
    """Statistics of a validation result that have a ζ-score (finite for at least one set).

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output.

    Returns
    -------
    list of str
        In the result's order; empty without ``zeta`` or ``stat``.
    """
    if "stat" not in res.dims or "zeta" not in res:
        return []
    z = res["zeta"].values.reshape(-1, res.sizes["stat"]) if "set" in res["zeta"].dims else (
        res["zeta"].values.reshape(1, -1))
    return [str(s) for s, ok in zip(res["stat"].values, np.isfinite(z).any(axis=0),
                                    strict=True) if ok]


def zeta_bars(result, *, stats=None, size="double", font_size=None, dpi=None,
              title=None):
    """Draw grouped bars of ζ-scores per set for BS, Sim and Sim2 references (000 Figs. 8–9).

    For each statistic one panel with, per set, ζ_BS (only for a predefined reference)
    and ζ_Sim, ζ_Sim2 for every generative distribution of the result's ``dist``
    coordinate; lines at 0 and ±1: abs(ζ) ≤ 1 is the papers' ζ rule, drawn for comparison
    and named so in the legend (the verdicts of :func:`uqx.validate` are Monte-Carlo
    tests: ENCE with ζ = −9 is ``valid`` where a small ENCE is no miscalibration). A series
    without a finite ζ in a panel takes no slot there, and the legend names only the
    series drawn.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output with ``zeta``, ``zeta_sim`` and ``zeta_sim2``.
    stats : sequence of str, optional
        Statistics, one panel each (000 Fig. 8: ``("zms", "cc")``, Fig. 9:
        ``("ence", "zmse")``); default every statistic of the result that has a ζ.
    size, font_size, dpi, title
        Figure options.

    Returns
    -------
    matplotlib.figure.Figure
    """
    res = load(result)
    if "zeta" not in res:
        raise InputError("zeta_bars needs a validation result (variable 'zeta')")
    if stats is None:
        stats = tested_stats(res)
        if not stats:
            raise InputError("the validation result has no finite \u03b6-score to draw")
    stats = [stats] if isinstance(stats, str) else list(stats)
    have = [str(s) for s in res["stat"].values] if "stat" in res.dims else []
    missing = [s for s in stats if s not in have]
    if missing or not stats:
        raise InputError(f"the validation result has no statistic "
                         f"{', '.join(missing) or '(none asked)'}; it has {', '.join(have)}")
    dists = [str(d) for d in res["dist"].values] if "dist" in res.dims else []
    series = [("zeta", None, r"$\zeta_{BS}$")]
    for var, tag in (("zeta_sim", "Sim"), ("zeta_sim2", "Sim2")):
        if var in res:
            series += [(var, d, rf"$\zeta_{{{tag},{d}}}$") for d in dists]
    labels = [lab.replace("Set ", "") for lab in _labels(res)]
    n_set = len(labels)
    shown = set()
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(stats), size=size, ncols=1, aspect=0.3)
        for ax, stat in zip(axes, stats, strict=True):
            predefined = True
            if "reference_kind" in res:
                kind = np.ravel(res["reference_kind"].sel(stat=stat).values)
                predefined = str(kind[0]) == "predefined"
            drawn = []  # only the series with a zeta: no empty slots, no legend without bar
            for k, (var, d, lab) in enumerate(series):
                z = _zeta(res, stat, var, d)
                if var == "zeta" and not predefined:
                    continue  # zeta = zeta_Sim,N there: no BS bar
                if np.isfinite(z).any():
                    drawn.append((k, z, lab))
            width = min(0.8 / max(len(drawn), 1), 0.3)
            for n, (k, z, lab) in enumerate(drawn):  # the colour stays that of the series
                ax.bar(np.arange(n_set) + (n - (len(drawn) - 1) / 2) * width, z, width,
                       color=S.COLORS["series"][k % 8], label=lab)
                shown.add(lab)
            if not drawn:
                ax.text(0.5, 0.5, "no \u03b6-score for this statistic", ha="center",
                        va="center", transform=ax.transAxes, color="0.4")
            S.reference_line(ax, 0.0, ls="-", lw=0.6)
            for v in (-1, 1):  # the papers' decision, not the verdicts'
                S.reference_line(ax, v, label=ZETA_RULE_LABEL if v == 1 else None)
            ax.set_xlim(-0.5, n_set - 0.5)  # the bars centred on their set's tick
            ax.set_xticks(np.arange(n_set), [S.plain(x) for x in labels])
            if sum(len(str(x)) for x in labels) > 60:  # long names would overlap
                ax.tick_params(axis="x", labelrotation=30)
                for t in ax.get_xticklabels():
                    t.set_horizontalalignment("right")
            ax.set_xlabel("Data set")
            ax.set_ylabel(rf"$\zeta$ ({stat.upper()})")
        S.legend(fig, axes, ncols=max(len(shown), 1))
    return S.finish(fig, title=title)
