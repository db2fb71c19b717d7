r"""The resolution of every test that can say ``valid``, read where ``valid`` is decided.

A ``valid`` says "not rejected"; its resolution says what that is worth: the smallest
miscalibration of a named kind that the same procedure would have found not ``valid``
with 80 % power (:data:`uqx.engine.resolution.POWER`), at this M and on these uE. It is
read at the threshold that decides: a test t of question q is rejected under member m
beyond the Monte-Carlo noise (what withholds a ``valid``) when its p-value is below
:math:`w_t\,c_{q,m}`, with :math:`c_{q,m}` the critical value of the question's weighted
min-p at its initial share of the set's level less two Monte-Carlo sd
(:func:`uqx.workflow.decision.firm_level`)
(:func:`uqx.engine.questions.critical_value`; a share passed on later only raises the
power, so the statement holds whatever the other questions do); a question rejects when
*one* of its tests does, so its power under an alternative is read on the joint copies
of its tests (those without copies under the alternative count as not rejecting: a lower
bound). ``valid`` needs every member that takes part to accept, so its probability under
the alternative is at most that of the least powerful member, whose resolution is the
one stated. Beyond the safety limit on the tails (κ_CS of Z² > 5) only the data's own
z-scores represent the errors' tails, and the resolution is read on that member alone.

The named alternatives (:mod:`uqx.engine.resolution`, :mod:`uqx.engine.alternative`):

* average calibration: a **scale** of uE (ZMS, RCE, Var Z) and a **bias** (⟨Z⟩, in units
  of the errors' standard deviation); its question: the scale;
* consistency, and consistency up to a factor: uE too small by f in the **top** decile of
  uE, and :math:`u = c\,u_E^\gamma` (**spread**, exponents below and above 1);
* adaptivity on X or V: uE too small by f for the top decile of the feature.

* CC: :math:`u = c\,u_E^\gamma` with γ < 1 (uE varying too much, down to γ = 0, uE
  saying nothing of which predictions are less reliable), row by row: the exponent
  below 1 (a rank correlation cannot see γ > 1 or the top decile, which raise it).
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.schema import VALIDATE
from uqx.engine.questions import NODES, QUESTIONS, decide_set, question_of
from uqx.engine.resolution import (
    SPREAD_DOWN,
    SPREAD_STEP,
    SPREAD_UP,
    TOP_STEP,
    alternative_resolution,
    first_hit,
    scale_resolution,
)
from uqx.engine.statistic import STATISTICS, parse_stat
from uqx.engine.stats.tailedness import SAFETY_LIMITS

__all__ = ["resolution_step", "unresolved_step", "RESOLUTION_VARS", "NO_RESOLUTION"]

#: Variables of a result written by :func:`resolution_step`.
RESOLUTION_VARS = ("resolution_low", "resolution_high", "resolution_spread_low",
                   "resolution_spread_high", "question_resolution_low",
                   "question_resolution_high", "question_resolution_spread_low",
                   "question_resolution_spread_high")


def _members(res, i, use):
    """Members whose resolution counts for set ``i``: the data's own beyond the limits."""
    u = np.asarray(use, dtype=bool).copy()
    k = float(res["kappa_cs_z2_local"].values[i]) if "kappa_cs_z2_local" in res else np.nan
    labels = [str(m) for m in res["member"].values]
    if np.isfinite(k) and k > SAFETY_LIMITS["kappa_cs_z2"] and "data" in labels:
        d = labels.index("data")
        u = np.zeros_like(u)
        u[d] = use[d]
    return np.flatnonzero(u)


def _scale_copies(base, null, M):
    """Return copies on the scale its ``scale_map`` reads (t_z: /√M)."""
    if base == "mean_z":  # the test reads t_z: a bias b moves it by b sqrt(M) / sd(Z)
        return "mean_z", np.asarray(null, dtype=np.float64) / np.sqrt(M)
    return base, null


def _widest(values, low):
    v = np.asarray(values, dtype=np.float64)
    if not v.size or not np.isfinite(v).all():
        return np.nan
    return float(np.min(v) if low else np.max(v))


