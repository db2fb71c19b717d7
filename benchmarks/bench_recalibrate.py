"""Recalibration on literature data and the size of the re-validation.

Parts (``--part``, several allowed):

``qm9``
    BUS2022 QM9 atomization energies: every method fitted on the validation split
    (``QM9_E_uncal_val``, 10 000 rows), applied to the test rows (``QM9_E_uncal``,
    13 885 rows), validated; beside the uncalibrated test rows and the authors' own
    isotonic recalibration of the same rows (``QM9_E``), validated by the same rule.
    X is the molecular mass. Also times ``check_recalibration`` (5 folds) against one
    validation of the test rows (the speed target: <= 3x).
``pal``
    PAL2022: the six ``*_Test_uncal`` sets recalibrated by 5-fold cross-fitting
    (``auto``), against the authors' ``*_Test_cal`` of the same rows, validated by the
    same rule; held-out NLL.
``peers``
    The same splits through uncertainty-toolbox's ``get_std_recalibrator`` and
    scikit-learn's ``IsotonicRegression`` (``benchmarks/_peers.py``, run by ``--peers
    PYTHON``: a throwaway environment with them; they are not uqx dependencies).
``figure``
    Each map fitted on QM9's validation split with its bootstrap band (``--figure``).
``targets``
    The issue's miscalibrated scenarios (a factor, uE^1.5, the top or bottom decile,
    noisy uE, t_s(6) errors, variance on X): verdicts and NLL after ``auto``.
``size``
    Calibrated synthetic sets (uE log-normal, normal errors, M rows), each cross-fitted
    with ``auto`` and validated: the fraction of sets where any verdict on the
    recalibrated uE is ``invalid``, with its Wilson 95 % interval.
``split``
    A single split with a small fitting part: ``--sets`` sets of 20 000 rows (t_s(5)
    errors, uE 1.3x too small), ``--method scale --split 0.15``; how often average
    calibration reads ``invalid`` after recalibration, and how often the output says the
    held-out ZMS is within the error of the map's own fit
    (:meth:`uqx.workflow.recalibrate.RecalCheck.map_scale_note`). ``--seed`` is the
    first set's; about 1 min for 12 sets.

Run from the repository root::

    UQX_DATA_DIR=/path/to/datasets .venv/bin/python benchmarks/bench_recalibrate.py \
        --part qm9 --part pal --markdown docs/recalibrate_tables.md      # ~10 min on 2 cores
    .venv/bin/python benchmarks/bench_recalibrate.py --part size --sets 100 \
        --n-boot 1000 --n-mc 1000                                       # ~20 min on 2 busy cores
    python -m venv /tmp/peers && /tmp/peers/bin/pip install torch==2.13.0 netcal \
        uncertainty-toolbox scikit-learn      # netcal needs PyTorch (CPU build)
    .venv/bin/python benchmarks/bench_recalibrate.py --part peers --peers /tmp/peers/bin/python
    .venv/bin/python benchmarks/bench_recalibrate.py --part figure      # docs/recalibrate_maps.png
    .venv/bin/python benchmarks/bench_recalibrate.py --part targets --sets-per-scenario 10 \
        --n-boot 500 --n-mc 500
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import _common  # (repository on sys.path, UQX_DATA_DIR default)
import numpy as np

import uqx
from uqx.engine.defaults import ISO_MIN_BLOCK
from uqx.engine.recal_maps import METHODS, gaussian_nll, gaussian_nll_rows
from uqx.inference.zeta import binomial_ci
from uqx.workflow import recalibrate as W

QUESTIONS = ("average", "consistency", "adaptivity_X", "ranking")
PAL_SETS = ("Diffusion_RF", "Perovskite_RF", "Diffusion_LR", "Perovskite_LR",
            "Diffusion_GPR_Bayesian", "Perovskite_GPR_Bayesian")


def _verdicts(res, name):
    qv = res["question_verdict"].sel(set=name)
    return [str(qv.sel(question=q).values) for q in QUESTIONS]


def _row(label, nll, verdicts):
    return f"| {label} | {nll:.4f} | " + " | ".join(verdicts) + " |"


def _header(first):
    cols = ["average", "consistency", "adaptivity on X", "ranking"]
    return [f"| {first} | held-out NLL | " + " | ".join(cols) + " |",
            "|---|---:|" + "---|" * len(cols)]


def part_qm9(args) -> list[str]:
    val = uqx.load_dataset("QM9_E_uncal_val")
    test = uqx.load_dataset("QM9_E_uncal")
    authors = uqx.load_dataset("QM9_E")
    if not np.allclose(test["E"].values, authors["E"].values):
        raise SystemExit("QM9: the authors' calibrated test rows are not the same rows")
    E, uE, X = test["E"].values, test["uE"].values, test["X"].values
    fit_ds = uqx.from_arrays(val["E"].values, val["uE"].values, X=val["X"].values,
                             name="QM9_E_uncal_val")
    sets = [uqx.from_arrays(E, uE, X=X, name="uncalibrated"),
            uqx.from_arrays(E, authors["uE"].values, X=X, name="authors' isotonic")]
    chosen = {}
    t0 = time.perf_counter()
    for method in ("auto", *METHODS):
        m = uqx.fit_recalibration(fit_ds, method, n_boot=0, seed=args.seed,
                                  min_block=args.min_block)
        chosen[method] = m.method
        sets.append(uqx.from_arrays(E, m.apply(uE, X), X=X, name=f"uqx {method}"))
    # the plain pool-adjacent-violators map (min_block 1): the authors' own map
    m = uqx.fit_recalibration(fit_ds, "isotonic", n_boot=0, seed=args.seed, min_block=1)
    sets.append(uqx.from_arrays(E, m.apply(uE, X), X=X, name="uqx isotonic, min_block 1"))
    t_fit = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = uqx.validate(uqx.stack(sets), bootstrap=args.n_boot, copies=args.n_mc,
                       compute=uqx.Compute(seed=args.seed))
    t_val = time.perf_counter() - t0
    lines = [f"QM9 (BUS2022): maps fitted on the validation split (10 000 rows) in "
             f"{t_fit:.1f} s, applied to the 13 885 test rows; `auto` chose "
             f"`{chosen['auto']}`. Validation n_boot = {args.n_boot}, n_mc = {args.n_mc}, "
             f"seed {args.seed} ({t_val:.0f} s for {len(sets)} sets).", ""]
    lines += _header("test rows (uE)")
    for s in sets:
        name = s.attrs["name"]
        lines.append(_row(name, gaussian_nll(E, s["uE"].values), _verdicts(res, name)))
    if args.speed:
        one = uqx.from_arrays(E, uE, X=X, name="QM9_E_uncal")
        pairs = []
        for rep in range(2):  # fresh seeds: nothing drawn before is reused
            t0 = time.perf_counter()
            uqx.validate(one, bootstrap=args.n_boot, copies=args.n_mc,
                         compute=uqx.Compute(seed=args.seed + 11 + rep))
            t_one = time.perf_counter() - t0
            t0 = time.perf_counter()
            uqx.check_recalibration(one, "auto", seed=args.seed + 21 + rep,
                                    bootstrap=args.n_boot, copies=args.n_mc)
            pairs.append((time.perf_counter() - t0, t_one))
        lines += ["", "Speed: check_recalibration (auto, 5 folds, before and after) against "
                  "one validation of the test rows, two repeats: " + "; ".join(
                      f"{c:.1f} s / {o:.1f} s = {c / o:.2f}x" for c, o in pairs)
                  + f" (load average {_common.loadavg()})."]
    return lines


def part_pal(args) -> list[str]:
    lines = [f"PAL2022: each `*_Test_uncal` set recalibrated by 5-fold cross-fitting "
             f"(`auto`, chosen inside the training folds); the authors' `*_Test_cal` "
             f"uE of the same rows beside it. Validation n_boot = {args.n_boot}, "
             f"n_mc = {args.n_mc}, seed {args.seed}.", ""]
    lines += _header("set")
    for name in PAL_SETS:
        unc = uqx.load_dataset(f"{name}_uncal")
        cal = uqx.load_dataset(f"{name}_cal")
        if unc.sizes["sample"] != cal.sizes["sample"] or not np.allclose(
                unc["E"].values, cal["E"].values):
            lines.append(f"| {name} | rows differ between uncal and cal: skipped |||||")
            continue
        chk = uqx.check_recalibration(unc, "auto", seed=args.seed, bootstrap=args.n_boot,
                                      copies=args.n_mc, min_block=args.min_block)
        res_cal = uqx.validate(uqx.from_arrays(cal["E"].values, cal["uE"].values,
                                               name="cal"),
                               bootstrap=args.n_boot, copies=args.n_mc,
                               compute=uqx.Compute(seed=args.seed))
        how = ", ".join(f"{m}×{n}" for m, n in Counter(chk.methods).items())
        lines.append(_row(f"{name} uncalibrated", chk.nll_before,
                          _verdicts(chk.result, "before")))
        lines.append(_row(f"{name} authors' cal", gaussian_nll(cal["E"].values,
                                                               cal["uE"].values),
                          _verdicts(res_cal, "cal")))
        lines.append(_row(f"{name} uqx auto ({how})", chk.nll_after,
                          _verdicts(chk.result, "after")))
    return lines


def _run_peers(python, fits):
    """Recalibrate by the peers in their own environment: ``{peer: [u of each fit]}``."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        arrays = {}
        for k, (E, uE, ua) in enumerate(fits):
            arrays.update({f"E_fit_{k}": E, f"uE_fit_{k}": uE, f"uE_apply_{k}": ua})
        np.savez(f"{d}/in.npz", **arrays)
        subprocess.run([python, str(Path(__file__).with_name("_peers.py")), f"{d}/in.npz",
                        f"{d}/out.npz"], check=True)
        got = np.load(f"{d}/out.npz")
        peers = sorted({k.rsplit("_", 1)[0] for k in got.files})
        return {p: [got[f"{p}_{k}"] for k in range(len(fits))] for p in peers}


