"""Rendering of validation results: tables (pandas), JSON records and their cells.

Everything here reads a result :class:`xarray.Dataset` (in memory or from NetCDF) and
computes nothing. The printed text of ``uqx validate`` / ``uqx show`` is
:mod:`uqx.text.console`.
"""

from __future__ import annotations

import html
import textwrap

import numpy as np
import pandas as pd
import xarray as xr

from uqx.dataio.schema import split_warnings
from uqx.engine.statistic import STATISTICS, parse_stat
from uqx.errors import InputError
from uqx.text.summary import summary_lines

__all__ = [
    "check_result",
    "interval_note",
    "DISAGREE",
    "result_table",
    "verdict_table",
    "VerdictTable",
    "question_table",
    "scale_factor_text",
    "scale_factor_cell",
    "result_dataframe",
    "result_records",
    "paper_table_iv",
    "paper_table_a",
    "fval_table",
    "conditional_table",
    "reason_lines",
    "grouped_warnings",
    "QUESTION_NAMES",
    "warning_lines",
]

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
                rank = xr.DataArray([parse_stat(str(x)).family == "rank"
                                     for x in res["stat"].values], dims="stat")
                use = xr.where(rank, res["member_plausible_rank"], use)
            pv = pv.where(use)
        with np.errstate(invalid="ignore"):
            df["p_min"] = pv.min("member").to_series()
            df["p_max"] = pv.max("member").to_series()
    if "null_band_low" in res:  # binned: the calibrated band, never a bootstrap interval
        binned = pd.Series([parse_stat(str(st)).family == "binned" for _, st in df.index],
                           index=df.index)
        df.loc[binned, ["ci_low", "ci_high"]] = np.nan
        df["band_low"] = res["null_band_low"].to_series()
        df["band_high"] = res["null_band_high"].to_series()
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
        name = str(stat)
        cond = name[-1].upper() if name.lower().endswith(("_x", "_v")) else "uE"
        if np.isfinite(high):
            parts.append(f"top 10 % of {cond}: f >= {one(high, '{:.3g}')}")
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

    ``prefix``: ``"question_resolution_spread"`` for one (set, question). None when the
    result has no such variables.
    """
    if f"{prefix}_low" not in x:
        return None
    return float(x[f"{prefix}_low"]), float(x[f"{prefix}_high"])


#: The questions of a result as the tables name them (:mod:`uqx.engine.questions`).
QUESTION_NAMES = {"average": "average", "consistency": "consistency",
                  "adaptivity_X": "adaptivity (X)", "adaptivity_V": "adaptivity (V)",
                  "ranking": "ranking", "up_to_factor": "up to a factor"}

#: The question that answers each conditioning variable of the papers' diagnostics.
QUESTION_OF_COND = {"uE": "consistency", "X": "adaptivity_X", "V": "adaptivity_V"}


def question_resolution_text(q, r) -> str:
    """Render the resolution of question ``q`` of one (set, question) selection ``r``.

    ``"f <= 0.97 or >= 1.03"`` (average calibration: a scale of uE), ``"top 10 % of uE:
    f >= 1.13; u = c·uE^γ: γ <= 0.90 or >= 1.10"`` (consistency, up to a factor),
    ``"top 10 % of X: f >= 1.16"`` (adaptivity), ``"u = c·uE^γ: γ <= 0.74"`` (ranking),
    ``""`` without a resolution.
    """
    if "question_resolution_low" not in r:
        return ""
    lo, hi = float(r["question_resolution_low"]), float(r["question_resolution_high"])
    slo, shi = (float(r["question_resolution_spread_low"]),
                float(r["question_resolution_spread_high"]))
    q = str(q)
    if q == "average":
        return resolution_text("zms", lo, hi)
    if q == "ranking":
        return f"u = c·uE^γ: γ <= {slo:.2f}" if np.isfinite(slo) else ""
    stat = "zmse" if q in ("consistency", "up_to_factor") else f"zmse_{q[-1]}"
    return resolution_text(stat, np.nan, hi, (slo, shi) if stat == "zmse" else None)


def headline_resolution_text(r, q="consistency") -> str:
    """Render the resolution of a question for its headline row of the diagnostics table.

    ``"; resolution top 10 % of uE: f >= 1.4; u = c·uE^γ: γ <= 0.8 or >= 1.15"`` for a
    question that is not ``invalid`` and states a resolution, else ``""``.

    Parameters
    ----------
    r : xarray.Dataset
        One (set, question) of a result.
    q : str
        The question.
    """
    if "question_verdict" not in r or str(r["question_verdict"].item()) == "invalid":
        return ""
    text = question_resolution_text(q, r)
    return f"; resolution {text}" if text else ""


def resolution_kind(stat) -> str:
    """Return the alternative of a statistic's resolution (``scale``, ``bias``, ``top``).

    Its ``resolution`` in :data:`uqx.engine.statistic.STATISTICS`; ``''`` for none.
    """
    name = str(stat).lower()
    base = name[:-2] if name.endswith(("_x", "_v")) else name
    return STATISTICS[base].resolution if base in STATISTICS else ""


def _p_range(pv, r, use=None) -> str:
    """``"p 0.012-0.2 (N, fit, data)"``: the p-values of the members that take part."""
    labels = [str(m) for m in pv["member"].values]
    if use is None:
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


def _question_members(res, i, q) -> np.ndarray:
    """Members taking part in question ``q`` of set ``i``: plausible, finite p-value."""
    p = res["question_p_value"].sel(question=q).values[i]
    use = np.isfinite(p)
    name = "member_plausible_rank" if str(q) == "ranking" and \
        "member_plausible_rank" in res else "member_plausible"
    if name in res:
        use &= res[name].values[i].astype(bool)
    return use


def _range(vals, digits=2) -> str:
    vals = np.asarray(vals, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    if not vals.size:
        return ""
    lo, hi = float(vals.min()), float(vals.max())
    a, b = f"{lo:.{digits}g}", f"{hi:.{digits}g}"
    return a if a == b else f"{a}-{b}"


def _asked(res, i, q) -> bool:
    """Whether question ``q`` is part of set ``i``'s result: tests, a verdict or a reason.

    ``up_to_factor`` needs tests (binned statistics on uE): without them its reason
    ("asked only where ...") says nothing of the set.
    """
    r = res.isel(set=i).sel(question=q)
    tests = str(r["question_tests"].item()) if "question_tests" in r else ""
    why = str(r["question_reason"].item()) if "question_reason" in r else ""
    return bool(tests) or str(r["question_verdict"].item()) != "not tested" or (
        bool(why) and str(q) != "up_to_factor")


def question_table(res: xr.Dataset) -> pd.DataFrame:
    """One row per (set, question): verdict, level, p-values, resolution, tests, reason.

    The questions of :mod:`uqx.engine.questions` (average calibration, consistency,
    adaptivity on X / V, ranking, consistency up to a factor) that a set's result
    has: each with its verdict (``(borderline)`` when a member's headline p-value is
    within two Monte-Carlo sd of its level), the level it was decided at (the range
    over the members that take part, from the set's family-wise level
    ``alpha_result``), the range of its headline p-value over those members and their
    names, its resolution (:func:`question_resolution_text`; where not ``invalid``),
    its tests with their weights and the reason of an ``inconclusive`` or ``not tested``.

    Parameters
    ----------
    res : xarray.Dataset
        A :func:`uqx.validate` result.

    Returns
    -------
    pandas.DataFrame
        Indexed by (set, question); columns ``verdict``, ``level``, ``p``, ``members``,
        ``resolution``, ``tests``, ``reason``. Empty for a result without questions.
    """
    check_result(res, "question_table")
    cols = ["verdict", "level", "p", "members", "resolution", "tests", "reason"]
    if "question_verdict" not in res:
        return pd.DataFrame(columns=cols, index=pd.MultiIndex.from_arrays(
            [[], []], names=["set", "question"]))
    labels = [str(m) for m in res["member"].values] if "member" in res.dims else []
    rows, index = [], []
    for i, s in enumerate(res["set"].values):
        for q in (str(x) for x in res["question"].values):
            if not _asked(res, i, q):
                continue
            r = res.isel(set=i).sel(question=q)
            v = str(r["question_verdict"].item())
            use = _question_members(res, i, q) if "question_p_value" in res else \
                np.zeros(len(labels), dtype=bool)
            p = r["question_p_value"].values[use] if "question_p_value" in r else []
            lev = r["question_level"].values[use] if "question_level" in r else []
            bl = _flag(r, "question_borderline")
            rows.append({
                "verdict": _verdict_label(v, bl),
                "level": _range(lev) if v != "not tested" else "",
                "p": _range(p, 3) if v != "not tested" else "",
                "members": ", ".join(lab for lab, k in zip(labels, use, strict=True) if k)
                if v != "not tested" else "",
                "resolution": question_resolution_text(q, r) if v != "invalid" else "",
                "tests": str(r["question_tests"].item()) if "question_tests" in r else "",
                "reason": str(r["question_reason"].item()) if "question_reason" in r else "",
            })
            index.append((str(s), QUESTION_NAMES.get(q, q)))
    return pd.DataFrame(rows, columns=cols, index=pd.MultiIndex.from_tuples(
        index, names=["set", "question"]) if index else pd.MultiIndex.from_arrays(
        [[], []], names=["set", "question"]))


def _fac(x) -> str:
    return f"{float(x):#.3g}" if np.isfinite(float(x)) else "nan"


def _factor_interval(r) -> str:
    f, lo, hi = (float(r[k]) for k in ("scale_factor", "scale_factor_low",
                                       "scale_factor_high"))
    if np.isfinite(lo) and np.isfinite(hi):
        return f"{_fac(f)} [{_fac(lo)}, {_fac(hi)}]"
    return _fac(f)


def _average_verdict(r) -> str:
    if "question_verdict" in r and "question" in r["question_verdict"].dims:
        return str(r["question_verdict"].sel(question="average").item())
    return ""


def scale_factor_cell(r) -> str:
    """Say the factor conclusion of one set, short: the ``scale factor`` column.

    ``"consistent up to a factor 1.06 [1.02, 1.10]"``, ``"not a factor alone"``,
    ``"not needed"`` (average calibration valid), ``"f 1.06 [1.02, 1.10]; consistency
    of uE × f not tested"``, ``"f 0.940 [0.780, 1.04]; not asked (average calibration
    inconclusive)"``.

    Parameters
    ----------
    r : xarray.Dataset
        A result selected on one set, with ``scale_factor``.
    """
    if "scale_factor" not in r:
        return ""
    fac = _factor_interval(r)
    v = str(r["rescaled_consistency"].item())
    if v == "valid":
        return f"consistent up to a factor {fac}"
    if v == "invalid":
        return "not a factor alone"
    if v:
        return f"f {fac}; uE × f consistent: {v}"
    av = _average_verdict(r)
    if av == "valid":
        return "not needed"
    if av == "invalid":
        return f"f {fac}; consistency of uE × f not tested"
    return f"f {fac}; not asked (average calibration {av or 'not tested'})"


def scale_factor_text(r) -> str:
    """Render the scale factor of one set and what the rescaled uE are, in one line.

    The factor f = √ZMS with the interval of factors the test of ZMS keeps
    (:func:`uqx.workflow.recalibration.scale_factor_interval`) is always computed; the
    line says what was asked of it, so that it never reads as both computed and not:

    * ``"consistent up to a factor 1.24 [1.21, 1.26]: uE × 1.24 is consistent"`` (with
      the resolution of that verdict);
    * ``"not a factor alone: uE × 1.20 [1.16, 1.23] is still inconsistent"``;
    * ``"f = 1.06 [1.02, 1.10] brings ZMS to 1; whether uE × 1.06 is consistent was not
      tested: needs a binned statistic on uE"``;
    * ``"f = 0.990 [0.969, 1.01]; no factor needed: average calibration valid"``;
    * ``"f = 0.940 [0.780, 1.04]; whether one factor fixes uE is asked only where
      average calibration is invalid (here inconclusive)"``;

    then the tolerance claim when the result has one.

    Parameters
    ----------
    r : xarray.Dataset
        A result with :data:`uqx.workflow.recalibration.RESCALED_VARS`, selected on one
        set.
    """
    f = _fac(r["scale_factor"])
    fac = _factor_interval(r)
    v = str(r["rescaled_consistency"].item())
    why = str(r["rescaled_consistency_reason"].item())
    if v == "valid":
        text = resolution_text("zmse", np.nan, float(r["rescaled_consistency_resolution"]),
                               (float(r["rescaled_consistency_spread_low"]),
                                float(r["rescaled_consistency_spread_high"]))
                               if "rescaled_consistency_spread_low" in r else None)
        out = f"consistent up to a factor {fac}: uE × {f} is consistent"
        out += f" (resolution: {text})" if text else ""
    elif v == "invalid":
        out = f"not a factor alone: uE × {fac} is still inconsistent"
    elif v:
        out = f"f = {fac}: the consistency of uE × {f} is {v}" + (f" ({why})" if why else "")
    else:
        av = _average_verdict(r)
        if av == "valid":
            out = f"f = {fac}; no factor needed: average calibration valid"
        elif av == "invalid":
            what = why.removeprefix("not tested: ") or "not asked"
            out = (f"f = {fac} brings ZMS to 1; whether uE × {f} is consistent was not "
                   f"tested: {what}")
        else:
            out = (f"f = {fac}; whether one factor fixes uE is asked only where average "
                   f"calibration is invalid (here {av or 'not tested'})")
    if "scale_within_tolerance" in r:
        t = float(r["scale_within_tolerance"].attrs["tolerance"])
        w = float(r["scale_within_tolerance"])
        band = f"[{1 / (1 + t):.3g}, {1 + t:.3g}]"
        p = float(r["scale_tolerance_p_value"]) if "scale_tolerance_p_value" in r else np.nan
        if w == 1:  # a claim on the average scale only (issue 36, finding 4)
            out += (f"; uE is on average within {100 * t:.3g} % of the errors' scale (f "
                    f"inside {band}, TOST p {p:.3g}; this is about the average scale only, "
                    "consistency is its own question)")
        elif w == 0:
            out += (f"; not shown within {100 * t:.3g} % on average (f inside {band}, TOST p "
                    f"{p:.3g})")
    return out


class VerdictTable(pd.DataFrame):
    """The verdict table of :func:`verdict_table`: a DataFrame that prints its summary first.

    Its ``summary`` (also in ``attrs["summary"]``) holds one paragraph per set
    (:func:`uqx.text.summary.summary_lines`); the text and HTML forms show them
    above the table. Any frame derived from it is a plain :class:`pandas.DataFrame`.
    """

    _metadata = ["summary"]

    @property
    def _constructor(self):
        return pd.DataFrame

    def _summary_text(self) -> str:
        lines = getattr(self, "summary", None) or self.attrs.get("summary") or []
        return "\n\n".join(textwrap.fill(x, 100, subsequent_indent="  ",
                                          break_on_hyphens=False) for x in lines)

    def __repr__(self) -> str:
        head = self._summary_text()
        return (head + "\n\n" if head else "") + pd.DataFrame(self).__repr__()

    def _repr_html_(self) -> str:
        lines = getattr(self, "summary", None) or self.attrs.get("summary") or []
        paras = "".join(f"<p>{html.escape(x)}</p>" for x in lines)
        return paras + pd.DataFrame(self)._repr_html_()


def verdict_table(res: xr.Dataset) -> pd.DataFrame:
    """One row per data set: the answer in words, then the questions and the statistics.

    Parameters
    ----------
    res : xarray.Dataset
        :func:`uqx.validate` output.

    Returns
    -------
    VerdictTable
        A :class:`pandas.DataFrame` whose text and HTML forms begin with the summary of
        every set (``summary``, ``attrs["summary"]``:
        :func:`uqx.text.summary.summary_lines`). Index ``set``; column ``M``, then
        one column per question the result has (``average``, ``consistency``,
        ``adaptivity (X)`` / ``adaptivity (V)``, ``ranking``, ``up to a factor``: its
        verdict, with ``(borderline)`` when a member's p-value is within the Monte-Carlo
        noise of its level), ``scale factor`` (the factor conclusion,
        :func:`scale_factor_cell`: "consistent up to a factor 1.06 [1.02, 1.10]", "not a
        factor alone"...), then one column per statistic (``zms``, ``rce``, ``cc``, ...)
        holding its verdict.

    Examples
    --------
    >>> res = uqx.validate(ds, compute=uqx.Compute(seed=1))  # doctest: +SKIP
    >>> uqx.verdict_table(res)[["average", "consistency", "scale factor"]]  # doctest: +SKIP
    """
    check_result(res, "verdict_table")
    stats = result_table(res)["verdict"].unstack("stat")
    stats = stats[[str(s) for s in res["stat"].values]]  # the result's order, not sorted
    names = [str(s) for s in res["set"].values]
    stats = stats.loc[names]
    table = pd.DataFrame(index=pd.Index(names, name="set"))
    table["M"] = res["M"].values.astype(int) if "M" in res.coords else np.nan
    if "question_verdict" in res:
        for q in (str(x) for x in res["question"].values):
            if not any(_asked(res, i, q) for i in range(len(names))):
                continue
            bl = res["question_borderline"].sel(question=q).values if \
                "question_borderline" in res else np.zeros(len(names), dtype=bool)
            table[QUESTION_NAMES.get(q, q)] = [
                _verdict_label(v, b) for v, b in zip(
                    res["question_verdict"].sel(question=q).values.astype(str), bl,
                    strict=True)]
    if "scale_factor" in res:
        table["scale factor"] = [scale_factor_cell(res.isel(set=i)) for i in range(len(names))]
    for st in stats.columns:
        table[st] = stats[st].values
    table.columns.name = None
    out = VerdictTable(table)
    out.summary = summary_lines(res)
    out.attrs["summary"] = list(out.summary)
    return out


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

    Rows: the papers' diagnostics, the fraction of valid LZISD bins (with its Wilson-cc
    interval) and the zero-bin extrapolation of each statistic (intercept ± 2 SE as in
    the papers, the central 95 % of its simulated null for the papers' distributions, its
    p-value under each member; ``diagnostic (no verdict)``), then the ``headline``: the
    question that decides (consistency on uE, adaptivity on X or V), its tests, its
    p-values over the members that take part, its resolution and its verdict.

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
                    "verdict": _diagnostic_label(str(r["fval_verdict"].item())),
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
                        "verdict": _diagnostic_label(_verdict_label(
                            str(x["extrap_verdict"].item()), _flag(x, "extrap_borderline"))),
                    })
            q = QUESTION_OF_COND.get(str(c))
            if "question_verdict" in res and q in res["question"].values and \
                    len(rows) > n_rows:  # no route: variable absent
                i = list(res["set"].values).index(s)
                rq = res.isel(set=i).sel(question=q)
                head = ""
                routes = str(rq["question_tests"].item()) if "question_tests" in rq else ""
                if not routes:  # e.g. too few points for a binned statistic on X
                    head = "no test of the question could be run"
                elif "question_p_value" in res and "member" in res.dims:
                    head = f"min-p of {routes}; " + _p_range(
                        rq["question_p_value"], rq, _question_members(res, i, q))
                    head += headline_resolution_text(rq, q)
                rows.append({"set": s, "cond": name, "route": "headline", "value": "",
                             "interval": head,
                             "verdict": _verdict_label(str(rq["question_verdict"].item()),
                                                       _flag(rq, "question_borderline"))})
    if not rows:
        return pd.DataFrame(columns=["set", "cond", "route", "value", "interval", "verdict"])
    return pd.DataFrame(rows).set_index(["set", "cond", "route"])


#: Why the papers' diagnostics carry no verdict (the fraction of valid LZISD bins, the
#: zero-bin intercepts): said wherever their "not tested" is shown.
DIAGNOSTIC_WHY = {
    "fval": "a diagnostic of the papers, not a test: its per-bin intervals under-cover with "
            "heavy tails and few points per bin (up to 15 % 'too few valid bins' on "
            "calibrated t_s(4) data, M = 2000); the consistency / adaptivity question "
            "decides",
    "extrap": "a diagnostic of the papers, not a test: the intercept's alternative is not "
              "simulated, so it could state no resolution; the consistency / adaptivity "
              "question decides",
}


def _diagnostic_label(v) -> str:
    """``"not tested"`` of a diagnostic said as what it is: ``"diagnostic (no verdict)"``."""
    return "diagnostic (no verdict)" if str(v) == "not tested" else str(v)


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
            use = x["member_plausible"]
            if ("member_plausible_rank" in x
                    and parse_stat(str(x["stat"].item())).family == "rank"):
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
            "fval_why": DIAGNOSTIC_WHY["fval"],
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
    q = QUESTION_OF_COND.get(str(c))
    if "question_verdict" in r and q in r["question"].values:  # the question deciding it
        out.update(_question_record(r.sel(question=q), q))
    return out


def _question_record(rq, q) -> dict:
    """Return the record of one question of one set: verdict, p-values, levels, resolution."""
    out = {"question": str(q), "verdict": str(rq["question_verdict"].item()),
           "borderline": _flag(rq, "question_borderline")}
    if "question_tests" in rq:
        out["tests"] = str(rq["question_tests"].item())
    if "question_p_value" in rq and "member" in rq.dims:
        out["p_value"] = {str(m): _num(rq["question_p_value"].sel(member=m))
                          for m in rq["member"].values}
        out["level"] = {str(m): _num(rq["question_level"].sel(member=m))
                        for m in rq["member"].values}
    sp = spread_of(rq, "question_resolution_spread")
    has = "question_resolution_low" in rq and (
        np.isfinite(float(rq["question_resolution_low"]))
        or np.isfinite(float(rq["question_resolution_high"]))
        or (sp is not None and bool(np.isfinite(sp).any())))
    if has and out["verdict"] != "invalid":
        kind = {"average": "scale", "ranking": "spread"}.get(str(q), "top")
        out["resolution"] = {"low": _num(rq["question_resolution_low"]),
                             "high": _num(rq["question_resolution_high"]), "power": 0.8,
                             "kind": kind}
        if sp is not None and np.isfinite(sp).any():  # u = c*uE^gamma: exponents
            out["resolution"]["spread"] = {"low": _num(sp[0]), "high": _num(sp[1])}
    if out["verdict"] in ("inconclusive", "not tested") and "question_reason" in rq:
        why = str(rq["question_reason"].item())
        if why:
            out["verdict_reason"] = why
    return out


def result_records(res: xr.Dataset) -> list[dict]:
    """JSON-ready records: one object per data set (see ``uqx validate --format json``).

    Keys: ``dataset``, ``M``, ``summary`` (the answer in words,
    :func:`uqx.text.summary.summary_lines`), ``questions.<question>`` (verdict,
    borderline, tests, ``p_value`` and ``level`` per member, ``resolution`` where not
    invalid, ``verdict_reason``), ``stats.<name>`` (named as in the tables: ``zmse_X``;
    estimate, interval, reference, ζ,
    ``verdict`` and, when inconclusive, ``verdict_reason``; ``zeta_sim`` per distribution
    for simulated references; ``p_value`` per member of the null family and ``members``,
    those that take part in the verdict), ``conditional.<uE|X|V>`` (fraction of valid bins,
    ``extrapolation.<ence|zmse|zve>`` with ``intercept``: the papers' diagnostics, and
    the ``verdict`` of the question that decides), ``scale_factor`` (√ZMS with its
    interval, the consistency verdict of the rescaled uE,
    :mod:`uqx.workflow.recalibration`, and the ``conclusion`` in words), ``warnings`` (one
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
    summaries = summary_lines(res)
    settings = {k: (int(res.attrs[k]) if k != "ties" else str(res.attrs[k]))
                for k in ("seed", "n_boot", "n_mc", "ties") if k in res.attrs}
    dists = [str(d) for d in res["dist"].values] if "dist" in res.dims else []
    recs = []
    for s in res["set"].values:
        r = res.sel(set=s)
        # the statistics named as in the tables (zmse_X, not zmse_x)
        stats = {str(st): _stat_record(r.sel(stat=st), dists) for st in r["stat"].values}
        rec = {"dataset": str(s), "M": int(r["M"].item())}
        if summaries:
            rec["summary"] = summaries[len(recs)]
        if "question_verdict" in res:
            i = len(recs)
            rec["questions"] = {str(q): _question_record(r.sel(question=q), q)
                                for q in res["question"].values if _asked(res, i, str(q))}
        rec.update({"stats": stats, "warnings": grouped_warnings(res, s),
                    "settings": dict(settings)})
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
                "conclusion": scale_factor_text(r),
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

    The statistics and questions (``question_verdict``) that share a reason
    (e.g. the members that reject and those that accept, the tails beyond the family's
    reach) are listed together: ``"- set: ZMS, RCE, question consistency: <reason>"``.

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
        if "question_reason" in res:
            for q, v, why in zip(res["question"].values, res["question_verdict"].values[i],
                                 res["question_reason"].values[i], strict=True):
                if str(v) == "inconclusive" and str(why):
                    groups.setdefault(str(why), []).append(
                        f"question {QUESTION_NAMES.get(str(q), str(q))}")
        out += [f"- {name}: {', '.join(who)}: {why}" for why, who in groups.items()]
    return out


def warning_lines(res) -> list[str]:
    """One line per (set, cause) of a validation result, in plain words."""
    return [f"- {s}: {w}" for s in res["set"].values for w in grouped_warnings(res, s)]


def _fmt(v):
    return "nan" if v is None or not np.isfinite(v) else f"{v:.6g}"


#: Marks a statistic whose printed 95 % interval and verdict disagree (:func:`interval_note`).
DISAGREE = "†"


def interval_note(x, kind, question_p, level) -> str:
    """Say why a moment or rank statistic's interval and its verdict disagree ('' if they agree).

    ``x``: its row of :func:`uqx.text.tables.result_table` (named by (set, stat));
    ``kind``: its ``reference_kind``; ``question_p``: its question's p-values as printed;
    ``level``: the interval's confidence. Only statistics with a predefined calibrated
    value (ZMS 1, ⟨Z⟩ 0) are read, on the side their test rejects. A ``valid`` whose
    interval excludes the calibrated value, or an ``invalid`` whose interval holds it: the
    interval
    is the BCa bootstrap of the estimate alone, the verdict the question's Monte-Carlo test
    against calibrated copies, adjusted for the question's other statistics and the set's
    other questions; the verdict decides.
    """
    verdict = str(x["verdict"]).replace(" (borderline)", "")
    lo, hi, ref = (float(x.get(k, np.nan)) for k in ("ci_low", "ci_high", "reference"))
    if (verdict not in ("valid", "invalid") or kind != "predefined"
            or not np.isfinite([lo, hi, ref]).all()):
        return ""  # a simulated reference is N(0, 1)'s, not the test's members'
    side = STATISTICS[parse_stat(str(x.name[-1])).base].direction
    outside = {1: lo > ref, -1: hi < ref}.get(side, ref < lo or ref > hi)  # rejecting side
    if (verdict == "valid") != outside:
        return ""
    where = "excludes" if outside else "holds"
    return (f"its {level * 100:.0f} % interval [{lo:.3g}, {hi:.3g}] {where} the calibrated value "
            f"{ref:.3g}, yet `{verdict}`: the interval is the BCa bootstrap of the estimate "
            "alone, without adjustment; the verdict is its question's Monte-Carlo test "
            "against calibrated copies under the members of the null family that take "
            "part, adjusted for the question's other statistics and the set's other "
            f"questions (question p {question_p}). The verdict decides.")
