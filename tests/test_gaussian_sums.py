"""Joint-normal per-bin sums of calibrated copies (uqx.engine.gaussian_sums).

The covariance of the sums is checked against a slow twin (row-by-row outer products of
A_i w_i), the draws of ``gauss_rows`` against that mean and covariance, the cells of
several binnings against brute-force sums, the criterion against the members it must
refuse, and the route inside ``simulate_reference`` against full draws of the same
member.
"""

from __future__ import annotations

import numpy as np
import pytest
from internals import simulate
from scipy import stats as sps

import uqx
from uqx.engine import gaussian_sums as G
from uqx.engine.generators import stream_state
from uqx.inference import reference as R
from uqx.inference.reference import prepare_sets, simulate_reference


def _twin_cov(u, mu):
    """Mean and covariance of T = Σ_i (ε², u²ε², uε, ε)_i by row-wise outer products."""
    m1, m2, m3, m4 = mu[0], mu[1], mu[2], mu[3]
    C = np.array([[m4 - m2 * m2, m3 - m1 * m2], [m3 - m1 * m2, m2 - m1 * m1]])
    mean, cov = np.zeros(4), np.zeros((4, 4))
    for ui in u:
        A = np.array([[1.0, 0.0], [ui * ui, 0.0], [0.0, ui], [0.0, 1.0]])
        mean += A @ np.array([m2, m1])
        cov += A @ C @ A.T
    return mean, cov


def test_unit_moments_match_scipy_and_samples():
    np.testing.assert_allclose(G.unit_moments("normal"), [sps.norm.moment(k) for k in
                                                          range(1, 7)], atol=1e-12)
    nu = 9.0
    sc = np.sqrt(nu / (nu - 2.0))  # unit-variance t_s(ν)
    want = [sps.t(nu).moment(k) / sc**k for k in range(1, 7)]
    # scipy's moments of t come from quadrature: 1e-8
    np.testing.assert_allclose(G.unit_moments("t", nu), want, rtol=1e-8, atol=1e-12)
    assert G.unit_moments("t", 6.0) is None and G.unit_moments("t", 5.0) is None
    np.testing.assert_array_equal(G.unit_moments("t", np.inf), G.unit_moments("normal"))
    pool = np.random.default_rng(0).standard_normal(1000)
    np.testing.assert_allclose(G.unit_moments("data", pool=pool),
                               [np.mean(pool**k) for k in range(1, 7)], rtol=1e-12)
    win = np.array([[0, 400], [400, 1000]])
    got = G.unit_moments("data", pool=pool, windows=win)
    np.testing.assert_allclose(got[1], [np.mean(pool[400:] ** k) for k in range(1, 7)],
                               rtol=1e-12)


@pytest.mark.parametrize("skewed", [False, True])
def test_plan_covariance_equals_row_by_row_twin(skewed):
    rng = np.random.default_rng(1)
    u = np.sort(rng.uniform(0.5, 2.0, 300))
    seg = np.array([0, 120, 300])
    if skewed:  # a pool with odd moments: every covariance entry is non-zero
        pool = rng.exponential(1.0, 500)
        mom = G.unit_moments("data", pool=pool)
    else:
        mom = G.unit_moments("normal")
    lay = G.cell_layout(u, seg, np.zeros((0, 1), np.int32), np.zeros(0, np.int64))
    mean, fac = G.gaussian_plan(lay, mom, tol=np.inf)
    for s in range(2):
        m, c = _twin_cov(u[seg[s]:seg[s + 1]], mom)
        np.testing.assert_allclose(mean[s], m, rtol=1e-12)
        np.testing.assert_allclose(fac[s] @ fac[s].T, c, rtol=1e-9, atol=1e-9 * c.max())


def test_gauss_rows_draw_that_mean_and_covariance():
    rng = np.random.default_rng(2)
    u = np.sort(rng.uniform(0.5, 2.0, 200))
    lay = G.cell_layout(u, np.array([0, 200]), np.zeros((0, 1), np.int32),
                        np.zeros(0, np.int64))
    mean, fac = G.gaussian_plan(lay, G.unit_moments("normal"), tol=np.inf)
    k = 40000
    out = np.zeros((k, 1, 4))
    state = stream_state(np.random.SeedSequence(3))
    G.gauss_rows(state, mean, fac, lay["range"], lay["seg"], lay["bin"], np.zeros((k, 0, 4)),
                 out, np.zeros((k, 0, 4)))
    x = out[:, 0]
    m, c = _twin_cov(u, G.unit_moments("normal"))
    se = np.sqrt(np.diag(c) / k)
    assert np.all(np.abs(x.mean(axis=0) - m) < 4.5 * se)
    # correlations to within a few standard errors of 1/sqrt(k)
    corr, want = np.corrcoef(x.T), c / np.sqrt(np.outer(np.diag(c), np.diag(c)))
    assert np.max(np.abs(corr - want)) < 5 / np.sqrt(k)
    # the stream continues: a second call gives other draws
    out2 = np.zeros((2, 1, 4))
    G.gauss_rows(state, mean, fac, lay["range"], lay["seg"], lay["bin"], np.zeros((2, 0, 4)),
                 out2, np.zeros((2, 0, 4)))
    assert not np.allclose(out2[0], out[0])


