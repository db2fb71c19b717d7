"""Row checks of one data set's columns, shared by every input route.

:func:`check_columns` runs the checks of methods: edge cases on the columns ``E``, ``uE``
(and ``X``, ``V``) of one data set, numpy- or dask-backed: non-finite values (error, or
rows dropped and counted), the documented ``uE > k sd(E)`` filter, at least 2 rows and
``uE > 0``. Dask columns stay lazy: the checks compute counts in one pass (bounded
memory); numpy columns are counted group by group (:data:`CHECK_ROWS` rows at a time, so
the temporaries stay a few MiB whatever M; counts and extremes are exact, the same values
as whole-column numpy); boolean row masks are only materialised to drop rows or to name
bad rows.
"""

from __future__ import annotations

import warnings

import numpy as np

from uqx.errors import InputError

__all__ = [
    "check_columns",
    "is_lazy",
    "describe_bad",
    "count_problems",
    "count_rows",
    "check_scale",
    "check_stats_argument",
    "constant_reason",
    "few_values_reason",
    "small_sample_note",
    "small_settings_note",
    "SMALL_M",
    "NUMERIC_KINDS",
    "SCALE_LIMIT",
    "CHECK_ROWS",
]

#: dtype kinds accepted as numbers (float, signed and unsigned integers)
NUMERIC_KINDS = "fiu"

#: Rows of a numpy column checked at a time: temporaries of 2^20 rows (8 MiB), not M.
CHECK_ROWS = 1 << 20

DROP_HINT = (
    "clean the data or drop (and count) those rows with drop_nonfinite=True "
    "(CLI: --drop-nonfinite)"
)


def is_lazy(arr) -> bool:
    """Tell whether ``arr`` is a dask array (anything with a dask graph)."""
    return hasattr(arr, "dask") and hasattr(arr, "chunks")


def _compute(values: list):
    """Evaluate a list of (possibly lazy) scalars in one pass."""
    if any(is_lazy(v) for v in values):
        import dask

        values = dask.compute(*values)
    return [_scalar(v) for v in values]


def _scalar(v):
    """Return a computed count as int, an extreme as float."""
    v = np.asarray(v)
    return int(v) if v.dtype.kind in "iub" else float(v)


def _mask(arr) -> np.ndarray:
    return np.asarray(arr.compute() if is_lazy(arr) else arr)


def describe_bad(mask, label: str, rows: np.ndarray | None = None) -> str:
    """``"N value(s) of LABEL (0-based rows i, j, ...)"`` for a boolean mask.

    ``rows``: input row numbers of the (possibly filtered) arrays, so that messages name
    the rows of the input.
    """
    mask = _mask(mask)
    idx = np.flatnonzero(mask) if rows is None else rows[mask]
    head = ", ".join(str(i) for i in idx[:5]) + (", ..." if idx.size > 5 else "")
    return f"{idx.size} value(s) of {label} (0-based rows {head})"


def _nonfinite(arr):
    return ~np.isfinite(arr)


def _nonpositive(arr):
    # NaN compares False: only finite rows (or rows left after dropping) are judged
    return ~(arr > 0)


def _at_most_zero(arr):
    return arr <= 0


def _groups(n: int):
    """``(lo, hi)`` of consecutive groups of :data:`CHECK_ROWS` rows covering ``0:n``."""
    for lo in range(0, n, CHECK_ROWS):
        yield lo, min(lo + CHECK_ROWS, n)


def count_rows(arr, test):
    """Count the rows of a 1-d column where ``test(rows)`` is True (lazy for dask).

    Parameters
    ----------
    arr : numpy or dask array, shape (M,)
    test : callable
        Elementwise boolean test of an array (e.g. ``np.isfinite``).

    Returns
    -------
    int or dask scalar
        ``test(arr).sum()``: lazy for a dask column; for numpy, counted
        :data:`CHECK_ROWS` rows at a time (a boolean temporary of 2^20 rows, not M).
    """
    if is_lazy(arr):
        return test(arr).sum()
    arr = np.asarray(arr)
    return sum(int(np.count_nonzero(test(arr[lo:hi]))) for lo, hi in _groups(arr.shape[0]))


