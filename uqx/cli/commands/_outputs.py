"""Where a command may write, checked before it computes, and the writing of a result.

``-o`` checked against the one output policy of uqx
(:func:`uqx.dataio.paths.check_output_path`: :func:`check_output`), then against the
files the inputs were read from (:func:`check_not_input`); a directory that figures go to
(:func:`writable_directory`); a validation result written in the format of its suffix
(:func:`write_result`). The writers are imported inside the functions, so that
``uqx --help`` stays light.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

from uqx.cli.commands._console import cli_message
from uqx.dataio.paths import OUTPUT_SUFFIXES, check_output_path, input_paths, same_file
from uqx.errors import InputError, OutputError

__all__ = ["check_output", "check_not_input", "writable_directory", "write_result"]


def check_output(path, *, mkdir: bool = False, kind="netcdf", inputs=()) -> Path | None:
    """Check, before any computation, that a result can be written to ``path``.

    The one output policy of uqx, :func:`uqx.dataio.paths.check_output_path`: the suffix
    fits ``kind``, the path is not a directory, device or FIFO, not one of ``inputs``, its
    directory exists (or ``mkdir`` creates it) and can be written.

    Parameters
    ----------
    path : str, path-like or None
        The ``-o`` value (None: nothing is written, nothing checked).
    mkdir : bool, default False
        ``--mkdir``: create a missing directory.
    kind : str or sequence of str, default "netcdf"
        What is written (keys of :data:`uqx.dataio.paths.OUTPUT_SUFFIXES`).
    inputs : iterable of str, optional
        The command's inputs (files; dataset names are ignored).

    Returns
    -------
    pathlib.Path or None
        The path.

    Raises
    ------
    uqx.errors.OutputError
        The path breaks the policy (the message names it and the fix).
    """
    if path is None:
        return None
    return check_output_path(path, kind=kind, inputs=inputs, mkdir=mkdir)


def check_not_input(path, ds, *, inputs=()) -> None:
    """Refuse an output that is one of the files an input Dataset was read from.

    Run once the inputs are loaded (a registered dataset's file is known only then),
    still before any computation.

    Parameters
    ----------
    path : path-like or None
        The output (None: nothing checked).
    ds : xarray.Dataset or None
        The loaded inputs (their ``source``/``sources`` attributes).
    inputs : iterable of str, optional
        Further input files.

    Raises
    ------
    uqx.errors.OutputError
        ``path`` is one of them.
    """
    if path is None:
        return
    for item in [*input_paths(ds), *inputs]:
        if item and same_file(path, item):
            raise OutputError(f"output {path} is the input file {item}: uqx never writes over "
                              "its inputs; give another output name")


def writable_directory(path, *, what: str, create: bool = True, hint: str = "") -> Path:
    """Check, before any computation, that ``path`` is a directory that can be written to.

    Parameters
    ----------
    path : str or path-like
        The directory.
    what : str
        What it is, for the messages (``"output directory"``, ``"figure directory"``).
    create : bool, default True
        Create it (and its parents) when missing; otherwise a missing directory is an error.
    hint : str, optional
        Appended to the message of a missing directory.

    Returns
    -------
    pathlib.Path
        The directory.

    Raises
    ------
    uqx.InputError
        It is a file, is missing (and not created), cannot be created or is not writable.
    """
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(f"{what} {path} is not a directory")
    if not path.exists():
        if not create:
            raise InputError(f"{what} {path} does not exist{hint}")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create {what} {path}: {exc.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise InputError(f"{what} {path} is not writable")
    try:  # os.access says yes to root on /proc and on read-only mounts
        fd, probe = tempfile.mkstemp(prefix=".uqx-probe-", dir=path)
    except OSError as exc:
        raise InputError(f"{what} {path} is not writable ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)
    return path


def write_result(res, path, *, parameters: dict, seed, announce: bool = True) -> int:
    """Write a result; report a failure without losing the output.

    The format follows the suffix of ``path`` (checked before the computation by
    :func:`check_output`): NetCDF (``.nc``...: everything, readable by ``uqx show`` and
    ``uqx report``), ``.csv`` (:func:`uqx.text.tables.result_dataframe`, one row per
    set and statistic) or ``.json`` (the records of ``--format json``). Every write is
    atomic.

    Parameters
    ----------
    res : xarray.Dataset
        The :func:`uqx.validate` result.
    path : path-like
        The ``-o`` file.
    parameters : dict
        Run parameters stored in the NetCDF provenance.
    seed : int
        The root seed.
    announce : bool, default True
        Print where the file went (False: the caller says it, after its text).

    Returns
    -------
    int
        0 on success (and, with ``announce``, prints where the file went), 2 after printing
        ``uqx: error: ...`` on stderr.
    """
    from uqx.dataio.netcdf import atomic_write, json_default, to_netcdf

    path = Path(path)
    suffix = path.suffix.lower()
    try:
        if suffix in OUTPUT_SUFFIXES["netcdf"]:
            to_netcdf(res, path, parameters=parameters, seed=seed)
        elif suffix == ".csv":
            from uqx.text.tables import result_dataframe

            df = result_dataframe(res)
            atomic_write(path, lambda tmp: df.to_csv(tmp, index=False), what="CSV table",
                         mkdir=False)
        elif suffix == ".json":
            from uqx.text.tables import result_records

            text = json.dumps(result_records(res), indent=1, default=json_default)
            atomic_write(path, lambda tmp: tmp.write_text(text + "\n", encoding="utf-8"),
                         what="JSON file", mkdir=False)
        else:  # refused by check_output before the computation
            raise InputError(f"output {path}: unknown suffix {path.suffix!r}")
    except (InputError, OSError) as exc:
        print(f"uqx: error: results not written: {cli_message(str(exc))}", file=sys.stderr)
        return 2
    if announce:
        print(f"\nresults written to {path}")
    return 0
