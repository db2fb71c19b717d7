"""``uqx glossary [WORD]``: what a word of the output means (the shipped ``uqx/glossary.md``).

The glossary is one Markdown file of the package, also the documentation's Glossary
page: one ``### `` heading per entry, a ``Printed as:`` line with the spellings the output
uses, then the explanation. Only the standard library is used (``uqx --help`` stays light).
"""

from __future__ import annotations

import difflib
import re
from importlib import resources

from uqx.cli.commands._options import HelpFormatter
from uqx.errors import InputError

NAME = "glossary"

__all__ = ["register", "run", "entries", "lookup", "glossary_text"]


def glossary_text() -> str:
    """Return the text of the glossary shipped with the package (``uqx/glossary.md``)."""
    return resources.files("uqx").joinpath("glossary.md").read_text(encoding="utf-8")


def _norm(word: str) -> str:
    """Casefold and strip quotes, backticks and surrounding punctuation."""
    return word.strip().strip("`'\"").strip().casefold()


def _split(line: str) -> list[str]:
    """Split a ``Printed as:`` line on the commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in line:
        depth += (ch in "([") - (ch in ")]")
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [p for p in out + [cur.strip()] if p]


def entries(text: str | None = None) -> list[dict]:
    """Split the glossary into its entries.

    Parameters
    ----------
    text : str, optional
        Glossary text (default :func:`glossary_text`).

    Returns
    -------
    list of dict
        ``title`` (the heading), ``printed`` (the spellings of its ``Printed as:`` line)
        and ``body`` (the entry's Markdown, heading included), in file order.
    """
    text = glossary_text() if text is None else text
    out = []
    for block in re.split(r"(?m)^(?=### )", text)[1:]:
        block = re.split(r"(?m)^## ", block)[0].rstrip()  # up to the next section
        title = block.splitlines()[0][4:].strip()
        m = re.search(r"(?m)^Printed as: (.*)$", block)
        printed = _split(m[1]) if m else []
        out.append({"title": title, "printed": printed, "body": block})
    return out


def terms(text: str | None = None) -> set[str]:
    """Every word the glossary explains: the titles and the printed spellings, casefolded."""
    out = set()
    for e in entries(text):
        out |= {_norm(e["title"])} | {_norm(p) for p in e["printed"]}
        out |= {_norm(p) for p in e["title"].split(", ")}
    return out


def lookup(word: str, text: str | None = None) -> list[dict]:
    """Return the entries that explain ``word``.

    An entry matches when ``word`` (case-insensitive) is its title, one of the words of its
    title, or one of its printed spellings; failing that, when one of those contains
    ``word``; failing that, when its text contains it.

    Parameters
    ----------
    word : str
        A word of the output (``"fit"``, ``"ZMS_SCAN"``, ``"level"``).
    text : str, optional
        Glossary text (default :func:`glossary_text`).

    Returns
    -------
    list of dict
        The matching entries (:func:`entries`), possibly empty.
    """
    w = _norm(word)
    es = entries(text)

    def names(e):
        return [_norm(e["title"])] + [_norm(p) for p in e["title"].split(", ")] + [
            _norm(p) for p in e["printed"]]

    exact = [e for e in es if w in names(e)]
    if exact:
        return exact
    part = [e for e in es if any(w in n for n in names(e))]
    return part or [e for e in es if w in e["body"].casefold()]


def register(subparsers):
    """Add the ``glossary`` command."""
    p = subparsers.add_parser(
        NAME,
        help="what a word of the output means (ZMS, level, fit, borderline...)",
        description="Print the glossary entry of WORD: every statistic, question, "
        "member of the null family, column and verdict word that uqx prints. Without "
        "WORD, the list of entries. The same text is the documentation's Glossary page.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("word", nargs="*", metavar="WORD",
                   help="a word of the output, e.g. ZMS_SCAN, fit, level, 'ENCE at zero bins'")
    p.add_argument("--all", action="store_true", help="print the whole glossary")
    return p


def run(args) -> int:
    """Print the entry of the word (or the list of entries); 2 when no entry explains it."""
    if args.all:
        print(glossary_text())
        return 0
    if not args.word:
        print("Glossary entries ('uqx glossary WORD' for one, --all for all):")
        for e in entries():
            print(f"  {e['title']}")
        return 0
    word = " ".join(args.word)
    found = lookup(word)
    if not found:
        names = sorted(terms())
        near = difflib.get_close_matches(_norm(word), names, n=5, cutoff=0.6)
        hint = f"; did you mean: {', '.join(near)}?" if near else \
            "; 'uqx glossary' lists the entries"
        raise InputError(f"no glossary entry explains {word!r}{hint}")
    print("\n\n".join(e["body"] for e in found))
    return 0
