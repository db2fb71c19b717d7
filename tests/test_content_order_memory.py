"""The first steps of ``validate`` in O(chunk) memory, with the same results.

* the input checks (:mod:`uqx._checks`, :func:`uqx.dataio.model.as_stacked`) count and
  take extremes of numpy columns group by group: the same values as whole-column numpy;
* :func:`uqx.engine.binning.content_order` sorts uE and re-sorts only its tie groups:
  the same index array as the one ``np.lexsort`` of every row it replaces (the slow twin
  :func:`twins.content_order_lexsort`), with the order as the only row-sized array;
* the content order permutes the columns the workflow owns in place
  (:func:`uqx.dataio.row_order.permute_rows`), never a user's arrays, and the input digests
  are those of the rows as given.
"""

import tracemalloc
import warnings

import numpy as np
import pytest
import xarray as xr
from internals import count_input_checks
from twins import content_order_lexsort

import uqx
import uqx._checks as checks
import uqx.dataio.model as model
import uqx.dataio.row_order as row_order
import uqx.engine.binning as binning
from uqx.dataio.streaming import streamed_content_key
from uqx.engine.binning import content_order
from uqx.errors import InputError
from uqx.workflow import steps


# ---------------------------------------------------------------- content order
def _rows(rng, m, n_cols):
    """Rows with heavy ties: few distinct uE, repeated values, signed zeros, duplicates."""
    levels = rng.uniform(0.1, 2.0, int(rng.integers(1, 6))).round(3)
    u = rng.choice(levels, m) if rng.random() < 0.8 else rng.uniform(0.1, 2.0, m)
    cols = []
    for _ in range(n_cols):
        kind = rng.integers(3)
        if kind == 0:
            cols.append(rng.standard_normal(m))
        elif kind == 1:
            cols.append(rng.choice([-1.0, 0.0, -0.0, 1.0, 2.5], m))
        else:
            cols.append(rng.standard_normal(m).round(1))
    if m and rng.random() < 0.4:  # duplicated rows
        src = rng.integers(0, m, m)
        u, cols = u[src], [c[src] for c in cols]
    return u, cols


def test_content_order_is_the_lexsort_of_every_row(rng):
    for _ in range(300):
        m = int(rng.choice([0, 1, 2, 3, 7, 16, 17, 40, 333, 2000]))
        u, cols = _rows(rng, m, int(rng.integers(0, 4)))
        got, want = content_order(u, *cols), content_order_lexsort(u, *cols)
        assert got.dtype == np.int64
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("cap", [2, 5, 64])
def test_long_tie_groups_split_by_hash_bytes(rng, monkeypatch, cap):
    """Groups longer than the hash buffer: split in place by the hash's bytes, and rows
    whose 64 hash bits are all equal (identical rows) ordered by their columns, then row."""
    monkeypatch.setattr(binning, "_HASH_ROWS", cap)
    for _ in range(40):
        m = int(rng.choice([30, 300, 3000]))
        u = rng.choice([1.0, 2.0], m)
        cols = [rng.choice([0.0, -0.0, 1.0, 3.25], m) for _ in range(int(rng.integers(0, 3)))]
        np.testing.assert_array_equal(content_order(u, *cols), content_order_lexsort(u, *cols))


def test_non_finite_values_sort_as_lexsort_does(rng):
    # the workflow's columns are finite; the order is still lexsort's (NaN last, NaNs tie)
    m = 500
    u = rng.choice([0.5, 1.0, np.nan, np.inf, 0.0, -0.0], m)
    E = rng.choice([np.nan, -np.inf, 1.0, -0.0, 0.0], m)
    np.testing.assert_array_equal(content_order(u, E), content_order_lexsort(u, E))


