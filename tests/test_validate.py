"""The validation workflow (uqx.validate): verdicts, result structure, NetCDF, records.

Synthetic data from :mod:`uqx.dataio.synth` (methods: synthetic data), small n_boot/n_mc
to stay fast.
Decision rules checked against methods: ζ-scores (ζ, ζ_Sim with U_t = 2u, ζ_Sim2)
(D-sensitivity |θ̃_N − θ̃_T| > 2√(u_N² + u_T²)) (workflow steps).
"""

import json

import numpy as np
import pytest
import xarray as xr
from internals import simulate

import uqx
from uqx.dataio.model import InputError
from uqx.dataio.netcdf import read_netcdf, to_netcdf
from uqx.dataio.schema import split_warnings
from uqx.dataio.synth import demo_sets, nig, tig
from uqx.engine.mctest import family_verdict
from uqx.engine.null_shape import MEMBERS
from uqx.engine.statistic import STATISTICS, parse_stat
from uqx.engine.verdict import VERDICTS, interval_problem, simulated_verdict
from uqx.inference.zeta import d_sensitive, zeta_score, zeta_sim2
from uqx.text.tables import paper_table_a, paper_table_iv, result_records, result_table
from uqx.workflow.validation import DEFAULT_STATS, TAILEDNESS_VARS, validate

M = 1500
STATS = ["zms", "rce", "var_z", "mean_z", "nll", "cc", "ence", "zmse", "zve"]
PREDEFINED = {"zms": 1.0, "rce": 0.0, "var_z": 1.0, "mean_z": 0.0}
KW = dict(bootstrap=300, copies=500)


def _synthetic():
    """cal: NIG ν = 20 (calibrated, light tails) with a feature X; over: same errors, u × 0.7
    (overconfident); tig: TIG ν_D = 3 (calibrated but heavy-tailed errors)."""
    E, u = nig(M, 20.0, seed=1)
    Et, ut = tig(M, 3.0, seed=1)
    X = np.random.default_rng(0).uniform(0, 1, M)
    return uqx.stack([
        uqx.from_arrays(E, u, X=X, name="cal"),
        uqx.from_arrays(E, 0.7 * u, name="over"),
        uqx.from_arrays(Et, ut, name="tig"),
    ])


@pytest.fixture(scope="module")
def synth():
    return _synthetic()


@pytest.fixture(scope="module")
def res(synth):
    return validate(synth, STATS, compute=uqx.Compute(seed=1), **KW)


# ---------------------------------------------------------------- verdicts


def test_calibrated_sets_not_rejected_beyond_noise(res):
    # a calibrated set fails |ζ| ≤ 1 with probability ~5 % per statistic (the test's
    # size), so no verdict is asserted; |ζ| ≈ |z|/1.96 beyond 3 (|z| > 5.9) has
    # probability < 1e-8 under the null
    for s in ("cal", "tig"):
        for st in [*PREDEFINED, "nll"]:
            r = res.sel(set=s, stat=st)
            assert abs(float(r["zeta"])) < 3, (s, st, float(r["zeta"]))
            assert r["verdict"].item() in ("valid", "invalid", "inconclusive", "diagnostic")


def test_overconfident_set_invalid(res):
    z = res.sel(set="over")
    # u × 0.7 → ZMS ≈ 1/0.49: far above 1, ζ > 1 (estimate above the reference)
    assert float(z["estimate"].sel(stat="zms")) == pytest.approx(
        float(res["estimate"].sel(set="cal", stat="zms")) / 0.49, rel=1e-12)
    assert float(z["zeta"].sel(stat="zms")) > 1
    assert z["verdict"].sel(stat="zms").item() == "invalid"
    assert float(z["valid"].sel(stat="zms")) == 0.0
    # RCE = (RMV - RMSE)/RMV < 0: ζ < -1
    assert float(z["zeta"].sel(stat="rce")) < -1
    assert z["verdict"].sel(stat="rce").item() == "diagnostic"  # decides nothing
    assert np.all(z["p_value"].sel(stat="rce").values < 0.05)
    assert float(z["zeta"].sel(stat="var_z")) > 1
    assert float(z["zeta"].sel(stat="nll")) > 1
    # mean Z is unchanged in sign, still compatible with 0
    assert z["verdict"].sel(stat="mean_z").item() == "valid"


def test_predefined_references_and_kinds(res, synth):
    for st, ref in PREDEFINED.items():
        np.testing.assert_array_equal(res["reference"].sel(stat=st).values, ref)
        np.testing.assert_array_equal(res["reference_se"].sel(stat=st).values, 0.0)
        assert set(res["reference_kind"].sel(stat=st).values) == {"predefined"}
    # NLL is compared with NLL_ref of the same data (001/000)
    nll_ref = uqx.compute(synth, ["nll_ref"]).sel(stat="nll_ref").values
    np.testing.assert_allclose(res["reference"].sel(stat="nll").values, nll_ref, rtol=1e-12)
    assert set(res["reference_kind"].sel(stat="nll").values) == {"predefined (NLL_ref)"}
    # estimates are the deterministic statistics
    est = uqx.compute(synth, STATS)
    np.testing.assert_allclose(res["estimate"].values, est.values, rtol=1e-12)


