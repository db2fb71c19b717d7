"""``uqx plot``: diagnostic figures (:mod:`uqx.plot`) written to PNG, PDF or SVG."""

from __future__ import annotations

import argparse
from pathlib import Path

from uqx import plot as P
from uqx.cli.commands._inputs import input_kwargs, load_inputs, looks_like_path, read_saved
from uqx.cli.commands._options import HelpFormatter, add_inputs
from uqx.cli.commands._outputs import check_not_input, check_output
from uqx.engine.defaults import N_BOOT_CURVES, NU, POP_MIN
from uqx.errors import InputError
from uqx.plot import KINDS as FIGURE_KINDS
from uqx.plot import figure_of

NAME = "plot"

#: Figure kinds -> short description (the registry :data:`uqx.plot.KINDS`).
KINDS = {kind: text for kind, (_, _, text) in FIGURE_KINDS.items()}

_FORMATS = (".png", ".pdf", ".svg")
#: study kinds that overlay several archives on one panel (--label names them)
_MULTI = ("pval", "reference-sensitivity")
#: kinds whose bins keep at least --pop-min points (calibration: with --conditional)
_POP_MIN_KINDS = ("reliability", "lzisd", "lzv", "lcp", "calibration")


def register(subparsers):
    """Add the ``plot`` command."""
    kinds = "; ".join(f"{k}: {v}" for k, v in KINDS.items())
    p = subparsers.add_parser(
        NAME,
        help="diagnostic figures (PNG, PDF, SVG)",
        description=f"Draw a diagnostic figure, one panel per input. Kinds -- {kinds}. "
        "INPUT is a CSV file, a registered dataset name or a NetCDF file (.nc: input "
        "data, or a 'uqx validate' result for 'zeta' and 'tailedness').",
        formatter_class=HelpFormatter,
    )
    p.add_argument("kind", choices=list(KINDS), metavar="KIND", help="figure kind (above)")
    add_inputs(p)
    p.set_defaults(bins=None)
    for action in p._actions:  # shared input options: adapt two helps to figures
        if action.dest == "bins":
            action.help = ("number of bins; default max(min(M // 150, 15), 2) as in "
                           "ErrViewLib, 15 for calibration --conditional")
        elif action.dest == "format":
            action.help = argparse.SUPPRESS
    p.add_argument("-o", "--output", required=True,
                   help="figure file; the format follows the suffix (.png, .pdf, .svg)")
    p.add_argument("--mkdir", action="store_true", help="create the output directory")
    p.add_argument("--pop-min", type=int, default=None,
                   help=f"fewest points per bin of the binned figures ({', '.join(_POP_MIN_KINDS)}"
                   f" --conditional); fewer bins when needed (default: {POP_MIN})")
    p.add_argument("--by", default="uE", choices=["uE", "X", "V"],
                   help="conditioning variable of binned figures (z-vs-x: X unless given)")
    p.add_argument("--dist", default="normal", choices=["normal", "t"],
                   help="generative distribution D (t: unit-variance Student)")
    p.add_argument("--nu", type=float, default=NU, help="degrees of freedom of --dist t")
    p.add_argument("--levels", default="0.25,0.5,0.75,0.95",
                   help="LCP probabilities, comma-separated")
    p.add_argument("--stat", default=None,
                   help="confidence: rmse|mae|rmsd|q95 (default rmse); zeta: statistics "
                   "of the bar panels, comma-separated (default every statistic of the "
                   "result that has a zeta-score)")
    p.add_argument("--ci", default="cho", choices=["cho", "bootstrap", "bootstrap-set"],
                   help="per-bin interval method (reliability, lzisd, lzv): analytic, "
                   "per-bin BCa, or BCa over whole-set resamples (lzisd only)")
    p.add_argument("--n-boot", type=int, default=N_BOOT_CURVES, help="bootstrap replicates")
    p.add_argument("--oracle", action="store_true",
                   help="confidence: also draw the oracle (errors removed by |E|)")
    p.add_argument("--n-rep", type=int, default=500,
                   help="confidence: replicates of the probabilistic reference")
    p.add_argument("--seed", type=int, default=0, help="root seed of random draws")
    scale = p.add_mutually_exclusive_group()
    scale.add_argument("--log", dest="log", action="store_const", const=True, default="auto",
                       help="reliability: log axes (default: log when uE is skewed, its central "
                       "99 %% spanning more than a decade)")
    scale.add_argument("--linear", dest="log", action="store_const", const=False,
                       help="reliability: linear axes")
    p.add_argument("--ties", default="content", choices=["content", "file-order"],
                   help="how rows with equal uE (or X, V) are split between bins, as in "
                   "'uqx validate' and 'uqx stats': by a hash of each row ('content') or in "
                   "file order (the papers' R convention)")
    p.add_argument("--conditional", action="store_true",
                   help="calibration: one curve per bin of --by")
    p.add_argument("--size", default="double", choices=["single", "double"],
                   help="figure width: one column or full width of a two-column paper")
    p.add_argument("--dpi", type=float, default=150, help="resolution")
    p.add_argument("--font-size", type=float, default=None, help="base font size (pt)")
    p.add_argument("--label", action="append", default=None,
                   help="panel label of each input, in order (repeat the option)")
    p.add_argument("--title", default=None, help="figure title")
    return p


