# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Paper 000 — simulated references for calibration statistics
#
# Reproduces Pernot (2024), *"Negative impact of heavy-tailed uncertainty and error
# distributions on the reliability of calibration statistics for machine learning
# regression tasks — simulated reference values"* (paper 000, 2024_SimRef;
# methods: the papers):
#
# * **Tables I–III** — the nine sets; β_GM(u) and the IG fit (MLE) of u²; summary
#   statistics of E and Z with ν_eff of the Student-t fits; **Figs. 2–5** — histograms of
#   ln u², E, Z with their fits, and E against pooled simulated errors;
# * **Fig. 6** — simulated references θ̃_N ± 2u (D = N, 50 bins);
# * **Fig. 7** — θ̃_ν against ν for Sets 7 and 8 (`uqx.sweeps.reference_sensitivity`);
# * **Tables A1–A4, Figs. 8–9** — ZMS, CC, ENCE, ZMSE: bootstrap and simulated references,
#   ζ_BS, ζ_Sim, ζ_Sim2 for D = N and t_s(6) (`uqx.validate`, `uqx.text.tables.paper_table_a`,
#   `uqx.plot.zeta_bars`);
# * **App. B, Figs. A1–A2** — ENCE and ZMSE of calibrated NIG / T6IG data against √(N/M)
#   (`uqx.sweeps.appendix_b`, `uqx.plot.study`);
# * **App. C, Fig. A3** — ZMSE extrapolated to zero bins (`uqx.sweeps.bins`, preset
#   `app-c`).
#
# Fig. 1 (the workflow flowchart) is implemented by `uqx.validate` itself (see README,
# "How to read the verdicts"). Published numbers are typed in as citations (from the
# paper and methods: the papers) and printed next to the reproduced ones. Figures are written to
# `notebooks/_output/` (git-ignored).
#
# **Run time** (2-core machine shared with other jobs, measured): quick mode (`QUICK=1`:
# 500 bootstrap replicates, 500 simulated data sets per reference, 300 for Figs. 6–7,
# App. B on a 3 × 2 grid with 100 data sets per cell) ≈ 45–55 s. Full mode (5000
# replicates, N_MC = 10⁴, App. B on the full 5 × 6 × 5 grid with 5000 data sets per cell,
# as in the paper) ≈ 5.5 min (324 s).

# %%
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

import uqx
from uqx import plot
from uqx.engine.resample import seed_sequence
from uqx.engine.stats.tailedness import beta_gm
from uqx.engine.unit_variance import draw_unit
from uqx.inference.fits import fit_sets
from uqx.plot import style as S
from uqx.sweeps import appendix_b, bins, reference_sensitivity
from uqx.text.tables import paper_table_a

QUICK = os.environ.get("QUICK") == "1"
OUT = Path("_output")
OUT.mkdir(exist_ok=True)
T0 = time.time()

N_BOOT = 500 if QUICK else 5000  # bootstrap replicates (Tables A1-A4)
N_MC = 500 if QUICK else 10_000  # simulated data sets per reference (Tables A1-A4)
N_MC_FIG = 300 if QUICK else 10_000  # Figs. 6-7
FIG7_NU = [3, 5, 10, 20] if QUICK else [3, 4, 5, 7, 10, 15, 20]
N_SIM_FIG5 = 20 if QUICK else 100  # simulated copies pooled in Fig. 5
APPB = (dict(M=[2000, 8000, 16000], N=[10, 30, 50], nu=[3, 24], n_mc=100) if QUICK
        else dict(M=[2000, 4000, 8000, 12000, 16000], N=[10, 20, 30, 40, 50],
                  nu=[3, 4, 5, 6, 12, 24], n_mc=5000))
print(f"QUICK={QUICK}: n_boot={N_BOOT}, n_mc={N_MC}, figs n_mc={N_MC_FIG}, App. B {APPB}")


def save(fig, name):
    """Write a figure to _output/ and return it (displayed by the notebook)."""
    fig.savefig(OUT / f"000_{name}.png")
    return fig


sets = uqx.load_paper_sets()
names = list(sets["set"].values)
labels = list(sets["label"].values)

