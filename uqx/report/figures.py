"""The diagnostic figures of a report (:func:`diagnostic_figures`), drawn as PNG images.

The raw-data figures need the validated inputs (sets matched by content digest); the ζ
bars and the zero-bin extrapolation panels come from the result alone. A figure that
the data cannot give is returned with the reason (the figure functions say so with
:class:`~uqx.errors.InputError`); any other exception propagates.
"""

from __future__ import annotations

import io

import numpy as np

from uqx import plot as P
from uqx._checks import is_lazy
from uqx.dataio.model import InputError, iter_sets
from uqx.dataio.row_order import order_rows
from uqx.engine.defaults import N_BINS, POP_MIN, local_bins
from uqx.engine.questions import question_of
from uqx.engine.resample import content_key
from uqx.inference.curves.binned import reliability as reliability_curve
from uqx.plot.inputs import as_sets, load, to_one
from uqx.report.blocks import Figure

__all__ = ["diagnostic_figures", "load_result", "data_mismatches", "untested"]


def load_result(result):
    """Return the validation result of ``result`` (a Dataset or a NetCDF path), checked."""
    res = load(result)
    if "verdict" not in res or "stat" not in res.dims:
        raise InputError("the report needs a validation result (uqx.validate output with "
                         "'verdict' over (set, stat))")
    return res


def _png(fig, dpi, caption=None) -> bytes:
    """PNG bytes of a figure; its caption goes into the PNG's ``Description`` text.

    The files of ``uqx validate --plots`` thus carry what the report's captions say (the
    bins, the interval method, which drawn numbers are not in the result).
    """
    buf = io.BytesIO()
    meta = {"Software": None}
    if caption:
        meta["Description"] = caption
    fig.savefig(buf, format="png", dpi=dpi, metadata=meta)
    return buf.getvalue()


def _draw(key, caption, make, dpi) -> Figure:
    """One :class:`~uqx.report.blocks.Figure`: the PNG, or None and why it was not drawn.

    A figure that the data cannot give is noted on the page: the figure functions say so
    with :class:`~uqx.errors.InputError` (too few points for the bins, a variable the set
    lacks, a fit without a finite start). Any other exception is a bug and propagates.
    """
    try:
        fig = make()
    except InputError as exc:
        return Figure(key, caption, None, str(exc))
    return Figure(key, caption, _png(fig, dpi, caption))


def _one_set(ds, i):
    """Set ``i`` of stacked data as a one-set Dataset with its units and variable names."""
    one = to_one(ds, i)
    units = ds["units"].values[i] if "units" in ds else ds.attrs.get("units", "")
    one.attrs["units"] = "" if units in (None, "mixed") else str(units)
    for key in ("X", "V"):
        if key in one and key in ds:
            one[key].attrs.update(ds[key].attrs)
    return one


def _match_data(res, data) -> dict:
    """Map result set names to one-set Datasets (same content digest, else same name)."""
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


def _missing_features(res, name, one) -> dict:
    """Say which optional variables (X, V) of a validated set its given data lack.

    Returns ``{variable: why}``.

    The result's ``input_features`` (per set, as validated) tell; a result without them
    tells by the conditioning variables of its LZISD bins.
    """
    names = list(res.attrs.get("input_names", []))
    feats = res.attrs.get("input_features")
    if isinstance(feats, list | tuple) and name in names and len(feats) == len(names):
        had = [k for k in str(feats[names.index(name)]).split(",") if k]
    elif "bin_x_mid" in res and "cond" in res.dims:
        r = res.sel(set=name)
        had = [c for c in ("X", "V") if c in [str(k) for k in res["cond"].values]
               and np.isfinite(r["bin_x_mid"].sel(cond=c).values).any()]
    else:
        had = []
    return {k: f"the data given have no {k}, which the result was validated with: its "
            f"figures on {k} are not drawn from the data (give its column, --{k} NAME)"
            for k in had if k not in one}


def data_mismatches(result, data) -> list[str]:
    """Why the given data do not go with a saved result: one line per set and problem.

    Parameters
    ----------
    result : xarray.Dataset or path to NetCDF
        :func:`uqx.validate` output.
    data : xarray.Dataset, list of Dataset or path to NetCDF
        The inputs given with it (``uqx report RESULT.nc --data ...``).

    Returns
    -------
    list of str
        ``"<set>: <reason>"`` for every set of the result whose input data are missing
        or differ (content digest), or lack a variable (X, V) it was validated with;
        empty when all match.
    """
    res = load_result(result)
    out = []
    for s, one in _match_data(res, data).items():
        whys = [one] if isinstance(one, str) else _missing_features(res, s, one).values()
        out += [f"{s}: {why}" for why in whys]
    return out


