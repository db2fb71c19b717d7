r"""Unit-variance draws of the generative distributions D of the simulated references.

ε ~ D(0, 1) with D = N(0, 1), the unit-variance Student :math:`t_s(\nu)`, or the data's
own z-scores resampled (``"data"``), on the keyed xoshiro256** streams of
:mod:`uqx.engine.generators`: :func:`draw_unit` (arrays), :func:`unit_args` and the numba
step :func:`unit_step` (inside the simulation kernels), :func:`unit_quantile` (the
quantiles :math:`q_D`). Methods page: simulated references.
"""

from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple

import numba
import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from uqx.engine.generators import check_student_nu, normal_step, stream_state, t_step
from uqx.engine.generators import t_params as _t_params
from uqx.engine.null_shape import StandardisedPool
from uqx.engine.resample import lemire_pair, lemire_threshold
from uqx.errors import InputError

__all__ = ["draw_unit", "unit_args", "unit_quantile", "unit_step", "pool_index", "Draw",
           "UnitArgs"]


class Draw(IntEnum):
    """How the kernels draw ε: the member of the null family and where its values come from.

    :func:`unit_step` draws NORMAL, STUDENT, POOL, POOL_COMPUTED and
    POOL_COMPUTED_IN_WINDOWS; :func:`uqx.engine.copies.sim_rows` also draws each segment
    of the uE order from its own window (POOL_IN_WINDOWS, POOL_COMPUTED_IN_WINDOWS) or at
    its own ν (STUDENT_PER_SEGMENT).
    """

    #: N(0, 1) (ziggurat, :func:`uqx.engine.generators.normal_step`).
    NORMAL = 0
    #: The unit-variance :math:`t_s(\nu)` (:func:`uqx.engine.generators.t_step`).
    STUDENT = 1
    #: A stored pool of values resampled with replacement (Lemire indices).
    POOL = 2
    #: A stored pool in the uE order, each segment resampled within its window.
    POOL_IN_WINDOWS = 3
    #: The data's standardised z-scores computed from E and uE when drawn
    #: (:class:`uqx.engine.null_shape.StandardisedPool`).
    POOL_COMPUTED = 4
    #: The same, each segment from its own window, with that window's centre and scale.
    POOL_COMPUTED_IN_WINDOWS = 5
    #: :math:`t_s(\nu_s)` with one ν per segment (the fitted member per window of uE).
    STUDENT_PER_SEGMENT = 6


class UnitArgs(NamedTuple):
    """The arguments of the drawing kernels for one stream and member (:func:`unit_args`).

    Attributes
    ----------
    state : numpy.ndarray of uint64, shape (4,)
        The xoshiro256** state, advanced in place by the kernels.
    code : int
        A :class:`Draw`.
    d, c, h : float
        :func:`uqx.engine.generators.t_params` of STUDENT.
    pool, pool_u, pool_m, pool_s : numpy.ndarray
        The pool (or E), its uE, the centres and the scales of the computed pools
        (dummies where unused).
    segment_t : numpy.ndarray, shape (S, 3)
        ``t_params`` of each segment's ν for STUDENT_PER_SEGMENT (empty otherwise).
    """

    state: np.ndarray
    code: int
    d: float
    c: float
    h: float
    pool: np.ndarray
    pool_u: np.ndarray
    pool_m: np.ndarray
    pool_s: np.ndarray
    segment_t: np.ndarray


