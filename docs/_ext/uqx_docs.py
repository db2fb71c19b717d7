"""Sphinx extension of the uqx documentation: CLI reference and paper notebooks.

* ``.. uqx-cli::`` renders the help of every ``uqx`` command and ``uqx sweep`` study from
  the argument parsers themselves (:func:`uqx.cli.build_parser`), so the reference
  cannot drift from the program.
* ``.. uqx-figure::`` runs its Python code (one namespace per page), shows the code and
  the :class:`matplotlib.figure.Figure` its last line returns (uqx's figures are not
  pyplot figures, so matplotlib's own ``plot`` directive would not see them); with
  ``:setup:`` the code only runs.
* At ``builder-inited`` the jupytext scripts of ``notebooks/`` become
  ``docs/notebooks/<name>.ipynb``: executed in quick mode (``QUICK=1``) when the literature
  data are found, otherwise unexecuted with a note. Executed notebooks are cached in
  ``docs/_build/notebook-cache`` under a key of the notebook text and of every uqx source
  file, so a rebuild re-runs a notebook only when it or the package changed.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import os
import tempfile
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
NOTEBOOK_SOURCES = ROOT / "notebooks"
NOTEBOOK_PAGES = DOCS / "notebooks"
CACHE = DOCS / "_build" / "notebook-cache"
FIGURES = DOCS / "_build" / "uqx-figures"
HELP_WIDTH = "90"

#: first cell of an executed notebook (hidden): figures returned by a cell are shown as PNG
_DISPLAY_CELL = """\
import io
from matplotlib.figure import Figure
def _uqx_png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    return buf.getvalue()
get_ipython().display_formatter.formatters["image/png"].for_type(Figure, _uqx_png)
"""


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


def _package_digest() -> str:
    h = hashlib.sha256()
    for path in sorted((ROOT / "uqx").rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def _data_available() -> bool:
    from uqx.datasets import data_dir
    from uqx.errors import InputError

    try:
        data_dir()
    except InputError:
        return False
    return True


def _execute(nb, name):
    import nbclient
    import nbformat

    hidden = nbformat.v4.new_code_cell(_DISPLAY_CELL, metadata={"tags": ["remove-cell"]})
    nb.cells.insert(0, hidden)
    env = {"QUICK": "1"}
    saved = {k: os.environ.get(k) for k in (*env, "MPLBACKEND")}
    os.environ.update(env)
    os.environ.pop("MPLBACKEND", None)  # the kernel's own inline backend
    try:
        with tempfile.TemporaryDirectory(prefix="uqx-docs-") as tmp:
            client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                             resources={"metadata": {"path": tmp}})
            client.execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


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

    NOTEBOOK_PAGES.mkdir(exist_ok=True)
    run = _data_available() and os.environ.get("UQX_DOCS_NOTEBOOKS", "run") != "skip"
    digest = _package_digest() if run else ""
    CACHE.mkdir(parents=True, exist_ok=True)
    sources = sorted(NOTEBOOK_SOURCES.glob("[0-9][0-9][0-9]_*.py"))
    for src in sources:
        text = src.read_text(encoding="utf-8")
        page = NOTEBOOK_PAGES / f"{src.stem}.ipynb"
        if not run:
            nb = _unexecuted_note(jupytext.reads(text, fmt="py:percent"))
            _write_if_changed(page, nbformat.writes(nb))
            continue
        key = hashlib.sha256((text + digest).encode()).hexdigest()[:20]
        cached = CACHE / f"{src.stem}-{key}.ipynb"
        if not cached.exists():
            LOG.info(f"[uqx] executing {src.name} (QUICK=1)...")
            t0 = time.perf_counter()
            nb = _execute(jupytext.reads(text, fmt="py:percent"), src.name)
            LOG.info(f"[uqx] {src.name}: {time.perf_counter() - t0:.0f} s")
            for old in CACHE.glob(f"{src.stem}-*.ipynb"):
                old.unlink()
            cached.write_text(nbformat.writes(nb), encoding="utf-8")
        _write_if_changed(page, cached.read_text(encoding="utf-8"))
    stale = {p.stem for p in NOTEBOOK_PAGES.glob("*.ipynb")} - {s.stem for s in sources}
    for stem in stale:
        (NOTEBOOK_PAGES / f"{stem}.ipynb").unlink()


def setup(app):
    """Register the directive and the notebook step."""
    app.add_directive("uqx-cli", CliDirective)
    app.add_directive("uqx-figure", FigureDirective)
    app.connect("builder-inited", prepare_notebooks)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
