r"""Distribution fits of uncertainties, errors and z-scores (methods: distribution fits).

The papers fit with R ``fitdistrplus::fitdist`` (``optim`` Nelder–Mead from fixed starts,
default control). uqx minimises the same objectives, written with scipy.stats
distributions (cdf/logpdf), from the same starts with either a port of R's ``nmmin``
(default, ``optimizer="nmmin"``: reproduces methods: the papers to the published digits, R
stops early on flat likelihoods, e.g. Set 6 IG θ 3.12e-4 vs 3.03e-4 at full
convergence, and the KS minimum is path-dependent, e.g. Set 5 ν(u²) 30.8 vs 33.3) or
:func:`scipy.optimize.minimize` (``optimizer="scipy"``, ``method="Nelder-Mead"``, R's
initial simplex, iterated to convergence):

========================= ======== =========================================== ===============
fit                       data     model / objective                            start
========================= ======== =========================================== ===============
IG by MLE                 1/u²     Gamma(shape k, scale s), max likelihood      k = 10, s = 1
IG by min-KS (MGE)        1/u²     Gamma(shape, scale), min KS distance         10, 1
scaled F by min-KS        E², Z²   cdf F_{1,ν}(x/σ), min KS distance             ν = 10, σ = 1
scaled-shifted t by MLE   E, Z     (1/σ) t_ν((x − μ)/σ), max likelihood          ν = 20, mean, sd
========================= ======== =========================================== ===============

With u² ~ IG(k, θ) ⇔ 1/u² ~ Gamma(shape k, scale 1/θ): the IG shape is the gamma shape
and the IG scale θ = 1/s. 000 Table II reports k and θ (MLE), 001 Table I ν(u²) (the
min-KS gamma shape), ν(E²), ν(Z²); 000 Table III ν_eff of E and Z.

The KS objective is that of fitdistrplus ``mgedist`` (gof ``"KS"``): with s the sorted
data and F_i = F(s_i; θ), D(θ) = max_i max(abs(F_i − i/n), abs(F_i − (i − 1)/n)). It is
non-smooth, so the minimiser found depends on the path of the simplex; parameters
outside the support give D = +inf (R gets NaN and continues).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import xarray as xr
from scipy import optimize, stats

from uqx._checks import constant_reason, small_sample_note
from uqx.dataio.model import InputError, iter_sets
from uqx.dataio.schema import FITS

__all__ = [
    "FIT_KEYS",
    "nelder_mead",
    "ks_distance",
    "fit_ig_mle",
    "fit_ig_ks",
    "fit_scaled_f_ks",
    "fit_student_t",
    "fit_set",
    "fit_sets",
]

_BIG = 1.0e35  # R optim's value for a non-finite objective

#: Keys of :func:`fit_set`, in order: the variables of :func:`fit_sets` (their long names:
#: :data:`uqx.dataio.schema.FITS`).
FIT_KEYS = tuple(k for k in FITS if k != "set")


def _as_sample(x, label: str) -> np.ndarray:
    arr = np.asarray(x, dtype=np.float64).ravel()
    arr = arr[~np.isnan(arr)]
    if arr.size < 3:
        raise InputError(f"{label}: at least 3 values are needed for a fit, got {arr.size}")
    if not np.isfinite(arr).all():
        raise InputError(f"{label}: infinite values cannot be fitted")
    return arr


class _Minimum(NamedTuple):
    """Result of :func:`_nmmin`: the best vertex, its value, R's fail code, evaluations."""

    x: np.ndarray
    fun: float
    fail: int
    nfev: int


