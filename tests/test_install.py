"""The package as a user installs it (marker ``install``; ``make test-install``).

Builds the sdist and the wheel with ``python -m build`` (the wheel from the sdist, as
build does, so the sdist must hold everything) from a copy of the working tree, checks
what the wheel holds, installs it into a fresh virtualenv outside the repository and runs
``uqx --version``, ``uqx demo``, ``uqx datasets list``, ``python -m uqx.dataio.synth`` and
``uqx.validate`` there, from a directory outside the repository.

Offline and fast: the build runs without isolation (setuptools and wheel of the test
environment), and the fresh virtualenv sees the *dependencies* of the test environment
through a ``.pth`` file naming a folder of links to its site-packages, uqx's own entries
left out. ``pip install --no-index`` of the wheel then resolves every requirement of the
wheel's metadata against those (a missing or too old dependency fails the install) and
installs uqx itself from the wheel only.
"""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.install

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 600


def _run(cmd, cwd, env=None, timeout=TIMEOUT):
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=timeout)
    assert p.returncode == 0, f"{cmd}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def _version():
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """sdist and wheel built from a copy of the working tree (tracked and new files)."""
    if os.environ.get("UQX_INSTALL_TEST") != "1":
        pytest.skip("builds and installs the wheel: run `make test-install` "
                    "(or set UQX_INSTALL_TEST=1)")
    src = tmp_path_factory.mktemp("src") / "uqx"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO,
                           capture_output=True, text=True, check=True).stdout.split()
    for rel in files:
        if (REPO / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / rel, src / rel)
    out = tmp_path_factory.mktemp("dist")
    p = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, src], cwd=src)
    # the licence is an SPDX expression: no setuptools deprecation warning about it
    assert "project.license" not in p.stdout + p.stderr, p.stderr[-2000:]
    return {p.suffix if p.suffix == ".whl" else ".tar.gz": p for p in out.iterdir()}


def test_wheel_and_sdist_contents(dist):
    version = _version()
    wheel, sdist = dist[".whl"], dist[".tar.gz"]
    assert wheel.name == f"uqx-{version}-py3-none-any.whl"
    assert sdist.name == f"uqx-{version}.tar.gz"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        meta = zf.read(f"uqx-{version}.dist-info/METADATA").decode()
        entry = zf.read(f"uqx-{version}.dist-info/entry_points.txt").decode()
    assert "uqx/dataio/registry.json" in names and "uqx/cli/app.py" in names
    assert "uqx/cli/commands/datasets.py" in names and "uqx/sweeps/engine.py" in names
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"uqx", f"uqx-{version}.dist-info"}, tops  # no tests/, .venv, data/
    assert "uqx = uqx.cli:main" in entry
    assert "License-Expression: MIT" in meta and f"Version: {version}" in meta
    assert "Provides-Extra: cluster" in meta and "dask-jobqueue" in meta
    import tarfile

    with tarfile.open(sdist) as tf:
        members = tf.getnames()
    assert f"uqx-{version}/uqx/dataio/registry.json" in members
    assert not [m for m in members if "/.venv/" in m or m.endswith(".nc")]


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory):
    """A fresh virtualenv outside the repository with the wheel installed."""
    root = tmp_path_factory.mktemp("venv")
    env_dir = root / "env"
    _run([sys.executable, "-m", "venv", env_dir], cwd=root)
    py = env_dir / "bin" / "python"
    # the test environment's dependencies, uqx itself left out
    deps = root / "deps"
    deps.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    for entry in site.iterdir():
        if re.match(r"(__editable__.*)?_*uqx\b|uqx[-_.]", entry.name, re.I):
            continue
        if entry.suffix == ".pth":
            continue
        (deps / entry.name).symlink_to(entry)
    purelib = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_paths()"
                              "['purelib'])"], capture_output=True, text=True,
                             check=True).stdout.strip()
    (Path(purelib) / "_uqx_test_deps.pth").write_text(f"{deps}\n")
    # no index, no find-links from a pip configuration: only what is installed counts
    pip_env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    pip_env["PIP_CONFIG_FILE"] = os.devnull
    p = _run([py, "-m", "pip", "install", "--no-index", "--disable-pip-version-check",
              dist[".whl"]], cwd=root, env=pip_env)
    assert "Requirement already satisfied: numpy" in p.stdout
    return env_dir


def _env():
    env = {k: v for k, v in os.environ.items()
           if k not in ("UQX_DATA_DIR", "PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "MPLBACKEND": "Agg"}


def test_installed_cli_and_api(venv, tmp_path):
    bin_ = venv / "bin"
    work = tmp_path / "elsewhere"  # outside the repository, no data/ folder
    work.mkdir()
    env = _env()
    p = _run([bin_ / "uqx", "--version"], cwd=work, env=env)
    assert p.stdout.strip() == f"uqx {_version()}"
    p = _run([bin_ / "python", "-c", "import uqx; print(uqx.__file__)"], cwd=work, env=env)
    assert Path(p.stdout.strip()).is_relative_to(venv), p.stdout  # not the repository
    p = _run([bin_ / "uqx", "datasets", "list"], cwd=work, env=env)
    assert "Diffusion_RF_cal" in p.stdout and "logP_150k_LS-GCN" in p.stdout
    p = _run([bin_ / "uqx", "demo", "--n-boot", "200", "--n-mc", "30", "-o", "demo.nc"],
             cwd=work, env=env)
    assert "no literature data directory" in p.stdout and "verdict" in p.stdout
    assert (work / "demo.nc").is_file() and (work / "demo.html").is_file()
    code = ("import numpy as np, uqx\n"
            "rng = np.random.default_rng(1)\n"
            "uE = rng.uniform(0.5, 2.0, 3000)\n"
            "ds = uqx.from_arrays(uE * rng.standard_normal(3000), uE, name='calibrated')\n"
            "res = uqx.validate(ds, ['zms', 'rce'], bootstrap=300, copies=100,\n"
            "                   compute=uqx.Compute(seed=1))\n"
            "print(uqx.result_table(res))\n"
            "print('ZMS', res['verdict'].sel(stat='zms').item())\n")
    p = _run([bin_ / "python", "-c", code], cwd=work, env=env)
    assert "ZMS valid" in p.stdout
    # the example data of the repository regenerate bit for bit from the wheel
    _run([bin_ / "python", "-m", "uqx.dataio.synth", work / "examples"], cwd=work, env=env)
    for f in sorted((REPO / "data" / "examples").glob("*.csv")):
        assert (work / "examples" / f.name).read_bytes() == f.read_bytes(), f.name