# %% [markdown]
# ## Tables I–II — the nine sets; skewness of u and IG fit of u² (MLE)
#
# "Calibrated" is the ZMS verdict of the validation below (|ζ_BS| ≤ 1); "failed RCE" is a
# citation of the RCE study (paper 001/004, reproduced in those notebooks).

# %%
fits = fit_sets(sets)
# Table A needs no resolutions (resolution=False: the verdicts' other numbers unchanged)
res = uqx.validate(sets, ["zms", "cc", "ence", "zmse"], bootstrap=N_BOOT,
                   copies=uqx.Copies(n_mc=N_MC, simulate_all=True),
                   # the papers' R convention: ties in file order
                   binning=uqx.Binning(bins=20, ties="file-order"), conditional=False,
                   decision=uqx.Decision(resolution=False), compute=uqx.Compute(seed=2024))

# Published Table II of paper 000 (calibrated, failed RCE, beta_GM(u), k, theta, nu_eff):
# citations; NaN = not reported (bad IG fit or non-representative beta_GM).
nan = np.nan
PAPER_TABLE_II = [
    (True, False, 0.172, nan, nan, 3.0), (False, True, 0.419, nan, nan, 1.4),
    (False, True, 0.485, 4.52, 7.32e-01, 6.8), (False, True, 0.438, 1.57, 2.44e-01, 3.3),
    (False, False, 0.113, 21.10, 1.82, 4.0), (True, True, nan, nan, nan, 1.3),
    (True, True, 0.524, 1.81, 1.72e-04, 2.2), (False, False, 0.231, 23.40, 1.91, 3.9),
    (True, False, 0.223, 16.90, 3.91e-01, 2.9),
]
paper_ii = pd.DataFrame(PAPER_TABLE_II, index=names,
                        columns=["paper calibrated", "paper failed RCE", "paper beta_GM(u)",
                                 "paper k", "paper theta", "paper nu_eff"])
table_ii = pd.DataFrame({
    "set #": labels, "M": sets["M"].values,
    "calibrated": np.abs(res.zeta.sel(stat="zms").values) <= 1,
    "beta_GM(u)": [float(beta_gm(sd.uE)) for sd in uqx.iter_sets(sets)],
    "k": fits.ig_k.values, "theta": fits.ig_theta.values, "nu = 2k": 2 * fits.ig_k.values,
    "nu_eff": fits.nu_eff_e.values,
}, index=pd.Index(names, name="set")).join(paper_ii)
print(table_ii.to_string(float_format=lambda v: f"{v:.4g}"))

# %%
fig = plot.distributions(sets, panels=("u2",),
                         fits=fits.assign(nu_u2=fits.ig_k, ig_theta_ks=fits.ig_theta),
                         title="000 Fig. 2: ln u² with the IG fit (MLE); MV, median")
for ax, sd in zip(fig.axes, uqx.iter_sets(sets), strict=False):
    ax.axvline(np.log(np.mean(sd.uE**2)), color=S.COLORS["invalid"], lw=1)
    ax.axvline(np.log(np.median(sd.uE**2)), color=S.COLORS["highlight"], lw=1)
save(fig, "fig2_u2_ig_mle")

# %% [markdown]
# ## Table III, Figs. 3–5 — errors and z-scores
#
# μ_X ± sd/√M, σ_X, b_X = 100|μ_X|/σ_X and ν_eff from the scaled-shifted Student-t MLE
# (`uqx.inference.fits`). (The paper's bootstrap SE of σ_X is not reproduced: no bootstrap
# statistic "sd" exists in uqx's registry.)

# %%
rows = []
for sd in uqx.iter_sets(sets):
    z = sd.E / sd.uE
    rows.append({"mu_E": sd.E.mean(), "u(mu_E)": sd.E.std(ddof=1) / np.sqrt(sd.M),
                 "sigma_E": sd.E.std(ddof=1),
                 "b_E": 100 * abs(sd.E.mean()) / sd.E.std(ddof=1),
                 "nu_eff_E": float(fits.nu_eff_e.sel(set=sd.name)),
                 "mu_Z": z.mean(), "sigma_Z": z.std(ddof=1),
                 "b_Z": 100 * abs(z.mean()) / z.std(ddof=1),
                 "nu_eff_Z": float(fits.nu_eff_z.sel(set=sd.name))})
