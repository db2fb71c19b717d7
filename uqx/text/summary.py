r"""The answer in words: one short paragraph per set of a validation result.

A result of :func:`uqx.validate` answers questions (:mod:`uqx.engine.questions`):
average calibration, consistency, adaptivity on a feature, ranking, and, where average
calibration fails, consistency up to a factor. :func:`set_summary` turns one set's
answers into facts in the units a user thinks in, each sentence with the numbers it
reads; :func:`summary_lines` joins them into one paragraph per set:

* each question's verdict and, for ``valid``, its **resolution** in words (the
  miscalibration the same procedure would have found with 80 % power), for ``invalid``
  **what** is wrong: uE too small or too large on average by :math:`100\,|f - 1|` % with
  :math:`f = \sqrt{\mathrm{ZMS}}`, a bias (⟨Z⟩, the errors shifted by about ⟨Z⟩·uE),
  **where** uE is off (``zms_decile``: the ZMS of the data in each tenth of uE or of the
  feature, a description), and whether one factor fixes it (``rescaled_consistency``);
* **what to do next**, each only where the numbers say so: rescale by f, recalibrate
  conditionally on uE, give uE a constant term, model the feature, collect more points
  (the resolution scales like :math:`1/\sqrt M`, so resolving a factor :math:`f_t` takes
  about :math:`M\,(\ln f / \ln f_t)^2` points), raise ``--n-mc`` where a p-value sits at
  the floor its copies allow or within their noise of its level.

:func:`explain_lines` tells, per set, how each verdict was reached (the question's test,
its level, the members and their p-values). Everything here reads a result and computes
nothing new.
"""

from __future__ import annotations

import math
import textwrap

import numpy as np

from uqx.engine.mctest import N_TEST, pvalue_noise
from uqx.engine.questions import ALPHA_RESULT, question_of
from uqx.engine.statistic import parse_stat
from uqx.engine.stats.tailedness import SAFETY_LIMITS

__all__ = ["set_summary", "summary_lines", "summary_text", "explain_lines",
           "QUESTION_LABELS", "TARGET_FACTOR", "DECILE_MARGIN", "n_copies",
           "pvalue_floor", "n_mc_to_clear", "points_to_resolve"]

#: How each question is named in words.
QUESTION_LABELS = {
    "average": "average calibration",
    "consistency": "consistency",
    "adaptivity_X": "adaptivity (X)",
    "adaptivity_V": "adaptivity (V)",
    "ranking": "ranking",
    "up_to_factor": "consistency up to a factor",
}

#: The resolution a ``valid`` should reach (uE off by 10 %): a coarser one gets the
#: advice to collect more points, with how many would reach it.
TARGET_FACTOR = 1.1

#: A tenth of uE (or of a feature) is said to have uE too small (too large) when the
#: square root of its ZMS is above this factor (below its inverse): uE off by about 10 %
#: there. Descriptive only: the verdicts come from the tests.
DECILE_MARGIN = 1.1
#: "Off by about the same factor" along a variable only while the factors √ZMS of its
#: tenths stay within this ratio of each other (tenths of a few hundred points differ by
#: 1.2-1.4 by chance alone); beyond it, "by factors that differ". Descriptive only.
SAME_FACTOR_SPREAD = 2.0

#: The ladder of ``--n-mc`` values proposed when a p-value sits at its floor.
_N_MC_LADDER = (200, 500, 1000, 2000, 5000, 10000)


# ------------------------------------------------------------------ small readers


def _str(da) -> str:
    return str(np.asarray(da).item()) if np.ndim(da) == 0 else str(da)


def _f(x) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return float("nan")


