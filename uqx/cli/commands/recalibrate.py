"""``uqx recalibrate``: fit a map uE -> u, apply it to new rows, check it out of fold.

* ``uqx recalibrate fit CAL.csv --method auto -o map.nc``: learn a map on calibration rows
  (:func:`uqx.workflow.recalibrate.fit_recalibration`) and save it with its bootstrap band
  and provenance.
* ``uqx recalibrate apply map.nc TEST.csv -o TEST_recal.csv``: every column of TEST.csv
  kept, the recalibrated uncertainty added as the column ``uE_recal`` (``--column``; name
  the uE column to replace it), in the units of the uE column (variances with
  ``--uE-is-variance``).
* ``uqx recalibrate check DATA.csv --method auto --folds 5``: each row recalibrated by a
  map fitted without it (the method chosen inside the training folds), then
  :func:`uqx.validate` before and after on the same rows
  (:func:`uqx.workflow.recalibrate.check_recalibration`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from uqx.cli.commands._console import note
from uqx.cli.commands._inputs import load_inputs
from uqx.cli.commands._options import EXIT_CODES_HELP, HelpFormatter
from uqx.cli.commands._outputs import check_not_input, check_output, write_result
from uqx.engine.defaults import ISO_MIN_BLOCK, POP_MIN
from uqx.errors import InputError
from uqx.progress import progress_bar

NAME = "recalibrate"
#: The methods (:data:`uqx.engine.recal_maps.METHODS`; repeated here so that ``--help``
#: does not load numpy), plus ``auto``.
METHOD_CHOICES = ("auto", "scale", "power", "scaling-binning", "isotonic", "bvs-uE", "bvs-X")
#: Column of ``apply``'s output holding the recalibrated uncertainty.
RECAL_COLUMN = "uE_recal"

_METHODS_HELP = (
    "auto: least cross-validated Gaussian NLL on the fitting rows, a method other than "
    "scale only where it beats the factor by 1.5 s.e. of the per-row difference; "
    "scale: u = sqrt(ZMS)*uE; "
    "power: u = c*uE^gamma (Gaussian likelihood); scaling-binning: power law then one "
    "factor per bin of uE; isotonic: nondecreasing map of uE^2 to E^2, blocks of at least "
    "--min-block rows; bvs-uE / bvs-X: one "
    "factor per equal-count bin of uE / of X (needs --X)")


def _add_columns(p, *, data_dir: bool = True) -> None:
    p.add_argument("--E", default="E", help="CSV column of errors (reference - prediction)")
    p.add_argument("--uE", default="uE", help="CSV column of uncertainties")
    p.add_argument("--X", default=None, help="CSV column of the input feature (bvs-X)")
    p.add_argument("--uE-is-variance", action="store_true",
                   help="the uE column holds variances")
    if data_dir:
        p.add_argument("--drop-nonfinite", action="store_true",
                       help="drop (and count) rows with NaN/inf instead of failing")
        p.add_argument("--min-uE-rel-sd", type=float, default=None, metavar="K",
                       help="keep only rows with uE > K*sd(E), dropped rows counted "
                       "(PAL2022: 1e-6)")
        p.add_argument("--data-dir", default=None,
                       help="literature data directory (else $UQX_DATA_DIR)")


def _add_map_options(p) -> None:
    p.add_argument("--method", default="auto", choices=METHOD_CHOICES, help=_METHODS_HELP)
    p.add_argument("--bins", type=int, default=None,
                   help="bins of the binned methods (default max(min(M // 150, 15), 2))")
    p.add_argument("--pop-min", type=int, default=POP_MIN,
                   help="minimal number of rows per bin")
    p.add_argument("--min-block", type=int, default=ISO_MIN_BLOCK, metavar="N",
                   help="isotonic: least rows of a block of the map (a block of fewer rows "
                   "is pooled with the neighbour that loses the least likelihood); 1: the "
                   "plain pool-adjacent-violators map of Busk et al. 2022 and scikit-learn")
    p.add_argument("--seed", type=int, default=None, help="root seed (drawn when not given)")


def register(subparsers):
    """Add the ``recalibrate`` command and its ``fit``, ``apply``, ``check``."""
    p = subparsers.add_parser(
        NAME,
        help="recalibrate uE (fit a map, apply it, check it out of fold)",
        description="Fix what the verdicts found: fit a map uE -> u on calibration rows, "
        "apply it to new rows, or check it honestly (cross-fitted, validated before and "
        "after on the same rows).",
        epilog=EXIT_CODES_HELP,
        formatter_class=HelpFormatter,
    )
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    f = sub.add_parser("fit", help="fit a map on calibration rows and save it (.nc)",
                       description="Fit a recalibration map uE -> u on the rows of INPUT "
                       "and write it, with its bootstrap band and provenance, to a NetCDF "
                       "file.", formatter_class=HelpFormatter)
    f.add_argument("inputs", nargs=1, metavar="INPUT",
                   help="CSV/Parquet/NetCDF file or registered dataset name (one set)")
    _add_columns(f)
    _add_map_options(f)
    f.add_argument("--band-boot", type=int, default=200,
                   help="bootstrap refits of the map's band (0: no band)")
    f.add_argument("-o", "--output", required=True, help="the map, a NetCDF file (.nc)")
    f.add_argument("--mkdir", action="store_true",
                   help="create the directory of --output if missing")

    a = sub.add_parser("apply", help="apply a saved map to new rows (CSV out, every column "
                       "kept)",
                       description="Apply a map of 'uqx recalibrate fit' to the rows of a "
                       f"CSV file; every column is kept and the recalibrated uncertainty is "
                       f"written to the column {RECAL_COLUMN} (or --column), in the units "
                       "of the uE column (a variance with --uE-is-variance).",
                       formatter_class=HelpFormatter)
    a.add_argument("map", metavar="MAP", help="map file written by 'uqx recalibrate fit'")
    a.add_argument("inputs", nargs=1, metavar="CSV", help="rows to recalibrate (CSV file)")
    a.add_argument("--uE", default=None,
                   help="CSV column of uncertainties (default: the map's)")
    a.add_argument("--X", default=None,
                   help="CSV column of the feature, for maps on X (default: the map's)")
    a.add_argument("--uE-is-variance", action="store_true", default=None,
                   help="the uE column holds variances (default: as when fitted)")
    a.add_argument("--column", default=RECAL_COLUMN,
                   help="output column of the recalibrated uncertainty (the uE column's "
                   "name replaces it)")
    a.add_argument("-o", "--output", required=True, help="the recalibrated rows (.csv)")
    a.add_argument("--mkdir", action="store_true",
                   help="create the directory of --output if missing")

    c = sub.add_parser("check", help="cross-fitted recalibration, validated before and "
                       "after on the same rows",
                       description="Recalibrate every row of INPUT by a map fitted without "
                       "it (K folds; with auto the method is chosen inside the training "
                       "folds), validate the original and the recalibrated uE of the same "
                       "rows, and say what the recalibration fixed and what it did not.",
                       epilog=EXIT_CODES_HELP, formatter_class=HelpFormatter)
    c.add_argument("inputs", nargs=1, metavar="INPUT",
                   help="CSV/Parquet/NetCDF file or registered dataset name (one set)")
    _add_columns(c)
    _add_map_options(c)
    c.add_argument("--folds", type=int, default=5, help="folds of the cross-fitting")
    c.add_argument("--split", type=float, default=None, metavar="F",
                   help="instead of folds: one split, the fraction F of rows fits the map "
                   "and the rest is validated: exact for the fitted map, whose own "
                   "error a small F leaves large (the output says when it explains "
                   "an invalid)")
    c.add_argument("--n-boot", type=int, default=2000,
                   help="bootstrap replicates of the validation")
    c.add_argument("--n-mc", type=int, default=2000,
                   help="simulated data sets per reference of the validation")
    c.add_argument("--format", default="table", choices=["table", "json"],
                   help="output format")
    c.add_argument("-o", "--output", default=None,
                   help="also write the validation of the sets 'before' and 'after' "
                   "(.nc for 'uqx show', .csv, .json)")
    c.add_argument("--mkdir", action="store_true",
                   help="create the directory of --output if missing")
    for action in (f, a, c):  # also accepted after the action (the global -q kept else)
        action.add_argument("-q", "--quiet", action="store_true",
                            default=argparse.SUPPRESS,
                            help="no progress bar and no notes on stderr")
    return p


def _one_input(args):
    ds = load_inputs(args.inputs, E=args.E, uE=args.uE, X=args.X, data_dir=args.data_dir,
                     uE_is_variance=args.uE_is_variance,
                     drop_nonfinite=args.drop_nonfinite, min_uE_rel_sd=args.min_uE_rel_sd)
    if "n_dropped" in ds:
        import numpy as np

        n = int(np.sum(ds["n_dropped"].values))
        if n:
            note(args, f"uqx: note: {n} row(s) dropped (--drop-nonfinite / --min-uE-rel-sd)")
    if "set" in ds.dims:  # one input: its name is the set's
        name = str(ds["set"].values[0])
        ds = ds.isel(set=0, drop=True).assign_attrs(name=name)
    return ds


def _fit(args) -> int:
    from uqx.workflow.recalibrate import fit_recalibration

    if args.band_boot < 0:
        raise InputError(f"--band-boot must be >= 0, got {args.band_boot}")
    out = check_output(args.output, mkdir=args.mkdir, kind="netcdf", inputs=args.inputs)
    ds = _one_input(args)
    check_not_input(out, ds)
    m = fit_recalibration(ds, args.method, n_bins=args.bins, pop_min=args.pop_min,
                          min_block=args.min_block, n_boot=args.band_boot, seed=args.seed)
    m = replace(m, provenance={**m.provenance, "E_column": args.E, "uE_column": args.uE,
                               "X_column": args.X, "uE_is_variance": args.uE_is_variance,
                               "input": str(args.inputs[0])})
    m.to_netcdf(out, mkdir=args.mkdir)
    print(f"# recalibration map of {args.inputs[0]} ({m.provenance['n_rows']} rows)")
    print(m.describe())
    if m.scores:
        print("cross-validated NLL per row: " + ", ".join(
            f"{k} {v:.4f}" for k, v in sorted(m.scores.items(), key=lambda kv: kv[1])))
    print(f"\nmap written to {out}")
    return 0


def _apply(args) -> int:
    import numpy as np

    from uqx.dataio.frames import numeric_column, read_frame
    from uqx.dataio.netcdf import atomic_write
    from uqx.workflow.recalibrate import read_map

    src = Path(args.inputs[0])
    out = check_output(args.output, mkdir=args.mkdir, kind="table", inputs=[args.map, src])
    if out.suffix.lower() != ".csv":
        raise InputError(f"output {out}: apply writes a CSV file (.csv)")
    m = read_map(args.map)
    prov = m.provenance
    uE_col = args.uE or prov.get("uE_column") or "uE"
    x_col = args.X or prov.get("X_column")
    variance = (bool(prov.get("uE_is_variance", False)) if args.uE_is_variance is None
                else args.uE_is_variance)
    df = read_frame(src)
    uE = numeric_column(df, uE_col, src)
    if variance:
        with np.errstate(invalid="ignore"):
            uE = np.sqrt(uE)
    bad = ~np.isfinite(uE) | (uE <= 0)
    if bad.any():
        raise InputError(f"{src}: column {uE_col!r}: {int(bad.sum())} row(s) with uE not "
                         "finite or <= 0 cannot be recalibrated (a map scales uE); fix or "
                         "drop them first")
    X = None
    if m.needs_X:
        if not x_col:
            raise InputError(f"the map ({m.method}) bins on the feature X: name its column "
                             "with --X")
        if x_col not in df.columns:
            raise InputError(f"{src}: no column {x_col!r}, the feature X this map "
                             f"({m.method}) bins on (--X names another column)")
        X = numeric_column(df, x_col, src)
    u = m.apply(uE, X)
    df[args.column] = u * u if variance else u
    atomic_write(out, lambda tmp: df.to_csv(tmp, index=False), what="CSV file",
                 mkdir=args.mkdir)
    what = "replaced" if args.column == uE_col else "added"
    print(f"{len(df)} row(s) recalibrated by {m.method}; column {args.column!r} {what}"
          f"{' (variances)' if variance else ''}; written to {out}")
    return 0


def _check(args) -> int:
    from uqx.workflow.recalibrate import check_recalibration

    out = check_output(args.output, mkdir=args.mkdir, kind=("netcdf", "table"),
                       inputs=args.inputs)
    ds = _one_input(args)
    check_not_input(out, ds)
    with progress_bar(quiet=args.quiet, label="uqx recalibrate check"):
        chk = check_recalibration(ds, args.method, folds=args.folds, split=args.split,
                                  n_bins=args.bins, pop_min=args.pop_min,
                                  min_block=args.min_block, seed=args.seed,
                                  bootstrap=args.n_boot, copies=args.n_mc)
    status = 0
    if out is not None:
        params = {"command": f"{NAME} check", "inputs": list(args.inputs),
                  "method": args.method, "folds": args.folds, "split": args.split}
        status = write_result(chk.result, out, parameters=params,
                              seed=int(chk.result.attrs["seed"]))
    if args.format == "json":
        rec = {"dataset": chk.name, "design": chk.design, "method": chk.method,
               "methods": chk.methods, "rows": int(chk.rows.size),
               "nll_before": chk.nll_before, "nll_after": chk.nll_after,
               "nll_scale": chk.nll_scale,
               "verdicts": {q: {"before": b, "after": a}
                            for q, (b, a) in chk.question_verdicts().items()},
               "fixed": chk.fixed(), "unfixed": chk.unfixed()}
        print(json.dumps(rec, indent=1))
    else:
        print(chk.text())
    return status


def run(args) -> int:
    """Run ``fit``, ``apply`` or ``check``."""
    action = {"fit": _fit, "apply": _apply, "check": _check}[args.action]
    status = action(args)
    sys.stdout.flush()
    return status