def count_problems(cols: dict) -> dict:
    """Lazy-or-eager counts in one pass: non-finite values per column, ``uE <= 0``.

    Also the extremes of :func:`check_scale` (keys ``extreme_<i>``, NaN ignored), so that
    disk-backed columns are read once for all the checks. Numpy columns are read
    :data:`CHECK_ROWS` rows at a time (temporaries of 2^20 rows); the values are exact,
    the same as whole-column numpy.
    """
    out = {f"nonfinite_{k}": count_rows(v, _nonfinite) for k, v in cols.items()}
    out["nonpositive_uE"] = count_rows(cols["uE"], _at_most_zero)
    for key, v in _extremes(cols, compute=False).items():
        out[f"extreme_{key}"] = v
    return out


def _keep(cols: dict, keep: np.ndarray, rows: np.ndarray | None):
    # rows: input row numbers of the kept rows (None: all rows, in order)
    kept = np.flatnonzero(keep) if rows is None else rows[keep]
    return {k: v[keep] for k, v in cols.items()}, kept


def check_columns(
    cols: dict,
    name: str,
    *,
    drop_nonfinite: bool = False,
    min_uE_rel_sd: float | None = None,
    counts: dict | None = None,
):
    """Check (and filter) the rows of one data set.

    Parameters
    ----------
    cols : dict of str -> array, shape (M,)
        ``E``, ``uE`` and optional ``X``, ``V`` of equal length, float dtype.
    name : str
        Data set name, first word of every message.
    drop_nonfinite : bool
        Drop rows with NaN/inf in any column (counted) instead of raising.
    min_uE_rel_sd : float, optional
        Keep rows with ``uE > min_uE_rel_sd * sd(E)`` (sd with n-1 over the rows left).
    counts : dict, optional
        Already computed :func:`count_problems` of ``cols`` (one pass over many sets).

    Returns
    -------
    cols : dict
        The kept rows (the input arrays themselves when nothing is dropped).
    n_dropped : int
    filters : list of str
        Descriptions of the filters applied.

    Raises
    ------
    InputError
        NaN/inf (without ``drop_nonfinite``), fewer than 2 rows, ``uE <= 0``.
    """
    if min_uE_rel_sd is not None:
        try:
            k = float(min_uE_rel_sd)
        except (TypeError, ValueError):
            raise InputError(f"{name}: min_uE_rel_sd must be a number >= 0, got "
                             f"{min_uE_rel_sd!r}") from None
        if not (np.isfinite(k) and k >= 0):
            raise InputError(f"{name}: min_uE_rel_sd must be a finite number >= 0 (keep rows "
                             f"with uE > k*sd(E)), got {min_uE_rel_sd!r}")
    if counts is None:
        lazy = count_problems(cols)
        counts = dict(zip(lazy, _compute(list(lazy.values())), strict=True))
    n = int(cols["E"].shape[0])
    rows = None  # input row numbers once rows are dropped (an index costs 8 bytes a row)
    n_dropped = 0
    filters: list[str] = []
    bad_keys = [k for k in cols if counts[f"nonfinite_{k}"]]
    if bad_keys and not drop_nonfinite:
        key = bad_keys[0]
        raise InputError(
            f"{name}: {describe_bad(_nonfinite(cols[key]), key)} are NaN or infinite; "
            + DROP_HINT
        )
    changed = False
    if bad_keys:
        bad = np.zeros(n, dtype=bool)
        for key in bad_keys:
            bad |= _mask(_nonfinite(cols[key]))
        cols, rows = _keep(cols, ~bad, rows)
        n_dropped += int(bad.sum())
        filters.append(f"dropped {int(bad.sum())} row(s) with non-finite values")
        changed = True
    if min_uE_rel_sd is not None and int(cols["E"].shape[0]) >= 2:
        sd = cols["E"].std(ddof=1)
        thr = float(min_uE_rel_sd) * float(sd.compute() if is_lazy(sd) else sd)
        small = _mask(~(cols["uE"] > thr))
        n_small = int(small.sum())
        if n_small:
            cols, rows = _keep(cols, ~small, rows)
            n_dropped += n_small
            changed = True
        filters.append(f"uE > {min_uE_rel_sd:g}*sd(E): dropped {n_small} row(s)")
    n_left = int(cols["E"].shape[0])
    if n_left < 2:
        why = ""
        if filters:  # name the filters that left too few rows, and what to do
            fix = (f"lower min_uE_rel_sd={float(min_uE_rel_sd):g}"
                   if min_uE_rel_sd is not None else "check the columns read")
            why = f" of {n} rows, after the filters ({'; '.join(filters)}): {fix}"
        raise InputError(f"{name}: at least 2 points are needed, got {n_left}{why}")
    n_nonpos = (
        _compute([count_rows(cols["uE"], _nonpositive)])[0] if changed
        else counts["nonpositive_uE"]
    )
    if n_nonpos:
        swapped = ""
        if 2 * n_nonpos >= n_left and not _compute([count_rows(cols["E"], _nonpositive)])[0]:
            # half the "uncertainties" negative, every "error" positive: the columns
            swapped = ("; E is positive on every row while uE is not: are the columns of E "
                       "and uE swapped?")
        raise InputError(
            f"{name}: {describe_bad(_nonpositive(cols['uE']), 'uE', rows)} are <= 0; "
            "uncertainties must be strictly positive (a documented filter such as "
            f"min_uE_rel_sd=1e-6 drops them){swapped}"
        )
    keys = [*_EXTREMES, *(f"{k}_range" for k in "XV" if k in cols)]
    known = {k: counts.get(f"extreme_{k}") for k in keys}
    check_scale(cols, name, extremes=None if changed or None in known.values() else known)
    return cols, n_dropped, filters


