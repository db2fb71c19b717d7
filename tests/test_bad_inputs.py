"""Bad, odd and degenerate inputs: a clean error or a said consequence.

Every case here was once a traceback, a silent wrong result or a misleading message.
The last part is a new user's trial of odd inputs across every command
and the API, as a table: input -> the clean error (substring) or the expected behaviour.
"""

from __future__ import annotations

import shlex
import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import uqx
from uqx.cli.app import main
from uqx.engine.copies import cc_fixed_u
from uqx.errors import InputError
from uqx.text.summary import summary_text

FAST = dict(bootstrap=100, copies=50, compute=uqx.Compute(seed=1))
CLI_FAST = "--n-boot 100 --n-mc 50 --seed 1"


def _calibrated(M=300, seed=1, const_u=False, const_x=False):
    rng = np.random.default_rng(seed)
    u = np.full(M, 0.5) if const_u else rng.uniform(0.2, 2.0, M)
    E = u * rng.standard_normal(M)
    X = np.full(M, 3.0) if const_x else rng.uniform(0.0, 1.0, M)
    return E, u, X


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad_inputs")
    E, u, X = _calibrated()

    def csv(name, frame, **kw):
        frame.to_csv(d / name, index=False, **kw)

    csv("ok.csv", pd.DataFrame({"E": E, "uE": u, "X": X}))
    csv("small300.csv", pd.DataFrame({"E": E, "uE": u}))
    csv("ten.csv", pd.DataFrame({"E": E[:10], "uE": u[:10]}))
    csv("two.csv", pd.DataFrame({"E": E[:2], "uE": u[:2]}))
    csv("three.csv", pd.DataFrame({"E": E[:3], "uE": u[:3]}))
    Ec, uc, _ = _calibrated(const_u=True)
    csv("constu.csv", pd.DataFrame({"E": Ec, "uE": uc}))
    csv("semi.csv", pd.DataFrame({"E": E, "uE": u, "X": X}), sep=";")
    csv("tab.csv", pd.DataFrame({"E": E, "uE": u, "X": X}), sep="\t")
    csv("neg.csv", pd.DataFrame({"E": E, "uE": -u}))
    csv("zeroE.csv", pd.DataFrame({"E": np.zeros(300), "uE": u}))
    csv("huge.csv", pd.DataFrame({"E": E * 1e200, "uE": u * 1e200}))
    csv("tiny.csv", pd.DataFrame({"E": E * 1e-200, "uE": u * 1e-200}))
    csv("strx.csv", pd.DataFrame({"E": E, "uE": u, "X": ["a"] * 300}))
    csv("boolu.csv", pd.DataFrame({"E": [1.0, 2.0, 3.0], "uE": [True, False, True]}))
    (d / "empty.csv").write_text("")
    (d / "header.csv").write_text("E,uE\n")
    (d / "one.csv").write_text("E,uE\n0.1,0.2\n")
    (d / "text.csv").write_text("E,uE\na,b\nc,d\n")
    (d / "bin.csv").write_bytes(bytes(range(256)) * 10)
    (d / "dup.csv").write_text("E,E,uE\n1,2,3\n4,5,6\n")
    (d / "nan.csv").write_text("E,uE\n1,2\nnan,1\n3,4\n")
    (d / "inf.csv").write_text("E,uE\n1,2\ninf,1\n3,4\n")
    (d / "decimal_comma.csv").write_text("E;uE\n1,5;2,0\n0,3;1,0\n0,2;0,5\n")
    (d / "ragged.csv").write_text("E,uE\n1,2\n3\n4,5,6\n")
    (d / "spaces.csv").write_text(" E , uE \n1,2\n3,4\n0.5,1\n")
    (d / "notcsv.nc").write_text("hello")
    res = uqx.validate(uqx.from_arrays(E, u, name="ok"), "zms", conditional=False, **FAST)
    uqx.to_netcdf(res, d / "res.nc")
    return d


def cli(capsys, monkeypatch, where, command):
    """Run ``uqx COMMAND`` in ``where``; return (status, stdout, stderr)."""
    monkeypatch.chdir(where)
    try:
        rc = main(shlex.split(command))
    except SystemExit as exc:  # argparse errors
        rc = exc.code
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, out, err


# ------------------------------------------------------------------ item 1: constant uE, X


def test_cc_of_constant_u_is_nan_not_zero_division():
    ae = np.abs(np.random.default_rng(0).standard_normal((3, 50)))
    ru = np.zeros(50)  # centred ranks of a constant u
    assert np.isnan(cc_fixed_u(ae, ru)).all()


def test_constant_uE_default_statistics_run(files):
    E, u, _ = _calibrated(const_u=True)
    res = uqx.validate(uqx.from_arrays(E, u), **FAST)  # was ZeroDivisionError
    assert np.isnan(res["estimate"].sel(stat="cc").item())
    assert res["verdict"].sel(stat="zms").item() != "not tested"  # average calibration


