"""Statistic evaluator and bootstrap engine (uqx.engine.statistic, uqx.bootstrap).

Independent checks (methods: bootstrap): the exact jackknife and the count-based
replicates of every statistic family against brute-force recomputation with the kernels of
:mod:`uqx.engine.stats`; the BCa interval against a direct transcription of the nptest steps and
against :func:`scipy.stats.bootstrap`; reproducibility (seed, scheduler, workers, set
keys); input errors; and (slow) the coverage of ZMS BCa intervals on calibrated data.
"""

import numpy as np
import pytest
import twins as B
import twins as C
from scipy import stats as sps

import uqx
from uqx.engine.binning import equal_count_edges, make_bins
from uqx.engine.confidence import (
    basic_interval,
    bca_interval,
    jackknife_acceleration,
    percentile_interval,
)
from uqx.engine.evaluator import SetEvaluator
from uqx.engine.resample import BootstrapPlan
from uqx.engine.statistic import BinningConfig, parse_stat
from uqx.engine.stats.correlation import spearman_cc
from uqx.inference.bootstrap import (
    bootstrap,
    bootstrap_per_bin,
    bootstrap_samples,
    bootstrap_set,
)

# ---------------------------------------------------------------- brute-force twins

MOMENT = ("zms", "rce", "var_z", "nll", "mv", "mse", "mean_z", "nll_ref")
BINNED_UE = ("ence", "ence_sd", "uce", "zmse", "zve", "lzisd", "lzms")


def kernel_scalar(name, E, u):
    """Moment and rank statistics with the numpy kernels."""
    if name == "cc":
        return spearman_cc(E, u)
    if name in ("mv", "nll_ref"):
        return getattr(C, name)(u)
    if name == "mse":
        return C.mse(E)
    return getattr(C, name)(E, u)


def kernel_binned(base, Es, us, edges):
    """Binned statistics of data sorted by the binning variable, with the kernels."""
    if base == "ence":
        return B.ence(Es, us, edges, kind="rmse")
    if base == "ence_sd":
        return B.ence(Es, us, edges, kind="sd")
    if base == "lzms":
        return B.per_bin(Es, us, edges)["zms"]
    return getattr(B, base)(Es, us, edges)


def brute_all(names, E, u, cond, edges_of):
    """All statistics of a batch of samples (rows), with the kernels' batch axis.

    Binned statistics sort every row stably by its conditioning variable and cut it with
    ``edges_of(cond_name, vector)``: edges (N+1,) shared by the rows or (rows, N+1).
    Returns {name: (rows, K)}.
    """
    out = {}
    for name in names:
        s = parse_stat(name)
        if s.family != "binned":
            out[name] = np.asarray(kernel_scalar(s.base, E, u))[:, None]
        else:
            o = np.argsort(cond[s.cond], axis=-1, kind="stable")
            Es, us = np.take_along_axis(E, o, -1), np.take_along_axis(u, o, -1)
            v = kernel_binned(s.base, Es, us, edges_of(s.cond, s.vector))
            out[name] = v if s.vector else v[:, None]
    return out


def leave_one_out_rows(x):
    """(M, M-1) array whose row i is x without element i."""
    M = x.size
    keep = ~np.eye(M, dtype=bool)
    return np.broadcast_to(x, (M, M))[keep].reshape(M, M - 1)


def tied_sample(rng, M):
    """Calibrated-ish data with many ties in u, |E| and X (coarse rounding)."""
    u = np.round(rng.uniform(0.2, 2.0, M), 2)
    E = np.round(u * rng.standard_normal(M), 2)
    E[E == 0] = 0.01
    X = np.round(rng.uniform(1.0, 5.0, M), 1)
    return E, u, X


ALL_STATS = MOMENT + ("cc",) + BINNED_UE + ("zmse_X", "ence_X")

# ---------------------------------------------------------------- jackknife


