"""Benchmark of the uqx bootstrap engine against scipy.stats.bootstrap.

Workloads (targets from the project brief):

1. Paper 001 Table IV: the nine literature sets, ``uqx.bootstrap(ds, ["zms", "rce"],
   n_boot=10_000)``, BCa, warm, in-process: target < 1 s and >= 30x faster than
   ``scipy.stats.bootstrap(method="BCa", paired=True, n_resamples=10_000)`` on the same
   work (one scipy call per set with a vector-valued statistic returning ZMS and RCE, so
   scipy also shares its resamples between the two statistics). Plus the scaling of
   uqx with ``num_workers`` 1 vs 2.
2. QM9_E: ZMS, RCE, CC, ENCE, ZMSE (20 bins), 10^4 BCa replicates: target < 5 s.
3. 10^7 synthetic samples (uE^2 ~ InvGamma(3, scale 3), E = uE N(0,1)): ``uqx.describe``
   plus ``uqx.bootstrap(ds, ["zms", "rce"], n_boot=1000)`` in < 60 s with peak memory
   < 2 GB, measured in a child process (its own peak RSS, ``VmHWM`` of
   /proc/self/status, cross-checked with ``getrusage(RUSAGE_CHILDREN)``);
   data generation is timed separately (in the parent, handed over as .npy files).

Options: ``--quick`` skips workload 3 and runs scipy on a subset of sets only
(extrapolated to the nine sets, clearly labelled); ``--full`` also runs the scipy
baseline of workload 2 (several minutes); ``--json FILE`` writes every figure.

Run from the repository root::

    UQX_DATA_DIR=/path/to/datasets .venv/bin/python benchmarks/bench_bootstrap.py
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    Report,
    best_of,
    fmt_t,
    header,
    loadavg,
    section,
    synthetic,
    verdict,
)

N_BOOT = 10_000
SEED = 20240601
TARGET_T4 = 1.0  # s, workload 1
TARGET_RATIO = 30.0  # x vs scipy, workload 1
TARGET_QM9 = 5.0  # s, workload 2
TARGET_BIG_T = 60.0  # s, workload 3
TARGET_BIG_MEM = 2048.0  # MiB, workload 3
QM9_STATS = ["zms", "rce", "cc", "ence", "zmse"]
SCIPY_BATCH = 100  # resamples per vectorised scipy batch (fastest of 100/1000 here)
SUBSET = ("Diffusion_RF", "logP_10k_a_LS-GCN", "QM9_E")  # --quick scipy subset


# ----------------------------------------------------------------------- scipy baselines
def _zms_rce(E, u, axis=-1):
    zms = np.mean((E / u) ** 2, axis=axis)
    rmv = np.sqrt(np.mean(u * u, axis=axis))
    rmse = np.sqrt(np.mean(E * E, axis=axis))
    return np.stack([zms, (rmv - rmse) / rmv])


def scipy_zms_rce(E, u, seed):
    from scipy.stats import bootstrap

    return bootstrap((E, u), _zms_rce, paired=True, vectorized=True, method="BCa",
                     n_resamples=N_BOOT, batch=SCIPY_BATCH,
                     random_state=np.random.default_rng(seed))


def scipy_per_statistic(E, u, seed):
    """scipy as the issue quotes it: one BCa call per statistic, scipy's default batching."""
    from scipy.stats import bootstrap

    rng = np.random.default_rng(seed)
    out = []
    for j in range(2):  # 0: ZMS, 1: RCE
        out.append(bootstrap((E, u), lambda e, v, axis=-1, j=j: _zms_rce(e, v, axis)[j],
                             paired=True, vectorized=True, method="BCa",
                             n_resamples=N_BOOT, random_state=rng))
    return out


