r"""Monte-Carlo tests of calibration: p-values against simulated calibrated copies.

A verdict is a statistical test. uqx decides every tested statistic by the position of
its estimate among the same statistic computed on calibrated copies of the data,
:math:`E^{(k)} = u_E\,\epsilon^{(k)}` with the data's own uncertainties and binning
(consistency resampling, Bröcker & Smith 2007; the simulated critical values of T-Cal,
Lee et al. 2023). The Monte-Carlo p-value

.. math:: p = \frac{1 + \#\{k : d\,\tilde\theta_k \ge d\,\theta\}}{1 + n}

(:func:`mc_pvalue`) gives a test of exact size when the copies are drawn from the same
law as the data (exchangeable with it): true for the members whose law is the data's, and
only approximately for the others (a fitted member matches the tails, the resampled
z-scores are an estimate of the shape): the sizes are therefore measured, by the
``error-rates`` study, not assumed. The direction ``d`` says which side means
miscalibration (each statistic's ``direction`` in :data:`uqx.engine.statistic.STATISTICS`,
:data:`INTERCEPT_DIRECTION`): binned errors (ENCE, ZMSE, ZVE, UCE) and zero-bin
intercepts are too **large** when uncertainties are inconsistent, the rank correlation CC
is too **small**, and the average-calibration statistics (ZMS, RCE, ...) are wrong on
**both** sides.

The generative distribution of ε is a nuisance. The null is simulated under a family of
members (:data:`~uqx.engine.null_shape.MEMBERS`): the papers' N(0, 1) and
:math:`t_s(6)`, a :math:`t_s(\hat\nu)` matched to the tails of the data's Z² (one ν
per window of uE where the errors' shape changes with uE), and the
data's own z-scores resampled, which carry the data's realised extremes that no
quantile-matched distribution sees (:mod:`uqx.engine.null_shape` builds the last two).
The verdicts combine the nodes of a set and the members by :mod:`uqx.engine.questions`
(one graph of node tests, closed weighted min-p on the copies the statistics share, each
question also by itself; :func:`uqx.engine.questions.member_verdict`);
:func:`family_verdict` is the same rule over the members for one diagnostic p-value (the
zero-bin intercepts, which decide nothing).

Pure NumPy/SciPy kernels over the last axis (the copies); NaN copies are ignored.
"""

from __future__ import annotations

import numpy as np

from uqx.engine.defaults import N_TEST  # noqa: F401  (the copies a test reads)
from uqx.engine.null_shape import MEMBERS

__all__ = [
    "ALPHA",
    "INTERCEPT_DIRECTION",
    "mc_pvalue",
    "copy_pvalues",
    "N_TEST",
    "N_HEADLINE",
    "family_verdict",
    "smallest_pvalue",
    "pvalue_noise",
    "LIGHT_SIDE",
    "mc_pvalue_sides",
    "borderline",
]

#: Size of every test (two-sided statistics split it between the tails).
ALPHA = 0.05
#: Calibrated copies per member for the zero-bin extrapolation nulls: a sweep of 15 bin
#: numbers and a fit per copy.
N_HEADLINE = 500

#: Side of miscalibration of a zero-bin intercept (:mod:`uqx.inference.extrapolate`):
#: too large (+1; a statistic declares its own, ``STATISTICS[name].direction``).
INTERCEPT_DIRECTION = 1


def mc_pvalue(observed, null, direction: int = 0):
    r"""Monte-Carlo p-value of ``observed`` against calibrated copies ``null``.

    .. math:: p_{+} = \frac{1 + \#\{\tilde\theta_k \ge \theta\}}{1 + n}, \quad
              p_{-} = \frac{1 + \#\{\tilde\theta_k \le \theta\}}{1 + n}, \quad
              p_0 = \min(1, 2\min(p_+, p_-))

    Parameters
    ----------
    observed : array_like, shape (...)
        Statistic of the data.
    null : array_like, shape (..., n)
        The statistic on n calibrated copies (NaN ignored).
    direction : {1, -1, 0}
        Miscalibration makes the statistic larger (1), smaller (-1), either (0).

    Returns
    -------
    numpy.ndarray, shape (...)
        NaN where ``observed`` is NaN or no copy is finite.
    """
    obs = np.asarray(observed, dtype=np.float64)[..., None]
    null = np.asarray(null, dtype=np.float64)
    ok = np.isfinite(null)
    n = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        up = (1 + np.sum(ok & (null >= obs), axis=-1)) / (1 + n)
        down = (1 + np.sum(ok & (null <= obs), axis=-1)) / (1 + n)
        p = {1: up, -1: down}.get(direction)
        if p is None:
            p = np.minimum(1.0, 2 * np.minimum(up, down))
    return np.where(np.isfinite(obs[..., 0]) & (n > 0), p, np.nan)