#: Largest magnitude of E, uE and Z (and smallest of uE) that uqx accepts: 2**480 (about
#: 3e144). Squares and fourth powers of the values, and their sums over up to 2**60 rows,
#: then stay within the normal float64 range, so every statistic is the same function of
#: Z whatever the unit of E and uE (scale invariance).
SCALE_LIMIT = 2.0**480


#: Keys of the extremes that :func:`check_scale` reads (``X_range``/``V_range`` if present).
_EXTREMES = ("E_max", "u_min", "u_max", "z_max")


def _extremes_grouped(cols: dict) -> dict:
    """:func:`_extremes` of numpy columns, :data:`CHECK_ROWS` rows at a time.

    Max and min of the groups' max and min: exactly the whole-column values (NaN
    ignored; NaN when every row is NaN), with temporaries of 2^20 rows instead of M.
    """
    E, u = np.asarray(cols["E"]), np.asarray(cols["uE"])
    extra = [k for k in ("X", "V") if k in cols]
    top = {k: [] for k in (*_EXTREMES, *(f"{c}_{w}" for c in extra for w in ("max", "min")))}
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN: NaN
        for lo, hi in _groups(E.shape[0]):
            e, v = E[lo:hi], u[lo:hi]
            top["E_max"].append(np.nanmax(abs(e)))
            top["u_min"].append(np.nanmin(v))
            top["u_max"].append(np.nanmax(v))
            top["z_max"].append(np.nanmax(abs(e / v)))
            for k in extra:
                x = np.asarray(cols[k])[lo:hi]
                top[f"{k}_max"].append(np.nanmax(x))
                top[f"{k}_min"].append(np.nanmin(x))
        vals = {k: (np.nanmin if k == "u_min" else np.nanmax)(top[k]) for k in _EXTREMES}
        for k in extra:
            vals[f"{k}_range"] = np.nanmax(top[f"{k}_max"]) - np.nanmin(top[f"{k}_min"])
    return vals


