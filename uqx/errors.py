"""Exception types of uqx (a leaf module: imports nothing from uqx)."""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(ValueError):
    """Bad user input: the message names the problem and, where useful, the fix."""
