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
``--report-grid size|power``: the grid on which the rule is reported (issue 36; its
constants were chosen on the tuning seed :data:`TUNING_SEED`, the report runs once on
:data:`REPORT_SEEDS`, after the last change of the rule): :data:`REPORT_DESIGNS`
(classes A and B, tied uE, t_s(2.5), shapes that change with uE), calibrated, M ∈ {200,
500, 2000}, 600 / 400 / 600 sets per cell (``size``, :data:`SIZE_SETS`: one run per
count, joined by ``uqx.sweeps.error_rates.combine``); the seven :data:`POWER_SCENARIOS`
(scales 0.9 and 1.1, γ = 0.5, variance growing with X, bias 0.2 uE, uE 40 % too small
in the top decile of uE or of the true u) on ig6_normal and ig6_t6 at M = 2000, 200 sets
per cell with uE drawn for every set (``power``); ``--M`` and ``--seed`` run a part of
it, or the same on other draws. Both parts take about 30 min on 2 cores:
``bench_error_rates.py --report-grid size -o SIZE.nc``, ``... --report-grid power -o
POWER.nc``, then ``--from SIZE.nc --power POWER.nc --markdown docs/error_rates_table.md
--readme README.md``. ``--beyond``: only those designs beyond the named grid, calibrated, M ∈ {500,
2000, 5000}, 400 sets per cell (seed 7). ``--from ARCHIVE [--extra BEYOND_ARCHIVE]
[--markdown docs/error_rates_table.md] [--readme README.md]``: print (and write) the
tables of finished archives without running anything; ``--from SIZE.nc --power POWER.nc``
the report grid's tables (README and docs).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _common import header, section

EXTRA = ("lognormal_laplace", "uniform_uniform", "ig6_skewed", "lognormal_t4")
#: The report grid's designs: the named 3 x 3, tied uE, t_s(2.5), the shapes that change
#: with uE (toward t_s(4): mixed, ig3_mixed; within class A: mixed6) and Laplace errors.
REPORT_DESIGNS = ("ig3_normal", "ig3_t4", "ig3_t6", "ig6_normal", "ig6_t4", "ig6_t6",
                  "ig20_normal", "ig20_t4", "ig20_t6", "tied5_normal", "tied5_t6",
                  "ig6_t2.5", "ig6_mixed", "ig6_mixed6", "uniform_laplace", "ig3_mixed")
POWER_SCENARIOS = ("scale0.9", "scale1.1", "gamma0.5", "x-variance", "shift0.2", "top0.6",
                   "top0.6-true")
