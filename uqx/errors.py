"""Exception types of uqx (a leaf module: imports nothing from uqx)."""

from __future__ import annotations

__all__ = ["InputError", "OutputError", "DownloadError"]


class InputError(ValueError):
    """Bad user input: the message names the problem and, where useful, the fix."""


class OutputError(OSError):
    """A result cannot be written: the message names the target file and the reason."""


class DownloadError(InputError):
    """A download failed (offline, HTTP error, dropped connection, corrupted data).

    The message names the URL and the reason; nothing was written to the target.
    """