def part_peers(args) -> list[str]:
    """QM9 and PAL2022 through the peers' recalibrators, on the same splits as uqx."""
    if not args.peers:
        raise SystemExit("--part peers needs --peers PYTHON (an environment with "
                         "uncertainty-toolbox and scikit-learn)")
    rows = []
    # QM9: fit on the validation split, apply to the test rows
    val, test = uqx.load_dataset("QM9_E_uncal_val"), uqx.load_dataset("QM9_E_uncal")
    E, uE, X = test["E"].values, test["uE"].values, test["X"].values
    peers = _run_peers(args.peers, [(val["E"].values, val["uE"].values, uE)])
    m = uqx.fit_recalibration(uqx.from_arrays(val["E"].values, val["uE"].values,
                                              X=val["X"].values), "auto", n_boot=0,
                              seed=args.seed)
    cands = {"uqx auto": m.apply(uE, X), **{p: u[0] for p, u in peers.items()}}
    rows.append(("QM9_E (val -> test)", E, X, cands))
    # PAL2022: the folds of uqx's cross-fitting
    for name in PAL_SETS:
        unc = uqx.load_dataset(f"{name}_uncal")
        E, uE = unc["E"].values, unc["uE"].values
        cf = W.cross_fit(E, uE, None, method="auto", folds=5, seed=args.seed)
        fits = [(E[tr], uE[tr], uE[te]) for tr, te in zip(cf.fitted_on, cf.applied_to,
                                                           strict=True)]
        got = _run_peers(args.peers, fits)
        cands = {"uqx auto": cf.u}
        for p, us in got.items():
            u = np.empty_like(E)
            for te, uk in zip(cf.applied_to, us, strict=True):
                u[te] = uk
            cands[p] = u
        rows.append((f"{name} (5-fold)", E, None, cands))
    lines = [f"Peers on the same splits: uncertainty-toolbox {args.peer_versions} "
             f"(`get_std_recalibrator`, criteria ma_cal, rms_cal, miscal) and scikit-learn's "
             f"`IsotonicRegression` of E² on uE², netcal's `VarianceScaling` and `GPNormal` "
             f"(default settings, CPU); held-out NLL of each, verdicts of uqx "
             f"auto and of the best peer (validation n_boot = {args.n_boot}, n_mc = "
             f"{args.n_mc}, seed {args.seed}).", "",
             "| data | uqx auto NLL | " + " | ".join(
                 f"{p} NLL" for p in sorted(rows[0][3]) if p != "uqx auto") +
             " | uqx auto - best peer, per row (s.e.) | best peer: average, consistency, "
             "adaptivity on X, ranking | uqx auto: the same |",
             "|---|" + "---:|" * (len(rows[0][3]) + 1) + "---|---|"]
    for label, E, X, cands in rows:
        peer_names = sorted(p for p in cands if p != "uqx auto")
        nll = {p: gaussian_nll(E, u) for p, u in cands.items()}
        best = min(peer_names, key=nll.get)
        res = uqx.validate(uqx.stack([uqx.from_arrays(E, cands["uqx auto"], X=X, name="uqx"),
                                      uqx.from_arrays(E, cands[best], X=X, name="peer")]),
                           bootstrap=args.n_boot, copies=args.n_mc,
                           compute=uqx.Compute(seed=args.seed))
        # the per-row difference of the NLL to the best peer and its standard error (the
        # rows of a fold share a map: a guide to the noise, not an independent-sample s.e.)
        d = gaussian_nll_rows(E, cands["uqx auto"]) - gaussian_nll_rows(E, cands[best])
        lines.append(f"| {label} | {nll['uqx auto']:.4f} | "
                     + " | ".join(f"{nll[p]:.4f}" for p in peer_names)
                     + f" | {d.mean():+.4f} ({d.std(ddof=1) / np.sqrt(d.size):.4f})"
                     + f" | {best}: {', '.join(_verdicts(res, 'peer'))} | "
                     + ", ".join(_verdicts(res, "uqx")) + " |")
    return lines