def test_constant_uE_consistency_not_tested():
    E, u, _ = _calibrated(const_u=True)
    res = uqx.validate(uqx.from_arrays(E, u), ["zms", "rce", "ence", "cc", "zmse"], **FAST)
    for st in ("ence", "cc", "zmse"):
        assert res["verdict"].sel(stat=st).item() == "not tested"
        assert "uE is constant" in res["verdict_reason"].sel(stat=st).item()
    assert res["question_verdict"].sel(question="consistency").item() == "not tested"
    assert "uE is constant" in res["question_reason"].sel(question="consistency").item()
    assert "consistency not tested" in res["set_warnings"].item()


def test_constant_X_adaptivity_not_tested():
    E, u, X = _calibrated(const_x=True)
    res = uqx.validate(uqx.from_arrays(E, u, X=X), ["zms", "ence", "ence_X"], **FAST)
    assert res["verdict"].sel(stat="ence_X").item() == "not tested"
    assert res["question_verdict"].sel(question="adaptivity_X").item() == "not tested"
    assert "X is constant" in res["question_reason"].sel(question="adaptivity_X").item()
    assert res["question_verdict"].sel(question="consistency").item() != "not tested"


# ------------------------------------------------------------------ item 2: scale


SCALE_FREE = ["zms", "rce", "cc", "ence", "zmse", "zve", "mean_z", "var_z"]


@pytest.fixture(scope="module")
def unscaled():
    E, u, _ = _calibrated(M=400, seed=3)
    return E, u, uqx.validate(uqx.from_arrays(E, u), SCALE_FREE, conditional=False, **FAST)


@pytest.mark.parametrize("c", [2.0**-470, 1e-140, 3.7e-77, 1e-8, 3.0, 1e50, 1e140, 2.0**470])
def test_scale_of_E_and_uE_changes_nothing(unscaled, c):
    E, u, base = unscaled
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no raw numpy overflow/underflow warnings
        res = uqx.validate(uqx.from_arrays(c * E, c * u), SCALE_FREE, conditional=False, **FAST)
    np.testing.assert_allclose(res["estimate"].values, base["estimate"].values, rtol=1e-12)
    assert res["verdict"].values.tolist() == base["verdict"].values.tolist()


@pytest.mark.parametrize("c", [1e300, 1e-300, 2.0**-1000, 1e160, 1e-160])
def test_scale_beyond_float64_squares_is_refused(c):
    E, u, _ = _calibrated()
    with pytest.raises(InputError, match=r"out of the range.*power of two such as 2\*\*"):
        uqx.from_arrays(c * E, c * u)


def test_one_tiny_uE_is_refused_not_inf():
    E, u, _ = _calibrated()
    u = u.copy()
    u[0] = 1e-300  # was ZMS = inf with consistency 'valid'
    with pytest.raises(InputError, match="uE down to 1e-300"):
        uqx.from_arrays(E, u)


def test_scale_checked_on_dask_columns_in_the_same_pass():
    import dask
    import dask.array as da

    E, u, _ = _calibrated()
    lazy = xr.Dataset({"E": ("sample", da.from_array(E * 1e200, chunks=50)),
                       "uE": ("sample", da.from_array(u * 1e200, chunks=50))})
    with pytest.raises(InputError, match="power of two such as 2\\*\\*-6"):
        uqx.compute(lazy, ["zms"])
    calls = []

    class Count(dask.callbacks.Callback):
        def _start(self, dsk):
            calls.append(1)

    ok = xr.Dataset({"E": ("sample", da.from_array(E, chunks=50)),
                     "uE": ("sample", da.from_array(u, chunks=50))})
    from uqx.dataio.model import as_stacked

    with Count():
        as_stacked(ok)
    assert len(calls) == 1  # counts and extremes in one compute


def test_values_spanning_more_than_float64_say_so():
    E, u, _ = _calibrated()
    u = u.copy()
    u[0] = 1e-300
    with pytest.raises(InputError, match="more than any one unit can hold"):
        uqx.from_arrays(E, u)


def test_overflowing_range_of_X_is_refused():
    E, u, _ = _calibrated(M=4)
    with pytest.raises(InputError, match="range of X .* overflows"):
        uqx.from_arrays(E, u, X=[-1e308, 1e308, 0.0, 1.0])


def test_absurd_z_scores_are_refused():
    E, u, _ = _calibrated()
    with pytest.raises(InputError, match=r"\|Z\| = \|E\|/uE reaches"):
        uqx.from_arrays(E * 1e140, u * 1e-140)


# ------------------------------------------------------------------ item 3: bins


def test_single_bin_consistency_not_tested(files):
    ds = uqx.read_csv(files / "small300.csv")
    res = uqx.validate(ds, ["zms", "ence"], binning=uqx.Binning(pop_min=200), **FAST)
    assert int(res["n_bins_used"].item()) == 1
    assert res["verdict"].sel(stat="ence").item() == "not tested"
    assert "single bin" in res["verdict_reason"].sel(stat="ence").item()
    assert res["question_verdict"].sel(question="consistency").item() == "not tested"


@pytest.mark.parametrize("M, kw, cause", [(30, {}, "at least 30 points per bin"),
                                           (600, {"binning": 1}, "bins = 1 asked for")])