def draw_unit(source, size, *, dist="normal", nu=None, pool=None):
    r"""Draw from a unit-variance generative distribution D (000 Sect. II D 2).

    ``"normal"``: N(0, 1); ``"t"``: :math:`t_s(\nu) = t(\nu)/\sqrt{\nu/(\nu-2)}`, ν > 2
    (``nu = inf``: the normal); ``"data"``: values of ``pool`` (the data's z-scores at
    unit mean square, :func:`uqx.engine.null_shape.standardised_z`) drawn with replacement
    (a :class:`~uqx.engine.null_shape.StandardisedPool` gives the same draws, each value
    computed from E and uE when drawn).

    Parameters
    ----------
    source : numpy.random.SeedSequence, numpy.ndarray or numpy.random.Generator
        A keyed stream (a SeedSequence, or a uint64[4] state from
        :func:`uqx.engine.generators.stream_state`, advanced in place): the xoshiro256**
        generators of :mod:`uqx.engine.generators` (ziggurat normal, Marsaglia–Tsang
        :math:`t_s`, Lemire bounded integers for ``"data"``), the draws of the simulated
        references and extrapolation nulls. The rows (last axis) are drawn one after the
        other, each starting on a fresh output (``"data"``: a spare low half at the end
        of a row is dropped), so ``draw_unit(st, (2, M))`` equals two calls
        ``draw_unit(st, M)``: the bits never depend on how the rows are batched. A NumPy
        ``Generator`` gives NumPy's own variates (``standard_normal``, ``standard_t``,
        ``integers``).
    size : int or tuple of int
    dist : {"normal", "t", "data"}
    nu : float, optional
        Degrees of freedom of ``"t"`` (> 2; ``inf``: the normal).
    pool : array_like or StandardisedPool, optional
        The values resampled by ``"data"`` (at most 2**32 of them).

    Returns
    -------
    numpy.ndarray
        float64 of shape ``size``.
    """
    if isinstance(source, np.random.Generator):
        _check_unit(dist, nu, pool)
        return _draw_numpy(source, size, dist, nu, pool)
    a = unit_args(source, dist, nu, pool)
    shape = (int(size),) if np.ndim(size) == 0 else tuple(int(k) for k in size)
    out = np.empty(shape, dtype=np.float64)
    if out.size:
        _unit_rows(a.state, a.code, a.d, a.c, a.h, a.pool, a.pool_u, a.pool_m, a.pool_s,
                   out.reshape(-1, shape[-1]))
    return out


def _check_unit(dist, nu, pool):
    if dist == "data":
        if pool is None or (len(pool) if isinstance(pool, StandardisedPool)
                            else np.size(pool)) == 0:
            raise InputError("dist 'data' needs the pool of the data's z-scores")
    elif dist == "t":
        check_student_nu(nu)
    elif dist != "normal":
        raise InputError(f"unknown generative distribution {dist!r} (normal, t, data)")


def unit_args(source, dist="normal", nu=None, pool=None, windows=None):
    r"""Arguments of :func:`unit_step` for a keyed stream and a generative distribution.

    Checks ``dist``/``nu``/``pool`` as :func:`draw_unit` and returns :class:`UnitArgs`:
    the uint64[4] stream state (``source`` itself when it is one), the :class:`Draw`,
    :func:`uqx.engine.generators.t_params`, the pool as a contiguous float64 array (a
    dummy of one value when unused), the three arrays of a pool computed on the fly
    (POOL_COMPUTED and POOL_COMPUTED_IN_WINDOWS: the uncertainties and the centres and
    scales; dummies otherwise) and the ``t_params`` of each segment
    (STUDENT_PER_SEGMENT).

    Parameters
    ----------
    source : numpy.random.SeedSequence, numpy.random.Generator or numpy.ndarray
        A keyed seed sequence, a generator, or a uint64[4] stream state.
    dist : {"normal", "t", "data"}, default "normal"
        Generative distribution D.
    nu : float or array_like, optional
        Degrees of freedom of :math:`t_s(\nu)` when ``dist="t"``; one per segment of
        :func:`uqx.engine.copies.sim_rows` (STUDENT_PER_SEGMENT: segment s draws
        :math:`t_s(\nu_s)`, its constants ``t_params(nu[s])`` in ``segment_t[s]``).
    pool : array_like or StandardisedPool, optional
        The values resampled by ``dist="data"``: an array (POOL), or a
        :class:`~uqx.engine.null_shape.StandardisedPool` of the whole set (POOL_COMPUTED:
        E as ``pool``, uE as ``pool_u``, its centre and scale; a local one is
        materialised here unless ``windows`` is given).
    windows : numpy.ndarray of int64, shape (S, 2), optional
        The window of every segment of :func:`uqx.engine.copies.sim_rows`: the pool is
        resampled within windows (POOL_IN_WINDOWS for an array in the uE order;
        POOL_COMPUTED_IN_WINDOWS for a local StandardisedPool, ``pool_m``/``pool_s`` then
        one per segment).
    """
    _check_unit(dist, nu, pool)
    if isinstance(source, np.random.SeedSequence):
        state = stream_state(source)
    elif (isinstance(source, np.ndarray) and source.dtype == np.uint64
          and source.shape == (4,)):
        state = source
    else:
        raise InputError("source must be a numpy Generator, a SeedSequence or a uint64[4] "
                         "stream state (uqx.engine.generators.stream_state)")
    if dist == "t" and np.ndim(nu) > 0:  # one ν per segment (sim_rows only)
        par = np.array([_t_params(float(v)) for v in np.asarray(nu, dtype=np.float64)])
        d, c, h = (float(v) for v in par[0])
        arr = _pool_array(None)
        return UnitArgs(state, int(Draw.STUDENT_PER_SEGMENT), d, c, h, arr, arr, _NO_SHIFT,
                        _NO_SCALE, np.ascontiguousarray(par))
    if dist == "t":
        code, (d, c, h) = Draw.STUDENT, _t_params(float(nu))
    else:
        code, d, c, h = (Draw.POOL if dist == "data" else Draw.NORMAL), 1.0, 0.0, 1.0
    if dist != "data":
        arr = _pool_array(None)
        return UnitArgs(state, int(code), d, c, h, arr, arr, _NO_SHIFT, _NO_SCALE, _NO_NU)
    if isinstance(pool, StandardisedPool):
        if pool.size > 2**32:
            raise InputError("dist 'data': at most 2**32 values to resample")
        if not pool.local:
            return UnitArgs(state, int(Draw.POOL_COMPUTED), d, c, h, pool.E, pool.uE,
                            pool.m[:1], pool.s[:1], _NO_NU)
        if windows is not None:
            pm, ps = pool.segment_params(windows)
            return UnitArgs(state, int(Draw.POOL_COMPUTED_IN_WINDOWS), d, c, h, pool.E,
                            pool.uE, pm, ps, _NO_NU)
        pool = pool.values()  # a local pool drawn as one: its values
    arr = _pool_array(pool)
    code = Draw.POOL_IN_WINDOWS if windows is not None else Draw.POOL
    return UnitArgs(state, int(code), d, c, h, arr, arr, _NO_SHIFT, _NO_SCALE, _NO_NU)


