"""The bootstrap of long sets holds nothing of size M beyond its columns.

Rows in content order have uE sorted: the evaluator then keeps no sort order, folds each
replicate's counts into the bins as they are drawn (no count matrix), and, beyond
``LONG_SET_ROWS``, sums the estimate's moment features group by group and reduces the
leave-one-out values to power sums. Each route is checked against the one it replaces.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import twins

import uqx
from uqx.engine import evaluator as evaluator_mod
from uqx.engine.confidence import jackknife_acceleration
from uqx.engine.evaluator import SetEvaluator
from uqx.engine.resample import SAMPLE_BLOCK, BootstrapPlan
from uqx.engine.statistic import STATISTICS, moment_sums, parse_stat
from uqx.inference import bootstrap as bootstrap_mod


def _sorted_set(M, seed=3, ties=False):
    rng = np.random.default_rng(seed)
    u = np.sort(rng.gamma(4.0, 0.25, M))
    if ties:
        u = np.round(u, 2)  # tie groups straddle the bin edges
    return u * rng.standard_t(5, M), u


def _specs(*names):
    return [parse_stat(s) for s in names]


def _three(ev, plan):
    return ev.estimate(), ev.replicates(plan, 0), ev.jackknife(chunk_elems=5000)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("names", [
    ("zms", "rce", "ence", "zmse", "zve", "lzms"),  # one sorted variable: counts streamed
    ("zms", "ence", "zve_X"),  # two binning variables: the count matrix, uE unsorted-free
    ("rce", "cc", "ence"),  # a rank statistic: the count matrix
])
def test_sorted_variable_route_same_bits(monkeypatch, ties, names):
    # 3 sample blocks of 2^14 positions: bins and copies straddle their boundaries
    E, u = _sorted_set(2 * SAMPLE_BLOCK + 7001, ties=ties)
    X = np.random.default_rng(9).uniform(size=E.size)
    plan = BootstrapPlan(M=E.size, n_boot=12, seed=5, key="sorted")
    ev = SetEvaluator(E, u, _specs(*names), cond={"X": X})
    assert ev._bin_prep["uE"][2]  # the identity: no order held
    assert (ev._streamed_cond == "uE") == (names[0] == "zms" and len(names) == 6)
    fast = _three(ev, plan)
    monkeypatch.setattr(evaluator_mod, "is_nondecreasing", lambda x: False)
    slow_ev = SetEvaluator(E, u, _specs(*names), cond={"X": X})
    assert not slow_ev._bin_prep["uE"][2]
    slow = _three(slow_ev, plan)
    for a, b in zip(fast, slow, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    # the public bins keep their order (materialised on request)
    np.testing.assert_array_equal(ev.bins_of("uE").order, np.arange(E.size))


def test_streamed_counts_equal_twins_of_the_resamples():
    # each replicate = the sample drawn by its counts, cut by the original edges
    E, u = _sorted_set(2 * SAMPLE_BLOCK + 501, seed=11, ties=True)
    ev = SetEvaluator(E, u, _specs("ence", "zmse"))
    plan = BootstrapPlan(M=E.size, n_boot=4, seed=8, key="twin")
    reps, counts = ev.replicates(plan, 0), plan.counts(0)
    edges = ev.bins_of("uE").edges
    for r in range(counts.shape[0]):
        idx = np.repeat(np.arange(E.size), counts[r])  # already in the order of u
        np.testing.assert_allclose(reps["ence"][r, 0], twins.ence(E[idx], u[idx], edges),
                                   rtol=1e-9)
        np.testing.assert_allclose(reps["zmse"][r, 0], twins.zmse(E[idx], u[idx], edges),
                                   rtol=1e-9)


def test_acceleration_is_the_jackknife_formula():
    E, u = _sorted_set(20_000, seed=4, ties=True)
    ev = SetEvaluator(E, u, _specs("zms", "rce", "mean_z", "ence", "zve", "lzms"))
    t0 = ev.estimate()
    acc = ev.acceleration(t0, chunk_elems=3000)
    jk = ev.jackknife()
    for k, a in acc.items():
        assert a.shape == t0[k].shape and (k == "lzms") == STATISTICS[k].vector
        np.testing.assert_allclose(a, jackknife_acceleration(jk[k]), rtol=1e-7, err_msg=k)


def test_long_set_route_of_the_bootstrap(monkeypatch):
    E, u = _sorted_set(3 * SAMPLE_BLOCK + 5, seed=6)
    ds = uqx.from_arrays(E, u)
    kw = dict(n_boot=60, seed=2)
    short = uqx.bootstrap(ds, ["zms", "rce", "ence"], **kw)
    # long route: acceleration from power sums, estimate summed group by group
    monkeypatch.setattr(evaluator_mod, "LONG_SET_ROWS", 0)
    monkeypatch.setattr(bootstrap_mod, "LONG_SET_ROWS", 0)
    monkeypatch.setattr(evaluator_mod, "SAMPLE_GROUP", 1)  # groups of one sample block
    long = uqx.bootstrap(ds, ["zms", "rce", "ence"], **kw)
    for f in ("estimate", "ci_low", "ci_high", "acceleration"):
        np.testing.assert_allclose(long[f].values, short[f].values, rtol=1e-9, err_msg=f)
    G = SAMPLE_BLOCK
    S = moment_sums(E[:G], u[:G])
    for lo in range(G, E.size, G):
        S = S + moment_sums(E[lo:lo + G], u[lo:lo + G])
    assert long.estimate.sel(stat="zms").item() == STATISTICS["zms"].finish(S[None, :],
                                                                             E.size)[0]


def _peak(M):
    E, u = _sorted_set(M, seed=1)
    ev = SetEvaluator(E, u, _specs("zms", "rce", "ence"))
    plan = BootstrapPlan(M=M, n_boot=3, seed=1, key="mem")
    tracemalloc.start()
    try:
        t0 = ev.estimate()
        ev.replicates(plan, 0)
        ev.acceleration(t0, chunk_elems=100_000)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_long_route_holds_nothing_of_size_m(monkeypatch):
    # beyond fixed buffers (made small here: groups of 4 sample blocks, small jackknife
    # chunks), nothing of size M: the order, the sorted copies, the count matrix and the
    # leave-one-out values were 8 + 16 + 4 + 24 bytes a row (36 measured)
    from uqx.engine import resample

    monkeypatch.setattr(evaluator_mod, "LONG_SET_ROWS", 0)
    monkeypatch.setattr(evaluator_mod, "SAMPLE_GROUP", 4)
    monkeypatch.setattr(resample, "SAMPLE_GROUP", 4)
    _peak(50_000)  # compiled and cached kernels loaded outside the measure
    M = 1 << 21
    per_row = _peak(M) / M
    assert per_row < 6.0, f"{per_row:.2f} bytes a row"


@pytest.mark.parametrize("shape", [(0,), (0, 5), (3, 0), (3, 4), "transposed", "broadcast"])
def test_content_key_hashes_the_buffer_like_its_bytes(shape):
    # the key hashes the arrays' own buffers (no bytes copy of a column): the digest of
    # their C-order bytes, as before, for empty, 2-d, non-contiguous and broadcast arrays
    import hashlib

    from uqx.engine.resample import content_key

    if shape == "transposed":
        a = np.arange(12.0).reshape(3, 4).T
    elif shape == "broadcast":
        a = np.broadcast_to(np.arange(3.0), (4, 3))
    else:
        a = np.arange(float(np.prod(shape))).reshape(shape)
    h = hashlib.sha256()
    h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
    h.update(b"|")
    d = h.digest()
    assert content_key(a) == tuple(int.from_bytes(d[4 * i:4 * i + 4], "little")
                                   for i in range(4))


def test_release_freed_memory_keeps_what_is_held():
    # gc + malloc_trim between the steps of long validations: only freed memory goes
    import platform

    from uqx.workflow.disk import release_freed_memory

    a = np.arange(1 << 20, dtype=np.float64)
    garbage = [np.ones(1 << 17) for _ in range(8)]
    del garbage
    done = release_freed_memory()
    assert isinstance(done, bool)
    if platform.system() == "Linux" and platform.libc_ver()[0] == "glibc":
        assert done
    assert a[-1] == (1 << 20) - 1 and a.sum() == (1 << 20) * ((1 << 20) - 1) / 2


def test_halves_of_z_are_scaled_in_place_with_the_same_bits():
    """kappa_cs_z2_halves sorts its own Z in place: the bits of the windows of a copy / 1."""
    from uqx.engine.null_shape import kappa_cs_z2_halves, kappa_cs_z2_windows, z_in_local_bins

    E, u = _sorted_set(5000, seed=8)
    z, edges = z_in_local_bins(E, u)
    mid = z.size // 2
    edges = np.unique(np.r_[edges, mid]).astype(np.int64)
    want = kappa_cs_z2_windows(z.copy(), np.ones(z.size), edges,
                               np.array([0, mid, z.size], dtype=np.int64))
    got = kappa_cs_z2_halves(E, u)
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    E, u = _sorted_set(200_000, seed=8)
    peak = _peak_bytes(lambda: kappa_cs_z2_halves(E, u))
    assert peak < 2 * 8 * E.size  # Z and one half (12 bytes a row; the copies took 94)


def test_u2_effective_points_of_long_sets_by_groups(monkeypatch):
    """Beyond LONG_SET_ROWS the effective points of u² are summed by groups of rows."""
    import uqx.workflow.steps as V
    from uqx.dataio.model import check_sets, iter_sets

    E, u = _sorted_set(50_000, seed=9)
    sets = list(iter_sets(check_sets(uqx.from_arrays(E, u, name="s"))))
    whole = V._u2_effective_points(sets, streamed=False)
    monkeypatch.setattr(V, "LONG_SET_ROWS", 1000)
    monkeypatch.setattr(V, "READ_ROWS", 4096)
    groups = V._u2_effective_points(sets, streamed=False)
    np.testing.assert_allclose(groups, whole, rtol=1e-12)


def _peak_bytes(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
