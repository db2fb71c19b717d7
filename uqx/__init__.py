"""uqx: metrological validation of ML prediction uncertainties (Pernot's methods).

Public API (re-exported here): input data model (:func:`from_arrays`, :func:`read_csv`,
:func:`from_dataframe`, :func:`stack`), literature datasets (:func:`load_dataset`,
:func:`load_paper_sets`), statistics (:func:`compute`, :func:`describe`), bootstrap
(:func:`bootstrap`, :func:`bootstrap_per_bin`), references (:func:`simulate_reference`,
:func:`zeta_score`), the workflow (:func:`validate`, with its settings in groups:
:class:`Bootstrap`, :class:`Copies`, :class:`Binning`, :class:`Conditional`,
:class:`Decision`, :class:`Compute`), its tables (:func:`result_table`,
:func:`verdict_table`, :func:`result_dataframe`) and NetCDF I/O. Every Dataset also has
the ``.uqx`` accessor (:mod:`uqx.accessor`): ``ds.uqx.validate()``,
``res.uqx.verdicts()``, ``res.uqx.plot.reliability()``.

The names are resolved lazily (PEP 562 module ``__getattr__``): ``import uqx`` and
``uqx --help`` do not load xarray, dask or numba until a function is first used. The
accessor is registered as soon as both uqx and xarray are imported, in either order
(:func:`_register_accessor`).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from importlib import import_module

from uqx._version import __version__ as __version__
from uqx.errors import InputError as InputError
from uqx.errors import OutputError as OutputError

#: public name -> module defining it
_LAZY = {
    "as_stacked": "uqx.dataio.model",
    "from_arrays": "uqx.dataio.model",
    "iter_sets": "uqx.dataio.model",
    "provenance": "uqx.dataio.provenance",
    "stack": "uqx.dataio.model",
    "bootstrap": "uqx.inference.bootstrap",
    "bootstrap_per_bin": "uqx.inference.bootstrap",
    "bootstrap_set": "uqx.inference.bootstrap",
    "list_datasets": "uqx.dataio.datasets",
    "load_dataset": "uqx.dataio.datasets",
    "load_paper_sets": "uqx.dataio.datasets",
    "apply_kernel": "uqx.inference.describe",
    "compute": "uqx.inference.describe",
    "describe": "uqx.inference.describe",
    "from_dataframe": "uqx.dataio.frames",
    "read_csv": "uqx.dataio.frames",
    "open_dataset": "uqx.dataio.netcdf",
    "read_netcdf": "uqx.dataio.netcdf",
    "to_netcdf": "uqx.dataio.netcdf",
    "binomial_ci": "uqx.inference.zeta",
    "simulate_reference": "uqx.inference.reference",
    "zeta_score": "uqx.inference.zeta",
    "result_records": "uqx.text.tables",
    "result_table": "uqx.text.tables",
    "result_dataframe": "uqx.text.tables",
    "verdict_table": "uqx.text.tables",
    "validate": "uqx.workflow.validation",
    "Bootstrap": "uqx.workflow.groups",
    "Copies": "uqx.workflow.groups",
    "Binning": "uqx.workflow.groups",
    "Conditional": "uqx.workflow.groups",
    "Decision": "uqx.workflow.groups",
    "Compute": "uqx.workflow.groups",
    "fit_recalibration": "uqx.workflow.recalibrate",
    "check_recalibration": "uqx.workflow.recalibrate",
    "read_map": "uqx.workflow.recalibrate",
}

__all__ = sorted([*_LAZY, "InputError", "OutputError", "__version__"])


def __getattr__(name: str):
    """Import the module defining a public name on first access (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        # sub-packages (uqx.engine, uqx.cli, ...) are found by the import system itself
        raise AttributeError(f"module 'uqx' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # cache: later lookups bypass __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


# ------------------------------------------------------------- the .uqx accessor
#
# ``uqx.accessor`` registers ``Dataset.uqx`` (``@xr.register_dataset_accessor("uqx")``)
# when it is imported, and it imports xarray (with numpy and pandas: ~0.7 s, against
# ~0.05 s for ``import uqx``). A plain import of it at the top of this module would make
# every ``import uqx`` and ``uqx --help`` load xarray, which tests/test_cli_commands.py
# rules out (the package and the command line's help stay light). So the accessor module
# is imported here, plainly, at the first moment both are there: now if xarray is already
# imported, else right after xarray is (the one-shot finder below wraps xarray's loader).


def _register_accessor() -> None:
    """Register ``Dataset.uqx`` by importing :mod:`uqx.accessor` (xarray is loaded)."""
    from uqx import accessor  # noqa: F401  (the import registers the accessor)


class _ThenRegister(importlib.abc.Loader):
    """Loader of xarray that registers the accessor once xarray is loaded."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _register_accessor()

    def __getattr__(self, name):  # get_resource_reader, is_package...: the real loader's
        return getattr(self._loader, name)


class _AccessorHook(importlib.abc.MetaPathFinder):
    """Register the ``.uqx`` accessor when xarray is imported after uqx (used once)."""

    def find_spec(self, name, path=None, target=None):
        if name != "xarray":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenRegister(spec.loader)
        return spec


if "xarray" in sys.modules:
    _register_accessor()
elif not any(isinstance(f, _AccessorHook) for f in sys.meta_path):
    sys.meta_path.insert(0, _AccessorHook())
