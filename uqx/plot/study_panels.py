"""Panels of the Monte-Carlo study archives of :mod:`uqx.sweeps` (besides App. B).

Each function takes an archive (``xarray.Dataset`` or NetCDF path written by
``uqx sweep``) and returns a matplotlib Figure:

* :func:`pval` — 001 Fig. 4: p_val of ZMS and RCE against ν with Wilson-cc intervals,
  nominal 0.95, top axis with the mean β_GM of the point;
* :func:`bins` — 002 Figs. 2–3, 000 Fig. A3: ENCE/ZMSE/ZVE against the sweep abscissa with
  the OLS line, the papers' intercept ± 2 SE and the simulated null at zero bins;
* :func:`decimation` — 001 Fig. 7: ΔRCE and ΔZMS after removing the k % largest
  uncertainties, with the zero-centred full-set interval;
* :func:`binned_tailedness` — 001 Fig. 8: per-bin β_GM / κ_CS boxplots, full-set value
  and safety limit;
* :func:`reference_sensitivity` — 000 Fig. 7: simulated references ± 2u against ν.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FixedLocator, NullFormatter, NullLocator

from uqx.dataio.model import InputError
from uqx.inference.extrapolate.binsweep import IDEAL_INTERCEPT
from uqx.plot import style as S
from uqx.plot.inputs import load

__all__ = ["pval", "bins", "decimation", "binned_tailedness", "reference_sensitivity"]

_C = S.COLORS["series"]


def need_study(ds, study, variables):
    """Raise :class:`InputError` unless ``ds`` is a ``study`` archive holding ``variables``.

    The message names the command that writes such an archive (``uqx sweep STUDY``);
    a validation result (``uqx validate -o``) is named as such.
    """
    got = ds.attrs.get("study")
    make = f"'uqx sweep {study} -o FILE.nc' writes one"
    if got is None and "verdict" in ds:
        raise InputError(f"this figure needs a '{study}' study archive, not a validation "
                         f"result ({make}; 'uqx plot zeta' draws a validation result)")
    if got not in (None, study):
        raise InputError(f"this figure needs a '{study}' archive, got '{got}' ({make})")
    missing = [v for v in variables if v not in ds]
    if missing:
        raise InputError(f"the archive lacks {missing}: not a '{study}' archive ({make})")


def _archives(archive, labels):
    """One archive or several (for comparison) with their labels."""
    items = list(archive) if isinstance(archive, (list, tuple)) else [archive]
    ds = [load(a) for a in items]
    if labels is None:
        labels = [str(a) if isinstance(a, (str, bytes)) or hasattr(a, "stem") else f"#{i + 1}"
                  for i, a in enumerate(items)]
        labels = [getattr(a, "stem", None) or lab.rsplit("/", 1)[-1].removesuffix(".nc")
                  for a, lab in zip(items, labels, strict=True)]
    if len(labels) != len(ds):
        raise InputError(f"{len(labels)} label(s) for {len(ds)} archive(s)")
    return ds, list(labels)


_MARKERS = ("o", "s", "^", "D", "v")


def pval(archive, *, labels=None, size="double", font_size=None, dpi=None, title=None):
    """001 Fig. 4: validation probability against ν, one panel per scenario.

    ZMS and RCE with their Wilson-cc intervals (``p_val_low``/``p_val_high``), the
    nominal 0.95 (dashed), log ν axis, and on top the mean β_GM of u² (NIG) or E² (TIG).
    Several archives (a list, e.g. another n_boot or machine) are drawn on the same
    panels, one marker per archive, named by ``labels``.
    """
    archives, labels = _archives(archive, labels)
    for ds in archives:
        need_study(ds, "pval", ["nu", "p_val", "p_val_low", "p_val_high"])
    ds = archives[0]
    scen = [str(s) for s in ds["scenario"].values]
    many = len(archives) > 1
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(scen), size=size, ncols=len(scen), aspect=0.8)
        for ax, sc in zip(axes, scen, strict=True):
            for a, (arc, lab) in enumerate(zip(archives, labels, strict=True)):
                r = arc.sel(scenario=sc)
                nu = r["nu"].values.astype(float)
                for k, st in enumerate([str(s) for s in arc["stat"].values]):
                    p = r["p_val"].sel(stat=st).values
                    ok = np.isfinite(p)
                    lo, hi = (r[v].sel(stat=st).values[ok] for v in ("p_val_low", "p_val_high"))
                    shift = 1 + 0.02 * (k + 2 * a)
                    ax.errorbar(nu[ok] * shift, p[ok], yerr=[p[ok] - lo, hi - p[ok]],
                                fmt=_MARKERS[a % len(_MARKERS)] + ("-" if a == 0 else ":"),
                                ms=3, lw=1, color=_C[k],
                                label=f"{st.upper()} ({S.plain(lab)})" if many else st.upper())
            r = ds.sel(scenario=sc)
            nu = r["nu"].values.astype(float)
            S.reference_line(ax, 0.95, kind="h")
            ax.set_xscale("log")
            ax.set_xlabel(r"$\nu_{IG}$" if sc == "NIG" else r"$\nu_D$")
            ax.set_ylabel(r"$p_{val}$")
            S.set_title(ax, f"{sc}")
            tail = "beta_gm_u2_mean" if sc == "NIG" else "beta_gm_e2_mean"
            if tail in r:
                _top_axis(ax, nu, r[tail].values,
                          r"$\beta_{GM}$(" + ("u²" if sc == "NIG" else "E²") + ")")
        S.legend(fig, axes, ncols=3)
    return S.finish(fig, title=title)


def _top_axis(ax, nu, values, label):
    """Secondary top axis labelled with ``values`` at about five well-spaced ν."""
    ok = np.isfinite(values) & np.isfinite(nu)
    if not ok.any():
        return
    logs = np.log(nu[ok])
    picks = sorted({int(np.argmin(np.abs(logs - t)))
                    for t in np.linspace(logs.min(), logs.max(), 5)})
    top = ax.secondary_xaxis("top")
    top.xaxis.set_major_locator(FixedLocator(nu[ok][picks]))
    top.xaxis.set_minor_locator(NullLocator())
    top.xaxis.set_minor_formatter(NullFormatter())
    top.set_xticklabels([f"{v:.2f}" for v in values[ok][picks]])
    top.set_xlabel(label)


def bins(archive, *, size="double", font_size=None, dpi=None, title=None):
    """Binned statistics against the sweep abscissa, one panel per (set, statistic).

    Points: the statistic per number of bins (hollow when not fitted); line: OLS fit;
    at x = 0: the papers' intercept ± 2 SE (black) and the central 95 % of the simulated
    null intercept per distribution (coloured), reference line at the ideal value; the
    null-based verdict in the title.
    """
    ds = load(archive)
    need_study(ds, "bins", ["value", "intercept", "intercept_se", "slope"])
    sets, stats = [str(s) for s in ds["set"].values], [str(s) for s in ds["stat"].values]
    abscissa = ds.attrs.get("abscissa", "sqrt(N/M)")
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(sets) * len(stats), size=size, ncols=len(stats),
                                 aspect=0.75)
        for i, s in enumerate(sets):
            r = ds.sel(set=s)
            M = float(r["M"]) if "M" in r else np.nan
            N = r["N"].values.astype(float)
            x = np.sqrt(N / M) if abscissa == "sqrt(N/M)" and np.isfinite(M) else np.sqrt(N)
            for j, st in enumerate(stats):
                ax = axes[i * len(stats) + j]
                _bins_panel(ax, r.sel(stat=st), x, st)
                ax.set_xlabel(r"$\sqrt{N/M}$" if abscissa == "sqrt(N/M)" and np.isfinite(M)
                              else r"$\sqrt{N}$")
                ax.set_ylabel(st.upper().replace("_SD", " (SD)"))
                verdict = str(r["verdict"].sel(stat=st).item()) if "verdict" in r else ""
                S.set_title(ax, f"{s}: {verdict}" if verdict else s)
        S.legend(fig, axes, ncols=4)
    return S.finish(fig, title=title)


def _bins_panel(ax, r, x, st):
    y = r["value"].values
    ok = np.isfinite(y)
    fitted = r["fitted"].values.astype(bool) if "fitted" in r else ok
    ax.plot(x[ok & fitted], y[ok & fitted], "o", ms=3, color=_C[0], label="fitted points")
    ax.plot(x[ok & ~fitted], y[ok & ~fitted], "o", ms=3, mfc="none", color=_C[0],
            label="not fitted")
    a, se, b = (float(r[v]) for v in ("intercept", "intercept_se", "slope"))
    grid = np.linspace(0, np.nanmax(x[ok]) * 1.05, 20)
    ax.plot(grid, a + b * grid, color="0.2", lw=0.9, label="OLS fit")
    ax.errorbar([0], [a], yerr=[[2 * se], [2 * se]], fmt="s", ms=3, color="0.1",
                label="intercept ± 2 SE")
    if "null_low" in r:
        for d, dist in enumerate(r["dist"].values):
            lo, hi = float(r["null_low"].sel(dist=dist)), float(r["null_high"].sel(dist=dist))
            if np.isfinite(lo):
                dx = (d + 1) * 0.02 * grid[-1]
                ax.plot([dx, dx], [lo, hi], lw=3, alpha=0.7, color=_C[d + 1],
                        label=f"null 95 % ({dist})")
    ideal = float(r["ideal"]) if "ideal" in r else IDEAL_INTERCEPT.get(st, 0.0)
    S.reference_line(ax, ideal, kind="h")
    ax.set_xlim(-0.02 * grid[-1], grid[-1])


def decimation(archive, *, size="double", font_size=None, dpi=None, title=None):
    """001 Fig. 7: ΔRCE and ΔZMS against the percentage k of largest uncertainties removed.

    The band is the full-set interval centred on zero (``bar_low``, ``bar_high``); a curve
    leaving it means the statistic depends on a few large uncertainties.
    """
    ds = load(archive)
    need_study(ds, "decimation", ["delta", "bar_low", "bar_high"])
    sets, stats = [str(s) for s in ds["set"].values], [str(s) for s in ds["stat"].values]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(sets), size=size, ncols=min(3, len(sets)), aspect=0.8)
        for ax, s in zip(axes, sets, strict=True):
            r = ds.sel(set=s)
            k = r["k"].values.astype(float)
            for j, st in enumerate(stats):
                lo, hi = float(r["bar_low"].sel(stat=st)), float(r["bar_high"].sel(stat=st))
                ax.axhspan(lo, hi, color=_C[j], alpha=0.12, lw=0)
                ax.plot(k, r["delta"].sel(stat=st).values, color=_C[j],
                        label=f"Δ{st.upper()}")
            S.reference_line(ax, 0.0, kind="h")
            ax.set_xlabel("k (% of largest uE removed)")
            ax.set_ylabel("Δ statistic")
            S.set_title(ax, s)
        S.legend(fig, axes, ncols=len(stats))
    return S.finish(fig, title=title)


def binned_tailedness(archive, *, metric="beta_gm", size="double", font_size=None, dpi=None,
                      title=None):
    """001 Fig. 8: per-bin β_GM (or κ_CS) of u², E², Z² as boxplots, one panel per variable.

    One box per set over its uE bins; red dot: full-set value; dashed: safety limit.
    """
    ds = load(archive)
    if metric not in ("beta_gm", "kappa_cs"):
        raise InputError(f"metric must be beta_gm or kappa_cs, got {metric!r}")
    need_study(ds, "binned-tailedness", [metric, f"{metric}_full"])
    sets, vars_ = [str(s) for s in ds["set"].values], [str(v) for v in ds["var"].values]
    sym = {"beta_gm": r"$\beta_{GM}$", "kappa_cs": r"$\kappa_{CS}$"}[metric]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(vars_), size=size, ncols=len(vars_), aspect=1.0)
        for ax, v in zip(axes, vars_, strict=True):
            data = [ds[metric].sel(set=s, var=v).values for s in sets]
            ax.boxplot([d[np.isfinite(d)] for d in data], widths=0.6, showfliers=True,
                       flierprops={"markersize": 2})
            full = [float(ds[f"{metric}_full"].sel(set=s, var=v)) for s in sets]
            ax.plot(np.arange(1, len(sets) + 1), full, "o", color=S.COLORS["invalid"],
                    ms=4, label="full set")
            if f"{metric}_limit" in ds:
                S.reference_line(ax, float(ds[f"{metric}_limit"].sel(var=v)), kind="h",
                                 ls="--")
            ax.set_xticks(np.arange(1, len(sets) + 1))
            ax.set_xticklabels([str(i + 1) for i in range(len(sets))])
            ax.set_xlabel("set")
            ax.set_ylabel(f"{sym}({v.replace('2', '²').replace('e', 'E').replace('z', 'Z')})")
        S.legend(fig, axes, ncols=1)
    return S.finish(fig, title=title)


def reference_sensitivity(archive, *, labels=None, size="double", font_size=None, dpi=None,
                          title=None):
    """000 Fig. 7: simulated references ± 2u against ν of t_s, per (set, statistic).

    Log ν axis; dashed line at the value of the largest ν. Several archives (a list) are
    overlaid, one marker per archive, named by ``labels``.
    """
    archives, labels = _archives(archive, labels)
    for ds in archives:
        need_study(ds, "reference-sensitivity", ["nu", "reference", "reference_se"])
    ds = archives[0]
    sets, stats = [str(s) for s in ds["set"].values], [str(s) for s in ds["stat"].values]
    with S.style(font_size=font_size, dpi=dpi, size=size):
        fig, axes = S.panel_grid(len(sets) * len(stats), size=size, ncols=len(stats),
                                 aspect=0.9)
        for i, s in enumerate(sets):
            for j, st in enumerate(stats):
                ax = axes[i * len(stats) + j]
                for a, (arc, lab) in enumerate(zip(archives, labels, strict=True)):
                    r = arc.sel(set=s, stat=st)
                    nu = r["nu"].values.astype(float) * (1 + 0.02 * a)
                    ax.errorbar(nu, r["reference"].values, yerr=2 * r["reference_se"].values,
                                fmt=_MARKERS[a % len(_MARKERS)], ms=3, color=_C[a % len(_C)],
                                label=S.plain(lab) if len(archives) > 1 else None)
                S.reference_line(ax, float(ds["reference"].sel(set=s, stat=st).values[-1]),
                                 kind="h", ls="--")
                ax.set_xscale("log")
                ax.set_xlabel(r"$\nu$ of $t_s(\nu)$")
                ax.set_ylabel(f"simulated {st.upper()}")
                S.set_title(ax, s)
        if len(archives) > 1:
            S.legend(fig, axes, ncols=len(archives))
    return S.finish(fig, title=title)
