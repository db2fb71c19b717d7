"""The inputs of the commands: files and registered dataset names read into one Dataset.

How an INPUT is read (:func:`input_kind`: NetCDF, Parquet, CSV or a registered dataset),
the reading options of the parsed arguments (:func:`input_kwargs`), the reading itself
(:func:`load_inputs`), and a saved result or archive read for ``uqx show``, ``uqx plot``
and ``uqx report`` (:func:`read_saved`). The readers (pandas, xarray) are imported inside
the functions, so that ``uqx --help`` stays light.
"""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

from uqx.errors import InputError

__all__ = ["input_kwargs", "input_kind", "load_inputs", "read_saved", "looks_like_path"]


def input_kwargs(args) -> dict:
    """Keyword arguments of :func:`load_inputs` from parsed arguments."""
    return dict(
        E=args.E,
        uE=args.uE,
        X=args.X,
        V=args.V,
        data_dir=args.data_dir,
        uE_is_variance=args.uE_is_variance,
        drop_nonfinite=args.drop_nonfinite,
        min_uE_rel_sd=args.min_uE_rel_sd,
        sep=getattr(args, "sep", None),
        comment=getattr(args, "comment", None),
        decimal=getattr(args, "decimal", None),
    )


def input_kind(item) -> str:
    """Say how the commands read an INPUT: a NetCDF file, a CSV file or a dataset name.

    Parameters
    ----------
    item : str or path-like
        One INPUT of the command line.

    Returns
    -------
    str
        ``"netcdf"`` (a NetCDF suffix, :data:`uqx.dataio.netcdf.NETCDF_SUFFIXES`),
        ``"parquet"`` (:data:`uqx.dataio.frames.PARQUET_SUFFIXES`), ``"csv"`` (a
        CSV/TXT/TSV suffix, or another existing path) or ``"dataset"`` (a
        registered dataset name, read from the data directory).
    """
    from uqx.dataio.frames import PARQUET_SUFFIXES
    from uqx.dataio.netcdf import NETCDF_SUFFIXES

    p = Path(item)
    if p.suffix.lower() in NETCDF_SUFFIXES:
        return "netcdf"
    if p.suffix.lower() in PARQUET_SUFFIXES:
        return "parquet"
    if p.suffix.lower() in (".csv", ".txt", ".tsv") or p.exists():
        return "csv"
    return "dataset"


def load_inputs(
    inputs,
    *,
    E="E",
    uE="uE",
    X=None,
    V=None,
    data_dir=None,
    uE_is_variance=False,
    drop_nonfinite=False,
    min_uE_rel_sd=None,
    sep=None,
    comment=None,
    decimal=None,
):
    """Resolve CLI inputs (CSV paths or registered dataset names) into one stacked Dataset.

    ``sep``, ``comment`` and ``decimal`` (``--sep``, ``--comment``, ``--decimal``) say how
    CSV/text files are read (:func:`uqx.dataio.frames.read_csv`); they are refused for
    the other inputs, which they would not change.

    A name with a NetCDF suffix (``.nc``, ``.nc4``, ``.netcdf``, ``.cdf``) is opened
    lazily with :func:`uqx.dataio.netcdf.open_dataset` (dask chunks; what the commands then
    hold in memory is said by each command, e.g.
    :func:`uqx.workflow.disk.memory_note`); a Parquet file (``.parquet``, ``.pq``) is
    read with :func:`uqx.dataio.frames.read_parquet`; another existing path (CSV, TXT,
    TSV, compressed or not) with :func:`uqx.dataio.frames.read_csv`, its notes (a file
    read as Latin-1) printed on stderr; a registered dataset name with
    :func:`uqx.dataio.datasets.load_dataset`. A name that is neither an existing file nor
    a registered dataset is "file not found" when it looks like a path (it has a suffix
    or a folder), "unknown dataset" otherwise. Two inputs with the same name (the same
    file twice, or equal stems in two folders) get distinct names ``name#i``.
    """
    from uqx.dataio.datasets import get_spec, load_dataset
    from uqx.dataio.frames import read_csv, read_parquet
    from uqx.dataio.model import stack
    from uqx.dataio.netcdf import open_dataset

    if not inputs:
        raise InputError(
            "no input given: pass CSV files or dataset names (see 'uqx datasets list')"
        )
    columns = dict(E=E, uE=uE, X=X, V=V, uE_is_variance=uE_is_variance,
                   drop_nonfinite=drop_nonfinite)
    text_options = {k: v for k, v in (("--sep", sep), ("--comment", comment),
                                      ("--decimal", decimal)) if v is not None}
    out = []
    for item in inputs:
        p, kind = Path(item), input_kind(item)
        if text_options and kind != "csv":
            raise InputError(f"{item}: {', '.join(text_options)} tell(s) how CSV/text files "
                             f"are read; this input is {_KIND_NAMES[kind]}: leave them out")
        if kind == "netcdf":
            if min_uE_rel_sd is not None:
                raise InputError(f"{p}: --min-uE-rel-sd is not available for NetCDF inputs "
                                 "(opened lazily); filter the file first")
            out.append(open_dataset(p, **columns))
        elif kind == "parquet":
            out.append(read_parquet(p, **columns, min_uE_rel_sd=min_uE_rel_sd))
        elif kind == "csv":
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                out.append(read_csv(p, **columns, min_uE_rel_sd=min_uE_rel_sd, sep=sep,
                                    comment=comment, decimal=decimal))
            for w in caught:  # printed as uqx notes, not as Python warnings
                print(f"uqx: note: {w.message}", file=sys.stderr)
        else:
            try:
                get_spec(item)
            except InputError:
                if looks_like_path(item):
                    raise InputError(f"{item}: file not found (nor a registered dataset "
                                     "name; see 'uqx datasets list')") from None
                raise
            out.append(load_dataset(item, data_dir))
    names = [d.attrs.get("name") for d in out]
    for i, d in enumerate(out):
        if names.count(d.attrs.get("name")) > 1:
            d.attrs["name"] = f"{d.attrs['name']}#{i + 1}"
    keep = ("E", "uE", "X", "V")
    return stack([d[[k for k in keep if k in d]].assign_attrs(d.attrs) for d in out])


#: What each kind of input is, for the messages.
_KIND_NAMES = {"netcdf": "a NetCDF file", "parquet": "a Parquet file",
               "dataset": "a registered data set", "csv": "a CSV file"}


def read_saved(path):
    """Read a saved NetCDF file (a result, an archive) for a command.

    :func:`uqx.dataio.netcdf.read_netcdf`, whose warnings (a damaged attribute, kept as
    stored) are printed as ``uqx: warning: ...`` lines on stderr, also with ``--quiet``:
    what is shown may be off because of them.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    xarray.Dataset
        Its content, loaded.

    Raises
    ------
    uqx.errors.InputError
        Missing or unreadable file.
    """
    from uqx.dataio.netcdf import read_netcdf

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UserWarning)
        ds = read_netcdf(path)
    for w in caught:
        print(f"uqx: warning: {w.message}", file=sys.stderr)
    return ds


def looks_like_path(item) -> bool:
    """Whether a command-line input names a file rather than a registered dataset.

    True when it has a suffix (``preds.dat``, ``missing.csv.gz``) or a folder
    (``data/preds``); the registered names and aliases have neither.

    Parameters
    ----------
    item : str or path-like
        The input as given.

    Returns
    -------
    bool
        True when a missing ``item`` is best reported as "file not found".
    """
    text = str(item)
    return bool(Path(text).suffix) or "/" in text or os.sep in text
