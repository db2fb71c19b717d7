"""``uqx validate FILE.nc`` on 10^8 rows read from disk: wall time, CPU time, peak RSS.

Target (issue 13 item 3): the full command-line workflow on a chunked NetCDF of 10^8
(E, uE) rows (1.6 GB on disk, written chunk by chunk by :func:`bench_outofcore.write`
to a temporary directory and deleted afterwards), opened lazily by the CLI
(:func:`uqx.dataio.netcdf.open_dataset`):

* ``moments``: ``--stats zms,rce --no-conditional`` (n_boot = 1000 by default): every
  step streams (tailedness from one column sorted in place, BCa bootstrap, simulated
  references of the four null members); target peak RSS ≤ 1.5 GB;
* ``binned``: ``--stats zms,rce,ence --no-conditional`` (n_boot = n_mc = 200): the
  columns are read into memory and the in-memory workflow runs; targets (issue 24)
  ≤ 3 GB and ≤ 10 minutes wall.

Each part runs ``uqx.cli.main`` in a fresh child process whose peak RSS (``ru_maxrss``,
interpreter, numba, HDF5 caches and data included) is reported. A watchdog thread in
the child stops it (exit 3) when its RSS passes ``--cap`` MiB (default 8192), so that a
part that does not fit does not take the shared machine down: the report then says
"> cap". ``--before DIR`` runs the same parts with the package found in DIR (e.g. an
export of an older commit: ``git archive <commit> uqx | tar -x -C DIR``).

Run: ``.venv/bin/python benchmarks/bench_validate_disk.py [--m 1e8] [--parts moments,binned]
[--n-boot 1000] [--n-mc 10] [--binned-n-boot 200] [--binned-n-mc 200] [--cap 8192]
[--timeout 1200] [--before DIR] [--json F]`` (a part still running after ``--timeout``
seconds is stopped and reported as such).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from _common import ROOT, header, section
from bench_outofcore import write

#: Peak RSS (MiB) and wall time (s, None: none) of each part: issue 13 for the moments,
#: issue 24 for the binned statistics (n_boot = n_mc = 200, settings that give a verdict).
TARGETS = {"moments": 1536.0, "binned": 3072.0}
WALL_TARGETS = {"moments": None, "binned": 600.0}

CHILD = r"""
import json, os, resource, sys, threading, time
cap, out_json, args = float(sys.argv[1]), sys.argv[2], sys.argv[3:]
state = {"step": "import"}

def rss_mib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024

def watchdog():
    while True:
        r = rss_mib()
        if r > cap:
            with open(out_json, "w") as f:
                json.dump({"killed": True, "rss_mib": r, "seconds": time.perf_counter() - t,
                           "load": os.getloadavg()[0]}, f)
            os._exit(3)
        time.sleep(0.1)

