"""Joint-normal per-bin sums against full draws: accuracy of the copies, and their cost.

The copies of the null members whose per-bin sums are close to jointly normal are drawn
as those sums (:mod:`uqx.engine.gaussian_sums`, O(bins) a copy). This script measures
what that approximation does to the simulated law of ZMS, RCE and ENCE (20 equal-count
bins of uE, the validation defaults), against full draws of the same member:

* for each member and statistic, ``n`` copies each way (independent streams); at the
  probabilities ``p`` of the tests' tails (0.5, 2.5, 5, 95, 97.5, 99.5 %), the fraction of
  the joint-normal copies below the full copies' p-quantile, minus p (the error in
  probability a p-value would carry), with its Monte-Carlo standard error;
* the wall time of both routes.

The plan is forced (tolerance ``inf``) so that sizes below the default criterion are
measured too: the column ``plan`` says whether the default tolerance
(:data:`uqx.engine.gaussian_sums.GAUSS_TOL`) would use it.

With ``--verdicts K``, the effect on the verdicts: ``uqx.validate`` (ZMS, RCE, ENCE,
n_boot = n_mc = 1000, the full workflow) on K calibrated sets and K sets whose uE is
0.3 % (near the power threshold at 4·10^5 rows) and 10 % too small, of ``--verdict-M``
rows (default 100 000: no plan there, use 400 000), once with the plan (default
tolerance) and once with every copy drawn in full, same data and seed: the rejection
counts of each route, the sets whose verdicts differ, and the largest difference of
their p-values (tests, family-wise adjusted, extrapolation), beside the same difference
between two runs of full draws with different seeds (the Monte-Carlo noise floor).

Run: ``.venv/bin/python benchmarks/bench_gaussian_sums.py [M ...] [--copies n]
[--verdicts K] [--verdict-M M]`` (default M = 20000 200000 1000000, n = 20000; ``M``
none with ``--verdicts`` alone: ``--no-law``).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
from _common import header, section

P = np.array([0.005, 0.025, 0.05, 0.95, 0.975, 0.995])
MEMBERS = (("normal", 6.0, "N"), ("t", 8.0, "T8"), ("t", 20.0, "T20"), ("data", 6.0, "data"))
STATS = ["zms", "rce", "ence"]


def _data(M, seed=7):
    rng = np.random.default_rng(seed)
    u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))
    return u * rng.standard_normal(M), u


def _draws(ds, dist, nu, n, tol, seed, prepared):
    from uqx.engine import gaussian_sums
    from uqx.inference.reference import simulate_reference

    gaussian_sums.GAUSS_TOL = tol
    t, c = time.perf_counter(), time.process_time()
    r = simulate_reference(ds, STATS, dist=dist, nu=nu, n_mc=n, seed=seed, keep_draws=True,
                           prepared=prepared)
    return r["draws"].values[0], time.perf_counter() - t, time.process_time() - c


def _verdicts(K, M):
    """Verdicts with and without the plan on K calibrated and K miscalibrated sets."""
    import uqx
    from uqx.engine import gaussian_sums

    default_tol = gaussian_sums.GAUSS_TOL
    section(f"verdicts with and without the plan: M = {M}, {K} sets of each kind")
    for kind, scale in (("calibrated", 1.0), ("uE 0.3 % too small", 1.003),
                        ("uE 10 % too small", 1.1)):
        counts = {"plan": np.zeros(3, int), "full": np.zeros(3, int)}
        differ, seconds, dp, dp_noise = 0, {"plan": 0.0, "full": 0.0}, [], []
        for k in range(K):
            E, u = _data(M, seed=1000 + k)
            ds = uqx.from_arrays(E * scale, u, name=f"s{k}")
            got = {}
            # "again": full draws with another seed, the noise floor of |Δp| between two
            # independent sets of copies
            for route, tol, seed in (("plan", default_tol, k), ("full", 0.0, k),
                                     ("again", 0.0, k + 10_000)):
                gaussian_sums.GAUSS_TOL = tol
                t = time.perf_counter()
                r = uqx.validate(ds, STATS, bootstrap=1000, copies=1000,
                                 compute=uqx.Compute(seed=seed))
                if route != "again":
                    seconds[route] += time.perf_counter() - t
                got[route] = [str(v) for v in r.verdict.values[0]] + [
                    str(v) for v in r.question_verdict.values[0]]
                if route != "again":
                    counts[route] += np.array([v == "invalid" for v in got[route][:3]])
                got[route + "_p"] = np.concatenate([np.ravel(r[v].values) for v in (
                    "p_value", "p_adjusted", "extrap_p_value") if v in r])
            differ += got["plan"] != got["full"]
            dp.append(np.nanmax(np.abs(got["plan_p"] - got["full_p"])))
            dp_noise.append(np.nanmax(np.abs(got["again_p"] - got["full_p"])))
        gaussian_sums.GAUSS_TOL = default_tol
        print(f"{kind:18s} invalid (zms, rce, ence) with the plan {counts['plan'].tolist()}, "
              f"full draws {counts['full'].tolist()} of {K}; sets whose verdicts differ: "
              f"{differ}; largest |p(plan) - p(full)| over every p-value (per set, then "
              f"median / max): {np.median(dp):.3f} / {np.max(dp):.3f} (full draws with "
              f"another seed: {np.median(dp_noise):.3f} / {np.max(dp_noise):.3f}); wall "
              f"{seconds['plan']:.0f} s vs {seconds['full']:.0f} s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("M", nargs="*", type=int, default=[20000, 200000, 1000000])
    ap.add_argument("--copies", type=int, default=20000)
    ap.add_argument("--verdicts", type=int, default=0)
    ap.add_argument("--verdict-M", type=int, default=100000)
    ap.add_argument("--no-law", action="store_true")
    a = ap.parse_args()
    if a.no_law:
        a.M = []
    import uqx
    from uqx.engine import gaussian_sums
    from uqx.inference.reference import prepare_sets

    default_tol = gaussian_sums.GAUSS_TOL
    header("joint-normal per-bin sums against full draws")
    print(f"load (1 min) before: {os.getloadavg()[0]:.2f}; copies per route: {a.copies}; "
          f"default tolerance {default_tol}")
    for M in a.M:
        E, u = _data(M)
        ds = uqx.from_arrays(E, u, name="bench")
        section(f"M = {M} (20 equal-count bins of uE: {M // 20} points a bin)")
        print(f"{'member':>6} {'stat':>5} {'plan':>5} " +
              " ".join(f"{'p=' + format(p, 'g'):>9}" for p in P) +
              f" {'±se':>7} {'full s':>7} {'gauss s':>8}")
        zs = {}
        for dist, nu, lab in MEMBERS:
            prep = prepare_sets(ds, STATS, pool=dist == "data")
            gaussian_sums.GAUSS_TOL = default_tol
            use = prep[0].gaussian(dist, nu, dist == "data" and prep[0].pool_local is not None)
            full, tf, _ = _draws(ds, dist, nu, a.copies, 0.0, 11, prep)
            gau, tg, _ = _draws(ds, dist, nu, a.copies, np.inf, 12, prep)
            for j, s in enumerate(STATS):
                q = np.quantile(full[j], P)
                err = np.array([np.mean(gau[j] <= x) for x in q]) - P
                se = np.sqrt(2 * 0.025 * 0.975 / a.copies)
                zs.setdefault(lab, []).extend(err / np.sqrt(2 * P * (1 - P) / a.copies))
                print(f"{lab:>6} {s:>5} {'yes' if use is not None else 'no':>5} " +
                      " ".join(f"{e:+9.4f}" for e in err) + f" {se:7.4f}"
                      + (f" {tf:7.1f} {tg:8.2f}" if j == 0 else ""))
        # error / its two-sample Monte-Carlo standard error: about 1 (rms) when the
        # joint-normal copies follow the full draws' law
        print("rms of error/se over the 3 statistics x 6 probabilities: " + ", ".join(
            f"{lab} {np.sqrt(np.mean(np.square(z))):.2f}" for lab, z in zs.items()))
        gaussian_sums.GAUSS_TOL = default_tol
    if a.verdicts:
        _verdicts(a.verdicts, a.verdict_M)
    print(f"load (1 min) after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
