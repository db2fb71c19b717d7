r"""``pval``: validation probability of ZMS and RCE on calibrated data (001 Fig. 4).

Per grid point, ``n_datasets`` (1000) calibrated synthetic sets of M = 5000:

* NIG (left panel): :math:`u^2 \sim \Gamma^{-1}(\nu/2, \nu/2)`, :math:`E = u\,N(0,1)`,
  ν_IG ∈ {2, 3, ..., 10, 15, 20} (:func:`uqx.dataio.synth.nig`, ``testValidRCE.R``);
* TIG (right panel): one draw :math:`u^2 \sim \Gamma^{-1}(3, 3)` reused for every ν_D and
  data set (:func:`uqx.dataio.synth.tig_uncertainties`), :math:`E = u\,t_s(\nu_D)`,
  ν_D ∈ {2.5, 3, 4, ..., 10, 20} (:func:`uqx.dataio.synth.tig`, ``testValidRCE2.R``).

Each set gets the nptest BCa intervals of (ZMS, RCE) with ``n_boot`` (5000) replicates
(:func:`uqx.sweeps._common.zms_rce_bca`); ``valid = lo <= ref <= hi`` (inclusive,
methods page, ζ-scores) with ref = 1 (ZMS) and 0 (RCE); :math:`p_{val}` = fraction valid with
the Wilson interval with continuity correction (:func:`uqx.inference.zeta.binomial_ci`,
methods page, ζ-scores), and the mean β_GM / κ_CS of u² and E² of the sets (upper axes). Every
data set has its own stream (keyed by scenario, ν and its index), so blocks of
:data:`BLOCK` sets and the tasks that group them never change the numbers.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.schema import STUDIES
from uqx.dataio.synth import nig, tig, tig_uncertainties
from uqx.engine.defaults import LEVEL
from uqx.engine.resample import resolve_seed
from uqx.engine.stats.tailedness import tailedness
from uqx.errors import InputError
from uqx.sweeps._common import check_axis, check_int, execute, rate_interval, zms_rce_bca
from uqx.sweeps.engine import Study

__all__ = ["pval", "define", "summarise", "GRIDS", "BLOCK"]

NAME = "pval"
BLOCK = 20
#: Grids of the reference code (001 Fig. 4).
GRIDS = {
    "NIG": (2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20),
    "TIG": (2.5, 3, 4, 5, 6, 7, 8, 9, 10, 20),
}
STATS = ("zms", "rce")
REFERENCE = (1.0, 0.0)
TAIL = ("beta_gm_u2", "kappa_cs_u2", "beta_gm_e2", "kappa_cs_e2")


def _dataset(scenario, nu, i, params):
    M, seed = params["M"], params["seed"]
    if scenario == "NIG":
        return nig(M, nu, seed=seed, key=(NAME, "NIG", i), ig_shape="half-nu")
    u = tig_uncertainties(M, nu_ig=params["nu_ig_tig"], seed=seed, key=(NAME, "TIG-u"))
    return tig(M, nu, uE=u, seed=seed, key=(NAME, "TIG", i))


def kernel(cell, block, n, params, data):
    """Verdicts, estimates, BCa limits and tailedness of ``n`` sets of one (scenario, ν)."""
    scenario, nu = cell["scenario"], float(cell["nu"])
    out = {k: np.full((n, len(STATS)), np.nan) for k in
           ("valid", "estimate", "ci_low", "ci_high")}
    out.update({k: np.full(n, np.nan) for k in TAIL})
    if nu not in params["nu"][scenario]:  # (scenario, nu) outside that scenario's grid
        return out
    ref = np.array(REFERENCE)
    for r in range(n):
        i = block * BLOCK + r
        E, u = _dataset(scenario, nu, i, params)
        bca = zms_rce_bca(E, u, n_boot=params["n_boot"], seed=params["seed"],
                          key=(NAME, scenario, nu, i), level=params["level"])
        lo, hi = bca["ci_low"], bca["ci_high"]
        # NaN limits (degenerate BCa) count as not valid
        out["valid"][r] = ((lo <= ref) & (ref <= hi)).astype(np.float64)
        out["estimate"][r], out["ci_low"][r], out["ci_high"][r] = bca["estimate"], lo, hi
        t = tailedness(E, u)
        for k in TAIL:
            out[k][r] = float(t[k])
    return out


def define(*, scenario=("NIG", "TIG"), nu=None, n_datasets=1000, M=5000, n_boot=5000,
           level=LEVEL, nu_ig_tig=6.0, seed=0) -> Study:
    """Check the options and build the study (``nu``: dict by scenario, or one list)."""
    scen = [scenario] if isinstance(scenario, str) else list(scenario)
    if not scen:
        raise InputError("no scenario given: choose NIG and/or TIG")
    bad = [s for s in scen if s not in GRIDS]
    if bad:
        raise InputError(f"unknown scenario(s) {bad}; choose NIG and/or TIG")
    if nu is None:
        grids = {s: list(map(float, GRIDS[s])) for s in scen}
    elif isinstance(nu, dict):
        grids = {s: check_axis(nu.get(s, GRIDS[s]), f"nu ({s})") for s in scen}
    else:
        grids = {s: check_axis(nu, f"nu ({s})") for s in scen}
    for s, g in grids.items():
        low = [v for v in g if v <= (2 if s == "TIG" else 0)]
        if low:
            what = ("nu_D must be > 2 for the unit-variance t_s" if s == "TIG"
                    else "nu_IG must be > 0")
            raise InputError(f"{s}: {what}, got {low}")
    n_datasets = check_int(n_datasets, "n_datasets", minimum=2)
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    M = check_int(M, "M", minimum=10)
    if not 0 < level < 1:
        raise InputError(f"level must be in (0, 1), got {level}")
    params = dict(scenario=scen, nu=grids, n_datasets=n_datasets, M=M, n_boot=n_boot,
                  level=float(level), nu_ig_tig=float(nu_ig_tig), seed=resolve_seed(seed))
    all_nu = sorted({v for g in grids.values() for v in g})
    return Study(
        name=NAME, axes={"scenario": scen, "nu": all_nu}, n_rep=n_datasets, block=BLOCK,
        kernel=kernel,
        variables={"valid": ("stat",), "estimate": ("stat",), "ci_low": ("stat",),
                   "ci_high": ("stat",), **{k: () for k in TAIL}},
        extra_coords={"stat": list(STATS)}, params=params,
    )


def summarise(raw: xr.Dataset) -> xr.Dataset:
    """Add p_val with its Wilson-cc interval and the mean tailedness of each point."""
    ds = raw.transpose("scenario", "nu", "replicate", "stat")
    out = ds.copy()
    nv = ds["valid"].notnull().sum("replicate").values
    p, lo, hi = rate_interval(ds["valid"].sum("replicate", skipna=True).values, nv)
    dims = ("scenario", "nu", "stat")
    out["p_val"] = (dims, p)
    out["p_val_low"] = (dims, lo)
    out["p_val_high"] = (dims, hi)
    out["p_val_se"] = (dims, np.sqrt(p * (1 - p) / np.maximum(nv, 1)))
    out["n_datasets"] = (dims, nv.astype(np.int64))
    for k in TAIL:
        out[f"{k}_mean"] = ds[k].mean("replicate", skipna=True)
    STUDIES[NAME].annotate(out)
    return out


def pval(*, output=None, chunk_size=None, scheduler=None, num_workers=None, resume=False,
         keep_run=False, quiet=True, mkdir=False, _stop_after=None, **options):
    """Run the 001 Fig. 4 validation-probability study; return (and write) the archive.

    Parameters
    ----------
    **options
        :func:`define`: ``scenario`` ("NIG", "TIG" or both), ``nu``, ``n_datasets``
        (1000), ``M`` (5000), ``n_boot`` (5000; the papers' tables use 10^4), ``level``,
        ``seed``. Execution options as :func:`uqx.sweeps.appendix_b.appendix_b`.

    Returns
    -------
    xarray.Dataset
        ``valid``, ``estimate``, ``ci_low``, ``ci_high`` over (scenario, nu, replicate,
        stat); ``p_val``, ``p_val_low``, ``p_val_high``, ``p_val_se`` over (scenario, nu,
        stat); tailedness per set and their means. Points outside a scenario's grid are
        NaN.
    """
    study = define(**options)
    p = study.params
    attrs = {"n_boot": p["n_boot"], "M": p["M"], "level": p["level"],
             "ig_shape": "half-nu", "interval": "nptest BCa",
             "p_val_interval": "Wilson with continuity correction",
             "reference": "Pernot 001 Fig. 4 (testValidRCE.R, testValidRCE2.R)"}
    return execute(study, summarise, output=output, chunk_size=chunk_size,
                   scheduler=scheduler, num_workers=num_workers, resume=resume,
                   keep_run=keep_run, quiet=quiet, mkdir=mkdir, attrs=attrs,
                   _stop_after=_stop_after)
