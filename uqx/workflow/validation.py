"""The recommended validation workflow (paper 000 Fig. 1, paper 001 Sect. V), extended.

For every data set, named steps each return a fragment of the result, merged at the end:

1. :func:`_tailedness_step` — **fit for purpose?** β_GM, κ_CS of u², E², Z² against the
   safety limits of 001 Table II; statistics that depend on an exceeded metric get a
   warning. κ_CS of Z² also gives the data-matched t_s(ν̂) of the null family.
2. :func:`_bootstrap_step` — BCa intervals of every statistic from shared resamples.
3. :func:`_reference_step` — predefined references (ZMS → 1, RCE → 0, Var(Z) → 1, mean Z
   → 0, NLL → NLL_ref) give ζ_BS; the others get simulated references for the papers'
   generative distributions D (N(0,1) and t_s(ν), ν = 6) and ζ_Sim, ζ_Sim2. Every tested
   statistic is simulated under every member of the null family (:mod:`uqx.engine.mctest`:
   N, t_s(ν), t_s(ν̂), the data's own z-scores resampled), the copies kept.
4. :func:`~uqx.inference.decision.verdict_step` — one verdict per statistic: its Monte-Carlo
   p-value under each member, combined by :func:`uqx.engine.mctest.family_verdict`; the papers' ζ
   rule is kept in ``zeta_verdict`` (:mod:`uqx.engine.verdict`).
5. :func:`_conditional_steps` — consistency (bins on uE) and adaptivity (bins on X, V):
   LZISD per bin and the fraction of valid bins (a diagnostic), the zero-bin
   extrapolation of ENCE, ZMSE and ZVE with the intercepts' Monte-Carlo p-values, and the
   headline (:func:`uqx.workflow.conditional.headline_step`): the routes' min-p calibrated on
   their shared copies.
6. :func:`~uqx.inference.decision.familywise_step` — an ``invalid`` must also hold once every test
   of the set is taken together (single-step min-p at 10 %).

The rules and their measured error rates: the documentation page "How to read the
verdicts" and the ``error-rates`` study (:mod:`uqx.sweeps.error_rates`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np
import xarray as xr

from uqx._version import __version__
from uqx.dataio.model import InputError, as_stacked, iter_sets
from uqx.engine.confidence import bca_limits_mc_se
from uqx.engine.defaults import LEVEL, N_BINS, N_BOOT, N_MC, NU, POP_MIN
from uqx.engine.mctest import N_TEST, t_nu_from_tails
from uqx.engine.resample import content_key, resolve_seed
from uqx.engine.statistic import STAT_INFO, parse_stat
from uqx.engine.stats.tailedness import (
    SAFETY_LIMITS,
    STATISTIC_DEPENDENCIES,
    TAILEDNESS_KEYS,
    tailedness,
)
from uqx.engine.verdict import NOT_TESTED
from uqx.inference.bootstrap import bootstrap
from uqx.inference.decision import familywise_step, verdict_step
from uqx.inference.reference import prepare_sets, simulate_reference
from uqx.inference.zeta import d_sensitive, zeta_score, zeta_sim2
from uqx.workflow.settings import Settings
from uqx.workflow.tables import (  # noqa: F401  (re-exported for compatibility)
    WARN_SEP,
    paper_table_a,
    paper_table_iv,
    result_records,
    result_table,
    split_warnings,
)

__all__ = ["validate", "DEFAULT_STATS", "TAILEDNESS_VARS"]

DEFAULT_STATS = ("zms", "rce", "cc", "ence", "zmse", "zve")
TAILEDNESS_VARS = TAILEDNESS_KEYS
_EXTRAP_STATS = ("ence", "zmse", "zve")


class _Notes:
    """Warnings collected by the steps: per (set, stat) and per set."""

    def __init__(self, n_sets, n_stats):
        self.by_stat = [[[] for _ in range(n_stats)] for _ in range(n_sets)]
        self.by_set = [[] for _ in range(n_sets)]

    def stat(self, i, j, text):
        if text not in self.by_stat[i][j]:
            self.by_stat[i][j].append(text)

    def set(self, i, text):
        if text not in self.by_set[i]:
            self.by_set[i].append(text)

    def variables(self):
        return {
            "warnings": (
                ("set", "stat"),
                np.array([[WARN_SEP.join(w) for w in row] for row in self.by_stat], dtype=str),
                {"long_name": "warnings"},
            ),
            "set_warnings": (
                "set",
                np.array([WARN_SEP.join(w) for w in self.by_set], dtype=str),
                {"long_name": "data-set level warnings"},
            ),
        }


def _predefined(base, estimates):
    """Predefined reference of a statistic, or None (see STAT_INFO)."""
    ref = STAT_INFO.get(base, (None, None))[1]
    if isinstance(ref, str):  # data-dependent reference, e.g. NLL_ref
        return estimates[ref]
    return ref


def _tailedness_step(sets, specs, notes) -> xr.Dataset:
    """Step 1: tailedness metrics per set; warnings for the statistics that depend on them."""
    tails = {k: np.full(len(sets), np.nan) for k in TAILEDNESS_VARS}
    for i, sd in enumerate(sets):
        t = tailedness(sd.E, sd.uE)
        for k in TAILEDNESS_VARS:
            tails[k][i] = float(t[k])
        exceeded = [
            m for m in sorted({m for ms in STATISTIC_DEPENDENCIES.values() for m in ms})
            if np.isfinite(t[m]) and t[m] > SAFETY_LIMITS[m]
        ]
        for j, s in enumerate(specs):
            dep = [m for m in STATISTIC_DEPENDENCIES.get(s.base, ()) if m in exceeded]
            if dep:
                notes.stat(i, j, "heavy tails make this statistic unreliable "
                           f"({', '.join(dep)} above the safety limits; 001 Table II)")
        if exceeded:
            vals = ", ".join(f"{m} = {float(t[m]):.3g} > {SAFETY_LIMITS[m]:g}" for m in exceeded)
            notes.set(i, f"tailedness above the safety limits: {vals} (001 Table II)")
    return xr.Dataset({
        k: ("set", tails[k], {"long_name": k.replace("_", " "),
                              "safety_limit": SAFETY_LIMITS.get(k, np.nan)})
        for k in TAILEDNESS_VARS
    })


def _bootstrap_step(ds, specs, notes, *, n_boot, level, seed, common) -> xr.Dataset:
    """Step 2: BCa bootstrap of every statistic with shared resamples, limit MC errors."""
    names = [s.name for s in specs]
    need_ref = any(s.base == "nll" for s in specs) and "nll_ref" not in names
    boot_names = names + (["nll_ref"] if need_ref else [])
    bs = bootstrap(ds, boot_names, n_boot=n_boot, method="bca", level=level, seed=seed,
                   keep_replicates=True, **common)
    T = bs["replicates"].values  # (set, stat, R+1), t0 first
    S, K = T.shape[:2]
    se_lo = np.full((S, K), np.nan)
    se_hi = np.full((S, K), np.nan)
    for i in range(S):
        se_lo[i], se_hi[i] = bca_limits_mc_se(T[i].T, bs["estimate"].values[i],
                                              bs["acceleration"].values[i], level=level)
    for i in range(S):
        for j in range(len(names)):
            n = int(bs["n_nan"].values[i, j])
            if n:
                notes.stat(i, j, f"{n} NaN bootstrap replicate(s) (statistic undefined on "
                           "some resamples)")
    out = bs[["estimate", "bias", "se", "ci_low", "ci_high", "z0", "acceleration"]]
    out = out.assign(ci_low_se=(("set", "stat"), se_lo), ci_high_se=(("set", "stat"), se_hi))
    out["ci_low"].attrs["long_name"] = f"BCa {level:.0%} lower limit"
    out["ci_high"].attrs["long_name"] = f"BCa {level:.0%} upper limit"
    out["ci_low_se"].attrs["long_name"] = "Monte-Carlo standard error of ci_low"
    out["ci_high_se"].attrs["long_name"] = "Monte-Carlo standard error of ci_high"
    return out.drop_vars(["M"], errors="ignore")


def _dists(nu):
    return [("normal", None, "N"), ("t", float(nu), f"T{nu:g}")]


def _members(nu, tails):
    """Null family of the Monte-Carlo tests: the papers' D and the data-matched t_s(ν̂)."""
    nu_fit = t_nu_from_tails(tails["kappa_cs_z2"].values)
    return _dists(nu) + [("t", nu_fit, "fit"), ("data", None, "data")], nu_fit


