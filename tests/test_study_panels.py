"""Study panels drawn from small archives of every uqx sweep study (and the CLI kinds).

Each panel is read back: titles, axis labels and scales, the number of plotted series,
and the plotted values against the archive they were drawn from (points, error bars,
bands, reference lines); the same content from the NetCDF file, and the command line
writes the image.
"""

import matplotlib.image as mpimg
import numpy as np
import pytest

import uqx
from uqx import plot as P
from uqx import sweeps
from uqx.cli import main
from uqx.dataio.netcdf import to_netcdf
from uqx.dataio.synth import nig


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


# ---------------------------------------------------------------- reading a panel back


def _axes(fig):
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def _xy(line):
    return np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)


def _hlines(ax):
    """y of the dashed horizontal reference lines (axhline: x from 0 to 1 in axes units)."""
    return [_xy(ln)[1][0] for ln in ax.lines
            if ln.get_linestyle() == "--" and list(_xy(ln)[0]) == [0.0, 1.0]]


def _by_label(ax, label):
    (line,) = [ln for ln in ax.lines if ln.get_label() == label]
    return _xy(line)


def _bars(container):
    """(x, y, low, high) of an errorbar container with vertical bars."""
    x, y = _xy(container.lines[0])
    segs = container.lines[2][0].get_segments()
    return x, y, np.array([s[0][1] for s in segs]), np.array([s[1][1] for s in segs])


def _close(a, b):
    np.testing.assert_allclose(np.asarray(a, float), np.asarray(b, float), rtol=1e-12,
                               atol=1e-15)


# ---------------------------------------------------------------- one check per kind


def check_pval(fig, ds):
    axes = _axes(fig)
    scen = [str(s) for s in ds["scenario"].values]
    stats = [str(s) for s in ds["stat"].values]
    assert [ax.get_title() for ax in axes] == scen == ["NIG", "TIG"]
    for ax, sc in zip(axes, scen, strict=True):
        r = ds.sel(scenario=sc)
        assert ax.get_xscale() == "log" and ax.get_ylabel() == r"$p_{val}$"
        assert ax.get_xlabel() == (r"$\nu_{IG}$" if sc == "NIG" else r"$\nu_D$")
        assert _hlines(ax) == [0.95]  # nominal level
        assert len(ax.containers) == len(stats)  # one series per statistic
        nu = r["nu"].values.astype(float)
        for k, (c, st) in enumerate(zip(ax.containers, stats, strict=True)):
            x, y, lo, hi = _bars(c)
            _close(x, nu * (1 + 0.02 * k))  # the statistics side by side
            _close(y, r["p_val"].sel(stat=st))
            _close(lo, r["p_val_low"].sel(stat=st))
            _close(hi, r["p_val_high"].sel(stat=st))
            assert np.all((lo <= y) & (y <= hi))
        # the top axis: the mean beta_GM of u² (NIG) or E² (TIG) at the points
        (top,) = ax.child_axes
        tail = "u2" if sc == "NIG" else "e2"
        assert top.get_xlabel() == r"$\beta_{GM}$(" + ("u²" if sc == "NIG" else "E²") + ")"
        ticks = [t.get_text() for t in top.get_xticklabels()]
        assert ticks == [f"{v:.2f}" for v in r[f"beta_gm_{tail}_mean"].values]
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert labels == ["ZMS", "RCE"]


def check_bins(fig, ds):
    axes = _axes(fig)
    sets, stats = [str(s) for s in ds["set"].values], [str(s) for s in ds["stat"].values]
    assert len(axes) == len(sets) * len(stats) == 6
    for i, s in enumerate(sets):
        r = ds.sel(set=s)
        x_all = np.sqrt(r["N"].values / float(r["M"]))
        for j, st in enumerate(stats):
            ax, q = axes[i * len(stats) + j], r.sel(stat=st)
            assert ax.get_title() == f"{s}: {q['verdict'].item()}"
            assert ax.get_xlabel() == r"$\sqrt{N/M}$" and ax.get_ylabel() == st.upper()
            y = q["value"].values
            ok, fit = np.isfinite(y), q["fitted"].values.astype(bool)
            assert len(ax.lines) == 7  # 2 point sets, OLS, intercept, 2 nulls, ideal
            _close(_by_label(ax, "fitted points")[0], x_all[ok & fit])
            _close(_by_label(ax, "fitted points")[1], y[ok & fit])
            _close(_by_label(ax, "not fitted")[1], y[ok & ~fit])
            a, b, se = (float(q[v]) for v in ("intercept", "slope", "intercept_se"))
            gx, gy = _by_label(ax, "OLS fit")
            assert gx[0] == 0 and gx[-1] == pytest.approx(1.05 * x_all[ok].max())
            _close(gy, a + b * gx)
            (c,) = ax.containers  # the papers' intercept ± 2 SE at x = 0
            _close(_bars(c)[1:], [[a], [a - 2 * se], [a + 2 * se]])
            for d in ds["dist"].values:
                _close(_by_label(ax, f"null 95 % ({d})")[1],
                       [float(q["null_low"].sel(dist=d)), float(q["null_high"].sel(dist=d))])
            assert _hlines(ax) == [1.0 if st == "zve" else 0.0]  # the ideal intercept


