"""Curve diagnostics (uqx.inference.curves.confidence): slow twins, properties and the papers'
oracles (methods: curves)."""

import numpy as np
import pytest
import xarray as xr

from uqx.dataio.model import InputError, from_arrays, stack
from uqx.dataio.synth import demo_sets, nig
from uqx.engine.binning import make_bins
from uqx.engine.stats.tailedness import hd_quantile
from uqx.inference.curves import binned as BC
from uqx.inference.curves import confidence as C
from uqx.inference.zeta import binomial_ci


@pytest.fixture(scope="module")
def calib():
    E, u = nig(1500, 6.0, seed=7)
    rng = np.random.default_rng(3)
    return from_arrays(E, u, X=rng.uniform(size=E.size), name="nig")


@pytest.fixture(scope="module")
def set1(data_dir):
    from uqx.dataio.datasets import load_dataset

    return load_dataset("Set1", data_dir)


def _slow_confidence(E, u, stat, ks):
    """Obvious twin: sort by u descending, drop the first floor(kM/100), recompute."""
    order = np.argsort(-u, kind="stable")
    Es = E[order]
    out = []
    for k in ks:
        n = k * E.size // 100
        n = 1 if (k >= 1 and n == 0) else n  # R quirk for M < 100
        kept = Es[n:]
        out.append({"rmse": np.sqrt(np.mean(kept**2)), "mae": np.mean(np.abs(kept)),
                    "rmsd": np.std(kept, ddof=1) if kept.size > 1 else np.nan,
                    "q95": hd_quantile(np.abs(kept), 0.95)}[stat])
    return np.array(out)


@pytest.mark.parametrize("stat", C.CONFIDENCE_STATS)
@pytest.mark.parametrize("M", [57, 430])
def test_confidence_curve_matches_slow_twin(stat, M):
    rng = np.random.default_rng(M)
    u = np.round(rng.gamma(2.0, 1.0, M), 1) + 0.1  # ties exercise the stable order
    E = u * rng.standard_normal(M)
    cc = C.confidence_curve(E, u, stat=stat, n_rep=0)
    ks = np.arange(100)
    np.testing.assert_allclose(cc["curve"].values, _slow_confidence(E, u, stat, ks),
                               rtol=1e-10)
    oracle = _slow_confidence(E, np.abs(E), stat, ks)  # |E| order = oracle
    np.testing.assert_allclose(cc["oracle"].values, oracle, rtol=1e-10)
    assert cc["fraction"].values[0] == 0.0 and cc.sizes["fraction"] == 100


def test_confidence_reference_band_and_seed(calib):
    a = C.confidence_curve(calib, n_rep=200, seed=5, n_boot=100)
    b = C.confidence_curve(calib, n_rep=200, seed=5)
    c = C.confidence_curve(calib, n_rep=200, seed=6)
    np.testing.assert_array_equal(a["reference"].values, b["reference"].values)
    assert not np.array_equal(a["reference"].values, c["reference"].values)
    assert np.all(a["ref_low"] <= a["reference"]) and np.all(a["reference"] <= a["ref_high"])
    assert np.all(a["boot_low"] <= a["boot_high"])
    # calibrated data: the data curve stays inside the reference band almost everywhere
    inside = (a["curve"] >= a["ref_low"]) & (a["curve"] <= a["ref_high"])
    assert inside.mean() > 0.8
    # removing points never makes the oracle worse
    assert np.all(np.diff(a["oracle"].values) <= 1e-12)
    assert a.attrs["auco"] > 0 and a.attrs["dfpr"] >= 0 and a.attrs["up95"] > 0
    t = C.confidence_curve(calib, n_rep=50, dist="t", nu=4, normalize=True)
    assert t["curve"].values[0] == 1.0 and t.attrs["dist"] == "t"


def test_confidence_curve_keyed_by_content_not_name(calib):
    # the reference stream is keyed by the set's content: renaming the set, or putting it
    # in a stack beside another one, gives bit-identical curves and bands
    kw = dict(n_rep=60, n_boot=40, seed=11, dist="t", nu=5)
    a = C.confidence_curve(calib, **kw)
    renamed = from_arrays(calib["E"].values, calib["uE"].values, X=calib["X"].values,
                          name="renamed")
    b = C.confidence_curve(renamed, **kw)
    other = from_arrays(*nig(300, 6.0, seed=8), name="aaa")
    c = C.confidence_curve(stack([other, renamed]), **kw).sel(set="renamed")
    for key in ("curve", "oracle", "reference", "ref_low", "ref_high", "boot_low",
                "boot_high"):
        np.testing.assert_array_equal(b[key].values, a[key].values, err_msg=key)
        np.testing.assert_array_equal(c[key].values, a[key].values, err_msg=key)
    for key in ("dfpr", "up95", "auco"):
        assert b.attrs[key] == a.attrs[key]


