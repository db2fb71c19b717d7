"""Input data model (uqx.dataio.model): from_arrays validation, filters, stack and iter_sets.

methods: notation and conventions (canonical record, NaN padding on ``set``) (u <= 0 rejected with
counts, NaN/Inf dropped explicitly and counted, PAL2022 filter u > 1e-6 sd(E)).
"""

import numpy as np
import pytest
import xarray as xr

import uqx
from uqx.dataio.model import InputError, as_stacked, from_arrays, iter_sets, stack

E5 = [0.1, -0.2, 0.3, -0.4, 0.5]
U5 = [1.0, 2.0, 3.0, 4.0, 5.0]


# ---------------------------------------------------------------- from_arrays


def test_from_arrays_canonical_record():
    ds = from_arrays(E5, U5, X=[5, 4, 3, 2, 1], V=np.zeros(5), name="toy", units="eV",
                     source="unit test")
    assert set(ds.data_vars) == {"E", "uE", "X", "V"}
    assert ds["E"].dims == ("sample",) and ds.sizes["sample"] == 5
    assert ds["E"].dtype == np.float64
    np.testing.assert_array_equal(ds["uE"].values, U5)
    assert ds.attrs["name"] == "toy" and ds.attrs["units"] == "eV"
    assert ds.attrs["source"] == "unit test"
    assert ds.attrs["n_dropped"] == 0 and ds.attrs["filters"] == ""
    assert ds["E"].attrs["units"] == "eV" and "long_name" in ds["X"].attrs
    assert uqx.from_arrays is from_arrays


def test_from_arrays_accepts_numeric_strings_and_column_vectors():
    ds = from_arrays(["1", "2.5"], np.array([[1.0], [2.0]]))
    np.testing.assert_array_equal(ds["E"].values, [1.0, 2.5])
    np.testing.assert_array_equal(ds["uE"].values, [1.0, 2.0])


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(E=[1.0, np.nan, 3.0], uE=[1.0, 1.0, 1.0]), r"1 value\(s\) of E .*NaN or infinite"),
        (dict(E=[1.0, 2.0, 3.0], uE=[1.0, np.inf, 1.0]), r"of uE .*NaN or infinite"),
        (dict(E=[1.0, 2.0, 3.0], uE=[1.0, 1.0, 1.0], X=[0, -np.inf, 1]), r"of X .*NaN or infinite"),
        (dict(E=[1.0, 2.0, 3.0], uE=[1.0, 1.0, 1.0], V=[0, 1, np.nan]), r"of V .*NaN or infinite"),
        (dict(E=[1.0, 2.0, 3.0], uE=[1.0, 0.0, 1.0]), r"of uE .*<= 0"),
        (dict(E=[1.0, 2.0, 3.0], uE=[-1.0, -2.0, 1.0]), r"2 value\(s\) of uE .*<= 0"),
        (dict(E=[1.0, 2.0, 3.0], uE=[1.0, 2.0]), r"length mismatch.*E=3, uE=2"),
        (dict(E=[1.0, 2.0], uE=[1.0, 2.0], X=[1.0]), r"length mismatch.*X=1"),
        (dict(E=[1.0], uE=[1.0]), r"at least 2 points.*got 1"),
        (dict(E=[], uE=[]), r"at least 2 points.*got 0"),
        (dict(E=["a", "b"], uE=[1.0, 1.0]), r"column 'E' is not numeric"),
        (dict(E=[1.0, 2.0], uE=[1.0, "x"]), r"column 'uE' is not numeric"),
        (dict(E=[1.0, 2.0], uE=[1.0, 1.0], X=[object(), 1]), r"column 'X' is not numeric"),
        (dict(E=[1j, 2.0], uE=[1.0, 1.0]), r"column 'E' is not numeric"),
        (dict(E=np.ones((2, 3)), uE=np.ones(6)), r"E must be one-dimensional"),
    ],
)
def test_from_arrays_input_errors(kwargs, match):
    with pytest.raises(InputError, match=match):
        from_arrays(**kwargs, name="bad")
    # the message starts with the data set name
    with pytest.raises(InputError, match=r"^bad: "):
        from_arrays(**kwargs, name="bad")


def test_input_error_is_value_error():
    assert issubclass(InputError, ValueError)
    assert uqx.InputError is InputError


def test_nan_message_names_rows_and_the_fix():
    E = np.arange(10.0)
    E[[2, 3, 4, 5, 6, 8]] = np.nan
    with pytest.raises(InputError) as exc:
        from_arrays(E, np.ones(10))
    msg = str(exc.value)
    assert "6 value(s) of E" in msg and "2, 3, 4, 5, 6, ..." in msg
    assert "drop_nonfinite=True" in msg


