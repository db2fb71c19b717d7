"""The steps of one validation, the record they fill, and the workflow that runs them.

:func:`run_steps` runs the steps of :data:`STEPS` in order over one :class:`Run`, the
state of the run (:func:`uqx.workflow.validation.validate` checks the input, groups the
sets by their features and calls it once per group):

1. :func:`load_step` — load (or stream) the sets' columns; digest the rows as given.
2. :func:`order_step` — every set's rows in the order of uE, tie groups as ``ties`` says.
3. :func:`notes_step` — the bins used on uE; capped bins, dropped rows, small settings.
4. :func:`tailedness_step` — **fit for purpose?** β_GM, κ_CS of u², E², Z² against the
   safety limits of 001 Table II; statistics that depend on an exceeded metric get a
   warning.
5. :func:`bootstrap_step` — BCa intervals of every statistic from shared resamples.
6. :func:`null_family_step` — the null family of the Monte-Carlo tests
   (:class:`~uqx.workflow.references.NullFamily`: N(0, 1), t_s(ν), the data-matched
   t_s(ν̂) from κ_CS of Z², the data's own z-scores resampled).
7. :func:`extrapolation_nulls_step` — the zero-bin extrapolation nulls that ride on the
   copies' draws (conditional diagnostics).
8. :func:`copies_step` — every tested statistic simulated under every member, once
   (:class:`~uqx.workflow.references.Copies`), the papers' simulated references beside.
9. :func:`papers_step` — the papers' references: predefined ones (ZMS → 1, RCE → 0,
   Var(Z) → 1, mean Z → 0, NLL → NLL_ref) give ζ_BS; the others get simulated references
   (Sim, Sim2, ζ_Sim).
10. :func:`shape_step` — the errors' shape the null family matches, and the members that
    take part.
11. :func:`pvalues_step` — each statistic's Monte-Carlo p-value under each member; what a
    set cannot test.
12. :func:`questions_step` — every verdict, decided once
    (:func:`~uqx.workflow.decision.question_step`: one graph of node tests, closed
    weighted min-p, the verdict over the members; the heavy tails, what a set cannot
    test and the factor not asked applied before anything is written).
13. :func:`resolutions_step` — the resolution each ``valid`` states.
14. :func:`verdicts_step` — the verdicts as printed: a ``valid`` without a resolution
    reads ``inconclusive``; an empty bin is named as the reason of what it left undefined,
    and a feature that other sets have as the reason its adaptivity is not tested.
15. :func:`diagnostics_step` — the papers' diagnostics, on which no verdict rests (LZISD,
    zero-bin extrapolation).
16. :func:`scale_factor_step` — the factor √ZMS, consistency up to it (the same copies,
    rescaled), and the tolerance claim when asked.
17. :func:`finish_step` — the result, assembled once from the steps' products: deciles of
    ZMS, the notes, the coordinates, the provenance.

Each entry of :data:`STEPS` is a :class:`Step`, which names the fields of :class:`Run`
the step reads and writes; :func:`run_steps` checks them as it runs (:class:`StepError`).
The steps hand each other products (:mod:`uqx.workflow.products`, Datasets of their own
variables); none reads the result, which only the last step writes. The table of the
steps' reads and writes is :func:`steps_table`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields

import numpy as np
import xarray as xr

from uqx._checks import is_lazy, small_sample_note, small_settings_note
from uqx.dataio.model import CheckedSets, InputError, iter_sets
from uqx.dataio.provenance import provenance, provenance_attrs
from uqx.dataio.row_order import permute_rows
from uqx.dataio.schema import VALIDATE, WARN_SEP
from uqx.engine.binning import content_order, equal_count_edges, make_bins, stable_order
from uqx.engine.confidence import bca_limits_mc_se
from uqx.engine.defaults import LONG_SET_ROWS
from uqx.engine.mctest import N_TEST
from uqx.engine.null_shape import kappa_cs_z2_halves
from uqx.engine.questions import QUESTION_SHARE, QUESTIONS
from uqx.engine.stats.tailedness import (
    SAFETY_LIMITS,
    STATISTIC_DEPENDENCIES,
    TAILEDNESS_KEYS,
    tailedness,
)
from uqx.inference.bootstrap import bootstrap
from uqx.progress import enter_step
from uqx.workflow.conditional import (
    extrapolation_step,
    lzisd_step,
    null_hooks,
    untestable_reasons,
)
from uqx.workflow.decision import pvalue_step, question_step
from uqx.workflow.disk import (
    READ_ROWS,
    is_lazy_input,
    lazy_sets,
    load_columns,
    release_freed_memory,
    streams,
    tailedness_streamed,
)
from uqx.workflow.products import ErrorShape
from uqx.workflow.recalibration import factor_tests, recalibration_step, tolerance_step
from uqx.workflow.references import (
    Copies,
    NullFamily,
    null_family,
    papers_references,
    plausible_for_ranks,
    plausible_in_windows,
    reference_step,
    test_name,
)
from uqx.workflow.resolutions import resolution_step, unresolved_step
from uqx.workflow.settings import Settings

__all__ = ["Run", "Step", "StepError", "STEPS", "STEP_LABELS", "run_steps", "steps_table",
           "TAILEDNESS_VARS"]

TAILEDNESS_VARS = TAILEDNESS_KEYS
_EXTRAP_STATS = ("ence", "zmse", "zve")


class _Notes:
    """Warnings collected by the steps: per (set, stat) and per set."""

    def __init__(self, n_sets, n_stats):
        self.by_stat = [[[] for _ in range(n_stats)] for _ in range(n_sets)]
        self.by_set = [[] for _ in range(n_sets)]

    def stat(self, i, j, text):
        if text not in self.by_stat[i][j]:
            self.by_stat[i][j].append(text)

    def set(self, i, text):
        if text not in self.by_set[i]:
            self.by_set[i].append(text)

    def variables(self):
        return VALIDATE.data_vars({
            "warnings": np.array([[WARN_SEP.join(w) for w in row] for row in self.by_stat],
                                 dtype=str),
            "set_warnings": np.array([WARN_SEP.join(w) for w in self.by_set], dtype=str),
        })


def _tailedness_step(sets, specs, notes) -> xr.Dataset:
    """Step 1: tailedness metrics per set; warnings for the statistics that depend on them."""
    tails = {k: np.full(len(sets), np.nan) for k in TAILEDNESS_VARS}
    for i, sd in enumerate(sets):
        # large or disk-backed sets: one column at a time (the same bits, 8 B a row)
        big = is_lazy(sd.E) or sd.M > READ_ROWS
        t = tailedness_streamed(sd.E, sd.uE, sd.M) if big else tailedness(sd.E, sd.uE)
        for k in TAILEDNESS_VARS:
            tails[k][i] = float(t[k])
        exceeded = [
            m for m in sorted({m for ms in STATISTIC_DEPENDENCIES.values() for m in ms})
            if np.isfinite(t[m]) and t[m] > SAFETY_LIMITS[m]
        ]
        for j, s in enumerate(specs):
            dep = [m for m in STATISTIC_DEPENDENCIES.get(s.base, ()) if m in exceeded]
            if dep:
                notes.stat(i, j, "heavy tails make this statistic unreliable "
                           f"({', '.join(dep)} above the safety limits; 001 Table II)")
        if exceeded:
            vals = ", ".join(f"{m} = {float(t[m]):.3g} > {SAFETY_LIMITS[m]:g}" for m in exceeded)
            notes.set(i, f"tailedness above the safety limits: {vals} (001 Table II)")
    return xr.Dataset(VALIDATE.data_vars({k: tails[k] for k in TAILEDNESS_VARS}))


def _bootstrap_step(ds, specs, notes, cfg) -> xr.Dataset:
    """Step 2: BCa bootstrap of every statistic with shared resamples, limit MC errors."""
    level = cfg.level
    names = [s.name for s in specs]
    need_ref = any(s.base == "nll" for s in specs) and "nll_ref" not in names
    extra = (["nll_ref"] if need_ref else []) + [
        t for t in dict.fromkeys(test_name(s) for s in specs) if t not in names]
    boot_names = names + extra  # the tests' statistics (t_z of <Z>) after the requested
    bs = bootstrap(ds, boot_names, n_boot=cfg.n_boot, method="bca", level=level,
                   seed=cfg.seed, keep_replicates=True, **cfg.binned_compute)
    T = bs["replicates"].values  # (set, stat, R+1), t0 first
    S, K = T.shape[:2]
    se_lo = np.full((S, K), np.nan)
    se_hi = np.full((S, K), np.nan)
    for i in range(S):
        se_lo[i], se_hi[i] = bca_limits_mc_se(T[i].T, bs["estimate"].values[i],
                                              bs["acceleration"].values[i], level=level)
    for i in range(S):
        for j in range(len(names)):
            n = int(bs["n_nan"].values[i, j])
            if n:
                notes.stat(i, j, f"{n} NaN bootstrap replicate(s) (statistic undefined on "
                           "some resamples)")
    out = bs[["estimate", "bias", "se", "ci_low", "ci_high", "z0", "acceleration"]]
    out = out.assign(VALIDATE.data_vars({"ci_low_se": se_lo, "ci_high_se": se_hi}))
    VALIDATE.annotate(out, level=level)
    return out.drop_vars(["M"], errors="ignore")


def _binning_used(sets, specs, *, bins, binning, pop_min, notes, note_capped=True):
    """Bins actually used per set by the binned statistics on uE.

    A set that gets fewer bins than ``bins`` is noted where ``note_capped`` (the user
    chose ``bins``).
    """
    used = np.full(len(sets), -1, dtype=np.int64)
    if not any(s.family == "binned" for s in specs):
        return used
    for i, sd in enumerate(sets):
        try:
            if binning == "equal-count":  # the edges depend on the count only: no sort
                used[i] = equal_count_edges(sd.M, bins, pop_min=pop_min).size - 1
            else:
                used[i] = make_bins(sd.uE, bins, scheme=binning, pop_min=pop_min).n_bins
        except InputError as exc:
            raise InputError(f"{sd.name}: {exc}") from None
        if note_capped and used[i] < bins and binning != "equal-width":
            notes.set(i, f"{bins} bins requested, {used[i]} used: at least {pop_min} points per "
                      f"bin (M = {sd.M}; lower --pop-min or --bins)")
    return used


def _cond_bins_used(sets, cond_bins, *, pop_min, notes) -> None:
    """Note the sets whose LZISD bins are fewer than the ``cond_bins`` asked for.

    As :func:`_binning_used` notes ``bins``: the LZISD bins are equal-count bins of at
    least ``pop_min`` points, so a short set gets fewer. Nothing is noted for the
    default number (``cond_bins`` None), which is chosen per set.
    """
    if cond_bins is None:
        return
    for i, sd in enumerate(sets):
        try:
            used = equal_count_edges(sd.M, cond_bins, pop_min=pop_min).size - 1
        except InputError:  # too short for any bin: the LZISD step said why
            continue
        if used < cond_bins:
            notes.set(i, f"{cond_bins} LZISD bins requested (--cond-bins), {used} used: at "
                      f"least {pop_min} points per bin (M = {sd.M}; lower --pop-min or "
                      "--cond-bins)")


@dataclass
class Run:
    """The state of one validation, filled by the steps of :data:`STEPS` in turn.

    Each step reads what the steps before it left and fills its own fields, its
    product; ``result``, the answer, is assembled from them by the last step. Which
    fields a step reads and writes is declared in its :class:`Step` and checked as it
    runs (:func:`run_steps`): ``checked``, ``specs``, ``cfg``, ``owned`` and ``absent``
    are given, every other field holds ``None`` until the step that writes it has run,
    and no step reads it before then.

    Attributes
    ----------
    checked : CheckedSets
        The input, checked once and stacked on ``set`` (rows in content order after
        :func:`order_step`); :attr:`ds` is its data.
    specs : list of StatSpec
        The statistics asked for.
    cfg : Settings
        The run's settings.
    owned : list of str
        The columns the run may permute in place (new buffers, referenced by nothing else).
    absent : tuple
        Per set, the features other sets of the call have and it lacks, with the reason
        said for its adaptivity (:func:`_absent_features`).
    sets : list of SetData
        The sets' columns (:func:`uqx.dataio.model.iter_sets`; lazy on the streamed route).
    streamed : bool
        Moment statistics read column by column: no order of uE is held.
    inputs : dict
        The digests of the rows as given (:func:`uqx.dataio.provenance.provenance`).
    notes : _Notes
        The warnings collected by the steps.
    n_bins_used : numpy.ndarray
        Bins used on uE per set (-1: none requested).
    tails, boot : xarray.Dataset
        The tailedness metrics; the bootstrap's estimates and intervals.
    observed : numpy.ndarray, shape (set, stat)
        The value each test reads (t_z for ⟨Z⟩).
    family : NullFamily
        The null family of the Monte-Carlo tests.
    hooks : list or tuple
        Per set, the zero-bin extrapolation null computed on the copies' draws
        (:func:`uqx.workflow.conditional.null_hooks`; None for a set too small), or ``()``
        where none is asked.
    copies : Copies
        The copies of the tests, drawn once and read by every later step.
    papers : xarray.Dataset
        The papers' references and ζ-scores
        (:func:`uqx.workflow.references.papers_references`).
    shape : ErrorShape
        The errors' shape the null family matches and the members taking part
        (:class:`uqx.workflow.products.ErrorShape`).
    untestable : tuple of numpy.ndarray
        Why a statistic, and a question, cannot be tested on a set ("" where it can).
    tested : xarray.Dataset
        The tests' p-values per member, the papers' ζ verdicts, the copies' bands
        (:func:`uqx.workflow.decision.pvalue_step`).
    decided : dict
        Each set's node tests and their one decision, ``{set: (NodeTests, SetDecision)}``
        (:func:`uqx.workflow.decision.question_step`); the resolutions read its thresholds.
    decision : xarray.Dataset
        The verdicts as the decision gives them, and the rescaled statistics.
    resolved : xarray.Dataset
        The resolution of each node and question
        (:func:`uqx.workflow.resolutions.resolution_step`).
    verdicts : xarray.Dataset
        The verdicts as printed (:func:`verdicts_step`).
    diagnostics : tuple of xarray.Dataset
        The LZISD and zero-bin extrapolation Datasets (empty without ``conditional``).
    rescaled : dict
        The factor √ZMS, its interval and consistency up to it (variables by name).
    tolerance : xarray.Dataset
        The equivalence claim on the scale, when a tolerance is given (else empty).
    result : xarray.Dataset
        The answer, assembled once from the products (:func:`finish_step`).
    """

    checked: CheckedSets
    specs: list
    cfg: Settings
    owned: list
    absent: tuple = ()
    sets: list = None
    streamed: bool = None
    inputs: dict = None
    notes: _Notes = None
    n_bins_used: np.ndarray = None
    tails: xr.Dataset = None
    boot: xr.Dataset = None
    observed: np.ndarray = None
    family: NullFamily = None
    hooks: tuple = None
    copies: Copies = None
    papers: xr.Dataset = None
    shape: ErrorShape = None
    untestable: tuple = None
    tested: xr.Dataset = None
    decided: dict = None
    decision: xr.Dataset = None
    resolved: xr.Dataset = None
    verdicts: xr.Dataset = None
    diagnostics: tuple = None
    rescaled: dict = None
    tolerance: xr.Dataset = None
    result: xr.Dataset = None

    @property
    def ds(self) -> xr.Dataset:
        """The checked input's data set."""
        return self.checked.data

    @property
    def M(self) -> np.ndarray:
        """The sets' sizes."""
        return np.array([sd.M for sd in self.sets])


