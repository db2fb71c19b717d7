r"""Reading, summarising and comparing sweep archives.

:func:`compare` aligns two archives of the same study on their common coordinates and
reports, per cell, :math:`z = (a - b)/\sqrt{u_a^2 + u_b^2}` for the Monte-Carlo
summaries (u: their Monte-Carlo standard errors), flagging :math:`|z| > 3`; deterministic
variables are compared exactly. Archives of different studies or conventions (e.g.
another ``ig_shape``) are refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from uqx.dataio.netcdf import read_netcdf
from uqx.errors import InputError
from uqx.text.console import format_df

__all__ = ["load", "compare", "CompareResult", "summary_text", "STUDY_MODULES"]

#: Study name -> module of :mod:`uqx.sweeps`.
STUDY_MODULES = {
    "appendix-b": "appendix_b",
    "pval": "pval",
    "bins": "bins",
    "binned-tailedness": "binned_tailedness",
    "decimation": "decimation",
    "reference-sensitivity": "reference_sensitivity",
    "error-rates": "error_rates",
}
#: Monte-Carlo summaries (value, standard error) compared in units of the combined error.
MC_PAIRS = {
    "appendix-b": [("ence_mean", "ence_se"), ("zmse_mean", "zmse_se")],
    "pval": [("p_val", "p_val_se")],
    "reference-sensitivity": [("reference", "reference_se")],
    "error-rates": [],
}
#: Variables compared exactly (deterministic given the data).
EXACT = {
    "appendix-b": [],
    "pval": [],
    "bins": ["value", "intercept", "intercept_se", "slope", "slope_se"],
    "binned-tailedness": ["beta_gm", "kappa_cs"],
    "decimation": ["delta", "bar_low", "bar_high"],
    "reference-sensitivity": [],
    "error-rates": ["verdict"],
}
#: Parameters that must agree for two archives of a study to be compared.
CONVENTIONS = {
    "appendix-b": ("ig_shape", "pop_min"),
    "pval": ("M", "nu_ig_tig", "level"),
    "bins": ("preset",),
    "binned-tailedness": ("n_bins", "pop_min"),
    "decimation": ("k_max", "k_step", "level"),
    "reference-sensitivity": ("bins", "stats"),
    "error-rates": ("n_boot", "n_mc", "power_M", "power_designs", "u_per_set"),
}
#: Runtime attributes that differ between otherwise identical archives.
_VOLATILE = {"created_at", "uqx_version"}


def load(obj) -> xr.Dataset:
    """Return an archive as a Dataset (a path: read with :func:`uqx.dataio.netcdf.read_netcdf`)."""
    ds = obj if isinstance(obj, xr.Dataset) else read_netcdf(obj)
    if "study" not in ds.attrs or ds.attrs["study"] not in STUDY_MODULES:
        raise InputError(f"{obj if not isinstance(obj, xr.Dataset) else 'data set'}: "
                         "not a uqx sweep archive (no known 'study' attribute)")
    return ds


def parameters(ds: xr.Dataset) -> dict:
    """Run parameters of an archive (JSON attribute)."""
    raw = ds.attrs.get("parameters_json", ds.attrs.get("parameters", "{}"))
    try:
        return json.loads(raw) if isinstance(raw, str) else dict(raw)
    except ValueError:
        return {}


@dataclass
class CompareResult:
    """Outcome of :func:`compare`.

    Attributes
    ----------
    study : str
    table : pandas.DataFrame
        One row per compared variable: cells, max |z| (or max |a - b| for exact ones),
        cells flagged.
    cells : xarray.Dataset
        Per-cell z (``z_<name>``) of the Monte-Carlo summaries, and absolute differences
        (``diff_<name>``) of exact variables, on the common coordinates.
    identical : bool
        The two archives have the same grid (coordinates) and every common variable is
        equal bit for bit (NaN = NaN).
    n_flagged : int
        Cells with |z| > threshold, or exact variables that differ.
    only_a, only_b : dict
        Per dimension, the coordinate values that only archive A (B) has: their cells
        are not compared. Empty when the grids are the same.
    common_identical : bool
        Every common variable equal bit for bit on the common coordinates.
    """

    study: str
    table: pd.DataFrame
    cells: xr.Dataset
    identical: bool
    n_flagged: int
    only_a: dict = field(default_factory=dict)
    only_b: dict = field(default_factory=dict)
    common_identical: bool = False


def _check_same(a, b):
    sa, sb = a.attrs["study"], b.attrs["study"]
    if sa != sb:
        raise InputError(f"cannot compare archives of different studies: {sa!r} and {sb!r}")
    pa, pb = parameters(a), parameters(b)
    for key in CONVENTIONS[sa]:
        va, vb = pa.get(key, a.attrs.get(key)), pb.get(key, b.attrs.get(key))
        if va != vb:
            raise InputError(
                f"cannot compare {sa} archives with different conventions: "
                f"{key} = {va!r} and {vb!r}"
            )
    return sa


def _aligned(a, b, name):
    if name not in a or name not in b:
        return None
    xa, xb = xr.align(a[name], b[name], join="inner")
    return None if xa.size == 0 else (xa, xb)


def _grid_difference(a, b) -> tuple[dict, dict]:
    """Coordinate values per dimension that only ``a`` has, and only ``b`` has."""
    only_a, only_b = {}, {}
    for dim in sorted(set(a.indexes) | set(b.indexes), key=str):
        if dim not in a.dims and dim not in b.dims:
            continue
        va = list(a[dim].values) if dim in a.indexes else []
        vb = list(b[dim].values) if dim in b.indexes else []
        sa, sb = set(map(_key, va)), set(map(_key, vb))
        ea = [v for v in va if _key(v) not in sb]
        eb = [v for v in vb if _key(v) not in sa]
        if ea:
            only_a[str(dim)] = [_plain(v) for v in ea]
        if eb:
            only_b[str(dim)] = [_plain(v) for v in eb]
    return only_a, only_b


def _key(v):
    return v.item() if isinstance(v, np.generic) else v


def _plain(v):
    v = _key(v)
    return v.decode() if isinstance(v, bytes) else v


def compare(a, b, *, threshold: float = 3.0) -> CompareResult:
    """Compare two archives of one study on their common coordinates.

    Cells that only one archive has (another grid of M, N, ν...) are not compared; they
    are listed in ``only_a`` / ``only_b`` and the archives are then never called
    identical.

    Parameters
    ----------
    a, b : path or xarray.Dataset
        The archives (``uqx sweep NAME -o``).
    threshold : float, default 3
        Flag cells with :math:`|z| > threshold`.

    Returns
    -------
    CompareResult
        The table per variable, the per-cell z / differences, the flags and the grid
        difference.

    Raises
    ------
    InputError
        Not sweep archives, different studies, different conventions, or no common
        cells.
    """
    a, b = load(a), load(b)
    study = _check_same(a, b)
    rows, cells, n_flag = [], {}, 0
    for val, se in MC_PAIRS.get(study, []):
        pair, pse = _aligned(a, b, val), _aligned(a, b, se)
        if pair is None or pse is None:
            continue
        (va, vb), (ua, ub) = pair, pse
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (va - vb) / np.sqrt(ua**2 + ub**2)
        z = z.where(~((va == vb) & z.isnull()), 0.0)  # equal values, zero error
        ok = np.isfinite(z.values)
        flagged = int(np.sum(np.abs(z.values[ok]) > threshold))
        n_flag += flagged
        cells[f"z_{val}"] = z
        rows.append({"variable": val, "kind": "Monte-Carlo z", "cells": int(ok.sum()),
                     "max_abs": float(np.max(np.abs(z.values[ok]))) if ok.any() else np.nan,
                     "mean_z": float(np.mean(z.values[ok])) if ok.any() else np.nan,
                     "flagged": flagged})
    for name in EXACT.get(study, []):
        pair = _aligned(a, b, name)
        if pair is None:
            continue
        va, vb = pair
        d = np.abs(va - vb)
        same = bool(np.array_equal(va.values, vb.values, equal_nan=True))
        n_flag += 0 if same else 1
        cells[f"diff_{name}"] = d
        finite = np.isfinite(d.values)
        rows.append({"variable": name, "kind": "exact |a-b|", "cells": int(finite.sum()),
                     "max_abs": float(np.max(d.values[finite])) if finite.any() else 0.0,
                     "mean_z": np.nan, "flagged": 0 if same else int(np.sum(d.values > 0))})
    if not rows:
        raise InputError("the two archives have no common cells to compare")
    common = True
    for name in set(a.data_vars) & set(b.data_vars):
        pair = _aligned(a, b, name)
        if pair is not None and not np.array_equal(pair[0].values, pair[1].values,
                                                   equal_nan=pair[0].dtype.kind == "f"):
            common = False
    only_a, only_b = _grid_difference(a, b)
    identical = common and not only_a and not only_b
    return CompareResult(study, pd.DataFrame(rows), xr.Dataset(cells), identical, n_flag,
                         only_a=only_a, only_b=only_b, common_identical=common)


def format_compare(res: CompareResult, *, threshold: float = 3.0) -> str:
    """Text report of a comparison (the ``uqx sweep compare`` output)."""
    lines = [f"# uqx sweep compare: study {res.study}, flag |z| > {threshold:g}",
             format_df(res.table.set_index("variable"))]
    for name, z in res.cells.data_vars.items():
        if not name.startswith("z_"):
            continue
        bad = z.where(np.abs(z) > threshold).to_dataframe(name="z").dropna()
        if len(bad):
            lines += [f"\n# flagged cells of {name[2:]}", format_df(bad)]
    differ = bool(res.only_a or res.only_b)
    if differ:
        lines.append("\n# the grids differ: these cells are in one archive only (not compared)")
        for label, only in (("A", res.only_a), ("B", res.only_b)):
            for dim, values in only.items():
                shown = ", ".join(map(str, values[:20])) + (
                    f", ... ({len(values)} in all)" if len(values) > 20 else "")
                lines.append(f"only in {label}: {dim} = {shown}")
    if res.identical:
        verdict = "identical (same grid, bit for bit)"
    elif res.n_flagged:
        verdict = f"{res.n_flagged} flagged"
    elif differ and getattr(res, "common_identical", False):
        verdict = ("equal bit for bit on the common cells only; the grids differ (cells "
                   "above not compared)")
    elif differ:
        verdict = ("compatible on the common cells (no cell beyond the threshold); the "
                   "grids differ (cells above not compared)")
    else:
        verdict = "compatible (no cell beyond the threshold)"
    lines.append(f"\nresult: {verdict}")
    return "\n".join(lines)


def _table_groups(ds):
    groups: dict = {}
    for name, var in ds.data_vars.items():
        if "replicate" in var.dims or "mc" in var.dims or var.size > 2000 or not var.dims:
            continue
        groups.setdefault(var.dims, []).append(name)
    return groups


def summary_text(obj, *, max_rows: int = 200) -> str:
    """Readable tables of any sweep archive (attributes, then summaries by dimensions).

    Parameters
    ----------
    obj : xarray.Dataset or path
        A sweep archive (``uqx sweep`` output).
    max_rows : int, default 200
        Rows shown per table.

    Returns
    -------
    str
        The tables.
    """
    ds = load(obj)
    p = parameters(ds)
    head = {k: v for k, v in ds.attrs.items()
            if k not in ("parameters", "parameters_json") and not isinstance(v, dict)}
    lines = [f"# uqx sweep archive: study {ds.attrs['study']}"]
    lines += [f"  {k}: {v}" for k, v in head.items()]
    lines.append("  parameters: " + ", ".join(
        f"{k}={v}" for k, v in p.items() if k != "sets"))
    dims = ", ".join(f"{k}={v}" for k, v in ds.sizes.items())
    lines.append(f"  dimensions: {dims}")
    for group_dims, names in sorted(_table_groups(ds).items(), key=lambda t: len(t[0])):
        df = ds[names].to_dataframe()[names]
        if group_dims and len(group_dims) > 0:
            df = df.dropna(how="all")
        lines.append(f"\n# {', '.join(names)} over ({', '.join(group_dims)})")
        shown = df.head(max_rows)
        lines.append(format_df(shown))
        if len(df) > max_rows:
            lines.append(f"... {len(df) - max_rows} more rows")
    return "\n".join(lines)
