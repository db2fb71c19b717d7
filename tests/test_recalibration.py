"""The scale factor sqrt(ZMS) and the consistency of the rescaled uE (uqx.workflow.recalibration):
one number fixes uncertainties wrong by a factor, and is said not to fix uncertainties wrong
in shape."""

import json

import numpy as np
import pytest

import uqx
from uqx.text.console import format_validation
from uqx.text.tables import result_records, scale_factor_text
from uqx.workflow.recalibration import RESCALED_VARS

M = 1500


def _u(rng):
    return np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))


@pytest.fixture(scope="module")
def result():
    rng = np.random.default_rng(2026)
    u = _u(rng)
    eps = rng.standard_normal((3, M))
    shape = u * np.sqrt(u / np.mean(u ** 2) * np.mean(u))  # E[Z^2 | u] grows with u
    sets = [uqx.from_arrays(1.3 * u * eps[0], u, name="scale"),
            uqx.from_arrays(1.15 * shape * eps[1], u, name="shape"),
            uqx.from_arrays(u * eps[2], u, name="calibrated")]
    res = uqx.validate(uqx.stack(sets), bootstrap=300, copies=300, compute=uqx.Compute(seed=7))
    return res, sets


def test_the_factor_is_sqrt_zms_with_the_interval_its_test_keeps(result):
    """f = sqrt(ZMS); the interval inverts the verdict's test of ZMS: f is kept where some
    member's copies hold ZMS/f^2 between their 2.5 and 97.5 % quantiles (slow twin: the
    quantiles of each member's copies, recomputed here)."""
    res, sets = result
    for i, sd in enumerate(sets):
        f = float(res["scale_factor"].values[i])
        np.testing.assert_allclose(f, np.sqrt(np.mean((sd.E / sd.uE) ** 2)), rtol=1e-12)
    lo, hi = res["scale_factor_low"].values[0], res["scale_factor_high"].values[0]
    assert lo < 1.3 < hi  # the factor the errors were drawn with
    # the calibrated set keeps 1, the two others do not (ZMS invalid under every member)
    assert res["scale_factor_low"].values[2] < 1 < res["scale_factor_high"].values[2]
    assert not (res["scale_factor_low"].values[1] < 1 < res["scale_factor_high"].values[1])


def test_the_factor_interval_is_the_union_of_the_members_acceptance():
    """Slow twin of scale_factor_interval on hand-made copies: per member, f with ZMS/f^2
    between the member's 2.5 and 97.5 % quantiles; the union over the members that take
    part; the fitted member reads its upper quantile on its copies at ν̂ (``joint``)."""
    from uqx.engine.statistic import parse_stat
    from uqx.workflow.products import ErrorShape
    from uqx.workflow.recalibration import scale_factor_interval

    rng = np.random.default_rng(11)
    copies = np.stack([1 + 0.05 * rng.standard_normal(400), 1 + 0.08 * rng.standard_normal(400),
                       1 + 0.5 * rng.standard_normal(400)])[None, None]  # (1, 1, 3, 400)
    joint = copies.copy()
    joint[0, 0, 1] = 1 + 0.12 * rng.standard_normal(400)  # the fit's copies at nu_hat
    shape = ErrorShape(labels=("N", "fit", "T6"), plausible=np.array([[True, True, False]]))
    f, lo, hi = scale_factor_interval(np.array([[1.44]]), shape, [parse_stat("zms")], copies,
                                      level=0.95, joint=joint)
    want_lo = min(np.sqrt(1.44 / np.quantile(copies[0, 0, 0], 0.975)),
                  np.sqrt(1.44 / np.quantile(joint[0, 0, 1], 0.975)))
    want_hi = max(np.sqrt(1.44 / np.quantile(copies[0, 0, m], 0.025)) for m in (0, 1))
    assert f[0] == pytest.approx(1.2)
    assert lo[0] == pytest.approx(want_lo) and hi[0] == pytest.approx(want_hi)


def test_a_factor_fixes_a_scale_and_not_a_shape(result):
    res, _ = result
    v = dict(zip(res["set"].values, res["rescaled_consistency"].values, strict=True))
    assert res["verdict"].sel(stat="zms").values.tolist()[:2] == ["invalid", "invalid"]
    assert v["scale"] == "valid"  # E = 1.3 u eps: u x 1.3 is calibrated and consistent
    assert v["shape"] == "invalid"  # no factor makes E[Z^2 | u] constant
    assert v["calibrated"] == ""  # ZMS not rejected: nothing to fix
    assert res["verdict"].sel(stat="zms").values[2] == "valid"
    assert res["rescaled_consistency_reason"].values[2] == \
        "average calibration valid: no factor needed"
    assert res["question_verdict"].sel(question="up_to_factor").values.tolist() == [
        "valid", "invalid", "not tested"]
    # the resolution of the valid one is stated; the invalid one has none
    assert np.isfinite(res["rescaled_consistency_resolution"].values[0])
    assert np.isnan(res["rescaled_consistency_resolution"].values[1])


def test_the_factor_is_in_the_text_the_json_and_the_netcdf(result, tmp_path):
    res, _ = result
    text = format_validation(res)
    assert "scale: consistent up to a factor 1.3" in text
    assert "shape: not a factor alone" in text
    recs = {r["dataset"]: r["scale_factor"] for r in result_records(res)}
    json.dumps(recs)  # serialisable
    assert recs["scale"]["rescaled_consistency"] == "valid"
    assert recs["calibrated"]["rescaled_consistency"] is None
    assert recs["scale"]["low"] < recs["scale"]["factor"] < recs["scale"]["high"]
    out = tmp_path / "r.nc"
    uqx.to_netcdf(res, out)
    back = uqx.read_netcdf(out)
    for k in RESCALED_VARS:
        assert k in back
    assert [scale_factor_text(back.isel(set=i)) for i in range(3)] == \
        [scale_factor_text(res.isel(set=i)) for i in range(3)]


