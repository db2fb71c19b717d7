r"""Recalibrate uE, then validate again on rows the map never saw.

Three steps, as the command ``uqx recalibrate`` (fit, apply, check):

* :func:`fit_recalibration` learns a map uE -> u on calibration rows
  (:mod:`uqx.engine.recal_maps`: scale, power, scaling-binning, isotonic, BVS on uE or on
  X, or ``auto``: the least cross-validated Gaussian NLL among the factor and the methods
  that beat it, :func:`uqx.engine.recal_maps.choose_method`) and returns a
  :class:`RecalMap`, with a bootstrap band of the map (the factor u/uE at a grid of uE, or
  of X for BVS on X, 2.5 and 97.5 % over refits on resampled rows) and its provenance.
* :meth:`RecalMap.apply` recalibrates new rows; :meth:`RecalMap.to_netcdf` and
  :func:`read_map` save and read it.
* :func:`check_recalibration` cross-fits: the rows are cut into K folds, each fold's u
  comes from a map fitted on the other folds (with ``auto``, the method is chosen inside
  those training folds too), so no row is recalibrated by a map that saw it. Then
  :func:`uqx.validate` runs on the original and on the recalibrated uE of the same rows:
  the verdicts before and after, the out-of-fold NLL gain, and what is still not fixed,
  in words. With ``split`` a single split is used instead: a map fitted on one part,
  validated on the other (the validation of the held-out part is then exact, the map
  being fixed).

This is not :mod:`uqx.workflow.recalibration`, which tests whether uE is "consistent up to
a factor" inside one validation.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np
import xarray as xr

from uqx.dataio.model import from_arrays, iter_sets, stack
from uqx.dataio.netcdf import read_netcdf, to_netcdf
from uqx.dataio.provenance import provenance_attrs
from uqx.engine.defaults import ISO_MIN_BLOCK, POP_MIN
from uqx.engine.recal_maps import (
    AUTO_MARGIN_SE,
    METHODS,
    NEEDS_X,
    apply_map,
    choose_method,
    fit_map,
    fold_ids,
    gaussian_nll,
    gaussian_nll_rows,
)
from uqx.engine.resample import content_key, key_hex, resolve_seed, seed_sequence
from uqx.errors import InputError
from uqx.workflow.groups import Compute, as_group
from uqx.workflow.validation import validate

__all__ = [
    "RecalMap",
    "RecalCheck",
    "fit_recalibration",
    "read_map",
    "cross_fit",
    "CrossFit",
    "check_recalibration",
    "MAP_KIND",
    "N_BOOT_MAP",
]

#: ``attrs["uqx_kind"]`` of a saved map.
MAP_KIND = "recalibration-map"
#: Bootstrap refits of the band of a map.
N_BOOT_MAP = 200
#: Points of the grid of the band.
_GRID = 41

# The questions of a validation, in words, and what to do when one is still invalid.
_QUESTION_WORDS = {
    "average": "average calibration",
    "consistency": "consistency on uE",
    "adaptivity_X": "adaptivity on X",
    "adaptivity_V": "adaptivity on V",
    "ranking": "ranking (CC of |E| and uE)",
    "up_to_factor": "consistency up to a factor",
}


def _unfixed_advice(question: str, method: str, has_x: bool) -> str:
    if question == "adaptivity_X":
        if method == "bvs-X":
            return "BVS on X did not fix it: try more bins on X (--bins) or a better model"
        return ("recalibrate on X (--method bvs-X)" if has_x
                else "recalibrate on X (give --X, then --method bvs-X)")
    if question == "adaptivity_V":
        return "no map here bins on V: recalibrate with V as the feature (--X V, bvs-X)"
    if question in ("consistency", "up_to_factor"):
        return "try a map that bends with uE (--method isotonic or bvs-uE)"
    if question == "ranking":
        return ("a map increasing in uE keeps the ranking of uE: only a map on X "
                "(--method bvs-X) or a better uE can change it")
    return "try --method auto"


def _made_worse_advice(method: str) -> str:
    """Why a question that was not invalid before reads invalid after, and what to try."""
    if method == "isotonic":
        # measured on calibrated sets cross-fitted by isotonic (docs/recalibrate.md)
        return ("the map's own error: isotonic blocks of few rows are noisy on rows they "
                "were not fitted on (their flat stretches also tie u); a smoother map "
                "(a larger --min-block, --method bvs-uE or power) or more rows")
    return ("the map's own error on rows it was not fitted on: a map with fewer parameters "
            "(--method scale or power) or more rows")


@dataclass(frozen=True, eq=False)
class RecalMap:
    """A fitted recalibration map uE (and X) -> u, with its band and provenance.

    Attributes
    ----------
    method : str
        The method fitted (one of :data:`uqx.engine.recal_maps.METHODS`).
    params : dict
        Its parameters (:func:`uqx.engine.recal_maps.fit_map`).
    asked : str
        The method asked for (``"auto"`` or ``method``).
    scores : dict
        With ``auto``: the cross-validated NLL of each candidate on the fitting rows.
    n_bins : int or None
        Bins asked for by the binned methods (None: the default of the rows).
    band : xarray.Dataset or None
        ``factor`` (u/uE of the map), ``lower`` and ``upper`` (2.5 and 97.5 % over
        bootstrap refits) over ``grid``; ``attrs["grid_of"]`` is ``"uE"`` or ``"X"``.
    provenance : dict
        ``uqx_version``, ``created_at``, ``seed``, ``n_rows``, ``input_digest``,
        ``source``, ``n_boot``.
    """

    method: str
    params: dict
    asked: str = "given"
    scores: dict = field(default_factory=dict)
    n_bins: int | None = None
    band: xr.Dataset | None = None
    provenance: dict = field(default_factory=dict)

    @property
    def needs_X(self) -> bool:
        """Whether the map reads the feature X of the rows it is applied to."""
        return self.method in NEEDS_X

    def apply(self, data, X=None):
        """Recalibrate rows.

        Parameters
        ----------
        data : xarray.Dataset or array_like
            A data set of :func:`uqx.from_arrays` (its ``uE``, and ``X`` where the map
            needs it), or the uE values themselves.
        X : array_like, optional
            The feature, with array input (maps on X).

        Returns
        -------
        xarray.Dataset or numpy.ndarray
            The data set with ``uE`` replaced by the recalibrated u (the original kept as
            ``uE_original``; NaN padding kept), or the array of u.

        Raises
        ------
        InputError
            The map needs X and the rows have none; uE <= 0.
        """
        if not isinstance(data, xr.Dataset):
            return apply_map(self.method, self.params, data, X)
        if self.needs_X and "X" not in data:
            raise InputError(f"this map ({self.method}) bins on the feature X: the data set "
                             "has no X variable (give the X column)")
        uE = data["uE"].values
        ok = np.isfinite(uE)
        x = data["X"].values if self.needs_X else None
        if x is not None:
            ok &= np.isfinite(x)
        u = np.full(uE.shape, np.nan)
        u[ok] = apply_map(self.method, self.params, uE[ok], None if x is None else x[ok])
        out = data.copy()
        out["uE_original"] = data["uE"]
        out["uE"] = data["uE"].copy(data=u)
        out["uE"].attrs["recalibrated_by"] = self.method
        return out

    def to_dataset(self) -> xr.Dataset:
        """Return the map as a Dataset (parameters as variables ``param_<name>``, the band)."""
        data = {}
        scalars = {}
        for k, v in self.params.items():
            a = np.asarray(v, dtype=np.float64)
            if a.ndim == 0:
                scalars[k] = float(a)
            else:
                data[f"param_{k}"] = xr.DataArray(a, dims=(f"{k}_index",))
        ds = xr.Dataset(data)
        if self.band is not None:
            ds = ds.merge(self.band.rename({"grid": "band_grid"}), combine_attrs="drop")
            ds.attrs["band_grid_of"] = self.band.attrs.get("grid_of", "uE")
            ds.attrs["band_level"] = 0.95
        ds.attrs.update(uqx_kind=MAP_KIND, method=self.method, asked=self.asked,
                        scalar_params=scalars, scores=dict(self.scores),
                        n_bins=self.n_bins, provenance=dict(self.provenance))
        if self.asked == "auto":  # the rule that chose among the scores
            ds.attrs["auto_margin_se"] = float(AUTO_MARGIN_SE)
        return ds

    @classmethod
    def from_dataset(cls, ds: xr.Dataset) -> RecalMap:
        """Rebuild a map from :meth:`to_dataset` (or a file read by :func:`read_map`)."""
        if ds.attrs.get("uqx_kind") != MAP_KIND:
            raise InputError("not a recalibration map (attribute uqx_kind is "
                             f"{ds.attrs.get('uqx_kind')!r}; write one with "
                             "'uqx recalibrate fit')")
        method = str(ds.attrs["method"])
        if method not in METHODS:
            raise InputError(f"the map's method {method!r} is unknown to this uqx")
        params = {k: float(v) for k, v in (ds.attrs.get("scalar_params") or {}).items()}
        for name in ds.data_vars:
            if str(name).startswith("param_"):
                params[str(name)[6:]] = np.asarray(ds[name].values, dtype=np.float64)
        band = None
        if "factor" in ds:
            band = (ds[["factor", "lower", "upper"]].rename({"band_grid": "grid"})
                    .assign_attrs(grid_of=ds.attrs.get("band_grid_of", "uE")))
        n_bins = ds.attrs.get("n_bins")
        return cls(method=method, params=params, asked=str(ds.attrs.get("asked", "given")),
                   scores=dict(ds.attrs.get("scores") or {}),
                   n_bins=None if n_bins is None else int(n_bins), band=band,
                   provenance=dict(ds.attrs.get("provenance") or {}))

    def to_netcdf(self, path: str | os.PathLike, *, mkdir: bool = False):
        """Write the map atomically (:func:`uqx.dataio.netcdf.to_netcdf`); returns the path."""
        return to_netcdf(self.to_dataset(), path,
                         parameters={"method": self.method, "asked": self.asked},
                         seed=self.provenance.get("seed"), mkdir=mkdir)

    def describe(self) -> str:
        """One line: the method and its parameters."""
        p = self.params
        if self.method == "scale":
            what = f"u = {p['f']:.4g} * uE"
        elif self.method == "power":
            what = f"u = {p['c']:.4g} * uE^{p['gamma']:.4g}"
        elif self.method == "isotonic":
            what = f"u^2 = g(uE^2), g nondecreasing with {p['knots'].size} knots"
            if "min_block" in p:  # maps written before the minimum block lack it
                what += f", blocks of at least {int(p['min_block'])} rows"
            if p.get("debias"):
                what += ", small-block variance correction"
        elif self.method == "scaling-binning":
            what = (f"u = f_j * {p['c']:.4g} * uE^{p['gamma']:.4g}, "
                    f"{p['factors'].size} bins of uE, f_j in "
                    f"[{p['factors'].min():.3g}, {p['factors'].max():.3g}]")
        else:
            on = "X" if self.method == "bvs-X" else "uE"
            what = (f"u = f_j * uE, {p['factors'].size} bins of {on}, f_j in "
                    f"[{p['factors'].min():.3g}, {p['factors'].max():.3g}]")
        how = (" (chosen by auto: least cross-validated NLL among the factor and the maps "
               f"that beat it by {AUTO_MARGIN_SE:g} s.e.)") if self.asked == "auto" else ""
        return f"{self.method}{how}: {what}"


def read_map(path: str | os.PathLike) -> RecalMap:
    """Read a map written by :meth:`RecalMap.to_netcdf` (``uqx recalibrate fit -o``).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    RecalMap

    Raises
    ------
    InputError
        Missing file, not NetCDF, or not a recalibration map.
    """
    ds = read_netcdf(path)
    try:
        return RecalMap.from_dataset(ds)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


class _OneSet(NamedTuple):
    """One data set's columns, as recalibration reads them."""

    name: str
    E: np.ndarray
    uE: np.ndarray
    X: np.ndarray | None