def test_confidence_curve_errors(calib):
    with pytest.raises(InputError):
        C.confidence_curve(calib, stat="median")
    with pytest.raises(InputError):
        C.confidence_curve(calib, k=[0, 100])


def test_calibration_curve_slow_twin_and_band(calib):
    p = np.array([0.1, 0.5, 0.9])
    cal = C.calibration_curve(calib, prob=p)
    E, u = calib["E"].values, calib["uE"].values
    from scipy.stats import norm

    slow = [np.mean(E <= u * norm.ppf(q)) for q in p]
    np.testing.assert_allclose(cal["eta"].values, slow)
    lo, hi = binomial_ci(cal["eta"].values * E.size, E.size)
    np.testing.assert_allclose(cal["ci_low"].values, lo)
    full = C.calibration_curve(calib)
    assert full.sizes["prob"] == 199 and full.attrs["miscal_area"] < 0.03
    # an overconfident copy has a larger miscalibration area
    over = C.calibration_curve(E, 0.6 * u)
    assert over.attrs["miscal_area"] > 3 * full.attrs["miscal_area"]


def test_conditional_calibration_equals_per_bin_curves(calib):
    cc = C.conditional_calibration(calib, by="X", n_bins=5, prob=[0.25, 0.75])
    bins = make_bins(calib["X"].values, 5)
    E, u = calib["E"].values[bins.order], calib["uE"].values[bins.order]
    for j in range(5):
        sl = slice(bins.edges[j], bins.edges[j + 1])
        ref = C.calibration_curve(E[sl], u[sl], prob=[0.25, 0.75])
        np.testing.assert_allclose(cc["eta"].values[j], ref["eta"].values)
    assert cc.attrs["cond"] == "X" and np.all(cc["band_low"] <= [0.25, 0.75])


def test_running_quantiles_windows(calib):
    x, y = calib["uE"].values, calib["E"].values
    rq = C.running_quantiles(x, y)
    n_bins = int(np.ceil(2 * x.size**0.333))
    width = x.size // n_bins
    assert rq.attrs["width"] == width and rq.sizes["window"] == x.size - width + 1
    o = np.argsort(x, kind="stable")
    for w in (0, 100, rq.sizes["window"] - 1):
        ys = y[o][w:w + width]
        np.testing.assert_allclose(rq["q_high"].values[w], hd_quantile(ys, 0.975))
        np.testing.assert_allclose(rq["x_mid"].values[w],
                                   (x[o][w] + x[o][w + width - 1]) / 2)
    # calibrated normal errors: running 95 % quantiles close to +-1.96 u on average
    ratio = rq["q_high"].values / rq["x_mid"].values
    assert 1.5 < np.median(ratio) < 2.5


def test_lcp_given_intervals_equal_uE_route(calib):
    a = BC.lcp(calib, n_bins=6)
    P = a["prob"].values
    from scipy.stats import norm

    U = calib["uE"].values[:, None] * norm.ppf((1 + P) / 2)[None, :]
    b = BC.lcp(calib, U=U, prob=P, n_bins=6)
    np.testing.assert_allclose(a["coverage"].values, b["coverage"].values)
    assert b.attrs["intervals"] == "given U"
    np.testing.assert_allclose(a["picp"].values, P, atol=0.04)
    assert np.all(a["ci_low"] <= a["coverage"]) and np.all(a["coverage"] <= a["ci_high"])


def test_lcp_from_dataset_U_variable(calib):
    ds = calib.assign_coords(prob=[0.5, 0.9])
    ds["U"] = (("sample", "prob"), np.c_[calib["uE"].values, 2 * calib["uE"].values])
    res = BC.lcp(ds, n_bins=4)
    assert list(res["prob"].values) == [0.5, 0.9] and res.attrs["intervals"] == "given U"


def test_local_z_cho_and_bootstrap(calib):
    cho = BC.local_z(calib, n_bins=5)
    bs = BC.local_z(calib, n_bins=5, ci="bootstrap", n_boot=300, seed=1)
    np.testing.assert_allclose(cho["estimate"].values, bs["estimate"].values)
    assert np.all(bs["ci_low"] < bs["estimate"]) and np.all(bs["estimate"] < bs["ci_high"])
    # cho: symmetric about the estimate
    np.testing.assert_allclose(cho["estimate"] - cho["ci_low"], cho["ci_high"] - cho["estimate"])
    assert cho.attrs["frac_valid"] >= 0.6 and cho["full_low"] < 1 < cho["full_high"]
    # per-bin estimates agree with the engine's bootstrap_per_bin
    from uqx.inference.bootstrap import bootstrap_per_bin

    eng = bootstrap_per_bin(calib, "lzisd", n_boot=20, bins=5, seed=0)
    np.testing.assert_allclose(eng["estimate"].values[0], cho["estimate"].values, rtol=1e-9)
    lzv = BC.local_z(calib, stat="lzv", n_bins=5)
    np.testing.assert_allclose(lzv["estimate"].values, cho["estimate"].values ** -2)


