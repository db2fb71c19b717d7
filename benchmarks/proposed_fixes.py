"""Prototype of proposed uqx performance fixes, applied by monkeypatching (``--proposed``).

NOT part of the package and not used by default: ``bench_kernels.py --proposed`` and
``bench_bootstrap.py --proposed`` apply these patches first, so that the gain of each
proposed change can be measured on the same machine in the same conditions. Every patch
mirrors a concrete change proposed for ``uqx/`` (see benchmarks/README.md, "Findings"):

* ``resample._draw_sums``: scalar accumulators for the 5 moment features (bitwise equal);
* ``SetEvaluator.replicates``: moment-only statistics always take the streamed
  ``plan.sums`` route (not only for M > 4 * SAMPLE_BLOCK; same draws, summation order
  changes the last bits);
* ``statistic._count_dot``: branch-free, scalar accumulators (bitwise equal);
* ``statistic._weighted_bin_sums``: branch-free common path, scalar accumulators for the
  6 bin features (bitwise equal for finite features);
* ``statistic._spearman_from_counts``: tie-free fast path per variable (bitwise equal);
* ``statistic._moment_features``: written in place into the (M, 5) output (no temporaries);
* ``SetEvaluator.jackknife``: moment part in row chunks (memory O(chunk), not O(5 M));
* ``SetEvaluator.estimate``: point estimates from one-pass numba kernels over (E, u) and the
  sort orders only, without the bootstrap feature matrices (M x 5, M x 6) and without a
  second stable argsort of uE (last-bit differences);
* ``data.iter_sets``: no copy of a set without padding.

:func:`apply` patches only what the package does not do yet (checked on the source of the
installed functions) and prints which patches it applied, so the file stays usable while the
changes land one by one. Delete it once they all have.
"""
import math

import numba
import numpy as np

import uqx.resample as R
import uqx.statistic as S
from uqx.resample import _bounded, _thresh
from uqx.statistic import MOMENT_STATS

_orig_draw_sums = R._draw_sums


@numba.njit(nogil=True, cache=True)
def _draw_sums5(state, F, n_draws, out):
    n = np.uint64(F.shape[0])
    th = _thresh(n)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    for r in range(n_draws.shape[0]):
        a0 = a1 = a2 = a3 = a4 = 0.0
        for _ in range(n_draws[r]):
            j, s0, s1, s2, s3 = _bounded(s0, s1, s2, s3, n, th)
            a0 += F[j, 0]
            a1 += F[j, 1]
            a2 += F[j, 2]
            a3 += F[j, 3]
            a4 += F[j, 4]
        out[r, 0] += a0
        out[r, 1] += a1
        out[r, 2] += a2
        out[r, 3] += a3
        out[r, 4] += a4
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3


def _draw_sums(state, F, n_draws, out):
    if F.shape[1] == 5:
        return _draw_sums5(state, F, n_draws, out)
    return _orig_draw_sums(state, F, n_draws, out)


@numba.njit(nogil=True, cache=True)
def _count_dot(counts, F, out):
    b, M = counts.shape
    for r in range(b):
        a0 = a1 = a2 = a3 = a4 = 0.0
        for p in range(M):
            c = np.float64(counts[r, p])
            a0 += c * F[p, 0]
            a1 += c * F[p, 1]
            a2 += c * F[p, 2]
            a3 += c * F[p, 3]
            a4 += c * F[p, 4]
        out[r, 0] += a0
        out[r, 1] += a1
        out[r, 2] += a2
        out[r, 3] += a3
        out[r, 4] += a4


@numba.njit(nogil=True, cache=True)
def _weighted_bin_sums(counts, order, F, edges, out):
    b, M = counts.shape
    N = edges.shape[0] - 1
    for r in range(b):
        j = 0
        while j < N and edges[j + 1] == edges[j]:
            j += 1
        if j == N:
            continue
        room = edges[j + 1] - edges[j]
        a0 = a1 = a2 = a3 = a4 = a5 = 0.0
        for p in range(M):
            c = counts[r, order[p]]
            if c >= room:
                while c >= room:
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


