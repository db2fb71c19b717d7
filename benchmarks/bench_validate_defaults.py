"""``uqx validate QM9_E`` at the command line's defaults: wall and CPU time.

The issue's target is QM9_E (13 885 rows, tied uE, X and V) at the defaults
(n_boot = n_mc = 10 000, the default statistics with adaptivity on X and V, the
conditional diagnostics) in at most 5 s wall on 2 cores. Each run is a child process
(``python -m uqx.cli``-like: the installed entry point's ``main``), so the time includes
the imports, as a user meets it; the numba cache is warmed by a first, untimed run. The
baseline, measured in the same run: ``scipy.stats.bootstrap`` of ZMS alone on the same
rows (BCa, 10 000 resamples), the cost of one interval by a general library.

Run: ``.venv/bin/python benchmarks/bench_validate_defaults.py [--repeat 2] [--set QM9_E]``
(about 1 min). Prints each run's wall and CPU time (the child's user + system), the load,
and the ratios.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

from _common import ROOT, header, section

CHILD = """
import sys
from uqx.cli import main
sys.argv = ["uqx", "validate", sys.argv[1], "-q", "--seed", "1", "-o", sys.argv[2]]
raise SystemExit(main())
"""


def _child(name: str, out: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``uqx validate NAME`` in a child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", CHILD, name, out], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _scipy_zms(name: str) -> float:
    """Wall seconds of scipy.stats.bootstrap (BCa, 10 000) of ZMS on the set's rows."""
    import numpy as np
    from scipy.stats import bootstrap

    from uqx.dataio.datasets import load_dataset

    ds = load_dataset(name)
    z2 = np.asarray(ds["E"].values / ds["uE"].values, dtype=np.float64) ** 2
    z2 = z2[np.isfinite(z2)]
    t0 = time.perf_counter()
    bootstrap((z2,), np.mean, n_resamples=10_000, method="BCa", random_state=1)
    return time.perf_counter() - t0


def main(argv=None) -> int:
    import tempfile

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--set", default="QM9_E")
    a = p.parse_args(argv)
    header(f"uqx validate {a.set} at the defaults")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.nc")
        section("warm-up (numba cache), untimed")
        _child(a.set, out)
        runs = []
        for k in range(a.repeat):
            section(f"run {k + 1}")
            wall, cpu = _child(a.set, out)
            runs.append((wall, cpu))
            print(f"wall {wall:.1f} s, CPU {cpu:.1f} s")
    base = _scipy_zms(a.set)
    section("summary")
    wall = min(w for w, _ in runs)
    cpu = min(c for _, c in runs)
    print(f"best wall {wall:.1f} s (CPU {cpu:.1f} s); target 5 s: "
          f"{'PASS' if wall <= 5 else 'MISS'}")
    print(f"baseline scipy.stats.bootstrap, ZMS alone, BCa 10^4: {base:.1f} s; "
          f"the whole validation = {wall / base:.1f}x one scipy interval")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
