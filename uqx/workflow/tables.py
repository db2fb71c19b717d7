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
    "check_result",
    "split_warnings",
    "result_table",
    "verdict_table",
    "result_dataframe",
    "result_records",
    "paper_table_iv",
    "paper_table_a",
    "fval_table",
    "conditional_table",
    "reason_lines",
    "grouped_warnings",
    "format_validation",
    "warning_lines",
    "format_df",
]

#: Separator of several warnings in the string variables ``warnings``/``set_warnings``.
WARN_SEP = "\n"


def split_warnings(text) -> list[str]:
    """Split a ``warnings`` string variable into its messages."""
    return [w for w in str(text).split(WARN_SEP) if w]


def check_result(res, what: str = "result_table") -> None:
    """Check that ``res`` is a validation result, or say what it is and what to do.

    Parameters
    ----------
    res : object
        What was given to a table function.
    what : str
        The function's name, first word of the message.

    Raises
    ------
    InputError
        Not an :class:`xarray.Dataset`; input data (``E``, ``uE``); a sweep archive
        (``attrs["study"]``); any other Dataset without ``estimate``/``verdict`` over
        (``set``, ``stat``).
    """
    from uqx.errors import InputError

    if not isinstance(res, xr.Dataset):
        raise InputError(f"{what}: expected the xarray.Dataset returned by uqx.validate, got "
                         f"{type(res).__name__}")
    if "estimate" in res and "verdict" in res and {"set", "stat"} <= set(res["verdict"].dims):
        return
    if "study" in res.attrs:
        raise InputError(
            f"{what}: this is a sweep archive (study {res.attrs['study']!r}), not a "
            "validation result; summarise it with 'uqx sweep show ARCHIVE.nc' or the "
            "study's own functions (uqx.sweeps)"
        )
    if "E" in res and "uE" in res:
        raise InputError(
            f"{what}: this is input data (E, uE), not a validation result; validate it "
            f"first: res = uqx.validate(ds), then {what}(res)"
        )
    have = ", ".join(map(str, res.data_vars)) or "none"
    raise InputError(
        f"{what}: not a validation result of uqx.validate (needs 'estimate' and 'verdict' "
        f"over (set, stat)); variables present: {have[:200]}"
    )


def _flag(x, name) -> bool:
    """Return a boolean variable of a (selected) result, False when the result has none."""
    return bool(x[name].item()) if name in x else False


def _verdict_label(v, borderline) -> str:
    return f"{v} (borderline)" if bool(borderline) and v in ("valid", "invalid") else str(v)


def result_table(res: xr.Dataset, *, digits: int = 4) -> pd.DataFrame:
    """Render a validation result as a (set, stat) table (pandas).

    Columns: estimate, bias, BCa interval, reference (predefined, or simulated with
    D = N), ζ (ζ_BS or ζ_Sim with D = N), ζ_Sim for every other distribution, ``p`` (the
    ``p_min`` / ``p_max`` (the smallest and largest Monte-Carlo p-value over the members
    of the null family, :mod:`uqx.engine.mctest`: ``valid`` needs every member to accept,
    ``invalid`` every one to reject), ``resolution`` (:func:`resolution_text`: the
    miscalibration the test detects with 80 % power), verdict (with "(borderline)" when
    a member's p-value is within its Monte-Carlo noise of the size).

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output.
    digits : int, default 4
        Significant digits of the numbers.

    Returns
    -------
    pandas.DataFrame
        Indexed by (set, stat).
    """
    check_result(res, "result_table")
    cols = ["estimate", "bias", "ci_low", "ci_high", "reference", "zeta"]
    df = res[cols].to_dataframe()[cols].astype(float)
    if "zeta_sim" in res and "dist" in res.dims:
        for d in list(res["dist"].values)[1:]:
            z = res["zeta_sim"].sel(dist=d).to_series()
            df[f"zeta_{d}"] = z.where(res["reference_kind"].to_series() == "simulated")
    if "p_value" in res and "member" in res.dims:
        # valid needs every member to accept (smallest p), invalid every one to reject
        pv = res["p_value"]
        if "member_plausible" in res:  # the members that take part in the verdict
            use = res["member_plausible"]
            if "member_plausible_rank" in res:  # rank statistics: body and tails fit
                from uqx.engine.statistic import RANK_STATS, parse_stat

                rank = xr.DataArray([parse_stat(str(x)).base in RANK_STATS
                                     for x in res["stat"].values], dims="stat")
                use = xr.where(rank, res["member_plausible_rank"], use)
            pv = pv.where(use)
        with np.errstate(invalid="ignore"):
            df["p_min"] = pv.min("member").to_series()
            df["p_max"] = pv.max("member").to_series()
    df = df.round(digits)
    if "resolution_low" in res:
        sp = [res[f"resolution_spread_{k}"].to_series() if "resolution_spread_low" in res
              else pd.Series(np.nan, index=df.index) for k in ("low", "high")]
        df["resolution"] = [resolution_text(st, lo, hi, (a, b))
                            for (_, st), lo, hi, a, b in zip(
                                df.index, res["resolution_low"].to_series(),
                                res["resolution_high"].to_series(), sp[0], sp[1],
                                strict=True)]
    bl = res["borderline"].to_series() if "borderline" in res else False
    verdict = res["verdict"].to_series()
    df["verdict"] = [
        _verdict_label(v, b) for v, b in zip(verdict, bl if not isinstance(bl, bool) else
                                             [False] * len(verdict), strict=True)
    ]
    return df


