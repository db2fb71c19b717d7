"""Shared helpers of the uqx benchmarks: timing, load, synthetic data, reporting.

Timings are the best (minimum) of several repeats of a warm call: the machine may be
shared with other processes (test runs), and the minimum is the least disturbed estimate
of the cost of the code itself. The 1-minute load average is printed next to every
section so that a reader can judge how disturbed a run was.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run from the repo root without installing
    sys.path.insert(0, str(ROOT))
if "UQX_DATA_DIR" not in os.environ and (ROOT.parent / "shared" / "datasets").is_dir():
    os.environ["UQX_DATA_DIR"] = str(ROOT.parent / "shared" / "datasets")


def loadavg() -> str:
    """The 1, 5, 15-minute load averages as a string."""
    try:
        return "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:  # pragma: no cover - not on Linux/macOS
        return "n/a"


def cpu_model() -> str:
    """CPU model name (Linux /proc/cpuinfo, else platform.processor())."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def source_state() -> str:
    """Commit of the repository and whether uqx/ has uncommitted changes (hash of the diff)."""
    import hashlib
    import subprocess

    if os.environ.get("UQX_BENCH_SOURCE"):  # label for runs outside a git checkout
        return os.environ["UQX_BENCH_SOURCE"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
        diff = subprocess.run(["git", "diff", "HEAD", "--", "uqx"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    if not diff:
        return head
    tag = hashlib.sha1(diff.encode()).hexdigest()[:8]
    return f"{head} + uncommitted uqx/ changes (diff sha1 {tag})"


def machine_info() -> dict:
    """Date, machine and library versions for the report header."""
    import numba
    import scipy

    import uqx

    try:
        ncpu = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        ncpu = os.cpu_count()
    return {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "cpu": cpu_model(),
        "cores": ncpu,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
        "uqx": uqx.__version__,
        "source": source_state(),
        "loadavg_start": loadavg(),
    }


def header(title: str) -> dict:
    """Print the report header and return the machine info."""
    info = machine_info()
    print(f"# {title}")
    print(
        f"# {info['date']} | {info['cpu']} | {info['cores']} cores | python {info['python']}"
        f" | numpy {info['numpy']} scipy {info['scipy']} numba {info['numba']}"
        f" | uqx {info['uqx']}"
    )
    print(f"# source: {info['source']}")
    print(f"# load average at start (1/5/15 min): {info['loadavg_start']}")
    return info


def section(title: str) -> None:
    """Print a section title with the current load average."""
    print(f"\n## {title}    [load {loadavg()}]", flush=True)


def best_of(fn, repeat: int = 5, number: int = 1, min_time: float = 0.0) -> float:
    """Best (minimum) wall time of ``number`` calls of ``fn``, over ``repeat`` repeats.

    ``number`` is raised automatically so that one repeat lasts at least ``min_time``
    seconds (for sub-millisecond kernels). Returns seconds per call.
    """
    if min_time > 0:
        t = time.perf_counter()
        fn()
        one = time.perf_counter() - t
        if one > 0:
            number = max(number, int(min_time / one) + 1)
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t) / number)
    return best


def synthetic(M: int, seed: int = 20240601) -> tuple[np.ndarray, np.ndarray]:
    """Synthetic calibrated set: uE^2 ~ InvGamma(3, scale=3), E = uE * N(0, 1).

    InvGamma(a, scale=s) is s / Gamma(a, 1) (``scipy.stats.invgamma(3, scale=3)``).
    """
    rng = np.random.default_rng(seed)
    u = np.sqrt(3.0 / rng.gamma(3.0, 1.0, M))
    E = u * rng.standard_normal(M)
    return E, u


def fmt_t(seconds: float) -> str:
    """Format a duration with a unit fit for its size."""
    if not np.isfinite(seconds):
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.3f} s"


def verdict(value: float, target: float, *, less: bool = True) -> str:
    """'PASS'/'MISS' of ``value < target`` (``less``) or ``value >= target``."""
    ok = value < target if less else value >= target
    return "PASS" if ok else "MISS"


class Report:
    """Collects result rows, prints them as they come, and can dump JSON."""

    def __init__(self, info: dict):
        self.info = info
        self.rows: list[dict] = []

    def add(self, name: str, seconds: float, *, target: str = "", ratio=None,
            baseline: str = "", status: str = "", note: str = "", unit: str = "s",
            **extra) -> dict:
        """Record and print one figure (``seconds``, or a value in ``unit``)."""
        row = {"name": name, "seconds": float(seconds), "unit": unit, "target": target,
               "ratio": None if ratio is None else float(ratio), "baseline": baseline,
               "status": status, "note": note, "load": loadavg(), **extra}
        self.rows.append(row)
        shown = fmt_t(seconds) if unit == "s" else f"{seconds:,.0f} {unit}"
        parts = [f"{name:<58s} {shown:>11s}"]
        if target:
            parts.append(f"target {target}")
        if ratio is not None:
            parts.append(f"ratio {ratio:,.1f}x vs {baseline}")
        if status:
            parts.append(status)
        if note:
            parts.append(f"({note})")
        print("  ".join(parts), flush=True)
        return row

    def dump(self, path: str | None) -> None:
        if not path:
            return
        self.info["loadavg_end"] = loadavg()
        Path(path).write_text(json.dumps({"info": self.info, "rows": self.rows}, indent=1))
        print(f"\n# results written to {path}")