def _five_stats(E, u, axis=-1):
    """ZMS, RCE, CC, ENCE, ZMSE of rows (resamples) with the uqx definitions."""
    from scipy.stats import rankdata

    from uqx.engine.binning import equal_count_edges
    from uqx.engine.statistic import STATISTICS, bin_feature_sums
    from uqx.engine.stats.correlation import pearson

    E = np.moveaxis(np.asarray(E), axis, -1)
    u = np.moveaxis(np.asarray(u), axis, -1)
    one = E.ndim == 1  # scipy calls the statistic on the observed 1-D sample too
    E, u = np.atleast_2d(E), np.atleast_2d(u)
    zr = _zms_rce(E, u)
    cc = pearson(rankdata(np.abs(E), axis=-1), rankdata(u, axis=-1))
    o = np.argsort(u, axis=-1, kind="stable")
    Es = np.take_along_axis(E, o, -1)
    us = np.take_along_axis(u, o, -1)
    edges = equal_count_edges(E.shape[-1], 20)
    n = np.diff(edges).astype(float)
    S = np.stack([bin_feature_sums(Es[r], us[r], edges)[0] for r in range(Es.shape[0])])
    ence = STATISTICS["ence"].finish(S, n)
    zmse = STATISTICS["zmse"].finish(S, n)
    out = np.stack([zr[0], zr[1], cc, ence, zmse])
    return out[:, 0] if one else out


def scipy_five(E, u, seed):
    from scipy.stats import bootstrap

    return bootstrap((E, u), _five_stats, paired=True, vectorized=True, method="BCa",
                     n_resamples=N_BOOT, batch=SCIPY_BATCH,
                     random_state=np.random.default_rng(seed))


