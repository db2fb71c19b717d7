"""What the steps of a validation hand each other: small frozen records, read by field.

A step of :data:`uqx.workflow.validation.STEPS` writes its product to one field of the
run's record; later steps read the fields they declare, never the result Dataset, which
:func:`uqx.workflow.validation.finish_step` assembles once from the products
(:meth:`ErrorShape.variables` and the Datasets of the other steps).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from uqx.dataio.schema import VALIDATE

__all__ = ["ErrorShape"]


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
