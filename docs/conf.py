"""Sphinx configuration of the uqx documentation (``make docs``: HTML in docs/_build/html).

Everything shown is made at build time from the package itself: the API reference from
the numpydoc docstrings, the command-line reference from the argument parsers, the
gallery by drawing every figure kind, and the paper notebooks (``notebooks/``) executed
in quick mode (cached in ``docs/_build/notebook-cache``; skipped without the literature
data, then shown unexecuted).
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))
os.environ.setdefault("MPLBACKEND", "Agg")
# no progress display in the executed pages (their kernels would show it as output)
os.environ.setdefault("UQX_PROGRESS", "0")

import uqx  # noqa: E402

project = "uqx"
author = "the uqx developers"
copyright = "the uqx developers"  # noqa: A001
release = version = uqx.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # MathJax copied into _static: formulas render offline
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
    "uqx_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "_ext", "**.ipynb_checkpoints", "notebooks/_output",
                    "error_rates_table.md"]  # included by verdicts.md
root_doc = "index"

# -- MyST / notebooks: executed by uqx_docs (cached), rendered as stored here
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "off"
nb_merge_streams = True

# -- API reference
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the numpydoc sections say it
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- HTML
html_theme = "furo"
html_title = f"uqx {release}"
# uqx.css: printed outputs wrap and wide tables stay inside the content column
html_static_path = ["_static"]
html_css_files = ["uqx.css"]
html_show_sourcelink = False
