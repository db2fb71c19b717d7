"""The settings of ``uqx.validate`` in groups: the signature, the groups' own checks, the
plain forms, the errors of the old flat keywords, and the command line generated from
the same declarations."""

import dataclasses
import inspect
import subprocess
import sys

import numpy as np
import pytest

import uqx
from uqx.cli.app import build_parser
from uqx.engine import defaults
from uqx.errors import InputError
from uqx.workflow.groups import (
    GROUPS,
    OLD_KEYWORDS,
    as_group,
    cli_options,
    flat_settings,
    from_options,
)
from uqx.workflow.settings import Settings

GROUP_NAMES = ["Bootstrap", "Copies", "Binning", "Conditional", "Decision", "Compute"]


def _toy(M=400, seed=0):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    return uqx.from_arrays(u * rng.standard_normal(M), u, name="toy")


# ------------------------------------------------------------------------ the surface


def test_validate_takes_eight_parameters_at_most():
    params = list(inspect.signature(uqx.validate).parameters)
    assert params == ["ds", "stats", "bootstrap", "copies", "binning", "conditional",
                      "decision", "compute"]
    assert len(params) <= 8


def test_groups_are_exported_frozen_and_documented():
    for name in GROUP_NAMES:
        cls = getattr(uqx, name)
        assert name in uqx.__all__
        assert dataclasses.is_dataclass(cls)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(cls(), dataclasses.fields(cls)[0].name, 1)
        doc = inspect.getdoc(cls)
        for f in dataclasses.fields(cls):  # every field and its default in the docstring
            assert f"{f.name} :" in doc, (name, f.name)


def test_the_defaults_are_those_of_the_flat_settings():
    flat = flat_settings()
    seed, bins = flat.pop("seed"), flat.pop("bins")
    assert seed is None and bins is None
    assert flat.pop("drop_nonfinite") is False and flat.pop("progress") is None
    built = Settings(seed=1, **flat)
    assert built == Settings(seed=1)
    assert (uqx.Bootstrap().n_boot, uqx.Copies().n_mc, uqx.Binning().pop_min,
            uqx.Decision().alpha) == (defaults.N_BOOT, defaults.N_MC, defaults.POP_MIN,
                                      defaults.ALPHA_RESULT)


@pytest.mark.parametrize("param, plain, group", [
    ("bootstrap", 500, uqx.Bootstrap(n_boot=500)),
    ("copies", 1000, uqx.Copies(n_mc=1000)),
    ("binning", 10, uqx.Binning(bins=10)),
    ("binning", np.int64(10), uqx.Binning(bins=10)),
    ("conditional", False, uqx.Conditional(enabled=False)),
    ("conditional", np.bool_(False), uqx.Conditional(enabled=False)),
    ("decision", None, uqx.Decision()),
])
def test_a_plain_value_means_the_groups_first_field(param, plain, group):
    cls = type(group)
    assert as_group(plain, cls) == group
    assert flat_settings(**{param: plain}) == flat_settings(**{param: group})


def test_a_plain_int_gives_the_same_result_as_its_group():
    ds = _toy()
    a = uqx.validate(ds, "zms", bootstrap=100, copies=50, conditional=False,
                     compute=uqx.Compute(seed=3))
    b = uqx.validate(ds, "zms", bootstrap=uqx.Bootstrap(n_boot=100),
                     copies=uqx.Copies(n_mc=50), conditional=uqx.Conditional(enabled=False),
                     compute=uqx.Compute(seed=3))
    assert a.attrs["seed"] == 3 and a.attrs["n_boot"] == 100 and a.attrs["n_mc"] == 50
    np.testing.assert_array_equal(a["ci_low"].values, b["ci_low"].values)
    np.testing.assert_array_equal(a["p_value"].values, b["p_value"].values)


@pytest.mark.parametrize("value, cls, match", [
    ("x", uqx.Bootstrap, r"bootstrap takes a uqx.Bootstrap or an int \(its n_boot\), got 'x'"),
    (2.5, uqx.Copies, r"copies takes a uqx.Copies or an int \(its n_mc\)"),
    ("adaptive", uqx.Binning, r"binning=uqx.Binning\(scheme='adaptive'\)"),
    (0, uqx.Conditional, r"conditional takes a uqx.Conditional or a bool \(its enabled\)"),
    (0.05, uqx.Decision, r"decision takes a uqx.Decision, got 0.05"),
    (7, uqx.Compute, r"compute takes a uqx.Compute, got 7"),
    (uqx.Bootstrap(), uqx.Copies, r"copies takes a uqx.Copies"),
])
def test_a_group_of_another_kind_is_a_type_error(value, cls, match):
    with pytest.raises(TypeError, match=match):
        as_group(value, cls)


