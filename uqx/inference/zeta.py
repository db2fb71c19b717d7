r"""ζ-scores and binomial intervals: how an estimate is held against its reference.

Paper 000 (Sect. II D, Eqs. 20–24); methods page: ζ-scores. :func:`zeta_score` (ζ_BS,
and ζ_Sim with a target uncertainty), :func:`zeta_sim2` (as coded), :func:`d_sensitive`
(a reference that changes with the generative distribution D beyond its Monte-Carlo
uncertainty: uqx rule :math:`|\tilde\theta_N - \tilde\theta_T| > 2\sqrt{u_N^2 + u_T^2}`)
and :func:`binomial_ci` (Wilson intervals of proportions).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtri
from scipy.stats import binomtest

from uqx.engine.defaults import LEVEL
from uqx.errors import InputError

__all__ = ["binomial_ci", "d_sensitive", "zeta_score", "zeta_sim2"]


def zeta_score(estimate, reference, ci_low, ci_high, *, target_u=0.0):
    r"""ζ-score of paper 000 Eq. 20 (ErrViewLib ``fZetaBS``; methods: ζ-scores).

    .. math:: \zeta = \frac{\theta - \theta_{ref}}{\sqrt{(\theta - \ell)^2 + U_t^2}},
              \quad \ell = \begin{cases} lo & \theta \ge \theta_{ref} \\ up & \text{else}
              \end{cases}

    i.e. the signed distance to the reference over the half-interval on the reference's
    side; :math:`|\zeta| \le 1` iff the reference lies in the interval (when
    :math:`U_t = 0`). ``target_u`` is the optional target uncertainty (000 uses
    :math:`U_t = 2u(\tilde\theta_{ref})` for simulated references).

    Parameters
    ----------
    estimate : array_like
        The statistic θ.
    reference : array_like
        Its reference θ_ref.
    ci_low, ci_high : array_like
        Its confidence interval [lo, up].
    target_u : float or array_like, default 0
        Target uncertainty :math:`U_t`.

    Examples
    --------
    The estimate 1.5 lies two half-widths of its interval [1.25, 1.75] above the reference 1:

    >>> float(zeta_score(1.5, 1.0, 1.25, 1.75))
    2.0
    """
    est = np.asarray(estimate, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    d = est - ref
    lim = np.where(d >= 0, ci_low, ci_high)
    width = np.sqrt((est - lim) ** 2 + np.asarray(target_u, dtype=np.float64) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(d == 0, 0.0, d / width)
    return z


def zeta_sim2(estimate, reference, q_low, q_high):
    r"""ζ_Sim2 of paper 000 Eq. 24 as coded.

    Methods page: ζ-scores; where a paper and its code disagree.

    .. math:: \zeta_{Sim2} = \begin{cases} (\theta - \tilde\theta)/(\tilde\theta - q_{2.5})
              & \theta \le \tilde\theta \\ (\theta - \tilde\theta)/(q_{97.5} - \tilde\theta)
              & \text{else} \end{cases}

    Kept for comparison only: the paper advises against using it for decisions.

    Parameters
    ----------
    estimate : array_like
        The statistic θ.
    reference : array_like
        The simulated reference :math:`\tilde\theta`.
    q_low, q_high : array_like
        The 2.5 % and 97.5 % quantiles of the simulated values.

    Returns
    -------
    numpy.ndarray
        ζ_Sim2.
    """
    est = np.asarray(estimate, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    d = est - ref
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d <= 0, d / (ref - np.asarray(q_low)), d / (np.asarray(q_high) - ref))


def binomial_ci(x, n, *, method="wilsoncc", level=LEVEL):
    r"""Binomial proportion interval (DescTools ``BinomCI``; methods: ζ-scores).

    ``method="wilson"``: :math:`c \pm h` with :math:`c = (x + \kappa^2/2)/(n+\kappa^2)`,
    :math:`h = \kappa\sqrt n/(n+\kappa^2)\sqrt{\hat p\hat q + \kappa^2/(4n)}`;
    ``method="wilsoncc"``: Newcombe (1998) method 4 with continuity correction. Integer
    counts go through :meth:`scipy.stats.binomtest(x, n).proportion_ci
    <scipy.stats._result_classes.BinomTestResult.proportion_ci>`; non-integer ``x`` and
    ``n`` (calibration-curve bands, methods: curves), which scipy does not take, use the
    same closed forms (:func:`_wilson_formula`, checked against scipy on integers).

    Parameters
    ----------
    x : array_like
        Successes (may be non-integer for the calibration-curve bands).
    n : array_like
        Trials.
    method : {"wilson", "wilsoncc"}, default "wilsoncc"
        Interval (without, with continuity correction).
    level : float, default LEVEL (0.95)
        Confidence level of the intervals.

    Examples
    --------
    >>> [round(float(v), 5) for v in binomial_ci(81, 263)]
    [0.25351, 0.36818]
    """
    if method not in ("wilson", "wilsoncc"):
        raise InputError(f"binomial_ci: method must be 'wilson' or 'wilsoncc', got {method!r}")
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    x, n = np.broadcast_arrays(x, n)
    integer = (np.all(x == np.round(x)) and np.all(n == np.round(n)) and np.all(n >= 1)
               and np.all((x >= 0) & (x <= n)))
    if not integer:
        return _wilson_formula(x, n, method=method, level=level)
    lo, hi = np.empty(x.shape), np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        ci = binomtest(int(x[idx]), int(n[idx])).proportion_ci(confidence_level=level,
                                                                method=method)
        lo[idx], hi[idx] = ci.low, ci.high
    return (lo[()], hi[()])


def _wilson_formula(x, n, *, method="wilsoncc", level=LEVEL):
    """Closed-form Wilson / Wilson-cc limits for any (also non-integer) x and n."""
    k = ndtri((1 + level) / 2)
    p = x / n
    q = 1 - p
    k2 = k * k
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "wilson":
            c = (x + k2 / 2) / (n + k2)
            h = k * np.sqrt(n) / (n + k2) * np.sqrt(p * q + k2 / (4 * n))
            lo, hi = c - h, c + h
        else:
            lo = (2 * x + k2 - 1 - k * np.sqrt(k2 - 2 - 1 / n + 4 * p * (n * q + 1))) / (
                2 * (n + k2)
            )
            hi = (2 * x + k2 + 1 + k * np.sqrt(k2 + 2 - 1 / n + 4 * p * (n * q - 1))) / (
                2 * (n + k2)
            )
            lo = np.where(x <= 0, 0.0, lo)
            hi = np.where(x >= n, 1.0, hi)
    return np.clip(lo, 0, 1), np.clip(hi, 0, 1)


def d_sensitive(ref_a, se_a, ref_b, se_b, *, k=2.0):
    r"""D-sensitivity rule: :math:`|\tilde\theta_a - \tilde\theta_b| > k\sqrt{u_a^2 + u_b^2}`.

    Parameters
    ----------
    ref_a, se_a : array_like
        Reference under one distribution and its Monte-Carlo standard error.
    ref_b, se_b : array_like
        The same under another distribution.
    k : float, default 2
        Coverage factor.

    Returns
    -------
    numpy.ndarray of bool
        Whether the two references differ beyond their uncertainty.
    """
    return np.abs(np.asarray(ref_a) - ref_b) > k * np.sqrt(
        np.asarray(se_a) ** 2 + np.asarray(se_b) ** 2
    )