def test_single_bin_on_x_leaves_adaptivity_untested_too(M, kw, cause):
    # one bin on X measures average calibration: adaptivity is not tested (not `valid`
    # from one bin), and the summary says so for both questions
    rng = np.random.default_rng(4)
    u = rng.uniform(0.3, 2.0, M)
    ds = uqx.from_arrays(u * rng.standard_normal(M), u, X=rng.uniform(0, 1, M))
    res = uqx.validate(ds, bootstrap=100, copies=100, conditional=False,
                       compute=uqx.Compute(seed=1), **kw)
    for q in ("consistency", "adaptivity_X"):
        assert res["question_verdict"].sel(question=q).item() == "not tested"
        why = res["question_reason"].sel(question=q).item()
        assert "a single bin on" in why and cause in why
    assert res["verdict"].sel(stat="zms_scan_X").item() == "not tested"
    text = " ".join(summary_text(res, width=None).split())
    assert "Consistency not tested: a single bin on uE" in text
    assert "Adaptivity (X) not tested: a single bin on X" in text


def test_equal_width_bins_below_pop_min_are_said(files):
    ds = uqx.read_csv(files / "small300.csv")
    res = uqx.validate(ds, ["ence"], binning=uqx.Binning(scheme="equal-width"),
                       conditional=False, **FAST)
    assert "equal-width bins on uE do not keep pop_min = 30" in res["set_warnings"].item()


def test_more_bins_than_points_allow_is_said(files):
    res = uqx.validate(uqx.read_csv(files / "small300.csv"), ["ence"], binning=400,
                       conditional=False, **FAST)
    assert "400 bins requested, 10 used" in res["set_warnings"].item()


@pytest.mark.filterwarnings("error::RuntimeWarning")  # 10 rows, bins of 2: no numpy noise
def test_pop_min_message_names_the_given_value(files, capsys, monkeypatch):
    rc, out, err = cli(capsys, monkeypatch, files,
                       f"validate ten.csv {CLI_FAST} --pop-min 2 --no-conditional")
    assert "--pop-min=30" not in err


# ------------------------------------------------------------------ item 4: ignored options


@pytest.mark.parametrize("command, needle", [
    (f"validate ok.csv {CLI_FAST} --no-conditional --cond-bins 5 --cond-ci cho",
     "--cond-bins, --cond-ci set(s) up the conditional routes, which --no-conditional skips"),
    (f"validate ok.csv {CLI_FAST} --no-conditional --extrapolation-n-mc 10",
     "--extrapolation-n-mc"),
    ("report res.nc -o r.html --n-boot 5 --stats zms --bins 3",
     "--stats, --n-boot, --bins set(s) up a validation, but res.nc is a saved result"),
    (f"validate ok.csv {CLI_FAST} --no-cond --cond-b 5", "--cond-bins set(s) up"),
    ("report res.nc -o r.html --n-b 5", "--n-boot set(s) up a validation"),
    ("validate ok.csv --stats ''", "--stats is empty"),
    ("validate ok.csv --stats=,", "--stats is empty"),
    ("validate ok.csv --stats zms,,rce", "empty name between commas"),
])
def test_options_that_cannot_apply_are_errors(files, capsys, monkeypatch, command, needle):
    rc, out, err = cli(capsys, monkeypatch, files, command)
    assert rc == 2 and err.startswith("uqx: error: ") and needle in err, err


# ------------------------------------------------------------------ item 5: small sizes


def test_stats_of_two_rows_says_so(files, capsys, monkeypatch):
    rc, out, err = cli(capsys, monkeypatch, files, "stats two.csv")
    assert rc == 0
    assert "only M = 2 rows: tailedness (beta_GM, kappa_CS), CC" in err


def test_fit_of_three_rows_says_so(files):
    ds = uqx.read_csv(files / "three.csv")
    from uqx.inference.fits import fit_sets

    with pytest.warns(UserWarning, match="only M = 3 rows: distribution fits are not "
                      "meaningful"):
        res = fit_sets(ds)
    assert "M = 3" in res.attrs["notes"]


def test_stats_and_fits_of_constant_uE_say_so(files, capsys, monkeypatch):
    rc, out, err = cli(capsys, monkeypatch, files, "stats constu.csv")
    assert rc == 0 and "uE is constant" in err and "CC is undefined" in err
    from uqx.inference.fits import fit_sets

    with pytest.warns(UserWarning, match="uE is constant.*fits of u\\^2"):
        fit_sets(uqx.read_csv(files / "constu.csv"))


def test_tiny_bootstrap_and_mc_counts_say_so(files, capsys, monkeypatch):
    rc, out, err = cli(capsys, monkeypatch, files,
                       "validate small300.csv --n-boot 2 --n-mc 2 --stats zms --seed 1 "
                       "--no-conditional")
    assert rc == 0
    assert "uqx: warning: settings too small" in err
    assert "--n-boot 2 < 100" in err and "--n-mc 2 < 50" in err


# ------------------------------------------------------------------ item 6: option values


