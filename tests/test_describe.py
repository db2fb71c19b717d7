"""xarray layer: wrapper == kernel, dask == eager, compute == kernels on sorted bins."""

import dask.array as da
import numpy as np
import pytest
import twins as binned
import xarray as xr

import uqx
from uqx.engine.binning import make_bins
from uqx.engine.stats import tailedness
from uqx.inference.describe import DESCRIBE_STATS, KERNELS, apply_kernel, compute, describe


@pytest.fixture
def stacked(rng):
    sets = []
    for i, m in enumerate((400, 650, 900)):
        u = rng.gamma(4.0, 0.25, m)
        sets.append(uqx.from_arrays(u * rng.standard_normal(m) * (0.9 + 0.1 * i), u,
                                    X=rng.uniform(0, 1, m), name=f"s{i}"))
    return uqx.stack(sets)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_apply_kernel_equals_kernel_per_set(stacked, name):
    out = apply_kernel(stacked, name)
    assert out.dims == ("set",)
    fn, needs_e, needs_u = KERNELS[name]
    for i, sd in enumerate(uqx.iter_sets(stacked)):
        args = ([sd.E] if needs_e else []) + ([sd.uE] if needs_u else [])
        np.testing.assert_allclose(out.values[i], fn(*args), rtol=1e-12)


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_apply_kernel_dask_equals_eager(stacked, name):
    lazy = stacked.copy()
    for v in ("E", "uE"):
        lazy[v] = (("set", "sample"), da.from_array(stacked[v].values, chunks=(1, -1)))
    out = apply_kernel(lazy, name)
    assert isinstance(out.data, da.Array)  # stays lazy until computed
    xr.testing.assert_allclose(out.compute(), apply_kernel(stacked, name))


def test_compute_binned_equals_kernels(stacked):
    res = compute(stacked, ["ence", "ence_sd", "uce", "zmse", "zve", "zmse_X"], bins=10)
    for i, sd in enumerate(uqx.iter_sets(stacked)):
        b = make_bins(sd.uE, 10)
        E, u = sd.E[b.order], sd.uE[b.order]
        expect = {
            "ence": binned.ence(E, u, b.edges),
            "ence_sd": binned.ence(E, u, b.edges, kind="sd"),
            "uce": binned.uce(E, u, b.edges),
            "zmse": binned.zmse(E, u, b.edges),
            "zve": binned.zve(E, u, b.edges),
        }
        bx = make_bins(sd.X, 10)
        expect["zmse_X"] = binned.zmse(sd.E[bx.order], sd.uE[bx.order], bx.edges)
        for k, v in expect.items():
            np.testing.assert_allclose(res.sel(set=f"s{i}", stat=k).item(), v, rtol=1e-10)


def test_describe_contents(stacked):
    d = describe(stacked, bins=10)
    assert list(d["stat"].values) == list(DESCRIBE_STATS)
    assert d["M"].values.tolist() == [400, 650, 900]
    for i, sd in enumerate(uqx.iter_sets(stacked)):
        t = tailedness.tailedness(sd.E, sd.uE)
        for k, v in t.items():
            np.testing.assert_allclose(d[k].values[i], v, rtol=1e-12)
    assert d["beta_gm_u2"].attrs["safety_limit"] == 0.6


def test_compute_unknown_stat_raises(stacked):
    with pytest.raises(uqx.InputError, match="unknown statistic"):
        compute(stacked, ["zmz"])


def test_compute_missing_conditioning_variable(rng):
    u = rng.uniform(1, 2, 100)
    ds = uqx.from_arrays(u * rng.standard_normal(100), u)
    with pytest.raises(uqx.InputError, match="needs variable 'X'"):
        compute(ds, ["zmse_X"], bins=2)
