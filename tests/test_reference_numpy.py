"""The numba kernels of the per-bin sums against the plain-numpy engine
(:mod:`uqx.engine.reference_numpy`), as xskillscore and flox test their engines: the same
sums within rounding on every route (sorted rows, prefix sums, count-weighted and
streamed resamples, the prefix sums kept at a few positions, the copies' sums), and
``use_engine("numpy")`` routing the package's per-bin sums through it.
"""

import numpy as np
import pytest

from uqx.engine import reference_numpy as R
from uqx.engine.binning import equal_count_edges
from uqx.engine.copies import sim_rows
from uqx.engine.evaluator import _prefix_at, _streamed_bin_sums, _weighted_bin_sums
from uqx.engine.resample import SAMPLE_BLOCK, BootstrapPlan, seed_sequence
from uqx.engine.statistic import STATISTICS, bin_feature_sums, prefix_bin_features
from uqx.engine.unit_variance import unit_args
from uqx.errors import InputError

TOL = {"rtol": 1e-10, "atol": 1e-9}


def sorted_set(rng, M=700):
    u = np.sort(rng.uniform(0.1, 2.0, M) * np.exp(rng.normal(0, 0.5, M)))
    return u * rng.standard_t(5, M), u


def test_sorted_rows_and_prefix_sums(rng):
    E, u = sorted_set(rng)
    edges = np.array([0, 50, 50, 300, 699, 700])  # an empty bin, a bin of one
    Eb = u * rng.standard_normal((4, u.size))
    np.testing.assert_allclose(bin_feature_sums(Eb, u, edges),
                               R.bin_feature_sums(Eb, u, edges), **TOL)
    np.testing.assert_allclose(prefix_bin_features(E, u), R.prefix_bin_features(E, u), **TOL)


@pytest.mark.parametrize("gathered", [False, True])
def test_count_weighted_resamples(rng, gathered):
    E, u = sorted_set(rng)
    M = u.size
    edges = equal_count_edges(M, 7, pop_min=5).astype(np.int64)
    counts = rng.multinomial(M, np.full(M, 1.0 / M), size=5).astype(np.int32)
    perm = rng.permutation(M)  # file order: sorted position p is row perm[p]
    Ef, uf = np.empty(M), np.empty(M)
    Ef[perm], uf[perm] = E, u
    cf = np.empty_like(counts)
    cf[:, perm] = counts
    out = np.zeros((5, edges.size - 1, 6))
    Es, us = (Ef, uf) if gathered else (E, u)
    _weighted_bin_sums(cf, perm.astype(np.int64), False, Es, us, gathered, E.mean(), edges,
                       out)
    np.testing.assert_allclose(out, R.weighted_bin_sums(counts, E, u, edges), **TOL)


def test_streamed_resamples_are_the_plans_counts(rng):
    E, u = sorted_set(rng, M=SAMPLE_BLOCK + 900)  # two sample blocks
    edges = equal_count_edges(u.size, 9, pop_min=5).astype(np.int64)
    plan = BootstrapPlan(u.size, 6, 3, "s")
    out = np.zeros((6, edges.size - 1, 6))
    _streamed_bin_sums(plan.sample_block_states(0),
                       np.array(plan.sample_blocks, dtype=np.int64).reshape(-1, 2),
                       plan.sample_block_draws(0), E, u, E.mean(), edges,
                       np.zeros((1, SAMPLE_BLOCK), dtype=np.int32), out)
    counts = np.concatenate(list(plan.iter_counts(0, 6)))
    np.testing.assert_allclose(out, R.weighted_bin_sums(counts, E, u, edges), **TOL)


def test_prefix_sums_kept_at_positions(rng):
    E, u = sorted_set(rng)
    pos = np.array([0, 1, 2, 99, 100, 101, 699, 700], dtype=np.int64)
    out = np.zeros((pos.size, 6))
    _prefix_at(E, u, np.zeros(1, np.int64), False, E.mean(), pos, out)
    np.testing.assert_allclose(out, R.prefix_bin_features(E, u)[pos], **TOL)


def test_copies_sums(rng):
    _, u = sorted_set(rng)
    M, k = u.size, 4
    seg = np.array([0, 100, 350, M], dtype=np.int64)
    binid = np.stack([np.arange(M) % 3, np.arange(M) * 5 // M]).astype(np.int32)
    boff = np.array([0, 3], dtype=np.int64)
    out_seg, out_bin, eps = np.zeros((k, 3, 4)), np.zeros((k, 8, 4)), np.empty((k, M))
    sim_rows(*unit_args(seed_sequence(2, "copies"), "normal"), u, seg, binid, boff, out_seg,
             out_bin, eps, np.zeros((0, 2), np.int64))
    np.testing.assert_allclose(
        out_seg, R.copy_sums(eps, u, np.repeat(np.arange(3), np.diff(seg)), 3), **TOL)
    np.testing.assert_allclose(out_bin[:, :3], R.copy_sums(eps, u, binid[0], 3), **TOL)
    np.testing.assert_allclose(out_bin[:, 3:], R.copy_sums(eps, u, binid[1], 5), **TOL)


def test_use_engine_routes_the_per_bin_sums(rng):
    E, u = sorted_set(rng)
    edges = equal_count_edges(u.size, 6, pop_min=5)
    assert R.current_engine() == "numba"
    with R.use_engine("numpy"):
        S = bin_feature_sums(E, u, edges)
        P = prefix_bin_features(E, u, out=np.empty((u.size + 1, 6)))
    np.testing.assert_array_equal(S, R.bin_feature_sums(E, u, edges))
    np.testing.assert_array_equal(P, R.prefix_bin_features(E, u))
    assert R.current_engine() == "numba"
    n = np.diff(edges)
    for name in ("ence", "zmse", "zve", "uce"):
        np.testing.assert_allclose(STATISTICS[name].finish(S, n),
                                   STATISTICS[name].finish(bin_feature_sums(E, u, edges), n),
                                   rtol=1e-10)
    with pytest.raises(InputError, match="unknown engine"), R.use_engine("jax"):
        pass
