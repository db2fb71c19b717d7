"""Reading user tables: CSV files and pandas DataFrames onto the canonical input record.

:func:`from_dataframe` and :func:`read_csv` map named columns onto the canonical input
record (``E``, ``uE`` and optional ``X``, ``V`` over ``sample``) through
:func:`uqx.dataio.model.from_arrays`, with error messages that name the table and the column;
:func:`read_frame` and :func:`numeric_column` are the two steps they share with the
literature loaders of :mod:`uqx.dataio.datasets`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from uqx.dataio.model import from_arrays, stack
from uqx.errors import InputError

__all__ = ["from_dataframe", "read_csv", "read_frame", "numeric_column", "sniff_delimiter"]


def read_frame(path: str | os.PathLike, *, comment: str | None = None, **kwargs) -> pd.DataFrame:
    """Read a CSV file with pandas, turning I/O and parse failures into InputError.

    Parameters
    ----------
    path : str or path-like
        CSV file.
    comment : str, optional
        Comment character (disabled by default).
    **kwargs
        Passed to :func:`pandas.read_csv` (``header=None`` for files without a header).

    Returns
    -------
    pandas.DataFrame
        The table as pandas reads it.

    Raises
    ------
    InputError
        Missing file, a directory, an empty file, a parse error or a binary file; the
        message names the file.
    """
    if not isinstance(path, str | os.PathLike):
        raise InputError(f"expected a file name (str or path), got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a CSV file")
    try:
        return pd.read_csv(path, comment=comment, **kwargs)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: file is empty (no header, no data)") from None
    except pd.errors.ParserError as exc:
        raise InputError(f"{path}: cannot parse as CSV ({exc})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a text CSV file ({exc})") from None


#: delimiters recognised in a CSV file besides the comma
_DELIMITERS = {";": "semicolon", "\t": "tab", "|": "vertical bar"}


def sniff_delimiter(path: str | os.PathLike) -> str:
    """Return the column delimiter of a text table: ``","`` unless the header says otherwise.

    The header line is split on each of ``,``, ``;``, tab and ``|``; the delimiter that
    gives the most columns (at least 2) wins, the comma on ties, so that a comma-separated
    file is always read as before.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    str
        The delimiter.
    """
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            header = ""
            for line in fh:
                if line.strip():
                    header = line
                    break
    except OSError:
        return ","
    counts = {d: header.count(d) for d in (",", *_DELIMITERS)}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] > 0 else ","


def _check_header(path: Path, *, comment: str | None = None) -> None:
    """Reject duplicate column names (pandas would silently rename them ``E.1``...)."""
    try:
        header = pd.read_csv(path, header=None, nrows=1, comment=comment, dtype=str,
                             sep=sniff_delimiter(path))
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        return  # reported by read_frame
    names = [str(c).strip() for c in header.iloc[0].tolist()] if len(header) else []
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(
            f"{path}: duplicate column name(s) {', '.join(map(repr, dup))} in the header; "
            "rename them so that every column is unambiguous"
        )


def numeric_column(df: pd.DataFrame, column, path: str | os.PathLike) -> np.ndarray:
    """Return one column of a table as a float64 array, or say clearly why it cannot be.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    column : str or int
        Column label (an integer for a file read with ``header=None``).
    path : str or path-like
        What to call the table in messages (a file name, or ``"DataFrame"``).

    Returns
    -------
    numpy.ndarray
        The values as float64; empty cells are NaN.

    Raises
    ------
    InputError
        Unknown column (the message lists the available ones), a duplicated column name,
        a boolean column, or non-numeric values (the first one and its row are named).
    """
    if column not in df.columns:
        available = ", ".join(repr(str(c)) for c in df.columns)
        raise InputError(f"{path}: no column {column!r}; available columns: {available}")
    col = df[column]
    if isinstance(col, pd.DataFrame):
        raise InputError(f"{path}: column name {column!r} appears more than once")
    if pd.api.types.is_bool_dtype(col.dtype):
        raise InputError(f"{path}: column {column!r} is boolean, expected numbers")
    if not pd.api.types.is_numeric_dtype(col.dtype):
        coerced = pd.to_numeric(col, errors="coerce")
        bad = coerced.isna() & col.notna()
        if bad.any():
            rows = np.flatnonzero(bad.to_numpy())
            first = col.iloc[rows[0]]
            hint = ""
            if isinstance(first, str) and re.fullmatch(r"\s*[-+]?\d*,\d+\s*", first):
                hint = ("; it looks like a decimal comma: write decimal points (e.g. "
                        "pandas.read_csv(..., sep=';', decimal=',') then uqx.from_dataframe)")
            raise InputError(
                f"{path}: column {column!r} is not numeric: {rows.size} non-numeric value(s), "
                f"first {first!r} in data row {rows[0] + 1}{hint}"
            )
        col = coerced
    return col.to_numpy(dtype=np.float64, na_value=np.nan)


def _one_frame(df, label, *, E, uE, X, V, name, units, source, uE_is_variance,
               drop_nonfinite, min_uE_rel_sd) -> xr.Dataset:
    """Map the named columns of one table onto :func:`uqx.dataio.model.from_arrays`."""
    if df.shape[0] == 0:
        raise InputError(f"{label}: no data rows")
    mapping = {"E": E, "uE": uE, "X": X, "V": V}
    if E is not None and E == uE:
        raise InputError(
            f"{label}: the same column {E!r} is given for E and uE: Z = E/uE would be 1 on "
            "every row; name the error column and the uncertainty column"
        )
    cols = {key: numeric_column(df, col, label) for key, col in mapping.items()
            if col is not None}
    if uE_is_variance:
        var = cols["uE"]
        with np.errstate(invalid="ignore"):
            cols["uE"] = np.sign(var) * np.sqrt(np.abs(var))
    ds = from_arrays(cols["E"], cols["uE"], cols.get("X"), cols.get("V"), name=str(name),
                     units=units, source=source, drop_nonfinite=drop_nonfinite,
                     min_uE_rel_sd=min_uE_rel_sd)
    desc = ", ".join(f"{k}={c}" for k, c in mapping.items() if c is not None)
    ds.attrs["columns"] = desc + (" (variance, square-rooted)" if uE_is_variance else "")
    return ds


def from_dataframe(
    df: pd.DataFrame,
    *,
    E: str = "E",
    uE: str = "uE",
    X: str | None = None,
    V: str | None = None,
    by: str | None = None,
    name: str | None = None,
    units: str = "",
    uE_is_variance: bool = False,
    drop_nonfinite: bool = False,
    min_uE_rel_sd: float | None = None,
) -> xr.Dataset:
    """Build the input data set from named columns of a pandas DataFrame.

    The DataFrame counterpart of :func:`read_csv`: the columns named by ``E``, ``uE`` and
    optionally ``X``, ``V`` become the canonical variables over ``sample``; with ``by``,
    each group of rows becomes one data set on the ``set`` dimension (:func:`uqx.stack`).

    Parameters
    ----------
    df : pandas.DataFrame
        One row per prediction. The index is ignored.
    E, uE : str
        Columns of the errors (reference - prediction) and of their standard
        uncertainties.
    X, V : str, optional
        Columns of an input feature and of the predicted value (conditioning variables
        of the adaptivity analysis).
    by : str, optional
        Column whose values name the data sets (a long table of several models or UQ
        methods): one set per distinct value, in order of first appearance.
    name : str, optional
        Data set name (one set only; default ``"data"``).
    units : str, default ""
        Units of ``E`` and ``uE`` (axis labels).
    uE_is_variance : bool, default False
        The ``uE`` column holds variances; ``sign(v) * sqrt(|v|)`` is used.
    drop_nonfinite : bool, default False
        Drop (and count in ``attrs["n_dropped"]``) rows with missing or infinite values
        instead of raising.
    min_uE_rel_sd : float, optional
        Keep rows with ``uE > min_uE_rel_sd * sd(E)`` (:func:`uqx.dataio.model.from_arrays`).

    Returns
    -------
    xarray.Dataset
        One set (attrs ``name``, ``units``, ``source = "DataFrame"``, ``columns``), or
        the sets stacked on ``set`` when ``by`` is given.

    Raises
    ------
    InputError
        Not a DataFrame, unknown column (the message lists the available ones),
        non-numeric values, ``name`` together with ``by``, and everything
        :func:`uqx.dataio.model.from_arrays` rejects.

    Examples
    --------
    >>> import pandas as pd
    >>> import uqx
    >>> df = pd.DataFrame({"err": [0.1, -0.3, 0.2, 0.05], "sigma": [0.2, 0.3, 0.1, 0.1]})
    >>> ds = uqx.from_dataframe(df, E="err", uE="sigma", name="model A")
    >>> ds.sizes["sample"], ds.attrs["name"]
    (4, 'model A')
    """
    if not isinstance(df, pd.DataFrame):
        raise InputError(f"from_dataframe: expected a pandas DataFrame, got {type(df).__name__}")
    options = dict(E=E, uE=uE, X=X, V=V, units=units, uE_is_variance=uE_is_variance,
                   drop_nonfinite=drop_nonfinite, min_uE_rel_sd=min_uE_rel_sd)
    if by is None:
        name = "data" if name is None else name
        return _one_frame(df, f"DataFrame {name!r}", name=name, source="DataFrame",
                          **options)
    if name is not None:
        raise InputError("from_dataframe: give either name= (one set) or by= (one set per "
                         f"value of column {by!r}), not both")
    if by not in df.columns:
        available = ", ".join(repr(str(c)) for c in df.columns)
        raise InputError(f"DataFrame: no column {by!r} for by=; available columns: {available}")
    missing = df[by].isna()
    if missing.any():
        rows = np.flatnonzero(missing.to_numpy())
        raise InputError(
            f"DataFrame: column {by!r} (by=) has {rows.size} missing label(s) (None/NaN; "
            f"first in row {rows[0]}): every row must name its data set; fill them (e.g. "
            f"df[{by!r}].fillna('unknown')) or drop those rows"
        )
    groups = list(df.groupby(by, sort=False, dropna=False))
    if not groups:
        raise InputError("DataFrame: no data rows")
    names = [str(k) for k, _ in groups]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise InputError(f"DataFrame: labels of column {by!r} that differ only in type "
                         f"name the same data set {dup}; make them distinct")
    return stack([_one_frame(g, f"DataFrame rows with {by} = {k!r}", name=str(k),
                             source=f"DataFrame ({by} = {k})", **options)
                  for k, g in groups])


def read_csv(
    path: str | os.PathLike,
    *,
    E: str = "E",
    uE: str = "uE",
    X: str | None = None,
    V: str | None = None,
    name: str | None = None,
    uE_is_variance: bool = False,
    drop_nonfinite: bool = False,
    min_uE_rel_sd: float | None = None,
    comment: str | None = None,
) -> xr.Dataset:
    """Read errors and uncertainties from named columns of a CSV file.

    Parameters
    ----------
    path : str or path-like
        CSV file with a header line. Columns separated by commas, or by semicolons, tabs
        or vertical bars (found from the header line by :func:`sniff_delimiter`, recorded
        in ``attrs["delimiter"]`` and in ``attrs["columns"]``).
    E, uE : str
        Names of the error (reference - prediction) and uncertainty columns.
    X, V : str, optional
        Names of the input-feature and predicted-value columns.
    name : str, optional
        Data set name; defaults to the file stem.
    uE_is_variance : bool, default False
        The ``uE`` column holds variances: ``uE = sign(v) * sqrt(|v|)`` is used, so that
        negative variances stay negative and are rejected (or removed by
        ``min_uE_rel_sd``) like non-positive uncertainties.
    drop_nonfinite : bool, default False
        Drop (and count in ``attrs["n_dropped"]``) rows with empty/NaN/inf values instead
        of raising.
    min_uE_rel_sd : float, optional
        Keep rows with ``uE > min_uE_rel_sd * sd(E)`` (see :func:`uqx.dataio.model.from_arrays`).
    comment : str, optional
        Comment character; disabled by default (SMILES strings contain ``#``).

    Returns
    -------
    xarray.Dataset
        Canonical input data set; attrs ``name``, ``units`` (empty), ``source`` (the path),
        ``n_dropped``, ``filters`` and ``columns`` (the column mapping).

    Raises
    ------
    InputError
        Missing or empty file, duplicate column names, unknown column (the message lists
        the available columns), non-numeric column, and everything
        :func:`uqx.dataio.model.from_arrays` rejects.

    See Also
    --------
    from_dataframe : the same from a pandas DataFrame.

    Examples
    --------
    >>> ds = read_csv("preds.csv", E="err", uE="unc", X="mass")  # doctest: +SKIP
    """
    if not isinstance(path, str | os.PathLike):
        raise InputError(f"read_csv: expected a file name (str or path), got "
                         f"{type(path).__name__}")
    path = Path(path)
    sep = sniff_delimiter(path) if path.is_file() else ","
    df = read_frame(path, comment=comment, sep=sep)
    _check_header(path, comment=comment)
    if df.shape[0] == 0:
        raise InputError(f"{path}: no data rows (header only)")
    stripped = [str(c).strip() for c in df.columns]
    if stripped != [str(c) for c in df.columns] and len(set(stripped)) == len(stripped):
        df.columns = stripped  # " E , uE " header: the names without their blanks
    ds = _one_frame(df, path, E=E, uE=uE, X=X, V=V,
                    name=name if name is not None else path.stem, units="",
                    source=str(path), uE_is_variance=uE_is_variance,
                    drop_nonfinite=drop_nonfinite, min_uE_rel_sd=min_uE_rel_sd)
    if sep != ",":
        ds.attrs["delimiter"] = sep
        ds.attrs["columns"] += f" ({_DELIMITERS[sep]}-separated file)"
    return ds
