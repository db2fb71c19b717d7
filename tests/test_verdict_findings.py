"""Findings on an earlier rule (resolutions, members, shapes), each a test that failed then.

1. the consistency headline's resolution over-claimed (twins at the stated factor were
   `valid` on 29 % of sets): ``test_consistency_resolution_holds_on_twins`` (slow; the
   benchmark ``benchmarks/bench_resolution_twins.py`` checks every claim);
2. the realistic top-decile failure was caught too rarely:
   ``test_top_decile_of_the_true_u_is_caught`` (slow);
3. a headline contradicted its routes: ``test_questions_and_statistics_are_consonant``;
4. claims in the text: ``test_every_valid_states_a_resolution``,
   ``test_tolerance_says_what_is_within``, ``test_up_to_a_factor_has_its_size``;
5. ⟨Z⟩ called a scale error a bias: ``test_scale_error_is_not_a_bias``;
6. the published rates: tests/test_docs.py (the seeds and cell sizes of the tables).
"""

import numpy as np
import pytest

import uqx
from uqx.sweeps.error_rates import synthetic_set

FAST = dict(bootstrap=200, copies=500, compute=uqx.Compute(seed=36))


def _consonance_sets():
    sets = []
    for scen in ("top0.6", "top0.6-true", "gamma0.5"):
        for i in range(10):
            E, u, X = synthetic_set("ig6_t6", scen, 1000, seed=36, index=i)
            sets.append(uqx.from_arrays(E, u, name=f"{scen}-{i}"))
    return uqx.stack(sets)


def test_questions_and_statistics_are_consonant():
    """No statistic `invalid` beside a question that is not; no `valid` question beside one.

    On the previous rule 4 of these 30 sets (t_s(6) errors, M = 1000, uE too small in its
    top decile, the top decile of the true u reported too small, uE ∝ u^0.5) had the
    consistency headline `inconclusive` beside an `invalid` route.
    """
    res = uqx.validate(_consonance_sets(), decision=uqx.Decision(resolution=False), **FAST)
    stats = [str(s) for s in res["stat"].values]
    routes = [j for j, s in enumerate(stats) if s in ("ence", "zmse", "zmse_max", "zms_scan",
                                                        "zve")]
    head = (res["question_verdict"].sel(question="consistency").values if "question" in res.dims
            else res["cond_verdict"].sel(cond="uE").values)  # the previous rule's headline
    for i in range(res.sizes["set"]):
        rv = [str(res["verdict"].values[i, j]) for j in routes]
        assert not ("invalid" in rv and head[i] != "invalid"), (i, head[i], rv)
    from uqx.engine.questions import question_of
    from uqx.engine.statistic import parse_stat

    qs = [str(q) for q in res["question"].values]
    for i in range(res.sizes["set"]):
        for j, name in enumerate(stats):
            s = parse_stat(name)
            q = question_of(s.family, s.cond)
            v = str(res["verdict"].values[i, j])
            qv = str(res["question_verdict"].values[i, qs.index(q)])
            assert not (v == "invalid" and qv != "invalid"), (i, name, v, q, qv)
            assert not (qv == "valid" and v == "invalid"), (i, name, v, q, qv)
        fv = res["factor_verdict"].values[i]
        fq = str(res["question_verdict"].values[i, qs.index("up_to_factor")])
        assert not ("invalid" in fv and fq != "invalid"), (i, list(fv), fq)


def _halved(i, M=1500):
    """Unbiased normal errors whose uE is half the true uncertainty."""
    rng = np.random.default_rng([36, 5, i])
    u = np.exp(rng.normal(0.0, 0.4, M))
    return uqx.from_arrays(u * rng.standard_normal(M), u / 2, name=f"half{i}")


@pytest.mark.parametrize("stats", [["mean_z"], None])
def test_scale_error_is_not_a_bias(stats):
    """uE half the true uncertainty, no bias: ⟨Z⟩ was `invalid` on 5 of 20 sets.

    Its copies had unit variance, so ⟨Z⟩ of data with Var Z = 4 looked extreme; the test
    now reads the studentised mean, whose null is "no bias whatever the scale".
    """
    ds = uqx.stack([_halved(i) for i in range(20)])
    kw = {} if stats is None else {"stats": stats}
    res = uqx.validate(ds, conditional=False, decision=uqx.Decision(resolution=False), **kw,
                       **FAST)
    mz = res["verdict"].sel(stat="mean_z").values
    assert (mz == "invalid").sum() <= 2, list(mz)
    if stats is None:  # the scale error itself is found
        assert (res["verdict"].sel(stat="zms").values == "invalid").all()


def test_every_valid_states_a_resolution():
    """A `valid` (statistic or question) comes with its resolution: CC and adaptivity too.

    On the previous rule a CC `valid` came with NaN, and the adaptivity headline stated none.
    """
    rng = np.random.default_rng(361)
    M = 1500
    u = np.sqrt(1 / rng.gamma(3.0, 1 / 3.0, M))
    ds = uqx.from_arrays(u * rng.standard_normal(M), u, X=rng.uniform(size=M), name="cal")
    res = uqx.validate(ds, **FAST).isel(set=0)
    for j, s in enumerate(str(x) for x in res["stat"].values):
        if str(res["verdict"].values[j]) != "valid":
            continue
        vals = [float(res[k].values[j]) for k in ("resolution_low", "resolution_high",
                                                  "resolution_spread_low",
                                                  "resolution_spread_high")]
        assert np.isfinite(vals).any(), (s, vals)
    assert str(res["verdict"].sel(stat="cc").item()) == "valid"
    assert np.isfinite(float(res["resolution_spread_low"].sel(stat="cc")))
    for q in ("average", "consistency", "adaptivity_X", "ranking"):
        r = res.sel(question=q)
        assert str(r["question_verdict"].item()) == "valid", q
        vals = [float(r[k]) for k in ("question_resolution_low", "question_resolution_high",
                                      "question_resolution_spread_low")]
        assert np.isfinite(vals).any(), (q, vals)


