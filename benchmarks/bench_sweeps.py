"""Sweep studies: wall time and peak memory of ``appendix-b`` and ``pval``, worker scaling.

Targets (issue 7), on the 2-core reference machine:

* full ``appendix-b`` (both models, 150 cells each, N_MC = 5000) under 10 minutes, peak
  memory under 2 GB (a vectorised R implementation of the grid: about an hour here;
  generating and sorting the data is the floor, a few minutes);
* full ``pval`` (both scenarios, 21 points, 1000 data sets each, 5000 BCa replicates)
  under 30 minutes (the reference R pipeline: about 14 hours here; its author reports
  about half a day on 8 cores per scenario);
* scaling from 1 to 2 dask workers at least 1.7x on a cell-heavy sweep.

Each run is a fresh child process (peak RSS includes imports and numba compilation) that
writes its archive to a temporary file. Without ``--full`` the two studies run on their
full grids with fewer replicates and the time is scaled up linearly (labelled as such:
the work is proportional to the number of replicates).

Run: ``.venv/bin/python benchmarks/bench_sweeps.py [--full] [--skip-appendix-b]
[--skip-pval] [--skip-scaling]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time

from _common import ROOT, header, section

CHILD = r"""
import json, resource, sys, time, os
opts = json.loads(sys.argv[1])
from uqx.sweeps import run_study
name = opts.pop("study")
t = time.perf_counter()
ds = run_study(name, **opts)
ru = resource.getrusage(resource.RUSAGE_SELF)
out = {"seconds": time.perf_counter() - t, "peak_mib": ru.ru_maxrss / 1024,
       "cpu_seconds (whole process)": round(ru.ru_utime + ru.ru_stime, 1)}
if name == "appendix-b":
    out["slopes"] = {f"{m} {s}": [round(float(ds.intercept.sel(model=m, stat=s)), 4),
                                  round(float(ds.slope.sel(model=m, stat=s)), 4)]
                     for m in ds.model.values for s in ds.stat.values}
if name == "pval":
    p = ds.p_val.sel(scenario="NIG", nu=6.0)
    out["p_val NIG nu=6"] = [round(float(v), 3) for v in p.values]
print(json.dumps(out))
"""


def child(opts):
    with tempfile.TemporaryDirectory() as tmp:
        opts = {**opts, "output": f"{tmp}/out.nc"}
        t = time.perf_counter()
        p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(opts)], cwd=ROOT,
                           capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(p.stderr)
    out = json.loads(p.stdout.strip().splitlines()[-1])
    out["wall_with_startup"] = time.perf_counter() - t
    return out


def report(label, out, scale, target_s, reference):
    est = out["seconds"] * scale
    what = "measured" if scale == 1 else f"measured x {scale:g} (scaled to full size)"
    print(f"{label}: {out['seconds']:.1f} s compute ({out['wall_with_startup']:.1f} s with "
          f"start-up), peak {out['peak_mib']:.0f} MiB")
    print(f"  full-size time {what}: {est:.0f} s = {est / 60:.1f} min "
          f"(target < {target_s / 60:.0f} min; {reference})")
    for k, v in out.items():
        if k not in ("seconds", "peak_mib", "wall_with_startup"):
            print(f"  {k}: {v}")


def main():
    full = "--full" in sys.argv
    header("uqx sweeps: appendix-b, pval, worker scaling")
    if "--skip-appendix-b" not in sys.argv:
        section("appendix-b: 2 models x 5 M x 5 N x 6 nu, 2 workers (threads)")
        n_mc = 5000 if full else 500
        out = child({"study": "appendix-b", "n_mc": n_mc, "seed": 1, "num_workers": 2})
        report(f"appendix-b N_MC={n_mc}", out, 5000 / n_mc, 600,
               "vectorised R: about 1 hour on this machine")
    if "--skip-pval" not in sys.argv:
        section("pval: NIG (11 points) + TIG (10 points), M=5000, 5000 BCa, 2 workers")
        n_sets = 1000 if full else 50
        out = child({"study": "pval", "n_datasets": n_sets, "n_boot": 5000, "seed": 1,
                     "num_workers": 2})
        report(f"pval {n_sets} data sets per point", out, 1000 / n_sets, 1800,
               "reference R pipeline: about 14 hours on this machine")
    if "--skip-scaling" not in sys.argv:
        scaling()


def scaling():
    section("scaling: appendix-b, M in {8000, 16000} x 6 nu, N_MC=300 (cell-heavy)")
    grid = {"study": "appendix-b", "M": [8000, 16000], "n_mc": 300, "seed": 1}
    times = {}
    for sched in ("threads", "processes"):
        for w in (1, 2):
            out = child({**grid, "num_workers": w, "scheduler": sched})
            times[(sched, w)] = out["seconds"]
            print(f"{sched:9s} {w} worker(s): {out['seconds']:.2f} s, "
                  f"peak {out['peak_mib']:.0f} MiB", flush=True)
        print(f"  speed-up 1 -> 2 {sched}: {times[(sched, 1)] / times[(sched, 2)]:.2f}x "
              "(target >= 1.7x; needs two idle cores)")


if __name__ == "__main__":
    main()