#: Sets per calibrated cell of the report grid, by M: enough that a size of 4-5 % is read
#: with a Wilson upper limit near 7 % (200 sets gave 8-9 %; 300 at M = 2000, in blocks of
#: 10 sharing uE, still 7-8 %).
SIZE_SETS = {200: 600, 500: 400, 2000: 600}
#: The report grid's seeds, chosen before the run and never run before it: those of the
#: current rule (one graph of node tests, each question also at alpha/2 by itself;
#: 4601 / 4603 were run before that change, 4501 / 4503 and 3621 / 3622 on the rules
#: before); the rule's constants were chosen on the tuning seed 31.
REPORT_SEEDS = {"size": 4701, "power": 4703}
TUNING_SEED = 31
#: The study's settings of the report grid: the verdicts' default test copies (1000 per
#: member, N_TEST); 200 bootstrap replicates (the BCa intervals feed only the papers' ζ
#: column, not the verdicts; the default 10 000 would triple the time).
REPORT_N_BOOT, REPORT_N_MC = 200, 1000


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="the issue's full grid")
    p.add_argument("--beyond", action="store_true",
                   help="the designs beyond the named grid, calibrated, 400 sets per cell")
    p.add_argument("--report-grid", choices=["size", "power"], default=None,
                   help="the report grid (issue 36): 'size' = REPORT_DESIGNS calibrated, "
                        "M in {200, 500, 2000}, 600 / 400 / 600 sets per cell (SIZE_SETS); "
                        "'power' = the seven POWER_SCENARIOS on ig6_normal and ig6_t6 at "
                        "M = 2000, 200 sets per cell, uE drawn for every set")
    p.add_argument("--M", default=None,
                   help="with --report-grid: comma-separated sizes instead of 200,500,2000")
    p.add_argument("--n-datasets", type=int, default=None,
                   help="with --report-grid: sets per cell at every M instead of SIZE_SETS "
                        "(size) / 200 (power)")
    p.add_argument("--seed", type=int, default=None,
                   help="with --report-grid: root seed instead of REPORT_SEEDS (a report "
                        "seed is run once, after the last change of the rule)")
    p.add_argument("-o", "--output", default=None, help="archive (NetCDF)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--from", dest="archive", default=None,
                   help="print the tables of an existing archive instead of running")
    p.add_argument("--power", default=None,
                   help="with --from: the power archive of the report grid, tabulated after "
                        "the calibrated rows (the README and docs tables of issue 21)")
    p.add_argument("--extra", default=None,
                   help="with --from: an archive of designs beyond the named grid, "
                        "tabulated separately")
    p.add_argument("--markdown", default=None,
                   help="also write the tables as Markdown (docs/error_rates_table.md)")
    p.add_argument("--readme", default=None,
                   help="also splice them into README.md between its error-rates markers")
    args = p.parse_args(argv)

    from uqx.sweeps.error_rates import (
        DEFAULT_DESIGNS,
        error_rates,
    )

    if args.archive:
        import xarray as xr

        size = xr.load_dataset(args.archive)
        if args.power:
            _report_tables(size, xr.load_dataset(args.power), args.markdown, args.readme)
            return 0
        extra = xr.load_dataset(args.extra) if args.extra else None
        _tables(size, args.markdown, args.readme, extra=extra)
        return 0

    header("error-rates study of the verdicts")
    if args.report_grid == "size":
        opts = dict(designs=list(REPORT_DESIGNS), M=[200, 500, 2000],
                    scenarios=["calibrated"], n_datasets=300, seed=REPORT_SEEDS["size"])
    elif args.report_grid == "power":
        opts = dict(designs=["ig6_normal", "ig6_t6"], M=[2000],
                    scenarios=list(POWER_SCENARIOS), n_datasets=200, power_M=[2000],
                    power_designs=["ig6_normal", "ig6_t6"], u_per_set=True,
                    seed=REPORT_SEEDS["power"])
    elif args.full:
        opts = dict(designs=list(DEFAULT_DESIGNS), M=[500, 2000, 5000, 20000], n_datasets=400)
    elif args.beyond:
        opts = dict(designs=list(EXTRA), M=[500, 2000, 5000], scenarios=["calibrated"],
                    n_datasets=400, seed=7)
    else:
        opts = dict(designs=list(DEFAULT_DESIGNS) + list(EXTRA), M=[500, 2000],
                    n_datasets=100)
    if args.report_grid and args.M:  # a part of the report grid
        opts["M"] = [int(m) for m in args.M.split(",")]
        if "power_M" in opts:
            opts["power_M"] = opts["M"]
    if args.report_grid and args.seed is not None:
        opts["seed"] = args.seed
    if args.report_grid and args.n_datasets:
        opts["n_datasets"] = args.n_datasets
    t = time.perf_counter()
    if args.report_grid == "size" and not args.n_datasets:
        ds = _size_by_M(opts, args)
    else:
        ds = error_rates(**opts, n_boot=REPORT_N_BOOT, n_mc=REPORT_N_MC, scheduler="processes",
                         num_workers=args.workers, output=args.output, resume=args.resume,
                         quiet=False)
    dt = time.perf_counter() - t
    n = int(ds["n_sets"].max("test").sum())
    section(f"{n} sets validated in {dt / 60:.1f} min ({n / dt:.2f} sets/s, "
            f"{args.workers} worker processes)")
    _tables(ds, args.markdown, args.readme)
    return 0


def _size_by_M(opts, args):
    """The calibrated report grid with :data:`SIZE_SETS` sets per cell: one run per set
    count (each its own archive, resumable), joined by ``combine`` into ``-o``."""
    from pathlib import Path

    from uqx.dataio.netcdf import to_netcdf
    from uqx.sweeps.error_rates import combine, error_rates

    groups = {}
    for M in opts["M"]:
        groups.setdefault(SIZE_SETS.get(M, 200), []).append(M)
    parts = []
    for n, Ms in groups.items():
        out = None
        if args.output:
            base = Path(args.output)
            out = base.with_name(f"{base.stem}.part-M{'-'.join(map(str, Ms))}{base.suffix}")
        t = time.perf_counter()
        parts.append(error_rates(**dict(opts, M=Ms, n_datasets=n), n_boot=REPORT_N_BOOT,
                                 n_mc=REPORT_N_MC,
                                 scheduler="processes", num_workers=args.workers, output=out,
                                 resume=args.resume, quiet=False))
        section(f"M = {', '.join(map(str, Ms))}: {n} sets per cell in "
                f"{(time.perf_counter() - t) / 60:.1f} min")
    ds = combine(parts)
    if args.output:
        to_netcdf(ds, args.output)
    return ds


