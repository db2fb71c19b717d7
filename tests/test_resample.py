"""The random-number policy and resampling kernels of uqx.engine.resample.

Checks: xoshiro256** + Lemire against a pure-Python twin (and the published xoshiro test
vector), uniformity (chi-square), independence of keyed streams, and the count
resamples of :class:`BootstrapPlan` (row sums, batch invariance, sums == counts @ F,
multi-sample-block case).
"""

import numpy as np
import pytest
from scipy import stats as sps
from twins import PyStream

from uqx.engine.resample import (
    REPLICATE_BLOCK,
    SAMPLE_BLOCK,
    BootstrapPlan,
    _draw_uniform,
    coord_key,
    resolve_seed,
    seed_sequence,
    uniform_integers,
    xoshiro_state,
)

# ---------------------------------------------------------------- pure-Python twin
# PyStream: the xoshiro256** twin shared with test_generators (tests/twins.py)


def py_halves(gen):
    """32-bit halves of each 64-bit output, high half first."""
    for x in gen:
        yield x >> 32
        yield x & 0xFFFFFFFF


def py_lemire(gen, n, k):
    """Lemire (2019) unbiased integers in [0, n), one candidate per 32-bit half."""
    thresh = (1 << 32) % n
    halves = py_halves(gen)
    out = []
    while len(out) < k:
        m = next(halves) * n
        if (m & 0xFFFFFFFF) >= thresh:
            out.append(m >> 32)
    return out


def test_python_twin_matches_published_vector():
    # first outputs of xoshiro256** from state {1, 2, 3, 4} (reference implementation)
    g = PyStream([1, 2, 3, 4])
    assert [next(g) for _ in range(4)] == [11520, 0, 1509978240, 1215971899390074240]


@pytest.mark.parametrize("size", [1, 2, 7, 1000, 65536, 3 * 2**30, 2**32])
def test_uniform_integers_match_python_twin(size):
    ss = seed_sequence(123, "set A", 4)
    got = uniform_integers(ss, size, 300)
    state = xoshiro_state(seed_sequence(123, "set A", 4))
    ref = py_lemire(PyStream(state), size, 300)
    np.testing.assert_array_equal(got, ref)
    assert got.min() >= 0 and got.max() < size


def test_draw_uniform_raw_outputs():
    # size 2**32: Lemire returns each 32-bit half unchanged (threshold 0)
    out = np.empty(6, np.int64)
    _draw_uniform(np.array([1, 2, 3, 4], np.uint64), 2**32, out)
    halves = py_halves(PyStream([1, 2, 3, 4]))
    np.testing.assert_array_equal(out, [next(halves) for _ in range(6)])


def test_uniform_integers_chi_square():
    n, k = 37, 370_000
    x = uniform_integers(seed_sequence(2024, "chi2"), n, k)
    obs = np.bincount(x, minlength=n)
    p = sps.chisquare(obs).pvalue
    assert p > 1e-3, p


def test_lemire_is_unbiased_for_large_ranges():
    # a naive "x mod n" with n = 3 * 2**30 would put 1/2 of the mass below 2**30, not 1/3
    n = 3 * 2**30
    x = uniform_integers(seed_sequence(7, "bias"), n, 300_000)
    frac = np.mean(x < 2**30)
    assert abs(frac - 1 / 3) < 5 * np.sqrt(2 / 9 / x.size)


# ---------------------------------------------------------------- keys and streams


def test_coord_key_and_seed_sequence():
    assert coord_key(5) == 5
    assert coord_key(np.int64(7)) == 7
    assert coord_key("Set 1") == coord_key("Set 1") != coord_key("Set 2")
    assert coord_key(-1) == coord_key("-1")  # out-of-range ints are hashed as strings
    a = seed_sequence(1, "x", 2).generate_state(4)
    np.testing.assert_array_equal(a, seed_sequence(1, "x", 2).generate_state(4))
    assert not np.array_equal(a, seed_sequence(1, "x", 3).generate_state(4))
    assert not np.array_equal(a, seed_sequence(2, "x", 2).generate_state(4))