def test_drop_nonfinite_counts_rows():
    E = [1.0, np.nan, 3.0, 4.0, np.inf, 6.0]
    u = [1.0, 2.0, 3.0, 1.0, 5.0, np.nan]
    X = [1.0, 2.0, np.nan, 4.0, 5.0, 6.0]
    ds = from_arrays(E, u, X=X, drop_nonfinite=True)
    # rows 1 (E), 2 (X), 4 (E), 5 (uE) are dropped, each counted once
    np.testing.assert_array_equal(ds["E"].values, [1.0, 4.0])
    np.testing.assert_array_equal(ds["X"].values, [1.0, 4.0])
    assert ds.attrs["n_dropped"] == 4
    assert "dropped 4 row(s) with non-finite values" in ds.attrs["filters"]
    # nothing to drop: count 0, no filter text
    ok = from_arrays(E5, U5, drop_nonfinite=True)
    assert ok.attrs["n_dropped"] == 0 and ok.attrs["filters"] == ""
    # dropping down to fewer than 2 points is still an error
    with pytest.raises(InputError, match="at least 2 points"):
        from_arrays([1.0, np.nan, np.nan], [1.0, 1.0, 1.0], drop_nonfinite=True)
    # dropping does not excuse u <= 0
    with pytest.raises(InputError, match="<= 0"):
        from_arrays([1.0, np.nan, 3.0, 4.0], [1.0, 1.0, -1.0, 1.0], drop_nonfinite=True)


def test_nonpositive_rows_reported_in_input_numbering_after_drop():
    # regression: the message used to number the rows of the filtered array ('rows 2')
    with pytest.raises(InputError, match=r"rows 3\)"):
        from_arrays([1.0, np.nan, 3.0, 4.0, 5.0], [1.0, 2.0, 3.0, -1.0, 5.0],
                    drop_nonfinite=True)


def test_min_uE_rel_sd_filter_counts_rows():
    E = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    sd = np.std(E, ddof=1)
    u = np.array([1.0, 0.5e-6 * sd, 0.0, -1.0, 2e-6 * sd, 1.0])
    ds = from_arrays(E, u, X=np.arange(6.0), min_uE_rel_sd=1e-6, name="pal")
    np.testing.assert_array_equal(ds["E"].values, [1.0, 5.0, 6.0])
    np.testing.assert_array_equal(ds["X"].values, [0.0, 4.0, 5.0])
    assert ds.attrs["n_dropped"] == 3
    assert ds.attrs["filters"] == "uE > 1e-06*sd(E): dropped 3 row(s)"
    # the filter is recorded even when it drops nothing
    none = from_arrays(E5, U5, min_uE_rel_sd=1e-6)
    assert none.attrs["n_dropped"] == 0 and "dropped 0 row(s)" in none.attrs["filters"]
    # both filters: counts add up, both described
    both = from_arrays(np.append(E, np.nan), np.append(u, 1.0), drop_nonfinite=True,
                       min_uE_rel_sd=1e-6)
    assert both.attrs["n_dropped"] == 4
    assert "non-finite" in both.attrs["filters"] and "sd(E)" in both.attrs["filters"]
    # the threshold uses sd(E) of the rows before the filter (n-1)
    E2 = np.array([0.0, 10.0, 20.0])
    thr = np.std(E2, ddof=1)
    kept = from_arrays(E2, [1.01 * thr, 0.99 * thr, 2 * thr], min_uE_rel_sd=1.0)
    np.testing.assert_array_equal(kept["E"].values, [0.0, 20.0])
    with pytest.raises(InputError, match="at least 2 points"):
        from_arrays([1.0, 2.0, 3.0], [1e-12, 1e-12, 1.0], min_uE_rel_sd=1e-6)


# ---------------------------------------------------------------- stack / iter_sets


def _three():
    a = from_arrays([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], X=[1.0, 2.0, 3.0], name="a", units="eV")
    b = from_arrays([4.0, 5.0], [2.0, 2.0], name="b", units="eV")
    c = from_arrays(np.arange(5.0), np.ones(5), drop_nonfinite=True, name="c", units="eV")
    return a, b, c


def test_stack_pads_with_nan_and_records_sizes():
    a, b, c = _three()
    c2 = from_arrays([1.0, np.nan, 2.0, 3.0], [1.0, 1.0, 1.0, 1.0], drop_nonfinite=True,
                     name="c2", units="eV")
    ds = stack([a, b, c2])
    assert ds.sizes == {"set": 3, "sample": 3}
    assert list(ds["set"].values) == ["a", "b", "c2"]
    np.testing.assert_array_equal(ds["M"].values, [3, 2, 3])
    np.testing.assert_array_equal(ds["n_dropped"].values, [0, 0, 1])
    assert np.isnan(ds["E"].values[1, 2]) and np.isnan(ds["uE"].values[1, 2])
    # X only in "a": all-NaN elsewhere
    assert np.isfinite(ds["X"].values[0]).all() and np.isnan(ds["X"].values[1:]).all()
    assert ds.attrs["units"] == "eV"
    assert "c2: dropped 1 row(s)" in ds.attrs["filters"]


