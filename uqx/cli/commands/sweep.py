"""``uqx sweep NAME``: the Monte-Carlo studies of the papers, chunked, resumable, archived.

``uqx sweep appendix-b|pval|bins|binned-tailedness|decimation|reference-sensitivity|
error-rates [grid options] [--n-mc K] [--n-boot B] [--n-datasets K] [--seed S] [--chunk-size R]
[--scheduler threads|processes|ADDRESS] [--resume] -o OUT.nc``, plus ``uqx sweep summary
OUT.nc`` and ``uqx sweep compare A.nc B.nc``. Grid options take comma lists
(``--M 2000,8000 --N 10,40``).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

from uqx.cli.commands._console import note
from uqx.cli.commands._inputs import load_inputs
from uqx.cli.commands._options import HelpFormatter
from uqx.cli.commands._outputs import check_not_input, check_output
from uqx.errors import InputError

NAME = "sweep"

STUDY_HELP = {
    "appendix-b": "000 App. B: simulated ENCE and ZMSE of calibrated NIG/T6IG data over "
                  "M x N x nu, with the fits against sqrt(N/M)",
    "pval": "001 Fig. 4: validation probability of ZMS and RCE (BCa) on calibrated "
            "synthetic sets, NIG and TIG scenarios",
    "bins": "002 / 000 App. C: ENCE, ZMSE, ZVE against the number of bins and the "
            "zero-bin extrapolation of each set",
    "binned-tailedness": "001 Fig. 8: beta_GM and kappa_CS of u2, E2, Z2 in equal-count "
                         "uE bins of each set",
    "decimation": "001 Fig. 7: delta RCE and delta ZMS after removing the k % largest "
                  "uncertainties, with full-set BCa bars",
    "reference-sensitivity": "000 Fig. 7: simulated references of ZMS, CC, ENCE, ZMSE "
                             "for t_s(nu) errors, per set and nu",
    "error-rates": "how often is a verdict wrong? Every verdict of 'uqx validate' on "
                   "synthetic sets of known truth (calibrated designs x M, and miscalibrated "
                   "scenarios): false-rejection rates and powers with Wilson intervals",
}


def _list(kind):
    def parse(text):
        items = [t.strip() for t in str(text).split(",") if t.strip()]
        try:
            return [kind(t) for t in items]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected a comma list of {kind.__name__} values, got {text!r}") from None
    parse.__name__ = f"{kind.__name__} list"
    return parse


def _common(p, *, seed=0):
    g = p.add_argument_group("run")
    g.add_argument("--seed", type=int, default=seed, help="root seed of the random streams")
    g.add_argument("--chunk-size", type=int, default=None, metavar="R",
                   help="replicates per task (never changes the numbers)")
    g.add_argument("--scheduler", default="threads", metavar="SCHEDULER",
                   help="threads, processes, sync, or a dask.distributed address "
                        "tcp://HOST:PORT")
    g.add_argument("--workers", type=int, default=None, help="workers of a local scheduler")
    g.add_argument("--resume", action="store_true",
                   help="continue an interrupted run (its run directory OUT.nc.run)")
    g.add_argument("--keep-run", action="store_true",
                   help="keep the run directory of finished blocks after writing")
    g.add_argument("-o", "--output", default=None, help="NetCDF archive (written atomically)")
    g.add_argument("--mkdir", action="store_true", help="create the directory of --output")
    _quiet(p)


def _quiet(p):
    p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                   help="no progress bar and no notes on stderr")


def _inputs(p, default):
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help=f"CSV files or dataset names (default: {default})")
    p.add_argument("--E", default="E", help="CSV column of errors")
    p.add_argument("--uE", default="uE", help="CSV column of uncertainties")
    p.add_argument("--data-dir", default=None, help="literature data directory")


def _h(name):
    """STUDY_HELP[name] for a ``help=`` (argparse %-formats helps, not descriptions)."""
    return STUDY_HELP[name].replace("%", "%%")


def _study_parsers(sub):
    p = sub.add_parser("appendix-b", help=_h("appendix-b"),
                       description=STUDY_HELP["appendix-b"], formatter_class=HelpFormatter)
    p.add_argument("--models", type=_list(str), default=["NIG", "T6IG"],
                   help="error models: NIG (normal errors) and/or T6IG (Student t_s(6) errors)")
    p.add_argument("--M", type=_list(int), default=[2000, 4000, 8000, 12000, 16000],
                   help="sizes of the simulated data sets")
    p.add_argument("--N", type=_list(int), default=[10, 20, 30, 40, 50], help="bin numbers")
    p.add_argument("--nu", type=_list(float), default=[3, 4, 5, 6, 12, 24],
                   help="IG parameter (see --ig-shape)")
    p.add_argument("--n-mc", type=int, default=5000, help="data sets per cell")
    p.add_argument("--ig-shape", default="nu", choices=["nu", "half-nu"],
                   help="u2 ~ IG(nu, nu) (reference code) or IG(nu/2, nu/2) (paper text)")
    _common(p)
    p = sub.add_parser("pval", help=_h("pval"), description=STUDY_HELP["pval"],
                       formatter_class=HelpFormatter)
    p.add_argument("--scenario", type=_list(str), default=["NIG", "TIG"],
                   help="scenarios: NIG (normal errors, IG variances) and/or TIG (t errors)")
    p.add_argument("--nu", type=_list(float), default=None,
                   help="nu_IG (NIG) / nu_D (TIG) values (default: the reference grids)")
    p.add_argument("--n-datasets", type=int, default=1000, help="data sets per point")
    p.add_argument("--M", type=int, default=5000, help="size of each data set")
    p.add_argument("--n-boot", type=int, default=5000, help="BCa replicates (papers: 5000)")
    _common(p)
    p = sub.add_parser("bins", help=_h("bins"), description=STUDY_HELP["bins"],
                       formatter_class=HelpFormatter)
    _inputs(p, "the nine literature sets")
    p.add_argument("--preset", default="app-c", choices=["app-c", "002"],
                   help="000 App. C or paper 002 settings (methods: zero-bin extrapolation)")
    p.add_argument("--n-mc", type=int, default=200,
                   help="calibrated copies of the intercept's null per distribution (0: none)")
    p.add_argument("--fit-min", type=int, default=None,
                   help="smallest fitted N (default: the preset's, per set for 002)")
    _common(p)
    p = sub.add_parser("binned-tailedness", help=_h("binned-tailedness"),
                       description=STUDY_HELP["binned-tailedness"],
                       formatter_class=HelpFormatter)
    _inputs(p, "the nine literature sets")
    p.add_argument("--n-bins", type=int, default=20, help="equal-count uE bins")
    _common(p)
    p = sub.add_parser("decimation", help=_h("decimation"),
                       description=STUDY_HELP["decimation"], formatter_class=HelpFormatter)
    _inputs(p, "the nine literature sets")
    p.add_argument("--n-boot", type=int, default=5000, help="BCa replicates of the bars")
    p.add_argument("--k-max", type=float, default=10.0, help="largest percentage removed")
    p.add_argument("--k-step", type=float, default=0.1, help="percentage step")
    _common(p)
    p = sub.add_parser("reference-sensitivity", help=_h("reference-sensitivity"),
                       description=STUDY_HELP["reference-sensitivity"],
                       formatter_class=HelpFormatter)
    _inputs(p, "QM9_E and logP_10k_a_LS-GCN (Sets 7, 8)")
    p.add_argument("--nu", type=_list(float), default=[3, 4, 5, 7, 10, 15, 20],
                   help="degrees of freedom of the t_s(nu) errors")
    p.add_argument("--n-mc", type=int, default=10_000, help="simulated sets per (set, nu)")
    p.add_argument("--bins", type=int, default=50, help="bins of ENCE and ZMSE")
    _common(p)
    _error_rates_parser(sub)


def _error_rates_parser(sub):
    # defaults live in uqx.sweeps.error_rates (importing it here would slow down --help)
    p = sub.add_parser("error-rates", help=_h("error-rates"),
                       description=STUDY_HELP["error-rates"], formatter_class=HelpFormatter)
    p.add_argument("--designs", type=_list(str), default=None,
                   help="designs UNCERTAINTIES_ERRORS with UNCERTAINTIES in ig3, ig6, ig20, "
                   "lognormal, uniform and ERRORS in normal, t4, t6, laplace, uniform, "
                   "skewed (default: ig{3,6,20}_{normal,t4,t6})")
    p.add_argument("--M", type=_list(int), default=[500, 2000, 5000, 20000],
                   help="sizes of the calibrated synthetic sets")
    p.add_argument("--scenarios", type=_list(str), default=None,
                   help="calibrated, scale0.8, scale1.25, scale0.9, scale1.1, gamma0.5, "
                   "x-variance, shift0.2 (default: all)")
    p.add_argument("--n-datasets", type=int, default=400, help="data sets per cell")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap replicates per set")
    p.add_argument("--n-mc", type=int, default=1000,
                   help="calibrated copies per member (the verdicts' default test copies)")
    p.add_argument("--power-M", type=_list(int), default=[2000],
                   help="sizes at which the miscalibrated scenarios run")
    p.add_argument("--power-designs", type=_list(str), default=["ig6_normal", "ig6_t6"],
                   help="designs of the miscalibrated scenarios")
    _common(p)


def register(subparsers):
    """Add the ``sweep`` command and its studies."""
    p = subparsers.add_parser(
        NAME,
        help="run the papers' Monte-Carlo studies (chunked, resumable, NetCDF archives)",
        description="Monte-Carlo studies of the papers as chunked dask computations with "
        "resumable runs and NetCDF archives; compare and summarise archives.",
        formatter_class=HelpFormatter,
    )
    sub = p.add_subparsers(dest="study", metavar="NAME")
    _study_parsers(sub)
    s = sub.add_parser("summary", help="print the tables of a sweep archive",
                       formatter_class=HelpFormatter)
    s.add_argument("file", metavar="FILE", help="archive written by 'uqx sweep NAME -o'")
    _quiet(s)
    c = sub.add_parser("compare", help="compare two archives of one study (|z| > 3 flagged)",
                       formatter_class=HelpFormatter)
    c.add_argument("a", metavar="A", help="first archive")
    c.add_argument("b", metavar="B", help="second archive")
    c.add_argument("--threshold", type=float, default=3.0, help="flag cells with |z| above")
    for q in (s, c):
        q.epilog = ("Exit status: 0 done (compare: no flagged cell); 1 compare flagged "
                    "cells; 2 bad input or output (uqx: error: ...).")
    _quiet(c)
    return p


def _options(args) -> dict:
    """Study options from parsed arguments (library keyword names)."""
    s = args.study
    if s == "appendix-b":
        return dict(models=args.models, M=args.M, N=args.N, nu=args.nu, n_mc=args.n_mc,
                    ig_shape=args.ig_shape)
    if s == "pval":
        return dict(scenario=args.scenario, nu=args.nu, n_datasets=args.n_datasets, M=args.M,
                    n_boot=args.n_boot)
    if s == "bins":
        return dict(preset=args.preset, n_mc=args.n_mc, fit_min=args.fit_min)
    if s == "binned-tailedness":
        return dict(n_bins=args.n_bins)
    if s == "decimation":
        return dict(n_boot=args.n_boot, k_max=args.k_max, k_step=args.k_step)
    if s == "error-rates":
        opts = dict(designs=args.designs, M=args.M, scenarios=args.scenarios,
                    n_datasets=args.n_datasets, n_boot=args.n_boot, n_mc=args.n_mc,
                    power_M=args.power_M, power_designs=args.power_designs)
        return {k: v for k, v in opts.items() if v is not None}
    return dict(nu=args.nu, n_mc=args.n_mc, bins=args.bins)


def run(args) -> int:
    """Run a study, or summarise / compare archives."""
    if not getattr(args, "study", None):
        raise InputError("give a study name (appendix-b, pval, bins, binned-tailedness, "
                         "decimation, reference-sensitivity, error-rates), summary or "
                         "compare")
    if args.study == "summary":
        from uqx.sweeps import summary_text

        print(summary_text(args.file))
        return 0
    if args.study == "compare":
        from uqx.sweeps import compare, format_compare

        res = compare(args.a, args.b, threshold=args.threshold)
        print(format_compare(res, threshold=args.threshold))
        return 1 if res.n_flagged else 0
    from uqx.sweeps import run_study, summary_text

    opts = _options(args)
    inputs = list(getattr(args, "inputs", None) or [])
    if args.output is not None:  # the policy of every command, before any computation
        check_output(args.output, mkdir=args.mkdir, kind="netcdf", inputs=inputs)
    positional = ()
    if hasattr(args, "inputs"):
        ds = None
        if args.inputs:
            ds = load_inputs(args.inputs, E=args.E, uE=args.uE, data_dir=args.data_dir)
            check_not_input(args.output, ds)
        elif args.data_dir:
            os.environ["UQX_DATA_DIR"] = args.data_dir
        positional = (ds,)
    quiet = bool(getattr(args, "quiet", False))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        res = run_study(args.study, *positional, seed=args.seed, chunk_size=args.chunk_size,
                        scheduler=args.scheduler, num_workers=args.workers,
                        resume=args.resume, keep_run=args.keep_run, quiet=quiet,
                        mkdir=args.mkdir, output=args.output, **opts)
    for w in caught:  # e.g. a damaged block redone: a uqx warning, not a Python one
        print(f"uqx: warning: {w.message}", file=sys.stderr)
    print(summary_text(res, max_rows=60))
    if args.output:
        note(args, f"\narchive written to {args.output}")
    return 0


__all__ = ["register", "run"]
