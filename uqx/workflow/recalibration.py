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

With a **tolerance** T (``validate(tolerance=T)``, :func:`tolerance_step`), the factor also
carries an equivalence claim: ``scale_within_tolerance`` is 1 where the data show f inside
:math:`[1/(1+T), 1+T]` ("uE right within T on its scale", whatever the verdict), 0 where
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

from uqx.engine.defaults import LONG_SET_ROWS

__all__ = ["recalibration_step", "scale_factor", "recalibration_text", "RESCALED_VARS",
           "tolerance_step"]

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


def tolerance_step(res: xr.Dataset, specs, copies, tolerance: float, *, alpha: float,
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
    res : xarray.Dataset
        The result with ZMS's estimate and ``member_plausible``.
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
    from uqx.engine.mctest import mc_pvalue
    from uqx.workflow.decision import members_used

    j = [s.name for s in specs].index("zms")
    est = np.asarray(res["estimate"].values[:, j], dtype=np.float64)
    use = members_used(res, copies.shape[2])
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
    return xr.Dataset({
        "scale_within_tolerance": ("set", within, {
            "long_name": "1: uE right within the tolerance on its scale (f = sqrt(ZMS) "
                         "inside [1/(1+T), 1+T] by two one-sided Monte-Carlo tests under "
                         "every member), 0: not shown; NaN: no copies",
            "tolerance": float(tolerance), "alpha": float(alpha)}),
        "scale_tolerance_p_value": ("set", p, {
            "long_name": "largest p-value of the two one-sided tests of the edges, over "
                         "the members", "tolerance": float(tolerance)}),
    })


def recalibration_step(res: xr.Dataset, sets, specs, cfg, run) -> xr.Dataset:
    """Add the scale factor and the consistency verdict of the rescaled uE (module doc).

    Parameters
    ----------
    res : xarray.Dataset
        The result so far (verdicts final).
    sets : list of SetData
        The sets' arrays, in the order the workflow used (content order by default).
    specs : list of StatSpec
        The statistics of the result.
    cfg : uqx.workflow.settings.Settings
        The settings of the result: the rescaled run uses the same.
    run : callable
        ``run(ds, specs, cfg) -> xarray.Dataset``: the workflow of :func:`uqx.validate`
        (passed in, not imported: this step is one of its steps).

    Returns
    -------
    xarray.Dataset
        ``res`` with :data:`RESCALED_VARS` (unchanged when ZMS is not a statistic).
        ``rescaled_consistency`` is ``""`` where it was not run, and the reason says why.
    """
    names = [s.name for s in specs]
    if "zms" not in names:
        return res
    f, lo, hi = scale_factor(res)
    S = len(sets)
    verdict = np.full(S, "", dtype=object)
    reason = np.full(S, "", dtype=object)
    resolution = np.full(S, np.nan)
    spread = np.full((S, 2), np.nan)
    routes = [s for s in specs if s.family == "binned" and s.cond == "uE" and not s.vector]
    zms_verdict = np.asarray(res["verdict"].sel(stat="zms").values).astype(str)
    todo = []
    for i, sd in enumerate(sets):
        if zms_verdict[i] == "valid":
            reason[i] = "ZMS valid: no factor needed"
        elif zms_verdict[i] != "invalid":  # inconclusive, not tested: no claim either way
            reason[i] = (f"ZMS {zms_verdict[i]}: the rescaled uE are tested only where ZMS "
                         "is invalid")
        elif not (cfg.conditional and routes):
            reason[i] = ("not computed: needs the conditional routes and a binned "
                         "statistic on uE")
        elif sd.M > LONG_SET_ROWS:
            reason[i] = f"not computed for sets over {LONG_SET_ROWS} rows"
        elif not np.isfinite(f[i]) or f[i] <= 0:
            reason[i] = "not computed: ZMS not finite"
        else:
            todo.append(i)
    if todo:
        from uqx.dataio.model import from_arrays, stack

        rescaled = stack([from_arrays(sets[i].E, sets[i].uE * f[i], name=str(i))
                          for i in todo])
        sub = run(rescaled, routes, cfg)  # cfg.conditional holds here (checked above)
        head = sub.sel(cond="uE") if "cond" in sub.dims else None
        for k, i in enumerate(todo):
            if head is None or "cond_verdict" not in head:
                reason[i] = "no consistency route could be tested"
                continue
            h = head.isel(set=k)
            verdict[i] = str(h["cond_verdict"].item())
            reason[i] = str(h["cond_verdict_reason"].item()) if "cond_verdict_reason" in h \
                else ""
            if "cond_resolution" in h and verdict[i] != "invalid":
                resolution[i] = float(h["cond_resolution"])
                spread[i] = (float(h["cond_resolution_spread_low"]),
                             float(h["cond_resolution_spread_high"]))
    return res.assign({
        "scale_factor": ("set", f, {
            "long_name": "factor f = sqrt(ZMS): uE x f has a ZMS of exactly 1"}),
        "scale_factor_low": ("set", lo, {"long_name": "sqrt of the lower BCa limit of ZMS"}),
        "scale_factor_high": ("set", hi, {"long_name": "sqrt of the upper BCa limit of ZMS"}),
        "rescaled_consistency": ("set", verdict.astype(str), {
            "long_name": "consistency headline of (E, f uE) where ZMS is invalid ('': not "
                         "run): valid = consistent up to the factor f"}),
        "rescaled_consistency_reason": ("set", reason.astype(str)),
        "rescaled_consistency_resolution": ("set", resolution, {
            "long_name": "resolution of that headline: uE of the top 10 % too small by "
                         "this factor, detected with 80 % power"}),
        "rescaled_consistency_spread_low": ("set", spread[:, 0], {
            "long_name": "resolution of that headline under u = c*uE^gamma: the exponent "
                         "below 1 detected with 80 % power"}),
        "rescaled_consistency_spread_high": ("set", spread[:, 1], {
            "long_name": "the exponent above 1 detected with 80 % power"}),
    })


def recalibration_text(r) -> str:
    """Render the scale factor of one set and what the rescaled uE are, in one line.

    Parameters
    ----------
    r : xarray.Dataset
        A result with :data:`RESCALED_VARS`, selected on one ``set``.

    Returns
    -------
    str
        "consistent up to a factor f [lo, hi] …" where the rescaled uE are consistent,
        "not a factor alone …" where they are not, else the factor and why nothing more
        was tested.
    """
    out = _recalibration_text(r)
    if "scale_within_tolerance" in r:
        t = float(r["scale_within_tolerance"].attrs["tolerance"])
        w = float(r["scale_within_tolerance"])
        band = f"[{1 / (1 + t):.3g}, {1 + t:.3g}]"
        p = float(r["scale_tolerance_p_value"]) if "scale_tolerance_p_value" in r else np.nan
        if w == 1:
            out += (f"; within the tolerance: f inside {band} (uE right within "
                    f"{100 * t:.3g} % on its scale; TOST p {p:.3g})")
        elif w == 0:
            out += f"; not shown within the tolerance {band} (TOST p {p:.3g})"
    return out


def _recalibration_text(r) -> str:
    """Render the line of :func:`recalibration_text` without the tolerance."""
    f, lo, hi = (float(r[k]) for k in ("scale_factor", "scale_factor_low",
                                       "scale_factor_high"))
    fac = f"{f:.3g} [{lo:.3g}, {hi:.3g}]"
    v = str(r["rescaled_consistency"].item())
    why = str(r["rescaled_consistency_reason"].item())
    if v == "valid":
        from uqx.workflow.tables import resolution_text

        text = resolution_text("zmse", np.nan, float(r["rescaled_consistency_resolution"]),
                               (float(r["rescaled_consistency_spread_low"]),
                                float(r["rescaled_consistency_spread_high"]))
                               if "rescaled_consistency_spread_low" in r else None)
        tail = f" (resolution: {text})" if text else ""
        return f"consistent up to a factor {fac}: uE x {f:.3g} is consistent{tail}"
    if v == "invalid":
        return (f"not a factor alone: uE x {fac} is still inconsistent "
                f"({why})" if why else f"not a factor alone: uE x {fac} is still inconsistent")
    if v:
        return f"uE x {fac}: consistency of the rescaled uE {v} ({why})"
    return f"scale factor {fac}; {why}"
