"""The copies' rank correlation CC: one sort per copy, against scipy and the unfused route.

CC's Monte-Carlo test draws its calibrated copies in the order of uE, so the centred
ranks of u are the same for every copy and only the copies' |E*| change
(:func:`uqx.engine.copies.cc_scaled`: the product, |.| and the packed keys in one pass,
one SIMD sort of 64-bit keys per row, the ranks read from the keys). Ranking's
resolution reads the same copies under the spread alternative :math:`u_E^\\gamma`
(14 exponents a copy). Measured here at QM9's size (M = 13 885), per copy, on
continuous draws and on resampled data (exact ties wherever a value is drawn twice), against
baselines measured in the same run:

* ``scipy.stats.spearmanr`` of each copy against u (a general routine: two rankings);
* the unfused route ``cc_fixed_u(np.abs(eps * w), ru)`` (the product, |.| and the keys in
  six passes, as before the fusion).

Every route gives the same numbers (checked here; bit for bit between the two uqx routes).

Run: ``.venv/bin/python benchmarks/bench_copies_cc.py [--copies 1000] [--M 13885] [--block 100]``
(about 30 s). Wall time per copy (best of 3, calls of ``--block`` copies as the copy tasks
make them) on one core; the CPU time of the whole run at the end.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_of, header, section  # noqa: E402

from uqx.engine.copies import cc_fixed_u, cc_scaled  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--copies", type=int, default=1000)
    p.add_argument("--M", type=int, default=13_885)
    p.add_argument("--block", type=int, default=100,
                   help="copies a call, as the copy tasks pass them (QM9_E: 100)")
    p.add_argument("--scipy-copies", type=int, default=40, help="copies timed by scipy")
    args = p.parse_args(argv)
    from scipy.stats import rankdata, spearmanr

    header("The copies' CC: fused one-sort route against scipy and the unfused route")
    cpu0 = time.process_time()
    rng = np.random.default_rng(20261129)
    M, k = args.M, args.copies
    u = np.sort(rng.lognormal(0.0, 0.6, M))
    tied = np.round(u, 1)  # few distinct values (QM9_E's uE takes 135)
    cases = {"continuous copies, distinct u": (rng.standard_normal((k, M)), u),
             "resampled data, tied u (exact ties)": (
                 rng.choice(rng.standard_t(6, M), size=(k, M)), tied)}
    for label, (eps, u) in cases.items():
        ru = rankdata(u) - (M + 1) / 2.0
        for wname, w in (("w = u", u), ("w = uE^0.5 (spread)", u ** 0.5)):
            section(f"{label}, {wname}")
            fused = cc_scaled(eps, w, ru)
            plain = cc_fixed_u(np.abs(eps * w), ru)
            n_sc = min(args.scipy_copies, k)
            ref = np.array([spearmanr(np.abs(row * w), u).statistic for row in eps[:n_sc]])
            assert np.array_equal(fused, plain), "the fused route changed a bit"
            np.testing.assert_allclose(fused[:n_sc], ref, rtol=1e-10, atol=1e-13)
            b = args.block
            t_f = best_of(lambda eps=eps, w=w, ru=ru, b=b: [
                cc_scaled(eps[i:i + b], w, ru) for i in range(0, k, b)], repeat=3) / k
            t_p = best_of(lambda eps=eps, w=w, ru=ru, b=b: [
                cc_fixed_u(np.abs(eps[i:i + b] * w), ru) for i in range(0, k, b)], repeat=3) / k
            t_s = best_of(lambda eps=eps, w=w, u=u, n=n_sc: [
                spearmanr(np.abs(row * w), u).statistic for row in eps[:n]], repeat=3) / n_sc
            print(f"fused cc_scaled       {1e6 * t_f:8.1f} us a copy")
            print(f"unfused cc_fixed_u    {1e6 * t_p:8.1f} us a copy   "
                  f"(fused {t_p / t_f:.2f}x faster)")
            print(f"scipy.stats.spearmanr {1e6 * t_s:8.1f} us a copy   "
                  f"(fused {t_s / t_f:.1f}x faster)")
    section("summary")
    print(f"CPU time of the run {time.process_time() - cpu0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
