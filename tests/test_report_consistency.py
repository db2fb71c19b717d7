"""A report never contradicts itself.

Every number drawn in a figure of a report (and of ``validate --plots``, the same
:func:`uqx.report.diagnostic_figures`) comes from the result it illustrates, with the
same bins and intervals, or the caption says why it differs; every binned figure states
its bins (number, kind) and its interval method. The test reads the text artists of each
figure as it is drawn (tick labels aside) and checks each number against the result.
"""

import re

import numpy as np
import pytest
from matplotlib.axes._base import _AxesBase
from matplotlib.text import Text

import uqx
import uqx.report.figures as F
from uqx.cli import main
from uqx.cli.commands._inputs import load_inputs
from uqx.report import report

DEMO = "data/examples/demo_inconsistent.csv"


def _texts(fig):
    ticks = set()  # tick labels (of secondary axes too) are axes, not results
    for ax in fig.findobj(lambda a: isinstance(a, _AxesBase)):
        for which in ("major", "minor"):
            ticks.update(map(id, ax.get_xticklabels(which=which)))
            ticks.update(map(id, ax.get_yticklabels(which=which)))
    return [t.get_text() for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and id(t) not in ticks]


@pytest.fixture
def drawn(monkeypatch):
    """Record, per figure key, its caption and the texts drawn in it."""
    seen = {}
    real = F._draw

    def spy(key, caption, make, dpi):
        def made():
            fig = make()
            seen[key] = (caption, _texts(fig))
            return fig
        return real(key, caption, made, dpi)

    monkeypatch.setattr(F, "_draw", spy)
    return seen


@pytest.fixture(scope="module")
def data():
    return load_inputs([DEMO], X="X")


@pytest.fixture(scope="module")
def result(data):
    return uqx.validate(data, ["zms", "rce", "cc", "ence", "zmse", "zve", "zmse_X"], bootstrap=200,
                        copies=100, compute=uqx.Compute(seed=1))


def _ci_word(method):
    return {"cho": "analytic", "bootstrap": "BCa"}[method]


def check_figure(res, key, caption, texts):
    """Every number in ``texts`` is the result's (or explained in ``caption``)."""
    unexplained = []
    level = f"{100 * float(res.attrs['level']):.0f}"
    for text in texts:
        rest = text
        m = re.search(r"ENCE = ([-\d.]+)\n(\d+) ([a-z-]+) bins\n95 % CI: (.+)", rest)
        if m:
            assert key == "reliability"
            ence = float(res["estimate"].sel(stat="ence").values[0])
            assert float(m[1]) == pytest.approx(round(ence, 3), abs=1e-9), (m[1], ence)
            assert int(m[2]) == int(res["n_bins_used"].values[0])
            assert m[3] == res.attrs["binning_scheme"]
            assert f"{m[2]} {m[3]} bins" in caption and "analytic" in caption
            assert m[4].startswith("analytic")
            rest = rest.replace(m[0], "")
        m = re.search(r"valid bins: (\d+) of (\d+) \((\d+) %\)\n(\d+) equal-count bins\n"
                      r"95 % CI: (.+)", rest)
        if m:
            cond = key.split("_", 1)[1]
            r = res.isel(set=0).sel(cond=cond)
            nb, fval = int(r["cond_n_bins"]), float(r["fval"])
            assert (int(m[1]), int(m[2]), int(m[4])) == (round(fval * nb), nb, nb)
            assert int(m[3]) == round(100 * fval)
            method = str(r["lzisd_ci_method"].values)
            assert m[5].startswith(_ci_word(method))
            assert f"{nb} equal-count bins of {cond}" in caption
            assert _ci_word(method) in caption and f"{fval:.3f}" in caption
            rest = rest.replace(m[0], "")
        for pattern, explained in [
            (r"area = [\d.]+", "not a statistic of the validation"),
            (r"\(\$?ν(_\{eff\})?\$? = [\d.]+\)", "not a statistic of the validation"),
            (r"k = 1, 2, 3", "k = 1, 2, 3"),
            (r"± 2 SE", "2 SE"),
            (r"1/sd\(Z\)", "1/sd(Z)"),  # the definition of LZISD
            (r"target 1\b", "target 1"),  # the calibrated value of LZISD
            (r"\|ζ\| ≤ 1", "|ζ| ≤ 1"),  # the papers' ζ rule, named so in the caption
        ]:
            if re.search(pattern, rest):
                assert explained in caption, (key, text, caption)
            rest = re.sub(pattern, "", rest)
        rest = re.sub(rf"\b{level} ?%", "", rest)  # the intervals' level
        nu = f"{float(res.attrs['nu']):g}"
        rest = re.sub(rf"T{nu}\b", "", rest)  # the t_s(nu) member of the references
        rest = rest.replace("Sim2", "")  # a name (000: the second simulated reference)
        rest = re.sub(r"\^\{?2\}?|²", "", rest)  # squares in names (ln u², E²)
        if re.search(r"\d", rest):
            unexplained.append(text)
    assert not unexplained, (key, unexplained, caption)


def test_every_number_of_every_report_figure_comes_from_the_result(drawn, result, data):
    page = report(result, data, dpi=40)
    assert {"reliability", "lzisd_uE", "lzisd_X", "calibration", "distributions",
            "zeta_bars"} <= set(drawn)
    for key, (caption, texts) in drawn.items():
        check_figure(result, key, caption, texts)
        assert caption.split(" (")[0].replace("'", "&#x27;") in page or \
            caption.split(" (")[0] in page, key
    # every binned figure states its bins and its interval method in the caption
    for key in ("reliability", "lzisd_uE", "lzisd_X"):
        caption = drawn[key][0]
        assert re.search(r"\d+ equal-count bins", caption) and "95 % intervals" in caption
    for key in ("extrapolation_uE", "extrapolation_X"):
        if key in drawn:
            assert re.search(r"equal-count bins, N = \d+ to \d+", drawn[key][0])


