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
    block = re.search(r"## Quick start\s+```bash\n(.*?)```", text, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip()]


@pytest.mark.data
def test_readme_quick_start_runs_as_written(tmp_path, data_dir):
    cmds = _quick_start_commands()
    assert len(cmds) >= 4 and all(c.startswith(".venv/bin/uqx ") for c in cmds)
    # the repository layout the commands expect: .venv/bin/uqx and data/examples
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "uqx").symlink_to(Path(sys.executable).parent / "uqx")
    (tmp_path / "data").symlink_to(ROOT / "data")
    env = {**os.environ, "UQX_DATA_DIR": str(data_dir), "MPLBACKEND": "Agg"}
    for cmd in cmds:
        p = subprocess.run(shlex.split(cmd), cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])
        assert p.stdout.strip(), cmd
    assert (tmp_path / "results.nc").stat().st_size > 0
