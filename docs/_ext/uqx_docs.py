"""Sphinx extension of the uqx documentation: CLI reference, result variables, notebooks.

* ``.. uqx-cli::`` renders the help of every ``uqx`` command and ``uqx sweep`` study from
  the argument parsers themselves (:func:`uqx.cli.build_parser`), so the reference
  cannot drift from the program.
* ``.. uqx-variables::`` renders the name, dimensions and ``long_name`` of every result
  variable from :mod:`uqx.dataio.schema`, the declarations the steps write them from.
* ``.. uqx-figure::`` runs its Python code (one namespace per page), shows the code and
  the :class:`matplotlib.figure.Figure` its last line returns (uqx's figures are not
  pyplot figures, so matplotlib's own ``plot`` directive would not see them); with
  ``:setup:`` the code only runs.
* At ``builder-inited`` the jupytext scripts of ``notebooks/`` become
  ``docs/notebooks/<name>.ipynb``: executed in quick mode (``QUICK=1``) when the literature
  data are found, otherwise unexecuted with a note. Runs come from
  :mod:`notebook_cache`, shared with ``tests/test_notebooks.py``: a notebook runs once
  per change of itself or of the package, whichever of the two asks first.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import time
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

LOG = logging.getLogger(__name__)
DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
NOTEBOOK_PAGES = DOCS / "notebooks"
FIGURES = DOCS / "_build" / "uqx-figures"
HELP_WIDTH = "90"

# ----------------------------------------------------------------- CLI reference


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def _help_lines(parser, prog, level_chars, depth=0):
    """ReST lines: a section per command with its help, sub-commands nested below."""
    title = f"``{prog}``"
    lines = [title, level_chars[depth] * len(title), "", ".. code-block:: text", ""]
    lines += ["   " + line if line else "" for line in parser.format_help().splitlines()]
    lines.append("")
    for name, sub in _subcommands(parser):
        lines += _help_lines(sub, f"{prog} {name}", level_chars, depth + 1)
    return lines


class CliDirective(SphinxDirective):
    """``.. uqx-cli::``: the help of ``uqx`` and of every command, from the parsers."""

    has_content = False

    def run(self):
        """Parse the generated sections (one per command) into the page."""
        from uqx.cli import build_parser

        old = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps to $COLUMNS
        try:
            parser = build_parser()
            lines = _help_lines(parser, "uqx", "=-~^")
        finally:
            if old is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = old
        lines = lines[2:]  # the page has its own title
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(lines, source="uqx-cli"), node)
        return node.children


# ----------------------------------------------------------------- result variables


def _rest_text(text: str) -> str:
    """Escape what ReST would read in a long name: the page shows the attribute's text.

    ``|zeta|`` (a substitution), ``*``, ``_``, and the quotes that smartquotes would curl.
    """
    return re.sub(r"([\\`*_|<>\[\]'\"])", r"\\\1", text)


def _variable_cell(v) -> str:
    """Return the long name of a declared variable, its fixed and given attributes."""
    text = "(none)" if v.long_name is None else _rest_text(v.long_name)
    extra = [f"``{k} = {a!r}``" for k, a in v.attrs.items()]
    extra += [f"``{k}`` (of the call)" for k in v.given]
    return "; ".join([text, *extra])


def _variable_lines(level_char: str = "-") -> list[str]:
    """ReST lines: a section per group of :mod:`uqx.dataio.schema`, a table of its variables."""
    from uqx.dataio.schema import GROUPS

    lines = []
    for group in GROUPS.values():
        title = f"``{group.title}``"
        lines += [title, level_char * len(title), ""]
        if not group.complete:
            lines += ["The variables that it describes (the others carry no ``long_name``).",
                      ""]
        lines += [".. list-table::", "   :header-rows: 1", "   :widths: 25 20 55", "",
                  "   * - variable", "     - dims", "     - long_name"]
        for v in group.values():
            lines += [f"   * - ``{v.name}``", f"     - ``({', '.join(v.dims)})``",
                      f"     - {_variable_cell(v)}"]
        lines.append("")
    return lines


class VariablesDirective(SphinxDirective):
    """``.. uqx-variables::``: the tables of the result variables, from the schema."""

    has_content = False

    def run(self):
        """Parse the generated sections (one per kind of result) into the page."""
        node = nodes.section()
        node.document = self.state.document
        nested_parse_with_titles(self.state, StringList(_variable_lines(),
                                                        source="uqx-variables"), node)
        return node.children


# ----------------------------------------------------------------- gallery figures


def _run(code: str, ns: dict, where: str):
    """Execute ``code`` in ``ns``; return the value of its last line if an expression."""
    tree = ast.parse(code, filename=where)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, where, "exec"), ns)  # noqa: S102 - the documentation's own code
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), where, "eval"), ns)  # noqa: S307


class FigureDirective(SphinxDirective):
    """``.. uqx-figure::``: run the code, show it and the figure its last line returns."""

    has_content = True
    option_spec = {"setup": directives.flag, "alt": directives.unchanged}

    def run(self):
        """Execute the code; return the code block and the figure."""
        import matplotlib.pyplot as plt
        from matplotlib.figure import Figure

        code = "\n".join(self.content)
        ns = self.env.temp_data.setdefault("uqx_figure_ns", {"__name__": "__uqx_docs__"})
        count = self.env.temp_data["uqx_figure_count"] = (
            self.env.temp_data.get("uqx_figure_count", 0) + 1)
        where = f"{self.env.docname}.rst, figure {count}"
        block = nodes.literal_block(code, code, language="python")
        try:
            value = _run(code, ns, where)
        except Exception as exc:  # a broken example must fail the build (-W)
            LOG.warning(f"{where}: {type(exc).__name__}: {exc}", location=self.get_location())
            return [block]
        if "setup" in self.options:
            return [block]
        if not isinstance(value, Figure):
            LOG.warning(f"{where}: the last line must return a matplotlib Figure",
                        location=self.get_location())
            return [block]
        folder = FIGURES / self.env.docname
        folder.mkdir(parents=True, exist_ok=True)
        name = f"figure-{count}.png"
        value.savefig(folder / name, dpi=90, bbox_inches="tight", metadata={"Software": None})
        plt.close(value)
        uri = "/" + (folder / name).relative_to(DOCS).as_posix()
        image = nodes.image(uri=uri, alt=self.options.get("alt", f"figure {count}"))
        return [block, nodes.container("", image, classes=["uqx-figure"])]


# ----------------------------------------------------------------- notebooks


def _data_available() -> bool:
    from uqx.dataio.datasets import data_dir
    from uqx.errors import InputError

    try:
        data_dir()
    except InputError:
        return False
    return True


def _unexecuted_note(nb):
    import nbformat

    note = ("```{note}\nThis notebook is shown without its outputs: the literature data "
            "were not found when the documentation was built (set `UQX_DATA_DIR`, see "
            "*Getting started*).\n```")
    nb.cells.insert(1, nbformat.v4.new_markdown_cell(note))
    return nb


def _write_if_changed(path: Path, text: str) -> None:
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")


def prepare_notebooks(app) -> None:
    """Write docs/notebooks/<name>.ipynb from notebooks/*.py (executed when data exist)."""
    import jupytext
    import nbformat
    import notebook_cache

    NOTEBOOK_PAGES.mkdir(exist_ok=True)
    run = _data_available() and os.environ.get("UQX_DOCS_NOTEBOOKS", "run") != "skip"
    digest = notebook_cache.package_digest() if run else None
    sources = notebook_cache.sources()
    for src in sources:
        page = NOTEBOOK_PAGES / f"{src.stem}.ipynb"
        if run:
            t0 = time.perf_counter()
            nb, cached = notebook_cache.executed(src, digest=digest)
            if not cached:
                LOG.info(f"[uqx] executed {src.name} (QUICK=1): "
                         f"{time.perf_counter() - t0:.0f} s")
        else:
            nb = _unexecuted_note(jupytext.read(src))
        _write_if_changed(page, nbformat.writes(nb))
    stale = {p.stem for p in NOTEBOOK_PAGES.glob("*.ipynb")} - {s.stem for s in sources}
    for stem in stale:
        (NOTEBOOK_PAGES / f"{stem}.ipynb").unlink()


def setup(app):
    """Register the directive and the notebook step."""
    app.add_directive("uqx-cli", CliDirective)
    app.add_directive("uqx-variables", VariablesDirective)
    app.add_directive("uqx-figure", FigureDirective)
    app.connect("builder-inited", prepare_notebooks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
