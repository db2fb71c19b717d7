"""The layouts of the per-sample terms and their sums, declared once.

The kernels of the engine sum, per bin or per segment, a few terms of each sample, and
their outputs are read by column. What those terms are, the order of their columns and
how they add up is written here and nowhere else (the "chunk" and "combine" of flox's
``Aggregation``; the statistics' ``finish`` functions of :mod:`uqx.engine.statistic` are
its "finalize"):

* the 6 **bin features** of a sample, :func:`sample_bin_features` (columns
  :data:`B_U2` ... :data:`B_Z`, names :data:`BIN_FEATURES`): summed by
  ``_sorted_bin_sums`` and ``_prefix_bin_features`` (:mod:`uqx.engine.statistic`), the
  evaluator's ``_fold`` and ``_prefix_at`` (:mod:`uqx.engine.evaluator`), and, on
  arrays (``sample_bin_features.py_func``), by :func:`uqx.engine.statistic.bin_features`
  and :mod:`uqx.engine.reference_numpy`;
* the 4 **copy terms** of a value of a calibrated copy, :func:`copy_terms` (columns
  :data:`C_EPS2` ... :data:`C_EPS`): summed by :func:`uqx.engine.copies.sim_rows`, read
  by :func:`uqx.engine.copies.copy_bin_features` and
  :func:`uqx.engine.copies.copy_moment_features`.

Every kernel calls these functions, so the operations, and so the bits, are the same on
every route. numba's cache tracks only a kernel's own file: after a change here, clear
the ``__pycache__`` of the modules that inline these (or the kernels keep the old code).
"""

from __future__ import annotations

import numba

__all__ = [
    "BIN_FEATURES",
    "B_U2", "B_E2", "B_Z2", "B_EC", "B_EC2", "B_Z",
    "sample_bin_features",
    "no_bin_features",
    "add_bin_features",
    "add_bin_features_times",
    "put_bin_features",
    "C_EPS2", "C_X2", "C_X", "C_EPS",
    "copy_terms",
    "no_copy_terms",
    "add_copy_terms",
    "add_copy_terms_at",
    "put_copy_terms",
]

# ---------------------------------------------------------------- bin features
#: The per-sample bin features, named in the column order of
#: :func:`uqx.engine.statistic.bin_features` and of every per-bin sum (``Ec`` is E − Ē),
#: each with the inputs it reads: the names a binned statistic's
#: :attr:`uqx.engine.statistic.Statistic.sums` lists.
BIN_FEATURES = {"u2": "u", "E2": "E", "z2": "Eu", "Ec": "E", "Ec2": "E", "z": "Eu"}
#: Columns of the bin features and of every per-bin sum (the order of
#: :data:`BIN_FEATURES`), the positions of the tuple :func:`sample_bin_features` returns.
B_U2, B_E2, B_Z2, B_EC, B_EC2, B_Z = range(6)


# inline="always": numba splices these into the kernels' loops, and the tuples stay in
# registers (as the hand-written accumulators did: same speed, same bits).
@numba.njit(inline="always")
def sample_bin_features(e, u, mean):
    """Return the 6 bin features of one sample (or arrays of samples), in column order.

    Parameters
    ----------
    e, u : float or numpy.ndarray
        Error and uncertainty.
    mean : float or numpy.ndarray
        The mean of the errors of the data set (E is centred on it: the one-pass
        per-bin variance stays accurate).

    Returns
    -------
    tuple of 6
        (u², E², z², E − Ē, (E − Ē)², z) with z = E/u, indexed by :data:`B_U2` ...
        :data:`B_Z`. ``sample_bin_features.py_func`` is the same code on numpy arrays.
    """
    z = e / u
    ec = e - mean
    return u * u, e * e, z * z, ec, ec * ec, z


@numba.njit(inline="always")
def no_bin_features():
    """Return the 6 sums of no sample: the accumulators' start."""
    return 0.0, 0.0, 0.0, 0.0, 0.0, 0.0


@numba.njit(inline="always")
def add_bin_features(a, f):
    """Return the sums ``a`` plus the features ``f`` (6-tuples), column by column."""
    return a[0] + f[0], a[1] + f[1], a[2] + f[2], a[3] + f[3], a[4] + f[4], a[5] + f[5]


@numba.njit(inline="always")
def add_bin_features_times(a, c, f):
    """Return the sums ``a`` plus ``c`` copies of the features ``f``: ``a + c * f``."""
    return (a[0] + c * f[0], a[1] + c * f[1], a[2] + c * f[2], a[3] + c * f[3],
            a[4] + c * f[4], a[5] + c * f[5])


@numba.njit(inline="always")
def put_bin_features(out, j, a):
    """Write the 6-tuple ``a`` into row ``j`` of ``out`` (..., 6): ``out[j] = a``."""
    out[j, 0] = a[0]
    out[j, 1] = a[1]
    out[j, 2] = a[2]
    out[j, 3] = a[3]
    out[j, 4] = a[4]
    out[j, 5] = a[5]


# ---------------------------------------------------------------- copy terms
#: Columns of the copies' sums (:func:`uqx.engine.copies.sim_rows`,
#: :func:`uqx.engine.copies.copy_bin_features`): Σε², Σx²,
#: Σx, Σε with x = E = uε; the positions of the tuple :func:`copy_terms` returns.
C_EPS2, C_X2, C_X, C_EPS = range(4)


@numba.njit(inline="always")
def copy_terms(eps, u):
    """Return what one value ε of a copy adds to its sums: (ε², x², x, ε), x = uε.

    Parameters
    ----------
    eps : float
        The unit draw ε.
    u : float
        The uncertainty of its position.

    Returns
    -------
    tuple of 4
        Indexed by :data:`C_EPS2`, :data:`C_X2`, :data:`C_X`, :data:`C_EPS`.
    """
    x = u * eps
    return eps * eps, x * x, x, eps


@numba.njit(inline="always")
def no_copy_terms():
    """Return the 4 sums of no value: the accumulators' start."""
    return 0.0, 0.0, 0.0, 0.0


@numba.njit(inline="always")
def add_copy_terms(a, t):
    """Return the sums ``a`` plus the terms ``t`` (4-tuples), column by column."""
    return a[0] + t[0], a[1] + t[1], a[2] + t[2], a[3] + t[3]


@numba.njit(inline="always")
def put_copy_terms(out, r, s, t):
    """Write the 4-tuple ``t`` into ``out[r, s]`` (no view: a view per value is slow)."""
    out[r, s, 0] = t[0]
    out[r, s, 1] = t[1]
    out[r, s, 2] = t[2]
    out[r, s, 3] = t[3]


@numba.njit(inline="always")
def add_copy_terms_at(out, r, b, t):
    """Add the 4-tuple ``t`` to ``out[r, b]`` (no view: a view per value is slow)."""
    out[r, b, 0] += t[0]
    out[r, b, 1] += t[1]
    out[r, b, 2] += t[2]
    out[r, b, 3] += t[3]