def test_content_order_holds_only_the_order(rng):
    """One int64 a row (the result) and the hashes of M/16 rows at most: no lexsort keys."""
    m = 1 << 20
    u = rng.integers(1, 200, m) * 0.01  # tie groups of ~5000 rows
    E = u * rng.standard_normal(m)
    content_order(u[:100], E[:100])  # compiled (numba) before measuring
    tracemalloc.start()
    order = content_order(u, E)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= order.nbytes + m // 2 + (1 << 16), peak / m  # hashes: M/16 at most
    np.testing.assert_array_equal(order, content_order_lexsort(u, E))


def test_content_order_refuses_columns_of_another_length():
    with pytest.raises(ValueError):
        content_order(np.ones(3), np.ones(4))


# ---------------------------------------------------------------- input checks
def _whole_column_counts(cols):
    """The counts and extremes of the checks as whole-column numpy computes them."""
    E, u = cols["E"], cols["uE"]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        out = {f"nonfinite_{k}": int((~np.isfinite(v)).sum()) for k, v in cols.items()}
        out["nonpositive_uE"] = int((u <= 0).sum())
        out.update(extreme_E_max=float(np.nanmax(abs(E))), extreme_u_min=float(np.nanmin(u)),
                   extreme_u_max=float(np.nanmax(u)), extreme_z_max=float(np.nanmax(abs(E / u))))
        for k in ("X", "V"):
            if k in cols:
                out[f"extreme_{k}_range"] = float(np.nanmax(cols[k]) - np.nanmin(cols[k]))
    return out


@pytest.mark.parametrize("rows", [7, 1000, 4096, 5000])
def test_grouped_counts_and_extremes_equal_whole_column(rng, monkeypatch, rows):
    monkeypatch.setattr(checks, "CHECK_ROWS", rows)
    m = 10_000
    u = rng.uniform(0.5, 2.0, m)
    cols = {"E": u * rng.standard_normal(m), "uE": u, "X": rng.standard_normal(m),
            "V": np.full(m, np.nan)}
    cols["E"][[3, 4999]] = [np.nan, np.inf]
    cols["uE"][[10, 20, 9999]] = [0.0, -1.0, np.nan]
    cols["X"][:5000] = np.nan
    got = {k: checks._scalar(v) for k, v in checks.count_problems(cols).items()}
    want = _whole_column_counts(cols)
    assert got.keys() == want.keys()
    for k in want:
        np.testing.assert_equal(got[k], want[k], err_msg=k)
    ext = checks._extremes(cols)
    for k, v in ext.items():
        np.testing.assert_equal(v, want[f"extreme_{k}"], err_msg=k)
    assert checks.count_rows(cols["X"], np.isfinite) == int(np.isfinite(cols["X"]).sum())


def test_counts_of_dask_columns_stay_lazy(rng):
    da = pytest.importorskip("dask.array")
    m = 3000
    u = rng.uniform(0.5, 2.0, m)
    cols = {"E": u * rng.standard_normal(m), "uE": u}
    lazy = {k: da.from_array(v, chunks=700) for k, v in cols.items()}
    out = checks.count_problems(lazy)
    assert all(checks.is_lazy(v) for v in out.values())
    got = dict(zip(out, checks._compute(list(out.values())), strict=True))
    assert got == _whole_column_counts(cols)


def _stacked(E, u, M=None):
    data = {"E": (("set", "sample"), E), "uE": (("set", "sample"), u)}
    if M is not None:
        data["M"] = ("set", np.asarray(M))
    return xr.Dataset(data, coords={"set": [f"s{i}" for i in range(E.shape[0])]})


def test_stacked_sizes_group_by_group(rng, monkeypatch):
    monkeypatch.setattr(model, "CHECK_ROWS", 64)
    E = rng.standard_normal((4, 1000))
    u = np.ones((4, 1000))
    E[0, 700:], u[0, 700:] = np.nan, np.nan  # padded after row 700
    E[1, 300:], u[1, 300:] = np.nan, np.nan
    E[1, 100], u[1, 100] = np.nan, np.nan  # an interior NaN row is real
    E[2, :], u[2, :] = np.nan, np.nan  # all padding
    u[3, 999] = np.nan  # E not NaN: a real row
    ds = _stacked(E, u)
    real = np.isfinite(E) | np.isfinite(u)
    want = (real * np.arange(1, 1001)).max(axis=1)
    np.testing.assert_array_equal(model._stacked_sizes(ds), want)