@pytest.mark.parametrize("command, needle", [
    ("stats ok.csv --E uE --uE uE", "--E and --uE name the same column 'uE'"),
    ("stats ok.csv --min-uE-rel-sd -1", "--min-uE-rel-sd must be a relative threshold >= 0"),
    ("stats ok.csv --min-uE-rel-sd nan", "--min-uE-rel-sd must be"),
    ("sweep compare res.nc res.nc --threshold -1", "--threshold must be a |z| threshold"),
    ("sweep compare res.nc res.nc --threshold nan", "--threshold must be"),
    ("plot confidence ok.csv -o p.png --levels 0.5,1.5", "strictly between 0 and 1"),
    ("plot e-vs-u ok.csv -o p.png --dpi 0", "--dpi must be between 20 and 1200"),
    ("plot e-vs-u ok.csv -o p.png --dpi 1", "--dpi must be between 20 and 1200"),
    ("plot e-vs-u ok.csv -o p.png --dpi 100000", "--dpi must be between 20 and 1200"),
    ("plot e-vs-u ok.csv -o p.png --font-size 0", "--font-size must be between 4 and 72"),
    ("plot e-vs-u ok.csv -o p.png --font-size -3", "--font-size must be between 4 and 72"),
    ("report ok.csv -o r.html --dpi 0", "--dpi must be"),
])
def test_option_values_out_of_range_are_refused(files, capsys, monkeypatch, command, needle):
    rc, out, err = cli(capsys, monkeypatch, files, command)
    assert rc == 2 and err.startswith("uqx: error: ") and needle in err, err


# ------------------------------------------------------------------ item 11: API forms


def test_complex_and_boolean_columns_are_refused():
    E, u, _ = _calibrated()
    with pytest.raises(InputError, match="'E' is not numeric: complex"):
        uqx.from_arrays(E + 1j, u)
    with pytest.raises(InputError, match="'uE' is not numeric: boolean"):
        uqx.from_arrays(E, u > 0)


def test_missing_by_label_is_refused_not_nan():
    E, u, _ = _calibrated(M=200)
    df = pd.DataFrame({"E": E, "uE": u, "g": [None, "a"] * 100})
    with pytest.raises(InputError, match="column 'g' \\(by=\\) has 100 missing label"):
        uqx.from_dataframe(df, by="g")


def test_series_are_paired_by_index():
    E, u, _ = _calibrated(M=50)
    sE, su = pd.Series(E), pd.Series(u)
    rev = uqx.from_arrays(sE, su[::-1])  # same labels, reversed: paired by label
    np.testing.assert_array_equal(rev["uE"].values, u)
    np.testing.assert_array_equal(rev["E"].values, E)
    with pytest.raises(InputError, match="different indexes"):
        uqx.from_arrays(sE, pd.Series(u, index=np.arange(50) + 5))


def test_labelled_dataarrays_are_paired_by_label():
    E, u = np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 4.0])
    a = xr.DataArray(E, dims="i", coords={"i": [0, 1, 2]})
    b = xr.DataArray(u[::-1], dims="i", coords={"i": [2, 1, 0]})
    assert uqx.from_arrays(a, b)["uE"].values.tolist() == u.tolist()
    with pytest.raises(InputError, match="different indexes"):
        uqx.from_arrays(a, xr.DataArray(u, dims="i", coords={"i": [5, 6, 7]}))


def test_unnamed_extra_dimension_is_said():
    E, u, _ = _calibrated(M=50)
    ds = xr.Dataset({"E": (("run", "sample"), np.stack([E, E])),
                     "uE": (("run", "sample"), np.stack([u, u]))})
    with pytest.warns(UserWarning, match="dimension 'run' of E is taken as the set "
                      "dimension"):
        uqx.compute(ds, ["zms"])
    named = uqx.stack([uqx.from_arrays(E, u, name="a"), uqx.from_arrays(E, u, name="b")],
                      dim="run")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # made by uqx.stack(dim=...): no warning
        uqx.compute(named, ["zms"])


# ------------------------------------------------------------------ tracebacks -> errors


@pytest.fixture(scope="module")
def small():
    E, u, _ = _calibrated(M=200)
    return uqx.from_arrays(E, u, name="a")


@pytest.mark.parametrize("stats, needle", [
    ([], "empty list"), (None, "got None"), ("", "empty string"), ([1], "must be strings"),
])
def test_validate_stats_argument(small, stats, needle):
    with pytest.raises(InputError, match=needle):
        uqx.validate(small, stats, **FAST)


def test_tables_of_input_data_say_to_validate_first(small):
    for f in (uqx.result_table, uqx.verdict_table, uqx.result_dataframe, uqx.result_records):
        with pytest.raises(InputError, match="this is input data.*validate it first"):
            f(small)
    with pytest.raises(InputError, match="verdict_table: this is input data"):
        small.uqx.verdicts()


def test_table_of_sweep_archive_is_named():
    archive = xr.Dataset({"p": ("cell", [0.1, 0.2])}, attrs={"study": "pval"})
    with pytest.raises(InputError, match="sweep archive \\(study 'pval'\\)"):
        uqx.result_table(archive)


def test_all_zero_errors_are_refused():
    with pytest.raises(InputError, match="all errors E are 0"):
        uqx.from_arrays(np.zeros(50), np.ones(50))


def test_dataframe_given_to_validate_points_to_from_dataframe():
    df = pd.DataFrame({"E": [0.1, 0.2, -0.1], "uE": [1.0, 1.0, 1.0]})
    with pytest.raises(InputError, match="uqx.from_dataframe"):
        uqx.validate(df)


