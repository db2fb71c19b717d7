r"""Random variates in numba on the coordinate-keyed xoshiro256** streams of uqx.

Every generator here reads the stream of :mod:`uqx.engine.resample`: a 4-word uint64 state
seeded from a :class:`numpy.random.SeedSequence` keyed by coordinates
(:func:`uqx.engine.resample.seed_sequence`), stepped by xoshiro256** (Blackman & Vigna 2018,
:func:`uqx.engine.resample.xoshiro_next`). So simulated data, like bootstrap resamples, never depend
on chunking, scheduler or worker count, and no NumPy ``Generator`` is called from a
kernel (about 60 ns per call from numba; ~5-30 ns per variate from Python).

Distributions (each draw consumes whole 64-bit outputs and nothing is buffered between
draws, so a stream split over several calls gives the same bits as one call):

=============  ===================================================================  =========
name           algorithm                                                            outputs
=============  ===================================================================  =========
``uniform01``  :math:`U = (x \gg 11)\,2^{-53}` in [0, 1), 53-bit doubles            1
``normal``     ziggurat, 256 layers (Marsaglia & Tsang 2000), 53-bit signed         ~1.02
``gamma``      Marsaglia & Tsang (2000); ``shape < 1``: ``Gamma(a+1) U^(1/a)``      ~2.1 (+1)
``invgamma``   :math:`1/\Gamma(a)` (``scipy.stats.invgamma(a)``)                    ~2.1
``chisquare``  :math:`\chi^2_k = 2\,\Gamma(k/2)`                                    ~2.1
``t``          unit-variance Student :math:`t_s(\nu) = Z\sqrt{(\nu-2)/\chi^2_\nu}`  ~3.1
``laplace``    unit variance: :math:`\pm\,\mathrm{Exp}(1)/\sqrt 2`                  1
``uniform``    unit variance: :math:`U(-\sqrt3, \sqrt3)`                            1
=============  ===================================================================  =========

:math:`t_s(\nu) = t(\nu)\sqrt{(\nu-2)/\nu}` with :math:`t(\nu) = Z/\sqrt{\chi^2_\nu/\nu}`
(Z and the chi-square independent), so :math:`t_s = Z\sqrt{(\nu-2)/(2G)}` with
:math:`G \sim \Gamma(\nu/2)`; ``nu = inf`` gives N(0, 1).

Normal ziggurat (Marsaglia & Tsang 2000, "The ziggurat method for generating random
variables", J. Stat. Softw. 5(8)), with 256 layers of equal area ``v`` under
:math:`f(x) = e^{-x^2/2}` and 53-bit signed integers as in NumPy's generator: one
output ``x`` gives the layer ``i = x & 255`` and a signed integer
``j = (int64) x >> 11`` in :math:`[-2^{52}, 2^{52})`; ``z = j X_i 2^{-52}`` is accepted
at once when :math:`|j| < K_i = \lfloor 2^{52} X_{i+1}/X_i\rfloor` (98.5 %); otherwise the
wedge test :math:`f(X_i) + U (f(X_{i+1}) - f(X_i)) < f(z)` or, in the base layer, the
tail beyond ``r`` by Marsaglia's (1964) exponential method. The tables (``X``, ``f(X)``,
``K``) are computed at import from the layer recurrence
:math:`X_{i+1} = f^{-1}(v/X_i + f(X_i))`, ``X_1 = r``, with ``r`` solved by bisection so
that the top layer closes at ``f = 1`` (r = 3.6541528853610088 for 256 layers).
The tables and the rare branches use libm's ``exp``/``log`` (the ones Python's
:mod:`math` calls), so the bits are the same for every chunking, scheduler and worker
on one platform; another libm could differ by an ulp in a table entry or a rare draw.

Gamma (Marsaglia & Tsang 2000, "A simple method for generating gamma variables",
ACM TOMS 26(3)): :math:`d = a - 1/3`, :math:`c = 1/\sqrt{9d}`; repeat ``Z`` normal,
:math:`v = (1 + cZ)^3` (reject :math:`v \le 0`), ``U`` uniform in (0, 1]; accept
:math:`dv` if :math:`\ln U < Z^2/2 + d(1 - v + \ln v)`. Before the logarithms, a
squeeze tighter than the paper's :math:`U < 1 - 0.0331 Z^4` for :math:`d \ge 1/3`:
:math:`U < 1 - \tfrac34 d (cZ)^4 / \min(1 + cZ, 1)` (derivation in :func:`_mt_core`);
it accepts the same variates, and sends ~4 % (shape 1.5) to 1.5 % (shape 3) of draws to
the logarithms instead of ~8 % (gamma(1.5) 5.0 -> 3.9 ns per draw).

**Three forms.**

* Python: :func:`draw` (a SeedSequence: a fresh stream; or a state array from
  :func:`stream_state`, advanced in place) and :func:`fill` (fills an array).
* numba, state in an array: ``next_uniform(state)``, ``next_normal(state)``,
  ``next_gamma(state, shape)``, ``next_invgamma(state, shape)``,
  ``next_chisquare(state, k)``, ``next_t(state, nu)``, ``next_laplace(state)``,
  ``next_unit_uniform(state)`` return one variate and advance the 4-element uint64
  ``state`` in place.
* numba, state in registers (fastest in a hot loop): ``*_step(s0, s1, s2, s3, ...)``
  return ``(value, s0, s1, s2, s3)``; parameters are precomputed once by
  :func:`gamma_params` / :func:`t_params`.

The generators are ``inline="always"`` (numba IR inlining): the whole generator, its
rare branches included, lands in the caller's loop, so LLVM keeps the state in
registers even for ``next_*`` (a call left in the loop would make numba keep atomic
reference counts of the state array: ~10 ns per draw). The leaves (the stream step
:func:`_adv`, :func:`uniform_step`) are ordinary compiled functions that LLVM inlines:
this keeps numba's inlining tree, hence compile time, small (a kernel with ``next_t``
compiles in ~0.7 s).

How a kernel calls it (e.g. simulate ``E = uE * eps`` and sum per bin in one pass,
without materialising ``eps``)::

    from uqx.engine.generators import normal_step, stream_state

    @numba.njit(nogil=True, cache=True)
    def _sim_bin_sums(state, uE, bin_of, out):
        s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
        for i in range(uE.shape[0]):
            eps, s0, s1, s2, s3 = normal_step(s0, s1, s2, s3)
            out[bin_of[i]] += (uE[i] * eps) ** 2
        state[0], state[1], state[2], state[3] = s0, s1, s2, s3

    state = stream_state(seed_sequence(seed, key, block))   # one keyed stream
    _sim_bin_sums(state, uE, bin_of, out)                   # may be called again: continues

Divisions in these functions are written ``np.divide`` (NumPy semantics): Python's ``/``
adds a ZeroDivisionError branch, and a possible raise in the loop also keeps numba from
pruning the reference counts of the state array. A consumer kernel that divides may
want ``error_model="numpy"`` for the same reason.

For Student t: ``p = t_params(nu)`` outside the loop, ``t_step(s0, s1, s2, s3, p[0],
p[1], p[2])`` inside (or ``next_t(state, nu)`` where a few ns per draw do not matter).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from uqx.engine.resample import xoshiro_next, xoshiro_state
from uqx.errors import InputError

__all__ = [
    "DISTRIBUTIONS",
    "check_student_nu",
    "stream_state",
    "draw",
    "fill",
    "gamma_params",
    "t_params",
    "uniform_step",
    "normal_step",
    "gamma_step",
    "t_step",
    "laplace_step",
    "unit_uniform_step",
    "next_uniform",
    "next_normal",
    "next_gamma",
    "next_invgamma",
    "next_chisquare",
    "next_t",
    "next_laplace",
    "next_unit_uniform",
]

#: Names accepted by :func:`draw` / :func:`fill`.
DISTRIBUTIONS = ("uniform01", "normal", "gamma", "invgamma", "chisquare", "t", "laplace",
                 "uniform")

_TWO_M53 = 2.0**-53
_TWO_M52 = 2.0**-52
_SQRT3 = math.sqrt(3.0)
_INV_SQRT2 = 1.0 / math.sqrt(2.0)


@numba.njit(cache=True)
def _adv(s0, s1, s2, s3):
    """One step of the stream (:func:`uqx.engine.resample.xoshiro_next`), as an LLVM-level call.

    Compiled once; LLVM inlines it into every generator. Calling it instead of the
    IR-inlined ``xoshiro_next`` keeps numba's inlining tree (and compile time) small.
    """
    return xoshiro_next(s0, s1, s2, s3)


# --------------------------------------------------------------- ziggurat tables
def _zig_layers(r: float, n: int) -> tuple[float, list[float]]:
    """Area ``v`` and edges ``X_1 = r, ..., X_{n-1}`` of the ziggurat with base edge ``r``.

    Returns the edges until the recurrence leaves (0, r] (``f`` reaches 1 early).
    """
    v = r * math.exp(-0.5 * r * r) + math.sqrt(0.5 * math.pi) * math.erfc(r / math.sqrt(2.0))
    xs = [r]
    for _ in range(n - 2):
        y = v / xs[-1] + math.exp(-0.5 * xs[-1] * xs[-1])
        if y >= 1.0:
            break
        xs.append(math.sqrt(-2.0 * math.log(y)))
    return v, xs


def _zig_solve_r(n: int = 256) -> float:
    """Solve for the base edge ``r`` of the n-layer ziggurat (top layer closes at ``f = 1``).

    ``g(r) = v/X_{n-1} + f(X_{n-1}) - 1`` decreases with ``r`` (a larger base shrinks
    ``v``); bisection to the last bit.
    """
    lo, hi = 2.0, 5.0

    def g(r):
        v, xs = _zig_layers(r, n)
        if len(xs) < n - 1:  # the layers reached the top too early: r too small
            return 1.0
        return v / xs[-1] + math.exp(-0.5 * xs[-1] * xs[-1]) - 1.0

    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if g(mid) > 0.0:
            lo = mid
        else:
            hi = mid
    return hi


def _zig_tables(r: float, n: int = 256):
    """Ziggurat tables of the normal: ``X`` (n+1), ``F = f(X)`` (n+1), ``K`` (n), ``W`` (n).

    ``X_0 = v/f(r)`` (width of the base strip, tail included by area), ``X_1 = r``,
    ``X_n = 0``; ``K_i = floor(2^52 X_{i+1}/X_i)``, ``W_i = X_i 2^-52``.
    """
    v, xs = _zig_layers(r, n)
    X = np.empty(n + 1)
    X[0] = v / math.exp(-0.5 * r * r)
    X[1 : len(xs) + 1] = xs
    X[len(xs) + 1 :] = 0.0
    F = np.array([math.exp(-0.5 * x * x) for x in X])  # libm exp, as in the kernels
    K = np.floor(2.0**52 * (X[1:] / X[:-1])).astype(np.int64)
    W = X[:-1] * _TWO_M52
    return v, X, F, K, W


_ZIG_N = 256
_ZIG_R = _zig_solve_r(_ZIG_N)
_ZIG_V, _ZIG_X, _ZIG_F, _ZIG_K, _ZIG_W = _zig_tables(_ZIG_R, _ZIG_N)
_ZIG_INV_R = 1.0 / _ZIG_R


# ------------------------------------------------------- state-in-registers forms
@numba.njit(cache=True)
def _u01(x):
    return np.float64(np.int64(x >> np.uint64(11))) * _TWO_M53


@numba.njit(cache=True)
def uniform_step(s0, s1, s2, s3):
    """Uniform double in [0, 1): ``(x >> 11) * 2**-53`` of the next output.

    Returns ``(u, s0, s1, s2, s3)``: the 53 high bits of one xoshiro256** output, the
    standard conversion of Blackman & Vigna (2018).
    """
    x, s0, s1, s2, s3 = _adv(s0, s1, s2, s3)
    return _u01(x), s0, s1, s2, s3


@numba.njit(cache=True)
def _open01(s0, s1, s2, s3):
    """Uniform in (0, 1]: ``1 - U`` (safe under ``log``)."""
    x, s0, s1, s2, s3 = _adv(s0, s1, s2, s3)
    return 1.0 - _u01(x), s0, s1, s2, s3


@numba.njit(inline="always")
def _normal_rare(i, j, z, s0, s1, s2, s3):
    """Slow branch of the ziggurat: wedge test (layer i >= 1) or the tail (layer 0).

    Returns ``(accepted, z, s0, s1, s2, s3)``; on rejection the caller draws afresh.
    """
    if i == 0:
        # tail beyond r (Marsaglia 1964): x = -ln(U1)/r, y = -ln(U2) until 2y > x^2
        while True:
            u1, s0, s1, s2, s3 = _open01(s0, s1, s2, s3)
            u2, s0, s1, s2, s3 = _open01(s0, s1, s2, s3)
            xt = -math.log(u1) * _ZIG_INV_R
            yt = -math.log(u2)
            if yt + yt > xt * xt:
                break
        zt = _ZIG_R + xt
        return True, (-zt if j < 0 else zt), s0, s1, s2, s3
    u, s0, s1, s2, s3 = uniform_step(s0, s1, s2, s3)
    f0 = _ZIG_F[i]
    ok = f0 + u * (_ZIG_F[i + 1] - f0) < math.exp(-0.5 * z * z)
    return ok, z, s0, s1, s2, s3


@numba.njit(inline="always")
def normal_step(s0, s1, s2, s3):
    """Draw a standard normal variate by the 256-layer ziggurat (Marsaglia & Tsang 2000).

    One output ``x``: layer ``i = x & 255``, signed ``j = int64(x) >> 11``,
    ``z = j X_i 2^-52``; accepted when ``|j| < K_i``, else the wedge/tail branch
    (:func:`_normal_rare`, ~1.5 % of draws). Returns ``(z, s0, s1, s2, s3)``.
    """
    while True:
        x, s0, s1, s2, s3 = _adv(s0, s1, s2, s3)
        i = np.intp(x & np.uint64(0xFF))
        j = np.int64(x) >> np.int64(11)
        z = np.float64(j) * _ZIG_W[i]
        if abs(j) < _ZIG_K[i]:
            return z, s0, s1, s2, s3
        ok, z, s0, s1, s2, s3 = _normal_rare(i, j, z, s0, s1, s2, s3)
        if ok:
            return z, s0, s1, s2, s3


@numba.njit(inline="always")
def gamma_params(shape):
    r"""Constants ``(d, c, inv_a)`` of the Marsaglia–Tsang gamma sampler for ``shape``.

    ``a = shape`` if ``shape >= 1`` else ``shape + 1`` (boost); :math:`d = a - 1/3`,
    :math:`c = 1/\sqrt{9d}`; ``inv_a = 1/shape`` when boosted, else 0.
    """
    if shape >= 1.0:
        d = shape - 1.0 / 3.0
        inv_a = 0.0
    else:
        d = shape + 1.0 - 1.0 / 3.0
        inv_a = np.divide(1.0, shape)
    return d, np.divide(1.0, math.sqrt(9.0 * d)), inv_a


@numba.njit(inline="always")
def _mt_core(s0, s1, s2, s3, d, c):
    """Marsaglia–Tsang loop: returns ``(v, s0..s3)``, the gamma(d + 1/3) variate being ``d v``.

    Squeeze: with ``w = 1 + cZ`` and ``tau = |w - 1|``, the exponent of the exact test
    is ``d phi(w)``, ``phi(w) = 4.5 tau^2 + 1 - w^3 + 3 ln w = -3 sum_{k>=4} (1-w)^k/k``
    (series of ``ln w``), so ``phi >= -0.75 tau^4 / min(w, 1)`` and, as
    ``e^y >= 1 + y``, ``U < 1 - 0.75 d tau^4 / min(w, 1)`` accepts without a logarithm
    (~4 % of draws reach the logarithms at shape 1.5, 1.5 % at 3, most of them true
    rejections, against ~8 % with the paper's ``1 - 0.0331 Z^4``; the accepted set is
    the same).
    """
    e = 0.75 * d * (c * c) * (c * c)
    while True:
        z, s0, s1, s2, s3 = normal_step(s0, s1, s2, s3)
        w = 1.0 + c * z
        if w <= 0.0:
            continue
        v = w * w * w
        u, s0, s1, s2, s3 = _open01(s0, s1, s2, s3)
        z2 = z * z
        m = min(w, 1.0)
        if u * m < m - e * (z2 * z2):
            return v, s0, s1, s2, s3
        if math.log(u) < 0.5 * z2 + d * (1.0 - v + math.log(v)):
            return v, s0, s1, s2, s3


@numba.njit(inline="always")
def gamma_step(s0, s1, s2, s3, d, c, inv_a):
    r"""Gamma(shape, scale 1) variate; ``(d, c, inv_a) = gamma_params(shape)``.

    Marsaglia & Tsang (2000); for ``shape < 1``, :math:`\Gamma(a) = \Gamma(a+1) U^{1/a}`
    with ``U`` in (0, 1]. Returns ``(g, s0, s1, s2, s3)``.
    """
    v, s0, s1, s2, s3 = _mt_core(s0, s1, s2, s3, d, c)
    g = d * v
    if inv_a > 0.0:
        u, s0, s1, s2, s3 = _open01(s0, s1, s2, s3)
        g *= math.exp(math.log(u) * inv_a)
    return g, s0, s1, s2, s3


@numba.njit(inline="always")
def t_params(nu):
    r"""Constants ``(d, c, h)`` of the unit-variance Student sampler for ``nu > 2``.

    :math:`t_s = Z\sqrt{(\nu-2)/(2G)}`, :math:`G = d v \sim \Gamma(\nu/2)`, so
    :math:`t_s = Z\sqrt{h/v}` with :math:`h = (\nu-2)/(2d)`, :math:`d = \nu/2 - 1/3`,
    :math:`c = 1/\sqrt{9d}` (:math:`\nu/2 > 1`: no boost). ``nu = inf``: ``c = 0``
    flags the normal limit.
    """
    if math.isinf(nu):
        return 1.0, 0.0, 1.0
    d = 0.5 * nu - 1.0 / 3.0
    return d, np.divide(1.0, math.sqrt(9.0 * d)), np.divide(nu - 2.0, 2.0 * d)


@numba.njit(inline="always")
def t_step(s0, s1, s2, s3, d, c, h):
    r"""Unit-variance Student :math:`t_s(\nu)` variate; ``(d, c, h) = t_params(nu)``.

    A normal ``Z`` then :math:`G \sim \Gamma(\nu/2)` (Marsaglia–Tsang),
    :math:`t_s = Z\sqrt{(\nu-2)/(2G)} = Z\sqrt{h/v}`. Returns ``(t, s0, s1, s2, s3)``.
    """
    z, s0, s1, s2, s3 = normal_step(s0, s1, s2, s3)
    if c == 0.0:
        return z, s0, s1, s2, s3
    v, s0, s1, s2, s3 = _mt_core(s0, s1, s2, s3, d, c)
    return z * math.sqrt(np.divide(h, v)), s0, s1, s2, s3


@numba.njit(inline="always")
def laplace_step(s0, s1, s2, s3):
    r"""Unit-variance Laplace variate :math:`\pm E/\sqrt2`, :math:`E = -\ln(1 - U)`.

    One output: the sign from bit 0, ``U`` from the 53 high bits (Laplace with scale
    :math:`b = 1/\sqrt2`, variance :math:`2b^2 = 1`). Returns ``(y, s0, s1, s2, s3)``.
    """
    x, s0, s1, s2, s3 = _adv(s0, s1, s2, s3)
    e = -math.log(1.0 - _u01(x)) * _INV_SQRT2
    if x & np.uint64(1):
        e = -e
    return e, s0, s1, s2, s3


@numba.njit(inline="always")
def unit_uniform_step(s0, s1, s2, s3):
    r"""Unit-variance uniform variate on :math:`(-\sqrt3, \sqrt3)`.

    ``j = int64(x) >> 11`` in :math:`[-2^{52}, 2^{52})`, :math:`\sqrt3 (j + 1/2) 2^{-52}`
    (symmetric about 0). Returns ``(y, s0, s1, s2, s3)``.
    """
    x, s0, s1, s2, s3 = _adv(s0, s1, s2, s3)
    j = np.int64(x) >> np.int64(11)
    return (np.float64(j) + 0.5) * (_SQRT3 * _TWO_M52), s0, s1, s2, s3


# ------------------------------------------------------------ state-in-array forms
@numba.njit(inline="always")
def next_uniform(state):
    """Uniform in [0, 1) (53 bits); advances the uint64[4] ``state`` in place."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    y, s0, s1, s2, s3 = uniform_step(s0, s1, s2, s3)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return y


