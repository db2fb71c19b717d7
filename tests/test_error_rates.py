"""The error-rates study: verdicts measured on synthetic data of known truth.

The reduced grid here asserts the rates of the issue with tolerances from their binomial
spread (3 sd above a 5 % size, 3 sd below a 95 % power); the full grid is
``benchmarks/bench_error_rates.py --full``.
"""

import numpy as np
import pytest

import uqx
from uqx.dataio.schema import group_of
from uqx.errors import InputError
from uqx.sweeps.error_rates import (
    CODES,
    DESIGNS,
    SCENARIOS,
    TESTS,
    define,
    error_rates,
    rates_table,
    synthetic_set,
)

KW = dict(n_boot=300, n_mc=150, scheduler="synchronous")
HEADLINE_STATS = ("zms", "rce", "cc", "ence", "zmse", "zve", "consistency", "adaptivity")


def _upper(p, n, k=3.0):
    """Largest count compatible with a rate p over n sets (k binomial sd above)."""
    return n * p + k * np.sqrt(n * p * (1 - p))


def _lower(p, n, k=3.0):
    return n * p - k * np.sqrt(n * p * (1 - p))


@pytest.fixture(scope="module")
def calibrated():
    """Calibrated sets of two shapes (heavy-tailed uncertainties and errors), M = 1000."""
    return error_rates(designs=["ig3_t6", "lognormal_laplace"], M=[1000],
                       scenarios=["calibrated"], n_datasets=60, **KW)


def test_size_on_calibrated_data(calibrated):
    """False rejections: at most 5 % per verdict, 10 % over the whole result (+3 sd)."""
    assert not group_of(calibrated).mismatches(calibrated)  # uqx.dataio.schema
    inv = calibrated["verdict"].values == CODES.index("invalid")  # (design, M, scen, rep, test)
    n = calibrated.sizes["replicate"]
    for d in range(calibrated.sizes["design"]):
        for t in HEADLINE_STATS:
            k = int(inv[d, 0, 0, :, TESTS.index(t)].sum())
            assert k <= _upper(0.05, n), (str(calibrated["design"].values[d]), t, k)
        anyk = int((calibrated["verdict"].values[d, 0, 0, :, TESTS.index("any")] == 1).sum())
        assert anyk <= _upper(0.10, n), anyk


@pytest.mark.parametrize("n_sets", [160, pytest.param(400, marks=pytest.mark.slow)])
def test_small_heavy_tailed_sets_meet_the_size_of_the_issue(n_sets):
    """t_s(4) errors at M = 500, the grid's hardest cell, at the study's settings.

    The issue's criterion per cell: Wilson-cc upper limit of the `invalid` rate at most
    7 % over 400 sets, 10 % for the whole result. With the fitted member at ν̂ for ZMS,
    20 of these 400 sets were `invalid` (upper limit 7.7 %), all of them on the low side.
    ``make test`` asks it of the first 160 of these sets (a wider upper limit, so a
    stricter test of the rate: ZMS `invalid` on 2, upper limit 4.9 %); ``make test-slow``
    of the 400.
    """
    ds = error_rates(designs=["ig3_t4"], M=[500], scenarios=["calibrated"],
                     n_datasets=n_sets, n_boot=1000, n_mc=500, scheduler="synchronous")
    cell = ds.isel(design=0, M=0, scenario=0)
    for t in ("zms", "mean_z", "consistency"):  # RCE is a diagnostic: it decides nothing
        assert float(cell["rate_invalid_high"].sel(test=t)) <= 0.07, t
    assert float(cell["rate_invalid"].sel(test="any")) <= 0.10


def test_a_gated_question_counts_its_false_rejections_over_every_set(calibrated):
    """up_to_factor is asked only where average calibration is rejected; where it is not
    asked the procedure retained it, so its `invalid` rate is over every set (else a few
    rejections among the few sets asked read as a large rate), its `valid` rate over
    those asked."""
    v = calibrated["verdict"].sel(test="up_to_factor").values
    every = np.isfinite(v).sum(axis=-1)
    asked = (np.isfinite(v) & (v != CODES.index("not tested"))).sum(axis=-1)
    assert (asked < every).all()  # most sets never ask it
    np.testing.assert_allclose(calibrated["rate_invalid"].sel(test="up_to_factor").values,
                               (v == CODES.index("invalid")).sum(axis=-1) / every)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(calibrated["rate_valid"].sel(test="up_to_factor").values,
                                   (v == CODES.index("valid")).sum(axis=-1) / asked)