def part_figure(args) -> list[str]:
    """Each map fitted on QM9's validation split, with its bootstrap band (a PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from uqx.dataio.netcdf import atomic_write

    val = uqx.load_dataset("QM9_E_uncal_val")
    fit_ds = uqx.from_arrays(val["E"].values, val["uE"].values, X=val["X"].values,
                             name="QM9_E_uncal_val")
    fig, axes = plt.subplots(2, 3, figsize=(10, 6), constrained_layout=True)
    for ax, method in zip(axes.ravel(), METHODS, strict=True):
        m = uqx.fit_recalibration(fit_ds, method, n_boot=args.band_boot, seed=args.seed,
                                  min_block=args.min_block)
        b = m.band
        g = b["grid"].values
        ax.fill_between(g, b["lower"], b["upper"], color="C0", alpha=0.3,
                        label="95 % band (bootstrap refits)")
        ax.plot(g, b["factor"], "C0-", label="map")
        ax.axhline(1.0, color="k", lw=0.5)
        ax.set_xscale("log" if method != "bvs-X" else "linear")
        ax.set_xlabel("X (molecular mass)" if method == "bvs-X" else "uE")
        ax.set_ylabel("u / uE")
        ax.set_title(method, fontsize=10)
    axes[0, 0].legend(fontsize=7)
    fig.suptitle("QM9 (BUS2022): maps fitted on the validation split, with their bands")
    path = args.figure
    atomic_write(path, lambda tmp: fig.savefig(tmp, dpi=90), what="figure", mkdir=False)
    return [f"![Each map fitted on QM9's validation split, u/uE against uE (X for bvs-X), "
            f"with the 2.5-97.5 % band of {args.band_boot} bootstrap refits]"
            f"({Path(path).name})"]


def _scenario(name, rng, M, errors="normal"):
    """One synthetic set of scenario ``name``: (E, uE, X); ``errors`` normal or t_s(6)."""
    uE = rng.lognormal(0.0, 0.6, M)
    X = rng.uniform(0.0, 1.0, M)
    # unit-variance errors: the miscalibration is in the scale, the shape is the errors'
    eps = rng.standard_normal(M) if errors == "normal" else rng.standard_t(6, M) / np.sqrt(1.5)
    if name == "calibrated":
        return uE * eps, uE, X
    if name == "factor 1.5":
        return 1.5 * uE * eps, uE, X
    if name == "uE^1.5":
        return uE**1.5 * eps, uE, X
    if name == "top decile x2":
        return uE * eps * np.where(uE > np.quantile(uE, 0.9), 2.0, 1.0), uE, X
    if name == "bottom decile x2":
        return uE * eps * np.where(uE < np.quantile(uE, 0.1), 2.0, 1.0), uE, X
    if name == "noisy uE":
        sigma = uE
        return sigma * eps, sigma * np.exp(0.3 * rng.standard_normal(M)), X
    if name == "variance on X":
        return uE * (0.5 + 2.0 * X) * eps, uE, X
    raise ValueError(name)


SCENARIOS = ("factor 1.5", "uE^1.5", "top decile x2", "bottom decile x2", "noisy uE",
             "variance on X")
ERRORS = {"normal": "normal", "t6": "t_s(6)"}


def part_targets(args) -> list[str]:
    """The issue's targets on miscalibrated sets: verdicts and NLL after auto."""
    n = args.sets_per_scenario
    lines = [f"Targets: {n} sets per scenario and error shape, M = {args.M}, cross-fitted "
             f"(5 folds), validation n_boot = {args.n_boot}, n_mc = {args.n_mc}, seed "
             f"{args.seed}. `auto` is given X only in the scenario 'variance on X'. NLL: "
             f"the held-out mean NLL of `auto` minus that of the factor √ZMS alone "
             f"(cross-fitted the same way); 'beyond noise' counts the sets where it is worse "
             f"by more than 2 standard errors of the per-row difference.", "",
             "| scenario | errors | consistency not invalid after auto | adaptivity on X not "
             "invalid after auto | bvs-uE: adaptivity not invalid / says it is left | "
             "NLL(auto) - NLL(scale): mean (max); beyond noise | methods chosen |",
             "|---|---|---|---|---|---|---|"]
    root = np.random.SeedSequence([args.seed, 7])
    cells = [(sc, er) for sc in SCENARIOS for er in ERRORS]
    t0 = time.perf_counter()
    for c_i, ((name, errors), ss) in enumerate(zip(cells, root.spawn(len(cells)),
                                                   strict=True)):
        ok_cons = ok_ax = ok_bvs = said = worse = 0
        diffs, chosen = [], Counter()
        with_x = name == "variance on X"
        for i, sss in enumerate(ss.spawn(n)):
            E, uE, X = _scenario(name, np.random.default_rng(sss), args.M, errors)
            chk = uqx.check_recalibration((E, uE, X) if with_x else (E, uE), "auto",
                                          seed=args.seed + 1000 * c_i + i,
                                          bootstrap=args.n_boot, copies=args.n_mc)
            v = chk.question_verdicts()
            ok_cons += v["consistency"][1] != "invalid"
            diff, se = chk.nll_vs_scale
            diffs.append(diff)
            worse += diff > 2 * se
            chosen.update(chk.methods)
            if with_x:
                ok_ax += v["adaptivity_X"][1] != "invalid"
                b = uqx.check_recalibration((E, uE, X), "bvs-uE", seed=args.seed + i,
                                            bootstrap=args.n_boot, copies=args.n_mc)
                ok_bvs += b.question_verdicts()["adaptivity_X"][1] != "invalid"
                said += "recalibrate on X" in b.text()
        ax = f"{ok_ax}/{n}" if with_x else "-"
        bv = f"{ok_bvs}/{n} / {said}/{n}" if with_x else "-"
        lines.append(f"| {name} | {ERRORS[errors]} | {ok_cons}/{n} | {ax} | {bv} | "
                     f"{np.mean(diffs):+.4f} ({np.max(diffs):+.4f}); {worse}/{n} | "
                     + ", ".join(f"{m} {k}" for m, k in chosen.most_common()) + " |")
        print(lines[-1], f"({time.perf_counter() - t0:.0f} s)", flush=True)
    lines.append(f"\n{time.perf_counter() - t0:.0f} s (load average {_common.loadavg()}).")
    return lines