@numba.njit(inline="always")
def next_normal(state):
    """Draw a standard normal (ziggurat, :func:`normal_step`); advances ``state`` in place."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    y, s0, s1, s2, s3 = normal_step(s0, s1, s2, s3)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return y


@numba.njit(inline="always")
def next_gamma(state, shape):
    """Gamma(shape, scale 1) (Marsaglia–Tsang, :func:`gamma_step`); advances ``state``."""
    d, c, inv_a = gamma_params(shape)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    y, s0, s1, s2, s3 = gamma_step(s0, s1, s2, s3, d, c, inv_a)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return y


@numba.njit(inline="always")
def next_invgamma(state, shape):
    """Inverse gamma ``1/Gamma(shape)`` (``scipy.stats.invgamma(shape)``); advances ``state``."""
    return np.divide(1.0, next_gamma(state, shape))


@numba.njit(inline="always")
def next_chisquare(state, k):
    r"""Chi-square with ``k`` degrees of freedom, :math:`2\,\Gamma(k/2)`; advances ``state``."""
    return 2.0 * next_gamma(state, 0.5 * k)


@numba.njit(inline="always")
def next_t(state, nu):
    r"""Unit-variance Student :math:`t_s(\nu)`, ``nu > 2`` (:func:`t_step`); advances ``state``."""
    d, c, h = t_params(nu)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    y, s0, s1, s2, s3 = t_step(s0, s1, s2, s3, d, c, h)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return y


@numba.njit(inline="always")
def next_laplace(state):
    """Unit-variance Laplace (:func:`laplace_step`); advances ``state`` in place."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    y, s0, s1, s2, s3 = laplace_step(s0, s1, s2, s3)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return y


