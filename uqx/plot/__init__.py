"""Diagnostic figures (matplotlib, Agg backend).

Built on :mod:`uqx.inference.curves` (methods: curves).

Every function takes a data set or a result — in memory or a NetCDF path read with
:func:`uqx.dataio.netcdf.read_netcdf` — and returns a :class:`matplotlib.figure.Figure`; a stacked
input (``set`` dimension) gives one panel per set with the same binning options. Shared
options: ``size="single"|"double"`` (column or full width of a two-column paper),
``font_size``, ``dpi`` and ``title``; colours are the Okabe–Ito palette
(:mod:`uqx.plot.style`).
"""

from __future__ import annotations

from uqx.plot.binned import lcp, lzisd, lzisd_of_result, reliability
from uqx.plot.calibration import calibration, conditional_calibration, confidence
from uqx.plot.distributions import distributions
from uqx.plot.error_rates import error_rates
from uqx.plot.extrapolation import extrapolation
from uqx.plot.scatter import e_vs_u, z_vs_x
from uqx.plot.studies import appendix_b, study
from uqx.plot.study_panels import (
    binned_tailedness,
    bins,
    decimation,
    pval,
    reference_sensitivity,
)
from uqx.plot.summary import tailedness_map, tested_stats, zeta_agreement, zeta_bars

__all__ = [
    "e_vs_u",
    "z_vs_x",
    "reliability",
    "lzisd",
    "lzisd_of_result",
    "lcp",
    "calibration",
    "conditional_calibration",
    "confidence",
    "distributions",
    "tailedness_map",
    "zeta_agreement",
    "zeta_bars",
    "tested_stats",
    "study",
    "extrapolation",
    "appendix_b",
    "pval",
    "bins",
    "decimation",
    "binned_tailedness",
    "reference_sensitivity",
    "error_rates",
]