def test_a_bool_is_not_a_count():
    with pytest.raises(TypeError, match=r"an int \(its n_boot\), got True"):
        as_group(True, uqx.Bootstrap)


# --------------------------------------------------------------- the groups' checks


@pytest.mark.parametrize("make, flat, match", [
    (lambda: uqx.Bootstrap(n_boot=1), dict(n_boot=1), "n_boot must be an integer >= 2"),
    (lambda: uqx.Bootstrap(level=1.5), dict(level=1.5), r"level must be in \(0, 1\)"),
    (lambda: uqx.Copies(n_mc="10"), dict(n_mc="10"), "n_mc must be an integer >= 2"),
    (lambda: uqx.Copies(nu=2), dict(nu=2), "nu > 2"),
    (lambda: uqx.Copies(extrapolation_n_mc=1), dict(extrapolation_n_mc=1),
     "extrapolation_n_mc must be an integer >= 2, got 1: fewer calibrated copies"),
    (lambda: uqx.Binning(bins=0), dict(bins=0), "bins must be an integer >= 1"),
    (lambda: uqx.Binning(scheme="foo"), dict(binning="foo"), "unknown binning scheme 'foo'"),
    (lambda: uqx.Binning(pop_min=0), dict(pop_min=0), "pop_min must be an integer >= 1"),
    (lambda: uqx.Binning(ties="sorted"), dict(ties="sorted"), "ties must be one of"),
    (lambda: uqx.Conditional(cond_bins=1), dict(cond_bins=1), "cond_bins must be an integer"),
    (lambda: uqx.Conditional(cond_n_boot=1.0), dict(cond_n_boot=1.0), "cond_n_boot must be"),
    (lambda: uqx.Conditional(cond_ci="x"), dict(cond_ci="x"), "cond_ci must be auto, "),
    (lambda: uqx.Decision(alpha=0.5), dict(alpha=0.5), r"alpha \(the family-wise level"),
    (lambda: uqx.Decision(tolerance=-1), dict(tolerance=-1), "tolerance must be a positive"),
    (lambda: uqx.Compute(scheduler="bogus"), dict(scheduler="bogus"), "scheduler must be"),
    (lambda: uqx.Compute(num_workers=0), dict(num_workers=0), "num_workers must be a positive"),
])
def test_a_group_checks_itself_as_the_flat_settings_do(make, flat, match):
    with pytest.raises(InputError, match=match) as by_group:
        make()
    with pytest.raises(InputError) as by_settings:
        Settings(seed=1, **flat)
    assert str(by_group.value) == str(by_settings.value)


@pytest.mark.parametrize("seed", [-1, 1.5, "1", True])
def test_compute_refuses_a_seed_that_is_not_a_non_negative_integer(seed):
    with pytest.raises(InputError, match="seed must be a non-negative integer"):
        uqx.Compute(seed=seed)


# ------------------------------------------------------------ the old flat keywords


@pytest.mark.parametrize("kw, message", [
    (dict(n_boot=500), "validate() takes its bootstrap settings grouped: "
                       "bootstrap=uqx.Bootstrap(n_boot=500) (or bootstrap=500)"),
    (dict(n_mc=1000), "copies=uqx.Copies(n_mc=1000) (or copies=1000)"),
    (dict(bins=10), "binning=uqx.Binning(bins=10) (or binning=10)"),
    (dict(pop_min=50), "validate() takes its binning settings grouped: "
                       "binning=uqx.Binning(pop_min=50)"),
    (dict(cond_bins=5), "conditional=uqx.Conditional(cond_bins=5)"),
    (dict(alpha=0.05, tolerance=0.1), "decision=uqx.Decision(alpha=0.05, tolerance=0.1)"),
    (dict(seed=7), "validate() takes its compute settings grouped: compute=uqx.Compute(seed=7)"),
    (dict(drop_nonfinite=True), "binning=uqx.Binning(drop_nonfinite=True)"),
    (dict(nboot=500), "unexpected keyword argument 'nboot'; did you mean n_boot?"),
    (dict(nboot=500), "bootstrap=uqx.Bootstrap(n_boot=500) (or bootstrap=500)"),
    (dict(stast="zms"), "unexpected keyword argument 'stast'; did you mean stats?"),
    (dict(whatever=1), "unexpected keyword argument 'whatever' (it takes ds, stats, "
                       "bootstrap, copies, binning, conditional, decision, compute)"),
])
def test_an_old_keyword_names_the_group_to_use(kw, message):
    with pytest.raises(TypeError) as err:
        uqx.validate(_toy(), "zms", **kw)
    assert message in str(err.value)