def _predefined_references(boot, specs):
    """Predefined reference, its kind and ζ_BS of every (set, stat) that has one."""
    S, K = boot.sizes["set"], len(specs)
    est_all = boot["estimate"].values  # may hold nll_ref after the requested statistics
    lo, hi = boot["ci_low"].values[:, :K], boot["ci_high"].values[:, :K]
    ref = np.full((S, K), np.nan)
    kind = np.full((S, K), "", dtype=object)
    zeta = np.full((S, K), np.nan)
    names = list(boot["stat"].values)
    for i in range(S):
        est_i = dict(zip(names, est_all[i], strict=True))
        for j, s in enumerate(specs):
            r = _predefined(s.base, est_i)
            if r is not None:
                ref[i, j] = r
                kind[i, j] = "predefined" if s.base != "nll" else "predefined (NLL_ref)"
                zeta[i, j] = zeta_score(est_all[i, j], r, lo[i, j], hi[i, j])
    return ref, kind, zeta


def _reference_step(ds, specs, boot, notes, *, n_mc, seed, level, nu, simulate_all, common,
                    members, hooks=None):
    """Step 3: predefined references and ζ_BS; simulated references, ζ_Sim and the nulls.

    Every tested statistic is simulated under every member of the null family
    (:func:`_members`); the papers' references (mean, Sim2, ζ_Sim) are kept for the
    statistics without a predefined one (all with ``simulate_all``). ``hooks`` (one per
    set, or None) reuse the simulation draws for the extrapolation nulls.

    Returns
    -------
    xarray.Dataset, dict, numpy.ndarray
        The fragment; the extrapolation nulls {set index: [one per member]}; the
        simulated values (set, stat, member, mc) of every tested statistic.
    """
    S, K = boot.sizes["set"], len(specs)
    est = boot["estimate"].values[:, :K]
    lo, hi = boot["ci_low"].values[:, :K], boot["ci_high"].values[:, :K]
    ref, kind, zeta = _predefined_references(boot, specs)
    D = 2  # the papers' N and t_s(ν)
    sim = {k: np.full((S, K, D), np.nan) for k in ("ref", "se", "lo", "hi")}
    tested = [j for j, s in enumerate(specs) if s.base not in NOT_TESTED]
    sim_idx = [j for j in tested if simulate_all or np.all(kind[:, j] == "")]
    draws = np.full((S, K, len(members), n_mc), np.nan)
    nulls = {}
    n_test = min(n_mc, N_TEST)
    names = [specs[j].name for j in tested]
    # one sort of uE and one set of bins per set, shared by every member and copy
    prepared = prepare_sets(ds, names, bins=common["bins"], binning=common["binning"],
                            pop_min=common["pop_min"], pool=True) if tested else None
    for d, (dist, dnu, label) in enumerate(members):
        # the papers' references need n_mc copies, a test N_TEST; one keyed stream per
        # member, so the first copies are the same draws for every statistic: one call
        # per member, the test-only statistics keep the first n_test copies
        full = sim_idx if d < D else []
        n = n_mc if full else n_test
        if not tested:
            continue
        r = simulate_reference(ds, names, dist=dist, nu=NU if dnu is None else dnu,
                               n_mc=n, seed=seed, level=level, hooks=hooks,
                               keep_draws=True, label=label if np.ndim(dnu) else None,
                               prepared=prepared, **common)
        if isinstance(r, tuple):
            r, hooked = r
            for i, arr in hooked.items():
                nulls.setdefault(i, []).append(arr)
        for jj, j in enumerate(tested):
            m = n if j in full else n_test
            draws[:, j, d, :m] = r["draws"].values[:, jj, :m]
            if j in full:
                sim["ref"][:, j, d] = r["reference"].values[:, jj]
                sim["se"][:, j, d] = r["reference_se"].values[:, jj]
                sim["lo"][:, j, d] = r["sim2_low"].values[:, jj]
                sim["hi"][:, j, d] = r["sim2_high"].values[:, jj]
    e3 = est[..., None]
    zs = zeta_score(e3, sim["ref"], lo[..., None], hi[..., None], target_u=2 * sim["se"])
    zs2 = zeta_sim2(e3, sim["ref"], sim["lo"], sim["hi"])
    sens = d_sensitive(sim["ref"][..., 0], sim["se"][..., 0], sim["ref"][..., 1], sim["se"][..., 1])
    for j in sim_idx:
        for i in range(S):
            if kind[i, j]:
                continue
            kind[i, j] = "simulated"
            ref[i, j] = sim["ref"][i, j, 0]
            zeta[i, j] = zs[i, j, 0]
    ref_se = np.where(kind == "simulated", sim["se"][..., 0], np.where(kind != "", 0.0, np.nan))
    sdims = ("set", "stat", "dist")
    frag = xr.Dataset(
        {
            "reference": (("set", "stat"), ref, {"long_name": "reference value (N for simulated)"}),
            "reference_se": (("set", "stat"), ref_se,
                             {"long_name": "standard uncertainty of the reference (Monte-Carlo)"}),
            "zeta": (("set", "stat"), zeta, {"long_name": "zeta-score (000 Eq. 20): zeta_BS or "
                                             "zeta_Sim with D = N"}),
            "reference_kind": (("set", "stat"), kind.astype(str),
                               {"long_name": "predefined / simulated / none"}),
            "d_sensitive": (("set", "stat"), sens & (kind == "simulated"),
                            {"long_name": "references of the distributions differ beyond "
                             "2 sqrt(u_N^2 + u_T^2)"}),
            "sim_reference": (sdims, sim["ref"], {"long_name": "simulated reference (Sim)"}),
            "sim_reference_se": (sdims, sim["se"], {"long_name": "MC standard error of Sim"}),
            "sim2_low": (sdims, sim["lo"], {"long_name": "Sim2 interval lower limit"}),
            "sim2_high": (sdims, sim["hi"], {"long_name": "Sim2 interval upper limit"}),
            "zeta_sim": (sdims, zs, {"long_name": "zeta_Sim (U_t = 2u) per distribution"}),
            "zeta_sim2": (sdims, zs2, {"long_name": "zeta_Sim2 (comparison only)"}),
        },
        coords={"dist": [lab for *_, lab in members[:D]]},
    )
    return frag, {i: n for i, n in nulls.items() if len(n) == len(members)}, draws