def _extremes(cols: dict, *, compute: bool = True) -> dict:
    """Return max abs(E), min uE, max uE, max abs(Z), ranges of X, V (NaN ignored).

    With ``compute=False`` the values stay lazy for dask columns (one pass with others).
    Numpy columns are read :data:`CHECK_ROWS` rows at a time (:func:`_extremes_grouped`).
    """
    E, u = cols["E"], cols["uE"]
    if int(E.shape[0]) == 0:  # no rows: nothing to check (fewer than 2 rows is an error)
        return {k: np.nan for k in (*_EXTREMES, *(f"{c}_range" for c in "XV" if c in cols))}
    if not any(is_lazy(v) for v in cols.values()):
        vals = _extremes_grouped(cols)
        return {k: float(v) for k, v in vals.items()} if compute else vals
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN: NaN
        vals = dict(zip(_EXTREMES, [np.nanmax(abs(E)), np.nanmin(u), np.nanmax(u),
                                    np.nanmax(abs(E / u))], strict=True))
        for key in ("X", "V"):
            if key in cols:
                vals[f"{key}_range"] = np.nanmax(cols[key]) - np.nanmin(cols[key])
    if not compute:
        return vals
    if any(is_lazy(v) for v in vals.values()):
        import dask

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            vals = dict(zip(vals, dask.compute(*vals.values()), strict=True))
    return {k: float(v) for k, v in vals.items()}


def check_scale(cols: dict, name: str, *, extremes=None) -> None:
    """Refuse values whose squares leave the float64 range (scale invariance of Z).

    Every result of uqx depends on E and uE through Z = E/uE (and, for MV, MSE, RMV,
    RMSE, UCE, NLL, through their unit). Squares of values above about 1e154 overflow
    and those of values below 1e-154 underflow, which would change estimates and verdicts
    with the unit of E and uE. Within ``[1/SCALE_LIMIT, SCALE_LIMIT]`` (about 3e-145 to
    3e144) every estimate of a scale-free statistic is the same for (c E, c uE), up to
    rounding; outside, the input is refused with the factor that brings it back.

    Parameters
    ----------
    cols : dict of str -> array
        ``E``, ``uE`` (finite, ``uE > 0``) and optional ``X``, ``V`` of one data set.
    name : str
        Data set name, first word of the message.
    extremes : dict of str -> float, optional
        The values of ``_extremes(cols)`` when already computed (one pass with the other
        checks, :func:`count_problems`).

    Raises
    ------
    InputError
        max |E| or max uE above :data:`SCALE_LIMIT`, min uE below its inverse, |Z| above
        :data:`SCALE_LIMIT` or a range of X or V that overflows.
    """
    if int(cols["E"].shape[0]) == 0:
        return
    ext = _extremes(cols) if extremes is None else {k: float(v) for k, v in extremes.items()}
    e_max, u_min, u_max, z_max = (ext[k] for k in _EXTREMES)
    lim = SCALE_LIMIT
    if e_max == 0:
        raise InputError(
            f"{name}: all errors E are 0, so Z = E/uE is 0 on every row and there is "
            "nothing to validate; check that E holds the errors (reference - prediction), "
            "not a column of zeros"
        )
    why = ""
    if e_max > lim or u_max > lim:
        why = f"values up to {max(e_max, u_max):.3g}"
    elif u_min < 1 / lim:
        why = f"uE down to {u_min:.3g}"
    if why:
        lo, hi = np.log2(u_min), np.log2(max(e_max, u_max))
        if hi - lo < 2 * np.log2(lim):
            k = -int(np.round((lo + hi) / 2))
            fix = (f"Multiply E and uE together by a power of two such as 2**{k} (exact; "
                   "Z = E/uE does not change) or express them in another unit")
        else:
            fix = (f"They span {hi - lo:.0f} binary orders of magnitude, more than any one "
                   "unit can hold: check the smallest uE and the largest values")
        raise InputError(
            f"{name}: E and uE are out of the range uqx computes in ({why}; accepted "
            f"{1 / lim:.3g} <= uE, |E| <= {lim:.3g}): their squares would overflow or "
            f"underflow float64 and change the results. {fix}"
        )
    if z_max > lim:
        raise InputError(
            f"{name}: |Z| = |E|/uE reaches {z_max:.3g} (> {lim:.3g}): such z-scores "
            "cannot be squared in float64; check that uE is the standard uncertainty of E "
            "(same unit)"
        )
    for key in [k for k in ("X", "V") if k in cols]:
        if np.isinf(ext.get(f"{key}_range", 0.0)):
            raise InputError(
                f"{name}: the range of {key} (max - min) overflows float64; rescale {key}"
            )


