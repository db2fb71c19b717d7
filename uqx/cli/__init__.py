"""The ``uqx`` command line.

The parser and entry point (:mod:`~uqx.cli.app`) and one module per command
(:mod:`uqx.cli.commands`).
"""

from uqx.cli.app import COMMANDS as COMMANDS
from uqx.cli.app import build_parser as build_parser
from uqx.cli.app import main as main
