"""The diagnostic figures of a report (:func:`diagnostic_figures`), drawn as PNG images.

The raw-data figures need the validated inputs (sets matched by content digest); the ζ
bars and the zero-bin extrapolation panels come from the result alone. A figure that
the data cannot give is returned with the reason (the figure functions say so with
:class:`~uqx.errors.InputError`); any other exception propagates.
"""

from __future__ import annotations

import io

import numpy as np

from uqx.dataio.model import InputError
from uqx.report.blocks import Figure

__all__ = ["diagnostic_figures", "load_result", "data_mismatches"]


def load_result(result):
    """Return the validation result of ``result`` (a Dataset or a NetCDF path), checked."""
    from uqx.plot.inputs import load

    res = load(result)
    if "verdict" not in res or "stat" not in res.dims:
        raise InputError("the report needs a validation result (uqx.validate output with "
                         "'verdict' over (set, stat))")
    return res


def _png(fig, dpi) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def _draw(key, caption, make, dpi) -> Figure:
    """One :class:`~uqx.report.blocks.Figure`: the PNG, or None and why it was not drawn.

    A figure that the data cannot give is noted on the page: the figure functions say so
    with :class:`~uqx.errors.InputError` (too few points for the bins, a variable the set
    lacks, a fit without a finite start). Any other exception is a bug and propagates.
    """
    import matplotlib.pyplot as plt

    try:
        fig = make()
    except InputError as exc:
        return Figure(key, caption, None, str(exc))
    try:
        return Figure(key, caption, _png(fig, dpi))
    finally:
        plt.close(fig)


def _one_set(ds, i):
    """Set ``i`` of stacked data as a one-set Dataset with its units and variable names."""
    from uqx.plot.inputs import to_one

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
    from uqx.plot.inputs import as_sets

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


def data_mismatches(result, data) -> list[str]:
    """Why the given data do not go with a saved result: one line per set without its data.

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
        or differ (content digest); empty when all match.
    """
    res = load_result(result)
    return [f"{s}: {why}" for s, why in _match_data(res, data).items() if isinstance(why, str)]


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
        ``{None: [...], set_name: [...]}``: lists of :class:`~uqx.report.blocks.Figure`
        ``(key, caption, png, why)`` with the PNG bytes, or ``png=None`` and ``why``
        saying why a figure was not drawn.
    """
    res = load_result(result)
    matched = _match_data(res, data)
    out = {None: _zeta_figure(res, dpi)}
    for i, s in enumerate(str(x) for x in res["set"].values):
        one = matched.get(s)
        figs = [Figure("data", "", None, one)] if isinstance(one, str) else (
            _data_figures(one, dpi) if one is not None else [])
        out[s] = figs + _result_figures(res, i, dpi)
    return out


