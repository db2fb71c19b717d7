"""Figures of uqx.plot: structure on synthetic data, file output, NetCDF input, baselines."""

import os
from pathlib import Path

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.testing.compare import compare_images  # noqa: E402

from uqx import plot as P  # noqa: E402
from uqx.dataio.synth import demo_sets  # noqa: E402

BASELINE = Path(__file__).parent / "baseline"


@pytest.fixture(scope="module")
def demo():
    return demo_sets(M=600, seed=11)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _panels(fig):
    """Data panels: axes with an x label (colour bars and secondary axes have none)."""
    return [ax for ax in fig.axes if ax.get_xlabel() and ax.get_label() != "<colorbar>"]


def _check(fig, n_panels):
    panels = _panels(fig)
    assert len(panels) == n_panels
    for ax in panels:
        assert ax.get_xlabel() and (ax.get_ylabel() or ax.get_yticks().size == 0)
        assert ax.lines or ax.collections or ax.patches or ax.containers
    return panels


FIGS = {
    "e_vs_u": lambda d: P.e_vs_u(d),
    "z_vs_x": lambda d: P.z_vs_x(d, by="X"),
    "reliability": lambda d: P.reliability(d, n_bins=5, log=True),
    "lzisd": lambda d: P.lzisd(d, n_bins=5),
    "lzv_X_adaptive": lambda d: P.lzisd(d, stat="lzv", by="X", binning="adaptive",
                                        n_bins=6),
    "lcp": lambda d: P.lcp(d, n_bins=5),
    "calibration": lambda d: P.calibration(d, dist="t", nu=4),
    "conditional": lambda d: P.conditional_calibration(d, n_bins=4),
    "confidence": lambda d: P.confidence(d, n_rep=30, n_boot=20),
}


@pytest.mark.parametrize("kind", sorted(FIGS))
def test_figure_structure_one_panel_per_set(kind, demo):
    fig = FIGS[kind](demo.isel(set=[0, 3, 4]))
    panels = _check(fig, 3)
    assert [ax.get_title() for ax in panels] == ["calibrated", "inconsistent", "nonadaptive"]


def test_single_set_and_sizes(demo):
    one = demo.isel(set=0)
    f1 = P.reliability(one, n_bins=5, size="single", font_size=7, dpi=80)
    f2 = P.reliability(one, n_bins=5, size="double")
    _check(f1, 1)
    assert f1.get_figwidth() < f2.get_figwidth() and f1.dpi == 80
    with pytest.raises(ValueError, match="size"):
        P.e_vs_u(one, size="huge")


def test_scatter_layers_are_rasterized(demo, tmp_path):
    fig = P.e_vs_u(demo.isel(set=[0]))
    assert any(c.get_rasterized() for c in fig.axes[0].collections)
    for ext in ("png", "pdf", "svg"):
        out = tmp_path / f"f.{ext}"
        fig.savefig(out)
        assert out.stat().st_size > 1000
    # the 600 points are one image in the PDF, not 600 vector paths
    assert (tmp_path / "f.pdf").stat().st_size < 150_000


def test_lzisd_colours_failing_bins(demo):
    fig = P.lzisd(demo.isel(set=[3]), n_bins=10)
    ax = fig.axes[0]
    colours = {c.lines[0].get_color() for c in ax.containers}
    from uqx.plot.style import COLORS

    assert COLORS["invalid"] in colours  # the inconsistent set has bins away from 1


def test_distributions_and_summary_figures(demo, tmp_path):
    fig = P.distributions(demo.isel(set=[0]), panels=("u2", "e", "z2"))
    _check(fig, 3)
    fig = P.tailedness_map(demo)
    assert len(fig.axes[0].collections) >= 2 and fig.axes[0].get_xlabel()
    from uqx.plot.summary import nig_beta_line

    nu, bu, be = nig_beta_line()
    # β_GM grows with the tail weight (small ν) and reaches 1 for infinite means
    assert np.all(np.diff(bu) <= 1e-9) and bu[0] == 1.0 and be[0] == 1.0
    # N(0,1)^2 limit: β_GM of χ²_1 = (1 - 0.4549)/E|X - 0.4549| ≈ 0.63
    assert 0.6 < be[-1] < 0.68


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    import uqx

    res = uqx.validate(demo_sets(M=500, seed=2), stats=["zms", "rce", "cc", "ence"],
                       bootstrap=100, copies=uqx.Copies(n_mc=50, simulate_all=True),
                       conditional=False, compute=uqx.Compute(seed=1))
    path = tmp_path_factory.mktemp("val") / "val.nc"
    uqx.to_netcdf(res, path)
    return path


def test_zeta_figures_from_netcdf(validation):
    fig = P.zeta_agreement(validation)
    assert fig.axes[0].get_xlabel() == r"$|\zeta_{ZMS}|$"
    assert len(fig.axes[0].collections) >= 1
    fig = P.zeta_bars(validation, stats=("zms", "ence"))
    panels = _check(fig, 2)
    # BS + Sim/Sim2 for N and T6; ENCE has no predefined reference: no BS bars, and no
    # empty slot for them
    assert len(panels[0].containers) == 5
    assert [c.get_label() for c in panels[1].containers] == [
        r"$\zeta_{Sim,N}$", r"$\zeta_{Sim,T6}$", r"$\zeta_{Sim2,N}$", r"$\zeta_{Sim2,T6}$"]


