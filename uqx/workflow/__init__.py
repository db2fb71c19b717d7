"""The validation workflow: :func:`uqx.validate` and its result.

:mod:`~uqx.workflow.validation` runs the steps, :mod:`~uqx.workflow.conditional` the
conditional (binned) routes; the result's tables and text are in :mod:`uqx.text`.
"""
