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
    """Keys use the data content, not its position: a set alone gives the same draws."""
    ds = _data(rng)
    both = uqx.bootstrap(ds, ["zms", "ence"], n_boot=300, seed=3, bins=10)
    alone = uqx.bootstrap(ds.isel(set=[1]), ["zms", "ence"], n_boot=300, seed=3, bins=10)
    np.testing.assert_array_equal(both["ci_low"].values[1], alone["ci_low"].values[0])
    np.testing.assert_array_equal(both["ci_high"].values[1], alone["ci_high"].values[0])


def test_validate_identical_across_workers(rng):
    ds = _data(rng)
    kw = dict(bootstrap=300, copies=200, binning=10)
    a = uqx.validate(ds, ["zms", "rce", "ence"], compute=uqx.Compute(seed=11, num_workers=1),
                     **kw)
    b = uqx.validate(ds, ["zms", "rce", "ence"], compute=uqx.Compute(seed=11, num_workers=2),
                     **kw)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


def test_different_seeds_differ(rng):
    ds = _data(rng)
    a = uqx.bootstrap(ds, ["zms"], n_boot=300, seed=1)
    b = uqx.bootstrap(ds, ["zms"], n_boot=300, seed=2)
    assert not np.array_equal(a["ci_low"].values, b["ci_low"].values)


def test_streamed_group_tasks_equal_in_memory_route(monkeypatch):
    """Large data, moment statistics: the bootstrap runs one dask task per (replicate
    block, group of sample blocks) and adds the groups in order; the in-memory route
    (one evaluator call per replicate block) must give the same bits."""
    import uqx.engine.resample as rs
    from uqx.engine.evaluator import SetEvaluator
    from uqx.engine.statistic import parse_stat

    monkeypatch.setattr(rs, "SAMPLE_GROUP", 2)  # 3 groups at this M instead of 1
    M = 5 * rs.SAMPLE_BLOCK + 77
    rng = np.random.default_rng(4)
    u = np.sqrt(1 / rng.gamma(3.0, 1 / 3.0, M))
    E = u * rng.standard_normal(M)
    stats = ["zms", "rce", "nll"]
    plan = rs.BootstrapPlan(M=M, n_boot=1200, seed=4, key=rs.content_key(E, u))
    assert plan.n_groups == 3 and plan.n_blocks == 2
    chunked = uqx.from_arrays(E, u).chunk({"sample": 20_000})
    out = uqx.bootstrap(chunked, stats, n_boot=1200, seed=4, keep_replicates=True,
                        num_workers=2)
    ev = SetEvaluator(E, u, [parse_stat(s) for s in stats])
    blocks = [ev.replicates(plan, b) for b in range(plan.n_blocks)]
    for j, s in enumerate(stats):
        T = np.concatenate([b[s][:, 0] for b in blocks])
        np.testing.assert_array_equal(out["replicates"].values[0, j, 1:], T)
