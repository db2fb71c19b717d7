"""Odd inputs: tiny sets, shifted headers, duplicated rows, huge --n-mc, damaged files.

Each case was a traceback or a silent wrong answer: here it is a clear error naming the
problem (and what to do), a warning that counts what it saw, or the right answer.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import uqx
from uqx.cli.app import main

CLI_FAST = ["--n-boot", "100", "--n-mc", "1000", "--seed", "1", "-q"]


def _frame(M, seed=1):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    return pd.DataFrame({"E": u * rng.standard_normal(M), "uE": u,
                         "X": rng.uniform(0.0, 1.0, M)})


@pytest.mark.parametrize("M, pop_min", [(5, 2), (2, 1)])
def test_tiny_sets_following_the_pop_min_advice_give_an_answer(tmp_path, capsys, M, pop_min):
    """M = 5 with --pop-min 2 (and M = 2 with --pop-min 1): the resolutions of a set whose
    statistics are undefined on some copies used to fail on arrays of unequal lengths."""
    path = tmp_path / f"M{M}.csv"
    _frame(M).to_csv(path, index=False)
    status = main(["validate", str(path), "--X", "X", "--pop-min", str(pop_min),
                   *CLI_FAST])
    out = capsys.readouterr().out
    assert status == 0
    assert f"M = {M}" in out and "average" in out


@pytest.mark.parametrize("n_mc", [10**7, 10**9])
def test_n_mc_beyond_the_memory_limit_is_refused_before_computing(tmp_path, capsys, n_mc):
    """--n-mc 1e9 asked numpy for 268 GiB; 1e7 held 2.7 GiB in one array and more in the
    copies' per-bin sums. The run is refused, naming the limit and the option."""
    from uqx.workflow.settings import Settings

    path = tmp_path / "d.csv"
    _frame(200).to_csv(path, index=False)
    if n_mc == 10**9:  # above any machine's memory
        assert main(["validate", str(path), "--n-mc", str(n_mc), "-q"]) == 2
        err = capsys.readouterr().err
        assert "--n-mc" in err and "memory limit" in err and "GiB" in err
    s = Settings(seed=1, n_mc=n_mc, n_boot=100)
    with pytest.raises(uqx.InputError, match=r"memory limit of 4 GiB.*lower n_mc"):
        s.check_memory(1, 9, limit=4 * 2**30)
    # the defaults fit, nine sets at once
    Settings(seed=1, n_mc=10_000, n_boot=2000).check_memory(9, 9, limit=4 * 2**30)


def test_a_truncated_block_of_a_sweep_is_named_and_redone_on_resume(tmp_path, capsys):
    """A block torn by a crash (truncated .npz) raised zipfile.BadZipFile on --resume."""
    from uqx.sweeps import appendix_b
    from uqx.sweeps.engine import SweepInterrupted, run_dir_for

    tiny = dict(M=[1500], N=[10, 50], nu=[4], n_mc=300, seed=5)
    out = tmp_path / "r.nc"
    with pytest.raises(SweepInterrupted):
        appendix_b(**tiny, output=out, chunk_size=300, _stop_after=2)
    blocks = sorted(run_dir_for(out).glob("*.npz"))
    assert len(blocks) == 2
    blocks[0].write_bytes(blocks[0].read_bytes()[:40])  # truncated
    with pytest.warns(UserWarning, match=rf"{blocks[0].name}: damaged block.*computed again"):
        got = appendix_b(**tiny, output=out, resume=True)
    fresh = appendix_b(**tiny)
    for v in got.data_vars:
        np.testing.assert_array_equal(got[v].values, fresh[v].values)


def _rows(path, frame, end=""):
    lines = ["E,uE"] + [f"{a!r},{b!r}{end}" for a, b in zip(frame["E"], frame["uE"],
                                                               strict=True)]
    path.write_text("\n".join(lines) + "\n")


def test_a_trailing_delimiter_on_the_data_rows_does_not_shift_the_columns(tmp_path):
    """pandas read the first field as the index: E got uE's values, silently."""
    frame = _frame(300)
    path = tmp_path / "trail.csv"
    _rows(path, frame, end=",")
    with pytest.warns(UserWarning, match="end with a delimiter"):
        ds = uqx.read_csv(path)
    np.testing.assert_allclose(ds["E"].values, frame["E"].values)
    np.testing.assert_allclose(ds["uE"].values, frame["uE"].values)


