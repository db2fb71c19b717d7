"""Do the stated resolutions hold? Twins miscalibrated by exactly the stated resolution.

For each calibrated set (errors normal or t_s(6), uE log-normal: a distribution the report
grid does not hold), ``uqx.validate`` states the resolution of every ``valid``: the
factor of uE (ZMS), the bias (⟨Z⟩), the top-decile factor (ZMSE, ZMS_scan, the
consistency question). A *twin* keeps the set's uE and draws fresh errors miscalibrated
by exactly that amount:

* ZMS at its lower / upper factor f: E = f·uE·ε;
* ⟨Z⟩ at its bias b: E = uE·(ε + b·sd(ε));
* ZMSE, ZMS_scan and the consistency question at their top factor f: E = uE·ε, times f
  where uE is above its 90th percentile.

The claim "had uE been off by this much, the verdict would not have been `valid` with
80 % power" holds when the twins read `valid` at most 20 % of the time (the issue's
target: upper Wilson-cc limit 25 %). Each set and its twins are independent draws.

Run: ``.venv/bin/python benchmarks/bench_resolution_twins.py [--sets 100] [--M 2000]
[--errors normal,t6] [--seed 3601] [--workers 2]`` (about 15 min for 2 × 100 sets on
2 cores). Prints, per claim and error shape, the twins' `valid` rate with its interval.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np
from _common import header, section

N_MC = 1000  # the verdicts' test copies of the defaults (N_TEST)


def _errors(kind, rng, M):
    if kind == "normal":
        return rng.standard_normal(M)
    nu = float(kind[1:])
    return rng.standard_t(nu, M) / np.sqrt(nu / (nu - 2))


def _base(seed, kind, M, i):
    rng = np.random.default_rng([seed, 1, i])
    u = np.exp(rng.normal(0.0, 0.5, M))
    return u, u * _errors(kind, rng, M)


CLAIMS = ("zms_low", "zms_high", "mean_z_low", "mean_z_high", "zmse", "zms_scan",
          "consistency")


def _twin(seed, kind, M, i, u, claim, value):
    rng = np.random.default_rng([seed, 2, i, CLAIMS.index(claim)])
    eps = _errors(kind, rng, M)
    if claim.startswith("zms_"):
        return value * u * eps
    if claim.startswith("mean_z_"):
        return u * (eps + value)
    top = u > np.quantile(u, 0.9)
    return np.where(top, value, 1.0) * u * eps


def _block(args):
    """Validate a block of base sets, then their twins; return per claim (stated, valid)."""
    import uqx

    seed, kind, M, lo, hi = args
    bases = {i: _base(seed, kind, M, i) for i in range(lo, hi)}
    ds = uqx.stack([uqx.from_arrays(E, u, name=f"b{i}") for i, (u, E) in bases.items()])
    res = uqx.validate(ds, bootstrap=100, copies=N_MC, conditional=False,
                       compute=uqx.Compute(seed=seed, scheduler="synchronous"))
    claims = []
    for k, i in enumerate(bases):
        r = res.isel(set=k)
        def stat(s, v, r=r):
            return float(r[v].sel(stat=s))

        def valid(s, r=r):
            return str(r["verdict"].sel(stat=s).item()) == "valid"

        if valid("zms"):
            claims += [(i, "zms_low", stat("zms", "resolution_low")),
                       (i, "zms_high", stat("zms", "resolution_high"))]
        if valid("mean_z"):
            claims += [(i, "mean_z_low", stat("mean_z", "resolution_low")),
                       (i, "mean_z_high", stat("mean_z", "resolution_high"))]
        for s in ("zmse", "zms_scan"):
            if valid(s):
                claims.append((i, s, stat(s, "resolution_high")))
        q = r.sel(question="consistency")
        if str(q["question_verdict"].item()) == "valid":
            claims.append((i, "consistency", float(q["question_resolution_high"])))
    claims = [c for c in claims if np.isfinite(c[2])]
    twins = [uqx.from_arrays(_twin(seed, kind, M, i, bases[i][0], c, v), bases[i][0],
                             name=f"t{n}") for n, (i, c, v) in enumerate(claims)]
    out = []
    if twins:
        tres = uqx.validate(uqx.stack(twins), bootstrap=100, copies=N_MC, conditional=False,
                            decision=uqx.Decision(resolution=False),
                            compute=uqx.Compute(seed=seed + 1, scheduler="synchronous"))
        for n, (_i, c, v) in enumerate(claims):
            t = tres.isel(set=n)
            if c == "consistency":
                got = str(t["question_verdict"].sel(question="consistency").item())
            else:
                got = str(t["verdict"].sel(stat=c.rsplit("_", 1)[0] if c.startswith(
                    ("zms_l", "zms_h", "mean_z_")) else c).item())
            out.append((c, v, got))
    n_base = {"zms": int((res["verdict"].sel(stat="zms") == "valid").sum()),
              "consistency": int((res["question_verdict"].sel(question="consistency")
                                  == "valid").sum())}
    return out, n_base


def main(argv=None) -> int:
    from uqx.sweeps._common import rate_interval

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sets", type=int, default=100)
    p.add_argument("--M", type=int, default=2000)
    p.add_argument("--errors", default="normal,t6")
    p.add_argument("--seed", type=int, default=3601)
    p.add_argument("--workers", type=int, default=2)
    a = p.parse_args(argv)
    header("resolution twins")
    print(f"# {a.sets} calibrated sets per error shape, M = {a.M}, uE log-normal (sd of ln u "
          f"0.5), seed {a.seed}, n_mc = {N_MC}")
    for kind in a.errors.split(","):
        t0, c0 = time.time(), time.process_time()
        jobs = [(a.seed, kind, a.M, lo, min(lo + 10, a.sets)) for lo in range(0, a.sets, 10)]
        with ProcessPoolExecutor(a.workers) as ex:
            parts = list(ex.map(_block, jobs))
        rows = [r for part, _ in parts for r in part]
        section(f"errors {kind}: {time.time() - t0:.0f} s wall, {time.process_time() - c0:.0f} "
                "s CPU of this process (the workers' not counted)")
        print("| claim | twins | stated value (median) | twins `valid` | Wilson-cc 95 % |")
        print("|---|---|---|---|---|")
        for claim in CLAIMS:
            sel = [(v, g) for c, v, g in rows if c == claim]
            if not sel:
                continue
            x = sum(g == "valid" for _, g in sel)
            rate, lo, hi = rate_interval(np.array(x), np.array(len(sel)))
            med = float(np.median([v for v, _ in sel]))
            print(f"| {claim} | {len(sel)} | {med:.3g} | {float(rate):.3f} | "
                  f"[{float(lo):.3f}, {float(hi):.3f}] |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
