"""What the commands print: tables, numbers, notes, and messages in the command line's words.

Text for a terminal or a pipe: a table in full (:func:`print_df`), a number
(:func:`fmt`), a note on stderr unless ``--quiet`` (:func:`note`), a library message
with the options instead of the Python keywords (:func:`cli_message`), and any text as
the stream's encoding can write it (:func:`encodable`). Only the standard library is
imported at module level (``uqx --help`` stays light).
"""

from __future__ import annotations

import codecs
import re
import sys

__all__ = ["print_df", "fmt", "note", "cli_message", "encodable", "ASCII_SYMBOLS"]


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
