"""Odd inputs of the command line: tracebacks and silent results, one case a test.

Each test is one case of the issue; it failed before its fix. Every test writes under
``tmp_path`` only.
"""

import re

import numpy as np
import pandas as pd
import pytest
from cli_helpers import refused, run

import uqx
from uqx.dataio.model import from_arrays
from uqx.dataio.netcdf import to_netcdf

FAST = ["--n-boot", "50", "--n-mc", "50", "--seed", "1"]


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
    res = uqx.validate(from_arrays(df["E"], df["uE"], name="d"), ["zms", "rce"], bootstrap=50,
                       copies=50, conditional=False, compute=uqx.Compute(seed=1))
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


def _drawn_as_math(fig, needle):
    """Texts of a figure that hold ``needle`` and that matplotlib would draw as math."""
    import io

    from matplotlib.text import Text

    fig.savefig(io.BytesIO(), format="png")  # mathtext errors are raised here
    texts = [t for t in fig.findobj(Text) if needle in t.get_text().replace("\\$", "$")]
    assert texts, f"no text holds {needle!r}"
    return [t.get_text() for t in texts if t._preprocess_math(t.get_text())[1]]


DOLLARS = "cost_$5_and_$10"


@pytest.fixture
def dollar_csv(tmp_path):
    path = tmp_path / f"{DOLLARS}.csv"
    _frame().to_csv(path, index=False)
    return path


def test_names_with_dollars_are_text_in_validate_plots_and_report(capsys, dollar_csv,
                                                                  tmp_path):
    """Case 3: a ``$`` in a set name reached mathtext: ValueError after the validation."""
    rc, out, err = run(capsys, "-q", "validate", dollar_csv, "--stats", "zms,rce", *FAST,
                       "--no-conditional", "--plots", tmp_path / "figs", "-o",
                       tmp_path / "res.nc")
    assert rc == 0 and "Traceback" not in err, err
    assert (tmp_path / "res.nc").exists() and (tmp_path / "figs" / "zeta_bars.png").exists()
    rc, out, err = run(capsys, "-q", "report", tmp_path / "res.nc", "--data", dollar_csv,
                       "-o", tmp_path / "rep.html")
    assert rc == 0 and "Traceback" not in err, err
    assert DOLLARS in (tmp_path / "rep.html").read_text(encoding="utf-8")


def test_names_labels_and_titles_are_never_math(csv):
    """Case 3: ``--label 'gain $5 to $10'`` was drawn as math (every kind of sink)."""
    import uqx.plot as P

    df = _frame()
    two = uqx.stack([from_arrays(df["E"], df["uE"], X=df["X"], name=DOLLARS),
                     from_arrays(df["E"], df["uE"] * 1.1, name="gain $5 to $10")])
    res = uqx.validate(two, ["zms", "rce"], bootstrap=50, copies=50, conditional=False,
                       compute=uqx.Compute(seed=1))
    figures = {
        "e_vs_u": P.e_vs_u(two, title="total $1 and $2"),  # panel titles, suptitle
        "distributions": P.distributions(two),  # left titles
        "zeta_bars": P.zeta_bars(res),  # tick labels
        "zeta_agreement": P.zeta_agreement(res),  # legend keys of long names
        "tailedness": P.tailedness_map(two),
    }
    for name, fig in figures.items():
        assert _drawn_as_math(fig, "$5") == [], name
    assert _drawn_as_math(figures["e_vs_u"], "$1 and $2") == []
    one = from_arrays(df["E"], df["uE"], X=df["X"], name="a")
    one["X"].attrs.update(long_name="price $ (in $)", units="$/kg")  # axis label
    assert _drawn_as_math(P.z_vs_x(one), "$/kg") == []


def test_plot_label_and_title_options_are_text(capsys, csv, tmp_path, monkeypatch):
    import uqx.cli.commands.plot as cmd

    saved = []
    real = cmd._save
    monkeypatch.setattr(cmd, "_save", lambda fig, path: (saved.append(fig), real(fig, path)))
    rc, out, err = run(capsys, "plot", "e-vs-u", csv, "--label", "gain $5 to $10",
                       "--title", "from $1 to $2", "-o", tmp_path / "f.png")
    assert rc == 0 and (tmp_path / "f.png").exists(), err
    assert _drawn_as_math(saved[0], "gain $5 to $10") == []
    assert _drawn_as_math(saved[0], "from $1 to $2") == []


# ------------------------------------------------------------------ silent


