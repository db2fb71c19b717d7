r"""Reference values: ζ-scores, simulated references (Sim, Sim2), binomial intervals.

Paper 000 (Sect. II D, Eqs. 20–24, Appendix A) and METHODS.md §5.4–5.6, §6:

* ζ-score of a statistic θ with interval [lo, up] against a reference θ_ref;
* simulated reference of a statistic without predefined reference: draw
  :math:`E^{(k)}_i = u_i\\,\\epsilon^{(k)}_i` with ε ~ D(0, 1) (D = N(0,1) or the
  unit-variance Student :math:`t_s(\\nu)`) using the data's own uncertainties, compute
  the statistic with the same binning, and summarise over :math:`N_{MC}` draws:
  ``Sim`` = mean and its standard error, ``Sim2`` = the type-7 2.5/97.5 % quantiles;
* D-sensitivity: a reference that changes with D beyond its Monte-Carlo uncertainty
  (uqx rule, METHODS §15.3: :math:`|\\tilde\\theta_N - \\tilde\\theta_T| >
  2\\sqrt{u_N^2 + u_T^2}`) means the statistic cannot be validated without knowing D.
"""

from __future__ import annotations

from collections.abc import Sequence

import dask
import numba
import numpy as np
import xarray as xr
from scipy.special import ndtri

from uqx.data import InputError, as_stacked, iter_sets
from uqx.resample import content_key, resolve_seed, rows_for_budget, seed_sequence
from uqx.statistic import (
    BINNED_STATS,
    MOMENT_STATS,
    BinningConfig,
    bin_feature_sums,
    parse_stat,
)

__all__ = [
    "zeta_score",
    "zeta_sim2",
    "binomial_ci",
    "draw_unit",
    "unit_quantile",
    "simulate_reference",
    "d_sensitive",
    "DISTRIBUTIONS",
]

#: Simulated data sets per task (fixed: part of the definition of the keyed streams;
#: inside a task rows are batched to the memory budget).
SIM_BLOCK = 250

#: Generative distributions: label -> (kind, nu).
DISTRIBUTIONS = {"N": ("normal", None), "T6": ("t", 6.0)}


