"""The progress of a validation: one display, "step k of n" with the time left, on a
terminal and in notebooks or on any stream when asked; nothing with -q; the first run
says that the kernels compile."""

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
import threading

import numpy as np
import pytest

import uqx
import uqx.progress as P
from uqx.workflow.steps import STEP_LABELS, STEPS


@pytest.fixture(scope="module")
def small_csv(tmp_path_factory):
    rng = np.random.default_rng(5)
    u = rng.uniform(0.5, 2.0, 400)
    path = tmp_path_factory.mktemp("progress") / "small.csv"
    rows = "\n".join(f"{e:.6g},{s:.6g}" for e, s in zip(u * rng.standard_normal(400), u,
                                                        strict=True))
    path.write_text("E,uE\n" + rows + "\n")
    return path


def _on_a_terminal(args):
    """Run ``uqx ARGS`` with stderr on a pseudo-terminal; return what it wrote there."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    chunks = []

    def read():
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    env = {**os.environ, "MPLBACKEND": "Agg", "COLUMNS": "120"}
    env.pop(P.PROGRESS_ENV, None)
    p = subprocess.run([sys.executable, "-m", "uqx.cli.app", *args], stdout=subprocess.PIPE,
                       stderr=slave, env=env, timeout=600)
    os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    assert p.returncode == 0
    return b"".join(chunks).decode("utf-8", "replace").replace("\r", "\n")


def test_validate_on_a_terminal_shows_one_display_of_the_steps(small_csv):
    err = _on_a_terminal(["validate", str(small_csv), "--n-boot", "200", "--n-mc", "100",
                          "--seed", "1"])
    n = len(STEPS)
    seen = {int(k) for k in re.findall(rf"uqx validate · step (\d+) of {n}: ", err)}
    assert {1, n} <= seen and len(seen) >= n // 2, err[-3000:]
    assert re.search(r"elapsed, ~[\d:?]+ left", err)
    # one display: no dask bar of its own per computation, none named after references
    assert "simulated references" not in err and "% Completed" not in err


def test_quiet_shows_nothing(small_csv):
    err = _on_a_terminal(["validate", str(small_csv), "--n-boot", "200", "--n-mc", "100",
                          "--seed", "1", "-q"])
    assert "step" not in err and "left" not in err


def test_api_shows_the_steps_when_asked_off_a_terminal(capsys):
    rng = np.random.default_rng(2)
    u = rng.uniform(0.5, 2.0, 300)
    ds = uqx.from_arrays(u * rng.standard_normal(300), u)
    uqx.validate(ds, ["zms", "zmse"], bootstrap=100, copies=50,
                 compute=uqx.Compute(seed=1, progress=True))
    err = capsys.readouterr().err
    assert f"uqx validate · step 1 of {len(STEPS)}: load" in err
    assert f"step {len(STEPS)} of {len(STEPS)}: finish" in err
    # default: a terminal only
    uqx.validate(ds, ["zms"], bootstrap=100, copies=50, compute=uqx.Compute(seed=1))
    assert "step" not in capsys.readouterr().err


def test_notebooks_get_the_display_and_uqx_progress_env_decides(monkeypatch):
    monkeypatch.delenv(P.PROGRESS_ENV, raising=False)
    monkeypatch.setattr(P, "_in_notebook", lambda: True)
    assert P.progress_wanted(None)  # a notebook's cell output is no terminal
    assert not P.progress_wanted(None, quiet=True)
    monkeypatch.setenv(P.PROGRESS_ENV, "0")
    assert not P.progress_wanted(None) and not P.progress_wanted(True)
    monkeypatch.setattr(P, "_in_notebook", lambda: False)
    monkeypatch.setenv(P.PROGRESS_ENV, "1")
    assert P.progress_wanted(None)


def test_first_run_says_the_kernels_compile(monkeypatch, capsys):
    monkeypatch.setattr(P, "kernels_compiled", lambda: False)
    with P.steps_progress(STEP_LABELS, label="uqx validate", progress=True) as sp:
        P.enter_step("load")
        P.enter_step("bootstrap")
        assert sp.lines[0] == f"uqx validate: {P.COMPILING_NOTE}"
        assert sp.lines[-1] == f"uqx validate · step 5 of {len(STEPS)}: bootstrap"
        with P.steps_progress(["x"], progress=True) as inner:  # one display at a time
            assert inner is None
    assert "compiling the numerical kernels (once" in capsys.readouterr().err


def test_the_kernel_cache_check_reads_numba_index_files(tmp_path, monkeypatch):
    import hashlib
    from pathlib import Path

    assert isinstance(P.kernels_compiled(), bool)
    here = Path(P.__file__).resolve().parent / "engine"
    monkeypatch.setattr(P, "__file__", str(tmp_path / "pkg" / "progress.py"))  # no cache
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert not P.kernels_compiled()
    # where numba puts the index of an installed (read-only) package's kernels
    engine = tmp_path / "pkg" / "engine"
    sub = f"engine_{hashlib.sha1(str(engine).encode()).hexdigest()}"
    (tmp_path / "numba" / sub).mkdir(parents=True)
    (tmp_path / "numba" / sub / "copies.kernel-12.py312.nbi").write_bytes(b"")
    assert P.kernels_compiled()
    assert here.is_dir()
