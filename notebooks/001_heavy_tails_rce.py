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
# # Paper 001 — heavy tails, RCE and ZMS
#
# Reproduces Pernot (2024), *"Can bootstrapping validate average calibration? Heavy tails,
# RCE and ZMS"* (paper 001, v3 of the 2024_RCE code; methods: the papers):
#
# * **Table I** — M and the shape parameters ν(u²) (IG), ν(E²), ν(Z²) (scaled F) fitted
#   by minimum KS distance; **Figs. 1–2** — the histograms of ln u² and ln E² with them;
# * **Fig. 3** — β_GM and κ_CS of F(1, ν) and IG(ν/2, ν/2) samples against ν;
# * **Fig. 4** — validation probability p_val of ZMS and RCE for calibrated NIG and TIG
#   data (`uqx.sweeps.pval`);
# * **Tables II–III** — safety limits and the tailedness of u², E², Z² per set;
#   **Fig. 5** — the tailedness map (`uqx.plot.tailedness_map`);
# * **Table IV** — RCE and ZMS with b_BS, BCa interval and ζ (10⁴ replicates);
#   **Fig. 6** — |ζ_RCE| vs |ζ_ZMS|, before and after removing the 5 % largest u;
# * **Fig. 7** — decimation (`uqx.sweeps.decimation`);
# * **Fig. 8** — tailedness per bin (20 bins; `uqx.sweeps.binned_tailedness`).
#
# Published numbers are typed in as citations and printed next to the reproduced ones.
# Figures are written to `notebooks/_output/` (git-ignored).
#
# **Run time** (2-core machine shared with other jobs, measured): quick mode (`QUICK=1`:
# 2000 bootstrap replicates, Fig. 3 on 10 ν with samples of 2·10⁴, p_val on 6 ν per
# model with 100 data sets × 500 replicates) ≈ 30–40 s. Full mode (10⁴ replicates, Fig. 3
# on 30 ν with samples of 5·10⁵, p_val on 21 grid points × 1000 data sets × 5000
# replicates as in the paper) ≈ 9 min (553 s); the p_val study dominates.

# %%
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

import uqx
from uqx import plot
from uqx.engine.resample import seed_sequence
from uqx.engine.stats.tailedness import SAFETY_LIMITS, beta_gm, kappa_cs, tailedness
from uqx.inference.fits import fit_ig_ks, fit_scaled_f_ks
from uqx.plot import style as S
from uqx.sweeps import binned_tailedness, decimation, pval
from uqx.text.tables import paper_table_iv

QUICK = os.environ.get("QUICK") == "1"
OUT = Path("_output")
OUT.mkdir(exist_ok=True)
T0 = time.time()

N_BOOT = 2000 if QUICK else 10_000  # Table IV, Fig. 6 and the decimation bars
FIG3_NU = 10 ** np.linspace(np.log10(2), np.log10(50), 10 if QUICK else 30)
FIG3_SIZE = 20_000 if QUICK else 500_000  # sample size of Fig. 3
PVAL_NU = ({"NIG": [2, 3, 4, 6, 10, 20], "TIG": [2.5, 3, 4, 6, 10, 20]} if QUICK
           else {"NIG": [2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20],
                 "TIG": [2.5, 3, 4, 5, 6, 7, 8, 9, 10, 20]})
PVAL_SETS = 100 if QUICK else 1000  # calibrated data sets per grid point
PVAL_BOOT = 500 if QUICK else 5000  # BCa replicates per data set
print(f"QUICK={QUICK}: n_boot={N_BOOT}, Fig. 3: {FIG3_NU.size} nu x {FIG3_SIZE}; p_val: "
      f"{PVAL_SETS} sets x {PVAL_BOOT} replicates")


def save(fig, name):
    """Write a figure to _output/ and return it (displayed by the notebook)."""
    fig.savefig(OUT / f"001_{name}.png")
    return fig


sets = uqx.load_paper_sets()
names = list(sets["set"].values)
labels = list(sets["label"].values)

# %% [markdown]
# ## Table I, Figs. 1–2 — shape parameters fitted by minimum KS distance
#
# IG fit of u² (gamma fit of 1/u²) and scaled F(1, ν) fits of E² and Z², Nelder–Mead from
# the fitdistrplus starts (`uqx.inference.fits`). Deterministic.

