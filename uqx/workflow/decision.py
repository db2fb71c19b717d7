"""Decision steps of the workflow: the p-values, then every verdict of each set, once.

:func:`pvalue_step`: each tested statistic's Monte-Carlo p-value under each member (the
papers' ζ decision, :func:`uqx.engine.verdict.papers_verdict`, kept beside it).
:func:`question_step`: each set's node tests (:func:`set_tests`) decided once by one
graph (:func:`uqx.engine.questions.decide_set`), each verdict written once. The rule in
words: docs/verdicts.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import xarray as xr

from uqx.dataio.schema import VALIDATE
from uqx.engine.mctest import (
    LIGHT_SIDE,
    borderline,
    copy_pvalues,
    mc_pvalue,
    mc_pvalue_sides,
    smallest_pvalue,
)
from uqx.engine.questions import (
    NODES,
    QUESTION_SHARE,
    QUESTIONS,
    decide_set,
    member_verdict,
    node_statistic,
    question_of,
)
from uqx.engine.statistic import STATISTICS
from uqx.engine.verdict import ZETA_INPUTS, interval_problem, papers_verdict

__all__ = ["pvalue_step", "question_step", "NodeTests", "set_tests", "NOT_ASKED"]


def pvalue_step(cells, specs, notes, draws, shape, *, observed, joint=None,
                untestable=None) -> xr.Dataset:
    """Give each tested statistic's Monte-Carlo p-value under every member.

    The p-value of ``observed`` (set, stat: the estimate, or ⟨Z⟩ studentised) among the
    copies ``draws`` (set, stat, member, n) (:func:`uqx.engine.mctest.mc_pvalue`, on the
    statistic's side; the fitted member of :data:`uqx.engine.mctest.LIGHT_SIDE` reads the
    other side on ``joint``, its copies at ν̂: docs/verdicts.md). Writes ``p_value`` (set,
    stat, member; NaN where ``untestable``, (set, stat) bool, keeps a statistic out of
    the questions' tests), ``test_statistic``, the papers' ``zeta_verdict`` and
    ``zeta_borderline``, and the widest central 95 % of each binned statistic's copies
    over the members of ``shape`` (:class:`~uqx.workflow.products.ErrorShape`) that take
    part (``null_band_*``); ``notes`` collects the warnings. ``cells``: the bootstrap's
    and the references' variables of :data:`uqx.engine.verdict.ZETA_INPUTS` (set, stat),
    with the references' ``dist``.
    """
    member_labels = list(shape.labels)
    S, K = cells.sizes["set"], len(specs)
    papers = np.full((S, K), "not tested", dtype=object)
    zeta_bl = np.zeros((S, K), dtype=bool)
    pv, band = np.full((S, K, len(member_labels)), np.nan), np.full((S, K, 2), np.nan)
    labels = [str(d) for d in cells["dist"].values]
    members = shape.members()
    inputs = {k: cells[k].values for k in ZETA_INPUTS}
    light = member_labels.index("fit") if joint is not None and "fit" in member_labels \
        else None
    for i in range(S):
        for j, s in enumerate(specs):
            if not STATISTICS[s.base].tested:
                continue
            cell = {k: v[i, j] for k, v in inputs.items()}
            papers[i, j], zeta_bl[i, j] = papers_verdict(cell, labels)
            problem = interval_problem(cell["estimate"], cell["ci_low"], cell["ci_high"])
            if problem:
                notes.stat(i, j, problem + " (ζ-scores only; the verdict does not use it)")
            pv[i, j] = mc_pvalue(observed[i, j], draws[i, j], STATISTICS[s.base].direction)
            if light is not None and s.base in LIGHT_SIDE:
                # fitted member: the heavy end of nu on the light side, nu_hat on the other
                heavy, point = draws[i, j, light], joint[i, j, light]
                up, down = (heavy, point) if LIGHT_SIDE[s.base] > 0 else (point, heavy)
                pv[i, j, light] = mc_pvalue_sides(observed[i, j], up, down)
            if s.family == "binned" and not s.vector:  # the central 95 % of its copies
                q = [np.quantile(c[np.isfinite(c)], [0.025, 0.975])
                     for c in draws[i, j, members[i]] if np.isfinite(c).sum() >= 2]
                if q:
                    band[i, j] = np.min(q, axis=0)[0], np.max(q, axis=0)[1]
    if untestable is not None:
        pv[np.asarray(untestable, dtype=bool)] = np.nan
    return xr.Dataset(VALIDATE.data_vars({
        "p_value": pv, "test_statistic": np.asarray(observed, dtype=np.float64),
        "null_band_low": band[..., 0], "null_band_high": band[..., 1],
        "zeta_verdict": papers.astype(str), "zeta_borderline": zeta_bl,
    }), coords={"member": list(member_labels)})


@dataclass(frozen=True)
class NodeTests:
    """The node tests of one set, over the nodes of :data:`uqx.engine.questions.NODES`.

    ``stat`` (node,): the index of the statistic that tests each node (the rescaled one
    for ``up_to_factor``), -1 where absent; ``p`` (node, member): its p-values (NaN:
    absent or member not taking part); ``copies`` (node, member, n): its p-values on the
    shared copies; ``use`` (node, member): the members taking part; ``min_p`` (node,):
    the smallest p-value its copies can give.
    """

    stat: np.ndarray
    p: np.ndarray
    copies: np.ndarray
    use: np.ndarray
    min_p: np.ndarray

    def present(self) -> list:
        """Return the indices of the nodes with a statistic."""
        return np.flatnonzero(self.stat >= 0).tolist()


def set_tests(p_value, shape, specs, draws, i, *, factor=None) -> NodeTests:
    """Gather the node tests of set ``i``: each node's statistic, p-values and copies.

    Each node reads the first of its statistics that the result has with a finite
    p-value (:func:`uqx.engine.questions.node_statistic`); CC only under the members
    whose body fits the data's (``shape``, :meth:`~uqx.workflow.products.ErrorShape.members`).
    ``p_value`` (set, stat, member): the tests' p-values. ``factor``: the binned
    statistics on uE rescaled by the set's factor, ``{j: (p (member,), copies (member,
    n))}`` (:func:`uqx.workflow.recalibration.factor_tests`), test ``up_to_factor``.
    """
    D, n = draws.shape[2], draws.shape[-1]
    members = shape.members()[i]
    ranks = shape.members(rank=True)[i]
    pv = p_value[i]
    factor = factor or {}
    Q = len(NODES)
    stat = np.full(Q, -1, dtype=np.int64)
    p, cp = np.full((Q, D), np.nan), np.full((Q, D, n), np.nan)
    use, min_p = np.zeros((Q, D), dtype=bool), np.full(Q, np.nan)
    asked = [(s.base, s.cond if s.family == "binned" else None)
             if STATISTICS[s.base].tested and np.isfinite(pv[j]).any() else ("", None)
             for j, s in enumerate(specs)]
    rescaled = [(s.base, "uE") if j in factor else ("", None) for j, s in enumerate(specs)]
    for k, node in enumerate(NODES):
        scaled = node.name == "up_to_factor"
        j = node_statistic(node, rescaled if scaled else asked)
        if j is None:
            continue
        d = STATISTICS[specs[j].base].direction
        if scaled:
            p[k], c = factor[j]
            cp[k, :, :c.shape[1]] = c[:, :n]
        else:
            p[k] = pv[j]
            cp[k] = copy_pvalues(draws[i, j], d)
        stat[k] = j
        use[k] = ranks if specs[j].family == "rank" else members
        min_p[k] = smallest_pvalue(max(int(np.max(np.sum(np.isfinite(cp[k]), axis=-1))), 1), d)
    p[~use] = np.nan
    return NodeTests(stat, p, cp, use, min_p)


#: The variables :func:`question_step` writes: their dimensions after ``set``, their fill.
_OUTPUT = {
    "verdict": ("stat", "not tested"), "verdict_reason": ("stat", ""),
    "borderline": ("stat", False), "p_adjusted": ("stat member", np.nan),
    "valid": ("stat", np.nan), "question_verdict": ("question", "not tested"),
    "question_reason": ("question", ""), "question_p_value": ("question member", np.nan),
    "question_level": ("question member", np.nan),
    "question_level_initial": ("question member", np.nan),
    "question_borderline": ("question", False), "question_tests": ("question", ""),
    "factor_verdict": ("stat", "not tested"), "factor_verdict_reason": ("stat", ""),
    "factor_p_value": ("stat member", np.nan), "factor_p_adjusted": ("stat member", np.nan),
}


def _put(out, var, where, verdict, reason) -> None:
    """Write a verdict at ``where`` of ``out[var]``, and its reason beside it."""
    out[var][where] = verdict
    out["question_reason" if var == "question_verdict" else var + "_reason"][where] = reason


def question_step(p_value, shape, specs, draws, *, factor, alpha_result, M, untestable):
    """Decide every verdict of each set once: one graph of node tests, the masks before.

    Per set, :func:`set_tests` decided by :func:`uqx.engine.questions.decide_set` at
    ``alpha_result`` (a rejection on tails beyond the null family, of
    :meth:`~uqx.workflow.products.ErrorShape.tails_reason` with ``M`` points per set, held), then
    :func:`uqx.engine.questions.member_verdict` over the members; the other tested
    statistics are diagnostics. Each verdict is written once, its masks applied first: an
    ``invalid`` on such tails reads ``inconclusive``, what the set cannot test
    (``untestable``: :func:`uqx.workflow.conditional.untestable_reasons`) ``not tested``,
    and "up to a factor" (``factor``: :func:`uqx.workflow.recalibration.factor_tests`) is
    asked only where the scale is ``invalid`` (docs/verdicts.md). Returns the variables of
    :data:`_OUTPUT` and ``{set: (NodeTests, SetDecision or None)}``: the decisions, whose
    thresholds the resolutions read (:func:`uqx.workflow.resolutions.resolution_step`).
    ``p_value`` (set, stat, member): the tests' p-values (:func:`pvalue_step`); ``shape``:
    the members taking part and the tails (:class:`~uqx.workflow.products.ErrorShape`).
    """
    S, K = p_value.shape[0], len(specs)
    labels = list(shape.labels)
    sizes = {"stat": K, "question": len(QUESTIONS), "member": len(labels)}
    out = {name: np.full((S, *(sizes[d] for d in dims.split())), fill,
                         dtype=object if isinstance(fill, str) else type(fill))
           for name, (dims, fill) in _OUTPUT.items()}
    by_stat, by_question = untestable
    members = shape.members()
    n = draws.shape[-1]
    unreachable = (f"{n} calibrated copies cannot reject this test (its question at "
                   f"{float(alpha_result) * QUESTION_SHARE:.3g} by itself, within the set's "
                   f"level {float(alpha_result):.3g}) even at their smallest p-value "
                   f"({1 / (1 + n):.3g} on one side, {2 / (1 + n):.3g} on two): no "
                   "verdict; increase --n-mc")
    scale_stat = node_statistic(NODES[0], [(s.base if s.family == "moment" else "", None)
                                           for s in specs])
    decided = {}
    for i in range(S):
        tails = [shape.tails_reason(s, i, int(M[i])) for s in specs]
        t = set_tests(p_value, shape, specs, draws, i, factor=factor.get(i))
        on = t.present()
        held = [j >= 0 and bool(tails[j]) for j in t.stat]
        d = decide_set(t.p, t.copies, t.use, t.min_p, alpha_result, held) if on else None
        decided[i] = (t, d)
        used, near, node = {}, {}, {}  # node: its verdict, its reason, the tails' reason
        for k in on:
            used[k] = t.use[k] & members[i] & np.isfinite(t.p[k])
            near[k] = borderline(d.adjusted[k], n, alpha_result,
                                 use=used[k] & (d.adjusted[k] > 1.0 / (1 + n)))
            v, why = member_verdict(d.rejected[k], labels, use=used[k], firm=d.firm[k],
                                    reachable=bool(d.reachable[k]), unreachable=unreachable)
            withdrawn = tails[t.stat[k]] if v == "invalid" else ""
            if withdrawn:  # an invalid on tails beyond the null family
                v, why = "inconclusive", withdrawn
            node[k] = (v, why, withdrawn)
        by_node = {int(t.stat[k]): k for k in on if NODES[k].name != "up_to_factor"}
        by_factor = {int(t.stat[k]): k for k in on if NODES[k].name == "up_to_factor"}
        for j, s in enumerate(specs):  # each statistic: its node's verdict, or a diagnostic
            pj = p_value[i, j]
            if by_stat[i][j]:
                _put(out, "verdict", (i, j), "not tested", by_stat[i][j])
            elif j in by_node:
                k = by_node[j]
                _put(out, "verdict", (i, j), *node[k][:2])
                out["borderline"][i, j], out["p_adjusted"][i, j] = near[k], d.adjusted[k]
            elif not STATISTICS[s.base].tested or question_of(s.family, s.cond) is None:
                continue
            elif not np.isfinite(pj).any():
                _put(out, "verdict", (i, j), "inconclusive", NO_PVALUE)
            else:
                pj = pj[members[i] & np.isfinite(pj)]
                rejects = on and pj.size and np.all(pj <= alpha_result)
                _put(out, "verdict", (i, j), "diagnostic",
                     _diagnostic_reason(s, rejects=float(np.max(pj)) if rejects else None))
        asked = scale_stat is not None and out["verdict"][i, scale_stat] == "invalid"
        for j, (pj, _) in factor.get(i, {}).items() if on else ():  # the rescaled statistics
            if j in by_factor:
                k = by_factor[j]
                v, why = node[k][:2]
                out["factor_p_value"][i, j] = t.p[k]
                out["factor_p_adjusted"][i, j] = d.adjusted[k]
            else:
                v, why = "diagnostic", _diagnostic_reason(specs[j], rescaled=True)
                out["factor_p_value"][i, j] = pj
            if not asked:
                v, why = "not tested", NOT_ASKED
            _put(out, "factor_verdict", (i, j), v, why)
        for a, q in enumerate(QUESTIONS):
            ks = [k for k in on if NODES[k].question == q]
            u = np.any([used[k] for k in ks], axis=0) if ks else False
            v, why = "not tested", ""
            if np.any(u):
                v, why = member_verdict(
                    np.any(d.rejected[ks], axis=0), labels, use=u,
                    firm=np.any(d.firm[ks], axis=0), reachable=bool(np.all(d.reachable[ks])),
                    unreachable=unreachable)
                withdrawn = [node[k][2] for k in sorted(ks, key=lambda k: t.stat[k])
                             if node[k][2]]
                if v == "invalid" and withdrawn and all(node[k][0] != "invalid" for k in ks):
                    v, why = "inconclusive", withdrawn[0]
                names = [specs[t.stat[k]].name.upper() for k in ks]
                out["question_tests"][i, a] = ", ".join(
                    {"bias": "T_Z", "up_to_factor": f"{x} of E/sqrt(ZMS)"}.get(NODES[k].name, x)
                    for k, x in zip(ks, names, strict=True))
                out["question_p_value"][i, a] = np.fmin.reduce(d.adjusted[ks], axis=0)
                out["question_level"][i, a] = alpha_result
                out["question_level_initial"][i, a] = np.nansum(d.share[ks], axis=0)
                out["question_borderline"][i, a] = any(near[k] for k in ks)
            if q in by_question[i]:
                v, why = "not tested", by_question[i][q]
            if q == "up_to_factor" and not asked:
                v, why = "not tested", NOT_ASKED
            _put(out, "question_verdict", (i, a), v, why)
    v = out["verdict"]
    out["valid"][:] = np.where(v == "valid", 1.0, np.where(v == "invalid", 0.0, np.nan))
    ds = xr.Dataset(VALIDATE.data_vars({k: a.astype(str) if a.dtype == object else a
                                        for k, a in out.items()}),
                    coords={"question": list(QUESTIONS), "member": labels})
    ds.attrs["alpha_result"] = float(alpha_result)
    return ds, decided


#: Why a statistic without a finite p-value has no verdict.
NO_PVALUE = ("a Monte-Carlo p-value is not finite (the statistic is undefined on the data or "
             "on every copy): no verdict")

#: The null each diagnostic tests (its own; it decides no question); binned: E[Z^2 | .].
DIAGNOSTIC_NULLS = {
    "zve": "Var(Z | uE) = 1 in every bin: a bias also breaks it",
    "var_z": "Var(Z) = 1: a bias does not move it, a scale does",
    "rce": "RMV = RMSE: weighted by u^2, dominated by the largest uE",
    "nll": "the mean negative log-likelihood of normal errors",
    "mean_z": "<Z> = 0",
    "zms": "<Z^2> = 1",
}


def _diagnostic_reason(spec, rescaled=False, rejects=None) -> str:
    """Why a statistic is a diagnostic (``rejects``: its largest p, where all members reject)."""
    var = spec.cond if spec.cond in ("X", "V") else "uE"
    null = DIAGNOSTIC_NULLS.get(spec.base, f"E[Z^2 | {var}] = 1 in every bin")
    what = "of uE rescaled by its factor; " if rescaled else ""
    if rejects is not None:
        return (f"diagnostic {what}that rejects its own null ({null}; unadjusted p <= "
                f"{rejects:.3g} under every member): it does not decide its question, which "
                "its node's statistic tests")
    return (f"diagnostic {what}(its own null: {null}; unadjusted p): it does not decide "
            "its question")


#: Why "consistent up to a factor" is not asked where the scale is not invalid.
NOT_ASKED = ("asked only where the scale of uE is invalid (then the question is whether "
             "one factor fixes uE)")
