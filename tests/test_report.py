"""The validation report (uqx.report, ``uqx report``, ``uqx demo``'s page).

Literature sets are validated once with small replicate counts (200 / 50); the page must
hold one verdict row per set, every diagnostic figure as an embedded PNG, parse with
balanced tags (and as XML), and reference nothing on the network. ``make test`` reports
four of the nine sets, one of each kind (no feature, rows dropped at loading, X and V,
V only), ``make test-slow`` all nine. What a reader
sees in a browser is checked by ``test_report_browser.py`` (headless Chromium).
"""

import base64
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import numpy as np
import pytest

import uqx
from uqx.cli import main
from uqx.dataio.model import InputError, from_arrays, iter_sets, stack
from uqx.dataio.netcdf import read_netcdf
from uqx.report import VERDICT_STYLE, report, write_report
from uqx.report.figures import diagnostic_figures, untested
from uqx.text.summary import summary_lines
from uqx.text.tables import QUESTION_NAMES, verdict_table
from uqx.workflow.validation import validate

IMG = '<img src="data:image/png;base64,'
FAST = ["--n-boot", "200", "--n-mc", "50", "--seed", "1"]


class _TagChecker(HTMLParser):
    """Stack of open elements: every non-void element must be closed in order."""

    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.tags = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):  # <br/>, <img .../>: opens nothing
        self.tags.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def _check_tags(page):
    p = _TagChecker()
    p.feed(page)
    p.close()
    assert not p.errors and not p.stack, (p.errors[:5], p.stack)
    return p.tags


def _tables(page):
    """Every table of the page as a list of rows of (cell text, class)."""
    root = ET.fromstring(page.split("\n", 1)[1])  # XHTML-compatible after the doctype
    out = []
    for t in root.iter("table"):
        rows = [[("".join(td.itertext()), td.get("class", "")) for td in tr.findall("td")]
                for tr in t.iter("tr")]
        out.append([r for r in rows if r])
    return root, out


def _small(M=600, seed=3, name="small", X=True):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    return from_arrays(u * rng.standard_normal(M), u, X=rng.uniform(0, 1, M) if X else None,
                       name=name)


#: one literature set of each kind: no feature (its name has a Markdown character), 18
#: rows dropped at loading, X and V (the largest, M = 13885), V only
FOUR_KINDS = ["Diffusion_RF", "Perovskite_GPR_Bayesian", "QM9_E", "logP_10k_a_LS-GCN"]


@pytest.fixture(scope="module",
                params=["four", pytest.param("nine", marks=pytest.mark.slow)])
def paper(data_dir, request):
    from uqx.dataio.datasets import load_paper_sets

    ds = load_paper_sets(data_dir)
    if request.param == "four":
        ds = ds.sel(set=FOUR_KINDS)
    res = validate(ds, bootstrap=200, copies=uqx.Copies(n_mc=50, extrapolation_n_mc=20),
                   conditional=uqx.Conditional(cond_n_boot=100), compute=uqx.Compute(seed=1))
    return ds, res, report(res, ds, dpi=60)  # low resolution: the same figures, faster