def test_data_rows_with_an_unnamed_extra_column_are_refused(tmp_path):
    frame = _frame(300)
    path = tmp_path / "extra.csv"
    _rows(path, frame, end=",7")
    with pytest.raises(uqx.InputError, match="one field more than the header"):
        uqx.read_csv(path)


def test_duplicated_rows_are_counted_in_a_warning(tmp_path, capsys):
    """20 rows pasted 100 times read as 2000 independent points, without a word."""
    frame = pd.concat([_frame(20)] * 100, ignore_index=True)
    path = tmp_path / "dup.csv"
    frame.to_csv(path, index=False)
    assert main(["stats", str(path)]) == 0
    err = capsys.readouterr().err
    assert "1980 of 2000 rows repeat an earlier row" in err and "20 distinct" in err
    with pytest.warns(UserWarning, match="1980 of 2000 rows"):
        ds = uqx.from_dataframe(frame, E="E", uE="uE")
    # validated anyway: an answer, and no numpy warning from degenerate jackknife values
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        res = uqx.validate(ds, bootstrap=100, copies=100, compute=uqx.Compute(seed=1))
    assert res["question_verdict"].sel(question="average").item() in (
        "valid", "invalid", "inconclusive")


def test_a_few_repeated_rows_are_not_flagged(tmp_path):
    import warnings

    frame = _frame(1000)
    frame = pd.concat([frame, frame.iloc[:5]], ignore_index=True)  # 0.5 %: real repeats
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        uqx.from_dataframe(frame, E="E", uE="uE")


def test_conditional_calibration_on_a_constant_uE_is_refused(tmp_path, capsys):
    """It drew 14 "bins of uE" that split equal values by row order."""
    frame = _frame(300)
    frame["uE"] = 0.5
    path = tmp_path / "constu.csv"
    frame.to_csv(path, index=False)
    status = main(["plot", "calibration", str(path), "--conditional", "-o",
                   str(tmp_path / "c.png")])
    err = capsys.readouterr().err
    assert status == 2 and "uE takes one value (0.5)" in err and "one bin" in err
    assert not (tmp_path / "c.png").exists()


def test_fits_of_a_point_mass_are_undefined():
    """|Z| = 1 on every row: the scaled F fit of Z^2 reported nu = 9.79."""
    from uqx.inference.fits import fit_sets

    rng = np.random.default_rng(4)
    u = rng.uniform(0.5, 2.0, 300)
    ds = uqx.from_arrays(rng.choice([-1.0, 1.0], 300) * u * 1.3, u * 1.3, name="pm")
    with pytest.warns(UserWarning, match=r"Z\^2 takes one value \(1\).*point mass"):
        res = fit_sets(ds)
    assert np.isnan(res["nu_z2"].item()) and np.isnan(res["scale_z2"].item())
    assert np.isfinite(res["nu_e2"].item())  # E^2 has a spread: fitted


# -- how text tables are laid out: --sep, --comment, --decimal, and what is read alone -----

def _stats(capsys, *args):
    status = main(["stats", *map(str, args), "--format", "json", "-q"])
    cap = capsys.readouterr()
    import json

    return status, (json.loads(cap.out) if status == 0 else None), cap.err


def test_excel_sep_line_and_decimal_commas_are_read(tmp_path, capsys):
    frame = _frame(60)
    lines = ["sep=;", "E;uE"] + [f"{a:.6f};{b:.6f}".replace(".", ",")
                                 for a, b in zip(frame["E"], frame["uE"], strict=True)]
    path = tmp_path / "excel.csv"
    path.write_text("\n".join(lines) + "\n")
    status, recs, err = _stats(capsys, path)
    assert status == 0 and recs[0]["M"] == 60, err
    assert "sep=;" in err and "decimal comma" in err
    want = np.mean((frame["E"].round(6) / frame["uE"].round(6)) ** 2)
    assert recs[0]["stats"]["zms"] == pytest.approx(want, rel=1e-9)


def test_whitespace_separated_and_commented_files_are_read(tmp_path, capsys):
    frame = _frame(60)
    body = [f"{a!r}   {b!r}" for a, b in zip(frame["E"], frame["uE"], strict=True)]
    path = tmp_path / "ws.txt"
    path.write_text("# written by my model\n# seed 3\nE uE\n" + "\n".join(body) + "\n")
    status, recs, err = _stats(capsys, path)
    assert status == 0 and recs[0]["M"] == 60, err
    assert "2 line(s) before the header skipped" in err
    assert recs[0]["stats"]["zms"] == pytest.approx(np.mean((frame["E"] / frame["uE"]) ** 2))


