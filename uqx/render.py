"""Rendering of validation results: tables (pandas), JSON records and the CLI text.

Everything here reads a result :class:`xarray.Dataset` (in memory or from NetCDF) and
computes nothing: ``uqx validate`` and ``uqx show`` print the same text.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

__all__ = [
    "WARN_SEP",
    "split_warnings",
    "result_table",
    "result_records",
    "paper_table_iv",
    "paper_table_a",
    "fval_table",
    "warning_lines",
    "format_df",
]

#: Separator of several warnings in the string variables ``warnings``/``set_warnings``.
WARN_SEP = "\n"


def split_warnings(text) -> list[str]:
    """Split a ``warnings`` string variable into its messages."""
    return [w for w in str(text).split(WARN_SEP) if w]


def result_table(res: xr.Dataset, *, digits: int = 4) -> pd.DataFrame:
    """Render a validation result as a (set, stat) table (pandas)."""
    cols = ["estimate", "bias", "ci_low", "ci_high", "reference", "zeta", "verdict"]
    df = res[cols].to_dataframe()[cols]
    num = ["estimate", "bias", "ci_low", "ci_high", "reference", "zeta"]
    df[num] = df[num].astype(float).round(digits)
    return df


def _num(v):
    v = float(v)
    return None if not np.isfinite(v) else v


def result_records(res: xr.Dataset) -> list[dict]:
    """JSON-ready records: one object per data set (see ``uqx validate --format json``)."""
    recs = []
    for s in res["set"].values:
        r = res.sel(set=s)
        stats = {}
        warns = split_warnings(r["set_warnings"].item())
        for st in r["stat"].values:
            x = r.sel(stat=st)
            v = x["valid"].item()
            stats[str(st).lower()] = {
                "estimate": _num(x["estimate"]),
                "bias": _num(x["bias"]),
                "ci_low": _num(x["ci_low"]),
                "ci_high": _num(x["ci_high"]),
                "reference": _num(x["reference"]),
                "reference_se": _num(x["reference_se"]),
                "zeta": _num(x["zeta"]),
                "valid": None if not np.isfinite(v) else bool(v),
                "reference_kind": str(x["reference_kind"].item()),
            }
            warns += [f"{st}: {w}" for w in split_warnings(x["warnings"].item())]
        rec = {"dataset": str(s), "M": int(r["M"].item()), "stats": stats, "warnings": warns}
        if "fval" in res:
            rec["conditional"] = {
                str(c): {
                    "fval": _num(r["fval"].sel(cond=c)),
                    "fval_ci_low": _num(r["fval_ci_low"].sel(cond=c)),
                    "fval_ci_high": _num(r["fval_ci_high"].sel(cond=c)),
                    "n_bins": int(r["lzisd"].sel(cond=c).notnull().sum()),
                }
                for c in res["cond"].values
            }
        recs.append(rec)
    return recs


def paper_table_iv(res: xr.Dataset) -> pd.DataFrame:
    """Equivalent of 001 Table IV (004 Table 2): RCE and ZMS with b_BS, BCa I_BS and ζ."""
    cols = {}
    for st in ("rce", "zms"):
        if st not in res["stat"].values:
            continue
        r = res.sel(stat=st)
        cols[(st.upper(), "estimate")] = r["estimate"].values
        cols[(st.upper(), "b_BS")] = r["bias"].values
        cols[(st.upper(), "ci_low")] = r["ci_low"].values
        cols[(st.upper(), "ci_high")] = r["ci_high"].values
        cols[(st.upper(), "zeta")] = r["zeta"].values
    df = pd.DataFrame(cols, index=pd.Index(res["set"].values, name="set"))
    return df.round(5)


def paper_table_a(res: xr.Dataset, stat: str) -> pd.DataFrame:
    """Tabulate the equivalent of 000 Tables A1–A4 for one statistic.

    Columns: θ_est, θ_ref, b_BS, I_BS, ζ_BS, then for each generative distribution
    θ̃_ref, u(θ̃_ref), ζ_Sim, I_Sim2, ζ_Sim2.
    """
    r = res.sel(stat=stat)
    cols = {
        ("BS", "estimate"): r["estimate"].values,
        ("BS", "reference"): np.where(
            r["reference_kind"].values == "predefined", r["reference"].values, np.nan
        ),
        ("BS", "b_BS"): r["bias"].values,
        ("BS", "ci_low"): r["ci_low"].values,
        ("BS", "ci_high"): r["ci_high"].values,
        ("BS", "zeta_BS"): np.where(
            r["reference_kind"].values == "predefined", r["zeta"].values, np.nan
        ),
    }
    for d in res["dist"].values:
        x = r.sel(dist=d)
        cols[(str(d), "ref")] = x["sim_reference"].values
        cols[(str(d), "u")] = x["sim_reference_se"].values
        cols[(str(d), "zeta_Sim")] = x["zeta_sim"].values
        cols[(str(d), "sim2_low")] = x["sim2_low"].values
        cols[(str(d), "sim2_high")] = x["sim2_high"].values
        cols[(str(d), "zeta_Sim2")] = x["zeta_sim2"].values
    df = pd.DataFrame(cols, index=pd.Index(res["set"].values, name="set"))
    return df.round(5)


def fval_table(res):
    """Fraction of valid LZISD bins per (set, conditioning variable) with its verdict."""
    df = res[["fval", "fval_ci_low", "fval_ci_high", "conditional_valid"]].to_dataframe()
    df = df.dropna(subset=["fval"])
    verdict = df["conditional_valid"].map({1.0: "compatible with 95%", 0.0: "too few valid bins"})
    out = pd.DataFrame({
        "n_bins": res["lzisd"].notnull().sum("bin").to_series().loc[df.index],
        "fval": df["fval"].map(_fmt),
        "wilson_cc": [f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(df["fval_ci_low"],
                                                                 df["fval_ci_high"], strict=True)],
        "verdict": verdict,
    })
    return out


def warning_lines(res) -> list[str]:
    """One line per (set, warning) of a validation result."""
    warn = [
        (str(s), w)
        for s in res["set"].values
        for w in split_warnings(res["set_warnings"].sel(set=s).item())
    ]
    warn += [
        (str(s), f"{st}: {w}")
        for s in res["set"].values
        for st in res["stat"].values
        for w in split_warnings(res["warnings"].sel(set=s, stat=st).item())
    ]
    return [f"- {s}: {w}" for s, w in warn]


def _fmt(v):
    return "nan" if v is None or not np.isfinite(v) else f"{v:.6g}"


def format_df(df: pd.DataFrame) -> str:
    """Render a table as plain text (all rows and columns)."""
    with pd.option_context(
        "display.max_rows", 500, "display.max_columns", 50, "display.width", 160
    ):
        return df.to_string()
