"""Reading user tables: CSV files and pandas DataFrames onto the canonical input record.

:func:`from_dataframe` and :func:`read_csv` map named columns onto the canonical input
record (``E``, ``uE`` and optional ``X``, ``V`` over ``sample``) through
:func:`uqx.dataio.model.from_arrays`, with error messages that name the table and the column;
:func:`read_frame` and :func:`numeric_column` are the two steps they share with the
literature loaders of :mod:`uqx.dataio.datasets`.
"""

from __future__ import annotations

import codecs
import difflib
import os
import re
import stat
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
from pandas.io.common import get_handle, infer_compression

from uqx.dataio.model import from_arrays, stack
from uqx.errors import InputError

__all__ = ["from_dataframe", "read_csv", "read_parquet", "read_frame", "numeric_column",
           "sniff_delimiter", "separator", "text_encoding", "PARQUET_SUFFIXES"]

#: File suffixes read as Parquet tables (:func:`read_parquet`; needs pyarrow).
PARQUET_SUFFIXES = (".parquet", ".pq")

#: Byte-order marks -> encoding (UTF-32 first: its little-endian mark starts like UTF-16's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
#: Bytes read to find the encoding and the header line.
_SAMPLE_BYTES = 1 << 16
#: Encoding tried when a file without a byte-order mark is not UTF-8 (never fails).
_FALLBACK_ENCODING = "latin-1"


def _head_bytes(path: Path) -> bytes:
    """First bytes of a file, decompressed as pandas will read it (``.gz``, ``.bz2``...)."""
    try:
        with get_handle(path, "rb", compression="infer", is_text=False) as handles:
            return handles.handle.read(_SAMPLE_BYTES)
    except (OSError, EOFError, ValueError, RuntimeError) as exc:  # gzip, zip, lzma errors
        raise InputError(f"{path}: cannot decompress ({exc})") from None


