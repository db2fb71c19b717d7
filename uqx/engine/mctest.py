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
``error-rates`` study, not assumed. The direction ``d``
says which side means miscalibration (:data:`DIRECTION`): binned errors (ENCE, ZMSE,
ZVE, UCE) and zero-bin intercepts are too **large** when uncertainties are inconsistent,
the rank correlation CC is too **small**, and the average-calibration statistics (ZMS,
RCE, ...) are wrong on **both** sides.

The generative distribution of ε is a nuisance. The null is simulated under a family of
members (:data:`MEMBERS`): the papers' N(0, 1) and :math:`t_s(6)`, and two members built
from the data: a :math:`t_s(\hat\nu)` whose ν̂ matches the Crow–Siddiqui kurtosis of the
data's Z², scaled within the bins of uE (:func:`kappa_cs_z2_local`, :func:`t_nu_from_tails`,
bounded below by :data:`NU_MIN`; N when the tails are not heavier than the normal; on the
grid of :func:`nu_on_grid`; for the statistics tested on both sides, the heavy end of
the confidence set of ν, :func:`nu_heavy_bound`), and the data's own z-scores scaled to
unit mean square and resampled with replacement (:func:`standardised_z`), which carries
the data's realised extremes that no quantile-matched distribution sees.
:func:`family_verdict`: ``invalid`` only when every member rejects, ``valid`` only when
no member rejects (borderline p-values aside), ``inconclusive`` (with the reason)
otherwise: then the conclusion depends on the shape of the errors, not on the data.

Several routes of one headline (consistency on uE, adaptivity on X or V) share their
copies; :func:`minp_pvalue` calibrates their smallest p-value on those copies
(Westfall & Young's min-p), so the headline has the size of one test.

Pure NumPy/SciPy kernels over the last axis (the copies); NaN copies are ignored.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ALPHA",
    "DIRECTION",
    "MEMBERS",
    "standardised_z",
    "standardised_z_local",
    "local_windows",
    "LOCAL_WINDOW",
    "LOCAL_WINDOW_MIN",
    "NU_MIN",
    "direction_of",
    "mc_pvalue",
    "copy_pvalues",
    "minp_pvalue",
    "familywise_pvalues",
    "ALPHA_RESULT",
    "N_TEST",
    "N_HEADLINE",
    "family_verdict",
    "smallest_pvalue",
    "plausible_members",
    "PLAUSIBLE_Z",
    "t_nu_from_tails",
    "kappa_cs_z2_local",
    "nu_on_grid",
    "NU_GRID_STEP",
    "nu_heavy_bound",
    "NU_BOUND_Z",
    "kappa_cs_z2_se_of_t",
    "kappa_cs_z2_of_t",
    "pvalue_noise",
    "LIGHT_SIDE",
    "mc_pvalue_sides",
]

#: Size of every test (two-sided statistics split it between the tails).
ALPHA = 0.05
#: Calibrated copies per member for a test (the papers' references may use more): the
#: p-value near 0.05 to ±0.007 (one Monte-Carlo sd).
N_TEST = 1000
#: Calibrated copies per member for the zero-bin extrapolation nulls and the headlines
#: (the routes share them): a sweep of 15 bin numbers and a fit per copy.
N_HEADLINE = 500
#: Family-wise size of a whole result: an ``invalid`` anywhere in a calibrated set's
#: result at most this often (step-down min-p over every test of the set).
ALPHA_RESULT = 0.10

#: Side of miscalibration: +1 too large, -1 too small, 0 both sides.
DIRECTION = {
    "ence": 1, "ence_sd": 1, "uce": 1, "zmse": 1, "zmse_max": 1, "zve": 1, "cc": -1,
    "zms": 0, "rce": 0, "mean_z": 0, "var_z": 0, "nll": 0, "mse": 0, "rmse": 0,
    "intercept": 1,
}

