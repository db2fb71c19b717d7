r"""Bootstrap engine: shared resamples, exact jackknife, BCa / percentile / basic intervals.

Conventions follow ``nptest::np.boot`` as used for the papers' numbers (methods: bootstrap):

* the bootstrap distribution is :math:`T = [t_0; t^*_1; \dots; t^*_R]` (R+1 values);
* standard error :math:`\mathrm{sd}(T)` (n−1); bias :math:`b_{BS} = \bar T - t_0`;
* :math:`z_0 = \Phi^{-1}(\#\{T < t_0\}/(R+1))` (strict <, t0 counted);
* acceleration from the exact leave-one-out values :math:`t_{(i)}`:
  :math:`a = \sum (\bar t - t_{(i)})^3 / (6 (\sum (\bar t - t_{(i)})^2)^{3/2})`;
* :math:`\alpha_k = \Phi(z_0 + (z_0+z_k)/(1 - a(z_0+z_k)))`, CI = type-7 quantiles of T
  (the interval formulas: :mod:`uqx.engine.confidence`).

Work is cut into (set, replicate-block) tasks scheduled by dask; each block draws from a
generator keyed by (seed, data content digest, block), so results are bitwise identical for any
scheduler or number of workers.
"""

from __future__ import annotations

import numbers
import warnings
from collections.abc import Sequence

import dask
import numpy as np
import xarray as xr

from uqx._checks import is_lazy
from uqx.dataio.model import InputError, SetData, check_sets, checked_columns, iter_sets
from uqx.dataio.provenance import provenance_attrs
from uqx.dataio.schema import BOOTSTRAP, BOOTSTRAP_PER_BIN
from uqx.engine.confidence import (
    METHODS,
    BcaInterval,
    basic_interval,
    bca_interval,
    bca_limits,
    percentile_interval,
)
from uqx.engine.defaults import LEVEL, LONG_SET_ROWS, N_BINS, N_BOOT, N_BOOT_PER_BIN, POP_MIN
from uqx.engine.evaluator import SetEvaluator
from uqx.engine.resample import (
    MEMORY_BUDGET,
    REPLICATE_BLOCK,
    BootstrapPlan,
    content_key,
    resolve_seed,
)
from uqx.engine.statistic import STATISTICS, BinningConfig, parse_stat
from uqx.inference.streamed import GROUP_ROWS, Acceleration, SetTasks, streamed_tasks
from uqx.progress import compute_tasks

__all__ = [
    "bootstrap",
    "bootstrap_set",
    "bootstrap_samples",
    "bootstrap_per_bin",
    "BootstrapResult",
]

class BootstrapResult(dict):
    """Per-statistic results of :func:`bootstrap_set` (a dict of name -> dict of arrays)."""


def _interval(method, T, t0, jack, level):
    if method == "bca" and isinstance(jack, Acceleration):  # streamed route
        lo, hi, z0 = bca_limits(T, t0, jack.a, level)
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
    return BcaInterval(lo, hi, np.broadcast_to(z0, (K,)), np.broadcast_to(a, (K,)))


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


def _set_from_arrays(name, E, uE, X, V, *, drop_nonfinite=False):
    """SetData of 1-d arrays, through the input checks of :func:`uqx.from_arrays`.

    NaN/inf in any given column raise :class:`InputError` (count and first rows named),
    as do ``uE <= 0``, fewer than 2 rows, a length mismatch or non-numeric data. With
    ``drop_nonfinite`` the rows with NaN/inf are dropped and their count is reported by a
    :class:`UserWarning` (never silently).

    Returns
    -------
    sd : SetData
    n_dropped : int
    """
    name = str(name)
    cols, n_dropped, _ = checked_columns(E, uE, X, V, name=name,
                                         drop_nonfinite=drop_nonfinite)
    if n_dropped:
        warnings.warn(f"{name}: dropped {n_dropped} row(s) with NaN or infinite values "
                      f"(drop_nonfinite=True); {int(cols['E'].shape[0])} row(s) left",
                      UserWarning, stacklevel=3)
    cols = {k: np.asarray(v.compute() if is_lazy(v) else v) for k, v in cols.items()}
    return SetData(name, cols["E"], cols["uE"], X=cols.get("X"), V=cols.get("V")), n_dropped


def _evaluator(sd, specs, binning):
    try:
        return SetEvaluator(sd.E, sd.uE, specs, binning, cond={"X": sd.X, "V": sd.V})
    except InputError as exc:  # name the set: in a stack, only some may lack X or V
        raise InputError(f"{sd.name}: {exc}") from None


