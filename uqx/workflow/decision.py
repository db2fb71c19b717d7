"""Decision steps of the workflow: p-values, the questions and their verdicts.

:func:`pvalue_step` computes every tested statistic's Monte-Carlo p-value under each
member of the null family (keeping the papers' decision on the ζ-scores beside it,
``zeta_verdict``, :mod:`uqx.engine.verdict`). :func:`question_step` decides each set
once, by the design of :mod:`uqx.engine.questions`: one node per declared null, each
tested by one statistic, the nodes sharing the set's family-wise level in one graph
calibrated jointly on the shared copies (:func:`uqx.engine.questions.decide_set`), the
members combined by :func:`uqx.engine.questions.member_verdict`; an ``invalid`` that
stands on tails the null family does not represent reads ``inconclusive``, and what a
set cannot test ``not tested``, before any verdict is written. Documentation: "How to
read the verdicts".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

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
    NODES,
    QUESTIONS,
    decide_set,
    member_verdict,
    node_statistic,
    question_of,
)
from uqx.engine.statistic import STATISTICS
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
    "NodeTests",
    "set_tests",
    "members_used",
    "NOT_ASKED",
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
    band = _null_band(res, specs, draws)
    return xr.Dataset(VALIDATE.data_vars({
        "p_value": pv, "test_statistic": np.asarray(observed, dtype=np.float64),
        "null_band_low": band[..., 0], "null_band_high": band[..., 1],
        "zeta_verdict": papers.astype(str), "zeta_borderline": zeta_bl,
    }), coords={"member": list(member_labels)})


def _null_band(res, specs, draws) -> np.ndarray:
    """Central 95 % of each binned statistic's calibrated copies, (set, stat, 2).

    The widest over the members that take part. A binned statistic prints this band
    beside its estimate instead of a bootstrap interval: resampling adds a second layer
    of noise to its per-bin terms, its bootstrap bias is several bootstrap sd and its
    calibrated value sits on a boundary where the bootstrap is inconsistent (Andrews
    2000), so a BCa interval of it does not cover.
    """
    S, K, D = draws.shape[0], len(specs), draws.shape[2]
    out = np.full((S, K, 2), np.nan)
    use = members_used(res, D)
    for i in range(S):
        for j, s in enumerate(specs):
            if s.family != "binned" or s.vector or not STATISTICS[s.base].tested:
                continue
            lo, hi = [], []
            for m in np.flatnonzero(use[i]):
                c = draws[i, j, m]
                c = c[np.isfinite(c)]
                if c.size >= 2:
                    lo.append(np.quantile(c, 0.025))
                    hi.append(np.quantile(c, 0.975))
            if lo:
                out[i, j] = min(lo), max(hi)
    return out


@dataclass(frozen=True)
class NodeTests:
    """The node tests of one set's result (:mod:`uqx.engine.questions`).

    Attributes
    ----------
    nodes : tuple of str
        The names of :data:`uqx.engine.questions.NODES`, in that order.
    stat : numpy.ndarray of int, shape (node,)
        The index in the result's statistics of the statistic that tests each node (the
        rescaled one for ``up_to_factor``); -1 where the node is absent.
    p : numpy.ndarray, shape (node, member)
        Each node's p-value under each member (NaN: absent or member not taking part).
    copies : numpy.ndarray, shape (node, member, n)
        Each node's p-value on each of the member's shared copies.
    use : numpy.ndarray of bool, shape (node, member)
        Members taking part in each node.
    min_p : numpy.ndarray, shape (node,)
        The smallest p-value each node's copies can give.
    """

    nodes: tuple
    stat: np.ndarray
    p: np.ndarray
    copies: np.ndarray
    use: np.ndarray
    min_p: np.ndarray

    def present(self) -> list:
        """Return the indices of the nodes with a statistic."""
        return [k for k in range(len(self.nodes)) if self.stat[k] >= 0]


def set_tests(res, specs, draws, i, *, factor=None) -> NodeTests:
    """Gather the node tests of set ``i``: each node's statistic, p-values and copies.

    Each node of :data:`uqx.engine.questions.NODES` reads the first of its statistics
    that the result has with a finite p-value (:func:`uqx.engine.questions.node_statistic`);
    CC only under the members whose body also fits the data's (:func:`members_used`).
    ``factor``: the binned statistics on uE rescaled by the set's factor,
    ``{j: (p (member,), copies (member, n))}`` (:func:`factor_tests`), test the node
    ``up_to_factor``.
    """
    n_members, n = draws.shape[2], draws.shape[-1]
    use_all = members_used(res, n_members)[i]
    use_rank = members_used(res, n_members, rank=True)[i]
    pv = res["p_value"].values[i]
    Q = len(NODES)
    stat = np.full(Q, -1, dtype=np.int64)
    p = np.full((Q, n_members), np.nan)
    cp = np.full((Q, n_members, n), np.nan)
    use = np.zeros((Q, n_members), dtype=bool)
    min_p = np.full(Q, np.nan)
    ok = [STATISTICS[s.base].tested and np.isfinite(pv[j]).any() for j, s in enumerate(specs)]
    asked = [(s.base, s.cond if s.family == "binned" else None) if ok[j] else ("", None)
             for j, s in enumerate(specs)]
    for k, node in enumerate(NODES):
        if node.name == "up_to_factor":
            fac = factor or {}
            rescaled = [(specs[j].base, "uE") if j in fac else ("", None)
                        for j in range(len(specs))]
            j = node_statistic(node, rescaled)
            if j is None:
                continue
            pj, cj = fac[j]
            p[k] = pj
            cp[k, :, :cj.shape[1]] = cj[:, :n]
            use[k] = use_all
        else:
            j = node_statistic(node, asked)
            if j is None:
                continue
            d = STATISTICS[specs[j].base].direction
            p[k] = pv[j]
            cp[k] = np.stack([copy_pvalues(draws[i, j, m], d) for m in range(n_members)])
            use[k] = use_rank if specs[j].family == "rank" else use_all
        stat[k] = j
        d = STATISTICS[specs[j].base].direction
        n_ok = int(np.max(np.sum(np.isfinite(cp[k]), axis=-1)))
        min_p[k] = smallest_pvalue(max(n_ok, 1), d)
    p[~use] = np.nan
    return NodeTests(tuple(nd.name for nd in NODES), stat, p, cp, use, min_p)


#: Variables of a result that :func:`question_step` writes beside the statistics'.
QUESTION_VARS = ("question_verdict", "question_reason", "question_p_value",
                 "question_level", "question_level_initial", "question_borderline",
                 "question_tests")


def _decide_with_tails(t, res, specs, i, alpha, M):
    """Decide set ``i``; a rejection that the tails withdraw passes no share on.

    A node whose ``invalid`` cannot stand on the errors' tails (:func:`_stat_tails_reason`)
    keeps its own decision from the first pass (:func:`_withdraw_on_tails` then turns its
    ``invalid`` into ``inconclusive``), and the other nodes are decided again with its
    p-value at 1 under the members that rejected it: its share stays with it instead of
    raising the others' levels on a rejection that is withdrawn.

    Returns
    -------
    SetDecision
        Every node's decision: the held nodes' from the first pass, the others' from the
        second.
    """
    dec0 = decide_set(t.p, t.copies, t.use, t.min_p, alpha, nodes=t.nodes)
    masked, held = t.p.copy(), []
    for k in t.present():
        s = specs[int(t.stat[k])]
        on_ue = NODES[k].cond == "uE" and s.family != "moment"
        rej = dec0.rejected[k]
        if rej.any() and _stat_tails_reason(s.base, res, i, M, on_ue=on_ue):
            masked[k, rej] = 1.0
            held.append(k)
    if not held:
        return dec0
    dec = decide_set(masked, t.copies, t.use, t.min_p, alpha, nodes=t.nodes)
    rows = {f: getattr(dec, f).copy() for f in ("adjusted", "rejected", "firm", "reachable",
                                                 "share", "threshold")}
    for f, arr in rows.items():
        arr[held] = getattr(dec0, f)[held]
    return replace(dec, **rows)


def question_step(res, specs, draws, *, factor=None, alpha_result, M=None,
                  untestable=None) -> xr.Dataset:
    """Decide the questions of each set by one graph of node tests; every verdict.

    For each set (:func:`set_tests`) and member, the closed weighted min-p of the graph
    (:func:`uqx.engine.questions.decide_set`): each node's adjusted p-value, rejected
    at ``alpha_result``. Over the members that take part
    (:func:`uqx.engine.questions.member_verdict`): a node is ``invalid`` where every
    member rejects it, ``valid`` where none does beyond the Monte-Carlo noise, else
    ``inconclusive`` with the members named; a question is rejected under a member
    when one of its nodes is. The node's statistic carries the node's verdict; every
    other statistic is a ``diagnostic``: its p-value is kept, unadjusted, and it
    decides nothing. A node whose copies cannot reject it even at its smallest p-value
    gets no ``valid`` ("increase --n-mc"). An adjusted p-value within two Monte-Carlo sd
    of α under some member is ``borderline``.

    Parameters
    ----------
    res : xarray.Dataset
        The result with ``p_value`` and the members that take part.
    specs : list of StatSpec
    draws : numpy.ndarray, shape (set, stat, member, n)
        The copies the tests share (those of :func:`pvalue_step`).
    factor : dict, optional
        Per set, the rescaled tests of ``up_to_factor`` (:func:`factor_tests`).
    alpha_result : float
        The set's family-wise level.
    M : array_like of int, optional
        Points per set: a node whose rejection the tails withdraw passes no share on
        (:func:`_decide_with_tails`), and its ``invalid`` reads ``inconclusive``
        (:func:`_withdraw_on_tails`).
    untestable : tuple, optional
        ``(by_stat, by_question)`` of :func:`uqx.workflow.conditional.untestable_reasons`:
        what each set cannot test reads ``not tested`` with its reason
        (:func:`_mask_untestable`). "Consistent up to a factor" is asked only where the
        scale is ``invalid`` (:func:`_ask_up_to_factor`). Every verdict is final here.

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
        t = set_tests(res, specs, draws, i, factor=None if factor is None else factor.get(i))
        for j, s in enumerate(specs):  # every tested statistic not a node: a diagnostic
            if not STATISTICS[s.base].tested or question_of(s.family, s.cond) is None:
                continue
            if np.isfinite(res["p_value"].values[i, j]).any():
                verdict[i, j], reason[i, j] = "diagnostic", _diagnostic_reason(s)
            else:
                verdict[i, j], reason[i, j] = "inconclusive", NO_PVALUE
        on = t.present()
        if not on:
            continue
        d = _decide_with_tails(t, res, specs, i, alpha_result,
                               None if M is None else int(np.asarray(M)[i]))
        node_v = {}
        for k in on:
            u = t.use[k] & use_all[i] & np.isfinite(t.p[k])
            v, why = member_verdict(d.rejected[k], labels, use=u, firm=d.firm[k],
                                    reachable=bool(d.reachable[k]),
                                    unreachable=_unreachable(n, alpha_result))
            bl = _near(d.adjusted[k], np.full(D, alpha_result), n, u)
            node_v[k] = (v, why, bl, u)
            j = int(t.stat[k])
            if t.nodes[k] == "up_to_factor":
                fverdict[i, j], freason[i, j] = v, why
                fp[i, j], fadj[i, j] = t.p[k], d.adjusted[k]
            else:
                verdict[i, j], reason[i, j], near[i, j] = v, why, bl
                adj_all[i, j] = d.adjusted[k]
        for j in (factor or {}).get(i, {}):  # the other rescaled statistics: diagnostics
            if fverdict[i, j] == "not tested":
                fverdict[i, j] = "diagnostic"
                freason[i, j] = _diagnostic_reason(specs[j], rescaled=True)
                fp[i, j] = factor[i][j][0]
        for j, s in enumerate(specs):  # a diagnostic that rejects its own null
            if verdict[i, j] != "diagnostic":
                continue
            u = use_all[i] & np.isfinite(res["p_value"].values[i, j])
            pj = res["p_value"].values[i, j][u]
            if pj.size and np.all(pj <= alpha_result):
                reason[i, j] = _diagnostic_reason(s, rejects=float(np.max(pj)))
        for a, q in enumerate(QUESTIONS):
            ks = [k for k in on if NODES[k].question == q]
            if not ks:
                continue
            u = np.any([node_v[k][3] for k in ks], axis=0)
            if not u.any():
                continue
            qtests[i, a] = ", ".join(_node_label(specs, t, k) for k in ks)
            adj = d.adjusted[ks]
            qp[i, a] = np.where(np.isfinite(adj).any(axis=0), np.min(
                np.where(np.isfinite(adj), adj, np.inf), axis=0), np.nan)
            ql[i, a] = alpha_result
            ql0[i, a] = np.nansum(d.share[ks], axis=0)
            rej = np.any(d.rejected[ks], axis=0)
            firm = np.any(d.firm[ks], axis=0)
            qv[i, a], qr[i, a] = member_verdict(
                rej, labels, use=u, firm=firm, reachable=bool(np.all(d.reachable[ks])),
                unreachable=_unreachable(n, alpha_result))
            qb[i, a] = any(node_v[k][2] for k in ks)
    final = {"verdict": (verdict, reason), "factor_verdict": (fverdict, freason),
             "question_verdict": (qv, qr)}
    scale_stat = node_statistic(NODES[0], [(s.base, None) if s.family == "moment" else
                                           ("", None) for s in specs])
    for i in range(S):  # the masks, in this order: tails, untestable, the factor not asked
        _withdraw_on_tails(final, res, specs, i, None if M is None else int(np.asarray(M)[i]))
        if untestable is not None:
            _mask_untestable(final, i, untestable[0][i], untestable[1][i])
        _ask_up_to_factor(final, i, scale_stat)
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