def _load(args):
    """Input Dataset: one NetCDF file, one registered set with extra variables, or stacked."""
    nc = [s for s in args.inputs if Path(s).suffix.lower() in (".nc", ".nc4")]
    if nc:
        if len(args.inputs) != 1:
            if args.kind in _MULTI and len(nc) == len(args.inputs):
                return [read_saved(f) for f in nc]  # archives compared on one panel
            raise InputError("give a single NetCDF input (it may hold several sets); "
                             f"several archives only for {', '.join(_MULTI)}")
        return read_saved(nc[0])
    if (args.kind == "lcp" and len(args.inputs) == 1 and not Path(args.inputs[0]).exists()
            and not looks_like_path(args.inputs[0])):
        from uqx.dataio.datasets import load_dataset

        ds = load_dataset(args.inputs[0], args.data_dir)
        if "U" in ds:  # conformal interval half-ranges (HU2022) are used as given
            return ds
    from uqx._checks import is_lazy
    from uqx.dataio.row_order import order_rows

    ds = load_inputs(args.inputs, **input_kwargs(args))
    # the bins of validate and stats: tie groups of uE split alike (not for lazy input)
    if not any(is_lazy(ds[k].data) for k in ("E", "uE") if k in ds):
        ds = order_rows(ds, args.ties)
    return ds


def _relabel(ds, labels):
    if not labels:
        return ds
    if "set" not in ds.dims or ds.sizes["set"] != len(labels):
        raise InputError(f"--label given {len(labels)} time(s) for "
                         f"{ds.sizes.get('set', 1)} data set(s)")
    return ds.assign_coords(set=list(labels))