def test_result_given_as_input_points_to_read_netcdf(files):
    res = uqx.read_netcdf(files / "res.nc")
    with pytest.raises(InputError, match="this is a result of uqx.*uqx.read_netcdf"):
        uqx.validate(res, "zms", **FAST)


@pytest.mark.parametrize("name, sep", [("semi.csv", ";"), ("tab.csv", "\t")])
def test_semicolon_and_tab_files_are_read(files, name, sep):
    ds = uqx.read_csv(files / name, X="X")
    ref = uqx.read_csv(files / "ok.csv", X="X")
    np.testing.assert_allclose(ds["E"].values, ref["E"].values)
    assert ds.attrs["delimiter"] == sep and "separated file" in ds.attrs["columns"]
    assert "delimiter" not in ref.attrs


# ------------------------------------------------------------------ a new user's trial

# (command, expected exit status, expected substring of stderr): every one ends cleanly
CLI_TRIAL = [
    ("stats empty.csv", 2, "file is empty"),
    ("stats header.csv", 2, "no data rows (header only)"),
    ("stats one.csv", 2, "at least 2 points are needed, got 1"),
    ("stats text.csv", 2, "column 'E' is not numeric: 2 non-numeric value(s), first 'a'"),
    ("stats bin.csv", 2, "not a text CSV file"),
    ("stats dup.csv", 2, "duplicate column name(s) 'E'"),
    ("stats nan.csv", 2, "are NaN or infinite; clean the data or drop"),
    ("stats inf.csv", 2, "are NaN or infinite"),
    ("stats nan.csv --drop-nonfinite", 0, "only M = 2 rows"),
    ("stats decimal_comma.csv", 0, "numbers with a decimal comma"),  # read, noted
    ("stats decimal_comma.csv --decimal .", 2, "it looks like a decimal comma"),
    ("stats ragged.csv", 2, "cannot parse as CSV"),
    ("stats spaces.csv", 0, "only M = 3 rows"),
    ("stats strx.csv --X X", 2, "column 'X' is not numeric"),
    ("stats huge.csv", 2, "out of the range uqx computes in"),
    ("stats tiny.csv", 2, "uE down to"),
    ("stats zeroE.csv", 2, "all errors E are 0"),
    ("stats neg.csv", 2, "are <= 0; uncertainties must be strictly positive"),
    ("stats neg.csv --min-uE-rel-sd 1e-6", 2, "at least 2 points are needed, got 0"),
    ("stats ok.csv --E nope", 2, "no column 'nope' for E (name the column that holds E "
     "with E='<column>', on the command line --E <column>); available columns: 'E', 'uE', "
     "'X'"),
    ("stats ok.csv --X nope", 2, "no column 'nope'"),
    ("stats missing.csv", 2, "missing.csv: file not found"),
    ("stats .", 2, "is a directory, expected a CSV file"),
    ("stats semi.csv --X X", 0, ""),
    ("stats boolu.csv", 2, "column 'uE' is boolean"),
    ("stats notcsv.nc", 2, "cannot read as NetCDF"),
    ("stats ok.csv --bins 0", 2, "--bins must be an integer >= 1, got 0"),
    ("stats ok.csv --bins -5", 2, "--bins must be an integer >= 1"),
    ("stats ok.csv --min-uE-rel-sd inf", 2, "--min-uE-rel-sd must be"),
    ("stats ok.csv --binning foo", 2, "invalid choice: 'foo'"),
    ("stats res.nc", 2, "saved uqx result"),
    (f"validate ok.csv {CLI_FAST} --stats foo", 2, "unknown statistic 'foo'"),
    (f"validate ok.csv {CLI_FAST} --stats zms,zms", 2, "duplicate statistics"),
    (f"validate ok.csv {CLI_FAST} --stats lzisd", 2, "per-bin statistics are part of"),
    (f"validate ok.csv {CLI_FAST} --nu 2", 2, "nu > 2"),
    (f"validate ok.csv {CLI_FAST} --nu nan", 2, "--nu must be > 2"),
    (f"validate ok.csv {CLI_FAST} --pop-min 0", 2, "--pop-min must be an integer >= 1"),
    (f"validate ok.csv {CLI_FAST} --pop-min 1000", 2, "--pop-min=1000 leaves no bin"),
    (f"validate ok.csv {CLI_FAST} --cond-bins 1", 2, "--cond-bins must be an integer >= 2"),
    (f"validate ok.csv {CLI_FAST} --stats zmse_X", 2, "needs variable 'X'"),
    (f"validate ok.csv {CLI_FAST} --X X --stats zmse_V", 2, "needs variable 'V'"),
    ("validate ok.csv --n-boot 100 --n-mc 50 --seed -1", 2, "seed must be a non-negative"),
    (f"validate ok.csv {CLI_FAST} --ties foo", 2, "invalid choice: 'foo'"),
    (f"validate zeroE.csv {CLI_FAST}", 2, "all errors E are 0"),
    (f"validate ok.csv {CLI_FAST} -o out.txt", 2, "suffix '.txt'"),
    (f"validate ok.csv {CLI_FAST} -o ok.csv", 2, "uqx never writes over its inputs"),
    ("validate ok.csv --n-boot 1", 2, "--n-boot must be an integer >= 2"),
    ("validate ok.csv --n-mc 0", 2, "--n-mc must be an integer >= 2"),
    ("validate", 2, "needs INPUT files/names"),
    ("show ok.csv", 2, "cannot read as NetCDF"),
    ("show missing.nc", 2, "file not found"),
    ("show res.nc", 0, ""),
    ("fit one.csv", 2, "at least 2 points are needed"),
    ("fit zeroE.csv", 2, "all errors E are 0"),
    ("plot e-vs-u ok.csv -o p.png --dpi nan", 2, "--dpi must be"),
    ("plot e-vs-u ok.csv -o p.txt", 2, ".png, .pdf, .svg"),
    ("plot confidence ok.csv -o p.png --levels 0,0.5", 2, "strictly between 0 and 1"),
    ("plot confidence ok.csv -o p.png --levels a", 2, "expected comma-separated numbers"),
    ("plot nope ok.csv -o p.png", 2, "invalid choice: 'nope'"),
    ("report res.nc -o r.html --no-conditional", 2, "is a saved result"),
    ("report ok.csv -o r.pdf", 2, "suffix '.pdf'"),
    ("sweep compare res.nc res.nc --threshold inf", 2, "--threshold must be"),
    ("datasets fetch NOPE", 2, "unknown dataset 'NOPE'"),
    ("demo --n-boot 0", 2, "--n-boot must be an integer >= 2"),
    ("stats", 2, "the following arguments are required: INPUT"),
]


