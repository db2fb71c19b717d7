"""Decision steps of the workflow: one verdict per statistic, and the result as a whole.

:func:`verdict_step` turns the simulated calibrated copies of every tested statistic into
Monte-Carlo p-values under each member of the null family and a verdict
(:func:`uqx.engine.mctest.family_verdict`), keeping the papers' decision on the ζ-scores beside
it (``zeta_verdict``, :mod:`uqx.engine.verdict`). :func:`familywise_step` holds a set's result as
a whole to a 10 % family-wise rate (step-down min-p over every test of the set,
:func:`uqx.engine.mctest.familywise_pvalues`). Documentation: "How to read the verdicts".
"""

from __future__ import annotations

from functools import partial

import numpy as np
import xarray as xr

from uqx.engine.mctest import (
    ALPHA_RESULT,
    DIRECTION,
    LIGHT_SIDE,
    copy_pvalues,
    direction_of,
    family_verdict,
    familywise_pvalues,
    mc_pvalue,
    mc_pvalue_sides,
)
from uqx.engine.mctest import borderline as near_level
from uqx.engine.null_shape import NU_MIN, tails_reach_limit, tails_within_reach
from uqx.engine.resolution import (
    QUASI_CONVEX_TOP,
    RESOLUTION_KIND,
    alternative_resolution,
    scale_resolution,
    spread_resolution,
)
from uqx.engine.statistic import RANK_STATS
from uqx.engine.stats.tailedness import SAFETY_LIMITS
from uqx.engine.verdict import (
    NOT_TESTED,
    interval_problem,
    simulated_verdict,
    zeta_se,
    zeta_verdict,
)

__all__ = [
    "verdict_step",
    "resolution_of_test",
    "familywise_step",
    "members_used",
    "restrict_route_verdicts",
    "tails_step",
    "tails_reason",
    "TAILS_ROBUST",
    "papers_verdict",
    "zeta_borderline",
    "not_familywise_reason",
    "headline_coherence_step",
    "headline_route_verdicts",
]


def members_used(res, n_members, base=None) -> np.ndarray:
    """Members taking part in each set's verdicts, (set, member) bool (all when unknown).

    With ``base`` a rank statistic (:data:`uqx.engine.statistic.RANK_STATS`), the members
    whose body also fits the data's (``member_plausible_rank``,
    :func:`uqx.workflow.references.plausible_for_ranks`).
    """
    if base in RANK_STATS and "member_plausible_rank" in res:
        return res["member_plausible_rank"].values.astype(bool)
    if "member_plausible" in res:
        return res["member_plausible"].values.astype(bool)
    return np.ones((res.sizes["set"], n_members), dtype=bool)


def restrict_route_verdicts(res, *, n_copies, level) -> xr.Dataset:
    """Re-decide the zero-bin intercept routes over the members that take part.

    The intercepts' p-values per member are stored (``extrap_p_value``); the verdict is
    :func:`uqx.engine.mctest.family_verdict` over the members of :func:`members_used`.

    Parameters
    ----------
    res : xarray.Dataset
        The result with ``extrap_verdict`` and ``extrap_p_value``.
    n_copies : int
        Copies of the intercepts' nulls.
    level : float
        Confidence level (size 1 − level).
    """
    if "extrap_verdict" not in res or "extrap_p_value" not in res:
        return res
    p = res["extrap_p_value"].values  # (set, cond, xstat, member)
    labels = [str(m) for m in res["member"].values]
    use = members_used(res, p.shape[-1])
    verdict = res["extrap_verdict"].values.astype(object)
    reason = res["extrap_verdict_reason"].values.astype(object)
    near = np.zeros(verdict.shape, dtype=bool)
    for idx in np.ndindex(verdict.shape):
        if verdict[idx] == "not tested" or not np.isfinite(p[idx]).any():
            continue
        verdict[idx], reason[idx] = family_verdict(
            p[idx], labels, alpha=1 - level, n_copies=n_copies,
            direction=DIRECTION["intercept"], use=use[idx[0]])
        near[idx] = near_level(p[idx], n_copies, 1 - level, use=use[idx[0]])
    return res.assign(extrap_borderline=(res["extrap_verdict"].dims, near, {
                          "long_name": "a member's p-value within two Monte-Carlo sd of the "
                                       "level (uqx.engine.mctest.borderline)"}),
                      extrap_verdict=(res["extrap_verdict"].dims, verdict.astype(str),
                                      res["extrap_verdict"].attrs),
                      extrap_verdict_reason=(res["extrap_verdict_reason"].dims,
                                             reason.astype(str),
                                             res["extrap_verdict_reason"].attrs))


