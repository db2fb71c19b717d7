"""Recalibration: the maps against slow twins, saving and applying, cross-fitting, CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import uqx
from uqx.engine import recal_maps as R
from uqx.engine.binning import make_bins
from uqx.engine.defaults import ISO_MIN_BLOCK
from uqx.engine.resample import seed_sequence
from uqx.errors import InputError
from uqx.workflow import recalibrate as W


def _data(M=600, seed=0, *, gamma=1.0, c=1.0, x_effect=0.0, nu=None):
    rng = np.random.default_rng(seed)
    uE = rng.lognormal(0.0, 0.6, M)
    X = rng.uniform(0.0, 1.0, M)
    eps = rng.standard_normal(M) if nu is None else rng.standard_t(nu, M) / np.sqrt(
        nu / (nu - 2))
    E = c * uE**gamma * (1.0 + x_effect * X) * eps
    return E, uE, X


# ------------------------------------------------------------------ slow twins


def _nll(E, u):
    return np.mean(0.5 * (np.log(2 * np.pi * u**2) + (E / u) ** 2))


def test_scale_is_the_likelihood_optimum_on_a_grid():
    E, uE, _ = _data(300, 1, c=1.7)
    f = R.fit_scale(E, uE)["f"]
    grid = np.linspace(0.5, 3.0, 2501)
    best = grid[np.argmin([_nll(E, g * uE) for g in grid])]
    assert f == pytest.approx(best, abs=1e-3)
    assert f == pytest.approx(np.sqrt(np.mean((E / uE) ** 2)))


def test_power_law_against_a_brute_force_likelihood_grid():
    E, uE, _ = _data(400, 2, gamma=1.4, c=0.8)
    p = R.fit_power(E, uE)
    cs = np.exp(np.linspace(np.log(0.3), np.log(2.0), 301))
    gs = np.linspace(0.5, 2.5, 401)
    nll = np.array([[_nll(E, c * uE**g) for g in gs] for c in cs])
    i, j = np.unravel_index(np.argmin(nll), nll.shape)
    assert p["gamma"] == pytest.approx(gs[j], abs=0.01)
    assert p["c"] == pytest.approx(cs[i], rel=0.01)
    # the fit is at least as good as every grid point
    assert _nll(E, p["c"] * uE ** p["gamma"]) <= nll.min() + 1e-9


def _isotonic_minmax(y, w):
    """Slow twin: g_i = max_{j<=i} min_{k>=i} weighted mean of y_j..y_k."""
    n = len(y)
    g = np.empty(n)
    for i in range(n):
        g[i] = max(min(np.average(y[j:k + 1], weights=w[j:k + 1]) for k in range(i, n))
                   for j in range(i + 1))
    return g


def test_pav_against_the_min_max_formula():
    rng = np.random.default_rng(3)
    for _ in range(5):
        y = rng.normal(size=30).cumsum() * 0.3 + rng.normal(size=30)
        w = rng.uniform(0.5, 3.0, 30)
        np.testing.assert_allclose(R.pav(y, w), _isotonic_minmax(y, w), atol=1e-12)
        np.testing.assert_allclose(R._pav_blocks(y, w), _isotonic_minmax(y, w), atol=1e-12)


def test_isotonic_map_with_ties_against_the_twin():
    rng = np.random.default_rng(4)
    uE = rng.choice(np.array([0.5, 0.7, 1.0, 1.3, 2.0, 2.2, 3.0]), 200)  # tie groups
    E = uE * rng.standard_normal(200)
    p = R.fit_isotonic(E, uE, min_block=1)  # the plain PAV map (Busk et al. 2022)
    xs = np.unique(uE**2)
    counts = np.array([np.sum(uE**2 == x) for x in xs])
    ymean = np.array([np.mean(E[uE**2 == x] ** 2) for x in xs])
    g = _isotonic_minmax(ymean, counts.astype(float))
    # at every distinct uE the map gives the twin's value; between knots linear, flat beyond
    np.testing.assert_allclose(R.apply_map("isotonic", p, np.sqrt(xs)) ** 2, g, rtol=1e-10)
    assert np.all(np.diff(R.apply_map("isotonic", p, np.linspace(0.1, 5, 300))) >= 0)
    lo, hi = R.apply_map("isotonic", p, np.array([0.01, 100.0]))
    assert lo**2 == pytest.approx(g[0]) and hi**2 == pytest.approx(g[-1])
    mid = np.sqrt(0.5 * (xs[0] + xs[1]))
    assert R.apply_map("isotonic", p, [mid])[0] ** 2 == pytest.approx(0.5 * (g[0] + g[1]))


def test_isotonic_against_scikit_learn_where_installed():
    iso = pytest.importorskip("sklearn.isotonic")
    E, uE, _ = _data(300, 5, gamma=1.5)
    p = R.fit_isotonic(E, uE, min_block=1)
    ref = iso.IsotonicRegression(out_of_bounds="clip").fit(uE**2, E**2)
    new = np.linspace(uE.min(), uE.max(), 50) ** 2
    np.testing.assert_allclose(R.apply_map("isotonic", p, np.sqrt(new)) ** 2,
                               np.maximum(ref.predict(new), p["values"].min()), rtol=1e-8)


def _lost(a, b):
    """Twice the Gaussian log-likelihood lost by pooling blocks a and b ([value, weight, n])."""
    (va, wa, _), (vb, wb, _) = a, b
    if va == vb:
        return 0.0
    if min(va, vb) <= 0:
        return np.inf
    v = (wa * va + wb * vb) / (wa + wb)
    return wa * np.log(v / va) + wb * np.log(v / vb)


def _merge_twin(g, w, min_block):
    """Slow twin of merge_small_blocks: a list of blocks, the lightest pooled first."""
    blocks = []  # [value, weight, entries]
    for gi, wi in zip(g, w, strict=True):
        if blocks and blocks[-1][0] == gi:
            blocks[-1][1] += wi
            blocks[-1][2] += 1
        else:
            blocks.append([gi, wi, 1])
    while len(blocks) > 1:
        light = [b for b in range(len(blocks)) if blocks[b][1] < min_block]
        if not light:
            break
        b = min(light, key=lambda k: (blocks[k][1], k))  # lightest, leftmost on a tie
        if b == 0:
            m = 1
        elif b == len(blocks) - 1:
            m = b - 1
        else:  # the pooling that loses the least likelihood, then the lighter, the left
            m = min((b - 1, b + 1),
                    key=lambda k, b=b: (_lost(blocks[k], blocks[b]), blocks[k][1], k))
        a, c = min(b, m), max(b, m)
        wt = blocks[a][1] + blocks[c][1]
        blocks[a] = [(blocks[a][0] * blocks[a][1] + blocks[c][0] * blocks[c][1]) / wt, wt,
                     blocks[a][2] + blocks[c][2]]
        del blocks[c]
    return np.concatenate([[v] * n for v, _, n in blocks])


def test_merge_small_blocks_against_the_slow_twin():
    rng = np.random.default_rng(31)
    for case in range(40):
        n = int(rng.integers(1, 60))
        y = rng.normal(size=n).cumsum() * 0.2 + rng.normal(size=n)
        w = rng.integers(1, 4, n).astype(float)  # integer weights: ties of block weights
        g = R.pav(y, w)
        for min_block in (1, 2, 3, 5, 10, 1000):
            got = R.merge_small_blocks(g, w, min_block)
            np.testing.assert_allclose(got, _merge_twin(g, w, min_block), rtol=1e-12,
                                       err_msg=f"case {case}, min_block {min_block}")
            assert np.all(np.diff(got) >= -1e-12)  # still nondecreasing
            # the weighted mean is kept: pooling moves no mass
            assert np.dot(got, w) == pytest.approx(np.dot(g, w), rel=1e-12)
    assert R.merge_small_blocks(np.array([]), np.array([]), 5).size == 0


@pytest.mark.parametrize("min_block", [1, 10, 30, 75])
def test_isotonic_blocks_hold_at_least_min_block_rows(min_block):
    E, uE, _ = _data(500, 32)
    p = R.fit_isotonic(E, uE, min_block=min_block, debias=False)
    assert p["min_block"] == min_block and p["debias"] == 0
    u2 = R.apply_map("isotonic", p, uE) ** 2
    # on its own rows the map is a step function of the blocks: rows grouped by u^2
    _, sizes = np.unique(u2, return_counts=True)
    assert sizes.min() >= min_block or sizes.size == 1
    order = np.argsort(uE)
    assert np.all(np.diff(u2[order]) >= 0)  # nondecreasing in uE
    assert np.all(np.diff(R.apply_map("isotonic", p, np.linspace(0.05, 8, 400))) >= 0)
    # each block's value is the mean E^2 of its rows
    for v in np.unique(u2):
        assert v == pytest.approx(np.mean(E[u2 == v] ** 2), rel=1e-10)
    if min_block == 1:  # the plain map: no correction unless asked
        np.testing.assert_allclose(p["values"], R.fit_isotonic(E, uE, min_block=1)["values"])


def test_isotonic_small_block_correction():
    E, uE, _ = _data(800, 36, nu=5)
    raw = R.fit_isotonic(E, uE, min_block=20, debias=False)
    p = R.fit_isotonic(E, uE, min_block=20)  # on by default with min_block > 1
    assert p["debias"] == 1 and R.fit_isotonic(E, uE, min_block=1)["debias"] == 0
    grid = np.linspace(uE.min(), uE.max(), 300)
    u_raw, u = R.apply_map("isotonic", raw, grid), R.apply_map("isotonic", p, grid)
    assert np.all(np.diff(u) >= 0) and np.all(u >= u_raw * (1 - 1e-12))
    # twin: g_b (1 + (k - 1)/n_b), k the kurtosis of E/sqrt(g); then PAV (weights: rows)
    g = R.apply_map("isotonic", raw, uE) ** 2
    z2 = E**2 / g
    k = np.mean(z2**2) / np.mean(z2) ** 2
    vals, n_b = np.unique(g, return_counts=True)
    corrected = R.pav(vals * (1 + (k - 1) / n_b), n_b.astype(float))
    want = corrected[np.searchsorted(vals, g)]
    np.testing.assert_allclose(R.apply_map("isotonic", p, uE) ** 2, want, rtol=1e-10)


def test_isotonic_min_block_pools_the_ends_of_the_plain_map():
    E, uE, _ = _data(2000, 33)
    plain = R.fit_isotonic(E, uE, min_block=1)
    u2 = R.apply_map("isotonic", plain, uE) ** 2
    assert np.unique(u2, return_counts=True)[1].min() < 30  # PAV leaves small blocks
    p = R.fit_isotonic(E, uE)  # default: ISO_MIN_BLOCK rows, corrected
    assert p["min_block"] == ISO_MIN_BLOCK and p["debias"] == 1
    sizes = np.unique(R.apply_map("isotonic", p, uE), return_counts=True)[1]
    assert sizes.min() >= ISO_MIN_BLOCK
    assert p["knots"].size < plain["knots"].size
    # fewer rows than min_block: one block, u^2 = <E^2>
    one = R.fit_isotonic(E[:20], uE[:20], min_block=30, debias=False)
    np.testing.assert_allclose(R.apply_map("isotonic", one, uE[:5]) ** 2, np.mean(E[:20] ** 2))
    with pytest.raises(InputError, match="min_block"):
        R.fit_isotonic(E, uE, min_block=0)


def test_min_block_reaches_fit_map_cross_fit_and_the_map_file(tmp_path):
    E, uE, X = _data(600, 34)
    assert R.fit_map("isotonic", E, uE, min_block=1)["min_block"] == 1
    np.testing.assert_allclose(R.fit_map("isotonic", E, uE, min_block=1)["values"],
                               R.fit_isotonic(E, uE, min_block=1)["values"])
    a = W.cross_fit(E, uE, X, method="isotonic", folds=5, seed=2, min_block=1)
    b = W.cross_fit(E, uE, X, method="isotonic", folds=5, seed=2)
    assert not np.allclose(a.u, b.u)
    m = uqx.fit_recalibration((E, uE), "isotonic", min_block=50, n_boot=0, seed=1)
    assert "blocks of at least 50 rows" in m.describe()
    m.to_netcdf(tmp_path / "iso.nc")
    back = uqx.read_map(tmp_path / "iso.nc")
    assert back.params["min_block"] == 50
    np.testing.assert_allclose(back.apply(uE), m.apply(uE))


def _bvs_twin(E, u, x, n_bins):
    b = make_bins(x, n_bins)
    f = np.empty(b.n_bins)
    for j in range(b.n_bins):
        rows = b.order[b.edges[j]:b.edges[j + 1]]
        f[j] = np.sqrt(np.mean((E[rows] / u[rows]) ** 2))
    return b, f


@pytest.mark.parametrize("on", ["uE", "X"])
def test_bvs_factors_per_bin_against_a_loop(on):
    E, uE, X = _data(500, 6, x_effect=2.0)
    x = uE if on == "uE" else X
    p = R.fit_map(f"bvs-{on}", E, uE, X, n_bins=5)
    b, f = _bvs_twin(E, uE, x, 5)
    np.testing.assert_allclose(p["factors"], f, rtol=1e-12)
    # fitted rows get their bin's factor
    u = R.apply_map(f"bvs-{on}", p, uE, X)
    for j in range(b.n_bins):
        rows = b.order[b.edges[j]:b.edges[j + 1]]
        np.testing.assert_allclose(u[rows] / uE[rows], f[j])
    # a new row takes the factor of the bin its value falls in
    xs = np.sort(x)
    inside = 0.5 * (xs[b.edges[2]] + xs[b.edges[3] - 1])
    new = (R.apply_map("bvs-uE", p, [inside]) / inside if on == "uE"
           else R.apply_map("bvs-X", p, [1.0], [inside]))
    assert new[0] == pytest.approx(f[2])


def test_scaling_binning_is_the_power_law_then_bvs_on_uE():
    E, uE, _ = _data(600, 7, gamma=1.3)
    p = R.fit_map("scaling-binning", E, uE, n_bins=4)
    pw = R.fit_power(E, uE)
    u0 = pw["c"] * uE ** pw["gamma"]
    _, f = _bvs_twin(E, u0, uE, 4)
    np.testing.assert_allclose(p["factors"], f, rtol=1e-10)
    u = R.apply_map("scaling-binning", p, uE)
    b = make_bins(uE, 4)
    for j in range(b.n_bins):
        rows = b.order[b.edges[j]:b.edges[j + 1]]
        np.testing.assert_allclose(u[rows], f[j] * u0[rows], rtol=1e-10)


def test_auto_picks_the_least_cross_validated_nll_and_bvs_x_on_x_variance():
    E, uE, X = _data(900, 8, x_effect=3.0)
    ss = seed_sequence(1, "t")
    best, scores = R.choose_method(E, uE, X, ss=ss)
    ids = R.fold_ids(E.size, 5, seed_sequence(1, "t"))
    for m in R.METHODS:
        each = R.cv_nll(m, E, uE, X, ids, per_fold=True)
        assert scores[m] == pytest.approx(np.median(each))
        assert np.mean(each) == pytest.approx(R.cv_nll(m, E, uE, X, ids), rel=0.01)
    assert best == min(scores, key=scores.get) == "bvs-X"
    best_nox, scores_nox = R.choose_method(E, uE, None, ss=ss)
    assert "bvs-X" not in scores_nox


def _choose_slowly(E, uE, X, ss, margin):
    """auto's choice written from its definition: out-of-fold NLL row by row, the margin."""
    ids = R.fold_ids(E.size, 5, ss)
    rows = {}
    for m in [m for m in R.METHODS if X is not None or m not in R.NEEDS_X]:
        nll = np.empty(E.size)
        for f in range(5):
            te = ids == f
            xtr = None if X is None else X[~te]
            xte = None if X is None else X[te]
            u = R.apply_map(m, R.fit_map(m, E[~te], uE[~te], xtr), uE[te], xte)
            nll[te] = 0.5 * (np.log(2 * np.pi * u**2) + (E[te] / u) ** 2)
        rows[m] = nll
    score = {m: np.median([v[ids == f].mean() for f in range(5)]) for m, v in rows.items()}

    def beats(m):
        d = rows[m] - rows["scale"]
        return d.mean() + margin * d.std(ddof=1) / np.sqrt(d.size) < 0
    return min([m for m in rows if m == "scale" or beats(m)], key=score.get)