def resolution_text(stat, low, high, spread=None) -> str:
    """Render the resolution of a test (:mod:`uqx.engine.resolution`) for the tables.

    Parameters
    ----------
    stat : str
        The statistic (``mean_z``: a bias of Z in units of uE; otherwise a scale f of
        the errors, E = f·uE·ε).
    low, high : float
        The factors (biases) below and above calibration detected with 80 % power.
    spread : tuple of float, optional
        Binned statistics on uE: the exponents γ below and above 1 of u = c·uE^γ
        detected with 80 % power (:func:`uqx.engine.resolution.spread_resolution`).

    Returns
    -------
    str
        ``"f <= 0.93 or >= 1.08"``, ``"bias <= -0.12 or >= 0.12"``, ``"top 10 % of uE:
        f >= 1.4; u = c·uE^γ: γ <= 0.75 or >= 1.2"`` (binned statistics on uE: uE too
        small by f in the bins above its 90th percentile; the spread of uE wrong),
        ``"out of reach"`` beyond the grid, ``""`` without a resolution.
    """
    def one(x, fmt):
        return fmt.format(x) if np.isfinite(x) else "out of reach"
    kind = resolution_kind(stat)
    if kind == "top":
        parts = []
        if np.isfinite(high):
            parts.append(f"top 10 % of uE: f >= {one(high, '{:.3g}')}")
        if spread is not None and np.isfinite(spread).any():
            parts.append(f"u = c·uE^γ: γ <= {one(spread[0], '{:.2f}')} or "
                         f">= {one(spread[1], '{:.2f}')}")
        return "; ".join(parts)
    if not (np.isfinite(low) or np.isfinite(high)):
        return ""
    if kind == "bias":
        return f"bias <= {one(low, '{:.3g}')} or >= {one(high, '{:.3g}')}"
    return f"f <= {one(low, '{:.3g}')} or >= {one(high, '{:.3g}')}"


def spread_of(x, prefix: str = "resolution_spread"):
    """``(low, high)`` of the spread resolution of one (set, stat) selection.

    ``prefix``: ``"cond_resolution_spread"`` for one (set, cond) headline. None when
    the result has no such variables.
    """
    if f"{prefix}_low" not in x:
        return None
    return float(x[f"{prefix}_low"]), float(x[f"{prefix}_high"])


def headline_resolution_text(r) -> str:
    """Render the resolution of a consistency headline for its row of the table.

    ``"; resolution top 10 % of uE: f >= 1.4; u = c·uE^γ: γ <= 0.8 or >= 1.15"`` for a
    headline that is not ``invalid`` and states a resolution (``cond_resolution``,
    ``cond_resolution_spread_*``), else ``""``.

    Parameters
    ----------
    r : xarray.Dataset
        One (set, cond) of a result.
    """
    if "cond_resolution" not in r or str(r["cond_verdict"].item()) == "invalid":
        return ""
    text = resolution_text("zmse", np.nan, float(r["cond_resolution"]),
                           spread_of(r, "cond_resolution_spread"))
    return f"; resolution {text}" if text else ""