@numba.njit(inline="always")
def next_unit_uniform(state):
    r"""Unit-variance uniform on :math:`(-\sqrt3, \sqrt3)`; advances ``state`` in place."""
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    y, s0, s1, s2, s3 = unit_uniform_step(s0, s1, s2, s3)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return y


# ------------------------------------------------------------------ fill kernels
_CODES = {name: k for k, name in enumerate(DISTRIBUTIONS)}


@numba.njit(nogil=True, cache=True)
def _fill(state, code, p, out):
    """Write ``out.shape[0]`` variates of distribution ``code`` (index in DISTRIBUTIONS).

    ``p`` is the shape (gamma, invgamma), degrees of freedom (chisquare) or ``nu`` (t).
    The state is loaded into registers, stepped, and stored back: a later call continues
    the stream.
    """
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    n = out.shape[0]
    if code == 0:
        for k in range(n):
            out[k], s0, s1, s2, s3 = uniform_step(s0, s1, s2, s3)
    elif code == 1:
        for k in range(n):
            out[k], s0, s1, s2, s3 = normal_step(s0, s1, s2, s3)
    elif code == 2 or code == 3 or code == 4:
        shape = 0.5 * p if code == 4 else p
        d, c, inv_a = gamma_params(shape)
        for k in range(n):
            g, s0, s1, s2, s3 = gamma_step(s0, s1, s2, s3, d, c, inv_a)
            if code == 2:
                out[k] = g
            elif code == 3:
                out[k] = np.divide(1.0, g)
            else:
                out[k] = 2.0 * g
    elif code == 5:
        d, c, h = t_params(p)
        for k in range(n):
            out[k], s0, s1, s2, s3 = t_step(s0, s1, s2, s3, d, c, h)
    elif code == 6:
        for k in range(n):
            out[k], s0, s1, s2, s3 = laplace_step(s0, s1, s2, s3)
    else:
        for k in range(n):
            out[k], s0, s1, s2, s3 = unit_uniform_step(s0, s1, s2, s3)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


