"""The content of a report as a list of blocks, one small named structure per kind.

The page is built (:mod:`uqx.report.document`) as a list of blocks — :class:`Heading`,
:class:`Paragraph`, :class:`Note`, :class:`Items`, :class:`Table`, :class:`Figures` —
then rendered as HTML or Markdown (:mod:`uqx.report.render`). Table cells are strings or
:class:`Cell` (text with a CSS class and an optional link).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from uqx._version import __version__
from uqx.engine.questions import QUESTIONS, question_of
from uqx.engine.statistic import parse_stat
from uqx.engine.stats.tailedness import SAFETY_LIMITS
from uqx.text.summary import summary_lines
from uqx.text.tables import (
    DISAGREE,
    QUESTION_NAMES,
    _asked,
    grouped_warnings,
    interval_note,
    question_resolution_text,
    resolution_text,
    scale_factor_cell,
    scale_factor_text,
    spread_of,
)

__all__ = ["Cell", "Figure", "Figures", "Heading", "Items", "Note", "Paragraph", "Table",
           "VERDICT_STYLE", "HOWTO", "header_blocks", "answer_blocks", "summary_blocks",
           "warning_blocks", "set_blocks", "lead_figure", "LEAD_FIGURE"]

#: Verdict word -> (CSS class, symbol). Colours are light tints of the Okabe–Ito palette
#: used by the figures (valid blue, invalid vermillion), dark text (contrast > 7:1), and
#: the word itself is always printed, so that colour is never the only cue.
VERDICT_STYLE = {"valid": ("v-valid", "\u2713"), "invalid": ("v-invalid", "\u2717"),
                 "inconclusive": ("v-inconclusive", "?"), "not tested": ("v-none", "\u2013")}


class Cell(NamedTuple):
    """A table cell: its text (one line per line of the text), CSS class, optional link."""

    text: str
    css: str = ""
    href: str | None = None


class Heading(NamedTuple):
    """A heading of the given level, with an optional anchor id."""

    level: int
    text: str
    anchor: str | None = None


class Paragraph(NamedTuple):
    """A paragraph of text."""

    text: str


class Note(NamedTuple):
    """A highlighted note (a figure or input that is missing, say)."""

    text: str


class Items(NamedTuple):
    """A bulleted list: items are text, or ``(text, anchor)`` for a table of contents."""

    items: list


class Table(NamedTuple):
    """A table: header strings and rows of cells (strings or :class:`Cell`)."""

    header: list
    rows: list


class Figure(NamedTuple):
    """One diagnostic figure: PNG bytes, or ``png=None`` and why it was not drawn."""

    key: str
    caption: str
    png: bytes | None
    why: str = ""


class Figures(NamedTuple):
    """A row of figures."""

    figures: list


def as_cell(c) -> Cell:
    """Return a table cell as a :class:`Cell` (plain values become text without class)."""
    return c if isinstance(c, Cell) else Cell(str(c))


#: The page's short "how to read the verdicts".
HOWTO = [
    "A result answers questions about uE, per set: average calibration (ZMS, RCE, the "
    "studentised \u27e8Z\u27e9), consistency (the statistics binned on uE), adaptivity "
    "(binned on X or V), ranking (the rank correlation CC) and, where average calibration "
    "is invalid, consistency up to a factor (uE \u00d7 \u221aZMS). Each question and "
    "each statistic gets one verdict: valid, invalid, inconclusive or not tested.",
    "A question is one Monte-Carlo test: the weighted minimum of its statistics' p-values, "
    "calibrated on calibrated copies of the data (same uE, same bins), one-sided where "
    "miscalibration has a side (ENCE, ZMSE, ZVE too large, CC too small). The questions "
    "share the set's family-wise level (10 %): a calibrated set gets an invalid somewhere "
    "in at most about 10 % of cases; a rejected question passes its level on.",
    "The copies are drawn under the members of the null family, printed as N (normal "
    "N(0,1)), T6 (Student t_s(6)), fit (a t_s(\u03bd) matched to the data's tails) and "
    "data (the data's own z-scores, resampled). Invalid: every "
    "member that the data's tails allow rejects; valid: none does; otherwise inconclusive "
    "(then the shape of the errors decides, not the data). A valid comes with its "
    "resolution: the miscalibration the same test finds with 80 % power.",
    "\u03b6-scores (000 Eq. 20), the fraction of valid LZISD bins and the zero-bin "
    "intercepts are the papers' diagnostics, shown for comparison; no verdict rests on "
    "them. (borderline): a deciding p-value within two Monte-Carlo standard deviations of "
    "its level; rerun with more copies before acting on it.",
    "Tailedness above the safety limits of 001 Table II makes the statistics that depend "
    "on it unreliable (warnings).",
    "Every word of these tables (ZMS, ZMS_SCAN, level, p, members, resolution, "
    "beta_gm_e2, \u201c001 Table II\u201d...) is explained in the glossary: "
    "'uqx glossary WORD' on the command line, or the documentation's Glossary page.",
]


def _num(v, digits=4) -> str:
    """Format a number for a table cell (``–`` for missing values)."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "\u2013" if not np.isfinite(v) else f"{v + 0.0:.{digits}g}"  # no "-0"


