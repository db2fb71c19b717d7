"""The decision design (uqx.engine.questions): one graph of node tests, closed min-p.

Each kernel against a slow, obvious twin, and the family-wise claims it rests on
measured on p-values of known law."""

import itertools

import numpy as np
import pytest

from uqx.engine.mctest import copy_pvalues, mc_pvalue
from uqx.engine.questions import (
    ALPHA_RESULT,
    NODES,
    QUESTION_SHARE,
    QUESTIONS,
    closed_minp,
    critical_value,
    decide_set,
    intersection_weights,
    member_verdict,
    node_graph,
    node_statistic,
    question_pvalue,
)

NAMES = [n.name for n in NODES]


def _weights_twin(w, G, keep, order):
    """Intersection weights by removing the nodes outside ``keep`` in the given order."""
    w, G = np.array(w, float), np.array(G, float)
    alive = list(range(len(w)))
    for j in order:
        if keep[j]:
            continue
        alive.remove(j)
        w, G = _remove_node(w, G, j, alive)
    return w


def _remove_node(w, G, j, alive):
    """Bretz et al. (2009), Algorithm 1, one node j out: its weight and edges passed on."""
    w = w.copy()
    for k in alive:
        w[k] += w[j] * G[j, k]
    G2 = np.zeros_like(G)
    for k in alive:
        for m in alive:
            if k != m:
                den = 1 - G[k, j] * G[j, k]
                G2[k, m] = (G[k, m] + G[k, j] * G[j, m]) / den if den > 0 else 0.0
    w[j] = 0.0
    return w, G2


def _closed_twin(p, pc, w, G):
    """Closed testing written from its definition: every intersection, one at a time."""
    Q, n = pc.shape
    live = [j for j in range(Q) if np.isfinite(p[j])]
    keep0 = np.isfinite(p)
    w0 = _weights_twin(w, G, keep0, list(range(Q)))
    # the reduced graph: remove the absent nodes once, keep the transitions
    adj = np.full(Q, np.nan)
    for i in live:
        worst = 0.0
        for r in range(1, len(live) + 1):
            for J in itertools.combinations(live, r):
                if i not in J:
                    continue
                keep = np.zeros(Q, bool)
                keep[list(J)] = True
                wJ = _weights_twin(w, G, keep, list(range(Q))[::-1])
                use = [j for j in J if wJ[j] > 0]
                if not use:
                    pJ = 1.0
                else:
                    T = min(p[j] / wJ[j] for j in use)
                    mins = [min(pc[j, k] / wJ[j] for j in use) for k in range(n)]
                    pJ = (1 + sum(m <= T for m in mins)) / (1 + n)
                worst = max(worst, pJ)
        adj[i] = worst
    assert np.all(w0 >= 0)
    return adj


def test_intersection_weights_do_not_depend_on_the_order_of_removal():
    rng = np.random.default_rng(1)
    w, G = node_graph(NAMES)
    for _ in range(50):
        keep = rng.uniform(size=len(NAMES)) < 0.5
        order = rng.permutation(len(NAMES)).tolist()
        np.testing.assert_allclose(intersection_weights(w, G, keep),
                                   _weights_twin(w, G, keep, order), atol=1e-12)
        assert intersection_weights(w, G, keep).sum() <= 1 + 1e-12


def test_closed_minp_is_its_slow_twin():
    rng = np.random.default_rng(7)
    names = ["scale", "bias", "consistency", "ranking", "up_to_factor"]
    w, G = node_graph(names)
    for _ in range(12):
        n = 39
        pc = np.round(rng.uniform(size=(5, n)), 2)  # ties on purpose
        p = np.round(rng.uniform(0, 0.2, 5), 3)
        if rng.uniform() < 0.3:
            p[int(rng.integers(5))] = np.nan  # an absent node
        np.testing.assert_allclose(closed_minp(p, pc, w, G), _closed_twin(p, pc, w, G))


