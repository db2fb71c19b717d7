"""The null family's copies of a validation, and the papers' references and ζ-scores.

Every tested statistic is simulated under every member of the null family of the
Monte-Carlo tests (:mod:`uqx.engine.mctest`), the copies kept for the verdicts
(:func:`reference_step`). From the same copies, :func:`papers_references`: predefined
references (ZMS → 1, RCE → 0, Var(Z) → 1, mean Z → 0, NLL → NLL_ref) give ζ_BS (paper 000
Sect. II D 1); the other statistics get the papers' simulated references (Sim, Sim2)
under N(0, 1) and t_s(ν) and their ζ_Sim, ζ_Sim2 (000 Sect. II D 2).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from uqx.dataio.schema import VALIDATE
from uqx.engine.alternative import BinnedCopies
from uqx.engine.defaults import NU
from uqx.engine.mctest import N_TEST
from uqx.engine.null_body import body_plausible, log_abs_z_spread_local
from uqx.engine.null_shape import (
    kappa_cs_z2_local,
    nu_heavy_bound,
    nu_on_grid,
    plausible_members,
    t_nu_from_tails,
)
from uqx.engine.statistic import STATISTICS, parse_stat
from uqx.inference.reference import Member, draw_checked, prepare_checked, top_suffix
from uqx.inference.zeta import d_sensitive, zeta_score, zeta_sim2

__all__ = ["reference_step", "papers_references", "PaperSims", "null_family", "NullFamily",
           "Windows", "Copies", "test_name",
           "papers_members", "predefined_references", "predefined_reference",
           "plausible_in_windows", "plausible_for_ranks"]

#: Whether the fitted member's joint copies (the tests of consistency and adaptivity) draw
#: each window of uE at its own ν where the windows exclude one ν̂ (errors whose shape
#: changes with uE), rather than ν̂ everywhere.
LOCAL_FIT = True


def test_name(spec) -> str:
    """Name of the statistic a verdict's test reads for ``spec`` (``Statistic.test_statistic``)."""
    return STATISTICS[spec.base].test_statistic or spec.name


def predefined_reference(base, estimates):
    """Predefined reference of a statistic, or None (``Statistic.reference``)."""
    ref = STATISTICS[base].reference if base in STATISTICS else None
    if isinstance(ref, str):  # data-dependent reference, e.g. NLL_ref
        return estimates[ref]
    return ref


def papers_members(nu):
    """Return the papers' generative distributions D, N(0, 1) and t_s(ν), as members."""
    return [Member("normal", None, "N"), Member("t", float(nu), f"T{nu:g}")]


@dataclass(frozen=True)
class NullFamily:
    """The null family of a run's Monte-Carlo tests (:func:`null_family`).

    Attributes
    ----------
    members : list of Member
        N(0, 1), t_s(ν), the data-matched t_s(ν̂) (label ``fit``, one ν per set) and the
        data's own z-scores (label ``data``).
    nu_fit, nu_two_sided : numpy.ndarray, shape (set,)
        ν̂, and the fitted member's ν of the statistics tested on both sides.
    kappa : numpy.ndarray, shape (set,)
        The κ_CS of Z² that ν̂ inverts.
    plausible : numpy.ndarray of bool, shape (set, member)
        Members whose shape the data's tails do not exclude.
    """

    members: list
    nu_fit: np.ndarray
    nu_two_sided: np.ndarray
    kappa: np.ndarray
    plausible: np.ndarray

    @property
    def labels(self) -> list[str]:
        """The members' labels, in order (the ``member`` coordinate)."""
        return [m.label for m in self.members]


@dataclass(frozen=True)
class Windows:
    """The windows of bins of uE of one set (:func:`uqx.engine.null_shape.kappa_cs_z2_windows`).

    Attributes
    ----------
    kappa, points : numpy.ndarray
        κ_CS of Z² and the points of each window.
    nus : numpy.ndarray or None
        ν of the fitted member in each bin of uE, or None when ν̂ fits every window.
    """

    kappa: np.ndarray
    points: np.ndarray
    nus: np.ndarray | None


