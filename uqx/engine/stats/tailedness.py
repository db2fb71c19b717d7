"""Harrell–Davis quantiles and robust tailedness statistics (β_GM, κ_CS), safety limits.

Kernels work over one axis (default the last) of NumPy arrays, are vectorised over the
other axes and ignore NaN (padding of ragged data sets). Definitions follow ErrViewLib
``hd``/``vhd``, ``skewgm`` and ``kurtcs`` (methods: tailedness) and the safety limits of
Pernot, paper 001, Table II.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

import numpy as np
from scipy import special

from uqx.errors import InputError

__all__ = [
    "SAFETY_LIMITS",
    "STATISTIC_DEPENDENCIES",
    "TAILEDNESS_KEYS",
    "beta_gm",
    "hd_quantile",
    "hd_weights",
    "kappa_cs",
    "pairwise_sum",
    "sorted_tailedness",
    "safety_flags",
    "tailedness",
    "unreliable_statistics",
]

#: Safety limits of the tailedness metrics (paper 001, Table II; methods: tailedness).
SAFETY_LIMITS: dict[str, float] = {
    "beta_gm_u2": 0.6,
    "kappa_cs_u2": 3.0,
    "beta_gm_e2": 0.8,
    "kappa_cs_e2": 5.0,
    "beta_gm_z2": 0.8,
    "kappa_cs_z2": 5.0,
}

#: Tailedness metrics each calibration statistic depends on (docs: verdicts).
STATISTIC_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ("rce", "ence", "uce", "uce_w"),
        ("beta_gm_u2", "kappa_cs_u2", "beta_gm_e2", "kappa_cs_e2")
    ),
    **dict.fromkeys(("zms", "nll", "zmse", "zmse_max", "zms_scan", "zve", "var_z"),
                    ("beta_gm_z2", "kappa_cs_z2")),
}

#: Keys of the dictionary returned by :func:`tailedness`.
TAILEDNESS_KEYS = (
    "beta_gm_u",
    "beta_gm_u2",
    "beta_gm_e2",
    "beta_gm_z2",
    "kappa_cs_u2",
    "kappa_cs_e2",
    "kappa_cs_z2",
)

# Crow-Siddiqui normal value (2 * 1.96) / (2 * 0.6745) rounded as in ErrViewLib
_KAPPA_NORMAL = 2.91
_KAPPA_Q = (0.025, 0.975, 0.25, 0.75)
# Weights beyond these Beta tail probabilities are dropped (relative effect < 1e-17).
_HD_TAIL = 1e-18


def _check_n_q(n, q) -> tuple[int, float]:
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise InputError(f"n must be a positive integer, got {n!r}")
    q = float(q)
    if not 0.0 <= q <= 1.0:
        raise InputError(f"quantile probability must lie in [0, 1], got {q!r}")
    return int(n), q


@lru_cache(maxsize=1024)
def hd_window(n: int, q: float) -> tuple[int, np.ndarray]:
    """Return the non-negligible Harrell-Davis weights ``(start, w)`` of a sample of size n.

    ``w[k]`` weighs the order statistic of 0-based rank ``start + k``; weights outside the
    window carry less than ``2e-18`` of the mass and the kept ones are bitwise those of the
    full computation (same ``i / n`` grid). Shared with :mod:`uqx.engine.binning`.
    """
    if q == 0.0:
        w, start = np.ones(1), 0
    elif q == 1.0:
        # R returns 0 here; the limit q -> 1 (the maximum) is the sensible value
        w, start = np.ones(1), n - 1
    else:
        a = (n + 1) * q
        b = (n + 1) * (1 - q)
        lo = special.betaincinv(a, b, _HD_TAIL)
        hi = special.betainccinv(a, b, _HD_TAIL)
        i0, i1 = 1, n  # 1-based ranks kept
        if np.isfinite(lo) and np.isfinite(hi):
            i0 = max(math.floor(lo * n) - 1, 1)
            i1 = min(math.ceil(hi * n) + 1, n)
        # Same i/n grid as the full computation, so kept weights are bitwise identical
        w = np.diff(special.betainc(a, b, np.arange(i0 - 1, i1 + 1) / n))
        start = i0 - 1
    w.setflags(write=False)
    return start, w


@lru_cache(maxsize=64)
def _hd_weights_full(n: int, q: float) -> np.ndarray:
    start, w = hd_window(n, q)
    full = np.zeros(n)
    full[start : start + w.size] = w
    full.setflags(write=False)
    return full


def hd_weights(n: int, q: float) -> np.ndarray:
    r"""Return the Harrell–Davis weights of the order statistics of a sample of size n.

    .. math:: w_i = I_{i/n}(a, b) - I_{(i-1)/n}(a, b), \qquad
              a = (n+1)q,\; b = (n+1)(1-q),\; i = 1..n,

    with :math:`I` the regularized incomplete beta function (R ``pbeta``, SciPy
    ``betainc``); ErrViewLib/WRS2 ``hd`` (methods: tailedness). Weights are computed only
    where the Beta(a, b) density carries mass (tails below 1e-18 are set to 0), which
    makes large n cheap. ``q = 0`` puts all weight on the minimum; ``q = 1`` on the
    maximum (R returns 0 there; never used by the methods).

    Parameters
    ----------
    n : int
        Sample size (>= 1).
    q : float
        Probability in [0, 1].

    Returns
    -------
    numpy.ndarray, shape (n,)
        Read-only (cached) weights summing to 1.

    Examples
    --------
    >>> np.round(hd_weights(3, 0.5), 4).tolist()
    [0.2593, 0.4815, 0.2593]
    """
    n, q = _check_n_q(n, q)
    return _hd_weights_full(n, q)


def _as_probs(q) -> tuple[np.ndarray, bool]:
    qa = np.asarray(q, dtype=np.float64)
    if qa.ndim > 1:
        raise InputError(f"q must be a scalar or a 1-D sequence, got shape {qa.shape}")
    if not np.all((qa >= 0.0) & (qa <= 1.0)):
        raise InputError(f"quantile probabilities must lie in [0, 1], got {q!r}")
    return np.atleast_1d(qa), qa.ndim == 0


def _to_rows(x, axis: int) -> tuple[np.ndarray, tuple[int, ...]]:
    xa = np.asarray(x, dtype=np.float64)
    if xa.ndim == 0:
        raise InputError("x must have at least one dimension")
    xa = np.moveaxis(xa, axis, -1)
    lead = xa.shape[:-1]
    return xa.reshape(math.prod(lead), xa.shape[-1]), lead


def _finish(values: np.ndarray, lead: tuple[int, ...]):
    # 1-D input gives a NumPy scalar, as NumPy reductions do
    return values.reshape(lead + values.shape[1:])[()]


def _hd_sorted(xs: np.ndarray, counts: np.ndarray, qs) -> np.ndarray:
    """HD quantiles of rows of xs (sorted, NaN trailing, counts valid values per row)."""
    out = np.full((xs.shape[0], len(qs)), np.nan)
    for n in np.unique(counts):
        if n == 0:
            continue
        rows = np.flatnonzero(counts == n)
        whole = rows.size == xs.shape[0]
        for k, q in enumerate(qs):
            start, w = hd_window(int(n), float(q))
            stop = start + w.size
            # slicing (not fancy indexing) avoids a copy when all rows share n
            block = xs[:, start:stop] if whole else xs[rows, start:stop]
            out[rows, k] = block @ w
        # a convex combination stays within [min, max]; clipping makes constant rows exact
        lo = xs[rows, 0][:, None]
        hi = xs[rows, n - 1][:, None]
        out[rows] = np.clip(out[rows], lo, hi)
    return out


def hd_quantile(x, q, *, axis: int = -1, sorted: bool = False):
    r"""Compute Harrell–Davis quantiles, ignoring NaN, along one axis.

    .. math:: \mathrm{hd}(x, q) = \sum_{i=1}^{n} w_i(q)\, x_{(i)}

    with :math:`x_{(i)}` the sorted non-NaN values and :math:`w_i` from
    :func:`hd_weights` (ErrViewLib ``hd``/``vhd``; methods: tailedness).

    Parameters
    ----------
    x : array_like
        Data; NaN values (padding) are dropped row by row.
    q : float or sequence of float
        Probabilities in [0, 1].
    axis : int, default -1
        Axis along which the quantiles are computed.
    sorted : bool, default False
        Set True when ``x`` is already sorted ascending along ``axis`` with NaN last
        (``np.sort`` order), to skip the sort.

    Returns
    -------
    numpy.ndarray or numpy.float64
        Shape of ``x`` without ``axis``; a sequence ``q`` adds a trailing axis of
        ``len(q)``. NaN where a row has no valid value.

    Examples
    --------
    >>> round(float(hd_quantile([1.0, 2.0, 3.0, 4.0, 100.0], 0.5)), 4)
    8.5024
    >>> np.round(hd_quantile([[1.0, 2.0, np.nan], [3.0, 1.0, 2.0]], [0.0, 0.5]), 6).tolist()
    [[1.0, 1.5], [1.0, 2.0]]
    """
    qs, scalar = _as_probs(q)
    rows, lead = _to_rows(x, axis)
    if not sorted:
        rows = np.sort(rows, axis=-1)
    counts = np.count_nonzero(~np.isnan(rows), axis=-1)
    out = _hd_sorted(rows, counts, qs)
    return _finish(out[:, 0] if scalar else out, lead)


def _beta_kappa_sorted(xs: np.ndarray, counts: np.ndarray, *, kappa: bool):
    """β_GM (and κ_CS) of rows of xs sorted with NaN trailing."""
    qs = (0.5, *_KAPPA_Q) if kappa else (0.5,)
    hd = _hd_sorted(xs, counts, qs)
    med = hd[:, 0]
    valid = ~np.isnan(xs)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(valid, xs, 0.0).sum(axis=-1) / counts
        mad = np.where(valid, np.abs(xs - med[:, None]), 0.0).sum(axis=-1) / counts
        beta = np.where(mad == 0.0, np.nan, (mean - med) / mad)
        kap = None
        if kappa:
            kap = (hd[:, 2] - hd[:, 1]) / (hd[:, 4] - hd[:, 3]) - _KAPPA_NORMAL
    return beta, kap


def beta_gm(x, *, axis: int = -1):
    r"""Compute the Groeneveld–Meeden skewness with the Harrell–Davis median, ignoring NaN.

    .. math:: \beta_{GM} = \frac{\bar{x} - m}{\overline{|x - m|}},
              \qquad m = \mathrm{hd}(x, 1/2)

    ErrViewLib ``skewgm`` (methods: tailedness; paper 001 Eq. 11). Range [-1, 1].

    Parameters
    ----------
    x : array_like
        Data (NaN ignored).
    axis : int, default -1
        Axis of the sample.

    Returns
    -------
    numpy.ndarray or numpy.float64
        Shape of ``x`` without ``axis``; NaN where :math:`\overline{|x - m|} = 0` or a row
        is empty.

    Examples
    --------
    >>> round(float(beta_gm([1.0, 2.0, 3.0, 4.0, 100.0])), 4)
    0.5843
    """
    rows, lead = _to_rows(x, axis)
    rows = np.sort(rows, axis=-1)
    counts = np.count_nonzero(~np.isnan(rows), axis=-1)
    beta, _ = _beta_kappa_sorted(rows, counts, kappa=False)
    return _finish(beta, lead)


def kappa_cs(x, *, axis: int = -1):
    r"""Compute the Crow–Siddiqui excess kurtosis from Harrell–Davis quantiles, ignoring NaN.

    .. math:: \kappa_{CS} = \frac{\mathrm{hd}(x, 0.975) - \mathrm{hd}(x, 0.025)}
              {\mathrm{hd}(x, 0.75) - \mathrm{hd}(x, 0.25)} - 2.91

    ErrViewLib ``kurtcs`` (KR4 of Kim & White 2004; methods: tailedness; paper 001 Eq. 12).

    Parameters
    ----------
    x : array_like
        Data (NaN ignored).
    axis : int, default -1
        Axis of the sample.

    Returns
    -------
    numpy.ndarray or numpy.float64
        Shape of ``x`` without ``axis``; ±inf or NaN when the HD interquartile range is 0
        (e.g. bins of a stratified uncertainty), without warning.

    Examples
    --------
    >>> round(float(kappa_cs(np.arange(1.0, 101.0))), 2)  # uniform: 1.9 - 2.91
    -1.01
    """
    rows, lead = _to_rows(x, axis)
    rows = np.sort(rows, axis=-1)
    counts = np.count_nonzero(~np.isnan(rows), axis=-1)
    hd = _hd_sorted(rows, counts, _KAPPA_Q)
    with np.errstate(divide="ignore", invalid="ignore"):
        kap = (hd[:, 1] - hd[:, 0]) / (hd[:, 3] - hd[:, 2]) - _KAPPA_NORMAL
    return _finish(kap, lead)


def _sorted_counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xs = np.sort(values, axis=-1)
    return xs, np.count_nonzero(~np.isnan(xs), axis=-1)


def pairwise_sum(x: np.ndarray, f=None, *, leaf: int = 1 << 16) -> float:
    """NumPy's pairwise sum of ``f(x)`` over a 1-d array, evaluated leaf by leaf.

    Splits like NumPy's ``pairwise_sum`` (halves rounded down to a multiple of 8), so
    the result has the same bits as ``f(x).sum()`` on a contiguous array, while the
    temporaries of ``f`` are at most ``leaf`` elements (``leaf`` >= 128).
    """
    return _pairwise(x, f, leaf, 0, x.shape[0])


def _pairwise(x, f, leaf, lo, hi):
    # a module-level recursion: a nested closure calling itself is a reference cycle
    # that kept ``x`` (the whole sorted column) alive until the next garbage collection
    n = hi - lo
    if n <= leaf:
        part = x[lo:hi]
        return (part if f is None else f(part)).sum()
    n2 = n // 2
    n2 -= n2 % 8
    return _pairwise(x, f, leaf, lo, lo + n2) + _pairwise(x, f, leaf, lo + n2, hi)


def sorted_tailedness(xs: np.ndarray, *, kappa: bool) -> tuple[float, float]:
    """β_GM (and κ_CS, else NaN) of one sorted 1-d array without NaN, with small temporaries.

    The same numbers, bit for bit, as the rows of :func:`tailedness` (five HD quantiles
    of the sorted array, mean and mean absolute deviation from the HD median summed
    pairwise, :func:`pairwise_sum`), with temporaries of O(2^16) elements instead of
    three arrays of the size of ``xs``: the route of :func:`uqx.validate` for data that
    do not fit in memory twice (one column sorted in place at a time).

    Parameters
    ----------
    xs : numpy.ndarray
        Sorted float64 values, finite (at least one).
    kappa : bool
        Also compute κ_CS (else NaN is returned for it).

    Returns
    -------
    tuple of float
        (β_GM, κ_CS).
    """
    xs = np.asarray(xs, dtype=np.float64)
    n = xs.shape[0]
    qs = (0.5, *_KAPPA_Q) if kappa else (0.5,)
    hd = _hd_sorted(xs[None, :], np.array([n]), qs)[0]
    med = hd[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.float64(pairwise_sum(xs)) / np.int64(n)
        mad = np.float64(pairwise_sum(xs, lambda c: np.abs(c - med))) / np.int64(n)
        beta = np.nan if mad == 0.0 else (mean - med) / mad
        kap = np.nan
        if kappa:
            kap = (hd[2] - hd[1]) / (hd[4] - hd[3]) - _KAPPA_NORMAL
    return np.float64(beta), np.float64(kap)


def tailedness(E, uE, *, axis: int = -1) -> dict[str, np.ndarray]:
    """Compute the robust tailedness metrics of u, u², E² and Z² = (E/u)².

    β_GM (:func:`beta_gm`) of u (000 Table II, 004 Table 1) and β_GM and κ_CS
    (:func:`kappa_cs`) of the squared variables (001 Table III; methods: tailedness). Pairs
    where E or uE is NaN are ignored. Each variable is sorted once and its five HD
    quantiles (0.5, 0.025, 0.975, 0.25, 0.75) reuse the sorted array and cached weights.

    Parameters
    ----------
    E, uE : array_like
        Errors and uncertainties, broadcastable to a common shape.
    axis : int, default -1
        Axis of the sample.

    Returns
    -------
    dict of str to numpy.ndarray
        Keys :data:`TAILEDNESS_KEYS`: ``beta_gm_u``, ``beta_gm_u2``, ``beta_gm_e2``,
        ``beta_gm_z2``, ``kappa_cs_u2``, ``kappa_cs_e2``, ``kappa_cs_z2``; each with the
        common shape without ``axis`` (a NumPy scalar for 1-D input).

    Examples
    --------
    >>> t = tailedness([0.1, -0.3, 0.2, 0.05, -0.1, 0.4], [0.2, 0.3, 0.1, 0.2, 0.25, 0.3])
    >>> sorted(t) == sorted(TAILEDNESS_KEYS)
    True
    """
    e, u = np.broadcast_arrays(np.asarray(E, dtype=np.float64), np.asarray(uE, dtype=np.float64))
    e, lead = _to_rows(e, axis)
    u, _ = _to_rows(u, axis)
    bad = np.isnan(e) | np.isnan(u)
    e = np.where(bad, np.nan, e)
    u = np.where(bad, np.nan, u)

    us, nu = _sorted_counts(u)
    # squaring keeps the order of non-negative values: no second sort for u^2
    u2s = us * us if not np.any(us[:, :1] < 0) else np.sort(u * u, axis=-1)
    e2s, ne = _sorted_counts(e * e)
    with np.errstate(divide="ignore", invalid="ignore"):
        z2s, nz = _sorted_counts((e / u) ** 2)

    out = {}
    out["beta_gm_u"], _ = _beta_kappa_sorted(us, nu, kappa=False)
    out["beta_gm_u2"], out["kappa_cs_u2"] = _beta_kappa_sorted(u2s, nu, kappa=True)
    out["beta_gm_e2"], out["kappa_cs_e2"] = _beta_kappa_sorted(e2s, ne, kappa=True)
    out["beta_gm_z2"], out["kappa_cs_z2"] = _beta_kappa_sorted(z2s, nz, kappa=True)
    return {k: _finish(out[k], lead) for k in TAILEDNESS_KEYS}


def safety_flags(t: Mapping[str, object]) -> dict[str, bool]:
    """Flag the tailedness metrics above their safety limits.

    A metric is flagged when it exceeds :data:`SAFETY_LIMITS` (paper 001 Table II:
    β_GM(u²) > 0.6, κ_CS(u²) > 3, β_GM(E²), β_GM(Z²) > 0.8, κ_CS(E²), κ_CS(Z²) > 5;
    methods: tailedness). NaN is never flagged, +inf is.

    Parameters
    ----------
    t : mapping
        Tailedness metrics, e.g. the output of :func:`tailedness`; keys absent from
        :data:`SAFETY_LIMITS` are ignored.

    Returns
    -------
    dict of str to bool
        ``True`` where the limit is exceeded (boolean arrays for batched metrics).

    Examples
    --------
    >>> safety_flags({"beta_gm_u2": 0.7, "kappa_cs_u2": 1.0})
    {'beta_gm_u2': True, 'kappa_cs_u2': False}
    """
    flags = {}
    for key, value in t.items():
        if key in SAFETY_LIMITS:
            above = np.asarray(value, dtype=np.float64) > SAFETY_LIMITS[key]
            flags[key] = bool(above) if above.ndim == 0 else above
    return flags


def unreliable_statistics(t: Mapping[str, object]) -> dict[str, list[str]]:
    """List the calibration statistics made unreliable by heavy tails.

    Decision step 1 of the validation workflow (paper 000 Fig. 1; docs: verdicts): RCE,
    ENCE and UCE depend on the u² and E² metrics, ZMS, NLL, ZMSE, ZVE and Var(Z) on the
    Z² metrics (:data:`STATISTIC_DEPENDENCIES`); a statistic is unreliable when one of
    its metrics exceeds its safety limit (:func:`safety_flags`).

    Parameters
    ----------
    t : mapping
        Tailedness metrics (output of :func:`tailedness`). For batched metrics a metric
        counts as exceeded when any element exceeds its limit.

    Returns
    -------
    dict of str to list of str
        Only the unreliable statistics (lower-case names ``rce``, ``ence``, ``uce``, ``uce_w``,
        ``zms``, ``nll``, ``zmse``, ``zve``, ``var_z``), each with its exceeded metrics.

    Examples
    --------
    >>> unreliable_statistics({"beta_gm_u2": 0.5, "beta_gm_e2": 0.9, "kappa_cs_z2": 2.0})
    {'rce': ['beta_gm_e2'], 'ence': ['beta_gm_e2'], 'uce': ['beta_gm_e2'], 'uce_w': ['beta_gm_e2']}
    """
    flags = safety_flags(t)
    out = {}
    for stat, metrics in STATISTIC_DEPENDENCIES.items():
        exceeded = [m for m in metrics if m in flags and bool(np.any(flags[m]))]
        if exceeded:
            out[stat] = exceeded
    return out
