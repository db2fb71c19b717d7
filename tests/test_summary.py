"""The answer in words: every sentence of a set's summary
follows from the numbers of the result it reads, on the demo sets and the nine literature
sets, and the summary comes first in the text, the verdict table, the JSON and the report."""

import json
import math
import re

import numpy as np
import pytest

import uqx
from uqx.cli.app import main
from uqx.dataio.synth import demo_sets
from uqx.text.summary import (
    DECILE_MARGIN,
    QUESTION_LABELS,
    SAME_FACTOR_SPREAD,
    TARGET_FACTOR,
    _where_words,
    explain_lines,
    n_copies,
    n_mc_to_clear,
    points_to_resolve,
    pvalue_floor,
    set_summary,
    summary_lines,
)

N_MC, N_BOOT = 300, 200


def _demo_with_bias():
    """The six demo sets at M = 1000, and a set whose errors are shifted by 0.3 uE."""
    ds = demo_sets(M=1000)
    sets = [uqx.from_arrays(ds["E"].sel(set=s).values, ds["uE"].sel(set=s).values,
                            X=ds["X"].sel(set=s).values, name=str(s)) for s in ds["set"].values]
    rng = np.random.default_rng(5)
    u = rng.uniform(0.5, 2.0, 800)
    sets.append(uqx.from_arrays(u * (rng.standard_normal(800) + 0.3), u,
                                X=rng.uniform(size=800), name="biased"))
    return uqx.stack(sets)


@pytest.fixture(scope="module")
def demo():
    return uqx.validate(_demo_with_bias(), bootstrap=N_BOOT, copies=N_MC,
                        compute=uqx.Compute(seed=3))


@pytest.fixture(scope="module")
def paper(data_dir):
    ds = uqx.load_paper_sets(data_dir)
    return uqx.validate(ds, ["zms", "rce", "mean_z", "cc", "zmse", "zms_scan"], bootstrap=100,
                        copies=150, conditional=False, compute=uqx.Compute(seed=1))


# ------------------------------------------------------------------ the checker

NUM = r"(-?[0-9][0-9.,e+-]*)"


def _q(res, q, i):
    return str(res["question_verdict"].sel(question=q).values[i])


def _close(text, value, digits):
    """Whether ``text`` is ``value`` printed with ``digits`` significant digits."""
    return float(text.replace(",", "")) == pytest.approx(float(f"{value:.{digits}g}"),
                                                          rel=1e-9, abs=1e-12)


def check_summary(res):
    """Check every sentence of every set's summary against the variables it reads."""
    lines = summary_lines(res)
    assert len(lines) == res.sizes["set"]
    for i, line in enumerate(lines):
        s = set_summary(res, i)
        assert s["text"] == line
        name, M = str(res["set"].values[i]), int(res["M"].values[i])
        assert line.startswith(f"{name} (M = {M}): ")
        _check_questions(res, i, s)
        _check_scale(res, i, line)
        _check_resolutions(res, i, line)
        _check_factor(res, i, line)
        _check_where(res, i, line)
        _check_advice(res, i, s, line)


def _check_questions(res, i, s):
    for sent in s["sentences"]:
        q = sent["kind"]
        if q in QUESTION_LABELS and q != "up_to_factor":
            # the sentence says the question's verdict, as the result has it
            assert sent["text"].startswith(f"{QUESTION_LABELS[q]} {_q(res, q, i)}"), sent


