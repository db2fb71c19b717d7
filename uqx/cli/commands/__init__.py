"""Subcommands of the ``uqx`` command line, one module each.

Every module defines ``register(subparsers) -> argparse.ArgumentParser`` (argparse only:
nothing heavy is imported when the parser is built) and ``run(args) -> int``; the list
:data:`uqx.cli.COMMANDS` names the modules to register.
"""