def test_zeta_recomputed_from_result(res):
    pre = [s for s in STATS if s in PREDEFINED or s == "nll"]
    r = res.sel(stat=pre)
    z = zeta_score(r["estimate"], r["reference"], r["ci_low"], r["ci_high"])
    np.testing.assert_allclose(r["zeta"].values, z, rtol=1e-12)


def zeta_sim_rule(z, z2):
    """The ζ_Sim rule (methods: ζ-scores), written out: ``valid`` when every |ζ_Sim| ≤ 1,
    ``invalid`` when every |ζ_Sim| > 1 on one side, else ``inconclusive``; then the null
    test must agree: ``invalid`` stands only if every |ζ_Sim2| > 1 on the side of ζ_Sim,
    ``valid`` falls to ``inconclusive`` if every |ζ_Sim2| > 1 on one side (NaN ζ_Sim2: no
    check)."""
    z, z2 = np.asarray(z, dtype=float), np.asarray(z2, dtype=float)
    if not np.isfinite(z).all():
        return "inconclusive"
    if np.all(np.abs(z) <= 1):
        verdict = "valid"
    elif np.all(np.abs(z) > 1) and (np.all(z > 0) or np.all(z < 0)):
        verdict = "invalid"
    else:
        return "inconclusive"
    if not np.isfinite(z2).all():
        return verdict
    outside = np.all(np.abs(z2) > 1)
    if verdict == "invalid" and not (outside and np.all(np.sign(z2) == np.sign(z[0]))):
        return "inconclusive"
    if verdict == "valid" and outside and (np.all(z2 > 0) or np.all(z2 < 0)):
        return "inconclusive"
    return verdict


def family_rule(p, n):
    """The rule of family_verdict's docstring, written out (α = 0.05): every member rejects
    (p < α) -> invalid; no member rejects beyond 2 Monte-Carlo sd of α,
    2 √(α(1 − α)/n) -> valid; else inconclusive."""
    band = 2 * np.sqrt(0.05 * 0.95 / n)
    return ("invalid" if np.all(p < 0.05) else
            "valid" if np.all(p >= 0.05 - band) else "inconclusive")


# (ζ_Sim under N and T, ζ_Sim2 under N and T) -> verdict, each row checkable by hand
ZETA_SIM_TABLE = [
    ((0.3, -0.8), (0.1, 0.5), "valid"),  # both |ζ_Sim| ≤ 1
    ((1.0, -1.0), (0.0, 0.0), "valid"),  # |ζ| = 1 is inside
    ((1.5, 2.5), (1.2, 3.0), "invalid"),  # both > 1 above, the null test agrees
    ((-1.5, -2.5), (-1.2, -3.0), "invalid"),  # the same below
    ((1.5, 2.5), (np.nan, np.nan), "invalid"),  # no ζ_Sim2: ζ_Sim decides
    ((1.5, -2.5), (1.2, -3.0), "inconclusive"),  # rejected from opposite sides
    ((0.5, 1.5), (0.2, 0.2), "inconclusive"),  # accepted under N, rejected under T
    ((1.5, 2.5), (0.4, 3.0), "inconclusive"),  # inside the simulated range under N
    ((1.5, 2.5), (-1.2, -3.0), "inconclusive"),  # the null test rejects on the other side
    ((0.3, 0.8), (1.5, 2.0), "inconclusive"),  # outside the simulated range under every D
    ((0.3, 0.8), (1.5, -2.0), "valid"),  # outside on opposite sides: no common side
    ((0.3, 0.8), (1.5, 0.9), "valid"),  # inside under T
    ((np.nan, 0.5), (0.1, 0.1), "inconclusive"),  # a ζ_Sim is not finite
]

# p-values under the four null members, copies n -> verdict. With n = 500 the band is
# 2 √(0.05 · 0.95 / 500) = 0.0195: p ≥ 0.0305 is no rejection; with n = 10⁵ it is 0.0014.
FAMILY_TABLE = [
    ((0.01, 0.02, 0.001, 0.04), 500, "invalid"),  # every p < 0.05
    ((0.3, 0.5, 0.06, 0.9), 500, "valid"),  # no p < 0.05
    ((0.045, 0.3, 0.3, 0.3), 500, "valid"),  # 0.045 ≥ 0.0305: within the noise of 0.05
    ((0.02, 0.3, 0.3, 0.3), 500, "inconclusive"),  # 0.02 < 0.0305: one member rejects
    ((0.045, 0.3, 0.3, 0.3), 100_000, "inconclusive"),  # 0.045 < 0.0486
    ((0.049, 0.049, 0.049, 0.0499), 500, "invalid"),  # all below 0.05, however close
]