table_iii = pd.DataFrame(rows, index=pd.Index(names, name="set"))
# Published Table III of paper 000 (mu_E, sigma_E, b_E %, nu_eff_E, mu_Z, sigma_Z, b_Z %,
# nu_eff_Z): citations.
PAPER_TABLE_III = [
    (0.0033, 0.3678, 1, 3.0, -0.027, 0.980, 3, 6.0),
    (0.0034, 0.377, 1, 1.4, -0.018, 0.940, 2, 3.3),
    (0.008, 0.4810, 2, 6.8, 0.002, 1.058, 0, 20.1),
    (0.001, 0.637, 0, 3.3, -0.021, 1.107, 2, 9.1),
    (0.0019, 0.2713, 1, 4.0, 0.006, 0.920, 1, 3.9),
    (0.0044, 0.310, 1, 1.3, -0.005, 0.992, 1, 1.4),
    (0.00131, 0.0341, 4, 2.2, 0.0174, 0.9858, 2, 4.4),
    (0.0116, 0.2786, 4, 3.9, 0.050, 0.961, 5, 3.9),
    (-0.0424, 0.1533, 28, 2.9, -0.260, 0.951, 27, 3.1),
]
III_COLS = ["mu_E", "sigma_E", "b_E", "nu_eff_E", "mu_Z", "sigma_Z", "b_Z", "nu_eff_Z"]
paper_iii = pd.DataFrame(PAPER_TABLE_III, index=names, columns=III_COLS)
print(pd.concat({"uqx": table_iii[III_COLS], "paper": paper_iii}, axis=1)
      .swaplevel(axis=1)[III_COLS].to_string(float_format=lambda v: f"{v:.4g}"))

# %%
save(plot.distributions(sets, panels=("e",), fits=fits,
                        title="000 Fig. 3: E with normal and Student-t fits"), "fig3_e")
save(plot.distributions(sets, panels=("z",), fits=fits,
                        title="000 Fig. 4: Z with normal and Student-t fits"), "fig4_z")

# %% [markdown]
# Fig. 5: histogram of E (55 classes within ±3 sd(E)) against the pooled errors of
# `N_SIM_FIG5` simulated copies u·ε, ε ~ N(0, 1) and ε ~ t_s(ν_eff,Z) (ν ≤ 2 → 2.1).

# %%
with S.style(size="double"):
    fig, axs = S.panel_grid(9, size="double", ncols=3, aspect=0.7)
    for ax, sd, lab in zip(axs, uqx.iter_sets(sets), labels, strict=True):
        rng = np.random.Generator(np.random.PCG64(seed_sequence(5, "000-fig5", sd.name)))
        s = sd.E.std(ddof=1)
        edges = np.linspace(sd.E.mean() - 3 * s, sd.E.mean() + 3 * s, 56)
        nu = max(float(fits.nu_eff_z.sel(set=sd.name)), 2.1)
        for x, col, name in (
            (sd.E, "0.2", "data"),
            ((sd.uE * draw_unit(rng, (N_SIM_FIG5, sd.M))).ravel(), S.COLORS["series"][0], "N"),
            ((sd.uE * draw_unit(rng, (N_SIM_FIG5, sd.M), dist="t", nu=nu)).ravel(),
             S.COLORS["series"][1], f"t(ν={nu:.1f})"),
        ):
            h, _ = np.histogram(x, edges, density=True)
            ax.stairs(h, edges, color=col, label=name)
        S.set_title(ax, f"{lab}: {sd.name}")
        ax.set_yticks([])
        ax.legend(fontsize="xx-small")
    S.finish(fig, title="000 Fig. 5: errors vs pooled simulated errors")
save(fig, "fig5_simulated_errors")

# %% [markdown]
# ## Fig. 6 — simulated references with D = N (50 bins)

# %%
sim50 = uqx.simulate_reference(sets, ["zms", "cc", "ence", "zmse"], dist="normal",
                               n_mc=N_MC_FIG, bins=50, seed=123)