def test_data_input_from_netcdf_path(demo, tmp_path):
    import uqx

    path = tmp_path / "demo.nc"
    uqx.to_netcdf(demo.isel(set=[0, 1]), path)
    _check(P.calibration(path), 2)
    with pytest.raises(ValueError, match="NetCDF"):
        P.calibration(tmp_path / "demo.csv")


@pytest.mark.data
def test_hu2022_lcp_uses_given_intervals(data_dir):
    import uqx

    ds = uqx.load_dataset("HU2022_feature", data_dir)
    fig = P.lcp(ds, by="X", binning="adaptive", n_bins=20)
    ax = _check(fig, 1)[0]
    assert ax.get_legend() is None  # the legend sits above the panel, never on the data
    assert {t.get_text() for leg in fig.legends for t in leg.get_texts()} == {"P = 68%",
                                                                             "P = 95%"}


@pytest.mark.data
def test_paper_sets_grid(data_dir):
    import uqx

    ds = uqx.load_paper_sets(data_dir)
    panels = _check(P.lzisd(ds, binning="adaptive", n_bins=20), 9)
    assert panels[0].get_title() == "Set 1: Diffusion_RF"


# ------------------------------------------------------------------ baseline images
_RC = {"font.family": "DejaVu Sans", "axes.unicode_minus": True,
       "svg.hashsalt": "uqx"}

BASELINES = {
    "reliability": lambda d: P.reliability(d, n_bins=8, size="single", dpi=110),
    "calibration": lambda d: P.calibration(d, size="single", dpi=110),
    "lcp": lambda d: P.lcp(d, n_bins=6, size="single", dpi=110),
}


def _baseline_data():
    return demo_sets(M=1200, seed=5).isel(set=3)  # the inconsistent set


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_images(name, tmp_path):
    matplotlib.rcdefaults()
    with matplotlib.rc_context(_RC):
        fig = BASELINES[name](_baseline_data())
        out = tmp_path / f"{name}.png"
        fig.savefig(out)
    ref = BASELINE / f"{name}.png"
    if os.environ.get("UQX_UPDATE_BASELINES") == "1":
        ref.parent.mkdir(exist_ok=True)
        ref.write_bytes(out.read_bytes())
    assert ref.is_file(), f"missing baseline {ref} (UQX_UPDATE_BASELINES=1 to create)"
    assert compare_images(str(ref), str(out), tol=12) is None


def test_lzisd_engine_bootstrap_matches_cho_estimates(demo):
    from uqx.plot.binned import _engine_lzisd

    ds = demo.isel(set=[0, 3])
    eng = _engine_lzisd(ds, "lzisd", "X", 5, "equal-count", 200, 1)
    from uqx.inference.curves.binned import local_z

    cho = local_z(ds, by="X", n_bins=5)
    np.testing.assert_allclose(eng["estimate"].values, cho["estimate"].values, rtol=1e-9)
    np.testing.assert_allclose(eng["full"].values, cho["full"].values, rtol=1e-9)
    assert np.all(eng["ci_low"] < eng["estimate"]) and np.all(eng["estimate"] < eng["ci_high"])
    _check(P.lzisd(ds, by="X", n_bins=5, ci="bootstrap-set", n_boot=100), 2)


def _fake_appendix_b():
    """A summarised 000 App. B archive with ENCE = 0.56 x and ZMSE = 1.14 x exactly."""
    import xarray as xr

    M, N, nu = np.array([2000, 4000]), np.array([10, 20]), np.array([3.0, 6.0])
    x = np.sqrt(N[None, :] / M[:, None])[None, :, :, None] * np.ones((2, 1, 1, 2))
    dims = ("model", "M", "N", "nu")
    ds = xr.Dataset(
        {"ence_mean": (dims, 0.56 * x), "ence_se": (dims, 1e-3 + 0 * x),
         "zmse_mean": (dims, 1.14 * x), "zmse_se": (dims, 1e-3 + 0 * x),
         "intercept": (("model", "stat"), np.zeros((2, 2))),
         "slope": (("model", "stat"), np.array([[0.56, 1.14], [0.56, 1.14]]))},
        coords={"model": ["NIG", "T6IG"], "M": M, "N": N, "nu": nu,
                "stat": ["ence", "zmse"]},
        attrs={"study": "appendix-b"})
    return ds


def test_study_appendix_b_panels(tmp_path):
    import uqx

    path = tmp_path / "appb.nc"
    uqx.to_netcdf(_fake_appendix_b(), path)
    fig = P.study(path)
    panels = _check(fig, 4)
    assert panels[0].get_title() == "NIG: ENCE"
    assert any("0.560" in t.get_text() for t in panels[0].texts)
    bad = _fake_appendix_b().assign_attrs(study="unknown")
    with pytest.raises(ValueError, match="no figure"):
        P.study(bad)


def test_log_ticks_tidied_unless_the_panel_chose_them():
    from uqx.plot import style as S

    fig, (a, b) = plt.subplots(1, 2, figsize=(4, 2))
    for ax in (a, b):
        ax.plot([500, 20000], [0, 1])
        ax.set_xscale("log")
    b.set_xticks([500, 2000, 5000, 20000], ["500", "2000", "5000", "20000"])
    b.minorticks_off()
    S.finish(fig)
    fig.canvas.draw()
    labels = [t.get_text() for t in b.get_xticklabels()]
    assert labels == ["500", "2000", "5000", "20000"]  # kept: no 1000 / 10000 in between
    shown = [t.get_text() for t in a.get_xticklabels() if a.get_xlim()[0] <= t.get_position()[0]
             <= a.get_xlim()[1]]
    assert shown and all("e" not in s and "$" not in s for s in shown)  # plain numbers
    plt.close(fig)