#: The fields of :class:`Run`, in order.
RUN_FIELDS = tuple(f.name for f in fields(Run))
#: The fields given when a :class:`Run` is made: written before the first step.
GIVEN_FIELDS = ("checked", "specs", "cfg", "owned", "absent")


class StepError(RuntimeError):
    """A step of :data:`STEPS` broke its declaration (an error of uqx, not of the input)."""


@dataclass(frozen=True)
class Step:
    """One step of a validation: its function and the fields of :class:`Run` it uses.

    Parameters
    ----------
    fn : callable
        The step, ``fn(run) -> None``.
    reads, writes : str or sequence of str
        The fields of :class:`Run` it reads and those it assigns, as names or one string
        of names separated by spaces; kept as tuples in the order of the fields. A
        property counts as the field behind it (``ds``: ``checked``; ``M``: ``sets``).
        A step that reads ``notes`` may add warnings to it.

    Raises
    ------
    ValueError
        A name that is no field of :class:`Run`.
    """

    fn: Callable[[Run], None]
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()

    def __post_init__(self):
        for kind in ("reads", "writes"):
            names = getattr(self, kind)
            names = set(names.split() if isinstance(names, str) else names)
            if names - set(RUN_FIELDS):
                raise ValueError(f"{self.fn.__name__} {kind} {sorted(names - set(RUN_FIELDS))}:"
                                 " no field of Run")
            object.__setattr__(self, kind, tuple(f for f in RUN_FIELDS if f in names))

    @property
    def name(self) -> str:
        """The step function's name (``bootstrap_step``)."""
        return self.fn.__name__

    @property
    def label(self) -> str:
        """The name the progress display shows (``bootstrap``, :func:`step_label`)."""
        return step_label(self)