def zeta_borderline(res, i, j) -> bool:
    """Return whether abs(ζ) is within two Monte-Carlo sd of 1 (the papers' decision can flip)."""
    g = {k: res[k].values[i, j] for k in ("estimate", "ci_low", "ci_high", "ci_low_se",
                                           "ci_high_se", "zeta", "reference",
                                           "reference_kind")}
    if str(g["reference_kind"]).startswith("predefined"):
        zetas, refs, ut, rse = [g["zeta"]], [g["reference"]], [0.0], [0.0]
    else:
        zetas = list(res["zeta_sim"].values[i, j])
        refs = list(res["sim_reference"].values[i, j])
        rse = list(res["sim_reference_se"].values[i, j])
        ut = [2 * x for x in rse]
    sz = zeta_se(g["estimate"], np.array(refs), g["ci_low"], g["ci_high"], g["ci_low_se"],
                 g["ci_high_se"], target_u=np.array(ut), reference_se=np.array(rse))
    with np.errstate(invalid="ignore"):
        return bool(np.any(np.abs(np.abs(zetas) - 1) < 2 * sz))


def papers_verdict(res, specs, i, j, labels):
    """Return the papers' ζ decision (000 Fig. 1 with uqx's D agreement), for comparison."""
    e, lo, hi = (float(res[k].values[i, j]) for k in ("estimate", "ci_low", "ci_high"))
    kind = str(res["reference_kind"].values[i, j])
    if specs[j].base in NOT_TESTED or kind == "":
        return "not tested"
    if interval_problem(e, lo, hi):
        return "inconclusive"
    if kind.startswith("predefined"):
        return zeta_verdict(float(res["zeta"].values[i, j]))
    return simulated_verdict(res["zeta_sim"].values[i, j], res["zeta_sim2"].values[i, j],
                             labels)[0]


