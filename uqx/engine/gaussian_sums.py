r"""Calibrated copies of large bins as joint-normal per-bin sums: O(bins) a copy, not O(M).

A binned or moment statistic of a calibrated copy :math:`E_i = u_i\epsilon_i` (ε i.i.d.
from the member D of the null family) needs only, per bin (or for the whole set), the
four sums :math:`T = (\sum\epsilon^2, \sum u^2\epsilon^2, \sum u\epsilon, \sum\epsilon)`
that :func:`uqx.engine.copies.sim_rows` adds while it draws every ε. With the raw
moments :math:`\mu_k = E[\epsilon^k]` of D, the row vector
:math:`w = (\epsilon^2, \epsilon)` has mean :math:`m = (\mu_2, \mu_1)` and covariance
:math:`C = \begin{pmatrix}\mu_4-\mu_2^2 & \mu_3-\mu_1\mu_2\\ \cdot & \mu_2-\mu_1^2
\end{pmatrix}`, and :math:`T = \sum_i A_i w_i` with
:math:`A_i = \begin{pmatrix}1&u_i^2&0&0\\0&0&u_i&1\end{pmatrix}^\top`, so

.. math::

    E[T] = (n\mu_2,\ U_2\mu_2,\ U_1\mu_1,\ n\mu_1),\qquad
    \mathrm{Cov}(T) = \begin{pmatrix}
      nC_{11} & U_2C_{11} & U_1C_{12} & nC_{12}\\
      & U_4C_{11} & U_3C_{12} & U_2C_{12}\\
      & & U_2C_{22} & U_1C_{22}\\
      & & & nC_{22}\end{pmatrix},\qquad U_p = \textstyle\sum_i u_i^p.

By the central limit theorem T is close to jointly normal when the bin holds many
points, and a copy is then :math:`T = E[T] + L z` with :math:`LL^\top = \mathrm{Cov}(T)`
and four standard normal draws z per bin (:func:`gauss_rows`): the covariance is exact,
only the shape of the law is approximated. With several binnings (bins of X or V
beside those of uE) the draws are made per *cell* of their common refinement and added
up, so every binning's sums keep their exact joint covariance.

**When it is used** (:func:`gaussian_plan`). The error of the normal law of a sum
:math:`S=\sum_i a_iY_i` is, to first order (Edgeworth), :math:`\gamma_S (x^2-1)\phi(x)/6`
in probability, at most :math:`|\gamma_S|\,\phi(0)/6`, with the skewness
:math:`\gamma_S = \sum_i a_i^3\kappa_3(Y_i)/(\sum_i a_i^2\kappa_2(Y_i))^{3/2}`. A
statistic averages N bin terms, each a smooth function of its bin's sums, whose mean has
the skewness :math:`\overline{|\gamma_b|}/\sqrt N` (N = 1 for the whole set). The plan is
made only when that bound is at most ``tol`` (default :data:`GAUSS_TOL` = 0.002 in
probability, a third of the Monte-Carlo noise of a p-value of 0.05 from 1000 copies) for
every component of T, for the whole set and for every binning (the segments, the other
binnings, the partitions of a sweep), so it needs the sixth moment of D: N(0, 1)
(:math:`\gamma_{\epsilon^2} = 2\sqrt2`, about 9000 points for the whole set),
:math:`t_s(\nu)` with ν > 6 only, and a resampled pool whose own sixth moment is small
enough (the data's z-scores: a few large values make it large, and their copies are then
drawn in full). :math:`t_s(6)` and heavier, whose sums approach the normal law slowly
(a single large draw dominates the tail), are always drawn in full. The measured error
of the plan against full draws is in ``benchmarks/README.md`` (``bench_gaussian_sums.py``).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from uqx.engine.generators import normal_step
from uqx.engine.null_shape import StandardisedPool

__all__ = ["GAUSS_TOL", "unit_moments", "cell_layout", "gaussian_plan", "gauss_rows"]

#: Largest first-order Edgeworth error (in probability) of the normal law of a copy's
#: per-bin sums for which :func:`gaussian_plan` replaces full draws.
GAUSS_TOL = 0.002

_PHI0_6 = 1.0 / (6.0 * math.sqrt(2.0 * math.pi))  # φ(0)/6


def unit_moments(dist, nu=None, pool=None, windows=None):
    r"""Raw moments :math:`\mu_1..\mu_6` of a unit-variance member D (None: not finite).

    ``"normal"``: (0, 1, 0, 3, 0, 15); ``"t"`` (unit-variance :math:`t_s(\nu)`):
    :math:`\mu_4 = 3(\nu-2)/(\nu-4)`, :math:`\mu_6 = 15(\nu-2)^2/((\nu-4)(\nu-6))`, finite
    for ν > 6 only (``nu = inf``: the normal); ``"data"``: the moments of the resampled
    values, one row per window ``pool[w0:w1]`` when ``windows`` (S, 2) is given:
    :math:`\mu_k = \sum_j p_j^k / n` over the window, summed chunk by chunk. ``pool``
    may be a :class:`~uqx.engine.null_shape.StandardisedPool` (the values computed from
    E and uE chunk by chunk: the same bits, nothing of size M).

    Returns
    -------
    numpy.ndarray of shape (6,) or (S, 6), or None
    """
    if dist == "normal" or (dist == "t" and math.isinf(float(nu))):
        return np.array([0.0, 1.0, 0.0, 3.0, 0.0, 15.0])
    if dist == "t":
        nu = float(nu)
        if not nu > 6.0:
            return None
        return np.array([0.0, 1.0, 0.0, 3.0 * (nu - 2.0) / (nu - 4.0), 0.0,
                         15.0 * (nu - 2.0) ** 2 / ((nu - 4.0) * (nu - 6.0))])
    if not isinstance(pool, StandardisedPool):
        pool = np.asarray(pool, dtype=np.float64)
    if windows is None:
        windows = np.array([[0, pool.size]])
        one = True
    else:
        one = False
    out = np.empty((len(windows), 6))
    for s, (w0, w1) in enumerate(windows):
        out[s] = _power_sums(pool, w0, w1, 1.0, (1, 2, 3, 4, 5, 6)) / max(w1 - w0, 1)
    return out[0] if one else out


#: Rows per chunk of the power sums (a few MB of temporaries, whatever M).
_CHUNK = 1 << 18


def _power_sums(x, lo, hi, scale, powers):
    """Σ (x/scale)^p over x[lo:hi] for each p, chunk by chunk (no temporary of size M).

    ``x`` an array or a :class:`~uqx.engine.null_shape.StandardisedPool` (its values
    computed chunk by chunk).
    """
    acc = np.zeros(len(powers))
    fly = isinstance(x, StandardisedPool)
    for c0 in range(lo, hi, _CHUNK):
        c1 = min(c0 + _CHUNK, hi)
        if fly:
            v = x.values(c0, c1)
            v /= scale  # in place: the bits of x[c0:c1] / scale
        else:
            v = x[c0:c1] / scale
        q = v.copy()
        k = 1
        for j, p in enumerate(powers):
            while k < p:
                q *= v
                k += 1
            acc[j] += q.sum()
    return acc


def cell_layout(u_sorted, seg, binid, boff, bounds=None):
    """Cells of the common refinement of the segments, extra bounds and other binnings.

    Parameters
    ----------
    u_sorted : numpy.ndarray, shape (M,)
        Uncertainties in the stable uE order.
    seg : numpy.ndarray of int64, shape (S + 1,)
        Segment boundaries in that order (the bins of uE, or the whole set).
    binid : numpy.ndarray of int32, shape (C, M)
        Bin of each position for the other binnings (C may be 0); ``boff`` (C,) offsets.
    bounds : numpy.ndarray of int, optional
        More boundaries in the uE order (the bins of an extrapolation sweep): the
        *ranges* between consecutive boundaries of ``seg`` and ``bounds`` together.

    Returns
    -------
    dict
        ``bounds`` (R + 1,) the range boundaries; ``range`` (cells,) range of each cell,
        ``seg`` (cells,) its segment, ``bin`` (C, cells) its bin (with its offset) in
        every other binning; ``u`` (cells, 6): n, Σu, Σu², Σu³, Σu⁴, Σu⁶ per cell;
        ``range_u2`` (R,) Σu² per range.
    """
    M = u_sorted.size
    allb = seg if bounds is None else np.union1d(seg, np.asarray(bounds, dtype=np.int64))
    allb = np.asarray(allb, dtype=np.int64)
    R = allb.size - 1
    seg_of_range = np.searchsorted(seg, allb[:-1], side="right") - 1
    C = binid.shape[0] if binid.shape[1] == M else 0
    # powers of u / max(u): Σu⁶ of u = 1e140 would overflow (the plan scales back)
    scale = float(np.max(u_sorted))
    if C == 0:  # the cells are the ranges: sums over index intervals, no index per row
        U = np.empty((R, 6))
        U[:, 0] = np.diff(allb)
        for j in range(R):
            U[j, 1:] = _power_sums(u_sorted, allb[j], allb[j + 1], scale, (1, 2, 3, 4, 6))
        return {"bounds": allb, "range": np.arange(R, dtype=np.int64), "seg": seg_of_range,
                "bin": np.zeros((0, R), dtype=np.int64), "u": U, "scale": scale,
                "range_u2": U[:, 2] * scale**2}
    range_of = np.repeat(np.arange(R, dtype=np.int64), np.diff(allb))
    key = range_of.copy()
    for c in range(C):
        nb = int(binid[c].max()) + 1
        key = key * nb + binid[c]
    uniq, cell = np.unique(key, return_inverse=True)
    first = np.zeros(uniq.size, dtype=np.int64)
    first[cell[::-1]] = np.arange(M - 1, -1, -1)  # first position of each cell
    cell_range = range_of[first]
    cell_bin = np.stack([boff[c] + binid[c, first].astype(np.int64) for c in range(C)])
    n_cells = cell_range.size
    U = np.zeros((n_cells, 6))
    U[:, 0] = np.bincount(cell, minlength=n_cells)
    for c0 in range(0, M, _CHUNK):  # chunk by chunk: no temporary of size M
        sl = slice(c0, min(c0 + _CHUNK, M))
        v = u_sorted[sl] / scale
        for j, p in enumerate((1, 2, 3, 4, 6)):
            U[:, j + 1] += np.bincount(cell[sl], weights=v**p, minlength=n_cells)
    return {"bounds": allb, "range": cell_range, "seg": seg_of_range[cell_range],
            "bin": cell_bin, "u": U, "scale": scale,
            "range_u2": np.bincount(cell_range, weights=U[:, 2], minlength=R) * scale**2}


def _statistic_skew(k2, k3, a2, a3, groups, n_groups):
    r"""Skewness of the mean of a binning's bin terms: mean |γ_b| / √N.

    :math:`\gamma_b = \sum a^3\kappa_3 / (\sum a^2\kappa_2)^{3/2}` over the cells of bin
    b (bins with a zero variance left out); the mean of N independent terms of equal
    variance has the mean of their skewnesses over √N (N = 1: the bin's own).
    """
    num = np.bincount(groups, weights=a3 * k3, minlength=n_groups)
    den = np.bincount(groups, weights=a2 * k2, minlength=n_groups)
    ok = den > 0
    if not np.any(ok):
        return 0.0
    g = np.abs(num[ok]) / den[ok] ** 1.5
    return float(np.mean(g) / math.sqrt(g.size))


def gaussian_plan(layout, moments, *, n_bins_total=0, partitions=(), tol=None):
    r"""Mean and factor of the joint-normal per-cell sums, or None when not accurate.

    Parameters
    ----------
    layout : dict
        :func:`cell_layout`.
    moments : numpy.ndarray, shape (6,) or (S, 6), or None
        :func:`unit_moments` of the member (one row per segment for a local pool);
        None (a moment not finite): no plan.
    n_bins_total : int
        Bins of the other binnings (the criterion is checked in each of them too).
    partitions : sequence of numpy.ndarray
        Edges (positions in the uE order, on the layout's bounds) of more partitions
        whose every bin must meet the criterion (an extrapolation sweep).
    tol : float, optional
        Largest first-order Edgeworth error :math:`|\gamma_S|\phi(0)/6` allowed, for every
        component of T in every segment and every bin (default: :data:`GAUSS_TOL`, read
        at the call; 0 turns the plan off, ``inf`` forces it where the moments exist).

    Returns
    -------
    tuple of numpy.ndarray or None
        ``(mean (cells, 4), factor (cells, 4, 4))`` with factor·factorᵀ = Cov(T) per cell.
    """
    tol = GAUSS_TOL if tol is None else float(tol)
    if moments is None or not tol > 0:
        return None
    mu = np.atleast_2d(np.asarray(moments, dtype=np.float64))
    mu = mu[layout["seg"]] if mu.shape[0] > 1 else np.broadcast_to(mu, (layout["seg"].size, 6))
    m1, m2, m3, m4, _, m6 = (mu[:, k] for k in range(6))
    c11 = m4 - m2 * m2  # Var ε²
    c12 = m3 - m1 * m2  # Cov(ε², ε)
    c22 = m2 - m1 * m1  # Var ε
    k3_sq = m6 - 3.0 * m2 * m4 + 2.0 * m2**3  # third central moment of ε²
    k3_e = m3 - 3.0 * m1 * m2 + 2.0 * m1**3  # third central moment of ε
    if not (np.all(np.isfinite(k3_sq)) and np.all(c11 > 0) and np.all(c22 > 0)):
        return None
    U = layout["u"]
    n, U1, U2, U3, U4, U6 = (U[:, k] for k in range(6))
    n_cells = layout["seg"].size
    groups = [(np.zeros(n_cells, dtype=np.int64), 1),  # the whole set (moment statistics)
              (layout["seg"], int(layout["seg"].max()) + 1)]
    groups += [(b, n_bins_total) for b in layout["bin"]]
    start = layout["bounds"][layout["range"]]  # first position of each cell's range
    for edges in partitions:
        groups.append((np.searchsorted(edges, start, side="right") - 1, edges.size - 1))
    # components: Σε² (a = 1), Σu²ε² (a = u²) of Y = ε²; Σuε (a = u), Σε (a = 1) of Y = ε
    comps = [(c11, k3_sq, n, n), (c11, k3_sq, U4, U6), (c22, k3_e, U2, U3), (c22, k3_e, n, n)]
    worst = max(_statistic_skew(k2, k3, a2, a3, g, ng)
                for k2, k3, a2, a3 in comps for g, ng in groups)
    if worst * _PHI0_6 > tol:
        return None
    mean = np.stack([n * m2, U2 * m2, U1 * m1, n * m1], axis=1)
    cov = np.empty((n.size, 4, 4))
    cov[:, 0, 0], cov[:, 0, 1], cov[:, 0, 2], cov[:, 0, 3] = n * c11, U2 * c11, U1 * c12, n * c12
    cov[:, 1, 1], cov[:, 1, 2], cov[:, 1, 3] = U4 * c11, U3 * c12, U2 * c12
    cov[:, 2, 2], cov[:, 2, 3], cov[:, 3, 3] = U2 * c22, U1 * c22, n * c22
    iu = np.triu_indices(4, 1)
    cov[:, iu[1], iu[0]] = cov[:, iu[0], iu[1]]
    # factor V·√w from the eigen-decomposition (Cholesky fails on the singular
    # covariances of cells where u takes one value)
    w, V = np.linalg.eigh(cov)
    factor = V * np.sqrt(np.clip(w, 0.0, None))[:, None, :]
    # back to u = scale·v: T = D T_v with D = diag(1, scale², scale, 1)
    d = np.array([1.0, layout["scale"] ** 2, layout["scale"], 1.0])
    mean *= d
    factor *= d[:, None]
    return np.ascontiguousarray(mean), np.ascontiguousarray(factor)


@numba.njit(nogil=True, cache=True)
def gauss_rows(state, mean, factor, cell_range, cell_seg, cell_bin, out_range, out_seg,
               out_bin):  # pragma: no cover - numba
    """Add ``k = out_seg.shape[0]`` copies of the joint-normal per-cell sums.

    Copy r, cell j: four ziggurat normals z on the stream (s0..s3), in that order, and
    ``mean[j] + factor[j] @ z`` added to ``out_seg[r, cell_seg[j]]``, to
    ``out_bin[r, cell_bin[c, j]]`` for every other binning c, and to
    ``out_range[r, cell_range[j]]`` when ``out_range`` has ranges (shape (k, 0, 4):
    not wanted). All must start at zero; the stream state is advanced in place.
    """
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    C = cell_bin.shape[0]
    ranges = out_range.shape[1] > 0
    z = np.empty(4)
    for r in range(out_seg.shape[0]):
        for j in range(mean.shape[0]):
            for q in range(4):
                z[q], s0, s1, s2, s3 = normal_step(s0, s1, s2, s3)
            s = cell_seg[j]
            for p in range(4):
                v = mean[j, p]
                for q in range(4):
                    v += factor[j, p, q] * z[q]
                out_seg[r, s, p] += v
                for c in range(C):
                    out_bin[r, cell_bin[c, j], p] += v
                if ranges:
                    out_range[r, cell_range[j], p] += v
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
