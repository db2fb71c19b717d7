r"""The binned statistics of calibrated copies, up to a factor and under named alternatives.

The copies of the tests keep their per-bin sums (:func:`uqx.engine.copies.sim_rows`):
k copies × S bins × (Σε², Σ(uε)², Σuε, Σε), for each binning of a binned statistic.
From them, with no new draw:

- **up to a factor**: every copy divided by its own :math:`\sqrt{\mathrm{ZMS}}`
  (:func:`rescale_copy_sums`): the copies of the statistics of
  :func:`uqx.engine.statistic.scale_free_bin_sums`, the test of "consistent up to a
  factor";
- **top**: "uE too small by f in the bins above the 90th percentile" of the binning
  variable (uE, or a feature X, V: :func:`uqx.engine.resolution.top_bin_factors`);
- **spread**: :math:`u = c\,u_E^\gamma` with the mean square of uE kept, piecewise on
  the bins of uE (:func:`uqx.engine.resolution.spread_bin_factors`); for the rank
  correlation CC, row by row (its copies under the alternative are computed with the
  copies, :meth:`BinnedCopies.add_cc`).

Each alternative is a factor on the errors of every bin, so scaling the per-bin sums
(:func:`uqx.engine.copies.copy_bin_features`) turns a calibrated copy into a copy of the
alternative exactly. :class:`BinnedCopies` holds the sums and computes the statistics
where a test or a resolution search asks for them.
"""

from __future__ import annotations

import numpy as np

from uqx.engine.copies import copy_bin_features
from uqx.engine.layout import C_EPS, C_EPS2, C_X, C_X2
from uqx.engine.resolution import spread_bin_factors, top_bin_factors
from uqx.engine.statistic import STATISTICS

__all__ = ["BinnedCopies", "rescale_copy_sums"]

#: Most float64 values held at once for the spread grid (64 MiB: per factor, copy and
#: bin the 6 features and 4 scaled sums): the factors are taken in chunks of that size,
#: whatever M and the bins.
_SPREAD_BUDGET = 1 << 23