def run_steps(checked: CheckedSets, specs, cfg: Settings, absent=None) -> xr.Dataset:
    """Run the steps of :data:`STEPS` on checked input with settings ``cfg``.

    ``absent``: per set, the features other sets of the call have (:func:`_absent_features`).

    Where ``checked.private`` (its numpy columns are new, referenced by nothing else), the
    content order may permute them in place; columns loaded from disk here are always
    permuted in place.

    Each step's declaration (:class:`Step`) is checked as it runs: it reads only fields
    that are given or that an earlier step wrote, and the fields it changes (compared by
    identity) are among those it declares; otherwise :class:`StepError`.
    """
    keys = [k for k in ("E", "uE", "X", "V") if k in checked.data]
    n_sets = checked.data.sizes.get("set", 1)
    run = Run(checked, specs, cfg, owned=keys if checked.private else [],
              absent=tuple(absent) if absent is not None else ((),) * n_sets)
    written = set(GIVEN_FIELDS)
    for step in STEPS:
        unwritten = [f for f in step.reads if f not in written]
        if unwritten:
            raise StepError(f"{step.name} reads {', '.join(unwritten)}, which no earlier "
                            "step wrote")
        before = [getattr(run, f) for f in RUN_FIELDS]
        enter_step(step.label)
        step.fn(run)
        changed = {f for f, old in zip(RUN_FIELDS, before, strict=True)
                   if getattr(run, f) is not old}
        del before  # nothing of the previous state held past its step
        undeclared = changed.difference(step.writes)
        if undeclared:
            raise StepError(f"{step.name} wrote {', '.join(sorted(undeclared))}, which it "
                            "does not declare")
        written |= changed
        if max(run.M) > LONG_SET_ROWS:  # long sets: freed pages back to the system
            release_freed_memory()
    return run.result