def test_rejections_do_not_depend_on_the_order_of_the_nodes():
    """The same p-values once gave a question 4.25 % or 7.39 % by the order of the nodes."""
    rng = np.random.default_rng(12)
    for _ in range(20):
        p = rng.uniform(0, 0.06, len(NAMES))
        pc = rng.uniform(size=(len(NAMES), 199))
        ref = dict(zip(NAMES, closed_minp(p, pc, *node_graph(NAMES)), strict=True))
        for perm in itertools.islice(itertools.permutations(range(len(NAMES))), 0, 5040, 997):
            names = [NAMES[k] for k in perm]
            got = closed_minp(p[list(perm)], pc[list(perm)], *node_graph(names))
            for name, a in zip(names, got, strict=True):
                assert a == pytest.approx(ref[name])


def _bonferroni_graph(p, w, G, alpha):
    """The sequentially rejective graph of Bretz et al. 2009 (Bonferroni local tests)."""
    w, G = np.array(w, float), np.array(G, float)
    rej = np.zeros(len(p), bool)
    while True:
        free = [j for j in range(len(p)) if not rej[j] and p[j] <= w[j] * alpha]
        if not free:
            return rej
        j = free[0]
        rej[j] = True
        w, G = _remove_node(w, G, j, [k for k in range(len(p)) if not rej[k]])


def test_closed_minp_controls_the_family_and_beats_bonferroni():
    """Correlated statistics under the global null: an `invalid` anywhere at most α of
    the time; under alternatives it rejects at least as often as the Bonferroni graph."""
    rng = np.random.default_rng(4)
    names = ["scale", "bias", "consistency", "adaptivity_X", "ranking"]
    w, G = node_graph(names)
    n_sets, n = 600, 199
    fw = 0
    power_minp = power_bonf = 0
    for _ in range(n_sets):
        base = rng.normal(size=n + 1)
        x = np.stack([base + 0.7 * rng.normal(size=n + 1) for _ in names])
        po, pc = mc_pvalue(x[:, 0], x[:, 1:], 1), copy_pvalues(x[:, 1:], 1)
        fw += np.any(closed_minp(po, pc, w, G) <= ALPHA_RESULT)
        x[2, 0] += 2.2  # consistency off
        po = mc_pvalue(x[:, 0], x[:, 1:], 1)
        power_minp += closed_minp(po, pc, w, G)[2] <= ALPHA_RESULT
        power_bonf += _bonferroni_graph(po, w, G, ALPHA_RESULT)[2]
    assert fw / n_sets <= ALPHA_RESULT + 3 * np.sqrt(0.09 / n_sets), fw / n_sets
    assert power_minp >= power_bonf, (power_minp, power_bonf)


def _decide_twin(p, pc, alpha):
    """decide_set's adjusted p-values of one member from their definition: the closed
    test's, or the node's question's own min-p over its share of alpha, the larger."""
    names = [n.name for n in NODES]
    on = [j for j in range(len(NODES)) if np.isfinite(p[j])]
    w, G = np.zeros(len(NODES)), np.zeros((len(NODES), len(NODES)))
    w[on], G[np.ix_(on, on)] = node_graph([names[j] for j in on])
    adj = _closed_twin(p, pc, w, G)
    for q in QUESTIONS:
        ks = [j for j in on if NODES[j].question == q]
        if not ks:
            continue
        if len(ks) == 1:
            own = p[ks[0]]
        else:  # the min-p of the question's nodes over the copies where all are finite
            T = min(p[k] for k in ks)
            mins = [min(pc[k, c] for k in ks) for c in range(pc.shape[1])]
            own = (1 + sum(m <= T for m in mins)) / (1 + len(mins))
        for k in ks:
            adj[k] = min(max(adj[k], own / QUESTION_SHARE), 1.0)
    return adj, adj <= alpha


