"""Progress display of long computations.

Two displays:

- :func:`steps_progress`: the one display of a validation, ``uqx validate · step 5 of 14:
  bootstrap [####      ] 31% | 4 s elapsed, ~9 s left``, one line that moves through the
  steps of :data:`uqx.workflow.steps.STEPS` (weighted by their usual share of the
  time, :data:`STEP_WEIGHTS`), the dask tasks of each step moving it within the step. It
  is a ``tqdm`` bar on a terminal, in a notebook (``tqdm.notebook`` where ipywidgets is
  installed, else the text bar in the cell's output), or on any stream when asked
  (``progress=True``); never with ``quiet`` or ``UQX_PROGRESS=0``.
- :func:`progress_bar`: a labelled dask bar for the other commands (``uqx stats``, the
  studies): ``uqx stats · statistics [#####     ] 12/24 tasks, 50% | 1.2 s``, the step read
  from the names of the tasks of each dask computation (:data:`STEP_NAMES`), on a terminal
  only. :func:`compute_tasks` is the one local ``dask.compute`` of the package; inside a
  :func:`steps_progress` its tasks move the step display instead of a bar of their own.

The first run after an install compiles the numba kernels (about a minute);
:func:`kernels_compiled` tells, from numba's cache index files, whether that is still to
come, and :func:`steps_progress` says so.
"""

from __future__ import annotations

import hashlib
import numbers
import os
import shutil
import sys
import time
from collections import Counter
from contextlib import contextmanager
from contextvars import ContextVar
from importlib.util import find_spec
from pathlib import Path

from uqx.errors import InputError

__all__ = ["progress_bar", "compute_tasks", "check_scheduler", "LOCAL_SCHEDULERS", "step_name",
           "STEP_NAMES", "STEP_WEIGHTS", "steps_progress", "StepProgress", "kernels_compiled",
           "COMPILING_NOTE", "progress_wanted", "enter_step"]

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
    if quiet or not _is_tty(stream) or _ACTIVE.get() is not None:  # one display at a time
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
    quiet = quiet or _ACTIVE.get() is not None  # a step display moves instead
    with progress_bar(quiet=quiet, label=label):
        (out,) = dask.compute(tasks, **kw)
    return out


# ---------------------------------------------------------------- the steps of a validation
#: Usual share of a validation's time per step (measured on two demo sets, M = 2000,
#: --n-mc 1000, 2-core machine: copies 41 %, resolutions 27 %, bootstrap 20 %,
#: diagnostics 7 %): the bar moves by these weights, so that its time left means something.
#: A step not named here weighs :data:`_LIGHT`.
STEP_WEIGHTS = {"order": 2.0, "bootstrap": 20.0, "copies": 41.0, "questions": 1.5,
                "resolutions": 27.0, "diagnostics": 7.0}
_LIGHT = 0.3

#: What the display says when the numba kernels are still to be compiled.
COMPILING_NOTE = ("compiling the numerical kernels (once, about a minute after an install; "
                  "later runs reuse them)")

#: Environment variable: ``0`` never shows the step display, ``1`` always (to stderr).
PROGRESS_ENV = "UQX_PROGRESS"

_ACTIVE: ContextVar = ContextVar("uqx_step_progress", default=None)


