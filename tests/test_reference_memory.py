"""Simulated references of a set in content order hold nothing of size M.

Oracles: the stored pools of the "data" member (:func:`standardised_z`,
:func:`standardised_z_local`), which the pools computed when drawn
(:class:`StandardisedPool`) must equal bit for bit, and so must every draw, sum, moment
and copy made from them; :func:`make_bins` for the bins of a set already sorted by uE;
tracemalloc (which sees numpy's allocations) for the memory, in bytes a row.
"""

import tracemalloc

import numpy as np
import pytest
from internals import simulate

import uqx
from uqx.dataio.model import check_sets
from uqx.engine import gaussian_sums as G
from uqx.engine.binning import make_bins
from uqx.engine.copies import sim_rows
from uqx.engine.null_shape import (
    StandardisedPool,
    local_windows,
    standardised_pools,
    standardised_z,
    standardised_z_local,
)
from uqx.engine.resample import seed_sequence
from uqx.engine.unit_variance import draw_unit, unit_args
from uqx.inference import reference as R
from uqx.inference.extrapolate.null import sweep_copies
from uqx.inference.reference import prepare_sets


@pytest.fixture(autouse=True)
def _long_sets(monkeypatch):
    # pools computed when drawn are the route of sets beyond LONG_SET_ROWS (2^24 rows):
    # taken here at every size
    monkeypatch.setattr(R, "LONG_SET_ROWS", 0)


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def _sorted_set(M, seed, heavy=False, constant=0):
    """E, uE sorted by uE (uE = 1/sqrt(Gamma(3, 1/3))); ``constant`` first rows with z = 2."""
    rng = np.random.default_rng(seed)
    u = np.sort(np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M)))
    E = u * (rng.standard_t(4, M) if heavy else rng.standard_normal(M))
    E[:constant] = 2.0 * u[:constant]
    return E, u