@pytest.mark.parametrize(
    "M,n_bins,scheme",
    [
        (480, 8, "equal-count"),
        (600, 20, "equal-count"),  # intrvJack has 19 bins: popMin reduction at M - 1
        (450, 6, "adaptive"),
    ],
)
def test_jackknife_equals_brute_force_leave_one_out(M, n_bins, scheme):
    rng = np.random.default_rng(M + n_bins)
    E, u, X = tied_sample(rng, M)
    specs = [parse_stat(s) for s in ALL_STATS]
    ev = SetEvaluator(E, u, specs, BinningConfig(n_bins=n_bins, scheme=scheme), cond={"X": X})
    jk = ev.jackknife()
    for name in ALL_STATS:
        assert jk[name].shape == (M, ev.n_components(parse_stat(name))), name
    jack_edges = equal_count_edges(M - 1, n_bins)  # R's intrvJack = genIntervals(1:(M-1), nBin)

    def edges_of(c, vector):
        b = ev.bins_of(c)
        if scheme == "equal-count" and (jack_edges.size == b.edges.size or not vector):
            return jack_edges
        # adaptive scheme (and a per-bin statistic that must keep its N components): the
        # original intervals, the bin that lost the left-out sample one shorter
        pos = np.empty(M, dtype=np.int64)
        pos[b.order] = np.arange(M)  # sorted position of each left-out sample
        return b.edges[None, :] - (b.edges[None, :] > pos[:, None])

    if M == 600:
        assert jack_edges.size == 20 and ev.bins_of("uE").edges.size == 21
    rows = {"uE": leave_one_out_rows(u), "X": leave_one_out_rows(X)}
    ref = brute_all(ALL_STATS, leave_one_out_rows(E), rows["uE"], rows, edges_of)
    for name in ALL_STATS:
        np.testing.assert_allclose(jk[name], ref[name], rtol=1e-10, atol=1e-13, err_msg=name)


# ---------------------------------------------------------------- replicates


@pytest.mark.parametrize("scheme", ["equal-count", "adaptive"])
def test_replicates_equal_brute_force_on_expanded_resample(scheme):
    rng = np.random.default_rng(5)
    M, n_bins = 420, 7
    E, u, X = tied_sample(rng, M)
    names = ALL_STATS
    ev = SetEvaluator(
        E,
        u,
        [parse_stat(s) for s in names],
        BinningConfig(n_bins=n_bins, scheme=scheme),
        cond={"X": X},
    )
    plan = BootstrapPlan(M=M, n_boot=40, seed=3, key="rep")
    reps = ev.replicates(plan, 0)
    counts = plan.counts(0)
    # a single call with batch_elems forcing one-replicate batches gives the same values
    reps1 = ev.replicates(plan, 0, batch_elems=1)
    for name in names:
        np.testing.assert_array_equal(reps1[name], reps[name])
    # expanded resamples in file order, one row per replicate (every row has M values)
    idx = np.stack([np.repeat(np.arange(M), counts[r]) for r in range(counts.shape[0])])
    # Binned statistics: the engine (_weighted_bin_sums) walks the ORIGINAL stable sort
    # order of the binning variable and emits all copies of a sample together, so ties
    # between different samples are broken by their file order (not by draw order as in
    # R). A stable argsort of this file-order expansion (done in brute_all) gives exactly
    # that sequence; the bins are the fixed intervals of the original sample (for
    # equal-count, equal_count_edges(M, N)), as in SimRef calScoresBS2 (methods: bootstrap).
    cond = {"uE": u[idx], "X": X[idx]}
    ref = brute_all(names, E[idx], u[idx], cond, lambda c, vector: ev.bins_of(c).edges)
    for name in names:
        np.testing.assert_allclose(reps[name], ref[name], rtol=1e-10, atol=1e-13, err_msg=name)
    # the estimate is the statistic of the sample itself
    est = ev.estimate()
    ref0 = brute_all(
        names, E[None], u[None], {"uE": u[None], "X": X[None]},
        lambda c, vector: ev.bins_of(c).edges,
    )
    for name in names:
        np.testing.assert_allclose(est[name], ref0[name][0], rtol=1e-10, atol=1e-13)
    if scheme == "equal-count":
        np.testing.assert_array_equal(ev.bins_of("uE").edges, equal_count_edges(M, n_bins))


