r"""The shape of the errors that the null members stand for.

The generative distribution of ε is a nuisance of every test (:mod:`uqx.engine.mctest`).
Besides the papers' N(0, 1) and :math:`t_s(6)`, two members of the null family are built
from the data, and this module builds them:

* the **fitted** member :math:`t_s(\hat\nu)`: ν̂ matches the Crow–Siddiqui kurtosis of
  the data's Z² once Z is scaled within the bins of uE (:func:`kappa_cs_z2_local`,
  :func:`t_nu_from_tails`), bounded below by :data:`NU_MIN`, placed on the grid of
  :func:`nu_on_grid`; the statistics tested on both sides read their light side at the
  heavy end of a one-standard-error set for ν (:func:`nu_heavy_bound`), with the
  delta-method standard error of κ_CS (:func:`kappa_cs_z2_se_of_t`); where the windows
  of bins of uE exclude one ν̂ (:func:`kappa_cs_z2_windows`, :func:`one_shape`), its
  copies draw each window at that window's own ν (:func:`nu_windows`): errors whose
  shape changes with uE are consistent when their variance matches uE²;
* the **data** member: the data's own z-scores centred, scaled to unit mean square and
  resampled (:func:`standardised_z`), for the tests of consistency and adaptivity
  within windows of uE standardised on their own (:func:`local_windows`,
  :func:`standardised_z_local`); for rows already in the uE order, the same values
  computed from E and uE when drawn (:func:`standardised_pools`,
  :class:`StandardisedPool`: nothing of size M held).

:func:`plausible_members` screens the fixed members N and :math:`t_s(6)` against the
data's κ_CS, of the whole set and of every window. The p-values and the verdict rule
are in :mod:`uqx.engine.mctest`.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from uqx.engine.binning import equal_count_edges, is_nondecreasing, stable_order
from uqx.engine.defaults import POP_MIN, local_bins
from uqx.engine.stats.tailedness import sorted_tailedness

__all__ = [
    "MEMBERS",
    "NU_MIN",
    "NU_GRID_STEP",
    "NU_BOUND_Z",
    "PLAUSIBLE_Z",
    "LOCAL_WINDOW",
    "LOCAL_WINDOW_MIN",
    "standardised_z",
    "standardised_z_local",
    "standardised_pools",
    "StandardisedPool",
    "local_windows",
    "plausible_members",
    "kappa_cs_z2_of_t",
    "kappa_cs_z2_se_of_t",
    "t_nu_from_tails",
    "nu_heavy_bound",
    "nu_on_grid",
    "TAILS_REACH_Z",
    "tails_within_reach",
    "tails_reach_limit",
    "kappa_cs_z2_local",
    "kappa_cs_z2_windows",
    "kappa_cs_z2_halves",
    "nu_windows",
    "one_shape",
    "z_in_local_bins",
]

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

#: Width, in standard errors of κ_CS, of the test that the data's tails are lighter than
#: those of the family's heaviest member :math:`t_s(` :data:`NU_MIN` :math:`)`
#: (:func:`tails_within_reach`): where the data do not pass it, an ``invalid`` of a statistic
#: of Z² cannot stand. One standard error (as :data:`NU_BOUND_Z`), chosen on the tuning
#: draws (seed 31, u² ~ IG(3, 3)): calibrated t_s(2.5) errors at M = 200 were `invalid` on
#: 7.2 % of 400 sets without it, 5.8 % with 0.5, 1.2 % with 1 and 0 % with 1.5; with 1 the
#: power at M = 200 against γ = 0.5 with t_s(6) errors fell from 23 to 15 % of 60 sets,
#: with normal errors it did not change.
TAILS_REACH_Z = 1.0

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


class StandardisedPool:
    r"""Standardised z-scores read from E and uE when they are drawn (nothing of size M held).

    Value j of window w (``bounds[w] <= j < bounds[w + 1]``) is
    :math:`(E_j / u_j - m_w) / s_w`, rounded as :func:`standardised_z` (one window, the
    whole set) or :func:`standardised_z_local` (``local``: 0.0 in a window whose
    :math:`s_w` is not > 0) round it: a division, a subtraction, a division, never a
    multiplication by :math:`1/s_w`. So the values equal those functions' arrays bit for
    bit, and the simulation kernels compute each drawn value instead of reading a pool
    (:func:`uqx.engine.unit_variance.unit_step`, codes 4 and 5). Built by
    :func:`standardised_pools`. Memory: views of E and uE and two floats a window.

    Parameters
    ----------
    E, uE : numpy.ndarray, shape (M,)
        Errors and uncertainties in the order the pool is indexed (float64, contiguous;
        held by reference, not copied).
    bounds : array_like of int, shape (W + 1,)
        Window boundaries (``[0, M]``: the whole set).
    m, s : array_like, shape (W,)
        Centre and root mean square of each window's z-scores.
    local : bool
        Windows standardised on their own (a constant window gives zeros).
    """

    __slots__ = ("E", "uE", "bounds", "m", "s", "local")

    def __init__(self, E, uE, bounds, m, s, local):
        self.E = np.ascontiguousarray(E, dtype=np.float64)
        self.uE = np.ascontiguousarray(uE, dtype=np.float64)
        self.bounds = np.asarray(bounds, dtype=np.int64)
        self.m = np.ascontiguousarray(m, dtype=np.float64)
        self.s = np.ascontiguousarray(s, dtype=np.float64)
        self.local = bool(local)

    @property
    def size(self) -> int:
        """Number of values M."""
        return int(self.E.shape[0])

    def __len__(self) -> int:
        return self.size

    def values(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Return the values ``lo:hi`` as an array (``hi - lo`` floats: read in chunks).

        Parameters
        ----------
        lo, hi : int
            Range of positions (default: all of them).

        Returns
        -------
        numpy.ndarray, shape (hi - lo,)
        """
        hi = self.size if hi is None else int(hi)
        lo = int(lo)
        z = self.E[lo:hi] / self.uE[lo:hi]
        w0 = int(np.searchsorted(self.bounds, lo, side="right")) - 1
        for w in range(max(w0, 0), self.bounds.size - 1):
            a, b = max(int(self.bounds[w]), lo), min(int(self.bounds[w + 1]), hi)
            if a >= hi:
                break
            if b <= a:
                continue
            seg = z[a - lo:b - lo]
            if self.local and not self.s[w] > 0:
                seg[:] = 0.0
            else:
                seg -= self.m[w]
                seg /= self.s[w]
        return z

    def segment_params(self, win):
        """Centre and scale of the window of every segment (rows of ``win``, (S, 2)).

        Returns
        -------
        m, s : numpy.ndarray, shape (S,)
        """
        k = np.searchsorted(self.bounds, np.asarray(win, dtype=np.int64)[:, 0],
                            side="right") - 1
        return np.ascontiguousarray(self.m[k]), np.ascontiguousarray(self.s[k])


