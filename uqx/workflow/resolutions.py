r"""The resolution of every test that can say ``valid``, read where ``valid`` is decided.

The smallest miscalibration of a named kind (:mod:`uqx.engine.alternative`) that the
same procedure finds 80 % of the time, under the least powerful member that takes part.
The rule in words: docs/verdicts.md ("Resolutions").
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.schema import VALIDATE
from uqx.engine.questions import NODES, QUESTIONS, question_of
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

__all__ = ["resolution_step", "unresolved_step", "NO_RESOLUTION"]

_NAN2 = (np.nan, np.nan)


def _widest(values, low):
    """Return the least powerful member's resolution: the smallest (``low``) or largest."""
    v = np.asarray(values, dtype=np.float64)
    if not v.size or not np.isfinite(v).all():
        return np.nan
    return float(np.min(v) if low else np.max(v))


def resolution_step(shape, specs, draws, top, decided, *, M) -> xr.Dataset:
    """State the resolution of every node and question, at the threshold that decides it.

    ``draws`` (set, stat, member, n): the tests' copies; ``top``
    (:class:`uqx.engine.alternative.BinnedCopies` or None): the binned statistics' copies
    up to a factor and under the alternatives; ``decided``: ``{set: (NodeTests,
    SetDecision)}``, the node tests and their decision
    (:func:`uqx.workflow.decision.question_step`), whose thresholds are read here;
    ``M``: points per set; ``shape`` (:class:`~uqx.workflow.products.ErrorShape`): the
    members and the tails (beyond the safety limit, only the data member). Returns
    ``resolution_*`` (set, stat) of each node's statistic and ``question_resolution_*``
    (set, question): the factors (biases) below and above 1 and the spread's exponents;
    NaN for none, a diagnostic, or beyond the grid.
    """
    S = len(shape.kappa_local)
    lim, spr = np.full((2, S, len(specs), 2), np.nan)
    qlim, qspr = np.full((2, S, len(QUESTIONS), 2), np.nan)
    data = np.array(shape.labels) == "data"
    kappa = np.asarray(shape.kappa_local)
    # beyond the safety limit on the tails, only the data's own z-scores count
    data_only = (kappa > SAFETY_LIMITS["kappa_cs_z2"]) & data.any()
    for i, (t, dec) in decided.items():
        for k in t.present():
            node, j = NODES[k], int(t.stat[k])
            used = np.flatnonzero(t.use[k] & (data | ~data_only[i]))
            thr = {m: float(dec.threshold[k, m]) for m in used}
            if not used.size or not all(np.isfinite(c) and c > 0 for c in thr.values()):
                continue
            if node.cond is None:  # scale, bias, ranking
                r = _statistic_resolution(specs[j], draws[i, j], used, thr, top, i,
                                          int(np.asarray(M)[i]))
            else:
                r = _binned_resolution(node, specs, t, k, draws, used, thr, top, i)
            if node.name != "up_to_factor":  # its statistic is the rescaled one
                lim[i, j], spr[i, j] = r
            if node.name != "bias":  # average calibration reads the scale
                a = QUESTIONS.index(node.question)
                qlim[i, a], qspr[i, a] = r
    return xr.Dataset(VALIDATE.data_vars({
        "resolution_low": lim[..., 0], "resolution_high": lim[..., 1],
        "resolution_spread_low": spr[..., 0], "resolution_spread_high": spr[..., 1],
        "question_resolution_low": qlim[..., 0], "question_resolution_high": qlim[..., 1],
        "question_resolution_spread_low": qspr[..., 0],
        "question_resolution_spread_high": qspr[..., 1],
    }))


def _statistic_resolution(s, draws, used, crit, top, i, M):
    """(low, high), (spread low, spread high) of a moment or rank node over its members."""
    if s.base == "cc":  # uE varying too much (gamma < 1) lowers the rank correlation
        held = [None if top is None else top.cc_spread(i, m) for m in used]
        if any(h is None for h in held):
            return _NAN2, _NAN2
        g = [alternative_resolution(draws[m, :h[0].shape[0]], h[0], h[1], direction=-1,
                                    alpha=crit[m], quasi_convex=False)
             for m, h in zip(used, held, strict=True)]
        return _NAN2, (_widest(g, True), np.nan)
    null = draws[used]
    if s.base == "mean_z":  # the test reads t_Z: a bias b (in sd of Z) moves it by b sqrt(M)
        null = np.asarray(null, dtype=np.float64) / np.sqrt(M)
    lims = np.array([scale_resolution(s.base, c, alpha=crit[m])
                     for m, c in zip(used, null, strict=True)])
    return (_widest(lims[:, 0], True), _widest(lims[:, 1], False)), _NAN2


