"""Self-contained report of a validation result: one HTML page (or Markdown) for all sets.

:func:`report` renders a :func:`uqx.validate` result: first the answer in words (one
paragraph per set, :func:`uqx.text.summary.summary_lines`), then its parameters and
inputs (names, sizes, digests), a verdict table (one row per set: the questions with their
resolutions, the scale factor, tailedness; every statistic with its BCa interval and ζ),
the grouped warnings, a short "how to read the verdicts" (documentation), then one section
per set that opens with its answer in words and one figure (the one of its first invalid
question, :func:`uqx.report.blocks.lead_figure`), then its questions, its statistics
grouped by question, the papers' diagnostics (:mod:`uqx.text.tables`) and the other
figures of :mod:`uqx.plot` (:func:`diagnostic_figures`); last, for comparison, the papers'
ζ-scores of all sets.

HTML: no external resource (inline CSS, no JavaScript, figures as base64 PNG ``data:``
URIs), all text escaped, every element closed (the page also parses as XML). Markdown:
figures embedded as data URIs by :func:`report`, written as PNG files in
``<stem>_figures/`` next to the ``.md`` by :func:`write_report` (many Markdown viewers,
GitHub among them, do not display data URIs). The raw-data figures need ``data`` (sets
matched by content digest, ``input_digests``); the ζ bars and the zero-bin extrapolation
panels come from the result alone.
"""

from __future__ import annotations

import re
from pathlib import Path

from uqx.dataio.model import InputError
from uqx.dataio.netcdf import atomic_write
from uqx.dataio.paths import check_output_path
from uqx.report.blocks import (
    HOWTO,
    VERDICT_STYLE,
    Figures,
    Heading,
    Items,
    answer_blocks,
    header_blocks,
    set_blocks,
    summary_blocks,
    warning_blocks,
)
from uqx.report.figures import diagnostic_figures, load_result
from uqx.report.render import data_uri, to_html, to_markdown
from uqx.text.summary import summary_lines
from uqx.text.tables import conditional_table, question_table, result_table

__all__ = ["report", "write_report", "report_format", "diagnostic_figures", "VERDICT_STYLE"]


def _blocks(res, data, *, figures, title, dpi) -> list:
    """Build the content blocks of the report, in page order."""
    figs = diagnostic_figures(res, data, dpi=dpi) if figures else {}
    tables = (result_table(res), conditional_table(res) if "cond" in res.dims else None,
              question_table(res))
    head = header_blocks(res, title, has_data=data is not None or not figures)
    answer = answer_blocks(res)
    blocks = head[:2] + answer + head[2:]  # the answer in words first, below the title
    names = [str(s) for s in res["set"].values]
    toc = ([("Summary", "summary")] if answer else []) + [
        ("Verdicts", "verdicts"), ("Warnings", "warnings"),
        ("How to read the verdicts", "howto")]
    zeta = [("For comparison: the papers' \u03b6-scores", "zeta")] if figs.get(None) else []
    blocks += [Items(toc + [(s, f"set-{i + 1}") for i, s in enumerate(names)] + zeta)]
    blocks += summary_blocks(res, tables[0]) + warning_blocks(res)
    blocks += [Heading(2, "How to read the verdicts", "howto"), Items(HOWTO)]
    lines = summary_lines(res)
    for i, s in enumerate(names):
        own = [f._replace(key=f"set{i + 1}_{f.key}") for f in figs.get(s, [])]
        blocks += set_blocks(res, i, own, tables,
                             answer=lines[i] if i < len(lines) else None)
    if figs.get(None):  # the papers' ζ-scores: for comparison, after the sets' own figures
        blocks += [Heading(2, "For comparison: the papers' \u03b6-scores", "zeta"),
                   Figures(figs[None])]
    return blocks


