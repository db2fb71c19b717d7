r"""``decimation``: ΔRCE and ΔZMS after removing the largest uncertainties (001 Fig. 7).

Per data set (methods page, Curves): sort by (u decreasing, E decreasing; stable), and for
:math:`k_i = 0.1\,i` %, i = 0..100 (float64, as R's ``seq``), remove the first
:math:`\lfloor k M/100 \rfloor` rows; :math:`\Delta_{RCE}(k) = RCE_k - RCE_0`,
:math:`\Delta_{ZMS}(k) = ZMS_k - ZMS_0`. The bars are the zero-centred BCa intervals of
the **full** set, :math:`[lo - \theta, hi - \theta]` (the text of 001 and paper 004;
methods page, Where a paper and its code disagree), from ``n_boot`` nptest BCa
replicates keyed by the data content.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.datasets import load_paper_sets
from uqx.dataio.schema import STUDIES
from uqx.engine.defaults import LEVEL
from uqx.engine.resample import content_key, resolve_seed
from uqx.engine.statistic import STATISTICS, moment_sums
from uqx.errors import InputError
from uqx.sweeps._common import (
    cell_set,
    check_int,
    execute,
    set_arrays,
    set_keys,
    zms_rce_bca,
)
from uqx.sweeps.engine import Study

__all__ = ["decimation", "define", "summarise", "percentages"]

NAME = "decimation"
STATS = ("rce", "zms")


def percentages(k_max=10.0, k_step=0.1) -> np.ndarray:
    """Percentages removed: ``i * k_step`` for i = 0 .. k_max/k_step (as R's ``seq``)."""
    n = int(round(k_max / k_step))
    return np.arange(n + 1) * float(k_step)


def _zms_rce(E, u):
    S = moment_sums(E, u)[None, :]
    return [float(STATISTICS[s].finish(S, E.size)[0]) for s in STATS]


def kernel(cell, block, n, params, data):
    """Decimation curve and full-set BCa bars of one set."""
    E, u = data
    order = np.lexsort((-E, -u))  # u decreasing, ties by E decreasing, stable
    Es, us = E[order], u[order]
    ks = percentages(params["k_max"], params["k_step"])
    n_rm = np.floor(ks * E.size / 100.0).astype(np.int64)
    vals = np.array([_zms_rce(Es[r:], us[r:]) for r in n_rm])
    delta = vals - vals[0]
    bca = zms_rce_bca(E, u, n_boot=params["n_boot"], seed=params["seed"],
                      key=(NAME, content_key(E, u)), level=params["level"])
    # bca arrays are (zms, rce); reorder to STATS
    idx = [1, 0]
    est, lo, hi = (bca[k][idx] for k in ("estimate", "ci_low", "ci_high"))
    out = {"delta": delta, "value": vals, "n_removed": n_rm, "estimate": est,
           "ci_low": lo, "ci_high": hi, "bar_low": lo - est, "bar_high": hi - est}
    return {k: np.asarray(v)[None] for k, v in out.items()}


def define(ds=None, *, n_boot=5000, k_max=10.0, k_step=0.1, level=LEVEL, seed=0):
    """Check the options and build the study; ``ds`` default: the nine literature sets."""
    n_boot = check_int(n_boot, "n_boot", minimum=2)
    if not (0 < float(k_step) and 0 <= float(k_max) < 100):
        raise InputError(f"need k_step > 0 and 0 <= k_max < 100, got {k_step}, {k_max}")
    arrays = set_arrays(ds, default=load_paper_sets)
    params = dict(n_boot=n_boot, k_max=float(k_max), k_step=float(k_step),
                  level=float(level), seed=resolve_seed(seed), sets=set_keys(arrays))
    ks = percentages(k_max, k_step)
    return Study(
        name=NAME, axes={"set": list(arrays)}, n_rep=1, block=1, kernel=kernel,
        variables={"delta": ("k", "stat"), "value": ("k", "stat"), "n_removed": ("k",),
                   "estimate": ("stat",), "ci_low": ("stat",), "ci_high": ("stat",),
                   "bar_low": ("stat",), "bar_high": ("stat",)},
        extra_coords={"k": list(ks), "stat": list(STATS)},
        params=params, data=arrays, cell_data=cell_set, replicate_dim=False,
    )


def summarise(raw: xr.Dataset) -> xr.Dataset:
    """Flag the percentages where ΔRCE or ΔZMS leaves the full-set bar."""
    out = raw.copy()
    out["outside_bar"] = (raw["delta"] < raw["bar_low"]) | (raw["delta"] > raw["bar_high"])
    STUDIES[NAME].annotate(out)
    return out


def decimation(ds=None, *, output=None, chunk_size=None, scheduler=None, num_workers=None,
               resume=False, keep_run=False, quiet=True, mkdir=False, _stop_after=None,
               **options) -> xr.Dataset:
    """Decimation study of each set (001 Fig. 7); return (and write) the archive.

    Returns
    -------
    xarray.Dataset
        ``delta``, ``value`` over (set, k, stat) with stat in rce, zms; ``n_removed``
        over (set, k); ``estimate``, ``ci_low``, ``ci_high``, ``bar_low``, ``bar_high``
        over (set, stat).
    """
    study = define(ds, **options)
    p = study.params
    attrs = {"n_boot": p["n_boot"], "level": p["level"], "k_max": p["k_max"],
             "k_step": p["k_step"], "bars": "full-set BCa intervals (001 text, 004)",
             "reference": "Pernot 001 Fig. 7"}
    return execute(study, summarise, output=output, chunk_size=chunk_size,
                   scheduler=scheduler, num_workers=num_workers, resume=resume,
                   keep_run=keep_run, quiet=quiet, mkdir=mkdir, attrs=attrs,
                   _stop_after=_stop_after)