def test_checks_of_stacked_numpy_hold_no_row_sized_temporary(rng, monkeypatch):
    monkeypatch.setattr(checks, "CHECK_ROWS", 1 << 12)
    monkeypatch.setattr(model, "CHECK_ROWS", 1 << 12)
    m = 1 << 18
    u = rng.uniform(0.5, 2.0, m)
    ds = _stacked((u * rng.standard_normal(m))[None], u[None], M=[m])
    tracemalloc.start()
    out = uqx.as_stacked(ds)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < m, peak / m  # under a byte a row (a boolean column alone is one)
    assert out["E"].data is ds["E"].data  # the user's arrays are kept, not copied


def test_streamed_content_key_of_numpy_equals_content_key(rng):
    from uqx.engine.resample import content_key

    E, u = rng.standard_normal(3001), rng.uniform(1, 2, 3001)
    for step in (1, 1000, 3001, 1 << 20):
        assert streamed_content_key(E, u, 3001, step) == content_key(E, u)
    assert streamed_content_key(E, u, 2000, 700) == content_key(E[:2000], u[:2000])


# ---------------------------------------------------------------- permutation in place
def test_permute_rows_in_place_equals_copy(rng):
    M = [500, 321]
    E, u = rng.standard_normal((2, 500)), rng.uniform(1, 2, (2, 500))
    E[1, 321:], u[1, 321:] = np.nan, np.nan
    orders = [rng.permutation(500), None]
    orders[1] = rng.permutation(321)
    keep = [o.copy() for o in orders]
    copied = row_order.permute_rows(_stacked(E.copy(), u.copy(), M), orders)
    own = _stacked(E.copy(), u.copy(), M)
    buf = own["E"].data
    moved = row_order.permute_rows(own, orders, in_place=("E", "uE"))
    assert moved["E"].data is buf  # permuted where it was
    xr.testing.assert_identical(moved, copied)
    for a, b in zip(orders, keep, strict=True):
        np.testing.assert_array_equal(a, b)  # orders left as given
    np.testing.assert_array_equal(copied["E"].values[0], E[0][orders[0]])
    np.testing.assert_array_equal(copied["uE"].values[1, :321], u[1, :321][orders[1]])
    # None leaves a set as it is
    part = row_order.permute_rows(_stacked(E.copy(), u.copy(), M), [None, orders[1]],
                              in_place=("E",))
    np.testing.assert_array_equal(part["E"].values[0], E[0])
    np.testing.assert_array_equal(part["uE"].values[0], u[0])
    np.testing.assert_array_equal(part["E"].values[1, :321], E[1, :321][orders[1]])


@pytest.mark.parametrize("in_place", [(), ("E", "uE")])
def test_permute_rows_refuses_what_is_not_a_permutation(in_place):
    ds = _stacked(np.ones((1, 4)), np.ones((1, 4)), [4])
    for bad in ([0, 1, 2, 4], [0, -1, 2, 3], [0, 1], [0.0, 1.0, 2.0, 3.0]):
        with pytest.raises(InputError):
            row_order.permute_rows(ds, [np.asarray(bad)], in_place=in_place)
    if in_place:
        with pytest.raises(InputError, match="permutation"):
            row_order.permute_rows(ds, [np.array([0, 1, 1, 3])], in_place=in_place)


def _count_in_place(monkeypatch):
    calls = []
    real = row_order._permute_in_place

    def spy(cols, n_cols, order):
        calls.append(n_cols)
        return real(cols, n_cols, order)

    monkeypatch.setattr(row_order, "_permute_in_place", spy)
    return calls


KW = dict(bootstrap=40, copies=20, conditional=False, compute=uqx.Compute(seed=3))


