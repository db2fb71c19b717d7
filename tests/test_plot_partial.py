"""Every figure kind from inputs that lack an optional part, and log axes for skewed uE.

A result without CC, without ζ_Sim2, without conditional routes or tailedness; data
without X or V; study archives holding one statistic: each kind draws what its input has,
or says in an InputError what is missing (never a KeyError traceback).
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import uqx  # noqa: E402
from uqx import plot as P  # noqa: E402
from uqx import sweeps  # noqa: E402
from uqx.cli import main  # noqa: E402
from uqx.dataio.synth import demo_sets, nig  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    return demo_sets(M=600, seed=5).isel(set=[0, 3])


@pytest.fixture(scope="module")
def no_x(data):
    return data.drop_vars("X")


@pytest.fixture(scope="module")
def res_no_cc(no_x):
    """ZMS, RCE and ENCE only; no X: consistency only, no adaptivity."""
    return uqx.validate(no_x, ["zms", "rce", "ence"], bootstrap=100, copies=40,
                        compute=uqx.Compute(seed=1))


@pytest.fixture(scope="module")
def res_zms(data):
    return uqx.validate(data, ["zms"], bootstrap=100, copies=20, conditional=False,
                        compute=uqx.Compute(seed=1))


def _panels(fig):
    return [ax for ax in fig.axes if ax.get_visible() and (ax.get_xlabel() or ax.get_ylabel())]


def _drawn(fig, n_min=1):
    panels = _panels(fig)
    assert len(panels) >= n_min
    assert any(ax.lines or ax.collections or ax.patches or ax.containers for ax in panels)
    return panels


def test_cli_zeta_draws_the_statistics_the_result_has(res_no_cc, res_zms, tmp_path, capsys):
    path = uqx.to_netcdf(res_no_cc, tmp_path / "res.nc")
    out = tmp_path / "zeta.png"
    assert main(["plot", "zeta", str(path), "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
    assert (tmp_path / "zeta_agreement.png").stat().st_size > 1000  # ZMS and RCE present
    fig = P.zeta_bars(path)
    assert [ax.get_ylabel() for ax in _panels(fig)] == [
        r"$\zeta$ (ZMS)", r"$\zeta$ (RCE)", r"$\zeta$ (ENCE)"]
    # only ZMS: one panel, no agreement figure (it needs RCE)
    path = uqx.to_netcdf(res_zms, tmp_path / "zms.nc")
    assert main(["plot", "zeta", str(path), "-o", str(tmp_path / "z1.png")]) == 0
    assert not (tmp_path / "z1_agreement.png").exists()
    assert len(_panels(P.zeta_bars(path))) == 1
    # a statistic the result lacks: a clear error, exit status 2 from the CLI
    assert main(["plot", "zeta", str(path), "--stat", "cc", "-o", str(tmp_path / "z.png")]) == 2
    assert "no statistic cc; it has zms" in capsys.readouterr().err
    with pytest.raises(uqx.InputError, match="needs .* of zms and rce"):
        P.zeta_agreement(res_zms)


def test_zeta_bars_without_sim2_or_simulated_references(res_no_cc):
    lean = res_no_cc.drop_vars([v for v in res_no_cc.data_vars
                                if v.startswith(("zeta_sim2", "sim2_"))])
    fig = P.zeta_bars(lean)
    assert len(_panels(fig)) == 3
    # ENCE: Sim bars for N and T6, no BS bar (simulated reference), no Sim2 bars: no
    # empty slots either
    assert len(_panels(fig)[2].containers) == 2
    bare = res_no_cc.drop_vars(["zeta_sim", "zeta_sim2"])
    assert len(_drawn(P.zeta_bars(bare, stats=["zms"]))) == 1


def test_tailedness_from_a_result_with_part_of_the_metrics(res_no_cc, data):
    assert len(_drawn(P.tailedness_map(res_no_cc))) == 2
    beta_only = res_no_cc.drop_vars([v for v in res_no_cc.data_vars
                                     if str(v).startswith("kappa_cs")])
    assert len(_drawn(P.tailedness_map(beta_only))) == 1
    with pytest.raises(uqx.InputError, match="no kappa tailedness"):
        P.tailedness_map(beta_only, metrics=("kappa",))
    none = beta_only.drop_vars([v for v in beta_only.data_vars
                                if str(v).startswith("beta_gm")])
    with pytest.raises(uqx.InputError, match="E.*uE"):
        P.tailedness_map(none)
    assert len(_drawn(P.tailedness_map(data))) == 2


DATA_KINDS = {
    "e_vs_u": lambda d: P.e_vs_u(d),
    "reliability": lambda d: P.reliability(d, n_bins=5),
    "lzisd": lambda d: P.lzisd(d, n_bins=5),
    "lzv": lambda d: P.lzisd(d, stat="lzv", n_bins=5),
    "lcp": lambda d: P.lcp(d, n_bins=5),
    "calibration": lambda d: P.calibration(d),
    "conditional_calibration": lambda d: P.conditional_calibration(d, n_bins=3),
    "confidence": lambda d: P.confidence(d, n_rep=20, n_boot=20),
    "distributions": lambda d: P.distributions(d.isel(set=[0])),
    "tailedness_map": lambda d: P.tailedness_map(d),
}


@pytest.mark.parametrize("kind", sorted(DATA_KINDS))
def test_data_kinds_without_x_or_v(kind, no_x, res_no_cc):
    _drawn(DATA_KINDS[kind](no_x))
    if kind != "tailedness_map":  # a result is no input for the raw-data figures
        with pytest.raises(uqx.InputError, match="'E' and 'uE'"):
            DATA_KINDS[kind](res_no_cc)


def test_adaptivity_figures_say_the_variable_is_missing(no_x):
    for draw in (lambda: P.z_vs_x(no_x, by="X"), lambda: P.lzisd(no_x, by="X", n_bins=5),
                 lambda: P.lcp(no_x, by="V")):
        with pytest.raises(uqx.InputError, match="X|V"):
            draw()


def test_extrapolation_of_a_result_without_the_sweep(res_zms):
    with pytest.raises(uqx.InputError, match="extrapolation"):
        P.extrapolation(res_zms)


@pytest.fixture(scope="module")
def archives():
    sets = uqx.stack([uqx.from_arrays(*nig(1500, 6.0, seed=20 + i), name=f"s{i}")
                      for i in range(2)])
    return {
        "appendix-b": sweeps.appendix_b(M=[1000], N=[10, 20], nu=[6], models=["NIG"],
                                        n_mc=20, seed=1),
        "pval": sweeps.pval(scenario=["NIG"], nu={"NIG": [6]}, n_datasets=8, n_boot=60,
                            M=500, seed=1),
        "bins": sweeps.bins(sets, n_mc=10),
        "decimation": sweeps.decimation(sets, n_boot=60, k_max=1.0, k_step=0.5),
        "binned-tailedness": sweeps.binned_tailedness(sets),
        "reference-sensitivity": sweeps.reference_sensitivity(sets, nu=[4, 20], n_mc=20,
                                                              bins=10),
    }


def _part(kind, arc):
    """The archive reduced to one statistic, variable or set (an optional part missing)."""
    for dim in ("stat", "var", "set"):
        if dim in arc.dims and arc.sizes[dim] > 1:
            return arc.isel({dim: [0]})
    return arc


@pytest.mark.parametrize("kind", ["appendix-b", "pval", "bins", "decimation",
                                  "binned-tailedness", "reference-sensitivity"])
def test_study_kinds_from_reduced_archives(kind, archives, tmp_path):
    arc = _part(kind, archives[kind])
    _drawn(P.study(arc))
    path = uqx.to_netcdf(arc, tmp_path / f"{kind}.nc")
    assert main(["plot", kind, str(path), "-o", str(tmp_path / f"{kind}.png")]) == 0
    # a required variable missing: named in the error
    required = {"appendix-b": "slope", "pval": "p_val"}.get(kind)
    if required:
        with pytest.raises(uqx.InputError, match=required):
            P.study(arc.drop_vars(required))


def _skewed(M=3000, seed=4):
    rng = np.random.default_rng(seed)
    u = np.exp(rng.normal(0.0, 1.0, M))  # ln u ~ N(0, 1): about 5 decades
    return uqx.from_arrays(u * rng.normal(size=M), u, X=np.exp(rng.normal(0, 1.5, M)),
                           name="skewed")


def _narrow(M=3000, seed=4):
    rng = np.random.default_rng(seed)
    u = rng.uniform(1.0, 2.0, M)
    return uqx.from_arrays(u * rng.normal(size=M), u, X=rng.uniform(1, 2, M), name="narrow")


@pytest.mark.parametrize("kind", ["reliability", "lzisd", "lzv", "lcp"])
def test_log_axes_when_uE_spans_more_than_a_decade(kind):
    draw = {"reliability": lambda d, **k: P.reliability(d, **k),
            "lzisd": lambda d, **k: P.lzisd(d, **k),
            "lzv": lambda d, **k: P.lzisd(d, stat="lzv", **k),
            "lcp": lambda d, **k: P.lcp(d, **k)}[kind]
    assert _panels(draw(_skewed()))[0].get_xscale() == "log"
    assert _panels(draw(_narrow()))[0].get_xscale() == "linear"
    if kind == "reliability":
        ax = _panels(draw(_skewed()))[0]
        assert ax.get_yscale() == "log"
        assert _panels(draw(_skewed(), log=False))[0].get_xscale() == "linear"
    else:  # adaptivity: the scale follows the conditioning variable
        assert _panels(draw(_skewed(), by="X"))[0].get_xscale() == "log"
        assert _panels(draw(_skewed(), logx=False))[0].get_xscale() == "linear"
        rng = np.random.default_rng(5)
        u = rng.uniform(1.0, 2.0, 3000)  # X uniform on (0, 1): over two decades, not skewed
        flat = uqx.from_arrays(u * rng.normal(size=u.size), u, X=rng.uniform(0, 1, u.size))
        assert _panels(draw(flat, by="X"))[0].get_xscale() == "linear"


def test_cli_reliability_linear_and_log_flags(tmp_path):
    path = uqx.to_netcdf(_skewed(), tmp_path / "skewed.nc")
    for flag in ("--log", "--linear"):
        out = tmp_path / f"rel{flag}.png"
        assert main(["plot", "reliability", str(path), flag, "-o", str(out)]) == 0
        assert out.stat().st_size > 1000
    with pytest.raises(SystemExit):
        main(["plot", "reliability", str(path), "--log", "--linear", "-o", str(out)])
