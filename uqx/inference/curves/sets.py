"""Inputs of the curve diagnostics: one set or several, the conditioning variable, the bins.

Every curve function (:mod:`uqx.inference.curves.confidence`, :mod:`uqx.inference.curves.binned`)
takes one data set — an :class:`xarray.Dataset` with ``E``/``uE`` (and ``X``/``V``) or
plain arrays — and returns an :class:`xarray.Dataset`; decorated with :func:`per_set`, a
stacked input (``set`` dimension) gives a ``set`` dimension in the result (ragged ``bin``
dimensions padded with NaN, :func:`over_sets`).
"""

from __future__ import annotations

import functools

import numpy as np
import xarray as xr

from uqx.dataio.model import InputError, SetData, from_arrays, iter_sets
from uqx.engine.binning import make_bins
from uqx.engine.defaults import local_bins

__all__ = ["bin_attrs", "conditioning", "curve_bins", "mid_range", "one_set", "over_sets",
           "per_set"]


def over_sets(func, data, *args, **kwargs) -> xr.Dataset:
    """Apply a one-set curve function to each set of a stacked data set.

    Results are concatenated along ``set`` (outer join: ragged bins are NaN-padded);
    numeric attrs that differ between sets (scores such as ``miscal_area``) become
    variables over ``set``, the other attrs are those of the first set.
    """
    parts = [func(sd, *args, **kwargs) for sd in iter_sets(data)]
    names = [str(s) for s in data["set"].values]
    out = xr.concat(
        parts,
        dim=xr.DataArray(names, dims="set", name="set"),
        join="outer",
        combine_attrs="override",
        coords="different",
        compat="equals",
    )
    for key, v in parts[0].attrs.items():
        vals = [p.attrs.get(key, np.nan) for p in parts]
        if isinstance(v, int | float) and len(set(vals)) > 1:
            out[key] = ("set", np.asarray(vals, dtype=np.float64))
            del out.attrs[key]
    if "label" in data.coords:
        out = out.assign_coords(label=("set", data["label"].values))
    return out


def one_set(data, uE=None) -> SetData:
    """Return the arrays of one set from a Dataset, a SetData or arrays."""
    if isinstance(data, SetData):
        return data
    if isinstance(data, xr.Dataset):
        sets = list(iter_sets(data))
        if len(sets) != 1:
            raise InputError("expected one data set; use over_sets() for stacked input")
        return sets[0]
    if uE is None:
        raise InputError("give a Dataset, or the arrays E and uE")
    return next(iter_sets(from_arrays(data, uE)))


def per_set(func):
    """Decorate a one-set function: a stacked Dataset (``set`` dim) goes to over_sets."""

    @functools.wraps(func)
    def wrapper(data, *args, **kwargs):
        if isinstance(data, xr.Dataset) and "set" in data.dims:
            return over_sets(func, data, *args, **kwargs)
        return func(data, *args, **kwargs)

    return wrapper


def conditioning(sd: SetData, by) -> tuple[np.ndarray, str]:
    """Return the conditioning variable ``by`` (a name or an array) of a set, and its name."""
    if isinstance(by, str):
        return sd.variable(by), by
    arr = np.asarray(by, dtype=np.float64)
    if arr.shape != sd.E.shape:
        raise InputError(f"conditioning array has shape {arr.shape}, expected {sd.E.shape}")
    return arr, "x"


def curve_bins(x, n_bins, binning, pop_min, log):
    """Bin ``x`` (default number of bins: :func:`~uqx.engine.defaults.local_bins`)."""
    n_bins = local_bins(int(np.isfinite(x).sum())) if n_bins is None else n_bins
    return make_bins(x, n_bins, scheme=binning, pop_min=pop_min, log=log)


def mid_range(xs, edges):
    """Return the mid-range of the sorted values ``xs`` in each bin (NaN for empty bins)."""
    first = np.minimum(edges[:-1], xs.size - 1)
    last = np.maximum(edges[1:] - 1, 0)
    return np.where(np.diff(edges) > 0, (xs[first] + xs[last]) / 2, np.nan)


def bin_attrs(bins, cond):
    """Return the attributes describing the bins of a curve."""
    return {
        "binning": bins.scheme,
        "n_bins_requested": bins.n_requested,
        "n_bins": bins.n_bins,
        "pop_min": bins.pop_min,
        "log_bins": int(bins.log),
        "cond": cond,
    }
