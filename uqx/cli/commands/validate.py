"""``uqx validate``: the bootstrap / zeta-score validation workflow (000 Fig. 1)."""

from __future__ import annotations

import json
import re
import sys

from uqx.cli.commands._console import note
from uqx.cli.commands._inputs import input_kwargs, load_inputs
from uqx.cli.commands._options import (
    EXIT_CODES_HELP,
    GLOSSARY_HELP,
    HelpFormatter,
    add_fail_on,
    add_inputs,
    add_output,
    add_text_options,
    bins_chosen,
    fail_on_status,
)
from uqx.cli.commands._outputs import (
    check_not_input,
    check_output,
    writable_directory,
    write_result,
)
from uqx.dataio.paths import same_file
from uqx.engine.defaults import DEFAULT_STATS
from uqx.errors import InputError
from uqx.progress import COMPILING_NOTE, kernels_compiled, progress_wanted, steps_progress
from uqx.workflow.groups import cli_options, from_options

NAME = "validate"
#: The API's default statistics (:data:`uqx.engine.defaults.DEFAULT_STATS`, defined
#: there once), as the help prints them; adaptivity's are added per feature a set has.
DEFAULT_STATS_TEXT = ",".join(s.upper() for s in DEFAULT_STATS)
PAPER_STATS = "ZMS,RCE,CC,ENCE,ZMSE"


def register(subparsers):
    """Add the ``validate`` command."""
    p = subparsers.add_parser(
        NAME,
        help="answer the questions about uE: calibrated on average, consistent, adaptive, "
        "ranking, up to a factor",
        description="Validate the uncertainties uE of each data set: is uE calibrated on "
        "average, consistent (right at every level of uE), adaptive (right along X or V), "
        "does it rank the errors, and, where not calibrated on average, would one factor "
        "fix it? Each answer is a Monte-Carlo test (valid, invalid, inconclusive, not "
        "tested), printed in words first, then in tables with BCa bootstrap intervals and "
        "the papers' zeta-scores for comparison.",
        epilog=f"{GLOSSARY_HELP} {EXIT_CODES_HELP}",
        formatter_class=HelpFormatter,
    )
    add_inputs(p, required=False)
    add_validation_options(p)
    add_output(p, tables=True)
    add_text_options(p)
    add_fail_on(p)
    p.add_argument("--plots", default=None, metavar="DIR",
                   help="also write the diagnostic figures of every data set as PNG files "
                   "into DIR (created if needed): E vs uE, reliability, LZISD on uE/X/V, "
                   "calibration, confidence, distributions, zero-bin extrapolation, zeta bars")
    return p


def add_validation_options(p) -> None:
    """Add the options of :func:`uqx.validate` shared by ``uqx validate`` and ``uqx report``."""
    p.add_argument(
        "--paper-sets",
        action="store_true",
        help="the nine literature sets of Pernot's papers on average calibration and "
        "simulated references (000, 001, 004: 'uqx glossary 000'); prints their tables "
        "(001 Table IV, 000 Tables A1-A4)",
    )
    p.add_argument(
        "--stats",
        default=None,
        help=f"comma-separated statistics (default: {DEFAULT_STATS_TEXT}; {PAPER_STATS} with "
        "--paper-sets)",
    )
    # the settings' options, from the declarations of the groups of uqx.validate (one
    # table: their defaults and help cannot drift from the API's)
    for flag, kwargs in cli_options():
        p.add_argument(flag, **kwargs)


def stat_list(text: str) -> list[str]:
    """``"ZMS, rce,zmse_X"`` -> ``["zms", "rce", "zmse_X"]`` (case-insensitive)."""
    out = []
    for s in (t.strip() for t in text.split(",")):
        if not s:
            continue
        low = s.lower()
        for suffix in ("_x", "_v"):
            if low.endswith(suffix):
                low = low[:-2] + suffix.upper()
        out.append(low)
    return out


def validation_inputs(args):
    """Input Dataset of ``uqx validate``/``uqx report``: INPUT files/names and --paper-sets."""
    if not args.paper_sets:
        return load_inputs(args.inputs, **input_kwargs(args))
    from uqx.dataio.datasets import load_paper_sets
    from uqx.dataio.model import from_arrays, iter_sets, stack

    ds = load_paper_sets(args.data_dir)
    if args.inputs:
        both = [ds, load_inputs(args.inputs, **input_kwargs(args))]
        ds = stack([
            from_arrays(sd.E, sd.uE, X=sd.X, V=sd.V, name=sd.name)
            for part in both
            for sd in iter_sets(part)
        ])
    return ds


