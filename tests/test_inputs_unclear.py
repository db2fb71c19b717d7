"""Odd inputs: unclear errors, silent changes and CI (each case failed on f6e61aa).

Compressed and non-UTF-8 CSV files, missing files with odd suffixes, NetCDF data (groups,
a _FillValue equal to real values, reports of NetCDF data), pandas missing values, stacks
where only some sets have X, the advice of ``uqx plot``, options that cannot give a test,
empty equal-width bins, ``--ties file-order``, the ranges of ``--nu`` per study, the
docs test in CI, the data-directory message and Parquet input.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import uqx
from uqx.cli.app import main
from uqx.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--n-boot", "50", "--n-mc", "50", "--seed", "1"]


def _frame(M=300, seed=0, X=True):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    cols = {"E": u * rng.standard_normal(M), "uE": u}
    if X:
        cols["X"] = rng.uniform(0.0, 1.0, M)
    return pd.DataFrame(cols)


def _run(capsys, argv):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


# ------------------------------------------------------------ 1. compressed CSV files


@pytest.mark.parametrize("suffix", [".csv.gz", ".csv.bz2", ".csv.xz", ".csv.zip"])
@pytest.mark.parametrize("sep", [",", ";"])
def test_compressed_csv_is_read_decompressed(tmp_path, capsys, suffix, sep):
    df = _frame()
    path = tmp_path / f"preds{suffix}"
    df.to_csv(path, index=False, sep=sep)
    ds = uqx.read_csv(path, X="X")
    np.testing.assert_array_equal(ds["E"].values, df["E"].to_numpy())
    assert ds.attrs["name"] == "preds"  # the stem without .csv and the compression
    rc, out, err = _run(capsys, ["stats", path])
    assert rc == 0, err
    assert "no column" not in err


def test_corrupt_compressed_file_is_named(tmp_path, capsys):
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(b"E,uE\n1,2\n")  # not gzip
    rc, _, err = _run(capsys, ["stats", path])
    assert rc == 2 and "bad.csv.gz" in err and "decompress" in err


# ------------------------------------------------------ 2. missing files, odd suffixes


@pytest.mark.parametrize("name", ["missing.csv.gz", "preds.dat", "sub/preds"])
def test_missing_file_is_file_not_found(tmp_path, capsys, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    rc, _, err = _run(capsys, ["stats", name])
    assert rc == 2
    assert "file not found" in err and "unknown dataset" not in err
    rc, _, err = _run(capsys, ["plot", "lcp", name, "-o", "f.png"])
    assert rc == 2 and "file not found" in err


def test_unknown_name_without_suffix_is_still_unknown_dataset(capsys):
    rc, _, err = _run(capsys, ["stats", "Set1x"])
    assert rc == 2 and "unknown dataset 'Set1x'" in err and "Set1" in err


def test_existing_file_with_odd_suffix_is_read(tmp_path, capsys):
    path = tmp_path / "preds.dat"
    _frame().to_csv(path, index=False)
    rc, _, err = _run(capsys, ["stats", path])
    assert rc == 0, err


# ------------------------------------------------------------ 3. UTF-16, Latin-1 CSV


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_csv_with_a_byte_order_mark_is_read(tmp_path, encoding):
    df = _frame().assign(name="café")
    path = tmp_path / "bom.csv"
    df.to_csv(path, index=False, encoding=encoding)
    ds = uqx.read_csv(path)
    np.testing.assert_array_equal(ds["uE"].values, df["uE"].to_numpy())
    if encoding != "utf-8-sig":
        assert ds.attrs["encoding"] == encoding


def test_latin1_csv_is_read_with_a_note(tmp_path, capsys):
    df = _frame().assign(name="café")
    path = tmp_path / "latin.csv"
    df.to_csv(path, index=False, encoding="latin-1")
    with pytest.warns(UserWarning, match="not UTF-8: read as Latin-1"):
        ds = uqx.read_csv(path)
    assert ds.attrs["encoding"] == "latin-1"
    np.testing.assert_array_equal(ds["E"].values, df["E"].to_numpy())
    rc, _, err = _run(capsys, ["stats", path])
    assert rc == 0 and "uqx: note:" in err and "re-save it as UTF-8" in err
    assert "UserWarning" not in err


def test_utf16_without_bom_says_resave_as_utf8(tmp_path, capsys):
    path = tmp_path / "nobom.csv"
    path.write_bytes("E,uE\n1,2\n3,4\n".encode("utf-16-le"))
    rc, _, err = _run(capsys, ["stats", path])
    assert rc == 2 and "UTF-16" in err and "re-save it as a UTF-8" in err


# ------------------------------------------------------ 4. reports of NetCDF input data


def _data_nc(path, df=None, **to_netcdf):
    df = _frame() if df is None else df
    xr.Dataset({k: ("row", df[k].to_numpy()) for k in df}).to_netcdf(path, **to_netcdf)
    return path


def test_report_of_netcdf_data_and_of_a_saved_result(tmp_path, capsys):
    data = _data_nc(tmp_path / "data.nc")
    rc, out, err = _run(capsys, ["report", data, "-o", tmp_path / "r.md", "--no-figures",
                                 *FAST, "--no-conditional"])
    assert rc == 0, err
    assert "saved result" not in err and (tmp_path / "r.md").is_file()
    res = tmp_path / "res.nc"
    rc, _, err = _run(capsys, ["validate", data, *FAST, "--no-conditional", "-o", res])
    assert rc == 0, err
    rc, _, err = _run(capsys, ["report", res, "-o", tmp_path / "r2.md", "--no-figures"])
    assert rc == 0, err
    rc, _, err = _run(capsys, ["report", res, "-o", tmp_path / "r3.md", "--n-boot", "5"])
    assert rc == 2 and "res.nc is a saved result" in err


# ----------------------------------------------------------------- 5. uqx plot advice


def test_plot_accepts_the_pop_min_it_advises(tmp_path, capsys):
    small = tmp_path / "small.csv"
    _frame(M=20).to_csv(small, index=False)
    for kind in ("lzisd", "lcp", "reliability"):
        rc, _, err = _run(capsys, ["plot", kind, small, "-o", tmp_path / "f.png"])
        assert rc == 2 and "lower --pop-min" in err
        rc, _, err = _run(capsys, ["plot", kind, small, "-o", tmp_path / "f.png",
                                   "--pop-min", "5"])
        assert rc == 0, err
    rc, _, err = _run(capsys, ["plot", "e-vs-u", small, "-o", tmp_path / "f.png",
                               "--pop-min", "5"])
    assert rc == 2 and "--pop-min applies to" in err


def test_plot_study_of_a_result_says_what_the_file_is(tmp_path, capsys):
    data = _data_nc(tmp_path / "data.nc")
    res = tmp_path / "res.nc"
    assert main(["validate", str(data), *FAST, "--no-conditional", "-o", str(res)]) == 0
    capsys.readouterr()
    rc, _, err = _run(capsys, ["plot", "study", res, "-o", tmp_path / "s.png"])
    assert rc == 2 and "None" not in err
    assert "res.nc is a 'uqx validate' result" in err and "uqx plot zeta" in err
    assert "pval" in err and "appendix-b" in err
    rc, _, err = _run(capsys, ["plot", "study", data, "-o", tmp_path / "s.png"])
    assert rc == 2 and "data.nc holds input data" in err


# ------------------------------------------------------------ 6. NetCDF and pandas odds


def test_netcdf_variables_in_one_group_are_read(tmp_path, capsys):
    df = _frame()
    path = _data_nc(tmp_path / "grp.nc", df, group="preds")
    ds = uqx.open_dataset(path, X="X")
    assert ds.attrs["group"] == "/preds"
    np.testing.assert_array_equal(ds["E"].values, df["E"].to_numpy())
    rc, _, err = _run(capsys, ["stats", path])
    assert rc == 0, err
    two = _data_nc(tmp_path / "two.nc", df, group="preds")
    _data_nc(two, df, group="other", mode="a")  # a second group with E, uE
    with pytest.raises(InputError, match=r"several groups \((/preds, /other|/other, /preds)"):
        uqx.open_dataset(two)
    assert uqx.open_dataset(two, group="other").sizes["sample"] == df.shape[0]


def test_netcdf_variables_elsewhere_are_listed_with_the_groups(tmp_path):
    path = _data_nc(tmp_path / "g.nc", _frame().rename(columns={"E": "err"}), group="run")
    with pytest.raises(InputError, match=r"no variable 'E'.*groups: run \(err, uE, X\)"):
        uqx.open_dataset(path)


def test_fill_value_equal_to_real_values_is_named(tmp_path, capsys):
    df = _frame()
    fill = float(df["E"].iloc[5])
    path = _data_nc(tmp_path / "fill.nc", df, encoding={"E": {"_FillValue": fill}})
    with pytest.raises(InputError) as exc:
        uqx.open_dataset(path)
    text = str(exc.value)
    assert "_FillValue" in text and "1 value(s) of 'E'" in text and "rows 5" in text
    rc, _, err = _run(capsys, ["stats", path])
    assert rc == 2 and "_FillValue" in err and "--drop-nonfinite" in err
    ds = uqx.open_dataset(path, drop_nonfinite=True)
    assert ds.attrs["n_dropped"] == 1 and "_FillValue" in ds.attrs["filters"]
    # xarray's default NaN fill is no such case
    clean = _data_nc(tmp_path / "clean.nc", df)
    assert uqx.open_dataset(clean).sizes["sample"] == df.shape[0]


def test_pandas_na_in_an_object_series_is_a_missing_value():
    df = _frame(M=50)
    E = pd.Series(df["E"].tolist(), dtype=object)
    E[3] = pd.NA
    for values in (E, E.to_numpy()):
        with pytest.raises(InputError, match=r"1 value\(s\) of E \(0-based rows 3\) are NaN"):
            uqx.from_arrays(values, df["uE"])
    ds = xr.Dataset({"E": ("sample", E.to_numpy()), "uE": ("sample", df["uE"].to_numpy())})
    with pytest.raises(InputError, match=r"1 value\(s\) of E \(0-based rows 3\)"):
        uqx.compute(ds, ["zms"])
    res = uqx.validate(ds, ["zms"], bootstrap=50, copies=50,
                       binning=uqx.Binning(drop_nonfinite=True), conditional=False,
                       compute=uqx.Compute(seed=1))
    assert res["M"].item() == 49
    text = xr.Dataset({"E": ("sample", np.array(["a"] * 50, dtype=object)),
                       "uE": ("sample", df["uE"].to_numpy())})
    with pytest.raises(InputError, match="not numeric"):
        uqx.compute(text, ["zms"])


def test_stack_where_only_some_sets_have_X():
    df = _frame(M=1200, seed=3)
    a = uqx.from_arrays(df["E"], df["uE"], X=df["X"], name="a")
    b = uqx.from_arrays(df["E"].to_numpy()[::-1], df["uE"].to_numpy()[::-1], name="b")
    kw = dict(bootstrap=100, copies=100, conditional=False,
              decision=uqx.Decision(resolution=False), compute=uqx.Compute(seed=1))
    # the default statistics test adaptivity on X for the sets that have X, as alone
    res = uqx.validate(uqx.stack([a, b]), **kw)
    assert list(res["set"].values) == ["a", "b"]
    assert res["question_verdict"].sel(question="adaptivity_X", set="a").item() != "not tested"
    assert res["question_verdict"].sel(question="adaptivity_X", set="b").item() == "not tested"
    why = res["question_reason"].sel(question="adaptivity_X", set="b").item()
    assert "this set has no X" in why and "given for a" in why
    assert "adaptivity (X) not tested" in res["set_warnings"].sel(set="b").item()
    assert res.attrs["input_names"] == ["a", "b"] and res.attrs["input_features"] == ["X", ""]
    for name, one in (("a", a), ("b", b)):
        alone = uqx.validate(one, **kw)
        got = res.sel(set=name).sel(stat=alone["stat"].values)
        for k in ("estimate", "ci_low", "ci_high", "p_value", "verdict", "question_verdict",
                  "question_p_value"):
            np.testing.assert_array_equal(got[k].values, alone[k].isel(set=0).values, k)
    assert np.isnan(res["estimate"].sel(set="b", stat="zms_scan_X")).item()
    assert res["verdict"].sel(set="b", stat="zms_scan_X").item() == "not tested"
    # statistics asked by name: those on X for the sets with X, `not tested` for the others
    res = uqx.validate(uqx.stack([a, b]), ["zms", "ence_X"], bootstrap=50, copies=50,
                       compute=uqx.Compute(seed=1))
    assert res["verdict"].sel(set="b", stat="ence_X").item() == "not tested"
    assert res["verdict"].sel(set="a", stat="ence_X").item() != "not tested"
    assert "this set has no X" in res["question_reason"].sel(question="adaptivity_X",
                                                            set="b").item()
    with pytest.raises(InputError, match=r"^b: statistic 'ence_X' needs variable 'X', which "
                                         r"these sets do not have \(other sets do\)"):
        uqx.validate(uqx.stack([a, b]), ["ence_X"], bootstrap=50, copies=50,
                     compute=uqx.Compute(seed=1))
    with pytest.raises(InputError, match=r"^b: statistic 'ence_X' needs variable 'X'"):
        uqx.validate(b, ["zms", "ence_X"], bootstrap=50, copies=50, compute=uqx.Compute(seed=1))


# -------------------------------------------- 7. options that cannot give a test


def test_extrapolation_n_mc_below_two_is_refused_naming_the_option(tmp_path, capsys):
    path = tmp_path / "d.csv"
    _frame().to_csv(path, index=False)
    for value in ("0", "1"):
        rc, _, err = _run(capsys, ["validate", path, "--extrapolation-n-mc", value])
        assert rc == 2 and "--extrapolation-n-mc must be an integer >= 2" in err
        assert "untested" in err
    with pytest.raises(InputError, match="extrapolation_n_mc must be an integer >= 2"):
        uqx.validate(uqx.from_arrays(_frame()["E"], _frame()["uE"]),
                     copies=uqx.Copies(extrapolation_n_mc=0))


# ------------------------------------------------------- 8. empty equal-width bins


def test_empty_equal_width_bin_is_named_as_the_cause(tmp_path, capsys):
    rng = np.random.default_rng(1)
    u = rng.choice([0.5, 0.6, 2.0], 1200)
    ds = uqx.from_arrays(u * rng.standard_normal(u.size), u, name="tied")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = uqx.validate(ds, ["zms", "ence", "zmse"], bootstrap=100, copies=100,
                           binning=uqx.Binning(scheme="equal-width", bins=10),
                           conditional=False, compute=uqx.Compute(seed=1))
    assert not [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    for stat in ("ence", "zmse"):
        why = res["verdict_reason"].sel(set="tied", stat=stat).item()
        assert "no usable copy" not in why
        assert "equal-width bins on uE hold no point" in why
        assert "fewer bins" in why and "equal-count" in why


# ---------------------------------------------------------------- 9. --ties file-order


def test_file_order_equals_content_order_without_ties():
    rng = np.random.default_rng(7)
    M = 900
    u = rng.uniform(0.5, 2.0, M)  # no ties
    E, X = u * rng.standard_normal(M), rng.uniform(0.0, 1.0, M)
    kw = dict(bootstrap=100, copies=uqx.Copies(n_mc=100, extrapolation_n_mc=20),
              conditional=uqx.Conditional(cond_n_boot=50), compute=uqx.Compute(seed=3))
    ds = uqx.from_arrays(E, u, X=X, name="d")
    a = uqx.validate(ds, binning=uqx.Binning(ties="content"), **kw)
    b = uqx.validate(ds, binning=uqx.Binning(ties="file-order"), **kw)
    assert set(a.data_vars) == set(b.data_vars)
    for k in a.data_vars:
        x, y = a[k].values, b[k].values
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(x, y, err_msg=k)
        else:
            assert (x == y).all(), k
    zms = lambda r: r[["ci_low", "ci_high"]].sel(stat="zms")  # noqa: E731
    shuffled = rng.permutation(M)  # file-order of another row order: the same too
    c = uqx.validate(uqx.from_arrays(E[shuffled], u[shuffled], X=X[shuffled], name="d"),
                     binning=uqx.Binning(ties="file-order"), **kw)
    xr.testing.assert_equal(zms(c), zms(b))  # values and coordinates, bit for bit


# ------------------------------------------------------- 10. --nu per study, per scenario


def test_sweep_pval_accepts_nu_ig_2_and_keeps_t_ranges(tmp_path, capsys):
    out = tmp_path / "pval.nc"
    rc, _, err = _run(capsys, ["sweep", "pval", "--scenario", "NIG", "--nu", "2",
                               "--n-datasets", "2", "--M", "100", "--n-boot", "10",
                               "-o", out, "-q"])
    assert rc == 0, err
    assert "unit-variance Student t" not in err and out.is_file()
    rc, _, err = _run(capsys, ["sweep", "pval", "--scenario", "TIG", "--nu", "2",
                               "--n-datasets", "2", "--M", "100", "--n-boot", "10",
                               "-o", out, "-q"])
    assert rc == 2 and "--nu must be > 2 for TIG" in err
    rc, _, err = _run(capsys, ["sweep", "appendix-b", "--nu", "0", "-o", out])
    assert rc == 2 and "--nu must be > 0" in err
    rc, _, err = _run(capsys, ["validate", "Set1", "--nu", "2"])
    assert rc == 2 and "--nu must be > 2" in err


# ------------------------------------------------------------ 11. the docs test in CI


def test_make_test_installs_the_docs_extras_first(tmp_path):
    make = shutil.which("make")
    if make is None:
        pytest.skip("no make here")
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    plan = subprocess.run([make, "-n", "test"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout.splitlines()
    pytest_line = next(i for i, line in enumerate(plan) if "-m pytest" in line)
    installs = [line for line in plan[:pytest_line] if "pip install" in line]
    extras = {e for line in installs for m in re.findall(r'"\.\[([^]]*)\]"', line)
              for e in m.split(",")}
    assert {"test", "docs", "parquet"} <= extras, installs
    assert "UQX_REQUIRE_EXTRAS=1" in plan[pytest_line]
    plan = subprocess.run([make, "-n", "demo"], cwd=tmp_path, capture_output=True,
                          text=True, check=True).stdout
    assert "docs" not in plan  # the demo stays light


# ------------------------------------------------------------ 12. data-directory error


def test_missing_data_directory_names_each_folder_once(monkeypatch, tmp_path):
    from uqx.dataio import datasets as D

    monkeypatch.delenv("UQX_DATA_DIR", raising=False)
    checkout = Path(D.__file__).resolve().parents[2]
    if (checkout / "data" / "PAL2022").is_dir():
        pytest.skip("the checkout holds the data")
    monkeypatch.chdir(checkout)  # cwd/data is the checkout's data/
    with pytest.raises(InputError) as exc:
        D.data_dir()
    folder = str(checkout / "data")
    assert str(exc.value).count(folder) == 1, str(exc.value)


# ------------------------------------------------------------ 13. Parquet input


def _need(module):
    """Import an optional extra: skip where it is missing, fail under make test."""
    if os.environ.get("UQX_REQUIRE_EXTRAS"):  # make test installs the extras
        return __import__(module)
    return pytest.importorskip(module)


def test_parquet_input(tmp_path, capsys):
    from uqx.dataio.frames import read_parquet

    _need("pyarrow")
    df = _frame()
    df.loc[3, "E"] = None
    df = df.astype({"E": "Float64"})  # a nullable column: pd.NA is a missing value
    path = tmp_path / "preds.parquet"
    df.to_parquet(path)
    with pytest.raises(InputError, match=r"1 value\(s\) of E"):
        read_parquet(path)
    ds = read_parquet(path, X="X", drop_nonfinite=True)
    assert ds.sizes["sample"] == 299 and ds.attrs["n_dropped"] == 1
    rc, _, err = _run(capsys, ["stats", path, "--drop-nonfinite"])
    assert rc == 0, err


def test_parquet_without_pyarrow_names_the_extra(tmp_path, capsys, monkeypatch):
    path = tmp_path / "preds.parquet"
    path.write_bytes(b"PAR1")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    rc, _, err = _run(capsys, ["stats", path])
    assert rc == 2 and "pyarrow" in err and "uqx[parquet]" in err
    rc, _, err = _run(capsys, ["stats", tmp_path / "none.parquet"])
    assert rc == 2 and "file not found" in err
