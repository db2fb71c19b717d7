r"""The decision design: one declared null per node, one graph of nodes for the set.

Each question is one or two nodes (:data:`NODES`), each a null tested by one prespecified
statistic; the nodes share the set's level α in one graph (:func:`node_graph`; Bretz et
al. 2009) decided by closed weighted min-p on the shared copies (:func:`closed_minp`;
Bretz, Maurer & Hommel 2011), one set at a time (:func:`decide_set`). The rule in words:
docs/verdicts.md. Pure NumPy.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import lru_cache
from itertools import combinations

import numpy as np

from uqx.engine.defaults import ALPHA_RESULT  # noqa: F401  (the default level)
from uqx.engine.mctest import pvalue_noise

__all__ = ["ALPHA_RESULT", "QUESTIONS", "NODES", "NODE_WEIGHTS", "Node", "question_of",
           "node_statistic", "node_graph", "intersection_weights", "closed_minp",
           "critical_value", "firm_level", "member_verdict", "SetDecision", "decide_set",
           "QUESTION_SHARE", "question_pvalue"]

#: The questions, in the order of the result's tables.
QUESTIONS = ("average", "consistency", "adaptivity_X", "adaptivity_V", "ranking",
             "up_to_factor")


@dataclass(frozen=True)
class Node:
    """One null hypothesis of the graph, tested by one statistic.

    ``statistics``: the statistic that tests it, then its fallbacks (base names, the
    first asked is used); ``cond``: the variable a binned statistic is binned on.
    """

    name: str
    question: str
    statistics: tuple
    cond: str | None = None


#: The binned statistic of a conditional null, then its fallbacks.
_BINNED = ("zms_scan", "zmse_max", "zmse", "ence", "uce")

#: The nodes of a set's graph (:func:`node_graph`).
NODES = (
    Node("scale", "average", ("zms", "rce")),
    Node("bias", "average", ("mean_z",)),
    Node("consistency", "consistency", _BINNED, "uE"),
    Node("adaptivity_X", "adaptivity_X", _BINNED, "X"),
    Node("adaptivity_V", "adaptivity_V", _BINNED, "V"),
    Node("ranking", "ranking", ("cc",)),
    Node("up_to_factor", "up_to_factor", _BINNED, "uE"),
)

#: The most of the set's level α that one question may use on its own (α/2: 5 % at the
#: default α = 10 %). A question's nodes are rejected only where the closed test rejects
#: them *and* the question's own test (its one statistic, or the min-p of the scale and
#: the bias) rejects at this share of α: every printed question verdict is then a test at
#: ``QUESTION_SHARE * α`` by itself, whatever the other questions did (:func:`decide_set`).
QUESTION_SHARE = 0.5

#: Initial shares of the set's level, prespecified (split and passed on: :func:`node_graph`).
NODE_WEIGHTS = {"scale": 0.2125, "bias": 0.2125, "consistency": 0.425,
                "adaptivity": 0.10, "ranking": 0.05, "up_to_factor": 0.0}


def question_of(family: str, cond: str | None) -> str | None:
    """Question a statistic's null belongs to, from its family and conditioning variable."""
    if family == "binned":
        return {"uE": "consistency", "X": "adaptivity_X", "V": "adaptivity_V"}.get(cond)
    return {"moment": "average", "rank": "ranking"}.get(family)


def node_statistic(node: Node, asked) -> int | None:
    """Index in ``asked`` of the statistic that tests ``node`` (None when none is asked).

    ``asked``: the result's statistics as (base name, conditioning variable or None).
    """
    pairs = [(str(b), c) for b, c in asked]
    return next((pairs.index((s, node.cond)) for s in node.statistics
                 if (s, node.cond) in pairs), None)


