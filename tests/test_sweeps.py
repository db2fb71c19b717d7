"""Sweep engine and studies (uqx.sweeps): small versions of every study, invariance,
resume, bad input."""

import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import uqx
from uqx.dataio.model import from_arrays, stack
from uqx.dataio.netcdf import read_netcdf
from uqx.dataio.schema import group_of
from uqx.dataio.synth import nig
from uqx.errors import InputError
from uqx.sweeps import (
    appendix_b,
    binned_tailedness,
    bins,
    compare,
    decimation,
    pval,
    reference_sensitivity,
    run_study,
    summary_text,
)
from uqx.sweeps.engine import SweepInterrupted, run_dir_for

SMALL_B = dict(M=[2000, 4000], N=[10, 20, 40], nu=[3, 6], n_mc=100, seed=3)
TINY_B = dict(M=[1500], N=[10, 50], nu=[4], n_mc=300, seed=5)


@pytest.fixture(scope="module")
def paper_sets(data_dir):
    return uqx.load_paper_sets(data_dir)


def _identical(a, b):
    assert set(a.data_vars) == set(b.data_vars)
    for v in a.data_vars:
        np.testing.assert_array_equal(a[v].values, b[v].values, err_msg=v)


# -- appendix-b -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def small_b():
    return appendix_b(**SMALL_B)


def test_appendix_b_layout(small_b):
    ds = small_b
    assert ds["ence"].dims == ("model", "M", "N", "nu", "replicate")
    assert ds["zmse"].shape == (2, 2, 3, 2, 100)
    assert list(ds["model"].values) == ["NIG", "T6IG"]
    assert list(ds["N"].values) == [10, 20, 40]
    assert ds["slope"].dims == ("model", "stat")
    assert ds.attrs["study"] == "appendix-b" and ds.attrs["ig_shape"] == "nu"
    assert not group_of(ds).mismatches(ds)  # the described variables: uqx.dataio.schema
    assert ds.attrs["seed"] == 3
    # summaries are computed from the per-replicate values of the archive
    np.testing.assert_allclose(ds["ence_mean"], ds["ence"].mean("replicate"))
    np.testing.assert_allclose(ds["zmse_se"],
                               ds["zmse"].std("replicate", ddof=1) / np.sqrt(100))
    assert np.all(ds["ence"] > 0) and np.all(ds["zmse"] > 0)


def test_appendix_b_slopes(small_b):
    """000 App. B: NIG ENCE ~ 0.56 x, ZMSE ~ 1.14 x; T6IG 0.779 x, 1.577 x (methods: the papers).
    Tolerance: 4 fit standard errors (they carry the Monte-Carlo scatter of 100 sets per
    cell) plus the papers' ±2 % on slopes."""
    expected = {("NIG", "ence"): 0.56, ("NIG", "zmse"): 1.14,
                ("T6IG", "ence"): 0.779, ("T6IG", "zmse"): 1.577}
    for (model, stat), b in expected.items():
        r = small_b.sel(model=model, stat=stat)
        tol = 4 * float(r["slope_se"]) + 0.02 * b
        assert abs(float(r["slope"]) - b) < tol, (model, stat, float(r["slope"]), tol)


def test_appendix_b_half_nu_differs_and_is_recorded():
    a = appendix_b(**{**TINY_B, "n_mc": 100})
    b = appendix_b(**{**TINY_B, "n_mc": 100}, ig_shape="half-nu")
    assert b.attrs["ig_shape"] == "half-nu"
    assert not np.array_equal(a["ence"].values, b["ence"].values)


# -- invariance -------------------------------------------------------------------------

def test_chunk_and_scheduler_invariance(tmp_path):
    ref = appendix_b(**TINY_B, output=tmp_path / "a.nc")
    other = appendix_b(**TINY_B, chunk_size=300, scheduler="sync", output=tmp_path / "b.nc")
    _identical(ref, other)
    res = compare(tmp_path / "a.nc", tmp_path / "b.nc")
    assert res.identical and res.n_flagged == 0
    p1 = pval(scenario="NIG", nu=[6], n_datasets=40, n_boot=200, M=500, seed=2)
    p2 = pval(scenario="NIG", nu=[6], n_datasets=40, n_boot=200, M=500, seed=2,
              chunk_size=40, scheduler="sync")
    _identical(p1, p2)