def kernels_compiled() -> bool:
    """Whether numba's cache holds the compiled kernels of uqx (no numba import).

    numba writes an index file (``*.nbi``) per cached function into the ``__pycache__``
    folder beside its module, or, where that folder is not writable (an installed
    package), into the user's cache (``~/.cache/numba``), under ``<folder>_<sha1 of the
    folder's path>``; with ``$NUMBA_CACHE_DIR`` set, there only; the kernels of the copies
    (``uqx/engine/copies.py``), which every validation runs, stand for all.

    Returns
    -------
    bool
        False when no index file of those kernels exists: the next run compiles them.
    """
    here = Path(__file__).resolve().parent / "engine"
    sub = f"engine_{hashlib.sha1(str(here).encode()).hexdigest()}"  # numba's subpath
    if os.environ.get("NUMBA_CACHE_DIR"):  # then numba caches there only
        folders = [Path(os.environ["NUMBA_CACHE_DIR"]) / sub]
    else:
        home = Path.home()
        roots = [os.environ.get("XDG_CACHE_HOME"), home / ".cache", home / "Library" / "Caches"]
        folders = [here / "__pycache__"] + [Path(r) / "numba" / sub for r in roots if r]
    return any(any(f.glob("copies.*.nbi")) for f in folders if f.is_dir())


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (an IPython kernel app is loaded)."""
    ip = sys.modules.get("IPython")
    if ip is None or "ipykernel" not in sys.modules:
        return False
    try:
        shell = ip.get_ipython()
    except Exception:  # noqa: BLE001 - any odd IPython state: not a notebook
        return False
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def progress_wanted(progress=None, *, quiet: bool = False, stream=None) -> bool:
    """Whether to show the step display.

    Parameters
    ----------
    progress : bool or None
        True: always (on ``stream``); False: never; None: on a terminal or in a notebook.
    quiet : bool, default False
        Never (the command line's ``-q``).
    stream : file-like, optional
        Where the display goes (default ``sys.stderr``).

    Returns
    -------
    bool
        False also when ``UQX_PROGRESS=0``; True when ``UQX_PROGRESS=1`` (unless quiet).
    """
    env = os.environ.get(PROGRESS_ENV, "").strip()
    if quiet or progress is False or env == "0":
        return False
    if progress or env == "1":
        return True
    return _is_tty(sys.stderr if stream is None else stream) or _in_notebook()


def _tqdm_class(stream):
    """``tqdm.notebook.tqdm`` in a notebook with ipywidgets, else the text ``tqdm``."""
    if stream is None and _in_notebook() and find_spec("ipywidgets") is not None:
        from tqdm.notebook import tqdm  # a widget; without ipywidgets the text bar

        return tqdm
    from tqdm import tqdm

    return tqdm


class StepProgress:
    """One display that moves through the steps of a computation (:func:`steps_progress`).

    Parameters
    ----------
    steps : sequence of str
        The steps' names, in order.
    label : str, optional
        What runs (``"uqx validate"``), at the start of the line.
    stream : file-like, optional
        Where the text bar goes (default ``sys.stderr``; a notebook widget when None in a
        notebook with ipywidgets).
    weights : dict, optional
        Share of the time per step name (default :data:`STEP_WEIGHTS`).
    """

    def __init__(self, steps, *, label=None, stream=None, weights=None):
        weights = STEP_WEIGHTS if weights is None else weights
        self.steps = [str(s) for s in steps]
        self.label = label
        self._w = [float(weights.get(s, _LIGHT)) for s in self.steps]
        self._before = [sum(self._w[:k]) for k in range(len(self._w))]
        self.k = 0
        self._frac = 0.0
        self._tasks = [0, 0, 0]  # tasks done, tasks seen, computations started
        self.lines = []  # the descriptions shown, in order (tests, logs)
        cls = _tqdm_class(stream)
        kw = {} if stream is None and cls.__module__ == "tqdm.notebook" else {
            "file": sys.stderr if stream is None else stream,
            # the terminal's width; 100 where it reports none (a terminal of 0 columns
            # would show an empty line)
            "ncols": shutil.get_terminal_size((100, 20)).columns}
        self.bar = cls(total=round(sum(self._w), 6), desc=self._desc(), leave=False,
                       bar_format="{desc} {bar} {percentage:3.0f}% | {elapsed} elapsed, "
                       "~{remaining} left{postfix}", mininterval=0.2, **kw)

    def _desc(self) -> str:
        head = f"{self.label} \u00b7 " if self.label else ""
        name = self.steps[self.k - 1] if self.k else "starting"
        return f"{head}step {max(self.k, 1)} of {len(self.steps)}: {name}"

    def start(self, name: str) -> None:
        """Enter the next step (``name``: its name, checked against the list)."""
        k = self.steps.index(str(name), self.k) + 1 if str(name) in self.steps[self.k:] \
            else self.k + 1
        self.k, self._frac, self._tasks = min(k, len(self.steps)), 0.0, [0, 0, 0]
        desc = self._desc()
        self.lines.append(desc)
        self.bar.set_description_str(desc, refresh=False)
        self.bar.set_postfix_str("", refresh=False)
        self._move(refresh=True)  # every step is shown, however short

    def within(self, done: int, total: int, computations: int = 1) -> None:
        """Move within the current step: ``done`` of ``total`` tasks (never backwards).

        A step may run several dask computations whose tasks are known only as each
        starts; after ``c`` of them the step is taken as ``c/(c+1)`` done at most, so that
        the display does not reach the step's end with the first one.
        """
        if total > 0:
            c = max(int(computations), 1)
            self._frac = max(self._frac, min(done / total, 1.0) * c / (c + 1))
            self.bar.set_postfix_str(f"{done}/{total} tasks", refresh=False)
            self._move()

    def _move(self, refresh: bool = False) -> None:
        k = max(self.k - 1, 0)
        pos = self._before[k] + self._frac * self._w[k] if self.k else 0.0
        step = round(pos - self.bar.n, 6)
        if step > 0:
            self.bar.update(step)  # drawn at most every mininterval
        if refresh:
            self.bar.refresh()

    def note(self, text: str) -> None:
        """Write a line above the display (``tqdm.write``)."""
        self.lines.append(text)
        self.bar.write(text, file=getattr(self.bar, "fp", None) or sys.stderr)

    def close(self) -> None:
        """Remove the display (the last step done)."""
        self.bar.close()


def _task_callback():
    """Return a dask callback that moves the active :class:`StepProgress` within its step."""
    from dask.callbacks import Callback

    class StepTasks(Callback):
        """Counts the tasks of every dask computation of a step (they add up)."""

        def _start_state(self, dsk, state):
            sp = _ACTIVE.get()
            if sp is not None:
                n = sum(len(state[k]) for k in ("ready", "waiting", "running"))
                sp._tasks[1] += n + len(state.get("finished", ()))
                sp._tasks[2] += 1
                sp.within(*sp._tasks)

        def _posttask(self, key, result, dsk, state, worker_id):
            sp = _ACTIVE.get()
            if sp is not None:
                sp._tasks[0] += 1
                sp.within(*sp._tasks)

    return StepTasks()


@contextmanager
def steps_progress(steps, *, label: str | None = None, progress=None, quiet: bool = False,
                   stream=None, weights=None):
    """Show one display that moves through ``steps`` for the duration of the block.

    The computation names its steps as it enters them (:func:`enter_step`); the dask tasks
    of each step (:func:`compute_tasks`) move the display within it. The line reads
    ``LABEL · step k of n: NAME [####  ] 31% | 4 s elapsed, ~9 s left, 12/40 tasks``.
    Before the first step, when the numba kernels are not compiled yet
    (:func:`kernels_compiled`), a line says so (:data:`COMPILING_NOTE`).

    Parameters
    ----------
    steps : sequence of str
        Names of the steps, in order.
    label : str, optional
        What runs, at the start of the line.
    progress : bool or None
        :func:`progress_wanted`: None shows it on a terminal or in a notebook.
    quiet : bool, default False
        Never show it.
    stream : file-like, optional
        Where it goes (default ``sys.stderr``, a widget in a notebook with ipywidgets).
    weights : dict, optional
        Share of the time per step (default :data:`STEP_WEIGHTS`).

    Yields
    ------
    StepProgress or None
        The display, or None when none is shown (or one is already active: the inner
        computation then moves the outer display).
    """
    if _ACTIVE.get() is not None or not progress_wanted(progress, quiet=quiet, stream=stream):
        yield None
        return
    sp = StepProgress(steps, label=label, stream=stream, weights=weights)
    if not kernels_compiled():
        sp.note(f"{label or 'uqx'}: {COMPILING_NOTE}")
    token = _ACTIVE.set(sp)
    cb = None
    try:
        try:
            cb = _task_callback()
            cb.register()
        except ImportError:  # no dask: the steps alone move the display
            cb = None
        sp.t0 = time.perf_counter()
        yield sp
    finally:
        if cb is not None:
            cb.unregister()
        _ACTIVE.reset(token)
        sp.close()


def enter_step(name: str) -> None:
    """Tell the active display (:func:`steps_progress`), if any, that step ``name`` starts."""
    sp = _ACTIVE.get()
    if sp is not None:
        sp.start(name)