# %%
rows = {}
for sd in uqx.iter_sets(sets):
    ig = fit_ig_ks(sd.uE**2)
    fe, fz = fit_scaled_f_ks(sd.E**2), fit_scaled_f_ks((sd.E / sd.uE) ** 2)
    rows[sd.name] = {"nu_u2": ig["nu"], "ig_theta_ks": ig["theta"], "nu_e2": fe["nu"],
                     "scale_e2": fe["scale"], "nu_z2": fz["nu"], "scale_z2": fz["scale"]}
fits = xr.Dataset({k: ("set", [rows[n][k] for n in names]) for k in rows[names[0]]},
                  coords={"set": names})

# Published Table I of paper 001 (M, nu(u^2), nu(E^2), nu(Z^2)): citations.
PAPER_TABLE_I = [(2040, 1.72, 2.17, 7.91), (3834, 0.79, 1.18, 4.91), (2040, 5.34, 6.32, 15.10),
                 (3836, 1.53, 2.72, 8.15), (2040, 30.8, 2.75, 2.72), (3818, 1.19, 0.78, 0.85),
                 (13885, 1.91, 2.43, 3.95), (5000, 24.7, 4.24, 3.66), (5000, 17.3, 10.0, 20.2)]
paper_i = pd.DataFrame(PAPER_TABLE_I, index=names,
                       columns=["paper M", "paper nu(u2)", "paper nu(E2)", "paper nu(Z2)"])
table_i = pd.DataFrame({"set #": labels, "M": sets["M"].values,
                        "nu(u2)": fits.nu_u2.values, "nu(E2)": fits.nu_e2.values,
                        "nu(Z2)": fits.nu_z2.values}, index=pd.Index(names, name="set"))
table_i = table_i.join(paper_i)[["set #", "M", "paper M", "nu(u2)", "paper nu(u2)", "nu(E2)",
                                 "paper nu(E2)", "nu(Z2)", "paper nu(Z2)"]]
print(table_i.round(3).to_string())

# %%
save(plot.distributions(sets, panels=("u2",), fits=fits,
                        title="001 Fig. 1: ln u² with the IG fit"), "fig1_u2")
save(plot.distributions(sets, panels=("e2",), fits=fits,
                        title="001 Fig. 2: ln E² with the scaled-F fit"), "fig2_e2")

# %% [markdown]
# ## Fig. 3 — β_GM and κ_CS of F(1, ν) and IG(ν/2, ν/2) samples
#
# Samples of `FIG3_SIZE` points for ν = 10^seq(log10 2, log10 50); dashed line: N(0,1)²
# (the ν → ∞ limit of F(1, ν)); vertical line at ν = 4.

# %%
rng = np.random.Generator(np.random.PCG64(seed_sequence(1, "001-fig3")))
fig3 = pd.DataFrame(
    [(beta_gm(f), kappa_cs(f), beta_gm(g), kappa_cs(g))
     for nu in FIG3_NU
     for f, g in [(rng.f(1, nu, FIG3_SIZE), 1 / rng.gamma(nu / 2, 2 / nu, FIG3_SIZE))]],
    columns=["beta F", "kappa F", "beta IG", "kappa IG"], index=pd.Index(FIG3_NU, name="nu"),
)
n2 = rng.standard_normal(FIG3_SIZE) ** 2
normal_ref = {"beta": float(beta_gm(n2)), "kappa": float(kappa_cs(n2))}
print(fig3.round(3).to_string())
print("N(0,1)^2:", {k: round(v, 3) for k, v in normal_ref.items()})

# %%
with S.style(size="double"):
    fig, axs = S.panel_grid(2, size="double", ncols=2, aspect=0.75)
    for ax, key in zip(axs, ("beta", "kappa"), strict=True):
        ax.plot(FIG3_NU, fig3[f"{key} F"], "o-", ms=3, label="F(1, ν)  [E²]")
        ax.plot(FIG3_NU, fig3[f"{key} IG"], "s-", ms=3, label="IG(ν/2, ν/2)  [u²]")
        S.reference_line(ax, normal_ref[key])
        S.reference_line(ax, 4, kind="v")
        S.log_axis(ax, "x")
        ax.set_xlabel("ν")
        ax.set_ylabel(r"$\beta_{GM}$" if key == "beta" else r"$\kappa_{CS}$")
    axs[0].legend(fontsize="small")
    S.finish(fig, title="001 Fig. 3")