@pytest.mark.data
def test_html_report_paper_sets(paper):
    ds, res, page = paper
    _check_tags(page)
    root, tables = _tables(page)
    names = [str(s) for s in res["set"].values]
    verdicts = tables[2]  # parameters, inputs, then the verdict table
    assert [row[0][0] for row in verdicts] == names
    table = verdict_table(res)  # the questions' columns, in the same order
    questions = [c for c in table.columns if c in QUESTION_NAMES.values()]
    assert "average" in questions and "consistency" in questions
    for row, s in zip(verdicts, names, strict=True):
        for k, q in enumerate(questions):
            word = str(table.loc[s, q]).split(" (")[0]
            cell = row[2 + k]
            assert word in cell[0] and cell[1] == VERDICT_STYLE[word][0], (s, q)
        assert row[2 + len(questions)][0] == table.loc[s, "scale factor"]
    # figures: zeta bars; per set 6 raw-data figures, LZISD per X / V, extrapolation per
    # cond, none on a feature whose adaptivity the set was not asked (its text says so)
    expected = 1
    for i, sd in enumerate(iter_sets(ds)):
        skip = untested(res, i)
        expected += 6 + sum(getattr(sd, k) is not None and k not in skip for k in ("X", "V"))
        extrap = np.isfinite(res["extrap_intercept"].isel(set=i)).any("xstat")
        expected += int(sum(bool(extrap.sel(cond=c)) for c in extrap["cond"].values
                            if str(c) not in skip))
    assert page.count(IMG) == expected
    for src in re.findall(r'src="data:image/png;base64,([^"]+)"', page):
        assert base64.b64decode(src)[:8] == b"\x89PNG\r\n\x1a\n"
    # self-contained: no network reference, no script
    assert "http://" not in page and "https://" not in page and "<script" not in page
    assert all(img.get("src").startswith("data:") for img in root.iter("img"))
    for s in names:
        assert f'id="set-{names.index(s) + 1}"' in page


@pytest.mark.data
def test_markdown_report_paper_sets(paper):
    _, res, _ = paper
    text = report(res, fmt="md", figures=False)
    lines = text.splitlines()
    start = lines.index("## Verdicts")
    rows = [ln for ln in lines[start + 4: start + 4 + res.sizes["set"]] if ln.startswith("| ")]
    assert len(rows) == res.sizes["set"]
    assert "<img" not in text and "![" not in text
    assert "Diffusion\\_RF" in text  # Markdown syntax characters escaped


def test_markdown_file_links_png_files(tmp_path):
    ds = _small(X=False)
    res = validate(ds, ["zms", "rce"], bootstrap=200, copies=50, conditional=False,
                   compute=uqx.Compute(seed=2))
    path = write_report(res, tmp_path / "r.md", ds)
    text = path.read_text()
    links = re.findall(r"!\[[^]]*\]\(([^)]+)\)", text)
    assert links and all((tmp_path / ln).is_file() for ln in links)
    assert all((tmp_path / ln).read_bytes()[:4] == b"\x89PNG" for ln in links)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.md", "r_figures"]  # no temp


def test_text_is_escaped_and_missing_data_noted():
    ds = stack([_small(name="a<b>&c", X=False), _small(seed=4, name="plain", X=False)])
    res = validate(ds, ["zms", "rce"], bootstrap=200, copies=50, conditional=False,
                   compute=uqx.Compute(seed=2))
    page = report(res)
    _check_tags(page)
    assert "a<b>&c" not in page and "a&lt;b&gt;&amp;c" in page
    assert "Input data not given" in page
    assert page.count(IMG) == 1  # the zeta bars only: no data, no conditional routes
    _, tables = _tables(page)
    # set, M, average calibration, scale factor, tailedness: no question without tests
    assert len(tables[2]) == 2 and len(tables[2][0]) == 2 + 2 + 1


def test_data_matched_by_content():
    ds = _small(X=False)
    res = validate(ds, ["zms"], bootstrap=200, copies=50, conditional=False,
                   compute=uqx.Compute(seed=2))
    other = _small(seed=9, X=False)  # same name, other content
    page = report(res, other)
    assert "differ from those of the result" in page and page.count(IMG) == 1
    renamed = _small(X=False, name="renamed")  # same content, other name: matched
    assert report(res, renamed).count(IMG) == 1 + 6


def test_bad_format_and_input():
    with pytest.raises(InputError, match="html or .md"):
        write_report(None, "r.pdf")
    with pytest.raises(InputError, match="validation result"):
        report(_small())


