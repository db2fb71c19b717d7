"""One of each thing: one figure registry, one dask compute, one provenance."""

import subprocess
import sys

import pytest

import uqx.plot as P
from uqx.errors import InputError


def test_one_figure_registry():
    from uqx.accessor import PLOT_KINDS, PlotMethods
    from uqx.cli.commands.plot import KINDS as CLI_KINDS

    assert PLOT_KINDS == P.FIGURES
    assert list(CLI_KINDS) == list(P.KINDS)
    assert all(name in P.FIGURES for name, _, _ in P.KINDS.values())
    assert set(P.__all__) == set(P.FIGURES) | {"tested_stats"}
    assert all(callable(getattr(P, n)) for n in P.__all__)
    assert all(hasattr(PlotMethods, n) for n in P.FIGURES)
    assert P.figure_of("zeta") == ("zeta_bars", {})
    assert P.figure_of("lzv") == ("lzisd", {"stat": "lzv"})
    assert P.figure_of("binned_tailedness") == P.figure_of("binned-tailedness")
    assert P.figure_of("lzisd-of-result") == ("lzisd_of_result", {})
    with pytest.raises(InputError, match="unknown figure kind"):
        P.figure_of("nope")


def test_plot_package_is_light_and_functions_win_over_modules():
    code = (
        "import sys\n"
        "import uqx.plot as P\n"
        "heavy = [m for m in ('numpy', 'matplotlib', 'xarray') if m in sys.modules]\n"
        "from uqx.plot.zero_bin import extrapolation\n"  # binds the module first
        "print(heavy, P.extrapolation is extrapolation, callable(P.calibration))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["[]", "True", "True"]


def test_the_figure_registry_is_one_table_without_globals():
    """Each figure function is found in the module the registry names, and no module of
    the package is named as a figure function."""
    import importlib
    import inspect
    import pkgutil

    modules = {m.name for m in pkgutil.iter_modules(P.__path__)}
    assert not modules & set(P.FIGURES), modules & set(P.FIGURES)
    for name, where in {**P.FIGURES, **P._HELPERS}.items():
        assert where in modules
        func = getattr(importlib.import_module(f"uqx.plot.{where}"), name)
        assert getattr(P, name) is func and inspect.isfunction(func)
    src = inspect.getsource(P)
    assert "global " not in src and "__class__" not in src


def test_compute_tasks_is_dask_compute():
    import dask

    from uqx.progress import compute_tasks

    tasks = [dask.delayed(sum)([1, 2]), (dask.delayed(max)(3, 4),)]
    assert compute_tasks(tasks) == [3, (4,)]
    assert compute_tasks(tasks, scheduler="sync", num_workers=3) == [3, (4,)]
    assert compute_tasks(tasks, scheduler="threads", num_workers=2, quiet=False) == [3, (4,)]


def test_one_provenance_builder(tmp_path):
    from datetime import datetime

    import numpy as np

    import uqx
    from uqx._version import __version__
    from uqx.dataio.provenance import provenance_attrs
    from uqx.engine.resample import content_key, key_hex

    rng = np.random.default_rng(1)
    u = rng.uniform(0.5, 2.0, 400)
    ds = uqx.from_arrays(u * rng.standard_normal(400), u, name="a")
    a = provenance_attrs(ds, seed=7, n_boot=10)
    assert list(a) == ["uqx_version", "created_at", "seed", "input_names", "input_sizes",
                       "input_digests", "n_boot"]
    assert a["uqx_version"] == __version__ and a["seed"] == 7 and a["n_boot"] == 10
    assert datetime.fromisoformat(a["created_at"]).utcoffset().total_seconds() == 0
    assert a["input_digests"] == [key_hex(content_key(ds["E"].values, ds["uE"].values))]
    assert provenance_attrs(created=False) == {"uqx_version": __version__}
    assert provenance_attrs(seed=2**64, created=False)["seed"] == str(2**64)
    # the users: bootstrap results, NetCDF files, study manifests
    b = uqx.bootstrap(ds, ["zms"], n_boot=20, seed=3)
    assert {"uqx_version", "created_at", "seed", "n_boot"} <= set(b.attrs)
    back = uqx.read_netcdf(uqx.to_netcdf(b, tmp_path / "b.nc", seed=5))
    assert back.attrs["seed"] == 5 and back.attrs["uqx_version"] == __version__
    from uqx.sweeps.engine import Study

    st = Study(name="s", axes={"M": [10]}, n_rep=2, block=1, kernel=None, variables={})
    assert st.manifest()["uqx_version"] == __version__ and "created_at" not in st.manifest()