def test_demo_inconsistent_lzisd_off_target():
    ds = demo_sets(M=3000)
    res = BC.local_z(ds, n_bins=10)
    assert res.sizes["set"] == 6
    frac = res["frac_valid"].sel(set=["calibrated", "inconsistent"]).values
    assert frac[0] >= 0.7 and frac[1] <= 0.3


def test_reliability_rmse_and_bootstrap(calib):
    r = BC.reliability(calib, n_bins=6, kind="rmse")
    b = BC.reliability(calib, n_bins=6, ci="bootstrap", n_boot=200)
    assert np.all(np.diff(r["rmv"].values) >= 0)
    assert np.all(b["ci_low"] < b["y"]) and np.all(b["y"] < b["ci_high"])
    assert 0 < r.attrs["ence"] < 0.3
    with pytest.raises(InputError):
        BC.reliability(calib, kind="mad")


def test_over_sets_pads_and_keeps_scores():
    ds = demo_sets(M=800)
    res = C.calibration_curve(ds)
    assert res.sizes["set"] == 6 and res["miscal_area"].dims == ("set",)
    lz = BC.local_z(ds, by="X", binning="adaptive", n_bins=8)
    assert isinstance(lz, xr.Dataset) and lz["estimate"].dims == ("set", "bin")


# ------------------------------------------------------------------ methods: the papers (Set 1)
@pytest.mark.data
def test_set1_confidence_oracles(set1):
    f = [0.0, 0.1, 0.5, 0.9, 0.99]
    rmse = C.confidence_curve(set1, n_rep=0).sel(fraction=f)
    np.testing.assert_allclose(rmse["curve"], [0.36768, 0.326788, 0.232337, 0.2069, 0.0804423],
                               rtol=2e-5)
    np.testing.assert_allclose(rmse["oracle"],
                               [0.36768, 0.24834, 0.0932477, 0.0160595, 0.0018212], rtol=2e-5)
    mae = C.confidence_curve(set1, stat="mae", n_rep=0, oracle=False).sel(fraction=f)
    np.testing.assert_allclose(mae["curve"],
                               [0.260802, 0.233189, 0.156525, 0.110579, 0.0633951], rtol=2e-5)


@pytest.mark.data
def test_set1_calibration_and_lcp_oracles(set1):
    cal = C.calibration_curve(set1, prob=[0.025, 0.25, 0.5, 0.75, 0.975])
    np.testing.assert_allclose(
        cal["eta"], [0.02254902, 0.2166667, 0.5181373, 0.7852941, 0.9838235], rtol=1e-6)
    lc = BC.lcp(set1, prob=[0.95], n_bins=10)
    np.testing.assert_allclose(
        lc["coverage"].values[:, 0],
        [0.951, 0.9755, 0.9804, 0.9804, 0.9118, 0.951, 0.9755, 0.9559, 0.9657, 0.9657],
        atol=5e-5)
    np.testing.assert_allclose(lc["picp"], [0.9612745], rtol=1e-7)


@pytest.mark.data
def test_set1_bin_oracles(set1):
    lz = BC.local_z(set1, n_bins=10)
    lv = BC.local_z(set1, stat="lzv", n_bins=10)
    rel = BC.reliability(set1, n_bins=10)
    rms = BC.reliability(set1, n_bins=10, kind="rmse")
    for j, mid, v, vlo, vhi, s, slo, shi, rmv, sde, rmse in [
        (0, 0.13425, 1.54919, 0.67805, 2.42033, 0.80343, 0.57754, 1.02932,
         0.15843, 0.19941, 0.20690),
        (9, 0.77354, 0.97816, 0.82262, 1.13371, 1.01110, 0.93071, 1.09149,
         0.62455, 0.62643, 0.62512),
    ]:
        np.testing.assert_allclose(lz["x_mid"][j], mid, atol=6e-6)
        np.testing.assert_allclose([lv["estimate"][j], lv["ci_low"][j], lv["ci_high"][j]],
                                   [v, vlo, vhi], atol=6e-6)
        np.testing.assert_allclose([lz["estimate"][j], lz["ci_low"][j], lz["ci_high"][j]],
                                   [s, slo, shi], atol=6e-6)
        np.testing.assert_allclose([rel["rmv"][j], rel["y"][j], rms["y"][j]],
                                   [rmv, sde, rmse], atol=6e-6)
