"""Decision steps of the workflow: p-values, the questions and their verdicts, the tails.

:func:`pvalue_step` computes every tested statistic's Monte-Carlo p-value under each
member of the null family (keeping the papers' decision on the ζ-scores beside it,
``zeta_verdict``, :mod:`uqx.engine.verdict`). :func:`question_step` decides the result
by the design of :mod:`uqx.engine.questions`: each question (average calibration,
consistency, adaptivity on each feature, consistency up to a factor) is tested by the
weighted min-p of its statistics, the statistics inside it by the step-down of the same
min-p, the questions share the set's family-wise level by a graphical weighted Holm
procedure, and :func:`uqx.engine.questions.member_verdict` combines the members.
:func:`tails_step` keeps an ``invalid`` from standing on tails the null family does not
represent. Documentation: "How to read the verdicts".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import xarray as xr

from uqx.dataio.schema import VALIDATE
from uqx.engine.mctest import (
    LIGHT_SIDE,
    copy_pvalues,
    mc_pvalue,
    mc_pvalue_sides,
    pvalue_noise,
    smallest_pvalue,
)
from uqx.engine.null_shape import NU_MIN, tails_reach_limit, tails_within_reach
from uqx.engine.questions import (
    QUESTIONS,
    critical_value,
    graph_procedure,
    member_verdict,
    question_graph,
    question_of,
    weighted_stepdown,
)
from uqx.engine.statistic import STATISTICS, parse_stat
from uqx.engine.stats.tailedness import SAFETY_LIMITS
from uqx.engine.verdict import (
    interval_problem,
    simulated_verdict,
    zeta_se,
    zeta_verdict,
)

__all__ = [
    "pvalue_step",
    "question_step",
    "QuestionTests",
    "set_tests",
    "members_used",
    "tails_step",
    "tails_reason",
    "TAILS_ROBUST",
    "papers_verdict",
    "zeta_borderline",
    "QUESTION_VARS",
]


def members_used(res, n_members, rank: bool = False) -> np.ndarray:
    """Members taking part in each set's verdicts, (set, member) bool (all when unknown).

    With ``rank`` (the verdicts of a rank statistic, CC), the members whose body also
    fits the data's (``member_plausible_rank``,
    :func:`uqx.workflow.references.plausible_for_ranks`).
    """
    if rank and "member_plausible_rank" in res:
        return res["member_plausible_rank"].values.astype(bool)
    if "member_plausible" in res:
        return res["member_plausible"].values.astype(bool)
    return np.ones((res.sizes["set"], n_members), dtype=bool)


def zeta_borderline(res, i, j) -> bool:
    """Return whether abs(ζ) is within two Monte-Carlo sd of 1 (the papers' decision can flip)."""
    g = {k: res[k].values[i, j] for k in ("estimate", "ci_low", "ci_high", "ci_low_se",
                                           "ci_high_se", "zeta", "reference",
                                           "reference_kind")}
    if str(g["reference_kind"]).startswith("predefined"):
        zetas, refs, ut, rse = [g["zeta"]], [g["reference"]], [0.0], [0.0]
    else:
        zetas = list(res["zeta_sim"].values[i, j])
        refs = list(res["sim_reference"].values[i, j])
        rse = list(res["sim_reference_se"].values[i, j])
        ut = [2 * x for x in rse]
    sz = zeta_se(g["estimate"], np.array(refs), g["ci_low"], g["ci_high"], g["ci_low_se"],
                 g["ci_high_se"], target_u=np.array(ut), reference_se=np.array(rse))
    with np.errstate(invalid="ignore"):
        return bool(np.any(np.abs(np.abs(zetas) - 1) < 2 * sz))


def papers_verdict(res, specs, i, j, labels):
    """Return the papers' ζ decision (000 Fig. 1 with uqx's D agreement), for comparison."""
    e, lo, hi = (float(res[k].values[i, j]) for k in ("estimate", "ci_low", "ci_high"))
    kind = str(res["reference_kind"].values[i, j])
    if not STATISTICS[specs[j].base].tested or kind == "":
        return "not tested"
    if interval_problem(e, lo, hi):
        return "inconclusive"
    if kind.startswith("predefined"):
        return zeta_verdict(float(res["zeta"].values[i, j]))
    return simulated_verdict(res["zeta_sim"].values[i, j], res["zeta_sim2"].values[i, j],
                             labels)[0]


def pvalue_step(res, specs, notes, draws, member_labels, *, observed, joint=None
                ) -> xr.Dataset:
    """Step 4: each tested statistic's Monte-Carlo p-value under every member.

    The p-value of the statistic the test reads (``observed``: the estimate, or its
    studentised form for ⟨Z⟩: its ``test_statistic`` in
    :data:`uqx.engine.statistic.STATISTICS`) among its calibrated copies
    (:func:`uqx.engine.mctest.mc_pvalue`, one- or two-sided by its ``direction``). With
    ``joint`` (the fitted member at ν̂), the fitted member of a two-sided statistic of
    :data:`uqx.engine.mctest.LIGHT_SIDE` reads that side on ``draws`` (the heavy end of
    ν) and the other on ``joint`` (:func:`uqx.engine.mctest.mc_pvalue_sides`). The
    papers' ζ rule is kept in ``zeta_verdict``.

    Parameters
    ----------
    res : xarray.Dataset
        The result so far (estimates, intervals, references over (set, stat)).
    specs : list of StatSpec
    notes : object
        The workflow's collector of warnings.
    draws : numpy.ndarray, shape (set, stat, member, n)
        The copies of each statistic's test.
    member_labels : list of str
    observed : numpy.ndarray, shape (set, stat)
        The value of each statistic's test statistic on the data.
    joint : numpy.ndarray, optional
        The joint copies (the fitted member at ν̂).

    Returns
    -------
    xarray.Dataset
        ``p_value`` (set, stat, member), ``test_statistic``, ``zeta_verdict``,
        ``zeta_borderline``.
    """
    S, K = res.sizes["set"], len(specs)
    papers = np.full((S, K), "not tested", dtype=object)
    zeta_bl = np.zeros((S, K), dtype=bool)
    pv = np.full((S, K, len(member_labels)), np.nan)
    labels = [str(d) for d in res["dist"].values]
    est = res["estimate"].values
    light = member_labels.index("fit") if joint is not None and "fit" in member_labels \
        else None
    for i in range(S):
        for j, s in enumerate(specs):
            if not STATISTICS[s.base].tested:
                continue
            papers[i, j] = papers_verdict(res, specs, i, j, labels)
            if papers[i, j] in ("valid", "invalid"):
                zeta_bl[i, j] = zeta_borderline(res, i, j)
            problem = interval_problem(est[i, j], res["ci_low"].values[i, j],
                                       res["ci_high"].values[i, j])
            if problem:
                notes.stat(i, j, problem + " (ζ-scores only; the verdict does not use it)")
            d = STATISTICS[s.base].direction
            pv[i, j] = mc_pvalue(observed[i, j], draws[i, j], d)
            if light is not None and s.base in LIGHT_SIDE:
                # fitted member: the heavy end of nu on the light side, nu_hat on the other
                heavy, point = draws[i, j, light], joint[i, j, light]
                up, down = (heavy, point) if LIGHT_SIDE[s.base] > 0 else (point, heavy)
                pv[i, j, light] = mc_pvalue_sides(observed[i, j], up, down)
    return xr.Dataset(VALIDATE.data_vars({
        "p_value": pv, "test_statistic": np.asarray(observed, dtype=np.float64),
        "zeta_verdict": papers.astype(str), "zeta_borderline": zeta_bl,
    }), coords={"member": list(member_labels)})


@dataclass
class QuestionTests:
    """The tests of one set's result, each in its question (:mod:`uqx.engine.questions`).

    Attributes
    ----------
    keys : list of tuple
        ``("stat", j)`` for statistic j of the result, ``("factor", j)`` for statistic j
        rescaled by the set's factor (the question ``up_to_factor``).
    questions : list of str
        The question of each test.
    weights : numpy.ndarray, shape (T,)
    p : numpy.ndarray, shape (T, member)
        Each test's p-value under each member (NaN: member not taking part).
    copies : numpy.ndarray, shape (T, member, n)
        Each test's p-value on each of the member's shared copies.
    use : numpy.ndarray of bool, shape (T, member)
        Members taking part in each test.
    """

    keys: list
    questions: list
    weights: np.ndarray
    p: np.ndarray
    copies: np.ndarray
    use: np.ndarray


def set_tests(res, specs, draws, i, *, factor=None) -> QuestionTests:
    """Gather the tests of set ``i`` with their p-values and copies' p-values.

    Every tested statistic of ``specs`` joins the question of its family and binning
    (:func:`uqx.engine.questions.question_of`); a rank statistic only under the members
    whose body fits the data's (:func:`members_used`). ``factor``: the binned statistics
    on uE rescaled by the factor, ``{j: (p (member,), copies (member, n))}``
    (:func:`factor_tests`), join the question ``up_to_factor``.
    """
    n_members = draws.shape[2]
    use_all = members_used(res, n_members)[i]
    use_rank = members_used(res, n_members, rank=True)[i]
    keys, qs, ws, ps, cs, us = [], [], [], [], [], []
    n = draws.shape[-1]
    for j, s in enumerate(specs):
        q = question_of(s.family, s.cond)
        p = res["p_value"].values[i, j]
        if not STATISTICS[s.base].tested or q is None or not np.isfinite(p).any():
            continue
        d = STATISTICS[s.base].direction
        keys.append(("stat", j))
        qs.append(q)
        ws.append(STATISTICS[s.base].weight)
        ps.append(p)
        cs.append(np.stack([copy_pvalues(draws[i, j, m], d) for m in range(n_members)]))
        us.append(use_rank if s.family == "rank" else use_all)
    for j, (p, c) in (factor or {}).items():
        keys.append(("factor", j))
        qs.append("up_to_factor")
        ws.append(STATISTICS[specs[j].base].weight)
        ps.append(p)
        pad = np.full((n_members, n), np.nan)
        pad[:, :c.shape[1]] = c[:, :n]
        cs.append(pad)
        us.append(use_all)
    T = len(keys)
    return QuestionTests(keys, qs, np.array(ws, dtype=np.float64),
                         np.array(ps, dtype=np.float64).reshape(T, n_members),
                         np.array(cs, dtype=np.float64).reshape(T, n_members, n),
                         np.array(us, dtype=bool).reshape(T, n_members))


class MemberDecision(NamedTuple):
    """One member's procedure over a set's questions (:func:`_decide_member`).

    Attributes
    ----------
    present : list of str
        The questions with at least one usable test.
    adjusted : numpy.ndarray
        Each test's step-down adjusted p-value.
    p : dict
        Each question's p-value (its smallest adjusted p).
    rejected, level, initial_level : dict
        Per question: rejected by the graph, the level it was tested at, its initial level.
    """

    present: list
    adjusted: np.ndarray
    p: dict
    rejected: dict
    level: dict
    initial_level: dict


def _decide_member(t: QuestionTests, m: int, alpha_result: float) -> MemberDecision:
    """One member's procedure: adjusted p-values, questions' p, levels and rejections."""
    present = [q for q in QUESTIONS if any(
        tq == q and t.use[k, m] and np.isfinite(t.p[k, m]) for k, tq in enumerate(t.questions))]
    adj = np.full(len(t.keys), np.nan)
    p_q = {}
    crit = {}
    for q in present:
        idx = [k for k, tq in enumerate(t.questions)
               if tq == q and t.use[k, m] and np.isfinite(t.p[k, m])]
        a = weighted_stepdown(t.p[idx, m], t.copies[idx, m], t.weights[idx])
        adj[idx] = a
        p_q[q] = float(np.nanmin(a)) if np.isfinite(a).any() else np.nan
        crit[q] = idx
    w, G = question_graph(present)
    rej, lev = graph_procedure([p_q[q] for q in present], w, G, alpha_result)
    init = dict(zip(present, w * alpha_result, strict=True))
    return MemberDecision(present, adj, p_q, dict(zip(present, rej, strict=True)),
                          dict(zip(present, lev, strict=True)), init)


#: Variables of a result that :func:`question_step` writes beside the statistics'.
QUESTION_VARS = ("question_verdict", "question_reason", "question_p_value",
                 "question_level", "question_level_initial", "question_borderline",
                 "question_tests")


def question_step(res, specs, draws, *, factor=None, alpha_result) -> xr.Dataset:
    """Step 5: the questions of each set, tested together; every verdict of the result.

    For each set and member (:func:`set_tests`): the weighted step-down min-p of every
    question's tests (:func:`uqx.engine.questions.weighted_stepdown`; the headline's
    p-value is the smallest), the questions' levels from the graphical procedure
    (:func:`uqx.engine.questions.graph_procedure` with
    :func:`uqx.engine.questions.question_graph`, family-wise level ``alpha_result``);
    a test is rejected under a member when its question is and its adjusted p-value is
    below the level the question was rejected at. Over the members that take part
    (:func:`uqx.engine.questions.member_verdict`): ``invalid`` where every member
    rejects, ``valid`` where none does, else ``inconclusive`` with the members named. A
    statistic is ``invalid`` only beside an ``invalid`` question (a member that leaves
    it out can still keep the question from being rejected), and a ``valid`` question
    has no rejected test under any member: the result is consonant.

    A test whose copies cannot reach its level (its threshold below the smallest p-value
    its copies give) gets no verdict (``inconclusive``, "increase --n-mc"). A p-value
    within two Monte-Carlo sd of its level under some member is ``borderline``.

    Parameters
    ----------
    res : xarray.Dataset
        The result with ``p_value`` and the members that take part.
    specs : list of StatSpec
    draws : numpy.ndarray, shape (set, stat, member, n)
        The copies the tests share (those of :func:`pvalue_step`).
    factor : dict, optional
        Per set, the tests of ``up_to_factor`` (:func:`factor_tests`).
    alpha_result : float
        The set's family-wise level.

    Returns
    -------
    xarray.Dataset
        ``verdict``, ``verdict_reason``, ``borderline``, ``p_adjusted``, ``valid`` over
        (set, stat); the questions' ``question_*`` over (set, question[, member]); the
        factor's statistics ``factor_*`` over (set, stat).
    """
    S, K = res.sizes["set"], len(specs)
    labels = [str(m) for m in res["member"].values]
    D = len(labels)
    Q = len(QUESTIONS)
    verdict = np.full((S, K), "not tested", dtype=object)
    reason = np.full((S, K), "", dtype=object)
    near = np.zeros((S, K), dtype=bool)
    adj_all = np.full((S, K, D), np.nan)
    fverdict = np.full((S, K), "not tested", dtype=object)
    freason = np.full((S, K), "", dtype=object)
    fp = np.full((S, K, D), np.nan)
    fadj = np.full((S, K, D), np.nan)
    qv = np.full((S, Q), "not tested", dtype=object)
    qr = np.full((S, Q), "", dtype=object)
    qp = np.full((S, Q, D), np.nan)
    ql = np.full((S, Q, D), np.nan)
    ql0 = np.full((S, Q, D), np.nan)
    qb = np.zeros((S, Q), dtype=bool)
    qtests = np.full((S, Q), "", dtype=object)
    use_all = members_used(res, D)
    n = draws.shape[-1]
    for i in range(S):
        for j, s in enumerate(specs):  # tested statistics left out of every question
            if STATISTICS[s.base].tested and question_of(s.family, s.cond) is not None:
                verdict[i, j] = "inconclusive"
                reason[i, j] = NO_PVALUE
        t = set_tests(res, specs, draws, i, factor=None if factor is None else factor.get(i))
        if not t.keys:
            continue
        rej_t = np.zeros((len(t.keys), D), dtype=bool)
        lev_t = np.full((len(t.keys), D), np.nan)
        adj_t = np.full((len(t.keys), D), np.nan)
        rej_q = np.zeros((Q, D), dtype=bool)
        firm_q = np.zeros((Q, D), dtype=bool)  # rejected beyond the Monte-Carlo noise
        firm_t = np.zeros((len(t.keys), D), dtype=bool)
        reach_q = np.ones(Q, dtype=bool)
        reach_t = np.ones(len(t.keys), dtype=bool)
        thr_t = np.full(len(t.keys), np.nan)  # the threshold of a test out of reach
        for m in range(D):
            present, adj, p_q, rej, lev, init = _decide_member(t, m, alpha_result)
            adj_t[:, m] = adj
            for q in present:
                a = QUESTIONS.index(q)
                qp[i, a, m], ql[i, a, m], ql0[i, a, m] = p_q[q], lev[q], init[q]
                rej_q[a, m] = rej[q]
                idx = [k for k, tq in enumerate(t.questions) if tq == q]
                n_ok = int(np.sum(np.all(np.isfinite(t.copies[idx, m]), axis=0)))
                firm = firm_level(lev[q], n_ok)
                firm_q[a, m] = bool(p_q[q] < firm)
                if not use_all[i, m]:
                    continue
                if firm * (1 + n_ok) <= 1.0:  # (1 + 0) / (1 + n): no firm rejection
                    reach_q[a] = False
                # a test not firmly rejected was last tested beside the others left at the
                # step where the procedure stopped: its threshold there is w * c
                left = [k for k in idx if t.use[k, m] and not (firm_q[a, m] and adj[k] < firm)]
                c = critical_value(t.copies[left, m], t.weights[left], firm) if left else np.nan
                for k in idx:
                    if not t.use[k, m]:
                        continue
                    lev_t[k, m] = lev[q]
                    rej_t[k, m] = rej[q] and adj[k] < lev[q]
                    firm_t[k, m] = firm_q[a, m] and adj[k] < firm
                    d = STATISTICS[specs[t.keys[k][1]].base].direction \
                        if t.keys[k][0] == "stat" else 1
                    if k in left and np.isfinite(c) and \
                            t.weights[k] * c <= smallest_pvalue(n_ok, d):
                        reach_t[k] = False
                        thr_t[k] = np.nanmax([thr_t[k], t.weights[k] * c])
        asked = np.ones(Q, dtype=bool)
        for a, q in enumerate(QUESTIONS):
            members_q = use_all[i] & np.isfinite(qp[i, a])
            if not members_q.any():
                continue
            qtests[i, a] = ", ".join(_test_label(specs, key) for key, tq in
                                     zip(t.keys, t.questions, strict=True) if tq == q)
            if np.all(ql[i, a][members_q] == 0):  # never given a share of the level
                qv[i, a], qr[i, a] = "not tested", NOT_ASKED.get(
                    q, "the question received no share of the set's level")
                asked[a] = False
                continue
            qv[i, a], qr[i, a] = member_verdict(
                rej_q[a], labels, use=members_q, firm=firm_q[a], reachable=bool(reach_q[a]),
                unreachable="" if reach_q[a] else _unreachable(
                    n, firm_level(np.nanmax(ql[i, a][members_q]), n)))
            qb[i, a] = _near(qp[i, a], ql[i, a], n, members_q)
        for k, key in enumerate(t.keys):
            a = QUESTIONS.index(t.questions[k])
            u = t.use[k] & use_all[i] & np.isfinite(t.p[k])
            if not asked[a]:
                if key[0] == "factor":
                    fverdict[i, key[1]], freason[i, key[1]] = "not tested", qr[i, a]
                    fp[i, key[1]] = t.p[k]
                continue
            levels = lev_t[k][u & np.isfinite(lev_t[k])]
            v, why = member_verdict(
                rej_t[k], labels, use=u, firm=firm_t[k], reachable=bool(reach_t[k]),
                unreachable="" if reach_t[k] or not levels.size else _unreachable(
                    n, thr_t[k]))
            if v == "invalid" and qv[i, a] != "invalid":
                v = "inconclusive"
                why = (f"rejected under every member that takes part in it, but its question "
                       f"({t.questions[k]}) is not rejected under every member")
            bl = _near(adj_t[k], lev_t[k], n, u)
            j = key[1]
            if key[0] == "stat":
                verdict[i, j], reason[i, j], near[i, j] = v, why, bl
                adj_all[i, j] = adj_t[k]
            else:
                fverdict[i, j], freason[i, j] = v, why
                fp[i, j], fadj[i, j] = t.p[k], adj_t[k]
    valid = np.where(verdict == "valid", 1.0, np.where(verdict == "invalid", 0.0, np.nan))
    out = xr.Dataset(VALIDATE.data_vars({
        "verdict": verdict.astype(str), "verdict_reason": reason.astype(str),
        "borderline": near, "p_adjusted": adj_all, "valid": valid,
        "question_verdict": qv.astype(str), "question_reason": qr.astype(str),
        "question_p_value": qp, "question_level": ql, "question_level_initial": ql0,
        "question_borderline": qb, "question_tests": qtests.astype(str),
        "factor_verdict": fverdict.astype(str), "factor_verdict_reason": freason.astype(str),
        "factor_p_value": fp, "factor_p_adjusted": fadj,
    }), coords={"question": list(QUESTIONS), "member": labels})
    out.attrs["alpha_result"] = float(alpha_result)
    return out


#: Why a statistic without a finite p-value has no verdict.
NO_PVALUE = ("a Monte-Carlo p-value is not finite (the statistic is undefined on the data or "
             "on every copy): no verdict")

#: Why a question that received no share of the set's level is not tested.
NOT_ASKED = {"up_to_factor": "asked only where average calibration is rejected (its share "
                             "of the level comes from there)"}


def firm_level(level, n):
    r"""Level below which a p-value is a rejection beyond its Monte-Carlo noise.

    :math:`\max(L - 2\sqrt{L(1-L)/n},\ L/2)` (:func:`uqx.engine.mctest.pvalue_noise`):
    a member whose p-value lies between it and the level L rejects, but n copies cannot
    tell that rejection from an acceptance; it does not withhold a ``valid`` (marked
    ``borderline``), and the resolution of a ``valid`` is read at this level. The band
    never takes more than half the level, so that the small levels (ranking's 0.75 %)
    stay within reach of a few hundred copies.
    """
    level = float(level)
    return max(level - 2.0 * float(pvalue_noise(level, n, level)), level / 2.0)


def _unreachable(n, level) -> str:
    """Why a test whose copies cannot reach its level gives no verdict."""
    return (f"{int(n)} calibrated copies cannot give p < {float(level):.3g} (the smallest "
            f"p-value they give is {1 / (1 + n):.3g} on one side, {2 / (1 + n):.3g} on "
            "two): no verdict; increase --n-mc")


def _test_label(specs, key) -> str:
    j = key[1]
    name = specs[j].name.upper()
    w = STATISTICS[specs[j].base].weight
    return f"{name} (w {w:g})" if w != 1 else name


def _near(p, level, n, use) -> bool:
    """Whether a member's p-value lies within two Monte-Carlo sd of its level."""
    p, level = np.asarray(p, dtype=np.float64), np.asarray(level, dtype=np.float64)
    u = np.asarray(use, dtype=bool) & np.isfinite(p) & np.isfinite(level)
    if not u.any():
        return False
    band = 2 * pvalue_noise(p[u], n, level[u])
    floor = 1.0 / (1 + n)
    return bool(np.any((np.abs(p[u] - level[u]) < band) & (p[u] > floor)))


def tails_reason(kappa, M=None) -> str:
    """Why an ``invalid`` cannot stand on errors this heavy-tailed ('' when it can).

    The null family reaches t_s(3) at its heaviest (:data:`uqx.engine.null_shape.NU_MIN`) and
    its sizes are measured within the safety limits of 001 Table II. Beyond the limit on
    the Crow–Siddiqui kurtosis of Z² (measured within the bins of uE, so that an
    inconsistency is not read as tails), a rejection may come from tails that no member
    represents. With ``M``, also where the sample is too small to show tails lighter
    than t_s(3)'s (:func:`uqx.engine.null_shape.tails_within_reach`): a small sample of
    heavier-tailed errors that misses its extremes looks light and has a small ⟨Z²⟩.

    Parameters
    ----------
    kappa : float
        κ_CS of the set's Z² (``kappa_cs_z2_local`` of a result).
    M : int, optional
        Points of the set.
    """
    limit = SAFETY_LIMITS["kappa_cs_z2"]
    if not np.isfinite(kappa):
        return ""
    if kappa > limit:
        return (f"rejected, but the errors' tails are beyond the safety limit (kappa_cs of "
                f"Z^2 within the bins of uE = {kappa:.3g} > {limit:g}, 001 Table II): the "
                "null family does not represent such tails, the rejection may come from them")
    if M is not None and not tails_within_reach(kappa, M):
        reach = float(tails_reach_limit(M))
        return (f"rejected, but {int(M)} points cannot show that the errors' tails are lighter "
                f"than those of t_s({NU_MIN:g}), the heaviest member of the null family "
                f"(kappa_cs of Z^2 within the bins of uE = {kappa:.3g}, not below {reach:.3g}):"
                " heavier tails that the sample missed would give such a rejection on "
                "calibrated data")
    return ""


#: Statistics whose test keeps its size whatever the tails: the studentised mean of Z
#: (finite variance for t_s(ν > 2); measured: t_s(2.5) errors, <= 1 % `invalid` at
#: M = 200). The tails step does not apply to it. (CC's ranks do not see the tails,
#: but its data member, each window of uE scaled to a unit mean square, moves the
#: windows' bodies apart when one holds an extreme: CC is not among them.)
TAILS_ROBUST = ("mean_z",)


#: Statistics weighted by u² (their value is dominated by the largest uE): their
#: small-sample reach is read at the effective number of points of u²,
#: :math:`(\sum u^2)^2 / \sum u^4` (``u2_effective_points``).
U2_WEIGHTED = ("rce", "uce")


def _halves_reason(res, i) -> str:
    """Why a half of the uE order cannot carry an ``invalid`` ('' when both can).

    :func:`uqx.engine.null_shape.tails_within_reach` of each half's κ_CS of Z²
    (``kappa_cs_z2_half``, :func:`uqx.engine.null_shape.kappa_cs_z2_halves`).
    """
    if "kappa_cs_z2_half" not in res:
        return ""
    for h, name in enumerate(("lower", "upper")):
        k = float(res["kappa_cs_z2_half"].values[i, h])
        n = int(res["half_points"].values[i, h])
        if n >= 2 and np.isfinite(k) and not tails_within_reach(k, n):
            return (f"rejected, but the {name} half of the uE order ({n} points) cannot show "
                    f"that its errors' tails are lighter than those of t_s({NU_MIN:g}), the "
                    f"heaviest member of the null family (kappa_cs of Z^2 there = {k:.3g}, "
                    f"not below {float(tails_reach_limit(n)):.3g}): errors heavier-tailed "
                    "for those uE that the sample missed would give such a rejection on "
                    "calibrated data")
    return ""


def _stat_tails_reason(base, res, i, M, on_ue=False) -> str:
    """Why an ``invalid`` of statistic ``base`` of set ``i`` cannot stand ('' when it can).

    :func:`tails_reason` of κ_CS of Z² within the bins of uE (the shape of ε: every
    member draws the data's own uE, so the tails of u² are in the copies as they are in
    the data). The statistics binned on uE (``on_ue``: consistency, and consistency up
    to a factor) also need each half of the uE order to show its tails lighter than
    t_s(3)'s (:func:`_halves_reason`): a shape that changes with uE is what they must
    not read as inconsistency. The statistics of :data:`U2_WEIGHTED` read the
    small-sample reach at the effective number of points of u² instead of M: a few of
    the largest uE carry them, and those few errors can miss their extremes as a small
    sample does.
    """
    if base in TAILS_ROBUST:
        return ""
    kappa = float(res["kappa_cs_z2_local"].values[i]) if "kappa_cs_z2_local" in res \
        else np.nan
    why = _halves_reason(res, i) if on_ue else ""
    if why and not kappa > SAFETY_LIMITS["kappa_cs_z2"]:
        return why
    if base in U2_WEIGHTED and M is not None and "u2_effective_points" in res:
        n_eff = float(res["u2_effective_points"].values[i])
        if np.isfinite(n_eff) and n_eff < M:
            why = tails_reason(kappa, max(int(n_eff), 2))
            if why and not kappa > SAFETY_LIMITS["kappa_cs_z2"]:
                return why.replace(f"{max(int(n_eff), 2)} points cannot show",
                                   f"the {max(int(n_eff), 2)} effective points of u^2 "
                                   f"({base.upper()} is weighted by u^2) cannot show")
            return why
    return tails_reason(kappa, M)


def tails_step(res, M=None) -> xr.Dataset:
    """Step 6: an ``invalid`` on tails beyond the null family's reach becomes ``inconclusive``.

    Each statistic's ``invalid`` (and each rescaled statistic's) is checked against the
    tails of ε (:func:`_stat_tails_reason`: beyond the safety limit of 001 Table II on
    κ_CS of Z², or a sample too small to show its tails lighter than t_s(3)'s), but those
    of :data:`TAILS_ROBUST`. A question stays
    ``invalid`` where one of its statistics still is (⟨Z⟩'s bias, say) or where none of
    its statistics had its ``invalid`` withdrawn by the tails; else it becomes
    ``inconclusive`` with the same reason, so that no statistic is ``invalid`` beside a
    question that is not.

    Parameters
    ----------
    res : xarray.Dataset
        The result, with ``kappa_cs_z2_local`` and the tailedness metrics over ``set``.
    M : array_like of int, optional
        Points of each set.

    Returns
    -------
    xarray.Dataset
        The result with the verdicts and reasons updated (``valid`` recomputed).
    """
    names = [str(x) for x in res["stat"].values]
    specs = [parse_stat(n) for n in names]
    qs = [str(q) for q in res["question"].values]
    out = {v: [res[v].values.astype(object), res[r].values.astype(object)]
           for v, r in (("verdict", "verdict_reason"), ("factor_verdict", "factor_verdict_reason"),
                        ("question_verdict", "question_reason")) if v in res}
    for i in range(res.sizes["set"]):
        Mi = None if M is None else int(np.asarray(M)[i])
        withdrawn = {}
        for v in ("verdict", "factor_verdict"):
            if v not in out:
                continue
            ver, rea = out[v]
            for j, s in enumerate(specs):
                if ver[i, j] != "invalid":
                    continue
                why = _stat_tails_reason(s.base, res, i, Mi,
                                         on_ue=s.cond == "uE" and s.family != "moment")
                if why:
                    ver[i, j], rea[i, j] = "inconclusive", why
                    q = "up_to_factor" if v == "factor_verdict" else question_of(s.family,
                                                                                   s.cond)
                    withdrawn.setdefault(q, why)
        if "question_verdict" not in out:
            continue
        ver, rea = out["question_verdict"]
        for a, q in enumerate(qs):
            if ver[i, a] == "invalid" and q in withdrawn and \
                    not _question_stats_invalid(res, out, i, q, specs):
                ver[i, a], rea[i, a] = "inconclusive", withdrawn[q]
    for v, (ver, rea) in out.items():
        rname = "question_reason" if v == "question_verdict" else v + "_reason"
        res = res.assign({v: (res[v].dims, ver.astype(str), res[v].attrs),
                          rname: (res[rname].dims, rea.astype(str), res[rname].attrs)})
    res["valid"] = (("set", "stat"), np.where(res["verdict"].values == "valid", 1.0, np.where(
        res["verdict"].values == "invalid", 0.0, np.nan)), res["valid"].attrs)
    return res


def _question_stats_invalid(res, out, i, q, specs) -> bool:
    """Whether a statistic of question ``q`` of set ``i`` is still ``invalid``."""
    if q == "up_to_factor":
        ver = out.get("factor_verdict", (None,))[0]
        return ver is not None and bool(np.any(ver[i] == "invalid"))
    ver = out["verdict"][0]
    return any(question_of(s.family, s.cond) == q and ver[i, j] == "invalid"
               for j, s in enumerate(specs))