def _run_stacked(checked, specs, binning, n_boot, seed, scheduler, num_workers, want_jack=True,
                 progress=False):
    """Tasks of every set of checked data: the streamed moment route or the evaluator.

    Returns the computed :class:`SetTasks` of every set and the set sizes.
    """
    ds = checked.data
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
            tasks[i] = streamed_tasks(E, u, m, specs, n_boot, seed, want_jack)
        else:
            loaded.append(i)
    if loaded:
        sub = checked if len(loaded) == n_sets else checked.select(loaded)
        for i, sd in zip(loaded, iter_sets(sub), strict=True):
            tasks[i] = _set_tasks(sd, specs, binning, n_boot, seed, want_jack)
    return _compute(tasks, scheduler, num_workers, progress), sizes


def _compute(tasks, scheduler, num_workers, progress=False):
    return compute_tasks(tasks, scheduler=scheduler, num_workers=num_workers, quiet=not progress)


def _run_sets(sets, specs, binning, n_boot, seed, scheduler, num_workers, want_jack=True):
    """Build and compute the dask graph: per set t0 + jackknife + replicate blocks."""
    return _compute([_set_tasks(sd, specs, binning, n_boot, seed, want_jack) for sd in sets],
                    scheduler, num_workers)


def _call(fn, _after, *args, **kwargs):
    """``fn(*args, **kwargs)`` once the task ``_after`` is done (an ordering edge)."""
    return fn(*args, **kwargs)


def _acceleration_of(ev, t0):
    """:meth:`SetEvaluator.acceleration` wrapped as :class:`Acceleration` per statistic."""
    return {k: Acceleration(a) for k, a in ev.acceleration(t0).items()}