save(fig, "fig3_tailedness_vs_nu")

# %% [markdown]
# ## Fig. 4 — validation probability for calibrated synthetic data
#
# NIG: u² ~ IG(ν/2, ν/2), E = u·N(0, 1); TIG: one draw u² ~ IG(3, 3) reused, E = u·t_s(ν_D).
# `PVAL_SETS` data sets of M = 5000 per grid point, BCa intervals with `PVAL_BOOT`
# replicates; p_val = fraction of intervals containing the reference, Wilson-cc interval.

# %%
pv = pval(scenario=("NIG", "TIG"), nu=PVAL_NU, n_datasets=PVAL_SETS, n_boot=PVAL_BOOT,
          seed=2024)

# Published p_val (ZMS, RCE) and upper-axis means (2024_RCE testValidRCE*.Rda, as
# published): NIG with mean beta_GM(u^2), kappa_CS(u^2); TIG with beta_GM(E^2), kappa_CS(E^2).
PAPER_PVAL = {
    "NIG": {2: (0.939, 0.780, 0.927, 11.56), 3: (0.955, 0.868, 0.764, 4.97),
            4: (0.958, 0.933, 0.644, 3.02), 5: (0.950, 0.931, 0.566, 2.14),
            6: (0.937, 0.949, 0.511, 1.66), 7: (0.937, 0.933, 0.469, 1.35),
            8: (0.954, 0.948, 0.436, 1.14), 9: (0.955, 0.948, 0.409, 0.99),
            10: (0.955, 0.958, 0.386, 0.87), 15: (0.950, 0.943, 0.312, 0.54),
            20: (0.939, 0.938, 0.269, 0.39)},
    "TIG": {2.5: (0.655, 0.667, 0.919, 10.63), 3: (0.838, 0.827, 0.887, 8.43),
            4: (0.910, 0.899, 0.844, 6.32), 5: (0.929, 0.926, 0.820, 5.39),
            6: (0.946, 0.933, 0.804, 4.84), 7: (0.940, 0.930, 0.793, 4.49),
            8: (0.952, 0.939, 0.785, 4.25), 9: (0.958, 0.948, 0.780, 4.11),
            10: (0.936, 0.931, 0.776, 3.94), 20: (0.958, 0.944, 0.755, 3.43)},
}
AXIS_VAR = {"NIG": "u2", "TIG": "e2"}
fig4 = []
for scen, grid in PVAL_NU.items():
    for nu in grid:
        p = pv.sel(scenario=scen, nu=float(nu))
        ref = PAPER_PVAL[scen][nu]
        v = AXIS_VAR[scen]
        fig4.append({"model": scen, "nu": nu,
                     "p_val ZMS": float(p.p_val.sel(stat="zms")), "paper ZMS": ref[0],
                     "p_val RCE": float(p.p_val.sel(stat="rce")), "paper RCE": ref[1],
                     "beta_GM": float(p[f"beta_gm_{v}_mean"]), "paper beta_GM": ref[2],
                     "kappa_CS": float(p[f"kappa_cs_{v}_mean"]), "paper kappa_CS": ref[3]})
fig4 = pd.DataFrame(fig4).set_index(["model", "nu"])
print(fig4.round(3).to_string())

# %%
with S.style(size="double"):
    fig, axs = S.panel_grid(2, size="double", ncols=2, aspect=0.75, sharey=True)
    for ax, scen in zip(axs, ("NIG", "TIG"), strict=True):
        grid = PVAL_NU[scen]
        for j, st in enumerate(("zms", "rce")):
            p = pv.sel(scenario=scen, nu=[float(n) for n in grid], stat=st)
            ax.errorbar(grid, p.p_val, yerr=[p.p_val - p.p_val_low, p.p_val_high - p.p_val],
                        fmt="o-", color=S.COLORS["series"][j], label=st.upper(), capsize=2)
        S.reference_line(ax, 0.95)
        S.log_axis(ax, "x")
        ax.set_xlabel(r"$\nu_{IG}$" if scen == "NIG" else r"$\nu_D$")
        top = ax.secondary_xaxis("top")
        shown = [(n, b) for n, b in zip(grid, fig4.loc[scen, "beta_GM"], strict=True)
                 if n in (2, 2.5, 3, 4, 6, 10, 20)]
        top.set_xticks([n for n, _ in shown], [f"{b:.2f}" for _, b in shown],
                       fontsize="xx-small")
        top.set_xlabel(r"$\beta_{GM}$(" + ("u²" if scen == "NIG" else "E²") + ")")
    axs[0].set_ylabel(r"$p_{val}$")
    axs[0].legend()
    S.finish(fig, title="001 Fig. 4: NIG (left), TIG (right)")