@pytest.mark.parametrize("seed", range(6))
def test_auto_keeps_a_flexible_map_only_where_it_beats_the_factor_on_the_same_rows(seed):
    # uE off by one factor (seeds 0-2) or by uE^1.6 (3-5): the choice equals the definition
    gamma = 1.0 if seed < 3 else 1.6
    E, uE, X = _data(1000, 40 + seed, c=1.5, gamma=gamma)
    ss = seed_sequence(seed, "auto")
    best, _ = R.choose_method(E, uE, None, ss=ss)
    assert best == _choose_slowly(E, uE, None, seed_sequence(seed, "auto"), R.AUTO_MARGIN_SE)
    if gamma != 1.0:  # a real gain is kept
        assert best != "scale"


def test_auto_margin_stops_the_flexible_maps_fitting_the_noise_of_one_factor(monkeypatch):
    # 12 sets whose uE is off by one factor only: the margin keeps the factor on (nearly)
    # all; without it (every method kept, the least score) the flexible maps win often
    def chosen():
        return [R.choose_method(*_data(1500, 70 + k, c=1.5, nu=6)[:2], None,
                                ss=seed_sequence(k, "noise"))[0] for k in range(12)]
    with_margin = chosen()
    monkeypatch.setattr(R, "AUTO_MARGIN_SE", -np.inf)
    without = chosen()
    assert with_margin.count("scale") >= 11
    assert without.count("scale") <= 8


