"""Thin xarray layer over the kernels: statistics tables of (stacked) data sets.

* :func:`apply_kernel` — any last-axis kernel of :mod:`uqx.engine.stats` over ``sample`` via
  :func:`xarray.apply_ufunc` (``dask="parallelized"``: lazy on dask-backed inputs);
* :func:`compute` — point estimates of named statistics over (``set``, ``stat``), with
  binned statistics cut exactly as the reference code (stable sort, R ``genIntervals``);
* :func:`describe` — every statistic of the foundation plus tailedness, as one Dataset.

Dask-backed inputs: the moment statistics (those of kind ``moment`` in
:data:`uqx.engine.statistic.STATISTICS`: ZMS, RCE, MV, MSE, RMV, RMSE, mean and variance of
z, NLL, NLL_ref) are streamed chunk by chunk as
sums of the per-sample features of :func:`uqx.engine.statistic.moment_sums` (memory bounded by
the chunk size); statistics that need a global sort (binned ones, CC, tailedness) load
each set into memory.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from uqx._checks import check_stats_argument, constant_reason, is_lazy, small_sample_note
from uqx.dataio.model import check_sets, iter_sets
from uqx.engine.binning import TIES, content_order, stable_order
from uqx.engine.defaults import N_BINS, POP_MIN
from uqx.engine.evaluator import SetEvaluator
from uqx.engine.statistic import (
    STATISTICS,
    BinningConfig,
    moment_statistic,
    moment_sums,
    parse_stat,
)
from uqx.engine.stats import correlation
from uqx.engine.stats.tailedness import SAFETY_LIMITS, TAILEDNESS_KEYS, tailedness
from uqx.errors import InputError

TAILEDNESS_VARS = TAILEDNESS_KEYS  # (the same names as uqx.workflow.validation.TAILEDNESS_VARS)

__all__ = ["apply_kernel", "compute", "describe", "DESCRIBE_STATS", "KERNELS"]

#: Statistics reported by :func:`describe` (and ``uqx stats``), in order.
DESCRIBE_STATS = (
    "mv",
    "mse",
    "rmv",
    "rmse",
    "rce",
    "mean_z",
    "var_z",
    "zms",
    "nll",
    "nll_ref",
    "cc",
    "uce",
    "uce_w",
    "ence",
    "ence_sd",
    "zmse",
    "zve",
)

def _moment_kernel(name):
    # the formula of uqx.engine.statistic (one definition), NaN-aware over the last axis,
    # of the inputs it reads
    reads = STATISTICS[name].reads
    if "u" not in reads:
        return lambda E, axis=-1: moment_statistic(name, E, None, axis=axis)
    if "E" not in reads:
        return lambda u, axis=-1: moment_statistic(name, None, u, axis=axis)
    return lambda E, u, axis=-1: moment_statistic(name, E, u, axis=axis)


#: Unbinned kernels usable with :func:`apply_kernel` (name -> (function, needs E, needs u)).
KERNELS = {
    **{name: (_moment_kernel(name), "E" in STATISTICS[name].reads,
              "u" in STATISTICS[name].reads)
       for name in ("mv", "mse", "rmv", "rmse", "rce", "mean_z", "var_z", "zms", "nll",
                    "nll_ref")},
    "cc": (correlation.spearman_cc, True, True),
}


def apply_kernel(ds: xr.Dataset, name: str) -> xr.DataArray:
    """Apply an unbinned kernel over ``sample`` (lazy with dask-backed inputs).

    Parameters
    ----------
    ds : xarray.Dataset
        With ``E`` and ``uE`` over ``sample`` (any other dims are kept, NaN padding
        ignored). Dask arrays chunked along ``sample`` are rechunked to one chunk per
        row (the kernels reduce the whole axis), so one row must fit in memory; for
        large data prefer :func:`compute`, which streams the moment statistics.
    name : str
        One of :data:`KERNELS`.

    Returns
    -------
    xarray.DataArray
        The statistic with ``sample`` reduced, ``long_name`` attribute set.
    """
    if name not in KERNELS:
        raise KeyError(f"unknown kernel {name!r}; choose one of {', '.join(KERNELS)}")
    fn, needs_e, needs_u = KERNELS[name]
    args = ([ds["E"]] if needs_e else []) + ([ds["uE"]] if needs_u else [])
    args = [a.chunk({"sample": -1}) if is_lazy(a.data) else a for a in args]
    out = xr.apply_ufunc(
        lambda *a: fn(*a, axis=-1),
        *args,
        input_core_dims=[["sample"]] * len(args),
        dask="parallelized",
        output_dtypes=[np.float64],
    )
    return out.rename(name).assign_attrs(long_name=STATISTICS[name].long_name)


def _lazy_moment_sums(ds: xr.Dataset) -> list:
    """Feature sums (z², u², E², z, ln u²) of every set, streamed over the chunks.

    One :func:`uqx.engine.statistic.moment_sums` task per chunk of the ``M`` real rows, summed
    in chunk order: memory is bounded by the chunks in flight.
    """
    import dask
    import dask.array as da

    out = []
    for i in range(ds.sizes["set"]):
        m = int(ds["M"].values[i])
        E = da.asarray(ds["E"].data[i, :m])
        u = da.asarray(ds["uE"].data[i, :m]).rechunk(E.chunks)
        parts = [dask.delayed(moment_sums)(e, w)
                 for e, w in zip(E.to_delayed(), u.to_delayed(), strict=True)]
        out.append(dask.delayed(lambda p: np.sum(np.stack(p), axis=0))(parts))
    return out


def compute(
    ds,
    stats: Sequence[str] = DESCRIBE_STATS,
    *,
    bins: int = N_BINS,
    binning: str = "equal-count",
    pop_min: int = POP_MIN,
    drop_nonfinite: bool = False,
    ties: str = "content",
) -> xr.DataArray:
    """Point estimates of statistics for every set: DataArray over (``set``, ``stat``).

    Binned statistics (ENCE, UCE, ZMSE, ZVE; suffix ``_X``/``_V`` to bin on X or V) use
    ``bins`` bins of the given scheme over the stably sorted conditioning variable, the
    rows first put in the order of uE with tie groups split as ``ties`` says, as
    :func:`uqx.validate` does: the same file gives the same numbers in both.

    Parameters
    ----------
    ds : xarray.Dataset or sequence of xarray.Dataset
        Any form accepted by :func:`uqx.dataio.model.as_stacked` (checked there).
    stats : sequence of str
        Statistic names (default :data:`DESCRIBE_STATS`).
    bins, binning, pop_min : int, str, int
        Binning of the binned statistics.
    drop_nonfinite : bool, default False
        Drop (and count) rows with NaN/inf instead of raising (see ``as_stacked``).
    ties : {"content", "file-order"}, default "content"
        How rows with equal uE (or X, V) are split between bins: by a hash of each row
        (:func:`uqx.engine.binning.content_order`; the result does not depend on the
        order of the rows) or in the order of the file (R's ``order()``, the papers'
        convention). Without ties both give the same numbers.

    Notes
    -----
    With dask-backed data the moment statistics are streamed (bounded memory, sums of
    :func:`uqx.engine.statistic.moment_sums` per chunk, then
    ``STATISTICS[name].finish(S, M)``);
    binned statistics and CC sort the whole set and load it into memory.
    """
    specs = [parse_stat(s) for s in check_stats_argument(stats)]
    if ties not in TIES:
        raise InputError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    checked = check_sets(ds, drop_nonfinite=drop_nonfinite)
    ds = checked.data
    bin_cfg = BinningConfig(bins, binning, pop_min)
    lazy = is_lazy(ds["E"].data) or is_lazy(ds["uE"].data)
    streamed = [s for s in specs if s.family == "moment"] if lazy else []
    rest = [s for s in specs if s not in streamed]
    names = [s.name for s in specs]
    out = np.full((ds.sizes["set"], len(specs)), np.nan)
    notes = []
    if streamed:
        import dask

        sums = dask.compute(*_lazy_moment_sums(ds))
        for i, S in enumerate(sums):
            m = int(ds["M"].values[i])
            for s in streamed:
                out[i, names.index(s.name)] = float(STATISTICS[s.base].finish(S, m))
    if rest:
        for i, sd in enumerate(iter_sets(checked)):
            use = rest
            if sd.M < pop_min and any(s.family == "binned" for s in rest):
                # too few points for one bin (methods: edge cases): binned statistics are NaN, noted
                use = [s for s in rest if s.family != "binned"]
                notes.append(
                    f"{sd.name}: M={sd.M} < pop_min={pop_min}, binned statistics not computed"
                )
            cols = _in_order(sd, ties)
            try:
                ev = SetEvaluator(cols["E"], cols["uE"], use, bin_cfg,
                                  cond={"X": cols["X"], "V": cols["V"]})
            except InputError as exc:  # name the set: in a stack, only some may lack X
                raise InputError(f"{sd.name}: {exc}") from None
            t0 = ev.estimate()
            for s in use:
                out[i, names.index(s.name)] = float(t0[s.name][0])
    return xr.DataArray(
        out,
        dims=("set", "stat"),
        coords={"set": ds["set"].values, "stat": names},
        name="estimate",
        attrs={
            "n_bins": int(bins),
            "binning_scheme": binning,
            "pop_min": int(pop_min),
            "ties": ties,
            "notes": "\n".join(notes),
        },
    )


def _in_order(sd, ties: str) -> dict:
    """Return the columns of one set in the order of uE, tie groups as ``ties`` says.

    The order of :func:`uqx.validate` (its ``order_step``): content order or the stable
    order of uE; bins on X or V then sort these rows stably.
    """
    extra = [c for c in (sd.X, sd.V) if c is not None]
    order = (content_order(sd.uE, sd.E, *extra) if ties == "content"
             else stable_order(sd.uE))
    return {k: None if v is None else np.asarray(v)[order]
            for k, v in (("E", sd.E), ("uE", sd.uE), ("X", sd.X), ("V", sd.V))}


def describe(
    ds,
    *,
    stats: Sequence[str] = DESCRIBE_STATS,
    tails: bool = True,
    bins: int = N_BINS,
    binning: str = "equal-count",
    pop_min: int = POP_MIN,
    drop_nonfinite: bool = False,
    ties: str = "content",
) -> xr.Dataset:
    """All statistics of the foundation and the tailedness metrics of every set.

    Parameters
    ----------
    ds : xarray.Dataset or sequence of xarray.Dataset
        Any form accepted by :func:`uqx.dataio.model.as_stacked`.
    stats : sequence of str
        Statistics (default :data:`DESCRIBE_STATS`).
    tails : bool, default True
        Add the tailedness metrics of 001 (they sort each set: loaded into memory).
    bins, binning, pop_min, drop_nonfinite, ties
        As in :func:`compute` (``ties``: how tie groups of uE, X, V are split between
        bins, as in :func:`uqx.validate`).

    Returns
    -------
    xarray.Dataset
        ``estimate(set, stat)``, tailedness metrics over ``set`` (with their 001 Table II
        ``safety_limit`` attrs), ``M`` and ``n_dropped``. With dask-backed data and only
        moment statistics (``tails=False``) the data are streamed (see :func:`compute`).
    """
    checked = check_sets(ds, drop_nonfinite=drop_nonfinite)
    ds = checked.data
    est = compute(checked, stats, bins=bins, binning=binning, pop_min=pop_min, ties=ties)
    out = est.to_dataset()
    if tails:
        values = {k: [] for k in TAILEDNESS_VARS}
        for sd in iter_sets(checked):
            t = tailedness(sd.E, sd.uE)
            for k in TAILEDNESS_VARS:
                values[k].append(float(t[k]))
        for k, v in values.items():
            out[k] = ("set", np.array(v), {"safety_limit": SAFETY_LIMITS.get(k, np.nan)})
    out = out.assign_coords(M=("set", ds["M"].values))
    out["n_dropped"] = ("set", ds["n_dropped"].values)
    long = [STATISTICS[parse_stat(str(s)).base].long_name for s in est["stat"].values]
    out["stat_long_name"] = ("stat", long)
    out.attrs.update(est.attrs)
    small = [small_sample_note(str(n), m) for n, m in zip(ds["set"].values, ds["M"].values,
                                                          strict=True)]
    for sd in iter_sets(checked) if not is_lazy(ds["uE"].data) else []:
        why = constant_reason(sd.uE, "uE")
        if why:
            small.append(f"{sd.name}: {why}: CC is undefined and the binned statistics "
                         "(ENCE, UCE, ZMSE, ZVE) split equal values arbitrarily, so they do "
                         "not measure consistency")
    out.attrs["notes"] = "\n".join(x for x in [out.attrs.get("notes", ""), *small] if x)
    return out
