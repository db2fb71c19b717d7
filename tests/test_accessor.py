"""xarray and pandas conventions: the .uqx accessor, from_dataframe, tidy result tables."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import uqx
from uqx.accessor import PLOT_KINDS
from uqx.dataio.netcdf import atomic_write
from uqx.dataio.synth import nig


@pytest.fixture(scope="module")
def frame():
    E, u = nig(1200, 6.0, seed=3)
    return pd.DataFrame({"err": E, "sigma": u, "mass": np.linspace(1.0, 50.0, E.size),
                         "model": np.repeat(["gnn", "rf"], E.size // 2)})


@pytest.fixture(scope="module")
def result(frame):
    ds = uqx.from_dataframe(frame, E="err", uE="sigma", X="mass", by="model")
    return ds.uqx.validate(["zms", "rce", "cc", "ence"], bootstrap=150, copies=60,
                           compute=uqx.Compute(seed=2))


def test_three_lines_from_dataframe_to_verdicts(frame, result):
    ds = uqx.from_dataframe(frame, E="err", uE="sigma", X="mass", by="model")
    assert list(ds["set"].values) == ["gnn", "rf"] and ds.sizes["sample"] == 600
    table = result.uqx.verdicts()
    assert list(table.index) == ["gnn", "rf"] and table.index.name == "set"
    # the questions, the factor conclusion, then the statistics
    assert list(table.columns) == ["M", "average", "consistency", "adaptivity (X)", "ranking",
                                   "up to a factor", "scale factor", "zms", "rce", "cc", "ence"]
    # X is given but none of adaptivity's statistics was requested: said, not dropped
    assert all(str(v).startswith("not tested") for v in table["adaptivity (X)"])
    assert table.summary == result.uqx.summary() and len(table.summary) == 2
    words = {"valid", "invalid", "inconclusive", "not tested", "diagnostic"}
    assert all(str(v).split(" (")[0] in words for v in table[["zms", "rce"]].values.ravel())
    assert table["M"].tolist() == [600, 600]


def test_accessor_only_forwards(frame, result):
    ds = uqx.from_dataframe(frame.iloc[:600], E="err", uE="sigma", name="gnn")
    xr.testing.assert_identical(ds.uqx.describe(), uqx.describe(ds))
    xr.testing.assert_identical(ds.uqx.compute(["zms", "rce"]), uqx.compute(ds, ["zms", "rce"]))
    pd.testing.assert_frame_equal(result.uqx.table(), uqx.result_table(result))
    pd.testing.assert_frame_equal(result.uqx.verdicts(), uqx.verdict_table(result))
    pd.testing.assert_frame_equal(result.uqx.to_dataframe(), uqx.result_dataframe(result))
    assert result.uqx.records() == uqx.result_records(result)
    again = ds.uqx.validate(["zms", "rce"], bootstrap=100, copies=20, conditional=False,
                            compute=uqx.Compute(seed=5))
    direct = uqx.validate(ds, ["zms", "rce"], bootstrap=100, copies=20, conditional=False,
                          compute=uqx.Compute(seed=5))
    np.testing.assert_array_equal(again["estimate"].values, direct["estimate"].values)
    assert list(again["verdict"].values.ravel()) == list(direct["verdict"].values.ravel())


def test_plot_methods_cover_uqx_plot(result):
    import matplotlib.pyplot as plt

    import uqx.plot as P

    figure_functions = set(P.__all__) - {"tested_stats"}
    assert set(PLOT_KINDS) == figure_functions
    assert set(PLOT_KINDS) <= set(dir(result.uqx.plot))
    fig = result.uqx.plot.zeta_bars()
    # one panel per statistic with a finite ζ (ENCE's BCa interval can be NaN: no ζ)
    finite = [st for st in ("zms", "rce", "cc", "ence")
              if np.isfinite(result["zeta"].sel(stat=st).values).any()
              or np.isfinite(result["zeta_sim"].sel(stat=st).values).any()]
    assert {"zms", "rce", "cc"} <= set(finite)
    assert len([ax for ax in fig.axes if ax.get_ylabel()]) == len(finite)
    fig2 = result.uqx.plot("zeta", stats=["zms"])
    assert len([ax for ax in fig2.axes if ax.get_ylabel()]) == 1
    with pytest.raises(uqx.InputError, match="unknown figure kind"):
        result.uqx.plot("histogram")
    plt.close("all")


def test_result_dataframe_is_long_and_tidy(result):
    df = uqx.result_dataframe(result)
    assert len(df) == result.sizes["set"] * result.sizes["stat"]
    assert list(df.columns[:3]) == ["set", "M", "stat"]
    assert isinstance(df.index, pd.RangeIndex)
    assert df["estimate"].dtype == np.float64 and df["borderline"].dtype == bool
    assert {"zeta_sim_N", "zeta_sim_T6", "verdict", "verdict_reason"} <= set(df.columns)
    # unrounded: the estimates are those of the result
    got = df.set_index(["set", "stat"])["estimate"]
    np.testing.assert_array_equal(got.loc[("rf", "zms")],
                                  result["estimate"].sel(set="rf", stat="zms").values)
    # ζ_Sim only for simulated references
    assert df.loc[df.stat == "zms", "zeta_sim_N"].isna().all()
    assert df.loc[df.stat == "cc", "zeta_sim_N"].notna().all()
    # results of several runs concatenate with plain pandas
    both = pd.concat([df.assign(run=1), df.assign(run=2)], ignore_index=True)
    assert both.groupby("run").size().tolist() == [len(df), len(df)]


def test_from_dataframe_errors_name_the_column(frame):
    with pytest.raises(uqx.InputError, match="no column 'unc'.*'err', 'sigma'"):
        uqx.from_dataframe(frame, E="err", uE="unc")
    bad = frame.assign(sigma=frame["sigma"].astype(object))
    bad.loc[3, "sigma"] = "n/a"
    with pytest.raises(uqx.InputError, match="'sigma' is not numeric.*'n/a' in data row 4"):
        uqx.from_dataframe(bad, E="err", uE="sigma")
    with pytest.raises(uqx.InputError, match="not both"):
        uqx.from_dataframe(frame, E="err", uE="sigma", by="model", name="x")
    with pytest.raises(uqx.InputError, match="no column 'method' for by="):
        uqx.from_dataframe(frame, E="err", uE="sigma", by="method")
    with pytest.raises(uqx.InputError, match="expected a pandas DataFrame"):
        uqx.from_dataframe(frame.to_dict(), E="err", uE="sigma")
    with pytest.raises(uqx.InputError, match="no data rows"):
        uqx.from_dataframe(frame.iloc[:0], E="err", uE="sigma")


def test_from_dataframe_matches_read_csv(frame, tmp_path):
    path = tmp_path / "preds.csv"
    frame.to_csv(path, index=False)
    a = uqx.read_csv(path, E="err", uE="sigma", X="mass", name="p")
    b = uqx.from_dataframe(frame, E="err", uE="sigma", X="mass", name="p")
    for v in ("E", "uE", "X"):
        np.testing.assert_array_equal(a[v].values, b[v].values)
    assert a.attrs["columns"] == b.attrs["columns"] == "E=err, uE=sigma, X=mass"
    assert b.attrs["source"] == "DataFrame"
    var = uqx.from_dataframe(frame.assign(v=frame["sigma"] ** 2), E="err", uE="v",
                             uE_is_variance=True)
    np.testing.assert_allclose(var["uE"].values, frame["sigma"].values)


def test_accessor_registered_whatever_the_import_order():
    code = (
        "import sys\n"
        "{first}\n"
        "ds = xr.Dataset({{'E': ('sample', [0.1, -0.2]), 'uE': ('sample', [0.1, 0.2])}})\n"
        "print(type(ds.uqx).__name__, 'numba' in sys.modules, 'matplotlib' in sys.modules)\n"
    )
    for first in ("import uqx\nimport xarray as xr", "import xarray as xr\nimport uqx"):
        p = subprocess.run([sys.executable, "-c", code.format(first=first)],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split() == ["UqxAccessor", "False", "False"], first


def test_atomic_write_replaces_whole_or_nothing(tmp_path):
    target = tmp_path / "sub" / "out.npz"
    atomic_write(target, lambda tmp: np.savez(tmp, a=np.arange(3)))  # keeps the suffix
    assert np.load(target)["a"].tolist() == [0, 1, 2]

    def fail(tmp):
        tmp.write_text("partial")
        raise RuntimeError(f"disk full while writing {tmp}")

    with pytest.raises(uqx.OutputError, match="out.npz: cannot write archive") as exc:
        atomic_write(target, fail, what="archive")
    assert ".tmp" not in str(exc.value)
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.npz"]
    assert np.load(target)["a"].tolist() == [0, 1, 2]  # the old file is untouched
    with pytest.raises(uqx.OutputError, match="is a directory"):
        atomic_write(tmp_path, lambda tmp: None)
