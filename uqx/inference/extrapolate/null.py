r"""The simulated null of the zero-bin intercepts (the verdict of the extrapolation).

The same sweep and fit (:mod:`uqx.inference.extrapolate.binsweep`) on ``n_mc`` calibrated copies
:math:`E^{(k)} = u\,\epsilon^{(k)}`, ε ~ D, drawn directly in the sorted order, one pass
per copy (:func:`sweep_copies`, :func:`null_intercepts`; :class:`NullHook` shares the
draws of the simulated references); :func:`null_verdict` places the observed intercept
in the null of every D. Methods page: zero-bin extrapolation.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from uqx.engine.binning import equal_count_edges
from uqx.engine.defaults import LEVEL, SWEEP_POP_MIN
from uqx.engine.generators import stream_state
from uqx.engine.mctest import INTERCEPT_DIRECTION, family_verdict, mc_pvalue
from uqx.engine.resample import content_key, lemire_threshold, seed_sequence
from uqx.engine.unit_variance import draw_unit, unit_args, unit_step
from uqx.inference.extrapolate.binsweep import (
    BINNED_FUSED,
    SweepSettings,
    add_sweep_row,
    fit_points,
    ols_fit,
    partition_stats,
    sweep_edges,
    sweep_from_range_sums,
    sweep_statistics,
    sweep_terms,
    sweep_three,
)

__all__ = ["NullHook", "null_intercepts", "null_verdict", "sweep_copies"]

@numba.njit(inline="always")
def _add4(a, t):
    return a[0] + t[0], a[1] + t[1], a[2] + t[2], a[3] + t[3]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _sweep_draws(state, code, d, c, h, pool, pu, pm, ps, U, bp, edges, offsets,
                 out):  # pragma: no cover - numba
    """ENCE, ZMSE, ZVE of copies ``U[r] * ε`` drawn on the fly, every bin partition.

    One pass per copy: ε from :func:`uqx.engine.unit_variance.unit_step` (row after row on one
    stream; the generator ``code, d, c, h, pool, pu, pm, ps`` of
    :func:`uqx.engine.unit_variance.unit_args`), the sums of (u², E², z², z) over each
    segment between the sorted breakpoints ``bp`` of all partitions accumulated into
    prefix sums ``P`` at ``bp``;
    ``edges[offsets[l]:offsets[l+1]]`` are the positions in ``bp``
    of the edges of partition l, evaluated by
    :func:`uqx.inference.extrapolate.binsweep.partition_stats`.
    """
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    n = np.uint64(max(pool.shape[0], 1))
    th = lemire_threshold(n)
    m0, sc0 = pm[0], ps[0]
    k = out.shape[0]
    P = np.zeros((bp.size, 4))
    for r in range(k):
        u = U[r if U.shape[0] > 1 else 0]
        pend, have = np.uint64(0), False
        for j in range(1, bp.size):  # segment [bp[j-1], bp[j]): sums added to P[j-1]
            i0, i1 = bp[j - 1], bp[j]
            # two sets of accumulators (even / odd positions): the additions of
            # neighbouring values do not wait on each other
            even = odd = (0.0, 0.0, 0.0, 0.0)
            for i in range(i0, i1 - 1, 2):
                e, s0, s1, s2, s3, pend, have = unit_step(
                    code, s0, s1, s2, s3, d, c, h, pool, pu, m0, sc0, n, th, pend, have)
                f, s0, s1, s2, s3, pend, have = unit_step(
                    code, s0, s1, s2, s3, d, c, h, pool, pu, m0, sc0, n, th, pend, have)
                even = _add4(even, sweep_terms(e, u[i]))
                odd = _add4(odd, sweep_terms(f, u[i + 1]))
            if (i1 - i0) & 1:
                e, s0, s1, s2, s3, pend, have = unit_step(
                    code, s0, s1, s2, s3, d, c, h, pool, pu, m0, sc0, n, th, pend, have)
                even = _add4(even, sweep_terms(e, u[i1 - 1]))
            add_sweep_row(P, j - 1, _add4(even, odd))
        partition_stats(P, bp, edges, offsets, out, r)
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


def sweep_copies(source, u_sorted, n_bins, *, dist: str = "normal", nu=None, pool=None,
                 n_copies: int | None = None, pop_min: int = SWEEP_POP_MIN) -> np.ndarray:
    r"""ENCE, ZMSE, ZVE of calibrated copies drawn and swept in one pass (no ε stored).

    Copy r is :math:`E = u_r\,\epsilon_r`, ε drawn on the keyed stream ``source`` copy
    after copy (the draws of :func:`uqx.engine.unit_variance.draw_unit`), and swept over equal-count
    bin numbers ``n_bins`` like :func:`sweep_three` (equal to ``sweep_three(draw_unit(
    source, (k, M)), u)`` within rounding, tested): the running sums
    :math:`\sum u^2, \sum E^2, \sum z^2, \sum z` are recorded at the union of the bin
    edges, so a copy costs one draw and four additions per value.

    Parameters
    ----------
    source : numpy.random.SeedSequence or numpy.ndarray
        Keyed stream (or uint64[4] state, advanced in place).
    u_sorted : array_like, shape (M,) or (k, M)
        Sorted uncertainties: shared by every copy, or one row per copy.
    n_bins : sequence of int
    dist, nu, pool :
        Generative distribution (:func:`uqx.engine.unit_variance.draw_unit`).
    n_copies : int, optional
        Number of copies when ``u_sorted`` is one row (default 1).

    Returns
    -------
    numpy.ndarray, shape (k, len(n_bins), 3)
    """
    U = np.ascontiguousarray(np.atleast_2d(u_sorted), dtype=np.float64)
    k = U.shape[0] if U.shape[0] > 1 or n_copies is None else int(n_copies)
    M = U.shape[1]
    parts = [equal_count_edges(M, int(nb), pop_min=pop_min) for nb in n_bins]
    bp = np.unique(np.concatenate(parts)).astype(np.int64)
    edges = np.concatenate([np.searchsorted(bp, e) for e in parts]).astype(np.int64)
    offsets = np.cumsum([0] + [e.size for e in parts]).astype(np.int64)
    out = np.empty((k, len(parts), 3))
    a = unit_args(source, dist, nu, pool)
    _sweep_draws(a.state, a.code, a.d, a.c, a.h, a.pool, a.pool_u, a.pool_m, a.pool_s, U, bp,
                 edges, offsets, out)
    return out


class NullHook:
    """Intercepts of the sweep fit on calibrated copies built from given unit draws ε.

    ``hook(eps)`` with ``eps`` (k, M) i.i.d. unit draws returns (k, C, S): for every
    ordering c of the uncertainties, the copy ``u_orders[c] * eps`` is a calibrated data
    set sorted by that conditioning variable, swept over ``n_bins`` and fitted. Used by
    :func:`null_intercepts` (own draws) and by the validation workflow, which hands it
    the draws of its simulated references so that the null costs no extra draws.
    ``n_copies``: how many copies the caller should feed it.

    ``positions`` (one per ordering, or None for all): where the value of each row of
    that ordering sits in ``eps``, None for the order of the draws itself. The draws of
    the simulation are laid out in the uE order and, for the data's own z-scores
    resampled within windows of uE, are not identically distributed: the row at
    position j of the X order is the row of uE rank ``positions[c][j]``, and its ε must
    be the one drawn there (the copy keeps the error shape of each level of uE).
    """

    def __init__(self, u_orders, n_bins, settings: SweepSettings, n_copies: int = 0,
                 positions=None):
        self.u_orders = [np.ascontiguousarray(u, dtype=np.float64) for u in u_orders]
        self.positions = ([None] * len(self.u_orders) if positions is None else
                          [None if p is None else np.ascontiguousarray(p, dtype=np.int64)
                           for p in positions])
        if len(self.positions) != len(self.u_orders):
            raise ValueError("one entry of positions per ordering")
        self.n_bins = np.asarray(n_bins)
        self.settings = settings
        self.n_copies = int(n_copies)
        self.keep, self.x = fit_points(self.n_bins, settings, self.u_orders[0].size)

    def cache_key(self) -> tuple:
        """Everything the hook's output depends on besides ε (for shared copies)."""
        placed = [np.arange(0) if p is None else p for p in self.positions]
        return (content_key(*self.u_orders, *placed, self.n_bins), self.settings,
                self.n_copies)

    def partitions(self, u_sorted):
        """Edges of the sweep's partitions when sums can stand for ε, else None.

        The sums route (:meth:`from_range_sums`) serves a hook with one ordering, the one
        of the simulation (``u_sorted``), and the fused statistics; with other orderings
        (X, V) the copies keep ε.
        """
        if (len(self.u_orders) != 1 or self.positions[0] is not None
                or not all(s in BINNED_FUSED for s in self.settings.stats)):
            return None
        if not np.array_equal(self.u_orders[0], u_sorted):
            return None
        edges, offsets = sweep_edges(u_sorted.size, self.n_bins, pop_min=self.settings.pop_min)
        return [edges[offsets[i]:offsets[i + 1]] for i in range(offsets.size - 1)]

    def from_range_sums(self, sums, u2, bounds) -> np.ndarray:
        """Return the intercepts (k, 1, S) of copies given by their sums over ranges.

        ``sums`` (k, R, 4): (Σε², Σu²ε², Σuε, Σε) over ``[bounds[j], bounds[j+1])``,
        ``u2`` (R,) Σu² over the same ranges, ``bounds`` holding every edge of
        :meth:`partitions`:
        the same sweep (:func:`~uqx.inference.extrapolate.binsweep.sweep_from_range_sums`)
        and fit as :meth:`__call__` on ε.
        """
        st = self.settings
        y = sweep_from_range_sums(sums, u2, bounds, self.n_bins, pop_min=st.pop_min)
        y = y[..., [BINNED_FUSED.index(s) for s in st.stats]]
        return ols_fit(self.x, np.moveaxis(y[:, self.keep], 1, -1))[0][:, None, :]

    def __call__(self, eps) -> np.ndarray:
        """Return the intercepts (k, C, S) of the copies ``u_orders[c] * eps[:, positions[c]]``."""
        st = self.settings
        out = np.empty((eps.shape[0], len(self.u_orders), len(st.stats)))
        fused = all(s in BINNED_FUSED for s in st.stats)
        for c, (u, pos) in enumerate(zip(self.u_orders, self.positions, strict=True)):
            # the ε drawn at each row's place in the draws' order
            e = eps if pos is None else eps[:, pos]
            if fused:
                y = sweep_three(e, u, self.n_bins, pop_min=st.pop_min)
                y = y[..., [BINNED_FUSED.index(s) for s in st.stats]]
            else:
                y = sweep_statistics(u * e, u, self.n_bins, st.stats, pop_min=st.pop_min)
            out[:, c] = ols_fit(self.x, np.moveaxis(y[:, self.keep], 1, -1))[0]
        return out