def test_decide_set_is_its_slow_twin():
    """The fast decision (each intersection's copy minima sorted once, counted by binary
    search; the question's own test) against the definitions written out."""
    rng = np.random.default_rng(17)
    for _ in range(10):
        n = 59
        pc = np.round(rng.uniform(size=(len(NODES), n)), 2)  # ties on purpose
        p = np.round(rng.uniform(0, 0.12, len(NODES)), 3)
        p[int(rng.integers(3))] = 0.9  # its question's own p over the share passes 1
        p[[3, 4, 6]] = np.nan  # no feature, no factor
        if rng.uniform() < 0.4:
            p[int(rng.integers(3))] = np.nan
        dec = decide_set(p[:, None], pc[:, None], np.ones((len(NODES), 1), bool),
                         np.full(len(NODES), 1 / (n + 1)), ALPHA_RESULT)
        adj, rej = _decide_twin(p, pc, ALPHA_RESULT)
        np.testing.assert_allclose(dec.adjusted[:, 0], adj)
        assert np.nanmax(dec.adjusted) <= 1.0
        np.testing.assert_array_equal(dec.rejected[:, 0], rej & np.isfinite(adj))


def test_question_pvalue_is_the_min_p_of_its_nodes():
    rng = np.random.default_rng(3)
    pc = rng.uniform(size=(2, 999))
    assert question_pvalue([0.2], pc[:1]) == 0.2
    p = question_pvalue([0.02, 0.4], pc)
    assert p == (1 + np.sum(pc.min(axis=0) <= 0.02)) / 1000
    assert 0.02 < p < 0.06  # about twice the smaller p-value: two looks


def test_each_question_alone_keeps_its_share_of_alpha(monkeypatch):
    """Nodes whose statistics move together: the joint calibration of the closed test
    gives the heaviest node (consistency) all of alpha; its question's own test at
    QUESTION_SHARE * alpha keeps each printed question verdict at that level."""
    rng = np.random.default_rng(21)
    n_copies, n_sets = 199, 600
    present = [0, 1, 2, 5]  # scale, bias, consistency, ranking
    draws = []  # per set: its own copies, and the set itself as one more draw
    for _ in range(n_sets):
        x = rng.normal(size=n_copies + 1)
        x = np.stack([x + 0.05 * rng.normal(size=x.size) for _ in present])
        p, pc = np.full(len(NODES), np.nan), np.full((len(NODES), n_copies), np.nan)
        p[present] = mc_pvalue(x[:, -1], x[:, :-1], 1)
        pc[present] = copy_pvalues(x[:, :-1], 1)
        draws.append((p, pc))

    def rate(share):
        monkeypatch.setattr("uqx.engine.questions.QUESTION_SHARE", share)
        hits = np.zeros(len(NODES))
        for p, pc in draws:
            d = decide_set(p[:, None], pc[:, None], np.ones((len(NODES), 1), bool),
                           np.full(len(NODES), 1 / (n_copies + 1)), ALPHA_RESULT)
            hits += d.rejected[:, 0]
        return hits / n_sets

    capped, closed_only = rate(QUESTION_SHARE), rate(1.0)
    se = np.sqrt(0.05 * 0.95 / n_sets)
    assert capped[2] <= QUESTION_SHARE * ALPHA_RESULT + 2.5 * se, capped
    assert closed_only[2] > QUESTION_SHARE * ALPHA_RESULT + 2.5 * se, closed_only
    assert np.all(capped <= closed_only)


def test_critical_value_is_where_the_weighted_minimum_rejects():
    rng = np.random.default_rng(10)
    w = np.array([0.5, 0.3, 0.2])
    for level in (0.05, 0.01, 0.1):
        pc = rng.uniform(size=(3, 999))
        c = critical_value(pc, w, level)
        m = np.min(pc / w[:, None], axis=0)
        for _ in range(100):
            po = rng.uniform(0, 0.02, 3)
            T = np.min(po / w)
            if np.isclose(T, c):
                continue
            assert ((1 + np.sum(m <= T)) / 1000 < level) == (T < c)
    assert critical_value(rng.uniform(size=(2, 9)), [1, 1], 0.05) == 0.0  # out of reach