_NOT_RESULT = ("a description of this figure computed from the data, not a statistic of "
               "the validation (it is in no table)")


def _stat_value(res, i, stat):
    """``(estimate, ci_low, ci_high)`` of ``stat`` for set ``i``, or None if not validated."""
    if "stat" not in res.dims or stat not in [str(s) for s in res["stat"].values]:
        return None
    r = res.isel(set=i).sel(stat=stat)
    return tuple(float(r[k]) for k in ("estimate", "ci_low", "ci_high"))


def _reliability_spec(one, res, i):
    """Return the reliability diagram on the bins of the validated ENCE, with its caption."""
    used = int(res["n_bins_used"].values[i]) if "n_bins_used" in res else -1
    requested = int(res.attrs.get("n_bins", N_BINS))
    n_bins = used if used > 0 else requested
    binning = str(res.attrs.get("binning_scheme", "equal-count"))
    pop_min = int(res.attrs.get("pop_min", POP_MIN))
    kw = dict(kind="rmse", n_bins=n_bins, binning=binning, pop_min=pop_min)
    caption = (f"Reliability diagram: per-bin RMSE against RMV on {n_bins} {binning} bins "
               f"of uE (at least {pop_min} points per bin), the bins of the validated ENCE; "
               "per-bin 95 % intervals: analytic (Cho), bins missing the identity in "
               "vermillion (003 Fig. 4).")
    val = _stat_value(res, i, "ence")
    try:
        drawn = float(np.asarray(reliability_curve(one, **kw).attrs["ence"]))
    except InputError:
        drawn = None
    if val is None:
        caption += (" The ENCE in the corner is that of these bins; ENCE was not among the "
                    "validated statistics.")
    elif drawn is not None and abs(drawn - val[0]) > 5e-4 * max(1.0, abs(val[0])):
        caption += (f" The ENCE in the corner ({drawn:.3f}) differs from the validated ENCE "
                    f"({val[0]:.4g}): the figure's bins are not exactly those of the "
                    "validation (ties of uE split otherwise); the table's value is the "
                    "validated one.")
    else:
        caption += (f" The ENCE in the corner is the validated ENCE = {val[0]:.4g} (BCa 95 % "
                    f"interval [{val[1]:.4g}, {val[2]:.4g}] in the table).")
    return ("reliability", caption, lambda: P.reliability(one, size="single", **kw))


def untested(res, i) -> set:
    """Features (X, V) whose adaptivity question set ``i`` was not asked (``not tested``).

    No figure is drawn on them: a figure of adaptivity on V beside a text that says
    "Adaptivity (V) not tested" would contradict it. The figures on uE (reliability
    diagram, LZISD on uE) describe the data and are always drawn, their captions saying
    where their numbers are not those of a test.
    """
    if "question_verdict" not in res or "question" not in res.dims:
        return set()
    qs = [str(q) for q in res["question"].values]
    out = set()
    for c in ("X", "V"):
        q = question_of("binned", c)
        if q in qs and str(res["question_verdict"].isel(set=i).sel(question=q).item()) \
                == "not tested":
            out.add(c)
    return out


def _lzisd_specs(res, i):
    """LZISD per bin of every conditioning variable, as validated (from the result)."""
    if "lzisd" not in res or "cond" not in res.dims:
        return []
    out, one, skip = [], res.isel(set=[i]), untested(res, i)
    for c in (str(c) for c in res["cond"].values):
        if c in skip:
            continue
        r = one.isel(set=0).sel(cond=c)
        if not np.isfinite(r["bin_x_mid"].values).any():
            continue
        nb = int(r["cond_n_bins"])
        method = str(r["lzisd_ci_method"].values)
        ci = {"cho": "analytic (Cho)", "bootstrap": "BCa bootstrap per bin, from whole-set "
              "resamples"}.get(method, method)
        what = "consistency" if c == "uE" else "adaptivity"
        fval = float(r["fval"])
        cap = (f"LZISD = 1/sd(Z) per bin of {c} ({what}), target 1, as validated: {nb} "
               f"equal-count bins of {c}, per-bin 95 % intervals: {ci}; "
               f"{round(fval * nb)} of {nb} bins ({100 * fval:.0f} %) contain 1 (fraction of valid "
               f"bins {fval:.3f}, Wilson-cc [{float(r['fval_ci_low']):.3f}, "
               f"{float(r['fval_ci_high']):.3f}]) (003 Figs. 5, 10). The fraction is a "
               "diagnostic of the papers, not tested: its per-bin intervals under-cover "
               "with heavy tails and few points per bin, so calibrated data show too few "
               f"valid bins; the {what} question decides (tables). The full set is judged "
               "by average calibration (table), so no 'all' marker.")
        out.append((f"lzisd_{c}", cap,
                    lambda c=c: P.lzisd_of_result(one, cond=c, size="single")))
    return out