def _binning_used(sets, specs, *, bins, binning, pop_min, notes):
    """Bins actually used per set by the binned statistics on uE (with a note if capped)."""
    from uqx.engine.binning import make_bins

    used = np.full(len(sets), -1, dtype=np.int64)
    if not any(s.family == "binned" for s in specs):
        return used
    for i, sd in enumerate(sets):
        try:
            used[i] = make_bins(sd.uE, bins, scheme=binning, pop_min=pop_min).n_bins
        except InputError as exc:
            raise InputError(f"{sd.name}: {exc}") from None
        if used[i] < bins and binning != "equal-width":
            notes.set(i, f"{bins} bins requested, {used[i]} used: at least {pop_min} points per "
                      f"bin (M = {sd.M}; lower --pop-min or --bins)")
    return used


def validate(
    ds,
    stats: Sequence[str] | str = DEFAULT_STATS,
    *,
    n_boot: int = N_BOOT,
    n_mc: int = N_MC,
    seed: int | None = None,
    bins: int = N_BINS,
    binning: str = "equal-count",
    pop_min: int = POP_MIN,
    level: float = LEVEL,
    nu: float = NU,
    simulate_all: bool = False,
    conditional: bool = True,
    cond_bins: int | None = None,
    cond_n_boot: int | None = None,
    cond_ci: str = "auto",
    extrapolation_n_mc: int | None = None,
    drop_nonfinite: bool = False,
    scheduler=None,
    num_workers: int | None = None,
) -> xr.Dataset:
    r"""Validate average calibration, consistency and adaptivity of uncertainties.

    Extends the decision tree of paper 000 Fig. 1 with the Monte-Carlo tests of
    :mod:`uqx.engine.mctest` and the conditional routes of :mod:`uqx.workflow.conditional`
    (documentation: How to read the verdicts);
    see the module docstring for the steps.

    Parameters
    ----------
    ds : xarray.Dataset
        One data set or several stacked on ``set`` (:func:`uqx.stack`); checked like
        :func:`uqx.from_arrays` input.
    stats : str or sequence of str
        Statistics (default ZMS, RCE, CC, ENCE, ZMSE, ZVE).
    n_boot : int, default 10000
        Bootstrap replicates for the BCa intervals (shared by all statistics).
    n_mc : int, default 10000
        Simulated data sets per generative distribution for the references.
    seed : int, optional
        Root seed (recorded in ``attrs["seed"]``; drawn if omitted). Random streams are
        keyed by the data's content, not by the set's name.
    bins, binning, pop_min : int, str, int
        Binning of the binned statistics (default 20 equal-count bins on uE, at least 30
        points per bin; the bins actually used are in ``n_bins_used``).
    level : float, default 0.95
        Confidence level of the intervals.
    nu : float, default 6
        Degrees of freedom of the Student generative distribution t_s(ν).
    simulate_all : bool
        Also simulate references of statistics with a predefined one (000 Table A1).
    conditional : bool
        Run the conditional routes: LZISD per bin with the fraction of valid bins, and
        the zero-bin extrapolation of ENCE, ZMSE, ZVE, on uE and on X / V when present.
    cond_bins, cond_n_boot : int, optional
        Bins and replicates of the LZISD analysis (default per set: ErrViewLib's
        max(min(floor(M/150), 15), 2) bins and ``min(n_boot, 5000)`` replicates).
    cond_ci : {"auto", "bootstrap", "cho"}
        LZISD per-bin intervals: BCa from shared resamples, the analytic 'cho' interval
        (methods page, Binned statistics), or 'cho' when every bin holds at least 400
        points (default).
    extrapolation_n_mc : int, optional
        Calibrated copies per distribution for the extrapolation null (default
        ``min(n_mc, N_HEADLINE)``, 200: :data:`uqx.engine.mctest.N_HEADLINE`).
    drop_nonfinite : bool
        Drop (and count) rows with NaN/inf instead of raising :class:`InputError`.

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``stat``): estimates, BCa intervals (with MC errors), references,
        ζ, ``verdict``/``verdict_reason``/``borderline``; over (``set``, ``stat``,
        ``dist``): simulated references and ζ_Sim, ζ_Sim2; over ``set``: tailedness,
        ``n_bins_used``, warnings; over (``set``, ``cond``, ...): the conditional routes
        and ``cond_verdict`` (documentation: "How to read the verdicts").

    Examples
    --------
    >>> import numpy as np, uqx
    >>> rng = np.random.default_rng(0)
    >>> u = rng.uniform(0.5, 2.0, 1000)
    >>> ds = uqx.from_arrays(u * rng.standard_normal(1000), u, name="toy")
    >>> res = uqx.validate(ds, "zms", n_boot=500, seed=1, conditional=False)
    >>> res.verdict.sel(stat="zms").item()
    'valid'
    """
    specs = _check_arguments(stats, n_mc)
    settings = Settings(
        seed=resolve_seed(seed), n_boot=n_boot, n_mc=n_mc, bins=bins, binning=binning,
        pop_min=pop_min, level=level, nu=nu, simulate_all=simulate_all,
        conditional=conditional, cond_bins=cond_bins, cond_n_boot=cond_n_boot,
        cond_ci=cond_ci, extrapolation_n_mc=extrapolation_n_mc, scheduler=scheduler,
        num_workers=num_workers)
    return _workflow(as_stacked(ds, drop_nonfinite=drop_nonfinite), specs, settings)