def _nmmin(fun, x0: np.ndarray, reltol: float, maxit: int):
    """Port of R's ``nmmin`` (src/appl/optim.c): ``optim(method = "Nelder-Mead")``.

    Coefficients α = 1, β = 0.5, γ = 2; stops when the simplex's objective spread is at
    most ``reltol·(|f(x0)| + reltol)`` or after ``maxit`` evaluations; non-finite
    values count as 1e35 (R's ``big``). Vertex bookkeeping (the best vertex kept on
    ties, the first worst, the summation order of the centroid) follows the C code so
    that the path on the non-smooth KS objective is R's. Returns (x, f, fail, nfev).
    """
    n = x0.size
    f0 = fun(x0)
    if f0 >= _BIG:
        raise InputError("fit: the objective cannot be evaluated at the start values")
    convtol = reltol * (abs(f0) + reltol)
    step = 0.1 * np.max(np.abs(x0)) or 0.1
    simplex = np.vstack([x0, x0 + step * np.eye(n)])  # R: one parameter at a time
    values = np.full(n + 1, f0)
    # R sums the trial steps after their last "*= 10": the initial size is 10·n·step
    nfev, fail, low, oldsize, calcvert = 1, 0, 0, 10 * n * step, True
    while True:
        if calcvert:
            for j in range(n + 1):
                if j != low:
                    values[j] = fun(simplex[j])
                    nfev += 1
            calcvert = False
        high = low
        for j in range(n + 1):
            if j != low:
                if values[j] < values[low]:
                    low = j
                if values[j] > values[high]:
                    high = j
        if values[high] <= values[low] + convtol:
            break
        centroid = -simplex[high]
        for j in range(n + 1):
            centroid = centroid + simplex[j]
        centroid = centroid / n
        refl = 2.0 * centroid - simplex[high]
        f_refl = fun(refl)
        nfev += 1
        if f_refl < values[low]:
            ext = 2.0 * refl - centroid
            f_ext = fun(ext)
            nfev += 1
            simplex[high], values[high] = (ext, f_ext) if f_ext < f_refl else (refl, f_refl)
        else:
            f_high = values[high]
            if f_refl < f_high:
                simplex[high], values[high] = refl, f_refl
            contr = 0.5 * simplex[high] + 0.5 * centroid
            f_contr = fun(contr)
            nfev += 1
            if f_contr < values[high]:
                simplex[high], values[high] = contr, f_contr
            elif f_refl >= f_high:  # shrink towards the best vertex
                others = np.arange(n + 1) != low
                simplex[others] = 0.5 * (simplex[others] - simplex[low]) + simplex[low]
                size = float(np.abs(simplex[others] - simplex[low]).sum())
                if size >= oldsize:
                    fail = 10
                    break
                oldsize, calcvert = size, True
        if nfev > maxit:
            fail = 1
            break
    return _Minimum(simplex[low].copy(), float(values[low]), fail, nfev)


