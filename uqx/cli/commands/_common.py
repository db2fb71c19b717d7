"""Helpers shared by the ``uqx`` subcommands.

Only :mod:`argparse`, :mod:`os`, :mod:`re`, :mod:`sys`, :mod:`pathlib` and the default
numbers of :mod:`uqx.engine.defaults` are imported at module level; numpy, pandas and the
uqx engine are imported inside the functions, so that ``uqx --help`` stays fast.
"""

from __future__ import annotations

import argparse
import codecs
import json
import math
import os
import re
import sys
import tempfile
import warnings
from pathlib import Path

from uqx.dataio.paths import OUTPUT_SUFFIXES, check_output_path, input_paths, same_file
from uqx.engine.defaults import INTEGER_MINIMA, MINIMA_WHY, N_BINS
from uqx.errors import InputError, OutputError

__all__ = [
    "HelpFormatter",
    "add_inputs",
    "add_output",
    "add_table_options",
    "BINS_DEFAULT",
    "bins_chosen",
    "add_fail_on",
    "fail_on_status",
    "add_text_options",
    "EXIT_CODES_HELP",
    "GLOSSARY_HELP",
    "input_kwargs",
    "input_kind",
    "load_inputs",
    "looks_like_path",
    "check_output",
    "check_not_input",
    "read_saved",
    "writable_directory",
    "write_result",
    "print_df",
    "fmt",
    "note",
    "cli_message",
    "encodable",
    "check_options",
    "OPTION_RANGES",
    "OPTION_MINIMA",
]


class DefaultInt(int):
    """An int default that can be told from the same number typed by the user.

    ``args.bins is BINS_DEFAULT`` is True only when ``--bins`` was not given (argparse
    keeps the default object as it is; a typed value is a new ``int``).
    """


#: Default of ``--bins`` (:data:`uqx.engine.defaults.N_BINS`), marked as a default.
BINS_DEFAULT = DefaultInt(N_BINS)


def bins_chosen(args) -> bool:
    """Whether the user gave ``--bins`` (not the default :data:`BINS_DEFAULT`).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    bool
        True when ``--bins`` was on the command line.
    """
    return getattr(args, "bins", None) is not BINS_DEFAULT


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help text with the defaults shown plainly (``(default: 20)``, ``(default: NIG,T6IG)``).

    A default is added after an option's help unless the help already says it (it
    mentions "default" or "None means"), or the default says nothing (None, False of a
    flag, suppressed); lists are shown as the comma list the option takes.
    """

    def _get_help_string(self, action):
        text = action.help or ""
        default = action.default
        if (default is None or default is False or default is argparse.SUPPRESS
                or not action.option_strings or "%(default)" in text
                or "default" in text.lower() or "none means" in text.lower()
                or isinstance(action, argparse._StoreConstAction | argparse._StoreTrueAction
                              | argparse._CountAction | argparse._AppendConstAction)):
            return text
        if isinstance(default, list | tuple):
            shown = ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in default)
        elif isinstance(default, float):
            shown = f"{default:g}"
        else:
            shown = str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"


def add_inputs(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add the input arguments (files or dataset names, column names, filters, binning)."""
    p.add_argument(
        "inputs",
        nargs="+" if required else "*",
        metavar="INPUT",
        help="CSV file (also .csv.gz, .bz2, .xz, .zip; .txt, .tsv; JSON records .json, "
        "one record a line .jsonl), Parquet file (.parquet: needs "
        "pyarrow, pip install 'uqx[parquet]'), NetCDF file (.nc: opened lazily, read in "
        "chunks), or registered dataset name (e.g. QM9_E, Set7; see 'uqx datasets list')",
    )
    p.add_argument("--E", default="E",
                   help="CSV column (NetCDF variable) of errors (reference - prediction)")
    p.add_argument("--uE", default="uE", help="CSV column (NetCDF variable) of uncertainties")
    p.add_argument("--X", default=None, help="CSV column of the input feature (adaptivity)")
    p.add_argument("--V", default=None, help="CSV column of the predicted value")
    p.add_argument(
        "--uE-is-variance", action="store_true", help="the uE column holds variances"
    )
    p.add_argument(
        "--drop-nonfinite",
        action="store_true",
        help="drop (and count) rows with NaN/inf instead of failing",
    )
    p.add_argument(
        "--min-uE-rel-sd",
        type=float,
        default=None,
        metavar="K",
        help="keep only CSV rows with uE > K*sd(E), dropped rows counted (PAL2022: 1e-6)",
    )
    p.add_argument(
        "--data-dir", default=None, help="literature data directory (else $UQX_DATA_DIR)"
    )
    p.add_argument("--bins", type=int, default=BINS_DEFAULT,
                   help="bins of the binned statistics (fewer when a bin would hold fewer "
                   "than --pop-min points)")
    p.add_argument(
        "--binning",
        default="equal-count",
        choices=["equal-count", "equal-width", "adaptive"],
        help="binning scheme of the binned statistics",
    )
    add_table_options(p)
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")


