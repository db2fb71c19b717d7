"""Conditional calibration steps of the workflow: consistency (on uE) and adaptivity (X, V).

* the **fraction of valid LZISD bins** (bins whose BCa interval of 1/sd(Z) contains 1)
  with its Wilson-cc interval, compatible with the nominal 95 %? Every set gets its own
  number of bins (ErrViewLib default max(min(floor(M/150), 15), 2)), so a set's result
  does not depend on the sets analysed beside it. A diagnostic of the papers
  (``conditional_valid``), not a test: its per-bin intervals under-cover with heavy
  tails and few points per bin;
* the **extrapolation to zero bins** of ENCE, ZMSE and ZVE (:mod:`uqx.inference.extrapolate.fit`),
  judged against the intercept's simulated null distribution;
* the **headline** (:func:`headline_step`): one Monte-Carlo test combining the binned
  statistics and the intercepts on their shared calibrated copies (CC keeps its own
  verdict: its null is narrower than the definition of consistency).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.model import InputError, select_sets
from uqx.engine.confidence import interval_contains
from uqx.engine.defaults import LEVEL, local_bins
from uqx.engine.resample import content_key
from uqx.inference.bootstrap import bootstrap_per_bin
from uqx.inference.extrapolate.binsweep import PRESETS
from uqx.inference.extrapolate.fit import extrapolate_many
from uqx.inference.zeta import binomial_ci

__all__ = ["lzisd_step", "extrapolation_step", "headline_step",
           "null_hooks", "untestable_step"]

_NOMINAL_FVAL = 0.95




def _conds(sets):
    return ["uE"] + [c for c in ("X", "V") if any(getattr(sd, c) is not None for sd in sets)]


#: Bins of at least this many points get the analytic 'cho' LZISD interval under
#: ``lzisd_ci="auto"`` (ErrViewLib's 'auto' rule of plotLZV, methods page, Binned statistics).
CHO_MIN_POP = 400


def _lzisd_one(ds, i, sd, cond, *, nb, method, seed, level, n_boot, pop_min, compute):
    """LZISD per bin of one (set, cond): BCa from shared resamples, or 'cho'."""
    from uqx.engine.binning import equal_count_edges

    if method == "auto":
        pops = np.diff(equal_count_edges(sd.M, nb, pop_min=pop_min))
        method = "cho" if pops.min() >= CHO_MIN_POP else "bootstrap"
    if method == "bootstrap":
        stat = "lzisd" if cond == "uE" else f"lzisd_{cond}"
        r = bootstrap_per_bin(select_sets(ds, [i]), stat, n_boot=n_boot, level=level, seed=seed,
                              bins=nb, pop_min=pop_min, **compute).isel(set=0)
        return r, method
    from uqx.inference.curves.binned import local_z

    r = local_z(sd, stat="lzisd", by=cond, n_bins=nb, pop_min=pop_min, ci="cho", level=level)
    return r[["estimate", "ci_low", "ci_high", "n", "x_mid"]], method


def lzisd_step(ds, sets, notes, *, seed, level, cond_bins, n_boot, pop_min, compute,
               method="auto"):
    """LZISD per bin, fraction of valid bins and its Wilson-cc interval per (set, cond).

    ``method``: ``"bootstrap"`` (BCa per bin from shared resamples), ``"cho"`` (analytic,
    methods page, Binned statistics) or ``"auto"``: 'cho' when every bin has at least
    :data:`CHO_MIN_POP` points (large data: the bootstrap adds nothing there but cost),
    else bootstrap.
    """
    conds = _conds(sets)
    S, C = len(sets), len(conds)
    per = {}
    used = np.full((S, C), "", dtype=object)
    for i, sd in enumerate(sets):
        nb = cond_bins or local_bins(sd.M)
        for c, cond in enumerate(conds):
            if cond != "uE" and getattr(sd, cond) is None:
                continue
            try:
                per[i, c], used[i, c] = _lzisd_one(
                    ds, i, sd, cond, nb=nb, method=method, seed=seed, level=level,
                    n_boot=n_boot, pop_min=pop_min, compute=compute)
            except InputError as exc:
                notes.set(i, f"no LZISD analysis on {cond}: {exc}")
    B = max([r.sizes["bin"] for r in per.values()], default=1)
    arr = {k: np.full((S, C, B), np.nan) for k in ("estimate", "ci_low", "ci_high", "n", "x_mid")}
    for (i, c), r in per.items():
        for k in arr:
            arr[k][i, c, : r.sizes["bin"]] = r[k].values
    real = np.isfinite(arr["estimate"])
    nb = real.sum(-1)
    ok = interval_contains(arr["ci_low"], arr["ci_high"], 1.0) & real
    nv = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fval = np.where(nb > 0, nv / nb, np.nan)
        lo, hi = binomial_ci(nv, np.maximum(nb, 1), method="wilsoncc")
    lo, hi = np.where(nb > 0, lo, np.nan), np.where(nb > 0, hi, np.nan)
    compatible = np.where(nb > 0, np.where(hi >= _NOMINAL_FVAL, 1.0, 0.0), np.nan)
    # a diagnostic, not a test: its per-bin intervals under-cover with heavy tails and few
    # points per bin (up to 15 % "too few valid bins" on calibrated t_s(4) data, M = 2000)
    fverdict = np.full(nb.shape, "not tested", dtype=object)
    d3, d2 = ("set", "cond", "bin"), ("set", "cond")
    return xr.Dataset(
        {
            "lzisd": (d3, arr["estimate"], {"long_name": "LZISD per bin, Var(Z)^-1/2"}),
            "lzisd_ci_low": (d3, arr["ci_low"], {"long_name": "LZISD BCa lower limit"}),
            "lzisd_ci_high": (d3, arr["ci_high"], {"long_name": "LZISD BCa upper limit"}),
            "bin_n": (d3, arr["n"], {"long_name": "bin population"}),
            "bin_x_mid": (d3, arr["x_mid"],
                          {"long_name": "bin mid-range of the conditioning variable"}),
            "cond_n_bins": (d2, nb, {"long_name": "number of LZISD bins (real, not padding)"}),
            "lzisd_ci_method": (d2, used.astype(str), {"long_name": "LZISD interval method"}),
            "fval": (d2, fval, {"long_name": "fraction of bins whose LZISD interval contains 1"}),
            "fval_ci_low": (d2, lo, {"long_name": "Wilson-cc lower limit"}),
            "fval_ci_high": (d2, hi, {"long_name": "Wilson-cc upper limit"}),
            "fval_verdict": (d2, fverdict.astype(str),
                             {"long_name": "not tested: the fraction of valid bins is a "
                              "diagnostic (the headline cond_verdict decides)"}),
            "conditional_valid": (d2, compatible,
                                  {"long_name": f"fraction of valid bins compatible with "
                                   f"{_NOMINAL_FVAL:.0%} (Wilson-cc upper limit >= it): 1 "
                                   "yes, 0 no (papers' diagnostic)"}),
        },
        coords={"cond": conds, "bin": np.arange(B)},
    )


def _set_conds(sd, conds):
    """Conditioning variables a set has, in the order of ``conds``."""
    have = {c: (sd.uE if c == "uE" else getattr(sd, c)) for c in conds}
    return {c: x for c, x in have.items() if x is not None}


def null_hooks(sets, *, n_copies, preset="app-c"):
    """One :class:`~uqx.inference.extrapolate.null.NullHook` per set (None: set too small).

    Handed to :func:`uqx.inference.reference.simulate_reference`, they compute the extrapolation
    nulls on the draws of the simulated references (no draws of their own).
    """
    from uqx.engine.binning import stable_order
    from uqx.inference.extrapolate.binsweep import bin_numbers
    from uqx.inference.extrapolate.null import NullHook

    conds, st, hooks = _conds(sets), PRESETS[preset], []
    for sd in sets:
        try:
            nb = bin_numbers(sd.M, st)
        except InputError:
            hooks.append(None)
            continue
        # the copies' ε are drawn in the stable uE order (per window of uE for the data
        # member): each other ordering reads the ε of its rows' places there
        by_u = stable_order(sd.uE)
        place = np.empty(sd.M, dtype=np.int64)
        place[by_u] = np.arange(sd.M)
        orders, positions = [], []
        for c, x in _set_conds(sd, conds).items():
            ox = by_u if c == "uE" else stable_order(x)
            orders.append(sd.uE[ox])
            positions.append(None if c == "uE" else place[ox])
        hooks.append(NullHook(orders, nb, st, n_copies, positions=positions))
    return hooks


def extrapolation_step(sets, notes, *, seed, level, members, n_mc, preset="app-c",
                       nulls=None):
    """Zero-bin extrapolation of ENCE, ZMSE, ZVE per (set, cond) with the null verdict.

    ``members``: the null family ``[(dist, nu, label), ...]`` of :mod:`uqx.engine.mctest` (the
    data-matched member has one ν per set). ``nulls``: {set index: [null intercepts per
    member]} computed on the draws of the simulated references (:func:`null_hooks`);
    other sets draw their own copies.

    Returns
    -------
    xarray.Dataset, dict
        The fragment, and the null intercepts {(set, cond index): [(n, xstat) per member]}.
    """
    conds = _conds(sets)
    st = PRESETS[preset]
    stats = list(st.stats)
    labels = [lab for *_, lab in members]
    S, C, K, D = len(sets), len(conds), len(stats), len(labels)
    L = len(st.n_bins)
    f = {k: np.full((S, C, K), np.nan) for k in ("intercept", "intercept_se", "slope",
                                                 "slope_se")}
    papers = np.zeros((S, C, K), dtype=bool)
    verdict = np.full((S, C, K), "not tested", dtype=object)
    reason = np.full((S, C, K), "", dtype=object)
    nlo, nhi = np.full((S, C, K, D), np.nan), np.full((S, C, K, D), np.nan)
    pval = np.full((S, C, K, D), np.nan)
    vals, nbins = np.full((S, C, L, K), np.nan), np.full((S, C, L), np.nan)
    nulls = nulls or {}
    copies = {}
    for i, sd in enumerate(sets):
        have = _set_conds(sd, conds)
        dists = [(d, nu[i] if np.ndim(nu) else nu, lab) for d, nu, lab in members]
        try:
            rs = extrapolate_many(sd.E, sd.uE, have, preset=st, dists=dists, n_mc=n_mc,
                                  seed=seed, key=content_key(sd.E, sd.uE), level=level,
                                  nulls=nulls.get(i))
        except InputError as exc:
            notes.set(i, f"no zero-bin extrapolation: {exc}")
            continue
        for c, cond in enumerate(conds):
            if cond not in rs:
                continue
            r = rs[cond]
            for k in f:
                f[k][i, c] = r[k]
            papers[i, c] = r["papers_valid"]
            verdict[i, c], reason[i, c] = r["verdict"], r["verdict_reason"]
            nlo[i, c], nhi[i, c] = r["null_low"], r["null_high"]
            pval[i, c] = r.get("p_value", np.nan)
            if "null" in r:
                copies[i, c] = r["null"]
            n = r["n_bins"].size
            vals[i, c, :n], nbins[i, c, :n] = r["values"], r["n_bins"]
    d3 = ("set", "cond", "xstat")
    out = xr.Dataset(
        {f"extrap_{k}": (d3, v) for k, v in f.items()}
        | {
            "extrap_papers_valid": (d3, papers, {"long_name": "|intercept - ideal| <= 2 SE "
                                                 "(papers' test, reported only)"}),
            "extrap_verdict": (d3, verdict.astype(str),
                               {"long_name": "intercept against its simulated null "
                                "(one-sided Monte-Carlo test over the null family)"}),
            "extrap_verdict_reason": (d3, reason.astype(str)),
            "extrap_null_low": (d3 + ("dist",), nlo[..., :2],
                                {"long_name": "null 2.5 % quantile"}),
            "extrap_null_high": (d3 + ("dist",), nhi[..., :2],
                                 {"long_name": "null 97.5 % quantile"}),
            "extrap_p_value": (d3 + ("member",), pval,
                               {"long_name": "Monte-Carlo p-value of the intercept (one-sided)"}),
            "extrap_values": (("set", "cond", "sweep", "xstat"), vals,
                              {"long_name": "statistic per number of bins of the sweep"}),
            "extrap_n_bins": (("set", "cond", "sweep"), nbins,
                              {"long_name": "number of equal-count bins of the sweep"}),
        },
        coords={"cond": conds, "xstat": stats, "sweep": np.arange(L), "member": labels},
        attrs={"extrapolation_preset": preset, "extrapolation_n_mc": int(n_mc)},
    )
    out["extrap_intercept"].attrs["long_name"] = "intercept of lm(y ~ sqrt(N/M))"
    out["extrap_intercept_se"].attrs["long_name"] = "OLS standard error of the intercept"
    return out, copies


def _is_route(spec, cond) -> bool:
    """Whether a statistic is a route of the headline on ``cond``: binned on it.

    CC is not a route of consistency: its null (calibrated copies with one shape of |ε|
    at every uE) is narrower than the definition, E[Z² | uE] = 1 whatever the shape, and
    a shape of the errors that changes with uE moves it on consistent data. It keeps its
    own verdict.
    """
    return spec.family == "binned" and spec.cond == cond


def _routes(res, specs, draws, copies, i, c, cond):
    """Routes of one headline: (name, observed p per member, copy p (member, n) or None)."""
    from uqx.engine.mctest import DIRECTION, copy_pvalues, direction_of

    out = []
    for j, s in enumerate(specs):
        if _is_route(s, cond) and np.isfinite(res["p_value"].values[i, j]).any():
            pc = np.stack([copy_pvalues(draws[i, j, m], direction_of(s.base))
                           for m in range(draws.shape[2])])
            out.append((s.name.upper(), res["p_value"].values[i, j], pc))
    null = copies.get((i, c))
    for k, x in enumerate(res["xstat"].values if "xstat" in res.dims else []):
        p = res["extrap_p_value"].values[i, c, k]
        if np.isfinite(p).any():
            pc = None if null is None else np.stack(
                [copy_pvalues(n[:, k], DIRECTION["intercept"]) for n in null])
            out.append((f"{str(x).upper()} intercept", p, pc))
    return out


def _route_copies(draws, copies, specs, res, i, c, cond) -> int:
    """Fewest finite copies behind a route of headline (set ``i``, cond ``c``)."""
    counts = [int(np.isfinite(draws[i, j]).sum(-1).min()) for j, s in enumerate(specs)
              if _is_route(s, cond)]
    counts += [int(np.isfinite(n).all(-1).sum()) for n in copies.get((i, c), [])]
    return min(counts) if counts else 0


def headline_resolution(specs, draws, alternative, i, null_p, use, *, alpha) -> float:
    r"""Resolution of the consistency headline under the local alternative (a lower bound).

    The headline rejects under member m when its smallest route p-value falls below
    :math:`t_m`, the value under which the copies' smallest p-values
    (:func:`uqx.engine.mctest.minp_pvalue`) fall too rarely to reach ``alpha``. So it
    rejects at least whenever one binned route on uE does at level :math:`t_m`, and
    the power of the best such route at :math:`t_m`, read on its copies under "uE too
    small by f in the top 10 % of uE" (:func:`uqx.engine.resolution.alternative_resolution`),
    bounds the headline's power from below. The resolution is the smallest f reaching
    80 % that way, over the least powerful member that takes part (before the
    family-wise step, as for every per-test resolution).

    Parameters
    ----------
    specs : list of StatSpec
    draws : numpy.ndarray, shape (set, stat, member, copy)
        The routes' calibrated copies.
    alternative : tuple (factors, top) or None
        The binned statistics' copies under the local alternative
        (:class:`uqx.engine.alternative.ConsistencyAlternatives`).
    i : int
        The set.
    null_p : numpy.ndarray, shape (member, n)
        The headline's smallest route p-value on each shared copy.
    use : array_like of bool, shape (member,)
        The members that take part.
    alpha : float

    Returns
    -------
    float
        The factor f (NaN without binned routes on uE, or beyond the grid).
    """
    from uqx.engine.mctest import direction_of
    from uqx.engine.resolution import QUASI_CONVEX_TOP, alternative_resolution

    if alternative is None:
        return np.nan
    factors, top = alternative
    routes, levels = _resolution_routes(specs, top, i, null_p, use, alpha)
    if not routes or levels is None:
        return np.nan
    worst = []
    for m, level in levels:
        f = [alternative_resolution(draws[i, j, m], top.values(i, j, m), factors,
                                    direction=direction_of(specs[j].base), alpha=level,
                                    quasi_convex=specs[j].base in QUASI_CONVEX_TOP)
             for j in routes]
        worst.append(np.nanmin(f) if np.isfinite(f).any() else np.nan)
    return float(np.max(worst)) if worst and np.isfinite(worst).all() else np.nan


def _resolution_routes(specs, top, i, null_p, use, alpha):
    """Binned routes on uE of set ``i`` with alternative copies, and each member's level.

    The level of member m is :math:`t_m`, the largest smallest-route p-value of the
    copies that keeps the headline's own p-value below ``alpha``
    (:func:`headline_resolution`); None when a member that takes part cannot reach it.
    """
    from uqx.engine.resolution import RESOLUTION_KIND

    routes = [j for j, s in enumerate(specs) if s.family == "binned" and s.cond == "uE"
              and RESOLUTION_KIND.get(s.base) == "top" and top.available(i, j)]
    levels = []
    for m in np.flatnonzero(use):
        q = np.sort(null_p[m][np.isfinite(null_p[m])])
        k = int(np.ceil(alpha * (1 + q.size) - 1)) - 1  # most copies at or below the min-p
        if k < 0 or k >= q.size:
            return routes, None
        levels.append((int(m), float(q[k])))
    return routes, levels


def headline_spread_resolution(specs, draws, alternative, i, null_p, use, *,
                               alpha) -> tuple[float, float]:
    r"""Resolution of the consistency headline under the spread alternative (a lower bound).

    As :func:`headline_resolution`, under :math:`u = c\,u_E^\gamma` with the mean square
    of uE kept (:func:`uqx.engine.resolution.spread_bin_factors`): for each member, the
    exponents below and above 1 that its best binned route on uE detects with 80 %
    power at the member's level :math:`t_m`
    (:func:`uqx.engine.resolution.spread_resolution`); the resolution is that of the
    least powerful member.

    Parameters
    ----------
    specs, draws, alternative, i, null_p, use, alpha
        As :func:`headline_resolution`.

    Returns
    -------
    low, high : float
        NaN without binned routes on uE, or beyond the grid.
    """
    from functools import partial

    from uqx.engine.mctest import direction_of
    from uqx.engine.resolution import spread_resolution

    if alternative is None:
        return np.nan, np.nan
    top = alternative[1]
    routes, levels = _resolution_routes(specs, top, i, null_p, use, alpha)
    if not routes or levels is None:
        return np.nan, np.nan
    worst = []
    for m, level in levels:
        per = np.array([spread_resolution([draws[i, j, m]],
                                          [partial(top.spread, i, j, m)],
                                          direction=direction_of(specs[j].base), alpha=level)
                        for j in routes])  # (route, 2): the best route on each side
        with np.errstate(invalid="ignore"):
            worst.append((np.nanmax(per[:, 0]) if np.isfinite(per[:, 0]).any() else np.nan,
                          np.nanmin(per[:, 1]) if np.isfinite(per[:, 1]).any() else np.nan))
    worst = np.array(worst)
    low = float(np.min(worst[:, 0])) if np.isfinite(worst[:, 0]).all() else np.nan
    high = float(np.max(worst[:, 1])) if np.isfinite(worst[:, 1]).all() else np.nan
    return low, high


def headline_step(res, specs, draws, copies, *, level=LEVEL, shared=True, alternative=None):
    """Headline verdict per (set, cond): one test over the routes, over the null family.

    The routes of consistency (cond = uE) are the binned statistics on uE of the run
    (ENCE, ZMSE, ZMSE_max, ZMS_scan, ZVE) and the zero-bin intercepts of ENCE, ZMSE, ZVE (not CC:
    :func:`_is_route`); of adaptivity
    (X, V), the binned statistics and intercepts on that variable. They share their
    calibrated copies (the extrapolation nulls are computed on the first copies of the
    simulated references), so their smallest p-value is calibrated on those copies
    (:func:`uqx.engine.mctest.minp_pvalue`): the headline has the size of one test. Without
    shared copies (``shared=False``) the smallest p-value is Bonferroni-corrected. Each
    member gets its p-value; :func:`uqx.engine.mctest.family_verdict` decides.

    With ``alternative`` (the binned statistics' copies under the local alternative of
    :mod:`uqx.engine.resolution`), the consistency headline also states its resolution
    (:func:`headline_resolution`, variable ``cond_resolution``; under the spread
    alternative :func:`headline_spread_resolution`, ``cond_resolution_spread_low`` and
    ``_high``).

    Returns
    -------
    xarray.Dataset, dict
        The fragment, and the headline p-values of the shared copies
        {(set, cond index): (member, n)} (for the family-wise adjustment of the result).
    """
    from uqx.engine.mctest import borderline, copy_pvalues, family_verdict, minp_pvalue
    from uqx.workflow.decision import members_used

    S, C = res.sizes["set"], res.sizes["cond"]
    copies_p = {}
    labels = [str(m) for m in res["member"].values]
    verdict = np.full((S, C), "not tested", dtype=object)
    reason = np.full((S, C), "", dtype=object)
    routes_txt = np.full((S, C), "", dtype=object)
    pval = np.full((S, C, len(labels)), np.nan)
    resolution = np.full((S, C), np.nan)
    spread = np.full((S, C, 2), np.nan)
    near = np.zeros((S, C), dtype=bool)
    use = members_used(res, len(labels))
    for i in range(S):
        for c, cond in enumerate(str(x) for x in res["cond"].values):
            routes = _routes(res, specs, draws, copies, i, c, cond)
            if not routes:
                continue
            routes_txt[i, c] = ", ".join(r[0] for r in routes)
            po = np.stack([r[1] for r in routes])  # (R, member)
            floor = None
            if shared and all(r[2] is not None for r in routes):
                n = min(r[2].shape[1] for r in routes)
                null_p = np.full((len(labels), n), np.nan)
                for m in range(len(labels)):
                    pc = np.stack([r[2][m, :n] for r in routes])
                    pval[i, c, m] = minp_pvalue(po[:, m], pc)
                    with np.errstate(invalid="ignore"):  # a copy with a NaN route: NaN
                        null_p[m] = copy_pvalues(np.min(pc, axis=0), -1)
                copies_p[i, c] = null_p
                if cond == "uE":
                    resolution[i, c] = headline_resolution(specs, draws, alternative, i,
                                                           null_p, use[i], alpha=1 - level)
                    spread[i, c] = headline_spread_resolution(
                        specs, draws, alternative, i, null_p, use[i], alpha=1 - level)
            else:
                pval[i, c] = np.minimum(1.0, len(routes) * np.nanmin(po, axis=0))
                n = _route_copies(draws, copies, specs, res, i, c, cond)
                floor = min(1.0, len(routes) / (1 + n))  # Bonferroni of the best route
            verdict[i, c], reason[i, c] = family_verdict(pval[i, c], labels, alpha=1 - level,
                                                         n_copies=n, direction=-1,
                                                         p_floor=floor, use=use[i])
            near[i, c] = borderline(pval[i, c], n, 1 - level, use=use[i])
    return xr.Dataset({
        "cond_verdict": (("set", "cond"), verdict.astype(str),
                         {"long_name": "consistency (uE) / adaptivity (X, V) verdict"}),
        "cond_verdict_reason": (("set", "cond"), reason.astype(str)),
        "cond_p_value": (("set", "cond", "member"), pval,
                         {"long_name": "min-p of the routes calibrated on shared copies"}),
        "cond_borderline": (("set", "cond"), near, {
            "long_name": "a member's p-value within two Monte-Carlo sd of the level "
                         "(uqx.engine.mctest.borderline)"}),
        "cond_routes": (("set", "cond"), routes_txt.astype(str),
                        {"long_name": "routes combined in the headline"}),
        "cond_resolution": (("set", "cond"), resolution, {
            "long_name": "consistency headline: smallest factor f detected with at least "
                         "80 % power when uE is too small by f in the bins of uE above its "
                         "90th percentile (a lower bound on the power: its best binned "
                         "route at the headline's level)", "power": 0.8}),
        "cond_resolution_spread_low": (("set", "cond"), spread[..., 0], {
            "long_name": "consistency headline: largest exponent gamma below 1 of "
                         "u = c*uE^gamma (same mean square, piecewise on the bins of uE) "
                         "detected with at least 80 % power (its best binned route at the "
                         "headline's level)", "power": 0.8}),
        "cond_resolution_spread_high": (("set", "cond"), spread[..., 1], {
            "long_name": "consistency headline: smallest exponent gamma above 1 of "
                         "u = c*uE^gamma detected with at least 80 % power", "power": 0.8}),
    }), copies_p


def _untestable_reasons(sd, specs, used, cfg):
    """Reasons per conditioning variable (and per statistic) that make it untestable."""
    from uqx._checks import constant_reason

    by_cond = {"uE": constant_reason(sd.uE, "uE")}
    for c in ("X", "V"):
        x = getattr(sd, c)
        if x is not None:
            by_cond[c] = constant_reason(x, c)
    one_bin = ""
    if used is not None and used == 1 and not by_cond["uE"]:
        pop_min = getattr(cfg, "pop_min", None)
        one_bin = (f"a single bin on uE (M = {sd.M}, at least {pop_min} points per bin): "
                   "a binned statistic of one bin measures average calibration, not "
                   "consistency (lower pop_min/--pop-min for at least 2 bins)")
    return by_cond, one_bin


def _equal_width_note(sd, cfg) -> str:
    """Warning when equal-width bins on uE hold fewer than pop_min points ('' otherwise)."""
    from uqx.engine.binning import make_bins

    if cfg is None or getattr(cfg, "binning", "") != "equal-width":
        return ""
    try:
        counts = np.asarray(make_bins(sd.uE, cfg.bins, scheme="equal-width",
                                      pop_min=cfg.pop_min).counts)
    except InputError:
        return ""
    small = counts < cfg.pop_min
    if not small.any():
        return ""
    return (f"equal-width bins on uE do not keep pop_min = {cfg.pop_min}: {int(small.sum())} "
            f"of {counts.size} bins hold fewer points ({int(counts.min())} to "
            f"{int(counts.max())} per bin); binned statistics of nearly empty bins are "
            "unreliable (use equal-count or adaptive binning, or fewer bins)")


def untestable_step(res, sets, specs, notes, *, n_bins_used=None, cfg=None) -> xr.Dataset:
    """Mark ``not tested`` what the data cannot test, with the reason.

    * a constant uE: CC and every statistic binned on uE (ENCE, ZMSE, ZVE, UCE), their
      zero-bin intercepts and the consistency headline (average calibration stays
      testable);
    * a constant X (or V): the statistics binned on it, its intercepts and its
      adaptivity headline;
    * a single bin on uE (``pop_min`` too large for M): the statistics binned on uE, and
      the consistency headline when it rests on nothing else (no intercept).

    Also warns when equal-width bins on uE hold fewer than ``pop_min`` points. Runs last
    (after the family-wise and tails steps), so no later step can turn these verdicts.

    Parameters
    ----------
    res : xarray.Dataset
        The result with ``verdict`` over (set, stat) and, with the conditional routes,
        ``cond_verdict`` over (set, cond) and ``extrap_verdict`` over (set, cond, xstat).
    sets : list of SetData
        The sets, in the order of ``res["set"]``.
    specs : list of StatSpec
        The statistics of ``res["stat"]``.
    notes : object
        The workflow's collector of warnings (``set(i, text)``, ``stat(i, j, text)``), or
        None.
    n_bins_used : array_like of int, optional
        Bins used on uE per set by the binned statistics (-1: none).
    cfg : Settings, optional
        The run's settings (``bins``, ``binning``, ``pop_min``).

    Returns
    -------
    xarray.Dataset
        ``res`` with the verdicts, reasons and ``valid`` updated.
    """
    verdict = res["verdict"].values.astype(object)
    reason = res["verdict_reason"].values.astype(object) if "verdict_reason" in res else \
        np.full(verdict.shape, "", dtype=object)
    conds = [str(c) for c in res["cond"].values] if "cond_verdict" in res else []
    cv = res["cond_verdict"].values.astype(object) if conds else None
    cr = res["cond_verdict_reason"].values.astype(object) if conds else None
    has_x = "extrap_verdict" in res
    xv = res["extrap_verdict"].values.astype(object) if has_x else None
    xr_ = res["extrap_verdict_reason"].values.astype(object) if has_x else None
    changed = False
    for i, sd in enumerate(sets):
        used = None if n_bins_used is None else int(np.asarray(n_bins_used)[i])
        by_cond, one_bin = _untestable_reasons(sd, specs, used, cfg)
        note = _equal_width_note(sd, cfg)
        if note and notes is not None:
            notes.set(i, note)
        for cond, why in by_cond.items():
            if why and notes is not None:
                what = "consistency" if cond == "uE" else f"adaptivity on {cond}"
                notes.set(i, f"{what} not tested: {why}")
        for j, s in enumerate(specs):
            cond = s.cond if s.family == "binned" else ("uE" if s.base == "cc" else None)
            if cond is None:
                continue
            why = by_cond.get(cond, "")
            if not why and cond == "uE" and s.family == "binned":
                why = one_bin
            if why and verdict[i, j] != "not tested":
                verdict[i, j], reason[i, j] = "not tested", why
                if notes is not None:
                    notes.stat(i, j, f"not tested: {why}")
                changed = True
        for c, cond in enumerate(conds):
            why = by_cond.get(cond, "")
            if why and has_x:
                xv[i, c, :], xr_[i, c, :] = "not tested", why
                changed = True
            if not why and cond == "uE" and one_bin:
                rest = [r.strip() for r in str(res["cond_routes"].values[i, c]).split(",")] \
                    if "cond_routes" in res else []
                binned = {s.name.upper() for s in specs if s.family == "binned"}
                if rest and all(r in binned for r in rest if r):
                    why = one_bin
            if why and cv[i, c] != "not tested":
                cv[i, c], cr[i, c] = "not tested", why
                changed = True
    if not changed:
        return res
    out = res.assign(
        verdict=(res["verdict"].dims, verdict.astype(str), res["verdict"].attrs),
        verdict_reason=(res["verdict"].dims, reason.astype(str),
                        res["verdict_reason"].attrs if "verdict_reason" in res else {}),
    )
    if conds:
        out["cond_verdict"] = (res["cond_verdict"].dims, cv.astype(str),
                               res["cond_verdict"].attrs)
        out["cond_verdict_reason"] = (res["cond_verdict"].dims, cr.astype(str),
                                      res["cond_verdict_reason"].attrs)
    if has_x:
        out["extrap_verdict"] = (res["extrap_verdict"].dims, xv.astype(str),
                                 res["extrap_verdict"].attrs)
        out["extrap_verdict_reason"] = (res["extrap_verdict"].dims, xr_.astype(str),
                                        res["extrap_verdict_reason"].attrs)
    if "valid" in res:
        out["valid"] = (("set", "stat"), np.where(verdict == "valid", 1.0, np.where(
            verdict == "invalid", 0.0, np.nan)), res["valid"].attrs)
    return out
