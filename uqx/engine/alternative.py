r"""The alternatives of consistency, computed from the copies' per-bin sums.

Two named alternatives, each a factor on the errors of every bin of uE, so that scaling
the per-bin sums (:func:`uqx.engine.copies.copy_bin_features` with the factors) turns
each calibrated copy into a copy of the alternative exactly and the resolution of the
binned statistics (:func:`uqx.engine.resolution.alternative_resolution`) needs no new
draw:

- **top**: "uE too small by f in the bins of uE above its 90th percentile"
  (:func:`uqx.engine.resolution.top_bin_factors`);
- **spread**: :math:`u = c\,u_E^\gamma` with the mean square of uE kept, piecewise on
  the bins (:func:`uqx.engine.resolution.spread_bin_factors`).

:class:`ConsistencyAlternatives` holds the sums and computes the statistics at the
factors that a search asks for.
"""

from __future__ import annotations

import numpy as np

from uqx.engine.copies import copy_bin_features
from uqx.engine.resolution import spread_bin_factors, top_bin_factors
from uqx.engine.statistic import BINNED_STATS

__all__ = ["ConsistencyAlternatives"]

#: Most float64 values held at once for the spread grid (64 MiB: per factor, copy and
#: bin the 6 features and 4 scaled sums): the factors are taken in chunks of that size,
#: whatever M and the bins.
_SPREAD_BUDGET = 1 << 23


class ConsistencyAlternatives:
    r"""The binned statistics on uE of calibrated copies under the alternatives of consistency.

    The local alternative "uE too small by f in the bins of uE above its
    :data:`~uqx.engine.resolution.TOP_QUANTILE` quantile"
    (:func:`~uqx.engine.resolution.top_bin_factors`) and the spread alternative
    :math:`u = c\,u_E^\gamma` (:func:`~uqx.engine.resolution.spread_bin_factors`) each
    turn a calibrated copy into a copy of the alternative exactly. Holding the copies'
    per-bin sums (k copies × S bins × 4: :func:`uqx.engine.copies.sim_rows`), this
    computes the statistics where a search asks for them
    (:func:`~uqx.engine.resolution.alternative_resolution`): the top factors of
    :data:`~uqx.engine.resolution.TOP_FACTORS` one at a time and each once, the spread
    exponents of a grid at once, every statistic of a (set, member) together.

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

    def add(self, i: int, m: int, sums, u2, n, M: int, top, stats: dict):
        """Hold the sums of set ``i`` under member ``m``.

        Parameters
        ----------
        i, m : int
            Set and member.
        sums : numpy.ndarray, shape (k, S, 4)
            Per-bin sums of the copies (the bins of uE).
        u2, n : numpy.ndarray, shape (S,)
            Σu² and counts per bin; ``M`` the set's size.
        top : numpy.ndarray of bool, shape (S,)
            The top bins (:func:`~uqx.engine.resolution.top_segments`).
        stats : dict
            ``{stat index: base}`` of the binned statistics on uE.
        """
        self._sets[(i, m)] = (np.asarray(sums, dtype=np.float64)[: self.n_copies], u2, n,
                              M, np.asarray(top, dtype=bool))
        self._stats.setdefault(i, {}).update(stats)

    def available(self, i: int, j: int) -> bool:
        """Whether statistic ``j`` of set ``i`` has copies under the alternatives."""
        return j in self._stats.get(i, {})

    def _statistics(self, i, sums, g, u2, n, M):
        """Every binned statistic of set ``i`` on the sums with bin factors ``g`` ((F,) S)."""
        St = copy_bin_features(sums, u2, n, None, M, g=g)
        lead = St.shape[:-2]
        St = St.reshape((-1,) + St.shape[-2:])
        return {b: BINNED_STATS[b][0](St, n).reshape(lead)
                for b in set(self._stats[i].values())}

    def _at(self, i, m, q):
        key = (i, m, int(q))
        hit = self._cache.get(key)
        if hit is None:
            sums, u2, n, M, top = self._sets[(i, m)]
            hit = self._statistics(i, sums, top_bin_factors(top, self.factors[int(q)]),
                                   u2, n, M)
            self._cache[key] = hit
        return hit

    def values(self, i: int, j: int, m: int):
        """``idx -> (k, len(idx))``: statistic ``j`` of set ``i``, member ``m``, at factors idx.

        The factors of the top alternative (indices into :attr:`factors`).
        """
        base = self._stats[i][j]
        if (i, m) not in self._sets:
            return lambda idx: np.full((self.n_copies, np.size(idx)), np.nan)
        return lambda idx: np.stack([self._at(i, m, q)[base] for q in np.atleast_1d(idx)],
                                    axis=-1)

    def spread(self, i: int, j: int, m: int, gammas) -> np.ndarray:
        r"""Statistic ``j`` of set ``i``, member ``m``, under :math:`u = c\,u_E^\gamma`.

        Parameters
        ----------
        i, j, m : int
            Set, statistic and member.
        gammas : array_like, shape (F,)
            The exponents (:data:`~uqx.engine.resolution.SPREAD_UP`, ``SPREAD_DOWN``).

        Returns
        -------
        numpy.ndarray, shape (k, F)
        """
        gammas = np.asarray(gammas, dtype=np.float64)
        base = self._stats[i][j]
        if (i, m) not in self._sets:
            return np.full((self.n_copies, gammas.size), np.nan)
        if gammas.size == 0:
            return np.full((self.n_copies, 0), np.nan)
        keys = [(i, m, "spread", float(g)) for g in gammas]
        todo = np.array([g for g, key in zip(gammas, keys, strict=True)
                         if key not in self._cache])
        if todo.size:  # every statistic at the exponents not computed yet, at once
            sums, u2, n, M, _ = self._sets[(i, m)]
            g = spread_bin_factors(u2, n, todo)  # (F, S)
            step = max(1, _SPREAD_BUDGET // max(1, sums.shape[0] * sums.shape[1] * 10))
            for a in range(0, todo.size, step):
                part = self._statistics(i, sums, g[a:a + step], u2, n, M)
                for q, gam in enumerate(todo[a:a + step]):
                    self._cache[(i, m, "spread", float(gam))] = {b: v[q]
                                                                 for b, v in part.items()}
        return np.stack([self._cache[key][base] for key in keys], axis=-1)