def _verdict_cell(label) -> Cell:
    """Return the cell of a verdict label such as ``"valid (borderline)"``."""
    label = str(label)
    word = "not tested" if label.startswith("not tested") else label.split(" ")[0]
    cls, sym = VERDICT_STYLE.get(word, ("", ""))
    return Cell(f"{sym} {label}" if sym else label, cls)


def _question_cell(r, q) -> Cell:
    """Cell of a question of one set: its verdict and, where not invalid, its resolution."""
    x = r.sel(question=q)
    v = str(x["question_verdict"].item())
    bl = bool(x["question_borderline"].item()) if "question_borderline" in x else False
    text, cls, _ = _verdict_cell(f"{v} (borderline)" if bl and v in ("valid", "invalid")
                                 else v)
    res_text = question_resolution_text(q, x) if v != "invalid" else ""
    return Cell(text + f"\nresolution (80 % power): {res_text}" if res_text else text, cls)


def _exceeded(res, i) -> list[str]:
    """Tailedness metrics of set ``i`` above the safety limits of 001 Table II."""
    lim = SAFETY_LIMITS
    vals = {k: float(res[k].values[i]) for k in lim if k in res}  # NaN is never above
    return [f"{k} = {v:.3g} > {lim[k]:g}" for k, v in vals.items() if v > lim[k]]


def _bins_value(res) -> str:
    """Give the bins of the binned statistics: requested, and used per set when fewer."""
    requested = str(res.attrs["n_bins"])
    if "n_bins_used" not in res:
        return requested
    used = {str(s): int(n) for s, n in zip(res["set"].values, res["n_bins_used"].values,
                                           strict=True) if int(n) > 0}
    if not used or all(n == int(res.attrs["n_bins"]) for n in used.values()):
        return requested
    if len(set(used.values())) == 1:
        return f"{requested} requested, {next(iter(used.values()))} used"
    return f"{requested} requested; used: " + ", ".join(f"{n} ({s})" for s, n in used.items())


def header_blocks(res, title, has_data) -> list:
    """Build the title, the parameters and the inputs of the result."""
    a = res.attrs
    now = datetime.now(UTC).isoformat(timespec="seconds")
    blocks = [Heading(1, title, "top"),
              Paragraph(f"uqx {__version__}, report written {now}; result computed by uqx "
                    f"{a.get('uqx_version', '?')} at {a.get('created_at', '?')}.")]
    keys = [("n_boot", "bootstrap replicates"), ("n_mc", "simulated sets per reference"),
            ("seed", "root seed"), ("level", "confidence level"),
            ("n_bins", "bins of the binned statistics"), ("binning_scheme", "binning"),
            ("pop_min", "minimal points per bin"), ("nu", "\u03bd of t_s(\u03bd)"),
            ("extrapolation_preset", "zero-bin sweep preset"),
            ("extrapolation_n_mc", "calibrated copies for the extrapolation null")]
    rows = [[label, _bins_value(res) if k == "n_bins" else str(a[k])]
            for k, label in keys if k in a] + [
        ["generative distributions D", ", ".join(str(d) for d in res["dist"].values)]]
    if "member" in res.dims:
        rows.append(["null family of the verdicts",
                     ", ".join(str(m) for m in res["member"].values)])
    blocks += [Heading(2, "Parameters", "parameters"), Table(["parameter", "value"], rows)]
    names = list(a.get("input_names", [str(s) for s in res["set"].values]))
    sizes = list(a.get("input_sizes", res["M"].values if "M" in res.coords else []))
    digests = list(a.get("input_digests", []))
    rows = [[str(n), str(sizes[i]) if i < len(sizes) else "",
             str(digests[i]) if i < len(digests) else ""] for i, n in enumerate(names)]
    blocks += [Heading(2, "Inputs", "inputs"),
               Table(["data set", "M", "content digest (SHA-256, 128 bits)"], rows)]
    if a.get("input_sources"):
        blocks.append(Paragraph(f"Sources: {a['input_sources']}"))
    if not has_data:
        blocks.append(Note("Input data not given: the figures of the raw data (E vs uE, "
                       "reliability, calibration, confidence, distributions) are skipped; "
                       "the \u03b6 bars, the LZISD bins and the extrapolation need only the "
                       "result."))
    return blocks


