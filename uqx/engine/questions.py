r"""The decision design of a result: questions, their headline tests, and one level for all.

A validation answers a few **questions** about uE, each a null hypothesis that the
calibrated copies of the data are drawn under:

* ``average`` — average calibration, :math:`\langle Z^2\rangle = 1` and no bias (ZMS,
  RCE, ⟨Z⟩ studentised, Var(Z), NLL);
* ``consistency`` — :math:`E[Z^2 \mid u_E] = 1` at every uE (the statistics binned on
  uE);
* ``adaptivity_X``, ``adaptivity_V`` — :math:`E[Z^2 \mid X] = 1` along a feature (the
  statistics binned on it);
* ``ranking`` — uE ranks the errors as calibrated errors of one shape would (the rank
  correlation CC of :math:`|E|` and uE, whose null is narrower than consistency's: a shape of the
  errors that changes with uE moves it on consistent data, so it is a question of its own
  and does not decide consistency);
* ``up_to_factor`` — consistency of uE rescaled by its own factor √ZMS, i.e.
  :math:`E[Z^2 \mid u_E]` the same at every uE (the statistics binned on uE computed on
  :math:`Z/\sqrt{\langle Z^2\rangle}`, copy by copy): asked only once average calibration
  is rejected ("does one number fix uE?").

**One test per question** (its headline): the weighted minimum of its statistics'
p-values, :math:`T = \min_t p_t / w_t`, calibrated on the copies the statistics share
(Westfall & Young's min-p; the prespecified weights, each statistic's ``weight`` in
:data:`uqx.engine.statistic.STATISTICS`, put the few most powerful statistics first), so
the headline has the size of one test whatever the dependence between its statistics. A
statistic is decided **inside its question** by the step-down of the same min-p
(:func:`weighted_stepdown`): its adjusted p-value is never below the headline's, so no
statistic is rejected while its question is not (the result is consonant), and none is
``valid`` beside a rejected headline's own reason.

**One level for the set.** The questions share the set's family-wise level
:data:`ALPHA_RESULT` by a graphical weighted Holm procedure (Bretz, Maurer, Brannath &
Posch 2009; :func:`graph_procedure`): each question starts with a share of the level
(:func:`question_graph`) and passes it on to the others when it is rejected. Whatever
the dependence between the questions, a calibrated set gets an ``invalid`` somewhere in
its result at most that often.

All of it runs once per member of the null family; :func:`member_verdict` turns the
members' decisions into ``invalid`` (every member rejects), ``valid`` (none does) or
``inconclusive``. Pure NumPy over the last axis (the copies).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ALPHA_RESULT",
    "QUESTIONS",
    "question_of",
    "weighted_stepdown",
    "critical_value",
    "graph_procedure",
    "question_graph",
    "member_verdict",
]

#: Family-wise level of a set's result: a calibrated set gets an ``invalid`` anywhere in
#: its result at most this often (the questions share it, :func:`graph_procedure`).
ALPHA_RESULT = 0.10

#: The questions, in the order of the result's tables.
QUESTIONS = ("average", "consistency", "adaptivity_X", "adaptivity_V", "ranking",
             "up_to_factor")

def question_of(family: str, cond: str | None) -> str | None:
    """Question a statistic belongs to, from its family and conditioning variable.

    Moment statistics: ``average``; binned on uE: ``consistency``; the rank correlation:
    ``ranking``; binned on X or V: ``adaptivity_X`` / ``adaptivity_V``; None otherwise.
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


