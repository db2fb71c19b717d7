r"""Calibrated copies :math:`E = u\,\epsilon` of a data set, drawn and summarised in one pass.

The kernels under :func:`uqx.inference.reference.simulate_reference` (and so under every
Monte-Carlo test of :mod:`uqx.engine.mctest`): :func:`sim_rows` draws ε on a keyed
xoshiro256** stream, multiplies by u in the stable uE order, and adds the per-bin sums
of every binning without storing ε (the terms of :func:`uqx.engine.layout.copy_terms`);
:func:`copy_bin_features` turns those sums into the bin features of
:func:`uqx.engine.statistic.bin_features` (and :func:`copy_moment_features` into the
moment features); :func:`cc_fixed_u` gives the Spearman CC of each copy against the
fixed ranks of u, from one SIMD sort of packed keys per copy (:func:`sorted_keys`,
:func:`cc_rows`). Pure NumPy/numba over arrays.
"""

from __future__ import annotations

import numba
import numpy as np

from uqx.engine.layout import (
    B_E2,
    B_EC,
    B_EC2,
    B_U2,
    B_Z,
    B_Z2,
    C_EPS,
    C_EPS2,
    C_X,
    C_X2,
    add_copy_terms,
    add_copy_terms_at,
    copy_terms,
    no_copy_terms,
    put_copy_terms,
)
from uqx.engine.resample import lemire_threshold
from uqx.engine.statistic import (
    F_E2,
    F_LNU2,
    F_U2,
    F_Z,
    F_Z2,
    MOMENT_FEATURES,
)
from uqx.engine.unit_variance import Draw, unit_step