def resolution_step(res, specs, draws, top, tests, *, M, alpha) -> xr.Dataset:
    """State the resolution of every node and question, at the threshold that decides it.

    Parameters
    ----------
    res : xarray.Dataset
        The result with its questions decided.
    specs : list of StatSpec
    draws : numpy.ndarray, shape (set, stat, member, n)
        The copies of the tests.
    top : uqx.engine.alternative.BinnedCopies or None
        The binned statistics' copies up to a factor and under the alternatives.
    tests : dict
        ``{set: NodeTests}`` (:func:`uqx.workflow.decision.set_tests`).
    M : array_like of int
        Points per set.
    alpha : float
        The set's family-wise level.

    Returns
    -------
    xarray.Dataset
        :data:`RESOLUTION_VARS`: over (set, stat) the factors (or biases) below and above
        calibration and the exponents of the spread alternative of each node's statistic;
        over (set, question) the same for each question. NaN where there is none, where
        the statistic decides nothing (a diagnostic) or it is beyond the grid.
    """
    S, K = res.sizes["set"], len(specs)
    Q = len(QUESTIONS)
    lim = np.full((S, K, 2), np.nan)
    spr = np.full((S, K, 2), np.nan)
    qlim = np.full((S, Q, 2), np.nan)
    qspr = np.full((S, Q, 2), np.nan)
    for i in range(S):
        t = tests.get(i)
        if t is None or not t.present():
            continue
        Mi = int(np.asarray(M)[i])
        dec = decide_set(t.p, t.copies, t.use, t.min_p, alpha, nodes=t.nodes)
        for k in t.present():
            node = NODES[k]
            j = int(t.stat[k])
            used = _members(res, i, t.use[k])
            thr = {m: float(dec.threshold[k, m]) for m in used}
            if not used.size or not all(np.isfinite(c) and c > 0 for c in thr.values()):
                continue
            a = QUESTIONS.index(node.question)
            if node.name in ("scale", "bias", "ranking"):
                low_high, spread = _statistic_resolution(specs[j], draws[i, j], used, thr,
                                                         top, i, j, Mi)
                lim[i, j], spr[i, j] = low_high, spread
                if node.name != "bias":  # average calibration reads the scale
                    qlim[i, a], qspr[i, a] = low_high, spread
                continue
            low_high, spread = _binned_resolution(node, specs, t, k, draws, used, thr,
                                                  top, i)
            qlim[i, a], qspr[i, a] = low_high, spread
            if node.name != "up_to_factor":
                lim[i, j], spr[i, j] = low_high, spread
    return xr.Dataset(VALIDATE.data_vars({
        "resolution_low": lim[..., 0], "resolution_high": lim[..., 1],
        "resolution_spread_low": spr[..., 0], "resolution_spread_high": spr[..., 1],
        "question_resolution_low": qlim[..., 0], "question_resolution_high": qlim[..., 1],
        "question_resolution_spread_low": qspr[..., 0],
        "question_resolution_spread_high": qspr[..., 1],
    }))


def _statistic_resolution(s, draws, used, crit, top, i, j, M):
    """(low, high), (spread low, spread high) of a moment or rank node over its members."""
    nan2 = (np.nan, np.nan)
    kind = STATISTICS[s.base].resolution
    if s.base == "cc":  # uE varying too much (gamma < 1) lowers the rank correlation
        held = [None if top is None else top.cc_spread(i, m) for m in used]
        if any(h is None for h in held):
            return nan2, nan2
        g = [alternative_resolution(draws[m, :h[0].shape[0]], h[0], h[1], direction=-1,
                                    alpha=crit[m], quasi_convex=False)
             for m, h in zip(used, held, strict=True)]
        return nan2, (_widest(g, True), np.nan)
    if kind in ("scale", "bias"):
        base, _ = _scale_copies(s.base, draws[used[0]], M)
        lims = np.array([scale_resolution(base, _scale_copies(s.base, draws[m], M)[1],
                                          alpha=crit[m]) for m in used])
        return (_widest(lims[:, 0], True), _widest(lims[:, 1], False)), nan2
    return nan2, nan2  # the binned nodes: _binned_resolution


def _binned_resolution(node, specs, t, k, draws, used, thr, top, i):
    """(low, high), (spread low, spread high) of a binned node over its members.

    The node's statistic under the alternatives of its variable (the top decile; on uE
    also the spread), rescaled copy by copy by its own √ZMS for ``up_to_factor``.
    """
    nan2 = (np.nan, np.nan)
    j = int(t.stat[k])
    cond = node.cond
    scale_free = node.name == "up_to_factor"
    if top is None or not top.available(i, j, cond):
        return nan2, nan2
    d = STATISTICS[specs[j].base].direction
    highs, lows, ups = [], [], []
    for m in used:
        null = _route_null(specs, j, draws, top, i, m, scale_free)
        t_of = top.values(i, j, m, cond=cond, scale_free=scale_free)

        def top_hit(idx_f, t_of=t_of, null=null, m=m):
            return _below(np.asarray(t_of(idx_f), dtype=np.float64), null, d, thr[m])

        kf = first_hit(top_hit, top.factors.size, step=TOP_STEP, quasi_convex=False,
                       monotone=True)
        highs.append(float(top.factors[kf]) if kf >= 0 else np.nan)
        if cond == "uE":
            for grid, out in ((SPREAD_DOWN, lows), (SPREAD_UP, ups)):
                def spread_hit(ii, grid=grid, m=m, null=null):
                    alt = top.spread(i, j, m, grid[np.atleast_1d(ii)], scale_free=scale_free)
                    return _below(np.asarray(alt, dtype=np.float64), null, d, thr[m])
                kg = first_hit(spread_hit, grid.size, step=SPREAD_STEP, quasi_convex=False,
                               monotone=True)
                out.append(float(grid[kg]) if kg >= 0 else np.nan)
    spread = (_widest(lows, True), _widest(ups, False)) if cond == "uE" else nan2
    return (np.nan, _widest(highs, False)), spread