sqrt_m = np.sqrt(sets["M"].values)
PANELS = [("zms", 1, "ZMS"), ("cc", 1, "CC"), ("ence", 1, "ENCE"),
          ("ence", sqrt_m, "ENCE·√M"), ("zmse", 1, "ZMSE"), ("zmse", sqrt_m, "ZMSE·√M")]
with S.style(size="double"):
    fig, axs = S.panel_grid(6, size="double", ncols=3, aspect=0.7)
    for ax, (st, factor, lab) in zip(axs, PANELS, strict=True):
        r = sim50.sel(stat=st)
        ax.errorbar(range(1, 10), r.reference * factor, yerr=2 * r.reference_se * factor,
                    fmt="o", color=S.COLORS["data"])
        ax.set_xticks(range(1, 10))
        ax.set_xlabel("set")
        ax.set_ylabel(lab)
    S.finish(fig, title="000 Fig. 6: simulated references (D = N, 50 bins)")
save(fig, "fig6_references")

# %% [markdown]
# ## Fig. 7 — sensitivity of the references to the tail of D (Sets 7 and 8)

# %%
rs = reference_sensitivity(sets.sel(set=["QM9_E", "logP_10k_a_LS-GCN"]), nu=FIG7_NU,
                           n_mc=N_MC_FIG, seed=123)
with S.style(size="double"):
    fig, axs = S.panel_grid(4, size="double", ncols=4, aspect=1.0)
    for ax, st in zip(axs, ("zms", "cc", "ence", "zmse"), strict=True):
        for j, name in enumerate(rs["set"].values):
            r = rs.sel(set=name, stat=st)
            col = S.COLORS["series"][j]
            ax.errorbar(FIG7_NU, r.reference, yerr=2 * r.reference_se, fmt="o-", color=col,
                        label=name, ms=3)
            S.reference_line(ax, float(r.reference.sel(nu=20.0)), color=col)
        S.log_axis(ax, "x")
        ax.set_xlabel("ν")
        ax.set_ylabel(st.upper())
    axs[0].legend(fontsize="xx-small")
    S.finish(fig, title="000 Fig. 7: references for D = t_s(ν)")
save(fig, "fig7_reference_vs_nu")

# %% [markdown]
# ## Tables A1–A4, Figs. 8–9 — ζ-scores with bootstrap and simulated references
#
# Statistics with 20 equal-count bins; BCa intervals with `N_BOOT` replicates; simulated
# references with `N_MC` data sets for D = N(0, 1) and t_s(6); `simulate_all=True` also
# simulates the ZMS reference (Table A1).