def test_replicate_order_ties_straddling_a_bin_boundary():
    """Tied u values across a bin edge: copies follow the original stable order."""
    M = 60
    u = np.r_[np.full(30, 1.0), np.full(30, 2.0)]
    u[25:35] = 1.5  # ten tied samples straddle the edge at rank 30
    E = np.linspace(-1.0, 1.0, M)
    ev = SetEvaluator(E, u, [parse_stat("lzms")], BinningConfig(n_bins=2, pop_min=10))
    counts = np.ones((1, M), dtype=np.int32)
    counts[0, 26] = 3  # a tied sample drawn thrice, two others of its tie group never
    counts[0, [32, 33, 40]] = 0
    counts[0, 2] = 2
    assert counts.sum() == M
    got = ev._from_counts(counts)["lzms"][0]
    idx = np.repeat(np.arange(M), counts[0])
    o = np.argsort(u[idx], kind="stable")
    e, w = E[idx][o], u[idx][o]
    np.testing.assert_allclose(
        got, [np.mean((e[:30] / w[:30]) ** 2), np.mean((e[30:] / w[30:]) ** 2)], rtol=1e-12
    )


# ---------------------------------------------------------------- BCa interval


def direct_bca(t0, reps, jack, level=0.95):
    """methods: bootstrap step by step for one scalar statistic (nptest np.boot)."""
    T = np.r_[t0, reps]  # R + 1 values, t0 included
    z0 = sps.norm.ppf(np.sum(T < t0) / T.size)  # strict <, t0 in the denominator
    tbar = np.mean(jack)
    d = tbar - jack
    a = np.sum(d**3) / (6.0 * np.sum(d**2) ** 1.5)
    z1, z2 = sps.norm.ppf((1 - level) / 2), sps.norm.ppf((1 + level) / 2)
    alpha = [sps.norm.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (z1, z2)]
    T = T[~np.isnan(T)]
    lo, hi = np.quantile(T, alpha, method="linear")  # R type 7
    return lo, hi, z0, a


def test_bca_interval_vs_direct_steps(rng):
    K = 3
    t0 = np.array([1.0, 0.2, -3.0])
    T = np.vstack([t0, t0 + rng.gamma(2.0, 0.1, (999, K)) - 0.15])
    jack = t0 + rng.standard_normal((250, K)) ** 3 * 0.01
    for level in (0.95, 0.9):
        lo, hi, z0, a = bca_interval(T, t0, jack, level=level)
        for k in range(K):
            ref = direct_bca(t0[k], T[1:, k], jack[:, k], level)
            np.testing.assert_allclose([lo[k], hi[k], z0[k], a[k]], ref, rtol=1e-12)
    np.testing.assert_allclose(jackknife_acceleration(jack), a, rtol=1e-12)
    # NaN replicates are dropped by the quantile step only
    Tn = T.copy()
    Tn[5:9, 0] = np.nan
    lo, hi, _, _ = bca_interval(Tn, t0, jack)
    ref = direct_bca(t0[0], Tn[1:, 0], jack[:, 0])
    np.testing.assert_allclose([lo[0], hi[0]], ref[:2], rtol=1e-12)


def test_bca_degenerate_cases_give_nan():
    t0 = np.array([0.0, 0.0])
    T = np.array([[0.0, 0.0], [1.0, -1.0], [2.0, 1.0], [3.0, 2.0]])  # column 0: none < t0
    jack = np.array([[0.1, 0.2], [0.3, 0.1], [0.0, 0.5]])
    lo, hi, z0, _ = bca_interval(T, t0, jack)
    assert np.isneginf(z0[0]) and np.isnan(lo[0]) and np.isnan(hi[0])
    assert np.isfinite(lo[1]) and np.isfinite(hi[1])
    lo, hi, _, a = bca_interval(T, t0, np.ones((3, 2)))  # constant jackknife: a = 0/0
    assert np.all(np.isnan(a)) and np.all(np.isnan(lo))


def test_percentile_and_basic_intervals(rng):
    T = rng.normal(size=(501, 2))
    t0 = T[0]
    lo, hi = percentile_interval(T, level=0.9)
    np.testing.assert_allclose(lo, np.quantile(T, 0.05, axis=0), rtol=1e-14)
    np.testing.assert_allclose(hi, np.quantile(T, 0.95, axis=0), rtol=1e-14)
    blo, bhi = basic_interval(T, t0, level=0.9)
    np.testing.assert_allclose(blo, 2 * t0 - hi, rtol=1e-14)
    np.testing.assert_allclose(bhi, 2 * t0 - lo, rtol=1e-14)