def test_cv_nll_is_the_mean_of_the_out_of_fold_rows():
    E, uE, X = _data(400, 3, gamma=1.3)
    ids = R.fold_ids(E.size, 4, seed_sequence(2, "rows"))
    for m in R.METHODS:
        rows = R.cv_nll_rows(m, E, uE, X, ids)
        assert rows.shape == E.shape and np.all(np.isfinite(rows))
        assert R.cv_nll(m, E, uE, X, ids) == np.mean(rows)
        np.testing.assert_array_equal(R.cv_nll(m, E, uE, X, ids, per_fold=True),
                                      [rows[ids == f].mean() for f in range(4)])
    assert R.cv_nll_rows("bvs-uE", E[:40], uE[:40], None, ids[:40]) is None  # too few rows


# ------------------------------------------------------------------ maps, NetCDF


@pytest.mark.parametrize("method", R.METHODS)
def test_map_round_trip_to_netcdf_and_apply_to_new_rows(tmp_path, method):
    E, uE, X = _data(500, 9, gamma=1.2, x_effect=1.0)
    m = uqx.fit_recalibration((E, uE, X), method, n_boot=20, seed=3)
    assert m.method == method and m.band is not None
    assert np.all(m.band["lower"] <= m.band["upper"])
    path = m.to_netcdf(tmp_path / "map.nc")
    back = uqx.read_map(path)
    assert back.method == method and back.provenance["seed"] == 3
    assert back.provenance["n_rows"] == 500
    E2, uE2, X2 = _data(200, 10)
    np.testing.assert_allclose(back.apply(uE2, X2), m.apply(uE2, X2), rtol=0, atol=0)
    np.testing.assert_allclose(back.band["factor"], m.band["factor"])
    ds = uqx.from_arrays(E2, uE2, X=X2)
    out = back.apply(ds)
    np.testing.assert_allclose(out["uE"].values, m.apply(uE2, X2))
    np.testing.assert_allclose(out["uE_original"].values, uE2)