# %%
# Published values (methods: the papers, from 000 Tables A1-A4; theta_est as published):
# theta_est, reference N, reference T, zeta_Sim N, zeta_Sim T: citations.
PAPER_A = {
    "zms": dict(est=[0.96, 0.88, 1.12, 1.23, 0.85, 0.98, 0.97, 0.93, 0.97],
                ref_n=[1.00] * 9, ref_t=[1.00] * 9,
                zeta_n=[-0.25, -1.09, 1.66, 3.54, -1.99, -0.09, -0.71, -1.16, -0.27],
                zeta_t=[-0.26, -1.09, 1.67, 3.53, -1.98, -0.10, -0.72, -1.15, -0.27]),
    "cc": dict(est=[0.50, 0.62, 0.26, 0.40, 0.04, 0.40, 0.31, -0.03, 0.23],
               ref_n=[0.40, 0.57, 0.25, 0.42, 0.11, 0.50, 0.37, 0.11, 0.13],
               ref_t=[0.38, 0.55, 0.23, 0.40, 0.10, 0.48, 0.35, 0.10, 0.12],
               zeta_n=[2.76, 2.40, 0.21, -0.77, -1.63, -3.27, -3.86, -4.92, 3.82],
               zeta_t=[3.39, 3.44, 0.61, 0.05, -1.45, -2.57, -2.54, -4.61, 4.19]),
    "ence": dict(est=[0.125, 0.126, 0.097, 0.135, 0.131, 0.244, 0.066, 0.108, 0.120],
                 ref_n=[0.056, 0.041, 0.058, 0.043, 0.056, 0.045, 0.026, 0.036, 0.036],
                 ref_t=[0.082, 0.061, 0.083, 0.063, 0.082, 0.066, 0.038, 0.053, 0.054],
                 zeta_n=[1.66, 2.78, 1.70, 2.94, 2.52, 2.26, 1.93, 2.28, 2.21],
                 zeta_t=[1.04, 2.13, 0.59, 2.30, 1.66, 2.02, 1.33, 1.72, 1.74]),
    "zmse": dict(est=[0.255, 0.273, 0.173, 0.247, 0.283, 0.356, 0.118, 0.225, 0.250],
                 ref_n=[0.112, 0.082, 0.112, 0.082, 0.112, 0.082, 0.043, 0.071, 0.071],
                 ref_t=[0.164, 0.121, 0.163, 0.121, 0.163, 0.121, 0.066, 0.107, 0.107],
                 zeta_n=[1.71, 2.91, 1.64, 2.97, 2.77, 2.37, 1.87, 2.43, 2.27],
                 zeta_t=[1.09, 2.31, 0.26, 2.26, 1.94, 2.02, 1.31, 1.87, 1.81]),
}
tables_a = {}
for st, pub in PAPER_A.items():
    t = paper_table_a(res, st)
    view = pd.DataFrame({
        "estimate": t[("BS", "estimate")], "paper estimate": pub["est"],
        "BCa low": t[("BS", "ci_low")], "BCa high": t[("BS", "ci_high")],
        "ref N": t[("N", "ref")], "paper ref N": pub["ref_n"], "u N": t[("N", "u")],
        "zeta_Sim N": t[("N", "zeta_Sim")], "paper zeta N": pub["zeta_n"],
        "ref T6": t[("T6", "ref")], "paper ref T6": pub["ref_t"], "u T6": t[("T6", "u")],
        "zeta_Sim T6": t[("T6", "zeta_Sim")], "paper zeta T6": pub["zeta_t"],
        "verdict (papers' rule)": res.zeta_verdict.sel(stat=st).values,
        "verdict (uqx)": res.verdict.sel(stat=st).values,
    }, index=t.index)
    tables_a[st] = view
    print(f"--- Table A{list(PAPER_A).index(st) + 1}: {st.upper()}")
    print(view.to_string(float_format=lambda v: f"{v:.4g}"))

# %%
save(plot.zeta_bars(res, stats=("zms", "cc"), title="000 Fig. 8"), "fig8_zeta_zms_cc")
save(plot.zeta_bars(res, stats=("ence", "zmse"), title="000 Fig. 9"), "fig9_zeta_ence_zmse")

# %% [markdown]
# ## App. B, Figs. A1–A2 — ENCE and ZMSE of calibrated data against √(N/M)
#
# NIG (ε ~ N) and T6IG (ε ~ t_s(6)) with u² ~ IG(ν, ν) (the code's parameterisation,
# methods: synthetic data), u sorted before drawing E, equal-count bins (popMin 30); cell means and one
# `lm(y ~ x)` per model over all cells. `uqx.plot.study` draws the right-hand panels.

# %%
appb = appendix_b(**APPB, seed=2024)
PAPER_APPB = {("NIG", "ence"): (0.0, 0.56), ("NIG", "zmse"): (0.0, 1.14),
              ("T6IG", "ence"): (0.004, 0.779), ("T6IG", "zmse"): (0.006, 1.577)}
appb_fit = appb[["intercept", "intercept_se", "slope", "slope_se"]].to_dataframe()
appb_fit["paper intercept"] = [PAPER_APPB[i][0] for i in appb_fit.index]
appb_fit["paper slope"] = [PAPER_APPB[i][1] for i in appb_fit.index]
print(appb_fit.round(4).to_string())
save(plot.study(appb, title="000 Figs. A1-A2 (right)"), "figA1_A2_appendix_b")