@pytest.mark.parametrize("z,z2,verdict", ZETA_SIM_TABLE)
def test_zeta_sim_rule_table(z, z2, verdict):
    assert zeta_sim_rule(z, z2) == verdict  # the oracle of the workflow tests below
    assert simulated_verdict(z, z2, ["N", "T"])[0] == verdict  # the package


@pytest.mark.parametrize("p,n,verdict", FAMILY_TABLE)
def test_family_rule_table(p, n, verdict):
    assert family_rule(np.array(p), n) == verdict
    assert family_verdict(p, MEMBERS, n_copies=n)[0] == verdict


def test_verdicts_follow_the_rules(res):
    """Every verdict recomputed from the stored quantities by the documented rules."""
    assert res.sizes["dist"] == 2  # ζ_Sim under N and T, as in ZETA_SIM_TABLE
    members = [str(m) for m in res["member"].values]
    assert members == list(MEMBERS)
    for s in res["set"].values:
        for st in res["stat"].values:
            r = res.sel(set=s, stat=st)
            kind, v = str(r["reference_kind"].item()), str(r["verdict"].item())
            old = str(r["zeta_verdict"].item())
            problem = interval_problem(float(r["estimate"]), float(r["ci_low"]),
                                       float(r["ci_high"]))
            # the papers' zeta rule, kept for comparison
            tested = STATISTICS[parse_stat(str(st)).base].tested
            if not tested or kind == "":
                expected = "not tested"
            elif problem:
                expected = "inconclusive"
            elif kind.startswith("predefined"):
                expected = "valid" if abs(float(r["zeta"])) <= 1 else "invalid"
            else:
                expected = zeta_sim_rule(r["zeta_sim"].values, r["zeta_sim2"].values)
            assert old == expected, (s, st)
            # the decision: each statistic inside its question, under every member
            if not tested:
                assert v == "not tested"
                continue
            expected = question_rule(res, s, st)
            why = str(r["verdict_reason"].item())
            if expected == "invalid" and v == "inconclusive" and "tails" in why:
                continue  # the tails step (tests/test_verdict_claims.py)
            assert v == expected, (s, st, v, expected, why)
            if v == "inconclusive":
                assert "rejected under" in why or "resolution" in why
            valid = float(r["valid"])
            assert (valid == 1.0) == (v == "valid") and (valid == 0.0) == (v == "invalid")
            if v not in ("inconclusive", "diagnostic"):
                assert why == ""


def question_rule(res, s, st):
    """The documented rule, recomputed from the stored p-values and levels.

    A statistic that tests no node (no adjusted p-value) is a ``diagnostic``. A node's
    statistic is rejected under a member when its closed-testing adjusted p-value is at
    most the set's level; ``invalid`` when every member that takes part rejects,
    ``valid`` when none does, else ``inconclusive``.
    """
    from uqx.engine.questions import question_of

    spec = parse_stat(st)
    q = res.sel(set=s, question=question_of(spec.family, spec.cond))
    r = res.sel(set=s, stat=st)
    if not np.isfinite(r["p_adjusted"].values).any():
        return "diagnostic"
    use = (r["member_plausible_rank"] if spec.base == "cc" and "member_plausible_rank" in r
           else r["member_plausible"]).values.astype(bool)
    level = q["question_level"].values
    rej = r["p_adjusted"].values <= level
    rej = rej[use & np.isfinite(r["p_adjusted"].values)]
    if rej.all():
        return "invalid"
    return "valid" if not rej.any() else "inconclusive"


def test_d_sensitive_statistics(res):
    kind = res["reference_kind"].values
    simulated = kind == "simulated"
    sens = res["d_sensitive"].values
    assert sens.any()  # CC/ENCE/ZMSE/ZVE depend on D for these uncertainties (000)
    # the rule of methods: simulated references, recomputed from the stored references
    ref, se = res["sim_reference"].values, res["sim_reference_se"].values
    rule = d_sensitive(ref[..., 0], se[..., 0], ref[..., 1], se[..., 1])
    np.testing.assert_array_equal(sens, rule & simulated)
    # the N reference is reported as "reference", zeta is zeta_Sim with D = N
    np.testing.assert_allclose(res["reference"].values[simulated], ref[..., 0][simulated])
    np.testing.assert_allclose(res["zeta"].values[simulated],
                               res["zeta_sim"].values[..., 0][simulated])
    # D-sensitivity no longer blocks a verdict on which both references agree: the
    # overconfident set is rejected by both for every binned statistic
    assert res["question_verdict"].sel(set="over", question="consistency").item() == "invalid"
    for st in ("ence", "zmse", "zve"):
        z = res["zeta_sim"].sel(set="over", stat=st).values
        assert np.all(z > 1), st
        # the node's statistic (the first of its fallbacks asked) or a diagnostic
        assert res["verdict"].sel(set="over", stat=st).item() in ("invalid", "diagnostic")
        assert np.all(res["p_value"].sel(set="over", stat=st).values < 0.05)