class _Fitted(NamedTuple):
    """A fitted map: the method chosen, its parameters, the scores that chose it."""

    method: str
    params: object
    scores: dict


def _one_set(data, X=None) -> _OneSet:
    """Return the arrays (name, E, uE, X) of one data set (a Dataset or an (E, uE) pair)."""
    if isinstance(data, tuple | list) and len(data) in (2, 3):
        E, uE = data[0], data[1]
        X = data[2] if len(data) == 3 else X
        uE_arr = np.asarray(uE, dtype=np.float64)
        if np.any(uE_arr <= 0):
            raise InputError(f"uE must be positive: {int(np.sum(uE_arr <= 0))} row(s) with "
                             "uE <= 0 cannot be recalibrated")
        data = from_arrays(E, uE, X=X)
    if not isinstance(data, xr.Dataset):
        raise InputError("expected a data set (uqx.from_arrays) or a pair (E, uE), got "
                         f"{type(data).__name__}")
    sets = list(iter_sets(data))
    if len(sets) != 1:
        raise InputError(f"recalibrate one data set at a time, got {len(sets)} sets")
    s = sets[0]
    return _OneSet(s.name, s.E, s.uE, s.X)


def _keyed(seed: int, *coords, E, uE) -> np.random.SeedSequence:
    return seed_sequence(seed, "recalibrate", *coords, content_key(E, uE))


