"""``uqx report``: validate and write one self-contained HTML (or Markdown) report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from uqx.cli.commands import validate as validate_command
from uqx.cli.commands._console import note
from uqx.cli.commands._inputs import input_kwargs, load_inputs, read_saved
from uqx.cli.commands._options import (
    EXIT_CODES_HELP,
    GLOSSARY_HELP,
    HelpFormatter,
    add_fail_on,
    add_inputs,
    fail_on_status,
)
from uqx.cli.commands._outputs import check_not_input, check_output
from uqx.errors import InputError

NAME = "report"


def register(subparsers):
    """Add the ``report`` command."""
    p = subparsers.add_parser(
        NAME,
        help="validate and write an HTML/Markdown report with the diagnostic figures",
        description="Run 'uqx validate' on the inputs (same options) and write one "
        "self-contained page: parameters, verdict table, warnings, how to read the "
        "verdicts, per-set tables and figures (embedded PNG, no network needed). "
        "'uqx report RESULT.nc --data INPUT...' reports a saved result; without --data "
        "the figures that need the raw data are skipped.",
        epilog=f"{GLOSSARY_HELP} {EXIT_CODES_HELP}",
        formatter_class=HelpFormatter,
    )
    add_inputs(p, required=False)
    for action in p._actions:
        if action.dest == "format":  # the report replaces the printed table / JSON
            action.help = argparse.SUPPRESS
        elif action.dest == "inputs":
            action.help += (", or one saved 'uqx validate' result (.nc: told from NetCDF "
                            "data by its variables)")
    validate_command.add_validation_options(p)
    p.add_argument("-o", "--output", required=True,
                   help="report file: .html (self-contained page) or .md (Markdown, figures "
                   "as PNG files in <stem>_figures/ next to it)")
    p.add_argument("--mkdir", action="store_true", help="create the output directory")
    p.add_argument("--data", nargs="+", default=None, metavar="INPUT",
                   help="with a saved result (RESULT.nc): the validated inputs, for the "
                   "figures of the raw data (same column options as INPUT)")
    p.add_argument("--no-figures", action="store_true", help="tables only (fast)")
    p.add_argument("--title", default=None, help="page title")
    p.add_argument("--dpi", type=float, default=110, help="resolution of the figures")
    add_fail_on(p)
    return p


def saved_result_given(inputs) -> bool:
    """Whether the inputs name a saved 'uqx validate' result (not NetCDF input data).

    A NetCDF input is a saved result when it holds the variables of one
    (:func:`uqx.dataio.netcdf.netcdf_kind`); NetCDF data (E, uE columns) are validated
    like CSV files.

    Parameters
    ----------
    inputs : sequence of str
        The INPUT arguments.

    Returns
    -------
    bool
        True when one of them is a saved result.
    """
    from uqx.dataio.netcdf import NETCDF_SUFFIXES, netcdf_kind

    return any(Path(s).suffix.lower() in NETCDF_SUFFIXES and netcdf_kind(s) == "result"
               for s in inputs or ())


def _saved_result(args):
    """Read ``RESULT.nc`` and the ``--data`` inputs; returns ``(result, data)``."""
    if len(args.inputs) != 1:
        raise InputError("give a single saved result (.nc), or CSV files / dataset names")
    if args.paper_sets:
        raise InputError("--paper-sets runs a validation; with a saved result use --data")
    res = read_saved(args.inputs[0])
    if "verdict" not in res:
        raise InputError(f"{args.inputs[0]}: not a 'uqx validate' result (no 'verdict')")
    data = load_inputs(args.data, **input_kwargs(args)) if args.data else None
    return res, data


def run(args) -> int:
    """Validate the inputs (or read a saved result) and write the report.

    Returns the exit status: 1 when a verdict met ``--fail-on``, else 0.
    """
    from uqx.report import report_format, write_report

    out = check_output(args.output, mkdir=args.mkdir, kind="report",
                       inputs=[*args.inputs, *(args.data or [])])
    report_format(out)  # a bad suffix fails before any computation
    if out.suffix.lower() in (".md", ".markdown"):
        figs = out.with_name(out.stem + "_figures")
        if figs.exists() and not figs.is_dir():
            raise InputError(f"the figure folder {figs} of the Markdown report is a file; "
                             "give another report name")
    if saved_result_given(args.inputs):
        res, data = _saved_result(args)
        check_not_input(out, data)
        if data is not None:
            from uqx.report.figures import data_mismatches

            for line in data_mismatches(res, data):
                print(f"uqx: warning: {line}", file=sys.stderr)
        elif not args.no_figures:
            note(args, "uqx: note: no --data: the figures of the raw data are skipped (the "
                 "result's own figures are drawn); pass the validated inputs with --data")
    else:
        if not args.paper_sets and not args.inputs:
            raise InputError("report needs INPUT files/names, --paper-sets or a RESULT.nc")
        if args.data:
            raise InputError("--data goes with a saved result (RESULT.nc); the INPUT files "
                             "are the data here")
        data = validate_command.validation_inputs(args)
        check_not_input(out, data)
        res, _ = validate_command.run_validation(args, data)
    note(args, "writing the report" + ("" if args.no_figures else " (drawing the figures)"))
    write_report(res, out, data, figures=not args.no_figures, title=args.title, dpi=args.dpi,
                 mkdir=args.mkdir)
    print(f"report written to {out}")
    return fail_on_status(args, res)
