"""Spearman's rank correlation CC of bootstrap count vectors and its exact jackknife.

The rank family of :class:`uqx.engine.evaluator.SetEvaluator`: a bootstrap replicate is
a vector of counts over the rows; its CC comes from the average ranks per tie group of
the counts, in two passes over the rows in the orders of uE and |E|
(:func:`spearman_from_counts`). The leave-one-out values follow the ±1, ±½ re-ranking
rule and are exact in O(M log M): suffix sums over the tie groups and a Fenwick tree for
the rows above in both orders (:func:`spearman_jackknife`). Every term is a multiple of
1/4 and every sum stays below 2^53, so the values equal the direct O(M²) re-ranking bit
for bit (the slow twin in the tests).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["spearman_from_counts", "spearman_jackknife", "tie_bounds", "average_ranks"]


@numba.njit(inline="always")
def _group_ranks(w, order, bounds, m, rank_out):
    """Centred average ranks of count-weighted samples per tie group; returns sum w·rank²."""
    cum = 0.0
    ss = 0.0
    for g in range(bounds.shape[0] - 1):
        lo, hi = bounds[g], bounds[g + 1]
        if hi - lo == 1:  # no tie: one row, the usual case
            i = order[lo]
            W = w[i] * 1.0
            rank = cum + (W + 1.0) / 2.0 - m
            cum += W
            ss += W * rank * rank
            rank_out[i] = rank
            continue
        W = 0.0
        for p in range(lo, hi):
            W += w[order[p]]
        rank = cum + (W + 1.0) / 2.0 - m
        cum += W
        ss += W * rank * rank
        for p in range(lo, hi):
            rank_out[order[p]] = rank
    return ss


@numba.njit(nogil=True, cache=True)
def spearman_from_counts(counts, ou, gu, oe, ge, out):
    r"""Spearman CC of count-weighted resamples (average ranks per tie group).

    .. math:: CC = \frac{\sum_i w_i r_{u,i} r_{E,i}}
                        {\sqrt{\sum_i w_i r_{u,i}^2 \sum_i w_i r_{E,i}^2}}

    with :math:`r` the centred average ranks of the resample. A group holding W drawn
    copies after ``cum`` smaller ones gets the average rank cum + (W+1)/2; the mean
    rank is (M+1)/2. Two passes a replicate: the ranks of u, then the ranks of |E| with
    Σ w·r_u·r_E in the same pass (the same terms in the same order as a third pass over
    the |E| order). Rows drawn zero times add nothing; a tie-free group (the usual case)
    skips the group loops.

    Parameters
    ----------
    counts : numpy.ndarray, shape (B, M), integer
        Times each row is drawn, one replicate per row of ``counts``.
    ou, oe : numpy.ndarray, shape (M,)
        Stable sort orders of u and |E|.
    gu, ge : numpy.ndarray, shape (G + 1,)
        Tie-group boundaries in those orders (:func:`tie_bounds`).
    out : numpy.ndarray, shape (B,)
        Receives CC of every replicate.
    """
    b, M = counts.shape
    m = (M + 1) / 2.0
    ru = np.empty(M)
    G_e = ge.shape[0] - 1
    for r in range(b):
        c = counts[r]
        sxx = _group_ranks(c, ou, gu, m, ru)
        cum = 0.0
        syy = 0.0
        sxy = 0.0
        for g in range(G_e):
            lo, hi = ge[g], ge[g + 1]
            if hi - lo == 1:
                i = oe[lo]
                W = c[i] * 1.0
                rank = cum + (W + 1.0) / 2.0 - m
                cum += W
                syy += W * rank * rank
                sxy += c[i] * ru[i] * rank
                continue
            W = 0.0
            for p in range(lo, hi):
                W += c[oe[p]]
            rank = cum + (W + 1.0) / 2.0 - m
            cum += W
            syy += W * rank * rank
            for p in range(lo, hi):
                i = oe[p]
                sxy += c[i] * ru[i] * rank
        den = sxx * syy  # 0 when u or |E| is constant: NaN, not ZeroDivisionError
        out[r] = sxy / np.sqrt(den) if den > 0.0 else np.nan


@numba.njit(nogil=True, cache=True)
def _group_sums(vals, order, bounds, gid, gsum):
    """Per tie group (in ``order``): group id of each row and the sum of ``vals``."""
    for g in range(bounds.shape[0] - 1):
        acc = 0.0
        for p in range(bounds[g], bounds[g + 1]):
            i = order[p]
            gid[i] = g
            acc += vals[i]
        gsum[g] = acc


@numba.njit(nogil=True, cache=True)
def _above(gsum, bounds):
    """Suffix sums over the groups above each group: Σ values, and rows."""
    G = gsum.shape[0]
    s_above = np.zeros(G)
    n_above = np.zeros(G)
    for g in range(G - 2, -1, -1):
        s_above[g] = s_above[g + 1] + gsum[g + 1]
        n_above[g] = n_above[g + 1] + (bounds[g + 2] - bounds[g + 1])
    return s_above, n_above


@numba.njit(nogil=True, cache=True)
def _spearman_jackknife_sorted(ru, re_, ou, gu, oe, ge):  # pragma: no cover - numba
    r"""Leave-one-out Spearman correlations of every sample, in O(M log M).

    Removing sample i lowers the average rank of every larger value by 1 and of every
    tied value by 1/2, and the mean rank to M/2. With :math:`A_j = r^u_j - M/2`,
    :math:`C_j = r^e_j - M/2` and the shifts :math:`\delta_j` (u) and
    :math:`\gamma_j` (|E|) in {0, 1/2, 1}:
    :math:`\sum_j (A_j - \delta_j)(C_j - \gamma_j) = \sum AC - \sum \delta C - \sum A\gamma
    + \sum \delta\gamma` (and the squares alike), less the j = i term. The one-sided
    sums come from suffix sums over the tie groups of each order; :math:`\sum_j
    \delta_j\gamma_j` counts the samples above i in both orders (a Fenwick tree over
    the |E| groups, filled by u groups from the top). Every term is a multiple of 1/4
    and every sum below :math:`2^{53}` for M up to about 2·10^5, so the sums are exact
    and the values are those of the direct O(M²) double loop (the slow twin in the
    tests), bit for bit.
    """
    M = ru.shape[0]
    m = M / 2.0
    A = ru - m
    C = re_ - m
    Gu, Ge = gu.shape[0] - 1, ge.shape[0] - 1
    gid_u = np.empty(M, dtype=np.int64)
    gid_e = np.empty(M, dtype=np.int64)
    uA, uC, eA, eC = np.empty(Gu), np.empty(Gu), np.empty(Ge), np.empty(Ge)
    _group_sums(A, ou, gu, gid_u, uA)
    _group_sums(C, ou, gu, gid_u, uC)
    _group_sums(A, oe, ge, gid_e, eA)
    _group_sums(C, oe, ge, gid_e, eC)
    uA_above, nu_above = _above(uA, gu)
    uC_above = _above(uC, gu)[0]
    eA_above, ne_above = _above(eA, ge)
    eC_above = _above(eC, ge)[0]
    sac = 0.0
    saa = 0.0
    scc = 0.0
    for j in range(M):
        sac += A[j] * C[j]
        saa += A[j] * A[j]
        scc += C[j] * C[j]
    # Σ_j δ_j γ_j = N(u>, e>) + N(u>, e=)/2 + N(u=, e>)/2 + N(u=, e=)/4
    dg = np.empty(M)
    tree = np.zeros(Ge + 1)  # Fenwick tree: rows of the u groups done, by |E| group
    done = 0
    for g in range(Gu - 1, -1, -1):
        lo, hi = gu[g], gu[g + 1]
        for p in range(lo, hi):
            i = ou[p]
            k = gid_e[i]
            le = 0.0  # rows above in u with |E| group <= k
            q = k + 1
            while q > 0:
                le += tree[q]
                q -= q & -q
            lt = 0.0  # ... with |E| group < k
            q = k
            while q > 0:
                lt += tree[q]
                q -= q & -q
            eq_same = 0.0
            gt_same = 0.0
            for p2 in range(lo, hi):  # the u tie group (usually i alone)
                k2 = gid_e[ou[p2]]
                if k2 == k:
                    eq_same += 1.0
                elif k2 > k:
                    gt_same += 1.0
            dg[i] = (done - le) + 0.5 * (le - lt) + 0.5 * gt_same + 0.25 * eq_same
        for p in range(lo, hi):
            q = gid_e[ou[p]] + 1
            while q <= Ge:
                tree[q] += 1.0
                q += q & -q
        done += hi - lo
    out = np.empty(M)
    for i in range(M):
        g, k = gid_u[i], gid_e[i]
        d_a = uA_above[g] + 0.5 * uA[g]  # Σ δ A
        d_c = uC_above[g] + 0.5 * uC[g]  # Σ δ C
        d_2 = nu_above[g] + 0.25 * (gu[g + 1] - gu[g])  # Σ δ²
        g_a = eA_above[k] + 0.5 * eA[k]  # Σ γ A
        g_c = eC_above[k] + 0.5 * eC[k]  # Σ γ C
        g_2 = ne_above[k] + 0.25 * (ge[k + 1] - ge[k])  # Σ γ²
        a = A[i] - 0.5  # the j == i term
        c = C[i] - 0.5
        sxy = sac - d_c - g_a + dg[i] - a * c
        sxx = saa - 2.0 * d_a + d_2 - a * a
        syy = scc - 2.0 * g_c + g_2 - c * c
        den = sxx * syy  # 0 when u or |E| is constant: NaN, not ZeroDivisionError
        out[i] = sxy / np.sqrt(den) if den > 0.0 else np.nan
    return out


def spearman_jackknife(ru, re_, ou, gu, oe, ge) -> np.ndarray:
    """Leave-one-out CC values (M,), exact, in O(M log M) (:func:`_spearman_jackknife_sorted`).

    Parameters
    ----------
    ru, re_ : numpy.ndarray, shape (M,)
        Average ranks (1-based) of u and |E| in file order.
    ou, oe : numpy.ndarray of int64, shape (M,)
        Stable sort orders of u and |E|; ``gu``, ``ge`` their tie-group boundaries.

    Returns
    -------
    numpy.ndarray, shape (M,)
        The CC of the sample without row i, for every i (the BCa acceleration's input).
    """
    return _spearman_jackknife_sorted(np.ascontiguousarray(ru, dtype=np.float64),
                                      np.ascontiguousarray(re_, dtype=np.float64),
                                      ou, gu, oe, ge)


def tie_bounds(sorted_values):
    """Boundaries (G+1,) of runs of equal values in a sorted array."""
    change = np.flatnonzero(sorted_values[1:] != sorted_values[:-1]) + 1
    return np.r_[0, change, sorted_values.size].astype(np.int64)


def average_ranks(bounds):
    """Average ranks (1-based) of sorted positions given tie-group boundaries."""
    W = np.diff(bounds)
    return np.repeat(bounds[:-1] + (W + 1.0) / 2.0, W)
