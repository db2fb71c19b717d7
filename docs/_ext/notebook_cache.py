"""Execute the paper notebooks once per change: shared by the tests and the docs build.

``tests/test_notebooks.py`` (``make test``) and the documentation (``make docs``) both
need the five notebooks of ``notebooks/`` executed in quick mode (``QUICK=1``). Both
call :func:`executed`, which keeps every executed notebook in ``docs/_build/notebook-cache``
under a key of the notebook's text and of every uqx source file: in CI the tests execute
them and the documentation renders the same runs. Needs only jupytext, nbformat and
nbclient (the ``test`` extra), not Sphinx.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "notebooks"
CACHE = ROOT / "docs" / "_build" / "notebook-cache"

#: hidden first cell: figures returned by a cell are shown as PNG (uqx's figures are not
#: pyplot figures, so the inline backend would only print their repr)
DISPLAY_CELL = """\
import io
from matplotlib.figure import Figure
def _uqx_png(fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight")
    return buf.getvalue()
get_ipython().display_formatter.formatters["image/png"].for_type(Figure, _uqx_png)
"""


def sources() -> list[Path]:
    """Return the notebook scripts ``notebooks/NNN_*.py``, in order."""
    return sorted(SOURCES.glob("[0-9][0-9][0-9]_*.py"))


def package_digest() -> str:
    """Return the SHA-256 of every uqx source file (a change re-runs the notebooks)."""
    h = hashlib.sha256()
    for path in sorted((ROOT / "uqx").rglob("*")):
        if path.suffix in (".py", ".json") and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(ROOT)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def cache_path(src: Path, digest: str | None = None) -> Path:
    """Return the cache file of the executed notebook ``src`` for the current sources."""
    text = src.read_text(encoding="utf-8")
    key = hashlib.sha256((text + (digest or package_digest())).encode()).hexdigest()[:20]
    return CACHE / f"{src.stem}-{key}.ipynb"


def execute(src: Path, workdir: Path, *, timeout: int = 900):
    """Execute ``src`` in quick mode in ``workdir``; return the notebook with its outputs.

    A cell that fails (a final assert included) raises
    :class:`nbclient.exceptions.CellExecutionError`.
    """
    import jupytext
    import nbclient
    import nbformat

    nb = jupytext.read(src)
    nb.cells.insert(0, nbformat.v4.new_code_cell(DISPLAY_CELL,
                                                 metadata={"tags": ["remove-cell"]}))
    saved = {k: os.environ.get(k) for k in ("QUICK", "MPLBACKEND")}
    os.environ["QUICK"] = "1"
    os.environ.pop("MPLBACKEND", None)  # the kernel's own inline backend
    try:
        nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(workdir)}}).execute()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return nb


def executed(src: Path, *, workdir: Path | None = None, digest: str | None = None,
             timeout: int = 900):
    """Return ``(notebook, from_cache)``: the cached run if current, else a new one, kept.

    Parameters
    ----------
    src : pathlib.Path
        A notebook script of ``notebooks/``.
    workdir : pathlib.Path, optional
        Where a new run executes (its ``_output/`` figures land there); default a
        temporary directory.
    digest : str, optional
        :func:`package_digest`, when the caller has it.
    timeout : int, default 900
        Seconds per cell.
    """
    import nbformat

    cached = cache_path(src, digest)
    if cached.exists():
        return nbformat.read(cached, as_version=4), True
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="uqx-notebook-") as tmp:
            nb = execute(src, Path(tmp), timeout=timeout)
    else:
        nb = execute(src, workdir, timeout=timeout)
    CACHE.mkdir(parents=True, exist_ok=True)
    for old in CACHE.glob(f"{src.stem}-*.ipynb"):
        old.unlink()
    tmp = cached.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    os.replace(tmp, cached)
    return nb, False