def rescale_copy_sums(sums, M: int):
    r"""Each copy's per-bin sums divided by its own factor :math:`\sqrt{\mathrm{ZMS}}`.

    :math:`c^2 = M / \sum_b \Sigma\epsilon^2_b` per copy: Σε² and Σ(uε)² times
    :math:`c^2`, Σuε and Σε times c (the bins cover the set).

    Parameters
    ----------
    sums : numpy.ndarray, shape (..., k, S, 4)
    M : int

    Returns
    -------
    numpy.ndarray, same shape
    """
    sums = np.asarray(sums, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        c2 = M / sums[..., C_EPS2].sum(axis=-1)
    c = np.sqrt(c2)[..., None]
    out = np.empty_like(sums)
    for k in (C_EPS2, C_X2):
        out[..., k] = sums[..., k] * c2[..., None]
    for k in (C_X, C_EPS):
        out[..., k] = sums[..., k] * c
    return out


class BinnedCopies:
    r"""The binned statistics of calibrated copies, up to a factor and under the alternatives.

    Holding the copies' per-bin sums of each binning (uE, X, V), it computes the
    statistics where they are asked: as they are (factor 1), each copy rescaled by its
    own factor (``scale_free``), under the top alternative of
    :data:`~uqx.engine.resolution.TOP_FACTORS` (each factor once) and under the spread
    alternative (the bins of uE), every statistic of a (set, member, binning) together.

    Parameters
    ----------
    factors : numpy.ndarray, shape (F,)
        The grid of the top alternative (:data:`~uqx.engine.resolution.TOP_FACTORS`).
    n_copies : int
        Copies per (set, member).
    """

    def __init__(self, factors, n_copies: int):
        self.factors = np.asarray(factors, dtype=np.float64)
        self.n_copies = int(n_copies)
        self._sets = {}
        self._stats = {}
        self._cache = {}
        self._cc = {}

    def add(self, i: int, m: int, sums, u2, n, M: int, top, stats: dict, cond: str = "uE"):
        """Hold the sums of set ``i`` under member ``m`` for the binning on ``cond``.

        Parameters
        ----------
        i, m : int
            Set and member.
        sums : numpy.ndarray, shape (k, S, 4)
            Per-bin sums of the copies.
        u2, n : numpy.ndarray, shape (S,)
            Σu² and counts per bin; ``M`` the set's size.
        top : numpy.ndarray of bool, shape (S,)
            The top bins (:func:`~uqx.engine.resolution.top_segments`).
        stats : dict
            ``{stat index: base}`` of the binned statistics on ``cond``.
        cond : str
            The binning variable.
        """
        self._sets[(i, m, cond)] = (np.asarray(sums, dtype=np.float64)[: self.n_copies], u2,
                                    n, M, np.asarray(top, dtype=bool))
        self._stats.setdefault((i, cond), {}).update(stats)

    def add_cc(self, i: int, m: int, values, gammas):
        r"""Hold CC of member ``m``'s copies of set ``i`` under :math:`u = c\,u_E^\gamma`.

        Parameters
        ----------
        values : numpy.ndarray, shape (k, G)
            CC of each copy at each exponent (the ranks of :math:`|u_E^\gamma\epsilon|`).
        gammas : numpy.ndarray, shape (G,)
            The exponents, in order away from 1.
        """
        self._cc[(i, m)] = (np.asarray(values, dtype=np.float64)[: self.n_copies],
                            np.asarray(gammas, dtype=np.float64))

    def cc_spread(self, i: int, m: int):
        """``(values (k, G), gammas (G,))`` held by :meth:`add_cc`, or None."""
        return self._cc.get((i, m))

    def available(self, i: int, j: int, cond: str = "uE") -> bool:
        """Whether statistic ``j`` of set ``i`` (binned on ``cond``) has copies here."""
        return j in self._stats.get((i, cond), {})

    def _statistics(self, i, cond, sums, g, u2, n, M, scale_free=False):
        """Every binned statistic of (set, binning) on the sums with bin factors ``g``."""
        if scale_free:
            if g is not None:
                gg = np.asarray(g, dtype=np.float64)[..., None, :, None]
                sums = sums * np.concatenate([gg * gg, gg * gg, gg, gg], axis=-1)
                g = None
            sums = rescale_copy_sums(sums, M)
        St = copy_bin_features(sums, u2, n, None, M, g=g)
        lead = St.shape[:-2]
        St = St.reshape((-1,) + St.shape[-2:])
        return {b: STATISTICS[b].finish(St, n).reshape(lead)
                for b in set(self._stats[(i, cond)].values())}

    def _at(self, i, m, cond, q, scale_free):
        key = (i, m, cond, int(q), bool(scale_free))
        hit = self._cache.get(key)
        if hit is None:
            sums, u2, n, M, top = self._sets[(i, m, cond)]
            g = None if q < 0 else top_bin_factors(top, self.factors[int(q)])
            hit = self._statistics(i, cond, sums, g, u2, n, M, scale_free)
            self._cache[key] = hit
        return hit

    def null(self, i: int, j: int, m: int, *, cond: str = "uE", scale_free: bool = False):
        """Statistic ``j`` of set ``i`` on member ``m``'s calibrated copies, shape (k,).

        With ``scale_free``, each copy rescaled by its own factor
        (:func:`rescale_copy_sums`). NaN when the member has no copies here.
        """
        if (i, m, cond) not in self._sets:
            return np.full(self.n_copies, np.nan)
        return self._at(i, m, cond, -1, scale_free)[self._stats[(i, cond)][j]]

    def values(self, i: int, j: int, m: int, *, cond: str = "uE", scale_free: bool = False):
        """``idx -> (k, len(idx))``: statistic ``j`` under the top alternative at factors idx.

        The factors of the top alternative (indices into :attr:`factors`): the errors of
        the bins above the 90th percentile of ``cond`` times the factor; with
        ``scale_free``, each copy then rescaled by its own factor.
        """
        base = self._stats[(i, cond)][j]
        if (i, m, cond) not in self._sets:
            return lambda idx: np.full((self.n_copies, np.size(idx)), np.nan)
        return lambda idx: np.stack([self._at(i, m, cond, q, scale_free)[base]
                                     for q in np.atleast_1d(idx)], axis=-1)

    def spread(self, i: int, j: int, m: int, gammas, *, scale_free: bool = False) -> np.ndarray:
        r"""Statistic ``j`` of set ``i``, member ``m``, under :math:`u = c\,u_E^\gamma`.

        Parameters
        ----------
        i, j, m : int
            Set, statistic (binned on uE) and member.
        gammas : array_like, shape (F,)
            The exponents (:data:`~uqx.engine.resolution.SPREAD_UP`, ``SPREAD_DOWN``).
        scale_free : bool
            Each copy rescaled by its own factor after the alternative.

        Returns
        -------
        numpy.ndarray, shape (k, F)
        """
        gammas = np.asarray(gammas, dtype=np.float64)
        base = self._stats[(i, "uE")][j]
        if (i, m, "uE") not in self._sets:
            return np.full((self.n_copies, gammas.size), np.nan)
        if gammas.size == 0:
            return np.full((self.n_copies, 0), np.nan)
        keys = [(i, m, "spread", float(g), bool(scale_free)) for g in gammas]
        todo = np.array([g for g, key in zip(gammas, keys, strict=True)
                         if key not in self._cache])
        if todo.size:  # every statistic at the exponents not computed yet, at once
            sums, u2, n, M, _ = self._sets[(i, m, "uE")]
            g = spread_bin_factors(u2, n, todo)  # (F, S)
            step = max(1, _SPREAD_BUDGET // max(1, sums.shape[0] * sums.shape[1] * 10))
            for a in range(0, todo.size, step):
                part = self._statistics(i, "uE", sums, g[a:a + step], u2, n, M, scale_free)
                for q, gam in enumerate(todo[a:a + step]):
                    self._cache[(i, m, "spread", float(gam), bool(scale_free))] = {
                        b: v[q] for b, v in part.items()}
        return np.stack([self._cache[key][base] for key in keys], axis=-1)