def add_table_options(p: argparse.ArgumentParser) -> None:
    """Add ``--sep``, ``--comment`` and ``--decimal`` (how CSV/text files are read)."""
    p.add_argument("--sep", default=None, metavar="SEP",
                   help="column delimiter of CSV/text inputs: one character (';') or tab, "
                   "whitespace, semicolon, comma, pipe; default: read from the header line "
                   "(Excel's 'sep=;' line is honoured; words separated by blanks mean a "
                   "whitespace-separated file)")
    p.add_argument("--comment", default=None, metavar="CHAR",
                   help="comment character of CSV/text inputs: the rest of a line after it "
                   "is ignored (off by default: SMILES contain '#'; lines starting with '#' "
                   "above the header are skipped anyway)")
    p.add_argument("--decimal", default=None, choices=[".", ","],
                   help="decimal mark of CSV/text inputs; default '.', or ',' when the "
                   "columns are not comma-separated and a column's numbers all have a "
                   "decimal comma")


def add_output(p: argparse.ArgumentParser, *, default: str | None = None,
               tables: bool = False) -> None:
    """Add ``-o/--output`` and ``--mkdir``.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.
    default : str, optional
        Default output file.
    tables : bool, default False
        The command also writes ``.csv`` / ``.json`` tables (:func:`write_result`).
    """
    what = ("the result: .nc NetCDF (everything; read by 'uqx show' and 'uqx report'), "
            ".csv table (one row per set and statistic) or .json records; the format "
            "follows the suffix" if tables else "the result to this NetCDF file (.nc)")
    p.add_argument(
        "-o",
        "--output",
        default=default,
        help=f"write {what}. An existing file is replaced atomically; an input file, a "
        "directory, a device or a FIFO is refused before anything is computed",
    )
    p.add_argument(
        "--mkdir", action="store_true", help="create the directory of --output if missing"
    )


#: Exit status of ``--fail-on``: some verdict met the condition.
EXIT_FAIL_ON = 1
#: Exit status of a bad input, option or output (``uqx: error: ...`` on stderr).
EXIT_ERROR = 2

#: Where the words of the output are explained (epilog of the commands that print verdicts).
GLOSSARY_HELP = ("Words of the output (ZMS, level, members N/T6/fit/data, borderline, "
                 "resolution...): see the glossary, 'uqx glossary [WORD]' (also the "
                 "documentation's Glossary page).")

EXIT_CODES_HELP = (
    "Exit status: 0 done (whatever the verdicts, unless --fail-on); 1 a verdict met "
    "--fail-on; 2 bad input, option or output (uqx: error: ... on stderr); 130 interrupted."
)


