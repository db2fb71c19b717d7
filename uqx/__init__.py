"""uqx: metrological validation of ML prediction uncertainties (Pernot's methods).

Public API (re-exported here): input data model (:func:`from_arrays`, :func:`read_csv`,
:func:`stack`), literature datasets (:func:`load_dataset`, :func:`load_paper_sets`),
statistics (:func:`compute`, :func:`describe`), bootstrap (:func:`bootstrap`,
:func:`bootstrap_per_bin`), references (:func:`simulate_reference`,
:func:`zeta_score`), the workflow (:func:`validate`) and NetCDF I/O.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("uqx")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+local"

from uqx.bootstrap import bootstrap, bootstrap_per_bin, bootstrap_set  # noqa: E402
from uqx.data import InputError, as_stacked, from_arrays, iter_sets, stack  # noqa: E402
from uqx.datasets import list_datasets, load_dataset, load_paper_sets  # noqa: E402
from uqx.describe import compute, describe  # noqa: E402
from uqx.io import read_csv, read_netcdf, to_netcdf  # noqa: E402
from uqx.reference import binomial_ci, simulate_reference, zeta_score  # noqa: E402
from uqx.validate import result_records, result_table, validate  # noqa: E402

__all__ = [
    "InputError",
    "as_stacked",
    "binomial_ci",
    "bootstrap",
    "bootstrap_per_bin",
    "bootstrap_set",
    "compute",
    "describe",
    "from_arrays",
    "iter_sets",
    "list_datasets",
    "load_dataset",
    "load_paper_sets",
    "read_csv",
    "read_netcdf",
    "result_records",
    "result_table",
    "simulate_reference",
    "stack",
    "to_netcdf",
    "validate",
    "zeta_score",
    "__version__",
]
