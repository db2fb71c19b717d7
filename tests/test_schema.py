"""The variable schema (uqx.dataio.schema): every result variable declared, once.

A step that writes a variable the schema does not declare (or with other dims, another
long_name) fails here; so does a declaration that no result writes any more.
"""

import numpy as np
import pytest
import xarray as xr
from internals import simulate

import uqx
from uqx.dataio import schema
from uqx.dataio.model import from_arrays, stack
from uqx.dataio.synth import nig
from uqx.inference.curves.confidence import calibration_curve
from uqx.inference.curves.intervals import local_range_ratio, picp
from uqx.inference.fits import fit_sets

KW = dict(bootstrap=200, copies=200, compute=uqx.Compute(seed=2))


def _sets(M=600, n=2):
    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        E, u = nig(M, 6.0, seed=10 + i)
        out.append(from_arrays(E * (1 + 0.3 * i), u, X=u + rng.uniform(size=M),
                               V=rng.normal(size=M), name=f"s{i}"))
    return stack(out)


@pytest.fixture(scope="module")
def sets():
    return _sets()


@pytest.fixture(scope="module")
def results(sets):
    """Results that, together, write every variable of uqx.validate."""
    rich = uqx.validate(sets, stats=["zms", "mean_z", "rce", "cc", "ence", "zmse", "zve",
                                     "zmse_X", "zms_scan_V"],
                        decision=uqx.Decision(tolerance=0.1), **KW)
    streamed = uqx.validate(sets.chunk({"sample": 300}), stats=["zms", "rce"],
                            conditional=False, **KW)
    return rich, streamed


def test_every_variable_of_validate_is_declared(results):
    for res in results:
        assert schema.group_of(res) is schema.VALIDATE
        assert not schema.VALIDATE.mismatches(res)
    written = set().union(*(map(str, r.variables) for r in results))
    assert set(schema.VALIDATE) - written == set(), "declared but never written"


def test_the_other_results_are_declared(sets):
    one = sets.isel(set=[0])
    E, u = (one[k].values[0] for k in ("E", "uE"))
    boot = uqx.bootstrap(sets, ["zms", "rce"], n_boot=100, seed=1, keep_replicates=True)
    sim = simulate(sets, ["zms", "ence", "zmse_X", "zmse_V", "cc"], n_mc=60, seed=1,
                   keep_draws=True, cc_spread=True)  # the drawer, with the tests' copies
    per_set = simulate(sets, ["zms"], dist="t", nu=[5.0] * sets.sizes["set"], label="fit",
                       n_mc=20, seed=1)
    checks = [
        (schema.BOOTSTRAP, boot),
        (schema.BOOTSTRAP_PER_BIN, uqx.bootstrap_per_bin(sets, "lzisd_X", n_boot=50, seed=1)),
        (schema.SIMULATE_REFERENCE, sim),
        (schema.SIMULATE_REFERENCE, per_set),
        (schema.CALIBRATION_CURVE, calibration_curve(from_arrays(E, u))),
        (schema.PICP, picp(sets)),
        (schema.LRR, local_range_ratio(E, 2 * u, one["X"].values[0], n_boot=50, seed=1)),
        (schema.FITS, fit_sets(one)),
    ]
    for group, ds in checks:
        assert not group.mismatches(ds), group.title
    assert schema.group_of(boot) is schema.BOOTSTRAP
    assert schema.group_of(sim) is schema.SIMULATE_REFERENCE


def test_long_name_templates_read_as_the_f_strings_did():
    level = 0.9
    assert schema.VALIDATE.attrs("ci_low", level=level) == {
        "long_name": f"BCa {level:.0%} lower limit"}
    v = schema.VALIDATE["ci_low"]
    assert v.fields == ("level",) and v.matches("BCa 90% lower limit")
    assert not v.matches("BCa 90% upper limit")
    with pytest.raises(TypeError, match="level"):
        schema.VALIDATE.attrs("ci_low")
    with pytest.raises(TypeError, match="nominal"):
        schema.VALIDATE.attrs("ci_low", level=level, nominal=0.95)
    # fixed attributes come with the long name, given ones from the call
    assert schema.VALIDATE.attrs("kappa_cs_z2") == {"long_name": "kappa cs z2",
                                                    "safety_limit": 5.0}
    assert list(schema.VALIDATE.attrs("scale_within_tolerance", tolerance=0.1, alpha=0.05)) \
        == ["long_name", "tolerance", "alpha"]
    assert schema.VALIDATE.attrs("factor_verdict_reason") == {}


def test_data_vars_share_the_fields_and_refuse_an_unused_one():
    out = schema.PICP.data_vars({"picp_low": [0.5], "picp_high": [0.6]}, level=0.95)
    assert out["picp_low"] == (("set", "prob"), [0.5], {"long_name": "Wilson 95% lower limit"})
    with pytest.raises(TypeError, match="nominal"):
        schema.PICP.data_vars({"picp": [0.5]}, nominal=0.95)
    ds = xr.Dataset({"x_mid": (("set", "bin"), [[1.0]])})
    schema.BOOTSTRAP_PER_BIN.annotate(ds, cond="X")
    assert ds["x_mid"].attrs == {"long_name": "mid-range of X in the bin"}


def test_a_name_is_declared_once_per_group():
    with pytest.raises(ValueError, match="twice"):
        schema.Group("g", [schema.Variable("a", ("set",), None),
                           schema.Variable("a", ("set",), "again")])
    assert not any("{" in (v.long_name or "") and not v.fields
                   for g in schema.GROUPS.values() for v in g.values())


def test_mismatches_name_what_differs():
    ds = xr.Dataset({"p_value": (("set", "stat"), [[0.5]], {"long_name": "p"}),
                     "made_up": ("set", [1.0])})
    found = schema.VALIDATE.mismatches(ds)
    assert any(m.startswith("p_value: dims") for m in found)
    assert any(m.startswith("p_value: long_name") for m in found)
    assert "made_up: not declared in uqx.validate" in found
    assert schema.group_of(ds) is None
    assert schema.group_of(xr.Dataset(attrs={"study": "pval"})) is schema.STUDIES["pval"]
