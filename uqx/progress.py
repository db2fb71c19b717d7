"""Progress display of long computations (dask's progress bar on a terminal only)."""

from __future__ import annotations

import sys
from contextlib import contextmanager

__all__ = ["progress_bar"]


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextmanager
def progress_bar(*, quiet: bool = False, stream=None, minimum: float = 1.0):
    """Show a dask progress bar for the computations inside the ``with`` block.

    The bar (:class:`dask.diagnostics.ProgressBar`, local schedulers) is written to
    ``stream`` (default ``sys.stderr``) only when that stream is a terminal and ``quiet``
    is False, so that redirected output and logs stay clean.

    Parameters
    ----------
    quiet : bool, default False
        Never show the bar.
    stream : file-like, optional
        Where the bar goes (default ``sys.stderr``).
    minimum : float, default 1.0
        Computations shorter than this many seconds show no bar.

    Yields
    ------
    dask.diagnostics.ProgressBar or None
        The active bar, or None when no bar is shown.
    """
    stream = sys.stderr if stream is None else stream
    if quiet or not _is_tty(stream):
        yield None
        return
    from dask.diagnostics import ProgressBar

    with ProgressBar(minimum=minimum, out=stream) as bar:
        yield bar
