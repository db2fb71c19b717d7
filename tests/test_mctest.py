"""Monte-Carlo tests (uqx.engine.mctest): p-values against slow twins, the family rule,
the tails fit."""

import numpy as np
import pytest
from scipy import stats

from uqx.engine.mctest import (
    copy_pvalues,
    family_verdict,
    mc_pvalue,
    smallest_pvalue,
)
from uqx.engine.null_shape import (
    MEMBERS,
    NU_MIN,
    kappa_cs_z2_of_t,
    kappa_cs_z2_se_of_t,
    nu_heavy_bound,
    standardised_z,
    t_nu_from_tails,
)
from uqx.engine.stats.tailedness import kappa_cs


def _pvalue_twin(obs, null, direction):
    null = [x for x in null if np.isfinite(x)]
    up = (1 + sum(x >= obs for x in null)) / (1 + len(null))
    down = (1 + sum(x <= obs for x in null)) / (1 + len(null))
    return {1: up, -1: down}.get(direction, min(1.0, 2 * min(up, down)))


@pytest.mark.parametrize("direction", [1, -1, 0])
def test_mc_pvalue_matches_twin(direction):
    rng = np.random.default_rng(1)
    null = rng.normal(size=(4, 50))
    null[1, 3] = np.nan
    null[2, :5] = null[2, 5]  # ties
    obs = np.array([0.1, 2.5, null[2, 5], -1.7])
    got = mc_pvalue(obs, null, direction)
    want = [_pvalue_twin(o, n, direction) for o, n in zip(obs, null, strict=True)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    assert np.isnan(mc_pvalue(np.nan, null[0], direction))


@pytest.mark.parametrize("direction", [1, -1, 0])
def test_copy_pvalues_match_twin(direction):
    rng = np.random.default_rng(2)
    null = np.round(rng.normal(size=(3, 40)), 1)  # ties
    null[0, 7] = np.nan
    got = copy_pvalues(null, direction)
    for r in range(3):
        ok = null[r][np.isfinite(null[r])]
        for k in range(40):
            x = null[r, k]
            if not np.isfinite(x):
                assert np.isnan(got[r, k])
                continue
            up, down = np.mean(ok >= x), np.mean(ok <= x)
            want = {1: up, -1: down}.get(direction, min(1.0, 2 * min(up, down)))
            assert got[r, k] == pytest.approx(want, abs=1e-15)


def test_mc_pvalue_is_uniform_under_exchangeability():
    """The data drawn like its copies: P(p < 0.05) is 0.05 (exact MC test)."""
    rng = np.random.default_rng(3)
    x = rng.standard_t(3, size=(4000, 100))
    p = mc_pvalue(x[:, 0], x[:, 1:], 1)
    rate = np.mean(p < 0.05)
    assert abs(rate - 0.04) < 3 * np.sqrt(0.05 * 0.95 / 4000) + 0.01, rate  # p on a 1/100 grid


@pytest.mark.parametrize("p, verdict", [
    ([0.01, 0.02, 0.01, 0.03], "invalid"),       # every member rejects
    ([0.06, 0.20, 0.30, 0.40], "valid"),         # no member rejects
    ([0.01, 0.20, 0.30, 0.40], "inconclusive"),  # one member rejects: valid is no claim
    ([0.50, 0.60, 0.01, 0.40], "inconclusive"),  # the t fit alone rejects
    ([0.50, 0.60, 0.30, 0.01], "inconclusive"),  # the data member alone rejects
    ([0.004, 0.004, 0.004, 0.10], "inconclusive"),  # was valid once (data member)
    ([0.50, np.nan, 0.50, 0.50], "inconclusive"),
])
def test_family_verdict(p, verdict):
    v, why = family_verdict(p, MEMBERS, n_copies=1000)
    assert v == verdict
    assert (why == "") == (verdict != "inconclusive")


def test_family_verdict_borderline_rejection_does_not_block_valid():
    # 0.045 is within 2 Monte-Carlo sd of 0.05 with 500 copies (sd 0.0097): borderline
    assert family_verdict([0.045, 0.3, 0.3, 0.3], MEMBERS, n_copies=500)[0] == "valid"
    assert family_verdict([0.02, 0.3, 0.3, 0.3], MEMBERS, n_copies=500)[0] == "inconclusive"
    # without the count no band: any rejection blocks valid
    assert family_verdict([0.045, 0.3, 0.3, 0.3], MEMBERS)[0] == "inconclusive"


@pytest.mark.parametrize("n, direction, ok", [(10, 0, False), (38, 0, False), (40, 0, True),
                                              (19, 1, False), (20, 1, True)])
def test_family_verdict_needs_copies_that_can_reach_the_level(n, direction, ok):
    v, why = family_verdict([0.5] * 4, MEMBERS, n_copies=n, direction=direction)
    assert (v == "valid") == ok
    if not ok:
        assert v == "inconclusive" and "cannot give p < 0.05" in why
    assert smallest_pvalue(n, direction) == pytest.approx((2 - abs(direction)) / (n + 1))


def test_family_without_data_member_needs_every_member():
    assert family_verdict([0.3, 0.4], ["N", "T6"])[0] == "valid"
    assert family_verdict([0.01, 0.4], ["N", "T6"])[0] == "inconclusive"
    assert family_verdict([0.01, 0.04], ["N", "T6"])[0] == "invalid"


def test_kappa_of_t_and_its_inverse():
    nus = np.array([3.0, 4.0, 6.0, 10.0, 30.0])
    np.testing.assert_allclose(t_nu_from_tails(kappa_cs_z2_of_t(nus)), nus, rtol=2e-3)
    assert np.isinf(t_nu_from_tails(kappa_cs_z2_of_t(np.inf) - 0.1))
    assert t_nu_from_tails(100.0) == NU_MIN
    assert np.isnan(t_nu_from_tails(np.nan))
    # the population value is what kappa_cs estimates on a large sample
    z = stats.t.rvs(5, size=400_000, random_state=5)
    assert float(kappa_cs(z**2)) == pytest.approx(float(kappa_cs_z2_of_t(5.0)), rel=0.03)


def _sample_kappas(nu, M, n, seed):
    """Slow twin: κ_CS of Z² (type-7 quantiles) over n samples of t(ν), by simulation."""
    rng = np.random.default_rng(seed)
    z = rng.standard_t(nu, (n, M)) if np.isfinite(nu) else rng.standard_normal((n, M))
    return np.array([float(kappa_cs(row**2)) for row in z])


@pytest.mark.parametrize(("nu", "M"), [(4.0, 500), (6.0, 2000), (np.inf, 2000), (3.0, 5000)])
def test_kappa_se_of_t_matches_simulation(nu, M):
    # 400 samples: the simulated sd is known to ±3.5 %; the delta method to ±15 %
    sd = float(np.std(_sample_kappas(nu, M, 400, seed=int(M + 10 * min(nu, 99)))))
    assert float(kappa_cs_z2_se_of_t(nu, M)) == pytest.approx(sd, rel=0.15)
    assert float(kappa_cs_z2_se_of_t(nu, 4 * M)) == pytest.approx(
        float(kappa_cs_z2_se_of_t(nu, M)) / 2)


def test_nu_heavy_bound_covers_nu_and_is_the_heavy_side_of_nu_hat():
    for nu, M in ((4.0, 500), (6.0, 2000)):
        k = _sample_kappas(nu, M, 400, seed=int(M + nu))
        bound = nu_heavy_bound(k, M)  # one standard error: 84 % one-sided
        # at least the nominal 84 % (sd 1.8 % over 400); above it where the floor
        # NU_MIN = 3 sits inside the set (ν = 4, M = 500)
        assert 0.78 <= np.mean(bound <= nu) <= (0.90 if M == 2000 else 1.0)
        assert np.all(bound <= t_nu_from_tails(k))  # never lighter than the estimate
        # two standard errors: a wider set, heavier (or equal) bounds
        assert np.all(nu_heavy_bound(k, M, z=2.0) <= bound)
    # the set shrinks onto ν̂ as M grows; NaN stays NaN; the floor is NU_MIN
    k6 = float(kappa_cs_z2_of_t(6.0))
    assert float(nu_heavy_bound(k6, 10**9)) == pytest.approx(6.0, rel=0.01)
    assert np.isnan(nu_heavy_bound(np.nan, 500))
    assert float(nu_heavy_bound(50.0, 500)) == NU_MIN
    assert np.isinf(nu_heavy_bound(-5.0, 10**6))  # lighter than any t_s


def test_standardised_z_has_unit_mean_square():
    rng = np.random.default_rng(6)
    u = rng.uniform(0.5, 2, 1000)
    z = standardised_z(3 * u * rng.normal(size=1000), u)
    assert np.mean(z * z) == pytest.approx(1.0, rel=1e-12)


def test_nu_on_grid():
    from uqx.engine.null_shape import NU_GRID_STEP, nu_on_grid

    nu = np.array([3.0, 3.1, 5.9, 6.0, 6.3, 12.0, 150.0, 250.0, np.inf, np.nan])
    got = nu_on_grid(nu)
    fin = np.isfinite(got)
    k = 1 / got[fin] / NU_GRID_STEP
    np.testing.assert_allclose(k, np.round(k), atol=1e-9)  # on the grid of 1/nu
    assert np.all(np.abs(1 / got[fin] - 1 / nu[fin]) <= NU_GRID_STEP / 2 + 1e-12)
    assert got[0] == pytest.approx(1 / 0.33) and got[0] >= NU_MIN  # 1/3 -> 0.33
    assert np.isinf(got[7]) and np.isinf(got[8])  # 1/250 < step/2: the normal
    assert np.isnan(got[9])
    assert nu_on_grid(2.5)[()] == NU_MIN  # bounded below
    np.testing.assert_array_equal(nu_on_grid(got), got)  # idempotent


def test_kappa_local_equals_its_twin_and_removes_a_scale_trend():
    from uqx.engine.binning import equal_count_edges
    from uqx.engine.defaults import local_bins
    from uqx.engine.null_shape import kappa_cs_z2_local
    from uqx.engine.stats.tailedness import tailedness

    rng = np.random.default_rng(4)
    M = 3000
    u = np.sqrt(1 / rng.gamma(3, 1 / 3, M))
    eps = rng.standard_t(6, M) / np.sqrt(1.5)
    # twin: scale Z by its RMS in each equal-count bin of uE, then tailedness() of Z²
    E = u * eps
    o = np.argsort(u, kind="stable")
    z = (E / u)[o]
    edges = equal_count_edges(M, local_bins(M))
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        z[lo:hi] /= np.sqrt(np.mean(z[lo:hi] ** 2))
    twin = tailedness(z, np.ones(M))["kappa_cs_z2"]
    got = kappa_cs_z2_local(E, u)
    assert got == pytest.approx(float(twin), rel=1e-12)
    # calibrated: close to the kappa of Z itself (a bin's RMS takes in its own extremes,
    # so the scaled tails are a little lighter)
    assert got == pytest.approx(float(tailedness(E, u)["kappa_cs_z2"]), abs=0.5)
    # reported c u^0.5 (inconsistent): Z mixes scales and looks heavier-tailed than eps;
    # the local scaling gives back the errors' shape
    rep = np.sqrt(u) * np.sqrt(np.mean(u * u) / np.mean(u))
    k_global = float(tailedness(E, rep)["kappa_cs_z2"])
    k_local = kappa_cs_z2_local(E, rep)
    k_eps = float(tailedness(eps, np.ones(M))["kappa_cs_z2"])
    assert k_global > k_eps + 0.5 and abs(k_local - k_eps) < abs(k_global - k_eps) / 2


def test_plausible_members_screen_the_fixed_shapes():
    from uqx.engine.null_shape import kappa_cs_z2_of_t, plausible_members

    nus = [np.inf, 6.0, None, None]  # N, T6, fit, data
    k_n, k_6, k_3 = (float(kappa_cs_z2_of_t(v)) for v in (np.inf, 6.0, 3.0))
    got = plausible_members([k_n, k_6, k_3, np.nan], 2000, nus)
    assert got.tolist() == [[True, False, True, True],    # normal tails: T6 excluded
                            [False, True, True, True],    # t6 tails: N excluded
                            [False, False, True, True],   # t3 tails: both excluded
                            [True, True, True, True]]     # unknown: all kept
    # at M = 200 the screening cannot tell N from t6 apart: both kept
    assert plausible_members([k_n], 200, nus)[0].tolist() == [True, True, True, True]


def test_family_verdict_ignores_excluded_members():
    # N rejects but is excluded (the data's tails are not normal): valid
    use = [False, True, True, True]
    assert family_verdict([0.001, 0.3, 0.4, 0.5], MEMBERS, n_copies=500, use=use)[0] == "valid"
    assert family_verdict([0.3, 0.01, 0.01, 0.02], MEMBERS, n_copies=500, use=use)[0] == "invalid"


def test_two_sided_pvalue_reads_each_side_on_its_own_copies():
    from uqx.engine.mctest import mc_pvalue, mc_pvalue_sides

    rng = np.random.default_rng(0)
    light, heavy = rng.normal(0, 1, 999), rng.normal(0, 3, 999)
    # the lower side read on the heavy copies: a low value is less extreme there
    p = mc_pvalue_sides(-2.5, light, heavy)
    assert p == pytest.approx(2 * mc_pvalue(-2.5, heavy, -1))
    assert p > mc_pvalue(-2.5, light, 0)
    assert mc_pvalue_sides(2.5, light, heavy) == pytest.approx(2 * mc_pvalue(2.5, light, 1))


def test_local_windows_group_bins_to_the_minimum():
    from uqx.engine.null_shape import local_windows, standardised_z_local

    groups, win = local_windows(np.arange(0, 2001, 100), 500)
    assert groups.tolist() == [0, 500, 1000, 1500, 2000]
    assert win[4].tolist() == [0, 500] and win[5].tolist() == [500, 1000]
    assert local_windows(np.arange(0, 501, 25), 500)[0].tolist() == [0, 500]  # one window
    z = np.random.default_rng(1).standard_normal(2000) * np.repeat([1.0, 3.0], 1000)
    zl = standardised_z_local(z, groups)
    np.testing.assert_allclose(np.add.reduceat(zl**2, groups[:-1]), np.diff(groups))


def test_kappa_cs_z2_windows_is_the_local_kappa_of_each_window():
    """Slow twin: each window's κ_CS is kappa_cs_z2_local's on that window's rows with
    that window's bins (Z scaled within each bin), and NaN for a window without spread."""
    from uqx.engine.binning import equal_count_edges
    from uqx.engine.null_shape import kappa_cs_z2_local, kappa_cs_z2_windows, local_windows

    rng = np.random.default_rng(3)
    M = 2000
    u = np.sort(np.sqrt(1 / rng.gamma(3, 1 / 3, M)))
    E = u * np.where(np.arange(M) < M // 2, rng.standard_normal(M), rng.standard_t(4, M))
    seg = equal_count_edges(M, 20)
    groups, _ = local_windows(seg)
    kappa, n = kappa_cs_z2_windows(E, u, seg, groups)
    assert n.tolist() == np.diff(groups).tolist() and groups.size == 5
    for w, (a, b) in enumerate(zip(groups[:-1], groups[1:], strict=True)):
        z = E[a:b] / u[a:b]
        inner = seg[(seg >= a) & (seg <= b)] - a
        for lo, hi in zip(inner[:-1], inner[1:], strict=True):
            z[lo:hi] /= np.sqrt(np.mean(z[lo:hi] ** 2))
        want = float(kappa_cs(z * z))
        assert kappa[w] == pytest.approx(want, rel=1e-12)
        # the same number as the whole-set kernel on the window alone, its bins equal
        assert kappa[w] == pytest.approx(kappa_cs_z2_local(E[a:b], u[a:b], inner.size - 1),
                                         rel=1e-12)
    # the normal windows look light, the t_s(4) ones heavy
    assert kappa[:2].max() < kappa[2:].min()
    flat = kappa_cs_z2_windows(np.ones(M), np.ones(M), seg, groups)[0]
    assert np.isnan(flat).all()


def test_one_shape_and_nu_windows_keep_one_nu_unless_a_window_excludes_it():
    """Errors normal below the median of uE and t_s(4) above: the windows exclude one ν
    and the fitted member takes each window's own; t_s(6) everywhere: one ν̂ is kept."""
    from uqx.engine.binning import equal_count_edges
    from uqx.engine.null_shape import (
        kappa_cs_z2_local,
        kappa_cs_z2_of_t,
        kappa_cs_z2_windows,
        local_windows,
        nu_on_grid,
        nu_windows,
        one_shape,
        plausible_members,
        t_nu_from_tails,
    )

    rng = np.random.default_rng(8)
    M = 8000
    u = np.sort(np.sqrt(1 / rng.gamma(3, 1 / 3, M)))
    seg = equal_count_edges(M, 20)
    groups, _ = local_windows(seg)
    half = np.arange(M) < M // 2
    cases = {"mixed": np.where(half, rng.standard_normal(M), rng.standard_t(4, M) / np.sqrt(2)),
             "t6": rng.standard_t(6, M) / np.sqrt(1.5)}
    for name, eps in cases.items():
        E = u * eps
        kw, nw = kappa_cs_z2_windows(E, u, seg, groups)
        nu_hat = float(nu_on_grid(t_nu_from_tails(kappa_cs_z2_local(E, u))))
        nus = nu_windows(kw, nw, nu_hat)
        plaus = plausible_members([kappa_cs_z2_local(E, u)], [M], [6.0], windows=[(kw, nw)])
        if name == "mixed":
            assert not one_shape(kw, nw, nu_hat) and nus is not None
            assert np.all(nus[: nus.size // 2] > 8) and np.all(nus[-2:] < 6)
            assert not plaus[0, 0]  # t_s(6) is no shape for every uE of these errors
        else:
            assert one_shape(kw, nw, nu_hat) and nus is None
            assert plaus[0, 0]
    # a window of NaN passes; a single window is one shape
    assert one_shape([np.nan, kappa_cs_z2_of_t(6.0)], [500, 500], 6.0)
    assert one_shape([9.0], [500], np.inf)


def test_sim_rows_one_nu_per_segment():
    """Code 6 draws segment s at its own ν: with one ν everywhere the bits of code 1;
    otherwise each segment's sums are those of t_s(ν_s) draws on the same stream (slow
    twin: the draws one by one with the segment's constants)."""
    from uqx.engine.copies import sim_rows
    from uqx.engine.resample import seed_sequence
    from uqx.engine.unit_variance import Draw, draw_unit, unit_args

    rng = np.random.default_rng(2)
    u = np.sort(rng.uniform(0.5, 2.0, 300))
    seg = np.array([0, 100, 200, 300], dtype=np.int64)
    k = 3
    none = (np.zeros((0, 1), np.int32), np.zeros(0, np.int64))

    def run(nu):
        args = unit_args(seed_sequence(5, "s6"), "t", nu)
        out = np.zeros((k, 3, 4))
        buf = np.empty((k, u.size))
        sim_rows(*args, u, seg, *none, out, np.zeros((k, 0, 4)), buf, np.zeros((0, 2), np.int64))
        return out, buf

    one, buf1 = run(5.0)
    same, buf6 = run(np.array([5.0, 5.0, 5.0]))
    assert unit_args(seed_sequence(5, "s6"), "t",
                     np.array([5.0, 5.0, 5.0])).code == Draw.STUDENT_PER_SEGMENT
    np.testing.assert_array_equal(one, same)
    np.testing.assert_array_equal(buf1, buf6)
    nus = np.array([np.inf, 8.0, 3.0])
    got, buf = run(nus)
    state = unit_args(seed_sequence(5, "s6"), "t", 5.0).state
    want = np.empty((k, u.size))
    for r in range(k):  # copy after copy, segment after segment, on the one stream
        for j in range(3):
            want[r, seg[j]:seg[j + 1]] = draw_unit(state, 100, dist="t", nu=nus[j])
    np.testing.assert_array_equal(buf, want)
    for j in range(3):
        e = want[:, seg[j]:seg[j + 1]]
        np.testing.assert_allclose(got[:, j, 0], (e * e).sum(1), rtol=1e-12)
        np.testing.assert_allclose(got[:, j, 2], (u[seg[j]:seg[j + 1]] * e).sum(1), rtol=1e-12)


# ------------------------------------------------------------- body of the errors (CC)


def _log_abs_spreads(draw, M, n, seed):
    """Slow twin: the plain variance of ln|z| (ddof 1) over n samples of one shape."""
    rng = np.random.default_rng(seed)
    return np.array([np.var(np.log(np.abs(draw(rng, M))), ddof=1) for _ in range(n)])


@pytest.mark.parametrize("nu", [np.inf, 6.0, 4.0, 3.0])
def test_log_abs_z_cumulants_of_t_match_simulation(nu):
    from uqx.engine.null_body import log_abs_z_cumulants_of_t

    rng = np.random.default_rng(int(min(nu, 99)))
    z = rng.standard_t(nu, 400_000) if np.isfinite(nu) else rng.standard_normal(400_000)
    ln = np.log(np.abs(z))
    k2, k4 = log_abs_z_cumulants_of_t(nu)
    assert float(k2) == pytest.approx(np.var(ln), rel=0.01)
    assert float(k4) == pytest.approx(stats.kstat(ln, 4), rel=0.1)


def test_log_abs_spread_sd_and_laplace_body():
    """The screening's sd is the simulated sd of the spread; Laplace errors sit at
    π²/6 (the value of t(2)), which excludes the t_s(ν ≥ 4) at M = 2000."""
    from uqx.engine.null_body import (
        body_plausible,
        log_abs_z_cumulants_of_t,
        log_abs_z_spread_local,
    )

    M = 2000
    sims = _log_abs_spreads(lambda r, m: r.standard_normal(m), M, 400, seed=5)
    k2, k4 = log_abs_z_cumulants_of_t(np.inf)
    assert np.mean(sims) == pytest.approx(float(k2), rel=0.01)
    assert np.std(sims) == pytest.approx(float(np.sqrt((k4 + 2 * k2**2) / M)), rel=0.12)
    rng = np.random.default_rng(6)
    u = rng.uniform(0.5, 2.0, M)
    E = u * rng.laplace(size=M) / np.sqrt(2)
    v, dof = log_abs_z_spread_local(E, u)
    assert M - 60 < dof < M  # one mean per bin of uE
    assert v == pytest.approx(np.pi**2 / 6, abs=0.2)
    assert not any(body_plausible(v, dof, nu) for nu in (4.0, 6.0, np.inf))
    z = rng.standard_t(6, M)
    v6, dof6 = log_abs_z_spread_local(u * z, u)
    assert body_plausible(v6, dof6, 6.0)
    # a scale that varies with uE is not read as spread (bins centre ln|Z| on their own)
    v6s, _ = log_abs_z_spread_local(u * u * z, u)
    assert v6s == pytest.approx(v6, abs=0.05)
    # an error of exactly 0 is left out, not -inf
    E0 = E.copy()
    E0[:3] = 0.0
    v0, dof0 = log_abs_z_spread_local(E0, u)
    assert np.isfinite(v0) and dof0 == dof - 3