def test_stack_errors_and_units():
    a, b, _ = _three()
    with pytest.raises(InputError, match="duplicate data set names.*'a'"):
        stack([a, b, a])
    with pytest.raises(InputError, match="no data sets"):
        stack([])
    other = from_arrays([1.0, 2.0], [1.0, 1.0], name="z", units="kcal/mol")
    assert stack([a, other]).attrs["units"] == "mixed"


def test_iter_sets_strips_padding():
    a, b, c = _three()
    ds = stack([a, b, c])
    sets = list(iter_sets(ds))
    assert [s.name for s in sets] == ["a", "b", "c"]
    assert [s.M for s in sets] == [3, 2, 5]
    np.testing.assert_array_equal(sets[1].E, [4.0, 5.0])
    np.testing.assert_array_equal(sets[1].uE, [2.0, 2.0])
    assert all(np.isfinite(s.E).all() and np.isfinite(s.uE).all() for s in sets)
    np.testing.assert_array_equal(sets[0].X, [1.0, 2.0, 3.0])
    assert sets[1].X is None and sets[2].X is None and sets[0].V is None
    np.testing.assert_array_equal(sets[0].variable("uE"), [1.0, 1.0, 1.0])
    with pytest.raises(InputError, match="no variable 'X'"):
        sets[1].variable("X")


def test_as_stacked_single_and_list():
    a, b, _ = _three()
    one = as_stacked(a)
    assert one.sizes["set"] == 1 and list(one["set"].values) == ["a"]
    xr.testing.assert_identical(as_stacked(one), one)  # checked again: the same data
    two = as_stacked([a, b])
    xr.testing.assert_identical(two, stack([a, b]))
    with pytest.raises(InputError, match="'E' and 'uE'"):
        as_stacked(xr.Dataset({"E": ("sample", [1.0, 2.0])}))


def test_statistics_ignore_padding():
    # the same set gives identical statistics alone or padded inside a stack
    rng = np.random.default_rng(3)
    u = rng.uniform(0.5, 2, 300)
    long = from_arrays(u * rng.standard_normal(300), u, name="long")
    short = from_arrays(u[:120] * rng.standard_normal(120), u[:120], name="short")
    both = uqx.compute(stack([long, short]), ["zms", "rce", "cc", "ence"], bins=5)
    alone = uqx.compute(short, ["zms", "rce", "cc", "ence"], bins=5)
    np.testing.assert_allclose(both.sel(set="short").values, alone.sel(set="short").values,
                               rtol=1e-12)


# ---------------------------------------------------------------- attrs, units, dim names


def test_stack_keeps_attrs_and_records_units_per_set():
    a = from_arrays([1.0, 2.0], [1.0, 1.0], name="a", units="eV", source="run 1")
    b = from_arrays([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], name="b", units="kcal/mol",
                    source="run 2")
    both = stack([a, b])
    assert both["units"].values.tolist() == ["eV", "kcal/mol"]
    assert both.attrs["units"] == "mixed" and "units" not in both["E"].attrs
    assert both.attrs["sources"] == "run 1; run 2"
    same = stack([a, b.assign_attrs(units="eV")])
    assert same["E"].attrs["units"] == "eV" and same["units"].values.tolist() == ["eV", "eV"]
    # attributes shared by all sets (e.g. a common source or family) are kept
    one = as_stacked(a.assign_attrs(family="QM9"))
    assert one.attrs["family"] == "QM9" and one.attrs["source"] == "run 1"
    assert one.attrs["units"] == "eV" and one["E"].attrs["units"] == "eV"


@pytest.mark.parametrize("dim", ["set", "model", "method"])
def test_stack_any_dim_name(dim):
    a, b, _ = _three()
    ds = stack([a, b], dim=dim)
    for v in ("E", "uE", "X"):
        assert ds[v].dims == (dim, "sample")
    for v in ("M", "n_dropped", "units"):
        assert ds[v].dims == (dim,)
    assert list(ds[dim].values) == ["a", "b"]
    assert [s.M for s in iter_sets(ds)] == [3, 2]
    ref = uqx.compute(stack([a, b]), ["zms", "rce"])
    np.testing.assert_allclose(uqx.compute(ds, ["zms", "rce"]).values, ref.values)
    with pytest.raises(InputError, match="differ from 'sample'"):
        stack([a], dim="sample")


def test_provenance_names_sizes_digest():
    import hashlib

    a, b, _ = _three()
    p = uqx.provenance(stack([a, b]))
    assert p["input_names"] == ["a", "b"] and p["input_sizes"] == [3, 2]
    # SHA-256 of E, "|", uE, "|" (float64), first 16 bytes as 4 little-endian words
    d = hashlib.sha256(np.array([4.0, 5.0]).astype("<f8").tobytes() + b"|"
                       + np.array([2.0, 2.0]).astype("<f8").tobytes() + b"|").digest()
    want = "".join(f"{int.from_bytes(d[4 * i:4 * i + 4], 'little'):08x}" for i in range(4))
    assert p["input_digests"][1] == want
    assert uqx.provenance(b)["input_digests"] == [want]
    assert uqx.provenance(list(uqx.iter_sets(b))) == uqx.provenance(b)
