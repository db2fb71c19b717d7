r"""Simulated references (Sim, Sim2) of the statistics without a predefined one.

Paper 000 (Sect. II D 2, Appendix A); methods page: simulated references. Draw
:math:`E^{(k)}_i = u_i\,\epsilon^{(k)}_i` with ε ~ D(0, 1) (D = N(0,1) or the
unit-variance Student :math:`t_s(\nu)`: :mod:`uqx.engine.unit_variance`) using the data's
own uncertainties, compute the statistic with the same binning, and summarise over
:math:`N_{MC}` draws: ``Sim`` = mean and its standard error, ``Sim2`` = the type-7
2.5/97.5 % quantiles. The ζ-scores that hold an estimate against these references, and
the D-sensitivity rule, are :mod:`uqx.inference.zeta`.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import NamedTuple

import dask
import numpy as np
import xarray as xr
from scipy.stats import rankdata

from uqx.dataio.model import InputError, check_sets, iter_checked
from uqx.dataio.schema import SIMULATE_REFERENCE
from uqx.dataio.streaming import ColumnRef, read_rows, streamed_content_key
from uqx.engine import gaussian_sums
from uqx.engine.binning import is_nondecreasing, make_bins, sorted_edges, stable_order
from uqx.engine.copies import cc_scaled, copy_bin_features, copy_moment_features, sim_rows
from uqx.engine.defaults import LEVEL, LONG_SET_ROWS, N_BINS, N_MC, POP_MIN
from uqx.engine.gaussian_sums import cell_layout, gauss_rows, gaussian_plan, unit_moments
from uqx.engine.generators import check_student_nu
from uqx.engine.layout import C_X
from uqx.engine.mctest import N_TEST
from uqx.engine.null_shape import (
    kappa_cs_z2_windows,
    local_windows,
    nu_windows,
    standardised_pools,
    standardised_z,
    standardised_z_local,
)
from uqx.engine.resample import (
    chunked_content_key,
    content_key,
    resolve_seed,
    rows_for_budget,
    seed_sequence,
)
from uqx.engine.resolution import SPREAD_DOWN, TOP_FACTORS, top_segments
from uqx.engine.statistic import (
    STATISTICS,
    BinningConfig,
    parse_stat,
)
from uqx.engine.unit_variance import unit_args
from uqx.progress import compute_tasks

__all__ = [
    "simulate_reference",
    "draw_copies",
    "draw_checked",
    "Member",
    "MemberCopies",
    "prepare_sets",
    "prepare_checked",
    "shared_nulls",
    "DISTRIBUTIONS",
    "top_key",
    "top_suffix",
    "CC_GAMMAS",
]

#: Simulated data sets per task (fixed: part of the definition of the keyed streams;
#: inside a task rows are batched to the memory budget).
SIM_BLOCK = 250

#: Generative distributions: label -> (kind, nu).
DISTRIBUTIONS = {"N": ("normal", None), "T6": ("t", 6.0)}


# ------------------------------------------- copies shared by sets with the same uE
_SHARED = {"on": 0, "lock": threading.Lock(), "blocks": OrderedDict(), "max": 512}


@contextmanager
def shared_nulls(max_blocks: int = 512):
    r"""Reuse the simulated copies of the members that do not look at E.

    The N and :math:`t_s(\nu)` members of the null family (the fitted one too, its ν̂
    on a grid: :func:`uqx.engine.null_shape.nu_on_grid`) draw their copies on streams keyed
    by the content of uE alone (:func:`simulate_reference`), so every data set with the
    same uncertainties, ν and binnings gets the same copies. Inside this context a
    block of copies is simulated once and its statistics (and hook results) are reused
    by the next set that asks for the same block: same seed, uE, member, binnings,
    statistics and hook. The numbers are those of a call without the context, bit for
    bit. A Monte-Carlo study whose sets share their uncertainties (the ``error-rates``
    study draws uE once per cell) pays for those members once per cell.

    Parameters
    ----------
    max_blocks : int, default 512
        Blocks kept (least recently used first out); a block holds the statistics of
        :data:`SIM_BLOCK` copies (a few kB). The store outlives the context (it is
        consulted only inside it), so successive calls of a study reuse it.
    """
    with _SHARED["lock"]:
        _SHARED["on"] += 1
        _SHARED["max"] = int(max_blocks)
    try:
        yield
    finally:
        with _SHARED["lock"]:
            _SHARED["on"] -= 1


def _block_key(ss, specs, dist, nu, seed, dlabel, block, nb, hook, cc_spread=False):
    """Everything a block of copies of an E-free member depends on (None: not shareable)."""
    hook_key = None
    if hook is not None:
        describe = getattr(hook, "cache_key", None)
        if describe is None:
            return None
        hook_key = describe()
    grid = content_key(ss.seg, ss.binid, ss.boff)
    nu = tuple(np.asarray(nu, dtype=np.float64).tolist()) if np.ndim(nu) else float(nu)
    return (int(seed), ss.ukey, str(dlabel), str(dist), nu, int(block), int(nb),
            tuple(s.name for s in specs), ss.bin_cfg, tuple(sorted(ss.conds)), grid, hook_key,
            gaussian_sums.GAUSS_TOL, bool(cc_spread))


def _sim_block(ss, specs, dist, nu, seed, dlabel, block, nb, hook=None, own_key=True,
               nu_local=False, cc_spread=False):
    """Statistics of one keyed block of copies, reused across sets inside shared_nulls().

    ``nu_local``: ``dist="t"`` draws each bin of uE at its window's ν
    (:meth:`_SimSet.segment_nus`), ``nu`` where the set has no windows; a number
    instead of True is the set's ν̂ whose windows are read, and each bin is drawn at the
    heavier of its window's ν and ``nu`` (the heavy end of the statistics tested on both
    sides).
    """
    if dist == "t" and nu_local is not False and nu_local is not None:
        hat = nu if nu_local is True else float(nu_local)
        seg_nu = ss.segment_nus(hat)
        if seg_nu is not None:
            nu = seg_nu if nu_local is True else np.minimum(seg_nu, nu)
    key = None if own_key or not _SHARED["on"] else _block_key(
        ss, specs, dist, nu, seed, dlabel, block, nb, hook, cc_spread)
    if key is not None:
        with _SHARED["lock"]:
            hit = _SHARED["blocks"].get(key)
            if hit is not None:
                _SHARED["blocks"].move_to_end(key)
                return {k: v.copy() for k, v in hit.items()}
    out = _simulate_block(ss, specs, dist, nu, seed, dlabel, block, nb, hook, own_key,
                          cc_spread)
    if key is not None:
        with _SHARED["lock"]:
            _SHARED["blocks"][key] = {k: v.copy() for k, v in out.items()}
            while len(_SHARED["blocks"]) > _SHARED["max"]:
                _SHARED["blocks"].popitem(last=False)
    return out


def _simulate_block(ss, specs, dist, nu, seed, dlabel, block, nb, hook=None, own_key=True,
                    cc_spread=False):
    r"""Statistics of ``nb`` simulated data sets (one keyed block) -> {name: (nb,)}.

    The block's copies are drawn on one keyed xoshiro256** stream,
    ``seed_sequence(seed, "sim", key, member label, block)`` (``key``: the content of
    (E, uE) for the data's own z-scores, ``own_key``; of uE alone for N and
    :math:`t_s(\nu)`, which look at E through ν at most), copy after copy, each
    laid out in the stable uE order (ε is i.i.d., so any fixed layout gives calibrated
    copies :math:`E = u\,\epsilon`). :func:`sim_rows` draws, bins and sums a copy in
    one pass without storing ε; only the copies that a rank statistic or the
    extrapolation hook needs keep ε, in batches sized to
    :data:`uqx.engine.resample.MEMORY_BUDGET` (about 12 float64 temporaries per value). The
    other copies of a member whose per-bin sums are close to jointly normal
    (:meth:`_SimSet.gaussian`) are drawn as those sums, on the same stream after the
    copies that keep ε (:func:`uqx.engine.gaussian_sums.gauss_rows`, O(bins) a copy).
    The stream is consumed in the same order whatever the batches, so the numbers do
    not depend on the budget.
    """
    local = dist == "data" and ss.pool_local is not None
    # local: resampled within the windows of bins of uE (sim_rows codes 3 and 5)
    gen = unit_args(
        seed_sequence(seed, "sim", ss.key if own_key else ss.ukey, dlabel, block), dist, nu,
        ss.pool_local if local else ss.pool, windows=ss.win if local else None)
    state = gen.state
    rank = any(s.family == "rank" for s in specs)
    first = block * SIM_BLOCK  # index of the block's first copy in the whole stream
    n_hook = 0 if hook is None else max(0, min(nb, hook.n_copies - first))
    rows = rows_for_budget(12 * 8 * ss.M)
    parts, hooked = [], []
    lo = 0
    plan = None if rank else ss.gaussian(dist, nu, local)
    top = first < N_TEST  # the copies of the tests keep their sums (BinnedCopies)
    sweep = None if rank or n_hook == 0 else hook.partitions(ss.u_sorted)
    plan_hook = None if sweep is None else ss.gaussian(dist, nu, local, sweep)
    while lo < nb:
        # copies as joint-normal sums: the hook's too when its sweep allows (its
        # intercepts from the sums over the ranges of the sweep), then the rest
        p = plan_hook if lo < n_hook else plan
        if p is not None:
            k = (n_hook if lo < n_hook else nb) - lo
            out_seg = np.zeros((k, ss.seg.size - 1, 4))
            out_bin = np.zeros((k, ss.n_extra, 4))
            out_range = np.zeros((k, p["range_u2"].size if lo < n_hook else 0, 4))
            gauss_rows(state, p["mean"], p["factor"], p["range"], p["seg"], p["bin"],
                       out_range, out_seg, out_bin)
            parts.append(_sums_stats(out_seg, out_bin, None, ss, specs, top))
            if lo < n_hook:
                hooked.append(hook.from_range_sums(out_range, p["range_u2"], p["bounds"]))
            lo += k
            continue
        if rank or lo < n_hook:  # these copies keep ε
            k = min(rows, nb - lo) if rank else min(rows, n_hook - lo)
            buf = np.empty((k, ss.M))
        else:
            k, buf = nb - lo, np.empty((0, ss.M))
        out_seg = np.zeros((k, ss.seg.size - 1, 4))
        out_bin = np.zeros((k, ss.n_extra, 4))
        sim_rows(*gen, ss.u_sorted, ss.seg, ss.binid, ss.boff, out_seg, out_bin, buf,
                 ss.win if local else _NO_WINDOWS)
        parts.append(_sums_stats(out_seg, out_bin, buf if rank else None, ss, specs, top,
                                 cc_spread))
        if lo < n_hook:  # the same draws, reused
            hooked.append(hook(buf[: n_hook - lo]))
        lo += k
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if hooked:
        out["_hook"] = np.concatenate(hooked)
    return out


# ------------------------------------------------- streamed route: moment statistics
#: Rows of a group of the streamed moment route (part of its stream definition).
SIM_GROUP_ROWS = 1 << 20


def _u_sums(col_u, lo, hi):
    """Σu² and Σ ln u² over rows lo:hi."""
    u2 = read_rows(col_u.arr, lo, hi) ** 2
    return np.array([u2.sum(), np.log(u2).sum()])


def _stream_pool(E, u, M):
    r"""Build the data's z-scores centred and at unit mean square (:func:`standardised_z`).

    Group by group (8 bytes a row: the ``"data"`` member resamples the whole set).
    """
    pool = np.empty(M)
    t = 0.0
    for lo in range(0, M, SIM_GROUP_ROWS):
        hi = min(lo + SIM_GROUP_ROWS, M)
        z = read_rows(E, lo, hi) / read_rows(u, lo, hi)
        pool[lo:hi] = z
        t += float(np.sum(z))
    pool -= t / M  # centred, as uqx.engine.null_shape.standardised_z
    s = 0.0
    for lo in range(0, M, SIM_GROUP_ROWS):
        hi = min(lo + SIM_GROUP_ROWS, M)
        s += float(np.sum(pool[lo:hi] * pool[lo:hi]))
    pool /= np.sqrt(s / M)
    return pool


def _moment_group(col_u, col_pool, lo, hi, seed, key, dlabel, block, g, nb, dist, nu):
    """Sum (nb, 4) the block's copies over rows lo:hi (group g), in file order."""
    u = read_rows(col_u.arr, lo, hi)
    ss = seed_sequence(seed, "sim", key, dlabel, block, "rows", g)
    gen = unit_args(ss, dist, nu, col_pool.arr)
    out = np.zeros((nb, 1, 4))
    sim_rows(*gen, u, np.array([0, hi - lo], dtype=np.int64),
             np.zeros((0, 1), np.int32), np.zeros(0, np.int64), out, np.zeros((nb, 0, 4)),
             np.empty((0, hi - lo)), _NO_WINDOWS)
    return out[:, 0]


