r"""The papers' decision on ζ-scores, kept beside the verdicts as ``zeta_verdict``.

The verdicts of :func:`uqx.validate` are Monte-Carlo tests over a family of generative
distributions (:mod:`uqx.engine.mctest`), whose false-rejection rates and powers are measured by
the ``error-rates`` study. This module keeps the decision of paper 000's workflow (Fig. 1)
on the ζ-scores, extended so that it never rests on an unsound interval, for comparison
and for the paper reproductions (``zeta_verdict`` in a result):

1. **Unsound interval.** A bootstrap interval that is NaN or excludes its own estimate
   (typical of binned statistics of well-calibrated data, 000 App. A: ENCE of M = 5000
   calibrated points, estimate 0.0295, BCa [0.0194, 0.0281]) makes every ζ built on it
   meaningless. Decision: ``inconclusive``.
2. **Predefined reference** (ZMS → 1, RCE → 0, ...): ``valid`` iff |ζ_BS| ≤ 1 (000 Eq. 20).
3. **Simulated references** (CC, ENCE, ZMSE, ZVE, ...): ζ_Sim for every generative
   distribution D (default N(0,1) and t_s(6)); ``valid`` when every |ζ| ≤ 1, ``invalid``
   when every |ζ| > 1 *with the same sign*, ``inconclusive`` otherwise, and the decision
   must agree with the Monte-Carlo null test ζ_Sim2 (:func:`simulated_verdict`).
4. Statistics that do not involve the errors (MV, RMV, NLL_ref) are ``not tested``.

Measured on calibrated synthetic data this decision is inconclusive for most sets on the
binned statistics and rejects heavy-tailed calibrated sets far more often than 5 % (the
"before" rates of the ``error-rates`` study), which is why it no longer decides.
:func:`limit_se` and :func:`zeta_se` give the Monte-Carlo noise of a ζ-score.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "VERDICTS",
    "interval_problem",
    "zeta_verdict",
    "agreement_verdict",
    "simulated_verdict",
    "ZETA_INPUTS",
    "papers_verdict",
    "limit_se",
    "zeta_se",
]

VERDICTS = ("valid", "invalid", "inconclusive", "not tested", "diagnostic")


def interval_problem(estimate, ci_low, ci_high) -> str:
    """Return why a bootstrap interval is unsound for a verdict ('' when it is sound).

    Parameters
    ----------
    estimate, ci_low, ci_high : float
        The estimate and its bootstrap interval.

    Returns
    -------
    str
        The reason, or ``''``.
    """
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return (
            "bootstrap interval is NaN (all replicates on one side of the estimate, or a "
            "constant jackknife): no sound interval to compare with a reference"
        )
    if not ci_low <= estimate <= ci_high:
        return (
            "bootstrap interval excludes its own estimate (large bootstrap bias, typical of "
            "binned statistics of well-calibrated data, 000 App. A): the interval is "
            "unreliable"
        )
    return ""


def zeta_verdict(zeta) -> str:
    """Verdict of one ζ-score against a predefined reference: |ζ| ≤ 1 → valid."""
    if not np.isfinite(zeta):
        return "inconclusive"
    return "valid" if abs(zeta) <= 1 else "invalid"


def agreement_verdict(zetas, labels) -> tuple[str, str]:
    """Verdict from ζ-scores against several references (one per generative distribution).

    Parameters
    ----------
    zetas : sequence of float
        ζ-scores, one per reference.
    labels : sequence of str
        Names of the references (generative distributions), for the reason.

    Returns
    -------
    verdict, reason : str
        ``valid`` if every |ζ| ≤ 1; ``invalid`` if every |ζ| > 1 with the same sign;
        else ``inconclusive`` with the reason.
    """
    z = np.asarray(zetas, dtype=np.float64)
    if z.size == 0 or not np.isfinite(z).all():
        return "inconclusive", "a simulated-reference ζ-score is not finite"
    inside = np.abs(z) <= 1
    if inside.all():
        return "valid", ""
    if not inside.any() and (np.all(z > 0) or np.all(z < 0)):
        return "invalid", ""
    parts = ", ".join(f"ζ_{lab} = {v:.2f}" for lab, v in zip(labels, z, strict=True))
    if not inside.any():
        why = "rejected by the references from opposite sides"
    else:
        why = "accepted by one reference and rejected by another"
    return "inconclusive", f"{why} ({parts}): the conclusion depends on D"


def simulated_verdict(zetas, zetas2, labels) -> tuple[str, str]:
    """Verdict against simulated references: ζ_Sim agreement, checked by the null test.

    :func:`agreement_verdict` on the ζ_Sim of every distribution decides; the verdict
    stands only if the Monte-Carlo null test agrees: ``invalid`` needs the estimate to be
    outside the central 95 % of the simulated calibrated values (|ζ_Sim2| > 1, same side)
    under every D, ``valid`` needs it inside under at least one D. Otherwise the bootstrap
    interval and the null distribution contradict each other, which happens to binned
    statistics near calibration (absolute values of noise: the bootstrap of |x| at 0 is
    inconsistent; on 2·10^6 calibrated points ENCE's BCa interval contains its estimate
    yet both ζ_Sim < −1 while the estimate is well inside the calibrated range), and the
    verdict is ``inconclusive``. ζ_Sim2 alone never decides (000 Sect. II D).

    Parameters
    ----------
    zetas, zetas2 : sequence of float
        ζ_Sim and ζ_Sim2, one per generative distribution.
    labels : sequence of str
        Names of the distributions, for the reason.
    """
    v, why = agreement_verdict(zetas, labels)
    z2 = np.asarray(zetas2, dtype=np.float64)
    if v == "invalid" and np.isfinite(z2).all():
        z = np.asarray(zetas, dtype=np.float64)
        out_same_side = np.all(np.abs(z2) > 1) and np.all(np.sign(z2) == np.sign(z[0]))
        if not out_same_side:
            inside = [lab for lab, q in zip(labels, z2, strict=True) if abs(q) <= 1]
            return "inconclusive", (
                "rejected by the bootstrap interval, but the estimate lies within the range "
                f"of calibrated data simulated under {', '.join(inside) or 'some D'} "
                "(the bootstrap interval of a binned statistic near calibration is "
                "unreliable, 000 App. A)")
    if v == "valid" and np.isfinite(z2).all() and np.all(np.abs(z2) > 1) and (
            np.all(z2 > 0) or np.all(z2 < 0)):
        return "inconclusive", (
            "the references lie in the bootstrap interval, but the estimate is outside the "
            "range of calibrated data simulated under every D")
    return v, why



#: The values of one statistic that :func:`papers_verdict` reads (the result's variables
#: of these names at one set and statistic).
ZETA_INPUTS = ("reference_kind", "estimate", "ci_low", "ci_high", "ci_low_se", "ci_high_se",
               "zeta", "reference", "zeta_sim", "zeta_sim2", "sim_reference",
               "sim_reference_se")


def papers_verdict(cell, labels) -> tuple[str, bool]:
    """Return the papers' decision of one statistic (steps 1-3 of this module) and if it can flip.

    Parameters
    ----------
    cell : mapping
        The statistic's values of :data:`ZETA_INPUTS` (``reference_kind`` '': no reference,
        ``not tested``).
    labels : sequence of str
        The generative distributions of the simulated references.

    Returns
    -------
    verdict : str
    borderline : bool
        Whether the verdict is ``valid`` or ``invalid`` with some abs(ζ) within two
        Monte-Carlo sd of 1 (:func:`zeta_se`, the reference's own sd included): more
        copies or replicates could flip it.
    """
    kind = str(cell["reference_kind"])
    if not kind:
        return "not tested", False
    if interval_problem(cell["estimate"], cell["ci_low"], cell["ci_high"]):
        return "inconclusive", False
    sim = not kind.startswith("predefined")
    if sim:
        verdict = simulated_verdict(cell["zeta_sim"], cell["zeta_sim2"], labels)[0]
    else:
        verdict = zeta_verdict(float(cell["zeta"]))
    if verdict not in ("valid", "invalid"):
        return verdict, False
    zetas, refs = (np.atleast_1d(cell[k]) for k in
                   (("zeta_sim", "sim_reference") if sim else ("zeta", "reference")))
    rse = np.asarray(cell["sim_reference_se"]) if sim else np.zeros(1)
    sz = zeta_se(cell["estimate"], refs, cell["ci_low"], cell["ci_high"], cell["ci_low_se"],
                 cell["ci_high_se"], target_u=2 * rse, reference_se=rse)
    with np.errstate(invalid="ignore"):
        return verdict, bool(np.any(np.abs(np.abs(zetas) - 1) < 2 * sz))

def limit_se(T, alpha) -> np.ndarray:
    r"""Monte-Carlo standard error of the bootstrap quantile of T at level ``alpha``.

    .. math:: \mathrm{se} \approx \tfrac12\left[q(\alpha + \delta) - q(\alpha - \delta)
              \right], \quad \delta = \sqrt{\alpha(1-\alpha)/R}

    (the order statistics that bracket a sample quantile with ±1 binomial sd).

    Parameters
    ----------
    T : array_like, shape (R, K)
        Bootstrap distributions (NaN ignored).
    alpha : array_like, shape (K,)
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (T.shape[1],))
    out = np.full(T.shape[1], np.nan)
    for k in range(T.shape[1]):
        col = T[:, k][np.isfinite(T[:, k])]
        a = alpha[k]
        if col.size < 10 or not 0 < a < 1:
            continue
        d = np.sqrt(a * (1 - a) / col.size)
        lo, hi = np.quantile(col, [max(a - d, 0.0), min(a + d, 1.0)], method="linear")
        out[k] = 0.5 * (hi - lo)
    return out


def zeta_se(estimate, reference, ci_low, ci_high, se_low, se_high, *, target_u=0.0,
            reference_se=0.0):
    r"""First-order Monte-Carlo standard deviation of a ζ-score (000 Eq. 20).

    With :math:`\delta = \theta - \theta_{ref}`, :math:`w = \sqrt{(\theta - \ell)^2 +
    U_t^2}` and :math:`\ell` the interval limit on the reference's side,

    .. math:: \sigma_\zeta^2 = \left(\frac{\delta(\theta - \ell)}{w^3}\right)^2
              \mathrm{se}(\ell)^2 + \frac{u(\theta_{ref})^2}{w^2}
    """
    est = np.asarray(estimate, dtype=np.float64)
    d = est - np.asarray(reference, dtype=np.float64)
    lim = np.where(d >= 0, ci_low, ci_high)
    se_lim = np.where(d >= 0, se_low, se_high)
    w = np.sqrt((est - lim) ** 2 + np.asarray(target_u, dtype=np.float64) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        s1 = d * (est - lim) / w**3 * se_lim
        s2 = np.asarray(reference_se, dtype=np.float64) / w
    return np.sqrt(s1**2 + s2**2)
