"""ζ-scores, binomial intervals and simulated references (uqx.inference.reference).

Oracles: methods: ζ-scores (ζ, ζ_Sim2 and the 000 Table A3 Set 1 ENCE check) (Newcombe
1998 published Wilson / Wilson-cc intervals, and scipy's independent implementation)
(simulated references: generative model, Sim/Sim2 summaries, keyed reproducibility,
t_s(ν) with ν > 2) (edge cases). The simulated statistics are recomputed by brute
force from the very draws the simulator used (the same keyed stream redrawn by
``draw_unit``).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from internals import simulate
from scipy import stats as sps

import uqx
from uqx.dataio.model import InputError
from uqx.engine.copies import cc_fixed_u, sorted_keys
from uqx.engine.unit_variance import draw_unit
from uqx.inference import reference as R
from uqx.inference.reference import simulate_reference
from uqx.inference.zeta import binomial_ci, d_sensitive, zeta_score, zeta_sim2

# ---------------------------------------------------------------- zeta_score


def test_zeta_sign_conventions_both_sides():
    # estimate above the reference: distance over the LOWER half-interval, ζ > 0
    assert float(zeta_score(1.2, 1.0, 1.1, 1.3)) == pytest.approx(2.0)
    assert float(zeta_score(1.05, 1.0, 0.9, 1.3)) == pytest.approx(0.05 / 0.15)
    # estimate below the reference: distance over the UPPER half-interval, ζ < 0
    assert float(zeta_score(0.8, 1.0, 0.7, 0.9)) == pytest.approx(-2.0)
    assert float(zeta_score(0.95, 1.0, 0.7, 1.2)) == pytest.approx(-0.05 / 0.25)
    # only the half-interval on the reference's side matters
    assert float(zeta_score(1.2, 1.0, 1.1, 99.0)) == pytest.approx(2.0)
    assert float(zeta_score(0.8, 1.0, -99.0, 0.9)) == pytest.approx(-2.0)
    # reference exactly at a limit: |ζ| = 1 (inclusive)
    assert float(zeta_score(1.2, 1.1, 1.1, 1.3)) == 1.0
    assert float(zeta_score(1.2, 1.3, 1.1, 1.3)) == -1.0


def test_zeta_target_uncertainty():
    # width = sqrt((θ - lim)² + U_t²) (000 ζ_Sim with U_t = 2u)
    z = zeta_score(1.2, 1.0, 1.1, 1.3, target_u=0.1)
    assert float(z) == pytest.approx(0.2 / np.hypot(0.1, 0.1))
    z = zeta_score(0.8, 1.0, 0.7, 0.9, target_u=0.1)
    assert float(z) == pytest.approx(-0.2 / np.hypot(0.1, 0.1))
    # U_t only shrinks |ζ|
    assert abs(float(zeta_score(1.2, 1.0, 1.1, 1.3, target_u=0.05))) < 2.0


def test_zeta_delta_zero_is_zero_even_for_degenerate_interval():
    assert float(zeta_score(1.0, 1.0, 0.9, 1.1)) == 0.0
    assert float(zeta_score(1.0, 1.0, 1.0, 1.0)) == 0.0  # 0/0 avoided
    assert float(zeta_score(0.0, 0.0, np.nan, np.nan)) == 0.0


def test_zeta_nan_propagates_and_broadcasts():
    assert np.isnan(zeta_score(1.2, 1.0, np.nan, np.nan))
    est = np.array([[1.2, 0.8], [1.0, 1.05]])
    z = zeta_score(est, 1.0, est - 0.1, est + 0.1)
    np.testing.assert_allclose(z, [[2.0, -2.0], [0.0, 0.5]])
    # estimate equal to its limit on the reference side: infinite ζ, invalid
    assert np.isinf(zeta_score(1.2, 1.0, 1.2, 1.3))


# dyadic grid values: differences are exact in binary floating point, so the real-number
# equivalence is testable without rounding artefacts (1 - 1e-115 == 1 in doubles)
_grid = st.integers(-(10**9), 10**9).map(lambda i: i / 4096.0)


@settings(max_examples=400, deadline=None)
@given(_grid, _grid, _grid, _grid)
def test_zeta_property_abs_le_1_iff_reference_in_interval(a, b, c, ref):
    lo, est, up = sorted([a, b, c])
    z = float(zeta_score(est, ref, lo, up))
    assert (abs(z) <= 1) == (lo <= ref <= up)
    # sign: ζ has the sign of θ - θ_ref
    assert np.sign(z) == np.sign(est - ref)


# ---------------------------------------------------------------- zeta_sim2


def test_zeta_sim2_table_a3_set1_ence():
    # methods: ζ-scores: 000 Table A3 Set 1 ENCE, (0.125 - 0.056)/(0.076 - 0.056) ≈ 3.5
    z = float(zeta_sim2(0.125, 0.056, 0.040, 0.076))
    assert z == pytest.approx((0.125 - 0.056) / (0.076 - 0.056))
    assert round(z, 1) == 3.5


def test_zeta_sim2_sides():
    # below the reference: distance over (θ̃ - q_2.5), negative
    assert float(zeta_sim2(0.04, 0.056, 0.046, 0.076)) == pytest.approx(-0.016 / 0.010)
    # the other quantile does not matter
    assert float(zeta_sim2(0.04, 0.056, 0.046, 99.0)) == pytest.approx(-1.6)
    assert float(zeta_sim2(0.06, 0.056, -99.0, 0.076)) == pytest.approx(0.2)
    assert float(zeta_sim2(0.056, 0.056, 0.046, 0.076)) == 0.0


# ---------------------------------------------------------------- binomial_ci


@pytest.mark.parametrize(
    "x, n, method, expected",
    [
        # Newcombe (1998) Table I, methods 3 (Wilson) and 4 (Wilson with cc)
        (81, 263, "wilsoncc", (0.25351, 0.36818)),
        (15, 148, "wilsoncc", (0.05978, 0.16445)),
        (0, 20, "wilsoncc", (0.0, 0.20045)),
        (1, 29, "wilsoncc", (0.00180, 0.19628)),
        (81, 263, "wilson", (0.25529, 0.36621)),
        (15, 148, "wilson", (0.06239, 0.16049)),
        (0, 20, "wilson", (0.0, 0.16113)),
        (1, 29, "wilson", (0.00611, 0.17176)),
    ],
)
def test_binomial_ci_newcombe_values(x, n, method, expected):
    lo, hi = binomial_ci(x, n, method=method)
    np.testing.assert_allclose([lo, hi], expected, atol=5e-6)


def test_binomial_ci_default_is_wilsoncc():
    np.testing.assert_allclose(binomial_ci(81, 263), binomial_ci(81, 263, method="wilsoncc"))


@pytest.mark.parametrize("method", ["wilson", "wilsoncc"])
def test_binomial_ci_formula_against_scipy(method):
    # integer counts go through scipy; the closed form used for non-integer counts must
    # give the same limits where both apply
    from uqx.inference.zeta import _wilson_formula

    for n in (1, 2, 5, 20, 29, 148, 263, 1000):
        x = np.arange(0, n + 1, max(1, n // 9))
        lo, hi = _wilson_formula(x.astype(float), np.full(x.size, float(n)), method=method)
        for k, xi in enumerate(x):
            ci = sps.binomtest(int(xi), n).proportion_ci(method=method)
            np.testing.assert_allclose([lo[k], hi[k]], [ci.low, ci.high], atol=1e-12)
        lo2, hi2 = binomial_ci(x, n, method=method)
        np.testing.assert_allclose(lo2, lo, atol=1e-12)
        np.testing.assert_allclose(hi2, hi, atol=1e-12)


@pytest.mark.parametrize("n", [1, 7, 20, 1000])
def test_binomial_ci_edges(n):
    lo, hi = binomial_ci(0, n)
    assert lo == 0.0 and 0 < hi < 1
    lo, hi = binomial_ci(n, n)
    assert hi == 1.0 and 0 < lo < 1
    for method in ("wilson", "wilsoncc"):
        lo, hi = binomial_ci(np.arange(n + 1), n, method=method)
        assert np.all((lo >= 0) & (lo <= hi) & (hi <= 1))
        assert np.all(lo <= np.arange(n + 1) / n + 1e-15)
        assert np.all(np.arange(n + 1) / n <= hi + 1e-15)


def test_binomial_ci_noninteger_and_vector():
    # calibration-curve bands use non-integer x and n (methods: ζ-scores)
    lo, hi = binomial_ci(np.array([9.5, 0.0]), np.array([10.3, 4.0]))
    assert lo.shape == (2,) and np.all(lo < hi)
    assert lo[1] == 0.0
    # wilson-cc is wider than wilson
    lw, hw = binomial_ci(40, 50, method="wilson")
    lc, hc = binomial_ci(40, 50, method="wilsoncc")
    assert lc < lw and hc > hw


def test_binomial_ci_bad_method():
    with pytest.raises(InputError, match="method"):
        binomial_ci(1, 10, method="exact")


# ---------------------------------------------------------------- draw_unit, d_sensitive


@pytest.mark.parametrize("source", ["numpy", "keyed"])
def test_draw_unit_unit_variance_and_nu_check(source):
    from uqx.engine.resample import seed_sequence

    rng = np.random.default_rng(5) if source == "numpy" else seed_sequence(5, "u")
    x = draw_unit(rng, 400_000, dist="t", nu=6.0)
    assert x.var() == pytest.approx(1.0, abs=0.03)
    assert sps.kurtosis(draw_unit(rng, 400_000)) == pytest.approx(0.0, abs=0.05)
    for nu in (2.0, 1.5, 0.5, None):
        with pytest.raises(InputError, match="nu > 2"):
            draw_unit(rng, 10, dist="t", nu=nu)
    with pytest.raises(InputError, match="unknown generative distribution"):
        draw_unit(rng, 10, dist="laplace")


def test_d_sensitive_rule():
    # |a - b| > 2 sqrt(u_a² + u_b²)
    # threshold 2 * sqrt(0.003² + 0.004²) = 0.01
    assert d_sensitive(0.10, 0.003, 0.111, 0.004)
    assert not d_sensitive(0.10, 0.003, 0.109, 0.004)
    assert d_sensitive(0.111, 0.004, 0.10, 0.003)  # symmetric
    assert bool(d_sensitive(0.1, 0.0, 0.2, 0.0))
    np.testing.assert_array_equal(d_sensitive([0.1, 0.1], [0.01, 0.1], [0.2, 0.2], [0.01, 0.1]),
                                  [True, False])


# ---------------------------------------------------------------- simulate_reference


def _set(M=1000, seed=0, name="s", scale=1.0):
    rng = np.random.default_rng(seed)
    u = np.sqrt(1.0 / rng.gamma(3.0, 1 / 3.0, M))
    return uqx.from_arrays(u * rng.standard_normal(M) * scale, u, name=name)


def test_simulated_zms_reference_is_one():
    ds = uqx.stack([_set(800, 1, "a"), _set(1500, 2, "b")])
    for dist in ("normal", "t"):
        r = simulate_reference(ds, ["zms", "rce"], dist=dist, nu=6, n_mc=2000, seed=3)
        ref = r["reference"].sel(stat="zms").values
        se = r["reference_se"].sel(stat="zms").values
        assert np.all(se > 0)
        assert np.all(np.abs(ref - 1) <= 4 * se), (dist, ref, se)
        # RCE of simulated calibrated data is close to 0 (small negative bias), |.| < 0.01
        assert np.all(np.abs(r["reference"].sel(stat="rce").values) < 0.01)
        assert (r["n_nan"].values == 0).all()


def test_simulate_reference_structure_and_attrs():
    ds = uqx.stack([_set(600, 1, "a"), _set(900, 2, "b")])
    r = simulate_reference(ds, ["cc", "ence", "zmse"], dist="t", nu=5, n_mc=300, seed=11,
                           keep_draws=True)
    assert r["reference"].dims == ("set", "stat")
    assert list(r["set"].values) == ["a", "b"]
    assert list(r["stat"].values) == ["cc", "ence", "zmse"]
    assert r["draws"].dims == ("set", "stat", "mc")
    assert r["draws"].shape == (2, 3, 300)
    assert r.attrs["dist_label"] == "T5" and r.attrs["nu"] == 5.0
    assert r.attrs["n_mc"] == 300 and r.attrs["seed"] == 11 and r.attrs["n_bins"] == 20
    d = r["draws"].values
    # summaries are those of the draws (mean, sd/sqrt(n), type-7 quantiles)
    np.testing.assert_allclose(r["reference"].values, d.mean(-1), rtol=1e-12)
    np.testing.assert_allclose(r["reference_se"].values, d.std(-1, ddof=1) / np.sqrt(300),
                               rtol=1e-10)
    np.testing.assert_allclose(r["sim2_low"].values, np.quantile(d, 0.025, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(r["sim2_high"].values, np.quantile(d, 0.975, axis=-1), rtol=1e-12)
    # Sim2 quantiles bracket the mean
    assert np.all(r["sim2_low"] < r["reference"]) and np.all(r["reference"] < r["sim2_high"])
    rn = simulate_reference(ds, ["cc"], n_mc=10, seed=1)
    assert rn.attrs["dist_label"] == "N" and np.isnan(rn.attrs["nu"])
    assert "draws" not in rn


def test_simulate_reference_reproducible_and_scheduler_invariant():
    ds = uqx.stack([_set(700, 1, "a"), _set(500, 2, "b")])
    kw = dict(n_mc=600, keep_draws=True)  # several replicate blocks
    stats = ["zms", "cc", "ence", "zmse"]
    a = simulate_reference(ds, stats, seed=42, **kw)
    b = simulate_reference(ds, stats, seed=42, **kw)
    c = simulate_reference(ds, stats, seed=43, **kw)
    sync = simulate_reference(ds, stats, seed=42, scheduler="synchronous", **kw)
    one = simulate_reference(ds, stats, seed=42, scheduler="threads", num_workers=1, **kw)
    for other in (b, sync, one):
        np.testing.assert_array_equal(a["draws"].values, other["draws"].values)
        np.testing.assert_array_equal(a["reference"].values, other["reference"].values)
    assert not np.any(a["draws"].values == c["draws"].values)
    # keyed by set name: a set gives the same draws alone or stacked with others
    alone = simulate_reference(ds.isel(set=[1]), stats, seed=42, **kw)
    np.testing.assert_array_equal(alone["draws"].values[0], a["draws"].values[1])
    # a drawn seed is recorded and reproduces the run
    d = simulate_reference(ds, ["zms"], n_mc=20, keep_draws=True)
    e = simulate_reference(ds, ["zms"], n_mc=20, keep_draws=True, seed=d.attrs["seed"])
    np.testing.assert_array_equal(d["draws"].values, e["draws"].values)


def test_simulate_reference_n_mc_not_multiple_of_block():
    ds = _set(300, 4, "x")
    r = simulate_reference(ds, ["zms"], n_mc=R.SIM_BLOCK + 7, seed=1, keep_draws=True)
    assert r["draws"].shape == (1, 1, R.SIM_BLOCK + 7)
    assert np.isfinite(r["draws"].values).all()


@pytest.mark.parametrize("nu", [2.0, 1.5, 0.0, -3.0])
def test_simulate_reference_t_nu_le_2_raises(nu):
    with pytest.raises(InputError, match="nu > 2"):
        simulate_reference(_set(100), ["zms"], dist="t", nu=nu, n_mc=10, seed=1)


def test_simulate_reference_t_nu_none_raises_inputerror():
    # regression: used to raise TypeError from f"T{nu:g}" / "nu > 2" on None
    with pytest.raises(InputError, match="nu > 2"):
        simulate_reference(_set(100), ["zms"], dist="t", nu=None, n_mc=10, seed=1)


def test_simulate_reference_bad_arguments():
    ds = _set(100)
    for n_mc in (1, 0, 10.5, "100"):
        with pytest.raises(InputError, match="n_mc"):
            simulate_reference(ds, ["zms"], n_mc=n_mc, seed=1)
    with pytest.raises(InputError, match="per-bin"):
        simulate_reference(ds, ["lzisd"], n_mc=10, seed=1)
    with pytest.raises(InputError, match="unknown statistic"):
        simulate_reference(ds, ["nope"], n_mc=10, seed=1)
    with pytest.raises(InputError, match="unknown generative distribution"):
        simulate_reference(ds, ["zms"], dist="laplace", n_mc=10, seed=1)
    with pytest.raises(InputError, match="'X'"):
        simulate_reference(ds, ["ence_X"], n_mc=10, seed=1)


# ------------------------------------------------- brute force on the simulator's draws


def _brute(E, u, n_bins):
    """ZMS, RCE, CC, ENCE (RMSE per bin), ZMSE of one data set by direct formulas."""
    Z = E / u
    zms = np.mean(Z**2)
    rmv, rmse = np.sqrt(np.mean(u**2)), np.sqrt(np.mean(E**2))
    cc = sps.spearmanr(np.abs(E), u).statistic
    o = np.argsort(u, kind="stable")
    bins = np.array_split(o, n_bins)  # M divisible by n_bins: equal-count bins
    rmv_j = np.array([np.sqrt(np.mean(u[b] ** 2)) for b in bins])
    rmse_j = np.array([np.sqrt(np.mean(E[b] ** 2)) for b in bins])
    zms_j = np.array([np.mean(Z[b] ** 2) for b in bins])
    ence = np.mean(np.abs(rmv_j - rmse_j) / rmv_j)
    zmse = np.mean(np.abs(np.log(zms_j)))
    return {"zms": zms, "rce": (rmv - rmse) / rmv, "cc": cc, "ence": ence, "zmse": zmse}


def _brute_extra(E, u, X, n_bins):
    """ZVE on uE and ENCE on X (equal-count bins of M divisible by n_bins), directly."""
    Z = E / u
    o = np.argsort(u, kind="stable")
    zve = np.exp(np.mean([abs(np.log(np.var(Z[b], ddof=1)))
                          for b in np.array_split(o, n_bins)]))
    ox = np.argsort(X, kind="stable")
    ence_x = np.mean([abs(np.sqrt(np.mean(u[b] ** 2)) - np.sqrt(np.mean(E[b] ** 2)))
                      / np.sqrt(np.mean(u[b] ** 2)) for b in np.array_split(ox, n_bins)])
    return {"zve": zve, "ence_X": ence_x}


@pytest.mark.parametrize("dist", ["normal", "t", "data"])
def test_simulated_statistics_equal_brute_force_on_same_draws(dist):
    # the fused kernel draws, bins and sums each copy without storing ε; its slow
    # obvious twin: the same keyed stream drawn by draw_unit (copy after copy, as the
    # kernel consumes it), then every statistic by its direct formula
    from uqx.engine.null_shape import standardised_z
    from uqx.engine.resample import content_key, seed_sequence

    M, n_mc, n_bins = 1000, 40, 20
    base = _set(M, 7, "bf")
    u, E = base["uE"].values, base["E"].values
    X = np.random.default_rng(8).uniform(0, 1, M)
    ds = uqx.from_arrays(E, u, X=X, name="bf")
    stats = ["zms", "rce", "cc", "ence", "zmse", "zve", "ence_X"]
    r = simulate_reference(ds, stats, dist=dist, nu=6.0, n_mc=n_mc, seed=9, bins=n_bins,
                           keep_draws=True, scheduler="synchronous")
    label = {"normal": "N", "t": "T6", "data": "data"}[dist]
    pool = standardised_z(E, u)
    key = content_key(E, u) if dist == "data" else content_key(u)  # N, t: uE alone
    o = np.argsort(u, kind="stable")
    if dist == "data":
        # with bins on uE the data's z-scores are resampled within each bin, each bin
        # standardised on its own: every bin a row of draw_unit on the continuing stream
        from uqx.engine.binning import make_bins
        from uqx.engine.generators import stream_state
        from uqx.engine.null_shape import local_windows, standardised_z_local

        seg = make_bins(u, n_bins).edges
        groups = np.array([0, 250, 500, 750, 1000])  # M // 4 points, at least 100
        np.testing.assert_array_equal(local_windows(seg)[0], groups)
        local = standardised_z_local((E / u)[o], groups)
        state = stream_state(seed_sequence(9, "sim", key, label, 0))
        eps = np.empty((n_mc, M))
        for k in range(n_mc):
            for lo, hi in zip(seg[:-1], seg[1:], strict=True):
                w0 = groups[groups <= lo][-1]
                w1 = groups[groups > lo][0]
                eps[k, lo:hi] = draw_unit(state, (hi - lo,), dist="data", pool=local[w0:w1])
                assert np.isin(eps[k, lo:hi], local[w0:w1]).all()  # the window's own values
        np.testing.assert_allclose(np.add.reduceat(local**2, groups[:-1]), np.diff(groups))
    else:
        eps = draw_unit(seed_sequence(9, "sim", key, label, 0), (n_mc, M),
                        dist=dist, nu=6.0, pool=pool)
    if dist == "t":  # kurtosis of t_s(6) is 3 (excess); just check it is heavier than N
        assert sps.kurtosis(eps.ravel()) > 1
    us, Xs = u[o], X[o]  # the draws are laid out in the uE order
    for k in range(n_mc):
        want = _brute(us * eps[k], us, n_bins) | _brute_extra(us * eps[k], us, Xs, n_bins)
        for j, s in enumerate(stats):
            assert r["draws"].values[0, j, k] == pytest.approx(want[s], rel=1e-9, abs=1e-12), s


def test_draw_unit_keyed_stream_rows_continue():
    # rows drawn one after the other: one call for (k, M) equals k calls of M, and the
    # "data" member equals Lemire's bounded integers of uqx.engine.resample on the same stream
    from uqx.engine.generators import stream_state
    from uqx.engine.resample import _draw_uniform, seed_sequence

    ss = seed_sequence(3, "t")
    pool = np.random.default_rng(0).standard_normal(777)
    for dist in ("normal", "t", "data"):
        whole = draw_unit(ss, (5, 101), dist=dist, nu=5.0, pool=pool)
        st = stream_state(ss)
        rows = [draw_unit(st, 101, dist=dist, nu=5.0, pool=pool) for _ in range(5)]
        np.testing.assert_array_equal(whole, np.stack(rows))
    st = stream_state(ss)
    idx = np.empty(101, np.int64)
    want = []
    for _ in range(5):
        _draw_uniform(st, pool.size, idx)
        want.append(pool[idx])
    np.testing.assert_array_equal(draw_unit(ss, (5, 101), dist="data", pool=pool),
                                  np.stack(want))
    # the t member with nu = inf is the normal member, bit for bit
    np.testing.assert_array_equal(draw_unit(ss, 50, dist="t", nu=np.inf), draw_unit(ss, 50))


def test_simulate_reference_memory_budget_invariant(monkeypatch):
    # copies that keep ε (rank statistic) are batched to the budget: same bits
    ds = _set(600, 3, "m")
    kw = dict(n_mc=300, seed=5, keep_draws=True, scheduler="synchronous")
    a = simulate_reference(ds, ["zms", "cc", "ence"], **kw)
    monkeypatch.setattr(R, "rows_for_budget", lambda *a, **k: 7)
    b = simulate_reference(ds, ["zms", "cc", "ence"], **kw)
    np.testing.assert_array_equal(a["draws"].values, b["draws"].values)
    # and a statistic's copies do not depend on the statistics beside it
    c = simulate_reference(ds, ["ence"], **kw)
    np.testing.assert_array_equal(a["draws"].values[:, 2], c["draws"].values[:, 0])


def test_cc_fast_path_matches_scipy_spearman():
    rng = np.random.default_rng(1)
    for M, tied_u in ((50, False), (400, True), (1001, False)):
        u = rng.uniform(0.1, 2.0, M)
        if tied_u:
            u = np.round(u, 1)  # many ties in u: average ranks
        ru = sps.rankdata(u) - (M + 1) / 2.0
        ae = np.abs(rng.standard_normal((6, M)))
        got = cc_fixed_u(ae, ru)
        want = [sps.spearmanr(row, u).statistic for row in ae]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)


def test_cc_fast_path_falls_back_with_ties_in_errors():
    rng = np.random.default_rng(2)
    M = 300
    u = rng.uniform(0.1, 2.0, M)
    ru = sps.rankdata(u) - (M + 1) / 2.0
    ae = np.round(np.abs(rng.standard_normal((4, M))), 1)  # ties in |E|
    got = cc_fixed_u(ae, ru)
    want = [sps.spearmanr(row, u).statistic for row in ae]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)


def test_cc_fast_path_orders_near_ties_exactly():
    # values that agree in every bit the packed sort keys keep: the insertion pass
    # must restore their exact order (a slow twin: scipy's average ranks)
    rng = np.random.default_rng(3)
    M = 5000
    u = rng.uniform(0.1, 2.0, M)
    ru = sps.rankdata(u) - (M + 1) / 2.0
    base = np.repeat(np.abs(rng.standard_normal((3, M // 10))), 10, axis=-1)
    ae = base * (1.0 + rng.integers(1, 2000, (3, M)) * np.finfo(float).eps)
    ae = rng.permuted(ae, axis=-1)
    keys, shift = sorted_keys(ae.copy())
    assert shift == 13 and np.any(np.diff(keys >> np.uint64(shift), axis=-1) == 0)
    got = cc_fixed_u(ae, ru)
    want = [sps.spearmanr(row, u).statistic for row in ae]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    with pytest.raises(ValueError, match="non-negative"):
        cc_fixed_u(-ae, ru)


def test_cc_from_keys_alone_is_the_exact_routine_bit_for_bit():
    # rows whose keys order them exactly skip reading |E|: the same sums in the same
    # order as the exact routine; a batch mixing such rows with near-tied and tied ones
    # (resampled data) equals scipy's average ranks row by row
    from uqx.engine.copies import cc_rows
    rng = np.random.default_rng(8)
    M = 3000
    u = np.sort(rng.uniform(0.1, 2.0, M))
    ru = sps.rankdata(u) - (M + 1) / 2.0
    ae = np.abs(rng.standard_normal((20, M)) * u)
    keys, shift = sorted_keys(ae.copy())
    exact, tied = np.empty(20), np.zeros(20, dtype=np.bool_)
    cc_rows(ae, keys, shift, ru, exact, tied)
    np.testing.assert_array_equal(cc_fixed_u(ae, ru), exact)
    mixed = ae.copy()
    mixed[3] = np.repeat(mixed[3, : M // 10], 10)  # exact ties (resampled data)
    mixed[7] = mixed[7] * (1.0 + rng.integers(0, 3, M) * np.finfo(float).eps)
    mixed[7, ::2] = mixed[7, 1::2]  # exact ties too
    got = cc_fixed_u(mixed, ru)
    want = [sps.spearmanr(row, u).statistic for row in mixed]
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    np.testing.assert_array_equal(np.delete(got, [3, 7]), np.delete(exact, [3, 7]))



def test_cc_of_scaled_draws_is_the_unfused_routine_bit_for_bit():
    # the copies' CC (w = u) and the spread alternative's (w = uE^gamma) write the
    # product, |.| and the keys in one pass: the same bits as cc_fixed_u(|eps w|), with
    # draws that tie (resampled data) and that near-tie, and scipy's value as the twin
    from uqx.engine.copies import cc_scaled
    rng = np.random.default_rng(9)
    M = 2500
    u = np.sort(rng.uniform(0.1, 2.0, M))
    ru = sps.rankdata(u) - (M + 1) / 2.0
    eps = rng.standard_normal((12, M))
    eps[4] = np.repeat(eps[4, : M // 10], 10)  # exact ties
    eps[9] = eps[9] * (1.0 + rng.integers(0, 3, M) * np.finfo(float).eps)
    for w in (u, u ** 0.3, np.ones(M)):
        got = cc_scaled(eps, w, ru)
        np.testing.assert_array_equal(got, cc_fixed_u(np.abs(eps * w), ru))
        want = [sps.spearmanr(np.abs(row * w), u).statistic for row in eps]
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-13)
    assert np.isnan(cc_scaled(eps, u, np.zeros(M))).all()
    bad = eps.copy()
    bad[2, 5] = np.nan
    with pytest.raises(ValueError, match="finite draws"):
        cc_scaled(bad, u, ru)

# ------------------------------------ moment statistics: streamed in file order (out of core)


@pytest.mark.parametrize("dist", ["normal", "t", "data"])
def test_moment_references_stream_bitwise_and_equal_their_twin(monkeypatch, dist):
    # only moment statistics: copies drawn in file order, group by group; numpy and
    # dask columns (any chunks, any scheduler) give the same bits, and the statistics
    # equal the direct formulas on the same keyed draws redrawn by draw_unit
    import dask.array as da

    from uqx.engine.null_shape import standardised_z
    from uqx.engine.resample import content_key, seed_sequence

    monkeypatch.setattr(R, "SIM_GROUP_ROWS", 1000)  # several groups at this M
    M, n_mc = 2500, R.SIM_BLOCK + 20
    base = _set(M, 11, "mom")
    E, u = base["E"].values, base["uE"].values
    kw = dict(dist=dist, nu=5.0, n_mc=n_mc, seed=6, keep_draws=True)
    a = simulate_reference(base, ["zms", "rce", "var_z"], **kw)
    lazy = uqx.from_arrays(da.from_array(E, chunks=700), da.from_array(u, chunks=900),
                           name="mom")
    b = simulate_reference(lazy, ["zms", "rce", "var_z"], scheduler="synchronous", **kw)
    np.testing.assert_array_equal(a["draws"].values, b["draws"].values)
    label = {"normal": "N", "t": "T5", "data": "data"}[dist]
    key = content_key(E, u) if dist == "data" else content_key(u)  # N, t: uE alone
    z = E / u
    z = z - np.sum(z) / M  # the pool of the streamed route: centred, unit mean square
    pool = z / np.sqrt(np.sum(z * z) / M)
    assert np.allclose(pool, standardised_z(E, u), rtol=1e-13)
    assert abs(np.mean(pool)) < 1e-12 and np.mean(pool**2) == pytest.approx(1.0)
    groups = [(lo, min(lo + 1000, M)) for lo in range(0, M, 1000)]
    for blk in range(2):
        nb = min(R.SIM_BLOCK, n_mc - blk * R.SIM_BLOCK)
        eps = np.concatenate([draw_unit(seed_sequence(6, "sim", key, label, blk, "rows", g),
                                        (nb, hi - lo), dist=dist, nu=5.0, pool=pool)
                              for g, (lo, hi) in enumerate(groups)], axis=1)
        Ec = u * eps
        want = {"zms": np.mean(eps**2, axis=1),
                "rce": (np.sqrt(np.mean(u**2)) - np.sqrt(np.mean(Ec**2, axis=1)))
                / np.sqrt(np.mean(u**2)),
                "var_z": np.var(eps, axis=1, ddof=1)}
        for j, s in enumerate(["zms", "rce", "var_z"]):
            got = a["draws"].values[0, j, blk * R.SIM_BLOCK: blk * R.SIM_BLOCK + nb]
            np.testing.assert_allclose(got, want[s], rtol=1e-10, atol=1e-13, err_msg=s)


def _same_u_sets(M=800):
    """Two sets with the same uE and X, different E."""
    rng = np.random.default_rng(11)
    u = np.sqrt(1 / rng.gamma(3, 1 / 3, M))
    X = rng.uniform(size=M)
    return uqx.stack([uqx.from_arrays(u * rng.standard_normal(M), u, X=X, name=n)
                      for n in ("a", "b")])


@pytest.mark.parametrize("dist, nu", [("normal", 6.0), ("t", 6.0), ("t", [5.0, 5.0])])
def test_members_that_ignore_E_are_keyed_by_uE_alone(dist, nu):
    ds = _same_u_sets()
    kw = dict(n_mc=300, seed=5, keep_draws=True, label="fit" if np.ndim(nu) else None)
    for stats in (["zms", "rce"], ["zms", "cc", "ence", "zve_X"]):  # streamed, sorted
        d = simulate(ds, stats, dist=dist, nu=nu, **kw)["draws"].values
        np.testing.assert_array_equal(d[0], d[1])  # same uE (and X): the same copies
    data = simulate(ds, ["zms", "ence"], dist="data", **kw)["draws"].values
    assert not np.any(data[0] == data[1])  # the data's own z-scores differ


def test_shared_nulls_same_bits_fewer_simulations(monkeypatch):
    ds = _same_u_sets()
    stats = ["zms", "cc", "ence", "zmse", "zve_X"]
    calls = []
    real = R._simulate_block
    monkeypatch.setattr(R, "_simulate_block", lambda *a, **k: calls.append(1) or real(*a, **k))
    kw = dict(n_mc=600, seed=9, keep_draws=True, scheduler="synchronous")
    plain = {d: simulate_reference(ds, stats, dist=d, **kw) for d in ("normal", "data")}
    n_plain = len(calls)
    R._SHARED["blocks"].clear()
    calls.clear()
    with R.shared_nulls():
        shared = {d: simulate_reference(ds, stats, dist=d, **kw) for d in ("normal", "data")}
        again = simulate_reference(ds, stats, dist="normal", **kw)
    for d in plain:
        for v in ("draws", "reference", "sim2_low"):
            np.testing.assert_array_equal(plain[d][v].values, shared[d][v].values)
    np.testing.assert_array_equal(plain["normal"]["draws"].values, again["draws"].values)
    blocks = -(-600 // R.SIM_BLOCK)
    assert n_plain == 2 * 2 * blocks  # 2 members x 2 sets x blocks
    # normal: set b and the repeated call reuse set a's blocks; data: never shared
    assert len(calls) == blocks + 2 * blocks
    # outside the context nothing is reused
    calls.clear()
    simulate_reference(ds, stats, dist="normal", **kw)
    assert len(calls) == 2 * blocks


@pytest.mark.parametrize("dist", ["t", "data"])
def test_moment_copies_from_a_binned_preparation_need_no_second_sort(monkeypatch, dist):
    # the fitted member of the two-sided statistics reuses the workflow's preparation
    # (sorted uE, bins on uE and X): its unbinned view gives the copies of a preparation
    # made for the moment statistics alone, bit for bit, without a second _SimSet
    ds = _same_u_sets()
    kw = dict(dist=dist, n_mc=300, seed=5, keep_draws=True)
    if dist == "t":
        kw.update(nu=[5.0, 5.0], label="fit")
    binned = R.prepare_sets(ds, ["zms", "ence", "zve_X"], pool=True)
    alone = R.prepare_sets(ds, ["zms", "rce"], pool=True)
    want = simulate(ds, ["zms", "rce"], prepared=alone, **kw)["draws"].values
    built = []
    monkeypatch.setattr(R, "_SimSet", lambda *a, **k: built.append(1))
    got = simulate(ds, ["zms", "rce"], prepared=binned, **kw)["draws"].values
    np.testing.assert_array_equal(got, want)
    assert not built


def _top_alternative(r, bases, n_copies):
    """A BinnedCopies of set 0 of a simulate_reference result (one member)."""
    from uqx.engine.alternative import BinnedCopies

    top = BinnedCopies(r["top_factor"].values, n_copies)
    nb = int(r["top_n_bins"].values[0])
    top.add(0, 0, r["top_sums"].values[0, :n_copies, :nb], r["top_u2"].values[0, :nb],
            r["top_count"].values[0, :nb], int(r["top_M"].values[0]),
            r["top_bins"].values[0, :nb], dict(enumerate(bases)))
    return top


def _alternative_copies(M, n_mc, n_bins, set_seed, seed):
    """Copies of ENCE, ZMSE under N of a calibrated set, their alternatives, the same ε.

    Returns the simulate_reference result, its BinnedCopies, the unit draws
    of the copies (drawn again from the keyed stream, copy after copy) and the sorted uE.
    """
    from uqx.engine.resample import content_key, seed_sequence

    base = _set(M, set_seed, "alt")
    u, E = base["uE"].values, base["E"].values
    r = simulate_reference(uqx.from_arrays(E, u, name="alt"), ["ence", "zmse"],
                           dist="normal", n_mc=n_mc, seed=seed, bins=n_bins,
                           keep_draws=True, scheduler="synchronous")
    eps = draw_unit(seed_sequence(seed, "sim", content_key(u), "N", 0), (n_mc, M),
                    dist="normal")
    return r, _top_alternative(r, ["ence", "zmse"], n_mc), eps, np.sort(u, kind="stable")


def test_local_alternative_equals_brute_force_on_scaled_copies():
    """The binned statistics under 'uE too small by f in the top bins', computed from the
    copies' kept per-bin sums, are those of the same copies with the errors of the top
    10 % of uE multiplied by f (slow twin)."""
    from uqx.engine.resolution import TOP_FACTORS

    M, n_mc, n_bins = 1000, 10, 20
    r, top, eps, us = _alternative_copies(M, n_mc, n_bins, 5, 3)
    assert r["top_sums"].shape == (1, n_mc, n_bins, 4)
    assert r["top_bins"].values[0].sum() == 2
    high = np.arange(M) >= 900  # the top 2 of 20 equal bins
    for q in (0, 40, TOP_FACTORS.size - 1):
        f = TOP_FACTORS[q]
        got = np.stack([top.values(0, j, 0)([q])[:, 0] for j in (0, 1)])
        for k in range(n_mc):
            want = _brute(us * eps[k] * np.where(high, f, 1.0), us, n_bins)
            np.testing.assert_allclose(got[:, k], [want["ence"], want["zmse"]], rtol=1e-9)
    # at f = 1 the alternative is the null itself
    at_one = np.stack([top.values(0, j, 0)([0])[:, 0] for j in (0, 1)])
    np.testing.assert_allclose(at_one, r["draws"].values[0], rtol=0.05)


def test_spread_alternative_equals_brute_force_on_scaled_copies():
    """The binned statistics under u = c*uE^gamma (piecewise on the bins of uE), computed
    from the copies' kept per-bin sums, are those of the same copies with the errors of
    each bin multiplied by c*(RMV_bin/RMV)^(gamma-1) (slow twin), the mean square of the
    true u equal to that of uE; at gamma = 1 the copies themselves."""
    from uqx.engine.resolution import SPREAD_DOWN, SPREAD_UP

    M, n_mc, n_bins = 1000, 8, 20
    r, alt, eps, us = _alternative_copies(M, n_mc, n_bins, 6, 4)
    bins = np.repeat(np.arange(n_bins), M // n_bins)
    rmv_b = np.sqrt(np.array([np.mean(us[bins == b] ** 2) for b in range(n_bins)]))
    rmv = np.sqrt(np.mean(us**2))
    gammas = np.array([SPREAD_DOWN[-1], SPREAD_DOWN[20], 1.0, SPREAD_UP[30], SPREAD_UP[-1]])
    got = np.stack([alt.spread(0, j, 0, gammas) for j in (0, 1)])  # (stat, copy, gamma)
    for q, gam in enumerate(gammas):
        g = (rmv_b / rmv) ** (gam - 1.0)
        g *= np.sqrt(np.sum(us**2) / np.sum((g[bins] * us) ** 2))  # same mean square
        for k in range(n_mc):
            want = _brute(us * eps[k] * g[bins], us, n_bins)
            np.testing.assert_allclose(got[:, k, q], [want["ence"], want["zmse"]],
                                       rtol=1e-9)
    np.testing.assert_allclose(got[:, :, 2], r["draws"].values[0], rtol=0.05)


def test_the_spread_cc_is_drawn_only_for_members_the_tails_admit(monkeypatch):
    # CC under the spread alternative (ranking's resolution, 14 sorts a copy) is drawn
    # for the members some set's tails admit, the only ones a test can use: the result
    # is the same, bit for bit, as when it is drawn for every member
    import xarray as xr

    import uqx
    import uqx.workflow.references as refs

    rng = np.random.default_rng(21)
    M = 1500
    u = rng.lognormal(0.0, 0.5, M)
    ds = uqx.from_arrays(u * rng.standard_t(3, M) / np.sqrt(3.0), u, name="t3")
    kw = dict(bootstrap=200, copies=400, conditional=False, compute=uqx.Compute(seed=3))
    drawn = {}  # each member's first draw (the copies of its tests)
    real = refs.draw_checked

    def spy(*a, cc_spread=False, **k):
        drawn.setdefault(a[2].label or a[2].dist, bool(cc_spread))
        return real(*a, cc_spread=cc_spread, **k)

    monkeypatch.setattr(refs, "draw_checked", spy)
    got = uqx.validate(ds, ["zms", "cc"], **kw)
    # t_s(3) tails exclude N and t_s(6); the fitted member and the data's z-scores stay
    assert drawn == {"normal": False, "t": False, "fit": True, "data": True}
    assert got["member_plausible"].values.tolist() == [[False, False, True, True]]
    assert got["question_verdict"].sel(question="ranking").item() == "valid"
    assert np.isfinite(got["question_resolution_spread_low"].sel(question="ranking").item())

    def every(*a, cc_spread=False, **k):
        return real(*a, cc_spread=True, **k)

    monkeypatch.setattr(refs, "draw_checked", every)
    want = uqx.validate(ds, ["zms", "cc"], **kw)
    xr.testing.assert_identical(got.drop_attrs(), want.drop_attrs())
