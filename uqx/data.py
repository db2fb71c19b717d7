"""Input data model: paired errors ``E`` and uncertainties ``uE`` over ``sample``.

One data set is an :class:`xarray.Dataset` with variables ``E(sample)``, ``uE(sample)``
and optionally ``X(sample)`` (input feature) and ``V(sample)`` (prediction). Several
data sets are stacked along ``set`` by :func:`stack`; ragged sizes are padded with NaN,
which every kernel of :mod:`uqx.stats` ignores (METHODS.md §1.1).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr

__all__ = [
    "InputError",
    "from_arrays",
    "stack",
    "as_stacked",
    "iter_sets",
    "SetData",
    "VARIABLES",
]

#: Long names of the input variables (CF ``long_name``).
VARIABLES = {
    "E": "prediction error (reference - prediction)",
    "uE": "prediction uncertainty (standard uncertainty of E)",
    "X": "input feature (conditioning variable for adaptivity)",
    "V": "predicted value",
}


class InputError(ValueError):
    """Bad user input: the message names the problem and, where useful, the fix."""


def _as_1d(values, label: str, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name}: column {label!r} is not numeric ({exc})") from None
    if arr.ndim != 1:
        arr = arr.reshape(-1) if arr.size == max(arr.shape, default=0) else arr
    if arr.ndim != 1:
        raise InputError(f"{name}: {label} must be one-dimensional, got shape {arr.shape}")
    return arr


def _describe_bad(mask: np.ndarray, label: str, rows: np.ndarray | None = None) -> str:
    # rows: input row numbers of the (possibly filtered) arrays, so messages name input rows
    idx = np.flatnonzero(mask) if rows is None else rows[mask]
    head = ", ".join(str(i) for i in idx[:5]) + (", ..." if idx.size > 5 else "")
    return f"{idx.size} value(s) of {label} (0-based rows {head})"


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
        Errors (reference - prediction) and their standard uncertainties (> 0).
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
    cols = {"E": _as_1d(E, "E", name), "uE": _as_1d(uE, "uE", name)}
    if X is not None:
        cols["X"] = _as_1d(X, "X", name)
    if V is not None:
        cols["V"] = _as_1d(V, "V", name)
    sizes = {k: v.size for k, v in cols.items()}
    if len(set(sizes.values())) != 1:
        desc = ", ".join(f"{k}={n}" for k, n in sizes.items())
        raise InputError(f"{name}: length mismatch between columns ({desc})")

    n_dropped = 0
    filters: list[str] = []
    rows = np.arange(cols["E"].size)
    bad = np.zeros(cols["E"].size, dtype=bool)
    for key, arr in cols.items():
        nonfinite = ~np.isfinite(arr)
        if nonfinite.any() and not drop_nonfinite:
            raise InputError(
                f"{name}: {_describe_bad(nonfinite, key)} are NaN or infinite; clean the "
                "data or drop (and count) those rows with drop_nonfinite=True "
                "(CLI: --drop-nonfinite)"
            )
        bad |= nonfinite
    if bad.any():
        n_bad = int(bad.sum())
        cols = {k: v[~bad] for k, v in cols.items()}
        rows = rows[~bad]
        n_dropped += n_bad
        filters.append(f"dropped {n_bad} row(s) with non-finite values")

    if min_uE_rel_sd is not None and cols["E"].size >= 2:
        thr = float(min_uE_rel_sd) * float(np.std(cols["E"], ddof=1))
        small = ~(cols["uE"] > thr)
        n_small = int(small.sum())
        if n_small:
            cols = {k: v[~small] for k, v in cols.items()}
            rows = rows[~small]
            n_dropped += n_small
        filters.append(f"uE > {min_uE_rel_sd:g}*sd(E): dropped {n_small} row(s)")

    if cols["E"].size < 2:
        raise InputError(f"{name}: at least 2 points are needed, got {cols['E'].size}")
    nonpos = ~(cols["uE"] > 0)
    if nonpos.any():
        raise InputError(
            f"{name}: {_describe_bad(nonpos, 'uE', rows)} are <= 0; uncertainties must be "
            "strictly positive (a documented filter such as min_uE_rel_sd=1e-6 drops them)"
        )

    data_vars = {}
    for key, arr in cols.items():
        attrs = {"long_name": VARIABLES[key]}
        if key in ("E", "uE") and units:
            attrs["units"] = units
        data_vars[key] = ("sample", arr, attrs)
    return xr.Dataset(
        data_vars,
        coords={"sample": np.arange(cols["E"].size)},
        attrs={
            "name": str(name),
            "units": str(units),
            "source": str(source),
            "n_dropped": int(n_dropped),
            "filters": "; ".join(filters),
        },
    )


def stack(datasets: Sequence[xr.Dataset], *, dim: str = "set") -> xr.Dataset:
    """Stack several input data sets along ``set``, padding ragged sizes with NaN.

    Parameters
    ----------
    datasets : sequence of xarray.Dataset
        Outputs of :func:`from_arrays` (or loaders). Names must be unique.

    Returns
    -------
    xarray.Dataset
        Variables over (``set``, ``sample``); ``M(set)`` the number of valid samples,
        ``n_dropped(set)`` rows removed by filters. Optional variables missing in some
        sets are all-NaN there.
    """
    datasets = list(datasets)
    if not datasets:
        raise InputError("stack: no data sets given")
    names = [str(d.attrs.get("name", f"set{i + 1}")) for i, d in enumerate(datasets)]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"stack: duplicate data set names {dup}")
    m_max = max(d.sizes["sample"] for d in datasets)
    keys = [k for k in VARIABLES if any(k in d for d in datasets)]
    out = {}
    for key in keys:
        arr = np.full((len(datasets), m_max), np.nan)
        for i, d in enumerate(datasets):
            if key in d:
                arr[i, : d.sizes["sample"]] = d[key].values
        attrs = (
            dict(datasets[0][key].attrs) if key in datasets[0] else {"long_name": VARIABLES[key]}
        )
        out[key] = (("set", "sample"), arr, attrs)
    out["M"] = (
        "set",
        np.array([d.sizes["sample"] for d in datasets]),
        {"long_name": "sample size"},
    )
    out["n_dropped"] = (
        "set",
        np.array([int(d.attrs.get("n_dropped", 0)) for d in datasets]),
        {"long_name": "rows dropped by documented filters"},
    )
    units = {d.attrs.get("units", "") for d in datasets}
    return xr.Dataset(
        out,
        coords={dim: names, "sample": np.arange(m_max)},
        attrs={
            "units": units.pop() if len(units) == 1 else "mixed",
            "sources": "; ".join(str(d.attrs.get("source", "")) for d in datasets),
            "filters": "; ".join(
                f"{n}: {d.attrs['filters']}"
                for n, d in zip(names, datasets, strict=False)
                if d.attrs.get("filters")
            ),
        },
    )


def as_stacked(ds: xr.Dataset | Iterable[xr.Dataset]) -> xr.Dataset:
    """Return ``ds`` with a ``set`` dimension (a single data set becomes a set of one)."""
    if not isinstance(ds, xr.Dataset):
        return stack(list(ds))
    if "set" in ds.dims:
        return ds
    if "E" not in ds or "uE" not in ds:
        raise InputError("input data set must contain variables 'E' and 'uE'")
    return stack([ds])


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


def iter_sets(ds: xr.Dataset) -> Iterator[SetData]:
    """Yield the unpadded arrays of every set of a (stacked) input data set."""
    ds = as_stacked(ds)
    for i, name in enumerate(ds["set"].values):
        E = ds["E"].values[i]
        uE = ds["uE"].values[i]
        valid = np.isfinite(E) & np.isfinite(uE)
        full = bool(valid.all())  # no padding: views, no copies (large M)
        extra = {}
        for key in ("X", "V"):
            if key in ds:
                arr = ds[key].values[i] if full else ds[key].values[i][valid]
                extra[key] = arr if np.isfinite(arr).all() else None
        yield SetData(str(name), E if full else E[valid], uE if full else uE[valid], **extra)