def test_bootstrap_set_summaries_follow_nptest_conventions():
    rng = np.random.default_rng(21)
    M = 300
    u = rng.uniform(0.5, 2.0, M)
    E = u * rng.standard_normal(M)
    res = bootstrap_set(
        E, u, ["zms", "cc", "ence"], n_boot=600, seed=4, keep_replicates=True, bins=5
    )
    assert res.seed == 4
    for name in ("zms", "cc", "ence"):
        r = res[name]
        T = r["replicates"][:, 0]
        assert T.shape == (601,) and T[0] == r["estimate"][0]
        assert r["bias"][0] == pytest.approx(T.mean() - T[0], rel=1e-12, abs=1e-15)
        assert r["se"][0] == pytest.approx(T.std(ddof=1), rel=1e-12)
        # BCa from the engine == the direct BCa formulas with a brute-force jackknife
        jack = np.empty(M)
        for i in range(M):
            keep = np.arange(M) != i
            if name == "ence":
                e, w = E[keep], u[keep]
                o = np.argsort(w, kind="stable")
                jack[i] = B.ence(e[o], w[o], equal_count_edges(M - 1, 5))
            else:
                jack[i] = kernel_scalar(name, E[keep], u[keep])
        ref = direct_bca(T[0], T[1:], jack)
        np.testing.assert_allclose([r["ci_low"][0], r["ci_high"][0]], ref[:2], rtol=1e-9)
        np.testing.assert_allclose(r["acceleration"][0], ref[3], rtol=1e-7, atol=1e-12)
    pct = bootstrap_set(E, u, ["zms"], n_boot=600, seed=4, method="percentile")["zms"]
    np.testing.assert_allclose(
        [pct["ci_low"][0], pct["ci_high"][0]],
        np.quantile(res["zms"]["replicates"][:, 0], [0.025, 0.975]),
        rtol=1e-12,
    )
    assert np.isnan(pct["acceleration"][0])


def test_bca_close_to_scipy_bootstrap():
    """uqx BCa vs scipy.stats.bootstrap(method="BCa", paired=True), independent draws.

    Tolerance: each endpoint is a Monte-Carlo estimate. With R = 4000 the type-7 quantile
    at ~2.5 % has sd ~ sqrt(p(1-p)/R)/phi(1.96) ~ 0.04 se, and the z0 estimate (sd ~
    0.02) moves the BCa level by about as much again, so one endpoint carries ~0.06 se of
    noise and the difference of two independent runs ~0.09 se. scipy also counts ties
    in z0 by halves and excludes t0; those change z0 by O(1/R). |diff| < 0.3 se is a
    > 3 sigma bound; the standard errors agree within 6 % (each ~1.1 % MC noise).
    """
    rng = np.random.default_rng(11)
    M = 2000
    u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))
    E = u * rng.standard_normal(M)
    res = bootstrap_set(E, u, ["zms", "rce", "cc"], n_boot=4000, seed=2024)
    funcs = {
        "zms": lambda e, w, axis=-1: C.zms(e, w, axis=axis),
        "rce": lambda e, w, axis=-1: C.rce(e, w, axis=axis),
        "cc": lambda e, w, axis=-1: spearman_cc(e, w, axis=axis),
    }
    for name, f in funcs.items():
        ref = sps.bootstrap(
            (E, u),
            f,
            paired=True,
            vectorized=True,
            n_resamples=4000,
            method="BCa",
            rng=np.random.default_rng(7),
        )
        se = res[name]["se"][0]
        assert res[name]["estimate"][0] == pytest.approx(f(E, u), rel=1e-12)
        assert abs(res[name]["ci_low"][0] - ref.confidence_interval.low) < 0.3 * se, name
        assert abs(res[name]["ci_high"][0] - ref.confidence_interval.high) < 0.3 * se, name
        assert se == pytest.approx(ref.standard_error, rel=0.06), name


# ---------------------------------------------------------------- reproducibility


@pytest.fixture(scope="module")
def two_sets():
    rng = np.random.default_rng(99)
    sets = []
    for name, M in (("alpha", 700), ("beta", 1100)):
        u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))
        E = u * rng.standard_normal(M)
        X = rng.uniform(0, 1, M)
        sets.append(uqx.from_arrays(E, u, X=X, name=name))
    return sets