# %% [markdown]
# ## App. C, Fig. A3 — ZMSE extrapolated to zero bins
#
# N = 10, 20, …, 150 equal-count bins with M/N > 20 (popMin 20), fit on N > 20 against
# √(N/M); intercept ± 2 SE at the origin; reference lines y = 1.14x (NIG) and
# y = 0.006 + 1.577x (T6IG). Deterministic (`n_mc=0`: no null distribution here).

# %%
appc = bins(sets, preset="app-c", n_mc=0)
# Published (methods: the papers, 000 App. C): intercept, SE, slope of ZMSE: citations.
PAPER_APPC = [(0.11541, 0.026410, 1.2986), (0.16928, 0.020250, 1.9861),
              (0.09184, 0.015473, 1.0701), (0.19441, 0.0098725, 0.56961),
              (0.11060, 0.034424, 1.5305), (0.75345, 0.17991, 6.3963),
              (0.04565, 0.0063876, 1.7675), (0.12141, 0.012096, 1.5977),
              (0.12364, 0.014154, 1.7522)]
zm = appc.sel(stat="zmse")
table_c = pd.DataFrame({
    "intercept": zm.intercept.values, "paper intercept": [p[0] for p in PAPER_APPC],
    "SE": zm.intercept_se.values, "paper SE": [p[1] for p in PAPER_APPC],
    "slope": zm.slope.values, "paper slope": [p[2] for p in PAPER_APPC],
}, index=pd.Index(names, name="set"))
print(table_c.to_string(float_format=lambda v: f"{v:.5g}"))

# %%
with S.style(size="double"):
    fig, axs = S.panel_grid(9, size="double", ncols=3, aspect=0.7)
    for ax, name, lab, m in zip(axs, names, labels, sets["M"].values, strict=True):
        r = zm.sel(set=name)
        ok = np.isfinite(r.value.values)
        x = np.sqrt(r.N.values[ok] / m)
        y, used = r.value.values[ok], r.fitted.values[ok]
        ax.plot(x[~used], y[~used], "o", mfc="none", color=S.COLORS["data"])
        ax.plot(x[used], y[used], "o", color=S.COLORS["data"])
        xs = np.linspace(0, x.max(), 20)
        a, b, se = float(r.intercept), float(r.slope), float(r.intercept_se)
        ax.plot(xs, a + b * xs, color=S.COLORS["data"], lw=1)
        ax.errorbar([0], [a], yerr=[[2 * se], [2 * se]], color=S.COLORS["invalid"], lw=2)
        ax.plot(xs, 1.14 * xs, ls="--", color="0.5", lw=0.8)
        ax.plot(xs, 0.006 + 1.577 * xs, ls=":", color="0.5", lw=0.8)
        S.set_title(ax, f"{lab}: {name}")
        ax.set_xlabel(r"$\sqrt{N/M}$")
        ax.set_ylabel("ZMSE")
    S.finish(fig, title="000 Fig. A3: ZMSE vs √(N/M)")
save(fig, "figA3_appendix_c")

# %% [markdown]
# ## Checks against the published numbers
#
# * Deterministic numbers at their printed digits: M, β_GM(u) (3 decimals), IG MLE k and θ
#   (3 significant digits, methods: the papers), Table III μ, σ (one unit of the last printed
#   digit: the table rounds μ and its uncertainty together), b (integer %), ν_eff (one
#   unit: 1.25 is printed 1.3), θ_est of Tables A1–A4, App. C intercept/SE/slope (1e-4
#   relative: 5 significant digits, methods: the papers; 2e-3 relative for QM9_E, whose data
#   file differs from the authors' copy by ties in uE at bin boundaries).
# * Simulated references (Monte-Carlo, two independent runs): methods: the papers,
#   |Δ| ≤ 4·√(u_paper² + u²) + half a unit of the printed digit, with u_paper ≈ u·√(N_MC /
#   10⁴) (the paper ran N_MC = 10⁴; we take our own u rescaled as its estimate).
# * ζ_BS of ZMS: methods: the papers tolerance ±0.1 at 10⁴ replicates, or the limit tolerance
#   ±0.01 carried over to ζ = (θ − 1)/|θ − limit| when larger, scaled by √(10⁴/R).
#   The ζ_Sim of the binned statistics are printed but not asserted: their BCa intervals
#   are unsound (estimate at or beyond a limit, README "How to read the verdicts"), so the
#   ζ of two runs differ far beyond any usable tolerance.
# * App. B: the slopes within 2 % of the published ones (methods: the papers) in full mode; the
#   quick grid (3 M × 2 ν × 3 N, 100 data sets per cell) within 5 %, the intercepts
#   within 0.005.
# * Table II "calibrated": the ZMS verdicts equal the paper's except within 2 Monte-Carlo
#   sd of |ζ| = 1 (the `zeta_borderline` flag of `uqx.validate`).