def _workflow(ds, specs, cfg: Settings) -> xr.Dataset:
    """Run the steps of :func:`validate` on checked, stacked input with settings ``cfg``."""
    sets = list(iter_sets(ds))
    notes = _Notes(len(sets), len(specs))
    common = cfg.binned
    used = _binning_used(sets, specs, bins=cfg.bins, binning=cfg.binning,
                         pop_min=cfg.pop_min, notes=notes)
    for i in range(len(sets)):
        n = int(ds["n_dropped"].values[i]) if "n_dropped" in ds else 0
        if n:
            notes.set(i, f"{n} row(s) dropped by filters")
    tails = _tailedness_step(sets, specs, notes)
    boot = _bootstrap_step(ds, specs, notes, n_boot=cfg.n_boot, level=cfg.level,
                           seed=cfg.seed, common=common)
    n_mc, n_extrap = cfg.n_mc, cfg.n_extrapolation
    hooks = None
    if cfg.conditional and n_extrap >= 2:
        from uqx.workflow.conditional import null_hooks

        hooks = null_hooks(sets, n_copies=min(n_extrap, n_mc, N_TEST))
    members, nu_fit = _members(cfg.nu, tails)
    refs, nulls, draws = _reference_step(
        ds, specs, boot, notes, n_mc=n_mc, seed=cfg.seed, level=cfg.level, nu=cfg.nu,
        simulate_all=cfg.simulate_all, common=common, members=members, hooks=hooks)
    boot = boot.isel(stat=slice(0, len(specs)))
    res = xr.merge([boot, refs, tails], combine_attrs="drop_conflicts")
    labels = [lab for *_, lab in members]
    res = res.merge(verdict_step(res, specs, notes, draws, labels, level=cfg.level))
    res["nu_fit"] = ("set", nu_fit, {"long_name": "degrees of freedom of the data-matched "
                                     "t_s null (inf: normal), from kappa_cs of Z^2"})
    head_copies, route_copies = {}, {}
    if cfg.conditional:
        res, head_copies, route_copies = _conditional_steps(
            res, ds, sets, notes, seed=cfg.seed, level=cfg.level, members=members,
            cond_bins=cfg.cond_bins, n_boot=cfg.n_boot_conditional, pop_min=cfg.pop_min,
            method=cfg.cond_ci, specs=specs, draws=draws,
            n_mc=n_extrap, nulls=nulls if n_extrap <= n_mc else None, common=cfg.compute)
    res = familywise_step(res, specs, draws, head_copies, n_shared=n_extrap if hooks else 0,
                          route_copies=route_copies)
    res = res.merge(xr.Dataset(notes.variables()))
    res = res.assign_coords(set=ds["set"].values, M=("set", np.array([sd.M for sd in sets])))
    res["n_bins_used"] = ("set", used, {"long_name": "bins used by binned statistics on uE "
                                        "(-1: none requested)"})
    return res.assign_attrs(_result_attrs(ds, sets, cfg, extra=res.attrs))