def _fit(method, E, uE, X, *, n_bins, pop_min, min_block, ss) -> _Fitted:
    how = {"n_bins": n_bins, "pop_min": pop_min, "min_block": min_block}
    if method == "auto":
        chosen, scores = choose_method(E, uE, X, ss=ss, **how)
        return _Fitted(chosen, fit_map(chosen, E, uE, X, **how), scores)
    return _Fitted(method, fit_map(method, E, uE, X, **how), {})


def _check_method(method: str, X) -> None:
    if method != "auto" and method not in METHODS:
        raise InputError(f"unknown recalibration method {method!r}; choose one of "
                         f"auto, {', '.join(METHODS)}")
    if method in NEEDS_X and X is None:
        raise InputError(f"method {method!r} bins on the feature X, which the data lack "
                         "(give the X column)")


def _band(method, params, E, uE, X, *, n_boot, n_bins, pop_min, min_block,
          ss) -> xr.Dataset:
    """Bootstrap band of the factor u/uE of a map (refits on resampled rows)."""
    on_x = method in NEEDS_X
    v = X if on_x else uE
    grid = np.unique(np.quantile(v, np.linspace(0.01, 0.99, _GRID)))

    def factor(p):
        if on_x:
            return apply_map(method, p, np.ones_like(grid), grid)
        return apply_map(method, p, grid) / grid

    est = factor(params)
    rng = np.random.Generator(np.random.PCG64(ss))
    reps = []
    for _ in range(int(n_boot)):
        i = rng.integers(0, E.size, E.size)
        try:
            p = fit_map(method, E[i], uE[i], None if X is None else X[i], n_bins=n_bins,
                        pop_min=pop_min, min_block=min_block)
        except InputError:  # a resample that cannot be fitted (e.g. too few rows)
            continue
        reps.append(factor(p))
    if reps:
        lo, hi = np.percentile(np.asarray(reps), [2.5, 97.5], axis=0)
    else:
        lo = hi = np.full_like(est, np.nan)
    return xr.Dataset(
        {"factor": ("grid", est, {"long_name": "factor u/uE of the map"}),
         "lower": ("grid", lo, {"long_name": "2.5 % of the factor over bootstrap refits"}),
         "upper": ("grid", hi, {"long_name": "97.5 % of the factor over bootstrap refits"})},
        coords={"grid": ("grid", grid, {"long_name": "X" if on_x else "uE"})},
        attrs={"grid_of": "X" if on_x else "uE", "n_boot": int(n_boot),
               "n_boot_fitted": len(reps)})