t = time.perf_counter()
c = time.process_time()
threading.Thread(target=watchdog, daemon=True).start()
from uqx.cli import main
rc = main(args)
with open(out_json, "w") as f:
    json.dump({"rc": rc, "seconds": time.perf_counter() - t,
               "cpu_seconds": time.process_time() - c, "load": os.getloadavg()[0],
               "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}, f)
"""


def run_part(path, part, a, pythonpath):
    stats = "zms,rce" if part == "moments" else "zms,rce,ence"
    n_boot = a.n_boot if part == "moments" else a.binned_n_boot
    n_mc = a.n_mc if part == "moments" else a.binned_n_mc
    cli = ["validate", path, "--stats", stats, "--no-conditional", "--n-boot", str(n_boot),
           "--n-mc", str(n_mc), "--seed", "1"]
    fd, out_json = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    t0 = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, str(a.cap), out_json, *cli],
                           cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=a.timeout)
        stdout, stderr = p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        os.unlink(out_json)
        return {"timed_out": True, "seconds": time.perf_counter() - t0,
                "cli": " ".join(["uqx", *cli]), "stderr": str(e.stderr or "")[-2000:]}
    with open(out_json) as f:
        text = f.read()
    os.unlink(out_json)
    res = json.loads(text) if text else {"rc": p.returncode}
    res.update(cli=" ".join(["uqx", *cli]), stderr=stderr[-2000:],
               verdicts=[ln for ln in stdout.splitlines() if "zms" in ln.lower()
                         or "rce" in ln.lower() or "ence" in ln.lower()][:6])
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=float, default=1e8)
    ap.add_argument("--parts", default="moments,binned")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--n-mc", type=int, default=10)
    ap.add_argument("--binned-n-boot", type=int, default=200)
    ap.add_argument("--binned-n-mc", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=1200.0, help="wall limit of a part (s)")
    ap.add_argument("--cap", type=float, default=8192.0, help="watchdog RSS cap (MiB)")
    ap.add_argument("--before", default=None, help="also run with the package in this dir")
    ap.add_argument("--file", default=None, help="reuse this NetCDF (not deleted)")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    m = int(a.m)
    header(f"uqx validate FILE.nc: {m} rows from disk, parts {a.parts}")
    tmp = None
    try:
        if a.file:
            path = a.file
        else:
            tmp = tempfile.mkdtemp(prefix="uqx-vdisk-")
            need = 2 * 8 * m * 1.1
            free = shutil.disk_usage(tmp).free
            if free < 2 * need:
                raise SystemExit(f"not enough disk in {tmp}: {free / 2**30:.1f} GiB free")
            path = os.path.join(tmp, "big.nc")
            t = time.perf_counter()
            write(path, m)
            print(f"wrote {os.path.getsize(path) / 2**30:.2f} GiB in "
                  f"{time.perf_counter() - t:.0f} s", flush=True)
        rows = []
        trees = [("after", ROOT)] + ([("before", a.before)] if a.before else [])
        for part in a.parts.split(","):
            for label, tree in trees:
                r = run_part(path, part, a, tree)
                r.update(part=part, tree=label)
                rows.append(r)
                print(json.dumps({k: v for k, v in r.items() if k != "stderr"}), flush=True)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    section("results")
    cores = len(os.sched_getaffinity(0))
    for r in rows:
        target, wall = TARGETS[r["part"]], WALL_TARGETS[r["part"]]
        if r.get("timed_out"):
            print(f"[{r['tree']}] {r['cli']}")
            print(f"    stopped after {r['seconds']:.0f} s (--timeout): wall MISS")
            continue
        if r.get("killed"):
            mem, verdict = f"> {a.cap:.0f} MiB (stopped by the watchdog after " \
                f"{r['seconds']:.0f} s)", "MISS"
        elif r.get("rc"):
            last = r["stderr"].strip().splitlines()[-1:] or ["?"]
            mem, verdict = f"exit {r['rc']}: {last[0]}", "FAIL"
        else:
            mem = f"{r['peak_mib']:.0f} MiB"
            verdict = "PASS" if r["peak_mib"] <= target else "MISS"
        print(f"[{r['tree']}] {r['cli']}")
        if "cpu_seconds" in r:
            print(f"    {r['seconds']:.1f} s wall, CPU {r['cpu_seconds']:.1f} s "
                  f"(/ {cores} cores {r['cpu_seconds'] / cores:.1f} s), load {r['load']:.1f}")
        print(f"    peak RSS {mem} (target <= {target:.0f} MiB: {verdict})")
        finished = not r.get("killed") and not r.get("rc")
        if wall is not None and finished:
            print(f"    wall {r['seconds']:.0f} s (target <= {wall:.0f} s: "
                  f"{'PASS' if r['seconds'] <= wall else 'MISS'})")
        elif wall is not None:  # stopped or failed: it did not finish
            print(f"    wall: did not finish (target <= {wall:.0f} s: MISS)")
        notes = [ln for ln in r["stderr"].splitlines() if "note:" in ln]
        for ln in notes[:2]:
            print(f"    {ln}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
