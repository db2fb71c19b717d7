"""Bytes a row held by the binned bootstrap of :class:`uqx.engine.evaluator.SetEvaluator`.

tracemalloc peak of each step (estimate, one replicate block, jackknife) on M rows of
ZMS + RCE + ENCE, beyond the two input columns (16 bytes a row), and what stays held
between steps (``--gather``: the route of sets beyond ``SORTED_COPY_ROWS``). Run:
``python benchmarks/mem_binned_evaluator.py [--m 1e7] [--n-boot 20] [--gather] [--save F.npz]``.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np

from uqx.engine import evaluator
from uqx.engine.evaluator import SetEvaluator
from uqx.engine.resample import BootstrapPlan
from uqx.engine.statistic import parse_stat


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=float, default=1e7)
    ap.add_argument("--n-boot", type=int, default=20)
    ap.add_argument("--save", default=None, help="write the results to this .npz")
    ap.add_argument("--gather", action="store_true",
                    help="the route of sets beyond SORTED_COPY_ROWS (no sorted copies)")
    a = ap.parse_args()
    M = int(a.m)
    if a.gather:
        evaluator.SORTED_COPY_ROWS = 0
    rng = np.random.default_rng(1)
    u = rng.gamma(4.0, 0.25, M)
    E = u * rng.standard_normal(M)
    specs = [parse_stat(s) for s in ("zms", "rce", "ence")]
    plan = BootstrapPlan(M=M, n_boot=a.n_boot, seed=1, key=0)
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    ev = SetEvaluator(E, u, specs)
    res = {}
    for step, fn in (("estimate", ev.estimate), ("replicates", lambda: ev.replicates(plan, 0)),
                     ("jackknife", ev.jackknife)):
        tracemalloc.reset_peak()
        t = time.perf_counter()
        res[step] = fn()
        dt = time.perf_counter() - t
        cur, peak = tracemalloc.get_traced_memory()
        print(f"{step:10s} peak {(peak - base) / M:6.1f} B/row, held after "
              f"{(cur - base) / M:6.1f} B/row, {dt:.1f} s", flush=True)
    print("overall peak + columns:", f"{(tracemalloc.get_traced_memory()[1] - base) / M + 16:.1f}"
          " B/row")
    if a.save:
        tracemalloc.stop()
        np.savez(a.save, **{f"{k}_{n}": v for k, r in res.items() for n, v in r.items()})
    return res


if __name__ == "__main__":
    main()
