r"""Unit-variance draws of the generative distributions D of the simulated references.

ε ~ D(0, 1) with D = N(0, 1), the unit-variance Student :math:`t_s(\nu)`, or the data's
own z-scores resampled (``"data"``), on the keyed xoshiro256** streams of
:mod:`uqx.engine.generators`: :func:`draw_unit` (arrays), :func:`unit_args` and the numba
step :func:`unit_step` (inside the simulation kernels), :func:`unit_quantile` (the
quantiles :math:`q_D`). Methods page: simulated references.
"""

from __future__ import annotations

import numba
import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from uqx.engine.generators import check_student_nu, normal_step, stream_state, t_step
from uqx.engine.generators import t_params as _t_params
from uqx.engine.null_shape import StandardisedPool
from uqx.engine.resample import lemire_pair, lemire_threshold
from uqx.errors import InputError

__all__ = ["draw_unit", "unit_args", "unit_quantile", "unit_step", "pool_index"]


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
    state, code, d, c, h, pool_arr, pu, pm, ps = unit_args(source, dist, nu, pool)
    shape = (int(size),) if np.ndim(size) == 0 else tuple(int(k) for k in size)
    out = np.empty(shape, dtype=np.float64)
    if out.size:
        _unit_rows(state, code, d, c, h, pool_arr, pu, pm, ps, out.reshape(-1, shape[-1]))
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

    Checks ``dist``/``nu``/``pool`` as :func:`draw_unit` and returns
    ``(state, code, d, c, h, pool, pool_u, pool_m, pool_s)``: the uint64[4] stream state
    (``source`` itself when it is one), the member code, :func:`uqx.engine.generators.t_params`,
    the pool as a contiguous float64 array (a dummy of one value when unused) and the
    three arrays of a pool computed on the fly (:func:`unit_step` codes 4 and 5: the
    uncertainties and the centres and scales; dummies otherwise).

    Parameters
    ----------
    source : numpy.random.SeedSequence, numpy.random.Generator or numpy.ndarray
        A keyed seed sequence, a generator, or a uint64[4] stream state.
    dist : {"normal", "t", "data"}, default "normal"
        Generative distribution D.
    nu : float or array_like, optional
        Degrees of freedom of :math:`t_s(\nu)` when ``dist="t"``; one per segment of
        :func:`uqx.engine.copies.sim_rows` (code 6: segment s draws :math:`t_s(\nu_s)`,
        its constants ``t_params(nu[s])`` as ``pool_m``, ``pool_s``, ``pool_u``: d, c, h).
    pool : array_like or StandardisedPool, optional
        The values resampled by ``dist="data"``: an array (code 2), or a
        :class:`~uqx.engine.null_shape.StandardisedPool` of the whole set (code 4: E as
        ``pool``, uE as ``pool_u``, its centre and scale; a local one is materialised
        here unless ``windows`` is given).
    windows : numpy.ndarray of int64, shape (S, 2), optional
        The window of every segment of :func:`uqx.engine.copies.sim_rows`: the pool is
        resampled within windows (code 3 for an array in the uE order; code 5 for a
        local StandardisedPool, ``pool_m``/``pool_s`` then one per segment).
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
        cols = [np.ascontiguousarray(par[:, k]) for k in range(3)]
        return state, 6, d, c, h, _pool_array(None), cols[2], cols[0], cols[1]
    if dist == "t":
        code, (d, c, h) = 1, _t_params(float(nu))
    else:
        code, d, c, h = (2 if dist == "data" else 0), 1.0, 0.0, 1.0
    if dist != "data":
        arr = _pool_array(None)
        return state, code, d, c, h, arr, arr, _NO_SHIFT, _NO_SCALE
    if isinstance(pool, StandardisedPool):
        if pool.size > 2**32:
            raise InputError("dist 'data': at most 2**32 values to resample")
        if not pool.local:
            return state, 4, d, c, h, pool.E, pool.uE, pool.m[:1], pool.s[:1]
        if windows is not None:
            pm, ps = pool.segment_params(windows)
            return state, 5, d, c, h, pool.E, pool.uE, pm, ps
        pool = pool.values()  # a local pool drawn as one: its values
    arr = _pool_array(pool)
    return state, 3 if windows is not None else 2, d, c, h, arr, arr, _NO_SHIFT, _NO_SCALE


#: Dummy centre and scale of the pools that are not computed on the fly.
_NO_SHIFT = np.zeros(1)
_NO_SCALE = np.ones(1)


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
    """Value j of a pool: stored (code 2) or computed from E and uE (codes 4, 5)."""
    if code == 2:
        return pool[j]
    if code == 5 and not ps > 0:  # a constant window (standardised_z_local: zeros)
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
    its ``pool_m``, ``pool_s``, or a segment's for code 5), ``pend, have = 0, False`` at
    the start of each copy.
    ``0`` N(0, 1) (ziggurat :func:`uqx.engine.generators.normal_step`); ``1`` unit-variance
    :math:`t_s(\nu)` (:func:`uqx.engine.generators.t_step`, ``(d, c, h) = t_params(nu)``);
    ``2`` ``pool[j]`` with ``j`` uniform in [0, n) by Lemire's method on the two 32-bit
    halves of an output (:func:`pool_index`, :func:`uqx.engine.resample.lemire_pair`): the
    high half first, an accepted low half kept in ``(pend, have)`` for the next draw (the
    caller drops it at the end of a row, as :func:`uqx.engine.resample.uniform_integers`
    does at the end of its draws);
    ``4`` the same ``j``, value ``(pool[j] / pu[j] - pm) / ps`` (the data's standardised
    z-scores computed from E = ``pool`` and uE = ``pu`` when drawn,
    :class:`uqx.engine.null_shape.StandardisedPool`: the bits of the stored pool);
    ``5`` as 4, but 0.0 when ``ps`` is not > 0 (a window standardised on its own,
    :func:`uqx.engine.null_shape.standardised_z_local`).

    Returns ``(eps, s0, s1, s2, s3, pend, have)``.
    """
    if code == 2 or code == 4 or code == 5:
        j, s0, s1, s2, s3, pend, have = pool_index(s0, s1, s2, s3, n, th, pend, have)
        return _pool_value(code, pool, pu, pm, ps, j), s0, s1, s2, s3, pend, have
    if code == 1:
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
