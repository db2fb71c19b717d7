"""What the steps of a validation hand each other: small frozen records, read by field.

A step of :data:`uqx.workflow.steps.STEPS` writes its product to one field of the
run's record; later steps read the fields they declare, never the result Dataset, which
:func:`uqx.workflow.steps.finish_step` assembles once from the products
(:meth:`ErrorShape.variables` and the Datasets of the other steps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from uqx.dataio.schema import VALIDATE
from uqx.engine.null_shape import NU_MIN, tails_reach_limit, tails_within_reach
from uqx.engine.stats.tailedness import SAFETY_LIMITS

__all__ = ["ErrorShape", "tails_reason", "reads_halves", "TAILS_ROBUST", "U2_WEIGHTED"]


@dataclass(frozen=True)
class ErrorShape:
    r"""The errors' shape that the null family matches, per set (the shape step's product).

    Parameters
    ----------
    labels : tuple of str
        The members of the null family (``N``, ``T6``, ``fit``, ``data``).
    plausible : numpy.ndarray of bool, shape (set, member)
        The members whose shape the data allow: they take part in the verdicts.
    plausible_rank : numpy.ndarray of bool, shape (set, member), or None
        Those whose body of :math:`\ln|Z|` also fits, for CC's verdicts (None: no rank
        statistic, or the streamed route).
    spread_local : numpy.ndarray, shape (set,), or None
        The spread of :math:`\ln|Z|` within the bins of uE, beside ``plausible_rank``.
    kappa_local : numpy.ndarray, shape (set,)
        :math:`\kappa_{CS}` of Z² within the bins of uE.
    kappa_half, half_points : numpy.ndarray, shape (set, 2), or None
        The same in the lower and upper halves of the uE order, and their points (None on
        the streamed route).
    u2_effective_points : numpy.ndarray, shape (set,)
        :math:`(\sum u^2)^2 / \sum u^4`, the points of a statistic weighted by u².
    nu_fit, nu_two_sided, nu_local_min, nu_local_max : numpy.ndarray, shape (set,)
        The fitted member's ν̂, its ν on the light side of two-sided statistics, and the
        range of its ν over the windows of uE (NaN without windows).
    """

    labels: tuple
    plausible: np.ndarray
    plausible_rank: np.ndarray | None = None
    spread_local: np.ndarray | None = None
    kappa_local: np.ndarray | None = None
    kappa_half: np.ndarray | None = None
    half_points: np.ndarray | None = None
    u2_effective_points: np.ndarray | None = None
    nu_fit: np.ndarray | None = None
    nu_two_sided: np.ndarray | None = None
    nu_local_min: np.ndarray | None = None
    nu_local_max: np.ndarray | None = None

    def members(self, rank: bool = False) -> np.ndarray:
        """Members taking part in each set's verdicts, (set, member) bool.

        With ``rank`` (CC's verdicts), those whose body also fits, where known.
        """
        if rank and self.plausible_rank is not None:
            return np.asarray(self.plausible_rank, dtype=bool)
        return np.asarray(self.plausible, dtype=bool)

    def tails_reason(self, spec, i: int, M: int) -> str:
        """Why an ``invalid`` of statistic ``spec`` of set ``i`` cannot stand ('' when it can).

        :func:`tails_reason` of the set's κ_CS and ``M`` points, but none for
        :data:`TAILS_ROBUST`; where :func:`reads_halves`, each half of the uE order must
        also show its tails; :data:`U2_WEIGHTED` read the reach at the effective number of
        points of u². The decision holds a rejection with such a reason and writes
        ``inconclusive`` in its place (:func:`uqx.workflow.decision.question_step`).
        """
        base = spec.base
        if base in TAILS_ROBUST:
            return ""
        kappa = float(self.kappa_local[i])
        if kappa > SAFETY_LIMITS["kappa_cs_z2"]:  # that reason first, whatever the sample
            return tails_reason(kappa)
        halves = reads_halves(spec) and self.kappa_half is not None
        for h, half in enumerate(("lower", "upper") if halves else ()):
            n = int(self.half_points[i, h])
            why = "" if n < 2 else _reach_reason(
                float(self.kappa_half[i, h]), n,
                f"the {half} half of the uE order ({n} points)", half=True)
            if why:
                return why
        if base in U2_WEIGHTED:
            n_eff = float(self.u2_effective_points[i])
            if np.isfinite(n_eff) and n_eff < M:
                n = max(int(n_eff), 2)
                return _reach_reason(kappa, n, f"the {n} effective points of u^2 "
                                     f"({base.upper()} is weighted by u^2)")
        return tails_reason(kappa, M)

    def variables(self) -> dict:
        """Return the result's variables of the shape by name (``kappa_cs_z2_local``, ...)."""
        names = {"kappa_cs_z2_half": self.kappa_half, "half_points": self.half_points,
                 "u2_effective_points": self.u2_effective_points,
                 "kappa_cs_z2_local": self.kappa_local, "member_plausible": self.plausible,
                 "log_abs_z_spread_local": self.spread_local,
                 "member_plausible_rank": self.plausible_rank,
                 "nu_fit_local_min": self.nu_local_min, "nu_fit_local_max": self.nu_local_max,
                 "nu_fit": self.nu_fit, "nu_fit_two_sided": self.nu_two_sided}
        return {k: VALIDATE.variable(k, v) for k, v in names.items() if v is not None}


def _reach_reason(kappa, n, who, half=False) -> str:
    """Why ``who`` cannot show tails lighter than t_s(3)'s, the family's heaviest ('' if it can).

    A small sample of heavier-tailed errors that misses its extremes looks light.
    """
    if not np.isfinite(kappa) or tails_within_reach(kappa, n):
        return ""
    whose, where, what = (("its errors'", "there", "errors heavier-tailed for those uE")
                          if half else ("the errors'", "within the bins of uE", "heavier tails"))
    return (f"rejected, but {who} cannot show that {whose} tails are lighter than those of "
            f"t_s({NU_MIN:g}), the heaviest member of the null family (kappa_cs of Z^2 "
            f"{where} = {kappa:.3g}, not below {float(tails_reach_limit(n)):.3g}): {what} "
            "that the sample missed would give such a rejection on calibrated data")


def tails_reason(kappa, M=None) -> str:
    """Why an ``invalid`` cannot stand on errors this heavy-tailed ('' when it can).

    ``kappa``: κ_CS of the set's Z² within the bins of uE (``kappa_cs_z2_local``), beyond
    the safety limit of 001 Table II; with ``M`` points, also a sample too small to show
    tails lighter than the null family's heaviest (:func:`_reach_reason`).
    """
    limit = SAFETY_LIMITS["kappa_cs_z2"]
    if np.isfinite(kappa) and kappa > limit:
        return (f"rejected, but the errors' tails are beyond the safety limit (kappa_cs of "
                f"Z^2 within the bins of uE = {kappa:.3g} > {limit:g}, 001 Table II): the "
                "null family does not represent such tails, the rejection may come from them")
    return "" if M is None else _reach_reason(kappa, M, f"{int(M)} points")


#: Statistics whose test keeps its size whatever the tails (finite variance): the
#: studentised mean of Z (measured: t_s(2.5) errors, <= 1 % `invalid` at M = 200). CC is
#: not: its data member, each window of uE scaled to a unit mean square, moves the
#: windows' bodies apart when one holds an extreme.
TAILS_ROBUST = ("mean_z",)

#: Statistics weighted by u² (dominated by the largest uE): their small-sample reach is
#: read at the effective number of points of u², (Σu²)²/Σu⁴ (``u2_effective_points``).
U2_WEIGHTED = ("rce", "uce", "uce_w")


def reads_halves(spec) -> bool:
    """Whether a statistic's rejection also needs each half of the uE order to show its tails.

    The statistics binned on uE and CC (ranked on uE): a shape of the errors that changes
    with uE is not an inconsistency. One rule for passing a node's share on and for
    withdrawing an ``invalid`` (:meth:`ErrorShape.tails_reason`).
    """
    return spec.cond == "uE" and spec.family != "moment"