def add_fail_on(p: argparse.ArgumentParser) -> None:
    """Add ``--fail-on {invalid,inconclusive}`` (exit status 1 for CI pipelines)."""
    p.add_argument(
        "--fail-on", default=None, choices=["invalid", "inconclusive"],
        help="exit with status 1 when a verdict is invalid (or, with 'inconclusive', invalid "
        "or inconclusive): statistics and questions, every set; default: exit 0 whatever "
        "the verdicts")


def add_text_options(p: argparse.ArgumentParser) -> None:
    """Add ``--wide`` and ``--explain`` (the text of a validation result)."""
    p.add_argument("--wide", action="store_true",
                   help="print every column of the tables (default: the text fits in 100 "
                   "columns)")
    p.add_argument("--explain", action="store_true",
                   help="after the summary, say for every set how each verdict was reached "
                   "(the question's test, its level, the members and their p-values)")


def fail_on_status(args, res) -> int:
    """Exit status of ``--fail-on`` for a validation result (0 or :data:`EXIT_FAIL_ON`).

    The verdicts looked at are those of the statistics (``verdict``) and the
    questions (``question_verdict``); ``--fail-on invalid`` fails on
    ``invalid``, ``--fail-on inconclusive`` on ``invalid`` or ``inconclusive``. The
    verdicts that failed are named on stderr (also with ``--quiet``: they explain the
    status).

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments (``fail_on``).
    res : xarray.Dataset
        The validation result.

    Returns
    -------
    int
        0, or 1 when some verdict met the condition.
    """
    mode = getattr(args, "fail_on", None)
    if not mode:
        return 0
    bad = ("invalid",) if mode == "invalid" else ("invalid", "inconclusive")
    hits = []
    for var, dim in (("verdict", "stat"), ("question_verdict", "question")):
        if var not in res or dim not in res[var].dims:
            continue
        da = res[var].transpose("set", dim)
        for i, s in enumerate(res["set"].values):
            for j, k in enumerate(res[dim].values):
                v = str(da.values[i, j]).split()[0] if str(da.values[i, j]).strip() else ""
                if v in bad:
                    what = str(k) if dim == "stat" else f"question {k}"
                    hits.append(f"{s}: {what} {v}")
    if not hits:
        return 0
    shown = "; ".join(hits[:12]) + (f"; ... ({len(hits)} in all)" if len(hits) > 12 else "")
    print(f"uqx: --fail-on {mode}: {len(hits)} verdict(s) met it ({shown}); exit status "
          f"{EXIT_FAIL_ON}", file=sys.stderr)
    return EXIT_FAIL_ON


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


def print_df(df) -> None:
    """Print a table in full (all rows and columns)."""
    from uqx.text.console import format_df

    print(format_df(df))


def fmt(v) -> str:
    """Format a number with 6 significant digits (``nan`` for missing values)."""
    import numpy as np

    return "nan" if v is None or not np.isfinite(v) else f"{v:.6g}"


def note(args, text: str) -> None:
    """Print an informational line on stderr unless ``--quiet``."""
    if not getattr(args, "quiet", False):
        print(text, file=sys.stderr)


#: Python keyword -> CLI option, for messages raised by the library under the CLI.
_KEYWORDS = {
    r"\bdrop_nonfinite=True\b": "--drop-nonfinite",
    r"\bdrop_nonfinite\b": "--drop-nonfinite",
    r"\buE_is_variance\b": "--uE-is-variance",
    r"\bmin_uE_rel_sd=": "--min-uE-rel-sd ",
    r"\bn_boot\b": "--n-boot",
    r"\bn_mc\b": "--n-mc",
    r"\bn_bins\b": "--bins",
    r"\bpop_min\b": "--pop-min",
    r"\bcond_bins\b": "--cond-bins",
}


def cli_message(message: str) -> str:
    """Rewrite an error message for the command line: options instead of keywords."""
    message = re.sub(r"\s*\(CLI: [^)]*\)", "", message)
    for pattern, option in _KEYWORDS.items():
        message = re.sub(pattern, option, message)
    return message