def test_band_covers_the_estimate_and_is_reproducible():
    E, uE, _ = _data(400, 11, gamma=1.3)
    a = uqx.fit_recalibration((E, uE), "power", n_boot=50, seed=5)
    b = uqx.fit_recalibration((E, uE), "power", n_boot=50, seed=5)
    np.testing.assert_array_equal(a.band["lower"], b.band["lower"])
    f = a.band["factor"].values
    assert np.mean((a.band["lower"].values <= f) & (f <= a.band["upper"].values)) > 0.9


def test_auto_map_records_the_scores_and_the_accessor_forwards():
    E, uE, X = _data(500, 12, x_effect=3.0)
    ds = uqx.from_arrays(E, uE, X=X)
    m = ds.uqx.recalibrate("auto", n_boot=0, seed=1)
    assert m.asked == "auto" and m.method == min(m.scores, key=m.scores.get)
    assert m.band is None
    # the description says the rule: the factor, or a map that beats it by the margin
    assert "among the factor and the maps that beat it by 1.5 s.e." in m.describe()
    assert m.to_dataset().attrs["auto_margin_se"] == R.AUTO_MARGIN_SE == 1.5


# ------------------------------------------------------------------ cross-fitting


def test_cross_fit_never_applies_a_map_to_its_own_rows():
    E, uE, X = _data(400, 13)
    cf = W.cross_fit(E, uE, X, method="isotonic", folds=5, seed=2)
    for train, test in zip(cf.fitted_on, cf.applied_to, strict=True):
        assert np.intersect1d(train, test).size == 0
        assert train.size + test.size == E.size
    assert np.sort(np.concatenate(cf.applied_to)).tolist() == list(range(E.size))
    again = W.cross_fit(E, uE, X, method="isotonic", folds=5, seed=2)
    np.testing.assert_array_equal(cf.u, again.u)


