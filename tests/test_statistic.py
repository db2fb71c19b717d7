"""The named statistic functions of uqx.engine.statistic (the documented source of every
statistic): each entry of MOMENT_STATS / BINNED_STATS is a public function with its formula
and paper equation in a numpy-style docstring, and equals the plain-numpy twins
(tests/twins.py) on random data."""

import inspect
import re

import numpy as np
import pytest
import twins as T

import uqx.engine.statistic as S
from uqx.engine.binning import equal_count_edges

SOURCES = {  # where each formula comes from, as the docstrings must say
    "zms": "000 Eq. 14", "rce": "000 Eq. 10", "var_z": "000 Eq. 13", "nll": "000 Eq. 15",
    "nll_ref": "000 Eq. 16", "mean_z": "000 Table III", "t_z": "uqx", "mv": "001", "mse": "001",
    "rmv": "001", "rmse": "001", "ence": "000 Eq. 11", "ence_sd": "002 Eq. 6",
    "uce": "ErrViewLib", "zmse": "000 Eq. 17", "zmse_max": "uqx", "zms_scan": "uqx",
    "zve": "002 Eq. 9",
    "lzisd": "003", "lzms": "001",
}


def _functions():
    yield from S.MOMENT_STATS.items()
    yield from ((k, f) for k, (f, _) in S.BINNED_STATS.items())


@pytest.mark.parametrize("name,fn", list(_functions()), ids=lambda v: getattr(v, "__name__", v))
def test_every_statistic_is_a_documented_public_function(name, fn):
    assert inspect.isfunction(fn) and fn.__name__ != "<lambda>", name
    assert fn.__name__ in S.__all__ and getattr(S, fn.__name__) is fn
    assert name in fn.__name__  # the name says what it is
    doc = inspect.getdoc(fn)
    for part in (".. math::", "Parameters", "Returns", "See Also"):
        assert part in doc, f"{fn.__name__}: no {part!r}"
    assert SOURCES[name] in doc, f"{fn.__name__}: source {SOURCES[name]!r} not named"
    src = inspect.getsource(fn)
    assert re.search(r'^\s*r"""', src, re.M), f"{fn.__name__}: docstring not raw"


def test_moment_functions_equal_the_twins():
    rng = np.random.default_rng(11)
    u = rng.gamma(2.0, 0.5, (3, 400)) + 0.05
    E = u * rng.standard_t(5, (3, 400)) + 0.1
    Ssum, n = S.moment_sums(E, u), 400.0
    twin = {"zms": T.zms(E, u), "rce": T.rce(E, u), "mv": T.mv(u), "mse": T.mse(E),
            "rmv": T.rmv(u), "rmse": T.rmse(E), "mean_z": T.mean_z(E, u),
            "t_z": T.t_z(E, u),
            "var_z": T.var_z(E, u), "nll": T.nll(E, u), "nll_ref": T.nll_ref(u)}
    assert set(twin) == set(S.MOMENT_STATS)
    for k, want in twin.items():
        np.testing.assert_allclose(S.MOMENT_STATS[k](Ssum, n), want, rtol=1e-10, err_msg=k)


def test_binned_functions_equal_the_twins():
    rng = np.random.default_rng(12)
    M, N = 900, 12
    u = np.sort(rng.gamma(2.0, 0.5, M) + 0.05)
    E = u * rng.standard_t(5, (3, M)) * np.linspace(0.6, 1.6, M)  # miscalibrated in u
    edges = equal_count_edges(M, N, pop_min=20)
    Sb, cnt = S.bin_feature_sums(E, u, edges), np.diff(edges).astype(float)
    pb = T.per_bin(E, u, edges)
    twin = {
        "ence": T.ence(E, u, edges), "ence_sd": T.ence(E, u, edges, kind="sd"),
        "uce": T.uce(E, u, edges), "zmse": T.zmse(E, u, edges),
        "zmse_max": np.max(np.abs(np.log(pb["zms"])), axis=-1),
        "zms_scan": T.zms_scan(E, u, edges),
        "zve": T.zve(E, u, edges), "lzisd": T.lzisd(E, u, edges), "lzms": pb["zms"],
    }
    assert set(twin) == set(S.BINNED_STATS)
    for k, want in twin.items():
        np.testing.assert_allclose(S.BINNED_STATS[k][0](Sb, cnt), want, rtol=1e-10, err_msg=k)
    # the maximum over the bins is at least the mean, and sees one bad bin undiluted
    assert np.all(twin["zmse_max"] >= twin["zmse"])
    E1 = u * rng.standard_normal(M)
    E1[edges[-2]:] *= 3.0  # only the last bin miscalibrated
    S1 = S.bin_feature_sums(E1, u, edges)
    assert S.zmse_max_from_bin_sums(S1, cnt)[0] > 1.5 > S.zmse_from_bin_sums(S1, cnt)[0] * 5