def _check_scale(res, i, line):
    zms = float(res["estimate"].sel(stat="zms").values[i])
    f = math.sqrt(zms)
    m = re.search(r"uE ([0-9.]+)× too (small|large) on average \(ZMS " + NUM
                  + r"; use uE × " + NUM, line)
    said = m is not None
    assert said == (_q(res, "average", i) == "invalid"
                    and res["verdict"].sel(stat="zms").values[i] == "invalid"), line
    if said:
        sf = float(res["scale_factor"].values[i])
        assert m[1] == f"{(sf if sf >= 1 else 1 / sf):.2f}"  # a factor, never a percentage
        assert m[2] == ("small" if zms > 1 else "large") and f > 0
        assert _close(m[3], zms, 3)
        assert _close(m[4], sf, 3)
    m = re.search(r"a bias: mean Z = " + NUM, line)
    mz = res["verdict"].sel(stat="mean_z").values[i] if "mean_z" in res["stat"] else ""
    assert (m is not None) == (mz == "invalid" and _q(res, "average", i) == "invalid")
    if m:
        assert _close(m[1], float(res["estimate"].sel(stat="mean_z").values[i]), 2)
        assert "correct the bias of the predictions" in line


def _res(res, q, i, k):
    return float(res[f"question_resolution_{k}"].sel(question=q).values[i])


def _check_resolutions(res, i, line):
    m = re.search(r"average calibration valid[^:]*: uE ([0-9.]+)× too small or ([0-9.]+)× too "
                  "large on average would have been found", line, re.I)
    if _q(res, "average", i) == "valid" and np.isfinite(_res(res, "average", i, "low")) and \
            np.isfinite(_res(res, "average", i, "high")):
        assert m is not None, line
        assert m[1] == f"{_res(res, 'average', i, 'high'):.2f}"
        assert m[2] == f"{1 / _res(res, 'average', i, 'low'):.2f}"
    else:
        assert m is None
    for q, c in (("consistency", "uE"), ("adaptivity_X", "X"), ("adaptivity_V", "V")):
        m = re.search(re.escape(QUESTION_LABELS[q]) + r" valid: uE ([0-9.]+)× too small in "
                      r"the top tenth of " + c + " would have been found", line, re.I)
        hi = _res(res, q, i, "high")
        if _q(res, q, i) == "valid" and np.isfinite(hi):
            assert m is not None, (q, line)
            assert m[1] == f"{hi:.2f}"
        else:
            assert m is None, (q, line)
    for q in ("ranking",):
        g = _res(res, q, i, "spread_low")
        m = re.search(r"Ranking valid \(CC [^)]*\): uE varying too much \(true uncertainties "
                      r"∝ uE\^γ, γ <= ([0-9.]+)\)", line)
        assert (m is not None) == (_q(res, q, i) == "valid" and np.isfinite(g))
        if m:
            assert m[1] == f"{g:.2f}"


def _check_factor(res, i, line):
    rv = str(res["rescaled_consistency"].values[i]) if "rescaled_consistency" in res else ""
    said = "consistent up to a factor" in line.lower()
    assert said <= (rv == "valid"), line  # only where the rescaled uE are consistent
    if rv == "valid" and _q(res, "consistency", i) != "valid":
        assert said
    if said:
        m = re.search(r"consistent up to a factor " + NUM + r" \[" + NUM + ", " + NUM + r"\]: "
                      r"uE × " + NUM + " is consistent", line, re.I)
        f, lo, hi = (float(res[k].values[i]) for k in ("scale_factor", "scale_factor_low",
                                                        "scale_factor_high"))
        assert _close(m[1], f, 3) and _close(m[2], lo, 3) and _close(m[3], hi, 3)
        assert _close(m[4], f, 3)
    assert ("not fixed by one factor" in line.lower()) == (rv == "invalid")
    if "was not tested" in line and "brings ZMS to 1" in line:
        assert rv == "" and res["verdict"].sel(stat="zms").values[i] == "invalid"


