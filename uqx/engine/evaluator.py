"""Evaluation of statistics on one data set: point estimate, bootstrap replicates, jackknife.

The formulas live in :mod:`uqx.engine.statistic` (one definition each, from per-sample or
per-bin sums); this module holds the numba accumulators that feed them from bootstrap
count vectors, and :class:`SetEvaluator`, which runs the three evaluations with the fast
exact routes of each family (methods: bootstrap):

``moment``
    replicates are streamed feature sums; the jackknife is analytic, ``(S - F_i)/(M-1)``.
``binned``
    a replicate is re-sorted by the binning variable and cut with the original index
    intervals: per-bin sums in one O(M + N) pass over the counts; leave-one-out sums by
    the prefix-sum index shift with R's ``intrvJack`` intervals (O(M·N)).
``rank``
    Spearman CC from average ranks per tie group of the counts; jackknife by the ±1, ±½
    re-ranking rule, exact in O(M log M) (:mod:`uqx.engine.ranks`).

Memory (binned and moment statistics, beyond the E, u columns): one stable sort order
per binning variable (int64, 8 bytes a row) and, up to :data:`SORTED_COPY_ROWS` rows,
E and u in that order (16 bytes a row); the leave-one-out values of every statistic
(8 bytes a row each), the output of :meth:`SetEvaluator.jackknife`. Per-row features
(moment and bin features, their prefix sums) are never held: they are computed where
they are summed, group by group or chunk by chunk, and the jackknife keeps the prefix
sums only next to the bin edges.

A binning variable already sorted (rows in content order,
:func:`uqx.engine.binning.content_order`: uE) needs neither the order nor the copies:
the kernels read the columns as they are, and when it is the only variable read
through counts, each replicate's counts are drawn and folded into the bins sample block
by sample block (:func:`_streamed_bin_sums`), with no (b, M) count matrix. Beyond
:data:`uqx.engine.defaults.LONG_SET_ROWS` rows the acceleration is reduced from the
leave-one-out values as they come (:meth:`SetEvaluator.acceleration`): on
content-ordered long sets nothing of size M is held beyond the columns
(``tests/test_long_sets.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import numba
import numpy as np

from uqx.engine.binning import (
    Bins,
    equal_count_edges,
    is_nondecreasing,
    make_bins,
    sorted_edges,
)
from uqx.engine.confidence import acceleration_from_power_sums
from uqx.engine.defaults import LONG_SET_ROWS
from uqx.engine.layout import (
    add_bin_features,
    add_bin_features_times,
    no_bin_features,
    put_bin_features,
    sample_bin_features,
)
from uqx.engine.ranks import average_ranks, spearman_from_counts, spearman_jackknife, tie_bounds
from uqx.engine.resample import SAMPLE_BLOCK, SAMPLE_GROUP, _draw_counts
from uqx.engine.statistic import (
    F_E2,
    F_U2,
    F_Z,
    F_Z2,
    STATISTICS,
    BinningConfig,
    bin_feature_sums,
    moment_features,
    moment_sums,
)
from uqx.errors import InputError

__all__ = ["SetEvaluator", "SORTED_COPY_ROWS"]

#: Sets up to this many rows keep E and u in the bin order for the binned kernels
#: (16 bytes a row, sequential reads); longer sets read the columns through the sort
#: order instead (random reads, nothing held): the same values, the same bits.
SORTED_COPY_ROWS = 1 << 24

_NO_ORDER = np.zeros(1, dtype=np.int64)  # the order of a sorted variable: never read
_CHECK_ROWS = 1 << 20


# ---------------------------------------------------------------- numba kernels
@numba.njit(inline="always")
def _first_bin(edges, j):
    """Return the first non-empty bin from ``j`` on (``N`` when none is left)."""
    N = edges.shape[0] - 1
    while j < N and edges[j + 1] == edges[j]:
        j += 1
    return j


@numba.njit(inline="always")
def _fold(c, e, uu, mean, edges, out_r, j, room, a):
    """Add ``c`` copies of the sample (e, uu) to the open bin ``j`` of one replicate.

    The 6 bin features of :func:`~uqx.engine.statistic.sample_bin_features` accumulate
    in the 6-tuple ``a``; a sample whose copies fill the ``room`` left in bin ``j``
    closes it (writes ``out_r[j]``) and the rest of its copies go on to the next bins,
    exactly as in the sorted resample. Returns the new (j, room, a); ``j == N``: every
    bin is closed.
    """
    N = edges.shape[0] - 1
    f = sample_bin_features(e, uu, mean)
    while c >= room:  # this sample closes bin j
        put_bin_features(out_r, j, add_bin_features_times(a, room, f))
        a = no_bin_features()
        c -= room
        j = _first_bin(edges, j + 1)
        if j == N:
            return j, room, a
        room = edges[j + 1] - edges[j]
    return j, room - c, add_bin_features_times(a, np.float64(c), f)


@numba.njit(nogil=True, cache=True)
def _weighted_bin_sums(counts, order, ident, Es, us, gathered, mean, edges, out):
    """Per-bin feature sums of a count-weighted sample re-sorted by the binning variable.

    ``counts`` (b, M) in file order, ``order`` (M,) stable sort order of the binning
    variable (``ident``: the identity, not read: the variable is already sorted),
    ``Es``, ``us`` (M,) E and u in that order (``gathered`` False) or in file
    order, read through ``order`` (``gathered`` True: nothing stored), and ``mean`` the
    mean of E in that order (``E[order].mean()``): the 6 bin features of
    :func:`~uqx.engine.statistic.bin_features` are computed here, per sorted position,
    with the same operations (so the same bits) instead of being stored (48 bytes a
    row). ``edges`` (N+1,) rank boundaries (edges[-1] == counts[r].sum()); ``out``
    (b, N, 6) receives the sums. Copies of a sample that straddle a bin boundary are
    split between the two bins, exactly as in the sorted resample (:func:`_fold`).
    """
    b, M = counts.shape
    N = edges.shape[0] - 1
    for r in range(b):
        j = _first_bin(edges, 0)
        if j == N:
            continue
        room = edges[j + 1] - edges[j]
        # the 6 bin features accumulate in registers; the rare bin closings write out
        a = no_bin_features()
        out_r = out[r]  # one view per replicate: a view per row costs 6x the whole loop
        for p in range(M):
            i = p if ident else order[p]
            q = i if gathered else p
            j, room, a = _fold(counts[r, i], Es[q], us[q], mean, edges, out_r, j, room, a)
            if j == N:
                break


@numba.njit(nogil=True, cache=True)
def _streamed_bin_sums(states, blocks, n_draws, Es, us, mean, edges, cbuf, out):
    """:func:`_weighted_bin_sums` of replicates whose counts are drawn block by block.

    For a variable already sorted (its order the identity), replicate ``r``'s counts
    are drawn sample block by sample block into ``cbuf`` (int32, one block:
    :func:`uqx.engine.resample._draw_counts` on ``states[k]``, ``n_draws[r, k]``
    draws, the streams of :meth:`~uqx.engine.resample.BootstrapPlan.iter_counts`) and
    folded into the bins at once: the same counts and the same bits as the (b, M)
    count matrix, with 64 KiB instead of 4 bytes a row and replicate. ``blocks``
    (K, 2) the sample blocks' (start, stop); ``out`` (b, N, 6).
    """
    N = edges.shape[0] - 1
    for r in range(n_draws.shape[0]):
        j = _first_bin(edges, 0)
        room = edges[j + 1] - edges[j] if j < N else 0
        a = no_bin_features()
        out_r = out[r]  # one view per replicate (as _weighted_bin_sums)
        for k in range(blocks.shape[0]):
            s, e = blocks[k, 0], blocks[k, 1]
            row = cbuf[0:1, 0 : e - s]
            row[0, :] = 0
            # every block is drawn, even after the last bin is closed: its stream must
            # advance as in iter_counts for the next replicate
            _draw_counts(states[k], e - s, n_draws[r : r + 1, k], row)
            if j == N:
                continue
            for p in range(s, e):
                j, room, a = _fold(row[0, p - s], Es[p], us[p], mean, edges, out_r, j,
                                   room, a)
                if j == N:
                    break


@numba.njit(nogil=True, cache=True)
def _prefix_at(Es, us, order, gathered, mean, pos, out):
    """Prefix sums of the bin features, kept only at the sorted positions ``pos``.

    ``out[k]`` receives the sum of the features of sorted positions ``0 .. pos[k] - 1``
    (``pos`` ascending, in [0, M]), accumulated one position after the other from the
    first feature row as ``np.cumsum(bin_features(Es, us), axis=0)`` does: the same
    bits, without the (M, 6) features and their (M + 1, 6) prefix sums. ``Es``, ``us``
    as in :func:`_weighted_bin_sums` (read through ``order`` when ``gathered``).
    """
    M = Es.shape[0]
    K = pos.shape[0]
    a = no_bin_features()
    k = 0
    for p in range(M + 1):
        while k < K and pos[k] == p:
            put_bin_features(out, k, a)
            k += 1
        if p == M or k == K:
            break
        q = order[p] if gathered else p
        f = sample_bin_features(Es[q], us[q], mean)
        # cumsum starts from the first row (keeps the sign of a zero)
        a = f if p == 0 else add_bin_features(a, f)


def _features_at(Es, us, order, gathered, mean, lo, hi):
    """Bin features (hi - lo, 6) of sorted positions lo..hi-1 (as :func:`bin_features`)."""
    e = Es[order[lo:hi]] if gathered else Es[lo:hi]
    uu = us[order[lo:hi]] if gathered else us[lo:hi]
    return np.stack(sample_bin_features.py_func(e, uu, mean), axis=-1)


# ---------------------------------------------------------------- per-set evaluator
#: Leave-one-out rows of t_z whose sums are added afresh where the shifted total lost the
#: spread (O(M) each): one dominant z among M, never more than a few.
FRESH_ROWS = 8
#: A leave-one-out sum of squares at or below this share of the total is rounding of
#: the total (relative error eps / share > 1e-7): it is added afresh.
LOST_SHARE = 2.0**-28


@dataclass
class SetEvaluator:
    """Evaluate a list of statistics on one data set: estimate, replicates, jackknife.

    Parameters
    ----------
    E, u : numpy.ndarray
        Valid errors and uncertainties in file order.
    cond : dict
        Conditioning variables by name (``"uE"`` always; ``"X"``, ``"V"`` when present).
    specs : list of StatSpec
    binning : BinningConfig

    Notes
    -----
    Held in memory (see the module docstring): the sort order of each binning variable
    (8 bytes a row), E and u in that order up to :data:`SORTED_COPY_ROWS` rows (16 bytes
    a row; read through the order beyond), and the jackknife's leave-one-out values (8
    bytes a row per statistic). Measured with ``benchmarks/mem_binned_evaluator.py`` at
    10^7 rows, ZMS + RCE + ENCE, columns included: 71 bytes a row at peak (55 on the
    route of longer sets), down from 175.
    """

    E: np.ndarray
    u: np.ndarray
    specs: list
    binning: BinningConfig = field(default_factory=BinningConfig)
    cond: dict = field(default_factory=dict)

    def __post_init__(self):
        self.E = np.asarray(self.E, dtype=np.float64)
        self.u = np.asarray(self.u, dtype=np.float64)
        self.M = self.E.size
        # the numba kernels index without bounds checks: reject what would make the
        # binning order shorter than M (non-finite values) or mismatched lengths
        if self.E.ndim != 1 or self.u.shape != self.E.shape:
            raise InputError(
                f"E and u must be 1-d of equal length, got shapes {self.E.shape}, {self.u.shape}"
            )
        extra = {}
        for k, v in self.cond.items():
            if v is not None:
                extra[k] = np.asarray(v, dtype=np.float64)
                if extra[k].shape != self.E.shape:
                    raise InputError(f"variable {k!r} has shape {extra[k].shape}, not ({self.M},)")
        for k, v in {"E": self.E, "u": self.u, **extra}.items():
            # by groups of rows: no boolean column (1 byte a row)
            if not all(np.isfinite(v[a:a + _CHECK_ROWS]).all()
                       for a in range(0, v.size, _CHECK_ROWS)):
                raise InputError(
                    f"variable {k!r} holds NaN/inf: drop incomplete rows first (uqx.iter_sets)"
                )
        self.cond = {"uE": self.u, **extra}
        for s in self.specs:
            if s.family == "binned" and s.cond not in self.cond:
                raise InputError(f"statistic {s.name!r} needs variable {s.cond!r}, which this "
                                 f"data set does not have: give {s.cond} or leave "
                                 f"{s.name} out")

    # -- shared preparations
    @cached_property
    def _moment(self):
        return [s for s in self.specs if s.family == "moment"]

    @cached_property
    def _binned_conds(self):
        return sorted({s.cond for s in self.specs if s.family == "binned"})

    @cached_property
    def _ncol(self):
        cols = {c for s in self._moment for c in STATISTICS[s.base].columns}
        return 3 if cols <= {F_Z2, F_U2, F_E2} else 5

    def _moment_features(self, lo, hi):
        """Moment features of rows lo..hi-1 (row-wise: the same bits as a slice of all)."""
        return moment_features(self.E[lo:hi], self.u[lo:hi], self._ncol)

    def _sums_without(self, i: int, step: int) -> np.ndarray:
        """Moment feature sums (5,) of every row but ``i``, added afresh chunk by chunk."""
        out = np.zeros(5)
        for lo in range(0, self.M, step):
            F = self._moment_features(lo, lo + step)
            if lo <= i < lo + F.shape[0]:
                F = np.delete(F, i - lo, axis=0)
            out[:F.shape[1]] += F.sum(axis=0)
        return out

    def _moment_block_sums(self, plan, block, group):
        """:meth:`BootstrapPlan.sums_group` of one group from the features of its rows."""
        lo, hi = plan.group_rows(group)
        return plan.sums_group(block, self._moment_features(lo, hi), group, offset=lo)

    def bins_of(self, cond):
        """Return the bins (:class:`~uqx.engine.binning.Bins`) of the conditioning variable.

        A sorted variable's order (the identity, not held by the evaluator) is
        materialised here for the caller.
        """
        b = self._binnings[cond]
        if b.order is None:
            b = replace(b, order=np.arange(self.M, dtype=np.int64))
        return b

    @cached_property
    def _binnings(self):
        """Bins of each binning variable; ``order`` None where it is already sorted.

        Rows in content order (:func:`uqx.engine.binning.content_order`, the default
        of :func:`uqx.validate`) have uE sorted: its stable order is the identity, not
        stored (8 bytes a row less), and the kernels read E and u as they are.
        """
        bin_cfg = self.binning
        out = {}
        for c in self._binned_conds:
            x = self.cond[c]
            if is_nondecreasing(x):
                edges, used_log = sorted_edges(x, bin_cfg.n_bins, scheme=bin_cfg.scheme,
                                               pop_min=bin_cfg.pop_min, log=bin_cfg.log)
                out[c] = Bins(order=None, edges=edges, scheme=bin_cfg.scheme, log=used_log,
                              n_requested=int(bin_cfg.n_bins), pop_min=int(bin_cfg.pop_min))
            else:
                out[c] = make_bins(x, bin_cfg.n_bins, scheme=bin_cfg.scheme,
                                   pop_min=bin_cfg.pop_min, log=bin_cfg.log)
        return out

    @cached_property
    def _bin_prep(self):
        """Per binning variable: (bins, order, ident, Es, us, gathered, mean).

        ``ident``: the variable is already sorted (``bins.order`` None): ``order`` is a
        placeholder never read, ``Es``, ``us`` the columns themselves (nothing held).

        Up to :data:`SORTED_COPY_ROWS` rows, ``Es``, ``us`` are E and u in the sort order
        (16 bytes a row, sequential reads in the kernels); beyond, they are the file-order
        columns themselves, read through ``order`` (``gathered``: nothing held but the
        order). ``mean`` is the mean of E in that order, the centring of
        :func:`~uqx.engine.statistic.bin_features` (the same reduction, the same bits).
        The bin features themselves (6 float64 a row) are computed where they are summed
        (:func:`_weighted_bin_sums`, :func:`_prefix_at`, :func:`_features_at`).
        """
        out = {}
        for c, bins in self._binnings.items():
            if bins.order is None:  # sorted variable: the columns are in bin order
                mean = float(self.E.mean(axis=-1, keepdims=True)[0])
                out[c] = (bins, _NO_ORDER, True, self.E, self.u, False, mean)
                continue
            order = bins.order
            gathered = self.M > SORTED_COPY_ROWS
            Es = self.E[order]
            mean = float(Es.mean(axis=-1, keepdims=True)[0])
            if gathered:
                Es, us = self.E, self.u
            else:
                us = self.u[order]
            out[c] = (bins, order, False, Es, us, gathered, mean)
        return out

    @cached_property
    def _rank_prep(self):
        b = self._binnings.get("uE")
        ou = b.order if b is not None and b.order is not None else np.argsort(
            self.u, kind="stable")
        ae = np.abs(self.E)
        oe = np.argsort(ae, kind="stable")
        return ou, tie_bounds(self.u[ou]), oe, tie_bounds(ae[oe])

    def n_components(self, spec) -> int:
        """Return the number of components of a statistic (bins for vector statistics)."""
        return self.bins_of(spec.cond).n_bins if spec.vector else 1

    # -- evaluation from counts / sums
    def _from_counts(self, counts, moment_sums=None):
        """Statistics for count rows (b, M) in file order -> {name: (b, K)}.

        ``moment_sums`` (b, 5): feature sums of the same resamples (moment statistics).
        """
        counts = np.ascontiguousarray(np.atleast_2d(counts))
        b = counts.shape[0]
        out = self._from_moment_sums(moment_sums) if self._moment else {}
        for c in self._binned_conds:
            bins, order, ident, Es, us, gathered, mean = self._bin_prep[c]
            S = np.zeros((b, bins.n_bins, 6))
            _weighted_bin_sums(counts, order, ident, Es, us, gathered, mean,
                               np.ascontiguousarray(bins.edges), S)
            self._binned_from_sums(c, S, bins.edges, out)
        if any(s.family == "rank" for s in self.specs):
            ou, gu, oe, ge = self._rank_prep
            cc = np.empty(b)
            spearman_from_counts(counts, ou, gu, oe, ge, cc)
            out["cc"] = cc[:, None]
        return out

    def _binned_from_sums(self, cond, S, edges, out):
        """Binned statistics on ``cond`` from per-bin sums S (b, N, 6) into ``out``."""
        n = np.diff(edges).astype(np.float64)
        for s in self.specs:
            if s.family == "binned" and s.cond == cond:
                v = STATISTICS[s.base].finish(S, n)
                out[s.name] = v if s.vector else v[:, None]

    def _from_moment_sums(self, S):
        if S.shape[-1] < 5:  # feature subset: unused columns are never read
            S = np.concatenate([S, np.zeros(S.shape[:-1] + (5 - S.shape[-1],))], axis=-1)
        return {s.name: STATISTICS[s.base].finish(S, self.M)[:, None] for s in self._moment}

    @property
    def needs_counts(self) -> bool:
        """True when some statistic needs full per-replicate counts (not only sums)."""
        return any(s.family != "moment" for s in self.specs)

    def estimate(self) -> dict:
        """Point estimates t0: {name: (K,)}.

        Same sums as the replicate route (weights all one), computed without the
        bootstrap feature matrices: memory O(M) in sort orders only.
        """
        out = {}
        if self._moment and self.M > LONG_SET_ROWS:
            # group by group, added in group order (the streamed route's bits): no
            # (M,) feature temporaries (16 bytes a row)
            G = SAMPLE_GROUP * SAMPLE_BLOCK
            S = moment_sums(self.E[:G], self.u[:G])
            for lo in range(G, self.M, G):
                S = S + moment_sums(self.E[lo:lo + G], self.u[lo:lo + G])
            out.update(self._from_moment_sums(S[None, :]))
        elif self._moment:
            out.update(self._from_moment_sums(moment_sums(self.E, self.u)[None, :]))
        for c in self._binned_conds:  # E, u in bin order shared with the bootstrap
            bins, order, _, Es, us, gathered, _ = self._bin_prep[c]
            if gathered:  # a transient copy in bin order (the estimate runs first)
                S = bin_feature_sums(Es[order], us[order], bins.edges)
            else:
                S = bin_feature_sums(Es, us, bins.edges)
            self._binned_from_sums(c, S, bins.edges, out)
        if any(s.family == "rank" for s in self.specs):
            cc = np.empty(1)
            spearman_from_counts(np.ones((1, self.M), dtype=np.int32), *self._rank_prep, cc)
            out["cc"] = cc[:, None]
        return {k: v[0] for k, v in out.items()}

    def moment_partial(self, plan, block: int, group: int):
        """Streamed feature sums of one sample-block group (a task on large data)."""
        return self._moment_block_sums(plan, block, group)

    def from_moment_partials(self, partials) -> dict:
        """Moment statistics from group partial sums, added in group order (as ``sums``)."""
        S = partials[0]
        for p in partials[1:]:
            S = S + p
        return self._from_moment_sums(S)

    @cached_property
    def _streamed_cond(self):
        """The binning variable whose replicates draw their counts block by block, or None.

        When the only counts-reading statistics are binned on one variable that is
        already sorted, a replicate's counts are folded into the bins as they are drawn
        (:func:`_streamed_bin_sums`): no (b, M) count matrix (4 bytes a row and
        replicate).
        """
        if any(s.family == "rank" for s in self.specs) or len(self._binned_conds) != 1:
            return None
        c = self._binned_conds[0]
        return c if self._bin_prep[c][2] else None

    def replicates(self, plan, block: int, batch_elems: int = 20_000_000) -> dict:
        """Statistics of replicate block ``block`` of a :class:`~uqx.engine.resample.BootstrapPlan`.

        Moment statistics always come from the streamed feature sums of the draws (the
        same draws as the counts), so their values are bitwise the same whichever other
        statistics share the call. Binned statistics read count batches of about
        ``batch_elems`` counts, or, on one sorted binning variable, counts drawn and
        folded block by block (:attr:`_streamed_cond`; the same counts, the same bits).
        """
        S = None
        if self._moment:  # as plan.sums: groups added in group order, features per group
            S = self._moment_block_sums(plan, block, 0)
            for g in range(1, plan.n_groups):
                S = S + self._moment_block_sums(plan, block, g)
        if not self.needs_counts:  # no count matrix at all (memory O(features))
            return self._from_moment_sums(S)
        c = self._streamed_cond
        if c is not None:
            bins, _, _, Es, us, _, mean = self._bin_prep[c]
            draws = plan.sample_block_draws(block)
            out = self._from_moment_sums(S) if self._moment else {}
            B = np.zeros((draws.shape[0], bins.n_bins, 6))
            _streamed_bin_sums(plan.sample_block_states(block),
                               np.array(plan.sample_blocks, dtype=np.int64).reshape(-1, 2),
                               draws, Es, us, mean, np.ascontiguousarray(bins.edges),
                               np.zeros((1, SAMPLE_BLOCK), dtype=np.int32), B)
            self._binned_from_sums(c, B, bins.edges, out)
            return out
        batch = max(1, batch_elems // max(self.M, 1))
        parts = []
        lo = 0
        for c in plan.iter_counts(block, batch):
            parts.append(self._from_counts(c, None if S is None else S[lo : lo + c.shape[0]]))
            lo += c.shape[0]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def jackknife(self, chunk_elems: int = 1_000_000) -> dict:
        """Leave-one-out values (M, K) of every statistic (exact, fast routes)."""
        out = {}
        for name, where, v in self._jackknife_chunks(chunk_elems):
            if name not in out:
                out[name] = np.empty((self.M, v.shape[1]))
            out[name][where] = v
        return out

    def acceleration(self, t0: dict, chunk_elems: int = 1_000_000) -> dict:
        r"""BCa acceleration of every statistic from its leave-one-out values, chunk by chunk.

        The values of :meth:`jackknife` are reduced as they come to the power sums of
        :math:`x_i = t_{(i)} - t_0` over the finite ones, then
        :func:`uqx.engine.confidence.acceleration_from_power_sums`: the formula of
        :func:`~uqx.engine.confidence.jackknife_acceleration` without holding the M
        values (8 bytes a row and statistic); the last bits differ from it (another
        summation order). Used for sets longer than
        :data:`uqx.engine.defaults.LONG_SET_ROWS`.

        Parameters
        ----------
        t0 : dict
            The point estimates, :meth:`estimate`.
        chunk_elems : int
            Work size of a chunk (as :meth:`jackknife`).

        Returns
        -------
        dict
            ``{name: (K,) acceleration}``.
        """
        P = {}
        for name, _, v in self._jackknife_chunks(chunk_elems):
            x = v - np.asarray(t0[name], dtype=np.float64)[None, :]
            ok = np.isfinite(x)
            x = np.where(ok, x, 0.0)
            x2 = x * x
            part = np.stack([ok.sum(axis=0), x.sum(axis=0), x2.sum(axis=0),
                             (x2 * x).sum(axis=0)], axis=-1).astype(np.float64)
            P[name] = part if name not in P else P[name] + part
        return {name: acceleration_from_power_sums(p) for name, p in P.items()}

    def _jackknife_chunks(self, chunk_elems: int):
        """Yield (name, where, values): leave-one-out values of rows ``where`` (file order).

        ``values`` (n, K); ``where`` a slice or an index array into the M rows. The
        moment statistics by the analytic shift ``(S - F_i)/(M - 1)``, the binned ones
        by the prefix-sum index shift (R's ``intrvJack``), CC by the re-ranking rule.
        """
        M = self.M
        if self._moment:
            # row chunks: memory O(chunk), not the (M, 3 or 5) features
            step = max(1, chunk_elems // self._ncol)
            total = None
            for lo in range(0, M, step):
                # the sum over axis 0 adds row after row: carried over the chunks, it
                # has the bits of the sum of all features at once
                Fc = self._moment_features(lo, lo + step)
                if total is not None:
                    Fc[0] += total
                total = Fc.sum(axis=0)
            sq = [f for f in (F_Z2, F_U2, F_E2) if f < total.size]  # sums of squares
            for lo in range(0, M, step):
                S = total[None, :] - self._moment_features(lo, lo + step)
                # one row holding almost all of a sum of squares (uE 1e10 times the
                # others): the total minus that row is rounding; add the rest afresh
                lost = np.flatnonzero((S[:, sq] <= LOST_SHARE * total[sq]).any(axis=1))
                for k in lost[:FRESH_ROWS]:
                    S[k] = self._sums_without(lo + int(k), step)[:S.shape[1]]
                if S.shape[-1] < 5:
                    S = np.concatenate([S, np.zeros((S.shape[0], 5 - S.shape[-1]))], axis=-1)
                for s in self._moment:
                    v = STATISTICS[s.base].finish(S, M - 1)
                    if s.base == "t_z":
                        # S = total - F_i carries the rounding of the total: where the
                        # spread left is within it (one large z left out), the few such
                        # rows get fresh sums of the other M - 1 rows (NaN there when
                        # those have no spread either); many rows: no spread at all
                        var = (S[:, F_Z2] - S[:, F_Z] ** 2 / (M - 1)) / (M - 2)
                        floor = 64 * np.finfo(np.float64).eps * total[F_Z2] / (M - 2)
                        lost = np.flatnonzero(~(var > floor))
                        v = np.where(var > floor, v, np.nan)
                        if 0 < lost.size <= FRESH_ROWS:
                            for k in lost:
                                fresh = self._sums_without(lo + int(k), step)
                                v[k] = STATISTICS[s.base].finish(fresh[None, :], M - 1)[0]
                    yield s.name, slice(lo, lo + S.shape[0]), v[:, None]
        for c in self._binned_conds:
            bins, order, ident, Es, us, gathered, mean = self._bin_prep[c]
            edges = bins.edges
            ej = None
            if bins.scheme == "equal-count":
                try:
                    ej = equal_count_edges(M - 1, bins.n_requested, pop_min=bins.pop_min)
                except InputError:
                    ej = None
            # the leave-one-out shift reads the prefix sums only next to the bin edges:
            # P[e - 1], P[e], P[e + 1] (and P[ej], P[ej + 1]), kept at those positions
            near = [edges, edges - 1, edges + 1] + ([ej, ej + 1] if ej is not None else [])
            pos = np.unique(np.clip(np.concatenate(near), 0, M)).astype(np.int64)
            Pc = np.zeros((pos.size, 6))
            _prefix_at(Es, us, order, gathered, mean, pos, Pc)
            specs = [s for s in self.specs if s.family == "binned" and s.cond == c]
            # R's intrvJack (equal-count; it may hold one bin less when the popMin reduction
            # bites at M - 1); per-bin (vector) statistics keep their N components and, like
            # the other schemes, use the same intervals shifted past the removed point.
            groups = {}
            for s in specs:
                use_ej = ej is not None and (ej.size == edges.size or not s.vector)
                groups.setdefault(use_ej, []).append(s)
            for use_ej, group in groups.items():
                ne = ej.size if use_ej else edges.size
                step = max(1, chunk_elems // (ne * 6))
                for lo in range(0, M, step):
                    i = np.arange(lo, min(lo + step, M))[:, None]
                    if use_ej:
                        EJ = np.broadcast_to(ej, (i.shape[0], ne))
                    else:
                        EJ = edges[None, :] - (edges[None, :] > i)
                    keep = (EJ <= i)[..., None]
                    Fi = _features_at(Es, us, order, gathered, mean, lo, lo + i.shape[0])
                    at = np.searchsorted(pos, EJ)
                    after = np.searchsorted(pos, np.minimum(EJ + 1, M))
                    Sat = np.where(keep, Pc[at], Pc[after] - Fi[:, None, :])
                    Sb = np.diff(Sat, axis=1)
                    n = np.diff(EJ, axis=1).astype(np.float64)
                    # sorted positions -> file rows
                    where = slice(lo, lo + i.shape[0]) if ident else order[lo : lo + i.shape[0]]
                    for s in group:
                        v = STATISTICS[s.base].finish(Sb, n)
                        yield s.name, where, v if s.vector else v[:, None]
        if any(s.family == "rank" for s in self.specs):
            ou, gu, oe, ge = self._rank_prep
            ru = np.empty(M)
            re_ = np.empty(M)
            ru[ou] = average_ranks(gu)
            re_[oe] = average_ranks(ge)
            yield "cc", slice(0, M), spearman_jackknife(ru, re_, ou, gu, oe, ge)[:, None]
