"""Resolution of the binned statistics under the alternatives of consistency: search vs grid.

The resolution of a binned statistic on uE is the smallest factor f (88 factors from
1 to 3) at which its test rejects 80 % of the calibrated copies turned into copies of
"uE too small by f in the top 10 % of uE" (:mod:`uqx.engine.resolution`). Measured in
one run, on the same copies (``simulate_reference``, n_mc copies per set, 20 bins):

* **baseline**, the route of earlier versions: every statistic at all 88 factors for
  every copy, then the first factor whose power reaches 80 %;
* **search**: :class:`uqx.engine.alternative.BinnedCopies` computes the statistics
  only at the factors :func:`uqx.engine.resolution.alternative_resolution` reads
  (:func:`~uqx.engine.resolution.first_hit`: every 8th factor, and between two only
  where a copy rejected in between could be).

Both must give the same factor for every (set, statistic, level); the script says so
and prints the wall and CPU times, their ratio, the factor evaluations of each route,
and the load average. Levels: 0.05 (the statistic's own test) and 0.01 (a route read
at the headline's level).

The same for the spread alternative u = c·uE^γ (:func:`uqx.engine.resolution.spread_resolution`):
the whole grids of γ (56 below 1, 64 above) for every statistic against the search
(every 6th exponent, then those before the first reaching 80 %), which must find the
same exponents.

Run from the repository root::

    .venv/bin/python benchmarks/bench_resolution.py [--sets 10] [--M 2000] [--n-mc 500]
"""

from __future__ import annotations

import argparse
import time
from functools import partial

import numpy as np
from _common import header, section

import uqx
from uqx.engine.alternative import BinnedCopies
from uqx.engine.resolution import (
    POWER,
    SPREAD_DOWN,
    SPREAD_UP,
    alternative_resolution,
    spread_resolution,
)
from uqx.engine.statistic import STATISTICS
from uqx.inference.reference import simulate_reference

STATS = ("ence", "zmse", "zmse_max", "zms_scan", "zve")
LEVELS = (0.05, 0.01)


def _sets(n, M, seed):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        u = np.sqrt(1 / rng.gamma(3, 1 / 3, M))
        eps = rng.standard_t(6, M) / np.sqrt(1.5)
        out.append(uqx.from_arrays(u * eps, u, name=f"s{k}"))
    return uqx.stack(out)


def _top(r, i, n):
    top = BinnedCopies(r["top_factor"].values, n)
    nb = int(r["top_n_bins"].values[i])
    top.add(0, 0, r["top_sums"].values[i, :n, :nb], r["top_u2"].values[i, :nb],
            r["top_count"].values[i, :nb], int(r["top_M"].values[i]),
            r["top_bins"].values[i, :nb], dict(enumerate(STATS)))
    return top


def baseline(r, n):
    """Every statistic at every factor, then the first factor reaching the power."""
    out = {}
    for i in range(r.sizes["set"]):
        top = _top(r, i, n)
        F = top.factors.size
        for j in range(len(STATS)):
            alt = top.values(0, j, 0)(np.arange(F))  # (copy, factor)
            t = np.sort(r["draws"].values[i, j])
            t = t[np.isfinite(t)]
            count = t.size - np.searchsorted(t, alt, side="left")  # copies >= alt
            for a in LEVELS:  # the earlier versions' alternative_resolution
                pw = np.mean(np.isfinite(alt) & ((1 + count) / (1 + t.size) < a), axis=0)
                hit = np.flatnonzero(pw >= POWER)
                out[i, j, a] = float(top.factors[hit[0]]) if hit.size else np.nan
    return out, r.sizes["set"] * F


def search(r, n):
    """BinnedCopies and the search of alternative_resolution."""
    out, evals = {}, 0
    for i in range(r.sizes["set"]):
        top = _top(r, i, n)
        for j, s in enumerate(STATS):
            for a in LEVELS:
                out[i, j, a] = alternative_resolution(
                    r["draws"].values[i, j], top.values(0, j, 0), top.factors, alpha=a,
                    quasi_convex=STATISTICS[s].quasi_convex)
        evals += len(top._cache)
    return out, evals