def _check_where(res, i, line):
    if "zms_decile" not in res:
        return
    for m in re.finditer(r"the (smallest|largest) uE are too (small|large) \(ZMS " + NUM
                         + r" in the (bottom|top) tenth of uE\)", line):
        z = res["zms_decile"].sel(decile_of="uE").values[i]
        zd = z[0] if m[4] == "bottom" else z[-1]
        assert (m[1] == "smallest") == (m[4] == "bottom")
        assert _close(m[3], zd, 2)
        assert m[2] == ("small" if zd > 1 else "large")
        assert abs(math.log(zd)) > 2 * math.log(DECILE_MARGIN)  # off by more than 10 %
    for m in re.finditer(r"uE is too (small|large) for the (smallest|largest) (X|V) \(ZMS "
                         + NUM + r" in the (bottom|top) tenth of \3\)", line):
        z = res["zms_decile"].sel(decile_of=m[3]).values[i]
        zd = z[0] if m[5] == "bottom" else z[-1]
        assert (m[2] == "smallest") == (m[5] == "bottom")
        assert _close(m[4], zd, 2) and m[1] == ("small" if zd > 1 else "large")
    for m in re.finditer(r"uE is most off in the (\d+)(?:st|nd|rd|th) tenth of (uE|X|V), too "
                         r"(small|large) there \(ZMS " + NUM + r"\)", line):
        z = res["zms_decile"].sel(decile_of=m[2]).values[i]
        k = int(m[1]) - 1
        assert 0 < k < 9 and _close(m[4], z[k], 2)
        assert m[3] == ("small" if z[k] > 1 else "large")
        zms = float(res["estimate"].sel(stat="zms").values[i])
        assert np.argmax(np.abs(np.log(z[1:-1] / zms))) + 1 == k  # the farthest inner tenth
    for m in re.finditer(r"(same factor|one factor all) along (uE|X|V) \(ZMS " + NUM + " to "
                         + NUM + r" over its tenths\)", line):
        z = res["zms_decile"].sel(decile_of=m[2]).values[i]
        assert _close(m[3], z.min(), 2) and _close(m[4], z.max(), 2)
        if m[1] == "one factor all":  # said where one factor fixes consistency
            assert str(res["rescaled_consistency"].values[i]) == "valid"
        else:
            assert len({("small" if x > 1 else "large") for x in z}) == 1
            assert np.sqrt(z.max() / z.min()) <= SAME_FACTOR_SPREAD
    for m in re.finditer(r"too (small|large) all along (uE|X|V), by factors that differ \(ZMS "
                         + NUM + " to " + NUM + r" over its tenths\)", line):
        z = res["zms_decile"].sel(decile_of=m[2]).values[i]
        assert _close(m[3], z.min(), 2) and _close(m[4], z.max(), 2)
        assert np.sqrt(z.max() / z.min()) > SAME_FACTOR_SPREAD
        assert {("small" if x > 1 else "large") for x in z} == {m[1]}


def _check_advice(res, i, s, line):
    kinds = [a["kind"] for a in s["advice"]]
    rv = str(res["rescaled_consistency"].values[i]) if "rescaled_consistency" in res else ""
    zms_invalid = res["verdict"].sel(stat="zms").values[i] == "invalid"
    assert ("rescale: use uE ×" in line) == (rv == "valid" and zms_invalid
                                            and _q(res, "average", i) == "invalid")
    cons = _q(res, "consistency", i)
    assert ("recalibrate uE conditionally on uE" in line) == (cons == "invalid" and rv != "valid")
    if "one factor does not fix it" in line:  # never said where the rescaled answer is open
        assert rv in ("", "not tested", "invalid"), (rv, line)
    if "constant" in kinds:
        z = res["zms_decile"].sel(decile_of="uE").values[i]
        assert z[0] > DECILE_MARGIN ** 2 and z[0] > z[-1] and cons == "invalid"
    for c in ("X", "V"):
        if f"vary with {c}" in line:
            assert _q(res, f"adaptivity_{c}", i) == "invalid"
    m = re.search(r"collect more points: about " + NUM + r" would resolve uE 1.10× off "
                  r"(on average|in the top tenth of (?:uE|X|V)) \(([^:]+): ([0-9.]+)× now", line)
    coarse = {}
    for q in res["question"].values:
        q = str(q)
        if _q(res, q, i) != "valid" or q in ("ranking", "up_to_factor"):
            continue
        lo, hi = _res(res, q, i, "low"), _res(res, q, i, "high")
        f = max([x for x in (hi, 1 / lo if q == "average" and lo > 0 else np.nan)
                 if np.isfinite(x)], default=np.nan)
        if np.isfinite(f) and f > TARGET_FACTOR * (1 + 1e-9):
            coarse[QUESTION_LABELS[q]] = f
    assert (m is not None) == bool(coarse), line
    if m:
        f = coarse[m[3]]
        assert m[4] == f"{f:.2f}"
        need = int(m[1].replace(",", ""))
        assert need == points_to_resolve(int(res["M"].values[i]), f)
        assert need == max(points_to_resolve(int(res["M"].values[i]), g)
                           for g in coarse.values())
    m = re.search(r"p = (\d)/(\d+) = " + NUM + r" \(([^)]+)\) is the smallest (\d+) copies give",
                  line)
    if m:
        n = n_copies(res)
        assert int(m[2]) == n + 1 and int(m[5]) == n
        assert _close(m[3], int(m[1]) / (n + 1), 3)


