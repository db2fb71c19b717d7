"""Benchmark of the uqx statistics kernels (point estimates, no bootstrap).

Measures every kernel of the foundation on the nine literature sets of papers 000/001/004
and on a synthetic set of 10^6 samples (uE^2 ~ InvGamma(3, scale 3), E = uE * N(0, 1)),
against baselines measured in the same run:

* ``scipy.stats.spearmanr`` vs :func:`uqx.engine.stats.correlation.spearman_cc`;
* a naive NumPy loop over bins vs the numba per-bin sums of :mod:`uqx.engine.statistic`
  (one set, and a batch of rows as in the simulated references);
* full-weight Harrell-Davis quantiles (``scipy.stats.mstats.hdquantiles``) vs
  :func:`uqx.engine.stats.tailedness.tailedness` (support-restricted cached weights).

Headline: a full statistics pass over 10^6 samples, ``uqx.describe`` (all of
``uqx.inference.describe.DESCRIBE_STATS`` including the binned ones with 20 bins, plus the
tailedness HD quantiles), warm, in < 2 s.

Run from the repository root::

    UQX_DATA_DIR=/path/to/datasets .venv/bin/python benchmarks/bench_kernels.py [--json out.json]
"""

from __future__ import annotations

import argparse
import sys
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

import uqx  # noqa: E402
from uqx.dataio.model import iter_sets  # noqa: E402
from uqx.engine.binning import make_bins  # noqa: E402
from uqx.engine.evaluator import SetEvaluator  # noqa: E402
from uqx.engine.statistic import (  # noqa: E402
    STATISTICS,
    bin_feature_sums,
    parse_stat,
)
from uqx.engine.stats import correlation  # noqa: E402
from uqx.engine.stats.tailedness import _KAPPA_NORMAL, tailedness  # noqa: E402
from uqx.inference.describe import DESCRIBE_STATS, KERNELS  # noqa: E402

N_BINS = 20
HEADLINE_TARGET = 2.0  # seconds, full statistics pass over 10^6 samples


# ----------------------------------------------------------------------- baselines
def ence_naive(E_sorted, u_sorted, edges):
    """ENCE with a plain loop over bins (what one writes without prefix sums)."""
    acc = 0.0
    for j in range(len(edges) - 1):
        e = E_sorted[edges[j]: edges[j + 1]]
        u = u_sorted[edges[j]: edges[j + 1]]
        rmv = np.sqrt(np.mean(u * u))
        rmse = np.sqrt(np.mean(e * e))
        acc += abs(rmv - rmse) / rmv
    return acc / (len(edges) - 1)


def ence_naive_rows(E_sorted, u_sorted, edges):
    """Naive ENCE of every row of a (b, M) batch: loop over rows and bins."""
    return np.array([ence_naive(row, u_sorted, edges) for row in E_sorted])


def tailedness_full_hd(E, u):
    """Tailedness metrics with full-weight HD quantiles (scipy.stats.mstats.hdquantiles)."""
    from scipy.stats.mstats import hdquantiles

    probs = [0.5, 0.025, 0.975, 0.25, 0.75]
    out = {}
    for key, x in (("u", u), ("u2", u * u), ("e2", E * E), ("z2", (E / u) ** 2)):
        q = np.asarray(hdquantiles(x, prob=probs))
        med = q[0]
        out[f"beta_gm_{key}"] = (x.mean() - med) / np.mean(np.abs(x - med))
        if key != "u":
            out[f"kappa_cs_{key}"] = (q[2] - q[1]) / (q[4] - q[3]) - _KAPPA_NORMAL
    return out


def spearman_scipy(E, u):
    from scipy.stats import spearmanr

    return spearmanr(np.abs(E), u).statistic


# ----------------------------------------------------------------------- kernels
def kernel_table(E, u):
    """{kernel name: zero-argument callable} for one set (E, u in file order)."""
    bins = make_bins(u, N_BINS)
    order = np.asarray(bins.order)
    Es, us = E[order], u[order]
    edges = np.asarray(bins.edges)
    k = {}
    for name, (fn, needs_e, needs_u) in KERNELS.items():
        args = ([E] if needs_e else []) + ([u] if needs_u else [])
        k[f"describe.KERNELS[{name}]" if name != "cc" else "correlation.spearman_cc"] = (
            lambda fn=fn, args=args: fn(*args)
        )
    k["scipy.stats.spearmanr (baseline)"] = lambda: spearman_scipy(E, u)
    k["binning.make_bins(uE, 20) [stable sort + HD edges]"] = lambda: make_bins(u, N_BINS)
    k["naive per-bin loop ENCE (baseline)"] = lambda: ence_naive(Es, us, edges)
    for st in ("ence_sd", "uce", "zmse", "zve"):
        k[f"bin_feature_sums + {st}"] = lambda st=st: STATISTICS[st].finish(
            bin_feature_sums(Es, us, edges), np.diff(edges).astype(float))
    k["statistic.bin_feature_sums + ENCE (numba one pass)"] = lambda: STATISTICS["ence"].finish(
        bin_feature_sums(Es, us, edges), np.diff(edges).astype(float)
    )
    k["tailedness.tailedness (HD quantiles)"] = lambda: tailedness(E, u)
    k["full-weight HD tailedness (baseline)"] = lambda: tailedness_full_hd(E, u)
    specs = [parse_stat(s) for s in DESCRIBE_STATS]
    k["SetEvaluator.estimate (16 DESCRIBE_STATS, fresh)"] = (
        lambda: SetEvaluator(E, u, specs).estimate()
    )
    return k


