"""Inference on the sets: statistics, bootstrap, references, extrapolation, decisions.

:mod:`~uqx.inference.describe` (point statistics), :mod:`~uqx.inference.bootstrap`
(confidence intervals), :mod:`~uqx.inference.reference` (simulated references and
zeta-scores), :mod:`~uqx.inference.extrapolation` (zero-bin intercepts),
:mod:`~uqx.inference.decision` (verdict steps), :mod:`~uqx.inference.fits`,
:mod:`~uqx.inference.curves`, :mod:`~uqx.inference.intervals` and
:mod:`~uqx.inference.synth` (synthetic example sets). Built on :mod:`uqx.engine` and
:mod:`uqx.dataio`.
"""
