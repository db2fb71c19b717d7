r"""Does one number fix the uncertainties? The scale factor √ZMS and the rescaled uE.

When average calibration fails, the first question of a user is whether the model's
uncertainties are wrong by a single factor (then ``uE × f`` is the fix) or in their shape
(then no factor helps). :func:`recalibration_step` answers it for every set whose ZMS is
among the statistics:

* the **scale factor** :math:`f = \sqrt{\mathrm{ZMS}}`, the factor that gives the
  rescaled :math:`u_E' = f\,u_E` a ZMS of exactly 1 (ZMS :math:`\to` ZMS/:math:`f^2`),
  with the square roots of ZMS's BCa limits as its interval (BCa percentiles follow a
  monotone transformation; the acceleration is ZMS's own);
* where ZMS is ``invalid``, the **consistency of the rescaled uE**: the consistency
  headline of :func:`uqx.validate` (its routes: the binned statistics on uE and the
  zero-bin intercepts on uE, the same copies, members and rules) run on
  :math:`(E, f\,u_E)`. ``valid`` reads "consistent up to a factor f [lo, hi]": one
  number fixes the uncertainties at the resolution that headline states; ``invalid``:
  the uncertainties are wrong in shape too, a factor does not fix them.

With a **tolerance** T (``validate(decision=Decision(tolerance=T))``,
:func:`tolerance_step`), the factor also carries an equivalence claim:
``scale_within_tolerance`` is 1 where the data show f inside
:math:`[1/(1+T), 1+T]` ("the average scale of uE right within T", whatever the verdict:
a claim on the average only, consistency is its own question), 0 where
they do not. It is a two one-sided test (Schuirmann's TOST) against the same null family
as the verdicts: ZMS of uE off by a factor f is f² times ZMS of calibrated data, so the
calibrated copies of each member scaled by :math:`(1+T)^{\pm 2}` are copies of the two
edges, and the claim needs every member that takes part to reject both edges at the
level of the verdicts. Its rates are measured (the documentation page).

The factor is estimated from the same rows that are then tested, and the rescaled data
have a ZMS of exactly 1 while their calibrated copies scatter around it, so this test
of the rescaled uE rejects less often than its level on data that a factor does fix
(conservative; measured: the documentation page "How to read the verdicts").
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.schema import VALIDATE
from uqx.engine.binning import is_nondecreasing, stable_order
from uqx.engine.confidence import EstimateInterval
from uqx.engine.defaults import LONG_SET_ROWS
from uqx.engine.mctest import copy_pvalues, mc_pvalue
from uqx.engine.questions import QUESTIONS
from uqx.engine.statistic import STATISTICS, bin_feature_sums, scale_free_bin_sums

__all__ = ["recalibration_step", "scale_factor", "scale_factor_interval", "factor_tests",
           "RESCALED_VARS", "tolerance_step"]

#: Variables (over ``set``) that :func:`recalibration_step` adds to a result.
RESCALED_VARS = ("scale_factor", "scale_factor_low", "scale_factor_high",
                 "rescaled_consistency", "rescaled_consistency_reason",
                 "rescaled_consistency_resolution", "rescaled_consistency_spread_low",
                 "rescaled_consistency_spread_high")


def scale_factor(res: xr.Dataset):
    r"""Return the factor :math:`f = \sqrt{\mathrm{ZMS}}` of each set and its interval.

    Parameters
    ----------
    res : xarray.Dataset
        A :func:`uqx.validate` result with ``zms`` among its statistics.

    Returns
    -------
    f, low, high : numpy.ndarray, shape (set,)
        :math:`\sqrt{\mathrm{ZMS}}` and the square roots of the BCa limits of ZMS
        (``ci_low``, ``ci_high``); NaN where ZMS is not finite.
    """
    z = res.sel(stat="zms")
    with np.errstate(invalid="ignore"):
        return tuple(np.sqrt(np.asarray(z[k].values, dtype=np.float64))
                     for k in ("estimate", "ci_low", "ci_high"))


def tolerance_step(estimate, shape, specs, copies, tolerance: float, *, alpha: float,
                   more_copies=None) -> xr.Dataset:
    r"""Equivalence claim on the scale of uE: f = √ZMS within :math:`[1/(1+T), 1+T]`.

    Two one-sided Monte-Carlo tests per member m (Schuirmann's TOST): with
    :math:`\tilde Z_k` the member's calibrated copies of ZMS, uE off by a factor f makes
    them :math:`f^2 \tilde Z_k`, so

    .. math:: p_{hi} = \frac{1 + \#\{(1+T)^2 \tilde Z_k \le \mathrm{ZMS}\}}{1 + n},
              \qquad
              p_{lo} = \frac{1 + \#\{(1+T)^{-2} \tilde Z_k \ge \mathrm{ZMS}\}}{1 + n}

    test the edges f = 1 + T and f = 1/(1 + T) (:func:`uqx.engine.mctest.mc_pvalue`).
    The claim holds (1) when :math:`\max(p_{hi}, p_{lo}) < \alpha` under every member
    that takes part (and on ``more_copies`` too: the fitted member's copies at ν̂
    besides those at the heavy end), else 0; NaN without finite copies.

    Parameters
    ----------
    estimate : numpy.ndarray, shape (set, stat)
        The statistics' estimates (ZMS's among them).
    shape : ErrorShape
        The members taking part (:class:`uqx.workflow.products.ErrorShape`).
    specs : list of StatSpec
    copies : numpy.ndarray, shape (set, stat, member, n)
        The statistics' calibrated copies (those of the verdicts).
    tolerance : float
        T > 0.
    alpha : float
        Level of each one-sided test (that of the verdicts).
    more_copies : numpy.ndarray, optional
        Other copies of the same shape, also required to reject.

    Returns
    -------
    xarray.Dataset
        ``scale_within_tolerance`` and ``scale_tolerance_p_value`` (the largest p) over set.
    """
    j = [s.name for s in specs].index("zms")
    est = np.asarray(estimate[:, j], dtype=np.float64)
    use = shape.members()
    t2 = (1.0 + float(tolerance)) ** 2
    S = est.size
    p = np.full(S, np.nan)
    for i in range(S):
        pools = [copies[i, j, m] for m in np.flatnonzero(use[i])]
        if more_copies is not None:
            pools += [more_copies[i, j, m] for m in np.flatnonzero(use[i])]
        ps = [max(mc_pvalue(est[i], t2 * c, -1), mc_pvalue(est[i], c / t2, 1))
              for c in pools if np.isfinite(c).any()]
        if ps and np.isfinite(est[i]):
            p[i] = max(ps)
    within = np.where(np.isfinite(p), (p < alpha).astype(np.float64), np.nan)
    return xr.Dataset(VALIDATE.data_vars(
        {"scale_within_tolerance": within, "scale_tolerance_p_value": p},
        tolerance=float(tolerance), alpha=float(alpha)))


def factor_tests(n_members: int, sets, specs, top) -> tuple[dict, np.ndarray]:
    r"""Return the tests of "consistent up to a factor": the binned statistics on uE of E/√ZMS.

    For each binned statistic on uE, its value on the data rescaled by the set's own
    factor (:func:`uqx.engine.statistic.scale_free_bin_sums`) against the same
    statistic on each calibrated copy rescaled by *its* own factor
    (:meth:`uqx.engine.alternative.BinnedCopies.null` with ``scale_free``): the copies
    are copies of the rescaled data whatever the scale of uE, so the test has its size
    on data that one factor fixes (the copies are not those of data with a ZMS of
    exactly 1, which would make it conservative). These tests form the question
    ``up_to_factor`` (:mod:`uqx.engine.questions`).

    Parameters
    ----------
    n_members : int
        The members of the null family.
    sets : list of SetData
        The sets in the workflow's order.
    specs : list of StatSpec
    top : uqx.engine.alternative.BinnedCopies or None
        The copies' per-bin sums.

    Returns
    -------
    tests : dict
        ``{set: {stat index: (p (member,), copy p-values (member, n))}}``.
    observed : numpy.ndarray, shape (set, stat)
        The statistics of the rescaled data (NaN elsewhere).
    """
    S, K = len(sets), len(specs)
    observed = np.full((S, K), np.nan)
    tests = {}
    on_ue = [j for j, s in enumerate(specs)
             if s.family == "binned" and s.cond == "uE" and not s.vector]
    if top is None or not on_ue or "zms" not in [s.name for s in specs]:
        return tests, observed
    D = int(n_members)
    for i, sd in enumerate(sets):
        js = [j for j in on_ue if top.available(i, j)]
        if not js or sd.M > LONG_SET_ROWS:
            continue
        lay = next((top._sets[(i, m, "uE")] for m in range(D) if (i, m, "uE") in top._sets),
                   None)
        if lay is None:
            continue
        n = np.asarray(lay[2], dtype=np.float64)
        edges = np.r_[0, np.cumsum(n)].astype(np.int64)
        if is_nondecreasing(sd.uE):
            e, u = sd.E, sd.uE
        else:
            o = stable_order(sd.uE)
            e, u = sd.E[o], sd.uE[o]
        Sd = scale_free_bin_sums(bin_feature_sums(e, u, edges), n)
        tests[i] = {}
        for j in js:
            base = specs[j].base
            observed[i, j] = float(STATISTICS[base].finish(Sd, n)[0])
            nulls = np.stack([top.null(i, j, m, scale_free=True) for m in range(D)])
            d = STATISTICS[base].direction
            p = np.array([mc_pvalue(observed[i, j], nulls[m], d) for m in range(D)])
            tests[i][j] = (p, np.stack([copy_pvalues(nulls[m], d) for m in range(D)]))
    return tests, observed


def scale_factor_interval(estimate, shape, specs, copies, *, level: float, joint=None):
    r"""Return the factor :math:`f = \sqrt{\mathrm{ZMS}}` and the interval the test keeps.

    The interval inverts the verdict's own test of ZMS: f is kept when the data's
    :math:`\mathrm{ZMS}/f^2` lies between the :math:`(1 \mp \mathrm{level})/2`
    quantiles of the calibrated copies of ZMS under some member of the null family that
    takes part (uE off by f makes calibrated copies f² times larger). Its coverage is
    that of the member whose shape is the data's, and it holds the factor 1 exactly when
    ZMS is not ``invalid`` under every member; it replaces the square roots of ZMS's BCa
    limits, which under-cover with heavy tails.

    Parameters
    ----------
    estimate : numpy.ndarray, shape (set, stat)
        The statistics' estimates (ZMS's among them).
    shape : ErrorShape
        The members and those taking part (:class:`uqx.workflow.products.ErrorShape`).
    specs : list of StatSpec
    copies : numpy.ndarray, shape (set, stat, member, n)
        The copies of the tests.
    level : float
        Confidence level.
    joint : numpy.ndarray, optional
        The fitted member's copies at ν̂ (its upper side), as for the test.

    Returns
    -------
    f, low, high : numpy.ndarray, shape (set,)
    """
    j = [s.name for s in specs].index("zms")
    est = np.asarray(estimate[:, j], dtype=np.float64)
    use = shape.members()
    labels = list(shape.labels)
    fit = labels.index("fit") if "fit" in labels and joint is not None else None
    a = (1 - level) / 2
    S = est.size
    lo, hi = np.full(S, np.nan), np.full(S, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        f = np.sqrt(est)
        for i in range(S):
            if not (np.isfinite(est[i]) and est[i] > 0):
                continue
            lows, highs = [], []
            for m in np.flatnonzero(use[i]):
                c = copies[i, j, m]
                c = c[np.isfinite(c)]
                if not c.size:
                    continue
                q_lo = np.quantile(c, a)  # the light side: heavy copies for the fit
                up = c if m != fit else joint[i, j, m][np.isfinite(joint[i, j, m])]
                q_hi = np.quantile(up, 1 - a) if up.size else np.nan
                lows.append(np.sqrt(est[i] / q_hi))
                highs.append(np.sqrt(est[i] / q_lo))
            if lows:
                lo[i], hi[i] = np.nanmin(lows), np.nanmax(highs)
    return EstimateInterval(f, lo, hi)


def recalibration_step(estimate, shape, verdicts, resolved, specs, copies, *, level: float,
                       joint=None) -> dict:
    """Give the scale factor, its interval and whether uE is consistent up to it.

    The factor and its interval: :func:`scale_factor_interval`. "Consistent up to the
    factor" is the verdict of the question ``up_to_factor`` (:func:`factor_tests`),
    asked where average calibration is rejected; where it is not, the reason says why.

    Parameters
    ----------
    estimate : numpy.ndarray, shape (set, stat)
        The statistics' estimates.
    shape : ErrorShape
        The members taking part (:class:`uqx.workflow.products.ErrorShape`).
    verdicts : xarray.Dataset
        The questions' verdicts and reasons (``question_verdict``, ``question_reason``).
    resolved : xarray.Dataset
        Their resolutions (``question_resolution_*``).
    specs : list of StatSpec
    copies : numpy.ndarray
        The copies of the tests (for the interval).
    level : float
    joint : numpy.ndarray, optional

    Returns
    -------
    dict
        The variables of :data:`RESCALED_VARS` (none when ZMS is not a statistic).
    """
    names = [s.name for s in specs]
    if "zms" not in names:
        return {}
    f, lo, hi = scale_factor_interval(estimate, shape, specs, copies, level=level,
                                      joint=joint)
    S = estimate.shape[0]
    verdict = np.full(S, "", dtype=object)
    reason = np.full(S, "", dtype=object)
    resolution = np.full(S, np.nan)
    spread = np.full((S, 2), np.nan)
    qv = verdicts["question_verdict"].sel(question="up_to_factor").values.astype(str)
    qr = verdicts["question_reason"].sel(question="up_to_factor").values.astype(str)
    av = verdicts["question_verdict"].sel(question="average").values.astype(str)
    a = QUESTIONS.index("up_to_factor")
    q_high, q_spread_low, q_spread_high = (resolved[f"question_resolution_{k}"].values[:, a]
                                           for k in ("high", "spread_low", "spread_high"))
    has_routes = any(s.family == "binned" and s.cond == "uE" and not s.vector for s in specs)
    for i in range(S):
        if av[i] == "valid":
            reason[i] = "average calibration valid: no factor needed"
        elif av[i] != "invalid":
            reason[i] = (f"average calibration {av[i]}: consistency up to a factor is asked "
                         "only where average calibration is invalid")
        elif not has_routes:
            reason[i] = "not tested: needs a binned statistic on uE"
        elif qv[i] in ("", "not tested"):
            reason[i] = qr[i] or "not tested"
        else:
            verdict[i], reason[i] = qv[i], qr[i]
            if verdict[i] == "valid":
                resolution[i] = float(q_high[i])
                spread[i] = (float(q_spread_low[i]), float(q_spread_high[i]))
    return VALIDATE.data_vars({
        "scale_factor": f, "scale_factor_low": lo, "scale_factor_high": hi,
        "rescaled_consistency": verdict.astype(str),
        "rescaled_consistency_reason": reason.astype(str),
        "rescaled_consistency_resolution": resolution,
        "rescaled_consistency_spread_low": spread[:, 0],
        "rescaled_consistency_spread_high": spread[:, 1],
    })
