r"""``reference-sensitivity``: simulated references against the tail of D (000 Fig. 7).

For each data set and :math:`\nu`, the references :math:`\tilde\theta_{\nu,ref} \pm u` of
ZMS, CC, ENCE and ZMSE for :math:`E = u\,\epsilon`, :math:`\epsilon \sim t_s(\nu)`, with
the actual uncertainties of the set (:func:`uqx.inference.reference.simulate_reference`, N_MC
draws, 50 equal-count bins as in 000 Figs. 6-7). The paper shows Sets 7 and 8 for
ν ∈ {3, 4, 5, 7, 10, 15, 20}. One task per (set, ν); the draws are keyed by the data
content and ν, so the result does not depend on the tasks.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.datasets import load_dataset
from uqx.dataio.model import from_arrays, stack
from uqx.dataio.schema import STUDIES
from uqx.engine.defaults import N_MC
from uqx.engine.resample import resolve_seed
from uqx.engine.statistic import parse_stat
from uqx.inference.reference import simulate_reference
from uqx.sweeps._common import check_axis, check_int, execute, set_arrays, set_keys
from uqx.sweeps.engine import Study

__all__ = ["reference_sensitivity", "define", "summarise", "DEFAULT_NU", "DEFAULT_SETS"]

NAME = "reference-sensitivity"
DEFAULT_NU = (3, 4, 5, 7, 10, 15, 20)
#: 000 Fig. 7: Sets 7 and 8.
DEFAULT_SETS = ("QM9_E", "logP_10k_a_LS-GCN")
STATS = ("zms", "cc", "ence", "zmse")


def kernel(cell, block, n, params, data):
    """Compute the simulated references (and the draws) of one (set, ν)."""
    E, u = data
    res = simulate_reference(from_arrays(E, u, name=cell["set"]), params["stats"],
                             dist="t", nu=float(cell["nu"]), n_mc=params["n_mc"],
                             seed=params["seed"], bins=params["bins"], keep_draws=True,
                             scheduler="sync")
    out = {k: res[k].values[0] for k in ("reference", "reference_se", "sim2_low",
                                         "sim2_high")}
    out["draws"] = res["draws"].values[0]
    return {k: np.asarray(v)[None] for k, v in out.items()}


def _default_sets():
    return stack([load_dataset(n) for n in DEFAULT_SETS])


def _cell_set(cell, data):
    return data[cell["set"]]


def define(ds=None, *, nu=DEFAULT_NU, n_mc=N_MC, bins=50, stats=STATS, seed=0):
    """Check the options and build the study; ``ds`` default: Sets 7 and 8."""
    nus = check_axis(nu, "nu", minimum=2, strict=True)
    n_mc = check_int(n_mc, "n_mc", minimum=2)
    bins = check_int(bins, "bins", minimum=1)
    stats = [parse_stat(s).name for s in stats]
    arrays = set_arrays(ds, default=_default_sets)
    params = dict(nu=nus, n_mc=n_mc, bins=bins, stats=stats, seed=resolve_seed(seed),
                  sets=set_keys(arrays))
    return Study(
        name=NAME, axes={"set": list(arrays), "nu": nus}, n_rep=1, block=1, kernel=kernel,
        variables={"reference": ("stat",), "reference_se": ("stat",),
                   "sim2_low": ("stat",), "sim2_high": ("stat",), "draws": ("stat", "mc")},
        extra_coords={"stat": stats, "mc": list(range(n_mc))},
        params=params, data=arrays, cell_data=_cell_set, replicate_dim=False,
    )


def summarise(raw: xr.Dataset) -> xr.Dataset:
    """Add the difference to the largest-ν reference in units of the combined MC error."""
    out = raw.copy()
    last = raw.isel(nu=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["z_vs_last_nu"] = (raw["reference"] - last["reference"]) / np.sqrt(
            raw["reference_se"] ** 2 + last["reference_se"] ** 2)
    STUDIES[NAME].annotate(out)
    return out


def reference_sensitivity(ds=None, *, output=None, chunk_size=None, scheduler=None,
                          num_workers=None, resume=False, keep_run=False, quiet=True,
                          mkdir=False, _stop_after=None, **options) -> xr.Dataset:
    """Simulate references against ν of t_s (000 Fig. 7); return (and write) the archive.

    Returns
    -------
    xarray.Dataset
        ``reference``, ``reference_se``, ``sim2_low``, ``sim2_high`` over (set, nu,
        stat); ``draws`` over (set, nu, stat, mc).
    """
    study = define(ds, **options)
    p = study.params
    attrs = {"n_mc": p["n_mc"], "bins": p["bins"], "dist": "t_s(nu)",
             "reference": "Pernot 000 Fig. 7"}
    return execute(study, summarise, output=output, chunk_size=chunk_size,
                   scheduler=scheduler, num_workers=num_workers, resume=resume,
                   keep_run=keep_run, quiet=quiet, mkdir=mkdir, attrs=attrs,
                   _stop_after=_stop_after)