__all__ = ["sim_rows", "copy_bin_features", "copy_moment_features", "cc_fixed_u",
           "cc_scaled", "sorted_keys", "cc_rows"]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def sim_rows(state, code, d, c, h, pool, pu, pm, ps, segment_t, u, seg, binid, boff, out_seg,
             out_bin, buf, win):  # pragma: no cover - numba
    """Simulate ``k = out_seg.shape[0]`` calibrated copies ``E = u ε`` and sum them.

    One pass per copy over the M positions in the uE order, ε drawn on the fly
    (:func:`uqx.engine.unit_variance.unit_step`, row after row on one stream: the
    same draws as :func:`uqx.engine.unit_variance.draw_unit`). Per segment
    ``[seg[s], seg[s+1])`` of that order (the uE bins, or the whole set)
    ``out_seg[r, s] = (Σε², Σ(uε)², Σuε, Σε)``; per bin ``b`` of every other binning
    ``c`` (``binid[c, i]``: bin of position i, offsets ``boff``) the same four sums in
    ``out_bin[r, boff[c] + b]``. The first ``buf.shape[0]`` copies also
    keep ε in ``buf`` (rank statistics, the extrapolation nulls); nothing else is stored.

    Parameters
    ----------
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** state, advanced in place (the next call continues the stream).
    code, d, c, h, pool, pu, pm, ps, segment_t
        The generator (:class:`uqx.engine.unit_variance.UnitArgs`, ``code`` a
        :class:`~uqx.engine.unit_variance.Draw`; NORMAL, STUDENT, POOL and POOL_COMPUTED
        as :func:`uqx.engine.unit_variance.unit_step`, with ``pm[0]``, ``ps[0]``).
        POOL_IN_WINDOWS: the data's z-scores resampled *locally*: the values of segment
        ``s`` are drawn from ``pool[win[s, 0]:win[s, 1]]`` (``pool`` in the uE order, each
        window standardised on its own, :func:`uqx.engine.null_shape.standardised_z_local`):
        copies that keep the shape of the errors at each level of uE (consistency's null,
        whatever that shape). POOL_COMPUTED_IN_WINDOWS: the same draws with those values
        computed when drawn, from E = ``pool`` and uE = ``pu`` in the uE order,
        ``(E_j / u_j - pm[s]) / ps[s]`` (0.0 where ``ps[s]`` is not > 0; ``pm``, ``ps`` the
        centre and scale of segment s's window,
        :class:`uqx.engine.null_shape.StandardisedPool`): no pool of M values.
        STUDENT_PER_SEGMENT: unit-variance t_s(ν_s) with one ν per segment (the fitted
        member per window of uE), its constants ``(d, c, h) = segment_t[s]``: with one ν
        for every segment, the draws of STUDENT.
    u : numpy.ndarray, shape (M,)
        Uncertainties in the stable uE order.
    seg : numpy.ndarray of int64, shape (S + 1,)
        Segment boundaries in that order.
    binid : numpy.ndarray of int32, shape (C, M)
        Bin of each position for the other binnings; ``boff`` (C,) their offsets.
    out_seg, out_bin : numpy.ndarray, shape (k, S, 4) and (k, B, 4)
        Filled with the sums (``out_bin`` must start at zero).
    buf : numpy.ndarray, shape (k_keep, M)
        Receives ε of the first ``k_keep`` copies.
    win : numpy.ndarray of int64, shape (S, 2)
        The window of each segment for the draws in windows (ignored otherwise: shape
        (0, 2)).
    """
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    n = np.uint64(max(pool.shape[0], 1))
    th = lemire_threshold(n)
    C = binid.shape[0]
    m0, sc0 = pm[0], ps[0]
    for r in range(out_seg.shape[0]):
        keep = r < buf.shape[0]
        pend, have = np.uint64(0), False
        for s in range(seg.shape[0] - 1):
            # two sets of accumulators (even / odd positions): the additions of
            # neighbouring values do not wait on each other (~1 ns per value less)
            even = no_copy_terms()
            odd = no_copy_terms()
            i0, i1 = seg[s], seg[s + 1]
            if code == Draw.POOL_IN_WINDOWS or code == Draw.POOL_COMPUTED_IN_WINDOWS:
                # the z-scores resampled within the segment's window
                w0, w1 = win[s, 0], win[s, 1]
                p, q = pool[w0:w1], pu[w0:w1]
                if code == Draw.POOL_IN_WINDOWS:
                    cd, mm, sc = Draw.POOL, m0, sc0
                else:  # computed from E, uE when drawn: the window's centre and scale
                    cd, mm, sc = Draw.POOL_COMPUTED_IN_WINDOWS, pm[s], ps[s]
                nn = np.uint64(max(w1 - w0, 1))
                tt = lemire_threshold(nn)
                pend, have = np.uint64(0), False
            else:
                p, q = pool[0:pool.shape[0]], pu[0:pu.shape[0]]  # one array type
                cd, mm, sc, nn, tt = code, m0, sc0, n, th
            dd, cc_, hh = d, c, h
            if code == Draw.STUDENT_PER_SEGMENT:  # t_s with this segment's ν
                cd = Draw.STUDENT
                dd, cc_, hh = segment_t[s, 0], segment_t[s, 1], segment_t[s, 2]
            if C == 0 and not keep:  # the common case: nothing but the sums
                for i in range(i0, i1 - 1, 2):
                    e, s0, s1, s2, s3, pend, have = unit_step(
                        cd, s0, s1, s2, s3, dd, cc_, hh, p, q, mm, sc, nn, tt, pend, have)
                    f, s0, s1, s2, s3, pend, have = unit_step(
                        cd, s0, s1, s2, s3, dd, cc_, hh, p, q, mm, sc, nn, tt, pend, have)
                    even = add_copy_terms(even, copy_terms(e, u[i]))
                    odd = add_copy_terms(odd, copy_terms(f, u[i + 1]))
                if (i1 - i0) & 1:
                    e, s0, s1, s2, s3, pend, have = unit_step(
                        cd, s0, s1, s2, s3, dd, cc_, hh, p, q, mm, sc, nn, tt, pend, have)
                    even = add_copy_terms(even, copy_terms(e, u[i1 - 1]))
                put_copy_terms(out_seg, r, s, add_copy_terms(even, odd))
                continue
            for i in range(i0, i1 - 1, 2):
                e, s0, s1, s2, s3, pend, have = unit_step(
                    cd, s0, s1, s2, s3, dd, cc_, hh, p, q, mm, sc, nn, tt, pend, have)
                f, s0, s1, s2, s3, pend, have = unit_step(
                    cd, s0, s1, s2, s3, dd, cc_, hh, p, q, mm, sc, nn, tt, pend, have)
                t = copy_terms(e, u[i])
                for cc in range(C):
                    add_copy_terms_at(out_bin, r, boff[cc] + binid[cc, i], t)
                if keep:
                    buf[r, i] = e
                t2 = copy_terms(f, u[i + 1])
                for cc in range(C):
                    add_copy_terms_at(out_bin, r, boff[cc] + binid[cc, i + 1], t2)
                if keep:
                    buf[r, i + 1] = f
                even = add_copy_terms(even, t)
                odd = add_copy_terms(odd, t2)
            if (i1 - i0) & 1:
                e, s0, s1, s2, s3, pend, have = unit_step(
                    cd, s0, s1, s2, s3, dd, cc_, hh, p, q, mm, sc, nn, tt, pend, have)
                t = copy_terms(e, u[i1 - 1])
                for cc in range(C):
                    add_copy_terms_at(out_bin, r, boff[cc] + binid[cc, i1 - 1], t)
                if keep:
                    buf[r, i1 - 1] = e
                even = add_copy_terms(even, t)
            put_copy_terms(out_seg, r, s, add_copy_terms(even, odd))
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


