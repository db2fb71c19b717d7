"""What the package promises about its randomness, drawn by hypothesis.

* ``uqx.validate`` is a function of the set of rows: any row permutation, any chunking
  of lazy (dask) columns and any scheduler give the same estimates, intervals, p-values
  and verdicts, bit for bit (the content order, and streams keyed by content and
  coordinates, not by position in a chunk or by worker).
* ``uqx.bootstrap`` is bit-identical for any chunking, scheduler and number of workers;
  it draws rows by position (the papers' bootstrap), so a permutation keeps its
  estimates and changes only the resamples — ``uqx.validate`` puts the rows in content
  order first.
* The replicate block (``REPLICATE_BLOCK``, recorded as ``replicate_block``) is part of
  the key of each stream, so it is not drawn: a different block is a different stream.

Beside the slow twins, external oracles where they apply: ``scipy.stats.bootstrap``
(BCa) for the intervals in tests/test_bootstrap.py, ``scipy.stats.spearmanr`` for CC
below.
"""

import dask.array as da
import numpy as np
import pytest
import scipy.stats as sps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import uqx

M = 400
_RNG = np.random.default_rng(38)
U = _RNG.uniform(0.5, 2.0, M)
E = U * _RNG.standard_normal(M)
X = _RNG.uniform(0.0, 1.0, M)
STATS = ["zms", "rce", "mean_z", "cc", "zmse", "zms_scan_X"]
VALIDATE = dict(bootstrap=100, copies=60, conditional=False,
                decision=uqx.Decision(resolution=False))
COMPARED = ("estimate", "ci_low", "ci_high", "p_value", "verdict", "question_verdict")
PROPERTY = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


def _columns(perm, chunk):
    cols = [E[perm], U[perm], X[perm]]
    if chunk is not None:
        cols = [da.from_array(c, chunks=chunk) for c in cols]
    return cols


def _assert_same(got, ref, names):
    for v in names:
        a, b = got[v].values, ref[v].values
        if a.dtype.kind == "f":
            np.testing.assert_array_equal(a, b, err_msg=v)  # NaN == NaN here
        else:
            assert (a == b).all(), v


@pytest.fixture(scope="module")
def validated():
    return uqx.validate(uqx.from_arrays(E, U, X=X, name="s"), STATS,
                        compute=uqx.Compute(seed=11), **VALIDATE)


@PROPERTY
@given(perm_seed=st.integers(0, 2**32 - 1),
       chunk=st.sampled_from([None, 37, 128, 399]),
       scheduler=st.sampled_from(["synchronous", "threads"]))
def test_validate_is_a_function_of_the_set_of_rows(validated, perm_seed, chunk, scheduler):
    perm = np.random.default_rng(perm_seed).permutation(M)
    Ep, Up, Xp = _columns(perm, chunk)
    res = uqx.validate(uqx.from_arrays(Ep, Up, X=Xp, name="s"), STATS,
                       compute=uqx.Compute(seed=11, scheduler=scheduler), **VALIDATE)
    _assert_same(res, validated, COMPARED)


@pytest.fixture(scope="module")
def bootstrapped():
    return uqx.bootstrap(uqx.from_arrays(E, U, name="s"), ["zms", "rce", "ence"], n_boot=200,
                         seed=5, keep_replicates=True)


@PROPERTY
@given(chunk=st.sampled_from([None, 37, 128, 399]),
       scheduler=st.sampled_from(["synchronous", "threads"]),
       workers=st.sampled_from([1, 2]))
def test_bootstrap_does_not_depend_on_chunks_scheduler_or_workers(bootstrapped, chunk,
                                                                   scheduler, workers):
    Ec, Uc, _ = _columns(np.arange(M), chunk)
    got = uqx.bootstrap(uqx.from_arrays(Ec, Uc, name="s"), ["zms", "rce", "ence"],
                        n_boot=200, seed=5, keep_replicates=True, scheduler=scheduler,
                        num_workers=workers)
    _assert_same(got, bootstrapped, list(bootstrapped.data_vars))


@PROPERTY
@given(perm_seed=st.integers(0, 2**32 - 1))
def test_bootstrap_estimates_do_not_depend_on_the_row_order(bootstrapped, perm_seed):
    perm = np.random.default_rng(perm_seed).permutation(M)
    got = uqx.bootstrap(uqx.from_arrays(E[perm], U[perm], name="s"), ["zms", "rce", "ence"],
                        n_boot=200, seed=5)
    np.testing.assert_allclose(got["estimate"].values, bootstrapped["estimate"].values,
                               rtol=1e-12)


@PROPERTY
@given(seed=st.integers(0, 2**32 - 1), M_=st.integers(5, 300),
       ties=st.booleans())
def test_cc_is_spearmans_rho_of_abs_e_and_u(seed, M_, ties):
    """CC against the external oracle scipy.stats.spearmanr (average ranks for ties)."""
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M_)
    if ties:
        u = np.round(u, 1)
    e = u * rng.standard_normal(M_)
    got = float(uqx.compute(uqx.from_arrays(e, u, name="s"), ["cc"]).sel(stat="cc").item())
    ref = sps.spearmanr(np.abs(e), u).statistic
    if np.isnan(ref):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(ref, abs=1e-12)
