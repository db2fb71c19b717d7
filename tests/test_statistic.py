"""The declarations of uqx.engine.statistic (the documented source of every statistic).

Each :class:`Statistic` of STATISTICS finishes its sums with a public function whose
numpy-style docstring gives its formula and paper equation, equal to the plain-numpy twins
(tests/twins.py) on random data; it reads exactly the sums it declares; and a statistic
declared in one entry (a toy one here) is computed by every route of the bootstrap."""

import inspect
import re

import numpy as np
import pytest
import twins as T

import uqx
import uqx.engine.statistic as S
from uqx.engine.binning import equal_count_edges
from uqx.engine.evaluator import SetEvaluator
from uqx.engine.resample import BootstrapPlan

SOURCES = {  # where each formula comes from, as the docstrings must say
    "zms": "000 Eq. 14", "rce": "000 Eq. 10", "var_z": "000 Eq. 13", "nll": "000 Eq. 15",
    "nll_ref": "000 Eq. 16", "mean_z": "000 Table III", "t_z": "uqx", "mv": "001", "mse": "001",
    "rmv": "001", "rmse": "001", "ence": "000 Eq. 11", "ence_sd": "002 Eq. 6",
    "uce": "ErrViewLib", "uce_w": "Laves", "zmse": "000 Eq. 17", "zmse_max": "uqx",
    "zms_scan": "uqx",
    "zve": "002 Eq. 9",
    "lzisd": "003", "lzms": "001",
}


def _functions():
    yield from ((k, s.finish) for k, s in S.STATISTICS.items() if s.finish is not None)


@pytest.mark.parametrize("name,fn", list(_functions()), ids=lambda v: getattr(v, "__name__", v))
def test_every_statistic_is_a_documented_public_function(name, fn):
    assert inspect.isfunction(fn) and fn.__name__ != "<lambda>", name
    assert fn.__name__ in S.__all__ and getattr(S, fn.__name__) is fn
    assert name in fn.__name__  # the name says what it is
    doc = inspect.getdoc(fn)
    for part in (".. math::", "Parameters", "Returns", "See Also"):
        assert part in doc, f"{fn.__name__}: no {part!r}"
    assert SOURCES[name] in doc, f"{fn.__name__}: source {SOURCES[name]!r} not named"
    src = inspect.getsource(fn)
    assert re.search(r'^\s*r"""', src, re.M), f"{fn.__name__}: docstring not raw"


def test_moment_functions_equal_the_twins():
    rng = np.random.default_rng(11)
    u = rng.gamma(2.0, 0.5, (3, 400)) + 0.05
    E = u * rng.standard_t(5, (3, 400)) + 0.1
    Ssum, n = S.moment_sums(E, u), 400.0
    twin = {"zms": T.zms(E, u), "rce": T.rce(E, u), "mv": T.mv(u), "mse": T.mse(E),
            "rmv": T.rmv(u), "rmse": T.rmse(E), "mean_z": T.mean_z(E, u),
            "t_z": T.t_z(E, u),
            "var_z": T.var_z(E, u), "nll": T.nll(E, u), "nll_ref": T.nll_ref(u)}
    assert set(twin) == set(S.names_of("moment"))
    for k, want in twin.items():
        np.testing.assert_allclose(S.STATISTICS[k].finish(Ssum, n), want, rtol=1e-10,
                                   err_msg=k)


def test_binned_functions_equal_the_twins():
    rng = np.random.default_rng(12)
    M, N = 900, 12
    u = np.sort(rng.gamma(2.0, 0.5, M) + 0.05)
    E = u * rng.standard_t(5, (3, M)) * np.linspace(0.6, 1.6, M)  # miscalibrated in u
    edges = equal_count_edges(M, N, pop_min=20)
    Sb, cnt = S.bin_feature_sums(E, u, edges), np.diff(edges).astype(float)
    pb = T.per_bin(E, u, edges)
    twin = {
        "ence": T.ence(E, u, edges), "ence_sd": T.ence(E, u, edges, kind="sd"),
        "uce": T.uce(E, u, edges), "uce_w": T.uce_w(E, u, edges),
        "zmse": T.zmse(E, u, edges),
        "zmse_max": np.max(np.abs(np.log(pb["zms"])), axis=-1),
        "zms_scan": T.zms_scan(E, u, edges),
        "zve": T.zve(E, u, edges), "lzisd": T.lzisd(E, u, edges), "lzms": pb["zms"],
    }
    assert set(twin) == set(S.names_of("binned"))
    for k, want in twin.items():
        np.testing.assert_allclose(S.STATISTICS[k].finish(Sb, cnt), want, rtol=1e-10,
                                   err_msg=k)
    # the maximum over the bins is at least the mean, and sees one bad bin undiluted
    assert np.all(twin["zmse_max"] >= twin["zmse"])
    E1 = u * rng.standard_normal(M)
    E1[edges[-2]:] *= 3.0  # only the last bin miscalibrated
    S1 = S.bin_feature_sums(E1, u, edges)
    assert S.zmse_max_from_bin_sums(S1, cnt)[0] > 1.5 > S.zmse_from_bin_sums(S1, cnt)[0] * 5


