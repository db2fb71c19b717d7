"""Execute the paper notebooks (notebooks/*.py, jupytext percent format) in quick mode.

Each notebook regenerates its paper's tables and figures and ends with a cell of asserts
against the published numbers; running it without error is the test. QUICK=1 shrinks the
Monte-Carlo sizes (about 2.5 minutes for the five notebooks on 2 cores).

The kernel is "python3": the kernelspec installed by ipykernel (in the venv's
share/jupyter/kernels, or ipykernel's built-in one) starts ``python``, which
jupyter_client replaces by ``sys.executable``, i.e. the interpreter running pytest.

The runs go through ``docs/_ext/notebook_cache.py``, which keeps each executed notebook
(keyed by its text and every uqx source file) for the documentation: ``make docs`` after
``make test`` renders these runs instead of executing the notebooks a second time, and a
run already kept for the same sources is not repeated.
"""

import os
import sys
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
sys.path.insert(0, str(ROOT / "docs" / "_ext"))
import notebook_cache  # noqa: E402

NOTEBOOKS = {
    "000_simulated_references.py": 10,
    "001_heavy_tails_rce.py": 10,
    "002_ence_bins.py": 3,
    "003_primer.py": 50,
    "004_rce_short.py": 3,
}


@pytest.fixture
def quick_env(data_dir, monkeypatch):
    # the kernel inherits the environment of the test process
    monkeypatch.setenv("QUICK", "1")
    monkeypatch.setenv("UQX_DATA_DIR", str(data_dir))
    monkeypatch.setenv("MPLBACKEND", "Agg")


def test_notebooks_are_percent_scripts():
    for name in NOTEBOOKS:
        text = (NOTEBOOK_DIR / name).read_text(encoding="utf-8")
        assert text.startswith("# ---\n# jupyter:\n#   jupytext:"), name
        nb = jupytext.reads(text, fmt="py:percent")
        assert nb.cells[0].cell_type == "markdown", name
        assert "Run time" in nb.cells[0].source, name
        assert "assert" in nb.cells[-1].source, name
    assert "_output/" in (NOTEBOOK_DIR / ".gitignore").read_text().split()


@pytest.mark.data
@pytest.mark.parametrize("name", sorted(NOTEBOOKS))
def test_notebook_runs_quick(name, quick_env, tmp_path):
    # raises CellExecutionError when a cell (or a final assert) fails; a run kept for the
    # same notebook and package sources (see the module docstring) is not repeated
    nb, cached = notebook_cache.executed(NOTEBOOK_DIR / name, workdir=tmp_path, timeout=300)
    assert os.environ["QUICK"] == "1"
    last = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []))
    assert "all checks passed" in last, last
    shown = [o for c in nb.cells for o in c.get("outputs", [])
             if "image/png" in o.get("data", {})]
    assert len(shown) >= 1  # figures displayed for the documentation
    if not cached:
        prefix = name.split("_")[0]
        pngs = sorted((tmp_path / "_output").glob(f"{prefix}_*.png"))
        assert len(pngs) >= NOTEBOOKS[name], [p.name for p in pngs]
        assert all(p.stat().st_size > 1000 for p in pngs)