#: Members of the null family: the papers' D ("N", "T6"), the t_s(ν̂) matched to the
#: data's tails ("fit") and the data's own standardised z-scores resampled ("data").
MEMBERS = ("N", "T6", "fit", "data")
#: Lower bound of the fitted degrees of freedom (t_s needs ν > 2; below 3 its Z² has
#: an infinite mean-square spread and the test would accept anything).
NU_MIN = 3.0
#: Step of the grid of 1/ν on which the fitted member's ν̂ is placed (:func:`nu_on_grid`).
NU_GRID_STEP = 0.01
#: Width of the confidence set of ν, in standard errors of κ̂, whose heavy end is the
#: fitted member's ν for the two-sided statistics (:func:`nu_heavy_bound`; one standard
#: error, 84 % one-sided). Chosen on measured rates: 1.645 also holds the size, but
#: costs a tenth of the power against uncertainties scaled by 0.9 with t_s(6) errors.
NU_BOUND_Z = 1.0

#: Width, in standard errors of κ_CS, of the screening of the fixed members' shapes
#: (:func:`plausible_members`).
PLAUSIBLE_Z = 1.96

_KAPPA_OFFSET = 2.91


def standardised_z(E, uE) -> np.ndarray:
    r"""Centre the data's z-scores and scale them to unit mean square.

    :math:`(Z - \bar Z)/\sqrt{\langle (Z - \bar Z)^2\rangle}`: centred, so that the
    copies of ⟨Z⟩ test a bias instead of carrying it (uncentred, the resampled z-scores
    of errors biased by 0.2 uE gave copies centred on 0.2, and ⟨Z⟩ was never rejected).

    Resampled with replacement, they are the "data" member of the null family: calibrated
    copies with the data's own shape, extremes included (consistency resampling).

    Parameters
    ----------
    E, uE : array_like, shape (M,)
        Errors and uncertainties of one set.

    Returns
    -------
    numpy.ndarray, shape (M,)
        The scaled z-scores.
    """
    z = np.asarray(E, dtype=np.float64) / np.asarray(uE, dtype=np.float64)
    z = z - np.mean(z)  # centred: resampled, a bias of the data would be its own null
    return z / np.sqrt(np.mean(z * z))


def standardised_z_local(z_sorted, seg) -> np.ndarray:
    r"""Centre z-scores and scale them to unit mean square within each segment of the uE order.

    The pool of the "data" member when the statistics bin on uE: copies resample each
    bin's own standardised z-scores (:func:`uqx.engine.copies.sim_rows`, ``code = 3``),
    so they keep the shape of the errors at each level of uE, and the null is exactly
    consistency (:math:`\mathrm{E}[Z^2 \mid u_E] = 1`) whatever that shape, not one
    shape for every uE.

    Parameters
    ----------
    z_sorted : array_like, shape (M,)
        The z-scores in the stable order of uE.
    seg : array_like of int, shape (S + 1,)
        Segment boundaries in that order (the bins on uE).

    Returns
    -------
    numpy.ndarray, shape (M,)
        Each segment centred and divided by the root of its own mean square (a constant
        segment: zeros).
    """
    z = np.array(z_sorted, dtype=np.float64)
    seg = np.asarray(seg, dtype=np.int64)
    z -= np.repeat(np.add.reduceat(z, seg[:-1]) / np.diff(seg), np.diff(seg))  # centred
    ms = np.add.reduceat(z * z, seg[:-1]) / np.diff(seg)
    scale = np.repeat(np.sqrt(ms), np.diff(seg))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(scale > 0, z / scale, 0.0)