def _stat_cell(r, st, label, dists) -> Cell:
    """Cell of the statistics overview: verdict, estimate [BCa interval], ζ (per D)."""
    x = r.sel(stat=st)
    text, cls, _ = _verdict_cell(label)
    if parse_stat(str(st)).family == "binned":  # no bootstrap interval covers it
        band = (f" (calibrated [{_num(x['null_band_low'], 3)}, "
                f"{_num(x['null_band_high'], 3)}])" if "null_band_low" in x else "")
        text += f"\n{_num(x['estimate'], 3)}{band}"
    else:
        text += (f"\n{_num(x['estimate'], 3)} [{_num(x['ci_low'], 3)}, "
                 f"{_num(x['ci_high'], 3)}]")
    if "resolution_low" in x and str(x["verdict"].item()) != "invalid":
        res_text = resolution_text(st, float(x["resolution_low"]), float(x["resolution_high"]),
                                   spread_of(x))
        if res_text:  # what a valid or an inconclusive could have seen (80 % power)
            text += f"\nresolution (80 % power): {res_text}"
    if str(x["reference_kind"].item()) == "simulated" and "zeta_sim" in x:
        zetas = (f"\u03b6_{d} {_num(x['zeta_sim'].sel(dist=d), 3)}" for d in dists)
        return Cell(text + "\n" + ", ".join(zetas), cls)
    if np.isfinite(float(x["zeta"])):
        text += f"\n\u03b6 {_num(x['zeta'], 3)}"
    return Cell(text, cls)


def answer_blocks(res) -> list:
    """Build the summary of every set, in words (:func:`uqx.text.summary.summary_lines`)."""
    lines = summary_lines(res)
    if not lines:
        return []
    return [Heading(2, "Summary", "summary"), *[Paragraph(x) for x in lines]]


def summary_blocks(res, table) -> list:
    """Build the verdict table (questions, scale factor) and the statistics overview."""
    stats = [str(s) for s in res["stat"].values]
    qs = [str(q) for q in res["question"].values if any(
        _asked(res, i, str(q)) for i in range(res.sizes["set"]))] \
        if "question_verdict" in res else []
    dists = [str(d) for d in res["dist"].values] if "dist" in res.dims else []
    header = ["data set", "M"] + [QUESTION_NAMES.get(q, q) for q in qs]
    header += ["scale factor"] if "scale_factor" in res else []
    rows, over = [], []
    for i, s in enumerate(res["set"].values):
        r = res.isel(set=i)
        name = [Cell(f"{s}", "", f"#set-{i + 1}"), Cell(str(int(r["M"])), "num")]
        exc = _exceeded(res, i)
        rows.append(name + [_question_cell(r, q) for q in qs]
                    + ([Cell(scale_factor_cell(r))] if "scale_factor" in res else [])
                    + [Cell("above the safety limits:\n" + "\n".join(exc), "warn") if exc
                       else Cell("within the safety limits")])
        over.append(name[:1] + [_stat_cell(r, st, _marked(res, table, s, st), dists)
                                for st in stats])
    marked = any(DISAGREE in c.text for row in over for c in row)
    return [Heading(2, "Verdicts", "verdicts"), Table(header + ["tailedness"], rows),
            Paragraph("Every statistic: verdict, estimate [BCa interval], the resolution of "
             "a valid or inconclusive test (the smallest miscalibration it detects with "
             "80 % power: a scale f of uE, a bias of Z; for the binned statistics, "
             "uE too small by f in the top 10 % of their variable, and on uE the true "
             "uncertainties u = c\u00b7uE^\u03b3, same mean square, with \u03b3 away "
             "from 1) and \u03b6 (\u03b6_BS for a predefined reference, \u03b6_Sim per "
             "generative distribution D otherwise: the papers' scores, for comparison)."
             + (f" {DISAGREE}: the interval and the verdict disagree; the set's table of "
                "statistics says why (the verdict decides)." if marked else "")),
            Table(["data set", *[st.upper() for st in stats]], over)]


