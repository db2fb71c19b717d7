"""Power of each candidate statistic for the consistency node, beside the verdict's.

On miscalibrated synthetic sets of the error-rates study (``uqx.sweeps.error_rates``,
M = 2000, u drawn for every set), each set is validated with the default statistics and
the n_mc = 1000 copies of the verdicts. A candidate statistic *rejects* a set when its
unadjusted Monte-Carlo p-value is at most the consistency node's initial share of the
family-wise level (0.425 × 0.10) under every member of the null family that takes part
(``member_plausible``):
the power it would have as the node's statistic before any share is passed on. The
verdict column is the consistency question's ``invalid`` rate under the current rule
(ZMS_scan, in the closed graph). Printed with Wilson continuity-corrected intervals.

Run: ``.venv/bin/python benchmarks/bench_candidate_power.py [--sets 100] [--seed 5301]
[--workers 2]`` (about 10 min on 2 cores).
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from _common import header, section

CANDIDATES = ("zms_scan", "zmse_max", "zmse", "ence", "zve")
CELLS = (("ig6_normal", "top0.6"), ("ig6_t6", "top0.6"), ("ig6_normal", "top0.6-true"),
         ("ig6_t6", "top0.6-true"), ("ig6_normal", "gamma0.5"), ("ig6_t6", "gamma0.5"))
SHARE = 0.425 * 0.10


def _block(args):
    import uqx
    from uqx.sweeps.error_rates import synthetic_set

    design, scenario, seed, lo, hi = args
    out = []
    for i in range(lo, hi):
        E, u, _ = synthetic_set(design, scenario, 2000, seed=seed, index=i, u_per_set=True)
        r = uqx.validate(uqx.from_arrays(E, u, name="s"), bootstrap=200, copies=1000,
                         conditional=False, decision=uqx.Decision(resolution=False),
                         compute=uqx.Compute(seed=seed * 1000 + i, scheduler="synchronous"),
                         ).isel(set=0)
        use = r["member_plausible"].values.astype(bool)
        row = {}
        for s in CANDIDATES:
            p = r["p_value"].sel(stat=s).values[use]
            row[s] = bool(p.size and np.all(np.isfinite(p)) and np.all(p <= SHARE))
        row["verdict"] = str(r["question_verdict"].sel(question="consistency").item())
        out.append(row)
    return out


def main(argv=None) -> int:
    from uqx.sweeps._common import rate_interval

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", type=int, default=100)
    p.add_argument("--seed", type=int, default=5301)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args(argv)
    header("candidate statistics' power (consistency node)")
    print(f"# {a.sets} sets per cell, M = 2000, seed {a.seed}, share {SHARE:.4f}")
    table = ["| design | scenario | " + " | ".join(CANDIDATES) + " | verdict invalid |",
             "|---|---|" + "---|" * (len(CANDIDATES) + 1)]
    for design, scenario in CELLS:
        t0 = time.time()
        jobs = [(design, scenario, a.seed, lo, min(lo + 10, a.sets))
                for lo in range(0, a.sets, 10)]
        with ProcessPoolExecutor(a.workers) as ex:
            rows = [r for part in ex.map(_block, jobs) for r in part]
        cells = []
        for s in [*CANDIDATES, "verdict"]:
            x = sum((r[s] == "invalid") if s == "verdict" else r[s] for r in rows)
            rate, lo, hi = rate_interval(np.array(x), np.array(len(rows)))
            cells.append(f"{100 * float(rate):.0f} [{100 * float(lo):.0f}, "
                         f"{100 * float(hi):.0f}]")
        table.append(f"| {design} | {scenario} | " + " | ".join(cells) + " |")
        section(f"{design} {scenario}: {time.time() - t0:.0f} s")
    print("\n" + "\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