def fit_recalibration(data, method: str = "auto", *, X=None, n_bins: int | None = None,
                      pop_min: int = POP_MIN, min_block: int = ISO_MIN_BLOCK,
                      n_boot: int = N_BOOT_MAP, seed: int | None = None) -> RecalMap:
    """Fit a recalibration map on calibration rows.

    Parameters
    ----------
    data : xarray.Dataset or tuple
        One data set (:func:`uqx.from_arrays`, a loaded CSV or literature set) or
        ``(E, uE)`` / ``(E, uE, X)`` arrays.
    method : str, default "auto"
        ``"auto"`` (least 5-fold cross-validated Gaussian NLL on these rows,
        :func:`uqx.engine.recal_maps.choose_method`) or one of
        :data:`uqx.engine.recal_maps.METHODS`.
    X : array_like, optional
        The feature, with array input.
    n_bins : int, optional
        Bins of the binned methods (default ``max(min(M // 150, 15), 2)``).
    pop_min : int, default 30
        Minimal bin population.
    min_block : int, default 10
        ``isotonic``: least rows of a block of the map (1: the plain pool-adjacent-violators
        map of Busk et al. 2022; :func:`uqx.engine.recal_maps.fit_isotonic`).
    n_boot : int, default 200
        Bootstrap refits of the band (0: no band).
    seed : int, optional
        Root seed (drawn and recorded when not given); the inner folds of ``auto`` and
        the band's resamples are keyed by it and by the rows' content.

    Returns
    -------
    RecalMap

    Raises
    ------
    InputError
        Unknown method, a method on X without X, uE <= 0, too few rows.
    """
    name, E, uE, Xs = _one_set(data, X)
    _check_method(method, Xs)
    seed = resolve_seed(seed)
    chosen, params, scores = _fit(method, E, uE, Xs, n_bins=n_bins, pop_min=pop_min,
                                  min_block=min_block, ss=_keyed(seed, "auto", E=E, uE=uE))
    band = None
    if n_boot:
        band = _band(chosen, params, E, uE, Xs, n_boot=n_boot, n_bins=n_bins,
                     pop_min=pop_min, min_block=min_block,
                     ss=_keyed(seed, "band", E=E, uE=uE))
    prov = provenance_attrs(seed=seed)
    prov.update(n_rows=int(E.size), input_digest=key_hex(content_key(E, uE)),
                source=str(name), n_boot=int(n_boot))
    return RecalMap(method=chosen, params=params, asked=method, scores=scores,
                    n_bins=n_bins, band=band, provenance=prov)


