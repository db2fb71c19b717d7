"""Disk-backed input in the validation workflow: what streams, what is loaded, and how.

:func:`streams` says whether :func:`uqx.validate` can stream a dask-backed input (moment
statistics without the conditional routes) and :func:`memory_note` tells the user what is
held in memory otherwise; :func:`load_columns` loads the columns chunk by chunk (one copy
a column) and :func:`tailedness_streamed` computes the exact tailedness metrics one column
at a time (8 bytes a row).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc

import numpy as np

from uqx._checks import is_lazy
from uqx.dataio.model import SetData
from uqx.dataio.streaming import read_rows
from uqx.engine.defaults import LONG_SET_ROWS
from uqx.engine.statistic import parse_stat
from uqx.engine.stats.tailedness import sorted_tailedness

__all__ = ["streams", "memory_note", "is_lazy_input", "lazy_sets", "load_columns",
           "tailedness_streamed", "release_freed_memory", "READ_ROWS"]

#: Rows read at a time from a dask-backed column (one group of the streamed routes).
READ_ROWS = 1 << 20
#: Peak RSS of the in-memory workflow with binned statistics on uE (rows in content
#: order, ``uqx validate FILE.nc --stats zms,rce,ence --no-conditional --n-boot 200
#: --n-mc 200``, benchmarks/bench_validate_disk.py, quiet 2-core machine, 2026-11-26):
#: 2918 MiB at 10^8 rows, 1295 MiB at 10^7 rows. A fixed part (interpreter, numba, dask,
#: HDF5 caches) of about 600 MiB, plus, beyond ``LONG_SET_ROWS`` (2^24) rows, the columns
#: (16 bytes a row for E, uE) and one column at a time (8: the order of the rows, the
#: exact quantiles); shorter sets also keep the sort-free pools and the leave-one-out
#: values (about 70 bytes a row in all at 10^7).
_BINNED_FIXED_MIB = 600
_BINNED_BYTES_PER_ROW = 24
#: The same for sets of at most 2^24 rows.
_BINNED_BYTES_PER_ROW_SMALL = 70


def release_freed_memory() -> bool:
    """Collect garbage, then hand the heap's freed pages back to the system (glibc ``malloc_trim``).

    Between the steps of a long validation: the groups of 2^20 rows (8 MiB arrays) that
    the steps allocate and free are served from the allocator's heaps once its dynamic
    mmap threshold has grown, and the freed pages stay resident; at 10^8 rows they made
    the peak RSS vary by ~350 MiB from run to run on top of what the steps hold. Only
    free memory is released: nothing changes but the resident size. A no-op (False)
    where the C library has no ``malloc_trim``.

    Returns
    -------
    bool
        Whether the call was made.
    """
    gc.collect()  # arrays held only by reference cycles go first
    name = ctypes.util.find_library("c")
    try:
        trim = ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):
        trim = None
    if trim is None:
        return False
    trim(0)
    return True


def _fill_sorted(buf, rows):
    """Fill ``buf`` with ``rows(lo, hi)`` group by group, then sort it in place."""
    for lo in range(0, buf.shape[0], READ_ROWS):
        hi = min(lo + READ_ROWS, buf.shape[0])
        buf[lo:hi] = rows(lo, hi)
    buf.sort()


def tailedness_streamed(E, u, M):
    """Tailedness of a dask-backed or long set, one column at a time.

    One buffer of M float64 (8 bytes a row) is filled group by group with u (then u²,
    squared in place), E², Z², each sorted in place and summarised by
    :func:`uqx.engine.stats.tailedness.sorted_tailedness`: the same bits as the in-memory
    :func:`~uqx.engine.stats.tailedness.tailedness`, exact HD quantiles (not approximations).
    """
    buf = np.empty(M)
    out = {}

    def e2(lo, hi):
        e = read_rows(E, lo, hi)
        return e * e

    def z2(lo, hi):
        with np.errstate(divide="ignore", invalid="ignore"):
            return (read_rows(E, lo, hi) / read_rows(u, lo, hi)) ** 2

    _fill_sorted(buf, lambda lo, hi: read_rows(u, lo, hi))
    out["beta_gm_u"], _ = sorted_tailedness(buf, kappa=False)
    np.multiply(buf, buf, out=buf)  # u > 0: squaring keeps the order
    out["beta_gm_u2"], out["kappa_cs_u2"] = sorted_tailedness(buf, kappa=True)
    _fill_sorted(buf, e2)
    out["beta_gm_e2"], out["kappa_cs_e2"] = sorted_tailedness(buf, kappa=True)
    _fill_sorted(buf, z2)
    out["beta_gm_z2"], out["kappa_cs_z2"] = sorted_tailedness(buf, kappa=True)
    return out


def is_lazy_input(ds) -> bool:
    """Whether any column of ``ds`` (E, uE, X, V) is a dask array."""
    return any(is_lazy(ds[k].data) for k in ("E", "uE", "X", "V") if k in ds)


def streams(stats, *, conditional: bool) -> bool:
    """Whether :func:`validate` streams disk-backed input without loading it.

    True for moment statistics only (and their data-dependent references such as
    NLL_ref) without the conditional routes; binned and rank statistics and the
    conditional routes load the columns (see the Notes of :func:`validate`).

    Parameters
    ----------
    stats : str or sequence of str or StatSpec
        Statistic names (or parsed specifications).
    conditional : bool
        Whether the conditional routes run.

    Returns
    -------
    bool
    """
    if isinstance(stats, str):
        stats = [stats]
    specs = [s if hasattr(s, "family") else parse_stat(s) for s in stats]
    return not conditional and all(s.family == "moment" for s in specs)


def memory_note(ds, stats, *, conditional: bool) -> str | None:
    """Say what :func:`validate` holds in memory for disk-backed input (None for numpy).

    Parameters
    ----------
    ds : xarray.Dataset
        Checked input (:func:`uqx.dataio.model.as_stacked`).
    stats : str or sequence of str
        Statistic names.
    conditional : bool
        Whether the conditional routes run.

    Returns
    -------
    str or None
        One sentence for the user (the CLI prints it on stderr), or None when the input
        is already in memory.
    """
    if not is_lazy_input(ds):
        return None
    rows = int(np.sum(ds["M"].values)) if "M" in ds else int(ds.sizes["sample"])
    gib = 8 * rows / 2**30
    if streams(stats, conditional=conditional):
        return (f"disk-backed input ({rows} rows): moment statistics, their BCa bootstrap "
                "and simulated references stream over chunks of 2^20 rows; held in memory: "
                f"one column at a time for the exact tailedness quantiles ({gib:.2f} GiB) "
                f"and the z-scores of the resampled-data member ({gib:.2f} GiB)")
    cols = [k for k in ("E", "uE", "X", "V") if k in ds]
    specs = [s if hasattr(s, "family") else parse_stat(s)
             for s in ([stats] if isinstance(stats, str) else stats)]
    peak = ""
    if any(s.family == "binned" for s in specs):
        per_row = _BINNED_BYTES_PER_ROW if rows > LONG_SET_ROWS else _BINNED_BYTES_PER_ROW_SMALL
        est = _BINNED_FIXED_MIB / 1024 + per_row * rows / 2**30
        peak = (f"; binned statistics on uE (rows in content order) peak at about "
                f"{est:.1f} GiB here ({per_row} bytes a row beyond ~0.6 GiB of libraries, "
                "columns included)")
    return (f"disk-backed input ({rows} rows) loaded into memory ({'+'.join(cols)}: "
            f"{len(cols) * gib:.2f} GiB){peak}; CC, bins on X/V and the conditional routes "
            "also hold sort orders and per-row values (8 bytes a row each); moment "
            "statistics alone with --no-conditional stream instead")


def lazy_sets(ds):
    """SetData of every set of checked stacked ``ds`` with its dask-backed rows (nothing read)."""
    return [SetData(str(name), ds["E"].data[i, :m], ds["uE"].data[i, :m])
            for i, (name, m) in enumerate(zip(ds["set"].values,
                                               np.asarray(ds["M"].values, dtype=np.int64),
                                               strict=True))]


def load_columns(ds):
    """Copy dask-backed stacked input into numpy, chunk by chunk (one copy a column).

    ``Dataset.load`` would hold the chunks and their concatenation at once (twice the
    column); here each column is preallocated and filled in groups of 2^20 rows. The
    loaded arrays are new, referenced by the result only, so its owner may permute them
    in place (:func:`uqx.dataio.row_order.permute_rows`); numpy columns of ``ds`` are kept
    as they are. The rows are those of ``ds``: the holder of a checked ``ds`` keeps the
    copy as checked (:meth:`uqx.dataio.model.CheckedSets.derive`).

    Parameters
    ----------
    ds : xarray.Dataset
        Stacked input (``E``, ``uE``, optional ``X``, ``V`` over ``set``, ``sample``).

    Returns
    -------
    xarray.Dataset
        ``ds`` with its dask-backed columns replaced by numpy float64 arrays.
    """
    out = ds.copy()
    for k in ("E", "uE", "X", "V"):
        if k not in ds or not is_lazy(ds[k].data):
            continue
        arr = ds[k].data
        buf = np.empty(arr.shape, dtype=np.float64)
        for i in range(arr.shape[0]):
            for lo in range(0, arr.shape[1], READ_ROWS):
                hi = min(lo + READ_ROWS, arr.shape[1])
                buf[i, lo:hi] = read_rows(arr[i], lo, hi)
        out[k] = (ds[k].dims, buf, ds[k].attrs)
    return out
