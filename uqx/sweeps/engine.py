r"""Sweep engine: a parameter grid times replicates, as chunked dask tasks, resumable.

A study is a :class:`Study`: named grid axes (the *cells*), a number of replicates per
cell cut into fixed blocks of ``block`` replicates, and a pure module-level **block
function** ``kernel(cell, block, n, params, data) -> {name: array (n, *extra)}`` that
computes the replicates ``block*B .. block*B + n - 1`` of one cell. The kernel keys its
random streams by (study, cell coordinates, block) with
:func:`uqx.engine.resample.seed_sequence`, and the block size is a constant of the study, so
the numbers never depend on how blocks are grouped into tasks (``chunk_size``), on the
scheduler (threads, processes, ``dask.distributed``) or on the number of workers.

With a run directory each finished block is saved as a small ``.npz`` (written to a
temporary name, then :func:`os.replace`), next to a ``manifest.json`` holding the study
name, every parameter and the uqx version; a restart with ``resume=True`` skips the
blocks already there, and a directory whose manifest differs is refused. The assembled
:class:`xarray.Dataset` has the grid axes, ``replicate`` (dropped when the study has a
single deterministic replicate) and the kernel's extra dimensions as coordinates.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import threading
import time
import warnings
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dask
import numpy as np
import xarray as xr

from uqx.dataio.netcdf import atomic_write, json_default
from uqx.dataio.provenance import provenance_attrs
from uqx.errors import InputError
from uqx.progress import compute_tasks

__all__ = [
    "Study",
    "run_sweep",
    "run_dir_for",
    "compute_blocks",
    "resolve_client",
    "SweepInterrupted",
    "SweepStopped",
]

MANIFEST = "manifest.json"
#: Names of dask's local schedulers.
LOCAL = ("threads", "processes", "sync", "synchronous", "single-threaded")


@dataclass(frozen=True)
class Study:
    """Definition of a sweep: grid, replicates, block function, output layout.

    Attributes
    ----------
    name : str
        Study name (``appendix-b``, ``pval``...), recorded in the archive.
    axes : dict of str -> list
        Grid axes in order; a task computes one cell (one value per axis).
    n_rep : int
        Replicates per cell (1 and ``replicate_dim=False`` for deterministic studies).
    block : int
        Replicates per fixed block (part of the stream definition).
    kernel : callable
        Module-level ``kernel(cell: dict, block: int, n: int, params: dict, data)``
        returning ``{name: numpy array of shape (n, *extra_dims[name])}``.
    variables : dict of str -> tuple of str
        Output variables and their extra dimensions (after ``replicate``).
    extra_coords : dict of str -> list
        Coordinates of the extra dimensions.
    params : dict
        JSON-serialisable parameters (passed to the kernel, recorded in the manifest
        and the archive).
    data : object, optional
        Inputs of the kernel that are not parameters (e.g. data set arrays); their
        content keys must be in ``params`` so that the manifest identifies them.
    cell_data : callable, optional
        ``cell_data(cell, data) -> object``: the part of ``data`` a cell needs (keeps
        tasks small on a cluster).
    replicate_dim : bool
        Keep the ``replicate`` dimension in the archive.
    """

    name: str
    axes: dict
    n_rep: int
    block: int
    kernel: Callable
    variables: dict
    extra_coords: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    data: object = None
    cell_data: Callable | None = None
    replicate_dim: bool = True

    @property
    def cells(self) -> list[tuple]:
        """All cells of the grid (tuples of axis values, in C order)."""
        return list(itertools.product(*self.axes.values()))

    @property
    def n_blocks(self) -> int:
        """Fixed blocks per cell."""
        return -(-self.n_rep // self.block)

    def block_size(self, b: int) -> int:
        """Replicates in block ``b``."""
        return min(self.block, self.n_rep - b * self.block)

    def manifest(self) -> dict:
        """Identity of the run: study, axes, replicates, block, parameters, version."""
        return json.loads(json.dumps(provenance_attrs(
            created=False,  # the identity of a run: compared on resume
            study=self.name,
            axes=self.axes,
            n_rep=self.n_rep,
            block=self.block,
            params=self.params,
        ), default=json_default, sort_keys=True))


def run_dir_for(output) -> Path:
    """Run directory of an output file: ``OUT.nc.run`` next to it."""
    p = Path(output)
    return p.parent / f"{p.name}.run"


def _block_path(run_dir: Path, cell_index: int, b: int) -> Path:
    return run_dir / f"c{cell_index:06d}_b{b:05d}.npz"


def _save_block(run_dir, cell_index, b, values):
    """Write one block's arrays atomically (:func:`uqx.dataio.netcdf.atomic_write`).

    A run directory that is gone (the run finished, or was removed to start afresh) is
    never created again: the block's worker stops (:class:`SweepStopped`).
    """
    if not Path(run_dir).is_dir():
        raise SweepStopped(f"run directory {run_dir} was removed: this sweep's worker stops")
    atomic_write(_block_path(Path(run_dir), cell_index, b),
                 lambda tmp: np.savez(tmp, **values), what="block", mkdir=False)


def _load_block(run_dir, cell_index, b, study: Study):
    """One saved block of a run directory, or None to compute it (again).

    A missing block is computed; a damaged one (truncated, not a zip archive, other
    arrays) is named in a warning and computed again, so that a resumed run redoes only
    what it cannot read.
    """
    path = _block_path(Path(run_dir), cell_index, b)
    if not path.exists():
        return None
    try:
        with np.load(path) as z:
            out = {k: z[k] for k in z.files}
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile, zlib.error) as exc:
        warnings.warn(f"{path}: damaged block of the run directory (truncated or not a "
                      f"NumPy .npz archive: {exc}); it is computed again", stacklevel=2)
        return None
    n = study.block_size(b)
    if set(out) != set(study.variables) or any(v.shape[0] != n for v in out.values()):
        warnings.warn(f"{path}: block of the run directory with other arrays than this run "
                      "writes; it is computed again", stacklevel=2)
        return None
    return out


class SweepInterrupted(RuntimeError):
    """Raised by the ``_stop_after`` test hook to simulate an interrupted run."""


class SweepStopped(RuntimeError):
    """Raised in a worker whose run directory was removed: it writes nothing more."""


#: The owner watch of this worker process (one thread, started by its first task).
_WATCH: dict = {}


def _watch_owner(owner) -> None:
    """End a ``"processes"`` worker once the process ``owner`` (a pid) that started it ends.

    Such a worker is re-parented (to init or a sub-reaper); left alone it would finish
    the queued cells of a run that nobody reads, on the cores of the next one, and then
    wait forever. It is checked before each block and by a daemon thread once a second,
    and leaves with :func:`os._exit` (nobody is left to report to; a block being written
    is finished or absent, :func:`~uqx.dataio.netcdf.atomic_write`).
    """
    if owner is None or os.getpid() == owner:
        return
    if os.getppid() != owner:
        os._exit(_ORPHAN_EXIT)
    if owner not in _WATCH:
        _WATCH[owner] = threading.Thread(target=_watchdog, args=(owner,), daemon=True,
                                         name="uqx-sweep-owner")
        _WATCH[owner].start()


#: Exit status of a worker whose owner has ended.
_ORPHAN_EXIT = 3


def _watchdog(owner) -> None:
    while os.getppid() == owner:
        time.sleep(1.0)
    os._exit(_ORPHAN_EXIT)


def compute_blocks(kernel, cell, blocks, sizes, params, data, run_dir, cell_index,
                   stop_after=None, owner=None):
    """Compute fixed blocks of one cell (one dask task); save each when ``run_dir``.

    ``stop_after`` (tests only) raises after that many blocks have been saved in this
    task, to simulate an interrupted run. ``owner``: the pid of the process that started
    the sweep, given to the workers of the ``"processes"`` scheduler, which stop before
    each block once it has ended (:func:`_watch_owner`).
    """
    out = []
    for k, (b, n) in enumerate(zip(blocks, sizes, strict=True)):
        _watch_owner(owner)
        values = kernel(cell, b, n, params, data)
        values = {key: np.asarray(v) for key, v in values.items()}
        if run_dir is not None:
            _save_block(run_dir, cell_index, b, values)
        out.append(values)
        if stop_after is not None and k + 1 >= stop_after:
            raise SweepInterrupted(f"sweep interrupted after {k + 1} block(s) (test hook)")
    return out


def _prepare_run_dir(study: Study, run_dir, resume: bool) -> Path | None:
    if run_dir is None:
        return None
    run_dir = Path(run_dir)
    manifest = study.manifest()
    mpath = run_dir / MANIFEST
    if run_dir.exists():
        try:
            old = json.loads(mpath.read_text())
        except (OSError, ValueError):
            raise InputError(
                f"{run_dir} exists but holds no readable {MANIFEST}: not a uqx run "
                "directory; remove it or choose another output"
            ) from None
        if old != manifest:
            diff = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
            detail = ""
            if "params" in diff:
                po, pn = old.get("params", {}), manifest["params"]
                keys = sorted(k for k in set(po) | set(pn) if po.get(k) != pn.get(k))
                detail = f" (parameters differing: {', '.join(keys)})"
            raise InputError(
                f"run directory {run_dir} belongs to another run: study "
                f"{old.get('study')!r}, differing in {', '.join(diff)}{detail}; it is not "
                "mixed in - remove it or write to another output"
            )
        if not resume:
            raise InputError(
                f"run directory {run_dir} of an earlier, unfinished run exists: pass "
                "--resume (resume=True) to continue it, or remove it to start afresh"
            )
        return run_dir
    try:
        run_dir.mkdir(parents=True)
        atomic_write(mpath, lambda tmp: tmp.write_text(json.dumps(manifest, indent=1,
                                                                  sort_keys=True)),
                     what="run manifest")
    except OSError as exc:
        raise InputError(f"cannot create run directory {run_dir}: {exc.strerror}") from None
    return run_dir


def resolve_client(scheduler):
    """Return a ``dask.distributed.Client`` for an address or Client, else None."""
    if scheduler is None or isinstance(scheduler, str) and scheduler in LOCAL:
        return None
    if isinstance(scheduler, str):
        _check_options(scheduler, None, None)
        from distributed import Client

        try:
            return Client(scheduler, timeout="20s")
        except OSError as exc:
            raise InputError(f"cannot connect to dask scheduler {scheduler}: {exc}") from None
    return scheduler  # a Client


def _check_options(scheduler, chunk_size, num_workers):
    """Reject bad execution options before anything is created or computed."""
    if isinstance(scheduler, str) and scheduler not in LOCAL and ":" not in scheduler:
        raise InputError(
            f"unknown scheduler {scheduler!r}: threads, processes, sync, or the address "
            "of a dask.distributed scheduler such as tcp://HOST:8786"
        )
    for name, v in (("chunk_size", chunk_size), ("num_workers", num_workers)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer))
                              or v < 1):
            raise InputError(f"{name} must be a positive integer, got {v!r}")


def _tasks(study, todo, run_dir, chunk_size, stop_after, owner=None):
    per_task = max(1, int(chunk_size) // study.block) if chunk_size else 1
    tasks, index = [], []
    for ci, blocks in todo.items():
        cell = dict(zip(study.axes, study.cells[ci], strict=True))
        data = study.cell_data(cell, study.data) if study.cell_data else study.data
        for lo in range(0, len(blocks), per_task):
            grp = blocks[lo : lo + per_task]
            sizes = [study.block_size(b) for b in grp]
            tasks.append(dask.delayed(compute_blocks, pure=False)(
                study.kernel, cell, grp, sizes, study.params, data,
                None if run_dir is None else str(run_dir), ci, stop_after, owner))
            index.append((ci, grp))
    return tasks, index


def _distributed(client, tasks, index, run_dir, quiet):
    """Run on a dask.distributed cluster; the client saves each finished block.

    Saving on the client side keeps resumable runs working without a file system shared
    with the workers.
    """
    from distributed import as_completed

    futures = client.compute(tasks)
    if not quiet:
        from distributed import progress

        progress(futures, notebook=False)
    where = {f.key: i for i, f in enumerate(futures)}
    results = [None] * len(futures)
    for fut, res in as_completed(futures, with_results=True):
        i = where[fut.key]
        results[i] = res
        if run_dir is not None:
            ci, grp = index[i]
            for b, values in zip(grp, res, strict=True):
                _save_block(run_dir, ci, b, values)
    return results


def _compute(tasks, index, scheduler, num_workers, quiet, run_dir, label=None):
    client = resolve_client(scheduler)
    if client is not None:
        try:
            return _distributed(client, tasks, index, run_dir, quiet)
        finally:
            if client is not scheduler:  # ours (made from an address): close it
                client.close()
    return compute_tasks(tasks, scheduler=scheduler, num_workers=num_workers, quiet=quiet,
                   label=label)


def run_sweep(study: Study, *, chunk_size: int | None = None, scheduler=None,
              num_workers: int | None = None, run_dir=None, resume: bool = False,
              quiet: bool = True, _stop_after: int | None = None) -> xr.Dataset:
    """Run a study and return its per-replicate values as an :class:`xarray.Dataset`.

    Parameters
    ----------
    study : Study
    chunk_size : int, optional
        Replicates per dask task (rounded down to whole fixed blocks, at least one);
        never changes the numbers.
    scheduler : {"threads", "processes", "sync"}, str address or Client, optional
        Local dask scheduler, or a ``dask.distributed`` scheduler address
        (``tcp://HOST:PORT``) or ``Client``.
    num_workers : int, optional
        Workers of the local schedulers.
    run_dir : path, optional
        Keep finished blocks there (resumable run); see :func:`run_dir_for`.
    resume : bool
        Continue the run of an existing ``run_dir`` (same manifest required).
    quiet : bool
        No progress bar.

    Returns
    -------
    xarray.Dataset
        Variables ``study.variables`` over (*axes, ``replicate``, *extra dims).
    """
    _check_options(scheduler, chunk_size, num_workers)
    run_dir = _prepare_run_dir(study, run_dir, resume)
    cells = study.cells
    done: dict = {}
    todo: dict = {}
    for ci in range(len(cells)):
        for b in range(study.n_blocks):
            got = _load_block(run_dir, ci, b, study) if run_dir is not None else None
            if got is None:
                todo.setdefault(ci, []).append(b)
            else:
                done[(ci, b)] = got
    local = scheduler is None or (isinstance(scheduler, str) and scheduler in LOCAL)
    # local schedulers: each task saves its blocks; distributed: the client does
    # worker processes of ours stop once this process has ended (a killed run)
    owner = os.getpid() if scheduler in ("processes", "multiprocessing") else None
    tasks, index = _tasks(study, todo, run_dir if local else None, chunk_size, _stop_after,
                          owner)
    if tasks:
        results = _compute(tasks, index, scheduler, num_workers, quiet, run_dir,
                           label=f"uqx sweep {study.name}")
        for (ci, grp), res in zip(index, results, strict=True):
            for b, values in zip(grp, res, strict=True):
                done[(ci, b)] = values
    return _assemble(study, done)


def _assemble(study: Study, done: dict) -> xr.Dataset:
    shape = tuple(len(v) for v in study.axes.values())
    data = {}
    for name, extra in study.variables.items():
        first = done[(0, 0)][name]
        arr = np.empty(shape + (study.n_rep,) + first.shape[1:], dtype=first.dtype)
        flat = arr.reshape((-1,) + arr.shape[len(shape):])
        for ci in range(flat.shape[0]):
            flat[ci] = np.concatenate([done[(ci, b)][name] for b in range(study.n_blocks)])
        dims = (*study.axes, "replicate", *extra)
        if not study.replicate_dim:
            arr = np.take(arr, 0, axis=len(shape))
            dims = (*study.axes, *extra)
        data[name] = (dims, arr)
    coords = {k: list(v) for k, v in study.axes.items()}
    if study.replicate_dim:
        coords["replicate"] = np.arange(study.n_rep)
    coords.update({k: list(v) for k, v in study.extra_coords.items()})
    return xr.Dataset(data, coords=coords, attrs={"study": study.name})


def finish_run(run_dir) -> None:
    """Remove a run directory after its archive was written."""
    if run_dir is not None and Path(run_dir).is_dir():
        shutil.rmtree(run_dir, ignore_errors=True)