def text_encoding(path: str | os.PathLike) -> str:
    """Return the text encoding of a table file (decompressed first when compressed).

    A byte-order mark names it (UTF-8, UTF-16 or UTF-32); otherwise the file is taken
    as UTF-8 (:func:`read_frame` falls back to Latin-1, with a warning, when it is not).

    Parameters
    ----------
    path : str or path-like
        The file (compression inferred from the suffix, as by :func:`pandas.read_csv`).

    Returns
    -------
    str
        ``"utf-8"``, ``"utf-8-sig"``, ``"utf-16"`` or ``"utf-32"``.

    Raises
    ------
    InputError
        NUL bytes without a byte-order mark: binary data, or UTF-16/32 text without a
        mark (the message says to re-save the file as UTF-8).
    """
    head = _head_bytes(Path(path))
    for bom, name in _BOMS:
        if head.startswith(bom):
            return name
    if b"\x00" in head:
        raise InputError(
            f"{path}: not a text CSV file: it holds NUL bytes (binary data, or UTF-16/UTF-32 "
            "text without a byte-order mark); re-save it as a UTF-8 CSV file")
    return "utf-8"


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
        The table as pandas reads it; ``df.attrs["encoding"]`` is the encoding used.

    Raises
    ------
    InputError
        Missing file, a directory, an empty file, a parse error or a binary file; the
        message names the file.

    Warns
    -----
    UserWarning
        The file is not UTF-8 and has no byte-order mark: it is read as Latin-1.

    Notes
    -----
    Compressed files (``.gz``, ``.bz2``, ``.xz``, ``.zip``, ``.zst``) are read as
    pandas infers from the suffix. The encoding is that of :func:`text_encoding`
    (``encoding=`` overrides it); a file that is not UTF-8 is read as Latin-1.
    """
    if not isinstance(path, str | os.PathLike):
        raise InputError(f"expected a file name (str or path), got {type(path).__name__}")
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: file not found")
    if path.is_dir():
        raise InputError(f"{path}: is a directory, expected a CSV file")
    encoding = kwargs.pop("encoding", None) or text_encoding(path)
    try:
        try:
            df = pd.read_csv(path, comment=comment, encoding=encoding, **kwargs)
        except UnicodeDecodeError:
            if encoding != "utf-8":
                raise
            df = pd.read_csv(path, comment=comment, encoding=_FALLBACK_ENCODING, **kwargs)
            encoding = _FALLBACK_ENCODING
            warnings.warn(f"{path}: not UTF-8: read as Latin-1 (ISO-8859-1); re-save it as "
                          "UTF-8 if its text columns matter", UserWarning, stacklevel=2)
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: file is empty (no header, no data)") from None
    except pd.errors.ParserError as exc:
        raise InputError(f"{path}: cannot parse as CSV ({exc})") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not a text CSV file ({exc}); re-save it as UTF-8") from None
    except (OSError, EOFError, ValueError) as exc:  # a corrupt compressed file
        raise InputError(f"{path}: cannot read as CSV ({exc})") from None
    df.attrs["encoding"] = encoding
    return df


#: delimiters recognised in a CSV file besides the comma
_DELIMITERS = {";": "semicolon", "\t": "tab", "|": "vertical bar"}
#: pandas' separator of whitespace-separated files (runs of blanks and tabs)
WHITESPACE = r"\s+"
#: How the notes and ``--sep`` name a delimiter.
DELIMITER_NAMES = {",": "comma", **_DELIMITERS, WHITESPACE: "whitespace"}
#: Words ``--sep`` accepts for delimiters that are awkward to type.
_SEP_WORDS = {"comma": ",", "semicolon": ";", "tab": "\t", "\\t": "\t", "pipe": "|",
              "whitespace": WHITESPACE, "space": WHITESPACE, "ws": WHITESPACE}


def _header_layout(path, encoding: str | None = None) -> tuple[str, int, list]:
    """Find the delimiter and the lines before the header of a text table.

    Lines at the top that start with ``#`` (a comment block written by a tool) and
    Excel's ``sep=;`` line are skipped; the delimiter is read from the header line:
    ``,``, ``;``, tab or ``|`` (the most columns; the comma on ties), else runs of blanks
    when the header holds several words (a whitespace-separated file).

    Returns
    -------
    tuple
        ``(sep, skiprows, notes)``: the delimiter, the lines to skip and what was found.
    """
    try:
        head = _head_bytes(Path(path))
        text = head.decode(encoding or text_encoding(path), errors="replace")
    except (InputError, LookupError):
        return ",", 0, []  # read_frame says what is wrong with the file
    lines = text.lstrip("\ufeff").splitlines()
    skip, sep, notes = 0, None, []
    while skip < len(lines) and (not lines[skip].strip() or lines[skip].lstrip().startswith("#")):
        skip += 1
    if skip and any(ln.strip() for ln in lines[:skip]):
        notes.append(f"{skip} line(s) before the header skipped (comment lines starting "
                     "with '#')")
    excel = re.fullmatch(r"\s*sep=(.)\s*", lines[skip]) if skip < len(lines) else None
    if excel:
        sep = excel.group(1)
        skip += 1
        notes.append(f"Excel's 'sep={sep}' line read: {DELIMITER_NAMES.get(sep, repr(sep))}-"
                     "separated")
    header = lines[skip] if skip < len(lines) else ""
    if sep is None:
        counts = {d: header.count(d) for d in (",", *_DELIMITERS)}
        best = max(counts, key=lambda d: (counts[d], d == ","))
        sep = best if counts[best] > 0 else (WHITESPACE if len(header.split()) > 1 else ",")
    return sep, skip, notes


def separator(text: str) -> str:
    """Return the delimiter named by ``--sep`` (``;``, ``tab``, ``whitespace``...).

    Parameters
    ----------
    text : str
        One character, or a word of ``_SEP_WORDS`` (``comma``, ``semicolon``, ``tab``,
        ``pipe``, ``whitespace``).

    Returns
    -------
    str
        The delimiter as :func:`pandas.read_csv` takes it.

    Raises
    ------
    InputError
        Anything else.
    """
    word = _SEP_WORDS.get(str(text).lower(), str(text))
    if word == WHITESPACE or len(word) == 1:
        return word
    words = ", ".join(w for w in _SEP_WORDS if w.isalpha() and w not in ("ws", "space"))
    raise InputError(f"sep {text!r}: give one character (e.g. ';') or one of {words}")


def sniff_delimiter(path: str | os.PathLike, encoding: str | None = None) -> str:
    """Return the column delimiter of a text table: ``","`` unless the header says otherwise.

    The header line (after comment lines starting with ``#``) is split on each of ``,``,
    ``;``, tab and ``|``; the delimiter that gives the most columns (at least 2) wins,
    the comma on ties, so that a comma-separated file is always read as before. Excel's
    ``sep=;`` first line names it; a header of several words without any of these is a
    whitespace-separated file (runs of blanks and tabs). A compressed file is read
    decompressed (compression inferred from the suffix, as by :func:`pandas.read_csv`).

    Parameters
    ----------
    path : str or path-like
        The file.
    encoding : str, optional
        Its text encoding (default: :func:`text_encoding`).

    Returns
    -------
    str
        The delimiter.
    """
    return _header_layout(path, encoding)[0]


def _check_header(path: Path, *, comment: str | None = None, sep: str = ",",
                  encoding: str | None = None, skiprows: int = 0) -> None:
    """Reject duplicate column names (pandas would silently rename them ``E.1``...)."""
    try:
        header = pd.read_csv(path, header=None, nrows=1, comment=comment, dtype=str,
                             sep=sep, encoding=encoding, skiprows=skiprows)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError):
        return  # reported by read_frame
    names = [str(c).strip() for c in header.iloc[0].tolist()] if len(header) else []
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(
            f"{path}: duplicate column name(s) {', '.join(map(repr, dup))} in the header; "
            "rename them so that every column is unambiguous"
        )


#: Column names listed at most in a message (a file may have thousands).
_COLUMNS_SHOWN = 12


def columns_text(columns, wanted=None) -> str:
    """Say which columns a table has, in a message of bounded length.

    At most :data:`_COLUMNS_SHOWN` names, then how many there are in all; the names
    closest to ``wanted`` first (:func:`difflib.get_close_matches`), as "did you mean".

    Parameters
    ----------
    columns : iterable
        The table's column labels.
    wanted : str, optional
        The name that was not found.

    Returns
    -------
    str
        ``"available columns: 'a', 'b'"``, or with ``"... (10000 columns in all)"`` and
        ``"did you mean 'uE'?"``.
    """
    names = [str(c) for c in columns]
    close = []
    if wanted is not None:  # the same name in another case first, or with its units
        close = [n for n in names if n.lower() == str(wanted).lower()]
        close += [n for n in names if n not in close and _without_units(n).lower()
                  == str(wanted).lower()]  # "E (eV)", "uE [kcal/mol]"
        close += [n for n in difflib.get_close_matches(str(wanted), names, n=3)
                  if n not in close]
        close = close[:3]
    shown = ", ".join(repr(n) for n in names[:_COLUMNS_SHOWN])
    more = (f", ... ({len(names)} columns in all)" if len(names) > _COLUMNS_SHOWN else "")
    hint = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
    return f"available columns: {shown}{more}{hint}"


_UNITS = re.compile(r"^\s*(.+?)\s*[\(\[][^\(\)\[\]]*[\)\]]\s*$")


def _without_units(name: str) -> str:
    """Strip a trailing unit in brackets from a column label: ``"E (eV)"`` -> ``"E"``."""
    m = _UNITS.match(name)
    return m.group(1) if m else name


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
        raise InputError(f"{path}: no column {column!r}; {columns_text(df.columns, column)}")
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
            if isinstance(first, str) and re.fullmatch(
                    r"\s*[-+]?\d{1,3}(,\d{3})+\.\d*\s*", first):
                hint = ("; it looks like a thousands separator ',': read it with "
                        "pandas.read_csv(..., thousands=',') then uqx.from_dataframe")
            elif isinstance(first, str) and re.fullmatch(
                    r"\s*[-+]?(\d+\.?\d*|\.\d+)[dD][-+]?\d+\s*", first):
                hint = ("; it looks like a Fortran exponent 'D' (1.0D-3): write it with 'E' "
                        "(1.0E-3)")
            elif isinstance(first, str) and re.fullmatch(
                    r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*%\s*", first):
                hint = ("; it looks like a percentage: write the numbers without '%' (E and uE "
                        "in the same unit))")
            elif isinstance(first, str) and re.fullmatch(r"\s*[-+]?\d*,\d+\s*", first):
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
    for key, col in mapping.items():
        if col is not None and col not in df.columns:
            raise InputError(
                f"{label}: no column {col!r} for {key} (name the column that holds {key} "
                f"with {key}='<column>', on the command line --{key} <column>); "
                f"{columns_text(df.columns, col)}")
    cols = {key: numeric_column(df, col, label) for key, col in mapping.items()
            if col is not None}
    _duplicate_rows(cols, label)
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
        raise InputError(f"DataFrame: no column {by!r} for by=; {columns_text(df.columns, by)}")
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
    sep: str | None = None,
    decimal: str | None = None,
) -> xr.Dataset:
    """Read errors and uncertainties from named columns of a CSV file.

    Parameters
    ----------
    path : str or path-like
        CSV file with a header line. Columns separated by commas, or by semicolons, tabs
        or vertical bars (found from the header line by :func:`sniff_delimiter`, recorded
        in ``attrs["delimiter"]`` and in ``attrs["columns"]``). Compressed files
        (``.csv.gz``, ``.bz2``, ``.xz``, ``.zip``) are read decompressed; UTF-8 text, or
        UTF-16/32 with a byte-order mark (``attrs["encoding"]``); a file that is not
        UTF-8 is read as Latin-1, with a warning. A ``.json`` file (an array of records
        ``[{"E": ..., "uE": ...}, ...]``) or ``.jsonl``/``.ndjson`` file (one record a
        line) is read with :func:`pandas.read_json`.
    E, uE : str
        Names of the error (reference - prediction) and uncertainty columns.
    X, V : str, optional
        Names of the input-feature and predicted-value columns.
    name : str, optional
        Data set name; defaults to the file stem (``preds`` for ``preds.csv.gz``).
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
        Comment character; disabled by default (SMILES strings contain ``#``). Lines
        starting with ``#`` above the header are skipped whatever it is (with a note).
    sep : str, optional
        Column delimiter: one character, or ``"tab"``, ``"whitespace"`` (runs of blanks),
        ``"semicolon"``, ``"comma"``, ``"pipe"``. Default: read from the header line
        (:func:`sniff_delimiter`; Excel's ``sep=;`` first line is honoured; a header of
        words separated by blanks means a whitespace-separated file).
    decimal : {".", ","}, optional
        Decimal mark of the numbers (``","``: a European file, whose columns are then
        separated by ``;`` or tabs). Default: ``"."``, or ``","`` (with a note) when the
        columns are not comma-separated and every value of a text column reads as a
        number with a decimal comma.

    Returns
    -------
    xarray.Dataset
        Canonical input data set; attrs ``name``, ``units`` (empty), ``source`` (the path),
        ``n_dropped``, ``filters`` and ``columns`` (the column mapping).

    Raises
    ------
    InputError
        Missing or empty file, not a regular file (a FIFO, a device, standard input: it
        would be read more than once), duplicate column names, unknown column (the message
        lists the available columns), non-numeric column, and everything
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
    _check_regular(path)
    if _json_kind(path):
        return _read_json(path, E=E, uE=uE, X=X, V=V, name=name, uE_is_variance=uE_is_variance,
                          drop_nonfinite=drop_nonfinite, min_uE_rel_sd=min_uE_rel_sd,
                          text_options={"sep": sep, "comment": comment, "decimal": decimal})
    encoding = text_encoding(path) if path.is_file() else None
    found, skip, notes = _header_layout(path, encoding) if path.is_file() else (",", 0, [])
    sep = found if sep is None else separator(sep)
    if decimal not in (None, ".", ","):
        raise InputError(f"decimal must be '.' or ',', got {decimal!r}")
    if decimal == sep:
        raise InputError(f"{path}: the decimal mark {decimal!r} is also the column delimiter: "
                         "a file with decimal commas separates its columns with ';' or tabs "
                         "(give --sep ';')")
    for text in notes:
        warnings.warn(f"{path}: {text}", UserWarning, stacklevel=2)
    df = read_frame(path, comment=comment, sep=sep, encoding=encoding, skiprows=skip,
                    decimal=decimal or ".")
    encoding = df.attrs.get("encoding", encoding)  # Latin-1 when the file was not UTF-8
    if decimal is None and sep != "," and _decimal_commas(df):
        df = read_frame(path, comment=comment, sep=sep, encoding=encoding, skiprows=skip,
                        decimal=",")
        warnings.warn(f"{path}: numbers with a decimal comma (e.g. '0,5'): read as decimal "
                      "numbers (--decimal ',')", UserWarning, stacklevel=2)
    if not isinstance(df.index, pd.RangeIndex):
        df = _shifted_rows(df, path, sep)
    _check_header(path, comment=comment, sep=sep, encoding=encoding, skiprows=skip)
    if df.shape[0] == 0:
        raise InputError(f"{path}: no data rows (header only)")
    stripped = [str(c).strip() for c in df.columns]
    if stripped != [str(c) for c in df.columns] and len(set(stripped)) == len(stripped):
        df.columns = stripped  # " E , uE " header: the names without their blanks
    ds = _one_frame(df, path, E=E, uE=uE, X=X, V=V, name=_stem(path, name), units="",
                    source=str(path), uE_is_variance=uE_is_variance,
                    drop_nonfinite=drop_nonfinite, min_uE_rel_sd=min_uE_rel_sd)
    if sep != ",":
        ds.attrs["delimiter"] = sep
        ds.attrs["columns"] += f" ({DELIMITER_NAMES.get(sep, repr(sep))}-separated file)"
    if encoding not in (None, "utf-8", "utf-8-sig"):
        ds.attrs["encoding"] = encoding
        ds.attrs["columns"] += f" ({_ENCODING_NAMES.get(encoding, encoding)} file)"
    return ds


def _shifted_rows(df: pd.DataFrame, path: Path, sep: str) -> pd.DataFrame:
    """Undo pandas' shift of a file whose data rows have one field more than its header.

    pandas takes the first field of such rows as the index, and every column then holds
    its right neighbour's values (E would get uE). A last field empty on every row (a
    trailing delimiter) is dropped, with a warning; anything else is refused.
    """
    if isinstance(df.index, pd.MultiIndex) or df.shape[1] == 0:
        raise InputError(f"{path}: the data rows have more fields than the header; give "
                         "every column a name in the header line")
    last = df.columns[-1]
    if not df[last].isna().all():
        raise InputError(
            f"{path}: the data rows have one field more than the header ({df.shape[1] + 1} "
            f"against {df.shape[1]}): the columns would be shifted (the first would be read "
            "as an index); give every column a name in the header line")
    fixed = df.reset_index()
    fixed = fixed.iloc[:, :-1]
    fixed.columns = list(df.columns)
    fixed.attrs = dict(df.attrs)
    warnings.warn(f"{path}: the data rows end with a delimiter {sep!r} that the header line "
                  "does not have (one empty field more): the empty last field is ignored, so "
                  "that the columns stay under their names", UserWarning, stacklevel=3)
    return fixed


def _duplicate_rows(cols: dict, label) -> None:
    """Warn when rows repeat other rows exactly (a table pasted twice, rows copied).

    Counted on the columns read (E, uE, X, V); said when more than 1 % of the rows are
    copies of an earlier one, since each copy weighs as a new independent point in the
    bootstrap and in the tests.
    """
    M = len(cols["E"])
    if M < 2:
        return
    frame = pd.DataFrame({k: v for k, v in cols.items()})
    n_dup = int(frame.duplicated().sum())
    if n_dup and n_dup > 0.01 * M:
        warnings.warn(
            f"{label}: {n_dup} of {M} rows repeat an earlier row exactly "
            f"({', '.join(cols)}; {M - n_dup} distinct rows): rows copied or a table pasted "
            "twice? Every copy counts as a new independent point in the bootstrap and the "
            "tests; remove the copies if they are not real repeats",
            UserWarning, stacklevel=3)


#: How the notes name the encodings that are not UTF-8.
_ENCODING_NAMES = {"utf-16": "UTF-16", "utf-32": "UTF-32", "latin-1": "Latin-1"}


_DECIMAL_COMMA = re.compile(r"\s*[-+]?(\d+,\d*|,\d+)([eE][-+]?\d+)?\s*")


def _decimal_commas(df: pd.DataFrame) -> bool:
    """Whether some text column holds only numbers written with a decimal comma."""
    for name in df.columns:
        col = df[name]
        if isinstance(col, pd.DataFrame) or pd.api.types.is_numeric_dtype(col.dtype):
            continue
        vals = col.dropna().astype(str)
        if len(vals) and vals.str.fullmatch(_DECIMAL_COMMA).all():
            return True
    return False


#: Suffixes read as JSON records (``.json``: one array of records; the others: one record
#: a line), compressed or not.
JSON_SUFFIXES = {".json": False, ".jsonl": True, ".ndjson": True}


def _json_kind(path: Path) -> bool:
    """Whether a file is read as JSON records (its suffix, under a compression suffix)."""
    suffixes = [x.lower() for x in path.suffixes]
    if suffixes and infer_compression(str(path), "infer") is not None:
        suffixes = suffixes[:-1]
    return bool(suffixes) and suffixes[-1] in JSON_SUFFIXES


def _read_json(path: Path, *, text_options, **options) -> xr.Dataset:
    """Read a JSON file of records (``[{"E": ..., "uE": ...}, ...]``, or one a line)."""
    given = [f"--{k}" for k, v in text_options.items() if v is not None]
    if given:
        raise InputError(f"{path}: {', '.join(given)} tell(s) how CSV/text tables are read; "
                         "a JSON file has no delimiter, comment or decimal mark to set")
    suffixes = [x.lower() for x in path.suffixes]
    if infer_compression(str(path), "infer") is not None:
        suffixes = suffixes[:-1]
    lines = JSON_SUFFIXES[suffixes[-1]]
    try:
        df = pd.read_json(path, lines=lines, orient=None if lines else "records")
    except (ValueError, OSError, EOFError) as exc:
        how = "one JSON record a line" if lines else "an array of records [{...}, ...]"
        raise InputError(f"{path}: cannot read as JSON ({how}): {exc}") from None
    if not isinstance(df, pd.DataFrame) or df.shape[0] == 0:
        raise InputError(f"{path}: no records")
    name = options.pop("name")
    ds = _one_frame(df, path, name=_stem(path, name), units="", source=str(path), **options)
    ds.attrs["columns"] += " (JSON records)"
    return ds


def _check_regular(path: Path) -> None:
    """Refuse an input that cannot be read twice: a FIFO, a device, standard input.

    A table is read more than once (its encoding, its header, its rows): a pipe gives
    its content to the first read only (``cat f | uqx stats /dev/stdin`` lost its
    header), and a FIFO without a writer blocks for ever.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # read_frame names a missing file
    if not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        kind = ("a FIFO or pipe" if stat.S_ISFIFO(mode) else "a character device"
                if stat.S_ISCHR(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "not a regular file")
        raise InputError(f"{path}: {kind}, not a regular file: uqx reads a table more than "
                         "once (encoding, header, rows), which a pipe allows only once; save "
                         "it to a file first (e.g. 'cat ... > data.csv')")


def _stem(path: Path, name: str | None) -> str:
    """Return the data set name of a file: ``name``, else its stem without compression."""
    if name is not None:
        return name
    if infer_compression(str(path), "infer") is not None and Path(path.stem).suffix:
        return Path(path.stem).stem  # preds.csv.gz -> preds
    return path.stem


def read_parquet(
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
) -> xr.Dataset:
    """Read errors and uncertainties from named columns of a Parquet file.

    The Parquet counterpart of :func:`read_csv` (same options and attributes), read with
    :func:`pandas.read_parquet` and pyarrow, the optional extra ``uqx[parquet]``.
    Missing values of nullable columns are NaN (an error unless ``drop_nonfinite``).

    Parameters
    ----------
    path : str or path-like
        Parquet file (``.parquet``, ``.pq``).
    E, uE, X, V, name, uE_is_variance, drop_nonfinite, min_uE_rel_sd
        As for :func:`read_csv`.

    Returns
    -------
    xarray.Dataset
        Canonical input data set; attrs ``name`` (default: the file stem), ``source``,
        ``n_dropped``, ``filters`` and ``columns``.

    Raises
    ------
    InputError
        pyarrow missing (the message names the extra), a missing or unreadable file, an
        unknown or non-numeric column, and everything :func:`read_csv` rejects.

    Examples
    --------
    >>> ds = read_parquet("preds.parquet", E="err", uE="unc")  # doctest: +SKIP
    """
    if not isinstance(path, str | os.PathLike):
        raise InputError(f"read_parquet: expected a file name (str or path), got "
                         f"{type(path).__name__}")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: file not found" if not path.exists() else
                         f"{path}: is a directory, expected a Parquet file")
    try:
        import pyarrow  # noqa: F401  (pandas' engine; an optional extra)
    except ImportError:
        raise InputError(f"{path}: reading Parquet needs pyarrow, an optional extra of uqx: "
                         "pip install 'uqx[parquet]' (or pip install pyarrow), or save "
                         "the table as CSV") from None
    try:
        df = pd.read_parquet(path, engine="pyarrow")
    except (OSError, ValueError, TypeError) as exc:  # pyarrow's errors derive from these
        raise InputError(f"{path}: cannot read as Parquet ({exc})") from None
    if df.shape[0] == 0:
        raise InputError(f"{path}: no data rows")
    return _one_frame(df, path, E=E, uE=uE, X=X, V=V, name=_stem(path, name), units="",
                      source=str(path), uE_is_variance=uE_is_variance,
                      drop_nonfinite=drop_nonfinite, min_uE_rel_sd=min_uE_rel_sd)
