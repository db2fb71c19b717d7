"""Conditional calibration steps of the workflow: consistency (on uE) and adaptivity (X, V).

Two routes that stay reliable where ζ-scores of ENCE/ZMSE/ZVE depend on the generative
distribution (000 conclusion, METHODS §7 item 6):

* the **fraction of valid LZISD bins** (bins whose BCa interval of 1/sd(Z) contains 1)
  with its Wilson-cc interval, compatible with the nominal 95 %? Every set gets its own
  number of bins (ErrViewLib default max(min(floor(M/150), 15), 2)), so a set's result
  does not depend on the sets analysed beside it;
* the **extrapolation to zero bins** of ENCE, ZMSE and ZVE (:mod:`uqx.extrapolation`),
  judged against the intercept's simulated null distribution.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.bootstrap import bootstrap_per_bin
from uqx.data import InputError
from uqx.extrapolation import PRESETS, extrapolate_many
from uqx.reference import binomial_ci
from uqx.resample import content_key

__all__ = ["default_cond_bins", "lzisd_step", "extrapolation_step", "headline_step",
           "null_hooks"]

_NOMINAL_FVAL = 0.95


def default_cond_bins(M: int) -> int:
    """ErrViewLib default bins for local analyses: max(min(floor(M/150), 15), 2)."""
    return max(min(M // 150, 15), 2)


def _conds(sets):
    return ["uE"] + [c for c in ("X", "V") if any(getattr(sd, c) is not None for sd in sets)]


#: Bins of at least this many points get the analytic 'cho' LZISD interval under
#: ``lzisd_ci="auto"`` (ErrViewLib's 'auto' rule of plotLZV, METHODS §4.3).
CHO_MIN_POP = 400


def _lzisd_one(ds, i, sd, cond, *, nb, method, seed, level, n_boot, pop_min, common):
    """LZISD per bin of one (set, cond): BCa from shared resamples, or 'cho'."""
    from uqx.binning import equal_count_edges

    if method == "auto":
        pops = np.diff(equal_count_edges(sd.M, nb, pop_min=pop_min))
        method = "cho" if pops.min() >= CHO_MIN_POP else "bootstrap"
    if method == "bootstrap":
        stat = "lzisd" if cond == "uE" else f"lzisd_{cond}"
        r = bootstrap_per_bin(ds.isel(set=[i]), stat, n_boot=n_boot, level=level, seed=seed,
                              bins=nb, pop_min=pop_min, **common).isel(set=0)
        return r, method
    from uqx.curves import local_z

    r = local_z(sd, stat="lzisd", by=cond, n_bins=nb, pop_min=pop_min, ci="cho", level=level)
    return r[["estimate", "ci_low", "ci_high", "n", "x_mid"]], method


def lzisd_step(ds, sets, notes, *, seed, level, cond_bins, n_boot, pop_min, common,
               method="auto"):
    """LZISD per bin, fraction of valid bins and its Wilson-cc interval per (set, cond).

    ``method``: ``"bootstrap"`` (BCa per bin from shared resamples), ``"cho"`` (analytic,
    METHODS §4.3) or ``"auto"``: 'cho' when every bin has at least :data:`CHO_MIN_POP`
    points (large data: the bootstrap adds nothing there but cost), else bootstrap.
    """
    conds = _conds(sets)
    S, C = len(sets), len(conds)
    per = {}
    used = np.full((S, C), "", dtype=object)
    for i, sd in enumerate(sets):
        nb = cond_bins or default_cond_bins(sd.M)
        for c, cond in enumerate(conds):
            if cond != "uE" and getattr(sd, cond) is None:
                continue
            try:
                per[i, c], used[i, c] = _lzisd_one(
                    ds, i, sd, cond, nb=nb, method=method, seed=seed, level=level,
                    n_boot=n_boot, pop_min=pop_min, common=common)
            except InputError as exc:
                notes.set(i, f"no LZISD analysis on {cond}: {exc}")
    B = max([r.sizes["bin"] for r in per.values()], default=1)
    arr = {k: np.full((S, C, B), np.nan) for k in ("estimate", "ci_low", "ci_high", "n", "x_mid")}
    for (i, c), r in per.items():
        for k in arr:
            arr[k][i, c, : r.sizes["bin"]] = r[k].values
    real = np.isfinite(arr["estimate"])
    nb = real.sum(-1)
    with np.errstate(invalid="ignore"):
        ok = ((arr["ci_low"] - 1) * (arr["ci_high"] - 1) <= 0) & real
    nv = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fval = np.where(nb > 0, nv / nb, np.nan)
        lo, hi = binomial_ci(nv, np.maximum(nb, 1), method="wilsoncc")
    lo, hi = np.where(nb > 0, lo, np.nan), np.where(nb > 0, hi, np.nan)
    fverdict = np.where(nb > 0, np.where(hi >= _NOMINAL_FVAL, "valid", "invalid"), "not tested")
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
            "fval_verdict": (d2, fverdict, {"long_name": "fraction of valid bins compatible "
                                            f"with {_NOMINAL_FVAL:.0%} (Wilson-cc)"}),
            "conditional_valid": (d2, np.where(fverdict == "valid", 1.0, np.where(
                fverdict == "invalid", 0.0, np.nan)), {"long_name": "1 valid, 0 invalid"}),
        },
        coords={"cond": conds, "bin": np.arange(B)},
    )


def _set_conds(sd, conds):
    """Conditioning variables a set has, in the order of ``conds``."""
    have = {c: (sd.uE if c == "uE" else getattr(sd, c)) for c in conds}
    return {c: x for c, x in have.items() if x is not None}


def null_hooks(sets, *, n_copies, preset="app-c"):
    """One :class:`uqx.extrapolation.NullHook` per set (None when the set is too small).

    Handed to :func:`uqx.reference.simulate_reference`, they compute the extrapolation
    nulls on the draws of the simulated references (no draws of their own).
    """
    from uqx.binning import stable_order
    from uqx.extrapolation import NullHook, bin_numbers

    conds, st, hooks = _conds(sets), PRESETS[preset], []
    for sd in sets:
        try:
            nb = bin_numbers(sd.M, st)
        except InputError:
            hooks.append(None)
            continue
        orders = [sd.uE[stable_order(x)] for x in _set_conds(sd, conds).values()]
        hooks.append(NullHook(orders, nb, st, n_copies))
    return hooks


def extrapolation_step(sets, notes, *, seed, level, nu, n_mc, preset="app-c", nulls=None):
    """Zero-bin extrapolation of ENCE, ZMSE, ZVE per (set, cond) with the null verdict.

    ``nulls``: {set index: [null intercepts per distribution]} computed on the draws of
    the simulated references (:func:`null_hooks`); other sets draw their own copies.
    """
    conds = _conds(sets)
    st = PRESETS[preset]
    stats = list(st.stats)
    dists = [("normal", None), ("t", float(nu))]
    S, C, K, D = len(sets), len(conds), len(stats), len(dists)
    L = len(st.n_bins)
    f = {k: np.full((S, C, K), np.nan) for k in ("intercept", "intercept_se", "slope",
                                                 "slope_se")}
    papers = np.zeros((S, C, K), dtype=bool)
    verdict = np.full((S, C, K), "not tested", dtype=object)
    reason = np.full((S, C, K), "", dtype=object)
    nlo, nhi = np.full((S, C, K, D), np.nan), np.full((S, C, K, D), np.nan)
    vals, nbins = np.full((S, C, L, K), np.nan), np.full((S, C, L), np.nan)
    nulls = nulls or {}
    for i, sd in enumerate(sets):
        have = _set_conds(sd, conds)
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
            n = r["n_bins"].size
            vals[i, c, :n], nbins[i, c, :n] = r["values"], r["n_bins"]
    d3 = ("set", "cond", "xstat")
    out = xr.Dataset(
        {f"extrap_{k}": (d3, v) for k, v in f.items()}
        | {
            "extrap_papers_valid": (d3, papers, {"long_name": "|intercept - ideal| <= 2 SE "
                                                 "(papers' test, reported only)"}),
            "extrap_verdict": (d3, verdict.astype(str),
                               {"long_name": "intercept against its simulated null"}),
            "extrap_verdict_reason": (d3, reason.astype(str)),
            "extrap_null_low": (d3 + ("dist",), nlo, {"long_name": "null 2.5 % quantile"}),
            "extrap_null_high": (d3 + ("dist",), nhi, {"long_name": "null 97.5 % quantile"}),
            "extrap_values": (("set", "cond", "sweep", "xstat"), vals,
                              {"long_name": "statistic per number of bins of the sweep"}),
            "extrap_n_bins": (("set", "cond", "sweep"), nbins,
                              {"long_name": "number of equal-count bins of the sweep"}),
        },
        coords={"cond": conds, "xstat": stats, "sweep": np.arange(L)},
        attrs={"extrapolation_preset": preset, "extrapolation_n_mc": int(n_mc)},
    )
    out["extrap_intercept"].attrs["long_name"] = "intercept of lm(y ~ sqrt(N/M))"
    out["extrap_intercept_se"].attrs["long_name"] = "OLS standard error of the intercept"
    return out


def headline_step(res) -> xr.Dataset:
    """Headline verdict per (set, cond) from the conditional routes.

    ``valid`` when every conclusive route (fraction of valid bins, extrapolations of ENCE,
    ZMSE, ZVE) says valid, ``invalid`` when every conclusive route says invalid,
    ``inconclusive`` otherwise.
    """
    S, C = res.sizes["set"], res.sizes["cond"]
    verdict = np.full((S, C), "not tested", dtype=object)
    reason = np.full((S, C), "", dtype=object)
    for i in range(S):
        for c in range(C):
            routes = {}
            if "fval_verdict" in res:
                routes["fraction of valid bins"] = str(res["fval_verdict"].values[i, c])
            if "extrap_verdict" in res:
                for k, s in enumerate(res["xstat"].values):
                    v = str(res["extrap_verdict"].values[i, c, k])
                    routes[f"{s.upper()} extrapolation"] = v
            concl = {k: v for k, v in routes.items() if v in ("valid", "invalid")}
            if not concl:
                if any(v == "inconclusive" for v in routes.values()):
                    verdict[i, c], reason[i, c] = "inconclusive", "no route is conclusive"
                continue
            vs = set(concl.values())
            if len(vs) == 1:
                verdict[i, c] = vs.pop()
            else:
                verdict[i, c] = "inconclusive"
                reason[i, c] = "routes disagree: " + ", ".join(f"{k} {v}" for k, v in concl.items())
    return xr.Dataset({
        "cond_verdict": (("set", "cond"), verdict.astype(str),
                         {"long_name": "consistency (uE) / adaptivity (X, V) verdict"}),
        "cond_verdict_reason": (("set", "cond"), reason.astype(str)),
    })