STATS_REPRO = ["zms", "rce", "cc", "ence", "zmse_X"]
FIELDS = ["estimate", "bias", "se", "ci_low", "ci_high", "z0", "acceleration"]


def _same(a, b):
    for f in FIELDS + ["replicates"]:
        np.testing.assert_array_equal(a[f].values, b[f].values, err_msg=f)


def test_same_seed_same_result_for_any_scheduler(two_sets):
    kw = dict(n_boot=600, seed=77, keep_replicates=True, bins=10)
    ref = bootstrap(two_sets, STATS_REPRO, scheduler="synchronous", **kw)
    for sched, nw in (("threads", 1), ("threads", 2), ("threads", None)):
        _same(bootstrap(two_sets, STATS_REPRO, scheduler=sched, num_workers=nw, **kw), ref)
    assert ref.attrs["seed"] == 77


def test_processes_scheduler_same_result(two_sets):
    kw = dict(n_boot=300, seed=77, keep_replicates=True, bins=10)
    ref = bootstrap(two_sets, ["zms", "ence"], scheduler="synchronous", **kw)
    got = bootstrap(two_sets, ["zms", "ence"], scheduler="processes", num_workers=2, **kw)
    _same(got, ref)


def test_different_seeds_differ(two_sets):
    a = bootstrap(two_sets, ["zms", "ence"], n_boot=300, seed=1, keep_replicates=True)
    b = bootstrap(two_sets, ["zms", "ence"], n_boot=300, seed=2, keep_replicates=True)
    np.testing.assert_array_equal(a.estimate.values, b.estimate.values)
    assert not np.array_equal(a.replicates.values[..., 1:], b.replicates.values[..., 1:])
    assert not np.array_equal(a.ci_low.values, b.ci_low.values)
    # no seed: fresh entropy, recorded
    c = bootstrap(two_sets, ["zms"], n_boot=50)
    assert isinstance(c.attrs["seed"], int)
    d = bootstrap(two_sets, ["zms"], n_boot=50, seed=c.attrs["seed"])
    np.testing.assert_array_equal(c.ci_low.values, d.ci_low.values)


def test_stacked_bootstrap_equals_per_set(two_sets):
    stats = STATS_REPRO
    res = bootstrap(two_sets, stats, n_boot=520, seed=13, bins=10, keep_replicates=True)
    assert res.sizes == {"set": 2, "stat": len(stats), "replicate": 521}
    assert list(res["set"].values) == ["alpha", "beta"]
    np.testing.assert_array_equal(res["M"].values, [700, 1100])
    for i, ds in enumerate(two_sets):
        one = bootstrap_set(
            ds.E.values,
            ds.uE.values,
            stats,
            X=ds.X.values,
            n_boot=520,
            seed=13,
            bins=10,
            name=ds.attrs["name"],
            keep_replicates=True,
        )
        for j, s in enumerate(stats):
            for f in FIELDS:
                assert res[f].values[i, j] == one[s][f][0] or (
                    np.isnan(res[f].values[i, j]) and np.isnan(one[s][f][0])
                ), (s, f)
            np.testing.assert_array_equal(res.replicates.values[i, j], one[s]["replicates"][:, 0])
    # the randomness is keyed by the set name: a renamed set gets other resamples
    other = bootstrap_set(
        two_sets[0].E.values,
        two_sets[0].uE.values,
        ["zms"],
        n_boot=520,
        seed=13,
        name="gamma",
        keep_replicates=True,
    )
    assert np.array_equal(other["zms"]["replicates"][:, 0], res.replicates.values[0, 0])
    # and not by the position in the stack
    rev = bootstrap(two_sets[::-1], ["zms"], n_boot=520, seed=13, keep_replicates=True)
    # same draws; a moments-only call streams feature sums instead of summing counts, so
    # only the summation order (last bits) differs from the call with binned statistics
    np.testing.assert_allclose(rev.replicates.values[1, 0], res.replicates.values[0, 0],
                               rtol=1e-12)
    again = bootstrap(two_sets[::-1], ["zms"], n_boot=520, seed=13, keep_replicates=True)
    np.testing.assert_array_equal(again.replicates.values, rev.replicates.values)


