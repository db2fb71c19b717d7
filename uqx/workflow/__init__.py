"""The validation workflow: :func:`uqx.validate` and the tables of its result.

:mod:`~uqx.workflow.validation` runs the steps, :mod:`~uqx.workflow.conditional` the
conditional (binned) routes, :mod:`~uqx.workflow.tables` turns a result into tables.
"""