def _g(x, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits (no ``-0``)."""
    return f"{_f(x) + 0.0:.{digits}g}"


def _pct(x) -> int:
    """Percent, rounded to the nearest integer."""
    return int(round(100 * x))


def n_copies(res) -> int:
    """Calibrated copies behind each test's p-value: ``min(n_mc, N_TEST)``.

    Parameters
    ----------
    res : xarray.Dataset
        A :func:`uqx.validate` result (``attrs["n_mc"]``).

    Returns
    -------
    int
        0 when the result does not record ``n_mc``.
    """
    try:
        n = int(res.attrs["n_mc"])
    except (KeyError, TypeError, ValueError):
        return 0
    return min(n, N_TEST)


def pvalue_floor(p, n) -> int:
    """1 or 2 when ``p`` is the smallest p-value ``n`` copies give (1/(1+n), 2/(1+n)), else 0.

    Parameters
    ----------
    p : float
        A Monte-Carlo p-value.
    n : int
        Copies behind it.
    """
    p = _f(p)
    if not (np.isfinite(p) and n > 0):
        return 0
    for k in (1, 2):
        if abs(p - k / (1 + n)) < 1e-9:
            return k
    return 0


def n_mc_to_clear(k: int, level: float) -> int | None:
    """Fewest ``--n-mc`` of :data:`_N_MC_LADDER` whose floor k/(1+n) is clear of ``level``.

    Clear: more than two Monte-Carlo standard deviations below it
    (:func:`uqx.engine.mctest.pvalue_noise`, the band of ``borderline``). None when even
    the most copies the tests use (:data:`uqx.engine.mctest.N_TEST`) are not enough.
    """
    for n in _N_MC_LADDER:
        if n > N_TEST:
            break
        if k / (1 + n) + 2 * float(pvalue_noise(k / (1 + n), n, level)) < level:
            return n
    return None


def points_to_resolve(M: int, f_now: float, target: float = TARGET_FACTOR) -> int:
    r"""Points that would resolve a factor ``target`` where ``M`` points resolve ``f_now``.

    The resolution of a factor scales like :math:`1/\sqrt M` on the log scale, so
    :math:`M' \approx M\,(\ln f_{now} / \ln f_{target})^2`, rounded up to two
    significant digits.
    """
    m = M * (math.log(f_now) / math.log(target)) ** 2
    mag = 10 ** max(int(math.floor(math.log10(max(m, 1.0)))) - 1, 0)
    return int(math.ceil(m / mag) * mag)


def _fmt_int(n: int) -> str:
    return f"{n:,}"


# ------------------------------------------------------------------ the facts


def _members(res, i, q) -> np.ndarray:
    """Members taking part in question ``q`` of set ``i`` (finite p-value, plausible)."""
    p = res["question_p_value"].sel(question=q).values[i]
    use = np.isfinite(p)
    name = "member_plausible_rank" if q == "ranking" and "member_plausible_rank" in res \
        else "member_plausible"
    if name in res:
        use &= res[name].values[i].astype(bool)
    return use


def _question(res, i, q) -> dict:
    """Return the facts of question ``q`` of set ``i``."""
    r = res.isel(set=i).sel(question=q)
    labels = [str(m) for m in res["member"].values] if "member" in res.dims else []
    use = _members(res, i, q) if "question_p_value" in res else np.zeros(len(labels), bool)
    p = r["question_p_value"].values if "question_p_value" in r else np.full(len(labels),
                                                                              np.nan)
    lev = r["question_level"].values if "question_level" in r else np.full(len(labels),
                                                                           np.nan)
    out = {
        "question": q,
        "label": QUESTION_LABELS.get(q, q),
        "verdict": _str(r["question_verdict"].values),
        "reason": _str(r["question_reason"].values) if "question_reason" in r else "",
        "borderline": bool(r["question_borderline"].values) if "question_borderline" in r
        else False,
        "tests": _str(r["question_tests"].values) if "question_tests" in r else "",
        "members": [lab for lab, k in zip(labels, use, strict=True) if k],
        "p_value": {lab: _f(p[m]) for m, lab in enumerate(labels) if use[m]},
        "level": {lab: _f(lev[m]) for m, lab in enumerate(labels) if use[m]},
    }
    for k in ("low", "high", "spread_low", "spread_high"):
        v = f"question_resolution_{k}"
        out[f"resolution_{k}"] = _f(r[v].values) if v in r else float("nan")
    return out


def _asked(qf) -> bool:
    """Whether a question is part of the set's answer (tests, a verdict or a reason)."""
    return bool(qf["tests"]) or (qf["verdict"] != "not tested") or (
        bool(qf["reason"]) and qf["question"] != "up_to_factor")


def _stat(res, i, name) -> dict | None:
    """Estimate, verdict and p-values of statistic ``name`` of set ``i`` (None if absent)."""
    if "stat" not in res.dims or name not in [str(s) for s in res["stat"].values]:
        return None
    x = res.isel(set=i).sel(stat=name)
    out = {"name": name, "estimate": _f(x["estimate"].values),
           "verdict": _str(x["verdict"].values),
           "reason": _str(x["verdict_reason"].values) if "verdict_reason" in x else "",
           "borderline": bool(x["borderline"].values) if "borderline" in x else False,
           "reference": _f(x["reference"].values) if "reference" in x else float("nan")}
    if "p_value" in x:
        pv = x["p_value"].values
        use = np.isfinite(pv)
        plaus = "member_plausible_rank" if parse_stat(name).family == "rank" and \
            "member_plausible_rank" in res else "member_plausible"
        if plaus in res:
            use &= res[plaus].values[i].astype(bool)
        out["p_min"] = float(np.min(pv[use])) if use.any() else float("nan")
        out["p_max"] = float(np.max(pv[use])) if use.any() else float("nan")
    return out


def _scale(res, i) -> dict | None:
    """ZMS and the factor f = √ZMS of set ``i`` with its interval (None without ZMS)."""
    z = _stat(res, i, "zms")
    if z is None or not np.isfinite(z["estimate"]) or z["estimate"] <= 0:
        return None
    if "scale_factor" in res:
        f = _f(res["scale_factor"].values[i])
        lo, hi = _f(res["scale_factor_low"].values[i]), _f(res["scale_factor_high"].values[i])
    else:
        f, lo, hi = math.sqrt(z["estimate"]), float("nan"), float("nan")
    return {"zms": z["estimate"], "factor": f, "low": lo, "high": hi,
            "percent": _pct(abs(f - 1)), "direction": "small" if f > 1 else "large",
            "verdict": z["verdict"]}


def _fac(x) -> str:
    """Format a factor with three significant digits, trailing zeros kept (1.10, 0.920)."""
    return f"{_f(x):#.3g}".rstrip(".")  # 111, not "111."


def _factor_text(sc) -> str:
    text = f"factor {_fac(sc['factor'])}"
    if np.isfinite(sc["low"]) and np.isfinite(sc["high"]):
        text += f" [{_fac(sc['low'])}, {_fac(sc['high'])}]"
    return text


def _times(f) -> str:
    """How many times too small (f > 1) or too large (f < 1) uE is: "1.26×", "111×"."""
    f = _f(f)
    r = f if f >= 1 else 1 / f
    return f"{r:.2f}×" if r < 10 else f"{r:.3g}×"


def _scale_words(sc) -> str:
    """"uE 1.24× too small on average (ZMS 1.53): use uE × 1.24 [1.21, 1.26]"."""
    return (f"uE {_times(sc['factor'])} too {sc['direction']} on average (ZMS "
            f"{_g(sc['zms'])}; use uE × {_factor_text(sc).removeprefix('factor ')})")


def _deciles(res, i, cond) -> np.ndarray | None:
    """ZMS of the ten tenths of ``cond`` for set ``i`` (None when absent or not finite)."""
    if "zms_decile" not in res or cond not in [str(c) for c in res["decile_of"].values]:
        return None
    z = np.asarray(res["zms_decile"].sel(decile_of=cond).values[i], dtype=np.float64)
    return z if (np.isfinite(z) & (z > 0)).all() else None


def _side(z) -> str:
    """``small`` / ``large`` / ``""``: uE in a tenth whose ZMS is ``z`` (DECILE_MARGIN)."""
    if not np.isfinite(z) or z <= 0:
        return ""
    if math.sqrt(z) > DECILE_MARGIN:
        return "small"
    if math.sqrt(z) < 1 / DECILE_MARGIN:
        return "large"
    return ""


def _where(res, i, cond, zms=None) -> dict | None:
    """Where uE is off along ``cond``, from ``zms_decile``.

    A tenth is reported when uE is off there (√ZMS of the tenth beyond
    :data:`DECILE_MARGIN`) and off the same way against the set's own ZMS (so that a
    scale shared by every tenth is not read as a place): the bottom and the top tenths,
    and the inner tenth farthest from the set's ZMS when it is farther than the ends
    reported. ``same_factor``: no tenth reported, every tenth off the same way (a
    factor, not a place).
    """
    z = _deciles(res, i, cond)
    if z is None:
        return None
    ref = _f(zms) if zms is not None and np.isfinite(_f(zms)) and _f(zms) > 0 else 1.0

    def off(zd):
        a = _side(zd)
        return a if a and a == _side(zd / ref) else ""

    out = {"cond": cond, "deciles": [float(x) for x in z], "reference": ref,
           "bottom": float(z[0]), "top": float(z[-1]), "bottom_side": off(z[0]),
           "top_side": off(z[-1])}
    dev = np.abs(np.log(z / ref))
    ends = [dev[k] for k, side in ((0, out["bottom_side"]), (9, out["top_side"])) if side]
    k = int(np.argmax(dev[1:-1])) + 1
    out["inner"] = (k + 1, float(z[k]), off(z[k])) if off(z[k]) and dev[k] > max(
        ends, default=0.0) else None
    reported = bool(out["bottom_side"] or out["top_side"] or out["inner"])
    sides = {_side(x) for x in z}
    out["same_factor"] = not reported and len(sides) == 1 and "" not in sides
    out["reported"] = reported
    return out


def _ordinal(k: int) -> str:
    return {1: "1st", 2: "2nd", 3: "3rd"}.get(k, f"{k}th")


def _where_words(w) -> str:
    """Say where uE is off: "the largest uE are too small (ZMS 2.1 in the top tenth)"."""
    c = w["cond"]
    parts = []
    for end, z, side in (("smallest", w["bottom"], w["bottom_side"]),
                         ("largest", w["top"], w["top_side"])):
        if not side:
            continue
        tenth = "bottom" if end == "smallest" else "top"
        if c == "uE":
            parts.append(f"the {end} uE are too {side} (ZMS {_g(z, 2)} in the {tenth} "
                         "tenth of uE)")
        else:
            parts.append(f"uE is too {side} for the {end} {c} (ZMS {_g(z, 2)} in the "
                         f"{tenth} tenth of {c})")
    if w["inner"] is not None:
        k, z, side = w["inner"]
        parts.append(f"uE is most off in the {_ordinal(k)} tenth of {c}, too {side} there "
                     f"(ZMS {_g(z, 2)})")
    lo, hi = min(w["deciles"]), max(w["deciles"])
    if w["same_factor"] and math.sqrt(hi / lo) <= SAME_FACTOR_SPREAD:
        parts.append(f"uE is off by about the same factor along {c} (ZMS {_g(lo, 2)} to "
                     f"{_g(hi, 2)} over its tenths)")
    elif w["same_factor"]:  # one side everywhere, but the factors differ beyond the margin
        parts.append(f"uE is too {_side(lo)} all along {c}, by factors that differ (ZMS "
                     f"{_g(lo, 2)} to {_g(hi, 2)} over its tenths)")
    elif not parts:
        parts.append(f"no tenth of {c} stands out (ZMS {_g(lo, 2)} to {_g(hi, 2)} over its "
                     "tenths)")
    return "; ".join(parts)


def _short_reason(qf_or_reason, res=None, i=None) -> tuple[str, str]:
    """Return a reason in a few words, and its kind (members, tails, reach, other)."""
    why = qf_or_reason if isinstance(qf_or_reason, str) else qf_or_reason["reason"]
    if why.startswith("rejected under") and "but not under" in why:
        head = why.split(":")[0]
        return f"{head}: the answer depends on the shape of the errors", "members"
    if "tails" in why:
        lim = SAFETY_LIMITS["kappa_cs_z2"]
        kappa = _f(res["kappa_cs_z2_local"].values[i]) if res is not None and \
            "kappa_cs_z2_local" in res else float("nan")
        if np.isfinite(kappa) and kappa > lim:
            return (f"the rejection may come from the errors' heavy tails (kappa_cs of Z^2 "
                    f"within the bins of uE = {_g(kappa)} > {lim:g}, beyond what the null "
                    "family represents)"), "tails"
        return ("the rejection may come from the errors' tails: too few points to show "
                "them lighter than those of t_s(3), the heaviest member of the null "
                "family"), "tails"
    if "cannot reach the level" in why:
        return "the copies cannot reach its level", "reach"
    return why, "other"


# ------------------------------------------------------------------ sentences


def _sentence(kind, text, **reads) -> dict:
    return {"kind": kind, "text": text, "reads": reads}


def _valid_average(qf) -> str:
    lo, hi = qf["resolution_low"], qf["resolution_high"]
    if not (np.isfinite(lo) or np.isfinite(hi)):
        return "even uE off by a factor 4 on average could go unseen (no resolution)"
    small = f"{_times(hi)} too small" if np.isfinite(hi) else None
    large = f"{_times(lo)} too large" if np.isfinite(lo) and lo > 0 else None
    if small and large:
        return f"uE {small} or {large} on average would have been found"
    return f"uE {small or large} on average would have been found (the other side is out " \
           "of reach)"


def _valid_top(qf, cond) -> str:
    hi = qf["resolution_high"]
    where = f"the top tenth of {cond}"
    if np.isfinite(hi):
        text = f"uE {_times(hi)} too small in {where} would have been found"
    else:
        text = f"uE too small in {where}, even by a factor 3, could go unseen"
    lo, up = qf["resolution_spread_low"], qf["resolution_spread_high"]
    if cond == "uE" and (np.isfinite(lo) or np.isfinite(up)):
        bounds = " or ".join(b for b in (
            f"γ <= {lo:.2f}" if np.isfinite(lo) else "",
            f"γ >= {up:.2f}" if np.isfinite(up) else "") if b)
        text += f", as would true uncertainties ∝ uE^γ with {bounds}"
    return text


def _average_sentence(res, i, qf, sc) -> dict:
    v = qf["verdict"]
    lab = qf["label"]
    reads = {"verdict": v}
    if v == "valid":
        zms = f" (ZMS {_g(sc['zms'])})" if sc else ""
        reads.update(resolution_low=qf["resolution_low"], resolution_high=qf["resolution_high"])
        return _sentence("average", f"{lab} valid{zms}: {_valid_average(qf)}", **reads)
    if v == "invalid":
        parts = []
        if sc and sc["verdict"] == "invalid":
            parts.append(_scale_words(sc))
            reads["scale"] = sc
        mz = _stat(res, i, "mean_z")
        if mz is not None and mz["verdict"] == "invalid":
            parts.append(f"a bias: mean Z = {_g(mz['estimate'], 2)} (errors shifted by about "
                         f"{_g(abs(mz['estimate']), 2)} uE)")
            reads["mean_z"] = mz["estimate"]
        others = []
        for name in [str(s) for s in res["stat"].values]:
            spec = parse_stat(name)
            if name in ("zms", "mean_z") or question_of(spec.family, spec.cond) != "average":
                continue
            st = _stat(res, i, name)
            if st["verdict"] == "invalid":
                others.append(f"{name.upper()} {_g(st['estimate'])}")
        if others:  # "Average calibration invalid: RCE 0.0715", not "invalid: invalid:"
            parts.append(("also invalid: " if parts else "") + ", ".join(others))
            reads["others"] = others
        return _sentence("average", f"{lab} invalid: " + "; ".join(parts), **reads)
    return _other_sentence("average", res, i, qf, extra=(f"ZMS {_g(sc['zms'])}, "
                                                          f"{_factor_text(sc)}" if sc else ""))


def _other_sentence(kind, res, i, qf, extra="") -> dict:
    """Say an ``inconclusive`` or ``not tested`` question, with its reason in a few words."""
    v = qf["verdict"]
    short, why_kind = _short_reason(qf, res, i) if qf["reason"] else ("", "")
    text = f"{qf['label']} {v}"
    if extra:
        text += f" ({extra})"
    if short:
        text += f": {short}"
    return _sentence(kind, text, verdict=v, reason_kind=why_kind)


def _conditional_sentence(res, i, qf, cond, sc, up_valid=False) -> dict:
    v = qf["verdict"]
    kind = qf["question"]
    if v == "valid":
        return _sentence(kind, f"{qf['label']} valid: {_valid_top(qf, cond)}", verdict=v,
                         resolution_high=qf["resolution_high"],
                         spread=(qf["resolution_spread_low"], qf["resolution_spread_high"]))
    w = _where(res, i, cond, sc["zms"] if sc else None)
    where = _where_words(w) if w is not None and v in ("invalid", "inconclusive") else ""
    if up_valid and cond == "uE" and w is not None:  # one factor fixes it: no place
        where = (f"uE is off by about one factor all along uE (ZMS {_g(min(w['deciles']), 2)} "
                 f"to {_g(max(w['deciles']), 2)} over its tenths)")
    if v == "invalid":
        text = f"{qf['label']} invalid" + (f": {where}" if where else "")
        return _sentence(kind, text, verdict=v, where=w)
    s = _other_sentence(kind, res, i, qf)
    if where:
        s["text"] += f"; {where}"
        s["reads"]["where"] = w
    return s


def _ranking_sentence(res, i, qf) -> dict:
    v = qf["verdict"]
    cc = _stat(res, i, "cc")
    val = f"CC {_g(cc['estimate'], 2)}" if cc else ""
    if v == "valid":
        g = qf["resolution_spread_low"]
        text = f"{qf['label']} valid" + (f" ({val})" if val else "")
        if np.isfinite(g):
            text += (f": uE varying too much (true uncertainties ∝ uE^γ, γ <= {g:.2f}) would "
                     "have been found")
        else:
            text += (": even uE saying nothing of which errors are larger (γ = 0) could go "
                     "unseen (no resolution)")
        return _sentence("ranking", text, verdict=v, resolution_spread_low=g)
    if v == "invalid":
        ref = f", calibrated uE about {_g(cc['reference'], 2)}" if cc and np.isfinite(
            cc["reference"]) else ""
        return _sentence("ranking", f"{qf['label']} invalid: uE ranks the errors worse than "
                         f"calibrated uE would ({val}{ref})", verdict=v,
                         cc=cc["estimate"] if cc else np.nan)
    return _other_sentence("ranking", res, i, qf, extra=val)


def _factor_sentence(res, i, sc, qf) -> dict | None:
    """Consistency up to a factor, where average calibration is invalid."""
    if sc is None:
        return None
    rv = _str(res["rescaled_consistency"].values[i]) if "rescaled_consistency" in res else (
        qf["verdict"] if qf else "")
    why = _str(res["rescaled_consistency_reason"].values[i]) if \
        "rescaled_consistency_reason" in res else (qf["reason"] if qf else "")
    f = _fac(sc["factor"])
    fac = _factor_text(sc).removeprefix("factor ")
    if rv == "valid":
        text = f"consistent up to a factor {fac}: uE × {f} is consistent"
        r = _f(res["rescaled_consistency_resolution"].values[i]) if \
            "rescaled_consistency_resolution" in res else float("nan")
        if np.isfinite(r):
            text += (f" (uE × {f} another {_times(r)} too small in the top tenth of uE "
                     "would have been found)")
        return _sentence("up_to_factor", text, verdict=rv, factor=sc, resolution=r)
    if rv == "invalid":
        return _sentence("up_to_factor", f"not fixed by one factor: uE × {f} is still "
                         "inconsistent", verdict=rv, factor=sc)
    if rv == "inconclusive":
        short, _ = _short_reason(why, res, i)
        return _sentence("up_to_factor", f"whether one factor fixes uE is inconclusive "
                         f"({short})", verdict=rv, factor=sc)
    if sc["verdict"] != "invalid":  # asked only once the scale is rejected
        return None
    what = why.removeprefix("not tested: ") or "not tested"
    return _sentence("up_to_factor", f"the {_factor_text(sc)} brings ZMS to 1, but whether "
                     f"uE × {f} is consistent was not tested ({what})", verdict="not tested",
                     factor=sc)


# ------------------------------------------------------------------ advice


def _and(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _advice(res, i, qs, sc) -> list[dict]:
    out = []
    M = int(res["M"].values[i]) if "M" in res.coords else 0
    rv = _str(res["rescaled_consistency"].values[i]) if "rescaled_consistency" in res else ""
    av = qs.get("average", {}).get("verdict", "")
    cons = qs.get("consistency", {}).get("verdict", "")
    zms = sc["zms"] if sc else None
    if sc and av == "invalid" and sc["verdict"] == "invalid":
        f = _fac(sc["factor"])
        if rv == "valid":
            out.append(_sentence("rescale", f"rescale: use uE × {f} (uqx recalibrate fit "
                                 "--method scale learns it on calibration rows and saves the "
                                 "map)", factor=sc["factor"], rescaled=rv))
        elif rv != "invalid":
            out.append(_sentence("rescale", f"uE × {f} fixes the average; check that uE × {f} "
                                 "is consistent before using it (a binned statistic on uE, "
                                 "e.g. --stats zms,zms_scan,zmse)" if rv in ("", "not tested")
                                 else f"uE × {f} fixes the average; whether it is consistent "
                                 "is open", factor=sc["factor"], rescaled=rv))
    mz = _stat(res, i, "mean_z")
    if av == "invalid" and mz is not None and mz["verdict"] == "invalid":
        out.append(_sentence("bias", f"correct the bias of the predictions (mean Z = "
                             f"{_g(mz['estimate'], 2)}): no scale of uE removes it",
                             mean_z=mz["estimate"]))
    if cons == "invalid" and rv != "valid":
        # "one factor does not fix it" only where the rescaled question says so, or where
        # it was not asked because the average is not off; an open answer stays open
        open_ = rv not in ("", "not tested", "invalid")
        f = _fac(sc["factor"]) if open_ and sc else "f"
        why = f", unless uE × {f} proves consistent" if open_ else \
            ": one factor does not fix it"
        out.append(_sentence("conditional", "recalibrate uE conditionally on uE (e.g. an "
                             f"isotonic regression of E² on uE²){why}; uqx recalibrate check "
                             "--method auto fits it out of fold and validates it again",
                             consistency=cons, rescaled=rv))
        w = _where(res, i, "uE", zms)
        if w is not None and w["bottom_side"] == "small" and w["bottom"] > w["top"]:
            out.append(_sentence("constant", "a constant term (e.g. a noise term added to an "
                                 "ensemble's spread, u² = uE² + s²) would fix the smallest uE",
                                 bottom=w["bottom"], top=w["top"]))
    for c in ("X", "V"):
        if qs.get(f"adaptivity_{c}", {}).get("verdict") != "invalid":
            continue
        w = _where(res, i, c, zms)
        if sc and sc["verdict"] == "invalid":  # the scale of uE confounds adaptivity
            out.append(_sentence("adaptivity", f"adaptivity ({c}) is tested on uE as it is, "
                                 f"off in scale: validate uE × {_fac(sc['factor'])} again to "
                                 f"see whether uE misses how the errors vary with {c}",
                                 cond=c, where=w, scale=True))
        elif w is None or w["reported"]:
            out.append(_sentence("adaptivity", f"uE misses how the errors vary with {c}: "
                                 f"recalibrate with {c} as an input (uqx recalibrate check "
                                 f"--method bvs-X --X {c}: one factor per bin of {c})", cond=c,
                                 where=w, scale=False))
    coarse = []
    for q, qf in qs.items():
        if qf["verdict"] != "valid" or q in ("ranking", "up_to_factor"):
            continue
        if q == "average":
            lo, hi = qf["resolution_low"], qf["resolution_high"]
            cands = [x for x in (hi, 1 / lo if lo > 0 else np.nan) if np.isfinite(x)]
            f_now = max(cands) if cands else float("nan")
            what = "on average"
        else:
            f_now = qf["resolution_high"]
            c = "uE" if q == "consistency" else q.rsplit("_", 1)[-1]
            what = f"in the top tenth of {c}"
        if np.isfinite(f_now) and f_now > TARGET_FACTOR * (1 + 1e-9) and M > 0:
            coarse.append((points_to_resolve(M, f_now), qf["label"], f_now, what))
    if coarse:
        need, label, f_now, what = max(coarse)
        out.append(_sentence("more_points", f"collect more points: about {_fmt_int(need)} "
                             f"would resolve uE {_times(TARGET_FACTOR)} off {what} "
                             f"({label}: {_times(f_now)} now; the resolution scales like "
                             "1/√M)", points=need, f_now=f_now, M=M, question=label))
    members = [qf["label"] for qf in qs.values() if qf["verdict"] == "inconclusive"
               and _short_reason(qf, res, i)[1] == "members"]
    if members:
        verb = "depends" if len(members) == 1 else "depend"
        what = (f"more points would also settle {_and(members)}, which {verb}" if coarse
                else f"collect more points: {_and(members)} {verb}")
        out.append(_sentence("more_points_members", f"{what} on the shape of the errors (the "
                             "members of the null family disagree; more points narrow the "
                             "shapes the data allow)", questions=members))
    tails = [qf["label"] for qf in qs.values() if qf["verdict"] == "inconclusive"
             and _short_reason(qf, res, i)[1] == "tails"]
    if tails:
        verb = "hinges" if len(tails) == 1 else "hinge"
        out.append(_sentence("tails", f"look at the largest |Z|: {_and(tails)} {verb} on the "
                             "errors' tails", questions=tails))
    out += _n_mc_advice(res, i, qs)
    return out


def _stat_question(name) -> str | None:
    s = parse_stat(name)
    return question_of(s.family, s.cond)


def _near_level(p, level, n) -> bool:
    """Whether ``p`` lies within two Monte-Carlo sd of ``level`` (the band of borderline)."""
    p, level = _f(p), _f(level)
    return bool(np.isfinite(p) and np.isfinite(level)
                and abs(p - level) < 2 * float(pvalue_noise(p, n, level)))


def _n_mc_advice(res, i, qs) -> list[dict]:
    """Raise ``--n-mc``: a p-value at its floor near its level, borderline, or unreachable.

    A borderline verdict (a p-value within two Monte-Carlo sd of its level) whose p-value
    is the floor of its copies, k/(1 + n), is told with the floor and the ``--n-mc``
    that puts it clear of the level (:func:`n_mc_to_clear`); any other borderline with
    the noise; a test whose copies cannot reach its level with the copies the tests use.
    """
    n = n_copies(res)
    if n <= 0:
        return []
    floors, noisy, unreachable = [], [], []

    def floor_of(pairs):
        """Return the first p-value at its floor and within the noise of its level."""
        return next(((pvalue_floor(p, n), p, lev) for p, lev in pairs
                     if pvalue_floor(p, n) and _near_level(p, lev, n)), None)

    for qf in qs.values():
        if qf["verdict"] == "not tested":
            continue
        if qf["verdict"] == "inconclusive" and _short_reason(qf, res, i)[1] == "reach":
            unreachable.append(qf["label"])
            continue
        hit = floor_of([(p, qf["level"].get(m, np.nan)) for m, p in qf["p_value"].items()])
        if hit:
            floors.append((qf["label"], *hit))
        elif qf["borderline"]:
            noisy.append(qf["label"])
    labels = [str(m) for m in res["member"].values] if "member" in res.dims else []
    names = [str(s) for s in res["stat"].values] if "stat" in res.dims else []
    for j, name in enumerate(names):
        st = _stat(res, i, name)
        if st is None or st["verdict"] == "not tested":
            continue
        if st["verdict"] == "inconclusive" and ("cannot reach the level" in st["reason"]
                                                  or "cannot reject this test" in st["reason"]):
            unreachable.append(name.upper())
            continue
        # the statistic is decided by its adjusted p-value at its question's level
        lev = qs.get(_stat_question(name), {}).get("level", {})
        hit = floor_of([(_f(res["p_adjusted"].values[i, j, m]), lev[lab])
                        for m, lab in enumerate(labels) if lab in lev]) \
            if "p_adjusted" in res else None
        if hit:
            floors.append((name.upper(), *hit))
        elif st["borderline"]:
            noisy.append(name.upper())
    out = []
    if floors:
        label, k, p, lev = floors[0]
        text = (f"raise --n-mc: p = {k}/{n + 1} = {_g(p)} ({label}) is the smallest {n} "
                f"copies give, within their noise of the level {_g(lev)}")
        need = n_mc_to_clear(k, lev) if np.isfinite(lev) else None
        if need is not None and need > n:
            text += f"; --n-mc {need} would put the floor, {k}/{need + 1}, clear of it"
        elif need is None and n >= N_TEST:
            text += f" (the tests use at most {N_TEST} copies)"
        names = list(dict.fromkeys(f[0] for f in floors))
        if len(names) > 1:
            text += f" (also {_and(names[1:])})"
        out.append(_sentence("n_mc_floor", text, p=p, k=k, n=n, level=lev, needed=need,
                             who=names))
    if noisy:
        names = list(dict.fromkeys(noisy))
        verb = "is" if len(names) == 1 else "are"
        if n < N_TEST:  # more copies change the answer only below the tests' cap
            out.append(_sentence("n_mc_borderline", f"raise --n-mc: {_and(names)} {verb} "
                                 f"borderline (a p-value within the Monte-Carlo noise of its "
                                 f"level with {n} copies; the noise shrinks like 1/√n, and "
                                 f"the tests use up to {N_TEST})", who=names, n=n))
        else:
            out.append(_sentence("n_mc_borderline", f"{_and(names)} {verb} borderline (a "
                                 f"p-value within the Monte-Carlo noise of the level with "
                                 f"{n} copies, the most the tests use: more --n-mc would not "
                                 "change it)", who=names, n=n))
    if unreachable:
        names = list(dict.fromkeys(unreachable))
        more = (f"raise --n-mc (the tests use up to {N_TEST} copies)" if n < N_TEST else
                f"{n} copies, the most the tests use,")
        out.append(_sentence("n_mc_reach", f"{more}: with {n} copies the p-values cannot "
                             f"reach the level of {_and(names)}" if n < N_TEST else
                             f"with {n} copies, the most the tests use, the p-values cannot "
                             f"reach the level of {_and(names)}", who=names, n=n))
    return out


# ------------------------------------------------------------------ public


def _has_feature(res, i, cond, qf) -> bool:
    """Whether set ``i`` has the feature of an adaptivity question (from its reason)."""
    return not qf["reason"].startswith(f"this set has no {cond}")


def set_summary(res, i: int) -> dict:
    """Return the answer of set ``i`` of a result: the facts and the sentences they give.

    Parameters
    ----------
    res : xarray.Dataset
        A :func:`uqx.validate` result with the questions (``question_verdict``).
    i : int
        Position of the set.

    Returns
    -------
    dict
        ``set``, ``M``, ``questions`` (per question present: its verdict, reason,
        borderline flag, tests, members taking part with their p-values and levels,
        resolutions), ``scale`` (ZMS, the factor f = √ZMS and its interval, the percent
        :math:`100 |f - 1|` and the side, or None), ``sentences`` and ``advice`` (lists of
        ``{"kind", "text", "reads"}``: each sentence with the numbers it reads) and
        ``text``, the paragraph (:func:`summary_lines`).
    """
    name = str(res["set"].values[i])
    M = int(res["M"].values[i]) if "M" in res.coords else None
    out = {"set": name, "M": M, "questions": {}, "scale": None, "sentences": [],
           "advice": []}
    if "question_verdict" not in res:
        out["text"] = f"{name}: no questions in this result (saved by an older uqx)"
        return out
    qs = {}
    for q in (str(x) for x in res["question"].values):
        qf = _question(res, i, q)
        if _asked(qf):
            qs[q] = qf
    sc = _scale(res, i)
    out["questions"], out["scale"] = qs, sc
    sents = []
    if "average" in qs:
        sents.append(_average_sentence(res, i, qs["average"], sc))
    up_valid = "rescaled_consistency" in res and _str(
        res["rescaled_consistency"].values[i]) == "valid"
    if "consistency" in qs:
        sents.append(_conditional_sentence(res, i, qs["consistency"], "uE", sc, up_valid))
    fs = _factor_sentence(res, i, sc, qs.get("up_to_factor"))
    if fs is not None and not (fs["reads"]["verdict"] == "valid" and qs.get(
            "consistency", {}).get("verdict") == "valid"):  # uE itself consistent: no factor
        sents.append(fs)
    for q, cond in (("adaptivity_X", "X"), ("adaptivity_V", "V")):
        if q in qs and _has_feature(res, i, cond, qs[q]):
            sents.append(_conditional_sentence(res, i, qs[q], cond, sc))
    if "ranking" in qs:
        sents.append(_ranking_sentence(res, i, qs["ranking"]))
    out["sentences"] = sents
    out["advice"] = _advice(res, i, qs, sc)
    head = f"{name}" + (f" (M = {M})" if M is not None else "")
    body = ". ".join(_cap(s["text"]) for s in sents)
    text = f"{head}: {body}." if body else f"{head}: nothing was tested."
    if out["advice"]:
        text += " Next: " + "; ".join(a["text"] for a in out["advice"]) + "."
    elif sents and all(s["reads"].get("verdict") == "valid" for s in sents
                       if s["reads"].get("verdict") != "not tested"):
        text += " Nothing to do at the resolutions stated"
        text += "." if "consistency" in qs else (" (consistency was not tested: no binned "
                                                 "statistic on uE).")
    out["text"] = text
    return out


def _cap(s: str) -> str:
    return s if s.startswith("uE") else s[:1].upper() + s[1:]


def summary_lines(res) -> list[str]:
    """One short paragraph per set: the verdicts in words, then what to do next.

    Parameters
    ----------
    res : xarray.Dataset
        A :func:`uqx.validate` result.

    Returns
    -------
    list of str
        One paragraph (a single line) per set, in the result's order; empty for a
        result without questions.

    Examples
    --------
    >>> for line in summary_lines(res):  # doctest: +SKIP
    ...     print(line)
    overconfident (M = 5000): Average calibration invalid: uE about 24 % too small on
    average (ZMS 1.53; factor 1.24 [1.21, 1.26]). ...
    """
    if "question_verdict" not in res or "set" not in res.dims:
        return []
    return [set_summary(res, i)["text"] for i in range(res.sizes["set"])]


def summary_text(res, width: int | None = 100) -> str:
    """Return the summary paragraphs wrapped to ``width`` columns (None: one line each)."""
    lines = summary_lines(res)
    if width is None:
        return "\n\n".join(lines)
    return "\n\n".join(textwrap.fill(s, width=width, subsequent_indent="  ",
                                     break_on_hyphens=False) for s in lines)


# ------------------------------------------------------------------ explain


def _p_words(qf) -> str:
    ps = qf["p_value"]
    if not ps:
        return "no member took part"
    return ", ".join(f"{m} p = {_g(p)} (level {_g(qf['level'].get(m, np.nan), 2)})"
                     for m, p in ps.items())


def explain_lines(res) -> list[str]:
    """One paragraph per set, in plain words, of how each verdict was reached.

    For each question: the statistic of each of its nodes, its p-value adjusted by the
    closed weighted min-p of the set's graph (:mod:`uqx.engine.questions`) under each
    member of the null family that took part, how the members were combined into the
    verdict, and what a ``valid`` could have seen (its resolution).

    Parameters
    ----------
    res : xarray.Dataset
        A :func:`uqx.validate` result.

    Returns
    -------
    list of str
    """
    if "question_verdict" not in res or "set" not in res.dims:
        return []
    alpha = _f(res.attrs.get("alpha_result", ALPHA_RESULT))
    share = _f(res.attrs.get("question_share", 1.0))
    n = n_copies(res)
    out = []
    for i in range(res.sizes["set"]):
        s = set_summary(res, i)
        parts = []
        for q, qf in s["questions"].items():
            v = qf["verdict"]
            if not qf["tests"] or v == "not tested":
                why = f": {qf['reason']}" if qf["reason"] else ""
                parts.append(f"{_cap(qf['label'])} was not tested{why}.")
                continue
            how = (f"{qf['tests']} against its {n} calibrated copies" if "," not in qf["tests"]
                   else f"{qf['tests']} (one node each, the smaller adjusted p-value) against "
                   f"their {n} shared calibrated copies")
            text = (f"{_cap(qf['label'])} is tested by {how}; its adjusted p-value under each "
                    f"member of the null family that takes part: {_p_words(qf)}.")
            if v == "invalid":
                text += " Every member rejects at the set's level: invalid."
            elif v == "valid":
                text += " No member rejects: valid."
                sent = next((x for x in s["sentences"] if x["kind"] == q), None)
                if sent and ":" in sent["text"]:
                    text += " " + _cap(sent["text"].split(": ", 1)[1]) + "."
            elif v == "inconclusive":
                text += f" Inconclusive: {qf['reason']}."
            else:
                text += f" Not tested: {qf['reason']}." if qf["reason"] else " Not tested."
            if qf["borderline"]:
                text += (" A p-value lies within two Monte-Carlo standard deviations of its "
                         "level (borderline).")
            parts.append(text)
        lead = (f"{s['set']}" + (f" (M = {s['M']})" if s["M"] is not None else "") + ": each "
                "question's nodes, one statistic each, share the set's family-wise level "
                f"{_g(alpha, 2)} in one graph (a calibrated set gets an invalid somewhere at "
                "most that often); each node's p-value is adjusted by closed testing of the "
                "graph on the copies the nodes share, and compared with that level"
                + (f"; each question must also reject by itself at {_g(alpha * share, 2)} (so "
                   "none reads invalid more often than that)." if share < 1 else "."))
        out.append(" ".join([lead, *parts]))
    return out