# ------------------------------------------------------------------ the demo sets


def test_every_sentence_of_the_demo_summaries_follows_from_the_numbers(demo):
    check_summary(demo)


def test_the_demo_summaries_say_what_each_set_is(demo):
    text = dict(zip(demo["set"].values, summary_lines(demo), strict=True))
    assert "uE 1.2" in text["overconfident"] and "× too small on average" in \
        text["overconfident"] and " % too" not in text["overconfident"]
    assert "too large on average" in text["underconfident"]
    assert "Consistent up to a factor" in text["overconfident"]
    assert "rescale: use uE ×" in text["overconfident"]
    assert "Not fixed by one factor" in text["inconsistent"]
    assert "recalibrate uE conditionally on uE" in text["inconsistent"]
    # shuffled uE: the smallest are too small, the largest too large (zms_decile)
    assert "the smallest uE are too small" in text["inconsistent"]
    assert "a constant term" in text["inconsistent"]
    assert "uE misses how the errors vary with X" in text["nonadaptive"]
    assert "a bias: mean Z = " in text["biased"]
    assert "Average calibration valid" in text["calibrated"]


def test_an_open_rescaled_answer_is_not_read_as_no_factor_fixes_it(demo):
    """Where "consistent up to a factor" is inconclusive the advice does not say that one
    factor does not fix uE (Diffusion_GPR_Bayesian of paper 001 reads so)."""
    res = demo.copy(deep=True)
    i = list(res["set"].values).index("overconfident")
    rv = res["rescaled_consistency"].values.astype(object)
    rv[i] = "inconclusive"
    res["rescaled_consistency"] = ("set", rv.astype(str))
    line = summary_lines(res)[i]
    assert _q(res, "consistency", i) == "invalid"
    assert "recalibrate uE conditionally on uE" in line and re.search(
        r"E² on uE²\), unless uE × \d[\d.]* proves consistent", line), line
    assert "one factor does not fix it" not in line
    _check_advice(res, i, set_summary(res, i), line)


def test_valid_always_comes_with_its_resolution(demo):
    for i in range(demo.sizes["set"]):
        for sent in set_summary(demo, i)["sentences"]:
            if sent["reads"].get("verdict") == "valid" and sent["kind"] != "up_to_factor":
                assert "would have been found" in sent["text"] or "unseen" in sent["text"] or \
                    "no resolution" in sent["text"], sent


def test_the_summary_is_the_same_from_the_saved_result(demo, tmp_path):
    back = uqx.read_netcdf(uqx.to_netcdf(demo, tmp_path / "r.nc"))
    assert summary_lines(back) == summary_lines(demo)


def test_explain_tells_each_question_its_members_and_p_values(demo):
    lines = explain_lines(demo)
    assert len(lines) == demo.sizes["set"]
    i = list(demo["set"].values).index("inconsistent")
    text = lines[i]
    p = demo["question_p_value"].sel(question="consistency").values[i]
    for m, lab in enumerate(demo["member"].values):
        if np.isfinite(p[m]) and demo["member_plausible"].values[i, m]:
            assert f"{lab} p = {p[m]:.3g}" in text
    assert "Every member rejects at the set's level: invalid." in text
    assert "family-wise level 0.1" in text


