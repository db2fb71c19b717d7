"""``uqx show FILE.nc``: print the tables of a saved validation result."""

from __future__ import annotations

import json

from uqx.cli.commands._common import (
    EXIT_CODES_HELP,
    HelpFormatter,
    add_fail_on,
    fail_on_status,
    validation_text,
)

NAME = "show"


def register(subparsers):
    """Add the ``show`` command."""
    p = subparsers.add_parser(
        NAME,
        help="print the tables of a saved result (uqx validate -o FILE.nc)",
        description="Print a validation result saved by 'uqx validate -o' or 'uqx demo', "
        "with the same text as when it was computed.",
        epilog=EXIT_CODES_HELP,
        formatter_class=HelpFormatter,
    )
    p.add_argument("file", metavar="FILE", help="NetCDF result file")
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")
    add_fail_on(p)
    return p


def run(args) -> int:
    """Read the result file and print it; 1 when a verdict met ``--fail-on``, else 0."""
    from uqx.dataio.netcdf import read_netcdf
    from uqx.errors import InputError
    from uqx.workflow.tables import result_records

    res = read_netcdf(args.file)
    if "verdict" not in res or "set" not in res.dims:
        raise InputError(
            f"{args.file}: not a uqx validation result (no 'verdict' over 'set'); "
            "write one with 'uqx validate ... -o FILE.nc'"
        )
    try:
        params = json.loads(res.attrs.get("parameters", "{}"))
    except (TypeError, ValueError):
        params = {}
    if args.format == "json":
        print(json.dumps(result_records(res), indent=1))
    else:
        paper = bool(params.get("paper_sets", False)) if isinstance(params, dict) else False
        print(validation_text(res, paper_sets=paper))
    return fail_on_status(args, res)