def _set_tasks(sd, specs, binning, n_boot, seed, want_jack):
    """Lazy :class:`SetTasks` of one in-memory set through its evaluator."""
    ev = _evaluator(sd, specs, binning)
    plan = BootstrapPlan(M=sd.M, n_boot=n_boot, seed=seed, key=content_key(sd.E, sd.uE))
    est = dask.delayed(ev.estimate)()
    # the estimate builds the evaluator's shared preparations (sort orders) with its own
    # transients; the jackknife and the count blocks (replicate-block tasks) wait for it,
    # so those never overlap the leave-one-out values (memory only: same results)
    after = est if ev.needs_counts else None
    jack = None
    if want_jack and sd.M > LONG_SET_ROWS:
        # long sets: the acceleration from power sums, never the M leave-one-out values
        jack = dask.delayed(_acceleration_of, pure=False)(ev, est)
    elif want_jack:
        jack = dask.delayed(_call, pure=False)(ev.jackknife, after)
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
        blocks = [dask.delayed(_call, pure=False)(ev.replicates, after, plan, b,
                                                   batch_elems=MEMORY_BUDGET // 16)
                  for b in range(plan.n_blocks)]
    return SetTasks(est, jack, blocks)


def bootstrap_set(
    E,
    uE,
    stats: Sequence[str] = ("zms", "rce"),
    *,
    X=None,
    V=None,
    n_boot: int = N_BOOT,
    method: str = "bca",
    level: float = LEVEL,
    seed: int | None = None,
    name: str = "data",
    bins: int = N_BINS,
    binning: str = "equal-count",
    pop_min: int = POP_MIN,
    keep_replicates: bool = False,
    drop_nonfinite: bool = False,
    scheduler=None,
    num_workers: int | None = None,
) -> BootstrapResult:
    """Bootstrap one data set given as arrays (:func:`bootstrap` on ``from_arrays``).

    Parameters
    ----------
    E, uE : array_like, shape (M,)
        Errors and their uncertainties (> 0). They go through the checks of
        :func:`uqx.from_arrays`: NaN/inf, ``uE <= 0`` or fewer than 2 rows raise
        :class:`InputError`.
    stats : sequence of str, default ("zms", "rce")
        Statistic names (as for :func:`bootstrap`).
    X, V : array_like, shape (M,), optional
        Conditioning variables of the statistics binned on X or V (checked like E).
    n_boot : int, default 10000
        Bootstrap replicates.
    method : {"bca", "percentile", "basic"}, default "bca"
        Interval method.
    level : float, default 0.95
        Confidence level.
    seed : int, optional
        Root seed (drawn and recorded when None).
    name : str, default "data"
        Name of the set (attributes only: the random streams are keyed by content).
    bins, binning, pop_min : int, str, int
        Binning of the binned statistics (20 equal-count bins, at least 30 points).
    keep_replicates : bool, default False
        Also return the replicates.
    drop_nonfinite : bool, default False
        Drop the rows with NaN/inf in E, uE, X or V instead of raising; their count is
        reported by a ``UserWarning`` and in ``result.n_dropped``.
    scheduler, num_workers
        Dask scheduler and its workers (as for :func:`bootstrap`).

    Returns
    -------
    BootstrapResult
        ``{stat: {"estimate", "bias", "se", "ci_low", "ci_high", "z0", "acceleration",
        "n_nan"[, "replicates"]}}``, arrays of shape (K,) (K = 1 for scalar statistics,
        the number of bins for per-bin statistics); replicates have shape (R+1, K) with
        t0 first. Attributes ``seed`` (the root seed used) and ``n_dropped``.

    Raises
    ------
    InputError
        NaN/inf values (without ``drop_nonfinite``), ``uE <= 0``, fewer than 2 rows,
        length mismatch, non-numeric data, and invalid settings.
    """
    _check_common(n_boot, level, method)
    specs = _parse_stats(stats)
    seed = resolve_seed(seed)
    sd, n_dropped = _set_from_arrays(name, E, uE, X, V, drop_nonfinite=drop_nonfinite)
    bin_cfg = BinningConfig(bins, binning, pop_min)
    (computed,) = _run_sets([sd], specs, bin_cfg, n_boot, seed, scheduler, num_workers,
                            want_jack=method == "bca")
    res = BootstrapResult()
    for s in specs:
        out = _summarise_computed(computed, s.name, method, level)
        if not keep_replicates:
            del out["replicates"]
        res[s.name] = out
    res.seed = seed
    res.n_dropped = n_dropped
    return res


def bootstrap_samples(
    samples: Sequence[tuple],
    stat: str,
    *,
    n_boot: int,
    seed: int,
    method: str = "bca",
    level: float = LEVEL,
    scheduler=None,
    num_workers: int | None = None,
) -> np.ndarray:
    """Bootstrap one scalar statistic on several small samples, in one computation.

    The samples (the bins of a curve, say) are resampled by the engine's plans like any
    set: each by its own keyed stream (``seed`` and the sample's content), BCa with the
    exact jackknife of the sample.

    Parameters
    ----------
    samples : sequence of (E, uE) pairs of 1-d arrays
        The samples.
    stat : str
        A scalar statistic of the engine (``"rmse"``, ``"var_z"``, ``"zms"``...).
    n_boot : int
        Bootstrap replicates.
    seed : int
        Root seed.
    method : {"bca", "percentile", "basic"}
        Interval method.
    level : float
        Confidence level.
    scheduler, num_workers
        Dask scheduler (default threads) and its workers.

    Returns
    -------
    numpy.ndarray
        Shape (n_samples, 3): estimate, ``ci_low``, ``ci_high`` of each sample.
    """
    _check_common(n_boot, level, method)
    specs = _parse_stats([stat])
    if specs[0].vector:
        raise InputError(f"{stat!r} is a per-bin statistic; bootstrap_samples takes a scalar one")
    sets = [_set_from_arrays(f"sample{i}", E, u, None, None)[0]
            for i, (E, u) in enumerate(samples)]
    if not sets:
        return np.empty((0, 3))
    computed = _run_sets(sets, specs, BinningConfig(), n_boot, int(seed), scheduler,
                         num_workers, want_jack=method == "bca")
    out = np.empty((len(sets), 3))
    for i, cs in enumerate(computed):
        s = _summarise_computed(cs, specs[0].name, method, level)
        out[i] = s["estimate"][0], s["ci_low"][0], s["ci_high"][0]
    return out


def bootstrap(
    ds,
    stats: Sequence[str] = ("zms", "rce"),
    *,
    n_boot: int = N_BOOT,
    method: str = "bca",
    level: float = LEVEL,
    seed: int | None = None,
    bins: int = N_BINS,
    binning: str = "equal-count",
    pop_min: int = POP_MIN,
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
        Binning of binned statistics (:func:`uqx.engine.binning.make_bins`).
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
    than :data:`~uqx.inference.streamed.GROUP_ROWS`, numpy- or dask-backed (e.g. a chunked
    NetCDF opened with :func:`uqx.open_dataset`), the set is streamed
    (:func:`~uqx.inference.streamed.streamed_tasks`; a shorter dask-backed set is read, at
    most 16 MB, and takes the in-memory route, so that the route depends on M only): each
    task reads one group of rows, the estimate and the replicates are feature sums added in
    group order, and the BCa acceleration comes from power sums of the leave-one-out values
    (a second pass). Memory is O(GROUP_ROWS) per task (about 50 MB) whatever M, and numpy
    and dask inputs of the same data give the same bits (tested). Binned and rank
    statistics hold the set and one sort order in memory.

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
    checked = check_sets(ds)
    ds = checked.data
    bin_cfg = BinningConfig(bins, binning, pop_min)
    computed, sizes = _run_stacked(checked, specs, bin_cfg, n_boot, seed, scheduler, num_workers,
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
        attrs=_attrs(method, n_boot, level, seed, bin_cfg),
    )
    _annotate(out)
    return out


def _attrs(method, n_boot, level, seed, bin_cfg):
    return provenance_attrs(
        seed=seed,
        bootstrap_method=method,
        n_boot=int(n_boot),
        level=float(level),
        replicate_block=REPLICATE_BLOCK,
        binning_scheme=bin_cfg.scheme,
        n_bins=int(bin_cfg.n_bins),
        pop_min=int(bin_cfg.pop_min),
        conventions="nptest np.boot: T includes t0, bias = mean(T) - t0, "
        "z0 from #{T < t0}/(R+1), exact jackknife acceleration, type-7 quantiles",
    )


def _annotate(out, group=BOOTSTRAP, **fields):
    """Give the variables of ``out`` their attributes (:mod:`uqx.dataio.schema`).

    ``fields``: those of the long names; the ``stat`` coordinate gets the long names of
    the statistics too (``stat_long_name``).
    """
    group.annotate(out, **fields)
    if "stat" in out.coords:
        out.coords["stat_long_name"] = (
            "stat",
            [STATISTICS[parse_stat(str(s)).base].long_name for s in out["stat"].values],
        )


def bootstrap_per_bin(
    ds,
    stat: str = "lzisd",
    *,
    n_boot: int = N_BOOT_PER_BIN,
    method: str = "bca",
    level: float = LEVEL,
    seed: int | None = None,
    bins: int = N_BINS,
    binning: str = "equal-count",
    pop_min: int = POP_MIN,
    scheduler=None,
    num_workers: int | None = None,
) -> xr.Dataset:
    """Bootstrap a per-bin statistic (``lzisd`` or ``lzms``, suffix ``_X``/``_V``).

    Each bin's value gets its own BCa interval from the shared resamples (nptest vector
    statistics, methods: bootstrap). Sets may have different numbers of bins; the ``bin``
    dimension is padded with NaN.

    Parameters
    ----------
    ds : xarray.Dataset
        Input data (one set or several stacked on ``set``).
    stat : str, default "lzisd"
        Per-bin statistic: ``lzisd`` or ``lzms``, suffix ``_X``/``_V`` to bin on the
        feature or the prediction.
    n_boot : int, default N_BOOT_PER_BIN (5000)
        Bootstrap replicates.
    method : {"bca", "percentile", "basic"}, default "bca"
        Interval method.
    level : float, default LEVEL (0.95)
        Confidence level.
    seed : int, optional
        Root seed; drawn and recorded in ``attrs["seed"]`` if omitted.
    bins, binning, pop_min : int, str, int
        Binning (:func:`uqx.engine.binning.make_bins`).
    scheduler, num_workers
        Passed to :func:`dask.compute` (default: threads). Results do not depend on them.

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
    checked = check_sets(ds)
    ds = checked.data
    sets = list(iter_sets(checked))
    bin_cfg = BinningConfig(bins, binning, pop_min)
    computed = _run_sets(sets, [spec], bin_cfg, n_boot, seed, scheduler, num_workers,
                         want_jack=method == "bca")
    nb = [t0[spec.name].size for t0, _, _ in computed]
    fields = ["estimate", "bias", "se", "ci_low", "ci_high"]
    arr = {f: np.full((len(sets), max(nb)), np.nan) for f in fields + ["n", "x_mid"]}
    for i, (cs, sd) in enumerate(zip(computed, sets, strict=True)):
        out = _summarise_computed(cs, spec.name, method, level)
        for f in fields:
            arr[f][i, : nb[i]] = out[f]
        ev = _evaluator(sd, [spec], bin_cfg)
        b = ev.bins_of(spec.cond)
        xs = ev.cond[spec.cond][b.order]
        arr["n"][i, : nb[i]] = b.counts
        first = np.minimum(b.edges[:-1], xs.size - 1)
        last = np.maximum(b.edges[1:] - 1, 0)
        # empty bins (equal-width scheme) have no mid-range
        arr["x_mid"][i, : nb[i]] = np.where(b.counts > 0, (xs[first] + xs[last]) / 2, np.nan)
    res = xr.Dataset(
        {f: (("set", "bin"), arr[f]) for f in arr},
        coords={"set": ds["set"].values, "bin": np.arange(max(nb))},
        attrs={**_attrs(method, n_boot, level, seed, bin_cfg), "stat": spec.name,
               "cond": spec.cond},
    )
    _annotate(res, BOOTSTRAP_PER_BIN, cond=spec.cond)
    return res