def run_validation(args, ds):
    """Run :func:`uqx.validate` with the parsed options; returns ``(result, stats)``."""
    from uqx.workflow.disk import memory_note
    from uqx.workflow.steps import STEP_LABELS
    from uqx.workflow.validation import validate

    stats = stat_list(args.stats or (PAPER_STATS if args.paper_sets else DEFAULT_STATS_TEXT))
    held = memory_note(ds, stats, conditional=not args.no_conditional)
    if not args.stats and not args.paper_sets:
        # the API's own default, so that adaptivity's statistics are added for each
        # feature (X, V) the data have, as uqx.validate(ds) does
        stats = DEFAULT_STATS
    if held:
        note(args, f"uqx: note: {held}")
    if not progress_wanted(quiet=args.quiet) and not args.quiet and not kernels_compiled():
        note(args, f"uqx: note: {COMPILING_NOTE}")  # the display says it where it shows
    # one display of the steps (step k of n, time left), on a terminal, unless -q
    with steps_progress(STEP_LABELS, label=f"uqx {getattr(args, 'command', NAME)}",
                        quiet=args.quiet):
        groups = from_options(
            args,
            bins=args.bins if bins_chosen(args) else None,  # a default cap is not noted
            scheme=args.binning,
            simulate_all=args.paper_sets,
            ties=args.ties or ("file-order" if args.paper_sets else "content"),
            progress=False if args.quiet else None,  # the display above, or none with -q
        )
        res = validate(ds, stats, **groups)
    return res, [str(s) for s in res["stat"].values]  # as validated (adaptivity's added)


def check_plots_dir(path):
    """Create the figure directory of ``--plots`` if needed and check it is writable."""
    return None if path is None else writable_directory(path, what="figure directory")


def write_plots(res, ds, directory) -> list:
    """Write :func:`uqx.report.document.diagnostic_figures` as ``<set>_<figure>.png`` files.

    The ζ bars of all sets go to ``zeta_bars.png``; a figure that cannot be drawn is
    reported on stderr. Returns the written paths.
    """
    from uqx.dataio.netcdf import atomic_write
    from uqx.report import diagnostic_figures

    written, used = [], set()
    for name, figs in diagnostic_figures(res, ds).items():
        stem = "" if name is None else re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
        while stem in used and name is not None:  # distinct names may sanitise alike
            stem += "_"
        used.add(stem)
        for key, _caption, png, why in figs:
            if png is None:
                print(f"uqx: note: {name}: figure {key} not drawn: {why}", file=sys.stderr)
                continue
            path = directory / (f"{stem}_{key}.png" if stem else f"{key}.png")
            atomic_write(path, lambda tmp, png=png: tmp.write_bytes(png), what="figure",
                         mkdir=False)
            written.append(path)
    return written


def run(args) -> int:
    """Validate the inputs, write the result (and figures), then print the tables (or JSON).

    The files are written before anything is printed, so that a stdout that fails cannot
    lose them.

    Returns the exit status: 2 when a file could not be written, else 1 when a verdict
    met ``--fail-on``, else 0.
    """
    from uqx.text.console import validation_text
    from uqx.text.tables import result_records

    if not args.paper_sets and not args.inputs:
        raise InputError("validate needs INPUT files/names or --paper-sets")
    out_path = check_output(args.output, mkdir=args.mkdir, kind=("netcdf", "table"),
                            inputs=args.inputs)
    if out_path is not None and args.plots is not None and same_file(out_path, args.plots):
        raise InputError(f"-o {args.output} and --plots {args.plots} name the same path: "
                         "--plots is a directory of figures, -o the result file; give "
                         "them different names")
    plots = check_plots_dir(args.plots)
    ds = validation_inputs(args)
    check_not_input(out_path, ds)
    res, stats = run_validation(args, ds)
    # the files first: a print that fails (a closed or odd stdout) loses nothing
    status, done = 0, []
    if out_path is not None:
        params = {
            "command": NAME,
            "inputs": list(args.inputs),
            "stats": stats,
            "paper_sets": bool(args.paper_sets),
        }
        wrote = write_result(res, out_path, parameters=params, seed=int(res.attrs["seed"]),
                             announce=False)
        status = max(status, wrote)
        if not wrote:
            done.append((f"\nresults written to {out_path}", sys.stdout))
    if plots is not None:
        try:
            files = write_plots(res, ds, plots)
        except OSError as exc:
            print(f"uqx: error: figures not written: {exc}", file=sys.stderr)
            status = max(status, 2)
        else:
            done.insert(0, (f"\n{len(files)} figure(s) written to {plots}",
                            sys.stderr if args.format == "json" else sys.stdout))
    if args.format == "json":
        print(json.dumps(result_records(res), indent=1))
    else:
        print(validation_text(res, paper_sets=args.paper_sets, wide=args.wide,
                              explain=args.explain))
    for text, stream in done:
        print(text, file=stream)
    return status or fail_on_status(args, res)