# ----------------------------------------------------------------------- workload 1
def workload_table4(rep: Report, args):
    import uqx
    from uqx.dataio.model import iter_sets

    section("1. paper 001 Table IV: nine sets, ZMS + RCE, 10^4 BCa replicates")
    ds = uqx.load_paper_sets()
    sets = list(iter_sets(ds))
    Mtot = sum(sd.M for sd in sets)
    print(f"sets: {len(sets)}, total M = {Mtot:,}; draws per call = {Mtot * N_BOOT:,}")
    run = lambda **kw: uqx.bootstrap(ds, ["zms", "rce"], n_boot=N_BOOT, seed=SEED, **kw)  # noqa: E731
    run()  # warm-up: numba cache load, dask pool start
    t_uqx = best_of(run, repeat=args.repeat)

    # scaling with workers
    t_w1 = best_of(lambda: run(num_workers=1), repeat=max(2, args.repeat - 1))
    t_w2 = best_of(lambda: run(num_workers=2), repeat=max(2, args.repeat - 1))
    t_sync = best_of(lambda: run(scheduler="sync"), repeat=max(2, args.repeat - 1))

    # per-set uqx times (for per-set ratios)
    per_uqx = {}
    for sd in sets:
        one = uqx.from_arrays(sd.E, sd.uE, name=sd.name)
        per_uqx[sd.name] = best_of(
            lambda one=one: uqx.bootstrap(one, ["zms", "rce"], n_boot=N_BOOT, seed=SEED),
            repeat=2)

    # scipy baseline
    mode = args.scipy_mode
    scipy_sets = [sd for sd in sets if mode == "full" or sd.name in SUBSET]
    print(f"scipy.stats.bootstrap BCa, paired, n_resamples={N_BOOT}, batch={SCIPY_BATCH}, "
          f"one call per set with a vector statistic (ZMS, RCE); mode={mode}: "
          f"{len(scipy_sets)} set(s), one run each [load {loadavg()}]", flush=True)
    per_scipy = {}
    res_scipy = {}
    for sd in scipy_sets:
        t = time.perf_counter()
        res_scipy[sd.name] = scipy_zms_rce(sd.E, sd.uE, SEED)
        per_scipy[sd.name] = time.perf_counter() - t
        print(f"  scipy {sd.name:<26s} M={sd.M:6d}  {fmt_t(per_scipy[sd.name]):>10s}  "
              f"uqx(single set) {fmt_t(per_uqx[sd.name]):>10s}  "
              f"ratio {per_scipy[sd.name] / per_uqx[sd.name]:6.1f}x  [load {loadavg()}]",
              flush=True)

    # CI agreement (different random streams: agreement within Monte-Carlo noise only)
    r = run()
    for sd in scipy_sets[-1:]:
        ci = res_scipy[sd.name].confidence_interval
        for j, st in enumerate(["zms", "rce"]):
            lo = float(r.ci_low.sel(set=sd.name, stat=st))
            hi = float(r.ci_high.sel(set=sd.name, stat=st))
            print(f"  CI check {sd.name} {st}: uqx [{lo:.4f}, {hi:.4f}]  "
                  f"scipy [{ci.low[j]:.4f}, {ci.high[j]:.4f}]")

    if mode == "full":
        t_scipy = sum(per_scipy.values())
        label = "scipy BCa, nine sets (measured)"
    else:
        # cost model t(M) = b M + c M^2 (resampling is O(R M), scipy's jackknife O(M^2)),
        # least squares through the measured sets
        Ms = np.array([sd.M for sd in scipy_sets], float)
        ts = np.array([per_scipy[sd.name] for sd in scipy_sets])
        coef, *_ = np.linalg.lstsq(np.column_stack([Ms, Ms**2]), ts, rcond=None)
        t_scipy = sum(per_scipy.get(sd.name, coef[0] * sd.M + coef[1] * sd.M**2)
                      for sd in sets)
        label = (f"scipy BCa, nine sets EXTRAPOLATED from {len(scipy_sets)} measured "
                 "set(s) with t(M) = b*M + c*M^2")
        print(f"  !! EXTRAPOLATION: scipy measured on {', '.join(s.name for s in scipy_sets)};"
              f" fitted b={coef[0]:.3e} s/sample, c={coef[1]:.3e} s/sample^2; the other sets"
              " are predicted, not measured. Run without --quick (or with --full) to measure"
              " all nine.")
        t_sub_uqx = sum(per_uqx[sd.name] for sd in scipy_sets)
        t_sub_scipy = sum(per_scipy.values())
        rep.add(f"T4 subset ({len(scipy_sets)} sets) uqx, per-set calls", t_sub_uqx,
                ratio=t_sub_scipy / t_sub_uqx, baseline="scipy on the same subset (measured)")

    rep.add("T4 scipy.stats.bootstrap baseline", t_scipy, note=label)
    if mode == "full" and not args.no_per_stat:
        # second baseline: one call per statistic with scipy defaults (the 6 s + 11 s
        # on QM9_E are of this kind); weaker than the shared vector statistic above
        t = time.perf_counter()
        for sd in sets:
            scipy_per_statistic(sd.E, sd.uE, SEED)
        t_ps = time.perf_counter() - t
        rep.add("T4 scipy baseline, one call per statistic (defaults)", t_ps,
                note="nine sets, ZMS and RCE separately, batch=None (measured)")
        rep.add("T4 uqx.bootstrap vs per-statistic scipy", t_uqx, ratio=t_ps / t_uqx,
                baseline="scipy one call per statistic",
                status=f"ratio {verdict(t_ps / t_uqx, TARGET_RATIO, less=False)}")
    ratio = t_scipy / t_uqx
    rep.add("T4 uqx.bootstrap nine sets zms+rce 1e4 BCa (default)", t_uqx,
            target=f"< {TARGET_T4:g} s and >= {TARGET_RATIO:g}x", ratio=ratio,
            baseline=label,
            status=f"time {verdict(t_uqx, TARGET_T4)}, ratio "
                   f"{verdict(ratio, TARGET_RATIO, less=False)}")
    rep.add("T4 uqx num_workers=1 (threads)", t_w1)
    rep.add("T4 uqx num_workers=2 (threads)", t_w2, ratio=t_w1 / t_w2,
            baseline="num_workers=1 (speed-up)")
    rep.add("T4 uqx scheduler='sync'", t_sync)
    rep.add("T4 uqx sum of nine single-set calls", sum(per_uqx.values()))
    return {"t_uqx": t_uqx, "t_scipy": t_scipy, "ratio": ratio, "t_w1": t_w1, "t_w2": t_w2}