def test_zms_scan_reads_a_miscalibrated_tail_at_its_own_precision():
    """A top decile whose uE are 40 % too small: the scan's largest term is that tail's
    sqrt(n) |ln ZMS|, several times its calibrated value, while ZMSE_max (one bin, half
    the points) sees less; on calibrated rows the scan stays near its normal-theory size
    (sd of sqrt(n) ln ZMS about sqrt(2))."""
    rng = np.random.default_rng(14)
    M, N = 4000, 20
    u = np.sort(rng.gamma(3.0, 0.5, M) + 0.1)
    edges = equal_count_edges(M, N, pop_min=30)
    cnt = np.diff(edges).astype(float)
    eps = rng.standard_normal((200, M))
    cal = S.zms_scan_from_bin_sums(S.bin_feature_sums(u * eps, u, edges), cnt)
    bad = u * eps
    bad[:, int(0.9 * M):] /= 0.6
    scan = S.zms_scan_from_bin_sums(S.bin_feature_sums(bad, u, edges), cnt)
    n_top = M - int(0.9 * M)
    # the top-decile tail alone: sqrt(400) * ln(1/0.36) ~ 20
    assert np.median(scan) > 0.8 * np.sqrt(n_top) * np.log(1 / 0.36)
    assert np.quantile(cal, 0.95) < 5.0 < np.quantile(scan, 0.01)
    np.testing.assert_allclose(scan[:3], T.zms_scan(bad[:3], u, edges), rtol=1e-10)


def test_per_bin_terms_is_the_scalar_twin_of_the_binned_functions():
    """The numba per-bin kernel of the fused sweeps against ence/zmse/zve_from_bin_sums:
    equal to 1e-12 relative on random data (only the mean over the bins differs: pairwise
    sum in numpy, sequential in the loops)."""
    rng = np.random.default_rng(13)
    M, N = 2000, 25
    u = np.sort(rng.gamma(1.5, 0.5, M) + 0.01)
    E = u * rng.standard_t(4, (5, M)) * rng.uniform(0.5, 2.0, (5, 1))
    edges = equal_count_edges(M, N, pop_min=20)
    Sb, cnt = S.bin_feature_sums(E, u, edges), np.diff(edges).astype(float)
    for r in range(E.shape[0]):
        terms = np.array([S.per_bin_terms(Sb[r, j, 0], Sb[r, j, 1], Sb[r, j, 2], Sb[r, j, 5],
                                          int(cnt[j])) for j in range(N)])
        np.testing.assert_allclose(terms[:, 0].mean(), S.ence_from_bin_sums(Sb[r], cnt),
                                   rtol=1e-12)
        np.testing.assert_allclose(terms[:, 1].mean(), S.zmse_from_bin_sums(Sb[r], cnt),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.exp(terms[:, 2].mean()), S.zve_from_bin_sums(Sb[r], cnt),
                                   rtol=1e-12)
        # per bin: the same operations as per_bin_moments
        mv, mse, _, var_z, zms = S.per_bin_moments(Sb[r], cnt)
        np.testing.assert_allclose(terms[:, 0], np.abs(np.sqrt(mv) - np.sqrt(mse)) / np.sqrt(mv),
                                   rtol=1e-12)
        np.testing.assert_allclose(terms[:, 1], np.abs(np.log(zms)), rtol=1e-12)
        np.testing.assert_allclose(terms[:, 2], np.abs(np.log(var_z)), rtol=1e-12)
    # degenerate bins as the numpy functions: zero ZMS -> inf, one point -> NaN variance
    assert S.per_bin_terms(1.0, 0.0, 0.0, 0.0, 5)[1] == np.inf
    assert np.isnan(S.per_bin_terms(1.0, 1.0, 1.0, 1.0, 1)[2])


