"""Helpers shared by the studies: input checks, summaries, BCa of ZMS/RCE, execution."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import xarray as xr

from uqx.dataio.model import as_stacked, iter_sets
from uqx.dataio.netcdf import json_default, to_netcdf
from uqx.dataio.paths import check_output_path
from uqx.engine.confidence import bca_interval
from uqx.engine.defaults import LEVEL
from uqx.engine.evaluator import SetEvaluator
from uqx.engine.resample import BootstrapPlan, content_key
from uqx.engine.statistic import parse_stat
from uqx.errors import InputError, OutputError
from uqx.inference.zeta import binomial_ci
from uqx.sweeps.engine import Study, finish_run, run_dir_for, run_sweep

__all__ = [
    "check_axis",
    "check_int",
    "mean_se",
    "rate_interval",
    "zms_rce_bca",
    "execute",
    "set_arrays",
]


def check_axis(values, name: str, *, kind=float, minimum=None, strict=False) -> list:
    """Check a grid axis: non-empty, of ``kind``, above ``minimum``; return it as a list."""
    try:
        vals = [kind(v) for v in (values if np.ndim(values) else [values])]
    except (TypeError, ValueError):
        raise InputError(f"grid axis {name!r}: cannot read {values!r} as numbers") from None
    if not vals:
        raise InputError(f"grid axis {name!r} is empty: give at least one value")
    if kind is float and not all(np.isfinite(vals)):
        raise InputError(f"grid axis {name!r} holds a non-finite value: {vals}")
    if kind is int and any(v != float(x) for v, x in zip(vals, values, strict=True)):
        raise InputError(f"grid axis {name!r} must hold integers, got {list(values)}")
    if len(set(vals)) != len(vals):
        raise InputError(f"grid axis {name!r} holds repeated values: {vals}")
    if minimum is not None:
        bad = [v for v in vals if (v <= minimum if strict else v < minimum)]
        if bad:
            rel = ">" if strict else ">="
            raise InputError(f"grid axis {name!r}: values must be {rel} {minimum}, got {bad}")
    return vals


def check_int(value, name: str, *, minimum: int) -> int:
    """Check an integer option (``n_mc``, ``n_boot``...) against its minimum."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def rate_interval(x, n):
    """Rate x/n with its Wilson-cc 95 % interval (methods page, ζ-scores); NaN where n = 0.

    Parameters
    ----------
    x, n : array_like of int
        Counts of successes and of trials, same shape.

    Returns
    -------
    rate, low, high : numpy.ndarray
    """
    x, n = np.asarray(x), np.asarray(n)
    lo, hi = np.full(n.shape, np.nan), np.full(n.shape, np.nan)
    ok = n > 0
    if ok.any():
        lo[ok], hi[ok] = binomial_ci(x[ok], n[ok], method="wilsoncc")
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(ok, x / np.maximum(n, 1), np.nan)
    return rate, lo, hi


def mean_se(da: xr.DataArray, dim: str = "replicate"):
    r"""Mean and Monte-Carlo standard error :math:`s/\sqrt{n}` over ``dim`` (NaN skipped)."""
    n = da.notnull().sum(dim)
    mean = da.mean(dim, skipna=True)
    sd = da.std(dim, ddof=1, skipna=True)
    return mean, sd / np.sqrt(n)


