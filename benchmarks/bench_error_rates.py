"""The error-rates study of the verdicts: its cost and the measured rates (issue 12).

Runs ``uqx.sweeps.error_rates`` on a grid, writes the archive, prints the wall time, the
sets per second, and the tables of measured rates (the verdicts, then the papers' ζ rule
on the same sets: "after" and "before"), ready for the README section "How often is a
verdict wrong?".

Run: ``.venv/bin/python benchmarks/bench_error_rates.py [--full] [-o ARCHIVE.nc]``.
``--full``: the issue's grid (ν_u ∈ {3, 6, 20} × ε ∈ {N, t4, t6} × M ∈ {500, 2000, 5000,
20000}, 400 sets per calibrated cell, every miscalibrated scenario at M = 2000 on two
designs; n_boot 1000, n_mc 500). Without it: M ∈ {500, 2000}, 100 sets per cell, plus
the designs beyond the named grid (log-normal and uniform uncertainties; Laplace, uniform
and skewed errors), so the rates can be checked on shapes the rule was not tuned on.
"""

from __future__ import annotations

import argparse
import time

from _common import header, section

EXTRA = ("lognormal_laplace", "uniform_uniform", "ig6_skewed", "lognormal_t4")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="the issue's full grid")
    p.add_argument("-o", "--output", default=None, help="archive (NetCDF)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--resume", action="store_true")
    args = p.parse_args(argv)

    from uqx.sweeps.error_rates import DEFAULT_DESIGNS, error_rates, rates_table

    header("error-rates study of the verdicts")
    if args.full:
        opts = dict(designs=list(DEFAULT_DESIGNS), M=[500, 2000, 5000, 20000], n_datasets=400)
    else:
        opts = dict(designs=list(DEFAULT_DESIGNS) + list(EXTRA), M=[500, 2000],
                    n_datasets=100)
    t = time.perf_counter()
    ds = error_rates(**opts, n_boot=1000, n_mc=500, scheduler="processes",
                     num_workers=args.workers, output=args.output, resume=args.resume,
                     quiet=False)
    dt = time.perf_counter() - t
    n = int(ds["n_sets"].max("test").sum())
    section(f"{n} sets validated in {dt / 60:.1f} min ({n / dt:.2f} sets/s, "
            f"{args.workers} worker processes)")
    print("\nverdicts (uqx.mctest rule): rate [Wilson-cc limit]\n")
    print(rates_table(ds))
    print("\nthe papers' zeta rule on the same sets (before)\n")
    print(rates_table(ds, tests=("zms", "rce", "cc", "ence", "zmse", "zve"), zeta=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