save(fig, "fig4_pval")

# %% [markdown]
# ## Tables II–III, Fig. 5 — safety limits and tailedness of the nine sets

# %%
table_ii = pd.DataFrame({"beta_GM": [SAFETY_LIMITS["beta_gm_u2"], SAFETY_LIMITS["beta_gm_e2"],
                                     SAFETY_LIMITS["beta_gm_z2"]],
                         "kappa_CS": [SAFETY_LIMITS["kappa_cs_u2"],
                                      SAFETY_LIMITS["kappa_cs_e2"],
                                      SAFETY_LIMITS["kappa_cs_z2"]],
                         "impacted": ["RCE", "RCE", "ZMS"]}, index=["u2", "E2", "Z2"])
print(table_ii.to_string())

TAIL_KEYS = ["beta_gm_u2", "kappa_cs_u2", "beta_gm_e2", "kappa_cs_e2", "beta_gm_z2",
             "kappa_cs_z2"]
# Published Table III of paper 001, in the order of TAIL_KEYS: citations.
PAPER_TABLE_III = [
    (0.40, -0.20, 0.82, 5.06, 0.73, 2.32), (0.72, 4.10, 0.94, 19.68, 0.83, 6.37),
    (0.66, 3.19, 0.74, 2.19, 0.69, 1.48), (0.74, 5.67, 0.82, 4.52, 0.69, 2.07),
    (0.19, 1.84, 0.78, 4.32, 0.79, 4.07), (0.50, 1.46, 0.96, 22.70, 0.95, 23.97),
    (0.93, 3.91, 0.98, 9.84, 0.78, 3.97), (0.30, 0.41, 0.79, 4.77, 0.78, 4.69),
    (0.30, 0.48, 0.77, 5.06, 0.75, 4.48),
]
tails = [tailedness(sd.E, sd.uE) for sd in uqx.iter_sets(sets)]
table_iii = pd.concat({
    "uqx": pd.DataFrame([[float(t[k]) for k in TAIL_KEYS] for t in tails], index=names,
                        columns=TAIL_KEYS),
    "paper": pd.DataFrame(PAPER_TABLE_III, index=names, columns=TAIL_KEYS),
}, axis=1).swaplevel(axis=1)[TAIL_KEYS]
print(table_iii.round(3).to_string())

# %%
save(plot.tailedness_map(sets, title="001 Fig. 5"), "fig5_tailedness_map")

# %% [markdown]
# ## Table IV, Fig. 6 — RCE and ZMS validation; removal of the 5 % largest u
#
# Right panel of Fig. 6: sort u decreasingly (stable), drop the round(0.05·M) first points,
# bootstrap again.

# %%
res = uqx.validate(sets, ["rce", "zms"], bootstrap=N_BOOT,
                   # the papers' R convention: rows in file order
                   binning=uqx.Binning(ties="file-order"), conditional=False,
                   compute=uqx.Compute(seed=2024))
table_iv = paper_table_iv(res)
# Published Table IV of paper 001 (estimate, b_BS, CI low, CI high, zeta): citations.
PAPER_RCE = [(0.019, 2.2e-04, -0.021, 0.055, 0.47), (-0.039, 5.9e-04, -0.106, 0.020, -0.66),
             (-0.0075, -2.1e-04, -0.054, 0.040, -0.16), (0.055, -3.9e-04, -0.0025, 0.12, 0.96),
             (0.099, 1.4e-04, 0.057, 0.14, 2.33), (0.092, 9.9e-04, 0.00079, 0.16, 1.01),
             (-0.26, 5.5e-03, -0.68, -0.0012, -1.00), (0.046, 1.3e-05, 0.0082, 0.077, 1.22),
             (-0.013, 2.1e-04, -0.072, 0.027, -0.33)]