def _tables(ds, markdown=None, readme=None, extra=None):
    from uqx.sweeps.error_rates import rates_table

    n_boot, n_mc = ds.attrs.get("n_boot"), ds.attrs.get("n_mc")
    intro = (f"Measured by the `error-rates` study (n_boot = {n_boot}, n_mc = {n_mc}). "
             "Each cell: the rate, and in brackets its Wilson-cc 95 % limit (upper for "
             "false rejections, lower for acceptance and power); calibrated rows give the "
             "worst design at that M; for `any`, \"valid\" means no `invalid` anywhere in "
             "the set's result. Designs (uncertainties_errors): "
             + ", ".join(str(d) for d in ds["design"].values) + ".")
    after = rates_table(ds)
    before = rates_table(ds, tests=("zms", "rce", "cc", "ence", "zmse", "zve"), zeta=True)
    parts = [intro, "", "**Verdicts (after)**", "", after, "",
             "**The papers' ζ rule on the same sets (before)**", "", before, ""]
    if extra is not None:
        parts += ["**Beyond the named grid** (calibrated; designs "
                  + ", ".join(str(d) for d in extra["design"].values)
                  + "): verdicts, then the papers' ζ rule", "", rates_table(extra), "",
                  rates_table(extra, tests=("zms", "rce", "cc", "ence", "zmse", "zve"),
                              zeta=True), ""]
    _write("\n".join(parts), intro + "\n\n" + after, markdown, readme)


def _write(text, readme_text, markdown=None, readme=None):
    """Print ``text``, write it to ``markdown`` and splice ``readme_text`` into ``readme``
    between its error-rates markers."""
    from pathlib import Path

    print(text)
    if markdown:
        Path(markdown).write_text(text)
    if readme:
        path = Path(readme)
        head, rest = path.read_text().split(README_START, 1)
        _, tail = rest.split(README_END, 1)
        marker = README_START + rest.split("\n", 1)[0]
        path.write_text(head + marker + "\n" + readme_text + "\n" + README_END + tail)


def _report_tables(size, power, markdown=None, readme=None):
    """The report grid's tables (issue 36): by class of errors, power per design, layers."""
    from uqx.sweeps.error_rates import layers_table, rates_table

    per_M = size["n_sets"].sel(scenario="calibrated").max(("design", "test"))
    counts = [int(n) for n in per_M.values]
    sizes = ", ".join(str(int(m)) for m in size["M"].values)
    n_pow = int(power["n_sets"].max().item())
    intro = (
        f"Measured by the `error-rates` study (n_mc = {size.attrs.get('n_mc')}: the verdicts' "
        f"default 1000 test copies per member; n_boot = {size.attrs.get('n_boot')}, which "
        "only the papers' ζ column reads) on the report seeds, run once after the last change "
        f"of the rule: calibrated sets seed {size.attrs.get('seed')} (M = {sizes} with "
        f"{', '.join(map(str, counts))} sets per cell), miscalibrated sets seed "
        f"{power.attrs.get('seed')} ({n_pow} sets per cell at M = 2000, uE and X drawn for "
        f"every set). The rule's constants were chosen on the tuning seed {TUNING_SEED}. "
        "Designs (uncertainties_errors): `ig<k>`: u² ~ IG(k/2, k/2); `tied5`: u² ~ IG(3, 3) "
        "stored as five levels, the rows sorted by |E|; `t2.5`: beyond the safety limits; "
        "`mixed`: normal errors below the median of uE, t_s(4) above; `mixed6`: t_s(6) above; "
        "`uniform_laplace`: uE uniform on [0.5, 2], Laplace errors; `ig3_mixed`: the mixed "
        "errors with u² ~ IG(1.5, 1.5). Class A: Var Z² finite (normal, t6, Laplace, "
        "mixed6); class B: t_s(4), mixed, ig3_mixed, and CC where the shape changes with uE; "
        "beyond: t2.5. Calibrated sets share uE and X by blocks of 10; each cell reads the "
        "rate and, in brackets, its Wilson-cc 95 % limit on the effective number of sets "
        "(upper for false rejections, lower for acceptance and power); for `any`, `valid` "
        "means no `invalid` anywhere in the set's result.")
    # the statistics that carry a verdict (the nodes') and the questions; the papers'
    # other statistics are diagnostics (never `valid` nor `invalid`): their ζ rule is below
    tests = DECIDED + ("up_to_factor", "any")
    parts = [intro, ""]
    for cls, title in (("A", "Class A (calibrated; the worst design in each cell)"),
                       ("B", "Class B (calibrated; the worst design in each cell)"),
                       ("beyond", "Beyond the safety limits (calibrated)")):
        parts += [f"**{title}**", "", rates_table(size, tests=tests, cls=cls), ""]
    parts += ["**Power at M = 2000** (each design)", "",
              rates_table(power, tests=tests, per_design=True), "",
              "**Where the power is lost** (fraction of sets rejected at each layer: the "
              "best statistic alone at the question's initial level, the headline, after "
              "the levels passed between questions, the final verdict, and each member's own "
              "procedure)", "", layers_table(power), "",
              "**The papers' ζ rule on the same calibrated sets (before)**", "",
              rates_table(size, tests=("zms", "rce", "cc", "ence", "zmse", "zve"), zeta=True),
              ""]
    text = "\n".join(parts)
    _write(text, summary_lines(size, power), markdown, readme)


