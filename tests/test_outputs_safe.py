"""Outputs never destroy data: one policy for every ``-o`` and the API.

``uqx.dataio.paths.check_output_path`` is the one policy: no output over an input (a
NetCDF input opened lazily, a symbolic link to an input included), a suffix that fits
what is written (or the format follows the suffix: ``validate -o .csv/.json``), no
directory / device / FIFO, an unwritable destination refused before anything is
computed, and a missing directory refused by the API and the CLI alike (``mkdir``).
Every test writes under ``tmp_path`` only.
"""

import json
import os
import stat

import numpy as np
import pandas as pd
import pytest
from cli_helpers import refused, run

import uqx
from uqx.dataio.model import from_arrays
from uqx.dataio.netcdf import read_netcdf, to_netcdf
from uqx.errors import OutputError

FAST = ["--stats", "zms,rce", "--n-boot", "50", "--n-mc", "50", "--seed", "1",
        "--no-conditional"]


def _write_csv(path, M=300, seed=1):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    pd.DataFrame({"E": u * rng.standard_normal(M), "uE": u}).to_csv(path, index=False)
    return path


@pytest.fixture
def csv(tmp_path):
    return _write_csv(tmp_path / "preds.csv")


@pytest.fixture
def nc_input(tmp_path):
    rng = np.random.default_rng(2)
    u = rng.uniform(0.5, 2.0, 300)
    return to_netcdf(from_arrays(u * rng.standard_normal(300), u), tmp_path / "input.nc")


@pytest.fixture
def no_compute(monkeypatch):
    """Fail the test if a validation is started (refusals come before any computation)."""
    import uqx.cli.commands.validate as V

    def boom(*a, **k):
        raise AssertionError("the validation ran before the output was refused")

    monkeypatch.setattr(V, "run_validation", boom)


# ------------------------------------------------------------------ never over an input
def test_validate_never_writes_over_its_csv_input(capsys, csv, no_compute):
    before = csv.read_bytes()
    refused(capsys, "validate", csv, *FAST, "-o", csv, needles=["is the input file"])
    assert csv.read_bytes() == before


def test_validate_never_writes_over_a_lazy_netcdf_input(capsys, nc_input, tmp_path,
                                                        no_compute):
    before = nc_input.read_bytes()
    refused(capsys, "validate", nc_input, *FAST, "-o", nc_input, needles=["is the input file"])
    link = tmp_path / "alias.nc"
    link.symlink_to(nc_input)
    refused(capsys, "validate", nc_input, *FAST, "-o", link, needles=["is the input file"])
    os.link(nc_input, tmp_path / "hard.nc")
    refused(capsys, "validate", nc_input, *FAST, "-o", tmp_path / "hard.nc",
            needles=["is the input file"])
    assert nc_input.read_bytes() == before


def test_report_plot_sweep_never_write_over_inputs(capsys, csv, nc_input, tmp_path):
    before = nc_input.read_bytes()
    link = tmp_path / "preds.png"
    link.symlink_to(csv)
    refused(capsys, "plot", "e-vs-u", csv, "-o", link, needles=["is the input file"])
    refused(capsys, "sweep", "binned-tailedness", nc_input, "-o", nc_input,
            needles=["is the input file"])
    assert nc_input.read_bytes() == before
    link2 = tmp_path / "preds.html"
    link2.symlink_to(csv)
    refused(capsys, "report", csv, *FAST, "-o", link2, needles=["is the input file"])