class PaperSims(NamedTuple):
    """The papers' simulated references of each (set, stat, D), drawn by :func:`reference_step`.

    ``ref``, ``se``: mean of the copies and its Monte-Carlo standard error (Sim);
    ``lo``, ``hi``: their central interval (Sim2), each of shape (set, stat, D);
    ``idx``: the statistics simulated with n_mc copies (those without a predefined
    reference, or all with ``simulate_all``); ``labels``: the names of the D.
    """

    ref: np.ndarray
    se: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    idx: tuple
    labels: tuple


def papers_references(boot, specs, sims: PaperSims) -> xr.Dataset:
    """Return the papers' references as a result fragment: ζ_BS, or Sim, Sim2 and ζ_Sim.

    Predefined references (ZMS → 1, RCE → 0, Var(Z) → 1, mean Z → 0, NLL → NLL_ref)
    give ζ_BS against the bootstrap interval (paper 000 Sect. II D 1); the statistics
    without one take the simulated reference under N and its ζ_Sim (000 Eq. 20,
    U_t = 2u), and every statistic its Sim, Sim2, ζ_Sim and ζ_Sim2 under each D
    (000 Sect. II D 2).

    Parameters
    ----------
    boot : xarray.Dataset
        The bootstrap's estimates and intervals (``estimate``, ``ci_low``, ``ci_high``).
    specs : list of StatSpec
    sims : PaperSims
        The copies' simulated references (:attr:`Copies.sims`).
    """
    K = len(specs)
    est = boot["estimate"].values[:, :K]
    lo, hi = boot["ci_low"].values[:, :K], boot["ci_high"].values[:, :K]
    ref, kind, zeta = predefined_references(boot, specs)
    sim = {"ref": sims.ref, "se": sims.se, "lo": sims.lo, "hi": sims.hi}
    return _papers_fragment(est, lo, hi, ref, kind, zeta, sim, list(sims.idx), sims.labels)


@dataclass(frozen=True)
class Copies:
    """The copies of a run's tests, drawn once by :func:`reference_step`.

    Attributes
    ----------
    sims : PaperSims
        The papers' simulated references under each D (N, t_s(ν)), for
        :func:`papers_references`.
    nulls : dict
        The extrapolation nulls ``{set index: [one per member]}``.
    joint : numpy.ndarray, shape (set, stat, member, mc)
        Simulated values of every tested statistic, all the statistics of a copy computed
        on the same simulated data (the law of the questions' min-p).
    tests : numpy.ndarray
        The same with the fitted and data members of the two-sided statistics drawn for
        their own tests (``joint`` itself when nothing was redrawn).
    binned : uqx.engine.alternative.BinnedCopies or None
        The copies' per-bin sums of every binning (statistics up to a factor and under
        the alternatives).
    windows : list of Windows or None
        Per set.
    """

    sims: PaperSims
    nulls: dict
    joint: np.ndarray
    tests: np.ndarray
    binned: BinnedCopies | None
    windows: list

    @property
    def redrawn(self) -> np.ndarray | None:
        """``joint`` where the tests' copies differ from it (more copies of the law), else None."""
        return self.joint if self.tests is not self.joint else None