def null_intercepts(
    u_orders,
    n_bins,
    settings: SweepSettings,
    *,
    dist: str = "normal",
    nu: float | None = None,
    n_mc: int = 200,
    seed: int = 0,
    key=(),
    memory_budget: int = 128 * 2**20,
    label: str | None = None,
    pool=None,
) -> np.ndarray:
    """Return the intercepts of the sweep fit on ``n_mc`` calibrated copies E = u·ε, ε ~ D.

    Parameters
    ----------
    u_orders : array_like (M,) or sequence of them
        The uncertainties sorted by each conditioning variable. One draw of ε per copy
        serves every ordering (ε is i.i.d., so ``u_order * ε`` is a calibrated copy
        sorted by that variable): the draws, the dominant cost, are shared.
    n_bins : array_like of int
        Bin numbers of the sweep (:func:`bin_numbers`).

    Batch ``b`` of 50 copies draws from the keyed xoshiro256** stream
    ``seed_sequence(seed, "extrapolation", key, dist label, b)`` (the generators of
    :mod:`uqx.engine.generators` through :func:`~uqx.engine.unit_variance.draw_unit`; ``"data"``:
    Lemire bounded integers into ``pool``), copy after copy; rows are drawn in sub-batches
    sized to ``memory_budget`` from that stream, so the result does not depend on the
    budget.

    Returns
    -------
    numpy.ndarray, shape (n_mc, len(settings.stats)) for one ordering, else
    (n_mc, n_orderings, len(settings.stats)).
    """
    single = np.ndim(u_orders[0]) == 0
    hook = NullHook([u_orders] if single else u_orders, n_bins, settings)
    M = hook.u_orders[0].size
    label = label or {"normal": "N", "data": "data"}.get(dist) or f"T{nu:g}"
    fixed = 50  # copies per keyed batch: part of the stream definition
    rows = max(1, min(fixed, memory_budget // (M * 8 * 2)))
    out = np.empty((n_mc, len(hook.u_orders), len(settings.stats)))
    k0 = 0
    for b in range(-(-n_mc // fixed)):
        state = stream_state(seed_sequence(seed, "extrapolation", key, label, b))
        nb = min(fixed, n_mc - b * fixed)
        for lo in range(0, nb, rows):  # the stream continues: rows drawn one by one
            eps = draw_unit(state, (min(rows, nb - lo), M), dist=dist, nu=nu, pool=pool)
            out[k0 : k0 + eps.shape[0]] = hook(eps)
            k0 += eps.shape[0]
    return out[:, 0] if single else out


class NullVerdict(NamedTuple):
    """Verdict of an intercept against its nulls, its reason, the nulls' limits and p-values."""

    verdict: str
    reason: str
    limits: np.ndarray
    pvalues: np.ndarray


def null_verdict(observed, nulls, *, level: float = LEVEL, labels=None):
    """Verdict of an observed intercept against its null distributions (one per D).

    A one-sided Monte-Carlo test (:func:`uqx.engine.mctest.mc_pvalue`): miscalibration makes the
    intercept of ENCE, ZMSE and ZVE larger than calibrated copies give, never smaller.
    The family rule of :func:`uqx.engine.mctest.family_verdict` combines the members.

    Parameters
    ----------
    observed : float
    nulls : sequence of numpy.ndarray
        Null intercepts under each generative distribution.
    level : float
        Test at size ``1 - level``; the central ``level`` quantiles are returned too.
    labels : sequence of str, optional
        Member labels (default ``N``, ``T6``...: no data-matched member).

    Returns
    -------
    verdict : str
        ``valid``, ``invalid`` or ``inconclusive``.
    reason : str
        Empty unless inconclusive.
    limits : numpy.ndarray, shape (len(nulls), 2)
    pvalues : numpy.ndarray, shape (len(nulls),)
    """
    lim = np.array(
        [np.quantile(n, [(1 - level) / 2, (1 + level) / 2], method="linear") for n in nulls]
    )
    p = np.array([float(mc_pvalue(observed, n, INTERCEPT_DIRECTION)) for n in nulls])
    if not np.isfinite(observed) or not np.isfinite(p).all():
        return NullVerdict("inconclusive", "intercept or its null distribution is not finite",
                           lim, p)
    labels = list(labels) if labels is not None else [f"D{k}" for k in range(len(nulls))]
    n = min(int(np.isfinite(x).sum()) for x in nulls)
    v, why = family_verdict(p, labels, alpha=1 - level, n_copies=n,
                            direction=INTERCEPT_DIRECTION)
    return NullVerdict(v, why, lim, p)
