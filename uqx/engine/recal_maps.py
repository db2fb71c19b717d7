r"""Recalibration maps uE -> u: the kernels (numpy and scipy; no xarray).

A map turns each row's uncertainty ``uE`` (and, for BVS on X, its feature ``X``) into a
recalibrated uncertainty ``u``. Each method has a fit, :func:`fit_map` (errors ``E`` of
calibration rows), and an application to any rows, :func:`apply_map`; the parameters are a
flat ``dict`` of floats and 1-d arrays, so that a map is saved and read back exactly.

Methods (:data:`METHODS`)
-------------------------
``scale``
    :math:`u = f\,u_E`, :math:`f = \sqrt{\mathrm{ZMS}} = \sqrt{\langle (E/u_E)^2\rangle}`
    (standard-deviation scaling; Levi et al. 2022, Sensors 22:5540).
``power``
    :math:`u = c\,u_E^{\gamma}`, maximum of the Gaussian likelihood of E
    (:func:`fit_power`).
``scaling-binning``
    the power law, then one factor per equal-count bin of uE
    (Kumar, Liang & Ma 2019, NeurIPS, "Verified uncertainty calibration").
``isotonic``
    a nondecreasing map of :math:`u_E^2` to :math:`E^2` by pool-adjacent-violators
    (Barlow et al. 1972), with blocks of at least ``min_block`` rows and their variance
    corrected for the rows they hold (:func:`fit_isotonic`; ``min_block=1``: the plain map
    of Busk et al. 2022, Mach. Learn.: Sci. Technol. 3:015012), interpolated linearly
    between its knots and flat beyond them (Pernot 2023, arXiv:2306.05180).
``bvs-uE``, ``bvs-X``
    binwise variance scaling: one factor :math:`\sqrt{\mathrm{ZMS}}` per equal-count bin
    of uE or of X (Pernot 2023, arXiv:2310.11978); a new row takes the factor of the bin
    its uE (X) falls in.

The bins are those of every binned analysis of uqx (:func:`uqx.engine.binning.make_bins`,
equal-count); their limits on new rows are the midpoints between the last value of a bin
and the first of the next (:func:`bin_thresholds`).
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from scipy import optimize

from uqx.engine.binning import make_bins
from uqx.engine.defaults import ISO_MIN_BLOCK, POP_MIN, local_bins
from uqx.errors import InputError

__all__ = [
    "METHODS",
    "NEEDS_X",
    "BINNED",
    "gaussian_nll",
    "gaussian_nll_rows",
    "cv_nll_rows",
    "AUTO_MARGIN_SE",
    "fit_scale",
    "fit_power",
    "fit_isotonic",
    "pav",
    "pooling_cost",
    "merge_small_blocks",
    "bin_thresholds",
    "bin_index",
    "fit_bvs",
    "fit_map",
    "apply_map",
    "fold_ids",
    "cv_nll",
    "choose_method",
]

#: The methods of :func:`fit_map`, in the order ``auto`` tries them.
METHODS = ("scale", "power", "scaling-binning", "isotonic", "bvs-uE", "bvs-X")
#: Methods that read the feature X.
NEEDS_X = ("bvs-X",)
#: Methods with one factor per bin.
BINNED = ("scaling-binning", "bvs-uE", "bvs-X")
#: Search interval of the exponent gamma of the power law.
GAMMA_BOUNDS = (-4.0, 6.0)

_LOG_2PI = math.log(2.0 * math.pi)


def _arrays(E, uE, X=None):
    E = np.asarray(E, dtype=np.float64).reshape(-1)
    uE = np.asarray(uE, dtype=np.float64).reshape(-1)
    if E.shape != uE.shape:
        raise InputError(f"E and uE differ in length ({E.size} and {uE.size})")
    if E.size == 0:
        raise InputError("no rows to recalibrate")
    if not (np.isfinite(E).all() and np.isfinite(uE).all()):
        raise InputError("E and uE must be finite (drop the rows with NaN/inf first)")
    bad = int(np.count_nonzero(uE <= 0))
    if bad:
        raise InputError(f"uE must be positive: {bad} row(s) with uE <= 0 cannot be "
                         "recalibrated (a map scales uE)")
    if X is not None:
        X = np.asarray(X, dtype=np.float64).reshape(-1)
        if X.shape != E.shape:
            raise InputError(f"X and E differ in length ({X.size} and {E.size})")
        if not np.isfinite(X).all():
            raise InputError("X must be finite")
    return E, uE, X


def gaussian_nll(E, u) -> float:
    r"""Mean Gaussian negative log-likelihood of errors under uncertainties.

    .. math:: \mathrm{NLL} = \frac{1}{M}\sum_i \tfrac12\left[\ln(2\pi u_i^2)
              + E_i^2/u_i^2\right]

    Parameters
    ----------
    E, u : array_like, shape (M,)
        Errors and (positive) uncertainties.

    Returns
    -------
    float
        The mean NLL (lower is better; in the units' log scale).

    Examples
    --------
    >>> round(gaussian_nll([0.0], [1.0]), 6)
    0.918939
    """
    return float(np.mean(gaussian_nll_rows(E, u)))


def gaussian_nll_rows(E, u) -> np.ndarray:
    r"""Per-row Gaussian negative log-likelihood, :math:`\tfrac12[\ln(2\pi u_i^2) + E_i^2/u_i^2]`.

    The terms whose mean is :func:`gaussian_nll`; their spread gives the standard error
    of a difference of two NLLs on the same rows.

    Parameters
    ----------
    E, u : array_like, shape (M,)
        Errors and (positive) uncertainties.

    Returns
    -------
    numpy.ndarray, shape (M,)
    """
    E = np.asarray(E, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    return 0.5 * (_LOG_2PI + 2.0 * np.log(u) + (E / u) ** 2)


def fit_scale(E, uE) -> dict:
    r"""Scale factor :math:`f = \sqrt{\mathrm{ZMS}} = \sqrt{\langle (E/u_E)^2 \rangle}`.

    The maximum-likelihood factor of :math:`u = f u_E` under Gaussian errors (Levi et al.
    2022; the factor of "consistent up to a factor" in uqx).

    Parameters
    ----------
    E, uE : array_like, shape (M,)

    Returns
    -------
    dict
        ``{"f": float}``.

    Examples
    --------
    >>> fit_scale([2.0, -2.0], [1.0, 1.0])
    {'f': 2.0}
    """
    E, uE, _ = _arrays(E, uE)
    return {"f": float(np.sqrt(np.mean((E / uE) ** 2)))}


def _power_profile(gamma, E2, log_u):
    # -log-likelihood (per row, constants dropped) with c^2 at its optimum for this gamma:
    # 0.5 ln mean(E^2 uE^(-2 gamma)) + gamma mean(ln uE); the first term is a log-sum-exp
    # of a linear function of gamma: convex, so a bounded Brent search finds the optimum.
    a = np.log(E2) - 2.0 * gamma * log_u
    m = a.max()
    return 0.5 * (m + math.log(np.mean(np.exp(a - m)))) + gamma * float(np.mean(log_u))


def fit_power(E, uE) -> dict:
    r"""Power law :math:`u = c\,u_E^{\gamma}` by the Gaussian likelihood of E.

    For a given :math:`\gamma` the likelihood is largest at
    :math:`c^2(\gamma) = \langle E^2 u_E^{-2\gamma} \rangle`; the profile

    .. math:: \ell(\gamma) = \tfrac12 \ln \langle E^2 u_E^{-2\gamma}\rangle
              + \gamma \langle \ln u_E \rangle

    is convex in :math:`\gamma` and is minimised by :func:`scipy.optimize.minimize_scalar`
    (bounded, :data:`GAMMA_BOUNDS`).

    Parameters
    ----------
    E, uE : array_like, shape (M,)

    Returns
    -------
    dict
        ``{"c": float, "gamma": float}``.

    Examples
    --------
    >>> uE = np.exp(np.linspace(-1, 1, 201)); E = 2 * uE**1.5 * np.sign(np.sin(7 * uE))
    >>> p = fit_power(E, uE); round(p["gamma"], 4), round(p["c"], 4)
    (1.5, 2.0)
    """
    E, uE, _ = _arrays(E, uE)
    E2 = np.maximum(E * E, np.finfo(float).tiny)
    log_u = np.log(uE)
    if np.ptp(log_u) == 0.0:  # one value of uE: gamma is not identified, the scale is
        return {"c": float(np.sqrt(np.mean(E2)) / uE[0]), "gamma": 1.0}
    res = optimize.minimize_scalar(_power_profile, bounds=GAMMA_BOUNDS, method="bounded",
                                   args=(E2, log_u), options={"xatol": 1e-10})
    gamma = float(res.x)
    c = float(np.sqrt(np.mean(E2 * np.exp(-2.0 * gamma * log_u))))
    return {"c": c, "gamma": gamma}


def pav(y, w=None) -> np.ndarray:
    r"""Nondecreasing least-squares fit by pool-adjacent-violators.

    Minimises :math:`\sum_i w_i (y_i - g_i)^2` over :math:`g_1 \le \dots \le g_n`
    (Ayer et al. 1955; Barlow et al. 1972): :func:`scipy.optimize.isotonic_regression`
    where the installed scipy has it (1.12 and later), else a hand-written PAV.

    Parameters
    ----------
    y : array_like, shape (n,)
        Values in the order of the covariate.
    w : array_like, shape (n,), optional
        Positive weights (default 1).

    Returns
    -------
    numpy.ndarray, shape (n,)
        The fitted nondecreasing values.

    Examples
    --------
    >>> pav([1.0, 3.0, 2.0, 4.0]).tolist()
    [1.0, 2.5, 2.5, 4.0]
    """
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    iso = getattr(optimize, "isotonic_regression", None)
    if iso is not None:
        return np.asarray(iso(y, weights=w, increasing=True).x, dtype=np.float64)
    return _pav_blocks(y, w)  # pragma: no cover - scipy < 1.12


def _pav_blocks(y, w):
    vals, wts, sizes = [], [], []
    for yi, wi in zip(y.tolist(), w.tolist(), strict=True):
        vals.append(yi)
        wts.append(wi)
        sizes.append(1)
        while len(vals) > 1 and vals[-2] > vals[-1]:
            wt = wts[-2] + wts[-1]
            v = (vals[-2] * wts[-2] + vals[-1] * wts[-1]) / wt
            s = sizes[-2] + sizes[-1]
            del vals[-1], wts[-1], sizes[-1]
            vals[-1], wts[-1], sizes[-1] = v, wt, s
    return np.repeat(np.asarray(vals), np.asarray(sizes))


def pooling_cost(va: float, wa: float, vb: float, wb: float) -> float:
    r"""Twice the Gaussian log-likelihood lost by pooling two variance blocks.

    Blocks of weights :math:`w_a, w_b` and mean squared errors :math:`v_a, v_b` (the
    maximum-likelihood variances of their rows) pooled into
    :math:`v = (w_a v_a + w_b v_b)/(w_a + w_b)`:

    .. math:: w_a \ln(v/v_a) + w_b \ln(v/v_b) \ \ge 0,

    scale-free (it depends on the ratios of the variances only); infinite when one value
    is 0 and the other is not, 0 when both are.

    Examples
    --------
    >>> pooling_cost(1.0, 10.0, 1.0, 5.0)
    0.0
    >>> round(pooling_cost(1.0, 10.0, 4.0, 10.0), 4)
    4.4629
    """
    if va == vb:
        return 0.0
    if va <= 0.0 or vb <= 0.0:
        return math.inf
    v = (wa * va + wb * vb) / (wa + wb)
    return wa * math.log(v / va) + wb * math.log(v / vb)


def merge_small_blocks(g, w, min_block: float) -> np.ndarray:
    r"""Pool the blocks of a nondecreasing fit that weigh less than ``min_block``.

    A block is a run of equal values of ``g``; its weight is the sum of ``w`` over the
    run. While the lightest block weighs less than ``min_block`` (the leftmost first on
    a tie) and more than one block is left, it is pooled into their weighted mean with
    the neighbour for which the pooling loses the least Gaussian likelihood of the rows'
    errors (:func:`pooling_cost`; on a tie the lighter neighbour, then the left one).
    Pool-adjacent-violators of :math:`E^2` is the maximum-likelihood variance under the
    order (Barlow et al. 1972); the same likelihood chooses the neighbour, on the scale
    of the variances' ratios, so a small block joins the neighbour nearest to it in
    ratio, and a block of nonzero errors joins a block of zero errors only when that is
    its only neighbour. A pooled
    value lies between the two values it replaces, so the fit stays nondecreasing; the
    blocks only grow, so every block ends with at least ``min_block`` weight unless the
    whole fit weighs less (one block is then left).

    Parameters
    ----------
    g : array_like, shape (n,)
        A nondecreasing fit, e.g. :func:`pav` of values with weights ``w``.
    w : array_like, shape (n,)
        Positive weights (the rows behind each value).
    min_block : float
        Least weight of a block; 1 or less (with unit weights) leaves ``g`` as it is.

    Returns
    -------
    numpy.ndarray, shape (n,)
        The pooled fit, nondecreasing.

    Examples
    --------
    >>> merge_small_blocks([1.0, 2.0, 2.0, 5.0, 5.0], [1.0] * 5, 2).round(3).tolist()
    [1.667, 1.667, 1.667, 5.0, 5.0]
    """
    g = np.asarray(g, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    if g.size == 0:
        return g.copy()
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    ends = np.r_[starts[1:], g.size]
    wt = np.add.reduceat(w, starts)
    val = g[starts].copy()
    n = starts.size
    # blocks as a doubly linked list keyed by their first index; the heap holds
    # (weight, first index), stale entries skipped
    prev = np.arange(-1, n - 1)
    nxt = np.arange(1, n + 1)
    nxt[-1] = -1
    alive = np.ones(n, dtype=bool)
    last = ends.copy()
    heap = [(wt[b], b) for b in range(n) if wt[b] < min_block]
    heapq.heapify(heap)
    left = n
    while heap and left > 1:
        wb, b = heapq.heappop(heap)
        if not alive[b] or wb != wt[b]:
            continue
        lo, hi = prev[b], nxt[b]
        if lo < 0:
            m = hi
        elif hi < 0:
            m = lo
        else:  # the pooling that lowers the Gaussian likelihood least
            cost_lo = pooling_cost(val[lo], wt[lo], val[b], wt[b])
            cost_hi = pooling_cost(val[hi], wt[hi], val[b], wt[b])
            if cost_lo != cost_hi:
                m = lo if cost_lo < cost_hi else hi
            else:
                m = lo if wt[lo] <= wt[hi] else hi
        a, c = (m, b) if m == lo else (b, m)  # a is the left block, c the right
        total = wt[a] + wt[c]
        val[a] = (val[a] * wt[a] + val[c] * wt[c]) / total
        wt[a] = total
        last[a] = last[c]
        alive[c] = False
        nxt[a] = nxt[c]
        if nxt[c] >= 0:
            prev[nxt[c]] = a
        left -= 1
        if total < min_block:
            heapq.heappush(heap, (total, a))
    out = np.empty_like(g)
    for b in np.flatnonzero(alive):
        out[starts[b]:last[b]] = val[b]
    return out


def _debias_blocks(g, w, E2, inv):
    """Each block's variance times ``1 + (k - 1)/n_b`` (k: kurtosis of E/sqrt(g)), then PAV.

    The PAV runs over the blocks (one value each, weighted by its rows) with the exact
    pooling of :func:`_pav_blocks`, so that a block's rows keep one value exactly.
    """
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    lengths = np.diff(np.r_[starts, g.size])
    nb = np.add.reduceat(w, starts)
    gi = g[inv]
    ok = gi > 0
    if not ok.any():
        return g
    z2 = E2[ok] / gi[ok]
    k = float(np.mean(z2 * z2) / np.mean(z2) ** 2)
    corrected = _pav_blocks(g[starts] * (1.0 + (k - 1.0) / nb), nb)
    return np.repeat(corrected, lengths)


def fit_isotonic(E, uE, *, min_block: int = ISO_MIN_BLOCK,
                 debias: bool | None = None) -> dict:
    r"""Isotonic map of :math:`u_E^2` to :math:`E^2`, with blocks of at least ``min_block`` rows.

    The distinct values :math:`x_k` of :math:`u_E^2` (ties pooled, weighted by their
    counts) get the nondecreasing least-squares fit :math:`g_k` of the mean
    :math:`E^2` by pool-adjacent-violators (:func:`pav`; Barlow et al. 1972), the map of
    Busk et al. 2022 and of scikit-learn's ``IsotonicRegression``. Then:

    1. the blocks (runs of equal :math:`g_k`) of fewer than ``min_block`` rows are
       pooled with a neighbour, the one whose pooling loses the least Gaussian
       likelihood (:func:`merge_small_blocks`), which keeps the map nondecreasing;
    2. with ``debias``, each block's variance :math:`g_b`, the mean of :math:`n_b`
       squared errors, is multiplied by :math:`1 + (\hat\kappa - 1)/n_b`, with
       :math:`\hat\kappa` the kurtosis of :math:`E/\sqrt{g}` over the rows, and the
       result made nondecreasing again by PAV over the blocks.

    A row gets :math:`u^2 = g(u_E^2)`, linear between the knots :math:`x_k` and flat
    beyond the first and last (:func:`numpy.interp`). A fitted variance of 0 (a lowest
    block of zero errors) is raised to the smallest positive one. Pernot (2023,
    arXiv:2306.05180) shows that the flat stretches turn uE into tie groups, which
    moves the binned statistics.

    What the two steps are for: a block's :math:`g_b` estimates a variance from
    :math:`n_b` rows, and on rows the map was not fitted on :math:`E^2/u^2` averages
    :math:`\sigma^2\,\mathrm{E}[1/g_b] > 1` (Jensen). To first order
    :math:`\mathrm{E}[\sigma^2/g_b] = 1 + \mathrm{Var}(g_b)/\sigma^4 = 1 + (\kappa -
    1)/n_b` (:math:`n/(n-2)` exactly for normal errors), which step 2 puts back; it is
    also the factor of least expected Gaussian NLL on new rows. For blocks of one or two
    rows the expansion fails (:math:`\mathrm{E}[1/\chi^2_1]` is infinite) and PAV leaves
    such blocks at the ends of uE, the least and greatest running means, chosen for their
    noise: held out, rows behind blocks of 1-2 rows averaged :math:`E^2/u^2 = 55` on
    calibrated sets, hence step 1. On calibrated data cross-fitted by the plain map, 11
    of 40 sets read a question ``invalid`` after it (docs: "Fix what the verdicts
    found", with the measurements that chose ``min_block`` and ``debias``).

    Parameters
    ----------
    E, uE : array_like, shape (M,)
    min_block : int, default 10 (:data:`uqx.engine.defaults.ISO_MIN_BLOCK`)
        Least number of rows of a block; ``1`` gives the plain pool-adjacent-violators
        map (Busk et al. 2022; scikit-learn's ``IsotonicRegression``). With fewer rows
        than ``min_block`` the map is one block.
    debias : bool, optional
        Step 2. Default: on when ``min_block`` > 1, off for the plain map.

    Returns
    -------
    dict
        ``{"knots": x_k, "values": g_k, "min_block": ..., "debias": 0 or 1}`` (1-d
        arrays, only the knots where the fit changes slope kept; the settings as floats,
        for the record).

    Raises
    ------
    InputError
        Every error is 0; ``min_block`` below 1.

    Examples
    --------
    >>> p = fit_isotonic([1.0, 3.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0], min_block=1)
    >>> p["values"].tolist()
    [1.0, 6.5, 6.5, 16.0]
    >>> fit_isotonic([1.0, 3.0, 2.0, 4.0], [1.0, 2.0, 3.0, 4.0], min_block=2,
    ...              debias=False)["values"].tolist()
    [7.5, 7.5]
    """
    if not min_block >= 1:
        raise InputError(f"isotonic: min_block is a number of rows, at least 1, got {min_block}")
    E, uE, _ = _arrays(E, uE)
    x = uE * uE
    xs, inv, counts = np.unique(x, return_inverse=True, return_counts=True)
    ymean = np.bincount(inv, weights=E * E) / counts
    w = counts.astype(np.float64)
    g = pav(ymean, w)
    if min_block > 1:
        g = merge_small_blocks(g, w, min_block)
    if debias is None:
        debias = min_block > 1
    if debias:
        g = _debias_blocks(g, w, E * E, inv)
    pos = g[g > 0]
    if pos.size == 0:
        raise InputError("isotonic: every error is 0; no variance to fit")
    g = np.maximum(g, pos.min())
    # keep the knots where the piecewise-linear interpolant bends (ends of flat runs)
    keep = np.ones(xs.size, dtype=bool)
    if xs.size > 2:
        keep[1:-1] = (g[1:-1] != g[:-2]) | (g[1:-1] != g[2:])
    return {"knots": xs[keep], "values": g[keep], "min_block": float(min_block),
            "debias": float(bool(debias))}


def bin_thresholds(x, n_bins: int, *, pop_min: int = POP_MIN) -> np.ndarray:
    """Limits between equal-count bins of ``x``, for rows not seen in the fit.

    The bins of :func:`uqx.engine.binning.make_bins` (equal-count, ``pop_min``
    reduction); the limit between bins j and j + 1 is the midpoint of the last sorted
    value of bin j and the first of bin j + 1. Equal limits (ties across a cut) are
    merged, so a value is never split between two bins on new rows.

    Parameters
    ----------
    x : array_like, shape (M,)
        Finite values (uE or X) of the calibration rows.
    n_bins : int
        Bins asked for.
    pop_min : int, default 30
        Minimal bin population.

    Returns
    -------
    numpy.ndarray, shape (N - 1,)
        Increasing limits; :func:`bin_index` maps a value to its bin.

    Examples
    --------
    >>> bin_thresholds(np.arange(100.0), 2).tolist()
    [49.5]
    """
    x = np.asarray(x, dtype=np.float64)
    b = make_bins(x, n_bins, scheme="equal-count", pop_min=pop_min)
    xs = x[b.order]
    cuts = b.edges[1:-1]
    return np.unique(0.5 * (xs[cuts - 1] + xs[cuts]))


def bin_index(thresholds, x) -> np.ndarray:
    """Bin of each value: ``searchsorted(thresholds, x, side="right")`` (0-based)."""
    return np.searchsorted(np.asarray(thresholds, dtype=np.float64),
                           np.asarray(x, dtype=np.float64), side="right")


def fit_bvs(E, u, x, n_bins: int, *, pop_min: int = POP_MIN) -> dict:
    r"""Binwise variance scaling: one factor per equal-count bin of ``x``.

    .. math:: f_j = \sqrt{\langle (E/u)^2 \rangle_{i \in j}}, \qquad u_i' = f_{j(i)} u_i

    (Pernot 2023, arXiv:2310.11978: on bins of uE it improves consistency; only on bins of
    X does it improve adaptivity.)

    Parameters
    ----------
    E, u : array_like, shape (M,)
        Errors and the uncertainties to scale.
    x : array_like, shape (M,)
        The variable binned (uE or X).
    n_bins : int
        Bins asked for (fewer when a bin would hold fewer than ``pop_min`` rows).
    pop_min : int, default 30

    Returns
    -------
    dict
        ``{"thresholds": limits between bins, "factors": f_j}``.

    Examples
    --------
    >>> p = fit_bvs([1.0] * 60 + [3.0] * 60, [1.0] * 120, np.arange(120.0), 2)
    >>> p["factors"].tolist()
    [1.0, 3.0]
    """
    E, u, x = _arrays(E, u, x)
    thr = bin_thresholds(x, n_bins, pop_min=pop_min)
    j = bin_index(thr, x)
    n = np.bincount(j, minlength=thr.size + 1)
    s = np.bincount(j, weights=(E / u) ** 2, minlength=thr.size + 1)
    f = np.sqrt(s / np.maximum(n, 1))
    pos = f[f > 0]
    if pos.size == 0:
        raise InputError("bvs: every error is 0; no variance to fit")
    return {"thresholds": thr, "factors": np.maximum(f, pos.min())}


def fit_map(method: str, E, uE, X=None, *, n_bins: int | None = None,
            pop_min: int = POP_MIN, min_block: int = ISO_MIN_BLOCK) -> dict:
    """Fit one recalibration map (see the module docstring for the methods).

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    E, uE : array_like, shape (M,)
        Errors and positive uncertainties of the calibration rows.
    X : array_like, shape (M,), optional
        The feature (needed by ``bvs-X``).
    n_bins : int, optional
        Bins of the binned methods (default :func:`uqx.engine.defaults.local_bins`:
        ``max(min(M // 150, 15), 2)``).
    pop_min : int, default 30
        Minimal bin population.
    min_block : int, default 10
        ``isotonic``: least rows of a block of the map (:func:`fit_isotonic`; 1: the
        plain pool-adjacent-violators map of Busk et al. 2022).

    Returns
    -------
    dict
        The map's parameters (floats and 1-d arrays), read by :func:`apply_map`.

    Raises
    ------
    InputError
        Unknown method, ``bvs-X`` without X, non-finite input, uE <= 0.
    """
    if method not in METHODS:
        raise InputError(f"unknown recalibration method {method!r}; choose one of "
                         f"{', '.join(METHODS)} or auto")
    if method in NEEDS_X and X is None:
        raise InputError(f"method {method!r} bins on the feature X, which the data lack "
                         "(give the X column)")
    E, uE, X = _arrays(E, uE, X if method in NEEDS_X else None)
    nb = local_bins(E.size) if n_bins is None else int(n_bins)
    if method == "scale":
        return fit_scale(E, uE)
    if method == "power":
        return fit_power(E, uE)
    if method == "isotonic":
        return fit_isotonic(E, uE, min_block=min_block)
    if method == "bvs-uE":
        return fit_bvs(E, uE, uE, nb, pop_min=pop_min)
    if method == "bvs-X":
        return fit_bvs(E, uE, X, nb, pop_min=pop_min)
    p = fit_power(E, uE)  # scaling-binning
    u = p["c"] * uE ** p["gamma"]
    b = fit_bvs(E, u, uE, nb, pop_min=pop_min)
    return {**p, **b}


def apply_map(method: str, params: dict, uE, X=None) -> np.ndarray:
    """Recalibrated uncertainties ``u`` of rows, from a map's parameters.

    Parameters
    ----------
    method : str
        One of :data:`METHODS`.
    params : dict
        Output of :func:`fit_map` for ``method``.
    uE : array_like, shape (M,)
        Positive uncertainties of the rows (any rows: fitted on or new).
    X : array_like, shape (M,), optional
        The rows' feature (``bvs-X``).

    Returns
    -------
    numpy.ndarray, shape (M,)
        ``u``, positive.

    Raises
    ------
    InputError
        Unknown method, ``bvs-X`` without X, uE <= 0 or non-finite.
    """
    if method not in METHODS:
        raise InputError(f"unknown recalibration method {method!r}; choose one of "
                         f"{', '.join(METHODS)}")
    if method in NEEDS_X and X is None:
        raise InputError(f"this map ({method}) bins on the feature X: the rows it is "
                         "applied to must have X (give the X column)")
    uE = np.asarray(uE, dtype=np.float64).reshape(-1)
    _, uE, X = _arrays(np.zeros_like(uE), uE, X if method in NEEDS_X else None)
    if method == "scale":
        return params["f"] * uE
    if method == "power":
        return params["c"] * uE ** params["gamma"]
    if method == "isotonic":
        return np.sqrt(np.interp(uE * uE, params["knots"], params["values"]))
    if method == "bvs-uE":
        return params["factors"][bin_index(params["thresholds"], uE)] * uE
    if method == "bvs-X":
        return params["factors"][bin_index(params["thresholds"], X)] * uE
    u = params["c"] * uE ** params["gamma"]
    return params["factors"][bin_index(params["thresholds"], uE)] * u


def fold_ids(n: int, k: int, ss: np.random.SeedSequence) -> np.ndarray:
    """Fold of each of ``n`` rows: a random permutation cut into ``k`` near-equal folds.

    Parameters
    ----------
    n : int
        Rows.
    k : int
        Folds (2 <= k <= n).
    ss : numpy.random.SeedSequence
        The keyed stream (:func:`uqx.engine.resample.seed_sequence`): the folds depend on
        it alone.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        Fold 0..k-1 of each row; fold sizes differ by at most one.
    """
    if not 2 <= int(k) <= int(n):
        raise InputError(f"folds must be between 2 and the number of rows ({n}), got {k}")
    perm = np.random.Generator(np.random.PCG64(ss)).permutation(int(n))
    out = np.empty(int(n), dtype=np.int64)
    out[perm] = np.arange(int(n)) % int(k)
    return out


def cv_nll_rows(method: str, E, uE, X, folds: np.ndarray, *, n_bins: int | None = None,
                pop_min: int = POP_MIN, min_block: int = ISO_MIN_BLOCK):
    """Out-of-fold Gaussian NLL of every row: each fold scored by the map fitted on the others.

    Parameters
    ----------
    method : str
    E, uE, X : array_like
        Rows (X may be None).
    folds : numpy.ndarray of int, shape (M,)
        Fold of each row (:func:`fold_ids`).
    n_bins, pop_min, min_block
        As :func:`fit_map`.

    Returns
    -------
    numpy.ndarray, shape (M,), or None
        :func:`gaussian_nll_rows` of each row under the map fitted without its fold; None
        where a fold's map cannot be fitted (e.g. too few rows for one bin).
    """
    E = np.asarray(E, dtype=np.float64)
    uE = np.asarray(uE, dtype=np.float64)
    out = np.empty(E.size)
    for f in np.unique(folds):
        test = folds == f
        train = ~test
        Xtr = None if X is None else np.asarray(X)[train]
        Xte = None if X is None else np.asarray(X)[test]
        try:
            p = fit_map(method, E[train], uE[train], Xtr, n_bins=n_bins, pop_min=pop_min,
                        min_block=min_block)
        except InputError:
            return None
        out[test] = gaussian_nll_rows(E[test], apply_map(method, p, uE[test], Xte))
    return out


def cv_nll(method: str, E, uE, X, folds: np.ndarray, *, n_bins: int | None = None,
           pop_min: int = POP_MIN, min_block: int = ISO_MIN_BLOCK, per_fold: bool = False):
    """Cross-validated Gaussian NLL of a method: the mean of :func:`cv_nll_rows`.

    Parameters
    ----------
    method, E, uE, X, folds, n_bins, pop_min, min_block
        As :func:`cv_nll_rows`.
    per_fold : bool, default False
        The mean NLL of each fold instead of the mean over rows.

    Returns
    -------
    float or numpy.ndarray
        Mean over rows of the out-of-fold NLL (``inf`` where a fold cannot be fitted); with
        ``per_fold``, the mean NLL of each fold.
    """
    rows = cv_nll_rows(method, E, uE, X, folds, n_bins=n_bins, pop_min=pop_min,
                       min_block=min_block)
    return _fold_means(rows, folds) if per_fold else (
        math.inf if rows is None else float(np.mean(rows)))


def _fold_means(rows, folds) -> np.ndarray:
    """Return the mean of ``rows`` in each fold (``inf`` everywhere when ``rows`` is None)."""
    ids = np.unique(folds)
    if rows is None:
        return np.full(ids.size, math.inf)
    return np.array([float(np.mean(rows[folds == f])) for f in ids])


#: ``auto`` keeps a method other than ``scale`` only where its out-of-fold NLL is below the
#: factor's by more than this many standard errors of their per-row difference
#: (:func:`choose_method`); chosen on tuning draws (docs/recalibrate.md).
AUTO_MARGIN_SE = 1.5


def choose_method(E, uE, X=None, *, candidates=None, folds: int = 5,
                  ss: np.random.SeedSequence, n_bins: int | None = None,
                  pop_min: int = POP_MIN, min_block: int = ISO_MIN_BLOCK) -> tuple[str, dict]:
    r"""``auto``: the method of least cross-validated NLL among those that beat the factor.

    Each candidate is scored by the **median over the inner folds** of the fold's mean
    Gaussian NLL (:func:`cv_nll_rows`): the NLL of one row grows as :math:`z^2/2`, so a
    single row far out in one fold (z = 45 gives 1000) would otherwise decide for all
    rows; the median of the folds' means lets one such fold out.

    A method other than ``scale`` takes part only where it beats the factor on the same
    rows: with :math:`d_i` the difference of their out-of-fold NLLs on row i,

    .. math:: \bar d + k\,s_d/\sqrt{n} < 0, \qquad k = \mathtt{AUTO\_MARGIN\_SE} = 1.5.

    The rows of one fold share its fitted map, so :math:`s_d/\sqrt{n}` is not the standard
    error of an independent sample: ``k`` is a margin chosen on tuning draws, not a test
    level. Where uE is off by one factor, the flexible maps win the inner folds by their
    noise only; the margin keeps them out (tuning draws: held-out NLL worse than the
    factor beyond two standard errors on 4 and 5 of 30 sets without it, 0 with it), and
    keeps their large gains where the factor is not the truth. Without ``scale`` among
    the candidates, the least score decides. The one-standard-error rule of Hastie,
    Tibshirani & Friedman (2009, Sect. 7.10), the simplest method within the folds' noise
    of the best, was measured and not kept: the noise of five fold means is large on real
    data, and it gave up large gains (PAL2022 Perovskite_GPR_Bayesian: held-out NLL -0.56
    with the least score, -0.27 with that rule).

    Parameters
    ----------
    E, uE, X : array_like
        The training rows (nothing else is read: inside a cross-fit these are the
        training folds).
    candidates : sequence of str, optional
        Methods tried (default: :data:`METHODS`, ``bvs-X`` only with X).
    folds : int, default 5
        Inner folds.
    ss : numpy.random.SeedSequence
        Stream of the inner folds.
    n_bins, pop_min, min_block
        As :func:`fit_map`.

    Returns
    -------
    method : str
        The chosen method (ties: the first of ``candidates``, simplest first).
    scores : dict
        The score of each candidate (median over inner folds of the fold's mean NLL).
    """
    if candidates is None:
        candidates = [m for m in METHODS if X is not None or m not in NEEDS_X]
    E = np.asarray(E, dtype=np.float64)
    ids = fold_ids(E.size, min(int(folds), E.size), ss)
    rows = {m: cv_nll_rows(m, E, uE, X, ids, n_bins=n_bins, pop_min=pop_min,
                           min_block=min_block) for m in candidates}
    scores = {m: float(np.median(_fold_means(rows[m], ids))) for m in candidates}
    kept = list(candidates)
    if "scale" in candidates and rows["scale"] is not None:
        kept = [m for m in candidates if m == "scale" or _beats(rows[m], rows["scale"])]
    best = min(kept, key=lambda m: scores[m])
    if not math.isfinite(scores[best]):
        raise InputError("auto: no method could be fitted on these rows (too few rows)")
    return best, scores


def _beats(rows, base) -> bool:
    """Whether per-row NLLs ``rows`` are below ``base`` by :data:`AUTO_MARGIN_SE` s.e."""
    if rows is None or rows.size < 2:
        return False
    d = rows - base
    return bool(d.mean() + AUTO_MARGIN_SE * d.std(ddof=1) / math.sqrt(d.size) < 0.0)
