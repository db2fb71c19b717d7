"""The options shared by the ``uqx`` subcommands, their help, and the exit status they set.

The input options (:func:`add_inputs`, :func:`add_table_options`), ``-o`` and
``--mkdir`` (:func:`add_output`), ``--fail-on`` (:func:`add_fail_on`, its status
:func:`fail_on_status`), ``--wide`` and ``--explain`` (:func:`add_text_options`), the
default of ``--bins`` told from a typed one (:data:`BINS_DEFAULT`), and the help
formatter of every command. Only :mod:`argparse` and the default numbers of
:mod:`uqx.engine.defaults` are imported at module level, so that ``uqx --help`` stays
fast. The values are checked by :mod:`uqx.cli.commands._option_checks`.
"""

from __future__ import annotations

import argparse
import sys

from uqx.engine.defaults import N_BINS

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
        The command also writes ``.csv`` / ``.json`` tables
        (:func:`uqx.cli.commands._outputs.write_result`).
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
