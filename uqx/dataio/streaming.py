"""Rows of a column read a group at a time, so that memory does not grow with the set.

A column (numpy or dask) goes to the dask tasks of the streamed route
(:mod:`uqx.inference.streamed`) untouched (:class:`ColumnRef`), and each task reads only
the rows it needs (:func:`read_rows`; disk-backed input, :mod:`uqx.workflow.disk`, loads
its columns the same way). :func:`streamed_content_key` is the content key of a set's
rows read a group at a time: memory O(rows of a group), whatever the size of the set.
"""

from __future__ import annotations

import numpy as np

from uqx._checks import is_lazy
from uqx.engine.resample import chunked_content_key

__all__ = ["ColumnRef", "read_rows", "streamed_content_key"]


class ColumnRef:
    """A column (numpy or dask) handed to dask tasks untouched: each task reads its rows.

    Dask neither traverses, hashes nor pickles what it wraps, so a task holds only the
    rows it reads (:func:`read_rows`), whatever the size of the column.
    """

    def __init__(self, arr):
        self.arr = arr

    def __dask_tokenize__(self):
        return ("uqx-column", id(self))


def read_rows(arr, lo: int, hi: int) -> np.ndarray:
    """Return rows ``lo:hi`` of a 1-d numpy or dask array as float64 numpy.

    A dask array is read synchronously, inside the calling task.
    """
    part = arr[lo:hi]
    if is_lazy(part):
        part = part.compute(scheduler="sync")
    return np.asarray(part, dtype=np.float64)


def _row_chunks(arr, M: int, step: int):
    """Rows ``0:M`` of a 1-d array, ``step`` rows at a time (views of a numpy array)."""
    if not is_lazy(arr):
        # the hash copies what it is given (tobytes): groups, not the whole column
        arr = np.asarray(arr)
        for lo in range(0, M, step):
            yield arr[lo:min(lo + step, M)]
        return
    for lo in range(0, M, step):
        yield read_rows(arr, lo, min(lo + step, M))


def streamed_content_key(E, u, M: int, step: int = 1 << 20, *,
                         columns=None) -> tuple[int, int, int, int]:
    """:func:`uqx.engine.resample.content_key` of (E, u), read ``step`` rows at a time.

    The same bytes in the same order (E, ``|``, uE, ``|``), hashed by
    :func:`uqx.engine.resample.chunked_content_key`, so the same key as the whole
    arrays, with memory O(step) (the hash copies what it is given: a whole numpy column
    would cost 8 bytes a row; dask columns are read group by group). ``columns`` (a
    sequence of arrays) replaces (E, u): ``columns=(u,)`` is ``content_key(u)``, the key
    of the members of the null family that do not look at E.
    """
    cols = (E, u) if columns is None else columns
    return chunked_content_key(_row_chunks(arr, M, step) for arr in cols)
