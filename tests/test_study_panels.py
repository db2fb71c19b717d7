"""Study panels drawn from small archives of every uqx sweep study (and the CLI kinds)."""

import numpy as np
import pytest

import uqx
from uqx import plot as P
from uqx import sweeps
from uqx.cli import main
from uqx.dataio.netcdf import to_netcdf
from uqx.inference.synth import nig


@pytest.fixture(scope="module")
def two_sets():
    sets = []
    for i, M in enumerate((2500, 3000)):
        E, u = nig(M, 6.0, seed=10 + i)
        sets.append(uqx.from_arrays(E, u * (1.0 + 0.3 * i), name=f"s{i}"))
    return uqx.stack(sets)


@pytest.fixture(scope="module")
def archives(two_sets):
    return {
        "pval": sweeps.pval(scenario=["NIG", "TIG"], nu={"NIG": [3, 6], "TIG": [3, 6]},
                            n_datasets=20, n_boot=100, M=1000, seed=1),
        "bins": sweeps.bins(two_sets, n_mc=20),
        "decimation": sweeps.decimation(two_sets, n_boot=100, k_max=2.0, k_step=0.5),
        "binned-tailedness": sweeps.binned_tailedness(two_sets),
        "reference-sensitivity": sweeps.reference_sensitivity(two_sets, nu=[3, 6, 20],
                                                              n_mc=50, bins=20),
    }


def _check(fig, n_axes_min):
    axes = [ax for ax in fig.axes if ax.get_visible()]
    assert len(axes) >= n_axes_min
    for ax in axes:
        if ax.get_label() == "<colorbar>":
            continue
        assert ax.get_xlabel() or ax.get_ylabel() or ax.get_title()
    assert any(ax.lines or ax.collections or ax.patches for ax in axes)


@pytest.mark.parametrize("kind, n_axes", [("pval", 2), ("bins", 6), ("decimation", 2),
                                          ("binned-tailedness", 3),
                                          ("reference-sensitivity", 8)])
def test_study_panel_from_archive(archives, kind, n_axes, tmp_path):
    fig = P.study(archives[kind])  # dispatch on attrs["study"]
    _check(fig, n_axes)
    # and from the NetCDF file, through the command line
    path = to_netcdf(archives[kind], tmp_path / f"{kind}.nc")
    out = tmp_path / f"{kind}.png"
    assert main(["plot", kind, str(path), "-o", str(out)]) == 0
    assert out.stat().st_size > 1000


def test_bins_panel_uses_sqrt_n_over_m(archives):
    fig = P.bins(archives["bins"])
    ax = fig.axes[0]
    points = [line for line in ax.lines if line.get_marker() == "o"]
    x_max = max(np.max(line.get_xdata()) for line in points)
    assert x_max < 1  # sqrt(N/M), not sqrt(N)
    assert "sqrt{N/M}" in ax.get_xlabel()


def test_several_archives_on_one_panel(archives, tmp_path):
    a = to_netcdf(archives["pval"], tmp_path / "a.nc")
    b = to_netcdf(archives["pval"], tmp_path / "b.nc")
    fig = P.pval([a, b], labels=["run A", "run B"])
    labels = {t.get_text() for leg in fig.legends for t in leg.get_texts()}
    assert {"ZMS (run A)", "RCE (run B)"} <= labels
    out = tmp_path / "cmp.png"
    assert main(["plot", "pval", str(a), str(b), "--label", "A", "--label", "B",
                 "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    with pytest.raises(uqx.InputError):
        P.pval([a, b], labels=["only one"])


def test_wrong_archive_is_refused(archives):
    with pytest.raises(uqx.InputError):
        P.pval(archives["bins"])