def load_step(run: Run) -> None:
    """Load (or stream) the sets' columns; digest the rows as given."""
    ds, keys = run.ds, [k for k in ("E", "uE", "X", "V") if k in run.ds]
    run.streamed = streams(run.specs, conditional=run.cfg.conditional)
    if is_lazy_input(ds):
        if run.streamed:
            run.sets = lazy_sets(ds)  # nothing loaded: every step streams
        else:
            run.owned = [k for k in keys if is_lazy(ds[k].data)]  # new buffers of load_columns
            run.checked = run.checked.derive(load_columns(ds))
            run.sets = list(iter_sets(run.checked))
    else:
        run.sets = list(iter_sets(run.checked))
    # the input digests identify the rows as given: taken before the rows are reordered,
    # so that the input-order columns need not be kept to the end
    run.inputs = provenance(run.sets)
    # the optional columns of each set: a report on other data can say which one is missing
    run.inputs["input_features"] = [
        ",".join(k for k in ("X", "V") if getattr(sd, k) is not None) for sd in run.sets]


def order_step(run: Run) -> None:
    """Put every set's rows in the order of uE, tie groups as ``ties`` says (not streamed)."""
    if not is_lazy_input(run.ds):
        run.checked, run.sets = _content_order_step(run.checked, run.sets, owned=run.owned,
                                                    ties=run.cfg.ties)


def notes_step(run: Run) -> None:
    """Count the bins used on uE; note capped bins, dropped rows, small settings."""
    cfg, sets = run.cfg, run.sets
    run.notes = _Notes(len(sets), len(run.specs))
    run.n_bins_used = _binning_used(sets, run.specs, bins=cfg.bins, binning=cfg.binning,
                                    pop_min=cfg.pop_min, notes=run.notes,
                                    note_capped=cfg.bins_chosen)
    small = small_settings_note(cfg.n_boot, cfg.n_mc)
    for i, sd in enumerate(sets):
        n = int(run.ds["n_dropped"].values[i]) if "n_dropped" in run.ds else 0
        if n:
            run.notes.set(i, f"{n} row(s) dropped by filters")
        for text in (small, small_sample_note(sd.name, sd.M)):
            if text:
                run.notes.set(i, text)


