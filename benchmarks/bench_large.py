"""Large-data validation: time and peak memory of ``uqx.validate`` on 2·10^6 rows.

Target (hardening issue): ZMS + RCE + ENCE, n_boot = 1000, n_mc = 1000, the full
workflow (tailedness, bootstrap, simulated references, conditional routes), peak memory
under 2 GB and wall time under 2 minutes on the 2-core reference machine. Each run is a
fresh child process, so the peak RSS includes the data, numba compilation and imports.
For comparison the same child measures the data alone (generation, no validation).

Run: ``.venv/bin/python benchmarks/bench_large.py [M] [n_boot] [n_mc]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from _common import ROOT, header, section

CHILD = r"""
import json, os, resource, sys, time
import numpy as np
M, n_boot, n_mc, run = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
rng = np.random.default_rng(7)
u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, M))
E = u * rng.standard_normal(M)
t = time.perf_counter()
out = {"M": M}
if run:
    import uqx
    ds = uqx.from_arrays(E, u, name="large")
    res = uqx.validate(ds, ["zms", "rce", "ence"], n_boot=n_boot, n_mc=n_mc, seed=1)
    out["verdicts"] = {str(s): str(v) for s, v in zip(res.stat.values, res.verdict.values[0])}
    out["ence_ci"] = [res.ci_low.sel(stat="ence").values.item(),
                      res.ci_high.sel(stat="ence").values.item()]
    out["cond"] = [str(v) for v in res.cond_verdict.values[0]]
out["seconds"] = time.perf_counter() - t
out["load"] = os.getloadavg()[0]
out["peak_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
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
    header(f"uqx.validate on {M} rows (ZMS, RCE, ENCE; n_boot={n_boot}, n_mc={n_mc})")
    base = child(M, n_boot, n_mc, False)
    run = child(M, n_boot, n_mc, True)
    section("results")
    print(f"data alone (baseline, same process kind): peak {base['peak_mib']:.0f} MiB")
    print(f"validate: {run['seconds']:.1f} s (target < 120 s: ratio {run['seconds'] / 120:.2f}), "
          f"peak {run['peak_mib']:.0f} MiB (target < 2048: ratio {run['peak_mib'] / 2048:.2f}), "
          f"{run['peak_mib'] / base['peak_mib']:.1f}x the data alone")
    print(f"verdicts {run['verdicts']}, ENCE interval {run['ence_ci']}, conditional {run['cond']}")
    print(f"1-minute load average at the end of the run: {run['load']:.2f} (2 cores)")


if __name__ == "__main__":
    main()