@pytest.mark.parametrize("fail_on", [None, "invalid"])
def test_a_reader_gone_stops_neither_the_outputs_nor_the_status(tmp_path, fail_on):
    """Case 4: ``validate ... -o res.nc | true``: no file and status 0 on BrokenPipeError."""
    import subprocess
    import sys

    data = tmp_path / "bad.csv"
    _frame(scale=2.0).to_csv(data, index=False)  # uE too small: ZMS invalid
    out = tmp_path / "res.nc"
    argv = ["-q", "validate", str(data), "--stats", "zms", *FAST, "--no-conditional",
            "-o", str(out), *(["--fail-on", fail_on] if fail_on else [])]
    code = "import sys\nfrom uqx.cli import main\nsys.exit(main())"
    with open(tmp_path / "stderr.txt", "w") as err:
        p = subprocess.Popen([sys.executable, "-c", code, *argv], stdout=subprocess.PIPE,
                             stderr=err)
        p.stdout.close()  # the reader is gone before the first line (`| true`)
        rc = p.wait(timeout=300)
    err = (tmp_path / "stderr.txt").read_text()
    assert rc == (1 if fail_on else 0), err
    assert out.is_file() and "Traceback" not in err and "Exception ignored" not in err, err
    assert uqx.read_netcdf(out)["verdict"].values.ravel().tolist() == ["invalid"]


@pytest.mark.parametrize("option", ["--X", "--V"])
@pytest.mark.parametrize("column", ["E", "uE"])
def test_a_feature_column_must_not_be_the_errors_or_uncertainties(capsys, csv, tmp_path,
                                                                  option, column):
    """Case 5: ``--X E`` or ``--V E`` was accepted without a word."""
    for command in (["validate", csv, "--stats", "zms", *FAST, "--no-conditional"],
                    ["stats", csv], ["plot", "z-vs-x", csv, "-o", tmp_path / "f.png"]):
        refused(capsys, *command, option, column,
                needles=[option, repr(column), "another column"])
    refused(capsys, "stats", csv, "--E", "uE", "--uE", "E", option, column,
            needles=[option, repr(column)])


def _nc_with_units(path, units_E, units_uE, variance=False):
    import xarray as xr

    df = _frame()
    u = df["uE"].to_numpy() ** (2 if variance else 1)
    xr.Dataset({"E": ("row", df["E"].to_numpy(), {"units": units_E}),
                "uE": ("row", u, {"units": units_uE})}).to_netcdf(path)
    return path


def test_netcdf_inputs_with_different_units_of_e_and_ue_are_refused(capsys, tmp_path):
    """Case 6: E in eV and uE in meV were read as they are."""
    bad = _nc_with_units(tmp_path / "mixed.nc", "eV", "meV")
    refused(capsys, "stats", bad, needles=["'eV'", "'meV'", "units"])
    refused(capsys, "validate", bad, "--stats", "zms", *FAST, "--no-conditional",
            needles=["'eV'", "'meV'"])
    with pytest.raises(uqx.InputError, match="'eV'.*'meV'"):
        uqx.open_dataset(bad)
    # the same units, units on one variable only, or variances in the square: accepted
    for name, ue, variance in (("same", "eV", False), ("one", "", False),
                               ("var", "eV^2", True), ("var2", "eV\u00b2", True)):
        ok = _nc_with_units(tmp_path / f"{name}.nc", "eV", ue, variance)
        assert uqx.open_dataset(ok, uE_is_variance=variance).sizes["sample"] == 400
    bad_var = _nc_with_units(tmp_path / "bad_var.nc", "eV", "meV^2", True)
    refused(capsys, "stats", bad_var, "--uE-is-variance", needles=["square"])


def test_fewer_lzisd_bins_than_cond_bins_are_noted(capsys, csv):
    """Case 7: ``--cond-bins 1000`` on 400 rows silently used 13 bins (``--bins`` warns)."""
    rc, out, err = run(capsys, "-q", "validate", csv, "--stats", "zms", *FAST,
                       "--cond-bins", "1000", "--extrapolation-n-mc", "2")
    assert rc == 0, err
    assert re.search(r"1000 LZISD bins requested \(--cond-bins\), 13 used: at least 30 "
                     r"points per bin \(M = 400", out), out
    rc, out, err = run(capsys, "-q", "validate", csv, "--stats", "zms", *FAST,
                       "--cond-bins", "5", "--extrapolation-n-mc", "2")
    assert rc == 0 and "--cond-bins" not in out  # as many as asked: nothing to say


def test_report_says_when_its_data_lack_the_x_of_the_result(capsys, csv, tmp_path):
    """Case 8: ``report RES --data FILE`` without the X of RES dropped the X figure."""
    res = tmp_path / "res.nc"
    # adaptivity on X tested (a figure on X is owed), without the conditional routes
    rc, out, err = run(capsys, "-q", "validate", csv, "--X", "X", "--stats", "zms,zms_scan_X",
                       *FAST, "--no-conditional", "-o", res)
    assert rc == 0, err
    assert uqx.read_netcdf(res).attrs["input_features"] == ["X"]
    rc, out, err = run(capsys, "-q", "report", res, "--data", csv, "-o", tmp_path / "a.html")
    assert rc == 0, err
    assert re.search(r"^uqx: warning: preds: the data given have no X, which the result was "
                     r"validated with", err, re.M), err
    assert "the data given have no X" in (tmp_path / "a.html").read_text(encoding="utf-8")
    rc, out, err = run(capsys, "-q", "report", res, "--data", csv, "--X", "X", "-o",
                       tmp_path / "b.html")
    assert rc == 0 and "have no X" not in err
    assert "have no X" not in (tmp_path / "b.html").read_text(encoding="utf-8")