def test_a_leaking_fold_is_caught(monkeypatch):
    E, uE, _ = _data(300, 14)
    honest = W._fold_rows

    def leaky(folds, f):
        train, test = honest(folds, f)
        return np.union1d(train, test), test  # the map also sees its own rows

    monkeypatch.setattr(W, "_fold_rows", leaky)
    with pytest.raises(RuntimeError, match="leaked"):
        W.cross_fit(E, uE, method="scale", folds=5, seed=1)


def test_auto_chooses_inside_the_training_folds(monkeypatch):
    E, uE, X = _data(300, 15)
    seen = []
    real = W.choose_method

    def spy(E_, uE_, X_=None, **kw):
        seen.append(set(np.round(uE_, 15).tolist()))
        return real(E_, uE_, X_, **kw)

    monkeypatch.setattr(W, "choose_method", spy)
    cf = W.cross_fit(E, uE, X, method="auto", folds=4, seed=3)
    assert len(seen) == 4
    for rows_seen, test in zip(seen, cf.applied_to, strict=True):
        assert rows_seen.isdisjoint(np.round(uE[test], 15).tolist())


def test_check_gives_verdicts_before_and_after_on_the_same_rows():
    E, uE, X = _data(800, 16, c=2.0)  # uE too small by a factor 2
    chk = uqx.check_recalibration((E, uE, X), "scale", seed=1, bootstrap=200, copies=200,
                                  conditional=False)
    assert list(chk.result["set"].values) == ["before", "after"]
    v = chk.question_verdicts()
    assert v["average"] == ("invalid", "valid")
    assert chk.nll_gain > 0.3
    assert "average calibration: invalid -> valid" in chk.fixed()
    text = chk.text()
    assert "5-fold cross-fitting" in text and "before" in text
    split = uqx.check_recalibration((E, uE), "scale", split=0.5, seed=1, bootstrap=200,
                                    copies=200, conditional=False)
    assert split.rows.size == 400 and "single split" in split.design

    # the map's own scale error on its fitting rows (400 of 800), recalibrated
    fit = np.setdiff1d(np.arange(800), split.rows)
    z2 = (E[fit] / (uE[fit] * np.sqrt(np.mean((E[fit] / uE[fit]) ** 2)))) ** 2
    assert split.n_fit == 400
    assert split.fit_zms_se == pytest.approx(z2.std(ddof=1) / np.sqrt(400), rel=1e-9)
    assert chk.fit_zms_se is None and chk.map_scale_note() == ""