def _check_arguments(stats, n_mc):
    """Parse the statistic names (one name or several) and check the counts."""
    if isinstance(stats, str):
        stats = [stats]
    specs = [parse_stat(s) for s in stats]
    if any(s.vector for s in specs):
        raise InputError("per-bin statistics are part of the conditional analysis, not 'stats'")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InputError(f"duplicate statistics in {list(stats)}")
    if not (isinstance(n_mc, (int, np.integer)) and n_mc >= 2):
        raise InputError(f"n_mc must be an integer >= 2, got {n_mc!r}")
    return specs


def _conditional_steps(res, ds, sets, notes, *, seed, level, members, cond_bins, n_boot,
                       pop_min, n_mc, common, specs, draws, method="auto", nulls=None):
    """Run steps 5–6 and the headline verdict of consistency / adaptivity."""
    from uqx.workflow.conditional import extrapolation_step, headline_step, lzisd_step

    if method not in ("auto", "bootstrap", "cho"):
        raise InputError(f"cond_ci must be auto, bootstrap or cho, got {method!r}")
    lz = lzisd_step(ds, sets, notes, seed=seed, level=level, cond_bins=cond_bins,
                    n_boot=n_boot, pop_min=pop_min, common=common, method=method)
    ex, ex_nulls = extrapolation_step(sets, notes, seed=seed, level=level, members=members,
                                      n_mc=n_mc, nulls=nulls)
    res = res.merge(lz).merge(ex, combine_attrs="override")
    head, head_copies = headline_step(res, specs, draws, ex_nulls, level=level,
                                      shared=nulls is not None)
    return res.merge(head), head_copies, (ex_nulls if nulls is not None else {})