def copy_bin_features(sums, u2, n, tot_x, M, g=None):
    """Per-bin sums (k, N, 6) of the bin features from the kernel's (Σε², Σx², Σx, Σε).

    Features of :func:`uqx.engine.statistic.bin_features` with ``x = E = uε``, ``z = ε`` and
    ``E`` centred on the copy's mean ``m = ΣE/M``: ``Σ(E-m) = ΣE - n m`` and
    ``Σ(E-m)² = ΣE² - 2mΣE + n m²``. With ``g``, the errors of bin s are first multiplied
    by ``g[..., s]`` (the alternatives of :mod:`uqx.engine.alternative`): the first two
    sums by g², the others by g (:func:`uqx.engine.resolution.top_bin_factors`,
    :func:`uqx.engine.resolution.spread_bin_factors`), without a scaled copy of the sums.

    Parameters
    ----------
    sums : numpy.ndarray, shape (k, N, 4)
        (Σε², Σx², Σx, Σε) per copy and bin (:func:`sim_rows`).
    u2 : numpy.ndarray, shape (N,)
        Σu² per bin; ``n`` (N,) the bin counts.
    tot_x : numpy.ndarray, shape (k,), or None
        ΣE of each whole copy (None: summed over the bins); ``M`` its size.
    g : numpy.ndarray, shape (N,) or (F, N), optional
        Factors of the errors per bin.

    Returns
    -------
    numpy.ndarray, shape (k, N, 6), or (F, k, N, 6) with a 2-d ``g``
    """
    if g is None:
        e2, x2, x, e = (sums[..., c] for c in (C_EPS2, C_X2, C_X, C_EPS))
    else:
        gg = np.asarray(g, dtype=np.float64)[..., None, :]  # (..., 1, N) against (k, N)
        e2, x2 = sums[..., C_EPS2] * gg * gg, sums[..., C_X2] * gg * gg
        x, e = sums[..., C_X] * gg, sums[..., C_EPS] * gg
    if tot_x is None:
        tot_x = x.sum(axis=-1)
    m = (tot_x / M)[..., None]
    S = np.empty(e2.shape + (6,))
    S[..., B_U2] = u2
    S[..., B_E2] = x2
    S[..., B_Z2] = e2
    S[..., B_EC] = x - n * m
    S[..., B_EC2] = x2 - 2.0 * m * x + n * m * m
    S[..., B_Z] = e
    return S


def copy_moment_features(tot, sum_u2, sum_lnu2):
    """Return the sums (k, 5) of the moment features of whole copies (from sim_rows).

    The features of :data:`uqx.engine.statistic.MOMENT_FEATURES` with ``z = ε`` and
    ``E = uε``; the ones of u alone are the same for every copy.

    Parameters
    ----------
    tot : numpy.ndarray, shape (k, 4)
        (Σε², Σx², Σx, Σε) of each whole copy (:func:`sim_rows`).
    sum_u2, sum_lnu2 : float or numpy.ndarray, shape (k,)
        Σu² and Σ ln u² of the set.

    Returns
    -------
    numpy.ndarray, shape (k, 5)
        For ``STATISTICS[name].finish(S, M)``.
    """
    S = np.empty((tot.shape[0], len(MOMENT_FEATURES)))
    S[:, F_Z2] = tot[:, C_EPS2]
    S[:, F_U2] = sum_u2
    S[:, F_E2] = tot[:, C_X2]
    S[:, F_Z] = tot[:, C_EPS]
    S[:, F_LNU2] = sum_lnu2
    return S


