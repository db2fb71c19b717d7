"""The package's internals as the tests need them.

:func:`simulate`: the copy drawer of the workflow, one member at a time.
:func:`uqx.simulate_reference` is the public form; the workflow draws each member of the
null family with :func:`uqx.inference.reference.draw_copies`, sharing the sort and bins
(``prepared``), keying per-set ν by a label and feeding hooks.

:func:`count_input_checks`: how many times the input checks run.
"""

from __future__ import annotations

import uqx.dataio.model as model
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


def count_input_checks(monkeypatch) -> list:
    """Spy on the input checks (one set, or a stack): the returned list grows by one a check."""
    calls = []
    for name in ("_check_single", "_check_stacked"):
        real = getattr(model, name)
        monkeypatch.setattr(model, name, lambda *a, f=real: calls.append(1) or f(*a))
    return calls
