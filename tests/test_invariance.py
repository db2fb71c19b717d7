"""Randomness keyed by coordinates: results never depend on chunking or scheduling."""

import numpy as np
import xarray as xr

import uqx


def _data(rng):
    sets = []
    for i, m in enumerate((700, 1100)):
        u = np.sqrt(1 / rng.gamma(3.0, 1 / 3.0, m))
        sets.append(uqx.from_arrays(u * rng.standard_normal(m), u, X=rng.uniform(0, 1, m),
                                    name=f"set{i}"))
    return uqx.stack(sets)


def test_bootstrap_identical_for_any_input_chunking_and_scheduler(rng):
    ds = _data(rng)
    stats = ["zms", "rce", "cc", "ence", "zmse", "zmse_X"]
    ref = uqx.bootstrap(ds, stats, n_boot=600, seed=7, bins=10, keep_replicates=True)
    variants = [
        dict(ds=ds.chunk({"sample": 100}), scheduler="threads", num_workers=1),
        dict(ds=ds.chunk({"set": 1, "sample": 333}), scheduler="threads", num_workers=2),
        dict(ds=ds, scheduler="synchronous", num_workers=None),
    ]
    for v in variants:
        out = uqx.bootstrap(v["ds"], stats, n_boot=600, seed=7, bins=10, keep_replicates=True,
                            scheduler=v["scheduler"], num_workers=v["num_workers"])
        xr.testing.assert_identical(out.drop_attrs(), ref.drop_attrs())


def test_set_results_do_not_depend_on_the_other_sets(rng):
    """Keys use the set name, not its position: a set alone gives the same draws."""
    ds = _data(rng)
    both = uqx.bootstrap(ds, ["zms", "ence"], n_boot=300, seed=3, bins=10)
    alone = uqx.bootstrap(ds.isel(set=[1]), ["zms", "ence"], n_boot=300, seed=3, bins=10)
    np.testing.assert_array_equal(both["ci_low"].values[1], alone["ci_low"].values[0])
    np.testing.assert_array_equal(both["ci_high"].values[1], alone["ci_high"].values[0])


def test_validate_identical_across_workers(rng):
    ds = _data(rng)
    kw = dict(n_boot=300, n_mc=200, seed=11, bins=10)
    a = uqx.validate(ds, ["zms", "rce", "ence"], num_workers=1, **kw)
    b = uqx.validate(ds, ["zms", "rce", "ence"], num_workers=2, **kw)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


def test_different_seeds_differ(rng):
    ds = _data(rng)
    a = uqx.bootstrap(ds, ["zms"], n_boot=300, seed=1)
    b = uqx.bootstrap(ds, ["zms"], n_boot=300, seed=2)
    assert not np.array_equal(a["ci_low"].values, b["ci_low"].values)