def resolution_kind(stat) -> str:
    """Return the alternative of a statistic's resolution (``scale``, ``bias``, ``top``).

    From :data:`uqx.engine.resolution.RESOLUTION_KIND`; ``''`` for none.
    """
    from uqx.engine.resolution import RESOLUTION_KIND

    name = str(stat).lower()
    base = name[:-2] if name.endswith(("_x", "_v")) else name
    return RESOLUTION_KIND.get(base, "")


def _p_range(pv, r) -> str:
    """``"p 0.012-0.2 (N, fit, data)"``: the p-values of the members that take part."""
    labels = [str(m) for m in pv["member"].values]
    use = (r["member_plausible"].values.astype(bool) if "member_plausible" in r
           else np.ones(len(labels), dtype=bool))
    vals = pv.values[use]
    names = ", ".join(lab for lab, k in zip(labels, use, strict=True) if k)
    if not np.isfinite(vals).any():
        return f"p not finite ({names})"
    lo, hi = np.nanmin(vals), np.nanmax(vals)
    text = f"{lo:.3g}" if lo == hi else f"{lo:.3g}-{hi:.3g}"
    return f"p {text} ({names})"


def _cond_name(c) -> str:
    return {"uE": "consistency (uE)"}.get(str(c), f"adaptivity ({c})")


def verdict_table(res: xr.Dataset) -> pd.DataFrame:
    """One row per data set, one column per verdict: the headline table of a result.

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output.

    Returns
    -------
    pandas.DataFrame
        Index ``set``; column ``M``, then one column per statistic (``zms``, ``rce``,
        ``cc``, ...) holding its verdict (``valid``, ``invalid``, ``inconclusive`` or
        ``not tested``, with ``(borderline)`` when its abs(ζ) is within the Monte-Carlo noise
        of 1), then the conditional headlines ``consistency (uE)`` and
        ``adaptivity (X)`` / ``adaptivity (V)`` when the result has them.

    Examples
    --------
    >>> res = uqx.validate(ds, seed=1)  # doctest: +SKIP
    >>> uqx.verdict_table(res)[["zms", "rce", "consistency (uE)"]]  # doctest: +SKIP
    """
    check_result(res, "verdict_table")
    table = result_table(res)["verdict"].unstack("stat")
    table = table[[str(s) for s in res["stat"].values]]  # the result's order, not sorted
    table.columns.name = None
    table.insert(0, "M", res["M"].to_series().astype(int).values if "M" in res.coords
                 else np.nan)
    if "cond_verdict" in res:
        for c in res["cond"].values:
            table[_cond_name(c)] = res["cond_verdict"].sel(cond=c).to_series().astype(str)
    table.index.name = "set"
    return table