def test_simulated_references_used_when_d_insensitive(synth):
    # ν = 1e6: t_s(ν) ≈ N, so the two references agree within MC noise.
    r = validate(synth.isel(set=[0]), ["cc", "ence", "zmse", "zve"], bootstrap=300,
                 copies=uqx.Copies(n_mc=500, nu=1e6), conditional=False,
                 compute=uqx.Compute(seed=1))
    assert list(r["dist"].values) == ["N", "T1e+06"]
    assert set(r["reference_kind"].values.ravel()) == {"simulated"}
    zs = zeta_score(r["estimate"], r["sim_reference"].sel(dist="N"), r["ci_low"], r["ci_high"],
                    target_u=2 * r["sim_reference_se"].sel(dist="N"))
    np.testing.assert_allclose(r["zeta"].values, zs, rtol=1e-12)
    np.testing.assert_allclose(r["zeta_sim"].sel(dist="N").values, zs, rtol=1e-12)
    for j in range(r.sizes["stat"]):
        z = r["zeta_sim"].values[0, j]
        if not interval_problem(*(float(r[k].values[0, j]) for k in ("estimate", "ci_low",
                                                                      "ci_high"))):
            z2 = r["zeta_sim2"].values[0, j]
            assert r["zeta_verdict"].values[0, j] == zeta_sim_rule(z, z2)
    z2 = zeta_sim2(r["estimate"].values[..., None], r["sim_reference"].values,
                   r["sim2_low"].values, r["sim2_high"].values)
    np.testing.assert_allclose(r["zeta_sim2"].values, z2, rtol=1e-12)


def test_simulate_all_fills_predefined_statistics(synth):
    r = validate(synth.isel(set=[0, 1]), ["zms", "cc"], bootstrap=300,
                 copies=uqx.Copies(n_mc=500, simulate_all=True), conditional=False,
                 compute=uqx.Compute(seed=2))
    zms = r.sel(stat="zms")
    assert np.isfinite(zms["sim_reference"].values).all()
    assert set(zms["reference_kind"].values) == {"predefined"}
    np.testing.assert_array_equal(zms["reference"].values, 1.0)
    # the simulated ZMS reference of calibrated errors is 1 within a few MC standard errors
    assert np.all(np.abs(zms["sim_reference"].values - 1) < 5 * zms["sim_reference_se"].values)
    off = validate(synth.isel(set=[0]), ["zms"], conditional=False, compute=uqx.Compute(seed=2),
                   **KW)
    assert np.isnan(off["sim_reference"].values).all()


# ---------------------------------------------------------------- tailedness warnings


def test_tailedness_warnings(res):
    # over and tig have no X (only cal has one): their note of untested adaptivity aside
    sw = {s: [w for w in split_warnings(res["set_warnings"].sel(set=s).item())
              if not w.startswith("adaptivity (X) not tested: this set has no X")]
          for s in res["set"].values}
    assert sw["cal"] == [] and sw["over"] == []
    assert len(sw["tig"]) == 1 and sw["tig"][0].startswith("tailedness above the safety")
    for st in ("zms", "rce", "ence", "zmse", "zve", "nll"):
        w = split_warnings(res["warnings"].sel(set="tig", stat=st).item())
        assert any(m.startswith("heavy tails") for m in w), st
        for s in ("cal", "over"):
            w = split_warnings(res["warnings"].sel(set=s, stat=st).item())
            assert not any("heavy tails" in m for m in w), (s, st)
    # CC and mean Z do not depend on the tailedness metrics
    for st in ("cc", "mean_z"):
        w = split_warnings(res["warnings"].sel(set="tig", stat=st).item())
        assert not any("heavy tails" in m for m in w)
    # the tailedness metrics are stored with their safety limits
    for k in TAILEDNESS_VARS:
        assert res[k].dims == ("set",)
    assert res["kappa_cs_e2"].attrs["safety_limit"] == 5.0
    assert float(res["kappa_cs_e2"].sel(set="tig")) > 5.0
    assert float(res["kappa_cs_e2"].sel(set="cal")) < 5.0


def test_dropped_rows_warning():
    E, u = nig(400, 20.0, seed=3)
    ds = uqx.from_arrays(np.append(E, np.nan), np.append(u, 1.0), drop_nonfinite=True, name="d")
    r = validate(ds, ["zms"], bootstrap=100, copies=10, conditional=False,
                 compute=uqx.Compute(seed=1))
    assert "1 row(s) dropped by filters" in split_warnings(r["set_warnings"].item())