def report(result, data=None, *, figures: bool = True, fmt: str = "html",
           title: str | None = None, dpi: float = 110, figure_dir=None) -> str:
    """Render a validation result as one self-contained HTML page (or Markdown).

    Content (module docstring): parameters, inputs, verdict table, grouped warnings
    (:func:`uqx.text.tables.grouped_warnings`), how to read the verdicts (000 Fig. 1 with the
    rules of :mod:`uqx.engine.verdict`), per set the tables of
    :func:`~uqx.text.tables.result_table` and :func:`uqx.text.tables.conditional_table` and
    :func:`diagnostic_figures`.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output.
    data : xarray.Dataset, list of Dataset or path to NetCDF, optional
        The validated inputs, matched by content digest (:func:`diagnostic_figures`).
        Without it, the raw-data figures are skipped (noted on the page).
    figures : bool, default True
        Draw the figures (False: tables only, fast).
    fmt : {"html", "md"}, default "html"
        HTML: inline CSS, no script, figures as base64 PNG ``data:`` URIs, all text
        escaped. Markdown: the same content with pipe tables.
    title : str, optional
        Page title (default the result's ``title`` attribute).
    dpi : float, default 110
        Resolution of the embedded PNG figures.
    figure_dir : path, optional
        Markdown only: write the figures as PNG files into this directory (created) and
        link them as ``<figure_dir name>/<file>.png`` (the directory must sit next to the
        Markdown file); default: embedded ``data:`` URIs.

    Returns
    -------
    str
        The page.
    """
    if fmt not in ("html", "md"):
        raise InputError(f"report format must be 'html' or 'md', got {fmt!r}")
    res = load_result(result)
    title = title or str(res.attrs.get("title", "uqx validation report"))
    blocks = _blocks(res, data, figures=figures, title=title, dpi=dpi)
    if fmt == "html":
        return to_html(blocks, title, data_uri)
    if figure_dir is None:
        return to_markdown(blocks, title, data_uri)
    folder = Path(figure_dir)
    folder.mkdir(parents=True, exist_ok=True)

    def to_file(key, png):
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", key) + ".png"
        # the output policy of every file: atomic, never onto a read-only or odd file
        atomic_write(folder / name, lambda tmp: tmp.write_bytes(png), what="figure",
                     mkdir=False)
        return f"{folder.name}/{name}"

    return to_markdown(blocks, title, to_file)


def report_format(path) -> str:
    """Format of a report file from its suffix: ``.html``/``.htm`` or ``.md``/``.markdown``."""
    suffix = Path(path).suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix in (".md", ".markdown"):
        return "md"
    raise InputError(f"{path}: report file must end in .html or .md")


def write_report(result, path, data=None, *, figures: bool = True, title: str | None = None,
                 dpi: float = 110, mkdir: bool = False) -> Path:
    """Write :func:`report` to ``path`` atomically (:func:`uqx.dataio.netcdf.atomic_write`).

    The format follows the suffix (``.html`` or ``.md``); a Markdown report gets its
    figures as PNG files in ``<stem>_figures/`` next to it. Replacing a Markdown report
    removes the figures the old one linked to and the new one does not (another data
    set's, a figure no longer drawn): only those, read from the old report's links.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output.
    path : str or path-like
        Report file, ``.html``/``.htm`` or ``.md``/``.markdown``.
    data : xarray.Dataset, list of Dataset or path to NetCDF, optional
        The validated inputs (raw-data figures; :func:`report`).
    figures : bool, default True
        Draw the figures.
    title : str, optional
        Page title.
    dpi : float, default 110
        Resolution of the figures.
    mkdir : bool, default False
        Create a missing directory of ``path``; otherwise it is refused, before anything
        is drawn (:func:`uqx.dataio.paths.check_output_path`, the policy of
        :func:`uqx.to_netcdf` and of the command line).

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    InputError
        Unknown suffix, or a result that is not a validation result.
    uqx.errors.OutputError
        The file cannot be written: a directory, a device, a FIFO, a missing directory
        (without ``mkdir``), an unwritable one.
    """
    path = Path(path)
    fmt = report_format(path)
    check_output_path(path, kind="report", mkdir=mkdir)
    fig_dir = path.with_name(path.stem + "_figures") if fmt == "md" else None
    before = _linked_figures(path, fig_dir)  # those of the report being replaced
    text = report(result, data, figures=figures, fmt=fmt, title=title, dpi=dpi,
                  figure_dir=fig_dir if figures else None)
    out = atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"),
                       what="report", mkdir=mkdir)
    if fig_dir is not None:  # the old report's figures that the new one does not show
        for name in sorted(before - _figure_links(text, fig_dir)):
            (fig_dir / name).unlink(missing_ok=True)
        if fig_dir.is_dir() and not any(fig_dir.iterdir()):
            fig_dir.rmdir()
    return out


def _figure_links(text: str, fig_dir: Path) -> set:
    """Names of the PNG files of ``fig_dir`` that a Markdown report links to."""
    pattern = rf"\]\({re.escape(fig_dir.name)}/([A-Za-z0-9_.-]+\.png)\)"
    return set(re.findall(pattern, text))


def _linked_figures(path: Path, fig_dir: Path | None) -> set:
    """Return the figures an existing Markdown report at ``path`` wrote into ``fig_dir``.

    Read from its links, so that only the files a uqx report wrote there are ever
    removed (a file the user put in the folder is kept).
    """
    if fig_dir is None or not path.is_file() or not fig_dir.is_dir():
        return set()
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return {n for n in _figure_links(text, fig_dir) if (fig_dir / n).is_file()}
