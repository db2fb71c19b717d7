"""Self-contained report of a validation result: one HTML page (or Markdown) for all sets.

:func:`report` renders a :func:`uqx.validate` result with its parameters and inputs
(names, sizes, digests), a verdict table (one row per set: average calibration by ZMS and
RCE, consistency and adaptivity headlines, tailedness, every statistic with its BCa
interval and ζ), the grouped warnings, a short "how to read the verdicts" (documentation), then
one section per set with the tables of :mod:`uqx.workflow.tables` and the figures of
:mod:`uqx.plot` (:func:`diagnostic_figures`).

HTML: no external resource (inline CSS, no JavaScript, figures as base64 PNG ``data:``
URIs), all text escaped, every element closed (the page also parses as XML). Markdown:
figures embedded as data URIs by :func:`report`, written as PNG files in
``<stem>_figures/`` next to the ``.md`` by :func:`write_report` (many Markdown viewers,
GitHub among them, do not display data URIs). The raw-data figures need ``data`` (sets
matched by content digest, ``input_digests``); the ζ bars and the zero-bin extrapolation
panels come from the result alone.
"""

from __future__ import annotations

import base64
import html
import io
import re
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from uqx._version import __version__
from uqx.dataio.files import atomic_write
from uqx.dataio.model import InputError

__all__ = ["report", "write_report", "report_format", "diagnostic_figures", "VERDICT_STYLE"]

#: Verdict word -> (CSS class, symbol). Colours are light tints of the Okabe–Ito palette
#: used by the figures (valid blue, invalid vermillion), dark text (contrast > 7:1), and
#: the word itself is always printed, so that colour is never the only cue.
VERDICT_STYLE = {"valid": ("v-valid", "\u2713"), "invalid": ("v-invalid", "\u2717"),
                 "inconclusive": ("v-inconclusive", "?"), "not tested": ("v-none", "\u2013")}

_CSS = """
body{font-family:system-ui,Helvetica,Arial,sans-serif;margin:1.5em auto;max-width:1250px;
 padding:0 1em;color:#1a1a1a;line-height:1.4}h2{border-bottom:1px solid #ccc;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.86em}th{background:#f0f0f0}
.tw{overflow-x:auto;max-width:100%}
th,td{border:1px solid #bbb;padding:.25em .5em;vertical-align:top;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}.small{font-size:.85em;color:#444}
.v-valid{background:#dbeaf7;color:#00365c}.v-invalid{background:#fbe1d3;color:#6e2800}
.v-inconclusive{background:#fdf3c4;color:#453600}.v-none{background:#ececec;color:#3a3a3a}
.warn{background:#fdf3c4;color:#453600}.note{background:#f4f4f4;border-left:4px solid #999;
 padding:.4em .8em}.figs{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
figure{margin:0;display:table}figure img{max-width:100%;height:auto;border:1px solid #ddd}
figcaption{display:table-caption;caption-side:bottom;font-size:.82em;color:#333}
"""

_HOWTO = [
    "Every statistic gets one verdict: valid, invalid, inconclusive or not tested. A "
    "verdict is a Monte-Carlo test of the statistic against calibrated copies of the data "
    "(same uncertainties, same bins), one-sided where miscalibration has a side (ENCE, "
    "ZMSE, ZVE too large, CC too small), two-sided for ZMS, RCE.",
    "The copies are drawn under four generative distributions: N(0,1), t_s(6), a "
    "t_s(\u03bd) matched to the data's tails and the data's own z-scores resampled. Invalid: "
    "every one rejects (p < 0.05); valid: the data's own z-scores accept; otherwise "
    "inconclusive (then D decides, not the data).",
    "Consistency (bins on uE) and adaptivity (bins on X or V): one test combining the "
    "binned statistics, CC and the zero-bin intercepts of ENCE, ZMSE, ZVE on shared copies "
    "(min-p). The fraction of valid LZISD bins and the papers' intercept \u00b1 2 SE are "
    "shown as diagnostics.",
    "An invalid must also hold for the set's result as a whole (family-wise 10 %): a "
    "calibrated set gets an invalid somewhere in at most about 10 % of cases; the measured "
    "error rates are in the documentation (How to read the verdicts).",
    "\u03b6-scores (000 Eq. 20) are reported as in the papers; their decision is kept as "
    "zeta_verdict. (borderline): the deciding p-value is within two Monte-Carlo standard "
    "deviations of 0.05; rerun with more copies before acting on it.",
    "Tailedness above the safety limits of 001 Table II makes the statistics that depend "
    "on it unreliable (warnings).",
]

