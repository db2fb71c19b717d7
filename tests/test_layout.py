"""The layouts of the per-sample terms (:mod:`uqx.engine.layout`): declared once, read by name.

Every kernel sums the terms of :func:`sample_bin_features` and :func:`copy_terms`; these
tests pin the columns to the names and check that the numba and numpy forms of the one
declaration give the same bits, and that the copies' terms convert to the bin and moment
features of the errors E = uε.
"""

import numpy as np

from uqx.engine.copies import copy_bin_features, copy_moment_features
from uqx.engine.layout import (
    B_E2,
    B_EC,
    B_EC2,
    B_U2,
    B_Z,
    B_Z2,
    BIN_FEATURES,
    C_EPS,
    C_EPS2,
    C_X,
    C_X2,
    copy_terms,
    sample_bin_features,
)
from uqx.engine.statistic import (
    MOMENT_FEATURES,
    bin_feature_sums,
    bin_features,
    moment_sums,
)


def test_bin_feature_columns_are_the_order_of_their_names():
    assert [B_U2, B_E2, B_Z2, B_EC, B_EC2, B_Z] == [
        list(BIN_FEATURES).index(k) for k in ("u2", "E2", "z2", "Ec", "Ec2", "z")]
    assert [C_EPS2, C_X2, C_X, C_EPS] == [0, 1, 2, 3]


def test_numba_and_numpy_forms_of_the_features_are_bitwise_equal(rng):
    E = rng.standard_normal(50) * 3.0
    E[:3] = (-0.0, 0.0, 1e-300)
    u = rng.uniform(0.1, 2.0, 50)
    F = bin_features(E, u)
    m = E.mean()
    for i in range(E.size):  # the compiled scalar form, one sample at a time
        np.testing.assert_array_equal(np.array(sample_bin_features(E[i], u[i], m)), F[i])
        np.testing.assert_array_equal(np.array(copy_terms(E[i], u[i])),
                                      np.stack(copy_terms.py_func(E, u), -1)[i])


def test_copy_terms_convert_to_the_features_of_the_copy(rng):
    M, k = 60, 3
    u = np.sort(rng.uniform(0.2, 2.0, M))
    eps = rng.standard_normal((k, M))
    edges = np.array([0, 10, 25, 25, 60])
    T = np.stack(copy_terms.py_func(eps, u), -1)  # (k, M, 4)
    sums = np.stack([T[:, a:b].sum(axis=1) for a, b in zip(edges[:-1], edges[1:],
                                                            strict=True)], axis=1)
    u2 = np.array([np.sum(u[a:b] ** 2) for a, b in zip(edges[:-1], edges[1:], strict=True)])
    S = copy_bin_features(sums, u2, np.diff(edges), None, M)
    np.testing.assert_allclose(S, bin_feature_sums(u * eps, u, edges), rtol=1e-12,
                               atol=1e-12)
    S = copy_moment_features(T.sum(axis=1), np.sum(u * u), np.sum(np.log(u * u)))
    assert S.shape == (k, len(MOMENT_FEATURES))
    # z = E / u is ε up to rounding
    np.testing.assert_allclose(S, moment_sums(u * eps, u), rtol=1e-12, atol=1e-12)
