"""How often does the demo's ``nonadaptive`` design read consistency ``invalid``?

The design (:func:`uqx.dataio.synth.demo_sets`) is consistent on uE by construction: the
variance of E grows with X from 0.25 u² to 1.75 u², and its mean over X ~ U(0, 1) is u².
Any consistency ``invalid`` on it is a false rejection. The demo's own seed gives one, with
a borderline p-value; this counts them on fresh draws of the design (errors, uE and X all
redrawn per seed), with the defaults' test copies (n_mc = 1000).

Run: ``.venv/bin/python benchmarks/bench_demo_false_rejection.py [--seeds 400] [--first 1000]
[--M 5000]`` (about 3 min for 400 seeds on 2 cores). Prints the rate of each verdict of
the consistency and adaptivity (X) questions, with Wilson continuity-corrected intervals.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

import numpy as np
from _common import header, section
from scipy.stats import binomtest

import uqx
from uqx.dataio.synth import _rng, nig


def one(seed: int, M: int) -> dict:
    """The question verdicts of one draw of the ``nonadaptive`` design."""
    E, u = nig(M, 6.0, seed=seed, key=("demo",))
    X = _rng(seed, "demo-extra").uniform(0, 1, M)
    ds = uqx.from_arrays(E * np.sqrt(0.25 + 1.5 * X), u, X=X, name="nonadaptive")
    res = uqx.validate(ds, bootstrap=200, copies=1000, conditional=False,
                       decision=uqx.Decision(resolution=False), compute=uqx.Compute(seed=seed))
    return {str(q): str(v) for q, v in zip(res["question"].values,
                                            res["question_verdict"].values[0], strict=True)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=400)
    ap.add_argument("--first", type=int, default=1000)
    ap.add_argument("--M", type=int, default=5000)
    args = ap.parse_args()
    header("demo nonadaptive: consistency's false rejections")
    t0 = time.perf_counter()
    got = [one(s, args.M) for s in range(args.first, args.first + args.seeds)]
    section(f"{args.seeds} seeds from {args.first}, M = {args.M}: "
            f"{time.perf_counter() - t0:.0f} s")
    for q in ("consistency", "adaptivity_X"):
        counts = Counter(g[q] for g in got)
        for v, k in sorted(counts.items()):
            ci = binomtest(k, args.seeds).proportion_ci(method="wilsoncc")
            print(f"{q:14s} {v:13s} {k:4d} / {args.seeds}  {100 * k / args.seeds:5.1f} % "
                  f"[{100 * ci.low:.1f}, {100 * ci.high:.1f}]")


if __name__ == "__main__":
    main()