def node_graph(names):
    r"""Return the initial weights (Q,) and transitions (Q, Q) of the nodes present.

    A node starts with its share of :data:`NODE_WEIGHTS` (adaptivity's split among the
    features present; an absent node's share is not given to the others). A rejected
    node passes its weight on: the scale half of it to ``up_to_factor`` (asked only
    then); the scale and the bias the rest to each other (a pure bias leaves consistency
    at its own share: its null is true there); ``up_to_factor`` all of it to
    consistency; the other nodes to the others in proportion to their initial weights.

    Examples
    --------
    >>> w, G = node_graph(["scale", "bias", "consistency", "adaptivity_X"])
    >>> w.round(4).tolist()
    [0.2125, 0.2125, 0.425, 0.1]
    """
    q = list(names)
    n_adapt = sum(k.startswith("adaptivity") for k in q)
    w = np.array([NODE_WEIGHTS["adaptivity"] / n_adapt if k.startswith("adaptivity")
                  else NODE_WEIGHTS[k] for k in q], dtype=np.float64)
    G = np.zeros((len(q), len(q)))
    for a, name in enumerate(q):
        if name == "up_to_factor":
            if "consistency" in q:
                G[a, q.index("consistency")] = 1.0
            continue
        mate = {"scale": "bias", "bias": "scale"}.get(name)
        to = [q.index(mate)] if mate in q else [b for b in range(len(q))
                                                 if b != a and w[b] > 0]
        rest = 1.0
        if name == "scale" and "up_to_factor" in q:  # half, or all with no other node
            G[a, q.index("up_to_factor")] = 0.5 if to else 1.0
            rest = 0.5
        G[a, to] = rest * w[to] / sum(w[b] for b in to)
    return w, G