def test_bootstrap_result_metadata(two_sets):
    res = bootstrap(two_sets, ["zms", "zmse_X"], n_boot=100, seed=3, method="basic")
    assert res.attrs["bootstrap_method"] == "basic" and res.attrs["n_boot"] == 100
    assert list(res["stat"].values) == ["zms", "zmse_X"]
    for f in FIELDS + ["n_nan"]:
        assert res[f].dims == ("set", "stat") and "long_name" in res[f].attrs
    assert np.all(res["n_nan"].values == 0)
    assert np.all(res.ci_low.values <= res.ci_high.values)


def test_bootstrap_per_bin(two_sets):
    res = bootstrap_per_bin(two_sets, "lzisd", n_boot=400, seed=5, bins=8)
    assert res.sizes == {"set": 2, "bin": 8}
    for f in ("estimate", "bias", "se", "ci_low", "ci_high", "n", "x_mid"):
        assert res[f].dims == ("set", "bin")
    est, lo, hi = res.estimate.values, res.ci_low.values, res.ci_high.values
    assert np.all((lo <= est) & (est <= hi))
    np.testing.assert_array_equal(res.n.values.sum(axis=1), [700, 1100])
    for i, ds in enumerate(two_sets):
        e, w = ds.E.values, ds.uE.values
        b = make_bins(w, 8)
        np.testing.assert_allclose(est[i], B.lzisd(e[b.order], w[b.order], b.edges), rtol=1e-10)
        ws = w[b.order]
        np.testing.assert_allclose(
            res.x_mid.values[i], (ws[b.edges[:-1]] + ws[b.edges[1:] - 1]) / 2
        )
    # conditioning on X; ragged numbers of bins are padded with NaN
    rx = bootstrap_per_bin(two_sets, "lzms_X", n_boot=200, seed=5, bins=30)
    assert rx.sizes["bin"] == 30  # beta: 1100 / 30 >= 30
    assert np.isnan(rx.estimate.values[0, 23:]).all()  # alpha: 700 // 30 = 23 bins
    assert np.isfinite(rx.estimate.values[0, :23]).all()
    assert rx.attrs["cond"] == "X"


def test_bad_input_raises_input_error(two_sets):
    E, u = two_sets[0].E.values, two_sets[0].uE.values
    bad = [
        dict(stats=["zmss"]),
        dict(stats=["ence_W"]),
        dict(n_boot=1),
        dict(n_boot=2.5),
        dict(level=1.0),
        dict(level=0.0),
        dict(level=1.5),
        dict(level=float("nan")),
        dict(method="studentized"),
    ]
    for kw in bad:
        with pytest.raises(uqx.InputError):
            bootstrap(two_sets, **{"stats": ["zms"], "n_boot": 10, **kw})
        with pytest.raises(uqx.InputError):
            bootstrap_set(E, u, **{"stats": ["zms"], "n_boot": 10, **kw})
    with pytest.raises(uqx.InputError):
        bootstrap(two_sets, ["lzisd"], n_boot=10)  # per-bin: bootstrap_per_bin
    with pytest.raises(uqx.InputError):
        bootstrap_per_bin(two_sets, "zms", n_boot=10)  # not per-bin
    with pytest.raises(uqx.InputError):
        bootstrap_set(E, u, ["zmse_V"], n_boot=10)  # no V variable
    with pytest.raises(uqx.InputError):
        parse_stat("nonsense")
    with pytest.raises(uqx.InputError):
        bootstrap_set(E, u, ["zms"], n_boot=10, level="0.9")  # not a number
    with pytest.raises(uqx.InputError):
        bootstrap_set(E, u[:-1], ["zms"], n_boot=10)  # length mismatch


