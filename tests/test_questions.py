"""The decision design (uqx.engine.questions): each kernel against a slow, obvious twin,
and the family-wise claims it rests on measured on p-values of known law."""

import itertools

import numpy as np
import pytest

from uqx.engine.mctest import copy_pvalues, mc_pvalue
from uqx.engine.questions import (
    ALPHA_RESULT,
    critical_value,
    graph_procedure,
    member_verdict,
    question_graph,
    weighted_stepdown,
)


def _stepdown_twin(po, pc, w):
    """Weighted step-down min-p written from its definition, one step at a time."""
    T, n = pc.shape
    live = [t for t in range(T) if np.isfinite(po[t])]
    order = sorted(live, key=lambda t: po[t] / w[t])
    out, run = np.full(T, np.nan), 0.0
    for s, t in enumerate(order):
        left = order[s:]
        mins = [min(pc[r, k] / w[r] for r in left) for k in range(n)]
        run = max(run, (1 + sum(v <= po[t] / w[t] for v in mins)) / (1 + n))
        out[t] = run
    return out


def test_weighted_stepdown_is_its_slow_twin():
    rng = np.random.default_rng(7)
    for _ in range(30):
        T, n = int(rng.integers(1, 6)), 49
        pc = np.round(rng.uniform(size=(T, n)), 2)  # ties on purpose
        po = np.round(rng.uniform(0, 0.3, T), 2)
        w = rng.choice([1.0, 0.5, 0.25, 0.1], T)
        np.testing.assert_allclose(weighted_stepdown(po, pc, w), _stepdown_twin(po, pc, w))


def test_weighted_stepdown_leaves_out_absent_tests():
    rng = np.random.default_rng(8)
    pc = rng.uniform(size=(3, 99))
    got = weighted_stepdown([0.01, 0.2, np.nan], pc, [1.0, 1.0, 1.0])
    first = (1 + np.sum(pc[:2].min(axis=0) <= 0.01)) / 100  # the NaN test is no member
    second = max(first, (1 + np.sum(pc[1] <= 0.2)) / 100)
    np.testing.assert_allclose(got[:2], [first, second])
    assert np.isnan(got[2])
    assert np.isnan(weighted_stepdown([np.nan, np.nan], np.zeros((2, 5)), [1, 1])).all()


def test_headline_has_the_size_of_one_test():
    """Three correlated statistics: the calibrated min-p (the first step) rejects ~5 %,
    the raw minimum of their p-values far more."""
    rng = np.random.default_rng(4)
    n_sets, n = 1500, 199
    base = rng.normal(size=(n_sets, n + 1))
    stats = np.stack([base + 0.8 * rng.normal(size=base.shape) for _ in range(3)], axis=1)
    rej = raw = 0
    for s in range(n_sets):
        po = mc_pvalue(stats[s, :, 0], stats[s, :, 1:], 1)
        head = np.nanmin(weighted_stepdown(po, copy_pvalues(stats[s, :, 1:], 1), [1, .25, .1]))
        rej += head < 0.05
        raw += po.min() < 0.05
    assert rej / n_sets < 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_sets), rej / n_sets
    assert raw / n_sets > 0.08


def test_stepdown_controls_the_family_and_never_exceeds_single_step():
    rng = np.random.default_rng(9)
    n_sets, n, hits = 1500, 199, 0
    for _ in range(n_sets):
        x = rng.normal(size=(4, n + 1))
        po, pc = mc_pvalue(x[:, 0], x[:, 1:], 1), copy_pvalues(x[:, 1:], 1)
        adj = weighted_stepdown(po, pc, [1.0, 0.5, 0.25, 0.25])
        s, sc = po / [1.0, 0.5, 0.25, 0.25], pc / np.array([1.0, 0.5, 0.25, 0.25])[:, None]
        single = (1 + np.sum(sc.min(axis=0)[None, :] <= s[:, None], axis=1)) / (1 + n)
        assert np.all(adj <= single + 1e-15)
        hits += np.any(adj < 0.1)
    assert hits / n_sets < 0.1 + 3 * np.sqrt(0.09 / n_sets), hits / n_sets


def test_critical_value_is_where_the_headline_rejects():
    """min_t p_t/w_t < c exactly when the headline's p-value is below the level."""
    rng = np.random.default_rng(10)
    w = np.array([1.0, 0.25, 0.1])
    for level in (0.0425, 0.01, 0.1):
        pc = rng.uniform(size=(3, 999))
        c = critical_value(pc, w, level)
        for _ in range(200):
            po = rng.uniform(0, 0.02, 3)
            head = np.nanmin(weighted_stepdown(po, pc, w))
            if np.isclose(np.min(po / w), c):
                continue
            assert (head < level) == (np.min(po / w) < c), (level, po, c, head)
    assert critical_value(rng.uniform(size=(2, 9)), [1, 1], 0.05) == 0.0  # out of reach