# ---------------------------------------------------------------- the declarations


def _data(M=600, seed=15):
    rng = np.random.default_rng(seed)
    u = np.exp(rng.normal(0.0, 0.5, M))
    return u * rng.standard_t(6, M) * rng.uniform(0.8, 1.3, M), u


def test_the_named_features_are_the_columns_of_the_feature_arrays():
    """MOMENT_FEATURES and BIN_FEATURES name the columns that moment_features and
    bin_features compute, in their order."""
    E, u = _data()
    z = E / u
    Ec = E - E.mean()
    want = {"z2": z * z, "u2": u * u, "E2": E * E, "z": z, "lnu2": np.log(u * u), "Ec": Ec,
            "Ec2": Ec * Ec}
    for names, F in ((S.MOMENT_FEATURES, S.moment_features(E, u)),
                     (S.BIN_FEATURES, S.bin_features(E, u))):
        assert F.shape[-1] == len(names)
        for k, name in enumerate(names):
            np.testing.assert_allclose(F[:, k], want[name], rtol=1e-14, err_msg=name)
    assert (S.F_Z2, S.F_U2, S.F_E2, S.F_Z, S.F_LNU2) == tuple(
        list(S.MOMENT_FEATURES).index(k) for k in ("z2", "u2", "E2", "z", "lnu2"))


@pytest.mark.parametrize("name", [k for k, s in S.STATISTICS.items() if s.finish is not None])
def test_each_statistic_reads_exactly_its_declared_sums(name):
    """With every column it does not declare NaN, a statistic is unchanged (bit for bit);
    with any column it declares NaN, it is not finite: ``sums`` is exactly what it reads."""
    st = S.STATISTICS[name]
    E, u = _data()
    if st.kind == "moment":
        sums, n = S.moment_sums(E, u)[None, :], float(E.size)
    else:
        edges = equal_count_edges(E.size, 8, pop_min=30)
        o = np.argsort(u, kind="stable")
        sums, n = S.bin_feature_sums(E[o], u[o], edges), np.diff(edges).astype(float)
    want = st.finish(sums, n)
    assert np.all(np.isfinite(want))
    undeclared = [k for k in range(sums.shape[-1]) if k not in st.columns]
    blind = sums.copy()
    blind[..., undeclared] = np.nan
    np.testing.assert_array_equal(st.finish(blind, n), want)
    for k in st.columns:
        one = sums.copy()
        one[..., k] = np.nan
        with np.errstate(invalid="ignore"):
            assert not np.all(np.isfinite(st.finish(one, n))), (name, k)


def test_a_declaration_is_checked():
    """A misspelt sum, an unknown kind, a missing finish or long name is refused when
    declared; the statistics of the uncertainties only (nothing to validate) follow from
    the sums."""
    with pytest.raises(ValueError, match="not named among"):
        S.Statistic(name="x", kind="binned", long_name="x", sums=("zz",),
                    finish=S.lzms_from_bin_sums)
    with pytest.raises(ValueError, match="kind"):
        S.Statistic(name="x", kind="other", long_name="x")
    with pytest.raises(ValueError, match="needs a finish"):
        S.Statistic(name="x", kind="moment", long_name="x", sums=("z2",))
    with pytest.raises(ValueError, match="long_name"):
        S.Statistic(name="x", kind="rank", long_name="")
    assert {k for k, s in S.STATISTICS.items() if not s.tested} == {"mv", "rmv", "nll_ref"}
    assert S.STATISTICS["mse"].reads == {"E"} and S.STATISTICS["nll_ref"].reads == {"u"}


def _mean_bin_zms(S_, n):
    """Toy statistic: the mean over the bins of the per-bin ZMS."""
    return np.mean(S_[..., list(S.BIN_FEATURES).index("z2")] / n, axis=-1)