def standardised_pools(E, uE, groups=None):
    r"""Build the whole set's and the windows' standardised z-scores without storing them.

    :class:`StandardisedPool` views of E and uE whose values are bit for bit
    ``standardised_z(E, uE)`` and, with ``groups``, ``standardised_z_local(E / uE,
    groups)`` (then E and uE must be in the stable order of uE). The centres and scales
    are computed by the same reductions as those functions, on one array of z = E/uE
    modified in place: the windows' sums of :math:`(z - m_w)^2` by ``np.add.reduceat``
    over the whole array, then z recomputed and the whole set's
    :math:`\langle (z - \bar z)^2\rangle` by ``np.mean``.

    Parameters
    ----------
    E, uE : array_like, shape (M,)
        Errors and uncertainties of one set.
    groups : array_like of int, optional
        Window boundaries in that order (:func:`local_windows`).

    Returns
    -------
    whole : StandardisedPool
        The whole set's standardised z-scores.
    local : StandardisedPool or None
        Each window's own (None without ``groups``).

    Notes
    -----
    Memory: 8 bytes a row while they are built (z), nothing of size M afterwards.
    """
    E = np.ascontiguousarray(E, dtype=np.float64)
    u = np.ascontiguousarray(uE, dtype=np.float64)
    z = E / u
    m = np.mean(z)  # as standardised_z, on the same values
    local = None
    if groups is not None:
        g = np.asarray(groups, dtype=np.int64)
        n = np.diff(g)
        mw = np.add.reduceat(z, g[:-1]) / n  # as standardised_z_local
        for w in range(n.size):
            t = z[g[w]:g[w + 1]]
            t -= mw[w]
            np.multiply(t, t, out=t)
        sw = np.sqrt(np.add.reduceat(z, g[:-1]) / n)  # z holds (z - m_w)² in every window
        local = StandardisedPool(E, u, g, mw, sw, local=True)
        np.divide(E, u, out=z)  # the z-scores again, for the whole set
    z -= m
    np.multiply(z, z, out=z)
    s = np.sqrt(np.mean(z))
    del z
    whole = StandardisedPool(E, u, np.array([0, E.shape[0]], dtype=np.int64), [m], [s],
                             local=False)
    return whole, local


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