def test_cells_of_two_binnings_add_up_to_each_binning():
    rng = np.random.default_rng(4)
    M = 500
    u = np.sort(rng.uniform(0.5, 2.0, M))
    seg = np.array([0, 100, 250, 500])
    binid = np.stack([rng.integers(0, 4, M), rng.integers(0, 3, M)]).astype(np.int32)
    boff = np.array([0, 4])
    lay = G.cell_layout(u, seg, binid, boff)
    U, sc = lay["u"], lay["scale"]  # sums of (u / scale)^p
    assert sc == u.max()
    seg_of = np.repeat(np.arange(3), np.diff(seg))
    for s in range(3):  # every segment's sums of u^p are the sums of its cells
        sel = lay["seg"] == s
        np.testing.assert_allclose(U[sel, 2].sum() * sc**2, np.sum(u[seg_of == s] ** 2))
        np.testing.assert_allclose(U[sel, 0].sum(), np.sum(seg_of == s))
    for c in range(2):
        for b in range(int(binid[c].max()) + 1):
            sel = lay["bin"][c] == boff[c] + b
            np.testing.assert_allclose(U[sel, 5].sum() * sc**6, np.sum(u[binid[c] == b] ** 6))
    # each cell is one (segment, bin, bin) combination
    combos = {(s, a, b) for s, a, b in zip(seg_of, binid[0], binid[1], strict=True)}
    assert len(combos) == lay["seg"].size


def test_criterion_refuses_heavy_members_and_small_bins():
    rng = np.random.default_rng(5)
    u = np.sort(np.sqrt(1.0 / rng.gamma(3.0, 1 / 3.0, 400000)))
    big = G.cell_layout(u, np.array([0, 200000, 400000]), np.zeros((0, 1), np.int32),
                        np.zeros(0, np.int64))
    assert G.gaussian_plan(big, G.unit_moments("normal")) is not None
    assert G.gaussian_plan(big, G.unit_moments("t", 6.0)) is None  # no sixth moment
    assert G.gaussian_plan(big, G.unit_moments("normal"), tol=0) is None  # turned off
    small = G.cell_layout(u[:2000], np.array([0, 1000, 2000]), np.zeros((0, 1), np.int32),
                          np.zeros(0, np.int64))
    assert G.gaussian_plan(small, G.unit_moments("normal")) is None
    # a pool with a few huge values (heavy tails) is drawn in full
    pool = rng.standard_normal(400000)
    pool[:20] = 40.0
    pool /= np.sqrt(np.mean(pool**2))
    assert G.gaussian_plan(big, G.unit_moments("data", pool=pool)) is None


def _big(M=240000, seed=0):
    rng = np.random.default_rng(seed)
    u = np.sqrt(1.0 / rng.gamma(3.0, 1 / 3.0, M))
    return uqx.from_arrays(u * rng.standard_normal(M), u, name="big")


def test_simulate_reference_uses_the_plan_and_agrees_with_full_draws(monkeypatch):
    ds = _big()
    stats = ["zms", "rce", "ence"]
    prep = prepare_sets(ds, stats)
    monkeypatch.setattr(G, "GAUSS_TOL", 0.02)  # bins of 12000 points a bin, u varied
    assert prep[0].gaussian("normal", 6.0, False) is not None
    calls = []
    real = R.gauss_rows
    monkeypatch.setattr(R, "gauss_rows", lambda *a: (calls.append(1), real(*a))[1])
    kw = dict(n_mc=2000, seed=8, keep_draws=True)
    gau = simulate(ds, stats, prepared=prep, **kw)
    assert calls  # the joint-normal route ran
    monkeypatch.setattr(G, "GAUSS_TOL", 0.0)
    full = simulate(ds, stats, prepared=prep, **kw)
    for j, s in enumerate(stats):
        a, b = gau["draws"].values[0, j], full["draws"].values[0, j]
        assert not np.array_equal(a, b)
        # same law: means within 4 standard errors, spreads within 8 %
        se = np.sqrt((a.var() + b.var()) / a.size)
        assert abs(a.mean() - b.mean()) < 4 * se, s
        assert abs(a.std() / b.std() - 1) < 0.08, s
        # and the two-sample KS test does not tell them apart
        assert sps.ks_2samp(a, b).pvalue > 1e-3, s