def null_family(nu, tails, sets=None, M=None):
    """Null family of the Monte-Carlo tests: the papers' D and the data-matched t_s(ν̂).

    ν̂ inverts the κ_CS of Z² scaled within the bins of uE
    (:func:`uqx.engine.null_shape.kappa_cs_z2_local`: the errors' shape, not a scale that
    varies with uE) when the sets are given: every route that loads the data. The
    streamed route of moment statistics, which holds no order of uE, reads it from Z
    itself (``tails["kappa_cs_z2"]``), on disk as in memory. ν̂ is then placed on the
    grid of :func:`uqx.engine.null_shape.nu_on_grid`.

    The statistics tested on both sides (average calibration: ZMS, RCE, ...) draw their
    fitted member at the heavy end of the confidence set of ν
    (:func:`uqx.engine.null_shape.nu_heavy_bound`), on the same grid: a small sample of
    heavy-tailed errors that misses its rare extremes has a small ⟨Z²⟩ *and* looks
    light-tailed, so at ν̂ every member would reject it.

    Parameters
    ----------
    nu : float
        ν of the papers' t_s(ν).
    tails : xarray.Dataset
        The tailedness step's metrics over ``set``.
    sets : list of SetData, optional
        The loaded sets (None on the streamed route).
    M : array_like, optional
        Sizes of the sets (taken from ``sets`` when given).

    Returns
    -------
    NullFamily
        The members; ν̂ per set and the fitted member's ν of the two-sided statistics;
        the κ_CS of Z² that ν̂ inverts (scaled within the bins of uE unless streamed);
        the members whose shape the data's tails do not exclude
        (:func:`uqx.engine.null_shape.plausible_members`).
    """
    if sets is None:
        kappa = tails["kappa_cs_z2"].values
    else:
        kappa = np.array([kappa_cs_z2_local(sd.E, sd.uE) for sd in sets])
        M = np.array([sd.M for sd in sets])
    nu_fit = nu_on_grid(t_nu_from_tails(kappa))
    nu_two = nu_on_grid(nu_heavy_bound(kappa, np.asarray(M, dtype=np.float64)))
    # κ_CS of Z² undefined (Z² without spread, e.g. E = ±uE on every row: no tails to
    # match): the fitted member is the normal, the lightest it can be
    nu_fit = np.where(np.isnan(nu_fit), np.inf, nu_fit)
    nu_two = np.where(np.isnan(nu_two), np.inf, nu_two)
    members = papers_members(nu) + [Member("t", nu_fit, "fit"), Member("data", None, "data")]
    kappa = np.asarray(kappa, dtype=np.float64)
    plausible = plausible_members(kappa, np.asarray(M, dtype=np.float64), _fixed_nus(members))
    return NullFamily(members, nu_fit, nu_two, kappa, plausible)


def _fixed_nus(members):
    """ν of each fixed member (inf: normal), None for the data-matched ones."""
    return [np.inf if d == "normal" else (float(v) if d == "t" and lab != "fit" else None)
            for d, v, lab in members]


def plausible_in_windows(family: NullFamily, M, windows) -> np.ndarray:
    """:func:`null_family`'s plausible members, the fixed ones also matching every window.

    Parameters
    ----------
    family : NullFamily
    M : array_like, shape (S,)
        The sets' sizes.
    windows : list of Windows or None
        Per set (:attr:`Copies.windows`).

    Returns
    -------
    numpy.ndarray of bool, shape (S, member)
        :func:`uqx.engine.null_shape.plausible_members` with ``windows``.
    """
    return plausible_members(family.kappa, np.asarray(M, dtype=np.float64),
                             _fixed_nus(family.members),
                             windows=[None if w is None else (w.kappa, w.points)
                                      for w in windows])