def _binned_resolution(node, specs, t, k, draws, used, thr, top, i):
    """(low, high), (spread low, spread high) of a binned node over its members.

    The node's statistic under the alternatives of its variable (the top decile; on uE
    also the spread), each copy rescaled by its own √ZMS for ``up_to_factor``.
    """
    j, cond = int(t.stat[k]), node.cond
    scale_free = node.name == "up_to_factor"
    if top is None or not top.available(i, j, cond):
        return _NAN2, _NAN2
    d = STATISTICS[specs[j].base].direction
    highs, lows, ups = [], [], []
    for m in used:
        null = top.null(i, j, m, scale_free=True) if scale_free else \
            draws[i, j, m, :top.n_copies]
        null = np.sort(np.asarray(null, dtype=np.float64))
        null = null[np.isfinite(null)]
        highs.append(_first_found(top.factors, top.values(i, j, m, cond=cond,
                                                          scale_free=scale_free),
                                  null, d, thr[m], TOP_STEP))
        for grid, out in ((SPREAD_DOWN, lows), (SPREAD_UP, ups)) if cond == "uE" else ():
            def at(idx, grid=grid, m=m):
                return top.spread(i, j, m, grid[np.atleast_1d(idx)], scale_free=scale_free)
            out.append(_first_found(grid, at, null, d, thr[m], SPREAD_STEP))
    spread = (_widest(lows, True), _widest(ups, False)) if cond == "uE" else _NAN2
    return (np.nan, _widest(highs, False)), spread


def _first_found(grid, alternative, null, direction, threshold, step) -> float:
    """First value of ``grid`` whose alternative copies the test finds 80 % of the time.

    ``alternative(idx)``: the copies (n, len(idx)) at those indices of the grid, found
    where their p-value against ``null`` (sorted and finite; the p-value of
    :func:`uqx.engine.mctest.mc_pvalue`) is below ``threshold``.
    """
    n = null.size

    def hit(idx):
        alt = np.asarray(alternative(idx), dtype=np.float64)
        up = (1 + n - np.searchsorted(null, alt, side="left")) / (1 + n)
        down = (1 + np.searchsorted(null, alt, side="right")) / (1 + n)
        p = {1: up, -1: down}.get(direction)
        if p is None:  # two-sided: doubled
            p = np.minimum(1.0, 2 * np.minimum(up, down))
        return np.isfinite(alt) & (p < threshold)

    kf = first_hit(hit, grid.size, step=step, quasi_convex=False, monotone=True)
    return float(grid[kf]) if kf >= 0 else np.nan


#: Why a ``valid`` without a resolution reads ``inconclusive``.
NO_RESOLUTION = ("not rejected, but no resolution within reach at this M: even the largest "
                 "miscalibration searched could go unseen, so `valid` would claim nothing "
                 "(more points would give one)")


def unresolved_step(decision: xr.Dataset, resolved: xr.Dataset, stats) -> xr.Dataset:
    """Make a ``valid`` state its resolution or read ``inconclusive`` (:data:`NO_RESOLUTION`).

    Applied to each question of ``decision`` (:func:`uqx.workflow.decision.question_step`)
    with its ``question_resolution_*`` of ``resolved`` (:func:`resolution_step`) and to
    the statistic of each of its nodes (the rescaled one of ``up_to_factor`` in
    ``factor_verdict``); ``stats``: the statistics' names. Returns the verdicts: those of
    ``decision`` where a resolution is stated.
    """
    questions = [str(x) for x in decision["question"].values]
    lo, hi, s_lo, s_hi = (np.isfinite(resolved[f"question_resolution_{k}"].values)
                          for k in ("low", "high", "spread_low", "spread_high"))
    kind = np.array(questions)  # average states a factor, ranking a spread, the others either
    resolved_q = np.where(kind == "average", lo | hi,
                          np.where(kind == "ranking", s_lo, hi | s_lo | s_hi))
    unresolved = (decision["question_verdict"].values == "valid") & ~resolved_q
    # each statistic follows its question; the rescaled ones, "up to a factor"
    of_stat = [question_of(s.family, s.cond) for s in map(parse_stat, stats)]
    never = np.zeros(len(unresolved), dtype=bool)
    stat_open = np.stack([unresolved[:, questions.index(q)] if q in questions else never
                          for q in of_stat], axis=1)
    masks = {"question_verdict": unresolved,
             "verdict": (decision["verdict"].values == "valid") & stat_open,
             "factor_verdict": (decision["factor_verdict"].values == "valid")
             & unresolved[:, [questions.index("up_to_factor")]]}
    out = decision.copy()
    for var, mask in masks.items():
        reason = "question_reason" if var == "question_verdict" else var + "_reason"
        for name, new in ((var, "inconclusive"), (reason, NO_RESOLUTION)):
            v = decision[name]
            out[name] = (v.dims, np.where(mask, new, v.values), v.attrs)
    v = decision["valid"]
    out["valid"] = (v.dims, np.where(masks["verdict"], np.nan, v.values), v.attrs)
    return out
