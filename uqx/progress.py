"""Progress display of long computations: a labelled bar on a terminal only.

The bar names the command and the step that runs (``uqx validate · bootstrap
[#####     ] 12/24 tasks, 50% | 1.2 s``) instead of dask's bare ``[####] | 100% Completed``;
the step is read from the names of the tasks of each dask computation
(:data:`STEP_NAMES`). :func:`compute_tasks` is the one local ``dask.compute`` of the package
under that bar (bootstrap, simulated references, Monte-Carlo studies).
"""

from __future__ import annotations

import numbers
import sys
from collections import Counter
from contextlib import contextmanager

from uqx.errors import InputError

__all__ = ["progress_bar", "compute_tasks", "check_scheduler", "LOCAL_SCHEDULERS", "step_name",
           "STEP_NAMES"]

#: Task function names of the uqx computations -> the step they belong to.
STEP_NAMES = {
    "_call": "bootstrap",
    "estimate": "bootstrap",
    "moment_partial": "bootstrap",
    "from_moment_partials": "bootstrap",
    "replicates": "bootstrap",
    "_sim_block": "simulated references",
    "_moment_block": "simulated references",
    "_moment_group": "simulated references",
    "_u_sums": "simulated references",
    "_group_sums": "streamed statistics",
    "_group_jack": "streamed statistics",
    "reduce1": "streamed statistics",
    "reduce2": "streamed statistics",
    "moment_sums": "statistics",
    "compute_blocks": "blocks of cells",
}


_STEPS = {k.lstrip("_"): v for k, v in STEP_NAMES.items()}


def _is_tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


def step_name(keys) -> str:
    """Name the step of a dask computation from the names of its tasks.

    Parameters
    ----------
    keys : iterable
        Keys of the task graph (``"_sim_block-3f2a..."``, tuples of them).

    Returns
    -------
    str
        The step of :data:`STEP_NAMES` that most tasks belong to, else ``"computing"``.
    """
    from dask.utils import key_split

    steps = Counter()
    for key in keys:
        try:
            name = key_split(key)
        except Exception:  # noqa: BLE001 - any odd key: not counted
            continue
        step = _STEPS.get(str(name).lstrip("_"))  # key_split drops leading underscores
        if step:
            steps[step] += 1
    return steps.most_common(1)[0][0] if steps else "computing"


def _bar_class():
    from dask.diagnostics import ProgressBar
    from dask.utils import format_time

    class LabelledProgressBar(ProgressBar):
        """dask's bar with a label, the step and the count of tasks."""

        def __init__(self, label=None, **kw):
            super().__init__(**kw)
            self._label = label
            self._step = "computing"
            self._counts = (0, 0)

        def _start(self, dsk):
            self._step = step_name(dsk.keys() if hasattr(dsk, "keys") else ())
            self._counts = (0, len(dsk) if hasattr(dsk, "__len__") else 0)
            super()._start(dsk)

        def _update_bar(self, elapsed):
            s = self._state
            if s:
                ndone = len(s["finished"])
                total = sum(len(s[k]) for k in ["ready", "waiting", "running"]) + ndone
                self._counts = (ndone, total)
            super()._update_bar(elapsed)

        def _draw_bar(self, frac, elapsed):
            done, total = self._counts
            if frac >= 1 and total:
                done = total
            bar = "#" * int(self._width * frac)
            head = f"{self._label} \u00b7 {self._step}" if self._label else self._step
            pct = f"{int(100 * frac)}%"
            count = f"{done}/{total} tasks, {pct}" if total else pct
            msg = f"\r{head} [{bar:<{self._width}}] {count} | {format_time(elapsed)}"
            try:
                if self._file is not None:
                    self._file.write(msg)
                    self._file.flush()
            except ValueError:  # closed stream
                pass

    return LabelledProgressBar