def plausible_for_ranks(sets, family: NullFamily, windows, plausible):
    """Members taking part in the tests of rank statistics (CC): tails *and* body fit.

    A member takes part in every test when its shape fits the data's tails
    (``plausible``, :func:`null_family`, :func:`plausible_in_windows`); in the test of the
    rank correlation CC it must also fit the data's body, the spread of ln|Z| within the
    bins of uE (:func:`uqx.engine.null_body.log_abs_z_spread_local`,
    :func:`uqx.engine.null_body.body_plausible`): the fixed members at their ν, the
    fitted one at ν̂ or, where its copies draw each bin of uE at its window's ν, at
    those. Where the fitted member draws each window at its own ν (the windows of uE
    exclude one ν̂: the errors' shape changes with uE), the fixed members do not take
    part in CC's test: a shape that changes with uE moves the location of ln|ε| with
    uE (E ln|ε| is −0.64 for normal errors, −0.85 for t_s(4) ones of the same
    variance), which lowers CC on consistent data, and a member with one shape for
    every uE has no such move (t_s(6) rejected CC on half of the consistent sets whose
    errors are normal below the median of uE and t_s(4) above, tuning seed 31, where
    its tails were not excluded window by window). The resampled z-scores carry the
    data's own body and always take part.

    Parameters
    ----------
    sets : list of SetData
    family : NullFamily
    windows : list of Windows or None
        Per set (:attr:`Copies.windows`).
    plausible : numpy.ndarray of bool, shape (S, member)
        The members that take part in the other tests.

    Returns
    -------
    spread : numpy.ndarray, shape (S,)
        The pooled within-bin variance of ln|Z| of each set.
    use : numpy.ndarray of bool, shape (S, member)
    """
    members, nu_fit = family.members, family.nu_fit
    fixed = _fixed_nus(members)
    use = np.array(plausible, dtype=bool, copy=True)
    spread = np.full(len(sets), np.nan)
    for i, sd in enumerate(sets):
        v, dof = log_abs_z_spread_local(sd.E, sd.uE)
        spread[i] = v
        w = windows[i] if i < len(windows) else None
        local = w is not None and w.nus is not None  # the shape changes with uE
        for m, (_, _, lab) in enumerate(members):
            if lab == "data":
                continue
            nu = fixed[m]
            if lab == "fit":
                nu = w.nus if local else nu_fit[i]
            elif local:  # one shape for every uE: no null for CC here
                use[i, m] = False
                continue
            if nu is not None and not body_plausible(v, dof, nu):
                use[i, m] = False
    return spread, use


class Predefined(NamedTuple):
    """Arrays over (set, stat): the predefined reference, its kind, and ζ_BS against it."""

    reference: np.ndarray
    kind: np.ndarray
    zeta: np.ndarray


def predefined_references(boot, specs) -> Predefined:
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
            r = predefined_reference(s.base, est_i)
            if r is not None:
                ref[i, j] = r
                kind[i, j] = "predefined" if s.base != "nll" else "predefined (NLL_ref)"
                zeta[i, j] = zeta_score(est_all[i, j], r, lo[i, j], hi[i, j])
    return Predefined(ref, kind, zeta)