# ----------------------------------------------------------------------- suffix policy
def test_suffix_must_match_what_is_written(capsys, csv, tmp_path, no_compute):
    err = refused(capsys, "validate", csv, *FAST, "-o", tmp_path / "res.txt",
                  needles=["res.txt", ".nc", ".csv", ".json"])
    assert "NetCDF" in err
    refused(capsys, "validate", csv, *FAST, "-o", tmp_path / "res",
            needles=["no suffix"])
    refused(capsys, "report", csv, *FAST, "-o", tmp_path / "r.nc", needles=[".html"])
    refused(capsys, "plot", "e-vs-u", csv, "-o", tmp_path / "f.csv", needles=[".png"])
    refused(capsys, "demo", "-o", tmp_path / "demo.csv", needles=[".nc"])
    refused(capsys, "sweep", "binned-tailedness", csv, "-o", tmp_path / "a.csv",
            needles=[".nc"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds.csv"]
    with pytest.raises(OutputError, match=r"res\.csv.*NetCDF"):
        uqx.to_netcdf(from_arrays([0.1, 0.2, 0.3], [1.0, 1.0, 1.0]), tmp_path / "res.csv")


def test_validate_format_follows_the_suffix(capsys, csv, tmp_path):
    rc, out, err = run(capsys, "validate", csv, *FAST, "-o", tmp_path / "res.csv")
    assert rc == 0, err
    df = pd.read_csv(tmp_path / "res.csv")
    assert list(df["stat"]) == ["zms", "rce"] and {"set", "estimate", "verdict"} <= set(df)
    rc, out, err = run(capsys, "validate", csv, *FAST, "-o", tmp_path / "res.json")
    assert rc == 0, err
    recs = json.loads((tmp_path / "res.json").read_text())
    assert recs[0]["dataset"] == "preds" and set(recs[0]["stats"]) == {"zms", "rce"}
    assert np.isclose(recs[0]["stats"]["zms"]["estimate"], df["estimate"][0])
    rc, out, err = run(capsys, "validate", csv, *FAST, "-o", tmp_path / "res.nc")
    assert rc == 0 and "verdict" in read_netcdf(tmp_path / "res.nc")


# ----------------------------------------------------- not a regular file, unwritable
def test_devices_fifos_and_directories_are_refused_before_computing(capsys, csv, tmp_path,
                                                                    no_compute):
    refused(capsys, "validate", csv, *FAST, "-o", "/dev/null", needles=["character device"])
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # still the device
    fifo = tmp_path / "pipe.nc"
    os.mkfifo(fifo)
    refused(capsys, "validate", csv, *FAST, "-o", fifo, needles=["FIFO"])
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    folder = tmp_path / "out.nc"
    folder.mkdir()
    refused(capsys, "validate", csv, *FAST, "-o", folder, needles=["is a directory"])
    refused(capsys, "report", csv, *FAST, "-o", "/dev/null", needles=["device"])
    refused(capsys, "plot", "e-vs-u", csv, "-o", tmp_path / "pipe.nc", needles=["FIFO"])
    fifo_png = tmp_path / "pipe.png"
    os.mkfifo(fifo_png)
    refused(capsys, "plot", "e-vs-u", csv, "-o", fifo_png, needles=["FIFO"])
    refused(capsys, "demo", "-o", fifo, needles=["FIFO"])


def test_unwritable_destinations_are_refused_before_computing(capsys, csv, tmp_path,
                                                              no_compute):
    # tests run as root: os.access says yes, the probe file says no
    refused(capsys, "validate", csv, *FAST, "-o", "/proc/x.nc", needles=["/proc", "writable"])
    refused(capsys, "report", csv, *FAST, "-o", "/proc/r.html", needles=["/proc"])
    refused(capsys, "validate", csv, *FAST, "-o", csv / "x.nc",
            needles=["is not a directory", str(csv)])
    refused(capsys, "validate", csv, *FAST, "-o", csv / "sub" / "x.nc", "--mkdir",
            needles=["is not a directory"])
    refused(capsys, "validate", csv, *FAST, "--plots", "/proc", needles=["/proc"])
    with pytest.raises(OutputError, match="/proc"):
        uqx.to_netcdf(from_arrays([0.1, 0.2, 0.3], [1.0, 1.0, 1.0]), "/proc/x.nc")


# --------------------------------------------------------- one policy for missing dirs
def test_missing_directory_one_policy_for_api_and_cli(capsys, csv, tmp_path, no_compute):
    ds = from_arrays([0.1, 0.2, 0.3], [1.0, 1.0, 1.0])
    target = tmp_path / "missing" / "x.nc"
    with pytest.raises(OutputError, match=f"directory {tmp_path / 'missing'} does not exist"):
        uqx.to_netcdf(ds, target)
    assert not target.parent.exists()
    err = refused(capsys, "validate", csv, *FAST, "-o", target,
                  needles=[f"directory {tmp_path / 'missing'} does not exist", "--mkdir"])
    assert "mkdir=True" in err  # the same message names the API's switch too
    assert not target.parent.exists()
    assert uqx.to_netcdf(ds, target, mkdir=True) == target and target.is_file()
    with pytest.raises(OutputError, match="does not exist"):
        from uqx.report import write_report

        write_report(xr_result(), tmp_path / "none" / "r.html")


def xr_result():
    return uqx.validate(from_arrays(np.linspace(-1, 1, 100), np.ones(100)), ["zms"],
                        bootstrap=50, copies=50, conditional=False, compute=uqx.Compute(seed=1))


def test_check_output_path_unit(tmp_path):
    from uqx.dataio.paths import check_output_path

    inp = _write_csv(tmp_path / "a.csv")
    assert check_output_path(tmp_path / "r.nc", kind="netcdf", inputs=[inp]) == tmp_path / "r.nc"
    with pytest.raises(OutputError, match="is the input file"):
        check_output_path(tmp_path / "." / "a.csv", kind="table", inputs=[str(inp)])
    assert check_output_path(tmp_path / "ok.csv", kind="table", inputs=["QM9_E"])
    with pytest.raises(OutputError, match="uqx writes a figure"):
        check_output_path(tmp_path / "f.nc", kind="figure")
    assert list(tmp_path.iterdir()) == [inp]  # no probe file left behind


# ------------------------------------------- every writing command x every odd output
_COMMANDS = {
    "validate": lambda inp: ["validate", inp, *FAST],
    "report": lambda inp: ["report", inp, *FAST, "--no-figures"],
    "plot": lambda inp: ["plot", "e-vs-u", inp],
    "sweep": lambda inp: ["sweep", "binned-tailedness", inp],
    "demo": lambda inp: ["demo", "--n-boot", "2", "--n-mc", "2"],
    "recalibrate-fit": lambda inp: ["recalibrate", "fit", inp, "--method", "scale"],
    "recalibrate-check": lambda inp: ["recalibrate", "check", inp, "--method", "scale"],
}
_SUFFIX = {"validate": ".nc", "report": ".html", "plot": ".png", "sweep": ".nc", "demo": ".nc",
           "recalibrate-fit": ".nc", "recalibrate-check": ".nc"}


def _odd_output(kind, tmp_path, inp, suffix):
    if kind == "device":
        return "/dev/null", "character device"
    if kind == "fifo":
        fifo = tmp_path / f"pipe{suffix}"
        os.mkfifo(fifo)
        return fifo, "FIFO"
    if kind == "directory":
        d = tmp_path / f"dir{suffix}"
        d.mkdir()
        return d, "is a directory"
    if kind == "proc":
        return f"/proc/x{suffix}", "/proc"
    if kind == "file-as-directory":
        return inp / f"x{suffix}", "is not a directory"
    if kind == "missing-directory":
        return tmp_path / "missing" / f"x{suffix}", "does not exist"
    if kind == "wrong-suffix":
        return tmp_path / "out.txt", "uqx writes"
    if kind == "empty":
        return "", "no output file name"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "proc", "file-as-directory",
                                  "missing-directory", "wrong-suffix", "empty"])