def test_plan_route_reproducible_and_scheduler_invariant(monkeypatch):
    ds = _big(60000, 1)
    monkeypatch.setattr(G, "GAUSS_TOL", np.inf)
    kw = dict(n_mc=600, seed=2, keep_draws=True)
    a = simulate_reference(ds, ["zms", "ence"], scheduler="synchronous", **kw)
    b = simulate_reference(ds, ["zms", "ence"], scheduler="threads", num_workers=2, **kw)
    np.testing.assert_array_equal(a["draws"].values, b["draws"].values)


def test_validate_with_the_plan_is_a_function_of_the_set_of_rows(monkeypatch):
    """Forced plan (cells of the bins of uE and of X): any permutation, same result."""
    import xarray as xr

    monkeypatch.setattr(G, "GAUSS_TOL", np.inf)
    calls = []
    real = R.gauss_rows
    monkeypatch.setattr(R, "gauss_rows", lambda *a: (calls.append(1), real(*a))[1])
    rng = np.random.default_rng(6)
    M = 1500
    u = rng.integers(1, 6, M) * 0.3  # ties in uE
    E, X = u * rng.standard_normal(M), rng.uniform(0, 1, M).round(1)
    kw = dict(bootstrap=100, copies=200, binning=10, compute=uqx.Compute(seed=5))
    stats = ["zms", "rce", "ence", "zmse", "zve"]
    ref = uqx.validate(uqx.from_arrays(E, u, X=X, name="p"), stats, **kw)
    assert calls
    o = rng.permutation(M)
    got = uqx.validate(uqx.from_arrays(E[o], u[o], X=X[o], name="p"), stats, **kw)
    xr.testing.assert_identical(ref.drop_attrs(), got.drop_attrs())


def test_sweep_from_range_sums_equals_sweep_three_on_the_same_draws():
    """The sums route of the extrapolation null is sweep_three when the sums are exact."""
    from uqx.inference.extrapolate.binsweep import (
        sweep_edges,
        sweep_from_range_sums,
        sweep_three,
    )

    rng = np.random.default_rng(9)
    M, n_bins = 3000, [10, 20, 30, 40]
    u = np.sort(rng.uniform(0.5, 2.0, M))
    eps = rng.standard_normal((3, M))
    edges, _ = sweep_edges(M, n_bins, pop_min=20)
    bounds = np.union1d(np.unique(edges), [0, 700, M])  # more bounds than edges: fine
    R = bounds.size - 1
    sums = np.empty((3, R, 4))
    for j in range(R):
        e, w = eps[:, bounds[j]:bounds[j + 1]], u[bounds[j]:bounds[j + 1]]
        sums[:, j] = np.stack([(e * e).sum(1), (w * w * e * e).sum(1), (w * e).sum(1),
                               e.sum(1)], axis=1)
    u2 = np.add.reduceat(u * u, bounds[:-1])
    np.testing.assert_allclose(sweep_from_range_sums(sums, u2, bounds, n_bins, pop_min=20),
                               sweep_three(eps, u, n_bins, pop_min=20), rtol=1e-10)
    with pytest.raises(ValueError, match="every edge"):
        sweep_from_range_sums(sums[:, :1], u2[:1], np.array([0, M]), n_bins, pop_min=20)


def test_null_hook_sums_route_equals_its_draws_route():
    from uqx.inference.extrapolate.binsweep import PRESETS, bin_numbers
    from uqx.inference.extrapolate.null import NullHook

    rng = np.random.default_rng(10)
    M = 4000
    u = np.sort(rng.uniform(0.5, 2.0, M))
    st = PRESETS["app-c"]
    hook = NullHook([u], bin_numbers(M, st), st, n_copies=4)
    parts = hook.partitions(u)
    assert parts is not None and hook.partitions(u[::-1]) is None
    assert NullHook([u, u[::-1]], bin_numbers(M, st), st).partitions(u) is None
    lay = G.cell_layout(u, np.array([0, 2000, M]), np.zeros((0, 1), np.int32),
                        np.zeros(0, np.int64), np.unique(np.concatenate(parts)))
    eps = rng.standard_normal((4, M))
    b = lay["bounds"]
    sums = np.stack([np.stack([(eps[:, b[j]:b[j + 1]] ** 2).sum(1),
                               ((u[b[j]:b[j + 1]] * eps[:, b[j]:b[j + 1]]) ** 2).sum(1),
                               (u[b[j]:b[j + 1]] * eps[:, b[j]:b[j + 1]]).sum(1),
                               eps[:, b[j]:b[j + 1]].sum(1)], axis=1)
                     for j in range(b.size - 1)], axis=1)
    np.testing.assert_allclose(lay["range_u2"], np.add.reduceat(u * u, b[:-1]), rtol=1e-12)
    np.testing.assert_allclose(hook.from_range_sums(sums, lay["range_u2"], b), hook(eps),
                               rtol=1e-8, atol=1e-12)


