"""Inference on the sets, by kind.

* resampling and simulation: :mod:`~uqx.inference.bootstrap` (BCa intervals, shared
  resamples), :mod:`~uqx.inference.reference` (simulated references and the null
  members' copies), :mod:`~uqx.inference.streamed` (the same on data read in blocks);
* :mod:`~uqx.inference.extrapolate`: statistics over a sweep of bin numbers and their
  zero-bin intercepts, with Monte-Carlo nulls;
* :mod:`~uqx.inference.curves`: curve diagnostics (confidence curves, binned curves,
  interval coverage);
* :mod:`~uqx.inference.zeta` (ζ-scores, binomial intervals), :mod:`~uqx.inference.fits`
  (distribution fits), :mod:`~uqx.inference.describe` (point statistics of a set).

Built on :mod:`uqx.engine` and :mod:`uqx.dataio`; the verdicts are decided in
:mod:`uqx.workflow` (:mod:`~uqx.workflow.decision`), the synthetic example sets are made
in :mod:`uqx.dataio.synth`.
"""
