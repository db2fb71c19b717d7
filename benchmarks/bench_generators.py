"""Benchmark of the numba random-variate generators of uqx.engine.generators.

Nanoseconds per draw of every generator, single thread, on 10^7 draws into a
preallocated float64 array (``uqx.engine.generators.fill`` on a keyed xoshiro256** stream),
next to NumPy's ``Generator(PCG64)`` measured in the same run on the same sizes
(``random``, ``standard_normal``, ``standard_gamma`` with ``out=``; ``standard_t``,
``chisquare``, ``laplace``, ``uniform`` allocate their result). The NumPy t row is the
raw ``standard_t`` (without the rescaling to unit variance that uqx's ``t`` includes).

Then the in-kernel cost, the way a simulation kernel uses the generators (draw and
accumulate, nothing materialised): a numba loop summing ``(u_i * eps)^2`` with
``eps`` from the register form (``normal_step`` / ``t_step``) and from the array form
(``next_normal(state)`` / ``next_t(state, nu)``).

Targets (one core): normal <= 3 ns, t_s <= 6 ns, gamma <= 6 ns per draw. Timings are the
best of ``--repeat`` runs, wall clock (``perf_counter``) and thread CPU time
(``thread_time``: insensitive to other processes taking the core); the load average is
printed with each section. The targets are judged on the CPU time (the cost of a draw on
one core): on a shared 2-core machine under load the wall clock measures the scheduler.

Run from the repository root::

    .venv/bin/python benchmarks/bench_generators.py [--n 10000000] [--repeat 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numba
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, loadavg, section  # noqa: E402

from uqx.engine import generators as G  # noqa: E402
from uqx.engine.resample import seed_sequence  # noqa: E402

TARGETS = {"normal": 3.0, "t": 6.0, "gamma": 6.0}  # ns per draw, one core


def best_times(fn, repeat):
    """Best wall and thread-CPU seconds of ``fn()`` over ``repeat`` runs (after a warm-up)."""
    fn()
    wall = cpu = math.inf
    for _ in range(repeat):
        w, c = time.perf_counter(), time.thread_time()
        fn()
        cpu = min(cpu, time.thread_time() - c)
        wall = min(wall, time.perf_counter() - w)
    return wall, cpu


@numba.njit(nogil=True, cache=True)
def _sum_normal_reg(state, u):
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    acc = 0.0
    for i in range(u.shape[0]):
        e, s0, s1, s2, s3 = G.normal_step(s0, s1, s2, s3)
        acc += (u[i] * e) ** 2
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return acc


@numba.njit(nogil=True, cache=True)
def _sum_normal_arr(state, u):
    acc = 0.0
    for i in range(u.shape[0]):
        acc += (u[i] * G.next_normal(state)) ** 2
    return acc


@numba.njit(nogil=True, cache=True)
def _sum_t_reg(state, u, nu):
    d, c, h = G.t_params(nu)
    s0, s1, s2, s3 = state[0], state[1], state[2], state[3]
    acc = 0.0
    for i in range(u.shape[0]):
        e, s0, s1, s2, s3 = G.t_step(s0, s1, s2, s3, d, c, h)
        acc += (u[i] * e) ** 2
    state[0], state[1], state[2], state[3] = s0, s1, s2, s3
    return acc


@numba.njit(nogil=True, cache=True)
def _sum_t_arr(state, u, nu):
    acc = 0.0
    for i in range(u.shape[0]):
        acc += (u[i] * G.next_t(state, nu)) ** 2
    return acc


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10**7, help="draws per timing (default 10^7)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    n = args.n
    info = header("uqx.engine.generators: ns per draw, single thread, vs numpy Generator(PCG64)")
    print(f"# {n:,} draws per timing, best of {args.repeat}; numba threads unused (serial "
          "kernels)")

    out = np.empty(n)
    out[:] = 0.0  # touch the pages once: no page faults inside the timings
    state = G.stream_state(seed_sequence(20261122, "bench"))
    rng = np.random.Generator(np.random.PCG64(seed_sequence(20261122, "numpy")))
    s3 = math.sqrt(3.0)

    def ours(dist, **kw):
        return lambda: G.fill(state, out, dist, **kw)

    rows = [
        ("uniform01", "[0, 1)", ours("uniform01"), lambda: rng.random(out=out)),
        ("normal", "N(0,1)", ours("normal"), lambda: rng.standard_normal(out=out)),
        ("gamma", "shape 0.5", ours("gamma", shape=0.5),
         lambda: rng.standard_gamma(0.5, out=out)),
        ("gamma", "shape 1.5", ours("gamma", shape=1.5),
         lambda: rng.standard_gamma(1.5, out=out)),
        ("gamma", "shape 3", ours("gamma", shape=3.0),
         lambda: rng.standard_gamma(3.0, out=out)),
        ("invgamma", "shape 3", ours("invgamma", shape=3.0),
         lambda: np.divide(1.0, rng.standard_gamma(3.0, out=out), out=out)),
        ("chisquare", "nu 4", ours("chisquare", nu=4.0), lambda: rng.chisquare(4.0, n)),
        ("t", "t_s, nu 3", ours("t", nu=3.0), lambda: rng.standard_t(3.0, n)),
        ("t", "t_s, nu 6", ours("t", nu=6.0), lambda: rng.standard_t(6.0, n)),
        ("t", "t_s, nu 30", ours("t", nu=30.0), lambda: rng.standard_t(30.0, n)),
        ("laplace", "unit var.", ours("laplace"),
         lambda: rng.laplace(0.0, 1.0 / math.sqrt(2.0), n)),
        ("uniform", "unit var.", ours("uniform"), lambda: rng.uniform(-s3, s3, n)),
    ]
    section("fill: n draws into a float64 array")
    print(f"{'generator':<11s}{'case':<12s}{'uqx ns':>8s}{'numpy ns':>10s}{'ratio':>7s}"
          f"{'uqx cpu':>9s}{'np cpu':>8s}  target")
    results = []
    for dist, case, f_ours, f_np in rows:
        w_o, c_o = best_times(f_ours, args.repeat)
        w_n, c_n = best_times(f_np, args.repeat)
        ns_o, ns_n = 1e9 * w_o / n, 1e9 * w_n / n
        tgt = TARGETS.get(dist)
        verdict = ""
        if tgt is not None:  # judged on the CPU time: the cost on one core, whatever the load
            verdict = f"<= {tgt:g} ns {'PASS' if 1e9 * c_o / n <= tgt else 'MISS'}"
        print(f"{dist:<11s}{case:<12s}{ns_o:8.2f}{ns_n:10.2f}{ns_n / ns_o:6.1f}x"
              f"{1e9 * c_o / n:9.2f}{1e9 * c_n / n:8.2f}  {verdict}", flush=True)
        results.append({"dist": dist, "case": case, "uqx_ns": ns_o, "numpy_ns": ns_n,
                        "uqx_cpu_ns": 1e9 * c_o / n, "numpy_cpu_ns": 1e9 * c_n / n,
                        "target_ns": tgt, "load": loadavg()})

    section("in a kernel: sum of (u_i eps)^2, eps drawn on the fly (nothing materialised)")
    u = np.sqrt(3.0 / np.random.default_rng(1).gamma(3.0, 1.0, n))
    kernels = [
        ("normal_step (registers)", lambda: _sum_normal_reg(state, u)),
        ("next_normal(state)", lambda: _sum_normal_arr(state, u)),
        ("t_step nu 3 (registers)", lambda: _sum_t_reg(state, u, 3.0)),
        ("next_t(state, 3)", lambda: _sum_t_arr(state, u, 3.0)),
    ]
    base_w, base_c = best_times(lambda: np.dot(u, u), args.repeat)
    print(f"{'form':<26s}{'ns/draw':>8s}{'cpu ns':>8s}")
    for name, fn in kernels:
        w, c = best_times(fn, args.repeat)
        print(f"{name:<26s}{1e9 * w / n:8.2f}{1e9 * c / n:8.2f}", flush=True)
        results.append({"dist": name, "case": "kernel", "uqx_ns": 1e9 * w / n,
                        "uqx_cpu_ns": 1e9 * c / n, "load": loadavg()})
    print(f"{'(np.dot(u, u), reference)':<26s}{1e9 * base_w / n:8.2f}{1e9 * base_c / n:8.2f}")
    if args.json:
        info["loadavg_end"] = loadavg()
        Path(args.json).write_text(json.dumps({"info": info, "rows": results}, indent=1))
        print(f"\n# results written to {args.json}")


if __name__ == "__main__":
    main()
