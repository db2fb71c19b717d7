"""The plain-numpy engine: the sums of the numba kernels, written the obvious way.

Each function here computes what a kernel of :mod:`uqx.engine.statistic`,
:mod:`uqx.engine.evaluator` or :mod:`uqx.engine.copies` computes, from the same
declaration of the terms (:mod:`uqx.engine.layout`, their ``py_func`` on arrays) but
with whole arrays: every sample's terms held at once (48 bytes a sample and row),
numpy's sums, a resample spelled out by repeating its samples. Slow and memory-hungry,
it is the reference the kernels are tested against (``tests/test_reference_numpy.py``):
the same values within rounding, not the same bits (numpy sums pairwise, the kernels
one sample after the other).

As in xskillscore and flox (``engine=``), a caller can run the package's per-bin sums on
it: inside ``with use_engine("numpy"):``, :func:`uqx.engine.statistic.bin_feature_sums`
and :func:`uqx.engine.statistic.prefix_bin_features` return the sums of this module.
"""

from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from uqx.engine.layout import copy_terms, sample_bin_features
from uqx.errors import InputError

__all__ = [
    "ENGINES",
    "use_engine",
    "current_engine",
    "bin_feature_sums",
    "prefix_bin_features",
    "weighted_bin_sums",
    "copy_sums",
]

#: The engines of the per-bin sums: the numba kernels (default) and this module.
ENGINES = ("numba", "numpy")
# a context variable, not a global: threads and dask tasks each see their own setting
_ENGINE = contextvars.ContextVar("uqx_engine", default="numba")


@contextlib.contextmanager
def use_engine(name: str):
    """Run the per-bin sums of the enclosed code on the engine ``name``.

    Parameters
    ----------
    name : {"numba", "numpy"}
        ``"numpy"``: :func:`uqx.engine.statistic.bin_feature_sums` and
        :func:`uqx.engine.statistic.prefix_bin_features` return the sums of this module.

    Examples
    --------
    >>> with use_engine("numpy"):
    ...     current_engine()
    'numpy'
    >>> current_engine()
    'numba'
    """
    if name not in ENGINES:
        raise InputError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")
    token = _ENGINE.set(name)
    try:
        yield
    finally:
        _ENGINE.reset(token)


def current_engine() -> str:
    """Return the engine of the per-bin sums in this context (:func:`use_engine`)."""
    return _ENGINE.get()


def _features(E, u, mean):
    """Bin features (..., M, 6) of every sample (:func:`sample_bin_features` on arrays)."""
    return np.stack(sample_bin_features.py_func(E, u, mean), axis=-1)


def _cut(F, edges):
    """Sum the rows of F (..., M, k) over the index intervals of ``edges``: (..., N, k)."""
    edges = np.asarray(edges, dtype=np.int64)
    out = np.zeros(F.shape[:-2] + (edges.size - 1, F.shape[-1]))
    for j in range(edges.size - 1):
        out[..., j, :] = F[..., edges[j]:edges[j + 1], :].sum(axis=-2)
    return out


def bin_feature_sums(E_sorted, u_sorted, edges):
    """Per-bin sums (b, N, 6) of the bin features of rows of E sorted by the binning variable.

    The twin of :func:`uqx.engine.statistic.bin_feature_sums`: ``E_sorted`` (b, M) or
    (M,), ``u_sorted`` (M,), ``edges`` (N+1,) index boundaries; each row's E centred on
    that row's mean.
    """
    E = np.atleast_2d(np.asarray(E_sorted, dtype=np.float64))
    u = np.broadcast_to(np.asarray(u_sorted, dtype=np.float64), E.shape)
    return _cut(_features(E, u, E.mean(axis=-1, keepdims=True)), edges)


def prefix_bin_features(E_sorted, u_sorted):
    """Prefix sums (M+1, 6) of the bin features of one sorted data set (``P[0] = 0``).

    The twin of :func:`uqx.engine.statistic.prefix_bin_features`.
    """
    E = np.asarray(E_sorted, dtype=np.float64)
    u = np.asarray(u_sorted, dtype=np.float64)
    F = _features(E, u, E.mean())
    return np.concatenate([np.zeros((1, 6)), np.cumsum(F, axis=0)])


def weighted_bin_sums(counts, E_sorted, u_sorted, edges, mean=None):
    """Per-bin sums (b, N, 6) of resamples given by their counts, spelled out.

    The twin of the evaluator's ``_weighted_bin_sums`` and ``_streamed_bin_sums``: the
    resample of row r repeats the sample at sorted position p ``counts[r, p]`` times (so
    it stays sorted), its features are centred on ``mean`` (default: the mean of
    ``E_sorted``, the data set's, as the kernels do), and it is cut with the original
    ``edges``.

    Parameters
    ----------
    counts : numpy.ndarray of int, shape (b, M)
        The counts of each replicate in the sorted order (each row sums to ``edges[-1]``).
    E_sorted, u_sorted : numpy.ndarray, shape (M,)
    edges : numpy.ndarray of int, shape (N+1,)
    mean : float, optional

    Returns
    -------
    numpy.ndarray, shape (b, N, 6)
    """
    E = np.asarray(E_sorted, dtype=np.float64)
    u = np.asarray(u_sorted, dtype=np.float64)
    m = E.mean() if mean is None else mean
    counts = np.atleast_2d(counts)
    out = []
    for c in counts:
        i = np.repeat(np.arange(E.size), c)
        out.append(_cut(_features(E[i], u[i], m), edges))
    return np.stack(out)


def copy_sums(eps, u_sorted, bin_of, n_bins):
    r"""Sum the copy terms of copies :math:`E = u\epsilon` per bin: (k, n_bins, 4).

    The twin of :func:`uqx.engine.copies.sim_rows` given its draws ε: ``bin_of`` (M,) the
    bin of each position (the segments ``seg`` as ``np.repeat(np.arange(S),
    np.diff(seg))``, another binning as its row of ``binid``).

    Parameters
    ----------
    eps : numpy.ndarray, shape (k, M)
    u_sorted : numpy.ndarray, shape (M,)
    bin_of : numpy.ndarray of int, shape (M,)
    n_bins : int

    Returns
    -------
    numpy.ndarray, shape (k, n_bins, 4)
        Columns :data:`uqx.engine.layout.C_EPS2` ... :data:`uqx.engine.layout.C_EPS`.
    """
    eps = np.atleast_2d(np.asarray(eps, dtype=np.float64))
    T = np.stack(copy_terms.py_func(eps, np.asarray(u_sorted, dtype=np.float64)), axis=-1)
    bin_of = np.asarray(bin_of)
    out = np.zeros((eps.shape[0], n_bins, 4))
    for b in range(n_bins):
        out[:, b] = T[:, bin_of == b].sum(axis=1)
    return out