#: Dummy centre and scale of the pools that are not computed on the fly.
_NO_SHIFT = np.zeros(1)
_NO_SCALE = np.ones(1)
#: No ν per segment (every draw but STUDENT_PER_SEGMENT).
_NO_NU = np.zeros((0, 3))


def _draw_numpy(rng, size, dist, nu, pool):
    """NumPy ``Generator`` route of :func:`draw_unit` (arguments already checked)."""
    if dist == "data":
        if isinstance(pool, StandardisedPool):
            pool = pool.values()
        return np.asarray(pool)[rng.integers(0, np.size(pool), size)]
    if dist == "normal" or np.isinf(nu):  # the limit of t_s(nu): the normal
        return rng.standard_normal(size)
    return rng.standard_t(nu, size) / np.sqrt(nu / (nu - 2.0))


def _pool_array(pool):
    if pool is None:
        return np.zeros(1)
    pool = np.ascontiguousarray(pool, dtype=np.float64).ravel()
    if pool.size > 2**32:
        raise InputError("dist 'data': at most 2**32 values to resample")
    return pool


def unit_quantile(p, *, dist="normal", nu=None):
    r"""Quantile of a unit-variance generative distribution D (methods: simulated references).

    ``dist="normal"``: :math:`\Phi^{-1}(p)`; ``dist="t"``: unit-variance Student
    :math:`t_s(\nu) = t(\nu)/\sqrt{\nu/(\nu-2)}`, requires :math:`\nu > 2`.

    Parameters
    ----------
    p : array_like
        Probabilities.
    dist : {"normal", "t"}, default "normal"
        Generative distribution D.
    nu : float, optional
        Degrees of freedom of :math:`t_s(\nu)` (> 2) when ``dist="t"``.

    Returns
    -------
    numpy.ndarray
        The quantiles.
    """
    p = np.asarray(p, dtype=np.float64)
    if dist == "normal":
        return norm.ppf(p)
    if dist == "t":
        check_student_nu(nu)
        return student_t.ppf(p, nu) / np.sqrt(nu / (nu - 2.0))
    raise InputError(f"dist must be 'normal' or 't', got {dist!r}")


@numba.njit(inline="always")
def _pool_value(code, pool, pu, pm, ps, j):  # pragma: no cover - numba
    """Value j of a pool: stored (POOL) or computed from E and uE (POOL_COMPUTED...)."""
    if code == Draw.POOL:
        return pool[j]
    # a constant window (standardised_z_local: zeros)
    if code == Draw.POOL_COMPUTED_IN_WINDOWS and not ps > 0:
        return 0.0
    return (pool[j] / pu[j] - pm) / ps