def test_read_only_outputs_are_refused_and_replaced_files_keep_their_mode(capsys, csv,
                                                                          tmp_path):
    """Case 9: a read-only output was replaced and its mode reset to 644 (tests run as root)."""
    import os
    import stat

    res = tmp_path / "res.nc"
    res.write_bytes(b"old")
    res.chmod(0o444)
    refused(capsys, "validate", csv, "--stats", "zms", *FAST, "--no-conditional", "-o", res,
            needles=[str(res), "read-only", "0444", "chmod u+w"])
    assert res.read_bytes() == b"old" and stat.S_IMODE(os.stat(res).st_mode) == 0o444
    with pytest.raises(uqx.OutputError, match="read-only"):
        uqx.to_netcdf(from_arrays([0.1, 0.2, 0.3], [1.0, 1.0, 1.0]), res)
    fig = tmp_path / "f.png"
    fig.write_bytes(b"old")
    fig.chmod(0o400)
    refused(capsys, "plot", "e-vs-u", csv, "-o", fig, needles=["read-only"])
    # a writable file is replaced and keeps its permission bits
    for path, argv in ((tmp_path / "t.csv", ["validate", csv, "--stats", "zms", *FAST,
                                             "--no-conditional"]),
                       (tmp_path / "g.png", ["plot", "e-vs-u", csv])):
        path.write_bytes(b"old")
        path.chmod(0o640)
        rc, out, err = run(capsys, *argv, "-o", path)
        assert rc == 0, err
        assert path.read_bytes() != b"old" and stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_markdown_report_figures_are_written_atomically(capsys, result_nc, tmp_path):
    """Case 9 (the figure files of a Markdown report were written in place, as root)."""
    figs = tmp_path / "rep_figures"
    figs.mkdir()
    png = figs / "zeta_bars.png"
    png.write_bytes(b"old")
    png.chmod(0o444)
    refused(capsys, "report", result_nc, "-o", tmp_path / "rep.md", needles=["read-only"])
    assert png.read_bytes() == b"old"
    png.chmod(0o644)
    rc, out, err = run(capsys, "report", result_nc, "-o", tmp_path / "rep.md")
    assert rc == 0 and png.read_bytes().startswith(b"\x89PNG"), err


def test_zeta_bars_of_one_statistic_sit_on_their_tick_with_their_legend_only(result_nc):
    """Case 10: a ZMS-only result had its bar at the left, the tick at the far right and
    a legend of four series without bars."""
    import uqx.plot as P

    res = uqx.read_netcdf(result_nc)
    for fig in (P.zeta_bars(res, stats=["zms"]), P.zeta_bars(res.sel(stat=["zms"]))):
        (ax,) = fig.axes
        bars = [p for p in ax.patches if np.isfinite(p.get_height()) and p.get_height() != 0]
        assert len(bars) == 1  # zeta_BS: the simulated series have no zeta for ZMS
        centre = bars[0].get_x() + bars[0].get_width() / 2
        assert ax.get_xticks().tolist() == [0.0] and abs(centre) < 1e-9
        lo, hi = ax.get_xlim()
        assert lo < centre - bars[0].get_width() and hi > centre + bars[0].get_width()
        legend = ax.get_legend() or fig.legends[0]
        # the bars drawn, and the +-1 lines named as the papers' rule
        assert sorted(t.get_text() for t in legend.get_texts()) == sorted(
            [r"$\zeta_{BS}$", P.summary.ZETA_RULE_LABEL])


def test_data_dir_is_refused_when_no_input_is_a_registered_dataset(capsys, csv, result_nc,
                                                                   tmp_path, data_dir):
    """Case 11: ``--data-dir`` was ignored where it cannot apply; other such options are
    refused."""
    needles = ["--data-dir", "registered", "leave --data-dir out"]
    refused(capsys, "stats", csv, "--data-dir", data_dir, needles=[*needles, str(csv)])
    refused(capsys, "validate", csv, "--stats", "zms", *FAST, "--no-conditional",
            "--data-dir", data_dir, needles=needles)
    refused(capsys, "report", result_nc, "--data", csv, "--data-dir", data_dir, "-o",
            tmp_path / "r.html", needles=needles)
    refused(capsys, "plot", "e-vs-u", csv, "--data-dir", data_dir, "-o", tmp_path / "f.png",
            needles=needles)
    refused(capsys, "fit", csv, "--data-dir", data_dir, needles=needles)
    # where it applies: a registered dataset among the inputs
    rc, out, err = run(capsys, "stats", csv, "Set7", "--data-dir", data_dir)
    assert rc == 0, err