# ------------------------------------------------------------------ the arithmetic


def test_factors_that_differ_by_orders_of_magnitude_are_not_about_the_same():
    # every tenth too small, but from ZMS 1.3 to 5e4: not "about the same factor"
    z = np.geomspace(1.3, 5e4, 10)
    w = {"cond": "X", "deciles": list(z), "bottom": z[0], "top": z[-1], "bottom_side": "",
         "top_side": "", "inner": None, "same_factor": True}
    text = _where_words(w)
    assert "same factor" not in text
    assert text.startswith("uE is too small all along X, by factors that differ (ZMS 1.3 to")
    w["deciles"] = list(np.linspace(1.4, 1.7, 10))
    assert "about the same factor along X (ZMS 1.4 to 1.7" in _where_words(w)


def test_points_to_resolve_scales_like_the_square_of_the_log_factor():
    assert points_to_resolve(1000, 1.21) == 4000  # ln 1.21 = 2 ln 1.1
    assert points_to_resolve(5000, 1.1) == 5000
    assert points_to_resolve(2040, 1.13) == 3400  # 2040 (ln 1.13 / ln 1.1)^2 = 3354


def test_pvalue_floor_and_the_copies_that_clear_it():
    assert pvalue_floor(1 / 301, 300) == 1 and pvalue_floor(2 / 101, 100) == 2
    assert pvalue_floor(0.05, 300) == 0 and pvalue_floor(np.nan, 300) == 0
    assert n_mc_to_clear(2, 0.045) == 200
    assert n_mc_to_clear(1, 0.001) is None  # beyond the copies the tests use


def test_a_p_value_at_its_floor_near_its_level_asks_for_more_copies(demo):
    res = demo.copy(deep=True)
    res.attrs["n_mc"] = 100
    i = list(res["set"].values).index("overconfident")
    a = list(res["question"].values).index("average")
    pv = res["question_p_value"].values
    lev = res["question_level"].values
    pv[i, a] = np.where(np.isfinite(pv[i, a]), 1 / 101, np.nan)
    lev[i, a] = np.where(np.isfinite(lev[i, a]), 0.045, np.nan)
    text = set_summary(res, i)["text"]
    assert "raise --n-mc: p = 1/101 = 0.0099 (average calibration) is the smallest 100 copies " \
           "give, within their noise of the level 0.045; --n-mc 200 would put the floor, " \
           "1/201, clear of it" in text
    check_summary(res)


# ------------------------------------------------------------------ the nine literature sets


@pytest.mark.data
def test_every_sentence_of_the_paper_set_summaries_follows_from_the_numbers(paper):
    check_summary(paper)
    text = summary_lines(paper)
    assert len(text) == 9
    for i, line in enumerate(text):
        if _q(paper, "average", i) == "invalid" and \
                paper["verdict"].sel(stat="zms").values[i] == "invalid":
            assert "× too" in line and "use uE ×" in line


# ------------------------------------------------------------------ where the summary goes


def test_the_verdict_table_begins_with_the_summary_and_has_the_questions(demo):
    t = uqx.verdict_table(demo)
    assert t.attrs["summary"] == summary_lines(demo) == t.summary
    assert repr(t).startswith(summary_lines(demo)[0][:60])
    assert "<p>" in t._repr_html_()
    cols = list(t.columns)
    assert cols[:7] == ["M", "average", "consistency", "adaptivity (X)", "ranking",
                        "up to a factor", "scale factor"]
    assert cols[7:] == [str(s) for s in demo["stat"].values]
    for i, s in enumerate(demo["set"].values):
        rv = str(demo["rescaled_consistency"].values[i])
        cell = t.loc[s, "scale factor"]
        assert cell.startswith("consistent up to a factor") == (rv == "valid")
        assert (cell == "not a factor alone") == (rv == "invalid")
        assert t.loc[s, "average"].split(" ")[0] == _q(demo, "average", i)
    assert demo.uqx.verdicts().summary == t.summary
    assert type(t[["average"]]).__name__ == "DataFrame"  # derived frames are plain


