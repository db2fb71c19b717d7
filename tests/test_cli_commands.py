"""CLI structure and hardening: light imports, command modules, help defaults, --quiet,
output checks before computing, results never lost on a write failure, ``uqx show``,
the progress bar, and the installed entry point."""

import io
import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run

from uqx.cli import app as cli
from uqx.cli.commands._console import cli_message
from uqx.progress import progress_bar

HEAVY = ("xarray", "dask", "numba", "scipy", "matplotlib", "pandas", "numpy")


def _write_csv(path, M=400, seed=1):
    rng = np.random.default_rng(seed)
    u = rng.uniform(0.5, 2.0, M)
    np.savetxt(path, np.column_stack([u * rng.standard_normal(M), u, rng.uniform(0, 1, M)]),
               delimiter=",", header="E,uE,X", comments="")
    return path


@pytest.fixture
def csv(tmp_path):
    return _write_csv(tmp_path / "preds.csv")


FAST = ["--n-boot", "60", "--n-mc", "30", "--seed", "2", "--stats", "zms,rce,ence"]


# ---------------------------------------------------------------- light imports


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["validate", "--help"]])
def test_help_and_version_do_not_import_the_numerical_stack(argv):
    code = (
        "import sys, uqx.cli\n"
        "try:\n"
        f"    uqx.cli.main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().splitlines()[-1] == "[]"


def test_package_is_lazy_but_complete():
    code = (
        "import sys, uqx\n"
        "light = not any(m in sys.modules for m in ('xarray', 'dask', 'numba'))\n"
        "names = sorted(uqx.__all__)\n"
        "ok = all(getattr(uqx, n) is not None for n in names)\n"
        "print(light, ok, callable(uqx.validate), callable(uqx.bootstrap),\n"
        "      callable(uqx.describe), set(names) <= set(dir(uqx)))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True"] * 6


def test_public_api_names():
    import uqx

    wanted = {"from_arrays", "read_csv", "stack", "load_dataset", "load_paper_sets",
              "list_datasets", "compute", "describe", "apply_kernel", "bootstrap",
              "bootstrap_set", "bootstrap_per_bin", "simulate_reference", "zeta_score",
              "binomial_ci", "validate", "result_table", "result_records", "to_netcdf",
              "read_netcdf", "InputError", "__version__", "provenance"}
    assert wanted <= set(uqx.__all__)
    import uqx.dataio.model
    import uqx.workflow.validation  # noqa: F401  (the submodule import must not shadow the function)

    assert callable(uqx.validate) and uqx.InputError is uqx.dataio.model.InputError
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        uqx.nope  # noqa: B018


# ---------------------------------------------------------------- command modules / help


def test_every_command_registered_and_defaults_shown():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    assert list(sub.choices) == cli.COMMANDS
    for name, p in sub.choices.items():
        text = " ".join(p.format_help().split())
        for action in p._actions:
            if not action.option_strings or action.help in (None, "==SUPPRESS=="):
                continue
            if action.default in (None, "==SUPPRESS==") and "--quiet" in action.option_strings:
                continue
            if action.dest == "help":
                continue
            if action.default is None or isinstance(action.default, bool):
                # nothing to say: no "(default: None)", "(default: False)"
                assert f"(default: {action.default})" not in text, (name, action.dest)
                continue
            help_text = " ".join(action.help.split())
            shown = (f"{action.default:g}" if isinstance(action.default, float)
                     else action.default)
            assert (f"(default: {shown})" in text
                    or "default" in help_text.lower()), (name, action.dest)


def test_adding_a_command_is_one_line(monkeypatch, capsys):
    mod = types.ModuleType("uqx.cli.commands.hello")

    def register(subparsers):
        p = subparsers.add_parser("hello", help="say hello")
        p.add_argument("--who", default="world", help="whom")
        return p

    mod.register = register
    mod.run = lambda args: print(f"hello {args.who}") or 0
    monkeypatch.setitem(sys.modules, "uqx.cli.commands.hello", mod)
    monkeypatch.setattr(cli, "COMMANDS", [*cli.COMMANDS, "hello"])
    assert run(capsys, "hello", "--who", "uqx")[:2] == (0, "hello uqx\n")


def test_cli_message_names_options():
    msg = "x: bad; drop them with drop_nonfinite=True (CLI: --drop-nonfinite); n_boot >= 2"
    assert cli_message(msg) == "x: bad; drop them with --drop-nonfinite; --n-boot >= 2"


# ---------------------------------------------------------------- quiet / notes


def test_quiet_silences_notes(capsys, tmp_path):
    p = tmp_path / "small.csv"
    p.write_text("E,uE\n0.1,1\n-0.3,1\n0.2,0.5\n0.5,1\n")
    rc, out, err = run(capsys, "stats", p, "--format", "json")
    assert rc == 0 and "binned statistics not computed" in err
    for argv in (["--quiet", "stats", p], ["stats", p, "-q"]):
        rc, out2, err2 = run(capsys, *argv, "--format", "json")
        assert rc == 0 and err2 == "" and json.loads(out2) == json.loads(out)


# ---------------------------------------------------------------- output path


def test_missing_output_directory_fails_before_computing(capsys, csv, tmp_path, monkeypatch):
    def boom(*a, **k):
        raise AssertionError("computed before checking the output path")

    monkeypatch.setattr(sys.modules["uqx.workflow.validation"], "validate", boom)
    target = tmp_path / "no" / "such" / "res.nc"
    rc, out, err = run(capsys, "validate", csv, *FAST, "-o", target)
    assert rc == 2 and out == ""
    assert f"output directory {target.parent} does not exist" in err and "--mkdir" in err
    rc, _, err = run(capsys, "validate", csv, *FAST, "-o", tmp_path)
    assert rc == 2 and "is a directory" in err
    rc, _, err = run(capsys, "demo", "-o", target)
    assert rc == 2 and "--mkdir" in err


def test_mkdir_creates_the_directory(capsys, csv, tmp_path):
    target = tmp_path / "a" / "b" / "res.nc"
    rc, out, err = run(capsys, "validate", csv, *FAST, "-o", target, "--mkdir")
    assert rc == 0, err
    assert target.is_file() and out.rstrip().endswith(f"results written to {target}")


def test_write_failure_keeps_printed_results(capsys, csv, tmp_path, monkeypatch):
    import xarray as xr

    def failing(self, path, *args, **kwargs):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(xr.Dataset, "to_netcdf", failing)
    target = tmp_path / "res.nc"
    rc, out, err = run(capsys, "validate", csv, *FAST, "-o", target)
    assert rc == 2
    assert "verdict" in out and "zms" in out  # the tables were printed first
    assert err.startswith("uqx: error: results not written")
    assert "No space left on device" in err and str(target) in err and ".tmp" not in err
    assert list(tmp_path.iterdir()) == [csv]


# ---------------------------------------------------------------- show


def test_show_prints_what_validate_printed(capsys, csv, tmp_path):
    target = tmp_path / "res.nc"
    rc, out, err = run(capsys, "validate", csv, *FAST, "--X", "X", "-o", target)
    assert rc == 0, err
    printed = out.split("\nresults written to")[0]
    rc, shown, err = run(capsys, "show", target)
    assert rc == 0, err
    assert shown.rstrip("\n") == printed.rstrip("\n")
    rc, js, _ = run(capsys, "show", target, "--format", "json")
    rc2, js2, _ = run(capsys, "validate", csv, *FAST, "--X", "X", "--format", "json")
    assert rc == rc2 == 0 and json.loads(js) == json.loads(js2)


def test_show_errors(capsys, tmp_path):
    rc, _, err = run(capsys, "show", tmp_path / "missing.nc")
    assert rc == 2 and "not found" in err
    from uqx import from_arrays, to_netcdf

    p = to_netcdf(from_arrays([0.1, 0.2], [1.0, 1.0]), tmp_path / "input.nc")
    rc, _, err = run(capsys, "show", p)
    assert rc == 2 and "not a uqx validation result" in err


# ---------------------------------------------------------------- progress bar


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal():
    import dask
    import dask.array as da

    x = da.ones(1000, chunks=10)
    tty = _Tty()
    with progress_bar(stream=tty, minimum=0) as bar:
        assert bar is not None
        dask.compute(x.sum(), scheduler="threads")
    assert "100%" in tty.getvalue()
    quiet = _Tty()
    with progress_bar(quiet=True, stream=quiet, minimum=0) as bar:
        dask.compute(x.sum(), scheduler="threads")
    assert bar is None and quiet.getvalue() == ""
    pipe = io.StringIO()
    with progress_bar(stream=pipe, minimum=0) as bar:
        dask.compute(x.sum(), scheduler="threads")
    assert bar is None and pipe.getvalue() == ""


# ---------------------------------------------------------------- installed entry point


def test_installed_entry_point(csv):
    exe = Path(sys.executable).with_name("uqx")
    if not exe.exists():
        pytest.skip("console script not installed next to the interpreter")
    p = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.startswith("uqx ")
    p = subprocess.run([str(exe), "stats", str(csv), "--format", "json", "--bins", "5"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    (rec,) = json.loads(p.stdout)
    E, u = np.loadtxt(csv, delimiter=",", skiprows=1, usecols=(0, 1), unpack=True)
    assert rec["stats"]["zms"] == pytest.approx(np.mean((E / u) ** 2), rel=1e-12)
    bad = csv.with_name("bad.csv")
    bad.write_text("E,uE\n0.1,1\n0.2,-1\n")
    p = subprocess.run([str(exe), "stats", str(bad)], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and p.stderr.startswith("uqx: error: ")
    assert "Traceback" not in p.stderr