def plausible_members(kappa, M, member_nus, *, z: float = None, windows=None) -> np.ndarray:
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

    With ``windows``, a fixed member must also match every window of bins of uE
    (:func:`kappa_cs_z2_windows`, :func:`one_shape`: the same level split over the
    windows), each at its own size:
    one shape for every uE is what a fixed member stands for, and errors whose shape
    changes with uE exclude it even when the whole set's κ_CS falls near its own.

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
    windows : sequence of (kappa, n) or None, optional
        Per set, κ_CS of Z² and the size of each window (None: the set has none).

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
            for i, w in enumerate(windows or ()):
                if w is not None:
                    out[i, m] &= one_shape(w[0], w[1], nu)
    return out


def one_shape(kappa_windows, n_windows, nu, *, z: float = None) -> bool:
    r"""Whether every window's κ_CS of Z² is within ``z`` standard errors of t_s(ν)'s.

    :math:`|\hat\kappa_w - \kappa(\nu)| \le z\,\mathrm{se}(\nu, n_w)` for every window w
    (:func:`kappa_cs_z2_windows`, :func:`kappa_cs_z2_of_t`, :func:`kappa_cs_z2_se_of_t`;
    NaN windows pass): one shape t_s(ν) for every level of uE is not excluded. Decides
    whether a fixed member takes part (:func:`plausible_members`) and whether the fitted
    member keeps its one ν̂ or takes one per window (:func:`nu_windows`).

    Parameters
    ----------
    kappa_windows, n_windows : array_like, shape (W,)
        κ_CS of Z² and points of each window.
    nu : float
        ν of the shape (inf: normal).
    z : float, optional
        Width in standard errors; default :data:`PLAUSIBLE_Z`'s two-sided level split
        over the W windows (Bonferroni): one window in W at that level would exclude
        a shape that holds too often (about 19 % of t_s(6) sets with four windows).
    """
    kw = np.asarray(kappa_windows, dtype=np.float64)
    if kw.size < 2:
        return True
    if z is None:
        z = float(norm.isf(norm.sf(PLAUSIBLE_Z) / kw.size))
    se = kappa_cs_z2_se_of_t(nu, np.asarray(n_windows, dtype=np.float64))
    with np.errstate(invalid="ignore"):
        return not bool(np.any(np.abs(kw - kappa_cs_z2_of_t(nu)) > z * se))


def z_in_local_bins(E, uE, n_bins=None):
    """Z = E/uE in the stable order of uE, and the edges of the equal-count local bins.

    The one preparation of :func:`kappa_cs_z2_local` and
    :func:`uqx.engine.null_body.log_abs_z_spread_local`:
    no order is built when uE is already sorted (rows in content order); otherwise the
    division runs in blocks, so that no third array of M values is held. Fewer rows than
    a bin's minimum (:data:`uqx.engine.defaults.POP_MIN`) give one bin.

    Returns
    -------
    z : numpy.ndarray, shape (M,)
        A new array (the caller may modify it).
    edges : numpy.ndarray of int
        Bin boundaries (:func:`uqx.engine.binning.equal_count_edges` of
        :func:`uqx.engine.defaults.local_bins` bins unless ``n_bins``).
    """
    E = np.asarray(E, dtype=np.float64)
    u = np.asarray(uE, dtype=np.float64)
    M = E.shape[0]
    if is_nondecreasing(u):  # rows in content order: the order is the identity
        z = np.divide(E, u)
    else:
        order = stable_order(u)
        z = np.take(E, order)
        for lo in range(0, M, 1 << 20):  # no third array of M values
            z[lo:lo + (1 << 20)] /= u[order[lo:lo + (1 << 20)]]
        del order
    nb = local_bins(M) if n_bins is None else int(n_bins)
    edges = equal_count_edges(M, nb) if M >= POP_MIN else np.array([0, M])
    return z, edges


