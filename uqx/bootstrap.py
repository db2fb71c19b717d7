r"""Bootstrap engine: shared resamples, exact jackknife, BCa / percentile / basic intervals.

Conventions follow ``nptest::np.boot`` as used for the papers' numbers (methods: bootstrap):

* the bootstrap distribution is :math:`T = [t_0; t^*_1; \dots; t^*_R]` (R+1 values);
* standard error :math:`\mathrm{sd}(T)` (n−1); bias :math:`b_{BS} = \bar T - t_0`;
* :math:`z_0 = \Phi^{-1}(\#\{T < t_0\}/(R+1))` (strict <, t0 counted);
* acceleration from the exact leave-one-out values :math:`t_{(i)}`:
  :math:`a = \sum (\bar t - t_{(i)})^3 / (6 (\sum (\bar t - t_{(i)})^2)^{3/2})`;
* :math:`\alpha_k = \Phi(z_0 + (z_0+z_k)/(1 - a(z_0+z_k)))`, CI = type-7 quantiles of T.

Work is cut into (set, replicate-block) tasks scheduled by dask; each block draws from a
generator keyed by (seed, data content digest, block), so results are bitwise identical for any
scheduler or number of workers.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime

import dask
import numpy as np
import xarray as xr
from scipy.special import ndtr, ndtri

from uqx.data import (
    ColumnRef,
    InputError,
    SetData,
    as_stacked,
    iter_sets,
    read_rows,
    streamed_content_key,
)
from uqx.evaluator import SetEvaluator
from uqx.resample import (
    MEMORY_BUDGET,
    REPLICATE_BLOCK,
    SAMPLE_BLOCK,
    SAMPLE_GROUP,
    BootstrapPlan,
    content_key,
    resolve_seed,
)
from uqx.statistic import (
    _MOMENT_COLUMNS,
    MOMENT_STATS,
    STAT_INFO,
    BinningConfig,
    _moment_features,
    moment_sums,
    parse_stat,
)

__all__ = [
    "bootstrap",
    "bootstrap_set",
    "bca_interval",
    "bca_limits_mc_se",
    "percentile_interval",
    "basic_interval",
    "jackknife_acceleration",
    "BootstrapResult",
    "METHODS",
]

METHODS = ("bca", "percentile", "basic")


def _quantile7(T, p):
    """Type-7 quantiles of each column of T (NaN dropped) at per-column probabilities p."""
    T = np.asarray(T, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    for k in range(T.shape[1]):
        col = T[:, k]
        col = col[~np.isnan(col)]
        ok = np.isfinite(p[..., k]) & (col.size > 0)
        if np.any(ok):
            out[..., k][ok] = np.quantile(col, p[..., k][ok], method="linear")
    return out


def jackknife_acceleration(jack, *, chunk_rows: int = 262_144):
    r"""BCa acceleration from leave-one-out values (Efron 1987; nptest).

    .. math:: a = \frac{\sum_i (\bar t - t_{(i)})^3}{6\left(\sum_i (\bar t - t_{(i)})^2
              \right)^{3/2}}

    Accumulated over row chunks (memory O(chunk · K), not O(M · K)); NaN values ignored.

    Parameters
    ----------
    jack : array_like, shape (M, K)

    Returns
    -------
    numpy.ndarray, shape (K,)
        NaN where the jackknife values are constant (0/0).
    """
    jack = np.asarray(jack, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN column: NaN, no warning
        mean = np.nanmean(jack, axis=0)
    s2 = np.zeros(jack.shape[1:])
    s3 = np.zeros(jack.shape[1:])
    for lo in range(0, jack.shape[0], chunk_rows):
        d = mean - jack[lo : lo + chunk_rows]
        s2 += np.nansum(d * d, axis=0)
        s3 += np.nansum(d * d * d, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return s3 / (6.0 * s2**1.5)


def bca_interval(T, t0, jack, *, level=0.95):
    r"""BCa interval with the conventions of ``nptest::np.boot`` (methods: bootstrap).

    Parameters
    ----------
    T : array_like, shape (R+1, K)
        Bootstrap distribution **including** t0 (row 0 or anywhere).
    t0 : array_like, shape (K,)
    jack : array_like, shape (M, K)
        Leave-one-out values.
    level : float

    Returns
    -------
    lo, hi, z0, a : numpy.ndarray, shape (K,)
        Degenerate cases (all T on one side of t0, constant jackknife) give NaN limits.
    """
    a = jackknife_acceleration(jack)
    lo, hi, z0 = _bca_limits(T, t0, a, level)
    return lo, hi, z0, a


def _bca_limits(T, t0, a, level):
    """BCa limits and z0 from T (t0 included) and a given acceleration."""
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    t0 = np.atleast_1d(np.asarray(t0, dtype=np.float64))
    with np.errstate(invalid="ignore", divide="ignore"):
        frac = np.sum(T < t0, axis=0) / T.shape[0]
        z0 = ndtri(frac)
        z = ndtri(np.array([(1 - level) / 2, (1 + level) / 2]))[:, None]
        alpha = ndtr(z0 + (z0 + z) / (1 - a * (z0 + z)))
    alpha = np.where(np.isfinite(z0) & np.isfinite(a), alpha, np.nan)
    q = _quantile7(T, alpha)
    return q[0], q[1], z0


def bca_limits_mc_se(T, t0, a, *, level=0.95, groups: int = 10):
    r"""Monte-Carlo standard errors of the BCa limits, by jackknife over replicate groups.

    The R replicates (row 0 of T is t0 and stays) are cut into ``groups`` contiguous
    groups; the limits are recomputed without each group (z0 and the quantiles change,
    the acceleration does not), and

    .. math:: \mathrm{se}(\ell) = \sqrt{rac{g-1}{g}\sum_k (\ell_{(k)} - ar\ell)^2}

    (jackknife-after-bootstrap over groups; Koehler, Brown & Haneuse 2009). This captures
    the noise of z0 as well as of the extreme quantiles, which order-statistic formulas
    miss for heavy-tailed bootstrap distributions.

    Returns
    -------
    se_low, se_high : numpy.ndarray, shape (K,)
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    R = T.shape[0] - 1
    g = max(2, min(int(groups), R // 20))
    cuts = np.linspace(1, R + 1, g + 1).astype(int)
    lims = []
    for k in range(g):
        keep = np.r_[0, np.arange(1, cuts[k]), np.arange(cuts[k + 1], R + 1)]
        lo, hi, _ = _bca_limits(T[keep], t0, a, level)
        lims.append((lo, hi))
    L = np.array(lims)  # (g, 2, K)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        se = np.sqrt((g - 1) / g * np.sum((L - L.mean(axis=0)) ** 2, axis=0))
    return se[0], se[1]


def percentile_interval(T, *, level=0.95):
    """Percentile interval: type-7 quantiles of T at ``(1 ± level)/2``."""
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    p = np.broadcast_to(np.array([(1 - level) / 2, (1 + level) / 2])[:, None], (2, T.shape[1]))
    q = _quantile7(T, p)
    return q[0], q[1]


def basic_interval(T, t0, *, level=0.95):
    r"""Return the basic (reverse percentile) interval :math:`[2t_0 - q_{hi}, 2t_0 - q_{lo}]`."""
    lo, hi = percentile_interval(T, level=level)
    t0 = np.asarray(t0, dtype=np.float64)
    return 2 * t0 - hi, 2 * t0 - lo


class BootstrapResult(dict):
    """Per-statistic results of :func:`bootstrap_set` (a dict of name -> dict of arrays)."""


def _interval(method, T, t0, jack, level):
    if method == "bca" and isinstance(jack, _Acceleration):  # streamed route
        lo, hi, z0 = _bca_limits(T, t0, jack.a, level)
        a = jack.a
    elif method == "bca":
        lo, hi, z0, a = bca_interval(T, t0, jack, level=level)
    elif method == "percentile":
        (lo, hi), z0, a = percentile_interval(T, level=level), np.nan, np.nan
    elif method == "basic":
        (lo, hi), z0, a = basic_interval(T, t0, level=level), np.nan, np.nan
    else:
        raise InputError(f"unknown bootstrap method {method!r}; choose one of {', '.join(METHODS)}")
    K = T.shape[1]
    return lo, hi, np.broadcast_to(z0, (K,)), np.broadcast_to(a, (K,))


def _summarise_computed(computed_set, name, method, level):
    """Summary of one statistic of one set from its computed (t0, jackknife, blocks)."""
    t0, jack, blocks = computed_set
    T = np.concatenate([t0[name][None, :]] + [b[name] for b in blocks])
    out = _summarise(T, t0[name], None if jack is None else jack[name], method, level)
    out["replicates"] = T
    return out


def _summarise(T, t0, jack, method, level):
    n_nan = np.sum(np.isnan(T), axis=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        bias = np.mean(T, axis=0) - t0  # NaN replicates propagate, as in nptest
        se = np.std(T, axis=0, ddof=1)
    lo, hi, z0, a = _interval(method, T, t0, jack, level)
    return {
        "estimate": t0,
        "bias": bias,
        "se": se,
        "ci_low": lo,
        "ci_high": hi,
        "z0": z0,
        "acceleration": a,
        "n_nan": n_nan,
    }


# ------------------------------------------------------ streamed moment statistics
#: Rows of one group of the streamed moment route: :data:`uqx.resample.SAMPLE_GROUP`
#: sample blocks of the resampling plan (a dask task reads these rows only).
GROUP_ROWS = SAMPLE_GROUP * SAMPLE_BLOCK


#: Rows of a sub-chunk of the leave-one-out pass (fixed: part of the summation order).
_JACK_ROWS = 1 << 16


class _Acceleration:
    """BCa acceleration from the streamed route: stands for the jackknife values."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float64)


def _group_sums(src_E, src_u, lo, hi, plan, g, ncol):
    """Pass 1 over group g: feature sums of the estimate and of every replicate block."""
    E, u = read_rows(src_E.arr, lo, hi), read_rows(src_u.arr, lo, hi)
    F = _moment_features(E, u, ncol)
    return moment_sums(E, u), [plan.sums_group(b, F, g, offset=lo)
                               for b in range(plan.n_blocks)]


def _group_jack(src_E, src_u, lo, hi, S, t0, specs, M):
    r"""Pass 2 over a group: power sums of :math:`x_i = t_{(i)} - t_0` (leave-one-out).

    Returns (K, 4): :math:`(n, \sum x, \sum x^2, \sum x^3)` over the finite values.
    """
    E, u = read_rows(src_E.arr, lo, hi), read_rows(src_u.arr, lo, hi)
    out = np.zeros((len(specs), 4))
    for a in range(0, E.size, _JACK_ROWS):  # fixed sub-chunks: small temporaries
        b = a + _JACK_ROWS
        loo = S[None, :] - moment_sums(E[a:b, None], u[a:b, None])
        for k, s in enumerate(specs):
            x = MOMENT_STATS[s.base](loo, M - 1) - t0[k]
            x = x[np.isfinite(x)]
            out[k] += (x.size, x.sum(), (x * x).sum(), (x * x * x).sum())
    return out


def _acceleration_from_power_sums(P):
    r"""BCa acceleration from the power sums of :math:`x_i = t_{(i)} - t_0`.

    With :math:`m = \sum x / n`: :math:`\sum (m - x)^2 = \sum x^2 - n m^2` and
    :math:`\sum (m - x)^3 = -(\sum x^3 - 3m\sum x^2 + 2 n m^3)`, so
    :math:`a = \sum (m - x)^3 / (6 (\sum (m - x)^2)^{3/2})` (the formula of
    :func:`jackknife_acceleration`; the shift by t0 keeps the sums well conditioned:
    :math:`|m| \ll` the spread of x for a smooth statistic).
    """
    n, s1, s2, s3 = P.T
    with np.errstate(invalid="ignore", divide="ignore"):
        m = s1 / n
        c2 = s2 - n * m * m
        c3 = -(s3 - 3.0 * m * s2 + 2.0 * n * m**3)
        return c3 / (6.0 * c2**1.5)


def _streamed_tasks(E, u, M, specs, n_boot, seed, want_jack):
    """Lazy (t0, acceleration, blocks) of one set by the streamed moment route.

    Group g holds the rows of the plan's group g (:meth:`BootstrapPlan.group_rows`,
    :data:`GROUP_ROWS` rows); a task reads only
    its rows (numpy slices, or the chunks of a dask array), so memory is O(G) per task
    whatever M. Pass 1: the feature sums of the estimate and of every replicate block
    (:meth:`uqx.resample.BootstrapPlan.sums_group`, the same draws as the in-memory
    route); pass 2 (BCa): power sums of the leave-one-out values. Partial sums are added
    in group order, so the result does not depend on the chunking or the scheduler.
    """
    key = streamed_content_key(E, u, M, GROUP_ROWS)
    plan = BootstrapPlan(M=M, n_boot=n_boot, seed=seed, key=key)
    cols = {c for s in specs for c in _MOMENT_COLUMNS[s.base]}
    ncol = 3 if cols <= {0, 1, 2} else 5
    groups = [plan.group_rows(g) for g in range(plan.n_groups)]
    sE, su = ColumnRef(E), ColumnRef(u)
    p1 = [dask.delayed(_group_sums, pure=False)(sE, su, lo, hi, plan, g, ncol)
          for g, (lo, hi) in enumerate(groups)]

    def reduce1(results):
        S = results[0][0]
        reps = list(results[0][1])
        for s_g, r_g in results[1:]:
            S = S + s_g
            reps = [a + b for a, b in zip(reps, r_g, strict=True)]
        t0 = {s.name: MOMENT_STATS[s.base](S[None, :], M) for s in specs}
        blocks = [{s.name: MOMENT_STATS[s.base](
            np.concatenate([r, np.zeros(r.shape[:-1] + (5 - r.shape[-1],))], axis=-1)
            if r.shape[-1] < 5 else r, M)[:, None] for s in specs} for r in reps]
        return S, t0, blocks

    first = dask.delayed(reduce1)(p1)
    S = first[0]
    t0 = first[1]
    if not want_jack:
        return dask.delayed(lambda r: (r[1], None, r[2]))(first)
    t0_vec = dask.delayed(lambda t: np.array([t[s.name][0] for s in specs]))(t0)
    p2 = [dask.delayed(_group_jack, pure=False)(sE, su, lo, hi, S, t0_vec, specs, M)
          for lo, hi in groups]

    def reduce2(r, jacks):
        P = jacks[0]
        for j in jacks[1:]:
            P = P + j
        a = _acceleration_from_power_sums(P)
        return r[1], {s.name: _Acceleration(a[k:k + 1]) for k, s in enumerate(specs)}, r[2]

    return dask.delayed(reduce2)(first, p2)


def _check_common(n_boot, level, method):
    if not (isinstance(n_boot, (int, np.integer)) and n_boot >= 2):
        raise InputError(f"n_boot must be an integer >= 2, got {n_boot!r}")
    if not (isinstance(level, numbers.Real) and 0 < level < 1):
        raise InputError(f"level must be in (0, 1), got {level!r}")
    if method not in METHODS:
        raise InputError(f"unknown bootstrap method {method!r}; choose one of {', '.join(METHODS)}")


def _parse_stats(stats):
    if isinstance(stats, str):  # a single name, not a sequence of letters
        stats = [stats]
    return [parse_stat(s) for s in stats]


def _set_from_arrays(name, E, uE, X, V):
    """SetData of 1-d arrays; pairs with NaN/inf in E or uE are dropped, as in iter_sets."""
    arrs = {}
    for key, v in (("E", E), ("uE", uE), ("X", X), ("V", V)):
        if v is not None:
            arrs[key] = np.asarray(v, dtype=np.float64)
            if arrs[key].ndim != 1:
                raise InputError(f"{key} must be one-dimensional, got shape {arrs[key].shape}")
    sizes = {k: a.size for k, a in arrs.items()}
    if len(set(sizes.values())) != 1:
        raise InputError(f"length mismatch between arrays: {sizes}")
    valid = np.isfinite(arrs["E"]) & np.isfinite(arrs["uE"])
    extra = {}
    for key in ("X", "V"):
        if key in arrs:
            a = arrs[key][valid]
            extra[key] = a if np.isfinite(a).all() else None
    return SetData(str(name), arrs["E"][valid], arrs["uE"][valid], **extra)


def _evaluator(sd, specs, binning):
    return SetEvaluator(sd.E, sd.uE, specs, binning, cond={"X": sd.X, "V": sd.V})


def _run_stacked(ds, specs, binning, n_boot, seed, scheduler, num_workers, want_jack=True,
                 progress=False):
    """Tasks of every set of stacked data: the streamed moment route or the evaluator.

    Returns the computed (t0, jackknife, blocks) of every set and the set sizes.
    """
    moment_only = all(s.family == "moment" for s in specs)
    n_sets = ds.sizes["set"]
    tasks, sizes, loaded = [None] * n_sets, [], []
    for i in range(n_sets):
        m = int(ds["M"].values[i])
        sizes.append(m)
        E, u = ds["E"].data[i, :m], ds["uE"].data[i, :m]
        # the route depends on M only, not on the storage: numpy and dask input of the
        # same rows give the same bits (a dask set of at most one group is read, <= 16 MB)
        if moment_only and m > GROUP_ROWS:
            tasks[i] = _streamed_tasks(E, u, m, specs, n_boot, seed, want_jack)
        else:
            loaded.append(i)
    if loaded:
        sub = ds if len(loaded) == n_sets else ds.isel(set=loaded)
        for i, sd in zip(loaded, iter_sets(sub), strict=True):
            tasks[i] = _set_tasks(sd, specs, binning, n_boot, seed, want_jack)
    return _compute(tasks, scheduler, num_workers, progress), sizes


def _compute(tasks, scheduler, num_workers, progress=False):
    from uqx.progress import progress_bar

    kw = {"scheduler": scheduler or "threads"}
    if num_workers is not None and kw["scheduler"] in ("threads", "processes"):
        kw["num_workers"] = num_workers
    with progress_bar(quiet=not progress):
        (computed,) = dask.compute(tasks, **kw)
    return computed


def _run_sets(sets, specs, binning, n_boot, seed, scheduler, num_workers, want_jack=True):
    """Build and compute the dask graph: per set t0 + jackknife + replicate blocks."""
    return _compute([_set_tasks(sd, specs, binning, n_boot, seed, want_jack) for sd in sets],
                    scheduler, num_workers)


def _set_tasks(sd, specs, binning, n_boot, seed, want_jack):
    """Lazy (t0, jackknife, blocks) of one in-memory set through its evaluator."""
    ev = _evaluator(sd, specs, binning)
    plan = BootstrapPlan(M=sd.M, n_boot=n_boot, seed=seed, key=content_key(sd.E, sd.uE))
    est = dask.delayed(ev.estimate)()
    jack = dask.delayed(ev.jackknife)() if want_jack else None
    if not ev.needs_counts and plan.n_groups > 1:
        # large data, moments only: one task per (replicate block, sample-block group),
        # summed in group order (same bits as the single-task route)
        blocks = [
            dask.delayed(ev.from_moment_partials)(
                [dask.delayed(ev.moment_partial)(plan, b, g) for g in range(plan.n_groups)]
            )
            for b in range(plan.n_blocks)
        ]
    else:
        # count batches of MEMORY_BUDGET / 16 (int32): two threads stay well under 1 GB
        blocks = [dask.delayed(ev.replicates)(plan, b, batch_elems=MEMORY_BUDGET // 16)
                  for b in range(plan.n_blocks)]
    return est, jack, blocks


def bootstrap_set(
    E,
    uE,
    stats: Sequence[str] = ("zms", "rce"),
    *,
    X=None,
    V=None,
    n_boot: int = 10_000,
    method: str = "bca",
    level: float = 0.95,
    seed: int | None = None,
    name: str = "data",
    bins: int = 20,
    binning: str = "equal-count",
    pop_min: int = 30,
    keep_replicates: bool = False,
    scheduler=None,
    num_workers: int | None = None,
) -> BootstrapResult:
    """Bootstrap one data set given as arrays; see :func:`bootstrap` for the parameters.

    Returns
    -------
    BootstrapResult
        ``{stat: {"estimate", "bias", "se", "ci_low", "ci_high", "z0", "acceleration",
        "n_nan"[, "replicates"]}}``, arrays of shape (K,) (K = 1 for scalar statistics,
        the number of bins for per-bin statistics); replicates have shape (R+1, K) with
        t0 first.
    """
    _check_common(n_boot, level, method)
    specs = _parse_stats(stats)
    seed = resolve_seed(seed)
    sd = _set_from_arrays(name, E, uE, X, V)
    cfg = BinningConfig(bins, binning, pop_min)
    (computed,) = _run_sets([sd], specs, cfg, n_boot, seed, scheduler, num_workers,
                            want_jack=method == "bca")
    res = BootstrapResult()
    for s in specs:
        out = _summarise_computed(computed, s.name, method, level)
        if not keep_replicates:
            del out["replicates"]
        res[s.name] = out
    res.seed = seed
    return res


def bootstrap(
    ds,
    stats: Sequence[str] = ("zms", "rce"),
    *,
    n_boot: int = 10_000,
    method: str = "bca",
    level: float = 0.95,
    seed: int | None = None,
    bins: int = 20,
    binning: str = "equal-count",
    pop_min: int = 30,
    keep_replicates: bool = False,
    scheduler=None,
    num_workers: int | None = None,
    progress: bool = False,
) -> xr.Dataset:
    r"""Bootstrap statistics of one or several data sets with shared resamples.

    For every set, all requested statistics are evaluated on the same ``n_boot``
    resamples (drawn as counts, methods: bootstrap), binned statistics re-sort each
    replicate by the binning variable and cut it with the index intervals of the original
    sample, and BCa intervals use the exact jackknife acceleration.

    Parameters
    ----------
    ds : xarray.Dataset
        Input data (:func:`uqx.from_arrays`, :func:`uqx.stack`, loaders).
    stats : sequence of str
        Statistic names: ``zms, rce, mv, mse, rmv, rmse, mean_z, var_z, nll, nll_ref, cc,
        ence, ence_sd, uce, zmse, zve`` (binned ones on uE; suffix ``_X``/``_V`` bins on
        the feature or prediction, e.g. ``zmse_X``).
    n_boot : int, default 10000
        Number of bootstrap replicates R.
    method : {"bca", "percentile", "basic"}
    level : float, default 0.95
    seed : int, optional
        Root seed; drawn from OS entropy and recorded in ``attrs["seed"]`` if omitted.
    bins, binning, pop_min : int, str, int
        Binning of binned statistics (:func:`uqx.binning.make_bins`).
    keep_replicates : bool
        Keep T (t0 first) on a ``replicate`` dimension.
    scheduler, num_workers :
        Passed to :func:`dask.compute` (default: threads). Results do not depend on them.
    progress : bool
        Progress bar on stderr (a terminal only, :func:`uqx.progress.progress_bar`).

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``stat``): ``estimate``, ``bias``, ``se``, ``ci_low``, ``ci_high``,
        ``z0``, ``acceleration``, ``n_nan`` [, ``replicates``]; attrs record the method,
        n_boot, level, seed and binning.

    Notes
    -----
    **Out of core.** When every statistic is a moment statistic and the set is longer
    than :data:`GROUP_ROWS`, numpy- or dask-backed (e.g. a chunked NetCDF opened with
    :func:`uqx.io.open_dataset`), the set is streamed (:func:`_streamed_tasks`; a
    shorter dask-backed set is read, at most 16 MB, and takes the in-memory route, so
    that the route depends on M only): each task
    reads one group of :data:`GROUP_ROWS` rows, the estimate and the replicates are
    feature sums added in group order, and the BCa acceleration comes from power sums
    of the leave-one-out values (a second pass). Memory is O(GROUP_ROWS) per task
    (about 50 MB) whatever M, and numpy and dask inputs of the same data give the same
    bits (tested). Binned and rank statistics hold the set and one sort order in memory.

    Examples
    --------
    >>> import numpy as np, uqx
    >>> rng = np.random.default_rng(1)
    >>> u = rng.uniform(0.5, 2, 500)
    >>> ds = uqx.from_arrays(u * rng.standard_normal(500), u)
    >>> r = uqx.bootstrap(ds, ["zms"], n_boot=500, seed=1)
    >>> bool(r.ci_low.item() < 1 < r.ci_high.item())
    True
    """
    _check_common(n_boot, level, method)
    specs = _parse_stats(stats)
    if any(s.vector for s in specs):
        raise InputError("per-bin statistics (lzisd, lzms) go through uqx.bootstrap_per_bin")
    seed = resolve_seed(seed)
    ds = as_stacked(ds)
    cfg = BinningConfig(bins, binning, pop_min)
    computed, sizes = _run_stacked(ds, specs, cfg, n_boot, seed, scheduler, num_workers,
                                   want_jack=method == "bca", progress=progress)
    names = [s.name for s in specs]
    fields = ["estimate", "bias", "se", "ci_low", "ci_high", "z0", "acceleration", "n_nan"]
    arr = {f: np.full((len(sizes), len(names)), np.nan) for f in fields}
    reps = np.full((len(sizes), len(names), n_boot + 1), np.nan) if keep_replicates else None
    for i, cs in enumerate(computed):
        for j, s in enumerate(specs):
            out = _summarise_computed(cs, s.name, method, level)
            T = out["replicates"]
            for f in fields:
                arr[f][i, j] = out[f][0]
            if reps is not None:
                reps[i, j] = T[:, 0]
    data_vars = {f: (("set", "stat"), arr[f]) for f in fields}
    data_vars["n_nan"] = (("set", "stat"), arr["n_nan"].astype(np.int64))
    if reps is not None:
        data_vars["replicates"] = (("set", "stat", "replicate"), reps)
    out = xr.Dataset(
        data_vars,
        coords={
            "set": ds["set"].values,
            "stat": names,
            "M": ("set", np.array(sizes)),
            **({"replicate": np.arange(n_boot + 1)} if reps is not None else {}),
        },
        attrs=_attrs(method, n_boot, level, seed, cfg),
    )
    _annotate(out)
    return out


def _attrs(method, n_boot, level, seed, cfg):
    return {
        "bootstrap_method": method,
        "n_boot": int(n_boot),
        "level": float(level),
        "seed": int(seed),
        "replicate_block": REPLICATE_BLOCK,
        "binning_scheme": cfg.scheme,
        "n_bins": int(cfg.n_bins),
        "pop_min": int(cfg.pop_min),
        "conventions": "nptest np.boot: T includes t0, bias = mean(T) - t0, "
        "z0 from #{T < t0}/(R+1), exact jackknife acceleration, type-7 quantiles",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


_LONG = {
    "estimate": "point estimate t0",
    "bias": "bootstrap bias mean(T) - t0",
    "se": "bootstrap standard error sd(T)",
    "ci_low": "lower confidence limit",
    "ci_high": "upper confidence limit",
    "z0": "BCa bias-correction z0",
    "acceleration": "BCa acceleration (exact jackknife)",
    "n_nan": "number of NaN bootstrap replicates",
    "replicates": "bootstrap distribution T (t0 first)",
}


def _annotate(out):
    for k, v in _LONG.items():
        if k in out:
            out[k].attrs["long_name"] = v
    if "stat" in out.coords:
        out["stat"].attrs["long_name"] = "statistic"
        out.coords["stat_long_name"] = (
            "stat",
            [
                STAT_INFO.get(str(s).split("_X")[0].split("_V")[0], ("",))[0]
                for s in out["stat"].values
            ],
        )


def bootstrap_per_bin(
    ds,
    stat: str = "lzisd",
    *,
    n_boot: int = 5000,
    method: str = "bca",
    level: float = 0.95,
    seed: int | None = None,
    bins: int = 20,
    binning: str = "equal-count",
    pop_min: int = 30,
    scheduler=None,
    num_workers: int | None = None,
) -> xr.Dataset:
    """Bootstrap a per-bin statistic (``lzisd`` or ``lzms``, suffix ``_X``/``_V``).

    Each bin's value gets its own BCa interval from the shared resamples (nptest vector
    statistics, methods: bootstrap). Sets may have different numbers of bins; the ``bin``
    dimension is padded with NaN.

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``bin``): ``estimate``, ``bias``, ``se``, ``ci_low``, ``ci_high``,
        ``n`` (bin counts), ``x_mid`` (mid-range of the conditioning variable in the bin).
    """
    _check_common(n_boot, level, method)
    spec = parse_stat(stat)
    if not spec.vector:
        raise InputError(f"{stat!r} is not a per-bin statistic (lzisd, lzms)")
    seed = resolve_seed(seed)
    ds = as_stacked(ds)
    sets = list(iter_sets(ds))
    cfg = BinningConfig(bins, binning, pop_min)
    computed = _run_sets(sets, [spec], cfg, n_boot, seed, scheduler, num_workers,
                         want_jack=method == "bca")
    nb = [t0[spec.name].size for t0, _, _ in computed]
    fields = ["estimate", "bias", "se", "ci_low", "ci_high"]
    arr = {f: np.full((len(sets), max(nb)), np.nan) for f in fields + ["n", "x_mid"]}
    for i, (cs, sd) in enumerate(zip(computed, sets, strict=True)):
        out = _summarise_computed(cs, spec.name, method, level)
        for f in fields:
            arr[f][i, : nb[i]] = out[f]
        ev = _evaluator(sd, [spec], cfg)
        b = ev._bins(spec.cond)
        xs = ev.cond[spec.cond][b.order]
        arr["n"][i, : nb[i]] = b.counts
        first = np.minimum(b.edges[:-1], xs.size - 1)
        last = np.maximum(b.edges[1:] - 1, 0)
        # empty bins (equal-width scheme) have no mid-range
        arr["x_mid"][i, : nb[i]] = np.where(b.counts > 0, (xs[first] + xs[last]) / 2, np.nan)
    res = xr.Dataset(
        {f: (("set", "bin"), arr[f]) for f in arr},
        coords={"set": ds["set"].values, "bin": np.arange(max(nb))},
        attrs={**_attrs(method, n_boot, level, seed, cfg), "stat": spec.name, "cond": spec.cond},
    )
    _annotate(res)
    res["n"].attrs["long_name"] = "bin population"
    res["x_mid"].attrs["long_name"] = f"mid-range of {spec.cond} in the bin"
    return res
