"""Tests of the Harrell–Davis / tailedness kernels (methods: tailedness)."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy import special

from uqx.dataio.model import InputError
from uqx.engine.stats.tailedness import (
    SAFETY_LIMITS,
    TAILEDNESS_KEYS,
    beta_gm,
    hd_quantile,
    hd_weights,
    kappa_cs,
    safety_flags,
    tailedness,
    unreliable_statistics,
)

# ---------------------------------------------------------------- brute-force twins


def full_weights(n, q):
    """WRS2 hd weights over all n order statistics (no truncation)."""
    a, b = (n + 1) * q, (n + 1) * (1 - q)
    return special.betainc(a, b, np.arange(1, n + 1) / n) - special.betainc(
        a, b, np.arange(0, n) / n
    )


def brute_hd(x, q):
    y = np.sort(np.asarray(x, dtype=float)[~np.isnan(x)])
    return float(np.sum(full_weights(y.size, q) * y)) if y.size else np.nan


def brute_beta(x):
    y = np.asarray(x, dtype=float)
    y = y[~np.isnan(y)]
    m = brute_hd(y, 0.5)
    return (y.mean() - m) / np.mean(np.abs(y - m))


def brute_kappa(x):
    h = [brute_hd(x, q) for q in (0.025, 0.975, 0.25, 0.75)]
    return (h[1] - h[0]) / (h[3] - h[2]) - 2.91


# ---------------------------------------------------------------- the nine sets

PAL_SETS = [
    "Diffusion_RF",
    "Perovskite_RF",
    "Diffusion_LR",
    "Perovskite_LR",
    "Diffusion_GPR_Bayesian",
    "Perovskite_GPR_Bayesian",
]
SIZES = [2040, 3834, 2040, 3836, 2040, 3818, 13885, 5000, 5000]


def load_set(data_dir, k):
    """Set k (1..9) as (E, uE) with the parsing rules of methods: notation and conventions."""
    if k <= 6:
        df = pd.read_csv(data_dir / "PAL2022" / f"{PAL_SETS[k - 1]}_Test_cal.csv")
        keep = df["uE"] > 1e-6 * df["E"].std(ddof=1)
        return df.loc[keep, "E"].to_numpy(float), df.loc[keep, "uE"].to_numpy(float)
    if k == 7:
        df = pd.read_csv(data_dir / "BUS2022" / "qm9_qm9_E_calibrated_isotonic_test.csv")
        return (df["E_"] - df["prediction"]).to_numpy(float), np.sqrt(
            df["uncertainty_total"].to_numpy(float)
        )
    name = "logP_10k_a_LS-GCN_test" if k == 8 else "logP_150k_LS-GCN_test"
    df = pd.read_csv(data_dir / "RAS2023" / f"{name}.csv", comment=None)
    return (df["logP"] - df["y_pred"]).to_numpy(float), df["uq"].to_numpy(float)


# published (001 Table III), columns beta_gm_u, beta_gm_u2, beta_gm_e2, beta_gm_z2,
# kappa_cs_u2, kappa_cs_e2, kappa_cs_z2 (strings: the number of printed digits sets the tolerance)
TABLE_14_1 = {
    1: "0.1724199 0.3970304 0.8201687 0.7308772 -0.2022050 5.063686 2.323146",
    2: "0.4185867 0.7245707 0.9448684 0.8263086 4.096025 19.67834 6.373703",
    3: "0.4847322 0.6606059 0.7367690 0.6875422 3.189953 2.186485 1.484771",
    4: "0.4384345 0.7436550 0.8190094 0.6873517 5.672459 4.517635 2.072166",
    5: "0.1129972 0.1918902 0.7849453 0.7915807 1.840783 4.324866 4.068643",
    6: "0.1953680 0.5021283 0.9609170 0.9520480 1.460086 22.69898 23.97399",
    7: "0.5244343 0.9329118 0.9795367 0.7750526 3.906983 9.843399 3.971031",
    8: "0.2314558 0.2968621 0.7889123 0.7835289 0.4096667 4.768547 4.691179",
    9: "0.2226421 0.3001651 0.7696953 0.7460301 0.4848070 5.060275 4.478408",
}
TABLE_KEYS = (
    "beta_gm_u",
    "beta_gm_u2",
    "beta_gm_e2",
    "beta_gm_z2",
    "kappa_cs_u2",
    "kappa_cs_e2",
    "kappa_cs_z2",
)


@pytest.fixture(scope="module")
def nine_sets(data_dir):
    return {k: load_set(data_dir, k) for k in range(1, 10)}


@pytest.mark.data
def test_nine_set_sizes(nine_sets):
    assert [nine_sets[k][0].size for k in range(1, 10)] == SIZES


@pytest.mark.data
@pytest.mark.parametrize("k", range(1, 10))
def test_table_14_1(nine_sets, k):
    E, uE = nine_sets[k]
    t = tailedness(E, uE)
    for key, printed in zip(TABLE_KEYS, TABLE_14_1[k].split(), strict=True):
        decimals = len(printed.split(".")[1])
        value = float(t[key])
        # equal to the printed digits, and within 1e-6 relative
        assert abs(value - float(printed)) <= 0.5 * 10.0**-decimals, (key, value, printed)
        assert value == pytest.approx(float(printed), rel=1e-6), key


@pytest.mark.data
def test_nine_sets_stacked_with_padding(nine_sets):
    m = max(SIZES)
    E = np.full((9, m), np.nan)
    U = np.full((9, m), np.nan)
    for k in range(1, 10):
        e, u = nine_sets[k]
        E[k - 1, : e.size], U[k - 1, : u.size] = e, u
    t = tailedness(E, U)
    for k in range(1, 10):
        tk = tailedness(*nine_sets[k])
        for key in TAILEDNESS_KEYS:
            assert t[key][k - 1] == pytest.approx(float(tk[key]), rel=1e-12, abs=1e-14)


@pytest.mark.data
def test_unreliable_statistics_set2(nine_sets):
    t = tailedness(*nine_sets[2])
    flags = safety_flags(t)
    assert flags == {
        "beta_gm_u2": True,
        "kappa_cs_u2": True,
        "beta_gm_e2": True,
        "kappa_cs_e2": True,
        "beta_gm_z2": True,
        "kappa_cs_z2": True,
    }
    bad = unreliable_statistics(t)
    assert set(bad) == {"rce", "ence", "uce", "uce_w", "zms", "nll", "zmse", "zmse_max",
                        "zms_scan", "zve", "var_z"}
    assert bad["zms"] == ["beta_gm_z2", "kappa_cs_z2"]


# ---------------------------------------------------------------- hd weights


@pytest.mark.parametrize("n", [1, 2, 5, 30, 101, 2040, 100_000])
@pytest.mark.parametrize("q", [0.0, 0.025, 0.25, 0.5, 0.75, 0.975, 1e-3])
def test_hd_weights_equal_full_computation(n, q):
    w = hd_weights(n, q)
    ref = full_weights(n, q)
    if q == 0.0:
        ref = np.r_[1.0, np.zeros(n - 1)]
    assert w.shape == (n,)
    # kept weights are bitwise those of the full computation; dropped ones are < 1e-18
    kept = w != 0
    assert np.array_equal(w[kept], ref[kept])
    assert ref[~kept].sum() < 1e-17
    x = np.random.default_rng(n).standard_normal(n).cumsum()
    assert np.dot(w, np.sort(x)) == pytest.approx(np.dot(ref, np.sort(x)), rel=1e-12, abs=1e-12)
    assert w.sum() == pytest.approx(1.0, abs=1e-14)


def test_hd_weights_cached_readonly_and_edges():
    w = hd_weights(50, 0.3)
    assert hd_weights(50, 0.3) is w and not w.flags.writeable
    assert hd_weights(7, 1.0).tolist() == [0.0] * 6 + [1.0]
    assert hd_weights(7, 0.0).tolist() == [1.0] + [0.0] * 6
    for bad_n, bad_q in [(0, 0.5), (3, -0.1), (3, 1.5), (2.5, 0.5)]:
        with pytest.raises(InputError):
            hd_weights(bad_n, bad_q)


# ---------------------------------------------------------------- hd quantile


def test_hd_quantile_reference_values():
    x = [1.0, 2.0, 3.0, 4.0, 100.0]
    assert round(float(hd_quantile(x, 0.5)), 4) == 8.5024
    assert round(float(hd_quantile(x, 0.025)), 6) == 1.031162
    assert round(float(hd_quantile(x, 0.975)), 5) == 97.37969
    v = hd_quantile(x, [0.5, 0.025, 0.975])
    assert v.shape == (3,)
    assert np.round(v, 4).tolist() == [8.5024, 1.0312, 97.3797]
    assert float(hd_quantile(x, 0.0)) == 1.0


def test_hd_quantile_vs_loop_with_padding_and_batch(rng):
    x = rng.standard_t(3, size=(4, 3, 250))
    lengths = rng.integers(0, 251, size=(4, 3))
    lengths[0, 0] = 0  # an empty row gives NaN
    lengths[1, :] = 250
    for idx in np.ndindex(4, 3):
        x[idx][lengths[idx] :] = np.nan
    x[2, 1, 5] = np.nan  # NaN in the middle too
    qs = [0.025, 0.25, 0.5, 0.75, 0.975]
    got = hd_quantile(x, qs)
    assert got.shape == (4, 3, 5)
    for idx in np.ndindex(4, 3):
        for k, q in enumerate(qs):
            ref = brute_hd(x[idx], q)
            if np.isnan(ref):
                assert np.isnan(got[idx + (k,)])
            else:
                assert got[idx + (k,)] == pytest.approx(ref, rel=1e-12, abs=1e-13)
    # axis argument and the pre-sorted fast path
    assert np.allclose(hd_quantile(np.moveaxis(x, -1, 0), qs, axis=0), got, equal_nan=True)
    xs = np.sort(x, axis=-1)
    assert np.array_equal(hd_quantile(xs, qs, sorted=True), got, equal_nan=True)
    assert hd_quantile(x, 0.5).shape == (4, 3)


def test_hd_quantile_large_n_vs_full(rng):
    x = rng.lognormal(size=200_000)
    for q in (0.025, 0.5, 0.975):
        assert float(hd_quantile(x, q)) == pytest.approx(brute_hd(x, q), rel=1e-12)


def test_hd_quantile_bad_q():
    for q in (-0.1, 1.1, np.nan, [[0.5]]):
        with pytest.raises(InputError):
            hd_quantile([1.0, 2.0], q)
    with pytest.raises(InputError):
        hd_quantile(3.0, 0.5)


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=60, deadline=None)
@given(
    x=hnp.arrays(np.float64, st.integers(1, 80), elements=finite),
    q=st.sampled_from([0.0, 0.025, 0.25, 0.5, 0.75, 0.975]),
    scale=st.floats(1e-3, 1e3),
    shift=st.floats(-1e3, 1e3),
    seed=st.integers(0, 2**32 - 1),
)
def test_hd_quantile_equivariance_permutation_padding(x, q, scale, shift, seed):
    h = float(hd_quantile(x, q))
    tol = 1e-9 * (np.abs(x).max() * scale + abs(shift) + 1.0)
    # positive affine maps commute with HD quantiles (weights sum to 1)
    assert float(hd_quantile(scale * x + shift, q)) == pytest.approx(scale * h + shift, abs=tol)
    perm = np.random.default_rng(seed).permutation(x)
    assert float(hd_quantile(perm, q)) == h
    padded = np.r_[perm, np.full(7, np.nan)]
    assert float(hd_quantile(padded, q)) == h
    assert x.min() - tol <= h <= x.max() + tol


# ---------------------------------------------------------------- beta_gm, kappa_cs


def test_beta_kappa_vs_brute_force(rng):
    x = rng.gamma(0.7, size=(5, 400))
    x[2, 300:] = np.nan
    b, k = beta_gm(x), kappa_cs(x)
    assert b.shape == (5,) and k.shape == (5,)
    for i in range(5):
        assert b[i] == pytest.approx(brute_beta(x[i]), rel=1e-12)
        assert k[i] == pytest.approx(brute_kappa(x[i]), rel=1e-12)
    assert np.allclose(beta_gm(x.T, axis=0), b, rtol=1e-14)
    assert np.allclose(kappa_cs(x.T, axis=0), k, rtol=1e-14)


def test_degenerate_cases_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(beta_gm(np.full(40, 2.0)))
        assert np.isnan(kappa_cs(np.full(40, 2.0)))  # 0 / 0
        x = np.r_[np.zeros(2), np.ones(96), np.full(2, 50.0)]  # zero IQR, wide tails
        assert np.isposinf(kappa_cs(x))
        assert np.isnan(beta_gm(np.full(5, np.nan)))
        assert np.isnan(kappa_cs([np.nan, np.nan]))
        t = tailedness(np.zeros(40), np.ones(40))
        assert np.isnan(t["beta_gm_e2"]) and np.isnan(t["kappa_cs_u2"])


@settings(max_examples=40, deadline=None)
@given(
    x=hnp.arrays(np.float64, st.integers(5, 60), elements=st.floats(-100, 100, width=64)),
    scale=st.floats(0.01, 100.0),
    shift=st.floats(-100.0, 100.0),
)
def test_beta_kappa_affine_invariance(x, scale, shift):
    b, k = float(beta_gm(x)), float(kappa_cs(x))
    b2, k2 = float(beta_gm(scale * x + shift)), float(kappa_cs(scale * x + shift))
    if np.isfinite(b) and np.mean(np.abs(x - np.median(x))) > 1e-6 * (np.abs(x).max() + 1):
        assert -1.0 - 1e-12 <= b <= 1.0 + 1e-12
        assert b2 == pytest.approx(b, abs=1e-6)
    iqr = float(np.diff(hd_quantile(x, [0.25, 0.75]))[0])
    if iqr > 1e-3 * (np.abs(x).max() + 1):
        assert k2 == pytest.approx(k, rel=1e-6, abs=1e-6)


# ---------------------------------------------------------------- tailedness


def test_tailedness_matches_kernels_and_ignores_nan_pairs(rng):
    n = 3000
    u = np.sqrt(1.0 / rng.gamma(4.0, 0.25, n))
    E = u * rng.standard_t(6, n)
    Ep, up = E.copy(), u.copy()
    Ep[::10] = np.nan  # pairs with a NaN are ignored, in either variable
    up[5::10] = np.nan
    keep = ~(np.isnan(Ep) | np.isnan(up))
    t = tailedness(Ep, up)
    assert tuple(t) == TAILEDNESS_KEYS
    e, v = E[keep], u[keep]
    z = e / v
    ref = {
        "beta_gm_u": brute_beta(v),
        "beta_gm_u2": brute_beta(v**2),
        "beta_gm_e2": brute_beta(e**2),
        "beta_gm_z2": brute_beta(z**2),
        "kappa_cs_u2": brute_kappa(v**2),
        "kappa_cs_e2": brute_kappa(e**2),
        "kappa_cs_z2": brute_kappa(z**2),
    }
    for key in TAILEDNESS_KEYS:
        assert float(t[key]) == pytest.approx(ref[key], rel=1e-11), key


def test_tailedness_batch_equals_loop_and_broadcast(rng):
    u = rng.uniform(0.5, 2.0, size=(3, 2, 200))
    E = u * rng.standard_normal((3, 2, 200))
    E[1, 0, 150:] = np.nan
    t = tailedness(E, u)
    for idx in np.ndindex(3, 2):
        ti = tailedness(E[idx], u[idx])
        for key in TAILEDNESS_KEYS:
            assert t[key].shape == (3, 2)
            assert t[key][idx] == pytest.approx(float(ti[key]), rel=1e-13)
    t0 = tailedness(np.moveaxis(E, -1, 0), np.moveaxis(u, -1, 0), axis=0)
    assert all(np.allclose(t0[k], t[k], rtol=1e-14) for k in TAILEDNESS_KEYS)
    # a scalar uncertainty broadcasts
    tb = tailedness(E[0, 1], 0.7)
    assert np.isnan(tb["beta_gm_u"]) and np.isnan(tb["kappa_cs_u2"])
    assert float(tb["beta_gm_e2"]) == pytest.approx(float(t["beta_gm_e2"][0, 1]), rel=1e-13)


def test_tailedness_negative_u_sorted_separately(rng):
    u = rng.normal(size=300)
    E = rng.normal(size=300)
    assert float(tailedness(E, u)["beta_gm_u2"]) == pytest.approx(brute_beta(u**2), rel=1e-12)


def test_tailedness_one_million(rng):
    # timing belongs to benchmarks/bench_kernels.py; here only that 10^6 rows work
    n = 1_000_000
    u = np.sqrt(1.0 / rng.gamma(3.0, 1.0, n))
    E = u * rng.standard_normal(n)
    t = tailedness(E, u)
    assert all(np.isfinite(float(v)) for v in t.values())


# ---------------------------------------------------------------- safety limits


def test_safety_limits_and_flags():
    assert SAFETY_LIMITS == {
        "beta_gm_u2": 0.6,
        "kappa_cs_u2": 3.0,
        "beta_gm_e2": 0.8,
        "kappa_cs_e2": 5.0,
        "beta_gm_z2": 0.8,
        "kappa_cs_z2": 5.0,
    }
    t = {
        "beta_gm_u": 0.99,  # no limit: ignored
        "beta_gm_u2": 0.6,  # equal is not above
        "kappa_cs_u2": np.inf,
        "beta_gm_e2": np.nan,
        "kappa_cs_e2": 5.1,
        "beta_gm_z2": 0.5,
        "kappa_cs_z2": 4.0,
    }
    flags = safety_flags(t)
    assert flags == {
        "beta_gm_u2": False,
        "kappa_cs_u2": True,
        "beta_gm_e2": False,
        "kappa_cs_e2": True,
        "beta_gm_z2": False,
        "kappa_cs_z2": False,
    }
    assert all(type(v) is bool for v in flags.values())
    bad = unreliable_statistics(t)
    assert bad == {s: ["kappa_cs_u2", "kappa_cs_e2"] for s in ("rce", "ence", "uce", "uce_w")}


def test_safety_flags_batched():
    flags = safety_flags({"beta_gm_z2": np.array([0.5, 0.9])})
    assert flags["beta_gm_z2"].tolist() == [False, True]
    assert unreliable_statistics({"beta_gm_z2": np.array([0.5, 0.9])})["var_z"] == ["beta_gm_z2"]
    assert unreliable_statistics({"beta_gm_z2": 0.1, "kappa_cs_u2": 0.0}) == {}


def test_hd_quantile_equals_scipy_hdquantiles(rng):
    """Library oracle: scipy.stats.mstats.hdquantiles (uqx keeps its own windowed
    version, 29-42x faster on 10^6 points, see benchmarks/bench_kernels.py)."""
    from scipy.stats.mstats import hdquantiles

    for n in (7, 100, 2001):
        x = rng.lognormal(size=n)
        for q in (0.025, 0.25, 0.5, 0.75, 0.975):
            want = float(hdquantiles(x, prob=[q])[0])
            assert float(hd_quantile(x, q)) == pytest.approx(want, rel=1e-10), (n, q)
