"""Does PICP earn a verdict? Its rejection rates on calibrated data of many shapes (issue 12).

PICP (:func:`uqx.inference.curves.intervals.picp`) is the fraction of errors inside their interval;
for UQ that reports uE, the interval is built from an assumed generative distribution D:
``U_P = uE q_D((1+P)/2)``. Its ``valid`` (P inside the Wilson interval) therefore tests
the pair (uE, D), not uE alone. This benchmark measures, on calibrated sets of the
error-rates study (``uqx.sweeps.error_rates.synthetic_set``: E = uE·ε, ε of unit
variance), how often PICP says "not valid" at P = 0.68 and 0.95 when D is the normal,
t_s(6), or the t_s(ν̂) matched to the data's tails (κ_CS of Z², as the verdicts' "fit"
member), and how often all three reject. A statistic that rejects calibrated
uncertainties because their errors are not t-shaped (uniform, Laplace, skewed) cannot
decide average calibration: the table shows whether it does.

Run: ``.venv/bin/python benchmarks/bench_picp_rates.py [n_sets]`` (default 400 sets per
cell, M ∈ {500, 2000, 5000}; about 5 min on 2 cores).
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _common import header, section

DESIGNS = ("ig3_normal", "ig6_t6", "ig20_t4", "lognormal_laplace", "uniform_uniform",
           "ig6_skewed")
M_VALUES = (500, 2000, 5000)
PROBS = (0.68, 0.95)


def rejections(design, M, n_sets, seed=11):
    """Rates of "not valid" per member (normal, t6, fit, all three) and P, over n_sets."""
    import uqx
    from uqx.engine.null_shape import t_nu_from_tails
    from uqx.engine.stats.tailedness import tailedness
    from uqx.inference.curves.intervals import picp
    from uqx.sweeps._common import rate_interval
    from uqx.sweeps.error_rates import synthetic_set

    rej = np.zeros((n_sets, 4, len(PROBS)), dtype=bool)
    for i in range(n_sets):
        E, u, _ = synthetic_set(design, "calibrated", M, seed=seed, index=i)
        ds = uqx.from_arrays(E, u)
        nu = float(t_nu_from_tails(tailedness(E, u)["kappa_cs_z2"]))
        fit = ("normal", None) if not np.isfinite(nu) else ("t", nu)
        for m, (dist, dnu) in enumerate((("normal", None), ("t", 6.0), fit)):
            ok = picp(ds, PROBS, dist=dist, nu=dnu)["valid"].values[0]
            rej[i, m] = ~ok
        rej[i, 3] = rej[i, :3].all(axis=0)
    return rate_interval(rej.sum(axis=0), np.full(rej.shape[1:], n_sets))


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    n_sets = int(argv[0]) if argv else 400
    header("PICP on calibrated data: rejection rates by assumed D")
    t = time.perf_counter()
    lines = ["| design | M | " + " | ".join(
        f"{m} P={p}" for m in ("N", "t6", "fit", "all") for p in PROBS) + " |",
        "|---|---|" + "---|" * 4 * len(PROBS)]
    for design in DESIGNS:
        for M in M_VALUES:
            rate, _, hi = rejections(design, M, n_sets)
            cells = [f"{100 * rate[m, k]:.0f} % ({100 * hi[m, k]:.0f})"
                     for m in range(4) for k in range(len(PROBS))]
            lines.append(f"| {design} | {M} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    section(f"{n_sets} sets per cell in {(time.perf_counter() - t) / 60:.1f} min; rate of "
            "'not valid' (Wilson-cc 95 % upper limit)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