def _slow_mean_bin_zms(E_sorted, u_sorted, edges):
    z2 = (E_sorted / u_sorted) ** 2
    return np.mean([np.mean(z2[a:b]) for a, b in zip(edges[:-1], edges[1:], strict=True)])


def test_a_new_statistic_is_one_declaration(monkeypatch):
    """Declare a binned statistic (the mean per-bin ZMS) in one entry of STATISTICS: the
    bootstrap computes its estimate, the evaluator its replicates (the resample re-sorted
    by uE, cut with the sample's intervals) and its leave-one-out values (R's intrvJack
    intervals), each equal to the direct computation on the data."""
    monkeypatch.setitem(S.STATISTICS, "mbzms", S.Statistic(
        name="mbzms", kind="binned", sums=("z2",), finish=_mean_bin_zms,
        long_name="mean per-bin ZMS", reference=1.0, direction=1))
    E, u = _data(M=240)
    N, pop_min = 6, 20
    o = np.argsort(u, kind="stable")
    edges = equal_count_edges(E.size, N, pop_min=pop_min)
    want = _slow_mean_bin_zms(E[o], u[o], edges)

    res = uqx.bootstrap(uqx.from_arrays(E, u, name="toy"), stats=["mbzms", "zms"], n_boot=50,
                        seed=3, bins=N, pop_min=pop_min)
    np.testing.assert_allclose(res["estimate"].sel(set="toy", stat="mbzms"), want, rtol=1e-13)
    assert np.isfinite(res["ci_low"].sel(set="toy", stat="mbzms"))
    assert res["stat_long_name"].sel(stat="mbzms") == "mean per-bin ZMS"

    ev = SetEvaluator(E, u, [S.parse_stat("mbzms")],
                      S.BinningConfig(n_bins=N, pop_min=pop_min))
    plan = BootstrapPlan(M=E.size, n_boot=5, seed=7, key="toy")
    reps, counts = ev.replicates(plan, 0)["mbzms"], plan.counts(0)
    for r in range(counts.shape[0]):
        idx = np.repeat(o, counts[r][o])  # the resample in the order of uE
        np.testing.assert_allclose(reps[r, 0], _slow_mean_bin_zms(E[idx], u[idx], edges),
                                   rtol=1e-12)
    jk = ev.jackknife()["mbzms"]
    edges_loo = equal_count_edges(E.size - 1, N, pop_min=pop_min)
    for i in range(0, E.size, 37):
        keep = o[o != i]
        np.testing.assert_allclose(jk[i, 0], _slow_mean_bin_zms(E[keep], u[keep], edges_loo),
                                   rtol=1e-11)


def test_both_uce_conventions_are_offered_and_named():
    """UCE is ErrViewLib's unweighted mean over bins; uce_w weighs each bin by n_j / M
    (Laves et al., netcal). Equal on bins of equal size; uce keeps its numbers."""
    rng = np.random.default_rng(21)
    u = np.sort(rng.gamma(2.0, 0.5, 1000) + 0.05)
    E = u * rng.standard_normal(1000) * np.linspace(0.7, 1.5, 1000)
    equal = np.linspace(0, 1000, 11).astype(int)
    Sb = S.bin_feature_sums(E, u, equal)
    cnt = np.diff(equal).astype(float)
    np.testing.assert_allclose(S.uce_w_from_bin_sums(Sb, cnt), S.uce_from_bin_sums(Sb, cnt),
                               rtol=1e-12)
    uneven = np.array([0, 50, 100, 400, 1000])
    Sb, cnt = S.bin_feature_sums(E, u, uneven), np.diff(uneven).astype(float)
    assert S.uce_w_from_bin_sums(Sb, cnt) != pytest.approx(S.uce_from_bin_sums(Sb, cnt))
    np.testing.assert_allclose(S.uce_from_bin_sums(Sb, cnt), T.uce(E, u, uneven), rtol=1e-12)
    assert "Laves" in S.STATISTICS["uce_w"].finish.__doc__
    assert "weighted" in S.STATISTICS["uce_w"].long_name
    ds = uqx.from_arrays(E, u, name="w")
    res = uqx.validate(ds, ["uce", "uce_w"], bootstrap=50, copies=50, conditional=False,
                       compute=uqx.Compute(seed=1))
    assert np.isfinite(res["estimate"].sel(stat="uce_w").item())
