"""The README's quick start runs as written (from a copy of the repository layout)."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _quick_start_commands():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Quick start.*?```bash\n(.*?)```", text, re.S).group(1)
    block = re.sub(r"\\\n\s*", "", block)  # a command continued on the next line
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


def _layout(tmp_path):
    """The repository layout the commands expect: .venv/bin/uqx and data/examples."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "uqx").symlink_to(Path(sys.executable).parent / "uqx")
    (tmp_path / "data").symlink_to(ROOT / "data")
    return tmp_path


def _run(cmd, cwd, **env):
    env = {**os.environ, "MPLBACKEND": "Agg", **env}
    p = subprocess.run(shlex.split(cmd), cwd=cwd, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, (cmd, p.stderr[-2000:])
    assert p.stdout.strip(), cmd
    return p.stdout


@pytest.fixture(scope="module")
def first_example(tmp_path_factory):
    """The quick start's first command, run as written: its folder and its output."""
    cwd = _layout(tmp_path_factory.mktemp("quick_start"))
    return cwd, _run(_quick_start_commands()[0], cwd)


@pytest.mark.data
def test_readme_quick_start_runs_as_written(first_example, data_dir):
    cmds = _quick_start_commands()
    assert len(cmds) >= 4 and all(c.startswith(".venv/bin/uqx ") for c in cmds)
    cwd, _ = first_example
    for cmd in cmds[1:]:
        _run(cmd, cwd, UQX_DATA_DIR=str(data_dir))
    assert (cwd / "results.nc").stat().st_size > 0


def test_readme_opens_with_the_two_commands_and_says_what_the_demo_writes():
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1).splitlines()
    assert [ln.split()[:2] for ln in block] == [["make", "demo"], ["make", "test"]]
    after = text.split("```", 2)[2][:600]  # the paragraph right below the two commands
    assert re.search(r"`make demo` takes about \d+ minutes?", after)
    assert "uqx_demo.html" in after and "open it" in after
    from uqx.cli.commands.demo import _report_path  # what `uqx demo` really writes

    assert _report_path(Path("uqx_demo.nc")).name == "uqx_demo.html"


def test_readme_introduces_every_question_and_the_glossary():
    text = (ROOT / "README.md").read_text()
    what = text.split("## What uqx does")[1].split("\n## ")[0]
    for q in ("calibrated on average", "consistent", "adaptive", "ranking",
              "consistent up to a factor", "glossary"):
        assert q in what, q


def test_readme_first_example_shows_a_valid_and_an_invalid_verdict(first_example):
    """The quick start's first command runs as written and its sets teach: each question
    of the two demo sets gets a verdict, with at least one valid and one invalid, none
    inconclusive (primer C, inconclusive everywhere, is under "Hard cases")."""
    cmd = _quick_start_commands()[0]
    assert "primer_C" not in cmd and "demo_overconfident" in cmd and "demo_inconsistent" in cmd
    _, out = first_example
    tables = re.findall(r"^question\s+verdict\s+level.*\n((?:\S.*\n)+)", out, re.M)
    assert len(tables) == 2, out
    rows = [re.match(r"(average|consistency|adaptivity \(X\)|ranking|up to a factor)\s+"
                     r"(valid|invalid|inconclusive|not tested)\b", row)
            for t in tables for row in t.splitlines() if not row.startswith(" ")]
    assert all(rows) and len(rows) == 10, tables
    verdicts = [m[2] for m in rows]
    assert "valid" in verdicts and "invalid" in verdicts, verdicts
    assert "inconclusive" not in verdicts, verdicts
    readme = (ROOT / "README.md").read_text()
    assert "## Hard cases" in readme and "primer_C" in readme.split("## Hard cases")[1]
