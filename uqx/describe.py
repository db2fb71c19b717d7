"""Thin xarray layer over the kernels: statistics tables of (stacked) data sets.

* :func:`apply_kernel` — any last-axis kernel of :mod:`uqx.stats` over ``sample`` via
  :func:`xarray.apply_ufunc` (``dask="parallelized"``: lazy on dask-backed inputs);
* :func:`compute` — point estimates of named statistics over (``set``, ``stat``), with
  binned statistics cut exactly as the reference code (stable sort, R ``genIntervals``);
* :func:`describe` — every statistic of the foundation plus tailedness, as one Dataset.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from uqx.data import as_stacked, iter_sets
from uqx.statistic import STAT_INFO, BinningConfig, SetEvaluator, parse_stat
from uqx.stats import calibration, correlation
from uqx.stats.tailedness import SAFETY_LIMITS, tailedness
from uqx.validate import TAILEDNESS_VARS

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
    "ence",
    "ence_sd",
    "zmse",
    "zve",
)

#: Unbinned kernels usable with :func:`apply_kernel` (name -> (function, needs E, needs u)).
KERNELS = {
    "mv": (calibration.mv, False, True),
    "mse": (calibration.mse, True, False),
    "rmv": (calibration.rmv, False, True),
    "rmse": (calibration.rmse, True, False),
    "rce": (calibration.rce, True, True),
    "mean_z": (calibration.mean_z, True, True),
    "var_z": (calibration.var_z, True, True),
    "zms": (calibration.zms, True, True),
    "nll": (calibration.nll, True, True),
    "nll_ref": (calibration.nll_ref, False, True),
    "cc": (correlation.spearman_cc, True, True),
}


def apply_kernel(ds: xr.Dataset, name: str) -> xr.DataArray:
    """Apply an unbinned kernel over ``sample`` (lazy with dask-backed inputs).

    Parameters
    ----------
    ds : xarray.Dataset
        With ``E`` and ``uE`` over ``sample`` (any other dims are kept, NaN padding
        ignored).
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
    out = xr.apply_ufunc(
        lambda *a: fn(*a, axis=-1),
        *args,
        input_core_dims=[["sample"]] * len(args),
        dask="parallelized",
        output_dtypes=[np.float64],
    )
    return out.rename(name).assign_attrs(long_name=STAT_INFO[name][0])


def compute(
    ds,
    stats: Sequence[str] = DESCRIBE_STATS,
    *,
    bins: int = 20,
    binning: str = "equal-count",
    pop_min: int = 30,
) -> xr.DataArray:
    """Point estimates of statistics for every set: DataArray over (``set``, ``stat``).

    Binned statistics (ENCE, UCE, ZMSE, ZVE; suffix ``_X``/``_V`` to bin on X or V) use
    ``bins`` bins of the given scheme over the stably sorted conditioning variable.
    """
    specs = [parse_stat(s) for s in stats]
    ds = as_stacked(ds)
    cfg = BinningConfig(bins, binning, pop_min)
    rows = []
    notes = []
    for sd in iter_sets(ds):
        use = specs
        if sd.M < pop_min and any(s.family == "binned" for s in specs):
            # too few points for one bin (METHODS §12): binned statistics are NaN, noted
            use = [s for s in specs if s.family != "binned"]
            notes.append(f"{sd.name}: M={sd.M} < pop_min={pop_min}, binned statistics not computed")
        ev = SetEvaluator(sd.E, sd.uE, use, cfg, cond={"X": sd.X, "V": sd.V})
        t0 = ev.estimate()
        rows.append([float(t0[s.name][0]) if s.name in t0 else np.nan for s in specs])
    return xr.DataArray(
        np.array(rows),
        dims=("set", "stat"),
        coords={"set": ds["set"].values, "stat": [s.name for s in specs]},
        name="estimate",
        attrs={
            "n_bins": int(bins),
            "binning_scheme": binning,
            "pop_min": int(pop_min),
            "notes": "\n".join(notes),
        },
    )


def describe(ds, *, bins: int = 20, binning: str = "equal-count", pop_min: int = 30) -> xr.Dataset:
    """All statistics of the foundation and the tailedness metrics of every set.

    Returns
    -------
    xarray.Dataset
        ``estimate(set, stat)`` for :data:`DESCRIBE_STATS`, tailedness metrics over
        ``set`` (with their 001 Table II ``safety_limit`` attrs), ``M`` and ``n_dropped``.
    """
    ds = as_stacked(ds)
    est = compute(ds, DESCRIBE_STATS, bins=bins, binning=binning, pop_min=pop_min)
    out = est.to_dataset()
    tails = {k: [] for k in TAILEDNESS_VARS}
    for sd in iter_sets(ds):
        t = tailedness(sd.E, sd.uE)
        for k in TAILEDNESS_VARS:
            tails[k].append(float(t[k]))
    for k, v in tails.items():
        out[k] = ("set", np.array(v), {"safety_limit": SAFETY_LIMITS.get(k, np.nan)})
    out = out.assign_coords(M=("set", ds["M"].values))
    out["n_dropped"] = (
        "set",
        ds["n_dropped"].values if "n_dropped" in ds else np.zeros(ds.sizes["set"], int),
    )
    out["stat_long_name"] = ("stat", [STAT_INFO[s][0] for s in DESCRIBE_STATS])
    out.attrs.update(est.attrs)
    return out