def nelder_mead(fun: Callable[[np.ndarray], float], start, *, optimizer: str = "nmmin"):
    """Minimise ``fun`` by Nelder–Mead from ``start`` as R ``optim`` does.

    Parameters
    ----------
    fun : callable
        Objective of the parameter vector; non-finite values count as outside the
        support.
    start : sequence of float
        Start values (the R starts of the papers).
    optimizer : {"nmmin", "scipy"}, default "nmmin"
        ``"nmmin"``: port of R's ``nmmin`` with ``optim``'s defaults (reltol =
        sqrt(machine eps), maxit = 500) — the papers' numbers, including their
        early stops on flat likelihoods and the path-dependent minima of the KS
        distance. ``"scipy"``: :func:`scipy.optimize.minimize` (``method="Nelder-Mead"``)
        from R's initial simplex (each parameter in turn moved by 0.1·max|start|),
        iterated to full convergence.

    Returns
    -------
    scipy.optimize.OptimizeResult
        ``x``, ``fun``, ``success``, ``nfev``.
    """
    x0 = np.asarray(start, dtype=np.float64)

    def safe(p):
        with np.errstate(all="ignore"):
            v = fun(p)
        return float(v) if np.isfinite(v) else _BIG

    if optimizer == "nmmin":
        x, f, fail, nfev = _nmmin(safe, x0, np.sqrt(np.finfo(float).eps), 500)
        return optimize.OptimizeResult(x=x, fun=f, success=fail == 0, status=fail, nfev=nfev)
    if optimizer != "scipy":
        raise InputError(f"optimizer must be 'nmmin' or 'scipy', got {optimizer!r}")
    step = 0.1 * np.max(np.abs(x0)) or 0.1
    return optimize.minimize(
        safe, x0, method="Nelder-Mead",
        options={"initial_simplex": np.vstack([x0, x0 + step * np.eye(x0.size)]),
                 "xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000, "maxfev": 5000},
    )


def ks_distance(sorted_x: np.ndarray, cdf_values: np.ndarray) -> float:
    r"""Kolmogorov–Smirnov distance of fitdistrplus ``mgedist`` (gof ``"KS"``).

    :math:`D = \max_i \max(|F_i - i/n|, |F_i - (i-1)/n|)` with :math:`F_i` the model cdf
    at the i-th smallest value (methods: distribution fits).
    """
    n = sorted_x.size
    i = np.arange(1, n + 1)
    F = np.asarray(cdf_values, dtype=np.float64)
    if not np.isfinite(F).all():
        return np.inf
    return float(np.max(np.maximum(np.abs(F - i / n), np.abs(F - (i - 1) / n))))


def fit_ig_mle(u2, *, start=(10.0, 1.0), optimizer: str = "nmmin") -> dict:
    """Fit u² by an inverse gamma IG(k, θ) by maximum likelihood (000 Table II, Fig. 2).

    The gamma law Gamma(shape k, scale s) is fitted to 1/u² (R ``fitdist(1/u2,
    "gamma", start = list(shape = 10, scale = 1))``); the IG scale is θ = 1/s.

    Parameters
    ----------
    u2 : array_like
        Squared uncertainties.
    start : tuple of float
        Starting values of the optimiser.
    optimizer : {"nmmin", ...}, default "nmmin"
        Optimiser (R ``optim`` Nelder–Mead as in the papers' code).

    Returns
    -------
    dict
        ``k``, ``theta``, ``loglik`` (of 1/u²), ``converged``.
    """
    x = 1.0 / _as_sample(u2, "u^2")

    def nll(p):
        k, s = p
        if k <= 0 or s <= 0:
            return np.inf
        return -np.sum(stats.gamma.logpdf(x, k, scale=s))

    r = nelder_mead(nll, start, optimizer=optimizer)
    return {"k": r.x[0], "theta": 1.0 / r.x[1], "loglik": -r.fun, "converged": r.success}


def fit_ig_ks(u2, *, start=(10.0, 1.0), optimizer: str = "nmmin") -> dict:
    """Fit u² by IG(ν, θ) by minimum KS distance on 1/u² (001 Table I, Fig. 1).

    Gamma(shape, scale) fitted to 1/u² with the ``mgedist`` KS objective
    (:func:`ks_distance`); ν(u²) is the gamma shape and the IG scale is 1/scale.

    Parameters
    ----------
    u2 : array_like
        Squared uncertainties.
    start : tuple of float
        Starting values of the optimiser.
    optimizer : {"nmmin", ...}, default "nmmin"
        Optimiser (R ``optim`` Nelder–Mead as in the papers' code).

    Returns
    -------
    dict
        ``nu``, ``theta``, ``ks`` (the minimal distance), ``converged``.
    """
    xs = np.sort(1.0 / _as_sample(u2, "u^2"))

    def obj(p):
        k, s = p
        if k <= 0 or s <= 0:
            return np.inf
        return ks_distance(xs, stats.gamma.cdf(xs, k, scale=s))

    r = nelder_mead(obj, start, optimizer=optimizer)
    return {"nu": r.x[0], "theta": 1.0 / r.x[1], "ks": r.fun, "converged": r.success}


def fit_scaled_f_ks(x2, *, start=(10.0, 1.0), optimizer: str = "nmmin") -> dict:
    r"""Fit squared data by a scaled F(1, ν) by minimum KS distance (001 Table I, Fig. 2).

    Model cdf :math:`F_{1,\nu}(x/\sigma)` (E²/σ² ~ F(1, ν) under the NIG model, 001
    Eq. 19), start ν = 10, σ = 1.

    Parameters
    ----------
    x2 : array_like
        Squared data (E² or Z²).
    start : tuple of float
        Starting values of the optimiser.
    optimizer : {"nmmin", ...}, default "nmmin"
        Optimiser (R ``optim`` Nelder–Mead as in the papers' code).

    Returns
    -------
    dict
        ``nu``, ``scale`` (σ), ``ks``, ``converged``.
    """
    xs = np.sort(_as_sample(x2, "squared data"))

    def obj(p):
        nu, sigma = p
        if nu <= 0 or sigma <= 0:
            return np.inf
        return ks_distance(xs, stats.f.cdf(xs / sigma, 1.0, nu))

    r = nelder_mead(obj, start, optimizer=optimizer)
    return {"nu": r.x[0], "scale": r.x[1], "ks": r.fun, "converged": r.success}


def fit_student_t(x, *, start=None, optimizer: str = "nmmin") -> dict:
    r"""Fit data by a scaled and shifted Student t by maximum likelihood (000 Table III).

    Density :math:`(1/\sigma)\,t_\nu((x-\mu)/\sigma)`, start ν = 20, μ = mean(x),
    σ = sd(x) (n − 1).

    Parameters
    ----------
    x : array_like
        Data (errors E or z-scores).
    start : tuple of float, optional
        Starting (ν, μ, σ) (default 20, mean, sd).
    optimizer : {"nmmin", ...}, default "nmmin"
        Optimiser (R ``optim`` Nelder–Mead as in the papers' code).

    Returns
    -------
    dict
        ``nu`` (ν_eff), ``mu`` (bias), ``sigma``, ``loglik``, ``converged``.
    """
    x = _as_sample(x, "data")
    if start is None:
        start = (20.0, float(np.mean(x)), float(np.std(x, ddof=1)))

    def nll(p):
        nu, mu, sigma = p
        if nu <= 0 or sigma <= 0:
            return np.inf
        return -np.sum(stats.t.logpdf(x, nu, loc=mu, scale=sigma))

    r = nelder_mead(nll, start, optimizer=optimizer)
    return {"nu": r.x[0], "mu": r.x[1], "sigma": r.x[2], "loglik": -r.fun,
            "converged": r.success}


def point_mass(x) -> bool:
    """Whether the finite values of ``x`` are all equal (no spread: nothing to fit).

    Parameters
    ----------
    x : array_like
        A sample.

    Returns
    -------
    bool
        True when its finite values take one value (a point mass), up to rounding
        (16 ulp).
    """
    x = np.asarray(x, dtype=np.float64)
    x = x[np.isfinite(x)]
    if not x.size:
        return False
    lo, hi = x.min(), x.max()  # equal up to rounding (Z = E/uE with E = ±uE)
    return bool(hi - lo <= 16 * np.finfo(np.float64).eps * max(abs(lo), abs(hi)))


def fit_set(E, uE, *, optimizer: str = "nmmin") -> dict:
    """All distribution fits of one data set (methods: distribution fits; 000 Tables II–III).

    Parameters
    ----------
    E, uE : array_like, shape (M,)
        Errors and uncertainties (uE > 0); NaN pairs are ignored.
    optimizer : {"nmmin", "scipy"}, default "nmmin"
        See :func:`nelder_mead` (``"nmmin"`` reproduces the papers' numbers).

    Returns
    -------
    dict of str to float
        Keys :data:`FIT_KEYS`: ``ig_k``, ``ig_theta`` (IG MLE of u²), ``nu_u2``,
        ``ig_theta_ks`` (IG min-KS), ``nu_e2``, ``scale_e2``, ``nu_z2``, ``scale_z2``
        (scaled F min-KS of E², Z²), ``nu_eff_e``, ``bias_e``, ``scale_e``, ``nu_eff_z``,
        ``bias_z``, ``scale_z`` (Student t MLE of E and Z), ``rel_bias_e``,
        ``rel_bias_z`` (000 Table III b_X = 100·mean/sd, sd with n − 1). The fits of a
        point mass (:func:`point_mass`: E², Z², E or Z constant, e.g. abs(Z) ≡ 1) are NaN:
        a distribution without spread has no shape ν.
    """
    E = np.asarray(E, dtype=np.float64).ravel()
    uE = np.asarray(uE, dtype=np.float64).ravel()
    if E.shape != uE.shape:
        raise InputError(f"fit_set: E and uE differ in length ({E.size} vs {uE.size})")
    keep = ~(np.isnan(E) | np.isnan(uE))
    E, uE = E[keep], uE[keep]
    if not (uE > 0).all():
        raise InputError("fit_set: uncertainties must be strictly positive")
    u2, Z = uE**2, E / uE
    kw = {"optimizer": optimizer}
    mle, ks = fit_ig_mle(u2, **kw), fit_ig_ks(u2, **kw)
    nan2 = {"nu": np.nan, "scale": np.nan}
    # a point mass (no spread: |E| or |Z| constant) has no F or t shape to fit
    fe2 = nan2 if point_mass(E**2) else fit_scaled_f_ks(E**2, **kw)
    fz2 = nan2 if point_mass(Z**2) else fit_scaled_f_ks(Z**2, **kw)
    nant = {"nu": np.nan, "mu": np.nan, "sigma": np.nan}
    te = nant if point_mass(E) else fit_student_t(E, **kw)
    tz = nant if point_mass(Z) else fit_student_t(Z, **kw)
    return {
        "ig_k": mle["k"], "ig_theta": mle["theta"],
        "nu_u2": ks["nu"], "ig_theta_ks": ks["theta"],
        "nu_e2": fe2["nu"], "scale_e2": fe2["scale"],
        "nu_z2": fz2["nu"], "scale_z2": fz2["scale"],
        "nu_eff_e": te["nu"], "bias_e": te["mu"], "scale_e": te["sigma"],
        "nu_eff_z": tz["nu"], "bias_z": tz["mu"], "scale_z": tz["sigma"],
        "rel_bias_e": 100 * np.mean(E) / np.std(E, ddof=1),
        "rel_bias_z": 100 * np.mean(Z) / np.std(Z, ddof=1),
    }


def fit_sets(ds, *, optimizer: str = "nmmin") -> xr.Dataset:
    """Apply :func:`fit_set` to every set of a (stacked) input data set.

    Parameters
    ----------
    ds : xarray.Dataset
        One data set or several stacked on ``set`` (:func:`uqx.dataio.model.stack`).
    optimizer : {"nmmin", "scipy"}, default "nmmin"

    Returns
    -------
    xarray.Dataset
        One variable per key of :data:`FIT_KEYS` over ``set``; attrs name the method.
    """
    sets = list(iter_sets(ds))
    rows = {sd.name: fit_set(sd.E, sd.uE, optimizer=optimizer) for sd in sets}
    names = list(rows)
    notes = [n for n in (small_sample_note(sd.name, sd.M, "distribution fits") for sd in sets)
             if n]
    notes += [f"{sd.name}: {constant_reason(sd.uE, 'uE')}: the fits of u^2 (ig_k, ig_theta, "
              "nu_u2) describe no spread and mean nothing"
              for sd in sets if constant_reason(sd.uE, "uE")]
    for sd in sets:
        E, Z = np.asarray(sd.E, dtype=np.float64), sd.E / sd.uE
        for what, x, keys in (("E^2", E**2, "nu_e2, scale_e2"), ("Z^2", Z**2, "nu_z2, scale_z2"),
                              ("E", E, "nu_eff_e, bias_e, scale_e"),
                              ("Z", Z, "nu_eff_z, bias_z, scale_z")):
            if point_mass(x):
                v = x[np.isfinite(x)][0]
                notes.append(f"{sd.name}: {what} takes one value ({v:.6g}) on every row: a "
                             f"point mass, without spread, has no distribution shape to fit; "
                             f"{keys} are undefined (NaN)")
    for text in notes:
        warnings.warn(text, UserWarning, stacklevel=2)
    return xr.Dataset(
        FITS.data_vars({k: np.array([rows[n][k] for n in names], dtype=float)
                        for k in FIT_KEYS}),
        coords={"set": names},
        attrs={"title": "uqx distribution fits (methods: distribution fits)",
               "optimizer": optimizer,
               "method": "Nelder-Mead from the R fitdistrplus starts; KS objective of "
               "fitdistrplus mgedist", "notes": "\n".join(notes)},
    )