def verdict_step(res, specs, notes, draws, member_labels, *, level, joint=None,
                 alternative=None, resolution=True) -> xr.Dataset:
    """Step 4: one verdict per (set, stat): Monte-Carlo test over the null family.

    p-values of the estimate among its simulated calibrated values under every member
    (:func:`uqx.engine.mctest.mc_pvalue`, one- or two-sided by :data:`uqx.engine.mctest.DIRECTION`),
    combined by :func:`uqx.engine.mctest.family_verdict`; ``borderline`` when the deciding
    p-value is within two Monte-Carlo sd of the size. The papers' ζ rule is kept in
    ``zeta_verdict``.

    Parameters
    ----------
    res : xarray.Dataset
        The result so far (estimates, intervals, references over (set, stat)).
    specs : list of StatSpec
        The statistics.
    notes : object
        The workflow's collector of warnings.
    draws : dict
        Simulated values of each statistic under each member of the null family.
    member_labels : list of str
        Labels of the members.
    level : float
        Confidence level (the size of the tests is 1 − level).
    joint : numpy.ndarray, optional
        The joint copies (fitted member at ν̂); with them the fitted member of a two-sided
        statistic reads the side of :data:`uqx.engine.mctest.LIGHT_SIDE` on ``draws``
        (the heavy end of ν) and the other side on ``joint``
        (:func:`uqx.engine.mctest.mc_pvalue_sides`).
    alternative : tuple, optional
        ``(factors, top)``: the binned statistics on uE of the same copies with uE too
        small by each factor in the top bins of uE, computed when asked
        (:class:`uqx.engine.alternative.ConsistencyAlternatives`, :func:`reference_step`); their
        resolution is the smallest factor rejected with 80 % power, and the spread
        alternative's the exponents of :func:`uqx.engine.resolution.spread_resolution`.
    resolution : bool
        Compute the resolutions (else NaN: :func:`uqx.validate` ``resolution``).

    Returns
    -------
    xarray.Dataset
        ``verdict``, ``verdict_reason``, ``borderline``, p-values over (set, stat).
    """
    S, K = res.sizes["set"], len(specs)
    alpha = 1 - level
    verdict = np.full((S, K), "not tested", dtype=object)
    papers = np.full((S, K), "not tested", dtype=object)
    reason = np.full((S, K), "", dtype=object)
    borderline = np.zeros((S, K), dtype=bool)
    zeta_bl = np.zeros((S, K), dtype=bool)
    pv = np.full((S, K, len(member_labels)), np.nan)
    labels = [str(d) for d in res["dist"].values]
    est = res["estimate"].values
    limits = np.full((S, K, 2), np.nan)
    spread = np.full((S, K, 2), np.nan)
    use_all = members_used(res, len(member_labels))
    use_rank = members_used(res, len(member_labels), RANK_STATS[0])
    light = member_labels.index("fit") if joint is not None and "fit" in member_labels \
        else None
    for i in range(S):
        for j, s in enumerate(specs):
            if s.base in NOT_TESTED:
                continue
            use = use_rank if s.base in RANK_STATS else use_all
            papers[i, j] = papers_verdict(res, specs, i, j, labels)
            if papers[i, j] in ("valid", "invalid"):
                zeta_bl[i, j] = zeta_borderline(res, i, j)
            problem = interval_problem(est[i, j], res["ci_low"].values[i, j],
                                       res["ci_high"].values[i, j])
            if problem:
                notes.stat(i, j, problem + " (ζ-scores only; the verdict does not use it)")
            d = direction_of(s.base)
            pv[i, j] = mc_pvalue(est[i, j], draws[i, j], d)
            if light is not None and s.base in LIGHT_SIDE:
                # fitted member: the heavy end of nu on the light side, nu_hat on the other
                heavy, point = draws[i, j, light], joint[i, j, light]
                up, down = (heavy, point) if LIGHT_SIDE[s.base] > 0 else (point, heavy)
                pv[i, j, light] = mc_pvalue_sides(est[i, j], up, down)
            n = np.isfinite(draws[i, j]).sum(-1)  # finite copies per member
            verdict[i, j], reason[i, j] = family_verdict(pv[i, j], member_labels, alpha=alpha,
                                                         n_copies=n, direction=d, use=use[i])
            borderline[i, j] = near_level(pv[i, j], n.min(), alpha, use=use[i])
            if resolution:
                limits[i, j], spread[i, j] = resolution_of_test(
                    s.base, draws[i, j], np.flatnonzero(use[i]), alternative, i, j,
                    direction=d, alpha=alpha)
    valid = np.where(verdict == "valid", 1.0, np.where(verdict == "invalid", 0.0, np.nan))
    return xr.Dataset({
        "verdict": (("set", "stat"), verdict.astype(str),
                    {"long_name": "verdict: valid / invalid / inconclusive / not tested",
                     "rule": "Monte-Carlo test over the null family (uqx.engine.mctest)"}),
        "verdict_reason": (("set", "stat"), reason.astype(str),
                           {"long_name": "why the verdict is inconclusive"}),
        "borderline": (("set", "stat"), borderline,
                       {"long_name": "p-value of a member within 2 Monte-Carlo sd of the "
                        "size"}),
        "resolution_low": (("set", "stat"), limits[..., 0],
                           {"long_name": "smallest miscalibration below calibration that the "
                            "test detects with 80 % power: the factor f of errors f*uE "
                            "(scale; mean_z: bias b of Z, in units of uE; binned "
                            "statistics on uE: none)",
                            "power": 0.8}),
        "resolution_high": (("set", "stat"), limits[..., 1],
                            {"long_name": "smallest miscalibration above calibration that the "
                             "test detects with 80 % power: the factor f of errors f*uE "
                             "(scale; mean_z: bias b of Z, in units of uE; binned "
                             "statistics on uE: errors f*uE in the bins of uE above its "
                             "90th percentile only)",
                             "power": 0.8}),
        "resolution_spread_low": (("set", "stat"), spread[..., 0], {
            "long_name": "binned statistics on uE: the largest exponent gamma below 1 of "
                         "u = c*uE^gamma (same mean square, piecewise on the bins of uE) "
                         "that the test detects with 80 % power", "power": 0.8}),
        "resolution_spread_high": (("set", "stat"), spread[..., 1], {
            "long_name": "binned statistics on uE: the smallest exponent gamma above 1 of "
                         "u = c*uE^gamma (same mean square, piecewise on the bins of uE) "
                         "that the test detects with 80 % power", "power": 0.8}),
        "valid": (("set", "stat"), valid, {"long_name": "1 valid, 0 invalid, NaN otherwise"}),
        "p_value": (("set", "stat", "member"), pv,
                    {"long_name": "Monte-Carlo p-value under each member of the null family"}),
        "zeta_verdict": (("set", "stat"), papers.astype(str),
                         {"long_name": "the papers' zeta rule (000 Fig. 1), for comparison"}),
        "zeta_borderline": (("set", "stat"), zeta_bl,
                            {"long_name": "|zeta| within 2 Monte-Carlo sd of 1 (zeta_verdict "
                             "can flip with the seed)"}),
    }, coords={"member": list(member_labels)})


