"""Odd inputs of issue 37 (part 4): tracebacks and silent results of the command line.

Each test is one case of the issue; it failed before its fix. Every test writes under
``tmp_path`` only.
"""

import re

import numpy as np
import pandas as pd
import pytest

import uqx
from uqx.cli import main
from uqx.dataio.model import from_arrays
from uqx.dataio.netcdf import to_netcdf

FAST = ["--n-boot", "50", "--n-mc", "50", "--seed", "1"]


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def refused(capsys, *argv, needles=()):
    """Run a command that must fail cleanly: status 2, ``uqx: error:``, no traceback."""
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (argv, out, err)
    assert re.search(r"^uqx: error: ", err, re.M) and "Traceback" not in err, err
    for n in needles:
        assert n in err, (n, err)
    return err


def _frame(M=400, seed=1, scale=1.0):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    return pd.DataFrame({"E": u * rng.standard_normal(M), "uE": u / scale,
                         "X": rng.uniform(0, 1, M)})


@pytest.fixture
def csv(tmp_path):
    path = tmp_path / "preds.csv"
    _frame().to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def result_nc(tmp_path_factory):
    """A small validation result (ZMS and RCE, no conditional routes) on disk."""
    df = _frame()
    res = uqx.validate(from_arrays(df["E"], df["uE"], name="d"), ["zms", "rce"], n_boot=50,
                       n_mc=50, seed=1, conditional=False)
    return to_netcdf(res, tmp_path_factory.mktemp("res") / "res.nc")


# ------------------------------------------------------------------ tracebacks


def test_study_figure_of_a_validation_result_is_a_clear_error(capsys, result_nc, tmp_path):
    """Case 1: was ``KeyError: 'nu'`` and status 1 (that of --fail-on)."""
    err = refused(capsys, "plot", "reference-sensitivity", result_nc, "-o",
                  tmp_path / "f.png",
                  needles=["reference-sensitivity", "validation result",
                           "uqx sweep reference-sensitivity"])
    assert "KeyError" not in err
    refused(capsys, "plot", "pval", result_nc, "-o", tmp_path / "f.png",
            needles=["uqx sweep pval"])
    assert not (tmp_path / "f.png").exists()


def _edit(src, dst, edit):
    """Copy a NetCDF file and change its attributes in place (as another tool would)."""
    import shutil

    import netCDF4

    shutil.copy(src, dst)
    with netCDF4.Dataset(dst, "a") as d:
        edit(d)
    return dst


@pytest.mark.parametrize("damage", ["dtype", "json-attr", "parameters"])
def test_show_names_a_damaged_attribute_and_shows_the_rest(capsys, result_nc, tmp_path,
                                                           damage):
    """Case 2: a corrupt ``uqx_dtype`` or a non-JSON attribute crashed ``uqx show``."""
    def edit(d):
        if damage == "dtype":
            d.variables["verdict"].setncattr("uqx_dtype", "garbage!")
        elif damage == "json-attr":
            d.setncattr("parameters", "uqx-json:{not json")
        else:
            d.setncattr("parameters", "not json")

    bad = _edit(result_nc, tmp_path / "bad.nc", edit)
    rc, out, err = run(capsys, "show", bad)
    assert rc == 0 and "Traceback" not in err, err
    assert "zms" in out and "valid" in out  # the tables are shown
    assert re.search(r"^uqx: warning: .*bad\.nc.*'(uqx_dtype|parameters)'", err, re.M), err
    if damage == "dtype":
        assert "'verdict'" in err and "garbage!" in err
    rc, out, err = run(capsys, "show", bad, "--format", "json")
    assert rc == 0 and "uqx: warning:" in err


def test_read_netcdf_warns_on_a_damaged_attribute(result_nc, tmp_path):
    bad = _edit(result_nc, tmp_path / "bad.nc",
                lambda d: d.variables["borderline"].setncattr("uqx_dtype", "nope"))
    with pytest.warns(UserWarning, match="'uqx_dtype' = 'nope' is damaged"):
        res = uqx.read_netcdf(bad)
    assert res["borderline"].dtype == np.int8  # the stored values, as stored