def test_distributed_local_cluster_identical(tmp_path):
    distributed = pytest.importorskip("distributed")
    ref = appendix_b(**TINY_B)
    out = tmp_path / "d.nc"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        with distributed.Client(cluster) as client:
            got = appendix_b(**TINY_B, scheduler=client, chunk_size=100, output=out,
                             keep_run=True)
        got2 = appendix_b(**TINY_B, scheduler=cluster.scheduler_address)
    _identical(ref, got)
    _identical(ref, got2)
    # the client saved every block (no file system shared with the workers needed)
    assert len(list(run_dir_for(out).glob("*.npz"))) == 3
    assert compare(out, appendix_b(**TINY_B)).identical


# -- resume -----------------------------------------------------------------------------

def test_resume_after_interruption_hook(tmp_path):
    out = tmp_path / "r.nc"
    with pytest.raises(SweepInterrupted):
        appendix_b(**TINY_B, output=out, chunk_size=300, _stop_after=2)
    run_dir = run_dir_for(out)
    assert not out.exists()
    assert len(list(run_dir.glob("*.npz"))) == 2
    with pytest.raises(InputError, match="--resume"):
        appendix_b(**TINY_B, output=out)
    # another parameter set is refused, not mixed in
    with pytest.raises(InputError, match="another run"):
        appendix_b(**{**TINY_B, "seed": 6}, output=out, resume=True)
    with pytest.raises(InputError, match="another run"):
        pval(scenario="NIG", nu=[6], n_datasets=20, output=out, resume=True)
    got = appendix_b(**TINY_B, output=out, resume=True)
    assert out.exists() and not run_dir.exists()
    _identical(got, appendix_b(**TINY_B))
    _identical(read_netcdf(out)[list(got.data_vars)], got)


def _kill_after_blocks(call, run_dir, n_blocks, *, timeout, poll=None):
    """Run ``call`` (an ``appendix_b(...)`` expression) in a child process and SIGKILL it
    once ``run_dir`` holds ``n_blocks`` blocks (or after ``timeout`` s); ``poll(pid)`` is
    called while it runs."""
    code = f"from uqx.sweeps import appendix_b\n{call}\n"
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    t0 = time.time()
    try:
        while time.time() - t0 < timeout and proc.poll() is None:
            if poll is not None:
                poll(proc.pid)
            if run_dir.is_dir() and len(list(run_dir.glob("*.npz"))) >= n_blocks:
                break
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_resume_after_killed_process(tmp_path):
    out = tmp_path / "k.nc"
    opts = dict(M=[1500, 3000], N=[10, 50], nu=[3, 4, 6], n_mc=600, seed=8)
    run_dir = run_dir_for(out)
    _kill_after_blocks(f'appendix_b(**{opts!r}, output={str(out)!r}, scheduler="sync")',
                       run_dir, 3, timeout=60)
    n_done = len(list(run_dir.glob("*.npz")))
    if out.exists():
        pytest.skip("the run finished before it could be killed")
    assert 3 <= n_done < 36
    assert not list(tmp_path.glob("*.nc"))  # no half-written archive
    got = appendix_b(**opts, output=out, resume=True)
    _identical(got, appendix_b(**opts))