# ------------------------------------------------------------------ helpers


def _load_result(result):
    from uqx.plot._input import load

    res = load(result)
    if "verdict" not in res or "stat" not in res.dims:
        raise InputError("the report needs a validation result (uqx.validate output with "
                         "'verdict' over (set, stat))")
    return res


def _num(v, digits=4) -> str:
    """Format a number for a table cell (``–`` for missing values)."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return str(v)
    return "\u2013" if not np.isfinite(v) else f"{v + 0.0:.{digits}g}"  # no "-0"


def _verdict_cell(label) -> tuple[str, str]:
    """``(text, css class)`` of a verdict label such as ``"valid (borderline)"``."""
    label = str(label)
    word = "not tested" if label.startswith("not tested") else label.split(" ")[0]
    cls, sym = VERDICT_STYLE.get(word, ("", ""))
    return (f"{sym} {label}" if sym else label), cls


def _exceeded(res, i) -> list[str]:
    """Tailedness metrics of set ``i`` above the safety limits of 001 Table II."""
    from uqx.engine.stats.tailedness import SAFETY_LIMITS

    lim = SAFETY_LIMITS
    vals = {k: float(res[k].values[i]) for k in lim if k in res}  # NaN is never above
    return [f"{k} = {v:.3g} > {lim[k]:g}" for k, v in vals.items() if v > lim[k]]


# ------------------------------------------------------------------ content blocks


def _header_blocks(res, title, has_data) -> list:
    a = res.attrs
    now = datetime.now(UTC).isoformat(timespec="seconds")
    blocks = [("h", 1, title, "top"),
              ("p", f"uqx {__version__}, report written {now}; result computed by uqx "
                    f"{a.get('uqx_version', '?')} at {a.get('created_at', '?')}.")]
    keys = [("n_boot", "bootstrap replicates"), ("n_mc", "simulated sets per reference"),
            ("seed", "root seed"), ("level", "confidence level"),
            ("n_bins", "bins of the binned statistics"), ("binning_scheme", "binning"),
            ("pop_min", "minimal points per bin"), ("nu", "\u03bd of t_s(\u03bd)"),
            ("extrapolation_preset", "zero-bin sweep preset"),
            ("extrapolation_n_mc", "calibrated copies for the extrapolation null")]
    rows = [[label, str(a[k])] for k, label in keys if k in a] + [
        ["generative distributions D", ", ".join(str(d) for d in res["dist"].values)]]
    if "member" in res.dims:
        rows.append(["null family of the verdicts",
                     ", ".join(str(m) for m in res["member"].values)])
    blocks += [("h", 2, "Parameters", "parameters"), ("table", ["parameter", "value"], rows)]
    names = list(a.get("input_names", [str(s) for s in res["set"].values]))
    sizes = list(a.get("input_sizes", res["M"].values if "M" in res.coords else []))
    digests = list(a.get("input_digests", []))
    rows = [[str(n), str(sizes[i]) if i < len(sizes) else "",
             str(digests[i]) if i < len(digests) else ""] for i, n in enumerate(names)]
    blocks += [("h", 2, "Inputs", "inputs"),
               ("table", ["data set", "M", "content digest (SHA-256, 128 bits)"], rows)]
    if a.get("input_sources"):
        blocks.append(("p", f"Sources: {a['input_sources']}"))
    if not has_data:
        blocks.append(("note", "Input data not given: the figures of the raw data (E vs uE, "
                       "reliability, LZISD, calibration, confidence, distributions) are "
                       "skipped; the \u03b6 bars and the extrapolation need only the result."))
    return blocks


def _stat_cell(r, st, label, dists) -> tuple:
    """Cell of the statistics overview: verdict, estimate [BCa interval], ζ (per D)."""
    x = r.sel(stat=st)
    text, cls = _verdict_cell(label)
    text += (f"\n{_num(x['estimate'], 3)} [{_num(x['ci_low'], 3)}, {_num(x['ci_high'], 3)}]")
    if str(x["reference_kind"].item()) == "simulated" and "zeta_sim" in x:
        return text + "\n" + ", ".join(f"\u03b6_{d} {_num(x['zeta_sim'].sel(dist=d), 3)}"
                                       for d in dists), cls
    return (text + f"\n\u03b6 {_num(x['zeta'], 3)}" if np.isfinite(float(x["zeta"])) else text), cls


def _summary_blocks(res, table) -> list:
    """Build the verdict table and the statistics overview (one row per set each)."""
    stats = [str(s) for s in res["stat"].values]
    avg = [s for s in ("zms", "rce") if s in stats]
    conds = [str(c) for c in res["cond"].values] if "cond_verdict" in res else []
    dists = [str(d) for d in res["dist"].values] if "dist" in res.dims else []
    header = ["data set", "M"] + [f"average calibration: {s.upper()}" for s in avg]
    header += ["consistency (uE)" if c == "uE" else f"adaptivity ({c})" for c in conds]
    rows, over = [], []
    for i, s in enumerate(res["set"].values):
        r = res.isel(set=i)
        name = [(f"{s}", "", f"#set-{i + 1}"), (str(int(r["M"])), "num")]
        exc = _exceeded(res, i)
        rows.append(name + [_verdict_cell(table.loc[(s, st), "verdict"]) for st in avg]
                    + [_verdict_cell(r["cond_verdict"].sel(cond=c).item()) for c in conds]
                    + [("above the safety limits:\n" + "\n".join(exc), "warn") if exc
                       else ("within the safety limits", "")])
        over.append(name[:1] + [_stat_cell(r, st, table.loc[(s, st), "verdict"], dists)
                                for st in stats])
    return [("h", 2, "Verdicts", "verdicts"), ("table", header + ["tailedness"], rows),
            ("p", "Every statistic: verdict, estimate [BCa interval] and \u03b6 (\u03b6_BS "
             "for a predefined reference, \u03b6_Sim per generative distribution D "
             "otherwise)."),
            ("table", ["data set", *[st.upper() for st in stats]], over)]


def _warning_blocks(res) -> list:
    from uqx.workflow.tables import grouped_warnings

    items = [f"{s}: {w}" for s in res["set"].values for w in grouped_warnings(res, s)]
    return [("h", 2, "Warnings", "warnings"), ("list", items or ["none"])]


def _stat_rows(res, table, s):
    """Detailed per-statistic rows of one set (``result_table``) with reasons."""
    df = table.loc[s]
    reason = res["verdict_reason"].sel(set=s) if "verdict_reason" in res else None
    header = ["statistic", *[str(c) for c in df.columns], "reason"]
    rows = []
    for st, rec in df.iterrows():
        cells = [str(st).upper()]
        cells += [(_num(v, 6), "num") for c, v in rec.items() if c != "verdict"]
        cells.append(_verdict_cell(rec["verdict"]))
        why = str(reason.sel(stat=st).item()) if reason is not None else ""
        cells.append((why if "inconclusive" in str(rec["verdict"]) else "", "small"))
        rows.append(cells)
    return header, rows


def _cond_rows(df, s):
    """Conditional rows of one set (``conditional_table``), untested conditions left out."""
    if df is None or df.empty or s not in df.index.get_level_values("set"):
        return None
    df = df.loc[s]
    rows = []
    for (cond, route), rec in df.iterrows():
        if route == "headline" and rec["verdict"] == "not tested" and len(df.loc[cond]) == 1:
            continue
        rows.append([str(cond), str(route), (str(rec["value"]), "num"),
                     (str(rec["interval"]), "small"), _verdict_cell(rec["verdict"])])
    return (["conditioning", "route", "value", "interval", "verdict"], rows) if rows else None


def _set_blocks(res, i, figs, tables) -> list:
    s = str(res["set"].values[i])
    blocks = [("h", 2, f"{s} (M = {int(res['M'].values[i])})", f"set-{i + 1}"),
              ("h", 3, "Average calibration and binned statistics", None),
              ("table", *_stat_rows(res, tables[0], s))]
    cond = _cond_rows(tables[1], s)
    if cond is not None:
        blocks += [("h", 3, "Consistency and adaptivity", None), ("table", *cond)]
    if figs:
        blocks += [("h", 3, "Figures", None), ("figs", figs)]
    return blocks


# ------------------------------------------------------------------ figures


def _png(fig, dpi) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def _draw(key, caption, make, dpi) -> tuple:
    """One figure entry ``(key, caption, png or None, why not drawn)``.

    A figure that the data cannot give is noted on the page: the figure functions say so
    with :class:`~uqx.errors.InputError` (too few points for the bins, a variable the set
    lacks, a fit without a finite start). Any other exception is a bug and propagates.
    """
    import matplotlib.pyplot as plt

    try:
        fig = make()
    except InputError as exc:
        return key, caption, None, str(exc)
    try:
        return key, caption, _png(fig, dpi), ""
    finally:
        plt.close(fig)


def _one_set(ds, i):
    """Set ``i`` of stacked data as a one-set Dataset with its units and variable names."""
    from uqx.plot._input import to_one

    one = to_one(ds, i)
    units = ds["units"].values[i] if "units" in ds else ds.attrs.get("units", "")
    one.attrs["units"] = "" if units in (None, "mixed") else str(units)
    for key in ("X", "V"):
        if key in one and key in ds:
            one[key].attrs.update(ds[key].attrs)
    return one


def _match_data(res, data) -> dict:
    """Map result set names to one-set Datasets (same content digest, else same name)."""
    from uqx.dataio.model import iter_sets
    from uqx.engine.resample import content_key
    from uqx.plot._input import as_sets

    if data is None:
        return {}
    ds = as_sets(data)
    sets = list(iter_sets(ds))
    got = ["".join(f"{w:08x}" for w in content_key(sd.E, sd.uE)) for sd in sets]
    names = list(res.attrs.get("input_names", []))
    digests = list(res.attrs.get("input_digests", []))
    out = {}
    for s in (str(x) for x in res["set"].values):
        want = digests[names.index(s)] if s in names and len(digests) == len(names) else None
        named = [i for i, sd in enumerate(sets) if sd.name == s]
        same = [i for i, g in enumerate(got) if g == want] or (named if want is None else [])
        if same:
            out[s] = _one_set(ds, same[0])
        elif named:
            out[s] = (f"the input data named {s} differ from those of the result (content "
                      f"digest {got[named[0]]}, not {want}): figures of the raw data skipped")
        else:
            out[s] = "no input data with this name or content: figures of the raw data skipped"
    return out


def _data_figures(one, dpi) -> list:
    """Draw the diagnostic figures of one set's raw data (:mod:`uqx.plot`)."""
    import uqx.plot as P

    specs = [
        ("e_vs_u", "Errors against uncertainties: guide lines E = \u00b1k uE (k = 1, 2, 3) "
         "and running 95 % quantiles (003 Fig. 2).", lambda: P.e_vs_u(one, size="single")),
        ("reliability", "Reliability diagram: per-bin SD(E) against RMV with 95 % intervals; "
         "bins missing the identity in vermillion (003 Fig. 4).",
         lambda: P.reliability(one, size="single")),
        ("lzisd_uE", "LZISD = 1/sd(Z) per bin of uE (consistency), target 1; 'all' is the "
         "full set (003 Fig. 5).", lambda: P.lzisd(one, size="single")),
    ]
    for key in ("X", "V"):
        if key in one:
            specs.append((f"lzisd_{key}", f"LZISD per bin of {key} (adaptivity), target 1 "
                          "(003 Fig. 10).", lambda k=key: P.lzisd(one, by=k, size="single")))
    specs += [
        ("calibration", "Calibration curve with its Wilson-cc 95 % band and the "
         "miscalibration area (003 Fig. 1).", lambda: P.calibration(one, size="single")),
        ("confidence", "Confidence curve: RMSE of the errors left after removing the k % "
         "largest uE, oracle and probabilistic reference with its 95 % band (003 Fig. 7).",
         lambda: P.confidence(one, size="single", n_rep=200)),
        ("distributions", "Distributions of ln u\u00b2, ln E\u00b2, ln Z\u00b2, E and Z with "
         "their fitted models.", lambda: P.distributions(one)),
    ]
    return [_draw(k, c, f, dpi) for k, c, f in specs]


