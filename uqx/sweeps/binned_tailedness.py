r"""``binned-tailedness``: β_GM and κ_CS of u², E², Z² per equal-count uE bin (001 Fig. 8).

Per data set (methods page, Tailedness): stable sort by uE, equal-count bins ``genIntervals(1:M,
20)`` with popMin 30 (:func:`uqx.engine.binning.make_bins`), and in each bin the Harrell-Davis
based β_GM and κ_CS of u², E² and Z² (:func:`uqx.engine.stats.tailedness.tailedness`), next to
the full-set values. Deterministic; one task per set.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.datasets import load_paper_sets
from uqx.dataio.schema import STUDIES
from uqx.engine.binning import make_bins, reduce_n_bins
from uqx.engine.defaults import N_BINS, POP_MIN
from uqx.engine.stats.tailedness import tailedness
from uqx.errors import InputError
from uqx.sweeps._common import cell_set, check_int, execute, set_arrays, set_keys
from uqx.sweeps.engine import Study

__all__ = ["binned_tailedness", "define", "summarise"]

NAME = "binned-tailedness"
VARS = ("u2", "e2", "z2")
#: Safety limits (001 Table II): beta_GM, kappa_CS of u2, then of E2 and Z2.
LIMITS = {"beta_gm": (0.6, 0.8, 0.8), "kappa_cs": (3.0, 5.0, 5.0)}


def kernel(cell, block, n, params, data):
    """Per-bin and full-set tailedness of one set."""
    E, u = data
    nb = params["n_bins"]
    b = make_bins(u, nb, scheme="equal-count", pop_min=params["pop_min"])
    out = {"beta_gm": np.full((len(VARS), nb), np.nan),
           "kappa_cs": np.full((len(VARS), nb), np.nan),
           "bin_count": np.zeros(nb, dtype=np.int64)}
    for j in range(b.n_bins):
        idx = b.order[b.edges[j] : b.edges[j + 1]]
        t = tailedness(E[idx], u[idx])
        out["bin_count"][j] = idx.size
        for i, v in enumerate(VARS):
            out["beta_gm"][i, j] = float(t[f"beta_gm_{v}"])
            out["kappa_cs"][i, j] = float(t[f"kappa_cs_{v}"])
    t = tailedness(E, u)
    out["beta_gm_full"] = np.array([float(t[f"beta_gm_{v}"]) for v in VARS])
    out["kappa_cs_full"] = np.array([float(t[f"kappa_cs_{v}"]) for v in VARS])
    return {k: v[None] for k, v in out.items()}


def define(ds=None, *, n_bins=N_BINS, pop_min=POP_MIN, seed=0):
    """Check the options and build the study; ``ds`` default: the nine literature sets."""
    n_bins = check_int(n_bins, "n_bins", minimum=1)
    pop_min = check_int(pop_min, "pop_min", minimum=2)
    arrays = set_arrays(ds, default=load_paper_sets)
    for name, (E, _) in arrays.items():
        if E.size < 2 * pop_min:
            raise InputError(f"set {name!r}: M = {E.size} is below the bin minimum "
                             f"(at least one bin of pop_min = {pop_min} points)")
        reduce_n_bins(E.size, n_bins, pop_min=pop_min)
    params = dict(n_bins=n_bins, pop_min=pop_min, seed=int(seed), sets=set_keys(arrays))
    return Study(
        name=NAME, axes={"set": list(arrays)}, n_rep=1, block=1, kernel=kernel,
        variables={"beta_gm": ("var", "bin"), "kappa_cs": ("var", "bin"),
                   "bin_count": ("bin",), "beta_gm_full": ("var",),
                   "kappa_cs_full": ("var",)},
        extra_coords={"var": list(VARS), "bin": list(range(n_bins))},
        params=params, data=arrays, cell_data=cell_set, replicate_dim=False,
    )


def summarise(raw: xr.Dataset) -> xr.Dataset:
    """Add the safety limits and the fraction of bins beyond them."""
    out = raw.copy()
    for k, lim in LIMITS.items():
        out[f"{k}_limit"] = ("var", np.array(lim))
        over = (raw[k] > out[f"{k}_limit"]).where(raw[k].notnull())
        out[f"{k}_frac_unsafe"] = over.mean("bin", skipna=True)
    STUDIES[NAME].annotate(out)
    return out


def binned_tailedness(ds=None, *, output=None, chunk_size=None, scheduler=None,
                      num_workers=None, resume=False, keep_run=False, quiet=True,
                      mkdir=False, _stop_after=None, **options) -> xr.Dataset:
    """Per-bin tailedness of each set (001 Fig. 8); return (and write) the archive.

    Returns
    -------
    xarray.Dataset
        ``beta_gm``, ``kappa_cs`` over (set, var, bin) with var in u2, e2, z2 (NaN for
        bins removed by the popMin reduction); ``beta_gm_full``, ``kappa_cs_full`` over
        (set, var); ``bin_count`` over (set, bin).
    """
    study = define(ds, **options)
    attrs = {"n_bins": study.params["n_bins"], "pop_min": study.params["pop_min"],
             "reference": "Pernot 001 Fig. 8 (methods page, Tailedness)"}
    return execute(study, summarise, output=output, chunk_size=chunk_size,
                   scheduler=scheduler, num_workers=num_workers, resume=resume,
                   keep_run=keep_run, quiet=quiet, mkdir=mkdir, attrs=attrs,
                   _stop_after=_stop_after)