def test_the_text_begins_with_the_summary_and_fits_in_100_columns(demo):
    from uqx.text.console import format_validation

    text = format_validation(demo)
    lines = text.splitlines()
    assert lines[2] == "# summary"
    first = summary_lines(demo)[0]
    assert " ".join(x.strip() for x in lines[3:6]).startswith(first[:150])
    assert max(len(x) for x in lines) <= 100
    assert text.index("# summary") < text.index("## calibrated") < text.index("# warnings")
    wide = format_validation(demo, wide=True)
    assert "zeta_T6" in wide and max(len(x) for x in wide.splitlines()) > 100
    assert "How each verdict" not in text
    assert "# how each verdict was reached" in format_validation(demo, explain=True)


def test_json_names_the_statistics_as_the_table_and_carries_the_summary(demo):
    recs = uqx.result_records(demo)
    assert list(recs[0]["stats"]) == [str(s) for s in demo["stat"].values]
    assert "zmse_X" in recs[0]["stats"]
    assert [r["summary"] for r in recs] == summary_lines(demo)
    q = recs[list(demo["set"].values).index("inconsistent")]["questions"]
    assert q["consistency"]["verdict"] == "invalid"
    assert recs[0]["scale_factor"]["conclusion"].startswith("f = ")
    json.dumps(recs)


def test_cli_validate_and_show_print_the_summary_first(tmp_path, capsys):
    rng = np.random.default_rng(3)
    u = rng.uniform(0.5, 2.0, 600)
    path = tmp_path / "preds.csv"
    np.savetxt(path, np.column_stack([1.3 * u * rng.standard_normal(600), u]), delimiter=",",
               header="E,uE", comments="")
    out_nc = tmp_path / "res.nc"
    rc = main(["validate", str(path), "--n-mc", "300", "--n-boot", "200", "--seed", "1",
               "-o", str(out_nc), "--quiet"])
    out, _ = capsys.readouterr()
    assert rc == 0
    lines = out.splitlines()
    assert lines[2] == "# summary" and lines[3].startswith("preds (M = 600): ")
    assert max(len(x) for x in lines) <= 100
    rc = main(["show", str(out_nc), "--explain"])
    shown, _ = capsys.readouterr()
    assert shown.splitlines()[3] == lines[3]
    assert "# how each verdict was reached" in shown
    rc = main(["show", str(out_nc), "--wide"])
    wide, _ = capsys.readouterr()
    assert "zeta" in wide and wide.splitlines()[3].startswith(lines[3])
    rc = main(["show", str(out_nc), "--format", "json"])
    rec = json.loads(capsys.readouterr()[0])[0]
    assert rec["summary"].startswith("preds (M = 600): ")


def test_fail_on_reads_the_questions(tmp_path, capsys, demo):
    path = uqx.to_netcdf(demo.isel(set=[1]), tmp_path / "over.nc")  # overconfident
    assert main(["show", str(path), "--fail-on", "invalid"]) == 1
    err = capsys.readouterr()[1]
    assert "overconfident: question average invalid" in err


# ------------------------------------------------------------------ what the captions say


def test_captions_name_the_papers_rules_as_the_papers(demo):
    from uqx.report.figures import _lzisd_specs, _zeta_figure
    from uqx.text.tables import conditional_table, result_records

    (zeta,) = _zeta_figure(demo.isel(set=[0]), 40)
    assert "the papers' \u03b6 rule (|\u03b6| \u2264 1), for comparison" in zeta.caption
    assert "validates" not in zeta.caption
    for _key, caption, _draw in _lzisd_specs(demo, 0):
        assert "not tested: its per-bin intervals under-cover" in caption
    rows = conditional_table(demo)
    fval = rows[rows.index.get_level_values("route") == "fraction of valid bins"]
    assert set(fval["verdict"]) == {"diagnostic (no verdict)"}
    rec = result_records(demo)[0]["conditional"]["uE"]
    assert rec["fval_verdict"] == "not tested" and "under-cover" in rec["fval_why"]
    assert rec["verdict"] == str(demo["question_verdict"].sel(question="consistency").values[0])