#: ASCII stand-ins of the symbols of uqx's text, for a stream that cannot encode them.
ASCII_SYMBOLS = {
    "∝": "prop. to", "γ": "gamma", "ν": "nu", "κ": "kappa", "β": "beta", "ζ": "zeta",
    "σ": "sigma", "ε": "eps", "μ": "mu", "α": "alpha", "δ": "delta", "Δ": "Delta",
    "χ": "chi", "ρ": "rho", "τ": "tau", "θ": "theta", "λ": "lambda", "π": "pi",
    "√": "sqrt", "≤": "<=", "≥": ">=", "≠": "!=", "≈": "~", "±": "+/-", "×": "x",
    "·": "*", "−": "-", "–": "-", "—": "--", "…": "...", "→": "->", "←": "<-",
    "⟨": "<", "⟩": ">", "²": "^2", "³": "^3", "∞": "inf", "°": " deg", "’": "'",
    "‘": "'", "“": '"', "”": '"', "‰": " per mille", "ˆ": "^", "̂": "^", " ": " ",
}


def encodable(text: str, encoding: str | None) -> str:
    """Return ``text`` as a stream of this ``encoding`` can write it.

    Characters the encoding cannot hold become their ASCII words
    (:data:`ASCII_SYMBOLS`: "γ" -> "gamma", "≤" -> "<="), and any other one a ``?``, so
    that printing never fails on a terminal or pipe that is not UTF-8.

    Parameters
    ----------
    text : str
        The text to print.
    encoding : str or None
        The stream's encoding (None: ASCII).

    Returns
    -------
    str
        A text that ``encoding`` encodes.
    """
    try:
        encoding = codecs.lookup(encoding or "ascii").name
    except LookupError:
        encoding = "ascii"
    out = []
    for ch in text:
        try:
            ch.encode(encoding)
        except (UnicodeEncodeError, LookupError):
            ch = ASCII_SYMBOLS.get(ch, ch)
            ch = ch.encode(encoding, errors="replace").decode(encoding, errors="replace")
        out.append(ch)
    return "".join(out)


# ------------------------------------------------------------------ option checks (issue 22)

#: Accepted ranges of the numeric options, by argparse ``dest``: (low, high, inclusive
#: low, what). Checked by :func:`check_options` before any command runs.
OPTION_RANGES = {
    "min_uE_rel_sd": (0.0, float("inf"), True, "a relative threshold >= 0"),
    "threshold": (0.0, float("inf"), True, "a |z| threshold >= 0"),
    "dpi": (20.0, 1200.0, True, "between 20 and 1200 dots per inch"),
    "font_size": (4.0, 72.0, True, "between 4 and 72 points"),
    "nu": (2.0, float("inf"), False, "> 2 (a unit-variance Student t needs nu > 2)"),
}

#: ``--nu`` of the studies whose nu is not (only) that of a Student t, by study name and
#: scenario (None: any): ``pval`` takes nu_IG > 0 for NIG (001 Fig. 4's grid is 2-10) and
#: the t errors' nu_D > 2 for TIG; ``appendix-b`` the shape of its IG variances.
_STUDY_NU_RANGES = {
    "pval": {
        "NIG": (0.0, float("inf"), False, "> 0 for NIG (nu_IG, the shape of the inverse "
                "gamma variances)"),
        "TIG": (2.0, float("inf"), False, "> 2 for TIG (a unit-variance Student t needs "
                "nu > 2)"),
    },
    "appendix-b": {None: (0.0, float("inf"), False, "> 0 (the shape of the inverse gamma "
                          "distribution of the variances)")},
}

#: Integer options that must be at least this (argparse ``dest``: minimum): the rule of
#: :class:`uqx.workflow.settings.Settings`, read here so that the command line and
#: :func:`uqx.validate` refuse the same values.
OPTION_MINIMA = dict(INTEGER_MINIMA)

#: Why an integer option has its minimum, where the bare number does not say it.
_MINIMA_WHY = {k: v.replace("conditional=False", "--no-conditional")
               for k, v in MINIMA_WHY.items()}