@pytest.mark.parametrize("command, status, needle", CLI_TRIAL,
                         ids=[c[0].replace(CLI_FAST, "F") for c in CLI_TRIAL])
def test_cli_trial(files, capsys, monkeypatch, command, status, needle):
    rc, out, err = cli(capsys, monkeypatch, files, command)
    assert rc == status, (rc, err)
    assert needle in err, err
    if status == 2 and not err.startswith("usage:"):
        assert "error: " in err.splitlines()[0] or "error: " in err


def _api_trial():
    E, u, X = _calibrated(M=200)
    ds = uqx.from_arrays(E, u, name="a")
    return E, u, X, ds


#: (name, call, expected InputError substring)
API_TRIAL = [
    ("2-d E", lambda E, u, X, ds: uqx.from_arrays(np.ones((2, 3)), np.ones((2, 3))),
     "must be one-dimensional"),
    ("text E", lambda E, u, X, ds: uqx.from_arrays("abc", [1, 2, 3]), "is not numeric"),
    ("E None", lambda E, u, X, ds: uqx.from_arrays(None, u), "E is required"),
    ("scalar E", lambda E, u, X, ds: uqx.from_arrays(1.0, 1.0), "must be one-dimensional"),
    ("no rows", lambda E, u, X, ds: uqx.from_arrays([], []), "at least 2 points"),
    ("dict E", lambda E, u, X, ds: uqx.from_arrays({"a": 1}, {"b": 2}), "is not numeric"),
    ("None in object E", lambda E, u, X, ds: uqx.from_arrays(
        np.array([1, None, 2], dtype=object), [1, 1, 1]), "are NaN or infinite"),
    ("datetime E", lambda E, u, X, ds: uqx.from_arrays(
        pd.date_range("2020", periods=3).values, [1, 1, 1]), "dates or time spans"),
    ("timedelta E", lambda E, u, X, ds: uqx.from_arrays(
        np.array([1, 2, 3], dtype="m8[s]"), [1, 1, 1]), "dates or time spans"),
    ("masked E", lambda E, u, X, ds: uqx.from_arrays(
        np.ma.masked_array([1.0, 2.0, 3.0], [0, 1, 0]), [1, 1, 1]), "are NaN or infinite"),
    ("short X", lambda E, u, X, ds: uqx.from_arrays(E, u, X=np.ones(10)), "length mismatch"),
    ("all dropped", lambda E, u, X, ds: uqx.from_arrays(
        [np.nan, np.nan, 1], [1, 1, 1], drop_nonfinite=True), "at least 2 points"),
    ("min_uE_rel_sd text", lambda E, u, X, ds: uqx.from_arrays(E, u, min_uE_rel_sd="x"),
     "min_uE_rel_sd must be a number"),
    ("min_uE_rel_sd < 0", lambda E, u, X, ds: uqx.from_arrays(E, u, min_uE_rel_sd=-1),
     "min_uE_rel_sd must be a finite number >= 0"),
    ("from_dataframe dict", lambda E, u, X, ds: uqx.from_dataframe({"E": E}),
     "expected a pandas DataFrame"),
    ("by and name", lambda E, u, X, ds: uqx.from_dataframe(
        pd.DataFrame({"E": E, "uE": u, "g": 1}), by="g", name="x"), "not both"),
    ("by unknown", lambda E, u, X, ds: uqx.from_dataframe(
        pd.DataFrame({"E": E, "uE": u}), by="g"), "no column 'g' for by="),
    ("by 1 and '1'", lambda E, u, X, ds: uqx.from_dataframe(
        pd.DataFrame({"E": E, "uE": u, "g": [1, "1"] * 100}), by="g"),
     "differ only in type"),
    ("E is uE", lambda E, u, X, ds: uqx.from_dataframe(
        pd.DataFrame({"E": E, "uE": u}), E="uE", uE="uE"), "the same column 'uE'"),
    ("empty frame", lambda E, u, X, ds: uqx.from_dataframe(
        pd.DataFrame({"E": [], "uE": []})), "no data rows"),
    ("read_csv(None)", lambda E, u, X, ds: uqx.read_csv(None), "expected a file name"),
    ("stack []", lambda E, u, X, ds: uqx.stack([]), "no data sets given"),
    ("stack twice", lambda E, u, X, ds: uqx.stack([ds, ds]), "duplicate data set names"),
    ("stack int", lambda E, u, X, ds: uqx.stack([ds, 1]), "expected xarray.Dataset items"),
    ("validate 5", lambda E, u, X, ds: uqx.validate(ds, 5, **FAST),
     "expected a statistic name or a list"),
    ("validate ['']", lambda E, u, X, ds: uqx.validate(ds, [""], **FAST), "empty name"),
    ("n_boot 0", lambda E, u, X, ds: uqx.validate(ds, "zms", bootstrap=0, copies=50),
     "n_boot must be an integer >= 2"),
    ("n_mc '10'", lambda E, u, X, ds: uqx.validate(ds, "zms", bootstrap=100,
                                                  copies=uqx.Copies(n_mc="10")),
     "n_mc must be an integer >= 2"),
    ("level 1.5", lambda E, u, X, ds: uqx.validate(ds, "zms",
                                                   bootstrap=uqx.Bootstrap(100, level=1.5),
                                                   copies=50),
     "level must be in (0, 1)"),
    ("nu 1", lambda E, u, X, ds: uqx.validate(ds, "zms", bootstrap=100,
                                              copies=uqx.Copies(50, nu=1)),
     "nu > 2"),
    ("bins 0", lambda E, u, X, ds: uqx.validate(ds, "ence", binning=0, **FAST),
     "bins must be an integer >= 1"),
    ("binning foo", lambda E, u, X, ds: uqx.validate(ds, "ence", binning=uqx.Binning(scheme="foo"),
                                                     **FAST),
     "unknown binning scheme 'foo'"),
    ("cond_ci foo", lambda E, u, X, ds: uqx.validate(
        ds, "zms", conditional=uqx.Conditional(cond_ci="foo"), **FAST),
     "cond_ci must be"),
    ("ties foo", lambda E, u, X, ds: uqx.validate(ds, "zms", binning=uqx.Binning(ties="foo"),
                                                  **FAST),
     "ties must be one of"),
    ("seed 1.5", lambda E, u, X, ds: uqx.validate(ds, "zms", bootstrap=100, copies=50,
                                                  compute=uqx.Compute(seed=1.5)),
     "seed must be a non-negative integer"),
    ("validate ndarray", lambda E, u, X, ds: uqx.validate(np.c_[E, u]),
     "build one with uqx.from_arrays"),
    ("validate dict", lambda E, u, X, ds: uqx.validate({"E": E, "uE": u}), "got a dict"),
    ("no sample dim", lambda E, u, X, ds: uqx.validate(
        xr.Dataset({"E": ("x", E), "uE": ("x", u)}), "zms", **FAST),
     "rename it with ds.rename({'x': 'sample'})"),
    ("3-d E", lambda E, u, X, ds: uqx.validate(xr.Dataset(
        {"E": (("a", "b", "sample"), np.ones((2, 2, 3))),
         "uE": (("a", "b", "sample"), np.ones((2, 2, 3)))}), "zms", **FAST),
     "must be over ('sample',) or (set, 'sample')"),
    ("text variable", lambda E, u, X, ds: uqx.validate(xr.Dataset(
        {"E": ("sample", np.array(["a", "b"])), "uE": ("sample", [1.0, 1.0])}), "zms", **FAST),
     "variable 'E' is not numeric"),
    ("uE missing", lambda E, u, X, ds: uqx.validate(xr.Dataset({"E": ("sample", E)}), "zms",
                                                    **FAST), "(missing 'uE')"),
    ("compute None", lambda E, u, X, ds: uqx.compute(ds, None), "got None"),
    ("compute foo", lambda E, u, X, ds: uqx.compute(ds, ["foo"]), "unknown statistic 'foo'"),
    ("bootstrap n_boot -1", lambda E, u, X, ds: uqx.bootstrap(ds, ["zms"], n_boot=-1),
     "n_boot must be an integer >= 2"),
    ("result_table None", lambda E, u, X, ds: uqx.result_table(None), "got NoneType"),
    ("conditional_table of input", lambda E, u, X, ds: ds.uqx.conditional_table(),
     "this is input data"),
    ("read_netcdf missing", lambda E, u, X, ds: uqx.read_netcdf("/nonexistent/x.nc"),
     "file not found"),
]