# ------------------------------------------------------------- tails of the data's Z
def kappa_cs_z2_of_t(nu):
    r"""Crow–Siddiqui excess kurtosis of Z² for Z ~ t(ν) (scale-free; ν = inf: normal).

    With :math:`q(p) = F_t^{-1}((1 + p)/2; \nu)^2` the quantile of Z²,
    :math:`\kappa_{CS} = [q(0.975) - q(0.025)] / [q(0.75) - q(0.25)] - 2.91`
    (001 Eq. 12, the metric :func:`uqx.engine.stats.tailedness.kappa_cs` estimates).
    """
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


def tails_reach_limit(M, *, z: float = TAILS_REACH_Z, nu_min: float = NU_MIN) -> np.ndarray:
    r"""Largest sample κ_CS of Z² that excludes tails as heavy as those of t_s(ν_min).

    :math:`\kappa(\nu_{min}) - z\,s(\nu_{min}, M)` (:func:`kappa_cs_z2_of_t`,
    :func:`kappa_cs_z2_se_of_t`): the one-sided test of "the tails are at least as heavy as
    those of the family's heaviest member" rejects below it. 6.26 − z·42.9/√M for
    ν_min = 3: 3.2 at M = 200, 4.3 at M = 500, 5.3 at M = 2000 (z = 1).

    Parameters
    ----------
    M : array_like
        Sample sizes.
    z : float
        Standard errors (default :data:`TAILS_REACH_Z`).
    nu_min : float
        The heaviest member's degrees of freedom.
    """
    if np.ndim(M) == 0:  # asked once per set and statistic: the same few sizes
        return _reach_limit_one(float(M), float(z), float(nu_min))
    M = np.asarray(M, dtype=np.float64)
    return kappa_cs_z2_of_t(nu_min) - z * kappa_cs_z2_se_of_t(nu_min, M)


@lru_cache(maxsize=1024)
def _reach_limit_one(M: float, z: float, nu_min: float):
    """:func:`tails_reach_limit` of one sample size (the same arithmetic, kept)."""
    return kappa_cs_z2_of_t(nu_min) - z * kappa_cs_z2_se_of_t(nu_min, np.float64(M))