#: Options of a validation run, with their flags: ignored with a saved result or
#: (the conditional ones) with ``--no-conditional``.
_CONDITIONAL_FLAGS = ("--cond-bins", "--cond-n-boot", "--cond-ci", "--extrapolation-n-mc")
_VALIDATION_FLAGS = ("--stats", "--n-boot", "--n-mc", "--seed", "--nu", "--alpha", "--pop-min",
                     "--bins", "--binning", "--ties", "--no-conditional", *_CONDITIONAL_FLAGS)


#: What ``--X`` and ``--V`` name, for the messages.
_FEATURES = {"X": "input feature", "V": "predicted value"}


def _given(argv, flag: str) -> bool:
    """Tell whether ``flag`` is on the command line.

    As ``--flag VALUE``, ``--flag=VALUE`` or an abbreviation that argparse accepted
    (``--cond-b 5``).
    """
    for a in argv:
        name = a.split("=", 1)[0]
        if name.startswith("--") and len(name) > 3 and flag.startswith(name):
            return True
    return False


def check_options(args, argv=()) -> None:
    """Refuse option values that cannot mean anything, and options that would be ignored.

    Run by :func:`uqx.cli.app.main` before any command: every number is checked against
    :data:`OPTION_RANGES` / :data:`OPTION_MINIMA` (NaN and infinities refused; ``--nu``
    of ``uqx sweep pval`` and ``appendix-b`` by its own range, per scenario), the
    comma-separated ``--levels`` must lie in (0, 1), ``--stats`` must name a statistic,
    ``--E`` and ``--uE`` must differ, ``--X`` and ``--V`` must be neither of them, and an
    option that the command would ignore (conditional options with ``--no-conditional``,
    validation options with a saved result, ``--data-dir`` when no input is a
    registered dataset) is an error rather than nothing.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments of one command.
    argv : sequence of str
        The command line (to tell an option given from its default).

    Raises
    ------
    InputError
        The message names the option, its value and what it accepts.
    """
    argv = [str(a) for a in (argv or ())]
    flag = {k: "--" + k.replace("_", "-") for k in (*OPTION_RANGES, *OPTION_MINIMA)}
    flag["min_uE_rel_sd"] = "--min-uE-rel-sd"
    checks = list(OPTION_RANGES.items())
    study = getattr(args, "study", None) if getattr(args, "command", None) == "sweep" else None
    if study in _STUDY_NU_RANGES:  # per command and scenario: not every nu is a Student t's
        by_scenario = _STUDY_NU_RANGES[study]
        checks = [(k, r) for k, r in checks if k != "nu"]
        for s in dict.fromkeys(getattr(args, "scenario", None) or [None]):
            rng = by_scenario.get(s, by_scenario.get(None))
            if rng is not None:  # an unknown scenario: the study names it
                checks.append(("nu", rng))
    for key, (lo, hi, incl, what) in checks:
        value = getattr(args, key, None)
        for v in value if isinstance(value, list | tuple) else [value]:
            if v is None or not isinstance(v, int | float):
                continue
            v = float(v)
            if (math.isnan(v) or (math.isinf(v) and not (key == "nu" and v > 0))
                    or v < lo or (v == lo and not incl) or v > hi):
                raise InputError(f"{flag[key]} must be {what}, got {v:g}")
    for key, low in OPTION_MINIMA.items():
        v = getattr(args, key, None)
        if v is not None and int(v) < low:
            why = f" ({_MINIMA_WHY[key]})" if key in _MINIMA_WHY else ""
            raise InputError(f"{flag[key]} must be an integer >= {low}, got {v}{why}")
    levels = getattr(args, "levels", None)
    if isinstance(levels, str):
        try:
            vals = [float(x) for x in levels.split(",")]
        except ValueError:
            raise InputError(f"--levels: expected comma-separated numbers, got {levels!r}"
                             ) from None
        bad = [x for x in vals if not (0.0 < x < 1.0)]
        if bad:
            raise InputError(f"--levels are probabilities, each strictly between 0 and 1 "
                             f"(0.95 for 95 %), got {bad[0]:g}")
    stats = getattr(args, "stats", None)
    if isinstance(stats, str) and not [s for s in stats.split(",") if s.strip()]:
        raise InputError("--stats is empty: name at least one statistic (e.g. --stats zms,rce)"
                         " or leave the option out for the default ones")
    if isinstance(stats, str) and any(not s.strip() for s in stats.split(",")):
        raise InputError(f"--stats {stats!r}: empty name between commas")
    E, uE = getattr(args, "E", None), getattr(args, "uE", None)
    if E is not None and E == uE:
        raise InputError(f"--E and --uE name the same column {E!r}: Z = E/uE would be 1 on "
                         "every row; name the error column and the uncertainty column")
    for key in ("X", "V"):
        col = getattr(args, key, None)
        for flag, other in (("--E", E), ("--uE", uE)):
            if col is not None and col == other:
                raise InputError(f"--{key} names the column {col!r}, which is {flag}: the "
                                 f"{_FEATURES[key]} must be another column than the errors "
                                 f"and the uncertainties; name it, or leave --{key} out")
    if getattr(args, "no_conditional", False):
        extra = [f for f in _CONDITIONAL_FLAGS if _given(argv, f)]
        if extra:
            raise InputError(f"{', '.join(extra)} set(s) up the conditional routes, which "
                             "--no-conditional skips: leave out one or the other")
    data_dir = getattr(args, "data_dir", None)
    if data_dir is not None and not _data_dir_applies(args):
        names = [str(s) for s in [*(getattr(args, "inputs", None) or []),
                                  *(getattr(args, "data", None) or [])]]
        raise InputError(f"--data-dir {data_dir} locates the registered literature data sets "
                         f"('uqx datasets list'), but no input here is one (files: "
                         f"{', '.join(names)}): leave --data-dir out")
    inputs = getattr(args, "inputs", None) or []
    saved = []
    if getattr(args, "command", None) == "report":
        from uqx.dataio.netcdf import NETCDF_SUFFIXES, netcdf_kind

        saved = [s for s in inputs if Path(str(s)).suffix.lower() in NETCDF_SUFFIXES
                 and netcdf_kind(s) == "result"]
    if saved:
        extra = [f for f in _VALIDATION_FLAGS if _given(argv, f)]
        if extra:
            raise InputError(f"{', '.join(extra)} set(s) up a validation, but {saved[0]} is a "
                             "saved result (already validated; its settings are kept): leave "
                             "them out, or run 'uqx report INPUT...' on the data to validate "
                             "again")
    elif getattr(args, "command", None) in ("validate", "report"):
        from uqx._checks import small_settings_note

        text = small_settings_note(getattr(args, "n_boot", None), getattr(args, "n_mc", None))
        if text and callable(getattr(args, "_run", None)):
            args._run = _warn_after(args._run, f"uqx: warning: {cli_message(text)}")


def _data_dir_applies(args) -> bool:
    """Tell whether a command reads ``--data-dir``.

    It does for a registered dataset among the inputs (or the ``--data`` of a saved
    result), for ``--paper-sets``, and in the commands that read the directory itself.
    """
    if (getattr(args, "command", None) in ("datasets", "demo")
            or getattr(args, "paper_sets", False)):
        return True
    names = [*(getattr(args, "inputs", None) or []), *(getattr(args, "data", None) or [])]
    # no input at all: the command says what it needs (a study: its default sets)
    return not names or any(input_kind(n) == "dataset" for n in names)


def _warn_after(run, text: str):
    """Wrap a command's ``run``: print ``text`` on stderr once it has succeeded."""

    def wrapped(args):
        status = run(args)
        print(text, file=sys.stderr)
        return status

    return wrapped
