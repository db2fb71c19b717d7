"""uqx.validate and ``uqx validate FILE.nc`` on disk-backed (dask) input.

The workflow on a chunked NetCDF opened lazily (:func:`uqx.dataio.netcdf.open_dataset`) equals the
workflow on the same rows in memory, bit for bit: the moment-only workflow without the
conditional routes streams every step (bootstrap and simulated references by their
streamed routes, which add group sums in the same order for numpy and dask input; the
tailedness quantiles from one column sorted in place), the others read the columns
once and run the in-memory steps on them. 2·10^5 rows in chunks of 2^14 rows (13 chunks;
the streamed routes' groups are 2^20 rows, so one group reads 13 chunks), and
2^20 + 54321 rows (two groups of the streamed bootstrap, in memory and on disk).
"""

import numpy as np
import pytest
import xarray as xr

import uqx
from uqx.cli import main
from uqx.dataio.netcdf import open_dataset
from uqx.engine.stats.tailedness import pairwise_sum, sorted_tailedness, tailedness
from uqx.errors import InputError
from uqx.workflow.disk import memory_note, streams

M = 200_000
CHUNK = 1 << 14


def _write(path, m=M, chunk=CHUNK, seed=5):
    import netCDF4

    rng = np.random.default_rng(seed)
    u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, m))
    E = u * rng.standard_normal(m)
    # rows in the order of uE: the streamed route reads the file's order, the in-memory
    # workflow sorts by uE (either ties convention); sorted, both see the same rows
    order = np.argsort(u, kind="stable")
    u, E = u[order], E[order]
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("sample", m)
        for name, v in (("E", E), ("uE", u)):
            var = nc.createVariable(name, "f8", ("sample",), chunksizes=(chunk,))
            var[:] = v
        nc.setncattr("name", "disk")
    return E, u


@pytest.fixture(scope="module")
def disk(tmp_path_factory):
    path = tmp_path_factory.mktemp("disk") / "set.nc"
    E, u = _write(path)
    return path, E, u


def _same(a: xr.Dataset, b: xr.Dataset):
    a = a.drop_attrs(deep=False) if hasattr(a, "drop_attrs") else a
    assert set(a.data_vars) == set(b.data_vars)
    for k in a.data_vars:
        x, y = a[k].values, b[k].values
        if x.dtype.kind == "f":
            np.testing.assert_array_equal(x, y, err_msg=k)  # NaN == NaN, bits otherwise
        else:
            assert (x == y).all(), k


def test_open_dataset_is_lazy_and_checked(disk, tmp_path):
    path, E, u = disk
    ds = open_dataset(path, chunks=CHUNK)
    assert ds["E"].chunks[0][0] == CHUNK and ds.attrs["name"] == "disk"
    assert "sample" not in ds.coords  # no int64 index of 8 bytes a row
    with pytest.raises(InputError, match="no variable 'err'.*variables: E, uE"):
        open_dataset(path, E="err")
    with pytest.raises(InputError, match="file not found"):
        open_dataset(tmp_path / "missing.nc")
    bad = tmp_path / "text.nc"
    bad.write_text("E,uE\n1,2\n")
    with pytest.raises(InputError, match="cannot read as NetCDF"):
        open_dataset(bad)
    with pytest.raises(InputError, match="chunks"):
        open_dataset(path, chunks=0)
    import netCDF4

    odd = tmp_path / "odd.nc"
    with netCDF4.Dataset(odd, "w") as nc:
        nc.createDimension("a", 4)
        nc.createDimension("b", 3)
        nc.createVariable("E", "f8", ("a", "b"))[:] = np.ones((4, 3))
        nc.createVariable("uE", "f8", ("b",))[:] = np.ones(3)
        nc.createVariable("E1", "f8", ("a",))[:] = np.ones(4)
    with pytest.raises(InputError, match="one-dimensional"):
        open_dataset(odd)
    with pytest.raises(InputError, match="different dimensions"):
        open_dataset(odd, E="E1")


def test_sorted_tailedness_bitwise(rng):
    x = np.sort(rng.standard_normal(300_001) ** 2)
    t = tailedness(np.sqrt(x), np.ones_like(x))  # E^2 = x, Z^2 = x
    beta, kap = sorted_tailedness(x, kappa=True)
    assert beta == t["beta_gm_e2"] and kap == t["kappa_cs_e2"]
    assert pairwise_sum(x, leaf=1024) == x.sum()


@pytest.fixture(scope="module")
def disk_two_groups(tmp_path_factory):
    """Longer than one group of the streamed bootstrap: it streams in memory too."""
    from uqx.inference.bootstrap import GROUP_ROWS

    path = tmp_path_factory.mktemp("disk2") / "set.nc"
    E, u = _write(path, m=GROUP_ROWS + 54_321, chunk=1 << 17, seed=6)
    return path, E, u


@pytest.mark.parametrize("case", ["moments", "moments-two-groups", "binned-conditional"])
def test_validate_disk_equals_memory_bitwise(disk, disk_two_groups, case):
    conditional = case == "binned-conditional"
    path, E, u = disk_two_groups if case == "moments-two-groups" else disk
    stats = ["zms", "rce"] if not conditional else ["zms", "rce", "ence"]
    kw = dict(bootstrap=200, copies=uqx.Copies(n_mc=20, extrapolation_n_mc=10),
              conditional=uqx.Conditional(enabled=conditional, cond_n_boot=50),
              compute=uqx.Compute(seed=3))
    lazy = open_dataset(path, chunks=CHUNK)
    assert lazy["E"].data.numblocks[0] > 5
    assert streams(stats, conditional=conditional) is (not conditional)
    note = memory_note(uqx.as_stacked(lazy), stats, conditional=conditional)
    assert ("stream" in note) and (("loaded" in note) is conditional)
    a = uqx.validate(lazy, stats, **kw)
    # the streamed route reads the rows in file order (a sort of 10^8 rows from disk is
    # what it avoids): its in-memory twin is the file-order convention on a file whose
    # rows are in the order of uE (_write)
    b = uqx.validate(uqx.from_arrays(E, u, name="disk"), stats, **kw,
                     binning=uqx.Binning(ties="content" if conditional else "file-order"))
    assert a.attrs["input_digests"] == b.attrs["input_digests"]
    _same(a, b)
    assert memory_note(uqx.from_arrays(E, u), stats, conditional=conditional) is None


def test_cli_validate_netcdf(disk, tmp_path, capsys):
    path, E, u = disk
    out = tmp_path / "res.nc"
    rc = main(["validate", str(path), "--stats", "zms,rce", "--no-conditional",
               "--n-boot", "100", "--n-mc", "10", "--seed", "2", "-o", str(out)])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    assert "disk-backed input (200000 rows)" in cap.err and "stream" in cap.err
    res = uqx.read_netcdf(out)
    ref = uqx.validate(uqx.from_arrays(E, u, name="disk"), ["zms", "rce"], bootstrap=100,
                       copies=10, binning=uqx.Binning(ties="file-order"), conditional=False,
                       compute=uqx.Compute(seed=2))
    np.testing.assert_array_equal(res["ci_low"].values, ref["ci_low"].values)
    rc = main(["validate", str(tmp_path / "none.nc"), "--stats", "zms"])
    assert rc == 2 and "file not found" in capsys.readouterr().err
    rc = main(["validate", str(path), "--stats", "zms", "--min-uE-rel-sd", "1e-6"])
    assert rc == 2 and "not available for NetCDF" in capsys.readouterr().err
