"""The scale factor sqrt(ZMS) and the consistency of the rescaled uE (uqx.workflow.recalibration):
one number fixes uncertainties wrong by a factor, and is said not to fix uncertainties wrong
in shape."""

import json

import numpy as np
import pytest

import uqx
from uqx.workflow.recalibration import RESCALED_VARS, recalibration_text
from uqx.workflow.tables import format_validation, result_records

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
    return uqx.validate(uqx.stack(sets), n_boot=300, n_mc=300, seed=7), sets


def test_the_factor_is_sqrt_zms_with_the_square_roots_of_its_bca_limits(result):
    res, sets = result
    for i, sd in enumerate(sets):
        z = res.isel(set=i).sel(stat="zms")
        f = float(res["scale_factor"].values[i])
        np.testing.assert_allclose(f, np.sqrt(np.mean((sd.E / sd.uE) ** 2)), rtol=1e-12)
        np.testing.assert_allclose(res["scale_factor_low"].values[i], np.sqrt(float(z.ci_low)))
        np.testing.assert_allclose(res["scale_factor_high"].values[i],
                                   np.sqrt(float(z.ci_high)))
    lo, hi = res["scale_factor_low"].values[0], res["scale_factor_high"].values[0]
    assert lo < 1.3 < hi  # the factor the errors were drawn with


def test_a_factor_fixes_a_scale_and_not_a_shape(result):
    res, _ = result
    v = dict(zip(res["set"].values, res["rescaled_consistency"].values, strict=True))
    assert res["verdict"].sel(stat="zms").values.tolist()[:2] == ["invalid", "invalid"]
    assert v["scale"] == "valid"  # E = 1.3 u eps: u x 1.3 is calibrated and consistent
    assert v["shape"] == "invalid"  # no factor makes E[Z^2 | u] constant
    assert v["calibrated"] == ""  # ZMS not rejected: nothing to fix
    assert res["verdict"].sel(stat="zms").values[2] == "valid"
    assert res["rescaled_consistency_reason"].values[2] == "ZMS valid: no factor needed"
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
    assert [recalibration_text(back.isel(set=i)) for i in range(3)] == \
        [recalibration_text(res.isel(set=i)) for i in range(3)]


def test_an_inconclusive_zms_claims_nothing_about_a_factor():
    """ZMS inconclusive (too few copies to reach the level): no 'no factor needed'."""
    rng = np.random.default_rng(4)
    u = _u(rng)
    ds = uqx.from_arrays(1.3 * u * rng.standard_normal(M), u, name="s")
    res = uqx.validate(ds, ["zms", "ence"], n_boot=100, n_mc=10, seed=1)
    assert res["verdict"].sel(stat="zms").item() == "inconclusive"
    why = res["rescaled_consistency_reason"].item()
    assert "no factor needed" not in why and why.startswith("ZMS inconclusive")


def test_without_zms_or_the_conditional_routes():
    rng = np.random.default_rng(3)
    u = _u(rng)
    ds = uqx.from_arrays(1.4 * u * rng.standard_normal(M), u, name="s")
    res = uqx.validate(ds, ["rce", "ence"], n_boot=100, n_mc=100, seed=1)
    assert "scale_factor" not in res
    res = uqx.validate(ds, ["zms", "ence"], n_boot=100, n_mc=100, seed=1, conditional=False)
    assert res["verdict"].sel(stat="zms").item() == "invalid"
    assert res["rescaled_consistency"].item() == ""
    assert "needs the conditional routes" in res["rescaled_consistency_reason"].item()
    assert res["scale_factor"].item() == pytest.approx(1.4, rel=0.06)