def _tied_rows(rng, m=1500):
    u = rng.integers(1, 6, m) * 0.3
    return u * rng.standard_normal(m), u


def test_validate_permutes_its_own_copy_in_place(rng, monkeypatch):
    """From arrays: as_stacked made a new stacked copy, permuted in place; a user's
    stacked data set: copied. The same results, and the user's arrays untouched."""
    E, u = _tied_rows(rng)
    keep = E.copy(), u.copy()
    calls = _count_in_place(monkeypatch)
    a = uqx.validate(uqx.from_arrays(E, u, name="s0"), ["zms", "ence"], **KW)
    assert calls == [2]
    st = _stacked(E[None], u[None], [E.size])
    st_keep = st.copy(deep=True)
    b = uqx.validate(st, ["zms", "ence"], **KW)
    assert calls == [2]  # the user's stacked arrays were copied, not moved
    xr.testing.assert_identical(st, st_keep)
    for x, y in zip(keep, (E, u), strict=True):
        np.testing.assert_array_equal(x, y)
    checked = uqx.as_stacked(uqx.from_arrays(E, u, name="s0"))
    c_keep = checked.copy(deep=True)
    c = uqx.validate(checked, ["zms", "ence"], **KW)
    assert calls == [2]  # a checked data set is the user's: copied too
    xr.testing.assert_identical(checked, c_keep)
    for r in (b, c):
        xr.testing.assert_identical(r.drop_attrs(), a.drop_attrs())
        assert r.attrs["input_digests"] == a.attrs["input_digests"]


def test_input_digests_are_those_of_the_rows_as_given(rng):
    E, u = _tied_rows(rng)
    p = rng.permutation(E.size)
    a = uqx.validate(uqx.from_arrays(E, u, name="d"), ["zms", "ence"], **KW)
    b = uqx.validate(uqx.from_arrays(E[p], u[p], name="d"), ["zms", "ence"], **KW)
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())  # a function of the rows
    assert a.attrs["input_digests"] == uqx.provenance(uqx.from_arrays(E, u))["input_digests"]
    assert b.attrs["input_digests"] == uqx.provenance(uqx.from_arrays(E[p], u[p]))[
        "input_digests"]
    assert a.attrs["input_digests"] != b.attrs["input_digests"]


def test_disk_columns_loaded_once_checked_and_permuted_in_place(rng, tmp_path, monkeypatch):
    from uqx.workflow.disk import load_columns

    E, u = _tied_rows(rng)
    path = tmp_path / "tied.nc"
    xr.Dataset({"E": ("sample", E), "uE": ("sample", u)}, attrs={"name": "d"}).to_netcdf(path)
    lazy = uqx.as_stacked(uqx.open_dataset(path, chunks=400))
    loaded = load_columns(lazy)
    np.testing.assert_array_equal(loaded["E"].values, lazy["E"].values)
    checks = count_input_checks(monkeypatch)
    calls = _count_in_place(monkeypatch)
    res = uqx.validate(uqx.open_dataset(path, chunks=400), ["zms", "ence"], **KW)
    assert calls == [2]
    assert checks == [1]  # the input is checked once: every step takes the CheckedSets
    mem = uqx.validate(uqx.from_arrays(E, u, name="d"), ["zms", "ence"], **KW)
    xr.testing.assert_identical(res.drop_attrs(), mem.drop_attrs())
    assert res.attrs["input_digests"] == mem.attrs["input_digests"]


def test_content_order_step_leaves_rows_in_order_alone(rng, monkeypatch):
    u = np.sort(rng.uniform(1, 2, 300))  # distinct and sorted: the order is the identity
    checked = model.check_sets(uqx.from_arrays(u * rng.standard_normal(300), u))
    sets = list(uqx.iter_sets(checked))
    calls = _count_in_place(monkeypatch)
    out, out_sets = steps._content_order_step(checked, sets, owned=["E", "uE"])
    assert out is checked and out_sets is sets and calls == []