def _remove(weights, transitions, keep):
    r"""Return the graph once the nodes outside ``keep`` are removed (Bretz et al. 2009, Alg. 1).

    Each node j removed in turn passes its weight on, :math:`w_k \leftarrow w_k + w_j
    G_{jk}`, and :math:`G_{kl} \leftarrow (G_{kl} + G_{kj} G_{jl}) / (1 - G_{kj} G_{jk})`;
    the result does not depend on the order of removal.
    """
    w = np.array(weights, dtype=np.float64)
    G = np.array(transitions, dtype=np.float64)
    alive = np.ones(w.size, dtype=bool)
    for j in np.flatnonzero(~np.asarray(keep, dtype=bool)):
        alive[j] = False
        w[alive] += w[j] * G[j, alive]
        w[j] = 0.0
        den = (1.0 - G[:, j] * G[j, :])[:, None]
        edge = np.outer(alive & (den[:, 0] > 0), alive) & ~np.eye(w.size, dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            G = np.where(edge, (G + np.outer(G[:, j], G[j, :])) / den, 0.0)
    return w, G


def intersection_weights(weights, transitions, keep) -> np.ndarray:
    """Weights (Q,) the graph gives the nodes of the intersection ``keep`` (:func:`_remove`)."""
    return _remove(weights, transitions, keep)[0]


@lru_cache(maxsize=512)
def _intersections(w_bytes, G_bytes, present_bytes):
    """Every intersection of the nodes present: (its nodes, those of positive weight, weights).

    The absent nodes (no hypotheses of this set) are removed from the graph first.
    """
    w = np.frombuffer(w_bytes, dtype=np.float64)
    present = np.frombuffer(present_bytes, dtype=bool)
    w0, G0 = _remove(w, np.frombuffer(G_bytes, dtype=np.float64).reshape(w.size, -1),
                     present)
    nodes = np.flatnonzero(present).tolist()
    out = []
    for r in range(1, len(nodes) + 1):
        for J in combinations(nodes, r):
            wJ = intersection_weights(w0, G0, np.isin(np.arange(w.size), J))
            use = np.array([j for j in J if wJ[j] > 0], dtype=np.int64)
            out.append((np.array(J, dtype=np.int64), use, wJ[use]))
    return tuple(out)


def _copy_minima(p_copies, weights) -> np.ndarray:
    r"""Return the weighted minimum :math:`\min_j p^*_{jk}/w_j` of each copy k (finite ones)."""
    s = p_copies / weights[:, None]
    return s[:, np.all(np.isfinite(s), axis=0)].min(axis=0)


def closed_minp(p_observed, p_copies, weights, transitions) -> np.ndarray:
    r"""Return the adjusted p-values of the nodes: closed testing of weighted min-p intersections.

    For every intersection J of the nodes with a finite p-value, with the weights
    :math:`w_J` (:func:`intersection_weights`; nodes of zero weight left out, and
    :math:`p_J = 1` when all are) and over the n shared copies,

    .. math:: p_J = \frac{1 + \#\{k : \min_{j \in J} p^*_{jk}/w_{J,j} \le
              \min_{j \in J} p_j / w_{J,j}\}}{1 + n}, \qquad
              \tilde p_i = \max_{J \ni i} p_J

    (strong family-wise control: Marcus, Peritz & Gabriel 1976). ``p_observed`` (Q,):
    each node's p-value (NaN: absent, adjusted NaN); ``p_copies`` (Q, n): on each shared
    copy (:func:`uqx.engine.mctest.copy_pvalues`); the graph of :func:`node_graph`.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> w, G = np.array([0.5, 0.5]), np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> adj = closed_minp([0.001, 0.5], rng.uniform(size=(2, 999)), w, G)
    >>> bool(adj[0] < 0.01), bool(adj[1] > 0.4)
    (True, True)
    """
    p = np.asarray(p_observed, dtype=np.float64)
    pc = np.asarray(p_copies, dtype=np.float64).reshape(p.size, -1)
    return _ClosedTest(pc, weights, transitions, np.isfinite(p)).adjusted(p)


class _ClosedTest:
    r""":func:`closed_minp` on one set of copies: each intersection's copy minima sorted once.

    The copies' weighted minima do not depend on the observed p-values, so the many
    closed tests of one member (the decision, then each node's reach at its smallest
    p-value) count with a binary search: :math:`\#\{k : m_k \le x\}`, the same integer.
    """

    def __init__(self, pc, weights, transitions, present):
        w0 = np.ascontiguousarray(weights, dtype=np.float64)
        G0 = np.ascontiguousarray(transitions, dtype=np.float64)
        self.present = np.asarray(present, dtype=bool)
        self.tables = [(J, use, v, np.sort(_copy_minima(pc[use], v)) if use.size
                        else np.empty(0))
                       for J, use, v in _intersections(w0.tobytes(), G0.tobytes(),
                                                       self.present.tobytes())]

    def adjusted(self, p) -> np.ndarray:
        """Return the adjusted p-values (Q,) of ``p`` (finite where the nodes are present)."""
        adj = np.where(self.present, 0.0, np.nan)
        for J, use, v, m in self.tables:
            # no node of positive weight, or no finite copy: the intersection is not rejected
            pJ = ((1 + np.searchsorted(m, np.min(p[use] / v), side="right")) / (1 + m.size)
                  if m.size else 1.0)
            adj[J] = np.maximum(adj[J], float(pJ))
        return adj


def question_pvalue(p_observed, p_copies) -> float:
    r"""Return a question's own Monte-Carlo p-value: the min-p of its nodes on the copies.

    One node: its p-value. Several (the scale and the bias): :math:`(1 + \#\{k :
    \min_j p^*_{jk} \le \min_j p_j\}) / (1 + n)` over the n copies where every node is
    finite, the same equal-weight min-p as :func:`closed_minp`. ``p_observed`` (T,),
    ``p_copies`` (T, n); NaN without a finite p-value.
    """
    p = np.asarray(p_observed, dtype=np.float64)
    if p.size == 1:
        return float(p[0])
    m = _copy_minima(np.asarray(p_copies, dtype=np.float64).reshape(p.size, -1),
                     np.ones(p.size))
    if not m.size or not np.isfinite(p).all():
        return np.nan
    return float((1 + np.sum(m <= np.min(p))) / (1 + m.size))


def critical_value(p_copies, weights, level: float) -> float:
    r"""Return the value c under which a weighted min-p rejects: :math:`\min_t p_t/w_t < c`.

    The K-th smallest weighted minimum of the copies, :math:`K = \lceil
    \mathrm{level}\,(1 + n) - 1\rceil` (ties aside): 0 when the copies cannot reach
    ``level``, NaN without finite copies. A node t of the intersection is rejected there
    when :math:`p_t < w_t\,c`: the threshold at which its resolution is read.
    ``p_copies`` (T, n): the tests' p-values on the shared copies, ``weights`` (T,).
    """
    w = np.asarray(weights, dtype=np.float64)
    m = np.sort(_copy_minima(np.asarray(p_copies, dtype=np.float64).reshape(w.size, -1), w))
    return _kth_minimum(m, level)


def _kth_minimum(m, level: float) -> float:
    """:func:`critical_value` from the sorted weighted minima ``m`` of the copies."""
    if not m.size:
        return np.nan
    K = int(np.ceil(level * (1 + m.size) - 1 - 1e-12))
    return float(m[K - 1]) if K >= 1 else 0.0


def firm_level(level, n):
    r"""Level below which a p-value is a rejection beyond its Monte-Carlo noise.

    :math:`\max(L - 2\sqrt{L(1-L)/n},\ L/2)`: a p-value between it and the level L
    rejects but does not withhold a ``valid`` (``borderline``); resolutions are read at it.
    """
    level = float(level)
    return max(level - 2.0 * float(pvalue_noise(level, n, level)), level / 2.0)


def member_verdict(rejected, labels, *, use=None, firm=None, reachable=True,
                   unreachable: str = "") -> tuple[str, str]:
    """Return (verdict, reason) of one test over the members that take part (``use``: all).

    ``invalid`` when every member rejects (``rejected``, bool per member), ``valid`` when
    none rejects beyond the Monte-Carlo noise (``firm``; default: any rejection), else
    ``inconclusive`` naming the members (``labels``) on each side. Without ``reachable``
    (the copies cannot reach the level) no ``valid``: ``inconclusive``, ``unreachable``.
    """
    r = np.asarray(rejected, dtype=bool)
    f = r if firm is None else np.asarray(firm, dtype=bool) & r
    labels = np.asarray(labels, dtype=str)
    if use is not None:
        use = np.asarray(use, dtype=bool)
        r, f, labels = r[use], f[use], labels[use]
    if r.size == 0:
        return "inconclusive", "no member of the null family takes part"
    if r.all():  # a rejection needs no reach: the procedure controls its rate
        return "invalid", ""
    if not reachable:
        return "inconclusive", unreachable or (
            "the copies cannot reach the level of this test: no verdict")
    if not f.any():
        return "valid", ""
    rej, acc = ", ".join(labels[r]), ", ".join(labels[~r])
    return "inconclusive", (f"rejected under {rej}, but not under {acc}: the conclusion "
                            "depends on the generative distribution of the errors")


@dataclass(frozen=True)
class SetDecision:
    """The decision of one set's nodes (present or not) under each member (:func:`decide_set`).

    Arrays over (node, member): ``adjusted`` the adjusted p-values, the larger of the
    closed test's and the node's question's own p-value over :data:`QUESTION_SHARE` (NaN:
    node absent or member not taking part); ``rejected`` at α, ``firm`` beyond the
    Monte-Carlo noise (below :func:`firm_level`); ``share`` the node's share of α and
    ``threshold`` the p-value under which its own test firmly rejects, both where its
    weight is smallest (docs/verdicts.md, "One graph, closed min-p"). ``reachable``
    (node,): whether the copies can firmly reject the node at all.
    """

    adjusted: np.ndarray
    rejected: np.ndarray
    firm: np.ndarray
    reachable: np.ndarray
    share: np.ndarray
    threshold: np.ndarray


def decide_set(p, p_copies, use, min_p, alpha: float = ALPHA_RESULT,
               held=None) -> SetDecision:
    r"""Decide one set's nodes under every member: the closed min-p of one graph.

    A node is rejected where the closed test rejects it at ``alpha`` and its question's
    own p-value (:func:`question_pvalue`) is at most ``QUESTION_SHARE * alpha``: the set
    reads ``invalid`` somewhere at most α of the time, and each question at most
    ``QUESTION_SHARE * alpha`` by itself.

    Over the nodes of :data:`NODES`: ``p`` (node, member) the Monte-Carlo p-values (NaN:
    node absent); ``p_copies`` (node, member, n) on each shared copy; ``use`` (node,
    member) the members taking part; ``min_p`` (node,) the smallest p-value the copies
    can give (:func:`uqx.engine.mctest.smallest_pvalue`); ``alpha`` the set's family-wise
    level; ``held`` (node,) the nodes whose rejection passes no share on (tails beyond
    the null family): such a node keeps its decision, the others are decided again with
    its p-value at 1 under the members that rejected it.

    Examples
    --------
    >>> rng = np.random.default_rng(2)
    >>> p = np.array([[0.001], [0.6], [0.3], [np.nan], [np.nan], [0.5], [np.nan]])
    >>> d = decide_set(p, rng.uniform(size=(7, 1, 999)), np.ones((7, 1), bool),
    ...                np.full(7, 0.001))
    >>> d.rejected[:, 0].tolist()
    [True, False, False, False, False, False, False]
    """
    pc = np.asarray(p_copies, dtype=np.float64)
    p = np.where(np.asarray(use, dtype=bool), np.asarray(p, dtype=np.float64), np.nan)
    first = _decide(p, pc, min_p, alpha)
    if held is None:
        return first
    hold = first.rejected & np.asarray(held, dtype=bool)[:, None]
    if not hold.any():
        return first
    again = _decide(np.where(hold, 1.0, p), pc, min_p, alpha)
    rows = hold.any(axis=1)  # the held nodes keep their first decision
    merged = {f.name: getattr(again, f.name).copy() for f in fields(SetDecision)}
    for name, arr in merged.items():
        arr[rows] = getattr(first, name)[rows]
    return SetDecision(**merged)


def _decide(p, pc, min_p, alpha) -> SetDecision:
    """Decide as :func:`decide_set` in one pass (``p``: NaN where absent or not taking part)."""
    names = [node.name for node in NODES]
    adj, share, thr = (np.full(p.shape, np.nan) for _ in range(3))
    firm = np.zeros(p.shape, dtype=bool)
    reach = np.ones(len(names), dtype=bool)
    # the graph of the nodes this set has (adaptivity's share split among its features)
    on = np.flatnonzero(np.isfinite(p).any(axis=1))
    w, G = np.zeros(len(names)), np.zeros((len(names), len(names)))
    w[on], G[np.ix_(on, on)] = node_graph([names[j] for j in on])
    scale = names.index("scale")
    groups = [np.array([k for k, node in enumerate(NODES) if node.question == q])
              for q in QUESTIONS]
    for m in range(p.shape[1]):
        here = np.flatnonzero(np.isfinite(p[:, m]))
        if not here.size:
            continue
        closed = _ClosedTest(pc[:, m], w, G, np.isfinite(p[:, m]))
        minima = {}  # sorted copy minima of the intersections the thresholds read
        adj[:, m] = closed.adjusted(p[:, m])
        for ks in groups:  # each question by itself at QUESTION_SHARE of alpha
            ks = ks[np.isfinite(p[ks, m])]
            if ks.size:
                own = question_pvalue(p[ks, m], pc[ks, m])
                adj[ks, m] = np.minimum(np.maximum(adj[ks, m], own / QUESTION_SHARE), 1.0)
        fl = firm_level(alpha, max(int(np.sum(np.all(np.isfinite(pc[here, m]), axis=0))), 1))
        firm[:, m] = adj[:, m] < fl
        for j in here:
            factor = names[j] == "up_to_factor"  # asked once the scale is rejected
            keep = np.isfinite(p[:, m])
            if factor:
                keep[scale] = False
            wJ = intersection_weights(w, G, keep)
            pos = [k for k in np.flatnonzero(keep) if wJ[k] > 0]
            share[j, m] = wJ[j] * alpha
            ks = next(g for g in groups if j in g)
            ks = ks[np.isfinite(p[ks, m])]
            if wJ[j] > 0:  # the closed test's threshold, and the question's own
                own = (QUESTION_SHARE * fl if ks.size == 1 else
                       critical_value(pc[ks, m], np.ones(ks.size), QUESTION_SHARE * fl))
                key = keep.tobytes()
                if key not in minima:
                    minima[key] = np.sort(_copy_minima(pc[pos, m], wJ[pos]))
                thr[j, m] = min(wJ[j] * _kth_minimum(minima[key], fl), own)
            best = p[:, m].copy()  # could the node be rejected at all: its p at its smallest
            best[j] = min_p[j]
            if factor and np.isfinite(best[scale]):
                best[scale] = 0.0
            own = question_pvalue(best[ks], pc[ks, m]) / QUESTION_SHARE
            reach[j] &= bool(max(closed.adjusted(best)[j], own) < fl)
    rejected = np.isfinite(adj) & (adj <= alpha)
    return SetDecision(adj, rejected, firm & rejected, reach, share, thr)
