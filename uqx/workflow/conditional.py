"""The papers' diagnostics of conditional calibration, and what the data cannot test.

The verdicts of consistency (on uE) and adaptivity (on X, V) are those of their questions
(:mod:`uqx.engine.questions`, :func:`uqx.workflow.decision.question_step`). Beside them,
with ``conditional=True``, the papers' diagnostics:

* the **fraction of valid LZISD bins** (bins whose BCa interval of 1/sd(Z) contains 1)
  with its Wilson-cc interval, compatible with the nominal 95 %? Every set gets its own
  number of bins (ErrViewLib default max(min(floor(M/150), 15), 2)), so a set's result
  does not depend on the sets analysed beside it (``conditional_valid``): its per-bin
  intervals under-cover with heavy tails and few points per bin;
* the **extrapolation to zero bins** of ENCE, ZMSE and ZVE
  (:mod:`uqx.inference.extrapolate.fit`): the papers' intercept ± 2 SE, and the
  intercept's one-sided Monte-Carlo p-value under each member (:data:`EXTRAP_DIAGNOSTIC`).

:func:`untestable_reasons` finds what the data cannot test (a constant uE or feature, a
single bin), which :func:`uqx.workflow.decision.question_step` keeps out of the tests
and marks ``not tested`` with the reason.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from uqx._checks import constant_reason, few_values_reason
from uqx.dataio.model import InputError
from uqx.dataio.schema import VALIDATE
from uqx.engine.binning import equal_count_edges, make_bins, stable_order
from uqx.engine.confidence import interval_contains
from uqx.engine.defaults import local_bins
from uqx.engine.resample import content_key
from uqx.inference.bootstrap import bootstrap_per_bin
from uqx.inference.curves.binned import local_z
from uqx.inference.extrapolate.binsweep import PRESETS, bin_numbers
from uqx.inference.extrapolate.fit import extrapolate_many
from uqx.inference.extrapolate.null import NullHook
from uqx.inference.zeta import binomial_ci

__all__ = ["lzisd_step", "extrapolation_step", "null_hooks", "untestable_reasons",
           "EXTRAP_DIAGNOSTIC"]

_NOMINAL_FVAL = 0.95




def _conds(sets):
    return ["uE"] + [c for c in ("X", "V") if any(getattr(sd, c) is not None for sd in sets)]


#: Bins of at least this many points get the analytic 'cho' LZISD interval under
#: ``lzisd_ci="auto"`` (ErrViewLib's 'auto' rule of plotLZV, methods page, Binned statistics).
CHO_MIN_POP = 400


def _lzisd_one(ds, i, sd, cond, *, nb, method, seed, level, n_boot, pop_min, compute):
    """LZISD per bin of one (set, cond): BCa from shared resamples, or 'cho'."""
    if method == "auto":
        pops = np.diff(equal_count_edges(sd.M, nb, pop_min=pop_min))
        method = "cho" if pops.min() >= CHO_MIN_POP else "bootstrap"
    if method == "bootstrap":
        stat = "lzisd" if cond == "uE" else f"lzisd_{cond}"
        r = bootstrap_per_bin(ds.select([i]), stat, n_boot=n_boot, level=level, seed=seed,
                              bins=nb, pop_min=pop_min, **compute).isel(set=0)
        return r, method
    r = local_z(sd, stat="lzisd", by=cond, n_bins=nb, pop_min=pop_min, ci="cho", level=level)
    return r[["estimate", "ci_low", "ci_high", "n", "x_mid"]], method


def lzisd_step(ds, sets, notes, *, seed, level, cond_bins, n_boot, pop_min, compute,
               method="auto"):
    """LZISD per bin, fraction of valid bins and its Wilson-cc interval per (set, cond).

    ``method``: ``"bootstrap"`` (BCa per bin from shared resamples), ``"cho"`` (analytic,
    methods page, Binned statistics) or ``"auto"``: 'cho' when every bin has at least
    :data:`CHO_MIN_POP` points (large data: the bootstrap adds nothing there but cost),
    else bootstrap.
    """
    conds = _conds(sets)
    S, C = len(sets), len(conds)
    per = {}
    used = np.full((S, C), "", dtype=object)
    for i, sd in enumerate(sets):
        nb = cond_bins or local_bins(sd.M)
        for c, cond in enumerate(conds):
            if cond != "uE" and getattr(sd, cond) is None:
                continue
            try:
                per[i, c], used[i, c] = _lzisd_one(
                    ds, i, sd, cond, nb=nb, method=method, seed=seed, level=level,
                    n_boot=n_boot, pop_min=pop_min, compute=compute)
            except InputError as exc:
                notes.set(i, f"no LZISD analysis on {cond}: {exc}")
    B = max([r.sizes["bin"] for r in per.values()], default=1)
    arr = {k: np.full((S, C, B), np.nan) for k in ("estimate", "ci_low", "ci_high", "n", "x_mid")}
    for (i, c), r in per.items():
        for k in arr:
            arr[k][i, c, : r.sizes["bin"]] = r[k].values
    real = np.isfinite(arr["estimate"])
    nb = real.sum(-1)
    ok = interval_contains(arr["ci_low"], arr["ci_high"], 1.0) & real
    nv = ok.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        fval = np.where(nb > 0, nv / nb, np.nan)
        lo, hi = binomial_ci(nv, np.maximum(nb, 1), method="wilsoncc")
    lo, hi = np.where(nb > 0, lo, np.nan), np.where(nb > 0, hi, np.nan)
    compatible = np.where(nb > 0, np.where(hi >= _NOMINAL_FVAL, 1.0, 0.0), np.nan)
    # a diagnostic, not a test: its per-bin intervals under-cover with heavy tails and few
    # points per bin (up to 15 % "too few valid bins" on calibrated t_s(4) data, M = 2000)
    fverdict = np.full(nb.shape, "not tested", dtype=object)
    return xr.Dataset(
        VALIDATE.data_vars({
            "lzisd": arr["estimate"], "lzisd_ci_low": arr["ci_low"],
            "lzisd_ci_high": arr["ci_high"], "bin_n": arr["n"], "bin_x_mid": arr["x_mid"],
            "cond_n_bins": nb, "lzisd_ci_method": used.astype(str), "fval": fval,
            "fval_ci_low": lo, "fval_ci_high": hi, "fval_verdict": fverdict.astype(str),
            "conditional_valid": compatible,
        }, nominal=_NOMINAL_FVAL),
        coords={"cond": conds, "bin": np.arange(B)},
    )


def _set_conds(sd, conds):
    """Conditioning variables a set has, in the order of ``conds``."""
    have = {c: (sd.uE if c == "uE" else getattr(sd, c)) for c in conds}
    return {c: x for c, x in have.items() if x is not None}


def null_hooks(sets, *, n_copies, preset="app-c"):
    """One :class:`~uqx.inference.extrapolate.null.NullHook` per set (None: set too small).

    Handed to :func:`uqx.inference.reference.simulate_reference`, they compute the extrapolation
    nulls on the draws of the simulated references (no draws of their own).
    """
    conds, st, hooks = _conds(sets), PRESETS[preset], []
    for sd in sets:
        try:
            nb = bin_numbers(sd.M, st)
        except InputError:
            hooks.append(None)
            continue
        # the copies' ε are drawn in the stable uE order (per window of uE for the data
        # member): each other ordering reads the ε of its rows' places there
        by_u = stable_order(sd.uE)
        place = np.empty(sd.M, dtype=np.int64)
        place[by_u] = np.arange(sd.M)
        orders, positions = [], []
        for c, x in _set_conds(sd, conds).items():
            ox = by_u if c == "uE" else stable_order(x)
            orders.append(sd.uE[ox])
            positions.append(None if c == "uE" else place[ox])
        hooks.append(NullHook(orders, nb, st, n_copies, positions=positions))
    return hooks


#: Why the zero-bin intercepts carry no verdict of their own.
EXTRAP_DIAGNOSTIC = ("a diagnostic of paper 002: the intercept and its Monte-Carlo p-value "
                     "are shown, no verdict (its alternative is not simulated, so it could "
                     "state no resolution; the consistency question decides)")


def extrapolation_step(sets, notes, *, seed, level, members, n_mc, preset="app-c",
                       nulls=None):
    """Zero-bin extrapolation of ENCE, ZMSE, ZVE per (set, cond) with the null verdict.

    ``members``: the null family ``[(dist, nu, label), ...]`` of :mod:`uqx.engine.mctest` (the
    data-matched member has one ν per set). ``nulls``: {set index: [null intercepts per
    member]} computed on the draws of the simulated references (:func:`null_hooks`);
    other sets draw their own copies.

    Returns
    -------
    xarray.Dataset, dict
        The fragment, and the null intercepts {(set, cond index): [(n, xstat) per member]}.
    """
    conds = _conds(sets)
    st = PRESETS[preset]
    stats = list(st.stats)
    labels = [lab for *_, lab in members]
    S, C, K, D = len(sets), len(conds), len(stats), len(labels)
    L = len(st.n_bins)
    f = {k: np.full((S, C, K), np.nan) for k in ("intercept", "intercept_se", "slope",
                                                 "slope_se")}
    papers = np.zeros((S, C, K), dtype=bool)
    verdict = np.full((S, C, K), "not tested", dtype=object)
    reason = np.full((S, C, K), "", dtype=object)
    nlo, nhi = np.full((S, C, K, D), np.nan), np.full((S, C, K, D), np.nan)
    pval = np.full((S, C, K, D), np.nan)
    vals, nbins = np.full((S, C, L, K), np.nan), np.full((S, C, L), np.nan)
    nulls = nulls or {}
    copies = {}
    for i, sd in enumerate(sets):
        have = _set_conds(sd, conds)
        dists = [(d, nu[i] if np.ndim(nu) else nu, lab) for d, nu, lab in members]
        try:
            rs = extrapolate_many(sd.E, sd.uE, have, preset=st, dists=dists, n_mc=n_mc,
                                  seed=seed, key=content_key(sd.E, sd.uE), level=level,
                                  nulls=nulls.get(i))
        except InputError as exc:
            notes.set(i, f"no zero-bin extrapolation: {exc}")
            continue
        for c, cond in enumerate(conds):
            if cond not in rs:
                continue
            r = rs[cond]
            for k in f:
                f[k][i, c] = r[k]
            papers[i, c] = r["papers_valid"]
            verdict[i, c] = "not tested"
            reason[i, c] = EXTRAP_DIAGNOSTIC
            nlo[i, c], nhi[i, c] = r["null_low"], r["null_high"]
            pval[i, c] = r.get("p_value", np.nan)
            if "null" in r:
                copies[i, c] = r["null"]
            n = r["n_bins"].size
            vals[i, c, :n], nbins[i, c, :n] = r["values"], r["n_bins"]
    out = xr.Dataset(
        VALIDATE.data_vars({f"extrap_{k}": v for k, v in f.items()} | {
            "extrap_papers_valid": papers, "extrap_verdict": verdict.astype(str),
            "extrap_verdict_reason": reason.astype(str), "extrap_null_low": nlo[..., :2],
            "extrap_null_high": nhi[..., :2], "extrap_p_value": pval,
            "extrap_values": vals, "extrap_n_bins": nbins,
        }),
        coords={"cond": conds, "xstat": stats, "sweep": np.arange(L), "member": labels},
        attrs={"extrapolation_preset": preset, "extrapolation_n_mc": int(n_mc)},
    )
    return out, copies


def _untestable_reasons(sd, specs, used, cfg):
    """Reasons per conditioning variable that make it untestable, and single-bin reasons.

    Returns ``(by_cond, one_bin)``: ``{cond: reason}`` for a constant variable, and
    ``{cond: reason}`` for a binning of a single bin (``pop_min`` too large for M): a
    binned statistic of one bin measures average calibration, not consistency or
    adaptivity.
    """
    by_cond = {"uE": constant_reason(sd.uE, "uE")}
    for c in ("X", "V"):
        x = getattr(sd, c)
        if x is not None:
            by_cond[c] = constant_reason(x, c)
    one_bin = {}
    pop_min = getattr(cfg, "pop_min", None)
    for c in by_cond:
        n = used if c == "uE" else _bins_on(sd, c, used, cfg)
        if c != "uE" and not by_cond[c]:  # a flag or a category: a grouping, not bins
            by_cond[c] = few_values_reason(getattr(sd, c), c, n)
        if n is not None and n == 1 and not by_cond[c]:
            what = "consistency" if c == "uE" else f"adaptivity on {c}"
            asked = getattr(cfg, "bins", None) == 1
            why = ("bins = 1 asked for" if asked else
                   f"M = {sd.M}, at least {pop_min} points per bin")
            fix = ("ask for at least 2 bins (bins/--bins)" if asked else
                   "lower pop_min/--pop-min for at least 2 bins")
            one_bin[c] = (f"a single bin on {c} ({why}): a binned statistic of one bin "
                          f"measures average calibration, not {what} ({fix})")
    return by_cond, one_bin


def _bins_on(sd, c, used, cfg):
    """Bins of the binning on feature ``c`` (that of uE where the edges depend on M only)."""
    if cfg is None or used is None or used < 0:
        return None
    if getattr(cfg, "binning", "equal-count") == "equal-count":
        return used
    try:
        return make_bins(getattr(sd, c), cfg.bins, scheme=cfg.binning,
                         pop_min=cfg.pop_min).n_bins
    except InputError:
        return None


def _equal_width_note(sd, cfg) -> str:
    """Warning when equal-width bins on uE hold fewer than pop_min points ('' otherwise)."""
    if cfg is None or getattr(cfg, "binning", "") != "equal-width":
        return ""
    try:
        counts = np.asarray(make_bins(sd.uE, cfg.bins, scheme="equal-width",
                                      pop_min=cfg.pop_min).counts)
    except InputError:
        return ""
    small = counts < cfg.pop_min
    if not small.any():
        return ""
    return (f"equal-width bins on uE do not keep pop_min = {cfg.pop_min}: {int(small.sum())} "
            f"of {counts.size} bins hold fewer points ({int(counts.min())} to "
            f"{int(counts.max())} per bin); binned statistics of nearly empty bins are "
            "unreliable (use equal-count or adaptive binning, or fewer bins)")


def untestable_reasons(sets, specs, notes, *, n_bins_used=None, cfg=None):
    """Return what each set cannot test, and why: per statistic and per question.

    * a constant uE: CC and every statistic binned on uE, and the questions consistency,
      ranking and up_to_factor (average calibration stays testable);
    * a constant X (or V): the statistics binned on it and its adaptivity;
    * an X (or V) with fewer distinct values than bins (a flag, a category): the same
      (:func:`uqx._checks.few_values_reason`);
    * a single bin on uE, X or V (``pop_min`` too large for M): the statistics binned on
      it and its question (consistency, adaptivity);
    * a feature X (or V) the set has, but no statistic requested on it: its adaptivity
      (said, rather than left blank).

    Also warns when equal-width bins on uE hold fewer than ``pop_min`` points.

    Parameters
    ----------
    sets : list of SetData
    specs : list of StatSpec
    notes : object
        The workflow's collector of warnings, or None.
    n_bins_used : array_like of int, optional
        Bins used on uE per set by the binned statistics (-1: none).
    cfg : Settings, optional
        The run's settings (``bins``, ``binning``, ``pop_min``).

    Returns
    -------
    by_stat : numpy.ndarray of str, shape (set, stat)
        The reason, or '' where the statistic is testable.
    by_question : list of dict
        Per set, ``{question: reason}`` for the questions it cannot test.
    """
    by_stat = np.full((len(sets), len(specs)), "", dtype=object)
    by_question = []
    for i, sd in enumerate(sets):
        used = None if n_bins_used is None else int(np.asarray(n_bins_used)[i])
        by_cond, one_bin = _untestable_reasons(sd, specs, used, cfg)
        note = _equal_width_note(sd, cfg)
        if note and notes is not None:
            notes.set(i, note)
        q = {f"adaptivity_{c}" if c != "uE" else "consistency": why
             for c, why in one_bin.items()}
        for cond, why in by_cond.items():
            if why:
                what = "consistency" if cond == "uE" else f"adaptivity on {cond}"
                if notes is not None:
                    notes.set(i, f"{what} not tested: {why}")
                for name in (("consistency", "up_to_factor", "ranking") if cond == "uE"
                             else (f"adaptivity_{cond}",)):
                    q[name] = why
        for c in ("X", "V"):  # a feature the set has, but no statistic asked about it
            if getattr(sd, c, None) is not None and f"adaptivity_{c}" not in q and not any(
                    s.cond == c for s in specs):
                how = f"add zms_scan_{c}, zmse_{c} or zmse_max_{c} to the statistics"
                q[f"adaptivity_{c}"] = (f"none of its statistics was requested although the "
                                        f"set has {c} ({how})")
        for j, s in enumerate(specs):
            cond = s.cond if s.family == "binned" else ("uE" if s.base == "cc" else None)
            if cond is None:
                continue
            why = by_cond.get(cond, "")
            if not why and s.family == "binned":
                why = one_bin.get(cond, "")
            if why:
                by_stat[i, j] = why
                if notes is not None:
                    notes.stat(i, j, f"not tested: {why}")
        by_question.append(q)
    return by_stat.astype(str), by_question