PAPER_ZMS = [(0.96, -2.7e-04, 0.87, 1.11, -0.27), (0.89, -7.3e-04, 0.80, 0.999, -1.01),
             (1.12, 9.4e-05, 1.05, 1.2, 1.73), (1.23, -6.4e-04, 1.16, 1.3, 3.50),
             (0.85, 1.3e-04, 0.78, 0.93, -1.84), (0.98, -6.2e-04, 0.85, 1.15, -0.10),
             (0.97, 2.6e-04, 0.94, 1.01, -0.69), (0.93, 3.4e-04, 0.87, 0.99, -1.12),
             (0.97, 2.5e-04, 0.90, 1.08, -0.26)]
COLS = ["estimate", "b_BS", "ci_low", "ci_high", "zeta"]
paper_iv = pd.concat({"RCE": pd.DataFrame(PAPER_RCE, columns=COLS, index=names),
                      "ZMS": pd.DataFrame(PAPER_ZMS, columns=COLS, index=names)}, axis=1)
side_by_side = pd.concat({"uqx": table_iv, "paper": paper_iv}, axis=1)
for st in ("RCE", "ZMS"):
    print(f"--- {st}")
    print(side_by_side.xs(st, axis=1, level=1).round(4).to_string())

# %%
pruned = []
for sd in uqx.iter_sets(sets):
    keep = np.argsort(-sd.uE, kind="stable")[round(0.05 * sd.M):]
    pruned.append(uqx.from_arrays(sd.E[keep], sd.uE[keep], name=sd.name))
pruned = uqx.stack(pruned)
res_top5 = uqx.validate(pruned, ["rce", "zms"], bootstrap=N_BOOT,
                        binning=uqx.Binning(ties="file-order"), conditional=False,
                        compute=uqx.Compute(seed=2024))
top5 = pd.DataFrame({"M": res_top5["M"].values,
                     "ZMS": res_top5.estimate.sel(stat="zms").values,
                     "zeta ZMS": res_top5.zeta.sel(stat="zms").values,
                     "RCE": res_top5.estimate.sel(stat="rce").values,
                     "zeta RCE": res_top5.zeta.sel(stat="rce").values},
                    index=pd.Index(names, name="set"))
print(top5.round(4).to_string())

# %%
save(plot.zeta_agreement(res, title="001 Fig. 6 (left): all data"), "fig6_left_zeta")
save(plot.zeta_agreement(res_top5, title="001 Fig. 6 (right): 5 % largest u removed"),
     "fig6_right_zeta_top5")

# %% [markdown]
# ## Fig. 7 — decimation
#
# Sort by (u decreasing, E decreasing), remove ⌊kM/100⌋ points, k = 0, 0.1, …, 10 %;
# ΔRCE(k), ΔZMS(k); bars = zero-centred full-set BCa intervals (001 text; methods: where a paper and its code disagree).

# %%
dec = decimation(sets, n_boot=N_BOOT, seed=2024)
with S.style(size="double"):
    fig, axs = S.panel_grid(9, size="double", ncols=3, aspect=0.7)
    for ax, name, lab in zip(axs, names, labels, strict=True):
        d = dec.sel(set=name)
        for j, st in enumerate(("rce", "zms")):
            col = S.COLORS["series"][j]
            ax.plot(d.k, d.delta.sel(stat=st), color=col, label=f"Δ{st.upper()}")
            ax.errorbar([-0.4 - 0.4 * j], [0], yerr=[[-float(d.bar_low.sel(stat=st))],
                                                     [float(d.bar_high.sel(stat=st))]],
                        color=col, lw=2)
        S.reference_line(ax, 0)
        S.set_title(ax, f"{lab}: {name}")
        ax.set_xlabel("k (% largest u removed)")
    axs[0].legend(fontsize="small")
    S.finish(fig, title="001 Fig. 7: decimation")
save(fig, "fig7_decimation")

# %% [markdown]
# ## Fig. 8 — tailedness per bin (20 equal-count bins on u)
#
# Boxplots of the per-bin κ_CS of u², E², Z² (and β_GM in a second figure) with the
# full-set value (red) and the safety limit (dashed).