#: The null each diagnostic tests (its own; it decides no question).
DIAGNOSTIC_NULLS = {
    "zve": "Var(Z | uE) = 1 in every bin: a bias also breaks it",
    "var_z": "Var(Z) = 1: a bias does not move it, a scale does",
    "rce": "RMV = RMSE: weighted by u^2, dominated by the largest uE",
    "nll": "the mean negative log-likelihood of normal errors",
    "mean_z": "<Z> = 0",
    "zms": "<Z^2> = 1",
}


def _diagnostic_reason(spec, rescaled=False, rejects=None) -> str:
    """Why a statistic is a diagnostic: the null it tests, and that it decides nothing.

    ``rejects``: the largest unadjusted p-value over the members, where every member
    that takes part rejects the diagnostic's own null at the set's level.
    """
    null = DIAGNOSTIC_NULLS.get(spec.base)
    if null is None:
        var = {"uE": "uE", "X": "X", "V": "V"}.get(spec.cond, "uE")
        null = f"E[Z^2 | {var}] = 1 in every bin"
    what = "of uE rescaled by its factor; " if rescaled else ""
    if rejects is not None:
        return (f"diagnostic {what}that rejects its own null ({null}; unadjusted p <= "
                f"{rejects:.3g} under every member): it does not decide its question, which "
                "its node's statistic tests")
    return (f"diagnostic {what}(its own null: {null}; unadjusted p): it does not decide "
            "its question")