@contextmanager
def progress_bar(*, quiet: bool = False, stream=None, minimum: float = 1.0,
                 label: str | None = None):
    """Show a labelled progress bar for the dask computations inside the ``with`` block.

    The bar (a :class:`dask.diagnostics.ProgressBar`, local schedulers) is written to
    ``stream`` (default ``sys.stderr``) only when that stream is a terminal and ``quiet``
    is False, so that redirected output and logs stay clean. Each computation gets its
    own line: ``LABEL · STEP [#####     ] 12/24 tasks, 50% | 1.2 s``, the step named after
    its tasks (:func:`step_name`).

    Parameters
    ----------
    quiet : bool, default False
        Never show the bar.
    stream : file-like, optional
        Where the bar goes (default ``sys.stderr``).
    minimum : float, default 1.0
        Computations shorter than this many seconds show no bar.
    label : str, optional
        What runs (``"uqx validate"``), at the start of the line.

    Yields
    ------
    dask.diagnostics.ProgressBar or None
        The active bar, or None when no bar is shown.
    """
    stream = sys.stderr if stream is None else stream
    if quiet or not _is_tty(stream):
        yield None
        return
    with _bar_class()(label=label, minimum=minimum, out=stream) as bar:
        yield bar


#: The names dask takes for its local schedulers (``dask.compute(scheduler=...)``).
LOCAL_SCHEDULERS = ("threads", "threading", "processes", "multiprocessing", "sync",
                    "synchronous", "single-threaded")


def check_scheduler(scheduler, num_workers) -> None:
    """Refuse a scheduler dask would refuse only once the computation starts.

    Accepted: None, a local scheduler's name (:data:`LOCAL_SCHEDULERS`), a
    ``dask.distributed.Client`` (an object with ``submit`` and ``get``) or a ``get``
    function; ``num_workers`` a positive integer.

    Parameters
    ----------
    scheduler : str, Client, callable or None
        The ``scheduler=`` of :func:`uqx.validate`, :func:`uqx.bootstrap`...
    num_workers : int or None
        Their ``num_workers=``.

    Raises
    ------
    uqx.errors.InputError
        Anything else, named.
    """
    ok = (scheduler is None or callable(scheduler)
          or (isinstance(scheduler, str) and scheduler in LOCAL_SCHEDULERS)
          or (hasattr(scheduler, "submit") and hasattr(scheduler, "get")))
    if not ok:
        raise InputError(f"scheduler must be one of {', '.join(LOCAL_SCHEDULERS[::2])} (a "
                         "local dask scheduler), a dask.distributed Client or None, got "
                         f"{scheduler!r}")
    if num_workers is not None and (isinstance(num_workers, bool) or not isinstance(
            num_workers, numbers.Integral) or num_workers < 1):
        raise InputError(f"num_workers must be a positive integer, got {num_workers!r}")


#: Local dask schedulers that take a ``num_workers`` option.
_POOLS = ("threads", "processes")


def compute_tasks(tasks, *, scheduler=None, num_workers: int | None = None, quiet: bool = True,
            label: str | None = None):
    """Compute a collection of dask tasks on a local scheduler, under :func:`progress_bar`.

    Parameters
    ----------
    tasks : object
        Anything :func:`dask.compute` takes as one argument (a list of delayed values,
        nested lists and tuples of them...).
    scheduler : str, optional
        Local dask scheduler (default ``"threads"``).
    num_workers : int, optional
        Workers of the ``"threads"`` and ``"processes"`` schedulers (ignored by others).
    quiet : bool, default True
        No progress bar (:func:`progress_bar`).
    label : str, optional
        What runs, at the start of the bar.

    Returns
    -------
    object
        ``tasks`` computed (same structure).
    """
    import dask

    check_scheduler(scheduler, num_workers)
    kw = {"scheduler": scheduler or "threads"}
    if num_workers is not None and kw["scheduler"] in _POOLS:
        kw["num_workers"] = int(num_workers)
    with progress_bar(quiet=quiet, label=label):
        (out,) = dask.compute(tasks, **kw)
    return out