def result_dataframe(res: xr.Dataset) -> pd.DataFrame:
    """Convert a result to one long, tidy DataFrame: one row per (set, statistic).

    Unlike :func:`result_table` nothing is rounded or formatted: every number is a float
    column, the verdict, its reason and the borderline flag are plain columns, and the set
    and statistic are columns (not an index), so that results of several sets, runs or
    models concatenate and filter with ordinary pandas.

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output (one or several sets).

    Returns
    -------
    pandas.DataFrame
        Columns ``set``, ``M``, ``stat``, ``estimate``, ``bias``, ``ci_low``, ``ci_high``,
        ``reference``, ``reference_se``, ``reference_kind``, ``zeta``, then
        ``zeta_sim_<D>`` (and ``sim_reference_<D>``) for every generative distribution D
        of a simulated reference, then ``verdict``, ``borderline`` and
        ``verdict_reason``; variables the result lacks are left out.

    Examples
    --------
    >>> df = uqx.result_dataframe(res)  # doctest: +SKIP
    >>> df[df.verdict == "invalid"][["set", "stat", "zeta"]]  # doctest: +SKIP
    """
    check_result(res, "result_dataframe")
    index = ["set", "stat"]
    numbers = [v for v in ("estimate", "bias", "ci_low", "ci_high", "reference",
                           "reference_se", "zeta") if v in res]
    df = res[numbers].reset_coords(drop=True).to_dataframe()[numbers].astype(float)
    if "reference_kind" in res:
        df.insert(df.columns.get_loc("zeta") if "zeta" in df else len(df.columns),
                  "reference_kind", res["reference_kind"].to_series().astype(str))
    if "dist" in res.dims:
        simulated = (res["reference_kind"].to_series() == "simulated"
                     if "reference_kind" in res else True)
        for var in ("zeta_sim", "sim_reference"):
            if var in res:
                for d in res["dist"].values:
                    col = res[var].sel(dist=d).reset_coords(drop=True).to_series()
                    df[f"{var}_{d}"] = col.astype(float).where(simulated)
    df["verdict"] = res["verdict"].to_series().astype(str)
    if "borderline" in res:
        df["borderline"] = res["borderline"].to_series().astype(bool)
    if "verdict_reason" in res:
        df["verdict_reason"] = res["verdict_reason"].to_series().astype(str)
    df = df.reset_index()
    df["set"] = df["set"].astype(str)
    df["stat"] = df["stat"].astype(str)
    if "M" in res.coords:
        sizes = dict(zip(map(str, res["set"].values), res["M"].values.astype(int), strict=True))
        df.insert(1, "M", df["set"].map(sizes))
    return df[[*index[:1], *(["M"] if "M" in df else []), *index[1:],
               *[c for c in df.columns if c not in (*index, "M")]]]


def conditional_table(res: xr.Dataset, *, digits: int = 4) -> pd.DataFrame:
    """Conditional calibration per (set, cond): the routes and the headline verdict.

    Rows: the fraction of valid LZISD bins (with its Wilson-cc interval, a diagnostic)
    and the zero-bin extrapolation of each statistic (intercept ± 2 SE as in the papers,
    the central 95 % of its simulated null for the papers' distributions, its p-value
    under the data's own z-scores, and the verdict), then the headline (its routes and
    min-p p-value).

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output with the conditional routes.
    digits : int, default 4
        Significant digits of the numbers.

    Returns
    -------
    pandas.DataFrame
        Indexed by (set, cond, route).
    """
    rows = []
    check_result(res, "conditional_table")
    dists = [str(d) for d in res["dist"].values] if "dist" in res.dims else []
    conds = res["cond"].values if "cond" in res.dims else []
    for s in res["set"].values:
        for c in conds:
            r = res.sel(set=s, cond=c)
            name = {"uE": "consistency (uE)"}.get(str(c), f"adaptivity ({c})")
            n_rows = len(rows)
            if "fval" in res and np.isfinite(float(r["fval"])):
                rows.append({
                    "set": s, "cond": name, "route": "fraction of valid bins",
                    "value": f"{float(r['fval']):.3f} of {int(r['cond_n_bins'])}",
                    "interval": f"[{float(r['fval_ci_low']):.3f}, {float(r['fval_ci_high']):.3f}]",
                    "verdict": str(r["fval_verdict"].item()),
                })
            if "extrap_intercept" in res:
                for k in res["xstat"].values:
                    x = r.sel(xstat=k)
                    a, se = float(x["extrap_intercept"]), float(x["extrap_intercept_se"])
                    if not np.isfinite(a):
                        continue
                    null = "; ".join(
                        f"{d} [{float(x['extrap_null_low'].sel(dist=d)):.{digits}f}, "
                        f"{float(x['extrap_null_high'].sel(dist=d)):.{digits}f}]"
                        for d in dists
                    )
                    if "extrap_p_value" in res and "member" in res.dims:
                        null += "; " + _p_range(x["extrap_p_value"], r)
                    rows.append({
                        "set": s, "cond": name, "route": f"{str(k).upper()} at zero bins",
                        "value": f"{a:.{digits}f} ± {2 * se:.{digits}f}",
                        "interval": f"null {null}" if null else "",
                        "verdict": _verdict_label(str(x["extrap_verdict"].item()),
                                                  _flag(x, "extrap_borderline")),
                    })
            if "cond_verdict" in res and len(rows) > n_rows:  # no route: variable absent
                head = ""
                routes = str(r["cond_routes"].item()) if "cond_routes" in r else ""
                if not routes:  # e.g. too few points for a zero-bin fit on X
                    head = "no route could be tested"
                elif "cond_p_value" in res and "member" in res.dims:
                    head = f"min-p of {routes}; " + _p_range(r["cond_p_value"], r)
                    head += headline_resolution_text(r)
                rows.append({"set": s, "cond": name, "route": "headline", "value": "",
                             "interval": head,
                             "verdict": _verdict_label(str(r["cond_verdict"].item()),
                                                       _flag(r, "cond_borderline"))})
    if not rows:
        return pd.DataFrame(columns=["set", "cond", "route", "value", "interval", "verdict"])
    return pd.DataFrame(rows).set_index(["set", "cond", "route"])


