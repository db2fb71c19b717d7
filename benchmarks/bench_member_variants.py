"""What raising the two remaining `valid` rates of issue 21 would cost: rules measured, not adopted.

Two size targets of the report grid are missed at M = 2000 (README, "Missed"): t_s(4)
errors (ZMSE, ZVE and the consistency headline `valid` on 85–89.5 % of calibrated sets)
and errors whose shape changes with uE (CC 78–83.5 %). In both, a data-matched member
of the null family rejects a calibrated sample that missed its rare extremes. This
script runs the rule of this version and three variants of its fitted member t_s(ν̂) on
the same sets, so that the trade-off is measured in one run:

``rule``
    the rule of this version;
``heavy``
    the fitted member drawn at the heavy end of the one-standard-error set for ν
    (:func:`uqx.engine.null_shape.nu_heavy_bound`) for *every* statistic, not only on the
    light side of the two-sided ones: wider nulls where a sample looks lighter than it is;
``heavy05``
    the same at half a standard error;
``local``
    the fitted member always drawn at one ν per window of uE
    (:func:`uqx.engine.null_shape.nu_windows` never keeping the one ν̂): a null whose
    shape follows the windows, for CC on errors whose shape changes with uE.

Cells: the tuning draws (seed 31, never reported in the tables), M = 2000; calibrated
sets of ig3_t4, ig6_t4, ig6_mixed, ig3_mixed, ig6_t6 and ig6_normal (``--sets``, 200 by
default) and the power scenarios scale0.9, scale1.1, gamma0.5 and top0.6 with t_s(6)
errors (``--power-sets``, 60). The sets are those of the error-rates study
(:func:`uqx.sweeps.error_rates.synthetic_set`), validated as its kernel does
(n_boot = 1000, n_mc = 500, every statistic, the verdicts only).

The variants replace functions of uqx for the duration of one cell, inside a worker
process (nothing of it reaches the package): they are studies, not options.

Run from the repository root (about 20 min on 2 cores)::

    .venv/bin/python benchmarks/bench_member_variants.py [--sets 200] [--power-sets 60]
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import resource
import time

import numpy as np
from _common import header, section

VARIANTS = ("rule", "heavy", "heavy05", "local")
CALIBRATED = ("ig3_t4", "ig6_t4", "ig6_mixed", "ig3_mixed", "ig6_t6", "ig6_normal")
POWER = ("scale0.9", "scale1.1", "gamma0.5", "top0.6")
SHOWN = ("zms", "cc", "ence", "zmse", "zve", "consistency", "any")
SEED = 31
M = 2000


@contextlib.contextmanager
def variant(name):
    """Swap the fitted member of the rule for the variant ``name`` (restored on exit)."""
    import uqx.engine.null_shape as ns
    import uqx.workflow.steps as validation

    saved = (validation.null_family, ns.nu_windows)
    if name in ("heavy", "heavy05"):
        z = 1.0 if name == "heavy" else 0.5
        base = validation.null_family

        def null_family(nu, tails, sets=None, M=None):
            members, _, nu_two, kappa, plausible = base(nu, tails, sets, M=M)
            sizes = np.array([sd.M for sd in sets], dtype=np.float64)
            heavy = ns.nu_on_grid(ns.nu_heavy_bound(kappa, sizes, z=z))
            members = [(d, heavy if lab == "fit" else v, lab) for d, v, lab in members]
            return members, heavy, nu_two, kappa, plausible

        validation.null_family = null_family
    elif name == "local":
        def nu_windows(kappa_windows, n_windows, nu_hat, *, nu_min=ns.NU_MIN):
            k = np.asarray(kappa_windows, dtype=np.float64)
            if k.size < 2:
                return None
            k = np.where(np.isfinite(k), k, ns._KAPPA_NORMAL)
            return np.asarray(ns.nu_on_grid(ns.t_nu_from_tails(k, nu_min=nu_min),
                                            nu_min=nu_min), dtype=np.float64)

        ns.nu_windows = nu_windows
    try:
        yield
    finally:
        validation.null_family, ns.nu_windows = saved


def cell(args):
    """Verdict codes of the sets of one (variant, design, scenario) cell.

    The study's own kernel (:func:`uqx.sweeps.error_rates.kernel`), block after block:
    the same sets and settings as the error-rates study.
    """
    name, design, scenario, n = args
    from uqx.sweeps.error_rates import BLOCK, kernel

    params = {"seed": SEED, "n_boot": 1000, "n_mc": 500, "power_M": [M],
              "power_designs": [design]}
    where = {"design": design, "M": M, "scenario": scenario}
    t0 = time.perf_counter()
    with variant(name):
        codes = np.concatenate([
            kernel(where, b, min(BLOCK, n - b * BLOCK), params, None)["verdict"]
            for b in range(-(-n // BLOCK))])
    return name, design, scenario, codes, time.perf_counter() - t0


def main(argv=None):
    from uqx.inference.zeta import binomial_ci
    from uqx.sweeps.error_rates import CODES, TESTS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", type=int, default=200)
    ap.add_argument("--power-sets", type=int, default=60)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args(argv)
    header("fitted-member variants: t_s(4) and mixed-shape `valid` against power")
    tasks = [(v, d, "calibrated", args.sets) for v in args.variants for d in CALIBRATED]
    tasks += [(v, "ig6_t6", s, args.power_sets) for v in args.variants for s in POWER]
    t0, c0 = time.perf_counter(), time.process_time()
    with mp.get_context("spawn").Pool(args.workers, maxtasksperchild=1) as pool:
        out = pool.map(cell, tasks, chunksize=1)
    wall = time.perf_counter() - t0
    child = sum(r[4] for r in out)
    valid, invalid = CODES.index("valid"), CODES.index("invalid")

    def row(codes, k, code, lower):
        hit = int(np.sum(codes[:, k] == code))
        lo, hi = binomial_ci(hit, codes.shape[0])
        return f"{hit / codes.shape[0]:.3f} [{lo if lower else hi:.3f}]"

    for title, scen, code, lower in (
            ("calibrated: `valid` rate [Wilson lower 95 %] (`any`: invalid somewhere, upper)",
             "calibrated", valid, True),
            ("t_s(6) errors, miscalibrated: `invalid` rate [Wilson lower 95 %]", None,
             invalid, True)):
        section(title)
        print(f"| variant | cell | {' | '.join(SHOWN)} |")
        print("|---|---|" + "---|" * len(SHOWN))
        for name, design, scenario, codes, _ in out:
            if (scen == "calibrated") != (scenario == "calibrated"):
                continue
            cells = []
            for t in SHOWN:
                k = TESTS.index(t)
                if t == "any":  # any: 1.0 = invalid somewhere
                    hit = int(np.sum(codes[:, k] == 1.0))
                    lo, hi = binomial_ci(hit, codes.shape[0])
                    cells.append(f"{hit / codes.shape[0]:.3f} [{hi if scen else lo:.3f}]")
                else:
                    cells.append(row(codes, k, code, lower))
            label = design if scenario == "calibrated" else scenario
            print(f"| {name} | {label} | {' | '.join(cells)} |")
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = kids.ru_utime + kids.ru_stime + time.process_time() - c0
    print(f"\nwall {wall / 60:.1f} min with {args.workers} worker processes (validate() in the "
          f"workers {child / 60:.1f} min); CPU {cpu / 60:.1f} min; 1-minute load at the end "
          f"{os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
