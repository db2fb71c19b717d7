"""Why the isotonic map has a minimum block: held-out E^2/u^2 by block size, and the variants.

Calibrated synthetic sets (M rows, uE log-normal(0, 0.6), E = uE * eps with eps normal or
unit-variance t_s(6)), each cross-fitted by the isotonic map (5 folds, engine only: no
validation). Two tables per error shape:

* the plain pool-adjacent-violators map (``min_block=1``): the held-out mean of E^2/u^2
  of the rows, grouped by the number of fitting rows in the block their u came from
  (a row between two blocks: the smaller);
* variants (minimum block, with or without the small-block correction): the held-out
  mean of E^2/u^2 over the rows of a set (its ZMS), averaged over sets, and the mean
  held-out Gaussian NLL per row.

Set i of error shape e is drawn from ``numpy.random.default_rng([seed + i, e])`` (e = 1
normal, 2 t_s(6)); its folds are a shuffle of ``arange(M) % 5`` from the same stream.
The tables of docs/recalibrate.md ("The isotonic map") come from::

    .venv/bin/python benchmarks/bench_isotonic_blocks.py --sets 200 --seed 5000   # ~3 min
"""

from __future__ import annotations

import argparse
import time

import _common  # (repository on sys.path)
import numpy as np

from uqx.engine import recal_maps as R

CLASSES = ((1, 2), (3, 5), (6, 10), (11, 29), (30, 99), (100, None))
VARIANTS = ((1, False), (10, False), (30, False), (30, True), (60, True), (10, True))


def _draw(seed, i, errors, M):
    rng = np.random.default_rng([seed + i, 1 if errors == "normal" else 2])
    uE = rng.lognormal(0.0, 0.6, M)
    eps = rng.standard_normal(M) if errors == "normal" else rng.standard_t(6, M) / np.sqrt(1.5)
    folds = np.arange(M) % 5
    rng.shuffle(folds)
    return uE * eps, uE, folds


def _block_rows(E, uE):
    """Rows of the plain map's block at each distinct uE^2 of the fitting rows."""
    xs, inv, cnt = np.unique(uE * uE, return_inverse=True, return_counts=True)
    g = R.pav(np.bincount(inv, weights=E * E) / cnt, cnt.astype(float))
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    return xs, np.repeat(np.add.reduceat(cnt, starts), np.diff(np.r_[starts, g.size]))


def by_block_size(errors, args):
    z2 = {c: [] for c in CLASSES}
    for i in range(args.sets):
        E, uE, folds = _draw(args.seed, i, errors, args.M)
        for f in range(5):
            te, tr = folds == f, folds != f
            u = R.apply_map("isotonic", R.fit_isotonic(E[tr], uE[tr], min_block=1), uE[te])
            xs, rows = _block_rows(E[tr], uE[tr])
            k = np.clip(np.searchsorted(xs, uE[te] ** 2), 0, xs.size - 1)
            size = np.minimum(rows[k], rows[np.maximum(k - 1, 0)])
            for lo, hi in CLASSES:
                m = (size >= lo) & (size <= (hi or size.max()))
                z2[(lo, hi)].append((E[te][m] / u[m]) ** 2)
    head = "| block of (rows) | " + " | ".join(
        f"{lo}-{hi}" if hi else f"{lo} and more" for lo, hi in CLASSES) + " |"
    cells_n, cells_z = [], []
    for c in CLASSES:
        a = np.concatenate(z2[c])
        cells_n.append(f"{a.size / args.sets:.0f}")
        cells_z.append(f"{a.mean():.2f} ± {a.std() / np.sqrt(max(a.size, 1)):.2f}")
    return [head, "|---|" + "---:|" * len(CLASSES),
            f"| {errors}: rows per set | " + " | ".join(cells_n) + " |",
            f"| {errors}: mean E^2/u^2 | " + " | ".join(cells_z) + " |"]


def variants(errors, args):
    lines = [f"| map ({errors} errors) | mean held-out ZMS (median) | held-out NLL |",
             "|---|---:|---:|"]
    for min_block, debias in VARIANTS:
        zms, nll = [], []
        for i in range(args.sets):
            E, uE, folds = _draw(args.seed, i, errors, args.M)
            u = np.empty_like(E)
            for f in range(5):
                te, tr = folds == f, folds != f
                p = R.fit_isotonic(E[tr], uE[tr], min_block=min_block, debias=debias)
                u[te] = R.apply_map("isotonic", p, uE[te])
            zms.append(np.mean((E / u) ** 2))
            nll.append(R.gaussian_nll(E, u))
        name = ("plain PAV" if min_block == 1 else f"blocks of {min_block}"
                + (", corrected" if debias else ""))
        lines.append(f"| {name} | {np.mean(zms):.3f} ({np.median(zms):.3f}) | "
                     f"{np.mean(nll):.4f} |")
    return lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", type=int, default=200)
    p.add_argument("--M", type=int, default=2000)
    p.add_argument("--seed", type=int, default=5000)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    print(f"{args.sets} calibrated sets per error shape, M = {args.M}, seeds {args.seed}.., "
          "5-fold cross-fit of the isotonic map (engine only).\n")
    for errors in ("normal", "t6"):
        print("\n".join(by_block_size(errors, args)) + "\n", flush=True)
        print("\n".join(variants(errors, args)) + "\n", flush=True)
    print(f"{time.perf_counter() - t0:.0f} s (load average {_common.loadavg()}).")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
