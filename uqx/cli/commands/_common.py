"""Helpers shared by the ``uqx`` subcommands.

Only :mod:`argparse`, :mod:`os`, :mod:`re`, :mod:`sys`, :mod:`pathlib` and the default
numbers of :mod:`uqx.engine.defaults` are imported at module level; numpy, pandas and the
uqx engine are imported inside the functions, so that ``uqx --help`` stays fast.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

from uqx.engine.defaults import N_BINS

__all__ = [
    "HelpFormatter",
    "add_inputs",
    "add_output",
    "input_kwargs",
    "load_inputs",
    "check_output",
    "writable_directory",
    "write_result",
    "print_df",
    "fmt",
    "note",
    "cli_message",
    "validation_text",
]


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help text with every default shown (``(default: ...)`` after each option)."""


def add_inputs(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    """Add the input arguments (files or dataset names, column names, filters, binning)."""
    p.add_argument(
        "inputs",
        nargs="+" if required else "*",
        metavar="INPUT",
        help="CSV file, NetCDF file (.nc: opened lazily, read in chunks), or registered "
        "dataset name (e.g. QM9_E, Set7; see 'uqx datasets list')",
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
    p.add_argument("--bins", type=int, default=N_BINS, help="bins of the binned statistics")
    p.add_argument(
        "--binning",
        default="equal-count",
        choices=["equal-count", "equal-width", "adaptive"],
        help="binning scheme of the binned statistics",
    )
    p.add_argument("--format", default="table", choices=["table", "json"], help="output format")


def add_output(p: argparse.ArgumentParser, *, default: str | None = None) -> None:
    """Add ``-o/--output`` and ``--mkdir``."""
    p.add_argument(
        "-o",
        "--output",
        default=default,
        help="write the result to this NetCDF file (an existing file is replaced atomically)",
    )
    p.add_argument(
        "--mkdir", action="store_true", help="create the directory of --output if missing"
    )


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
    )


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
):
    """Resolve CLI inputs (CSV paths or registered dataset names) into one stacked Dataset.

    A name with a NetCDF suffix (``.nc``, ``.nc4``, ``.netcdf``, ``.cdf``) is opened
    lazily with :func:`uqx.dataio.netcdf.open_dataset` (dask chunks; what the commands then
    hold in memory is said by each command, e.g.
    :func:`uqx.workflow.disk.memory_note`); a name with a CSV/TXT/TSV suffix, or
    another existing path, is read with
    :func:`uqx.dataio.frames.read_csv`; anything else must be a registered dataset
    (:func:`uqx.dataio.datasets.load_dataset`). Two inputs with the same name (the same file
    twice, or equal stems in two folders) get distinct names ``name#i``.
    """
    from uqx.dataio.datasets import get_spec, load_dataset
    from uqx.dataio.frames import read_csv
    from uqx.dataio.model import stack
    from uqx.dataio.netcdf import NETCDF_SUFFIXES, open_dataset
    from uqx.errors import InputError

    if not inputs:
        raise InputError(
            "no input given: pass CSV files or dataset names (see 'uqx datasets list')"
        )
    out = []
    for item in inputs:
        p = Path(item)
        if p.suffix.lower() in NETCDF_SUFFIXES:
            if min_uE_rel_sd is not None:
                raise InputError(f"{p}: --min-uE-rel-sd is not available for NetCDF inputs "
                                 "(opened lazily); filter the file first")
            out.append(open_dataset(p, E=E, uE=uE, X=X, V=V, uE_is_variance=uE_is_variance,
                                    drop_nonfinite=drop_nonfinite))
        elif p.suffix.lower() in (".csv", ".txt", ".tsv") or p.exists():
            out.append(
                read_csv(p, E=E, uE=uE, X=X, V=V, uE_is_variance=uE_is_variance,
                         drop_nonfinite=drop_nonfinite, min_uE_rel_sd=min_uE_rel_sd)
            )
        else:
            get_spec(item)  # clear error for unknown names
            out.append(load_dataset(item, data_dir))
    names = [d.attrs.get("name") for d in out]
    for i, d in enumerate(out):
        if names.count(d.attrs.get("name")) > 1:
            d.attrs["name"] = f"{d.attrs['name']}#{i + 1}"
    keep = ("E", "uE", "X", "V")
    return stack([d[[k for k in keep if k in d]].assign_attrs(d.attrs) for d in out])


def check_output(path, *, mkdir: bool = False) -> Path | None:
    """Check, before any computation, that a result can be written to ``path``.

    Raises :class:`uqx.InputError` when the path is a directory, its directory is missing
    (unless ``mkdir``, which creates it) or not writable, or an existing file is not
    writable.
    """
    from uqx.errors import InputError

    if path is None:
        return None
    path = Path(path)
    if path.is_dir():
        raise InputError(f"output {path} is a directory; give a file name such as {path}/res.nc")
    writable_directory(path.parent, what="output directory", create=mkdir,
                       hint=" (create it, or pass --mkdir)")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(f"output file {path} exists and is not writable")
    return path


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
    from uqx.errors import InputError

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
    return path


def write_result(res, path, *, parameters: dict, seed) -> int:
    """Write a result after it was printed; report a failure without losing the output.

    Returns 0 on success (and prints where the file went), 2 after printing
    ``uqx: error: ...`` on stderr.
    """
    from uqx.dataio.netcdf import to_netcdf
    from uqx.errors import InputError

    try:
        to_netcdf(res, path, parameters=parameters, seed=seed)
    except (InputError, OSError) as exc:
        print(f"uqx: error: results not written: {cli_message(str(exc))}", file=sys.stderr)
        return 2
    print(f"\nresults written to {path}")
    return 0


def print_df(df) -> None:
    """Print a table in full (all rows and columns)."""
    from uqx.workflow.tables import format_df

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


def validation_text(res, *, paper_sets: bool = False) -> str:
    """Render the text printed by ``uqx validate`` and ``uqx show`` for a result.

    Uses ``uqx.workflow.tables.format_validation`` when the renderer provides it; otherwise the
    result table, the fraction of valid bins and the warnings (or, for the nine paper
    sets, 001 Table IV and 000 Tables A1-A4).
    """
    from uqx.workflow import tables as render
    from uqx.workflow.tables import format_df

    if paper_sets:
        parts = ["# 001 Table IV: RCE and ZMS, bootstrap bias, BCa interval, zeta",
                 format_df(render.paper_table_iv(res))]
        for st in [s for s in ("zms", "cc", "ence", "zmse") if s in res["stat"].values]:
            parts += [
                f"\n# 000 Table A ({st.upper()}): BS then simulated references N and "
                f"T{float(res.attrs['nu']):g}",
                format_df(render.paper_table_a(res, st)),
            ]
    elif hasattr(render, "format_validation"):
        return render.format_validation(res)
    else:
        parts = [
            f"# uqx validate: BCa {float(res.attrs['level']):.0%} intervals, "
            f"n_boot={res.attrs['n_boot']}, n_mc={res.attrs['n_mc']}, seed={res.attrs['seed']}",
            format_df(render.result_table(res)),
        ]
        if "fval" in res:
            parts += [
                "\n# conditional calibration: fraction of bins whose LZISD interval contains 1",
                format_df(render.fval_table(res)),
            ]
    lines = render.warning_lines(res)
    if lines:
        parts += ["\n# warnings", "\n".join(lines)]
    return "\n".join(parts)