@pytest.mark.parametrize("names, shares", [
    (["scale", "bias", "consistency", "adaptivity_X", "ranking", "up_to_factor"],
     [0.2125, 0.2125, 0.425, 0.1, 0.05, 0.0]),
    (["scale", "bias", "consistency", "adaptivity_X", "adaptivity_V"],
     [0.2125, 0.2125, 0.425, 0.05, 0.05]),
    (["ranking"], [0.05]),  # never above its own share: an absent node gives nothing
])
def test_node_graph_shares(names, shares):
    w, G = node_graph(names)
    np.testing.assert_allclose(w, shares)
    assert w.sum() <= 1 + 1e-12 and np.all(G.sum(axis=1) <= 1 + 1e-12)
    assert np.all(np.diag(G) == 0)


def test_up_to_factor_is_rejected_only_with_the_scale():
    names = ["scale", "bias", "consistency", "up_to_factor"]
    w, G = node_graph(names)
    rng = np.random.default_rng(3)
    pc = rng.uniform(size=(4, 999))
    kept = closed_minp([0.5, 0.5, 0.5, 0.0005], pc, w, G)
    assert kept[3] > ALPHA_RESULT  # scale not rejected: up_to_factor has no level
    both = closed_minp([0.0005, 0.5, 0.5, 0.0005], pc, w, G)
    assert both[0] <= ALPHA_RESULT and both[3] <= ALPHA_RESULT


def test_node_statistic_prefers_the_declared_one_then_its_fallbacks():
    cons = next(n for n in NODES if n.name == "consistency")
    asked = [("zms", None), ("ence", "uE"), ("zve", "uE"), ("zms_scan", "X")]
    assert node_statistic(cons, asked) == 1  # no zms_scan on uE: ENCE, never ZVE
    assert node_statistic(cons, asked + [("zms_scan", "uE")]) == 4
    assert node_statistic(cons, [("zve", "uE")]) is None  # ZVE's null is another one


def test_decide_set_says_when_the_copies_cannot_reach():
    """Nine copies cannot reject anything at a 5 % share: no `valid` may be claimed."""
    rng = np.random.default_rng(5)
    p = np.array([[0.5], [0.5], [0.5], [np.nan], [np.nan], [0.5], [np.nan]])
    dec = decide_set(p, rng.uniform(size=(7, 1, 9)), np.ones((7, 1), bool), np.full(7, 0.1))
    assert not dec.reachable[5]
    dec = decide_set(p, rng.uniform(size=(7, 1, 999)), np.ones((7, 1), bool),
                     np.full(7, 0.001))
    assert dec.reachable[[0, 1, 2, 5]].all() and not dec.rejected.any()
    assert np.all(dec.threshold[[0, 1, 2, 5], 0] > 0)


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


# ------------------------------------------------------------------ the claims it prints


def _bias_sets(n, M=2000, seed=43):
    """u² ~ IG(3, 3), Z = 0.3 + √0.91 ε: E[Z² | uE] = 1 at every uE, a pure bias."""
    import uqx

    out = []
    for k in range(n):
        rng = np.random.default_rng(seed + k)
        u = np.sqrt(3.0 / rng.gamma(3.0, 1.0, M))
        z = 0.3 + np.sqrt(0.91) * rng.standard_normal(M)
        out.append(uqx.from_arrays(z * u, u, name=f"b{k}"))
    return uqx.stack(out)