def tailedness_step(run: Run) -> None:
    """Measure the tails (β_GM, κ_CS of u², E², Z²) against the safety limits (001 Table II)."""
    run.tails = _tailedness_step(run.sets, run.specs, run.notes)


def bootstrap_step(run: Run) -> None:
    """Bootstrap every statistic (BCa, shared resamples); keep the values the tests read."""
    boot = _bootstrap_step(run.checked, run.specs, run.notes, run.cfg)
    names = [str(x) for x in boot["stat"].values]
    observed = boot["estimate"].values[:, :len(run.specs)].copy()
    for j, s in enumerate(run.specs):  # the value each test reads (t_z for <Z>)
        observed[:, j] = boot["estimate"].values[:, names.index(test_name(s))]
    run.observed = observed
    run.boot = boot


def null_family_step(run: Run) -> None:
    """Choose the null family: N(0, 1), t_s(ν), the data-matched t_s(ν̂), the data's z-scores."""
    ds = run.ds
    run.family = null_family(run.cfg.nu, run.tails, None if run.streamed else run.sets,
                             M=ds["M"].values if "M" in ds else
                             np.full(len(run.sets), ds.sizes["sample"]))


def extrapolation_nulls_step(run: Run) -> None:
    """Prepare the zero-bin extrapolation nulls that ride on the copies (none: ``()``)."""
    cfg = run.cfg
    run.hooks = ()
    if cfg.conditional and cfg.n_extrapolation >= 2:
        run.hooks = null_hooks(run.sets, n_copies=min(cfg.n_extrapolation, cfg.n_mc, N_TEST))


def copies_step(run: Run) -> None:
    """Draw the copies of every test once, the papers' simulated references beside them."""
    run.copies = reference_step(run.checked, run.specs, run.boot, run.cfg, family=run.family,
                                hooks=run.hooks or None)


def papers_step(run: Run) -> None:
    """Give the papers' references: predefined ones with ζ_BS, the simulated Sim, Sim2, ζ_Sim."""
    run.papers = papers_references(run.boot, run.specs, run.copies.sims)


def shape_step(run: Run) -> None:
    """Record the errors' shape that the null family matches: κ_CS, ν̂, the members taking part."""
    sets, family, windows = run.sets, run.family, run.copies.windows
    plausible = family.plausible
    if any(w is not None for w in windows):  # fixed members: one shape for every uE
        plausible = plausible_in_windows(family, run.M, windows)
    kappa_half = half_points = spread = rank_use = None
    if not run.streamed:
        halves = [kappa_cs_z2_halves(sd.E, sd.uE) for sd in sets]
        kappa_half = np.array([h[0] for h in halves])
        half_points = np.array([h[1] for h in halves])
    if not run.streamed and any(s.family == "rank" for s in run.specs):
        spread, rank_use = plausible_for_ranks(sets, family, windows, plausible)
    local = [None if w is None or w.nus is None else w.nus for w in windows]
    run.shape = ErrorShape(
        labels=tuple(family.labels), plausible=plausible, plausible_rank=rank_use,
        spread_local=spread, kappa_local=family.kappa, kappa_half=kappa_half,
        half_points=half_points,
        u2_effective_points=_u2_effective_points(sets, run.streamed),
        nu_fit=family.nu_fit, nu_two_sided=family.nu_two_sided,
        nu_local_min=np.array([np.nan if v is None else np.min(v) for v in local]),
        nu_local_max=np.array([np.nan if v is None else np.max(v) for v in local]))


def pvalues_step(run: Run) -> None:
    """Compute each statistic's Monte-Carlo p-value per member; find what cannot be tested."""
    by_stat, by_question = untestable_reasons(run.sets, run.specs, run.notes,
                                              n_bins_used=run.n_bins_used, cfg=run.cfg)
    cells = xr.merge([run.boot.isel(stat=slice(0, len(run.specs))), run.papers],
                     combine_attrs="drop_conflicts")
    run.tested = pvalue_step(cells, run.specs, run.notes, run.copies.tests, run.shape,
                             observed=run.observed, joint=run.copies.redrawn,
                             untestable=by_stat != "")  # kept out of the questions' tests
    run.untestable = (by_stat, by_question)


def questions_step(run: Run) -> None:
    """Decide every verdict once: one graph of node tests (closed min-p), with the masks."""
    factor, factor_obs = factor_tests(len(run.shape.labels), run.sets, run.specs,
                                      run.copies.binned)
    decision, run.decided = question_step(run.tested["p_value"].values, run.shape, run.specs,
                                          run.copies.tests, factor=factor,
                                          alpha_result=run.cfg.alpha_result, M=run.M,
                                          untestable=run.untestable)
    decision["factor_statistic"] = VALIDATE.variable("factor_statistic", factor_obs)
    run.decision = decision


def resolutions_step(run: Run) -> None:
    """State each ``valid``'s resolution: the smallest miscalibration found 80 % of the time."""
    # NaN, the variables kept, without them: validate(decision=Decision(resolution=False))
    decided = run.decided if run.cfg.resolution else {}
    run.resolved = resolution_step(run.shape, run.specs, run.copies.tests, run.copies.binned,
                                   decided, M=run.M)


