"""Chunked, resumable Monte-Carlo studies on dask, archived as NetCDF (``uqx sweep``).

Each study is a grid of cells, every cell calling the engine's own kernels (synthetic
generators, binned statistics, bootstrap, references) with random streams keyed by the
cell coordinates and fixed replicate blocks, so an archive is bitwise the same for any
chunking, scheduler (threads, processes, ``dask.distributed``) or worker count.

Studies: :func:`appendix_b` (000 App. B), :func:`pval` (001 Fig. 4), :func:`bins`
(002, 000 App. C), :func:`binned_tailedness` (001 Fig. 8), :func:`decimation` (001
Fig. 7), :func:`reference_sensitivity` (000 Fig. 7). Archives: :func:`compare`,
:func:`summary_text`. Engine: :mod:`uqx.sweeps.engine`.
"""

from __future__ import annotations

from importlib import import_module

from uqx.errors import InputError
from uqx.sweeps.appendix_b import appendix_b
from uqx.sweeps.archive import STUDY_MODULES, CompareResult, compare, format_compare, summary_text
from uqx.sweeps.binned_tailedness import binned_tailedness
from uqx.sweeps.bins import bins
from uqx.sweeps.decimation import decimation
from uqx.sweeps.engine import Study, run_sweep
from uqx.sweeps.pval import pval
from uqx.sweeps.reference_sensitivity import reference_sensitivity

__all__ = [
    "appendix_b",
    "pval",
    "bins",
    "binned_tailedness",
    "decimation",
    "reference_sensitivity",
    "run_study",
    "compare",
    "format_compare",
    "summary_text",
    "CompareResult",
    "Study",
    "run_sweep",
    "STUDIES",
]

#: Study names (``uqx sweep NAME``).
STUDIES = tuple(STUDY_MODULES)


def run_study(name: str, *args, **kwargs):
    """Run a study by name (``"appendix-b"``, ``"pval"``, ...); see the study functions."""
    if name not in STUDY_MODULES:
        raise InputError(f"unknown study {name!r}; choose one of {', '.join(STUDIES)}")
    module = import_module(f"uqx.sweeps.{STUDY_MODULES[name]}")
    return getattr(module, STUDY_MODULES[name])(*args, **kwargs)