def _num(v):
    v = float(v)
    return None if not np.isfinite(v) else v


def _stat_record(x, dists) -> dict:
    v = x["valid"].item()
    rec = {
        "estimate": _num(x["estimate"]),
        "bias": _num(x["bias"]),
        "ci_low": _num(x["ci_low"]),
        "ci_high": _num(x["ci_high"]),
        "reference": _num(x["reference"]),
        "reference_se": _num(x["reference_se"]),
        "zeta": _num(x["zeta"]),
        "valid": None if not np.isfinite(v) else bool(v),
        "verdict": str(x["verdict"].item()),
        "reference_kind": str(x["reference_kind"].item()),
    }
    if "borderline" in x:
        rec["borderline"] = bool(x["borderline"].item())
    if "p_value" in x:
        rec["p_value"] = {str(m): _num(x["p_value"].sel(member=m)) for m in x["member"].values}
        if "member_plausible" in x:  # the members whose p-values the verdict reads
            from uqx.engine.statistic import RANK_STATS, parse_stat

            use = x["member_plausible"]
            if ("member_plausible_rank" in x
                    and parse_stat(str(x["stat"].item())).base in RANK_STATS):
                use = x["member_plausible_rank"]
            rec["members"] = [str(m) for m, k in zip(x["member"].values, use.values,
                                                     strict=True) if k]
    if "resolution_low" in x and np.isfinite(x["resolution_low"].item()) | np.isfinite(
            x["resolution_high"].item()):
        rec["resolution"] = {"low": _num(x["resolution_low"]), "high": _num(x["resolution_high"]),
                             "power": 0.8, "kind": resolution_kind(x["stat"].item())}
    sp = spread_of(x)
    if sp is not None and np.isfinite(sp).any():
        rec.setdefault("resolution", {"power": 0.8, "kind": resolution_kind(x["stat"].item())})
        rec["resolution"]["spread"] = {"low": _num(x["resolution_spread_low"]),
                                       "high": _num(x["resolution_spread_high"])}
    if rec["verdict"] == "inconclusive" and "verdict_reason" in x:
        rec["verdict_reason"] = str(x["verdict_reason"].item())
    if rec["reference_kind"] == "simulated" and "zeta_sim" in x:
        rec["zeta_sim"] = {d: _num(x["zeta_sim"].sel(dist=d)) for d in dists}
        rec["sim_reference"] = {d: _num(x["sim_reference"].sel(dist=d)) for d in dists}
        rec["d_sensitive"] = bool(x["d_sensitive"].item())
    return rec


