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

from functools import partial

import numpy as np
import xarray as xr

from uqx.dataio.schema import VALIDATE
from uqx.engine.questions import QUESTIONS, critical_value
from uqx.engine.resolution import (
    _GRID,
    SPREAD_DOWN,
    SPREAD_STEP,
    SPREAD_UP,
    TOP_STEP,
    alternative_resolution,
    first_hit,
    scale_resolution,
    spread_resolution,
)
from uqx.engine.statistic import STATISTICS
from uqx.engine.stats.tailedness import SAFETY_LIMITS
from uqx.workflow.decision import firm_level

__all__ = ["resolution_step", "RESOLUTION_VARS"]

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


def _thresholds(res, t, i, m, q):
    """Critical value of question ``q`` under member ``m`` at its initial level.

    A question that starts with no share (``up_to_factor``) is read at the level it was
    given by the rejected average calibration.
    """
    a = QUESTIONS.index(q)
    level = float(res["question_level_initial"].values[i, a, m])
    if level == 0:  # up_to_factor: asked with the share average calibration passed on
        level = float(res["question_level"].values[i, a, m])
    idx = [k for k, tq in enumerate(t.questions) if tq == q and t.use[k, m]
           and np.isfinite(t.p[k, m])]
    if not idx or not np.isfinite(level):
        return np.nan
    n = int(np.sum(np.all(np.isfinite(t.copies[idx, m]), axis=0)))
    # "not valid" needs a rejection beyond the Monte-Carlo noise of the p-value
    return critical_value(t.copies[idx, m], t.weights[idx], firm_level(level, n))


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


def resolution_step(res, specs, draws, top, tests, *, M) -> xr.Dataset:
    """Step 7: the resolution of every statistic and question, at its deciding threshold.

    Parameters
    ----------
    res : xarray.Dataset
        The result with its questions decided (``question_level_initial``).
    specs : list of StatSpec
    draws : numpy.ndarray, shape (set, stat, member, n)
        The copies of the tests.
    top : uqx.engine.alternative.BinnedCopies or None
        The binned statistics' copies up to a factor and under the alternatives.
    tests : dict
        ``{set: QuestionTests}`` (:func:`uqx.workflow.decision.set_tests`).
    M : array_like of int
        Points per set.

    Returns
    -------
    xarray.Dataset
        :data:`RESOLUTION_VARS`: over (set, stat) the factors (or biases) below and above
        calibration and the exponents of the spread alternative; over (set, question)
        the same for each question. NaN where there is none or it is beyond the grid.
    """
    S, K = res.sizes["set"], len(specs)
    Q = len(QUESTIONS)
    lim = np.full((S, K, 2), np.nan)
    spr = np.full((S, K, 2), np.nan)
    qlim = np.full((S, Q, 2), np.nan)
    qspr = np.full((S, Q, 2), np.nan)
    for i in range(S):
        t = tests.get(i)
        if t is None or not t.keys:
            continue
        Mi = int(np.asarray(M)[i])
        for k, key in enumerate(t.keys):
            j = key[1]
            s = specs[j]
            if key[0] != "stat" or not STATISTICS[s.base].tested:
                continue
            used = _members(res, i, t.use[k])
            crit = {m: _thresholds(res, t, i, m, t.questions[k]) for m in used}
            if not used.size or not all(np.isfinite(c) and c > 0 for c in crit.values()):
                continue
            lim[i, j], spr[i, j] = _statistic_resolution(s, draws[i, j], used, crit,
                                                          top, i, j, Mi, t.weights[k])
        for a, q in enumerate(QUESTIONS):
            idx = [k for k, tq in enumerate(t.questions) if tq == q]
            if not idx:
                continue
            if q == "ranking":  # one test, CC: the question's threshold is its own
                j = t.keys[idx[0]][1]
                qlim[i, a], qspr[i, a] = lim[i, j], spr[i, j]
                continue
            used = _members(res, i, np.any(t.use[idx], axis=0))
            crit = {m: _thresholds(res, t, i, m, q) for m in used}
            if not used.size or not all(np.isfinite(c) and c > 0 for c in crit.values()):
                continue
            qlim[i, a], qspr[i, a] = _question_resolution(q, specs, t, idx, draws, used,
                                                          crit, top, i, Mi)
    return xr.Dataset(VALIDATE.data_vars({
        "resolution_low": lim[..., 0], "resolution_high": lim[..., 1],
        "resolution_spread_low": spr[..., 0], "resolution_spread_high": spr[..., 1],
        "question_resolution_low": qlim[..., 0], "question_resolution_high": qlim[..., 1],
        "question_resolution_spread_low": qspr[..., 0],
        "question_resolution_spread_high": qspr[..., 1],
    }))