@pytest.mark.parametrize("M", [1000, 4097, 200_003])
def test_pools_on_the_fly_equal_the_stored_pools_bit_for_bit(M):
    E, u = _sorted_set(M, 1, heavy=True, constant=300)
    groups = np.array([0, 300, M // 3, M // 2 + 1, M])  # the first window: constant z
    whole, local = standardised_pools(E, u, groups)
    want_w, want_l = standardised_z(E, u), standardised_z_local(E / u, groups)
    np.testing.assert_array_equal(_bits(whole.values()), _bits(want_w))
    np.testing.assert_array_equal(_bits(local.values()), _bits(want_l))
    assert not np.any(want_l[:300]) and local.s[0] == 0.0  # a constant window: zeros
    for lo, hi in ((0, 1), (5, M - 7), (299, 301), (M // 3 - 2, M // 2 + 3), (M - 1, M)):
        np.testing.assert_array_equal(_bits(whole.values(lo, hi)), _bits(want_w[lo:hi]))
        np.testing.assert_array_equal(_bits(local.values(lo, hi)), _bits(want_l[lo:hi]))
    # without windows, and as views: nothing copied
    alone, none = standardised_pools(E, u)
    assert none is None and np.shares_memory(alone.E, E) and np.shares_memory(alone.uE, u)
    np.testing.assert_array_equal(_bits(alone.values()), _bits(want_w))


@pytest.mark.parametrize("dist_pool", ["whole", "local"])
def test_draws_from_a_pool_on_the_fly_equal_draws_from_the_stored_pool(dist_pool):
    E, u = _sorted_set(5001, 2, heavy=True)
    seg = make_bins(u, 20).edges.astype(np.int64)
    groups, win = local_windows(seg)
    E[:groups[1]] = 2.0 * u[:groups[1]]  # the first window: constant z, zeros
    whole, local = standardised_pools(E, u, groups)
    assert local.s[0] == 0.0 and local.s[1] > 0
    stored = standardised_z_local(E / u, groups) if dist_pool == "local" else \
        standardised_z(E, u)
    fly = local if dist_pool == "local" else whole
    # draw_unit (numba rows, and a NumPy Generator): the same values
    a = draw_unit(seed_sequence(3, "t"), (3, 777), dist="data", pool=stored)
    b = draw_unit(seed_sequence(3, "t"), (3, 777), dist="data", pool=fly)
    np.testing.assert_array_equal(_bits(a), _bits(b))
    a = draw_unit(np.random.default_rng(4), 99, dist="data", pool=stored)
    b = draw_unit(np.random.default_rng(4), 99, dist="data", pool=fly)
    np.testing.assert_array_equal(_bits(a), _bits(b))
    # the sweep of the extrapolation nulls
    a = sweep_copies(seed_sequence(5, "s"), u, [5, 10, 20], dist="data", pool=stored,
                     n_copies=3)
    b = sweep_copies(seed_sequence(5, "s"), u, [5, 10, 20], dist="data", pool=fly,
                     n_copies=3)
    np.testing.assert_array_equal(_bits(a), _bits(b))
    # sim_rows: the sums only, with ε kept, and with a second binning (every branch)
    x_bins = np.random.default_rng(6).integers(0, 7, (1, u.size)).astype(np.int32)
    windows = win if dist_pool == "local" else None
    for binid, boff, nb in ((np.zeros((0, 1), np.int32), np.zeros(0, np.int64), 0),
                            (x_bins, np.zeros(1, np.int64), 7)):
        for keep in (0, 2):
            outs = []
            for pool in (stored, fly):
                args = unit_args(seed_sequence(7, "r"), "data", None, pool, windows=windows)
                assert args[1] == (3 if pool is stored else 5) if windows is not None else \
                    args[1] == (2 if pool is stored else 4)
                out_seg = np.zeros((4, seg.size - 1 if windows is not None else 1, 4))
                out_bin = np.zeros((4, nb, 4))
                buf = np.empty((keep, u.size))
                sim_rows(*args, u, seg if windows is not None else np.array([0, u.size]),
                         binid, boff, out_seg, out_bin, buf,
                         win if windows is not None else R._NO_WINDOWS)
                outs.append((out_seg, out_bin, buf))
            for x, y in zip(*outs, strict=True):
                np.testing.assert_array_equal(_bits(x), _bits(y))


def test_moments_of_a_pool_on_the_fly_equal_the_stored_pools(monkeypatch):
    monkeypatch.setattr(G, "_CHUNK", 1000)  # several chunks per window
    E, u = _sorted_set(20_000, 8, heavy=True, constant=500)
    seg = make_bins(u, 10).edges.astype(np.int64)
    groups, win = local_windows(seg)
    whole, local = standardised_pools(E, u, groups)
    np.testing.assert_array_equal(_bits(G.unit_moments("data", pool=whole)),
                                  _bits(G.unit_moments("data", pool=standardised_z(E, u))))
    np.testing.assert_array_equal(
        _bits(G.unit_moments("data", pool=local, windows=win)),
        _bits(G.unit_moments("data", pool=standardised_z_local(E / u, groups), windows=win)))


def _materialised(prep):
    """The same preparation with the pools stored as arrays (as for unsorted rows)."""
    for ss in prep:
        ss.pool = ss.pool.values()
        if ss.pool_local is not None:
            ss.pool_local = ss.pool_local.values()
        ss._cells, ss._plans = {}, {}
    return prep


@pytest.mark.parametrize("tol", [0.0, None])
def test_sorted_route_gives_the_bits_of_the_stored_pools(monkeypatch, tol):
    # a set in content order, prepared without any array of size M, against the same
    # preparation with its pools stored: the same copies, bit for bit (full draws, and
    # the joint-normal sums whose plan reads the pools' moments)
    if tol is not None:
        monkeypatch.setattr(G, "GAUSS_TOL", tol)
    E, u = _sorted_set(40_000, 9)
    ds = uqx.from_arrays(E, u, name="s")
    for stats in (["zms", "rce", "ence"], ["zms", "rce"], ["cc", "ence"]):
        fly = prepare_sets(ds, stats, pool=True)
        assert isinstance(fly[0].pool, StandardisedPool)
        assert (fly[0].pool_local is None) == ("ence" not in stats)
        stored = _materialised(prepare_sets(ds, stats, pool=True))
        for dist in ("data", "normal"):
            kw = dict(dist=dist, n_mc=30 if "cc" in stats else 300, seed=2, keep_draws=True,
                      scheduler="synchronous")
            a = simulate(ds, stats, prepared=fly, **kw)
            b = simulate(ds, stats, prepared=stored, **kw)
            for k in a.data_vars:
                np.testing.assert_array_equal(_bits(a[k].values), _bits(b[k].values))


def test_sorted_and_shuffled_rows_prepare_the_same_sets():
    # the identity order is never built for sorted rows; the same rows shuffled take
    # the sort: the same uE in order, bins, sums and pools (the local one stored)
    E, u = _sorted_set(6000, 10, heavy=True)
    X = np.random.default_rng(11).uniform(0, 1, u.size)
    perm = np.random.default_rng(12).permutation(u.size)
    for binning in ("equal-count", "equal-width", "adaptive"):
        kw = dict(pool=True, binning=binning)
        stats = ["zms", "ence", "ence_X"]
        a = prepare_sets(uqx.from_arrays(E, u, X=X, name="s"), stats, **kw)[0]
        b = prepare_sets(uqx.from_arrays(E[perm], u[perm], X=X[perm], name="s"), stats,
                         **kw)[0]
        assert isinstance(a.pool_local, StandardisedPool)
        assert isinstance(a.pool, StandardisedPool)
        assert isinstance(b.pool_local, np.ndarray) and isinstance(b.pool, np.ndarray)
        np.testing.assert_array_equal(a.seg, make_bins(u, 20, scheme=binning).edges)
        for name in ("u_sorted", "seg", "win", "binid", "boff"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        # the sums of u² of the long route (by chunks of rows): the same up to the order
        assert a.n_extra == b.n_extra
        np.testing.assert_allclose([a.sum_u2, a.sum_lnu2], [b.sum_u2, b.sum_lnu2], rtol=1e-13)
        for c in a.layout:
            for x, y in zip(a.layout[c], b.layout[c], strict=True):
                assert (x is None and y is None) or np.allclose(x, y, rtol=1e-13, atol=0)
        np.testing.assert_array_equal(_bits(a.pool_local.values()), _bits(b.pool_local))
        np.testing.assert_array_equal(_bits(a.pool.values()), _bits(standardised_z(E, u)))
        np.testing.assert_array_equal(_bits(b.pool), _bits(standardised_z(E[perm], u[perm])))


def _traced(fn):
    """(peak, held) bytes that tracemalloc sees allocated while ``fn`` runs."""
    tracemalloc.start()
    try:
        c0, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        out = fn()
        c1, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return out, peak - c0, c1 - c0


def test_a_set_in_content_order_holds_nothing_of_size_M():
    # preparing takes 8 bytes a row at a time (u², then E/uE) and holds nothing of
    # size M; drawing the copies of every member takes O(chunk), not O(M)
    stats = ["zms", "rce", "ence"]
    M = 2_000_000
    # checked once, as the workflow holds it (a bare Dataset is checked at each call)
    ds = check_sets(uqx.from_arrays(*_sorted_set(M, 14), name="big"))
    kw = dict(n_mc=20, seed=1)
    prep = prepare_sets(ds, stats, pool=True)
    for dist in ("normal", "data"):  # imports, compilation, caches: once, not per row
        simulate(ds, stats, dist=dist, prepared=prep, **kw)
    prep = None
    prep, peak, held = _traced(lambda: prepare_sets(ds, stats, pool=True))
    assert peak / M < 8.5 and held / M < 0.1, (peak / M, held / M)
    for dist in ("normal", "data"):
        _, peak, held = _traced(lambda d=dist: simulate(
            ds, stats, dist=d, prepared=prep, **kw))
        assert peak / M < 2.0 and held / M < 0.1, (dist, peak / M, held / M)


def test_shorter_sets_store_their_pools_with_the_same_values(monkeypatch):
    # below LONG_SET_ROWS a sorted set keeps its pools as arrays (one read a draw):
    # the values of the pools computed when drawn, and the same copies
    E, u = _sorted_set(5000, 15, heavy=True)
    ds = uqx.from_arrays(E, u, name="s")
    fly = prepare_sets(ds, ["zms", "ence"], pool=True)
    monkeypatch.setattr(R, "LONG_SET_ROWS", 1 << 24)
    stored = prepare_sets(ds, ["zms", "ence"], pool=True)
    assert isinstance(stored[0].pool, np.ndarray)
    assert isinstance(stored[0].pool_local, np.ndarray)
    np.testing.assert_array_equal(_bits(stored[0].pool), _bits(fly[0].pool.values()))
    np.testing.assert_array_equal(_bits(stored[0].pool_local), _bits(fly[0].pool_local.values()))
    kw = dict(dist="data", n_mc=200, seed=3, keep_draws=True, scheduler="synchronous")
    a = simulate(ds, ["zms", "ence"], prepared=fly, **kw)
    b = simulate(ds, ["zms", "ence"], prepared=stored, **kw)
    for k in a.data_vars:
        np.testing.assert_array_equal(_bits(a[k].values), _bits(b[k].values))


def test_long_sets_sum_u2_by_chunks(monkeypatch):
    # beyond LONG_SET_ROWS the sums of u² and ln u² are made 2^20 rows at a time (small
    # chunks here): the sums of the whole-array route up to the summation order
    monkeypatch.setattr(R._SquaredU, "_ROWS", 1000)
    E, u = _sorted_set(20_000, 16)
    X = np.random.default_rng(17).uniform(0, 1, u.size)
    ds = uqx.from_arrays(E, u, X=X, name="s")
    long = prepare_sets(ds, ["zms", "ence", "ence_X"], pool=True)[0]
    monkeypatch.setattr(R, "LONG_SET_ROWS", 1 << 24)
    short = prepare_sets(ds, ["zms", "ence", "ence_X"], pool=True)[0]
    np.testing.assert_allclose(long.sum_u2, short.sum_u2, rtol=1e-13)
    np.testing.assert_allclose(long.sum_lnu2, short.sum_lnu2, rtol=1e-12)
    for c in short.layout:
        np.testing.assert_allclose(long.layout[c][2], short.layout[c][2], rtol=1e-13)
        np.testing.assert_array_equal(long.layout[c][3], short.layout[c][3])
