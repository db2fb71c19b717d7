"""Every output of ``validate`` is a function of the set of rows, not of their order.

Equal-count bins once split tie groups of uE by file order, so rows sorted
by |E| put the large errors in the upper bin of every tie group and calibrated data were
declared inconsistent; two shuffles of the same rows disagreed. With ``ties="content"``
(the default) any permutation of the rows gives the same result, bit for bit; the papers'
R convention (``ties="file-order"``) stays available for their reproductions.
"""

import json

import numpy as np
import pytest
import xarray as xr

import uqx
from uqx.cli import main
from uqx.engine.binning import content_order

STATS = ["zms", "rce", "cc", "ence", "zmse", "zve"]


def _tied(rng, M=1200, levels=5):
    """Calibrated errors whose uE takes a few values (uE stored with few decimals)."""
    u = rng.integers(1, levels + 1, M) * 0.3
    return u * rng.standard_normal(M), u, rng.uniform(0, 1, M).round(1)


def _validate(E, u, X, order, n_boot=200, n_mc=200, ties="content"):
    ds = uqx.from_arrays(E[order], u[order], X=X[order], name="tied")
    return uqx.validate(ds, STATS, bootstrap=n_boot, copies=n_mc,
                        binning=uqx.Binning(bins=10, ties=ties), compute=uqx.Compute(seed=5))


def _assert_same(a, b):
    xr.testing.assert_identical(a.drop_attrs(), b.drop_attrs())


def test_content_order_is_a_function_of_the_set_of_rows(rng):
    E, u, X = _tied(rng, M=5000)
    for _ in range(5):
        p = rng.permutation(E.size)
        a, b = content_order(u, E, X), content_order(u[p], E[p], X[p])
        for col in (E, u, X):
            np.testing.assert_array_equal(col[a], col[p][b])
    a = content_order(u, E)
    assert np.all(np.diff(u[a]) >= 0)  # sorted by uE first


def test_tie_groups_are_not_split_by_the_size_of_the_errors(rng):
    """Within a tie group the hash order is unrelated to |E| (the bins' split is fair)."""
    E, u, _ = _tied(rng, M=20_000, levels=2)
    o = content_order(u, E)
    first = o[: np.sum(u == u.min())]  # the rows of the lower tie group, in content order
    half = first.size // 2
    lo, hi = np.mean(E[first[:half]] ** 2), np.mean(E[first[half:]] ** 2)
    assert abs(lo / hi - 1) < 0.1


def test_any_permutation_gives_the_same_result_bit_for_bit(rng):
    """Shuffled, sorted by |E|, reversed: identical results (with ties in uE and X)."""
    E, u, X = _tied(rng)
    ref = _validate(E, u, X, np.arange(E.size))
    for order in (rng.permutation(E.size), np.argsort(np.abs(E), kind="stable"),
                  np.arange(E.size)[::-1]):
        _assert_same(ref, _validate(E, u, X, order))


def test_without_ties_too(rng):
    u = rng.uniform(0.5, 2.0, 800)
    E, X = u * rng.standard_normal(800), rng.uniform(0, 1, 800)
    ref = _validate(E, u, X, np.arange(800), n_boot=100, n_mc=100)
    _assert_same(ref, _validate(E, u, X, rng.permutation(800), n_boot=100, n_mc=100))


def test_rows_sorted_by_abs_error_are_no_longer_inconsistent(rng):
    """The finding: calibrated, 5 distinct uE, rows sorted by |E|: ENCE, ZMSE, ZVE were
    ``invalid``; in content order the verdicts are those of the shuffled rows."""
    E, u, X = _tied(rng, M=2000)
    by_abs = np.argsort(np.abs(E), kind="stable")
    res = _validate(E, u, X, by_abs, n_boot=200, n_mc=300)
    binned = res["verdict"].sel(stat=["ence", "zmse", "zve"]).values.ravel()
    assert "invalid" not in binned, binned
    # the papers' convention still sees the file order (kept for their reproductions)
    papers = _validate(E, u, X, by_abs, n_boot=200, n_mc=300, ties="file-order")
    assert "invalid" in papers["verdict"].sel(stat=["ence", "zmse", "zve"]).values


def test_unknown_ties_option_is_refused(rng):
    E, u, X = _tied(rng, M=200)
    with pytest.raises(uqx.InputError, match="ties must be one of"):
        _validate(E, u, X, np.arange(200), ties="sorted")


def test_cli_result_does_not_depend_on_the_row_order_of_the_file(tmp_path, rng, capsys):
    E, u, X = _tied(rng, M=900)
    outs = []
    for k, order in enumerate((np.arange(E.size), np.argsort(np.abs(E), kind="stable"))):
        path = tmp_path / f"rows{k}.csv"
        np.savetxt(path, np.column_stack([E[order], u[order], X[order]]), delimiter=",",
                   header="E,uE,X", comments="")
        rc = main(["validate", str(path), "--X", "X", "--n-boot", "100", "--n-mc", "100",
                   "--seed", "3", "--bins", "10", "--format", "json", "-q"])
        assert rc == 0
        recs = json.loads(capsys.readouterr().out)
        for r in recs:
            r.pop("dataset", None)
            r["summary"] = r["summary"].split(": ", 1)[1]  # named after its set, as dataset
        outs.append(recs)
    assert outs[0] == outs[1]


@pytest.mark.data
def test_qm9_verdicts_do_not_depend_on_the_row_order(data_dir):
    """QM9_E (13 885 rows, 135 distinct uE): ENCE was 0.066 in file order and 0.209 with
    the rows sorted by |E|."""
    ds = uqx.load_dataset("QM9_E", data_dir=data_dir)
    sd = next(uqx.dataio.model.iter_sets(ds))
    kw = dict(bootstrap=100, copies=100, conditional=False, compute=uqx.Compute(seed=1))
    a = uqx.validate(uqx.from_arrays(sd.E, sd.uE, name="q"), ["ence", "zmse"], **kw)
    o = np.argsort(np.abs(sd.E), kind="stable")
    b = uqx.validate(uqx.from_arrays(sd.E[o], sd.uE[o], name="q"), ["ence", "zmse"], **kw)
    _assert_same(a, b)