def _route_null(specs, j, draws, top, i, m, scale_free):
    """Return the calibrated copies a node's p-value is read against (sorted, finite)."""
    null = top.null(i, j, m, scale_free=True) if scale_free else draws[i, j, m, :top.n_copies]
    null = np.sort(np.asarray(null, dtype=np.float64))
    return null[np.isfinite(null)]


def _below(alt, null, direction, threshold, own=False):
    """Whether each alternative copy's p-value against ``null`` is below ``threshold``.

    ``null`` sorted and finite; the p-value of :func:`uqx.engine.mctest.mc_pvalue` (two
    sides doubled), or with ``own`` (``alt`` the copies themselves) that of
    :func:`uqx.engine.mctest.copy_pvalues`.
    """
    n = null.size
    ge = n - np.searchsorted(null, alt, side="left")
    le = np.searchsorted(null, alt, side="right")
    if own:
        up, down = ge / n, le / n
    else:
        up, down = (1 + ge) / (1 + n), (1 + le) / (1 + n)
    p = {1: up, -1: down}.get(direction)
    if p is None:
        p = np.minimum(1.0, 2 * np.minimum(up, down))
    return np.isfinite(alt) & (p < threshold)


#: Why a ``valid`` without a resolution reads ``inconclusive``.
NO_RESOLUTION = ("not rejected, but no resolution within reach at this M: even the largest "
                 "miscalibration searched could go unseen, so `valid` would claim nothing "
                 "(more points would give one)")


def _resolved(q, lo, hi, s_lo, s_hi) -> bool:
    """Whether a question's ``valid`` has a resolution to state."""
    if q == "average":
        return bool(np.isfinite(lo) or np.isfinite(hi))
    if q == "ranking":
        return bool(np.isfinite(s_lo))
    return bool(np.isfinite(hi) or np.isfinite(s_lo) or np.isfinite(s_hi))


def unresolved_step(res: xr.Dataset) -> xr.Dataset:
    """Make a ``valid`` state its resolution or read ``inconclusive`` (:data:`NO_RESOLUTION`).

    Applied to each question with its ``question_resolution_*`` and to the statistic of
    each of its nodes (the rescaled one of ``up_to_factor`` in ``factor_verdict``).
    """
    qs = [str(q) for q in res["question"].values]
    qv = res["question_verdict"].values.astype(object)
    qr = res["question_reason"].values.astype(object)
    sv = res["verdict"].values.astype(object)
    sr = res["verdict_reason"].values.astype(object)
    fv = res["factor_verdict"].values.astype(object)
    fr = res["factor_verdict_reason"].values.astype(object)
    names = [str(x) for x in res["stat"].values]
    specs = [parse_stat(n) for n in names]
    r = {k: res[f"question_resolution_{k}"].values for k in
         ("low", "high", "spread_low", "spread_high")}
    for i in range(res.sizes["set"]):
        for a, q in enumerate(qs):
            if qv[i, a] != "valid" or _resolved(q, *(r[k][i, a] for k in r)):
                continue
            qv[i, a], qr[i, a] = "inconclusive", NO_RESOLUTION
            if q == "up_to_factor":
                fv[i][fv[i] == "valid"], fr[i][fv[i] == "valid"] = "inconclusive", NO_RESOLUTION
                continue
            for j, s in enumerate(specs):
                if sv[i, j] == "valid" and question_of(s.family, s.cond) == q:
                    sv[i, j], sr[i, j] = "inconclusive", NO_RESOLUTION
    out = res.copy()
    for name, val in (("question_verdict", qv), ("question_reason", qr), ("verdict", sv),
                      ("verdict_reason", sr), ("factor_verdict", fv),
                      ("factor_verdict_reason", fr)):
        out[name] = (res[name].dims, val.astype(str), res[name].attrs)
    out["valid"] = (("set", "stat"), np.where(sv == "valid", 1.0, np.where(
        sv == "invalid", 0.0, np.nan)), res["valid"].attrs)
    return out
