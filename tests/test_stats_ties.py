"""The same tie rule in ``uqx stats`` / :func:`uqx.describe` as in ``uqx validate``.

On tied uE (QM9_E) ``stats`` split the tie groups in file order and ``validate`` by
content: ENCE 0.0662 against 0.0721 for the same file.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import uqx
from uqx.cli.app import main
from uqx.dataio.row_order import order_rows
from uqx.inference.describe import describe

BINNED = ["ence", "zmse", "zve", "uce"]


@pytest.fixture(scope="module")
def tied(tmp_path_factory):
    """uE on one decimal (many ties), rows sorted by |E| inside the file."""
    rng = np.random.default_rng(5)
    u = np.round(rng.uniform(0.5, 2.0, 900), 1)
    E = u * rng.standard_normal(900)
    frame = pd.DataFrame({"E": E, "uE": u}).iloc[np.argsort(np.abs(E))]
    path = tmp_path_factory.mktemp("ties") / "tied.csv"
    frame.to_csv(path, index=False)
    return path, frame


@pytest.mark.parametrize("ties", ["content", "file-order"])
def test_stats_gives_the_numbers_of_validate_on_tied_uE(tied, capsys, ties):
    path, _ = tied
    res = uqx.validate(uqx.read_csv(path), BINNED, bootstrap=50, copies=50,
                       binning=uqx.Binning(ties=ties), conditional=False,
                       compute=uqx.Compute(seed=1))
    args = ["stats", str(path), "--format", "json", "-q"]
    assert main(args + (["--ties", ties] if ties != "content" else [])) == 0
    got = json.loads(capsys.readouterr().out)[0]["stats"]
    for st in BINNED:
        assert got[st] == pytest.approx(float(res["estimate"].sel(set="tied", stat=st)),
                                        rel=1e-12), st


def test_content_ties_do_not_depend_on_the_order_of_the_rows(tied):
    _, frame = tied
    a = describe(uqx.from_dataframe(frame), tails=False)
    b = describe(uqx.from_dataframe(frame.iloc[::-1]), tails=False)
    np.testing.assert_array_equal(a["estimate"].values, b["estimate"].values)
    c = describe(uqx.from_dataframe(frame), tails=False, ties="file-order")
    assert not np.allclose(a["estimate"].sel(stat="ence"), c["estimate"].sel(stat="ence"))
    with pytest.raises(uqx.InputError, match="ties must be"):
        describe(uqx.from_dataframe(frame), ties="random")


def test_plot_bins_tie_groups_as_validate_whatever_the_order_of_the_rows(tied, tmp_path):
    """`uqx plot reliability` split tie groups of uE in file order: the same rows in another
    order drew other bins. With --ties content (the default) the figure is the same."""
    from uqx.cli.app import main as cli

    path, frame = tied
    shuffled = tmp_path / "tied.csv"  # same stem: same panel title
    frame.sample(frac=1.0, random_state=3).to_csv(shuffled, index=False)
    figs = []
    for src, out in ((path, tmp_path / "a.png"), (shuffled, tmp_path / "b.png")):
        assert cli(["plot", "reliability", str(src), "-o", str(out), "-q"]) == 0
        figs.append(out.read_bytes())
    assert figs[0] == figs[1]
    ordered = order_rows(uqx.from_dataframe(frame), "file-order")
    assert np.all(np.diff(ordered["uE"].values.ravel()) >= 0)


def test_the_report_reliability_diagram_uses_the_validated_bins(tied):
    """The report drew its reliability diagram on file-order tie groups: ENCE 0.173 in the
    corner against the validated 0.0988, said in the caption."""
    from uqx.report.figures import diagnostic_figures

    _, frame = tied
    ds = uqx.from_dataframe(frame, name="tied")
    res = uqx.validate(ds, ["zms", "ence"], bootstrap=50, copies=50, conditional=False,
                       compute=uqx.Compute(seed=1))
    (figs,) = [v for k, v in diagnostic_figures(res, ds).items() if k == "tied"]
    (caption,) = [c for k, c, _png, _why in figs if k == "reliability"]
    assert "is the validated ENCE" in caption and "differs" not in caption