#: Points of a window of the local "data" member (:func:`local_windows`): the bins of uE
#: are grouped until a group holds ``min(LOCAL_WINDOW, M // 4)`` points, and never fewer
#: than :data:`LOCAL_WINDOW_MIN`, so that a group standardised on itself keeps the tails
#: of the errors (a bin of 25 points standardised on itself loses its extremes and the
#: copies' binned statistics come out too narrow) while a set of a few hundred points
#: still gets several windows (one window cannot follow a shape that changes with uE:
#: CC was then ``invalid`` on 41.5 % of consistent sets of 500 whose errors are normal
#: below the median of uE and t_s(4) above).
LOCAL_WINDOW = 500
#: The fewest points of a window of the local "data" member.
LOCAL_WINDOW_MIN = 100


def local_windows(seg, min_points: int = None):
    """Group consecutive bins of uE into windows of at least ``min_points`` points.

    Parameters
    ----------
    seg : array_like of int, shape (S + 1,)
        Bin boundaries in the uE order.
    min_points : int, optional
        Fewest points of a window (default ``max(LOCAL_WINDOW_MIN, min(LOCAL_WINDOW,
        M // 4))``, M the number of rows); the last window takes a smaller remainder.

    Returns
    -------
    groups : numpy.ndarray of int64
        Window boundaries (a subset of ``seg``).
    win : numpy.ndarray of int64, shape (S, 2)
        The window [lo, hi) of every bin.
    """
    seg = np.asarray(seg, dtype=np.int64)
    if min_points is None:
        min_points = max(LOCAL_WINDOW_MIN, min(LOCAL_WINDOW, int(seg[-1]) // 4))
    min_points = int(min_points)
    bounds = [int(seg[0])]
    for b in seg[1:-1]:
        if b - bounds[-1] >= min_points and seg[-1] - b >= min_points:
            bounds.append(int(b))
    bounds.append(int(seg[-1]))
    groups = np.array(bounds, dtype=np.int64)
    k = np.searchsorted(groups, seg[:-1], side="right") - 1
    win = np.ascontiguousarray(np.stack([groups[k], groups[k + 1]], axis=1))
    return groups, win


def direction_of(base: str) -> int:
    """Side of miscalibration of a statistic (:data:`DIRECTION`; 0 when unknown)."""
    return DIRECTION.get(base, 0)


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


def minp_pvalue(p_observed, p_copies):
    r"""Calibrated min-p of several routes sharing their copies (Westfall & Young).

    .. math:: p = \frac{1 + \#\{k : \min_r p_{r,k} \le \min_r p_r\}}{1 + n}

    Parameters
    ----------
    p_observed : array_like, shape (R,)
        P-value of each route for the data (NaN routes are left out).
    p_copies : array_like, shape (R, n)
        P-value of each route for each copy (:func:`copy_pvalues`), the same copies for
        every route.

    Returns
    -------
    float
        NaN when no route has a finite p-value.
    """
    po = np.asarray(p_observed, dtype=np.float64)
    pc = np.asarray(p_copies, dtype=np.float64).reshape(po.size, -1)
    keep = np.isfinite(po)
    if not keep.any():
        return np.nan
    pc = pc[keep]
    good = np.all(np.isfinite(pc), axis=0)
    if not good.any():
        return np.nan
    m_obs = po[keep].min()
    m_null = pc[:, good].min(axis=0)
    return float((1 + np.sum(m_null <= m_obs)) / (1 + m_null.size))


def familywise_pvalues(p_observed, p_copies) -> np.ndarray:
    r"""Family-wise adjusted p-values of several tests sharing their copies.

    Step-down min-p (Westfall & Young 1993, Algorithm 2.8). With the observed p-values
    in increasing order :math:`p_{(1)} \le \dots \le p_{(T)}` (tests :math:`r_1, \dots`),

    .. math::

        \tilde p_{(t)} = \max_{s \le t} \frac{1 + \#\{k : \min_{q \ge s} p_{r_q, k}
        \le p_{(s)}\}}{1 + n},

    the minimum over copy k running over the tests not yet rejected. Rejecting where
    :math:`\tilde p_t < \alpha` keeps the probability of any false rejection among the
    tests at α whatever their dependence (subset pivotality: the copies are drawn under
    the joint null of every test); the first step is single-step min-p, and the later
    steps leave out the tests already rejected, so no test is adjusted more than
    single-step.

    Parameters
    ----------
    p_observed : array_like, shape (T,)
        P-value of every test of the result (NaN: test absent).
    p_copies : array_like, shape (T, n)
        The same tests' p-values on each shared copy.

    Returns
    -------
    numpy.ndarray, shape (T,)
    """
    po = np.asarray(p_observed, dtype=np.float64)
    pc = np.asarray(p_copies, dtype=np.float64).reshape(po.size, -1)
    out = np.full(po.size, np.nan)
    keep = np.flatnonzero(np.isfinite(po))
    if not keep.size:
        return out
    good = np.all(np.isfinite(pc[keep]), axis=0)
    if not good.any():
        return out
    order = keep[np.argsort(po[keep], kind="stable")]
    pcg = pc[order][:, good]
    # successive minima from the last test up: row s = min over the tests s, s+1, ...
    tail_min = np.minimum.accumulate(pcg[::-1], axis=0)[::-1]
    n = pcg.shape[1]
    adj = (1 + np.sum(tail_min <= po[order][:, None], axis=1)) / (1 + n)
    out[order] = np.maximum.accumulate(adj)
    return out


#: Side on which a two-sided statistic of a sample that missed its rare extremes falls:
#: small ⟨Z²⟩, Var(Z) and NLL, large RCE (RMSE small against RMV). On that side its
#: fitted member's p-value uses the copies at the heavy end of ν (:func:`nu_heavy_bound`).
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
    member of the family (:data:`MEMBERS`) and a verdict is a claim only when it holds
    under all of them:

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
        Members that take part (:func:`plausible_members`: a fixed member whose shape the
        data's tails exclude does not); default all.

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


def plausible_members(kappa, M, member_nus, *, z: float = None) -> np.ndarray:
    r"""Members of the null family whose shape the data's tails do not exclude.

    A fixed member t_s(ν_m) (the papers' N, ν = ∞, and t_s(6)) takes part in a verdict
    only when the data's κ_CS of Z² lies within ``z`` standard errors of that member's
    own, :math:`|\hat\kappa - \kappa(
    u_m)| \le z\,\mathrm{se}(
    u_m, M)`
    (:func:`kappa_cs_z2_of_t`, :func:`kappa_cs_z2_se_of_t`): N is no null for clearly
    heavy-tailed errors, t_s(6) none for clearly normal ones, and requiring their
    acceptance would make ``valid`` unreachable on calibrated data of another shape.
    The data-matched members (``None`` in ``member_nus``: the fitted t_s(ν̂) and the
    resampled z-scores) always take part. This is a screening of the nuisance shape at
    about the 95 % level, not a formal confidence-set test: its effect on the error
    rates is measured by the ``error-rates`` study.

    Parameters
    ----------
    kappa : array_like, shape (S,)
        κ_CS of Z² of each set (scaled within the bins of uE).
    M : array_like, shape (S,)
        Sizes of the sets.
    member_nus : sequence of float or None
        ν of each member (inf: normal); None for the data-matched members.
    z : float, optional
        Width in standard errors (default :data:`PLAUSIBLE_Z`).

    Returns
    -------
    numpy.ndarray of bool, shape (S, len(member_nus))
    """
    z = PLAUSIBLE_Z if z is None else z
    kappa = np.atleast_1d(np.asarray(kappa, dtype=np.float64))
    M = np.broadcast_to(np.asarray(M, dtype=np.float64), kappa.shape)
    out = np.ones((kappa.size, len(member_nus)), dtype=bool)
    for m, nu in enumerate(member_nus):
        if nu is None:
            continue
        k0 = kappa_cs_z2_of_t(nu)
        se = kappa_cs_z2_se_of_t(nu, M)
        with np.errstate(invalid="ignore"):
            out[:, m] = ~(np.abs(kappa - k0) > z * se)  # NaN kappa: kept
    return out


# ------------------------------------------------------------- tails of the data's Z
def kappa_cs_z2_of_t(nu):
    r"""Crow–Siddiqui excess kurtosis of Z² for Z ~ t(ν) (scale-free; ν = inf: normal).

    With :math:`q(p) = F_t^{-1}((1 + p)/2; \nu)^2` the quantile of Z²,
    :math:`\kappa_{CS} = [q(0.975) - q(0.025)] / [q(0.75) - q(0.25)] - 2.91`
    (001 Eq. 12, the metric :func:`uqx.engine.stats.tailedness.kappa_cs` estimates).
    """
    from scipy.stats import norm
    from scipy.stats import t as student_t

    nu = np.asarray(nu, dtype=np.float64)
    p = np.array([0.975, 0.025, 0.75, 0.25])
    pp = (1 + p) / 2
    with np.errstate(invalid="ignore"):
        q = np.where(np.isinf(nu)[..., None], norm.ppf(pp),
                     student_t.ppf(pp, np.where(np.isinf(nu), 1.0, nu)[..., None])) ** 2
    return (q[..., 0] - q[..., 1]) / (q[..., 2] - q[..., 3]) - _KAPPA_OFFSET


_NU_GRID = np.geomspace(2.05, 1000.0, 400)
_KAPPA_GRID = kappa_cs_z2_of_t(_NU_GRID)  # decreasing in ν
_KAPPA_NORMAL = float(kappa_cs_z2_of_t(np.inf))


def t_nu_from_tails(kappa_cs_z2, *, nu_min: float = NU_MIN) -> np.ndarray:
    r"""Degrees of freedom of the :math:`t_s(\nu)` whose Z² has the given κ_CS.

    Inverts :func:`kappa_cs_z2_of_t` (monotone); returns ``inf`` (the normal) when the
    tails are not heavier than the normal's and ``nu_min`` when they are heavier than
    :math:`t(\nu_{min})`'s. κ_CS uses quantiles only, so it exists for any tails.

    Parameters
    ----------
    kappa_cs_z2 : array_like
        Crow–Siddiqui excess kurtosis of the data's Z² (``tailedness()["kappa_cs_z2"]``).

    Returns
    -------
    numpy.ndarray
        ν̂ in [nu_min, inf]; NaN where the input is NaN.
    """
    k = np.asarray(kappa_cs_z2, dtype=np.float64)
    nu = np.interp(k, _KAPPA_GRID[::-1], _NU_GRID[::-1])
    nu = np.where(k <= _KAPPA_NORMAL, np.inf, np.maximum(nu, nu_min))
    return np.where(np.isnan(k), np.nan, nu)


def kappa_cs_z2_se_of_t(nu, M):
    r"""Return the sd of the sample κ_CS of Z² for M values of Z ~ t(ν) (delta method).

    The sample quantiles :math:`\hat q_a` of Z² at :math:`a \in \{0.025, 0.25, 0.75,
    0.975\}` are asymptotically normal with covariance
    :math:`a(1 - b) / [M f(q_a) f(q_b)]` for :math:`a \le b`, f the density of Z²
    (:math:`f(q) = f_t(\sqrt q)/\sqrt q`); κ_CS + 2.91 = (q_{0.975} - q_{0.025}) /
    (q_{0.75} - q_{0.25}) is a smooth function of them. Checked against simulation in
    the tests (within 10 % from M = 500 on, for ν from 3 to the normal).

    Parameters
    ----------
    nu : array_like
        Degrees of freedom (inf: the normal).
    M : array_like
        Sample sizes (broadcast against ``nu``).

    Returns
    -------
    numpy.ndarray
        sd of the sample κ_CS of Z².
    """
    from scipy.stats import norm
    from scipy.stats import t as student_t

    nu, M = np.broadcast_arrays(np.asarray(nu, dtype=np.float64),
                                np.asarray(M, dtype=np.float64))
    a = np.array([0.025, 0.25, 0.75, 0.975])
    inf = np.isinf(nu)[..., None]
    dof = np.where(np.isinf(nu), 1.0, nu)[..., None]
    x = np.where(inf, norm.ppf((1 + a) / 2), student_t.ppf((1 + a) / 2, dof))
    dens = np.where(inf, norm.pdf(x), student_t.pdf(x, dof)) / x
    q = x * x
    num, den = q[..., 3] - q[..., 0], q[..., 2] - q[..., 1]
    grad = np.stack([-1 / den, num / den**2, -num / den**2, 1 / den], axis=-1)
    lo, hi = np.minimum.outer(a, a), np.maximum.outer(a, a)
    cov = (lo * (1 - hi)) / (dens[..., :, None] * dens[..., None, :])
    var = np.einsum("...i,...ij,...j->...", grad, cov, grad) / M
    return np.sqrt(var)


_SE_GRID_UNIT = kappa_cs_z2_se_of_t(_NU_GRID, 1.0)  # sd at M = 1; sd(M) = sd(1)/sqrt(M)


def nu_heavy_bound(kappa_cs_z2, M, *, z: float = NU_BOUND_Z, nu_min: float = NU_MIN) -> np.ndarray:
    r"""Heaviest tails compatible with the data: the smallest ν the sample κ_CS does not reject.

    The confidence set of ν is :math:`\{\nu : \kappa(\nu) - z\,s(\nu, M) \le
    \hat\kappa\}` (one-sided, :func:`kappa_cs_z2_of_t`, :func:`kappa_cs_z2_se_of_t`);
    its smallest member, bounded below by ``nu_min``, is returned (inf when the set
    holds no ν up to 1000: tails lighter than any t_s). A small sample of heavy-tailed
    errors that misses its rare extremes looks light-tailed *and* has a small ⟨Z²⟩, so
    the point estimate ν̂ is largest exactly where a test of the average calibration
    needs the heavy tails: the fitted member's copies of the two-sided statistics are
    drawn at this ν, and decide their p-value on that side (:data:`LIGHT_SIDE`,
    :func:`mc_pvalue_sides`). This is a screening of the nuisance ν with a one-sided
    set of about 84 %, not the bounded-nuisance test of Berger & Boos (1994), which would
    take the supremum of p over the set and add its miss probability: its effect on the
    error rates is measured by the ``error-rates`` study instead.

    Parameters
    ----------
    kappa_cs_z2 : array_like
        Sample κ_CS of Z² (:func:`kappa_cs_z2_local` or ``tailedness()["kappa_cs_z2"]``).
    M : array_like
        Sample sizes.
    z : float
        Standard errors of κ̂ below κ(ν) that the set admits (default
        :data:`NU_BOUND_Z`).

    Returns
    -------
    numpy.ndarray
        ν in [nu_min, inf]; NaN where κ̂ is NaN.
    """
    k, M = np.broadcast_arrays(np.asarray(kappa_cs_z2, dtype=np.float64),
                               np.asarray(M, dtype=np.float64))
    reach = _KAPPA_GRID - z * _SE_GRID_UNIT / np.sqrt(M[..., None])  # (..., grid)
    ok = reach <= k[..., None]
    first = np.argmax(ok, axis=-1)  # grid ascending in ν: the heaviest compatible ν
    prev = np.maximum(first - 1, 0)
    r0 = np.take_along_axis(reach, prev[..., None], -1)[..., 0]
    r1 = np.take_along_axis(reach, first[..., None], -1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):  # the crossing, linear in κ
        w = np.clip(np.where(r0 > r1, (r0 - k) / (r0 - r1), 1.0), 0.0, 1.0)
    nu = _NU_GRID[prev] + w * (_NU_GRID[first] - _NU_GRID[prev])
    nu = np.where(ok.any(axis=-1), np.maximum(nu, nu_min), np.inf)
    return np.where(np.isnan(k), np.nan, nu)


def nu_on_grid(nu, *, step: float = NU_GRID_STEP, nu_min: float = NU_MIN) -> np.ndarray:
    r"""Place ν̂ on the grid :math:`1/\nu \in \{0, s, 2s, \dots\}` (nearest point).

    The fitted member of the null family guards an ``invalid`` against tails heavier
    than the normal; its ν̂ comes from a quantile ratio with a sampling spread far wider
    than the grid (at ν = 6 the step s = 0.01 moves ν by at most 3 %). On the grid, the
    member is one of a few distributions, so its calibrated copies are keyed by (uE, ν̂)
    and shared by the data sets with the same uncertainties
    (:func:`uqx.inference.reference.shared_nulls`). 1/ν below s/2 becomes the normal
    (ν = inf); the grid point is bounded below by ``nu_min``.

    Parameters
    ----------
    nu : array_like
        ν̂ in [nu_min, inf] (:func:`t_nu_from_tails`); NaN stays NaN.
    step : float
        Grid step s of 1/ν.

    Returns
    -------
    numpy.ndarray
    """
    nu = np.asarray(nu, dtype=np.float64)
    with np.errstate(divide="ignore"):
        k = np.round(1.0 / nu / step)
        out = np.where(k > 0, 1.0 / (k * step), np.inf)
    out = np.where(np.isfinite(out), np.maximum(out, nu_min), out)
    return np.where(np.isnan(nu), np.nan, out)


def kappa_cs_z2_local(E, uE, n_bins: int | None = None) -> float:
    r"""κ_CS of Z² once Z is scaled to unit mean square within each bin of uE.

    The fitted member of the null family stands for the *shape* of the errors' tails.
    Read from Z itself, ν̂ also sees miscalibration: when the uncertainties are
    inconsistent (e.g. :math:`u = c\,u_E^{\gamma}`), Z mixes scales across the range
    of uE and its tails look heavier than the errors' own, which made the fitted member
    accept inconsistent data. Scaling Z by its root mean square in each of ``n_bins``
    equal-count bins of uE (:func:`uqx.engine.binning.equal_count_edges`, default
    :func:`uqx.engine.defaults.local_bins`) removes a scale that varies with uE and
    leaves the shape; on calibrated data the scales are 1 up to noise.

    Parameters
    ----------
    E, uE : array_like, shape (M,)
        Errors and uncertainties of one set (finite, uE > 0).
    n_bins : int, optional
        Bins of uE.

    Returns
    -------
    float
        The Crow–Siddiqui excess kurtosis of the locally scaled Z² (001 Eq. 12), the
        input of :func:`t_nu_from_tails`. Memory: 16 bytes a row (the order of uE and
        the scaled Z², sorted in place).
    """
    from uqx.engine.binning import equal_count_edges, stable_order
    from uqx.engine.defaults import POP_MIN, local_bins
    from uqx.engine.stats.tailedness import sorted_tailedness

    E = np.asarray(E, dtype=np.float64)
    u = np.asarray(uE, dtype=np.float64)
    M = E.shape[0]
    order = stable_order(u)
    z = np.take(E, order)
    for lo in range(0, M, 1 << 20):  # no third array of M values
        z[lo:lo + (1 << 20)] /= u[order[lo:lo + (1 << 20)]]
    del order
    nb = local_bins(M) if n_bins is None else int(n_bins)
    # fewer rows than a bin's minimum: one bin (Z scaled on the whole set)
    edges = equal_count_edges(M, nb) if M >= POP_MIN else np.array([0, M])
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if hi > lo:
            seg = z[lo:hi]
            rms = np.sqrt(np.mean(seg * seg))
            if rms > 0:
                seg /= rms
    np.multiply(z, z, out=z)
    z.sort()
    return float(sorted_tailedness(z, kappa=True)[1])
