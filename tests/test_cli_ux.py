"""What CI users and new users meet on the command line.

Exit status of ``--fail-on``, help texts that read well (walked over every parser),
labelled progress bars, the "bins requested" note only when the user chose ``--bins``,
``sweep compare`` of different grids, ``fit --drop-nonfinite`` counts, ``-q`` on a
NetCDF input, ``report RES.nc --data OTHER`` on the terminal, ``plot appendix-b`` without
a fitted line, and the demo's warning when its settings are too small to decide.
"""

import argparse
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from cli_helpers import run

import uqx
from uqx.cli import main
from uqx.cli.app import build_parser
from uqx.dataio.model import from_arrays
from uqx.dataio.netcdf import to_netcdf

DEMO = "data/examples/demo_inconsistent.csv"
FAST = ["--n-boot", "100", "--n-mc", "50", "--seed", "1"]


def _write_csv(path, M=300, seed=1, nan=0):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    E = u * rng.standard_normal(M)
    E[:nan] = np.nan
    pd.DataFrame({"E": E, "uE": u}).to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """A small validation result saved to NetCDF."""
    ds = from_arrays(*_arrays(), name="small")
    # 100 copies: 50 cannot reach a two-sided test's question at 5 % (no valid to show)
    res = uqx.validate(ds, ["zms", "rce"], bootstrap=100, copies=100, conditional=False,
                       compute=uqx.Compute(seed=1))
    path = tmp_path_factory.mktemp("res") / "res.nc"
    return to_netcdf(res, path), res


def _arrays(M=400, seed=3):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    return u * rng.standard_normal(M), u


# ------------------------------------------------------------------------- --fail-on
def _with_verdicts(res, verdicts, tmp_path, name):
    res = res.copy()
    res["verdict"] = (res["verdict"].dims, np.array([verdicts], dtype=str))
    return to_netcdf(res, tmp_path / name)


def test_fail_on_sets_the_exit_status(capsys, saved, tmp_path):
    _, res = saved
    ok = _with_verdicts(res, ["valid", "valid"], tmp_path, "ok.nc")
    bad = _with_verdicts(res, ["invalid", "valid"], tmp_path, "bad.nc")
    open_ = _with_verdicts(res, ["valid", "inconclusive"], tmp_path, "open.nc")
    assert run(capsys, "show", bad)[0] == 0  # no --fail-on: 0 whatever the verdicts
    assert run(capsys, "show", ok, "--fail-on", "invalid")[0] == 0
    assert run(capsys, "show", ok, "--fail-on", "inconclusive")[0] == 0
    rc, out, err = run(capsys, "show", bad, "--fail-on", "invalid")
    assert rc == 1 and "--fail-on invalid: 1 verdict(s)" in err and "small: zms invalid" in err
    assert run(capsys, "show", open_, "--fail-on", "invalid")[0] == 0
    rc, out, err = run(capsys, "show", open_, "--fail-on", "inconclusive", "-q")
    assert rc == 1 and "small: rce inconclusive" in err  # said even with -q: it is the why
    assert run(capsys, "show", bad, "--fail-on", "inconclusive")[0] == 1


def test_validate_fail_on_end_to_end(capsys, tmp_path):
    args = ["validate", DEMO, "--stats", "zms,rce,ence", *FAST, "--no-conditional"]
    rc, out, err = run(capsys, *args)
    assert rc == 0
    verdicts = re.findall(r"\b(valid|invalid|inconclusive)\b", out)
    assert verdicts
    rc, out, err = run(capsys, *args, "--fail-on", "inconclusive", "-o", tmp_path / "r.nc")
    if set(verdicts) <= {"valid"}:
        assert rc == 0
    else:  # demo_inconsistent is miscalibrated: something is not valid
        assert rc == 1 and "--fail-on inconclusive" in err
    assert (tmp_path / "r.nc").is_file()  # the result is written before the status
    with pytest.raises(SystemExit) as exc:  # argparse: a bad choice is a usage error
        main(["validate", DEMO, "--fail-on", "never"])
    assert exc.value.code == 2


def test_exit_codes_are_documented():
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    for name in ("validate", "report", "show"):
        text = " ".join(sub.choices[name].format_help().split())
        assert "Exit status: 0" in text and "1 a verdict met --fail-on" in text, name
        assert "--fail-on {invalid,inconclusive}" in text
    from pathlib import Path

    rst = (Path(__file__).parents[1] / "docs" / "cli.rst").read_text()
    assert "Exit status" in rst and "--fail-on invalid" in rst


# ------------------------------------------------------------------------- help texts
def _walk(parser, path=("uqx",)):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))


