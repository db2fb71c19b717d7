"""Bins as 0-based index intervals over the stably sorted conditioning variable.

Every binned analysis sorts the sample by a conditioning variable (``uE``, ``X`` or ``V``)
with a stable sort and cuts the sorted order into contiguous index intervals
(methods: bins). A binning is described by ``edges`` (int64, length N + 1): bin ``j`` holds
the sorted positions ``edges[j] <= k < edges[j + 1]``; ``edges[0] == 0`` and
``edges[-1] == n``. This reproduces ErrViewLib ``genIntervals`` (R, 1-based inclusive
``lwindx``/``upindx``): ``lwindx = edges[:-1] + 1`` and ``upindx = edges[1:]``.

Schemes
-------
equal-count
    :func:`equal_count_edges`, the Harrell–Davis breakpoints of ``genIntervals``
    (``equiPop = TRUE``, methods: bins).
equal-width
    :func:`equal_width_edges`, equal (log-)range intervals, empty bins allowed.
adaptive
    :func:`adaptive_edges`, equal (log-)range intervals with ErrViewLib's merge/split of
    small and large populations (``equiPop = FALSE``).
sliding
    :func:`sliding_windows`, overlapping windows of constant width (``slide = TRUE``).
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass
from functools import lru_cache

import numba
import numpy as np

from uqx.engine.defaults import POP_MIN, SCHEMES, TIES  # noqa: F401  (re-exported)
from uqx.engine.stats.tailedness import hd_window
from uqx.errors import InputError

__all__ = [
    "bin_sums",
    "SCHEMES",
    "Bins",
    "adaptive_edges",
    "equal_count_edges",
    "equal_width_edges",
    "make_bins",
    "reduce_n_bins",
    "sliding_windows",
    "sorted_edges",
    "stable_order",
    "content_order",
    "is_nondecreasing",
    "TIES",
]


# Breakpoints closer than this to an integer are taken as that integer (methods: bins).
_SNAP = 1e-9


def _check_int(value, name: str, *, minimum: int) -> int:
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise InputError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {value}")
    return value


@numba.njit(nogil=True, cache=True)
def _nondecreasing(x):  # pragma: no cover - numba
    for i in range(1, x.shape[0]):
        if not x[i - 1] <= x[i]:  # NaN anywhere: False
            return False
    return True


def is_nondecreasing(x) -> bool:
    """Whether ``x`` is already in ascending order (then ``stable_order(x)`` is the identity).

    One pass, no temporary (a 1-d float64 array; anything else is converted). Rows in
    content order (:func:`content_order`) are sorted by uE, so the routes that bin on uE
    can skip the sort order (8 bytes a row) and read the columns as they are. NaN makes
    it False.

    Examples
    --------
    >>> is_nondecreasing(np.array([1.0, 1.0, 2.0])), is_nondecreasing(np.array([2.0, 1.0]))
    (True, False)
    """
    return bool(_nondecreasing(np.ascontiguousarray(x, dtype=np.float64).reshape(-1)))


def stable_order(x) -> np.ndarray:
    """Return the stable ascending sort order of ``x`` along its last axis, NaN last.

    Ties keep their input order, as R ``order()`` does (methods: notation and
    conventions); NaN (padding) goes to the end.

    Parameters
    ----------
    x : array_like
        Values of the conditioning variable.

    Returns
    -------
    numpy.ndarray of int64
        Indices that sort ``x`` (``np.argsort(x, kind="stable")``).

    Examples
    --------
    >>> stable_order([2.0, np.nan, 1.0, 2.0]).tolist()
    [2, 0, 3, 1]
    """
    # argsort gives intp (int64 here): no copy then
    return np.argsort(np.asarray(x, dtype=np.float64), axis=-1, kind="stable").astype(
        np.int64, copy=False)


# SplitMix64 constants of the row hash (Steele et al. 2014), uint64 so numba keeps the words
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
#: Longest tie group whose row hashes are held at once (8 bytes each, 32 MiB), and at
#: most 1/16 of the rows (half a byte a row; pages are touched only as far as the
#: longest group): longer groups are first split by the hash's bytes, in place
#: (American flag sort), which reads each row's columns three times more.
_HASH_ROWS = 1 << 22
_HASH_MIN = 1 << 16
_SMALL = 16  # insertion sort below this many rows


@numba.njit(nogil=True, cache=True)
def _mix64(x):  # pragma: no cover - numba
    """SplitMix64 finaliser of a uint64 word: a bijective mix."""
    x = (x ^ (x >> _S30)) * _MIX1
    x = (x ^ (x >> _S27)) * _MIX2
    return x ^ (x >> _S31)


@numba.njit(nogil=True, cache=True)
def _row_hash(i, ub, bits, n_cols):  # pragma: no cover - numba
    # the words of uE, then of each column, mixed in turn
    h = _mix64(ub[i] ^ _GOLDEN)
    for k in range(n_cols):
        h = _mix64(h ^ bits[k][i])
    return h


@numba.njit(nogil=True, cache=True)
def _row_less(hi, i, hj, j, cols, n_cols):  # pragma: no cover - numba
    # (hash, columns..., row): numpy's float order (NaN last, NaNs equal), as np.lexsort
    if hi != hj:
        return hi < hj
    for k in range(n_cols):
        a = cols[k][i]
        b = cols[k][j]
        if a < b or (b != b and a == a):
            return True
        if b < a or (a != a and b == b):
            return False
    return i < j


@numba.njit(nogil=True, cache=True)
def _hash_at(idx, hb, s, p, use_h):  # pragma: no cover - numba
    return hb[p - s] if use_h else np.uint64(0)


@numba.njit(nogil=True, cache=True)
def _swap(idx, hb, s, p, q, use_h):  # pragma: no cover - numba
    t = idx[p]
    idx[p] = idx[q]
    idx[q] = t
    if use_h:
        g = hb[p - s]
        hb[p - s] = hb[q - s]
        hb[q - s] = g


@numba.njit(nogil=True, cache=True)
def _less_at(idx, hb, s, p, q, use_h, cols, n_cols):  # pragma: no cover - numba
    return _row_less(_hash_at(idx, hb, s, p, use_h), idx[p],
                     _hash_at(idx, hb, s, q, use_h), idx[q], cols, n_cols)


@numba.njit(nogil=True, cache=True)
def _sift(idx, hb, s, lo, root, n, use_h, cols, n_cols):  # pragma: no cover - numba
    # heap of positions lo..lo+n-1, max at lo
    while True:
        child = 2 * root + 1
        if child >= n:
            return
        if child + 1 < n and _less_at(idx, hb, s, lo + child, lo + child + 1, use_h, cols,
                                      n_cols):
            child += 1
        if not _less_at(idx, hb, s, lo + root, lo + child, use_h, cols, n_cols):
            return
        _swap(idx, hb, s, lo + root, lo + child, use_h)
        root = child


@numba.njit(nogil=True, cache=True)
def _sort_rows(idx, s, e, hb, use_h, cols, n_cols):  # pragma: no cover - numba
    """Sort ``idx[s:e]`` in place by (hash, columns, row); ``hb[:e - s]`` moves along.

    Introsort (quicksort, heapsort past 2 log2 n levels, insertion sort below _SMALL);
    the keys are distinct (the row breaks every tie), so the result is unique.
    ``use_h=False``: every hash taken as 0 (rows whose 64 hash bits are all equal).
    """
    n = e - s
    if n < 2:
        return
    depth0 = 2
    m = n
    while m > 1:
        depth0 += 2
        m >>= 1
    size = 1 if n <= _SMALL else 128  # the stack never holds more than log2(n) ranges
    st_lo = np.empty(size, np.int64)
    st_hi = np.empty(size, np.int64)
    st_d = np.empty(size, np.int64)
    st_lo[0], st_hi[0], st_d[0] = s, e - 1, depth0
    sp = 1
    while sp > 0:
        sp -= 1
        lo, hi, depth = st_lo[sp], st_hi[sp], st_d[sp]
        while hi - lo + 1 > _SMALL:
            if depth == 0:  # quicksort degenerates: heapsort this range
                k = hi - lo + 1
                for root in range(k // 2 - 1, -1, -1):
                    _sift(idx, hb, s, lo, root, k, use_h, cols, n_cols)
                for end in range(k - 1, 0, -1):
                    _swap(idx, hb, s, lo, lo + end, use_h)
                    _sift(idx, hb, s, lo, 0, end, use_h, cols, n_cols)
                lo = hi  # done
                break
            depth -= 1
            mid = (lo + hi) >> 1
            if _less_at(idx, hb, s, mid, lo, use_h, cols, n_cols):
                _swap(idx, hb, s, mid, lo, use_h)
            if _less_at(idx, hb, s, hi, mid, use_h, cols, n_cols):
                _swap(idx, hb, s, hi, mid, use_h)
                if _less_at(idx, hb, s, mid, lo, use_h, cols, n_cols):
                    _swap(idx, hb, s, mid, lo, use_h)
            ph, pi = _hash_at(idx, hb, s, mid, use_h), idx[mid]
            i, j = lo - 1, hi + 1
            while True:  # Hoare partition around the middle row
                i += 1
                while _row_less(_hash_at(idx, hb, s, i, use_h), idx[i], ph, pi, cols, n_cols):
                    i += 1
                j -= 1
                while _row_less(ph, pi, _hash_at(idx, hb, s, j, use_h), idx[j], cols, n_cols):
                    j -= 1
                if i >= j:
                    break
                _swap(idx, hb, s, i, j, use_h)
            # the larger part waits on the stack (depth <= log2 n), the smaller goes on
            if j - lo > hi - j - 1:
                st_lo[sp], st_hi[sp], st_d[sp] = lo, j, depth
                lo = j + 1
            else:
                st_lo[sp], st_hi[sp], st_d[sp] = j + 1, hi, depth
                hi = j
            sp += 1
        for p in range(lo + 1, hi + 1):  # insertion sort of what is left (<= _SMALL rows)
            iv = idx[p]
            hv = _hash_at(idx, hb, s, p, use_h)
            q = p - 1
            while q >= lo and _row_less(hv, iv, _hash_at(idx, hb, s, q, use_h), idx[q], cols,
                                        n_cols):
                idx[q + 1] = idx[q]
                if use_h:
                    hb[q + 1 - s] = hb[q - s]
                q -= 1
            idx[q + 1] = iv
            if use_h:
                hb[q + 1 - s] = hv


@numba.njit(nogil=True, cache=True)
def _split_by_byte(idx, s, e, shift, ub, bits, n_cols, counts, nxt, ends):  # pragma: no cover
    """Group ``idx[s:e]`` in place by byte ``shift`` of the row hash (American flag sort)."""
    counts[:] = 0
    for p in range(s, e):
        counts[(_row_hash(idx[p], ub, bits, n_cols) >> shift) & np.uint64(255)] += 1
    pos = s
    for b in range(256):
        nxt[b] = pos
        pos += counts[b]
        ends[b] = pos
    for b in range(256):
        while nxt[b] < ends[b]:
            v = idx[nxt[b]]
            d = np.int64((_row_hash(v, ub, bits, n_cols) >> shift) & np.uint64(255))
            while d != b:  # carry v to its group, take the row it displaces
                t = idx[nxt[d]]
                idx[nxt[d]] = v
                nxt[d] += 1
                v = t
                d = np.int64((_row_hash(v, ub, bits, n_cols) >> shift) & np.uint64(255))
            idx[nxt[b]] = v
            nxt[b] += 1


@numba.njit(nogil=True, cache=True)
def _sort_ties(order, u, ub, bits, cols, n_cols, hb):  # pragma: no cover - numba
    """Re-sort every run of equal ``u[order]`` by (row hash, columns, row), in place."""
    n = order.shape[0]
    cap = hb.shape[0]
    counts = np.empty(256, np.int64)
    nxt = np.empty(256, np.int64)
    ends = np.empty(256, np.int64)
    st_s = np.empty(8 * 256 + 8, np.int64)
    st_e = np.empty(8 * 256 + 8, np.int64)
    st_sh = np.empty(8 * 256 + 8, np.int64)
    s = 0
    while s < n:
        us = u[order[s]]
        e = s + 1
        while e < n:  # equal as np.sort sees them: ==, or both NaN
            v = u[order[e]]
            if not (v == us or (v != v and us != us)):
                break
            e += 1
        if e - s > 1:  # the keys are distinct (the row last): any start order will do
            st_s[0], st_e[0], st_sh[0] = s, e, 56
            sp = 1
            while sp > 0:
                sp -= 1
                a, b, sh = st_s[sp], st_e[sp], st_sh[sp]
                if b - a <= cap:
                    for p in range(a, b):
                        hb[p - a] = _row_hash(order[p], ub, bits, n_cols)
                    _sort_rows(order, a, b, hb, True, cols, n_cols)
                elif sh < 0:  # all 64 bits equal: by the columns and the row
                    _sort_rows(order, a, b, hb, False, cols, n_cols)
                else:
                    _split_by_byte(order, a, b, np.uint64(sh), ub, bits, n_cols, counts, nxt,
                                   ends)
                    lo = a
                    for k in range(256):
                        if ends[k] - lo > 1:
                            st_s[sp], st_e[sp], st_sh[sp] = lo, ends[k], sh - 8
                            sp += 1
                        lo = ends[k]
        s = e


def content_order(uE, *columns) -> np.ndarray:
    r"""Row order that depends on the rows' content only: by ``uE``, ties by a row hash.

    Equal-count bins cut the order of ``uE``; when ``uE`` has ties (values stored with
    few decimals, ensembles of few members, isotonic recalibration), a bin edge falls
    inside a tie group, and which rows of the group land on each side decides the binned
    statistics. In input order that split depends on how the file was sorted (rows
    sorted by :math:`|E|` put the large errors in the upper bin of every group), which
    calibrated copies :math:`E = u_E\,\epsilon` never reproduce. Here the rows of a tie
    group are ordered by a 64-bit hash of their bits (SplitMix64 over the words of
    ``uE`` and ``columns``), a pseudo-random order unrelated to the size of the errors,
    then by the values themselves (hash collisions); identical rows are interchangeable.
    The order is therefore a function of the *set* of rows: any permutation of the input
    gives the same sorted rows, bit for bit.

    The order is ``np.lexsort((*columns[::-1], h, uE))`` (``h`` the row hashes), computed
    without them: ``np.argsort(uE)``, then each run of equal ``uE`` re-sorted in place
    by (hash, columns, row) in one numba pass, hashing the rows of the run only (at most
    M/16 and 2^22 hashes held; longer runs are first split in place by the hash's
    bytes). Memory: the returned order (8 bytes a row) and at most half a byte a row
    more; time about that of the argsort when ``uE`` has few ties (at 10^8 rows: 20 s,
    about 25 s with uE on 2 decimals, against 106 s for the lexsort of every row).

    Parameters
    ----------
    uE : array_like, shape (M,)
        The uncertainties (primary key; finite).
    *columns : array_like, shape (M,)
        The other columns of the rows (``E``, and ``X``, ``V`` when present; finite).

    Returns
    -------
    numpy.ndarray of int64, shape (M,)
        Indices that put the rows in content order.

    Examples
    --------
    >>> u = np.array([1.0, 2.0, 1.0, 1.0]); e = np.array([3.0, 0.5, -1.0, 0.2])
    >>> a = content_order(u, e); b = content_order(u[::-1], e[::-1])
    >>> bool(np.array_equal(e[a], e[::-1][b]))
    True
    """
    u = np.ascontiguousarray(uE, dtype=np.float64)
    cols = tuple(np.ascontiguousarray(c, dtype=np.float64) for c in columns)
    if u.ndim != 1 or any(c.shape != u.shape for c in cols):
        raise ValueError("content_order: uE and the columns must be 1-d, of one length")
    # any sort of u will do (runs of ties are re-sorted next); quicksort needs no buffer
    order = np.argsort(u).astype(np.int64, copy=False)
    if u.size < 2:
        return order
    # numba takes a tuple of one array type: a placeholder (unused, n_cols = 0) if none
    keys = cols or (u,)
    cap = min(u.size, _HASH_ROWS, max(u.size // 16, _HASH_MIN))
    _sort_ties(order, u, u.view(np.uint64), tuple(c.view(np.uint64) for c in keys), keys,
               len(cols), np.empty(cap, dtype=np.uint64))
    return order


def reduce_n_bins(n: int, n_bins: int, *, pop_min: int = POP_MIN) -> int:
    r"""Return the number of bins after ErrViewLib's minimal-population reduction.

    .. math:: N \leftarrow \lfloor n / p_\mathrm{min} \rfloor
              \quad\text{if}\quad n / N < p_\mathrm{min}

    (``genIntervals``, methods: bins; applies to every scheme but equal-width).

    Parameters
    ----------
    n : int
        Number of points to bin.
    n_bins : int
        Requested number of bins (a positive integer; R's fractional ``nBin`` quirk of
        ``calibScores`` is not reproduced, see methods: edge cases).
    pop_min : int, default 30
        Minimal bin population ``popMin``.

    Returns
    -------
    int
        The effective number of bins.

    Raises
    ------
    InputError
        If ``n_bins`` is not a positive integer, or if fewer than one bin of ``pop_min``
        points fits in ``n``.

    Examples
    --------
    >>> reduce_n_bins(2040, 110, pop_min=20)
    102
    """
    n = _check_int(n, "n", minimum=0)
    n_bins = _check_int(n_bins, "n_bins", minimum=1)
    pop_min = _check_int(pop_min, "pop_min", minimum=1)
    if n / n_bins < pop_min:
        n_bins = n // pop_min
    if n_bins < 1:
        raise InputError(
            f"too few points per bin: n={n}, pop_min={pop_min} leaves no bin; "
            "lower pop_min or provide more data"
        )
    return n_bins


def _hd_of_ranks(n: int, p: float) -> float:
    """Harrell-Davis quantile of 1..n, summed exactly and snapped to integers."""
    start, w = hd_window(n, p)
    b = math.fsum((w * np.arange(start + 1, start + 1 + w.size)).tolist())
    r = round(b)
    return float(r) if abs(b - r) < _SNAP else b


@lru_cache(maxsize=1024)
def _equal_count_edges(n: int, n_bins: int) -> np.ndarray:
    # R: p = seq(0, 1, length.out = nBin + 1)[1:nBin] = (j - 1) * (1 / nBin)
    step = 1.0 / n_bins
    edges = np.empty(n_bins + 1, dtype=np.int64)
    edges[0] = 0
    for j in range(1, n_bins):
        # lw = smallest rank k > b (1-based) -> 0-based edge floor(b)
        p = j * step
        b = n * p + 0.5  # b_j = E[ceil(n X)], X ~ Beta: n p + 1/2 + (a periodic term of
        # order exp(-2 pi^2 n p (1 - p)), nil here), so floor(b_j) is floor(b) away from
        # an integer; near one, the exact sum decides (R's ties)
        if n * p * (1.0 - p) >= 1000.0 and 1e-3 < b - math.floor(b) < 1.0 - 1e-3:
            edges[j] = math.floor(b)
        else:
            edges[j] = math.floor(_hd_of_ranks(n, p))
    edges[n_bins] = n
    edges.setflags(write=False)
    return edges


def equal_count_edges(n: int, n_bins: int, *, pop_min: int = POP_MIN) -> np.ndarray:
    r"""Return the edges of ErrViewLib's (nearly) equal-count bins of ``n`` sorted points.

    After the ``pop_min`` reduction (:func:`reduce_n_bins`), the breakpoints are the
    Harrell–Davis quantiles of the ranks 1..n at :math:`p_j = (j-1)/N`,

    .. math:: b_j = \sum_{i=1}^{n} w_i(p_j)\, i, \qquad
              \mathrm{lw}_j = \min\{k \in 1..n : k > b_j\},

    and bin j covers the 1-based ranks :math:`\mathrm{lw}_j .. \mathrm{lw}_{j+1} - 1`
    (``genIntervals`` with ``equiPop = TRUE``; methods: bins). As :math:`b_j \approx
    n p_j + 1/2`, populations differ by at most one. The sum is exactly rounded
    (``math.fsum``) and snapped to an integer within 1e-9, which reproduces R's extended
    precision sum (including integer ties, where R's ``lw_j = b_j + 1``). Weights outside
    the Beta(a, b) support (tail mass < 1e-18) are skipped, so the cost grows as
    :math:`N \sqrt{n}`.

    Parameters
    ----------
    n : int
        Number of points (sorted positions 0..n-1).
    n_bins : int
        Requested number of bins.
    pop_min : int, default 30
        Minimal bin population for the reduction of ``n_bins``.

    Returns
    -------
    numpy.ndarray of int64, shape (N + 1,)
        Read-only (cached) edges: bin j is ``[edges[j], edges[j + 1])``, 0-based.

    Raises
    ------
    InputError
        See :func:`reduce_n_bins`.

    Examples
    --------
    >>> equal_count_edges(999, 10).tolist()
    [0, 100, 200, 300, 400, 500, 599, 699, 799, 899, 999]
    """
    n_eff = reduce_n_bins(n, n_bins, pop_min=pop_min)
    return _equal_count_edges(int(n), n_eff)


def sliding_windows(
    n: int, n_bins: int, *, pop_min: int = POP_MIN
) -> tuple[np.ndarray, np.ndarray]:
    r"""Return the sliding windows of ``genIntervals(slide = TRUE)``.

    After the ``pop_min`` reduction, the width is :math:`L = \lfloor n/N \rfloor` and the
    windows are the 0-based ranges :math:`[k, k + L)` for :math:`k = 0..n-L`
    (methods: bins; used by running quantiles).

    Parameters
    ----------
    n : int
        Number of sorted points.
    n_bins : int
        Requested number of bins that sets the window width.
    pop_min : int, default 30
        Minimal window population for the reduction of ``n_bins``.

    Returns
    -------
    starts, stops : numpy.ndarray of int64, shape (n - L + 1,)
        Window ``k`` covers sorted positions ``starts[k] <= i < stops[k]``.

    Examples
    --------
    >>> starts, stops = sliding_windows(100, 2)
    >>> starts[:3].tolist(), stops[:3].tolist(), starts.size
    ([0, 1, 2], [50, 51, 52], 51)
    """
    n_eff = reduce_n_bins(n, n_bins, pop_min=pop_min)
    width = int(n) // n_eff
    starts = np.arange(int(n) - width + 1, dtype=np.int64)
    return starts, starts + width


def _check_sorted_values(x_sorted) -> np.ndarray:
    xs = np.asarray(x_sorted, dtype=np.float64)
    if xs.ndim != 1:
        raise InputError(f"x_sorted must be one-dimensional, got shape {xs.shape}")
    if xs.size == 0:
        raise InputError("x_sorted is empty")
    if not np.all(np.isfinite(xs)):
        raise InputError("x_sorted must be finite (drop NaN/Inf first, e.g. via make_bins)")
    if np.any(xs[1:] < xs[:-1]):
        raise InputError("x_sorted must be sorted ascending (use np.sort or stable_order)")
    return xs


def _use_log(xs: np.ndarray, log: bool) -> bool:
    if log and xs[0] <= 0:
        # R would produce NaN limits; methods: edge cases asks for a linear fallback
        warnings.warn(
            f"log binning needs positive values (min = {xs[0]:g}): using linear bins",
            UserWarning,
            stacklevel=3,
        )
        return False
    return bool(log)


def _width_edges(xs: np.ndarray, n_bins: int, log: bool) -> np.ndarray:
    # Same floating-point operations as genIntervals: lims = min + (j - 1) * step
    t = np.log(xs) if log else xs
    tmin = t[0]
    step = (t[-1] - tmin) / n_bins
    lims = tmin + np.arange(n_bins, dtype=np.float64) * step
    if log:
        lims = np.exp(lims)
    edges = np.empty(n_bins + 1, dtype=np.int64)
    # lw_j = first k with xs_k >= lims_j
    edges[:-1] = np.searchsorted(xs, lims, side="left")
    edges[0] = 0
    edges[-1] = xs.size
    return edges


def equal_width_edges(x_sorted, n_bins: int, *, log: bool = False) -> np.ndarray:
    r"""Return the edges of equal-width (or equal log-width) bins of sorted values.

    With :math:`t = \log x` (``log=True``) or :math:`t = x`, the lower limits are

    .. math:: \ell_j = t_\mathrm{min} + (j - 1)\,
              \frac{t_\mathrm{max} - t_\mathrm{min}}{N}, \qquad j = 1..N,

    and bin j starts at the first sorted value :math:`\ge \ell_j` (back-transformed);
    steps 2–3 of ErrViewLib's adaptive ``genIntervals`` (methods: bins). No
    ``pop_min`` reduction, merge or split: bins may be empty.

    Parameters
    ----------
    x_sorted : array_like, shape (n,)
        Finite values sorted ascending.
    n_bins : int
        Number of bins.
    log : bool, default False
        Equal widths in log space; falls back to linear with a :class:`UserWarning` when
        a value is <= 0 (methods: edge cases).

    Returns
    -------
    numpy.ndarray of int64, shape (n_bins + 1,)
        Bin j is ``[edges[j], edges[j + 1])`` over sorted positions.

    Examples
    --------
    >>> equal_width_edges([0.0, 0.1, 0.2, 0.9, 1.0], 2).tolist()
    [0, 3, 5]
    """
    xs = _check_sorted_values(x_sorted)
    n_bins = _check_int(n_bins, "n_bins", minimum=1)
    return _width_edges(xs, n_bins, _use_log(xs, log))


def _merge_split(edges: list[int], n: int, n_bins0: int, pop_min: int) -> list[int]:
    """ErrViewLib's merge of small and split of large populations (methods: bins)."""

    def pops() -> list[int]:
        return [edges[k + 1] - edges[k] for k in range(len(edges) - 1)]

    pop = pops()
    while any(p < pop_min for p in pop):
        # Left pass: merge bin j + 1 into the first small bin j (one merge only)
        for j in range(len(pop) - 1):
            if pop[j] < pop_min:
                del edges[j + 1]
                break
        pop = pops()
        # Right tail: merge a small last bin into its neighbour
        if pop[-1] < pop_min and len(pop) > 1:
            del edges[-2]
            pop = pops()
    # popMax >= 2 popMin keeps both halves of a split >= popMin
    pop_max = max(n // n_bins0, 2 * pop_min)
    while any(p > pop_max for p in pop):
        j = next(k for k, p in enumerate(pop) if p > pop_max)
        # The first half gets floor(p / 2) + 1 points, as in R
        edges.insert(j + 1, edges[j] + pop[j] // 2 + 1)
        pop = pops()
    return edges


def adaptive_edges(
    x_sorted, n_bins: int, *, pop_min: int = POP_MIN, log: bool = True
) -> np.ndarray:
    r"""Return ErrViewLib's adaptive bins of sorted values (``equiPop = FALSE``).

    1. Reduce ``n_bins`` to :math:`N_0` (:func:`reduce_n_bins`).
    2. Equal (log-)width bins (:func:`equal_width_edges`).
    3. Merge while any population is below :math:`p_\mathrm{min}`: merge the bin after
       the first small one into it, then merge a small last bin into the previous one.
    4. Split while any population exceeds
       :math:`p_\mathrm{max} = \max(\lfloor n/N_0 \rfloor, 2 p_\mathrm{min})`: the
       first such bin of p points becomes :math:`\lfloor p/2 \rfloor + 1` and
       :math:`p - \lfloor p/2 \rfloor - 1` points.

    This is ``genIntervals(X, nBin, equiPop = FALSE, popMin, logBin)`` (methods: bins).

    Parameters
    ----------
    x_sorted : array_like, shape (n,)
        Finite values of the conditioning variable sorted ascending, ``n >= pop_min``.
    n_bins : int
        Requested number of bins.
    pop_min : int, default 30
        Minimal bin population.
    log : bool, default True
        Equal widths in log space; falls back to linear with a :class:`UserWarning` when
        a value is <= 0 (methods: edge cases).

    Returns
    -------
    numpy.ndarray of int64, shape (N + 1,)
        Bin j is ``[edges[j], edges[j + 1])`` over sorted positions; every bin holds at
        least ``pop_min`` points.

    Raises
    ------
    InputError
        Unsorted or non-finite values, or ``n < pop_min``.

    Examples
    --------
    >>> x = np.sort(np.exp(np.linspace(0.0, 3.0, 200)))
    >>> np.diff(adaptive_edges(x, 4, pop_min=30)).tolist()
    [50, 50, 50, 50]
    """
    xs = _check_sorted_values(x_sorted)
    n_bins0 = reduce_n_bins(xs.size, n_bins, pop_min=pop_min)
    edges = _width_edges(xs, n_bins0, _use_log(xs, log))
    edges = _merge_split(edges.tolist(), xs.size, n_bins0, int(pop_min))
    return np.asarray(edges, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class Bins:
    """A binning of the valid values of a conditioning variable.

    Attributes
    ----------
    order : numpy.ndarray of int64, shape (n,)
        Stable ascending sort order of the finite values (indices into the input).
    edges : numpy.ndarray of int64, shape (N + 1,)
        Bin j holds ``order[edges[j]:edges[j + 1]]``.
    scheme : str
        One of :data:`SCHEMES`.
    n_requested : int
        Number of bins asked for (before reduction, merges and splits).
    pop_min : int
        Minimal bin population used (unused by "equal-width").
    log : bool
        Whether log-spaced limits were used (False for "equal-count" and after the
        linear fallback).
    """

    order: np.ndarray
    edges: np.ndarray
    scheme: str
    n_requested: int
    pop_min: int
    log: bool

    @property
    def n_bins(self) -> int:
        """Effective number of bins N."""
        return int(self.edges.size - 1)

    @property
    def counts(self) -> np.ndarray:
        """Bin populations ``np.diff(edges)``."""
        return np.diff(self.edges)

    def lw_up_1based(self) -> tuple[np.ndarray, np.ndarray]:
        """Return R-style ``(lwindx, upindx)``: 1-based, inclusive sorted positions.

        Returns
        -------
        lw, up : numpy.ndarray of int64, shape (N,)
            ``lw = edges[:-1] + 1`` and ``up = edges[1:]`` (empty bins have ``up = lw - 1``).
        """
        return self.edges[:-1] + 1, self.edges[1:].copy()


def make_bins(
    x,
    n_bins: int,
    *,
    scheme: str = "equal-count",
    pop_min: int = POP_MIN,
    log: bool = True,
    order: np.ndarray | None = None,
) -> Bins:
    """Bin a conditioning variable: stable sort, then cut the sorted order into bins.

    Non-finite values (NaN padding) are left out: ``n`` is the number of finite values and
    ``order`` indexes only them (methods: bins). The bins are
    :func:`equal_count_edges` (R's default ``equiPop = TRUE``), :func:`equal_width_edges`
    or :func:`adaptive_edges`.

    Parameters
    ----------
    x : array_like, shape (M,)
        Conditioning variable (``uE``, ``X`` or ``V``), possibly NaN-padded.
    n_bins : int
        Requested number of bins.
    scheme : {"equal-count", "equal-width", "adaptive"}, default "equal-count"
        Binning scheme.
    pop_min : int, default 30
        Minimal bin population ("equal-count", "adaptive").
    log : bool, default True
        Log-spaced limits ("equal-width", "adaptive"; ErrViewLib's ``logBin`` default).
    order : numpy.ndarray of int64, optional
        ``stable_order(x)`` when the caller already holds it (not sorted again).

    Returns
    -------
    Bins

    Raises
    ------
    InputError
        Unknown scheme, ``x`` not one-dimensional, or too few points (see
        :func:`reduce_n_bins`).

    Examples
    --------
    >>> b = make_bins(np.r_[np.arange(100.0, 0.0, -1.0), np.nan], 2)
    >>> b.counts.tolist(), b.order[:2].tolist()
    ([50, 50], [99, 98])
    """
    if scheme not in SCHEMES:
        raise InputError(f"unknown binning scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    xa = np.asarray(x, dtype=np.float64)
    if xa.ndim != 1:
        raise InputError(f"x must be one-dimensional, got shape {xa.shape}")
    order = stable_order(xa) if order is None else np.asarray(order, dtype=np.int64).view()
    if not np.isfinite(xa).all():  # NaN padding (sorted last): drop it from the order
        order = order[np.isfinite(xa[order])]
    order.setflags(write=False)
    edges, used_log = sorted_edges(
        order if scheme == "equal-count" else xa[order], n_bins, scheme=scheme,
        pop_min=pop_min, log=log)
    return Bins(
        order=order,
        edges=edges,
        scheme=scheme,
        n_requested=int(n_bins),
        pop_min=int(pop_min),
        log=used_log,
    )


def sorted_edges(xs, n_bins: int, *, scheme: str = "equal-count", pop_min: int = POP_MIN,
                 log: bool = True) -> tuple[np.ndarray, bool]:
    """Bin edges of finite values already in ascending order: the cut of :func:`make_bins`.

    The sort order of ``xs`` being the identity, the bins are index intervals of ``xs``
    itself: rows in content order (sorted by uE) are binned on uE without the sort order
    (8 bytes a row). ``"equal-count"`` reads only the length of ``xs``
    (:func:`equal_count_edges`); ``"equal-width"`` and ``"adaptive"`` read the values
    (ErrViewLib's ``genIntervals``, methods: bins).

    Parameters
    ----------
    xs : numpy.ndarray, shape (n,)
        Finite values in ascending order (for ``"equal-count"`` any array of length n).
    n_bins, scheme, pop_min, log
        As :func:`make_bins`.

    Returns
    -------
    edges : numpy.ndarray of int64, shape (N + 1,)
        Read-only: bin j is ``xs[edges[j]:edges[j + 1]]``.
    used_log : bool
        Whether log-spaced limits were used.

    Examples
    --------
    >>> sorted_edges(np.arange(999.0), 10)[0].tolist()
    [0, 100, 200, 300, 400, 500, 599, 699, 799, 899, 999]
    """
    if scheme not in SCHEMES:
        raise InputError(f"unknown binning scheme {scheme!r}; choose one of {', '.join(SCHEMES)}")
    n_requested = _check_int(n_bins, "n_bins", minimum=1)
    pop_min = _check_int(pop_min, "pop_min", minimum=1)
    if scheme == "equal-count":
        return equal_count_edges(xs.shape[0], n_requested, pop_min=pop_min), False
    if xs.size == 0:
        raise InputError("x has no finite value to bin")
    used_log = _use_log(xs, log)
    if scheme == "equal-width":
        edges = _width_edges(xs, n_requested, used_log)
    else:
        n_bins0 = reduce_n_bins(xs.size, n_requested, pop_min=pop_min)
        edges = _width_edges(xs, n_bins0, used_log)
        edges = np.asarray(
            _merge_split(edges.tolist(), xs.size, n_bins0, pop_min), dtype=np.int64
        )
    edges.setflags(write=False)
    return edges, used_log


def _edges(edges, lead_shape):
    edges = np.asarray(edges, dtype=np.int64)
    return np.broadcast_to(edges, tuple(lead_shape) + edges.shape[-1:])


def bin_sums(x, edges):
    r"""Sum ``x`` over index intervals: :math:`S_j = \sum_{i=e_j}^{e_{j+1}-1} x_i`.

    Parameters
    ----------
    x : array_like, shape (..., M)
        Values in binning order.
    edges : array_like of int, shape (N+1,) or (..., N+1)
        0-based bin boundaries.

    Returns
    -------
    numpy.ndarray, shape (..., N)
    """
    x = np.asarray(x, dtype=np.float64)
    c = np.zeros(x.shape[:-1] + (x.shape[-1] + 1,))
    np.cumsum(x, axis=-1, out=c[..., 1:])
    e = _edges(edges, x.shape[:-1])
    at = np.take_along_axis(c, e, axis=-1)
    return np.diff(at, axis=-1)