# %%
def close(got, want, unit):
    """|got - want| within `unit` (plus float slack)."""
    return abs(got - want) <= unit + 1e-12


for n, p in zip(names, PAPER_TABLE_II, strict=True):
    r = table_ii.loc[n]
    if np.isfinite(p[2]):
        assert close(r["beta_GM(u)"], p[2], 5e-4), (n, r["beta_GM(u)"])
    if np.isfinite(p[3]):
        assert close(r["k"], p[3], 0.5 * 10 ** (np.floor(np.log10(p[3])) - 2)), (n, r["k"])
        assert close(r["theta"], p[4], 0.5 * 10 ** (np.floor(np.log10(p[4])) - 2)), n
    assert close(r["nu_eff"], p[5], 0.1), (n, r["nu_eff"])
    border = bool(res.zeta_borderline.sel(set=n, stat="zms"))
    assert border or bool(r["calibrated"]) == p[0], (n, r["calibrated"])

for n, p in zip(names, PAPER_TABLE_III, strict=True):
    r = table_iii.loc[n]
    for col, want in zip(III_COLS, p, strict=True):
        s = f"{want:.10g}"
        unit = 10.0 ** -(len(s.split(".")[1]) if "." in s else 0)
        assert close(r[col], want, unit), (n, col, r[col], want)

scale = np.sqrt(10_000 / N_BOOT)
for st, pub in PAPER_A.items():
    t = tables_a[st]
    for i, n in enumerate(names):
        r = t.loc[n]
        est = pub["est"][i]
        digits = 2 if st in ("zms", "cc") else 3
        # ZMS of Set 2 (0.8845) is printed 0.88 here and 0.89 in 001: one unit
        assert close(r["estimate"], est, 10.0**-digits), (st, n, r["estimate"])
        for d, key in (("N", "ref_n"), ("T6", "ref_t")):
            u = r[f"u {d}"]
            tol = 4 * np.hypot(u, u * np.sqrt(N_MC / 10_000)) + 0.5 * 10.0**-digits
            assert close(r[f"ref {d}"], pub[key][i], tol), (st, n, d, r[f"ref {d}"])
        if st == "zms":
            z = pub["zeta_n"][i]
            gap = abs(r["estimate"] - (r["BCa low"] if z > 0 else r["BCa high"]))
            tol_z = scale * max(0.1, abs(z) * 0.01 / gap)
            assert close(res.zeta.sel(set=n, stat="zms"), z, tol_z), (n, z)

for (model, st), (a, b) in PAPER_APPB.items():
    r = appb_fit.loc[(model, st)]
    assert abs(r["slope"] / b - 1) <= (0.05 if QUICK else 0.02), (model, st, r["slope"])
    assert close(r["intercept"], a, 0.005), (model, st, r["intercept"])

for n, (a, se, b) in zip(names, PAPER_APPC, strict=True):
    r = table_c.loc[n]
    for got, want in ((r["intercept"], a), (r["SE"], se), (r["slope"], b)):
        # 5 significant digits: 1e-4 relative (Set 9 SE 0.0141530 is listed 0.014154);
        # the QM9_E file differs from R's copy (ties in uE at bin boundaries move the 4th
        # digit of the SE): 2e-3 relative there, as in tests/test_verdicts.py
        unit = 1e-4 * abs(want)
        if n == "QM9_E":
            unit = 2e-3 * abs(want)
        assert close(got, want, unit), (n, got, want)
n_png = len(list(OUT.glob("000_*.png")))
assert n_png == 10, n_png
print(f"all checks passed ({time.time() - T0:.1f} s)")