def test_every_help_reads_well():
    seen = 0
    for path, parser in _walk(build_parser()):
        seen += 1
        where = " ".join(path)
        text = parser.format_help()
        flat = " ".join(text.split())
        assert "%%" not in text, where
        assert "(default: None)" not in flat and "(default: False)" not in flat, where
        assert "['" not in flat and "[3, " not in flat, where  # lists shown as comma lists
        assert not re.search(r"\(default:[^)]*\)\s*\(default:", flat), where
        assert not re.search(r"default[^()]{0,80}\)\s*\(default:", flat), where
        for action in parser._actions:
            if not action.option_strings or isinstance(action, argparse._HelpAction):
                continue
            if action.help == argparse.SUPPRESS:
                continue
            assert action.help, f"{where} {action.option_strings[0]} has no help"
    assert seen > 15
    appb = next(p for path, p in _walk(build_parser()) if path[-1] == "appendix-b")
    appb = " ".join(appb.format_help().split())
    assert "(default: NIG,T6IG)" in appb and "(default: 2000,4000,8000,12000,16000)" in appb
    dec = next(p for path, p in _walk(build_parser()) if path[-1] == "decimation")
    assert "k % largest" in dec.format_help()


# ----------------------------------------------------------------------- progress bar
class _Tty(io.StringIO):
    def isatty(self):
        return True


def _sim_block(x):
    return x + 1


def test_progress_bar_is_labelled():
    import dask

    from uqx.progress import progress_bar, step_name

    out = _Tty()
    with progress_bar(stream=out, minimum=0, label="uqx validate"):
        dask.compute(*[dask.delayed(_sim_block)(i) for i in range(3)], scheduler="sync")
    text = out.getvalue()
    assert "uqx validate \u00b7 simulated references" in text and "3/3 tasks" in text
    assert "Completed" not in text
    uid = "c6095cf8-926b-4dc8-b1bf-9dd0aaaeef81"
    assert step_name([f"_call-{uid}", f"_call-{uid[::-1]}", "moment_sums-1"]) == "bootstrap"
    assert step_name([]) == "computing"
    quiet = _Tty()
    with progress_bar(stream=quiet, minimum=0, quiet=True):
        dask.compute(dask.delayed(_sim_block)(1), scheduler="sync")
    assert quiet.getvalue() == ""


# ---------------------------------------------------------------- bins note, -q, fit
def test_bins_note_only_when_the_user_chose_the_bins(capsys, tmp_path):
    csv = _write_csv(tmp_path / "small300.csv")
    args = ["validate", csv, "--stats", "zms,ence", *FAST, "--no-conditional"]
    rc, out, err = run(capsys, *args)
    assert rc == 0 and "bins requested" not in out + err
    rc, out, err = run(capsys, *args, "--bins", "20")
    assert rc == 0 and "20 bins requested, 10 used" in out


def test_quiet_silences_the_disk_note(capsys, tmp_path):
    E, u = _arrays()
    nc = to_netcdf(from_arrays(E, u), tmp_path / "in.nc")
    args = ["validate", nc, "--stats", "zms,ence", *FAST, "--no-conditional"]
    rc, out, err = run(capsys, *args)
    assert rc == 0 and "note" in err  # the disk-backed input note
    rc, out, err = run(capsys, *args, "-q")
    assert rc == 0 and "note" not in err
    rc, out, err = run(capsys, "-q", *args)
    assert rc == 0 and "note" not in err


def test_fit_reports_the_rows_it_dropped(capsys, tmp_path):
    csv = _write_csv(tmp_path / "nf.csv", M=200, nan=7)
    rc, out, err = run(capsys, "fit", csv, "--drop-nonfinite")
    assert rc == 0 and re.search(r"^dropped\s+7$", out, re.M) and re.search(r"^M\s+193$", out,
                                                                           re.M)
    assert "7 row(s) with NaN/inf dropped" in err
    rc, out, err = run(capsys, "fit", csv, "--drop-nonfinite", "--format", "json", "-q")
    rec = json.loads(out)[0]
    assert rc == 0 and rec["dropped"] == 7 and rec["M"] == 193 and err == ""


# -------------------------------------------------------------- report, compare, plot
def test_report_mismatched_data_said_on_the_terminal(capsys, saved, tmp_path):
    path, _ = saved
    other = tmp_path / "small.csv"  # same name, other content
    _write_csv(other, M=400, seed=9)
    rc, out, err = run(capsys, "report", path, "--data", other, "--no-figures",
                       "-o", tmp_path / "r.html")
    assert rc == 0
    assert "uqx: warning: small:" in err and "differ from those of the result" in err
    E, u = _arrays()  # the result's own data (matched by content)
    pd.DataFrame({"E": E, "uE": u}).to_csv(tmp_path / "small_ok.csv", index=False)
    rc, out, err = run(capsys, "report", path, "--data", tmp_path / "small_ok.csv",
                       "--no-figures", "-o", tmp_path / "r2.html")
    assert rc == 0 and "warning" not in err
    rc, out, err = run(capsys, "report", path, "-o", tmp_path / "r3.html")
    assert rc == 0 and "no --data: the figures of the raw data are skipped" in err


