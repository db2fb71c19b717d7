"""Input data model: paired errors ``E`` and uncertainties ``uE`` over ``sample``.

One data set is an :class:`xarray.Dataset` with variables ``E(sample)``, ``uE(sample)``
and optionally ``X(sample)`` (input feature) and ``V(sample)`` (prediction). Several
data sets are stacked along ``set`` by :func:`stack`; ragged sizes are padded with NaN,
which every kernel of :mod:`uqx.engine.stats` ignores (methods: notation and conventions).

Every entry point (:func:`uqx.validate`, :func:`uqx.bootstrap`, :func:`uqx.compute`,
:func:`uqx.describe`, ...) goes through :func:`as_stacked`, which runs the checks of
:func:`from_arrays` on any input form (methods: edge cases), numpy- or dask-backed;
:func:`iter_sets` then gives each set's real rows (:class:`SetData`). The order of the
rows is :mod:`uqx.dataio.row_order`'s, their provenance :mod:`uqx.dataio.provenance`'s,
and reading them a group at a time :mod:`uqx.dataio.streaming`'s.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from uqx._checks import (
    CHECK_ROWS,
    NUMERIC_KINDS,
    _scalar,
    check_columns,
    count_problems,
    count_rows,
    is_lazy,
)
from uqx.dataio.schema import INPUT
from uqx.errors import InputError

__all__ = [
    "InputError",
    "from_arrays",
    "checked_columns",
    "stack",
    "CheckedSets",
    "check_sets",
    "as_stacked",
    "iter_sets",
    "iter_checked",
    "SetData",
    "VARIABLES",
]

#: Long names of the input variables (CF ``long_name``; :data:`uqx.dataio.schema.INPUT`).
VARIABLES = {k: INPUT[k].long_name for k in ("E", "uE", "X", "V")}

#: Attributes describing one data set, replaced by per-set variables in a stack.
_SET_ATTRS = ("name", "n_dropped", "filters", "units")


def _kind_problem(kind: str) -> str:
    """Why a dtype kind is refused as a column ('' for real numbers)."""
    if kind == "c":
        return ("is not numeric: complex values; uqx needs real numbers (take .real or "
                "abs() yourself if that is what you mean)")
    if kind == "b":
        return "is not numeric: boolean (True/False) values, expected numbers"
    if kind in "mM":
        return ("is not numeric: dates or time spans (datetime64/timedelta64); convert them "
                "to numbers in a unit you choose first")
    return ""


def _missing_as_nan(raw: np.ndarray) -> np.ndarray:
    """Object array with pandas' missing values (``pd.NA``, ``None``, ``NaT``) as NaN.

    ``float(pd.NA)`` raises; as NaN, the missing values are counted and named by the
    checks of missing values like any NaN. Other arrays are returned as they are.
    """
    if raw.dtype.kind != "O" or raw.size == 0:
        return raw
    missing = pd.isna(raw)
    if not np.any(missing):
        return raw
    out = raw.copy()
    out[missing] = np.nan
    return out


def _as_1d(values, label: str, name: str):
    if isinstance(values, xr.DataArray):
        values = values.data
    if hasattr(values, "to_numpy") and hasattr(values, "index"):  # pandas Series
        values = values.to_numpy()
    if is_lazy(values):  # dask: dtype and shape checks only, values stay lazy
        problem = _kind_problem(values.dtype.kind)
        if problem:
            raise InputError(f"{name}: column {label!r} {problem}")
        if values.dtype.kind not in NUMERIC_KINDS:
            raise InputError(f"{name}: column {label!r} is not numeric (dtype {values.dtype})")
        if any(math.isnan(c) for c in getattr(values, "shape", ())):
            raise InputError(
                f"{name}: column {label!r} is a dask array of unknown length (chunk sizes "
                "unknown, e.g. after boolean indexing); compute them first "
                "(x.compute_chunk_sizes()), or filter after reading")
        arr = values.astype(np.float64)
    else:
        raw = values if isinstance(values, np.ndarray) else np.asarray(values)
        problem = _kind_problem(raw.dtype.kind)
        if problem:
            raise InputError(f"{name}: column {label!r} {problem}")
        if np.ma.isMaskedArray(raw):  # masked entries are missing values, not their data
            raw = np.ma.filled(raw.astype(np.float64), np.nan)
        raw = _missing_as_nan(raw)
        try:
            arr = np.asarray(raw, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputError(f"{name}: column {label!r} is not numeric ({exc})") from None
    if arr.ndim != 1 and arr.size == max(arr.shape, default=0):
        arr = arr.reshape(-1)  # a column or row vector
    if arr.ndim != 1:
        raise InputError(f"{name}: {label} must be one-dimensional, got shape {arr.shape}")
    return arr


def from_arrays(
    E,
    uE,
    X=None,
    V=None,
    *,
    name: str = "data",
    units: str = "",
    source: str = "",
    drop_nonfinite: bool = False,
    min_uE_rel_sd: float | None = None,
) -> xr.Dataset:
    """Build a validated input data set from arrays.

    Parameters
    ----------
    E, uE : array_like, shape (M,)
        Errors (reference - prediction) and their standard uncertainties (> 0). Dask
        arrays stay lazy (the checks compute counts in one pass).
    X, V : array_like, shape (M,), optional
        Input feature and predicted value, used as conditioning variables.
    name, units, source : str
        Stored as attributes (``units`` applies to ``E`` and ``uE``).
    drop_nonfinite : bool, default False
        If True, rows with NaN/inf in any given variable are dropped and counted in
        ``attrs["n_dropped"]``; otherwise they raise :class:`InputError`.
    min_uE_rel_sd : float, optional
        Documented row filter of the papers (ErrViewLib ``getData.R``): keep rows with
        ``uE > min_uE_rel_sd * sd(E)``, sd with n-1 over the unfiltered rows (1e-6 for
        PAL2022). Dropped rows are counted in ``attrs["n_dropped"]`` and described in
        ``attrs["filters"]``.

    Returns
    -------
    xarray.Dataset
        ``E``, ``uE`` (and ``X``, ``V``) over ``sample``; attrs ``name``, ``units``,
        ``source``, ``n_dropped``, ``filters``.

    Raises
    ------
    InputError
        Length mismatch, NaN/inf values, ``uE <= 0``, fewer than 2 points, non-numeric data.
    """
    if name is None:
        name = "data"
    cols, n_dropped, filters = checked_columns(E, uE, X, V, name=name,
                                               drop_nonfinite=drop_nonfinite,
                                               min_uE_rel_sd=min_uE_rel_sd)
    return _single(cols, name=name, units=units, source=source, n_dropped=n_dropped,
                   filters=filters)


def checked_columns(E, uE, X=None, V=None, *, name: str = "data",
                    drop_nonfinite: bool = False, min_uE_rel_sd: float | None = None):
    """Check the columns of one set given as arrays: the one entrance of arrays.

    :func:`from_arrays` and the array routes of :func:`uqx.bootstrap` (and
    :func:`uqx.describe`) read their columns through it: ``None`` for E or uE refused,
    pandas Series aligned on their index, 1-d numeric columns of one length, then
    :func:`uqx._checks.check_columns` (NaN/inf, ``uE <= 0``, at least 2 rows, the
    documented filters).

    Parameters
    ----------
    E, uE, X, V : array_like or None
        The columns (X and V optional).
    name : str
        The set's name, in every message.
    drop_nonfinite, min_uE_rel_sd
        As :func:`from_arrays`.

    Returns
    -------
    cols : dict of str to array
        The checked columns (rows dropped where a documented filter says so).
    n_dropped : int
        Rows dropped (counted, never silent).
    filters : str
        What the filters dropped, in words.
    """
    for key, value in (("E", E), ("uE", uE)):
        if value is None:
            raise InputError(f"{name}: {key} is required (got None)")
    given = _align_series({"E": E, "uE": uE, "X": X, "V": V}, name)
    cols = {k: _as_1d(v, k, name) for k, v in given.items()}
    sizes = {k: v.shape[0] for k, v in cols.items()}
    if len(set(sizes.values())) != 1:
        desc = ", ".join(f"{k}={n}" for k, n in sizes.items())
        raise InputError(f"{name}: length mismatch between columns ({desc})")
    return check_columns(cols, str(name), drop_nonfinite=drop_nonfinite,
                         min_uE_rel_sd=min_uE_rel_sd)


def _labels(v):
    """Return the labels of a pandas Series or an indexed 1-d DataArray (else None)."""
    if hasattr(v, "index") and hasattr(v, "reindex") and getattr(v, "ndim", 0) == 1:
        return v.index  # pandas Series
    if isinstance(v, xr.DataArray) and v.ndim == 1 and v.dims[0] in v.indexes:
        return v.indexes[v.dims[0]]
    return None


def _relabel(v, index):
    """Return ``v`` (a Series or 1-d DataArray) in the order of ``index``."""
    if isinstance(v, xr.DataArray):
        return v.sel({v.dims[0]: index})
    return v.reindex(index)


def _align_series(columns: dict, name: str) -> dict:
    """Pair labelled columns (pandas Series, indexed DataArrays) by label, not position.

    Columns with the same labels in another order are aligned on the labels of the first
    one; columns whose labels differ (or repeat) are refused: pairing them by position
    would pair the wrong rows without a word. None columns are left out.
    """
    columns = {k: v for k, v in columns.items() if v is not None}
    labelled = {k: idx for k, v in columns.items() if (idx := _labels(v)) is not None}
    if len(labelled) < 2:
        return columns
    (k0, i0), *rest = labelled.items()
    for key, idx in rest:
        if idx.equals(i0):
            continue
        if not (i0.is_unique and idx.is_unique):
            raise InputError(
                f"{name}: {k0} and {key} have different indexes with repeated labels: uqx "
                "cannot pair their rows; pass .to_numpy() of each (paired by position) or "
                "give them the same index"
            )
        if len(idx) != len(i0) or not idx.sort_values().equals(i0.sort_values()):
            only, extra = i0.difference(idx), idx.difference(i0)
            raise InputError(
                f"{name}: {k0} and {key} have different indexes ({len(only)} label(s) only "
                f"in {k0}, {len(extra)} only in {key}): uqx pairs rows by index label and "
                "will not guess; align them first (e.g. pandas.concat([...], axis=1, "
                "join='inner')), or pass .to_numpy() to pair by position"
            )
        columns[key] = _relabel(columns[key], i0)  # same labels, another order
    return columns


def _sample_coord(n: int, lazy: bool) -> dict:
    # an int64 index costs 8 bytes a row: dask-backed (large) data go without one
    return {} if lazy else {"sample": np.arange(n)}


def _single(cols, *, name, units="", source="", n_dropped=0, filters=(), attrs=None,
            index=True):
    # index=False: no sample coordinate (8 bytes a row, and as much again for its pandas
    # index while it is built) for a data set that only goes into stack()
    data_vars = {}
    for key, arr in cols.items():
        var_attrs = INPUT.attrs(key)
        if key in ("E", "uE") and units:
            var_attrs["units"] = units
        data_vars[key] = ("sample", arr, var_attrs)
    return xr.Dataset(
        data_vars,
        coords=_sample_coord(cols["E"].shape[0], is_lazy(cols["E"]) or not index),
        attrs={
            **(attrs or {}),
            "name": str(name),
            "units": str(units),
            "source": str(source),
            "n_dropped": int(n_dropped),
            "filters": "; ".join(filters),
        },
    )


def _padded(arrays: list, m_max: int):
    """Stack 1-d arrays into (n, m_max), NaN-padded; lazy when any input is dask."""
    if any(is_lazy(a) for a in arrays):
        import dask.array as da

        rows = []
        for a in arrays:
            a = da.asarray(a).astype(np.float64)
            pad = m_max - a.shape[0]
            rows.append(da.concatenate([a, da.full(pad, np.nan)]) if pad else a)
        return da.stack(rows)
    out = np.full((len(arrays), m_max), np.nan)
    for i, a in enumerate(arrays):
        out[i, : a.shape[0]] = a
    return out


def stack(datasets: Sequence[xr.Dataset], *, dim: str = "set") -> xr.Dataset:
    """Stack several input data sets along ``dim``, padding ragged sizes with NaN.

    Parameters
    ----------
    datasets : sequence of xarray.Dataset
        Outputs of :func:`from_arrays` (or loaders). Names must be unique.
    dim : str, default "set"
        Name of the new dimension (the engine works on ``set``: :func:`as_stacked`
        renames another name to ``set`` and records it in ``attrs["set_dim"]``).

    Returns
    -------
    xarray.Dataset
        Variables over (``dim``, ``sample``), dask-backed when an input is; ``M(dim)``
        the number of valid samples, ``n_dropped(dim)`` rows removed by filters,
        ``units(dim)`` the units of each set. Optional variables missing in some sets
        are all-NaN there. Attributes: ``units`` (common units, or ``"mixed"``),
        ``sources``, ``filters`` and every attribute with the same value in all sets.
    """
    datasets = list(datasets)
    if not datasets:
        raise InputError("stack: no data sets given")
    if not all(isinstance(d, xr.Dataset) for d in datasets):
        bad = next(type(d).__name__ for d in datasets if not isinstance(d, xr.Dataset))
        raise InputError(f"stack: expected xarray.Dataset items, got {bad}")
    if dim == "sample":
        raise InputError("stack: dim must differ from 'sample'")
    names = [str(d.attrs.get("name", f"set{i + 1}")) for i, d in enumerate(datasets)]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"stack: duplicate data set names {dup}")
    sizes = [d.sizes.get("sample", 0) for d in datasets]
    m_max = max(sizes)
    units = [str(d.attrs.get("units", "")) for d in datasets]
    common_units = units[0] if len(set(units)) == 1 else "mixed"
    out = {}
    for key in [k for k in VARIABLES if any(k in d for d in datasets)]:
        arrays = [d[key].data if key in d else np.full(m, np.nan)
                  for d, m in zip(datasets, sizes, strict=True)]
        first = next(d for d in datasets if key in d)
        attrs = dict(first[key].attrs) or INPUT.attrs(key)
        if key in ("E", "uE"):
            attrs.pop("units", None)
            if common_units not in ("", "mixed"):
                attrs["units"] = common_units
        out[key] = ((dim, "sample"), _padded(arrays, m_max), attrs)
    out["M"] = (dim, np.array(sizes, dtype=np.int64), INPUT.attrs("M"))
    out["n_dropped"] = (
        dim,
        np.array([int(d.attrs.get("n_dropped", 0)) for d in datasets], dtype=np.int64),
        INPUT.attrs("n_dropped"),
    )
    out["units"] = (dim, np.array(units, dtype=object), INPUT.attrs("units"))
    shared = {
        k: v for k, v in datasets[0].attrs.items()
        if k not in _SET_ATTRS and all(_same(d.attrs.get(k, _MISSING), v) for d in datasets)
    }
    return xr.Dataset(
        out,
        coords={dim: names, **_sample_coord(m_max, is_lazy(out["E"][1]))},
        attrs={
            **shared,
            "units": common_units,
            "sources": "; ".join(str(d.attrs.get("source", "")) for d in datasets),
            "filters": "; ".join(
                f"{n}: {d.attrs['filters']}"
                for n, d in zip(names, datasets, strict=True)
                if d.attrs.get("filters")
            ),
        },
    )


_MISSING = object()


def _same(a, b) -> bool:
    try:
        return bool(np.all(a == b)) and type(a) is type(b)
    except (TypeError, ValueError):
        return False


# ------------------------------------------------------------------ as_stacked

@dataclass(frozen=True)
class CheckedSets:
    """Input that passed the checks of :func:`check_sets`: the one entrance of every function.

    A function given a ``CheckedSets`` takes its data as they are; given anything else it
    checks them (:func:`check_sets`). The workflow checks its input once and passes this
    value from step to step.

    Attributes
    ----------
    data : xarray.Dataset
        Over (``set``, ``sample``), float64, with ``M(set)`` and ``n_dropped(set)``; the
        real rows of set ``i`` are its first ``M[i]``. Do not modify it in place.
    private : bool
        The columns were allocated by the checks and are referenced by nothing else: the
        holder may permute them in place (:func:`uqx.dataio.row_order.permute_rows`).
    """

    data: xr.Dataset
    private: bool = False

    def derive(self, data: xr.Dataset, *, private: bool = False) -> CheckedSets:
        """Wrap ``data`` derived from these rows (reordered, loaded, subset) as checked.

        Parameters
        ----------
        data : xarray.Dataset
            Derived from :attr:`data` by a function that keeps the checks true
            (:func:`uqx.dataio.row_order.permute_rows`,
            :func:`uqx.workflow.disk.load_columns`, a selection of sets).
        private : bool, default False
            Whether the columns of ``data`` are new buffers of the holder.
        """
        return CheckedSets(data, private)

    def select(self, index) -> CheckedSets:
        """Select the sets ``index`` (as for ``isel``): they stay checked."""
        return self.derive(self.data.isel(set=np.atleast_1d(index)))


def _set_dim(ds: xr.Dataset, name: str) -> str | None:
    """Return the set dimension of ``ds`` (None for a single data set); check dims."""
    missing = [k for k in ("E", "uE") if k not in ds]
    if missing and "estimate" in ds:
        raise InputError(
            f"{name}: this is a result of uqx (variables 'estimate', ...), not input data "
            "with E and uE: read a saved result with uqx.read_netcdf and show it with "
            "uqx.result_table (CLI: uqx show RESULT.nc)"
        )
    if missing:
        have = ", ".join(repr(str(k)) for k in ds.data_vars) or "none"
        # the other variables that could be the missing ones, in order: a rename to offer
        others = [str(k) for k in ds.data_vars if str(k) not in ("E", "uE", "X", "V")]
        hint = ""
        if 0 < len(missing) <= len(others) <= 2:
            pairs = ", ".join(f"{o!r}: {m!r}" for o, m in zip(others, missing, strict=False))
            hint = f"; if they hold them, rename: ds.rename({{{pairs}}})"
        raise InputError(
            f"{name}: input data set must contain variables 'E' and 'uE' (missing "
            f"{', '.join(map(repr, missing))}); variables present: {have}{hint}"
        )
    dims = ds["E"].dims
    if "sample" not in dims:
        fix = f"ds.rename({{{dims[-1]!r}: 'sample'}})" if dims else "a 'sample' dimension"
        raise InputError(
            f"{name}: E is over dimension(s) {dims}, expected 'sample' (one row per "
            f"prediction); rename it with {fix}"
        )
    if len(dims) > 2:
        raise InputError(f"{name}: E must be over ('sample',) or (set, 'sample'), got {dims}")
    for key in [k for k in VARIABLES if k in ds]:
        if set(ds[key].dims) != set(dims):
            raise InputError(
                f"{name}: variable {key!r} is over {ds[key].dims} with sizes "
                f"{ds[key].shape}, E over {dims} with sizes {ds['E'].shape} (length "
                "mismatch); all of E, uE, X, V must share the same dimensions"
            )
        kind = ds[key].dtype.kind
        if kind == "O" and _object_numbers(ds[key].data):
            continue  # numbers with pandas' missing values: NaN in _float
        if kind not in NUMERIC_KINDS:
            raise InputError(
                f"{name}: variable {key!r} is not numeric (dtype {ds[key].dtype}); "
                f"convert it with ds[{key!r}].astype(float)"
            )
    return next((d for d in dims if d != "sample"), None)


def _object_numbers(values) -> bool:
    """Whether an in-memory object array holds only real numbers and missing values."""
    if is_lazy(values):
        return False
    raw = _missing_as_nan(np.asarray(values))
    try:
        np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return not any(isinstance(v, str | bytes | bool | np.bool_) for v in raw.ravel())


def _float(da_: xr.DataArray, dims) -> xr.DataArray:
    da_ = da_.transpose(*dims)
    if da_.dtype.kind == "O" and not is_lazy(da_.data):  # pd.NA, None: NaN
        da_ = da_.copy(data=_missing_as_nan(np.asarray(da_.data)))
    return da_ if da_.dtype == np.float64 else da_.astype(np.float64)


def _check_single(ds: xr.Dataset, name: str, drop_nonfinite: bool) -> xr.Dataset:
    keys = [k for k in VARIABLES if k in ds]
    cols = {k: _float(ds[k], ("sample",)).data for k in keys}
    cols, n_dropped, filters = check_columns(cols, name, drop_nonfinite=drop_nonfinite)
    attrs = dict(ds.attrs)
    old = [attrs.get("filters")] if attrs.get("filters") else []
    attrs["name"] = name
    attrs["n_dropped"] = int(attrs.get("n_dropped", 0)) + n_dropped
    attrs["filters"] = "; ".join(old + filters)
    if not n_dropped:  # no sample coordinate: the result only goes into stack()
        return xr.Dataset({k: (("sample",), cols[k], ds[k].attrs) for k in keys},
                          attrs=attrs)
    units = attrs.get("units", "")
    out = _single(cols, name=name, units=units, source=attrs.get("source", ""),
                  n_dropped=attrs["n_dropped"], filters=[attrs["filters"]], attrs=attrs,
                  index=False)
    for k in keys:  # keep the input's variable attributes
        out[k].attrs = dict(ds[k].attrs)
    return out


def _stacked_sizes(ds: xr.Dataset) -> np.ndarray:
    """Rows per set of a stacked data set without ``M``: up to the last non-padding row.

    A row is padding when E and uE are both NaN *and* it comes after the last row where
    either is not NaN; NaN rows before that are real rows (and errors, or dropped).
    """
    E = ds["E"].data
    u = ds["uE"].data
    if not (is_lazy(E) or is_lazy(u)) and ds.sizes["sample"]:
        return np.array([_last_real_row(E[i], u[i]) for i in range(E.shape[0])],
                        dtype=np.int64)
    real = np.isfinite(E) | np.isfinite(u)
    if is_lazy(real):
        import dask.array as da

        pos = da.arange(1, ds.sizes["sample"] + 1, chunks=real.chunks[1])
    else:
        pos = np.arange(1, ds.sizes["sample"] + 1)
    last = (real * pos).max(axis=1)
    return np.asarray(last.compute() if is_lazy(last) else last, dtype=np.int64)


def _last_real_row(E: np.ndarray, u: np.ndarray) -> int:
    """1 + the last row where E or uE is not NaN (0: none), read from the end in groups.

    Temporaries of :data:`uqx._checks.CHECK_ROWS` rows, not of the whole row of the stack.
    """
    n = E.shape[0]
    for hi in range(n, 0, -CHECK_ROWS):
        lo = max(hi - CHECK_ROWS, 0)
        real = np.flatnonzero(np.isfinite(E[lo:hi]) | np.isfinite(u[lo:hi]))
        if real.size:
            return lo + int(real[-1]) + 1
    return 0


def _check_stacked(ds: xr.Dataset, set_dim: str, drop_nonfinite: bool):
    """Check a stacked data set; returns it (checked) and whether its columns are new.

    The columns are new (allocated here, referenced by nothing else) only when rows were
    dropped: the sets are then stacked again (:func:`stack`).
    """
    if set_dim != "set":
        if "set" in ds.dims or "set" in ds.variables:
            raise InputError(f"a variable or dimension 'set' conflicts with set dim {set_dim!r}")
        if "M" not in ds or ds["M"].dims != (set_dim,):  # not from uqx.stack(dim=...)
            warnings.warn(
                f"dimension {set_dim!r} of E is taken as the set dimension: each of its "
                f"{ds.sizes[set_dim]} entries is validated as a separate data set (results "
                f"over 'set', attrs['set_dim'] = {set_dim!r}). If that is not what you mean, "
                f"select one with ds.isel({set_dim}=0) or pool them with "
                f"ds.stack(sample=({set_dim!r}, 'sample'))",
                UserWarning, stacklevel=4,
            )
        ds = ds.rename({set_dim: "set"}).assign_attrs(set_dim=set_dim)
    keys = [k for k in VARIABLES if k in ds]
    ds = ds.assign({k: _float(ds[k], ("set", "sample")) for k in keys})
    n_sample = ds.sizes["sample"]
    if "M" in ds:
        M = np.asarray(ds["M"].values, dtype=np.int64)
        if M.shape != (ds.sizes["set"],) or (M < 0).any() or (M > n_sample).any():
            raise InputError(f"M must give 0..{n_sample} rows per set, got {M.tolist()}")
    else:
        M = _stacked_sizes(ds)
    names = [str(n) for n in ds["set"].values]
    sets, lazy = [], []
    for i, m in enumerate(M):
        cols = {k: ds[k].data[i, :m] for k in keys}
        extra = {k: count_rows(cols[k], np.isfinite) for k in ("X", "V") if k in cols}
        sets.append(cols)
        lazy.append({**count_problems(cols), **extra})
    flat = [v for c in lazy for v in c.values()]
    if any(is_lazy(v) for v in flat):
        import dask

        flat = list(dask.compute(*flat))
    it = iter(_scalar(v) for v in flat)
    counts = [{k: next(it) for k in c} for c in lazy]
    dropped = np.zeros(len(sets), dtype=np.int64)
    filters = [""] * len(sets)
    for i, (cols, cnt) in enumerate(zip(sets, counts, strict=True)):
        for k in ("X", "V"):  # all-NaN: variable absent from this set (stack padding)
            if k in cols and cnt[k] == 0:
                del cols[k]
        sets[i], dropped[i], f = check_columns(cols, names[i], drop_nonfinite=drop_nonfinite,
                                               counts=cnt)
        filters[i] = "; ".join(f)
    n_old = ds["n_dropped"].values if "n_dropped" in ds else np.zeros(len(sets), np.int64)
    if not dropped.any():
        return ds.assign(
            M=("set", M, INPUT.attrs("M")),
            n_dropped=("set", np.asarray(n_old, dtype=np.int64), INPUT.attrs("n_dropped")),
        ), False
    parts = [
        _single(cols, name=names[i], units="", n_dropped=int(n_old[i]) + int(dropped[i]),
                filters=[filters[i]] if filters[i] else [], index=False)
        for i, cols in enumerate(sets)
    ]
    out = stack(parts)
    for k in keys:
        out[k].attrs = dict(ds[k].attrs)
    if "units" in ds and ds["units"].dims == ("set",):
        out["units"] = ds["units"]
    notes = "; ".join(f"{n}: {f}" for n, f in zip(names, filters, strict=True) if f)
    prev = ds.attrs.get("filters", "")
    return out.assign_attrs({
        **ds.attrs, "filters": "; ".join(x for x in (prev, notes) if x)
    }), not is_lazy(out["E"].data)


def as_stacked(ds: xr.Dataset | Iterable[xr.Dataset], *, drop_nonfinite: bool = False):
    """Check any input form and return it stacked on ``set`` (the entry of every function).

    Runs the checks of :func:`from_arrays` whatever the input: one data set (``E``,
    ``uE``, ``X``, ``V`` over ``sample``), a sequence of them, or a stacked data set
    (over a set dimension and ``sample``, any set dimension name, renamed ``set``),
    numpy- or dask-backed (dask arrays stay lazy; the checks compute counts in one pass).

    Parameters
    ----------
    ds : xarray.Dataset or iterable of xarray.Dataset
    drop_nonfinite : bool, default False
        Drop rows with NaN/inf in E, uE, X or V and count them in ``n_dropped(set)``
        (reported by :func:`uqx.validate` as "N row(s) dropped by filters"); otherwise
        such rows raise :class:`InputError`.

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``sample``), float64, with ``M(set)`` and ``n_dropped(set)``.
        Every call checks its input; :func:`check_sets` returns the same data as a
        :class:`CheckedSets`, which the functions of the package take without checking
        again.

    Raises
    ------
    InputError
        Missing ``E``/``uE`` (the message lists the variables present); no ``sample``
        dimension (the message gives the ``ds.rename`` fix); non-numeric dtype;
        variables over different dimensions; NaN/inf in the real rows (count and first
        rows named) unless ``drop_nonfinite``; ``uE <= 0``; fewer than 2 rows.

    Notes
    -----
    In a stacked data set the real rows of set ``i`` are the first ``M[i]``; positions
    from ``M[i]`` on are padding and never checked. Without ``M`` the rows are taken
    row-wise: a row where E and uE are both NaN is padding only when it comes after the
    last row where either is not NaN; earlier NaN rows are real (errors, or dropped). An
    optional ``X``/``V`` that is NaN on all real rows of a set is absent from that set
    (as :func:`stack` pads it); partly NaN, it is an error like E.
    """
    return check_sets(ds, drop_nonfinite).data


def check_sets(ds, drop_nonfinite: bool = False) -> CheckedSets:
    """Check any input form once: :func:`as_stacked` as a :class:`CheckedSets`.

    A ``CheckedSets`` is returned as it is. Otherwise the checks of :func:`as_stacked` run,
    and :attr:`CheckedSets.private` says whether the columns were allocated by this call
    (stacked by :func:`stack`, in memory) and are referenced by nothing else: the holder
    may then permute them in place (:func:`uqx.dataio.row_order.permute_rows`). It is False
    for a stacked data set whose arrays are kept (they may be the user's) and for dask
    columns.

    Parameters
    ----------
    ds : CheckedSets, xarray.Dataset or iterable of xarray.Dataset
    drop_nonfinite : bool, default False
        As for :func:`as_stacked`.

    Returns
    -------
    CheckedSets
    """
    if isinstance(ds, CheckedSets):
        return ds
    if not isinstance(ds, xr.Dataset):
        if hasattr(ds, "columns") and hasattr(ds, "iloc"):  # a pandas DataFrame
            raise InputError(
                "expected an xarray.Dataset, got a pandas DataFrame; convert it with "
                "uqx.from_dataframe(df, E='E', uE='uE') (naming its columns)"
            )
        if isinstance(ds, dict):
            raise InputError(
                "expected an xarray.Dataset, got a dict; build one with "
                "uqx.from_arrays(d['E'], d['uE'])"
            )
        if isinstance(ds, str | bytes | np.ndarray | xr.DataArray) or not isinstance(
            ds, Iterable
        ):
            raise InputError(
                f"expected an xarray.Dataset (or a list of them), got {type(ds).__name__}; "
                "build one with uqx.from_arrays(E, uE)"
            )
        items = list(ds)
        if not all(isinstance(d, xr.Dataset) for d in items):
            bad = next(type(d).__name__ for d in items if not isinstance(d, xr.Dataset))
            hint = ("; for arrays (E, uE) build the data set with uqx.from_arrays(E, uE)"
                    if bad == "ndarray" else "")
            raise InputError(f"expected a list of xarray.Dataset, got an item of type "
                             f"{bad}{hint}")
        singles = []
        for i, d in enumerate(items):
            name = str(d.attrs.get("name", f"set{i + 1}"))
            if _set_dim(d, name) is not None:
                raise InputError(f"{name}: a list item must be one data set over 'sample'")
            singles.append(_check_single(d, name, drop_nonfinite))
        out = stack(singles)  # new arrays (np.full), in memory unless dask
        return CheckedSets(out, not is_lazy(out["E"].data))
    name = str(ds.attrs.get("name", "data"))
    set_dim = _set_dim(ds, name)
    if set_dim is None:
        out = stack([_check_single(ds, name, drop_nonfinite)])
        private = not is_lazy(out["E"].data)
    else:
        out, private = _check_stacked(ds, set_dim, drop_nonfinite)
    return CheckedSets(out, private)


@dataclass(frozen=True)
class SetData:
    """The valid (unpadded) arrays of one data set, in file order."""

    name: str
    E: np.ndarray
    uE: np.ndarray
    X: np.ndarray | None = None
    V: np.ndarray | None = None

    @property
    def M(self) -> int:
        """Number of samples."""
        return int(self.E.size)

    def variable(self, key: str) -> np.ndarray:
        """Conditioning variable by name (``uE``, ``X``, ``V`` or ``E``)."""
        arr = getattr(self, key, None)
        if arr is None:
            raise InputError(f"{self.name}: no variable {key!r} in this data set")
        return arr


def _row(ds: xr.Dataset, key: str, i: int, m: int) -> np.ndarray:
    arr = ds[key].data[i, :m]
    return np.asarray(arr.compute() if is_lazy(arr) else arr)


def iter_sets(ds) -> Iterator[SetData]:
    """Yield the unpadded arrays of every set (numpy; dask-backed sets are loaded).

    The input goes through :func:`as_stacked` (free for its own output), so the arrays
    are finite with ``uE > 0``; ``X``/``V`` are None in a set where they are absent.

    Parameters
    ----------
    ds : xarray.Dataset or sequence of xarray.Dataset
        Any input form accepted by :func:`as_stacked`.

    Yields
    ------
    SetData
        ``name``, ``E``, ``uE``, ``X``, ``V`` and ``M`` of one set.
    """
    return iter_checked(check_sets(ds))


def iter_checked(checked: CheckedSets) -> Iterator[SetData]:
    """Yield the unpadded arrays of every set of checked input (:func:`iter_sets` past its check).

    Parameters
    ----------
    checked : CheckedSets
        The output of :func:`check_sets`.

    Yields
    ------
    SetData
    """
    ds = checked.data
    for i, name in enumerate(ds["set"].values):
        m = int(ds["M"].values[i])
        extra = {}
        for key in ("X", "V"):
            if key in ds:
                arr = _row(ds, key, i, m)
                extra[key] = arr if np.isfinite(arr).all() else None
        yield SetData(str(name), _row(ds, "E", i, m), _row(ds, "uE", i, m), **extra)