def reference_step(ds, specs, boot, cfg, *, family: NullFamily, hooks=None) -> Copies:
    """Draw the copies of every test once; the papers' simulated references beside them.

    Every tested statistic is simulated under every member of the null family
    (:func:`null_family`); the papers' simulated references (mean, Sim2) under N and
    t_s(ν) are kept for the statistics without a predefined one (all with
    ``simulate_all``), for :func:`papers_references`. ``hooks`` (one per
    set, or None) reuse the simulation draws for the extrapolation nulls. The statistics
    tested on both sides (``Statistic.direction`` 0) are simulated once more
    under the fitted member, at ``family.nu_two_sided``, for their own tests; when they
    are all the tests and no extrapolation null rides on the copies (the streamed route),
    the fitted member is drawn once, at that ν, for everything.

    Parameters
    ----------
    ds, specs, boot
        The data, the statistics and the bootstrap fragment.
    cfg : Settings
        ``n_mc``, ``seed``, ``level``, ``simulate_all``, the binning and the dask keywords.
    family : NullFamily
        The null family (:func:`null_family`).
    hooks : list, optional
        As above.

    Returns
    -------
    Copies
        The papers' references; the extrapolation nulls; the copies of the tests (joint,
        and redrawn for the two-sided statistics); the copies' per-bin sums; the windows
        of bins of uE of each set (the fitted member's joint copies draw each bin at its
        window's ν, ``draw_checked(nu_local=True)``).
    """
    n_mc, seed, level, simulate_all = cfg.n_mc, cfg.seed, cfg.level, cfg.simulate_all
    S, K = boot.sizes["set"], len(specs)
    members, nu_two_sided = family.members, family.nu_two_sided
    D = 2  # the papers' N and t_s(ν)
    sim = {k: np.full((S, K, D), np.nan) for k in ("ref", "se", "lo", "hi")}
    tested = [j for j, s in enumerate(specs) if STATISTICS[s.base].tested]
    # the papers simulate the statistics without a predefined reference (all of them
    # with simulate_all): those get n_mc copies under N and t_s(ν)
    sim_idx = [j for j in tested
               if simulate_all or STATISTICS[specs[j].base].reference is None]
    draws = np.full((S, K, len(members), n_mc), np.nan)
    top = None
    nulls = {}
    n_test = min(n_mc, N_TEST)
    names = [specs[j].name for j in tested]
    # the statistics the tests read (test_statistic: <Z> studentised), simulated beside
    sim_names = list(dict.fromkeys(names + [test_name(specs[j]) for j in tested]))
    col = {name: k for k, name in enumerate(sim_names)}
    sim_specs = [parse_stat(name) for name in sim_names]
    # one sort of uE and one set of bins per set, shared by every member and copy (not
    # needed by the streamed route of moment statistics without hooks)
    no_hooks = hooks is None or all(h is None for h in hooks)
    file_order = all(specs[j].family == "moment" for j in tested) and no_hooks
    prepared = None
    if tested and not file_order:
        prepared = prepare_checked(ds, [parse_stat(n) for n in names], cfg.bin_cfg, pool=True)
    draw = dict(seed=seed, level=level, bin_cfg=cfg.bin_cfg, prepared=prepared, **cfg.compute)
    two = [j for j in tested if STATISTICS[specs[j].base].direction == 0]
    fit = [d for d, m in enumerate(members) if m.label == "fit"]
    second = bool(two) and bool(fit)
    local_fit = LOCAL_FIT  # the fitted member's joint copies: one ν per window of uE
    if second and two == tested and no_hooks:
        # every test two-sided and no extrapolation null riding on the copies: one draw
        # of the fitted member, at the heavy end, serves the tests and their joint law
        members = [m._replace(nu=nu_two_sided) if m.label == "fit" else m for m in members]
        second = local_fit = False
    for d, m in enumerate(members):
        # the papers' references need n_mc copies, a test N_TEST; one keyed stream per
        # member, so the first copies are the same draws for every statistic: one call
        # per member, the test-only statistics keep the first n_test copies. CC under the
        # spread alternative (14 sorts a copy) only for a member whose shape some set's
        # tails admit: the members a test uses are among those (ErrorShape.members)
        full = sim_idx if d < D else []
        n = n_mc if full else n_test
        if not tested:
            continue
        got = draw_checked(ds, sim_specs,
                          Member(m.dist, NU if m.nu is None else m.nu,
                                 m.label if np.ndim(m.nu) else None),
                          n_mc=n, hooks=hooks, nu_local=m.label == "fit" and local_fit,
                          cc_spread=cfg.resolution and bool(np.any(family.plausible[:, d])),
                          **draw)
        r = got.summary
        for i, arr in got.hooked.items():
            nulls.setdefault(i, []).append(arr)
        top = _keep_binned_copies(top, r, d, specs, tested, n_test)
        for jj, j in enumerate(tested):
            k = n if j in full else n_test
            draws[:, j, d, :k] = r["draws"].values[:, col[test_name(specs[j])], :k]
            if j in full:
                sim["ref"][:, j, d] = r["reference"].values[:, jj]
                sim["se"][:, j, d] = r["reference_se"].values[:, jj]
                sim["lo"][:, j, d] = r["sim2_low"].values[:, jj]
                sim["hi"][:, j, d] = r["sim2_high"].values[:, jj]
    test_draws = draws
    two_names = [test_name(specs[j]) for j in two]
    two_specs = [parse_stat(name) for name in two_names]
    if second:  # the two-sided statistics' own tests: the fitted member at the heavy end,
        # on the same keyed streams; where the windows of uE exclude ν̂, each bin of uE at
        # the heavier of its window's ν and that ν (a window of heavier-tailed errors that
        # missed its extremes makes ⟨Z²⟩ small and RCE large as a whole set does)
        heavy = draw_checked(ds, two_specs, Member("t", nu_two_sided, "fit"), n_mc=n_test,
                            nu_local=members[fit[0]].nu, **draw).summary
        test_draws = _with_member(test_draws, two, fit[0], heavy, n_test)
    data = [d for d, m in enumerate(members) if m.label == "data"]
    if two and data and prepared is not None and any(
            p.pool_local is not None for p in prepared):
        # the joint copies resample each bin of uE from its own z-scores (consistency's
        # null); average calibration is about the whole set, whose tails a bin's
        # standardisation would thin: its statistics resample the whole set's z-scores
        whole = draw_checked(ds, two_specs, Member("data", NU), n_mc=n_test, **draw).summary
        test_draws = _with_member(test_draws, two, data[0], whole, n_test)
    sims = PaperSims(sim["ref"], sim["se"], sim["lo"], sim["hi"], tuple(sim_idx),
                     tuple(m.label for m in members[:D]))
    nu_hat = next((m.nu for m in members if m.label == "fit"), None)
    windows = [None if p is None or p.kappa_windows is None else
               Windows(p.kappa_windows[0], p.kappa_windows[1],
                       p.segment_nus(nu_hat[i]) if local_fit and nu_hat is not None else None)
               for i, p in enumerate(prepared or [None] * S)]
    return Copies(sims, {i: n for i, n in nulls.items() if len(n) == len(members)}, draws,
                  test_draws, top, windows)


