"""Average-calibration statistics: numpy kernels over the last axis, NaN-aware.

Notation (METHODS.md §2): ``E`` errors, ``u = uE`` standard uncertainties, ``Z = E/u``.
A pair where either ``E`` or ``u`` is NaN is ignored (NaN padding of stacked sets).
All kernels accept arrays of any shape and reduce over ``axis`` (default last).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LN_2PI",
    "paired",
    "mv",
    "mse",
    "rmv",
    "rmse",
    "rce",
    "mean_z",
    "var_z",
    "zms",
    "nll",
    "nll_ref",
]

#: ln(2 pi), exact (ErrViewLib's ``nllFun`` uses the rounded 1.837877).
LN_2PI = float(np.log(2.0 * np.pi))


def paired(E, uE):
    """Return float arrays ``(E, u)`` with NaN wherever either member of a pair is NaN."""
    E = np.asarray(E, dtype=np.float64)
    u = np.asarray(uE, dtype=np.float64)
    E, u = np.broadcast_arrays(E, u)
    bad = np.isnan(E) | np.isnan(u)
    if bad.any():
        E = np.where(bad, np.nan, E)
        u = np.where(bad, np.nan, u)
    return E, u


def _nanmean(x, axis):
    with np.errstate(invalid="ignore", divide="ignore"):
        n = np.sum(~np.isnan(x), axis=axis)
        s = np.nansum(x, axis=axis)
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def mv(uE, *, axis=-1):
    r"""Mean variance :math:`\mathrm{MV} = \langle u^2 \rangle` (METHODS §2).

    Examples
    --------
    >>> float(mv([1.0, 3.0]))
    5.0
    """
    u = np.asarray(uE, dtype=np.float64)
    return _nanmean(u * u, axis)


def mse(E, *, axis=-1):
    r"""Mean squared error :math:`\mathrm{MSE} = \langle E^2 \rangle` (uncentred)."""
    E = np.asarray(E, dtype=np.float64)
    return _nanmean(E * E, axis)


def rmv(uE, *, axis=-1):
    r"""Root mean variance :math:`\mathrm{RMV} = \sqrt{\langle u^2 \rangle}`."""
    return np.sqrt(mv(uE, axis=axis))


def rmse(E, *, axis=-1):
    r"""Root mean squared error :math:`\mathrm{RMSE} = \sqrt{\langle E^2 \rangle}`."""
    return np.sqrt(mse(E, axis=axis))


def rce(E, uE, *, axis=-1):
    r"""Relative calibration error (paper 004 Eq. 3, 001 Eq. 9).

    .. math:: \mathrm{RCE} = \frac{\mathrm{RMV} - \mathrm{RMSE}}{\mathrm{RMV}}

    Reference value 0 for calibrated uncertainties.

    Examples
    --------
    >>> round(float(rce([1.0, -1.0], [1.0, 1.0])), 12)
    0.0
    """
    E, u = paired(E, uE)
    a = rmv(u, axis=axis)
    return (a - rmse(E, axis=axis)) / a


def mean_z(E, uE, *, axis=-1):
    r"""Mean z-score :math:`\langle Z \rangle`, :math:`Z = E/u` (000 Table III)."""
    E, u = paired(E, uE)
    return _nanmean(E / u, axis)


def var_z(E, uE, *, axis=-1):
    r"""Sample variance of z-scores, denominator :math:`n-1` (003 Eq. 8, target 1)."""
    E, u = paired(E, uE)
    z = E / u
    n = np.sum(~np.isnan(z), axis=axis)
    m = _nanmean(z, axis)
    d = z - np.expand_dims(m, axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 1, np.nansum(d * d, axis=axis) / (n - 1), np.nan)


def zms(E, uE, *, axis=-1):
    r"""Mean squared z-score (001 Eq. 10, 000 Eq. 6).

    .. math:: \mathrm{ZMS} = \langle Z^2 \rangle = \frac{1}{M}\sum_i (E_i/u_i)^2

    Reference value 1 for calibrated uncertainties.

    Examples
    --------
    >>> float(zms([2.0, 0.0], [1.0, 1.0]))
    2.0
    """
    E, u = paired(E, uE)
    z = E / u
    return _nanmean(z * z, axis)


def nll(E, uE, *, axis=-1):
    r"""Mean negative log-likelihood under a normal model (000 Eq. 9).

    .. math:: \mathrm{NLL} = \tfrac12\left(\langle Z^2\rangle + \langle \ln u^2\rangle
              + \ln 2\pi\right)
    """
    E, u = paired(E, uE)
    return 0.5 * (zms(E, u, axis=axis) + _nanmean(np.log(u * u), axis) + LN_2PI)


def nll_ref(uE, *, axis=-1):
    r"""Return the reference NLL of calibrated normal errors (:math:`\langle Z^2\rangle = 1`).

    .. math:: \mathrm{NLL}_{ref} = \tfrac12\left(1 + \langle \ln u^2\rangle + \ln 2\pi\right)
    """
    u = np.asarray(uE, dtype=np.float64)
    return 0.5 * (1.0 + _nanmean(np.log(u * u), axis) + LN_2PI)