def part_size(args) -> list[str]:
    """Calibrated sets cross-fitted by each method: how often a verdict after reads invalid."""
    methods = ("auto", *METHODS) if args.method == "all" else (args.method,)
    lines = [f"Size of the re-validation: {args.sets} calibrated synthetic sets per method "
             f"and error shape (M = {args.M}, uE log-normal(0, 0.6), X uniform and unused "
             f"by the errors), each cross-fitted (5 folds; `bvs-X` and `auto` given X) and "
             f"validated (n_boot = {args.n_boot}, n_mc = {args.n_mc}, seed {args.seed}; "
             f"isotonic blocks of at least {args.min_block} rows). "
             f"A question `invalid` on the recalibrated uE is a false claim (the family-wise "
             f"level is 10 %); a diagnostic statistic `invalid` is shown beside it.", "",
             "| method | errors | any question `invalid` (Wilson 95 %) | per question: "
             + ", ".join(QUESTIONS) + " | any statistic `invalid` | methods chosen |",
             "|---|---|---|---|---|---|"]
    t0 = time.perf_counter()
    errors_list = ERRORS if args.errors == "both" else {args.errors: ERRORS[args.errors]}
    for m_i, method in enumerate(methods):
        for e_i, errors in enumerate(errors_list):
            root = np.random.SeedSequence([args.seed, m_i, e_i])
            any_q = any_s = 0
            per_q = dict.fromkeys(QUESTIONS, 0)
            chosen = Counter()
            for i, ss in enumerate(root.spawn(args.sets)):
                E, uE, X = _scenario("calibrated", np.random.default_rng(ss), args.M, errors)
                chk = uqx.check_recalibration((E, uE, X), method,
                                              seed=args.seed + 100_000 * m_i + 1000 * e_i + i,
                                              bootstrap=args.n_boot, copies=args.n_mc,
                                              min_block=args.min_block)
                stat = chk.result["verdict"].sel(set="after").values.astype(str)
                qafter = chk.result["question_verdict"].sel(set="after")
                bad_q = [q for q in QUESTIONS if q in qafter["question"].values
                         and str(qafter.sel(question=q).values) == "invalid"]
                any_q += bool(bad_q)
                any_s += bool((stat == "invalid").any())
                for q in bad_q:
                    per_q[q] += 1
                chosen.update(chk.methods)
            lo, hi = (float(v) for v in binomial_ci(any_q, args.sets, method="wilson"))
            lines.append(
                f"| {method} | {ERRORS[errors]} | {any_q}/{args.sets} = "
                f"{any_q / args.sets:.3f} [{lo:.3f}, {hi:.3f}] | "
                + ", ".join(str(per_q[q]) for q in QUESTIONS) + f" | {any_s}/{args.sets} | "
                + ", ".join(f"{k} {c}" for k, c in chosen.most_common()) + " |")
            print(lines[-1], f"({time.perf_counter() - t0:.0f} s)", flush=True)
    lines.append(f"\n{time.perf_counter() - t0:.0f} s (load average {_common.loadavg()}).")
    return lines