def resolution_of_test(base, draws, used, alternative, i, j, *, direction, alpha):
    r"""Resolution of one statistic's test, over the least powerful member that takes part.

    Average calibration (:data:`uqx.engine.resolution.SCALE_MAPS`): the factors (biases)
    below and above calibration detected with 80 % power
    (:func:`uqx.engine.resolution.scale_resolution`), the widest over the members.
    Binned statistics on uE: the smallest top-decile factor
    (:func:`uqx.engine.resolution.alternative_resolution`) and the exponents of
    u = c·uE^γ (:func:`uqx.engine.resolution.spread_resolution`), from the copies under
    the alternatives (:class:`uqx.engine.alternative.ConsistencyAlternatives`).

    Parameters
    ----------
    base : str
        The statistic.
    draws : numpy.ndarray, shape (member, n)
        Its calibrated copies per member.
    used : array_like of int
        The members that take part.
    alternative : tuple (factors, ConsistencyAlternatives) or None
    i, j : int
        Set and statistic (keys of the alternatives).
    direction : int
    alpha : float

    Returns
    -------
    (low, high), (spread_low, spread_high) : tuple of float
        NaN where there is no such resolution or it is beyond the grid.
    """
    nan2 = (np.nan, np.nan)
    kind = RESOLUTION_KIND.get(base)
    if len(used) == 0:  # no member takes part: nothing to resolve
        return nan2, nan2
    if kind == "top":
        top = None if alternative is None else alternative[1]
        if top is None or not top.available(i, j):
            return nan2, nan2
        f = [alternative_resolution(draws[m, :top.n_copies], top.values(i, j, m), top.factors,
                                    direction=direction, alpha=alpha,
                                    quasi_convex=base in QUASI_CONVEX_TOP) for m in used]
        spread = spread_resolution([draws[m, :top.n_copies] for m in used],
                                   [partial(top.spread, i, j, m) for m in used],
                                   direction=direction, alpha=alpha)
        return (np.nan, np.max(f) if np.isfinite(f).all() else np.nan), spread
    if kind is None:
        return nan2, nan2
    lims = np.array([scale_resolution(base, draws[m], alpha=alpha) for m in used])
    with np.errstate(invalid="ignore"):  # the least powerful member: the widest factors
        return (np.min(lims[:, 0]) if np.isfinite(lims[:, 0]).all() else np.nan,
                np.max(lims[:, 1]) if np.isfinite(lims[:, 1]).all() else np.nan), nan2