def _children(pid):
    """Pids of the live processes whose parent is ``pid`` (Linux /proc)."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(d))
    return out


def _alive(pid):
    """Whether process ``pid`` runs (exists and is not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killed_run_leaves_no_worker_writing(tmp_path):
    # a "processes" run killed by SIGKILL: its workers are re-parented, and each stops
    # before its next block instead of finishing its cell (all of a cell's blocks are one
    # task here) on the cores, and into the run directory, of whatever runs next
    out = tmp_path / "w.nc"
    opts = dict(M=[3000], N=[10, 50], nu=[3, 4, 6], n_mc=3000, seed=9)
    run_dir = run_dir_for(out)
    workers = []

    def note_workers(pid):
        workers.extend(w for w in _children(pid) if w not in workers)

    _kill_after_blocks(f'appendix_b(**{opts!r}, output={str(out)!r}, scheduler="processes", '
                       'num_workers=2, chunk_size=3000)', run_dir, 2, timeout=120,
                       poll=note_workers)
    if out.exists():
        pytest.skip("the run finished before it could be killed")
    n_killed = len(list(run_dir.glob("*.npz")))
    t1 = time.time()
    while time.time() - t1 < 60 and any(map(_alive, workers)):
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for w in left:  # do not leave them running if the test fails
        os.kill(w, signal.SIGKILL)
    n_after = len(list(run_dir.glob("*.npz")))
    # each worker may finish the block it was computing when the run was killed
    assert n_after - n_killed <= 2, (n_killed, n_after)
    assert time.time() - t1 < 60 and not left
    shutil.rmtree(run_dir)  # a removed run directory is never written again
    time.sleep(0.5)
    assert not run_dir.exists()


def test_removed_run_directory_is_not_written_again(tmp_path):
    from uqx.sweeps.engine import SweepStopped, _save_block

    run_dir = tmp_path / "gone.nc.run"
    run_dir.mkdir()
    _save_block(run_dir, 0, 0, {"x": np.zeros(3)})
    assert (run_dir / "c000000_b00000.npz").is_file()
    shutil.rmtree(run_dir)
    with pytest.raises(SweepStopped, match="removed"):
        _save_block(run_dir, 0, 1, {"x": np.zeros(3)})
    assert not run_dir.exists()


# -- pval -------------------------------------------------------------------------------

def test_pval_small():
    ds = pval(scenario=["NIG", "TIG"], nu={"NIG": [6], "TIG": [3]}, n_datasets=100,
              n_boot=1000, M=2000, seed=4)
    assert ds["valid"].dims == ("scenario", "nu", "replicate", "stat")
    assert ds["p_val"].dims == ("scenario", "nu", "stat")
    assert list(ds["stat"].values) == ["zms", "rce"]
    assert not group_of(ds).mismatches(ds)
    for k in ("p_val_low", "p_val_high", "beta_gm_u2_mean", "kappa_cs_e2_mean"):
        assert k in ds
    nig = ds.sel(scenario="NIG", nu=6.0)
    # 001 Fig. 4: p_val(ZMS) ~ 0.95 for NIG nu = 6; binomial sd 0.022 at n = 100
    assert abs(float(nig["p_val"].sel(stat="zms")) - 0.95) < 0.08
    assert np.all(nig["p_val_low"] <= nig["p_val"]) and np.all(nig["p_val"] <= nig["p_val_high"])
    np.testing.assert_allclose(nig["p_val"], nig["valid"].mean("replicate"))
    # outside a scenario's grid: NaN, not a made-up value
    assert np.isnan(ds["p_val"].sel(scenario="NIG", nu=3.0)).all()
    tig = ds.sel(scenario="TIG", nu=3.0)
    assert float(tig["p_val"].sel(stat="zms")) < float(nig["p_val"].sel(stat="zms"))
    # TIG reuses one draw of u: the tailedness of u2 is the same for every set
    assert np.ptp(tig["beta_gm_u2"].values) == 0


# -- set-based studies ------------------------------------------------------------------

APP_C = {"Diffusion_RF": (0.11541, 0.026410, 1.2986), "QM9_E": (0.04565, 0.0063876, 1.7675),
         "logP_10k_a_LS-GCN": (0.12141, 0.012096, 1.5977)}


@pytest.mark.data
def test_bins_app_c_oracle(paper_sets):
    ds = bins(paper_sets.sel(set=list(APP_C)), n_mc=20, seed=1)
    assert ds["value"].dims == ("set", "stat", "N")
    assert ds["intercept"].dims == ("set", "stat")
    assert list(ds["stat"].values) == ["ence", "zmse", "zve"]
    assert not group_of(ds).mismatches(ds)
    for name, (a, se, b) in APP_C.items():
        r = ds.sel(set=name, stat="zmse")
        np.testing.assert_allclose([r["intercept"], r["intercept_se"], r["slope"]],
                                   [a, se, b], rtol=1e-3, err_msg=name)
        assert str(r["verdict"].values) in ("valid", "invalid", "inconclusive")


@pytest.mark.data
def test_bins_002_table_i_oracle(data_dir):
    sets = stack([uqx.load_dataset(n, data_dir) for n in
                           ("QM9_U0", "Diffusion_RF_cal", "Perovskite_RF_cal")])
    ds = bins(sets, preset="002", n_mc=0)
    table = {("QM9_U0", "ence_sd"): (0.0187, 0.0033, 0.00638, 0.00035),
             ("QM9_U0", "zve"): (1.0268, 0.0045, 0.01598, 0.00053),
             ("Diffusion_RF_cal", "ence_sd"): (0.0622, 0.0136, 0.01338, 0.00214),
             ("Perovskite_RF_cal", "zve"): (1.1092, 0.0192, 0.05337, 0.00247)}
    for (name, st), want in table.items():
        r = ds.sel(set=name, stat=st)
        got = [float(r[k]) for k in ("intercept", "intercept_se", "slope", "slope_se")]
        np.testing.assert_allclose(got, want, rtol=8e-3, err_msg=f"{name} {st}")
    assert ds.attrs["preset"] == "002"


@pytest.mark.data
def test_binned_tailedness_and_decimation(paper_sets):
    one = paper_sets.isel(set=[0])
    t = binned_tailedness(one)
    assert t["beta_gm"].dims == ("set", "var", "bin") and t.sizes["bin"] == 20
    assert not group_of(t).mismatches(t)
    # full-set values: methods: the papers, Set 1
    np.testing.assert_allclose(t["beta_gm_full"].values[0], [0.3970304, 0.8201687, 0.7308772],
                               rtol=1e-6)
    assert int(t["bin_count"].sum()) == int(one["M"].values[0])
    d = decimation(one, n_boot=200)
    assert d["delta"].dims == ("set", "k", "stat") and d.sizes["k"] == 101
    assert not group_of(d).mismatches(d)
    got = d["delta"].sel(set="Diffusion_RF").isel(k=[10, 50, 100])
    # methods: the papers: decimation of Set 1 at k = 1, 5, 10 %
    np.testing.assert_allclose(got.sel(stat="rce"), [0.0048062, 0.011124, 0.0075934],
                               rtol=1e-4)
    np.testing.assert_allclose(got.sel(stat="zms"), [-0.0016992, -0.0047199, -0.0014776],
                               rtol=1e-4)
    assert np.all(d["bar_low"] < 0) and np.all(d["bar_high"] > 0)


def test_reference_sensitivity_small():
    E, u = nig(600, 6.0, seed=2)
    ds = reference_sensitivity(from_arrays(E, u, name="s"), nu=[3, 20], n_mc=60, bins=10)
    assert ds["reference"].dims == ("set", "nu", "stat")
    assert ds["draws"].dims == ("set", "nu", "stat", "mc")
    assert not group_of(ds).mismatches(ds)
    zms = ds["reference"].sel(stat="zms")
    se = ds["reference_se"].sel(stat="zms")
    assert np.all(np.abs(zms - 1) < 5 * se + 0.02)
    # heavier tails, larger ENCE reference (000 Fig. 7)
    ence = ds["reference"].sel(set="s", stat="ence")
    assert float(ence.sel(nu=3.0)) > float(ence.sel(nu=20.0))


# -- bad input --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(M=[]), "empty"),
    (dict(M=[500]), "below the bin minimum"),
    (dict(models=["NIG", "T7"]), "unknown model"),
    (dict(n_mc=1), "n_mc"),
    (dict(nu=[0]), "nu"),
])
def test_appendix_b_bad_input(tmp_path, kwargs, match):
    out = tmp_path / "x.nc"
    with pytest.raises(InputError, match=match):
        appendix_b(**{**TINY_B, **kwargs}, output=out)
    assert not run_dir_for(out).exists()