def test_papers_rule_is_recorded_beside(calibrated):
    z = calibrated["verdict"].sel(test=[f"{s}_zeta" for s in ("ence", "zmse", "zve")]).values
    assert np.isfinite(z).all()
    # near calibration the papers' rule is mostly inconclusive on binned statistics
    assert np.mean(z == CODES.index("inconclusive")) > 0.5


def test_power_on_miscalibrated_data():
    """Scaled, inconsistent and non-adaptive uncertainties are caught (M = 2000)."""
    ds = error_rates(designs=["ig6_normal"], M=[2000], power_M=[2000],
                     power_designs=["ig6_normal"],
                     scenarios=["scale0.8", "scale1.25", "gamma0.5", "x-variance"],
                     n_datasets=12, n_boot=300, n_mc=400, scheduler="synchronous")
    inv = ds["verdict"].isel(design=0, M=0) == CODES.index("invalid")
    val = ds["verdict"].isel(design=0, M=0) == CODES.index("valid")
    n = ds.sizes["replicate"]
    for sc in ("scale0.8", "scale1.25"):
        for t in ("zms", "average"):
            assert int(inv.sel(scenario=sc, test=t).sum()) >= _lower(0.99, n, 2), (sc, t)
    assert int(inv.sel(scenario="gamma0.5", test="consistency").sum()) >= _lower(0.95, n)
    assert int(inv.sel(scenario="x-variance", test="adaptivity").sum()) >= _lower(0.95, n)
    assert int(val.sel(scenario="x-variance", test="consistency").sum()) >= _lower(0.90, n)


def test_archive_summary_plot_and_table(tmp_path):
    from uqx.cli import main
    from uqx.plot import error_rates as panel
    from uqx.sweeps import summary_text

    out = tmp_path / "er.nc"
    code = main(["-q", "sweep", "error-rates", "--designs", "ig6_normal,uniform_skewed",
                 "--M", "400", "--scenarios", "calibrated,scale0.8", "--power-M", "400",
                 "--power-designs", "ig6_normal", "--n-datasets", "3", "--n-boot", "200",
                 "--n-mc", "40", "--scheduler", "synchronous", "-o", str(out)])
    assert code == 0 and out.exists()
    text = summary_text(out)
    assert "rate_invalid" in text and "error-rates" in text
    table = rates_table(out)
    assert "| calibrated | 400 | 2 (3 sets each) | invalid (max) |" in table
    assert "| scale0.8 | 400 | 1 (3 sets each) | invalid (min) |" in table
    one = rates_table(out, designs=["uniform_skewed"])
    assert "| calibrated | 400 | 1 (3 sets each) | invalid (max) |" in one
    assert "scale0.8" not in one  # no power cell on that design
    with pytest.raises(InputError, match="ig3_t4"):
        rates_table(out, designs=["ig3_t4"])
    fig = panel(out)
    assert len([a for a in fig.axes if a.get_title()]) == 2
    import xarray as xr

    ds = xr.load_dataset(out)
    # scale0.8 runs on its power design only: the other design's cell is empty
    assert int(ds["n_sets"].sel(design="uniform_skewed", scenario="scale0.8").max()) == 0
    assert int(ds["n_sets"].sel(design="ig6_normal", scenario="scale0.8", test="zms").max()) == 3
    # adaptivity on X is tested at M = 400 (its statistics binned on X)
    assert int(ds["n_sets"].sel(design="ig6_normal", scenario="scale0.8",
                                test="adaptivity").max()) == 3
    # the power layers are recorded per set for each question
    assert ds["power_layer"].dims[-2:] == ("question", "layer")