def test_a_split_says_when_average_calibration_is_within_the_maps_own_error():
    # the held-out rows test the fitted map, whose scale is itself uncertain: where their
    # ZMS is within 2 s.e. of both errors together, "invalid" is said to be of this map
    import xarray as xr

    rng = np.random.default_rng(5)
    n = 4000
    u = rng.lognormal(0.0, 0.4, n)
    z = rng.standard_normal(n)
    E = u * z * np.sqrt(0.95 / np.mean(z * z))  # held-out ZMS 0.95, s.e. about 0.021
    res = xr.Dataset({"question_verdict": (("set", "question"), [["invalid"], ["invalid"]])},
                     coords={"set": ["before", "after"], "question": ["average"]})

    def check(fit_se):
        return W.RecalCheck(name="s", method="scale", methods=["scale"], design="single split",
                            rows=np.arange(n), E=E, uE=u, u=u, nll_before=0.0,
                            nll_after=0.0, nll_scale=0.0, result=res, fit_zms_se=fit_se,
                            n_fit=3000)

    wide = check(0.03).unfixed()  # 2 * hypot(0.03, 0.021) = 0.073 > 0.05
    assert len(wide) == 1 and "within the error of the map's own fit" in wide[0]
    assert "fitted on 3000 rows" in wide[0] and "not of the method" in wide[0]
    narrow = check(0.001).unfixed()  # 2 * hypot(0.001, 0.021) = 0.043 < 0.05
    assert len(narrow) == 1 and "own fit" not in narrow[0] and "still invalid" in narrow[0]
    assert "own fit" not in " ".join(check(None).unfixed())  # cross-fitting


def test_consistency_left_only_by_a_factor_is_said_to_be_the_scale():
    # after recalibration, consistency invalid but consistent up to a factor: what is
    # left is the scale, not a shape a map bending with uE would fix
    import xarray as xr

    E = np.array([1.0, -0.5, 0.3])

    def check(up_to_factor_after):
        after = ["invalid", "invalid", up_to_factor_after]
        res = xr.Dataset({"question_verdict": (("set", "question"),
                                               [["invalid", "invalid", "valid"], after])},
                         coords={"set": ["before", "after"],
                                 "question": ["average", "consistency", "up_to_factor"]})
        return W.RecalCheck(name="s", method="scale", methods=["scale"], design="5-fold",
                            rows=np.arange(3), E=E, uE=np.ones(3), u=np.ones(3),
                            nll_before=0.0, nll_after=0.0, nll_scale=0.0, result=res)

    left = check("valid").unfixed()
    assert any("consistency on uE is invalid after recalibration only by a factor" in x
               for x in left)
    assert not any("bends with uE" in x for x in left)
    left = check("invalid").unfixed()
    assert any("consistency on uE is still invalid: try a map that bends with uE" in x
               for x in left)


def test_adaptivity_left_beside_a_scale_left_says_to_fix_the_scale_first():
    import xarray as xr

    def check(average_after):
        res = xr.Dataset({"question_verdict": (("set", "question"),
                                               [["invalid", "invalid"],
                                                [average_after, "invalid"]])},
                         coords={"set": ["before", "after"],
                                 "question": ["average", "adaptivity_X"]})
        return W.RecalCheck(name="s", method="isotonic", methods=["isotonic"],
                            design="5-fold", rows=np.arange(3), E=np.ones(3),
                            uE=np.ones(3), u=np.ones(3), nll_before=0.0, nll_after=0.0,
                            nll_scale=0.0, result=res, has_x=True)

    left = [x for x in check("invalid").unfixed() if x.startswith("adaptivity")]
    assert len(left) == 1 and "recalibrate on X" in left[0]
    assert "fix the scale first" in left[0]
    left = [x for x in check("valid").unfixed() if x.startswith("adaptivity")]
    assert len(left) == 1 and "fix the scale first" not in left[0]

def test_nll_rows_are_the_normal_log_density_and_their_mean_is_the_nll():
    from scipy.stats import norm

    E, uE, _ = _data(300, 21)
    rows = R.gaussian_nll_rows(E, uE)
    np.testing.assert_allclose(rows, -norm.logpdf(E, scale=uE), rtol=1e-12)
    assert R.gaussian_nll(E, uE) == pytest.approx(_nll(E, uE), rel=1e-12)