# ------------------------------------------------------------------ Python API
def stream_state(ss: np.random.SeedSequence) -> np.ndarray:
    """Return the xoshiro256** state (uint64[4]) of the keyed stream ``ss``.

    The same seeding as the resampling streams (:func:`uqx.engine.resample.uniform_integers`):
    ``ss.generate_state(4, uint64)``, the all-zero state replaced.
    """
    return xoshiro_state(ss)


def check_student_nu(nu, what: str = "unit-variance Student t") -> None:
    r"""Refuse a degrees of freedom ``nu`` (scalar or array) that is not > 2.

    The unit-variance Student :math:`t_s(\nu) = t(\nu)/\sqrt{\nu/(\nu-2)}` has a finite
    variance only for :math:`\nu > 2`; the one check of it, shared by the generators, the
    quantiles and the simulated references.

    Raises
    ------
    InputError
        ``"unit-variance Student t needs nu > 2, got …"``.
    """
    try:
        ok = nu is not None and bool(np.all(np.asarray(nu, dtype=np.float64) > 2))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"{what} needs nu > 2, got {nu}")


def _param(dist, nu, shape) -> float:
    if dist not in _CODES:
        raise InputError(f"unknown distribution {dist!r}; one of {', '.join(DISTRIBUTIONS)}")
    if dist == "t":
        check_student_nu(nu)
        return float(nu)
    if dist == "chisquare":
        if nu is None or not (0.0 < float(nu) < np.inf):
            raise InputError(f"chi-square needs degrees of freedom nu > 0, got {nu}")
        return float(nu)
    if dist in ("gamma", "invgamma"):
        if shape is None or not (0.0 < float(shape) < np.inf):
            raise InputError(f"{dist} needs shape > 0, got {shape}")
        return float(shape)
    return 0.0