# %%
bt = binned_tailedness(sets, n_bins=20)
VAR_LABEL = {"u2": "u²", "e2": "E²", "z2": "Z²"}
YLIM = {("kappa_cs", "u2"): (-2, 6), ("kappa_cs", "e2"): (0, 24), ("kappa_cs", "z2"): (0, 24)}
LIMIT = {("beta_gm", "u2"): 0.6, ("beta_gm", "e2"): 0.8, ("beta_gm", "z2"): 0.8,
         ("kappa_cs", "u2"): 3, ("kappa_cs", "e2"): 5, ("kappa_cs", "z2"): 5}
for metric in ("kappa_cs", "beta_gm"):
    with S.style(size="double"):
        fig, axs = S.panel_grid(3, size="double", ncols=3, aspect=1.0)
        for ax, var in zip(axs, ("u2", "e2", "z2"), strict=True):
            vals = bt[metric].sel(var=var)
            data = [v[np.isfinite(v)] for v in vals.values]
            ax.boxplot(data, positions=range(1, 10), widths=0.6)
            ax.plot(range(1, 10), bt[f"{metric}_full"].sel(var=var), "o",
                    color=S.COLORS["invalid"])
            S.reference_line(ax, LIMIT[(metric, var)], color=S.COLORS["invalid"])
            if (metric, var) in YLIM:
                ax.set_ylim(YLIM[(metric, var)])
            ax.set_xlabel("set")
            ax.set_ylabel(("κ_CS" if metric == "kappa_cs" else "β_GM") + f"({VAR_LABEL[var]})")
        S.finish(fig, title=f"001 Fig. 8: per-bin {metric} (20 bins)")
    save(fig, f"fig8_binned_{metric}")

# %% [markdown]
# ## Checks against the published numbers
#
# * Table I: deterministic fits; the KS objective is non-smooth, so the minimiser depends
#   on the simplex path, but uqx ports R's `nmmin` (methods: the papers): within one unit of
#   the printed digit, as some values are truncated rather than rounded (Set 6 ν(Z²) =
#   0.857 in R, printed 0.85).
# * Table III: deterministic (Harrell–Davis quantiles) → half a unit of the printed digit.
# * Table IV: estimates deterministic → one unit of the printed digit (2 significant
#   digits in 001, some double-rounded: ZMS of Set 2 = 0.88452 is printed 0.89). BCa
#   limits and ζ are Monte-Carlo: methods: the papers tolerances at 10⁴ replicates (limits
#   ±0.01, ±0.03 for Set 7's lower RCE limit; ζ ±0.1, or the limit tolerance carried
#   over to ζ = (θ − ref)/|θ − limit| when larger: |ζ|·0.01/|θ − limit|, 0.5 for the
#   ZMS of Set 4), × √(10⁴/R), plus half a unit of the printed digit.
# * Fig. 6 right: the pruned sets are deterministic; methods: the papers oracles (R) for M,
#   ZMS, RCE → M exact, 1e-5 absolute.
# * Fig. 4: independent binomial estimates, |Δp_val| ≤ 3·√(p(1 − p)(1/n₁ + 1/n₂)) with
#   n₂ = 1000 (methods: the papers), + 0.01 in quick mode (fewer bootstrap replicates). Mean
#   β_GM(u²), κ_CS(u²) of the NIG sets: within 4 standard errors of the difference of two
#   means (our per-set sd, n₁ = `PVAL_SETS` and n₂ = 500 sets in the paper) + 0.005.
# * Fig. 8: the per-bin values are deterministic; the full-set values equal Table III.

# %%
def half_unit(v, decimals):
    """Half a unit of the last printed decimal (plus float slack)."""
    return 0.5 * 10.0**-decimals + 1e-12


def decimals_of(v):
    """Return the number of decimals of a value typed as printed."""
    s = f"{v:.10g}"
    return len(s.split(".")[1]) if "." in s else 0