def test_sep_comment_and_decimal_options(tmp_path, capsys):
    frame = _frame(60)
    body = [f"{a!r}:{b!r}  # row {i}" for i, (a, b) in
            enumerate(zip(frame["E"], frame["uE"], strict=True))]
    path = tmp_path / "colon.txt"
    path.write_text("E:uE\n" + "\n".join(body) + "\n")
    status, recs, err = _stats(capsys, path, "--sep", ":", "--comment", "#")
    assert status == 0 and recs[0]["M"] == 60, err
    status, _, err = _stats(capsys, path, "--sep", "two")
    assert status == 2 and "give one character" in err
    status, _, err = _stats(capsys, path, "--sep", ",", "--decimal", ",")
    assert status == 2 and "also the column delimiter" in err


def test_a_pipe_is_refused_instead_of_losing_its_header(capsys):
    """`cat f | uqx stats /dev/stdin` read the header in the first pass only, then blamed
    the data; a FIFO without a writer hung for ever."""
    import os

    r, w = os.pipe()
    os.write(w, b"E,uE\n0.1,0.5\n-0.2,0.4\n")
    os.close(w)
    try:
        status, _, err = _stats(capsys, f"/dev/fd/{r}")
    finally:
        os.close(r)
    assert status == 2 and "not a regular file" in err and "save it to a file" in err


def test_a_wrong_column_name_in_a_wide_file_gives_a_short_message(tmp_path, capsys):
    """10 000 columns and a wrong --uE printed an 89 KB line listing every one."""
    rng = np.random.default_rng(2)
    cols = {f"f{i}": rng.standard_normal(40) for i in range(10_000)}
    cols.update(E=rng.standard_normal(40), uE=rng.uniform(0.5, 1.0, 40))
    path = tmp_path / "wide.csv"
    pd.DataFrame(cols).to_csv(path, index=False)
    status, _, err = _stats(capsys, path, "--uE", "ue")
    assert status == 2 and len(err) < 1000, len(err)
    assert "10002 columns in all" in err and "did you mean 'uE'" in err


def test_errors_equal_to_plus_or_minus_uE_are_validated(tmp_path, capsys):
    """E = ±uE: Z² has no spread, its κ_CS is 0/0, and the fitted member's ν̂ was NaN:
    "unit-variance Student t needs nu > 2, got [nan]" after numpy warnings."""
    rng = np.random.default_rng(4)
    u = rng.uniform(0.5, 2.0, 300)
    path = tmp_path / "pm.csv"
    pd.DataFrame({"E": rng.choice([-1.0, 1.0], 300) * u, "uE": u}).to_csv(path, index=False)
    status = main(["validate", str(path), "--n-boot", "100", "--n-mc", "200", "--seed", "1",
                   "-q"])
    cap = capsys.readouterr()
    assert status == 0, cap.err
    assert "nu > 2" not in cap.err and "Warning" not in cap.err
    assert "## pm (M = 300)" in cap.out


def test_a_truncated_netcdf_file_is_called_damaged(tmp_path, capsys):
    """A truncated result read "NetCDF: HDF error"."""
    ds = uqx.from_arrays(*_frame(300)[["E", "uE"]].to_numpy().T, name="d")
    full = tmp_path / "full.nc"
    ds.to_netcdf(full, engine="netcdf4")
    cut = tmp_path / "cut.nc"
    cut.write_bytes(full.read_bytes()[:3000])
    for command in (["stats", str(cut)], ["show", str(cut)]):
        assert main([*command, "-q"]) == 2
        err = capsys.readouterr().err
        assert "damaged or truncated NetCDF file" in err and "copy it again" in err
    fake = tmp_path / "fake.nc"
    fake.write_text("E,uE\n0.1,0.2\n")
    assert main(["stats", str(fake), "-q"]) == 2
    assert "not a NetCDF file" in capsys.readouterr().err


def test_dask_arrays_of_unknown_length_are_named():
    """"length mismatch between columns (E=nan, uE=nan)" after boolean indexing."""
    da = pytest.importorskip("dask.array")
    frame = _frame(200)
    E = da.from_array(frame["E"].to_numpy(), chunks=50)
    u = da.from_array(frame["uE"].to_numpy(), chunks=50)
    keep = u > 0
    with pytest.raises(uqx.InputError, match="unknown length.*compute_chunk_sizes"):
        uqx.from_arrays(E[keep], u[keep])