def _archive(Ms, n=2):
    M = np.asarray(Ms)
    N, nu = np.array([10, 20]), np.array([3.0])
    x = np.sqrt(N[None, :] / M[:, None])[None, :, :, None] * np.ones((1, 1, 1, 1))
    dims = ("model", "M", "N", "nu")
    fit = np.full((1, 2), np.nan) if len(Ms) == 1 else np.array([[0.0, 0.0]])
    return xr.Dataset(
        {"ence_mean": (dims, 0.56 * x), "ence_se": (dims, 1e-3 + 0 * x),
         "zmse_mean": (dims, 1.14 * x), "zmse_se": (dims, 1e-3 + 0 * x),
         "intercept": (("model", "stat"), fit),
         "slope": (("model", "stat"), fit if len(Ms) == 1 else np.array([[0.56, 1.14]]))},
        coords={"model": ["NIG"], "M": M, "N": N, "nu": nu, "stat": ["ence", "zmse"]},
        attrs={"study": "appendix-b"})


def test_compare_of_different_grids_names_the_cells_of_one_archive(capsys, tmp_path):
    from uqx.sweeps import compare

    a = to_netcdf(_archive([2000, 4000]), tmp_path / "a.nc")
    b = to_netcdf(_archive([2000, 8000]), tmp_path / "b.nc")
    res = compare(a, b)
    assert not res.identical and res.common_identical
    assert res.only_a == {"M": [4000]} and res.only_b == {"M": [8000]}
    rc, out, err = run(capsys, "sweep", "compare", a, b)
    assert "only in A: M = 4000" in out and "only in B: M = 8000" in out
    assert "identical" not in out and "common cells only" in out
    same = to_netcdf(_archive([2000, 4000]), tmp_path / "same.nc")
    assert compare(a, same).identical
    rc, out, err = run(capsys, "sweep", "compare", a, same)
    assert "identical (same grid" in out and "only in" not in out


def test_appendix_b_without_a_fitted_line(tmp_path):
    from matplotlib.text import Text

    import uqx.plot as P

    fig = P.appendix_b(_archive([2000]))
    texts = [t.get_text() for t in fig.findobj(Text)]
    assert not any("nan" in t for t in texts), texts
    assert any("no line fitted" in t for t in texts)
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert "OLS fit" not in labels
    fig2 = P.appendix_b(_archive([2000, 4000]))
    assert any(t.get_text().startswith("y = 0.000 + 0.560 x") for t in fig2.findobj(Text))


# ------------------------------------------------------------------------------ demo
def test_demo_warns_when_too_small_to_decide(capsys, monkeypatch, tmp_path):
    import uqx.dataio.synth as synth
    from uqx.cli.commands.demo import DEMO_MIN_N_BOOT, DEMO_MIN_N_MC, settings_warning

    class Stop(Exception):
        pass

    def stop():
        raise Stop

    monkeypatch.setattr(synth, "demo_sets", stop)
    with pytest.raises(Stop):  # the warning comes first, before anything is computed
        main(["demo", "--n-boot", "2", "--n-mc", "2", "-o", str(tmp_path / "d.nc")])
    err = capsys.readouterr().err
    assert "uqx: warning: settings too small to decide" in err
    assert "--n-boot 2 <" in err and "--n-mc 2 <" in err
    assert settings_warning(DEMO_MIN_N_BOOT, DEMO_MIN_N_MC) is None
    assert settings_warning(2000, 1000) is None  # the demo's defaults decide
    assert "--n-mc" in settings_warning(5000, DEMO_MIN_N_MC - 1)


def test_stats_header_states_the_bins_used(capsys, tmp_path):
    csv = _write_csv(tmp_path / "small300.csv")
    rc, out, err = run(capsys, "stats", csv)
    assert rc == 0 and "# statistics (10 equal-count bins of uE" in out  # not "20"
    assert "requested" not in err
    rc, out, err = run(capsys, "stats", csv, "--bins", "20")
    assert rc == 0 and "20 bins requested, 10 used" in err


def test_sweep_progress_bar_is_labelled():
    from uqx.progress import step_name

    assert step_name(["compute_blocks-3f2a1b", ("compute_blocks-77aa", 0)]) == "blocks of cells"
    import inspect

    from uqx.sweeps import engine

    assert 'label=f"uqx sweep {study.name}"' in inspect.getsource(engine.run_sweep)
