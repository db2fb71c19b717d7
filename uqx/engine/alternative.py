r"""The local alternative of consistency, computed from the copies' per-bin sums.

"uE too small by f in the bins of uE above its 90th percentile": scaling the sums of
those bins (:func:`uqx.engine.resolution.scale_top_sums`) turns each calibrated copy
into a copy of the alternative exactly, so the resolution of the binned statistics
(:func:`uqx.engine.resolution.alternative_resolution`) needs no new draw.
:class:`TopAlternative` holds the sums and computes the statistics at the factors that
the search asks for.
"""

from __future__ import annotations

import numpy as np

from uqx.engine.copies import copy_bin_features
from uqx.engine.resolution import scale_top_sums
from uqx.engine.statistic import BINNED_STATS

__all__ = ["TopAlternative"]


class TopAlternative:
    r"""The binned statistics on uE of calibrated copies under the local alternative.

    The alternative of consistency "uE too small by f in the bins of uE above its
    :data:`~uqx.engine.resolution.TOP_QUANTILE` quantile" turns each calibrated copy
    into a copy of the alternative exactly
    (:func:`~uqx.engine.resolution.scale_top_sums`). Holding the copies' per-bin sums
    (k copies × S bins × 4: :func:`uqx.engine.copies.sim_rows`), this computes the
    statistics at the factors of :data:`~uqx.engine.resolution.TOP_FACTORS` that a
    search asks for (:func:`~uqx.engine.resolution.alternative_resolution`), every
    statistic of a (set, member) at once and each factor once, instead of at all 88
    factors for every copy.

    Parameters
    ----------
    factors : numpy.ndarray, shape (F,)
        The grid (:data:`~uqx.engine.resolution.TOP_FACTORS`).
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
        """Whether statistic ``j`` of set ``i`` has copies under the alternative."""
        return j in self._stats.get(i, {})

    def _at(self, i, m, q):
        key = (i, m, int(q))
        hit = self._cache.get(key)
        if hit is None:
            sums, u2, n, M, top = self._sets[(i, m)]
            sc = scale_top_sums(sums, top, self.factors[int(q)])
            St = copy_bin_features(sc, u2, n, sc[:, :, 2].sum(axis=1), M)
            hit = {b: BINNED_STATS[b][0](St, n) for b in set(self._stats[i].values())}
            self._cache[key] = hit
        return hit

    def values(self, i: int, j: int, m: int):
        """``idx -> (k, len(idx))``: statistic ``j`` of set ``i``, member ``m``, at factors idx."""
        base = self._stats[i][j]
        if (i, m) not in self._sets:
            return lambda idx: np.full((self.n_copies, np.size(idx)), np.nan)
        return lambda idx: np.stack([self._at(i, m, q)[base] for q in np.atleast_1d(idx)],
                                    axis=-1)
