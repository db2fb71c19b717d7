"""The recommended validation workflow (paper 000 Fig. 1, paper 001 Sect. V), extended.

:func:`validate` checks its input once (:func:`uqx.dataio.model.check_sets`), groups the
sets by the features they have (each group tested on its own features), then runs the
steps of :data:`uqx.workflow.steps.STEPS` in order over one
:class:`~uqx.workflow.steps.Run` per group (:func:`uqx.workflow.steps.run_steps`): load,
order, notes, tailedness, bootstrap, the null family, the copies, the errors' shape, the
p-values, the decision, the resolutions, the verdicts as printed, the diagnostics, the
factor √ZMS, and the result assembled once.

Disk-backed input (dask arrays, e.g. :func:`uqx.dataio.netcdf.open_dataset`): see the Notes of
:func:`validate` and :func:`uqx.workflow.disk.memory_note` for what is streamed and what
is held in memory.

The rules and their measured error rates: the documentation page "How to read the
verdicts" and the ``error-rates`` study (:mod:`uqx.sweeps.error_rates`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from uqx._checks import check_stats_argument, is_lazy
from uqx.dataio.model import CheckedSets, InputError, check_sets
from uqx.engine.defaults import DEFAULT_STATS, N_BINS, N_BOOT
from uqx.engine.resample import resolve_seed
from uqx.engine.statistic import parse_stat
from uqx.progress import STEP_WEIGHTS, steps_progress
from uqx.workflow.disk import memory_note, streams  # noqa: F401  (re-exported)
from uqx.workflow.groups import (
    Binning,
    Bootstrap,
    Compute,
    Conditional,
    Decision,
    flat_settings,
    grouped_keywords,
)
from uqx.workflow.groups import Copies as CopiesGroup  # references.Copies: the drawn copies
from uqx.workflow.settings import Settings
from uqx.workflow.steps import STEP_LABELS, TAILEDNESS_VARS, run_steps

__all__ = ["validate", "memory_note", "streams", "DEFAULT_STATS", "ADAPTIVITY_STATS",
           "TAILEDNESS_VARS"]

#: Adaptivity's statistics, added to :data:`DEFAULT_STATS` for each feature (X, V) a set
#: has: the scan, the mean and the largest |ln ZMS| of the bins of the feature. In a stack
#: where only some sets have it, those sets are tested on it as they would be alone.
ADAPTIVITY_STATS = ("zms_scan", "zmse", "zmse_max")


@grouped_keywords
def validate(
    ds,
    stats: Sequence[str] | str = DEFAULT_STATS,
    *,
    bootstrap: Bootstrap | int | None = None,
    copies: CopiesGroup | int | None = None,
    binning: Binning | int | None = None,
    conditional: Conditional | bool | None = None,
    decision: Decision | None = None,
    compute: Compute | None = None,
) -> xr.Dataset:
    r"""Validate average calibration, consistency and adaptivity of uncertainties.

    Extends the decision tree of paper 000 Fig. 1 with the Monte-Carlo tests of
    :mod:`uqx.engine.mctest` and the conditional routes of :mod:`uqx.workflow.conditional`
    (documentation: How to read the verdicts);
    see the module docstring for the steps.

    Parameters
    ----------
    ds : xarray.Dataset
        One data set or several stacked on ``set`` (:func:`uqx.stack`); checked like
        :func:`uqx.from_arrays` input.
    stats : str or sequence of str
        Statistics (default ZMS, RCE, ⟨Z⟩ (``mean_z``), CC, ENCE, ZMSE, ZMSE_max, ZMS_scan,
        ZVE: :data:`DEFAULT_STATS`), plus :data:`ADAPTIVITY_STATS` on X and on V for each
        set that has them (a set without X in a stack where others have it reads
        adaptivity (X) ``not tested``, and says why). Statistics binned on X or V, asked
        by name, are computed for the sets of a stack that have the feature, the same way.
    bootstrap : uqx.Bootstrap or int, optional
        The bootstrap of the intervals: ``n_boot`` replicates (default 10000) at the
        confidence ``level`` (default 0.95, the intervals' only); an int is ``n_boot``.
    copies : uqx.Copies or int, optional
        The calibrated copies of the Monte-Carlo tests and references: ``n_mc`` per
        member of the null family (default 10000), the Student member's ``nu`` (6),
        ``simulate_all`` and ``extrapolation_n_mc``; an int is ``n_mc``.
    binning : uqx.Binning or int, optional
        The rows and their bins: ``bins`` (default 20 equal-count bins on uE, capped
        silently; where given and a set gets fewer, its warnings say so), ``scheme``,
        ``pop_min`` (30), ``ties`` (``"content"``: every output a function of the set of
        rows; ``"file-order"``: the papers' R convention) and ``drop_nonfinite``; an int
        is ``bins``.
    conditional : uqx.Conditional or bool, optional
        The conditional routes (LZISD per bin, zero-bin extrapolation): ``enabled``
        (default True), ``cond_bins``, ``cond_n_boot``, ``cond_ci``; a bool is
        ``enabled`` (``conditional=False`` skips them).
    decision : uqx.Decision, optional
        The verdicts: their family-wise level ``alpha`` (default 0.10), whether each
        test's ``resolution`` is stated (True), and an equivalence ``tolerance`` on the
        scale of uE (None).
    compute : uqx.Compute, optional
        The run: its root ``seed`` (recorded in ``attrs["seed"]``; drawn if omitted),
        the dask ``scheduler`` and ``num_workers`` (the numbers do not depend on them),
        and the ``progress`` display.

    Each group's page (:class:`uqx.Bootstrap`, :class:`uqx.Copies`,
    :class:`uqx.Binning`, :class:`uqx.Conditional`, :class:`uqx.Decision`,
    :class:`uqx.Compute`) says what each field means and its default; a group checks
    its fields when made. A keyword of the flat form (``n_boot=500``) raises a
    :class:`TypeError` that names its group.

    Returns
    -------
    xarray.Dataset
        Over (``set``, ``stat``): estimates, BCa intervals (with MC errors), references,
        ζ, ``verdict``/``verdict_reason``/``borderline``; over (``set``, ``stat``,
        ``dist``): simulated references and ζ_Sim, ζ_Sim2; over ``set``: tailedness,
        ``n_bins_used``, warnings; over (``set``, ``question``): ``question_verdict``,
        its reason, p-values, levels and resolution; over (``set``, ``cond``, ...): the
        papers' conditional diagnostics (documentation: "How to read the verdicts").

    Notes
    -----
    **Disk-backed input** (dask arrays, e.g. a chunked NetCDF opened with
    :func:`uqx.dataio.netcdf.open_dataset`; :func:`uqx.workflow.disk.memory_note` says the same
    for a given call):

    * moment statistics only (ZMS, RCE, mean/var of Z, MV, MSE, NLL, ...) without the
      conditional routes (``conditional=False``, :func:`streams`): nothing is loaded. The
      estimates, their BCa bootstrap and the simulated references of every member stream
      over groups of 2^20 rows (the routes of :func:`uqx.bootstrap` and
      :func:`uqx.simulate_reference`); the tailedness metrics are exact (not
      approximate quantiles): one column at a time (u, u², E², Z²) is read into one
      buffer, sorted in place and summarised. Held in memory: that buffer (8 bytes a
      row) and, for the resampled-data member, the standardised z-scores (8 bytes a row).
    * otherwise (binned statistics ENCE/ZMSE/ZVE/UCE, CC, the conditional routes): the
      columns are read once into memory, chunk by chunk (8 bytes a row each for E, uE
      and X, V when present), and the in-memory workflow runs on them; they are not
      checked again (the checks read the file once, in groups of rows). The input
      digests are taken first, from the rows as given; the row order (content order, or
      the stable order of uE with ``ties="file-order"``) then holds one order of the rows
      (int64, 8 bytes a row, one set at a time) and permutes the loaded columns in place,
      so the columns are never held twice. In that order uE is sorted, so what bins on
      uE needs no sort
      order: the binned bootstrap reads E and uE as they are and draws each replicate's
      counts sample block by sample block (no count matrix), the simulated references
      read uE as it is. Sets longer than :data:`uqx.engine.defaults.LONG_SET_ROWS`
      (2^24) rows also reduce the leave-one-out values of the BCa acceleration to power
      sums, sum u² by chunks, and draw the resampled-data member's z-scores from E and
      uE (:class:`uqx.engine.null_shape.StandardisedPool`): nothing of size M is held
      beyond the columns, but one column of 8 bytes a row at a time for the exact
      quantiles (tailedness, the fitted member's κ_CS). Measured (ZMS + RCE + ENCE,
      ``--no-conditional``, n_boot = n_mc = 200, ``benchmarks/bench_validate_disk.py``):
      see :func:`uqx.workflow.disk.memory_note`. CC, bins on X / V and the conditional
      routes still hold sort orders and per-row values (8 bytes a row each).
      The tailedness step of sets longer than 2^20 rows works one column at a time
      here too (the same bits).

    Both routes give the same numbers as the in-memory input, bit for bit (tested): the
    streamed one reads the rows in file order, the in-memory input is sorted by uE, so
    their intervals agree when the file's rows are in the order of uE.

    **In-memory input**: the checks count and take extremes 2^20 rows at a time (no
    temporary column). Input given as arrays, one data set or a list is stacked into new
    arrays (16 bytes a row for E, uE), which the content order permutes in place; a
    stacked data set keeps the user's arrays, never modified: the content order then
    copies the columns in the new order (one new array each).

    Examples
    --------
    >>> import numpy as np, uqx
    >>> rng = np.random.default_rng(0)
    >>> u = rng.uniform(0.5, 2.0, 1000)
    >>> ds = uqx.from_arrays(u * rng.standard_normal(1000), u, name="toy")
    >>> res = uqx.validate(ds, "zms", bootstrap=500, conditional=False,
    ...                    compute=uqx.Compute(seed=1))
    >>> res.verdict.sel(stat="zms").item()
    'valid'
    """
    # every setting checked by one rule (uqx.workflow.groups.check_values), shared with
    # the flat Settings and the CLI
    flat = flat_settings(bootstrap, copies, binning, conditional, decision, compute)
    seed, bins = flat.pop("seed"), flat.pop("bins")
    drop_nonfinite, progress = flat.pop("drop_nonfinite"), flat.pop("progress")
    settings = Settings(seed=resolve_seed(seed), bins=N_BINS if bins is None else bins,
                        **{**flat, "resolution": bool(flat["resolution"])},
                        bins_chosen=bins is not None)
    n_boot, n_mc, tolerance = settings.n_boot, settings.n_mc, settings.tolerance
    default = stats is DEFAULT_STATS
    stats = check_stats_argument(stats)
    specs = _check_arguments(stats)
    if tolerance is not None and "zms" not in [s.name for s in specs]:
        raise InputError("tolerance is a claim on the factor sqrt(ZMS): add zms to the "
                         "statistics")
    checked = check_sets(ds, drop_nonfinite)
    # the defaults add adaptivity on each feature a set has: sets grouped by their features,
    # each group a call of its own where the groups differ
    groups = given = _feature_groups(checked)
    present = {c for feats, _ in groups for c in feats}
    group_specs = [_group_specs(specs, feats, default, present, checked.data["set"].values[idx])
                   for feats, idx in groups]
    if len({tuple(s.name for s in g) for g in group_specs}) == 1:
        groups, group_specs = [((), None)], group_specs[:1]  # one call for the whole stack
    settings.check_memory(checked.data.sizes.get("set", 1), max(map(len, group_specs)))
    # the copies' and the bootstrap's shares grow with their counts (QM9_E at the CLI's
    # 10 000 each: copies 79 %, bootstrap 16 %), roughly as their square roots
    weights = {**STEP_WEIGHTS, "copies": STEP_WEIGHTS["copies"] * np.sqrt(max(n_mc, 1) / 1000),
               "bootstrap": STEP_WEIGHTS["bootstrap"] * np.sqrt(max(n_boot, 1) / N_BOOT)}
    absent = _absent_features(checked, given)
    with steps_progress(STEP_LABELS, label="uqx validate", progress=progress,
                        weights=weights):
        if len(groups) == 1:
            return run_steps(checked, group_specs[0], settings, absent)
        return _merge_groups([run_steps(checked.select(idx), sp, settings,
                                        [absent[i] for i in idx])
                              for (_, idx), sp in zip(groups, group_specs, strict=True)],
                             checked)


def _feature_groups(checked: CheckedSets) -> list[tuple[tuple[str, ...], np.ndarray]]:
    """Group the sets of a stack by the features (X, V) they have, in order of appearance.

    A stacked Dataset pads a set without a feature with NaN (:func:`uqx.stack`): a set
    whose column is all NaN has none; a lazy (dask) column counts as present. Returns
    ``[(features, set indices), ...]``.
    """
    ds = checked.data
    n = ds.sizes["set"]
    have = np.zeros((n, 2), dtype=bool)
    for k, c in enumerate(("X", "V")):
        if c not in ds:
            continue
        x = ds[c]
        if is_lazy(x.data):
            have[:, k] = True
            continue
        with np.errstate(invalid="ignore"):
            have[:, k] = np.any(np.isfinite(np.asarray(x.values, dtype=np.float64)),
                                axis=x.get_axis_num("sample"))
    keys = [tuple(c for k, c in enumerate(("X", "V")) if have[i, k]) for i in range(n)]
    order = list(dict.fromkeys(keys))
    return [(f, np.array([i for i in range(n) if keys[i] == f])) for f in order]


def _group_specs(specs, feats, default, present, names):
    """Choose the statistics a group of sets with features ``feats`` computes.

    The defaults add :data:`ADAPTIVITY_STATS` on each feature of the group. Statistics
    binned on a feature the group lacks are left out when another set of the stack has it
    (``present``; its sets read them ``not tested``); a feature no set has stays an error
    (the evaluator names it). ``names``: the group's sets, for the message.
    """
    if default:
        return specs + _check_arguments([f"{b}_{c}" for c in feats for b in ADAPTIVITY_STATS])
    keep = [s for s in specs if not (s.family == "binned" and s.cond in ("X", "V")
                                     and s.cond not in feats and s.cond in present)]
    if not keep:
        s = specs[0]
        raise InputError(f"{', '.join(map(str, names))}: statistic {s.name!r} needs variable "
                         f"{s.cond!r}, which these sets do not have (other sets do), and no "
                         "other statistic was requested: add one they can compute (e.g. zms)")
    return keep


def _merge_groups(parts, checked) -> xr.Dataset:
    """One result from the results of the feature groups of :func:`_feature_groups`.

    Each group ran as its own call (a set's numbers do not depend on the other sets: its
    random streams are keyed by its content), so every set reads as it would alone. A
    statistic one group did not compute is NaN in the others, its verdicts ``not tested``
    (:func:`_absent_feature_reasons` says why).
    """
    names = [str(s) for s in checked.data["set"].values]
    stats = list(dict.fromkeys(str(s) for p in parts for s in p["stat"].values))
    fill = {}
    for p in parts:
        for k, v in p.data_vars.items():
            if v.dtype.kind == "U":
                fill[k] = "not tested" if k.endswith("verdict") else ""
            elif v.dtype.kind == "b":
                fill[k] = False
            elif v.dtype.kind in "iu":
                fill[k] = 0
    with xr.set_options(keep_attrs=True):
        out = xr.concat(parts, dim="set", data_vars="minimal", coords="minimal",
                        join="outer", fill_value=fill, compat="override",
                        combine_attrs="override")
    out = out.reindex(stat=stats, fill_value=fill).sel(set=names)
    if "stat_long_name" in out.coords:
        out = out.assign_coords(stat_long_name=("stat", [
            next(str(p["stat_long_name"].sel(stat=s).item()) for p in parts
                 if s in p["stat"].values) for s in stats]))
    for k in ("input_names", "input_sizes", "input_digests", "input_features"):
        if all(k in p.attrs for p in parts):
            by_set = {str(n): v for p in parts
                      for n, v in zip(p["set"].values, np.atleast_1d(p.attrs[k]), strict=True)}
            out.attrs[k] = [by_set[n].item() if isinstance(by_set[n], np.generic)
                            else by_set[n] for n in names]
    return out


def _absent_features(checked: CheckedSets, groups) -> list[tuple]:
    """Say why adaptivity is not tested for a set lacking a feature other sets have.

    ``groups``: :func:`_feature_groups` of the call's input. Returns, per set of
    ``checked``, its ``(feature, reason)`` pairs; :func:`verdicts_step` writes each reason
    as its question's, :func:`finish_step` adds it to the set's notes.
    """
    names = [str(s) for s in checked.data["set"].values]
    feats = {}
    for f, idx in groups:
        for i in idx:
            feats[i] = f
    out = [[] for _ in names]
    for c in ("X", "V"):
        have = [names[i] for i in range(len(names)) if c in feats[i]]
        if not have:
            continue
        for i in range(len(names)):
            if c not in feats[i]:  # its verdict is `not tested`: no statistic on c was run
                out[i].append((c, f"this set has no {c} ({c} is given for {', '.join(have)})"))
    return [tuple(x) for x in out]


def _check_arguments(stats):
    """Parse the statistic names (one name or several)."""
    if isinstance(stats, str):
        stats = [stats]
    specs = [parse_stat(s) for s in stats]
    if any(s.vector for s in specs):
        raise InputError("per-bin statistics are part of the conditional analysis, not 'stats'")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise InputError(f"duplicate statistics in {list(stats)}")
    return specs
