"""uqx: metrological validation of ML prediction uncertainties (Pernot's methods)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("uqx")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+local"

from uqx.data import InputError, as_stacked, from_arrays, iter_sets, stack

__all__ = ["InputError", "as_stacked", "from_arrays", "iter_sets", "stack", "__version__"]