def test_a_pure_bias_is_a_bias_not_an_inconsistency():
    """Under the former rule ZVE (null Var(Z | uE) = 1, which a bias breaks) decided
    consistency (null E[Z² | uE] = 1, true here) on 11 % of such sets, and the summary
    advised an isotonic recalibration. ZVE is now a diagnostic; the consistency node reads
    ZMS_scan; the summary names the bias."""
    import uqx
    from uqx.text.summary import summary_lines

    res = uqx.validate(_bias_sets(3), bootstrap=200, copies=500, conditional=False,
                       compute=uqx.Compute(seed=1))
    assert set(res["verdict"].sel(stat="zve").values) == {"diagnostic"}
    assert set(res["verdict"].sel(stat="mean_z").values) == {"invalid"}
    assert set(res["question_verdict"].sel(question="average").values) == {"invalid"}
    assert "invalid" not in set(res["question_verdict"].sel(question="consistency").values)
    assert set(res["question_tests"].sel(question="consistency").values) == {"ZMS_SCAN"}
    for line in summary_lines(res):
        assert "correct the bias of the predictions" in line
        assert "recalibrate uE conditionally" not in line and "isotonic" not in line


def test_level_sets_the_intervals_only_and_alpha_the_family():
    """Finding 6: `level` set the family-wise level (α = 2(1 - level))."""
    import uqx

    ds = _bias_sets(1, M=500).isel(set=[0])
    r = uqx.validate(ds, ["zms", "mean_z"], bootstrap=uqx.Bootstrap(n_boot=200, level=0.8),
                     copies=200, conditional=False, decision=uqx.Decision(resolution=False),
                     compute=uqx.Compute(seed=1))
    assert r.attrs["alpha_result"] == pytest.approx(ALPHA_RESULT)
    assert float(np.nanmax(r["question_level"].values)) == pytest.approx(ALPHA_RESULT)
    r = uqx.validate(ds, ["zms", "mean_z"], bootstrap=200, copies=200, conditional=False,
                     decision=uqx.Decision(alpha=0.05, resolution=False),
                     compute=uqx.Compute(seed=1))
    assert float(np.nanmax(r["question_level"].values)) == pytest.approx(0.05)
    with pytest.raises(uqx.InputError, match="alpha"):
        uqx.validate(ds, ["zms"], bootstrap=200, copies=200, decision=uqx.Decision(alpha=0.7),
                     compute=uqx.Compute(seed=1))


def test_a_valid_states_its_resolution_or_reads_inconclusive():
    """Finding 4: "Ranking valid (no resolution)" where uE say nothing of the errors."""
    import uqx
    from uqx.text.summary import summary_lines
    from uqx.workflow.resolutions import NO_RESOLUTION

    rng = np.random.default_rng(8)
    M = 300
    u = 1.0 + 0.01 * rng.uniform(size=M)  # uE carry no information: CC has no power
    ds = uqx.from_arrays(u * rng.standard_normal(M), u, name="flat")
    r = uqx.validate(ds, ["zms", "cc"], bootstrap=200, copies=1000, conditional=False,
                     compute=uqx.Compute(seed=1))
    q = r.sel(set="flat", question="ranking")
    assert q["question_verdict"].item() == "inconclusive"
    assert q["question_reason"].item() == NO_RESOLUTION
    assert r["verdict"].sel(set="flat", stat="cc").item() == "inconclusive"
    text = summary_lines(r)[0]
    assert "no resolution)" not in text and "Ranking valid" not in text
    for q, v in zip(r["question"].values, r["question_verdict"].values[0], strict=True):
        if v == "valid":  # every valid that is printed states a resolution
            lo, hi, a, b = (float(r[f"question_resolution_{k}"].sel(question=q).values[0])
                            for k in ("low", "high", "spread_low", "spread_high"))
            assert np.isfinite([lo, hi, a, b]).any(), q