for n, (m, nu_u, nu_e, nu_z) in zip(names, PAPER_TABLE_I, strict=True):
    assert table_i.loc[n, "M"] == m
    for col, want in (("nu(u2)", nu_u), ("nu(E2)", nu_e), ("nu(Z2)", nu_z)):
        # printed with 2 decimals below 10 and 3 significant digits above; some values
        # are truncated, not rounded (Set 6 nu(Z2) = 0.857 printed 0.85): one unit
        dec_ = 2 if want < 10 else 1
        assert abs(table_i.loc[n, col] - want) <= 2 * half_unit(want, dec_), (n, col)

for n, row in zip(names, PAPER_TABLE_III, strict=True):
    for k, want in zip(TAIL_KEYS, row, strict=True):
        assert abs(table_iii.loc[n, (k, "uqx")] - want) <= half_unit(want, 2), (n, k)

scale = np.sqrt(10_000 / N_BOOT)
for st, paper in (("RCE", PAPER_RCE), ("ZMS", PAPER_ZMS)):
    for n, (est, _bias, lo, hi, z) in zip(names, paper, strict=True):
        r = table_iv.loc[n, st]
        # 2 significant digits, double-rounded in places (ZMS 0.88452 printed 0.89): one unit
        digits = decimals_of(est) if abs(est) < 1 else 2
        assert abs(r["estimate"] - est) <= 2 * half_unit(est, digits), (st, n, r["estimate"])
        tol_lo = 0.03 if (st, n) == ("RCE", "QM9_E") else 0.01
        assert abs(r["ci_low"] - lo) <= scale * tol_lo + half_unit(lo, decimals_of(lo))
        assert abs(r["ci_high"] - hi) <= scale * 0.01 + half_unit(hi, decimals_of(hi))
        # zeta = (theta - ref) / |theta - limit|: a limit error d moves it by
        # |zeta| d / |theta - limit|, so the limit tolerance carries over to zeta
        gap = est - lo if z > 0 else hi - est
        tol_z = scale * max(0.1, abs(z) * 0.01 / gap) + 0.005
        assert abs(r["zeta"] - z) <= tol_z, (st, n, r["zeta"], z)

TOP5 = {"Diffusion_RF": (1938, 0.95537, 0.02968), "Perovskite_RF": (3642, 0.86772, 0.00699),
        "Diffusion_LR": (1938, 1.14712, -0.09409), "Perovskite_LR": (3644, 1.25964, -0.12171),
        "Diffusion_GPR_Bayesian": (1938, 0.86460, 0.08146),
        "Perovskite_GPR_Bayesian": (3627, 1.00037, 0.08538),
        "QM9_E": (13191, 0.94096, 0.04316), "logP_10k_a_LS-GCN": (4750, 0.90296, 0.06823),
        "logP_150k_LS-GCN": (4750, 0.93603, 0.01605)}
for n, (m, zms, rce) in TOP5.items():
    assert top5.loc[n, "M"] == m
    assert abs(top5.loc[n, "ZMS"] - zms) <= 1e-5 and abs(top5.loc[n, "RCE"] - rce) <= 1e-5

for (scen, nu), r in fig4.iterrows():
    for st in ("ZMS", "RCE"):
        p = r[f"paper {st}"]
        tol = 3 * np.sqrt(p * (1 - p) * (1 / PVAL_SETS + 1 / 1000)) + (0.01 if QUICK else 0)
        assert abs(r[f"p_val {st}"] - p) <= tol, (scen, nu, st, r[f"p_val {st}"], p)
    if scen == "NIG":
        for k in ("beta_GM", "kappa_CS"):
            key = "beta_gm_u2" if k == "beta_GM" else "kappa_cs_u2"
            sd_ = float(pv[key].sel(scenario=scen, nu=float(nu)).std())
            tol = 4 * sd_ * np.sqrt(1 / PVAL_SETS + 1 / 500) + 0.005
            assert abs(r[k] - r[f"paper {k}"]) <= tol, (scen, nu, k, r[k])

for m in ("beta_gm", "kappa_cs"):
    for v in ("u2", "e2", "z2"):
        got = bt[f"{m}_full"].sel(var=v).values
        want = [float(t[f"{m}_{v}"]) for t in tails]
        assert np.allclose(got, want, rtol=1e-10, atol=1e-12), (m, v)
n_png = len(list(OUT.glob("001_*.png")))
assert n_png == 10, n_png
print(f"all checks passed ({time.time() - T0:.1f} s)")
