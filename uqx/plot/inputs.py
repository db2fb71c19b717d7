"""Input resolution shared by the figure functions: datasets, NetCDF files, panel titles."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xarray as xr

from uqx.dataio.model import InputError, as_stacked, iter_sets
from uqx.dataio.netcdf import read_netcdf

__all__ = ["load", "as_sets", "panel_titles", "units_of", "to_one"]


def load(data) -> xr.Dataset:
    """Return a Dataset from a Dataset, a NetCDF path or a list of them.

    Paths are read with :func:`uqx.dataio.netcdf.read_netcdf`.
    """
    if isinstance(data, str | os.PathLike):
        path = Path(data)
        if path.suffix.lower() not in (".nc", ".nc4", ".netcdf"):
            raise InputError(f"{path}: figure input must be a NetCDF file (.nc) or a Dataset")
        return read_netcdf(path)
    if isinstance(data, xr.Dataset):
        return data
    if isinstance(data, list | tuple):
        return as_stacked(list(data))
    raise InputError(f"cannot plot an object of type {type(data).__name__}")


def as_sets(data) -> xr.Dataset:
    """Stacked input data set (``set`` dimension) from any accepted input."""
    ds = load(data)
    if "E" not in ds or "uE" not in ds:
        raise InputError("figure input must contain the variables 'E' and 'uE'")
    if "set" in ds.coords and ds["set"].ndim == 0:  # one set selected from a stack
        ds = ds.expand_dims("set")
        if "label" in ds.coords and ds["label"].ndim == 0:
            ds = ds.assign_coords(label=("set", [ds["label"].item()]))
    return as_stacked(ds)


def panel_titles(ds: xr.Dataset) -> list[str]:
    """Panel titles: ``"Set 1: Diffusion_RF"`` when a ``label`` coordinate exists."""
    names = [str(s) for s in ds["set"].values]
    if "label" in ds.coords:
        return [f"{lab}: {n}" for lab, n in zip(ds["label"].values, names, strict=True)]
    return names


def units_of(ds: xr.Dataset, var: str = "E") -> str:
    """Units of a variable from its attrs, else the Dataset's ``units`` attr."""
    if ds.attrs.get("units") == "mixed" and var in ("E", "uE"):
        return ""  # stacked sets with different units: no unit on shared labels
    if var in ds and ds[var].attrs.get("units"):
        return str(ds[var].attrs["units"])
    return str(ds.attrs.get("units", "")) if var in ("E", "uE") else ""


def to_one(ds: xr.Dataset, i: int) -> xr.Dataset:
    """Return the ``i``-th set of a stacked input as a one-set Dataset without padding."""
    sd = list(iter_sets(ds))[i]
    data = {"E": ("sample", sd.E), "uE": ("sample", sd.uE)}
    for key in ("X", "V"):
        if getattr(sd, key) is not None:
            data[key] = ("sample", getattr(sd, key))
    return xr.Dataset(data, coords={"sample": np.arange(sd.M)}, attrs={"name": sd.name})