def _holm(p, alpha):
    order, rej = np.argsort(p), np.zeros(len(p), dtype=bool)
    for i, j in enumerate(order):
        if p[j] >= alpha / (len(p) - i):
            break
        rej[j] = True
    return rej


def test_graph_with_equal_weights_and_a_complete_graph_is_holm():
    rng = np.random.default_rng(11)
    for _ in range(300):
        Q = int(rng.integers(2, 6))
        p = rng.uniform(0, 0.08, Q)
        G = (np.ones((Q, Q)) - np.eye(Q)) / (Q - 1)
        rej, _ = graph_procedure(p, np.full(Q, 1 / Q), G, alpha=0.1)
        np.testing.assert_array_equal(rej, _holm(p, 0.1))


def test_graph_rejections_do_not_depend_on_the_order_of_the_questions():
    rng = np.random.default_rng(12)
    names = ["average", "consistency", "adaptivity_X", "ranking", "up_to_factor"]
    for _ in range(100):
        p = dict(zip(names, rng.uniform(0, 0.06, len(names)), strict=True))
        first = None
        for perm in itertools.islice(itertools.permutations(names), 0, 120, 17):
            w, G = question_graph(perm)
            rej, _ = graph_procedure([p[q] for q in perm], w, G)
            got = {q for q, r in zip(perm, rej, strict=True) if r}
            assert first is None or got == first
            first = got


def test_graph_controls_the_family_wise_rate():
    """Independent uniform p-values under the global null: an `invalid` somewhere at most
    ALPHA_RESULT of the time (weighted Bonferroni at the first step, Holm after)."""
    rng = np.random.default_rng(13)
    names = ["average", "consistency", "adaptivity_X", "ranking", "up_to_factor"]
    w, G = question_graph(names)
    n = 20000
    hits = sum(graph_procedure(rng.uniform(size=5), w, G)[0].any() for _ in range(n))
    assert hits / n <= ALPHA_RESULT + 3 * np.sqrt(0.09 / n), hits / n


@pytest.mark.parametrize("names, shares", [
    (["average", "consistency", "adaptivity_X", "ranking", "up_to_factor"],
     [0.425, 0.425, 0.1, 0.05, 0.0]),
    (["average", "consistency"], [0.5, 0.5]),
    (["average"], [0.5]),  # never above one test's level
    (["consistency", "adaptivity_X", "adaptivity_V"], [0.45, 0.05, 0.05]),
    (["ranking"], [0.5]),
])
def test_question_graph_shares(names, shares):
    w, G = question_graph(names)
    np.testing.assert_allclose(w, shares)
    assert w.sum() <= 1 + 1e-12 and np.all(G.sum(axis=1) <= 1 + 1e-12)
    assert np.all(np.diag(G) == 0)


def test_up_to_factor_is_asked_only_after_average_is_rejected():
    names = ["average", "consistency", "up_to_factor"]
    w, G = question_graph(names)
    rej, lev = graph_procedure([0.5, 0.5, 0.0], w, G)  # average kept: never asked
    assert not rej[2] and lev[2] == 0
    rej, lev = graph_procedure([0.001, 0.5, 0.001], w, G)
    assert rej[0] and rej[2] and lev[2] == pytest.approx(0.5 * w[0] * ALPHA_RESULT)


@pytest.mark.parametrize("rejected, firm, reach, verdict", [
    ([1, 1, 1, 1], None, True, "invalid"),
    ([1, 1, 1, 1], None, False, "invalid"),  # a rejection needs no reach
    ([0, 0, 0, 0], None, True, "valid"),
    ([0, 0, 0, 0], None, False, "inconclusive"),  # a `valid` does
    ([1, 0, 0, 0], [0, 0, 0, 0], True, "valid"),  # within the Monte-Carlo noise
    ([1, 0, 0, 0], [1, 0, 0, 0], True, "inconclusive"),
])
def test_member_verdict(rejected, firm, reach, verdict):
    labels = ["N", "T6", "fit", "data"]
    v, why = member_verdict(np.array(rejected, bool), labels,
                            firm=None if firm is None else np.array(firm, bool),
                            reachable=reach)
    assert v == verdict
    if v == "inconclusive":
        assert why


def test_member_verdict_counts_only_the_members_that_take_part():
    v, why = member_verdict(np.array([1, 0, 1, 1], bool), ["N", "T6", "fit", "data"],
                            use=np.array([1, 0, 1, 1], bool))
    assert v == "invalid"
    v, why = member_verdict(np.array([1, 0], bool), ["N", "T6"], use=np.array([0, 0], bool))
    assert v == "inconclusive" and "no member" in why