def test_bootstrap_set_checks_its_arrays_and_takes_a_single_name(two_sets):
    E, u, X = (two_sets[0][k].values for k in ("E", "uE", "X"))
    pad = np.full(7, np.nan)
    kw = dict(n_boot=200, seed=3, name="alpha", bins=6, keep_replicates=True)
    ref = bootstrap_set(E, u, ["zms", "ence", "zmse_X"], X=X, **kw)
    assert ref.n_dropped == 0
    # arrays go through the checks of from_arrays: NaN/inf rows are an error naming the
    # column, the count and the rows (they used to be dropped without a word; before that,
    # NaN padding crashed the interpreter in the numba binning kernel)
    padded = dict(X=np.r_[X, pad], **kw)
    with pytest.raises(uqx.InputError, match=r"alpha: 7 value\(s\) of E .* NaN or infinite"):
        bootstrap_set(np.r_[E, pad], np.r_[u, pad], ["zms", "ence", "zmse_X"], **padded)
    with pytest.raises(uqx.InputError, match=r"1 value\(s\) of uE \(0-based rows 2\).*"
                       "NaN or infinite"):
        bootstrap_set(E, np.r_[u[:2], np.inf, u[3:]], ["zms"], **kw)
    with pytest.raises(uqx.InputError, match=r"1 value\(s\) of X .* NaN or infinite"):
        bootstrap_set(E, u, ["zmse_X"], **{**kw, "X": np.r_[X[:-1], np.nan]})
    for bad in (0.0, -1.0):
        with pytest.raises(uqx.InputError, match=r"1 value\(s\) of uE \(0-based rows 4\) "
                           "are <= 0"):
            bootstrap_set(E, np.r_[u[:4], bad, u[5:]], ["zms"], **kw)
    # the documented drop option drops them and reports the count (warning, n_dropped)
    with pytest.warns(UserWarning, match=rf"alpha: dropped 7 row\(s\) .*; {E.size} row"):
        got = bootstrap_set(np.r_[E, pad], np.r_[u, pad], ["zms", "ence", "zmse_X"],
                            drop_nonfinite=True, **padded)
    assert got.n_dropped == 7
    for s in ref:
        for f in FIELDS + ["replicates"]:
            np.testing.assert_array_equal(got[s][f], ref[s][f], err_msg=f"{s} {f}")
    one = bootstrap_set(E, u, "zms", **kw)  # a str is one statistic name
    assert list(one) == ["zms"]
    np.testing.assert_array_equal(one["zms"]["replicates"], ref["zms"]["replicates"])


def test_bootstrap_samples_checks_each_sample():
    rng = np.random.default_rng(0)
    v = rng.standard_normal(20)
    ok = (v, np.ones_like(v))
    with pytest.raises(uqx.InputError, match=r"sample1: 1 value\(s\) of E .* NaN"):
        bootstrap_samples([ok, (np.r_[v[:-1], np.nan], np.ones_like(v))], "rmse",
                          n_boot=10, seed=1)
    with pytest.raises(uqx.InputError, match=r"sample0: .* of uE .* are <= 0"):
        bootstrap_samples([(v, np.r_[0.0, np.ones(19)])], "rmse", n_boot=10, seed=1)


def test_set_evaluator_rejects_non_finite_or_ragged_input():
    E, u = np.array([0.1, -0.2, 0.3, 0.05]), np.array([0.2, 0.1, 0.3, 0.2])
    spec = [parse_stat("ence")]
    for bad in (dict(E=np.r_[E[:3], np.nan]), dict(u=np.r_[u[:3], np.inf]), dict(u=u[:3])):
        args = {"E": E, "u": u, **bad}
        with pytest.raises(uqx.InputError):
            SetEvaluator(args["E"], args["u"], spec)
    with pytest.raises(uqx.InputError):
        SetEvaluator(E, u, [parse_stat("zmse_X")], cond={"X": np.r_[1.0, 2.0, np.nan, 3.0]})


def test_moment_replicates_streamed_equal_counts_route():
    # moment statistics stream feature sums of the draws without materialising counts:
    # same draws as the counts (up to summation order), several sample blocks here
    M = 4 * 65536 + 1000
    rng = np.random.default_rng(1)
    u = rng.uniform(0.5, 2.0, M)
    E = u * rng.standard_normal(M)
    ev = SetEvaluator(E, u, [parse_stat(s) for s in ("zms", "rce", "var_z", "nll")])
    plan = BootstrapPlan(M=M, n_boot=3, seed=1, key="big")
    streamed = ev.replicates(plan, 0)
    from_counts = ev._from_moment_sums(plan.counts(0) @ ev._moment_features(0, M))
    for k in streamed:
        np.testing.assert_allclose(streamed[k], from_counts[k], rtol=1e-10)


# ---------------------------------------------------------------- coverage (slow)