def test_resolve_seed():
    assert resolve_seed(5) == 5
    assert resolve_seed(np.int32(9)) == 9
    s1, s2 = resolve_seed(None), resolve_seed(None)
    assert isinstance(s1, int) and 0 <= s1 < 2**63 and s1 != s2
    with pytest.raises(ValueError):
        resolve_seed("not a seed")


def test_different_keys_and_blocks_give_different_streams():
    M = 300
    n = REPLICATE_BLOCK + 600  # two replicate blocks
    base = BootstrapPlan(M=M, n_boot=n, seed=11, key="A")
    c0 = base.counts(0)
    np.testing.assert_array_equal(c0, BootstrapPlan(M, n, 11, "A").counts(0))  # reproducible
    others = [
        base.counts(1),  # another replicate block
        BootstrapPlan(M, n, 11, "B").counts(0),  # another set name
        BootstrapPlan(M, n, 12, "A").counts(0),  # another seed
    ]
    with pytest.raises(IndexError):
        base.counts(2)
    for c in others:
        rows = min(c.shape[0], c0.shape[0])
        assert not np.array_equal(c[:rows], c0[:rows])
        # not merely shifted: the fraction of identical rows is nil
        same = np.mean([np.array_equal(c[i], c0[i]) for i in range(rows)])
        assert same == 0.0
    # the streams are uncorrelated (per-position counts of block 0 vs other key)
    r = np.corrcoef(c0.ravel(), others[1][: c0.shape[0]].ravel())[0, 1]
    assert abs(r) < 0.02


# ---------------------------------------------------------------- BootstrapPlan


def test_plan_blocks_and_row_sums():
    M, n_boot = 257, 2 * REPLICATE_BLOCK + 13
    plan = BootstrapPlan(M=M, n_boot=n_boot, seed=3, key="s")
    assert plan.n_blocks == 3
    assert [plan.block_size(b) for b in range(3)] == [REPLICATE_BLOCK, REPLICATE_BLOCK, 13]
    assert plan.sample_blocks == [(0, M)]
    total = 0
    for b in range(plan.n_blocks):
        c = plan.counts(b)
        assert c.dtype == np.int32 and c.shape == (plan.block_size(b), M)
        np.testing.assert_array_equal(c.sum(axis=1), M)
        assert c.min() >= 0
        total += c.shape[0]
    assert total == n_boot


@pytest.mark.parametrize("M", [200, SAMPLE_BLOCK + 1234])
def test_iter_counts_independent_of_batch(M):
    plan = BootstrapPlan(M=M, n_boot=30, seed=99, key="batch")
    ref = plan.counts(0)
    for batch in (1, 4, 7, 30, 1000):
        parts = list(plan.iter_counts(0, batch))
        assert all(p.shape[0] <= batch for p in parts)
        np.testing.assert_array_equal(np.concatenate(parts), ref)


@pytest.mark.parametrize("M", [150, SAMPLE_BLOCK + 500])
def test_sums_equal_counts_times_features(M, rng):
    plan = BootstrapPlan(M=M, n_boot=20, seed=5, key="sums")
    F = rng.normal(size=(M, 3))
    S = plan.sums(0, F)
    C = plan.counts(0).astype(np.float64)
    np.testing.assert_allclose(S, C @ F, rtol=1e-9, atol=1e-9 * np.abs(F).sum())
    # the same draws: integer features give exactly the counts
    one_hot = np.zeros((M, 2))
    one_hot[7, 0] = 1.0
    one_hot[M - 1, 1] = 1.0
    np.testing.assert_array_equal(plan.sums(0, one_hot), C[:, [7, M - 1]])