def _result_figures(res, i, dpi) -> list:
    """Zero-bin extrapolation panels of set ``i`` for every tested conditioning variable."""
    from uqx.plot.extrapolation import extrapolation

    out, one = [], res.isel(set=[i])
    for c in (str(c) for c in res["cond"].values) if "extrap_intercept" in res else ():
        if not np.isfinite(one["extrap_intercept"].sel(cond=c).values).any():
            continue
        what = "consistency" if c == "uE" else "adaptivity"
        out.append(_draw(f"extrapolation_{c}", f"Zero-bin extrapolation on {c} bins "
                         f"({what}): statistic against \u221a(N/M), fitted line, intercept "
                         "\u00b1 2 SE (papers, shown only) and the null 95 % interval per D "
                         "that decides the verdict (000 App. C).",
                         lambda c=c: extrapolation(one, cond=c), dpi))
    return out


def _zeta_figure(res, dpi) -> list:
    """ζ bars of all sets; sets numbered on the axis when their names would collide."""
    from uqx.plot import zeta_bars

    have = [str(x) for x in res["stat"].values]
    stats = [s for s in ("zms", "rce", "cc", "ence", "zmse", "zve") if s in have]
    names = [str(s) for s in res["set"].values]
    caption = ("\u03b6-scores per set: \u03b6_BS (predefined reference) and \u03b6_Sim, "
               "\u03b6_Sim2 per generative distribution; |\u03b6| \u2264 1 validates "
               "(000 Figs. 8-9).")
    if sum(len(n) for n in names) > 60:
        res = res.assign_coords(label=("set", [str(i + 1) for i in range(len(names))]))
        caption += " Sets: " + ", ".join(f"{i + 1} {n}" for i, n in enumerate(names)) + "."
    return [_draw("zeta_bars", caption, lambda: zeta_bars(res, stats=stats), dpi)
            ] if stats else []


