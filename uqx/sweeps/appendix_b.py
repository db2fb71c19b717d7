r"""``appendix-b``: simulated ENCE and ZMSE of calibrated data (000 App. B, Figs. A1-A2).

Grid M x nu x N, models NIG (:math:`E = u\,N(0,1)`) and T6IG (:math:`E = u\,t_s(6)`),
:math:`u^2 \sim \Gamma^{-1}(a, a)` with a = ν (``ig_shape="nu"``, the reference code
``rinvgamma(M, nu, nu)``, default) or a = ν/2 (``"half-nu"``, the paper's text; methods
page, Synthetic data and Where a paper and its code disagree). u is sorted before E is
drawn (``testENCE.R``), so the equal-count bins ``genIntervals(1:M, N)`` (popMin 30) are
index intervals of the sorted order.

One data set serves every N of its (M, ν, replicate): ε is drawn, binned for every N
and summed in one pass without storing E (:func:`uqx.inference.extrapolate.null.sweep_copies`: the
running sums are recorded at the union of the bin edges), and one draw of u serves both
models (the ε streams are keyed by model): a task is one (M, ν) cell and a group of
fixed blocks of :data:`BLOCK` replicates. Streams (xoshiro256**, :mod:`uqx.engine.generators`,
replicate after replicate): u from ``seed_sequence(seed, "appendix-b", "u", ig_shape,
M, ν, block)`` (Marsaglia–Tsang gamma, :math:`u^2 = a/\Gamma(a)`), ε from
``seed_sequence(seed, "appendix-b", "eps", model, ig_shape, M, ν, block)`` (ziggurat
normal, :math:`t_s(6)`).

Summaries: per cell the mean and :math:`s/\sqrt{N_{MC}}` of ENCE (RMSE convention) and
ZMSE, and per model and statistic the OLS fit ``lm(mean ~ sqrt(N/M))`` with intercept
over all cells (:func:`uqx.inference.extrapolate.binsweep.ols_fit`); the paper reports NIG ENCE ≈
0.56x, ZMSE ≈ 1.14x, T6IG ENCE ≈ 0.004 + 0.779x, ZMSE ≈ 0.006 + 1.577x.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx.dataio.schema import STUDIES
from uqx.engine.generators import fill
from uqx.engine.resample import resolve_seed, seed_sequence
from uqx.errors import InputError
from uqx.inference.extrapolate.binsweep import ols_fit
from uqx.inference.extrapolate.null import sweep_copies
from uqx.sweeps._common import check_axis, check_int, execute, mean_se
from uqx.sweeps.engine import Study

__all__ = ["appendix_b", "define", "summarise", "DEFAULTS", "BLOCK", "MODELS"]

NAME = "appendix-b"
#: Replicates per fixed block (part of the stream definition).
BLOCK = 100
#: Models: generative distribution of ε.
MODELS = {"NIG": ("normal", None), "T6IG": ("t", 6.0)}
#: Grid and size of the paper (000 App. B).
DEFAULTS = dict(
    models=("NIG", "T6IG"),
    M=(2000, 4000, 8000, 12000, 16000),
    N=(10, 20, 30, 40, 50),
    nu=(3, 4, 5, 6, 12, 24),
    n_mc=5000,
    ig_shape="nu",
    pop_min=30,
)
STATS = ("ence", "zmse")


def kernel(cell, block, n, params, data):
    """ENCE and ZMSE of ``n`` calibrated data sets of one (M, ν) cell, every model and N.

    Returns ``{"ence": (n, models, N), "zmse": (n, models, N)}``.
    """
    M, nu = int(cell["M"]), float(cell["nu"])
    shape = params["ig_shape"]
    seed = params["seed"]
    a = nu if shape == "nu" else nu / 2.0
    # u^2 ~ IG(a, a) = a / Gamma(a, 1); sorted before E (testENCE.R)
    g = fill(seed_sequence(seed, NAME, "u", shape, M, nu, block), np.empty((n, M)), "gamma",
             shape=a)
    us = np.sqrt(np.divide(a, g, out=g), out=g)
    us.sort(axis=-1)  # in place
    models, n_bins = params["models"], params["N"]
    out = np.empty((n, len(models), len(n_bins), len(STATS)))
    for k, model in enumerate(models):
        dist, dnu = MODELS[model]
        ss = seed_sequence(seed, NAME, "eps", model, shape, M, nu, block)
        # E = u ε drawn, binned for every N and summed in one pass (no E stored)
        out[:, k] = sweep_copies(ss, us, n_bins, dist=dist, nu=dnu,
                                 pop_min=params["pop_min"])[..., :2]
    return {"ence": out[..., 0], "zmse": out[..., 1]}


def define(*, models=DEFAULTS["models"], M=DEFAULTS["M"], N=DEFAULTS["N"],
           nu=DEFAULTS["nu"], n_mc=DEFAULTS["n_mc"], ig_shape=DEFAULTS["ig_shape"],
           pop_min=DEFAULTS["pop_min"], seed=0) -> Study:
    """Check the options and build the :class:`~uqx.sweeps.engine.Study` (no computation)."""
    models = list(models if not isinstance(models, str) else [models])
    if not models:
        raise InputError("grid axis 'models' is empty: give NIG and/or T6IG")
    bad = [m for m in models if m not in MODELS]
    if bad:
        raise InputError(f"unknown model(s) {bad}; choose among {', '.join(MODELS)}")
    if len(set(models)) != len(models):
        raise InputError(f"grid axis 'models' holds repeated values: {models}")
    Ms = check_axis(M, "M", kind=int, minimum=2)
    Ns = check_axis(N, "N", kind=int, minimum=1)
    nus = check_axis(nu, "nu", kind=float, minimum=0, strict=True)
    n_mc = check_int(n_mc, "n_mc", minimum=2)
    pop_min = check_int(pop_min, "pop_min", minimum=1)
    if ig_shape not in ("nu", "half-nu"):
        raise InputError(f"ig_shape must be 'nu' or 'half-nu', got {ig_shape!r}")
    small = [m for m in Ms if m < pop_min * max(Ns)]
    if small:
        raise InputError(
            f"M = {small} is below the bin minimum: {max(Ns)} bins of at least "
            f"pop_min = {pop_min} points need M >= {pop_min * max(Ns)}"
        )
    seed = resolve_seed(seed)
    params = dict(models=models, M=Ms, N=Ns, nu=nus, n_mc=n_mc, ig_shape=ig_shape,
                  pop_min=pop_min, seed=seed)
    return Study(
        name=NAME, axes={"M": Ms, "nu": nus}, n_rep=n_mc, block=BLOCK, kernel=kernel,
        variables={"ence": ("model", "N"), "zmse": ("model", "N")},
        extra_coords={"model": models, "N": Ns}, params=params,
    )


def summarise(raw: xr.Dataset) -> xr.Dataset:
    """Add per-cell means, standard errors and the per-model fits against √(N/M)."""
    ds = raw.transpose("model", "M", "N", "nu", "replicate")
    out = ds.copy()
    means = []
    for st in STATS:
        m, se = mean_se(ds[st])
        out[f"{st}_mean"], out[f"{st}_se"] = m, se
        means.append(m)
    y = xr.concat(means, dim=xr.DataArray(list(STATS), dims="stat", name="stat"))
    x = np.sqrt(ds["N"] / ds["M"]).broadcast_like(y.isel(stat=0, model=0))
    yv = y.transpose("model", "stat", "M", "N", "nu").values.reshape(
        y.sizes["model"], y.sizes["stat"], -1)
    xv = x.transpose("M", "N", "nu").values.reshape(-1)
    fit = ols_fit(np.broadcast_to(xv, yv.shape), yv) if xv.size >= 3 else [
        np.full(yv.shape[:2], np.nan)] * 4
    for name, v in zip(("intercept", "intercept_se", "slope", "slope_se"), fit, strict=True):
        out[name] = (("model", "stat"), np.asarray(v))
    STUDIES[NAME].annotate(out)
    return out.assign_coords(stat=list(STATS))


def appendix_b(*, output=None, chunk_size=None, scheduler=None, num_workers=None,
               resume=False, keep_run=False, quiet=True, mkdir=False, _stop_after=None,
               **options) -> xr.Dataset:
    """Run the 000 App. B study (Figs. A1-A2) and return (and optionally write) the archive.

    Parameters
    ----------
    output : path, optional
        NetCDF archive, written atomically; finished blocks go to ``OUT.nc.run``.
    chunk_size, scheduler, num_workers, resume, keep_run, quiet :
        See :func:`uqx.sweeps.engine.run_sweep` and :func:`uqx.sweeps._common.execute`.
    **options
        Grid and size (:func:`define`): ``models``, ``M``, ``N``, ``nu``, ``n_mc``,
        ``ig_shape`` ("nu" default, or "half-nu"), ``pop_min``, ``seed``.

    Returns
    -------
    xarray.Dataset
        ``ence``, ``zmse`` over (model, M, N, nu, replicate); ``*_mean``, ``*_se`` over
        (model, M, N, nu); ``intercept``, ``intercept_se``, ``slope``, ``slope_se`` over
        (model, stat); attrs ``study``, ``ig_shape``, ``seed``.
    """
    study = define(**options)
    p = study.params
    attrs = {"ig_shape": p["ig_shape"], "pop_min": p["pop_min"], "n_mc": p["n_mc"],
             "ence_convention": "rmse", "binning": "equal-count on sorted u (genIntervals)",
             "reference": "Pernot 000 Appendix B, Figs. A1-A2"}
    return execute(study, summarise, output=output, chunk_size=chunk_size,
                   scheduler=scheduler, num_workers=num_workers, resume=resume,
                   keep_run=keep_run, quiet=quiet, mkdir=mkdir, attrs=attrs,
                   _stop_after=_stop_after)