@pytest.mark.parametrize("call, needle", [c[1:] for c in API_TRIAL],
                         ids=[c[0] for c in API_TRIAL])
def test_api_trial(call, needle):
    with pytest.raises(InputError) as info:
        call(*_api_trial())
    assert needle in str(info.value)


def test_api_trial_behaviours():
    """Odd but valid inputs: what they give, said or exact."""
    E, u, X, ds = _api_trial()
    assert uqx.from_arrays(E, u, name=None).attrs["name"] == "data"
    assert uqx.from_arrays(["1", "2"], ["1", "2"])["E"].values.tolist() == [1.0, 2.0]
    small = uqx.from_arrays(np.array([1, -2, 3], np.int8), np.array([1, 1, 1], np.uint8))
    assert small["E"].dtype == np.float64
    assert uqx.from_dataframe(pd.DataFrame(np.c_[E, u]), E=0, uE=1).sizes["sample"] == 200
    res = uqx.validate(ds, "zms,rce", conditional=False, **FAST)  # a comma list
    assert res["stat"].values.tolist() == ["zms", "rce"]
    assert uqx.compute(ds, "zms").shape == (1, 1)  # one name, not its letters


def test_saved_result_opened_as_input_points_to_read_netcdf(tmp_path):
    rng = np.random.default_rng(2)
    u = rng.uniform(0.5, 2, 300)
    res = uqx.validate(uqx.from_arrays(u * rng.standard_normal(300), u, name="r"), ["zms"],
                       bootstrap=100, copies=50, conditional=False, compute=uqx.Compute(seed=1))
    path = tmp_path / "res.nc"
    uqx.to_netcdf(res, path)
    with pytest.raises(uqx.InputError, match="saved uqx result.*read_netcdf"):
        uqx.open_dataset(path)