# ----------------------------------------------------------------------- workload 2
def workload_qm9(rep: Report, args):
    import uqx

    section("2. QM9_E: ZMS, RCE, CC, ENCE, ZMSE (20 bins), 10^4 BCa replicates")
    q = uqx.load_dataset("QM9_E")
    run = lambda **kw: uqx.bootstrap(q, QM9_STATS, n_boot=N_BOOT, seed=SEED, bins=20, **kw)  # noqa: E731
    uqx.bootstrap(q, QM9_STATS, n_boot=500, seed=SEED)  # warm-up
    t = best_of(run, repeat=max(2, args.repeat - 1))
    t_w1 = best_of(lambda: run(num_workers=1), repeat=2)
    if args.full:
        E, u = q["E"].values, q["uE"].values
        print(f"  running scipy baseline on QM9_E, 5 statistics (slow) [load {loadavg()}]",
              flush=True)
        t0 = time.perf_counter()
        res = scipy_five(E, u, SEED)
        t_sp = time.perf_counter() - t0
        r = run()
        for j, st in enumerate(QM9_STATS):
            print(f"  CI check {st}: uqx [{float(r.ci_low.sel(stat=st)[0]):.4f}, "
                  f"{float(r.ci_high.sel(stat=st)[0]):.4f}]  scipy "
                  f"[{res.confidence_interval.low[j]:.4f}, {res.confidence_interval.high[j]:.4f}]")
        rep.add("QM9 scipy.stats.bootstrap baseline, 5 stats", t_sp)
        ratio, base = t_sp / t, "scipy BCa, same 5 stats (measured)"
    else:
        ratio, base = TARGET_QM9 / t, "the 5 s target (scipy baseline: --full)"
    rep.add("QM9 uqx.bootstrap 5 stats 1e4 BCa (default)", t, target=f"< {TARGET_QM9:g} s",
            ratio=ratio, baseline=base, status=verdict(t, TARGET_QM9))
    rep.add("QM9 uqx num_workers=1", t_w1, ratio=t_w1 / t, baseline="default (speed-up)")
    return {"t": t}


# ----------------------------------------------------------------------- workload 3
def _child_big(path: str, n_boot: int) -> int:
    """Child process: warm-up, load the data, describe + bootstrap; print JSON."""
    import uqx

    def rss():
        """Peak RSS of this process so far, MiB: VmHWM (this exec's own memory only)."""
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024.0
        except OSError:
            pass
        # ru_maxrss may include the parent's RSS at fork time (Linux keeps the high-water
        # mark across fork/exec), hence only a fallback
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    out = {"rss_after_import": rss()}
    t = time.perf_counter()
    Ew, uw = synthetic(20_000, seed=1)
    small = uqx.from_arrays(Ew, uw, name="warm")
    uqx.describe(small)
    uqx.bootstrap(small, ["zms", "rce"], n_boot=250, seed=1)
    out["t_warmup"] = time.perf_counter() - t
    t = time.perf_counter()
    E = np.load(os.path.join(path, "E.npy"))
    u = np.load(os.path.join(path, "u.npy"))
    ds = uqx.from_arrays(E, u, name="synthetic_1e7")
    del E, u
    out["t_load"] = time.perf_counter() - t
    out["rss_after_load"] = rss()
    t = time.perf_counter()
    d = uqx.describe(ds)
    out["t_describe"] = time.perf_counter() - t
    out["rss_after_describe"] = rss()
    del d
    t = time.perf_counter()
    b = uqx.bootstrap(ds, ["zms", "rce"], n_boot=n_boot, seed=SEED)
    out["t_bootstrap"] = time.perf_counter() - t
    out["rss_peak"] = rss()
    out["ci"] = {st: [float(b.ci_low.sel(stat=st)[0]), float(b.ci_high.sel(stat=st)[0])]
                 for st in ("zms", "rce")}
    print("CHILD_RESULT " + json.dumps(out), flush=True)
    return 0


