"""The ``uqx`` command: datasets, stats, validate, report, show, fit, plot, sweep, demo.

Each command is a module of :mod:`uqx.cli.commands` with ``register(subparsers)`` and
``run(args) -> int``; :data:`COMMANDS` lists them (adding a command is one line). Only
argparse is needed to build the parser, so ``uqx --help`` and ``uqx --version`` do not
load the numerical stack.

Bad input prints ``uqx: error: <message>`` on stderr and exits with status 2 (no
traceback); see ``uqx COMMAND --help``.
"""

from __future__ import annotations

import argparse
import os
import sys
from importlib import import_module

from uqx.cli.commands._common import check_options, load_inputs
from uqx.errors import InputError

__all__ = ["main", "build_parser", "load_inputs", "COMMANDS"]

#: Command modules, registered in this order (``uqx.cli.commands.<name>``).
COMMANDS = [
    "datasets",
    "stats",
    "validate",
    "report",
    "show",
    "fit",
    "plot",
    "sweep",
    "demo",
]


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``uqx`` (imports argparse-only command modules)."""
    from uqx._version import __version__
    from uqx.cli.commands._common import EXIT_CODES_HELP, HelpFormatter

    parser = argparse.ArgumentParser(
        prog="uqx",
        description="Validate prediction uncertainties of ML regression models "
        "(calibration, consistency, adaptivity) as in P. Pernot's papers.",
        epilog=EXIT_CODES_HELP,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"uqx {__version__}")
    quiet_help = "no progress bar and no notes on stderr"
    parser.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = import_module(f"uqx.cli.commands.{name}")
        p = module.register(sub)
        # also accepted after the command; SUPPRESS keeps the global value otherwise
        p.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                       help=quiet_help)
        p.set_defaults(_run=module.run)
    return parser


def main(argv=None) -> int:
    """Entry point of the ``uqx`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    os.environ.setdefault("MPLBACKEND", "Agg")
    try:
        check_options(args, sys.argv[1:] if argv is None else argv)
        return int(args._run(args) or 0)
    except BrokenPipeError:  # pragma: no cover - e.g. `uqx validate ... | head`
        sys.stderr.close()
        return 0
    except (InputError, OSError) as exc:
        from uqx.cli.commands._common import cli_message

        print(f"uqx: error: {cli_message(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("uqx: interrupted", file=sys.stderr)
        return 130

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