def copy_pvalues(null, direction: int = 0):
    r"""P-value of every copy against all copies (itself included): the null of p.

    For copy k, :math:`p_{+,k} = \#\{j : \tilde\theta_j \ge \tilde\theta_k\} / n` (and
    the mirror for the other side), the same scale as :func:`mc_pvalue`. Ties share
    their count. NaN copies get NaN.

    Parameters
    ----------
    null : array_like, shape (..., n)
    direction : {1, -1, 0}

    Returns
    -------
    numpy.ndarray, shape (..., n)
    """
    null = np.asarray(null, dtype=np.float64)
    ok = np.isfinite(null)
    n = ok.sum(-1, keepdims=True)
    srt = np.sort(np.where(ok, null, np.inf), axis=-1)  # NaN last

    def count_le(x):
        return np.stack([np.searchsorted(s[: int(m)], v, side="right")
                         for s, v, m in zip(srt.reshape(-1, srt.shape[-1]),
                                            x.reshape(-1, x.shape[-1]),
                                            n.reshape(-1), strict=True)]).reshape(x.shape)

    def count_ge(x):
        return np.stack([int(m) - np.searchsorted(s[: int(m)], v, side="left")
                         for s, v, m in zip(srt.reshape(-1, srt.shape[-1]),
                                            x.reshape(-1, x.shape[-1]),
                                            n.reshape(-1), strict=True)]).reshape(x.shape)

    x = np.where(ok, null, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        up = count_ge(x) / n
        down = count_le(x) / n
        p = {1: up, -1: down}.get(direction)
        if p is None:
            p = np.minimum(1.0, 2 * np.minimum(up, down))
    return np.where(ok, p, np.nan)


#: Side on which a two-sided statistic of a sample that missed its rare extremes falls:
#: small ⟨Z²⟩, Var(Z) and NLL, large RCE (RMSE small against RMV). On that side its
#: fitted member's p-value uses the copies at the heavy end of ν
#: (:func:`~uqx.engine.null_shape.nu_heavy_bound`).
LIGHT_SIDE = {"zms": -1, "var_z": -1, "nll": -1, "rce": 1}


def mc_pvalue_sides(observed, null_up, null_down):
    r"""Two-sided Monte-Carlo p-value with each side read on its own copies.

    :math:`p = \min(1, 2\min(p_+, p_-))` with :math:`p_+` from ``null_up`` and
    :math:`p_-` from ``null_down`` (:func:`mc_pvalue`): the fitted member of a two-sided
    statistic reads the side of light samples (:data:`LIGHT_SIDE`) on copies at the heavy
    end of ν and the other side on copies at ν̂.

    Parameters
    ----------
    observed : float
    null_up, null_down : array_like, shape (n,)
        Copies for the upper and the lower side.
    """
    up = mc_pvalue(observed, null_up, 1)
    down = mc_pvalue(observed, null_down, -1)
    return np.minimum(1.0, 2 * np.minimum(up, down))


def pvalue_noise(p, n, alpha: float = ALPHA):
    """Monte-Carlo standard deviation of a p-value near ``alpha`` with ``n`` copies."""
    return np.sqrt(alpha * (1 - alpha) / np.maximum(np.asarray(n, dtype=np.float64), 1))


def borderline(pvalues, n, alpha: float = ALPHA, use=None) -> bool:
    """Whether a member's p-value lies within two Monte-Carlo sd of ``alpha``.

    Such a p-value does not count as a rejection in :func:`family_verdict` (a ``valid``
    may stand beside it) nor as an acceptance, and the verdict is marked
    ``(borderline)``: rerun with more copies before acting on it.

    Parameters
    ----------
    pvalues : array_like, shape (member,)
    n : int or array_like
        Copies behind the p-values (the fewest counts).
    alpha : float
    use : array_like of bool, optional
        The members that take part (all by default).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if use is not None:
        p = p[np.asarray(use, dtype=bool)]
    with np.errstate(invalid="ignore"):
        return bool(np.any(np.abs(p - alpha) < 2 * pvalue_noise(p, np.min(n), alpha)))


def smallest_pvalue(n, direction: int = 0):
    r"""Smallest p-value that ``n`` calibrated copies can give (:func:`mc_pvalue`).

    :math:`1/(1+n)` on one side, :math:`2/(1+n)` on both: a test whose smallest p-value is
    not below its size can never reject, and its acceptance says nothing.

    Parameters
    ----------
    n : int or array_like
        Number of finite copies.
    direction : {1, -1, 0}
        Side of the test (0: both sides).
    """
    return (1.0 if direction else 2.0) / (np.asarray(n, dtype=np.float64) + 1)


def family_verdict(pvalues, labels=MEMBERS, *, alpha: float = ALPHA, n_copies=None,
                   direction: int = 0, p_floor=None, use=None) -> tuple[str, str]:
    r"""Verdict of one test over the family of null members.

    The generative distribution of the errors is a nuisance: the test is run under every
    member of the family (:data:`~uqx.engine.null_shape.MEMBERS`) and a verdict is a claim
    only when it holds under all of them:

    * ``invalid`` when every member rejects (:math:`p < \alpha`);
    * ``valid`` when no member rejects, a member whose p-value is within two Monte-Carlo
      standard deviations of α (:func:`pvalue_noise`, ``borderline``) not counting as a
      rejection;
    * ``inconclusive`` otherwise, naming the members that reject and those that accept:
      the conclusion depends on the shape of the errors, not on the data alone;
    * ``inconclusive`` also when ``n_copies`` copies cannot give a p-value below α
      (:func:`smallest_pvalue`): a test that can never reject proves nothing.

    Parameters
    ----------
    pvalues : array_like, shape (len(labels),)
        P-value of the statistic under each member (:func:`mc_pvalue`).
    labels : sequence of str
        Member labels, for the reason.
    alpha : float
        Size of the test.
    n_copies : int or array_like, optional
        Finite copies behind each p-value (the smallest over members decides whether the
        test can reach α, and sets the borderline band); None: not checked, no band.
    direction : {1, -1, 0}
        Side of the test (for the smallest attainable p-value).
    p_floor : float, optional
        Smallest attainable p-value when it is not that of ``n_copies`` copies on
        ``direction`` (e.g. a Bonferroni-corrected minimum).
    use : array_like of bool, optional
        Members that take part (:func:`~uqx.engine.null_shape.plausible_members`: a fixed
        member whose shape the data's tails exclude does not); default all.

    Returns
    -------
    verdict, reason : str
        The verdict, and why when it is ``inconclusive`` (else ``''``).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    labels = list(labels)
    if use is not None:
        use = np.asarray(use, dtype=bool)
        p, labels = p[use], [lab for lab, k in zip(labels, use, strict=True) if k]
        if n_copies is not None and np.ndim(n_copies):
            n_copies = np.asarray(n_copies)[use]
    if p.size == 0 or not np.isfinite(p).all():
        return "inconclusive", "a Monte-Carlo p-value is not finite (no usable copy)"
    if n_copies is not None:
        n = int(np.min(n_copies))
        floor = float(smallest_pvalue(n, direction) if p_floor is None else p_floor)
        if floor >= alpha:
            return "inconclusive", (
                f"{n} calibrated copies cannot give p < {alpha:g} (smallest p {floor:.3g}): "
                "no verdict; increase --n-mc")
        band = 2 * pvalue_noise(p, n, alpha)
    else:
        band = 0.0
    reject = p < alpha
    if reject.all():
        return "invalid", ""
    if not np.any(p < alpha - band):
        return "valid", ""
    rej = ", ".join(f"{lab} (p = {v:.3g})" for lab, v, r in zip(labels, p, reject, strict=True)
                    if r)
    acc = ", ".join(f"{lab} (p = {v:.3g})" for lab, v, r in zip(labels, p, reject, strict=True)
                    if not r)
    return "inconclusive", (f"rejected under {rej}, but not under {acc}: the conclusion "
                            "depends on the generative distribution of the errors")