def _family(res, specs, draws, head_copies, route_copies, i, m, n, rank_use=None):
    """List the tests of set ``i`` under member ``m``: (key, observed p, copy p (n,)).

    A rank statistic is left out of the family of a member that does not take part in
    its test (``rank_use``, :func:`members_used`).
    """
    out = []
    for j, s in enumerate(specs):
        if s.base in RANK_STATS and rank_use is not None and not rank_use[i, m]:
            continue
        if s.base not in NOT_TESTED:
            d = direction_of(s.base)  # observed p on the same (joint) copies
            out.append((("stat", j), mc_pvalue(res["estimate"].values[i, j], draws[i, j, m], d),
                        copy_pvalues(draws[i, j, m], d)[:n]))
    C = res.sizes["cond"] if "cond_verdict" in res else 0
    for c in range(C):
        if (i, c) in head_copies:
            out.append((("cond", c), res["cond_p_value"].values[i, c, m],
                        head_copies[i, c][m, :n]))
        if (i, c) in route_copies:
            null = route_copies[i, c][m]  # (copies, xstat): the intercepts
            for k in range(null.shape[1]):
                out.append((("route", c, k), res["extrap_p_value"].values[i, c, k, m],
                            copy_pvalues(null[:, k], DIRECTION["intercept"])[:n]))
    return out


def familywise_step(res, specs, draws, head_copies, *, n_shared,
                    route_copies=None) -> xr.Dataset:
    """Step 7: an ``invalid`` must also hold for the result as a whole.

    Every test of a set (each statistic, each headline, each zero-bin intercept route)
    gets a family-wise adjusted p-value per member (:func:`uqx.engine.mctest.familywise_pvalues`,
    step-down min-p on the copies the tests share: the first ``n_shared`` copies, or
    all when there is no headline). An ``invalid`` whose adjusted p-value is not below
    :data:`uqx.engine.mctest.ALPHA_RESULT` under every member becomes ``inconclusive``: then a
    calibrated set gets an ``invalid`` somewhere in at most 10 % of cases.

    Parameters
    ----------
    res : xarray.Dataset
        The result with the per-statistic verdicts.
    specs : list of StatSpec
        The statistics.
    draws : numpy.ndarray
        Simulated values (set, stat, member, copy) of each statistic under each member,
        every statistic of a copy from the same simulated data (the joint law min-p
        needs); the statistics' observed p-values are taken on them too.
    head_copies : dict
        Copies of the headline tests, per set and conditioning variable.
    n_shared : int
        Copies shared by all the tests of a set (0: none).
    route_copies : dict, optional
        Copies of the zero-bin intercept routes.

    Returns
    -------
    xarray.Dataset
        The result with the family-wise adjusted verdicts.
    """
    route_copies = route_copies or {}
    labels = [str(m) for m in res["member"].values]
    arrays = {"stat": ("verdict", "verdict_reason", "p_adjusted", ("set", "stat")),
              "cond": ("cond_verdict", "cond_verdict_reason", "cond_p_adjusted",
                       ("set", "cond")),
              "route": ("extrap_verdict", "extrap_verdict_reason", "extrap_p_adjusted",
                        ("set", "cond", "xstat"))}
    arrays = {k: v for k, v in arrays.items() if v[0] in res}
    verdict = {k: res[v[0]].values.astype(object) for k, v in arrays.items()}
    reason = {k: res[v[1]].values.astype(object) for k, v in arrays.items()}
    adj = {k: np.full(res[v[0]].shape + (len(labels),), np.nan) for k, v in arrays.items()}
    use = members_used(res, len(labels))
    use_rank = members_used(res, len(labels), RANK_STATS[0])
    rank = np.array([s.base in RANK_STATS for s in specs])
    for i in range(res.sizes["set"]):
        n = n_shared if n_shared and (head_copies or route_copies) else draws.shape[-1]
        for m in range(len(labels)):
            tests = _family(res, specs, draws, head_copies, route_copies, i, m, n,
                            rank_use=use_rank)
            if not tests:
                continue
            p = familywise_pvalues([t[1] for t in tests], np.stack([t[2] for t in tests]))
            for (key, *_), q in zip(tests, p, strict=True):
                adj[key[0]][(i, *key[1:], m)] = q
        for kind in arrays:
            for idx in np.ndindex(verdict[kind].shape[1:]):
                at = (i, *idx)
                part = use_rank[i] if kind == "stat" and rank[idx[0]] else use[i]
                q = adj[kind][at][part]  # the members that take part
                if verdict[kind][at] == "invalid" and not np.all(q < ALPHA_RESULT):
                    verdict[kind][at] = "inconclusive"
                    reason[kind][at] = not_familywise_reason(q)
    for kind, (v, r, a, dims) in arrays.items():
        res = res.assign({
            v: (res[v].dims, verdict[kind].astype(str), res[v].attrs),
            r: (res[r].dims, reason[kind].astype(str), res[r].attrs),
            a: (dims + ("member",), adj[kind],
                {"long_name": "family-wise adjusted p-value over every test of the set "
                 "(step-down min-p)"}),
        })
    res["valid"] = (("set", "stat"), np.where(verdict["stat"] == "valid", 1.0, np.where(
        verdict["stat"] == "invalid", 0.0, np.nan)), res["valid"].attrs)
    return res