@numba.njit(inline="always")
def pool_index(s0, s1, s2, s3, n, th, pend, have):  # pragma: no cover - numba
    """Draw the index j in [0, n) of the next value of a pool (:func:`unit_step` 2, 4, 5).

    Lemire's method on the two 32-bit halves of an output, the high half first; an
    accepted low half is kept in ``(pend, have)`` for the next draw. Returns
    ``(j, s0, s1, s2, s3, pend, have)``.
    """
    if have:
        return pend, s0, s1, s2, s3, pend, False
    while True:
        j1, ok1, j2, ok2, s0, s1, s2, s3 = lemire_pair(s0, s1, s2, s3, n, th)
        if ok1:
            return j1, s0, s1, s2, s3, j2, ok2
        if ok2:
            return j2, s0, s1, s2, s3, j2, False


@numba.njit(inline="always")
def unit_step(code, s0, s1, s2, s3, d, c, h, pool, pu, pm, ps, n, th, pend, have):
    r"""One unit draw ε of member ``code`` on the stream (s0..s3), in registers (numba).

    For kernels that simulate calibrated copies without storing ε: arguments from
    :func:`unit_args` (``n = pool.size``, ``th = (2**32 - n) % n`` as
    :func:`uqx.engine.resample.lemire_threshold`; ``pm``, ``ps`` scalars: element 0 of
    its ``pool_m``, ``pool_s``, or a segment's for POOL_COMPUTED_IN_WINDOWS),
    ``pend, have = 0, False`` at the start of each copy; ``code`` a :class:`Draw`.
    NORMAL: N(0, 1) (ziggurat :func:`uqx.engine.generators.normal_step`); STUDENT:
    unit-variance :math:`t_s(\nu)` (:func:`uqx.engine.generators.t_step`,
    ``(d, c, h) = t_params(nu)``); POOL: ``pool[j]`` with ``j`` uniform in [0, n) by
    Lemire's method on the two 32-bit halves of an output (:func:`pool_index`,
    :func:`uqx.engine.resample.lemire_pair`): the high half first, an accepted low half
    kept in ``(pend, have)`` for the next draw (the caller drops it at the end of a row, as
    :func:`uqx.engine.resample.uniform_integers` does at the end of its draws);
    POOL_COMPUTED: the same ``j``, value ``(pool[j] / pu[j] - pm) / ps`` (the data's
    standardised z-scores computed from E = ``pool`` and uE = ``pu`` when drawn,
    :class:`uqx.engine.null_shape.StandardisedPool`: the bits of the stored pool);
    POOL_COMPUTED_IN_WINDOWS: as POOL_COMPUTED, but 0.0 when ``ps`` is not > 0 (a window
    standardised on its own, :func:`uqx.engine.null_shape.standardised_z_local`).

    Returns ``(eps, s0, s1, s2, s3, pend, have)``.
    """
    if code == Draw.POOL or code == Draw.POOL_COMPUTED or code == Draw.POOL_COMPUTED_IN_WINDOWS:
        j, s0, s1, s2, s3, pend, have = pool_index(s0, s1, s2, s3, n, th, pend, have)
        return _pool_value(code, pool, pu, pm, ps, j), s0, s1, s2, s3, pend, have
    if code == Draw.STUDENT:
        e, s0, s1, s2, s3 = t_step(s0, s1, s2, s3, d, c, h)
        return e, s0, s1, s2, s3, pend, have
    e, s0, s1, s2, s3 = normal_step(s0, s1, s2, s3)
    return e, s0, s1, s2, s3, pend, have


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _unit_rows(state, code, d, c, h, pool, pu, pm, ps, out):  # pragma: no cover - numba
    """Fill the rows of ``out`` (k, M) with unit draws, row after row on one stream."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    n = np.uint64(max(pool.shape[0], 1))
    th = lemire_threshold(n)
    m0, sc0 = pm[0], ps[0]
    for r in range(out.shape[0]):
        pend, have = np.uint64(0), False
        for i in range(out.shape[1]):
            out[r, i], s0, s1, s2, s3, pend, have = unit_step(
                code, s0, s1, s2, s3, d, c, h, pool, pu, m0, sc0, n, th, pend, have)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