def fill(source, out: np.ndarray, dist: str = "normal", *, nu=None, shape=None) -> np.ndarray:
    """Fill the float64 array ``out`` with variates of ``dist`` (see :func:`draw`)."""
    p = _param(dist, nu, shape)
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64):
        raise InputError("out must be a float64 numpy array")
    if isinstance(source, np.random.SeedSequence):
        state = stream_state(source)
    else:
        state = source
        if not (isinstance(state, np.ndarray) and state.dtype == np.uint64
                and state.shape == (4,)):
            raise InputError("source must be a SeedSequence or a uint64[4] stream state")
    if not out.flags.c_contiguous:
        raise InputError("out must be C-contiguous")
    _fill(state, _CODES[dist], p, out.reshape(-1))  # a view of out
    return out


def draw(source, size, dist: str = "normal", *, nu=None, shape=None) -> np.ndarray:
    r"""Draw ``size`` variates of ``dist`` from a keyed xoshiro256** stream.

    Parameters
    ----------
    source : numpy.random.SeedSequence or numpy.ndarray
        A SeedSequence (a fresh stream, :func:`stream_state`), or a uint64[4] state
        from :func:`stream_state`, advanced in place (successive calls continue the
        stream: ``draw(st, 3)`` then ``draw(st, 5)`` equals ``draw(ss, 8)``).
    size : int or tuple of int
        Shape of the result (filled in C order).
    dist : str
        ``"uniform01"`` [0, 1); ``"normal"`` N(0, 1); ``"gamma"`` Gamma(shape, 1);
        ``"invgamma"`` 1/Gamma(shape, 1); ``"chisquare"`` :math:`\chi^2_\nu`;
        ``"t"`` unit-variance Student :math:`t(\nu)\sqrt{(\nu-2)/\nu}`, ``nu > 2``
        (``inf``: normal); ``"laplace"`` unit variance; ``"uniform"`` unit variance
        on :math:`(-\sqrt3, \sqrt3)`.
    nu : float, optional
        Degrees of freedom (``t``, ``chisquare``).
    shape : float, optional
        Shape (``gamma``, ``invgamma``).

    Returns
    -------
    numpy.ndarray
        float64 array of shape ``size``.

    Notes
    -----
    Algorithms in the module docstring: ziggurat normal (Marsaglia & Tsang 2000),
    Marsaglia–Tsang gamma, :math:`t_s = Z\sqrt{(\nu-2)/\chi^2_\nu}`. Draws never
    straddle calls, so the bits depend only on the stream and the position.
    """
    return fill(source, np.empty(size, dtype=np.float64), dist, nu=nu, shape=shape)