def _lzisd_data_specs(one, res, i):
    """LZISD from the data when the result has none (validated without the routes).

    A variable that the set was validated with but its given data lack is said so, in
    place of its figure.
    """
    pop_min = int(res.attrs.get("pop_min", POP_MIN))
    nb = local_bins(int(one.sizes["sample"]))
    out, skip = [], untested(res, i)
    for c in [k for k in ("uE", "X", "V") if (k == "uE" or k in one) and k not in skip]:
        what = "consistency" if c == "uE" else "adaptivity"
        out.append((f"lzisd_{c}", f"LZISD = 1/sd(Z) per bin of {c} ({what}), target 1, "
                    f"drawn from the data: up to {nb} equal-count bins of {c} (at least "
                    f"{pop_min} points per bin), per-bin 95 % intervals: analytic (Cho); "
                    "'all' is the full set. The validation ran without the conditional "
                    "routes, so the valid bins in the corner are "
                    f"{_NOT_RESULT} (003 Figs. 5, 10).",
                    lambda c=c: P.lzisd(one, by=c, n_bins=nb, pop_min=pop_min,
                                        size="single")))
    for c, why in _missing_features(res, str(res["set"].values[i]), one).items():
        if c in skip:
            continue
        out.append((f"lzisd_{c}", "", _raise(why)))
    return out


def _raise(why):
    """Return a figure maker that says why the figure cannot be drawn (noted by _draw)."""
    def make():
        raise InputError(why)

    return make


def _data_figures(one, dpi, res=None, i=0) -> list:
    """Draw the diagnostic figures of one set (:mod:`uqx.plot`), matched to its result.

    The binned figures use the bins of the result (the reliability diagram those of the
    validated ENCE, the LZISD panels the result's own bins and intervals); numbers drawn
    that are not in the result are said so in the captions.
    """
    if res is not None and not any(is_lazy(one[k].data) for k in ("E", "uE") if k in one):
        # the rows in the order the validation binned them (tie groups of uE alike)
        one = order_rows(one, str(res.attrs.get("ties", "content")))
    specs = [
        ("e_vs_u", "Errors against uncertainties: guide lines E = \u00b1k uE (k = 1, 2, 3) "
         "and running 95 % quantiles (003 Fig. 2).", lambda: P.e_vs_u(one, size="single")),
    ]
    if res is not None:
        specs.append(_reliability_spec(one, res, i))
        validated = _lzisd_specs(res, i)
        specs += validated or _lzisd_data_specs(one, res, i)
    else:
        specs.append(("reliability", "Reliability diagram: per-bin SD(E) against RMV with 95 % "
                      "intervals (analytic, Cho); bins missing the identity in vermillion "
                      "(003 Fig. 4).", lambda: P.reliability(one, size="single")))
    specs += [
        ("calibration", "Calibration curve with its Wilson-cc 95 % band (normal errors). The "
         f"miscalibration area in the corner is {_NOT_RESULT} (003 Fig. 1).",
         lambda: P.calibration(one, size="single")),
        ("confidence", "Confidence curve: RMSE of the errors left after removing the k % "
         "largest uE, oracle and probabilistic reference with its 95 % band (003 Fig. 7).",
         lambda: P.confidence(one, size="single", n_rep=200)),
        ("distributions", _distributions_caption(res, i),
         lambda: P.distributions(one)),
    ]
    return [_draw(k, c, f, dpi) for k, c, f in specs]


def _distributions_caption(res, i) -> str:
    text = ("Distributions of ln u\u00b2, ln E\u00b2, ln Z\u00b2, E and Z with their fitted "
            "models. The \u03bd in the axis labels come from the fits of this figure (min-KS "
            "for the squares, maximum likelihood for E and Z: 'uqx fit'), "
            f"{_NOT_RESULT}")
    if res is not None and "nu_fit" in res:
        text += (f"; the validation's null family uses its own data-matched "
                 f"t_s(\u03bd = {float(res['nu_fit'].values[i]):.3g}), from the tails of Z\u00b2")
        lo = res["nu_fit_local_min"].values[i] if "nu_fit_local_min" in res else np.nan
        if np.isfinite(lo):
            hi = float(res["nu_fit_local_max"].values[i])
            top = f"{hi:.3g}" if np.isfinite(hi) else "the normal (\u03bd = \u221e)"
            text += (f" (one \u03bd per window of uE, from {float(lo):.3g} to {top}, "
                     "where the errors' shape changes with uE)")
    return text + "."