def test_zms_scan_reads_a_miscalibrated_tail_at_its_own_precision():
    """A top decile whose uE are 40 % too small: the scan's largest term is that tail's
    sqrt(n) |ln ZMS|, several times its calibrated value, while ZMSE_max (one bin, half
    the points) sees less; on calibrated rows the scan stays near its normal-theory size
    (sd of sqrt(n) ln ZMS about sqrt(2))."""
    rng = np.random.default_rng(14)
    M, N = 4000, 20
    u = np.sort(rng.gamma(3.0, 0.5, M) + 0.1)
    edges = equal_count_edges(M, N, pop_min=30)
    cnt = np.diff(edges).astype(float)
    eps = rng.standard_normal((200, M))
    cal = S.zms_scan_from_bin_sums(S.bin_feature_sums(u * eps, u, edges), cnt)
    bad = u * eps
    bad[:, int(0.9 * M):] /= 0.6
    scan = S.zms_scan_from_bin_sums(S.bin_feature_sums(bad, u, edges), cnt)
    n_top = M - int(0.9 * M)
    # the top-decile tail alone: sqrt(400) * ln(1/0.36) ~ 20
    assert np.median(scan) > 0.8 * np.sqrt(n_top) * np.log(1 / 0.36)
    assert np.quantile(cal, 0.95) < 5.0 < np.quantile(scan, 0.01)
    np.testing.assert_allclose(scan[:3], T.zms_scan(bad[:3], u, edges), rtol=1e-10)


def test_per_bin_terms_is_the_scalar_twin_of_the_binned_functions():
    """The numba per-bin kernel of the fused sweeps against ence/zmse/zve_from_bin_sums:
    equal to 1e-12 relative on random data (only the mean over the bins differs: pairwise
    sum in numpy, sequential in the loops)."""
    rng = np.random.default_rng(13)
    M, N = 2000, 25
    u = np.sort(rng.gamma(1.5, 0.5, M) + 0.01)
    E = u * rng.standard_t(4, (5, M)) * rng.uniform(0.5, 2.0, (5, 1))
    edges = equal_count_edges(M, N, pop_min=20)
    Sb, cnt = S.bin_feature_sums(E, u, edges), np.diff(edges).astype(float)
    for r in range(E.shape[0]):
        terms = np.array([S.per_bin_terms(Sb[r, j, 0], Sb[r, j, 1], Sb[r, j, 2], Sb[r, j, 5],
                                          int(cnt[j])) for j in range(N)])
        np.testing.assert_allclose(terms[:, 0].mean(), S.ence_from_bin_sums(Sb[r], cnt),
                                   rtol=1e-12)
        np.testing.assert_allclose(terms[:, 1].mean(), S.zmse_from_bin_sums(Sb[r], cnt),
                                   rtol=1e-12)
        np.testing.assert_allclose(np.exp(terms[:, 2].mean()), S.zve_from_bin_sums(Sb[r], cnt),
                                   rtol=1e-12)
        # per bin: the same operations as per_bin_moments
        mv, mse, _, var_z, zms = S.per_bin_moments(Sb[r], cnt)
        np.testing.assert_allclose(terms[:, 0], np.abs(np.sqrt(mv) - np.sqrt(mse)) / np.sqrt(mv),
                                   rtol=1e-12)
        np.testing.assert_allclose(terms[:, 1], np.abs(np.log(zms)), rtol=1e-12)
        np.testing.assert_allclose(terms[:, 2], np.abs(np.log(var_z)), rtol=1e-12)
    # degenerate bins as the numpy functions: zero ZMS -> inf, one point -> NaN variance
    assert S.per_bin_terms(1.0, 0.0, 0.0, 0.0, 5)[1] == np.inf
    assert np.isnan(S.per_bin_terms(1.0, 1.0, 1.0, 1.0, 1)[2])