def test_reliability_follows_the_validated_bins(drawn, data):
    res = uqx.validate(data, ["zms", "ence"], bootstrap=100, copies=50, binning=7,
                       conditional=False, compute=uqx.Compute(seed=2))
    report(res, data, dpi=40)
    caption, texts = drawn["reliability"]
    check_figure(res, "reliability", caption, texts)
    assert "7 equal-count bins" in texts[0] or any("7 equal-count" in t for t in texts)


def test_reliability_without_validated_ence_says_so(drawn, data):
    res = uqx.validate(data, ["zms", "rce"], bootstrap=100, copies=50, conditional=False,
                       compute=uqx.Compute(seed=2))
    report(res, data, dpi=40)
    caption, texts = drawn["reliability"]
    assert "ENCE was not among the validated statistics" in caption
    assert any(re.search(r"ENCE = [\d.]+\n20 equal-count bins", t) for t in texts)
    # no LZISD in the result: drawn from the data, and the caption says its numbers are not
    assert "not a statistic of the validation" in drawn["lzisd_uE"][0]


def test_saved_result_without_data_still_draws_the_validated_lzisd(drawn, result):
    report(result, None, dpi=40)
    assert {"lzisd_uE", "lzisd_X"} <= set(drawn) and "reliability" not in drawn
    for key in ("lzisd_uE", "lzisd_X"):
        check_figure(result, key, *drawn[key])


def test_validate_plots_draw_the_same_figures(drawn, tmp_path, capsys):
    rc = main(["validate", DEMO, "--X", "X", "--n-boot", "100", "--n-mc", "50", "--seed",
               "1", "--plots", str(tmp_path / "figs"), "-q"])
    capsys.readouterr()
    assert rc == 0
    res_text = {k: v for k, v in drawn.items()}
    assert {"reliability", "lzisd_uE"} <= set(res_text)
    assert (tmp_path / "figs" / "demo_inconsistent_lzisd_uE.png").is_file()
    ence = [t for t in drawn["reliability"][1] if t.startswith("ENCE")]
    assert len(ence) == 1 and np.isfinite(float(ence[0].split()[2]))


def test_plot_lzisd_of_a_saved_result_draws_it_as_validated(result, tmp_path, capsys):
    import uqx.plot as P

    for cond in ("uE", "X"):
        fig = P.lzisd_of_result(result, cond=cond)
        check_figure(result, f"lzisd_{cond}", _lzisd_caption(result, cond), _texts(fig))
    path = uqx.to_netcdf(result, tmp_path / "res.nc")
    assert main(["plot", "lzisd", str(path), "--by", "X", "-o", str(tmp_path / "f.png")]) == 0
    assert (tmp_path / "f.png").is_file()
    capsys.readouterr()


def _lzisd_caption(res, cond):
    """The report's caption of the LZISD figure of ``cond`` (what check_figure reads)."""
    return next(c for k, c, _ in F._lzisd_specs(res, 0) if k == f"lzisd_{cond}")


def test_validate_plots_files_carry_their_captions(tmp_path, capsys):
    from PIL import Image

    rc = main(["validate", DEMO, "--X", "X", "--n-boot", "100", "--n-mc", "50", "--seed",
               "1", "--plots", str(tmp_path), "-q"])
    capsys.readouterr()
    assert rc == 0
    with Image.open(tmp_path / "demo_inconsistent_reliability.png") as im:
        text = im.text["Description"]
    assert re.search(r"on \d+ equal-count bins of uE", text) and "analytic" in text
    with Image.open(tmp_path / "demo_inconsistent_calibration.png") as im:
        assert "not a statistic of the validation" in im.text["Description"]


def test_parameters_table_says_the_bins_used(tmp_path):
    rng = np.random.default_rng(4)
    u = rng.uniform(0.5, 2.0, 300)
    ds = uqx.from_arrays(u * rng.standard_normal(300), u, name="small300")
    res = uqx.validate(ds, ["zms", "ence"], bootstrap=100, copies=50, conditional=False,
                       compute=uqx.Compute(seed=1))
    page = report(res, ds, figures=False)
    assert "20 requested, 10 used" in page  # not a bare "20" beside a 10-bin ENCE
    saved = report(res, None, figures=True, dpi=30)
    assert "the LZISD bins and the extrapolation need only the result" in saved


def test_the_report_says_why_an_interval_and_its_verdict_disagree(result, tmp_path):
    """The HTML table of statistics marks a ZMS that reads `invalid` while its interval
    holds 1, and its reason cell says which decides; nothing is marked where they agree."""
    from uqx.report import write_report
    from uqx.text.tables import DISAGREE

    j = list(result["stat"].values).index("zms")
    assert str(result["verdict"].values[0, j]) == "invalid"
    assert not result["ci_low"].values[0, j] <= 1.0 <= result["ci_high"].values[0, j]
    plain = write_report(result, tmp_path / "plain.html", figures=False).read_text()
    assert DISAGREE not in plain
    moved = result.copy(deep=True)
    moved["ci_low"].values[0, j], moved["ci_high"].values[0, j] = 0.9, 1.1
    html = write_report(moved, tmp_path / "moved.html", figures=False).read_text()
    assert html.count(DISAGREE) >= 2  # the verdict's mark and its reason
    assert "[0.9, 1.1] holds the calibrated value 1, yet `invalid`" in html