def _conditional_record(r, c, dists) -> dict:
    rc = r.sel(cond=c)
    out = {}
    if "fval" in r:
        out.update({
            "fval": _num(rc["fval"]),
            "fval_ci_low": _num(rc["fval_ci_low"]),
            "fval_ci_high": _num(rc["fval_ci_high"]),
            "fval_verdict": str(rc["fval_verdict"].item()),
            "n_bins": int(rc["cond_n_bins"].item()),
        })
    if "extrap_intercept" in r:
        ex = {}
        for k in r["xstat"].values:
            x = rc.sel(xstat=k)
            e = {
                "intercept": _num(x["extrap_intercept"]),
                "intercept_se": _num(x["extrap_intercept_se"]),
                "slope": _num(x["extrap_slope"]),
                "slope_se": _num(x["extrap_slope_se"]),
                "papers_valid": bool(x["extrap_papers_valid"].item()),
                "null_interval": {d: [_num(x["extrap_null_low"].sel(dist=d)),
                                      _num(x["extrap_null_high"].sel(dist=d))] for d in dists},
                "verdict": str(x["extrap_verdict"].item()),
                "borderline": _flag(x, "extrap_borderline"),
            }
            if e["verdict"] != "valid":
                e["verdict_reason"] = str(x["extrap_verdict_reason"].item())
            ex[str(k)] = e
        out["extrapolation"] = ex
    if "cond_verdict" in r:
        out["verdict"] = str(rc["cond_verdict"].item())
        out["borderline"] = _flag(rc, "cond_borderline")
        sp = spread_of(rc, "cond_resolution_spread")
        has_sp = sp is not None and bool(np.isfinite(sp).any())
        if "cond_resolution" in r and out["verdict"] != "invalid" and (
                np.isfinite(float(rc["cond_resolution"])) or has_sp):
            out["resolution"] = {"high": _num(rc["cond_resolution"]), "power": 0.8,
                                 "kind": "top"}
            if has_sp:  # u = c*uE^gamma: the exponents below and above 1
                out["resolution"]["spread"] = {"low": _num(rc["cond_resolution_spread_low"]),
                                               "high": _num(rc["cond_resolution_spread_high"])}
        if out["verdict"] == "inconclusive":
            out["verdict_reason"] = str(rc["cond_verdict_reason"].item())
    return out


def result_records(res: xr.Dataset) -> list[dict]:
    """JSON-ready records: one object per data set (see ``uqx validate --format json``).

    Keys: ``dataset``, ``M``, ``stats.<name>`` (estimate, interval, reference, ζ,
    ``verdict`` and, when inconclusive, ``verdict_reason``; ``zeta_sim`` per distribution
    for simulated references; ``p_value`` per member of the null family and ``members``,
    those that take part in the verdict), ``conditional.<uE|X|V>`` (fraction of valid bins,
    ``extrapolation.<ence|zmse|zve>`` with ``intercept`` and ``verdict``, headline
    ``verdict``), ``scale_factor`` (√ZMS with its interval, and the consistency
    verdict of the rescaled uE, :mod:`uqx.workflow.recalibration`), ``warnings`` (one
    line per cause) and ``settings`` (``seed``, ``n_boot``,
    ``n_mc``, ``ties``: what reproduces the record bit for bit, the seed included when it
    was drawn).

    Parameters
    ----------
    res : xarray.Dataset
        A :func:`uqx.validate` result.

    Returns
    -------
    list of dict
        One JSON-serialisable record per data set.
    """
    check_result(res, "result_records")
    settings = {k: (int(res.attrs[k]) if k != "ties" else str(res.attrs[k]))
                for k in ("seed", "n_boot", "n_mc", "ties") if k in res.attrs}
    dists = [str(d) for d in res["dist"].values] if "dist" in res.dims else []
    recs = []
    for s in res["set"].values:
        r = res.sel(set=s)
        stats = {str(st).lower(): _stat_record(r.sel(stat=st), dists) for st in r["stat"].values}
        rec = {"dataset": str(s), "M": int(r["M"].item()), "stats": stats,
               "warnings": grouped_warnings(res, s), "settings": dict(settings)}
        if "n_bins_used" in r and int(r["n_bins_used"]) >= 0:
            rec["n_bins_used"] = int(r["n_bins_used"])
        if "cond" in res.dims:
            rec["conditional"] = {str(c): _conditional_record(r, c, dists)
                                  for c in res["cond"].values}
        if "scale_factor" in r:
            rec["scale_factor"] = {
                "factor": _num(r["scale_factor"]), "low": _num(r["scale_factor_low"]),
                "high": _num(r["scale_factor_high"]),
                "rescaled_consistency": str(r["rescaled_consistency"].item()) or None,
                "reason": str(r["rescaled_consistency_reason"].item()),
                "resolution": _num(r["rescaled_consistency_resolution"])}
            if "scale_within_tolerance" in r:
                w = float(r["scale_within_tolerance"])
                rec["scale_factor"]["tolerance"] = {
                    "tolerance": float(r["scale_within_tolerance"].attrs["tolerance"]),
                    "within": None if np.isnan(w) else bool(w),
                    "p_value": _num(r["scale_tolerance_p_value"])}
            if "rescaled_consistency_spread_low" in r:
                rec["scale_factor"]["resolution_spread"] = {
                    "low": _num(r["rescaled_consistency_spread_low"]),
                    "high": _num(r["rescaled_consistency_spread_high"])}
        recs.append(rec)
    return recs