def test_every_old_keyword_is_refused_before_anything_runs():
    for name, (cls, field) in OLD_KEYWORDS.items():
        with pytest.raises(TypeError, match=f"{cls.param}=uqx.{cls.__name__}\\({field}="):
            uqx.validate(None, **{name: 1})


def test_the_accessor_and_the_recalibration_check_forward_the_groups(rng):
    ds = _toy()
    with pytest.raises(TypeError, match=r"bootstrap=uqx.Bootstrap\(n_boot=50\)"):
        ds.uqx.validate("zms", n_boot=50)
    u = rng.uniform(0.5, 2.0, 300)
    E = u * rng.standard_normal(300)
    with pytest.raises(InputError, match="takes its root seed as seed="):
        uqx.check_recalibration((E, u), "scale", compute=uqx.Compute(seed=1))
    with pytest.raises(TypeError, match=r"copies=uqx.Copies\(n_mc=50\)"):
        uqx.check_recalibration((E, u), "scale", seed=1, n_mc=50)


# ---------------------------------------------------------------- the command line


def _validate_parser():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sub.choices["validate"]


def test_the_cli_options_are_the_groups_declarations():
    p = _validate_parser()
    actions = {a.option_strings[0]: a for a in p._actions if a.option_strings}
    declared = cli_options()
    assert len(declared) == 13
    for cls in GROUPS:
        for f in dataclasses.fields(cls):
            if "flag" not in f.metadata:
                continue
            a = actions[f.metadata["flag"]]
            assert a.help == f.metadata["help"]
            if f.metadata.get("inverted"):
                assert a.default is False and f.default is True
            elif f.metadata["flag"] != "--ties":  # default: file-order with --paper-sets
                assert a.default == f.default, f.name
    # the defaults of the command line make the default groups
    args = p.parse_args(["x.csv"])
    groups = from_options(args, ties="content", simulate_all=False)
    assert groups == {cls.param: cls() for cls in GROUPS}


def test_the_cli_maps_its_options_onto_the_groups():
    p = _validate_parser()
    args = p.parse_args(["x.csv", "--n-boot", "300", "--n-mc", "200", "--seed", "4",
                         "--alpha", "0.05", "--no-conditional", "--cond-ci", "cho",
                         "--pop-min", "40", "--tolerance", "0.1", "--nu", "5"])
    g = from_options(args, ties="file-order", simulate_all=True, bins=10, progress=False)
    assert g["bootstrap"] == uqx.Bootstrap(n_boot=300)
    assert g["copies"] == uqx.Copies(n_mc=200, nu=5.0, simulate_all=True)
    assert g["binning"] == uqx.Binning(bins=10, pop_min=40, ties="file-order")
    assert g["conditional"] == uqx.Conditional(enabled=False, cond_ci="cho")
    assert g["decision"] == uqx.Decision(alpha=0.05, tolerance=0.1)
    assert g["compute"] == uqx.Compute(seed=4, progress=False)


def test_default_stats_are_defined_once():
    out = subprocess.run(["grep", "-rn", "DEFAULT_STATS =", "uqx"], capture_output=True,
                         text=True, cwd=str(__import__("pathlib").Path(uqx.__file__).parents[1]))
    assert out.stdout.count("DEFAULT_STATS =") == 1, out.stdout


def test_the_groups_module_imports_no_numerical_library():
    code = ("import sys, uqx.workflow.groups\n"
            "print(sorted(m for m in ('numpy', 'numba', 'xarray', 'dask') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"