def _marked(res, table, s, st) -> str:
    """Return the verdict label of ``st`` in set ``s``, marked where its interval disagrees."""
    rec = table.loc[(s, st)]
    kind = str(res["reference_kind"].sel(set=s, stat=st).item()) \
        if "reference_kind" in res else ""
    note = "" if parse_stat(str(st)).family == "binned" else interval_note(
        rec, kind, "", float(res.attrs.get("level", 0.95)))
    return f"{rec['verdict']} {DISAGREE}" if note else str(rec["verdict"])


def warning_blocks(res) -> list:
    """Build the list of the grouped warnings of every set."""
    items = [f"{s}: {w}" for s in res["set"].values for w in grouped_warnings(res, s)]
    return [Heading(2, "Warnings", "warnings"), Items(items or ["none"])]


def _question_rows(qtable, s):
    """Tabulate the questions of one set (``question_table``): verdict, level, p, reason."""
    if qtable is None or qtable.empty or s not in qtable.index.get_level_values("set"):
        return None
    rows = []
    for q, rec in qtable.loc[s].iterrows():
        rows.append([str(q), _verdict_cell(rec["verdict"]), Cell(str(rec["level"]), "num"),
                     Cell(str(rec["p"]), "num"), Cell(str(rec["members"]), "small"),
                     Cell(str(rec["resolution"]), "small"), Cell(str(rec["tests"]), "small"),
                     Cell(str(rec["reason"]), "small")])
    return (["question", "verdict", "level", "p", "members", "resolution (80 % power)",
             "tests", "reason"], rows)


def _stat_rows(res, table, s, qtable=None, notes=None):
    """Detailed per-statistic rows of one set (``result_table``), grouped by question.

    A ZMS or ⟨Z⟩ whose interval and verdict disagree carries the mark, and ``notes``
    receives why (:func:`uqx.text.tables.interval_note`, with its question's p from
    ``qtable``), said under the table: the reason column is narrow.
    """
    df = table.loc[s]
    reason = res["verdict_reason"].sel(set=s) if "verdict_reason" in res else None
    header = ["question", "statistic", *[str(c) for c in df.columns], "reason"]

    def q_of(st):
        p = parse_stat(str(st))
        return question_of(p.family, p.cond) or ""

    order = sorted(df.index, key=lambda st: QUESTIONS.index(q_of(st)) if q_of(st) in QUESTIONS
                   else len(QUESTIONS))
    level = float(res.attrs.get("level", 0.95))
    rows = []
    for st in order:
        rec = df.loc[st]
        q = q_of(st)
        qn = QUESTION_NAMES.get(q, q or "\u2013")
        cells = [qn, str(st).upper()]
        cells += [Cell(_num(v, 6), "num") for c, v in rec.items() if c != "verdict"]
        why = str(reason.sel(stat=st).item()) if reason is not None else ""
        why = why if "inconclusive" in str(rec["verdict"]) else ""
        kind = str(res["reference_kind"].sel(set=s, stat=st).item()) \
            if "reference_kind" in res else ""
        note = "" if parse_stat(str(st)).family == "binned" else interval_note(
            rec.rename((s, st)), kind, str(qtable.loc[(s, qn), "p"])
            if qtable is not None and (s, qn) in qtable.index else "", level)
        verdict = _verdict_cell(rec["verdict"])
        if note:  # the interval and the verdict disagree: say which decides
            verdict = verdict._replace(text=verdict.text + DISAGREE)
            why = f"{DISAGREE} below"
            if notes is not None:
                notes.append(f"{DISAGREE} {str(st).upper()}: {note}")
        cells += [verdict, Cell(why, "small")]
        rows.append(cells)
    return header, rows


