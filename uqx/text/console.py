"""The text printed by ``uqx validate``, ``uqx show`` and ``uqx demo``.

:func:`validation_text` renders a result as the command line prints it
(:func:`format_validation`: the summary in words, then per set its questions and
statistics as fixed-width tables, :func:`text_table`, within :data:`TEXT_WIDTH` columns;
for the nine paper sets the papers' tables); :func:`format_df` prints any table in full.
Like the rest of :mod:`uqx.text` it reads a result and computes nothing.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
import xarray as xr

from uqx.engine.questions import question_of
from uqx.engine.statistic import parse_stat
from uqx.text.summary import explain_lines, summary_lines, summary_text
from uqx.text.tables import (
    DISAGREE,
    QUESTION_NAMES,
    _range,
    conditional_table,
    interval_note,
    paper_table_a,
    paper_table_iv,
    question_table,
    reason_lines,
    result_table,
    scale_factor_text,
    warning_lines,
)

__all__ = ["TEXT_WIDTH", "text_table", "format_validation", "validation_text", "format_df"]


#: Width of the text of ``uqx validate`` / ``uqx show`` (``--wide``: no limit).
TEXT_WIDTH = 100


def _wrap(line: str, width: int | None, indent: str = "  ") -> str:
    if width is None or len(line) <= width:
        return line
    return textwrap.fill(line, width=width, subsequent_indent=indent, break_on_hyphens=False,
                         break_long_words=False)


def text_table(df: pd.DataFrame, *, width: int | None = TEXT_WIDTH, wrap=(),
               right=()) -> str:
    """Render a table as plain text within ``width`` columns, wrapping the ``wrap`` columns.

    The index levels become the first columns (a value repeated from the row above is
    left blank, as pandas prints a MultiIndex); columns are two spaces apart. When the
    table is wider than ``width``, the ``wrap`` columns (last first) are narrowed, down to
    12 characters, and their cells wrapped onto more lines.

    Parameters
    ----------
    df : pandas.DataFrame
    width : int or None
        Columns of the text (None: no limit).
    wrap : sequence of str
        Columns that may be wrapped.
    right : sequence of str
        Columns aligned right (numbers).

    Returns
    -------
    str
    """
    flat = df.reset_index() if any(n is not None for n in df.index.names) else df.copy()
    cols = [str(c) for c in flat.columns]
    rows = [["" if (isinstance(v, float) and not np.isfinite(v)) else str(v) for v in r]
            for r in flat.itertuples(index=False)]
    n_idx = len(df.index.names) if any(n is not None for n in df.index.names) else 0
    orig = [list(r) for r in rows]
    for k in range(1, len(rows)):  # sparsify the index, as pandas does
        for c in range(n_idx):
            if orig[k][:c + 1] == orig[k - 1][:c + 1]:
                rows[k][c] = ""
            else:
                break
    widths = [max([len(c)] + [len(r[j]) for r in rows]) for j, c in enumerate(cols)]
    if width is not None:
        for name in reversed(list(wrap)):
            if name not in cols:
                continue
            total = sum(widths) + 2 * (len(cols) - 1)
            if total <= width:
                break
            j = cols.index(name)
            widths[j] = max(12, widths[j] - (total - width))
    cells = [[textwrap.wrap(v, widths[j], break_on_hyphens=False) or [""]
              if cols[j] in wrap else [v] for j, v in enumerate(r)] for r in rows]

    def line(parts):
        out = []
        for j, v in enumerate(parts):
            out.append(v.rjust(widths[j]) if cols[j] in right else v.ljust(widths[j]))
        return "  ".join(out).rstrip()

    text = [line(cols)]
    for r in cells:
        for k in range(max(len(c) for c in r)):
            text.append(line([c[k] if k < len(c) else "" for c in r]))
    return "\n".join(text)


def _band(x) -> str:
    """Render a binned statistic's calibrated band, marked (no bootstrap interval)."""
    if "band_low" not in x:
        return ""
    text = _interval(x["band_low"], x["band_high"])
    return f"cal. {text}" if text else ""


def _interval(lo, hi) -> str:
    if not (np.isfinite(lo) or np.isfinite(hi)):
        return ""
    return f"[{lo:.3g}, {hi:.3g}]"


