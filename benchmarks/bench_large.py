"""Large-data validation: time and peak memory of ``uqx.validate`` on 2·10^6 rows.

Target (issue 13): ZMS + RCE + ENCE, n_boot = 1000, n_mc = 1000, the full workflow
(tailedness, bootstrap, simulated references under the four null members N, t_s(6),
t_s(ν̂) and the resampled data, the conditional routes): wall time ≤ 60 s and peak
memory ≤ 1 GB on the 2-core reference machine. Previous figure: 167–182 s and 1.1 GB
(2026-11-23, before the four-member null family doubled the simulation work and before
the simulations moved to the numba generators).

Each run is a fresh child process, so the peak RSS includes the data, numba compilation
and imports. For comparison the same child measures the data alone (generation, no
validation), and the **floor**: the CPU time of the draws that no implementation can
avoid, measured in the same run (every simulated value drawn once, ``uqx.engine.generators``
filling an array, 4 members x ``min(n_mc, 1000)`` copies of M values, plus the
bootstrap's n_boot x M bounded integers), printed in CPU seconds and divided by the 2
cores. The machine is shared: the verdict is taken on the child's CPU time divided by
the cores when the 1-minute load says that others competed (load above ~2), and both
figures are printed.

Run: ``.venv/bin/python benchmarks/bench_large.py [M] [n_boot] [n_mc]``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from _common import ROOT, header, section

TARGET_S, TARGET_MIB = 60.0, 1024.0
PREVIOUS = "167-182 s, 1.1 GB (2 members per test, NumPy PCG64 draws; 2026-11-23)"

CHILD = r"""
import json, os, resource, sys, time
import numpy as np
M, n_boot, n_mc, run = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
rng = np.random.default_rng(7)
u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))
E = u * rng.standard_normal(M)
t = time.perf_counter()
c = time.process_time()
out = {"M": M}
if run:
    import uqx
    ds = uqx.from_arrays(E, u, name="large")
    res = uqx.validate(ds, ["zms", "rce", "ence"], n_boot=n_boot, n_mc=n_mc, seed=1)
    out["verdicts"] = {str(s): str(v) for s, v in zip(res.stat.values, res.verdict.values[0])}
    out["ence_ci"] = [res.ci_low.sel(stat="ence").values.item(),
                      res.ci_high.sel(stat="ence").values.item()]
    out["cond"] = [str(v) for v in res.cond_verdict.values[0]]
    out["nu_fit"] = float(res.nu_fit.values[0])
out["seconds"] = time.perf_counter() - t
out["cpu_seconds"] = time.process_time() - c
out["load"] = os.getloadavg()[0]
out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
if not run:  # the floor: every simulated value and bootstrap index drawn once
    from uqx.engine.generators import fill
    from uqx.engine.resample import _draw_uniform, seed_sequence
    n_copies = min(n_mc, 1000)
    x = np.empty(M)
    idx = np.empty(M, np.int64)
    st = seed_sequence(1, "floor")
    fill(st, x[:10]); fill(st, x[:10], "t", nu=6.0)  # compile / load the kernels
    _draw_uniform(np.ones(4, np.uint64), 5, idx[:3])
    cost = {}
    for name, kw in (("normal", {}), ("t6", {"dist": "t", "nu": 6.0})):
        c0 = time.thread_time()
        for _ in range(5):
            fill(st, x, **kw)
        cost[name] = (time.thread_time() - c0) / 5
    c0 = time.thread_time()
    for _ in range(5):
        _draw_uniform(np.array([1, 2, 3, 4], np.uint64), M, idx)
    cost["index"] = (time.thread_time() - c0) / 5
    # members N, t_s(6), t_s(nu_fit) (normal data: nu_fit = inf, the normal), data (indices)
    out["floor_cpu"] = n_copies * (2 * cost["normal"] + cost["t6"] + cost["index"]) \
        + n_boot * cost["index"]
print(json.dumps(out))
"""


def child(M, n_boot, n_mc, run):
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", CHILD, str(M), str(n_boot), str(n_mc),
                        "1" if run else "0"], cwd=ROOT, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(p.stderr)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["wall_with_startup"] = time.perf_counter() - t
    return out


def main():
    M = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
    n_boot = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    n_mc = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    cores = len(os.sched_getaffinity(0))
    header(f"uqx.validate on {M} rows (ZMS, RCE, ENCE; n_boot={n_boot}, n_mc={n_mc})")
    base = child(M, n_boot, n_mc, False)
    run = child(M, n_boot, n_mc, True)
    section("results")
    floor = base["floor_cpu"]
    cpu_wall = run["cpu_seconds"] / cores
    judged = cpu_wall if run["load"] > cores else run["seconds"]
    how = f"CPU time / {cores} cores (load {run['load']:.1f})" if run["load"] > cores \
        else "wall time"
    print(f"{'figure':34s} {'measured':>12s} {'target':>10s} {'floor':>12s}  previous")
    print(f"{'validate, wall':34s} {run['seconds']:10.1f} s {TARGET_S:8.0f} s "
          f"{floor / cores:10.1f} s  {PREVIOUS}")
    print(f"{'validate, CPU / ' + str(cores) + ' cores':34s} {cpu_wall:10.1f} s "
          f"{TARGET_S:8.0f} s {floor / cores:10.1f} s  (CPU {run['cpu_seconds']:.1f} s, "
          f"floor CPU {floor:.1f} s)")
    print(f"{'peak RSS':34s} {run['peak_mib']:8.0f} MiB {TARGET_MIB:6.0f} MiB "
          f"{base['peak_mib']:8.0f} MiB  (floor: the data alone, same process kind)")
    ok_t, ok_m = judged <= TARGET_S, run["peak_mib"] <= TARGET_MIB
    print(f"verdict on {how}: time {'PASS' if ok_t else 'MISS'} ({judged:.1f} s, ratio "
          f"{judged / TARGET_S:.2f}), memory {'PASS' if ok_m else 'MISS'} (ratio "
          f"{run['peak_mib'] / TARGET_MIB:.2f}); {judged / (floor / cores):.1f}x the floor")
    print(f"verdicts {run['verdicts']}, ENCE interval {run['ence_ci']}, conditional "
          f"{run['cond']}, nu_fit {run['nu_fit']}")
    print(f"1-minute load average at the end of the run: {run['load']:.2f} ({cores} cores)")


if __name__ == "__main__":
    main()