# ---------------------------------------------------------------- structure


def test_result_structure(res):
    assert set(res.dims) == {"set", "stat", "dist", "member", "cond", "bin", "xstat", "sweep",
                             "question", "decile", "decile_of", "half"}
    assert list(res["set"].values) == ["cal", "over", "tig"]
    assert list(res["stat"].values) == STATS
    assert list(res["dist"].values) == ["N", "T6"]
    assert list(res["cond"].values) == ["uE", "X"]
    np.testing.assert_array_equal(res["M"].values, [M, M, M])
    set_stat = ["estimate", "bias", "se", "ci_low", "ci_high", "reference", "reference_se",
                "zeta", "valid", "verdict", "verdict_reason", "borderline", "reference_kind",
                "d_sensitive", "warnings"]
    for v in set_stat:
        assert res[v].dims == ("set", "stat"), v
    for v in ("sim_reference", "sim_reference_se", "sim2_low", "sim2_high", "zeta_sim",
              "zeta_sim2"):
        assert res[v].dims == ("set", "stat", "dist"), v
    assert res["p_value"].dims == ("set", "stat", "member")
    assert res["question_p_value"].dims == ("set", "question", "member")
    assert res["extrap_p_value"].dims == ("set", "cond", "xstat", "member")
    assert res["set_warnings"].dims == ("set",)
    for v in ("lzisd", "lzisd_ci_low", "lzisd_ci_high", "bin_n", "bin_x_mid"):
        assert res[v].dims == ("set", "cond", "bin"), v
    for v in ("fval", "fval_ci_low", "fval_ci_high", "conditional_valid"):
        assert res[v].dims == ("set", "cond"), v
    for v in ("verdict", "reference_kind", "warnings", "set_warnings"):
        assert res[v].dtype.kind == "U", v
    assert set(np.unique(res["verdict"])) <= set(VERDICTS)
    assert set(np.unique(res["reference_kind"])) <= {
        "predefined", "predefined (NLL_ref)", "simulated", ""}
    for v in ("extrap_intercept", "extrap_intercept_se", "extrap_verdict"):
        assert res[v].dims == ("set", "cond", "xstat"), v
    assert res["extrap_null_low"].dims == ("set", "cond", "xstat", "dist")
    assert res["question_verdict"].dims == ("set", "question")
    assert res["zms_decile"].dims == ("set", "decile_of", "decile")
    assert res["n_bins_used"].dims == ("set",)
    for a in ("seed", "n_boot", "n_mc", "level", "n_bins", "binning_scheme", "pop_min", "nu",
              "uqx_version", "d_sensitivity_rule"):
        assert a in res.attrs, a
    assert res.attrs["seed"] == 1 and res.attrs["n_boot"] == 300 and res.attrs["n_mc"] == 500
    # CI ordering and the simulated quantities
    assert np.all(res["ci_low"].values <= res["ci_high"].values)
    sim = res["sim_reference"].sel(stat=["cc", "ence", "zmse", "zve"])
    assert np.isfinite(sim.values).all()
    assert np.all(res["sim2_low"].sel(stat=sim["stat"]) < sim)
    assert np.all(sim < res["sim2_high"].sel(stat=sim["stat"]))


def test_conditional_analysis(res):
    # "over" and "tig" have no X: NaN there; fval in [0, 1] with its Wilson-cc interval
    assert np.isnan(res["fval"].sel(set="over", cond="X"))
    assert np.isfinite(res["fval"].sel(cond="uE").values).all()
    f, lo, hi = (res[k].sel(cond="uE").values for k in ("fval", "fval_ci_low", "fval_ci_high"))
    assert np.all((lo <= f) & (f <= hi) & (lo >= 0) & (hi <= 1))
    # the overconfident set fails consistency, the calibrated one passes
    assert float(res["conditional_valid"].sel(set="over", cond="uE")) == 0.0
    assert float(res["conditional_valid"].sel(set="cal", cond="uE")) == 1.0
    n = res["bin_n"].sel(set="cal", cond="uE")
    assert float(n.sum()) == M


def test_tables(res):
    t = result_table(res)
    assert list(t.columns) == ["estimate", "bias", "ci_low", "ci_high", "reference", "zeta",
                               "zeta_T6", "p_min", "p_max", "band_low", "band_high",
                               "resolution", "verdict"]
    assert len(t) == 3 * len(STATS)
    # a binned statistic prints its calibrated band, never a bootstrap interval
    binned = [parse_stat(st).family == "binned" for _, st in t.index]
    assert t.loc[binned, ["ci_low", "ci_high"]].isna().all().all()
    assert t.loc[binned, "band_low"].notna().all()
    assert not t.loc[[not b for b in binned], "band_low"].notna().any()
    iv = paper_table_iv(res)
    assert [c[0] for c in iv.columns] == ["RCE"] * 5 + ["ZMS"] * 5
    assert list(iv.index) == ["cal", "over", "tig"]
    a = paper_table_a(res, "ence")
    assert {c[0] for c in a.columns} == {"BS", "N", "T6"}
    assert np.isnan(a[("BS", "zeta_BS")]).all()
    np.testing.assert_allclose(a[("N", "ref")], res["sim_reference"].sel(stat="ence", dist="N"),
                               atol=5e-6)