def test_cli_report_and_saved_result(tmp_path, capsys):
    csv = tmp_path / "d.csv"
    sd = next(iter_sets(_small()))
    np.savetxt(csv, np.column_stack([sd.E, sd.uE, sd.X]), delimiter=",", header="E,uE,X",
               comments="")
    out = tmp_path / "r.html"
    assert main(["report", str(csv), "--X", "X", *FAST, "-o", str(out), "-q"]) == 0
    page = out.read_text()
    _check_tags(page)
    # zeta bars, 6 raw-data figures, LZISD on X; M = 600 is too small for the zero-bin sweep
    assert page.count(IMG) == 1 + 6 + 1 and "no zero-bin extrapolation" in page
    nc = tmp_path / "r.nc"
    assert main(["validate", str(csv), "--X", "X", *FAST, "-o", str(nc)]) == 0
    assert read_netcdf(nc).attrs["seed"] == 1
    md = tmp_path / "saved.md"
    assert main(["report", str(nc), "-o", str(md), "--no-figures"]) == 0
    assert "d" in md.read_text() and not (tmp_path / "saved_figures").exists()
    capsys.readouterr()
    assert main(["report", str(csv), *FAST, "-o", str(tmp_path / "r.pdf")]) == 2
    assert main(["report", str(nc), "--paper-sets", "-o", str(md)]) == 2
    assert "--data" in capsys.readouterr().err


def test_distributions_caption_states_the_fitted_members_nu():
    """The caption gives ν̂, and the range over the windows where the fitted member takes
    one ν per window of uE (the normal spelled out, not 'inf')."""
    import xarray as xr

    from uqx.report.figures import _distributions_caption

    res = xr.Dataset({"nu_fit": ("set", [6.25, 8.0]),
                      "nu_fit_local_min": ("set", [3.03, np.nan]),
                      "nu_fit_local_max": ("set", [np.inf, np.nan])})
    local = _distributions_caption(res, 0)
    assert "t_s(\u03bd = 6.25)" in local and "from 3.03 to the normal (\u03bd = \u221e)" in local
    one = _distributions_caption(res, 1)
    assert "t_s(\u03bd = 8)" in one and "per window" not in one


def test_sets_open_with_their_answer_and_one_figure_and_no_figure_of_an_untested_question():
    rng = np.random.default_rng(11)
    u = rng.uniform(0.5, 2.0, 600)
    with_v = from_arrays(1.3 * u * rng.standard_normal(600), u, X=rng.uniform(0, 1, 600),
                         V=rng.normal(size=600), name="with_V")
    ds = stack([with_v, _small(seed=5, name="no_V")])
    res = validate(ds, bootstrap=100, copies=uqx.Copies(n_mc=50, extrapolation_n_mc=10),
                   # the default statistics
                   conditional=uqx.Conditional(cond_n_boot=50), compute=uqx.Compute(seed=2))
    figs = diagnostic_figures(res, ds, dpi=30)
    for i, s in enumerate(["with_V", "no_V"]):
        keys = {f.key for f in figs[s]}
        for c in ("X", "V"):
            v = str(res["question_verdict"].isel(set=i).sel(question=f"adaptivity_{c}").item())
            drawn = {k for k in keys if k.endswith(f"_{c}")}
            if v == "not tested":  # what the text says is not tested has no figure
                assert not drawn and c in untested(res, i), (s, c, keys)
            else:
                assert f"lzisd_{c}" in drawn, (s, c, keys)
    text = report(res, ds, fmt="md", dpi=30)
    lines = summary_lines(res)
    for i, s in enumerate(["with_V", "no_V"]):
        section = text.split(f"## {s.replace('_', chr(92) + '_')} (M = 600)")[1]
        section = section.split("\n## ")[0]
        first = section.index("![")  # the answer, then one figure, then the tables
        assert lines[i].split(":")[0].replace("_", "\\_") in section[:first]
        assert first < section.index("### Questions") < section.index("### More figures")
        assert section[:section.index("### Questions")].count("![") == 1
    # the papers' zeta-scores come last, for comparison
    assert text.index("## For comparison: the papers'") > text.index("## no\\_V")
    assert "![" in text[text.index("## For comparison: the papers'"):]