def constant_reason(values, label: str) -> str:
    """Why statistics binned on (or ranked by) ``values`` are untestable ('' if they are not).

    A conditioning variable with a single value (a constant uE, or a constant X) gives
    nothing to bin on or to rank by: consistency (for uE) or adaptivity (for X, V), the
    statistics binned on it (ENCE, ZMSE, ZVE, UCE) and the rank correlation CC cannot be
    tested. Padding (NaN) is ignored.

    Parameters
    ----------
    values : array_like
        The conditioning variable of one set.
    label : str
        Its name in the message (``"uE"``, ``"X"``, ``"V"``).

    Returns
    -------
    str
        The reason, or ``""`` when ``values`` take at least two distinct values.
    """
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    lo, hi, n = np.inf, -np.inf, 0
    for a, b in _groups(arr.size):  # no temporary column (8 bytes a row)
        part = arr[a:b]
        part = part[np.isfinite(part)]
        if part.size:
            lo, hi, n = min(lo, part.min()), max(hi, part.max()), n + part.size
        if lo < hi:
            return ""
    if n == 0:
        return ""
    return (f"{label} is constant ({label} = {lo:.6g} on all {n} rows): "
            f"nothing to bin on or rank by, so what depends on {label} cannot be tested")


def few_values_reason(values, label: str, n_bins) -> str:
    """Why a feature with fewer distinct values than bins cannot be tested ('' otherwise).

    Equal-count bins of a feature that takes k < ``n_bins`` distinct values (a flag, a
    category) must split rows of equal value between bins, by their content: a bin is
    then not a range of the feature, and "uE too small in the top tenth of X" describes
    no rows the user could name. Such a feature is a grouping: each group is a set of its
    own. Padding (NaN) is ignored; a constant feature is :func:`constant_reason`'s.

    Parameters
    ----------
    values : array_like
        The feature of one set.
    label : str
        Its name in the message (``"X"``, ``"V"``).
    n_bins : int or None
        The bins the binned statistics use on it (None: unknown, nothing said).

    Returns
    -------
    str
        The reason, or ``""``.
    """
    if n_bins is None or n_bins < 2:
        return ""
    arr = np.asarray(values, dtype=np.float64).reshape(-1)
    head = arr[:4096]
    if np.unique(head[np.isfinite(head)]).size >= n_bins:  # most features: decided here
        return ""
    seen = set()
    for a, b in _groups(arr.size):  # chunk by chunk, no temporary column (8 bytes a row)
        part = arr[a:b]
        seen.update(np.unique(part[np.isfinite(part)]).tolist())
        if len(seen) >= n_bins:  # a continuous feature stops at its first chunk
            return ""
    distinct = np.array(sorted(seen))
    if distinct.size < 2:
        return ""
    shown = ", ".join(f"{v:.6g}" for v in distinct[:5]) + (", ..." if distinct.size > 5 else "")
    return (f"{label} takes only {distinct.size} distinct values ({shown}) for {n_bins} bins: "
            f"the bins would split rows of equal {label} by their content, so a bin of "
            f"{label} is not a range of {label}; validate each value of {label} as a set of "
            f"its own (uqx.from_dataframe(df, by='{label}'), or one file per value)")