def _result_attrs(ds, sets, cfg: Settings, *, extra):
    """Provenance and parameters of a validation result."""
    digests = [content_key(sd.E, sd.uE) for sd in sets]
    return {
        "title": "uqx validation of prediction uncertainties",
        "workflow": "Pernot 2024 (000) Fig. 1 / (001) Sect. V, "
        "uqx verdict rules (uqx.engine.verdict)",
        "uqx_version": __version__,
        "seed": int(cfg.seed),
        "n_boot": int(cfg.n_boot),
        "n_mc": int(cfg.n_mc),
        "level": float(cfg.level),
        "n_bins": int(cfg.bins),
        "binning_scheme": cfg.binning,
        "pop_min": int(cfg.pop_min),
        "nu": float(cfg.nu),
        "d_sensitivity_rule": "|ref_N - ref_T| > 2 sqrt(u_N^2 + u_T^2)",
        "input_names": [sd.name for sd in sets],
        "input_sizes": [int(sd.M) for sd in sets],
        "input_digests": ["".join(f"{w:08x}" for w in d) for d in digests],
        "input_units": str(ds.attrs.get("units", "")),
        "input_sources": str(ds.attrs.get("sources", "")),
        **{k: v for k, v in extra.items() if k.startswith("extrapolation")},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