def not_familywise_reason(p_adj) -> str:
    """Reason of an ``invalid`` turned ``inconclusive`` by the family-wise check."""
    worst = np.nanmax(p_adj) if np.isfinite(p_adj).any() else np.nan
    return (f"rejected on its own, but not once every test of this set is taken together "
            f"(family-wise adjusted p = {worst:.3g} >= {ALPHA_RESULT:g}): the evidence is "
            "not strong enough for a verdict of invalid")


def tails_reason(kappa, M=None) -> str:
    """Why an ``invalid`` cannot stand on errors this heavy-tailed ('' when it can).

    The null family reaches t_s(3) at its heaviest (:data:`uqx.engine.null_shape.NU_MIN`) and
    its sizes are measured within the safety limits of 001 Table II. Beyond the limit on
    the Crow–Siddiqui kurtosis of Z² (measured within the bins of uE, so that an
    inconsistency is not read as tails), a rejection may come from tails that no member
    represents. With ``M``, also where the sample is too small to show tails lighter
    than t_s(3)'s (:func:`uqx.engine.null_shape.tails_within_reach`): a small sample of
    heavier-tailed errors that misses its extremes looks light and has a small ⟨Z²⟩.

    Parameters
    ----------
    kappa : float
        κ_CS of the set's Z² (``kappa_cs_z2_local`` of a result).
    M : int, optional
        Points of the set.
    """
    limit = SAFETY_LIMITS["kappa_cs_z2"]
    if not np.isfinite(kappa):
        return ""
    if kappa > limit:
        return (f"rejected, but the errors' tails are beyond the safety limit (kappa_cs of "
                f"Z^2 within the bins of uE = {kappa:.3g} > {limit:g}, 001 Table II): the "
                "null family does not represent such tails, the rejection may come from them")
    if M is not None and not tails_within_reach(kappa, M):
        reach = float(tails_reach_limit(M))
        return (f"rejected, but {int(M)} points cannot show that the errors' tails are lighter "
                f"than those of t_s({NU_MIN:g}), the heaviest member of the null family "
                f"(kappa_cs of Z^2 within the bins of uE = {kappa:.3g}, not below {reach:.3g}):"
                " heavier tails that the sample missed would give such a rejection on "
                "calibrated data")
    return ""


#: Statistics whose test keeps its size whatever the tails (a mean of Z, finite variance
#: for t_s(ν > 2); measured: t_s(2.5) errors, <= 1 % `invalid` at M = 200): the
#: small-sample reach of :func:`tails_reason` does not apply to them.
TAILS_ROBUST = ("mean_z",)