def test_other_bad_input(tmp_path):
    with pytest.raises(InputError, match="nu_D must be > 2"):
        pval(scenario="TIG", nu=[2.0, 3.0])
    with pytest.raises(InputError, match="unknown scenario"):
        pval(scenario="XIG")
    with pytest.raises(InputError, match="n_datasets"):
        pval(n_datasets=1)
    E, u = nig(300, 6.0, seed=1)
    with pytest.raises(InputError, match="nu"):
        reference_sensitivity(from_arrays(E, u), nu=[2, 5])
    with pytest.raises(InputError, match="unknown study"):
        run_study("appendix-c")
    with pytest.raises(InputError, match="does not exist"):
        appendix_b(**TINY_B, output=tmp_path / "missing" / "x.nc")
    with pytest.raises(InputError, match="is a directory"):
        appendix_b(**TINY_B, output=tmp_path)
    with pytest.raises(InputError, match="unknown scheduler"):
        appendix_b(**TINY_B, output=tmp_path / "s.nc", scheduler="thread")
    with pytest.raises(InputError, match="chunk_size"):
        appendix_b(**TINY_B, output=tmp_path / "s.nc", chunk_size=0)
    assert not run_dir_for(tmp_path / "s.nc").exists()


# -- archives: compare, summary, CLI ----------------------------------------------------

