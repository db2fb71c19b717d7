"""``uqx show FILE.nc``: print the tables of a saved validation result."""

from __future__ import annotations

import json
import sys

from uqx.cli.commands._inputs import read_saved
from uqx.cli.commands._options import (
    EXIT_CODES_HELP,
    GLOSSARY_HELP,
    HelpFormatter,
    add_fail_on,
    add_text_options,
    fail_on_status,
)
from uqx.errors import InputError

NAME = "show"


def register(subparsers):
    """Add the ``show`` command."""
    p = subparsers.add_parser(
        NAME,
        help="print the tables of a saved result (uqx validate -o FILE.nc)",
        description="Print a validation result saved by 'uqx validate -o' or 'uqx demo', "
        "with the same text as when it was computed.",
        epilog=f"{GLOSSARY_HELP} {EXIT_CODES_HELP}",
        formatter_class=HelpFormatter,
    )
    p.add_argument("file", metavar="FILE", help="NetCDF result file")
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    add_text_options(p)
    add_fail_on(p)
    return p


def run(args) -> int:
    """Read the result file and print it; 1 when a verdict met ``--fail-on``, else 0.

    A damaged attribute is named in a warning on stderr and the rest is shown.
    """
    from uqx.dataio.netcdf import JSON_PREFIX
    from uqx.text.console import validation_text
    from uqx.text.tables import result_records

    res = read_saved(args.file)
    if "verdict" not in res and res.attrs.get("study"):
        raise InputError(
            f"{args.file} is an archive of 'uqx sweep {res.attrs['study']}', not a validation "
            f"result: summarise it with 'uqx sweep summary {args.file}' or draw it with "
            f"'uqx plot study {args.file}'")
    if "verdict" not in res or "set" not in res.dims:
        raise InputError(
            f"{args.file}: not a uqx validation result (no 'verdict' over 'set'); "
            "write one with 'uqx validate ... -o FILE.nc'"
        )
    raw = res.attrs.get("parameters", "{}")
    try:
        params = raw if isinstance(raw, dict) else json.loads(raw)
    except (TypeError, ValueError):
        params = {}
        if not (isinstance(raw, str) and raw.startswith(JSON_PREFIX)):  # else warned
            shown = repr(raw) if len(repr(raw)) <= 40 else repr(raw)[:37] + "..."
            print(f"uqx: warning: {args.file}: attribute 'parameters' = {shown} is not "
                  "JSON; shown as a plain validation (not --paper-sets)", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(result_records(res), indent=1))
    else:
        paper = bool(params.get("paper_sets", False)) if isinstance(params, dict) else False
        print(validation_text(res, paper_sets=paper, wide=args.wide, explain=args.explain))
    return fail_on_status(args, res)