def verdicts_step(run: Run) -> None:
    """Write the verdicts as printed: ``valid`` with its resolution; empty bins, absent X named."""
    boot = run.boot.isel(stat=slice(0, len(run.specs)))
    verdicts = run.decision
    if run.cfg.resolution:
        verdicts = unresolved_step(verdicts, run.resolved,
                                   [str(x) for x in boot["stat"].values])
    verdicts = _empty_bins_step(verdicts, boot["estimate"].values, run.sets, run.specs,
                                run.cfg)
    run.verdicts = _absent_reasons(verdicts, run.absent)


def _absent_reasons(verdicts, absent):
    """Write the reason of a feature a set lacks as its adaptivity question's reason."""
    if not any(absent):
        return verdicts
    reason = verdicts["question_reason"]
    why = np.full(reason.shape, "", dtype=object)
    for i, pairs in enumerate(absent):
        for c, text in pairs:
            why[i, QUESTIONS.index(f"adaptivity_{c}")] = text
    return _with_reasons(verdicts, "question_reason", why)


def _with_reasons(verdicts, var: str, why) -> xr.Dataset:
    """``verdicts`` with ``var`` replaced where ``why`` (same shape) says something."""
    said = why != ""
    if not said.any():
        return verdicts
    reason = verdicts[var]
    return verdicts.assign({var: (reason.dims, np.where(said, why, reason.values).astype(str),
                                  reason.attrs)})


def diagnostics_step(run: Run) -> None:
    """Run the papers' diagnostics (LZISD, zero-bin extrapolation); say why a test is absent."""
    cfg = run.cfg
    run.diagnostics = ()
    if cfg.conditional:
        run.diagnostics = _conditional_steps(
            run.checked, run.sets, run.notes, cfg, members=run.family.members,
            nulls=run.copies.nulls if cfg.n_extrapolation <= cfg.n_mc else None)


def scale_factor_step(run: Run) -> None:
    """Give the scale factor √ZMS, consistency up to it, and the tolerance claim when asked."""
    cfg, copies = run.cfg, run.copies
    estimate = run.boot["estimate"].values[:, :len(run.specs)]
    run.rescaled = recalibration_step(estimate, run.shape, run.verdicts, run.resolved,
                                      run.specs, copies.tests, level=cfg.level,
                                      joint=copies.redrawn)
    run.tolerance = xr.Dataset()  # empty unless asked
    if cfg.tolerance is not None and any(s.name == "zms" for s in run.specs):
        # the equivalence claim, on the verdicts' copies
        run.tolerance = tolerance_step(estimate, run.shape, run.specs, copies.tests,
                                       cfg.tolerance, alpha=1 - cfg.level,
                                       more_copies=copies.redrawn)


def finish_step(run: Run) -> None:
    """Assemble the result once from the products; ZMS deciles, notes, coordinates, provenance."""
    sets = run.sets
    boot = run.boot.isel(stat=slice(0, len(run.specs)))
    res = xr.merge([boot, run.papers, run.tails], combine_attrs="drop_conflicts")
    res = res.assign(run.shape.variables()).assign_coords(member=list(run.shape.labels))
    res = res.merge(run.tested).merge(run.verdicts).merge(run.resolved)
    for part in run.diagnostics:
        res = res.merge(part, combine_attrs="override")
    res = res.assign(run.rescaled)
    if run.tolerance.data_vars:
        res = res.merge(run.tolerance)
    if not run.streamed:
        conds = ["uE"] + [c for c in ("X", "V") if any(getattr(sd, c) is not None
                                                        for sd in sets)]
        res["zms_decile"] = VALIDATE.variable("zms_decile", _zms_deciles(sets, conds))
        res = res.assign_coords(decile_of=conds)
    for i, pairs in enumerate(run.absent):  # said last in the set's notes
        for c, text in pairs:
            run.notes.set(i, f"adaptivity ({c}) not tested: {text}")
    res = res.merge(xr.Dataset(run.notes.variables()))
    res = res.assign_coords(set=run.ds["set"].values, M=("set", run.M))
    res["n_bins_used"] = VALIDATE.variable("n_bins_used", run.n_bins_used)
    run.result = res.assign_attrs(_result_attrs(run.ds, run.inputs, run.cfg, extra=res.attrs))


#: The steps of one validation, in order (:func:`run_steps`), each with the fields of
#: :class:`Run` it reads and writes. The documentation's list of steps and its table of
#: their reads and writes are this one (tests/test_workflow_steps.py).
STEPS = (
    Step(load_step, reads="checked specs cfg",
         writes="checked owned sets streamed inputs"),
    Step(order_step, reads="checked cfg owned sets", writes="checked sets"),
    Step(notes_step, reads="checked specs cfg sets", writes="notes n_bins_used"),
    Step(tailedness_step, reads="specs sets notes", writes="tails"),
    Step(bootstrap_step, reads="checked specs cfg notes", writes="boot observed"),
    Step(null_family_step, reads="checked cfg sets streamed tails", writes="family"),
    Step(extrapolation_nulls_step, reads="cfg sets", writes="hooks"),
    Step(copies_step, reads="checked specs cfg boot family hooks", writes="copies"),
    Step(papers_step, reads="specs boot copies", writes="papers"),
    Step(shape_step, reads="specs sets streamed family copies", writes="shape"),
    Step(pvalues_step, reads="specs cfg sets notes n_bins_used boot observed copies papers "
         "shape",
         writes="untestable tested"),
    Step(questions_step, reads="specs cfg sets copies shape untestable tested",
         writes="decided decision"),
    Step(resolutions_step, reads="specs cfg sets copies shape decided", writes="resolved"),
    Step(verdicts_step, reads="specs cfg absent sets boot decision resolved",
         writes="verdicts"),
    Step(diagnostics_step, reads="checked cfg sets notes family copies",
         writes="diagnostics"),
    Step(scale_factor_step, reads="specs cfg boot copies shape resolved verdicts",
         writes="rescaled tolerance"),
    Step(finish_step, reads="checked specs cfg absent sets streamed inputs notes n_bins_used tails "
         "boot papers shape tested resolved verdicts diagnostics rescaled tolerance",
         writes="result"),
)


