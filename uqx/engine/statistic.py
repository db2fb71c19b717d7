"""Every statistic defined once: its formula from per-sample or per-bin sums.

The same formula serves the point estimate, the bootstrap replicates, the leave-one-out
(jackknife) values (:mod:`uqx.engine.evaluator`), the simulated references
(:mod:`uqx.inference.reference`) and the bin-number sweeps (:mod:`uqx.inference.extrapolate.fit`).

Each statistic is one named public function whose docstring gives its formula, paper
equation and conventions: ``<name>_from_sums(S, n)`` of the moment-feature sums (e.g.
:func:`zms_from_sums`) or ``<name>_from_bin_sums(S, n)`` of the per-bin sums (e.g.
:func:`ence_from_bin_sums`, :func:`zmse_max_from_bin_sums`). Everything else uqx knows
of a statistic is declared beside that function, once, in its :class:`Statistic` of
:data:`STATISTICS` (compare flox's ``Aggregation``): the sums it reads (named columns of
:data:`MOMENT_FEATURES` or :data:`BIN_FEATURES`), the function that finishes them, its
long name and reference, and how its verdict's test reads it (side, the
statistic tested, its resolution). Adding a statistic is one entry there: every route
below reads the registry.

Every statistic of the papers belongs to one of three families, each with a fast exact
route for the three evaluations (methods: bootstrap):

``moment``
    functions of sample means of per-sample features (ZMS, RCE, MV, MSE, Var(Z), NLL...).
    Replicates are feature sums over the resample; the jackknife is analytic,
    ``(S - F_i)/(M-1)``, O(M).
``binned``
    functions of per-bin sums over index intervals of the data sorted by a conditioning
    variable (ENCE, UCE, ZMSE, ZVE, per-bin LZISD). A replicate is re-sorted by the
    binning variable and cut with the same intervals: with counts over the sorted
    positions the per-bin sums come from one O(M + N) pass (numba). Leave-one-out sums use
    the prefix-sum index shift of methods: bootstrap (O(M·N)) with R's ``intrvJack`` intervals.
``rank``
    Spearman CC of (|E|, u): average ranks of a resample follow from the counts per tie
    group; the jackknife re-ranks by the ±1, ±½ shift rule (O(M²) in parallel numba).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np

from uqx.engine import reference_numpy
from uqx.engine.defaults import N_BINS, POP_MIN
from uqx.engine.layout import (
    B_E2,
    B_EC,
    B_EC2,
    B_U2,
    B_Z,
    B_Z2,
    BIN_FEATURES,
    add_bin_features,
    no_bin_features,
    put_bin_features,
    sample_bin_features,
)
from uqx.errors import InputError

#: ln(2π) of the normal log-likelihood
LN_2PI = float(np.log(2.0 * np.pi))

__all__ = [
    "Statistic",
    "STATISTICS",
    "KINDS",
    "names_of",
    "MOMENT_FEATURES",
    "BIN_FEATURES",
    "sample_bin_features",
    "StatSpec",
    "parse_stat",
    "BinningConfig",
    "moment_sums",
    "moment_statistic",
    "bin_features",
    "prefix_bin_features",
    "bin_feature_sums",
    "mv_from_sums",
    "mse_from_sums",
    "rmv_from_sums",
    "rmse_from_sums",
    "rce_from_sums",
    "mean_z_from_sums",
    "t_z_from_sums",
    "var_z_from_sums",
    "zms_from_sums",
    "nll_from_sums",
    "nll_ref_from_sums",
    "per_bin_moments",
    "scale_free_bin_sums",
    "ence_from_bin_sums",
    "ence_sd_from_bin_sums",
    "uce_from_bin_sums",
    "uce_w_from_bin_sums",
    "zmse_from_bin_sums",
    "zmse_max_from_bin_sums",
    "zms_scan_from_bin_sums",
    "SCAN_MIN_FRACTION",
    "zve_from_bin_sums",
    "lzisd_from_bin_sums",
    "lzms_from_bin_sums",
    "per_bin_terms",
]

# ---------------------------------------------------------------- moment statistics
#: The per-sample moment features, named in the column order of :func:`moment_features`
#: and :func:`moment_sums`, each with the inputs it reads (``E`` errors, ``u``
#: uncertainties): the names a moment statistic's :attr:`Statistic.sums` lists.
MOMENT_FEATURES = {"z2": "Eu", "u2": "u", "E2": "E", "z": "Eu", "lnu2": "u"}
#: Columns of the moment features (the order of :data:`MOMENT_FEATURES`).
F_Z2, F_U2, F_E2, F_Z, F_LNU2 = range(5)


def moment_features(E, u, ncol=5):
    """Return the per-sample moment features, the first ``ncol`` of (z², u², E², z, ln u²).

    Three columns suffice for ZMS, RCE, MV, MSE: fewer bytes per draw in the kernels.
    """
    F = np.empty((E.size, ncol))  # written in place: no (M,) temporaries
    z = np.divide(E, u)
    np.multiply(z, z, out=F[:, F_Z2])
    np.multiply(u, u, out=F[:, F_U2])
    np.multiply(E, E, out=F[:, F_E2])
    if ncol == 5:
        F[:, F_Z] = z
        np.log(F[:, F_U2], out=F[:, F_LNU2])
    return F


# The moment statistics from the sums S (..., 5) of the features (z², u², E², z, ln u²)
# over n pairs: the one definition behind the point estimate, the bootstrap replicates,
# the jackknife values and the simulated references (their finish in STATISTICS below).


def mv_from_sums(S, n):
    r"""Mean variance MV from the moment sums (001 Sect. II A, text of Eq. 7).

    .. math:: \mathrm{MV} = \langle u^2 \rangle = \frac{1}{n}\sum_i u_i^2

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``. No reference value: MV does not involve the errors.

    See Also
    --------
    rmv_from_sums, rce_from_sums
    """
    return S[..., F_U2] / n


def mse_from_sums(S, n):
    r"""Mean squared error MSE from the moment sums (uncentred; 001 Sect. II A).

    .. math:: \mathrm{MSE} = \langle E^2 \rangle = \frac{1}{n}\sum_i E_i^2

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    rmse_from_sums, rce_from_sums
    """
    return S[..., F_E2] / n


def rmv_from_sums(S, n):
    r"""Root mean variance RMV from the moment sums (001, text of Eq. 7).

    .. math:: \mathrm{RMV} = \sqrt{\langle u^2 \rangle}

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    mv_from_sums, rce_from_sums
    """
    return np.sqrt(S[..., F_U2] / n)


def rmse_from_sums(S, n):
    r"""Root mean squared error RMSE from the moment sums (001, text of Eq. 7).

    .. math:: \mathrm{RMSE} = \sqrt{\langle E^2 \rangle}

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    mse_from_sums, rce_from_sums
    """
    return np.sqrt(S[..., F_E2] / n)


def rce_from_sums(S, n):
    r"""Relative calibration error RCE from the moment sums (000 Eq. 10; 001 Eq. 7).

    .. math:: \mathrm{RCE} = \frac{\mathrm{RMV} - \mathrm{RMSE}}{\mathrm{RMV}},
              \qquad \mathrm{RMV} = \sqrt{\langle u^2\rangle},\;
              \mathrm{RMSE} = \sqrt{\langle E^2\rangle}

    Reference value 0 for calibrated uncertainties. Heavy tails of u² or E² make its
    bootstrap interval unreliable (001 Table II).

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    zms_from_sums : the same property (calibration on average) from z-scores.
    ence_from_bin_sums : the mean of the per-bin :math:`|\mathrm{RCE}_j|`.
    """
    rmv = np.sqrt(S[..., F_U2] / n)
    return (rmv - np.sqrt(S[..., F_E2] / n)) / rmv


def mean_z_from_sums(S, n):
    r"""Mean z-score from the moment sums (000 Table III).

    .. math:: \langle Z \rangle = \frac{1}{n}\sum_i \frac{E_i}{u_i}

    Reference value 0 for unbiased errors.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    var_z_from_sums, zms_from_sums
    """
    return S[..., F_Z] / n


def t_z_from_sums(S, n):
    r"""Studentised mean z-score: the one-sample t statistic of the z-scores (uqx).

    .. math:: t_Z = \frac{\langle Z \rangle}{\sqrt{\mathrm{Var}(Z)/n}}

    with Var(Z) of :func:`var_z_from_sums` (denominator n − 1). The test of ⟨Z⟩ reads it
    (the ``test_statistic`` of ``mean_z`` in :data:`STATISTICS`): its null, "no bias
    whatever the scale of uE", is that of a statistic that does not change when uE is off
    by a factor, so the calibrated copies of uE (unit variance) are copies of it for any
    scale (a scale error is not read as a bias). Reference value 0.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``; NaN where Var(Z) is 0 within the rounding of its one-pass
        form (64 ulps of ΣZ²/(n − 1)).

    See Also
    --------
    mean_z_from_sums, var_z_from_sums
    """
    var = (S[..., F_Z2] - S[..., F_Z] ** 2 / n) / (n - 1)
    # Var(Z) within the rounding of its one-pass form is no spread: no t statistic
    floor = 64 * np.finfo(np.float64).eps * S[..., F_Z2] / (n - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > floor, (S[..., F_Z] / n) / np.sqrt(var / n), np.nan)


def var_z_from_sums(S, n):
    r"""Sample variance of the z-scores from the moment sums (000 Eq. 13; 001 Eq. 10).

    .. math:: \mathrm{Var}(Z) = \frac{\sum_i Z_i^2 - \left(\sum_i Z_i\right)^2/n}{n - 1}

    Denominator :math:`n-1` (R's ``var``). Reference value 1 for calibrated, unbiased
    errors (003 Eq. 3). The one-pass form is accurate for z-scores (mean near 0).

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    zms_from_sums : the form that also covers biased errors.
    """
    return (S[..., F_Z2] - S[..., F_Z] ** 2 / n) / (n - 1)


def zms_from_sums(S, n):
    r"""Mean squared z-score ZMS from the moment sums (000 Eq. 14; 001 Eq. 11).

    .. math:: \mathrm{ZMS} = \langle Z^2 \rangle = \frac{1}{n}\sum_i
              \left(\frac{E_i}{u_i}\right)^2

    Reference value 1 for calibrated uncertainties (biased errors included).

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    rce_from_sums : the same property from u² and E².
    zmse_from_bin_sums : its conditional (per-bin) counterpart.
    """
    return S[..., F_Z2] / n


def nll_from_sums(S, n):
    r"""Mean negative log-likelihood of a normal model from the moment sums (000 Eq. 15).

    .. math:: \mathrm{NLL} = \tfrac12\left(\langle Z^2\rangle + \langle \ln u^2\rangle
              + \ln 2\pi\right)

    (001 Eq. 12). :math:`\ln 2\pi` is exact (:data:`LN_2PI`; ErrViewLib's ``nllFun``
    uses 1.837877). Its reference is :func:`nll_ref_from_sums`.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    nll_ref_from_sums, zms_from_sums
    """
    return 0.5 * (S[..., F_Z2] / n + S[..., F_LNU2] / n + LN_2PI)


def nll_ref_from_sums(S, n):
    r"""Return the reference NLL of calibrated normal errors from the sums (000 Eq. 16).

    .. math:: \mathrm{NLL}_{ref} = \tfrac12\left(1 + \langle \ln u^2\rangle
              + \ln 2\pi\right)

    The NLL with :math:`\langle Z^2\rangle = 1`; it does not involve the errors.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., 5)
        Sums of the moment features (z², u², E², z, ln u²) over the n pairs
        (:func:`moment_sums`).
    n : float or numpy.ndarray
        Number of pairs, broadcast against ``S[..., 0]``.

    Returns
    -------
    numpy.ndarray
        Shape ``S.shape[:-1]``.

    See Also
    --------
    nll_from_sums
    """
    return 0.5 * (1.0 + S[..., F_LNU2] / n + LN_2PI)


# ---------------------------------------------------------------- binned statistics
def bin_features(E, u):
    """Per-sample bin features (u², E², z², E − Ē, (E − Ē)², z) over the last axis.

    ``E`` (..., M), ``u`` (M,) or (..., M) -> (..., M, 6). Centring E on its (row) mean
    keeps the one-pass per-bin variance accurate. ``STATISTICS[name].finish(S, n)`` turns
    per-bin sums of these features into a binned statistic. The features are those of
    :func:`sample_bin_features`, computed by the same code on arrays.
    """
    E = np.asarray(E, dtype=np.float64)
    u = np.broadcast_to(np.asarray(u, dtype=np.float64), E.shape)
    return np.stack(sample_bin_features.py_func(E, u, E.mean(axis=-1, keepdims=True)),
                    axis=-1)


def scale_free_bin_sums(S, n):
    r"""Per-bin sums of the bin features of :math:`E/\sqrt{\mathrm{ZMS}}` (uE kept).

    Rescaling uE by its factor :math:`f = \sqrt{\mathrm{ZMS}}` (the whole set's, the bins
    of ``S`` covering it) is dividing every error by f: the sums of E², z², (E − Ē)² by
    f², those of E − Ē and z by f. A binned statistic of the result is the statistic of
    uE "up to a factor": its value does not change when uE is off by one factor, and its
    calibrated copies, each rescaled by its own factor, are copies of it for any scale.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of :func:`bin_features` over N bins that cover the set.
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape (..., N, 6)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> E, u = rng.standard_normal(100) * 2.0, np.ones(100)
    >>> edges = np.array([0, 50, 100])
    >>> S = bin_feature_sums(E, u, edges)  # (1, 2, 6)
    >>> float(np.round(scale_free_bin_sums(S, np.diff(edges))[..., 2].sum(), 9))
    100.0
    """
    S = np.asarray(S, dtype=np.float64)
    f2 = (S[..., B_Z2].sum(axis=-1) / np.sum(n))[..., None]
    out = S.copy()
    with np.errstate(invalid="ignore", divide="ignore"):
        for k in (B_E2, B_Z2, B_EC2):
            out[..., k] = S[..., k] / f2
        for k in (B_EC, B_Z):
            out[..., k] = S[..., k] / np.sqrt(f2)
    return out


def per_bin_moments(S, n):
    r"""Per-bin MV, MSE, Var(E), Var(Z) and ZMS from the per-bin sums of the bin features.

    .. math:: \mathrm{MV}_j = \frac{\sum_{B_j} u^2}{n_j},\quad
              \mathrm{MSE}_j = \frac{\sum_{B_j} E^2}{n_j},\quad
              \mathrm{ZMS}_j = \frac{\sum_{B_j} Z^2}{n_j},\quad
              \mathrm{Var}(X)_j = \max\left(0, \frac{\sum_{B_j} X^2 - (\sum_{B_j} X)^2/n_j}
              {n_j - 1}\right)

    for X = E (centred on the mean of the data set, :func:`bin_features`) and X = Z;
    variances with denominator :math:`n_j - 1`, clipped at 0 against rounding. Empty or
    one-point bins give NaN or ±inf, without warnings.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (u², E², z², E − Ē, (E − Ē)², z) over N bins
        (:func:`bin_feature_sums`, :func:`prefix_bin_features`).
    n : numpy.ndarray, shape (N,) or broadcastable to ``S[..., 0]``
        Bin counts.

    Returns
    -------
    mv, mse, var_e, var_z, zms : numpy.ndarray, shape (..., N)
    """
    return (_bin_mean(S, n, B_U2), _bin_mean(S, n, B_E2), _bin_var(S, n, B_EC2, B_EC),
            _bin_var(S, n, B_Z2, B_Z), _bin_mean(S, n, B_Z2))


def _bin_mean(S, n, k):
    """One moment of :func:`per_bin_moments`: feature ``k``'s sum over the bin count."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return S[..., k] / n


