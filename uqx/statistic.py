"""Statistics as evaluable objects for point estimate, replicates and jackknife.

One definition serves the point estimate, the bootstrap replicates and the leave-one-out
(jackknife) values.

Every statistic of the papers belongs to one of three families, each with a fast exact
route for the three evaluations (METHODS.md §5.1, §5.3):

``moment``
    functions of sample means of per-sample features (ZMS, RCE, MV, MSE, Var(Z), NLL...).
    Replicates are feature sums over the resample; the jackknife is analytic,
    ``(S - F_i)/(M-1)``, O(M).
``binned``
    functions of per-bin sums over index intervals of the data sorted by a conditioning
    variable (ENCE, UCE, ZMSE, ZVE, per-bin LZISD). A replicate is re-sorted by the
    binning variable and cut with the same intervals: with counts over the sorted
    positions the per-bin sums come from one O(M + N) pass (numba). Leave-one-out sums use
    the prefix-sum index shift of METHODS §5.3 (O(M·N)) with R's ``intrvJack`` intervals.
``rank``
    Spearman CC of (|E|, u): average ranks of a resample follow from the counts per tie
    group; the jackknife re-ranks by the ±1, ±½ shift rule (O(M²) in parallel numba).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

import numba
import numpy as np

from uqx.binning import equal_count_edges, make_bins
from uqx.data import InputError
from uqx.stats.calibration import LN_2PI

__all__ = [
    "MOMENT_STATS",
    "BINNED_STATS",
    "RANK_STATS",
    "STAT_INFO",
    "StatSpec",
    "parse_stat",
    "SetEvaluator",
    "BinningConfig",
    "moment_sums",
    "bin_features",
    "prefix_bin_features",
    "bin_feature_sums",
]

# ---------------------------------------------------------------- moment statistics
# features: 0 z^2, 1 u^2, 2 E^2, 3 z, 4 ln u^2
_F_Z2, _F_U2, _F_E2, _F_Z, _F_LNU2 = range(5)


#: features each moment statistic reads
_MOMENT_COLUMNS = {
    "zms": (_F_Z2,),
    "rce": (_F_U2, _F_E2),
    "mv": (_F_U2,),
    "mse": (_F_E2,),
    "rmv": (_F_U2,),
    "rmse": (_F_E2,),
    "mean_z": (_F_Z,),
    "var_z": (_F_Z2, _F_Z),
    "nll": (_F_Z2, _F_LNU2),
    "nll_ref": (_F_LNU2,),
}


def _moment_features(E, u, ncol=5):
    """Return the per-sample moment features, the first ``ncol`` of (z², u², E², z, ln u²).

    Three columns suffice for ZMS, RCE, MV, MSE: fewer bytes per draw in the kernels.
    """
    F = np.empty((E.size, ncol))  # written in place: no (M,) temporaries
    z = np.divide(E, u)
    np.multiply(z, z, out=F[:, _F_Z2])
    np.multiply(u, u, out=F[:, _F_U2])
    np.multiply(E, E, out=F[:, _F_E2])
    if ncol == 5:
        F[:, _F_Z] = z
        np.log(F[:, _F_U2], out=F[:, _F_LNU2])
    return F


def _m_rce(S, n):
    rmv = np.sqrt(S[..., _F_U2] / n)
    return (rmv - np.sqrt(S[..., _F_E2] / n)) / rmv


def _m_var_z(S, n):
    return (S[..., _F_Z2] - S[..., _F_Z] ** 2 / n) / (n - 1)


MOMENT_STATS = {
    "zms": lambda S, n: S[..., _F_Z2] / n,
    "rce": _m_rce,
    "mv": lambda S, n: S[..., _F_U2] / n,
    "mse": lambda S, n: S[..., _F_E2] / n,
    "rmv": lambda S, n: np.sqrt(S[..., _F_U2] / n),
    "rmse": lambda S, n: np.sqrt(S[..., _F_E2] / n),
    "mean_z": lambda S, n: S[..., _F_Z] / n,
    "var_z": _m_var_z,
    "nll": lambda S, n: 0.5 * (S[..., _F_Z2] / n + S[..., _F_LNU2] / n + LN_2PI),
    "nll_ref": lambda S, n: 0.5 * (1.0 + S[..., _F_LNU2] / n + LN_2PI),
}

# ---------------------------------------------------------------- binned statistics
# bin features: 0 u^2, 1 E^2, 2 z^2, 3 Ec (E - mean E), 4 Ec^2, 5 z
_B_U2, _B_E2, _B_Z2, _B_EC, _B_EC2, _B_Z = range(6)


def bin_features(E, u):
    """Per-sample bin features (u², E², z², E − Ē, (E − Ē)², z) over the last axis.

    ``E`` (..., M), ``u`` (M,) or (..., M) -> (..., M, 6). Centring E on its (row) mean
    keeps the one-pass per-bin variance accurate. ``BINNED_STATS[name][0](S, n)`` turns
    per-bin sums of these features into a statistic.
    """
    E = np.asarray(E, dtype=np.float64)
    u = np.broadcast_to(np.asarray(u, dtype=np.float64), E.shape)
    z = E / u
    ec = E - E.mean(axis=-1, keepdims=True)
    return np.stack([u * u, E * E, z * z, ec, ec * ec, z], axis=-1)


def _bin_features(E, u):
    return bin_features(E, u)


def _b_parts(S, n):
    with np.errstate(invalid="ignore", divide="ignore"):
        mv = S[..., _B_U2] / n
        mse = S[..., _B_E2] / n
        var_e = (S[..., _B_EC2] - S[..., _B_EC] ** 2 / n) / (n - 1)
        var_z = (S[..., _B_Z2] - S[..., _B_Z] ** 2 / n) / (n - 1)
        zms = S[..., _B_Z2] / n
    return mv, mse, np.maximum(var_e, 0.0), np.maximum(var_z, 0.0), zms


def _b_ence(S, n):
    mv, mse, _, _, _ = _b_parts(S, n)
    rmv = np.sqrt(mv)
    return np.mean(np.abs(rmv - np.sqrt(mse)) / rmv, axis=-1)


def _b_ence_sd(S, n):
    mv, _, var_e, _, _ = _b_parts(S, n)
    rmv = np.sqrt(mv)
    return np.mean(np.abs(rmv - np.sqrt(var_e)) / rmv, axis=-1)


def _b_uce(S, n):
    mv, mse, _, _, _ = _b_parts(S, n)
    return np.mean(np.abs(mv - mse), axis=-1)


def _b_zmse(S, n):
    zms_j = _b_parts(S, n)[4]
    with np.errstate(divide="ignore"):
        return np.mean(np.abs(np.log(zms_j)), axis=-1)


def _b_zve(S, n):
    var_z = _b_parts(S, n)[3]
    with np.errstate(divide="ignore"):
        return np.exp(np.mean(np.abs(np.log(var_z)), axis=-1))


def _b_lzisd(S, n):
    var_z = _b_parts(S, n)[3]
    with np.errstate(divide="ignore"):
        return 1.0 / np.sqrt(var_z)


def _b_lzms(S, n):
    return _b_parts(S, n)[4]


BINNED_STATS = {
    "ence": (_b_ence, False),
    "ence_sd": (_b_ence_sd, False),
    "uce": (_b_uce, False),
    "zmse": (_b_zmse, False),
    "zve": (_b_zve, False),
    "lzisd": (_b_lzisd, True),  # per-bin vector statistic
    "lzms": (_b_lzms, True),
}

RANK_STATS = ("cc",)

#: long names and predefined reference values (None: must be simulated).
STAT_INFO = {
    "zms": ("mean squared z-score <Z^2>", 1.0),
    "rce": ("relative calibration error (RMV-RMSE)/RMV", 0.0),
    "mv": ("mean variance <u^2>", None),
    "mse": ("mean squared error <E^2>", None),
    "rmv": ("root mean variance", None),
    "rmse": ("root mean squared error", None),
    "mean_z": ("mean z-score", 0.0),
    "var_z": ("variance of z-scores (n-1)", 1.0),
    "nll": ("mean negative log-likelihood (normal)", "nll_ref"),
    "nll_ref": ("reference NLL for calibrated normal errors", None),
    "cc": ("Spearman rank correlation of |E| and uE", None),
    "ence": ("expected normalised calibration error (RMSE per bin)", None),
    "ence_sd": ("expected normalised calibration error (sd(E) per bin)", None),
    "uce": ("uncertainty calibration error", None),
    "zmse": ("mean |ln ZMS| over bins", None),
    "zve": ("z-variance error exp(mean |ln Var(Z)|)", None),
    "lzisd": ("local z inverse standard deviation per bin", 1.0),
    "lzms": ("local ZMS per bin", 1.0),
}

_COND_RE = re.compile(r"^(?P<base>[a-z_]+?)(?:_(?P<cond>uE|X|V))?$")


@dataclass(frozen=True)
class BinningConfig:
    """How binned statistics cut the data (METHODS §3)."""

    n_bins: int = 20
    scheme: str = "equal-count"
    pop_min: int = 30
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
        return self.family == "binned" and BINNED_STATS[self.base][1]


def parse_stat(name: str) -> StatSpec:
    """Parse a statistic name such as ``"zms"``, ``"ence"``, ``"zmse_X"``, ``"lzisd_V"``."""
    key = str(name).strip()
    low = key.lower()
    if low in MOMENT_STATS:
        return StatSpec(low, low, "moment")
    if low in RANK_STATS:
        return StatSpec(low, low, "rank")
    m = _COND_RE.match(key if key[-2:] in ("_X", "_V") or key.endswith("_uE") else low)
    if m and m.group("base") in BINNED_STATS:
        cond = m.group("cond") or "uE"
        base = m.group("base")
        return StatSpec(base if cond == "uE" else f"{base}_{cond}", base, "binned", cond)
    known = sorted(MOMENT_STATS) + list(RANK_STATS) + sorted(BINNED_STATS)
    raise InputError(
        f"unknown statistic {name!r}; known: {', '.join(known)} "
        "(binned ones take a conditioning suffix _X or _V, e.g. zmse_X)"
    )


def moment_sums(E, u):
    """Sum the moment features (z², u², E², z, ln u²) over the last axis: (..., 5).

    Batch route for simulated data sets; ``MOMENT_STATS[name](S, M)`` gives the statistic.
    """
    E = np.asarray(E, dtype=np.float64)
    u = np.broadcast_to(np.asarray(u, dtype=np.float64), E.shape)
    z = E / u
    return np.stack(
        [np.sum(z * z, -1), np.sum(u * u, -1), np.sum(E * E, -1), np.sum(z, -1),
         np.sum(np.log(u * u), -1)],
        axis=-1,
    )


def bin_feature_sums(E_sorted, u_sorted, edges):
    """Per-bin sums of the bin features for data already sorted by the binning variable.

    Batch route (rows = simulated data sets, E_sorted (b, M), u_sorted (M,)): returns
    (b, N, 6) for ``BINNED_STATS[name][0](S, n)`` with ``n = diff(edges)``.
    """
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
        for j in range(N):
            s0 = s1 = s2 = s3 = s4 = s5 = 0.0
            for p in range(edges[j], edges[j + 1]):
                e = E[r, p]
                uu = u[p]
                z = e / uu
                ec = e - mean
                s0 += uu * uu
                s1 += e * e
                s2 += z * z
                s3 += ec
                s4 += ec * ec
                s5 += z
            out[r, j, 0] = s0
            out[r, j, 1] = s1
            out[r, j, 2] = s2
            out[r, j, 3] = s3
            out[r, j, 4] = s4
            out[r, j, 5] = s5


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
    a0 = a1 = a2 = a3 = a4 = a5 = 0.0
    P[0, :] = 0.0
    for p in range(M):
        e = E[p]
        uu = u[p]
        z = e / uu
        ec = e - mean
        a0 += uu * uu
        a1 += e * e
        a2 += z * z
        a3 += ec
        a4 += ec * ec
        a5 += z
        P[p + 1, 0] = a0
        P[p + 1, 1] = a1
        P[p + 1, 2] = a2
        P[p + 1, 3] = a3
        P[p + 1, 4] = a4
        P[p + 1, 5] = a5


def prefix_bin_features(E_sorted, u_sorted) -> np.ndarray:
    """Prefix sums (M+1, 6) of the bin features of data sorted by the binning variable."""
    E = np.ascontiguousarray(E_sorted, dtype=np.float64)
    u = np.ascontiguousarray(u_sorted, dtype=np.float64)
    P = np.empty((E.size + 1, 6))
    _prefix_bin_features(E, u, P)
    return P


# ---------------------------------------------------------------- numba kernels
@numba.njit(nogil=True, cache=True)
def _weighted_bin_sums(counts, order, F, edges, out):
    """Per-bin feature sums of a count-weighted sample re-sorted by the binning variable.

    ``counts`` (b, M) in file order, ``order`` (M,) stable sort order of the binning
    variable, ``F`` (M, 6) bin features in sorted order, ``edges`` (N+1,) rank boundaries
    (edges[-1] == counts[r].sum()); ``out`` (b, N, k) receives the sums. Copies of a
    sample that straddle a bin boundary are split between the two bins, exactly as in
    the sorted resample.
    """
    b, M = counts.shape
    N = edges.shape[0] - 1
    for r in range(b):
        j = 0
        while j < N and edges[j + 1] == edges[j]:
            j += 1
        if j == N:
            continue
        room = edges[j + 1] - edges[j]
        # the 6 bin features accumulate in registers; the rare bin closings write out
        a0 = a1 = a2 = a3 = a4 = a5 = 0.0
        for p in range(M):
            c = counts[r, order[p]]
            if c >= room:
                while c >= room:  # this sample closes bin j
                    out[r, j, 0] = a0 + room * F[p, 0]
                    out[r, j, 1] = a1 + room * F[p, 1]
                    out[r, j, 2] = a2 + room * F[p, 2]
                    out[r, j, 3] = a3 + room * F[p, 3]
                    out[r, j, 4] = a4 + room * F[p, 4]
                    out[r, j, 5] = a5 + room * F[p, 5]
                    a0 = a1 = a2 = a3 = a4 = a5 = 0.0
                    c -= room
                    j += 1
                    while j < N and edges[j + 1] == edges[j]:
                        j += 1
                    if j == N:
                        break
                    room = edges[j + 1] - edges[j]
                if j == N:
                    break
            cf = np.float64(c)
            a0 += cf * F[p, 0]
            a1 += cf * F[p, 1]
            a2 += cf * F[p, 2]
            a3 += cf * F[p, 3]
            a4 += cf * F[p, 4]
            a5 += cf * F[p, 5]
            room -= c


@numba.njit(inline="always")
def _group_ranks(w, order, bounds, m, rank_out):
    """Centred average ranks of count-weighted samples per tie group; returns sum w·rank²."""
    cum = 0.0
    ss = 0.0
    for g in range(bounds.shape[0] - 1):
        W = 0.0
        for p in range(bounds[g], bounds[g + 1]):
            W += w[order[p]]
        rank = cum + (W + 1.0) / 2.0 - m
        cum += W
        ss += W * rank * rank
        for p in range(bounds[g], bounds[g + 1]):
            rank_out[order[p]] = rank
    return ss


@numba.njit(nogil=True, cache=True)
def _spearman_from_counts(counts, ou, gu, oe, ge, out):
    """Spearman CC of count-weighted resamples (average ranks per tie group).

    ``ou``/``oe`` stable sort orders of u and |E|; ``gu``/``ge`` tie-group boundaries in
    those orders (length G+1). A group holding W drawn copies after ``cum`` smaller ones
    gets the average rank cum + (W+1)/2; mean rank is (M+1)/2.
    """
    b, M = counts.shape
    m = (M + 1) / 2.0
    ru = np.empty(M)
    re_ = np.empty(M)
    for r in range(b):
        sxx = _group_ranks(counts[r], ou, gu, m, ru)
        syy = _group_ranks(counts[r], oe, ge, m, re_)
        sxy = 0.0
        for p in range(M):
            i = oe[p]
            sxy += counts[r, i] * ru[i] * re_[i]
        den = sxx * syy  # 0 when u or |E| is constant: NaN, not ZeroDivisionError
        out[r] = sxy / np.sqrt(den) if den > 0.0 else np.nan


#: Work bound (pairs) of the exact CC jackknife; beyond it a systematic subsample of
#: leave-one-out values is used (each repeated to length M, so the sums of the BCa
#: acceleration keep their scale).
RANK_JACK_PAIRS = 4_000_000_000


@numba.njit(nogil=True, cache=True, parallel=True, fastmath=True)
def _spearman_jackknife(ru, re_, u, ae, idx):
    """Leave-one-out Spearman correlations from full-sample average ranks (O(M·len(idx))).

    Removing sample i lowers the rank of every larger value by 1 and of every tied value
    by 1/2; the M-1 remaining ranks have mean M/2. Branch-free inner loop (SIMD).
    ``idx`` lists the samples to leave out.
    """
    M = ru.shape[0]
    out = np.empty(idx.shape[0])
    m = M / 2.0
    for t in numba.prange(idx.shape[0]):
        i = idx[t]
        sxy = 0.0
        sxx = 0.0
        syy = 0.0
        ui = u[i]
        ei = ae[i]
        for j in range(M):
            a = ru[j] - m - 0.5 * ((u[j] > ui) + (u[j] >= ui))
            c = re_[j] - m - 0.5 * ((ae[j] > ei) + (ae[j] >= ei))
            sxy += a * c
            sxx += a * a
            syy += c * c
        # remove the j == i term (it entered with a = ru[i] - m - 0.5, c likewise)
        a = ru[i] - m - 0.5
        c = re_[i] - m - 0.5
        sxy -= a * c
        sxx -= a * a
        syy -= c * c
        den = sxx * syy  # 0 when u or |E| is constant: NaN, not ZeroDivisionError
        out[t] = sxy / np.sqrt(den) if den > 0.0 else np.nan
    return out


def spearman_jackknife(ru, re_, u, ae, *, max_pairs: int = RANK_JACK_PAIRS) -> np.ndarray:
    """Leave-one-out CC values (M,); a systematic subsample when M² > ``max_pairs``."""
    M = ru.shape[0]
    step = max(1, -(-M * M // max_pairs))
    idx = np.arange(0, M, step, dtype=np.int64)
    vals = _spearman_jackknife(ru, re_, u, ae, idx)
    return vals if step == 1 else np.repeat(vals, step)[:M]


# ---------------------------------------------------------------- per-set evaluator
def _tie_bounds(sorted_values):
    """Boundaries (G+1,) of runs of equal values in a sorted array."""
    change = np.flatnonzero(sorted_values[1:] != sorted_values[:-1]) + 1
    return np.r_[0, change, sorted_values.size].astype(np.int64)


def _avg_ranks(bounds):
    """Average ranks (1-based) of sorted positions given tie-group boundaries."""
    W = np.diff(bounds)
    return np.repeat(bounds[:-1] + (W + 1.0) / 2.0, W)


@dataclass
class SetEvaluator:
    """Evaluate a list of statistics on one data set: estimate, replicates, jackknife.

    Parameters
    ----------
    E, u : numpy.ndarray
        Valid errors and uncertainties in file order.
    cond : dict
        Conditioning variables by name (``"uE"`` always; ``"X"``, ``"V"`` when present).
    specs : list of StatSpec
    binning : BinningConfig
    """

    E: np.ndarray
    u: np.ndarray
    specs: list
    binning: BinningConfig = field(default_factory=BinningConfig)
    cond: dict = field(default_factory=dict)

    def __post_init__(self):
        self.E = np.asarray(self.E, dtype=np.float64)
        self.u = np.asarray(self.u, dtype=np.float64)
        self.M = self.E.size
        # the numba kernels index without bounds checks: reject what would make the
        # binning order shorter than M (non-finite values) or mismatched lengths
        if self.E.ndim != 1 or self.u.shape != self.E.shape:
            raise InputError(
                f"E and u must be 1-d of equal length, got shapes {self.E.shape}, {self.u.shape}"
            )
        extra = {}
        for k, v in self.cond.items():
            if v is not None:
                extra[k] = np.asarray(v, dtype=np.float64)
                if extra[k].shape != self.E.shape:
                    raise InputError(f"variable {k!r} has shape {extra[k].shape}, not ({self.M},)")
        for k, v in {"E": self.E, "u": self.u, **extra}.items():
            if not np.isfinite(v).all():
                raise InputError(
                    f"variable {k!r} holds NaN/inf: drop incomplete rows first (uqx.iter_sets)"
                )
        self.cond = {"uE": self.u, **extra}
        for s in self.specs:
            if s.family == "binned" and s.cond not in self.cond:
                raise InputError(f"statistic {s.name!r} needs variable {s.cond!r}, absent here")

    # -- shared preparations
    @cached_property
    def _moment(self):
        return [s for s in self.specs if s.family == "moment"]

    @cached_property
    def _binned_conds(self):
        return sorted({s.cond for s in self.specs if s.family == "binned"})

    @cached_property
    def _features(self):
        cols = {c for s in self._moment for c in _MOMENT_COLUMNS[s.base]}
        return _moment_features(self.E, self.u, 3 if cols <= {_F_Z2, _F_U2, _F_E2} else 5)

    def _bins(self, cond):
        return self._binnings[cond]

    @cached_property
    def _binnings(self):
        cfg = self.binning
        return {
            c: make_bins(self.cond[c], cfg.n_bins, scheme=cfg.scheme, pop_min=cfg.pop_min,
                         log=cfg.log)
            for c in self._binned_conds
        }

    @cached_property
    def _bin_prep(self):
        # sorted bin features: only built for replicates and the jackknife
        out = {}
        for c, bins in self._binnings.items():
            order = bins.order
            F = np.ascontiguousarray(_bin_features(self.E[order], self.u[order]))
            out[c] = (bins, order, F)
        return out

    @cached_property
    def _rank_prep(self):
        b = self._binnings.get("uE")
        ou = b.order if b is not None else np.argsort(self.u, kind="stable")
        ae = np.abs(self.E)
        oe = np.argsort(ae, kind="stable")
        return ou, _tie_bounds(self.u[ou]), oe, _tie_bounds(ae[oe])

    def n_components(self, spec) -> int:
        """Return the number of components of a statistic (bins for vector statistics)."""
        return self._bins(spec.cond).n_bins if spec.vector else 1

    # -- evaluation from counts / sums
    def _from_counts(self, counts, moment_sums=None):
        """Statistics for count rows (b, M) in file order -> {name: (b, K)}.

        ``moment_sums`` (b, 5): feature sums of the same resamples (moment statistics).
        """
        counts = np.ascontiguousarray(np.atleast_2d(counts))
        b = counts.shape[0]
        out = self._from_moment_sums(moment_sums) if self._moment else {}
        for c in self._binned_conds:
            bins, order, F = self._bin_prep[c]
            S = np.zeros((b, bins.n_bins, F.shape[1]))
            _weighted_bin_sums(counts, order, F, np.ascontiguousarray(bins.edges), S)
            n = np.diff(bins.edges).astype(np.float64)
            for s in self.specs:
                if s.family == "binned" and s.cond == c:
                    v = BINNED_STATS[s.base][0](S, n)
                    out[s.name] = v if s.vector else v[:, None]
        if any(s.family == "rank" for s in self.specs):
            ou, gu, oe, ge = self._rank_prep
            cc = np.empty(b)
            _spearman_from_counts(counts, ou, gu, oe, ge, cc)
            out["cc"] = cc[:, None]
        return out

    def _from_moment_sums(self, S):
        if S.shape[-1] < 5:  # feature subset: unused columns are never read
            S = np.concatenate([S, np.zeros(S.shape[:-1] + (5 - S.shape[-1],))], axis=-1)
        return {s.name: MOMENT_STATS[s.base](S, self.M)[:, None] for s in self._moment}

    @property
    def needs_counts(self) -> bool:
        """True when some statistic needs full per-replicate counts (not only sums)."""
        return any(s.family != "moment" for s in self.specs)

    def estimate(self) -> dict:
        """Point estimates t0: {name: (K,)}.

        Same sums as the replicate route (weights all one), computed without the
        bootstrap feature matrices: memory O(M) in sort orders only.
        """
        out = {}
        if self._moment:
            out.update(self._from_moment_sums(moment_sums(self.E, self.u)[None, :]))
        for c, bins in self._binnings.items():
            S = bin_feature_sums(self.E[bins.order], self.u[bins.order], bins.edges)
            n = np.diff(bins.edges).astype(np.float64)
            for s in self.specs:
                if s.family == "binned" and s.cond == c:
                    v = BINNED_STATS[s.base][0](S, n)
                    out[s.name] = v if s.vector else v[:, None]
        if any(s.family == "rank" for s in self.specs):
            cc = np.empty(1)
            _spearman_from_counts(np.ones((1, self.M), dtype=np.int32), *self._rank_prep, cc)
            out["cc"] = cc[:, None]
        return {k: v[0] for k, v in out.items()}

    def moment_partial(self, plan, block: int, group: int):
        """Streamed feature sums of one sample-block group (a task on large data)."""
        return plan.sums_group(block, self._features, group)

    def from_moment_partials(self, partials) -> dict:
        """Moment statistics from group partial sums, added in group order (as ``sums``)."""
        S = partials[0]
        for p in partials[1:]:
            S = S + p
        return self._from_moment_sums(S)

    def replicates(self, plan, block: int, batch_elems: int = 20_000_000) -> dict:
        """Statistics of replicate block ``block`` of a :class:`~uqx.resample.BootstrapPlan`.

        Moment statistics always come from the streamed feature sums of the draws (the
        same draws as the counts), so their values are bitwise the same whichever other
        statistics share the call.
        """
        S = plan.sums(block, self._features) if self._moment else None
        if not self.needs_counts:  # no count matrix at all (memory O(features))
            return self._from_moment_sums(S)
        batch = max(1, batch_elems // max(self.M, 1))
        parts = []
        lo = 0
        for c in plan.iter_counts(block, batch):
            parts.append(self._from_counts(c, None if S is None else S[lo : lo + c.shape[0]]))
            lo += c.shape[0]
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}

    def jackknife(self, chunk_elems: int = 4_000_000) -> dict:
        """Leave-one-out values (M, K) of every statistic (exact, fast routes)."""
        M = self.M
        out = {}
        if self._moment:
            F = self._features
            total = F.sum(axis=0)
            for s in self._moment:
                out[s.name] = np.empty((M, 1))
            step = max(1, chunk_elems // F.shape[1])
            for lo in range(0, M, step):  # row chunks: memory O(chunk), not O(5 M)
                S = total[None, :] - F[lo : lo + step]
                if S.shape[-1] < 5:
                    S = np.concatenate([S, np.zeros((S.shape[0], 5 - S.shape[-1]))], axis=-1)
                for s in self._moment:
                    out[s.name][lo : lo + step, 0] = MOMENT_STATS[s.base](S, M - 1)
        for c in self._binned_conds:
            bins, order, F = self._bin_prep[c]
            P = np.zeros((M + 1, F.shape[1]))
            np.cumsum(F, axis=0, out=P[1:])
            edges = bins.edges
            ej = None
            if bins.scheme == "equal-count":
                try:
                    ej = equal_count_edges(M - 1, bins.n_requested, pop_min=bins.pop_min)
                except InputError:
                    ej = None
            specs = [s for s in self.specs if s.family == "binned" and s.cond == c]
            res = {s.name: [] for s in specs}
            # R's intrvJack (equal-count; it may hold one bin less when the popMin reduction
            # bites at M - 1); per-bin (vector) statistics keep their N components and, like
            # the other schemes, use the same intervals shifted past the removed point.
            groups = {}
            for s in specs:
                use_ej = ej is not None and (ej.size == edges.size or not s.vector)
                groups.setdefault(use_ej, []).append(s)
            for use_ej, group in groups.items():
                ne = ej.size if use_ej else edges.size
                step = max(1, chunk_elems // (ne * F.shape[1]))
                for lo in range(0, M, step):
                    i = np.arange(lo, min(lo + step, M))[:, None]
                    if use_ej:
                        EJ = np.broadcast_to(ej, (i.shape[0], ne))
                    else:
                        EJ = edges[None, :] - (edges[None, :] > i)
                    keep = (EJ <= i)[..., None]
                    Sat = np.where(
                        keep, P[EJ], P[np.minimum(EJ + 1, M)] - F[i[:, 0]][:, None, :]
                    )
                    Sb = np.diff(Sat, axis=1)
                    n = np.diff(EJ, axis=1).astype(np.float64)
                    for s in group:
                        v = BINNED_STATS[s.base][0](Sb, n)
                        res[s.name].append(v if s.vector else v[:, None])
            inv = np.empty(M, dtype=np.int64)
            inv[order] = np.arange(M)  # back to file order
            for s in specs:
                out[s.name] = np.concatenate(res[s.name])[inv]
        if any(s.family == "rank" for s in self.specs):
            ou, gu, oe, ge = self._rank_prep
            ru = np.empty(M)
            re_ = np.empty(M)
            ru[ou] = _avg_ranks(gu)
            re_[oe] = _avg_ranks(ge)
            out["cc"] = spearman_jackknife(ru, re_, self.u, np.abs(self.E))[:, None]
        return out