def _cond_rows(df, s):
    """Conditional rows of one set (``conditional_table``), untested conditions left out.

    A condition whose question is ``not tested`` keeps only its headline (which says so),
    not the papers' diagnostics computed on it.
    """
    if df is None or df.empty or s not in df.index.get_level_values("set"):
        return None
    df = df.loc[s]
    rows = []
    for (cond, route), rec in df.iterrows():
        heads = df.loc[cond]
        untested = "headline" in heads.index and \
            heads.loc["headline", "verdict"] == "not tested"
        if untested and (route != "headline" or len(heads) == 1):
            continue
        rows.append([str(cond), str(route), Cell(str(rec["value"]), "num"),
                     Cell(str(rec["interval"]), "small"), _verdict_cell(rec["verdict"])])
    return (["conditioning", "route", "value", "interval", "verdict"], rows) if rows else None


#: The figure that opens a set's section, by the first question found invalid (in this
#: order); a set without an invalid question opens with the reliability diagram.
LEAD_FIGURE = (("consistency", "reliability"), ("adaptivity_X", "lzisd_X"),
               ("adaptivity_V", "lzisd_V"), ("average", "reliability"))


def lead_figure(res, i, figs) -> int | None:
    """Position in ``figs`` of the one figure that opens the section of set ``i``.

    The figure of the first question of :data:`LEAD_FIGURE` that set ``i`` finds
    ``invalid``, else the reliability diagram, else the first figure drawn; None when no
    figure was drawn.
    """
    drawn = [k for k, f in enumerate(figs) if f.png is not None]
    if not drawn:
        return None
    keys = {figs[k].key.split("_", 1)[1] if figs[k].key.startswith("set") else figs[k].key: k
            for k in drawn}
    verdicts = {}
    if "question_verdict" in res and "question" in res.dims:
        r = res["question_verdict"].isel(set=i)
        verdicts = {str(q): str(v) for q, v in zip(res["question"].values, r.values,
                                                     strict=True)}
    for q, key in LEAD_FIGURE:
        if verdicts.get(q) == "invalid" and key in keys:
            return keys[key]
    return keys.get("reliability", drawn[0])


def set_blocks(res, i, figs, tables, answer=None) -> list:
    """Build the section of set ``i``: its verdicts and one figure, then tables, figures.

    ``answer`` is the set's paragraph in words (:func:`uqx.text.summary.summary_lines`);
    the figure that follows it is :func:`lead_figure`, the others come after the tables.
    """
    s = str(res["set"].values[i])
    blocks = [Heading(2, f"{s} (M = {int(res['M'].values[i])})", f"set-{i + 1}")]
    if answer:
        blocks.append(Paragraph(answer))
    lead = lead_figure(res, i, figs)
    if lead is not None:
        blocks.append(Figures([figs[lead]]))
        figs = figs[:lead] + figs[lead + 1:]
    qrows = _question_rows(tables[2] if len(tables) > 2 else None, s)
    if qrows is not None:
        blocks += [Heading(3, "Questions"), Table(*qrows)]
    notes = []
    blocks += [Heading(3, "Statistics, by question"), Table(*_stat_rows(
        res, tables[0], s, tables[2] if len(tables) > 2 else None, notes))]
    blocks += [Paragraph(note) for note in notes]
    cond = _cond_rows(tables[1], s)
    if cond is not None:
        blocks += [Heading(3, "The papers' diagnostics of consistency and adaptivity"),
                   Paragraph("The fraction of valid LZISD bins and the zero-bin intercepts "
                             "are diagnostics of the papers, not tested (the per-bin "
                             "intervals under-cover with heavy tails and few points per "
                             "bin; the intercepts' alternative is not simulated): the "
                             "questions above decide."),
                   Table(*cond)]
    if "scale_factor" in res:
        blocks += [Heading(3, "Scale factor f = \u221aZMS: does one number fix uE?"),
                   Paragraph(scale_factor_text(res.isel(set=i)))]
    if figs:
        blocks += [Heading(3, "More figures" if lead is not None else "Figures"),
                   Figures(figs)]
    return blocks


