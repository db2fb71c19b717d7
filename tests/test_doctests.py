"""The ``>>>`` examples of the package's docstrings run and give what they show.

Every module of :mod:`uqx` whose source holds an example is imported and run through
:func:`doctest.testmod` (its own namespace as globals, so ``np`` is whatever the module
imports). Examples that need the literature data, the network or files of the user are
marked ``# doctest: +SKIP`` where they stand; everything else must pass as written
(``+ELLIPSIS`` / ``+NORMALIZE_WHITESPACE`` are set per example where the output varies).
The modules are found by reading the sources, so collection imports nothing; the
examples themselves take well under a second (the imports are shared with the suite).
"""

import doctest
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "uqx"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: modules whose docstrings hold examples
MODULES = sorted(_module_name(p) for p in ROOT.rglob("*.py") if ">>>" in p.read_text("utf-8"))


def test_examples_are_found():
    assert len(MODULES) >= 10
    assert "uqx.engine.statistic" in MODULES and "uqx.inference.bootstrap" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, raise_on_error=False, report=True, verbose=False,
                             optionflags=doctest.REPORT_NDIFF)
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} examples fail"