@numba.njit(nogil=True, cache=True)
def cc_rows(ae, keys, shift, ru, out, tied):  # pragma: no cover - numba
    r"""Spearman CC of each row of |E| against fixed centred ranks ``ru``, from sorted keys.

    ``keys[r]`` holds row r's packed keys sorted: the bits of |E| (non-negative floats
    order like their bit patterns) with the low ``shift`` bits replaced by the position.
    Values equal in the kept bits come out in position order, so one insertion pass on
    the exact values restores the exact order (linear: only such near-ties move). Tied
    values get their average rank, and the CC is then Pearson's of the ranks,
    :math:`\sum r_E r_u / \sqrt{\sum r_E^2 \sum r_u^2}` (as :func:`scipy.stats.spearmanr`);
    without ties :math:`\sum r_E^2 = M(M^2-1)/12`.

    Parameters
    ----------
    ae : numpy.ndarray, shape (k, M)
        |E| of each copy; ``keys``, ``shift`` from :func:`sorted_keys`.
    ru : numpy.ndarray, shape (M,)
        Centred average ranks of u.
    out : numpy.ndarray, shape (k,)
        Receives the CC (NaN for a constant row); ``tied`` (k,) bool, the rows with tied
        values.
    """
    k, M = ae.shape
    sum_ru2 = np.sum(ru * ru)
    denom = np.sqrt(sum_ru2 * M * (M * M - 1.0) / 12.0)
    c = (M - 1) / 2.0
    mask = (np.uint64(1) << np.uint64(shift)) - np.uint64(1)
    order = np.empty(M, dtype=np.int64)
    vals = np.empty(M)
    for r in range(k):  # serial: the callers run in parallel (dask tasks)
        for i in range(M):
            j = np.int64(keys[r, i] & mask)
            v = ae[r, j]
            p = i
            while p > 0 and vals[p - 1] > v:
                order[p] = order[p - 1]
                vals[p] = vals[p - 1]
                p -= 1
            order[p] = j
            vals[p] = v
        acc = 0.0
        sum_re2 = 0.0
        t = False
        i = 0
        while i < M:
            last = i  # the run of values equal to vals[i]: one average rank
            while last + 1 < M and vals[last + 1] == vals[i]:
                last += 1
            re = (i + last) / 2.0 - c
            for q in range(i, last + 1):
                acc += re * ru[order[q]]
            if last > i:
                t = True
            sum_re2 += re * re * (last - i + 1)
            i = last + 1
        tied[r] = t
        if not t:
            out[r] = acc / denom
        elif sum_re2 > 0.0 and sum_ru2 > 0.0:
            out[r] = acc / np.sqrt(sum_re2 * sum_ru2)
        else:
            out[r] = np.nan


@numba.njit(nogil=True, cache=True)
def cc_rows_distinct(keys, shift, ru, out, near):  # pragma: no cover - numba
    """Spearman CC of each row from its sorted keys alone, where the keys order it exactly.

    A key's bits above ``shift`` are those of |E|: two keys that differ there order their
    values exactly, so a row whose adjacent sorted keys all differ there is in its exact
    order and its CC is the sum of :func:`cc_rows` without reading |E| (the same sums in
    the same order: the same bits). Rows with an adjacent pair equal there (near-ties,
    about one row in a thousand at M = 14 000; every row of resampled data) are flagged in
    ``near`` and left to :func:`cc_rows`.
    """
    k, M = keys.shape
    denom = np.sqrt(np.sum(ru * ru) * M * (M * M - 1.0) / 12.0)
    c = (M - 1) / 2.0
    sh = np.uint64(shift)
    mask = (np.uint64(1) << sh) - np.uint64(1)
    for r in range(k):
        acc = 0.0
        flag = False
        prev = keys[r, 0] >> sh
        for i in range(M):
            key = keys[r, i]
            hi = key >> sh
            if i > 0 and hi == prev:
                flag = True
                break
            prev = hi
            acc += (i - c) * ru[np.int64(key & mask)]
        near[r] = flag
        out[r] = acc / denom


def key_shift(M: int) -> int:
    """Bits of a position among ``M`` in a packed key (:func:`sorted_keys`), at least 1."""
    return max(1, int(M - 1).bit_length())


def sorted_keys(ae):
    """Row-wise sorted packed keys of non-negative ``ae`` and the bits of the position.

    One ``np.sort`` of 64-bit integers (NumPy's SIMD sort, about 3.5x faster than
    ``argsort`` of the floats at M = 20000) in place of an argsort per row.

    Parameters
    ----------
    ae : numpy.ndarray, shape (k, M)
        Non-negative float64 values.

    Returns
    -------
    keys : numpy.ndarray of uint64, shape (k, M)
        Sorted rows of (value bits above ``shift``) | position.
    shift : int
        Bits of the position.
    """
    M = ae.shape[-1]
    shift = key_shift(M)
    keys = ae.view(np.uint64) >> np.uint64(shift)
    keys <<= np.uint64(shift)
    keys |= np.arange(M, dtype=np.uint64)
    keys.sort(axis=-1)
    return keys, shift