def zeta_score(estimate, reference, ci_low, ci_high, *, target_u=0.0):
    r"""ζ-score of paper 000 Eq. 20 (ErrViewLib ``fZetaBS``; METHODS §5.4).

    .. math:: \zeta = \frac{\theta - \theta_{ref}}{\sqrt{(\theta - \ell)^2 + U_t^2}},
              \quad \ell = \begin{cases} lo & \theta \ge \theta_{ref} \\ up & \text{else}
              \end{cases}

    i.e. the signed distance to the reference over the half-interval on the reference's
    side; :math:`|\zeta| \le 1` iff the reference lies in the interval (when
    :math:`U_t = 0`). ``target_u`` is the optional target uncertainty (000 uses
    :math:`U_t = 2u(\tilde\theta_{ref})` for simulated references).

    Examples
    --------
    >>> float(zeta_score(1.2, 1.0, 1.1, 1.3))
    2.0
    """
    est = np.asarray(estimate, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    d = est - ref
    lim = np.where(d >= 0, ci_low, ci_high)
    width = np.sqrt((est - lim) ** 2 + np.asarray(target_u, dtype=np.float64) ** 2)
    with np.errstate(invalid="ignore", divide="ignore"):
        z = np.where(d == 0, 0.0, d / width)
    return z


def zeta_sim2(estimate, reference, q_low, q_high):
    r"""ζ_Sim2 of paper 000 Eq. 24 as coded (METHODS §5.4, §13.4).

    .. math:: \zeta_{Sim2} = \begin{cases} (\theta - \tilde\theta)/(\tilde\theta - q_{2.5})
              & \theta \le \tilde\theta \\ (\theta - \tilde\theta)/(q_{97.5} - \tilde\theta)
              & \text{else} \end{cases}

    Kept for comparison only: the paper advises against using it for decisions.
    """
    est = np.asarray(estimate, dtype=np.float64)
    ref = np.asarray(reference, dtype=np.float64)
    d = est - ref
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(d <= 0, d / (ref - np.asarray(q_low)), d / (np.asarray(q_high) - ref))


def binomial_ci(x, n, *, method="wilsoncc", level=0.95):
    r"""Binomial proportion interval (DescTools ``BinomCI``; METHODS §5.6).

    ``method="wilson"``: :math:`c \pm h` with :math:`c = (x + \kappa^2/2)/(n+\kappa^2)`,
    :math:`h = \kappa\sqrt n/(n+\kappa^2)\sqrt{\hat p\hat q + \kappa^2/(4n)}`;
    ``method="wilsoncc"``: Newcombe (1998) method 4 with continuity correction. Integer
    counts go through :meth:`scipy.stats.binomtest(x, n).proportion_ci
    <scipy.stats._result_classes.BinomTestResult.proportion_ci>`; non-integer ``x`` and
    ``n`` (calibration-curve bands, METHODS §10.1), which scipy does not take, use the
    same closed forms (:func:`_wilson_formula`, checked against scipy on integers).

    Examples
    --------
    >>> [round(float(v), 5) for v in binomial_ci(81, 263)]
    [0.25351, 0.36818]
    """
    if method not in ("wilson", "wilsoncc"):
        raise InputError(f"binomial_ci: method must be 'wilson' or 'wilsoncc', got {method!r}")
    x = np.asarray(x, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    x, n = np.broadcast_arrays(x, n)
    integer = (np.all(x == np.round(x)) and np.all(n == np.round(n)) and np.all(n >= 1)
               and np.all((x >= 0) & (x <= n)))
    if not integer:
        return _wilson_formula(x, n, method=method, level=level)
    from scipy.stats import binomtest

    lo, hi = np.empty(x.shape), np.empty(x.shape)
    for idx in np.ndindex(x.shape):
        ci = binomtest(int(x[idx]), int(n[idx])).proportion_ci(confidence_level=level,
                                                                method=method)
        lo[idx], hi[idx] = ci.low, ci.high
    return (lo[()], hi[()])


def _wilson_formula(x, n, *, method="wilsoncc", level=0.95):
    """Closed-form Wilson / Wilson-cc limits for any (also non-integer) x and n."""
    k = ndtri((1 + level) / 2)
    p = x / n
    q = 1 - p
    k2 = k * k
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "wilson":
            c = (x + k2 / 2) / (n + k2)
            h = k * np.sqrt(n) / (n + k2) * np.sqrt(p * q + k2 / (4 * n))
            lo, hi = c - h, c + h
        else:
            lo = (2 * x + k2 - 1 - k * np.sqrt(k2 - 2 - 1 / n + 4 * p * (n * q + 1))) / (
                2 * (n + k2)
            )
            hi = (2 * x + k2 + 1 + k * np.sqrt(k2 + 2 - 1 / n + 4 * p * (n * q - 1))) / (
                2 * (n + k2)
            )
            lo = np.where(x <= 0, 0.0, lo)
            hi = np.where(x >= n, 1.0, hi)
    return np.clip(lo, 0, 1), np.clip(hi, 0, 1)


def draw_unit(rng: np.random.Generator, size, *, dist="normal", nu=None, pool=None):
    r"""Draw from a unit-variance generative distribution D (000 Sect. II D 2).

    ``"normal"``: N(0, 1); ``"t"``: :math:`t_s(\nu) = t(\nu)/\sqrt{\nu/(\nu-2)}`, ν > 2
    (``nu = inf``: the normal); ``"data"``: values of ``pool`` (the data's z-scores at
    unit mean square, :func:`uqx.mctest.standardised_z`) drawn with replacement.
    """
    if dist == "data":
        if pool is None or np.size(pool) == 0:
            raise InputError("dist 'data' needs the pool of the data's z-scores")
        return np.asarray(pool)[rng.integers(0, np.size(pool), size)]
    if dist == "normal":
        return rng.standard_normal(size)
    if dist == "t":
        if nu is None or not nu > 2:
            raise InputError(f"unit-variance Student t needs nu > 2, got {nu}")
        if np.isinf(nu):  # the limit of t_s(nu): the normal
            return rng.standard_normal(size)
        return rng.standard_t(nu, size) / np.sqrt(nu / (nu - 2.0))
    raise InputError(f"unknown generative distribution {dist!r} (normal, t, data)")


def unit_quantile(p, *, dist="normal", nu=None):
    r"""Quantile of a unit-variance generative distribution D (METHODS §6).

    ``dist="normal"``: :math:`\Phi^{-1}(p)`; ``dist="t"``: unit-variance Student
    :math:`t_s(\nu) = t(\nu)/\sqrt{\nu/(\nu-2)}`, requires :math:`\nu > 2`.
    """
    from scipy.stats import norm
    from scipy.stats import t as student_t

    p = np.asarray(p, dtype=np.float64)
    if dist == "normal":
        return norm.ppf(p)
    if dist == "t":
        if nu is None or not nu > 2:
            raise InputError(f"unit-variance Student t needs nu > 2, got {nu}")
        return student_t.ppf(p, nu) / np.sqrt(nu / (nu - 2.0))
    raise InputError(f"dist must be 'normal' or 't', got {dist!r}")


def d_sensitive(ref_a, se_a, ref_b, se_b, *, k=2.0):
    r"""D-sensitivity rule: :math:`|\tilde\theta_a - \tilde\theta_b| > k\sqrt{u_a^2 + u_b^2}`."""
    return np.abs(np.asarray(ref_a) - ref_b) > k * np.sqrt(
        np.asarray(se_a) ** 2 + np.asarray(se_b) ** 2
    )


def _sim_block(ss, specs, dist, nu, seed, dlabel, block, nb, hook=None):
    r"""Statistics of ``nb`` simulated data sets (one keyed block) -> {name: (nb,)}.

    The draws ε of the block come from one keyed stream consumed in row order and are
    laid out in the stable uE order (ε is i.i.d., so any fixed layout gives calibrated
    copies :math:`E = u\,\epsilon`): binned statistics on uE need no gather, and the
    moment features that depend on u only are computed once. Rows are simulated in
    batches sized to :data:`uqx.resample.MEMORY_BUDGET` (about 12 float64 temporaries
    per value), so memory is bounded for any M and the numbers do not depend on it.
    """
    rng = np.random.Generator(np.random.PCG64(seed_sequence(seed, "sim", ss.key, dlabel, block)))
    rows = rows_for_budget(12 * 8 * ss.M)
    parts, hooked = [], []
    first = block * SIM_BLOCK  # index of the block's first copy in the whole stream
    for lo in range(0, nb, rows):
        eps = draw_unit(rng, (min(rows, nb - lo), ss.M), dist=dist, nu=nu, pool=ss.pool)
        parts.append(_sim_stats(eps, ss, specs))
        if hook is not None and first + lo < hook.n_copies:  # the same draws, reused
            hooked.append(hook(eps[: hook.n_copies - first - lo]))
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if hooked:
        out["_hook"] = np.concatenate(hooked)
    return out


def _sim_stats(eps, ss, specs):
    """Statistics of calibrated copies ``E = u_sorted * eps`` (rows of eps, uE order)."""
    out = {}
    us = ss.u_sorted
    moment = [s for s in specs if s.family == "moment"]
    if moment:
        e2 = eps * eps
        # features (z², u², E², z, ln u²): z = ε, and the u-only ones are constants
        S = np.empty((eps.shape[0], 5))
        S[:, 0] = e2.sum(axis=-1)
        S[:, 1] = ss.sum_u2
        S[:, 2] = e2 @ (us * us)
        S[:, 3] = eps.sum(axis=-1)
        S[:, 4] = ss.sum_lnu2
        for s in moment:
            out[s.name] = MOMENT_STATS[s.base](S, ss.M)
    binned = sorted({s.cond for s in specs if s.family == "binned"})
    rank = any(s.family == "rank" for s in specs)
    if binned or rank:
        E = eps * us
    for c in binned:
        pos, edges = ss.bins[c]
        Ec = E if pos is None else E[:, pos]
        S = bin_feature_sums(Ec, us if pos is None else us[pos], edges)
        n = np.diff(edges).astype(np.float64)
        for s in specs:
            if s.family == "binned" and s.cond == c:
                out[s.name] = BINNED_STATS[s.base][0](S, n)
    if rank:
        out["cc"] = _cc_fixed_u(np.abs(E), ss.ru)
    return out


@numba.njit(parallel=True, cache=True)
def _cc_rows(ae, order, ru, out, tied):  # pragma: no cover - numba
    """Spearman CC of each row of |E| (sorted by ``order``) with fixed centred ranks ``ru``.

    Flags the rows with ties (their positions are not their average ranks).
    """
    k, M = ae.shape
    denom = np.sqrt(np.sum(ru * ru) * M * (M * M - 1.0) / 12.0)
    c = (M - 1) / 2.0
    for r in numba.prange(k):
        acc = 0.0
        t = False
        for i in range(M):
            j = order[r, i]
            if i > 0 and ae[r, j] == ae[r, order[r, i - 1]]:
                t = True
            acc += (i - c) * ru[j]
        out[r] = acc / denom
        tied[r] = t


def _cc_fixed_u(ae, ru):
    """Spearman CC of rows of |E| against fixed centred average ranks ``ru`` of u.

    Continuous simulated errors have no ties: the rank of a value is its position in one
    argsort per row, accumulated against ``ru`` in numba, and the rank variance is
    M(M²-1)/12. Rows
    with ties (discrete data, or the resampled "data" member) fall back to average ranks
    (:func:`scipy.stats.rankdata`).
    """
    ae = np.ascontiguousarray(np.atleast_2d(ae), dtype=np.float64)
    ru = np.ascontiguousarray(ru, dtype=np.float64)
    M = ae.shape[-1]
    out = np.empty(ae.shape[0])
    tied = np.zeros(ae.shape[0], dtype=np.bool_)
    _cc_rows(ae, np.argsort(ae, axis=-1), ru, out, tied)  # NumPy's vectorised sort
    if tied.any():
        from scipy.stats import rankdata

        re_ = rankdata(ae[tied], axis=-1) - (M + 1) / 2.0
        out[tied] = (re_ @ ru) / np.sqrt(np.sum(re_ * re_, axis=-1) * np.dot(ru, ru))
    return out


def _summarise_sims(computed, names, n_mc, level, keep_draws) -> xr.Dataset:
    """Sim (mean, MC standard error) and Sim2 (quantile interval) of the simulated values."""
    shape = (len(computed), len(names))
    res = {k: np.full(shape, np.nan) for k in ("reference", "reference_se", "sim2_low",
                                                "sim2_high")}
    n_nan = np.zeros(shape, dtype=np.int64)
    draws = np.full(shape + (n_mc,), np.nan) if keep_draws else None
    for i, blocks in enumerate(computed):
        for j, name in enumerate(names):
            v = np.concatenate([b[name] for b in blocks])
            ok = v[~np.isnan(v)]
            n_nan[i, j] = v.size - ok.size
            if ok.size:
                res["reference"][i, j] = ok.mean()
                res["reference_se"][i, j] = ok.std(ddof=1) / np.sqrt(ok.size)
                res["sim2_low"][i, j], res["sim2_high"][i, j] = np.quantile(
                    ok, [(1 - level) / 2, (1 + level) / 2], method="linear")
            if draws is not None:
                draws[i, j] = v
    data = {k: (("set", "stat"), v) for k, v in res.items()}
    data["n_nan"] = (("set", "stat"), n_nan)
    if draws is not None:
        data["draws"] = (("set", "stat", "mc"), draws)
    return xr.Dataset(data, coords={"stat": names})


class _SimSet:
    """What the simulation of one data set needs: uE in stable order and the binnings.

    ``bins[c] = (pos, edges)``: ``pos`` maps the bins' sorted order of variable c to
    positions in the uE order (None for uE itself).
    """

    def __init__(self, sd, specs, cfg, cfg_pool=False):
        from scipy.stats import rankdata

        from uqx.binning import make_bins, stable_order

        from uqx.mctest import standardised_z

        self.name, self.M = sd.name, sd.M
        self.key = content_key(sd.E, sd.uE)
        self.pool = standardised_z(sd.E, sd.uE) if cfg_pool else None
        order = stable_order(sd.uE)
        self.u_sorted = np.ascontiguousarray(sd.uE[order])
        self.sum_u2 = float(np.sum(self.u_sorted**2))
        self.sum_lnu2 = float(np.sum(np.log(self.u_sorted**2)))
        self.ru = rankdata(self.u_sorted) - (sd.M + 1) / 2.0
        where = np.empty(sd.M, dtype=np.int64)
        where[order] = np.arange(sd.M)  # file index -> position in uE order
        conds = {"uE": sd.uE, "X": sd.X, "V": sd.V}
        self.bins = {}
        for c in {s.cond for s in specs if s.family == "binned"}:
            if conds.get(c) is None:
                raise InputError(f"{sd.name}: statistic needs variable {c!r}, absent here")
            b = make_bins(conds[c], cfg.n_bins, scheme=cfg.scheme, pop_min=cfg.pop_min,
                          log=cfg.log)
            pos = None if c == "uE" and np.array_equal(b.order, order) else where[b.order]
            self.bins[c] = (pos, np.ascontiguousarray(b.edges))


def simulate_reference(
    ds,
    stats: Sequence[str] = ("cc", "ence", "zmse"),
    *,
    dist: str = "normal",
    nu: float = 6.0,
    n_mc: int = 10_000,
    seed: int | None = None,
    bins: int = 20,
    binning: str = "equal-count",
    pop_min: int = 30,
    level: float = 0.95,
    keep_draws: bool = False,
    scheduler=None,
    num_workers: int | None = None,
    hooks=None,
    label: str | None = None,
) -> xr.Dataset:
    r"""Simulate reference values of statistics (paper 000 Sect. II D 2, METHODS §6).

    For k = 1..N_MC: :math:`E^{(k)} = u \odot \epsilon^{(k)}`, ε ~ D, statistic
    :math:`\tilde\theta_k` with the same binning as the data;
    :math:`\tilde\theta_{ref} = \overline{\tilde\theta_k}`,
    :math:`u(\tilde\theta_{ref}) = \mathrm{sd}(\tilde\theta_k)/\sqrt{N_{MC}}`, and the
    ``Sim2`` interval = type-7 quantiles at :math:`(1 \mp level)/2`.

    Parameters
    ----------
    ds : xarray.Dataset
        Input data set(s); only ``uE`` (and X/V for binning) are used.
    stats : sequence of str
        Statistic names (as for :func:`uqx.bootstrap`).
    dist : {"normal", "t", "data"}
        Generative distribution; ``"t"`` is the unit-variance Student :math:`t_s(\nu)`,
        ``"data"`` each set's own z-scores at unit mean square, resampled with
        replacement (:func:`uqx.mctest.standardised_z`).
    nu : float or sequence of float, default 6
        Degrees of freedom of ``"t"`` (must be > 2; ``inf``: the normal), or one per
        set (the data-matched member of :mod:`uqx.mctest`; then give ``label``).
    n_mc : int, default 10000
        Number of simulated data sets.
    label : str, optional
        Label of the distribution in the keyed streams (default ``N`` or ``T<nu>``).
    hooks : list, optional
        One callable (or None) per set, applied to the unit draws ε (k, M) of its first
        ``hook.n_copies`` simulated sets (laid out in the stable uE order); the results
        come back as a second return value ``{set index: (n_copies, ...)}``
        (:class:`uqx.extrapolation.NullHook` uses it to share the draws).

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``stat``): ``reference``, ``reference_se``, ``sim2_low``,
        ``sim2_high``, ``n_nan`` [, ``draws`` over ``mc``].
    """
    if not (isinstance(n_mc, (int, np.integer)) and n_mc >= 2):
        raise InputError(f"n_mc must be an integer >= 2, got {n_mc!r}")
    specs = [parse_stat(s) for s in stats]
    if any(s.vector for s in specs):
        raise InputError("per-bin statistics have no scalar simulated reference")
    seed = resolve_seed(seed)
    if dist not in ("normal", "t", "data"):
        raise InputError(f"unknown generative distribution {dist!r} (normal, t, data)")
    ds = as_stacked(ds)
    sets = list(iter_sets(ds))
    per_set = np.ndim(nu) > 0
    nus = np.asarray(nu, dtype=np.float64).ravel() if per_set else None
    if per_set and nus.size != len(sets):
        raise InputError(f"nu: one value per set expected ({len(sets)}), got {np.size(nu)}")
    if dist == "t" and not (np.all(nus > 2) if per_set else (
            isinstance(nu, (int, float, np.number)) and nu > 2)):
        raise InputError(f"unit-variance Student t needs nu > 2, got {nu!r}")
    if per_set and label is None:
        raise InputError("one nu per set needs a label for its random streams")
    dlabel = label or {"normal": "N", "data": "data"}.get(dist) or f"T{nu:g}"
    cfg = BinningConfig(bins, binning, pop_min)
    n_blocks = -(-n_mc // SIM_BLOCK)
    hooks = hooks or [None] * len(sets)
    tasks = [
        [dask.delayed(_sim_block)(ss, specs, dist, float(nus[i]) if per_set else nu, seed,
                                  dlabel, b, min(SIM_BLOCK, n_mc - b * SIM_BLOCK), hook)
         for b in range(n_blocks)]
        for i, (ss, hook) in enumerate(zip((_SimSet(sd, specs, cfg, dist == "data")
                                            for sd in sets), hooks, strict=True))
    ]
    kw = {"scheduler": scheduler or "threads"}
    if num_workers is not None and kw["scheduler"] in ("threads", "processes"):
        kw["num_workers"] = num_workers
    (computed,) = dask.compute(tasks, **kw)
    out = _summarise_sims(computed, [s.name for s in specs], n_mc, level, keep_draws)
    out = out.assign_coords(set=ds["set"].values)
    if per_set:
        out["nu"] = ("set", nus.copy(), {"long_name": "degrees of freedom per set"})
    out.attrs = {"dist": dist, "dist_label": dlabel,
                 "nu": float(nu) if dist == "t" and not per_set else np.nan,
                 "n_mc": int(n_mc), "seed": int(seed), "level": float(level),
                 "binning_scheme": binning, "n_bins": int(bins), "pop_min": int(pop_min)}
    out["reference"].attrs["long_name"] = "simulated reference (mean over N_MC draws)"
    out["reference_se"].attrs["long_name"] = "Monte-Carlo standard error of the reference"
    out["sim2_low"].attrs["long_name"] = "lower quantile of simulated values (Sim2)"
    out["sim2_high"].attrs["long_name"] = "upper quantile of simulated values (Sim2)"
    if any(h is not None for h in hooks):
        return out, {i: np.concatenate([b["_hook"] for b in blocks if "_hook" in b])
                     for i, blocks in enumerate(computed) if hooks[i] is not None}
    return out
