"""The words of the output can be looked up: the glossary (``uqx/glossary.md``, the
documentation's Glossary page, ``uqx glossary WORD``) explains every header, statistic,
question, member and verdict word that a validation prints."""

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from uqx.cli import main
from uqx.cli.commands import glossary as G

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    """A small validation from the command line, its text (--wide) and its result."""
    from uqx.dataio.netcdf import read_netcdf

    tmp = tmp_path_factory.mktemp("glossary")
    rng = np.random.default_rng(3)
    u = rng.uniform(0.5, 2.0, 600)
    x = rng.uniform(0, 1, 600)
    csv = tmp / "model.csv"
    rows = "\n".join(f"{e:.6g},{s:.6g},{t:.6g}"
                     for e, s, t in zip(1.3 * u * rng.standard_normal(600), u, x, strict=True))
    csv.write_text("E,uE,X\n" + rows + "\n")
    out = tmp / "r.nc"
    p = subprocess.run([sys.executable, "-m", "uqx.cli.app", "validate", str(csv), "--X", "X",
                        "--n-boot", "200", "--n-mc", "200", "--seed", "1", "--wide",
                        "-o", str(out), "-q"], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout, read_netcdf(out)


def _headers(text):
    """Column names of the text tables: the lines that head a table, split on 2+ spaces."""
    heads = [ln for ln in text.splitlines()
             if re.match(r"^\s*(question|set|estimate|verdict)\s+\S", ln)
             or re.match(r"^\s+estimate\s", ln)]
    return {w.strip() for ln in heads for w in re.split(r"\s{2,}", ln.strip()) if w.strip()}


def test_every_word_of_the_output_is_in_the_glossary(small_run):
    from uqx.engine.stats.tailedness import SAFETY_LIMITS
    from uqx.text.tables import QUESTION_NAMES

    text, res = small_run
    terms = G.terms()
    words = _headers(text)
    # the parse works (a right-aligned column can sit one space from the next header)
    assert {"verdict", "level", "p", "estimate", "members"} <= words | {
        x for w in words for x in w.split()}
    words |= {str(s) for s in res["stat"].values} | {str(s).upper() for s in res["stat"].values}
    words |= {str(m) for m in res["member"].values}  # the null family as printed: N, T6...
    words |= {str(d) for d in res["dist"].values}
    words |= set(QUESTION_NAMES.values()) | set(SAFETY_LIMITS)
    words |= {"valid", "invalid", "inconclusive", "not tested", "borderline",
              "fraction of valid bins", "ENCE at zero bins", "ZMSE at zero bins",
              "ZVE at zero bins", "scale factor", "resolution (80 % power)", "headline",
              "out of reach", "safety limits", "001 Table II"}
    # a header of two columns one space apart ("tests reason") counts word by word
    # the headers of the report's tables
    from uqx.report import report

    page = report(res, figures=False, fmt="md")
    for head in re.findall(r"^\| (.*) \|\n\|(?:---\|)+$", page, re.M):
        words |= {h.strip().replace("\\", "") for h in head.split(" | ")} - {""}
    words -= {"parameter", "value"}  # the parameters' table: its rows say what each is
    # the statistics `uqx stats` and `make demo` describe
    from uqx.inference.describe import describe

    rng = np.random.default_rng(1)
    u = rng.uniform(0.5, 2, 200)
    import uqx

    words |= {str(s) for s in describe(uqx.from_arrays(u * rng.standard_normal(200), u))[
        "stat"].values}
    missing = sorted(w for w in words if w.casefold() not in terms
                     and not all(x.casefold() in terms for x in w.split()))
    assert not missing, missing
    for m in res["member"].values:  # each member has its own entry under its label
        assert any(e["title"] == str(m) for e in G.entries()), m


def test_glossary_command_prints_an_entry(capsys):
    assert main(["glossary", "fit"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("### fit") and "t_s(ν̂)" in out
    assert main(["glossary", "ENCE at zero bins"]) == 0
    assert "intercept" in capsys.readouterr().out
    assert main(["glossary"]) == 0
    assert "ZMS_SCAN" in capsys.readouterr().out
    assert main(["glossary", "levl"]) == 2
    assert "did you mean: level" in capsys.readouterr().err


def test_help_names_the_glossary(capsys):
    for cmd in ("validate", "show", "report"):
        with pytest.raises(SystemExit):
            main([cmd, "--help"])
        assert "uqx glossary" in capsys.readouterr().out, cmd


def test_glossary_cites_papers_in_words_with_links():
    text = " ".join(G.glossary_text().split())
    for title, arxiv in [("Properties of the ENCE", "2305.11905"),
                         ("a primer based on the consistency", "2303.07170"),
                         ("How to validate average calibration", "2402.10043")]:
        assert title in text and f"https://arxiv.org/abs/{arxiv}" in text
    docs = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert "../uqx/glossary.md" in docs  # one text: the docs page includes the shipped file
    assert "glossary" in (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