def cc_fixed_u(ae, ru):
    r"""Spearman CC of rows of |E| against fixed centred average ranks ``ru`` of u.

    Continuous simulated errors have no ties: the rank of a value is its position in one
    sort per row (:func:`sorted_keys`), accumulated against ``ru`` in numba from the keys
    alone (:func:`cc_rows_distinct`; :func:`cc_rows` reads |E| for the rows whose keys
    near-tie, and gives tied values their average rank, as
    :func:`scipy.stats.rankdata` does: discrete data, the resampled "data" member). Without
    ties the rank variance is M(M²-1)/12.

    Parameters
    ----------
    ae : array_like, shape (k, M) or (M,)
        |E| of each copy (non-negative, no NaN).
    ru : array_like, shape (M,)
        Centred average ranks of u, in the same layout.

    Returns
    -------
    numpy.ndarray, shape (k,)
        :math:`\rho_S(u, |E|)` of each row; NaN when u (or the row's |E|) is constant.
    """
    ae = np.ascontiguousarray(np.atleast_2d(ae), dtype=np.float64)
    if ae.size and not ae.min() >= 0.0:
        raise ValueError("cc_fixed_u needs non-negative, non-NaN |E|")
    ru = np.ascontiguousarray(ru, dtype=np.float64)
    if not np.any(ru):  # u constant (every centred rank 0): the CC is undefined
        return np.full(ae.shape[0], np.nan)
    keys, shift = sorted_keys(ae)
    return _cc_of_sorted_keys(keys, shift, ru, lambda rows: ae[rows])


def _cc_of_sorted_keys(keys, shift, ru, values):
    """CC of each row from its sorted keys (:func:`cc_rows_distinct`), exact where they near-tie.

    ``values(rows)`` gives the values of the rows (a bool mask) whose keys near-tie, for
    :func:`cc_rows` (their exact order, tied values at their average rank).
    """
    out = np.empty(keys.shape[0])
    near = np.zeros(keys.shape[0], dtype=np.bool_)
    cc_rows_distinct(keys, shift, ru, out, near)
    if near.any():
        sub = np.empty(int(near.sum()))
        cc_rows(np.ascontiguousarray(values(near)), np.ascontiguousarray(keys[near]), shift,
                ru, sub, np.zeros(sub.size, dtype=np.bool_))
        out[near] = sub
    return out


@numba.njit(nogil=True, cache=True)
def _scaled_keys(eps, w, shift):  # pragma: no cover - numba
    """Packed keys of ``|eps * w|`` (:func:`sorted_keys` before its sort), in one pass.

    Returns the (k, M) keys and whether every value was non-negative (no NaN).
    """
    k, M = eps.shape
    ae = np.empty((k, M))
    keys = ae.view(np.uint64)  # the same memory: a value's bits, then its key
    sh = np.uint64(shift)
    ok = True
    for r in range(k):
        for i in range(M):
            v = abs(eps[r, i] * w[i])
            if not v >= 0.0:
                ok = False
            ae[r, i] = v
        for i in range(M):
            keys[r, i] = ((keys[r, i] >> sh) << sh) | np.uint64(i)
    return keys, ok


def cc_scaled(eps, w, ru):
    r"""Spearman CC of rows of :math:`|\epsilon\,w|` against fixed centred ranks ``ru``.

    The same numbers as ``cc_fixed_u(np.abs(eps * w), ru)`` (:func:`cc_fixed_u`), with
    the product, its absolute value and the packed keys written in one pass instead of
    six: the copies' CC, :math:`w = u` in the uE order, and their CC under the spread
    alternative, :math:`w = u_E^\gamma`, one sort per row each.

    Parameters
    ----------
    eps : array_like, shape (k, M)
        Unit draws of each copy (finite).
    w : array_like, shape (M,)
        Positive scale of each position.
    ru : array_like, shape (M,)
        Centred average ranks of u, in the same layout.

    Returns
    -------
    numpy.ndarray, shape (k,)
    """
    eps = np.ascontiguousarray(np.atleast_2d(eps), dtype=np.float64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    ru = np.ascontiguousarray(ru, dtype=np.float64)
    if not np.any(ru):  # u constant (every centred rank 0): the CC is undefined
        return np.full(eps.shape[0], np.nan)
    shift = key_shift(eps.shape[-1])
    keys, ok = _scaled_keys(eps, w, shift)
    if not ok:
        raise ValueError("cc_scaled needs finite draws and non-negative, non-NaN scales")
    keys.sort(axis=-1)
    return _cc_of_sorted_keys(keys, shift, ru, lambda rows: np.abs(eps[rows] * w))