RATIOS = {  # uqx kernel -> baseline kernel
    "correlation.spearman_cc": "scipy.stats.spearmanr (baseline)",
    "statistic.bin_feature_sums + ENCE (numba one pass)": "naive per-bin loop ENCE (baseline)",
    "tailedness.tailedness (HD quantiles)": "full-weight HD tailedness (baseline)",
}


def check_agreement(E, u):
    """Max deviations uqx vs baselines (the comparison is only fair if they agree)."""
    bins = make_bins(u, N_BINS)
    Es, us = E[bins.order], u[bins.order]
    d_cc = abs(correlation.spearman_cc(E, u) - spearman_scipy(E, u))
    fast = STATISTICS["ence"].finish(bin_feature_sums(Es, us, bins.edges),
                                   np.diff(bins.edges).astype(float))[0]
    d_ence = abs(fast - ence_naive(Es, us, bins.edges))
    t1, t2 = tailedness(E, u), tailedness_full_hd(E, u)
    d_t = max(abs(float(t1[key]) - float(t2[key])) for key in t2)
    return d_cc, d_ence, d_t


def time_kernels(kern, repeat, min_time):
    return {name: best_of(fn, repeat=repeat, min_time=min_time) for name, fn in kern.items()}


def describe_breakdown(E, u, rep: Report, repeat: int):
    """Where the time of a full statistics pass goes (fresh evaluator each time)."""
    specs = [parse_stat(s) for s in DESCRIBE_STATS]

    def part(attr):
        def f():
            ev = SetEvaluator(E, u, specs)
            getattr(ev, attr)
        return f

    for attr, label in (
        ("_features", "moment features (M x 5)"),
        ("_bin_prep", "bin prep: make_bins(uE) + gather + features (M x 6)"),
        ("_rank_prep", "rank prep: 2 stable argsorts + tie groups"),
    ):
        if not hasattr(SetEvaluator, attr):  # private internals may change upstream
            print(f"  describe part: {label}: n/a (SetEvaluator.{attr} no longer exists)")
            continue
        rep.add(f"  describe part: {label}", best_of(part(attr), repeat=repeat))
    ev = SetEvaluator(E, u, specs)
    ev.estimate()
    rep.add("  describe part: estimate(), repeated on one evaluator (preps cached)",
            best_of(ev.estimate, repeat=repeat))
    rep.add("  describe part: tailedness (4 sorts + 5 HD quantiles each)",
            best_of(lambda: tailedness(E, u), repeat=repeat))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--M", type=int, default=1_000_000, help="synthetic set size (10^6)")
    ap.add_argument("--repeat", type=int, default=5, help="repeats (best is kept)")
    ap.add_argument("--json", default=None, help="write all results to this JSON file")
    args = ap.parse_args(argv)

    info = header("uqx kernel benchmark (bench_kernels.py)")
    rep = Report(info)

    # ------------------------------------------------------------------ paper sets
    section("nine literature sets: per-kernel time (best of repeats, warm)")
    ds = uqx.load_paper_sets()
    sets = list(iter_sets(ds))
    for sd in sets:  # warm-up (numba compile/cache load, HD weight caches)
        kernel_table(sd.E, sd.uE)
        uqx.describe(uqx.from_arrays(sd.E, sd.uE, name=sd.name))
    per_set = {}
    for sd in sets:
        per_set[sd.name] = time_kernels(kernel_table(sd.E, sd.uE), args.repeat, 0.02)
    names = list(next(iter(per_set.values())))
    labels = [f"S{i + 1}" for i in range(len(sets))]
    print("sets: " + ", ".join(f"{lab}={sd.name} (M={sd.M})"
                               for lab, sd in zip(labels, sets, strict=True)))
    w = 52
    print(f"{'kernel (times in ms)':<{w}s}" + "".join(f"{lab:>8s}" for lab in labels)
          + f"{'all 9':>9s}")
    for name in names:
        ts = [per_set[sd.name][name] for sd in sets]
        print(f"{name[:w]:<{w}s}" + "".join(f"{t * 1e3:8.3f}" for t in ts)
              + f"{sum(ts) * 1e3:9.3f}")
        rep.rows.append({"name": f"paper9/{name}", "seconds_per_set":
                         {sd.name: per_set[sd.name][name] for sd in sets},
                         "seconds": sum(ts), "load": loadavg()})
    print("ratios over the nine sets (sum of baseline time / sum of uqx time):")
    for mine, base in RATIOS.items():
        t_m = sum(per_set[sd.name][mine] for sd in sets)
        t_b = sum(per_set[sd.name][base] for sd in sets)
        rep.add(f"paper9 sum: {mine}", t_m, ratio=t_b / t_m, baseline=base)

    # full pass on the nine stacked sets
    uqx.describe(ds)
    t9 = best_of(lambda: uqx.describe(ds), repeat=args.repeat)
    rep.add("uqx.describe(nine stacked paper sets)", t9, target="(none)")

    # ------------------------------------------------------------------ synthetic 1e6
    section(f"synthetic set M={args.M:,} (uE^2 ~ InvGamma(3, scale 3), E = uE*N(0,1))")
    E, u = synthetic(args.M)
    d_cc, d_ence, d_t = check_agreement(E, u)
    print(f"agreement with baselines: |dCC|={d_cc:.1e}  |dENCE|={d_ence:.1e}  "
          f"max|d tailedness|={d_t:.1e}")
    kern = kernel_table(E, u)
    for fn in kern.values():  # warm
        fn()
    reps_big = max(3, args.repeat // 2 + 1)
    tk = time_kernels(kern, reps_big, 0.0)
    for name, t in tk.items():
        if name in RATIOS:
            rep.add(f"1e6: {name}", t, ratio=tk[RATIOS[name]] / t, baseline=RATIOS[name])
        else:
            rep.add(f"1e6: {name}", t)

    # batch (rows of simulated data sets, as in uqx.simulate_reference): prefix sums
    # are vectorised over rows, the naive loop is not
    b, m = 1000, 5000
    rng = np.random.default_rng(7)
    ub = np.sort(np.sqrt(3.0 / rng.gamma(3.0, 1.0, m)))
    Eb = ub * rng.standard_normal((b, m))
    eb = np.asarray(make_bins(ub, N_BINS).edges)
    dev = np.max(np.abs(STATISTICS["ence"].finish(bin_feature_sums(Eb, ub, eb),
                                                 np.diff(eb).astype(float))
                        - ence_naive_rows(Eb, ub, eb)))
    t_nb = best_of(lambda: STATISTICS["ence"].finish(bin_feature_sums(Eb, ub, eb),
                                                   np.diff(eb).astype(float)), repeat=reps_big)
    t_loop = best_of(lambda: ence_naive_rows(Eb, ub, eb), repeat=reps_big)
    rep.add(f"batch {b}x{m}: bin_feature_sums + ENCE (numba)", t_nb,
            ratio=t_loop / t_nb, baseline="naive row x bin loop", note=f"max dev {dev:.1e}")
    rep.add(f"batch {b}x{m}: naive row x bin loop (baseline)", t_loop)

    # ------------------------------------------------------------------ headline
    section(f"HEADLINE: full statistics pass over M={args.M:,}: uqx.describe (16 stats, "
            f"{N_BINS} bins, tailedness)")
    dsyn = uqx.from_arrays(E, u, name="synthetic")
    uqx.describe(dsyn)  # warm
    t_desc = best_of(lambda: uqx.describe(dsyn), repeat=reps_big)
    # baseline of the same pass written with scipy/numpy: the unbinned numpy kernels,
    # scipy spearmanr, naive per-bin loops (ENCE, UCE, ZMSE, ZVE with a stable sort) and
    # full-weight HD tailedness (5 binned stats: ENCE, ENCE_sd, UCE, ZMSE, ZVE)
    t_base = (sum(tk[f"describe.KERNELS[{n}]"] for n in KERNELS if n != "cc")
              + tk["scipy.stats.spearmanr (baseline)"]
              + tk["binning.make_bins(uE, 20) [stable sort + HD edges]"]
              + 5 * tk["naive per-bin loop ENCE (baseline)"]
              + tk["full-weight HD tailedness (baseline)"])
    rep.add(f"HEADLINE uqx.describe, M={args.M:,} (warm)", t_desc,
            target=f"< {HEADLINE_TARGET:g} s", ratio=t_base / t_desc,
            baseline="sum of numpy/scipy baseline kernels (same pass)",
            status=verdict(t_desc, HEADLINE_TARGET))
    print("where the describe time goes (fresh SetEvaluator per call, best of repeats):")
    describe_breakdown(E, u, rep, reps_big)

    print(f"\n# load average at end: {loadavg()}")
    summary = (f"SUMMARY: describe(M={args.M:,}) = {fmt_t(t_desc)} "
               f"(target < {HEADLINE_TARGET:g} s: {verdict(t_desc, HEADLINE_TARGET)}); "
               f"describe(nine sets) = {fmt_t(t9)}")
    print(summary)
    rep.dump(args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