def test_check_compares_the_map_with_the_factor_alone_within_its_noise():
    # u = uE^1.5: the power law beats one factor far beyond the noise of the difference
    E, uE, _ = _data(1500, 22, gamma=1.5)
    chk = uqx.check_recalibration((E, uE), "power", seed=3, bootstrap=100, copies=200,
                                  conditional=False)
    diff, se = chk.nll_vs_scale
    d = -np.log(chk.u_scale / chk.u) + 0.5 * chk.E**2 * (chk.u**-2 - chk.u_scale**-2)
    assert diff == pytest.approx(d.mean(), rel=1e-9)
    assert se == pytest.approx(d.std(ddof=1) / np.sqrt(d.size), rel=1e-9)
    assert diff < -2 * se and "better than the factor alone" in chk.text()
    # the factor itself: the same u, no difference to speak of
    same = uqx.check_recalibration((E, uE), "scale", seed=3, bootstrap=100, copies=200,
                                   conditional=False)
    assert same.nll_vs_scale[0] == 0.0 and "than the factor alone" not in same.text()


def test_a_question_made_invalid_by_the_map_is_said_so():
    """Not invalid before, invalid after: the map's own error, with a smoother map to try."""
    import xarray as xr

    qv = xr.DataArray([["valid", "valid"], ["valid", "invalid"]], dims=("set", "question"),
                      coords={"set": ["before", "after"],
                              "question": ["average", "consistency"]})
    z = np.zeros(3)
    chk = W.RecalCheck(name="d", method="isotonic", methods=["isotonic"] * 5,
                       design="5-fold cross-fitting", rows=np.arange(3), E=z, uE=z + 1,
                       u=z + 1, nll_before=0.0, nll_after=0.0, nll_scale=0.0,
                       result=xr.Dataset({"question_verdict": qv}))
    (line,) = chk.unfixed()
    assert line.startswith("consistency on uE is invalid after recalibration")
    assert "isotonic blocks" in line and "--method bvs-uE or power" in line
    assert "still invalid" not in line


def test_check_says_what_bvs_on_uE_leaves_unfixed():
    E, uE, X = _data(1500, 17, x_effect=4.0)
    chk = uqx.check_recalibration((E, uE, X), "bvs-uE", seed=2, bootstrap=200, copies=200,
                                  conditional=False)
    assert chk.question_verdicts()["adaptivity_X"][1] == "invalid"
    assert any("adaptivity on X" in s and "bvs-X" in s for s in chk.unfixed())


# ------------------------------------------------------------------ bad inputs


def test_bad_inputs_get_clear_errors(tmp_path):
    E, uE, X = _data(200, 18)
    with pytest.raises(InputError, match="unknown recalibration method 'wiggle'"):
        uqx.fit_recalibration((E, uE), "wiggle")
    with pytest.raises(InputError, match="feature X"):
        uqx.fit_recalibration((E, uE), "bvs-X")
    m = uqx.fit_recalibration((E, uE, X), "bvs-X", n_boot=0, seed=1)
    with pytest.raises(InputError, match="must have X"):
        m.apply(uE)
    with pytest.raises(InputError, match="no X variable"):
        m.apply(uqx.from_arrays(E, uE))
    bad = uE.copy()
    bad[:3] = [0.0, -1.0, 0.0]
    with pytest.raises(InputError, match="3 row"):
        uqx.fit_recalibration((E, bad), "scale")
    with pytest.raises(InputError, match="uE must be positive"):
        R.apply_map("scale", {"f": 1.0}, bad)
    with pytest.raises(InputError, match="split"):
        uqx.check_recalibration((E, uE), "scale", split=1.5)
    path = tmp_path / "res.nc"
    uqx.to_netcdf(uqx.from_arrays(E, uE), path)
    with pytest.raises(InputError, match="not a recalibration map"):
        uqx.read_map(path)


# ------------------------------------------------------------------ command line


def _main(*argv):
    from uqx.cli.app import main

    return main([str(a) for a in argv])


