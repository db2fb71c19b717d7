"""Inputs are checked whatever their form (uqx.dataio.model.as_stacked, methods: edge cases).

Every bad-input form, given as a plain xarray.Dataset, a list of data sets or a stacked
data set, raises InputError naming the problem through every entry point; the same bad
rows given as a CSV file make the CLI exit with status 2.
"""

import dask.array as da
import numpy as np
import pytest
import xarray as xr
from internals import count_input_checks

import uqx
from uqx.cli import main
from uqx.dataio.model import InputError, as_stacked, iter_sets

M = 80


def _good(seed=0, m=M):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, m)
    return xr.Dataset({
        "E": ("sample", u * rng.standard_normal(m)),
        "uE": ("sample", u),
        "X": ("sample", rng.uniform(0.0, 1.0, m)),
    })


def _set(ds, var, row, value):
    ds = ds.copy(deep=True)
    ds[var].values[row] = value
    return ds


def _non_numeric():
    ds = _good()
    return ds.assign(E=ds["E"].astype(str))


#: name -> (bad data set, words the message must contain)
BAD = {
    "nan_row": (lambda: _set(_good(), "E", 3, np.nan), ["1 value(s) of E", "rows 3", "NaN"]),
    "negative_uE": (lambda: _set(_good(), "uE", 4, -1.0), ["value(s) of uE", "rows 4", "<= 0"]),
    "zero_uE": (lambda: _set(_good(), "uE", 5, 0.0), ["value(s) of uE", "rows 5", "<= 0"]),
    "nan_X": (lambda: _set(_good(), "X", 6, np.nan), ["1 value(s) of X", "rows 6", "NaN"]),
    "inf_uE": (lambda: _set(_good(), "uE", 7, np.inf), ["value(s) of uE", "rows 7", "infinite"]),
    "dim_row": (lambda: _good().rename({"sample": "row"}),
                ["'row'", "expected 'sample'", "ds.rename({'row': 'sample'})"]),
    "missing_uE": (lambda: _good().drop_vars("uE"), ["'E' and 'uE'", "missing 'uE'", "'X'"]),
    "non_numeric": (_non_numeric, ["'E'", "not numeric"]),
    "length_mismatch": (lambda: _good().assign(X=("obs", np.ones(3))),
                        ["'X'", "length mismatch"]),
    "one_row": (lambda: _good(m=1), ["at least 2 points", "got 1"]),
}


def _call(entry, ds):
    if entry == "validate":
        return uqx.validate(ds, ["zms", "ence"], bootstrap=50, copies=50,
                            compute=uqx.Compute(seed=1))
    if entry == "bootstrap":
        return uqx.bootstrap(ds, ["zms", "cc"], n_boot=50, seed=1)
    if entry == "compute":
        return uqx.compute(ds, ["zms", "ence_X"], bins=2)
    if entry == "describe":
        return uqx.describe(ds, bins=2)
    if entry == "iter_sets":
        return list(iter_sets(ds))
    raise AssertionError(entry)


ENTRIES = ["validate", "bootstrap", "compute", "describe", "iter_sets"]


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("form", sorted(BAD))
def test_bad_dataset_raises_input_error(form, entry):
    make, words = BAD[form]
    with pytest.raises(InputError) as exc:
        _call(entry, make())
    for w in words:
        assert w in str(exc.value), (w, str(exc.value))


@pytest.mark.parametrize("form", ["nan_row", "negative_uE", "zero_uE", "nan_X", "one_row"])
def test_bad_set_inside_a_list_or_stack(form):
    make, words = BAD[form]
    bad = make().assign_attrs(name="bad")
    good = _good(1).assign_attrs(name="good")
    for ds in ([good, bad], uqx.stack([uqx.from_arrays(good.E, good.uE, X=good.X, name="good"),
                                       bad])):
        with pytest.raises(InputError) as exc:
            uqx.compute(ds, ["zms"])
        assert str(exc.value).startswith("bad: ")
        for w in words:
            assert w in str(exc.value)


def test_bad_rows_in_dask_backed_input_are_found():
    bad = _set(_good(), "uE", 70, -2.0)
    lazy = bad.chunk({"sample": 16})
    with pytest.raises(InputError, match=r"uE \(0-based rows 70\)"):
        uqx.compute(lazy, ["zms"])


def test_drop_nonfinite_drops_and_counts_for_dataset_input():
    ds = _set(_set(_good(), "E", 3, np.nan), "X", 10, np.inf)
    est = uqx.compute(ds, ["zms"], drop_nonfinite=True)
    keep = np.ones(M, bool)
    keep[[3, 10]] = False
    z = ds["E"].values[keep] / ds["uE"].values[keep]
    assert est.item() == pytest.approx(np.mean(z**2), rel=1e-12)
    st = as_stacked(ds, drop_nonfinite=True)
    assert st["M"].item() == M - 2 and st["n_dropped"].item() == 2
    d = uqx.describe(ds, bins=2, drop_nonfinite=True)
    assert d["n_dropped"].item() == 2 and d["M"].item() == M - 2
    # the drop does not excuse uE <= 0
    with pytest.raises(InputError, match="<= 0"):
        as_stacked(_set(ds, "uE", 0, -1.0), drop_nonfinite=True)


def test_validate_reports_dropped_rows():
    ds = _set(_good(), "E", 3, np.nan)
    res = uqx.validate(ds, ["zms"], bootstrap=50, copies=50,
                       binning=uqx.Binning(drop_nonfinite=True), conditional=False,
                       compute=uqx.Compute(seed=1))
    assert "1 row(s) dropped by filters" in res["set_warnings"].item()


