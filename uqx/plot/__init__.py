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
``uqx --help`` and ``ds.uqx`` stay fast): a figure's module is imported when its function
is first looked up (the module ``__getattr__``).
"""

from __future__ import annotations

import importlib

from uqx.errors import InputError

#: Figure functions of uqx -> the module of this package that defines it. Each takes a
#: data set or a result (in memory or a NetCDF path) and returns a
#: :class:`matplotlib.figure.Figure`. Adding a figure: its function in a module, one line
#: here (and a kind in :data:`KINDS` if ``uqx plot`` names it otherwise).
FIGURES = {
    "e_vs_u": "scatter",
    "z_vs_x": "scatter",
    "reliability": "binned",
    "lzisd": "binned",
    "lzisd_of_result": "binned",
    "lcp": "binned",
    "calibration": "curves",
    "conditional_calibration": "curves",
    "confidence": "curves",
    "distributions": "histograms",
    "tailedness_map": "summary",
    "zeta_agreement": "summary",
    "zeta_bars": "summary",
    "extrapolation": "zero_bin",
    "study": "studies",
    "appendix_b": "studies",
    "pval": "study_panels",
    "bins": "study_panels",
    "decimation": "study_panels",
    "binned_tailedness": "study_panels",
    "reference_sensitivity": "study_panels",
    "error_rates": "rates",
}

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

#: Functions of this package that are not figures -> their module.
_HELPERS = {"tested_stats": "summary"}

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
    raise InputError(f"unknown figure kind {kind!r}; choose from "
                     f"{', '.join(sorted(set(KINDS) | set(FIGURES)))}")


def __getattr__(name: str):
    """Return a figure function, importing its module on first use (PEP 562).

    Called only for names the package does not hold yet: no figure function shares its
    name with a module of the package, so an imported module never shadows a function.
    """
    where = FIGURES.get(name) or _HELPERS.get(name)
    if where is None:
        raise AttributeError(f"module 'uqx.plot' has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{where}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