def test_the_tables_of_one_selected_set():
    """`res.isel(set=0).uqx.verdicts()` read "not a validation result"."""
    frame = _frame(400)
    ds = uqx.stack([uqx.from_arrays(frame["E"], frame["uE"], name="a"),
                    uqx.from_arrays(1.6 * frame["E"], frame["uE"], name="b")])
    res = uqx.validate(ds, ["zms", "ence"], bootstrap=100, copies=100, conditional=False,
                       compute=uqx.Compute(seed=1))
    one = res.isel(set=1)
    assert list(one.uqx.verdicts().index) == ["b"]
    assert one.uqx.summary() == res.uqx.summary()[1:]
    assert len(one.uqx.records()) == 1 and len(res.sel(set="a").uqx.table()) == 2


@pytest.mark.parametrize("scheduler", ["bogus", 3])
def test_a_bad_scheduler_is_named_before_computing(scheduler):
    ds = uqx.from_arrays(*_frame(100)[["E", "uE"]].to_numpy().T)
    with pytest.raises(uqx.InputError, match="scheduler must be one of threads"):
        uqx.validate(ds, ["zms"], bootstrap=50, copies=50,
                     compute=uqx.Compute(scheduler=scheduler))
    with pytest.raises(uqx.InputError, match="scheduler must be one of threads"):
        uqx.bootstrap(ds, ["zms"], n_boot=50, scheduler=scheduler)


def test_a_sweep_archive_given_as_data_points_to_the_sweep_commands(tmp_path, capsys):
    """`uqx stats` on an archive with estimates over replicates recommended `uqx show`
    and `uqx report`, which refuse it."""
    import xarray as xr

    path = tmp_path / "arch.nc"
    xr.Dataset({"estimate": (("replicate",), np.arange(5.0))},
               attrs={"study": "bins"}).to_netcdf(path, engine="netcdf4")
    assert main(["stats", str(path), "-q"]) == 2
    err = capsys.readouterr().err
    assert "uqx sweep summary" in err and "uqx show" not in err
    assert main(["show", str(path), "-q"]) == 2
    assert "archive of 'uqx sweep bins'" in capsys.readouterr().err


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_json_records_are_read(tmp_path, capsys, suffix):
    """JSON and JSON-lines files were read as CSV: "no data rows" or no column 'E'."""
    frame = _frame(60)
    path = tmp_path / f"d{suffix}"
    if suffix == ".json":
        frame.to_json(path, orient="records")
    else:
        frame.to_json(path, orient="records", lines=True)
    status, recs, err = _stats(capsys, path)
    assert status == 0 and recs[0]["M"] == 60, err
    assert recs[0]["stats"]["zms"] == pytest.approx(np.mean((frame["E"] / frame["uE"]) ** 2))
    bad = tmp_path / f"bad{suffix}"
    bad.write_text('{"E": 0.1')
    status, _, err = _stats(capsys, bad)
    assert status == 2 and "cannot read as JSON" in err


def test_a_header_with_units_is_named_in_the_error(tmp_path, capsys):
    """`E (eV)` and `uE (eV)` are not E and uE: the error points at them."""
    path = tmp_path / "units.csv"
    path.write_text("E (eV),uE (eV)\n0.1,0.5\n-0.2,0.4\n0.3,0.9\n")
    assert main(["stats", str(path)]) != 0
    err = capsys.readouterr().err
    assert "no column 'E'" in err and "did you mean 'E (eV)'?" in err
    assert main(["stats", str(path), "--E", "E (eV)", "--uE", "uE (eV)"]) == 0