@numba.njit(nogil=True, cache=True)
def _spearman_from_counts(counts, ou, gu, oe, ge, out):
    b, M = counts.shape
    m = (M + 1) / 2.0
    ru = np.empty(M)
    for r in range(b):
        cum = 0.0
        sxx = 0.0
        if gu.shape[0] - 1 == M:
            for p in range(M):
                i = ou[p]
                W = np.float64(counts[r, i])
                rank = cum + (W + 1.0) / 2.0 - m
                cum += W
                sxx += W * rank * rank
                ru[i] = rank
        else:
            for g in range(gu.shape[0] - 1):
                W = 0.0
                for p in range(gu[g], gu[g + 1]):
                    W += counts[r, ou[p]]
                rank = cum + (W + 1.0) / 2.0 - m
                cum += W
                sxx += W * rank * rank
                for p in range(gu[g], gu[g + 1]):
                    ru[ou[p]] = rank
        cum = 0.0
        syy = 0.0
        sxy = 0.0
        if ge.shape[0] - 1 == M:
            for p in range(M):
                i = oe[p]
                W = np.float64(counts[r, i])
                rank = cum + (W + 1.0) / 2.0 - m
                cum += W
                syy += W * rank * rank
                sxy += W * ru[i] * rank
        else:
            for g in range(ge.shape[0] - 1):
                W = 0.0
                for p in range(ge[g], ge[g + 1]):
                    W += counts[r, oe[p]]
                rank = cum + (W + 1.0) / 2.0 - m
                cum += W
                syy += W * rank * rank
                for p in range(ge[g], ge[g + 1]):
                    i = oe[p]
                    sxy += counts[r, i] * ru[i] * rank
        den = sxx * syy  # 0 when u or |E| is constant: NaN, as upstream
        out[r] = sxy / np.sqrt(den) if den > 0.0 else np.nan


def _moment_features(E, u):
    F = np.empty((E.size, 5))
    np.divide(E, u, out=F[:, 3])
    np.multiply(F[:, 3], F[:, 3], out=F[:, 0])
    np.multiply(u, u, out=F[:, 1])
    np.multiply(E, E, out=F[:, 2])
    np.log(F[:, 1], out=F[:, 4])
    return F