def workload_big(rep: Report, args):
    M, n_boot = args.big_M, 1000
    section(f"3. synthetic M={M:,}: describe + bootstrap(zms, rce, n_boot={n_boot}), "
            "child process")
    with tempfile.TemporaryDirectory(prefix="uqx_bench_") as tmp:
        t = time.perf_counter()
        E, u = synthetic(M)
        np.save(os.path.join(tmp, "E.npy"), E)
        np.save(os.path.join(tmp, "u.npy"), u)
        del E, u
        t_gen = time.perf_counter() - t
        cmd = [sys.executable, os.path.abspath(__file__), "--child-big", tmp, str(n_boot)]
        t = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
        t_child = time.perf_counter() - t
        peak_ru = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    if proc.returncode != 0:
        print(proc.stdout[-4000:], proc.stderr[-4000:])
        raise RuntimeError(f"child process failed with code {proc.returncode}")
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("CHILD_RESULT "))
    res = json.loads(line[len("CHILD_RESULT "):])
    total = res["t_describe"] + res["t_bootstrap"]
    # the child's VmHWM is its own peak; getrusage(RUSAGE_CHILDREN) is the cross-check (it can
    # only be higher: Linux carries the parent's high-water mark at fork into the child)
    peak = res["rss_peak"]
    rep.add(f"big: data generation M={M:,} + .npy write (parent, not counted)", t_gen)
    rep.add("big: child interpreter + imports + warm-up + load (not counted)",
            t_child - total, note=f"warm-up {fmt_t(res['t_warmup'])}, "
                                  f"load .npy + from_arrays {fmt_t(res['t_load'])}")
    rep.add("big: uqx.describe (16 stats + tailedness)", res["t_describe"])
    rep.add(f"big: uqx.bootstrap zms+rce n_boot={n_boot} BCa", res["t_bootstrap"])
    rep.add("big: describe + bootstrap", total, target=f"< {TARGET_BIG_T:g} s",
            ratio=TARGET_BIG_T / total, baseline="the 60 s target",
            status=verdict(total, TARGET_BIG_T))
    rep.add("big: peak RSS of the child process", peak, unit="MiB",
            target=f"< {TARGET_BIG_MEM:.0f} MiB", status=verdict(peak, TARGET_BIG_MEM),
            note=f"child VmHWM; peak after imports {res['rss_after_import']:.0f} MiB, after "
                 f"data load {res['rss_after_load']:.0f} MiB, after describe "
                 f"{res['rss_after_describe']:.0f} MiB")
    print(f"  cross-check getrusage(RUSAGE_CHILDREN).ru_maxrss = {peak_ru:.0f} MiB; "
          f"CIs {res['ci']}")
    return {"total": total, "peak_mib": peak, "peak_ru_mib": peak_ru, **res}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="skip the 10^7 workload; scipy on a subset only (extrapolated)")
    ap.add_argument("--full", action="store_true",
                    help="scipy on all nine sets even with --quick, and scipy on QM9 5 stats")
    ap.add_argument("--repeat", type=int, default=3, help="repeats (best is kept)")
    ap.add_argument("--big-M", type=int, default=10_000_000, help="size of workload 3")
    ap.add_argument("--only", choices=["1", "2", "3"], action="append",
                    help="run only these workloads (repeatable)")
    ap.add_argument("--json", default=None, help="write all results to this JSON file")
    ap.add_argument("--no-per-stat", action="store_true",
                    help="skip the second scipy baseline (one call per statistic)")
    ap.add_argument("--child-big", nargs=2, metavar=("DIR", "N_BOOT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child_big:
        return _child_big(args.child_big[0], int(args.child_big[1]))
    args.scipy_mode = "subset" if (args.quick and not args.full) else "full"

    info = header("uqx bootstrap benchmark (bench_bootstrap.py)")
    rep = Report(info)
    only = set(args.only or ["1", "2", "3"])
    out = {}
    if "1" in only:
        out["t4"] = workload_table4(rep, args)
    if "2" in only:
        out["qm9"] = workload_qm9(rep, args)
    if "3" in only and not args.quick:
        out["big"] = workload_big(rep, args)

    print(f"\n# load average at end: {loadavg()}")
    print("SUMMARY:")
    if "t4" in out:
        o = out["t4"]
        print(f"  1. Table IV nine sets: {fmt_t(o['t_uqx'])} (target < {TARGET_T4:g} s: "
              f"{verdict(o['t_uqx'], TARGET_T4)}), {o['ratio']:.1f}x vs scipy (target >= "
              f"{TARGET_RATIO:g}x: {verdict(o['ratio'], TARGET_RATIO, less=False)}); "
              f"workers 1 -> 2: {o['t_w1'] / o['t_w2']:.2f}x")
    if "qm9" in out:
        print(f"  2. QM9_E 5 stats: {fmt_t(out['qm9']['t'])} (target < {TARGET_QM9:g} s: "
              f"{verdict(out['qm9']['t'], TARGET_QM9)})")
    if "big" in out:
        o = out["big"]
        print(f"  3. 10^7: describe {fmt_t(o['t_describe'])} + bootstrap "
              f"{fmt_t(o['t_bootstrap'])} = {fmt_t(o['total'])} (target < {TARGET_BIG_T:g} s: "
              f"{verdict(o['total'], TARGET_BIG_T)}); peak RSS {o['peak_mib']:.0f} MiB "
              f"(target < {TARGET_BIG_MEM:.0f} MiB: {verdict(o['peak_mib'], TARGET_BIG_MEM)})")
    rep.dump(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