def _unreachable(n, level) -> str:
    """Why a node whose copies cannot reject it gives no ``valid``."""
    return (f"{int(n)} calibrated copies cannot reject this test at the set's level "
            f"{float(level):.3g} even at their smallest p-value ({1 / (1 + n):.3g} on one "
            f"side, {2 / (1 + n):.3g} on two): no verdict; increase --n-mc")


def _node_label(specs, t, k) -> str:
    name = specs[int(t.stat[k])].name.upper()
    if t.nodes[k] == "bias":
        return "T_Z"
    return f"{name} of E/sqrt(ZMS)" if t.nodes[k] == "up_to_factor" else name


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
U2_WEIGHTED = ("rce", "uce", "uce_w")


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


def _withdraw_on_tails(out, res, specs, i, M) -> None:
    """Withdraw set ``i``'s ``invalid`` on tails beyond the null family: ``inconclusive``.

    Each statistic's ``invalid`` (and each rescaled statistic's) is checked against the
    tails of ε (:func:`_stat_tails_reason`: beyond the safety limit of 001 Table II on
    κ_CS of Z², or a sample too small to show its tails lighter than t_s(3)'s), but those
    of :data:`TAILS_ROBUST`. A question stays ``invalid`` where one of its statistics
    still is (⟨Z⟩'s bias, say) or where none of its statistics had its ``invalid``
    withdrawn by the tails; else it becomes ``inconclusive`` with the same reason, so that
    no statistic is ``invalid`` beside a question that is not.

    Parameters
    ----------
    out : dict
        ``{"verdict" | "factor_verdict" | "question_verdict": (verdicts, reasons)}``,
        object arrays over (set, stat) or (set, question), changed in place.
    res : xarray.Dataset
        The result, with ``kappa_cs_z2_local`` and the tailedness metrics over ``set``.
    specs : list of StatSpec
    i : int
        The set.
    M : int or None
        Its points.
    """
    withdrawn = {}
    for v in ("verdict", "factor_verdict"):
        ver, rea = out[v]
        for j, s in enumerate(specs):
            if ver[i, j] != "invalid":
                continue
            why = _stat_tails_reason(s.base, res, i, M,
                                     on_ue=s.cond == "uE" and s.family != "moment")
            if why:
                ver[i, j], rea[i, j] = "inconclusive", why
                q = "up_to_factor" if v == "factor_verdict" else question_of(s.family, s.cond)
                withdrawn.setdefault(q, why)
    ver, rea = out["question_verdict"]
    for a, q in enumerate(QUESTIONS):
        if ver[i, a] == "invalid" and q in withdrawn and \
                not _question_stats_invalid(out, i, q, specs):
            ver[i, a], rea[i, a] = "inconclusive", withdrawn[q]