def check_decimation(fig, ds):
    axes = _axes(fig)
    sets, stats = [str(s) for s in ds["set"].values], [str(s) for s in ds["stat"].values]
    assert [ax.get_title() for ax in axes] == sets
    for ax, s in zip(axes, sets, strict=True):
        r = ds.sel(set=s)
        assert ax.get_xlabel() == "k (% of largest uE removed)"
        assert ax.get_ylabel() == "Δ statistic"
        assert _hlines(ax) == [0.0]
        assert len(ax.patches) == len(stats)  # one full-set band per statistic
        for patch, st in zip(ax.patches, stats, strict=True):
            # a Rectangle or a Polygon (matplotlib < 3.9): its corners in data y
            ys = patch.get_patch_transform().transform(patch.get_path().vertices)[:, 1]
            _close([ys.min(), ys.max()], [float(r["bar_low"].sel(stat=st)),
                                          float(r["bar_high"].sel(stat=st))])
            x, y = _by_label(ax, f"Δ{st.upper()}")
            _close(x, r["k"].values)
            _close(y, r["delta"].sel(stat=st))
            assert y[0] == 0.0  # nothing removed at k = 0


def check_binned_tailedness(fig, ds):
    axes = _axes(fig)
    sets = [str(s) for s in ds["set"].values]
    assert [ax.get_ylabel() for ax in axes] == [r"$\beta_{GM}$(u²)", r"$\beta_{GM}$(E²)",
                                                r"$\beta_{GM}$(Z²)"]
    for ax, v in zip(axes, ds["var"].values, strict=True):
        assert ax.get_xlabel() == "set"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "2"]
        x, y = _by_label(ax, "full set")
        _close(x, [1, 2])
        _close(y, ds["beta_gm_full"].sel(var=v))
        # one box per set: its median line is the median of the per-bin values
        medians = [ln for ln in ax.lines if ln.get_label().startswith("_")
                   and len(ln.get_xdata()) == 2 and np.ptp(_xy(ln)[0]) == pytest.approx(0.6)
                   and np.ptp(_xy(ln)[1]) == 0]
        assert len(medians) == len(sets)
        for ln, s in zip(medians, sets, strict=True):
            per_bin = ds["beta_gm"].sel(set=s, var=v).values
            assert _xy(ln)[1][0] == pytest.approx(np.median(per_bin[np.isfinite(per_bin)]))
        assert _hlines(ax) == [float(ds["beta_gm_limit"].sel(var=v))]


def check_reference_sensitivity(fig, ds):
    axes = _axes(fig)
    sets, stats = [str(s) for s in ds["set"].values], [str(s) for s in ds["stat"].values]
    assert len(axes) == len(sets) * len(stats) == 8
    for i, s in enumerate(sets):
        for j, st in enumerate(stats):
            ax, r = axes[i * len(stats) + j], ds.sel(set=s, stat=st)
            assert ax.get_title() == s and ax.get_ylabel() == f"simulated {st.upper()}"
            assert ax.get_xscale() == "log" and ax.get_xlabel() == r"$\nu$ of $t_s(\nu)$"
            (c,) = ax.containers
            x, y, lo, hi = _bars(c)
            ref, se = r["reference"].values, r["reference_se"].values
            _close(x, ds["nu"].values)
            _close(y, ref)
            _close(lo, ref - 2 * se)
            _close(hi, ref + 2 * se)
            assert _hlines(ax) == [ref[-1]]  # the value at the largest nu


CHECKS = {"pval": check_pval, "bins": check_bins, "decimation": check_decimation,
          "binned-tailedness": check_binned_tailedness,
          "reference-sensitivity": check_reference_sensitivity}


@pytest.mark.parametrize("kind", list(CHECKS))
def test_study_panel_from_archive(archives, kind, tmp_path):
    fig = P.study(archives[kind])  # dispatch on attrs["study"]
    CHECKS[kind](fig, archives[kind])
    # the same content from the NetCDF file
    path = to_netcdf(archives[kind], tmp_path / f"{kind}.nc")
    CHECKS[kind](P.study(str(path)), archives[kind])
    # and the image through the command line: the figure's shape, not blank
    out = tmp_path / f"{kind}.png"
    assert main(["plot", kind, str(path), "-o", str(out)]) == 0
    img = mpimg.imread(out)
    w, h = fig.get_size_inches()
    assert img.shape[1] / img.shape[0] == pytest.approx(w / h, rel=0.05)
    assert np.ptp(img[..., :3]) > 0.5  # drawn, not a blank canvas


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
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert labels == ["ZMS (run A)", "RCE (run A)", "ZMS (run B)", "RCE (run B)"]
    ds = archives["pval"]
    for ax, sc in zip(_axes(fig), ["NIG", "TIG"], strict=True):
        assert len(ax.containers) == 4  # 2 statistics x 2 archives
        nu = ds["nu"].values
        for n, c in enumerate(ax.containers):
            a_, k = divmod(n, 2)
            x, y, _, _ = _bars(c)
            _close(x, nu * (1 + 0.02 * (k + 2 * a_)))  # each series shifted apart
            _close(y, ds["p_val"].sel(scenario=sc, stat=["zms", "rce"][k]))
            assert c.lines[0].get_marker() == ("o" if a_ == 0 else "s")  # a marker per run
    out = tmp_path / "cmp.png"
    assert main(["plot", "pval", str(a), str(b), "--label", "A", "--label", "B",
                 "-o", str(out)]) == 0
    assert np.ptp(mpimg.imread(out)[..., :3]) > 0.5
    with pytest.raises(uqx.InputError):
        P.pval([a, b], labels=["only one"])


def test_wrong_archive_is_refused(archives):
    with pytest.raises(uqx.InputError):
        P.pval(archives["bins"])