# ---------------------------------------------------------------- NetCDF round trip


def test_netcdf_round_trip_preserves_everything(res, tmp_path):
    # make sure at least one warning string holds a newline (several warnings)
    assert any("\n" in w for w in res["warnings"].values.ravel())
    path = to_netcdf(res, tmp_path / "res.nc", parameters={"stats": STATS}, seed=1)
    back = read_netcdf(path)
    assert set(back.variables) == set(res.variables)
    for k in res.variables:
        xr.testing.assert_identical(back[k].variable, res[k].variable)
        assert back[k].dtype == res[k].dtype, k
    assert list(back["verdict"].sel(set="tig").values) == list(res["verdict"].sel(set="tig").values)
    for k, v in res.attrs.items():
        if k == "created_at":  # rewritten by to_netcdf (time of writing)
            continue
        assert back.attrs[k] == v, k
    assert json.loads(back.attrs["parameters"]) == {"stats": STATS}
    assert back.attrs["Conventions"] == "CF-1.8"
    # the round-tripped result renders the same records
    assert result_records(back) == result_records(res)


# ---------------------------------------------------------------- records


def test_result_records_json(res):
    recs = result_records(res)
    text = json.dumps(recs, allow_nan=False)  # NaN must have become null
    back = json.loads(text)
    assert [r["dataset"] for r in back] == ["cal", "over", "tig"]
    for r in back:
        assert {"dataset", "M", "stats", "warnings"} <= set(r)
        assert set(r) <= {"dataset", "M", "summary", "questions", "stats", "warnings",
                          "conditional", "n_bins_used", "settings", "scale_factor"}
        assert r["M"] == M
        assert list(r["stats"]) == STATS
        for st, d in r["stats"].items():
            base = {"estimate", "bias", "ci_low", "ci_high", "reference", "reference_se",
                    "zeta", "valid", "verdict", "reference_kind", "borderline"}
            assert base <= set(d), st
            assert ("verdict_reason" in d) == (d["verdict"] == "inconclusive"), st
            assert ("zeta_sim" in d) == (d["reference_kind"] == "simulated"), st
            if "zeta_sim" in d:
                assert set(d["zeta_sim"]) == {"N", "T6"}
            assert d["valid"] in (True, False, None)
            assert isinstance(d["reference_kind"], str)
        assert isinstance(r["warnings"], list)
        assert all(isinstance(w, str) and "\n" not in w for w in r["warnings"])
    over = back[1]["stats"]["zms"]
    assert over["valid"] is False and over["zeta"] > 1 and over["reference"] == 1.0
    cc = back[0]["stats"]["cc"]
    assert cc["reference_kind"] == "simulated" and cc["verdict"] in VERDICTS
    tigw = back[2]["warnings"]
    assert any(w.startswith("tailedness above") for w in tigw)
    # one line per cause: the statistics sharing it are grouped on that line
    heavy = [w for w in tigw if "heavy tails" in w]
    assert len(heavy) >= 1 and all(w.split(":")[0].isupper() for w in heavy)
    assert set(back[0]["conditional"]) == {"uE", "X"}
    cu = back[0]["conditional"]["uE"]
    assert {"fval", "fval_ci_low", "fval_ci_high", "n_bins", "extrapolation", "verdict"} <= set(cu)
    for k in ("ence", "zmse", "zve"):
        assert {"intercept", "verdict", "intercept_se", "null_interval"} <= set(
            cu["extrapolation"][k])
        assert cu["extrapolation"][k]["verdict"] in VERDICTS


def test_records_without_conditional(synth):
    r = validate(synth.isel(set=[0]), ["zms"], bootstrap=100, copies=10, conditional=False,
                 compute=uqx.Compute(seed=1))
    (rec,) = result_records(r)
    assert set(rec) == {"dataset", "M", "summary", "questions", "stats", "warnings", "settings",
                        "scale_factor"}
    assert rec["scale_factor"]["rescaled_consistency"] is None  # no conditional routes
    assert rec["settings"] == {"seed": 1, "n_boot": 100, "n_mc": 10, "ties": "content"}
    # the questions are answered without the papers' conditional diagnostics
    assert "question" in r.dims and "lzisd" not in r and "extrap_intercept" not in r


# ---------------------------------------------------------------- reproducibility, errors


def _drop_time(r):
    r = r.copy()
    r.attrs.pop("created_at")
    return r