def step_label(step) -> str:
    """Name a step as the progress display shows it: ``bootstrap_step`` -> ``bootstrap``.

    Parameters
    ----------
    step : Step or callable
        A step of :data:`STEPS`, or its function.

    Returns
    -------
    str
    """
    fn = step.fn if isinstance(step, Step) else step
    return fn.__name__.removesuffix("_step").replace("_", " ")


def steps_table() -> str:
    """Return the Markdown table of the steps' reads and writes, from :data:`STEPS`.

    The table of docs/development.md ("One validation, step by step") is this text.

    Returns
    -------
    str
        One row per step: its name, the fields of :class:`Run` it reads, those it writes.
    """
    def cell(names):
        return ", ".join(f"`{n}`" for n in names)
    rows = ["| step | reads | writes |", "|---|---|---|"]
    rows += [f"| `{s.name}` | {cell(s.reads)} | {cell(s.writes)} |" for s in STEPS]
    return "\n".join(rows)


#: The steps' names as the progress display shows them (``step 5 of 14: bootstrap``).
STEP_LABELS = tuple(step_label(s) for s in STEPS)


def _u2_effective_points(sets, streamed) -> np.ndarray:
    """(Σu²)² / Σu⁴ of each set (NaN on the streamed route, which holds no column)."""
    out = np.full(len(sets), np.nan)
    if streamed:
        return out
    for i, sd in enumerate(sets):
        u = np.asarray(sd.uE, dtype=np.float64)
        if sd.M > LONG_SET_ROWS:  # long sets: sums by groups of rows (8 bytes a row less)
            top = np.max(u)
            s1 = s2 = 0.0
            for lo in range(0, sd.M, READ_ROWS):
                w = (u[lo:lo + READ_ROWS] / top) ** 2
                s1 += float(w.sum())
                s2 += float(np.sum(w * w))
            out[i] = s1 ** 2 / s2
            continue
        w = (u / np.max(u)) ** 2  # scaled: no overflow for uE near the float64 limits
        out[i] = w.sum() ** 2 / np.sum(w * w)
    return out


def _zms_deciles(sets, conds) -> np.ndarray:
    """ZMS of each set in the ten equal-count groups of each conditioning variable.

    A description of where Z² departs from 1 (the summary's "the largest uE are too
    small"), not a test: ties of the variable are split in the stable order.
    """
    out = np.full((len(sets), len(conds), 10), np.nan)
    for i, sd in enumerate(sets):
        if sd.M < 20 or sd.M > LONG_SET_ROWS:
            continue
        z2 = (np.asarray(sd.E, dtype=np.float64) / np.asarray(sd.uE, dtype=np.float64)) ** 2
        edges = equal_count_edges(sd.M, 10, pop_min=1)
        for c, cond in enumerate(str(k) for k in conds):
            x = sd.uE if cond == "uE" else getattr(sd, cond, None)
            if x is None or edges.size != 11:
                continue
            zz = z2[stable_order(x)]
            out[i, c] = np.add.reduceat(zz, edges[:-1]) / np.diff(edges)
    return out


def _empty_bins_step(verdicts, estimate, sets, specs, cfg):
    """Name an empty bin as the reason of a binned statistic that it left undefined.

    Equal-width (or adaptive) bins on tied or gappy values can hold no point: the
    statistic is then NaN on the data and on every copy, which the Monte-Carlo test
    reports as "no usable copy". The reason given instead says which bins are empty and
    what to do: these reasons are built here, as an array of their own ("" where there is
    none), and written once where they say something. ``verdicts``: the statistics'
    verdicts and reasons; ``estimate`` (set, stat): their estimates. Returns ``verdicts``
    with those reasons.
    """
    if cfg.binning == "equal-count":
        return verdicts
    old = verdicts["verdict_reason"].values
    why = np.full(old.shape, "", dtype=object)
    verdict = verdicts["verdict"].values
    counts = {}
    for i, sd in enumerate(sets):
        for j, s in enumerate(specs):
            x = getattr(sd, "uE" if s.cond == "uE" else s.cond, None) \
                if s.family == "binned" else None
            if x is None or np.isfinite(estimate[i, j]) or not (
                    verdict[i, j] == "inconclusive"
                    or (verdict[i, j] == "not tested" and not old[i, j])):
                continue
            key = (i, s.cond)
            if key not in counts:
                try:
                    counts[key] = np.asarray(make_bins(x, cfg.bins, scheme=cfg.binning,
                                                       pop_min=cfg.pop_min).counts)
                except InputError:
                    counts[key] = np.array([], dtype=np.int64)
            n = counts[key]
            if n.size and (n == 0).any():
                why[i, j] = (
                    f"{int((n == 0).sum())} of {n.size} {cfg.binning} bins on {s.cond} hold no "
                    f"point (ties or gaps in {s.cond}), so {s.name.upper()} is undefined: use "
                    "fewer bins (--bins) or equal-count bins (--binning equal-count)")
    return _with_reasons(verdicts, "verdict_reason", why)