def _compact_sets(res, width, notes=None) -> list[str]:
    """Per set: its questions, then its statistics grouped by question (fits ``width``).

    ``notes``: a list that receives, per statistic whose interval and verdict disagree,
    ``"set stat: why"`` (:func:`uqx.text.tables.interval_note`; the row's verdict
    carries :data:`uqx.text.tables.DISAGREE`).
    """
    qt = question_table(res)
    full = result_table(res)
    level = float(res.attrs.get("level", 0.95))
    order = list(QUESTION_NAMES.values())
    parts = []
    for i, s in enumerate(res["set"].values):
        s = str(s)
        m = int(res["M"].values[i]) if "M" in res.coords else None
        parts.append(f"\n## {s}" + (f" (M = {m})" if m is not None else ""))
        if s in qt.index.get_level_values("set"):
            q = qt.loc[s]
            # left out here: a feature this set lacks, a factor not asked (said below)
            skip = (q["verdict"] == "not tested") & (
                q["reason"].str.startswith("this set has no")
                | (q.index == QUESTION_NAMES["up_to_factor"]))
            q = q[~skip][["verdict", "level", "p", "resolution"]].copy()
            q["verdict"] = q["verdict"].str.replace(" (borderline)", "*", regex=False)
            q = q.rename(columns={"resolution": "resolution (80 % power)"})
            parts.append(text_table(q, width=width, wrap=("resolution (80 % power)",)))
        rows = []
        for st in (str(x) for x in res["stat"].values):
            sp = parse_stat(st)
            qn = QUESTION_NAMES.get(question_of(sp.family, sp.cond) or "", "other")
            x = full.loc[(s, st)]
            p = _range([x.get("p_min", np.nan), x.get("p_max", np.nan)], 3)
            verdict = str(x["verdict"]).replace(" (borderline)", "*")
            qp = str(qt.loc[(s, qn), "p"]) if (s, qn) in qt.index else ""
            kind = str(res["reference_kind"].sel(set=s, stat=st).item()) \
                if "reference_kind" in res else ""
            why = interval_note(x, kind, qp, level) if sp.family != "binned" else ""
            if why:
                verdict += DISAGREE
                if notes is not None:
                    notes.append(f"{s} {st}: {why}")
            rows.append({"question": qn, "statistic": st,
                         "estimate": f"{x['estimate']:.4g}" if np.isfinite(x["estimate"])
                         else "nan",
                         "95 % CI": _interval(x["ci_low"], x["ci_high"]) if sp.family
                         != "binned" else _band(x),
                         "p": p, "verdict": verdict})
        df = pd.DataFrame(rows)
        df["_o"] = [order.index(q) if q in order else len(order) for q in df["question"]]
        df = df.sort_values("_o", kind="stable").drop(columns="_o").set_index(
            ["question", "statistic"])
        parts.append("")
        parts.append(text_table(df, width=width, right=("estimate",)))
    return parts


def _diagnostics_compact(res) -> pd.DataFrame:
    """Tabulate the papers' diagnostics, short: value and p-values, no null intervals."""
    full = conditional_table(res)
    if full.empty:
        return full
    full = full[full.index.get_level_values("route") != "headline"]
    out = full[["value"]].copy()
    out["p"] = [v.split("; p ", 1)[1].split(" (")[0] if "; p " in v else ""
                for v in full["interval"]]
    return out