def _result_figures(res, i, dpi) -> list:
    """Zero-bin extrapolation panels of set ``i`` for every tested conditioning variable."""
    out, one, skip = [], res.isel(set=[i]), untested(res, i)
    for c in (str(c) for c in res["cond"].values) if "extrap_intercept" in res else ():
        if c in skip or not np.isfinite(one["extrap_intercept"].sel(cond=c).values).any():
            continue
        what = "consistency" if c == "uE" else "adaptivity"
        nbins = ""
        if "extrap_n_bins" in one:
            n = one["extrap_n_bins"].sel(cond=c).values
            n = n[np.isfinite(n)]
            if n.size:
                nbins = f" (equal-count bins, N = {int(n.min())} to {int(n.max())})"
        out.append(_draw(f"extrapolation_{c}", f"Zero-bin extrapolation on {c} bins{nbins} "
                         f"({what}): statistic against \u221a(N/M), fitted line, intercept "
                         "\u00b1 2 SE (papers, shown only) and the null 95 % interval per D "
                         "(000 App. C). The intercepts are a diagnostic of the papers, not "
                         "tested (their alternative is not simulated, so they could state no "
                         f"resolution): the {what} question decides (tables).",
                         lambda c=c: P.extrapolation(one, cond=c), dpi))
    return out


def _zeta_figure(res, dpi) -> list:
    """ζ bars of all sets; sets numbered on the axis when their names would collide."""
    have = [str(x) for x in res["stat"].values]
    stats = [s for s in ("zms", "rce", "cc", "ence", "zmse", "zve") if s in have]
    names = [str(s) for s in res["set"].values]
    caption = ("\u03b6-scores per set: \u03b6_BS (predefined reference) and \u03b6_Sim, "
               "\u03b6_Sim2 per generative distribution (000 Figs. 8-9). The lines at "
               "\u00b11 are the papers' \u03b6 rule (|\u03b6| \u2264 1), for comparison; "
               "the verdicts are Monte-Carlo tests (one-sided where a miscalibration has a "
               "side, so a large negative \u03b6 of ENCE is no miscalibration), in the tables.")
    if sum(len(n) for n in names) > 60:
        res = res.assign_coords(label=("set", [str(i + 1) for i in range(len(names))]))
        caption += " Sets: " + ", ".join(f"{i + 1} {n}" for i, n in enumerate(names)) + "."
    return [_draw("zeta_bars", caption, lambda: P.zeta_bars(res, stats=stats), dpi)
            ] if stats else []


def diagnostic_figures(result, data=None, *, dpi: float = 110) -> dict:
    """Draw the standard diagnostic figures of a validation result as PNG images.

    Per set: E vs uE (003 Fig. 2), reliability diagram (Fig. 4), LZISD on uE and on X / V
    when present (Figs. 5, 10), calibration (Fig. 1) and confidence curves (Fig. 7),
    distributions (these need ``data``: sets matched by content digest, a same-named set
    with other content refused), the zero-bin extrapolation panels (000 App. C) of every
    tested conditioning variable; for all sets: the ζ bars (000 Figs. 8-9). No figure on
    a variable whose question the set was not asked (:func:`untested`).

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
        ``{None: [...], set_name: [...]}``: lists of :class:`~uqx.report.blocks.Figure`
        ``(key, caption, png, why)`` with the PNG bytes, or ``png=None`` and ``why``
        saying why a figure was not drawn.
    """
    res = load_result(result)
    matched = _match_data(res, data)
    out = {None: _zeta_figure(res, dpi)}
    for i, s in enumerate(str(x) for x in res["set"].values):
        one = matched.get(s)
        if isinstance(one, str) or one is None:  # no raw data: the result's figures only
            figs = [Figure("data", "", None, one)] if isinstance(one, str) else []
            figs += [_draw(k, c, f, dpi) for k, c, f in _lzisd_specs(res, i)]
        else:
            figs = _data_figures(one, dpi, res, i)
        out[s] = figs + _result_figures(res, i, dpi)
    return out