@pytest.mark.parametrize("which", ["demo", pytest.param("paper", marks=pytest.mark.data)])
def test_the_scale_factor_never_reads_as_computed_and_not(which, request):
    from uqx.text.tables import scale_factor_text

    for res in (request.getfixturevalue(which),):
        for i in range(res.sizes["set"]):
            text = scale_factor_text(res.isel(set=i))
            assert "not computed" not in text
            rv = str(res["rescaled_consistency"].values[i])
            av = _q(res, "average", i)
            if rv == "" and av == "invalid":  # the factor is there; its consistency is not
                assert "brings ZMS to 1; whether uE ×" in text and "was not tested" in text
            if av == "valid":
                assert "no factor needed" in text


def test_a_feature_without_its_statistics_is_said_not_left_blank():
    """--paper-sets asks for ZMS, RCE, CC, ENCE, ZMSE only: QM9_E has X and V, and its
    adaptivity is then not tested; the result and the summary say why."""
    rng = np.random.default_rng(4)
    u = rng.uniform(0.5, 2.0, 1000)
    ds = uqx.from_arrays(u * rng.standard_normal(1000), u, X=rng.uniform(0, 1, 1000), name="a")
    res = uqx.validate(ds, "zms,zmse", bootstrap=100, copies=100, conditional=False,
                       compute=uqx.Compute(seed=1))
    why = dict(zip(res["question"].values, res["question_reason"].values[0], strict=True))
    assert "add zms_scan_X" in why["adaptivity_X"] and why["adaptivity_V"] == ""
    assert "Adaptivity (X) not tested: none of its statistics was requested" in \
        summary_lines(res)[0]
    # in a stack where another set lacks X, adding X's statistics works (they are computed
    # for the sets with X): the same advice, and the set without X says it has none
    b = uqx.from_arrays(u * rng.standard_normal(1000), u, name="b")
    res = uqx.validate(uqx.stack([ds, b]), "zms,zmse", bootstrap=100, copies=100,
                       conditional=False, compute=uqx.Compute(seed=1))
    why = res["question_reason"].sel(question="adaptivity_X", set="a").item()
    assert "add zms_scan_X" in why
    assert "this set has no X" in res["question_reason"].sel(question="adaptivity_X",
                                                             set="b").item()
    res = uqx.validate(uqx.stack([ds, b]), "zms,zmse,zms_scan_X", bootstrap=100, copies=100,
                       conditional=False, compute=uqx.Compute(seed=1))
    assert res["question_verdict"].sel(question="adaptivity_X", set="a").item() != \
        "not tested"
    # asked: tested, with no such reason
    res = uqx.validate(ds, "zms,zms_scan_X", bootstrap=100, copies=100, conditional=False,
                       compute=uqx.Compute(seed=1))
    q = list(res["question"].values).index("adaptivity_X")
    assert res["question_verdict"].values[0, q] != "not tested"


def test_next_names_the_command_that_does_what_it_advises(demo):
    """Each recalibration the summary advises names the `uqx recalibrate` command."""
    text = dict(zip(demo["set"].values, summary_lines(demo), strict=True))
    assert "rescale: use uE ×" in text["overconfident"]
    assert "uqx recalibrate fit --method scale" in text["overconfident"]
    assert "recalibrate uE conditionally on uE" in text["inconsistent"]
    assert "uqx recalibrate check --method auto" in text["inconsistent"]
    for line in text.values():
        if "recalibrate with X as an input" in line:
            assert "uqx recalibrate check --method bvs-X --X X" in line