def _moment_block(parts, usums, specs, M):
    """Statistics of a block's copies from the group sums, added in group order."""
    tot = parts[0]
    for p in parts[1:]:
        tot = tot + p
    us = usums[0]
    for p in usums[1:]:
        us = us + p
    S = copy_moment_features(tot, us[0], us[1])
    return {s.name: STATISTICS[s.base].finish(S, M) for s in specs}


def _moment_tasks(ds, i, specs, dist, nu, seed, dlabel, n_mc, own_key=True):
    """Lazy blocks of set i by the streamed moment route (nothing loaded but one group).

    Copy k of block b is drawn in file order, group by group: rows of group g on the
    keyed stream ``seed_sequence(seed, "sim", key, label, b, "rows", g)``, copy after
    copy; its sums (Σε², Σ(uε)², Σuε, Σε) are added in group order. The same code runs
    on numpy and on dask columns, so both give the same bits.
    """
    m = int(ds["M"].values[i])
    E, u = ds["E"].data[i, :m], ds["uE"].data[i, :m]
    key = streamed_content_key(E, u, m, SIM_GROUP_ROWS, columns=None if own_key else (u,))
    groups = [(lo, min(lo + SIM_GROUP_ROWS, m)) for lo in range(0, m, SIM_GROUP_ROWS)]
    col_u = ColumnRef(u)
    col_pool = ColumnRef(_stream_pool(E, u, m) if dist == "data" else None)
    usums = [dask.delayed(_u_sums, pure=False)(col_u, lo, hi) for lo, hi in groups]
    blocks = []
    for b in range(-(-n_mc // SIM_BLOCK)):
        nb = min(SIM_BLOCK, n_mc - b * SIM_BLOCK)
        parts = [dask.delayed(_moment_group, pure=False)(col_u, col_pool, lo, hi, seed, key,
                                                         dlabel, b, g, nb, dist, nu)
                 for g, (lo, hi) in enumerate(groups)]
        blocks.append(dask.delayed(_moment_block, pure=False)(parts, usums, specs, m))
    return blocks


def _sums_stats(out_seg, out_bin, eps, ss, specs, top=False, cc_spread=False):
    r"""Statistics of the copies from the kernel's sums (and ε for the rank statistic).

    With ``top``, also the per-bin sums of every binning of a binned statistic (keys
    :func:`top_key`) and, with ``cc_spread``, CC of the copies under the spread
    alternative :math:`u = c\,u_E^\gamma` at :data:`CC_GAMMAS` (key :data:`CC_SPREAD_KEY`):
    the errors of a copy become :math:`u_E^{\gamma}\epsilon` up to a constant that ranks
    do not see.
    """
    out = {}
    tot = out_seg.sum(axis=1)  # (k, 4): Σε², Σ(uε)², Σuε, Σε
    moment = [s for s in specs if s.family == "moment"]
    if moment:
        S = copy_moment_features(tot, ss.sum_u2, ss.sum_lnu2)
        for s in moment:
            out[s.name] = STATISTICS[s.base].finish(S, ss.M)
    for cond, (lo, hi, u2, n) in ss.layout.items():
        sums = out_seg if lo is None else out_bin[:, lo:hi]
        S = copy_bin_features(sums, u2, n, tot[:, C_X], ss.M)
        binned = [s for s in specs if s.family == "binned" and s.cond == cond]
        for s in binned:
            out[s.name] = STATISTICS[s.base].finish(S, n)
        if binned and top and (lo is not None or cond == "uE"):
            # the per-bin sums, from which the binned statistics up to a factor and under
            # the alternatives (uE too small by f in the top bins, ...) are computed
            # where a test or a resolution search asks for them (BinnedCopies)
            out[top_key(cond)] = np.array(sums, dtype=np.float64)
    if any(s.family == "rank" for s in specs):
        out["cc"] = cc_scaled(eps, ss.u_sorted, ss.ru)
        if top and cc_spread:  # CC of the same copies under u = c uE^gamma (resolution)
            out[CC_SPREAD_KEY] = np.stack([cc_scaled(eps, ss.u_sorted ** g, ss.ru)
                                           for g in CC_GAMMAS], axis=-1)
    return out


def _top_vars(tops, layouts, suffix=""):
    """Return the copies' per-bin sums of one binning and its layout, padded to the most bins.

    ``suffix``: '' for the bins of uE, ``_X`` or ``_V`` for a feature's
    (:func:`top_suffix`).
    """
    S = max(t.shape[1] for t in tops if t is not None)
    k = max(t.shape[0] for t in tops if t is not None)
    n_sets = len(tops)
    sums = np.full((n_sets, k, S, 4), np.nan)
    u2, n = np.full((n_sets, S), np.nan), np.full((n_sets, S), np.nan)
    top, M = np.zeros((n_sets, S), dtype=bool), np.zeros(n_sets, dtype=np.int64)
    n_bins, n_top = np.zeros(n_sets, dtype=np.int64), np.zeros(n_sets, dtype=np.int64)
    for i, (t, lay) in enumerate(zip(tops, layouts, strict=True)):
        if t is None:
            continue
        s_i = t.shape[1]
        sums[i, : t.shape[0], :s_i] = t
        u2[i, :s_i], n[i, :s_i], top[i, :s_i], M[i] = lay
        n_bins[i], n_top[i] = s_i, t.shape[0]
    return SIMULATE_REFERENCE.data_vars({
        f"top_sums{suffix}": sums, f"top_u2{suffix}": u2, f"top_count{suffix}": n,
        f"top_bins{suffix}": top, f"top_M{suffix}": M, f"top_n_bins{suffix}": n_bins,
        f"top_n_copies{suffix}": n_top,
    })


def _summarise_sims(computed, names, n_mc, level, keep_draws, layouts=None) -> xr.Dataset:
    """Sim (mean, MC standard error) and Sim2 (quantile interval) of the simulated values.

    ``layouts`` (one per set: {binning: (Σu², counts, top bins, M)}): the per-bin sums
    that the copies of the tests kept (:func:`top_key`) are returned with them
    (:func:`_top_vars`, one group of variables per binning).
    """
    shape = (len(computed), len(names))
    res = {k: np.full(shape, np.nan) for k in ("reference", "reference_se", "sim2_low",
                                                "sim2_high")}
    n_nan = np.zeros(shape, dtype=np.int64)
    draws = np.full(shape + (n_mc,), np.nan) if keep_draws else None
    for i, blocks in enumerate(computed):
        for j, name in enumerate(names):
            v = np.concatenate([b[name] for b in blocks])
            # a copy's statistic can be ±inf (t_z of resampled z-scores that are all
            # equal): counted with the NaN, kept out of the mean, spread and quantiles
            ok = v[np.isfinite(v)]
            n_nan[i, j] = v.size - ok.size
            if ok.size:
                res["reference"][i, j] = ok.mean()
                res["reference_se"][i, j] = ok.std(ddof=1) / np.sqrt(ok.size)
                res["sim2_low"][i, j], res["sim2_high"][i, j] = np.quantile(
                    ok, [(1 - level) / 2, (1 + level) / 2], method="linear")
            if draws is not None:
                draws[i, j] = v
    data = SIMULATE_REFERENCE.data_vars({**res, "n_nan": n_nan})
    if draws is not None:
        data["draws"] = SIMULATE_REFERENCE.variable("draws", draws)
        conds = sorted({c for lay in (layouts or []) for c in lay})
        found = False
        if any(CC_SPREAD_KEY in b for blocks in computed for b in blocks):
            k = max(sum(b[CC_SPREAD_KEY].shape[0] for b in blocks if CC_SPREAD_KEY in b)
                    for blocks in computed)
            cc = np.full((len(computed), min(k, N_TEST), CC_GAMMAS.size), np.nan)
            for i, blocks in enumerate(computed):
                parts = [b[CC_SPREAD_KEY] for b in blocks if CC_SPREAD_KEY in b]
                if parts:
                    v = np.concatenate(parts)[:N_TEST]
                    cc[i, :v.shape[0]] = v
            data["cc_spread"] = SIMULATE_REFERENCE.variable("cc_spread", cc)
            found = True
        for cond in conds:
            key = top_key(cond)
            tops = [np.concatenate([b[key] for b in blocks if key in b])[:N_TEST]
                    if cond in lay and any(key in b for b in blocks) else None
                    for blocks, lay in zip(computed, layouts, strict=True)]
            if any(t is not None for t in tops):
                data.update(_top_vars(tops, [lay.get(cond) for lay in layouts],
                                      top_suffix(cond)))
                found = True
        if found:
            return xr.Dataset(data, coords={"stat": names, "top_factor": TOP_FACTORS,
                                            "cc_gamma": CC_GAMMAS})
    return xr.Dataset(data, coords={"stat": names})


_NO_WINDOWS = np.zeros((0, 2), dtype=np.int64)

#: Rows of a chunk of the content keys of a prepared set (no copy of a whole column).
_KEY_CHUNK = 1 << 20


def _content_key(*arrays):
    """:func:`uqx.engine.resample.content_key` of the arrays, hashed chunk by chunk."""
    return chunked_content_key(
        (a[lo:lo + _KEY_CHUNK] for lo in range(0, a.shape[0], _KEY_CHUNK)) for a in arrays)


class _SquaredU:
    """The sums of u² (whole set, segments, bins) and of ln u² that a prepared set needs.

    ``chunked`` False: one array of u² (8 bytes a row, then ln u² in place), summed by
    NumPy's whole-array reductions (the bits of every earlier version). ``chunked`` True
    (sets beyond ``LONG_SET_ROWS`` in content order: nothing of size M held): u² made
    and summed 2^20 rows at a time, the partial sums added in order (the same sums up to
    the summation order).
    """

    _ROWS = 1 << 20

    def __init__(self, u, chunked):
        self.u, self.chunked = u, chunked
        self.u2 = None if chunked else u * u

    def _chunks(self, lo=0, hi=None):
        hi = self.u.shape[0] if hi is None else hi
        for a in range(lo, hi, self._ROWS):
            b = min(a + self._ROWS, hi)
            yield a, b, self.u[a:b] * self.u[a:b]

    def total(self):
        if not self.chunked:
            return float(np.sum(self.u2))
        return float(sum(np.sum(c) for *_, c in self._chunks()))

    def segment_sums(self, edges):
        """Σu² over ``[edges[j], edges[j + 1])`` (index intervals of the uE order)."""
        if not self.chunked:
            return np.add.reduceat(self.u2, edges[:-1])
        # a segment of at most 2^20 rows is one piece: reduceat's bits
        return np.array([sum((np.add.reduceat(c, [0])[0] for *_, c in self._chunks(a, b)),
                             0.0) if b > a else 0.0
                         for a, b in zip(edges[:-1], edges[1:], strict=True)])

    def bin_sums(self, bin_of, n):
        """Σu² per bin of a bin index per row."""
        if not self.chunked:
            return np.bincount(bin_of, self.u2, n)
        out = np.zeros(n)
        for a, b, c in self._chunks():
            out += np.bincount(bin_of[a:b], c, n)
        return out

    def log_total(self):
        """Σ ln u² (the whole-set array, when held, is overwritten: its last use)."""
        if not self.chunked:
            np.log(self.u2, out=self.u2)
            return float(np.sum(self.u2))
        return float(sum(np.sum(np.log(c, out=c)) for *_, c in self._chunks()))


#: Key of the copies' per-bin sums on uE (``_sums_stats``); :func:`top_key` for X, V.
TOP_KEY = "@top"
#: Key of CC of the copies under the spread alternative (``_sums_stats``).
CC_SPREAD_KEY = "@cc_spread"
#: Exponents γ < 1 of u = c uE^γ at which CC's copies are computed for its resolution:
#: every fourth of :data:`uqx.engine.resolution.SPREAD_DOWN` (uE varying too much, down
#: to uE saying nothing of which predictions are less reliable).
CC_GAMMAS = SPREAD_DOWN[3::4]


def top_key(cond: str) -> str:
    """Key of the copies' per-bin sums of the binning on ``cond`` (:data:`TOP_KEY` for uE)."""
    return TOP_KEY if cond == "uE" else f"{TOP_KEY}_{cond}"


def top_suffix(cond: str) -> str:
    """Suffix of the variables of :func:`simulate_reference` holding those sums ('' for uE)."""
    return "" if cond == "uE" else f"_{cond}"


class _SimSet:
    """What the simulation of one data set needs: uE in stable order and the binnings.

    Built once per data set and shared by every member and copy (:func:`prepare_sets`):
    one stable sort of uE, and the bins as index intervals of that order (``seg``, for
    the bins on uE) or as a bin index per position (``binid``, for X / V). ``layout[c]``
    = (lo, hi, Σu² per bin, n per bin): ``lo = None`` for the segments, else the slice
    of the kernel's extra bins.

    With ``pool``, the ``"data"`` member's z-scores: ``pool`` (the whole set's,
    :func:`uqx.engine.null_shape.standardised_z`, in file order) and ``pool_local``
    (each window of bins of uE standardised on its own,
    :func:`~uqx.engine.null_shape.standardised_z_local`, in the uE order; None without
    bins on uE). When uE is already in ascending order and the set is longer than
    :data:`uqx.engine.defaults.LONG_SET_ROWS`, both are
    :class:`~uqx.engine.null_shape.StandardisedPool` views of E and uE whose values are
    computed when drawn (the same bits); otherwise arrays.

    Memory: when uE is in ascending order (rows in content order,
    :func:`uqx.engine.binning.is_nondecreasing`) the sort is the identity and is never
    built: ``u_sorted`` is the caller's uE itself; beyond ``LONG_SET_ROWS`` nothing of
    size M is held (but a bin index per row, 4 bytes, for each binning on X or V), and
    building takes one array of M floats at a time (u², then E/uE); shorter sets keep
    the two pools (8 bytes a row each). Otherwise: the sorted uE and the two pools
    (8 bytes a row each), and the sort order (8 bytes a row) while building. A drawn
    value of a pool computed when drawn reads E and uE (two random reads instead of
    one): full draws of the ``"data"`` member cost up to 1.6 times as much on sets far
    larger than the caches (heavy tails, where the joint-normal sums do not apply).
    """

    def __init__(self, sd, conds, bin_cfg, pool=False):

        self.name, self.M, self.bin_cfg, self.conds = sd.name, sd.M, bin_cfg, frozenset(conds)
        self.key = _content_key(sd.E, sd.uE)
        self.ukey = _content_key(sd.uE)  # the members that never look at E
        ordered = is_nondecreasing(sd.uE)  # the stable order is the identity
        order = None if ordered else stable_order(sd.uE)
        self.u_sorted = (np.ascontiguousarray(sd.uE, dtype=np.float64) if ordered
                         else np.ascontiguousarray(sd.uE[order]))
        self._ru = None
        self._cells, self._plans = {}, {}  # joint-normal copies (gaussian())
        values = {"uE": sd.uE, "X": sd.X, "V": sd.V}
        for c in sorted(self.conds):
            if values.get(c) is None:
                raise InputError(f"{sd.name}: statistic needs variable {c!r}, absent here")
        self.seg = np.array([0, sd.M], dtype=np.int64)
        u_bins = None  # (order or None for index intervals of the uE order, edges)
        if "uE" in self.conds:
            if ordered:  # index intervals of uE itself: no order array
                u_bins = (None, np.asarray(sorted_edges(
                    self.u_sorted, bin_cfg.n_bins, scheme=bin_cfg.scheme, pop_min=bin_cfg.pop_min,
                    log=bin_cfg.log)[0], dtype=np.int64))
            else:
                b = make_bins(sd.uE, bin_cfg.n_bins, scheme=bin_cfg.scheme,
                              pop_min=bin_cfg.pop_min, log=bin_cfg.log, order=order)
                same = np.array_equal(b.order, order)  # index intervals of the uE order
                u_bins = (None if same else b.order, np.asarray(b.edges, dtype=np.int64))
                b = None
        u2 = _SquaredU(self.u_sorted, chunked=ordered and self.M > LONG_SET_ROWS)
        self.sum_u2 = u2.total()
        where = None  # file index -> position in uE order: built only for bins on X / V
        self.layout, ids, offs, off = {}, [], [], 0
        for c in sorted(self.conds):
            if c == "uE":
                border, edges = u_bins
            else:
                b = make_bins(values[c], bin_cfg.n_bins, scheme=bin_cfg.scheme,
                              pop_min=bin_cfg.pop_min, log=bin_cfg.log)
                border, edges = b.order, np.asarray(b.edges, dtype=np.int64)
                b = None
            n = np.diff(edges).astype(np.float64)
            if border is None:  # index intervals of the uE order: the segments
                self.seg = np.ascontiguousarray(edges)
                self.layout[c] = (None, None, u2.segment_sums(edges), n)
                continue
            pos = border
            if not ordered:
                if where is None:
                    where = np.empty(sd.M, dtype=np.int64)
                    where[order] = np.arange(sd.M)
                pos = where[border]
            bin_of = np.empty(sd.M, dtype=np.int32)
            bin_of[pos] = np.repeat(np.arange(n.size, dtype=np.int32), np.diff(edges))
            ids.append(bin_of)
            offs.append(off)
            self.layout[c] = (off, off + n.size, u2.bin_sums(bin_of, n.size), n)
            off += n.size
        pos = border = where = u_bins = None  # free before the log pass
        self.sum_lnu2 = u2.log_total()  # ln u² in place of u² (its last use)
        del u2
        self.n_extra = off
        self.binid = np.ascontiguousarray(np.stack(ids)) if ids else np.zeros((0, 1), np.int32)
        self.boff = np.array(offs, dtype=np.int64)
        # the "data" member: the whole set's standardised z-scores, and within windows of
        # bins of uE their own (consistency's null), in the uE order already taken
        self.pool = self.pool_local = None
        self.win = _NO_WINDOWS
        self.kappa_windows = None  # (κ_CS of Z², points) per window of bins of uE
        self.win_groups = None
        self._seg_nus = {}  # ν̂ -> the fitted member's ν per segment (segment_nus)
        if pool:
            groups = None
            if self.seg.size > 2:
                groups, self.win = local_windows(self.seg)
                self.win_groups = groups
            if ordered and self.M > LONG_SET_ROWS:  # computed when drawn, from E and uE
                self.pool, self.pool_local = standardised_pools(sd.E, sd.uE, groups)
                if groups is not None:
                    self.kappa_windows = kappa_cs_z2_windows(sd.E, self.u_sorted, self.seg,
                                                             groups)
            else:  # stored: one random read a draw, not two (the same values)
                self.pool = standardised_z(sd.E, sd.uE)
                if groups is not None:
                    e = sd.E if ordered else sd.E[order]
                    self.kappa_windows = kappa_cs_z2_windows(e, self.u_sorted, self.seg,
                                                             groups)
                    self.pool_local = standardised_z_local(e / self.u_sorted, groups)
                    e = None
        order = None

    def segment_nus(self, nu_hat):
        """ν of the fitted member on every segment: its window's, or None (one ν̂).

        :func:`uqx.engine.null_shape.nu_windows` of :attr:`kappa_windows` (the windows
        of the ``"data"`` member), each bin of uE taking its window's ν; None without
        windows or when ν̂ fits every window.
        """
        if self.kappa_windows is None:
            return None
        key = float(nu_hat)
        if key not in self._seg_nus:  # asked by every block of copies: decided once

            nu = nu_windows(*self.kappa_windows, key)
            if nu is not None:
                k = np.searchsorted(self.win_groups, self.seg[:-1], side="right") - 1
                nu = np.ascontiguousarray(nu[k])
            self._seg_nus[key] = nu
        return self._seg_nus[key]

    def gaussian(self, dist, nu, local, sweep=None):
        """Return the joint-normal plan of this set's copies under a member, or None.

        :func:`uqx.engine.gaussian_sums.gaussian_plan` on the cells of the segments, the
        other binnings and the partitions of ``sweep`` (the bins of an extrapolation
        sweep in the uE order, :meth:`uqx.inference.extrapolate.null.NullHook.partitions`,
        whose every bin must then meet the criterion too), with the member's moments
        (the local windows' own for the data resampled within bins of uE); cached per
        member and sweep. None when a component of the sums in some bin is too skewed
        for the normal law (small bins, heavy tails: those copies are drawn in full).

        Returns
        -------
        dict or None
            ``mean``, ``factor`` (:func:`~uqx.engine.gaussian_sums.gaussian_plan`) and the
            layout of :func:`~uqx.engine.gaussian_sums.cell_layout`.
        """
        tol = gaussian_sums.GAUSS_TOL  # read at the call (benchmarks set it)
        parts = () if sweep is None else tuple(np.asarray(e, dtype=np.int64) for e in sweep)
        skey = content_key(*parts) if parts else None
        per_seg = dist == "t" and np.ndim(nu) > 0
        nu_key = (tuple(np.asarray(nu, dtype=np.float64).tolist()) if per_seg
                  else float(nu) if dist == "t" else None)
        key = (dist, nu_key, bool(local), tol, skey)
        if key not in self._plans:
            lay = self._cells.get(skey)
            if lay is None:
                bounds = np.unique(np.concatenate(parts)) if parts else None
                lay = self._cells[skey] = cell_layout(self.u_sorted, self.seg, self.binid,
                                                      self.boff, bounds)
            if dist == "data":
                mom = unit_moments("data", pool=self.pool_local if local else self.pool,
                                   windows=self.win if local else None)
            elif per_seg:  # one row per segment; none when a segment's are not finite
                rows = [unit_moments(dist, v) for v in np.asarray(nu, dtype=np.float64)]
                mom = None if any(r is None for r in rows) else np.stack(rows)
            else:
                mom = unit_moments(dist, nu)
            plan = gaussian_plan(lay, mom, n_bins_total=self.n_extra, partitions=parts,
                                 tol=tol)
            self._plans[key] = None if plan is None else {
                "mean": plan[0], "factor": plan[1], **lay}
        return self._plans[key]

    @property
    def ru(self):
        """Centred average ranks of the sorted uE (the rank statistic only)."""
        if self._ru is None:

            self._ru = rankdata(self.u_sorted) - (self.M + 1) / 2.0
        return self._ru

    def fits(self, conds, bin_cfg, pool) -> bool:
        """Whether this preparation serves a call with these binnings and pool."""
        return self.bin_cfg == bin_cfg and self.conds == frozenset(conds) and (
            not pool or self.pool is not None)

    def unbinned(self):
        """Return the same set without bins, for moment statistics alone (nothing copied).

        Shares the sorted uE, its sums and keys: what a preparation with no binning
        would hold, bit for bit, without a second sort of uE.
        """
        view = copy.copy(self)
        view.conds, view.layout, view.n_extra = frozenset(), {}, 0
        view.seg = np.array([0, self.M], dtype=np.int64)
        view.pool_local = None  # one segment: the whole set's z-scores
        view.kappa_windows = view.win_groups = None  # and one ν (no windows)
        view.binid = np.zeros((0, 1), np.int32)
        view.boff = np.zeros(0, dtype=np.int64)
        view._cells, view._plans = {}, {}
        return view


def _binned_conds(specs):
    return {s.cond for s in specs if s.family == "binned"}


def prepare_sets(ds, stats, *, bins: int = N_BINS, binning: str = "equal-count",
                 pop_min: int = POP_MIN, pool: bool = False) -> list:
    """Sort and bin each data set once for several :func:`simulate_reference` calls.

    One stable sort of uE per set and one set of bins (index intervals of that order
    for uE, a bin index per position for X / V) shared by every member and copy; with
    ``pool`` also the standardised z-scores of the ``"data"`` member
    (:func:`uqx.engine.null_shape.standardised_z`, and
    :func:`~uqx.engine.null_shape.standardised_z_local` within windows of the bins of
    uE); for long sets in content order, as centres and scales applied to E/uE when a
    value is drawn (:class:`uqx.engine.null_shape.StandardisedPool`). Pass the result as
    ``prepared=`` with the same ``stats`` and binning.

    Memory: a set whose uE is already in ascending order (rows in content order:
    :func:`uqx.engine.binning.is_nondecreasing`) is read as it is, without a sort order;
    beyond :data:`uqx.engine.defaults.LONG_SET_ROWS` rows nothing of size M is held (but
    a bin index per row, 4 bytes, for each binning on X or V), and 8 bytes a row are
    taken while it is prepared (u², then E/uE); shorter sets keep the pools. Otherwise
    the sorted uE (8 bytes a row) and, with ``pool``, the whole set's z-scores and
    (with bins on uE) the windows' in that order (8 bytes a row each) are held, and the
    sort order (8 bytes a row) while it is prepared.

    Parameters
    ----------
    ds : xarray.Dataset
        Input data.
    stats : sequence of str
        The statistics to simulate.
    bins, binning, pop_min : int, str, int
        Binning of the binned statistics.
    pool : bool, default False
        Also keep the standardised z-scores (the ``"data"`` member).

    Returns
    -------
    list
        One prepared set per data set.
    """
    return prepare_checked(check_sets(ds), [parse_stat(s) for s in stats],
                           BinningConfig(bins, binning, pop_min), pool=pool)


def prepare_checked(checked, specs, bin_cfg: BinningConfig, *, pool: bool = False) -> list:
    """Prepare checked sets for parsed statistics: :func:`prepare_sets` past its checks."""
    return [_SimSet(sd, _binned_conds(specs), bin_cfg, pool) for sd in iter_checked(checked)]


def _sorted_tasks(ds, specs, bin_cfg, dist, nu, seed, dlabel, n_mc, n_blocks, hooks, prepared,
                  own_key=True, nu_local=False, cc_spread=False):
    """Lazy blocks of every set by the route in uE order (binned, rank, hooks)."""
    sets = list(iter_checked(ds))
    conds = _binned_conds(specs)
    per_set = np.ndim(nu) > 0
    pool = dist == "data"
    windows = nu_local is not False and nu_local is not None
    heavy = windows and nu_local is not True  # one ν̂ per set: keep the bins of uE
    if (not conds and not heavy and prepared is not None and len(prepared) == len(sets)
            and all(not pool or p.pool is not None for p in prepared)):
        prepared = [p.unbinned() for p in prepared]  # moment statistics: no second sort
    elif heavy and prepared is not None and len(prepared) == len(sets):
        pass  # the caller's bins of uE and windows: the moment statistics read no bins
    elif prepared is None or len(prepared) != len(sets) or not all(
            p.fits(conds, bin_cfg, pool or windows) for p in prepared):
        prepared = [_SimSet(sd, conds, bin_cfg, pool or windows) for sd in sets]
    # the arguments bound in a partial: dask would otherwise walk them for collections
    tasks = [
        [dask.delayed(partial(_sim_block, ss, specs, dist, float(nu[i]) if per_set else nu,
                              seed, dlabel, b, min(SIM_BLOCK, n_mc - b * SIM_BLOCK), hook,
                              own_key, float(nu_local[i]) if heavy else nu_local,
                              cc_spread))()
         for b in range(n_blocks)]
        for i, (ss, hook) in enumerate(zip(prepared, hooks, strict=True))
    ]
    return tasks, prepared


def _top_layout(ss):
    """{cond: (Σu², counts, top bins, M)} of the binnings of a prepared set.

    The top bins of uE are those above its 90th percentile (:func:`top_segments` of the
    segments); of X or V, those above the feature's 90th percentile (the bins in the
    feature's order).
    """
    out = {}
    for cond, (lo, _, u2, n) in ss.layout.items():
        if cond == "uE" and lo is None:
            out[cond] = (u2, n, top_segments(ss.seg), ss.M)
        elif lo is not None:
            edges = np.r_[0, np.cumsum(n)].astype(np.int64)
            out[cond] = (u2, n, top_segments(edges), ss.M)
    return out


def simulate_reference(
    ds,
    stats: Sequence[str] = ("cc", "ence", "zmse"),
    *,
    dist: str = "normal",
    nu: float = 6.0,
    n_mc: int = N_MC,
    seed: int | None = None,
    bins: int = N_BINS,
    binning: str = "equal-count",
    pop_min: int = POP_MIN,
    level: float = LEVEL,
    keep_draws: bool = False,
    scheduler=None,
    num_workers: int | None = None,
    progress: bool = False,
) -> xr.Dataset:
    r"""Simulate reference values of statistics (paper 000 Sect. II D 2).

    Methods page: simulated references.

    For k = 1..N_MC: :math:`E^{(k)} = u \odot \epsilon^{(k)}`, ε ~ D, statistic
    :math:`\tilde\theta_k` with the same binning as the data;
    :math:`\tilde\theta_{ref} = \overline{\tilde\theta_k}`,
    :math:`u(\tilde\theta_{ref}) = \mathrm{sd}(\tilde\theta_k)/\sqrt{N_{MC}}`, and the
    ``Sim2`` interval = type-7 quantiles at :math:`(1 \mp level)/2`.

    Parameters
    ----------
    ds : xarray.Dataset
        Input data set(s); only ``uE`` (and X/V for binning) are used.
    stats : sequence of str
        Statistic names (as for :func:`uqx.bootstrap`).
    dist : {"normal", "t", "data"}
        Generative distribution; ``"t"`` is the unit-variance Student :math:`t_s(\nu)`,
        ``"data"`` each set's own z-scores at unit mean square, resampled with
        replacement (:func:`uqx.engine.null_shape.standardised_z`).
    nu : float, default 6
        Degrees of freedom of ``"t"`` (must be > 2; ``inf``: the normal).
    n_mc : int, default 10000
        Number of simulated data sets.
    seed : int, optional
        Root seed of the keyed streams (drawn and recorded when None).
    bins, binning, pop_min : int, str, int
        Binning of the binned statistics, as for the data (default 20 equal-count bins,
        at least 30 points per bin).
    level : float, default 0.95
        Level of the Sim2 quantile interval.
    keep_draws : bool, default False
        Also return the simulated values (``draws`` over ``mc``).
    scheduler, num_workers
        Dask scheduler (default threads) and its workers; the numbers do not depend on
        them.
    progress : bool
        Progress bar on stderr (a terminal only, :func:`uqx.progress.progress_bar`).

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``stat``): ``reference``, ``reference_se``, ``sim2_low``,
        ``sim2_high``, ``n_nan`` [, ``draws`` over ``mc``; with them and binned
        statistics on uE, the per-bin sums of the copies of the tests, ``top_sums``
        and the bins' layout, from which :class:`uqx.engine.alternative.BinnedCopies`
        computes the local alternative of consistency].

    See Also
    --------
    draw_copies : the copy drawer under this function and under the Monte-Carlo tests of
        :func:`uqx.validate` (one member of the null family, with the sort, bins and
        streams shared between members).

    Notes
    -----
    **Moment statistics only** (no hooks): streamed out of core
    (:func:`_moment_tasks`). Copy k is drawn in file order, group by group of
    :data:`SIM_GROUP_ROWS` rows, on the keyed streams ``seed_sequence(seed, "sim",
    content key, label, k // SIM_BLOCK, "rows", g)``; a task reads only its group's uE
    (dask columns are read chunk by chunk: a lazily opened NetCDF is never loaded), and
    the sums are added in group order, so numpy and dask inputs give the same bits.
    Memory: O(group) per task, plus the z-scores for ``"data"`` (8 bytes a row).

    **Otherwise** (binned or rank statistics, hooks): the set is loaded and copy k is
    drawn on ``seed_sequence(seed, "sim", content key, label, k // SIM_BLOCK)``, copy
    after copy within a block, laid out in the stable uE order, binned and summed in the
    same pass (:func:`sim_rows`). Memory (:func:`prepare_sets`): nothing of size M when
    uE is already in ascending order and the set is longer than
    :data:`uqx.engine.defaults.LONG_SET_ROWS` (the rows in content order: the ``"data"``
    member's values are computed from E and uE when drawn,
    :class:`uqx.engine.null_shape.StandardisedPool`), else uE in sort order and, for
    ``"data"``, its z-scores (8 bytes a row each, and 8 more for the windows' own with
    bins on uE); a bin index per row for each binning on X or V (4 bytes a row); ε only
    for the copies that CC or the hooks need (batches of
    :data:`uqx.engine.resample.MEMORY_BUDGET`). In both routes
    the draws are the generators of :mod:`uqx.engine.generators` (``"data"``: Lemire
    bounded integers) and the numbers depend on neither the scheduler, the workers, nor
    the memory budget.

    **Large bins.** Where the member's per-bin sums are close to jointly normal
    (:mod:`uqx.engine.gaussian_sums`: N, :math:`t_s(\nu > 6)`, a pool with a small sixth
    moment, and bins large enough), the copies that keep no ε are drawn as those sums,
    O(bins) a copy; a rank statistic (CC) keeps every copy on full draws, so the copies
    of the other statistics then differ (their law does not).

    **Content key.** For ``"data"`` (the set's own z-scores) the key is the content of
    (E, uE); for N and :math:`t_s(\nu)` (one ν, or one per set) it is the content of uE
    alone: those copies depend on E through ν at most, so sets with the same uncertainties
    (and ν) get the same copies, and :func:`shared_nulls` can simulate them once for all
    such sets.
    """
    if np.ndim(nu) > 0:
        raise InputError("nu: one number (the degrees of freedom of t_s)")
    return draw_copies(ds, stats, Member(dist, nu), n_mc=n_mc, seed=seed, level=level,
                       bin_cfg=BinningConfig(bins, binning, pop_min), keep_draws=keep_draws,
                       scheduler=scheduler, num_workers=num_workers, progress=progress).summary


class Member(NamedTuple):
    r"""One member of the null family: the law D of the ε of its copies ``E = u ε``.

    Attributes
    ----------
    dist : {"normal", "t", "data"}
        N(0, 1), the unit-variance Student :math:`t_s(\nu)`, or the set's own z-scores
        resampled (:func:`uqx.engine.null_shape.standardised_z`).
    nu : float or numpy.ndarray, optional
        ν of ``"t"``: one number, or one per set (the data-matched member; then give
        ``label``).
    label : str, optional
        The member's name in the keyed streams (default ``N``, ``data`` or ``T<nu>``).
    """

    dist: str
    nu: float | np.ndarray | None = None
    label: str | None = None

    @property
    def stream_label(self) -> str:
        """Label of the member's keyed streams (``label`` or ``N`` / ``data`` / ``T<nu>``)."""
        return self.label or {"normal": "N", "data": "data"}.get(self.dist) or f"T{self.nu:g}"


@dataclass(frozen=True)
class MemberCopies:
    """What :func:`draw_copies` returns: the summary of the copies and the hooks' draws.

    Attributes
    ----------
    summary : xarray.Dataset
        As :func:`simulate_reference` returns (with ``draws`` when kept).
    hooked : dict
        ``{set index: array}``: what each hook computed on the draws of its first copies
        (empty without hooks).
    """

    summary: xr.Dataset
    hooked: dict


def draw_copies(
    ds,
    stats,
    member: Member,
    *,
    n_mc: int,
    seed: int | None,
    level: float = LEVEL,
    bin_cfg: BinningConfig | None = None,
    keep_draws: bool = True,
    hooks=None,
    prepared: list | None = None,
    nu_local=False,
    cc_spread: bool = False,
    scheduler=None,
    num_workers: int | None = None,
    progress: bool = False,
) -> MemberCopies:
    r"""Draw ``n_mc`` calibrated copies of every set under one member and summarise them.

    The copy drawer under :func:`simulate_reference`: it checks its arguments and the
    sets, then draws with :func:`draw_checked` (which the Monte-Carlo tests of
    :func:`uqx.validate` call directly, on sets checked once); the routes, the keyed
    streams and the memory are described in the Notes of :func:`simulate_reference`.

    Parameters
    ----------
    ds : xarray.Dataset
        Input data set(s) (checked by :func:`uqx.dataio.model.as_stacked`).
    stats : sequence of str
        The statistics to simulate.
    member : Member
        The law of ε and the label of its streams.
    n_mc, seed, level, bin_cfg, keep_draws, scheduler, num_workers, progress
        As for :func:`simulate_reference` (``bin_cfg``: its ``bins``, ``binning``,
        ``pop_min``).
    hooks : list, optional
        One callable (or None) per set, applied to the unit draws ε (k, M) of its first
        ``hook.n_copies`` copies (laid out in the stable uE order); the results come back
        in :attr:`MemberCopies.hooked` (:class:`uqx.inference.extrapolate.null.NullHook`
        uses it to share the draws).
    prepared : list, optional
        :func:`prepare_sets` of the same data and binning: the sort and the bins shared
        by several members; rebuilt when they do not fit.
    nu_local : bool or sequence of float, default False
        With ``dist="t"``: each window of bins of uE (those of the ``"data"`` member,
        :func:`uqx.engine.null_shape.local_windows`) draws :math:`t_s` at the ν fitted to
        that window's own tails (:func:`uqx.engine.null_shape.kappa_cs_z2_windows`,
        :func:`~uqx.engine.null_shape.nu_windows`): the fitted member of consistency's
        null, whose errors may change shape with uE. ``member.nu`` serves the sets
        without windows (no bins on uE, or a single window) and the streamed route. One
        ν̂ per set instead of True: the windows that exclude ν̂ are read, and each bin of
        uE is drawn at the heavier of its window's ν and ``member.nu`` (the heavy end of
        the statistics tested on both sides).
    cc_spread : bool, default False
        With CC among the statistics, also CC of the copies of the tests under
        :math:`u = c\,u_E^\gamma` at :data:`CC_GAMMAS` (``cc_spread``: its resolution).

    Returns
    -------
    MemberCopies
    """
    dist, nu, label = member
    if not (isinstance(n_mc, (int, np.integer)) and n_mc >= 2):
        raise InputError(f"n_mc must be an integer >= 2, got {n_mc!r}")
    specs = [parse_stat(s) for s in stats]
    if any(s.vector for s in specs):
        raise InputError("per-bin statistics have no scalar simulated reference")
    if dist not in ("normal", "t", "data"):
        raise InputError(f"unknown generative distribution {dist!r} (normal, t, data)")
    checked = check_sets(ds)
    n_sets = checked.data.sizes["set"]
    per_set = np.ndim(nu) > 0
    if per_set and np.size(nu) != n_sets:
        raise InputError(f"nu: one value per set expected ({n_sets}), got {np.size(nu)}")
    if dist == "t":
        check_student_nu(np.asarray(nu, dtype=np.float64).ravel() if per_set else nu)
    if per_set and label is None:
        raise InputError("one nu per set needs a label for its random streams")
    return draw_checked(checked, specs, member, n_mc=int(n_mc), seed=resolve_seed(seed),
                        level=level, bin_cfg=bin_cfg, keep_draws=keep_draws, hooks=hooks,
                        prepared=prepared, nu_local=nu_local, cc_spread=cc_spread,
                        scheduler=scheduler, num_workers=num_workers, progress=progress)


def draw_checked(checked, specs, member: Member, *, n_mc: int, seed: int,
                 level: float = LEVEL, bin_cfg: BinningConfig | None = None,
                 keep_draws: bool = True, hooks=None, prepared: list | None = None,
                 nu_local=False, cc_spread: bool = False, scheduler=None,
                 num_workers: int | None = None, progress: bool = False) -> MemberCopies:
    """Draw the copies of checked sets under one member: :func:`draw_copies` past its checks.

    The copy drawer of :func:`uqx.workflow.references.reference_step`, which holds the
    checked sets (:class:`uqx.dataio.model.CheckedSets`), parsed statistics
    (``StatSpec``), a resolved integer ``seed`` and members built by the null family; the
    arguments are those of :func:`draw_copies`, taken as valid.
    """
    dist, nu, _ = member
    bin_cfg = BinningConfig() if bin_cfg is None else bin_cfg
    ds = checked.data
    n_sets = ds.sizes["set"]
    per_set = np.ndim(nu) > 0
    nus = np.asarray(nu, dtype=np.float64).ravel() if per_set else None
    dlabel = member.stream_label
    n_blocks = -(-n_mc // SIM_BLOCK)
    hooks = hooks or [None] * n_sets
    # moment statistics alone stream in file order, group by group (out of core), unless
    # the caller holds the sorted sets (then the copies are shared, shared_nulls)
    streamed = (all(s.family == "moment" for s in specs) and all(h is None for h in hooks)
                and prepared is None)
    own = dist == "data"  # the resampled z-scores; N and t_s(nu) key on uE alone
    if streamed:
        tasks = [_moment_tasks(ds, i, specs, dist, float(nus[i]) if per_set else nu, seed,
                               dlabel, n_mc, own) for i in range(n_sets)]
    else:
        tasks, prepared = _sorted_tasks(checked, specs, bin_cfg, dist, nus if per_set else nu, seed,
                                        dlabel, n_mc, n_blocks, hooks, prepared, own,
                                        nu_local, cc_spread)

    computed = compute_tasks(tasks, scheduler=scheduler, num_workers=num_workers,
                       quiet=not progress)
    layouts = None if streamed else [_top_layout(ss) for ss in prepared]
    out = _summarise_sims(computed, [s.name for s in specs], n_mc, level, keep_draws, layouts)
    out = out.assign_coords(set=ds["set"].values)
    if per_set:
        out["nu"] = SIMULATE_REFERENCE.variable("nu", nus.copy())
    out.attrs = {"dist": dist, "dist_label": dlabel,
                 "nu": float(nu) if dist == "t" and not per_set else np.nan,
                 "n_mc": int(n_mc), "seed": int(seed), "level": float(level),
                 "binning_scheme": bin_cfg.scheme, "n_bins": int(bin_cfg.n_bins),
                 "pop_min": int(bin_cfg.pop_min)}
    hooked = {i: np.concatenate([b["_hook"] for b in blocks if "_hook" in b])
              for i, blocks in enumerate(computed) if hooks[i] is not None}
    return MemberCopies(out, hooked)