def _keep_binned_copies(top, r, d, specs, tested, n_test):
    """Add member ``d``'s per-bin sums of the tests' copies (and CC under u = c uE^γ) to ``top``.

    The statistics up to a factor and under the alternatives are computed from them
    (:class:`uqx.engine.alternative.BinnedCopies`, created at the first member that has
    any); returns ``top`` (None while no member has any).
    """
    S = r.sizes["set"]
    if "cc_spread" in r:  # CC of the copies under u = c uE^gamma (its resolution)
        if top is None:
            top = BinnedCopies(r["top_factor"].values, n_test)
        for i in range(S):
            top.add_cc(i, d, r["cc_spread"].values[i], r["cc_gamma"].values)
    for cond in ("uE", "X", "V"):  # the copies' per-bin sums of each binning
        x = top_suffix(cond)
        if f"top_sums{x}" not in r:
            continue
        if top is None:
            top = BinnedCopies(r["top_factor"].values, n_test)
        on = {j: specs[j].base for j in tested
              if specs[j].family == "binned" and specs[j].cond == cond}
        for i in range(S):
            nb = int(r[f"top_n_bins{x}"].values[i])
            nk = int(r[f"top_n_copies{x}"].values[i])
            if nb and on:
                top.add(i, d, r[f"top_sums{x}"].values[i, :nk, :nb],
                        r[f"top_u2{x}"].values[i, :nb], r[f"top_count{x}"].values[i, :nb],
                        int(r[f"top_M{x}"].values[i]), r[f"top_bins{x}"].values[i, :nb],
                        on, cond=cond)
    return top


def _with_member(draws, two, d, redrawn, n_test):
    """``draws`` with member ``d`` of the statistics ``two`` taken from ``redrawn``'s draws."""
    out = draws.copy()
    for jj, j in enumerate(two):
        out[:, j, d, :n_test] = redrawn["draws"].values[:, jj, :n_test]
    return out


def _papers_fragment(est, lo, hi, ref, kind, zeta, sim, sim_idx, dist_labels):
    """Build the papers' references as a result fragment: Sim, Sim2, ζ_Sim per distribution.

    Statistics without a predefined reference (``sim_idx``, ``kind`` empty) take the
    simulated reference under N and its ζ_Sim (000 Eq. 20, U_t = 2u); ``ref``, ``kind``
    and ``zeta`` are completed in place.
    """
    S = est.shape[0]
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
    return xr.Dataset(
        VALIDATE.data_vars({
            "reference": ref, "reference_se": ref_se, "zeta": zeta,
            "reference_kind": kind.astype(str), "d_sensitive": sens & (kind == "simulated"),
            "sim_reference": sim["ref"], "sim_reference_se": sim["se"],
            "sim2_low": sim["lo"], "sim2_high": sim["hi"], "zeta_sim": zs, "zeta_sim2": zs2,
        }),
        coords={"dist": list(dist_labels)},
    )