def _figure(args, ds):
    common = dict(size=args.size, dpi=args.dpi, font_size=args.font_size, title=args.title)
    k = args.kind
    if args.pop_min is not None and (k not in _POP_MIN_KINDS or (
            k == "calibration" and not args.conditional) or (k == "lzisd" and "fval" in ds)):
        raise InputError(f"--pop-min applies to the bins of {', '.join(_POP_MIN_KINDS[:-1])} "
                         "and calibration --conditional drawn from data, not to "
                         f"'uqx plot {k}'{' of a validation result' if k == 'lzisd' else ''}")
    pop_min = POP_MIN if args.pop_min is None else args.pop_min
    binned = dict(n_bins=args.bins, binning=args.binning, pop_min=pop_min)
    nu = args.nu if args.dist == "t" else None
    if k == "e-vs-u":
        return P.e_vs_u(ds, **common)
    if k == "z-vs-x":
        return P.z_vs_x(ds, by="X" if args.by == "uE" else args.by, **common)
    if k == "reliability":
        return P.reliability(ds, ci=args.ci, n_boot=args.n_boot, seed=args.seed,
                             log=args.log, **binned, **common)
    if k == "lzisd" and "fval" in ds:  # a validation result: its bins, as validated
        return P.lzisd_of_result(ds, cond=args.by, **common)
    if k in ("lzisd", "lzv"):
        return P.lzisd(ds, stat=k, by=args.by, ci=args.ci, n_boot=args.n_boot,
                       seed=args.seed, **binned, **common)
    if k == "lcp":
        try:
            levels = [float(v) for v in args.levels.split(",")]
        except ValueError:
            raise InputError(f"--levels must be comma-separated numbers: {args.levels}") from None
        return P.lcp(ds, by=args.by, prob=levels, dist=args.dist, nu=nu, **binned, **common)
    if k == "calibration":
        if args.conditional:
            return P.conditional_calibration(ds, by=args.by, dist=args.dist, nu=nu,
                                             n_bins=args.bins or 15, binning=args.binning,
                                             pop_min=pop_min, **common)
        return P.calibration(ds, dist=args.dist, nu=nu, **common)
    if k == "confidence":
        return P.confidence(ds, stat=args.stat or "rmse", dist=args.dist, nu=nu,
                            n_rep=args.n_rep, seed=args.seed, oracle=args.oracle, **common)
    if k == "zeta":
        if isinstance(ds, list) or "zeta" not in ds:
            raise InputError("'uqx plot zeta' needs a 'uqx validate' result (NetCDF) as input")
        stats = args.stat.split(",") if args.stat else None
        return P.zeta_bars(ds, stats=stats, **common)
    if k == "study" and len(args.inputs) == 1:  # by path: its messages name the file
        return P.study(args.inputs[0], **common)
    # the kinds without options of their own: distributions, tailedness, the study panels
    name, defaults = figure_of(k)
    if isinstance(ds, list):  # several archives: overlaid, named by --label or file stem
        labels = args.label or [Path(f).stem for f in args.inputs]
        return getattr(P, name)(ds, labels=labels, **defaults, **common)
    return getattr(P, name)(ds, **defaults, **common)


def _save(fig, path) -> None:
    """Write a figure atomically (format from the suffix): never half a file."""
    from uqx.dataio.netcdf import atomic_write

    fmt = path.suffix.lower().lstrip(".")
    atomic_write(path, lambda tmp: fig.savefig(tmp, format=fmt), what="figure", mkdir=False)


def run(args) -> int:
    """Draw the figure and write it; ``zeta`` also writes FILE_agreement.SUFFIX."""
    named = Path(args.output)
    if named.suffix.lower() not in _FORMATS and not named.exists():  # an existing device...
        raise InputError(f"output {named}: uqx writes a figure here, but the name has the "
                         f"suffix {named.suffix!r}; use one of {', '.join(_FORMATS)} (the "
                         "format follows the suffix)")
    out = check_output(args.output, mkdir=args.mkdir, kind="figure", inputs=args.inputs)
    if args.kind == "zeta":
        check_output(out.with_name(f"{out.stem}_agreement{out.suffix}"), kind="figure",
                     inputs=args.inputs)
    ds = _load(args)
    if not isinstance(ds, list):
        check_not_input(out, ds)
        ds = _relabel(ds, args.label)
    fig = _figure(args, ds)
    _save(fig, out)
    print(f"figure written to {out}")
    if args.kind == "zeta" and {"zms", "rce"} <= set(P.tested_stats(ds)):
        extra = out.with_name(f"{out.stem}_agreement{out.suffix}")
        _save(P.zeta_agreement(ds, size="single", dpi=args.dpi, font_size=args.font_size),
              extra)
        print(f"figure written to {extra}")
    return 0
