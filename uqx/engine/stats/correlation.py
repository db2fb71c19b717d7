"""Rank correlation between absolute errors and uncertainties (numpy kernel)."""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


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

__all__ = ["spearman_cc", "pearson"]


def pearson(x, y, *, axis=-1):
    r"""Pearson correlation over ``axis``, ignoring NaN pairs.

    .. math:: r = \frac{\sum (x-\bar x)(y-\bar y)}{\sqrt{\sum (x-\bar x)^2 \sum (y-\bar y)^2}}

    Parameters
    ----------
    x, y : array_like
        Paired values.
    axis : int, default -1
        Axis of the samples.

    Returns
    -------
    numpy.ndarray
        r, reduced over ``axis``.
    """
    x, y = paired(x, y)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = x - np.nanmean(x, axis=axis, keepdims=True)
        dy = y - np.nanmean(y, axis=axis, keepdims=True)
        return np.nansum(dx * dy, axis=axis) / np.sqrt(
            np.nansum(dx * dx, axis=axis) * np.nansum(dy * dy, axis=axis)
        )


def spearman_cc(E, uE, *, axis=-1):
    r"""Spearman rank correlation coefficient of :math:`|E|` and :math:`u` (000 Eq. 10).

    Ties receive average ranks, as R ``cor(method="spearman")``:

    .. math:: CC = \mathrm{Pearson}(\mathrm{rank}(|E|), \mathrm{rank}(u))

    Positive values indicate that larger uncertainties go with larger errors; the
    reference value depends on the uncertainty distribution and must be simulated
    (000 Sect. II D 2).

    Parameters
    ----------
    E, uE : array_like
        Errors and uncertainties.
    axis : int, default -1
        Axis of the samples.

    Examples
    --------
    >>> float(spearman_cc([0.1, -0.5, 2.0], [1.0, 2.0, 3.0]))
    1.0
    """
    E, u = paired(E, uE)
    E = np.moveaxis(E, axis, -1)
    u = np.moveaxis(u, axis, -1)
    with np.errstate(invalid="ignore"):
        re = rankdata(np.abs(E), axis=-1, nan_policy="omit")
        ru = rankdata(u, axis=-1, nan_policy="omit")
    return pearson(re, ru, axis=-1)
