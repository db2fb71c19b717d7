"""Out of core: moment statistics, BCa bootstrap, simulated references on 10^8 rows.

Target (issue 13): ZMS and RCE of 10^8 (E, uE) rows opened lazily
(``xr.open_dataset(chunks=...)``), their BCa bootstrap with n_boot = 1000 and their
simulated references (members N and the resampled data, a few copies each: every copy
is 10^8 draws), peak memory ≤ 1.5 GB (the data alone are 1.6 GB). The file is
written chunk by chunk to a temporary directory (about 1.6 GB: the free space is checked
first) and deleted afterwards. The child process opens it lazily, computes the moment
statistics (streamed, :func:`uqx.compute`), the bootstrap (streamed over groups of
:data:`uqx.inference.streamed.GROUP_ROWS` rows) and the simulated references (streamed over
groups of :data:`uqx.inference.reference.SIM_GROUP_ROWS` rows); its peak RSS includes the
interpreter, numba and the HDF5 caches. Floor: the bootstrap's bounded integers alone
(n_boot x M, one thread), measured in the same run.

The full workflow (``uqx validate FILE.nc``: tailedness, bootstrap, simulated references
of the four null members, verdicts) on the same file is measured by
``bench_validate_disk.py``: the moment-only workflow streams every step (the tailedness
quantiles from one column at a time); binned statistics read the columns into memory.

Run: ``.venv/bin/python benchmarks/bench_outofcore.py [M] [n_boot] [n_sim]``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
from _common import ROOT, header, section

TARGET_MIB = 1536.0

CHILD = r"""
import json, os, resource, sys, time
import numpy as np, xarray as xr
import uqx
path, part, n_boot, n_sim = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ds = xr.open_dataset(path, engine="netcdf4", chunks={"sample": 1_048_576})
t = time.perf_counter()
c = time.process_time()
out = {}
if part == "boot":
    est = uqx.compute(ds, ["zms", "rce"])
    out["moments_seconds"] = time.perf_counter() - t
    r = uqx.bootstrap(ds, ["zms", "rce"], n_boot=n_boot, seed=1, progress=True)
    out["zms"] = [float(est.sel(stat="zms").item()), float(r.ci_low.sel(stat="zms").item()),
                  float(r.ci_high.sel(stat="zms").item())]
    out["rce"] = [float(est.sel(stat="rce").item()), float(r.ci_low.sel(stat="rce").item()),
                  float(r.ci_high.sel(stat="rce").item())]
else:
    ref = uqx.simulate_reference(ds, ["zms", "rce"], dist=part, n_mc=n_sim, seed=1,
                                 keep_draws=True, progress=True)
    out["zms"] = float(ref.reference.sel(stat="zms").item())
out.update({"seconds": time.perf_counter() - t, "cpu_seconds": time.process_time() - c,
            "load": os.getloadavg()[0],
            "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
print(json.dumps(out))
"""


def write(path, m, chunk=1_048_576, seed=5):
    """E, uE of m rows written chunk by chunk (never the whole arrays in memory)."""
    import netCDF4

    rng = np.random.default_rng(seed)
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("sample", m)
        ve = nc.createVariable("E", "f8", ("sample",), chunksizes=(chunk,))
        vu = nc.createVariable("uE", "f8", ("sample",), chunksizes=(chunk,))
        nc.setncattr("name", "big")
        for a in range(0, m, chunk):
            b = min(m, a + chunk)
            u = np.sqrt(1.0 / rng.gamma(3.0, 1.0 / 3.0, b - a))
            vu[a:b] = u
            ve[a:b] = u * rng.standard_normal(b - a)


def floor_cpu(m, n_boot):
    from uqx.engine.resample import _draw_uniform

    idx = np.empty(1 << 20, np.int64)
    st = np.array([1, 2, 3, 4], np.uint64)
    _draw_uniform(st, 1 << 20, idx[:10])
    c = time.thread_time()
    for _ in range(20):
        _draw_uniform(st, 1 << 20, idx)
    return (time.thread_time() - c) / (20 * idx.size) * m * n_boot


def main():
    m = int(float(sys.argv[1])) if len(sys.argv) > 1 else 100_000_000
    n_boot = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    n_sim = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    cores = len(os.sched_getaffinity(0))
    header(f"out of core: {m} rows, ZMS + RCE, n_boot={n_boot}, {n_sim} simulated copies")
    tmp = tempfile.mkdtemp(prefix="uqx-ooc-")
    try:
        need = 2 * 8 * m * 1.1
        free = shutil.disk_usage(tmp).free
        if free < 2 * need:
            raise SystemExit(f"not enough disk in {tmp}: {free / 2**30:.1f} GiB free, "
                             f"{need / 2**30:.1f} GiB needed (twice that kept free)")
        path = os.path.join(tmp, "big.nc")
        t = time.perf_counter()
        write(path, m)
        print(f"wrote {os.path.getsize(path) / 2**30:.2f} GiB in {time.perf_counter() - t:.0f} s",
              flush=True)
        out = {}
        for part in ("boot", "normal", "data"):  # one fresh child each: its own peak
            p = subprocess.run([sys.executable, "-c", CHILD, path, part, str(n_boot),
                                str(n_sim)], cwd=ROOT, capture_output=True, text=True)
            if p.returncode:
                raise SystemExit(p.stderr)
            out[part] = json.loads(p.stdout.strip().splitlines()[-1])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    floor = floor_cpu(m, n_boot)
    section("results")
    b = out["boot"]
    print(f"moments (streamed): {b['moments_seconds']:.1f} s")
    print(f"moments + BCa bootstrap: {b['seconds']:.1f} s wall, CPU {b['cpu_seconds']:.1f} s "
          f"(CPU / {cores} cores {b['cpu_seconds'] / cores:.1f} s; floor, the bootstrap's "
          f"indices alone: {floor / cores:.1f} s), load {b['load']:.1f}")
    for dist in ("normal", "data"):
        r = out[dist]
        print(f"simulated references, {dist} member, {n_sim} copies (streamed): "
              f"{r['seconds']:.1f} s wall, CPU {r['cpu_seconds']:.1f} s "
              f"({r['cpu_seconds'] / (n_sim * m) * 1e9:.1f} ns CPU per value), "
              f"reference ZMS {r['zms']:.5f}, load {r['load']:.1f}")
    data_mib = 2 * 8 * m / 2**20
    for what in ("boot", "normal", "data"):
        peak = out[what]["peak_mib"]
        ok = peak <= TARGET_MIB
        label = {"boot": "moments + bootstrap", "normal": "simulated references (N)",
                 "data": "simulated references (data: the z-scores in memory, 8 B a row)"}
        print(f"peak RSS, {label[what]}: {peak:.0f} MiB (target <= {TARGET_MIB:.0f} MiB: "
              f"{'PASS' if ok else 'MISS'}; the data alone are {data_mib:.0f} MiB)")
    print(f"ZMS [estimate, lo, hi] {b['zms']}; RCE {b['rce']}")

if __name__ == "__main__":
    main()