def test_an_inconclusive_zms_claims_nothing_about_a_factor():
    """ZMS inconclusive (too few copies to reach the level: five give p >= 1/6 > 0.1): no
    'no factor needed'."""
    rng = np.random.default_rng(4)
    u = _u(rng)
    ds = uqx.from_arrays(1.3 * u * rng.standard_normal(M), u, name="s")
    res = uqx.validate(ds, ["zms", "ence"], bootstrap=100, copies=5, compute=uqx.Compute(seed=1))
    assert res["verdict"].sel(stat="zms").item() == "inconclusive"
    why = res["rescaled_consistency_reason"].item()
    assert "no factor needed" not in why and why.startswith(
        "average calibration inconclusive")


def test_without_zms_and_without_the_conditional_routes():
    """Without ZMS there is no factor; the factor's question needs no conditional routes."""
    rng = np.random.default_rng(3)
    u = _u(rng)
    ds = uqx.from_arrays(1.4 * u * rng.standard_normal(M), u, name="s")
    res = uqx.validate(ds, ["rce", "ence"], bootstrap=100, copies=100,
                       compute=uqx.Compute(seed=1))
    assert "scale_factor" not in res
    res = uqx.validate(ds, ["zms", "ence"], bootstrap=100, copies=300, conditional=False,
                       compute=uqx.Compute(seed=1))
    assert res["verdict"].sel(stat="zms").item() == "invalid"
    assert res["rescaled_consistency"].item() == "valid"  # E = 1.4 u eps: a factor fixes it
    assert res["scale_factor"].item() == pytest.approx(1.4, rel=0.06)
    res = uqx.validate(ds, ["zms"], bootstrap=100, copies=300, conditional=False,
                       compute=uqx.Compute(seed=1))
    assert res["rescaled_consistency"].item() == ""
    assert "needs a binned statistic on uE" in res["rescaled_consistency_reason"].item()


def test_tolerance_claims_equivalence_by_two_one_sided_tests_under_every_member():
    """validate(decision=Decision(tolerance=T)): the claim 'the average scale of uE within T' is
    1 exactly when, under every member that takes part, ZMS is significantly below the
    copies scaled to the edge (1+T)^2 and above those scaled to (1+T)^-2 (slow twin: the
    p-values counted copy by copy); it shows in the text, the JSON and the NetCDF; bad
    tolerances and a tolerance without ZMS are clear errors."""
    from uqx.errors import InputError

    rng = np.random.default_rng(8)
    u = _u(rng)
    sets = [uqx.from_arrays(f * u * rng.standard_normal(M), u, name=n)
            for f, n in ((1.0, "calibrated"), (1.3, "scale"), (1.03, "close"))]
    res = uqx.validate(uqx.stack(sets), "zms", bootstrap=200, copies=400, conditional=False,
                       decision=uqx.Decision(tolerance=0.1), compute=uqx.Compute(seed=2))
    w = res["scale_within_tolerance"].values
    assert w[0] == 1 and w[1] == 0  # calibrated: shown within 10 %; 30 % off: not
    est = res["estimate"].sel(stat="zms").values
    copies = uqx.simulate_reference(uqx.stack(sets), ["zms"], dist="normal", n_mc=400, seed=2,
                                    keep_draws=True)["draws"].values[:, 0]  # member N
    use = res["member_plausible"].values
    for i in range(3):
        c = copies[i]
        p_hi = (1 + np.sum(1.21 * c <= est[i])) / (1 + c.size)
        p_lo = (1 + np.sum(c / 1.21 >= est[i])) / (1 + c.size)
        if use[i, 0]:  # the N member's two tests bound the claim's p-value from below
            assert res["scale_tolerance_p_value"].values[i] >= max(p_hi, p_lo) - 1e-12
    assert np.all((res["scale_tolerance_p_value"].values < 0.05) == (w == 1))
    text = " ".join(format_validation(res).split())  # the lines wrap at 100 columns
    assert "calibrated: f = " in text  # the factor, computed; no factor needed
    assert "uE is on average within 10 % of the errors' scale (f inside [0.909, 1.1]" in text
    assert "scale: " in text and "not shown within 10 % on average (f inside [0.909, 1.1]" in text
    rec = {r["dataset"]: r["scale_factor"]["tolerance"] for r in result_records(res)}
    assert rec["calibrated"]["within"] is True and rec["scale"]["within"] is False
    with pytest.raises(InputError, match="tolerance must be a positive number"):
        uqx.validate(sets[0], "zms", bootstrap=50, copies=50,
                     decision=uqx.Decision(tolerance=0.0))
    with pytest.raises(InputError, match="add zms"):
        uqx.validate(sets[0], "rce", bootstrap=50, copies=50,
                     decision=uqx.Decision(tolerance=0.1))
    # a claim needs copies that can reach the level
    few = uqx.validate(sets[0], "zms", bootstrap=50, copies=10, conditional=False,
                       decision=uqx.Decision(tolerance=0.1), compute=uqx.Compute(seed=1))
    assert few["scale_within_tolerance"].item() == 0