def grouped_warnings(res: xr.Dataset, s) -> list[str]:
    """Warnings of one set, one line per cause: statistics sharing a message are grouped.

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output.
    s : str
        Name of the set.

    Returns
    -------
    list of str
        One line per cause.
    """
    r = res.sel(set=s)
    lines = list(split_warnings(r["set_warnings"].item()))
    by_text: dict[str, list[str]] = {}
    for st in r["stat"].values:
        for w in split_warnings(r["warnings"].sel(stat=st).item()):
            by_text.setdefault(w, []).append(str(st).upper())
    lines += [f"{', '.join(names)}: {w}" for w, names in by_text.items()]
    return lines


def format_validation(res: xr.Dataset) -> str:
    """Return the text printed by ``uqx validate`` and ``uqx show`` for a validation result."""
    a = res.attrs
    parts = [
        f"# uqx validate: BCa {float(a.get('level', 0.95)):.0%} intervals, "
        f"n_boot={a.get('n_boot')}, n_mc={a.get('n_mc')}, seed={a.get('seed')}",
        format_df(result_table(res)),
    ]
    if "cond" in res.dims:
        parts += ["\n# conditional calibration: consistency (bins on uE) and adaptivity "
                  "(bins on X/V)", format_df(conditional_table(res))]
    if "scale_factor" in res:
        from uqx.workflow.recalibration import recalibration_text

        parts += ["\n# scale factor f = sqrt(ZMS) [BCa]: does one number fix uE?"]
        parts += [f"{s}: {recalibration_text(res.sel(set=s))}" for s in res["set"].values]
    why = reason_lines(res)
    if why:
        parts += ["\n# why inconclusive", "\n".join(why)]
    lines = warning_lines(res)
    if lines:
        parts += ["\n# warnings", "\n".join(lines)]
    return "\n".join(parts)


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

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output with simulated references.
    stat : str
        The statistic.

    Returns
    -------
    pandas.DataFrame
        One row per set.
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


def reason_lines(res: xr.Dataset) -> list[str]:
    """Return why each ``inconclusive`` verdict is one: one line per set and reason.

    The statistics and headlines (``cond_verdict``) that share a reason
    (e.g. the members that reject and those that accept, the tails beyond the family's
    reach) are listed together: ``"- set: ZMS, RCE, consistency (uE): <reason>"``.

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output.

    Returns
    -------
    list of str
        Empty when no verdict is ``inconclusive`` with a reason.
    """
    out = []
    for i, name in enumerate(res["set"].values):
        groups: dict[str, list[str]] = {}
        if "verdict_reason" in res:
            for st, v, why in zip(res["stat"].values, res["verdict"].values[i],
                                  res["verdict_reason"].values[i], strict=True):
                if str(v) == "inconclusive" and str(why):
                    groups.setdefault(str(why), []).append(str(st).upper())
        if "cond_verdict_reason" in res and "cond" in res.dims:
            for c, v, why in zip(res["cond"].values, res["cond_verdict"].values[i],
                                 res["cond_verdict_reason"].values[i], strict=True):
                if str(v) == "inconclusive" and str(why):
                    groups.setdefault(str(why), []).append(_cond_name(c))
        out += [f"- {name}: {', '.join(who)}: {why}" for why, who in groups.items()]
    return out


def warning_lines(res) -> list[str]:
    """One line per (set, cause) of a validation result, in plain words."""
    return [f"- {s}: {w}" for s in res["set"].values for w in grouped_warnings(res, s)]


def _fmt(v):
    return "nan" if v is None or not np.isfinite(v) else f"{v:.6g}"


def format_df(df: pd.DataFrame) -> str:
    """Render a table as plain text (all rows and columns)."""
    with pd.option_context(
        "display.max_rows", 500, "display.max_columns", 50, "display.width", 160
    ):
        return df.to_string()