def test_stacked_padding_is_not_an_error():
    a = uqx.from_arrays([0.1, -0.2, 0.3, 0.4], [1.0, 1.0, 2.0, 1.0], X=[1, 2, 3, 4], name="a")
    b = uqx.from_arrays([0.5, -0.1], [1.0, 2.0], name="b")
    st = uqx.stack([a, b])  # b padded with NaN; X all-NaN in b (absent)
    sets = list(iter_sets(st))
    assert [s.M for s in sets] == [4, 2] and sets[1].X is None
    np.testing.assert_array_equal(sets[0].X, [1, 2, 3, 4])
    # without M: trailing rows where E and uE are both NaN are padding ...
    no_m = st.drop_vars(["M", "n_dropped"])
    assert as_stacked(no_m)["M"].values.tolist() == [4, 2]
    # ... but a NaN row before the last real row is a real (bad) row
    hole = no_m.copy(deep=True)
    hole["E"].values[0, 1] = np.nan
    hole["uE"].values[0, 1] = np.nan
    with pytest.raises(InputError, match=r"a: 1 value\(s\) of E \(0-based rows 1\)"):
        as_stacked(hole)
    assert as_stacked(hole, drop_nonfinite=True)["M"].values.tolist() == [3, 2]


def test_partly_nan_X_in_a_stack_is_an_error():
    a = uqx.from_arrays([0.1, -0.2, 0.3], [1.0, 1.0, 2.0], X=[1.0, 2.0, 3.0], name="a")
    st = uqx.stack([a, a.assign_attrs(name="b")])
    st["X"].values[1, 2] = np.nan
    with pytest.raises(InputError, match=r"b: 1 value\(s\) of X"):
        uqx.compute(st, ["zms"])


def test_other_set_dimension_name():
    a = uqx.from_arrays([0.1, -0.2, 0.3], [1.0, 1.0, 2.0], name="a")
    b = uqx.from_arrays([0.5, -0.1], [1.0, 2.0], name="b")
    st = uqx.stack([a, b], dim="model")
    assert st["E"].dims == ("model", "sample") and st["M"].dims == ("model",)
    out = as_stacked(st)
    assert out.attrs["set_dim"] == "model" and list(out["set"].values) == ["a", "b"]
    est = uqx.compute(st, ["zms"])
    assert est.sel(set="b").item() == pytest.approx((0.25 + 0.0025) / 2)


def test_integer_columns_are_accepted_as_floats():
    ds = xr.Dataset({"E": ("sample", np.array([1, -2, 3])), "uE": ("sample", np.array([1, 2, 1]))})
    assert as_stacked(ds)["E"].dtype == np.float64
    assert uqx.compute(ds, ["zms"]).item() == pytest.approx((1 + 1 + 9) / 3)


def test_as_stacked_rejects_non_datasets():
    with pytest.raises(InputError, match="expected an xarray.Dataset"):
        as_stacked(np.ones(3))
    with pytest.raises(InputError, match="item of type int"):
        as_stacked([_good(), 3])


def test_checked_result_is_not_checked_again(monkeypatch):
    import uqx.dataio.model as data

    checked = data.check_sets(_good())
    calls = count_input_checks(monkeypatch)
    assert data.check_sets(checked) is checked
    assert as_stacked(checked) is checked.data
    assert len(list(iter_sets(checked))) == 1
    assert checked.select([0]).data.sizes["set"] == 1
    assert calls == []
    as_stacked(checked.data)  # a bare Dataset is checked
    assert calls == [1]


# ---------------------------------------------------------------- the same through the CLI

CSV_BAD = {
    "nan_row": ("E,uE,X\n0.1,1,0\nnan,1,1\n0.3,1,2\n", ["E", "NaN or infinite"]),
    "negative_uE": ("E,uE,X\n0.1,1,0\n0.2,-1,1\n0.3,1,2\n", ["uE", "<= 0"]),
    "zero_uE": ("E,uE,X\n0.1,1,0\n0.2,0,1\n0.3,1,2\n", ["uE", "<= 0"]),
    "nan_X": ("E,uE,X\n0.1,1,0\n0.2,1,\n0.3,1,2\n", ["X", "NaN or infinite",
                                                      "--drop-nonfinite"]),
    "missing_uE": ("E,sigma,X\n0.1,1,0\n0.2,1,1\n", ["no column 'uE'", "'sigma'"]),
    "non_numeric": ("E,uE,X\n0.1,1,0\nabc,1,1\n", ["column 'E' is not numeric", "'abc'"]),
    "one_row": ("E,uE,X\n0.1,1,0\n", ["at least 2 points"]),
    "duplicate_column": ("E,uE,E\n0.1,1,0\n0.2,1,1\n", ["duplicate column", "'E'"]),
}


@pytest.mark.parametrize("command", ["stats", "validate"])
@pytest.mark.parametrize("form", sorted(CSV_BAD))
def test_cli_bad_input_exits_2(capsys, tmp_path, form, command):
    text, words = CSV_BAD[form]
    p = tmp_path / f"{form}.csv"
    p.write_text(text)
    argv = [command, str(p), "--X", "X"] if "X" in text.split("\n")[0] else [command, str(p)]
    if command == "validate":
        argv += ["--n-boot", "50", "--n-mc", "50"]
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2 and err.startswith("uqx: error: ") and "Traceback" not in err
    for w in words:
        assert w in err, (w, err)
    assert "drop_nonfinite" not in err  # CLI messages name CLI options


def test_dask_inputs_checked_lazily_and_kept_lazy():
    ds = _good().chunk({"sample": 16})
    st = as_stacked(ds)
    assert isinstance(st["E"].data, da.Array) and isinstance(st["X"].data, da.Array)
