"""The recommended validation workflow (paper 000 Fig. 1, paper 001 Sect. V).

For every data set:

1. **Fit for purpose?** Tailedness of u², E², Z² (β_GM, κ_CS) against the safety limits
   of 001 Table II; statistics depending on an exceeded metric get a warning.
2. **Statistics with a predefined reference** (ZMS → 1, RCE → 0, Var(Z) → 1, mean Z → 0,
   NLL → NLL_ref): BCa bootstrap interval and ζ_BS; validated iff |ζ| ≤ 1.
3. **Statistics without** (CC, ENCE, UCE, ZMSE, ZVE): simulated references for D = N(0,1)
   and D = t_s(ν) (default ν = 6); if they differ beyond their Monte-Carlo uncertainty the
   statistic is *D-sensitive* and cannot be validated; otherwise ζ_Sim with the normal
   reference and target uncertainty 2u(θ̃). ζ_Sim2 is reported for comparison only.
4. **Conditional calibration**: LZISD per bin with bootstrap intervals on uE (consistency)
   and on X / V (adaptivity) when present; fraction of valid bins (1 ∈ CI) with a
   Wilson-cc interval, compatible with the nominal 95 %?

The result is one :class:`xarray.Dataset` over (``set``, ``stat``) that round-trips
through NetCDF (:func:`uqx.io.to_netcdf`) and renders with :func:`result_table`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import xarray as xr

from uqx import __version__
from uqx.bootstrap import bootstrap, bootstrap_per_bin
from uqx.data import InputError, as_stacked, iter_sets
from uqx.reference import (
    DISTRIBUTIONS,
    binomial_ci,
    d_sensitive,
    simulate_reference,
    zeta_score,
    zeta_sim2,
)
from uqx.render import (  # noqa: F401  (re-exported for compatibility)
    WARN_SEP,
    paper_table_a,
    paper_table_iv,
    result_records,
    result_table,
    split_warnings,
)
from uqx.resample import resolve_seed
from uqx.statistic import STAT_INFO, parse_stat
from uqx.stats.tailedness import (
    SAFETY_LIMITS,
    STATISTIC_DEPENDENCIES,
    TAILEDNESS_KEYS,
    tailedness,
)

__all__ = [
    "validate",
    "result_table",
    "result_records",
    "paper_table_iv",
    "paper_table_a",
    "DEFAULT_STATS",
    "TAILEDNESS_VARS",
]

DEFAULT_STATS = ("zms", "rce", "cc", "ence", "zmse", "zve")
TAILEDNESS_VARS = TAILEDNESS_KEYS
_NOMINAL_FVAL = 0.95


def _predefined(base, estimates):
    """Predefined reference of a statistic, or None (see STAT_INFO)."""
    ref = STAT_INFO.get(base, (None, None))[1]
    if isinstance(ref, str):  # data-dependent reference, e.g. NLL_ref
        return estimates[ref]
    return ref


def _tail_warnings(t):
    """{stat: [messages]} for statistics whose tailedness metrics exceed the limits."""
    out = {}
    for stat, metrics in STATISTIC_DEPENDENCIES.items():
        msgs = [
            f"{m}={float(t[m]):.3g} > {SAFETY_LIMITS[m]:g}"
            for m in metrics
            if np.isfinite(t[m]) and t[m] > SAFETY_LIMITS[m]
        ]
        if msgs:
            out[stat] = msgs
    return out


def validate(
    ds,
    stats: Sequence[str] = DEFAULT_STATS,
    *,
    n_boot: int = 10_000,
    n_mc: int = 10_000,
    seed: int | None = None,
    bins: int = 20,
    binning: str = "equal-count",
    pop_min: int = 30,
    level: float = 0.95,
    nu: float = 6.0,
    simulate_all: bool = False,
    conditional: bool = True,
    cond_bins: int | None = None,
    cond_n_boot: int | None = None,
    scheduler=None,
    num_workers: int | None = None,
) -> xr.Dataset:
    r"""Validate average calibration, consistency and adaptivity of uncertainties.

    Implements the decision tree of paper 000 Fig. 1 (METHODS.md §7); see the module
    docstring for the steps.

    Parameters
    ----------
    ds : xarray.Dataset
        One data set or several stacked on ``set`` (:func:`uqx.stack`).
    stats : sequence of str
        Statistics (default ZMS, RCE, CC, ENCE, ZMSE, ZVE).
    n_boot : int, default 10000
        Bootstrap replicates for the BCa intervals (shared by all statistics).
    n_mc : int, default 10000
        Simulated data sets per generative distribution for the references.
    seed : int, optional
        Root seed (recorded in ``attrs["seed"]``; drawn if omitted).
    bins, binning, pop_min : int, str, int
        Binning of the binned statistics (default 20 equal-count bins on uE).
    level : float, default 0.95
        Confidence level of the intervals.
    nu : float, default 6
        Degrees of freedom of the Student generative distribution t_s(ν).
    simulate_all : bool
        Also simulate references of statistics with a predefined one (000 Table A1).
    conditional : bool
        Compute LZISD per bin and the fraction of valid bins on uE and X/V.
    cond_bins, cond_n_boot : int, optional
        Bins and replicates for the conditional analysis (default: ErrViewLib's
        max(min(floor(M/150), 15), 2) bins and ``min(n_boot, 5000)`` replicates).

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``stat``): ``estimate``, ``bias``, ``se``, ``ci_low``,
        ``ci_high``, ``reference``, ``reference_se``, ``zeta``, ``valid`` (1/0, NaN when
        undetermined), ``verdict``, ``reference_kind``, ``warnings``; over (``set``,
        ``stat``, ``dist``): ``sim_reference``, ``sim_reference_se``, ``sim2_low``,
        ``sim2_high``, ``zeta_sim``, ``zeta_sim2``; over ``set``: tailedness metrics,
        ``set_warnings``; conditional analysis over (``set``, ``cond``, ``bin``) and
        (``set``, ``cond``).

    Examples
    --------
    >>> import numpy as np, uqx
    >>> rng = np.random.default_rng(0)
    >>> u = rng.uniform(0.5, 2.0, 1000)
    >>> ds = uqx.from_arrays(u * rng.standard_normal(1000), u, name="toy")
    >>> res = uqx.validate(ds, ["zms", "rce"], n_boot=500, seed=1, conditional=False)
    >>> res.verdict.sel(stat="zms").item()
    'valid'
    """
    specs = [parse_stat(s) for s in stats]
    if any(s.vector for s in specs):
        raise InputError("per-bin statistics are part of the conditional analysis, not 'stats'")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InputError(f"duplicate statistics in {list(stats)}")
    seed = resolve_seed(seed)
    ds = as_stacked(ds)
    sets = list(iter_sets(ds))
    set_names = ds["set"].values
    S, K = len(sets), len(names)
    common = dict(
        bins=bins, binning=binning, pop_min=pop_min, scheduler=scheduler, num_workers=num_workers
    )

    # 1. tailedness screening
    tails = {k: np.full(S, np.nan) for k in TAILEDNESS_VARS}
    stat_warn = [[[] for _ in range(K)] for _ in range(S)]
    set_warn = [[] for _ in range(S)]
    for i, sd in enumerate(sets):
        t = tailedness(sd.E, sd.uE)
        for k in TAILEDNESS_VARS:
            tails[k][i] = float(t[k])
        tw = _tail_warnings(t)
        for j, s in enumerate(specs):
            if s.base in tw:
                stat_warn[i][j].append("heavy tails, may be unreliable: " + ", ".join(tw[s.base]))
        if tw:
            exceeded = sorted({m.split("=")[0] for v in tw.values() for m in v})
            set_warn[i].append(f"tailedness above the 001 safety limits: {', '.join(exceeded)}")
        if int(ds["n_dropped"].values[i]) if "n_dropped" in ds else 0:
            set_warn[i].append(f"{int(ds['n_dropped'].values[i])} row(s) dropped by filters")

    # 2. bootstrap of everything, shared resamples
    need_nll_ref = any(s.base == "nll" for s in specs) and "nll_ref" not in names
    boot_names = names + (["nll_ref"] if need_nll_ref else [])
    bs = bootstrap(ds, boot_names, n_boot=n_boot, method="bca", level=level, seed=seed, **common)
    est = bs["estimate"].values
    out = {k: bs[k].values[:, :K].copy() for k in ("estimate", "bias", "se", "ci_low", "ci_high")}
    reference = np.full((S, K), np.nan)
    reference_se = np.full((S, K), np.nan)
    zeta = np.full((S, K), np.nan)
    valid = np.full((S, K), np.nan)
    verdict = np.full((S, K), "", dtype=object)
    kind = np.full((S, K), "", dtype=object)
    for i in range(S):
        for j in range(K):
            lo, hi, e = out["ci_low"][i, j], out["ci_high"][i, j], out["estimate"][i, j]
            if np.isnan(lo) or np.isnan(hi):
                stat_warn[i][j].append(
                    "degenerate BCa interval (all replicates on one side "
                    "of the estimate, or constant jackknife)"
                )
            elif not lo <= e <= hi:
                stat_warn[i][j].append(
                    f"BCa interval excludes the estimate: bootstrap bias {out['bias'][i, j]:.3g} "
                    "is large against the interval (typical of binned statistics of "
                    "well-calibrated data, 000 App. A), so the interval is unreliable"
                )
    for j in range(K):
        if int(bs["n_nan"].values[:, j].sum()):
            for i in range(S):
                n = int(bs["n_nan"].values[i, j])
                if n:
                    stat_warn[i][j].append(f"{n} NaN bootstrap replicate(s)")

    # 3a. predefined references
    for i in range(S):
        est_i = dict(zip(boot_names, est[i], strict=False))
        for j, s in enumerate(specs):
            ref = _predefined(s.base, est_i)
            if ref is None:
                continue
            reference[i, j] = ref
            reference_se[i, j] = 0.0
            kind[i, j] = "predefined" if s.base != "nll" else "predefined (NLL_ref)"
            zeta[i, j] = zeta_score(est[i, j], ref, out["ci_low"][i, j], out["ci_high"][i, j])

    # 3b. simulated references for D = N and t_s(nu)
    sim_idx = [j for j, s in enumerate(specs) if simulate_all or np.all(kind[:, j] == "")]
    dists = list(DISTRIBUTIONS)
    dists[1] = f"T{nu:g}"
    D = len(dists)
    sim = {k: np.full((S, K, D), np.nan) for k in ("ref", "se", "lo", "hi", "zs", "zs2")}
    if sim_idx:
        sim_names = [names[j] for j in sim_idx]
        for d, (dist, dnu) in enumerate([("normal", None), ("t", nu)]):
            r = simulate_reference(
                ds, sim_names, dist=dist, nu=dnu or 6.0, n_mc=n_mc, seed=seed, level=level, **common
            )
            for jj, j in enumerate(sim_idx):
                sim["ref"][:, j, d] = r["reference"].values[:, jj]
                sim["se"][:, j, d] = r["reference_se"].values[:, jj]
                sim["lo"][:, j, d] = r["sim2_low"].values[:, jj]
                sim["hi"][:, j, d] = r["sim2_high"].values[:, jj]
        e3 = out["estimate"][:, :, None]
        sim["zs"] = zeta_score(
            e3,
            sim["ref"],
            out["ci_low"][:, :, None],
            out["ci_high"][:, :, None],
            target_u=2 * sim["se"],
        )
        sim["zs2"] = zeta_sim2(e3, sim["ref"], sim["lo"], sim["hi"])
        sens = d_sensitive(
            sim["ref"][..., 0], sim["se"][..., 0], sim["ref"][..., 1], sim["se"][..., 1]
        )
        for j in sim_idx:
            for i in range(S):
                if kind[i, j]:
                    continue
                reference[i, j] = sim["ref"][i, j, 0]
                reference_se[i, j] = sim["se"][i, j, 0]
                if sens[i, j]:
                    kind[i, j] = "D-sensitive"
                    stat_warn[i][j].append(
                        f"reference depends on D (N {sim['ref'][i, j, 0]:.4g} vs "
                        f"{dists[1]} {sim['ref'][i, j, 1]:.4g}): not validated"
                    )
                else:
                    kind[i, j] = "simulated-N"
                    zeta[i, j] = sim["zs"][i, j, 0]
                    half = (out["ci_high"][i, j] - out["ci_low"][i, j]) / 2
                    if 2 * sim["se"][i, j, 0] > 0.1 * half:
                        stat_warn[i][j].append(
                            f"Monte-Carlo uncertainty of the reference is not negligible "
                            f"(2u = {2 * sim['se'][i, j, 0]:.2g}), increase n_mc"
                        )

    with np.errstate(invalid="ignore"):
        valid = np.where(np.isnan(zeta), np.nan, (np.abs(zeta) <= 1).astype(float))
    for i in range(S):
        for j in range(K):
            if kind[i, j] == "D-sensitive":
                verdict[i, j] = "D-sensitive"
            elif np.isnan(valid[i, j]):
                verdict[i, j] = "undetermined"
            else:
                verdict[i, j] = "valid" if valid[i, j] else "invalid"

    data = {
        "estimate": (("set", "stat"), out["estimate"], {"long_name": "point estimate"}),
        "bias": (("set", "stat"), out["bias"], {"long_name": "bootstrap bias mean(T) - t0"}),
        "se": (("set", "stat"), out["se"], {"long_name": "bootstrap standard error"}),
        "ci_low": (("set", "stat"), out["ci_low"], {"long_name": f"BCa {level:.0%} lower limit"}),
        "ci_high": (("set", "stat"), out["ci_high"], {"long_name": f"BCa {level:.0%} upper limit"}),
        "reference": (("set", "stat"), reference, {"long_name": "reference value"}),
        "reference_se": (
            ("set", "stat"),
            reference_se,
            {"long_name": "standard uncertainty of the reference (Monte-Carlo)"},
        ),
        "zeta": (("set", "stat"), zeta, {"long_name": "zeta-score (000 Eq. 20)"}),
        "valid": (
            ("set", "stat"),
            valid,
            {"long_name": "|zeta| <= 1 (1 valid, 0 invalid, NaN undetermined)"},
        ),
        "verdict": (("set", "stat"), verdict.astype(str), {"long_name": "validation verdict"}),
        "reference_kind": (
            ("set", "stat"),
            kind.astype(str),
            {"long_name": "predefined / simulated-N / D-sensitive"},
        ),
        "warnings": (
            ("set", "stat"),
            np.array([[WARN_SEP.join(w) for w in row] for row in stat_warn], dtype=str),
            {"long_name": "warnings"},
        ),
        "set_warnings": (
            "set",
            np.array([WARN_SEP.join(w) for w in set_warn], dtype=str),
            {"long_name": "data-set level warnings"},
        ),
        "sim_reference": (
            ("set", "stat", "dist"),
            sim["ref"],
            {"long_name": "simulated reference (Sim)"},
        ),
        "sim_reference_se": (
            ("set", "stat", "dist"),
            sim["se"],
            {"long_name": "MC standard error of Sim"},
        ),
        "sim2_low": (
            ("set", "stat", "dist"),
            sim["lo"],
            {"long_name": "Sim2 interval lower limit"},
        ),
        "sim2_high": (
            ("set", "stat", "dist"),
            sim["hi"],
            {"long_name": "Sim2 interval upper limit"},
        ),
        "zeta_sim": (("set", "stat", "dist"), sim["zs"], {"long_name": "zeta_Sim (U_t = 2u)"}),
        "zeta_sim2": (
            ("set", "stat", "dist"),
            sim["zs2"],
            {"long_name": "zeta_Sim2 (comparison only)"},
        ),
    }
    for k in TAILEDNESS_VARS:
        data[k] = (
            "set",
            tails[k],
            {"long_name": k.replace("_", " "), "safety_limit": SAFETY_LIMITS.get(k, np.nan)},
        )
    res = xr.Dataset(
        data,
        coords={
            "set": set_names,
            "stat": names,
            "dist": dists,
            "M": ("set", np.array([sd.M for sd in sets])),
        },
        attrs={
            "title": "uqx validation of prediction uncertainties",
            "workflow": "Pernot 2024 (000) Fig. 1 / (001) Sect. V",
            "uqx_version": __version__,
            "seed": int(seed),
            "n_boot": int(n_boot),
            "n_mc": int(n_mc),
            "level": float(level),
            "n_bins": int(bins),
            "binning_scheme": binning,
            "pop_min": int(pop_min),
            "nu": float(nu),
            "d_sensitivity_rule": "|ref_N - ref_T| > 2 sqrt(u_N^2 + u_T^2)",
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        },
    )
    if conditional:
        res = res.merge(
            _conditional(
                ds,
                sets,
                seed,
                level,
                cond_bins,
                min(n_boot, 5000) if cond_n_boot is None else cond_n_boot,
                pop_min,
                scheduler,
                num_workers,
            )
        )
    return res


def default_cond_bins(M: int) -> int:
    """ErrViewLib default bins for local analyses: max(min(floor(M/150), 15), 2)."""
    return max(min(M // 150, 15), 2)


def _conditional(ds, sets, seed, level, cond_bins, n_boot, pop_min, scheduler, num_workers):
    conds = ["uE"] + [c for c in ("X", "V") if any(getattr(sd, c) is not None for sd in sets)]
    S = len(sets)
    per = []
    for c in conds:
        nbins = cond_bins or default_cond_bins(min(sd.M for sd in sets))
        have = [i for i, sd in enumerate(sets) if c == "uE" or getattr(sd, c) is not None]
        sub = ds.isel(set=have)
        stat = "lzisd" if c == "uE" else f"lzisd_{c}"
        r = bootstrap_per_bin(
            sub,
            stat,
            n_boot=n_boot,
            level=level,
            seed=seed,
            bins=nbins,
            pop_min=pop_min,
            scheduler=scheduler,
            num_workers=num_workers,
        )
        r = r.reindex(set=ds["set"].values)
        per.append(r[["estimate", "ci_low", "ci_high", "n", "x_mid"]].expand_dims(cond=[c]))
    lz = xr.concat(per, dim="cond", join="outer")
    with np.errstate(invalid="ignore"):
        ok = (lz["ci_low"] - 1) * (lz["ci_high"] - 1) <= 0
    nb = lz["estimate"].notnull().sum("bin")
    nv = (ok & lz["estimate"].notnull()).sum("bin")
    with np.errstate(invalid="ignore", divide="ignore"):
        fval = (nv / nb).where(nb > 0)
        lo, hi = binomial_ci(nv.values, nb.values, method="wilsoncc")
    out = xr.Dataset(
        {
            "lzisd": lz["estimate"].assign_attrs(long_name="LZISD per bin, Var(Z)^-1/2"),
            "lzisd_ci_low": lz["ci_low"].assign_attrs(long_name="LZISD BCa lower limit"),
            "lzisd_ci_high": lz["ci_high"].assign_attrs(long_name="LZISD BCa upper limit"),
            "bin_n": lz["n"].assign_attrs(long_name="bin population"),
            "bin_x_mid": lz["x_mid"].assign_attrs(
                long_name="bin mid-range of the conditioning variable"
            ),
            "fval": fval.assign_attrs(long_name="fraction of bins whose LZISD interval contains 1"),
            "fval_ci_low": (
                fval.dims,
                np.where(nb > 0, lo, np.nan),
                {"long_name": "Wilson-cc lower limit"},
            ),
            "fval_ci_high": (
                fval.dims,
                np.where(nb > 0, hi, np.nan),
                {"long_name": "Wilson-cc upper limit"},
            ),
        }
    )
    out["conditional_valid"] = (
        fval.dims,
        np.where(
            nb.values > 0, (out["fval_ci_high"].values >= _NOMINAL_FVAL).astype(float), np.nan
        ),
        {"long_name": f"fraction of valid bins compatible with {_NOMINAL_FVAL:.0%} (Wilson-cc)"},
    )
    out = out.transpose("set", "cond", ...)
    del S
    return out
