"""Curve diagnostics of a set.

:mod:`~uqx.inference.curves.confidence` (confidence curves and their references),
:mod:`~uqx.inference.curves.binned` (reliability, LZISD, LCP and other binned curves),
:mod:`~uqx.inference.curves.intervals` (PICP and the local range ratio), on the shared
curve machinery of :mod:`~uqx.inference.curves.sets`.
"""
