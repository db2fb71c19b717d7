"""The one policy for output paths: checked before anything is computed, never an input.

:func:`check_output_path` is called by :func:`uqx.dataio.netcdf.atomic_write` (so by
:func:`uqx.to_netcdf`, the report and the studies' archives) and, before any computation,
by every command of ``uqx`` that writes a file. It refuses, with a message that names the
path and the fix:

* a name whose suffix does not match what is written (:data:`OUTPUT_SUFFIXES`);
* a path that exists and is not a regular file (a directory, a device such as
  ``/dev/null``, a FIFO, a socket): an atomic replace would put a regular file in its
  place;
* an existing file that is read-only (no write bit for its owner, whoever runs uqx, root
  included) or that the user may not write: a replace would ignore its mode;
* a path that is one of the inputs of the command (same file by :func:`os.path.samefile`,
  symbolic links and hard links included, or the same resolved path);
* a missing directory (unless ``mkdir``, which creates it): the API and the command line
  follow this one rule;
* a directory in which no file can be created (a probe file is created and removed:
  this also catches ``/proc``, read-only mounts and file systems where ``os.access``
  says yes to root).
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from uqx.errors import OutputError

__all__ = ["OUTPUT_SUFFIXES", "check_output_path", "same_file", "input_paths"]

#: What uqx writes -> the file suffixes it accepts for it (lower case).
OUTPUT_SUFFIXES = {
    "netcdf": (".nc", ".nc4", ".netcdf", ".cdf"),
    "report": (".html", ".htm", ".md", ".markdown"),
    "figure": (".png", ".pdf", ".svg"),
    "table": (".csv", ".json"),
}

_KIND_WORDS = {
    "netcdf": "a NetCDF file",
    "report": "a report (HTML or Markdown)",
    "figure": "a figure",
    "table": "a table",
}


def _kind_text(kind) -> tuple[str, tuple[str, ...]]:
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    unknown = [k for k in kinds if k not in OUTPUT_SUFFIXES]
    if unknown:
        raise ValueError(f"unknown output kind(s) {unknown}; known: {list(OUTPUT_SUFFIXES)}")
    suffixes = tuple(s for k in kinds for s in OUTPUT_SUFFIXES[k])
    words = " or ".join(_KIND_WORDS[k] for k in kinds)
    return words, suffixes


def same_file(a, b) -> bool:
    """Whether two paths name the same file (links resolved; False when one is missing).

    Parameters
    ----------
    a, b : str or path-like
        The paths.

    Returns
    -------
    bool
        True when both exist and are the same file (:func:`os.path.samefile`), or when
        their resolved absolute paths are equal.
    """
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, ValueError):
        return False


def input_paths(ds) -> list[str]:
    """Return the files an input Dataset was read from (``source``/``sources`` attributes).

    Parameters
    ----------
    ds : xarray.Dataset or None
        An input record (:func:`uqx.dataio.model.from_arrays`, read from CSV or NetCDF)
        or several stacked on ``set``.

    Returns
    -------
    list of str
        The existing files among the sources (set by the readers).
    """
    if ds is None:
        return []
    found = []
    for key in ("source", "sources", "input_sources"):
        value = ds.attrs.get(key)
        items = value if isinstance(value, list | tuple) else [value]
        for item in items:
            if not isinstance(item, str):
                continue
            for part in [item, *item.replace(";", ",").split(",")]:
                part = part.strip()
                if part and os.path.isfile(part) and part not in found:
                    found.append(part)
    return found


def check_output_path(path, *, kind=None, inputs: Iterable = (), mkdir: bool = False,
                      probe: bool = True) -> Path:
    """Check that a file can be written to ``path`` without destroying anything.

    Called before anything is computed (module docstring: the rules). Nothing is
    written, except, with ``mkdir``, the missing directories, and a probe file that is
    removed at once.

    Parameters
    ----------
    path : str or path-like
        The output file.
    kind : str or sequence of str, optional
        What is written: keys of :data:`OUTPUT_SUFFIXES` (``"netcdf"``, ``"report"``,
        ``"figure"``, ``"table"``); the suffix of ``path`` must be one of theirs. None:
        any suffix.
    inputs : iterable of str or path-like, optional
        The files the command reads; ``path`` must not be one of them. Names that are not
        existing files (registered dataset names) are ignored.
    mkdir : bool, default False
        Create a missing directory (and its parents); otherwise a missing directory is
        refused.
    probe : bool, default True
        Create and remove a hidden probe file in the directory, to be sure that it can
        be written.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    uqx.errors.OutputError
        Any of the refusals above; the message names the path (or its directory) and
        what to do.

    Examples
    --------
    >>> str(check_output_path("res.nc", kind="netcdf", inputs=["data.csv"], probe=False))
    'res.nc'
    >>> check_output_path("res.csv", kind="netcdf", probe=False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    uqx.errors.OutputError: output res.csv: uqx writes a NetCDF file here, but the name ...
    """
    if path is None or str(path) == "":
        raise OutputError("no output file name given")
    path = Path(path)
    if os.path.lexists(path) or path.exists():
        try:
            mode = path.stat().st_mode
        except OSError:  # a dangling symbolic link: replaced as a link, nothing lost
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            raise OutputError(f"output {path} is a directory; give a file name such as "
                              f"{path / ('result' + (_kind_text(kind)[1][0] if kind else '.out'))}")
        if mode is not None and not stat.S_ISREG(mode):
            what = ("a character device" if stat.S_ISCHR(mode) else "a block device"
                    if stat.S_ISBLK(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
                    else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
            raise OutputError(f"output {path} is {what}; uqx replaces its output file "
                              "atomically and would put a regular file in its place: give "
                              "the name of a regular file")
        # the owner's write bit too: root passes os.access whatever the mode
        if mode is not None and (not os.access(path, os.W_OK) or not mode & stat.S_IWUSR):
            raise OutputError(f"output file {path} exists and is read-only (mode "
                              f"{stat.S_IMODE(mode):04o}): uqx does not replace a file that "
                              f"may not be written; make it writable (chmod u+w {path}) or "
                              "give another name")
    if kind is not None:
        words, suffixes = _kind_text(kind)
        suffix = path.suffix.lower()
        if suffix not in suffixes:
            got = f"the suffix {path.suffix!r}" if path.suffix else "no suffix"
            raise OutputError(
                f"output {path}: uqx writes {words} here, but the name has {got}; "
                f"use one of {', '.join(suffixes)} (e.g. {path.with_suffix(suffixes[0])})")
    for item in inputs:
        if item is None:
            continue
        if os.path.exists(item) and same_file(path, item):
            raise OutputError(f"output {path} is the input file {item}: uqx never writes over "
                              "its inputs; give another output name")
    parent = path.parent
    if not parent.exists():
        if os.path.lexists(parent) or any(p.exists() and not p.is_dir()
                                          for p in parent.parents):
            raise OutputError(f"output {path}: {_blocking(parent)} is not a directory")
        if not mkdir:
            raise OutputError(f"output directory {parent} does not exist (create it first, or "
                              "pass --mkdir on the command line, mkdir=True in Python)")
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot create the output directory {parent}: "
                              f"{exc.strerror or exc}") from None
    elif not parent.is_dir():
        raise OutputError(f"output {path}: {parent} is not a directory")
    if probe:
        try:
            fd, name = tempfile.mkstemp(prefix=".uqx-probe-", dir=parent)
        except OSError as exc:
            raise OutputError(f"output directory {parent} is not writable "
                              f"({exc.strerror or exc})") from None
        os.close(fd)
        os.unlink(name)
    return path


def _blocking(parent: Path) -> Path:
    """Return the first ancestor of ``parent`` (or itself) that is not a directory."""
    for p in [*reversed(parent.parents), parent]:
        if p.exists() and not p.is_dir():
            return p
    return parent
