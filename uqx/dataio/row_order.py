"""The order of the rows of stacked input: uE order (:func:`order_rows`) and permutations.

:func:`order_rows` puts every set's rows in the order :func:`uqx.validate` bins in (its
``order_step``); :func:`permute_rows` applies any per-set permutation, copying the
columns or, for columns the caller owns, moving their rows in place along the cycles of
the permutation (a numba kernel, nothing held but the order). Both keep the checks of
:func:`uqx.dataio.model.check_sets` true, so a holder wraps the result as checked
(:meth:`uqx.dataio.model.CheckedSets.derive`) without checking it again.
"""

from __future__ import annotations

import numba
import numpy as np
import xarray as xr

from uqx.dataio.model import as_stacked, iter_sets
from uqx.engine.binning import TIES, content_order, stable_order
from uqx.errors import InputError

__all__ = ["order_rows", "permute_rows"]


@numba.njit(nogil=True, cache=True)
def _permute_in_place(cols, n_cols, order):  # pragma: no cover - numba
    """``cols[k][:] = cols[k][order]`` for k < n_cols, in place, following the cycles.

    Visited positions are marked by bitwise-not of their ``order`` entry (negative),
    restored at the end. Returns False (rows partly moved) if ``order`` is not a
    permutation of ``range(len(order))``.
    """
    m = order.shape[0]
    tmp = np.empty(n_cols)
    ok = True
    for s in range(m):
        if order[s] < 0:
            continue
        for k in range(n_cols):
            tmp[k] = cols[k][s]
        p = s
        while True:
            j = order[p]
            order[p] = ~j
            if j == s:
                for k in range(n_cols):
                    cols[k][p] = tmp[k]
                break
            if j < 0 or order[j] < 0:  # a row taken twice: not a permutation
                ok = False
                break
            for k in range(n_cols):
                cols[k][p] = cols[k][j]
            p = j
        if not ok:
            break
    for s in range(m):
        if order[s] < 0:
            order[s] = ~order[s]
    return ok


def _check_order(order, m: int, name: str) -> np.ndarray:
    order = np.asarray(order)
    if order.shape != (m,) or order.dtype.kind not in "iu":
        raise InputError(f"permute_rows: order of set {name!r} must be {m} integers, got "
                         f"shape {order.shape}, dtype {order.dtype}")
    if m and (int(order.min()) < 0 or int(order.max()) >= m):
        raise InputError(f"permute_rows: order of set {name!r} is not a permutation of "
                         f"range({m})")
    return order


def order_rows(ds: xr.Dataset, ties: str = "content") -> xr.Dataset:
    """Put the rows of every set in the order of uE, tie groups as ``ties`` says.

    The order :func:`uqx.validate` bins in (its ``order_step``): ``"content"`` sorts by
    uE with the rows of a tie group ordered by a hash of each row
    (:func:`uqx.engine.binning.content_order`), ``"file-order"`` keeps a tie group in
    the order of the file (:func:`uqx.engine.binning.stable_order`). Figures and
    statistics that then sort the rows stably bin them as the validation does.

    Parameters
    ----------
    ds : xarray.Dataset
        Stacked, in-memory input (:func:`uqx.dataio.model.stack`).
    ties : {"content", "file-order"}, default "content"
        How tie groups are ordered.

    Returns
    -------
    xarray.Dataset
        A new data set with the rows reordered (``ds`` when already in that order).

    Raises
    ------
    InputError
        An unknown ``ties``.
    """
    if ties not in TIES:
        raise InputError(f"ties must be one of {', '.join(TIES)}, got {ties!r}")
    single, attrs = "M" not in ds, dict(ds.attrs)
    if single:  # one set over sample: reordered as a stack of one, returned as given
        ds = as_stacked(ds)
    orders = []
    for sd in iter_sets(ds):
        extra = [c for c in (sd.X, sd.V) if c is not None]
        orders.append(content_order(sd.uE, sd.E, *extra) if ties == "content"
                      else stable_order(sd.uE))
    out = permute_rows(ds, orders)
    if single:
        out = out.isel(set=0, drop=True)[[k for k in ("E", "uE", "X", "V") if k in out]]
        out.attrs = attrs
    return out


def permute_rows(ds: xr.Dataset, orders, *, in_place=()) -> xr.Dataset:
    """Reorder the real rows of every set of a stacked data set (padding stays last).

    The result passes the same checks as ``ds``
    (:meth:`uqx.dataio.model.CheckedSets.derive`).

    Parameters
    ----------
    ds : xarray.Dataset
        Stacked, in-memory data set (:func:`uqx.dataio.model.as_stacked`).
    orders : sequence of numpy.ndarray or None
        For set ``i``, a permutation of ``range(M[i])`` (row ``k`` becomes row
        ``orders[i][k]``); None leaves the set as it is.
    in_place : collection of str, optional
        Columns whose arrays belong to the caller (e.g. loaded by
        :func:`uqx.workflow.disk.load_columns`, referenced by nothing else): they are
        permuted in place, following the cycles of each order (nothing held but the
        order, which is left as given). Never name the arrays of a user's data set.
        The other columns are copied: one new array each, filled with ``np.take``
        (no temporary).

    Returns
    -------
    xarray.Dataset
        ``ds`` with ``E``, ``uE`` and ``X``/``V`` (where present) of each set taken in
        ``orders[i]`` (``ds`` itself, modified, when every column is permuted in place).

    Raises
    ------
    InputError
        An order that is not a permutation of ``range(M[i])``.
    """
    M = np.asarray(ds["M"].values, dtype=np.int64)
    names = [str(n) for n in ds["set"].values]
    orders = [None if o is None else _check_order(o, int(M[i]), names[i])
              for i, o in enumerate(orders)]
    keys = [k for k in ("E", "uE", "X", "V") if k in ds]
    mine = [k for k in keys if k in in_place and _writable_f64(ds[k].data)]
    for i, order in enumerate(orders):
        if order is None or not mine:
            continue
        m = int(M[i])
        cols = tuple(ds[k].data[i, :m] for k in mine)
        if not _permute_in_place(cols, len(cols), order.astype(np.int64, copy=False)):
            raise InputError(f"permute_rows: order of set {names[i]!r} is not a "
                             f"permutation of range({m})")
    data = {}
    for key in [k for k in keys if k not in mine]:
        src = np.asarray(ds[key].values)
        if src.dtype != np.float64:
            src = src.astype(np.float64)
        arr = np.empty_like(src)
        for i, order in enumerate(orders):
            m = int(M[i])
            if order is None:
                arr[i] = src[i]
                continue
            # the bounds are checked: "clip" (never taken) spares take's buffered output
            np.take(src[i, :m], order, out=arr[i, :m], mode="clip")
            arr[i, m:] = src[i, m:]
        arr[len(orders):] = src[len(orders):]
        data[key] = (ds[key].dims, arr, ds[key].attrs)
    if not data:
        return ds
    return ds.assign(data)


def _writable_f64(arr) -> bool:
    """Whether ``arr`` can be permuted in place: numpy, float64, 2-d C order, writable."""
    return (isinstance(arr, np.ndarray) and arr.dtype == np.float64 and arr.ndim == 2
            and arr.flags.c_contiguous and arr.flags.writeable)
