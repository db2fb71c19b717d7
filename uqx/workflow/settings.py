"""The settings of one validation run, in one frozen object.

:func:`uqx.validate` takes its settings in groups (:mod:`uqx.workflow.groups`:
``Bootstrap``, ``Copies``, ``Binning``, ``Conditional``, ``Decision``, ``Compute``) and
packs them into one flat :class:`Settings`; the steps of the workflow read them from
there. The defaults are the named constants of :mod:`uqx.engine.defaults`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

from uqx.engine.defaults import (
    LEVEL,
    N_BINS,
    N_BOOT,
    N_BOOT_PER_BIN,
    N_MC,
    NU,
    POP_MIN,
)
from uqx.engine.mctest import N_HEADLINE
from uqx.engine.questions import ALPHA_RESULT
from uqx.engine.statistic import BinningConfig
from uqx.errors import InputError
from uqx.workflow.groups import check_values

__all__ = ["Settings", "memory_limit", "held_bytes"]



#: Members of the null family a copy is drawn under, at most (N, t_s(ν), the fitted
#: t_s(ν̂), the data's z-scores), and the fitted member's redraw for two-sided tests.
_MAX_DRAWS = 5
#: Per-bin sums of a binned statistic's copy (:data:`uqx.engine.statistic.BIN_FEATURES`).
_BIN_SUMS = 6


def memory_limit() -> int:
    """Bytes a validation may hold at most: half of this machine's physical memory.

    Returns
    -------
    int
        ``SC_PHYS_PAGES * SC_PAGE_SIZE // 2`` (16 GiB where the system does not say).
    """
    try:
        return int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")) // 2
    except (AttributeError, ValueError, OSError):
        return 16 * 2**30


def held_bytes(n_sets: int, n_stats: int, n_bins: int, n_mc: int, n_boot: int) -> int:
    """Bytes held by the copies and the bootstrap replicates of one validation (an estimate).

    Every statistic's value on every copy under every member (at most
    ``_MAX_DRAWS`` = 5 draws), the copies' per-bin sums (6 per bin) and the bootstrap
    replicates of every statistic, float64: ``8 S [5 n_mc (K + 6 N) + 2 K n_boot]``.
    Measured: about 3 kB per copy for one set of 9 statistics on 20 bins (``uqx validate
    --n-mc 100000`` held 0.24 GB more than at 20 000).

    Parameters
    ----------
    n_sets, n_stats, n_bins, n_mc, n_boot : int
        Sets S, statistics K, bins N, copies and bootstrap replicates.

    Returns
    -------
    int
        The bytes.
    """
    per_set = _MAX_DRAWS * n_mc * (n_stats + _BIN_SUMS * n_bins) + 2 * n_stats * n_boot
    return 8 * int(n_sets) * int(per_set)


@dataclass(frozen=True)
class Settings:
    """Settings of :func:`uqx.validate`, flat: what the steps of the workflow read.

    Built by :func:`uqx.validate` from its groups (:mod:`uqx.workflow.groups`, whose
    docstrings say what each field means); checked by the same rule
    (:func:`uqx.workflow.groups.check_values`).

    Parameters
    ----------
    seed : int
        Root seed of every random stream (resolved: never None here).
    n_boot, n_mc : int
        Bootstrap replicates and Monte-Carlo copies of the references.
    bins, binning, pop_min : int, str, int
        Binning of the binned statistics.
    level : float
        Confidence level of the intervals (only).
    alpha : float
        Family-wise level of each set's verdicts (:mod:`uqx.engine.questions`).
    nu : float
        Degrees of freedom of the Student member t_s(ν) of the references.
    simulate_all : bool
        Also simulate the references of statistics with a predefined one.
    conditional : bool
        Run the conditional routes (LZISD, zero-bin extrapolation, headline).
    cond_bins, cond_n_boot : int or None
        Bins and replicates of the LZISD analysis (None: the defaults below).
    cond_ci : str
        LZISD per-bin intervals: ``"auto"``, ``"bootstrap"`` or ``"cho"``.
    extrapolation_n_mc : int or None
        Calibrated copies per distribution of the extrapolation null (None: the default
        below).
    ties : str
        How tie groups of a conditioning variable are ordered before binning:
        ``"content"`` (every result a function of the set of rows) or ``"file-order"``
        (rows stably sorted by uE, ties in input order: the papers' R convention);
        :data:`uqx.engine.binning.TIES`.
    resolution : bool
        Compute each test's resolution (:mod:`uqx.engine.resolution`).
    tolerance : float or None
        Equivalence claim on the scale of uE (:mod:`uqx.workflow.recalibration`).
    scheduler, num_workers
        Dask scheduler and its number of workers.
    bins_chosen : bool
        Whether the caller chose ``bins``: a set that gets fewer is then noted.
    """

    seed: int
    n_boot: int = N_BOOT
    n_mc: int = N_MC
    bins: int = N_BINS
    binning: str = "equal-count"
    pop_min: int = POP_MIN
    level: float = LEVEL
    alpha: float = ALPHA_RESULT
    nu: float = NU
    simulate_all: bool = False
    conditional: bool = True
    cond_bins: int | None = None
    cond_n_boot: int | None = None
    cond_ci: str = "auto"
    extrapolation_n_mc: int | None = None
    ties: str = "content"
    resolution: bool = True
    tolerance: float | None = None
    scheduler: object = None
    num_workers: int | None = None
    bins_chosen: bool = True

    def __post_init__(self):
        """Check every field once, for the API and the command line alike.

        By :func:`uqx.workflow.groups.check_values`, the rule of the groups of
        :func:`uqx.validate` too (the same messages).
        """
        check_values({f.name: getattr(self, f.name) for f in fields(self)
                      if f.name != "bins_chosen"})

    def check_memory(self, n_sets: int, n_stats: int, limit: int | None = None) -> None:
        """Refuse a run whose copies and replicates would not fit in memory.

        :func:`held_bytes` for these sets and statistics against :func:`memory_limit`;
        the message names the limit, the options and the largest ``n_mc`` that fits.

        Parameters
        ----------
        n_sets, n_stats : int
            Sets and statistics of the run.
        limit : int, optional
            Bytes allowed (default :func:`memory_limit`).

        Raises
        ------
        InputError
            The estimate is above the limit.
        """
        limit = memory_limit() if limit is None else int(limit)
        bins = self.bins
        need = held_bytes(n_sets, n_stats, bins, self.n_mc, self.n_boot)
        if need <= limit:
            return
        per_copy = held_bytes(n_sets, n_stats, bins, 1, 0)
        fits = max(0, (limit - held_bytes(n_sets, n_stats, bins, 0, self.n_boot))
                   // max(per_copy, 1))
        raise InputError(
            f"n_mc {self.n_mc} and n_boot {self.n_boot} would hold about "
            f"{need / 2**30:.3g} GiB of calibrated copies and bootstrap replicates "
            f"({n_sets} set(s), {n_stats} statistics, up to {bins} bins), more than the "
            f"memory limit of {limit / 2**30:.3g} GiB (half of this machine's memory): "
            f"lower n_mc (at most about {fits} here; 10000 is the default), n_boot, or "
            "validate fewer sets or statistics at once")

    @property
    def alpha_result(self) -> float:
        """Family-wise level of a set's result, ``alpha`` (10 % by default).

        Its own setting, independent of the intervals' ``level``; the nodes share it
        (:func:`uqx.engine.questions.node_graph`).
        """
        return float(self.alpha)

    @property
    def n_extrapolation(self) -> int:
        """Copies of the extrapolation null: ``min(n_mc, N_HEADLINE)`` unless given."""
        if self.extrapolation_n_mc is None:
            return min(self.n_mc, N_HEADLINE)
        return self.extrapolation_n_mc

    @property
    def n_boot_conditional(self) -> int:
        """Replicates of the LZISD intervals: ``min(n_boot, N_BOOT_PER_BIN)`` unless given."""
        return min(self.n_boot, N_BOOT_PER_BIN) if self.cond_n_boot is None else self.cond_n_boot

    @property
    def compute(self) -> dict:
        """Keywords of the dask computations: ``scheduler``, ``num_workers``."""
        return {"scheduler": self.scheduler, "num_workers": self.num_workers}

    @property
    def binning_options(self) -> dict:
        """Keywords of the binned statistics: ``bins``, ``binning``, ``pop_min``."""
        return {"bins": self.bins, "binning": self.binning, "pop_min": self.pop_min}

    @property
    def bin_cfg(self) -> BinningConfig:
        """The binning of the binned statistics as one value (:class:`BinningConfig`)."""
        return BinningConfig(self.bins, self.binning, self.pop_min)

    @property
    def binned_compute(self) -> dict:
        """Keywords of :attr:`binning_options` and :attr:`compute` together.

        The simulation and bootstrap calls take both.
        """
        return {**self.binning_options, **self.compute}