def zms_rce_bca(E, u, *, n_boot: int, seed: int, key, level: float = LEVEL) -> dict:
    """BCa intervals of ZMS and RCE of one data set (nptest conventions, methods page, Bootstrap).

    Uses the engine's kernels directly (no dask graph per call):
    :class:`uqx.engine.evaluator.SetEvaluator` estimate, jackknife and streamed replicate sums
    over the blocks of a :class:`uqx.engine.resample.BootstrapPlan`, then
    :func:`uqx.engine.confidence.bca_interval` with t0 as row 0 of T.

    Returns
    -------
    dict
        ``estimate``, ``ci_low``, ``ci_high`` (arrays of 2: ZMS, RCE).
    """
    ev = SetEvaluator(E, u, [parse_stat("zms"), parse_stat("rce")])
    t0 = ev.estimate()
    jack = ev.jackknife()
    plan = BootstrapPlan(M=int(np.size(E)), n_boot=int(n_boot), seed=int(seed), key=key)
    blocks = [ev.replicates(plan, b) for b in range(plan.n_blocks)]
    est, lo, hi = np.empty(2), np.empty(2), np.empty(2)
    for j, name in enumerate(("zms", "rce")):
        T = np.concatenate([t0[name][None, :]] + [b[name] for b in blocks])
        lo_j, hi_j, _, _ = bca_interval(T, t0[name], jack[name], level=level)
        est[j], lo[j], hi[j] = t0[name][0], lo_j[0], hi_j[0]
    return {"estimate": est, "ci_low": lo, "ci_high": hi}


def set_arrays(ds, *, default=None) -> dict:
    """Return the valid (E, uE) arrays of each set (or of the default sets), by name.

    ``ds`` may be an :class:`xarray.Dataset` (one or stacked sets, see
    :func:`uqx.dataio.model.as_stacked`) or None for ``default()``.
    """
    if ds is None:
        if default is None:
            raise InputError("no data sets given")
        ds = default()
    out = {}
    for sd in iter_sets(as_stacked(ds)):
        out[str(sd.name)] = (np.asarray(sd.E, dtype=np.float64),
                             np.asarray(sd.uE, dtype=np.float64))
    if not out:
        raise InputError("no data sets given")
    return out


def set_keys(arrays: dict) -> dict:
    """Content keys of the sets (recorded in the parameters: they identify the data)."""
    return {k: list(content_key(E, u)) for k, (E, u) in arrays.items()}


def cell_set(cell, data):
    """Return the arrays of the cell's set (``cell_data`` of the set-based studies)."""
    return data[cell["set"]]


def check_output(path, *, mkdir: bool = False) -> Path:
    """Check before any computation that the archive can be written to ``path``.

    The output policy of every writer of uqx (:func:`uqx.dataio.paths.check_output_path`):
    a NetCDF suffix, not a directory, device or FIFO, an existing (or, with ``mkdir``,
    created) writable directory. Its refusals are raised as :class:`InputError`.
    """
    try:
        return check_output_path(path, kind="netcdf", mkdir=mkdir)
    except OutputError as exc:
        raise InputError(str(exc)) from None


def execute(study: Study, summarise, *, output=None, chunk_size=None, scheduler=None,
            num_workers=None, resume=False, keep_run=False, quiet=True, mkdir=False,
            attrs=None, _stop_after=None) -> xr.Dataset:
    """Run a study, add its summaries and attributes, write the archive atomically.

    With ``output``, the output is checked before any computation, finished blocks go
    to the run directory ``OUT.nc.run`` (resumable with ``resume=True``), the NetCDF is
    written atomically (:func:`uqx.dataio.netcdf.to_netcdf`) and the run directory removed
    afterwards unless ``keep_run``.
    """
    run_dir = None
    if output is not None:
        check_output(output, mkdir=mkdir)
        run_dir = run_dir_for(output)
    raw = run_sweep(study, chunk_size=chunk_size, scheduler=scheduler,
                    num_workers=num_workers, run_dir=run_dir, resume=resume, quiet=quiet,
                    _stop_after=_stop_after)
    ds = summarise(raw)
    ds.attrs.update({"study": study.name, "n_rep": int(study.n_rep),
                     "block": int(study.block), **(attrs or {})})
    seed = study.params.get("seed")
    ds.attrs["seed"] = int(seed) if seed is not None else -1
    ds.attrs["parameters_json"] = _params_json(study.params)
    if output is not None:
        to_netcdf(ds, Path(output), parameters=study.params, seed=seed)
        if not keep_run:
            finish_run(run_dir)
    return ds


def _params_json(params) -> str:
    return json.dumps(params, default=json_default, sort_keys=True)