def test_synthetic_sets_are_what_they_say():
    E, u, X = synthetic_set("ig6_normal", "calibrated", 200_000, seed=1, index=0)
    assert np.mean((E / u) ** 2) == pytest.approx(1.0, abs=0.02)
    Es, us, _ = synthetic_set("ig6_normal", "scale0.8", 200_000, seed=1, index=0)
    assert np.mean((Es / us) ** 2) == pytest.approx(1 / 0.64, rel=0.02)
    E2, u2, _ = synthetic_set("ig6_normal", "gamma0.5", 200_000, seed=1, index=0)
    # reported c·u^0.5 with the mean square of u: E[u²] = 3/2 for u² ~ IG(3, 3)
    assert np.mean(u2**2) == pytest.approx(1.5, rel=0.03)
    assert np.mean(E2**2) == pytest.approx(np.mean(u2**2), rel=0.03)  # RCE ≈ 0
    E3, u3, X3 = synthetic_set("uniform_skewed", "x-variance", 200_000, seed=1, index=0)
    z = E3 / u3
    lo, hi = X3 < 0.2, X3 > 0.8
    assert np.mean(z[hi] ** 2) > 3 * np.mean(z[lo] ** 2)  # variance grows with X
    for d in DESIGNS:
        E, u, X = synthetic_set(d, "calibrated", 50_000, seed=2, index=1)
        tol = 0.35 if d.endswith("t2.5") else 0.15  # t(2.5): infinite fourth moment
        assert np.all(u > 0) and np.mean((E / u) ** 2) == pytest.approx(1.0, abs=tol), d
    # tied uE: five levels, rows sorted by |E| (the order that split the tie groups)
    E, u, _ = synthetic_set("tied5_normal", "calibrated", 5000, seed=2, index=0)
    assert np.unique(u).size == 5 and np.all(np.diff(np.abs(E)) >= 0)
    # the shape changes with uE: normal below the median, t_s(4) above
    E, u, _ = synthetic_set("ig6_mixed", "calibrated", 200_000, seed=2, index=0)
    from scipy.stats import kurtosis

    lo, hi = u < np.median(u), u > np.median(u)
    assert abs(kurtosis(E[lo] / u[lo])) < 0.1 and kurtosis(E[hi] / u[hi]) > 2
    # uE 40 % too small in its top decile: there the errors' sd is uE / 0.6
    E, u, _ = synthetic_set("ig6_normal", "top0.6", 200_000, seed=2, index=0)
    top = u > np.quantile(u, 0.9)
    assert top.mean() == pytest.approx(0.1, abs=1e-3)
    z2 = (E / u) ** 2
    assert np.mean(z2[top]) == pytest.approx(1 / 0.36, rel=0.05)
    assert np.mean(z2[~top]) == pytest.approx(1.0, abs=0.02)
    # top0.6-true: 0.6 u reported in the top decile of the true u
    E, u, _ = synthetic_set("ig6_normal", "top0.6-true", 200_000, seed=2, index=0)
    _, u_true, _ = synthetic_set("ig6_normal", "calibrated", 200_000, seed=2, index=0)
    top = u != u_true
    assert top.mean() == pytest.approx(0.1, abs=1e-3)
    assert np.all(u[top] == pytest.approx(0.6 * u_true[top]))
    z2 = (E / u) ** 2
    assert np.mean(z2[top]) == pytest.approx(1 / 0.36, rel=0.05)
    assert np.mean(z2[~top]) == pytest.approx(1.0, abs=0.02)


def test_bad_options():
    from uqx.errors import InputError

    with pytest.raises(InputError, match="unknown or missing design"):
        define(designs=["ig6_cauchy"])
    with pytest.raises(InputError, match="unknown or missing design"):
        define(scenarios=["scale2"])
    with pytest.raises(InputError, match="n_mc"):
        define(n_mc=3)
    assert set(SCENARIOS) >= {"calibrated", "gamma0.5", "x-variance"}


def test_sets_of_a_block_share_u_and_X():
    E0, u0, X0 = synthetic_set("ig3_t6", "calibrated", 500, seed=4, index=0)
    E1, u1, X1 = synthetic_set("ig3_t6", "calibrated", 500, seed=4, index=1)
    Es, us, Xs = synthetic_set("ig3_t6", "shift0.2", 500, seed=4, index=0)
    np.testing.assert_array_equal(u0, u1)
    np.testing.assert_array_equal(X0, X1)
    np.testing.assert_array_equal(u0, us)
    np.testing.assert_array_equal(X0, Xs)
    assert not np.any(E0 == E1) and not np.any(E0 == Es)
    _, u10, _ = synthetic_set("ig3_t6", "calibrated", 500, seed=4, index=10)
    assert not np.array_equal(u0, u10)  # the next block of sets draws its own uE
    _, u2, X2 = synthetic_set("ig3_t6", "calibrated", 600, seed=4, index=0)
    assert not np.array_equal(u0, u2[:500]) and not np.array_equal(X0, X2[:500])