def test_tolerance_says_what_is_within():
    """`--tolerance` printed "uE right within T", but its TOST covers the average scale only."""
    from uqx.text.tables import scale_factor_text

    rng = np.random.default_rng(362)
    M = 2000
    u = np.sqrt(1 / rng.gamma(3.0, 1 / 3.0, M))
    # gamma = 0.5 with the mean square kept: ZMS about 1, uE wrong in shape
    uE = np.sqrt(u) * np.sqrt(np.mean(u * u) / np.mean(u))
    ds = uqx.from_arrays(u * rng.standard_normal(M), uE, name="g05")
    full = uqx.validate(ds, conditional=False, decision=uqx.Decision(tolerance=0.1), **FAST)
    res = full.isel(set=0)
    text = scale_factor_text(res)
    # the line users read (uqx validate's text) is this one
    from uqx.text.console import format_validation

    assert text in " ".join(format_validation(full).split()), text
    if float(res["scale_within_tolerance"]) == 1:
        assert "on average" in text and "right within" not in text, text
        assert "consistency" in text, text
    assert str(res["question_verdict"].sel(question="consistency").item()) == "invalid"


@pytest.mark.slow
def test_up_to_a_factor_has_its_size():
    """Data that one factor fixes: the test of "consistent up to a factor" keeps its size.

    On the previous rule the rescaled data (ZMS exactly 1) were tested against copies
    that scatter around 1, which made the test conservative; each copy is now rescaled by
    its own factor, so the p-values of the rescaled statistics are about uniform.
    """
    ps = []
    for i in range(60):
        rng = np.random.default_rng([363, i])
        M = 1000
        u = np.sqrt(1 / rng.gamma(3.0, 1 / 3.0, M))
        ds = uqx.from_arrays(u * rng.standard_normal(M), u / 1.3, name=f"s{i}")
        res = uqx.validate(ds, stats=["zms", "zmse", "zms_scan"], conditional=False,
                           decision=uqx.Decision(resolution=False), **FAST)
        ps.append(res["factor_p_value"].sel(stat="zms_scan", member="N").values[0])
    ps = np.array(ps)
    assert 0.04 <= np.mean(ps < 0.2) <= 0.4, np.sort(ps)


def _lognormal_set(i, M=2000, seed=36):
    """Calibrated normal errors on log-normal uE (a uE distribution outside the grid)."""
    rng = np.random.default_rng([seed, 1, i])
    u = np.exp(rng.normal(0.0, 0.5, M))
    return u, u * rng.standard_normal(M)


@pytest.mark.slow
def test_consistency_resolution_holds_on_twins():
    """A `valid` consistency states the top-decile factor f it detects with 80 % power.

    Twins keep the set's uE and draw fresh errors with uE too small by exactly f in its
    top decile; on the previous rule 29 % of them (Wilson 21-39 %) were still `valid`
    (target: at most 20 %). The resolution is now read at the threshold that decides
    `valid` (the firm level of the question's share), under the least powerful member.
    """
    n, M = 40, 2000
    base = [_lognormal_set(i, M) for i in range(n)]
    res = uqx.validate(uqx.stack([uqx.from_arrays(E, u, name=f"b{i}")
                                  for i, (u, E) in enumerate(base)]),
                       bootstrap=100, copies=1000, conditional=False,
                       compute=uqx.Compute(seed=36))
    q = res.sel(question="consistency")
    valid = q["question_verdict"].values == "valid"
    f = q["question_resolution_high"].values
    assert valid.sum() >= 0.85 * n and np.isfinite(f[valid]).all()
    twins = []
    for i in np.flatnonzero(valid):
        u = base[i][0]
        rng = np.random.default_rng([36, 2, int(i)])
        scale = np.where(u > np.quantile(u, 0.9), f[i], 1.0)
        twins.append(uqx.from_arrays(scale * u * rng.standard_normal(M), u, name=f"t{i}"))
    tres = uqx.validate(uqx.stack(twins), bootstrap=100, copies=1000, conditional=False,
                        decision=uqx.Decision(resolution=False), compute=uqx.Compute(seed=37))
    still = tres["question_verdict"].sel(question="consistency").values == "valid"
    assert still.mean() <= 0.2, (still.mean(), still.sum(), len(twins))


@pytest.mark.slow
def test_top_decile_of_the_true_u_is_caught():
    """The hardest tenth of the points (top decile of the true u) report uE 40 % too small.

    On the previous rule the consistency headline caught it on 31 of 40 sets with normal
    errors on a held-out design (target: 90 %); log-normal uE, normal errors, M = 2000.
    """
    sets = []
    for i in range(40):
        E, u, X = synthetic_set("lognormal_normal", "top0.6-true", 2000, seed=36, index=i)
        sets.append(uqx.from_arrays(E, u, name=f"s{i}"))
    res = uqx.validate(uqx.stack(sets), bootstrap=100, copies=1000, conditional=False,
                       decision=uqx.Decision(resolution=False), compute=uqx.Compute(seed=36))
    head = res["question_verdict"].sel(question="consistency").values
    assert (head == "invalid").sum() >= 36, list(head)
