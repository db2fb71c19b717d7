"""The ``uqx`` command line (uqx.cli): commands, output formats and bad input.

Runs :func:`uqx.cli.main` in-process (capsys) and the installed console script once in a
subprocess. Bad input must exit with status 2 and print ``uqx: error: <message naming the
problem>`` on stderr, without a traceback.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run

from uqx.cli import main
from uqx.dataio.netcdf import read_netcdf

STATS_KEYS = ["mv", "mse", "rmv", "rmse", "rce", "mean_z", "var_z", "zms", "nll", "nll_ref",
              "cc", "uce", "uce_w", "ence", "ence_sd", "zmse", "zve"]
TAIL_KEYS = ["beta_gm_u", "beta_gm_u2", "beta_gm_e2", "beta_gm_z2", "kappa_cs_u2",
             "kappa_cs_e2", "kappa_cs_z2"]
RECORD_STAT_KEYS = {"estimate", "bias", "ci_low", "ci_high", "reference", "reference_se",
                    "zeta", "valid", "reference_kind"}


def _write_csv(path, M=600, seed=1, scale=1.0, X=True):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    cols = {"E": u * rng.standard_normal(M), "uE": u * scale}
    if X:
        cols["X"] = rng.uniform(0, 1, M)
    header = ",".join(cols)
    np.savetxt(path, np.column_stack(list(cols.values())), delimiter=",", header=header,
               comments="")
    return path


@pytest.fixture
def csv(tmp_path):
    return _write_csv(tmp_path / "preds.csv")


def assert_error(capsys, argv, *needles):
    rc, out, err = run(capsys, *argv)
    assert rc == 2, (argv, out, err)
    assert err.startswith("uqx: error: "), err
    assert "Traceback" not in err and "Traceback" not in out
    for n in needles:
        assert n in err, (n, err)
    return err


# ---------------------------------------------------------------- help / version


def test_console_script_help_lists_commands():
    exe = Path(sys.executable).with_name("uqx")
    if not exe.exists():
        pytest.skip("console script not installed next to the interpreter")
    p = subprocess.run([str(exe), "--help"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    for cmd in ("datasets", "stats", "validate", "demo"):
        assert cmd in p.stdout


def test_no_command_prints_help(capsys):
    rc, out, _ = run(capsys)
    assert rc == 0 and "usage: uqx" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith("uqx ")


# ---------------------------------------------------------------- datasets


def test_datasets_list_table(capsys):
    rc, out, _ = run(capsys, "datasets", "list")
    assert rc == 0
    for name in ("QM9_E", "Diffusion_RF_cal", "family", "PAL2022/Diffusion_RF_Test_cal.csv"):
        assert name in out


def test_datasets_list_json(capsys):
    rc, out, _ = run(capsys, "datasets", "list", "--format", "json")
    assert rc == 0
    recs = json.loads(out)
    assert isinstance(recs, list) and len(recs) > 9
    assert {"name", "family", "M", "file"} <= set(recs[0])
    by = {r["name"]: r for r in recs}
    assert by["QM9_E"]["M"] == 13885


def test_datasets_check(capsys, data_dir):
    rc, out, err = run(capsys, "datasets", "check", "--data-dir", data_dir)
    assert rc == 0, err
    assert "checksums OK" in out


def test_datasets_check_missing_dir(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("UQX_DATA_DIR", raising=False)
    assert_error(capsys, ["datasets", "check"], "data directory not found", "UQX_DATA_DIR")
    assert_error(capsys, ["datasets", "check", "--data-dir", tmp_path / "nope"],
                 "data directory not found", "nope")


# ---------------------------------------------------------------- stats


def test_stats_table(capsys, csv):
    rc, out, err = run(capsys, "stats", csv)
    assert rc == 0, err
    assert "preds" in out
    for k in STATS_KEYS + TAIL_KEYS + ["dropped"]:
        assert k in out, k


def test_stats_json_keys(capsys, csv):
    rc, out, err = run(capsys, "stats", csv, "--format", "json")
    assert rc == 0, err
    (rec,) = json.loads(out)
    assert list(rec) == ["dataset", "M", "dropped", "stats", "tailedness"]
    assert rec["dataset"] == "preds" and rec["M"] == 600 and rec["dropped"] == 0
    assert list(rec["stats"]) == STATS_KEYS
    assert list(rec["tailedness"]) == TAIL_KEYS
    assert all(isinstance(v, float) for v in rec["stats"].values())
    # ZMS of the file, recomputed
    E, u = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=(0, 1), unpack=True)
    assert rec["stats"]["zms"] == pytest.approx(np.mean((E / u) ** 2), rel=1e-12)


def test_stats_several_inputs_json_array(capsys, tmp_path):
    a = _write_csv(tmp_path / "a.csv", seed=1)
    b = _write_csv(tmp_path / "b.csv", M=300, seed=2)
    rc, out, err = run(capsys, "stats", a, b, "--format", "json", "--bins", "10")
    assert rc == 0, err
    recs = json.loads(out)
    assert [r["dataset"] for r in recs] == ["a", "b"]
    assert [r["M"] for r in recs] == [600, 300]
    # the same file twice gets distinct names
    rc, out, _ = run(capsys, "stats", a, a, "--format", "json")
    assert rc == 0 and len({r["dataset"] for r in json.loads(out)}) == 2


def test_stats_columns_variance_and_drop(capsys, tmp_path):
    rng = np.random.default_rng(4)
    E = rng.standard_normal(40)
    var = rng.uniform(0.5, 2.0, 40)
    rows = [f"{e:.17g},{v:.17g}" for e, v in zip(E, var, strict=True)] + ["nan,1.0"]
    p = tmp_path / "v.csv"
    p.write_text("err,var\n" + "\n".join(rows) + "\n")
    rc, out, err = run(capsys, "stats", p, "--E", "err", "--uE", "var", "--uE-is-variance",
                       "--drop-nonfinite", "--format", "json", "--bins", "1")
    assert rc == 0, err
    (rec,) = json.loads(out)
    assert rec["M"] == 40 and rec["dropped"] == 1
    assert rec["stats"]["zms"] == pytest.approx(np.mean(E**2 / var), rel=1e-12)


def test_stats_too_small_for_bins(capsys, tmp_path):
    # fewer points than pop_min = 30: no bin can be formed (methods: edge cases); the unbinned
    # statistics are still reported, binned ones are null with a note on stderr
    p = tmp_path / "small.csv"
    p.write_text("E,uE\n0.1,1\n-0.3,1\n0.2,0.5\n0.5,1\n")
    rc, out, err = run(capsys, "stats", p, "--format", "json")
    assert rc == 0, err
    (rec,) = json.loads(out)
    assert rec["stats"]["ence"] is None and rec["stats"]["zmse"] is None
    assert rec["stats"]["zms"] == pytest.approx(np.mean(np.array([0.1, -0.3, 0.4, 0.5]) ** 2))
    assert "binned statistics not computed" in err


def test_stats_registered_name(capsys, data_dir):
    rc, out, err = run(capsys, "stats", "QM9_E", "--data-dir", data_dir, "--format", "json")
    assert rc == 0, err
    (rec,) = json.loads(out)
    assert rec["M"] == 13885
    # methods: the papers, Set 7
    assert rec["stats"]["zms"] == pytest.approx(0.9720056, abs=5e-8)
    assert rec["stats"]["rce"] == pytest.approx(-0.2644578, abs=5e-8)
    assert rec["stats"]["cc"] == pytest.approx(0.3125928, abs=5e-8)
    assert rec["tailedness"]["beta_gm_u2"] == pytest.approx(0.9329118, abs=5e-8)


# ---------------------------------------------------------------- validate


def test_validate_table_and_netcdf(capsys, csv, tmp_path):
    out_nc = tmp_path / "sub" / "out.nc"
    rc, out, err = run(capsys, "validate", csv, "--n-boot", 200, "--n-mc", 50, "--seed", 3,
                       "-o", out_nc, "--mkdir")
    assert rc == 0, err
    assert "# uqx validate" in out and "verdict" in out
    assert f"results written to {out_nc}" in out
    res = read_netcdf(out_nc)
    assert list(res["stat"].values) == ["zms", "rce", "mean_z", "cc", "ence", "zmse",
                                        "zmse_max", "zms_scan", "zve"]
    assert res.attrs["seed"] == 3 and res.attrs["n_boot"] == 200 and res.attrs["n_mc"] == 50
    params = json.loads(res.attrs["parameters"])
    assert params["command"] == "validate" and params["stats"] == list(res["stat"].values)
    assert "fval" in res


def test_validate_json(capsys, csv):
    rc, out, err = run(capsys, "validate", csv, "--stats", "ZMS,RCE,CC", "--n-boot", 200,
                       "--n-mc", 50, "--seed", 1, "--no-conditional", "--format", "json")
    assert rc == 0, err
    (rec,) = json.loads(out)
    assert {"dataset", "M", "stats", "warnings"} <= set(rec)
    assert rec["dataset"] == "preds" and rec["M"] == 600
    assert list(rec["stats"]) == ["zms", "rce", "cc"]
    for d in rec["stats"].values():
        assert RECORD_STAT_KEYS <= set(d)
    assert rec["stats"]["zms"]["reference"] == 1.0
    assert rec["stats"]["zms"]["reference_kind"] == "predefined"


def test_validate_json_records_the_drawn_seed_that_reproduces_it(capsys, csv):
    """Without --seed the seed is drawn; the JSON states it, and passing it back gives
    the same record bit for bit."""
    args = ("validate", csv, "--stats", "ZMS,CC", "--n-boot", 100, "--n-mc", 40,
            "--no-conditional", "--format", "json")
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    (rec,) = json.loads(out)
    assert rec["settings"]["n_boot"] == 100 and rec["settings"]["n_mc"] == 40
    rc, again, err = run(capsys, *args, "--seed", rec["settings"]["seed"])
    assert rc == 0, err
    assert json.loads(again) == [rec]


def test_validate_conditional_on_X_and_json(capsys, csv):
    rc, out, err = run(capsys, "validate", csv, "--X", "X", "--stats", "zms,zmse_X",
                       "--n-boot", 200, "--n-mc", 30, "--seed", 1, "--format", "json")
    assert rc == 0, err
    (rec,) = json.loads(out)
    assert list(rec["stats"]) == ["zms", "zmse_X"]  # named as in the table
    assert set(rec["conditional"]) == {"uE", "X"}
    rc, text, err = run(capsys, "validate", csv, "--X", "X", "--stats", "zms,zmse_X",
                        "--n-boot", 200, "--n-mc", 30, "--seed", 1, "--wide")
    assert "zmse_X" in text and "zmse_x" not in text


def test_validate_needs_input(capsys):
    assert_error(capsys, ["validate"], "needs INPUT")


# ---------------------------------------------------------------- bad input


def test_error_missing_file(capsys, tmp_path):
    assert_error(capsys, ["stats", tmp_path / "missing.csv"], "missing.csv", "not found")
    assert_error(capsys, ["validate", tmp_path / "missing.csv", "--n-boot", 50],
                 "missing.csv", "not found")


def test_error_directory(capsys, tmp_path):
    assert_error(capsys, ["stats", tmp_path], "is a directory")


def test_error_empty_file(capsys, tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("")
    assert_error(capsys, ["stats", p], "empty.csv", "empty")
    h = tmp_path / "header.csv"
    h.write_text("E,uE\n")
    assert_error(capsys, ["stats", h], "header.csv", "no data rows")


def test_error_unknown_column(capsys, csv):
    err = assert_error(capsys, ["stats", csv, "--E", "err"], "no column 'err'")
    assert "'E', 'uE', 'X'" in err  # lists the available columns
    assert_error(capsys, ["stats", csv, "--X", "mass"], "no column 'mass'")


def test_error_non_numeric_column(capsys, tmp_path):
    p = tmp_path / "text.csv"
    p.write_text("E,uE\n0.1,1\nabc,2\n0.3,1\n")
    assert_error(capsys, ["stats", p], "column 'E' is not numeric", "'abc'")


def test_error_nan_values(capsys, tmp_path):
    p = tmp_path / "nan.csv"
    p.write_text("E,uE\n0.1,1\nnan,2\n0.3,1\n")
    assert_error(capsys, ["stats", p], "E", "NaN or infinite")
    q = tmp_path / "blank.csv"
    q.write_text("E,uE\n0.1,1\n0.2,\n0.3,1\n")
    assert_error(capsys, ["stats", q], "uE", "NaN or infinite")


def test_error_nonpositive_uncertainty(capsys, tmp_path):
    p = tmp_path / "neg.csv"
    p.write_text("E,uE\n0.1,1\n0.2,0\n0.3,-1\n")
    assert_error(capsys, ["stats", p], "2 value(s) of uE", "<= 0")


def test_error_too_few_points(capsys, tmp_path):
    p = tmp_path / "one.csv"
    p.write_text("E,uE\n0.1,1\n")
    assert_error(capsys, ["stats", p], "at least 2 points")


def test_error_unparsable_csv(capsys, tmp_path):
    p = tmp_path / "ragged.csv"
    p.write_text("E,uE\n0.1,1\n0.2,1,3\n")
    assert_error(capsys, ["stats", p], "ragged.csv", "cannot parse")
    b = tmp_path / "binary.csv"
    b.write_bytes(b"E,uE\n\xff\xfe\x00\x01,\xd0\xd1\n")
    assert_error(capsys, ["stats", b], "binary.csv")


def test_error_unknown_dataset(capsys):
    assert_error(capsys, ["stats", "NoSuchDataset"], "unknown dataset 'NoSuchDataset'")


def test_error_registered_name_without_data_dir(capsys, monkeypatch):
    monkeypatch.delenv("UQX_DATA_DIR", raising=False)
    assert_error(capsys, ["stats", "QM9_E"], "data directory not found", "UQX_DATA_DIR")
    assert_error(capsys, ["validate", "--paper-sets", "--n-boot", 50, "--n-mc", 10],
                 "data directory not found")


def test_error_bad_statistic_and_counts(capsys, csv):
    assert_error(capsys, ["validate", csv, "--stats", "zms,foo", "--n-boot", 50],
                 "unknown statistic 'foo'")
    assert_error(capsys, ["validate", csv, "--stats", "lzisd", "--n-boot", 50], "per-bin")
    assert_error(capsys, ["validate", csv, "--stats", "zmse_X", "--n-boot", 50],
                 "needs variable 'X'")
    # library keywords are named as CLI options
    assert_error(capsys, ["validate", csv, "--n-boot", 1], "--n-boot")
    assert_error(capsys, ["validate", csv, "--n-mc", 1, "--n-boot", 50], "--n-mc")
    assert_error(capsys, ["validate", csv, "--nu", 2, "--n-boot", 50, "--n-mc", 10],
                 "nu > 2")
    assert_error(capsys, ["stats", csv, "--bins", 0], "--bins")


# ---------------------------------------------------------------- demo


def test_demo_without_data_dir(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("UQX_DATA_DIR", raising=False)
    # the report's figures are drawn; their PNG encoding, half the demo's time, stands in
    # here (test_report.py encodes and checks every figure of its pages)
    monkeypatch.setattr("uqx.report.figures._png",
                        lambda fig, dpi, caption=None: b"\x89PNG\r\n\x1a\nstand-in")
    out_nc = tmp_path / "demo.nc"
    rc, out, err = run(capsys, "demo", "-o", out_nc, "--n-boot", 200, "--n-mc", 60,
                       "--seed", 2)
    assert rc == 0, err
    assert "# uqx demo" in out and "# validation" in out and "verdict" in out
    for name in ("calibrated", "overconfident", "heavy_tailed", "nonadaptive"):
        assert name in out
    assert f"results written to {out_nc}" in out
    assert "no literature data directory" in out
    res = read_netcdf(out_nc)
    assert res.sizes["set"] == 6 and res.attrs["seed"] == 2
    assert res["verdict"].sel(set="overconfident", stat="zms").item() == "invalid"
    assert not (tmp_path / "demo_paper_sets.nc").exists()
    # the demo ends by writing the HTML report of the embedded sets
    html = (tmp_path / "demo.html").read_text()
    assert html.count('<img src="data:image/png;base64,') > 6 and "heavy_tailed" in html


def test_validate_with_a_feature_tests_adaptivity_as_the_api_does(capsys, tmp_path):
    """``uqx validate FILE --X X`` asks adaptivity on X with the defaults, as
    ``uqx.validate(ds)`` does (the CLI passed the default list as if chosen, so the
    adaptivity statistics were never added); ``--stats`` without them says why not."""
    csv = _write_csv(tmp_path / "preds.csv", M=800)
    out_nc = tmp_path / "r.nc"
    rc, out, err = run(capsys, "validate", csv, "--X", "X", "--n-boot", 50, "--n-mc", 60,
                       "--seed", 1, "--no-conditional", "-o", out_nc)
    assert rc == 0, err
    res = read_netcdf(out_nc)
    assert {"zms_scan_X", "zmse_X", "zmse_max_X"} <= set(map(str, res["stat"].values))
    q = list(map(str, res["question"].values)).index("adaptivity_X")
    assert res["question_verdict"].values[0, q] != "not tested"
    assert json.loads(res.attrs["parameters"])["stats"] == list(map(str, res["stat"].values))
    rc, out, err = run(capsys, "validate", csv, "--X", "X", "--stats", "zms,zmse",
                       "--n-boot", 50, "--n-mc", 60, "--seed", 1, "--no-conditional")
    assert rc == 0, err
    assert "Adaptivity (X) not tested: none of its statistics was requested" in \
        " ".join(out.split())
