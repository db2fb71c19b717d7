"""``uqx validate --plots DIR`` and the zero-bin extrapolation figure (uqx.plot.extrapolation)."""

import contextlib
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from uqx.cli import main
from uqx.dataio.model import InputError
from uqx.dataio.netcdf import read_netcdf
from uqx.plot.zero_bin import extrapolation

CSV = Path(__file__).resolve().parents[1] / "data" / "examples" / "primer_C.csv"
ARGS = ["validate", str(CSV), "--X", "X", "--n-boot", "200", "--n-mc", "50", "--seed", "1"]
FIGURES = ["e_vs_u", "reliability", "lzisd_uE", "lzisd_X", "calibration", "confidence",
           "distributions", "extrapolation_uE", "extrapolation_X"]


@pytest.fixture(scope="module")
def run_plots(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plots")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main([*ARGS, "--plots", str(tmp / "figs" / "sub"), "-o", str(tmp / "res.nc")])
    return rc, out.getvalue(), err.getvalue(), tmp


def test_plots_written(run_plots):
    rc, out, err, tmp = run_plots
    assert rc == 0, err
    folder = tmp / "figs" / "sub"
    expected = {f"primer_C_{k}.png" for k in FIGURES} | {"zeta_bars.png"}
    assert {p.name for p in folder.iterdir()} == expected
    for p in folder.iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000
    assert f"{len(expected)} figure(s) written to {folder}" in out


def test_plots_dir_checked_before_computing(tmp_path, monkeypatch, capsys):
    def boom(*a, **k):
        raise AssertionError("computed before checking --plots")

    monkeypatch.setattr(sys.modules["uqx.workflow.validation"], "validate", boom)
    target = tmp_path / "file.txt"
    target.write_text("x")
    assert main([*ARGS, "--plots", str(target)]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_extrapolation_figure(run_plots):
    res = read_netcdf(run_plots[3] / "res.nc")
    fig = extrapolation(res)
    stats = [str(k) for k in res["xstat"].values]
    assert len(fig.axes) == len(stats)
    for ax, k in zip(fig.axes, stats, strict=True):
        assert ax.get_xlabel() and ax.get_ylabel().startswith(k.upper())
        verdict = str(res["extrap_verdict"].sel(set="primer_C", cond="uE", xstat=k).item())
        # the papers' diagnostic carries no verdict, and the title says so
        assert ax.get_title().endswith("diagnostic" if verdict == "not tested" else verdict)
        assert ax.lines and ax.collections  # points, fit, bars; error-bar collections
        # the fitted line starts at x = 0 on the intercept
        a = float(res["extrap_intercept"].sel(set="primer_C", cond="uE", xstat=k))
        starts = [ln.get_ydata()[0] for ln in ax.lines if len(ln.get_xdata()) == 2
                  and ln.get_xdata()[0] == 0 and ln.get_xdata()[1] > 0]
        assert any(np.isclose(y, a) for y in starts)
    fig_x = extrapolation(res, cond="X", size="single")
    assert all("X bins" in ax.get_ylabel() for ax in fig_x.axes)
    with pytest.raises(InputError, match="conditioning variable"):
        extrapolation(res, cond="V")
    with pytest.raises(InputError, match="conditional routes"):
        extrapolation(res[["estimate"]])