def format_validation(res: xr.Dataset, *, wide: bool = False, explain: bool = False) -> str:
    """Return the text printed by ``uqx validate`` and ``uqx show`` for a validation result.

    The summary of every set first (:func:`uqx.text.summary.summary_lines`), then per
    set its questions (verdict, level, p-values over the members, resolution) and its
    statistics grouped by question, the scale factor, the papers' diagnostics, the
    reasons of the inconclusive verdicts and the warnings. By default every line fits in
    :data:`TEXT_WIDTH` (100) columns (columns dropped, cells and reasons wrapped);
    ``wide`` prints the full tables (every column of :func:`result_table`,
    :func:`question_table` and :func:`conditional_table`) instead. ``explain``: how
    each verdict was reached (:func:`uqx.text.summary.explain_lines`), after the
    summary.
    """
    width = None if wide else TEXT_WIDTH
    a = res.attrs
    parts = [
        f"# uqx validate: BCa {float(a.get('level', 0.95)):.0%} intervals, "
        f"n_boot={a.get('n_boot')}, n_mc={a.get('n_mc')}, seed={a.get('seed')}",
    ]
    summary = summary_lines(res)
    if summary:
        parts += ["\n# summary"]
        parts += [_wrap(x, width) + "\n" for x in summary]
        parts[-1] = parts[-1].rstrip("\n")
    if explain:
        parts += ["\n# how each verdict was reached"]
        parts += [_wrap(x, width) + "\n" for x in explain_lines(res)]
        parts[-1] = parts[-1].rstrip("\n")
    if wide:
        qt = question_table(res)
        if not qt.empty:
            parts += ["\n# questions: verdict, level (family-wise per set), p over the "
                      "members that take part, resolution (80 % power)", format_df(qt)]
        parts += ["\n# statistics", format_df(result_table(res))]
        if "cond" in res.dims:
            parts += ["\n# the papers' diagnostics of consistency (bins on uE) and "
                      "adaptivity (bins on X/V), and the question that decides",
                      format_df(conditional_table(res))]
    else:
        parts += ["\n" + _wrap("# questions and statistics per set (p: range over the "
                                "members of the null family that take part; * borderline: a "
                                "p-value within 2 Monte-Carlo sd of its level; cal. [a, b]: a "
                                "binned statistic has no bootstrap interval, its calibrated "
                                "copies' central 95 % instead; --wide: every column)",
                                width, "# ")]
        disagree = []
        parts += _compact_sets(res, width, disagree)
        if disagree:
            parts += [f"\n# {DISAGREE} where a statistic's interval and its verdict disagree"]
            parts += [_wrap(x, width) for x in disagree]
        if "cond" in res.dims:
            diag = _diagnostics_compact(res)
            if not diag.empty:
                parts += ["\n# the papers' diagnostics (no verdict: the questions decide; "
                          "--wide: intervals)", text_table(diag, width=width, wrap=("p",))]
    if "scale_factor" in res:
        parts += ["\n# scale factor f = sqrt(ZMS), with the factors its test keeps: does "
                  "one number fix uE?"]
        parts += [_wrap(f"{s}: {scale_factor_text(res.sel(set=s))}", width)
                  for s in res["set"].values]
    why = reason_lines(res)
    if why:
        parts += ["\n# why inconclusive", "\n".join(_wrap(x, width) for x in why)]
    lines = warning_lines(res)
    if lines:
        parts += ["\n# warnings", "\n".join(_wrap(x, width) for x in lines)]
    return "\n".join(parts)


def validation_text(res, *, paper_sets: bool = False, wide: bool = False,
                    explain: bool = False) -> str:
    """Render the text printed by ``uqx validate`` and ``uqx show`` for a result.

    :func:`format_validation`: the summary of every set first, then the tables, within
    100 columns unless ``wide``; ``explain`` adds how each verdict was reached. For the
    nine paper sets (``paper_sets``), the summary, then 001 Table IV and 000 Tables
    A1-A4.
    """
    if not paper_sets:
        return format_validation(res, wide=wide, explain=explain)
    parts = []
    summary = summary_text(res, width=None if wide else TEXT_WIDTH)
    if summary:
        parts += ["# summary", summary, ""]
    if explain:
        parts += ["# how each verdict was reached", "\n\n".join(explain_lines(res)), ""]
    parts += ["# 001 Table IV: RCE and ZMS, bootstrap bias, BCa interval, zeta",
              format_df(paper_table_iv(res))]
    for st in [s for s in ("zms", "cc", "ence", "zmse") if s in res["stat"].values]:
        parts += [
            f"\n# 000 Table A ({st.upper()}): BS then simulated references N and "
            f"T{float(res.attrs['nu']):g}",
            format_df(paper_table_a(res, st)),
        ]
    lines = warning_lines(res)
    if lines:
        parts += ["\n# warnings", "\n".join(lines)]
    return "\n".join(parts)


def format_df(df: pd.DataFrame) -> str:
    """Render a table as plain text (all rows and columns)."""
    with pd.option_context(
        "display.max_rows", 500, "display.max_columns", 50, "display.width", 160
    ):
        return df.to_string()
