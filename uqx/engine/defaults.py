"""Default settings of uqx, defined once: every signature that needs one names it here.

The values follow the papers and the R code they were computed with (methods page:
conventions); changing one here changes it everywhere.
"""

from __future__ import annotations

#: Minimum population of a bin (Pernot: bins of fewer than 30 points are merged).
POP_MIN = 30
#: Least rows of a block of the isotonic recalibration map (1: plain pool-adjacent-
#: violators, Busk et al. 2022); chosen on tuning sets (docs: "Fix what the verdicts found").
ISO_MIN_BLOCK = 10
#: Number of bins of the binned statistics (ENCE, ZMSE, ZVE, LZISD).
N_BINS = 20
#: Confidence level of the intervals and bands.
LEVEL = 0.95
#: Bootstrap replicates of the confidence intervals.
N_BOOT = 10_000
#: Bootstrap replicates of the per-bin intervals (:func:`uqx.bootstrap_per_bin`) and of
#: the studies' per-set intervals.
N_BOOT_PER_BIN = 5000
#: Bootstrap replicates of the per-bin intervals drawn in the figures (curves).
N_BOOT_CURVES = 500
#: Monte-Carlo copies of the simulated references and of the verdicts' null family.
N_MC = 10_000
#: Family-wise level of each set's verdicts (``validate(decision=Decision(alpha=...))``).
ALPHA_RESULT = 0.10
#: Calibrated copies per member that a verdict's test reads (the first of the ``n_mc``):
#: the p-value near 0.05 to ±0.007 (one Monte-Carlo sd).
N_TEST = 1000
#: Power at which the resolutions are stated (:mod:`uqx.engine.resolution`).
POWER = 0.8
#: Degrees of freedom of the Student-t member of the references (t_s(6)).
NU = 6.0
#: Minimum bin population of the zero-bin extrapolation sweeps (paper 001 App. C).
SWEEP_POP_MIN = 20
#: Bins of the local analyses drawn with a fixed count (conditional calibration curves,
#: local range ratio; ErrViewLib ``nBin = 15``), and the most that :func:`local_bins` gives.
N_BINS_LOCAL = 15
#: Points per bin of a local analysis (the 150 of ErrViewLib's M // 150).
LOCAL_BIN_SIZE = 150
#: Sets longer than this many rows hold nothing of size M beyond their columns (issue 24:
#: 10^8 rows in 3 GB): the bootstrap reduces its leave-one-out values to power sums and
#: sums the estimate by groups of 2^20 rows (:mod:`uqx.engine.evaluator`), and the
#: resampled-data member computes its standardised z-scores from E and uE when drawn
#: (:class:`uqx.engine.null_shape.StandardisedPool`). Shorter sets keep those arrays
#: (8 bytes a row each): the same law, the bits of the whole-array reductions, and pools
#: read once a draw instead of twice.
LONG_SET_ROWS = 1 << 24


def local_bins(M: int) -> int:
    """ErrViewLib's default number of bins of a local analysis: ``max(min(M // 150, 15), 2)``.

    Parameters
    ----------
    M : int
        Number of points of the data set.

    Returns
    -------
    int
        The number of bins.
    """
    return max(min(int(M) // LOCAL_BIN_SIZE, N_BINS_LOCAL), 2)


#: The smallest value of each integer setting (None allowed where the field is optional):
#: the one rule of :class:`uqx.workflow.settings.Settings`, which the command line's
#: option checks read too.
INTEGER_MINIMA = {"n_boot": 2, "n_mc": 2, "bins": 1, "pop_min": 1, "cond_bins": 2,
                  "cond_n_boot": 2, "extrapolation_n_mc": 2}

#: Why an integer setting has its minimum, where the bare number does not say it.
MINIMA_WHY = {
    "extrapolation_n_mc": "fewer calibrated copies give no p-value, so the zero-bin "
                          "extrapolation routes would be left untested (conditional=False "
                          "skips the conditional routes)",
}

#: How tied values of the conditioning variable are split between bins: ``"content"``
#: (by a hash of each row's content: every result is a function of the set of rows,
#: whatever their order) or ``"file-order"`` (R ``order()``: rows stably sorted by uE,
#: ties in input order, the papers' convention, kept for their reproductions; without
#: ties, the same rows in the same order as ``"content"``).
TIES = ("content", "file-order")

#: Binning schemes accepted by :func:`uqx.engine.binning.make_bins`.
SCHEMES = ("equal-count", "equal-width", "adaptive")

#: The methods of the LZISD per-bin intervals.
COND_CI = ("auto", "bootstrap", "cho")

#: The statistics :func:`uqx.validate` computes by default: average calibration on scale
#: (ZMS, RCE) and on bias (⟨Z⟩: a bias small against uE leaves ZMS near 1, 0.2·uE moves
#: it by 0.04 only), ranking (CC), consistency (ENCE, ZMSE, ZVE; ZMSE_max and ZMS_scan for
#: a miscalibration confined to a few bins or to a tail of uE); adaptivity's are added per
#: feature a set has
#: (:data:`uqx.workflow.validation.ADAPTIVITY_STATS`). One list for the API and the CLI.
DEFAULT_STATS = ("zms", "rce", "mean_z", "cc", "ence", "zmse", "zmse_max", "zms_scan", "zve")
