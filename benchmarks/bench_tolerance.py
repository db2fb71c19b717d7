"""Rates of the equivalence claim ``validate(decision=Decision(tolerance=T))`` on known sets.

``scale_within_tolerance`` says that the data show f = √ZMS inside [1/(1 + T), 1 + T]:
two one-sided Monte-Carlo tests of the edges at 5 % each, under every member of the
null family (:func:`uqx.workflow.recalibration.tolerance_step`). Its false claims are
measured on sets whose true factor sits on an edge of the band (E = f·uE·ε with
f = 1 + T or 1/(1 + T): at most 5 % nominal) and its power on calibrated sets (f = 1),
for several error shapes and sizes; each cell prints the rate and its Wilson-cc 95 %
limit (upper for false claims, lower for power).

uE is drawn anew for every set (u² ~ IG(3, 3)); ε normal or t_s(ν) of unit variance.
ZMS only, no conditional routes; n_mc = 1000 as in the error-rates study (the defaults'
test copies).

Run from the repository root::

    .venv/bin/python benchmarks/bench_tolerance.py [--sets 400] [--tolerance 0.1] [--seed 61]
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import header, section

import uqx
from uqx.inference.zeta import binomial_ci

N_MC = 1000  # the verdicts' test copies of the defaults (N_TEST)
SHAPES = {"normal": None, "t6": 6.0, "t4": 4.0}


def _sets(n, M, f, nu, rng):
    out = []
    for k in range(n):
        u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))
        eps = rng.standard_normal(M) if nu is None else (
            rng.standard_t(nu, M) / np.sqrt(nu / (nu - 2.0)))
        out.append(uqx.from_arrays(f * u * eps, u, name=f"s{k}"))
    return uqx.stack(out)


def rate(n, M, f, nu, tolerance, seed):
    """Fraction of n sets with the claim, and the number of sets with a finite interval."""
    rng = np.random.default_rng(seed)
    res = uqx.validate(_sets(n, M, f, nu, rng), "zms", bootstrap=200, copies=N_MC,
                       conditional=False,
                       decision=uqx.Decision(resolution=False, tolerance=tolerance),
                       compute=uqx.Compute(seed=seed))
    w = res["scale_within_tolerance"].values
    return float(np.nanmean(w)), int(np.isfinite(w).sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=400)
    ap.add_argument("--tolerance", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=61)
    ap.add_argument("--M", type=int, nargs="+", default=[500, 2000])
    args = ap.parse_args(argv)
    T = args.tolerance
    header(f"equivalence claim on the scale of uE, tolerance {T}")
    cases = [("edge 1+T (false claim)", 1.0 + T, "upper"),
             ("edge 1/(1+T) (false claim)", 1.0 / (1.0 + T), "upper"),
             ("calibrated f = 1 (power)", 1.0, "lower")]
    section(f"{args.sets} sets per cell, n_mc = {N_MC}, seed {args.seed}")
    print("| case | M | " + " | ".join(SHAPES) + " |")
    print("|---|---|" + "---|" * len(SHAPES))
    t0 = time.perf_counter()
    for label, f, side in cases:
        for M in args.M:
            cells = []
            for s, nu in enumerate(SHAPES.values()):
                r, n = rate(args.sets, M, f, nu, T, args.seed + 7 * s + M)
                lo, hi = (float(v) for v in binomial_ci(round(r * n), n))
                cells.append(f"{r:.3f} [{hi if side == 'upper' else lo:.3f}]")
            print(f"| {label} | {M} | " + " | ".join(cells) + " |")
    print(f"\n{time.perf_counter() - t0:.1f} s wall")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
