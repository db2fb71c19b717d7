"""CSV reading and NetCDF round trips (no literature data needed)."""

import json
from datetime import datetime

import netCDF4
import numpy as np
import pytest
import xarray as xr

from uqx import __version__
from uqx.dataio import netcdf as uio
from uqx.dataio.frames import read_csv
from uqx.dataio.model import InputError
from uqx.dataio.netcdf import read_netcdf, to_netcdf
from uqx.errors import OutputError


def write(tmp_path, text, name="preds.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


# ----------------------------------------------------------------------------- CSV


def test_read_csv_maps_columns(tmp_path):
    text = "id,err,unc,mass,pred\na,0.1,0.2,10,1\nb,-0.3,0.4,20,2\nc,0.5,0.6,30,3\n"
    path = write(tmp_path, text)
    ds = read_csv(path, E="err", uE="unc", X="mass", V="pred")
    np.testing.assert_array_equal(ds["E"].values, [0.1, -0.3, 0.5])
    np.testing.assert_array_equal(ds["uE"].values, [0.2, 0.4, 0.6])
    np.testing.assert_array_equal(ds["X"].values, [10, 20, 30])
    np.testing.assert_array_equal(ds["V"].values, [1, 2, 3])
    assert ds["E"].dtype == np.float64
    assert ds.attrs["name"] == "preds"
    assert ds.attrs["source"] == str(path)
    assert "E=err" in ds.attrs["columns"]


def test_read_csv_defaults_and_name(tmp_path):
    path = write(tmp_path, "E,uE\n1,1\n2,2\n")
    ds = read_csv(path, name="mine")
    assert ds.attrs["name"] == "mine"
    assert set(ds.data_vars) == {"E", "uE"}


def test_read_csv_variance(tmp_path):
    path = write(tmp_path, "E,var\n1,4\n2,9\n3,0.25\n")
    ds = read_csv(path, uE="var", uE_is_variance=True)
    np.testing.assert_allclose(ds["uE"].values, [2, 3, 0.5])


def test_read_csv_negative_variance_rejected_or_filtered(tmp_path):
    path = write(tmp_path, "E,var\n1,4\n2,-1e-20\n3,1\n-1,1\n")
    with pytest.raises(InputError, match="<= 0"):
        read_csv(path, uE="var", uE_is_variance=True)
    ds = read_csv(path, uE="var", uE_is_variance=True, min_uE_rel_sd=1e-6)
    assert ds.sizes["sample"] == 3 and ds.attrs["n_dropped"] == 1


def test_read_csv_missing_file(tmp_path):
    path = tmp_path / "nope.csv"
    with pytest.raises(InputError, match="nope.csv.*not found"):
        read_csv(path)


def test_read_csv_empty_file(tmp_path):
    with pytest.raises(InputError, match="empty"):
        read_csv(write(tmp_path, ""))
    with pytest.raises(InputError, match="no data rows"):
        read_csv(write(tmp_path, "E,uE\n", "header.csv"))


def test_read_csv_unknown_column_lists_available(tmp_path):
    path = write(tmp_path, "err,unc\n1,1\n2,2\n")
    with pytest.raises(InputError, match=r"no column 'E'.*'err', 'unc'"):
        read_csv(path)
    with pytest.raises(InputError, match=r"no column 'mass'"):
        read_csv(path, E="err", uE="unc", X="mass")


def test_read_csv_non_numeric_column(tmp_path):
    path = write(tmp_path, "E,uE\n1,0.1\nabc,0.2\n3,0.3\n")
    with pytest.raises(InputError, match=r"column 'E' is not numeric.*'abc'.*row 2"):
        read_csv(path)


def test_read_csv_nonfinite(tmp_path):
    path = write(tmp_path, "E,uE\n1,0.1\n,0.2\n3,0.3\n4,inf\n")
    with pytest.raises(InputError, match="NaN or infinite"):
        read_csv(path)
    ds = read_csv(path, drop_nonfinite=True)
    assert ds.sizes["sample"] == 2 and ds.attrs["n_dropped"] == 2


def test_read_csv_nonpositive_uncertainty(tmp_path):
    path = write(tmp_path, "E,uE\n1,0.1\n2,0\n3,0.3\n")
    with pytest.raises(InputError, match="uE"):
        read_csv(path)


def test_read_csv_duplicate_column_names(tmp_path):
    # pandas would rename the second 'E' to 'E.1' and read the first one silently
    p = write(tmp_path, "E,uE,E,X,X\n1,1,2,0,0\n2,1,3,0,0\n")
    with pytest.raises(InputError, match=r"duplicate column name\(s\) 'E', 'X'"):
        read_csv(p)


def test_netcdf_write_error_names_the_target(tmp_path, monkeypatch):
    # a failure inside the netCDF library mentions the file it wrote: the temporary one
    def failing(self, path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(xr.Dataset, "to_netcdf", failing)
    target = tmp_path / "res.nc"
    with pytest.raises(OutputError) as exc:
        to_netcdf(result_dataset(), target)
    msg = str(exc.value)
    assert str(target) in msg and "Permission denied" in msg
    assert ".tmp" not in msg and "uqx" not in msg.replace(str(tmp_path), "")
    assert list(tmp_path.iterdir()) == []


def test_netcdf_target_is_a_directory(tmp_path):
    with pytest.raises(OutputError, match="is a directory"):
        to_netcdf(result_dataset(), tmp_path)


def test_read_csv_comment_disabled_by_default(tmp_path):
    path = write(tmp_path, "smiles,E,uE\nC#N,1,0.1\nCC,2,0.2\n")
    ds = read_csv(path)
    assert ds.sizes["sample"] == 2
    with pytest.raises(InputError):
        read_csv(path, comment="#")  # the '#' truncates the first data row


# -------------------------------------------------------------------------- NetCDF


def result_dataset():
    rng = np.random.default_rng(1)
    est = rng.normal(size=(3, 2))
    est[1, 0] = np.nan
    return xr.Dataset(
        {
            "estimate": (("set", "stat"), est, {"long_name": "estimate", "units": "eV"}),
            "valid": (("set", "stat"), np.array([[True, False], [False, True], [True, True]]),
                      {"long_name": "validity", "meta": {"test": "zeta", "level": 0.95}}),
            "n_nan": ("set", np.array([0, 3, 1], dtype=np.int64)),
            "f32": ("set", np.array([1.5, np.nan, 2.5], dtype=np.float32)),
            "warnings": ("set", np.array(["", "heavy tails", "few bins"])),
            "notes": ("set", np.array(["a", "bb", "c"], dtype=object)),
            "flag": ((), np.bool_(True)),
        },
        coords={
            "set": ["Diffusion_RF", "QM9_E", "logP_150k_LS-GCN"],
            "stat": ["ZMS", "RCE"],
            "label": ("set", ["Set 1", "Set 7", "Set 9"]),
            "prob": ("prob", [0.68, 0.95]),
        },
        attrs={
            "name": "demo",
            "binning": {"kind": "equal-count", "nbin": [10, 20], "pop_min": None},
            "sets": ["a", "b"],
            "nothing": None,
            "emulate_r": True,
            "n_boot": 1000,
            "level": 0.95,
            "empty": "",
        },
    )


def test_netcdf_round_trip(tmp_path):
    ds = result_dataset()
    path = to_netcdf(ds, tmp_path / "res.nc", parameters={"n_boot": 1000, "seed": 7}, seed=7)
    assert path == tmp_path / "res.nc"
    back = read_netcdf(path)
    # values, dims, coords and variable attrs
    xr.testing.assert_identical(back.drop_attrs(deep=False), ds.drop_attrs(deep=False))
    for name in ds.variables:
        assert back[name].dtype == ds[name].dtype, name
    assert back["valid"].attrs["meta"] == {"test": "zeta", "level": 0.95}
    assert back["flag"].item() is True
    assert np.isnan(back["estimate"].values[1, 0])
    assert "label" in back.coords and "label" not in back.data_vars
    # dataset attrs, including JSON-encoded ones
    for key, value in ds.attrs.items():
        assert back.attrs[key] == value, key
    assert isinstance(back.attrs["emulate_r"], bool)
    assert back.attrs["nothing"] is None


def test_netcdf_provenance(tmp_path):
    path = to_netcdf(result_dataset(), tmp_path / "res.nc", parameters={"a": [1, 2]}, seed=42)
    back = read_netcdf(path)
    assert back.attrs["uqx_version"] == __version__
    assert back.attrs["Conventions"] == "CF-1.8"
    assert back.attrs["seed"] == 42
    assert json.loads(back.attrs["parameters"]) == {"a": [1, 2]}
    created = datetime.fromisoformat(back.attrs["created_at"].replace("Z", "+00:00"))
    assert created.utcoffset().total_seconds() == 0
    path2 = to_netcdf(result_dataset(), tmp_path / "res2.nc")
    back2 = read_netcdf(path2)
    assert "seed" not in back2.attrs and json.loads(back2.attrs["parameters"]) == {}
    # re-saving a loaded result keeps its provenance unless overridden
    back3 = read_netcdf(to_netcdf(back, tmp_path / "res3.nc"))
    assert back3.attrs["seed"] == 42 and json.loads(back3.attrs["parameters"]) == {"a": [1, 2]}
    back4 = read_netcdf(to_netcdf(back, tmp_path / "res4.nc", parameters={"b": 1}, seed=5))
    assert back4.attrs["seed"] == 5 and json.loads(back4.attrs["parameters"]) == {"b": 1}


def test_netcdf_compression_and_engine(tmp_path):
    path = to_netcdf(result_dataset(), tmp_path / "res.nc")
    with netCDF4.Dataset(path) as nc:
        assert nc.file_format == "NETCDF4"
        assert nc["estimate"].filters()["zlib"]
        assert nc["valid"].dtype == np.int8
        assert nc["valid"].getncattr(uio.DTYPE_ATTR) == "bool"


def test_netcdf_does_not_mutate_input(tmp_path):
    ds = result_dataset()
    before = ds.copy(deep=True)
    to_netcdf(ds, tmp_path / "res.nc", parameters={"x": 1}, seed=3)
    xr.testing.assert_identical(ds, before)
    assert ds.attrs == before.attrs
    assert ds["valid"].dtype == bool


def test_netcdf_gives_a_result_variable_its_declared_long_name_back(tmp_path):
    """A validate result's variable that lost its attributes (arithmetic) is written with
    the schema's long_name, its fields from the result's attributes; other dims: as is."""
    from uqx.dataio.schema import VALIDATE

    ds = xr.Dataset({
        "question_verdict": (("set", "question"), [["valid"]]),
        "p_value": (("set", "stat", "member"), [[[0.5]]]),
        "ci_low": (("set", "stat"), [[0.9]]),
        "fval": (("set", "stat"), [[0.9]]),  # declared over (set, cond): left as it is
        "estimate": (("set", "stat"), [[1.0]], {"long_name": "my own"}),
    }, attrs={"level": 0.9})
    back = read_netcdf(to_netcdf(ds, tmp_path / "res.nc"))
    assert back["p_value"].attrs == VALIDATE.attrs("p_value")
    assert back["ci_low"].attrs["long_name"] == "BCa 90% lower limit"
    assert back["question_verdict"].attrs["long_name"] == VALIDATE["question_verdict"].long_name
    assert "long_name" not in back["fval"].attrs
    assert back["estimate"].attrs["long_name"] == "my own"
    assert "long_name" not in ds["p_value"].attrs  # the input is not modified


def test_netcdf_rewrite_of_read_dataset(tmp_path):
    back = read_netcdf(to_netcdf(result_dataset(), tmp_path / "a.nc"))
    again = read_netcdf(to_netcdf(back, tmp_path / "b.nc"))
    xr.testing.assert_identical(again.drop_attrs(deep=False), back.drop_attrs(deep=False))
    assert again.attrs["binning"] == back.attrs["binning"]


def test_netcdf_input_record_round_trip(tmp_path):
    ds = read_csv(write(tmp_path, "E,uE\n1,0.1\n2,0.2\n"))
    back = read_netcdf(to_netcdf(ds, tmp_path / "in.nc"))
    xr.testing.assert_identical(back.drop_attrs(deep=False), ds.drop_attrs(deep=False))
    assert back.attrs["n_dropped"] == 0 and back.attrs["filters"] == ""


def test_netcdf_overwrite_and_parent_creation(tmp_path):
    target = tmp_path / "sub" / "dir" / "res.nc"
    with pytest.raises(OutputError, match="does not exist"):  # one policy with the CLI
        to_netcdf(result_dataset(), target)
    to_netcdf(result_dataset(), target, mkdir=True)
    ds2 = result_dataset().assign(n_nan=("set", np.array([9, 9, 9])))
    to_netcdf(ds2, target)
    assert read_netcdf(target)["n_nan"].values.tolist() == [9, 9, 9]
    assert sorted(p.name for p in target.parent.iterdir()) == ["res.nc"]


def test_netcdf_failure_is_atomic(tmp_path, monkeypatch):
    target = tmp_path / "res.nc"
    to_netcdf(result_dataset(), target)
    original = target.read_bytes()
    real = xr.Dataset.to_netcdf

    def failing(self, path, *args, **kwargs):
        real(self, path, *args, **kwargs)  # a (complete) temporary file exists now
        raise RuntimeError("disk full")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", failing)
    ds2 = result_dataset().assign(n_nan=("set", np.array([9, 9, 9])))
    with pytest.raises(OutputError, match="disk full") as exc:
        to_netcdf(ds2, target)
    # the message names the target, not the hidden temporary file
    assert str(target) in str(exc.value) and ".tmp" not in str(exc.value)
    assert isinstance(exc.value, OSError)
    assert target.read_bytes() == original
    assert [p.name for p in tmp_path.iterdir()] == ["res.nc"]


def test_netcdf_failure_without_previous_file(tmp_path, monkeypatch):
    def failing(self, path, *args, **kwargs):
        open(path, "wb").write(b"partial")
        raise OSError("boom")

    monkeypatch.setattr(xr.Dataset, "to_netcdf", failing)
    with pytest.raises(OutputError, match="boom"):
        to_netcdf(result_dataset(), tmp_path / "res.nc")
    assert list(tmp_path.iterdir()) == []


def test_netcdf_rejects_mixed_object_variable(tmp_path):
    ds = xr.Dataset({"w": ("x", np.array(["a", None], dtype=object))})
    with pytest.raises(InputError, match="'w'.*non-string"):
        to_netcdf(ds, tmp_path / "res.nc")
    assert list(tmp_path.iterdir()) == []


def test_read_netcdf_errors(tmp_path):
    with pytest.raises(InputError, match="missing.nc.*not found"):
        read_netcdf(tmp_path / "missing.nc")
    bad = write(tmp_path, "not a netcdf file", "bad.nc")
    with pytest.raises(InputError, match="cannot read"):
        read_netcdf(bad)


def test_read_netcdf_closes_file(tmp_path):
    path = to_netcdf(result_dataset(), tmp_path / "res.nc")
    back = read_netcdf(path)
    path.unlink()  # data are in memory
    assert back["estimate"].shape == (3, 2)
    assert float(back["estimate"].sum(skipna=True)) == pytest.approx(
        float(result_dataset()["estimate"].sum(skipna=True))
    )