def test_hook_copies_as_sums_inside_simulate_reference(monkeypatch):
    """With a hook on the uE order, its copies are sums too, and its law is the draws'."""
    from uqx.dataio.model import as_stacked, iter_sets
    from uqx.workflow.conditional import null_hooks

    ds = _big(40000, 2)
    sets = list(iter_sets(as_stacked(ds)))
    kw = dict(n_mc=500, seed=4, keep_draws=True)
    out = {}
    for tol in (np.inf, 0.0):
        monkeypatch.setattr(G, "GAUSS_TOL", tol)
        hooks = null_hooks(sets, n_copies=500)
        calls = []
        real = hooks[0].from_range_sums
        monkeypatch.setattr(hooks[0], "from_range_sums",
                            lambda *a, c=calls, f=real: (c.append(1), f(*a))[1])
        r, nulls = simulate(ds, ["zms", "ence"], hooks=hooks, **kw)
        assert bool(calls) == (tol > 0)
        out[tol] = nulls[0][:, 0]  # (copies, stat) intercepts of the uE order
    a, b = out[np.inf], out[0.0]
    assert a.shape == b.shape == (500, 3)
    for s in range(3):  # ENCE, ZMSE, ZVE intercepts: same law
        assert sps.ks_2samp(a[:, s], b[:, s]).pvalue > 1e-3, s


def test_no_plan_at_the_sizes_of_the_report_grid():
    """The published error rates (M <= 2000) were measured on full draws: no member of any
    design gets a plan there (the unweighted Σε² alone needs ~9000 normal points)."""
    from uqx.engine.null_shape import kappa_cs_z2_local, nu_heavy_bound, nu_on_grid, t_nu_from_tails
    from uqx.sweeps.error_rates import DEFAULT_DESIGNS, ISSUE21_DESIGNS, synthetic_set

    assert 2 * np.sqrt(2) * G._PHI0_6 / np.sqrt(8000) > G.GAUSS_TOL
    for design in DEFAULT_DESIGNS + ISSUE21_DESIGNS:
        for scenario in ("calibrated", "scale1.1", "top0.6"):
            E, u, X = synthetic_set(design, scenario, 2000, seed=3, index=0)
            ds = uqx.from_arrays(E, u, X=X, name="g")
            ss = prepare_sets(ds, ["zms", "ence", "ence_X"], pool=True)[0]
            kappa = kappa_cs_z2_local(E, u)
            nus = {6.0, float(nu_on_grid(t_nu_from_tails(kappa))),
                   float(nu_on_grid(nu_heavy_bound(kappa, 2000.0)))}
            for view in (ss, ss.unbinned()):
                assert view.gaussian("normal", 6.0, False) is None
                for nu in nus:
                    assert view.gaussian("t", nu, False) is None
                assert view.gaussian("data", None, False) is None
                if view.pool_local is not None:
                    assert view.gaussian("data", None, True) is None


def test_plan_scales_with_u_without_overflow():
    """u = 1e140 x v: the same plan up to the scale, and no overflow (Σu⁶ would be 1e840)."""
    import warnings

    rng = np.random.default_rng(11)
    v = np.sort(rng.uniform(0.5, 2.0, 50000))
    seg = np.array([0, 25000, 50000])
    none = (np.zeros((0, 1), np.int32), np.zeros(0, np.int64))
    base = G.gaussian_plan(G.cell_layout(v, seg, *none), G.unit_moments("normal"))
    for c in (1e140, 1e-140):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = G.gaussian_plan(G.cell_layout(c * v, seg, *none), G.unit_moments("normal"))
        d = np.array([1.0, c * c, c, 1.0])
        np.testing.assert_allclose(got[0], base[0] * d, rtol=1e-12)
        np.testing.assert_allclose(got[1] / d[:, None], base[1], rtol=1e-9,
                                   atol=1e-9 * np.abs(base[1]).max())
