r"""The decision design of a result: one declared null per node, one graph for the set.

A validation answers a few **questions** about uE. Each question is made of one or two
**nodes**, and each node is one null hypothesis tested by **one prespecified
statistic** (:data:`NODES`):

=================  ===============  ==========================================  ==========
node               question         null hypothesis                             statistic
=================  ===============  ==========================================  ==========
``scale``          average          :math:`\langle Z^2\rangle = 1`               ZMS
``bias``           average          :math:`E[Z] = 0`                            t_Z (⟨Z⟩
                                                                                studentised)
``consistency``    consistency      :math:`E[Z^2 \mid u_E] = 1` at every uE      ZMS_scan
``adaptivity_X``   adaptivity_X     :math:`E[Z^2 \mid X] = 1` along X            ZMS_scan_X
``adaptivity_V``   adaptivity_V     :math:`E[Z^2 \mid V] = 1` along V            ZMS_scan_V
``ranking``        ranking          uE ranks \|E\| as calibrated errors would    CC
``up_to_factor``   up_to_factor     :math:`E[Z^2 \mid u_E]` the same at every   ZMS_scan
                                    uE                                          of Z/√ZMS
=================  ===============  ==========================================  ==========

Where the declared statistic was not asked, the node reads the first asked of its
prespecified fallbacks (same null: ZMSE_max, ZMSE, ENCE, UCE for the binned nodes, RCE
for the scale); the other statistics of a result are **diagnostics**: each has its own
null (ZVE: :math:`\mathrm{Var}(Z \mid u_E) = 1`, which a bias also breaks) and an
unadjusted p-value, and none decides a question.

**One graph for the set** (Bretz, Maurer, Brannath & Posch 2009): the nodes start with
prespecified shares of the set's family-wise level α (:data:`NODE_WEIGHTS`) and pass a
rejected node's share on along :func:`node_graph`. The graph is **calibrated jointly on
the shared copies** (the parametric graphs of Bretz, Maurer & Hommel 2011): every
intersection :math:`J` of the nodes present is tested by the weighted minimum
:math:`T_J = \min_{j\in J} p_j / w_{J,j}` of its nodes' p-values, with the weights
:math:`w_J` the graph gives it (:func:`intersection_weights`), calibrated against the
same minimum on every copy (Westfall & Young's min-p; the copies are drawn under the
joint null of every node), and node i is rejected when every intersection that
contains it is (closed testing, :func:`closed_minp`). This controls the family-wise
rate of every printed question verdict in the strong sense, is never less powerful than
the weighted Bonferroni split of the same graph, and does not depend on the order in
which the nodes are listed.

All of it runs once per member of the null family; :func:`member_verdict` turns the
members' decisions into ``invalid`` (every member that takes part rejects), ``valid``
(none does beyond its Monte-Carlo noise) or ``inconclusive``. :func:`decide_set` does
it for one set and returns a :class:`SetDecision`. Pure NumPy over the last axis (the
copies).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations

import numpy as np

from uqx.engine.defaults import ALPHA_RESULT  # noqa: F401  (the default level)
from uqx.engine.mctest import pvalue_noise

__all__ = [
    "ALPHA_RESULT",
    "QUESTIONS",
    "NODES",
    "NODE_WEIGHTS",
    "Node",
    "question_of",
    "node_statistic",
    "node_graph",
    "intersection_weights",
    "closed_minp",
    "critical_value",
    "firm_level",
    "member_verdict",
    "SetDecision",
    "decide_set",
]


#: The questions, in the order of the result's tables.
QUESTIONS = ("average", "consistency", "adaptivity_X", "adaptivity_V", "ranking",
             "up_to_factor")


@dataclass(frozen=True)
class Node:
    """One null hypothesis of the graph, tested by one statistic.

    Attributes
    ----------
    name : str
    question : str
        The question of :data:`QUESTIONS` it answers (with the others of that question).
    statistics : tuple of str
        The statistic that tests it, then its fallbacks in order of preference (the
        first asked is used; its base name, the conditioning variable aside).
    cond : str or None
        The variable a binned statistic is binned on.
    """

    name: str
    question: str
    statistics: tuple
    cond: str | None = None


#: The nodes of a set's graph (:func:`node_graph`).
NODES = (
    Node("scale", "average", ("zms", "rce")),
    Node("bias", "average", ("mean_z",)),
    Node("consistency", "consistency", ("zms_scan", "zmse_max", "zmse", "ence", "uce"), "uE"),
    Node("adaptivity_X", "adaptivity_X", ("zms_scan", "zmse_max", "zmse", "ence", "uce"),
         "X"),
    Node("adaptivity_V", "adaptivity_V", ("zms_scan", "zmse_max", "zmse", "ence", "uce"),
         "V"),
    Node("ranking", "ranking", ("cc",)),
    Node("up_to_factor", "up_to_factor", ("zms_scan", "zmse_max", "zmse", "ence", "uce"),
         "uE"),
)

#: Initial shares of the set's level, prespecified: average calibration and consistency
#: the bulk (the scale and the bias of average calibration half of it each), adaptivity
#: 10 % (split among the features present), ranking 5 %; "up to a factor" starts with
#: nothing and receives half of the scale's share once the scale is rejected.
NODE_WEIGHTS = {"scale": 0.2125, "bias": 0.2125, "consistency": 0.425,
                "adaptivity": 0.10, "ranking": 0.05, "up_to_factor": 0.0}


def question_of(family: str, cond: str | None) -> str | None:
    """Question a statistic's null belongs to, from its family and conditioning variable.

    Moment statistics: ``average``; binned on uE: ``consistency``; the rank correlation:
    ``ranking``; binned on X or V: ``adaptivity_X`` / ``adaptivity_V``; None otherwise.
    Only the node's statistic decides its question; the others are its diagnostics.
    """
    if family == "moment":
        return "average"
    if family == "rank":
        return "ranking"
    if family == "binned" and cond == "uE":
        return "consistency"
    if family == "binned" and cond in ("X", "V"):
        return f"adaptivity_{cond}"
    return None


def node_statistic(node: Node, asked) -> int | None:
    """Index in ``asked`` of the statistic that tests ``node`` (None when none is asked).

    Parameters
    ----------
    node : Node
    asked : sequence of (base, cond) pairs
        The statistics of a result, each as its base name and conditioning variable
        (None for a moment or rank statistic).
    """
    pairs = [(str(b), c) for b, c in asked]
    for name in node.statistics:
        key = (name, node.cond)
        if key in pairs:
            return pairs.index(key)
    return None


def node_graph(names):
    r"""Return the initial weights and transitions of the nodes present.

    A node starts with its share of :data:`NODE_WEIGHTS` (adaptivity's split among the
    features present). When the nodes of average calibration or consistency are absent
    their share is not given to the others (no node starts above one test's level).
    A rejected node passes its weight on: the scale half of it to ``up_to_factor``
    (asked only then); the scale and the bias, the two nodes of average calibration, the
    rest to each other (a pure bias leaves consistency at its own share: its null is
    true there); ``up_to_factor`` all of it to consistency; the other nodes to the others
    in proportion to their initial weights.

    Parameters
    ----------
    names : sequence of str
        Node names from :data:`NODES`.

    Returns
    -------
    weights : numpy.ndarray, shape (Q,)
    transitions : numpy.ndarray, shape (Q, Q)
        Rows sum to at most 1, zero diagonal.

    Examples
    --------
    >>> w, G = node_graph(["scale", "bias", "consistency", "adaptivity_X"])
    >>> w.round(4).tolist()
    [0.2125, 0.2125, 0.425, 0.1]
    """
    q = list(names)
    adapt = [k for k in q if k.startswith("adaptivity")]
    w = np.array([NODE_WEIGHTS["adaptivity"] / len(adapt) if k.startswith("adaptivity")
                  else NODE_WEIGHTS[k] for k in q], dtype=np.float64)
    G = np.zeros((len(q), len(q)))
    for a, name in enumerate(q):
        if name == "up_to_factor":
            if "consistency" in q:
                G[a, q.index("consistency")] = 1.0
            continue
        # average calibration first passes a share within itself (scale <-> bias)
        mate = {"scale": "bias", "bias": "scale"}.get(name)
        mate = q.index(mate) if mate in q else None
        others = [b for b in range(len(q)) if b != a and w[b] > 0 and b != mate]
        total = sum(w[b] for b in others)
        if name == "scale" and "up_to_factor" in q:  # half to "up to a factor"
            G[a, q.index("up_to_factor")] = 0.5
            rest = 0.5
        else:
            rest = 1.0
        if mate is not None:
            G[a, mate] = rest
            continue
        for b in others:
            G[a, b] = rest * w[b] / total if total else 0.0
        if not others and name == "scale" and "up_to_factor" in q:
            G[a, q.index("up_to_factor")] = 1.0
    return w, G


def intersection_weights(weights, transitions, keep) -> np.ndarray:
    r"""Weights the graph gives the nodes of an intersection (Bretz et al. 2009, Alg. 1).

    Each node not in the intersection is removed in turn, its weight passed on,
    :math:`w_k \leftarrow w_k + w_j G_{jk}`, and the transitions updated,
    :math:`G_{kl} \leftarrow (G_{kl} + G_{kj} G_{jl}) / (1 - G_{kj} G_{jk})`; the result
    does not depend on the order of removal.

    Parameters
    ----------
    weights : array_like, shape (Q,)
    transitions : array_like, shape (Q, Q)
    keep : array_like of bool, shape (Q,)
        The nodes of the intersection.

    Returns
    -------
    numpy.ndarray, shape (Q,)
        0 outside the intersection.
    """
    w = np.array(weights, dtype=np.float64)
    G = np.array(transitions, dtype=np.float64)
    alive = np.ones(w.size, dtype=bool)
    for j in np.flatnonzero(~np.asarray(keep, dtype=bool)):
        alive[j] = False
        w[alive] += w[j] * G[j, alive]
        G = _without(G, j, alive)
        w[j] = 0.0
    return w


def _without(G, j, alive):
    """Return the transitions once node j is removed (``alive``: the nodes left)."""
    G2 = np.zeros_like(G)
    for k in np.flatnonzero(alive):
        den = 1.0 - G[k, j] * G[j, k]
        for m in np.flatnonzero(alive):
            if k != m and den > 0:
                G2[k, m] = (G[k, m] + G[k, j] * G[j, m]) / den
    return G2


def _local_pvalue(s_obs, s_copies) -> float:
    """Min-p p-value of one intersection: its weighted minimum among the copies'."""
    good = np.all(np.isfinite(s_copies), axis=0)
    if not good.any():
        return np.nan
    m = s_copies[:, good].min(axis=0)
    return float((1 + np.sum(m <= s_obs)) / (1 + m.size))


def closed_minp(p_observed, p_copies, weights, transitions) -> np.ndarray:
    r"""Return the adjusted p-values of the nodes by closed testing of weighted min-p intersections.

    For every intersection J of the nodes with a finite p-value, the weights
    :math:`w_J` (:func:`intersection_weights`) and the local p-value

    .. math:: p_J = \frac{1 + \#\{k : \min_{j \in J} p^*_{jk}/w_{J,j} \le
              \min_{j \in J} p_j / w_{J,j}\}}{1 + n}

    over the n copies (nodes of zero weight in J left out; :math:`p_J = 1` when all
    are). The adjusted p-value of node i is :math:`\tilde p_i = \max_{J \ni i} p_J`;
    rejecting where :math:`\tilde p_i \le \alpha` controls the family-wise error rate
    at α in the strong sense (Marcus, Peritz & Gabriel 1976; the copies are drawn under
    the joint null, so each local test has its size). The result does not depend on the
    order of the nodes.

    Parameters
    ----------
    p_observed : array_like, shape (Q,)
        Each node's p-value (NaN: node absent, adjusted p NaN).
    p_copies : array_like, shape (Q, n)
        Each node's p-value on each shared copy (:func:`uqx.engine.mctest.copy_pvalues`).
    weights, transitions : array_like
        The graph (:func:`node_graph`).

    Returns
    -------
    numpy.ndarray, shape (Q,)

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
    out = np.full(p.size, np.nan)
    present = np.isfinite(p)
    if not present.any():
        return out
    w0 = np.ascontiguousarray(weights, dtype=np.float64)
    G0 = np.ascontiguousarray(transitions, dtype=np.float64)
    adj = np.zeros(p.size)
    for J, use, v in _intersections(w0.tobytes(), G0.tobytes(), present.tobytes()):
        if not use.size:
            pJ = 1.0
        else:
            pJ = _local_pvalue(float(np.min(p[use] / v)), pc[use] / v[:, None])
            if not np.isfinite(pJ):
                pJ = 1.0
        adj[J] = np.maximum(adj[J], pJ)
    out[present] = adj[present]
    return out


@lru_cache(maxsize=512)
def _intersections(w_bytes, G_bytes, present_bytes):
    """Every intersection of the nodes present: (its nodes, those of positive weight, weights).

    The nodes absent from the set are removed from the graph first (they are not
    hypotheses of this set); cached on the graph and the nodes present.
    """
    w = np.frombuffer(w_bytes, dtype=np.float64)
    present = np.frombuffer(present_bytes, dtype=bool)
    G = np.frombuffer(G_bytes, dtype=np.float64).reshape(w.size, w.size)
    w0 = intersection_weights(w, G, present)
    G0 = _reduced_transitions(G, present)
    nodes = np.flatnonzero(present).tolist()
    out = []
    for r in range(1, len(nodes) + 1):
        for J in combinations(nodes, r):
            keep = np.zeros(w.size, dtype=bool)
            keep[list(J)] = True
            wJ = intersection_weights(w0, G0, keep)
            use = np.array([j for j in J if wJ[j] > 0], dtype=np.int64)
            out.append((np.array(J, dtype=np.int64), use, wJ[use]))
    return tuple(out)


def _reduced_transitions(G, keep):
    """Return the transitions of the graph once the nodes outside ``keep`` are removed."""
    G = np.array(G, dtype=np.float64)
    alive = np.ones(G.shape[0], dtype=bool)
    for j in np.flatnonzero(~np.asarray(keep, dtype=bool)):
        alive[j] = False
        G = _without(G, j, alive)
    return G


def critical_value(p_copies, weights, level: float) -> float:
    r"""Return the value c under which a weighted min-p rejects: :math:`\min_t p_t/w_t < c`.

    The min-p p-value :math:`(1 + \#\{k: m_k \le T\})/(1 + n)`, with :math:`m_k` the
    weighted minimum of copy k, is below ``level`` exactly when fewer than
    :math:`K = \lceil \mathrm{level}\,(1 + n) - 1\rceil` copies have :math:`m_k \le T`,
    i.e. when T is below the K-th smallest :math:`m_k` (ties aside). A node t of the
    intersection of every node present is rejected there when :math:`p_t < w_t\,c`: the
    threshold at which its power (and so its resolution) is read.

    Parameters
    ----------
    p_copies : array_like, shape (T, n)
        The tests' p-values on the shared copies.
    weights : array_like, shape (T,)
    level : float

    Returns
    -------
    float
        0 when the copies cannot reach ``level`` (no rejection possible), NaN without
        finite copies.
    """
    w = np.asarray(weights, dtype=np.float64)
    pc = np.asarray(p_copies, dtype=np.float64).reshape(w.size, -1) / w[:, None]
    good = np.all(np.isfinite(pc), axis=0)
    if not good.any():
        return np.nan
    m = np.sort(pc[:, good].min(axis=0))
    n = m.size
    K = int(np.ceil(level * (1 + n) - 1 - 1e-12))
    if K < 1:
        return 0.0
    return float(m[K - 1])


def firm_level(level, n):
    r"""Level below which a p-value is a rejection beyond its Monte-Carlo noise.

    :math:`\max(L - 2\sqrt{L(1-L)/n},\ L/2)` (:func:`uqx.engine.mctest.pvalue_noise`):
    a member whose adjusted p-value lies between it and the level L rejects, but n
    copies cannot tell that rejection from an acceptance; it does not withhold a
    ``valid`` (marked ``borderline``), and the resolution of a ``valid`` is read at this
    level.
    """
    level = float(level)
    return max(level - 2.0 * float(pvalue_noise(level, n, level)), level / 2.0)


def member_verdict(rejected, labels, *, use=None, firm=None, reachable=True,
                   unreachable: str = "") -> tuple[str, str]:
    """Verdict of one test over the members of the null family that take part.

    ``invalid`` when every member rejects, ``valid`` when none rejects beyond the
    Monte-Carlo noise of its p-value (``firm``; default: any rejection), else
    ``inconclusive`` naming the members on each side: the conclusion then depends on the
    generative distribution of the errors, not on the data.

    Parameters
    ----------
    rejected : array_like of bool, shape (member,)
        Whether each member's procedure rejects the test.
    firm : array_like of bool, optional
        Whether each member rejects beyond the Monte-Carlo noise of its p-value (a subset
        of ``rejected``).
    labels : sequence of str
    use : array_like of bool, optional
        Members that take part (all by default).
    reachable : bool
        False when the copies cannot reach the test's level: no ``valid`` (a rejection
        under every member still stands: it needs no reach).
    unreachable : str
        The reason then (default: a generic one).

    Returns
    -------
    verdict, reason : str
    """
    r = np.asarray(rejected, dtype=bool)
    f = r if firm is None else np.asarray(firm, dtype=bool) & r
    labels = list(labels)
    if use is not None:
        use = np.asarray(use, dtype=bool)
        r, f = r[use], f[use]
        labels = [lab for lab, k in zip(labels, use, strict=True) if k]
    if r.size == 0:
        return "inconclusive", "no member of the null family takes part"
    if r.all():  # a rejection needs no reach: the procedure controls its rate
        return "invalid", ""
    if not reachable:
        return "inconclusive", unreachable or (
            "the copies cannot reach the level of this test: no verdict")
    if not f.any():
        return "valid", ""
    rej = ", ".join(lab for lab, k in zip(labels, r, strict=True) if k)
    acc = ", ".join(lab for lab, k in zip(labels, r, strict=True) if not k)
    return "inconclusive", (f"rejected under {rej}, but not under {acc}: the conclusion "
                            "depends on the generative distribution of the errors")


@dataclass(frozen=True)
class SetDecision:
    """The decision of one set under each member (:func:`decide_set`).

    Attributes
    ----------
    nodes : tuple of str
        The nodes of the graph (present or not).
    adjusted : numpy.ndarray, shape (node, member)
        Closed-testing adjusted p-values (NaN: node absent or member not taking part).
    rejected, firm : numpy.ndarray of bool, shape (node, member)
        Rejected at α; rejected beyond the Monte-Carlo noise of the adjusted p-value
        (below :func:`firm_level`).
    reachable : numpy.ndarray of bool, shape (node,)
        Whether the copies can firmly reject the node at all (its own p-value at its
        smallest, under every member that takes part).
    share : numpy.ndarray, shape (node, member)
        The node's share of α where its power is read (below).
    threshold : numpy.ndarray, shape (node, member)
        The p-value under which the node's own test firmly rejects the intersection
        where its power is read: every node present (less the scale for
        ``up_to_factor``, asked only once the scale is rejected), at the firm level
        (:func:`critical_value` times the node's weight there). Smaller intersections
        give the node more weight, so the power read there is a lower bound.
    alpha : float
    """

    nodes: tuple
    adjusted: np.ndarray
    rejected: np.ndarray
    firm: np.ndarray
    reachable: np.ndarray
    share: np.ndarray
    threshold: np.ndarray
    alpha: float


def decide_set(p, p_copies, use, min_p, alpha: float = ALPHA_RESULT,
               nodes=None) -> SetDecision:
    r"""Decide one set's nodes under every member: the closed min-p of one graph.

    Parameters
    ----------
    p : array_like, shape (node, member)
        Each node's Monte-Carlo p-value under each member (NaN: node absent).
    p_copies : array_like, shape (node, member, n)
        Each node's p-value on each shared copy.
    use : array_like of bool, shape (node, member)
        Members taking part in each node.
    min_p : array_like, shape (node,)
        The smallest p-value each node's copies can give
        (:func:`uqx.engine.mctest.smallest_pvalue`).
    alpha : float
        The set's family-wise level.
    nodes : sequence of str, optional
        Node names (default: those of :data:`NODES`).

    Returns
    -------
    SetDecision

    Examples
    --------
    >>> rng = np.random.default_rng(2)
    >>> p = np.array([[0.001], [0.6], [0.3], [np.nan], [np.nan], [0.5], [np.nan]])
    >>> d = decide_set(p, rng.uniform(size=(7, 1, 999)), np.ones((7, 1), bool),
    ...                np.full(7, 0.001))
    >>> d.rejected[:, 0].tolist()
    [True, False, False, False, False, False, False]
    """
    names = tuple(nodes) if nodes is not None else tuple(n.name for n in NODES)
    p = np.asarray(p, dtype=np.float64)
    pc = np.asarray(p_copies, dtype=np.float64)
    use = np.asarray(use, dtype=bool)
    Q, D = p.shape
    adj = np.full((Q, D), np.nan)
    share = np.full((Q, D), np.nan)
    thr = np.full((Q, D), np.nan)
    reach = np.ones(Q, dtype=bool)
    firm_rej = np.zeros((Q, D), dtype=bool)
    present_any = np.isfinite(p) & use
    # the graph of the nodes this set has (adaptivity's share split among its features)
    on = np.flatnonzero(present_any.any(axis=1))
    w_on, G_on = node_graph([names[j] for j in on])
    w_all, G_all = np.zeros(Q), np.zeros((Q, Q))
    w_all[on] = w_on
    G_all[np.ix_(on, on)] = G_on
    scale = names.index("scale") if "scale" in names else -1
    for m in range(D):
        pm = np.where(present_any[:, m], p[:, m], np.nan)
        here = np.flatnonzero(np.isfinite(pm))
        if not here.size:
            continue
        adj[:, m] = closed_minp(pm, pc[:, m], w_all, G_all)
        n_ok = int(np.sum(np.all(np.isfinite(pc[here, m]), axis=0)))
        fl = firm_level(alpha, max(n_ok, 1))
        firm_rej[:, m] = adj[:, m] < fl
        for j in here:
            keep = np.isfinite(pm)
            if names[j] == "up_to_factor" and scale >= 0:
                keep[scale] = False
            wJ = intersection_weights(w_all, G_all, keep)
            pos = [k for k in np.flatnonzero(keep) if wJ[k] > 0]
            share[j, m] = wJ[j] * alpha
            if wJ[j] > 0:
                thr[j, m] = wJ[j] * critical_value(pc[pos, m], wJ[pos], fl)
            best = pm.copy()  # could the node be rejected at all: its p at its smallest
            best[j] = min_p[j]
            if names[j] == "up_to_factor" and scale >= 0 and np.isfinite(best[scale]):
                best[scale] = 0.0  # asked once the scale is rejected
            if not closed_minp(best, pc[:, m], w_all, G_all)[j] < fl:
                reach[j] = False
    rejected = np.isfinite(adj) & (adj <= alpha)
    return SetDecision(names, adj, rejected, firm_rej & rejected, reach, share, thr,
                       float(alpha))