def test_same_seed_identical_results(synth):
    kw = dict(bootstrap=150, copies=60, conditional=uqx.Conditional(cond_n_boot=100),
              compute=uqx.Compute(seed=7))
    sub = synth.isel(set=[0, 2])
    a = validate(sub, ["zms", "rce", "cc", "ence"], **kw)
    b = validate(sub, ["zms", "rce", "cc", "ence"], **kw)
    xr.testing.assert_identical(_drop_time(a), _drop_time(b))
    c = validate(sub, ["zms", "rce", "cc", "ence"], **{**kw, "compute": uqx.Compute(seed=8)})
    assert not np.array_equal(a["ci_low"].values, c["ci_low"].values)
    np.testing.assert_array_equal(a["estimate"].values, c["estimate"].values)
    sync = validate(sub, ["zms", "rce", "cc", "ence"],
                    compute=uqx.Compute(seed=7, scheduler="synchronous"),
                    **{k: v for k, v in kw.items() if k != "compute"})
    xr.testing.assert_identical(_drop_time(a), _drop_time(sync))


def test_drawn_seed_is_recorded(synth):
    r = validate(synth.isel(set=[0]), ["zms"], bootstrap=50, copies=10, conditional=False)
    again = validate(synth.isel(set=[0]), ["zms"], bootstrap=50, copies=10, conditional=False,
                     compute=uqx.Compute(seed=r.attrs["seed"]))
    np.testing.assert_array_equal(r["ci_low"].values, again["ci_low"].values)


@pytest.mark.parametrize(
    "stats, match",
    [
        (["zms", "foo"], "unknown statistic 'foo'"),
        (["ZMS", "zms"], "duplicate statistics"),
        (["lzisd"], "per-bin statistics"),
        (["ence_X"], "needs variable 'X'"),
    ],
)
def test_bad_statistics_raise_input_error(synth, stats, match):
    with pytest.raises(InputError, match=match):
        validate(synth.isel(set=[1]), stats, bootstrap=50, copies=10, conditional=False,
                 compute=uqx.Compute(seed=1))


def test_bad_numbers_raise_input_error(synth):
    one = synth.isel(set=[0])
    with pytest.raises(InputError, match="n_boot"):
        validate(one, ["zms"], bootstrap=1, copies=10, compute=uqx.Compute(seed=1))
    with pytest.raises(InputError, match="n_mc"):
        validate(one, ["cc"], bootstrap=50, copies=1, conditional=False,
                 compute=uqx.Compute(seed=1))
    with pytest.raises(InputError, match="nu > 2"):
        validate(one, ["cc"], bootstrap=50, copies=uqx.Copies(n_mc=10, nu=2.0),
                 conditional=False, compute=uqx.Compute(seed=1))


def test_default_stats_and_demo_sets():
    assert DEFAULT_STATS == ("zms", "rce", "mean_z", "cc", "ence", "zmse", "zmse_max", "zms_scan",
                             "zve")
    ds = demo_sets(M=1000, seed=3)
    assert list(ds["set"].values) == ["calibrated", "overconfident", "underconfident",
                                      "inconsistent", "nonadaptive", "heavy_tailed"]
    r = validate(ds, ["zms", "rce"], bootstrap=300, copies=10,
                 conditional=uqx.Conditional(cond_n_boot=200), compute=uqx.Compute(seed=1))
    zms = r["zeta"].sel(stat="zms")
    assert float(zms.sel(set="overconfident")) > 1
    assert float(zms.sel(set="underconfident")) < -1
    # the non-adaptive set fails adaptivity on X (E grows with X, u does not)
    assert float(r["conditional_valid"].sel(set="nonadaptive", cond="X")) == 0.0
    # the inconsistent set (u shuffled) fails consistency on uE
    assert float(r["conditional_valid"].sel(set="inconsistent", cond="uE")) == 0.0
    assert "tailedness above" in r["set_warnings"].sel(set="heavy_tailed").item()


def test_fitted_member_reads_nu_from_z_scaled_in_bins_unless_streamed():
    from uqx.engine.null_shape import kappa_cs_z2_local, nu_on_grid, t_nu_from_tails

    rng = np.random.default_rng(8)
    u = np.sqrt(1 / rng.gamma(3, 1 / 3, 1200))
    E = u * rng.standard_t(5, 1200) / np.sqrt(5 / 3)
    ds = uqx.from_arrays(E, np.sqrt(u) * np.sqrt(np.mean(u * u) / np.mean(u)), name="g")
    kw = dict(bootstrap=200, copies=100, compute=uqx.Compute(seed=2))
    loaded = validate(ds, ["zms", "ence"], **kw)
    streamed = validate(ds, ["zms", "rce"], conditional=False, **kw)
    rep = ds["uE"].values
    want_local = nu_on_grid(t_nu_from_tails(kappa_cs_z2_local(E, rep)))
    want_global = nu_on_grid(t_nu_from_tails(streamed["kappa_cs_z2"].values[0]))
    assert loaded["nu_fit"].values[0] == want_local
    assert streamed["nu_fit"].values[0] == want_global
    assert want_local > want_global  # the inconsistency no longer passes for heavy tails