def test_api_validate_warns_of_too_small_settings_and_sets():
    rng = np.random.default_rng(3)
    u = rng.uniform(0.5, 2, 20)
    res = uqx.validate(uqx.from_arrays(u * rng.standard_normal(20), u, name="tiny"),
                       ["zms"], bootstrap=20, copies=20, conditional=False,
                       compute=uqx.Compute(seed=1))
    warn = res["set_warnings"].item()
    assert "n-boot" in warn or "n_boot" in warn
    assert "M = 20" in warn


@pytest.mark.parametrize("nu", [2, 2.0, 1.5, float("nan"), None, "six", [6.0, 2.0]])
def test_one_check_of_the_students_nu(nu):
    """nu > 2 is checked in one place, for the generators, the quantiles and
    the simulated references alike."""
    from uqx.engine.generators import check_student_nu, draw
    from uqx.engine.unit_variance import unit_quantile

    with pytest.raises(InputError, match=r"needs nu > 2, got"):
        check_student_nu(nu)
    if np.ndim(nu) == 0 and not isinstance(nu, str) and nu is not None:
        with pytest.raises(InputError, match=r"needs nu > 2"):
            unit_quantile(0.5, dist="t", nu=nu)
        with pytest.raises(InputError, match=r"needs nu > 2"):
            draw(np.random.SeedSequence(1), 10, "t", nu=nu)
    check_student_nu(2.0001)
    check_student_nu(np.array([3.0, 6.0]))


@pytest.mark.parametrize("name", ["n_boot", "n_mc", "bins", "pop_min", "cond_bins",
                                  "cond_n_boot", "extrapolation_n_mc"])
def test_settings_check_their_fields_once_for_the_api_and_the_cli(name):
    """One rule per setting: Settings refuses a value below its minimum, and
    the command line refuses the same value with the same minimum."""
    from uqx.cli.commands._option_checks import OPTION_MINIMA
    from uqx.engine.defaults import INTEGER_MINIMA
    from uqx.workflow.settings import Settings

    low = INTEGER_MINIMA[name]
    assert OPTION_MINIMA[name] == low
    with pytest.raises(InputError, match=rf"^{name} must be an integer >= {low}, got"):
        Settings(seed=1, **{name: low - 1})
    with pytest.raises(InputError, match=rf"^{name} must be an integer >= {low}"):
        Settings(seed=1, **{name: float(low)})  # an integer, not a float
    Settings(seed=1, **{name: low})


def test_arrays_enter_by_one_door():
    """uqx.bootstrap_set reads its arrays as uqx.from_arrays does: E or uE of
    None is named, and pandas Series are aligned on their index, not taken by position."""
    import pandas as pd

    rng = np.random.default_rng(5)
    u = rng.uniform(0.5, 2.0, 300)
    E = u * rng.standard_normal(300)
    for bad in ({"E": None, "uE": u}, {"E": E, "uE": None}):
        with pytest.raises(InputError, match=r"is required \(got None\)"):
            uqx.bootstrap_set(bad["E"], bad["uE"], ["zms"], n_boot=50, seed=1)
        with pytest.raises(InputError, match=r"is required \(got None\)"):
            uqx.from_arrays(bad["E"], bad["uE"])
    idx = np.arange(300)
    shuffled = rng.permutation(idx)
    sE = pd.Series(E, index=idx)
    su = pd.Series(u, index=idx).loc[shuffled]  # the same pairs, another row order
    a = uqx.bootstrap_set(sE, su, ["zms"], n_boot=200, seed=1)
    b = uqx.bootstrap_set(E, u, ["zms"], n_boot=200, seed=1)
    assert a["zms"]["estimate"] == pytest.approx(b["zms"]["estimate"], rel=1e-12)