def replicates(self, plan, block, batch_elems=20_000_000):
    if not self.needs_counts:  # moments only: stream the draws, whatever M
        Sm = plan.sums(block, self._features)
        return {s.name: MOMENT_STATS[s.base](Sm, self.M)[:, None] for s in self._moment}
    batch = max(1, batch_elems // max(self.M, 1))
    parts = [self._from_counts(c) for c in plan.iter_counts(block, batch)]
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


_orig_jack = S.SetEvaluator.jackknife


def jackknife(self, chunk_elems=4_000_000):
    """moment part in row chunks (memory O(chunk)); the rest unchanged."""
    import copy

    moment = self._moment
    other = copy.copy(self)
    other.__dict__["_moment"] = []
    out = _orig_jack(other, chunk_elems)
    if moment:
        F = self._features
        tot = F.sum(axis=0)
        M = self.M
        res = {s.name: np.empty((M, 1)) for s in moment}
        step = max(1, chunk_elems // F.shape[1])
        for lo in range(0, M, step):
            Sm = tot[None, :] - F[lo:lo + step]
            for s in moment:
                res[s.name][lo:lo + step, 0] = MOMENT_STATS[s.base](Sm, M - 1)
        out.update(res)
    return out


# ---------------------------------------------------------------- lean point estimates
@numba.njit(nogil=True, cache=True)
def _moment_sums_1pass(E, u):
    s = np.zeros(5)
    for i in range(E.shape[0]):
        z = E[i] / u[i]
        uu = u[i] * u[i]
        s[0] += z * z
        s[1] += uu
        s[2] += E[i] * E[i]
        s[3] += z
        s[4] += math.log(uu)
    return s


@numba.njit(nogil=True, cache=True)
def _bin_sums_gather(E, u, order, edges):
    N = edges.shape[0] - 1
    mean = 0.0
    for p in range(order.shape[0]):
        mean += E[order[p]]
    mean /= order.shape[0]
    out = np.zeros((N, 6))
    for j in range(N):
        s0 = s1 = s2 = s3 = s4 = s5 = 0.0
        for p in range(edges[j], edges[j + 1]):
            i = order[p]
            e = E[i]
            uu = u[i]
            z = e / uu
            ec = e - mean
            s0 += uu * uu
            s1 += e * e
            s2 += z * z
            s3 += ec
            s4 += ec * ec
            s5 += z
        out[j, 0] = s0
        out[j, 1] = s1
        out[j, 2] = s2
        out[j, 3] = s3
        out[j, 4] = s4
        out[j, 5] = s5
    return out


@numba.njit(nogil=True, cache=True)
def _spearman_orders(u, ou, ae, oe):
    M = ou.shape[0]
    m = (M + 1) / 2.0
    ru = np.empty(M)
    sxx = 0.0
    p = 0
    while p < M:
        q = p + 1
        while q < M and u[ou[q]] == u[ou[p]]:
            q += 1
        r = (p + 1 + q) / 2.0 - m
        for k in range(p, q):
            ru[ou[k]] = r
            sxx += r * r
        p = q
    syy = 0.0
    sxy = 0.0
    p = 0
    while p < M:
        q = p + 1
        while q < M and ae[oe[q]] == ae[oe[p]]:
            q += 1
        r = (p + 1 + q) / 2.0 - m
        for k in range(p, q):
            syy += r * r
            sxy += r * ru[oe[k]]
        p = q
    den = sxx * syy
    return sxy / math.sqrt(den) if den > 0.0 else np.nan


def estimate(self):
    """t0 without the bootstrap feature matrices (O(M) memory in index arrays only)."""
    from uqx.binning import make_bins
    from uqx.statistic import BINNED_STATS

    out = {}
    if self._moment:
        Sm = _moment_sums_1pass(self.E, self.u)
        for s in self._moment:
            out[s.name] = np.atleast_1d(MOMENT_STATS[s.base](Sm, self.M))
    orders = {}
    cfg = self.binning
    for c in self._binned_conds:
        if "_bin_prep" in self.__dict__:
            bins = self.__dict__["_bin_prep"][c][0]
        else:
            bins = make_bins(self.cond[c], cfg.n_bins, scheme=cfg.scheme,
                             pop_min=cfg.pop_min, log=cfg.log)
        orders[c] = np.asarray(bins.order)
        Sb = _bin_sums_gather(self.E, self.u, orders[c], np.asarray(bins.edges))
        n = np.diff(bins.edges).astype(np.float64)
        for s in self.specs:
            if s.family == "binned" and s.cond == c:
                out[s.name] = np.atleast_1d(BINNED_STATS[s.base][0](Sb, n))
    if any(s.family == "rank" for s in self.specs):
        ou = orders.get("uE")
        if ou is None:
            ou = np.argsort(self.u, kind="stable")
        ae = np.abs(self.E)
        oe = np.argsort(ae, kind="stable")
        out["cc"] = np.atleast_1d(_spearman_orders(self.u, ou, ae, oe))
    return out


def iter_sets(ds):
    """As uqx.data.iter_sets, without copies when a set has no padding."""
    from uqx.data import SetData, as_stacked

    ds = as_stacked(ds)
    Ea, Ua = ds["E"].values, ds["uE"].values
    for i, name in enumerate(ds["set"].values):
        E, uE = Ea[i], Ua[i]
        valid = np.isfinite(E) & np.isfinite(uE)
        allv = bool(valid.all())
        extra = {}
        for key in ("X", "V"):
            if key in ds:
                arr = ds[key].values[i] if allv else ds[key].values[i][valid]
                extra[key] = arr if np.isfinite(arr).all() else None
        yield SetData(str(name), E if allv else E[valid], uE if allv else uE[valid], **extra)


def _src(obj) -> str:
    import inspect

    try:
        return inspect.getsource(getattr(obj, "py_func", obj))
    except (OSError, TypeError):
        return ""


def apply() -> list[str]:
    """Apply the patches the installed package still needs; return and print their names."""
    import uqx.bootstrap as B
    import uqx.data as Dt
    import uqx.describe as D

    done, skipped = [], []

    def patch(name, needed, fn):
        if needed:
            fn()
            done.append(name)
        else:
            skipped.append(name)

    def set_(mod, attr, val):
        return lambda: setattr(mod, attr, val)

    rep_src = _src(S.SetEvaluator.replicates)
    patch("resample._draw_sums (k=5 scalar accumulators)",
          "_draw_sums5" not in vars(R), set_(R, "_draw_sums", _draw_sums))
    patch("SetEvaluator.replicates (moments always streamed)",
          "4 * SAMPLE_BLOCK" in rep_src, set_(S.SetEvaluator, "replicates", replicates))
    patch("statistic._count_dot (branch-free)",
          hasattr(S, "_count_dot") and "if c != 0" in _src(S._count_dot),
          set_(S, "_count_dot", _count_dot))
    patch("statistic._weighted_bin_sums (branch-free, k=6 scalars)",
          "acc[q]" in _src(S._weighted_bin_sums),
          set_(S, "_weighted_bin_sums", _weighted_bin_sums))
    patch("statistic._spearman_from_counts (tie-free fast path)",
          "== M" not in _src(S._spearman_from_counts),
          set_(S, "_spearman_from_counts", _spearman_from_counts))
    patch("statistic._moment_features (in place)",
          "column_stack" in _src(S._moment_features),
          set_(S, "_moment_features", _moment_features))
    patch("SetEvaluator.jackknife (moment part in chunks)",
          "F.sum(axis=0)[None, :] - F" in _src(S.SetEvaluator.jackknife),
          set_(S.SetEvaluator, "jackknife", jackknife))
    patch("SetEvaluator.estimate (lean, no bootstrap matrices)",
          "_from_counts" in _src(S.SetEvaluator.estimate),
          set_(S.SetEvaluator, "estimate", estimate))

    def _iter():
        B.iter_sets = iter_sets
        D.iter_sets = iter_sets

    patch("data.iter_sets (no copy without padding)", "E[valid]" in _src(Dt.iter_sets), _iter)
    print("# proposed_fixes applied: " + ("; ".join(done) or "none"))
    print("# proposed_fixes already upstream (not applied): " + ("; ".join(skipped) or "none"))
    return done