def _is_identity(order: np.ndarray, step: int = 1 << 20) -> bool:
    """Whether ``order`` is ``arange(order.size)``, compared ``step`` rows at a time."""
    return all(np.array_equal(order[lo:lo + step], np.arange(lo, min(lo + step, order.size)))
               for lo in range(0, order.size, step))


def _content_order_step(checked: CheckedSets, sets, owned=(), ties="content"):
    """Put every set's rows in the order of uE, tie groups as ``ties`` says (:func:`order_step`).

    ``ties="content"``: content order (:func:`uqx.engine.binning.content_order`); after
    it, nothing downstream sees the input order: the result is a function of the set of
    rows (tie groups of uE, X and V split by a row hash instead of file order).
    ``ties="file-order"``: the stable order of uE
    (:func:`uqx.engine.binning.stable_order`), tie groups of uE in input order (R's
    ``order()``). Both are the same rows in the same order when uE has no ties, so the
    two conventions differ only inside tie groups (the bootstrap draws rows by position:
    a bare input order would change every interval).

    ``owned``: the columns that belong to the workflow (loaded from disk, or stacked for
    it by :func:`uqx.dataio.model.as_stacked`). When every column is owned, each set's
    order (8 bytes a row) is applied in place as soon as it is computed and released:
    nothing else is held. Otherwise (a user's arrays) the columns are copied in the new
    order (:func:`uqx.dataio.row_order.permute_rows`), the orders of all sets held until then.
    """
    ds = checked.data
    keys = [k for k in ("E", "uE", "X", "V") if k in ds]
    in_place = bool(keys) and all(k in owned for k in keys)
    orders = [None] * len(sets)
    moved = False
    for i, sd in enumerate(sets):
        order = (content_order(sd.uE, sd.E, *(c for c in (sd.X, sd.V) if c is not None))
                 if ties == "content" else stable_order(sd.uE))
        if _is_identity(order):
            continue
        moved = True
        if in_place:
            ds = permute_rows(ds, [order if j == i else None for j in range(len(sets))],
                              in_place=keys)
        else:
            orders[i] = order
        del order
    if not moved:
        return checked, sets
    if not in_place:
        ds = permute_rows(ds, orders)
    checked = checked.derive(ds, private=checked.private)
    return checked, list(iter_sets(checked))


def _conditional_steps(ds, sets, notes, cfg, *, members, nulls=None):
    """Run the papers' diagnostics, on which no verdict rests.

    LZISD per bin with the fraction of valid bins, and the zero-bin extrapolation of
    ENCE, ZMSE and ZVE with the intercepts' Monte-Carlo p-values
    (:mod:`uqx.workflow.conditional`).

    ``cfg`` (:class:`~uqx.workflow.settings.Settings`) gives the seed, the level, the
    LZISD bins, replicates and intervals, ``pop_min``, the copies of the extrapolation
    nulls and the dask keywords. Returns the LZISD and the extrapolation Datasets.
    """
    seed, level, n_mc, method = cfg.seed, cfg.level, cfg.n_extrapolation, cfg.cond_ci

    lz = lzisd_step(ds, sets, notes, seed=seed, level=level, cond_bins=cfg.cond_bins,
                    n_boot=cfg.n_boot_conditional, pop_min=cfg.pop_min, compute=cfg.compute,
                    method=method)
    _cond_bins_used(sets, cfg.cond_bins, pop_min=cfg.pop_min, notes=notes)
    ex, _ = extrapolation_step(sets, notes, seed=seed, level=level, members=members,
                               n_mc=n_mc, nulls=nulls)
    return lz, ex


def _result_attrs(ds, inputs, cfg: Settings, *, extra):
    """Provenance and parameters of a validation result (``provenance_attrs``).

    ``inputs``: :func:`uqx.dataio.provenance.provenance` of the sets as given.
    """
    return {
        "title": "uqx validation of prediction uncertainties",
        "workflow": "Pernot 2024 (000) Fig. 1 / (001) Sect. V, "
        "uqx verdict rules (uqx.engine.mctest)",
        **provenance_attrs(
            inputs=inputs, seed=int(cfg.seed),
            n_boot=int(cfg.n_boot), n_mc=int(cfg.n_mc), level=float(cfg.level),
            alpha_result=float(cfg.alpha_result), question_share=float(QUESTION_SHARE),
            n_bins=int(cfg.bins), binning_scheme=cfg.binning, pop_min=int(cfg.pop_min),
            ties=cfg.ties, nu=float(cfg.nu),
            d_sensitivity_rule="|ref_N - ref_T| > 2 sqrt(u_N^2 + u_T^2)",
            input_units=str(ds.attrs.get("units", "")),
            input_sources=str(ds.attrs.get("sources", "")),
            **{k: v for k, v in extra.items() if k.startswith("extrapolation")},
        ),
    }
