"""Do the printed 95 % intervals cover? ZMS, RCE, ⟨Z⟩, CC and the scale factor.

On calibrated synthetic sets of the error-rates designs (``uqx.sweeps.error_rates``:
u² ~ IG(ν/2, ν/2), errors normal, t_s(6) or t_s(4), u drawn for every set), each set is
validated as a user would (``uqx.validate``, BCa intervals, n_boot = 2000, the verdicts'
1000 copies) and each interval is checked against the calibrated value: ZMS 1, RCE 0,
⟨Z⟩ 0, the factor √ZMS 1, and CC's population value under the design (Spearman's ρ of
|E| and u on 4·10⁶ draws of it: the calibrated CC depends on the law of u and of ε).

Run: ``.venv/bin/python benchmarks/bench_interval_coverage.py [--sets 300] [--seed 5101]
[--cells ig6_normal:500,ig6_normal:2000,...] [--workers 2]`` (about 8 min for the default
nine cells of 300 sets on 2 cores). Prints each cell's coverage with its Wilson
continuity-corrected interval, and how often the interval misses low (it lies below the
calibrated value) or high.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from _common import header, section
from scipy.stats import binomtest, spearmanr

CELLS = ("ig6_normal:500", "ig6_normal:2000", "ig6_t6:500", "ig6_t6:2000", "ig6_t4:500",
         "ig6_t4:2000", "ig20_normal:2000", "ig20_t6:2000", "ig3_normal:2000")
STATS = ("zms", "rce", "mean_z", "cc")


def _block(args):
    """Intervals of sets ``lo..hi`` of one cell: {name: (estimate, low, high)} per set."""
    import uqx
    from uqx.sweeps.error_rates import synthetic_set

    design, M, seed, lo, hi = args
    rows = []
    for i in range(lo, hi):
        E, u, _ = synthetic_set(design, "calibrated", M, seed=seed, index=i, u_per_set=True)
        r = uqx.validate(uqx.from_arrays(E, u, name="s"), [*STATS, "zms_scan"], bootstrap=2000,
                         copies=1000, conditional=False,
                         decision=uqx.Decision(resolution=False),
                         compute=uqx.Compute(seed=seed * 100_000 + i,
                                             scheduler="synchronous")).isel(set=0)
        row = {s: tuple(float(r[v].sel(stat=s)) for v in ("estimate", "ci_low", "ci_high"))
               for s in STATS}
        row["factor"] = tuple(float(r[v]) for v in ("scale_factor", "scale_factor_low",
                                                     "scale_factor_high"))
        rows.append(row)
    return rows


def calibrated_cc(design: str, n: int = 4_000_000) -> float:
    """Spearman's ρ of |E| and u for calibrated data of ``design`` (n draws)."""
    from uqx.sweeps.error_rates import _errors, _uncertainties

    rng = np.random.default_rng(77)
    uk, ek = design.split("_")
    u = _uncertainties(uk, rng, n)
    return float(spearmanr(u, np.abs(u * _errors(ek, rng, n, u))).statistic)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", type=int, default=300)
    p.add_argument("--seed", type=int, default=5101)
    p.add_argument("--cells", default=",".join(CELLS))
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args(argv)
    header("interval coverage")
    print(f"# {a.sets} calibrated sets per cell, seed {a.seed}, BCa 95 %, n_boot = 2000")
    print("\n| design | M | statistic | coverage % | Wilson-cc 95 % | misses low / high |")
    print("|---|---|---|---|---|---|")
    for cell in a.cells.split(","):
        design, M = cell.split(":")
        M = int(M)
        t0 = time.time()
        jobs = [(design, M, a.seed, lo, min(lo + 25, a.sets)) for lo in range(0, a.sets, 25)]
        with ProcessPoolExecutor(a.workers) as ex:
            rows = [r for part in ex.map(_block, jobs) for r in part]
        truth = {"zms": 1.0, "rce": 0.0, "mean_z": 0.0, "cc": calibrated_cc(design),
                 "factor": 1.0}
        for s, t in truth.items():
            lo = np.array([r[s][1] for r in rows])
            hi = np.array([r[s][2] for r in rows])
            k = int(np.sum((lo <= t) & (t <= hi)))
            ci = binomtest(k, len(rows)).proportion_ci(method="wilsoncc")
            print(f"| {design} | {M} | {s} | {100 * k / len(rows):.1f} | "
                  f"[{100 * ci.low:.1f}, {100 * ci.high:.1f}] | "
                  f"{int(np.sum(hi < t))} / {int(np.sum(lo > t))} |", flush=True)
        section(f"{design}, M = {M}: {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