def test_compare_refuses_and_flags(tmp_path):
    a = appendix_b(**{**TINY_B, "n_mc": 100}, output=tmp_path / "a.nc")
    half = appendix_b(**{**TINY_B, "n_mc": 100}, ig_shape="half-nu")
    with pytest.raises(InputError, match="ig_shape"):
        compare(a, half)
    p = pval(scenario="NIG", nu=[6], n_datasets=20, n_boot=100, M=300)
    with pytest.raises(InputError, match="different studies"):
        compare(a, p)
    other = appendix_b(**{**TINY_B, "n_mc": 100, "seed": 99})
    res = compare(a, other)
    assert not res.identical and "z_ence_mean" in res.cells
    # a shifted copy is flagged cell by cell
    shifted = a.copy()
    shifted["ence_mean"] = a["ence_mean"] + 10 * a["ence_se"]
    assert compare(a, shifted).n_flagged == a["ence_mean"].size
    text = summary_text(tmp_path / "a.nc")
    assert "appendix-b" in text and "slope" in text


@pytest.fixture
def cli(monkeypatch):
    import uqx.cli.app

    if "sweep" not in uqx.cli.app.COMMANDS:
        monkeypatch.setattr(uqx.cli.app, "COMMANDS", [*uqx.cli.app.COMMANDS, "sweep"])
    return uqx.cli.app.main


def test_cli_sweep(cli, tmp_path, capsys):
    a, b = tmp_path / "a.nc", tmp_path / "b.nc"
    grid = ["--M", "1500", "--N", "10,50", "--nu", "4", "--n-mc", "300", "--seed", "5"]
    assert cli(["-q", "sweep", "appendix-b", *grid, "-o", str(a)]) == 0
    assert cli(["-q", "sweep", "appendix-b", *grid, "--chunk-size", "200",
                "--scheduler", "sync", "-o", str(b)]) == 0
    capsys.readouterr()
    assert cli(["sweep", "compare", str(a), str(b)]) == 0
    assert "identical" in capsys.readouterr().out
    _identical(read_netcdf(a), appendix_b(**TINY_B))
    assert cli(["sweep", "summary", str(a)]) == 0
    assert "intercept" in capsys.readouterr().out
    assert cli(["sweep", "appendix-b", "--M", "", "-o", str(tmp_path / "c.nc")]) == 2
    assert "empty" in capsys.readouterr().err
    assert cli(["sweep", "pval", "--scenario", "TIG", "--nu", "1.5"]) == 2
    assert "--nu must be > 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(["sweep", "no-such-study"])


def test_batched_sweep_statistics_matches_row_by_row():
    from uqx.inference.extrapolate.binsweep import sweep_statistics

    rng = np.random.default_rng(1)
    u = np.sort(rng.uniform(0.5, 2.0, (30, 1800)), axis=1)
    E = u * rng.standard_normal(u.shape)
    stats = ["ence", "zmse", "zve"]
    got = sweep_statistics(E, u, [10, 20, 50], stats, pop_min=30, rows=7)
    want = [sweep_statistics(E[r], u[r], [10, 20, 50], stats, pop_min=30) for r in range(30)]
    np.testing.assert_allclose(got, np.array(want), rtol=1e-14, atol=0)


@pytest.mark.parametrize("name", sorted(__import__("uqx.sweeps", fromlist=["STUDIES"]).STUDIES))
def test_cli_defaults_are_the_study_defaults(name):
    # the CLI spells each study's defaults out (its --help shows them without importing
    # the study); they must be the defaults of the study's define()
    import inspect
    from importlib import import_module

    from uqx.cli import build_parser
    from uqx.cli.commands.sweep import _options
    from uqx.sweeps import STUDY_MODULES

    args = build_parser().parse_args(["sweep", name])
    define = import_module(f"uqx.sweeps.{STUDY_MODULES[name]}").define
    params = inspect.signature(define).parameters
    opts = _options(args)
    assert opts, name
    for key, value in opts.items():
        want = params[key].default
        if isinstance(want, (tuple, list)):
            value, want = list(value), list(want)
        assert value == want, (name, key, value, want)
    assert args.seed == params["seed"].default
