"""Diagnostic figures (matplotlib, Agg backend).

Built on :mod:`uqx.inference.curves.confidence` (methods: curves).

Every function takes a data set or a result — in memory or a NetCDF path read with
:func:`uqx.dataio.netcdf.read_netcdf` — and returns a :class:`matplotlib.figure.Figure`; a stacked
input (``set`` dimension) gives one panel per set with the same binning options. Shared
options: ``size="single"|"double"`` (column or full width of a two-column paper),
``font_size``, ``dpi`` and ``title``; colours are the Okabe–Ito palette
(:mod:`uqx.plot.style`).

:data:`FIGURES` (function -> module) and :data:`KINDS` (the kinds of ``uqx plot`` and of
``ds.uqx.plot(kind)``) are the one registry of figures: the accessor
(:class:`uqx.accessor.PlotMethods`) and the command line (``uqx plot``) are built from
them. Importing this package is light (no numpy, matplotlib or scipy, so that
``uqx --help`` and ``ds.uqx`` stay fast): the figure modules are imported when a figure
function is first looked up (:func:`_load`).
"""

from __future__ import annotations

import sys
import types

#: Figure functions of uqx: each takes a data set or a result (in memory or a NetCDF path)
#: and returns a :class:`matplotlib.figure.Figure`.
FIGURES = (
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
    "extrapolation",
    "study",
    "appendix_b",
    "pval",
    "bins",
    "decimation",
    "binned_tailedness",
    "reference_sensitivity",
    "error_rates",
)

#: Figure kinds, as ``uqx plot KIND`` and ``ds.uqx.plot(KIND)`` name them -> (figure
#: function of :data:`FIGURES`, its default options for this kind, short description).
KINDS = {
    "e-vs-u": ("e_vs_u", {}, "E against uE with guide lines and running 95 % quantiles"),
    "z-vs-x": ("z_vs_x", {}, "Z against X or V (--by) with running quantiles"),
    "reliability": ("reliability", {}, "reliability diagram (per-bin SD(E) vs RMV)"),
    "lzisd": ("lzisd", {}, "local z inverse sd per bin of uE, X or V (of a 'uqx validate' "
              "result .nc: its bins and intervals, as validated)"),
    "lzv": ("lzisd", {"stat": "lzv"}, "local Var(Z) per bin of uE, X or V"),
    "lcp": ("lcp", {}, "local coverage probabilities per bin (--levels)"),
    "calibration": ("calibration", {},
                    "calibration curve (or conditional curves with --conditional)"),
    "confidence": ("confidence", {}, "confidence curve with probabilistic reference"),
    "distributions": ("distributions", {},
                      "histograms of ln u2, ln E2, ln Z2, E, Z with fits"),
    "tailedness": ("tailedness_map", {},
                   "beta_GM(E2), beta_GM(Z2) vs beta_GM(u2) with unsafe zones"),
    "zeta": ("zeta_bars", {},
             "|zeta| agreement and grouped zeta bars of a validation result (NetCDF)"),
    "study": ("study", {}, "panels of a Monte-Carlo study archive of 'uqx sweep' (NetCDF)"),
    "pval": ("pval", {}, "001 Fig. 4: p_val against nu (archive of 'uqx sweep pval')"),
    "appendix-b": ("appendix_b", {}, "000 Figs. A1-A2 (archive of 'uqx sweep appendix-b')"),
    "bins": ("bins", {}, "statistics against the number of bins, zero-bin intercepts "
             "('uqx sweep bins')"),
    "decimation": ("decimation", {},
                   "001 Fig. 7: Delta RCE/ZMS against k ('uqx sweep decimation')"),
    "binned-tailedness": ("binned_tailedness", {}, "001 Fig. 8: per-bin tailedness "
                          "('uqx sweep binned-tailedness')"),
    "reference-sensitivity": ("reference_sensitivity", {}, "000 Fig. 7: references against "
                              "nu ('uqx sweep reference-sensitivity')"),
    "error-rates": ("error_rates", {}, "rates of the verdicts against M "
                    "('uqx sweep error-rates')"),
}

#: Functions of this package that are not figures.
_HELPERS = ("tested_stats",)

__all__ = [*FIGURES, *_HELPERS]


def figure_of(kind: str) -> tuple[str, dict]:
    """Return the figure function and default options of a kind of :data:`KINDS`.

    ``kind`` is a key of :data:`KINDS` or the name of a function of :data:`FIGURES`, with
    ``-`` or ``_`` (``"e-vs-u"``, ``"e_vs_u"``, ``"zeta"``, ``"zeta_bars"``).

    Raises
    ------
    InputError
        Unknown kind (the message lists them).
    """
    dashed = kind.replace("_", "-")
    if dashed in KINDS:
        name, defaults, _ = KINDS[dashed]
        return name, dict(defaults)
    if kind.replace("-", "_") in FIGURES:
        return kind.replace("-", "_"), {}
    from uqx.errors import InputError

    raise InputError(f"unknown figure kind {kind!r}; choose from "
                     f"{', '.join(sorted(set(KINDS) | set(FIGURES)))}")


_loading = False


def _load() -> None:
    """Import the figure modules and bind every name of ``__all__`` here (once)."""
    global _loading
    global e_vs_u, z_vs_x, reliability, lzisd, lzisd_of_result, lcp, calibration
    global conditional_calibration, confidence, distributions, tailedness_map, zeta_agreement
    global zeta_bars, extrapolation, study, appendix_b, pval, bins, decimation
    global binned_tailedness, reference_sensitivity, error_rates, tested_stats
    if _loading:
        return
    _loading = True
    try:
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
    finally:
        _loading = False


def __getattr__(name: str):
    """Return a figure function, importing the figure modules on first use (PEP 562)."""
    if name in FIGURES or name in _HELPERS:
        _load()
        return globals()[name]
    raise AttributeError(f"module 'uqx.plot' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package module: a figure function wins over a module of the same name.

    ``calibration``, ``distributions``, ``error_rates`` and ``extrapolation`` are both a
    function and a module of this package; importing such a module (``from
    uqx.plot.extrapolation import ...``) before :func:`_load` binds the module to the
    package's attribute, which then answers for the function.
    """

    def __getattribute__(self, name):
        value = super().__getattribute__(name)
        if isinstance(value, types.ModuleType) and name in FIGURES:
            _load()
            value = super().__getattribute__(name)
        return value


sys.modules[__name__].__class__ = _Package
