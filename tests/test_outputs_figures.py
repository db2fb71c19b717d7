"""Figure files written next to outputs: a replaced report leaves none of the old ones."""

from __future__ import annotations

import re

import numpy as np

import uqx
from uqx.dataio.model import from_arrays, stack
from uqx.report.document import write_report
from uqx.workflow.validation import validate


def _small(name, seed, X=False):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, 400)
    return from_arrays(u * rng.standard_normal(400), u, name=name,
                       X=rng.uniform(0.0, 1.0, 400) if X else None)


def _links(path):
    return set(re.findall(r"!\[[^]]*\]\(([^)]+)\)", path.read_text()))


def test_a_replaced_markdown_report_removes_the_old_data_figures(tmp_path):
    """`report -o r.md` twice kept the first data's figures in r_figures/."""
    path = tmp_path / "r.md"
    first = stack([_small("a", 1, X=True), _small("b", 3, X=True)])
    res = validate(first, ["zms", "rce"], bootstrap=100, copies=50, conditional=False,
                   compute=uqx.Compute(seed=2))
    write_report(res, path, first)
    old = _links(path)
    assert any("set2" in ln for ln in old)
    mine = tmp_path / "r_figures" / "notes.txt"  # the user's own file stays
    mine.write_text("kept")
    second = _small("second", 2)
    res = validate(second, ["zms", "rce"], bootstrap=100, copies=50, conditional=False,
                   compute=uqx.Compute(seed=2))
    write_report(res, path, second)
    new = _links(path)
    on_disk = {f"r_figures/{p.name}" for p in (tmp_path / "r_figures").glob("*.png")}
    assert on_disk == new and not any("set2" in p for p in on_disk)
    assert mine.read_text() == "kept"
    write_report(res, path, second, figures=False)  # a report without figures: none left
    assert not list((tmp_path / "r_figures").glob("*.png")) and mine.exists()
