"""The streamed route of the bootstrap: moment statistics of sets too large for memory.

A set that is lazy (dask) or longer than :data:`GROUP_ROWS` is read one group of rows per
task: the estimate and the replicates are sums over the groups (same bits as one pass),
the BCa acceleration comes from power sums of the leave-one-out values (a second pass).
Memory is O(GROUP_ROWS) per task. Used by :mod:`uqx.inference.bootstrap`.
"""

from __future__ import annotations

from typing import NamedTuple

import dask
import numpy as np

from uqx.dataio.streaming import ColumnRef, read_rows, streamed_content_key
from uqx.engine.confidence import acceleration_from_power_sums
from uqx.engine.resample import SAMPLE_BLOCK, SAMPLE_GROUP, BootstrapPlan
from uqx.engine.statistic import STATISTICS, moment_features, moment_sums

__all__ = ["Acceleration", "GROUP_ROWS", "streamed_tasks"]

#: Rows of one group of the streamed moment route: :data:`uqx.engine.resample.SAMPLE_GROUP`
#: sample blocks of the resampling plan (a dask task reads these rows only).
GROUP_ROWS = SAMPLE_GROUP * SAMPLE_BLOCK


#: Rows of a sub-chunk of the leave-one-out pass (fixed: part of the summation order).
_JACK_ROWS = 1 << 16


class Acceleration:
    """BCa acceleration from the streamed route: stands for the jackknife values."""

    def __init__(self, a):
        self.a = np.asarray(a, dtype=np.float64)


def _group_sums(src_E, src_u, lo, hi, plan, g, ncol):
    """Pass 1 over group g: feature sums of the estimate and of every replicate block."""
    E, u = read_rows(src_E.arr, lo, hi), read_rows(src_u.arr, lo, hi)
    F = moment_features(E, u, ncol)
    return moment_sums(E, u), [plan.sums_group(b, F, g, offset=lo)
                               for b in range(plan.n_blocks)]


def _group_jack(src_E, src_u, lo, hi, S, t0, specs, M):
    r"""Pass 2 over a group: power sums of :math:`x_i = t_{(i)} - t_0` (leave-one-out).

    Returns (K, 4): :math:`(n, \sum x, \sum x^2, \sum x^3)` over the finite values.
    """
    E, u = read_rows(src_E.arr, lo, hi), read_rows(src_u.arr, lo, hi)
    out = np.zeros((len(specs), 4))
    for a in range(0, E.size, _JACK_ROWS):  # fixed sub-chunks: small temporaries
        b = a + _JACK_ROWS
        loo = S[None, :] - moment_sums(E[a:b, None], u[a:b, None])
        for k, s in enumerate(specs):
            x = STATISTICS[s.base].finish(loo, M - 1) - t0[k]
            x = x[np.isfinite(x)]
            out[k] += (x.size, x.sum(), (x * x).sum(), (x * x * x).sum())
    return out


class SetTasks(NamedTuple):
    """The computations of one set: estimates, jackknife (or acceleration), replicate blocks."""

    t0: object
    jack: object
    blocks: list


class _FirstPass(NamedTuple):
    """Pass 1 of the streamed route: the feature sums, the estimates, the replicate blocks."""

    sums: np.ndarray
    t0: dict
    blocks: list


def streamed_tasks(E, u, M, specs, n_boot, seed, want_jack):
    """Lazy :class:`SetTasks` (t0, acceleration, blocks) of one set by the streamed moment route.

    Group g holds the rows of the plan's group g (:meth:`BootstrapPlan.group_rows`,
    :data:`GROUP_ROWS` rows); a task reads only
    its rows (numpy slices, or the chunks of a dask array), so memory is O(G) per task
    whatever M. Pass 1: the feature sums of the estimate and of every replicate block
    (:meth:`uqx.engine.resample.BootstrapPlan.sums_group`, the same draws as the in-memory
    route); pass 2 (BCa): power sums of the leave-one-out values. Partial sums are added
    in group order, so the result does not depend on the chunking or the scheduler.
    """
    key = streamed_content_key(E, u, M, GROUP_ROWS)
    plan = BootstrapPlan(M=M, n_boot=n_boot, seed=seed, key=key)
    cols = {c for s in specs for c in STATISTICS[s.base].columns}
    ncol = 3 if cols <= {0, 1, 2} else 5
    groups = [plan.group_rows(g) for g in range(plan.n_groups)]
    sE, su = ColumnRef(E), ColumnRef(u)
    p1 = [dask.delayed(_group_sums, pure=False)(sE, su, lo, hi, plan, g, ncol)
          for g, (lo, hi) in enumerate(groups)]

    def reduce1(results):
        S = results[0][0]
        reps = list(results[0][1])
        for s_g, r_g in results[1:]:
            S = S + s_g
            reps = [a + b for a, b in zip(reps, r_g, strict=True)]
        t0 = {s.name: STATISTICS[s.base].finish(S[None, :], M) for s in specs}
        blocks = [{s.name: STATISTICS[s.base].finish(
            np.concatenate([r, np.zeros(r.shape[:-1] + (5 - r.shape[-1],))], axis=-1)
            if r.shape[-1] < 5 else r, M)[:, None] for s in specs} for r in reps]
        return _FirstPass(S, t0, blocks)

    first = dask.delayed(reduce1)(p1)
    S = first[0]
    t0 = first[1]
    if not want_jack:
        return dask.delayed(lambda r: SetTasks(r.t0, None, r.blocks))(first)
    t0_vec = dask.delayed(lambda t: np.array([t[s.name][0] for s in specs]))(t0)
    p2 = [dask.delayed(_group_jack, pure=False)(sE, su, lo, hi, S, t0_vec, specs, M)
          for lo, hi in groups]

    def reduce2(r, jacks):
        P = jacks[0]
        for j in jacks[1:]:
            P = P + j
        a = acceleration_from_power_sums(P)
        return SetTasks(r.t0, {s.name: Acceleration(a[k:k + 1]) for k, s in enumerate(specs)},
                        r.blocks)

    return dask.delayed(reduce2)(first, p2)