def tails_within_reach(kappa_cs_z2, M, *, z: float = TAILS_REACH_Z,
                       nu_min: float = NU_MIN) -> np.ndarray:
    r"""Whether the data show tails lighter than the family's heaviest member.

    The null family reaches :math:`t_s(3)` at its heaviest. A small sample of errors with
    heavier tails (:math:`t_s(2.5)`, say) that misses its rare extremes looks lighter
    and has a small ⟨Z²⟩; every member then rejects it, though it is calibrated. An
    ``invalid`` of a statistic of Z² is a claim under every member only where the data
    exclude such tails: :math:`\hat\kappa < ` :func:`tails_reach_limit` (a one-sided test
    of ν ≤ ν_min at level :math:`\Phi(-z)`, 16 % for z = 1). At M = 2000 the limit
    (5.3) is above the safety limit 5 of 001 Table II, which then decides alone.

    Parameters
    ----------
    kappa_cs_z2 : array_like
        Sample κ_CS of Z² (:func:`kappa_cs_z2_local`).
    M : array_like
        Sample sizes.

    Returns
    -------
    numpy.ndarray of bool
        False where κ̂ does not exclude the heavier tails, or is NaN.
    """
    k = np.asarray(kappa_cs_z2, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        return k < tails_reach_limit(M, z=z, nu_min=nu_min)


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
        the scaled Z², sorted in place); 8 when uE is already sorted (rows in content
        order: no order).
    """
    z, edges = z_in_local_bins(E, uE, n_bins)
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        if hi > lo:
            seg = z[lo:hi]
            rms = np.sqrt(np.mean(seg * seg))
            if rms > 0:
                seg /= rms
    np.multiply(z, z, out=z)
    z.sort()
    return float(sorted_tailedness(z, kappa=True)[1])


def kappa_cs_z2_windows(E_sorted, u_sorted, seg, groups):
    r"""κ_CS of Z² in each window of bins of uE, Z scaled within each bin first.

    :func:`kappa_cs_z2_local` window by window: the errors' shape at each level of uE,
    the input of the fitted member's ν per window (:func:`nu_windows`) and of the
    screening of the fixed members window by window (:func:`plausible_members` with
    ``windows``). Consistency is calibration of the variance at every uE *whatever the
    shape*: errors normal for small uE and heavier-tailed for large uE are consistent,
    and a member with one ν for every uE is no null for them.

    Parameters
    ----------
    E_sorted, u_sorted : array_like, shape (M,)
        Errors and uncertainties in the (stable) uE order. ``u_sorted`` None: ``E_sorted``
        is a float64 array of Z that the caller owns, scaled, squared and sorted in place
        window by window (no copy of a window).
    seg : array_like of int, shape (S + 1,)
        Bins of uE (index intervals of that order).
    groups : array_like of int, shape (W + 1,)
        Window boundaries, a subset of ``seg`` (:func:`local_windows`).

    Returns
    -------
    kappa, n : numpy.ndarray, shape (W,)
        κ_CS of the window's scaled Z² (NaN for a window of fewer than 2 points, or
        without spread) and its number of points. Memory: one window's Z at a time.
    """
    seg = np.asarray(seg, dtype=np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    kappa = np.full(groups.size - 1, np.nan)
    for w, (a, b) in enumerate(zip(groups[:-1], groups[1:], strict=True)):
        if b - a < 2:
            continue
        if u_sorted is None:  # E_sorted holds the caller's own Z: scaled in place
            z = E_sorted[a:b]
        else:
            z = np.divide(np.asarray(E_sorted[a:b], dtype=np.float64),
                          np.asarray(u_sorted[a:b], dtype=np.float64))
        inner = seg[(seg >= a) & (seg <= b)]
        for lo, hi in zip(inner[:-1], inner[1:], strict=True):
            part = z[lo - a:hi - a]
            rms = np.sqrt(np.mean(part * part)) if hi > lo else 0.0
            if rms > 0:
                part /= rms
        np.multiply(z, z, out=z)
        z.sort()
        if z[-1] > z[0]:
            kappa[w] = float(sorted_tailedness(z, kappa=True)[1])
    return kappa, np.diff(groups)


def kappa_cs_z2_halves(E, uE, n_bins: int | None = None):
    """κ_CS of Z² (scaled within the bins of uE) in the lower and the upper half of uE.

    The small-sample reach of the tails (:func:`tails_within_reach`) read half by half:
    errors whose shape changes with uE (heavier tails for the larger uE) can show light
    tails over the whole set while one half cannot, and a half that missed its extremes
    makes every member reject consistency on calibrated data. The halves split the
    uE order at M/2 (the local bin across it split in two, each part scaled on itself).

    Parameters
    ----------
    E, uE : array_like, shape (M,)
    n_bins : int, optional
        Local bins of uE.

    Returns
    -------
    kappa, n : numpy.ndarray, shape (2,)
        NaN with a single bin.
    """
    z, edges = z_in_local_bins(E, uE, n_bins)
    if z.size < 4:
        return np.full(2, np.nan), np.array([z.size, 0])
    mid = z.size // 2
    edges = np.unique(np.r_[edges, mid]).astype(np.int64)  # the bin across M/2 split
    groups = np.array([0, mid, z.size], dtype=np.int64)
    # z is this function's own: each half scaled, squared and sorted in place (Z / 1 is Z)
    return kappa_cs_z2_windows(z, None, edges, groups)


def nu_windows(kappa_windows, n_windows, nu_hat, *, nu_min: float = NU_MIN):
    r"""ν of the fitted member in each window, or None when one ν̂ fits every window.

    Errors whose shape changes with uE are consistent when E[Z² | uE] = 1; a member
    with one ν for every uE is then no null for the tests of consistency. Where some
    window's κ_CS of Z² excludes the set's ν̂ (:func:`one_shape`), each window takes
    the ν of its own tails (:func:`t_nu_from_tails` placed by :func:`nu_on_grid`, NaN
    windows the normal); otherwise the fitted member keeps ν̂, whose estimate from the
    whole set is the more precise (a window of 500 points places ν within a factor of
    two).

    Parameters
    ----------
    kappa_windows, n_windows : array_like, shape (W,)
        κ_CS of Z² and points per window (:func:`kappa_cs_z2_windows`).
    nu_hat : float
        The set's ν̂ (:func:`t_nu_from_tails` of :func:`kappa_cs_z2_local`, on the grid).
    nu_min : float
        Lower bound (:data:`NU_MIN`).

    Returns
    -------
    numpy.ndarray, shape (W,), or None
    """
    if one_shape(kappa_windows, n_windows, nu_hat):
        return None
    k = np.asarray(kappa_windows, dtype=np.float64)
    nu = nu_on_grid(t_nu_from_tails(np.where(np.isfinite(k), k, _KAPPA_NORMAL), nu_min=nu_min),
                    nu_min=nu_min)
    return np.asarray(nu, dtype=np.float64)
