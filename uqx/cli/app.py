"""The ``uqx`` command and its subcommands.

The commands: datasets, stats, validate, report, show, fit, plot, sweep, recalibrate, demo,
glossary.

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

from uqx._version import __version__
from uqx.cli.commands._console import cli_message, encodable
from uqx.cli.commands._inputs import load_inputs
from uqx.cli.commands._option_checks import check_options
from uqx.cli.commands._options import EXIT_CODES_HELP, HelpFormatter
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
    "recalibrate",
    "demo",
    "glossary",
]


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser of ``uqx`` (imports argparse-only command modules)."""
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


class _PipeSafe:
    """A text stream that goes on when its reader has gone (``uqx validate ... | head``).

    A text its encoding cannot hold (``PYTHONIOENCODING=ascii``, a Latin-1 terminal) is
    written with ASCII words for the symbols (:func:`encodable`: "γ" as "gamma", "∝" as
    "prop. to") instead of failing.

    Once a write or flush meets :class:`BrokenPipeError`, the stream's descriptor is
    pointed at the null device and everything else is dropped: the command still writes
    its files and returns its own exit status (that of ``--fail-on``), instead of
    stopping half-way with status 0.
    """

    def __init__(self, stream):
        self._stream = stream
        enc = str(getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")
        # not UTF: the symbols as ASCII words (stderr would show them as \u escapes)
        self._plain = None if enc.startswith("utf") else enc

    def _gone(self) -> None:
        try:  # the buffered rest then goes nowhere, at exit too
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, self._stream.fileno())
            os.close(null)
        except (OSError, ValueError, AttributeError):  # no descriptor (a test's capture)
            pass

    def write(self, text):
        try:
            if self._plain and isinstance(text, str):
                self._stream.write(encodable(text, self._plain))
                return len(text)
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:  # PYTHONIOENCODING=ascii, a latin-1 terminal
                self._stream.write(encodable(text, getattr(self._stream, "encoding", None)))
                return len(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._gone()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv=None) -> int:
    """Entry point of the ``uqx`` command; returns the exit status.

    A reader that goes away (``| head``, ``| true``) stops nothing: the outputs are
    written and the exit status is the command's own (:class:`_PipeSafe`).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_help()
        return 0
    os.environ.setdefault("MPLBACKEND", "Agg")
    stdout, stderr = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _PipeSafe(stdout), _PipeSafe(stderr)
    try:
        check_options(args, sys.argv[1:] if argv is None else argv)
        status = int(args._run(args) or 0)
        sys.stdout.flush()  # a reader gone before the last buffer: not an error at exit
        return status
    except BrokenPipeError:  # pragma: no cover - a write that bypassed sys.stdout
        return 0
    except (InputError, OSError) as exc:
        print(f"uqx: error: {cli_message(str(exc))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("uqx: interrupted", file=sys.stderr)
        return 130
    finally:
        sys.stdout, sys.stderr = stdout, stderr

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