def test_block_of_sets_gives_the_verdicts_of_one_set_at_a_time():
    """The kernel validates a block in one call, sharing the E-free members' copies."""
    from uqx.dataio.model import from_arrays, stack
    from uqx.inference.reference import shared_nulls
    from uqx.sweeps.error_rates import STATS, kernel, verdict_codes
    from uqx.workflow.validation import validate

    study = define(designs=["ig6_t6"], M=[600], scenarios=["calibrated"], n_datasets=3,
                   n_boot=200, n_mc=100, seed=3)
    cell = {"design": "ig6_t6", "M": 600, "scenario": "calibrated"}
    got = kernel(cell, 0, 3, study.params, None)
    sets = [from_arrays(*synthetic_set("ig6_t6", "calibrated", 600, seed=3, index=i)[:2],
                        X=synthetic_set("ig6_t6", "calibrated", 600, seed=3, index=i)[2],
                        name=f"one-{i}") for i in range(3)]
    kw = dict(bootstrap=200, copies=100, compute=uqx.Compute(seed=3, scheduler="synchronous"))
    with shared_nulls():
        block = validate(stack(sets), list(STATS), **kw)
    for i in range(3):
        one = validate(sets[i], list(STATS), **kw)
        np.testing.assert_array_equal(got["verdict"][i], verdict_codes(one))
        assert got["nu_fit"][i] == float(one["nu_fit"].values[0])
        for v in ("p_value", "question_p_value", "estimate", "ci_low", "zeta"):
            np.testing.assert_array_equal(block[v].values[i], one[v].values[0], err_msg=v)


def test_cluster_robust_interval_widens_with_shared_blocks():
    from uqx.sweeps.error_rates import cluster_rate_interval

    rng = np.random.default_rng(0)
    ok = np.ones((400, 1), dtype=bool)
    iid = rng.random((400, 1)) < 0.05
    # the same rate, but all hits in two blocks of ten: the blocks are not independent
    clustered = np.zeros((400, 1), dtype=bool)
    clustered[:20] = True
    r1, lo1, hi1 = cluster_rate_interval(iid, ok, 10)
    r2, lo2, hi2 = cluster_rate_interval(clustered, ok, 10)
    assert r2[0] == 0.05
    assert hi2[0] - lo2[0] > 2 * (hi1[0] - lo1[0])


def test_combined_runs_read_as_one_grid_with_more_sets_where_asked(tmp_path):
    """Runs at different M with different set counts join into one archive whose rates
    are those of each run; the sets of the longer run start with those of the shorter."""
    from uqx.sweeps.error_rates import combine

    kw = dict(designs=["ig6_normal"], scenarios=["calibrated"], n_boot=100, n_mc=40,
              scheduler="synchronous", seed=3)
    small = error_rates(M=[400], n_datasets=20, output=tmp_path / "a.nc", **kw)
    large = error_rates(M=[600], n_datasets=10, output=tmp_path / "b.nc", **kw)
    both = combine([tmp_path / "b.nc", tmp_path / "a.nc"])
    assert [int(m) for m in both["M"].values] == [400, 600]
    assert both.attrs["n_datasets_by_M"] == "400:20, 600:10" and both.sizes["replicate"] == 20
    assert int(both["n_sets"].sel(M=600, test="zms").max()) == 10
    assert int(both["n_sets"].sel(M=400, test="zms").max()) == 20
    for part, M in ((small, 400), (large, 600)):
        for var in ("rate_invalid", "rate_valid", "rate_invalid_high", "rate_valid_low"):
            np.testing.assert_array_equal(both[var].sel(M=M).values, part[var].sel(M=M).values)
    assert "(10 sets each)" in rates_table(both) and "(20 sets each)" in rates_table(both)
    # the first 10 sets of a 20-set run are the sets of a 10-set run
    ten = error_rates(M=[400], n_datasets=10, **kw)
    np.testing.assert_array_equal(ten["verdict"].values,
                                  small["verdict"].isel(replicate=slice(0, 10)).values)
    with pytest.raises(InputError, match="share an M"):
        combine([tmp_path / "a.nc", tmp_path / "a.nc"])
    other = small.copy()
    other.attrs = dict(small.attrs, n_mc=41)
    other = other.assign_coords(M=[800])
    with pytest.raises(InputError, match="n_mc"):
        combine([tmp_path / "a.nc", other])
