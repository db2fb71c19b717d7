"""The copy drawer of the workflow called as the tests need it (one member, internals exposed).

:func:`uqx.simulate_reference` is the public form; the workflow draws each member of the
null family with :func:`uqx.inference.reference.draw_copies`, sharing the sort and bins
(``prepared``), keying per-set ν by a label and feeding hooks. The tests of those internals
call :func:`simulate` with the old keywords.
"""

from __future__ import annotations

from uqx.engine.defaults import N_BINS, N_MC, POP_MIN
from uqx.engine.statistic import BinningConfig
from uqx.inference.reference import Member, draw_copies


def simulate(ds, stats, *, dist="normal", nu=6.0, label=None, n_mc=N_MC, seed=None,
             bins=N_BINS, binning="equal-count", pop_min=POP_MIN, keep_draws=False,
             hooks=None, **kw):
    """Draw the copies of one member; ``(summary, hooked)`` with hooks, else the summary."""
    got = draw_copies(ds, stats, Member(dist, nu, label), n_mc=n_mc, seed=seed,
                      bin_cfg=BinningConfig(bins, binning, pop_min), keep_draws=keep_draws,
                      hooks=hooks, **kw)
    return (got.summary, got.hooked) if hooks is not None else got.summary