def _bin_var(S, n, k2, k1):
    """One variance of :func:`per_bin_moments` (denominator n − 1, clipped at 0)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.maximum((S[..., k2] - S[..., k1] ** 2 / n) / (n - 1), 0.0)


def ence_from_bin_sums(S, n):
    r"""Compute the ENCE, RMSE convention, from per-bin sums (000 Eq. 11; 001 Eq. 8).

    Expected normalised calibration error:

    .. math:: \mathrm{ENCE} = \frac{1}{N}\sum_{j=1}^N
              \frac{|\mathrm{RMV}_j - \mathrm{RMSE}_j|}{\mathrm{RMV}_j}
              = \frac{1}{N}\sum_{j=1}^N |\mathrm{RCE}_j|

    with :math:`\mathrm{RMV}_j = \sqrt{\langle u^2\rangle_j}` and
    :math:`\mathrm{RMSE}_j = \sqrt{\langle E^2\rangle_j}` (uncentred) over bin
    :math:`B_j`: the convention of papers 000, 001 and 004 and of ErrViewLib ``eceFun``.
    No predefined reference: about :math:`a\sqrt{N/M}` for calibrated data (000 App. B).
    The fused kernels of the bin-number sweeps use the scalar twin
    :func:`per_bin_terms`.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    ence_sd_from_bin_sums : the SD convention (002, reliability diagrams).
    rce_from_sums : the RCE of a whole set.
    """
    mv, mse = _bin_mean(S, n, B_U2), _bin_mean(S, n, B_E2)  # per_bin_moments' MV, MSE
    rmv = np.sqrt(mv)
    return np.mean(np.abs(rmv - np.sqrt(mse)) / rmv, axis=-1)


def ence_sd_from_bin_sums(S, n):
    r"""Compute the ENCE, SD convention, from per-bin sums (002 Eq. 6 as computed).

    Expected normalised calibration error:

    .. math:: \mathrm{ENCE}_{SD} = \frac{1}{N}\sum_{j=1}^N
              \frac{|\mathrm{SD}_j - \mathrm{RMV}_j|}{\mathrm{RMV}_j},
              \qquad \mathrm{SD}_j = \mathrm{sd}(E \in B_j)\ (n_j - 1)

    The convention of ErrViewLib ``plotRelDiag``, hence of paper 002's tables and of
    the primer's (003) reliability diagrams; 002 Eq. 6 writes
    :math:`\mathrm{MSE}_j^{1/2}` but its Table I is reproduced only with the centred SD.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    ence_from_bin_sums : the RMSE convention.
    """
    mv, var_e = _bin_mean(S, n, B_U2), _bin_var(S, n, B_EC2, B_EC)
    rmv = np.sqrt(mv)
    return np.mean(np.abs(rmv - np.sqrt(var_e)) / rmv, axis=-1)


def uce_from_bin_sums(S, n):
    r"""Uncertainty calibration error from per-bin sums (ErrViewLib ``eceFun``).

    .. math:: \mathrm{UCE} = \frac{1}{N}\sum_{j=1}^N |\mathrm{MV}_j - \mathrm{MSE}_j|

    Not used in the papers' figures; in the units of :math:`u^2`. The unweighted mean
    over the bins (ErrViewLib's convention); :func:`uce_w_from_bin_sums` (``uce_w``)
    weighs each bin by its share of the points, as Laves et al. and ``netcal`` do.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    ence_from_bin_sums
    """
    mv, mse = _bin_mean(S, n, B_U2), _bin_mean(S, n, B_E2)  # per_bin_moments' MV, MSE
    return np.mean(np.abs(mv - mse), axis=-1)


def uce_w_from_bin_sums(S, n):
    r"""Uncertainty calibration error weighted by the bin counts (Laves et al. 2020, netcal).

    .. math:: \mathrm{UCE}_w = \sum_{j=1}^N \frac{n_j}{M}\,|\mathrm{MV}_j - \mathrm{MSE}_j|,
              \qquad M = \sum_j n_j

    The convention of Laves et al. (2020, "Well-calibrated regression uncertainty in
    medical imaging with deep learning") and of the ``netcal`` package: each bin weighs
    its share of the points, where :func:`uce_from_bin_sums` (ErrViewLib) takes the
    unweighted mean over the bins; the two agree on equal-count bins of equal size. In
    the units of :math:`u^2`.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    uce_from_bin_sums
    """
    n = np.asarray(n, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):  # n_j |MV_j - MSE_j| = |sums|
        return np.sum(np.abs(S[..., B_U2] - S[..., B_E2]), axis=-1) / np.sum(n, axis=-1)


def zmse_from_bin_sums(S, n):
    r"""Mean absolute log of the per-bin ZMS, ZMSE (000 Eq. 17).

    .. math:: \mathrm{ZMSE} = \frac{1}{N}\sum_{j=1}^N |\ln \mathrm{ZMS}_j|,
              \qquad \mathrm{ZMS}_j = \langle Z^2\rangle_{B_j}

    The logarithm makes a ZMS of 2 and one of 1/2 equal deviations. No predefined
    reference: about :math:`a\sqrt{N/M}` for calibrated data (000 App. B). A bin with
    :math:`\mathrm{ZMS}_j = 0` gives +inf. The fused kernels of the bin-number sweeps use
    the scalar twin :func:`per_bin_terms`.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    zmse_max_from_bin_sums : the largest term instead of the mean.
    zms_from_sums : the ZMS of a whole set.
    """
    zms_j = _bin_mean(S, n, B_Z2)  # per_bin_moments' ZMS
    with np.errstate(divide="ignore"):
        return np.mean(np.abs(np.log(zms_j)), axis=-1)


def zmse_max_from_bin_sums(S, n):
    r"""Largest absolute log of the per-bin ZMS (uqx's addition, beyond the papers).

    .. math:: \mathrm{ZMSE}_{max} = \max_{j=1..N} |\ln \mathrm{ZMS}_j|

    The bin averages of ENCE and ZMSE dilute a miscalibration confined to a few bins;
    the maximum does not, which makes it a route of the consistency headline for that
    alternative. No predefined reference (it grows slowly with N); judged against
    simulated references like the others. A NaN bin gives NaN.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    zmse_from_bin_sums : the mean over the bins (000 Eq. 17).
    """
    zms_j = _bin_mean(S, n, B_Z2)  # per_bin_moments' ZMS
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.max(np.abs(np.log(zms_j)), axis=-1)


#: Smallest tail of :func:`zms_scan_from_bin_sums`, as a fraction of the points: a tail of
#: one or two bins at the end of the uE order is read on few points whose ZMS swings with
#: the errors' tails; a tenth of the set still holds the top decile of the alternative
#: of consistency (chosen on the tuning draws, seed 31).
SCAN_MIN_FRACTION = 0.1


def zms_scan_from_bin_sums(S, n):
    r"""Largest standardised log-ZMS over the tails of the uE order (uqx, beyond the papers).

    With the bins in increasing uE, the upper tails :math:`T_k = B_k \cup \dots \cup B_N`
    (k = 1..N, :math:`T_1` the whole set) and the lower tails
    :math:`L_k = B_1 \cup \dots \cup B_k` (k = 1..N-1), those holding at least
    :data:`SCAN_MIN_FRACTION` of the points:

    .. math:: \mathrm{ZMS}_{scan} = \max_{A \in \{T_k\} \cup \{L_k\}}
              \sqrt{n_A}\,\lvert\ln \mathrm{ZMS}_A\rvert,\qquad
              \mathrm{ZMS}_A = \frac{\sum_A Z^2}{n_A}

    A scan statistic: a miscalibration of the largest (or smallest) uE, whatever the
    fraction of the set it covers, is read on the tail that holds it, at the precision
    of that tail's :math:`\sqrt{n_A}`, instead of being averaged with the bins it spares
    (ENCE, ZMSE) or read on one bin only (:func:`zmse_max_from_bin_sums`). The factor
    :math:`\sqrt{n_A}` puts the tails on a common scale for normal errors (sd of
    :math:`\ln\mathrm{ZMS}_A` about :math:`\sqrt{2/n_A}`); no predefined reference:
    judged against simulated references like every binned statistic. A NaN bin gives NaN.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`), bins in the uE order.
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    zmse_max_from_bin_sums : the largest single-bin deviation.
    zms_from_sums : the ZMS of the whole set (the tail :math:`T_1`).
    """
    z2 = np.asarray(S[..., B_Z2], dtype=np.float64)
    n = np.broadcast_to(np.asarray(n, dtype=np.float64), z2.shape)
    up_z2 = np.cumsum(z2[..., ::-1], axis=-1)  # T_N, T_{N-1}, ..., T_1
    up_n = np.cumsum(n[..., ::-1], axis=-1)
    lo_z2 = np.cumsum(z2, axis=-1)[..., :-1]  # L_1 .. L_{N-1}
    lo_n = np.cumsum(n, axis=-1)[..., :-1]
    tz2 = np.concatenate([up_z2, lo_z2], axis=-1)
    tn = np.concatenate([up_n, lo_n], axis=-1)
    # tails of at least SCAN_MIN_FRACTION of the points (always the whole set, T_1)
    keep = tn >= SCAN_MIN_FRACTION * up_n[..., -1:]
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.sqrt(tn) * np.abs(np.log(tz2 / tn))
        return np.max(np.where(keep, term, -np.inf), axis=-1)


def zve_from_bin_sums(S, n):
    r"""Z-variance error ZVE (002 Eq. 9; ErrViewLib ``plotLZV(score=TRUE)``).

    .. math:: \mathrm{ZVE} = \exp\left(\frac{1}{N}\sum_{j=1}^N |\ln v_j|\right),
              \qquad v_j = \mathrm{Var}(Z \in B_j)\ (n_j - 1)

    Reference value 1 (not 0) for calibrated data in the limit of many points per bin;
    about :math:`1 + a\sqrt{N/M}` otherwise (002). The fused kernels of the bin-number
    sweeps use the scalar twin :func:`per_bin_terms`.

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-2]``

    See Also
    --------
    lzisd_from_bin_sums : the per-bin :math:`v_j^{-1/2}`.
    var_z_from_sums : the variance of a whole set.
    """
    var_z = _bin_var(S, n, B_Z2, B_Z)  # per_bin_moments' Var(Z)
    with np.errstate(divide="ignore"):
        return np.exp(np.mean(np.abs(np.log(var_z)), axis=-1))


def lzisd_from_bin_sums(S, n):
    r"""Local z inverse standard deviation per bin, LZISD (003 Sect. III; ErrViewLib).

    .. math:: \mathrm{LZISD}_j = \mathrm{Var}(Z \in B_j)^{-1/2}\ (n_j - 1)

    Target 1 in every bin (003 Eq. 6: :math:`\mathrm{Var}(Z|u_E) = 1`, consistency; an
    input feature for adaptivity, 003 Eq. 4). A vector statistic (one value per bin).

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-1]`` (..., N)

    See Also
    --------
    zve_from_bin_sums, lzms_from_bin_sums
    """
    var_z = _bin_var(S, n, B_Z2, B_Z)  # per_bin_moments' Var(Z)
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(var_z)


def lzms_from_bin_sums(S, n):
    r"""Local ZMS per bin, LZMS (001 Sect. II B; ErrViewLib ``plotLZMS``).

    .. math:: \mathrm{ZMS}_j = \langle Z^2 \rangle_{B_j}

    Target 1 in every bin. A vector statistic (one value per bin).

    Parameters
    ----------
    S : numpy.ndarray, shape (..., N, 6)
        Per-bin sums of the bin features (:func:`per_bin_moments`).
    n : numpy.ndarray, shape (N,)
        Bin counts.

    Returns
    -------
    numpy.ndarray, shape ``S.shape[:-1]`` (..., N)

    See Also
    --------
    zmse_from_bin_sums, lzisd_from_bin_sums
    """
    return _bin_mean(S, n, B_Z2)  # per_bin_moments' ZMS


@numba.njit(nogil=True, cache=True, error_model="numpy")
def per_bin_terms(su2, se2, sz2, sz, n):  # pragma: no cover - numba
    r"""One bin's terms of ENCE, ZMSE and ZVE from its sums (scalar numba kernel).

    .. math:: \frac{|\sqrt{\mathrm{MV}_j} - \sqrt{\mathrm{MSE}_j}|}{\sqrt{\mathrm{MV}_j}},
              \quad |\ln \mathrm{ZMS}_j|, \quad |\ln \mathrm{Var}(Z)_j|

    The scalar twin of :func:`ence_from_bin_sums`, :func:`zmse_from_bin_sums` and
    :func:`zve_from_bin_sums` (same operations in the same order per bin; their means
    over the bins, and the ``exp`` of ZVE, are left to the caller), for the fused
    numba loops of the bin-number sweeps (:func:`uqx.inference.extrapolate.binsweep.sweep_three`,
    :func:`uqx.inference.extrapolate.null.sweep_copies`). Agreement with the numpy
    functions is tested to 1e-12 relative on random data.

    Parameters
    ----------
    su2, se2, sz2, sz : float
        Sums over the bin of u², E², z² and z.
    n : int or float
        Bin count.

    Returns
    -------
    ence_term, zmse_term, zve_term : float
    """
    mv = su2 / n
    mse = se2 / n
    var_z = max((sz2 - sz * sz / n) / (n - 1), 0.0)
    rmv = np.sqrt(mv)
    return abs(rmv - np.sqrt(mse)) / rmv, abs(np.log(sz2 / n)), abs(np.log(var_z))


# ---------------------------------------------------------------- the declarations
KINDS = ("moment", "binned", "rank")


@dataclass(frozen=True, kw_only=True)
class Statistic:
    r"""The blueprint of one statistic: what it reads, how it is finished, how it is tested.

    One entry of :data:`STATISTICS` per statistic; every route (estimate, bootstrap,
    jackknife, simulated references, verdicts, resolutions) reads it from there, so
    adding a statistic is one declaration (``tests/test_statistic.py`` declares one).

    Attributes
    ----------
    name : str
        Its name in results. Binned statistics are binned on uE; ``name_X``,
        ``name_V`` bin them on X or V (:func:`parse_stat`).
    kind : {"moment", "binned", "rank"}
        Its family, which sets its fast routes (module docstring).
    long_name : str
        The text of ``stat_long_name`` in results.
    sums : tuple of str
        The sums ``finish`` reads: names of :data:`MOMENT_FEATURES` (moment) or of
        :data:`BIN_FEATURES` (binned), checked when declared; ``tests/test_statistic.py``
        checks that ``finish`` reads no other column. Empty for a rank statistic (its
        own kernels, :mod:`uqx.engine.ranks`).
    finish : callable or None
        ``finish(S, n)``: the statistic from the sums S (..., 5) of the moment features
        over n pairs, or from the per-bin sums S (..., N, 6) and the bin counts n (N,).
        None for a rank statistic.
    vector : bool
        One value per bin (a binned statistic).
    reference : float, str or None
        Its predefined reference value, or the name of the statistic that gives it
        (``nll_ref``); None: simulated.
    test_statistic : str or None
        The statistic a verdict's test reads where it is not this one: ⟨Z⟩ is tested
        through its studentised form ``t_z``, whose null is "no bias" whatever the
        scale of uE.
    direction : {1, -1, 0}
        Side of miscalibration (:func:`uqx.engine.mctest.mc_pvalue`): +1 too large,
        −1 too small, 0 both sides.
    resolution : {"scale", "bias", "top", ""}
        What the factor of its resolution means (:mod:`uqx.engine.resolution`): uE
        off by a factor, a bias in units of uE, uE too small by the factor in the bins
        above the :data:`~uqx.engine.resolution.TOP_QUANTILE` quantile of the binning
        variable only; ``""``: no resolution.
    scale_map : callable or None
        ``scale_map(t, f)``: its value on miscalibrated data as a function of its value
        ``t`` on calibrated data and the factor ``f`` (resolution ``scale`` or
        ``bias``), monotone in ``f``.
    quasi_convex : bool
        Its value on a copy is quasi-convex in the factor of the local alternative
        (resolution ``top``; :func:`uqx.engine.resolution.first_hit`): a mean, maximum
        or exponential of terms like :math:`|f\,a_j - 1|`, :math:`|\ln(f^2 z_j)|` or
        :math:`|\ln \mathrm{ZMS}_A(f)|` with :math:`\mathrm{ZMS}_A(f)` non-decreasing
        in f: a copy is rejected on an interval next to 1 and on a half-line, never in
        between. ENCE_SD centres E on the copy's mean, which moves with f: it is not.
    """

    name: str
    kind: str
    long_name: str
    sums: tuple[str, ...] = ()
    finish: Callable | None = None
    vector: bool = False
    reference: float | str | None = None
    test_statistic: str | None = None
    direction: int = 0
    resolution: str = ""
    scale_map: Callable | None = None
    quasi_convex: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind {self.kind!r} is not one of {KINDS}")
        if not self.long_name:
            raise ValueError(f"{self.name}: no long_name")
        if (self.finish is None) != (self.kind == "rank"):
            raise ValueError(f"{self.name}: a {self.kind} statistic "
                             + ("has no finish" if self.kind == "rank" else "needs a finish"))
        unknown = [c for c in self.sums if c not in self.features]
        if unknown or (self.kind != "rank" and not self.sums):
            raise ValueError(f"{self.name}: sums {self.sums!r} are not named among "
                             f"{tuple(self.features)}")

    @property
    def features(self) -> dict:
        """The features its sums are named from (none for a rank statistic)."""
        return {"moment": MOMENT_FEATURES, "binned": BIN_FEATURES}.get(self.kind, {})

    @property
    def columns(self) -> tuple[int, ...]:
        """Columns of its sums in the sum arrays ``S`` that ``finish`` reads."""
        names = list(self.features)
        return tuple(names.index(c) for c in self.sums)

    @property
    def reads(self) -> frozenset:
        """The inputs it reads: ``"E"`` (errors) and ``"u"`` (uncertainties)."""
        if self.kind == "rank":  # the ranks of |E| and of u
            return frozenset("Eu")
        return frozenset("".join(self.features[c] for c in self.sums))

    @property
    def tested(self) -> bool:
        """False for a statistic of the uncertainties only: nothing to validate."""
        return "E" in self.reads


def _scale(t, f):
    return f * f * t


#: Every statistic, declared once (:class:`Statistic`), in the order of the tables.
STATISTICS: dict[str, Statistic] = {s.name: s for s in (
    Statistic(name="zms", kind="moment", sums=("z2",), finish=zms_from_sums,
              long_name="mean squared z-score <Z^2>", reference=1.0,
              resolution="scale", scale_map=_scale),
    Statistic(name="rce", kind="moment", sums=("u2", "E2"), finish=rce_from_sums,
              long_name="relative calibration error (RMV-RMSE)/RMV", reference=0.0,
              resolution="scale", scale_map=lambda t, f: 1.0 - f * (1.0 - t)),
    Statistic(name="mv", kind="moment", sums=("u2",), finish=mv_from_sums,
              long_name="mean variance <u^2>"),
    Statistic(name="mse", kind="moment", sums=("E2",), finish=mse_from_sums,
              long_name="mean squared error <E^2>"),
    Statistic(name="rmv", kind="moment", sums=("u2",), finish=rmv_from_sums,
              long_name="root mean variance"),
    Statistic(name="rmse", kind="moment", sums=("E2",), finish=rmse_from_sums,
              long_name="root mean squared error"),
    Statistic(name="mean_z", kind="moment", sums=("z",), finish=mean_z_from_sums,
              long_name="mean z-score", reference=0.0, test_statistic="t_z",
              resolution="bias", scale_map=lambda t, b: t + b),
    Statistic(name="t_z", kind="moment", sums=("z2", "z"), finish=t_z_from_sums,
              long_name="studentised mean z-score <Z>/sqrt(Var(Z)/n)", reference=0.0),
    Statistic(name="var_z", kind="moment", sums=("z2", "z"), finish=var_z_from_sums,
              long_name="variance of z-scores (n-1)", reference=1.0,
              resolution="scale", scale_map=_scale),
    Statistic(name="nll", kind="moment", sums=("z2", "lnu2"), finish=nll_from_sums,
              long_name="mean negative log-likelihood (normal)", reference="nll_ref"),
    Statistic(name="nll_ref", kind="moment", sums=("lnu2",), finish=nll_ref_from_sums,
              long_name="reference NLL for calibrated normal errors"),
    Statistic(name="cc", kind="rank", long_name="Spearman rank correlation of |E| and uE",
              direction=-1),
    Statistic(name="ence", kind="binned", sums=("u2", "E2"), finish=ence_from_bin_sums,
              long_name="expected normalised calibration error (RMSE per bin)",
              direction=1, resolution="top", quasi_convex=True),
    Statistic(name="ence_sd", kind="binned", sums=("u2", "Ec", "Ec2"),
              finish=ence_sd_from_bin_sums,
              long_name="expected normalised calibration error (sd(E) per bin)",
              direction=1, resolution="top"),
    Statistic(name="uce", kind="binned", sums=("u2", "E2"), finish=uce_from_bin_sums,
              long_name="uncertainty calibration error",
              direction=1, resolution="top", quasi_convex=True),
    Statistic(name="uce_w", kind="binned", sums=("u2", "E2"), finish=uce_w_from_bin_sums,
              long_name="uncertainty calibration error, bins weighted by their counts",
              direction=1, resolution="top", quasi_convex=True),
    Statistic(name="zmse", kind="binned", sums=("z2",), finish=zmse_from_bin_sums,
              long_name="mean |ln ZMS| over bins",
              direction=1, resolution="top", quasi_convex=True),
    Statistic(name="zmse_max", kind="binned", sums=("z2",), finish=zmse_max_from_bin_sums,
              long_name="largest |ln ZMS| over bins",
              direction=1, resolution="top", quasi_convex=True),
    Statistic(name="zms_scan", kind="binned", sums=("z2",), finish=zms_scan_from_bin_sums,
              long_name="largest sqrt(n)|ln ZMS| over the tails of the bin order",
              direction=1, resolution="top", quasi_convex=True),
    Statistic(name="zve", kind="binned", sums=("z2", "z"), finish=zve_from_bin_sums,
              long_name="z-variance error exp(mean |ln Var(Z)|)",
              direction=1, resolution="top", quasi_convex=True),
    Statistic(name="lzisd", kind="binned", sums=("z2", "z"), finish=lzisd_from_bin_sums,
              vector=True, long_name="local z inverse standard deviation per bin",
              reference=1.0),
    Statistic(name="lzms", kind="binned", sums=("z2",), finish=lzms_from_bin_sums,
              vector=True, long_name="local ZMS per bin", reference=1.0),
)}



def names_of(kind: str) -> tuple[str, ...]:
    """Names of the statistics of one kind (:data:`KINDS`), in the order of :data:`STATISTICS`.

    Examples
    --------
    >>> names_of("rank")
    ('cc',)
    """
    return tuple(k for k, s in STATISTICS.items() if s.kind == kind)


_COND_RE = re.compile(r"^(?P<base>[a-z_]+?)(?:_(?P<cond>uE|X|V))?$")


@dataclass(frozen=True)
class BinningConfig:
    """How binned statistics cut the data (methods: bins)."""

    n_bins: int = N_BINS
    scheme: str = "equal-count"
    pop_min: int = POP_MIN
    log: bool = True


@dataclass(frozen=True)
class StatSpec:
    """A parsed statistic name: ``base`` family member and conditioning variable."""

    name: str
    base: str
    family: str
    cond: str = "uE"

    @property
    def vector(self) -> bool:
        """True for per-bin (vector) statistics."""
        return self.family == "binned" and STATISTICS[self.base].vector


def parse_stat(name: str) -> StatSpec:
    """Parse a statistic name such as ``"zms"``, ``"ence"``, ``"zmse_X"``, ``"lzisd_V"``."""
    key = str(name).strip()
    low = key.lower()
    if low in STATISTICS and STATISTICS[low].kind != "binned":
        return StatSpec(low, low, STATISTICS[low].kind)
    m = _COND_RE.match(key if key[-2:] in ("_X", "_V") or key.endswith("_uE") else low)
    base = m.group("base") if m else None
    if base in STATISTICS and STATISTICS[base].kind == "binned":
        cond = m.group("cond") or "uE"
        return StatSpec(base if cond == "uE" else f"{base}_{cond}", base, "binned", cond)
    known = sorted(names_of("moment")) + list(names_of("rank")) + sorted(names_of("binned"))
    raise InputError(
        f"unknown statistic {name!r}; known: {', '.join(known)} "
        "(binned ones take a conditioning suffix _X or _V, e.g. zmse_X)"
    )


def moment_statistic(name: str, E=None, u=None, *, axis: int = -1):
    r"""Compute a moment statistic of plain arrays, NaN-aware, reduced over ``axis``.

    The same formula as every other route (``STATISTICS[name].finish(S, n)`` on the sums S of
    the features z², u², E², z, ln u² over the n valid pairs): a pair with a NaN in E or
    u (padding) is ignored. Statistics of u only (``mv``, ``rmv``, ``nll_ref``) take
    ``E=None``, those of E only (``mse``, ``rmse``) ``u=None``.

    Parameters
    ----------
    name : str
        A moment statistic of :data:`STATISTICS`.
    E, u : array_like, optional
        Errors and uncertainties.
    axis : int, default -1
        Axis of the samples.

    Examples
    --------
    >>> float(moment_statistic("zms", np.array([1.0, -2.0, np.nan]), np.array([1.0, 2.0, 1.0])))
    1.0
    """
    if name not in names_of("moment"):
        raise InputError(f"unknown moment statistic {name!r}; "
                         f"known: {', '.join(names_of('moment'))}")
    Ea = None if E is None else np.moveaxis(np.asarray(E, dtype=np.float64), axis, -1)
    ua = None if u is None else np.moveaxis(np.asarray(u, dtype=np.float64), axis, -1)
    if Ea is None:
        Ea = np.zeros_like(ua)
    if ua is None:
        ua = np.ones_like(Ea)
    Ea, ua = np.broadcast_arrays(Ea, ua)
    ok = np.isfinite(Ea) & np.isfinite(ua)
    n = ok.sum(axis=-1).astype(np.float64)
    E0, u1 = np.where(ok, Ea, 0.0), np.where(ok, ua, 1.0)  # invalid pairs: features 0
    z = E0 / u1
    S = np.stack([np.sum(z * z, -1), np.sum(np.where(ok, u1 * u1, 0.0), -1),
                  np.sum(E0 * E0, -1), np.sum(z, -1), np.sum(np.log(u1 * u1), -1)], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, STATISTICS[name].finish(S, n), np.nan)


def moment_sums(E, u):
    """Sum the moment features (z², u², E², z, ln u²) over the last axis: (..., 5).

    Batch route for simulated data sets; ``STATISTICS[name].finish(S, M)`` gives the
    statistic.
    """
    E = np.asarray(E, dtype=np.float64)
    u = np.broadcast_to(np.asarray(u, dtype=np.float64), E.shape)
    z = E / u
    sums = [np.sum(z * z, -1), np.sum(u * u, -1), np.sum(E * E, -1), np.sum(z, -1)]
    del z
    lnu2 = u * u
    np.log(lnu2, out=lnu2)  # in place: two (..., M) temporaries at a time, not three
    sums.append(np.sum(lnu2, -1))
    return np.stack(sums, axis=-1)


def bin_feature_sums(E_sorted, u_sorted, edges):
    """Per-bin sums of the bin features for data already sorted by the binning variable.

    Batch route (rows = simulated data sets, E_sorted (b, M), u_sorted (M,)): returns
    (b, N, 6) for ``STATISTICS[name].finish(S, n)`` with ``n = diff(edges)``. Inside
    ``uqx.engine.reference_numpy.use_engine("numpy")``, the plain-numpy sums of
    :func:`uqx.engine.reference_numpy.bin_feature_sums` instead of the numba kernel.
    """
    if reference_numpy.current_engine() == "numpy":
        return reference_numpy.bin_feature_sums(E_sorted, u_sorted, edges)
    E = np.ascontiguousarray(np.atleast_2d(np.asarray(E_sorted, dtype=np.float64)))
    u = np.ascontiguousarray(np.asarray(u_sorted, dtype=np.float64))
    edges = np.ascontiguousarray(np.asarray(edges, dtype=np.int64))
    out = np.zeros((E.shape[0], edges.size - 1, 6))
    _sorted_bin_sums(E, u, edges, out)
    return out


@numba.njit(nogil=True, cache=True)
def _sorted_bin_sums(E, u, edges, out):
    b, M = E.shape
    N = edges.shape[0] - 1
    for r in range(b):
        mean = 0.0
        for p in range(M):
            mean += E[r, p]
        mean /= M
        out_r = out[r]  # one view per row, never one per bin or sample (6x slower)
        for j in range(N):
            s = no_bin_features()
            for p in range(edges[j], edges[j + 1]):
                s = add_bin_features(s, sample_bin_features(E[r, p], u[p], mean))
            put_bin_features(out_r, j, s)


@numba.njit(nogil=True, cache=True)
def _prefix_bin_features(E, u, P):
    """Prefix sums P (M+1, 6) of the bin features of one sorted data set (fused pass).

    Same features as :func:`bin_features` (E centred on its mean); ``P[k]`` is the sum
    over the first k positions, so the sums of any bin [a, b) are ``P[b] - P[a]``.
    """
    M = E.shape[0]
    mean = 0.0
    for p in range(M):
        mean += E[p]
    mean /= M
    a = no_bin_features()
    put_bin_features(P, 0, a)
    for p in range(M):
        a = add_bin_features(a, sample_bin_features(E[p], u[p], mean))
        put_bin_features(P, p + 1, a)


def prefix_bin_features(E_sorted, u_sorted, out=None) -> np.ndarray:
    """Prefix sums (M+1, 6) of the bin features of data sorted by the binning variable.

    ``out``: a C-contiguous (M+1, 6) float64 array to fill (no allocation). Inside
    ``uqx.engine.reference_numpy.use_engine("numpy")``, the plain-numpy prefix sums of
    :func:`uqx.engine.reference_numpy.prefix_bin_features`.
    """
    if reference_numpy.current_engine() == "numpy":
        P = reference_numpy.prefix_bin_features(E_sorted, u_sorted)
        if out is None:
            return P
        out[...] = P
        return out
    E = np.ascontiguousarray(E_sorted, dtype=np.float64)
    u = np.ascontiguousarray(u_sorted, dtype=np.float64)
    P = np.empty((E.size + 1, 6)) if out is None else out
    _prefix_bin_features(E, u, P)
    return P