def spread_baseline(r, n):
    """Every statistic at every exponent of both grids, then the first reaching the power."""
    out = {}
    for i in range(r.sizes["set"]):
        top = _top(r, i, n)
        for j in range(len(STATS)):
            t = np.sort(r["draws"].values[i, j])
            t = t[np.isfinite(t)]
            alts = [top.spread(0, j, 0, g) for g in (SPREAD_DOWN, SPREAD_UP)]
            for a in LEVELS:
                pair = []
                for g, alt in zip((SPREAD_DOWN, SPREAD_UP), alts, strict=True):
                    count = t.size - np.searchsorted(t, alt, side="left")
                    pw = np.mean(np.isfinite(alt) & ((1 + count) / (1 + t.size) < a), axis=0)
                    hit = np.flatnonzero(pw >= POWER)
                    pair.append(float(g[hit[0]]) if hit.size else np.nan)
                out[i, j, a] = tuple(pair)
    return out, r.sizes["set"] * (SPREAD_DOWN.size + SPREAD_UP.size)


def spread_search(r, n):
    """BinnedCopies.spread and the search of spread_resolution."""
    out, evals = {}, 0
    for i in range(r.sizes["set"]):
        top = _top(r, i, n)
        for j in range(len(STATS)):
            for a in LEVELS:
                out[i, j, a] = spread_resolution(
                    [r["draws"].values[i, j]], [partial(top.spread, 0, j, 0)],
                    alpha=a)
        evals += sum(1 for k in top._cache if k[2] == "spread")
    return out, evals


def _timed(fn, *args):
    w, c = time.perf_counter(), time.process_time()
    out = fn(*args)
    return out, time.perf_counter() - w, time.process_time() - c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=10)
    ap.add_argument("--M", type=int, default=2000)
    ap.add_argument("--n-mc", type=int, default=500)
    args = ap.parse_args(argv)
    header("resolution under the local alternative: search vs whole grid")
    ds = _sets(args.sets, args.M, 5)
    r = simulate_reference(ds, list(STATS), dist="normal", n_mc=args.n_mc, seed=5,
                           keep_draws=True, scheduler="synchronous")
    n = int(r["top_n_copies"].values[0])
    baseline(r.isel(set=[0]), n)  # warm both routes
    search(r.isel(set=[0]), n)
    section(f"{args.sets} sets of M = {args.M}, t_s(6) errors, {n} copies, "
            f"{len(STATS)} statistics x {len(LEVELS)} levels")
    (want, e0), w0, c0 = _timed(baseline, r, n)
    (got, e1), w1, c1 = _timed(search, r, n)
    same = all((want[k] == got[k]) or (np.isnan(want[k]) and np.isnan(got[k])) for k in want)
    found = sum(np.isfinite(v) for v in want.values())
    print(f"baseline (88 factors, every statistic): {w0:.3f} s wall, {c0:.3f} s CPU, "
          f"{e0} factor evaluations")
    print(f"search (BinnedCopies + first_hit):    {w1:.3f} s wall, {c1:.3f} s CPU, "
          f"{e1} factor evaluations")
    print(f"ratio baseline / search: {w0 / w1:.2f} wall, {c0 / max(c1, 1e-9):.2f} CPU; "
          f"same factor for all {len(want)} (set, statistic, level): {same} "
          f"({found} within the grid)")
    section("spread alternative u = c*uE^gamma: search vs whole grids, same copies")
    spread_baseline(r.isel(set=[0]), n)
    spread_search(r.isel(set=[0]), n)
    (swant, e2), w2, c2 = _timed(spread_baseline, r, n)
    (sgot, e3), w3, c3 = _timed(spread_search, r, n)
    ssame = all(np.array_equal(swant[k], sgot[k], equal_nan=True) for k in swant)
    print(f"whole grids (120 exponents, every statistic): {w2:.3f} s wall, {c2:.3f} s CPU, "
          f"{e2} exponent evaluations")
    print(f"search (every 6th, then before the first hit): {w3:.3f} s wall, {c3:.3f} s CPU, "
          f"{e3} exponent evaluations")
    print(f"ratio whole / search: {w2 / w3:.2f} wall, {c2 / max(c3, 1e-9):.2f} CPU; "
          f"same exponents for all {len(swant)} (set, statistic, level): {ssame}")
    return 0 if same and ssame else 1


if __name__ == "__main__":
    raise SystemExit(main())