def tails_step(res, M=None) -> xr.Dataset:
    """Step 8: an ``invalid`` on tails beyond the null family's reach becomes ``inconclusive``.

    Applies :func:`tails_reason` to every verdict of the result (statistics, headlines,
    zero-bin intercept routes), after the family-wise step: beyond the safety limit to
    all of them, below the small-sample reach (with ``M``) to all but
    :data:`TAILS_ROBUST`.

    Parameters
    ----------
    res : xarray.Dataset
        The result, with ``kappa_cs_z2_local`` over ``set``.
    M : array_like of int, optional
        Points of each set.

    Returns
    -------
    xarray.Dataset
        The result with the verdicts and reasons updated (``valid`` recomputed).
    """
    if "kappa_cs_z2_local" not in res:
        return res
    kappa = res["kappa_cs_z2_local"].values
    limit = SAFETY_LIMITS["kappa_cs_z2"]
    for v, r in (("verdict", "verdict_reason"), ("cond_verdict", "cond_verdict_reason"),
                 ("extrap_verdict", "extrap_verdict_reason")):
        if v not in res:
            continue
        verdict = res[v].values.astype(object)
        reason = res[r].values.astype(object)
        robust = None
        if v == "verdict":
            robust = np.isin(res["stat"].values.astype(str), TAILS_ROBUST)
        for i in range(res.sizes["set"]):
            k = float(kappa[i])
            why = tails_reason(k, None if M is None else int(np.asarray(M)[i]))
            if why:
                hit = verdict[i] == "invalid"
                if robust is not None and not k > limit:  # the small-sample reach only
                    hit &= ~robust
                verdict[i][hit] = "inconclusive"
                reason[i][hit] = why
        res = res.assign({v: (res[v].dims, verdict.astype(str), res[v].attrs),
                          r: (res[r].dims, reason.astype(str), res[r].attrs)})
    res["valid"] = (("set", "stat"), np.where(res["verdict"].values == "valid", 1.0, np.where(
        res["verdict"].values == "invalid", 0.0, np.nan)), res["valid"].attrs)
    return res


def headline_route_verdicts(res, i, c) -> dict:
    """Verdicts of the routes of headline (set ``i``, cond ``c``), by route name.

    The names are those of ``cond_routes``: a statistic's name in capitals (its
    ``verdict``) or ``"<STAT> intercept"`` (its ``extrap_verdict``).
    """
    if "cond_routes" not in res:
        return {}
    stats = {str(s).upper(): j for j, s in enumerate(res["stat"].values)}
    xstats = ({f"{str(x).upper()} intercept": k for k, x in enumerate(res["xstat"].values)}
              if "extrap_verdict" in res else {})
    out = {}
    for name in (r.strip() for r in str(res["cond_routes"].values[i, c]).split(",")):
        if name in stats:
            out[name] = str(res["verdict"].values[i, stats[name]])
        elif name in xstats:
            out[name] = str(res["extrap_verdict"].values[i, c, xstats[name]])
    return out


def headline_coherence_step(res) -> xr.Dataset:
    """Step 9: a headline is never ``valid`` while one of its routes is ``invalid``.

    The headline combines its routes at the level of one test (5 %: min-p over the
    routes), a route's own ``invalid`` holds at 5 % and at the result's family-wise 10 %
    (:func:`familywise_step`): a route can therefore be ``invalid`` where the
    combination does not reject. A route that rejects is a rejection of what the
    headline claims, so the headline's ``valid`` becomes ``inconclusive`` and an
    ``inconclusive`` headline names the route, each with the reason. Runs after the
    family-wise and tails steps, which settle the routes' verdicts.

    Parameters
    ----------
    res : xarray.Dataset
        The result with ``cond_verdict``, ``cond_verdict_reason`` and ``cond_routes``.

    Returns
    -------
    xarray.Dataset
    """
    if "cond_verdict" not in res or "cond_routes" not in res:
        return res
    verdict = res["cond_verdict"].values.astype(object)
    reason = res["cond_verdict_reason"].values.astype(object)
    changed = False
    for i in range(res.sizes["set"]):
        for c in range(res.sizes["cond"]):
            if verdict[i, c] not in ("valid", "inconclusive"):
                continue
            rejecting = [n for n, v in headline_route_verdicts(res, i, c).items()
                         if v == "invalid"]
            if not rejecting:
                continue
            which = ", ".join(rejecting)
            why = (f"{which} {'is' if len(rejecting) == 1 else 'are'} invalid on "
                   f"{'its' if len(rejecting) == 1 else 'their'} own (a rejection of this "
                   "property), but the headline, which combines all its routes at the "
                   "level of one test, does not reject")
            reason[i, c] = why if verdict[i, c] == "valid" or not reason[i, c] else \
                f"{why}; {reason[i, c]}"
            verdict[i, c] = "inconclusive"
            changed = True
    if not changed:
        return res
    return res.assign(
        cond_verdict=(res["cond_verdict"].dims, verdict.astype(str), res["cond_verdict"].attrs),
        cond_verdict_reason=(res["cond_verdict_reason"].dims, reason.astype(str),
                             res["cond_verdict_reason"].attrs))