# ------------------------------------------------------------------ rendering


def _cell(c):
    """Normalise a cell to ``(text, css class, href)``."""
    c = c if isinstance(c, tuple) else (c,)
    return str(c[0]), c[1] if len(c) > 1 else "", c[2] if len(c) > 2 else None


def _html_table(header, rows) -> str:
    e = html.escape
    # the box scrolls a wide table sideways, so that the page itself never does (phones)
    out = ['<div class="tw"><table>', "<thead><tr>" + "".join(f"<th>{e(h)}</th>" for h in header)
           + "</tr></thead>", "<tbody>"]
    for row in rows:
        cells = []
        for text, cls, href in map(_cell, row):
            body = "<br/>".join(e(t) for t in text.split("\n"))
            if href:
                body = f'<a href="{e(href)}">{body}</a>'
            cells.append(f'<td class="{e(cls)}">{body}</td>' if cls else f"<td>{body}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _html(blocks, title, figure_src) -> str:
    """Render the blocks as one XHTML-compatible page (inline CSS, no script)."""
    e = html.escape
    out = ['<!DOCTYPE html>', '<html lang="en">', "<head>", '<meta charset="utf-8"/>',
           '<meta name="viewport" content="width=device-width, initial-scale=1"/>',
           f"<title>{e(title)}</title>", f"<style>{_CSS}</style>", "</head>", "<body>"]
    for b in blocks:
        kind = b[0]
        if kind == "h":
            anchor = f' id="{e(b[3])}"' if b[3] else ""
            out.append(f"<h{b[1]}{anchor}>{e(b[2])}</h{b[1]}>")
        elif kind in ("p", "note"):
            out.append(f'<p class="{kind}">{e(b[1])}</p>')
        elif kind == "list":  # items: text, or (text, anchor) for a table of contents
            out.append("<ul>" + "".join(f'<li><a href="#{e(t[1])}">{e(t[0])}</a></li>' if
                                        isinstance(t, tuple) else f"<li>{e(t)}</li>"
                                        for t in b[1]) + "</ul>")
        elif kind == "table":
            out.append(_html_table(b[1], b[2]))
        elif kind == "figs":
            out.append('<div class="figs">')
            for key, caption, png, why in b[1]:
                if png is None:
                    out.append(f'<p class="note">Figure {e(key)} not drawn: {e(why)}</p>')
                    continue
                out.append(f'<figure><img src="{e(figure_src(key, png))}" alt="{e(key)}"/>'
                           f"<figcaption>{e(caption)}</figcaption></figure>")
            out.append("</div>")
    out += [f'<p class="small">Generated by uqx {e(__version__)}.</p>', "</body>", "</html>"]
    return "\n".join(out) + "\n"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def _md(text) -> str:
    """Escape Markdown syntax characters (and keep a table row on one line)."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace(":\n", ": ").replace("\n", "; ")


def _markdown(blocks, title, figure_src) -> str:
    """Render the blocks as Markdown (pipe tables, verdict words with their symbols)."""
    out = []
    for b in blocks:
        kind = b[0]
        if kind == "h":
            out.append(f"{'#' * b[1]} {_md(b[2])}")
        elif kind in ("p", "note"):
            out.append(("> " if kind == "note" else "") + _md(b[1]))
        elif kind == "list":
            out.append("\n".join(f"- {_md(_cell(t)[0])}" for t in b[1]))
        elif kind == "table":
            lines = ["| " + " | ".join(_md(h) for h in b[1]) + " |",
                     "|" + "---|" * len(b[1])]
            lines += ["| " + " | ".join(_md(_cell(c)[0]) for c in row) + " |" for row in b[2]]
            out.append("\n".join(lines))
        elif kind == "figs":
            for key, caption, png, why in b[1]:
                out.append(f"![{_md(key)}]({figure_src(key, png)})\n\n*{_md(caption)}*"
                           if png is not None else f"> Figure {_md(key)} not drawn: {_md(why)}")
    return "\n\n".join([*out, f"*Generated by uqx {__version__}.*"]) + "\n"


def _data_uri(key, png) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# ------------------------------------------------------------------ public API


def diagnostic_figures(result, data=None, *, dpi: float = 110) -> dict:
    """Draw the standard diagnostic figures of a validation result as PNG images.

    Per set: E vs uE (003 Fig. 2), reliability diagram (Fig. 4), LZISD on uE and on X / V
    when present (Figs. 5, 10), calibration (Fig. 1) and confidence curves (Fig. 7),
    distributions (these need ``data``: sets matched by content digest, a same-named set
    with other content refused), the zero-bin extrapolation panels (000 App. C) of every
    tested conditioning variable; for all sets: the ζ bars (000 Figs. 8-9).

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output.
    data : xarray.Dataset, list of Dataset or path to NetCDF, optional
        The validated inputs.
    dpi : float, default 110
        Resolution of the PNG images.

    Returns
    -------
    dict
        ``{None: [...], set_name: [...]}``: lists of ``(key, caption, png, why)`` with the
        PNG bytes, or ``png=None`` and ``why`` saying why a figure was not drawn.
    """
    res = _load_result(result)
    matched = _match_data(res, data)
    out = {None: _zeta_figure(res, dpi)}
    for i, s in enumerate(str(x) for x in res["set"].values):
        one = matched.get(s)
        figs = [("data", "", None, one)] if isinstance(one, str) else (
            _data_figures(one, dpi) if one is not None else [])
        out[s] = figs + _result_figures(res, i, dpi)
    return out


def _blocks(res, data, *, figures, title, dpi) -> list:
    """Build the content blocks of the report, in page order."""
    from uqx.workflow.tables import conditional_table, result_table

    figs = diagnostic_figures(res, data, dpi=dpi) if figures else {}
    tables = (result_table(res), conditional_table(res) if "cond" in res.dims else None)
    blocks = _header_blocks(res, title, has_data=data is not None or not figures)
    names = [str(s) for s in res["set"].values]
    toc = [("Verdicts", "verdicts"), ("Warnings", "warnings"),
           ("How to read the verdicts", "howto")]
    blocks += [("list", toc + [(s, f"set-{i + 1}") for i, s in enumerate(names)])]
    blocks += _summary_blocks(res, tables[0]) + _warning_blocks(res)
    blocks += [("h", 2, "How to read the verdicts", "howto"), ("list", _HOWTO)]
    blocks += [("figs", figs[None])] if figs.get(None) else []
    for i, s in enumerate(names):
        blocks += _set_blocks(res, i, [(f"set{i + 1}_{k}", *rest) for k, *rest in
                                       figs.get(s, [])], tables)
    return blocks


def report(result, data=None, *, figures: bool = True, fmt: str = "html",
           title: str | None = None, dpi: float = 110, figure_dir=None) -> str:
    """Render a validation result as one self-contained HTML page (or Markdown).

    Content (module docstring): parameters, inputs, verdict table, grouped warnings
    (:func:`uqx.workflow.tables.grouped_warnings`), how to read the verdicts (000 Fig. 1 with the
    rules of :mod:`uqx.engine.verdict`), per set the tables of
    :func:`~uqx.workflow.tables.result_table` and :func:`uqx.workflow.tables.conditional_table` and
    :func:`diagnostic_figures`.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output.
    data : xarray.Dataset, list of Dataset or path to NetCDF, optional
        The validated inputs, matched by content digest (:func:`diagnostic_figures`).
        Without it, the raw-data figures are skipped (noted on the page).
    figures : bool, default True
        Draw the figures (False: tables only, fast).
    fmt : {"html", "md"}, default "html"
        HTML: inline CSS, no script, figures as base64 PNG ``data:`` URIs, all text
        escaped. Markdown: the same content with pipe tables.
    title : str, optional
        Page title (default the result's ``title`` attribute).
    dpi : float, default 110
        Resolution of the embedded PNG figures.
    figure_dir : path, optional
        Markdown only: write the figures as PNG files into this directory (created) and
        link them as ``<figure_dir name>/<file>.png`` (the directory must sit next to the
        Markdown file); default: embedded ``data:`` URIs.

    Returns
    -------
    str
        The page.
    """
    if fmt not in ("html", "md"):
        raise InputError(f"report format must be 'html' or 'md', got {fmt!r}")
    res = _load_result(result)
    title = title or str(res.attrs.get("title", "uqx validation report"))
    blocks = _blocks(res, data, figures=figures, title=title, dpi=dpi)
    if fmt == "html":
        return _html(blocks, title, _data_uri)
    if figure_dir is None:
        return _markdown(blocks, title, _data_uri)
    folder = Path(figure_dir)
    folder.mkdir(parents=True, exist_ok=True)

    def to_file(key, png):
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", key) + ".png"
        (folder / name).write_bytes(png)
        return f"{folder.name}/{name}"

    return _markdown(blocks, title, to_file)


def report_format(path) -> str:
    """Format of a report file from its suffix: ``.html``/``.htm`` or ``.md``/``.markdown``."""
    suffix = Path(path).suffix.lower()
    if suffix in (".html", ".htm"):
        return "html"
    if suffix in (".md", ".markdown"):
        return "md"
    raise InputError(f"{path}: report file must end in .html or .md")


def write_report(result, path, data=None, *, figures: bool = True, title: str | None = None,
                 dpi: float = 110) -> Path:
    """Write :func:`report` to ``path`` atomically (:func:`uqx.dataio.files.atomic_write`).

    The format follows the suffix (``.html`` or ``.md``); a Markdown report gets its
    figures as PNG files in ``<stem>_figures/`` next to it.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output.
    path : str or path-like
        Report file, ``.html``/``.htm`` or ``.md``/``.markdown``.
    data : xarray.Dataset, list of Dataset or path to NetCDF, optional
        The validated inputs (raw-data figures; :func:`report`).
    figures : bool, default True
        Draw the figures.
    title : str, optional
        Page title.
    dpi : float, default 110
        Resolution of the figures.

    Returns
    -------
    pathlib.Path
        The written file.

    Raises
    ------
    InputError
        Unknown suffix, or a result that is not a validation result.
    uqx.errors.OutputError
        The file cannot be written.
    """
    path = Path(path)
    fmt = report_format(path)
    fig_dir = path.with_name(path.stem + "_figures") if fmt == "md" and figures else None
    text = report(result, data, figures=figures, fmt=fmt, title=title, dpi=dpi,
                  figure_dir=fig_dir)
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"),
                        what="report")