def _fold_rows(folds: np.ndarray, f: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows a fold's map is fitted on, and the rows it is applied to."""
    return np.flatnonzero(folds != f), np.flatnonzero(folds == f)


def _check_no_leak(fitted_on, applied_to, n: int) -> None:
    """Refuse a cross-fit where a map saw a row it recalibrates, or a row is left out."""
    seen = np.zeros(n, dtype=np.int64)
    for train, test in zip(fitted_on, applied_to, strict=True):
        if np.intersect1d(train, test).size:
            raise RuntimeError("cross-fitting leaked: a map was fitted on rows it "
                               "recalibrates; the out-of-fold verdicts would be optimistic")
        seen[test] += 1
    if not (seen == 1).all():
        raise RuntimeError("cross-fitting must recalibrate every row exactly once")


@dataclass(frozen=True, eq=False)
class CrossFit:
    """The out-of-fold recalibration of rows (:func:`cross_fit`).

    Attributes
    ----------
    u : numpy.ndarray
        Recalibrated uncertainty of each row, from a map that did not see it.
    folds : numpy.ndarray of int
        Fold of each row.
    methods : list of str
        Method fitted in each fold (chosen there with ``auto``).
    fitted_on, applied_to : list of numpy.ndarray
        Row indices each fold's map was fitted on and applied to (disjoint).
    """

    u: np.ndarray
    folds: np.ndarray
    methods: list
    fitted_on: list
    applied_to: list


def cross_fit(E, uE, X=None, *, method: str = "auto", folds: int = 5, seed: int = 0,
              n_bins: int | None = None, pop_min: int = POP_MIN,
              min_block: int = ISO_MIN_BLOCK) -> CrossFit:
    """Recalibrate every row by a map fitted on the other folds (K-fold cross-fitting).

    With ``auto`` the method is chosen inside each fold's training rows (inner folds),
    never on the rows it recalibrates. The folds are a keyed random permutation
    (:func:`uqx.engine.recal_maps.fold_ids`; the stream is keyed by ``seed`` and the
    rows' content), and the fitted-on and applied-to rows of every fold are checked to be
    disjoint.

    Parameters
    ----------
    E, uE : numpy.ndarray, shape (M,)
    X : numpy.ndarray, optional
    method : str, default "auto"
    folds : int, default 5
        K (2 <= K <= M).
    seed : int, default 0
    n_bins, pop_min, min_block
        As :func:`fit_recalibration`.

    Returns
    -------
    CrossFit
    """
    E = np.asarray(E, dtype=np.float64)
    uE = np.asarray(uE, dtype=np.float64)
    ids = fold_ids(E.size, folds, _keyed(seed, "folds", E=E, uE=uE))
    u = np.full(E.size, np.nan)
    methods, fitted_on, applied_to = [], [], []
    for f in range(int(folds)):
        train, test = _fold_rows(ids, f)
        Xtr = None if X is None else X[train]
        chosen, params, _ = _fit(method, E[train], uE[train], Xtr, n_bins=n_bins,
                                 pop_min=pop_min, min_block=min_block,
                                 ss=_keyed(seed, "auto", f, E=E[train], uE=uE[train]))
        u[test] = apply_map(chosen, params, uE[test], None if X is None else X[test])
        methods.append(chosen)
        fitted_on.append(train)
        applied_to.append(test)
    _check_no_leak(fitted_on, applied_to, E.size)
    return CrossFit(u=u, folds=ids, methods=methods, fitted_on=fitted_on,
                    applied_to=applied_to)


@dataclass(frozen=True, eq=False)
class RecalCheck:
    r"""Verdicts before and after an honest (out-of-fold) recalibration.

    Attributes
    ----------
    name : str
        The data set.
    method : str
        The method asked for.
    methods : list of str
        The method fitted in each fold (one entry with ``split``).
    design : str
        ``"5-fold cross-fitting"`` or ``"single split (fit 50 %)"``.
    rows : numpy.ndarray of int
        The rows validated (all rows; the held-out part with ``split``).
    E, uE, u : numpy.ndarray
        Their errors, original and recalibrated uncertainties.
    nll_before, nll_after, nll_scale : float
        Mean Gaussian NLL of the validated rows with uE, with u, and with the factor
        √ZMS alone fitted out of fold the same way.
    result : xarray.Dataset
        :func:`uqx.validate` of the sets ``before`` and ``after`` (same rows).
    crossfit : CrossFit or None
        The folds (None with ``split``).
    has_x : bool
        Whether the check had the feature X.
    u_scale : numpy.ndarray or None
        The validated rows' uE times the factor √ZMS fitted out of fold the same way
        (the baseline of :attr:`nll_vs_scale`).
    fit_zms_se : float or None
        With ``split``: the standard error of ZMS of the recalibrated fitting rows,
        :math:`s(Z^2)/\sqrt{n_{fit}}`, the least error of the map's own scale
        (:meth:`map_scale_note`); None with cross-fitting.
    n_fit : int or None
        With ``split``: the rows that fitted the map.
    """

    name: str
    method: str
    methods: list
    design: str
    rows: np.ndarray
    E: np.ndarray
    uE: np.ndarray
    u: np.ndarray
    nll_before: float
    nll_after: float
    nll_scale: float
    result: xr.Dataset
    crossfit: CrossFit | None = None
    has_x: bool = False
    u_scale: np.ndarray | None = None
    fit_zms_se: float | None = None
    n_fit: int | None = None

    @property
    def nll_gain(self) -> float:
        """Out-of-fold NLL gain per row (before - after; positive: better)."""
        return self.nll_before - self.nll_after

    @property
    def nll_vs_scale(self) -> tuple[float, float]:
        r"""NLL after minus NLL of the factor alone, per row, and its standard error.

        The difference of the per-row Gaussian NLLs, :math:`d_i = \ell(E_i, u_i) -
        \ell(E_i, f u_{E,i})` with :math:`\ell(E, u) = \tfrac12 \ln(2\pi u^2) +
        E^2 / (2u^2)`: its mean (negative: the map predicts the held-out errors better than
        one factor) and :math:`s_d / \sqrt{M}`. A flexible map is worse than the factor
        beyond its noise where the mean exceeds about two standard errors.
        """
        if self.u_scale is None:
            return float("nan"), float("nan")
        d = gaussian_nll_rows(self.E, self.u) - gaussian_nll_rows(self.E, self.u_scale)
        se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else np.nan
        return float(d.mean()), float(se)

    def question_verdicts(self) -> dict:
        """``{question: (before, after)}`` of the questions tested on either side."""
        qv = self.result["question_verdict"]
        out = {}
        for q in qv["question"].values:
            b = str(qv.sel(set="before", question=q).values)
            a = str(qv.sel(set="after", question=q).values)
            if b == a == "not tested":
                continue
            out[str(q)] = (b, a)
        return out

    def map_scale_note(self) -> str:
        r"""Say whether ZMS after a single split is within the fitted map's own error.

        A map fitted on :math:`n_{fit}` rows is itself estimated: its scale is uncertain by
        at least the standard error of ZMS on those rows, :math:`s_f = s(Z^2_{fit}) /
        \sqrt{n_{fit}}` (a single factor's; a map with more parameters is less sure).
        The validation of the held-out rows tests the fitted map, not the method, and many
        held-out rows see that error. Where the held-out ZMS is within
        :math:`2\sqrt{s_f^2 + s_h^2}` of 1 (:math:`s_h` its own standard error), the
        text says so; '' otherwise, and with cross-fitting (whose maps' errors
        largely cancel over the folds).
        """
        if self.fit_zms_se is None or not np.isfinite(self.fit_zms_se):
            return ""
        z2 = (self.E / self.u) ** 2
        zms, se_h = float(z2.mean()), float(z2.std(ddof=1) / np.sqrt(z2.size))
        both = float(np.hypot(self.fit_zms_se, se_h))
        if not abs(zms - 1.0) <= 2.0 * both:
            return ""
        return (f"the held-out ZMS {zms:.3f} is within the error of the map's own fit: a "
                f"map fitted on {self.n_fit} rows has a scale uncertain by at least "
                f"±{self.fit_zms_se:.3f} in ZMS, the held-out rows ±{se_h:.3f} (together "
                f"±{both:.3f}); the verdict is true of this fitted map, not of the method: "
                "fit on more rows, or cross-fit (no --split)")

    def unfixed(self) -> list[str]:
        """Say what is still invalid after recalibration, in words, with what to try."""
        lines = []
        verdicts = self.question_verdicts()
        # consistent up to a factor after: an invalid consistency is the scale's alone
        scale_only = verdicts.get("up_to_factor", ("", ""))[1] == "valid"
        for q, (b, a) in verdicts.items():
            words = _QUESTION_WORDS.get(q, q)
            own = self.map_scale_note() if q == "average" else ""
            if a == "invalid" and own:
                lines.append(f"{words} is invalid after recalibration, but {own}")
                continue
            if a == "invalid" and q == "consistency" and scale_only:
                lines.append(f"{words} is invalid after recalibration only by a factor: "
                             "the recalibrated uE are consistent up to a factor, so what is "
                             "left is the scale (average calibration)")
                continue
            if a == "invalid":
                method = self.methods[0] if len(set(self.methods)) == 1 else self.method
                if b == "invalid":
                    line = f"{words} is still invalid: {_unfixed_advice(q, method, self.has_x)}"
                else:
                    line = f"{words} is invalid after recalibration: {_made_worse_advice(method)}"
                if q.startswith("adaptivity") and verdicts.get("average", ("", ""))[1] == "invalid":
                    # adaptivity has no test up to a factor: a scale left off moves it too
                    line += (" (it is tested on the recalibrated uE as they are, off in "
                             "scale: fix the scale first, then check again)")
                lines.append(line)
        return lines

    def fixed(self) -> list[str]:
        """Say what the recalibration fixed (invalid before, not after), in words."""
        return [f"{_QUESTION_WORDS.get(q, q)}: invalid -> {a}"
                for q, (b, a) in self.question_verdicts().items()
                if b == "invalid" and a in ("valid", "inconclusive")]

    def text(self) -> str:
        """Return the check as text: design, NLL, verdicts before and after, what is left."""
        counts = Counter(self.methods)
        chosen = ", ".join(f"{m} in {n} of {len(self.methods)}" for m, n in counts.items())
        lines = [
            f"# recalibration check of {self.name}: {self.rows.size} rows validated, "
            f"{self.design}",
            f"method {self.method}"
            + (f" (chosen inside the training rows: {chosen})" if self.method == "auto"
               else ""),
            f"held-out Gaussian NLL per row: before {self.nll_before:.4f}, after "
            f"{self.nll_after:.4f} (gain {self.nll_gain:+.4f}); scale alone "
            f"{self.nll_scale:.4f}" + _versus_scale(*self.nll_vs_scale),
            "",
            f"{'question':<28}{'before':<16}after",
        ]
        for q, (b, a) in self.question_verdicts().items():
            lines.append(f"{_QUESTION_WORDS.get(q, q):<28}{b:<16}{a}")
        fixed, left = self.fixed(), self.unfixed()
        lines.append("")
        lines.append("fixed: " + ("; ".join(fixed) if fixed else "nothing that was invalid"))
        lines.append("still to fix: " + ("; ".join(left) if left else
                                          "nothing is invalid after recalibration"))
        return "\n".join(lines)


def _versus_scale(diff, se) -> str:
    """Say whether the map's NLL differs from the factor's beyond its noise (2 s.e.)."""
    if not np.isfinite(diff) or not np.isfinite(se) or se == 0:
        return ""
    if diff > 2 * se:
        return (f" (worse than the factor alone by {diff:.4f} ± {se:.4f}: beyond its noise; "
                f"try --method scale)")
    if diff < -2 * se:
        return f" (better than the factor alone by {-diff:.4f} ± {se:.4f})"
    return f" (the same as the factor alone within its noise: {diff:+.4f} ± {se:.4f})"


def check_recalibration(data, method: str = "auto", *, X=None, folds: int = 5,
                        split: float | None = None, n_bins: int | None = None,
                        pop_min: int = POP_MIN, min_block: int = ISO_MIN_BLOCK,
                        seed: int | None = None, **validate_kwargs) -> RecalCheck:
    """Recalibrate out of fold, then validate before and after on the same rows.

    Parameters
    ----------
    data : xarray.Dataset or tuple
        One data set, or ``(E, uE)`` / ``(E, uE, X)`` arrays.
    method : str, default "auto"
        As :func:`fit_recalibration`; with ``auto`` the method is chosen inside each
        fold's training rows.
    X : array_like, optional
        The feature, with array input.
    folds : int, default 5
        K of the cross-fitting (each row recalibrated by a map fitted on the other K - 1
        folds).
    split : float, optional
        Instead of cross-fitting, one split: this fraction of the rows (random, keyed)
        fits the map, the rest is validated. The map is then fixed given the validated
        rows, so their validation has its nominal level exactly, for the fitted map:
        a map fitted on few rows is itself off, and many held-out rows see it
        (:meth:`RecalCheck.map_scale_note` says when that explains an ``invalid``
        average calibration).
    n_bins, pop_min, min_block
        As :func:`fit_recalibration`.
    seed : int, optional
        Root seed of the folds, of ``auto`` and of :func:`uqx.validate` (its
        ``compute.seed``; a ``compute`` given with a seed of its own is refused).
    **validate_kwargs
        Passed to :func:`uqx.validate` (``stats``, ``bootstrap``, ``copies``,
        ``compute``...).

    Returns
    -------
    RecalCheck
    """
    compute = as_group(validate_kwargs.pop("compute", None), Compute)
    if compute.seed is not None:
        raise InputError("check_recalibration takes its root seed as seed=, which also "
                         "seeds the folds; compute= without one")
    name, E, uE, Xs = _one_set(data, X)
    _check_method(method, Xs)
    seed = resolve_seed(seed)
    cf = None
    if split is None:
        cf = cross_fit(E, uE, Xs, method=method, folds=folds, seed=seed, n_bins=n_bins,
                       pop_min=pop_min, min_block=min_block)
        sc = cross_fit(E, uE, None, method="scale", folds=folds, seed=seed)
        rows, u, u_scale, methods = np.arange(E.size), cf.u, sc.u, cf.methods
        design = f"{int(folds)}-fold cross-fitting"
        fit_zms_se = n_fit = None
    else:
        if not 0.0 < float(split) < 1.0:
            raise InputError(f"split is the fraction of rows that fits the map, strictly "
                             f"between 0 and 1, got {split}")
        ss = _keyed(seed, "split", E=E, uE=uE)
        perm = np.random.Generator(np.random.PCG64(ss)).permutation(E.size)
        n_fit = int(round(float(split) * E.size))
        train, rows = np.sort(perm[:n_fit]), np.sort(perm[n_fit:])
        if np.intersect1d(train, rows).size:  # pragma: no cover - by construction
            raise RuntimeError("split leaked")
        Xtr = None if Xs is None else Xs[train]
        chosen, params, _ = _fit(method, E[train], uE[train], Xtr, n_bins=n_bins,
                                 pop_min=pop_min, min_block=min_block,
                                 ss=_keyed(seed, "auto", E=E[train], uE=uE[train]))
        u = apply_map(chosen, params, uE[rows], None if Xs is None else Xs[rows])
        u_scale = apply_map("scale", fit_map("scale", E[train], uE[train]), uE[rows])
        # the map's own scale error: ZMS of its fitting rows, recalibrated
        z2_fit = (E[train] / apply_map(chosen, params, uE[train], Xtr)) ** 2
        fit_zms_se = float(z2_fit.std(ddof=1) / np.sqrt(z2_fit.size))
        methods = [chosen]
        design = f"single split (map fitted on {n_fit} rows, {rows.size} held out)"
    Eh, uEh = E[rows], uE[rows]
    Xh = None if Xs is None else Xs[rows]
    both = stack([from_arrays(Eh, uEh, X=Xh, name="before"),
                  from_arrays(Eh, u, X=Xh, name="after")])
    res = validate(both, compute=replace(compute, seed=seed), **validate_kwargs)
    return RecalCheck(name=str(name), method=method, methods=list(methods), design=design,
                      rows=rows, E=Eh, uE=uEh, u=u, nll_before=gaussian_nll(Eh, uEh),
                      nll_after=gaussian_nll(Eh, u), nll_scale=gaussian_nll(Eh, u_scale),
                      result=res, crossfit=cf, has_x=Xs is not None, u_scale=u_scale,
                      fit_zms_se=fit_zms_se, n_fit=n_fit)