def test_cli_fit_apply_check_round_trip(tmp_path, capsys):
    E, uE, X = _data(600, 19, x_effect=3.0)
    cal = tmp_path / "cal.csv"
    pd.DataFrame({"name": [f"m{i}" for i in range(600)], "E": E, "uE": uE, "X": X}
                 ).to_csv(cal, index=False)
    test = tmp_path / "test.csv"
    E2, uE2, X2 = _data(100, 20, x_effect=3.0)
    pd.DataFrame({"id": range(100), "uE": uE2, "X": X2, "E": E2}).to_csv(test, index=False)
    assert _main("recalibrate", "fit", cal, "--X", "X", "--method", "bvs-X", "--seed", 1,
                 "--band-boot", 10, "-o", tmp_path / "map.nc") == 0
    assert "bvs-X" in capsys.readouterr().out
    out = tmp_path / "test_recal.csv"
    assert _main("recalibrate", "apply", tmp_path / "map.nc", test, "-o", out) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == ["id", "uE", "X", "E", "uE_recal"]
    m = uqx.read_map(tmp_path / "map.nc")
    np.testing.assert_allclose(df["uE_recal"], m.apply(uE2, X2))
    np.testing.assert_allclose(df["uE"], uE2)
    # replacing the uE column
    assert _main("recalibrate", "apply", tmp_path / "map.nc", test, "--column", "uE",
                 "-o", tmp_path / "replaced.csv") == 0
    assert list(pd.read_csv(tmp_path / "replaced.csv").columns) == ["id", "uE", "X", "E"]
    capsys.readouterr()
    assert _main("recalibrate", "check", cal, "--X", "X", "--method", "auto", "--folds", 3,
                 "--n-boot", 200, "--n-mc", 200, "--seed", 1, "-q") == 0
    text = capsys.readouterr().out
    assert "3-fold cross-fitting" in text and "adaptivity on X" in text


def test_cli_refuses_bad_inputs(tmp_path, capsys):
    E, uE, X = _data(200, 21)
    cal = tmp_path / "cal.csv"
    pd.DataFrame({"E": E, "uE": uE, "X": X}).to_csv(cal, index=False)
    assert _main("recalibrate", "fit", cal, "--X", "X", "--method", "bvs-X", "--band-boot", 0,
                 "-o", tmp_path / "map.nc") == 0
    noX = tmp_path / "nox.csv"
    pd.DataFrame({"E": E, "uE": uE}).to_csv(noX, index=False)
    capsys.readouterr()
    assert _main("recalibrate", "apply", tmp_path / "map.nc", noX, "-o",
                 tmp_path / "o.csv") == 2
    assert "no column 'X'" in capsys.readouterr().err
    neg = tmp_path / "neg.csv"
    pd.DataFrame({"E": E, "uE": -uE, "X": X}).to_csv(neg, index=False)
    assert _main("recalibrate", "apply", tmp_path / "map.nc", neg, "-o",
                 tmp_path / "o.csv") == 2
    assert "cannot be recalibrated" in capsys.readouterr().err
    assert _main("recalibrate", "apply", tmp_path / "map.nc", cal, "-o", cal) == 2
    assert "input" in capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()


def test_fold_ids_are_balanced_and_keyed():
    a = R.fold_ids(103, 5, seed_sequence(1, "x"))
    assert sorted(np.bincount(a).tolist()) == [20, 20, 21, 21, 21]
    np.testing.assert_array_equal(a, R.fold_ids(103, 5, seed_sequence(1, "x")))
    assert not np.array_equal(a, R.fold_ids(103, 5, seed_sequence(2, "x")))
    with pytest.raises(InputError):
        R.fold_ids(3, 5, seed_sequence(1))


def test_power_profile_is_convex():
    E, uE, _ = _data(200, 22)
    gs = np.linspace(-2, 4, 61)
    vals = [R._power_profile(g, E * E, np.log(uE)) for g in gs]
    assert np.all(np.diff(vals, 2) > -1e-12)


def test_cli_min_block_of_the_isotonic_map(tmp_path, capsys):
    E, uE, _ = _data(600, 35)
    cal = tmp_path / "cal.csv"
    pd.DataFrame({"E": E, "uE": uE}).to_csv(cal, index=False)
    for mb in (1, 60):
        assert _main("recalibrate", "fit", cal, "--method", "isotonic", "--min-block", mb,
                     "--band-boot", 0, "--seed", 1, "-o", tmp_path / f"m{mb}.nc") == 0
        assert f"blocks of at least {mb} rows" in capsys.readouterr().out
        m = uqx.read_map(tmp_path / f"m{mb}.nc")
        np.testing.assert_allclose(m.params["values"],
                                   R.fit_isotonic(E, uE, min_block=mb)["values"])
    assert _main("recalibrate", "check", cal, "--method", "isotonic", "--min-block", 1,
                 "--folds", 3, "--n-boot", 100, "--n-mc", 100, "--seed", 1, "-q",
                 "--format", "json") == 0
    rec = json.loads(capsys.readouterr().out)
    cf = W.cross_fit(E, uE, None, method="isotonic", folds=3, seed=1, min_block=1)
    assert rec["nll_after"] == pytest.approx(R.gaussian_nll(E, cf.u))


def test_methods_list_of_the_cli_matches_the_engine():
    from uqx.cli.commands.recalibrate import METHOD_CHOICES

    assert METHOD_CHOICES == ("auto", *R.METHODS)

