r"""``bins``: binned statistics against the number of bins, zero-bin extrapolation.

Papers 002 and 000 App. C (methods page, Zero-bin extrapolation): ENCE, ZMSE and ZVE for a series of
equal-count bin numbers N, ``lm(y ~ x)`` against :math:`\sqrt{N/M}` (``app-c``) or
:math:`\sqrt N` (``002``) and the intercept "at zero bins". This is
:func:`uqx.inference.extrapolate.fit.extrapolate` applied to each set (the same function as the
validation workflow's extrapolation, not a copy): the verdict compares the intercept with
its simulated null distribution (``n_mc`` calibrated copies per generative distribution);
the papers' ``intercept ± 2 SE`` test is reported as ``papers_valid`` only (it rejects
about 40 % of calibrated sets).

Presets: ``app-c`` (000 App. C: N = 10..150 by 10, M/N > 20, popMin 20, fit N > 20) and
``002`` (N in {1, 2, 5, 10, ..., 160}, M/N > 30, popMin 30, x = √N, SD-convention ENCE,
fit ranges of the paper per set: QM9 ENCE and Diffusion √N > 4, Perovskite √N > 2, QM9
ZVE all points; methods page, Zero-bin extrapolation). Deterministic: reproduces 002 Table I and
000 App. C (tests/test_paper_tables.py) to the printed digits.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.datasets import load_paper_sets
from uqx.dataio.schema import STUDIES
from uqx.engine.resample import content_key, resolve_seed
from uqx.errors import InputError
from uqx.inference.extrapolate.binsweep import PRESETS, SweepSettings, bin_numbers
from uqx.inference.extrapolate.fit import extrapolate
from uqx.sweeps._common import cell_set, check_int, execute, set_arrays, set_keys
from uqx.sweeps.engine import Study

__all__ = ["bins", "define", "summarise", "fit_min_002"]

NAME = "bins"
DISTS = (("normal", None), ("t", 6.0))
DIST_LABELS = ["N", "T6"]


def fit_min_002(name: str) -> dict:
    """Smallest fitted N per statistic in paper 002 for a set name.

    Methods page, Zero-bin extrapolation.

    QM9: ENCE on √N > 4 (N >= 20), ZVE on all points; Diffusion: √N > 4; Perovskite:
    √N > 2 (N >= 5); other sets: all points.
    """
    low = name.lower()
    if "qm9" in low:
        return {"ence_sd": 20, "zve": 1}
    if "diffusion" in low:
        return {"ence_sd": 20, "zve": 20}
    if "perovskite" in low:
        return {"ence_sd": 5, "zve": 5}
    return {"ence_sd": 1, "zve": 1}


def _settings(preset, name, fit_min):
    base = PRESETS[preset]
    if preset == "002":
        per_stat = fit_min_002(name)
    else:
        per_stat = {s: base.fit_min_bins for s in base.stats}
    if fit_min is not None:
        per_stat = {s: int(fit_min) for s in base.stats}
    groups: dict = {}
    for s in base.stats:
        groups.setdefault(per_stat[s], []).append(s)
    return base, [SweepSettings(base.n_bins, base.min_per_bin, base.pop_min, f,
                                base.abscissa, tuple(st)) for f, st in groups.items()]


def kernel(cell, block, n, params, data):
    """Extrapolation of one set (deterministic fit; null from keyed calibrated copies)."""
    E, u = data
    name = cell["set"]
    base, groups = _settings(params["preset"], name, params["fit_min"])
    grid = list(base.n_bins)
    S, K, D = len(base.stats), len(grid), len(DISTS)
    out = {"value": np.full((S, K), np.nan), "fitted": np.zeros((S, K), dtype=bool),
           "null_low": np.full((S, D), np.nan), "null_high": np.full((S, D), np.nan)}
    for k in ("intercept", "intercept_se", "slope", "slope_se", "ideal"):
        out[k] = np.full(S, np.nan)
    out["papers_valid"] = np.zeros(S, dtype=bool)
    out["verdict"] = np.array(["not tested"] * S, dtype="<U16")
    out["M"] = np.array(E.size)  # the abscissa sqrt(N/M) of the figures needs it
    for st in groups:
        r = extrapolate(E, u, preset=st, n_mc=params["n_mc"], seed=params["seed"],
                        key=content_key(E, u), dists=DISTS)
        cols = [grid.index(int(v)) for v in r["n_bins"]]
        for j, s in enumerate(r["stats"]):
            i = list(base.stats).index(s)
            out["value"][i, cols] = r["values"][:, j]
            out["fitted"][i, cols] = r["fitted"]
            for k in ("intercept", "intercept_se", "slope", "slope_se", "ideal",
                      "papers_valid"):
                out[k][i] = r[k][j]
            out["verdict"][i] = r["verdict"][j]
            out["null_low"][i], out["null_high"][i] = r["null_low"][j], r["null_high"][j]
    return {k: v[None] for k, v in out.items()}


def define(ds=None, *, preset="app-c", n_mc=200, fit_min=None, seed=0) -> Study:
    """Check the options and build the study; ``ds``: data set(s), default the nine sets."""
    if preset not in PRESETS:
        raise InputError(f"unknown preset {preset!r}; choose one of {', '.join(PRESETS)}")
    n_mc = int(n_mc) if isinstance(n_mc, (int, np.integer)) else n_mc
    if n_mc != 0:
        n_mc = check_int(n_mc, "n_mc", minimum=2)
    arrays = set_arrays(ds, default=load_paper_sets)
    for name, (E, _) in arrays.items():
        try:
            bin_numbers(E.size, PRESETS[preset])
        except InputError as exc:
            raise InputError(f"set {name!r}: {exc}") from None
    params = dict(preset=preset, n_mc=n_mc, fit_min=fit_min, seed=resolve_seed(seed),
                  sets=set_keys(arrays))
    base = PRESETS[preset]
    return Study(
        name=NAME, axes={"set": list(arrays)}, n_rep=1, block=1, kernel=kernel,
        variables={"value": ("stat", "N"), "fitted": ("stat", "N"), "intercept": ("stat",),
                   "intercept_se": ("stat",), "slope": ("stat",), "slope_se": ("stat",),
                   "ideal": ("stat",), "papers_valid": ("stat",), "verdict": ("stat",),
                   "null_low": ("stat", "dist"), "null_high": ("stat", "dist"), "M": ()},
        extra_coords={"stat": list(base.stats), "N": list(base.n_bins),
                      "dist": DIST_LABELS},
        params=params, data=arrays, cell_data=cell_set, replicate_dim=False,
    )


def summarise(raw: xr.Dataset) -> xr.Dataset:
    """Add the intercept's 95 % interval from the papers' ±2·SE (reported, not trusted)."""
    out = raw.copy()
    out["papers_low"] = raw["intercept"] - 2 * raw["intercept_se"]
    out["papers_high"] = raw["intercept"] + 2 * raw["intercept_se"]
    STUDIES[NAME].annotate(out)
    return out


def bins(ds=None, *, output=None, chunk_size=None, scheduler=None, num_workers=None,
         resume=False, keep_run=False, quiet=True, mkdir=False, _stop_after=None,
         **options):
    """Binned statistics against N and zero-bin extrapolation of each set.

    Parameters
    ----------
    ds : xarray.Dataset, optional
        Data set(s) (one or stacked); default the nine literature sets.
    **options
        ``preset`` ("app-c" or "002"), ``n_mc`` (null copies per distribution, 0: no
        verdict), ``fit_min`` (override the smallest fitted N), ``seed``.

    Returns
    -------
    xarray.Dataset
        ``value`` over (set, stat, N); ``intercept``, ``intercept_se``, ``slope``,
        ``slope_se``, ``verdict``, ``papers_valid`` over (set, stat); ``null_low``,
        ``null_high`` over (set, stat, dist).
    """
    study = define(ds, **options)
    base = PRESETS[study.params["preset"]]
    attrs = {"preset": study.params["preset"], "abscissa": base.abscissa,
             "pop_min": base.pop_min, "min_per_bin": base.min_per_bin,
             "n_mc": study.params["n_mc"],
             "reference": "Pernot 000 App. C (Fig. A3), 002 Table I"}
    return execute(study, summarise, output=output, chunk_size=chunk_size,
                   scheduler=scheduler, num_workers=num_workers, resume=resume,
                   keep_run=keep_run, quiet=quiet, mkdir=mkdir, attrs=attrs,
                   _stop_after=_stop_after)