@pytest.mark.slow
def test_zms_bca_coverage_on_calibrated_nig_data():
    """ZMS BCa intervals contain 1 in 95 % +- 3 % of calibrated NIG(nu = 6) data sets.

    uE^2 ~ InvGamma(3, scale 3), E = uE N(0, 1), M = 5000, 400 data sets (methods: synthetic data,
    the R study gives p_val 0.937 with R = 5000). n_boot = 1000 instead of 5000-10^4
    to keep the test affordable: it only adds Monte-Carlo noise to each endpoint, not bias
    that matters at this tolerance. With 400 sets the binomial sd of the coverage is 1.1 %,
    so +-3 % is a ~2.7 sigma band (the seed is fixed).
    """
    rng = np.random.default_rng(6)
    M, n_sets = 5000, 400
    sets = []
    for k in range(n_sets):
        u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))  # InvGamma(shape 3, scale 3)
        sets.append(uqx.from_arrays(u * rng.standard_normal(M), u, name=f"nig{k}"))
    res = bootstrap(uqx.stack(sets), ["zms"], n_boot=1000, seed=2026)
    lo, hi = res.ci_low.values[:, 0], res.ci_high.values[:, 0]
    assert np.isfinite(lo).all() and np.isfinite(hi).all()
    cover = np.mean((lo <= 1.0) & (1.0 <= hi))
    assert abs(cover - 0.95) <= 0.03, cover


def test_rank_statistic_with_constant_variable_is_nan_not_an_error():
    # homoscedastic UQ (constant uE): Spearman CC is undefined; the numba rank kernels used
    # to raise ZeroDivisionError instead of returning NaN like the kernel
    rng = np.random.default_rng(4)
    M = 120
    u = np.full(M, 0.5)
    E = u * rng.standard_normal(M)
    assert np.isnan(spearman_cc(E, u))
    r = bootstrap_set(E, u, ["cc", "zms"], n_boot=60, seed=1, keep_replicates=True)
    assert np.isnan(r["cc"]["replicates"]).all() and r["cc"]["n_nan"][0] == 61
    assert np.isfinite(r["zms"]["ci_low"][0])
    # a single distinct u: leaving it out leaves a constant variable
    u[3] = 0.7
    ev = SetEvaluator(E, u, [parse_stat("cc")])
    jk = ev.jackknife()["cc"][:, 0]
    ref = spearman_cc(leave_one_out_rows(E), leave_one_out_rows(u))
    np.testing.assert_allclose(jk, ref, rtol=1e-10, equal_nan=True)
    assert np.isnan(jk[3]) and np.isfinite(np.delete(jk, 3)).all()


def test_bootstrap_per_bin_empty_bins_are_nan():
    rng = np.random.default_rng(0)
    u = np.r_[rng.uniform(1.0, 1.2, 200), rng.uniform(3.0, 3.2, 200)]  # a gap in u
    ds = uqx.from_arrays(u * rng.standard_normal(400), u)
    r = bootstrap_per_bin(ds, "lzms", binning="equal-width", bins=4, n_boot=100, seed=1)
    np.testing.assert_array_equal(r.n.values[0], [200, 0, 0, 200])
    for f in ("x_mid", "estimate", "ci_low", "ci_high"):
        v = r[f].values[0]
        assert np.isnan(v[1:3]).all() and np.isfinite(v[[0, 3]]).all(), f
    assert 1.0 <= r.x_mid.values[0, 0] <= 1.2 and 3.0 <= r.x_mid.values[0, 3] <= 3.2


def test_binned_route_without_sorted_copies_same_bits(monkeypatch):
    # sets beyond SORTED_COPY_ROWS read E and u through the sort order (nothing held):
    # estimate, replicates and jackknife have the bits of the sorted-copy route
    from uqx.engine import evaluator

    M = 3000
    rng = np.random.default_rng(7)
    u = rng.gamma(4.0, 0.25, M)
    E = u * rng.standard_normal(M)
    X = rng.uniform(size=M)
    specs = [parse_stat(s) for s in ("zms", "rce", "ence", "zve_X", "lzms")]
    plan = BootstrapPlan(M=M, n_boot=30, seed=2, key="gather")

    def run():
        ev = SetEvaluator(E, u, specs, cond={"X": X})
        return ev.estimate(), ev.replicates(plan, 0), ev.jackknife(chunk_elems=5000)

    stored = run()
    monkeypatch.setattr(evaluator, "SORTED_COPY_ROWS", 0)
    gathered = run()
    for a, b in zip(stored, gathered, strict=True):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