def _scaled(p_observed, p_copies, weights):
    po = np.asarray(p_observed, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    pc = np.asarray(p_copies, dtype=np.float64).reshape(po.size, -1)
    return po / w, pc / w[:, None]


def weighted_stepdown(p_observed, p_copies, weights) -> np.ndarray:
    r"""Step-down weighted min-p adjusted p-values of tests sharing their copies.

    With :math:`s_t = p_t / w_t` in increasing order :math:`s_{(1)} \le \dots` (tests
    :math:`r_1, r_2, \dots`) and the same on each copy k,

    .. math:: \tilde p_{(t)} = \max_{s \le t} \frac{1 + \#\{k : \min_{q \ge s}
              s^*_{r_q, k} \le s_{(s)}\}}{1 + n}

    (Westfall & Young 1993, Algorithm 2.8, with weights: Westfall, Kropf & Finos 2004).
    :math:`\tilde p_{(1)}` is the headline's p-value, the single-step weighted min-p of
    every test; each later step leaves out the tests already rejected. It is a closed
    test of min-p local tests (subset pivotality: the copies are drawn under the joint
    null), so rejecting where :math:`\tilde p < \alpha` controls the family-wise rate at
    α, and a test is rejected only with its headline.

    Parameters
    ----------
    p_observed : array_like, shape (T,)
        Each test's p-value (NaN: test absent).
    p_copies : array_like, shape (T, n)
        Each test's p-value on each shared copy (:func:`uqx.engine.mctest.copy_pvalues`).
    weights : array_like, shape (T,)
        Positive weights.

    Returns
    -------
    numpy.ndarray, shape (T,)
        NaN for absent tests, or when no copy has every test finite.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> pc = rng.uniform(size=(2, 999))
    >>> adj = weighted_stepdown([0.001, 0.5], pc, [1.0, 1.0])
    >>> bool(adj[0] <= adj[1])
    True
    """
    s, sc = _scaled(p_observed, p_copies, weights)
    out = np.full(s.size, np.nan)
    keep = np.flatnonzero(np.isfinite(s))
    if not keep.size:
        return out
    good = np.all(np.isfinite(sc[keep]), axis=0)
    if not good.any():
        return out
    order = keep[np.argsort(s[keep], kind="stable")]
    scg = sc[order][:, good]
    tail_min = np.minimum.accumulate(scg[::-1], axis=0)[::-1]
    n = scg.shape[1]
    adj = (1 + np.sum(tail_min <= s[order][:, None], axis=1)) / (1 + n)
    out[order] = np.maximum.accumulate(adj)
    return out


def critical_value(p_copies, weights, level: float) -> float:
    r"""Return the value c under which a question's headline rejects: :math:`\min_t p_t/w_t < c`.

    The headline's p-value :math:`(1 + \#\{k: m_k \le T\})/(1 + n)`, with :math:`m_k`
    the weighted min-p of copy k, is below ``level`` exactly when fewer than
    :math:`K = \lceil \mathrm{level}\,(1 + n) - 1\rceil` copies have :math:`m_k \le T`,
    i.e. when T is below the K-th smallest :math:`m_k` (ties aside). A statistic t is
    rejected at the first step where :math:`p_t < w_t\,c`: the threshold at which its
    power (and so its resolution) is read.

    Parameters
    ----------
    p_copies : array_like, shape (T, n)
        The tests' p-values on the shared copies.
    weights : array_like, shape (T,)
    level : float
        The question's level.

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


#: Initial shares of the set's level (:func:`question_graph`): adaptivity (split among
#: the features) and ranking take these, average calibration and consistency share the
#: rest equally.
ADAPTIVITY_SHARE = 0.1
RANKING_SHARE = 0.05


def question_graph(questions):
    r"""Return the initial weights and transitions of the questions present.

    The graph :func:`graph_procedure` runs on.

    Adaptivity, when some feature is there, starts with :data:`ADAPTIVITY_SHARE` of the
    level (split among the features), ranking (CC) with :data:`RANKING_SHARE`; average
    calibration and consistency each take half of the rest (0.425 with a feature and
    CC: 4.25 % of a 10 % level), also when the other is absent: a question never starts
    above one test's level. Without either, the questions present share half of the
    level. ``up_to_factor`` starts with nothing and receives half of average
    calibration's level once that is rejected (it is asked only then). A rejected
    question passes its level to the others in proportion to their initial weights
    (``up_to_factor``'s to consistency).

    Parameters
    ----------
    questions : sequence of str
        Names from :data:`QUESTIONS`.

    Returns
    -------
    weights : numpy.ndarray, shape (Q,)
    transitions : numpy.ndarray, shape (Q, Q)
        Rows sum to at most 1, zero diagonal.

    Examples
    --------
    >>> w, G = question_graph(["average", "consistency", "adaptivity_X"])
    >>> w.round(3).tolist()
    [0.45, 0.45, 0.1]
    """
    q = list(questions)
    adapt = [k for k in q if k.startswith("adaptivity")]
    main = [k for k in q if k in ("average", "consistency")]
    side = (ADAPTIVITY_SHARE if adapt else 0.0) + (RANKING_SHARE if "ranking" in q else 0.0)
    w = np.zeros(len(q))
    for k, name in enumerate(q):
        if not main:  # no main question: the others share one test's level
            w[k] = 0.0 if name == "up_to_factor" else 0.5 / sum(
                1 for x in q if x != "up_to_factor")
        elif name in main:  # never above 1/2: one test's level, 1 - level of the result
            w[k] = (1.0 - side) / 2.0
        elif name in adapt:
            w[k] = ADAPTIVITY_SHARE / len(adapt)
        elif name == "ranking":
            w[k] = RANKING_SHARE
    G = np.zeros((len(q), len(q)))
    for a, name in enumerate(q):
        if name == "up_to_factor":
            if "consistency" in q:
                G[a, q.index("consistency")] = 1.0
            continue
        others = [b for b in range(len(q)) if b != a and w[b] > 0]
        total = sum(w[b] for b in others)
        half = name == "average" and "up_to_factor" in q
        for b in others:
            G[a, b] = (0.5 if half else 1.0) * w[b] / total if total else 0.0
        if half:
            G[a, q.index("up_to_factor")] = 0.5 if others else 1.0
    return w, G


def graph_procedure(p, weights, transitions, alpha: float = ALPHA_RESULT):
    r"""Graphical weighted Holm procedure (Bretz et al. 2009, Algorithm 1).

    Repeatedly reject a hypothesis j with :math:`p_j < w_j\,\alpha`, then move its
    weight along the graph, :math:`w_k \leftarrow w_k + w_j G_{jk}`, and update the
    transitions, :math:`G_{kl} \leftarrow (G_{kl} + G_{kj} G_{jl}) / (1 - G_{kj} G_{jk})`
    (:math:`k \ne l`, else 0). Controls the family-wise error rate at α in the strong
    sense, whatever the dependence between the p-values. The rejections do not depend
    on the order in which the rejectable hypotheses are taken.

    Parameters
    ----------
    p : array_like, shape (Q,)
        p-value of each hypothesis (NaN: never rejected, keeps its weight).
    weights : array_like, shape (Q,)
        Initial weights (sum <= 1).
    transitions : array_like, shape (Q, Q)
    alpha : float

    Returns
    -------
    rejected : numpy.ndarray of bool, shape (Q,)
    level : numpy.ndarray, shape (Q,)
        The level each hypothesis was rejected at, or its final level if not rejected.

    Examples
    --------
    >>> w, G = np.array([0.5, 0.5]), np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> rej, lev = graph_procedure([0.04, 0.08], w, G, alpha=0.1)
    >>> rej.tolist(), lev.round(3).tolist()
    ([True, True], [0.05, 0.1])
    """
    p = np.asarray(p, dtype=np.float64)
    w = np.array(weights, dtype=np.float64)
    G = np.array(transitions, dtype=np.float64)
    Q = p.size
    rejected = np.zeros(Q, dtype=bool)
    level = w * alpha
    while True:
        free = np.flatnonzero(~rejected & np.isfinite(p) & (p < w * alpha))
        if not free.size:
            break
        j = int(free[0])
        rejected[j] = True
        level[j] = w[j] * alpha
        for k in range(Q):
            if not rejected[k]:
                w[k] += w[j] * G[j, k]
        G2 = np.zeros_like(G)
        for k in range(Q):
            for m in range(Q):
                if k == m or rejected[k] or rejected[m]:
                    continue
                den = 1.0 - G[k, j] * G[j, k]
                G2[k, m] = (G[k, m] + G[k, j] * G[j, m]) / den if den > 0 else 0.0
        G = G2
        w[j] = 0.0
    out = np.where(rejected, level, w * alpha)
    return rejected, out


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
            "the copies cannot reach the level of this test: no verdict; increase --n-mc")
    if not f.any():
        return "valid", ""
    rej = ", ".join(lab for lab, k in zip(labels, r, strict=True) if k)
    acc = ", ".join(lab for lab, k in zip(labels, r, strict=True) if not k)
    return "inconclusive", (f"rejected under {rej}, but not under {acc}: the conclusion "
                            "depends on the generative distribution of the errors")
