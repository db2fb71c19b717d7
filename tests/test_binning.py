"""Tests of uqx.engine.binning against ErrViewLib genIntervals (methods: bins)."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

from uqx.dataio.model import InputError
from uqx.engine.binning import (
    SCHEMES,
    Bins,
    adaptive_edges,
    equal_count_edges,
    equal_width_edges,
    make_bins,
    reduce_n_bins,
    sliding_windows,
    stable_order,
)

# ---------------------------------------------------------------- brute-force twins


def brute_equal_count_edges(n, n_bins):
    """Full-window HD of 1..n (no truncation), fsum + snap, R's p grid."""
    edges = [0]
    ranks = np.arange(1, n + 1)
    for j in range(1, n_bins):
        p = j * (1.0 / n_bins)
        a, b = (n + 1) * p, (n + 1) * (1 - p)
        w = np.diff(special.betainc(a, b, np.arange(n + 1) / n))
        s = math.fsum((w * ranks).tolist())
        if abs(s - round(s)) < 1e-9:
            s = float(round(s))
        edges.append(math.floor(s))
    return np.array(edges + [n])


def closed_form_edges(n, n_bins):
    """b_j = n p_j + 1/2 up to exponentially small terms: floor of it, exact integers.

    Only an approximation for small n: n=30, N=4 gives b_1 = 7.99999992504 (mpmath,
    40 digits), so the HD edge is 7 while this formula says 8. Used for large n only.
    """
    return np.array([(2 * n * j + n_bins) // (2 * n_bins) for j in range(n_bins)] + [n])


def r_adaptive(x, n_bins, pop_min=30, log=True):
    """Line-by-line transliteration of ErrViewLib genIntervals(equiPop = FALSE), 1-based."""
    n = len(x)
    if n / n_bins < pop_min:
        n_bins = n // pop_min
    nbin0 = n_bins
    xo = np.sort(x)
    xl = np.log(xo) if log else xo
    step = (xl.max() - xl.min()) / n_bins
    lims = xl.min() + (np.arange(1, n_bins + 1) - 1) * step
    if log:
        lims = np.exp(lims)
    lw, up = [1], []
    for i in range(2, n_bins + 1):
        lw.append(int(np.flatnonzero(xo >= lims[i - 1])[0]) + 1)
        up.append(lw[-1] - 1)
    up.append(n)
    pop = [u - v + 1 for u, v in zip(up, lw, strict=True)]
    while any(p < pop_min for p in pop):
        for i in range(n_bins - 1):
            if pop[i] >= pop_min:
                continue
            up[i] = up[i + 1]
            up[i + 1] = 0
            lw[i + 1] = 0
            break
        lw = [v for v in lw if v != 0]
        up = [v for v in up if v != 0]
        n_bins = len(lw)
        pop = [u - v + 1 for u, v in zip(up, lw, strict=True)]
        if pop[n_bins - 1] < pop_min:
            up[n_bins - 2] = up[n_bins - 1]
            lw, up = lw[:-1], up[:-1]
            n_bins -= 1
            pop = [u - v + 1 for u, v in zip(up, lw, strict=True)]
    pop_max = max(n // nbin0, 2 * pop_min)
    while any(p > pop_max for p in pop):
        for i in range(n_bins):
            if pop[i] <= pop_max:
                continue
            lw.insert(i + 1, lw[i] + pop[i] // 2 + 1)
            up.insert(i, lw[i] + pop[i] // 2)
            break
        n_bins = len(lw)
        pop = [u - v + 1 for u, v in zip(up, lw, strict=True)]
    return np.array(lw), np.array(up)


def to_lw(edges):
    return (np.asarray(edges)[:-1] + 1).tolist()


# ---------------------------------------------------------------- literature data


def pal2022(data_dir, name):
    df = pd.read_csv(data_dir / "PAL2022" / f"{name}.csv")
    keep = df["uE"] > 1e-6 * df["E"].std(ddof=1)
    return df.loc[keep, "uE"].to_numpy(np.float64)


def qm9_uE(data_dir):
    df = pd.read_csv(data_dir / "BUS2022" / "qm9_qm9_E_calibrated_isotonic_test.csv")
    return np.sqrt(df["uncertainty_total"].to_numpy(np.float64))


# ---------------------------------------------------------------- ordering, reduction


def test_stable_order_ties_and_nan_last():
    x = np.array([3.0, np.nan, 1.0, 3.0, 1.0, 2.0])
    o = stable_order(x)
    assert o.dtype == np.int64
    assert o.tolist() == [2, 4, 5, 0, 3, 1]


def test_stable_order_rows():
    x = np.array([[2.0, 1.0, 2.0], [0.0, np.nan, -1.0]])
    assert stable_order(x).tolist() == [[1, 0, 2], [2, 0, 1]]


@pytest.mark.parametrize(
    ("n", "n_bins", "pop_min", "expected"),
    [(2040, 20, 30, 20), (2040, 110, 20, 102), (100, 10, 30, 3), (30, 1, 30, 1), (59, 2, 30, 1)],
)
def test_reduce_n_bins(n, n_bins, pop_min, expected):
    assert reduce_n_bins(n, n_bins, pop_min=pop_min) == expected


def test_reduce_n_bins_errors():
    with pytest.raises(InputError, match=r"too few points per bin: n=29, pop_min=30"):
        reduce_n_bins(29, 1)
    for bad in (0, -3, 2.0, True, "20", None):
        with pytest.raises(InputError, match="n_bins"):
            reduce_n_bins(100, bad)
    with pytest.raises(InputError):
        equal_count_edges(10, 2)


# ---------------------------------------------------------------- equal-count

R_LWINDX = {
    (2040, 20): list(range(1, 2040, 102)),
    (3834, 20): "1 193 384 576 768 960 1151 1343 1535 1726 1918 2110 2301 2493 2685 2877 3068 "
    "3260 3452 3643",
    (2050, 20): "1 104 206 309 411 514 616 719 821 924 1026 1129 1231 1334 1436 1539 1641 1744 "
    "1846 1949",
    (1010, 20): "1 52 102 153 203 254 304 355 405 456 506 557 607 658 708 759 809 860 910 961",
    (5000, 15): "1 334 668 1001 1334 1668 2001 2334 2668 3001 3334 3668 4001 4334 4668",
    (13885, 10): "1 1390 2778 4167 5555 6944 8332 9721 11109 12498",
    (999, 10): "1 101 201 301 401 501 600 700 800 900",
    (1000, 7): "1 144 287 430 572 715 858",
}


@pytest.mark.parametrize(("n", "n_bins"), list(R_LWINDX))
def test_equal_count_r_vectors(n, n_bins):
    lw = R_LWINDX[(n, n_bins)]
    lw = lw if isinstance(lw, list) else [int(t) for t in lw.split()]
    edges = equal_count_edges(n, n_bins)
    assert edges.dtype == np.int64
    assert edges[0] == 0 and edges[-1] == n
    assert to_lw(edges) == lw
    assert np.array_equal(edges, brute_equal_count_edges(n, n_bins))


def test_equal_count_reduction_and_cache():
    edges = equal_count_edges(2040, 110, pop_min=20)
    assert edges.size - 1 == 102
    assert set(np.diff(edges).tolist()) == {20}
    e1 = equal_count_edges(2040, 20)
    assert equal_count_edges(2040, 20) is e1
    assert not e1.flags.writeable
    with pytest.raises(ValueError):
        e1[1] = 5


def test_equal_count_one_bin():
    assert equal_count_edges(45, 1).tolist() == [0, 45]


# A deterministic subset of the 826 verified (N, nBin) pairs; all of them under -m slow.
_FAST_PAIRS = [(n, nb) for n in range(1000, 1301, 23) for nb in (10, 20)] + [
    (n, nb) for n in range(2000, 2101, 17) for nb in (10, 20)
]
_ALL_PAIRS = [
    (n, nb)
    for n in [*range(1000, 1301), *range(2000, 2101), *range(13880, 13891)]
    for nb in (10, 20)
]


@pytest.mark.parametrize(("n", "n_bins"), _FAST_PAIRS)
def test_equal_count_window_equals_full_window(n, n_bins):
    assert np.array_equal(equal_count_edges(n, n_bins), brute_equal_count_edges(n, n_bins))


@pytest.mark.slow
def test_equal_count_window_equals_full_window_all():
    bad = [
        p
        for p in _ALL_PAIRS
        if not np.array_equal(equal_count_edges(*p), brute_equal_count_edges(*p))
    ]
    assert bad == []


def test_equal_count_closed_form_on_verified_pairs():
    for n, nb in _ALL_PAIRS:
        assert np.array_equal(equal_count_edges(n, nb), closed_form_edges(n, nb)), (n, nb)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(30, 3_000), n_bins=st.integers(1, 150), pop_min=st.integers(5, 40))
def test_equal_count_properties(n, n_bins, pop_min):
    if n < pop_min:
        with pytest.raises(InputError):
            equal_count_edges(n, n_bins, pop_min=pop_min)
        return
    edges = equal_count_edges(n, n_bins, pop_min=pop_min)
    nb = reduce_n_bins(n, n_bins, pop_min=pop_min)
    assert edges.size == nb + 1
    assert np.array_equal(edges, brute_equal_count_edges(n, nb))
    counts = np.diff(edges)
    assert counts.sum() == n and counts.max() - counts.min() <= 1 and counts.min() >= pop_min


def test_equal_count_small_n_is_not_the_closed_form():
    # the HD breakpoint is 7.99999992504 (not an integer): floor gives 7
    assert equal_count_edges(30, 4, pop_min=5).tolist() == [0, 7, 15, 23, 30]


def test_equal_count_large_n():
    edges = equal_count_edges(10_000_000, 20)
    assert np.array_equal(edges, closed_form_edges(10_000_000, 20))


# ---------------------------------------------------------------- sliding


def test_sliding_windows():
    starts, stops = sliding_windows(100, 3)
    assert starts.dtype == np.int64 and stops.dtype == np.int64
    assert starts.tolist() == list(range(68))
    assert (stops - starts).tolist() == [33] * 68
    assert stops[-1] == 100
    # reduction: 100 / 5 < 30 -> 3 windows wide 33
    s2, e2 = sliding_windows(100, 5)
    assert np.array_equal(s2, starts) and np.array_equal(e2, stops)


# ---------------------------------------------------------------- equal-width


def test_equal_width_linear_and_empty_bins():
    x = np.array([0.0, 0.05, 0.1, 0.15, 0.95, 1.0])
    edges = equal_width_edges(x, 4)
    # limits 0, .25, .5, .75: bins 1 and 2 are empty
    assert edges.tolist() == [0, 4, 4, 4, 6]
    assert np.diff(edges).tolist() == [4, 0, 0, 2]


def test_equal_width_log():
    x = np.array([1.0, 2.0, 5.0, 9.0, 11.0, 50.0, 100.0])
    # log limits 1 and 10: the second bin starts at 11
    assert equal_width_edges(x, 2, log=True).tolist() == [0, 4, 7]
    assert equal_width_edges(x, 2, log=False).tolist() == [0, 6, 7]
    # like R, the limit is exp(log(1) + log(100) / 2) = 10.000000000000002 > 10
    x[3] = 10.0
    assert equal_width_edges(x, 2, log=True).tolist() == [0, 4, 7]


def test_equal_width_log_fallback_warns():
    x = np.array([-1.0, 0.0, 1.0, 2.0, 3.0])
    with pytest.warns(UserWarning, match="linear"):
        edges = equal_width_edges(x, 2, log=True)
    assert edges.tolist() == equal_width_edges(x, 2, log=False).tolist()


@pytest.mark.parametrize("bad", [[3.0, 1.0, 2.0], [1.0, np.nan], [], [[1.0, 2.0]]])
def test_equal_width_rejects_bad_values(bad):
    with pytest.raises(InputError):
        equal_width_edges(bad, 2)


# ---------------------------------------------------------------- adaptive

ADAPTIVE_NBR = [
    ("PAL2022", "Diffusion_LR_Test_cal", True, (18, 31, 50)),
    ("PAL2022", "Diffusion_LR_Test_cal", False, (19, 30, 48)),
    ("PAL2022", "Diffusion_LR_Test_uncal", True, (15, 27, 50)),
    ("PAL2022", "Diffusion_LR_Test_uncal", False, (19, 28, 46)),
    ("PAL2022", "Perovskite_GPR_Bayesian_Test_cal", True, (17, 35, 61)),
    ("PAL2022", "Perovskite_GPR_Bayesian_Test_cal", False, (14, 27, 54)),
    ("PAL2022", "Diffusion_RF_Test_cal", True, (15, 26, 44)),
    ("BUS2022", "QM9_E", True, (21, 32, 68)),
]


@pytest.mark.data
@pytest.mark.parametrize(("family", "name", "log", "expected"), ADAPTIVE_NBR)
def test_adaptive_r_bin_counts(data_dir, family, name, log, expected):
    u = qm9_uE(data_dir) if family == "BUS2022" else pal2022(data_dir, name)
    xs = np.sort(u)
    got = tuple(adaptive_edges(xs, nb, log=log).size - 1 for nb in (10, 20, 40))
    assert got == expected
    for nb in (10, 20, 40):
        edges = adaptive_edges(xs, nb, log=log)
        lw, up = r_adaptive(u, nb, log=log)
        assert to_lw(edges) == lw.tolist() and edges[1:].tolist() == up.tolist()


@pytest.mark.data
def test_adaptive_r_pops(data_dir):
    u = pal2022(data_dir, "Diffusion_LR_Test_cal")
    assert u.size == 2040
    pops = np.diff(adaptive_edges(np.sort(u), 20)).tolist()
    expected = (
        "54 99 97 58 57 57 56 58 56 57 55 67 65 66 64 66 65 65 64 78 76 77 75 98 97 63 62 80 37 "
        "30 41"
    )
    assert pops == [int(t) for t in expected.split()]


@pytest.mark.data
def test_perovskite_gpr_filter_count(data_dir):
    assert pal2022(data_dir, "Perovskite_GPR_Bayesian_Test_cal").size == 3818


@settings(max_examples=80, deadline=None)
@given(
    n=st.integers(30, 600),
    n_bins=st.integers(1, 40),
    pop_min=st.integers(5, 30),
    shape=st.floats(0.3, 5.0),
    seed=st.integers(0, 2**31 - 1),
    log=st.booleans(),
    ties=st.booleans(),
)
def test_adaptive_equals_r_transliteration(n, n_bins, pop_min, shape, seed, log, ties):
    rng = np.random.default_rng(seed)
    x = rng.gamma(shape, 1.0, n) + 1e-3
    if ties:
        x = np.round(x, 1) + 0.05
    if n < pop_min:
        return
    edges = adaptive_edges(np.sort(x), n_bins, pop_min=pop_min, log=log)
    lw, up = r_adaptive(x, n_bins, pop_min=pop_min, log=log)
    assert to_lw(edges) == lw.tolist() and edges[1:].tolist() == up.tolist()
    counts = np.diff(edges)
    assert counts.sum() == n and counts.min() >= pop_min


def test_adaptive_log_fallback_and_errors():
    x = np.linspace(-1.0, 1.0, 200)
    with pytest.warns(UserWarning, match="linear"):
        edges = adaptive_edges(x, 4, pop_min=30, log=True)
    assert edges.tolist() == adaptive_edges(x, 4, pop_min=30, log=False).tolist()
    assert edges.tolist() == [0, 50, 100, 150, 200]
    with pytest.raises(InputError, match="too few points"):
        adaptive_edges(np.arange(1.0, 20.0), 2)


# ---------------------------------------------------------------- make_bins / Bins


def test_make_bins_equal_count_with_padding():
    rng = np.random.default_rng(3)
    x = rng.exponential(size=300)
    x[::7] = x[0]  # ties keep input order
    xp = np.r_[x, np.full(20, np.nan)]
    b = make_bins(xp, 5)
    assert isinstance(b, Bins)
    assert b.scheme == "equal-count" and not b.log and b.n_requested == 5 and b.pop_min == 30
    assert np.array_equal(b.order, np.argsort(x, kind="stable"))
    assert np.array_equal(b.edges, equal_count_edges(300, 5))
    assert b.n_bins == 5 and b.counts.tolist() == [60] * 5
    lw, up = b.lw_up_1based()
    assert lw.tolist() == [1, 61, 121, 181, 241] and up.tolist() == [60, 120, 180, 240, 300]
    assert not b.order.flags.writeable
    with pytest.raises(AttributeError):
        b.scheme = "adaptive"


def test_make_bins_nan_anywhere_and_inf_dropped():
    x = np.array([np.nan, 3.0, np.inf, 1.0, 2.0] * 20)
    b = make_bins(x, 2, pop_min=10)
    assert b.order.size == 60 and np.all(np.isfinite(x[b.order]))


@pytest.mark.parametrize("scheme", SCHEMES)
def test_make_bins_schemes(scheme):
    rng = np.random.default_rng(11)
    x = np.r_[rng.lognormal(size=500), [np.nan] * 5]
    b = make_bins(x, 8, scheme=scheme, pop_min=20)
    xs = x[b.order]
    assert b.scheme == scheme and b.edges[0] == 0 and b.edges[-1] == 500
    if scheme == "equal-width":
        assert np.array_equal(b.edges, equal_width_edges(xs, 8, log=True))
        assert b.log
    elif scheme == "adaptive":
        assert np.array_equal(b.edges, adaptive_edges(xs, 8, pop_min=20, log=True))
        assert b.counts.min() >= 20


def test_make_bins_adaptive_log_fallback_records_linear():
    x = np.linspace(-1.0, 1.0, 200)
    with pytest.warns(UserWarning):
        b = make_bins(x, 4, scheme="adaptive")
    assert not b.log


def test_make_bins_errors():
    with pytest.raises(InputError, match="equal-count, equal-width, adaptive"):
        make_bins(np.arange(100.0), 2, scheme="quantile")
    with pytest.raises(InputError, match="too few points"):
        make_bins(np.r_[np.arange(20.0), [np.nan] * 50], 1)
    with pytest.raises(InputError, match="one-dimensional"):
        make_bins(np.ones((10, 10)), 1)


def test_no_warning_for_positive_log_binning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_bins(np.arange(1.0, 301.0), 5, scheme="adaptive")


@pytest.mark.parametrize("n", [20_000, 123_457, 1_000_000, 2_000_000])
def test_equal_count_edges_shortcut_equals_the_exact_harrell_davis_sum(n):
    """Away from integers, floor(n p + 1/2) is the floor of the exact HD sum of the ranks."""
    from uqx.engine.binning import _equal_count_edges, _hd_of_ranks

    for n_bins in (7, 20, 90, 150):
        got = _equal_count_edges(n, n_bins)
        want = [0] + [math.floor(_hd_of_ranks(n, j * (1.0 / n_bins)))
                      for j in range(1, n_bins)] + [n]
        assert got.tolist() == want, (n, n_bins)