def check_stats_argument(stats):
    """Check the ``stats`` argument of :func:`uqx.validate` and return it as a list.

    Parameters
    ----------
    stats : str or sequence of str
        One statistic name, a comma-separated string of names, or a sequence of names.

    Returns
    -------
    list of str
        The names, stripped (a comma-separated string is split).

    Raises
    ------
    InputError
        ``None``, an empty string or sequence, a name that is not a string, or an empty
        name in a comma-separated list.
    """
    if stats is None:
        raise InputError("stats: give at least one statistic (e.g. 'zms' or ['zms', 'rce']), "
                         "got None")
    if isinstance(stats, str):
        parts = [p.strip() for p in stats.split(",")]
        if not stats.strip():
            raise InputError("stats: empty string; give at least one statistic (e.g. 'zms')")
        if any(not p for p in parts):
            raise InputError(f"stats: empty name in {stats!r}")
        return parts
    if isinstance(stats, bytes) or not hasattr(stats, "__iter__"):
        raise InputError(f"stats: expected a statistic name or a list of names, got "
                         f"{type(stats).__name__}")
    items = list(stats)
    if not items:
        raise InputError("stats: empty list; give at least one statistic (e.g. ['zms'])")
    bad = [x for x in items if not isinstance(x, str)]
    if bad:
        raise InputError(f"stats: statistic names must be strings, got {bad[0]!r} "
                         f"({type(bad[0]).__name__})")
    if any(not x.strip() for x in items):
        raise InputError(f"stats: empty name in {items!r}")
    return [x.strip() for x in items]


#: Below this many rows, tailedness metrics, CC, binned statistics and distribution fits
#: are not meaningful (the papers' minimal bin population, methods: edge cases).
SMALL_M = 30


def small_sample_note(name: str, M: int, what: str = "tailedness (beta_GM, kappa_CS), "
                      "CC and the binned statistics") -> str:
    """Warning for a set too small for ``what`` to mean anything ('' when it is not).

    Parameters
    ----------
    name : str
        Data set name.
    M : int
        Its number of rows.
    what : str
        The results concerned.

    Returns
    -------
    str
        ``"NAME: only M = 2 rows: ... are not meaningful below M = 30"``, or ``""``.
    """
    if int(M) >= SMALL_M:
        return ""
    return (f"{name}: only M = {int(M)} rows: {what} are not meaningful below M = "
            f"{SMALL_M}; read them as placeholders, not results")


#: Below these counts, intervals, ζ-scores and p-values of a validation mean little.
SMALL_N_BOOT, SMALL_N_MC = 100, 50


def small_settings_note(n_boot: int | None, n_mc: int | None) -> str:
    """Warning for bootstrap / Monte-Carlo counts too small to decide ('' when they are not).

    Parameters
    ----------
    n_boot, n_mc : int or None
        Bootstrap replicates and simulated copies of a validation (None: not used).

    Returns
    -------
    str
        The warning, or ``""``.
    """
    low = []
    if n_boot is not None and int(n_boot) < SMALL_N_BOOT:
        low.append(f"n_boot {int(n_boot)} < {SMALL_N_BOOT} (BCa intervals, bias and "
                   "zeta-scores from too few replicates)")
    if n_mc is not None and int(n_mc) < SMALL_N_MC:
        low.append(f"n_mc {int(n_mc)} < {SMALL_N_MC} (references and p-values from too "
                   "few calibrated copies)")
    if not low:
        return ""
    return ("settings too small for meaningful numbers: " + "; ".join(low)
            + "; estimates stay exact, but intervals, zeta-scores and verdicts may be "
            "far off")

