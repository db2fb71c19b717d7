"""Exception types of uqx (a leaf module: imports nothing from uqx)."""

from __future__ import annotations

__all__ = ["InputError", "OutputError"]


class InputError(ValueError):
    """Bad user input: the message names the problem and, where useful, the fix."""


class OutputError(OSError):
    """A result cannot be written: the message names the target file and the reason."""