def _statistic_resolution(s, draws, used, crit, top, i, j, M, w):
    """(low, high), (spread low, spread high) of one statistic over its members."""
    nan2 = (np.nan, np.nan)
    kind = STATISTICS[s.base].resolution
    if s.base == "cc":  # uE varying too much (gamma < 1) lowers the rank correlation
        held = [None if top is None else top.cc_spread(i, m) for m in used]
        if any(h is None for h in held):
            return nan2, nan2
        g = [alternative_resolution(draws[m, :h[0].shape[0]], h[0], h[1], direction=-1,
                                    alpha=w * crit[m], quasi_convex=False)
             for m, h in zip(used, held, strict=True)]
        return nan2, (_widest(g, True), np.nan)
    if kind in ("scale", "bias"):
        base, _ = _scale_copies(s.base, draws[used[0]], M)
        lims = np.array([scale_resolution(base, _scale_copies(s.base, draws[m], M)[1],
                                          alpha=w * crit[m]) for m in used])
        return (_widest(lims[:, 0], True), _widest(lims[:, 1], False)), nan2
    if kind != "top" or top is None or not top.available(i, j, s.cond):
        return nan2, nan2
    d = STATISTICS[s.base].direction
    f = [alternative_resolution(draws[m, :top.n_copies], top.values(i, j, m, cond=s.cond),
                                top.factors, direction=d, alpha=w * crit[m],
                                quasi_convex=STATISTICS[s.base].quasi_convex) for m in used]
    spread = nan2
    if s.cond == "uE":
        spread = spread_resolution([draws[m, :top.n_copies] for m in used],
                                   [partial(top.spread, i, j, m) for m in used],
                                   direction=d, alpha=min(w * crit[m] for m in used))
    return (np.nan, _widest(f, False)), spread


def _question_resolution(q, specs, t, idx, draws, used, crit, top, i, M):
    """(low, high), (spread low, spread high) of one question over its members."""
    nan2 = (np.nan, np.nan)
    if q == "average":
        return _average_resolution(specs, t, idx, draws[i], used, crit), nan2
    scale_free = q == "up_to_factor"
    cond = {"consistency": "uE", "up_to_factor": "uE"}.get(q, q.rsplit("_", 1)[-1])
    routes = [k for k in idx if specs[t.keys[k][1]].family == "binned"
              and top is not None and top.available(i, t.keys[k][1], cond)]
    if not routes:
        return nan2, nan2
    highs, lows, ups = [], [], []
    for m in used:
        nulls = {k: _route_null(specs, t, k, draws, top, i, m, scale_free) for k in routes}

        def rejected(values_of, idx_f, m=m, nulls=nulls):
            hit = None
            for k in routes:
                if not t.use[k, m]:
                    continue
                null = nulls[k]
                d = STATISTICS[specs[t.keys[k][1]].base].direction
                alt = np.asarray(values_of(k, idx_f), dtype=np.float64)
                r = _below(alt, null, d, t.weights[k] * crit[m])
                hit = r if hit is None else hit | r
            return hit

        top_of = {k: top.values(i, t.keys[k][1], m, cond=cond, scale_free=scale_free)
                  for k in routes}
        def top_hit(idx_f, t_of=top_of):
            return rejected(lambda key, ii: t_of[key](ii), idx_f)

        kf = first_hit(top_hit, top.factors.size, step=TOP_STEP, quasi_convex=False, monotone=True)
        highs.append(float(top.factors[kf]) if kf >= 0 else np.nan)
        if cond == "uE":
            for grid, out in ((SPREAD_DOWN, lows), (SPREAD_UP, ups)):
                def spread_of(k, ii, grid=grid, m=m):
                    return top.spread(i, t.keys[k][1], m, grid[np.atleast_1d(ii)],
                                      scale_free=scale_free)
                kg = first_hit(lambda ii, f=spread_of: rejected(f, ii), grid.size,
                               step=SPREAD_STEP, quasi_convex=False, monotone=True)
                out.append(float(grid[kg]) if kg >= 0 else np.nan)
    spread = (_widest(lows, True), _widest(ups, False)) if cond == "uE" else nan2
    return (np.nan, _widest(highs, False)), spread


def _route_null(specs, t, k, draws, top, i, m, scale_free):
    """Return the calibrated copies a route's p-value is read against (sorted, finite)."""
    j = t.keys[k][1]
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


def _average_resolution(specs, t, idx, draws, used, crit):
    """Scale factors below and above 1 at which average calibration is found not valid.

    Under a scale f of uE, ZMS, Var Z and RCE move by their maps (their ``scale_map`` in
    :data:`uqx.engine.statistic.STATISTICS`) and the studentised ⟨Z⟩ does not; the
    question rejects a copy when one of them does.
    """
    out = []
    for grid in (_GRID["scale"][1], _GRID["scale"][0]):
        per = []
        for m in used:
            parts = []
            for k in idx:
                if not t.use[k, m]:
                    continue
                j = t.keys[k][1]
                base = specs[j].base
                null = np.asarray(draws[j, m], dtype=np.float64)
                size = null.size
                null = np.sort(null[np.isfinite(null)])
                # a tiny set leaves some copies of a statistic undefined: the rows of
                # every statistic stay the copies' count (NaN never rejects)
                parts.append((base, null, t.weights[k] * crit[m], size))

            def rejected(ii, parts=parts, grid=grid):
                hit = None
                for base, null, thr, size in parts:
                    full = np.concatenate([null, np.full(size - null.size, np.nan)])
                    if not null.size:  # no copy defined: nothing to reject against
                        r = np.zeros((size, np.size(ii)), dtype=bool)
                    elif STATISTICS[base].resolution == "scale":
                        alt = STATISTICS[base].scale_map(full[:, None],
                                                         grid[np.atleast_1d(ii)][None, :])
                        r = _below(alt, null, STATISTICS[base].direction, thr)
                    else:  # unchanged by a scale (t_z), or no map: its own copies
                        r = np.repeat(_below(full, null, STATISTICS[base].direction, thr,
                                             own=True)[:, None], np.size(ii), axis=1)
                    hit = r if hit is None else hit | r
                return hit

            kf = first_hit(rejected, grid.size, step=16, quasi_convex=False, monotone=True)
            per.append(float(grid[kf]) if kf >= 0 else np.nan)
        out.append(per)
    return _widest(out[0], True), _widest(out[1], False)