@pytest.mark.parametrize("command", list(_COMMANDS))
def test_every_command_refuses_every_odd_output(capsys, tmp_path, command, kind, monkeypatch):
    import uqx.dataio.synth as synth

    monkeypatch.setattr(synth, "demo_sets", lambda: pytest.fail("demo ran"))
    inp = _write_csv(tmp_path / "preds.csv")
    before = sorted(p.name for p in tmp_path.iterdir())
    out, needle = _odd_output(kind, tmp_path, inp, _SUFFIX[command])
    existing = sorted(p.name for p in tmp_path.iterdir())
    refused(capsys, *_COMMANDS[command](inp), "-o", out, needles=[needle])
    assert sorted(p.name for p in tmp_path.iterdir()) == existing  # nothing written
    assert set(before) <= set(existing) and inp.read_bytes()  # the input is intact


def test_study_api_refuses_odd_archives_before_running(tmp_path, monkeypatch):
    import uqx.sweeps._common as C
    from uqx.errors import InputError
    from uqx.sweeps import appendix_b

    monkeypatch.setattr(C, "run_sweep", lambda *a, **k: pytest.fail("the study ran"))
    tiny = dict(M=[1500], N=[10, 50], nu=[4], n_mc=100, seed=5)
    for out, needle in [("/dev/null", "character device"), (tmp_path / "a.csv", "NetCDF"),
                        ("/proc/a.nc", "/proc"), (tmp_path / "no" / "a.nc", "does not exist")]:
        with pytest.raises(InputError, match=needle):
            appendix_b(**tiny, output=out)