#: The tests that carry a verdict: the nodes' statistics and the questions.
DECIDED = ("zms", "mean_z", "cc", "zms_scan", "zms_scan_X", "average", "consistency",
           "adaptivity")


def _extreme(ds, var, tests, cls, pick, M=None, scenario="calibrated", designs=None):
    """Largest (or smallest) rate of ``var`` over the designs of a class and the tests."""
    from uqx.sweeps.error_rates import design_class

    best = None
    for d in [str(x) for x in ds["design"].values]:
        if designs is not None and d not in designs:
            continue
        for t in tests:
            if t not in [str(x) for x in ds["test"].values]:
                continue
            if cls is not None and design_class(d, t) != cls:
                continue
            r = ds[var].sel(design=d, scenario=scenario, test=t)
            if M is not None:
                r = r.sel(M=M)
            v = np.asarray(r.values, dtype=np.float64)
            if not np.isfinite(v).any():
                continue
            x = float(np.nanmax(v) if pick == "max" else np.nanmin(v))
            if best is None or (x > best[0] if pick == "max" else x < best[0]):
                best = (x, d, t)
    return best


def summary_lines(size, power) -> str:
    """The five-line summary of the report grid (README), from the same archives."""
    each = DECIDED
    inv = _extreme(size, "rate_invalid", each, None, "max", scenario="calibrated",
                   designs=[d for d in map(str, size["design"].values) if "t2.5" not in d])
    anyr = _extreme(size, "rate_invalid", ("any",), None, "max",
                    designs=[d for d in map(str, size["design"].values) if "t2.5" not in d])
    acc_a = _extreme(size, "rate_valid", each, "A", "min", M=2000)
    acc_b = _extreme(size, "rate_valid", each, "B", "min", M=2000)

    def pw(scen, test, design):
        r = power["rate_invalid"].sel(scenario=scen, test=test, design=design, M=2000)
        return float(r)

    lines = [
        f"- **Size** (16 designs, M = 200, 500, 2000): no statistic or question is `invalid` on "
        f"more than {100 * inv[0]:.1f} % of calibrated sets ({inv[2]}, {inv[1]}); the whole "
        f"result on at most {100 * anyr[0]:.1f} % ({anyr[1]}); t_s(2.5) errors never beyond "
        "the level.",
        f"- **Class A** (finite Var Z²) at M = 2000: every question and node statistic "
        f"`valid` on at least {100 * acc_a[0]:.1f} % of the sets ({acc_a[2]}, {acc_a[1]}).",
        f"- **Class B** (t_s(4), shapes changing toward it): `valid` on at least "
        f"{100 * acc_b[0]:.1f} % ({acc_b[2]}, {acc_b[1]}), the rest `inconclusive` with the "
        "reason.",
        f"- **Power** at M = 2000 (normal / t_s(6) errors): uE × 0.9 some `invalid` "
        f"{100 * pw('scale0.9', 'any', 'ig6_normal'):.0f} / "
        f"{100 * pw('scale0.9', 'any', 'ig6_t6'):.0f} %, × 1.1 "
        f"{100 * pw('scale1.1', 'any', 'ig6_normal'):.0f} / "
        f"{100 * pw('scale1.1', 'any', 'ig6_t6'):.0f} %; bias 0.2 uE ⟨Z⟩ "
        f"{100 * pw('shift0.2', 'mean_z', 'ig6_normal'):.0f} / "
        f"{100 * pw('shift0.2', 'mean_z', 'ig6_t6'):.0f} %; consistency against u ∝ uE^0.5 "
        f"{100 * pw('gamma0.5', 'consistency', 'ig6_normal'):.0f} / "
        f"{100 * pw('gamma0.5', 'consistency', 'ig6_t6'):.0f} %, uE 40 % too small in its "
        f"top decile {100 * pw('top0.6', 'consistency', 'ig6_normal'):.0f} / "
        f"{100 * pw('top0.6', 'consistency', 'ig6_t6'):.0f} %, the top decile of the true u "
        f"reported 40 % too small {100 * pw('top0.6-true', 'consistency', 'ig6_normal'):.0f} "
        f"/ {100 * pw('top0.6-true', 'consistency', 'ig6_t6'):.0f} %.",
        "- Full tables, the layer-by-layer power and the resolution twins: documentation, "
        "\"How to read the verdicts\".",
    ]
    return "\n".join(lines)


README_START = "<!-- error-rates table:"
README_END = "<!-- end error-rates table -->"


if __name__ == "__main__":
    raise SystemExit(main())