def _mask_untestable(out, i, by_stat, by_question) -> None:
    """``not tested``, with the reason, what set ``i`` cannot test (in place).

    ``by_stat`` (stat,) and ``by_question`` ``{question: reason}``: set ``i``'s part of
    :func:`uqx.workflow.conditional.untestable_reasons` (a constant uE or feature, a single
    bin, a feature without its statistics).
    """
    ver, rea = out["verdict"]
    hit = np.asarray(by_stat) != ""
    ver[i, hit], rea[i, hit] = "not tested", np.asarray(by_stat, dtype=object)[hit]
    qv, qr = out["question_verdict"]
    for name, why in by_question.items():
        a = QUESTIONS.index(name)
        qv[i, a], qr[i, a] = "not tested", why


#: Why "consistent up to a factor" is not asked where the scale is not invalid.
NOT_ASKED = ("asked only where the scale of uE is invalid (then the question is whether "
             "one factor fixes uE)")


def _ask_up_to_factor(out, i, scale_stat) -> None:
    """"Consistent up to a factor" only where the scale node's statistic is ``invalid``.

    The node ``up_to_factor`` receives its share of the level from a rejected scale
    (:func:`uqx.engine.questions.node_graph`); where the statistic of the scale node
    (ZMS, or RCE without it; ``scale_stat`` its index, None without either) is not
    ``invalid`` over the members (or became ``inconclusive`` on the tails), the question
    and its statistics are ``not tested`` with :data:`NOT_ASKED` (in place).
    """
    if scale_stat is not None and out["verdict"][0][i, scale_stat] == "invalid":
        return
    qv, qr = out["question_verdict"]
    f = QUESTIONS.index("up_to_factor")
    qv[i, f], qr[i, f] = "not tested", NOT_ASKED
    fv, fr = out["factor_verdict"]
    rows = fv[i] != "not tested"
    fv[i, rows], fr[i, rows] = "not tested", NOT_ASKED


def _question_stats_invalid(out, i, q, specs) -> bool:
    """Whether a statistic of question ``q`` of set ``i`` is still ``invalid``."""
    if q == "up_to_factor":
        ver = out.get("factor_verdict", (None,))[0]
        return ver is not None and bool(np.any(ver[i] == "invalid"))
    ver = out["verdict"][0]
    return any(question_of(s.family, s.cond) == q and ver[i, j] == "invalid"
               for j, s in enumerate(specs))