def test_counts_are_multinomial_uniform_small_M():
    M, n_boot = 50, 2000
    plan = BootstrapPlan(M=M, n_boot=n_boot, seed=17, key="mult")
    C = np.concatenate([plan.counts(b) for b in range(plan.n_blocks)])
    # every position is equally likely: chi-square on the totals
    assert sps.chisquare(C.sum(axis=0)).pvalue > 1e-3
    # a single cell is Binomial(M, 1/M): compare its frequency table
    k = np.arange(5)
    expected = sps.binom.pmf(k, M, 1 / M) * C.size
    obs = np.array([np.sum(C == v) for v in k])
    chi2 = np.sum((obs - expected) ** 2 / expected)
    assert chi2 < sps.chi2.ppf(0.999, k.size - 1)
    # cells of a row are negatively correlated, as in a multinomial: cov = -1/M
    cov = np.cov(C[:, 0], C[:, 1])[0, 1]
    assert abs(cov - (-1 / M)) < 0.1


def test_multi_sample_block_counts():
    M = 2 * SAMPLE_BLOCK + SAMPLE_BLOCK // 7  # three sample blocks, the last one partial
    plan = BootstrapPlan(M=M, n_boot=REPLICATE_BLOCK, seed=8, key="big")
    assert plan.sample_blocks == [
        (0, SAMPLE_BLOCK),
        (SAMPLE_BLOCK, 2 * SAMPLE_BLOCK),
        (2 * SAMPLE_BLOCK, M),
    ]
    sizes = np.array([e - s for s, e in plan.sample_blocks])
    # draws per sample block: multinomial(M, sizes / M) for each replicate
    D = plan._draws_per_sample_block(0)
    np.testing.assert_array_equal(D.sum(axis=1), M)
    p = sizes / M
    z = (D.mean(axis=0) - M * p) / np.sqrt(M * p * (1 - p) / D.shape[0])
    assert np.all(np.abs(z) < 4), z
    ratio = D.var(axis=0, ddof=1) / (M * p * (1 - p))
    lo, hi = sps.chi2.ppf([0.0005, 0.9995], D.shape[0] - 1) / (D.shape[0] - 1)
    assert np.all((ratio > lo) & (ratio < hi)), ratio
    # the counts of a few replicates (streamed in small batches to bound memory)
    tot = np.zeros(M, np.int64)
    n_rows = 0
    for c in plan.iter_counts(0, batch=10):
        np.testing.assert_array_equal(c.sum(axis=1), M)
        for k, (s, e) in enumerate(plan.sample_blocks):
            np.testing.assert_array_equal(c[:, s:e].sum(axis=1), D[n_rows : n_rows + len(c), k])
        tot += c.sum(axis=0)
        n_rows += len(c)
        if n_rows >= 40:
            break
    # every position equally likely over the whole range (chi-square, 40 * M draws)
    assert sps.chisquare(tot).pvalue > 1e-3
    # per-block mean count 1 (no block over- or under-sampled)
    for s, e in plan.sample_blocks:
        assert abs(tot[s:e].mean() / n_rows - 1.0) < 0.01


def test_counts_distribution_matches_numpy_multinomial():
    """Library oracle for the xoshiro/Lemire draws (uqx keeps its own: ~1.8 ns per draw
    against ~60 ns for a numba call into a numpy Generator): the per-sample counts of
    many replicates have the Binomial(M, 1/M) law that numpy's multinomial gives."""
    M, R = 50, 4000
    plan = BootstrapPlan(M=M, n_boot=R, seed=3, key="oracle")
    c = np.concatenate([plan.counts(b) for b in range(plan.n_blocks)])
    ref = np.random.default_rng(3).multinomial(M, np.full(M, 1.0 / M), size=R)
    k = np.arange(6)
    ours = np.array([(c == v).sum() for v in k[:-1]] + [(c >= k[-1]).sum()])
    theirs = np.array([(ref == v).sum() for v in k[:-1]] + [(ref >= k[-1]).sum()])
    stat, p = sps.chi2_contingency(np.vstack([ours, theirs]))[:2]
    assert p > 1e-3, (ours, theirs, p)
    assert np.all(c.sum(axis=1) == M)
