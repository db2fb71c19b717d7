"""Row checks of one data set's columns, shared by every input route.

:func:`check_columns` runs the checks of methods: edge cases on the columns ``E``, ``uE``
(and ``X``, ``V``) of one data set, numpy- or dask-backed: non-finite values (error, or
rows dropped and counted), the documented ``uE > k sd(E)`` filter, at least 2 rows and
``uE > 0``. Dask columns stay lazy: the checks compute counts in one pass (bounded
memory); boolean row masks are only materialised to drop rows or to name bad rows.
"""

from __future__ import annotations

import numpy as np

from uqx.errors import InputError

__all__ = ["check_columns", "is_lazy", "describe_bad", "count_problems", "NUMERIC_KINDS"]

#: dtype kinds accepted as numbers (float, signed and unsigned integers)
NUMERIC_KINDS = "fiu"

DROP_HINT = (
    "clean the data or drop (and count) those rows with drop_nonfinite=True "
    "(CLI: --drop-nonfinite)"
)


def is_lazy(arr) -> bool:
    """Tell whether ``arr`` is a dask array (anything with a dask graph)."""
    return hasattr(arr, "dask") and hasattr(arr, "chunks")


def _compute(values: list):
    """Evaluate a list of (possibly lazy) scalars in one pass."""
    if any(is_lazy(v) for v in values):
        import dask

        return [int(v) for v in dask.compute(*values)]
    return [int(v) for v in values]


def _mask(arr) -> np.ndarray:
    return np.asarray(arr.compute() if is_lazy(arr) else arr)


def describe_bad(mask, label: str, rows: np.ndarray | None = None) -> str:
    """``"N value(s) of LABEL (0-based rows i, j, ...)"`` for a boolean mask.

    ``rows``: input row numbers of the (possibly filtered) arrays, so that messages name
    the rows of the input.
    """
    mask = _mask(mask)
    idx = np.flatnonzero(mask) if rows is None else rows[mask]
    head = ", ".join(str(i) for i in idx[:5]) + (", ..." if idx.size > 5 else "")
    return f"{idx.size} value(s) of {label} (0-based rows {head})"


def _nonfinite(arr):
    return ~np.isfinite(arr)


def _nonpositive(arr):
    # NaN compares False: only finite rows (or rows left after dropping) are judged
    return ~(arr > 0)


def count_problems(cols: dict) -> dict:
    """Lazy-or-eager counts: non-finite values per column and ``uE <= 0`` (one pass)."""
    out = {f"nonfinite_{k}": _nonfinite(v).sum() for k, v in cols.items()}
    out["nonpositive_uE"] = (cols["uE"] <= 0).sum()
    return out


def _keep(cols: dict, keep: np.ndarray, rows: np.ndarray | None):
    # rows: input row numbers of the kept rows (None: all rows, in order)
    kept = np.flatnonzero(keep) if rows is None else rows[keep]
    return {k: v[keep] for k, v in cols.items()}, kept


def check_columns(
    cols: dict,
    name: str,
    *,
    drop_nonfinite: bool = False,
    min_uE_rel_sd: float | None = None,
    counts: dict | None = None,
):
    """Check (and filter) the rows of one data set.

    Parameters
    ----------
    cols : dict of str -> array, shape (M,)
        ``E``, ``uE`` and optional ``X``, ``V`` of equal length, float dtype.
    name : str
        Data set name, first word of every message.
    drop_nonfinite : bool
        Drop rows with NaN/inf in any column (counted) instead of raising.
    min_uE_rel_sd : float, optional
        Keep rows with ``uE > min_uE_rel_sd * sd(E)`` (sd with n-1 over the rows left).
    counts : dict, optional
        Already computed :func:`count_problems` of ``cols`` (one pass over many sets).

    Returns
    -------
    cols : dict
        The kept rows (the input arrays themselves when nothing is dropped).
    n_dropped : int
    filters : list of str
        Descriptions of the filters applied.

    Raises
    ------
    InputError
        NaN/inf (without ``drop_nonfinite``), fewer than 2 rows, ``uE <= 0``.
    """
    if counts is None:
        lazy = count_problems(cols)
        counts = dict(zip(lazy, _compute(list(lazy.values())), strict=True))
    n = int(cols["E"].shape[0])
    rows = None  # input row numbers once rows are dropped (an index costs 8 bytes a row)
    n_dropped = 0
    filters: list[str] = []
    bad_keys = [k for k in cols if counts[f"nonfinite_{k}"]]
    if bad_keys and not drop_nonfinite:
        key = bad_keys[0]
        raise InputError(
            f"{name}: {describe_bad(_nonfinite(cols[key]), key)} are NaN or infinite; "
            + DROP_HINT
        )
    changed = False
    if bad_keys:
        bad = np.zeros(n, dtype=bool)
        for key in bad_keys:
            bad |= _mask(_nonfinite(cols[key]))
        cols, rows = _keep(cols, ~bad, rows)
        n_dropped += int(bad.sum())
        filters.append(f"dropped {int(bad.sum())} row(s) with non-finite values")
        changed = True
    if min_uE_rel_sd is not None and int(cols["E"].shape[0]) >= 2:
        sd = cols["E"].std(ddof=1)
        thr = float(min_uE_rel_sd) * float(sd.compute() if is_lazy(sd) else sd)
        small = _mask(~(cols["uE"] > thr))
        n_small = int(small.sum())
        if n_small:
            cols, rows = _keep(cols, ~small, rows)
            n_dropped += n_small
            changed = True
        filters.append(f"uE > {min_uE_rel_sd:g}*sd(E): dropped {n_small} row(s)")
    n_left = int(cols["E"].shape[0])
    if n_left < 2:
        raise InputError(f"{name}: at least 2 points are needed, got {n_left}")
    n_nonpos = (
        _compute([_nonpositive(cols["uE"]).sum()])[0] if changed else counts["nonpositive_uE"]
    )
    if n_nonpos:
        raise InputError(
            f"{name}: {describe_bad(_nonpositive(cols['uE']), 'uE', rows)} are <= 0; "
            "uncertainties must be strictly positive (a documented filter such as "
            "min_uE_rel_sd=1e-6 drops them)"
        )
    return cols, n_dropped, filters