def test_a_missing_column_names_the_option_that_picks_it(tmp_path, capsys):
    """Columns called 'error' and 'uncertainty': the error says how to name them."""
    path = tmp_path / "named.csv"
    path.write_text("error,uncertainty\n0.1,0.5\n-0.2,0.4\n0.3,0.9\n")
    assert main(["stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert "no column 'E' for E" in err and "--E <column>" in err and "'error'" in err
    with pytest.raises(uqx.InputError, match="E='<column>'"):
        uqx.from_dataframe(pd.read_csv(path))
    assert main(["stats", str(path), "--E", "error", "--uE", "uncertainty"]) == 0


@pytest.mark.parametrize(("cell", "hint"), [
    ('"-1,231.889"', "thousands separator ','"),
    ("-1.231889D+00", "Fortran exponent 'D'"),
])
def test_numbers_written_another_way_are_named(tmp_path, capsys, cell, hint):
    """A thousands separator or a Fortran exponent: the error says which and what to do."""
    path = tmp_path / "odd.csv"
    path.write_text("E,uE\n" + "\n".join([f"{cell},1.0"] * 5) + "\n")
    assert main(["stats", str(path)]) == 2
    err = capsys.readouterr().err
    assert "is not numeric" in err and hint in err


def test_a_feature_with_fewer_values_than_bins_is_a_grouping_not_bins():
    """A flag as X: "top tenth of X" names no rows; adaptivity on it is not tested, said why."""
    from uqx._checks import few_values_reason

    rng = np.random.default_rng(8)
    u = np.exp(rng.normal(0.0, 0.5, 400))
    E = u * rng.standard_normal(400)
    flag = (np.arange(400) % 2).astype(float)
    res = uqx.validate(uqx.from_arrays(E, u, X=flag, name="flag"), bootstrap=50, copies=100,
                       compute=uqx.Compute(seed=1), stats=["zms", "zms_scan", "zms_scan_X"])
    q = res["question_verdict"].sel(set="flag", question="adaptivity_X").item()
    why = str(res["question_reason"].sel(set="flag", question="adaptivity_X").item())
    assert q == "not tested" and "only 2 distinct values (0, 1)" in why and "by='X'" in why
    assert res["question_verdict"].sel(set="flag", question="consistency").item() != (
        "not tested")
    # as many distinct values as bins, or more: bins of X are ranges of X
    assert few_values_reason(np.arange(400) % 13, "X", 13) == ""
    assert "12 distinct" in few_values_reason(np.arange(400) % 12, "X", 13)
    assert few_values_reason(flag, "X", None) == ""


def test_swapped_columns_and_percentages_are_named(tmp_path, capsys):
    """uE negative on half the rows while E is positive: the columns, not the data."""
    rng = np.random.default_rng(4)
    u = np.exp(rng.normal(0.0, 0.5, 200))
    E = u * rng.standard_normal(200)
    swapped = tmp_path / "swapped.csv"
    pd.DataFrame({"E": u, "uE": E}).to_csv(swapped, index=False)
    assert main(["stats", str(swapped)]) == 2
    assert "are the columns of E and uE swapped?" in capsys.readouterr().err
    neg = tmp_path / "neg.csv"
    pd.DataFrame({"E": E, "uE": -u}).to_csv(neg, index=False)
    assert main(["stats", str(neg)]) == 2
    assert "swapped" not in capsys.readouterr().err  # E has both signs: not a swap
    pct = tmp_path / "pct.csv"
    rows = (f"{a:.3f}%,{b:.3f}%" for a, b in zip(E, u, strict=True))
    pct.write_text("E,uE\n" + "\n".join(rows) + "\n")
    assert main(["stats", str(pct)]) == 2
    assert "it looks like a percentage" in capsys.readouterr().err


def test_copies_with_an_infinite_statistic_do_not_warn():
    """496 equal z-scores: resampled, t_z is infinite in some copies; no numpy warning."""
    E = np.r_[np.full(497, 0.1), [1.0, 2.0, 3.0]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = uqx.validate(uqx.from_arrays(E, np.ones(500), name="c"), bootstrap=50, copies=100,
                           compute=uqx.Compute(seed=1))
    assert str(res["question_verdict"].sel(set="c", question="average").item()) != ""


def test_a_tuple_of_arrays_is_pointed_to_from_arrays():
    """validate((E, uE)): the arrays are not data sets; the error names the builder."""
    E, u = np.array([0.1, -0.2, 0.3]), np.ones(3)
    with pytest.raises(uqx.InputError, match=r"uqx.from_arrays\(E, uE\)"):
        uqx.validate((E, u), bootstrap=50, copies=50, compute=uqx.Compute(seed=1))


def test_a_data_set_with_uE_under_another_name_gets_the_rename():
    """xarray input whose uncertainties are called 'sigma': the error offers ds.rename."""
    ds = xr.Dataset({"E": ("sample", np.array([0.1, -0.2, 0.3])),
                     "sigma": ("sample", np.ones(3))})
    with pytest.raises(uqx.InputError, match=r"ds.rename\(\{'sigma': 'uE'\}\)"):
        uqx.validate(ds, bootstrap=50, copies=50, compute=uqx.Compute(seed=1))