def test_two_sided_statistics_fit_member_sits_at_the_heavy_end_of_nu():
    # a t_s(4) set of 500 that missed its rare extremes: <Z^2> = 0.74 and tails that
    # look like t_s(4) only; at nu_hat every member rejected ZMS
    from uqx.engine.binning import content_order
    from uqx.engine.null_shape import kappa_cs_z2_local, nu_heavy_bound, nu_on_grid
    from uqx.sweeps.error_rates import synthetic_set

    E, u, _ = synthetic_set("ig3_t4", "calibrated", 500, seed=0, index=59)
    o = content_order(u, E)  # the rows as validate orders them: copies keyed by them
    E, u = E[o], u[o]
    ds = uqx.from_arrays(E, u, name="t4")
    r = validate(ds, ["zms", "ence"], bootstrap=400, copies=500, conditional=False,
                 compute=uqx.Compute(seed=0))
    nu_two = float(r["nu_fit_two_sided"].values[0])
    assert nu_two == float(nu_on_grid(nu_heavy_bound(kappa_cs_z2_local(E, u), 500)))
    assert nu_two < float(r["nu_fit"].values[0])
    p = r["p_value"].sel(stat="zms").values[0]
    labels = list(r["member"].values)
    assert p[labels.index("fit")] >= 0.05 > max(p[labels.index(m)] for m in ("N", "T6", "data"))
    assert str(r["verdict"].sel(stat="zms").values[0]) == "inconclusive"
    assert "not under fit" in str(r["verdict_reason"].sel(stat="zms").values[0])
    # the one-sided statistics keep nu_hat, ZMS gets nu_two: their p-values under the
    # fitted member are those of copies simulated at these nu (in uE order, prepared)
    from uqx.engine.mctest import mc_pvalue
    from uqx.inference.reference import prepare_sets

    for stat, nu, d in (("ence", float(r["nu_fit"].values[0]), 1), ("zms", nu_two, 0)):
        sim = simulate(ds, [stat], dist="t", nu=[nu], label="fit", n_mc=500, seed=0,
                       keep_draws=True, prepared=prepare_sets(ds, [stat]))
        want = mc_pvalue(float(r["estimate"].sel(stat=stat).values[0]),
                         sim["draws"].values[0, 0], d)
        assert r["p_value"].sel(stat=stat).values[0][labels.index("fit")] == want


def test_fitted_member_drawn_once_when_every_test_is_two_sided(monkeypatch):
    import uqx.workflow.references as refs

    calls = []
    real = refs.draw_checked
    monkeypatch.setattr(refs, "draw_checked",
                        lambda ds, specs, member, **kw: calls.append(
                            (tuple(s.name for s in specs), member.nu))
                        or real(ds, specs, member, **kw))
    rng = np.random.default_rng(4)
    u = np.sqrt(1 / rng.gamma(3, 1 / 3, 600))
    ds = uqx.from_arrays(u * rng.standard_t(5, 600) / np.sqrt(5 / 3), u, name="t5")
    kw = dict(bootstrap=200, copies=200, compute=uqx.Compute(seed=1))
    mixed = validate(ds, ["zms", "ence"], conditional=False, **kw)
    # N, T6, fit at nu_hat (joint), data (within the bins of uE); fit again for ZMS at
    # the heavy end, and the data's z-scores of the whole set for ZMS
    assert len(calls) == 6
    assert calls[-2][0] == ("zms",) and calls[-1][0] == ("zms",)
    assert calls[-2][1][0] == mixed["nu_fit_two_sided"].values[0]
    calls.clear()
    moment = validate(ds, ["zms", "rce"], conditional=False, **kw)  # streamed route
    assert len(calls) == 4
    nus = [c[1] for c in calls if np.ndim(c[1])]
    assert len(nus) == 1 and nus[0][0] == moment["nu_fit_two_sided"].values[0]


def test_conditional_table_says_when_no_route_could_be_tested():
    from uqx.text.tables import conditional_table

    rng = np.random.default_rng(3)
    u = np.sqrt(1 / rng.gamma(3, 1 / 3, 500))
    ds = uqx.from_arrays(u * rng.standard_normal(500), u, X=rng.uniform(size=500), name="s")
    # M = 500: no X route
    r = validate(ds, ["zms", "ence"], bootstrap=200, copies=100, compute=uqx.Compute(seed=1))
    t = conditional_table(r)
    head = t.loc[("s", "adaptivity (X)", "headline"), "interval"]
    assert head == "no test of the question could be run"
    assert t.loc[("s", "consistency (uE)", "headline"), "interval"].startswith("min-p of ENCE")