def test_binned_statistics_print_their_calibrated_band_not_a_bootstrap_interval():
    """Finding 3: `ence 0.0271 [0.0257, 0.0258]`: zero-width intervals excluding their
    own estimate. The text prints `cal. [a, b]` for a binned statistic."""
    import uqx
    from uqx.text.console import format_validation

    rng = np.random.default_rng(3)
    u = np.sqrt(3.0 / rng.gamma(3.0, 1.0, 1000))
    ds = uqx.from_arrays(u * rng.standard_normal(1000), u, name="cal")
    r = uqx.validate(ds, ["zms", "ence", "zmse", "zms_scan"], bootstrap=200, copies=300,
                     conditional=False, decision=uqx.Decision(resolution=False),
                     compute=uqx.Compute(seed=1))
    text = format_validation(r)
    for st in ("ence", "zmse", "zms_scan"):
        row = next(line for line in text.splitlines() if f" {st} " in f" {line} ")
        assert "cal. [" in row, row
        lo, hi = (float(r[k].sel(set="cal", stat=st)) for k in ("null_band_low",
                                                                "null_band_high"))
        assert lo < hi
    row = next(line for line in text.splitlines() if " zms " in f" {line} ")
    assert "cal. [" not in row and "[" in row  # ZMS keeps its BCa interval


@pytest.mark.data
def test_a_rejection_withdrawn_by_the_tails_leaves_its_question_open(data_dir):
    """A node rejected under a member whose tails the family does not represent reads
    `inconclusive` with that reason, and so does its question: its rejection passes no
    share on, and the question is not `valid` (PAL2022's Perovskite_GPR_Bayesian, kappa_cs
    of Z^2 = 22.8: ranking read `valid` from the second pass of the decision)."""
    import uqx

    ds = uqx.load_dataset("Perovskite_GPR_Bayesian", data_dir=data_dir)
    r = uqx.validate(ds, ["zms", "mean_z", "cc", "zms_scan"], bootstrap=200, copies=1000,
                     conditional=False, decision=uqx.Decision(resolution=False),
                     compute=uqx.Compute(seed=1))
    assert "safety limit" in r["verdict_reason"].sel(stat="cc").item()
    q = r.sel(question="ranking")
    assert q["question_verdict"].item() == "inconclusive"
    assert "safety limit" in q["question_reason"].item()
    for st, qn in (("zms_scan", "consistency"), ("cc", "ranking")):
        if r["verdict"].sel(stat=st).item() != "valid":  # never a valid question beside it
            assert r["question_verdict"].sel(question=qn).item() != "valid"


def test_the_command_line_sets_alpha_apart_from_the_intervals(tmp_path):
    """`uqx validate --alpha` is the family-wise level; the intervals stay at 95 %."""
    import uqx
    from uqx.cli import main

    rng = np.random.default_rng(2)
    u = rng.uniform(0.5, 2.0, 400)
    path = tmp_path / "d.csv"
    path.write_text("E,uE\n" + "\n".join(f"{e:.6g},{s:.6g}" for e, s in zip(
        u * rng.standard_normal(400), u, strict=True)) + "\n")
    out = tmp_path / "r.nc"
    assert main(["-q", "validate", str(path), "--stats", "zms", "--n-boot", "200", "--n-mc",
                 "200", "--seed", "1", "--alpha", "0.05", "--no-conditional", "-o",
                 str(out)]) == 0
    r = uqx.read_netcdf(out)
    assert r.attrs["alpha_result"] == pytest.approx(0.05) and r.attrs["level"] == 0.95


def test_one_rule_says_which_rejections_read_the_halves_of_the_uE_order():
    """CC and the statistics binned on uE: a rejection needs each half of the uE order to
    show its tails, both to pass its share on and to stand; the moments and X do not."""
    from uqx.engine.statistic import parse_stat
    from uqx.workflow.products import reads_halves as _reads_halves

    assert _reads_halves(parse_stat("cc"))
    assert _reads_halves(parse_stat("zms_scan")) and _reads_halves(parse_stat("ence"))
    assert not _reads_halves(parse_stat("zms")) and not _reads_halves(parse_stat("mean_z"))
    assert not _reads_halves(parse_stat("zms_scan_X"))