def part_split(args) -> list[str]:
    """Average calibration after a split whose map is fitted on few rows (RecalCheck)."""
    invalid = within = 0
    for k in range(args.sets):
        rng = np.random.default_rng(args.seed + k)
        M = 20_000
        uE = rng.lognormal(0.0, 0.5, M)
        E = uE * rng.standard_t(5, M) / np.sqrt(5 / 3) * 1.3
        c = uqx.check_recalibration((E, uE), "scale", split=0.15, seed=k,
                                    bootstrap=args.n_boot, copies=args.n_mc,
                                    conditional=False)
        bad = c.question_verdicts()["average"][1] == "invalid"
        invalid += bad
        within += bad and bool(c.map_scale_note())
    return [f"Single split, map fitted on 3000 of 20 000 rows (`--method scale --split 0.15`, "
            f"t_s(5) errors, uE 1.3x too small; {args.sets} sets, seeds {args.seed}.."
            f"{args.seed + args.sets - 1}, n_boot = {args.n_boot}, n_mc = {args.n_mc}): "
            f"average calibration `invalid` after recalibration on {invalid} of {args.sets}; "
            f"of those, the held-out ZMS within twice the standard error of the map's fit "
            f"and of the held-out rows together on {within} (the output says so)."]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", action="append", choices=["qm9", "pal", "size", "figure", "peers",
                                                       "targets", "split"])
    p.add_argument("--peers", default=None, metavar="PYTHON",
                   help="peers: a Python with uncertainty-toolbox and scikit-learn")
    p.add_argument("--figure", default="docs/recalibrate_maps.png",
                   help="figure: the PNG of the maps (beside the docs page)")
    p.add_argument("--band-boot", type=int, default=200, help="figure: refits per band")
    p.add_argument("--n-boot", type=int, default=2000)
    p.add_argument("--n-mc", type=int, default=2000)
    p.add_argument("--seed", type=int, default=44)
    p.add_argument("--sets", type=int, default=100, help="synthetic sets (size)")
    p.add_argument("--sets-per-scenario", type=int, default=20, help="targets")
    p.add_argument("--M", type=int, default=2000, help="rows per synthetic set (size)")
    p.add_argument("--method", default="auto",
                   help="method of the size study ('all': auto and every method)")
    p.add_argument("--errors", default="normal", choices=["normal", "t6", "both"],
                   help="size: the calibrated sets' error shape")
    p.add_argument("--min-block", type=int, default=ISO_MIN_BLOCK,
                   help="least rows of a block of the isotonic map (1: plain PAV)")
    p.add_argument("--speed", action="store_true",
                   help="qm9: also time check_recalibration against one validation")
    p.add_argument("--markdown", default=None, help="also write the tables to this file")
    p.add_argument("--docs", default=None,
                   help="put the tables between the bench_recalibrate markers of this page "
                   "(docs/recalibrate.md)")
    args = p.parse_args(argv)
    args.peer_versions = ""
    if args.peers:
        import subprocess

        args.peer_versions = subprocess.run(
            [args.peers, "-c", "import importlib.metadata as m; print(m.version("
             "'uncertainty-toolbox') + ', scikit-learn', m.version('scikit-learn'), "
             "'and netcal', m.version('netcal'))"],
            capture_output=True, text=True).stdout.strip()
    parts = args.part or ["qm9", "pal"]
    out = []
    for part in parts:
        print(f"# {part}", flush=True)
        lines = {"qm9": part_qm9, "pal": part_pal, "size": part_size,
                 "figure": part_figure, "peers": part_peers,
                 "targets": part_targets, "split": part_split}[part](args)
        print("\n".join(lines), flush=True)
        out += lines + [""]
    if args.markdown:
        from uqx.dataio.netcdf import atomic_write

        text = "\n".join(out)
        atomic_write(args.markdown, lambda tmp: tmp.write_text(text, encoding="utf-8"),
                     what="tables", mkdir=False)
    if args.docs:
        _into_page(args.docs, "\n".join(out))
    return 0


BEGIN, END = "<!-- bench_recalibrate: begin -->", "<!-- bench_recalibrate: end -->"


def _into_page(path, text):
    from uqx.dataio.netcdf import atomic_write

    page = Path(path).read_text(encoding="utf-8")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{text.rstrip()}\n{END}{tail}"
    atomic_write(path, lambda tmp: tmp.write_text(new, encoding="utf-8"), what="page",
                 mkdir=False)


if __name__ == "__main__":
    raise SystemExit(main())
